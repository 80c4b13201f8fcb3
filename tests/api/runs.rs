//! Model runs through the real binary against a local fake provider: the queue, faults, wire
//! formats, resume after kill -9, two workers on Postgres, prompts, and a real local model.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use emotionbench::llm::fake::{FakeAction, FakeServer};
use emotionbench::store::runs::{self, AttemptRecord, TrialRecord};
use emotionbench::store::{RunId, db};

use crate::helpers::{Backend, TestDb, in_ci, missing, ok, stderr, stdout, upstream};
use crate::on_both_backends;

/// A database with the demo study (PANAS; two situations per emotion).
fn with_demo(db: &TestDb) {
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    emotionbench::app::demo::load_demo(&mut conn).unwrap();
}

/// A config file with these `[[providers]]` bodies.
pub(crate) struct Config {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) path: PathBuf,
}

pub(crate) fn config(providers: &[String]) -> Config {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("emotionbench.toml");
    let text: String = providers
        .iter()
        .map(|p| format!("[[providers]]\n{p}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    Config { dir, path }
}

pub(crate) fn provider(name: &str, kind: &str, url: &str, extra: &str) -> String {
    format!("name = \"{name}\"\nkind = \"{kind}\"\nbase_url = \"{url}\"\n{extra}\n")
}

pub(crate) fn command(db: &TestDb, cfg: &Config, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_emotionbench"));
    c.arg("--config")
        .arg(&cfg.path)
        .args(args)
        .current_dir(cfg.dir.path())
        .env("DATABASE_URL", &db.url)
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "warn");
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

pub(crate) fn eb(db: &TestDb, cfg: &Config, args: &[&str], envs: &[(&str, &str)]) -> Output {
    command(db, cfg, args, envs).output().unwrap()
}

/// `emotionbench run --study demo --provider PROVIDER --model MODEL` with `more` arguments.
pub(crate) fn demo_run(
    db: &TestDb,
    cfg: &Config,
    provider: &str,
    model: &str,
    more: &[&str],
    envs: &[(&str, &str)],
) -> Output {
    let mut args = vec![
        "run",
        "--study",
        "demo",
        "--provider",
        provider,
        "--model",
        model,
    ];
    args.extend_from_slice(more);
    eb(db, cfg, &args, envs)
}

pub(crate) fn run_id(out: &str) -> RunId {
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("run ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no run id in {out}"));
    RunId(id)
}

fn trials(db: &TestDb, run: RunId) -> Vec<TrialRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    runs::trials(&mut conn, run).unwrap()
}

fn attempts(db: &TestDb, run: RunId) -> Vec<AttemptRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    runs::attempts(&mut conn, run).unwrap()
}

pub(crate) fn run_status(db: &TestDb, run: RunId) -> (String, Option<String>) {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let r = runs::get(&mut conn, run).unwrap().unwrap();
    (r.status.to_string(), r.error)
}

fn scores(t: &TrialRecord) -> Vec<i32> {
    t.scores.as_ref().map(|s| s.0.clone()).unwrap_or_default()
}

/// Answers every request with valid PANAS answers after `delay`.
fn answering(delay: Duration) -> FakeServer {
    FakeServer::start(move |req| FakeAction::answer(req, 3, delay)).unwrap()
}

// -------------------------------------------------------------------------------------------
// The queue and a run end to end
// -------------------------------------------------------------------------------------------

fn a_run_creates_every_trial_and_completes_each_once_with_its_record(db: TestDb) {
    with_demo(&db);
    let server = answering(Duration::from_millis(20));
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 3\nprice_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0",
    )]);
    let out = ok(demo_run(
        &db,
        &cfg,
        "fake",
        "m1",
        &[
            "--default-repeats",
            "2",
            "--repeats",
            "2",
            "--situations",
            "emotion:Anger",
            "--seed",
            "7",
        ],
        &[],
    ));
    assert!(out.contains("6 trials, seed 7"), "{out}");
    assert!(out.contains("completed"), "{out}");
    let run = run_id(&out);
    let ts = trials(&db, run);
    assert_eq!(ts.len(), 6);
    assert_eq!(
        ts.iter()
            .filter(|t| t.measure.as_str() == "default")
            .count(),
        2
    );
    assert_eq!(
        ts.iter()
            .filter(|t| t.situation_key.starts_with("Anger"))
            .count(),
        4
    );
    for t in &ts {
        assert_eq!(t.status.as_str(), "done", "{t:?}");
        assert_eq!(t.attempts, 1);
        assert_eq!(scores(t), vec![3; 20]);
        let request: serde_json::Value =
            serde_json::from_str(t.request.as_deref().unwrap()).unwrap();
        assert_eq!(request["model"], "m1");
        assert_eq!(request["temperature"], 0.0);
        assert!(t.raw_reply.as_deref().unwrap().starts_with("1. 3\n2. 3"));
        assert!(t.input_tokens.unwrap() > 0 && t.output_tokens.unwrap() > 0);
        assert!(t.cost_micros.unwrap() > 0);
        assert!(t.latency_ms.unwrap() >= 20);
    }
    // Orders are per trial, and the evoked prompt carries the situation.
    let orders: std::collections::HashSet<&Vec<u32>> = ts.iter().map(|t| &t.item_order.0).collect();
    assert_eq!(orders.len(), 6);
    let evoked = ts.iter().find(|t| t.measure.as_str() == "evoked").unwrap();
    assert!(
        evoked
            .request
            .as_deref()
            .unwrap()
            .contains("Imagine you are the protagonist in the scenario:")
    );
    // Exactly one request per trial reached the provider.
    assert_eq!(server.requests().len(), 6);

    let list = ok(eb(&db, &cfg, &["runs", "list"], &[]));
    assert!(list.contains("completed") && list.contains("m1"), "{list}");
    let show = ok(eb(&db, &cfg, &["runs", "show", &run.0.to_string()], &[]));
    assert!(show.contains("6 total, 6 done, 0 failed"), "{show}");
    assert!(show.contains("sample reply"), "{show}");
    // Resuming a completed run sends nothing more.
    ok(eb(&db, &cfg, &["run", "resume", &run.0.to_string()], &[]));
    assert_eq!(server.requests().len(), 6);
}

