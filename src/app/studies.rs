//! Studies: create, change, duplicate one, export and import its definition, open (after its
//! launch checklist) or close it, delete it or one participant's data, and apply the retention
//! dates. Each write records its audit entry in the same transaction.

use chrono::NaiveDate;

use super::error::{Error, Result, invalid};
use crate::domain::archive::{ArchivedSet, StudyArchive};
use crate::domain::study::{StudyConfig, StudyStatus, checklist_problems};
use crate::store::participants::ParticipantBrief;
use crate::store::studies::{self, Sources};
use crate::store::{DbConnection, StudyId, audit, instruments, participants, situations};

/// Today (UTC), the day the launch checklist's retention date is compared with.
pub fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// A study's settings as a researcher gives them: the configuration, the instrument (key) and
/// the situation set (name; empty for none), and the retention date.
#[derive(Debug, Clone)]
pub struct StudyInput {
    pub config: StudyConfig,
    pub instrument: String,
    pub set: String,
    pub retention: Option<NaiveDate>,
}

/// Resolves the instrument key and the set name; an unknown one is [`super::Error::Invalid`].
fn sources(conn: &mut DbConnection, input: &StudyInput) -> Result<Sources> {
    let Some((instrument, loaded)) = instruments::load(conn, &input.instrument)? else {
        return Err(invalid(format!(
            "Unknown instrument {:?}.",
            input.instrument
        )));
    };
    // A free-text task is asked of models (and, beside a questionnaire, of participants); a
    // study's survey is a rated questionnaire.
    if loaded.is_free_text() {
        return Err(invalid(format!(
            "{} is a free-text task, not a questionnaire: choose a rated instrument.",
            input.instrument
        )));
    }
    // The situation page's free-text field asks the prompt of a free-text task (#18).
    if let Some(field) = &input.config.free_text {
        match instruments::load(conn, &field.task)? {
            Some((_, task)) if task.is_free_text() => {}
            Some(_) => {
                return Err(invalid(format!(
                    "{} is a questionnaire, not a free-text task: the free-text field needs a \
                     free-text task.",
                    field.task
                )));
            }
            None => {
                return Err(invalid(format!("Unknown free-text task {:?}.", field.task)));
            }
        }
    }
    let set = match input.set.trim() {
        "" => None,
        name => Some(
            situations::find_set(conn, name)?
                .ok_or_else(|| invalid(format!("Unknown situation set {name:?}.")))?,
        ),
    };
    Ok(Sources {
        instrument,
        set,
        retention_until: input.retention.and_then(|d| d.and_hms_opt(0, 0, 0)),
    })
}

/// Creates a study as a draft, with a random seed fixed now. A taken slug is
/// `StoreError::Conflict`. Returns the slug.
pub fn create(conn: &mut DbConnection, input: &StudyInput, actor: &audit::Actor) -> Result<String> {
    let sources = sources(conn, input)?;
    conn.write_transaction(|conn| {
        let seed = i64::from(rand::random::<u32>());
        studies::create(conn, &input.config, StudyStatus::Draft, sources, seed)?;
        audit::record(conn, actor, "study.create", Some(&input.config.slug), None)?;
        Ok(input.config.slug.clone())
    })
}

/// Changes a study's settings. Returns the slug.
pub fn update(
    conn: &mut DbConnection,
    id: StudyId,
    input: &StudyInput,
    actor: &audit::Actor,
) -> Result<String> {
    let sources = sources(conn, input)?;
    conn.write_transaction(|conn| {
        studies::update(conn, id, &input.config, sources)?;
        audit::record(conn, actor, "study.update", Some(&input.config.slug), None)?;
        Ok(input.config.slug.clone())
    })
}

