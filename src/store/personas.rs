//! The human participants a persona run answers as (#17): the completed, non-pilot
//! participants of a study who answered demographic questions and saw a situation.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::{DemographicAnswers, ItemOrder};
use super::schema::participants;
use super::{DbConnection, ParticipantId, SituationId, StudyId};
use crate::domain::survey::ParticipantStatus;

/// One participant as a persona trial needs them.
#[derive(Debug, Clone, Queryable)]
pub struct PersonaSource {
    pub export_id: String,
    pub situation_id: SituationId,
    pub order_default: Option<ItemOrder>,
    pub order_evoked: Option<ItemOrder>,
    pub demographics: DemographicAnswers,
    pub created_at: NaiveDateTime,
    pub completed_at: Option<NaiveDateTime>,
}

/// The selected columns; the two filtered on are nullable in the table.
type Row = (
    String,
    Option<SituationId>,
    Option<ItemOrder>,
    Option<ItemOrder>,
    Option<DemographicAnswers>,
    NaiveDateTime,
    Option<NaiveDateTime>,
);

/// The study's completed participants with demographics and a situation, in the order they
/// were made (pilots never count).
pub fn sources(conn: &mut DbConnection, study: StudyId) -> QueryResult<Vec<PersonaSource>> {
    let rows: Vec<Row> = participants::table
        .filter(participants::study_id.eq(study))
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::pilot.eq(false))
        .filter(participants::demographics.is_not_null())
        .filter(participants::situation_id.is_not_null())
        .order(participants::id)
        .select((
            participants::export_id,
            participants::situation_id,
            participants::order_default,
            participants::order_evoked,
            participants::demographics,
            participants::created_at,
            participants::completed_at,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(export_id, situation, od, oe, demo, created, completed)| {
            Some(PersonaSource {
                export_id,
                situation_id: situation?,
                order_default: od,
                order_evoked: oe,
                demographics: demo?,
                created_at: created,
                completed_at: completed,
            })
        })
        .collect())
}

/// A participant's demographic answers, created and completed times.
pub type Profile = (
    ParticipantId,
    DemographicAnswers,
    NaiveDateTime,
    Option<NaiveDateTime>,
);

/// Each completed, non-pilot participant's demographic answers with the times that date
/// them (created, completed), for the report's groups.
pub fn profiles(conn: &mut DbConnection, study: StudyId) -> QueryResult<Vec<Profile>> {
    type Stored = (
        ParticipantId,
        Option<DemographicAnswers>,
        NaiveDateTime,
        Option<NaiveDateTime>,
    );
    let rows: Vec<Stored> = participants::table
        .filter(participants::study_id.eq(study))
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::pilot.eq(false))
        .filter(participants::demographics.is_not_null())
        .select((
            participants::id,
            participants::demographics,
            participants::created_at,
            participants::completed_at,
        ))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, demo, created, completed)| Some((id, demo?, created, completed)))
        .collect())
}
