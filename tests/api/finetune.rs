//! `emotionbench split` and `emotionbench export finetune` on the published 1,266-participant
//! cohort (paper appendix F: 866 train, 400 test).

use std::collections::HashMap;

use diesel::prelude::*;
use emotionbench::app::runs::{PromptRequest, prompt_messages};
use emotionbench::domain::parse::{ParseSpec, parse_reply};
use emotionbench::domain::prompt::{ChatMessage, Measure, canonical_order};
use emotionbench::store::schema::{participants, situations, studies};
use emotionbench::store::{db, instruments};

use crate::helpers::{TestDb, cli, ok, stderr, upstream};
use crate::humans::{human_csv, import_tested_175};
use crate::on_both_backends;

fn export(db: &TestDb, format: &str, path: &std::path::Path) -> Vec<u8> {
    let out = cli(
        &db.url,
        &[
            "export",
            "finetune",
            "--study",
            "crowd",
            "--split",
            "train",
            "--format",
            format,
            "-o",
            path.to_str().unwrap(),
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("wrote 1732 records (866 participants)"),
        "{err}"
    );
    std::fs::read(path).unwrap()
}

/// participant id -> split, for the crowd study.
fn splits(db: &TestDb) -> HashMap<i64, Option<String>> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    participants::table
        .inner_join(studies::table)
        .filter(studies::slug.eq("crowd"))
        .select((participants::id, participants::split))
        .load::<(i64, Option<String>)>(&mut conn)
        .unwrap()
        .into_iter()
        .collect()
}

