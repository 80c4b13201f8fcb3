//! Model runs and their trials: the durable queue that workers claim trials from.
//!
//! A trial is `pending` until a worker claims it with a lease (`leased`, `lease_owner`,
//! `lease_expires_at`); the worker records every attempt in `trial_attempts` and ends the
//! trial `done` (scores) or `failed` (error class). A lease that expires (the worker crashed)
//! makes the trial claimable again. Results are written only while the writer still holds the
//! lease, so a trial is done at most once, and a done trial is never claimed again.

use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamp};

use super::columns::{ItemOrder, Json, Scores, corrupt_row};
use super::schema::{model_providers, model_runs, model_trials, trial_attempts};
use super::{
    DbConnection, InstrumentId, RunId, SituationId, SituationSetId, StoreError, StudyId, TrialId,
    now,
};
use crate::config::ProviderConfig;
pub use crate::domain::distribution::Distributions;
use crate::domain::language::Lang;
pub use crate::domain::prompt::Measure;
pub use crate::domain::protocol::{Persona, Protocol};
pub use crate::domain::run::{ErrorClass, RunManifest, RunStatus, TrialMethod, TrialStatus};

/// The `model_runs.params` column.
pub type RunParamsColumn = Json<Option<RunManifest>>;

/// What a new run is; its trials come separately.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub study_id: Option<StudyId>,
    pub provider: String,
    pub model: String,
    pub instrument_id: InstrumentId,
    pub situation_set_id: Option<SituationSetId>,
    pub template: String,
    /// What was asked and what is sent (JSON).
    pub params: RunParamsColumn,
    /// JSON of the situation selection.
    pub selection: String,
    pub repeats: i32,
    pub default_repeats: i32,
    pub seed: i64,
    /// The language tag the run asks in (#20); `None`: the study's default.
    pub language: Option<String>,
}

/// One trial row to insert.
#[derive(Debug, Clone)]
pub struct NewTrial {
    pub measure: Measure,
    pub situation_id: Option<SituationId>,
    pub situation_key: String,
    pub repeat: i32,
    /// Display position -> item number.
    pub item_order: ItemOrder,
    /// The first questionnaire's order of a conversation (within-session, persona).
    pub before_order: Option<ItemOrder>,
    /// Who a persona trial answers as.
    pub persona: Option<Json<Persona>>,
}

#[derive(Debug, Clone, Queryable, Selectable, serde::Serialize)]
#[diesel(table_name = model_runs)]
pub struct Run {
    pub id: RunId,
    pub study_id: Option<StudyId>,
    pub provider: String,
    pub model: String,
    pub instrument_id: InstrumentId,
    pub situation_set_id: Option<SituationSetId>,
    pub template: String,
    /// `None` for an imported run: it sent no requests.
    pub params: RunParamsColumn,
    pub selection: String,
    pub repeats: i32,
    pub default_repeats: i32,
    pub seed: i64,
    pub status: RunStatus,
    pub source: String,
    pub error: Option<String>,
    pub created_at: NaiveDateTime,
    pub updated_at: NaiveDateTime,
    pub started_at: Option<NaiveDateTime>,
    pub finished_at: Option<NaiveDateTime>,
    /// The language tag the run asks in (#20); `None`: the study's default (runs made before
    /// languages, imported runs, runs that named none). Read it with [`Run::language`].
    pub language: Option<String>,
}

impl Run {
    /// The language the run asks in (`None`: its study's default); a stored text that is not
    /// a tag is [`StoreError::Corrupt`], never a default.
    pub fn language(&self) -> Result<Option<Lang>, StoreError> {
        self.language
            .as_deref()
            .map(|t| {
                Lang::parse(t).map_err(|detail| StoreError::Corrupt {
                    table: "model_runs",
                    row: self.id.to_string(),
                    column: model_runs::language::NAME.to_owned(),
                    detail,
                })
            })
            .transpose()
    }

    /// Whether workers may claim its trials.
    pub fn is_active(&self) -> bool {
        self.status.is_active()
    }

    /// How the run asked (#17): `paper` for runs made before protocols and imported runs.
    pub fn protocol(&self) -> Protocol {
        self.params
            .0
            .as_ref()
            .map(|m| m.requested.protocol)
            .unwrap_or_default()
    }
}

/// A trial as a worker needs it.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = model_trials)]
pub struct Trial {
    pub id: TrialId,
    pub run_id: RunId,
    pub measure: Measure,
    pub situation_id: Option<SituationId>,
    pub situation_key: String,
    pub repeat_index: i32,
    pub status: TrialStatus,
    pub attempts: i32,
    pub item_order: ItemOrder,
    /// Set for a conversation's trial: the order of its first questionnaire.
    pub before_order: Option<ItemOrder>,
    pub persona: Option<Json<Persona>>,
}

