//! The rows the alignment report reads: a study's completed participants' answers and its
//! model trials. A handful of queries in all, whatever the size of the study.

use diesel::prelude::*;

use super::columns::Json;
use super::schema::{model_runs, model_trials, participants, responses};
use super::{
    DbConnection, InstrumentId, ItemOrder, ParticipantId, RunId, Scores, SituationId, StoreError,
    StudyId,
};
use crate::domain::language::Lang;
use crate::domain::measure::Measure;
use crate::domain::protocol::Persona;
use crate::domain::run::TrialStatus;
use crate::domain::split::Side;
use crate::domain::survey::ParticipantStatus;

/// One answer of a completed participant: participant, situation, phase, item, value, and
/// the position it was shown at.
pub type AnswerRow = (ParticipantId, Option<SituationId>, Measure, i32, i32, i32);

/// The answers of a study's completed participants (only those on `split`'s side when given),
/// by participant, phase and item.
pub fn completed_answers(
    conn: &mut DbConnection,
    study_id: StudyId,
    split: Option<Side>,
) -> QueryResult<Vec<AnswerRow>> {
    let mut query = responses::table
        .inner_join(participants::table)
        .filter(participants::study_id.eq(study_id))
        .filter(participants::status.eq(ParticipantStatus::Completed))
        .filter(participants::pilot.eq(false))
        .into_boxed();
    if let Some(side) = split {
        query = query.filter(participants::split.eq(side));
    }
    query
        .order((
            responses::participant_id,
            responses::phase,
            responses::item_number,
        ))
        .select((
            responses::participant_id,
            participants::situation_id,
            responses::phase,
            responses::item_number,
            responses::value,
            responses::display_position,
        ))
        .load(conn)
}

/// Whether any participant of the study is on a side of a split.
pub fn has_split(conn: &mut DbConnection, study_id: StudyId) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        participants::table
            .filter(participants::study_id.eq(study_id))
            .filter(participants::split.is_not_null()),
    ))
    .get_result(conn)
}

/// The names of the models with runs on an instrument in a study, sorted.
pub fn models(
    conn: &mut DbConnection,
    study_id: StudyId,
    instrument_id: InstrumentId,
) -> QueryResult<Vec<String>> {
    model_runs::table
        .filter(model_runs::study_id.eq(study_id))
        .filter(model_runs::instrument_id.eq(instrument_id))
        .select(model_runs::model)
        .distinct()
        .order(model_runs::model)
        .load(conn)
}

/// Which runs' trials a report reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialFilter {
    /// Every run of these models.
    Models(Vec<String>),
    /// These runs.
    Runs(Vec<RunId>),
}

/// One finished trial.
#[derive(Debug, Clone, Queryable)]
pub struct TrialRow {
    pub run_id: RunId,
    pub model: String,
    pub measure: Measure,
    pub situation: Option<SituationId>,
    pub status: TrialStatus,
    /// The answers, canonical item order.
    pub scores: Option<Scores>,
    /// Which repeat of its prompt (test–retest).
    pub repeat_index: i32,
    /// The items in the order shown (the item-position effect).
    pub item_order: ItemOrder,
    /// A conversation's first questionnaire (within-session, persona; #17): its answers and
    /// the order shown.
    pub before_scores: Option<Scores>,
    pub before_order: Option<ItemOrder>,
    /// Who a persona trial answered as.
    pub persona: Option<Json<Persona>>,
}