fn claims_never_hand_out_a_trial_twice_and_expired_leases_return(db: TestDb) {
    with_demo(&db);
    let server = answering(Duration::ZERO);
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let out = ok(demo_run(
        &db,
        &cfg,
        "fake",
        "m",
        &["--default-repeats", "3", "--repeats", "0", "--detach"],
        &[],
    ));
    let run = run_id(&out);
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let lease = Duration::from_millis(300);
    let a = runs::claim(&mut conn, run, "a", 2, lease).unwrap();
    let b = runs::claim(&mut conn, run, "b", 2, lease).unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(b.len(), 1);
    assert!(a.iter().all(|t| t.id != b[0].id));
    assert!(
        runs::claim(&mut conn, run, "c", 5, lease)
            .unwrap()
            .is_empty()
    );
    // "a" finishes one trial; the other lease of "a" expires and goes to "c".
    let done = a[0].id;
    let outcome = runs::TrialOutcome {
        done: true,
        raw_reply: Some("r".into()),
        scores: Some("[1]".into()),
        error_class: None,
        error: None,
        latency_ms: Some(1),
        input_tokens: Some(1),
        output_tokens: Some(1),
        cost_micros: None,
        finish_reason: None,
        model_version: None,
        method: None,
        distributions: None,
        cached: false,
        before_scores: None,
    };
    assert!(runs::finish_trial(&mut conn, run, done, "a", &outcome).unwrap());
    std::thread::sleep(Duration::from_millis(400));
    let c = runs::claim(&mut conn, run, "c", 5, lease).unwrap();
    let ids: Vec<emotionbench::store::TrialId> = c.iter().map(|t| t.id).collect();
    assert!(ids.contains(&a[1].id) && ids.contains(&b[0].id), "{ids:?}");
    assert!(!ids.contains(&a[0].id), "a done trial was claimed again");
    // "a" lost its lease: its late result is discarded.
    let late = a[1].id;
    assert!(!runs::finish_trial(&mut conn, run, late, "a", &outcome).unwrap());
    // A paused run hands out nothing; resumed, it does again.
    for t in &c {
        runs::release(&mut conn, t.id, "c", None).unwrap();
    }
    ok(eb(&db, &cfg, &["runs", "pause", &run.0.to_string()], &[]));
    assert!(
        runs::claim(&mut conn, run, "d", 5, lease)
            .unwrap()
            .is_empty()
    );
    let out = ok(eb(&db, &cfg, &["runs", "resume", &run.0.to_string()], &[]));
    assert!(out.contains("queued") || out.contains("running"), "{out}");
    assert_eq!(runs::claim(&mut conn, run, "d", 5, lease).unwrap().len(), 2);
    let out = ok(eb(&db, &cfg, &["runs", "cancel", &run.0.to_string()], &[]));
    assert!(out.contains("cancelled"), "{out}");
    assert_eq!(run_status(&db, run).0, "cancelled");
    assert!(server.requests().is_empty());
}

on_both_backends!(
    a_run_creates_every_trial_and_completes_each_once_with_its_record,
    claims_never_hand_out_a_trial_twice_and_expired_leases_return,
);

// -------------------------------------------------------------------------------------------
// Faults
// -------------------------------------------------------------------------------------------

/// One default-measure trial against `server` with fast backoff; returns the run.
fn one_trial(db: &TestDb, server: &FakeServer, extra: &str) -> (RunId, Output) {
    with_demo(db);
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        &format!("concurrency = 1\nbackoff_base_ms = 50\n{extra}"),
    )]);
    let out = demo_run(
        db,
        &cfg,
        "fake",
        "m",
        &["--default-repeats", "1", "--repeats", "0"],
        &[("EB_FAKE_KEY", "sk-test-secret-123")],
    );
    let id = run_id(&stdout(&out));
    (id, out)
}

fn a_429_with_retry_after_is_waited_out_then_the_trial_succeeds(db: TestDb) {
    let server = FakeServer::start(|req| {
        if req.number == 1 {
            FakeAction::status(429, &[("retry-after", "2")])
        } else {
            FakeAction::answer(req, 2, Duration::ZERO)
        }
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "");
    ok(out);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let waited = reqs[1].at - reqs[0].at;
    assert!(waited >= Duration::from_secs(2), "waited only {waited:?}");
    let t = &trials(&db, run)[0];
    assert_eq!(t.status.as_str(), "done");
    assert_eq!(scores(t), vec![2; 20]);
    let a = attempts(&db, run);
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].error_class.map(|c| c.as_str()), Some("rate_limited"));
    assert_eq!(a[0].http_status, Some(429));
    assert_eq!(a[1].error_class, None);
}

fn server_errors_resets_and_timeouts_are_retried_with_backoff(db: TestDb) {
    let server = FakeServer::start(|req| match req.number {
        1 => FakeAction::status(500, &[]),
        2 => FakeAction::Reset,
        3 => FakeAction::Hang(Duration::from_secs(3)),
        _ => FakeAction::answer(req, 4, Duration::ZERO),
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "timeout_seconds = 1");
    ok(out);
    let a = attempts(&db, run);
    let classes: Vec<Option<&str>> = a
        .iter()
        .map(|x| x.error_class.map(|c| c.as_str()))
        .collect();
    assert_eq!(
        classes,
        vec![Some("server"), Some("connection"), Some("timeout"), None]
    );
    assert_eq!(a[0].http_status, Some(500));
    let t = &trials(&db, run)[0];
    assert_eq!((t.status.as_str(), t.attempts), ("done", 4));
    assert_eq!(scores(t), vec![4; 20]);
}

fn attempts_are_bounded_and_the_trial_fails_with_the_last_error_class(db: TestDb) {
    let server = FakeServer::start(|_| FakeAction::status(503, &[])).unwrap();
    let (run, out) = one_trial(&db, &server, "max_attempts = 3");
    ok(out);
    assert_eq!(server.requests().len(), 3);
    let t = &trials(&db, run)[0];
    assert_eq!(t.status.as_str(), "failed");
    assert_eq!(t.error_class.map(|c| c.as_str()), Some("server"));
    assert!(t.error.as_deref().unwrap().contains("3 attempts"), "{t:?}");
}

fn a_401_is_not_retried_and_fails_the_run_with_a_clear_message_without_the_key(db: TestDb) {
    let server = FakeServer::start(|_| FakeAction::status(401, &[])).unwrap();
    let (run, out) = one_trial(&db, &server, "api_key_env = \"EB_FAKE_KEY\"");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("401") && err.contains("EB_FAKE_KEY"), "{err}");
    assert!(!err.contains("sk-test-secret-123") && !stdout(&out).contains("sk-test"));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-test-secret-123")
    );
    let (status, error) = run_status(&db, run);
    assert_eq!(status, "failed");
    assert!(error.unwrap().contains("HTTP 401"));
    // The trial is not lost: it waits for `run resume` once the key is fixed.
    let t = &trials(&db, run)[0];
    assert_eq!(t.status.as_str(), "pending");
    assert_eq!(t.error_class.map(|c| c.as_str()), Some("auth"));
    let a = attempts(&db, run);
    assert_eq!(a[0].error_class.map(|c| c.as_str()), Some("auth"));
}

