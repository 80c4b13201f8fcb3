//! Model runs against a fake that behaves as the real providers do (issue #22, findings 1–9):
//! the 400s of reasoning models and Claude 4.5+/4.7, Gemini's MAX_TOKENS-without-parts,
//! safety blocks and refusals, account-level 429s, delays in bodies and headers, invalid keys
//! and unknown models. Each test asserts the run's outcome: it completes, stops with its
//! message, or records the right class. The replies are `llm::fake::real`, whose comments cite
//! where each shape comes from.

use std::process::Output;
use std::time::Duration;

use emotionbench::llm::fake::{FakeAction, FakeRequest, FakeServer, real};
use emotionbench::store::runs::{self, AttemptRecord, TrialRecord};
use emotionbench::store::{RunId, db};

use crate::helpers::{TestDb, ok, stderr, stdout};
use crate::on_both_backends;
use crate::runs::{config, eb, provider, run_id, run_status};

/// One default-measure trial of the demo study on `model` at provider `fake` of `kind`.
fn one_trial(
    db: &TestDb,
    server: &FakeServer,
    kind: &str,
    model: &str,
    extra: &str,
    more: &[&str],
) -> (RunId, Output) {
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let cfg = config(&[provider(
        "fake",
        kind,
        &server.base_url(),
        &format!("concurrency = 1\nbackoff_base_ms = 50\n{extra}"),
    )]);
    let mut args = vec![
        "run",
        "--study",
        "demo",
        "--provider",
        "fake",
        "--model",
        model,
        "--default-repeats",
        "1",
        "--repeats",
        "0",
    ];
    args.extend_from_slice(more);
    let out = eb(db, &cfg, &args, &[]);
    let id = run_id(&stdout(&out));
    (id, out)
}

fn trial(db: &TestDb, run: RunId) -> TrialRecord {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    runs::trials(&mut conn, run).unwrap().remove(0)
}

fn attempts(db: &TestDb, run: RunId) -> Vec<AttemptRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    runs::attempts(&mut conn, run).unwrap()
}

fn params(db: &TestDb, run: RunId) -> serde_json::Value {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let r = runs::get(&mut conn, run).unwrap().unwrap();
    serde_json::from_str(&r.params.to_text().unwrap()).unwrap()
}

fn answer(req: &FakeRequest) -> FakeAction {
    FakeAction::answer(req, 3, Duration::ZERO)
}

// Finding 1 -----------------------------------------------------------------------------------

