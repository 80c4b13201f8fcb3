//! `emotionbench report` and the admin report page with the published data: the humans'
//! column and the paper's Table 2 for GPT-4 and GPT-3.5-Turbo, in every format.

use std::process::Command;

use emotionbench::store::users;
use serde_json::Value;

use crate::admin::signed_in;
use crate::exports::pandas_python;
use crate::helpers::{TestDb, cli, ok, spawn_app, upstream};
use crate::humans::{crowd_xlsx, human_csv, import_tested_175};
use crate::model_results::{CHALLENGING, challenging_file, results_file};
use crate::on_both_backends;

/// The human cohort and the released gpt-4 and gpt-3.5-turbo answers in study `crowd`, from
/// our derived CSVs (`derived/` exists only in our copy of the data; users have the upstream
/// files, which [`import_upstream_panas`] uses and which import as the same cohorts, see
/// `humans::crowd_xlsx_and_the_derived_csv_import_as_identical_cohorts`).
pub fn import_published(db: &TestDb) {
    import_tested_175(db);
    ok(cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd"],
    ));
    for model in ["gpt-4", "gpt-3.5-turbo"] {
        ok(cli(
            &db.url,
            &[
                "import",
                "model-results",
                &results_file(model),
                "--study",
                "crowd",
                "--model",
                model,
            ],
        ));
    }
}

fn report(db: &TestDb, args: &[&str]) -> String {
    let mut all = vec!["report", "--study", "crowd"];
    all.extend_from_slice(args);
    ok(cli(&db.url, &all))
}

fn json(db: &TestDb, args: &[&str]) -> Value {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&report(db, &all)).unwrap()
}

fn cohort<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cohort {name}"))
}

/// The [PA, NA] cells of a group: `level` overall or an emotion name.
fn cells<'a>(cohort: &'a Value, group: &str) -> Vec<&'a Value> {
    let g = cohort["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| match group {
            "overall" => g["level"] == "overall",
            e => g["level"] == "emotion" && g["emotion"] == e,
        })
        .unwrap_or_else(|| panic!("no group {group}"));
    g["categories"].as_array().unwrap().iter().collect()
}

fn one(x: &Value) -> f64 {
    (x.as_f64().unwrap() * 10.0).round() / 10.0
}

/// `(default mean, default sd)` rounded to one decimal.
fn default_of(c: &Value) -> (f64, f64) {
    (one(&c["default_mean"]), one(&c["default_sd"]))
}

/// `(direction, Δ)` with Δ rounded to one decimal.
fn change(c: &Value) -> (&str, f64) {
    (c["direction"].as_str().unwrap(), one(&c["delta"]))
}

fn is_num_or_null(v: &Value) -> bool {
    v.is_null() || v.as_f64().is_some_and(f64::is_finite)
}

/// Every key of the JSON shape with its type; numbers finite or null.
fn assert_shape(r: &Value) {
    assert!(r["study"].is_string());
    assert!(r["instrument"].is_string());
    assert!(r["alpha"].is_f64());
    assert!(["paper", "default"].contains(&r["mode"].as_str().unwrap()));
    assert!(["trial", "situation"].contains(&r["unit"].as_str().unwrap()));
    for c in r["cohorts"].as_array().unwrap() {
        assert!(c["name"].is_string());
        assert!(["humans", "model"].contains(&c["kind"].as_str().unwrap()));
        assert!(c["failed_trials"].is_u64());
        let groups = c["groups"].as_array().unwrap();
        assert!(!groups.is_empty());
        for g in groups {
            let level = g["level"].as_str().unwrap();
            assert!(["overall", "emotion", "factor"].contains(&level));
            assert_eq!(g["emotion"].is_null(), level == "overall", "{g}");
            assert_eq!(g["factor"].is_null(), level != "factor", "{g}");
            for x in g["categories"].as_array().unwrap() {
                assert!(x["name"].is_string());
                assert!(x["n_default"].is_u64() && x["n_evoked"].is_u64());
                for k in [
                    "default_mean",
                    "default_sd",
                    "evoked_mean",
                    "evoked_sd",
                    "delta",
                    "t",
                    "df",
                    "p",
                    "effect_size",
                ] {
                    assert!(is_num_or_null(&x[k]), "{k} in {x}");
                }
                assert!(x["significant"].is_boolean());
                let d = x["direction"].as_str().unwrap();
                assert!(["up", "down", "none"].contains(&d));
                assert_eq!(x["significant"].as_bool().unwrap(), d != "none", "{x}");
            }
        }
    }
    for a in r["alignment"].as_array().unwrap() {
        assert!(a["model"].is_string());
        assert_metric_set(a);
        assert!(a["summary"].is_string());
    }
    // The ceiling and every baseline carry the same metrics (#16).
    if !r["alignment"].as_array().unwrap().is_empty() {
        assert_metric_set(&r["ceiling"]);
        assert!(r["ceiling"]["splits"].is_u64());
    }
    for b in r["baselines"].as_array().unwrap() {
        assert!(["uniform", "marginal", "shuffled"].contains(&b["kind"].as_str().unwrap()));
        assert!(b["name"].is_string());
        assert_metric_set(b);
    }
    let m = &r["alignment_method"];
    assert!(m["seed"].is_u64() && m["resamples"].is_u64());
    for k in ["few_humans", "no_humans", "warnings"] {
        assert!(m[k].is_array(), "{k} in {m}");
    }
}

