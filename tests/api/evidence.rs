//! Evidence against bots and LLM agents, never verdicts (issue #15, points 3 and 4): a
//! scripted form-filler gets the honeypot and speed evidence and is not refused; an "agent"
//! answering with a model run's answers of the study gets model-likeness evidence, and the
//! 1,266 published humans rarely do; the study's exclusion rules decide the report's n and
//! the exports' `excluded` column, with counts per reason. (The real-browser journey with
//! human-like pauses getting no bot evidence is in `browser::`.)

use std::collections::HashMap;

use diesel::prelude::*;
use emotionbench::domain::measure::Measure;
use emotionbench::domain::run::TrialStatus;
use emotionbench::domain::study::{StudyConfig, StudyStatus};
use emotionbench::store::report::TrialFilter;
use emotionbench::store::users::Role;
use emotionbench::store::{instruments, participants, situations, studies};

use crate::admin::signed_in;
use crate::helpers::{Browser, Reply, TestApp, TestDb, cli, ok, spawn_app, upstream};
use crate::model_results::results_file;
use crate::on_both_backends;
use crate::survey::{make_study, walk_to};

/// The value of attribute `name` in one HTML tag.
fn attr(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    Some(tag[start..].split('"').next()?.to_owned())
}

/// A cheap deterministic hash, to vary a bot's choices by field name.
fn pick(name: &str, n: usize) -> usize {
    name.bytes()
        .fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize))
        % n.max(1)
}

/// The fields a form-filling script sends for the page's first POST form, filling every
/// field it finds: text inputs get text, each radio group and select one of its options, and
/// the first named submit button its value. Returns the form's action and its fields.
fn fill_form(page: &Reply) -> (String, Vec<(String, String)>) {
    let body = &page.body;
    let start = body.find("<form method=\"post\"").expect("no POST form");
    let form = &body[start..start + body[start..].find("</form>").expect("unclosed form")];
    let action = attr(&form[..form.find('>').unwrap()], "action").unwrap();
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut radios: Vec<(String, Vec<String>)> = Vec::new();
    let mut button = None;
    for part in form.split('<').skip(1) {
        let tag = &part[..part.find('>').unwrap_or(part.len())];
        if tag.starts_with("input") {
            let (Some(name), kind) = (attr(tag, "name"), attr(tag, "type")) else {
                continue;
            };
            let value = attr(tag, "value").unwrap_or_default();
            match kind.as_deref() {
                Some("radio") => match radios.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => v.push(value),
                    None => radios.push((name, vec![value])),
                },
                Some("hidden") => fields.push((name, value)),
                _ => fields.push((name, "https://example.org/offers".into())),
            }
        } else if tag.starts_with("select") {
            let name = attr(tag, "name").unwrap();
            let at = form.find(tag).unwrap();
            let options = &form[at..at + form[at..].find("</select>").unwrap()];
            let first = options
                .split("<option value=\"")
                .skip(1)
                .filter_map(|o| o.split('"').next())
                .find(|v| !v.is_empty())
                .unwrap()
                .to_owned();
            fields.push((name, first));
        } else if tag.starts_with("button") && button.is_none() {
            if let (Some(n), Some(v)) = (attr(tag, "name"), attr(tag, "value")) {
                button = Some((n, v));
            }
        }
    }
    for (name, values) in radios {
        let i = pick(&name, values.len());
        fields.push((name, values[i].clone()));
    }
    fields.extend(button);
    (action, fields)
}

/// A scripted form-filler: opens the link and, page after page, fills every field and submits
/// at once, until it is sent away. Returns where it was sent.
fn fill_every_field(b: &Browser, entry: &str) -> String {
    let (mut page, mut path) = b.open(entry);
    for _ in 0..12 {
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let (action, owned) = fill_form(&page);
        let fields: Vec<(&str, &str)> = owned
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let r = b.post(&action, &fields);
        assert_eq!(r.status, 303, "{action}: {}", r.body);
        let next = r.location().unwrap().to_owned();
        if !next.starts_with('/') {
            return next;
        }
        (page, path) = b.open(&next);
    }
    panic!("the filler never left, at {path}");
}

/// The wide export's rows (everyone) by participant id: column name -> cell.
fn wide_rows(admin: &Browser, slug: &str) -> HashMap<String, HashMap<String, String>> {
    let r = admin.get(&format!("/admin/studies/{slug}/export/wide.csv?status=all"));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut reader = csv::Reader::from_reader(r.body.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            let row: HashMap<String, String> = header
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_owned))
                .collect();
            (row["participant"].clone(), row)
        })
        .collect()
}

