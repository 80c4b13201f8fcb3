//! Scores of free-text trials (#18): one row per trial and scorer, worked as a queue with the
//! trials' own states (pending → leased → done | failed; `TrialStatus`, so one SQL mapping
//! serves both) and leases: a scoring worker that dies leaves leased rows whose leases expire
//! and return them to the queue; a score is written only while its lease is held, so an
//! answer is scored at most once per scorer.

use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::columns::ItemOrder;
use super::schema::{model_trials, text_scores};
use super::{DbConnection, RunId, StoreError, TextScoreId, TrialId, now};
use crate::domain::prompt::Measure;
use crate::domain::run::TrialStatus;

/// Scores are stored as millionths (the schema has no float type both backends share).
const PPM: f64 = 1_000_000.0;

fn lease_until(from: NaiveDateTime, lease: Duration) -> NaiveDateTime {
    from + chrono::Duration::milliseconds(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4))
}

/// Queues every done trial of `run` that has no row for `scorer` yet; returns how many were
/// queued (0 when all are queued or scored already: a repeated `score` resumes, never
/// duplicates).
pub fn enqueue(conn: &mut DbConnection, run: RunId, scorer: &str) -> Result<usize, StoreError> {
    conn.write_transaction(|conn| {
        let scored = text_scores::table
            .filter(text_scores::scorer.eq(scorer))
            .select(text_scores::trial_id);
        let ids: Vec<TrialId> = model_trials::table
            .filter(model_trials::run_id.eq(run))
            .filter(model_trials::status.eq(TrialStatus::Done))
            .filter(model_trials::raw_reply.is_not_null())
            .filter(model_trials::id.ne_all(scored))
            .order(model_trials::id)
            .select(model_trials::id)
            .load(conn)?;
        let t = now();
        for chunk in ids.chunks(200) {
            let rows: Vec<_> = chunk
                .iter()
                .map(|id| {
                    (
                        text_scores::trial_id.eq(*id),
                        text_scores::scorer.eq(scorer),
                        text_scores::status.eq(TrialStatus::Pending),
                        text_scores::attempts.eq(0),
                        text_scores::created_at.eq(t),
                        text_scores::updated_at.eq(t),
                    )
                })
                .collect();
            for row in rows {
                // One row at a time: multi-row INSERT differs between the backends here.
                diesel::insert_into(text_scores::table)
                    .values(row)
                    .execute(conn)?;
            }
        }
        Ok(ids.len())
    })
}

/// The filter "pending, or leased with the lease expired at `t`".
macro_rules! claimable {
    ($t:expr) => {
        text_scores::status
            .eq(TrialStatus::Pending)
            .or(text_scores::status
                .eq(TrialStatus::Leased)
                .and(text_scores::lease_expires_at.lt($t)))
    };
}

/// One answer to score.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreJob {
    pub id: TextScoreId,
    pub trial_id: TrialId,
    /// The model's answer.
    pub text: String,
    pub attempts: i32,
}

/// Claims the next answer of these runs for `scorer`: a pending row or one whose lease
/// expired. Two workers that pick the same row both try the conditional UPDATE; one wins and
/// the other finds nothing this time (and looks again).
pub fn claim(
    conn: &mut DbConnection,
    runs: &[RunId],
    scorer: &str,
    owner: &str,
    lease: Duration,
) -> Result<Option<ScoreJob>, StoreError> {
    conn.write_transaction(|conn| {
        let t = now();
        let found: Option<(TextScoreId, TrialId, Option<String>, i32)> = text_scores::table
            .inner_join(model_trials::table)
            .filter(model_trials::run_id.eq_any(runs))
            .filter(text_scores::scorer.eq(scorer))
            .filter(claimable!(t))
            .order(text_scores::id)
            .select((
                text_scores::id,
                text_scores::trial_id,
                model_trials::raw_reply,
                text_scores::attempts,
            ))
            .first(conn)
            .optional()?;
        let Some((id, trial_id, text, attempts)) = found else {
            return Ok(None);
        };
        let moved = diesel::update(text_scores::table.find(id).filter(claimable!(t)))
            .set((
                text_scores::status.eq(TrialStatus::Leased),
                text_scores::lease_owner.eq(owner),
                text_scores::lease_expires_at.eq(lease_until(t, lease)),
                text_scores::updated_at.eq(t),
            ))
            .execute(conn)?;
        if moved == 0 {
            return Ok(None);
        }
        let text = text.ok_or(StoreError::Corrupt {
            table: "model_trials",
            row: trial_id.to_string(),
            column: "raw_reply".into(),
            detail: "a queued free-text trial has no answer".into(),
        })?;
        Ok(Some(ScoreJob {
            id,
            trial_id,
            text,
            attempts,
        }))
    })
}