/// The finished (`done` or `failed`) trials of a study's runs on an instrument, selected by
/// `filter`, in the order they were created.
pub fn trials(
    conn: &mut DbConnection,
    study_id: StudyId,
    instrument_id: InstrumentId,
    filter: &TrialFilter,
) -> QueryResult<Vec<TrialRow>> {
    let mut query = model_trials::table
        .inner_join(model_runs::table)
        .filter(model_runs::study_id.eq(study_id))
        .filter(model_runs::instrument_id.eq(instrument_id))
        .filter(model_trials::status.eq_any([TrialStatus::Done, TrialStatus::Failed]))
        .into_boxed();
    query = match filter {
        TrialFilter::Models(names) => query.filter(model_runs::model.eq_any(names)),
        TrialFilter::Runs(ids) => query.filter(model_runs::id.eq_any(ids)),
    };
    // In trial order: without it Postgres returns the rows in whatever order its plan gives
    // (a hash join, a table rewritten by VACUUM), and the bootstrap, which draws trials by
    // index, gave other intervals on Postgres than on SQLite for the same data (#16).
    query
        .order(model_trials::id)
        .select((
            model_runs::id,
            model_runs::model,
            model_trials::measure,
            model_trials::situation_id,
            model_trials::status,
            model_trials::scores,
            model_trials::repeat_index,
            model_trials::item_order,
            model_trials::before_scores,
            model_trials::before_order,
            model_trials::persona,
        ))
        .load(conn)
}

/// One participant of a study as the report's census counts them: status, pilot, split side,
/// the quality flags (failed check, straight-lining, fast) and the completion time.
pub type CensusRow = (
    ParticipantStatus,
    bool,
    Option<Side>,
    bool,
    bool,
    bool,
    Option<chrono::NaiveDateTime>,
);

/// Every participant of the study, for the report's humans included and excluded.
pub fn census(conn: &mut DbConnection, study_id: StudyId) -> QueryResult<Vec<CensusRow>> {
    participants::table
        .filter(participants::study_id.eq(study_id))
        .order(participants::id)
        .select((
            participants::status,
            participants::pilot,
            participants::split,
            participants::flag_failed_check,
            participants::flag_straightline,
            participants::flag_fast,
            participants::completed_at,
        ))
        .load(conn)
}

/// The runs behind a report's model cohorts (on the instrument, in the study), by id.
pub fn runs_of(
    conn: &mut DbConnection,
    study_id: StudyId,
    instrument_id: InstrumentId,
    filter: &TrialFilter,
) -> QueryResult<Vec<RunId>> {
    let mut query = model_runs::table
        .filter(model_runs::study_id.eq(study_id))
        .filter(model_runs::instrument_id.eq(instrument_id))
        .into_boxed();
    query = match filter {
        TrialFilter::Models(names) => query.filter(model_runs::model.eq_any(names)),
        TrialFilter::Runs(ids) => query.filter(model_runs::id.eq_any(ids)),
    };
    query
        .order(model_runs::id)
        .select(model_runs::id)
        .load(conn)
}

/// The first and last finish time of a run's trials.
pub fn trial_span(
    conn: &mut DbConnection,
    run: RunId,
) -> QueryResult<(Option<chrono::NaiveDateTime>, Option<chrono::NaiveDateTime>)> {
    use diesel::dsl::{max, min};
    model_trials::table
        .filter(model_trials::run_id.eq(run))
        .select((
            min(model_trials::finished_at),
            max(model_trials::finished_at),
        ))
        .first(conn)
}

/// The language each participant of a study took it in (#20), by id; `None` where none was
/// recorded (imported, or from before languages). A stored text that is not a language tag is
/// [`StoreError::Corrupt`], never a default.
pub fn participant_languages(
    conn: &mut DbConnection,
    study_id: StudyId,
) -> Result<Vec<(ParticipantId, Option<Lang>)>, StoreError> {
    let rows: Vec<(ParticipantId, Option<String>)> = participants::table
        .filter(participants::study_id.eq(study_id))
        .select((participants::id, participants::language))
        .load(conn)?;
    rows.into_iter()
        .map(|(id, tag)| {
            let lang = tag
                .as_deref()
                .map(|t| {
                    Lang::parse(t).map_err(|detail| StoreError::Corrupt {
                        table: "participants",
                        row: id.to_string(),
                        column: participants::language::NAME.to_owned(),
                        detail,
                    })
                })
                .transpose()?;
            Ok((id, lang))
        })
        .collect()
}
