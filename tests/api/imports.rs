//! `emotionbench import …` against the real upstream files, on SQLite and Postgres.

use std::collections::HashSet;

use crate::helpers::{TestDb, cli, ok, stderr, upstream};
use crate::on_both_backends;
use emotionbench::store::{db, instruments, situations};

fn set_counts(db: &TestDb, set: &str) -> (i64, i64, i64) {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let s = situations::sets(&mut conn)
        .unwrap()
        .into_iter()
        .find(|s| s.name == set)
        .unwrap_or_else(|| panic!("no set {set}"));
    (s.emotions, s.factors, s.situations)
}

fn the_428_situations_import_from_json_and_csv_identically(db: TestDb) {
    let Some(data) = upstream() else { return };
    let json = data.join("situations.json");
    let out = ok(cli(
        &db.url,
        &["import", "situations", json.to_str().unwrap()],
    ));
    assert!(out.contains("emotions:   8"), "{out}");
    assert!(out.contains("factors:    36 (36 created"), "{out}");
    assert!(
        out.contains("situations: 428 (428 created, 0 updated, 0 unchanged)"),
        "{out}"
    );
    assert_eq!(set_counts(&db, "situations"), (8, 36, 428));
    let after_json = db.snapshot();

    // The three duplicated texts stay distinct situations under their own factors.
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let set = situations::find_set(&mut conn, "situations")
        .unwrap()
        .unwrap();
    let list = situations::list(&mut conn, set).unwrap();
    let texts: HashSet<&str> = list.iter().map(|s| s.situation.text.as_str()).collect();
    assert_eq!(list.len(), 428);
    assert_eq!(texts.len(), 425);
    assert_eq!(list[0].situation.key, "Anger-0_scenario-0");
    drop(conn);

    // Re-import: idempotent.
    let out = ok(cli(
        &db.url,
        &["import", "situations", json.to_str().unwrap()],
    ));
    assert!(
        out.contains("situations: 428 (0 created, 0 updated, 428 unchanged)"),
        "{out}"
    );

    // The wide CSV is the same set, identical to the last byte.
    let csv = data.join("situations/situations.csv");
    let out = ok(cli(
        &db.url,
        &["import", "situations", csv.to_str().unwrap()],
    ));
    assert!(out.contains("wide"), "format detected from content: {out}");
    assert!(
        out.contains("situations: 428 (0 created, 0 updated, 428 unchanged)"),
        "{out}"
    );
    // Only the set's record of its last source file may differ.
    crate::helpers::assert_same(
        &db.snapshot()
            .replace("source: \"situations.csv\"", "source: \"situations.json\""),
        &after_json,
    );

    // The wide CSV into its own set gives the same situations.
    ok(cli(
        &db.url,
        &[
            "import",
            "situations",
            csv.to_str().unwrap(),
            "--set",
            "from-csv",
        ],
    ));
    assert_eq!(set_counts(&db, "from-csv"), (8, 36, 428));
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let set_a = situations::find_set(&mut conn, "situations")
        .unwrap()
        .unwrap();
    let set_b = situations::find_set(&mut conn, "from-csv")
        .unwrap()
        .unwrap();
    let a = situations::list(&mut conn, set_a).unwrap();
    let b = situations::list(&mut conn, set_b).unwrap();
    let strip = |v: Vec<situations::StoredSituation>| {
        v.into_iter().map(|s| s.situation).collect::<Vec<_>>()
    };
    assert_eq!(strip(a), strip(b));
}

fn the_175_tested_situations_import_as_their_own_set(db: TestDb) {
    let Some(data) = upstream() else { return };
    let f = data.join("derived/test_situations_175.csv");
    let out = ok(cli(
        &db.url,
        &[
            "import",
            "situations",
            f.to_str().unwrap(),
            "--set",
            "tested-175",
        ],
    ));
    assert!(out.contains("situations: 175 (175 created"), "{out}");
    assert_eq!(set_counts(&db, "tested-175"), (8, 36, 175));
    let listed = ok(cli(&db.url, &["situations", "list", "--set", "tested-175"]));
    assert_eq!(listed.lines().count(), 176, "header + 175 rows");
    // The first row as the file has it (its factor name is upstream text: read, not written here).
    let mut r = csv::Reader::from_path(&f).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let first = r.records().next().unwrap().unwrap();
    let expected = format!(
        "Anger-0_scenario-0\tAnger\t0\t{}\t",
        first.get(col("factor_name")).unwrap()
    );
    assert!(
        listed.lines().nth(1).unwrap().starts_with(&expected),
        "{listed}"
    );
    let sets = ok(cli(&db.url, &["situations", "list"]));
    assert!(sets.contains("tested-175"), "{sets}");
}

