//! `emotionbench bench survey`: drives real HTTP participants through the whole flow, like
//! browsers (cookies, CSRF tokens, redirects), and measures the server. Loopback only, bounded
//! in count and time.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::cpu::cpu_time;
use crate::domain::survey::{CONSENT_FIELD, Page, ParticipantStatus};
use crate::web::csrf;

#[derive(Debug, Clone)]
pub struct Config {
    /// Base URL of the server, e.g. http://127.0.0.1:8080 (loopback only).
    pub url: String,
    pub study: String,
    pub concurrency: usize,
    /// Stop after this many participants have started (default: bounded by `duration`).
    pub participants: Option<u64>,
    /// Stop starting new participants after this long.
    pub duration: Option<Duration>,
    /// Mean time a participant spends on a page before submitting it (see [`think_time`]).
    pub think: Duration,
    /// The `concurrency` virtual participants start spread evenly over this time instead of
    /// all in the same instant (people arrive over minutes; a burst of hundreds of entries in
    /// one millisecond measures the burst, not the steady state).
    pub ramp: Duration,
    /// A server process to measure the CPU time of.
    pub server_pid: Option<u32>,
    /// Prefix of the Prolific ids used (so a verification finds exactly this run's participants).
    pub pid_prefix: String,
    /// How many times a request is sent again after it failed in transit: a connection error,
    /// or a 502/503/504 answer (a proxy whose upstream died, a server without its database).
    /// 0 (the default) counts the first failure as the participant's error. Resending is safe
    /// for every request this generator makes, POSTs included: see [`resendable`].
    pub retries: u32,
}

/// Latency percentiles of one page, in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PageLatency {
    pub page: String,
    pub requests: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub started: u64,
    pub completed: u64,
    pub errors: u64,
    pub error_samples: Vec<String>,
    pub requests: u64,
    /// Requests sent again after a connection error or a 502/503/504 (see `Config::retries`).
    pub retries: u64,
    pub wall_seconds: f64,
    pub completed_per_second: f64,
    pub requests_per_second: f64,
    pub pages: Vec<PageLatency>,
    /// All requests together.
    pub overall: Option<PageLatency>,
    pub own_cpu_seconds: f64,
    /// Share of one core used by the load generator itself.
    pub own_cpu_share: f64,
    pub server_cpu_seconds: Option<f64>,
    pub server_cpu_ms_per_participant: Option<f64>,
    /// Prolific ids that received the completion code.
    #[serde(skip)]
    pub completed_pids: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("the load generator only targets loopback addresses, not {0}")]
    NotLoopback(String),
    #[error("bad URL {0}")]
    BadUrl(String),
    #[error("give --participants or --duration (both bounded)")]
    Unbounded,
}

fn is_loopback(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[derive(Default)]
struct Shared {
    latencies: Mutex<HashMap<String, Vec<u32>>>,
    errors: Mutex<Vec<String>>,
    completed: Mutex<Vec<String>>,
    requests: AtomicU64,
    retries: AtomicU64,
    error_count: AtomicU64,
}

/// Whether a failed exchange may be sent again: a transport error (refused, reset, closed
/// before the answer) or a gateway/unavailable status, never an answer of the application's
/// own (a 4xx, a 422 form page, a 500).
///
/// Resending a POST is safe here because the generator only POSTs survey pages, and those are
/// idempotent by design: `store::participants::submit` moves the participant from the page
/// posted to the next one with a conditional UPDATE (`WHERE page = <posted page> AND status =
/// 'active'`) in the same transaction as the answers, and answers are unique per participant
/// × phase × item. If the first POST was committed before its answer was lost, the resend finds
/// the participant already moved, stores nothing and is redirected (303) to the current page,
/// exactly like a participant's double click; if it was not committed, the resend is the first
/// submit. GETs only read (and record a "shown" timestamp).
fn resendable(outcome: &Result<u16, String>) -> bool {
    match outcome {
        Err(_) => true,
        Ok(status) => matches!(status, 502..=504),
    }
}

/// The pause on page number `step` of participant `salt`: uniform in [½, 1½] × `mean`, drawn
/// deterministically, so participants that started together drift apart as people do instead
/// of submitting in lockstep bursts. The mean stays `mean`.
fn think_time(mean: Duration, salt: u64, step: u64) -> Duration {
    if mean.is_zero() {
        return mean;
    }
    // splitmix64 of (participant, page): cheap, and well spread even for consecutive inputs.
    let mut z = salt
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(step.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let unit = (z >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
    mean.mul_f64(0.5 + unit)
}

/// Pause before resend number `n` (1-based): 50 ms doubling, at most 1.6 s.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(50u64 << n.saturating_sub(1).min(5))
}

fn field_value<'a>(body: &'a str, marker: &str) -> Option<&'a str> {
    let start = body.find(marker)? + marker.len();
    body[start..].split('"').next()
}

