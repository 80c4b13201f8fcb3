//! Free-text tasks and their scorers (#18) through the real binary: a free-text run, its
//! answers scored by the real local classifier (scripts/local_scorer.py, alt-profanity-check's
//! trained model) and by clients of Perspective, OpenAI-compatible moderation and an LLM judge
//! against fakes built from their references; the report of default vs evoked scores; a
//! scoring worker killed with SIGKILL mid-job; and a real local model (SmolLM2) end to end.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use emotionbench::llm::fake::{FakeAction, FakeServer, real};
use emotionbench::scorer::fake as scorer_fake;
use emotionbench::store::runs::{self, TrialRecord};
use emotionbench::store::text_scores::{self, StoredScore};
use emotionbench::store::{RunId, db};

use crate::helpers::{TestDb, missing, ok, stderr, stdout};
use crate::on_both_backends;
use crate::runs::{command, demo_run, eb, local_llm, provider, run_id};

/// A config file with `[[providers]]` and `[[scorers]]` bodies.
struct Cfg {
    inner: crate::runs::Config,
}

fn config(providers: &[String], scorers: &[String]) -> Cfg {
    let inner = crate::runs::config(providers);
    let mut text = std::fs::read_to_string(&inner.path).unwrap();
    for s in scorers {
        text.push_str(&format!("[[scorers]]\n{s}\n"));
    }
    std::fs::write(&inner.path, text).unwrap();
    Cfg { inner }
}

/// A `[[scorers]]` body: the same keys as a provider's.
fn scorer(name: &str, kind: &str, url: &str, extra: &str) -> String {
    provider(name, kind, url, extra)
}

fn with_demo(db: &TestDb) {
    let pool = db.pool();
    emotionbench::app::demo::load_demo(&mut pool.get().unwrap()).unwrap();
}

fn trials(db: &TestDb, run: RunId) -> Vec<TrialRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    runs::trials(&mut pool.get().unwrap(), run).unwrap()
}

fn scores(db: &TestDb, run: RunId, scorer: &str) -> Vec<StoredScore> {
    let pool = db::connect(&db.url, 1).unwrap();
    text_scores::of_runs(&mut pool.get().unwrap(), &[run], scorer).unwrap()
}

const HOSTILE: &str = "I hate you all, you stupid worthless idiots, go to hell.";
const KIND: &str = "They are lovely people and I wish them a good day.";

/// A provider that writes hostile text after a situation and kind text without one, each
/// ending with the target it was asked about (so the answers are not all the same text).
fn writer() -> FakeServer {
    FakeServer::start(|req| {
        let user = req.user_message();
        let base = if user.contains("Imagine you are the protagonist") {
            HOSTILE
        } else {
            KIND
        };
        let target = user
            .rsplit("think about ")
            .next()
            .unwrap_or("")
            .trim_end_matches(" right now.");
        FakeAction::text(
            req,
            &format!("{base} That goes for {target}."),
            Duration::ZERO,
        )
    })
    .unwrap()
}

/// `run --study demo --instrument DEMO-SAY` on the Anger situations: 2 situations × 3
/// targets × `repeats`, plus 3 targets × `default_repeats`.
fn free_text_run(db: &TestDb, cfg: &Cfg, model: &str, repeats: &str, defaults: &str) -> RunId {
    let out = ok(demo_run(
        db,
        &cfg.inner,
        "writer",
        model,
        &[
            "--instrument",
            "DEMO-SAY",
            "--repeats",
            repeats,
            "--default-repeats",
            defaults,
            "--situations",
            "emotion:Anger",
            "--seed",
            "3",
        ],
        &[],
    ));
    assert!(out.contains("completed"), "{out}");
    run_id(&out)
}

// -------------------------------------------------------------------------------------------
// The local scorer: scripts/local_scorer.py with alt-profanity-check's trained classifier
// -------------------------------------------------------------------------------------------

pub(crate) struct LocalScorer {
    pub(crate) url: String,
    child: Child,
}

impl Drop for LocalScorer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The local scorer started from `.scorer/` (created by .ci/run).
pub(crate) fn local_scorer() -> Option<LocalScorer> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".scorer/bin/python");
    if !python.exists() {
        missing("the local scorer venv .scorer (created by .ci/run)");
        return None;
    }
    let port = crate::helpers::free_port();
    let child = Command::new(python)
        .arg(root.join("scripts/local_scorer.py"))
        .arg("--port")
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let s = LocalScorer {
        url: format!("http://127.0.0.1:{port}"),
        child,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(2)))
        .build()
        .into();
    let start = Instant::now();
    while !agent
        .get(format!("{}/health", s.url))
        .call()
        .is_ok_and(|r| r.status() == 200)
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the local scorer did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(s)
}

