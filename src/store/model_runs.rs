//! Model runs and their trials. So far: runs imported from released answer files.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::{ItemOrder, Json, Scores};
use super::schema::{model_runs, model_trials};
use super::{
    DbConnection, InstrumentId, RunId, SituationId, SituationSetId, StoreError, StudyId, now,
};
use crate::domain::measure::Measure;
use crate::domain::run::{ErrorClass, RunStatus, TrialStatus};

/// A trial to store for an imported run.
#[derive(Debug, Clone)]
pub struct NewImportedTrial {
    pub measure: Measure,
    pub situation_id: Option<SituationId>,
    pub situation_key: String,
    pub repeat_index: i32,
    /// Display position -> item number.
    pub item_order: ItemOrder,
    pub request: String,
    pub raw_reply: String,
    /// Ok(scores) or Err(parse error).
    pub scores: Result<Scores, String>,
}

/// The description of an imported run.
#[derive(Debug, Clone)]
pub struct NewImportedRun<'a> {
    pub study_id: StudyId,
    pub model: &'a str,
    pub instrument_id: InstrumentId,
    pub situation_set_id: Option<SituationSetId>,
    /// JSON: where it came from.
    pub selection: String,
    pub repeats: i32,
    pub default_repeats: i32,
}

/// Ids of a study's imported runs of `model` on an instrument.
pub fn imported_runs(
    conn: &mut DbConnection,
    study_id: StudyId,
    model: &str,
    instrument_id: InstrumentId,
) -> QueryResult<Vec<RunId>> {
    model_runs::table
        .filter(model_runs::study_id.eq(study_id))
        .filter(model_runs::model.eq(model))
        .filter(model_runs::instrument_id.eq(instrument_id))
        .filter(model_runs::source.eq("import"))
        .select(model_runs::id)
        .load(conn)
}

/// Deletes runs (their trials go with them).
pub fn delete_runs(conn: &mut DbConnection, ids: &[RunId]) -> QueryResult<usize> {
    diesel::delete(model_trials::table.filter(model_trials::run_id.eq_any(ids))).execute(conn)?;
    diesel::delete(model_runs::table.filter(model_runs::id.eq_any(ids))).execute(conn)
}

/// Creates a completed run with source `import` and its trials. Call inside a transaction.
pub fn insert_imported(
    conn: &mut DbConnection,
    run: &NewImportedRun<'_>,
    trials: &[NewImportedTrial],
) -> Result<RunId, StoreError> {
    let t = now();
    let id = diesel::insert_into(model_runs::table)
        .values((
            (
                model_runs::study_id.eq(Some(run.study_id)),
                model_runs::provider.eq("import"),
                model_runs::model.eq(run.model),
                model_runs::instrument_id.eq(run.instrument_id),
                model_runs::situation_set_id.eq(run.situation_set_id),
                model_runs::template.eq("eb-code"),
                model_runs::params.eq(Json(None::<crate::domain::run::RunManifest>)),
                model_runs::selection.eq(&run.selection),
                model_runs::repeats.eq(run.repeats),
                model_runs::default_repeats.eq(run.default_repeats),
            ),
            (
                model_runs::seed.eq(0i64),
                model_runs::status.eq(RunStatus::Completed),
                model_runs::source.eq("import"),
                model_runs::created_at.eq(t),
                model_runs::updated_at.eq(t),
                model_runs::started_at.eq(Some(t)),
                model_runs::finished_at.eq(Some(t)),
            ),
        ))
        .returning(model_runs::id)
        .get_result::<RunId>(conn)?;
    for chunk in trials.chunks(500) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|tr| {
                let (status, scores, class, error) = match &tr.scores {
                    Ok(s) => (TrialStatus::Done, Some(s), None, None),
                    Err(e) => (
                        TrialStatus::Failed,
                        None,
                        Some(ErrorClass::Parse),
                        Some(e.as_str()),
                    ),
                };
                (
                    (
                        model_trials::run_id.eq(id),
                        model_trials::measure.eq(tr.measure),
                        model_trials::situation_id.eq(tr.situation_id),
                        model_trials::situation_key.eq(&tr.situation_key),
                        model_trials::repeat_index.eq(tr.repeat_index),
                        model_trials::status.eq(status),
                        model_trials::attempts.eq(1),
                        model_trials::item_order.eq(&tr.item_order),
                    ),
                    (
                        model_trials::request.eq(Some(&tr.request)),
                        model_trials::raw_reply.eq(Some(&tr.raw_reply)),
                        model_trials::scores.eq(scores),
                        model_trials::error_class.eq(class),
                        model_trials::error.eq(error),
                        model_trials::created_at.eq(t),
                        model_trials::updated_at.eq(t),
                        model_trials::finished_at.eq(Some::<NaiveDateTime>(t)),
                    ),
                )
            })
            .collect();
        let insert = diesel::insert_into(model_trials::table).values(rows);
        match conn {
            DbConnection::Postgresql(c) => insert.execute(c)?,
            DbConnection::Sqlite(c) => insert.execute(c)?,
        };
    }
    Ok(id)
}

/// Trial counts of a run: (measure, status, count).
pub fn trial_counts(
    conn: &mut DbConnection,
    run: RunId,
) -> QueryResult<Vec<(Measure, TrialStatus, i64)>> {
    model_trials::table
        .filter(model_trials::run_id.eq(run))
        .group_by((model_trials::measure, model_trials::status))
        .select((
            model_trials::measure,
            model_trials::status,
            diesel::dsl::count_star(),
        ))
        .order((model_trials::measure, model_trials::status))
        .load(conn)
}