/// A trial with its outcome, for `runs show` and tests.
#[derive(Debug, Clone, Queryable, Selectable, serde::Serialize)]
#[diesel(table_name = model_trials)]
pub struct TrialRecord {
    pub id: TrialId,
    pub measure: Measure,
    pub situation_key: String,
    pub repeat_index: i32,
    pub status: TrialStatus,
    pub attempts: i32,
    pub item_order: ItemOrder,
    pub request: Option<String>,
    pub raw_reply: Option<String>,
    pub scores: Option<Scores>,
    pub error_class: Option<ErrorClass>,
    pub error: Option<String>,
    pub latency_ms: Option<i64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost_micros: Option<i64>,
    /// Why the last reply stopped, in the provider's own words.
    pub finish_reason: Option<String>,
    /// The snapshot that answered the last reply.
    pub model_version: Option<String>,
    /// How the scores were read (done trials of runs since #17).
    pub method: Option<TrialMethod>,
    /// Each item's answer distribution, when the run asked for log-probabilities.
    pub distributions: Option<Json<Distributions>>,
    /// The answer came from the response cache: no request was sent for it.
    pub cached: bool,
    /// A persona trial's profile (#17).
    pub persona: Option<Json<Persona>>,
    /// A conversation's first questionnaire: its order and its answers (canonical order).
    pub before_order: Option<ItemOrder>,
    pub before_scores: Option<Scores>,
}

/// One recorded attempt.
#[derive(Debug, Clone, Queryable, Selectable, serde::Serialize)]
#[diesel(table_name = trial_attempts)]
pub struct AttemptRecord {
    pub trial_id: TrialId,
    pub attempt: i32,
    pub raw_reply: Option<String>,
    pub http_status: Option<i32>,
    pub error_class: Option<ErrorClass>,
    pub error: Option<String>,
    pub latency_ms: Option<i64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub finished_at: Option<NaiveDateTime>,
}

/// Counts and totals of a run's trials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Progress {
    pub total: i64,
    pub pending: i64,
    pub leased: i64,
    pub done: i64,
    pub failed: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_micros: i64,
    /// Attempts whose reply did not parse.
    pub parse_failures: i64,
}

impl Progress {
    pub fn finished(&self) -> i64 {
        self.done + self.failed
    }
}

/// Stores a provider's configuration (never its key) so pages can list it; updates it when the
/// config file changed.
pub fn upsert_provider(conn: &mut DbConnection, p: &ProviderConfig) -> Result<(), StoreError> {
    let t = now();
    let micros = |v: Option<f64>| v.map(|x| (x * 1e6).round() as i64);
    let values = (
        model_providers::kind.eq(p.kind.as_str()),
        model_providers::base_url.eq(&p.base_url),
        model_providers::api_key_env.eq(&p.api_key_env),
        model_providers::concurrency.eq(i32::try_from(p.concurrency).unwrap_or(i32::MAX)),
        model_providers::requests_per_minute
            .eq(p.requests_per_minute.and_then(|v| i32::try_from(v).ok())),
        model_providers::tokens_per_minute
            .eq(p.tokens_per_minute.and_then(|v| i32::try_from(v).ok())),
        model_providers::price_input_micros.eq(micros(p.price_input_per_mtok)),
        model_providers::price_output_micros.eq(micros(p.price_output_per_mtok)),
        model_providers::updated_at.eq(t),
    );
    let existing = model_providers::table
        .filter(model_providers::name.eq(&p.name))
        .select(model_providers::id)
        .first::<i64>(conn)
        .optional()?;
    match existing {
        Some(id) => {
            diesel::update(model_providers::table.find(id))
                .set(values)
                .execute(conn)?;
        }
        None => {
            diesel::insert_into(model_providers::table)
                .values((
                    model_providers::name.eq(&p.name),
                    values,
                    model_providers::created_at.eq(t),
                ))
                .execute(conn)?;
        }
    }
    Ok(())
}