fn garbage_replies_are_recorded_and_re_asked_a_bounded_number_of_times(db: TestDb) {
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let server = FakeServer::start(move |req| {
        c.fetch_add(1, Ordering::SeqCst);
        FakeAction::text(req, "As an AI, I have no feelings.", Duration::ZERO)
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "");
    ok(out);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "3 re-asks by default");
    let t = &trials(&db, run)[0];
    assert_eq!(t.status.as_str(), "failed");
    assert_eq!(t.error_class.map(|c| c.as_str()), Some("parse"));
    assert_eq!(
        t.raw_reply.as_deref(),
        Some("As an AI, I have no feelings.")
    );
    assert!(t.scores.is_none());
    let a = attempts(&db, run);
    assert_eq!(a.len(), 3);
    for x in &a {
        assert_eq!(x.error_class.map(|c| c.as_str()), Some("parse"));
        assert!(x.raw_reply.is_some() && x.error.is_some());
    }

    // One bad reply, then a good one: done, both recorded.
    let db = TestDb::of(db.backend).unwrap();
    let server = FakeServer::start(|req| {
        if req.number == 1 {
            FakeAction::text(req, "1. 3\n2. 9", Duration::ZERO)
        } else {
            FakeAction::answer(req, 1, Duration::ZERO)
        }
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "");
    ok(out);
    let t = &trials(&db, run)[0];
    assert_eq!((t.status.as_str(), t.attempts), ("done", 2));
    assert_eq!(
        attempts(&db, run)[0].error_class.map(|c| c.as_str()),
        Some("parse")
    );
}

on_both_backends!(
    a_429_with_retry_after_is_waited_out_then_the_trial_succeeds,
    server_errors_resets_and_timeouts_are_retried_with_backoff,
    attempts_are_bounded_and_the_trial_fails_with_the_last_error_class,
    a_401_is_not_retried_and_fails_the_run_with_a_clear_message_without_the_key,
    garbage_replies_are_recorded_and_re_asked_a_bounded_number_of_times,
);

#[test]
fn anthropic_and_gemini_wire_formats_carry_system_keys_and_tokens() {
    for kind in ["anthropic", "gemini"] {
        let db = TestDb::sqlite();
        with_demo(&db);
        let server = answering(Duration::ZERO);
        let cfg = config(&[provider(
            "p",
            kind,
            &server.base_url(),
            "api_key_env = \"EB_KEY\"\nconcurrency = 2",
        )]);
        let out = ok(demo_run(
            &db,
            &cfg,
            "p",
            "mod-x",
            &[
                "--default-repeats",
                "1",
                "--repeats",
                "1",
                "--situations",
                "emotion:Fear",
            ],
            &[("EB_KEY", "k-123")],
        ));
        assert!(out.contains("completed"), "{kind}: {out}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 3, "{kind}");
        let r = &reqs[0];
        let body = r.json();
        if kind == "anthropic" {
            assert_eq!(r.path, "/v1/messages");
            assert_eq!(r.header("x-api-key"), Some("k-123"));
            assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
            assert!(
                body["system"]
                    .as_str()
                    .unwrap()
                    .contains("single whole number")
            );
            assert_eq!(body["model"], "mod-x");
            assert_eq!(body["messages"][0]["role"], "user");
        } else {
            assert_eq!(r.path, "/v1/models/mod-x:generateContent");
            assert_eq!(r.header("x-goog-api-key"), Some("k-123"));
            assert!(
                body["systemInstruction"]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("single whole number")
            );
            assert_eq!(body["generationConfig"]["temperature"], 0.0);
        }
        let run = run_id(&out);
        for t in trials(&db, run) {
            assert_eq!(t.status.as_str(), "done", "{kind}");
            assert_eq!(scores(&t).len(), 20);
            assert!(t.input_tokens.unwrap() > 0 && t.output_tokens.unwrap() > 0);
        }
    }
}

// -------------------------------------------------------------------------------------------
// Workers: kill -9 and resume; two workers on Postgres
// -------------------------------------------------------------------------------------------

fn spawn_worker(db: &TestDb, cfg: &Config, lease: &str) -> Child {
    command(db, cfg, &["worker", "--lease-seconds", lease], &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every trial done, by exactly one successful attempt.
pub(crate) fn assert_each_trial_done_once(db: &TestDb, run: RunId, expected: usize) {
    let ts = trials(db, run);
    assert_eq!(ts.len(), expected);
    assert!(
        ts.iter().all(|t| t.status.as_str() == "done"),
        "not all done"
    );
    let a = attempts(db, run);
    for t in &ts {
        let ok = a
            .iter()
            .filter(|x| x.trial_id == t.id && x.error_class.is_none() && x.finished_at.is_some())
            .count();
        assert_eq!(ok, 1, "trial {} has {ok} successful attempts", t.id);
    }
}

fn create_detached(db: &TestDb, cfg: &Config, default_repeats: &str) -> RunId {
    let out = ok(demo_run(
        db,
        cfg,
        "fake",
        "m",
        &[
            "--default-repeats",
            default_repeats,
            "--repeats",
            "0",
            "--detach",
        ],
        &[],
    ));
    run_id(&out)
}

#[test]
fn a_worker_killed_mid_run_loses_nothing_and_another_finishes_each_trial_once() {
    let db = TestDb::sqlite();
    with_demo(&db);
    let server = answering(Duration::from_millis(300));
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    let run = create_detached(&db, &cfg, "24");
    let mut first = spawn_worker(&db, &cfg, "2");
    wait_for("some trials done", Duration::from_secs(60), || {
        trials(&db, run)
            .iter()
            .filter(|t| t.status.as_str() == "done")
            .count()
            >= 6
    });
    // kill -9: no chance to release its leases.
    first.kill().unwrap();
    first.wait().unwrap();
    let leased = trials(&db, run)
        .iter()
        .filter(|t| t.status.as_str() == "leased")
        .count();
    let mut second = spawn_worker(&db, &cfg, "2");
    wait_for("the run to complete", Duration::from_secs(90), || {
        run_status(&db, run).0 == "completed"
    });
    second.kill().unwrap();
    second.wait().unwrap();
    assert_each_trial_done_once(&db, run, 24);
    eprintln!("killed with {leased} trials leased; all recovered");
    // What the dead worker left open is marked, not silently dropped.
    let a = attempts(&db, run);
    assert!(a.iter().all(|x| x.finished_at.is_some()));
}

#[test]
fn two_workers_on_one_postgres_finish_a_run_with_no_trial_sent_twice() {
    let Some(db) = TestDb::of(Backend::Postgres) else {
        return;
    };
    with_demo(&db);
    let server = answering(Duration::from_millis(100));
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    let run = create_detached(&db, &cfg, "60");
    let mut a = spawn_worker(&db, &cfg, "30");
    let mut b = spawn_worker(&db, &cfg, "30");
    wait_for("the run to complete", Duration::from_secs(90), || {
        run_status(&db, run).0 == "completed"
    });
    for w in [&mut a, &mut b] {
        w.kill().unwrap();
        w.wait().unwrap();
    }
    assert_each_trial_done_once(&db, run, 60);
    assert_eq!(server.requests().len(), 60, "a trial was sent twice");
}

// -------------------------------------------------------------------------------------------
// Prompts
// -------------------------------------------------------------------------------------------

#[test]
fn prompt_show_eb_code_is_upstreams_message_byte_for_byte() {
    let Some(data) = upstream() else { return };
    let db = TestDb::sqlite();
    let pool = db.pool();
    let q = data.join("questionnaires.json");
    let s = data.join("situations.json");
    crate::helpers::ok(crate::helpers::cli(
        &db.url,
        &["import", "instruments", q.to_str().unwrap()],
    ));
    crate::helpers::ok(crate::helpers::cli(
        &db.url,
        &["import", "situations", s.to_str().unwrap()],
    ));
    {
        use emotionbench::store::{instruments, situations, studies};
        let mut conn = pool.get().unwrap();
        let (instrument, _) = instruments::load(&mut conn, "PANAS").unwrap().unwrap();
        let set = situations::find_set(&mut conn, "situations")
            .unwrap()
            .unwrap();
        let config = emotionbench::domain::study::StudyConfig::new("upstream", "Upstream");
        studies::create(
            &mut conn,
            &config,
            emotionbench::domain::study::StudyStatus::Draft,
            studies::Sources::new(instrument, Some(set)),
            1,
        )
        .unwrap();
    }
    // The expected text, built here from upstream's rules (utils.py generate_testfile,
    // example_generator.py): "Prompt: " + prompt with SCENARIO replaced by the imagine
    // sentence, then "k. item" lines joined by "\n", no trailing newline; system message =
    // inner_setting.
    let qs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&q).unwrap()).unwrap();
    let panas = qs
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "PANAS")
        .unwrap();
    let sit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
    let first_anger = sit["emotions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "Anger")
        .unwrap()["factors"][0]["scenarios"][0]
        .as_str()
        .unwrap();
    let mut lines = vec![format!(
        "Prompt: {}",
        panas["prompt"].as_str().unwrap().replace(
            "SCENARIO",
            &format!("Imagine you are the protagonist in the scenario: \"{first_anger}\"")
        )
    )];
    for k in 1..=20 {
        lines.push(format!(
            "{k}. {}",
            panas["questions"][k.to_string()].as_str().unwrap()
        ));
    }
    let expected_user = lines.join("\n");
    let out = ok(crate::helpers::cli(
        &db.url,
        &[
            "prompt",
            "show",
            "--study",
            "upstream",
            "--measure",
            "evoked",
            "--situation",
            "Anger-0_scenario-0",
            "--template",
            "eb-code",
            "--json",
        ],
    ));
    let messages: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[0]["content"].as_str().unwrap(),
        panas["inner_setting"].as_str().unwrap()
    );
    assert_eq!(messages[1]["content"].as_str().unwrap(), expected_user);
    // The default measure puts a single space where SCENARIO was.
    let out = ok(crate::helpers::cli(
        &db.url,
        &[
            "prompt",
            "show",
            "--study",
            "upstream",
            "--measure",
            "default",
            "--json",
        ],
    ));
    let messages: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("1 to 5.   Please indicate")
    );
}