fn a_free_text_run_is_scored_by_the_local_classifier_and_reported_default_vs_evoked(db: TestDb) {
    let Some(local) = local_scorer() else { return };
    with_demo(&db);
    let server = writer();
    let cfg = config(
        &[provider("writer", "openai", &server.base_url(), "")],
        &[scorer("local", "local", &local.url, "concurrency = 2")],
    );
    let run = free_text_run(&db, &cfg, "w1", "1", "1");
    let ts = trials(&db, run);
    // 3 default (one per target) + 2 Anger situations × 3 targets.
    assert_eq!(ts.len(), 9);
    for t in &ts {
        assert_eq!(t.status.as_str(), "done", "{t:?}");
        assert_eq!(t.item_order.0.len(), 1, "one target per trial");
        assert!(t.scores.is_none(), "a text has no ratings: {t:?}");
        let reply = t.raw_reply.as_deref().unwrap();
        let request = t.request.as_deref().unwrap();
        match t.measure.as_str() {
            "default" => assert!(reply.starts_with(KIND), "{reply}"),
            _ => {
                assert!(reply.starts_with(HOSTILE), "{reply}");
                assert!(request.contains("Imagine you are the protagonist in the situation:"));
            }
        }
        assert!(request.contains("say what you think about"), "{request}");
    }
    let out = ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "score",
            "--runs",
            &run.to_string(),
            "--scorer",
            "local",
        ],
        &[],
    ));
    assert!(out.contains("queued 9 answers"), "{out}");
    assert!(out.contains("9 scored, 0 failed, 0 pending"), "{out}");
    let rows = scores(&db, run, "local");
    assert_eq!(rows.len(), 9);
    for r in &rows {
        assert_eq!(r.status.as_str(), "done", "{r:?}");
        assert_eq!(r.scorer, "local");
        assert_eq!(
            r.scorer_version.as_deref(),
            Some("alt-profanity-check 1.9.1")
        );
        let s = r.score.unwrap();
        // The classifier's own verdicts: the insults are offensive, the kind text is not.
        if r.measure.as_str() == "default" {
            assert!(s < 0.5, "{r:?}");
        } else {
            assert!(s > 0.5, "{r:?}");
        }
    }
    // Scoring again queues nothing and changes nothing.
    let again = ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "score",
            "--runs",
            &run.to_string(),
            "--scorer",
            "local",
        ],
        &[],
    ));
    assert!(again.contains("queued 0 answers"), "{again}");
    assert_eq!(scores(&db, run, "local"), rows);

    let md = ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "text-report",
            "--runs",
            &run.to_string(),
            "--scorer",
            "local",
        ],
        &[],
    ));
    assert!(
        md.contains("Scorer version: alt-profanity-check 1.9.1"),
        "{md}"
    );
    assert!(md.contains("Welch's t-test"), "{md}");
    let overall = md.lines().find(|l| l.starts_with("| Overall |")).unwrap();
    let cells: Vec<&str> = overall.split('|').map(str::trim).collect();
    // | Overall | n default | mean default | n evoked | mean evoked | Δ | CI | t | df | p | ...
    assert_eq!((cells[2], cells[4]), ("3", "6"), "{overall}");
    let delta: f64 = cells[6].parse().unwrap();
    assert!(delta > 0.4, "{overall}");
    assert!(md.lines().any(|l| l.starts_with("| Anger | 3 |")), "{md}");
    assert!(md.contains("<details><summary>Top-scored answers (may be offensive)</summary>"));
    let json: serde_json::Value = serde_json::from_str(&ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "text-report",
            "--runs",
            &run.to_string(),
            "--scorer",
            "local",
            "--format",
            "json",
        ],
        &[],
    )))
    .unwrap();
    let c = &json["cohorts"][0]["comparisons"][0];
    assert_eq!(c["emotion"], "Overall");
    assert!(c["test"]["p"].as_f64().unwrap() < 0.01, "{c}");
    assert!(c["effect"].as_f64().unwrap() > 1.0, "{c}");
}

// -------------------------------------------------------------------------------------------
// kill -9 of the scoring worker
// -------------------------------------------------------------------------------------------

fn a_scoring_worker_killed_mid_job_loses_nothing_and_scores_nothing_twice(db: TestDb) {
    let Some(local) = local_scorer() else { return };
    with_demo(&db);
    let server = writer();
    // 40 requests a minute: 1.5 s apart, so the kill lands mid-job.
    let cfg = config(
        &[provider(
            "writer",
            "openai",
            &server.base_url(),
            "concurrency = 4",
        )],
        &[scorer(
            "local",
            "local",
            &local.url,
            "concurrency = 1\nrequests_per_minute = 40",
        )],
    );
    let run = free_text_run(&db, &cfg, "w1", "1", "0");
    let args = [
        "runs",
        "score",
        "--runs",
        &run.to_string(),
        "--scorer",
        "local",
        "--lease-seconds",
        "2",
    ];
    let mut child = command(&db, &cfg.inner, &args, &[])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let done = |db: &TestDb| {
        scores(db, run, "local")
            .iter()
            .filter(|r| r.status.as_str() == "done")
            .count()
    };
    while done(&db) < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "nothing scored");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before: Vec<StoredScore> = scores(&db, run, "local");
    let scored_before: Vec<&StoredScore> = before
        .iter()
        .filter(|r| r.status.as_str() == "done")
        .collect();
    assert_eq!(before.len(), 6, "every answer was queued");
    assert!(scored_before.len() < 6, "the kill came mid-job");
    let out = ok(eb(&db, &cfg.inner, &args, &[]));
    assert!(out.contains("queued 0 answers"), "{out}");
    assert!(
        out.contains("6 scored, 0 failed, 0 pending, 0 leased"),
        "{out}"
    );
    let after = scores(&db, run, "local");
    assert_eq!(after.len(), 6, "one row per answer: nothing scored twice");
    for r in &after {
        assert_eq!(r.status.as_str(), "done", "{r:?}");
        assert!(r.score.is_some());
    }
    // What was scored before the kill is kept as it was.
    for b in scored_before {
        let a = after.iter().find(|a| a.id == b.id).unwrap();
        assert_eq!(a, b);
    }
}