/// Creates a run and all its trials in one transaction.
pub fn create(
    conn: &mut DbConnection,
    run: &NewRun,
    trials: &[NewTrial],
) -> Result<RunId, StoreError> {
    conn.write_transaction(|conn| {
        let t = now();
        let id = diesel::insert_into(model_runs::table)
            .values((
                (
                    model_runs::study_id.eq(run.study_id),
                    model_runs::provider.eq(&run.provider),
                    model_runs::model.eq(&run.model),
                    model_runs::instrument_id.eq(run.instrument_id),
                    model_runs::situation_set_id.eq(run.situation_set_id),
                    model_runs::template.eq(&run.template),
                    model_runs::params.eq(&run.params),
                    model_runs::selection.eq(&run.selection),
                ),
                (
                    model_runs::repeats.eq(run.repeats),
                    model_runs::default_repeats.eq(run.default_repeats),
                    model_runs::seed.eq(run.seed),
                    model_runs::language.eq(&run.language),
                    model_runs::status.eq(RunStatus::Queued),
                    model_runs::source.eq("run"),
                    model_runs::created_at.eq(t),
                    model_runs::updated_at.eq(t),
                ),
            ))
            .returning(model_runs::id)
            .get_result::<RunId>(conn)?;
        // Chunks keep each statement under SQLite's bound-parameter limit.
        for chunk in trials.chunks(500) {
            let rows: Vec<_> = chunk
                .iter()
                .map(|tr| {
                    (
                        model_trials::run_id.eq(id),
                        model_trials::measure.eq(tr.measure),
                        model_trials::situation_id.eq(tr.situation_id),
                        model_trials::situation_key.eq(&tr.situation_key),
                        model_trials::repeat_index.eq(tr.repeat),
                        model_trials::status.eq(TrialStatus::Pending),
                        model_trials::item_order.eq(&tr.item_order),
                        model_trials::created_at.eq(t),
                        model_trials::updated_at.eq(t),
                        model_trials::before_order.eq(&tr.before_order),
                        model_trials::persona.eq(&tr.persona),
                    )
                })
                .collect();
            // Multi-row VALUES is per backend: MultiConnection has no batch insert.
            let insert = diesel::insert_into(model_trials::table).values(rows);
            match conn {
                DbConnection::Postgresql(c) => insert.execute(c)?,
                DbConnection::Sqlite(c) => insert.execute(c)?,
            };
        }
        Ok(id)
    })
}

pub fn get(conn: &mut DbConnection, id: RunId) -> QueryResult<Option<Run>> {
    model_runs::table
        .find(id)
        .select(Run::as_select())
        .first(conn)
        .optional()
        .map_err(corrupt_row("model_runs", id))
}

/// All runs, newest first.
pub fn list(conn: &mut DbConnection) -> QueryResult<Vec<Run>> {
    model_runs::table
        .order(model_runs::id.desc())
        .select(Run::as_select())
        .load(conn)
}

/// Runs whose trials may be claimed, oldest first.
pub fn active(conn: &mut DbConnection) -> QueryResult<Vec<Run>> {
    model_runs::table
        .filter(model_runs::status.eq_any([RunStatus::Queued, RunStatus::Running]))
        .order(model_runs::id)
        .select(Run::as_select())
        .load(conn)
}

pub fn progress(conn: &mut DbConnection, run: RunId) -> QueryResult<Progress> {
    // Summed in Rust: SUM(BIGINT) is NUMERIC on Postgres and INTEGER on SQLite.
    let rows = model_trials::table
        .filter(model_trials::run_id.eq(run))
        .select((
            model_trials::status,
            model_trials::input_tokens,
            model_trials::output_tokens,
            model_trials::cost_micros,
        ))
        .load::<(TrialStatus, Option<i64>, Option<i64>, Option<i64>)>(conn)
        .map_err(corrupt_row("model_trials", format!("of run {run}")))?;
    let mut p = Progress::default();
    for (st, input, output, cost) in rows {
        p.total += 1;
        match st {
            TrialStatus::Pending => p.pending += 1,
            TrialStatus::Leased => p.leased += 1,
            TrialStatus::Done => p.done += 1,
            TrialStatus::Failed => p.failed += 1,
        }
        p.input_tokens += input.unwrap_or(0);
        p.output_tokens += output.unwrap_or(0);
        p.cost_micros += cost.unwrap_or(0);
    }
    p.parse_failures = trial_attempts::table
        .inner_join(model_trials::table)
        .filter(model_trials::run_id.eq(run))
        .filter(trial_attempts::error_class.eq(ErrorClass::Parse))
        .count()
        .get_result(conn)?;
    Ok(p)
}

/// Why a status change was refused.
fn refuse(run: &Run, action: &str) -> StoreError {
    StoreError::Conflict(format!(
        "run {} is {}; it cannot be {action}",
        run.id, run.status
    ))
}

