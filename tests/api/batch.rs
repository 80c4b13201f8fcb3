//! Runs through the providers' batch APIs (#17) against the fake provider's batch endpoints
//! (`llm::fake_batch`): a 1,800-trial run in a handful of batch calls, unreadable lines in a
//! follow-up batch, the batch price, and a worker killed while its batch is open replaced by
//! one that collects the same batch.

use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use emotionbench::llm::fake::{FakeAction, FakeRequest, FakeServer};
use emotionbench::llm::fake_batch::BatchFake;
use emotionbench::store::runs::{self, TrialRecord};
use emotionbench::store::{RunId, batches, db};

use crate::helpers::{TestDb, ok};
use crate::on_both_backends;
use crate::runs::{
    Config, assert_each_trial_done_once, command, config, eb, provider, run_id, run_status,
};

const PRICES: &str = "price_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0";

fn trials(db: &TestDb, run: RunId) -> Vec<TrialRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    runs::trials(&mut pool.get().unwrap(), run).unwrap()
}

fn stored_batches(db: &TestDb, run: RunId) -> Vec<batches::Batch> {
    let pool = db::connect(&db.url, 1).unwrap();
    batches::of_run(&mut pool.get().unwrap(), run).unwrap()
}

/// The requests the fake saw whose method and path match.
fn count(server: &FakeServer, method: &str, f: impl Fn(&str) -> bool) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == method && f(&r.path))
        .count()
}

/// A fake whose batch lines answer 3 to every item, except the first `garbage` lines, which
/// answer text no parser reads.
fn batch_server(garbage: u32) -> (FakeServer, BatchFake) {
    let left = Arc::new(AtomicU32::new(garbage));
    let fake = BatchFake::new(move |req: &FakeRequest| {
        let bad = left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if bad {
            FakeAction::text(req, "I would rather not say.", Duration::ZERO)
        } else {
            FakeAction::answer(req, 3, Duration::ZERO)
        }
    });
    let handler = fake.clone();
    let server = FakeServer::start(move |req| {
        // The synchronous endpoints answer 500: a batch run must not use them.
        handler
            .handle(req)
            .unwrap_or_else(|| FakeAction::status(500, &[]))
    })
    .unwrap();
    (server, fake)
}

fn demo(db: &TestDb) {
    let pool = db.pool();
    emotionbench::app::demo::load_demo(&mut pool.get().unwrap()).unwrap();
}

