//! Scale-out on Postgres (issue #8): two `serve` replicas and two `worker` processes on one
//! database behind a local nginx. The product's own load generator (`bench survey`) drives
//! participants through nginx while a model run, queued at the start, is worked against the
//! fake provider; one replica is killed with SIGKILL once a third of the participants are done.
//!
//! Who retries what when the replica dies:
//! - nginx (the proxy settings of `deploy/nginx.conf`, used verbatim: `proxy_next_upstream
//!   error timeout`) passes a request it could not deliver (connection refused) to the other
//!   replica, whatever its method, and a GET that failed at the dead one as well. It never
//!   replays a POST that reached the dead replica: the client gets a 502.
//! - The load generator (`--retries`) sends such a request again. That is safe for the survey's
//!   POSTs: the page state machine stores a submit once (see `src/bench/survey.rs`,
//!   `resendable`).

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use diesel::prelude::*;
use emotionbench::llm::fake::{FakeAction, FakeServer};
use emotionbench::store::schema::{model_trials, participants, studies};

use crate::helpers::{TestApp, TestDb, cli, free_port, missing, ok};
use crate::runs::{assert_each_trial_done_once, command, config, eb, provider, run_id, run_status};

const PARTICIPANTS: i64 = 200;
const CONCURRENCY: &str = "25";
/// 20 default-measure trials + 5 for each of the demo set's 16 situations.
const TRIALS: usize = 100;
/// Provider requests answered before the kill at most (see the fake provider below).
const BEFORE_KILL: u64 = 40;

/// nginx: `$EMOTIONBENCH_NGINX`, else on PATH, else in the sbin directories (Debian installs it
/// in /usr/sbin, which is not on every user's PATH).
fn nginx() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("EMOTIONBENCH_NGINX") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

fn wait_for_port(port: u16, what: &str, child: &mut Child) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited before listening: {status}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every process the test started, stopped and reaped when the test ends, passing or not:
/// SIGKILL, except for nginx, which gets SIGTERM first (its worker processes outlive a master
/// killed with SIGKILL).
#[derive(Default)]
struct Processes(Vec<(Child, bool)>);

impl Processes {
    fn add(&mut self, child: Child) -> usize {
        self.0.push((child, false));
        self.0.len() - 1
    }

    fn add_graceful(&mut self, child: Child) -> usize {
        self.0.push((child, true));
        self.0.len() - 1
    }

    fn get(&mut self, i: usize) -> &mut Child {
        &mut self.0[i].0
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (child, graceful) in &mut self.0 {
            if *graceful && matches!(child.try_wait(), Ok(None)) {
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                let t = Instant::now();
                while matches!(child.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(10)
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// The block of `text` that starts at the line `header` (e.g. `location / {`), braces included.
fn block<'a>(text: &'a str, header: &str) -> &'a str {
    let start = text
        .find(header)
        .unwrap_or_else(|| panic!("deploy/nginx.conf has no `{header}`"));
    let mut depth = 0;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[start..=start + i];
                }
            }
            _ => {}
        }
    }
    panic!("deploy/nginx.conf: `{header}` is not closed");
}

/// A small nginx configuration in `dir`: deploy/nginx.conf's upstream block (its two replicas
/// on our two ports, with their `max_fails`/`fail_timeout`/`keepalive`) and its `location /`
/// block verbatim, on plain HTTP at 127.0.0.1:`port`, with every file nginx writes inside
/// `dir`. Each request is logged with the upstream(s) that served it.
fn nginx_conf(dir: &Path, port: u16, upstreams: [u16; 2]) -> String {
    let deploy =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/nginx.conf"))
            .unwrap();
    let upstream = block(&deploy, "upstream emotionbench {");
    assert!(
        upstream.contains("server serve-1:8080") && upstream.contains("server serve-2:8080"),
        "deploy/nginx.conf's upstream names serve-1:8080 and serve-2:8080"
    );
    let upstream = upstream
        .replace("serve-1:8080", &format!("127.0.0.1:{}", upstreams[0]))
        .replace("serve-2:8080", &format!("127.0.0.1:{}", upstreams[1]));
    let location = block(&deploy, "location / {");
    assert!(location.contains("proxy_pass http://emotionbench;"));
    let d = dir.display();
    format!(
        "worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format upstreams '$msec $request_method $status \"$upstream_addr\" \"$upstream_status\" $request_uri';
    access_log {d}/access.log upstreams;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    keepalive_timeout 65;
    {upstream}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 64k;
        {location}
    }}
}}
"
    )
}

