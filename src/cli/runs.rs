//! `run`, `run resume`, `runs …` and `worker`: create and change runs through `app::runs`,
//! drive the library's worker and print progress.

use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use emotionbench::Settings;
use emotionbench::app::runs::{self as setup, RunAction};
use emotionbench::domain::protocol::Protocol;
use emotionbench::domain::run::{RunParams, Selection};
use emotionbench::domain::situation::Valence;
use emotionbench::llm::runner::{Worker, WorkerOptions};
use emotionbench::store::audit::Actor;
use emotionbench::store::runs::{self, Progress, RunStatus, TrialStatus};
use emotionbench::store::{Pool, RunId};

use super::db;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RunArgs {
    #[command(subcommand)]
    pub action: Option<RunSubcommand>,
    /// The study (slug) whose instrument and situations are used.
    #[arg(long)]
    pub study: Option<String>,
    /// Use this instrument (a key from `instruments list`) instead of the study's; an
    /// emotion-specific scale (AGQ, BDI, …) takes its emotion's situations by default.
    #[arg(long, value_name = "KEY")]
    pub instrument: Option<String>,
    /// A provider name from the config file's [[providers]].
    #[arg(long)]
    pub provider: Option<String>,
    /// The model name as the provider knows it.
    #[arg(long)]
    pub model: Option<String>,
    /// eb-code (upstream's exact messages), paper, stability, or a custom template file.
    #[arg(long, default_value = "eb-code")]
    pub template: String,
    /// Evoked trials per situation.
    #[arg(long, default_value_t = 10)]
    pub repeats: u32,
    /// Default-measure trials.
    #[arg(long, default_value_t = 50)]
    pub default_repeats: u32,
    /// all | tested | set:NAME | emotion:Anger[,Fear] | factor:Anger-0[,...] | keys:KEY[,KEY]
    #[arg(long, default_value = "all")]
    pub situations: String,
    /// Only situations of these valences, e.g. `negative,positive` (#18; all when omitted).
    #[arg(long)]
    pub valence: Option<String>,
    /// Seed of the item orders (random when omitted; stored with the run).
    #[arg(long)]
    pub seed: Option<u64>,
    /// One of the study's languages (a tag such as de): every trial shows the situations'
    /// texts in it, as `prompt show --language` prints them (issue #20; default: the study's
    /// default language). Refused when the study lacks it or a situation has no text in it.
    #[arg(long, value_name = "TAG")]
    pub language: Option<String>,
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f64,
    #[arg(long, default_value_t = 512)]
    pub max_tokens: u32,
    /// Do not send a per-trial seed to the provider.
    #[arg(long)]
    pub no_request_seed: bool,
    /// Ask for token log-probabilities (top 20 per token; OpenAI-compatible providers and
    /// llama.cpp) and store each item's probabilities of the allowed answers and their
    /// expected value.
    #[arg(long)]
    pub logprobs: bool,
    /// Send every request even when the response cache holds its answer (the new answers
    /// replace the cached ones).
    #[arg(long)]
    pub fresh: bool,
    /// Pause the run once its cost reaches this many US dollars (needs the provider's prices in
    /// the config). Trials in flight then still finish: the total can pass the limit by at
    /// most the provider's concurrency times one trial's cost.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Send the trials through the provider's batch API (OpenAI Batch, Anthropic Message
    /// Batches): half the price; answers come when the provider has worked the batch (up to
    /// 24 h). A worker that stops meanwhile is replaced by one that collects the same batch.
    #[arg(long)]
    pub batch: bool,
    /// paper: separate prompts per measure (with --template); within-session: the
    /// questionnaire, the situation and the questionnaire again in one conversation, as the
    /// participants did (--repeats conversations per situation); persona: that conversation
    /// once per completed participant of the study, as that person (gender, age, country,
    /// employment, education), on their situation and in their item orders.
    #[arg(long, value_enum, default_value = "paper")]
    pub protocol: Protocol,
    /// Only create the run (workers pick it up); do not work it here.
    #[arg(long)]
    pub detach: bool,
    #[command(flatten)]
    pub work: WorkOpts,
}

