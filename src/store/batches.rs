//! Provider batches of a run (`run_batches`, #17): the batch id is written as soon as the
//! provider has created it, with the trials it carries, so that a worker that dies while the
//! provider works on it is replaced by one that collects the same batch. A collector holds the
//! row with a lease, as trials are held, so that two workers never collect one batch together.

use std::time::Duration;

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::schema::{model_trials, run_batches};
use super::{DbConnection, RunId, StoreError, TrialId, now};
use crate::domain::run::TrialStatus;

/// A batch as stored.
#[derive(Debug, Clone, Queryable, Selectable, serde::Serialize)]
#[diesel(table_name = run_batches)]
pub struct Batch {
    pub id: i64,
    pub run_id: RunId,
    pub provider_batch_id: String,
    pub input_file_id: Option<String>,
    pub status: String,
    pub trials: String,
    pub error: Option<String>,
    pub created_at: NaiveDateTime,
    pub finished_at: Option<NaiveDateTime>,
}

impl Batch {
    /// The trial ids it carries; stored text that does not decode is an error, not an empty
    /// batch (its trials would never be collected).
    pub fn trial_ids(&self) -> Result<Vec<TrialId>, StoreError> {
        serde_json::from_str::<Vec<i64>>(&self.trials)
            .map(|v| v.into_iter().map(TrialId).collect())
            .map_err(|e| StoreError::Corrupt {
                table: "run_batches",
                row: self.id.to_string(),
                column: "trials".into(),
                detail: e.to_string(),
            })
    }
}

pub const SUBMITTED: &str = "submitted";
pub const COLLECTED: &str = "collected";
pub const FAILED: &str = "failed";

/// Records a batch the provider has just created.
pub fn insert(
    conn: &mut DbConnection,
    run: RunId,
    provider_batch_id: &str,
    input_file_id: Option<&str>,
    trials: &[TrialId],
) -> QueryResult<i64> {
    let ids: Vec<i64> = trials.iter().map(|t| t.0).collect();
    diesel::insert_into(run_batches::table)
        .values((
            run_batches::run_id.eq(run),
            run_batches::provider_batch_id.eq(provider_batch_id),
            run_batches::input_file_id.eq(input_file_id),
            run_batches::status.eq(SUBMITTED),
            run_batches::trials.eq(serde_json::Value::from(ids).to_string()),
            run_batches::created_at.eq(now()),
        ))
        .returning(run_batches::id)
        .get_result(conn)
}

/// The run's batches not yet collected, oldest first.
pub fn open(conn: &mut DbConnection, run: RunId) -> QueryResult<Vec<Batch>> {
    run_batches::table
        .filter(run_batches::run_id.eq(run))
        .filter(run_batches::status.eq(SUBMITTED))
        .order(run_batches::id)
        .select(Batch::as_select())
        .load(conn)
}

/// Every batch of a run, oldest first.
pub fn of_run(conn: &mut DbConnection, run: RunId) -> QueryResult<Vec<Batch>> {
    run_batches::table
        .filter(run_batches::run_id.eq(run))
        .order(run_batches::id)
        .select(Batch::as_select())
        .load(conn)
}

/// Takes the batch for `owner` until `lease` from now (to poll and collect it): false when
/// another worker holds it.
pub fn hold(conn: &mut DbConnection, id: i64, owner: &str, lease: Duration) -> QueryResult<bool> {
    let t = now();
    let until = t + chrono::Duration::milliseconds(
        i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4),
    );
    let n = diesel::update(
        run_batches::table
            .find(id)
            .filter(run_batches::status.eq(SUBMITTED))
            .filter(
                run_batches::lease_owner
                    .is_null()
                    .or(run_batches::lease_owner.eq(owner))
                    .or(run_batches::lease_expires_at.lt(t)),
            ),
    )
    .set((
        run_batches::lease_owner.eq(owner),
        run_batches::lease_expires_at.eq(until),
    ))
    .execute(conn)?;
    Ok(n > 0)
}

/// Moves the leases of a batch's unfinished trials to `owner` (the worker that collects it may
/// not be the one that submitted it).
pub fn take_over_trials(
    conn: &mut DbConnection,
    trials: &[TrialId],
    owner: &str,
    lease: Duration,
) -> QueryResult<usize> {
    let t = now();
    let until = t + chrono::Duration::milliseconds(
        i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4),
    );
    let mut n = 0;
    for chunk in trials.chunks(500) {
        n += diesel::update(
            model_trials::table
                .filter(model_trials::id.eq_any(chunk))
                .filter(model_trials::status.eq_any([TrialStatus::Leased, TrialStatus::Pending])),
        )
        .set((
            model_trials::status.eq(TrialStatus::Leased),
            model_trials::lease_owner.eq(owner),
            model_trials::lease_expires_at.eq(until),
            model_trials::updated_at.eq(t),
        ))
        .execute(conn)?;
    }
    Ok(n)
}

/// Ends a batch: collected, or failed with the provider's reason.
pub fn finish(conn: &mut DbConnection, id: i64, error: Option<&str>) -> QueryResult<()> {
    diesel::update(run_batches::table.find(id))
        .set((
            run_batches::status.eq(if error.is_some() { FAILED } else { COLLECTED }),
            run_batches::error.eq(error),
            run_batches::finished_at.eq(now()),
            run_batches::lease_owner.eq(None::<String>),
        ))
        .execute(conn)?;
    Ok(())
}