/// The hidden fields of a page's form other than the CSRF token (a visitor's consent form
/// carries its visit id and the link's Prolific ids in them).
fn hidden_fields(body: &str) -> Vec<(String, String)> {
    body.split("<input type=\"hidden\" name=\"")
        .skip(1)
        .filter_map(|part| {
            let (name, rest) = part.split_once('"')?;
            let value = field_value(rest, "value=\"")?;
            (name != csrf::FIELD).then(|| (name.to_owned(), value.to_owned()))
        })
        .collect()
}

fn items_on(body: &str) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(20);
    for part in body.split("name=\"item-").skip(1) {
        if let Some(n) = part.split('"').next().and_then(|n| n.parse().ok()) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// The form a participant sends on a page (deterministic answers derived from the pid).
fn answers_for(page: Page, body: &str, salt: u64) -> Vec<(String, String)> {
    match page {
        Page::Consent => {
            let mut fields = hidden_fields(body);
            fields.push((CONSENT_FIELD.into(), "yes".into()));
            fields
        }
        Page::Demographics => vec![
            ("gender".into(), "Prefer not to say".into()),
            ("year_of_birth".into(), "1990".into()),
            ("country".into(), "United Kingdom".into()),
            ("employment_status".into(), "Employed".into()),
            ("education".into(), "University - Bachelors".into()),
        ],
        Page::PanasBefore | Page::PanasAfter => items_on(body)
            .into_iter()
            .map(|n| {
                (
                    format!("item-{n}"),
                    (((u64::from(n) + salt) % 5) + 1).to_string(),
                )
            })
            .collect(),
        Page::Check => vec![("answer".into(), "A little".into())],
        _ => Vec::new(),
    }
}

enum Step {
    Next(String),
    Done,
}

struct Client<'a> {
    agent: ureq::Agent,
    base: &'a str,
    shared: &'a Shared,
    retries: u32,
}

