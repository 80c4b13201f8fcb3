//! `bench …`: benchmarks and load generators (loopback only, bounded). The figures they print
//! are in BENCHMARKS.md; `bench runner` is in `bench_runner.rs`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use emotionbench::bench::tempdb::TempDb;
use emotionbench::store::{self, db};
use emotionbench::{Settings, app};

use super::bench_runner;

#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// The full protocol (50 default + 1,750 evoked trials) against a local fake provider.
    Runner(bench_runner::BenchArgs),
    /// Generate a study in a temporary SQLite database and time the live monitor's queries.
    Monitor {
        /// Participants to generate (completed).
        #[arg(long, default_value_t = 100_000)]
        participants: usize,
        /// Timed loads of the monitor (the median is reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Drive real HTTP participants through the whole survey and report throughput and latency.
    Survey(BenchSurveyArgs),
    /// Generate a study in a temporary SQLite database and time the long export of it.
    Export {
        /// Completed participants to generate (40 long rows each).
        #[arg(long, default_value_t = 25_000)]
        participants: usize,
        /// Write the CSV here (default: discard it).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Generate humans and model runs in a temporary SQLite database and time the full report.
    Report {
        #[arg(long, default_value_t = 1266)]
        participants: usize,
        #[arg(long, default_value_t = 10)]
        models: usize,
        /// Trials per model (50 default-measure, the rest evoked).
        #[arg(long, default_value_t = 1800)]
        trials: usize,
        /// Timed runs (the median is reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// The alignment's bootstrap resamples and ceiling splits (the report's default; 0
        /// times the report without them).
        #[arg(long, default_value_t = emotionbench::domain::observation::DEFAULT_RESAMPLES)]
        resamples: usize,
    },
    /// Create an open study for load tests on DATABASE_URL (the demo situations, PANAS,
    /// shuffled items, no minimum reading time).
    PrepareStudy {
        #[arg(long, default_value = "bench")]
        slug: String,
        /// Completed participants wanted per situation.
        #[arg(long, default_value_t = 1_000_000)]
        target: i32,
    },
}

#[derive(clap::Args)]
pub struct BenchSurveyArgs {
    /// Server base URL (loopback only), e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// The study's slug.
    #[arg(long)]
    study: String,
    /// Participants in flight at once.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// Number of participants to run.
    #[arg(long, conflicts_with = "duration")]
    participants: Option<u64>,
    /// Seconds to keep starting participants.
    #[arg(long)]
    duration: Option<u64>,
    /// Mean time on a page before submitting it, in milliseconds; each pause is drawn
    /// uniformly from ½ to 1½ times this (0: submit at once).
    #[arg(long, default_value_t = 0)]
    think_ms: u64,
    /// Start the virtual participants spread evenly over this many milliseconds rather than
    /// all at once.
    #[arg(long, default_value_t = 0)]
    ramp_ms: u64,
    /// Report this server process's CPU time per completed participant.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Afterwards check in this database that every completed participant has exactly its 40
    /// answers stored, none twice.
    #[arg(long, value_name = "DATABASE_URL")]
    verify: Option<String>,
    /// Send a request again, at most this many times, when it fails in transit (connection
    /// error, or 502/503/504 from a proxy or a server without its database). Safe for the
    /// survey's POSTs: a page submit that was already stored is not stored twice (the page
    /// state machine redirects the resend to the current page). Resends are counted.
    #[arg(long, default_value_t = 0)]
    retries: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(settings: Settings, cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Runner(args) => bench_runner::runner(settings, args),
        BenchCommand::Monitor { participants, runs } => bench_monitor(participants, runs),
        BenchCommand::Survey(args) => bench_survey(args),
        BenchCommand::Export {
            participants,
            output,
        } => bench_export(participants, output.as_deref()),
        BenchCommand::Report {
            participants,
            models,
            trials,
            runs,
            resamples,
        } => bench_report(participants, models, trials, runs, resamples),
        BenchCommand::PrepareStudy { slug, target } => {
            let pool = super::db::writing(&settings)?;
            if app::demo::prepare_bench_study(&mut *pool.get()?, &slug, target)? {
                println!("created open study {slug} (target {target} per situation)");
            } else {
                println!("study {slug} exists already");
            }
            Ok(())
        }
    }
}

fn bench_survey(a: BenchSurveyArgs) -> anyhow::Result<()> {
    use emotionbench::bench::survey;
    let cfg = survey::Config {
        url: a.url,
        study: a.study.clone(),
        concurrency: a.concurrency,
        participants: a.participants,
        duration: a.duration.map(std::time::Duration::from_secs),
        think: std::time::Duration::from_millis(a.think_ms),
        ramp: std::time::Duration::from_millis(a.ramp_ms),
        server_pid: a.server_pid,
        pid_prefix: format!("bench{}x", std::process::id()),
        retries: a.retries,
    };
    let report = survey::run(&cfg)?;
    let verification = match &a.verify {
        Some(url) => {
            let pool = db::connect(url, 1)?;
            let mut conn = pool.get()?;
            Some(survey::verify(
                &mut conn,
                &a.study,
                &report.completed_pids,
                40,
            )?)
        }
        None => None,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"report": report, "verify": verification})
            )?
        );
    } else {
        print_survey_report(&report, verification.as_ref(), a.concurrency);
    }
    let failed = report.errors > 0
        || verification
            .as_ref()
            .is_some_and(|v| !v.incomplete.is_empty() || v.duplicates > 0);
    anyhow::ensure!(!failed, "the run had errors or lost/duplicated answers");
    Ok(())
}

