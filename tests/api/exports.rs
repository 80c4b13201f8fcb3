//! `emotionbench export long|wide|codebook` on SQLite and Postgres: the imported human cohort
//! reproduces the published sums; a generated 10,000-participant study reads back in pandas.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use crate::helpers::{TestDb, cli, missing, ok, upstream};
use crate::humans::{human_csv, import_tested_175};
use crate::on_both_backends;

fn read_csv(path: &std::path::Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (header, rows)
}

fn the_wide_export_of_the_imported_cohort_reproduces_the_published_sums(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_tested_175(&db);
    ok(cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd"],
    ));
    let dir = tempfile::tempdir().unwrap();
    let wide = dir.path().join("wide.csv");
    ok(cli(
        &db.url,
        &[
            "export",
            "wide",
            "--study",
            "crowd",
            "-o",
            wide.to_str().unwrap(),
        ],
    ));
    let (header, rows) = read_csv(&wide);
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut exported: HashMap<String, Vec<String>> = HashMap::new();
    for row in &rows {
        let source = row[at("source_ref")].clone();
        let n = source.strip_prefix("crowd-").unwrap().to_owned();
        exported.insert(
            n,
            [
                "positive_affect_before",
                "negative_affect_before",
                "positive_affect_after",
                "negative_affect_after",
            ]
            .iter()
            .map(|c| row[at(c)].clone())
            .collect(),
        );
    }
    let (ph, published) = read_csv(&PathBuf::from(human_csv()));
    let pat = |name: &str| ph.iter().position(|h| h == name).unwrap();
    assert_eq!(published.len(), 1266);
    assert_eq!(exported.len(), 1266);
    for row in &published {
        let want: Vec<String> = ["pa_before", "na_before", "pa_after", "na_after"]
            .iter()
            .map(|c| row[pat(c)].clone())
            .collect();
        assert_eq!(
            exported[&row[pat("participant")]],
            want,
            "participant {}",
            row[pat("participant")]
        );
    }
    // The diff column is after - before, and the situation and demographics came through.
    let first = rows
        .iter()
        .find(|r| r[at("source_ref")] == "crowd-1")
        .unwrap();
    assert_eq!(first[at("positive_affect_diff")], "-2");
    assert_eq!(first[at("situation_key")], "Anger-0_scenario-0");
    assert_eq!(first[at("education")], "University - Masters");
    assert_eq!(first[at("imported")], "true");
}

/// The venv's python with pandas (EMOTIONBENCH_PYTHON or ./.venv-tools/bin/python).
pub fn pandas_python() -> Option<PathBuf> {
    let python = std::env::var_os("EMOTIONBENCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv-tools/bin/python")
        });
    let works = Command::new(&python)
        .args(["-c", "import pandas"])
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        Some(python)
    } else {
        missing(&format!("pandas (python at {})", python.display()));
        None
    }
}

fn a_10000_participant_study_streams_csv_that_pandas_reads_back(db: TestDb) {
    let Some(python) = pandas_python() else {
        return;
    };
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    let study = emotionbench::app::demo::generate_study(&mut conn, "big", 10_000, 7).unwrap();
    let (long_cols, wide_cols) = emotionbench::export::column_counts(&mut conn, study).unwrap();
    drop(conn);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for what in ["long", "wide", "codebook"] {
        let f = dir.path().join(format!("{what}.csv"));
        ok(cli(
            &db.url,
            &["export", what, "--study", "big", "-o", f.to_str().unwrap()],
        ));
        files.push(f);
    }
    let script = "import sys, pandas as pd\n\
        for f in sys.argv[1:]:\n    d = pd.read_csv(f)\n    print(d.shape[0], d.shape[1])\n";
    let out = Command::new(&python)
        .arg("-c")
        .arg(script)
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shapes: Vec<(usize, usize)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert_eq!(shapes[0], (400_000, long_cols));
    assert_eq!(shapes[1], (10_000, wide_cols));
    assert_eq!(shapes[2], (long_cols + wide_cols, 6));
    // identity 10 (with the language the pages were shown in), times 2, demographics 5,
    // situation 4, items 40, PA/NA scores 6, quality 5, evidence 12 (six more flags, the speed
    // index, model-likeness and its model, the reasons, excluded and by what), free text 2
    // (the prompt and the answer, #18).
    assert_eq!(wide_cols, 86);
    assert_eq!(long_cols, 21);
}

on_both_backends!(
    the_wide_export_of_the_imported_cohort_reproduces_the_published_sums,
    a_10000_participant_study_streams_csv_that_pandas_reads_back,
);