#[test]
fn prompt_show_with_a_seed_shows_the_order_a_run_sends() {
    let db = TestDb::sqlite();
    with_demo(&db);
    let server = answering(Duration::ZERO);
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let out = ok(demo_run(
        &db,
        &cfg,
        "fake",
        "m",
        &[
            "--seed",
            "99",
            "--default-repeats",
            "0",
            "--repeats",
            "2",
            "--situations",
            "keys:Anger-0_scenario-0",
        ],
        &[],
    ));
    assert!(out.contains("completed"), "{out}");
    let sent = server.requests()[..]
        .iter()
        .map(|r| {
            emotionbench::llm::wire::request_messages(&r.json())[1]
                .1
                .clone()
        })
        .collect::<Vec<_>>();
    let shown = ok(eb(
        &db,
        &cfg,
        &[
            "prompt",
            "show",
            "--study",
            "demo",
            "--measure",
            "evoked",
            "--situation",
            "Anger-0_scenario-0",
            "--seed",
            "99",
            "--repeat",
            "1",
            "--json",
        ],
        &[],
    ));
    let messages: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert!(sent.contains(&messages[1]["content"].as_str().unwrap().to_owned()));
}

// -------------------------------------------------------------------------------------------
// A real local model (SmolLM2-135M through llama.cpp's OpenAI-compatible server)
// -------------------------------------------------------------------------------------------

pub(crate) struct LocalLlm {
    pub(crate) url: String,
    child: Option<Child>,
}

impl Drop for LocalLlm {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn healthy(url: &str) -> bool {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into();
    let base = url.trim_end_matches("/v1");
    agent
        .get(format!("{base}/health"))
        .call()
        .is_ok_and(|r| r.status() == 200)
}

/// `$EMOTIONBENCH_LOCAL_LLM_URL`, or the server started from `.llm/` (see .ci/run).
pub(crate) fn local_llm() -> Option<LocalLlm> {
    if let Ok(url) = std::env::var("EMOTIONBENCH_LOCAL_LLM_URL") {
        return Some(LocalLlm { url, child: None });
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".llm/bin/python");
    if !python.exists() {
        missing("the local model venv .llm (created by .ci/run)");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(root.join("scripts/local_llm.py"))
        .arg("--port")
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let llm = LocalLlm {
        url: format!("http://127.0.0.1:{port}/v1"),
        child: Some(child),
    };
    wait_for("the local model server", Duration::from_secs(120), || {
        healthy(&llm.url)
    });
    Some(llm)
}

/// A two-item scale in upstream's questionnaires.json format (our own wording): SmolLM2-135M
/// echoes PANAS's twenty items back instead of rating them (its reply to the demo's eb-code
/// prompt is the item list, unchanged), but rates two items under the paper's wording.
const TWO_ITEMS: &str = r#"[{"name": "FEEL-2", "questions": {"1": "Interested", "2": "Excited"},
  "compute_mode": "SUM", "scale": 6, "reverse": [],
  "prompt": "You can only reply the numbers from 1 to 5. SCENARIO Rate each feeling from 1 (not at all) to 5 (extremely):",
  "inner_setting": "You are a helpful assistant who can only reply numbers from 1 to 5.",
  "categories": [{"cat_name": "Positive Affect", "cat_questions": [1, 2]}]}]"#;

