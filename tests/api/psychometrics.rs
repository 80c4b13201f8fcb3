//! The psychometrics of the report's cohorts and the planning of a run (#16, points 4 and 5):
//! each cohort's `reliability` (α, ω per measure and category), `item_position` and
//! `test_retest` in the report's JSON; `emotionbench plan`, the new-run form's planning answer.

use std::time::Duration;

use emotionbench::llm::fake::{FakeAction, FakeRequest, FakeServer};
use emotionbench::store::users::Role;
use serde_json::Value;

use crate::admin::signed_in;
use crate::helpers::{TestDb, cli, ok, spawn_app, stderr, upstream};
use crate::on_both_backends;
use crate::report::import_published;
use crate::runs::{config, eb, provider, run_id};

fn cohort<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cohort {name}"))
}

/// `reliability` entry of a cohort: (measure, category).
fn entry<'a>(c: &'a Value, measure: &str, category: &str) -> &'a Value {
    c["reliability"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["measure"] == measure && e["category"] == category)
        .unwrap_or_else(|| panic!("no {measure} {category} in {}", c["reliability"]))
}

fn close(v: &Value, expected: f64) {
    let x = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((x - expected).abs() < 1e-9, "{x} vs {expected}");
}

/// On the published humans and gpt-4/gpt-3.5-turbo answers every cohort has α and ω per
/// measure and category; the figures are pingouin's (α), the principal-axes ω and pingouin's
/// ICC(1) computed from the upstream files by tools/stats_reference.py, published_reference().
fn every_cohort_has_alpha_and_omega_per_category_on_the_published_data(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    let text = ok(cli(
        &db.url,
        &["report", "--study", "crowd", "--format", "json"],
    ));
    let r: Value = serde_json::from_str(&text).unwrap();
    for c in r["cohorts"].as_array().unwrap() {
        let entries = c["reliability"].as_array().unwrap();
        assert_eq!(entries.len(), 4, "{}: {entries:?}", c["name"]);
        for e in entries {
            for k in ["alpha", "omega"] {
                // A number, or null with the reason.
                let missing = &e[format!("{k}_missing")];
                assert!(e[k].is_f64() != missing.is_string(), "{k}: {e}");
            }
        }
    }
    let humans = cohort(&r, "humans");
    for (measure, category, alpha, omega) in [
        (
            "default",
            "Positive Affect",
            0.9308724093424635,
            0.9316776597332908,
        ),
        (
            "default",
            "Negative Affect",
            0.9072802081952848,
            0.9117652866667684,
        ),
        (
            "evoked",
            "Positive Affect",
            0.9050817384675574,
            0.9076024618628413,
        ),
        (
            "evoked",
            "Negative Affect",
            0.9053770621751065,
            0.9071917086399546,
        ),
    ] {
        let e = entry(humans, measure, category);
        close(&e["alpha"], alpha);
        close(&e["omega"], omega);
        assert_eq!(e["respondents"], 1266);
        assert_eq!(e["items"], 10);
    }
    // Humans answer once per measure; the imported files show one item order.
    assert_eq!(humans["test_retest"]["prompts"], 0);
    assert_eq!(humans["item_position"]["shuffled"], false);
    assert!(
        humans["item_position"]["note"]
            .as_str()
            .unwrap()
            .starts_with("every response showed the items in one order")
    );
    let gpt4 = cohort(&r, "gpt-4");
    close(
        &entry(gpt4, "evoked", "Positive Affect")["respondents"],
        1750.0,
    );
    // GPT-4's default NA is 10 in all 50 trials: no α, and the reason says why.
    let na = entry(gpt4, "default", "Negative Affect");
    assert!(na["alpha"].is_null());
    assert_eq!(na["alpha_missing"], "the total score has no variance");
    let retest = &gpt4["test_retest"];
    assert_eq!(
        (retest["prompts"].as_u64(), retest["repeats"].as_u64()),
        (Some(176), Some(10))
    );
    close(&retest["categories"][0]["icc1"], 0.8416297290201415);
    close(&retest["categories"][1]["icc1"], 0.8643650707099949);
    close(&retest["categories"][0]["ci_low"], 0.8106907779889707);
    close(&retest["categories"][0]["ci_high"], 0.8705236004655736);
    close(&retest["categories"][1]["ci_low"], 0.8371082806282887);
    close(&retest["categories"][1]["ci_high"], 0.8895916767118284);
    let gpt35 = cohort(&r, "gpt-3.5-turbo");
    assert!(entry(gpt35, "evoked", "Negative Affect")["alpha"].is_f64());
    rendered_on_the_published_data(&db);
}