fn a_1800_trial_batch_run_completes_in_a_handful_of_batch_calls(db: TestDb) {
    demo(&db);
    for kind in ["openai", "anthropic"] {
        let (server, _fake) = batch_server(6);
        let cfg = config(&[provider("fake", kind, &server.base_url(), PRICES)]);
        let out = ok(eb(
            &db,
            &cfg,
            &[
                "run",
                "--study",
                "demo",
                "--provider",
                "fake",
                "--model",
                "m",
                "--default-repeats",
                "200",
                "--repeats",
                "100",
                "--seed",
                "5",
                "--batch",
                "--batch-poll-seconds",
                "0.2",
            ],
            &[],
        ));
        assert!(out.contains("1800 trials"), "{out}");
        let run = run_id(&out);
        assert_eq!(run_status(&db, run).0, "completed", "{kind}: {out}");
        let ts = trials(&db, run);
        assert!(ts.iter().all(|t| t.status.as_str() == "done"), "{kind}");
        // Six unreadable lines went into a second batch, and read there.
        let twice: Vec<&TrialRecord> = ts.iter().filter(|t| t.attempts == 2).collect();
        assert_eq!(twice.len(), 6, "{kind}");
        assert_eq!(
            ts.iter().filter(|t| t.attempts == 1).count(),
            1794,
            "{kind}"
        );
        let b = stored_batches(&db, run);
        assert_eq!(b.len(), 2, "{kind}: {b:?}");
        assert!(b.iter().all(|b| b.status == "collected"));
        assert_eq!(b[0].trial_ids().unwrap().len(), 1800);
        assert_eq!(b[1].trial_ids().unwrap().len(), 6);
        // The batch price: half of what the same tokens cost synchronously.
        for t in &ts {
            let (i, o) = (t.input_tokens.unwrap(), t.output_tokens.unwrap());
            let sync = i as f64 * 1.0 + o as f64 * 2.0;
            assert_eq!(t.cost_micros, Some((sync * 0.5).round() as i64), "{t:?}");
        }
        let creates = match kind {
            "openai" => {
                assert_eq!(count(&server, "POST", |p| p == "/v1/files"), 2);
                count(&server, "POST", |p| p == "/v1/batches")
            }
            _ => count(&server, "POST", |p| p == "/v1/messages/batches"),
        };
        assert_eq!(creates, 2, "{kind}");
        assert_eq!(
            count(&server, "POST", |p| p.ends_with("/chat/completions")
                || p.ends_with("/messages")),
            0
        );
        let all = server.requests().len();
        assert!(all <= 16, "{kind}: {all} provider calls for 1,800 trials");
        eprintln!("{kind}: 1800 trials in {all} provider calls");
        let show = ok(eb(&db, &cfg, &["runs", "show", &run.0.to_string()], &[]));
        assert!(
            show.contains(&format!(
                "batch:      {} collected (1800 trials",
                b[0].provider_batch_id
            )),
            "{show}"
        );
    }
}

on_both_backends!(a_1800_trial_batch_run_completes_in_a_handful_of_batch_calls);

fn worker(db: &TestDb, cfg: &Config) -> Child {
    command(
        db,
        cfg,
        &[
            "worker",
            "--lease-seconds",
            "2",
            "--batch-poll-seconds",
            "0.2",
        ],
        &[],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn a_worker_killed_mid_batch_is_replaced_by_one_that_collects_the_same_batch(db: TestDb) {
    demo(&db);
    let (server, fake) = batch_server(0);
    fake.hold(true);
    let cfg = config(&[provider("fake", "openai", &server.base_url(), PRICES)]);
    let out = ok(eb(
        &db,
        &cfg,
        &[
            "run",
            "--study",
            "demo",
            "--provider",
            "fake",
            "--model",
            "m",
            "--default-repeats",
            "40",
            "--repeats",
            "0",
            "--batch",
            "--detach",
        ],
        &[],
    ));
    let run = run_id(&out);
    let polls = |s: &FakeServer| count(s, "GET", |p| p.starts_with("/v1/batches/"));
    let mut first = worker(&db, &cfg);
    wait_for("the batch to be submitted and polled", || {
        polls(&server) >= 2
    });
    // kill -9 while the provider still works on the batch.
    first.kill().unwrap();
    first.wait().unwrap();
    let open = stored_batches(&db, run);
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].status, "submitted");
    let seen = polls(&server);
    let mut second = worker(&db, &cfg);
    wait_for("the new worker to poll the same batch", || {
        polls(&server) > seen + 1
    });
    fake.hold(false);
    wait_for("the run to complete", || {
        run_status(&db, run).0 == "completed"
    });
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(
        count(&server, "POST", |p| p == "/v1/batches"),
        1,
        "the batch was sent again"
    );
    assert_eq!(count(&server, "POST", |p| p == "/v1/files"), 1);
    assert_eq!(
        count(&server, "POST", |p| p.ends_with("/chat/completions")),
        0
    );
    assert_each_trial_done_once(&db, run, 40);
    let b = stored_batches(&db, run);
    assert_eq!((b.len(), b[0].status.as_str()), (1, "collected"));
    assert_eq!(b[0].provider_batch_id, open[0].provider_batch_id);
}

on_both_backends!(a_worker_killed_mid_batch_is_replaced_by_one_that_collects_the_same_batch);