/// The filter "this row, still leased by this owner".
macro_rules! held {
    ($id:expr, $owner:expr) => {
        text_scores::table
            .find($id)
            .filter(text_scores::status.eq(TrialStatus::Leased))
            .filter(text_scores::lease_owner.eq($owner))
    };
}

/// Counts one more attempt and renews the lease; false when the lease was lost.
pub fn start_attempt(
    conn: &mut DbConnection,
    id: TextScoreId,
    owner: &str,
    lease: Duration,
) -> Result<bool, StoreError> {
    let t = now();
    let n = diesel::update(held!(id, owner))
        .set((
            text_scores::attempts.eq(text_scores::attempts + 1),
            text_scores::lease_expires_at.eq(lease_until(t, lease)),
            text_scores::updated_at.eq(t),
        ))
        .execute(conn)?;
    Ok(n == 1)
}

/// What a scorer said about one answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreResult {
    /// In [0, 1].
    pub score: f64,
    /// The scorer's own version (model name and version, or the rubric's).
    pub version: String,
    pub reason: Option<String>,
}

/// Records the score, only while the lease is held; false when it was lost (another worker
/// has the row now and will score it).
pub fn finish(
    conn: &mut DbConnection,
    id: TextScoreId,
    owner: &str,
    result: &ScoreResult,
) -> Result<bool, StoreError> {
    let t = now();
    let ppm = (result.score.clamp(0.0, 1.0) * PPM).round() as i64;
    let n = diesel::update(held!(id, owner))
        .set((
            text_scores::status.eq(TrialStatus::Done),
            text_scores::score_ppm.eq(ppm),
            text_scores::scorer_version.eq(&result.version),
            text_scores::reason.eq(&result.reason),
            text_scores::error.eq(None::<String>),
            text_scores::lease_owner.eq(None::<String>),
            text_scores::lease_expires_at.eq(None::<NaiveDateTime>),
            text_scores::scored_at.eq(t),
            text_scores::updated_at.eq(t),
        ))
        .execute(conn)?;
    Ok(n == 1)
}

/// Ends the row as failed with the reason (a permanent error, or attempts used up).
pub fn fail(
    conn: &mut DbConnection,
    id: TextScoreId,
    owner: &str,
    error: &str,
) -> Result<bool, StoreError> {
    unlease(conn, id, owner, TrialStatus::Failed, Some(error))
}

/// Returns the row to the queue (the worker stops; a key was refused), keeping why.
pub fn release(
    conn: &mut DbConnection,
    id: TextScoreId,
    owner: &str,
    error: Option<&str>,
) -> Result<bool, StoreError> {
    unlease(conn, id, owner, TrialStatus::Pending, error)
}

/// Gives up `owner`'s lease on the row, leaving it in `status` with `error`; false when the
/// lease was no longer `owner`'s (it ran out and another worker took the row).
fn unlease(
    conn: &mut DbConnection,
    id: TextScoreId,
    owner: &str,
    status: TrialStatus,
    error: Option<&str>,
) -> Result<bool, StoreError> {
    let t = now();
    let n = diesel::update(held!(id, owner))
        .set((
            text_scores::status.eq(status),
            text_scores::error.eq(error),
            text_scores::lease_owner.eq(None::<String>),
            text_scores::lease_expires_at.eq(None::<NaiveDateTime>),
            text_scores::updated_at.eq(t),
        ))
        .execute(conn)?;
    Ok(n == 1)
}

