//! Operations shared by the command line and (later) the admin pages: read a file, parse it
//! with the pure domain importers, store it in one transaction.

use std::path::{Path, PathBuf};

use crate::auth::password;
use crate::domain::demo::demo_study;
use crate::domain::instrument::parse_questionnaires_json;
use crate::domain::situation::parse_situations;
use crate::domain::study::{StudyConfig, StudyStatus};
use crate::domain::{ImportError, situation::SituationFormat};
use crate::store::{
    self, DbConnection, StoreError, audit, instruments, runs, situations, studies, users,
};

#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A malformed file: the place and the reason. Nothing was stored.
    #[error("{}: {}: {}", path.display(), error.location, error.reason)]
    Import { path: PathBuf, error: ImportError },
    /// The store refused the content (not a source: the message already carries it, and
    /// `{:#}` would print it twice).
    #[error("{}: {error}", path.display())]
    Rejected { path: PathBuf, error: StoreError },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Hash(#[from] password::HashError),
}

fn read(path: &Path) -> Result<String, OpsError> {
    let bytes = std::fs::read(path).map_err(|source| OpsError::Read {
        path: path.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| OpsError::Import {
        path: path.to_owned(),
        error: ImportError::new(
            format!("byte {}", e.utf8_error().valid_up_to()),
            "the file is not UTF-8 text",
        ),
    })
}

/// The default set name: the file's stem (`situations.json` and `situations.csv` are one set).
pub fn default_set_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "situations".into())
}

pub fn import_situations(
    conn: &mut DbConnection,
    path: &Path,
    set: Option<&str>,
) -> Result<(SituationFormat, situations::ImportSummary), OpsError> {
    let text = read(path)?;
    let file = parse_situations(&text).map_err(|error| OpsError::Import {
        path: path.to_owned(),
        error,
    })?;
    let set = set
        .map(str::to_owned)
        .unwrap_or_else(|| default_set_name(path));
    let source = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let summary = conn
        .write_transaction(|conn| {
            let summary = situations::import(conn, &set, &source, &file.situations)?;
            audit::record(
                conn,
                &audit::Actor::Cli,
                "import.situations",
                Some(&set),
                Some(
                    &serde_json::json!({"file": source, "situations": summary.situations.total()}),
                ),
            )?;
            Ok::<_, StoreError>(summary)
        })
        .map_err(|error| OpsError::Rejected {
            path: path.to_owned(),
            error,
        })?;
    Ok((file.format, summary))
}

pub fn import_instruments(
    conn: &mut DbConnection,
    path: &Path,
) -> Result<Vec<(String, instruments::Outcome)>, OpsError> {
    let text = read(path)?;
    let list = parse_questionnaires_json(&text).map_err(|error| OpsError::Import {
        path: path.to_owned(),
        error,
    })?;
    let source = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    conn.write_transaction(|conn| {
        let outcomes = instruments::import(conn, &list)?;
        audit::record(
            conn,
            &audit::Actor::Cli,
            "import.instruments",
            None,
            Some(&serde_json::json!({"file": source, "instruments": outcomes.len()})),
        )?;
        Ok::<_, StoreError>(outcomes)
    })
    .map_err(|error| OpsError::Rejected {
        path: path.to_owned(),
        error,
    })
}

/// What loading the demo did.
#[derive(Debug, Clone)]
pub struct DemoSetup {
    pub study_slug: String,
    pub study_created: bool,
    /// Set only when the admin account was created now: the password is shown once.
    pub admin: Option<(String, String)>,
}

pub const DEMO_ADMIN_EMAIL: &str = "admin@localhost";

