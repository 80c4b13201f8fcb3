//! Issue #15, point 1: the Prolific loop, end to end against the fake Prolific API
//! (`emotionbench::prolific::fake`, built from Prolific's reference): the draft with its codes
//! and actions, bulk approval in chunks of 1,000, rejection (checked before sending), return
//! requests, the reconciliation, the webhook that releases a returned participant's place, and
//! 429 with Retry-After honoured. Through the real binary and over HTTP, on both backends.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use emotionbench::config::Secret;
use emotionbench::prolific::fake::FakeProlific;
use emotionbench::store::{audit, participants, situations, studies};

use crate::admin::signed_in;
use crate::helpers::{Browser, TestApp, TestDb, spawn_app_with, stderr, stdout};
use crate::on_both_backends;
use emotionbench::store::users::Role;

const TOKEN: &str = "prolific-test-token-9f8e7d";
const HOOK_SECRET: &str = "whsec-test-3c2b1a";
const PUBLIC: &str = "https://bench.example.org";

/// The app, pointed at the fake, with the token and the webhook secret set.
fn app_with(db: TestDb, fake: &FakeProlific) -> TestApp {
    let base = fake.base_url();
    spawn_app_with(db, move |s| {
        s.public_url = Some(PUBLIC.into());
        s.prolific.base_url = base;
        s.prolific.token = Some(Secret::new(TOKEN));
        s.prolific.webhook_secret = Some(Secret::new(HOOK_SECRET));
        s.prolific.backoff_base_ms = 20;
    })
}

/// `emotionbench prolific …` with the token in `PROLIFIC_TOKEN` and the fake as the API.
fn pcli(app: &TestApp, fake: &FakeProlific, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .arg("prolific")
        .args(args)
        .current_dir(dir.path())
        .env("DATABASE_URL", &app.db.url)
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "warn")
        .env("EMOTIONBENCH_PUBLIC_URL", PUBLIC)
        .env("EMOTIONBENCH_PROLIFIC_BASE_URL", fake.base_url())
        .env("PROLIFIC_TOKEN", TOKEN)
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        !stdout(&o).contains(TOKEN) && !stderr(&o).contains(TOKEN),
        "the token leaked"
    );
    stdout(&o)
}

/// A study on a two-situation set, target 1 per situation (four live reservations fill it).
fn tiny_study(app: &TestApp, slug: &str) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let demo = emotionbench::domain::demo::demo_study();
    if situations::find_set(&mut conn, "tiny").unwrap().is_none() {
        situations::import(&mut conn, "tiny", "test", &demo.situations[..2]).unwrap();
    }
    let set = situations::find_set(&mut conn, "tiny").unwrap().unwrap();
    let inst = emotionbench::store::instruments::ensure_builtin(&mut conn).unwrap();
    let mut c = emotionbench::domain::study::StudyConfig::new(slug, "Feelings on Prolific");
    c.consent_text = "Please read this consent text.".into();
    c.debrief_text = "Thank you.".into();
    c.code_completed = Some("DONE7Q".into());
    c.code_no_consent = Some("NOCONS7Q".into());
    c.code_failed_check = Some("FAILCK7Q".into());
    c.code_screened_out = Some("FULL7Q".into());
    c.target_per_situation = 1;
    c.min_situation_seconds = 0;
    studies::create(
        &mut conn,
        &c,
        emotionbench::domain::study::StudyStatus::Open,
        studies::Sources::new(inst, Some(set)),
        42,
    )
    .unwrap();
}

fn audit_actions(app: &TestApp, action: &str) -> Vec<audit::Entry> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    audit::recent(&mut conn, 1000)
        .unwrap()
        .into_iter()
        .filter(|e| e.action == action)
        .collect()
}

fn requests_to(fake: &FakeProlific, method: &str, path: &str) -> Vec<serde_json::Value> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method == method && r.path == path)
        .map(|r| r.json())
        .collect()
}