#[derive(clap::Subcommand)]
pub enum RunSubcommand {
    /// Resume a run (paused, interrupted, failed or cancelled) and work it in the foreground.
    Resume {
        id: i64,
        #[command(flatten)]
        work: WorkOpts,
    },
}

#[derive(clap::Args, Clone)]
pub struct WorkOpts {
    /// Seconds a claimed trial stays leased without renewal (renewed at every attempt).
    #[arg(long, default_value_t = 120)]
    pub lease_seconds: u64,
    /// Seconds between asking the provider whether a run's batch has ended.
    #[arg(long, default_value_t = 30.0)]
    pub batch_poll_seconds: f64,
}

impl WorkOpts {
    fn apply(&self, opts: &mut WorkerOptions) {
        opts.lease = Duration::from_secs(self.lease_seconds.max(1));
        opts.batch_poll = Duration::from_secs_f64(self.batch_poll_seconds.clamp(0.05, 86_400.0));
    }
}

#[derive(clap::Subcommand)]
pub enum RunsCommand {
    /// List the runs with their progress.
    List,
    /// One run: parameters, progress, failures, a sample of replies.
    Show {
        id: i64,
        /// Print every trial as JSON lines instead.
        #[arg(long)]
        trials: bool,
    },
    /// Stop claiming new trials (trials in flight finish).
    Pause { id: i64 },
    /// Queue a paused, failed or cancelled run again.
    Resume {
        id: i64,
        /// A new budget in US dollars (a run paused at its budget goes on only with a higher
        /// one).
        #[arg(long, value_name = "USD")]
        max_cost: Option<f64>,
    },
    /// Cancel a run: its pending trials are never sent.
    Cancel { id: i64 },
    /// Score the answers of free-text runs with a `[[scorers]]` entry: queues what is not
    /// scored yet and works the queue in the foreground (resumable: run it again after a stop).
    Score(super::freetext::ScoreArgs),
    /// The free-text report of runs: default vs evoked score per emotion and overall.
    TextReport(super::freetext::TextReportArgs),
}

#[derive(clap::Subcommand)]
pub enum CacheCommand {
    /// Write every cached reply to FILE as JSON lines.
    Export { file: std::path::PathBuf },
    /// Take in the cached replies of FILE (from `cache export`); a malformed line refuses the
    /// whole file, with its line number.
    Import { file: std::path::PathBuf },
}

#[derive(clap::Args)]
pub struct WorkerArgs {
    /// Requests in flight at most (default: the sum of the providers' concurrency).
    #[arg(long)]
    pub slots: Option<usize>,
    #[command(flatten)]
    pub work: WorkOpts,
}

pub use super::signals::stop_on_signals;

fn sized(mut settings: Settings, slots: usize) -> Settings {
    settings.pool_size = settings
        .pool_size
        .max(u32::try_from(slots.saturating_add(2).min(32)).unwrap_or(32));
    settings
}

