//! `emotionbench import model-results …` with the seven released PANAS answer files.

use diesel::prelude::*;
use emotionbench::store::db;
use emotionbench::store::schema::{model_runs, model_trials};

use crate::helpers::{TestDb, cli, ok, stderr, upstream};
use crate::humans::{human_csv, import_tested_175};
use crate::on_both_backends;

pub const MODELS: [&str; 7] = [
    "davinci-003",
    "gpt-3.5-turbo",
    "gpt-4",
    "llama2-7b",
    "llama2-13b",
    "llama3.1-8b",
    "mixtral-8x22b",
];

pub fn results_file(model: &str) -> String {
    upstream()
        .unwrap()
        .join(format!("results/PANAS Test/{model}-PANAS-testing.csv"))
        .to_str()
        .unwrap()
        .to_owned()
}

/// (measure, status) -> count for the imported run of `model`.
fn counts(db: &TestDb, model: &str) -> Vec<(String, String, i64)> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let run: i64 = model_runs::table
        .filter(model_runs::model.eq(model))
        .filter(model_runs::source.eq("import"))
        .select(model_runs::id)
        .first(&mut conn)
        .unwrap();
    emotionbench::store::model_runs::trial_counts(&mut conn, run).unwrap()
}

fn the_seven_released_answer_files_import_with_failed_parses_kept(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_tested_175(&db);
    ok(cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd"],
    ));
    for model in MODELS {
        let out = ok(cli(
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
        assert!(
            out.contains("default trials: 50 parsed, 0 failed"),
            "{model}: {out}"
        );
        let c = counts(&db, model);
        assert!(
            c.contains(&("default".into(), "done".into(), 50)),
            "{model}: {c:?}"
        );
        let evoked: i64 = c.iter().filter(|r| r.0 == "evoked").map(|r| r.2).sum();
        // llama2-7b lacks 13 Jealousy columns; the others have 175 situations x 10.
        let expected = if model == "llama2-7b" { 1737 } else { 1750 };
        assert_eq!(evoked, expected, "{model}: {c:?}");
    }
    assert_eq!(
        counts(&db, "llama3.1-8b"),
        vec![
            ("default".into(), "done".into(), 50),
            ("evoked".into(), "done".into(), 1690),
            ("evoked".into(), "failed".into(), 60),
        ]
    );
    // Failed trials keep their reason.
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let classes: Vec<Option<String>> = model_trials::table
        .filter(model_trials::status.eq("failed"))
        .select(model_trials::error_class)
        .load(&mut conn)
        .unwrap();
    assert_eq!(classes.len(), 60);
    assert!(classes.iter().all(|c| c.as_deref() == Some("parse")));
    drop(conn);

    // Importing again replaces the import: still one run, same counts.
    let out = ok(cli(
        &db.url,
        &[
            "import",
            "model-results",
            &results_file("llama3.1-8b"),
            "--study",
            "crowd",
            "--model",
            "llama3.1-8b",
        ],
    ));
    assert!(out.contains("replacing the earlier import"), "{out}");
    assert!(
        out.contains("evoked trials:  1690 parsed, 60 failed"),
        "{out}"
    );
    let mut conn = pool.get().unwrap();
    let runs: i64 = model_runs::table.count().get_result(&mut conn).unwrap();
    assert_eq!(runs, 7);

    // An unknown study is a clear error.
    let o = cli(
        &db.url,
        &[
            "import",
            "model-results",
            &results_file("gpt-4"),
            "--study",
            "nope",
            "--model",
            "gpt-4",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no study \"nope\""), "{}", stderr(&o));
}

on_both_backends!(the_seven_released_answer_files_import_with_failed_parses_kept);