fn the_finetune_export_of_the_cohort_reads_back_to_the_stored_answers(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    import_tested_175(&db);
    ok(cli(
        &db.url,
        &["import", "humans", &human_csv(), "--study", "crowd"],
    ));
    // Exporting before any split says what to do.
    let dir = tempfile::tempdir().unwrap();
    let o = cli(
        &db.url,
        &["export", "finetune", "--study", "crowd", "-o", "x.jsonl"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("emotionbench split"), "{}", stderr(&o));
    let o = cli(&db.url, &["report", "--study", "crowd", "--split", "test"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("emotionbench split"), "{}", stderr(&o));

    let split = |seed: &str| {
        ok(cli(
            &db.url,
            &["split", "--study", "crowd", "--test", "400", "--seed", seed],
        ))
    };
    let out = split("11");
    assert!(
        out.contains("866 train, 400 test (175 situations, seed 11)"),
        "{out}"
    );
    let first = splits(&db);
    assert_eq!(first.len(), 1266);
    assert_eq!(
        first
            .values()
            .filter(|s| s.as_deref() == Some("test"))
            .count(),
        400
    );

    // The report can restrict the humans to either side (a fine-tuned model is compared with
    // the held-out test participants).
    let humans = |side: Option<&str>| {
        let mut args = vec!["report", "--study", "crowd", "--format", "json"];
        if let Some(side) = side {
            args.extend(["--split", side]);
        }
        let r: serde_json::Value = serde_json::from_str(&ok(cli(&db.url, &args))).unwrap();
        let h = r["cohorts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == "humans")
            .unwrap()
            .clone();
        (
            h["observations"].as_u64().unwrap(),
            r["humans_from"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        humans(None),
        (1266, "all completed participants".to_owned())
    );
    let (n, from) = humans(Some("test"));
    assert_eq!(n, 400);
    assert!(from.contains("test side of the study's split"), "{from}");
    assert_eq!(humans(Some("train")).0, 866);
    let md = ok(cli(
        &db.url,
        &["report", "--study", "crowd", "--split", "test"],
    ));
    assert!(
        md.contains("Humans: the completed participants on the test side"),
        "{md}"
    );
    assert!(md.contains("humans: 400 participants"), "{md}");

    // Stratified: each situation's test count is within one of its proportional share.
    let pool = db::connect(&db.url, 2).unwrap();
    let mut conn = pool.get().unwrap();
    let rows: Vec<(i64, String)> = participants::table
        .inner_join(situations::table)
        .select((participants::id, situations::key))
        .load(&mut conn)
        .unwrap();
    let mut per: HashMap<&str, (usize, usize)> = HashMap::new();
    for (id, key) in &rows {
        let e = per.entry(key.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(first[id].as_deref() == Some("test"));
    }
    assert_eq!(per.len(), 175);
    for (key, (n, t)) in &per {
        let share = *n as f64 * 400.0 / 1266.0;
        assert!((*t as f64 - share).abs() < 1.0, "{key}: {t} of {n}");
    }

    let a = export(&db, "openai", &dir.path().join("a.jsonl"));
    let m = export(&db, "messages", &dir.path().join("m.jsonl"));
    let openai: Vec<serde_json::Value> = std::str::from_utf8(&a)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let records: Vec<serde_json::Value> = std::str::from_utf8(&m)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(openai.len(), 1732);
    assert_eq!(records.len(), 1732);

    // Every reply parses back with our parser to the participant's stored answers, and the
    // prompt is the one `prompt show` / a model run renders for that measure and situation.
    let study = emotionbench::store::studies::load(&mut conn, "crowd")
        .unwrap()
        .unwrap();
    let instrument = instruments::get(&mut conn, study.instrument_id).unwrap();
    let order = canonical_order(instrument.items.len());
    let texts: Vec<&str> = instrument.items.iter().map(|i| i.text.as_str()).collect();
    let spec = ParseSpec {
        display_order: &order,
        item_texts: &texts,
        min: instrument.min,
        max: instrument.max,
    };
    let default_prompt = prompt_messages(
        &mut conn,
        &PromptRequest {
            study: "crowd".into(),
            instrument: None,
            measure: Measure::Default,
            situation: None,
            template: "eb-code".into(),
            seed: None,
            repeat: 0,
            language: None,
        },
    )
    .unwrap();
    let mut seen = HashMap::new();
    for (o, r) in openai.iter().zip(&records) {
        assert_eq!(
            o.as_object().unwrap().len(),
            1,
            "openai records hold messages only"
        );
        assert_eq!(o["messages"], r["messages"]);
        let messages: Vec<ChatMessage> = serde_json::from_value(o["messages"].clone()).unwrap();
        let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant"]);
        let export_id = r["participant"].as_str().unwrap();
        let measure = r["measure"].as_str().unwrap();
        let id: emotionbench::store::ParticipantId = participants::table
            .filter(participants::export_id.eq(export_id))
            .select(participants::id)
            .first(&mut conn)
            .unwrap();
        assert_eq!(first[&id.0].as_deref(), Some("train"));
        let stored: Vec<i32> = emotionbench::store::participants::answers(&mut conn, id)
            .unwrap()
            .into_iter()
            .filter(|(phase, _, _)| phase.as_str() == measure)
            .map(|(_, _, v)| v)
            .collect();
        let parsed = parse_reply(&messages[2].content, &spec).unwrap();
        assert_eq!(parsed.scores, stored, "{export_id} {measure}");
        let expected = match measure {
            "default" => {
                assert!(r["situation"].is_null());
                default_prompt.clone()
            }
            "evoked" => prompt_messages(
                &mut conn,
                &PromptRequest {
                    study: "crowd".into(),
                    instrument: None,
                    measure: Measure::Evoked,
                    situation: Some(r["situation"].as_str().unwrap().to_owned()),
                    template: "eb-code".into(),
                    seed: None,
                    repeat: 0,
                    language: None,
                },
            )
            .unwrap(),
            other => panic!("measure {other}"),
        };
        assert_eq!(messages[..2], expected[..], "{export_id} {measure}");
        *seen.entry(export_id.to_owned()).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 866);
    assert!(seen.values().all(|n| *n == 2));
    drop(conn);

    // The same seed: the same split and byte-identical files. Another seed: another split.
    split("11");
    assert_eq!(splits(&db), first);
    assert_eq!(export(&db, "openai", &dir.path().join("a2.jsonl")), a);
    assert_eq!(export(&db, "messages", &dir.path().join("m2.jsonl")), m);
    split("12");
    assert_ne!(splits(&db), first);
    assert_ne!(export(&db, "openai", &dir.path().join("a3.jsonl")), a);
}

on_both_backends!(the_finetune_export_of_the_cohort_reads_back_to_the_stored_answers);
