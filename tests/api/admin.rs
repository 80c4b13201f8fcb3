//! Accounts, sessions, the route matrix, CSRF, studies, monitor, deletion, XSS.

use std::time::Instant;

use emotionbench::auth::password;
use emotionbench::store::{db, users};
use emotionbench::web::{Access, ROUTES};

use crate::helpers::{Browser, Reply, TestApp, TestDb, cli, ok, spawn_app};
use crate::on_both_backends;
use crate::survey::{PID, make_study, walk_to};

pub const PASSWORD: &str = "correct horse battery";

pub fn add_user(app: &TestApp, email: &str, role: users::Role) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    users::create(&mut conn, email, &password::hash(PASSWORD).unwrap(), role).unwrap();
}

pub fn login_form(b: &Browser, email: &str, pass: &str) -> Reply {
    let form = b.get("/admin/login");
    b.post(
        "/admin/login",
        &[
            ("csrf", &form.csrf()),
            ("email", email),
            ("password", pass),
            ("next", "/admin"),
        ],
    )
}

/// A browser signed in with a new account of that role.
pub fn signed_in(app: &TestApp, role: users::Role) -> Browser {
    let email = format!("{}@example.org", role.as_str());
    add_user(app, &email, role);
    let b = app.browser();
    let r = login_form(&b, &email, PASSWORD);
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/admin")),
        "{}",
        r.body
    );
    b
}

/// The session's CSRF token, from any admin page.
fn admin_csrf(b: &Browser) -> String {
    b.get("/admin").csrf()
}

/// Every route and its access class, as the test expects them. A route added to the
/// application without an entry here fails `every_route_is_in_the_matrix`.
const MATRIX: &[(&str, &str, Access)] = &[
    ("get", "/", Access::Public),
    ("get", "/healthz", Access::Public),
    ("get", "/assets/{file}", Access::Public),
    ("get", "/s/{study}", Access::Participant),
    ("get", "/s/{study}/consent", Access::Participant),
    ("post", "/s/{study}/consent", Access::Participant),
    ("get", "/s/{study}/pilot/{token}", Access::Participant),
    ("get", "/s/{study}/withdraw", Access::Participant),
    ("post", "/s/{study}/withdraw", Access::Participant),
    ("get", "/s/{study}/{page}", Access::Participant),
    ("post", "/s/{study}/{page}", Access::Participant),
    ("get", "/invite/{token}", Access::Public),
    ("post", "/invite/{token}", Access::Public),
    ("post", "/prolific/webhook", Access::Public),
    ("get", "/admin/login", Access::Public),
    ("post", "/admin/login", Access::Public),
    ("post", "/admin/logout", Access::Researcher),
    ("get", "/admin", Access::Researcher),
    ("get", "/admin/studies/new", Access::Admin),
    ("post", "/admin/studies", Access::Admin),
    ("get", "/admin/studies/import", Access::Admin),
    ("post", "/admin/studies/import", Access::Admin),
    ("get", "/admin/studies/{study}", Access::Researcher),
    ("get", "/admin/studies/{study}/report", Access::Researcher),
    (
        "get",
        "/admin/studies/{study}/report/export/{chart}",
        Access::ResearcherDownload,
    ),
    ("get", "/admin/studies/{study}/edit", Access::Admin),
    ("post", "/admin/studies/{study}", Access::Admin),
    ("post", "/admin/studies/{study}/status", Access::Admin),
    ("get", "/admin/studies/{study}/door", Access::Admin),
    ("post", "/admin/studies/{study}/door", Access::Admin),
    ("get", "/admin/studies/{study}/delete", Access::Admin),
    ("post", "/admin/studies/{study}/delete", Access::Admin),
    (
        "get",
        "/admin/studies/{study}/participants/delete",
        Access::Admin,
    ),
    (
        "post",
        "/admin/studies/{study}/participants/delete",
        Access::Admin,
    ),
    (
        "get",
        "/admin/studies/{study}/participants/{participant}",
        Access::Researcher,
    ),
    ("get", "/admin/studies/{study}/evidence", Access::Researcher),
    ("post", "/admin/studies/{study}/exclusions", Access::Admin),
    (
        "post",
        "/admin/studies/{study}/pilots/delete",
        Access::Admin,
    ),
    ("get", "/admin/studies/{study}/duplicate", Access::Admin),
    ("post", "/admin/studies/{study}/duplicate", Access::Admin),
    (
        "get",
        "/admin/studies/{study}/definition.json",
        Access::Researcher,
    ),
    (
        "get",
        "/admin/studies/{study}/export/{file}",
        Access::ResearcherDownload,
    ),
    ("get", "/admin/studies/{study}/prolific", Access::Researcher),
    (
        "post",
        "/admin/studies/{study}/prolific/draft",
        Access::Admin,
    ),
    (
        "post",
        "/admin/studies/{study}/prolific/approve",
        Access::Admin,
    ),
    (
        "post",
        "/admin/studies/{study}/prolific/reject",
        Access::Admin,
    ),
    (
        "post",
        "/admin/studies/{study}/prolific/return",
        Access::Admin,
    ),
    (
        "get",
        "/admin/studies/{study}/prolific/reconcile",
        Access::Researcher,
    ),
    (
        "post",
        "/admin/studies/{study}/prolific/release",
        Access::Admin,
    ),
    ("get", "/admin/providers", Access::Admin),
    ("get", "/admin/runs", Access::Admin),
    ("get", "/admin/runs/new", Access::Admin),
    ("post", "/admin/runs", Access::Admin),
    ("get", "/admin/runs/{run}", Access::Admin),
    ("post", "/admin/runs/{run}/{action}", Access::Admin),
    ("get", "/admin/users", Access::Admin),
    ("post", "/admin/users/invite", Access::Admin),
    ("post", "/admin/users/{user}/status", Access::Admin),
    ("post", "/admin/users/{user}/role", Access::Admin),
    ("get", "/admin/audit", Access::Admin),
    ("get", "/admin/data", Access::Researcher),
    ("post", "/admin/data/situations", Access::Admin),
    ("post", "/admin/data/instruments", Access::Admin),
    ("post", "/admin/data/humans", Access::Admin),
    ("post", "/admin/data/model-results", Access::Admin),
    ("get", "/admin/data/sets/{set}", Access::Researcher),
    (
        "get",
        "/admin/data/sets/{set}/export/situations.csv",
        Access::ResearcherDownload,
    ),
];