/// Loads the demo study once, and creates an admin with a random password when there is none.
pub fn load_demo(conn: &mut DbConnection) -> Result<DemoSetup, OpsError> {
    let demo = demo_study();
    let study_created = conn.write_transaction(|conn| {
        if store::studies::find(conn, demo.slug)?.is_some() {
            return Ok::<_, StoreError>(false);
        }
        let instrument = instruments::ensure_builtin(conn)?;
        situations::import(
            conn,
            demo.situation_set,
            "demo (written by the emotionbench team)",
            &demo.situations,
        )?;
        let set = situations::find_set(conn, demo.situation_set)?
            .ok_or_else(|| StoreError::Corrupt("demo set vanished".into()))?;
        let mut config = StudyConfig::new(demo.slug, demo.title);
        config.consent_text = demo.consent_text.to_owned();
        config.debrief_text = demo.debrief_text.to_owned();
        config.target_per_situation = 5;
        config.min_situation_seconds = 5;
        let seed = rand::random::<u32>() as i64;
        studies::create(
            conn,
            &config,
            StudyStatus::Open,
            studies::Sources::new(instrument, Some(set)),
            seed,
        )?;
        audit::record(
            conn,
            &audit::Actor::Cli,
            "study.create",
            Some(demo.slug),
            None,
        )?;
        Ok(true)
    })?;
    let admin = if users::count_admins(conn).map_err(StoreError::from)? == 0 {
        let secret = password::random_secret(20);
        let hash = password::hash(&secret)?;
        conn.write_transaction(|conn| {
            users::create(conn, DEMO_ADMIN_EMAIL, &hash, users::Role::Admin)?;
            audit::record(
                conn,
                &audit::Actor::Cli,
                "user.create",
                Some(DEMO_ADMIN_EMAIL),
                None,
            )?;
            Ok::<_, StoreError>(())
        })?;
        Some((DEMO_ADMIN_EMAIL.to_owned(), secret))
    } else {
        None
    };
    Ok(DemoSetup {
        study_slug: demo.slug.to_owned(),
        study_created,
        admin,
    })
}

// ---------------------------------------------------------------------------------------------
// The published human data
// ---------------------------------------------------------------------------------------------

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