fn export_id(app: &TestApp, slug: &str, pid: &str) -> String {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    participants::find_by_export_or_pid(&mut conn, s.id, pid)
        .unwrap()
        .unwrap()
        .export_id
}

fn a_form_filler_gets_honeypot_and_speed_evidence_and_is_not_refused(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "bots", |c| c.min_situation_seconds = 5);
    let bot = "b0b0b0b0b0b0b0b0b0b0b0b0";
    let sent_to = fill_every_field(&app.browser(), &format!("/s/bots?PROLIFIC_PID={bot}"));
    // Nothing rejects: the filler is sent to Prolific like anyone (with the code its check
    // answer earned).
    assert!(
        sent_to.starts_with("https://app.prolific.com/submissions/complete?cc="),
        "{sent_to}"
    );
    // A participant walking the pages over HTTP without the hidden field: fast, no honeypot.
    let person = "9e9e9e9e9e9e9e9e9e9e9e9e";
    walk_to(
        &app.browser(),
        &format!("/s/bots?PROLIFIC_PID={person}"),
        "never",
    );

    let admin = signed_in(&app, Role::Researcher);
    let (bot_id, person_id) = (
        export_id(&app, "bots", bot),
        export_id(&app, "bots", person),
    );
    let page = admin.get(&format!("/admin/studies/bots/participants/{bot_id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    for label in [
        "Filled the hidden field",
        "Faster than reading",
        "Too fast on the situation",
    ] {
        assert!(page.body.contains(label), "{label}: {}", page.body);
    }
    let rows = wide_rows(&admin, "bots");
    let (b, p) = (&rows[&bot_id], &rows[&person_id]);
    assert_eq!(b["flag_honeypot"], "true", "{b:?}");
    assert_eq!(b["flag_reading_floor"], "true", "{b:?}");
    assert_eq!(b["flag_fast"], "true", "{b:?}");
    assert!(
        b["evidence"].contains("honeypot: filled the hidden field"),
        "{b:?}"
    );
    assert!(b["evidence"].contains("reading_floor: "), "{b:?}");
    assert_eq!(b["excluded"], "false", "no rules, no exclusion");
    assert_eq!(p["flag_honeypot"], "false", "{p:?}");
    // The evidence page counts it; the monitor's block too.
    let ev = admin.get("/admin/studies/bots/evidence");
    assert_eq!(ev.status, 200);
    assert!(ev.body.contains(&bot_id), "{}", ev.body);
    let monitor = admin.get("/admin/studies/bots");
    assert!(
        monitor.body.contains("(a form-filler)</th><td>1</td>"),
        "{}",
        monitor.body
    );
    assert!(
        monitor
            .body
            .contains("Faster than reading (latest 2 participants)</th><td>2</td>"),
        "{}",
        monitor.body
    );
}

/// An open study on the upstream `tested-175` set (doc.csv), with the published humans and
/// the given released model runs imported into it.
fn published_study(app: &TestApp, slug: &str, models: &[&str]) {
    let data = upstream().unwrap();
    let url = app.db.url.clone();
    ok(cli(
        &url,
        &[
            "import",
            "situations",
            data.join("doc.csv").to_str().unwrap(),
        ],
    ));
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let set = situations::find_set(&mut conn, "tested-175")
            .unwrap()
            .unwrap();
        let inst = instruments::ensure_builtin(&mut conn).unwrap();
        let mut c = StudyConfig::new(slug, "Published humans");
        c.consent_text = "Please read this consent text.".into();
        c.debrief_text = "Thank you.".into();
        c.code_completed = Some("COMPLETE1".into());
        c.code_no_consent = Some("NOCONSENT1".into());
        c.code_failed_check = Some("FAILED1".into());
        c.code_screened_out = Some("FULL1".into());
        c.min_situation_seconds = 0;
        studies::create(
            &mut conn,
            &c,
            StudyStatus::Open,
            studies::Sources::new(inst, Some(set)),
            42,
        )
        .unwrap();
    }
    let crowd = data.join("results/PANAS Test/crowd.xlsx");
    ok(cli(
        &url,
        &["import", "humans", crowd.to_str().unwrap(), "--study", slug],
    ));
    for m in models {
        import_model(app, slug, m);
    }
}