/// The same numbers in the Markdown, HTML and CSV reports: the reliability table (cohort ×
/// measure, α and ω per category), the test–retest table, and the notes that say what is
/// missing and why.
fn rendered_on_the_published_data(db: &TestDb) {
    let report = |format: &str| {
        ok(cli(
            &db.url,
            &["report", "--study", "crowd", "--format", format],
        ))
    };
    let md = report("md");
    let block = &md[md
        .find("## Psychometrics")
        .expect("a psychometrics section")..];
    for line in [
        "Cronbach's α and McDonald's ω (one factor, principal axes) per category",
        "| Cohort, measure | n | Positive Affect α | Positive Affect ω | Negative Affect α | Negative Affect ω |",
        "| humans, default | 1266 | 0.931 | 0.932 | 0.907 | 0.912 |",
        "| humans, evoked | 1266 | 0.905 | 0.908 | 0.905 | 0.907 |",
        "| gpt-4, default | 50 | 0.000 | n/a | n/a | n/a |",
        "Test–retest over repeats of the same prompt: ICC(1)",
        "| gpt-4 | 176 × 10 | 0.842 (0.811, 0.871) | 0.864 (0.837, 0.890) |",
        "- gpt-4, default, Negative Affect: no α: the total score has no variance.",
        "- humans, gpt-3.5-turbo, gpt-4: no item-position effect: every response showed the items in one order",
        "- humans: no test–retest: no repeated prompts",
    ] {
        assert!(block.contains(line), "missing {line:?} in\n{block}");
    }
    let html = report("html");
    assert!(html.contains("<h2>Psychometrics</h2>"));
    assert!(html.contains("Reliability per cohort and measure"));
    assert!(html.contains("<th scope=\"row\">humans, default</th><td>1266</td><td>0.931</td><td>0.932</td><td>0.907</td><td>0.912</td>"), "{html}");
    let csv = report("csv");
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let header = rows.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = rows
        .records()
        .map(Result::unwrap)
        .find(|r| {
            &r[col("cohort")] == "gpt-4"
                && &r[col("level")] == "overall"
                && &r[col("category")] == "Positive Affect"
        })
        .unwrap();
    assert_eq!(&row[col("reliability_alpha_default")], "0.0");
    assert_eq!(&row[col("reliability_omega_default")], "");
    let icc: f64 = row[col("test_retest_icc1")].parse().unwrap();
    assert!((icc - 0.8416297290201415).abs() < 1e-9);
    let alpha: f64 = row[col("reliability_alpha_evoked")].parse().unwrap();
    assert!((alpha - 0.9262473164030455).abs() < 1e-9, "{alpha}");
}

/// Answers every item shown in the first half with 4 and the rest with 2, whatever the item:
/// a pure position effect.
fn by_position(req: &FakeRequest) -> FakeAction {
    let n = req.item_count();
    let lines: Vec<String> = (1..=n)
        .map(|p| format!("{p}. {}", if p <= n / 2 { 4 } else { 2 }))
        .collect();
    FakeAction::text(req, &lines.join("\n"), Duration::ZERO)
}

