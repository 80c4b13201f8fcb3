//! Studies: create and change one, open or close it, delete it or one participant's data, and
//! apply the retention dates. Each write records its audit entry in the same transaction.

use chrono::NaiveDate;

use super::error::{Result, invalid};
use crate::domain::study::{StudyConfig, StudyStatus};
use crate::store::studies::{self, Sources};
use crate::store::{DbConnection, StudyId, audit, instruments, participants, situations};

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
    let Some((instrument, _)) = instruments::load(conn, &input.instrument)? else {
        return Err(invalid(format!(
            "Unknown instrument {:?}.",
            input.instrument
        )));
    };
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

/// Opens, closes (or returns to draft) the study `id` named `slug`.
pub fn set_status(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    status: StudyStatus,
    actor: &audit::Actor,
) -> Result<()> {
    conn.write_transaction(|conn| {
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

/// Deletes one participant's data, found by participant number or Prolific id (`which`).
/// Returns how many were deleted (0: none matched, and nothing is recorded).
pub fn delete_participant(
    conn: &mut DbConnection,
    id: StudyId,
    slug: &str,
    which: &str,
    actor: &audit::Actor,
) -> Result<usize> {
    conn.write_transaction(|conn| {
        let n = participants::delete(conn, id, which)?;
        if n > 0 {
            audit::record(
                conn,
                actor,
                "participant.delete",
                Some(&format!("{slug}/{which}")),
                None,
            )?;
        }
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