fn import_model(app: &TestApp, slug: &str, model: &str) {
    ok(cli(
        &app.db.url,
        &[
            "import",
            "model-results",
            &results_file(model),
            "--study",
            slug,
            "--model",
            model,
        ],
    ));
}

/// `studies evidence`: (assessed, count and percent per signal name).
fn evidence_cli(app: &TestApp, slug: &str) -> (usize, HashMap<String, (usize, f64)>) {
    let out = ok(cli(&app.db.url, &["studies", "evidence", slug]));
    let assessed: usize = out
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    let per = out
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [name, n, pct, "%"] => {
                    Some((name.to_string(), (n.parse().ok()?, pct.parse().ok()?)))
                }
                _ => None,
            }
        })
        .collect();
    (assessed, per)
}

fn the_published_humans_are_rarely_model_like_and_an_agent_copying_gpt_4_is(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    let app = spawn_app(db);
    published_study(&app, "published", &["gpt-4"]);
    let (n, per) = evidence_cli(&app, "published");
    assert_eq!(n, 1266);
    let (k4, share4) = per["model_like"];
    eprintln!("model-like against gpt-4: {k4} of {n} published humans ({share4:.2} %)");
    assert!(share4 <= 5.0, "{share4} %");
    import_model(&app, "published", "gpt-3.5-turbo");
    let (_, per) = evidence_cli(&app, "published");
    let (k, share) = per["model_like"];
    eprintln!(
        "model-like against gpt-4 or gpt-3.5-turbo: {k} of {n} published humans ({share:.2} %)"
    );
    assert!(share <= 5.0, "{share} %");
    assert!(k >= k4, "a second model can only add evidence");

    // The agent: takes the survey and answers both questionnaires with GPT-4's answers (a
    // default trial, then a trial of the situation it was given).
    let agent = "a9e47a9e47a9e47a9e47a9e4";
    let b = app.browser();
    let (now_page, now_path) = walk_to(
        &b,
        &format!("/s/published?PROLIFIC_PID={agent}"),
        "feelings-now",
    );
    let (default, evoked) = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let s = studies::load(&mut conn, "published").unwrap().unwrap();
        let p = participants::by_pid(&mut conn, s.id, agent)
            .unwrap()
            .unwrap();
        let situation = p.situation_id.unwrap();
        let trials = emotionbench::store::report::trials(
            &mut conn,
            s.id,
            s.instrument_id,
            &TrialFilter::Models(vec!["gpt-4".into()]),
        )
        .unwrap();
        let done = |t: &&emotionbench::store::report::TrialRow| t.status == TrialStatus::Done;
        let default = trials
            .iter()
            .filter(done)
            .find(|t| t.measure == Measure::Default)
            .unwrap()
            .scores
            .clone()
            .unwrap()
            .0;
        let evoked = trials
            .iter()
            .filter(done)
            .find(|t| t.measure == Measure::Evoked && t.situation == Some(situation))
            .unwrap()
            .scores
            .clone()
            .unwrap()
            .0;
        (default, evoked)
    };
    let answer = |page: &Reply, path: &str, scores: &[i32]| {
        let owned: Vec<(String, String)> = crate::survey::items_on(page)
            .into_iter()
            .map(|n| (format!("item-{n}"), scores[n as usize - 1].to_string()))
            .collect();
        let csrf = page.csrf();
        let mut f: Vec<(&str, &str)> = owned
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        f.push(("csrf", &csrf));
        let r = b.post(path, &f);
        assert_eq!(r.status, 303, "{}", r.body);
    };
    answer(&now_page, &now_path, &default);
    let (after_page, after_path) = walk_to(&b, "/s/published", "feelings-imagined");
    answer(&after_page, &after_path, &evoked);
    let (r, url) = walk_to(&b, "/s/published", "never");
    assert_eq!(r.status, 303);
    assert!(url.contains("cc=COMPLETE1"), "{url}");

    let admin = signed_in(&app, Role::Researcher);
    let id = export_id(&app, "published", agent);
    let page = admin.get(&format!("/admin/studies/published/participants/{id}"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Answers like a model"), "{}", page.body);
    let rows = wide_rows(&admin, "published");
    let row = &rows[&id];
    assert_eq!(row["flag_model_like"], "true", "{row:?}");
    assert_eq!(row["model_like_model"], "gpt-4", "{row:?}");
    assert!(
        row["model_log10_lr"].parse::<f64>().unwrap() > 2.0,
        "{row:?}"
    );
    // The published humans have no timings: no timing evidence about them at all.
    assert!(
        rows.values()
            .filter(|r| r["imported"] == "true")
            .all(|r| r["flag_reading_floor"] == "false" && r["time_rsi"].is_empty())
    );
}

/// Submits the situation page with the hidden field filled, as a form-filler would.
fn fill_honeypot(b: &Browser, slug: &str, pid: &str) {
    let (page, path) = walk_to(b, &format!("/s/{slug}?PROLIFIC_PID={pid}"), "situation");
    let csrf = page.csrf();
    let r = b.post(
        &path,
        &[("csrf", &csrf), ("website", "http://spam.example")],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let (r, _) = walk_to(b, &format!("/s/{slug}"), "never");
    assert_eq!(r.status, 303);
}

fn report_json(app: &TestApp, slug: &str) -> serde_json::Value {
    serde_json::from_str(&ok(cli(
        &app.db.url,
        &["report", "--study", slug, "--format", "json"],
    )))
    .unwrap()
}

fn the_report_and_the_exports_follow_the_exclusion_rules_with_counts_per_reason(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "ruled", |_| {});
    let pids = ["aaaaaaaaaaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaaaaaaaaaa2"];
    for pid in pids {
        walk_to(
            &app.browser(),
            &format!("/s/ruled?PROLIFIC_PID={pid}"),
            "never",
        );
    }
    let filler = "ffffffffffffffffffffffff";
    fill_honeypot(&app.browser(), "ruled", filler);

    let r = report_json(&app, "ruled");
    assert_eq!(
        r["provenance"]["humans"]["included"], 3,
        "{}",
        r["provenance"]
    );

    // The rules: honeypot and straight-lining (nobody here straight-lined).
    let admin = signed_in(&app, Role::Admin);
    let csrf = admin.get("/admin/studies/ruled/evidence").csrf();
    let set = admin.post(
        "/admin/studies/ruled/exclusions",
        &[
            ("csrf", &csrf),
            ("signal", "honeypot"),
            ("signal", "straightline"),
        ],
    );
    assert_eq!(set.status, 303, "{}", set.body);
    let bad = admin.post(
        "/admin/studies/ruled/exclusions",
        &[("csrf", &csrf), ("signal", "astrology")],
    );
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("unknown signal"), "{}", bad.body);
    let cli_rules = ok(cli(&app.db.url, &["studies", "exclusions", "ruled"]));
    assert!(
        cli_rules.contains("straightline, honeypot (changed after the study opened)"),
        "{cli_rules}"
    );

    let r = report_json(&app, "ruled");
    let humans = &r["provenance"]["humans"];
    assert_eq!(humans["included"], 2, "{humans}");
    let excluded = humans["excluded"].as_array().unwrap();
    assert!(
        excluded
            .iter()
            .any(|c| c["reason"] == "excluded by the study's rules: honeypot"
                && c["participants"] == 1),
        "{humans}"
    );
    assert!(
        r["humans_from"]
            .as_str()
            .unwrap()
            .contains("excluded by the study's rules: participants with evidence of straightline, honeypot (changed after the study opened"),
        "{}",
        r["humans_from"]
    );
    let md = ok(cli(&app.db.url, &["report", "--study", "ruled"]));
    assert!(
        md.contains("excluded by the study's rules: honeypot 1"),
        "{md}"
    );

    let rows = wide_rows(&admin, "ruled");
    let f = &rows[&export_id(&app, "ruled", filler)];
    assert_eq!(f["excluded"], "true", "{f:?}");
    assert_eq!(f["excluded_by"], "honeypot", "{f:?}");
    for pid in pids {
        let p = &rows[&export_id(&app, "ruled", pid)];
        assert_eq!(
            (p["excluded"].as_str(), p["excluded_by"].as_str()),
            ("false", "")
        );
    }
    let page = admin.get("/admin/studies/ruled/evidence");
    assert!(
        page.body
            .contains("Excluded by the rules (any rule)</th><td>1</td>"),
        "{}",
        page.body
    );
    let cli_counts = ok(cli(&app.db.url, &["studies", "evidence", "ruled"]));
    assert!(cli_counts.contains("excluded by honeypot"), "{cli_counts}");

    // Every change is audited, and clearing the rules brings everyone back.
    ok(cli(
        &app.db.url,
        &["studies", "exclusions", "ruled", "--set", "none"],
    ));
    let r = report_json(&app, "ruled");
    assert_eq!(r["provenance"]["humans"]["included"], 3);
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    use emotionbench::store::schema::audit_log;
    let n: i64 = audit_log::table
        .filter(audit_log::action.eq("study.exclusions"))
        .count()
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(n, 2);
}

