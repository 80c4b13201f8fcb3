//! Imports: read a file, parse it with the pure domain importers, store it in one transaction
//! with its audit entry. The CLI passes a path ([`import_situations`] …), the admin's upload
//! pages the uploaded bytes (`*_from`): both run the same parsers and the same transaction.

use std::path::Path;

use super::error::{Error, Result};
use crate::auth::password;
use crate::domain::ImportError;
use crate::domain::instrument::parse_questionnaires_json;
use crate::domain::situation::{Situation, SituationFormat, parse_situations};
use crate::domain::study::{StudyConfig, StudyStatus};
use crate::export::cells::{self, Cells};
use crate::store::audit::Actor;
use crate::store::{self, DbConnection, StoreError, audit, instruments, situations, studies};

/// A file to import: the name it goes by in messages and the audit log, and its content.
pub struct Upload<'a> {
    pub name: &'a Path,
    pub bytes: &'a [u8],
}

impl Upload<'_> {
    pub(crate) fn file_name(&self) -> String {
        self.name
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    pub(crate) fn text(&self) -> Result<&str> {
        std::str::from_utf8(self.bytes).map_err(|e| Error::Import {
            path: self.name.to_owned(),
            error: ImportError::new(
                format!("byte {}", e.valid_up_to()),
                "the file is not UTF-8 text",
            ),
        })
    }

    pub(crate) fn malformed(&self, error: ImportError) -> Error {
        Error::Import {
            path: self.name.to_owned(),
            error,
        }
    }

    pub(crate) fn rejected(&self, error: StoreError) -> Error {
        Error::Rejected {
            path: self.name.to_owned(),
            error,
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })
}

/// The default set name: `tested-175` for `doc.csv` (the tested situations, whose keys the
/// published human and model files use), else the file's stem (`situations.json` and
/// `situations.csv` are one set).
pub fn default_set_name(path: &Path, format: SituationFormat) -> String {
    if format == SituationFormat::EmotionBenchDocCsv {
        return HUMANS_DEFAULT_SET.into();
    }
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "situations".into())
}

pub fn import_situations(
    conn: &mut DbConnection,
    path: &Path,
    set: Option<&str>,
) -> Result<(SituationFormat, situations::ImportSummary), Error> {
    let bytes = read(path)?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    import_situations_from(conn, &file, set, &Actor::Cli)
}

/// Imports a situation file in any of the formats [`parse_situations`] detects into `set`
/// (default: [`default_set_name`]). One transaction with its audit entry.
pub fn import_situations_from(
    conn: &mut DbConnection,
    file: &Upload<'_>,
    set: Option<&str>,
    actor: &Actor,
) -> Result<(SituationFormat, situations::ImportSummary), Error> {
    let parsed = parse_situations(file.text()?).map_err(|e| file.malformed(e))?;
    let set = set
        .map(str::to_owned)
        .unwrap_or_else(|| default_set_name(file.name, parsed.format));
    let source = file.file_name();
    let summary = conn
        .write_transaction(|conn| {
            let summary = situations::import(conn, &set, &source, &parsed.situations)?;
            audit::record(
                conn,
                actor,
                "import.situations",
                Some(&set),
                Some(
                    &serde_json::json!({"file": source, "situations": summary.situations.total()}),
                ),
            )?;
            Ok::<_, StoreError>(summary)
        })
        .map_err(|e| file.rejected(e))?;
    Ok((parsed.format, summary))
}

/// Imports a situation file's texts as the situations' texts in `lang` (#20): the file in any
/// format [`parse_situations`] reads, its keys those of the existing set `set`. One
/// transaction with its audit entry.
pub fn import_situation_texts(
    conn: &mut DbConnection,
    path: &Path,
    set: &str,
    lang: &crate::domain::language::Lang,
) -> Result<(SituationFormat, store::situation_texts::TextsImported), Error> {
    let bytes = read(path)?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    let parsed = parse_situations(file.text()?).map_err(|e| file.malformed(e))?;
    let source = file.file_name();
    let done = conn
        .write_transaction(|conn| {
            let id = situations::find_set(conn, set)?.ok_or_else(|| {
                StoreError::Conflict(format!(
                    "there is no situation set {set}: import the set's own situations first"
                ))
            })?;
            let done = store::situation_texts::import(conn, id, set, lang, &parsed.situations)?;
            audit::record(
                conn,
                &Actor::Cli,
                "import.situation_texts",
                Some(set),
                Some(&serde_json::json!({"file": source, "language": lang.as_str(), "texts": done.texts})),
            )?;
            Ok::<_, StoreError>(done)
        })
        .map_err(|e| file.rejected(e))?;
    Ok((parsed.format, done))
}

