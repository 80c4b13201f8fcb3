//! Protocols that mirror the humans (#17): a within-session run asks the questionnaire, the
//! situation and the questionnaire again in one conversation; a persona run does so once per
//! participant, as that person. The prompts are compared with what the survey pages showed
//! the participants who walked them over HTTP, and with the fake provider's received requests.

use std::time::Duration;

use chrono::Datelike;
use emotionbench::domain::protocol;
use emotionbench::llm::fake::{FakeAction, FakeRequest, FakeServer};
use emotionbench::llm::wire;
use emotionbench::store::runs::{self, TrialRecord};
use emotionbench::store::{RunId, db, instruments, situations, studies};

use crate::helpers::{Reply, TestApp, TestDb, ok, spawn_app, stdout};
use crate::on_both_backends;
use crate::runs::{config, eb, provider, run_id};
use crate::survey::{items_on, make_study, submit_current};

/// What one participant was shown: the two questionnaires' item orders, the situation, and
/// the before page itself.
struct Shown {
    before: Vec<u32>,
    after: Vec<u32>,
    situation: String,
    before_page: String,
    after_page: String,
}

/// The text of the situation on the situation page (the demo texts carry no markup).
fn situation_on(page: &Reply) -> String {
    let start = page.body.find("<blockquote class=\"situation\">").unwrap();
    let rest = &page.body[start..];
    let text = &rest[rest.find('>').unwrap() + 1..rest.find("</blockquote>").unwrap()];
    text.replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Walks one participant through the whole survey, recording what the pages showed.
fn participant(app: &TestApp, slug: &str) -> Shown {
    let b = app.browser();
    let (mut page, mut path) = b.open(&format!("/s/{slug}"));
    let mut shown = Shown {
        before: Vec::new(),
        after: Vec::new(),
        situation: String::new(),
        before_page: String::new(),
        after_page: String::new(),
    };
    for _ in 0..12 {
        match crate::helpers::page_name(&path) {
            "feelings-now" => {
                shown.before = items_on(&page);
                shown.before_page = page.body.clone();
            }
            "situation" => shown.situation = situation_on(&page),
            "feelings-imagined" => {
                shown.after = items_on(&page);
                shown.after_page = page.body.clone();
            }
            "done" => return shown,
            _ => {}
        }
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let r = submit_current(&b, &path, &page);
        assert_eq!(r.status, 303, "{path}: {}", r.body);
        let next = r.location().unwrap().to_owned();
        if !next.starts_with('/') {
            return shown;
        }
        (page, path) = b.open(&next);
    }
    panic!("the survey never ended, at {path}");
}

/// Answers the first questionnaire with 2 and the second (a request that carries the model's
/// own first reply) with 4, so each turn's answers can be told apart.
fn two_turns() -> FakeServer {
    FakeServer::start(|req| {
        let second = messages(req).iter().any(|(role, _)| role == "assistant");
        FakeAction::answer(req, if second { 4 } else { 2 }, Duration::ZERO)
    })
    .unwrap()
}

fn messages(req: &FakeRequest) -> Vec<(String, String)> {
    wire::request_messages(&req.json())
}

/// The item texts a message lists (`k. text` lines), in order.
fn listed(message: &str) -> Vec<String> {
    message
        .lines()
        .filter_map(|l| {
            let digits: String = l.chars().take_while(char::is_ascii_digit).collect();
            let rest = l.get(digits.len()..)?.strip_prefix(". ")?;
            (!digits.is_empty()).then(|| rest.to_owned())
        })
        .collect()
}

fn trials(db: &TestDb, run: RunId) -> Vec<TrialRecord> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    runs::trials(&mut conn, run).unwrap()
}

/// The study's instrument item texts, item number `n` at index `n - 1`.
fn item_texts(app: &TestApp, slug: &str) -> Vec<String> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, slug).unwrap().unwrap();
    let inst = instruments::get(&mut conn, study.instrument_id).unwrap();
    inst.items.iter().map(|i| i.text.clone()).collect()
}

fn texts(items: &[String], order: &[u32]) -> Vec<String> {
    order
        .iter()
        .map(|n| items[*n as usize - 1].clone())
        .collect()
}