/// `--max-cost` in micro-USD, the unit costs are recorded in.
fn usd_to_micros(usd: f64) -> anyhow::Result<i64> {
    if !usd.is_finite() || usd <= 0.0 || usd > 1e9 {
        anyhow::bail!("--max-cost must be a positive number of US dollars, not {usd}");
    }
    Ok((usd * 1e6).round() as i64)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

pub fn run(settings: Settings, args: RunArgs) -> anyhow::Result<()> {
    if let Some(RunSubcommand::Resume { id, work }) = args.action {
        let pool = db::writing(&settings)?;
        let run = {
            let mut conn = pool.get()?;
            setup::change(&mut conn, RunId(id), RunAction::Resume, &Actor::Cli)?
        };
        eprintln!("run {id} resumed ({})", run.status);
        return foreground(settings, pool, RunId(id), &work);
    }
    let need = |v: Option<String>, flag: &str| {
        v.with_context(|| format!("{flag} is required (or use `run resume ID`)"))
    };
    let request = setup::RunRequest {
        study: need(args.study, "--study")?,
        instrument: args.instrument,
        provider: need(args.provider, "--provider")?,
        model: need(args.model, "--model")?,
        template: args.template,
        repeats: args.repeats,
        default_repeats: args.default_repeats,
        selection: args
            .situations
            .parse::<Selection>()
            .map_err(anyhow::Error::msg)?,
        seed: args.seed,
        language: args.language,
        params: RunParams {
            temperature: args.temperature,
            top_p: args.top_p,
            max_tokens: args.max_tokens,
            send_seed: !args.no_request_seed,
            custom_template: None,
            logprobs: args.logprobs,
            fresh: args.fresh,
            max_cost_micros: args.max_cost.map(usd_to_micros).transpose()?,
            batch: args.batch,
            protocol: args.protocol,
            valences: match &args.valence {
                Some(list) => Valence::parse_list(list).map_err(anyhow::Error::msg)?,
                None => Vec::new(),
            },
        },
    };
    let pool = db::writing(&settings)?;
    let created = {
        let mut conn = pool.get()?;
        setup::create(&mut conn, &settings, &request, &Actor::Cli)?
    };
    let language = created
        .language
        .as_ref()
        .map(|l| format!(", language {l}"))
        .unwrap_or_default();
    println!(
        "run {} created: {} trials, seed {}, instrument {}{language}",
        created.run, created.trials, created.seed, created.instrument
    );
    for note in &created.notes {
        eprintln!("note: {note}");
    }
    if let Some(emotion) = created.scale_emotion {
        println!(
            "{} is the {emotion} scale: the run takes the {emotion} situations of the set \
             (name others with --situations emotion:…)",
            created.instrument
        );
    }
    if args.detach {
        return Ok(());
    }
    foreground(settings, pool, created.run, &args.work)
}

fn progress_line(run: RunId, p: &Progress, rate: f64, in_flight: i64) -> String {
    let remaining = p.pending + p.leased;
    let eta = if rate > 0.0 && remaining > 0 {
        format!("{:.0}s", remaining as f64 / rate)
    } else {
        "-".into()
    };
    format!(
        "run {run}: {}/{} done, {} failed, {} in flight, {:.2}/s, ETA {eta}, tokens {} in / {} out, cost ${:.4}",
        p.done,
        p.total,
        p.failed,
        in_flight,
        rate,
        p.input_tokens,
        p.output_tokens,
        p.cost_micros as f64 / 1e6
    )
}

/// Works one run in this process until it is completed, failed, paused or cancelled, or until
/// SIGINT/SIGTERM (which puts the trials in flight back in the queue).
fn foreground(settings: Settings, pool: Pool, run: RunId, work: &WorkOpts) -> anyhow::Result<()> {
    let record = {
        let mut conn = pool.get()?;
        runs::get(&mut conn, run)?.with_context(|| format!("no run {run}"))?
    };
    let provider = settings
        .provider(&record.provider)
        .map_err(anyhow::Error::msg)?;
    let slots = provider.concurrency as usize;
    let settings = sized(settings, slots);
    let pool = if settings.pool_size > pool.max_size() {
        drop(pool);
        db::open(&settings)?
    } else {
        pool
    };
    let stop = stop_on_signals();
    let mut opts = WorkerOptions::new(slots);
    opts.only_run = Some(run);
    work.apply(&mut opts);
    let worker = Worker::new(pool.clone(), &settings, opts, stop.clone(), env);
    let started = Instant::now();
    let first = {
        let mut conn = pool.get()?;
        runs::progress(&mut conn, run)?
    };
    let threads = worker.spawn();
    let tty = std::io::stderr().is_terminal();
    let mut last_print = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let mut conn = pool.get()?;
        let p = runs::progress(&mut conn, run)?;
        let r = runs::get(&mut conn, run)?.with_context(|| format!("run {run} vanished"))?;
        drop(conn);
        let rate = (p.finished() - first.finished()) as f64 / started.elapsed().as_secs_f64();
        let line = progress_line(run, &p, rate, p.leased);
        if stop.load(Ordering::SeqCst) {
            let released = worker.release_all()?;
            eprintln!();
            println!("{line}");
            println!(
                "interrupted: {released} trials in flight returned to the queue; \
                 continue with `emotionbench run resume {run}`"
            );
            // Slot threads may be inside an HTTP call: exit without waiting for them.
            std::process::exit(130);
        }
        if tty {
            eprint!("\r{line}\x1b[K");
            let _ = std::io::stderr().flush();
        } else if last_print.elapsed() >= Duration::from_secs(5) {
            eprintln!("{line}");
            last_print = Instant::now();
        }
        if !r.is_active() {
            stop.store(true, Ordering::SeqCst);
            for t in threads {
                let _ = t.join();
            }
            let mut conn = pool.get()?;
            let p = runs::progress(&mut conn, run)?;
            if tty {
                eprintln!();
            }
            println!("{}", progress_line(run, &p, rate, p.leased));
            println!(
                "run {run} {} in {:.1}s ({} parse failures recorded)",
                r.status,
                started.elapsed().as_secs_f64(),
                p.parse_failures
            );
            return match r.status {
                RunStatus::Failed => Err(anyhow::anyhow!(
                    "run {run} failed: {}",
                    r.error.unwrap_or_default()
                )),
                _ => Ok(()),
            };
        }
    }
}