/// Imports a translation file's item texts and labels as its instruments' texts in `lang`
/// (#20): records `{"name", "items": [{"number", "text"}], "labels": [{"value", "label"}]}`
/// with exactly the instruments' item numbers and labelled values. One transaction with its
/// audit entry; a record that does not match is refused naming its field, nothing stored.
pub fn import_instrument_texts(
    conn: &mut DbConnection,
    path: &Path,
    lang: &crate::domain::language::Lang,
) -> Result<Vec<(String, usize)>, Error> {
    let bytes = read(path)?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    let records =
        crate::domain::instrument_text::parse_file(file.text()?).map_err(|e| file.malformed(e))?;
    let source = file.file_name();
    conn.write_transaction(|conn| {
        let done = store::instrument_texts::import(conn, lang, &records)?;
        let keys: Vec<&str> = done.iter().map(|(k, _)| k.as_str()).collect();
        audit::record(
            conn,
            &Actor::Cli,
            "import.instrument_texts",
            None,
            Some(&serde_json::json!({"file": source, "language": lang.as_str(), "instruments": keys})),
        )?;
        Ok::<_, StoreError>(done)
    })
    .map_err(|e| file.rejected(e))
}

pub fn import_instruments(
    conn: &mut DbConnection,
    path: &Path,
) -> Result<Vec<(String, instruments::Outcome)>, Error> {
    let bytes = read(path)?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    import_instruments_from(conn, &file, &Actor::Cli)
}

/// Imports instruments in the `questionnaires.json` format. One transaction with its audit
/// entry.
pub fn import_instruments_from(
    conn: &mut DbConnection,
    file: &Upload<'_>,
    actor: &Actor,
) -> Result<Vec<(String, instruments::Outcome)>, Error> {
    let list = parse_questionnaires_json(file.text()?).map_err(|e| file.malformed(e))?;
    store_instruments(
        conn,
        file,
        actor,
        &list,
        ("import.instruments", "instruments"),
    )
}

/// Stores parsed instruments (questionnaires or free-text tasks) from `file` with the audit
/// entry (`audit`: the action and the key its count goes under), in one transaction.
pub(super) fn store_instruments(
    conn: &mut DbConnection,
    file: &Upload<'_>,
    actor: &Actor,
    list: &[crate::domain::instrument::Instrument],
    (action, key): (&str, &str),
) -> Result<Vec<(String, instruments::Outcome)>, Error> {
    let source = file.file_name();
    conn.write_transaction(|conn| {
        let outcomes = instruments::import(conn, list)?;
        audit::record(
            conn,
            actor,
            action,
            None,
            Some(&serde_json::json!({"file": source, key: outcomes.len()})),
        )?;
        Ok::<_, StoreError>(outcomes)
    })
    .map_err(|e| file.rejected(e))
}

/// What the admin's data page lists: the situation sets, and the studies and instruments
/// that uploads of human data and model results may name.
pub struct DataOverview {
    pub sets: Vec<situations::SetSummary>,
    pub studies: Vec<String>,
    pub instruments: Vec<String>,
}

pub fn data_overview(conn: &mut DbConnection) -> Result<DataOverview> {
    Ok(DataOverview {
        sets: situations::sets(conn)?,
        studies: studies::list_all(conn)?
            .into_iter()
            .map(|s| s.slug)
            .collect(),
        instruments: instruments::list(conn)?
            .into_iter()
            .map(|i| i.key)
            .collect(),
    })
}

/// The situations of the set `name`, in file order.
pub fn set_situations(conn: &mut DbConnection, name: &str) -> Result<Vec<Situation>> {
    let id = situations::find_set(conn, name)?
        .ok_or_else(|| Error::Invalid(format!("there is no situation set {name:?}")))?;
    Ok(situations::list(conn, id)?
        .into_iter()
        .map(|s| s.situation)
        .collect())
}