#[test]
fn every_route_is_in_the_matrix() {
    for (m, p, a) in ROUTES {
        assert!(
            MATRIX
                .iter()
                .any(|(mm, pp, aa)| mm == m && pp == p && aa == a),
            "route {m} {p} ({a:?}) has no entry in the test matrix"
        );
    }
    assert_eq!(
        ROUTES.len(),
        MATRIX.len(),
        "the matrix lists routes that no longer exist"
    );
}

fn concrete(path: &str) -> String {
    let file = if path.contains("/export/") {
        "wide.csv"
    } else {
        "app.css"
    };
    path.replace("{study}", "matrix")
        .replace("{run}", "1")
        .replace("{action}", "pause")
        .replace("{page}", "consent")
        .replace("{user}", "1")
        .replace("{token}", "matrixtoken")
        .replace("{file}", file)
        .replace("{set}", "matrix")
        .replace("{chart}", "scatter.svg")
        .replace("{participant}", "nobody")
}

fn call(b: &Browser, method: &str, path: &str, csrf: Option<&str>) -> Reply {
    match method {
        "get" => b.get(path),
        _ => match csrf {
            Some(t) => b.post(path, &[("csrf", t)]),
            None => b.post(path, &[]),
        },
    }
}

fn the_route_matrix_holds_for_anonymous_researchers_and_admins(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "matrix", |_| {});
    let anon = app.browser();
    let researcher = signed_in(&app, users::Role::Researcher);
    let admin = signed_in(&app, users::Role::Admin);
    let rtoken = admin_csrf(&researcher);
    let atoken = admin_csrf(&admin);
    for (method, path, access) in ROUTES {
        let url = concrete(path);
        if *path == "/admin/logout" {
            continue; // checked below: it would end the sessions the matrix uses
        }
        match access {
            Access::Researcher | Access::Admin => {
                let r = call(&anon, method, &url, Some("x"));
                assert_eq!(r.status, 303, "anonymous {method} {url}");
                assert!(
                    r.location().unwrap().starts_with("/admin/login"),
                    "{method} {url}"
                );
            }
            Access::ResearcherDownload => {
                assert_eq!(
                    call(&anon, method, &url, Some("x")).status,
                    401,
                    "anonymous {method} {url}"
                );
            }
            Access::Public | Access::Participant => {}
        }
        if *access == Access::Admin {
            let r = call(&researcher, method, &url, Some(&rtoken));
            assert_eq!(r.status, 403, "researcher {method} {url}");
        }
        if matches!(
            access,
            Access::Researcher | Access::ResearcherDownload | Access::Admin
        ) {
            let r = call(&admin, method, &url, Some(&atoken));
            assert!(
                ![401, 403].contains(&r.status) && r.status < 500,
                "admin {method} {url}: {} {}",
                r.status,
                r.body
            );
            if *access != Access::Admin {
                let r = call(&researcher, method, &url, Some(&rtoken));
                assert!(
                    ![401, 403].contains(&r.status) && r.status < 500,
                    "researcher {method} {url}: {}",
                    r.status
                );
            }
        }
    }
    // Every POST rejects a missing or a wrong CSRF token, whoever sends it.
    for (method, path, access) in ROUTES.iter().filter(|(m, _, _)| *m == "post") {
        // Prolific's calls carry an HMAC signature instead (tests/api/prolific.rs: unsigned
        // ones get 401 and change nothing).
        if *path == "/prolific/webhook" {
            continue;
        }
        let url = concrete(path);
        let who = match access {
            Access::Public | Access::Participant => {
                let b = app.browser();
                b.open("/s/matrix"); // a participant with a CSRF cookie
                b
            }
            _ => signed_in_again(&app, &admin),
        };
        for token in [None, Some("wrong-token-wrong-token-wrong")] {
            let r = call(&who, method, &url, token);
            assert_eq!(
                r.status, 403,
                "{method} {url} with token {token:?}: {}",
                r.body
            );
        }
    }
    let r = admin.post("/admin/logout", &[("csrf", "nope")]);
    assert_eq!(r.status, 403);
}