pub fn worker(settings: Settings, args: WorkerArgs) -> anyhow::Result<()> {
    if settings.providers.is_empty() {
        anyhow::bail!(
            "the config file defines no [[providers]]: a worker would have nothing to call"
        );
    }
    let slots = args.slots.unwrap_or_else(|| {
        settings
            .providers
            .iter()
            .map(|p| p.concurrency as usize)
            .sum::<usize>()
            .min(256)
    });
    let settings = sized(settings, slots);
    let pool = db::writing(&settings)?;
    let stop = stop_on_signals();
    let mut opts = WorkerOptions::new(slots);
    args.work.apply(&mut opts);
    let worker = Worker::new(pool, &settings, opts, stop.clone(), env);
    tracing::info!(owner = %worker.opts.owner, slots, "worker started");
    let _threads = worker.spawn();
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let released = worker.release_all()?;
    tracing::info!(
        released,
        "worker stopped; trials in flight returned to the queue"
    );
    std::process::exit(0);
}

pub fn runs(settings: &Settings, cmd: RunsCommand) -> anyhow::Result<()> {
    let action = match cmd {
        RunsCommand::List => return list(settings),
        RunsCommand::Show { id, trials } => return show(settings, RunId(id), trials),
        RunsCommand::Pause { id } => (id, RunAction::Pause),
        RunsCommand::Resume { id, max_cost } => {
            if let Some(usd) = max_cost {
                let pool = db::writing(settings)?;
                setup::set_budget(
                    &mut *pool.get()?,
                    RunId(id),
                    usd_to_micros(usd)?,
                    &Actor::Cli,
                )?;
                println!("run {id}: budget ${usd:.4}");
            }
            (id, RunAction::Resume)
        }
        RunsCommand::Cancel { id } => (id, RunAction::Cancel),
        RunsCommand::Score(args) => return super::freetext::score(settings, args),
        RunsCommand::TextReport(args) => return super::freetext::text_report(settings, args),
    };
    let (id, action) = action;
    let pool = db::writing(settings)?;
    let r = setup::change(&mut *pool.get()?, RunId(id), action, &Actor::Cli)?;
    println!("run {id} {}", r.status);
    Ok(())
}

fn list(settings: &Settings) -> anyhow::Result<()> {
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    println!(
        "{:>5}  {:<10} {:<12} {:<24} {:<10} {:<8} {:>7} {:>6} {:>6}",
        "ID", "STATUS", "PROVIDER", "MODEL", "TEMPLATE", "LANGUAGE", "TRIALS", "DONE", "FAILED"
    );
    for r in runs::list(&mut conn)? {
        let p = runs::progress(&mut conn, r.id)?;
        // `-`: the study's default language.
        let language = r.language()?.map_or_else(|| "-".to_owned(), String::from);
        println!(
            "{:>5}  {:<10} {:<12} {:<24} {:<10} {:<8} {:>7} {:>6} {:>6}",
            r.id, r.status, r.provider, r.model, r.template, language, p.total, p.done, p.failed
        );
    }
    Ok(())
}

