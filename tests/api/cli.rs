//! The command line as a user meets it: help, migrations, startup errors, the demo.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{Backend, TestDb, cli, ok, stderr};
use crate::on_both_backends;

const COMMANDS: &[&[&str]] = &[
    &[],
    &["serve"],
    &["demo"],
    &["migrate"],
    &["import"],
    &["import", "situations"],
    &["import", "instruments"],
    &["instruments"],
    &["instruments", "list"],
    &["situations"],
    &["situations", "list"],
];

#[test]
fn every_command_has_help() {
    for cmd in COMMANDS {
        let mut args: Vec<&str> = cmd.to_vec();
        args.push("--help");
        let out = cli("sqlite://unused.db", &args);
        let text = ok(out);
        assert!(text.contains("Usage: emotionbench"), "{cmd:?}: {text}");
    }
}

#[test]
fn a_bad_database_url_is_reported_at_once() {
    let t = Instant::now();
    let out = cli("mysql://root@localhost/x", &["migrate"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unsupported DATABASE_URL"),
        "{}",
        stderr(&out)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn an_unreachable_postgres_is_reported_at_once_with_the_cause() {
    let t = Instant::now();
    // Port 1 on loopback: nothing listens there, the kernel refuses at once.
    let out = cli(
        "postgres://postgres:secret@127.0.0.1:1/nowhere",
        &["migrate"],
    );
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("cannot connect to postgres database"), "{err}");
    assert!(err.contains("127.0.0.1"), "{err}");
    assert!(
        !err.contains("secret"),
        "the password must not be printed: {err}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
}

fn migrate_applies_once_then_reports_up_to_date(db: TestDb) {
    let first = ok(cli(&db.url, &["migrate"]));
    assert!(first.contains("applied 20261130000001"), "{first}");
    let second = ok(cli(&db.url, &["migrate"]));
    assert!(second.contains("up to date"), "{second}");
    let listed = ok(cli(&db.url, &["instruments", "list"]));
    assert!(
        listed.contains("PANAS") && listed.contains("builtin"),
        "{listed}"
    );
}

on_both_backends!(migrate_applies_once_then_reports_up_to_date);

/// Starts `emotionbench demo` and reads its output until the start-page link; returns the
/// child, the lines printed, and the base URL.
pub(crate) fn start_demo(data_dir: &std::path::Path) -> (Child, Vec<String>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env_remove("DATABASE_URL")
        .env("EMOTIONBENCH_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let done = line.trim_start().starts_with("start page:");
                lines.push(line);
                if done {
                    break;
                }
            }
            Err(_) => {
                let _ = child.kill();
                panic!("demo did not print its links within 10 s: {lines:?}");
            }
        }
    }
    let base = lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("start page:"))
        .map(|u| u.trim().trim_end_matches('/').to_owned())
        .unwrap();
    (child, lines, base)
}

#[test]
fn the_demo_serves_within_ten_seconds_and_shows_the_admin_password_once() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (mut child, lines, base) = start_demo(dir.path());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent.get(format!("{base}/")).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    let body = r.body_mut().read_to_string().unwrap();
    assert!(body.contains("EmotionBench demo"), "{body}");
    let text = lines.join("\n");
    assert!(text.contains("admin password:"), "{text}");
    assert!(text.contains("/s/demo"), "participant link: {text}");
    assert!(text.contains("/admin"), "admin link: {text}");
    child.kill().unwrap();
    child.wait().unwrap();

    // A second start reuses the data and does not print a password again.
    let (mut child, lines, base) = start_demo(dir.path());
    let text = lines.join("\n");
    assert!(text.contains("reused"), "{text}");
    assert!(!text.contains("admin password:"), "{text}");
    assert_eq!(
        agent
            .get(format!("{base}/"))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(dir.path().join("emotionbench.db").exists());
}