/// The alignment metrics, each `{value, ci_low, ci_high}` (numbers or null; low ≤ high),
/// overall, per category and per emotion.
const METRICS: [&str; 6] = [
    "direction_agreement",
    "delta_correlation",
    "evoked_mae",
    "default_gap",
    "wasserstein",
    "jensen_shannon",
];

fn assert_metric_set(x: &Value) {
    let metrics = |o: &Value| {
        for k in METRICS {
            let m = &o[k];
            for f in ["value", "ci_low", "ci_high"] {
                assert!(
                    m.get(f).is_some() && is_num_or_null(&m[f]),
                    "{k}.{f} in {o}"
                );
            }
            if let (Some(l), Some(h)) = (m["ci_low"].as_f64(), m["ci_high"].as_f64()) {
                assert!(l <= h, "{k} in {o}");
            }
        }
    };
    metrics(x);
    assert!(x["cells_compared"].is_u64() && x["cells_agreeing"].is_u64());
    for scope in ["categories", "emotions"] {
        let list = x[scope]
            .as_array()
            .unwrap_or_else(|| panic!("{scope} in {x}"));
        assert!(!list.is_empty());
        for s in list {
            assert!(s["name"].is_string());
            metrics(s);
        }
    }
}

fn the_published_data_reproduces_the_humans_and_table_2_of_the_paper(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    assert_published_figures(&db, 2);
}

/// The released answer columns of an upstream results file: (default, evoked).
fn released_trials(path: &str) -> (usize, usize) {
    let header = std::fs::read_to_string(path).unwrap();
    let header = header.lines().next().unwrap();
    let columns: Vec<&str> = header.split(',').filter(|c| c.contains("_test-")).collect();
    let default = columns.iter().filter(|c| c.starts_with("General_")).count();
    (default, columns.len() - default)
}

/// The seven models of the released PANAS results.
const PANAS_MODELS: [&str; 7] = [
    "davinci-003",
    "gpt-3.5-turbo",
    "gpt-4",
    "llama2-13b",
    "llama2-7b",
    "llama3.1-8b",
    "mixtral-8x22b",
];

/// Imports a released results file and checks that every one of its trials was imported.
fn import_every_trial(db: &TestDb, path: &str, model: &str, instrument: &str) {
    let out = ok(cli(
        &db.url,
        &[
            "import",
            "model-results",
            path,
            "--study",
            "crowd",
            "--model",
            model,
            "--instrument",
            instrument,
        ],
    ));
    let count = |prefix: &str| -> usize {
        let line = out.lines().find(|l| l.starts_with(prefix)).unwrap();
        let numbers: Vec<usize> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        numbers.iter().sum()
    };
    assert_eq!(
        (count("default trials:"), count("evoked trials:")),
        released_trials(path),
        "{path}: {out}"
    );
}

/// Upstream files only: doc.csv (set tested-175), crowd.xlsx (study crowd) and the seven
/// released PANAS results, every trial checked in.
pub fn import_upstream_panas(db: &TestDb) {
    let data = upstream().unwrap();
    let doc = data.join("doc.csv");
    ok(cli(
        &db.url,
        &["import", "situations", doc.to_str().unwrap()],
    ));
    ok(cli(
        &db.url,
        &["import", "humans", &crowd_xlsx(), "--study", "crowd"],
    ));
    for model in PANAS_MODELS {
        import_every_trial(db, &results_file(model), model, "PANAS");
    }
}

/// The time and build label docs/example-report/ is made with (README there; the script
/// scripts/example_report.sh runs the same commands).
const EXAMPLE_EPOCH: &str = "1796083200"; // 2026-12-01T00:00:00Z
const EXAMPLE_LABEL: &str = "example-report";