fn signed_in_again(_app: &TestApp, admin: &Browser) -> Browser {
    Browser {
        base: admin.base.clone(),
        agent: admin.agent.clone(),
    }
}

fn login_failures_look_alike_and_are_throttled(db: TestDb) {
    let app = spawn_app(db);
    add_user(&app, "ada@example.org", users::Role::Admin);
    let b = app.browser();
    let t = Instant::now();
    let wrong = login_form(&b, "ada@example.org", "wrong password");
    let t_wrong = t.elapsed();
    let t = Instant::now();
    let unknown = login_form(&b, "nobody@example.org", "wrong password");
    let t_unknown = t.elapsed();
    assert_eq!(wrong.status, 401);
    assert_eq!(unknown.status, 401);
    let msg = |r: &Reply| r.body.contains("Wrong email or password.");
    assert!(msg(&wrong) && msg(&unknown));
    // Both run one Argon2 verification: similar cost (generous bounds, shared machine).
    let ratio = t_wrong.as_secs_f64() / t_unknown.as_secs_f64();
    assert!(
        (0.33..3.0).contains(&ratio),
        "wrong {t_wrong:?} vs unknown {t_unknown:?}"
    );
    // Four more failures for the account (five in all), then it is throttled, even with the
    // right password.
    for _ in 0..4 {
        assert_eq!(login_form(&b, "ada@example.org", "still wrong").status, 401);
    }
    let r = login_form(&b, "ada@example.org", PASSWORD);
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.body.contains("Too many failed sign-in attempts"));
    // The stored hash is Argon2id.
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    assert!(
        users::password_hash(&mut conn, "ada@example.org")
            .unwrap()
            .unwrap()
            .starts_with("$argon2id$")
    );
}

