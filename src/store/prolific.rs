//! A study's Prolific settings and draft id (`prolific_studies`), webhook deliveries by event
//! id (`prolific_webhook_events`), and the participant reads and the one write (releasing a
//! reservation) the Prolific loop needs (#15).

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::db::per_backend;
use super::schema::{participants, prolific_studies, prolific_webhook_events};
use super::{DbConnection, ParticipantId, StudyId, now};
use crate::domain::survey::ParticipantStatus;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = prolific_studies)]
pub struct ProlificStudy {
    pub study_id: StudyId,
    pub prolific_study_id: Option<String>,
    pub description: String,
    pub reward_cents: i32,
    pub places: Option<i32>,
    pub auto_approve: bool,
    pub screen_out_reward_cents: Option<i32>,
    pub estimated_minutes: Option<i32>,
    pub drafted_at: Option<NaiveDateTime>,
}

/// What a researcher sets for a study's Prolific draft.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftSettings {
    pub description: String,
    pub reward_cents: i32,
    pub places: Option<i32>,
    pub auto_approve: bool,
    pub screen_out_reward_cents: Option<i32>,
}

pub fn get(conn: &mut DbConnection, study: StudyId) -> QueryResult<Option<ProlificStudy>> {
    prolific_studies::table
        .find(study)
        .select(ProlificStudy::as_select())
        .get_result(conn)
        .optional()
}

/// Stores the settings (insert or replace), keeping the Prolific id.
pub fn save_settings(
    conn: &mut DbConnection,
    study: StudyId,
    s: &DraftSettings,
) -> QueryResult<()> {
    let t = now();
    let upsert = diesel::insert_into(prolific_studies::table)
        .values((
            prolific_studies::study_id.eq(study),
            prolific_studies::description.eq(&s.description),
            prolific_studies::reward_cents.eq(s.reward_cents),
            prolific_studies::places.eq(s.places),
            prolific_studies::auto_approve.eq(s.auto_approve),
            prolific_studies::screen_out_reward_cents.eq(s.screen_out_reward_cents),
            prolific_studies::created_at.eq(t),
            prolific_studies::updated_at.eq(t),
        ))
        .on_conflict(prolific_studies::study_id)
        .do_update()
        .set((
            prolific_studies::description.eq(&s.description),
            prolific_studies::reward_cents.eq(s.reward_cents),
            prolific_studies::places.eq(s.places),
            prolific_studies::auto_approve.eq(s.auto_approve),
            prolific_studies::screen_out_reward_cents.eq(s.screen_out_reward_cents),
            prolific_studies::updated_at.eq(t),
        ));
    // ON CONFLICT is written per backend: the MultiConnection's backend has no upsert.
    per_backend!(conn, |c| upsert.execute(c))?;
    Ok(())
}

/// Records the draft Prolific made (or updated) for the study.
pub fn set_drafted(
    conn: &mut DbConnection,
    study: StudyId,
    prolific_id: &str,
    minutes: i32,
) -> QueryResult<()> {
    let t = now();
    diesel::update(prolific_studies::table.find(study))
        .set((
            prolific_studies::prolific_study_id.eq(Some(prolific_id)),
            prolific_studies::estimated_minutes.eq(Some(minutes)),
            prolific_studies::drafted_at.eq(Some(t)),
            prolific_studies::updated_at.eq(t),
        ))
        .execute(conn)?;
    Ok(())
}

/// Seconds from consent to completion of the study's completed participants (not pilots, not
/// imported), for the estimated time.
pub fn completion_seconds(conn: &mut DbConnection, study: StudyId) -> QueryResult<Vec<i64>> {
    Ok(participants::table
        .filter(participants::study_id.eq(study))
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::imported.eq(false))
        .filter(participants::pilot.eq(false))
        .select((participants::created_at, participants::completed_at))
        .load::<(NaiveDateTime, Option<NaiveDateTime>)>(conn)?
        .into_iter()
        .filter_map(|(a, b)| b.map(|b| (b - a).num_seconds()))
        .collect())
}

/// A participant as the reconciliation sees it.
#[derive(Debug, Clone, Queryable)]
pub struct Linked {
    pub id: ParticipantId,
    pub export_id: String,
    pub prolific_pid: Option<String>,
    pub prolific_session_id: Option<String>,
    pub status: ParticipantStatus,
    pub reserved_until: Option<NaiveDateTime>,
}

impl Linked {
    pub fn holds_place(&self, at: NaiveDateTime) -> bool {
        self.status == ParticipantStatus::Active && self.reserved_until.is_some_and(|r| r > at)
    }
}