/// The schema as text: every table, column and index, and the applied migrations. A SQLite
/// file that does not exist is `missing` (a read command must not create it).
fn schema(db: &TestDb) -> String {
    use diesel::{Connection, QueryableByName, RunQueryDsl};
    #[derive(QueryableByName)]
    struct Line {
        #[diesel(sql_type = diesel::sql_types::Text)]
        line: String,
    }
    fn lines<C: Connection>(c: &mut C, queries: &[&str]) -> String
    where
        Line: QueryableByName<C::Backend>,
        diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Line>,
    {
        let mut out = String::new();
        for q in queries {
            for l in diesel::sql_query(*q).load::<Line>(c).unwrap() {
                out += &l.line;
                out.push('\n');
            }
        }
        out
    }
    match db.backend {
        Backend::Sqlite => {
            let path = db.url.strip_prefix("sqlite://").unwrap();
            if !std::path::Path::new(path).exists() {
                return "missing".into();
            }
            let mut c = diesel::SqliteConnection::establish(path).unwrap();
            let mut out = lines(
                &mut c,
                &[
                    "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') AS line \
                   FROM sqlite_master ORDER BY type, name",
                ],
            );
            if out.contains("__diesel_schema_migrations") {
                out += &lines(
                    &mut c,
                    &[
                        "SELECT 'migration ' || version AS line FROM __diesel_schema_migrations \
                       ORDER BY version",
                    ],
                );
            }
            out
        }
        Backend::Postgres => {
            let mut c = diesel::PgConnection::establish(&db.url).unwrap();
            let mut out = lines(
                &mut c,
                &[
                    "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || \
                     is_nullable AS line FROM information_schema.columns \
                     WHERE table_schema = 'public' ORDER BY table_name, column_name",
                    "SELECT indexname || ' ' || indexdef AS line FROM pg_indexes \
                     WHERE schemaname = 'public' ORDER BY indexname",
                ],
            );
            if out.contains("__diesel_schema_migrations") {
                out += &lines(
                    &mut c,
                    &[
                        "SELECT 'migration ' || version AS line FROM __diesel_schema_migrations \
                       ORDER BY version",
                    ],
                );
            }
            out
        }
    }
}

/// Migrates, then reverts the newest migration with its own down.sql: a database an older
/// binary left behind.
fn make_outdated(db: &TestDb) {
    use diesel::connection::SimpleConnection;
    ok(cli(&db.url, &["migrate"]));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(match db.backend {
        Backend::Sqlite => "migrations/sqlite",
        Backend::Postgres => "migrations/postgres",
    });
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let newest = names.last().unwrap();
    let down = std::fs::read_to_string(dir.join(newest).join("down.sql")).unwrap();
    let version: String = newest
        .split('_')
        .next()
        .unwrap()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let revert =
        format!("{down}\nDELETE FROM __diesel_schema_migrations WHERE version = '{version}';");
    match db.backend {
        Backend::Sqlite => {
            use diesel::Connection;
            let path = db.url.strip_prefix("sqlite://").unwrap();
            diesel::SqliteConnection::establish(path)
                .unwrap()
                .batch_execute(&revert)
                .unwrap();
        }
        Backend::Postgres => {
            use diesel::Connection;
            diesel::PgConnection::establish(&db.url)
                .unwrap()
                .batch_execute(&revert)
                .unwrap();
        }
    }
}

/// `runs list` and `report` only read: on an empty or an outdated database they stop, exit
/// non-zero and name `emotionbench migrate`, and the schema is as it was.
fn read_commands_never_change_the_schema(db: TestDb) {
    let check = |db: &TestDb, what: &str| {
        for args in [&["runs", "list"][..], &["report", "--study", "demo"][..]] {
            let before = schema(db);
            let out = cli(&db.url, args);
            let err = stderr(&out);
            assert!(!out.status.success(), "{what} {args:?} succeeded: {err}");
            assert!(
                err.contains("emotionbench migrate"),
                "{what} {args:?}: {err}"
            );
            assert_eq!(schema(db), before, "{what} {args:?} changed the schema");
        }
    };
    check(&db, "empty");
    make_outdated(&db);
    let outdated = schema(&db);
    assert!(outdated.contains("migration "), "{outdated}");
    check(&db, "outdated");
    // A write command with auto_migrate off stops the same way; with it on (the default) it
    // brings the database up to date, as `serve` does.
    let out = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["runs", "pause", "1"])
        .env("DATABASE_URL", &db.url)
        .env("EMOTIONBENCH_AUTO_MIGRATE", "false")
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "warn")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("emotionbench migrate"),
        "{}",
        stderr(&out)
    );
    assert_eq!(schema(&db), outdated);
    let out = cli(&db.url, &["runs", "pause", "1"]);
    assert!(stderr(&out).contains("no run 1"), "{}", stderr(&out));
    assert_ne!(schema(&db), outdated, "auto_migrate did not migrate");
    ok(cli(&db.url, &["runs", "list"]));
}

on_both_backends!(read_commands_never_change_the_schema);