/// The two requests of one conversation: the first turn, and the second that carries it.
/// Checks the second starts with the first, then the model's reply to it, then one user turn.
fn conversation_of<'a>(
    requests: &'a [FakeRequest],
    first_items: &[String],
) -> (&'a FakeRequest, &'a FakeRequest) {
    let first = requests
        .iter()
        .find(|r| {
            let m = messages(r);
            m.len() == 2 && listed(&m[1].1) == first_items
        })
        .expect("no first turn lists these items in this order");
    let head = messages(first);
    let second = requests
        .iter()
        .find(|r| {
            let m = messages(r);
            m.len() == 4 && m[..2] == head[..]
        })
        .expect("no second turn continues this conversation");
    let m = messages(second);
    let roles: Vec<&str> = m.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    let reply: Vec<String> = (1..=first_items.len()).map(|i| format!("{i}. 2")).collect();
    assert_eq!(m[2].1, reply.join("\n"), "the model's own first answers");
    (first, second)
}

/// The within-session prompts are the instrument's texts in the run's orders, worded as the
/// survey pages the humans read (the same headings and instructions), the situation between
/// the two questionnaires, in one conversation of two requests per trial; the first answers
/// are kept as `before_scores`, the second as `scores`.
fn within_session_prompts_are_the_instruments_texts_in_one_conversation(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "feel", |_| {});
    let human = participant(&app, "feel");
    let items = item_texts(&app, "feel");
    let server = two_turns();
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let out = run_protocol(
        &app.db,
        &cfg,
        "within-session",
        &["--repeats", "2", "--situations", "emotion:Anger"],
    );
    let run = run_id(&out);
    let texts_of = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let set = situations::find_set(&mut conn, "demo").unwrap().unwrap();
        situations::list(&mut conn, set).unwrap()
    };
    let anger = texts_of
        .iter()
        .filter(|s| s.situation.emotion == "Anger")
        .count();
    let trials = trials(&app.db, run);
    assert_eq!(trials.len(), anger * 2, "{out}");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        trials.len() * 2,
        "two requests per conversation"
    );
    for t in &trials {
        assert_eq!(t.status.as_str(), "done", "{:?}", t.error);
        let before = t.before_order.as_ref().unwrap().0.clone();
        let (first, second) = conversation_of(&requests, &texts(&items, &before));
        let m1 = messages(first);
        let m2 = messages(second);
        // Worded as the survey's pages: what the human's before page showed is in the prompt.
        for text in [
            protocol::BEFORE_HEADING,
            &protocol::questionnaire_instructions(
                &emotionbench::domain::instrument::Instrument::panas(),
                true,
            ),
        ] {
            assert!(human.before_page.contains(text), "{text}");
            assert!(m1[1].1.starts_with(protocol::BEFORE_HEADING), "{}", m1[1].1);
            assert!(m1[1].1.contains(text), "{}", m1[1].1);
        }
        assert!(human.after_page.contains(protocol::AFTER_HEADING));
        let situation = &texts_of
            .iter()
            .find(|s| s.situation.key == t.situation_key)
            .unwrap()
            .situation
            .text;
        let user2 = &m2[3].1;
        assert!(
            user2.starts_with(&format!(
                "{}\n{}\n\n\"{situation}\"\n\n{}",
                protocol::SITUATION_HEADING,
                protocol::SITUATION_INTRO,
                protocol::AFTER_HEADING
            )),
            "{user2}"
        );
        assert_eq!(listed(user2), texts(&items, &t.item_order.0));
        assert_eq!(t.before_scores.as_ref().unwrap().0, vec![2; 20]);
        assert_eq!(t.scores.as_ref().unwrap().0, vec![4; 20]);
        // The trial's request is the conversation's last.
        assert_eq!(t.request.as_deref(), Some(second.body.as_str()));
    }
    // The run says how it asked.
    let shown = stdout(&eb(
        &app.db,
        &cfg,
        &["runs", "show", &run.0.to_string()],
        &[],
    ));
    assert!(shown.contains("protocol:   within-session"), "{shown}");
    // In the report, each conversation's first questionnaire is the run's default measure,
    // and the cohort's name says the protocol.
    let report = report_json(&app.db, &cfg, &["--runs", &run.0.to_string()]);
    let model = model_cohort(&report);
    assert_eq!(model["name"], format!("m [within-session, run {}]", run.0));
    let overall = &model["groups"][0]["categories"][0];
    assert_eq!(overall["n_default"], trials.len());
    assert_eq!(overall["n_evoked"], trials.len());
    assert_eq!(
        overall["delta"], 20.0,
        "PANAS positive: ten items, 2 then 4"
    );
}