fn sessions_end_on_logout_and_on_password_change(db: TestDb) {
    let app = spawn_app(db);
    let b = signed_in(&app, users::Role::Admin);
    assert_eq!(b.get("/admin").status, 200);
    let r = b.post("/admin/logout", &[("csrf", &admin_csrf(&b))]);
    assert_eq!(r.status, 303);
    assert_eq!(b.get("/admin").status, 303, "signed out");

    let b = app.browser();
    assert_eq!(login_form(&b, "admin@example.org", PASSWORD).status, 303);
    assert_eq!(b.get("/admin").status, 200);
    // A password change on the server ends every session of the account.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["admin", "set-password", "admin@example.org"])
        .env("DATABASE_URL", &app.db.url)
        .env("EMOTIONBENCH_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(b"a brand new password\n")?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(b.get("/admin").status, 303, "the old session is dead");
    assert_eq!(
        login_form(&app.browser(), "admin@example.org", "a brand new password").status,
        303
    );
}

fn accounts_are_managed_from_the_command_line(db: TestDb) {
    let url = db.url.clone();
    let run = |args: &[&str], stdin: &str| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_emotionbench"))
            .args(args)
            .env("DATABASE_URL", &url)
            .env("EMOTIONBENCH_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        c.wait_with_output().unwrap()
    };
    let o = run(
        &[
            "admin",
            "create-user",
            "Rita@Example.org",
            "--role",
            "researcher",
        ],
        "a long enough secret\n",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(
        &[
            "admin",
            "create-user",
            "short@example.org",
            "--role",
            "admin",
        ],
        "short\n",
    );
    assert!(!o.status.success(), "short passwords are refused");
    let listed = ok(cli(&url, &["admin", "list-users"]));
    assert!(
        listed.contains("rita@example.org") && listed.contains("researcher"),
        "{listed}"
    );
    assert!(!listed.contains("short@"));
    ok(cli(&url, &["admin", "disable-user", "rita@example.org"]));
    assert!(ok(cli(&url, &["admin", "list-users"])).contains("disabled"));
    let pool = db::connect(&url, 1).unwrap();
    let mut conn = pool.get().unwrap();
    assert!(
        users::password_hash(&mut conn, "rita@example.org")
            .unwrap()
            .unwrap()
            .starts_with("$argon2id$")
    );
}

fn admins_create_open_edit_and_close_studies_and_researchers_watch(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "seed", |_| {}); // brings the demo situation set
    let admin = signed_in(&app, users::Role::Admin);
    let token = admin_csrf(&admin);
    let form: Vec<(&str, &str)> = vec![
        ("csrf", &token),
        ("title", "Spring wave"),
        ("slug", "spring"),
        ("consent_text", "Consent."),
        ("debrief_text", "Debrief."),
        ("instrument", "PANAS"),
        ("set", "demo"),
        ("target", "3"),
        ("shuffle", "on"),
        ("pid_param", "PROLIFIC_PID"),
        ("study_id_param", "STUDY_ID"),
        ("session_id_param", "SESSION_ID"),
        ("code_completed", "C0DE"),
        ("code_no_consent", ""),
        ("code_failed_check", ""),
        ("code_screened_out", ""),
        ("min_seconds", "5"),
        ("reservation_minutes", "30"),
        ("retention", "2099-12-31"),
    ];
    let r = admin.post("/admin/studies", &form);
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/admin/studies/spring")),
        "{}",
        r.body
    );
    // Draft: participants see a polite page.
    assert!(app.browser().open("/s/spring").0.body.contains("not open"));
    let r = admin.post(
        "/admin/studies/spring/status",
        &[("csrf", &token), ("status", "open")],
    );
    assert_eq!(r.status, 303);
    let participant = app.browser();
    let (_, at) = walk_to(&participant, "/s/spring", "situation");
    // Edit; a bad value re-renders with the error and changes nothing.
    let mut bad = form.clone();
    bad.retain(|(k, _)| *k != "target");
    bad.push(("target", "many"));
    let r = admin.post("/admin/studies/spring", &bad);
    assert_eq!(r.status, 422);
    assert!(r.body.contains("whole number"));
    let mut edit = form.clone();
    edit.retain(|(k, _)| *k != "title");
    edit.push(("title", "Spring wave (edited)"));
    assert_eq!(admin.post("/admin/studies/spring", &edit).status, 303);
    // Close: newcomers are turned away, the participant in progress may finish.
    assert_eq!(
        admin
            .post(
                "/admin/studies/spring/status",
                &[("csrf", &token), ("status", "closed")]
            )
            .status,
        303
    );
    assert!(app.browser().open("/s/spring").0.body.contains("not open"));
    let (_, end) = walk_to(&participant, &at, "done");
    assert!(end.ends_with("/done"), "{end}");
    // A researcher sees the monitor with the completion.
    let researcher = signed_in(&app, users::Role::Researcher);
    let m = researcher.get("/admin/studies/spring");
    assert_eq!(m.status, 200);
    assert!(m.body.contains("Spring wave (edited)"));
    assert!(
        !m.body.contains("http-equiv=\"refresh\""),
        "no meta refresh (axe: meta-refresh); a link refreshes"
    );
    assert!(
        m.body.contains("<th scope=\"row\">Completed</th><td>1"),
        "{}",
        m.body
    );
    let audit = admin.get("/admin/audit").body;
    for action in [
        "study.create",
        "study.open",
        "study.update",
        "study.closed",
        "login",
    ] {
        assert!(audit.contains(action), "audit log has {action}");
    }
}