fn f1_openai_reasoning_models_get_max_completion_tokens_and_complete(db: TestDb) {
    let server = FakeServer::start(|req| real::openai_reasoning(req, answer(req))).unwrap();
    let (run, out) = one_trial(&db, &server, "openai", "o3-mini", "", &[]);
    let err = stderr(&out);
    ok(out);
    assert!(err.contains("does not take a temperature"), "{err}");
    assert_eq!(server.requests().len(), 1);
    let body = server.requests()[0].json();
    assert_eq!(body["max_completion_tokens"], 8192);
    assert!(body.get("max_tokens").is_none() && body.get("temperature").is_none());
    assert_eq!(trial(&db, run).status.as_str(), "done");
    // The manifest keeps both what was asked and what was sent.
    let p = params(&db, run);
    assert_eq!(p["temperature"], 0.0);
    assert_eq!(p["sent"]["token_field"], "max_completion_tokens");
    assert!(p["sent"]["temperature"].is_null());

    // Reasoning that uses up the cap leaves `content` empty with finish_reason "length": the
    // trial records `truncated` at once instead of re-asking.
    let db = TestDb::of(db.backend).unwrap();
    let server = FakeServer::start(|_| {
        real::json(
            200,
            &[],
            &serde_json::json!({"model": "o3-mini-2025-01-31",
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": "", "refusal": null}}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 8192, "total_tokens": 9092}}),
        )
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "openai", "o3-mini", "", &[]);
    ok(out);
    assert_eq!(server.requests().len(), 1, "not re-asked");
    let t = trial(&db, run);
    assert_eq!(t.status.as_str(), "failed");
    assert_eq!(t.error_class.map(|c| c.as_str()), Some("truncated"));
    assert_eq!(t.finish_reason.as_deref(), Some("length"));
    assert_eq!(t.output_tokens, Some(8192));
}

// Finding 2 -----------------------------------------------------------------------------------

fn f2_claude_4_7_gets_no_temperature_4_5_not_both_and_the_range_is_0_to_1(db: TestDb) {
    let server = FakeServer::start(|req| {
        let model = req.json()["model"].as_str().unwrap_or("").to_owned();
        real::anthropic_sampling(req, &model, answer(req))
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "anthropic", "claude-opus-4-7", "", &[]);
    ok(out);
    assert_eq!(trial(&db, run).status.as_str(), "done");
    assert!(server.requests()[0].json().get("temperature").is_none());

    let db = TestDb::of(db.backend).unwrap();
    let (run, out) = one_trial(
        &db,
        &server,
        "anthropic",
        "claude-sonnet-4-5-20250929",
        "",
        &["--top-p", "0.9"],
    );
    let err = stderr(&out);
    ok(out);
    assert!(err.contains("not both"), "{err}");
    assert_eq!(trial(&db, run).status.as_str(), "done");
    let last = server.requests().last().unwrap().json();
    assert_eq!(last["temperature"], 0.0);
    assert!(last.get("top_p").is_none());

    // Outside the Messages API's 0–1: refused before the run exists, nothing sent.
    let db = TestDb::of(db.backend).unwrap();
    let before = server.requests().len();
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let cfg = config(&[provider("fake", "anthropic", &server.base_url(), "")]);
    let out = eb(
        &db,
        &cfg,
        &[
            "run",
            "--study",
            "demo",
            "--provider",
            "fake",
            "--model",
            "claude-sonnet-4-5",
            "--default-repeats",
            "1",
            "--repeats",
            "0",
            "--temperature",
            "1.5",
        ],
        &[],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("from 0 to 1"), "{}", stderr(&out));
    assert_eq!(server.requests().len(), before);
}

// Findings 3 and 4 ----------------------------------------------------------------------------

fn f3_gemini_thinking_models_get_room_to_answer_and_truncation_is_not_re_asked(db: TestDb) {
    // Thinking takes 1,500 tokens: at the old cap of 512 nothing is left for the answer.
    let server = FakeServer::start(|req| {
        let text: Vec<String> = (1..=req.item_count()).map(|i| format!("{i}. 2")).collect();
        real::gemini_thinking(req, &text.join("\n"), 1500)
    })
    .unwrap();
    let (run, out) = one_trial(
        &db,
        &server,
        "gemini",
        "models/gemini-2.5-flash",
        "price_input_per_mtok = 1.0\nprice_output_per_mtok = 10.0",
        &[],
    );
    ok(out);
    let req = &server.requests()[0];
    // `models/x` is not doubled in the path.
    assert!(
        req.path
            .ends_with("/models/gemini-2.5-flash:generateContent"),
        "{}",
        req.path
    );
    assert_eq!(req.json()["generationConfig"]["maxOutputTokens"], 8192);
    let t = trial(&db, run);
    assert_eq!(t.status.as_str(), "done");
    // Finding 4: thinking is output, and costed as output.
    // The fake counts the answer's tokens as its length / 2 (PANAS: 20 items).
    let text: Vec<String> = (1..=20).map(|i| format!("{i}. 2")).collect();
    let answer_tokens = i64::try_from(text.join("\n").len() / 2).unwrap();
    let out_tokens = t.output_tokens.unwrap();
    assert_eq!(out_tokens, 1500 + answer_tokens);
    let expected = (t.input_tokens.unwrap() as f64 * 1.0 + out_tokens as f64 * 10.0).round() as i64;
    assert_eq!(t.cost_micros, Some(expected));
    assert_eq!(t.model_version.as_deref(), Some("gemini-2.5-flash"));

    // With the cap forced back to 512, the MAX_TOKENS-without-parts candidate is `truncated`,
    // once, with its thinking still counted.
    let db = TestDb::of(db.backend).unwrap();
    let (run, out) = one_trial(
        &db,
        &server,
        "gemini",
        "gemini-2.5-flash",
        "[[providers.models]]\npattern = \"gemini-2.5*\"\nmin_output_tokens = 0",
        &[],
    );
    ok(out);
    let t = trial(&db, run);
    assert_eq!(t.status.as_str(), "failed");
    assert_eq!(t.error_class.map(|c| c.as_str()), Some("truncated"));
    assert_eq!(t.finish_reason.as_deref(), Some("MAX_TOKENS"));
    assert_eq!(t.output_tokens, Some(512));
    assert_eq!(attempts(&db, run).len(), 1, "not re-asked");
}

// Finding 5 -----------------------------------------------------------------------------------

fn f5_the_snapshot_and_finish_reason_are_stored_per_trial(db: TestDb) {
    let server = FakeServer::start(|req| {
        let text: Vec<String> = (1..=req.item_count()).map(|i| format!("{i}. 4")).collect();
        real::json(
            200,
            &[],
            &serde_json::json!({"id": "chatcmpl-x", "object": "chat.completion",
                "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_50cad350e4",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text.join("\n"),
                                         "refusal": null}}]}),
        )
    })
    .unwrap();
    let (run, out) = one_trial(
        &db,
        &server,
        "openai",
        "gpt-4o",
        "price_input_per_mtok = 1.0",
        &[],
    );
    ok(out);
    let t = trial(&db, run);
    assert_eq!(t.status.as_str(), "done");
    assert_eq!(t.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        t.model_version.as_deref(),
        Some("gpt-4o-2024-08-06 (fp_50cad350e4)")
    );
    // Finding 10: a reply without `usage` is unknown usage, not 0 tokens and $0.
    assert_eq!(
        (t.input_tokens, t.output_tokens, t.cost_micros),
        (None, None, None)
    );
}

/// A reply a fake gives to every request.
type Reply = fn() -> FakeAction;
/// Provider kind, model, reply, expected class, a word of the expected message.
type Case = (
    &'static str,
    &'static str,
    Reply,
    &'static str,
    &'static str,
);

// Finding 6 -----------------------------------------------------------------------------------

fn f6_blocks_and_refusals_are_their_own_class_and_not_re_asked(db: TestDb) {
    let cases: [Case; 3] = [
        (
            "gemini",
            "gemini-2.0-flash",
            || real::gemini_prompt_blocked("SAFETY"),
            "blocked",
            "SAFETY",
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            real::anthropic_refusal,
            "refused",
            "refusal",
        ),
        (
            "openai",
            "gpt-4o",
            real::openai_refusal,
            "refused",
            "can't help",
        ),
    ];
    for (kind, model, reply, class, reason) in cases {
        let db = TestDb::of(db.backend).unwrap();
        let server = FakeServer::start(move |_| reply()).unwrap();
        let (run, out) = one_trial(&db, &server, kind, model, "", &[]);
        ok(out);
        assert_eq!(server.requests().len(), 1, "{kind}: not re-asked");
        let t = trial(&db, run);
        assert_eq!(t.status.as_str(), "failed");
        assert_eq!(t.error_class.map(|c| c.as_str()), Some(class), "{kind}");
        assert!(
            t.error.as_deref().unwrap().contains(reason),
            "{kind}: {t:?}"
        );
    }
}

// Finding 7 -----------------------------------------------------------------------------------

fn f7_account_quota_429s_stop_the_run_with_a_message(db: TestDb) {
    let cases: [(&str, Reply); 3] = [
        ("openai", real::openai_insufficient_quota),
        ("gemini", || {
            real::gemini_resource_exhausted(
                "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "47s",
            )
        }),
        ("anthropic", || {
            real::anthropic_error(
                400,
                "invalid_request_error",
                "You have reached your specified API usage limits. You will regain access on 2026-12-31 at 00:00 UTC.",
            )
        }),
    ];
    for (kind, reply) in cases {
        let db = TestDb::of(db.backend).unwrap();
        let server = FakeServer::start(move |_| reply()).unwrap();
        let (run, out) = one_trial(&db, &server, kind, "m", "", &[]);
        assert!(!out.status.success(), "{kind}");
        let err = stderr(&out);
        assert!(
            err.contains("quota, credit or spend limit"),
            "{kind}: {err}"
        );
        assert_eq!(server.requests().len(), 1, "{kind}: not retried per trial");
        let (status, error) = run_status(&db, run);
        assert_eq!(status, "failed");
        assert!(error.unwrap().contains("run resume"));
        let t = trial(&db, run);
        assert_eq!(
            t.status.as_str(),
            "pending",
            "{kind}: kept for `run resume`"
        );
        assert_eq!(t.error_class.map(|c| c.as_str()), Some("quota"));
    }
    // Anthropic's billing_error (SDK ErrorType), whatever its status.
    let db = TestDb::of(db.backend).unwrap();
    let server = FakeServer::start(|_| {
        real::anthropic_error(402, "billing_error", "Your credit balance is too low.")
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "anthropic", "claude-haiku-4-5", "", &[]);
    assert!(!out.status.success());
    assert_eq!(run_status(&db, run).0, "failed");
}

// Finding 8 -----------------------------------------------------------------------------------

fn f8_delays_in_retry_info_and_retry_after_ms_are_waited_and_x_should_retry_honoured(db: TestDb) {
    // Gemini's per-minute 429 carries its delay only in the body.
    let server = FakeServer::start(|req| {
        if req.number == 1 {
            real::gemini_resource_exhausted(
                "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                "2s",
            )
        } else {
            answer(req)
        }
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "gemini", "gemini-2.0-flash", "", &[]);
    ok(out);
    let reqs = server.requests();
    assert!(
        reqs[1].at - reqs[0].at >= Duration::from_secs(2),
        "waited only {:?}",
        reqs[1].at - reqs[0].at
    );
    assert_eq!(trial(&db, run).status.as_str(), "done");
    assert_eq!(
        attempts(&db, run)[0].error_class.map(|c| c.as_str()),
        Some("rate_limited")
    );

    // OpenAI and Anthropic send milliseconds in `retry-after-ms`, preferred to Retry-After.
    let db = TestDb::of(db.backend).unwrap();
    let server = FakeServer::start(|req| {
        if req.number == 1 {
            FakeAction::status(429, &[("retry-after-ms", "1500"), ("retry-after", "0")])
        } else {
            answer(req)
        }
    })
    .unwrap();
    let (_, out) = one_trial(&db, &server, "openai", "gpt-4o", "", &[]);
    ok(out);
    let reqs = server.requests();
    assert!(reqs[1].at - reqs[0].at >= Duration::from_millis(1500));

    // `x-should-retry: false` on a 5xx: not retried.
    let db = TestDb::of(db.backend).unwrap();
    let server =
        FakeServer::start(|_| FakeAction::status(503, &[("x-should-retry", "false")])).unwrap();
    let (run, out) = one_trial(&db, &server, "anthropic", "claude-sonnet-4-5", "", &[]);
    ok(out);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        trial(&db, run).error_class.map(|c| c.as_str()),
        Some("server")
    );

    // `x-should-retry: true` on a 409: retried.
    let db = TestDb::of(db.backend).unwrap();
    let server = FakeServer::start(|req| {
        if req.number == 1 {
            FakeAction::status(409, &[("x-should-retry", "true")])
        } else {
            answer(req)
        }
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "anthropic", "claude-sonnet-4-5", "", &[]);
    ok(out);
    assert_eq!(trial(&db, run).status.as_str(), "done");
}

// Finding 9 -----------------------------------------------------------------------------------

fn f9_invalid_keys_in_any_shape_and_unknown_models_stop_the_run(db: TestDb) {
    let server = FakeServer::start(|_| real::gemini_invalid_key()).unwrap();
    let (run, out) = one_trial(&db, &server, "gemini", "gemini-2.5-flash", "", &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("API key not valid"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(run_status(&db, run).0, "failed");
    assert_eq!(
        trial(&db, run).error_class.map(|c| c.as_str()),
        Some("auth")
    );

    let db = TestDb::of(db.backend).unwrap();
    let server = FakeServer::start(|req| {
        let model = req.json()["model"].as_str().unwrap_or("").to_owned();
        real::openai_unknown_model(&model)
    })
    .unwrap();
    let (run, out) = one_trial(&db, &server, "openai", "gpt-4.7-typo", "", &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("does not know model \"gpt-4.7-typo\""),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
    let (status, error) = run_status(&db, run);
    assert_eq!(status, "failed");
    assert!(error.unwrap().contains("HTTP 404"));
    assert_eq!(
        trial(&db, run).error_class.map(|c| c.as_str()),
        Some("unknown_model")
    );
}

// The web form (the CLI's `note:` lines, and the 0–1 range) ---------------------------------

/// An Anthropic reply with its snapshot and stop reason, answering every item.
fn anthropic_reply(req: &FakeRequest) -> FakeAction {
    let text: Vec<String> = (1..=req.item_count()).map(|i| format!("{i}. 3")).collect();
    real::json(
        200,
        &[],
        &serde_json::json!({"id": "msg_x", "type": "message", "role": "assistant",
            "model": "claude-opus-4-7-20260101",
            "content": [{"type": "text", "text": text.join("\n")}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 120, "output_tokens": 9}}),
    )
}

fn the_run_form_refuses_anthropic_above_1_and_confirms_the_notes_before_the_run_exists(db: TestDb) {
    use emotionbench::config::{ProviderConfig, ProviderKind};
    use emotionbench::store::users::Role;
    let server = FakeServer::start(|req| {
        let model = req.json()["model"].as_str().unwrap_or("").to_owned();
        real::anthropic_sampling(req, &model, anthropic_reply(req))
    })
    .unwrap();
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let app = crate::helpers::spawn_app_with(db, |s| {
        let mut p = ProviderConfig::new("claude", ProviderKind::Anthropic, &server.base_url());
        p.concurrency = 1;
        s.providers = vec![p];
        s.worker_slots = Some(1);
    });
    let admin = crate::admin::signed_in(&app, Role::Admin);
    let token = admin.get("/admin").csrf();
    let form = |model: &'static str, temperature: &'static str| {
        vec![
            ("csrf", token.clone()),
            ("study", "demo".to_owned()),
            ("provider", "claude".to_owned()),
            ("model", model.to_owned()),
            ("template", "eb-code".to_owned()),
            ("repeats", "0".to_owned()),
            ("default_repeats", "1".to_owned()),
            ("situations", "all".to_owned()),
            ("seed", "7".to_owned()),
            ("temperature", temperature.to_owned()),
        ]
    };
    let post = |fields: &[(&'static str, String)]| {
        let refs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        admin.post("/admin/runs", &refs)
    };
    let no_runs = || {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        runs::list(&mut conn).unwrap().is_empty()
    };

    // (a) Outside the Messages API's 0–1: the form again with a plain message, nothing made.
    let r = post(&form("claude-sonnet-4-5", "1.5"));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("takes a temperature from 0 to 1"),
        "{}",
        r.body
    );
    assert!(r.body.contains("New model run"));
    assert!(no_runs());

    // (b) A model that takes no temperature: the note is shown and must be confirmed first.
    let r = post(&form("claude-opus-4-7", "0"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("does not take a temperature"), "{}", r.body);
    assert!(r.body.contains("name=\"accept_notes\""), "{}", r.body);
    assert!(no_runs(), "no run exists before the notes are confirmed");
    // A confirmation of another model's notes does not carry over.
    let mut stale = form("claude-opus-4-7", "0");
    stale.push(("accept_notes", "claude|claude-opus-4-5|0".to_owned()));
    assert_eq!(post(&stale).status, 200);
    assert!(no_runs());
    let mut confirmed = form("claude-opus-4-7", "0");
    confirmed.push(("accept_notes", "claude|claude-opus-4-7|0".to_owned()));
    let r = post(&confirmed);
    assert_eq!(r.status, 303, "{}", r.body);
    let page = r.location().unwrap().to_owned();
    assert!(
        admin
            .get(&page)
            .body
            .contains("does not take a temperature")
    );

    // (c) Worked against the fake: the page shows its stop reason and snapshot.
    let t = std::time::Instant::now();
    let body = loop {
        let r = admin.get(&page);
        assert_eq!(r.status, 200);
        if r.body.contains("<span class=\"badge\">completed</span>") {
            break r.body;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "{}", r.body);
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(body.contains("<code>end_turn</code>"), "{body}");
    assert!(
        body.contains("<code>claude-opus-4-7-20260101</code>"),
        "{body}"
    );
    assert!(body.contains("does not take a temperature"));
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].json().get("temperature").is_none());
}

on_both_backends!(
    f1_openai_reasoning_models_get_max_completion_tokens_and_complete,
    f2_claude_4_7_gets_no_temperature_4_5_not_both_and_the_range_is_0_to_1,
    f3_gemini_thinking_models_get_room_to_answer_and_truncation_is_not_re_asked,
    f5_the_snapshot_and_finish_reason_are_stored_per_trial,
    f6_blocks_and_refusals_are_their_own_class_and_not_re_asked,
    f7_account_quota_429s_stop_the_run_with_a_message,
    f8_delays_in_retry_info_and_retry_after_ms_are_waited_and_x_should_retry_honoured,
    f9_invalid_keys_in_any_shape_and_unknown_models_stop_the_run,
    the_run_form_refuses_anthropic_above_1_and_confirms_the_notes_before_the_run_exists,
);