/// A run shuffles each trial's item order (seeded): the report's mean answer by displayed
/// position shows the model's position effect (4 in the first half, 2 after), and test–retest
/// runs over the run's prompts × repeats.
fn the_item_position_effect_is_measured_over_shuffled_orders(db: TestDb) {
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let server = FakeServer::start(by_position).unwrap();
    let cfg = config(&[provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    let args = [
        "run",
        "--study",
        "demo",
        "--provider",
        "fake",
        "--model",
        "m",
        "--default-repeats",
        "3",
        "--repeats",
        "3",
        "--seed",
        "5",
    ];
    let out = ok(eb(&db, &cfg, &args, &[]));
    assert!(out.contains("completed"), "{out}");
    let _ = run_id(&out);
    let text = ok(eb(
        &db,
        &cfg,
        &["report", "--study", "demo", "--format", "json"],
        &[],
    ));
    let r: Value = serde_json::from_str(&text).unwrap();
    let m = cohort(&r, "m");
    let trials = m["observations"].as_u64().unwrap();
    let position = &m["item_position"];
    assert_eq!(position["shuffled"], true, "{position}");
    assert_eq!(position["responses"].as_u64(), Some(trials));
    assert!(position["orders"].as_u64().unwrap() > 1);
    let means = position["positions"].as_array().unwrap();
    assert_eq!(means.len(), 20);
    for p in means {
        let at = p["position"].as_u64().unwrap();
        close(&p["mean"], if at <= 10 { 4.0 } else { 2.0 });
        assert_eq!(p["n"].as_u64(), Some(trials));
    }
    close(&position["spread"], 2.0);
    let retest = &m["test_retest"];
    assert_eq!(retest["repeats"], 3, "{retest}");
    assert_eq!(retest["prompts"].as_u64(), Some(trials / 3));
    for c in retest["categories"].as_array().unwrap() {
        let icc = c["icc1"].as_f64().unwrap_or_else(|| panic!("{c}"));
        assert!((-1.0..=1.0).contains(&icc), "{icc}");
    }
    // Item answers depend on the position only: the items of a category do not covary
    // consistently, α is far from a reliable scale's.
    let pa = entry(m, "evoked", "Positive Affect");
    assert!(pa["alpha"].as_f64().is_none_or(|a| a < 0.5), "{pa}");
    // The Markdown report's position table: one column for the cohort, a row per position.
    let md = ok(eb(
        &db,
        &cfg,
        &["report", "--study", "demo", "--format", "md"],
        &[],
    ));
    assert!(
        md.contains("Item-position effect: the mean raw answer at each displayed position"),
        "{md}"
    );
    assert!(md.contains("| Position shown | m |"), "{md}");
    assert!(
        md.contains("| 1 | 4.000 |") && md.contains("| 20 | 2.000 |"),
        "{md}"
    );
    assert!(md.contains("| Spread (max − min) | 2.000 |"), "{md}");
}

/// `plan` answers as statsmodels' `TTestIndPower().solve_power` rounded up
/// (tools/stats_reference.py: d = 0.5, α = 0.05, power 0.8 → 63.77 → 64; d = 0.8, α = 0.01,
/// power 0.9 → 48.19 → 49), in words and as JSON; bad input is refused with the reason.
#[test]
fn plan_prints_the_repeats_the_two_sample_test_needs() {
    let text = ok(cli(
        "sqlite://unused.db",
        &[
            "plan",
            "--effect-size",
            "0.5",
            "--alpha",
            "0.05",
            "--power",
            "0.8",
        ],
    ));
    assert!(
        text.starts_with(
            "64 trials in each group compared (run --repeats 64 --default-repeats 64): power 0.8015"
        ),
        "{text}"
    );
    let json = ok(cli(
        "sqlite://unused.db",
        &[
            "plan",
            "--effect-size",
            "-0.8",
            "--alpha",
            "0.01",
            "--power",
            "0.9",
            "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["repeats"], 49, "{json}");
    assert_eq!(v["df"], 96.0);
    let achieved = v["achieved_power"].as_f64().unwrap();
    assert!((0.9..0.91).contains(&achieved), "{achieved}");
    let bad = cli("sqlite://unused.db", &["plan", "--effect-size", "0"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("the effect size must be a finite number other than 0"),
        "{}",
        stderr(&bad)
    );
    let bad = cli(
        "sqlite://unused.db",
        &["plan", "--effect-size", "0.5", "--power", "1"],
    );
    assert!(
        stderr(&bad).contains("the power must be between 0 and 1"),
        "{}",
        stderr(&bad)
    );
}

/// The new-run form answers a planning query server-side and sets both repeat fields to it;
/// a bad query is shown in the page, not as an error page.
fn the_new_run_form_plans_the_repeats(db: TestDb) {
    let app = spawn_app(db);
    let b = signed_in(&app, Role::Admin);
    let page = b.get("/admin/runs/new?effect_size=0.5&plan_alpha=0.05&power=0.8");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("64 trials in each group compared: power 0.801 for d = 0.5 at α = 0.05"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(r#"id="repeats" name="repeats" inputmode="numeric" value="64""#)
    );
    assert!(
        page.body.contains(
            r#"id="default_repeats" name="default_repeats" inputmode="numeric" value="64""#
        )
    );
    let plain = b.get("/admin/runs/new");
    assert!(
        plain
            .body
            .contains(r#"name="repeats" inputmode="numeric" value="10""#)
    );
    assert!(!plain.body.contains("trials in each group compared"));
    let bad = b.get("/admin/runs/new?effect_size=big&plan_alpha=0.05&power=0.8");
    assert_eq!(bad.status, 200);
    assert!(
        bad.body
            .contains("the effect size must be a number, not &#34;big&#34;")
            || bad
                .body
                .contains("the effect size must be a number, not &quot;big&quot;"),
        "{}",
        bad.body
    );
    assert!(
        bad.body
            .contains(r#"name="repeats" inputmode="numeric" value="10""#)
    );
}

on_both_backends!(
    the_new_run_form_plans_the_repeats,
    every_cohort_has_alpha_and_omega_per_category_on_the_published_data,
    the_item_position_effect_is_measured_over_shuffled_orders,
);