fn location(r: &ureq::http::Response<ureq::Body>) -> Option<String> {
    r.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

impl Client<'_> {
    fn record(&self, page: &str, t: Instant) {
        let us = u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX);
        self.shared.requests.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut m) = self.shared.latencies.lock() {
            m.entry(page.to_owned()).or_default().push(us);
        }
    }

    /// Sends a request (`send` makes one exchange and reads the whole answer), resending it up
    /// to `retries` times while it fails in transit (see [`resendable`]). The latency recorded is
    /// the participant's: from the first send to the answer, resends included.
    fn exchange<T>(
        &self,
        label: &str,
        send: impl Fn() -> Result<(u16, T), String>,
    ) -> Result<(u16, T), String> {
        let t = Instant::now();
        let mut resent = 0;
        loop {
            let outcome = send();
            let status = outcome.as_ref().map(|(s, _)| *s).map_err(Clone::clone);
            if resent < self.retries && resendable(&status) {
                resent += 1;
                self.shared.retries.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(backoff(resent));
                continue;
            }
            if outcome.is_ok() {
                self.record(label, t);
            }
            return outcome;
        }
    }

    fn get(&self, path: &str, label: &str) -> Result<(u16, Option<String>, String), String> {
        let url = format!("{}{path}", self.base);
        let (status, (loc, body)) = self.exchange(label, || {
            let mut r = self
                .agent
                .get(&url)
                .call()
                .map_err(|e| format!("GET {path}: {e}"))?;
            let body = r
                .body_mut()
                .read_to_vec()
                .map_err(|e| format!("GET {path}: {e}"))?;
            let body = String::from_utf8(body).map_err(|e| format!("GET {path}: {e}"))?;
            Ok((r.status().as_u16(), (location(&r), body)))
        })?;
        Ok((status, loc, body))
    }

    fn post(
        &self,
        path: &str,
        label: &str,
        fields: &[(String, String)],
    ) -> Result<(u16, Option<String>), String> {
        let url = format!("{}{path}", self.base);
        self.exchange(label, || {
            let mut r = self
                .agent
                .post(&url)
                .send_form(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(|e| format!("POST {path}: {e}"))?;
            let _ = r.body_mut().read_to_vec();
            Ok((r.status().as_u16(), location(&r)))
        })
    }

    /// Shows one page and submits it; returns where the server sends the participant next.
    fn page(&self, path: &str, salt: u64, think: Duration) -> Result<Step, String> {
        // The consent page's URL carries the link's Prolific ids on.
        let bare = path.split('?').next().unwrap_or("");
        let name = bare.rsplit('/').next().unwrap_or("").to_owned();
        let (status, loc, body) = self.get(path, &format!("GET {name}"))?;
        if status == 303 {
            return loc
                .map(Step::Next)
                .ok_or_else(|| format!("{path}: redirect without location"));
        }
        if status != 200 {
            return Err(format!("GET {path}: status {status}"));
        }
        let page = Page::parse(&name).ok_or_else(|| format!("{path}: not a survey page"))?;
        if page == Page::Done {
            return Ok(Step::Done);
        }
        let csrf = field_value(&body, &format!("name=\"{}\" value=\"", csrf::FIELD))
            .ok_or_else(|| format!("{path}: no CSRF token"))?;
        let mut fields = answers_for(page, &body, salt);
        fields.push((csrf::FIELD.into(), csrf.to_owned()));
        if !think.is_zero() {
            std::thread::sleep(think);
        }
        let (status, loc) = self.post(path, &format!("POST {name}"), &fields)?;
        if status != 303 {
            return Err(format!("POST {path}: status {status}"));
        }
        let loc = loc.ok_or_else(|| format!("POST {path}: redirect without location"))?;
        if loc.starts_with("https://app.prolific.com/") {
            return Ok(Step::Done);
        }
        Ok(Step::Next(loc))
    }
}

/// One participant from the Prolific link to the completion code.
fn participant(
    base: &str,
    study: &str,
    pid: &str,
    salt: u64,
    think: Duration,
    retries: u32,
    shared: &Shared,
) -> Result<(), String> {
    let client = Client {
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            // Per-phase timeouts rather than a global one: with a global (or resolve) timeout
            // ureq resolves the address on a new thread for every connection, and a thread per
            // participant showed in the profile.
            .timeout_connect(Some(Duration::from_secs(10)))
            // ureq's default buffers are 128 KiB each, zeroed for every new connection (one per
            // participant): most of the generator's allocator time. Headers and forms are small.
            .input_buffer_size(16 * 1024)
            .output_buffer_size(16 * 1024)
            .timeout_per_read(Some(Duration::from_secs(60)))
            .timeout_per_write(Some(Duration::from_secs(60)))
            .build()
            .into(),
        base,
        shared,
        retries,
    };
    let entry = format!("/s/{study}?PROLIFIC_PID={pid}&STUDY_ID=bench&SESSION_ID={pid}");
    let (status, loc, _) = client.get(&entry, "GET entry")?;
    let mut next = match (status, loc) {
        (303, Some(l)) => l,
        (s, _) => return Err(format!("entry: status {s}")),
    };
    for step in 0..20 {
        match client.page(&next, salt, think_time(think, salt, step))? {
            Step::Done => return Ok(()),
            Step::Next(l) => next = l,
        }
    }
    Err(format!("{pid}: did not finish in 20 pages (at {next})"))
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[i.min(sorted.len() - 1)]) / 1000.0
}

