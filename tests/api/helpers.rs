//! Test support: fresh databases (a temp SQLite file, a fresh Postgres database), the real
//! binary, an in-process server on port 0, the upstream data when present.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, Once, mpsc};

use diesel::Connection;
use diesel::connection::SimpleConnection;
use emotionbench::store::{self, db, instruments, situations};
use emotionbench::{Application, Settings};

/// The protocol's pages up to the last one a participant submits, in order (their URL names:
/// `domain::survey::Page::as_str`); "done" follows.
pub const PAGES_TO_DEBRIEF: [&str; 7] = [
    "consent",
    "demographics",
    "feelings-now",
    "situation",
    "feelings-imagined",
    "check",
    "debrief",
];

/// A loopback port that was free a moment ago (for a child process to bind).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// A dependency a test needs is missing: fail under CI, skip (with a message) elsewhere.
pub fn missing(what: &str) -> bool {
    assert!(!in_ci(), "CI=true but {what} is not available");
    eprintln!("SKIPPED: {what} is not available (set CI=true to make this a failure)");
    false
}

/// `../shared/emotionbench` (or $EMOTIONBENCH_UPSTREAM_DATA): the upstream study data, never
/// committed to this repository.
pub fn upstream() -> Option<PathBuf> {
    let dir = std::env::var_os("EMOTIONBENCH_UPSTREAM_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/emotionbench"));
    if dir.join("situations.json").exists() {
        Some(dir)
    } else {
        missing(&format!(
            "the upstream EmotionBench data at {}",
            dir.display()
        ));
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database that exists for one test only.
pub struct TestDb {
    pub url: String,
    pub backend: Backend,
    _dir: Option<tempfile::TempDir>,
    pg_name: Option<String>,
}

fn pg_admin_url() -> String {
    std::env::var("EMOTIONBENCH_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

impl TestDb {
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("test.db").display());
        TestDb {
            url,
            backend: Backend::Sqlite,
            _dir: Some(dir),
            pg_name: None,
        }
    }

    /// A fresh database on the test Postgres server, or None (skip) when it is unreachable
    /// outside CI.
    pub fn postgres() -> Option<TestDb> {
        let admin = pg_admin_url();
        // Before libpq's first connection in this process (see the function).
        emotionbench::store::db::tls_without_exit_cleanup();
        let mut conn = match diesel::PgConnection::establish(&admin) {
            Ok(c) => c,
            Err(e) => {
                missing(&format!("Postgres at {admin} ({e})"));
                return None;
            }
        };
        let name = format!(
            "eb_test_{}_{}",
            std::process::id(),
            emotionbench::auth::password::random_secret(10).to_lowercase()
        );
        conn.batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
        Some(TestDb {
            url: format!("{base}/{name}"),
            backend: Backend::Postgres,
            _dir: None,
            pg_name: Some(name),
        })
    }

    /// A database on a Postgres server of the test's own (see `crash::OwnPostgres`), left for
    /// that server to take with it.
    pub fn postgres_at(url: String) -> TestDb {
        TestDb {
            url,
            backend: Backend::Postgres,
            _dir: None,
            pg_name: None,
        }
    }

    pub fn of(backend: Backend) -> Option<TestDb> {
        match backend {
            Backend::Sqlite => Some(Self::sqlite()),
            Backend::Postgres => Self::postgres(),
        }
    }

    /// A migrated pool on this database.
    pub fn pool(&self) -> store::Pool {
        let pool = db::connect(&self.url, 4).unwrap();
        let mut conn = pool.get().unwrap();
        db::migrate(&mut conn).unwrap();
        instruments::ensure_builtin(&mut conn).unwrap();
        pool
    }

    /// Everything the importers can write, as text: compare two snapshots to prove that a
    /// failed command changed nothing.
    pub fn snapshot(&self) -> String {
        let pool = db::connect(&self.url, 1).unwrap();
        let mut conn = pool.get().unwrap();
        let mut out = String::new();
        for set in situations::sets(&mut conn).unwrap() {
            out += &format!("{set:?}\n");
            for s in situations::list(&mut conn, set.id).unwrap() {
                out += &format!("{s:?}\n");
            }
        }
        for i in instruments::list(&mut conn).unwrap() {
            out += &format!("{:?}\n", instruments::load(&mut conn, &i.key).unwrap());
        }
        out
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(name) = &self.pg_name {
            if let Ok(mut conn) = diesel::PgConnection::establish(&pg_admin_url()) {
                let _ = conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        }
    }
}

/// Compares two snapshots, showing the first differing line instead of both dumps.
#[track_caller]
pub fn assert_same(now: &str, before: &str) {
    if now != before {
        let diff = now
            .lines()
            .zip(before.lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("now:    {a}\nbefore: {b}"))
            .unwrap_or_else(|| {
                format!(
                    "{} lines now, {} before",
                    now.lines().count(),
                    before.lines().count()
                )
            });
        panic!("the database changed:\n{diff}");
    }
}

/// Runs one test body on SQLite and on Postgres, as two tests.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name($crate::helpers::TestDb::sqlite());
            }
            #[test]
            fn postgres() {
                if let Some(db) = $crate::helpers::TestDb::postgres() {
                    super::$name(db);
                }
            }
        }
    )*};
}

/// The real binary with DATABASE_URL set and no config file of the developer's leaking in.
pub fn cli(db_url: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(args)
        .current_dir(dir.path())
        .env("DATABASE_URL", db_url)
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "warn")
        .output()
        .unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "command failed: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// The application started in-process exactly as `serve` starts it, on a random port.
