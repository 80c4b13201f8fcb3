//! A run sent through the provider's batch API (#17): one slot at a time claims the run's
//! pending trials, sends them as one batch and stores its id (`store::batches`); later turns
//! poll it every `batch_poll` and, once it has ended, record each line as the synchronous path
//! records a reply. A worker that died while the batch was open leaves the row behind: the
//! next worker re-attaches to the same batch, takes over its trials' leases and collects it,
//! sending nothing again. Lines that did not read go back to the queue for a follow-up batch
//! until `max_parse_attempts`; lines the provider did not process, until `max_attempts`.

use std::collections::HashMap;

use super::*;
use crate::llm::batch::{self as api, BatchState, LineResult};
use crate::llm::client::{classify_status, read_error_body};
use crate::store::batches::{self, Batch};
use crate::store::runs::TrialStatus;

/// At most this many trials per batch (OpenAI takes 50,000 requests per file, Anthropic
/// 100,000 per batch: <https://platform.openai.com/docs/guides/batch>,
/// <https://docs.anthropic.com/en/docs/build-with-claude/batch-processing>).
const MAX_BATCH: usize = 50_000;

impl Worker {
    /// One slot's turn on a batch run: true when it submitted or collected something.
    pub(super) fn batch_turn(&self, ctx: &RunContext) -> Result<bool, RunnerError> {
        // One slot at a time: the others go on to other runs.
        let Ok(mut polled) = ctx.batch_polled.try_lock() else {
            return Ok(false);
        };
        let run = ctx.run.id;
        let open = batches::open(&mut *self.conn()?, run)?;
        let Some(b) = open.first() else {
            return self.submit(ctx);
        };
        if polled.is_some_and(|at| at.elapsed() < self.opts.batch_poll) {
            return Ok(false);
        }
        *polled = Some(Instant::now());
        self.poll(ctx, b)
    }

    /// Claims the run's pending trials and sends them as one batch.
    fn submit(&self, ctx: &RunContext) -> Result<bool, RunnerError> {
        let owner = self.opts.owner.as_str();
        let lease = self.opts.lease;
        let run = ctx.run.id;
        let trials = runs::claim_all(&mut *self.conn()?, run, owner, MAX_BATCH, lease)?;
        if trials.is_empty() {
            return Ok(false);
        }
        let mut lines: Vec<(String, String)> = Vec::with_capacity(trials.len());
        let mut sent = Vec::with_capacity(trials.len());
        for t in &trials {
            let body = match prepare(ctx, t) {
                Ok(p) => p.body,
                Err(message) => {
                    self.fail_trial(ctx, t.id, ErrorClass::Prompt, message)?;
                    continue;
                }
            };
            if runs::start_attempt(&mut *self.conn()?, t.id, owner, lease, &body)?.is_some() {
                lines.push((api::custom_id(t.id.0), body));
                sent.push(t.id);
            }
        }
        if lines.is_empty() {
            return Ok(true);
        }
        let borrowed: Vec<(String, &str)> = lines
            .iter()
            .map(|(id, b)| (id.clone(), b.as_str()))
            .collect();
        match ctx.provider.submit_batch(&borrowed) {
            Ok(s) => {
                // Stored at once: from here a restarted worker collects this batch.
                batches::insert(
                    &mut *self.conn()?,
                    run,
                    &s.batch_id,
                    s.input_file_id.as_deref(),
                    &sent,
                )?;
                tracing::info!(run = run.0, batch = %s.batch_id, trials = sent.len(), "batch submitted");
            }
            Err(e) => {
                let mut conn = self.conn()?;
                for id in &sent {
                    let attempt = runs::trials_by_id(&mut conn, &[*id])?
                        .first()
                        .map_or(0, |t| t.attempts);
                    runs::finish_attempt(&mut conn, *id, attempt, &failed_attempt(&e))?;
                    runs::release(&mut conn, *id, owner, Some((e.class, &e.message)))?;
                }
                if e.class.stops_the_run() || !e.is_transient() {
                    runs::fail(&mut conn, run, &e.message)?;
                }
                tracing::warn!(run = run.0, error = %e, "batch not submitted");
            }
        }
        Ok(true)
    }