fn print_survey_report(
    r: &emotionbench::bench::survey::Report,
    v: Option<&emotionbench::bench::survey::Verification>,
    concurrency: usize,
) {
    println!(
        "participants: {} started, {} completed, {} errors",
        r.started, r.completed, r.errors
    );
    for e in &r.error_samples {
        println!("  error: {e}");
    }
    if r.retries > 0 {
        println!(
            "resent:       {} requests after a connection error or 502/503/504",
            r.retries
        );
    }
    println!(
        "throughput:   {:.1} completed participants/s, {:.0} requests/s over {:.1} s at concurrency {concurrency}",
        r.completed_per_second, r.requests_per_second, r.wall_seconds
    );
    println!(
        "{:<26} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "latency (ms)", "requests", "p50", "p95", "p99", "max"
    );
    for p in r.pages.iter().chain(r.overall.as_ref()) {
        println!(
            "{:<26} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            p.page, p.requests, p.p50_ms, p.p95_ms, p.p99_ms, p.max_ms
        );
    }
    println!(
        "load generator CPU: {:.2} s ({:.0}% of one core)",
        r.own_cpu_seconds,
        r.own_cpu_share * 100.0
    );
    if let (Some(s), Some(per)) = (r.server_cpu_seconds, r.server_cpu_ms_per_participant) {
        println!("server CPU:   {s:.2} s, {per:.2} ms per completed participant");
    }
    if let Some(v) = v {
        println!(
            "verify:       {} checked, {} with exactly 40 answers, {} incomplete, {} duplicate rows",
            v.checked,
            v.complete,
            v.incomplete.len(),
            v.duplicates
        );
    }
}