fn admins_delete_a_participant_or_a_whole_study_with_confirmation(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "gone", |_| {});
    walk_to(
        &app.browser(),
        &format!("/s/gone?PROLIFIC_PID={PID}"),
        "situation",
    );
    walk_to(&app.browser(), "/s/gone", "situation");
    let admin = signed_in(&app, users::Role::Admin);
    let token = admin_csrf(&admin);
    let r = admin.post(
        "/admin/studies/gone/participants/delete",
        &[("csrf", &token), ("participant", PID)],
    );
    assert_eq!(r.status, 200);
    assert!(r.body.contains("Participant deleted"), "{}", r.body);
    let pool = app.pool();
    let count = |sql: &str| -> i64 {
        use diesel::prelude::*;
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut conn = pool.get().unwrap();
        diesel::sql_query(sql).get_result::<N>(&mut conn).unwrap().n
    };
    assert_eq!(count("SELECT COUNT(*) AS n FROM participants"), 1);
    assert_eq!(count("SELECT COUNT(*) AS n FROM responses"), 20);
    let r = admin.post(
        "/admin/studies/gone/delete",
        &[("csrf", &token), ("confirm", "wrong")],
    );
    assert_eq!(r.status, 422);
    assert_eq!(count("SELECT COUNT(*) AS n FROM studies"), 1);
    let r = admin.post(
        "/admin/studies/gone/delete",
        &[("csrf", &token), ("confirm", "gone")],
    );
    assert_eq!(r.status, 303);
    assert_eq!(count("SELECT COUNT(*) AS n FROM studies"), 0);
    assert_eq!(count("SELECT COUNT(*) AS n FROM responses"), 0);
    assert!(admin.get("/admin/audit").body.contains("study.delete"));
}

fn retention_deletes_participant_data_after_its_date(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "old", |_| {});
    make_study(&app, "kept", |_| {});
    walk_to(&app.browser(), "/s/old", "situation");
    walk_to(&app.browser(), "/s/kept", "situation");
    {
        use diesel::prelude::*;
        use emotionbench::store::schema::studies;
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        diesel::update(studies::table.filter(studies::slug.eq("old")))
            .set(
                studies::retention_until.eq(Some(
                    chrono::NaiveDate::from_ymd_opt(2020, 1, 1)
                        .unwrap()
                        .and_hms_opt(0, 0, 0)
                        .unwrap(),
                )),
            )
            .execute(&mut conn)
            .unwrap();
    }
    let out = ok(cli(&app.db.url, &["retention", "run"]));
    assert!(out.contains("old: deleted 1 participants"), "{out}");
    assert!(!out.contains("kept"));
    let again = ok(cli(&app.db.url, &["retention", "run"]));
    assert!(again.contains("old: deleted 0"), "{again}");
}