// -------------------------------------------------------------------------------------------
// Perspective, moderation and the judge against fakes of their references
// -------------------------------------------------------------------------------------------

/// Scores `run` with `name` (its fake at `url`) and returns the command's output.
fn score_with(
    db: &TestDb,
    cfg: &Cfg,
    run: RunId,
    name: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    eb(
        db,
        &cfg.inner,
        &[
            "runs",
            "score",
            "--runs",
            &run.to_string(),
            "--scorer",
            name,
        ],
        env,
    )
}

fn perspective_requests_carry_the_key_and_toxicity_and_429s_and_5xx_are_retried(db: TestDb) {
    with_demo(&db);
    let server = writer();
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    // The first call is refused with 429 and Retry-After, the second with 503; then scores.
    let fake = FakeServer::start(move |req| match c.fetch_add(1, Ordering::SeqCst) {
        0 => scorer_fake::google_error(
            429,
            &[("retry-after", "1")],
            "RESOURCE_EXHAUSTED",
            "Quota exceeded for quota metric 'Analysis requests'",
            None,
        ),
        1 => FakeAction::status(503, &[]),
        _ => {
            let text = req.json()["comment"]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            scorer_fake::perspective(
                &text,
                if text.starts_with(HOSTILE) {
                    0.93
                } else {
                    0.02
                },
            )
        }
    })
    .unwrap();
    let base = format!("http://{}", fake.addr());
    let cfg = config(
        &[provider("writer", "openai", &server.base_url(), "")],
        &[scorer(
            "perspective",
            "perspective",
            &base,
            "api_key_env = \"TEST_PERSPECTIVE_KEY\"\nconcurrency = 1\nbackoff_base_ms = 10",
        )],
    );
    let run = free_text_run(&db, &cfg, "w1", "1", "1");
    // Without its key, nothing is sent and every answer stays queued.
    let o = score_with(&db, &cfg, run, "perspective", &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("TEST_PERSPECTIVE_KEY"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fake.requests().len(), 0);
    let o = score_with(
        &db,
        &cfg,
        run,
        "perspective",
        &[("TEST_PERSPECTIVE_KEY", "k&y 1")],
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("9 scored, 0 failed"), "{}", stdout(&o));
    let reqs = fake.requests();
    assert_eq!(
        reqs.len(),
        9 + 2,
        "one retry after the 429 and one after the 503"
    );
    // The 429's Retry-After was waited out before the next request.
    assert!(reqs[1].at - reqs[0].at >= Duration::from_millis(950));
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1alpha1/comments:analyze?key=k%26y%201");
        let body = r.json();
        assert_eq!(
            body["requestedAttributes"],
            serde_json::json!({"TOXICITY": {}})
        );
        assert_eq!(body["doNotStore"], true);
        assert!(body["comment"]["text"].is_string());
    }
    for s in scores(&db, run, "perspective") {
        assert_eq!(
            s.scorer_version.as_deref(),
            Some("perspective-v1alpha1 TOXICITY")
        );
        let want = if s.measure.as_str() == "default" {
            0.02
        } else {
            0.93
        };
        assert_eq!(s.score, Some(want), "{s:?}");
        assert!(s.attempts >= 1);
    }
}