fn bench_monitor(participants: usize, runs: usize) -> anyhow::Result<()> {
    let bench = TempDb::new()?;
    let mut conn = bench.conn()?;
    let started = std::time::Instant::now();
    app::demo::generate_study(&mut conn, "bench", participants, 1)?;
    println!(
        "generated {participants} participants in {:.1} s (SQLite, temporary)",
        started.elapsed().as_secs_f64()
    );
    let study =
        store::studies::load(&mut conn, "bench")?.context("the generated study is missing")?;
    // Each round times, side by side: the monitor's queries without the evidence block, the
    // evidence block "cold" (a server's first load after it starts: no participant's answers
    // kept, as every load was before `MonitorInputs`), and "live" (the same server's next load
    // after NEW_PER_ROUND more participants completed). Wall time and this process's CPU
    // time (the machine is shared: CPU time is the steadier of the two).
    const NEW_PER_ROUND: usize = 20;
    let inputs = app::evidence::MonitorInputs::default();
    let timed = |f: &mut dyn FnMut() -> anyhow::Result<()>| -> anyhow::Result<(f64, f64)> {
        let cpu = emotionbench::bench::cpu::cpu_time(None).unwrap_or_default();
        let t = std::time::Instant::now();
        f()?;
        let wall = t.elapsed().as_secs_f64() * 1000.0;
        let cpu = emotionbench::bench::cpu::cpu_time(None).unwrap_or_default() - cpu;
        Ok((wall, cpu.as_secs_f64() * 1000.0))
    };
    let evidence = |conn: &mut store::DbConnection,
                    inputs: &app::evidence::MonitorInputs,
                    expected: usize|
     -> anyhow::Result<()> {
        let e = app::evidence::monitor_counts(conn, &study, inputs)?;
        anyhow::ensure!(
            e.assessed == expected.min(2_000),
            "the evidence block is not bounded"
        );
        Ok(())
    };
    let (mut queries, mut cold, mut live) = (Vec::new(), Vec::new(), Vec::new());
    let mut total = participants;
    evidence(&mut conn, &inputs, total)?;
    for round in 0..runs.max(1) {
        queries.push(timed(&mut || {
            let m = store::monitor::load(&mut conn, &study)?;
            anyhow::ensure!(m.counts.completed as usize == total, "unexpected counts");
            Ok(())
        })?);
        cold.push(timed(&mut || {
            evidence(&mut conn, &app::evidence::MonitorInputs::default(), total)
        })?);
        app::demo::generate_more(&mut conn, "bench", total, NEW_PER_ROUND, round as u64)?;
        total += NEW_PER_ROUND;
        live.push(timed(&mut || evidence(&mut conn, &inputs, total))?);
        anyhow::ensure!(
            inputs.kept(study.id) == total.min(2_000),
            "the kept inputs are not the window's"
        );
    }
    let median = |v: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| {
        let mut x: Vec<f64> = v.iter().map(pick).collect();
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    let (qw, qc) = (median(&queries, |t| t.0), median(&queries, |t| t.1));
    println!("{} loads, medians (wall / CPU):", queries.len());
    println!("  monitor queries, without the evidence block: {qw:.1} / {qc:.0} ms");
    for (what, v) in [
        ("evidence block, cold (a server's first load)", &cold),
        (
            "evidence block, live (20 new completions since the last load)",
            &live,
        ),
    ] {
        let (w, c) = (median(v, |t| t.0), median(v, |t| t.1));
        println!(
            "  {what}: {w:.1} / {c:.0} ms; page with it / without: {:.2} (wall), {:.2} (CPU)",
            (qw + w) / qw,
            (qc + c) / qc.max(1.0)
        );
    }
    Ok(())
}

fn bench_export(participants: usize, output: Option<&Path>) -> anyhow::Result<()> {
    let bench = TempDb::new()?;
    let mut conn = bench.conn()?;
    let started = std::time::Instant::now();
    let study = app::demo::generate_study(&mut conn, "bench", participants, 1)?;
    let generated = started.elapsed();
    let rss_before = emotionbench::bench::cpu::peak_rss().map(|b| b / 1024);
    let started = std::time::Instant::now();
    let stats = match output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            emotionbench::export::write_long(
                &mut conn,
                study,
                store::cohorts::StatusFilter::Completed.into(),
                emotionbench::export::Cells::Neutralised,
                file,
            )?
        }
        None => emotionbench::export::write_long(
            &mut conn,
            study,
            store::cohorts::StatusFilter::Completed.into(),
            emotionbench::export::Cells::Neutralised,
            std::io::sink(),
        )?,
    };
    let took = started.elapsed().as_secs_f64();
    let rss_after = emotionbench::bench::cpu::peak_rss().map(|b| b / 1024);
    println!(
        "generated {participants} participants in {:.1} s (SQLite, temporary)",
        generated.as_secs_f64()
    );
    println!(
        "long export: {} rows in {:.2} s = {:.0} rows/s",
        stats.rows,
        took,
        stats.rows as f64 / took.max(1e-9)
    );
    let mib = |k: Option<u64>| {
        k.map_or("unknown".to_owned(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "peak memory (VmHWM): {} before the export, {} after",
        mib(rss_before),
        mib(rss_after)
    );
    Ok(())
}

fn bench_report(
    participants: usize,
    models: usize,
    trials: usize,
    runs: usize,
    resamples: usize,
) -> anyhow::Result<()> {
    use emotionbench::domain::report::{Mode, Options};
    let bench = TempDb::new()?;
    let mut conn = bench.conn()?;
    let started = std::time::Instant::now();
    app::demo::generate_study(&mut conn, "bench", participants, 1)?;
    app::demo::generate_model_runs(&mut conn, "bench", models, trials, 2)?;
    println!(
        "generated {participants} participants and {models} models x {trials} trials in {:.1} s (SQLite, temporary)",
        started.elapsed().as_secs_f64()
    );
    for mode in [Mode::Paper, Mode::Default] {
        let options = Options {
            mode,
            resamples,
            ..Options::default()
        };
        let mut times = Vec::with_capacity(runs.max(1));
        let mut cohorts = 0;
        for _ in 0..runs.max(1) {
            let t = std::time::Instant::now();
            let report = app::report::report(
                &mut conn,
                &app::report::ReportRequest::new("bench", options),
            )?;
            let text = emotionbench::export::report::render(
                &report,
                emotionbench::export::report::Format::Json,
                emotionbench::export::Cells::Neutralised,
            )?;
            times.push(t.elapsed().as_secs_f64());
            cohorts = report.cohorts.len();
            std::hint::black_box(text);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "report ({mode:?} mode, {cohorts} cohorts, read + score + statistics + alignment with {} bootstrap resamples, {} ceiling splits and the null baselines + JSON): median {:.3} s over {} runs (min {:.3}, max {:.3})",
            options.resamples,
            options.resamples,
            times[times.len() / 2],
            times.len(),
            times[0],
            times[times.len() - 1]
        );
    }
    Ok(())
}
