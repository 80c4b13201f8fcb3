//! The admin's data pages over HTTP with multipart bodies, on SQLite and Postgres: every kind
//! of upstream file uploads; a malformed file of each kind and an oversized one are refused
//! with the place and the reason, and nothing is stored; researchers browse and download but
//! cannot upload.

use diesel::prelude::*;
use emotionbench::admin::data::UPLOAD_LIMIT;
use emotionbench::store::db;
use emotionbench::store::schema::{audit_log, model_runs, model_trials, participants, studies};
use emotionbench::store::users::Role;

use crate::admin::signed_in;
use crate::helpers::{Browser, Reply, TestDb, assert_same, spawn_app, upstream};
use crate::on_both_backends;

/// A `multipart/form-data` body: the text fields, then the file (field `file`) if any.
fn multipart(fields: &[(&str, &str)], file: Option<(&str, &[u8])>) -> (String, Vec<u8>) {
    let boundary = "----emotionbench-test-boundary-7c1f";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    if let Some((file_name, bytes)) = file {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
                 filename=\"{file_name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Posts an upload form as a browser does.
pub fn upload(
    b: &Browser,
    kind: &str,
    fields: &[(&str, &str)],
    file: Option<(&str, &[u8])>,
) -> Reply {
    let (content_type, body) = multipart(fields, file);
    let mut r = b
        .agent
        .post(b.url(&format!("/admin/data/{kind}")))
        .header("Content-Type", content_type)
        .send(&body[..])
        .unwrap();
    Reply {
        status: r.status().as_u16(),
        headers: Vec::new(),
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// An upstream file's name and content.
fn file(relative: &str) -> (String, Vec<u8>) {
    let path = upstream().unwrap().join(relative);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    (name, std::fs::read(&path).unwrap())
}

/// Uploads an upstream file; the page must say it was imported.
fn accepted(b: &Browser, kind: &str, fields: &[(&str, &str)], relative: &str) -> String {
    let (name, bytes) = file(relative);
    let r = upload(b, kind, fields, Some((&name, &bytes)));
    assert_eq!(r.status, 200, "{relative}: {}", r.body);
    assert!(
        r.body.contains(&format!("Imported {name}")),
        "{relative}: {}",
        r.body
    );
    r.body
}

/// Everything an upload can write: sets, instruments, studies, participants, runs, trials and
/// the audit log.
fn everything(db: &TestDb) -> String {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    let count = |n: QueryResult<i64>| n.unwrap();
    format!(
        "{}studies {}\nparticipants {}\nruns {}\ntrials {}\naudit {}\n",
        db.snapshot(),
        count(studies::table.count().get_result(&mut conn)),
        count(participants::table.count().get_result(&mut conn)),
        count(model_runs::table.count().get_result(&mut conn)),
        count(model_trials::table.count().get_result(&mut conn)),
        count(audit_log::table.count().get_result(&mut conn)),
    )
}

/// The audit entries of uploads: (action, actor).
fn import_audit(db: &TestDb) -> Vec<(String, String)> {
    let pool = db::connect(&db.url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    audit_log::table
        .filter(audit_log::action.like("import.%"))
        .order(audit_log::id)
        .select((audit_log::action, audit_log::actor))
        .load(&mut conn)
        .unwrap()
}

fn admins_upload_every_kind_and_researchers_browse_and_download(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    let app = spawn_app(db);
    let admin = signed_in(&app, Role::Admin);
    let page = admin.get("/admin/data");
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("No situation sets yet."),
        "{}",
        page.body
    );
    let t = page.csrf();
    let csrf = ("csrf", t.as_str());

    // Situation sets in every format.
    let out = accepted(&admin, "situations", &[csrf], "doc.csv");
    assert!(
        out.contains(
            "(EmotionBench doc.csv) into the set tested-175 (new): situations 175 (175 created"
        ),
        "{out}"
    );
    let out = accepted(&admin, "situations", &[csrf], "situations.json");
    assert!(
        out.contains("into the set situations (new): situations 428"),
        "{out}"
    );
    let out = accepted(
        &admin,
        "situations",
        &[csrf, ("set", "wide")],
        "situations/situations.csv",
    );
    assert!(
        out.contains("into the set wide (new): situations 428"),
        "{out}"
    );
    let out = accepted(
        &admin,
        "situations",
        &[csrf, ("set", "tidy")],
        "derived/test_situations_175.csv",
    );
    assert!(
        out.contains("(tidy CSV) into the set tidy (new): situations 175"),
        "{out}"
    );
    // Instruments, the published humans (xlsx and the CSV) and released results.
    let out = accepted(&admin, "instruments", &[csrf], "questionnaires.json");
    assert!(out.contains("PANAS") && out.contains("BDI"), "{out}");
    let out = accepted(
        &admin,
        "humans",
        &[csrf, ("study", "crowd")],
        "results/PANAS Test/crowd.xlsx",
    );
    assert!(
        out.contains(
            "into the study crowd (new, closed): 1266 participants in the file, 1266 created"
        ),
        "{out}"
    );
    let out = accepted(
        &admin,
        "humans",
        &[csrf, ("study", "crowd")],
        "derived/human_responses.csv",
    );
    assert!(out.contains("1266 already present"), "{out}");
    let out = accepted(
        &admin,
        "model-results",
        &[csrf, ("study", "crowd"), ("model", "gpt-4")],
        "results/PANAS Test/gpt-4-PANAS-testing.csv",
    );
    assert!(
        out.contains("of gpt-4 on PANAS: default trials 50 parsed, 0 failed"),
        "{out}"
    );
    let out = accepted(
        &admin,
        "model-results",
        &[
            csrf,
            ("study", "crowd"),
            ("model", "gpt-3.5-turbo"),
            ("instrument", "BDI"),
        ],
        "results/Challenging Bench/gpt-3.5-turbo-BDI-testing.csv",
    );
    assert!(out.contains("of gpt-3.5-turbo on BDI"), "{out}");
    // One audit entry per import, by the admin.
    let audit = import_audit(&app.db);
    assert_eq!(audit.len(), 9, "{audit:?}");
    assert!(
        audit
            .iter()
            .all(|(_, actor)| actor.contains("admin@example.org")),
        "{audit:?}"
    );
    assert_eq!(
        audit
            .iter()
            .filter(|(a, _)| a == "import.situations")
            .count(),
        4
    );

    // A researcher browses and downloads, but cannot upload.
    let researcher = signed_in(&app, Role::Researcher);
    let rt = researcher.get("/admin/data").csrf();
    let before = everything(&app.db);
    for kind in ["situations", "instruments", "humans", "model-results"] {
        let (name, bytes) = file("doc.csv");
        let r = upload(
            &researcher,
            kind,
            &[("csrf", &rt), ("study", "crowd"), ("model", "x")],
            Some((&name, &bytes)),
        );
        assert_eq!(r.status, 403, "researcher uploads {kind}");
    }
    assert_same(&everything(&app.db), &before);
    let list = researcher.get("/admin/data");
    assert_eq!(list.status, 200);
    assert!(
        list.body.contains("/admin/data/sets/tested-175"),
        "{}",
        list.body
    );
    assert!(!list.body.contains("Upload situations"), "{}", list.body);
    let set = researcher.get("/admin/data/sets/tested-175");
    assert_eq!(set.status, 200);
    assert!(set.body.contains("175 situations"), "{}", set.body);
    assert!(
        set.body
            .contains("<h2 id=\"emotion-Jealousy\">Jealousy</h2>"),
        "{}",
        set.body
    );
    assert!(set.body.contains("Factor 3: Experiential"), "{}", set.body);
    assert!(set.body.contains("Jealousy-3_scenario-2"), "{}", set.body);
    assert_eq!(researcher.get("/admin/data/sets/nosuchset").status, 404);
    let csv = researcher.get("/admin/data/sets/tested-175/export/situations.csv");
    assert_eq!(csv.status, 200);
    let mut lines = csv.body.lines();
    assert_eq!(
        lines.next(),
        Some("key,emotion,factor_index,factor_name,scenario_index,text")
    );
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("Anger-0_scenario-0,Anger,0,Facing Self-Opinioned People,0,"),
        "{}",
        csv.body
    );
    assert_eq!(csv.body.lines().count(), 176);
    // The download imports back as the same set.
    let r = upload(
        &admin,
        "situations",
        &[csrf, ("set", "tested-175")],
        Some(("tested-175.csv", csv.body.as_bytes())),
    );
    assert!(
        r.body
            .contains("situations 175 (0 created, 0 updated, 175 unchanged)"),
        "{}",
        r.body
    );
    // Anonymous visitors get 401 on the download.
    assert_eq!(
        app.browser()
            .get("/admin/data/sets/tested-175/export/situations.csv")
            .status,
        401
    );
}

/// Uploads a file that must be refused: the page names the file, the place and the reason.
fn refused(
    b: &Browser,
    kind: &str,
    fields: &[(&str, &str)],
    name: &str,
    bytes: &[u8],
    wanted: &[&str],
) {
    let r = upload(b, kind, fields, Some((name, bytes)));
    assert_eq!(r.status, 422, "{kind} {name}: {}", r.body);
    assert!(r.body.contains("role=\"alert\""), "{}", r.body);
    assert!(r.body.contains("Nothing was imported."), "{}", r.body);
    assert!(r.body.contains(name), "{kind}: {}", r.body);
    for w in wanted {
        assert!(r.body.contains(w), "{kind} {name} lacks {w:?}: {}", r.body);
    }
}

fn refused_uploads_name_the_place_and_the_reason_and_change_nothing(db: TestDb) {
    if upstream().is_none() {
        return;
    }
    let app = spawn_app(db);
    let admin = signed_in(&app, Role::Admin);
    let t = admin.get("/admin/data").csrf();
    let csrf = ("csrf", t.as_str());
    // A study to upload human data and results into.
    accepted(&admin, "situations", &[csrf], "doc.csv");
    accepted(
        &admin,
        "humans",
        &[csrf, ("study", "crowd")],
        "results/PANAS Test/crowd.xlsx",
    );
    let before = everything(&app.db);

    // Situations: doc.csv with one empty prompt, broken JSON, a wide CSV with a gap.
    let (_, doc) = file("doc.csv");
    let doc = String::from_utf8(doc).unwrap();
    let header_end = doc.find('\n').unwrap();
    let broken_doc = doc[..header_end].to_owned() + "\nPrompt,x\n";
    refused(
        &admin,
        "situations",
        &[csrf],
        "doc.csv",
        broken_doc.as_bytes(),
        &[
            "line 2, column 53",
            "Anger-0_scenario-0_test-0_order-0",
            "empty situation text",
        ],
    );
    refused(
        &admin,
        "situations",
        &[csrf],
        "situations.json",
        b"{\"emotions\": [{\"name\": \"Anger\",\n \"factors\": [}]}",
        &["line 2, column", "invalid JSON"],
    );
    refused(
        &admin,
        "situations",
        &[csrf],
        "wide.csv",
        b"Anger-0,Fear-0\nF1,F2\na,\n,b\nc,d\n",
        &["line 4", "gap in the column"],
    );
    refused(
        &admin,
        "situations",
        &[csrf],
        "tidy.csv",
        b"key,emotion,factor,text\nA-1,Rage,f,t\n",
        &["line 2, column", "emotion", "unknown emotion"],
    );
    // Instruments.
    refused(
        &admin,
        "instruments",
        &[csrf],
        "questionnaires.json",
        b"[{\"name\": \"X\"}]",
        &["questionnaires.json: "],
    );
    // Human data: an xlsx that is not one, and a CSV without the columns.
    refused(
        &admin,
        "humans",
        &[csrf, ("study", "crowd2")],
        "crowd.xlsx",
        b"PK\x03\x04 not really a workbook",
        &["not a readable xlsx workbook"],
    );
    refused(
        &admin,
        "humans",
        &[csrf, ("study", "crowd")],
        "humans.csv",
        b"a,b\n1,2\n",
        &["humans.csv: "],
    );
    // Model results: a column that is no situation of the study.
    refused(
        &admin,
        "model-results",
        &[csrf, ("study", "crowd"), ("model", "gpt-4")],
        "gpt-4-PANAS-testing.csv",
        b"question-0,order-0,Nothing-9_test-0_order-0\nP,x,y\n",
        &["gpt-4-PANAS-testing.csv: "],
    );
    // Oversized: refused with the limit, before anything is parsed.
    let big = vec![b'a'; UPLOAD_LIMIT + 64 * 1024];
    let r = upload(&admin, "situations", &[csrf], Some(("big.csv", &big)));
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(
        r.body
            .contains("larger than the limit of 8 MiB, so nothing was imported"),
        "{}",
        r.body
    );
    // No file, a missing study, a wrong token.
    let r = upload(&admin, "situations", &[csrf], None);
    assert_eq!(r.status, 400);
    assert!(r.body.contains("Choose a file to upload"), "{}", r.body);
    let (name, bytes) = file("results/PANAS Test/gpt-4-PANAS-testing.csv");
    let r = upload(&admin, "model-results", &[csrf], Some((&name, &bytes)));
    assert_eq!(r.status, 400);
    assert!(r.body.contains("Give the study"), "{}", r.body);
    let r = upload(
        &admin,
        "model-results",
        &[("csrf", "wrong"), ("study", "crowd"), ("model", "m")],
        Some((&name, &bytes)),
    );
    assert_eq!(r.status, 403);
    assert_same(&everything(&app.db), &before);
}

on_both_backends!(
    admins_upload_every_kind_and_researchers_browse_and_download,
    refused_uploads_name_the_place_and_the_reason_and_change_nothing,
);