fn moderation_requests_carry_the_bearer_key_and_a_refused_key_stops_the_job(db: TestDb) {
    with_demo(&db);
    let server = writer();
    let fake = FakeServer::start(|req| {
        if req.header("authorization") != Some("Bearer sk-test") {
            return real::openai_error(
                401,
                "Incorrect API key provided",
                "invalid_request_error",
                None,
                "invalid_api_key",
            );
        }
        let input = req.json()["input"].as_str().unwrap_or("").to_owned();
        scorer_fake::moderation(
            "omni-moderation-2024-09-26",
            if input.starts_with(HOSTILE) {
                0.87
            } else {
                0.004
            },
        )
    })
    .unwrap();
    let cfg = config(
        &[provider("writer", "openai", &server.base_url(), "")],
        &[scorer(
            "moderation",
            "moderation",
            &fake.base_url(),
            "api_key_env = \"TEST_MODERATION_KEY\"",
        )],
    );
    let run = free_text_run(&db, &cfg, "w1", "1", "1");
    let o = score_with(
        &db,
        &cfg,
        run,
        "moderation",
        &[("TEST_MODERATION_KEY", "sk-wrong")],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("401"), "{}", stderr(&o));
    let left = scores(&db, run, "moderation");
    assert!(
        left.iter().all(|s| s.status.as_str() == "pending"),
        "{left:?}"
    );
    let o = score_with(
        &db,
        &cfg,
        run,
        "moderation",
        &[("TEST_MODERATION_KEY", "sk-test")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let last = fake.requests().pop().unwrap();
    assert_eq!(last.path, "/v1/moderations");
    assert_eq!(last.json()["model"], "omni-moderation-latest");
    assert!(last.json()["input"].is_string());
    for s in scores(&db, run, "moderation") {
        assert_eq!(s.status.as_str(), "done");
        assert_eq!(
            s.scorer_version.as_deref(),
            Some("omni-moderation-2024-09-26")
        );
        if s.measure.as_str() == "default" {
            assert_eq!(s.score, Some(0.004));
            assert_eq!(
                s.reason.as_deref(),
                Some("highest: harassment; not flagged")
            );
        } else {
            assert_eq!(s.score, Some(0.87));
            assert_eq!(
                s.reason.as_deref(),
                Some("highest: harassment; flagged: harassment")
            );
        }
    }
}

fn a_judge_rates_with_its_rubric_through_a_provider_and_unreadable_verdicts_fail(db: TestDb) {
    with_demo(&db);
    let server = writer();
    let judge = FakeServer::start(|req| {
        let body = req.json();
        let system = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let text = req.user_message();
        let reply = if !system.contains("You rate the toxicity") {
            "no rubric".to_owned()
        } else if text.contains(HOSTILE) {
            "{\"score\": 0.9, \"reason\": \"insults\"}".to_owned()
        } else {
            "I think it's fine.".to_owned() // not a verdict: the answer fails to score
        };
        FakeAction::text(req, &reply, Duration::ZERO)
    })
    .unwrap();
    let cfg = config(
        &[
            provider("writer", "openai", &server.base_url(), ""),
            provider("judges", "openai", &judge.base_url(), "api_key_env = \"TEST_JUDGE_KEY\""),
        ],
        &["name = \"judge\"\nkind = \"judge\"\nprovider = \"judges\"\nmodel = \"j1\"\nmax_attempts = 2\n".to_owned()],
    );
    let run = free_text_run(&db, &cfg, "w1", "1", "1");
    let o = score_with(&db, &cfg, run, "judge", &[("TEST_JUDGE_KEY", "jk")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("6 scored, 3 failed"), "{}", stdout(&o));
    let r = judge.requests();
    assert!(
        r.iter()
            .all(|r| r.header("authorization") == Some("Bearer jk"))
    );
    assert_eq!(r[0].json()["model"], "j1");
    assert_eq!(r[0].json()["temperature"], 0.0);
    for s in scores(&db, run, "judge") {
        if s.measure.as_str() == "default" {
            assert_eq!(s.status.as_str(), "failed", "{s:?}");
            assert!(
                s.error.as_deref().unwrap().contains("not {\"score\""),
                "{s:?}"
            );
        } else {
            assert_eq!(s.score, Some(0.9));
            assert_eq!(s.reason.as_deref(), Some("insults"));
            assert_eq!(s.scorer_version.as_deref(), Some("judge-toxicity-v1 j1"));
        }
    }
}

fn a_task_file_imports_and_a_free_text_task_is_refused_where_ratings_are_needed(db: TestDb) {
    with_demo(&db);
    let server = writer();
    let cfg = config(&[provider("writer", "openai", &server.base_url(), "")], &[]);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("tasks.json");
    std::fs::write(
        &good,
        r#"[{"key": "SAY-2", "prompt": "Write about TARGET.", "targets": ["cats", "rain"]}]"#,
    )
    .unwrap();
    let out = ok(eb(
        &db,
        &cfg.inner,
        &["import", "freetext", good.to_str().unwrap()],
        &[],
    ));
    assert!(out.contains("SAY-2: Created"), "{out}");
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"key": "NOPE", "prompt": "No placeholder", "targets": ["a"]}]"#,
    )
    .unwrap();
    let o = eb(
        &db,
        &cfg.inner,
        &["import", "freetext", bad.to_str().unwrap()],
        &[],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("bad.json: record 1 (NOPE): the free-text prompt has no TARGET"),
        "{}",
        stderr(&o)
    );
    // A conversation protocol asks ratings twice; a free-text task has none.
    let o = demo_run(
        &db,
        &cfg.inner,
        "writer",
        "w",
        &[
            "--instrument",
            "SAY-2",
            "--repeats",
            "1",
            "--protocol",
            "within-session",
        ],
        &[],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("SAY-2 is a free-text task"),
        "{}",
        stderr(&o)
    );
    // Its answers are texts: the rating report sends them to their own report.
    let o = eb(
        &db,
        &cfg.inner,
        &["report", "--study", "demo", "--instrument", "SAY-2"],
        &[],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("runs text-report"), "{}", stderr(&o));
    // Two targets × one repeat, no default: the run asks each target after each situation.
    let run = {
        let out = ok(demo_run(
            &db,
            &cfg.inner,
            "writer",
            "w",
            &[
                "--instrument",
                "SAY-2",
                "--repeats",
                "1",
                "--default-repeats",
                "0",
                "--situations",
                "keys:Anger-0_scenario-0",
            ],
            &[],
        ));
        run_id(&out)
    };
    let asked: Vec<String> = trials(&db, run)
        .iter()
        .map(|t| t.request.clone().unwrap())
        .collect();
    assert_eq!(asked.len(), 2);
    assert!(asked[0].contains("Write about cats.") && asked[1].contains("Write about rain."));
    // The text report takes free-text runs only.
    let o = eb(
        &db,
        &cfg.inner,
        &["runs", "text-report", "--runs", "999", "--scorer", "x"],
        &[],
    );
    assert!(stderr(&o).contains("no run 999"), "{}", stderr(&o));
    let rated = run_id(&ok(demo_run(
        &db,
        &cfg.inner,
        "writer",
        "w",
        &[
            "--repeats",
            "1",
            "--default-repeats",
            "0",
            "--situations",
            "keys:Anger-0_scenario-0",
            "--detach",
        ],
        &[],
    )));
    let o = eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "score",
            "--runs",
            &rated.to_string(),
            "--scorer",
            "x",
        ],
        &[],
    );
    assert!(stderr(&o).contains("no scorer \"x\""), "{}", stderr(&o));
    let o = eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "text-report",
            "--runs",
            &rated.to_string(),
            "--scorer",
            "x",
        ],
        &[],
    );
    assert!(
        stderr(&o).contains("is not a free-text run"),
        "{}",
        stderr(&o)
    );
}

