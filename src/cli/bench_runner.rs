//! `bench runner`: the full protocol (50 default + 175 situations × 10 evoked trials) against a
//! local fake provider with a fixed latency and, optionally, a requests/min limit it enforces
//! with 429s. Prints wall time, goodput against the limit, and the 429 count.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use emotionbench::Settings;
use emotionbench::app::runs as app_runs;
use emotionbench::config::{ProviderConfig, ProviderKind};
use emotionbench::domain::run::{RunParams, Selection};
use emotionbench::domain::situation::{EMOTIONS, Situation, Valence};
use emotionbench::domain::study::{StudyConfig, StudyStatus};
use emotionbench::llm::fake::{FakeAction, FakeServer};
use emotionbench::llm::runner::{Worker, WorkerOptions};
use emotionbench::store::audit::Actor;
use emotionbench::store::runs;
use emotionbench::store::{instruments, situations, studies};

use super::db::migrated;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Latency of every fake reply, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    latency_ms: u64,
    /// Requests per minute the fake provider allows (429 above); also the client's pacing.
    #[arg(long)]
    rpm: Option<u32>,
    /// The client's concurrency.
    #[arg(long, default_value_t = 64)]
    concurrency: u32,
    /// Situations (the paper tested 175).
    #[arg(long, default_value_t = 175)]
    situations: usize,
    #[arg(long, default_value_t = 10)]
    repeats: u32,
    #[arg(long, default_value_t = 50)]
    default_repeats: u32,
}

/// The provider's side of a requests/min limit: a bucket refilled at rpm/60 per second that
/// holds one second's worth, the way hosted APIs enforce their limits.
struct ServerLimit {
    per_sec: f64,
    capacity: f64,
    state: Mutex<(f64, Instant)>,
}

impl ServerLimit {
    fn admit(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        s.0 = (s.0 + now.duration_since(s.1).as_secs_f64() * self.per_sec).min(self.capacity);
        s.1 = now;
        if s.0 >= 1.0 {
            s.0 -= 1.0;
            true
        } else {
            false
        }
    }
}

fn synthetic_situations(n: usize) -> Vec<Situation> {
    (0..n)
        .map(|i| {
            let emotion = EMOTIONS[i % EMOTIONS.len()];
            let k = i / EMOTIONS.len();
            Situation {
                key: format!("{emotion}-{}_scenario-{}", k / 5, k % 5),
                emotion: emotion.to_owned(),
                factor_index: u32::try_from(k / 5).unwrap_or(0),
                factor_name: format!("Bench factor {}", k / 5),
                scenario_index: u32::try_from(k % 5).unwrap_or(0),
                text: format!("Benchmark situation number {i}."),
                variant_of: None,
                valence: Valence::Negative,
            }
        })
        .collect()
}

pub fn runner(mut settings: Settings, args: BenchArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("emotionbench-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let result = bench(&mut settings, &args, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn bench(settings: &mut Settings, args: &BenchArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    settings.database_url = format!("sqlite://{}", dir.join("bench.db").display());
    settings.pool_size = args.concurrency.saturating_add(2).min(32);
    let latency = Duration::from_millis(args.latency_ms);
    let limit = args.rpm.map(|rpm| {
        let per_sec = f64::from(rpm) / 60.0;
        Arc::new(ServerLimit {
            per_sec,
            capacity: per_sec.max(1.0),
            state: Mutex::new((per_sec.max(1.0), Instant::now())),
        })
    });
    let (ok_count, limited) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (ok2, limited2, limit2) = (ok_count.clone(), limited.clone(), limit.clone());
    let server = FakeServer::start(move |req| {
        if let Some(l) = &limit2 {
            if !l.admit() {
                limited2.fetch_add(1, Ordering::Relaxed);
                return FakeAction::status(429, &[("retry-after", "1")]);
            }
        }
        ok2.fetch_add(1, Ordering::Relaxed);
        FakeAction::answer(req, 3, latency)
    })?;
    let mut provider = ProviderConfig::new("bench", ProviderKind::Openai, &server.base_url());
    provider.concurrency = args.concurrency.max(1);
    provider.requests_per_minute = args.rpm;
    settings.providers = vec![provider];

    let pool = migrated(settings)?;
    let run = {
        let mut conn = pool.get()?;
        let instrument = instruments::ensure_builtin(&mut conn)?;
        situations::import(
            &mut conn,
            "bench",
            "synthetic (bench runner)",
            &synthetic_situations(args.situations),
        )?;
        let set = situations::find_set(&mut conn, "bench")?.context("bench set")?;
        studies::create(
            &mut conn,
            &StudyConfig::new("bench", "Runner benchmark"),
            StudyStatus::Draft,
            studies::Sources::new(instrument, Some(set)),
            1,
        )?;
        app_runs::create(
            &mut conn,
            settings,
            &app_runs::RunRequest {
                study: "bench".into(),
                instrument: None,
                provider: "bench".into(),
                model: "fake".into(),
                template: "eb-code".into(),
                repeats: args.repeats,
                default_repeats: args.default_repeats,
                selection: Selection::All,
                seed: Some(1),
                params: RunParams::default(),
                language: None,
            },
            &Actor::Cli,
        )?
    };
    println!(
        "bench: {} trials, latency {} ms, concurrency {}, limit {}",
        run.trials,
        args.latency_ms,
        args.concurrency,
        args.rpm
            .map_or("none".to_owned(), |r| format!("{r} requests/min"))
    );
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = WorkerOptions::new(args.concurrency as usize);
    opts.only_run = Some(run.run);
    opts.idle_poll = Duration::from_millis(50);
    let worker = Worker::new(pool.clone(), settings, opts, stop.clone(), |_| None);
    let started = Instant::now();
    let threads = worker.spawn();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let mut conn = pool.get()?;
        let r = runs::get(&mut conn, run.run)?.context("run vanished")?;
        if !r.is_active() {
            break;
        }
    }
    let wall = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    let mut conn = pool.get()?;
    let p = runs::progress(&mut conn, run.run)?;
    let (answered, rejected) = (
        ok_count.load(Ordering::Relaxed),
        limited.load(Ordering::Relaxed),
    );
    let calls = answered + rejected;
    println!("done {} failed {} in {wall:.1} s", p.done, p.failed);
    println!(
        "throughput {:.1} trials/s ({:.0}/min)",
        p.done as f64 / wall,
        p.done as f64 / wall * 60.0
    );
    if let Some(rpm) = args.rpm {
        println!(
            "goodput {:.1} % of the {rpm}/min limit",
            100.0 * (p.done as f64 / wall * 60.0) / f64::from(rpm)
        );
    }
    println!(
        "429 answers {rejected} of {calls} calls ({:.2} %)",
        if calls > 0 {
            100.0 * rejected as f64 / calls as f64
        } else {
            0.0
        }
    );
    Ok(())
}