/// Pauses a queued or running run: no new trials are claimed; trials in flight finish.
pub fn pause(conn: &mut DbConnection, id: RunId) -> Result<Run, StoreError> {
    transition(
        conn,
        id,
        RunStatus::Paused.as_str(),
        &[RunStatus::Queued, RunStatus::Running],
        RunStatus::Paused,
    )
}

/// Cancels a run that has not finished: its pending trials stay pending and are never sent.
pub fn cancel(conn: &mut DbConnection, id: RunId) -> Result<Run, StoreError> {
    transition(
        conn,
        id,
        RunStatus::Cancelled.as_str(),
        &[
            RunStatus::Queued,
            RunStatus::Running,
            RunStatus::Paused,
            RunStatus::Failed,
        ],
        RunStatus::Cancelled,
    )
}

/// Queues a paused, cancelled or failed run again (after, say, fixing an API key); a completed
/// run whose trials are all finished stays completed.
pub fn resume(conn: &mut DbConnection, id: RunId) -> Result<Run, StoreError> {
    if let Some(run) = get(conn, id)? {
        if run.status == RunStatus::Completed {
            return Ok(run);
        }
    }
    transition(
        conn,
        id,
        "resumed",
        &[
            RunStatus::Paused,
            RunStatus::Cancelled,
            RunStatus::Failed,
            RunStatus::Queued,
            RunStatus::Running,
        ],
        RunStatus::Queued,
    )?;
    diesel::update(model_runs::table.find(id))
        .set(model_runs::error.eq(None::<String>))
        .execute(conn)?;
    complete_if_finished(conn, id)?;
    get(conn, id)?.ok_or_else(|| StoreError::Conflict(format!("no run {id}")))
}

fn transition(
    conn: &mut DbConnection,
    id: RunId,
    verb: &str,
    from: &[RunStatus],
    to: RunStatus,
) -> Result<Run, StoreError> {
    conn.write_transaction(|conn| {
        // Postgres: lock the row before reading it (SQLite holds the write lock already).
        if let DbConnection::Postgresql(c) = conn {
            model_runs::table
                .find(id)
                .select(model_runs::id)
                .for_update()
                .first::<i64>(c)
                .optional()?;
        }
        let run = get(conn, id)?.ok_or_else(|| StoreError::Conflict(format!("no run {id}")))?;
        if run.status == to && to != RunStatus::Queued {
            return Ok(run);
        }
        if !from.contains(&run.status) {
            return Err(refuse(&run, verb));
        }
        let t = now();
        diesel::update(model_runs::table.find(id))
            .set((model_runs::status.eq(to), model_runs::updated_at.eq(t)))
            .execute(conn)?;
        if to == RunStatus::Queued && run.status == RunStatus::Running {
            // Resuming a running run changes nothing.
            diesel::update(model_runs::table.find(id))
                .set(model_runs::status.eq(RunStatus::Running))
                .execute(conn)?;
        }
        get(conn, id)?.ok_or_else(|| StoreError::Conflict(format!("no run {id}")))
    })
}

/// What a run's trials have cost so far (micro-USD; trials without a price count 0).
pub fn spent_micros(conn: &mut DbConnection, run: RunId) -> QueryResult<i64> {
    // CAST: SUM(BIGINT) is NUMERIC on Postgres; one BIGINT on both backends.
    let sum = model_trials::table
        .filter(model_trials::run_id.eq(run))
        .select(diesel::dsl::sql::<diesel::sql_types::Nullable<BigInt>>(
            "CAST(SUM(cost_micros) AS BIGINT)",
        ))
        .first::<Option<i64>>(conn)?;
    Ok(sum.unwrap_or(0))
}

/// Pauses a queued or running run with the reason people see on `runs show` and the run page
/// (its budget reached); false when it was not active (already paused, cancelled, …).
pub fn pause_because(conn: &mut DbConnection, id: RunId, reason: &str) -> QueryResult<bool> {
    let n = diesel::update(
        model_runs::table
            .find(id)
            .filter(model_runs::status.eq_any([RunStatus::Queued, RunStatus::Running])),
    )
    .set((
        model_runs::status.eq(RunStatus::Paused),
        model_runs::error.eq(reason),
        model_runs::updated_at.eq(now()),
    ))
    .execute(conn)?;
    Ok(n > 0)
}