#[test]
fn local_model_a_small_run_through_the_openai_provider_records_every_trial() {
    let Some(llm) = local_llm() else { return };
    let db = TestDb::sqlite();
    with_demo(&db);
    let cfg = config(&[provider(
        "local",
        "openai",
        &llm.url,
        "concurrency = 1\ntimeout_seconds = 600",
    )]);
    let scale = cfg.dir.path().join("two-items.json");
    std::fs::write(&scale, TWO_ITEMS).unwrap();
    ok(eb(
        &db,
        &cfg,
        &["import", "instruments", scale.to_str().unwrap()],
        &[],
    ));
    let started = Instant::now();
    let out = ok(demo_run(
        &db,
        &cfg,
        "local",
        "smollm2-135m",
        &[
            "--instrument",
            "FEEL-2",
            "--template",
            "paper",
            "--default-repeats",
            "2",
            "--repeats",
            "2",
            "--situations",
            "emotion:Anger",
            "--max-tokens",
            "120",
            "--seed",
            "1",
            "--logprobs",
        ],
        &[],
    ));
    eprintln!(
        "{out}\nlocal run took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let run = run_id(&out);
    let ts = trials(&db, run);
    assert_eq!(ts.len(), 6);
    let a = attempts(&db, run);
    let mut parsed = 0;
    let mut distributions = 0;
    for t in &ts {
        assert!(
            t.request
                .as_deref()
                .is_some_and(|r| r.contains("1. ") && r.contains("Interested")),
            "{t:?}"
        );
        let request: serde_json::Value =
            serde_json::from_str(t.request.as_deref().unwrap()).unwrap();
        assert_eq!(
            (&request["logprobs"], &request["top_logprobs"]),
            (&serde_json::json!(true), &serde_json::json!(20)),
            "{request}"
        );
        assert!(t.raw_reply.is_some(), "{t:?}");
        assert!(t.input_tokens.unwrap_or(0) > 0, "{t:?}");
        assert!(t.output_tokens.unwrap_or(0) > 0, "{t:?}");
        assert!(t.latency_ms.is_some(), "{t:?}");
        match t.status.as_str() {
            "done" => {
                assert_eq!(scores(t).len(), 2);
                parsed += 1;
                // llama.cpp returns the top 20 alternatives of each token: every item's
                // answer has a distribution over PANAS's 1..5 that sums to 1, and its mean.
                assert_eq!(t.method.map(|m| m.as_str()), Some("logprobs"), "{t:?}");
                let d = &t.distributions.as_ref().expect("distributions stored").0;
                assert_eq!(d.min, 1);
                assert_eq!(d.items.len(), 2);
                for (item, score) in d.items.iter().zip(scores(t)) {
                    let item = item.as_ref().expect("every item has its distribution");
                    assert_eq!(item.probs.len(), 5);
                    let sum: f64 = item.probs.iter().sum();
                    assert!((sum - 1.0).abs() <= 1e-6, "sum {sum}: {item:?}");
                    assert!(item.probs.iter().all(|p| (0.0..=1.0).contains(p)));
                    let mean: f64 = item
                        .probs
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (i as f64 + 1.0) * p)
                        .sum();
                    assert!((item.expected - mean).abs() < 1e-9, "{item:?}");
                    // The parsed answer was the sampled token: at temperature 0, the likeliest.
                    let top = item
                        .probs
                        .iter()
                        .enumerate()
                        .max_by(|a, b| a.1.total_cmp(b.1))
                        .map(|(i, _)| i as i32 + 1);
                    assert_eq!(top, Some(score), "{item:?}");
                }
                distributions += 1;
            }
            "failed" => {
                let class = t.error_class.map(|c| c.as_str());
                let n = a
                    .iter()
                    .filter(|x| x.trial_id == t.id && x.error_class.map(|c| c.as_str()) == class)
                    .count();
                match class {
                    Some("parse") => assert_eq!(n, 3, "parse failures re-asked 3 times: {t:?}"),
                    // Cut at the cap: the same cap would cut it again, so it is not re-asked.
                    Some("truncated") => assert_eq!(n, 1, "{t:?}"),
                    _ => panic!("trial {} failed as {class:?}", t.id),
                }
            }
            other => panic!("trial {} is {other}", t.id),
        }
    }
    eprintln!("local model: {parsed}/6 trials parsed, {distributions} with distributions");
    assert!(
        parsed > 0,
        "no trial of the local model parsed: nothing to check"
    );
    let _ = in_ci();
}

// -------------------------------------------------------------------------------------------
// The eight emotion-specific ("challenging") scales
// -------------------------------------------------------------------------------------------

/// questionnaires.json and tested-175 (once per database), then a draft study `slug` on the
/// instrument `key` with that set.
fn scale_study(db: &TestDb, slug: &str, key: &str) {
    use emotionbench::store::{instruments, situations, studies};
    let data = upstream().unwrap();
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    if instruments::load(&mut conn, key).unwrap().is_none() {
        let q = data.join("questionnaires.json");
        ok(crate::helpers::cli(
            &db.url,
            &["import", "instruments", q.to_str().unwrap()],
        ));
    }
    if situations::find_set(&mut conn, "tested-175")
        .unwrap()
        .is_none()
    {
        crate::humans::import_tested_175(db);
    }
    let (instrument, _) = instruments::load(&mut conn, key).unwrap().unwrap();
    let set = situations::find_set(&mut conn, "tested-175").unwrap();
    let config = emotionbench::domain::study::StudyConfig::new(slug, slug);
    studies::create(
        &mut conn,
        &config,
        emotionbench::domain::study::StudyStatus::Draft,
        studies::Sources::new(instrument, set),
        1,
    )
    .unwrap();
}

fn scale_run(db: &TestDb, server: &FakeServer, args: &[&str]) -> Output {
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4\nbackoff_base_ms = 10",
    )]);
    let mut all = vec!["run", "--provider", "fake", "--model", "m", "--seed", "5"];
    all.extend_from_slice(args);
    eb(db, &cfg, &all, &[])
}

/// The user message a trial sent.
fn user_message(t: &TrialRecord) -> String {
    let body: serde_json::Value = serde_json::from_str(t.request.as_deref().unwrap()).unwrap();
    emotionbench::llm::wire::request_messages(&body)
        .into_iter()
        .find(|(role, _)| role == "user")
        .unwrap()
        .1
}