/// Opens, closes (or returns to draft) the study `id` named `slug`. Opening needs every item
/// of the launch checklist; otherwise it is [`Error::Invalid`] naming what is missing.
pub fn set_status(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    status: StudyStatus,
    actor: &audit::Actor,
) -> Result<()> {
    conn.write_transaction(|conn| {
        if status == StudyStatus::Open {
            let study = studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.into()))?;
            let mut problems = checklist_problems(&study.launch_checklist(today()));
            problems.extend(untranslated(conn, &study)?);
            if !problems.is_empty() {
                return Err(invalid(format!(
                    "The study cannot open yet. {}",
                    problems.join(" ")
                )));
            }
        }
        studies::set_status(conn, id, status)?;
        audit::record(
            conn,
            actor,
            &format!("study.{}", status.as_str()),
            Some(slug),
            None,
        )?;
        Ok(())
    })
}

/// What a study in several languages lacks to open (#20): each situation of its set without a
/// text in one of its other languages, named (the first few, then how many more), and each of
/// those languages its instrument has no translation in.
fn untranslated(conn: &mut DbConnection, study: &studies::Study) -> Result<Vec<String>> {
    const NAMED: usize = 10;
    let [_, others @ ..] = study.languages() else {
        return Ok(Vec::new());
    };
    let missing = match study.situation_set_id {
        Some(set) => crate::store::situation_texts::missing(conn, set, others)
            .map_err(crate::store::StoreError::from)?,
        None => Vec::new(),
    };
    let mut out: Vec<String> = missing
        .iter()
        .take(NAMED)
        .map(|(lang, key)| format!("The situation {key} has no text in {lang}."))
        .collect();
    if missing.len() > NAMED {
        out.push(format!(
            "{} more situations lack a text in one of the study's languages.",
            missing.len() - NAMED
        ));
    }
    // The instrument too: its participants in a language without its translation would
    // answer items in another language than their pages'.
    let instrument = crate::store::instrument_texts::missing(conn, study.instrument_id, others)
        .map_err(crate::store::StoreError::from)?;
    if !instrument.is_empty() {
        let key = instruments::get(conn, study.instrument_id)?.key;
        out.extend(
            instrument.iter().map(|lang| {
                format!("The instrument {key} has no item texts and labels in {lang}.")
            }),
        );
    }
    Ok(out)
}

/// Creates the draft `new_slug` (titled `new_title`) with the settings, texts, instrument, set
/// and retention date of the study `slug`, and no participants. Returns the new slug.
pub fn duplicate(
    conn: &mut DbConnection,
    slug: &str,
    new_slug: &str,
    new_title: &str,
    actor: &audit::Actor,
) -> Result<String> {
    conn.write_transaction(|conn| {
        let from = studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.into()))?;
        let mut config = from.config();
        config.slug = new_slug.trim().to_owned();
        config.title = new_title.trim().to_owned();
        config.validate().map_err(invalid)?;
        let sources = Sources {
            instrument: from.instrument_id,
            set: from.situation_set_id,
            retention_until: from.retention_until,
        };
        let seed = i64::from(rand::random::<u32>());
        let id = studies::create(conn, &config, StudyStatus::Draft, sources, seed)?;
        // Who may take part is a setting too.
        let door = crate::store::doors::load(conn, from.id)?;
        super::doors::copy_into(conn, id, &door)?;
        audit::record(
            conn,
            actor,
            "study.duplicate",
            Some(&config.slug),
            Some(&serde_json::json!({ "from": slug })),
        )?;
        Ok(config.slug)
    })
}

/// The definition of the study `slug`, ready to write as one file.
pub fn export_definition(conn: &mut DbConnection, slug: &str) -> Result<StudyArchive> {
    let study = studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.into()))?;
    let instrument = instruments::get(conn, study.instrument_id)?;
    let set = match study.situation_set_id {
        None => None,
        Some(id) => {
            let name = situations::sets(conn)?
                .into_iter()
                .find(|s| s.id == id)
                .map(|s| s.name)
                .ok_or_else(|| {
                    crate::store::StoreError::Inconsistent(format!(
                        "study {slug}: situation set {id} is missing"
                    ))
                })?;
            let situations = situations::list(conn, id)?
                .into_iter()
                .map(|s| s.situation)
                .collect();
            Some(ArchivedSet { name, situations })
        }
    };
    let mut archive = StudyArchive::new(study.config(), study.retention_date(), instrument, set);
    archive.door = crate::store::doors::load(conn, study.id)?;
    if let Some(field) = &study.free_text.0 {
        let (_, task) = instruments::load(conn, &field.task)?.ok_or_else(|| {
            crate::store::StoreError::Inconsistent(format!(
                "study {slug}: free-text task {:?} is missing",
                field.task
            ))
        })?;
        archive.free_text_task = Some(task);
    }
    Ok(archive)
}

