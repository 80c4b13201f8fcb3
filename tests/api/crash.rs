//! Crash safety: kill -9 the real server while 200 participants are mid-flow, restart it, and
//! let them continue. Every acknowledged answer (the next page was served) must be stored,
//! none twice, and every participant must be able to finish.

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

fn a_server_killed_mid_flow_loses_no_acknowledged_answer(db: TestDb) {
    let url = db.url.clone();
    // Prepare the study with the real binary's own command, on a migrated database.
    let app = TestApp::prepare(db);
    crate::survey::make_study(&app, "crash", |c| c.target_per_situation = 1_000);
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = start_server(&url, port);
    let acked = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(PARTICIPANTS + 1));
    let deadline = Instant::now() + Duration::from_secs(240);
    let handles: Vec<_> = (0..PARTICIPANTS)
        .map(|n| {
            let (base, acked, start) = (base.clone(), acked.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                participant(&base, n, &acked, deadline)
            })
        })
        .collect();
    start.wait();
    // Kill it hard once a good share of the submits are in, while most are mid-flow.
    let t = Instant::now();
    while acked.load(Ordering::Relaxed) < PARTICIPANTS * 3 && t.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let at_kill = acked.load(Ordering::Relaxed);
    server.kill().unwrap(); // SIGKILL
    server.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut server = start_server(&url, port);
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    server.kill().unwrap();
    server.wait().unwrap();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} participants could not finish: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(
        at_kill < PARTICIPANTS * 7,
        "the kill happened mid-flow ({at_kill} submits acknowledged)"
    );

    // Every participant: completed, 40 answers, each exactly the value submitted, none twice.
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

on_both_backends!(a_server_killed_mid_flow_loses_no_acknowledged_answer);

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
