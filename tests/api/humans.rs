//! `emotionbench import humans …` with the published data, on SQLite and Postgres.

use std::collections::BTreeMap;

use diesel::prelude::*;
use emotionbench::store::db;
use emotionbench::store::schema::{participants, responses, situations, studies};

use crate::helpers::{TestDb, cli, ok, stderr, upstream};
use crate::on_both_backends;

/// One imported participant as stored: situation key, status, demographics, answers.
type Row = (i64, Option<String>, String, String, bool, Option<String>);
type Stored = (
    String,
    String,
    bool,
    Option<String>,
    Vec<(String, i32, i32)>,
);

/// The cohort of a study by `source_ref`.
pub fn cohort(db: &TestDb, study: &str) -> BTreeMap<String, Stored> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let rows: Vec<Row> = participants::table
        .inner_join(studies::table)
        .inner_join(situations::table)
        .filter(studies::slug.eq(study))
        .select((
            participants::id,
            participants::source_ref,
            situations::key,
            participants::status,
            participants::imported,
            participants::demographics,
        ))
        .load(&mut conn)
        .unwrap();
    let mut answers: BTreeMap<i64, Vec<(String, i32, i32)>> = BTreeMap::new();
    let all: Vec<(i64, String, i32, i32)> = responses::table
        .inner_join(participants::table.inner_join(studies::table))
        .filter(studies::slug.eq(study))
        .order((
            responses::participant_id,
            responses::phase,
            responses::item_number,
        ))
        .select((
            responses::participant_id,
            responses::phase,
            responses::item_number,
            responses::value,
        ))
        .load(&mut conn)
        .unwrap();
    for (p, ph, i, v) in all {
        answers.entry(p).or_default().push((ph, i, v));
    }
    rows.into_iter()
        .map(|(id, r, key, status, imported, demo)| {
            (
                r.unwrap(),
                (
                    key,
                    status,
                    imported,
                    demo,
                    answers.remove(&id).unwrap_or_default(),
                ),
            )
        })
        .collect()
}

pub fn import_tested_175(db: &TestDb) {
    let data = upstream().unwrap();
    let f = data.join("derived/test_situations_175.csv");
    ok(cli(
        &db.url,
        &[
            "import",
            "situations",
            f.to_str().unwrap(),
            "--set",
            "tested-175",
        ],
    ));
}

pub fn crowd_xlsx() -> String {
    let data = upstream().unwrap();
    data.join("results/PANAS Test/crowd.xlsx")
        .to_str()
        .unwrap()
        .to_owned()
}

pub fn human_csv() -> String {
    let data = upstream().unwrap();
    data.join("derived/human_responses.csv")
        .to_str()
        .unwrap()
        .to_owned()
}

fn crowd_xlsx_and_the_derived_csv_import_as_identical_cohorts(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_tested_175(&db);
    let out = ok(cli(
        &db.url,
        &["import", "humans", &crowd_xlsx(), "--study", "crowd-xlsx"],
    ));
    assert!(out.contains("(new, closed)"), "{out}");
    assert!(
        out.contains("participants: 1266 in the file, 1266 created, 0 already present"),
        "{out}"
    );
    ok(cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd-csv"],
    ));
    let a = cohort(&db, "crowd-xlsx");
    let b = cohort(&db, "crowd-csv");
    assert_eq!(a.len(), 1266);
    assert!(a.values().all(|p| p.4.len() == 40), "40 answers each");
    assert!(
        a.values().all(|p| p.1 == "completed" && p.2),
        "completed, imported"
    );
    assert_eq!(a, b);
    let first = &a["crowd-1"];
    assert_eq!(first.0, "Anger-0_scenario-0");
    assert!(
        first
            .3
            .as_deref()
            .unwrap()
            .contains("\"year_of_birth\":\"1995\"")
    );
    // Before = default, after = evoked: participant 1 felt Hostile 3 before and 4 after.
    assert!(first.4.contains(&("default".into(), 8, 3)));
    assert!(first.4.contains(&("evoked".into(), 8, 4)));

    // Idempotent: importing either file again creates nobody.
    let out = ok(cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd-xlsx"],
    ));
    assert!(out.contains("0 created, 1266 already present"), "{out}");
    assert_eq!(cohort(&db, "crowd-xlsx"), a);
}

fn importing_humans_without_the_situations_fails_clearly_and_stores_nothing(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    let o = cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no situation set \"tested-175\""),
        "{}",
        stderr(&o)
    );
    // A bad row names its line and column, and nothing is kept.
    import_tested_175(&db);
    let text = std::fs::read_to_string(human_csv()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[3] = lines[3].replacen(",United Kingdom,", ",United Kingdom,,", 1);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, lines.join("\n")).unwrap();
    let o = cli(
        &db.url,
        &[
            "import",
            "humans",
            bad.to_str().unwrap(),
            "--study",
            "crowd",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("line 4"), "{}", stderr(&o));
    assert!(cohort(&db, "crowd").is_empty());
}

on_both_backends!(
    crowd_xlsx_and_the_derived_csv_import_as_identical_cohorts,
    importing_humans_without_the_situations_fails_clearly_and_stores_nothing,
);