    /// Asks where the batch stands and collects it once it has ended.
    fn poll(&self, ctx: &RunContext, b: &Batch) -> Result<bool, RunnerError> {
        let owner = self.opts.owner.as_str();
        let run = ctx.run.id;
        if !batches::hold(&mut *self.conn()?, b.id, owner, self.opts.lease)? {
            return Ok(false);
        }
        let state = ctx
            .provider
            .batch_state(&b.provider_batch_id)
            .and_then(|s| match s {
                BatchState::Ended(locations) => ctx.provider.batch_results(&locations).map(Ok),
                other => Ok(Err(other)),
            });
        match state {
            Ok(Ok(lines)) => {
                self.collect(ctx, b, lines)?;
                Ok(true)
            }
            Ok(Err(BatchState::Failed(message))) => {
                let message = format!("batch {}: {message}", b.provider_batch_id);
                let mut conn = self.conn()?;
                let ids = b.trial_ids()?;
                batches::take_over_trials(&mut conn, &ids, owner, self.opts.lease)?;
                for id in &ids {
                    runs::release(
                        &mut conn,
                        *id,
                        owner,
                        Some((ErrorClass::BadRequest, &message)),
                    )?;
                }
                batches::finish(&mut conn, b.id, Some(&message))?;
                runs::fail(&mut conn, run, &message)?;
                Ok(true)
            }
            Ok(Err(_working)) => Ok(false),
            Err(e) => {
                tracing::warn!(run = run.0, batch = %b.provider_batch_id, error = %e, "batch not polled");
                if e.class.stops_the_run() {
                    runs::fail(&mut *self.conn()?, run, &e.message)?;
                }
                Ok(false)
            }
        }
    }

    /// Records every line of an ended batch; trials without a line go back to the queue.
    fn collect(
        &self,
        ctx: &RunContext,
        b: &Batch,
        lines: Vec<LineResult>,
    ) -> Result<(), RunnerError> {
        let owner = self.opts.owner.as_str();
        let ids = b.trial_ids()?;
        let mut conn = self.conn()?;
        batches::take_over_trials(&mut conn, &ids, owner, self.opts.lease)?;
        let trials = runs::trials_by_id(&mut conn, &ids)?;
        drop(conn);
        let mut by_trial: HashMap<i64, LineResult> = lines
            .into_iter()
            .filter_map(|l| Some((api::trial_of(&l.custom_id)?, l)))
            .collect();
        let turnaround = (now_utc() - b.created_at).num_milliseconds().max(0);
        for t in trials.iter().filter(|t| t.status == TrialStatus::Leased) {
            let line = by_trial.remove(&t.id.0);
            self.record_line(ctx, t, line, turnaround)?;
        }
        let mut conn = self.conn()?;
        batches::finish(&mut conn, b.id, None)?;
        runs::complete_if_finished(&mut conn, ctx.run.id)?;
        tracing::info!(run = ctx.run.id.0, batch = %b.provider_batch_id, "batch collected");
        Ok(())
    }