/// The committed example report (#16): humans and the seven released models from the upstream
/// files, the ceiling, nulls and every model's metrics with intervals, regenerated byte for
/// byte from the fixed seed (16) and resamples (1,000). `EMOTIONBENCH_BLESS=1` rewrites the
/// files instead of comparing (after an intended change of the report).
fn the_committed_example_report_regenerates_byte_for_byte(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_upstream_panas(&db);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/example-report");
    let bless = std::env::var("EMOTIONBENCH_BLESS").is_ok_and(|v| v == "1");
    for (format, file) in [("md", "report.md"), ("html", "report.html")] {
        let made = report(
            &db,
            &[
                "--format",
                format,
                "--seed",
                "16",
                "--resamples",
                "1000",
                "--source-date-epoch",
                EXAMPLE_EPOCH,
                "--build-label",
                EXAMPLE_LABEL,
            ],
        );
        let path = dir.join(file);
        if bless {
            std::fs::write(&path, &made).unwrap();
            continue;
        }
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if made != committed {
            let (n, (a, b)) = made
                .lines()
                .zip(committed.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .unwrap_or((0, ("(lengths differ)", "")));
            panic!(
                "{} is not what this build makes from the published data ({} bytes made, {} \
                 committed); first difference at line {}:\n  made:      {a:.300}\n  committed: \
                 {b:.300}\nIf the change is intended, regenerate it: EMOTIONBENCH_BLESS=1 \
                 cargo test --test api report::the_committed_example_report_regenerates_byte_for_byte::sqlite \
                 (or scripts/example_report.sh), and review the diff.",
                path.display(),
                made.len(),
                committed.len(),
                n + 1
            );
        }
    }
    // What the acceptance asks of it: the ceiling, the nulls and every model with intervals.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for m in PANAS_MODELS {
        assert!(md.contains(m), "{m} missing");
    }
    for needle in ["ceiling", "uniform", "shuffled", "95 %", "BLAKE2s-256"] {
        assert!(md.contains(needle), "{needle:?} missing from the example");
    }
    assert!(!md.contains("(commit "), "the example names a commit");
}

/// The acceptance path of #13 with upstream files only: doc.csv (no derived CSV),
/// questionnaires.json, crowd.xlsx, the seven PANAS result files and the eight
/// challenging-scale files; the report gives the paper's figures.
fn upstream_files_alone_import_and_reproduce_the_paper(db: TestDb) {
    let Some(data) = upstream() else { return };
    let doc = data.join("doc.csv");
    let out = ok(cli(
        &db.url,
        &["import", "situations", doc.to_str().unwrap()],
    ));
    assert!(
        out.contains("as EmotionBench doc.csv into set tested-175 (new)"),
        "{out}"
    );
    assert!(out.contains("situations: 175 (175 created"), "{out}");
    let questionnaires = data.join("questionnaires.json");
    ok(cli(
        &db.url,
        &["import", "instruments", questionnaires.to_str().unwrap()],
    ));
    let out = ok(cli(
        &db.url,
        &["import", "humans", &crowd_xlsx(), "--study", "crowd"],
    ));
    assert!(
        out.contains("participants: 1266 in the file, 1266 created"),
        "{out}"
    );
    for model in PANAS_MODELS {
        import_every_trial(&db, &results_file(model), model, "PANAS");
    }
    for (scale, ..) in CHALLENGING {
        import_every_trial(&db, &challenging_file(scale), "gpt-3.5-turbo", scale);
    }
    assert_published_figures(&db, PANAS_MODELS.len());
}