/// The study's participants that came with a Prolific id (pilots excluded).
pub fn linked(conn: &mut DbConnection, study: StudyId) -> QueryResult<Vec<Linked>> {
    participants::table
        .filter(participants::study_id.eq(study))
        .filter(participants::prolific_pid.is_not_null())
        .filter(participants::pilot.eq(false))
        .order(participants::id)
        .select((
            participants::id,
            participants::export_id,
            participants::prolific_pid,
            participants::prolific_session_id,
            participants::status,
            participants::reserved_until,
        ))
        .load(conn)
}

/// The participant a webhook's submission names: by the session id our link carried (the
/// submission id is "the ID we pass to the survey platform using %SESSION_ID%"), else the one
/// active participant with that Prolific id who came through the link of a study drafted on
/// Prolific here (its STUDY_ID parameter is that Prolific study's id).
pub fn for_submission(
    conn: &mut DbConnection,
    submission_id: &str,
    prolific_pid: Option<&str>,
) -> QueryResult<Option<Linked>> {
    let select = (
        participants::id,
        participants::export_id,
        participants::prolific_pid,
        participants::prolific_session_id,
        participants::status,
        participants::reserved_until,
    );
    let by_session: Vec<Linked> = participants::table
        .filter(participants::prolific_session_id.eq(submission_id))
        .filter(participants::pilot.eq(false))
        .select(select)
        .load(conn)?;
    if by_session.len() == 1 {
        return Ok(by_session.into_iter().next());
    }
    let Some(pid) = prolific_pid else {
        return Ok(None);
    };
    let drafted: Vec<String> = prolific_studies::table
        .filter(prolific_studies::prolific_study_id.is_not_null())
        .select(prolific_studies::prolific_study_id.assume_not_null())
        .load(conn)?;
    let active: Vec<Linked> = participants::table
        .filter(participants::prolific_pid.eq(pid))
        .filter(participants::prolific_study_id.eq_any(drafted))
        .filter(participants::status.eq(ParticipantStatus::Active))
        .filter(participants::pilot.eq(false))
        .select(select)
        .load(conn)?;
    Ok(if active.len() == 1 {
        active.into_iter().next()
    } else {
        None
    })
}

/// Gives the situation an active participant holds back to the assignment at once: the
/// reservation ends now. True when there was one to release.
pub fn release_reservation(conn: &mut DbConnection, id: ParticipantId) -> QueryResult<bool> {
    let t = now();
    let n = diesel::update(
        participants::table
            .find(id)
            .filter(participants::status.eq(ParticipantStatus::Active))
            .filter(participants::reserved_until.gt(t)),
    )
    .set((
        participants::reserved_until.eq(None::<NaiveDateTime>),
        participants::updated_at.eq(t),
    ))
    .execute(conn)?;
    Ok(n == 1)
}

/// One webhook delivery to record.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    pub event_id: &'a str,
    pub event_type: &'a str,
    pub resource_id: Option<&'a str>,
    pub status: Option<&'a str>,
}

/// Records a delivery by its event id; false when that id was recorded before (a redelivery or
/// a replay), in which case nothing else may change.
pub fn record_event(conn: &mut DbConnection, e: &Event<'_>) -> QueryResult<bool> {
    let insert = diesel::insert_into(prolific_webhook_events::table)
        .values((
            prolific_webhook_events::event_id.eq(e.event_id),
            prolific_webhook_events::event_type.eq(e.event_type),
            prolific_webhook_events::resource_id.eq(e.resource_id),
            prolific_webhook_events::status.eq(e.status),
            prolific_webhook_events::outcome.eq("received"),
            prolific_webhook_events::received_at.eq(now()),
        ))
        .on_conflict_do_nothing();
    let n = per_backend!(conn, |c| insert.execute(c))?;
    Ok(n == 1)
}

/// What a recorded delivery led to.
pub fn set_event_outcome(
    conn: &mut DbConnection,
    event_id: &str,
    participant: Option<ParticipantId>,
    outcome: &str,
) -> QueryResult<()> {
    diesel::update(
        prolific_webhook_events::table.filter(prolific_webhook_events::event_id.eq(event_id)),
    )
    .set((
        prolific_webhook_events::participant_id.eq(participant.map(|p| p.0)),
        prolific_webhook_events::outcome.eq(outcome),
    ))
    .execute(conn)?;
    Ok(())
}

/// How many deliveries are recorded (tests, the Prolific page).
pub fn event_count(conn: &mut DbConnection) -> QueryResult<i64> {
    prolific_webhook_events::table.count().get_result(conn)
}

/// How many situations the study's set has (a draft's default places: target × situations).
pub fn situation_count(
    conn: &mut DbConnection,
    set: Option<super::SituationSetId>,
) -> QueryResult<i64> {
    use super::schema::situations;
    let Some(set) = set else { return Ok(0) };
    situations::table
        .filter(situations::set_id.eq(set))
        .count()
        .get_result(conn)
}