/// The monitor keeps the finished participants' answers between loads
/// (`app::evidence::MonitorInputs`); what it shows must stay what a fresh computation gives
/// while participants complete, are deleted, and (on SQLite) a deleted highest row id is
/// handed to a newcomer.
fn the_monitor_evidence_kept_between_loads_is_what_a_fresh_computation_gives(db: TestDb) {
    use emotionbench::app::evidence::{
        MONITOR_LATEST, MonitorInputs, monitor_evidence, study_evidence,
    };
    use emotionbench::store::cohorts::{NewCompleted, insert_completed};
    use emotionbench::store::evidence::Scope;
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let id = emotionbench::app::demo::generate_study(&mut conn, "kept", 2_010, 3).unwrap();
    let study = studies::load(&mut conn, "kept").unwrap().unwrap();
    let inputs = MonitorInputs::default();
    let same = |conn: &mut _, inputs: &MonitorInputs| {
        let kept = monitor_evidence(conn, &study, inputs).unwrap();
        let fresh = study_evidence(conn, &study, Scope::Latest(MONITOR_LATEST)).unwrap();
        assert_eq!(kept.people.len(), 2_000);
        assert_eq!(format!("{:?}", kept.people), format!("{:?}", fresh.people));
        kept
    };
    same(&mut conn, &inputs);
    assert_eq!(inputs.kept(id), 2_000);
    // A newcomer whose answers copy the latest participant's: a duplicate of them.
    let latest: emotionbench::store::ParticipantId = {
        use emotionbench::store::schema::participants as p;
        p::table
            .filter(p::study_id.eq(id))
            .order(p::id.desc())
            .select(p::id)
            .first(&mut conn)
            .unwrap()
    };
    let mut answers = |phase: Measure| -> Vec<i32> {
        use emotionbench::store::schema::responses;
        responses::table
            .filter(responses::participant_id.eq(latest))
            .filter(responses::phase.eq(phase))
            .order(responses::item_number)
            .select(responses::value)
            .load(&mut conn)
            .unwrap()
    };
    let (before, after) = (answers(Measure::Default), answers(Measure::Evoked));
    let newcomer = |public_id: &str, before: Vec<i32>, after: Vec<i32>| NewCompleted {
        public_id: public_id.to_owned(),
        prolific_pid: None,
        source_ref: None,
        imported: false,
        situation_id: None,
        demographics: None,
        default_answers: before,
        evoked_answers: after,
        created_at: emotionbench::store::now(),
        completed_at: Some(emotionbench::store::now()),
    };
    insert_completed(&mut conn, id, &[newcomer("copy", before, after)]).unwrap();
    let e = same(&mut conn, &inputs);
    let copy = e.people.last().unwrap();
    assert!(
        copy.assessment
            .findings
            .iter()
            .any(|f| f.reason.contains("identical")),
        "{copy:?}"
    );
    // The copy is deleted and another newcomer comes (on SQLite it gets the copy's row id):
    // none of the copy's answers may be taken for theirs.
    let copy_id = emotionbench::store::ParticipantId(copy.id);
    participants::delete(&mut conn, id, copy_id).unwrap();
    let other = (1..=20).map(|i| 1 + (i % 5)).collect::<Vec<i32>>();
    let mut other_after = other.clone();
    other_after.reverse();
    insert_completed(&mut conn, id, &[newcomer("other", other, other_after)]).unwrap();
    let e = same(&mut conn, &inputs);
    assert!(
        !e.people
            .last()
            .unwrap()
            .assessment
            .findings
            .iter()
            .any(|f| f.reason.contains("identical")),
    );
    // More completions push the earliest out of the window; what is kept follows it.
    emotionbench::app::demo::generate_more(&mut conn, "kept", 2_010, 30, 9).unwrap();
    same(&mut conn, &inputs);
    assert_eq!(inputs.kept(id), 2_000);
    drop(conn);
}

on_both_backends!(
    the_monitor_evidence_kept_between_loads_is_what_a_fresh_computation_gives,
    a_form_filler_gets_honeypot_and_speed_evidence_and_is_not_refused,
    the_published_humans_are_rarely_model_like_and_an_agent_copying_gpt_4_is,
    the_report_and_the_exports_follow_the_exclusion_rules_with_counts_per_reason,
);
