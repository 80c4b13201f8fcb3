//! The scoring job (#18): slot threads that claim queued answers (`store::text_scores`) with
//! leases, call the scorer within its limits, and record each score while the lease is held.
//! Transient errors (429 with Retry-After, 5xx, timeouts, broken connections) back off and try
//! again up to `max_attempts`; a refused key or a used-up quota returns the answer to the queue
//! and stops the job with the message. A worker killed mid-job leaves leased rows whose leases
//! expire; the next `score` claims them, so nothing is lost and nothing is scored twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::llm::runner::backoff;
use crate::store::text_scores::{self, Progress, ScoreJob};
use crate::store::{Pool, RunId, StoreError};

use super::Scorer;

/// How a scoring job runs.
#[derive(Debug, Clone)]
pub struct ScoreOptions {
    /// Written into the leases it takes; unique per process.
    pub owner: String,
    /// How long a claim holds without being renewed (renewed at every attempt).
    pub lease: Duration,
    pub slots: usize,
    /// Sleep between looks at the queue while others' leases are still running.
    pub idle_poll: Duration,
}

/// Why a scoring job stopped before its queue was empty.
#[derive(Debug, thiserror::Error)]
pub enum ScoreJobError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("scoring stopped: {0}")]
    Stopped(String),
}

/// Works the queue of `runs` for this scorer until nothing is pending or leased (or `stop`
/// is set: leased rows go back to the queue), and returns where it stands.
pub fn work(
    pool: &Pool,
    scorer: Arc<Scorer>,
    runs: &[RunId],
    opts: &ScoreOptions,
    stop: Arc<AtomicBool>,
) -> Result<Progress, ScoreJobError> {
    let fatal: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    std::thread::scope(|scope| {
        for _ in 0..opts.slots.max(1) {
            let slot = Slot {
                pool,
                scorer: &scorer,
                runs,
                opts,
                stop: &stop,
                fatal: &fatal,
            };
            scope.spawn(move || slot.run());
        }
    });
    if let Some(message) = fatal.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(ScoreJobError::Stopped(message));
    }
    let mut conn = pool.get().map_err(StoreError::from)?;
    Ok(text_scores::progress(&mut conn, runs, &scorer.config.name)?)
}

struct Slot<'a> {
    pool: &'a Pool,
    scorer: &'a Scorer,
    runs: &'a [RunId],
    opts: &'a ScoreOptions,
    stop: &'a AtomicBool,
    fatal: &'a std::sync::Mutex<Option<String>>,
}

impl Slot<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
            || self
                .fatal
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
    }

    fn run(&self) {
        let name = self.scorer.config.name.as_str();
        while !self.stopped() {
            let Some(permit) = self.scorer.limits().try_acquire(Duration::from_millis(200)) else {
                continue;
            };
            let claimed = self.pool.get().map_err(StoreError::from).and_then(|mut c| {
                text_scores::claim(&mut c, self.runs, name, &self.opts.owner, self.opts.lease)
            });
            match claimed {
                Ok(Some(job)) => {
                    if let Err(e) = self.score(&job) {
                        tracing::warn!(score = job.id.0, error = %e, "score not recorded");
                    }
                }
                Ok(None) => {
                    drop(permit);
                    // Nothing claimable: done, or rows leased by others (maybe a dead worker
                    // whose leases have yet to expire).
                    let left = self
                        .pool
                        .get()
                        .map_err(StoreError::from)
                        .and_then(|mut c| text_scores::progress(&mut c, self.runs, name));
                    match left {
                        Ok(p) if p.finished() => return,
                        Ok(_) => {
                            self.sleep(self.opts.idle_poll);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot read the scoring queue");
                            self.sleep(self.opts.idle_poll);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claim failed");
                    self.sleep(self.opts.idle_poll);
                }
            }
        }
    }

    /// Sleeps up to `d`, waking early on stop; false when stopped.
    fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        while Instant::now() < end {
            if self.stopped() {
                return false;
            }
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
        }
        !self.stopped()
    }

    /// One answer to its end: scored, failed, or back in the queue.
    fn score(&self, job: &ScoreJob) -> Result<(), StoreError> {
        let limits = self.scorer.limits();
        let config = &self.scorer.config;
        let owner = self.opts.owner.as_str();
        let mut transient = 0u32;
        let mut attempts = u32::try_from(job.attempts).unwrap_or(0);
        loop {
            let mut conn = self.pool.get()?;
            if self.stopped() || !self.sleep(limits.reserve(0)) {
                text_scores::release(&mut conn, job.id, owner, None)?;
                return Ok(());
            }
            if !text_scores::start_attempt(&mut conn, job.id, owner, self.opts.lease)? {
                return Ok(()); // the lease was lost: another worker has it now
            }
            drop(conn);
            attempts += 1;
            let result = self.scorer.score(&job.text);
            let mut conn = self.pool.get()?;
            let error = match result {
                Ok(r) => {
                    limits.on_success();
                    text_scores::finish(&mut conn, job.id, owner, &r)?;
                    return Ok(());
                }
                Err(e) => e,
            };
            // The answer's text is research data: the log names the row and the class only.
            tracing::debug!(
                score = job.id.0,
                class = error.class.as_str(),
                "scorer error"
            );
            if error.class.stops_the_run() {
                text_scores::release(&mut conn, job.id, owner, Some(&error.message))?;
                *self.fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.message);
                return Ok(());
            }
            if !error.is_transient() || attempts >= config.max_attempts {
                let message = format!("after {attempts} attempts: {}", error.message);
                text_scores::fail(&mut conn, job.id, owner, &message)?;
                return Ok(());
            }
            drop(conn);
            transient += 1;
            if error.class == crate::llm::client::ErrorClass::RateLimited {
                limits.on_rate_limited(error.retry_after);
            } else if let Some(d) = error.retry_after {
                limits.hold(d);
            }
            let delay = error
                .retry_after
                .unwrap_or_else(|| backoff(config.backoff_base_ms, transient));
            if !self.sleep(delay) {
                let mut conn = self.pool.get()?;
                text_scores::release(&mut conn, job.id, owner, None)?;
                return Ok(());
            }
        }
    }
}