/// `emotionbench run` of the study "feel" with model "m" of the fake provider under `protocol`,
/// with `more` flags; its output.
fn run_protocol(db: &TestDb, cfg: &crate::runs::Config, protocol: &str, more: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--study",
        "feel",
        "--provider",
        "fake",
        "--model",
        "m",
        "--protocol",
        protocol,
    ];
    args.extend_from_slice(more);
    ok(eb(db, cfg, &args, &[]))
}

fn report_json(db: &TestDb, cfg: &crate::runs::Config, more: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "report",
        "--study",
        "feel",
        "--format",
        "json",
        "--resamples",
        "0",
    ];
    args.extend_from_slice(more);
    serde_json::from_str(&ok(eb(db, cfg, &args, &[]))).unwrap()
}

fn model_cohort(report: &serde_json::Value) -> &serde_json::Value {
    report["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "model")
        .unwrap()
}

/// A persona run has one trial per completed participant with demographic answers (not the
/// one who stopped half way), each told that person's profile, on their situation, with the
/// items in exactly the orders that participant's pages showed.
fn persona_trials_number_the_participants_and_carry_their_profiles(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "feel", |_| {});
    let humans = [participant(&app, "feel"), participant(&app, "feel")];
    // One more who stops on the first questionnaire: not a completed participant.
    crate::survey::walk_to(&app.browser(), "/s/feel", "feelings-now");
    let items = item_texts(&app, "feel");
    let server = two_turns();
    let cfg = config(&[provider("fake", "openai", &server.base_url(), "")]);
    let out = run_protocol(&app.db, &cfg, "persona", &[]);
    assert!(out.contains("created: 2 trials"), "{out}");
    let run = run_id(&out);
    let trials = trials(&app.db, run);
    assert_eq!(trials.len(), humans.len());
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let age = chrono::Utc::now().year() - 1990;
    let profile = format!(
        "Gender: Female\nAge: {age}\nCountry of residence: United Kingdom\nEmployment status: \
         Employed\nEducation: University - Masters"
    );
    for human in &humans {
        let t = trials
            .iter()
            .find(|t| t.before_order.as_ref().unwrap().0 == human.before)
            .expect("a trial in this participant's first order");
        assert_eq!(t.item_order.0, human.after, "their second order");
        let persona = &t.persona.as_ref().unwrap().0;
        assert_eq!(persona.age, Some(age));
        assert_eq!(persona.gender.as_deref(), Some("Female"));
        let (first, second) = conversation_of(&requests, &texts(&items, &human.before));
        let system = &messages(first)[0].1;
        assert!(system.contains(&profile), "{system}");
        let user2 = &messages(second)[3].1;
        assert!(
            user2.contains(&format!("\"{}\"", human.situation)),
            "{user2}\nsituation shown: {}",
            human.situation
        );
        assert_eq!(listed(user2), texts(&items, &human.after));
        assert_eq!(t.before_scores.as_ref().unwrap().0, vec![2; 20]);
        assert_eq!(t.scores.as_ref().unwrap().0, vec![4; 20]);
    }
    let ids: std::collections::HashSet<&str> = trials
        .iter()
        .map(|t| t.persona.as_ref().unwrap().0.participant.as_str())
        .collect();
    assert_eq!(ids.len(), 2, "one trial per participant");

    // The report compares the persona trials with the humans they stand for, by gender and by
    // age band; the bands are stated.
    let report = report_json(&app.db, &cfg, &[]);
    let humans = report["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "humans")
        .unwrap();
    let groups = &report["groups"][0];
    assert_eq!(groups["cohort"], "m");
    assert_eq!(
        groups["age_bands"],
        serde_json::json!(["18–24", "25–34", "35–44", "45–54", "55–64", "65+"])
    );
    let band = emotionbench::domain::protocol::age_band(Some(age));
    let rows = groups["rows"].as_array().unwrap();
    let labels: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["by"].as_str().unwrap(), r["group"].as_str().unwrap()))
        .collect();
    assert_eq!(labels, [("gender", "Female"), ("age_band", band)]);
    for r in rows {
        assert_eq!(
            (r["humans"]["n"].as_u64(), r["model"]["n"].as_u64()),
            (Some(2), Some(2))
        );
        for c in 0..2 {
            // Every participant is in both groups: the humans' change is their cohort's Δ.
            let human_delta = humans["groups"][0]["categories"][c]["delta"]
                .as_f64()
                .unwrap();
            let h = r["humans"]["change"][c].as_f64().unwrap();
            assert!((h - human_delta).abs() < 1e-9, "{h} vs {human_delta}");
            assert_eq!(r["model"]["change"][c], 20.0);
            let d = r["difference"][c].as_f64().unwrap();
            assert!((d - (20.0 - h)).abs() < 1e-9);
        }
    }
    let md = ok(eb(
        &app.db,
        &cfg,
        &["report", "--study", "feel", "--resamples", "0"],
        &[],
    ));
    assert!(md.contains("## By demographic group"), "{md}");
    assert!(md.contains("m as the participants, by gender"), "{md}");
    assert!(md.contains("m as the participants, by age band"), "{md}");
    assert!(md.contains(&format!("| {band} | 2 | 2 |")), "{md}");
    let html = ok(eb(
        &app.db,
        &cfg,
        &[
            "report",
            "--study",
            "feel",
            "--resamples",
            "0",
            "--format",
            "html",
        ],
        &[],
    ));
    assert!(html.contains("<h2>By demographic group</h2>"));
    assert!(html.contains("18–24, 25–34, 35–44, 45–54, 55–64, 65+"));
}