/// Reads the `Raw` sheet of an xlsx workbook into a grid of cell texts at their real positions.
fn read_xlsx_sheet(path: &Path, sheet: &str) -> Result<Vec<Vec<String>>, OpsError> {
    use calamine::{Data, Reader, Xlsx, open_workbook};
    let invalid = |reason: String| OpsError::Import {
        path: path.to_owned(),
        error: ImportError::new(format!("sheet {sheet}"), reason),
    };
    let mut book: Xlsx<_> = open_workbook(path).map_err(|e| OpsError::Import {
        path: path.to_owned(),
        error: ImportError::new("file", format!("not a readable xlsx workbook: {e}")),
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
) -> Result<HumansImport, OpsError> {
    use crate::domain::humans;
    use crate::store::cohorts;
    let is_xlsx = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xlsx"));
    let file_name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let grid = if is_xlsx {
        Some(read_xlsx_sheet(path, "Raw")?)
    } else {
        None
    };
    let text = if is_xlsx { None } else { Some(read(path)?) };
    let rejected = |error: StoreError| OpsError::Rejected {
        path: path.to_owned(),
        error,
    };
    conn.write_transaction(|conn| {
        let (study_row, study_created) = match studies::load(conn, study)? {
            Some(s) => (s, false),
            None => {
                let set_name = set.unwrap_or(HUMANS_DEFAULT_SET);
                let set_id = situations::find_set(conn, set_name)?.ok_or_else(|| {
                    StoreError::Conflict(format!(
                        "there is no study {study:?}, and no situation set {set_name:?} to create \
                         it with: import the tested situations first (emotionbench import \
                         situations test_situations_175.csv --set {set_name}) or name another \
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
                    .ok_or_else(|| StoreError::Corrupt("new study vanished".into()))?;
                (row, true)
            }
        };
        let instrument = instruments::get(conn, store::InstrumentId(study_row.instrument_id))?;
        let records = match (&grid, &text) {
            (Some(grid), _) => humans::parse_crowd_sheet(grid, &instrument),
            (None, Some(text)) => humans::parse_csv(text, &instrument),
            (None, None) => Err(ImportError::new("file", "nothing to read")),
        }
        .map_err(|e| StoreError::Conflict(format!("{}: {}", e.location, e.reason)))?;
        let set_id = study_row
            .situation_set_id
            .ok_or_else(|| StoreError::Conflict(format!("study {study} has no situation set")))?;
        let keys: std::collections::HashMap<String, i64> =
            situations::list(conn, store::SituationSetId(set_id))?
                .into_iter()
                .map(|s| (s.situation.key, s.id.0))
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
                demographics: Some(serde_json::Value::Object(demographics).to_string()),
                default_answers: r.before.clone(),
                evoked_answers: r.after.clone(),
                created_at: t,
                completed_at: None,
            });
        }
        let created = cohorts::insert_completed(conn, study_row.id, &new)?;
        audit::record(
            conn,
            &audit::Actor::Cli,
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

// ---------------------------------------------------------------------------------------------
// Exports and generated studies
// ---------------------------------------------------------------------------------------------

/// The three export files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    Long,
    Wide,
    Codebook,
}

impl ExportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ExportKind::Long => "long",
            ExportKind::Wide => "wide",
            ExportKind::Codebook => "codebook",
        }
    }
}

/// Errors of an export started by slug.
#[derive(Debug, thiserror::Error)]
pub enum ExportOpError {
    #[error("no study {0:?}")]
    NoStudy(String),
    #[error(transparent)]
    Export(#[from] crate::export::ExportError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Streams one export of the study `slug` into `out` and records it in the audit log.
pub fn export(
    conn: &mut DbConnection,
    slug: &str,
    kind: ExportKind,
    filter: store::cohorts::StatusFilter,
    actor: &audit::Actor,
    out: impl std::io::Write,
) -> Result<crate::export::ExportStats, ExportOpError> {
    let study = studies::find(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| ExportOpError::NoStudy(slug.to_owned()))?;
    let stats = match kind {
        ExportKind::Long => crate::export::write_long(conn, study.id, filter, out)?,
        ExportKind::Wide => crate::export::write_wide(conn, study.id, filter, out)?,
        ExportKind::Codebook => crate::export::write_codebook(conn, study.id, out)?,
    };
    audit::record(
        conn,
        actor,
        &format!("export.{}", kind.as_str()),
        Some(slug),
        Some(&serde_json::json!({"rows": stats.rows, "participants": stats.participants})),
    )
    .map_err(StoreError::from)?;
    Ok(stats)
}

/// A recorded split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOutcome {
    pub train: usize,
    pub test: usize,
    pub strata: usize,
}

/// Splits the completed participants of study `slug` into train and test (`test` of them),
/// stratified by situation and seeded (`domain::split`), and records it in `participants.split`
/// and the audit log (with the seed). Running it again with the same seed gives the same split.
pub fn split_study(
    conn: &mut DbConnection,
    slug: &str,
    test: usize,
    seed: u64,
) -> Result<SplitOutcome, StoreError> {
    use crate::domain::split::{Member, Side, assign};
    conn.write_transaction(|conn| {
        let study = studies::load(conn, slug)?
            .ok_or_else(|| StoreError::Conflict(format!("there is no study {slug:?}")))?;
        let members: Vec<Member> = store::cohorts::completed_strata(conn, study.id)?
            .into_iter()
            .map(|(id, key)| Member {
                id,
                stratum: key.unwrap_or_default(),
            })
            .collect();
        let strata = members
            .iter()
            .map(|m| m.stratum.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
        let assignment = assign(&members, test, seed).map_err(StoreError::Conflict)?;
        store::cohorts::record_split(conn, study.id, &assignment)?;
        let test = assignment.iter().filter(|a| a.1 == Side::Test).count();
        let outcome = SplitOutcome {
            train: assignment.len() - test,
            test,
            strata,
        };
        audit::record(
            conn,
            &audit::Actor::Cli,
            "split",
            Some(slug),
            Some(&serde_json::json!({
                "seed": seed,
                "test": outcome.test,
                "train": outcome.train,
                "strata": strata,
                "stratified_by": "situation",
            })),
        )?;
        Ok(outcome)
    })
}

/// Writes the fine-tuning JSONL of one side of study `slug`'s split (see `export::finetune`)
/// and records the export in the audit log.
pub fn export_finetune(
    conn: &mut DbConnection,
    slug: &str,
    side: crate::domain::split::Side,
    format: crate::export::finetune::FinetuneFormat,
    actor: &audit::Actor,
    out: impl std::io::Write,
) -> Result<crate::export::ExportStats, ExportOpError> {
    let study = studies::load(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| ExportOpError::NoStudy(slug.to_owned()))?;
    let stats = crate::export::finetune::write_finetune(
        conn,
        study.id,
        study.instrument_id,
        side,
        format,
        out,
    )?;
    if stats.participants == 0 {
        return Err(ExportOpError::Store(StoreError::Conflict(format!(
            "no completed participant of study {slug} is on the {} side of a split (run \
             `emotionbench split --study {slug} --test N --seed S` first)",
            side.as_str()
        ))));
    }
    audit::record(
        conn,
        actor,
        "export.finetune",
        Some(slug),
        Some(&serde_json::json!({
            "split": side.as_str(),
            "records": stats.rows,
            "participants": stats.participants,
        })),
    )
    .map_err(StoreError::from)?;
    Ok(stats)
}

/// Creates a closed study `slug` over the demo situations with `participants` completed
/// participants with seeded random answers: the fixture of the export tests and benchmark.
/// Inserts in transactions of 1,000 participants, so memory stays small at any size.
pub fn generate_study(
    conn: &mut DbConnection,
    slug: &str,
    participants: usize,
    seed: u64,
) -> Result<store::StudyId, OpsError> {
    use rand::{Rng, SeedableRng};
    let demo = demo_study();
    let set_name = format!("{slug}-situations");
    let study = conn.write_transaction(|conn| {
        let instrument = instruments::ensure_builtin(conn)?;
        situations::import(conn, &set_name, "generated", &demo.situations)?;
        let set = situations::find_set(conn, &set_name)?
            .ok_or_else(|| StoreError::Corrupt("generated set vanished".into()))?;
        let config = StudyConfig::new(slug, "Generated study");
        studies::create(
            conn,
            &config,
            StudyStatus::Closed,
            studies::Sources::new(instrument, Some(set)),
            seed as i64,
        )
    })?;
    let set = situations::find_set(conn, &set_name)
        .map_err(StoreError::from)?
        .ok_or_else(|| StoreError::Corrupt("generated set vanished".into()))?;
    let ids: Vec<i64> = situations::list(conn, set)
        .map_err(StoreError::from)?
        .into_iter()
        .map(|s| s.id.0)
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let t = store::now();
    let mut done = 0;
    while done < participants {
        let n = (participants - done).min(1000);
        let batch: Vec<store::cohorts::NewCompleted> = (0..n)
            .map(|i| {
                let k = done + i;
                let mut answers = |lo: i32| (0..20).map(|_| rng.random_range(lo..=5)).collect();
                store::cohorts::NewCompleted {
                    public_id: format!("{slug}-{k:07}"),
                    prolific_pid: Some(format!("PID{k:07}")),
                    source_ref: None,
                    imported: false,
                    situation_id: ids.get(k % ids.len().max(1)).copied(),
                    demographics: Some(
                        serde_json::json!({"gender": if k % 2 == 0 { "Female" } else { "Male" },
                            "year_of_birth": (1950 + k % 50).to_string(),
                            "country": "United Kingdom, \"Great\" Britain",
                            "employment_status": "Employed",
                            "education": "University - Bachelors"})
                        .to_string(),
                    ),
                    default_answers: answers(1),
                    evoked_answers: answers(2),
                    created_at: t - chrono::Duration::seconds(600),
                    completed_at: Some(t),
                }
            })
            .collect();
        conn.write_transaction(|conn| store::cohorts::insert_completed(conn, study.0, &batch))?;
        done += n;
    }
    Ok(study)
}

/// Adds `models` imported runs (`model-1` …) of `trials` trials each to the generated study
/// `slug`: 50 default-measure trials, the rest evoked over the study's situations in turn,
/// seeded random answers, one in a hundred failed. The fixture of the report benchmark.
pub fn generate_model_runs(
    conn: &mut DbConnection,
    slug: &str,
    models: usize,
    trials: usize,
    seed: u64,
) -> Result<(), OpsError> {
    use rand::{Rng, SeedableRng};
    let study = studies::load(conn, slug)
        .map_err(StoreError::from)?
        .ok_or_else(|| StoreError::Conflict(format!("there is no study {slug:?}")))?;
    let set = study
        .situation_set_id
        .ok_or_else(|| StoreError::Conflict(format!("study {slug:?} has no situation set")))?;
    let situations: Vec<(i64, String)> = situations::list(conn, store::SituationSetId(set))
        .map_err(StoreError::from)?
        .into_iter()
        .map(|s| (s.id.0, s.situation.key))
        .collect();
    if situations.is_empty() {
        return Err(StoreError::Conflict(format!("study {slug:?} has no situations")).into());
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let order = serde_json::to_string(&(1..=20).collect::<Vec<u32>>())
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    for m in 0..models {
        let name = format!("model-{}", m + 1);
        let rows: Vec<store::model_runs::NewImportedTrial> = (0..trials)
            .map(|k| {
                let (measure, situation_id, key, repeat) = if k < 50 {
                    ("default", None, "General".to_owned(), k)
                } else {
                    let j = k - 50;
                    let (id, key) = &situations[j % situations.len()];
                    ("evoked", Some(*id), key.clone(), j / situations.len())
                };
                let lo = if measure == "default" { 1 } else { 2 };
                let answers: Vec<i32> = (0..20).map(|_| rng.random_range(lo..=5)).collect();
                let scores = if rng.random_range(0..100) == 0 {
                    Err("generated failure".to_owned())
                } else {
                    serde_json::to_string(&answers).map_err(|e| e.to_string())
                };
                store::model_runs::NewImportedTrial {
                    measure,
                    situation_id,
                    situation_key: key,
                    repeat_index: i32::try_from(repeat).unwrap_or(i32::MAX),
                    item_order: order.clone(),
                    request: String::new(),
                    raw_reply: String::new(),
                    scores,
                }
            })
            .collect();
        conn.write_transaction(|conn| {
            store::model_runs::insert_imported(
                conn,
                &store::model_runs::NewImportedRun {
                    study_id: study.id,
                    model: &name,
                    instrument_id: study.instrument_id,
                    situation_set_id: Some(set),
                    selection: "{\"generated\":true}".to_owned(),
                    repeats: 1,
                    default_repeats: 50,
                },
                &rows,
            )
        })?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Released model answers
// ---------------------------------------------------------------------------------------------

/// What `import model-results` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelResultsImport {
    pub run_id: i64,
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
) -> Result<ModelResultsImport, OpsError> {
    use crate::domain::model_results::{Measure, parse_results_csv};
    use crate::store::model_runs;
    let text = read(path)?;
    let file_name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rejected = |error: StoreError| OpsError::Rejected {
        path: path.to_owned(),
        error,
    };
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
                let id = store::InstrumentId(study_row.instrument_id);
                (id, instruments::get(conn, id)?)
            }
        };
        let trials = parse_results_csv(&text, &instrument)
            .map_err(|e| StoreError::Conflict(format!("{}: {}", e.location, e.reason)))?;
        let keys: std::collections::HashMap<String, i64> = match study_row.situation_set_id {
            Some(set) => situations::list(conn, store::SituationSetId(set))?
                .into_iter()
                .map(|s| (s.situation.key, s.id.0))
                .collect(),
            None => Default::default(),
        };
        let order = serde_json::to_string(&(1..=instrument.items.len() as u32).collect::<Vec<_>>())
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut rows = Vec::with_capacity(trials.len());
        let mut result = ModelResultsImport {
            run_id: 0,
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
                measure: t.measure.as_str(),
                situation_id,
                situation_key: t.situation_key.clone(),
                repeat_index: repeat,
                item_order: order.clone(),
                request: t.text.clone(),
                raw_reply: serde_json::to_string(&t.cells)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                scores: match &t.scores {
                    Ok(s) => {
                        Ok(serde_json::to_string(s)
                            .map_err(|e| StoreError::Corrupt(e.to_string()))?)
                    }
                    Err(e) => Err(format!("{}: {e}", t.column)),
                },
            });
        }
        let old = model_runs::imported_runs(conn, study_row.id, model, instrument_id.0)?;
        model_runs::delete_runs(conn, &old)?;
        result.replaced = old.len();
        result.run_id = model_runs::insert_imported(
            conn,
            &model_runs::NewImportedRun {
                study_id: study_row.id,
                model,
                instrument_id: instrument_id.0,
                situation_set_id: study_row.situation_set_id,
                selection: serde_json::json!({"imported_from": file_name}).to_string(),
                repeats,
                default_repeats,
            },
            &rows,
        )?;
        audit::record(
            conn,
            &audit::Actor::Cli,
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

// ---------------------------------------------------------------------------------------------
// The alignment report
// ---------------------------------------------------------------------------------------------

/// Which models a report includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSelection {
    All,
    Only(Vec<String>),
}

impl std::str::FromStr for ModelSelection {
    type Err = String;
    /// `all` or a comma-separated list of model names.
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "all" || s.trim().is_empty() {
            return Ok(ModelSelection::All);
        }
        Ok(ModelSelection::Only(
            s.split(',')
                .map(|m| m.trim().to_owned())
                .filter(|m| !m.is_empty())
                .collect(),
        ))
    }
}

/// What a report covers besides the statistical options.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRequest {
    pub study: String,
    /// Model cohorts, by name (each pools all its runs on the instrument).
    pub models: ModelSelection,
    /// Instead of models: one cohort per run. With exactly two runs the report also compares
    /// them (the prompt-variant comparison).
    pub runs: Vec<i64>,
    /// The instrument (key) the trials were answered on; default: the study's. Humans are
    /// included only when it is the study's instrument (theirs).
    pub instrument: Option<String>,
    /// Only the humans on this side of the study's split (train/test).
    pub split: Option<crate::domain::split::Side>,
    pub options: crate::domain::report::Options,
}

impl ReportRequest {
    /// All models, all humans, the study's instrument.
    pub fn new(study: &str, options: crate::domain::report::Options) -> ReportRequest {
        ReportRequest {
            study: study.to_owned(),
            models: ModelSelection::All,
            runs: Vec::new(),
            instrument: None,
            split: None,
            options,
        }
    }
}

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("there is no study {0:?}")]
    NoStudy(String),
    #[error("study {0:?} has no situation set, so its answers have no emotions or factors")]
    NoSituationSet(String),
    #[error("study {study:?} has no runs of model {model:?} (it has: {have})")]
    UnknownModel {
        study: String,
        model: String,
        have: String,
    },
    #[error("there is no instrument {0:?}")]
    NoInstrument(String),
    #[error("study {study:?} has no run {run}")]
    UnknownRun { study: String, run: i64 },
    #[error("run {run} is on instrument {has}, not {wanted}: compare runs on one instrument")]
    RunInstrument {
        run: i64,
        has: String,
        wanted: String,
    },
    #[error("study {0:?} has no split: run `emotionbench split` first")]
    NoSplit(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<diesel::result::Error> for ReportError {
    fn from(e: diesel::result::Error) -> Self {
        ReportError::Store(e.into())
    }
}

/// Reads a study's completed participants and model trials, scores them and computes the
/// alignment report (`domain::report`). Paper mode scores with the paper's convention, the
/// default mode with the instrument authors' (identical for PANAS).
pub fn report(
    conn: &mut DbConnection,
    request: &ReportRequest,
) -> Result<crate::domain::report::Report, ReportError> {
    use crate::domain::instrument::Convention;
    use crate::domain::report::{
        Factor, HumanObservation, Inputs, Layout, Measure, Mode, ModelInput, Trial, build,
    };
    use std::collections::HashMap;
    let slug = request.study.as_str();
    let options = request.options;
    let study = studies::load(conn, slug)?.ok_or_else(|| ReportError::NoStudy(slug.to_owned()))?;
    let set = study
        .situation_set_id
        .ok_or_else(|| ReportError::NoSituationSet(slug.to_owned()))?;
    let instrument_id = match &request.instrument {
        None => store::InstrumentId(study.instrument_id),
        Some(key) => {
            instruments::load(conn, key)?
                .ok_or_else(|| ReportError::NoInstrument(key.clone()))?
                .0
        }
    };
    let instrument = instruments::get(conn, instrument_id)?;
    let humans_answer_it = instrument_id.0 == study.instrument_id;
    let convention = match options.mode {
        Mode::Paper => Convention::Paper,
        Mode::Default => Convention::Authored,
    };
    // Emotions and factors in the set's file order (the paper's table order).
    let mut layout = Layout {
        categories: instrument
            .categories
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        emotions: Vec::new(),
        factors: Vec::new(),
    };
    let mut factor_of: HashMap<i64, usize> = HashMap::new();
    let mut factor_index: HashMap<(String, u32), usize> = HashMap::new();
    for s in situations::list(conn, store::SituationSetId(set))? {
        let e = match layout
            .emotions
            .iter()
            .position(|e| *e == s.situation.emotion)
        {
            Some(e) => e,
            None => {
                layout.emotions.push(s.situation.emotion.clone());
                layout.emotions.len() - 1
            }
        };
        let key = (s.situation.emotion.clone(), s.situation.factor_index);
        let f = *factor_index.entry(key).or_insert_with(|| {
            layout.factors.push(Factor {
                emotion: e,
                index: i32::try_from(s.situation.factor_index).unwrap_or(i32::MAX),
                name: s.situation.factor_name.clone(),
            });
            layout.factors.len() - 1
        });
        factor_of.insert(s.id.0, f);
    }
    let score = |answers: &[i32]| -> Option<Vec<f64>> {
        instrument
            .score(answers, convention)
            .ok()
            .map(|v| v.into_iter().map(|c| c.value).collect())
    };
    // Humans (only on their own instrument): rows come ordered by participant, phase, item.
    let split = request.split.map(|s| s.as_str());
    if split.is_some() && !store::report::has_split(conn, study.id)? {
        return Err(ReportError::NoSplit(slug.to_owned()));
    }
    let mut humans = Vec::new();
    let rows = if humans_answer_it {
        store::report::completed_answers(conn, study.id, split)?
    } else {
        Vec::new()
    };
    let mut i = 0;
    while i < rows.len() {
        let (pid, situation) = (rows[i].0, rows[i].1);
        let (mut before, mut after) = (Vec::new(), Vec::new());
        while i < rows.len() && rows[i].0 == pid {
            match rows[i].2.as_str() {
                "default" => before.push(rows[i].4),
                "evoked" => after.push(rows[i].4),
                _ => {}
            }
            i += 1;
        }
        let factor = situation.and_then(|s| factor_of.get(&s).copied());
        if let (Some(factor), Some(before), Some(after)) = (factor, score(&before), score(&after)) {
            humans.push(HumanObservation {
                factor,
                before,
                after,
            });
        }
    }
    // Model cohorts: by model name, or one per requested run.
    let (cohort_names, filter) = if request.runs.is_empty() {
        let have = store::report::models(conn, study.id, instrument_id.0)?;
        let names = match &request.models {
            ModelSelection::All => have.clone(),
            ModelSelection::Only(list) => {
                for m in list {
                    if !have.contains(m) {
                        return Err(ReportError::UnknownModel {
                            study: slug.to_owned(),
                            model: m.clone(),
                            have: if have.is_empty() {
                                "none".to_owned()
                            } else {
                                have.join(", ")
                            },
                        });
                    }
                }
                list.clone()
            }
        };
        (names.clone(), store::report::TrialFilter::Models(names))
    } else {
        let mut names = Vec::with_capacity(request.runs.len());
        for &id in &request.runs {
            let run = runs::get(conn, store::RunId(id))?
                .filter(|r| r.study_id == Some(study.id))
                .ok_or_else(|| ReportError::UnknownRun {
                    study: slug.to_owned(),
                    run: id,
                })?;
            if run.instrument_id != instrument_id.0 {
                return Err(ReportError::RunInstrument {
                    run: id,
                    has: instruments::get(conn, store::InstrumentId(run.instrument_id))?.key,
                    wanted: instrument.key.clone(),
                });
            }
            names.push(format!("{} [{}, run {id}]", run.model, run.template));
        }
        (
            names,
            store::report::TrialFilter::Runs(request.runs.clone()),
        )
    };
    let mut inputs: Vec<ModelInput> = cohort_names
        .iter()
        .map(|n| ModelInput {
            name: n.clone(),
            trials: Vec::new(),
        })
        .collect();
    for row in store::report::trials(conn, study.id, instrument_id.0, &filter)? {
        let cohort = match &filter {
            store::report::TrialFilter::Models(names) => names.iter().position(|m| *m == row.model),
            store::report::TrialFilter::Runs(ids) => ids.iter().position(|r| *r == row.run_id),
        };
        let Some(input) = cohort.and_then(|c| inputs.get_mut(c)) else {
            continue;
        };
        let measure = match row.measure.as_str() {
            "default" => Measure::Default,
            _ => match row.situation.and_then(|s| Some((s, *factor_of.get(&s)?))) {
                Some((situation, factor)) => Measure::Evoked { factor, situation },
                None => continue,
            },
        };
        let scores = match (row.status.as_str(), row.scores) {
            ("done", Some(json)) => serde_json::from_str::<Vec<i32>>(&json)
                .ok()
                .and_then(|a| score(&a)),
            _ => None,
        };
        input.trials.push(Trial { measure, scores });
    }
    let humans_from = match (humans_answer_it, request.split) {
        (false, _) => format!(
            "no humans: they answered {}, not {}",
            instruments::get(conn, store::InstrumentId(study.instrument_id))?.key,
            instrument.key
        ),
        (true, None) => "all completed participants".to_owned(),
        (true, Some(side)) => format!(
            "the completed participants on the {} side of the study's split",
            side.as_str()
        ),
    };
    let compare = (request.runs.len() == 2).then_some((0, 1));
    Ok(build(
        &Inputs {
            study: slug.to_owned(),
            instrument: instrument.key.clone(),
            scoring: instrument.scoring_note(convention),
            humans_from,
            layout,
            humans,
            models: inputs,
            compare,
        },
        options,
    ))
}