/// Creates the draft through the CLI; the Prolific study id.
fn drafted(app: &TestApp, fake: &FakeProlific, slug: &str) -> String {
    let out = ok(pcli(
        app,
        fake,
        &[
            "draft",
            "--study",
            slug,
            "--description",
            "Rate how you feel before and after imagining an everyday situation (about 10 minutes).",
            "--reward",
            "150",
        ],
    ));
    let id = out
        .split_whitespace()
        .nth(3)
        .expect("the draft's id")
        .to_owned();
    assert!(fake.study(&id).is_some(), "{out}");
    id
}

fn the_draft_carries_the_codes_with_their_actions(db: TestDb) {
    let fake = FakeProlific::start(TOKEN).unwrap();
    let app = app_with(db, &fake);
    tiny_study(&app, "pro");
    // Without a token the CLI names the variable and sends nothing.
    let o = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args([
            "prolific",
            "draft",
            "--study",
            "pro",
            "--description",
            "d",
            "--reward",
            "1",
        ])
        .env("DATABASE_URL", &app.db.url)
        .env("EMOTIONBENCH_PUBLIC_URL", PUBLIC)
        .env("EMOTIONBENCH_PROLIFIC_BASE_URL", fake.base_url())
        .env_remove("PROLIFIC_TOKEN")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("PROLIFIC_TOKEN"), "{}", stderr(&o));
    assert!(fake.requests().is_empty());

    let id = drafted(&app, &fake, "pro");
    let created = requests_to(&fake, "POST", "/api/v1/studies/");
    assert_eq!(created.len(), 1);
    let first = &fake.requests()[0];
    assert_eq!(
        first.header("authorization"),
        Some(&*format!("Token {TOKEN}"))
    );
    let body = &created[0];
    assert_eq!(body["name"], "Feelings on Prolific");
    assert_eq!(
        body["external_study_url"],
        format!(
            "{PUBLIC}/s/pro?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}"
        )
    );
    assert_eq!(body["prolific_id_option"], "url_parameters");
    assert_eq!(body["reward"], 150);
    // Two situations × a target of 1; no completion yet: the stated default of 10 minutes.
    assert_eq!(body["total_available_places"], 2);
    assert_eq!(body["estimated_completion_time"], 10);
    let codes: Vec<(String, String, String)> = body["completion_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["code"].as_str().unwrap().to_owned(),
                c["code_type"].as_str().unwrap().to_owned(),
                c["actions"][0]["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expect = |code: &str, kind: &str, action: &str| (code.into(), kind.into(), action.into());
    assert_eq!(
        codes,
        vec![
            expect("DONE7Q", "COMPLETED", "MANUALLY_REVIEW"),
            expect("NOCONS7Q", "NO_CONSENT", "REQUEST_RETURN"),
            expect("FAILCK7Q", "FAILED_ATTENTION_CHECK", "REQUEST_RETURN"),
            expect("FULL7Q", "OTHER", "MANUALLY_REVIEW"),
        ]
    );
    assert_eq!(audit_actions(&app, "prolific.draft.create").len(), 1);

    // A participant completes; the admin page updates the same draft with automatic approval
    // and a fixed screen-out payment: a PATCH, the estimate now from the median (1 min).
    crate::survey::walk_to(
        &app.browser(),
        "/s/pro?PROLIFIC_PID=p-done-1&STUDY_ID=x&SESSION_ID=s-done-1",
        "never",
    );
    let admin = signed_in(&app, Role::Admin);
    let page = admin.get("/admin/studies/pro/prolific");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(&id), "{}", page.body);
    let r = admin.post(
        "/admin/studies/pro/prolific/draft",
        &[
            ("csrf", &page.csrf()),
            ("description", "Rate how you feel, twice."),
            ("reward_cents", "150"),
            ("places", "3"),
            ("auto_approve", "on"),
            ("screen_out_reward_cents", "20"),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let patched = requests_to(&fake, "PATCH", &format!("/api/v1/studies/{id}/"));
    assert_eq!(patched.len(), 1);
    let body = &patched[0];
    assert_eq!(body["estimated_completion_time"], 1);
    assert_eq!(body["total_available_places"], 3);
    assert_eq!(
        body["completion_codes"][0]["actions"][0]["action"],
        "AUTOMATICALLY_APPROVE"
    );
    let out = &body["completion_codes"][3];
    assert_eq!(out["code_type"], "FIXED_SCREENOUT");
    assert_eq!(out["actions"][0]["action"], "FIXED_SCREEN_OUT_PAYMENT");
    assert_eq!(out["actions"][0]["fixed_screen_out_reward"], 20);
    assert_eq!(out["actions"][0]["slots"], 3);
    assert_eq!(fake.study(&id).unwrap()["total_available_places"], 3);
    let updates = audit_actions(&app, "prolific.draft.update");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].actor, "admin@example.org");
    // A screen-out payment not below the reward is refused before the draft is sent (the page
    // shown again lists the submissions, a GET).
    let drafts = || {
        fake.requests()
            .iter()
            .filter(|r| r.path.starts_with("/api/v1/studies/") && r.method != "GET")
            .count()
    };
    let before = drafts();
    let r = admin.post(
        "/admin/studies/pro/prolific/draft",
        &[
            ("csrf", &page.csrf()),
            ("description", "x"),
            ("reward_cents", "150"),
            ("screen_out_reward_cents", "150"),
        ],
    );
    assert_eq!(r.status, 400);
    assert!(r.body.contains("less than the reward"), "{}", r.body);
    assert_eq!(drafts(), before);
}

