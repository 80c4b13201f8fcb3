//! The worker: slot threads that claim trials from the database queue, render the prompt from
//! the instrument and situation, call the provider within its limits, parse the reply and
//! record every attempt and the outcome.
//!
//! Nothing is kept only in memory: a worker that dies leaves leased trials whose leases expire
//! and return them to the queue; a result is written only while its lease is held.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::Settings;
use crate::domain::distribution::answer_distributions;
use crate::domain::freetext;
use crate::domain::instrument::Instrument;
use crate::domain::language::{self, Lang};
use crate::domain::parse::{ParseSpec, parse_reply};
use crate::domain::prompt::{ChatMessage, Template, render, trial_seed};
use crate::domain::protocol::{self, Protocol};
use crate::domain::run::cost_micros;
use crate::store::cache::{self, CacheAddress, CacheEntry};
use crate::store::columns::Json;
use crate::store::runs::{self, AttemptOutcome, Trial, TrialMethod, TrialOutcome};
use crate::store::{DbConnection, instrument_texts, situation_texts, situations, studies};
use crate::store::{Pool, RunId, StoreError, TrialId};

use super::client::{CallError, CallOk, ErrorClass, Provider, estimate_tokens};
use super::profiles::{self, RunManifest, SentParams};
use super::wire;

mod batch;

/// How a worker behaves.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Written into the leases it takes; unique per process.
    pub owner: String,
    /// How long a claim holds without being renewed (renewed at every attempt).
    pub lease: Duration,
    /// Work on this run only (the foreground `run` command); None: every active run.
    pub only_run: Option<RunId>,
    /// Slot threads (requests in flight at most, across providers).
    pub slots: usize,
    /// Sleep between looks at the queue when there is nothing to claim.
    pub idle_poll: Duration,
    /// How often an open provider batch is asked whether it has ended.
    pub batch_poll: Duration,
}