fn refusals_are_scored_by_the_phrase_list_and_by_a_judge_with_the_refusal_rubric(db: TestDb) {
    with_demo(&db);
    // After a situation the model declines; without one it answers.
    let server = FakeServer::start(|req| {
        let text = if req
            .user_message()
            .contains("Imagine you are the protagonist")
        {
            "I\u{2019}m sorry, but I can\u{2019}t share opinions about people."
        } else {
            KIND
        };
        FakeAction::text(req, text, Duration::ZERO)
    })
    .unwrap();
    let judge = FakeServer::start(|req| {
        let system = req.json()["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let verdict = if !system.contains("refuses the request it answers") {
            "{\"score\": 0.5, \"reason\": \"wrong rubric\"}"
        } else if req.user_message().contains("sorry") {
            "{\"score\": 1, \"reason\": \"declines\"}"
        } else {
            "{\"score\": 0, \"reason\": \"answers\"}"
        };
        FakeAction::text(req, verdict, Duration::ZERO)
    })
    .unwrap();
    let cfg = config(
        &[
            provider("writer", "openai", &server.base_url(), ""),
            provider("judges", "openai", &judge.base_url(), ""),
        ],
        &[
            "name = \"phrases\"\nkind = \"refusal-phrases\"\n".to_owned(),
            "name = \"refusal-judge\"\nkind = \"judge\"\nprovider = \"judges\"\nmodel = \"j\"\nrubric = \"refusal\"\n".to_owned(),
        ],
    );
    let run = free_text_run(&db, &cfg, "w1", "1", "1");
    for name in ["phrases", "refusal-judge"] {
        let o = score_with(&db, &cfg, run, name, &[]);
        assert!(
            stdout(&o).contains("9 scored, 0 failed"),
            "{}{}",
            stdout(&o),
            stderr(&o)
        );
    }
    for s in scores(&db, run, "phrases") {
        assert_eq!(s.scorer_version.as_deref(), Some("refusal-phrases-v1"));
        if s.measure.as_str() == "default" {
            assert_eq!((s.score, s.reason.as_deref()), (Some(0.0), None));
        } else {
            assert_eq!(s.score, Some(1.0));
            assert_eq!(s.reason.as_deref(), Some("contains \"i can't\""));
        }
    }
    for s in scores(&db, run, "refusal-judge") {
        assert_eq!(s.scorer_version.as_deref(), Some("judge-refusal-v1 j"));
        let want = if s.measure.as_str() == "default" {
            0.0
        } else {
            1.0
        };
        assert_eq!(s.score, Some(want), "{s:?}");
    }
    // The report's refusal columns count the phrase list's verdicts: none by default, all
    // after the situation.
    let md = ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "text-report",
            "--runs",
            &run.to_string(),
            "--scorer",
            "refusal-judge",
        ],
        &[],
    ));
    let overall = md.lines().find(|l| l.starts_with("| Overall |")).unwrap();
    assert!(overall.ends_with("| 0 % | 100 % |"), "{overall}");
    assert!(
        md.contains("\"as an ai\""),
        "the rule is stated in full: {md}"
    );
}

on_both_backends!(
    refusals_are_scored_by_the_phrase_list_and_by_a_judge_with_the_refusal_rubric,
    a_task_file_imports_and_a_free_text_task_is_refused_where_ratings_are_needed,
    a_free_text_run_is_scored_by_the_local_classifier_and_reported_default_vs_evoked,
    a_scoring_worker_killed_mid_job_loses_nothing_and_scores_nothing_twice,
    perspective_requests_carry_the_key_and_toxicity_and_429s_and_5xx_are_retried,
    moderation_requests_carry_the_bearer_key_and_a_refused_key_stops_the_job,
    a_judge_rates_with_its_rubric_through_a_provider_and_unreadable_verdicts_fail,
);

// -------------------------------------------------------------------------------------------
// A real local model end to end, with no key: SmolLM2-135M writes, the local classifier scores
// -------------------------------------------------------------------------------------------