    /// One trial's line: done, back in the queue for the next batch, or failed.
    fn record_line(
        &self,
        ctx: &RunContext,
        t: &Trial,
        line: Option<LineResult>,
        latency: i64,
    ) -> Result<(), RunnerError> {
        let config = &ctx.provider.config;
        let prepared = match prepare(ctx, t) {
            Ok(p) => p,
            Err(message) => return self.fail_trial(ctx, t.id, ErrorClass::Prompt, message),
        };
        let texts: Vec<&str> = ctx
            .instrument
            .items
            .iter()
            .map(|i| i.text.as_str())
            .collect();
        let spec = ParseSpec {
            display_order: &prepared.order,
            item_texts: &texts,
            min: ctx.instrument.min,
            max: ctx.instrument.max,
        };
        let ask = Ask {
            body: &prepared.body,
            repeat: t.repeat_index,
            spec: &spec,
            first_turn: false,
        };
        let attempts = u32::try_from(t.attempts).unwrap_or(u32::MAX);
        let mut tally = Tally {
            sent: attempts,
            batched: true,
            ..Tally::default()
        };
        let failed = match read_line(config.kind, line) {
            Ok(ok) => {
                let c = &ok.completion;
                tally.reply(
                    c.input_tokens,
                    c.output_tokens,
                    &c.finish_reason,
                    &c.model_version,
                );
                match self.on_reply(ctx, t.id, t.attempts, ok, latency, &ask, &tally)? {
                    // A batch never holds a conversation's first turn (refused when the run is
                    // made), so no answer comes back for a second request.
                    Attempted::Over | Attempted::Answered(_) => return Ok(()),
                    Attempted::Failed(f) => f,
                }
            }
            Err(error) => {
                runs::finish_attempt(
                    &mut *self.conn()?,
                    t.id,
                    t.attempts,
                    &failed_attempt(&error),
                )?;
                Failed {
                    reply: error.body.clone(),
                    error,
                    latency,
                }
            }
        };
        let class = failed.error.class;
        let reask = match class {
            ErrorClass::Parse => true,
            ErrorClass::Truncated => config.retry_truncated,
            ErrorClass::Refused | ErrorClass::Blocked => config.retry_refused,
            _ => failed.error.is_transient(),
        };
        let bound = if class == ErrorClass::Parse || !failed.error.is_transient() {
            config.max_parse_attempts
        } else {
            config.max_attempts
        };
        if reask && attempts < bound && attempts < config.max_attempts {
            // Into the next batch.
            runs::release(&mut *self.conn()?, t.id, &self.opts.owner, None)?;
            return Ok(());
        }
        let message = format!(
            "no readable answers after {attempts} batch lines; last: {}",
            failed.error.message
        );
        self.give_up(ctx, t.id, &tally, class, message, failed)?;
        Ok(())
    }
}

fn now_utc() -> chrono::NaiveDateTime {
    crate::store::now()
}

/// A line as a completion, or what went wrong with it (classified as the synchronous client
/// classifies a reply).
fn read_line(
    kind: crate::config::ProviderKind,
    line: Option<LineResult>,
) -> Result<CallOk, CallError> {
    let Some(line) = line else {
        return Err(CallError::new(
            ErrorClass::Server,
            "the batch's results have no line for this trial",
        ));
    };
    let (status, body) = line
        .reply
        .map_err(|reason| CallError::new(ErrorClass::Server, format!("batch line {reason}")))?;
    if !(200..300).contains(&status) {
        let parsed = read_error_body(&body);
        let mut e = CallError::new(
            classify_status(status, &parsed),
            format!(
                "batch line HTTP {status}: {}",
                parsed
                    .message
                    .unwrap_or_else(|| body.chars().take(300).collect())
            ),
        );
        e.http_status = Some(status);
        e.body = Some(body);
        return Err(e);
    }
    match wire::parse_completion(kind, &body) {
        Ok(completion) => Ok(CallOk {
            http_status: status,
            body,
            completion,
        }),
        Err(problem) => {
            let class = match problem.kind {
                wire::NoAnswer::Unreadable => ErrorClass::Parse,
                wire::NoAnswer::Truncated => ErrorClass::Truncated,
                wire::NoAnswer::Refused => ErrorClass::Refused,
                wire::NoAnswer::Blocked => ErrorClass::Blocked,
            };
            let mut e = CallError::new(class, problem.message);
            e.http_status = Some(status);
            e.body = Some(body);
            Err(e)
        }
    }
}

fn failed_attempt(e: &CallError) -> AttemptOutcome {
    AttemptOutcome {
        raw_reply: e.body.clone(),
        http_status: e.http_status.map(i32::from),
        error_class: Some(e.class),
        error: Some(e.message.clone()),
        ..AttemptOutcome::default()
    }
}