/// Sets a run's budget (`runs resume --max-cost`); a run without recorded parameters (an
/// imported one) has nothing to spend and is refused.
pub fn set_max_cost(conn: &mut DbConnection, id: RunId, micros: i64) -> Result<(), StoreError> {
    conn.write_transaction(|conn| {
        let run = get(conn, id)?.ok_or_else(|| StoreError::Conflict(format!("no run {id}")))?;
        let Some(mut manifest) = run.params.0 else {
            return Err(StoreError::Conflict(format!(
                "run {id} was imported: it sends no requests and has no budget"
            )));
        };
        manifest.requested.max_cost_micros = Some(micros);
        diesel::update(model_runs::table.find(id))
            .set((
                model_runs::params.eq(Json(Some(manifest))),
                model_runs::updated_at.eq(now()),
            ))
            .execute(conn)?;
        Ok(())
    })
}

/// Marks a run failed with a message people can act on (e.g. a rejected API key).
pub fn fail(conn: &mut DbConnection, id: RunId, message: &str) -> QueryResult<()> {
    let t = now();
    diesel::update(
        model_runs::table
            .find(id)
            .filter(model_runs::status.eq_any([RunStatus::Queued, RunStatus::Running])),
    )
    .set((
        model_runs::status.eq(RunStatus::Failed),
        model_runs::error.eq(message),
        model_runs::updated_at.eq(t),
        model_runs::finished_at.eq(t),
    ))
    .execute(conn)?;
    Ok(())
}

/// Marks the run completed when none of its trials is pending or leased.
pub fn complete_if_finished(conn: &mut DbConnection, id: RunId) -> QueryResult<bool> {
    let open: i64 = model_trials::table
        .filter(model_trials::run_id.eq(id))
        .filter(model_trials::status.eq_any([TrialStatus::Pending, TrialStatus::Leased]))
        .count()
        .get_result(conn)?;
    if open > 0 {
        return Ok(false);
    }
    let t = now();
    let n = diesel::update(
        model_runs::table
            .find(id)
            .filter(model_runs::status.eq_any([RunStatus::Queued, RunStatus::Running])),
    )
    .set((
        model_runs::status.eq(RunStatus::Completed),
        model_runs::updated_at.eq(t),
        model_runs::finished_at.eq(t),
    ))
    .execute(conn)?;
    Ok(n > 0)
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = BigInt)]
    id: TrialId,
}

fn lease_until(from: NaiveDateTime, lease: Duration) -> NaiveDateTime {
    from + chrono::Duration::milliseconds(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4))
}

/// Claims up to `n` trials of an active run for `owner` until `lease` from now: pending trials
/// and trials whose lease expired (their worker died). Postgres: `FOR UPDATE SKIP LOCKED`, so
/// workers on several machines never claim the same trial; SQLite: one atomic
/// `UPDATE … RETURNING` in an immediate (write-locked) transaction.
pub fn claim(
    conn: &mut DbConnection,
    run: RunId,
    owner: &str,
    n: i64,
    lease: Duration,
) -> Result<Vec<Trial>, StoreError> {
    let t = now();
    let until = lease_until(t, lease);
    let ids: Vec<TrialId> = match conn {
        DbConnection::Postgresql(c) => diesel::sql_query(
            "UPDATE model_trials SET status = $6, lease_owner = $1, lease_expires_at = $2, \
                 updated_at = $3, started_at = COALESCE(started_at, $3) \
             WHERE id IN ( \
                 SELECT id FROM model_trials \
                 WHERE run_id = $4 \
                   AND (status = $7 OR (status = $6 AND lease_expires_at < $3)) \
                   AND EXISTS (SELECT 1 FROM model_runs r WHERE r.id = $4 \
                               AND r.status IN ($8, $9)) \
                 ORDER BY id LIMIT $5 FOR UPDATE SKIP LOCKED) \
             RETURNING id",
        )
        .bind::<Text, _>(owner)
        .bind::<Timestamp, _>(until)
        .bind::<Timestamp, _>(t)
        .bind::<BigInt, _>(run)
        .bind::<BigInt, _>(n)
        .bind::<Text, _>(TrialStatus::Leased)
        .bind::<Text, _>(TrialStatus::Pending)
        .bind::<Text, _>(RunStatus::Queued)
        .bind::<Text, _>(RunStatus::Running)
        .load::<IdRow>(c)?
        .into_iter()
        .map(|r| r.id)
        .collect(),
        DbConnection::Sqlite(c) => c
            .immediate_transaction(|c| {
                diesel::sql_query(
                    "UPDATE model_trials SET status = ?1, lease_owner = ?2, \
                         lease_expires_at = ?3, updated_at = ?4, \
                         started_at = COALESCE(started_at, updated_at) \
                     WHERE id IN ( \
                         SELECT id FROM model_trials \
                         WHERE run_id = ?5 \
                           AND (status = ?6 OR (status = ?1 AND lease_expires_at < ?4)) \
                           AND EXISTS (SELECT 1 FROM model_runs r WHERE r.id = run_id \
                                       AND r.status IN (?7, ?8)) \
                         ORDER BY id LIMIT ?9) \
                     RETURNING id",
                )
                .bind::<Text, _>(TrialStatus::Leased)
                .bind::<Text, _>(owner)
                .bind::<Timestamp, _>(until)
                .bind::<Timestamp, _>(t)
                .bind::<BigInt, _>(run)
                .bind::<Text, _>(TrialStatus::Pending)
                .bind::<Text, _>(RunStatus::Queued)
                .bind::<Text, _>(RunStatus::Running)
                .bind::<BigInt, _>(n)
                .load::<IdRow>(c)
            })?
            .into_iter()
            .map(|r| r.id)
            .collect(),
    };
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // Attempts a dead worker left open will never finish: say so.
    diesel::update(
        trial_attempts::table
            .filter(trial_attempts::trial_id.eq_any(&ids))
            .filter(trial_attempts::finished_at.is_null()),
    )
    .set((
        trial_attempts::error_class.eq(ErrorClass::Abandoned),
        trial_attempts::error.eq("the worker stopped before the reply was recorded"),
        trial_attempts::finished_at.eq(t),
    ))
    .execute(conn)?;
    diesel::update(
        model_runs::table
            .find(run)
            .filter(model_runs::status.eq(RunStatus::Queued)),
    )
    .set((
        model_runs::status.eq(RunStatus::Running),
        model_runs::started_at.eq(t),
        model_runs::updated_at.eq(t),
    ))
    .execute(conn)?;
    Ok(model_trials::table
        .filter(model_trials::id.eq_any(&ids))
        .order(model_trials::id)
        .select(Trial::as_select())
        .load(conn)?)
}