/// The humans' column and Table 2 for GPT-4 and GPT-3.5-Turbo; `models` PANAS models in all.
fn assert_published_figures(db: &TestDb, models: usize) {
    let r = json(db, &["--mode", "paper"]);
    assert_shape(&r);
    assert_eq!(r["alpha"], 0.01);
    assert_eq!(r["mode"], "paper");
    assert_eq!(r["instrument"], "PANAS");
    // Humans: paired after vs before, α = 0.01.
    let h = cohort(&r, "humans");
    assert_eq!(h["kind"], "humans");
    let o = cells(h, "overall");
    assert_eq!(
        (default_of(o[0]), default_of(o[1])),
        ((28.0, 8.9), (13.6, 5.5))
    );
    assert_eq!((change(o[0]), change(o[1])), (("down", -5.1), ("up", 10.4)));
    assert_eq!(o[0]["test"], "paired");
    assert_eq!(o[0]["df"], 1265.0);
    for (emotion, pa, na) in [
        ("Anger", -5.3, 9.9),
        ("Depression", -6.8, 10.1),
        ("Jealousy", -4.4, 6.2),
    ] {
        let c = cells(h, emotion);
        assert_eq!(
            (change(c[0]), change(c[1])),
            (("down", pa), ("up", na)),
            "{emotion}"
        );
    }
    // GPT-4 (Table 2).
    let g4 = cohort(&r, "gpt-4");
    let o = cells(g4, "overall");
    assert_eq!(
        (default_of(o[0]), default_of(o[1])),
        ((49.8, 0.8), (10.0, 0.0))
    );
    assert_eq!(
        (change(o[0]), change(o[1])),
        (("down", -27.6), ("up", 22.2))
    );
    assert_eq!(
        (o[0]["n_default"].as_u64(), o[0]["n_evoked"].as_u64()),
        (Some(50), Some(1750))
    );
    // GPT-3.5-Turbo (Table 2).
    let g3 = cohort(&r, "gpt-3.5-turbo");
    let o = cells(g3, "overall");
    assert_eq!(
        (default_of(o[0]), default_of(o[1])),
        ((39.2, 2.3), (26.3, 2.0))
    );
    assert_eq!(
        (change(o[0]), change(o[1])),
        (("down", -15.4), ("none", 0.2))
    );
    assert_eq!(change(cells(g3, "Anxiety")[1]), ("none", -0.9));
    // Alignment: one entry per model, with a summary line.
    let a = r["alignment"].as_array().unwrap();
    assert_eq!(a.len(), models);
    assert!(
        a.iter()
            .all(|x| x["summary"].as_str().unwrap().contains("factor cells"))
    );
    // The default mode (Welch, no ε) and the situation unit give a report of the same shape.
    let d = json(db, &["--unit", "situation", "--correction", "bh"]);
    assert_shape(&d);
    assert_eq!(d["mode"], "default");
    let o = cells(cohort(&d, "gpt-4"), "overall");
    assert_eq!(o[0]["n_evoked"].as_u64(), Some(175));
    assert_eq!(o[0]["test"], "welch");
    // A model that is not in the study is refused with its name.
    let out = cli(
        &db.url,
        &[
            "report", "--study", "crowd", "--models", "gpt-5", "--format", "json",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gpt-5"));
}

fn the_report_renders_as_table_2_markdown_pandas_csv_html_charts_and_the_admin_page(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    // Markdown: the Table-2 layout.
    let md = report(&db, &["--mode", "paper", "--models", "gpt-4,gpt-3.5-turbo"]);
    // Table 1 (the factor tables follow further down).
    let rows: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| "))
        .take_while(|l| l.starts_with("| "))
        .collect();
    assert_eq!(rows.len(), 12, "{md}");
    assert_eq!(
        rows[0],
        "| Emotions | humans P | humans N | gpt-4 P | gpt-4 N | gpt-3.5-turbo P | gpt-3.5-turbo N |"
    );
    assert!(rows[1].starts_with("| :---: |"));
    let labels: Vec<&str> = rows[2..]
        .iter()
        .map(|r| r.split('|').nth(1).unwrap().trim())
        .collect();
    assert_eq!(
        labels,
        [
            "Default",
            "Anger",
            "Anxiety",
            "Depression",
            "Frustration",
            "Jealousy",
            "Guilt",
            "Fear",
            "Embarrassment",
            "Overall"
        ]
    );
    assert_eq!(
        rows[2],
        "| Default | 28.0 ± 8.9 | 13.6 ± 5.5 | 49.8 ± 0.8 | 10.0 ± 0.0 | 39.2 ± 2.3 | 26.3 ± 2.0 |"
    );
    assert_eq!(
        rows[11],
        "| Overall | ↓ (-5.1) | ↑ (+10.4) | ↓ (-27.6) | ↑ (+22.2) | ↓ (-15.4) | − (+0.2) |"
    );
    // CSV: pandas reads it, one row per cohort × group × category.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("report.csv");
    report(&db, &["--format", "csv", "-o", csv.to_str().unwrap()]);
    if let Some(python) = pandas_python() {
        let out = Command::new(&python)
            .arg("-c")
            .arg(
                "import sys, pandas as pd\nd = pd.read_csv(sys.argv[1])\n\
                 o = d[(d.cohort == 'humans') & (d.level == 'overall')]\n\
                 print(d.shape[0], d.shape[1], round(float(o.delta.iloc[0]), 1), o.p.dtype)",
            )
            .arg(&csv)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // 3 cohorts × (1 + 8 + 36 groups) × 2 categories; 27 columns, the 5 of the
        // psychometrics (α, ω per measure; ICC(1)) and the language of the split by language
        // (#20; a study in one language has none); p parsed as numbers.
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "270 33 -5.1 float64"
        );
    }
    // HTML: a self-contained page with SVG charts.
    let html_file = dir.path().join("report.html");
    report(
        &db,
        &["--format", "html", "-o", html_file.to_str().unwrap()],
    );
    let html = std::fs::read_to_string(&html_file).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        3,
        "two bar charts and a scatter"
    );
    assert!(html.contains("<style>") && !html.contains("href=\"/assets"));
    assert!(html.contains("Δ Positive Affect per emotion"));
    // The admin page for a researcher: same table, inline SVG without style attributes.
    let app = spawn_app(db);
    let researcher = signed_in(&app, users::Role::Researcher);
    let page =
        researcher.get("/admin/studies/crowd/report?mode=paper&alpha=0.01&unit=trial&models=all");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<svg"));
    assert!(
        !page.body.contains(" style=\""),
        "the CSP forbids inline styles"
    );
    assert!(page.body.contains("↑ (+22.2)"));
    assert!(page.body.contains("39.2 ± 2.3"));
    let monitor = researcher.get("/admin/studies/crowd");
    assert!(monitor.body.contains("/admin/studies/crowd/report"));
    let bad = researcher.get("/admin/studies/crowd/report?alpha=2");
    assert_eq!(bad.status, 400);
    // The form's other fields: empty ones are the defaults; bad ones say why.
    let same = researcher.get("/admin/studies/crowd/report?runs=&instrument=PANAS&split=all");
    assert_eq!(same.status, 200, "{}", same.body);
    assert!(same.body.contains("Humans: all completed participants."));
    assert!(same.body.contains("Scoring: PANAS is scored as"));
    let bad = researcher.get("/admin/studies/crowd/report?runs=x");
    assert_eq!(bad.status, 400);
    let bad = researcher.get("/admin/studies/crowd/report?split=test");
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("emotionbench split"), "{}", bad.body);
    let none = researcher.get("/admin/studies/nope/report");
    assert_eq!(none.status, 404);
}

