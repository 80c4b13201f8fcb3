//! Studies.

use diesel::prelude::*;

use super::schema::{situations, studies};
use super::{DbConnection, InstrumentId, SituationSetId, StoreError, StudyId, now};
use crate::domain::study::{StudyConfig, StudyStatus};

/// A study as listed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StudySummary {
    pub id: StudyId,
    pub slug: String,
    pub title: String,
    pub status: String,
    pub situations: i64,
}

/// Creates a study. The seed for its random draws is fixed now and stored.
pub fn create(
    conn: &mut DbConnection,
    config: &StudyConfig,
    status: StudyStatus,
    instrument: InstrumentId,
    set: Option<SituationSetId>,
    seed: i64,
) -> Result<StudyId, StoreError> {
    config.validate().map_err(StoreError::Conflict)?;
    if find(conn, &config.slug)?.is_some() {
        return Err(StoreError::Conflict(format!(
            "a study {} exists already",
            config.slug
        )));
    }
    let t = now();
    let demographics = serde_json::to_string(&config.demographics)
        .map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let id = diesel::insert_into(studies::table)
        .values((
            (
                studies::slug.eq(&config.slug),
                studies::title.eq(&config.title),
                studies::status.eq(status.as_str()),
                studies::instrument_id.eq(instrument.0),
                studies::situation_set_id.eq(set.map(|s| s.0)),
                studies::consent_text.eq(&config.consent_text),
                studies::debrief_text.eq(&config.debrief_text),
                studies::target_per_situation.eq(config.target_per_situation),
                studies::item_order.eq(if config.shuffle_items {
                    "shuffled"
                } else {
                    "fixed"
                }),
                studies::attention_check.eq(if config.attention_check_ends {
                    "end"
                } else {
                    "flag"
                }),
                studies::demographics.eq(demographics),
            ),
            (
                studies::pid_param.eq(&config.pid_param),
                studies::study_id_param.eq(&config.study_id_param),
                studies::session_id_param.eq(&config.session_id_param),
                studies::code_completed.eq(&config.code_completed),
                studies::code_no_consent.eq(&config.code_no_consent),
                studies::code_failed_check.eq(&config.code_failed_check),
                studies::code_screened_out.eq(&config.code_screened_out),
                studies::min_situation_seconds.eq(config.min_situation_seconds),
                studies::reservation_minutes.eq(config.reservation_minutes),
                studies::seed.eq(seed),
                studies::created_at.eq(t),
                studies::updated_at.eq(t),
                studies::opened_at.eq((status == StudyStatus::Open).then_some(t)),
            ),
        ))
        .returning(studies::id)
        .get_result::<i64>(conn)?;
    Ok(StudyId(id))
}

fn summary(
    conn: &mut DbConnection,
    row: (i64, String, String, String, Option<i64>),
) -> QueryResult<StudySummary> {
    let (id, slug, title, status, set) = row;
    let situations = match set {
        Some(set) => situations::table
            .filter(situations::set_id.eq(set))
            .count()
            .get_result(conn)?,
        None => 0,
    };
    Ok(StudySummary {
        id: StudyId(id),
        slug,
        title,
        status,
        situations,
    })
}

pub fn find(conn: &mut DbConnection, slug: &str) -> QueryResult<Option<StudySummary>> {
    let row = studies::table
        .filter(studies::slug.eq(slug))
        .select((
            studies::id,
            studies::slug,
            studies::title,
            studies::status,
            studies::situation_set_id,
        ))
        .first(conn)
        .optional()?;
    row.map(|r| summary(conn, r)).transpose()
}

/// Studies open to participants, newest first.
pub fn list_open(conn: &mut DbConnection) -> QueryResult<Vec<StudySummary>> {
    let rows = studies::table
        .filter(studies::status.eq(StudyStatus::Open.as_str()))
        .order(studies::id.desc())
        .select((
            studies::id,
            studies::slug,
            studies::title,
            studies::status,
            studies::situation_set_id,
        ))
        .load(conn)?;
    rows.into_iter().map(|r| summary(conn, r)).collect()
}