/// One line of the access log.
struct Logged {
    at: f64,
    method: String,
    status: u16,
    /// Every upstream nginx tried, in order (`127.0.0.1:A, 127.0.0.1:B` when it passed the
    /// request on).
    upstreams: Vec<String>,
}

fn access_log(dir: &Path) -> Vec<Logged> {
    std::fs::read_to_string(dir.join("access.log"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut f = l.splitn(4, ' ');
            let at = f.next().unwrap().parse().unwrap();
            let method = f.next().unwrap().to_owned();
            let status = f.next().unwrap().parse().unwrap();
            let upstreams = f
                .next()
                .unwrap()
                .split('"')
                .nth(1)
                .unwrap()
                .split(',')
                .map(|u| u.trim().to_owned())
                .collect();
            Logged {
                at,
                method,
                status,
                upstreams,
            }
        })
        .collect()
}

fn epoch(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn two_replicas_and_two_workers_behind_nginx_lose_nothing_when_a_replica_is_killed() {
    let started = Instant::now();
    let Some(nginx) = nginx() else {
        missing("nginx (apt-get install nginx-light)");
        return;
    };
    let Some(db) = TestDb::postgres() else { return };
    let url = db.url.clone();
    let app = TestApp::prepare(db);
    let db = &app.db;
    ok(cli(&url, &["bench", "prepare-study", "--slug", "scaleout"]));

    // A model run queued at the start: 100 trials for the two workers, 4 in flight each, each
    // answered after 0.6 s. So that the run is still in progress at the kill however fast or slow
    // the machine, the fake provider holds requests beyond the first `BEFORE_KILL` until the
    // kill (on this machine that is about when the kill comes anyway).
    let killed = Arc::new(AtomicBool::new(false));
    let gate = killed.clone();
    let fake = FakeServer::start(move |req| {
        let held = Instant::now();
        while req.number > BEFORE_KILL
            && !gate.load(Ordering::SeqCst)
            && held.elapsed() < Duration::from_secs(100)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        FakeAction::answer(req, 3, Duration::from_millis(600))
    })
    .unwrap();
    let cfg = config(&[provider(
        "fake",
        "openai",
        &fake.base_url(),
        "concurrency = 4",
    )]);
    let run = run_id(&ok(eb(
        db,
        &cfg,
        &[
            "run",
            "--study",
            "scaleout",
            "--provider",
            "fake",
            "--model",
            "m",
            "--default-repeats",
            "20",
            "--repeats",
            "5",
            "--seed",
            "8",
            "--detach",
        ],
        &[],
    )));

    let dir = tempfile::tempdir().unwrap();
    // Run as root, nginx's worker processes are `nobody` and must reach their temp directories.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut procs = Processes::default();

    // Two replicas: no model-run slots of their own, no config file. Errors of any process go to
    // the test's output.
    let ports = [free_port(), free_port()];
    let serves: Vec<usize> = ports
        .iter()
        .map(|port| {
            let child = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
                .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
                .current_dir(dir.path())
                .env("DATABASE_URL", &url)
                .env_remove("EMOTIONBENCH_CONFIG")
                .env("EMOTIONBENCH_LOG", "error")
                .env("EMOTIONBENCH_WORKER_SLOTS", "0")
                // Every simulated participant comes from this one address.
                .env("EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS", "0")
                .env("EMOTIONBENCH_HTTP_WORKERS", "2")
                .env("EMOTIONBENCH_POOL_SIZE", "8")
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            procs.add(child)
        })
        .collect();
    for (i, port) in serves.iter().zip(ports) {
        wait_for_port(port, "serve", procs.get(*i));
    }
    let workers: Vec<usize> = (0..2)
        .map(|_| {
            let child = command(
                db,
                &cfg,
                &["worker", "--lease-seconds", "30"],
                &[("EMOTIONBENCH_LOG", "error")],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
            procs.add(child)
        })
        .collect();
    let worker_pids: Vec<u32> = workers.iter().map(|w| procs.get(*w).id()).collect();

    let proxy = free_port();
    let conf = dir.path().join("nginx.conf");
    std::fs::write(&conf, nginx_conf(dir.path(), proxy, ports)).unwrap();
    let mut nginx = Command::new(nginx);
    nginx
        .arg("-e")
        .arg(dir.path().join("error.log"))
        .arg("-c")
        .arg(&conf)
        .arg("-p")
        .arg(dir.path())
        .args(["-g", "daemon off;"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let n = procs.add_graceful(nginx.spawn().unwrap());
    wait_for_port(proxy, "nginx", procs.get(n));

    // The load, through nginx only.
    let generator = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args([
            "bench",
            "survey",
            "--url",
            &format!("http://127.0.0.1:{proxy}"),
            "--study",
            "scaleout",
            "--concurrency",
            CONCURRENCY,
            "--participants",
            &PARTICIPANTS.to_string(),
            "--retries",
            "5",
            "--verify",
            &url,
            "--json",
        ])
        .current_dir(dir.path())
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let g = procs.add(generator);
    let stdout = procs.get(g).stdout.take().unwrap();
    let report = std::thread::spawn(move || {
        let mut out = String::new();
        std::io::BufReader::new(stdout)
            .read_to_string(&mut out)
            .map(|_| out)
    });
    let load_started = Instant::now();
    eprintln!(
        "set up in {:.1} s; load started",
        started.elapsed().as_secs_f64()
    );

    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study: i64 = studies::table
        .filter(studies::slug.eq("scaleout"))
        .select(studies::id)
        .first(&mut conn)
        .unwrap();
    let completed = |conn: &mut emotionbench::store::DbConnection| -> i64 {
        participants::table
            .filter(participants::study_id.eq(study))
            .filter(participants::status.eq("completed"))
            .count()
            .get_result(conn)
            .unwrap()
    };
    let trials_done = |conn: &mut emotionbench::store::DbConnection| -> i64 {
        model_trials::table
            .filter(model_trials::run_id.eq(run.0))
            .filter(model_trials::status.eq("done"))
            .count()
            .get_result(conn)
            .unwrap()
    };
    // Lease holders seen while the run is worked: both workers must take part.
    let mut owners = std::collections::BTreeSet::new();
    let mut watch_owners = |conn: &mut emotionbench::store::DbConnection| {
        let now: Vec<Option<String>> = model_trials::table
            .filter(model_trials::run_id.eq(run.0))
            .filter(model_trials::status.eq("leased"))
            .select(model_trials::lease_owner)
            .load(conn)
            .unwrap();
        owners.extend(now.into_iter().flatten());
    };

    // Kill one replica (SIGKILL) once a third of the participants have completed (and the run
    // has begun).
    let deadline = Instant::now() + Duration::from_secs(120);
    while completed(&mut conn) < PARTICIPANTS / 3 || trials_done(&mut conn) == 0 {
        assert!(Instant::now() < deadline, "the load made no progress");
        assert!(
            procs.get(g).try_wait().unwrap().is_none(),
            "the load generator ended before the kill"
        );
        watch_owners(&mut conn);
        std::thread::sleep(Duration::from_millis(50));
    }
    let victim = procs.get(serves[0]);
    let victim_pid = victim.id();
    victim.kill().unwrap();
    let status = victim.wait().unwrap();
    let killed_at = SystemTime::now();
    let killed_at_db = emotionbench::store::now();
    killed.store(true, Ordering::SeqCst);
    let at_kill = (completed(&mut conn), trials_done(&mut conn));
    eprintln!(
        "killed serve pid {victim_pid} (port {}) after {:.1} s of load: {} participants completed, {} of {TRIALS} trials done",
        ports[0],
        load_started.elapsed().as_secs_f64(),
        at_kill.0,
        at_kill.1
    );
    assert_eq!(status.signal(), Some(9), "the replica died of SIGKILL");
    assert!(
        at_kill.0 < PARTICIPANTS * 2 / 3,
        "the kill came late ({} completed)",
        at_kill.0
    );
    assert!(
        at_kill.1 < TRIALS as i64,
        "the run was over before the kill: make it longer"
    );
    assert!(
        !Path::new(&format!("/proc/{victim_pid}")).exists(),
        "the killed replica is gone"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", ports[0])).is_err(),
        "nothing listens on the killed replica's port"
    );

    // The load carries on through the survivor.
    let exit = loop {
        if let Some(exit) = procs.get(g).try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "the load did not finish");
        watch_owners(&mut conn);
        std::thread::sleep(Duration::from_millis(50));
    };
    let load_seconds = load_started.elapsed().as_secs_f64();
    let at_load_end = trials_done(&mut conn);
    let out = report.join().unwrap().unwrap();
    assert!(
        exit.success(),
        "bench survey failed ({exit}):\n{out}\nnginx errors:\n{}",
        std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
    );
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (report, verify) = (&json["report"], &json["verify"]);
    eprintln!(
        "load: {} completed, {} errors, {} resent, {:.1} participants/s over {load_seconds:.1} s",
        report["completed"], report["errors"], report["retries"], report["completed_per_second"]
    );

    // Every participant completed, every answer stored exactly once.
    assert_eq!(report["completed"], PARTICIPANTS, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(verify["checked"], PARTICIPANTS, "{verify}");
    assert_eq!(verify["complete"], PARTICIPANTS, "{verify}");
    assert_eq!(verify["incomplete"], serde_json::json!([]), "{verify}");
    assert_eq!(verify["duplicates"], 0, "{verify}");
    assert_eq!(completed(&mut conn), PARTICIPANTS);
    let after_kill: i64 = participants::table
        .filter(participants::study_id.eq(study))
        .filter(participants::completed_at.gt(killed_at_db))
        .count()
        .get_result(&mut conn)
        .unwrap();
    // All but the few in flight at the kill completed afterwards, through the survivor.
    let in_flight: i64 = CONCURRENCY.parse().unwrap();
    assert!(
        after_kill > 0 && after_kill >= PARTICIPANTS - at_kill.0 - in_flight,
        "only {after_kill} participants completed after the kill"
    );

    // Both replicas served before the kill, the survivor after it. What nginx sent to the dead
    // replica was passed on to the survivor (`proxy_next_upstream error timeout`), except POSTs
    // the dead one had received: those were answered 502, and the load generator resent them.
    let (dead, alive) = (
        format!("127.0.0.1:{}", ports[0]),
        format!("127.0.0.1:{}", ports[1]),
    );
    let logged = access_log(dir.path());
    let killed_epoch = epoch(killed_at);
    let served =
        |l: &Logged, by: &str| l.status < 500 && l.upstreams.last().is_some_and(|u| u == by);
    let before = |by: &str| {
        logged
            .iter()
            .filter(|l| l.at < killed_epoch && served(l, by))
            .count()
    };
    let by_survivor = logged
        .iter()
        .filter(|l| l.at > killed_epoch && served(l, &alive))
        .count();
    let passed_on = logged
        .iter()
        .filter(|l| l.upstreams.len() > 1 && l.upstreams[0] == dead && served(l, &alive))
        .count();
    let gateway_errors: Vec<&Logged> = logged.iter().filter(|l| l.status >= 502).collect();
    let posts_502 = gateway_errors
        .iter()
        .filter(|l| l.method == "POST" && l.status == 502 && l.upstreams == [dead.clone()])
        .count();
    let resent = report["retries"].as_u64().unwrap();
    eprintln!(
        "nginx: {} requests; before the kill {} served by the killed replica, {} by the survivor; \
         after it {by_survivor} by the survivor; {passed_on} passed on from the dead replica to \
         the survivor; {posts_502} POSTs answered 502 (the load generator resent {resent})",
        logged.len(),
        before(&dead),
        before(&alive)
    );
    assert!(
        before(&dead) > 0 && before(&alive) > 0,
        "both replicas served"
    );
    assert!(by_survivor > 0, "the survivor served after the kill");
    assert!(
        passed_on + posts_502 > 0,
        "nginx sent nothing to the dead replica"
    );
    assert_eq!(
        gateway_errors.len(),
        posts_502,
        "only POSTs received by the dead replica are answered 502-504, never a GET: {:?}",
        gateway_errors
            .iter()
            .map(|l| format!("{} {} {:?}", l.method, l.status, l.upstreams))
            .collect::<Vec<_>>()
    );
    assert!(
        resent >= posts_502 as u64,
        "every POST answered 502 was resent"
    );
    // (A request the dead replica answered just before it died may be logged just after.)
    assert!(
        logged
            .iter()
            .filter(|l| l.at > killed_epoch + 1.0)
            .all(|l| !l.upstreams.contains(&dead) || served(l, &alive) || l.status == 502),
        "after the kill, nothing came from the dead replica"
    );

    // The model run progressed meanwhile and completes on the two workers, each trial once.
    let run_deadline = Instant::now() + Duration::from_secs(60);
    while run_status(db, run).0 != "completed" {
        assert!(Instant::now() < run_deadline, "the run did not complete");
        watch_owners(&mut conn);
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "run: {} of {TRIALS} trials done at the kill, {at_load_end} when the load ended, completed after {:.1} s",
        at_kill.1,
        load_started.elapsed().as_secs_f64()
    );
    assert!(at_load_end > at_kill.1, "the run progressed after the kill");
    assert_each_trial_done_once(db, run, TRIALS);
    assert_eq!(fake.requests().len(), TRIALS, "a trial was sent twice");
    for pid in &worker_pids {
        assert!(
            owners.iter().any(|o| o.contains(&format!("-{pid}-"))),
            "worker {pid} held no lease (owners seen: {owners:?})"
        );
    }
    for w in &workers {
        assert!(procs.get(*w).try_wait().unwrap().is_none(), "a worker died");
    }
    assert!(
        procs.get(serves[1]).try_wait().unwrap().is_none(),
        "the surviving replica died"
    );
    eprintln!("scale-out test: {:.1} s", started.elapsed().as_secs_f64());
}
