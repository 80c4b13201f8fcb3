//! Valence variants (#18, point 4) on SQLite and Postgres: a tidy CSV with `variant_of` and
//! `valence` imports over the CLI and the admin's upload page (a malformed one is refused with
//! its line and reason, and nothing is stored); the set page shows each variant under its
//! original and the tidy download reads back as the same set; a run selects by valence; the
//! report pairs the variants with their originals and says whether the change follows valence.

use std::time::Duration;

use emotionbench::domain::demo::demo_study;
use emotionbench::domain::situation::Valence;
use emotionbench::llm::fake::{FakeAction, FakeRequest, FakeServer};
use emotionbench::store::users::Role;
use emotionbench::store::{db, situations};
use serde_json::Value;

use crate::admin::signed_in;
use crate::helpers::{TestDb, assert_same, cli, ok, spawn_app, stderr};
use crate::on_both_backends;
use crate::runs::{config, eb, provider, run_id};
use crate::uploads::upload;

/// Our own texts: two originals, a positive variant of the first listed before it, a neutral
/// one of the second.
const VARIANTS: &str = "key,emotion,factor,text,variant_of,valence\n\
    q-pos,Anger,Queues,Someone waves you to the front of the queue.,q,positive\n\
    q,Anger,Queues,Someone jumps the queue in front of you.,,\n\
    r,Anger,Queues,The queue has not moved for twenty minutes.,,negative\n\
    r-neu,Anger,Queues,The queue moves at its usual pace.,r,neutral\n";