/// Claims every claimable trial of an active run for `owner` (pending, or leased with an
/// expired lease), up to `max`: the trials of one provider batch. One plain UPDATE: on
/// Postgres a row another worker has just claimed is re-checked after its lock and skipped; a
/// `LIMIT … SKIP LOCKED` claim as [`claim`] makes was seen to return only part of the queue.
pub fn claim_all(
    conn: &mut DbConnection,
    run: RunId,
    owner: &str,
    max: usize,
    lease: Duration,
) -> Result<Vec<Trial>, StoreError> {
    conn.write_transaction(|conn| {
        let Some(r) = get(conn, run)? else {
            return Ok(Vec::new());
        };
        if !r.is_active() {
            return Ok(Vec::new());
        }
        let t = now();
        let claimable = model_trials::table
            .filter(model_trials::run_id.eq(run))
            .filter(
                model_trials::status
                    .eq(TrialStatus::Pending)
                    .or(model_trials::status
                        .eq(TrialStatus::Leased)
                        .and(model_trials::lease_expires_at.lt(t))),
            )
            .order(model_trials::id)
            .select(model_trials::id)
            .load::<TrialId>(conn)?;
        let mut ids = Vec::new();
        for chunk in claimable[..claimable.len().min(max)].chunks(500) {
            ids.extend(
                diesel::update(
                    model_trials::table
                        .filter(model_trials::id.eq_any(chunk))
                        .filter(
                            model_trials::status
                                .eq(TrialStatus::Pending)
                                .or(model_trials::status
                                    .eq(TrialStatus::Leased)
                                    .and(model_trials::lease_expires_at.lt(t))),
                        ),
                )
                .set((
                    model_trials::status.eq(TrialStatus::Leased),
                    model_trials::lease_owner.eq(owner),
                    model_trials::lease_expires_at.eq(lease_until(t, lease)),
                    model_trials::updated_at.eq(t),
                    model_trials::started_at.eq(t),
                ))
                .returning(model_trials::id)
                .get_results::<TrialId>(conn)?,
            );
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        diesel::update(
            model_runs::table
                .find(run)
                .filter(model_runs::status.eq(RunStatus::Queued)),
        )
        .set((
            model_runs::status.eq(RunStatus::Running),
            model_runs::started_at.eq(t),
            model_runs::updated_at.eq(t),
        ))
        .execute(conn)?;
        Ok(trials_by_id(conn, &ids)?)
    })
}

/// These trials, in id order (a batch's, when it is collected).
pub fn trials_by_id(conn: &mut DbConnection, ids: &[TrialId]) -> QueryResult<Vec<Trial>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        out.extend(
            model_trials::table
                .filter(model_trials::id.eq_any(chunk))
                .order(model_trials::id)
                .select(Trial::as_select())
                .load(conn)?,
        );
    }
    Ok(out)
}

