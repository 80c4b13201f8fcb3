//! `runs score` and `runs text-report`: free-text answers scored and reported (#18).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use emotionbench::Settings;
use emotionbench::app;
use emotionbench::scorer::Scorer;
use emotionbench::scorer::worker::{self, ScoreOptions};
use emotionbench::store::RunId;
use emotionbench::store::audit::Actor;

use super::db;
use super::signals::stop_on_signals;

#[derive(clap::Args)]
pub struct ScoreArgs {
    /// The free-text runs whose answers are scored (comma-separated ids).
    #[arg(long = "runs", alias = "run", value_delimiter = ',', required = true)]
    runs: Vec<RunId>,
    /// A `[[scorers]]` name from the config file.
    #[arg(long)]
    scorer: String,
    /// Requests in flight at most (default: the scorer's concurrency).
    #[arg(long)]
    slots: Option<usize>,
    /// Seconds a claimed answer stays leased without renewal (renewed at every attempt); a
    /// killed scorer's answers are claimed again once it ends.
    #[arg(long, default_value_t = 120)]
    lease_seconds: u64,
}

pub fn score(settings: &Settings, args: ScoreArgs) -> anyhow::Result<()> {
    let config = settings
        .scorer(&args.scorer)
        .map_err(anyhow::Error::msg)?
        .clone();
    let slots = args.slots.unwrap_or(config.concurrency as usize).max(1);
    let scorer = Scorer::new(config, &settings.providers, |k| std::env::var(k).ok())
        .map_err(anyhow::Error::msg)?;
    let pool = db::writing(settings)?;
    let queued =
        app::freetext::queue_scores(&mut *pool.get()?, &args.runs, &args.scorer, &Actor::Cli)?;
    println!("queued {queued} answers for scorer {}", args.scorer);
    let opts = ScoreOptions {
        owner: format!("score-{}-{:08x}", std::process::id(), rand::random::<u32>()),
        lease: Duration::from_secs(args.lease_seconds.max(1)),
        slots,
        idle_poll: Duration::from_millis(250),
    };
    let stop = stop_on_signals();
    let result = worker::work(&pool, Arc::new(scorer), &args.runs, &opts, stop.clone());
    let p = result?;
    println!(
        "scorer {}: {} scored, {} failed, {} pending, {} leased",
        args.scorer, p.done, p.failed, p.pending, p.leased
    );
    if stop.load(Ordering::SeqCst) {
        println!("interrupted: answers in flight returned to the queue; run it again to go on");
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct TextReportArgs {
    /// The free-text runs, one cohort each (comma-separated ids).
    #[arg(long = "runs", alias = "run", value_delimiter = ',', required = true)]
    runs: Vec<RunId>,
    /// The scorer whose scores are reported.
    #[arg(long)]
    scorer: String,
    /// md or json.
    #[arg(long, default_value = "md")]
    format: String,
    /// Write here instead of standard output (created readable by its owner only).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

pub fn text_report(settings: &Settings, args: TextReportArgs) -> anyhow::Result<()> {
    let pool = db::reading(settings)?;
    let r = app::freetext::report(&mut *pool.get()?, &args.runs, &args.scorer)?;
    let text = match args.format.as_str() {
        "md" => emotionbench::export::freetext::markdown(&r),
        "json" => serde_json::to_string_pretty(&r)? + "\n",
        other => anyhow::bail!("--format {other:?}: md or json"),
    };
    match args.output {
        Some(path) => super::write_private(&path, text.as_bytes())?,
        None => print!("{text}"),
    }
    Ok(())
}