pub struct TestApp {
    pub base: String,
    pub agent: ureq::Agent,
    pub db: TestDb,
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Every log line of the in-process servers of this test binary, as `serve` would write them to
/// stderr (without colours). Servers of tests running at once share it: a test picks its own
/// lines by request id ([`TestApp::log_lines_with`]).
static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogSink;

impl std::io::Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends the process's tracing events to [`LOGS`] (once; `info` as `serve`'s default).
fn capture_logs() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_writer(|| LogSink)
            .with_ansi(false)
            .try_init();
    });
}

pub fn spawn_app(db: TestDb) -> TestApp {
    spawn_app_with(db, |_| {})
}

/// Like `spawn_app`, with settings adjusted first (providers, worker slots, limits).
pub fn spawn_app_with(db: TestDb, adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let mut settings = Settings {
        database_url: db.url.clone(),
        bind: "127.0.0.1:0".into(),
        http_workers: 2,
        // Every test participant comes from 127.0.0.1; the limit's own test sets one.
        new_participants_per_address: 0,
        ..Settings::default()
    };
    adjust(&mut settings);
    capture_logs();
    let pool = db.pool();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let system = actix_web::rt::System::new();
        system.block_on(async move {
            let app = Application::build(settings, pool).unwrap();
            tx.send(app.port()).unwrap();
            let _ = app.run_until_stopped().await;
        });
    });
    let port = rx.recv().unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    TestApp {
        base: format!("http://127.0.0.1:{port}"),
        agent,
        db,
    }
}

impl TestApp {
    pub fn get(&self, path: &str) -> Reply {
        let mut r = self
            .agent
            .get(format!("{}{path}", self.base))
            .call()
            .unwrap();
        let headers = r
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        Reply {
            status: r.status().as_u16(),
            headers,
            body: r.body_mut().read_to_string().unwrap(),
        }
    }
}

/// A browser: its own cookie jar, no automatic redirects (tests follow them explicitly).
pub struct Browser {
    pub base: String,
    pub agent: ureq::Agent,
}

impl TestApp {
    /// A migrated database without an in-process server (tests that run the real binary).
    pub fn prepare(db: TestDb) -> TestApp {
        db.pool();
        TestApp {
            base: String::new(),
            agent: ureq::Agent::config_builder().build().into(),
            db,
        }
    }

    pub fn browser(&self) -> Browser {
        Browser {
            base: self.base.clone(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .build()
                .into(),
        }
    }

    /// The log lines (of every in-process server) that contain `needle`, e.g. a request id
    /// from a reply's `X-Request-Id`. A request's line is written before its response is sent.
    pub fn log_lines_with(&self, needle: &str) -> Vec<String> {
        let logs = LOGS.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&logs)
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }

    /// A migrated connection pool on the app's database.
    pub fn pool(&self) -> store::Pool {
        db::connect(&self.db.url, 2).unwrap()
    }
}

fn reply(mut r: ureq::http::Response<ureq::Body>) -> Reply {
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    Reply {
        status: r.status().as_u16(),
        headers,
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

impl Reply {
    /// The redirect target, if this is a redirect.
    pub fn location(&self) -> Option<&str> {
        (300..400)
            .contains(&self.status)
            .then(|| self.header("location"))
            .flatten()
    }

    /// The CSRF token of the page's form.
    pub fn csrf(&self) -> String {
        let marker = "name=\"csrf\" value=\"";
        let start = self
            .body
            .find(marker)
            .map(|i| i + marker.len())
            .expect("page has no CSRF field");
        self.body[start..].split('"').next().unwrap().to_owned()
    }
}

/// The hidden fields of a page's form other than the CSRF token (a visitor's consent form
/// carries its visit id and the link's Prolific ids in them).
pub fn hidden_fields(body: &str) -> Vec<(String, String)> {
    body.split("<input type=\"hidden\" name=\"")
        .skip(1)
        .filter_map(|part| {
            let (name, rest) = part.split_once('"')?;
            let value = rest.strip_prefix(" value=\"")?.split('"').next()?;
            (name != "csrf").then(|| (name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// A visitor's consent form from its page: its hidden fields, its CSRF token (or `csrf`), and
/// the answer (`yes` or `no`).
pub fn consent_form(page: &Reply, csrf: Option<&str>, answer: &str) -> Vec<(String, String)> {
    let mut form = hidden_fields(&page.body);
    form.push((
        "csrf".into(),
        csrf.map_or_else(|| page.csrf(), str::to_owned),
    ));
    form.push(("consent".into(), answer.into()));
    form
}

/// `(k, v)` pairs as the borrowed fields `Browser::post` takes.
pub fn fields(owned: &[(String, String)]) -> Vec<(&str, &str)> {
    owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// The survey page a path names (the consent page's URL may carry the link's ids on).
pub fn page_name(path: &str) -> &str {
    let bare = path.split('?').next().unwrap_or(path);
    bare.rsplit('/').next().unwrap_or(bare)
}

impl Browser {
    pub fn url(&self, path: &str) -> String {
        if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        }
    }

    pub fn get(&self, path: &str) -> Reply {
        reply(self.agent.get(self.url(path)).call().unwrap())
    }

    pub fn post(&self, path: &str, fields: &[(&str, &str)]) -> Reply {
        reply(
            self.agent
                .post(self.url(path))
                .send_form(fields.iter().copied())
                .unwrap(),
        )
    }

    /// GET, following local redirects; returns the final reply and its path.
    pub fn open(&self, path: &str) -> (Reply, String) {
        let mut path = path.to_owned();
        for _ in 0..10 {
            let r = self.get(&path);
            match r.location() {
                Some(l) if l.starts_with('/') => path = l.to_owned(),
                _ => return (r, path),
            }
        }
        panic!("redirect loop at {path}");
    }
}
