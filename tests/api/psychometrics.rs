//! The psychometrics of the report's cohorts and the planning of a run (#16, points 4 and 5):
//! `emotionbench plan`, the new-run form's planning answer.

use emotionbench::store::users::Role;

use crate::admin::signed_in;
use crate::helpers::{TestDb, cli, ok, spawn_app, stderr};
use crate::on_both_backends;

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

on_both_backends!(the_new_run_form_plans_the_repeats);