fn questionnaires_json_gives_nine_instruments(db: TestDb) {
    let Some(data) = upstream() else { return };
    let f = data.join("questionnaires.json");
    let out = ok(cli(
        &db.url,
        &["import", "instruments", f.to_str().unwrap()],
    ));
    // PANAS is built in: importing replaces our wording of the prompt with upstream's.
    assert!(out.contains("imported 9 instruments"), "{out}");
    assert!(out.contains("8 created, 1 updated, 0 unchanged"), "{out}");
    let again = ok(cli(
        &db.url,
        &["import", "instruments", f.to_str().unwrap()],
    ));
    assert!(
        again.contains("0 created, 0 updated, 9 unchanged"),
        "{again}"
    );
    let listed = ok(cli(&db.url, &["instruments", "list"]));
    assert_eq!(listed.lines().count(), 10, "{listed}");

    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let (_, panas) = instruments::load(&mut conn, "PANAS").unwrap().unwrap();
    assert_eq!(panas.items.len(), 20);
    assert_eq!(panas.categories[0].name, "Positive Affect");
    assert_eq!(
        panas.categories[0].items,
        vec![1, 3, 5, 9, 10, 12, 14, 16, 17, 19]
    );
    assert_eq!(panas.categories[1].name, "Negative Affect");
    assert_eq!(
        panas.categories[1].items,
        vec![2, 4, 6, 7, 8, 11, 13, 15, 18, 20]
    );
    let mut reversed = |key: &str| -> Vec<u32> {
        let (_, i) = instruments::load(&mut conn, key).unwrap().unwrap();
        i.items
            .iter()
            .filter(|x| x.reverse)
            .map(|x| x.number)
            .collect()
    };
    assert_eq!(reversed("AGQ"), vec![7, 18]);
    assert_eq!(reversed("BFNE"), vec![2, 4, 7, 10]);
    let (_, bdi) = instruments::load(&mut conn, "BDI").unwrap().unwrap();
    assert_eq!((bdi.min, bdi.max), (0, 3));
    assert!(bdi.items.iter().all(|i| i.options.len() == 4));
    let (_, dass) = instruments::load(&mut conn, "DASS-21").unwrap().unwrap();
    assert_eq!(dass.scoring.multiplier, 2);
    assert!(dass.paper_raw_sum);
}

/// Each malformed file: non-zero exit, a message naming the file and the place, no change.
fn malformed_files_are_rejected_with_the_place_and_change_nothing(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    // Something in the database first, so "unchanged" means something.
    let good = dir.path().join("good.csv");
    std::fs::write(
        &good,
        "key,emotion,factor,text\nk1,Anger,Queues,Someone pushes in front of you.\n",
    )
    .unwrap();
    ok(cli(
        &db.url,
        &[
            "import",
            "situations",
            good.to_str().unwrap(),
            "--set",
            "good",
        ],
    ));
    let before = db.snapshot();

    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "situations",
            "bad.json",
            "{\"emotions\": [ {\"name\": \"Anger\", ",
            "line 1",
        ),
        (
            "situations",
            "nocol.csv",
            "key,emotion,factor\nk1,Anger,Queues\n",
            "text",
        ),
        (
            "situations",
            "empty.csv",
            "key,emotion,factor,text\nk1,Anger,Queues,Fine.\nk2,Anger,Queues,   \n",
            "line 3",
        ),
        (
            "situations",
            "wide.csv",
            "Anger-0,Angst-0\nQueues,Worries\nA text.,Another.\n",
            "Angst-0",
        ),
        (
            "situations",
            "dup.csv",
            "key,emotion,factor,text\nk1,Anger,Queues,One.\nk1,Anger,Queues,Two.\n",
            "line 3",
        ),
        (
            "situations",
            "emotion.csv",
            "key,emotion,factor,text\nk9,Boredom,Waiting,A long wait.\n",
            "line 2",
        ),
        (
            "instruments",
            "scale.json",
            r#"[{"name":"MOOD","questions":{"1":"Calm","2":"Tense"},"compute_mode":"SUM","prompt":"Reply with numbers from 1 to 5. SCENARIO Rate:","inner_setting":"Only numbers from 1 to 5.","scale":7,"reverse":[2],"categories":[{"cat_name":"Overall","cat_questions":[1,2]}]}]"#,
            "scale",
        ),
        ("instruments", "broken.json", "[{\"name\": ", "line 1"),
    ];
    for (kind, name, content, place) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let out = cli(&db.url, &["import", kind, path.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{name} was accepted");
        assert!(err.contains(name), "{name}: message names the file: {err}");
        assert!(
            err.contains(place),
            "{name}: message names the place {place:?}: {err}"
        );
        crate::helpers::assert_same(&db.snapshot(), &before);
    }
}

/// A file that parses but fails half-way through storing is rolled back whole.
fn an_import_failing_midway_is_rolled_back(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    // A study that uses PANAS pins its items.
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let before = db.snapshot();
    let items: String = (1..=20)
        .map(|i| format!("\"{i}\":\"Word{i}\""))
        .collect::<Vec<_>>()
        .join(",");
    let file = format!(
        r#"[{{"name":"CALM","questions":{{"1":"Calm","2":"Tense"}},"compute_mode":"SUM","prompt":"Numbers from 1 to 5 only. SCENARIO Rate:","inner_setting":"Numbers from 1 to 5 only.","scale":6,"reverse":[],"categories":[{{"cat_name":"Overall","cat_questions":[1,2]}}]}},
            {{"name":"PANAS","questions":{{{items}}},"compute_mode":"SUM","prompt":"Numbers from 1 to 5 only. SCENARIO Rate:","inner_setting":"Numbers from 1 to 5 only.","scale":6,"reverse":[],"categories":[{{"cat_name":"All","cat_questions":[1,2,3]}}]}}]"#
    );
    let path = dir.path().join("two.json");
    std::fs::write(&path, file).unwrap();
    let out = cli(&db.url, &["import", "instruments", path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("used by study demo"),
        "{}",
        stderr(&out)
    );
    crate::helpers::assert_same(&db.snapshot(), &before);
}

on_both_backends!(
    the_428_situations_import_from_json_and_csv_identically,
    the_175_tested_situations_import_as_their_own_set,
    questionnaires_json_gives_nine_instruments,
    malformed_files_are_rejected_with_the_place_and_change_nothing,
    an_import_failing_midway_is_rolled_back,
);