/// The filter "this trial, still leased by this owner".
macro_rules! held {
    ($trial:expr, $owner:expr) => {
        model_trials::table
            .find($trial)
            .filter(model_trials::status.eq(TrialStatus::Leased))
            .filter(model_trials::lease_owner.eq($owner))
    };
}

/// Starts an attempt: extends the lease, counts the attempt, records the exact request.
/// None when the lease was lost (another worker has the trial now).
pub fn start_attempt(
    conn: &mut DbConnection,
    trial: TrialId,
    owner: &str,
    lease: Duration,
    request: &str,
) -> Result<Option<i32>, StoreError> {
    conn.write_transaction(|conn| {
        let t = now();
        let attempt = diesel::update(held!(trial, owner))
            .set((
                model_trials::attempts.eq(model_trials::attempts + 1),
                model_trials::lease_expires_at.eq(lease_until(t, lease)),
                model_trials::request.eq(request),
                model_trials::updated_at.eq(t),
            ))
            .returning(model_trials::attempts)
            .get_result::<i32>(conn)
            .optional()?;
        if let Some(attempt) = attempt {
            diesel::insert_into(trial_attempts::table)
                .values((
                    trial_attempts::trial_id.eq(trial),
                    trial_attempts::attempt.eq(attempt),
                    trial_attempts::request.eq(request),
                    trial_attempts::started_at.eq(t),
                ))
                .execute(conn)?;
        }
        Ok(attempt)
    })
}

/// Extends a lease (a long backoff should not let it expire). False when it was lost.
pub fn renew(
    conn: &mut DbConnection,
    trial: TrialId,
    owner: &str,
    lease: Duration,
) -> QueryResult<bool> {
    let t = now();
    let n = diesel::update(held!(trial, owner))
        .set(model_trials::lease_expires_at.eq(lease_until(t, lease)))
        .execute(conn)?;
    Ok(n > 0)
}

/// What came back for one attempt.
#[derive(Debug, Clone, Default)]
pub struct AttemptOutcome {
    pub raw_reply: Option<String>,
    pub http_status: Option<i32>,
    pub error_class: Option<ErrorClass>,
    pub error: Option<String>,
    pub latency_ms: Option<i64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
}

pub fn finish_attempt(
    conn: &mut DbConnection,
    trial: TrialId,
    attempt: i32,
    o: &AttemptOutcome,
) -> QueryResult<()> {
    diesel::update(
        trial_attempts::table
            .filter(trial_attempts::trial_id.eq(trial))
            .filter(trial_attempts::attempt.eq(attempt)),
    )
    .set((
        trial_attempts::raw_reply.eq(&o.raw_reply),
        trial_attempts::http_status.eq(o.http_status),
        trial_attempts::error_class.eq(&o.error_class),
        trial_attempts::error.eq(&o.error),
        trial_attempts::latency_ms.eq(o.latency_ms),
        trial_attempts::input_tokens.eq(o.input_tokens),
        trial_attempts::output_tokens.eq(o.output_tokens),
        trial_attempts::finished_at.eq(now()),
    ))
    .execute(conn)?;
    Ok(())
}

/// How a trial ended.
#[derive(Debug, Clone)]
pub struct TrialOutcome {
    pub done: bool,
    pub raw_reply: Option<String>,
    /// JSON item scores in canonical order (done trials).
    pub scores: Option<String>,
    pub error_class: Option<ErrorClass>,
    pub error: Option<String>,
    pub latency_ms: Option<i64>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost_micros: Option<i64>,
    pub finish_reason: Option<String>,
    pub model_version: Option<String>,
    pub method: Option<TrialMethod>,
    pub distributions: Option<Json<Distributions>>,
    pub cached: bool,
    /// JSON scores of a conversation's first questionnaire.
    pub before_scores: Option<String>,
}