/// (key, variant_of, valence, factor index, scenario index) of a stored set, in file order.
fn stored(url: &str, set: &str) -> Vec<(String, Option<String>, Valence, u32, u32)> {
    let pool = db::connect(url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let id = situations::find_set(&mut conn, set).unwrap().unwrap();
    situations::list(&mut conn, id)
        .unwrap()
        .into_iter()
        .map(|s| {
            let s = s.situation;
            (
                s.key,
                s.variant_of,
                s.valence,
                s.factor_index,
                s.scenario_index,
            )
        })
        .collect()
}

fn expected_set() -> Vec<(String, Option<String>, Valence, u32, u32)> {
    vec![
        ("q-pos".into(), Some("q".into()), Valence::Positive, 0, 0),
        ("q".into(), None, Valence::Negative, 0, 0),
        ("r".into(), None, Valence::Negative, 0, 1),
        ("r-neu".into(), Some("r".into()), Valence::Neutral, 0, 1),
    ]
}

fn variants_import_over_the_cli_and_a_malformed_file_is_refused_with_line_and_reason(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("variants.csv");
    std::fs::write(&path, VARIANTS).unwrap();
    let path = path.to_str().unwrap();
    let out = ok(cli(
        &db.url,
        &["import", "situations", path, "--set", "val"],
    ));
    assert!(
        out.contains("situations: 4 (4 created, 0 updated, 0 unchanged)"),
        "{out}"
    );
    assert_eq!(stored(&db.url, "val"), expected_set());
    // Importing again changes nothing.
    let out = ok(cli(
        &db.url,
        &["import", "situations", path, "--set", "val"],
    ));
    assert!(out.contains("4 unchanged"), "{out}");
    let before = db.snapshot();
    for (name, body, place, reason) in [
        (
            "orphan.csv",
            "key,emotion,factor,text,variant_of,valence\nq,Anger,Queues,A queue.,,\n\
             v,Anger,Queues,A short queue.,nobody,positive\n",
            "line 3, column \"variant_of\"",
            "variant_of \"nobody\" names no situation of this file",
        ),
        (
            "same.csv",
            "key,emotion,factor,text,variant_of,valence\nq,Anger,Queues,A queue.,,\n\
             v,Anger,Queues,A short queue.,q,negative\n",
            "line 3, column \"valence\"",
            "a variant needs another valence than its original",
        ),
        (
            "unknown.csv",
            "key,emotion,factor,text,variant_of,valence\nq,Anger,Queues,A queue.,,cheerful\n",
            "line 2, column \"valence\"",
            "unknown valence \"cheerful\"",
        ),
    ] {
        let bad = dir.path().join(name);
        std::fs::write(&bad, body).unwrap();
        let out = cli(
            &db.url,
            &[
                "import",
                "situations",
                bad.to_str().unwrap(),
                "--set",
                "val",
            ],
        );
        let err = stderr(&out);
        assert!(!out.status.success(), "{name} was accepted");
        for wanted in [name, place, reason] {
            assert!(err.contains(wanted), "{name}: lacks {wanted:?}: {err}");
        }
        assert_same(&db.snapshot(), &before);
    }
}

fn variants_upload_from_the_browser_show_on_the_set_page_and_download_as_they_came(db: TestDb) {
    let app = spawn_app(db);
    let admin = signed_in(&app, Role::Admin);
    let page = admin.get("/admin/data");
    assert!(page.body.contains("variant_of"), "{}", page.body);
    let t = page.csrf();
    let csrf = ("csrf", t.as_str());
    let r = upload(
        &admin,
        "situations",
        &[csrf, ("set", "val")],
        Some(("variants.csv", VARIANTS.as_bytes())),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("Imported variants.csv") && r.body.contains("situations 4"),
        "{}",
        r.body
    );
    assert_eq!(stored(&app.db.url, "val"), expected_set());

    // Each variant under its original, tagged with its valence.
    let set = admin.get("/admin/data/sets/val");
    assert_eq!(set.status, 200);
    let q = set.body.find("<code>q</code>").unwrap();
    let variants_of_q = set.body.find("Valence variants of q\"").unwrap();
    let q_pos = set.body.find("<code>q-pos</code>").unwrap();
    assert!(q < variants_of_q && variants_of_q < q_pos, "{}", set.body);
    assert!(
        set.body
            .contains("<span class=\"tag\">positive</span> <code>q-pos</code>"),
        "{}",
        set.body
    );
    assert!(set.body.contains("<span class=\"tag\">neutral</span>"));

    // The tidy download carries both columns and reads back as the same set.
    let csv = admin.get("/admin/data/sets/val/export/situations.csv");
    assert_eq!(csv.status, 200);
    assert!(
        csv.body.starts_with(
            "key,emotion,factor_index,factor_name,scenario_index,text,variant_of,valence\n"
        ),
        "{}",
        csv.body
    );
    assert!(
        csv.body.contains(
            "q-pos,Anger,0,Queues,0,Someone waves you to the front of the queue.,q,positive\n"
        ),
        "{}",
        csv.body
    );
    let before = app.db.snapshot();
    let r = upload(
        &admin,
        "situations",
        &[csrf, ("set", "val")],
        // Under the first upload's name: the set records the file it came from.
        Some(("variants.csv", csv.body.as_bytes())),
    );
    assert!(r.body.contains("4 unchanged"), "{}", r.body);
    assert_same(&app.db.snapshot(), &before);

    // A malformed file: 422, the place and the reason on the page, nothing stored.
    let bad = "key,emotion,factor,text,variant_of,valence\nq,Anger,Queues,A queue.,,\n\
               v,Fear,Queues,A short queue.,q,positive\n";
    let r = upload(
        &admin,
        "situations",
        &[csrf, ("set", "val")],
        Some(("bad.csv", bad.as_bytes())),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    for wanted in [
        "bad.csv",
        "line 3, column",
        "a variant keeps its original",
        "Nothing was imported.",
    ] {
        assert!(r.body.contains(wanted), "lacks {wanted:?}: {}", r.body);
    }
    assert_same(&app.db.snapshot(), &before);
}

/// A fake model whose change follows the valence: every item `2` or `3` at baseline
/// (alternating by request), one to three points higher after a negative situation (by the
/// length of its text, so that situations differ), unchanged after a variant.
pub(crate) fn valence_feeling(req: &FakeRequest, variants: &[String]) -> FakeAction {
    let user = req.user_message();
    let base = 2 + i32::from(req.number % 2 == 0);
    let evoked = user.contains("Imagine you are the protagonist");
    let score = if !evoked || variants.iter().any(|v| user.contains(v.as_str())) {
        base
    } else {
        base + 1 + i32::try_from(user.len() % 3).unwrap_or(0)
    }
    .min(5);
    let lines: Vec<String> = (1..=req.item_count())
        .map(|i| format!("{i}. {score}"))
        .collect();
    FakeAction::text(req, &lines.join("\n"), Duration::ZERO)
}

fn runs_select_by_valence_and_the_report_pairs_variants_with_their_originals(db: TestDb) {
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
        assert!(emotionbench::app::demo::load_valence_demo(&mut conn).unwrap());
        assert!(!emotionbench::app::demo::load_valence_demo(&mut conn).unwrap());
    }
    let variants: Vec<String> = demo_study().variants.into_iter().map(|v| v.text).collect();
    let server = FakeServer::start(move |req| valence_feeling(req, &variants)).unwrap();
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    let run = |more: &[&str]| {
        let mut args = vec![
            "run",
            "--study",
            "demo-valence",
            "--provider",
            "fake",
            "--model",
            "m",
            "--seed",
            "3",
            "--default-repeats",
            "10",
            "--repeats",
            "2",
        ];
        args.extend_from_slice(more);
        ok(eb(&db, &cfg, &args, &[]))
    };
    // Only the positive variants: 8 situations × 2 repeats + 10 default trials.
    let out = run(&["--valence", "positive"]);
    assert!(out.contains("26 trials"), "{out}");
    let refused = eb(
        &db,
        &cfg,
        &[
            "run",
            "--study",
            "demo-valence",
            "--provider",
            "fake",
            "--model",
            "m",
            "--valence",
            "happy",
        ],
        &[],
    );
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("unknown valence \"happy\""),
        "{}",
        stderr(&refused)
    );

    // Every situation: the 16 originals and the 12 variants.
    let out = run(&[]);
    assert!(out.contains("66 trials"), "{out}");
    let id = run_id(&out).0.to_string();
    let report = |format: &str| {
        ok(eb(
            &db,
            &cfg,
            &[
                "report",
                "--study",
                "demo-valence",
                "--runs",
                &id,
                "--format",
                format,
            ],
            &[],
        ))
    };
    let r: Value = serde_json::from_str(&report("json")).unwrap();
    // The main tables keep to the 16 originals.
    let overall = &r["cohorts"][0]["groups"][0];
    assert_eq!(overall["level"], "overall");
    assert_eq!(overall["categories"][0]["n_evoked"], 32, "{overall}");
    let v = &r["valence"];
    assert_eq!(v["pairs"].as_array().unwrap().len(), 12);
    let pair = &v["pairs"][0];
    assert_eq!(
        (pair["original_key"].as_str(), pair["variant_key"].as_str()),
        (
            Some("Anger-0_scenario-0"),
            Some("Anger-0_scenario-0_positive")
        )
    );
    let rows = v["rows"].as_array().unwrap();
    // One cohort × (negative vs neutral, negative vs positive) × PANAS's two categories.
    assert_eq!(rows.len(), 4);
    let pairs_of = |valence: &str| -> Vec<u64> {
        rows.iter()
            .filter(|r| r["variant_valence"] == valence)
            .map(|r| r["pairs"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(pairs_of("positive"), [8, 8]);
    assert_eq!(pairs_of("neutral"), [4, 4]);
    for row in rows {
        // The fake's change follows the valence: larger after the negative originals.
        assert!(row["difference"].as_f64().unwrap() > 0.5, "{row}");
        assert!(row["ci_low"].as_f64().unwrap() < row["ci_high"].as_f64().unwrap());
        assert!(row["t"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["dz"].as_f64().is_some(), "{row}");
    }
    let positive_na = rows
        .iter()
        .find(|r| r["variant_valence"] == "positive" && r["category"] == "Negative Affect")
        .unwrap();
    assert_eq!(positive_na["significant"], true, "{positive_na}");
    let words = positive_na["verdict"].as_str().unwrap();
    assert!(
        words.contains("larger than after their positive variants")
            && words.contains("follows the valence")
            && words.contains("8 situations"),
        "{words}"
    );
    // Markdown and HTML carry the section with its caveat.
    let md = report("markdown");
    assert!(md.contains("## Valence control"), "{md}");
    assert!(
        md.contains("Anger-0\\_scenario-0 (negative) → Anger-0\\_scenario-0\\_positive (positive)"),
        "{md}"
    );
    assert!(md.contains("paired t-test over the situations"), "{md}");
    let html = report("html");
    assert!(html.contains("<h2>Valence control</h2>"), "{html}");
    assert!(html.contains("follows the valence"));
}

/// A study on the demo's valence set that selects `positive`: eight participants walk to the
/// situation page over HTTP and each gets a different positive variant, never an original.
fn a_study_that_selects_by_valence_assigns_participants_only_those_situations(db: TestDb) {
    use diesel::prelude::*;
    use emotionbench::domain::study::{StudyConfig, StudyStatus};
    use emotionbench::store::schema::{participants, situations as s, studies as st};
    let app = spawn_app(db);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_valence_demo(&mut conn).unwrap();
        let set = situations::find_set(&mut conn, "demo-valence")
            .unwrap()
            .unwrap();
        let inst = emotionbench::store::instruments::ensure_builtin(&mut conn).unwrap();
        let mut c = StudyConfig::new("pos", "Positive situations");
        c.consent_text = "Please read this consent text.".into();
        c.debrief_text = "Thank you.".into();
        c.code_completed = Some("COMPLETE1".into());
        c.min_situation_seconds = 0;
        c.valences = vec![Valence::Positive];
        emotionbench::store::studies::create(
            &mut conn,
            &c,
            StudyStatus::Open,
            emotionbench::store::studies::Sources::new(inst, Some(set)),
            42,
        )
        .unwrap();
        // Read back as it was written (the form and the definition file use this).
        let stored = emotionbench::store::studies::load(&mut conn, "pos")
            .unwrap()
            .unwrap();
        assert_eq!(stored.config().valences, vec![Valence::Positive]);
    }
    for i in 0..8 {
        let (page, _) = crate::survey::walk_to(
            &app.browser(),
            &format!("/s/pos?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d{i:02}"),
            "situation",
        );
        assert_eq!(page.status, 200, "{}", page.body);
    }
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let mut keys: Vec<String> = participants::table
        .inner_join(st::table)
        .inner_join(s::table)
        .filter(st::slug.eq("pos"))
        .select(s::key)
        .load(&mut conn)
        .unwrap();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 8, "{keys:?}");
    assert!(keys.iter().all(|k| k.ends_with("_positive")), "{keys:?}");
}

/// `emotionbench demo` creates the valence study once and says where its set is.
#[test]
fn the_demo_prints_its_valence_study_and_its_set() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, lines, base) = crate::cli::start_demo(dir.path());
    child.kill().unwrap();
    child.wait().unwrap();
    let text = lines.join("\n");
    assert!(
        text.contains("valence study:    demo-valence (created;"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "valence set:      {base}/admin/data/sets/demo-valence"
        )),
        "{text}"
    );
    let (mut child, lines, _) = crate::cli::start_demo(dir.path());
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        lines
            .join("\n")
            .contains("valence study:    demo-valence (reused;"),
        "{lines:?}"
    );
    let url = format!("sqlite://{}", dir.path().join("emotionbench.db").display());
    let got = stored(&url, "demo-valence");
    assert_eq!(got.len(), 28);
    assert_eq!(got.iter().filter(|s| s.1.is_some()).count(), 12);
}

on_both_backends!(
    a_study_that_selects_by_valence_assigns_participants_only_those_situations,
    variants_import_over_the_cli_and_a_malformed_file_is_refused_with_line_and_reason,
    variants_upload_from_the_browser_show_on_the_set_page_and_download_as_they_came,
    runs_select_by_valence_and_the_report_pairs_variants_with_their_originals,
);
