//! Crash safety: kill -9 the real server while 200 participants are mid-flow, restart it, and
//! let them continue. Every acknowledged answer (the next page was served) must be stored,
//! none twice, and every participant must be able to finish.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::helpers::{TestApp, TestDb, free_port};
use crate::on_both_backends;

const PARTICIPANTS: usize = 200;

fn start_server(url: &str, port: u16) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .env("DATABASE_URL", url)
        .env("EMOTIONBENCH_LOG", "error")
        .env("EMOTIONBENCH_POOL_SIZE", "8")
        // Every simulated participant comes from this one address.
        .env("EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// The answer a participant gives to an item: fixed per participant, phase and item, so the
/// stored value can be checked.
fn value(participant: usize, phase_after: bool, item: u32) -> u32 {
    ((participant as u32 * 7 + item * 3 + u32::from(phase_after)) % 5) + 1
}

/// One participant, retrying any request that fails because the server is down. Returns the
/// number of acknowledged submits.
fn participant(base: &str, n: usize, acked: &AtomicUsize, deadline: Instant) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let pid = format!("crash{n}");
    let entry = format!("{base}/s/crash?PROLIFIC_PID={pid}");
    let mut url = entry.clone();
    loop {
        if Instant::now() > deadline {
            return Err(format!("{pid}: out of time at {url}"));
        }
        let retry = || std::thread::sleep(Duration::from_millis(100));
        let mut r = match agent.get(&url).call() {
            Ok(r) => r,
            Err(_) => {
                retry();
                url = entry.clone();
                continue;
            }
        };
        let status = r.status().as_u16();
        let location = r
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Ok(body) = r.body_mut().read_to_string() else {
            retry();
            continue;
        };
        if status == 303 {
            url = format!("{base}{}", location.ok_or("redirect without location")?);
            continue;
        }
        if status >= 500 {
            retry();
            url = entry.clone();
            continue;
        }
        if status != 200 {
            return Err(format!("{pid}: GET {url} -> {status}"));
        }
        let page = crate::helpers::page_name(&url).to_owned();
        if page == "done" {
            return Ok(());
        }
        let csrf = body
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .ok_or_else(|| format!("{pid}: no csrf on {page}"))?
            .to_owned();
        let mut fields: Vec<(String, String)> = match page.as_str() {
            "consent" => {
                let mut f = crate::helpers::hidden_fields(&body);
                f.push(("consent".into(), "yes".into()));
                f
            }
            "demographics" => [
                "gender",
                "year_of_birth",
                "country",
                "employment_status",
                "education",
            ]
            .iter()
            .map(|f| (f.to_string(), "Prefer not to say".to_string()))
            .collect(),
            "feelings-now" | "feelings-imagined" => {
                let after = page == "feelings-imagined";
                let mut items: Vec<u32> = body
                    .split("name=\"item-")
                    .skip(1)
                    .filter_map(|p| p.split('"').next()?.parse().ok())
                    .collect();
                items.dedup();
                items
                    .iter()
                    .map(|i| (format!("item-{i}"), value(n, after, *i).to_string()))
                    .collect()
            }
            "check" => vec![("answer".into(), "A little".into())],
            _ => vec![],
        };
        fields.push(("csrf".into(), csrf));
        match agent
            .post(&url)
            .send_form(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        {
            Ok(r) if r.status().as_u16() == 303 => {
                acked.fetch_add(1, Ordering::Relaxed);
                let loc = r
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                if loc.starts_with("https://app.prolific.com/") {
                    return Ok(());
                }
                url = format!("{base}{loc}");
            }
            // Not acknowledged (server killed mid-request, or a 5xx): ask where we are again.
            _ => {
                retry();
                url = entry.clone();
            }
        }
    }
}

/// Sends `PARTICIPANTS` participants through the survey at `base` and, once a good share of
/// their submits are acknowledged while most are still mid-flow, runs `disrupt`; asserts that
/// every participant then finishes. Returns how many submits were acknowledged when `disrupt`
/// began, and what it returned.
fn all_finish_across<T>(base: &str, disrupt: impl FnOnce() -> T) -> (usize, T) {
    let acked = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(PARTICIPANTS + 1));
    let deadline = Instant::now() + Duration::from_secs(240);
    let handles: Vec<_> = (0..PARTICIPANTS)
        .map(|n| {
            let (base, acked, start) = (base.to_owned(), acked.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                participant(&base, n, &acked, deadline)
            })
        })
        .collect();
    start.wait();
    let t = Instant::now();
    while acked.load(Ordering::Relaxed) < PARTICIPANTS * 3 && t.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let at = acked.load(Ordering::Relaxed);
    let out = disrupt();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} participants could not finish: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    (at, out)
}