/// Ends a trial if this owner still holds it; false means the result was discarded because
/// the lease had been lost. Completes the run when this was its last open trial.
pub fn finish_trial(
    conn: &mut DbConnection,
    run: RunId,
    trial: TrialId,
    owner: &str,
    o: &TrialOutcome,
) -> QueryResult<bool> {
    let t = now();
    let n = diesel::update(held!(trial, owner))
        .set((
            (
                model_trials::status.eq(if o.done {
                    TrialStatus::Done
                } else {
                    TrialStatus::Failed
                }),
                model_trials::lease_owner.eq(None::<String>),
                model_trials::lease_expires_at.eq(None::<NaiveDateTime>),
                model_trials::raw_reply.eq(&o.raw_reply),
                model_trials::scores.eq(&o.scores),
                model_trials::error_class.eq(&o.error_class),
                model_trials::error.eq(&o.error),
            ),
            (
                model_trials::latency_ms.eq(o.latency_ms),
                model_trials::input_tokens.eq(o.input_tokens),
                model_trials::output_tokens.eq(o.output_tokens),
                model_trials::cost_micros.eq(o.cost_micros),
                model_trials::updated_at.eq(t),
                model_trials::finished_at.eq(t),
            ),
            (
                model_trials::finish_reason.eq(&o.finish_reason),
                model_trials::model_version.eq(&o.model_version),
                model_trials::method.eq(o.method),
                model_trials::distributions.eq(&o.distributions),
                model_trials::cached.eq(o.cached),
                model_trials::before_scores.eq(&o.before_scores),
            ),
        ))
        .execute(conn)?;
    if n > 0 {
        complete_if_finished(conn, run)?;
    }
    Ok(n > 0)
}

/// Puts a trial back in the queue (the worker is stopping, or the run failed for a reason that
/// is not the trial's, such as a rejected key), keeping what the last attempt said.
pub fn release(
    conn: &mut DbConnection,
    trial: TrialId,
    owner: &str,
    error: Option<(ErrorClass, &str)>,
) -> QueryResult<bool> {
    let t = now();
    let n = diesel::update(held!(trial, owner))
        .set((
            model_trials::status.eq(TrialStatus::Pending),
            model_trials::lease_owner.eq(None::<String>),
            model_trials::lease_expires_at.eq(None::<NaiveDateTime>),
            model_trials::updated_at.eq(t),
        ))
        .execute(conn)?;
    if let Some((class, message)) = error {
        diesel::update(model_trials::table.find(trial))
            .set((
                model_trials::error_class.eq(class),
                model_trials::error.eq(message),
            ))
            .execute(conn)?;
    }
    Ok(n > 0)
}

/// Returns every trial this owner holds to the queue; marks its open attempts interrupted.
pub fn release_all(conn: &mut DbConnection, owner: &str) -> QueryResult<usize> {
    let t = now();
    let held: Vec<TrialId> = model_trials::table
        .filter(model_trials::status.eq(TrialStatus::Leased))
        .filter(model_trials::lease_owner.eq(owner))
        .select(model_trials::id)
        .load(conn)?;
    diesel::update(
        trial_attempts::table
            .filter(trial_attempts::trial_id.eq_any(&held))
            .filter(trial_attempts::finished_at.is_null()),
    )
    .set((
        trial_attempts::error_class.eq(ErrorClass::Interrupted),
        trial_attempts::error.eq("the worker was stopped before the reply arrived"),
        trial_attempts::finished_at.eq(t),
    ))
    .execute(conn)?;
    diesel::update(
        model_trials::table
            .filter(model_trials::id.eq_any(&held))
            .filter(model_trials::status.eq(TrialStatus::Leased))
            .filter(model_trials::lease_owner.eq(owner)),
    )
    .set((
        model_trials::status.eq(TrialStatus::Pending),
        model_trials::lease_owner.eq(None::<String>),
        model_trials::lease_expires_at.eq(None::<NaiveDateTime>),
        model_trials::updated_at.eq(t),
    ))
    .execute(conn)
}

/// The trials of a run in creation order.
pub fn trials(conn: &mut DbConnection, run: RunId) -> QueryResult<Vec<TrialRecord>> {
    model_trials::table
        .filter(model_trials::run_id.eq(run))
        .order(model_trials::id)
        .select(TrialRecord::as_select())
        .load(conn)
        .map_err(corrupt_row("model_trials", format!("of run {run}")))
}

/// The attempts of a run's trials, by trial and attempt.
pub fn attempts(conn: &mut DbConnection, run: RunId) -> QueryResult<Vec<AttemptRecord>> {
    trial_attempts::table
        .inner_join(model_trials::table)
        .filter(model_trials::run_id.eq(run))
        .order((trial_attempts::trial_id, trial_attempts::attempt))
        .select(AttemptRecord::as_select())
        .load(conn)
}

/// The latest finished trials of a run (done or failed), newest first, for the run page.
pub fn latest(conn: &mut DbConnection, run: RunId, limit: i64) -> QueryResult<Vec<TrialRecord>> {
    model_trials::table
        .filter(model_trials::run_id.eq(run))
        .filter(model_trials::status.eq_any([TrialStatus::Done, TrialStatus::Failed]))
        .order(model_trials::finished_at.desc())
        .limit(limit)
        .select(TrialRecord::as_select())
        .load(conn)
        .map_err(corrupt_row("model_trials", format!("of run {run}")))
}