/// Rows of these runs for one scorer, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Progress {
    pub pending: usize,
    pub leased: usize,
    pub done: usize,
    pub failed: usize,
}

impl Progress {
    /// Nothing left to claim or in flight.
    pub fn finished(&self) -> bool {
        self.pending == 0 && self.leased == 0
    }
}

pub fn progress(
    conn: &mut DbConnection,
    runs: &[RunId],
    scorer: &str,
) -> Result<Progress, StoreError> {
    let states: Vec<TrialStatus> = text_scores::table
        .inner_join(model_trials::table)
        .filter(model_trials::run_id.eq_any(runs))
        .filter(text_scores::scorer.eq(scorer))
        .select(text_scores::status)
        .load(conn)?;
    let mut p = Progress::default();
    for s in states {
        match s {
            TrialStatus::Pending => p.pending += 1,
            TrialStatus::Leased => p.leased += 1,
            TrialStatus::Done => p.done += 1,
            TrialStatus::Failed => p.failed += 1,
        }
    }
    Ok(p)
}

/// One stored score with its answer, for the report and tests.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredScore {
    pub id: TextScoreId,
    pub trial_id: TrialId,
    pub run_id: RunId,
    pub measure: Measure,
    pub situation_key: String,
    /// `[target]`: the item the trial asked about.
    pub item_order: ItemOrder,
    pub text: Option<String>,
    pub scorer: String,
    pub status: TrialStatus,
    pub attempts: i32,
    pub scorer_version: Option<String>,
    /// In [0, 1].
    pub score: Option<f64>,
    pub reason: Option<String>,
    pub error: Option<String>,
}

type Row = (
    TextScoreId,
    TrialId,
    RunId,
    Measure,
    String,
    ItemOrder,
    Option<String>,
    String,
    TrialStatus,
    i32,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
);

/// Every row of these runs for `scorer`, by trial.
pub fn of_runs(
    conn: &mut DbConnection,
    runs: &[RunId],
    scorer: &str,
) -> Result<Vec<StoredScore>, StoreError> {
    let rows: Vec<Row> = text_scores::table
        .inner_join(model_trials::table)
        .filter(model_trials::run_id.eq_any(runs))
        .filter(text_scores::scorer.eq(scorer))
        .order(model_trials::id)
        .select((
            text_scores::id,
            text_scores::trial_id,
            model_trials::run_id,
            model_trials::measure,
            model_trials::situation_key,
            model_trials::item_order,
            model_trials::raw_reply,
            text_scores::scorer,
            text_scores::status,
            text_scores::attempts,
            text_scores::scorer_version,
            text_scores::score_ppm,
            text_scores::reason,
            text_scores::error,
        ))
        .load(conn)?;
    rows.into_iter()
        .map(|r| {
            let score = match (r.8, r.11) {
                (TrialStatus::Done, Some(p)) if (0..=1_000_000).contains(&p) => {
                    Some(p as f64 / PPM)
                }
                (TrialStatus::Done, _) => {
                    return Err(StoreError::Corrupt {
                        table: "text_scores",
                        row: r.0.to_string(),
                        column: "score_ppm".into(),
                        detail: format!("a done score must be in 0..=1000000, found {:?}", r.11),
                    });
                }
                (_, _) => None,
            };
            Ok(StoredScore {
                id: r.0,
                trial_id: r.1,
                run_id: r.2,
                measure: r.3,
                situation_key: r.4,
                item_order: r.5,
                text: r.6,
                scorer: r.7,
                status: r.8,
                attempts: r.9,
                scorer_version: r.10,
                score,
                reason: r.12,
                error: r.13,
            })
        })
        .collect()
}
