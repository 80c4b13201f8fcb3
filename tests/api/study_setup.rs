//! Setting a study up (#13): the launch checklist and the absolute links, reuse (duplicate,
//! the definition file's round trip through the CLI and the web), deleting one participant
//! through a confirmation page. Over HTTP against the real server and through the real binary.

use diesel::prelude::*;
use emotionbench::store::{schema, users};

use crate::admin::signed_in;
use crate::helpers::{Browser, Reply, TestApp, TestDb, cli, ok, spawn_app, spawn_app_with, stderr};
use crate::on_both_backends;
use crate::survey::{PID, make_study, walk_to};

/// The study form as the new-study page fills it, with `changes` applied.
pub fn study_form(csrf: &str, slug: &str, changes: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut form: Vec<(String, String)> = [
        ("csrf", csrf),
        ("title", "Launch test"),
        ("slug", slug),
        (
            "consent_text",
            emotionbench::domain::study::CONSENT_TEMPLATE,
        ),
        (
            "debrief_text",
            emotionbench::domain::study::DEBRIEF_TEMPLATE,
        ),
        ("instrument", "PANAS"),
        ("set", "demo"),
        ("target", "3"),
        ("shuffle", "on"),
        ("pid_param", "PROLIFIC_PID"),
        ("study_id_param", "STUDY_ID"),
        ("session_id_param", "SESSION_ID"),
        ("code_completed", ""),
        ("code_no_consent", ""),
        ("code_failed_check", ""),
        ("code_screened_out", ""),
        ("min_seconds", "5"),
        ("reservation_minutes", "30"),
        ("retention", ""),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in changes {
        for f in form.iter_mut().filter(|(kk, _)| kk == k) {
            f.1 = v.to_string();
        }
    }
    form
}

fn post(b: &Browser, path: &str, form: &[(String, String)]) -> Reply {
    let fields: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    b.post(path, &fields)
}

fn status_of(app: &TestApp, slug: &str) -> String {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    schema::studies::table
        .filter(schema::studies::slug.eq(slug))
        .select(schema::studies::status)
        .get_result(&mut conn)
        .unwrap()
}

fn count(app: &TestApp, table: &str) -> i64 {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {table}"))
        .get_result::<N>(&mut conn)
        .unwrap()
        .n
}

fn future_day() -> String {
    (chrono::Utc::now().date_naive() + chrono::Days::new(90)).to_string()
}

fn opening_needs_the_launch_checklist_and_the_monitor_shows_absolute_links(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "seed", |_| {}); // brings the demo situation set
    let admin = signed_in(&app, users::Role::Admin);
    // The new-study form starts with the consent template and shows the checklist.
    let new = admin.get("/admin/studies/new");
    assert_eq!(new.status, 200);
    for p in emotionbench::domain::study::PLACEHOLDERS {
        assert!(new.body.contains(p), "the template has {p}");
    }
    assert!(new.body.contains("Before the study can open"));
    assert!(new.body.contains("<strong>Missing:</strong> Consent text"));
    let token = new.csrf();
    // A draft with everything missing may be saved...
    let r = post(&admin, "/admin/studies", &study_form(&token, "launch", &[]));
    assert_eq!(r.location(), Some("/admin/studies/launch"), "{}", r.body);
    let m = admin.get("/admin/studies/launch");
    assert!(m.body.contains("Launch checklist"), "{}", m.body);
    assert!(m.body.contains("Missing:</strong> Retention date"));
    // ...but not opened: the page lists what is missing, the study stays a draft.
    let open = [("csrf", token.as_str()), ("status", "open")];
    let r = admin.post("/admin/studies/launch/status", &open);
    assert_eq!(r.status, 422, "{}", r.body);
    for says in [
        "cannot open yet",
        "[RESEARCHER]",
        "[CONTACT]",
        "COMPLETED",
        "Retention",
    ] {
        assert!(r.body.contains(says), "the refusal says {says}: {}", r.body);
    }
    assert_eq!(status_of(&app, "launch"), "draft");
    // Texts written, a code, but a retention date in the past: still refused.
    let texts = [
        (
            "consent_text",
            "Run by Dr Ada Lovelace (ada@example.org), approved by IRB 2026-17.",
        ),
        ("debrief_text", "Thank you. Questions: ada@example.org."),
        ("code_completed", "C0MPLETE"),
        ("retention", "2020-01-01"),
    ];
    let r = post(
        &admin,
        "/admin/studies/launch",
        &study_form(&token, "launch", &texts),
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let r = admin.post("/admin/studies/launch/status", &open);
    assert_eq!(r.status, 422);
    assert!(
        r.body.contains("2020-01-01 is not in the future"),
        "{}",
        r.body
    );
    assert!(!r.body.contains("[RESEARCHER]"));
    assert_eq!(status_of(&app, "launch"), "draft");
    // The CLI refuses the same way.
    let o = cli(&app.db.url, &["studies", "set-status", "launch", "open"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not in the future"), "{}", stderr(&o));
    // A future date: it opens.
    let day = future_day();
    let mut ready = texts.to_vec();
    ready[3] = ("retention", day.as_str());
    let r = post(
        &admin,
        "/admin/studies/launch",
        &study_form(&token, "launch", &ready),
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let r = admin.post("/admin/studies/launch/status", &open);
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(status_of(&app, "launch"), "open");
    // The monitor: absolute links ready to copy, the retention date, no meta refresh.
    let m = admin.get("/admin/studies/launch");
    let link = format!("{}/s/launch", app.base);
    assert!(
        m.body.contains(&format!("value=\"{link}\" readonly")),
        "{}",
        m.body
    );
    let prolific = format!(
        "{link}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&#38;STUDY_ID={{{{%STUDY_ID%}}}}&#38;SESSION_ID={{{{%SESSION_ID%}}}}"
    );
    assert!(m.body.contains(&prolific), "{}", m.body);
    assert!(m.body.contains(&format!("deleted after {day}")));
    assert!(!m.body.contains("http-equiv"));
    // An untrusted peer's forwarded host is not believed.
    let mut r = admin
        .agent
        .get(admin.url("/admin/studies/launch"))
        .header("X-Forwarded-Host", "evil.example")
        .call()
        .unwrap();
    let body = r.body_mut().read_to_string().unwrap();
    assert!(
        body.contains(&format!("value=\"{link}\"")) && !body.contains("evil.example"),
        "{body}"
    );
    let audit = admin.get("/admin/audit").body;
    assert!(audit.contains("study.open"));
}

fn the_links_use_the_configured_public_url(db: TestDb) {
    let app = spawn_app_with(db, |s| {
        s.public_url = Some("https://study.example.org/".into());
    });
    make_study(&app, "pub", |_| {});
    let admin = signed_in(&app, users::Role::Researcher);
    let m = admin.get("/admin/studies/pub");
    assert!(
        m.body
            .contains("value=\"https://study.example.org/s/pub\" readonly"),
        "{}",
        m.body
    );
}

fn export_id(app: &TestApp, pid: Option<&str>) -> String {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let q = schema::participants::table.select(schema::participants::export_id);
    match pid {
        Some(pid) => q
            .filter(schema::participants::prolific_pid.eq(pid))
            .get_result(&mut conn),
        None => q
            .filter(schema::participants::prolific_pid.is_null())
            .get_result(&mut conn),
    }
    .unwrap()
}

fn participants_are_deleted_by_export_or_prolific_id_after_a_confirmation(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "del", |_| {});
    walk_to(
        &app.browser(),
        &format!("/s/del?PROLIFIC_PID={PID}"),
        "situation",
    );
    walk_to(&app.browser(), "/s/del", "situation");
    let admin = signed_in(&app, users::Role::Admin);
    let anonymous = export_id(&app, None);
    // The confirmation page says who, and deletes nothing yet.
    let r = admin.get(&format!(
        "/admin/studies/del/participants/delete?participant={anonymous}"
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("<h1>Delete this participant"), "{}", r.body);
    for shown in [anonymous.as_str(), "active", "Started (UTC)", "_scenario-"] {
        assert!(r.body.contains(shown), "shows {shown}: {}", r.body);
    }
    assert_eq!(count(&app, "participants"), 2);
    // Confirmed: deleted, with a message; the other participant stays.
    let token = r.csrf();
    let r = admin.post(
        "/admin/studies/del/participants/delete",
        &[("csrf", &token), ("participant", &anonymous)],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Participant deleted"));
    assert!(r.body.contains(&anonymous));
    assert_eq!(count(&app, "participants"), 1);
    assert_eq!(count(&app, "responses"), 20);
    // By Prolific id too.
    let r = admin.get(&format!(
        "/admin/studies/del/participants/delete?participant={PID}"
    ));
    assert_eq!(r.status, 200);
    assert!(r.body.contains(PID));
    // Nobody by that id: a proper page in the admin, not a bare 404 page.
    for who in [anonymous.as_str(), "1", "nobody-here"] {
        let r = admin.get(&format!(
            "/admin/studies/del/participants/delete?participant={who}"
        ));
        assert_eq!(r.status, 404);
        assert!(r.body.contains("No such participant"), "{}", r.body);
        assert!(r.body.contains("Sign out"), "inside the admin layout");
        let r = admin.post(
            "/admin/studies/del/participants/delete",
            &[("csrf", &token), ("participant", who)],
        );
        assert_eq!(r.status, 404);
        assert!(r.body.contains("No such participant"));
    }
    assert_eq!(count(&app, "participants"), 1);
    // The audit log names the export id, never the Prolific id.
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let targets: Vec<Option<String>> = schema::audit_log::table
        .filter(schema::audit_log::action.eq("participant.delete"))
        .select(schema::audit_log::target)
        .load(&mut conn)
        .unwrap();
    assert_eq!(targets, vec![Some(format!("del/{anonymous}"))]);
}

/// `studies export SLUG` on the CLI.
fn export_cli(url: &str, slug: &str) -> String {
    ok(cli(url, &["studies", "export", slug]))
}

fn import_cli(url: &str, text: &str, extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("def.study.json");
    std::fs::write(&file, text).unwrap();
    let mut args = vec!["studies", "import", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    cli(url, &args)
}

fn a_study_definition_round_trips_to_another_installation(db: TestDb) {
    let backend = db.backend;
    let app = spawn_app(db);
    let day = future_day();
    let date: chrono::NaiveDate = day.parse().unwrap();
    make_study(&app, "wave", |c| {
        c.consent_text = "Consent with \"quotes\" & <tags>.\n\nSecond.".into();
        c.target_per_situation = 7;
    });
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        diesel::update(schema::studies::table.filter(schema::studies::slug.eq("wave")))
            .set(schema::studies::retention_until.eq(date.and_hms_opt(0, 0, 0)))
            .execute(&mut conn)
            .unwrap();
    }
    walk_to(&app.browser(), "/s/wave", "situation"); // a participant, who must not travel
    let exported = export_cli(&app.db.url, "wave");
    assert!(exported.contains("\"format_version\": 1"), "{exported}");
    assert!(!exported.contains("participant"), "no participant data");
    // The web download is the same file.
    let researcher = signed_in(&app, users::Role::Researcher);
    let r = researcher.get("/admin/studies/wave/definition.json");
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-disposition")
            .unwrap()
            .contains("wave.study.json")
    );
    assert_eq!(r.body, exported);
    // Another installation: import, export again, the same bytes.
    let other = TestDb::of(backend).unwrap();
    let other_url = other.url.clone();
    let other_app = TestApp::prepare(other);
    let said = ok(import_cli(&other_url, &exported, &[]));
    assert!(said.contains("imported study wave as a draft"), "{said}");
    assert!(said.contains("situation set demo: created"), "{said}");
    assert!(
        said.contains("instrument PANAS: already here, identical"),
        "{said}"
    );
    assert_eq!(export_cli(&other_url, "wave"), exported);
    assert_eq!(status_of(&other_app, "wave"), "draft");
    assert_eq!(count(&other_app, "participants"), 0);
    // Again under another slug: the instrument and set are reused.
    let said = ok(import_cli(&other_url, &exported, &["--slug", "wave-b"]));
    assert!(
        said.contains("situation set demo: already here, identical"),
        "{said}"
    );
    // The same slug again, a newer format, a set that differs: refused, nothing stored.
    let before = other_app.db.snapshot();
    let o = import_cli(&other_url, &exported, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("exists here already"), "{}", stderr(&o));
    let newer = exported.replace("\"format_version\": 1", "\"format_version\": 2");
    let o = import_cli(&other_url, &newer, &["--slug", "wave-c"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("format version 2, written by a newer emotionbench"),
        "{}",
        stderr(&o)
    );
    let demo = emotionbench::domain::demo::demo_study();
    let first = &demo.situations[0].text;
    let changed = exported.replacen(
        &serde_json::to_string(first).unwrap(),
        "\"A different text.\"",
        1,
    );
    assert_ne!(changed, exported);
    let o = import_cli(&other_url, &changed, &["--slug", "wave-c"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("situation set \"demo\" with other situations"),
        "{}",
        stderr(&o)
    );
    crate::helpers::assert_same(&other_app.db.snapshot(), &before);
    assert_eq!(count(&other_app, "studies"), 2);
    // Under another set name it imports, with the file's text.
    let said = ok(import_cli(
        &other_url,
        &changed,
        &["--slug", "wave-c", "--set", "demo-edited"],
    ));
    assert!(
        said.contains("situation set demo-edited: created"),
        "{said}"
    );
    assert!(export_cli(&other_url, "wave-c").contains("A different text."));
}

/// A multipart/form-data POST, as a browser sends a form with a file.
fn upload(b: &Browser, path: &str, fields: &[(&str, &str)], file: (&str, &str)) -> Reply {
    let boundary = "----emotionbench-test-boundary-7MA4YWxkTrZu0gW";
    let mut body = String::new();
    for (k, v) in fields {
        body +=
            &format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n");
    }
    body += &format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\n\
         Content-Type: application/json\r\n\r\n{}\r\n--{boundary}--\r\n",
        file.0, file.1
    );
    let mut r = b
        .agent
        .post(b.url(path))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .send(body.as_bytes())
        .unwrap();
    Reply {
        status: r.status().as_u16(),
        headers: Vec::new(),
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

fn a_study_definition_is_uploaded_in_the_browser(db: TestDb) {
    let backend = db.backend;
    let source = spawn_app(db);
    make_study(&source, "wave", |_| {});
    let exported = export_cli(&source.db.url, "wave");
    let app = spawn_app(TestDb::of(backend).unwrap());
    let admin = signed_in(&app, users::Role::Admin);
    let form = admin.get("/admin/studies/import");
    assert_eq!(form.status, 200);
    let token = form.csrf();
    let file = ("wave.study.json", exported.as_str());
    // Without the form's token: refused before anything is read into the store.
    let r = upload(&admin, "/admin/studies/import", &[("csrf", "forged")], file);
    assert_eq!(r.status, 403);
    // A newer format: the page says so, nothing is stored.
    let newer = exported.replace("\"format_version\": 1", "\"format_version\": 3");
    let r = upload(
        &admin,
        "/admin/studies/import",
        &[("csrf", &token)],
        ("wave.study.json", &newer),
    );
    assert_eq!(r.status, 422);
    assert!(r.body.contains("format version 3"), "{}", r.body);
    assert_eq!(count(&app, "studies"), 0);
    // Not a definition at all.
    let r = upload(
        &admin,
        "/admin/studies/import",
        &[("csrf", &token)],
        ("x.json", "{\"hello\": 1}"),
    );
    assert_eq!(r.status, 422);
    assert!(r.body.contains("not an emotionbench study definition"));
    // The file: imported as a draft, and its download is the same file.
    let r = upload(
        &admin,
        "/admin/studies/import",
        &[("csrf", &token), ("slug", ""), ("set", "")],
        file,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("as a draft"), "{}", r.body);
    assert_eq!(status_of(&app, "wave"), "draft");
    let r = admin.get("/admin/studies/wave/definition.json");
    assert_eq!(r.body, exported);
    // Under another slug through the form.
    let r = upload(
        &admin,
        "/admin/studies/import",
        &[("csrf", &token), ("slug", "wave-web"), ("set", "")],
        file,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(status_of(&app, "wave-web"), "draft");
    assert!(admin.get("/admin/audit").body.contains("study.import"));
}

fn a_study_is_duplicated_without_its_participants(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "orig", |c| {
        c.consent_text = "Original consent.".into()
    });
    walk_to(&app.browser(), "/s/orig", "situation");
    let admin = signed_in(&app, users::Role::Admin);
    let form = admin.get("/admin/studies/orig/duplicate");
    assert_eq!(form.status, 200);
    assert!(form.body.contains("value=\"orig-2\""));
    let token = form.csrf();
    // A taken slug is shown on the form.
    let r = admin.post(
        "/admin/studies/orig/duplicate",
        &[("csrf", &token), ("slug", "orig"), ("title", "Copy")],
    );
    assert_eq!(r.status, 422);
    assert!(r.body.contains("exists already"), "{}", r.body);
    let r = admin.post(
        "/admin/studies/orig/duplicate",
        &[
            ("csrf", &token),
            ("slug", "second-wave"),
            ("title", "Second wave"),
        ],
    );
    assert_eq!(
        r.location(),
        Some("/admin/studies/second-wave"),
        "{}",
        r.body
    );
    assert_eq!(status_of(&app, "second-wave"), "draft");
    let m = admin.get("/admin/studies/second-wave");
    assert!(m.body.contains("Second wave"));
    assert!(
        m.body.contains("<th scope=\"row\">Active</th><td>0"),
        "no participants"
    );
    // Everything but the slug and the title is the original's.
    let a = export_cli(&app.db.url, "orig");
    let b = export_cli(&app.db.url, "second-wave")
        .replace("\"slug\": \"second-wave\"", "\"slug\": \"orig\"")
        .replace(
            "\"title\": \"Second wave\"",
            "\"title\": \"Feelings study\"",
        );
    assert_eq!(a, b);
    // The CLI duplicates the same way.
    let said = ok(cli(&app.db.url, &["studies", "duplicate", "orig", "third"]));
    assert!(said.contains("created draft study third"), "{said}");
    assert!(admin.get("/admin/audit").body.contains("study.duplicate"));
}

on_both_backends!(
    opening_needs_the_launch_checklist_and_the_monitor_shows_absolute_links,
    the_links_use_the_configured_public_url,
    participants_are_deleted_by_export_or_prolific_id_after_a_confirmation,
    a_study_definition_round_trips_to_another_installation,
    a_study_definition_is_uploaded_in_the_browser,
    a_study_is_duplicated_without_its_participants,
    the_demo_study_passes_its_own_launch_checklist,
);

/// The demo study opens at once, so it must pass the launch checklist every study must pass
/// before it opens (it once had no completion code and no retention date).
fn the_demo_study_passes_its_own_launch_checklist(db: TestDb) {
    let pool = db.pool();
    let mut conn = pool.get().unwrap();
    emotionbench::app::demo::load_demo(&mut conn).unwrap();
    let study = emotionbench::store::studies::load(&mut conn, "demo")
        .unwrap()
        .unwrap();
    let today = chrono::Utc::now().date_naive();
    let failing = emotionbench::domain::study::checklist_problems(&study.launch_checklist(today));
    assert!(failing.is_empty(), "{failing:?}");
}