fn a_server_killed_mid_flow_loses_no_acknowledged_answer(db: TestDb) {
    let url = db.url.clone();
    // Prepare the study with the real binary's own command, on a migrated database.
    let app = TestApp::prepare(db);
    crate::survey::make_study(&app, "crash", |c| c.target_per_situation = 1_000);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let server = start_server(&url, port);
    // Kill it hard once a good share of the submits are in, while most are mid-flow.
    let (at_kill, mut server) = all_finish_across(&base, || {
        let mut server = server;
        server.kill().unwrap(); // SIGKILL
        server.wait().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        start_server(&url, port)
    });
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        at_kill < PARTICIPANTS * 7,
        "the kill happened mid-flow ({at_kill} submits acknowledged)"
    );
    assert_every_answer_stored_once(&app);
}

on_both_backends!(a_server_killed_mid_flow_loses_no_acknowledged_answer);

/// Every participant: completed, 40 answers, each exactly the value submitted, none twice.
fn assert_every_answer_stored_once(app: &TestApp) {
    use diesel::prelude::*;
    use emotionbench::store::schema::{participants, responses};
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let rows: Vec<(Option<String>, String, String, i32, i32)> = responses::table
        .inner_join(participants::table)
        .select((
            participants::prolific_pid,
            participants::status,
            responses::phase,
            responses::item_number,
            responses::value,
        ))
        .load(&mut conn)
        .unwrap();
    assert_eq!(rows.len(), PARTICIPANTS * 40, "answers stored");
    for (pid, status, phase, item, v) in &rows {
        let n: usize = pid
            .as_deref()
            .unwrap()
            .trim_start_matches("crash")
            .parse()
            .unwrap();
        assert_eq!(status, "completed");
        assert_eq!(
            *v as u32,
            value(n, phase == "evoked", *item as u32),
            "{pid:?} {phase} {item}"
        );
    }
    let completed: i64 = participants::table
        .filter(participants::status.eq("completed"))
        .count()
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(completed, PARTICIPANTS as i64);
}

/// A Postgres server of this test's own (`initdb` in a temporary directory, its own port), so
/// that restarting it under load does not cut off the other tests, which share the test server.
/// Stopped (immediately) and removed on drop.
pub struct OwnPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
}

impl OwnPostgres {
    /// `None` (a skip, a failure under CI) when the server binaries are not installed: they are
    /// in `$EMOTIONBENCH_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin` (Debian's).
    pub fn start() -> Option<OwnPostgres> {
        let bin = std::env::var_os("EMOTIONBENCH_PG_BIN")
            .map(PathBuf::from)
            .or_else(|| {
                let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
                    .ok()?
                    .filter_map(|e| Some(e.ok()?.path().join("bin")))
                    .filter(|d| d.join("pg_ctl").exists())
                    .collect();
                dirs.sort_by_key(|d| {
                    let version = d.parent().and_then(|v| v.file_name());
                    version.and_then(|v| v.to_str()?.parse::<u32>().ok())
                });
                dirs.pop()
            })
            .filter(|d| d.join("initdb").exists());
        let Some(bin) = bin else {
            crate::helpers::missing("the Postgres server binaries (initdb, pg_ctl)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let pg = OwnPostgres {
            dir,
            bin,
            port: free_port(),
        };
        // initdb refuses to run as root: the cluster then belongs to the `postgres` user.
        if OwnPostgres::as_root() {
            pg.run("chown", &["-R", "postgres:postgres", &pg.path("")], false);
        }
        let data = pg.path("data");
        pg.run(
            "initdb",
            &["-D", &data, "-U", "postgres", "--auth=trust", "--no-sync"],
            true,
        );
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=50",
            pg.port,
            pg.path("")
        );
        let log = pg.path("log");
        pg.run(
            "pg_ctl",
            &["-D", &data, "-o", &options, "-l", &log, "-w", "start"],
            true,
        );
        Some(pg)
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// What `pg_ctlcluster … restart` does: a fast shutdown (open connections are cut, the
    /// WAL flushed), then a start on the same settings, waiting until it accepts connections.
    pub fn restart(&self) {
        // `-l` again: pg_ctl does not keep it, and a server writing to our pipe would keep
        // `output()` waiting for ever.
        let (data, log) = (self.path("data"), self.path("log"));
        self.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-m", "fast", "-w", "restart"],
            true,
        );
    }