/// The new-run form offers the protocols; a within-session run made there is one
/// conversation per situation and repeat, and an unknown protocol is refused with the form.
fn the_new_run_form_creates_a_within_session_run(db: TestDb) {
    use emotionbench::config::{ProviderConfig, ProviderKind};
    let server = two_turns();
    let app = crate::helpers::spawn_app_with(db, |s| {
        s.providers = vec![ProviderConfig::new(
            "fake",
            ProviderKind::Openai,
            &server.base_url(),
        )];
    });
    make_study(&app, "feel", |_| {});
    let admin = crate::admin::signed_in(&app, emotionbench::store::users::Role::Admin);
    let page = admin.get("/admin/runs/new");
    assert_eq!(page.status, 200);
    for p in ["paper", "within-session", "persona"] {
        assert!(page.body.contains(&format!("<option value=\"{p}\"")), "{p}");
    }
    let token = admin.get("/admin").csrf();
    let form = |protocol: &'static str| {
        vec![
            ("csrf", token.clone()),
            ("study", "feel".to_owned()),
            ("provider", "fake".to_owned()),
            ("model", "m".to_owned()),
            ("template", "eb-code".to_owned()),
            ("protocol", protocol.to_owned()),
            ("repeats", "1".to_owned()),
            ("default_repeats", "0".to_owned()),
            ("situations", "emotion:Anger".to_owned()),
            ("seed", "5".to_owned()),
            ("temperature", "0".to_owned()),
        ]
    };
    let post = |f: Vec<(&'static str, String)>| {
        let refs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        admin.post("/admin/runs", &refs)
    };
    let bad = post(form("chat"));
    assert_eq!(bad.status, 422);
    assert!(
        bad.body.contains("Choose one of the protocols."),
        "{}",
        bad.body
    );
    let r = post(form("within-session"));
    assert_eq!(r.status, 303, "{}", r.body);
    let id: i64 = r
        .location()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let run = runs::get(&mut conn, RunId(id)).unwrap().unwrap();
    assert_eq!(run.protocol().as_str(), "within-session");
    assert_eq!(run.template, "within-session");
    let trials = runs::trials(&mut conn, RunId(id)).unwrap();
    assert!(!trials.is_empty());
    assert!(trials.iter().all(|t| t.before_order.is_some()));
}

on_both_backends!(
    within_session_prompts_are_the_instruments_texts_in_one_conversation,
    persona_trials_number_the_participants_and_carry_their_profiles,
    the_new_run_form_creates_a_within_session_run,
);