/// The paper's appendix with the statistics: a numbered factor table per cohort, a row per
/// factor × category with n, both means ± SD, Δ, t, df, p, the adjusted p (a correction is on)
/// and the effect size, the same numbers as the JSON's factor-level groups.
fn the_factor_table_gives_every_factor_its_statistics_in_markdown_html_and_json(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    let args = ["--models", "gpt-4", "--correction", "bh"];
    let r = json(&db, &args);
    let md = report(&db, &args);
    let caption = "Table 2. Factor table of humans: per factor and category, paired t-test; \
                   effect size d\\_z; α = 0.01, p adjusted (bh).";
    let start = md.find(caption).unwrap_or_else(|| panic!("{md}"));
    let table: Vec<&str> = md[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .collect();
    assert_eq!(
        table[0],
        "| Factor | Emotion | Category | n default | n evoked | Default mean ± SD | \
         Evoked mean ± SD | Δ | t | df | p | p adjusted | Effect size | Change |"
    );
    // 36 factors × 2 categories after the header and the alignment row.
    assert_eq!(table.len(), 2 + 72, "{md}");
    let humans = cohort(&r, "humans");
    let factors: Vec<&Value> = humans["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["level"] == "factor")
        .collect();
    assert_eq!(factors.len(), 36);
    // The methods block counts the same humans, and the imported runs as imported.
    let p = &r["provenance"];
    assert_eq!(p["humans"]["included"], humans["observations"], "{p}");
    assert_eq!(p["humans"]["included"], 1266);
    assert_eq!(p["cohorts"][0]["source"], "imported results", "{p}");
    assert_eq!(p["cohorts"][0]["runs"][0]["trials_done"], 1800, "{p}");
    assert!(p["cohorts"][0]["runs"][0]["temperature"].is_null());
    assert!(
        md.contains("- Humans: 1266 included; excluded: none."),
        "{md}"
    );
    // Every row is its JSON cell, formatted.
    for (row, (g, x)) in table[2..].iter().zip(factors.iter().flat_map(|g| {
        g["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(move |x| (*g, x))
    })) {
        let f = |k: &str, d: usize| format!("{:.d$}", x[k].as_f64().unwrap());
        let p = |k: &str| {
            let p = x[k].as_f64().unwrap();
            if p < 0.001 {
                "&lt; 0.001".to_owned()
            } else {
                format!("{p:.3}")
            }
        };
        let expected = format!(
            "| {} | {} | {} | {} | {} | {} ± {} | {} ± {} | ",
            emotionbench::export::report::md(g["factor"].as_str().unwrap()),
            g["emotion"].as_str().unwrap(),
            x["name"].as_str().unwrap(),
            x["n_default"],
            x["n_evoked"],
            f("default_mean", 1),
            f("default_sd", 1),
            f("evoked_mean", 1),
            f("evoked_sd", 1),
        );
        assert!(row.starts_with(&expected), "{row}\n{expected}");
        let tail = format!(
            " | {} | {} | {} | {} | {} | ",
            f("t", 2),
            f("df", 1),
            p("p"),
            p("p_adjusted"),
            f("effect_size", 2)
        );
        assert!(row.contains(&tail), "{row}\n{tail}");
    }
    // The first humans' row, as scipy.stats.ttest_rel gives it (tools/stats_reference.py,
    // published_factor_row) for the 35 participants of
    // "Facing Self-Opinioned People" (Positive Affect): t = -1.29, df = 34, p = 0.205.
    assert!(
        table[2].contains("| 35 | 35 | 26.6 ± 9.0 | 24.5 ± 7.8 | -2.2 | -1.29 | 34.0 | 0.205 |"),
        "{}",
        table[2]
    );
    // The model's table follows, numbered; the JSON has its factor rows too.
    assert!(md.contains("Table 3. Factor table of gpt-4: per factor and category, two-sample"));
    assert_eq!(
        cohort(&r, "gpt-4")["groups"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["level"] == "factor" && g["categories"][0]["p_adjusted"].is_f64())
            .count(),
        36
    );
    // HTML: the same tables with their captions, each in a focusable scrolling region.
    let html = report(
        &db,
        &[
            "--models",
            "gpt-4",
            "--correction",
            "bh",
            "--format",
            "html",
        ],
    );
    // Each caption is shown above its scrolling region (so a phone wraps it to the screen)
    // and kept inside its table for assistive technology.
    for caption in [
        "Table 1. Change per emotion and category",
        "Table 2. Factor table of humans",
        "Table 3. Factor table of gpt-4",
    ] {
        assert!(
            html.contains(&format!(
                "<p class=\"table-caption\" aria-hidden=\"true\">{caption}"
            )),
            "{caption}"
        );
        assert!(
            html.contains(&format!("<caption class=\"visually-hidden\">{caption}")),
            "{caption}"
        );
    }
    // The three, the psychometrics block's reliability and test–retest tables, and the
    // alignment's.
    assert_eq!(
        html.matches("<div class=\"table-scroll\" tabindex=\"0\" role=\"region\"")
            .count(),
        5 + 2,
        "Tables 1-3, the psychometrics' two, and the alignment's Table A1 and A2 (one model)"
    );
    assert!(html.contains("<th scope=\"row\">Facing Self-Opinioned People</th>"));
}

/// The report page: select lists of the study's own models, instruments and splits; each chart
/// downloadable as SVG from a route with the same query; a typo'd model or a bad α answered
/// inside the admin layout (the form kept, to correct it) with 400, an unknown run with 404.
fn the_admin_report_page_offers_choices_downloads_svg_and_keeps_errors_in_its_layout(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    let app = spawn_app(db);
    let researcher = signed_in(&app, users::Role::Researcher);
    // Two models chosen in the multiple select list: the query repeats the key.
    let page = researcher
        .get("/admin/studies/crowd/report?mode=paper&models=gpt-4&models=gpt-3.5-turbo&alpha=0.01");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("<option value=\"gpt-4\" selected>gpt-4</option>"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<option value=\"gpt-3.5-turbo\" selected>")
    );
    assert!(page.body.contains(
        "<select id=\"r-instrument\" name=\"instrument\"><option value=\"PANAS\" selected>"
    ));
    assert!(page.body.contains("<label for=\"r-models\">"));
    assert!(
        !page.body.contains("<input name=\"models\""),
        "models are chosen, not typed"
    );
    assert!(
        page.body
            .contains("<figcaption>Figure 1. Δ Positive Affect")
    );
    assert!(page.body.contains("<figcaption>Figure 3. Each model"));
    // The download link repeats the query; the route returns the same chart as SVG.
    let link = "/admin/studies/crowd/report/export/bars-1.svg?mode=paper&#38;models=gpt-4&#38;\
                models=gpt-3.5-turbo&#38;alpha=0.01";
    assert!(page.body.contains(link), "{}", page.body);
    let svg = researcher.get(&link.replace("&#38;", "&"));
    assert_eq!(svg.status, 200, "{}", svg.body);
    assert_eq!(
        svg.header("content-type"),
        Some("image/svg+xml; charset=utf-8")
    );
    assert!(svg.body.starts_with("<svg") && svg.body.trim_end().ends_with("</svg>"));
    assert!(svg.body.contains("Δ Negative Affect per emotion"));
    assert!(svg.body.contains("<g class=\"legend\">"));
    assert!(svg.body.contains(">gpt-3.5-turbo</text>"));
    // The text is drawn at 13 px or more (plotters' own sizes and the legend's).
    for size in svg.body.split("font-size=\"").skip(1) {
        let px: f64 = size.split('"').next().unwrap().parse().unwrap();
        assert!(px >= 12.0, "font-size {px}");
    }
    let scatter = researcher.get("/admin/studies/crowd/report/export/scatter.svg?models=gpt-4");
    assert_eq!(scatter.status, 200);
    assert!(scatter.body.contains("gpt-4 (fit y = "), "{}", scatter.body);
    assert!(scatter.body.contains(">y = x</text>"));
    assert_eq!(
        researcher
            .get("/admin/studies/crowd/report/export/pie.svg")
            .status,
        404
    );
    // A typo'd model: the admin layout, the form, the message, 400.
    let typo = researcher.get("/admin/studies/crowd/report?models=gpt-44");
    assert_eq!(typo.status, 400, "{}", typo.body);
    assert!(
        typo.body.contains("<header class=\"site\">"),
        "{}",
        typo.body
    );
    assert!(typo.body.contains("class=\"report-options\""));
    assert!(typo.body.contains("role=\"alert\""));
    assert!(typo.body.contains("gpt-44"), "{}", typo.body);
    assert!(!typo.body.contains("<svg"));
    let alpha = researcher.get("/admin/studies/crowd/report?alpha=1.5");
    assert_eq!(alpha.status, 400);
    assert!(alpha.body.contains("<header class=\"site\">") && alpha.body.contains("α must be"));
    assert!(
        alpha.body.contains("value=\"1.5\""),
        "the wrong value stays to correct it"
    );
    let run = researcher.get("/admin/studies/crowd/report?runs=999");
    assert_eq!(run.status, 404, "{}", run.body);
    assert!(run.body.contains("<header class=\"site\">"));
}

/// A model without Fear trials: its Fear bars are the hatched "n/a" boxes, never a bar of zero,
/// and its Fear cells in the tables say n/a.
fn missing_data_is_drawn_as_missing_never_as_a_zero_bar(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    // The released gpt-4 answers without any Fear column.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-fear.csv");
    let mut r = csv::Reader::from_path(results_file("gpt-4")).unwrap();
    let header = r.headers().unwrap().clone();
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| !header[i].starts_with("Fear-"))
        .collect();
    assert!(keep.len() < header.len());
    let mut w = csv::Writer::from_path(&file).unwrap();
    w.write_record(keep.iter().map(|&i| &header[i])).unwrap();
    for row in r.records() {
        let row = row.unwrap();
        w.write_record(keep.iter().map(|&i| &row[i])).unwrap();
    }
    w.flush().unwrap();
    ok(cli(
        &db.url,
        &[
            "import",
            "model-results",
            file.to_str().unwrap(),
            "--study",
            "crowd",
            "--model",
            "gpt-4-no-fear",
        ],
    ));
    let md = report(&db, &["--models", "gpt-4-no-fear"]);
    let fear = md.lines().find(|l| l.starts_with("| Fear |")).unwrap();
    assert!(fear.ends_with("| n/a | n/a |"), "{fear}");
    let html = report(&db, &["--models", "gpt-4-no-fear", "--format", "html"]);
    let bars = &html[html.find("<svg").unwrap()..html.find("</svg>").unwrap()];
    // One hatched box with its label for the model's Fear (the legend says what it means).
    assert_eq!(bars.matches("\nn/a\n</text>").count(), 1, "{bars}");
    assert!(bars.contains(">n/a: no data</text>"));
    // The humans' Fear bar, with its CI, is still drawn; the model's 7 other emotions too:
    // 8 + 7 filled bars in the model's and the humans' colours.
    let filled = bars.matches("<rect").count();
    assert!(filled >= 15, "{filled}");
}

/// #16 point 3 on the published humans and two models: every alignment metric with its
/// bootstrap interval, the human ceiling and the null baselines with the same metrics,
/// reproducible by seed; the Markdown shows them as tables.
fn the_alignment_has_intervals_a_human_ceiling_and_null_baselines(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_published(&db);
    let args = ["--mode", "paper", "--resamples", "200", "--seed", "5"];
    let r = json(&db, &args);
    assert_shape(&r);
    assert_eq!(r["alignment_method"]["seed"], 5);
    assert_eq!(r["alignment_method"]["resamples"], 200);
    let a = r["alignment"].as_array().unwrap();
    assert_eq!(a.len(), 2);
    let gpt4 = a.iter().find(|x| x["model"] == "gpt-4").unwrap();
    for k in METRICS {
        let m = &gpt4[k];
        let (v, l, h) = (
            m["value"].as_f64(),
            m["ci_low"].as_f64(),
            m["ci_high"].as_f64(),
        );
        if k == "direction_agreement" && v.is_none() {
            continue;
        }
        let (v, l, h) = (v.unwrap(), l.unwrap(), h.unwrap());
        // A percentile interval need not contain the estimate, but here it is not far off.
        assert!(l <= h && l - 0.5 <= v && v <= h + 0.5, "{k}: {m}");
    }
    // 1,266 humans: two random halves agree closely on the change per factor; the distances
    // lie on their scales (W1 in points, JS within [0, 1]).
    let c = &r["ceiling"];
    assert_eq!(c["splits"], 200);
    let ceiling_r = c["delta_correlation"]["value"].as_f64().unwrap();
    assert!(ceiling_r > 0.5, "{c}");
    let js = gpt4["jensen_shannon"]["value"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&js));
    assert!(gpt4["wasserstein"]["value"].as_f64().unwrap() > 0.0);
    // 36 factors × 2 categories of distances.
    assert_eq!(gpt4["distances"].as_array().unwrap().len(), 72);
    // Baselines: the uniform responder, the population marginal, and each model shuffled.
    let kinds: Vec<&str> = r["baselines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["uniform", "marginal", "shuffled", "shuffled"]);
    let uniform = &r["baselines"][0];
    assert!(
        uniform["evoked_mae"]["value"].as_f64().unwrap()
            > gpt4["evoked_mae"]["value"].as_f64().unwrap() / 10.0
    );
    // Honest summaries: the count of significant cells is in the sentence.
    let summary = gpt4["summary"].as_str().unwrap();
    assert!(summary.contains("factor cells where the humans or the model change significantly"));
    assert!(summary.contains("human ceiling r = "), "{summary}");
    assert!(!summary.contains("  "), "{summary}");
    // Same seed: the same alignment, byte for byte; another seed: other intervals, same values.
    let again = json(&db, &args);
    assert_eq!(again["alignment"], r["alignment"]);
    assert_eq!(again["ceiling"], r["ceiling"]);
    assert_eq!(again["baselines"], r["baselines"]);
    let other = json(
        &db,
        &["--mode", "paper", "--resamples", "200", "--seed", "6"],
    );
    let other4 = &other["alignment"][0];
    let same4 = &r["alignment"][0];
    assert_eq!(other4["evoked_mae"]["value"], same4["evoked_mae"]["value"]);
    assert_ne!(
        other4["evoked_mae"]["ci_low"],
        same4["evoked_mae"]["ci_low"]
    );
    // No resamples: values without intervals and no ceiling.
    let none = json(&db, &["--mode", "paper", "--resamples", "0"]);
    assert!(none["alignment"][0]["evoked_mae"]["ci_low"].is_null());
    assert!(none["ceiling"].is_null());
    // Markdown and HTML: the alignment tables, the ceiling and the baselines beside each model.
    let md = report(&db, &["--mode", "paper", "--resamples", "200"]);
    assert!(md.contains("Human ceiling"), "{md}");
    assert!(md.contains("Uniform responder"));
    assert!(md.contains("Shuffled situation labels"));
    assert!(md.contains("Bootstrap: 200 resamples, seed 16"), "{md}");
    let html = report(
        &db,
        &["--mode", "paper", "--resamples", "200", "--format", "html"],
    );
    assert!(html.contains("Human ceiling") && html.contains("Population marginal"));
    // The alignment CSV: one row per cohort × scope × metric, read by pandas.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("alignment.csv");
    report(
        &db,
        &[
            "--mode",
            "paper",
            "--resamples",
            "200",
            "--format",
            "alignment-csv",
            "-o",
            csv.to_str().unwrap(),
        ],
    );
    if let Some(python) = pandas_python() {
        let out = Command::new(&python)
            .arg("-c")
            .arg(
                "import sys, pandas as pd\nd = pd.read_csv(sys.argv[1])\n\
                 g = d[(d.cohort == 'gpt-4') & (d.scope == 'overall') & (d.metric == 'evoked_mae')]\n\
                 print(sorted(set(d.kind)), len(g), bool((g.ci_low <= g.ci_high).all()))",
            )
            .arg(&csv)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "['baseline', 'ceiling', 'model'] 1 True"
        );
    }
}

on_both_backends!(
    the_committed_example_report_regenerates_byte_for_byte,
    the_alignment_has_intervals_a_human_ceiling_and_null_baselines,
    missing_data_is_drawn_as_missing_never_as_a_zero_bar,
    the_admin_report_page_offers_choices_downloads_svg_and_keeps_errors_in_its_layout,
    the_factor_table_gives_every_factor_its_statistics_in_markdown_html_and_json,
    upstream_files_alone_import_and_reproduce_the_paper,
    the_published_data_reproduces_the_humans_and_table_2_of_the_paper,
    the_report_renders_as_table_2_markdown_pandas_csv_html_charts_and_the_admin_page,
);