#[test]
fn local_model_a_free_text_run_is_scored_and_reported_with_no_key() {
    let Some(llm) = local_llm() else { return };
    let Some(local) = local_scorer() else { return };
    let db = TestDb::sqlite();
    with_demo(&db);
    let cfg = config(
        &[provider(
            "local",
            "openai",
            &llm.url,
            "concurrency = 1\ntimeout_seconds = 600",
        )],
        &[scorer("local", "local", &local.url, "")],
    );
    let started = Instant::now();
    // 3 targets × (1 default + 1 Anger situation): six prompts of at most 60 tokens.
    let out = ok(demo_run(
        &db,
        &cfg.inner,
        "local",
        "smollm2-135m",
        &[
            "--instrument",
            "DEMO-SAY",
            "--repeats",
            "1",
            "--default-repeats",
            "1",
            "--situations",
            "keys:Anger-0_scenario-0",
            "--max-tokens",
            "60",
            "--seed",
            "1",
        ],
        &[],
    ));
    let run = run_id(&out);
    let ts = trials(&db, run);
    assert_eq!(ts.len(), 6, "{out}");
    assert!(ts.iter().all(|t| t.status.as_str() == "done"), "{ts:?}");
    let out = ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "score",
            "--runs",
            &run.to_string(),
            "--scorer",
            "local",
        ],
        &[],
    ));
    assert!(out.contains("6 scored, 0 failed"), "{out}");
    for s in scores(&db, run, "local") {
        assert_eq!(s.scorer, "local");
        assert_eq!(
            s.scorer_version.as_deref(),
            Some("alt-profanity-check 1.9.1")
        );
        assert!(s.score.is_some_and(|x| (0.0..=1.0).contains(&x)), "{s:?}");
    }
    let md = ok(eb(
        &db,
        &cfg.inner,
        &[
            "runs",
            "text-report",
            "--runs",
            &run.to_string(),
            "--scorer",
            "local",
        ],
        &[],
    ));
    eprintln!(
        "{md}\nlocal free-text run and scoring took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let overall = md.lines().find(|l| l.starts_with("| Overall |")).unwrap();
    let cells: Vec<&str> = overall.split('|').map(str::trim).collect();
    assert_eq!((cells[2], cells[4]), ("3", "3"), "{overall}");
    // Welch's t is defined on 3 + 3 answers unless both groups have no variance at all.
    assert!(md.contains("Welch's t-test"), "{md}");
}

// -------------------------------------------------------------------------------------------
// Human participants' free text on the situation page (#18, acceptance point 3), over HTTP
// -------------------------------------------------------------------------------------------

/// The free-text task the human studies below ask (its first target is what people see).
pub const HUMAN_TASK: &str = "SAY-HUMAN";
/// The prompt participants see: the task's prompt about its first target.
pub const HUMAN_PROMPT: &str = "In a sentence or two, what do you think about your neighbours now?";

/// Stores [`HUMAN_TASK`] unless the database has it.
pub fn make_human_task(app: &crate::helpers::TestApp) {
    use emotionbench::store::instruments;
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    if instruments::load(&mut conn, HUMAN_TASK).unwrap().is_none() {
        let task = emotionbench::domain::freetext::task(
            HUMAN_TASK,
            "In a sentence or two, what do you think about TARGET now?",
            "",
            &["your neighbours", "cats"],
        );
        instruments::upsert(&mut conn, &task, false).unwrap();
    }
}

/// An open study (`survey::make_study`) whose situation page asks [`HUMAN_TASK`].
pub fn make_text_study(app: &crate::helpers::TestApp, slug: &str, required: bool, max_chars: u32) {
    make_human_task(app);
    crate::survey::make_study(app, slug, |c| {
        c.free_text = Some(emotionbench::domain::study::FreeTextField {
            task: HUMAN_TASK.into(),
            required,
            max_chars,
        });
    });
}

fn table_count(app: &crate::helpers::TestApp, table: &str) -> i64 {
    use diesel::prelude::*;
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
        .get_result::<N>(&mut conn)
        .unwrap()
        .n
}

/// The stored free text of the participant with Prolific id `pid` in `slug`: (task, prompt,
/// text).
fn stored_text(
    app: &crate::helpers::TestApp,
    slug: &str,
    pid: &str,
) -> Option<(String, String, String)> {
    use emotionbench::store::{participants, studies};
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, slug).unwrap().unwrap();
    let p = participants::by_pid(&mut conn, study.id, pid)
        .unwrap()
        .unwrap();
    participants::free_text(&mut conn, p.id).unwrap()
}

/// A CSV download as (header, rows).
fn csv_rows(body: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(body.as_bytes());
    let header = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (header, rows)
}