fn script_in_researcher_text_renders_inert_everywhere(db: TestDb) {
    let app = spawn_app(db);
    let payload = "<script>alert(1)</script>\"onload=alert(2) x=\"";
    make_study(&app, "xss", |c| {
        c.title = format!("Title {payload}");
        c.consent_text = format!("Consent {payload}");
        c.debrief_text = format!("Debrief {payload}");
    });
    {
        // A situation carrying the payload too: the only one of a fresh set.
        use emotionbench::domain::situation::{Situation, Valence};
        use emotionbench::store::{situations, studies};
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let s = Situation {
            key: "Anger-0_scenario-0".into(),
            emotion: "Anger".into(),
            factor_index: 0,
            factor_name: format!("Factor {payload}"),
            scenario_index: 0,
            text: format!("Situation {payload}"),
            variant_of: None,
            valence: Valence::Negative,
        };
        situations::import(&mut conn, "xss-set", "test", &[s]).unwrap();
        let set = situations::find_set(&mut conn, "xss-set").unwrap().unwrap();
        use diesel::prelude::*;
        use emotionbench::store::schema::studies as t;
        diesel::update(t::table.filter(t::slug.eq("xss")))
            .set(t::situation_set_id.eq(Some(set.0)))
            .execute(&mut conn)
            .unwrap();
        let _ = studies::load(&mut conn, "xss").unwrap();
    }
    let check = |what: &str, body: &str| {
        assert!(!body.contains("<script>alert"), "{what}: raw script tag");
        assert!(
            !body.contains("\"onload=alert"),
            "{what}: raw attribute break-out"
        );
    };
    let b = app.browser();
    let mut seen_escaped = 0;
    for page in crate::helpers::PAGES_TO_DEBRIEF.into_iter().chain(["done"]) {
        let (r, _) = walk_to(&b, "/s/xss", page);
        check(page, &r.body);
        if r.body.contains("&lt;script&gt;") || r.body.contains("&#60;script&#62;") {
            seen_escaped += 1;
        }
    }
    assert!(seen_escaped >= 3, "the text is shown, escaped");
    let admin = signed_in(&app, users::Role::Admin);
    for page in [
        "/admin",
        "/admin/studies/xss",
        "/admin/studies/xss/edit",
        "/admin/studies/xss/delete",
        "/",
    ] {
        let r = admin.get(page);
        assert_eq!(r.status, 200, "{page}");
        check(page, &r.body);
    }
}

on_both_backends!(
    the_route_matrix_holds_for_anonymous_researchers_and_admins,
    login_failures_look_alike_and_are_throttled,
    sessions_end_on_logout_and_on_password_change,
    accounts_are_managed_from_the_command_line,
    admins_create_open_edit_and_close_studies_and_researchers_watch,
    admins_delete_a_participant_or_a_whole_study_with_confirmation,
    retention_deletes_participant_data_after_its_date,
    script_in_researcher_text_renders_inert_everywhere,
);

fn researchers_download_the_exports_from_the_monitor(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "dl", |_| {});
    walk_to(
        &app.browser(),
        &format!("/s/dl?PROLIFIC_PID={PID}"),
        "never",
    );
    walk_to(&app.browser(), "/s/dl", "situation"); // one still in progress
    let researcher = signed_in(&app, users::Role::Researcher);
    let monitor = researcher.get("/admin/studies/dl");
    assert!(monitor.body.contains("/admin/studies/dl/export/wide.csv"));
    let wide = researcher.get("/admin/studies/dl/export/wide.csv");
    assert_eq!(wide.status, 200);
    assert!(wide.header("content-type").unwrap().starts_with("text/csv"));
    assert!(
        wide.header("content-disposition")
            .unwrap()
            .contains("dl-wide.csv")
    );
    assert_eq!(
        wide.body.lines().count(),
        2,
        "header + the completed participant: {}",
        wide.body
    );
    assert!(wide.body.contains(PID));
    // HEAD answers the headers without exporting (nor auditing an export).
    let head = researcher
        .agent
        .head(researcher.url("/admin/studies/dl/export/long.csv?status=all"))
        .call()
        .unwrap();
    assert_eq!(head.status(), 200);
    assert!(
        head.headers()
            .get("content-disposition")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("dl-long.csv"))
    );
    let admin = signed_in(&app, users::Role::Admin);
    let audit = admin.get("/admin/audit").body;
    assert!(
        audit.contains("export.wide") && !audit.contains("export.long"),
        "HEAD ran no export"
    );
    let long = researcher.get("/admin/studies/dl/export/long.csv?status=all");
    assert_eq!(long.body.lines().count(), 1 + 40 + 20, "everyone's answers");
    let codebook = researcher.get("/admin/studies/dl/export/codebook.csv");
    assert!(codebook.body.lines().count() > 50);
    assert_eq!(
        researcher.get("/admin/studies/dl/export/secret.csv").status,
        404
    );
    assert_eq!(
        researcher.get("/admin/studies/nope/export/wide.csv").status,
        404
    );
    assert!(admin.get("/admin/audit").body.contains("export.long"));
}