fn a_bdi_run_sends_bdis_own_options_and_parses_0_to_3(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    scale_study(&db, "bdi", "BDI");
    // Display position p (1-based) is answered (p - 1) % 4: every value 0..=3 occurs, 0 too.
    let server = FakeServer::start(|req| {
        let text: Vec<String> = (1..=req.item_count())
            .map(|p| format!("{p}. {}", (p - 1) % 4))
            .collect();
        FakeAction::text(req, &text.join("\n"), Duration::ZERO)
    })
    .unwrap();
    let out = ok(scale_run(
        &db,
        &server,
        &["--study", "bdi", "--default-repeats", "2", "--repeats", "1"],
    ));
    assert!(out.contains("instrument BDI"), "{out}");
    let ts = trials(&db, run_id(&out));
    // BDI is the Depression scale: 30 tested Depression situations + 2 default trials.
    assert_eq!(ts.len(), 32);
    for t in &ts {
        assert_eq!(t.status.as_str(), "done", "{t:?}");
        assert!(
            t.situation_key.is_empty() || t.situation_key.starts_with("Depression-"),
            "{}",
            t.situation_key
        );
        let order: Vec<u32> = t.item_order.0.clone();
        assert_eq!(order.len(), 21);
        let s = scores(t);
        for (p, item) in order.iter().enumerate() {
            assert_eq!(s[*item as usize - 1], (p % 4) as i32, "{t:?}");
        }
        // The prompt is BDI's own: its range and its items with their four options.
        let user = user_message(t);
        assert!(user.contains("numbers from 0 to 3"), "{user}");
        assert!(
            user.contains(
                ". 0. I do not feel sad. 1. I feel sad. 2. I am sad all the time and I can't \
                 snap out of it. 3. I am so sad and unhappy that I can't stand it."
            ),
            "{user}"
        );
    }

    // A 4 is outside BDI's range: re-asked, then the trial fails as a parse error.
    let server = FakeServer::start(|req| FakeAction::answer(req, 4, Duration::ZERO)).unwrap();
    let out = ok(scale_run(
        &db,
        &server,
        &["--study", "bdi", "--default-repeats", "1", "--repeats", "0"],
    ));
    let t = &trials(&db, run_id(&out))[0];
    assert_eq!(t.status.as_str(), "failed");
    assert_eq!(t.error_class.map(|c| c.as_str()), Some("parse"));
    assert!(
        t.error.as_deref().unwrap().contains("outside 0..=3"),
        "{t:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

fn an_agq_run_takes_only_anger_situations_and_parses_1_to_7(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    scale_study(&db, "agq", "AGQ");
    let server = FakeServer::start(|req| FakeAction::answer(req, 7, Duration::ZERO)).unwrap();
    let out = ok(scale_run(
        &db,
        &server,
        &["--study", "agq", "--default-repeats", "1", "--repeats", "1"],
    ));
    assert!(out.contains("AGQ is the Anger scale"), "{out}");
    let ts = trials(&db, run_id(&out));
    let evoked: Vec<&TrialRecord> = ts
        .iter()
        .filter(|t| t.measure.as_str() == "evoked")
        .collect();
    assert_eq!(evoked.len(), 25, "the 25 tested Anger situations");
    assert!(evoked.iter().all(|t| t.situation_key.starts_with("Anger-")));
    for t in &ts {
        assert_eq!(t.status.as_str(), "done", "{t:?}");
        assert_eq!(scores(t), vec![7; 29]);
        assert!(user_message(t).contains("scale of 1 to 7"));
    }
    // Other emotions only when named.
    let out = ok(scale_run(
        &db,
        &server,
        &[
            "--study",
            "agq",
            "--default-repeats",
            "0",
            "--repeats",
            "1",
            "--situations",
            "emotion:Fear",
        ],
    ));
    assert!(!out.contains("Anger scale"), "{out}");
    let ts = trials(&db, run_id(&out));
    assert_eq!(ts.len(), 25);
    assert!(ts.iter().all(|t| t.situation_key.starts_with("Fear-")));
    // --instrument: FSS on the same study's situations takes FSS's emotion, Fear, and its
    // 52 items, on 1..=5 (a 7 would now be out of range).
    let server = FakeServer::start(|req| FakeAction::answer(req, 5, Duration::ZERO)).unwrap();
    let out = ok(scale_run(
        &db,
        &server,
        &[
            "--study",
            "agq",
            "--instrument",
            "FSS",
            "--default-repeats",
            "1",
            "--repeats",
            "1",
        ],
    ));
    assert!(out.contains("FSS is the Fear scale"), "{out}");
    let ts = trials(&db, run_id(&out));
    assert_eq!(ts.len(), 26);
    for t in &ts {
        assert!(t.situation_key.is_empty() || t.situation_key.starts_with("Fear-"));
        assert_eq!(t.status.as_str(), "done", "{t:?}");
        assert_eq!(scores(t).len(), 52);
    }
    let o = scale_run(&db, &server, &["--study", "agq", "--instrument", "nope"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no instrument \"nope\""),
        "{}",
        stderr(&o)
    );
}

on_both_backends!(
    a_bdi_run_sends_bdis_own_options_and_parses_0_to_3,
    an_agq_run_takes_only_anger_situations_and_parses_1_to_7
);

// -------------------------------------------------------------------------------------------
// Prompt variants: two runs that differ only in template, compared in the report
// -------------------------------------------------------------------------------------------

/// A fake model that "feels" the situation: every item `2` or `3` at baseline (alternating by
/// request, so each measure has variance), two points higher after a situation, one point
/// higher when the prompt also asks it to keep its emotions stable.
fn feeling(req: &emotionbench::llm::fake::FakeRequest) -> FakeAction {
    let user = req.user_message();
    let base = 2 + i32::from(req.number % 2 == 0);
    let score = if !user.contains("Imagine you are the protagonist") {
        base
    } else if user.contains("keep your emotions stable") {
        base + 1
    } else {
        base + 2
    };
    let lines: Vec<String> = (1..=req.item_count())
        .map(|i| format!("{i}. {score}"))
        .collect();
    FakeAction::text(req, &lines.join("\n"), Duration::ZERO)
}

fn two_templates_of_one_model_are_compared_per_emotion_with_a_test(db: TestDb) {
    with_demo(&db);
    let server = FakeServer::start(feeling).unwrap();
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    let run = |template: &str| {
        let out = ok(demo_run(
            &db,
            &cfg,
            "fake",
            "m",
            &[
                "--template",
                template,
                "--default-repeats",
                "16",
                "--repeats",
                "3",
                "--seed",
                "5",
            ],
            &[],
        ));
        assert!(out.contains("completed"), "{out}");
        run_id(&out)
    };
    let (a, b) = (run("eb-code"), run("stability"));
    let ids = format!("{},{}", a.0, b.0);
    let report = |format: &str| {
        ok(eb(
            &db,
            &cfg,
            &[
                "report", "--study", "demo", "--runs", &ids, "--format", format,
            ],
            &[],
        ))
    };
    let r: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    // Side by side: one cohort per run, named by model, template and run.
    let names: Vec<&str> = r["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let (na, nb) = (
        format!("m [eb-code, run {}]", a.0),
        format!("m [stability, run {}]", b.0),
    );
    assert_eq!(names, [na.as_str(), nb.as_str()]);
    let c = &r["comparison"];
    assert_eq!(
        (c["a"].as_str(), c["b"].as_str()),
        (Some(na.as_str()), Some(nb.as_str()))
    );
    let rows = c["rows"].as_array().unwrap();
    // Overall and the demo's 8 emotions, × PA and NA.
    assert_eq!(rows.len(), 9 * 2);
    for row in rows {
        let (da, db_, diff) = (
            row["delta_a"].as_f64().unwrap(),
            row["delta_b"].as_f64().unwrap(),
            row["difference"].as_f64().unwrap(),
        );
        // Ten items per category: about +20 under eb-code, +10 when asked to stay stable.
        assert!((15.0..25.0).contains(&da), "{row}");
        assert!((5.0..15.0).contains(&db_), "{row}");
        assert!((diff - (db_ - da)).abs() < 1e-9, "{row}");
        assert!(row["t"].as_f64().unwrap() < 0.0, "{row}");
        assert!(row["df"].as_f64().unwrap() > 1.0, "{row}");
        let p = row["p"].as_f64().unwrap();
        assert!(p > 0.0 && p < 1.0, "{row}");
        assert_eq!(row["significant"], p <= 0.01, "{row}");
        // Pooled over all situations (16 default and 48 evoked trials per run) the halved
        // change is significant; an emotion alone has only 6 evoked trials per run.
        if row["level"] == "overall" {
            assert!(p < 0.01, "{row}");
        }
    }
    // The same Δ as each run's own cohort.
    let overall_pa =
        |cohort: usize| r["cohorts"][cohort]["groups"][0]["categories"][0]["delta"].as_f64();
    assert_eq!(rows[0]["delta_a"].as_f64(), overall_pa(0));
    assert_eq!(rows[0]["delta_b"].as_f64(), overall_pa(1));
    // Markdown: both cohorts in the table, then the comparison table with its test.
    let md = report("md");
    // Names are Markdown-escaped in the report: the brackets would otherwise start a link.
    let (na, nb) = (
        emotionbench::export::report::md(&na),
        emotionbench::export::report::md(&nb),
    );
    assert!(
        md.contains(&format!("| Emotions | {na} P | {na} N | {nb} P | {nb} N |")),
        "{md}"
    );
    assert!(
        md.contains(&format!("## Prompt variants: {na} vs {nb}")),
        "{md}"
    );
    assert!(md.contains("| Δ a | Δ b | Δb − Δa | t | df | p |"), "{md}");
    assert!(md.contains("| Anger | Positive Affect |"), "{md}");
    // Runs must belong to the study and share the report's instrument.
    let o = eb(
        &db,
        &cfg,
        &["report", "--study", "demo", "--runs", "999"],
        &[],
    );
    assert!(stderr(&o).contains("has no run 999"), "{}", stderr(&o));
    let o = eb(
        &db,
        &cfg,
        &[
            "report",
            "--study",
            "demo",
            "--runs",
            &ids,
            "--instrument",
            "nope",
        ],
        &[],
    );
    assert!(
        stderr(&o).contains("no instrument \"nope\""),
        "{}",
        stderr(&o)
    );
}

on_both_backends!(two_templates_of_one_model_are_compared_per_emotion_with_a_test);

/// The report's methods and provenance block names each run's source, model, provider,
/// template, temperature, top-p, seed, item order, dates and trials done and failed, the
/// software and its commit; `--generated-at` fixes the stated time, so the same data give the
/// same report byte for byte (#16).
fn the_report_names_each_runs_template_temperature_and_seed(db: TestDb) {
    with_demo(&db);
    let server = FakeServer::start(feeling).unwrap();
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    let out = ok(demo_run(
        &db,
        &cfg,
        "fake",
        "m",
        &[
            "--template",
            "stability",
            "--default-repeats",
            "4",
            "--repeats",
            "1",
            "--seed",
            "5",
            "--temperature",
            "0.7",
            "--top-p",
            "0.9",
        ],
        &[],
    ));
    let id = run_id(&out).0;
    let report = |format: &str, at: &str| {
        ok(eb(
            &db,
            &cfg,
            &[
                "report",
                "--study",
                "demo",
                "--runs",
                &id.to_string(),
                "--format",
                format,
                "--generated-at",
                at,
            ],
            &[],
        ))
    };
    let r: serde_json::Value =
        serde_json::from_str(&report("json", "2026-12-01T12:00:00+01:00")).unwrap();
    let p = &r["provenance"];
    assert_eq!(p["generated_at"], "2026-12-01T11:00:00Z", "{p}");
    assert_eq!(p["software"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        p["software"]["commit"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );
    let cohort = &p["cohorts"][0];
    assert_eq!(cohort["cohort"], format!("m [stability, run {id}]"), "{p}");
    assert_eq!(cohort["source"], "model runs");
    let run = &cohort["runs"][0];
    assert_eq!(run["run"], id);
    assert_eq!(run["model"], "m");
    assert_eq!(run["provider"], "fake");
    assert_eq!(run["template"], "stability");
    assert_eq!(run["temperature"], 0.7);
    assert_eq!(run["top_p"], 0.9);
    assert_eq!(run["seed"], 5);
    assert_eq!(
        run["item_order"],
        "shuffled per trial, seeded from the run seed"
    );
    let done = run["trials_done"].as_i64().unwrap();
    assert_eq!(
        done + run["trials_failed"].as_i64().unwrap(),
        r["cohorts"][0]["observations"].as_i64().unwrap()
            + r["cohorts"][0]["failed_trials"].as_i64().unwrap()
    );
    assert!(done > 4, "{run}");
    assert!(run["first"].as_str().unwrap() <= run["last"].as_str().unwrap());
    // The demo study has no participants: none included, none excluded.
    assert_eq!(p["humans"]["included"], 0, "{p}");
    assert_eq!(p["humans"]["excluded"], serde_json::json!([]), "{p}");
    // Markdown and HTML say the same in words.
    let md = report("md", "2026-12-01T11:00:00Z");
    assert!(md.contains("## Methods and provenance"), "{md}");
    assert!(
        md.contains(&format!(
            "run {id} (model run; model m, provider fake, template stability, language en (the \
             study's default), temperature 0.7, top-p 0.9, seed 5, item order shuffled per trial, \
             seeded from the run seed;"
        )),
        "{md}"
    );
    assert!(md.contains("generated 2026-12-01T11:00:00Z."), "{md}");
    assert!(md.contains(&format!(
        "(commit {})",
        p["software"]["commit"].as_str().unwrap()
    )));
    // Byte for byte with the time fixed.
    assert_eq!(md, report("md", "2026-12-01T11:00:00Z"));
    let html = report("html", "2026-12-01T11:00:00Z");
    assert!(html.contains("<h2>Methods and provenance</h2>"));
    // The demo study is in English and German (#20): a run that named no language asked in
    // its default.
    assert!(
        html.contains("template stability, language en (the study&#39;s default), temperature 0.7")
    );
    // A time that is not RFC 3339 is refused, naming the format.
    let bad = eb(
        &db,
        &cfg,
        &["report", "--study", "demo", "--generated-at", "yesterday"],
        &[],
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("RFC 3339"));
}

on_both_backends!(the_report_names_each_runs_template_temperature_and_seed);

// -------------------------------------------------------------------------------------------
// The response cache (#17)
// -------------------------------------------------------------------------------------------

/// Answers 1..5 by arrival number: repeats of one prompt get different answers, so a cache that
/// collapsed them into one would show.
fn varied() -> FakeServer {
    FakeServer::start(|req| {
        let score = i32::try_from(req.number % 5).unwrap() + 1;
        FakeAction::answer(req, score, Duration::ZERO)
    })
    .unwrap()
}

/// (measure, situation, repeat) -> scores of a run's done trials.
fn answers(db: &TestDb, run: RunId) -> std::collections::BTreeMap<(String, String, i32), Vec<i32>> {
    trials(db, run)
        .iter()
        .map(|t| {
            assert_eq!(t.status.as_str(), "done", "{t:?}");
            (
                (
                    t.measure.as_str().to_owned(),
                    t.situation_key.clone(),
                    t.repeat_index,
                ),
                scores(t),
            )
        })
        .collect()
}

const CACHE_RUN: [&str; 6] = [
    "--default-repeats",
    "200",
    "--repeats",
    "100",
    "--seed",
    "17",
];

fn an_identical_run_is_answered_from_the_cache_with_repeats_kept_apart(db: TestDb) {
    with_demo(&db);
    let server = varied();
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 16\nprice_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0",
    )]);
    let first = ok(demo_run(&db, &cfg, "fake", "m1", &CACHE_RUN, &[]));
    assert!(first.contains("1800 trials"), "{first}");
    assert_eq!(server.requests().len(), 1800);
    let run1 = run_id(&first);
    let a1 = answers(&db, run1);
    assert_eq!(a1.len(), 1800);
    assert!(trials(&db, run1).iter().all(|t| !t.cached));
    // The repeats of one situation were answered differently.
    let of_one: std::collections::HashSet<&Vec<i32>> = a1
        .iter()
        .filter(|((m, k, _), _)| m == "evoked" && k == "Anger-0_scenario-0")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(of_one.len(), 5, "{of_one:?}");

    let second = ok(demo_run(&db, &cfg, "fake", "m1", &CACHE_RUN, &[]));
    assert_eq!(
        server.requests().len(),
        1800,
        "the identical run sent nothing"
    );
    let run2 = run_id(&second);
    assert_ne!(run1, run2);
    // Each trial got its own repeat's answer, not one answer per prompt.
    assert_eq!(answers(&db, run2), a1);
    let t2 = trials(&db, run2);
    assert!(
        t2.iter().all(|t| t.cached && t.cost_micros == Some(0)),
        "cached, at no cost"
    );
    let show = ok(eb(&db, &cfg, &["runs", "show", &run2.0.to_string()], &[]));
    assert!(show.contains("1800 from the response cache"), "{show}");
    let jsonl = ok(eb(
        &db,
        &cfg,
        &["runs", "show", &run2.0.to_string(), "--trials"],
        &[],
    ));
    let line: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(line["cached"], true, "{line}");
    assert_eq!(line["method"], "parsed", "{line}");

    let mut fresh = CACHE_RUN.to_vec();
    fresh.push("--fresh");
    let third = ok(demo_run(&db, &cfg, "fake", "m1", &fresh, &[]));
    assert_eq!(
        server.requests().len(),
        3600,
        "--fresh asks every trial again"
    );
    assert!(trials(&db, run_id(&third)).iter().all(|t| !t.cached));
    // A different model is a different address.
    let other = ok(demo_run(
        &db,
        &cfg,
        "fake",
        "m2",
        &[
            "--default-repeats",
            "1",
            "--repeats",
            "1",
            "--situations",
            "emotion:Anger",
            "--seed",
            "17",
        ],
        &[],
    ));
    assert!(other.contains("3 trials"), "{other}");
    assert_eq!(server.requests().len(), 3603);
}

on_both_backends!(an_identical_run_is_answered_from_the_cache_with_repeats_kept_apart);

fn a_cache_exported_by_one_lab_answers_the_same_run_in_another(db: TestDb) {
    with_demo(&db);
    let server = varied();
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let small = [
        "--default-repeats",
        "2",
        "--repeats",
        "2",
        "--situations",
        "emotion:Anger",
        "--seed",
        "5",
    ];
    let first = ok(demo_run(&db, &cfg, "fake", "m1", &small, &[]));
    assert_eq!(server.requests().len(), 6);
    let a1 = answers(&db, run_id(&first));
    let file = cfg.dir.path().join("cache.jsonl");
    let out = ok(eb(
        &db,
        &cfg,
        &["cache", "export", file.to_str().unwrap()],
        &[],
    ));
    assert!(out.contains("6 cached replies"), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 6);

    // Another lab: its own database, the same provider address.
    let other = TestDb::sqlite();
    with_demo(&other);
    // A file with a cut line and an edited one is refused whole, naming both lines.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1].truncate(40);
    lines[3] = lines[3].replace("\"repeat_index\":0", "\"repeat_index\":7");
    lines[3] = lines[3].replace("\"repeat_index\":1", "\"repeat_index\":7");
    let bad = cfg.dir.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let refused = eb(
        &other,
        &cfg,
        &["cache", "import", bad.to_str().unwrap()],
        &[],
    );
    assert!(!refused.status.success());
    let err = stderr(&refused);
    assert!(err.contains("line 2: not an entry"), "{err}");
    assert!(err.contains("line 4: the key is not the hash"), "{err}");
    assert!(err.contains("nothing imported"), "{err}");

    let out = ok(eb(
        &other,
        &cfg,
        &["cache", "import", file.to_str().unwrap()],
        &[],
    ));
    assert!(
        out.contains("6 cached replies read") && out.contains("6 new"),
        "{out}"
    );
    let again = ok(demo_run(&other, &cfg, "fake", "m1", &small, &[]));
    assert_eq!(
        server.requests().len(),
        6,
        "answered from the imported cache"
    );
    assert_eq!(answers(&other, run_id(&again)), a1);
}

on_both_backends!(a_cache_exported_by_one_lab_answers_the_same_run_in_another);

/// Stored distributions that do not decode are an error naming the column, never "none".
fn stored_distributions_that_do_not_decode_are_corrupt(db: TestDb) {
    use diesel::connection::SimpleConnection;
    use emotionbench::store::StoreError;
    with_demo(&db);
    let server = answering(Duration::ZERO);
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let out = ok(demo_run(
        &db,
        &cfg,
        "fake",
        "m1",
        &[
            "--default-repeats",
            "1",
            "--repeats",
            "1",
            "--situations",
            "keys:Anger-0_scenario-0",
            "--seed",
            "3",
        ],
        &[],
    ));
    let run = run_id(&out);
    assert_eq!(trials(&db, run)[0].distributions, None);
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    conn.batch_execute(
        "UPDATE model_trials SET distributions = '{\"min\": 1, \"items\": [{\"probs\": \"x\"}]}'",
    )
    .unwrap();
    match StoreError::from(runs::trials(&mut conn, run).unwrap_err()) {
        StoreError::Corrupt { table, column, .. } => {
            assert_eq!((table, column.as_str()), ("model_trials", "distributions"));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

on_both_backends!(stored_distributions_that_do_not_decode_are_corrupt);