impl WorkerOptions {
    pub fn new(slots: usize) -> Self {
        Self {
            owner: format!(
                "{}-{}-{:08x}",
                hostname(),
                std::process::id(),
                rand::random::<u32>()
            ),
            lease: Duration::from_secs(120),
            only_run: None,
            slots: slots.max(1),
            idle_poll: Duration::from_millis(250),
            batch_poll: Duration::from_secs(30),
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".to_owned())
}

/// Why a run cannot be worked at all.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("database: {0}")]
    Query(#[from] diesel::result::Error),
    #[error("run {0}: {1}")]
    Unusable(RunId, String),
}

/// Everything needed to execute the trials of one run.
struct RunContext {
    run: runs::Run,
    provider: Arc<Provider>,
    instrument: Instrument,
    /// The wording of a `paper` run's prompts; None for a conversation (its texts are the
    /// survey's own, `domain::protocol`).
    template: Option<Template>,
    protocol: Protocol,
    /// What every request of the run carries.
    sent: SentParams,
    /// Situation key -> text, in the run's language (#20).
    situations: HashMap<String, String>,
    /// The language whose translations `situations` holds; `None`: the set's own texts (the
    /// study's default language).
    language: Option<Lang>,
    /// Send every request even when the cache has its answer (`--fresh`).
    fresh: bool,
    /// The run was created with a budget: its spending is checked before every claim.
    budgeted: bool,
    /// The run goes through the provider's batch API (`runner::batch`).
    batch: bool,
    /// One slot at a time submits or polls the run's batch; when it last polled.
    batch_polled: Mutex<Option<Instant>>,
}

impl RunContext {
    /// Where a request of this run with this body is found in the response cache.
    fn cache_address<'a>(&'a self, body: &'a str, repeat: i32) -> CacheAddress<'a> {
        CacheAddress {
            provider_kind: self.provider.config.kind.as_str(),
            base_url: &self.provider.config.base_url,
            model: &self.run.model,
            request: body,
            repeat_index: repeat,
        }
    }
}

pub struct Worker {
    pool: Pool,
    providers: HashMap<String, Arc<Provider>>,
    pub opts: WorkerOptions,
    stop: Arc<AtomicBool>,
    contexts: Mutex<HashMap<RunId, Arc<RunContext>>>,
    active: Mutex<(Option<Instant>, Vec<RunId>)>,
}

impl Worker {
    /// A worker over the configured providers; `env` reads their API keys.
    pub fn new(
        pool: Pool,
        settings: &Settings,
        opts: WorkerOptions,
        stop: Arc<AtomicBool>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Arc<Worker> {
        let providers = settings
            .providers
            .iter()
            .map(|p| (p.name.clone(), Arc::new(Provider::new(p.clone(), &env))))
            .collect();
        Arc::new(Worker {
            pool,
            providers,
            opts,
            stop,
            contexts: Mutex::new(HashMap::new()),
            active: Mutex::new((None, Vec::new())),
        })
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Starts the slot threads.
    pub fn spawn(self: &Arc<Self>) -> Vec<JoinHandle<()>> {
        (0..self.opts.slots)
            .map(|_| {
                let w = self.clone();
                std::thread::spawn(move || w.slot())
            })
            .collect()
    }

    /// Returns every trial this worker holds to the queue (on a graceful stop).
    pub fn release_all(&self) -> Result<usize, RunnerError> {
        let mut conn = self.pool.get().map_err(StoreError::from)?;
        Ok(runs::release_all(&mut conn, &self.opts.owner)?)
    }

    fn runs_to_work(&self) -> Vec<RunId> {
        if let Some(run) = self.opts.only_run {
            return vec![run];
        }
        let mut cache = self.active.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = cache
            .0
            .is_some_and(|at| at.elapsed() < Duration::from_millis(500));
        if !fresh {
            let list = self
                .pool
                .get()
                .ok()
                .and_then(|mut c| runs::active(&mut c).ok())
                .unwrap_or_default();
            cache.1 = list
                .into_iter()
                .filter(|r| self.providers.contains_key(&r.provider))
                .map(|r| r.id)
                .collect();
            cache.0 = Some(Instant::now());
        }
        cache.1.clone()
    }

    fn context(&self, run: RunId) -> Result<Arc<RunContext>, RunnerError> {
        if let Some(c) = self
            .contexts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&run)
        {
            return Ok(c.clone());
        }
        let id = run;
        let mut conn = self.pool.get().map_err(StoreError::from)?;
        let r = runs::get(&mut conn, id)?
            .ok_or_else(|| RunnerError::Unusable(id, "no such run".into()))?;
        let provider = self.providers.get(&r.provider).cloned().ok_or_else(|| {
            RunnerError::Unusable(
                id,
                format!("provider {:?} is not in this worker's config", r.provider),
            )
        })?;
        let manifest: RunManifest = r.params.0.clone().ok_or_else(|| {
            RunnerError::Unusable(id, "an imported run has no parameters to send".into())
        })?;
        // Runs made before profiles recorded what they send get it worked out now.
        let sent = match manifest.sent {
            Some(s) => s,
            None => profiles::plan(&provider.config, &r.model, &manifest.requested)
                .map_err(|e| RunnerError::Unusable(id, e))?,
        };
        let params = manifest.requested;
        let fresh = params.fresh;
        let budgeted = params.max_cost_micros.is_some();
        let batch = params.batch;
        let protocol = params.protocol;
        let template = match (Template::builtin(&r.template), &params.custom_template) {
            _ if protocol.is_conversation() => None,
            // A free-text task words its own prompts (`domain::freetext::messages`).
            _ if r.template == freetext::RUN_TEMPLATE => None,
            (Some(t), _) => Some(t),
            (None, Some(c)) => Some(Template::Custom(c.clone())),
            (None, None) => {
                return Err(RunnerError::Unusable(
                    id,
                    format!("unknown template {:?}", r.template),
                ));
            }
        };
        let (situations, language) = run_texts(&mut conn, &r)?;
        // In the run's language, the instrument's translation there when it has one (#20),
        // exactly as `prompt show --language` renders it.
        let instrument = instrument_texts::get_in(
            &mut conn,
            r.instrument_id,
            language.as_ref().map(Lang::as_str),
        )?;
        let ctx = Arc::new(RunContext {
            run: r,
            provider,
            instrument,
            template,
            protocol,
            sent,
            situations,
            language,
            fresh,
            budgeted,
            batch,
            batch_polled: Mutex::new(None),
        });
        self.contexts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run, ctx.clone());
        Ok(ctx)
    }

    fn slot(self: Arc<Self>) {
        while !self.stopped() {
            let mut worked = false;
            for run in self.runs_to_work() {
                if self.stopped() {
                    return;
                }
                let ctx = match self.context(run) {
                    Ok(c) => c,
                    Err(RunnerError::Unusable(id, message)) => {
                        tracing::error!(run = id.0, %message, "run cannot be worked");
                        if let Ok(mut conn) = self.pool.get() {
                            let _ = runs::fail(&mut conn, id, &message);
                        }
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(run = run.0, error = %e, "cannot load the run");
                        continue;
                    }
                };
                if ctx.batch {
                    // A batch is one request for many trials: no concurrency permit.
                    if ctx.budgeted && !self.within_budget(run) {
                        continue;
                    }
                    match self.batch_turn(&ctx) {
                        Ok(true) => {
                            worked = true;
                            break;
                        }
                        Ok(false) => {}
                        Err(e) => tracing::warn!(run = run.0, error = %e, "batch not worked"),
                    }
                    continue;
                }
                let Some(permit) = ctx.provider.try_acquire(Duration::from_millis(200)) else {
                    continue;
                };
                // Checked after the permit: a slot that waited for one sees what the trials
                // that held it spent.
                if ctx.budgeted && !self.within_budget(run) {
                    continue;
                }
                let claimed = self.pool.get().map_err(StoreError::from).and_then(|mut c| {
                    runs::claim(&mut c, run, &self.opts.owner, 1, self.opts.lease)
                });
                match claimed {
                    Ok(mut trials) => {
                        if let Some(trial) = trials.pop() {
                            if let Err(e) = self.execute(&ctx, &trial) {
                                tracing::warn!(trial = trial.id.0, error = %e, "trial not recorded");
                            }
                            worked = true;
                        }
                    }
                    Err(e) => tracing::warn!(run = run.0, error = %e, "claim failed"),
                }
                drop(permit);
                if worked {
                    break;
                }
            }
            if !worked {
                self.sleep(self.opts.idle_poll, None);
            }
        }
    }

    /// Whether the run may claim another trial: false (and the run paused, with the reason)
    /// once what it spent reached its budget. The limit is read from the database each time,
    /// so one raised by `runs resume --max-cost` counts at once; a check that fails claims
    /// nothing (spending is never assumed to be below the limit).
    fn within_budget(&self, run: RunId) -> bool {
        let checked = self.conn().and_then(|mut conn| {
            let limit = runs::get(&mut conn, run)?
                .and_then(|r| r.params.0)
                .and_then(|m| m.requested.max_cost_micros);
            let Some(limit) = limit else { return Ok(true) };
            let spent = runs::spent_micros(&mut conn, run)?;
            if spent < limit {
                return Ok(true);
            }
            let reason = budget_reason(run, spent, limit);
            if runs::pause_because(&mut conn, run, &reason)? {
                tracing::warn!(run = run.0, spent, limit, "run paused at its budget");
            }
            Ok(false)
        });
        checked.unwrap_or_else(|e: RunnerError| {
            tracing::warn!(run = run.0, error = %e, "cannot check the run's budget");
            false
        })
    }

    /// Sleeps up to `d`, waking early on stop; renews `lease_of` while sleeping long.
    /// False when stopped.
    fn sleep(&self, d: Duration, lease_of: Option<TrialId>) -> bool {
        let end = Instant::now() + d;
        let mut renewed = Instant::now();
        while Instant::now() < end {
            if self.stopped() {
                return false;
            }
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
            if let Some(t) = lease_of {
                if renewed.elapsed() > self.opts.lease / 3 {
                    if let Ok(mut c) = self.pool.get() {
                        let _ = runs::renew(&mut c, t, &self.opts.owner, self.opts.lease);
                    }
                    renewed = Instant::now();
                }
            }
        }
        !self.stopped()
    }

    fn conn(&self) -> Result<crate::store::PooledConnection, RunnerError> {
        Ok(self.pool.get().map_err(StoreError::from)?)
    }

    fn fail_trial(
        &self,
        ctx: &RunContext,
        id: TrialId,
        class: ErrorClass,
        error: String,
    ) -> Result<(), RunnerError> {
        let mut conn = self.conn()?;
        runs::finish_trial(
            &mut conn,
            ctx.run.id,
            id,
            &self.opts.owner,
            &TrialOutcome {
                done: false,
                raw_reply: None,
                scores: None,
                error_class: Some(class),
                error: Some(error),
                latency_ms: None,
                input_tokens: None,
                output_tokens: None,
                cost_micros: None,
                finish_reason: None,
                model_version: None,
                method: None,
                distributions: None,
                cached: false,
                before_scores: None,
            },
        )?;
        Ok(())
    }

    /// One trial to its end: done, failed, released (stopping; a rejected key) or lost lease.
    fn execute(&self, ctx: &RunContext, trial: &Trial) -> Result<(), RunnerError> {
        let id = trial.id;
        let _span = tracing::info_span!("trial", run = ctx.run.id.0, trial = trial.id.0).entered();
        let prepared = match prepare(ctx, trial) {
            Ok(p) => p,
            Err(message) => return self.fail_trial(ctx, id, ErrorClass::Prompt, message),
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
        let mut tally = Tally::default();
        let mut body = prepared.body;
        if let Some(turns) = &prepared.conversation {
            // The first questionnaire must read before the situation is shown: its reply is
            // part of the second request, as a participant's answers were theirs when they
            // read the situation.
            let before = ParseSpec {
                display_order: &turns.before_order,
                ..spec
            };
            let first = Ask {
                body: &body,
                repeat: trial.repeat_index,
                spec: &before,
                first_turn: true,
            };
            let Some(answer) = self.ask(ctx, id, &first, &mut tally)? else {
                return Ok(());
            };
            let messages = protocol::conversation(&turns.first, &answer.text, &turns.second);
            body = request_of(ctx, trial, &messages);
            tally.next_turn(&answer.scores);
        }
        let ask = Ask {
            body: &body,
            repeat: trial.repeat_index,
            spec: &spec,
            first_turn: false,
        };
        self.ask(ctx, id, &ask, &mut tally).map(|_| ())
    }

    /// Asks until the reply reads or the trial is over: the first turn's answer, or None
    /// (the trial is done, failed, released or its lease lost).
    fn ask(
        &self,
        ctx: &RunContext,
        id: TrialId,
        ask: &Ask<'_>,
        tally: &mut Tally,
    ) -> Result<Option<FirstAnswer>, RunnerError> {
        loop {
            match self.attempt(ctx, id, ask, tally)? {
                Attempted::Over => return Ok(None),
                Attempted::Answered(answer) => return Ok(Some(answer)),
                Attempted::Failed(failed) => {
                    if !self.after_failure(ctx, id, tally, failed)? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// One attempt: waits for the provider's limits, sends, and records the attempt (and the
    /// trial, when the reply reads).
    fn attempt(
        &self,
        ctx: &RunContext,
        id: TrialId,
        ask: &Ask<'_>,
        tally: &mut Tally,
    ) -> Result<Attempted, RunnerError> {
        let owner = self.opts.owner.as_str();
        let body = ask.body;
        if self.stopped() {
            runs::release(&mut *self.conn()?, id, owner, None)?;
            return Ok(Attempted::Over);
        }
        // Only a trial's first request is looked up: a re-ask after an unreadable reply must
        // reach the model, or it would read the same cached reply again.
        if tally.sent == 0 && !ctx.fresh {
            if let Some(hit) = self.answer_from_cache(ctx, id, ask, tally)? {
                return Ok(hit);
            }
        }
        tally.cached = false;
        tally.paid = true;
        let estimate = estimate_tokens(body, ctx.sent.max_tokens);
        let wait = ctx.provider.reserve(estimate);
        if !self.sleep(wait, Some(id)) {
            runs::release(&mut *self.conn()?, id, owner, None)?;
            return Ok(Attempted::Over);
        }
        let Some(attempt) =
            runs::start_attempt(&mut *self.conn()?, id, owner, self.opts.lease, body)?
        else {
            return Ok(Attempted::Over); // the lease was lost: another worker has this trial now
        };
        let _span = tracing::debug_span!("attempt", attempt).entered();
        tally.sent += 1;
        let started = Instant::now();
        let result = ctx.provider.send(&ctx.run.model, body);
        let latency = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        match result {
            Ok(ok) => {
                ctx.provider.on_success();
                let c = &ok.completion;
                let used = c.input_tokens.unwrap_or(0) + c.output_tokens.unwrap_or(0);
                ctx.provider.settle_tokens(estimate, used);
                tally.reply(
                    c.input_tokens,
                    c.output_tokens,
                    &c.finish_reason,
                    &c.model_version,
                );
                self.on_reply(ctx, id, attempt, ok, latency, ask, tally)
            }
            Err(e) => {
                if let Some(r) = &e.reply {
                    // A 2xx without an answer was still generated, and billed.
                    tally.reply(
                        r.input_tokens,
                        r.output_tokens,
                        &r.finish_reason,
                        &r.model_version,
                    );
                }
                runs::finish_attempt(
                    &mut *self.conn()?,
                    id,
                    attempt,
                    &AttemptOutcome {
                        raw_reply: e.body.clone(),
                        http_status: e.http_status.map(i32::from),
                        error_class: Some(e.class),
                        error: Some(e.message.clone()),
                        latency_ms: Some(latency),
                        input_tokens: e.reply.as_ref().and_then(|r| r.input_tokens),
                        output_tokens: e.reply.as_ref().and_then(|r| r.output_tokens),
                    },
                )?;
                Ok(Attempted::Failed(Failed {
                    reply: e.body.clone(),
                    error: e,
                    latency,
                }))
            }
        }
    }

    /// The cached answer to the trial's request, recorded as an attempt that sent nothing;
    /// None when there is none (or it does not read as a completion: then it is asked).
    fn answer_from_cache(
        &self,
        ctx: &RunContext,
        id: TrialId,
        ask: &Ask<'_>,
        tally: &mut Tally,
    ) -> Result<Option<Attempted>, RunnerError> {
        let address = ctx.cache_address(ask.body, ask.repeat);
        let Some(hit) = cache::get(&mut *self.conn()?, &address)? else {
            return Ok(None);
        };
        let Ok(completion) = wire::parse_completion(ctx.provider.config.kind, &hit.reply) else {
            tracing::warn!(
                trial = id.0,
                "a cached reply does not read; asking the model"
            );
            return Ok(None);
        };
        let owner = self.opts.owner.as_str();
        let Some(attempt) =
            runs::start_attempt(&mut *self.conn()?, id, owner, self.opts.lease, ask.body)?
        else {
            return Ok(Some(Attempted::Over));
        };
        tally.sent += 1;
        tally.cached = true;
        let c = &completion;
        tally.reply(
            c.input_tokens,
            c.output_tokens,
            &c.finish_reason,
            &c.model_version,
        );
        tally.cached_tokens.0 += c.input_tokens.unwrap_or(0);
        tally.cached_tokens.1 += c.output_tokens.unwrap_or(0);
        let ok = CallOk {
            http_status: u16::try_from(hit.http_status).unwrap_or(200),
            body: hit.reply,
            completion,
        };
        self.on_reply(ctx, id, attempt, ok, 0, ask, tally).map(Some)
    }

    /// A completion came back: the trial is done if its text reads as the answers.
    #[expect(clippy::too_many_arguments, reason = "one attempt's state, used once")]
    fn on_reply(
        &self,
        ctx: &RunContext,
        id: TrialId,
        attempt: i32,
        ok: CallOk,
        latency: i64,
        ask: &Ask<'_>,
        tally: &Tally,
    ) -> Result<Attempted, RunnerError> {
        let spec = ask.spec;
        let text = ok.completion.text.clone();
        let mut outcome = AttemptOutcome {
            raw_reply: Some(text.clone()),
            http_status: Some(i32::from(ok.http_status)),
            latency_ms: Some(latency),
            input_tokens: ok.completion.input_tokens,
            output_tokens: ok.completion.output_tokens,
            ..AttemptOutcome::default()
        };
        if ctx.instrument.is_free_text() {
            return self.on_free_text(ctx, id, attempt, ok, latency, ask, tally, outcome);
        }
        match parse_reply(&text, spec) {
            Ok(parsed) => {
                let mut conn = self.conn()?;
                runs::finish_attempt(&mut conn, id, attempt, &outcome)?;
                if !tally.cached {
                    self.cache_reply(&mut conn, ctx, ask, &ok)?;
                }
                if ask.first_turn {
                    return Ok(Attempted::Answered(FirstAnswer {
                        text,
                        scores: parsed.scores,
                    }));
                }
                let scores = serde_json::to_string(&parsed.scores).ok();
                let mut done = tally.outcome(ctx, true, Some(text), scores, None, Some(latency));
                let distributions = match (&ok.completion.logprobs, ctx.sent.top_logprobs) {
                    (Some(tokens), Some(_)) => {
                        answer_distributions(tokens, &parsed.scores, spec, &wire::strip_think)
                    }
                    _ => None,
                };
                done.method = Some(match &distributions {
                    Some(d) if d.complete() => TrialMethod::Logprobs,
                    _ => TrialMethod::Parsed,
                });
                done.distributions = distributions.map(Json);
                runs::finish_trial(&mut conn, ctx.run.id, id, &self.opts.owner, &done)?;
                Ok(Attempted::Over)
            }
            Err(e) => {
                // A reply cut at the cap is not re-asked as unreadable: the same cap cuts it
                // again.
                let (class, message) = if ok.completion.truncated {
                    (
                        ErrorClass::Truncated,
                        format!(
                            "the reply stopped at the token cap ({}) before its answers could be read: {e}",
                            ok.completion.finish_reason.as_deref().unwrap_or("?")
                        ),
                    )
                } else {
                    (ErrorClass::Parse, format!("{} ({})", e, e.class()))
                };
                outcome.error_class = Some(class);
                outcome.error = Some(message.clone());
                runs::finish_attempt(&mut *self.conn()?, id, attempt, &outcome)?;
                let mut error = CallError::new(class, message);
                error.http_status = Some(ok.http_status);
                Ok(Attempted::Failed(Failed {
                    reply: Some(text),
                    error,
                    latency,
                }))
            }
        }
    }

    /// A free-text trial's reply (#18): any text is its answer (a reply cut at the token cap
    /// too: the text up to the cap is what the model wrote); only an empty one is asked again.
    #[expect(clippy::too_many_arguments, reason = "one attempt's state, used once")]
    fn on_free_text(
        &self,
        ctx: &RunContext,
        id: TrialId,
        attempt: i32,
        ok: CallOk,
        latency: i64,
        ask: &Ask<'_>,
        tally: &Tally,
        mut outcome: AttemptOutcome,
    ) -> Result<Attempted, RunnerError> {
        let Some(text) = freetext::answer(&ok.completion.text).map(str::to_owned) else {
            let message = "the reply has no text".to_owned();
            outcome.error_class = Some(ErrorClass::Parse);
            outcome.error = Some(message.clone());
            runs::finish_attempt(&mut *self.conn()?, id, attempt, &outcome)?;
            let mut error = CallError::new(ErrorClass::Parse, message);
            error.http_status = Some(ok.http_status);
            return Ok(Attempted::Failed(Failed {
                reply: Some(ok.completion.text),
                error,
                latency,
            }));
        };
        let mut conn = self.conn()?;
        runs::finish_attempt(&mut conn, id, attempt, &outcome)?;
        if !tally.cached {
            self.cache_reply(&mut conn, ctx, ask, &ok)?;
        }
        let mut done = tally.outcome(ctx, true, Some(text), None, None, Some(latency));
        done.method = Some(TrialMethod::Parsed);
        runs::finish_trial(&mut conn, ctx.run.id, id, &self.opts.owner, &done)?;
        Ok(Attempted::Over)
    }

    /// Keeps a reply that read in the response cache under its request.
    fn cache_reply(
        &self,
        conn: &mut crate::store::DbConnection,
        ctx: &RunContext,
        ask: &Ask<'_>,
        ok: &CallOk,
    ) -> Result<(), RunnerError> {
        let address = ctx.cache_address(ask.body, ask.repeat);
        let entry = CacheEntry {
            key: address.key(),
            provider_kind: address.provider_kind.to_owned(),
            base_url: address.base_url.to_owned(),
            model: address.model.to_owned(),
            request: ask.body.to_owned(),
            repeat_index: ask.repeat,
            http_status: i32::from(ok.http_status),
            reply: ok.body.clone(),
        };
        cache::put(conn, &entry, ctx.fresh)?;
        Ok(())
    }

    /// Decides after a failed attempt: `Ok(true)` to try again, `Ok(false)` when the trial is
    /// over (failed, or released).
    fn after_failure(
        &self,
        ctx: &RunContext,
        id: TrialId,
        tally: &mut Tally,
        failed: Failed,
    ) -> Result<bool, RunnerError> {
        let config = &ctx.provider.config;
        let run_id = ctx.run.id;
        let owner = self.opts.owner.as_str();
        let error = &failed.error;
        let class = error.class;
        if class.stops_the_run() {
            // Not the trial's fault: it goes back to the queue, the run stops with a message,
            // and `runs resume` after fixing the key, the quota or the model picks it up again.
            let mut conn = self.conn()?;
            runs::release(&mut conn, id, owner, Some((class, &error.message)))?;
            runs::fail(&mut conn, run_id, &error.message)?;
            tracing::error!(run = run_id.0, message = %error.message, "run failed");
            return Ok(false);
        }
        let reask = match class {
            ErrorClass::Parse => true,
            ErrorClass::Truncated => config.retry_truncated,
            ErrorClass::Refused | ErrorClass::Blocked => config.retry_refused,
            _ => false,
        };
        if reask {
            tally.parse_failures += 1;
            if tally.parse_failures >= config.max_parse_attempts
                || tally.sent >= config.max_attempts
            {
                let message = format!(
                    "no readable answers after {} replies; last: {}",
                    tally.parse_failures, error.message
                );
                return self.give_up(ctx, id, tally, class, message, failed);
            }
            // Ask again at once: the reply was valid, only unreadable.
            return Ok(true);
        }
        if !error.is_transient() {
            let message = error.message.clone();
            return self.give_up(ctx, id, tally, class, message, failed);
        }
        tally.transient += 1;
        if tally.sent >= config.max_attempts {
            let message = format!(
                "gave up after {} attempts; last: {}",
                tally.sent, error.message
            );
            return self.give_up(ctx, id, tally, class, message, failed);
        }
        if class == ErrorClass::RateLimited {
            ctx.provider.on_rate_limited(error.retry_after);
        } else if let Some(d) = error.retry_after {
            ctx.provider.hold(d);
        }
        let delay = error
            .retry_after
            .unwrap_or_else(|| backoff(config.backoff_base_ms, tally.transient));
        tracing::debug!(trial = id.0, class = class.as_str(), ?delay, "retrying");
        if !self.sleep(delay, Some(id)) {
            runs::release(&mut *self.conn()?, id, owner, None)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Records the trial as failed with the last attempt's reply; the trial is over.
    fn give_up(
        &self,
        ctx: &RunContext,
        id: TrialId,
        tally: &Tally,
        class: ErrorClass,
        message: String,
        failed: Failed,
    ) -> Result<bool, RunnerError> {
        runs::finish_trial(
            &mut *self.conn()?,
            ctx.run.id,
            id,
            &self.opts.owner,
            &tally.failed(ctx, class, message, failed.reply, failed.latency),
        )?;
        Ok(false)
    }
}

/// Why a run stopped at its budget, with how to go on.
fn budget_reason(run: RunId, spent: i64, limit: i64) -> String {
    format!(
        "paused at its budget: spent ${:.4} of ${:.4}; raise it with `emotionbench runs resume {run} --max-cost USD`",
        spent as f64 / 1e6,
        limit as f64 / 1e6
    )
}

/// What one trial asks, for every attempt: the body, the repeat it is (part of its cache
/// address) and how its reply is read.
struct Ask<'a> {
    body: &'a str,
    repeat: i32,
    spec: &'a ParseSpec<'a>,
    /// The first questionnaire of a conversation: a reply that reads is handed back for the
    /// second request instead of ending the trial.
    first_turn: bool,
}

/// A conversation's first questionnaire, answered.
struct FirstAnswer {
    /// The reply as the model wrote it (it goes back into the conversation).
    text: String,
    /// In canonical item order.
    scores: Vec<i32>,
}

/// A trial's request, ready to send.
struct Prepared {
    /// The item order shown to the model (the second questionnaire's, in a conversation).
    order: Vec<u32>,
    /// The first request's body.
    body: String,
    /// The rest of a conversation (within-session, persona).
    conversation: Option<Turns>,
}

/// What a conversation needs after its first reply.
struct Turns {
    before_order: Vec<u32>,
    first: Vec<ChatMessage>,
    second: ChatMessage,
}

/// The texts of a run's situations by key, in the run's language (#20): the set's own for the
/// study's default (or no language), else the stored translations, with the language they are
/// in. A stored language that is not a tag is an error, never the default.
fn run_texts(
    conn: &mut DbConnection,
    r: &runs::Run,
) -> Result<(HashMap<String, String>, Option<Lang>), RunnerError> {
    let asked = r.language()?;
    let Some(set) = r.situation_set_id else {
        return Ok((HashMap::new(), None));
    };
    // A run whose study is gone has no default to compare with: its language's texts.
    let offered = match (&asked, r.study_id) {
        (Some(_), Some(study)) => studies::languages_of(conn, study)?.unwrap_or_default(),
        _ => Vec::new(),
    };
    match language::translation(asked.as_ref(), &offered) {
        None => Ok((
            situations::list(conn, set)?
                .into_iter()
                .map(|s| (s.situation.key, s.situation.text))
                .collect(),
            None,
        )),
        Some(lang) => Ok((
            situation_texts::texts_of_set(conn, set, lang)?
                .into_iter()
                .collect(),
            Some(lang.clone()),
        )),
    }
}

/// The request body of a trial, from its stored order, measure and situation; `Err` says why
/// it cannot be made.
fn prepare(ctx: &RunContext, trial: &Trial) -> Result<Prepared, String> {
    let order = trial.item_order.0.clone();
    let measure = trial.measure;
    let situation = ctx.situations.get(&trial.situation_key).map(String::as_str);
    if let (None, Some(lang), false) = (situation, &ctx.language, trial.situation_key.is_empty()) {
        // Never the default language's text instead: the run is in this one.
        return Err(format!(
            "the situation {} has no text in {lang}",
            trial.situation_key
        ));
    }
    if ctx.protocol.is_conversation() {
        let before_order = trial
            .before_order
            .as_ref()
            .map(|o| o.0.clone())
            .ok_or("a conversation's trial has no first questionnaire order")?;
        let situation = situation.ok_or("the trial's situation is not in the run's set")?;
        let persona = trial.persona.as_ref().map(|p| &p.0);
        if ctx.protocol == Protocol::Persona && persona.is_none() {
            return Err("a persona trial has no persona".into());
        }
        let first = protocol::first_turn(&ctx.instrument, &before_order, persona)
            .map_err(|e| e.to_string())?;
        let second =
            protocol::second_turn(&ctx.instrument, situation, &order).map_err(|e| e.to_string())?;
        let body = request_of(ctx, trial, &first);
        return Ok(Prepared {
            order,
            body,
            conversation: Some(Turns {
                before_order,
                first,
                second,
            }),
        });
    }
    if ctx.instrument.is_free_text() {
        let messages = freetext::messages(&ctx.instrument, measure, situation, &order)
            .map_err(|e| e.to_string())?;
        let body = request_of(ctx, trial, &messages);
        return Ok(Prepared {
            order,
            body,
            conversation: None,
        });
    }
    let template = ctx.template.as_ref().ok_or("the run has no template")?;
    let messages =
        render(&ctx.instrument, template, measure, situation, &order).map_err(|e| e.to_string())?;
    let body = request_of(ctx, trial, &messages);
    Ok(Prepared {
        order,
        body,
        conversation: None,
    })
}

/// The request body with these messages; every request of a trial carries the trial's seed.
fn request_of(ctx: &RunContext, trial: &Trial, messages: &[ChatMessage]) -> String {
    let seed = trial_seed(
        ctx.run.seed as u64,
        trial.measure,
        &trial.situation_key,
        u32::try_from(trial.repeat_index).unwrap_or(0),
    );
    wire::request_body(
        ctx.provider.config.kind,
        &ctx.run.model,
        messages,
        &ctx.sent,
        seed,
    )
    .to_string()
}

/// Counts over the attempts of one trial.
#[derive(Debug, Default)]
struct Tally {
    sent: u32,
    parse_failures: u32,
    transient: u32,
    /// None once a reply did not say its usage: the trial's total is then unknown, not low.
    input: Option<i64>,
    output: Option<i64>,
    /// Replies counted (until the first, the totals are 0, not unknown).
    replies: u32,
    /// Why the last reply stopped, and the snapshot that answered.
    finish_reason: Option<String>,
    model_version: Option<String>,
    /// The last reply came from the response cache.
    cached: bool,
    /// The reply came through the provider's batch API: billed at the batch price.
    batched: bool,
    /// A request of the trial reached the provider (its answer is not all from the cache).
    paid: bool,
    /// Tokens of the replies read from the cache (recorded, not paid for).
    cached_tokens: (i64, i64),
    /// A conversation's first questionnaire answers (JSON, canonical order).
    before_scores: Option<String>,
}

impl Tally {
    fn reply(
        &mut self,
        input: Option<i64>,
        output: Option<i64>,
        finish: &Option<String>,
        model: &Option<String>,
    ) {
        let first = self.replies == 0;
        let add = |total: Option<i64>, n: Option<i64>| match (total, n) {
            (_, None) => None,
            (None, Some(n)) if first => Some(n),
            (None, Some(_)) => None,
            (Some(t), Some(n)) => Some(t + n),
        };
        self.input = add(self.input, input);
        self.output = add(self.output, output);
        self.replies += 1;
        self.finish_reason = finish.clone();
        self.model_version = model.clone().or(self.model_version.take());
    }

    /// The first turn of a conversation read: the second starts with its own attempt counts
    /// (each request gets `max_attempts` and `max_parse_attempts`), the tokens add up.
    fn next_turn(&mut self, before: &[i32]) {
        self.sent = 0;
        self.parse_failures = 0;
        self.transient = 0;
        self.before_scores = serde_json::to_string(before).ok();
    }

    /// The token totals: 0 before any reply, unknown once a reply did not say.
    fn tokens(&self) -> (Option<i64>, Option<i64>) {
        if self.replies == 0 {
            (Some(0), Some(0))
        } else {
            (self.input, self.output)
        }
    }

    fn outcome(
        &self,
        ctx: &RunContext,
        done: bool,
        raw_reply: Option<String>,
        scores: Option<String>,
        error: Option<(ErrorClass, String)>,
        latency_ms: Option<i64>,
    ) -> TrialOutcome {
        let config = &ctx.provider.config;
        let (input, output) = self.tokens();
        let cached = self.cached && !self.paid;
        let cost = match (input, output) {
            // Nothing was paid for an answer read from the cache.
            _ if cached => Some(0),
            (Some(i), Some(o)) => {
                let factor = if self.batched {
                    super::batch::BATCH_PRICE_FACTOR
                } else {
                    1.0
                };
                // Replies read from the cache (one turn of a conversation) were not paid for.
                cost_micros(
                    i - self.cached_tokens.0,
                    o - self.cached_tokens.1,
                    config.price_input_per_mtok.map(|p| p * factor),
                    config.price_output_per_mtok.map(|p| p * factor),
                )
            }
            _ => None,
        };
        let (error_class, error) = match error {
            Some((c, m)) => (Some(c), Some(m)),
            None => (None, None),
        };
        TrialOutcome {
            done,
            raw_reply,
            scores,
            error_class,
            error,
            latency_ms,
            input_tokens: input,
            output_tokens: output,
            cost_micros: cost,
            finish_reason: self.finish_reason.clone(),
            model_version: self.model_version.clone(),
            method: None,
            distributions: None,
            cached,
            before_scores: self.before_scores.clone(),
        }
    }

    fn failed(
        &self,
        ctx: &RunContext,
        class: ErrorClass,
        message: String,
        reply: Option<String>,
        latency: i64,
    ) -> TrialOutcome {
        self.outcome(
            ctx,
            false,
            reply,
            None,
            Some((class, message)),
            Some(latency),
        )
    }
}

/// What one attempt came to.
enum Attempted {
    /// The trial is over for this worker: done, released, or its lease lost.
    Over,
    /// A conversation's first questionnaire read (the trial goes on).
    Answered(FirstAnswer),
    Failed(Failed),
}

/// A failed attempt, as the trial's outcome records it if this was the last.
struct Failed {
    reply: Option<String>,
    error: CallError,
    latency: i64,
}

/// Exponential backoff with jitter: base × 2^(n−1), capped at 60 s, times a random factor in
/// [0.5, 1) so that clients that failed together do not retry together.
pub fn backoff(base_ms: u64, n: u32) -> Duration {
    let exp = base_ms.saturating_mul(1u64 << n.saturating_sub(1).min(16));
    let capped = exp.min(60_000) as f64;
    let jitter = 0.5 + rand::random::<f64>() * 0.5;
    Duration::from_millis((capped * jitter) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_with_jitter_and_a_cap() {
        for _ in 0..50 {
            let b1 = backoff(1000, 1);
            assert!(b1 >= Duration::from_millis(500) && b1 < Duration::from_millis(1000));
            let b3 = backoff(1000, 3);
            assert!(b3 >= Duration::from_millis(2000) && b3 < Duration::from_millis(4000));
            assert!(backoff(1000, 30) < Duration::from_secs(60));
        }
    }
}