/// A set as a tidy CSV (`key,emotion,factor_index,factor_name,scenario_index,text`, and
/// `variant_of,valence` when the set has valence variants, #18), which `import situations`
/// reads back as the same set. Text cells go through [`cells`].
pub fn tidy_csv(situations: &[Situation], mode: Cells) -> Result<Vec<u8>> {
    let fail = |e: csv::Error| Error::Invalid(format!("cannot write the CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    // A set without variants keeps the columns it always had.
    let valence = situations
        .iter()
        .any(|s| s.variant_of.is_some() || !s.valence.is_negative());
    let mut header = vec![
        "key",
        "emotion",
        "factor_index",
        "factor_name",
        "scenario_index",
        "text",
    ];
    let mut text = vec![true, true, false, true, false, true];
    if valence {
        header.extend(["variant_of", "valence"]);
        text.extend([true, false]);
    }
    cells::write_record(&mut w, mode, &text, header).map_err(fail)?;
    for s in situations {
        let (f, n) = (s.factor_index.to_string(), s.scenario_index.to_string());
        let mut row = vec![s.key.as_str(), &s.emotion, &f, &s.factor_name, &n, &s.text];
        if valence {
            row.extend([s.variant_of.as_deref().unwrap_or(""), s.valence.as_str()]);
        }
        cells::write_record(&mut w, mode, &text, row).map_err(fail)?;
    }
    w.into_inner()
        .map_err(|e| Error::Invalid(format!("cannot write the CSV: {e}")))
}

/// What `import humans` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HumansImport {
    pub study: String,
    pub study_created: bool,
    pub in_file: usize,
    pub created: usize,
    /// Participants with the same `source_ref` imported before: kept as they are.
    pub already_present: usize,
}

/// The situation set a study created by `import humans` uses when none is named.
pub const HUMANS_DEFAULT_SET: &str = "tested-175";

/// Reads a sheet of an xlsx workbook into a grid of cell texts at their real positions.
fn read_xlsx_sheet(file: &Upload<'_>, sheet: &str) -> Result<Vec<Vec<String>>> {
    use calamine::{Data, Reader, Xlsx};
    let invalid =
        |reason: String| file.malformed(ImportError::new(format!("sheet {sheet}"), reason));
    let mut book: Xlsx<_> = Xlsx::new(std::io::Cursor::new(file.bytes)).map_err(|e| {
        file.malformed(ImportError::new(
            "file",
            format!("not a readable xlsx workbook: {e}"),
        ))
    })?;
    let range = book
        .worksheet_range(sheet)
        .map_err(|e| invalid(format!("cannot read the sheet: {e}")))?;
    let (r0, c0) = range.start().unwrap_or((0, 0));
    let (r0, c0) = (r0 as usize, c0 as usize);
    let mut grid = vec![Vec::new(); r0];
    for row in range.rows() {
        let mut cells = vec![String::new(); c0];
        cells.extend(row.iter().map(|d| match d {
            Data::Empty => String::new(),
            Data::String(s) => s.clone(),
            Data::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", *f as i64),
            Data::Int(i) => i.to_string(),
            other => other.to_string(),
        }));
        grid.push(cells);
    }
    Ok(grid)
}

/// An xlsx workbook is a zip archive; its content, not its name, says so.
fn is_xlsx(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Imports the published human data (`crowd.xlsx`, sheet `Raw`, or the derived
/// one-row-per-participant CSV) as completed, imported participants of `study`.
///
/// When the study does not exist it is created, closed, with the built-in PANAS and the
/// situation set `set` (default `tested-175`), which must have been imported already. Every
/// participant's situation must be in the study's set. Idempotent: participants whose
/// `source_ref` is already in the study are kept and counted, not duplicated. One transaction.
pub fn import_humans(
    conn: &mut DbConnection,
    path: &Path,
    study: &str,
    set: Option<&str>,
) -> Result<HumansImport, Error> {
    let bytes = read(path)?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    import_humans_from(conn, &file, study, set, &Actor::Cli)
}

/// [`import_humans`] of an uploaded file: an xlsx workbook (by its content) or the CSV.
pub fn import_humans_from(
    conn: &mut DbConnection,
    file: &Upload<'_>,
    study: &str,
    set: Option<&str>,
    actor: &Actor,
) -> Result<HumansImport, Error> {
    use crate::domain::humans;
    use crate::store::cohorts;
    let file_name = file.file_name();
    let (grid, text) = if is_xlsx(file.bytes) {
        (Some(read_xlsx_sheet(file, "Raw")?), None)
    } else {
        (None, Some(file.text()?))
    };
    let rejected = |error: StoreError| file.rejected(error);
    conn.write_transaction(|conn| {
        let (study_row, study_created) = match studies::load(conn, study)? {
            Some(s) => (s, false),
            None => {
                let set_name = set.unwrap_or(HUMANS_DEFAULT_SET);
                let set_id = situations::find_set(conn, set_name)?.ok_or_else(|| {
                    StoreError::Conflict(format!(
                        "there is no study {study:?}, and no situation set {set_name:?} to create \
                         it with: import the tested situations first (emotionbench import \
                         situations doc.csv, which makes the set tested-175) or name another \
                         set with --set"
                    ))
                })?;
                let instrument = instruments::ensure_builtin(conn)?;
                let mut config = StudyConfig::new(study, "EmotionBench published human data");
                config.shuffle_items = false;
                studies::create(
                    conn,
                    &config,
                    StudyStatus::Closed,
                    studies::Sources::new(instrument, Some(set_id)),
                    0,
                )?;
                let row = studies::load(conn, study)?
                    .ok_or_else(|| StoreError::Inconsistent("new study vanished".into()))?;
                (row, true)
            }
        };
        let instrument = instruments::get(conn, study_row.instrument_id)?;
        let records = match (&grid, &text) {
            (Some(grid), _) => humans::parse_crowd_sheet(grid, &instrument),
            (None, Some(text)) => humans::parse_csv(text, &instrument),
            (None, None) => Err(ImportError::new("file", "nothing to read")),
        }
        .map_err(|e| StoreError::Conflict(format!("{}: {}", e.location, e.reason)))?;
        let set_id = study_row
            .situation_set_id
            .ok_or_else(|| StoreError::Conflict(format!("study {study} has no situation set")))?;
        let keys: std::collections::HashMap<String, store::SituationId> =
            situations::list(conn, set_id)?
                .into_iter()
                .map(|s| (s.situation.key, s.id))
                .collect();
        let existing = cohorts::imported_refs(conn, study_row.id)?;
        let t = store::now();
        let mut new = Vec::new();
        for r in &records {
            if existing.contains(&r.source_ref) {
                continue;
            }
            let situation = keys.get(&r.situation_key).ok_or_else(|| {
                StoreError::Conflict(format!(
                    "{}: situation {} ({}) is not in the study's situation set",
                    r.source_ref, r.upstream_situation, r.situation_key
                ))
            })?;
            let demographics: serde_json::Map<String, serde_json::Value> = r
                .demographics
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            new.push(cohorts::NewCompleted {
                public_id: password::random_secret(24),
                prolific_pid: None,
                source_ref: Some(r.source_ref.clone()),
                imported: true,
                situation_id: Some(*situation),
                demographics: Some(store::Json(demographics)),
                default_answers: r.before.clone(),
                evoked_answers: r.after.clone(),
                created_at: t,
                completed_at: None,
            });
        }
        let created = cohorts::insert_completed(conn, study_row.id, &new)?;
        audit::record(
            conn,
            actor,
            "import.humans",
            Some(study),
            Some(&serde_json::json!({"file": file_name, "created": created})),
        )?;
        Ok::<_, StoreError>(HumansImport {
            study: study.to_owned(),
            study_created,
            in_file: records.len(),
            created,
            already_present: records.len() - created,
        })
    })
    .map_err(rejected)
}

/// What `import model-results` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelResultsImport {
    pub run_id: store::RunId,
    pub model: String,
    /// The instrument the answers were read against.
    pub instrument: String,
    /// Earlier imports of the same model and instrument into the study, replaced by this one.
    pub replaced: usize,
    pub default_done: usize,
    pub default_failed: usize,
    pub evoked_done: usize,
    pub evoked_failed: usize,
}

/// Imports an upstream `<model>-<SCALE>-testing.csv` (PANAS or one of the eight challenging
/// scales, read against `instrument` or the study's own) as a completed run with source `import`:
/// one trial per column, `done` with its scores or `failed` (error class `parse`) when the
/// column is empty, not numbers or out of range. Re-importing the same model and instrument into
/// the same study replaces the earlier import (so it is idempotent). Every evoked situation must be in the study's set.
pub fn import_model_results(
    conn: &mut DbConnection,
    path: &Path,
    study: &str,
    model: &str,
    instrument: Option<&str>,
) -> Result<ModelResultsImport, Error> {
    let bytes = read(path)?;
    let file = Upload {
        name: path,
        bytes: &bytes,
    };
    let target = ModelResultsTarget {
        study,
        model,
        instrument,
    };
    import_model_results_from(conn, &file, &target, &Actor::Cli)
}

/// Where released model answers go: the study, the model's name, the instrument (default: the
/// study's).
pub struct ModelResultsTarget<'a> {
    pub study: &'a str,
    pub model: &'a str,
    pub instrument: Option<&'a str>,
}

/// [`import_model_results`] of an uploaded file.
pub fn import_model_results_from(
    conn: &mut DbConnection,
    file: &Upload<'_>,
    target: &ModelResultsTarget<'_>,
    actor: &Actor,
) -> Result<ModelResultsImport, Error> {
    use crate::domain::model_results::{Measure, parse_results_csv};
    use crate::store::model_runs;
    let ModelResultsTarget {
        study,
        model,
        instrument,
    } = *target;
    let text = file.text()?;
    let file_name = file.file_name();
    let rejected = |error: StoreError| file.rejected(error);
    conn.write_transaction(|conn| {
        let study_row = studies::load(conn, study)?
            .ok_or_else(|| StoreError::Conflict(format!("there is no study {study:?}")))?;
        // The answers' instrument: --instrument, else the study's own. A run records its
        // instrument, so a PANAS study can hold imported runs on the eight other scales.
        let (instrument_id, instrument) = match instrument {
            Some(key) => instruments::load(conn, key)?.ok_or_else(|| {
                StoreError::Conflict(format!(
                    "there is no instrument {key:?} (import questionnaires.json with \
                     `emotionbench import instruments` first)"
                ))
            })?,
            None => {
                let id = study_row.instrument_id;
                (id, instruments::get(conn, id)?)
            }
        };
        let trials = parse_results_csv(text, &instrument)
            .map_err(|e| StoreError::Conflict(format!("{}: {}", e.location, e.reason)))?;
        let keys: std::collections::HashMap<String, store::SituationId> =
            match study_row.situation_set_id {
                Some(set) => situations::list(conn, set)?
                    .into_iter()
                    .map(|s| (s.situation.key, s.id))
                    .collect(),
                None => Default::default(),
            };
        let order: store::ItemOrder = store::Json((1..=instrument.items.len() as u32).collect());
        let mut rows = Vec::with_capacity(trials.len());
        let mut result = ModelResultsImport {
            // Set once the run is stored, below.
            run_id: store::RunId(0),
            model: model.to_owned(),
            instrument: instrument.key.clone(),
            replaced: 0,
            default_done: 0,
            default_failed: 0,
            evoked_done: 0,
            evoked_failed: 0,
        };
        let (mut repeats, mut default_repeats) = (0, 0);
        for t in &trials {
            let situation_id = match t.measure {
                Measure::Default => None,
                Measure::Evoked => Some(*keys.get(&t.situation_key).ok_or_else(|| {
                    StoreError::Conflict(format!(
                        "column {}: situation {} is not in the study's situation set",
                        t.column, t.situation_key
                    ))
                })?),
            };
            let repeat = i32::try_from(t.repeat).unwrap_or(i32::MAX);
            match (t.measure, t.scores.is_ok()) {
                (Measure::Default, true) => result.default_done += 1,
                (Measure::Default, false) => result.default_failed += 1,
                (Measure::Evoked, true) => result.evoked_done += 1,
                (Measure::Evoked, false) => result.evoked_failed += 1,
            }
            match t.measure {
                Measure::Default => default_repeats = default_repeats.max(repeat + 1),
                Measure::Evoked => repeats = repeats.max(repeat + 1),
            }
            rows.push(model_runs::NewImportedTrial {
                measure: t.measure,
                situation_id,
                situation_key: t.situation_key.clone(),
                repeat_index: repeat,
                item_order: order.clone(),
                request: t.text.clone(),
                raw_reply: serde_json::to_string(&t.cells)
                    .map_err(|e| StoreError::Inconsistent(e.to_string()))?,
                scores: match &t.scores {
                    Ok(s) => Ok(store::Json(s.clone())),
                    Err(e) => Err(format!("{}: {e}", t.column)),
                },
            });
        }
        let old = model_runs::imported_runs(conn, study_row.id, model, instrument_id)?;
        model_runs::delete_runs(conn, &old)?;
        result.replaced = old.len();
        result.run_id = model_runs::insert_imported(
            conn,
            &model_runs::NewImportedRun {
                study_id: study_row.id,
                model,
                instrument_id,
                situation_set_id: study_row.situation_set_id,
                selection: serde_json::json!({"imported_from": file_name}).to_string(),
                repeats,
                default_repeats,
            },
            &rows,
        )?;
        audit::record(
            conn,
            actor,
            "import.model-results",
            Some(study),
            Some(&serde_json::json!({
                "file": file_name,
                "model": model,
                "instrument": instrument.key,
                "run": result.run_id,
            })),
        )?;
        Ok::<_, StoreError>(result)
    })
    .map_err(rejected)
}