on_both_backends!(researchers_download_the_exports_from_the_monitor);

fn admins_create_watch_and_control_model_runs_in_the_browser(db: TestDb) {
    use emotionbench::config::{ProviderConfig, ProviderKind};
    use emotionbench::llm::fake::{FakeAction, FakeServer};
    let server =
        FakeServer::start(|req| FakeAction::answer(req, 3, std::time::Duration::ZERO)).unwrap();
    let app = crate::helpers::spawn_app_with(db, |s| {
        let mut p = ProviderConfig::new("fake", ProviderKind::Openai, &server.base_url());
        p.concurrency = 2;
        // A second provider whose key variable is missing: listed as "not set", never used.
        let mut q = ProviderConfig::new(
            "claude",
            ProviderKind::Anthropic,
            "https://api.anthropic.com/v1",
        );
        q.api_key_env = Some("EB_TEST_FAKE_KEY_NOT_SET".into());
        q.concurrency = 1;
        s.providers = vec![p, q];
        s.worker_slots = Some(2);
    });
    make_study(&app, "models", |_| {});
    let admin = signed_in(&app, users::Role::Admin);
    let providers = admin.get("/admin/providers");
    assert!(
        providers.body.contains("EB_TEST_FAKE_KEY_NOT_SET") && providers.body.contains("(not set)")
    );
    assert!(
        providers
            .body
            .contains("Worker slots inside this server: 2")
    );
    let token = admin_csrf(&admin);
    let form = |repeats: &str| -> Vec<(&'static str, String)> {
        vec![
            ("csrf", token.clone()),
            ("study", "models".into()),
            ("provider", "fake".into()),
            ("model", "tiny-1".into()),
            ("template", "eb-code".into()),
            ("repeats", repeats.into()),
            ("default_repeats", "2".into()),
            ("situations", "emotion:Anger".into()),
            ("seed", "11".into()),
            ("temperature", "0".into()),
        ]
    };
    let as_refs = |f: &Vec<(&'static str, String)>| {
        f.iter().map(|(k, v)| (*k, v.clone())).collect::<Vec<_>>()
    };
    let bad = as_refs(&form("lots"));
    let bad: Vec<(&str, &str)> = bad.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = admin.post("/admin/runs", &bad);
    assert_eq!(r.status, 422);
    assert!(r.body.contains("whole number"));
    let good = as_refs(&form("1"));
    let good: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = admin.post("/admin/runs", &good);
    assert_eq!(r.status, 303, "{}", r.body);
    let page = r.location().unwrap().to_owned();
    // The worker inside the server works the run: 2 default + 2 Anger situations x 1 repeat.
    let t = std::time::Instant::now();
    loop {
        let r = admin.get(&page);
        assert_eq!(r.status, 200);
        if r.body.contains("<span class=\"badge\">completed</span>") {
            assert!(
                r.body.contains("<th scope=\"row\">Done</th><td>4</td>"),
                "{}",
                r.body
            );
            assert!(r.body.contains("Latest replies"));
            assert!(r.body.contains("1. "), "raw replies are shown");
            break;
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(60),
            "the run did not finish: {}",
            r.body
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(server.requests().len(), 4);
    assert!(admin.get("/admin/runs").body.contains("tiny-1"));
    // Pause, resume and cancel a second run; each is audited.
    let r = admin.post("/admin/runs", &good);
    let second = r.location().unwrap().to_owned();
    for action in ["pause", "resume", "cancel"] {
        let r = admin.post(&format!("{second}/{action}"), &[("csrf", &token)]);
        assert_eq!(r.status, 303, "{action}");
    }
    assert!(
        admin.get(&second).body.contains("cancelled")
            || admin.get(&second).body.contains("completed")
    );
    let audit = admin.get("/admin/audit").body;
    for a in ["run.create", "run.pause", "run.resume", "run.cancel"] {
        assert!(audit.contains(a), "{a}");
    }
}

on_both_backends!(admins_create_watch_and_control_model_runs_in_the_browser);