    fn as_root() -> bool {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Runs `program` (one of the server binaries when `server`), as `postgres` under root.
    fn run(&self, program: &str, args: &[&str], server: bool) {
        let program = if server {
            self.bin.join(program).display().to_string()
        } else {
            program.to_owned()
        };
        let mut cmd = if server && Self::as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", &program]);
            c
        } else {
            Command::new(&program)
        };
        let out = cmd.args(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let data = self.path("data");
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.run(
                "pg_ctl",
                &["-D", &data, "-m", "immediate", "-w", "stop"],
                true,
            )
        }));
    }
}

/// Postgres itself restarted (a fast shutdown, as `pg_ctlcluster … restart` does) while 200
/// participants are mid-flow: every request in flight on a cut connection fails (not
/// acknowledged, so the participant sends it again), the connections that met the restart are
/// dropped by the pool (`store::db::ConnectionManager::has_broken`) and fresh ones opened, and in the end every
/// participant finishes with every answer stored once, as submitted (issue #19).
#[test]
fn a_postgres_restart_under_load_loses_no_acknowledged_answer() {
    let Some(pg) = OwnPostgres::start() else {
        return;
    };
    let url = pg.url();
    let app = TestApp::prepare(TestDb::postgres_at(url.clone()));
    crate::survey::make_study(&app, "crash", |c| c.target_per_situation = 1_000);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = start_server(&url, port);
    let (at_restart, ()) = all_finish_across(&base, || pg.restart());
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        at_restart < PARTICIPANTS * 7,
        "the restart happened mid-flow ({at_restart} submits acknowledged)"
    );
    assert_every_answer_stored_once(&app);
}

fn an_export_killed_midway_leaves_a_clearly_partial_file_and_the_database_untouched(db: TestDb) {
    let url = db.url.clone();
    let app = TestApp::prepare(db);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::generate_study(&mut conn, "big", 20_000, 3).unwrap();
    }
    let counts = || {
        use diesel::prelude::*;
        use emotionbench::store::schema::{audit_log, participants, responses};
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let p: i64 = participants::table.count().get_result(&mut conn).unwrap();
        let r: i64 = responses::table.count().get_result(&mut conn).unwrap();
        let a: i64 = audit_log::table.count().get_result(&mut conn).unwrap();
        (p, r, a)
    };
    let before = counts();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.csv");
    let partial = dir.path().join("long.csv.partial");
    let mut child = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["export", "long", "--study", "big", "-o"])
        .arg(&out)
        .env("DATABASE_URL", &url)
        .env("EMOTIONBENCH_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once it has written something but long before the 800,000 rows are out.
    let t = Instant::now();
    loop {
        let len = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        if len > 256 * 1024 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the export wrote nothing"
        );
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the export finished before it could be killed ({status}); make the study bigger"
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !out.exists(),
        "an interrupted export must not look finished"
    );
    let text = std::fs::read_to_string(&partial).unwrap();
    assert!(
        text.lines().count() < 800_001,
        "the partial file is incomplete"
    );
    assert_eq!(counts(), before, "the database is untouched");
    // A complete run renames the file into place.
    let ok = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["export", "wide", "--study", "big", "-o"])
        .arg(dir.path().join("wide.csv"))
        .env("DATABASE_URL", &url)
        .env("EMOTIONBENCH_LOG", "error")
        .output()
        .unwrap();
    assert!(ok.status.success());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("wide.csv"))
            .unwrap()
            .lines()
            .count(),
        20_001
    );
    assert!(!dir.path().join("wide.csv.partial").exists());
}

on_both_backends!(an_export_killed_midway_leaves_a_clearly_partial_file_and_the_database_untouched);