fn latency(page: &str, mut v: Vec<u32>) -> PageLatency {
    v.sort_unstable();
    PageLatency {
        page: page.to_owned(),
        requests: v.len(),
        p50_ms: percentile(&v, 0.50),
        p95_ms: percentile(&v, 0.95),
        p99_ms: percentile(&v, 0.99),
        max_ms: v.last().map_or(0.0, |x| f64::from(*x) / 1000.0),
    }
}

/// Runs the load; at most one hour whatever the arguments say.
pub fn run(cfg: &Config) -> Result<Report, BenchError> {
    if !is_loopback(&cfg.url) {
        return Err(BenchError::NotLoopback(cfg.url.clone()));
    }
    if cfg.participants.is_none() && cfg.duration.is_none() {
        return Err(BenchError::Unbounded);
    }
    let base = cfg.url.trim_end_matches('/').to_owned();
    if base.is_empty() {
        return Err(BenchError::BadUrl(cfg.url.clone()));
    }
    let hard_stop = Duration::from_secs(3600);
    let deadline = cfg.duration.unwrap_or(hard_stop).min(hard_stop);
    let limit = cfg.participants.unwrap_or(u64::MAX);
    let shared = Shared::default();
    let next = AtomicU64::new(0);
    let cpu0 = cpu_time(None);
    let server0 = cfg.server_pid.and_then(|p| cpu_time(Some(p)));
    let t0 = Instant::now();
    let lanes = cfg.concurrency.max(1);
    std::thread::scope(|scope| {
        for lane in 0..lanes {
            let (next, shared, base) = (&next, &shared, &base);
            scope.spawn(move || {
                std::thread::sleep(cfg.ramp.mul_f64(lane as f64 / lanes as f64));
                loop {
                    if t0.elapsed() >= deadline {
                        break;
                    }
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= limit {
                        break;
                    }
                    let pid = format!("{}{n}", cfg.pid_prefix);
                    match participant(base, &cfg.study, &pid, n, cfg.think, cfg.retries, shared) {
                        Ok(()) => {
                            if let Ok(mut c) = shared.completed.lock() {
                                c.push(pid);
                            }
                        }
                        Err(e) => {
                            shared.error_count.fetch_add(1, Ordering::Relaxed);
                            if let Ok(mut v) = shared.errors.lock() {
                                if v.len() < 20 {
                                    v.push(e);
                                }
                            }
                        }
                    }
                }
            });
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    let own = match (cpu0, cpu_time(None)) {
        (Some(a), Some(b)) => (b - a).as_secs_f64(),
        _ => 0.0,
    };
    let server = match (server0, cfg.server_pid.and_then(|p| cpu_time(Some(p)))) {
        (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
        _ => None,
    };
    let latencies = shared.latencies.into_inner().unwrap_or_default();
    let all: Vec<u32> = latencies.values().flatten().copied().collect();
    let pages: BTreeMap<String, Vec<u32>> = latencies.into_iter().collect();
    let completed_pids = shared.completed.into_inner().unwrap_or_default();
    let completed = completed_pids.len() as u64;
    let requests = shared.requests.load(Ordering::Relaxed);
    Ok(Report {
        started: next.load(Ordering::Relaxed).min(limit),
        completed,
        errors: shared.error_count.load(Ordering::Relaxed),
        error_samples: shared.errors.into_inner().unwrap_or_default(),
        requests,
        retries: shared.retries.load(Ordering::Relaxed),
        wall_seconds: wall,
        completed_per_second: completed as f64 / wall.max(1e-9),
        requests_per_second: requests as f64 / wall.max(1e-9),
        pages: pages.into_iter().map(|(k, v)| latency(&k, v)).collect(),
        overall: (!all.is_empty()).then(|| latency("all requests", all)),
        own_cpu_seconds: own,
        own_cpu_share: own / wall.max(1e-9),
        server_cpu_seconds: server,
        server_cpu_ms_per_participant: server
            .filter(|_| completed > 0)
            .map(|s| s * 1000.0 / completed as f64),
        completed_pids,
    })
}

/// What `--verify` found in the database.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verification {
    pub checked: usize,
    pub complete: usize,
    /// Participants that got a completion code but do not have exactly 40 answers stored.
    pub incomplete: Vec<String>,
    /// Answer rows beyond one per participant × phase × item.
    pub duplicates: usize,
}

/// Checks that every participant that got a completion code has its answers stored exactly once.
pub fn verify(
    conn: &mut crate::store::DbConnection,
    study: &str,
    pids: &[String],
    answers_per_participant: usize,
) -> Result<Verification, crate::store::StoreError> {
    use crate::store::schema::{participants, responses, studies};
    use diesel::prelude::*;
    let study_id: i64 = studies::table
        .filter(studies::slug.eq(study))
        .select(studies::id)
        .first(conn)?;
    let mut by_pid: HashMap<String, Vec<(String, i32)>> = HashMap::new();
    for chunk in pids.chunks(500) {
        let rows: Vec<(Option<String>, String, i32)> = responses::table
            .inner_join(participants::table)
            .filter(participants::study_id.eq(study_id))
            .filter(participants::prolific_pid.eq_any(chunk))
            .filter(participants::status.eq(ParticipantStatus::Completed))
            .select((
                participants::prolific_pid,
                responses::phase,
                responses::item_number,
            ))
            .load(conn)?;
        for (pid, phase, item) in rows {
            if let Some(pid) = pid {
                by_pid.entry(pid).or_default().push((phase, item));
            }
        }
    }
    let mut incomplete = Vec::new();
    let mut duplicates = 0;
    let mut complete = 0;
    for pid in pids {
        let mut rows = by_pid.remove(pid).unwrap_or_default();
        let n = rows.len();
        rows.sort();
        rows.dedup();
        duplicates += n - rows.len();
        if rows.len() == answers_per_participant && n == rows.len() {
            complete += 1;
        } else {
            incomplete.push(pid.clone());
        }
    }
    Ok(Verification {
        checked: pids.len(),
        complete,
        incomplete,
        duplicates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_spread_over_half_to_one_and_a_half_the_mean() {
        let mean = Duration::from_millis(200);
        let draws: Vec<f64> = (0..2000u64)
            .flat_map(|p| (0..8).map(move |s| think_time(mean, p, s).as_secs_f64() * 1000.0))
            .collect();
        assert!(draws.iter().all(|&ms| (100.0..300.0).contains(&ms)));
        let avg = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((avg - 200.0).abs() < 2.0, "mean {avg}");
        // Spread over the whole range, not bunched: each 20 ms bucket holds about a tenth.
        for b in 0..10 {
            let lo = 100.0 + 20.0 * f64::from(b);
            let share = draws
                .iter()
                .filter(|&&ms| ms >= lo && ms < lo + 20.0)
                .count() as f64
                / draws.len() as f64;
            assert!((0.08..0.12).contains(&share), "bucket {b}: {share}");
        }
        assert_eq!(think_time(mean, 7, 3), think_time(mean, 7, 3));
        assert_eq!(think_time(Duration::ZERO, 7, 3), Duration::ZERO);
    }

    #[test]
    fn only_loopback_targets_are_accepted() {
        assert!(is_loopback("http://127.0.0.1:8080"));
        assert!(is_loopback("http://localhost:1/x"));
        assert!(is_loopback("http://[::1]:8080/"));
        assert!(is_loopback("http://127.3.4.5"));
        assert!(!is_loopback("http://10.0.0.1:8080"));
        assert!(!is_loopback("http://example.org"));
        assert!(!is_loopback("https://127.0.0.1"));
        let cfg = Config {
            url: "http://192.168.1.1".into(),
            study: "x".into(),
            concurrency: 1,
            participants: Some(1),
            duration: None,
            think: Duration::ZERO,
            ramp: Duration::ZERO,
            server_pid: None,
            pid_prefix: "b".into(),
            retries: 0,
        };
        assert!(matches!(run(&cfg), Err(BenchError::NotLoopback(_))));
    }

    #[test]
    fn forms_are_built_from_the_page() {
        let body = r#"<input name="csrf" value="tok"><input type="radio" name="item-3" value="1"><input type="radio" name="item-3" value="2"><input name="item-1" value="1">"#;
        assert_eq!(field_value(body, "name=\"csrf\" value=\""), Some("tok"));
        assert_eq!(items_on(body), vec![3, 1]);
        let a = answers_for(Page::PanasBefore, body, 0);
        assert_eq!(
            a,
            vec![("item-3".into(), "4".into()), ("item-1".into(), "2".into())]
        );
    }

    /// A one-shot local server: for each connection in turn, reads one request and then either
    /// closes the connection without an answer (`None`) or answers with that status (303s carry
    /// a Location). Returns its base URL.
    fn scripted(replies: Vec<Option<u16>>) -> String {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for reply in replies {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut stream = reader.into_inner();
                if let Some(status) = reply {
                    let extra = if status == 303 {
                        "Location: /s/x/next\r\n"
                    } else {
                        ""
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                }
            }
        });
        base
    }

    fn shared() -> Shared {
        Shared::default()
    }

    fn client<'a>(base: &'a str, shared: &'a Shared, retries: u32) -> Client<'a> {
        Client {
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_global(Some(Duration::from_secs(10)))
                .build()
                .into(),
            base,
            shared,
            retries,
        }
    }

    #[test]
    fn only_transport_failures_and_gateway_statuses_are_resent() {
        assert!(resendable(&Err(
            "POST /s/x/consent: connection reset".into()
        )));
        for s in [502, 503, 504] {
            assert!(resendable(&Ok(s)), "{s}");
        }
        for s in [200, 303, 400, 403, 413, 422, 500] {
            assert!(!resendable(&Ok(s)), "{s}");
        }
        assert_eq!(backoff(1), Duration::from_millis(50));
        assert_eq!(backoff(2), Duration::from_millis(100));
        assert_eq!(backoff(30), Duration::from_millis(1600));
    }

    #[test]
    fn a_post_lost_in_transit_is_resent_and_counted() {
        // The connection closes without an answer, then a proxy answers 502, then the server
        // takes the submit.
        let base = scripted(vec![None, Some(502), Some(303)]);
        let shared = shared();
        let form = [("csrf".to_owned(), "t".to_owned())];
        let (status, loc) = client(&base, &shared, 2)
            .post("/s/x/consent", "POST consent", &form)
            .unwrap();
        assert_eq!((status, loc.as_deref()), (303, Some("/s/x/next")));
        assert_eq!(shared.retries.load(Ordering::Relaxed), 2);
        assert_eq!(shared.requests.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn without_retries_the_first_failure_is_the_outcome() {
        let base = scripted(vec![None]);
        let shared = shared();
        assert!(client(&base, &shared, 0).get("/s/x", "GET entry").is_err());
        let base = scripted(vec![Some(502), Some(303)]);
        let (status, _, _) = client(&base, &shared, 0).get("/s/x", "GET entry").unwrap();
        assert_eq!(status, 502);
        // An answer of the application's own is never resent.
        let base = scripted(vec![Some(500), Some(303)]);
        let (status, _, _) = client(&base, &shared, 3).get("/s/x", "GET entry").unwrap();
        assert_eq!(status, 500);
        assert_eq!(shared.retries.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn percentiles_of_sorted_microseconds() {
        let v: Vec<u32> = (1..=100).map(|x| x * 1000).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