/// Whether an import found the instrument or set already here (same content) or made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Reused {
    Existing,
    Created,
}

impl Reused {
    pub fn as_str(self) -> &'static str {
        match self {
            Reused::Existing => "already here, identical",
            Reused::Created => "created",
        }
    }
}

/// What importing a definition did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportedStudy {
    pub slug: String,
    pub instrument: (String, Reused),
    pub set: Option<(String, Reused)>,
    /// Studies the file's door excludes that this installation does not have (left out).
    pub excluded_studies_not_here: Vec<String>,
}

/// Creates the study of `archive` as a draft (a new seed, no participants), under `slug` when
/// given, else the file's slug. Its instrument and situation set are used when this
/// installation has them with the same content, and created when it has none of that name.
/// A same-named instrument or set with other content is refused (`Invalid`, naming it): a
/// study silently run on other items or texts would not be the same study. A set can be
/// imported under another name (`set_name`); an instrument keeps its key (prompts and the
/// emotion a scale measures go by it). All in one transaction: a refusal stores nothing.
pub fn import_definition(
    conn: &mut DbConnection,
    archive: &StudyArchive,
    slug: Option<&str>,
    set_name: Option<&str>,
    actor: &audit::Actor,
) -> Result<ImportedStudy> {
    let mut config = archive.study.clone();
    if let Some(slug) = slug.map(str::trim).filter(|s| !s.is_empty()) {
        config.slug = slug.to_owned();
    }
    config.validate().map_err(invalid)?;
    conn.write_transaction(|conn| {
        if studies::find(conn, &config.slug)?.is_some() {
            return Err(invalid(format!(
                "A study {:?} exists here already: choose another slug for the imported one.",
                config.slug
            )));
        }
        let inst = &archive.instrument;
        let (instrument, inst_reused) = import_instrument(conn, inst)?;
        import_free_text_task(conn, &config, archive.free_text_task.as_ref())?;
        let set = match &archive.situation_set {
            None => None,
            Some(a) => {
                let name = set_name
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .unwrap_or(&a.name)
                    .to_owned();
                Some(import_set(conn, &name, &config.slug, &a.situations)?)
            }
        };
        let sources = Sources {
            instrument,
            set: set.as_ref().map(|(id, _, _)| *id),
            retention_until: archive.retention_until.and_then(|d| d.and_hms_opt(0, 0, 0)),
        };
        let seed = i64::from(rand::random::<u32>());
        let id = studies::create(conn, &config, StudyStatus::Draft, sources, seed)?;
        let door_not_here = super::doors::copy_into(conn, id, &archive.door)?;
        let outcome = ImportedStudy {
            slug: config.slug.clone(),
            instrument: (inst.key.clone(), inst_reused),
            set: set.map(|(_, name, reused)| (name, reused)),
            excluded_studies_not_here: door_not_here,
        };
        audit::record(
            conn,
            actor,
            "study.import",
            Some(&config.slug),
            Some(&serde_json::json!(outcome)),
        )?;
        Ok(outcome)
    })
}

/// The instrument of an imported study: the stored one when it is the file's, created when
/// there is none of its key, else refused.
fn import_instrument(
    conn: &mut DbConnection,
    inst: &crate::domain::instrument::Instrument,
) -> Result<(crate::store::InstrumentId, Reused)> {
    match instruments::load(conn, &inst.key)? {
        Some((id, stored)) if stored == *inst => Ok((id, Reused::Existing)),
        Some(_) => Err(invalid(format!(
            "This installation has an instrument {:?} whose definition differs from the \
             file's (items, scale or prompts), so the imported study would not ask the \
             same questions. Rename the instrument's \"key\" in the file to import it \
             as a separate instrument.",
            inst.key
        ))),
        None => Ok((instruments::upsert(conn, inst, false)?.0, Reused::Created)),
    }
}

