//! The rows the alignment report reads: a study's completed participants' answers and its
//! model trials. Two queries in all, whatever the size of the study.

use diesel::prelude::*;

use super::DbConnection;
use super::schema::{model_runs, model_trials, participants, responses};

/// One answer of a completed participant: participant, situation, phase, item, value.
pub type AnswerRow = (i64, Option<i64>, String, i32, i32);

/// The answers of a study's completed participants, by participant, phase and item.
pub fn completed_answers(conn: &mut DbConnection, study_id: i64) -> QueryResult<Vec<AnswerRow>> {
    responses::table
        .inner_join(participants::table)
        .filter(participants::study_id.eq(study_id))
        .filter(participants::status.eq("completed"))
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
        ))
        .load(conn)
}

/// The names of the models with runs in a study, sorted.
pub fn models(conn: &mut DbConnection, study_id: i64) -> QueryResult<Vec<String>> {
    model_runs::table
        .filter(model_runs::study_id.eq(study_id))
        .select(model_runs::model)
        .distinct()
        .order(model_runs::model)
        .load(conn)
}

/// One finished trial: model, measure, situation, status, scores JSON.
pub type TrialRow = (String, String, Option<i64>, String, Option<String>);

/// The finished (`done` or `failed`) trials of the given models' runs in a study.
pub fn trials(
    conn: &mut DbConnection,
    study_id: i64,
    models: &[String],
) -> QueryResult<Vec<TrialRow>> {
    model_trials::table
        .inner_join(model_runs::table)
        .filter(model_runs::study_id.eq(study_id))
        .filter(model_runs::model.eq_any(models))
        .filter(model_trials::status.eq_any(["done", "failed"]))
        .select((
            model_runs::model,
            model_trials::measure,
            model_trials::situation_id,
            model_trials::status,
            model_trials::scores,
        ))
        .load(conn)
}