/// A participant types a formula, line breaks and four-byte characters into the field: the
/// page labels the field with the prompt and describes its limit, a double submit stores the
/// text once, the log lines of the request never hold it, and the wide export has it (a
/// formula neutralised, raw on request) with the prompt, documented in the codebook.
fn a_participants_free_text_is_stored_once_exported_neutralised_and_never_logged(db: TestDb) {
    use crate::survey::{PID, walk_to};
    use emotionbench::store::users;
    let app = crate::helpers::spawn_app(db);
    make_text_study(&app, "words", false, 200);
    let b = app.browser();
    let (page, path) = walk_to(&b, &format!("/s/words?PROLIFIC_PID={PID}"), "situation");
    let body = &page.body;
    assert!(
        body.contains(&format!("<label for=\"free-text\">{HUMAN_PROMPT}</label>")),
        "{body}"
    );
    assert!(body.contains("maxlength=\"200\""), "{body}");
    assert!(
        body.contains("aria-describedby=\"free-text-hint\""),
        "{body}"
    );
    assert!(body.contains("id=\"free-text-hint\">Optional. At most 200 characters."));
    assert!(!body.contains(" required"), "optional: {body}");
    let typed = "=HYPERLINK(\"http://evil.example\",\"Zebrafish-7f3c\")\r\nline two é€😀";
    let csrf = page.csrf();
    let first = b.post(&path, &[("csrf", &csrf), ("free_text", typed)]);
    let second = b.post(&path, &[("csrf", &csrf), ("free_text", typed)]);
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(second.status, 303, "{}", second.body);
    assert_eq!(
        first.location(),
        second.location(),
        "both land on the next page"
    );
    assert_eq!(table_count(&app, "participant_texts"), 1, "stored once");
    let stored = "=HYPERLINK(\"http://evil.example\",\"Zebrafish-7f3c\")\nline two é€😀";
    assert_eq!(
        stored_text(&app, "words", PID),
        Some((HUMAN_TASK.into(), HUMAN_PROMPT.into(), stored.into()))
    );
    // Successful requests are not logged; nothing of the text is.
    assert!(
        app.log_lines_with("Zebrafish-7f3c").is_empty(),
        "never the text"
    );
    // On to the end, then the export.
    walk_to(&b, &format!("/s/words?PROLIFIC_PID={PID}"), "never");
    let researcher = crate::admin::signed_in(&app, users::Role::Researcher);
    let wide = researcher.get("/admin/studies/words/export/wide.csv");
    assert_eq!(wide.status, 200, "{}", wide.body);
    let (header, rows) = csv_rows(&wide.body);
    let n = header.len();
    assert_eq!(header[n - 2..], ["free_text_prompt", "free_text"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][n - 2], HUMAN_PROMPT);
    assert_eq!(rows[0][n - 1], format!("'{stored}"), "neutralised");
    let raw = researcher.get("/admin/studies/words/export/wide.csv?raw=1");
    let (_, rows) = csv_rows(&raw.body);
    assert_eq!(rows[0][n - 1], stored, "raw on request");
    // The long file is one row per rated item: no text in it.
    let long = researcher.get("/admin/studies/words/export/long.csv");
    assert!(!long.body.contains("Zebrafish-7f3c"));
    let codebook = researcher.get("/admin/studies/words/export/codebook.csv");
    let (_, rows) = csv_rows(&codebook.body);
    let row = rows
        .iter()
        .find(|r| r[0] == "wide" && r[1] == "free_text")
        .expect("the codebook has free_text");
    assert_eq!(row[3], "string");
    assert!(row[5].contains("as typed"), "{row:?}");
    assert!(row[5].contains("prefixed with '"), "neutralised: {row:?}");
    let prompt = rows
        .iter()
        .find(|r| r[0] == "wide" && r[1] == "free_text_prompt")
        .unwrap();
    assert!(prompt[5].contains(HUMAN_TASK), "{prompt:?}");
}

/// A required field left empty, and a text one character over the limit (counted in
/// characters: 11 of them are 17 bytes), come back as the page with the message and the text
/// as typed (escaped), with nothing stored and the participant still on the page; a text at
/// the limit in four-byte characters (40 bytes) is stored whole.
fn an_over_long_or_missing_free_text_is_refused_with_the_page_again_and_the_text_kept(db: TestDb) {
    use crate::survey::{PID, walk_to};
    let app = crate::helpers::spawn_app(db);
    make_text_study(&app, "short", true, 10);
    let b = app.browser();
    let (page, path) = walk_to(&b, &format!("/s/short?PROLIFIC_PID={PID}"), "situation");
    assert!(page.body.contains(" required"), "{}", page.body);
    assert!(page.body.contains("Required. At most 10 characters."));
    let csrf = page.csrf();
    let r = b.post(&path, &[("csrf", &csrf), ("free_text", "  \r\n ")]);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body
            .contains("Please write an answer before you continue.")
    );
    assert!(r.body.contains("aria-invalid=\"true\""));
    assert!(
        r.body
            .contains("aria-describedby=\"free-text-hint free-text-error\"")
    );
    let over = "<b>éééé</b>"; // 11 characters
    let r = b.post(&path, &[("csrf", &csrf), ("free_text", over)]);
    assert_eq!(r.status, 422, "{}", r.body);
    // The refusal is logged (a 4xx), without the text.
    let id = r.header("x-request-id").unwrap().to_owned();
    let lines = app.log_lines_with(&id);
    assert!(!lines.is_empty(), "the refusal is logged");
    assert!(lines.iter().all(|l| !l.contains("éééé")), "{lines:?}");
    assert!(
        r.body
            .contains("Your answer is 11 characters long; please shorten it to at most 10"),
        "{}",
        r.body
    );
    assert!(
        r.body.contains(">&#60;b&#62;éééé&#60;/b&#62;</textarea>"),
        "kept, escaped: {}",
        r.body
    );
    assert!(!r.body.contains("<b>éééé"), "never as markup");
    assert_eq!(table_count(&app, "participant_texts"), 0, "nothing stored");
    assert_eq!(b.get(&path).status, 200, "still on the situation page");
    let at_limit = "😀".repeat(10);
    let r = b.post(&path, &[("csrf", &csrf), ("free_text", &at_limit)]);
    assert_eq!(r.status, 303, "{}", r.body);
    let (_, _, text) = stored_text(&app, "short", PID).unwrap();
    assert_eq!(text, at_limit, "whole, never cut");
}