/// The free-text task of an imported study's field (#18): the file's, reused or created as
/// the instrument is; a file without it (written before tasks travelled) needs the task here.
fn import_free_text_task(
    conn: &mut DbConnection,
    config: &StudyConfig,
    file: Option<&crate::domain::instrument::Instrument>,
) -> Result<()> {
    let Some(field) = &config.free_text else {
        return Ok(());
    };
    match file {
        Some(task) => import_instrument(conn, task).map(|_| ()),
        None => match instruments::load(conn, &field.task)? {
            Some((_, task)) if task.is_free_text() => Ok(()),
            _ => Err(invalid(format!(
                "The study asks the free-text task {:?}, which neither the file nor this \
                 installation has.",
                field.task
            ))),
        },
    }
}

/// The set `name` for an imported study: the stored one when its situations are exactly the
/// file's, a new one when there is none, else refused.
fn import_set(
    conn: &mut DbConnection,
    name: &str,
    slug: &str,
    file: &[crate::domain::situation::Situation],
) -> Result<(crate::store::SituationSetId, String, Reused)> {
    situations::valid_set_name(name).map_err(invalid)?;
    if let Some(id) = situations::find_set(conn, name)? {
        let stored: Vec<_> = situations::list(conn, id)?
            .into_iter()
            .map(|s| s.situation)
            .collect();
        if stored == file {
            return Ok((id, name.to_owned(), Reused::Existing));
        }
        return Err(invalid(format!(
            "This installation has a situation set {name:?} with other situations or texts \
             than the file's. Import the study's set under another name."
        )));
    }
    situations::import(conn, name, &format!("study definition {slug}"), file)?;
    let id = situations::find_set(conn, name)?.ok_or_else(|| {
        crate::store::StoreError::Inconsistent(format!("set {name} vanished after its import"))
    })?;
    Ok((id, name.to_owned(), Reused::Created))
}

/// Deletes the study `id` named `slug` with its participants, answers and model runs.
pub fn delete(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    actor: &audit::Actor,
) -> Result<()> {
    conn.write_transaction(|conn| {
        studies::delete(conn, id)?;
        audit::record(conn, actor, "study.delete", Some(slug), None)?;
        Ok(())
    })
}

/// Deletes one participant's data, found by the exports' participant id or the Prolific id
/// (`which`). Returns who was deleted (`None`: nobody matched, and nothing is recorded).
pub fn delete_participant(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    which: &str,
    actor: &audit::Actor,
) -> Result<Option<ParticipantBrief>> {
    conn.write_transaction(|conn| {
        let Some(who) = participants::find_by_export_or_pid(conn, id, which)? else {
            return Ok(None);
        };
        participants::delete(conn, id, who.id)?;
        // The export id, never the Prolific id: the audit log outlives the data.
        audit::record(
            conn,
            actor,
            "participant.delete",
            Some(&format!("{slug}/{}", who.export_id)),
            None,
        )?;
        Ok(Some(who))
    })
}

/// Deletes a study's pilot participants (made through its pilot link), audited with how many.
pub fn delete_pilots(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    actor: &audit::Actor,
) -> Result<usize> {
    conn.write_transaction(|conn| {
        let n = participants::delete_pilots(conn, id)?;
        audit::record(
            conn,
            actor,
            "participant.delete-pilots",
            Some(slug),
            Some(&serde_json::json!({ "pilot_participants": n })),
        )?;
        Ok(n)
    })
}

/// Deletes the participant data of every study whose retention date has passed (the studies
/// stay, closed) and records each. Returns (study, participants deleted).
pub fn apply_retention(
    conn: &mut DbConnection,
    actor: &audit::Actor,
) -> Result<Vec<(String, usize)>> {
    let done = studies::apply_retention(conn)?;
    for (slug, n) in &done {
        audit::record(
            conn,
            actor,
            "retention.delete",
            Some(slug),
            Some(&serde_json::json!({"participants": n})),
        )?;
    }
    Ok(done)
}