fn twelve_hundred_submissions_are_approved_in_two_requests(db: TestDb) {
    let fake = FakeProlific::start(TOKEN).unwrap();
    let app = app_with(db, &fake);
    tiny_study(&app, "bulk");
    let id = drafted(&app, &fake, "bulk");
    for i in 0..1200 {
        fake.add_submission(
            &id,
            &format!("sub{i:05}"),
            &format!("pid{i:05}"),
            "AWAITING REVIEW",
        );
    }
    fake.add_submission(&id, "sub-active", "pid-active", "ACTIVE");
    let out = ok(pcli(
        &app,
        &fake,
        &["approve", "--study", "bulk", "--all-awaiting-review"],
    ));
    assert!(
        out.contains("approved 1200 submission(s) in 2 request(s)"),
        "{out}"
    );
    let sent = requests_to(&fake, "POST", "/api/v1/submissions/bulk-approve/");
    let sizes: Vec<usize> = sent
        .iter()
        .map(|b| b["submission_ids"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![1000, 200]);
    assert_eq!(fake.submission("sub01199").unwrap().status, "APPROVED");
    assert_eq!(fake.submission("sub-active").unwrap().status, "ACTIVE");
    let entries = audit_actions(&app, "prolific.approve");
    assert_eq!(entries.len(), 2);
    // Naming a submission that is not awaiting review is refused before any approval.
    let before = sent.len();
    let o = pcli(
        &app,
        &fake,
        &["approve", "--study", "bulk", "--submission", "sub-active"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not one of this study's submissions awaiting review"));
    assert_eq!(
        requests_to(&fake, "POST", "/api/v1/submissions/bulk-approve/").len(),
        before
    );
}

const REASON: &str = "Your answers to both questionnaires were identical on every item and the \
attention check was failed, so the data cannot be used.";

fn a_rejection_needs_a_category_and_a_long_message(db: TestDb) {
    let fake = FakeProlific::start(TOKEN).unwrap();
    let app = app_with(db, &fake);
    tiny_study(&app, "rej");
    let id = drafted(&app, &fake, "rej");
    fake.add_submission(&id, "subA", "pidA", "AWAITING REVIEW");
    fake.add_submission(&id, "subB", "pidB", "AWAITING REVIEW");
    fake.add_submission(&id, "subC", "pidC", "AWAITING REVIEW");
    fake.add_submission(&id, "subD", "pidD", "AWAITING REVIEW");
    fake.add_submission(&id, "subE", "pidE", "AWAITING REVIEW");
    let transitions = |s: &str| {
        requests_to(
            &fake,
            "POST",
            &format!("/api/v1/submissions/{s}/transition/"),
        )
    };
    // Too short, or an unknown category: refused before any request.
    let o = pcli(
        &app,
        &fake,
        &[
            "reject",
            "--study",
            "rej",
            "--submission",
            "subA",
            "--category",
            "LOW_EFFORT",
            "--message",
            "Too fast.",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("at least 100"), "{}", stderr(&o));
    let o = pcli(
        &app,
        &fake,
        &[
            "reject",
            "--study",
            "rej",
            "--submission",
            "subA",
            "--category",
            "LAZY",
            "--message",
            REASON,
        ],
    );
    assert!(!o.status.success());
    assert!(transitions("subA").is_empty());
    // A valid one is sent with its category and message.
    ok(pcli(
        &app,
        &fake,
        &[
            "reject",
            "--study",
            "rej",
            "--submission",
            "subA",
            "--category",
            "FAILED_CHECK",
            "--message",
            REASON,
        ],
    ));
    let sent = transitions("subA");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["action"], "REJECT");
    assert_eq!(sent[0]["rejection_category"], "FAILED_CHECK");
    assert_eq!(sent[0]["message"], REASON);
    let s = fake.submission("subA").unwrap();
    assert_eq!(s.status, "REJECTED");
    assert_eq!(s.rejection.unwrap().0, "FAILED_CHECK");
    assert_eq!(audit_actions(&app, "prolific.reject").len(), 1);

    // The admin page's forms: a short message comes back with the error and sends nothing; a
    // valid rejection and a return request go through.
    let admin = signed_in(&app, Role::Admin);
    let page = admin.get("/admin/studies/rej/prolific");
    assert!(page.body.contains("subB"), "{}", page.body);
    let csrf = page.csrf();
    let r = admin.post(
        "/admin/studies/rej/prolific/reject",
        &[
            ("csrf", &csrf),
            ("submission", "subB"),
            ("category", "LOW_EFFORT"),
            ("message", "short"),
        ],
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("at least 100"), "{}", r.body);
    assert!(transitions("subB").is_empty());
    let r = admin.post(
        "/admin/studies/rej/prolific/reject",
        &[
            ("csrf", &csrf),
            ("submission", "subB"),
            ("category", "LOW_EFFORT"),
            ("message", REASON),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(fake.submission("subB").unwrap().status, "REJECTED");
    let r = admin.post(
        "/admin/studies/rej/prolific/return",
        &[
            ("csrf", &csrf),
            ("submission", "subC"),
            ("reason", "Withdrew consent."),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let sent = requests_to(&fake, "POST", "/api/v1/submissions/subC/request-return/");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["request_return_reasons"][0], "Withdrew consent.");
    assert!(fake.submission("subC").unwrap().return_requested);
    assert_eq!(audit_actions(&app, "prolific.request_return").len(), 1);
    // The ticked submission is approved, the other left alone.
    let r = admin.post(
        "/admin/studies/rej/prolific/approve",
        &[("csrf", &csrf), ("submission", "subD")],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(
        r.location(),
        Some("/admin/studies/rej/prolific?done=approve&n=1&m=1")
    );
    assert_eq!(fake.submission("subD").unwrap().status, "APPROVED");
    assert_eq!(fake.submission("subE").unwrap().status, "AWAITING REVIEW");
    let done = admin.get(r.location().unwrap());
    assert!(
        done.body
            .contains("Approved 1 submission(s) in 1 request(s)."),
        "{}",
        done.body
    );
    // Without a CSRF token nothing is sent.
    let before = fake.requests().len();
    let r = admin.post(
        "/admin/studies/rej/prolific/return",
        &[("submission", "subC"), ("reason", "x")],
    );
    assert_eq!(r.status, 403);
    assert_eq!(fake.requests().len(), before);
}

/// A participant arriving from the Prolific link and consenting.
fn arrive(app: &TestApp, pid: &str) -> Browser {
    let b = app.browser();
    crate::survey::walk_to(
        &b,
        &format!("/s/hook?PROLIFIC_PID={pid}&STUDY_ID=ps1&SESSION_ID=ses-{pid}"),
        "demographics",
    );
    b
}

fn participant(app: &TestApp, pid: &str) -> participants::Participant {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, "hook").unwrap().unwrap();
    participants::by_pid(&mut conn, s.id, pid).unwrap().unwrap()
}

fn hook(app: &TestApp, headers: &[(String, String)], body: &str) -> (u16, String) {
    let mut req = app.agent.post(format!("{}/prolific/webhook", app.base));
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let mut r = req.send(body).unwrap();
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}

fn event(pid: &str, status: &str) -> String {
    serde_json::json!({
        "resource_id": format!("ses-{pid}"),
        "event_type": "submission.status.change",
        "participant_id": pid,
        "status": status,
    })
    .to_string()
}

fn a_signed_return_releases_the_place_for_the_next_arrival(db: TestDb) {
    let fake = FakeProlific::start(TOKEN).unwrap();
    let app = app_with(db, &fake);
    tiny_study(&app, "hook");
    let id = drafted(&app, &fake, "hook");
    // Four live reservations fill two situations at a target of 1 (one spare each).
    for pid in ["pA", "pB", "pC", "pD"] {
        arrive(&app, pid);
        fake.add_submission(&id, &format!("ses-{pid}"), pid, "ACTIVE");
    }
    let a = participant(&app, "pA");
    let x = a.situation_id.unwrap();
    assert!(a.reserved_until.is_some());
    let ts = "1764633600";
    let held = || participant(&app, "pA").reserved_until.is_some();

    // Returned on Prolific: the reconciliation suggests releasing the reservation.
    fake.set_status("ses-pA", "RETURNED");
    let researcher = signed_in(&app, Role::Researcher);
    let rec = researcher.get("/admin/studies/hook/prolific/reconcile");
    assert_eq!(rec.status, 200, "{}", rec.body);
    assert!(
        rec.body
            .contains("active here, RETURNED there: release the reservation"),
        "{}",
        rec.body
    );

    // An event of another status, signed: recorded, nothing released.
    let body = event("pA", "AWAITING REVIEW");
    let h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-1", ts, &body);
    assert_eq!(hook(&app, &h, &body).0, 200);
    assert!(held());
    // Replayed: the same X-Event-ID with a validly signed RETURNED body changes nothing.
    let body = event("pA", "RETURNED");
    let h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-1", ts, &body);
    let (status, text) = hook(&app, &h, &body);
    assert_eq!((status, text.as_str()), (200, "duplicate event: ignored\n"));
    assert!(held());
    // Unsigned, wrongly signed, or signed over another timestamp: 401, nothing changes.
    let (status, _) = hook(&app, &[("X-Event-ID".into(), "evt-2".into())], &body);
    assert_eq!(status, 401);
    let h = FakeProlific::webhook_headers("another-secret", "evt-3", ts, &body);
    assert_eq!(hook(&app, &h, &body).0, 401);
    let mut h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-4", ts, &body);
    h[1].1 = "1764633601".into();
    assert_eq!(hook(&app, &h, &body).0, 401);
    assert!(held());
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        // Only the one signed event is recorded.
        assert_eq!(
            emotionbench::store::prolific::event_count(&mut conn).unwrap(),
            1
        );
    }
    // While four places are held the study is full: a fifth arrival gets no situation.
    arrive(&app, "pE");
    assert_eq!(participant(&app, "pE").situation_id, None);

    // The signed return: released at once, audited; its redelivery is acknowledged only.
    let h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-5", ts, &body);
    let (status, text) = hook(&app, &h, &body);
    assert_eq!((status, text.as_str()), (200, "released\n"));
    assert!(!held());
    assert_eq!(audit_actions(&app, "prolific.release").len(), 1);
    assert_eq!(hook(&app, &h, &body).1, "duplicate event: ignored\n");
    // The next arrival gets the situation the returned participant held.
    arrive(&app, "pF");
    assert_eq!(participant(&app, "pF").situation_id, Some(x));
    let rec = researcher.get("/admin/studies/hook/prolific/reconcile");
    assert!(
        rec.body.contains("the place is already released"),
        "{}",
        rec.body
    );

    // A time-out releases too.
    let body = event("pB", "TIMED-OUT");
    let h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-6", ts, &body);
    assert_eq!(hook(&app, &h, &body), (200, "released\n".to_owned()));
    assert!(participant(&app, "pB").reserved_until.is_none());
    // Without a webhook, the reconciliation's release does it (the CLI here; the page's
    // button in the browser test): pC returned there, only pC is released.
    fake.set_status("ses-pC", "RETURNED");
    let out = ok(pcli(
        &app,
        &fake,
        &["reconcile", "--study", "hook", "--release"],
    ));
    assert!(
        out.contains("active here, RETURNED there: release the reservation"),
        "{out}"
    );
    assert!(out.contains("released 1 reservation(s)"), "{out}");
    assert!(participant(&app, "pC").reserved_until.is_none());
    assert!(participant(&app, "pD").reserved_until.is_some());
    assert_eq!(audit_actions(&app, "prolific.release").len(), 3);

    // A submission id we never saw: the Prolific id alone finds a participant only if they
    // came through this Prolific study's link (STUDY_ID = its id). pD came with "ps1": kept.
    let body = serde_json::json!({"resource_id": "sub-unseen", "event_type":
        "submission.status.change", "participant_id": "pD", "status": "RETURNED"})
    .to_string();
    let h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-7", ts, &body);
    assert_eq!(hook(&app, &h, &body), (200, "recorded\n".to_owned()));
    assert!(participant(&app, "pD").reserved_until.is_some());
    crate::survey::walk_to(
        &app.browser(),
        &format!("/s/hook?PROLIFIC_PID=pG&STUDY_ID={id}&SESSION_ID=ses-other"),
        "demographics",
    );
    assert!(participant(&app, "pG").reserved_until.is_some());
    let body = body.replace("pD", "pG");
    let h = FakeProlific::webhook_headers(HOOK_SECRET, "evt-8", ts, &body);
    assert_eq!(hook(&app, &h, &body), (200, "released\n".to_owned()));
    assert!(participant(&app, "pG").reserved_until.is_none());
}

fn a_429_with_retry_after_is_waited_out(db: TestDb) {
    let fake = FakeProlific::start(TOKEN).unwrap();
    let app = app_with(db, &fake);
    tiny_study(&app, "slow");
    let id = drafted(&app, &fake, "slow");
    fake.add_submission(&id, "s1", "p1", "AWAITING REVIEW");
    let n = fake.requests().len();
    fake.script(FakeProlific::too_many_requests(2));
    let t = Instant::now();
    let out = ok(pcli(&app, &fake, &["submissions", "--study", "slow"]));
    let took = t.elapsed();
    assert!(out.contains("s1\tp1\tAWAITING REVIEW"), "{out}");
    let r = fake.requests();
    assert_eq!(r.len(), n + 2, "one 429, one retry");
    let waited = r[n + 1].at - r[n].at;
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(4),
        "waited {waited:?} for a Retry-After of 2 s"
    );
    assert!(took >= Duration::from_secs(2));
    // A 503 is retried with backoff; a 400 is not retried.
    let n = fake.requests().len();
    fake.script(emotionbench::llm::fake::FakeAction::status(503, &[]));
    ok(pcli(&app, &fake, &["submissions", "--study", "slow"]));
    assert_eq!(fake.requests().len(), n + 2);
    let n = fake.requests().len();
    fake.script(emotionbench::prolific::fake::error_reply(
        400,
        "Invalid request",
        serde_json::json!("nope"),
    ));
    let o = pcli(&app, &fake, &["submissions", "--study", "slow"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("HTTP 400: Invalid request: nope"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fake.requests().len(), n + 1);
}

on_both_backends!(
    the_draft_carries_the_codes_with_their_actions,
    twelve_hundred_submissions_are_approved_in_two_requests,
    a_rejection_needs_a_category_and_a_long_message,
    a_signed_return_releases_the_place_for_the_next_arrival,
    a_429_with_retry_after_is_waited_out,
);