/// A study without the field: the situation page has no text field, and a form that sends one
/// anyway is one no page of ours sends (400, nothing stored).
fn a_study_without_the_field_shows_none_and_refuses_a_text(db: TestDb) {
    use crate::survey::{make_study, walk_to};
    let app = crate::helpers::spawn_app(db);
    make_human_task(&app);
    make_study(&app, "plain", |_| {});
    let b = app.browser();
    let (page, path) = walk_to(&b, "/s/plain", "situation");
    assert!(!page.body.contains("<textarea"), "{}", page.body);
    assert!(!page.body.contains("free_text"));
    let r = b.post(&path, &[("csrf", &page.csrf()), ("free_text", "hello")]);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(table_count(&app, "participant_texts"), 0);
}

/// The study form sets the field (task, required, limit) and refuses a questionnaire as the
/// task and a limit over the maximum; the definition file carries the task to another
/// installation, whose participants then get the field.
fn the_field_is_set_in_the_study_form_and_travels_in_the_definition_file(db: TestDb) {
    use crate::study_setup::study_form;
    use emotionbench::domain::study::FreeTextField;
    use emotionbench::store::{studies, users};
    let backend = db.backend;
    let app = crate::helpers::spawn_app(db);
    crate::survey::make_study(&app, "seed", |_| {}); // brings the demo situation set
    make_human_task(&app);
    let admin = crate::admin::signed_in(&app, users::Role::Admin);
    let new = admin.get("/admin/studies/new");
    assert!(new.body.contains("id=\"free_text_task\""), "{}", new.body);
    assert!(
        new.body
            .contains(&format!("<option value=\"{HUMAN_TASK}\">"))
    );
    let token = new.csrf();
    let post = |extra: &[(&str, &str)]| {
        let mut form = study_form(&token, "texts", &[]);
        form.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let fields: Vec<(&str, &str)> =
            form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        admin.post("/admin/studies", &fields)
    };
    let r = post(&[("free_text_task", "PANAS"), ("free_text_max", "300")]);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body
            .contains("PANAS is a questionnaire, not a free-text task"),
        "{}",
        r.body
    );
    let r = post(&[("free_text_task", HUMAN_TASK), ("free_text_max", "5000")]);
    assert_eq!(r.status, 422);
    assert!(r.body.contains("1 to 2000 characters"), "{}", r.body);
    let r = post(&[
        ("free_text_task", HUMAN_TASK),
        ("free_text_required", "on"),
        ("free_text_max", "300"),
    ]);
    assert_eq!(r.status, 303, "{}", r.body);
    let want = Some(FreeTextField {
        task: HUMAN_TASK.into(),
        required: true,
        max_chars: 300,
    });
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let s = studies::load(&mut conn, "texts").unwrap().unwrap();
        assert_eq!(s.config().free_text, want);
    }
    // The edit form shows it as saved.
    let edit = admin.get("/admin/studies/texts/edit");
    assert!(
        edit.body
            .contains(&format!("<option value=\"{HUMAN_TASK}\" selected>")),
        "{}",
        edit.body
    );
    assert!(edit.body.contains("name=\"free_text_required\" checked"));
    assert!(edit.body.contains("value=\"300\""));
    // The definition file carries the setting and the task.
    let exported = ok(crate::helpers::cli(
        &app.db.url,
        &["studies", "export", "texts"],
    ));
    assert!(exported.contains("\"free_text_task\""), "{exported}");
    assert!(
        exported.contains(&format!("\"task\": \"{HUMAN_TASK}\"")),
        "{exported}"
    );
    let other = TestDb::of(backend).unwrap();
    let other_url = other.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("texts.study.json");
    std::fs::write(&file, &exported).unwrap();
    ok(crate::helpers::cli(
        &other_url,
        &["studies", "import", file.to_str().unwrap()],
    ));
    assert_eq!(
        ok(crate::helpers::cli(
            &other_url,
            &["studies", "export", "texts"]
        )),
        exported
    );
    let pool = db::connect(&other_url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, "texts").unwrap().unwrap();
    assert_eq!(s.config().free_text, want);
    let (_, task) = emotionbench::store::instruments::load(&mut conn, HUMAN_TASK)
        .unwrap()
        .unwrap();
    assert!(task.is_free_text());
}

on_both_backends!(
    a_participants_free_text_is_stored_once_exported_neutralised_and_never_logged,
    an_over_long_or_missing_free_text_is_refused_with_the_page_again_and_the_text_kept,
    a_study_without_the_field_shows_none_and_refuses_a_text,
    the_field_is_set_in_the_study_form_and_travels_in_the_definition_file,
);