fn show(settings: &Settings, run: RunId, trials: bool) -> anyhow::Result<()> {
    let pool = db::reading(settings)?;
    let mut conn = pool.get()?;
    let r = runs::get(&mut conn, run)?.with_context(|| format!("no run {run}"))?;
    let all = runs::trials(&mut conn, run)?;
    if trials {
        for t in &all {
            println!("{}", serde_json::to_string(t)?);
        }
        return Ok(());
    }
    let p = runs::progress(&mut conn, run)?;
    println!("run {}: {}", r.id, r.status);
    if let Some(e) = &r.error {
        println!("error:      {e}");
    }
    println!("provider:   {} / model {}", r.provider, r.model);
    println!("template:   {}", r.template);
    println!("protocol:   {} ({})", r.protocol(), r.protocol().describe());
    match r.language()? {
        Some(l) => println!("language:   {l}"),
        None => println!("language:   the study's default"),
    }
    println!("params:     {}", r.params.to_text()?);
    if let Some(limit) = r
        .params
        .0
        .as_ref()
        .and_then(|m| m.requested.max_cost_micros)
    {
        println!(
            "budget:     ${:.4}; spent ${:.4}",
            limit as f64 / 1e6,
            p.cost_micros as f64 / 1e6
        );
    }
    println!("selection:  {}", r.selection);
    for b in emotionbench::store::batches::of_run(&mut conn, run)? {
        println!(
            "batch:      {} {} ({} trials, created {}){}",
            b.provider_batch_id,
            b.status,
            b.trial_ids()?.len(),
            b.created_at.format("%Y-%m-%d %H:%M:%S"),
            b.error.map(|e| format!(": {e}")).unwrap_or_default()
        );
    }
    println!(
        "repeats:    {} per situation, {} default; seed {}",
        r.repeats, r.default_repeats, r.seed
    );
    println!(
        "trials:     {} total, {} done, {} failed, {} pending, {} in flight",
        p.total, p.done, p.failed, p.pending, p.leased
    );
    println!(
        "tokens:     {} in / {} out; cost ${:.4}",
        p.input_tokens,
        p.output_tokens,
        p.cost_micros as f64 / 1e6
    );
    println!("parse failures (attempts): {}", p.parse_failures);
    let cached = all.iter().filter(|t| t.cached).count();
    let with_logprobs = all
        .iter()
        .filter(|t| t.method == Some(runs::TrialMethod::Logprobs))
        .count();
    println!(
        "answers:    {cached} from the response cache; {with_logprobs} with answer distributions"
    );
    let mut classes: Vec<(&str, usize)> = Vec::new();
    for t in all.iter().filter(|t| t.status == TrialStatus::Failed) {
        let c = t.error_class.map_or("", |c| c.as_str());
        match classes.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => classes.push((c, 1)),
        }
    }
    for (c, n) in classes {
        println!("failed as {c}: {n}");
    }
    for t in all.iter().filter(|t| t.raw_reply.is_some()).take(2) {
        let reply: String = t
            .raw_reply
            .clone()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect();
        println!(
            "sample reply (trial {}, {} {} #{}): {:?}",
            t.id, t.measure, t.situation_key, t.repeat_index, reply
        );
    }
    Ok(())
}

/// `cache export FILE` / `cache import FILE`.
pub fn cache(settings: &Settings, cmd: CacheCommand) -> anyhow::Result<()> {
    match cmd {
        CacheCommand::Export { file } => {
            let pool = db::reading(settings)?;
            let (text, n) = emotionbench::app::cache::export(&mut *pool.get()?)?;
            super::write_private(&file, text.as_bytes())
                .with_context(|| format!("writing {}", file.display()))?;
            println!("{n} cached replies written to {}", file.display());
        }
        CacheCommand::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let pool = db::writing(settings)?;
            let (read, added) =
                emotionbench::app::cache::import(&mut *pool.get()?, &file, &text, &Actor::Cli)?;
            println!(
                "{read} cached replies read from {}, {added} new",
                file.display()
            );
        }
    }
    Ok(())
}
