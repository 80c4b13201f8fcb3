//! `--max-cost` (#17): a run pauses at its budget, within one in-flight window of it, and goes
//! on only with a higher one.

use std::time::Duration;

use emotionbench::llm::fake::{FakeAction, FakeServer};
use emotionbench::store::runs::{self, TrialRecord};
use emotionbench::store::{RunId, db};

use crate::helpers::{TestDb, ok, stderr};
use crate::on_both_backends;
use crate::runs::{config, eb, provider, run_id, run_status};

const CONCURRENCY: i64 = 4;

fn trials(db: &TestDb, run: RunId) -> Vec<TrialRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    runs::trials(&mut pool.get().unwrap(), run).unwrap()
}

/// (spent, the most one trial cost, done trials).
fn spending(db: &TestDb, run: RunId) -> (i64, i64, usize) {
    let ts = trials(db, run);
    let costs: Vec<i64> = ts.iter().filter_map(|t| t.cost_micros).collect();
    let done = ts.iter().filter(|t| t.status.as_str() == "done").count();
    (
        costs.iter().sum(),
        costs.iter().copied().max().unwrap_or(0),
        done,
    )
}

/// Paused at `limit`: reached it, and passed it by at most the trials that were in flight.
fn assert_paused_within_a_window(db: &TestDb, run: RunId, limit: i64, sent: usize) {
    let (status, error) = run_status(db, run);
    assert_eq!(status, "paused", "paused, not failed: {error:?}");
    let error = error.unwrap_or_default();
    assert!(error.contains("paused at its budget"), "{error}");
    let (spent, per_trial, done) = spending(db, run);
    assert!(spent >= limit, "paused before the limit: {spent} < {limit}");
    assert!(
        spent <= limit + CONCURRENCY * per_trial,
        "spent {spent}: more than one window ({CONCURRENCY} x {per_trial}) over {limit}"
    );
    assert!(done < 60, "the budget stopped the run before its end");
    // Every request the provider saw is a recorded trial: nothing was sent past the pause.
    assert_eq!(sent, done);
}

fn a_run_pauses_at_its_budget_within_one_in_flight_window(db: TestDb) {
    let pool = db.pool();
    emotionbench::app::demo::load_demo(&mut pool.get().unwrap()).unwrap();
    let server =
        FakeServer::start(|req| FakeAction::answer(req, 3, Duration::from_millis(40))).unwrap();
    let priced = format!(
        "concurrency = {CONCURRENCY}\nprice_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0"
    );
    let cfg = config(&[
        provider("fake", "openai", &server.base_url(), &priced),
        provider("unpriced", "openai", &server.base_url(), ""),
    ]);
    let args = |p: &'static str, usd: &'static str| {
        vec![
            "run",
            "--study",
            "demo",
            "--provider",
            p,
            "--model",
            "m",
            "--default-repeats",
            "60",
            "--repeats",
            "0",
            "--max-cost",
            usd,
        ]
    };
    // Without prices every cost is unknown and the limit would never be reached: refused.
    let refused = eb(&db, &cfg, &args("unpriced", "0.01"), &[]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("price_input_per_mtok"),
        "{}",
        stderr(&refused)
    );
    assert!(server.requests().is_empty());

    // A PANAS trial here costs about $0.0004: $0.004 is about ten of sixty.
    let out = ok(eb(&db, &cfg, &args("fake", "0.004"), &[]));
    let run = run_id(&out);
    assert!(out.contains(&format!("run {run} paused")), "{out}");
    assert_paused_within_a_window(&db, run, 4_000, server.requests().len());
    let show = ok(eb(&db, &cfg, &["runs", "show", &run.0.to_string()], &[]));
    assert!(show.contains(&format!("run {run}: paused")), "{show}");
    assert!(show.contains("paused at its budget"), "{show}");
    assert!(show.contains("budget:     $0.0040"), "{show}");

    // Resumed at the same budget it sends nothing and pauses again.
    let id = run.0.to_string();
    let before = server.requests().len();
    ok(eb(&db, &cfg, &["run", "resume", &id], &[]));
    assert_eq!(
        server.requests().len(),
        before,
        "nothing sent over the budget"
    );
    assert_eq!(run_status(&db, run).0, "paused");

    // A higher budget lets it go on to the new limit.
    ok(eb(
        &db,
        &cfg,
        &["runs", "resume", &id, "--max-cost", "0.008"],
        &[],
    ));
    ok(eb(&db, &cfg, &["run", "resume", &id], &[]));
    assert_paused_within_a_window(&db, run, 8_000, server.requests().len());
    assert!(server.requests().len() > before);
}

on_both_backends!(a_run_pauses_at_its_budget_within_one_in_flight_window);
