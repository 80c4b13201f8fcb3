//! A real headless Chromium takes the survey: from the Prolific entry link to the completion
//! redirect, by clicking, at a 360×740 phone viewport. On every page axe-core checks
//! accessibility (0 serious or critical violations), and the page must fit the phone (no
//! horizontal scroll, tap targets ≥ 44 px). Afterwards the database must hold exactly what was
//! clicked.
//!
//! Needs `chromium`, `chromedriver` (Debian: `chromium chromium-driver`) and `axe-core` in
//! `node_modules/` (`npm ci`); `.ci/run` installs all three. Without them the test is skipped
//! outside CI and fails under `CI=true`.
//!
//! The WebDriver client below is deliberately minimal (plain JSON over the existing `ureq`
//! dev-dependency): a session, navigation, find, click, execute, screenshot.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use diesel::prelude::*;
use emotionbench::domain::survey::Page;
use emotionbench::store::{participants, schema, studies};
use serde_json::{Value, json};

use crate::helpers::{Backend, TestDb, missing, spawn_app};
use crate::on_both_backends;
use crate::survey::{PID, items_in, make_scale_study, make_study};

/// The W3C key under which an element reference is returned.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

const VIEWPORT: (u32, u32) = (360, 740);

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// chromedriver on a free port with one Chromium session; both end on drop.
struct Chrome {
    /// The viewport (CSS px) the session emulates.
    viewport: (u32, u32),
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
}

impl Chrome {
    /// Starts chromedriver and a session, or None (skipped) when Chromium is missing outside CI.
    fn start() -> Option<Chrome> {
        Self::start_at(VIEWPORT)
    }

    /// [`Chrome::start`] with another viewport (the admin pages: a phone and a desktop).
    fn start_at(viewport: (u32, u32)) -> Option<Chrome> {
        let (Some(chromium), Some(chromedriver)) = (
            on_path("chromium").or_else(|| on_path("chromium-browser")),
            on_path("chromedriver"),
        ) else {
            missing("chromium and chromedriver (apt-get install chromium chromium-driver)");
            return None;
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .proxy(None)
            .build()
            .into();
        let profile = tempfile::tempdir().unwrap();
        // The port is free when asked; if another process takes it before chromedriver does,
        // chromedriver exits and we try another.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut driver = Command::new(&chromedriver)
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let base = format!("http://127.0.0.1:{port}");
            let deadline = Instant::now() + Duration::from_secs(20);
            let ready = loop {
                if driver.try_wait().unwrap().is_some() || Instant::now() > deadline {
                    break false;
                }
                let status = agent
                    .get(format!("{base}/status"))
                    .call()
                    .ok()
                    .and_then(|mut r| r.body_mut().read_to_string().ok())
                    .and_then(|s| serde_json::from_str::<Value>(&s).ok());
                if status.is_some_and(|s| s["value"]["ready"] == true) {
                    break true;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            if !ready {
                let _ = driver.kill();
                let _ = driver.wait();
                continue;
            }
            let args = [
                "--headless=new".to_owned(),
                "--no-sandbox".to_owned(),
                "--disable-gpu".to_owned(),
                "--disable-background-networking".to_owned(),
                "--disable-component-update".to_owned(),
                "--no-first-run".to_owned(),
                "--disable-sync".to_owned(),
                "--disable-dev-shm-usage".to_owned(),
                format!("--user-data-dir={}", profile.path().display()),
                format!("--window-size={},{}", viewport.0, viewport.1),
                // Nothing but the test server resolves: the Prolific redirect fails at once
                // and deterministically, and the browser never reaches the network.
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1".to_owned(),
            ];
            let caps = json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "pageLoadStrategy": "normal",
                "goog:chromeOptions": {
                    "binary": chromium.display().to_string(),
                    "args": args,
                    // Headless Chromium clamps a window to at least 500 px wide and takes its
                    // own bars off the height; device metrics give the exact phone viewport.
                    "mobileEmulation": {"deviceMetrics": {
                        "width": viewport.0, "height": viewport.1, "pixelRatio": 1.0
                    }},
                },
            }}});
            let mut chrome = Chrome {
                viewport,
                driver,
                base,
                session: String::new(),
                agent: agent.clone(),
                _profile: profile,
            };
            let created = chrome
                .request("POST", "/session", Some(caps))
                .unwrap_or_else(|e| panic!("chromedriver could not start Chromium: {e}"));
            chrome.session = created["sessionId"].as_str().unwrap().to_owned();
            // Page loads may take long in a debug build on a busy 2-core machine: the admin
            // report of the published study (1,266 humans, bootstrap CIs) once took more than
            // 30 s there in a full CI run ("Timed out receiving message from renderer").
            chrome.cmd(
                "POST",
                "/timeouts",
                json!({"pageLoad": 120_000, "script": 120_000, "implicit": 0}),
            );
            return Some(chrome);
        }
        panic!("chromedriver did not become ready on a free port");
    }

    /// One WebDriver request; Ok(value) or the driver's error.
    fn request(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let reply = match method {
            "GET" => self.agent.get(&url).call(),
            "DELETE" => self.agent.delete(&url).call(),
            _ => self
                .agent
                .post(&url)
                .header("content-type", "application/json")
                .send(body.unwrap_or_else(|| json!({})).to_string()),
        };
        let mut reply = reply.map_err(|e| format!("{method} {path}: {e}"))?;
        let status = reply.status().as_u16();
        let text = reply
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| format!("{method} {path}: {e}: {text}"))?;
        if status == 200 {
            Ok(value["value"].clone())
        } else {
            Err(format!(
                "{method} {path}: {status} {}: {}",
                value["value"]["error"], value["value"]["message"]
            ))
        }
    }

    /// A command in the session that must succeed.
    #[track_caller]
    fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let body = (method == "POST").then_some(body);
        self.request(method, &path, body)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn goto(&self, url: &str) {
        self.cmd("POST", "/url", json!({ "url": url }));
    }

    /// The browser's URL. On a failed navigation (the offline Prolific host) chromedriver
    /// reports the URL that was attempted, not the browser's internal error page.
    fn url(&self) -> String {
        self.cmd("GET", "/url", Value::Null)
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn source(&self) -> String {
        self.cmd("GET", "/source", Value::Null)
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[track_caller]
    fn find(&self, using: &str, selector: &str) -> String {
        let found = self.cmd(
            "POST",
            "/element",
            json!({"using": using, "value": selector}),
        );
        found[ELEMENT].as_str().unwrap().to_owned()
    }

    fn css(&self, selector: &str) -> String {
        self.find("css selector", selector)
    }

    fn xpath(&self, selector: &str) -> String {
        self.find("xpath", selector)
    }

    fn click(&self, element: &str) {
        self.cmd("POST", &format!("/element/{element}/click"), json!({}));
    }

    fn exec(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": args}),
        )
    }

    fn exec_async(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/async",
            json!({"script": script, "args": []}),
        )
    }

    fn screenshot(&self, file: &Path) {
        let b64 = self.cmd("GET", "/screenshot", Value::Null);
        let png = base64_decode(b64.as_str().unwrap());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, png).unwrap();
    }

    /// Waits until the browser shows `path` (after a click that navigates) with its document
    /// loaded.
    #[track_caller]
    /// Waits until the page shows `text` (a form posted back to its own URL: the URL alone
    /// does not say the answer has arrived).
    fn wait_for_text(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !(self.source().contains(text)
            && self.exec("return document.readyState", json!([])) == "complete")
        {
            assert!(Instant::now() < deadline, "the page never showed {text:?}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn wait_for(&self, base: &str, path: &str) {
        let want = format!("{base}{path}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let url = self.url();
            // The consent page's URL carries the link's Prolific ids on.
            let bare = url.split('?').next().unwrap_or(&url);
            if bare == want && self.exec("return document.readyState", json!([])) == "complete" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the browser is at {url}, expected {want}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Chrome {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = self.request("DELETE", &path, None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (the screenshot), padding optional.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c:?}"),
        }
    };
    let digits: Vec<u32> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .map(value)
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, d)| acc | (d << (18 - 6 * i)));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// `node_modules/axe-core/axe.min.js`, or None (skipped) when not installed outside CI.
fn axe_source() -> Option<String> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/axe-core/axe.min.js");
    match std::fs::read_to_string(&file) {
        Ok(s) => Some(s),
        Err(_) => {
            missing(&format!("axe-core at {} (run npm ci)", file.display()));
            None
        }
    }
}

/// `target/` of this build (respects CARGO_TARGET_DIR): the test binary is target/debug/deps/….
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "deps"))
        .and_then(|deps| deps.parent())
        .and_then(|profile| profile.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The pages the guide shows, as `docs/img/{name}-{360|1280}.png` (committed, embedded by
/// docs/; `docs::every_picture_the_docs_embed_…` checks both directions). The journeys below
/// write them, so a changed page changes its picture.
pub const GUIDE_SHOTS: [&str; 5] = [
    "survey-consent",
    "survey-situation",
    "new-study",
    "monitor",
    "report",
];

/// Keeps the current page as the guide's picture `docs/img/{name}-{width}.png`. Only the
/// SQLite run writes it (both backends show the same page; one writer per file).
fn guide_shot(c: &Chrome, backend: &str, name: &str) {
    assert!(GUIDE_SHOTS.contains(&name), "{name} is not in GUIDE_SHOTS");
    if backend != "sqlite" {
        return;
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/img")
        .join(format!("{name}-{}.png", c.viewport.0));
    c.screenshot(&file);
}

/// The guide's pictures `names` at both widths were written by this run (since `started`).
fn assert_guide_shots_written(backend: &str, names: &[&str], started: std::time::SystemTime) {
    if backend != "sqlite" {
        return;
    }
    for name in names {
        for w in [360, 1280] {
            let file = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("docs/img")
                .join(format!("{name}-{w}.png"));
            let written = std::fs::metadata(&file)
                .and_then(|m| m.modified())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(
                written >= started,
                "{} was not written by this run",
                file.display()
            );
        }
    }
}

const AXE_RUN: &str = "var done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']})
  .then(function (r) { done(JSON.stringify(r.violations.map(function (v) {
    return {id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(function (n) { return {target: n.target, summary: n.failureSummary}; })};
  }))); })
  .catch(function (e) { done('axe failed: ' + e); });";

/// Fits a phone: nothing wider than the viewport, every tap target at least 44 × 44 px.
const LAYOUT: &str = "var problems = [];
var doc = document.documentElement;
if (doc.scrollWidth > window.innerWidth) {
  problems.push('horizontal scroll: ' + doc.scrollWidth + ' > ' + window.innerWidth);
}
document.querySelectorAll('button, select, label.choice, a.button, footer a').forEach(function (el) {
  var r = el.getBoundingClientRect();
  if (r.width > 0 && (r.height < 44 || r.width < 44)) {
    problems.push('small tap target ' + el.outerHTML.slice(0, 80) + ': ' +
                  Math.round(r.width) + 'x' + Math.round(r.height));
  }
  if (r.right > window.innerWidth + 0.5) {
    problems.push('off screen ' + el.outerHTML.slice(0, 80));
  }
});
return problems;";

/// Runs axe-core and the layout check on the page in the browser, and keeps a screenshot.
struct Audit<'a> {
    chrome: &'a Chrome,
    axe: String,
    backend: &'static str,
    pages: Vec<String>,
    failures: Vec<String>,
    minor: Vec<String>,
}

/// The backend's name in screenshot file names.
fn backend_name(db: &TestDb) -> &'static str {
    match db.backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

impl<'a> Audit<'a> {
    fn new(chrome: &'a Chrome, axe: String, backend: &'static str) -> Self {
        Audit {
            chrome,
            axe,
            backend,
            pages: Vec::new(),
            failures: Vec::new(),
            minor: Vec::new(),
        }
    }
}

impl Audit<'_> {
    /// axe-core's violations on the current page.
    fn axe(&self, name: &str) -> Vec<Value> {
        let c = self.chrome;
        // Injected through WebDriver, so the page's strict CSP (no inline script) stays as is.
        if c.exec("return typeof window.axe", json!([])) != "object" {
            c.exec(
                &format!("{};\nreturn typeof window.axe;", self.axe),
                json!([]),
            );
        }
        let out = c.exec_async(AXE_RUN);
        let text = out.as_str().unwrap();
        serde_json::from_str(text).unwrap_or_else(|_| panic!("{name}: {text}"))
    }

    /// The audit can fail: on a page with an unlabelled input and grey-on-white text, axe
    /// reports a critical and a serious violation.
    fn self_test(&self) {
        self.chrome.goto(
            "data:text/html;charset=utf-8,<!doctype html><html lang=en><title>bad</title><main>\
             <input type=text><p style='color:%23ddd;background:%23fff'>faint</p></main></html>",
        );
        let ids: Vec<(String, String)> = self
            .axe("self-test")
            .iter()
            .map(|v| {
                (
                    v["id"].as_str().unwrap().into(),
                    v["impact"].as_str().unwrap().into(),
                )
            })
            .collect();
        assert!(
            ids.contains(&("label".into(), "critical".into())),
            "{ids:?}"
        );
        assert!(
            ids.contains(&("color-contrast".into(), "serious".into())),
            "{ids:?}"
        );
    }

    fn check(&mut self, name: &str) {
        self.check_with(name, LAYOUT);
    }

    /// [`Audit::check`] with another layout script (`layout` returns a list of problems).
    fn check_with(&mut self, name: &str, layout: &str) {
        let c = self.chrome;
        let (w, h) = c.viewport;
        let dims = c.exec("return [window.innerWidth, window.innerHeight]", json!([]));
        // A page wider than the phone widens the layout viewport: name what sticks out.
        let wide = c.exec(
            "var out = [], w = arguments[0]; document.querySelectorAll('body *').forEach(function (el) {
               var r = el.getBoundingClientRect();
               if (r.right > w + 0.5) { out.push(el.tagName + '.' + el.className + ' ' + Math.round(r.right)); }
             }); return out.slice(0, 12);",
            json!([w]),
        );
        assert_eq!(
            dims,
            json!([w, h]),
            "viewport on {name}; wider than it: {wide}"
        );
        let violations = self.axe(name);
        for v in &violations {
            let nodes: Vec<String> = v["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| format!("      {} — {}", n["target"], n["summary"]))
                .collect();
            let line = format!(
                "{name}: [{}] {} ({})\n{}",
                v["impact"].as_str().unwrap_or("?"),
                v["id"].as_str().unwrap_or("?"),
                v["help"].as_str().unwrap_or(""),
                nodes.join("\n")
            );
            if matches!(v["impact"].as_str(), Some("serious" | "critical")) {
                self.failures.push(line);
            } else {
                self.minor.push(line);
            }
        }
        for p in c.exec(layout, json!([])).as_array().unwrap() {
            self.failures
                .push(format!("{name}: layout: {}", p.as_str().unwrap()));
        }
        let file = target_dir().join(format!(
            "screenshots/{}-{}x{}-{}.png",
            name.replace(' ', "-"),
            w,
            h,
            self.backend
        ));
        c.screenshot(&file);
        self.pages.push(name.to_owned());
    }
}

/// Waits, like a reader, until a second past the page's reading floor since it was shown.
fn pause_past(shown: Instant, floor_ms: Option<i64>) {
    let floor = u64::try_from(floor_ms.unwrap_or(0)).unwrap_or(0);
    let want = Duration::from_millis(floor + 1_000);
    if let Some(rest) = want.checked_sub(shown.elapsed()) {
        std::thread::sleep(rest);
    }
}

/// What the journey clicks on a PANAS page for item `n` (not straight-lined; differs by page).
fn panas_value(page: &str, n: u32) -> u32 {
    if page == "feelings-now" {
        (n * 2) % 5 + 1
    } else {
        (n * 3 + 1) % 5 + 1
    }
}

/// Clicks the label of a radio button (as a thumb would), not the tiny input itself.
/// An admin's walk at a phone's and at a desktop's width: a fresh browser at each, signed in as
/// `email`, `walk` auditing the pages it visits. Fails with every axe and layout failure of
/// both walks; the number of pages audited, or `None` without Chrome (only outside CI:
/// `Chrome::start_at` fails under it).
fn admin_at_both_widths(
    base: &str,
    axe: &str,
    backend: &'static str,
    email: &str,
    mut walk: impl FnMut(&Chrome, &mut Audit<'_>, (u32, u32)),
) -> Option<usize> {
    let mut failures = Vec::new();
    let mut pages = 0;
    for viewport in [(360, 740), (1280, 800)] {
        let chrome = Chrome::start_at(viewport)?;
        let c = &chrome;
        let mut audit = Audit::new(c, axe.to_owned(), backend);
        sign_in(c, base, email, crate::admin::PASSWORD);
        walk(c, &mut audit, viewport);
        pages += audit.pages.len();
        failures.extend(audit.failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Some(pages)
}

/// Chooses each `(select name, option value)` as a person does: opens the list, clicks the
/// option.
fn choose(c: &Chrome, choices: &[(&str, &str)]) {
    for (name, value) in choices {
        c.click(&c.css(&format!("select[name='{name}']")));
        c.click(&c.xpath(&format!(
            "//select[@name='{name}']/option[@value='{value}']"
        )));
    }
}

fn click_radio(c: &Chrome, name: &str, value: &str) {
    let label = c.xpath(&format!(
        "//input[@type='radio' and @name='{name}' and @value='{value}']/ancestor::label"
    ));
    c.click(&label);
}

fn a_real_browser_completes_the_survey_from_the_prolific_link(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let Some(chrome) = Chrome::start() else {
        return;
    };
    let started = Instant::now();
    let backend = backend_name(&db);
    let app = spawn_app(db);
    make_study(&app, "journey", |_| {});
    // The reading floors of the evidence (domain::evidence): this reader pauses on each page
    // until a second past its floor, a quick human but a human.
    let floors = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let study = studies::load(&mut conn, "journey").unwrap().unwrap();
        emotionbench::app::evidence::page_floors(&mut conn, &study).unwrap()
    };
    let base = app.base.clone();
    let c = &chrome;
    let mut audit = Audit::new(c, axe, backend);
    let page = |p: &str| format!("/s/journey/{p}");
    audit.self_test();

    // Prolific opens the study link with its three parameters.
    c.goto(&format!(
        "{base}/s/journey?PROLIFIC_PID={PID}&STUDY_ID=st1&SESSION_ID=se1"
    ));
    c.wait_for(&base, &page("consent"));
    audit.check("consent");
    c.click(&c.css("button[name='consent'][value='yes']"));

    // Demographics: one option of each <select>, "Prefer not to say" included.
    c.wait_for(&base, &page("demographics"));
    audit.check("demographics");
    // The withdraw link on every page asks for confirmation; going back continues the study.
    c.click(&c.xpath("//footer//a[contains(., 'Withdraw')]"));
    c.wait_for(&base, &page("withdraw"));
    audit.check("withdraw confirmation");
    c.click(&c.xpath("//a[contains(., 'Go back to the study')]"));
    c.wait_for(&base, &page("demographics"));
    let demographics = [
        ("gender", "Non-binary or another gender"),
        ("year_of_birth", "1987"),
        ("country", "Prefer not to say"),
        ("employment_status", "Student"),
        ("education", "University - Bachelors"),
    ];
    choose(c, &demographics);
    c.click(&c.css("button[type='submit']"));

    // PANAS now: first answer 19 of 20 items and submit, to see the error state; then the last.
    c.wait_for(&base, &page("feelings-now"));
    let shown = Instant::now();
    let mut clicked: HashMap<(String, u32), u32> = HashMap::new();
    let items = items_in(&c.source());
    assert_eq!(items.len(), 20);
    audit.check("feelings-now");
    let shot = target_dir().join(format!(
        "screenshots/panas-{}x{}-{backend}.png",
        VIEWPORT.0, VIEWPORT.1
    ));
    c.screenshot(&shot);
    for &n in &items[..19] {
        let v = panas_value("feelings-now", n);
        click_radio(c, &format!("item-{n}"), &v.to_string());
        clicked.insert(("default".into(), n), v);
    }
    c.click(&c.css("form button[type='submit']"));
    let last = items[19];
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.exec(
        "return document.readyState === 'complete' && !!document.querySelector('.error-summary')",
        json!([]),
    ) != true
    {
        assert!(
            Instant::now() < deadline,
            "no error summary after submitting 19 items"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(c.url(), format!("{base}{}", page("feelings-now")));
    let kept = c.exec(
        "return Array.prototype.map.call(document.querySelectorAll('input[type=radio]:checked'),
           function (i) { return i.name + '=' + i.value; })",
        json!([]),
    );
    assert_eq!(
        kept.as_array().unwrap().len(),
        19,
        "the 19 answers given are kept"
    );
    assert!(c.source().contains(&format!("err-item-{last}")));
    audit.check("feelings-now with errors");
    let v = panas_value("feelings-now", last);
    click_radio(c, &format!("item-{last}"), &v.to_string());
    clicked.insert(("default".into(), last), v);
    pause_past(shown, floors.floor(Page::PanasBefore, None));
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("situation"));
    let shown = Instant::now();
    audit.check("situation");
    let situation = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let study = studies::load(&mut conn, "journey").unwrap().unwrap();
        participants::by_pid(&mut conn, study.id, PID)
            .unwrap()
            .unwrap()
            .situation_id
    };
    pause_past(shown, floors.floor(Page::Situation, situation));
    c.click(&c.css("#continue"));

    c.wait_for(&base, &page("feelings-imagined"));
    let shown = Instant::now();
    audit.check("feelings-imagined");
    let items = items_in(&c.source());
    assert_eq!(items.len(), 20);
    for n in items {
        let v = panas_value("feelings-imagined", n);
        click_radio(c, &format!("item-{n}"), &v.to_string());
        clicked.insert(("evoked".into(), n), v);
    }
    pause_past(shown, floors.floor(Page::PanasAfter, None));
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("check"));
    let shown = Instant::now();
    audit.check("check");
    click_radio(c, "answer", "A little");
    pause_past(shown, floors.floor(Page::Check, None));
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("debrief"));
    audit.check("debrief");
    c.click(&c.css("form button[type='submit']"));

    // The final submit redirects to Prolific, which is unreachable here: the browser's URL is
    // the one it was sent to.
    let want = "https://app.prolific.com/submissions/complete?cc=COMPLETE1";
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let url = c.url();
        if url.starts_with(want) {
            break;
        }
        assert!(Instant::now() < deadline, "never redirected; at {url}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Our own completion page, for a participant who comes back to the link.
    c.goto(&format!("{base}/s/journey"));
    c.wait_for(&base, &page("done"));
    assert!(c.source().contains("COMPLETE1"));
    audit.check("done");

    eprintln!(
        "axe-core on {} pages ({backend}): {}",
        audit.pages.len(),
        audit.pages.join(", ")
    );
    for m in &audit.minor {
        eprintln!("minor: {m}");
    }
    assert!(
        audit.failures.is_empty(),
        "{} serious or critical problems:\n{}",
        audit.failures.len(),
        audit.failures.join("\n")
    );

    // The database holds exactly what was clicked.
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, "journey").unwrap().unwrap();
    let p = participants::by_pid(&mut conn, study.id, PID)
        .unwrap()
        .unwrap();
    assert_eq!(p.status.as_str(), "completed");
    assert_eq!(p.page.as_str(), "done");
    assert_eq!(p.prolific_study_id.as_deref(), Some("st1"));
    assert_eq!(p.prolific_session_id.as_deref(), Some("se1"));
    assert!(p.situation_id.is_some());
    assert!(!p.flag_straightline && !p.flag_failed_check);
    let stored: HashMap<(String, u32), u32> = participants::answers(&mut conn, p.id)
        .unwrap()
        .into_iter()
        .map(|(phase, item, value)| ((phase.to_string(), item as u32), value as u32))
        .collect();
    assert_eq!(stored.len(), 40);
    assert_eq!(stored, clicked);
    let demo: BTreeMap<String, String> =
        serde_json::from_value(serde_json::Value::Object(p.demographics.unwrap().0)).unwrap();
    let want_demo: BTreeMap<String, String> = demographics
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(demo, want_demo);
    let check: Vec<(String, bool)> = schema::attention_checks::table
        .filter(schema::attention_checks::participant_id.eq(p.id))
        .select((
            schema::attention_checks::answer,
            schema::attention_checks::passed,
        ))
        .load(&mut conn)
        .unwrap();
    assert_eq!(check, vec![("A little".to_owned(), true)]);

    // Timings: every page of the flow shown, then submitted once, in protocol order.
    let events: Vec<(String, String, NaiveDateTime)> = schema::page_events::table
        .filter(schema::page_events::participant_id.eq(p.id))
        .order(schema::page_events::id)
        .select((
            schema::page_events::page,
            schema::page_events::event,
            schema::page_events::at,
        ))
        .load(&mut conn)
        .unwrap();
    let mut previous_submit: Option<NaiveDateTime> = None;
    for name in crate::helpers::PAGES_TO_DEBRIEF {
        let at = |event: &str| -> Vec<NaiveDateTime> {
            events
                .iter()
                .filter(|(p, e, _)| p == name && e == event)
                .map(|(_, _, t)| *t)
                .collect()
        };
        let shown = at("shown");
        let submitted = at("submitted");
        assert!(!shown.is_empty(), "{name} never recorded as shown");
        assert_eq!(submitted.len(), 1, "{name} submitted {submitted:?}");
        let first_shown = shown.iter().min().unwrap();
        assert!(
            first_shown <= &submitted[0],
            "{name}: submitted before shown"
        );
        if let Some(prev) = previous_submit {
            assert!(
                prev <= *first_shown,
                "{name} shown before the page before it was submitted"
            );
        }
        previous_submit = Some(submitted[0]);
    }
    assert!(p.completed_at.unwrap() >= previous_submit.unwrap());
    // A person reading at a human pace, who never saw the hidden field: no evidence at all
    // (no honeypot, no page under its reading floor; no models, so no model-likeness).
    let evidence = emotionbench::app::evidence::study_evidence(
        &mut conn,
        &study,
        emotionbench::store::evidence::Scope::All,
    )
    .unwrap();
    let found = evidence.of(p.id.0).expect("the participant is assessed");
    assert!(
        found.findings.is_empty(),
        "evidence against a human-paced browser: {:?}",
        found.findings
    );
    assert_eq!(found.pages.len(), 7, "{:?}", found.pages);
    eprintln!(
        "browser journey on {backend}: {:.1} s; screenshot {}",
        started.elapsed().as_secs_f64(),
        shot.display()
    );
}

#[test]
fn base64_decodes_with_and_without_padding() {
    assert_eq!(base64_decode("TWFu"), b"Man");
    assert_eq!(base64_decode("TWE="), b"Ma");
    assert_eq!(base64_decode("TQ=="), b"M");
    assert_eq!(base64_decode("TQ"), b"M");
    assert_eq!(base64_decode("iVBORw0KGgo="), b"\x89PNG\r\n\x1a\n");
}

/// A BDI page (items that carry their own four statements, 0..=3) in the same browser, with
/// the same audit: the statements are the tap targets, axe finds nothing serious or critical,
/// and the database holds the values clicked.
fn a_real_browser_answers_a_bdi_page(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let Some(chrome) = Chrome::start() else {
        return;
    };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    if !make_scale_study(&app, "bdi", "BDI") {
        return;
    }
    let base = app.base.clone();
    let c = &chrome;
    let mut audit = Audit::new(c, axe, backend);
    let page = |p: &str| format!("/s/bdi/{p}");
    c.goto(&format!("{base}/s/bdi?PROLIFIC_PID={PID}"));
    c.wait_for(&base, &page("consent"));
    c.click(&c.css("button[name='consent'][value='yes']"));
    c.wait_for(&base, &page("demographics"));
    choose(
        c,
        &[
            ("gender", "Female"),
            ("year_of_birth", "1990"),
            ("country", "Prefer not to say"),
            ("employment_status", "Student"),
            ("education", "University - Bachelors"),
        ],
    );
    c.click(&c.css("button[type='submit']"));

    c.wait_for(&base, &page("feelings-now"));
    let source = c.source();
    assert!(
        source.contains("I do not feel sad."),
        "BDI's own statements"
    );
    let items = items_in(&source);
    assert_eq!(items.len(), 21);
    audit.check("bdi feelings-now");
    let mut clicked: HashMap<u32, u32> = HashMap::new();
    for n in items {
        let v = (n * 3) % 4;
        click_radio(c, &format!("item-{n}"), &v.to_string());
        clicked.insert(n, v);
    }
    c.click(&c.css("form button[type='submit']"));
    c.wait_for(&base, &page("situation"));
    assert!(
        audit.failures.is_empty(),
        "{} problems:\n{}",
        audit.failures.len(),
        audit.failures.join("\n")
    );

    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, "bdi").unwrap().unwrap();
    let p = participants::by_pid(&mut conn, study.id, PID)
        .unwrap()
        .unwrap();
    let stored: HashMap<u32, u32> = participants::answers(&mut conn, p.id)
        .unwrap()
        .into_iter()
        .filter(|(phase, _, _)| phase.as_str() == "default")
        .map(|(_, item, value)| (item as u32, value as u32))
        .collect();
    assert_eq!(stored, clicked);
}

/// The admin's data pages (#13): the upload page, the same page with a refused file, and a
/// set's page, each audited like the survey pages.
fn a_real_browser_audits_the_data_pages(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let Some(data) = crate::helpers::upstream() else {
        return;
    };
    let Some(chrome) = Chrome::start() else {
        return;
    };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    let doc = data.join("doc.csv");
    crate::helpers::ok(crate::helpers::cli(
        &app.db.url,
        &["import", "situations", doc.to_str().unwrap()],
    ));
    crate::admin::add_user(
        &app,
        "data@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let c = &chrome;
    let mut audit = Audit::new(c, axe, backend);
    c.goto(&format!("{base}/admin/login"));
    c.exec(
        "document.getElementById('email').value = arguments[0];
         document.getElementById('password').value = arguments[1];",
        json!(["data@example.org", crate::admin::PASSWORD]),
    );
    c.click(&c.css("form[action='/admin/login'] button[type='submit']"));
    c.wait_for(&base, "/admin");
    c.goto(&format!("{base}/admin/data"));
    c.wait_for(&base, "/admin/data");
    audit.check("data");
    // A refused file: a JSON file with a syntax error, chosen in the situation form.
    let bad = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
    std::fs::write(bad.path(), "{\"emotions\": [}").unwrap();
    let input = c.css("#situations-file");
    c.cmd(
        "POST",
        &format!("/element/{input}/value"),
        json!({"text": bad.path().to_str().unwrap()}),
    );
    c.click(&c.css("form[action='/admin/data/situations'] button[type='submit']"));
    c.wait_for(&base, "/admin/data/situations");
    let source = c.source();
    assert!(source.contains("Nothing was imported."), "{source}");
    assert!(source.contains("invalid JSON"), "{source}");
    audit.check("data refused");
    c.goto(&format!("{base}/admin/data/sets/tested-175"));
    c.wait_for(&base, "/admin/data/sets/tested-175");
    audit.check("data set");
    assert!(
        audit.failures.is_empty(),
        "{} problems:\n{}",
        audit.failures.len(),
        audit.failures.join("\n")
    );
}

on_both_backends!(
    a_real_browser_completes_the_survey_from_the_prolific_link,
    a_real_browser_answers_a_bdi_page,
    a_real_browser_audits_the_data_pages
);

// --- Accounts pages (#13 point 6): the accounts page, the invitation link page and the
// invitee's page, in the same browser and audit. Admin pages have a desktop navigation (its
// "Sign out" is a text link), so only axe and the horizontal-scroll part of the layout check
// apply; the invitee's page is public and gets the full check.

/// axe on the current page, no horizontal scroll at 360 px, and a screenshot.
fn check_accounts_page(audit: &mut Audit, name: &str, full_layout: bool) {
    if full_layout {
        return audit.check(name);
    }
    let c = audit.chrome;
    for v in audit.axe(name) {
        let line = format!(
            "{name}: [{}] {} ({}): {}",
            v["impact"].as_str().unwrap_or("?"),
            v["id"].as_str().unwrap_or("?"),
            v["help"].as_str().unwrap_or(""),
            v["nodes"]
        );
        if matches!(v["impact"].as_str(), Some("serious" | "critical")) {
            audit.failures.push(line);
        } else {
            audit.minor.push(line);
        }
    }
    let wide = c.exec(
        "return document.documentElement.scrollWidth > window.innerWidth",
        json!([]),
    );
    if wide == true {
        audit.failures.push(format!("{name}: horizontal scroll"));
    }
    let file = target_dir().join(format!(
        "screenshots/{}-{}x{}-{}.png",
        name.replace(' ', "-"),
        VIEWPORT.0,
        VIEWPORT.1,
        audit.backend
    ));
    c.screenshot(&file);
    audit.pages.push(name.to_owned());
}

/// Types into a field by setting its value (the pages need no keyboard events).
fn fill(c: &Chrome, id: &str, value: &str) {
    c.exec(
        "document.getElementById(arguments[0]).value = arguments[1];",
        json!([id, value]),
    );
}

fn a_real_browser_invites_and_the_invitee_sets_a_password(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let Some(chrome) = Chrome::start() else {
        return;
    };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    crate::admin::add_user(
        &app,
        "ada@example.org",
        emotionbench::store::users::Role::Admin,
    );
    crate::admin::add_user(
        &app,
        "rita@example.org",
        emotionbench::store::users::Role::Researcher,
    );
    let base = app.base.clone();
    let c = &chrome;
    let mut audit = Audit::new(c, axe, backend);
    c.goto(&format!("{base}/admin/login"));
    c.wait_for(&base, "/admin/login");
    fill(c, "email", "ada@example.org");
    fill(c, "password", crate::admin::PASSWORD);
    c.click(&c.css("button[type='submit']"));
    c.wait_for(&base, "/admin");

    c.goto(&format!("{base}/admin/users"));
    c.wait_for(&base, "/admin/users");
    check_accounts_page(&mut audit, "accounts", false);
    fill(c, "invite-email", "new@example.org");
    c.click(&c.xpath("//button[contains(., 'Create invitation link')]"));
    c.wait_for(&base, "/admin/users/invite");
    check_accounts_page(&mut audit, "invitation link", false);
    let link = c.exec(
        "return document.getElementById('invite-link').value",
        json!([]),
    );
    let link = link.as_str().unwrap().to_owned();
    let path = link.strip_prefix(&base).unwrap().to_owned();

    c.goto(&link);
    c.wait_for(&base, &path);
    check_accounts_page(&mut audit, "invitation accept", true);
    fill(c, "password", "short");
    fill(c, "password2", "short");
    c.click(&c.css("form button[type='submit']"));
    c.wait_for(&base, &path);
    c.wait_for_text("at least 10 characters");
    check_accounts_page(&mut audit, "invitation accept with error", true);
    fill(c, "password", "a sturdy new passphrase");
    fill(c, "password2", "a sturdy new passphrase");
    c.click(&c.css("form button[type='submit']"));
    c.wait_for(&base, &path);
    c.wait_for_text("Your account is ready");
    check_accounts_page(&mut audit, "invitation accepted", true);
    c.goto(&link);
    c.wait_for(&base, &path);
    check_accounts_page(&mut audit, "invitation used", true);

    eprintln!(
        "axe-core on {} account pages ({backend}): {}",
        audit.pages.len(),
        audit.pages.join(", ")
    );
    for m in &audit.minor {
        eprintln!("minor: {m}");
    }
    assert!(
        audit.failures.is_empty(),
        "{} serious or critical problems:\n{}",
        audit.failures.len(),
        audit.failures.join("\n")
    );
}

on_both_backends!(a_real_browser_invites_and_the_invitee_sets_a_password);

// --- Study pages (#13 points 3, 5, 7).

/// Admin pages on a phone and a desktop: no page-wide horizontal scroll (the survey's
/// thumb-sized targets are a survey rule; axe's target-size checks the rest).
const ADMIN_LAYOUT: &str = "var problems = [];
var doc = document.documentElement;
if (doc.scrollWidth > window.innerWidth) {
  problems.push('horizontal scroll: ' + doc.scrollWidth + ' > ' + window.innerWidth);
}
return problems;";

/// The export id of the participant with this Prolific id.
fn export_id_of(app: &crate::helpers::TestApp, pid: &str) -> String {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    schema::participants::table
        .filter(schema::participants::prolific_pid.eq(pid))
        .select(schema::participants::export_id)
        .get_result(&mut conn)
        .unwrap()
}

/// An admin, in a real Chromium at 360 and at 1280 px, signs in and goes through the study
/// pages: the list, the new-study form with its checklist, a draft's monitor, the refusal to
/// open it, the edit form, an open study's monitor with its links, the duplicate form and the
/// copy it makes, the import form, and a participant's deletion (confirmation, result, no such
/// participant). axe-core: 0 serious or critical violations on each.
fn the_study_admin_pages_pass_axe_on_a_phone_and_a_desktop(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    // The consent the guide shows: the new-study form's template, filled in.
    let consent = emotionbench::domain::study::CONSENT_TEMPLATE
        .replace("[RESEARCHER]", "the Emotion Lab, Example University")
        .replace("[CONTACT]", "emotion-lab@example.org")
        .replace("[ETHICS APPROVAL]", "the Example University ethics board (EB-2026-017)")
        .replace("[DATA USE]", "your answers are kept without your name until 2027-12-31 and then deleted")
        .replace("[WITHDRAWAL]", "You may stop at any time with \"Withdraw from the study\", which deletes your answers.");
    make_study(&app, "walk", |c| c.consent_text = consent);
    crate::admin::add_user(
        &app,
        "walker@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let mut failures = Vec::new();
    let mut pages = 0;
    let started = std::time::SystemTime::now();
    for viewport in [(360, 740), (1280, 800)] {
        let Some(chrome) = Chrome::start_at(viewport) else {
            return;
        };
        let c = &chrome;
        let w = viewport.0;
        let pid = format!("{PID}{w}");
        crate::survey::walk_to(
            &app.browser(),
            &format!("/s/walk?PROLIFIC_PID={pid}"),
            "situation",
        );
        let mut audit = Audit::new(c, axe.clone(), backend);
        let check = |audit: &mut Audit<'_>, name: &str| {
            audit.check_with(&format!("admin {name}"), ADMIN_LAYOUT);
        };
        c.goto(&format!("{base}/admin/login"));
        c.exec(
            "document.getElementById('email').value = arguments[0];
             document.getElementById('password').value = arguments[1];",
            json!(["walker@example.org", crate::admin::PASSWORD]),
        );
        c.click(&c.css("button[type='submit']"));
        c.wait_for(&base, "/admin");
        check(&mut audit, "studies");
        c.goto(&format!("{base}/admin/studies/new"));
        check(&mut audit, "new study form");
        guide_shot(c, backend, "new-study");
        c.exec(
            "document.getElementById('title').value = 'Draft ' + arguments[0];
             document.getElementById('slug').value = 'draft-' + arguments[0];",
            json!([w]),
        );
        c.click(&c.xpath("//button[contains(., 'Save')]"));
        let draft = format!("/admin/studies/draft-{w}");
        c.wait_for(&base, &draft);
        check(&mut audit, "draft monitor");
        c.click(&c.xpath("//button[@value='open']"));
        c.wait_for(&base, &format!("{draft}/status"));
        c.wait_for_text("cannot open yet");
        check(&mut audit, "refused to open");
        c.goto(&format!("{base}{draft}/edit"));
        check(&mut audit, "edit form");
        c.goto(&format!("{base}/admin/studies/walk"));
        check(&mut audit, "open monitor");
        guide_shot(c, backend, "monitor");
        // Opening the link stores nothing: the consent page of a new visitor, for the guide.
        c.goto(&format!("{base}/s/walk?PROLIFIC_PID=guide{w}"));
        c.wait_for_text("Information and consent");
        guide_shot(c, backend, "survey-consent");
        c.goto(&format!("{base}/admin/studies/walk/duplicate"));
        check(&mut audit, "duplicate form");
        c.exec(
            "document.getElementById('slug').value = 'walk-copy-' + arguments[0];",
            json!([w]),
        );
        c.click(&c.xpath("//button[contains(., 'Create the copy')]"));
        c.wait_for(&base, &format!("/admin/studies/walk-copy-{w}"));
        assert!(c.source().contains("draft"));
        check(&mut audit, "duplicated study");
        c.goto(&format!("{base}/admin/studies/import"));
        check(&mut audit, "import form");
        let who = export_id_of(&app, &pid);
        c.goto(&format!("{base}/admin/studies/walk/evidence"));
        assert!(c.source().contains("Exclusion rules"));
        check(&mut audit, "evidence");
        c.goto(&format!("{base}/admin/studies/walk/participants/{who}"));
        assert!(c.source().contains("Faster than reading"));
        check(&mut audit, "participant evidence");
        c.goto(&format!(
            "{base}/admin/studies/walk/participants/delete?participant={who}"
        ));
        check(&mut audit, "delete participant confirmation");
        c.click(&c.xpath("//button[contains(., 'Delete this participant')]"));
        c.wait_for(&base, "/admin/studies/walk/participants/delete");
        c.wait_for_text("Participant deleted");
        check(&mut audit, "participant deleted");
        c.goto(&format!(
            "{base}/admin/studies/walk/participants/delete?participant={who}"
        ));
        assert!(c.source().contains("No such participant"));
        check(&mut audit, "no such participant");
        pages += audit.pages.len();
        failures.extend(audit.failures);
    }
    assert_eq!(pages, 28);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_guide_shots_written(
        backend,
        &["new-study", "monitor", "survey-consent"],
        started,
    );
}

on_both_backends!(the_study_admin_pages_pass_axe_on_a_phone_and_a_desktop);

/// The valence pages (#18) at 360 and 1280 px: the upload page (its tidy CSV columns), the
/// demo's valence set with each variant under its original, the run form's and the study
/// form's valence fields, and the report of a run on the valence study with its valence
/// section.
fn a_real_browser_audits_the_valence_pages_on_a_phone_and_a_desktop(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let backend = backend_name(&db);
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
        emotionbench::app::demo::load_valence_demo(&mut conn).unwrap();
    }
    // A run whose change follows the valence, for the report's section.
    let variants: Vec<String> = emotionbench::domain::demo::demo_study()
        .variants
        .into_iter()
        .map(|v| v.text)
        .collect();
    let server = emotionbench::llm::fake::FakeServer::start(move |req| {
        crate::valence::valence_feeling(req, &variants)
    })
    .unwrap();
    let cfg = crate::runs::config(&[crate::runs::provider(
        "fake",
        "openai",
        &server.base_url(),
        "concurrency = 4",
    )]);
    crate::helpers::ok(crate::runs::eb(
        &db,
        &cfg,
        &[
            "run",
            "--study",
            "demo-valence",
            "--provider",
            "fake",
            "--model",
            "m",
            "--seed",
            "3",
            "--default-repeats",
            "6",
            "--repeats",
            "2",
        ],
        &[],
    ));
    let app = spawn_app(db);
    crate::admin::add_user(
        &app,
        "valence@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let walked = admin_at_both_widths(
        &base,
        &axe,
        backend,
        "valence@example.org",
        |c, audit, _| {
            let check = |audit: &mut Audit<'_>, name: &str| {
                audit.check_with(&format!("valence {name}"), ADMIN_LAYOUT);
            };
            c.goto(&format!("{base}/admin/data"));
            c.wait_for(&base, "/admin/data");
            assert!(c.source().contains("variant_of"));
            check(audit, "data");
            c.goto(&format!("{base}/admin/data/sets/demo-valence"));
            c.wait_for(&base, "/admin/data/sets/demo-valence");
            assert!(
                c.source()
                    .contains("Valence variants of Anger-0_scenario-0")
            );
            check(audit, "set");
            // The screenshot is of the viewport: scroll the first variants into it.
            c.exec(
                "document.querySelector('ul.variants').scrollIntoView({block: 'center'});",
                json!([]),
            );
            check(audit, "set variants");
            c.goto(&format!("{base}/admin/runs/new"));
            c.wait_for(&base, "/admin/runs/new");
            assert!(c.source().contains("id=\"valence\""));
            check(audit, "run form");
            c.goto(&format!("{base}/admin/studies/new"));
            c.wait_for(&base, "/admin/studies/new");
            c.exec(
                "document.getElementById('valences').scrollIntoView({block: 'center'});",
                json!([]),
            );
            check(audit, "study form valences");
            c.goto(&format!("{base}/admin/studies/demo-valence/report"));
            c.wait_for(&base, "/admin/studies/demo-valence/report");
            let source = c.source();
            assert!(source.contains("Valence control"), "{source}");
            check(audit, "report");
            c.exec(
                "Array.from(document.querySelectorAll('h2')).find(function (h) { \
               return h.textContent === 'Valence control'; }).scrollIntoView();",
                json!([]),
            );
            check(audit, "report valence section");
            c.click(&c.css("details.valence-pairs summary"));
            assert!(
                c.exec(
                    "return document.querySelector('details.valence-pairs').open",
                    json!([])
                ) == json!(true)
            );
            check(audit, "report valence pairs");
        },
    );
    let Some(pages) = walked else {
        return;
    };
    assert_eq!(pages, 16);
}

on_both_backends!(a_real_browser_audits_the_valence_pages_on_a_phone_and_a_desktop);

fn sign_in(c: &Chrome, base: &str, email: &str, password: &str) {
    c.goto(&format!("{base}/admin/login"));
    c.wait_for(base, "/admin/login");
    fill(c, "email", email);
    fill(c, "password", password);
    c.click(&c.css("form[action='/admin/login'] button[type='submit']"));
    c.wait_for(base, "/admin");
}

/// The admin pages the other walks do not reach: model runs (list, new-run form, one run), the
/// providers, the audit log, a study's report and its deletion form, at 360 and 1280 px; axe
/// 0 serious or critical on each.
fn the_other_admin_pages_pass_axe_on_a_phone_and_a_desktop(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    let run = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::generate_study(&mut conn, "seen", 60, 7).unwrap();
        emotionbench::app::demo::generate_model_runs(&mut conn, "seen", 2, 120, 7).unwrap();
        schema::model_runs::table
            .select(schema::model_runs::id)
            .order(schema::model_runs::id)
            .first::<i64>(&mut conn)
            .unwrap()
    };
    crate::admin::add_user(
        &app,
        "runs@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let walked = admin_at_both_widths(&base, &axe, backend, "runs@example.org", |c, audit, _| {
        for (name, path) in [
            ("runs", "/admin/runs".to_owned()),
            ("new run", "/admin/runs/new".to_owned()),
            (
                "new run, planned",
                "/admin/runs/new?effect_size=0.5&plan_alpha=0.01&power=0.8".to_owned(),
            ),
            ("run", format!("/admin/runs/{run}")),
            ("providers", "/admin/providers".to_owned()),
            ("audit log", "/admin/audit".to_owned()),
            ("report", "/admin/studies/seen/report".to_owned()),
            ("delete study", "/admin/studies/seen/delete".to_owned()),
        ] {
            c.goto(&format!("{base}{path}"));
            // wait_for compares the address without its query (the planning answer has one).
            c.wait_for(&base, path.split('?').next().unwrap_or(&path));
            let source = c.source();
            assert!(!source.contains("Page not found"), "{path}: {source}");
            audit.check_with(&format!("admin {name}"), ADMIN_LAYOUT);
        }
    });
    let Some(pages) = walked else {
        return;
    };
    assert_eq!(pages, 16);
}

on_both_backends!(the_other_admin_pages_pass_axe_on_a_phone_and_a_desktop);

// --- The research team's own study, in the browser (#13's acceptance): data uploaded, a
// study made from it, refused to open without consent, piloted as a draft (counted nowhere),
// opened, duplicated, a participant deleted, a researcher invited; every admin page audited.

/// Answers the survey page the browser is on (any valid answer) and submits it.
const ANSWER_PAGE: &str = "
document.querySelectorAll('main select').forEach(function (s) {
  if (s.options.length > 1) { s.selectedIndex = s.options.length > 2 ? 2 : 1; }
});
var groups = {};
document.querySelectorAll('main input[type=radio]').forEach(function (r) {
  (groups[r.name] = groups[r.name] || []).push(r);
});
Object.keys(groups).forEach(function (name, i) {
  var g = groups[name];
  var right = g.filter(function (r) { return r.value === 'A little'; });
  (right.length ? right[0] : g[(i * 3 + 1) % g.length]).checked = true;
});
var agree = document.querySelector('main button[value=yes]');
var button = agree || document.querySelector('main form button.primary') ||
  document.querySelector('main form button[type=submit]');
if (!button) { return 'no button'; }
button.removeAttribute('disabled');
button.click();
return location.pathname;";

/// The lines of a CSV the signed-in browser downloads (the header is one): fetched with the
/// browser's cookies (the pages' CSP allows no script to fetch).
fn csv_lines(c: &Chrome, url: &str) -> usize {
    let cookies = c.cmd("GET", "/cookie", Value::Null);
    let header = cookies
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            format!(
                "{}={}",
                k["name"].as_str().unwrap(),
                k["value"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let mut r = ureq::get(url).header("Cookie", &header).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let text = r.body_mut().read_to_string().unwrap();
    text.lines().filter(|l| !l.is_empty()).count()
}

/// (active, completed) as the study's monitor counts them.
fn monitor_counts(app: &crate::helpers::TestApp, slug: &str) -> (i64, i64) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = emotionbench::store::studies::load(&mut conn, slug)
        .unwrap()
        .unwrap();
    let m = emotionbench::store::monitor::load(&mut conn, &s).unwrap();
    (m.counts.active, m.counts.completed)
}

fn a_research_team_sets_up_pilots_and_launches_its_study_in_the_browser(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let Some(data) = crate::helpers::upstream() else {
        return;
    };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    crate::admin::add_user(
        &app,
        "lead@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let mut failures = Vec::new();
    let mut pages = 0;
    let started = std::time::SystemTime::now();
    for viewport in [(1280, 800), (360, 740)] {
        let Some(chrome) = Chrome::start_at(viewport) else {
            return;
        };
        let c = &chrome;
        let w = viewport.0;
        let slug = format!("own-{w}");
        let study = format!("/admin/studies/{slug}");
        let mut audit = Audit::new(c, axe.clone(), backend);
        let check = |audit: &mut Audit<'_>, name: &str| {
            audit.check_with(&format!("journey {name}"), ADMIN_LAYOUT);
        };
        sign_in(c, &base, "lead@example.org", crate::admin::PASSWORD);

        // Data: the team's own two situations (a tidy CSV) and upstream's instruments.
        let set = format!("pilot-set-{w}");
        let csv = tempfile::Builder::new().suffix(".csv").tempfile().unwrap();
        std::fs::write(
            csv.path(),
            "key,emotion,factor,text\n\
             Anger-0_scenario-0,Anger,Facing Self-Opinioned People,\"Your colleague takes credit for your idea, again.\"\n\
             Anger-0_scenario-1,Anger,Facing Self-Opinioned People,A neighbour insists you are wrong about your own garden.\n",
        )
        .unwrap();
        let upload = |input: &str, file: &Path, form: &str| {
            let el = c.css(input);
            c.cmd(
                "POST",
                &format!("/element/{el}/value"),
                json!({"text": file.to_str().unwrap()}),
            );
            c.click(&c.css(&format!("form[action='{form}'] button[type='submit']")));
            c.wait_for(&base, form);
            c.wait_for_text("Imported");
        };
        c.goto(&format!("{base}/admin/data"));
        fill(c, "situations-set", &set);
        upload("#situations-file", csv.path(), "/admin/data/situations");
        assert!(c.source().contains(&set));
        check(&mut audit, "situations uploaded");
        c.goto(&format!("{base}/admin/data"));
        upload(
            "#instruments-file",
            &data.join("questionnaires.json").canonicalize().unwrap(),
            "/admin/data/instruments",
        );
        check(&mut audit, "instruments uploaded");

        // A study from them, its consent text emptied: saved as a draft, refused to open.
        c.goto(&format!("{base}/admin/studies/new"));
        fill(c, "title", &format!("Our own study {w}"));
        fill(c, "slug", &slug);
        fill(c, "consent_text", "");
        fill(c, "instrument", "PANAS");
        fill(c, "set", &set);
        fill(c, "min_seconds", "0");
        c.click(&c.xpath("//button[contains(., 'Save')]"));
        c.wait_for(&base, &study);
        check(&mut audit, "draft from the uploads");
        c.click(&c.xpath("//button[@value='open']"));
        c.wait_for(&base, &format!("{study}/status"));
        c.wait_for_text("cannot open yet");
        assert!(
            c.source().to_lowercase().contains("consent"),
            "names what is missing"
        );
        check(&mut audit, "refused to open without consent");

        // The pilot link of the draft, walked to the end in this browser.
        c.goto(&format!("{base}{study}"));
        let pilot = c.exec(
            "return document.getElementById('pilot-url').value",
            json!([]),
        );
        let pilot = pilot
            .as_str()
            .expect("the study page shows a pilot link")
            .to_owned();
        c.goto(&pilot);
        for _ in 0..12 {
            if c.url().ends_with("/done") {
                break;
            }
            let before = c.url();
            // The situation page, as the guide shows it (a pilot's looks like anyone's).
            if crate::helpers::page_name(&before) == "situation" {
                guide_shot(c, backend, "survey-situation");
            }
            let went = c.exec(ANSWER_PAGE, json!([]));
            assert_ne!(went, "no button", "at {before}");
            let deadline = Instant::now() + Duration::from_secs(20);
            while c.url() == before && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(25));
            }
        }
        assert!(c.url().ends_with("/done"), "the pilot ends at {}", c.url());
        // Counted nowhere: the monitor's totals and the default exports.
        c.goto(&format!("{base}{study}"));
        let counts = monitor_counts(&app, &slug);
        assert_eq!(counts, (0, 0), "(active, completed) on the monitor's data");
        for file in ["long.csv", "wide.csv"] {
            assert_eq!(
                csv_lines(c, &format!("{base}{study}/export/{file}")),
                1,
                "{file}: the header only"
            );
        }
        check(&mut audit, "draft after its pilot");

        // Consent and the rest filled in: opened.
        c.goto(&format!("{base}{study}/edit"));
        fill(
            c,
            "consent_text",
            "We study how situations make people feel. Contact: lab@example.org.",
        );
        fill(
            c,
            "debrief_text",
            "Thank you. The situations were fictional.",
        );
        fill(c, "code_completed", "OWNCODE1");
        let next_year = chrono::Utc::now().date_naive() + chrono::Duration::days(365);
        fill(c, "retention", &next_year.format("%Y-%m-%d").to_string());
        c.click(&c.xpath("//button[contains(., 'Save')]"));
        c.wait_for(&base, &study);
        c.click(&c.xpath("//button[@value='open']"));
        c.wait_for(&base, &study);
        c.wait_for_text("<span class=\"badge\">open</span>");
        check(&mut audit, "opened");

        // A participant takes part; the team deletes them through the confirmation page.
        let pid = format!("{PID}{w}");
        crate::survey::walk_to(
            &app.browser(),
            &format!("/s/{slug}?PROLIFIC_PID={pid}"),
            "situation",
        );
        let who = export_id_of(&app, &pid);
        c.goto(&format!(
            "{base}{study}/participants/delete?participant={who}"
        ));
        check(&mut audit, "delete participant");
        c.click(&c.xpath("//button[contains(., 'Delete this participant')]"));
        c.wait_for(&base, &format!("{study}/participants/delete"));
        c.wait_for_text("Participant deleted");
        check(&mut audit, "participant deleted");

        // Duplicated for the next study.
        c.goto(&format!("{base}{study}/duplicate"));
        fill(c, "slug", &format!("{slug}-next"));
        c.click(&c.xpath("//button[contains(., 'Create the copy')]"));
        c.wait_for(&base, &format!("{study}-next"));
        check(&mut audit, "duplicate");

        // A researcher invited: the link, a password set through it, signed in.
        c.goto(&format!("{base}/admin/users"));
        let email = format!("colleague{w}@example.org");
        fill(c, "invite-email", &email);
        fill(c, "invite-role", "researcher");
        c.click(&c.xpath("//button[contains(., 'Create invitation link')]"));
        c.wait_for(&base, "/admin/users/invite");
        let link = c.exec(
            "return document.getElementById('invite-link').value",
            json!([]),
        );
        let link = link.as_str().unwrap().to_owned();
        check(&mut audit, "invitation");
        c.click(&c.xpath("//button[contains(., 'Sign out')]"));
        c.wait_for(&base, "/admin/login");
        c.goto(&link);
        fill(c, "password", "our colleague's passphrase");
        fill(c, "password2", "our colleague's passphrase");
        c.click(&c.css("form button[type='submit']"));
        c.wait_for_text("Your account is ready");
        check(&mut audit, "invitation accepted");
        sign_in(c, &base, &email, "our colleague's passphrase");
        assert!(
            c.source().contains(&slug),
            "the researcher sees the studies"
        );
        check(&mut audit, "researcher signed in");
        pages += audit.pages.len();
        failures.extend(audit.failures);
    }
    assert_eq!(pages, 2 * 12);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_guide_shots_written(backend, &["survey-situation"], started);
}

on_both_backends!(a_research_team_sets_up_pilots_and_launches_its_study_in_the_browser);

// --- The report (#16): charts read at 100 % and the admin report page, phone and desktop.

/// The report's own checks, in the page: every SVG drawn at its own size (so its text is the
/// size it says), no legend over a bar or any other mark of the plot (SVG bounding boxes),
/// every text of the page at 12 px or more. Returns the problems.
const REPORT_READABLE: &str = "var out = [];
function overlap(a, b) {
  return a.x < b.x + b.width && a.x + a.width > b.x && a.y < b.y + b.height && a.y + a.height > b.y;
}
var svgs = document.querySelectorAll('figure.chart svg');
if (svgs.length === 0) { out.push('no chart'); }
svgs.forEach(function (svg, i) {
  var scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
  if (Math.abs(scale - 1) > 0.01) { out.push('chart ' + i + ' drawn at ' + scale); }
  var legend = svg.querySelector('g.legend');
  if (!legend) { out.push('chart ' + i + ' without a legend'); return; }
  var lb = legend.getBBox();
  var marks = 0;
  svg.querySelectorAll('rect, circle, polygon, polyline, path, line, text').forEach(function (el) {
    if (legend.contains(el)) { return; }
    // The white background behind everything is not a mark.
    if (el.tagName === 'rect' && el.getAttribute('fill') === '#FFFFFF') { return; }
    marks += 1;
    var b = el.getBBox();
    if (overlap(b, lb)) { out.push('chart ' + i + ': legend over ' + el.outerHTML.slice(0, 90)); }
  });
  if (marks < 20) { out.push('chart ' + i + ' has only ' + marks + ' marks'); }
});
var texts = 0;
document.querySelectorAll('body *').forEach(function (el) {
  var own = Array.prototype.some.call(el.childNodes, function (n) {
    return n.nodeType === 3 && n.textContent.trim() !== '';
  });
  if (!own || el.closest('option')) { return; }
  var r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) { return; }
  var svg = el.closest('svg');
  var scale = svg ? svg.getBoundingClientRect().width / svg.width.baseVal.value : 1;
  var px = parseFloat(getComputedStyle(el).fontSize) * scale;
  texts += 1;
  if (px < 12) { out.push(px.toFixed(1) + ' px: ' + el.textContent.trim().slice(0, 40)); }
});
if (texts < 50) { out.push('only ' + texts + ' texts'); }
return out.slice(0, 20);";

/// The standalone HTML report (from `emotionbench report --format html`) and the admin report
/// page with the published humans and two models, at 360×740 and 1280×800: the charts at their
/// size with no legend over a mark, all text ≥ 12 px, axe 0 serious or critical.
fn a_real_browser_reads_the_report_and_its_page_on_a_phone_and_a_desktop(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    if crate::helpers::upstream().is_none() {
        return;
    }
    let backend = backend_name(&db);
    crate::report::import_published(&db);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    crate::helpers::ok(crate::helpers::cli(
        &db.url,
        &[
            "report",
            "--study",
            "crowd",
            "--format",
            "html",
            "-o",
            html.to_str().unwrap(),
        ],
    ));
    let app = spawn_app(db);
    crate::admin::add_user(
        &app,
        "reader@example.org",
        emotionbench::store::users::Role::Researcher,
    );
    let base = app.base.clone();
    let mut failures = Vec::new();
    let mut pages = 0;
    let started = std::time::SystemTime::now();
    for viewport in [(360, 740), (1280, 800)] {
        let Some(chrome) = Chrome::start_at(viewport) else {
            return;
        };
        let c = &chrome;
        let mut audit = Audit::new(c, axe.clone(), backend);
        c.goto(&format!("file://{}", html.display()));
        c.wait_for_text("Figure 3.");
        for p in c.exec(REPORT_READABLE, json!([])).as_array().unwrap() {
            failures.push(format!("standalone {viewport:?}: {}", p.as_str().unwrap()));
        }
        audit.check_with("report standalone", ADMIN_LAYOUT);
        sign_in(c, &base, "reader@example.org", crate::admin::PASSWORD);
        let path = "/admin/studies/crowd/report";
        c.goto(&format!(
            "{base}{path}?mode=paper&models=gpt-4&models=gpt-3.5-turbo"
        ));
        c.wait_for(&base, path);
        c.wait_for_text("Figure 3.");
        for p in c.exec(REPORT_READABLE, json!([])).as_array().unwrap() {
            failures.push(format!("admin {viewport:?}: {}", p.as_str().unwrap()));
        }
        // The form: each label sits right above its own field (same column, just above).
        let misplaced = c.exec(
            "var out = [];
             document.querySelectorAll('form.report-options label').forEach(function (l) {
               var f = document.getElementById(l.htmlFor), a = l.getBoundingClientRect(),
                   b = f.getBoundingClientRect();
               if (Math.abs(a.left - b.left) > 2 || b.top < a.bottom - 1 || b.top - a.bottom > 12) {
                 out.push(l.textContent);
               }
             }); return out;",
            json!([]),
        );
        assert_eq!(misplaced, json!([]), "{viewport:?}");
        audit.check_with("admin report", ADMIN_LAYOUT);
        // The guide shows the report's first table, below the form.
        c.exec(
            "document.querySelector('main table').scrollIntoView(); return null;",
            json!([]),
        );
        guide_shot(c, backend, "report");
        c.goto(&format!("{base}{path}?models=gpt-44"));
        c.wait_for_text("The report cannot be made");
        audit.check_with("admin report, unknown model", ADMIN_LAYOUT);
        pages += audit.pages.len();
        failures.extend(audit.failures);
    }
    assert_eq!(pages, 6);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_guide_shots_written(backend, &["report"], started);
}

on_both_backends!(a_real_browser_reads_the_report_and_its_page_on_a_phone_and_a_desktop);

/// The Prolific pages (#15): the study's Prolific page before a draft, with a draft and its
/// submissions (approve, reject and return forms), a refused rejection, and the
/// reconciliation, at 360 and 1280 px against the fake Prolific API; axe 0 serious or critical.
fn the_prolific_pages_pass_axe_on_a_phone_and_a_desktop(db: TestDb) {
    use emotionbench::config::Secret;
    use emotionbench::prolific::fake::FakeProlific;
    let Some(axe) = axe_source() else { return };
    let backend = backend_name(&db);
    let fake = FakeProlific::start("browser-token").unwrap();
    let fake_base = fake.base_url();
    let app = crate::helpers::spawn_app_with(db, move |s| {
        s.prolific.base_url = fake_base;
        s.prolific.token = Some(Secret::new("browser-token"));
    });
    make_study(&app, "pro", |_| {});
    make_study(&app, "fresh", |_| {});
    crate::survey::walk_to(
        &app.browser(),
        "/s/pro?PROLIFIC_PID=pb-active&STUDY_ID=x&SESSION_ID=sb-active",
        "situation",
    );
    crate::survey::walk_to(
        &app.browser(),
        "/s/pro?PROLIFIC_PID=pb-done&STUDY_ID=x&SESSION_ID=sb-done",
        "never",
    );
    let client =
        emotionbench::prolific::ProlificClient::new(&emotionbench::config::ProlificSettings {
            base_url: fake.base_url(),
            token: Some(Secret::new("browser-token")),
            ..Default::default()
        });
    let id = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let input = emotionbench::store::prolific::DraftSettings {
            description: "Rate your feelings before and after an everyday situation.".into(),
            reward_cents: 150,
            places: None,
            auto_approve: false,
            screen_out_reward_cents: None,
        };
        emotionbench::app::prolific::draft(
            &mut conn,
            &client,
            "https://bench.example.org",
            "pro",
            &input,
            &emotionbench::store::audit::Actor::Cli,
        )
        .unwrap()
        .prolific_study_id
    };
    fake.add_submission(&id, "sb-done", "pb-done", "AWAITING REVIEW");
    fake.add_submission(&id, "sb-active", "pb-active", "RETURNED");
    fake.add_submission(&id, "sb-elsewhere", "pb-elsewhere", "AWAITING REVIEW");
    crate::admin::add_user(
        &app,
        "prolific@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let walked = admin_at_both_widths(
        &base,
        &axe,
        backend,
        "prolific@example.org",
        |c, audit, viewport| {
            c.goto(&format!("{base}/admin/studies/fresh/prolific"));
            c.wait_for(&base, "/admin/studies/fresh/prolific");
            assert!(c.source().contains("Create the Prolific draft"));
            audit.check_with("admin prolific, no draft", ADMIN_LAYOUT);
            c.goto(&format!("{base}/admin/studies/pro/prolific"));
            c.wait_for(&base, "/admin/studies/pro/prolific");
            assert!(c.source().contains("sb-elsewhere"));
            audit.check_with("admin prolific, submissions", ADMIN_LAYOUT);
            fill(c, "reject-message", "Too short.");
            // The browser's own minlength check would stop the form; the server's is what counts.
            c.exec(
                "document.getElementById('reject-message').removeAttribute('minlength');",
                json!([]),
            );
            c.click(&c.xpath("//button[contains(., 'Reject')]"));
            c.wait_for(&base, "/admin/studies/pro/prolific/reject");
            c.wait_for_text("at least 100");
            audit.check_with("admin prolific, refused rejection", ADMIN_LAYOUT);
            c.goto(&format!("{base}/admin/studies/pro/prolific/reconcile"));
            c.wait_for(&base, "/admin/studies/pro/prolific/reconcile");
            let source = c.source();
            assert!(source.contains("release the reservation"), "{source}");
            assert!(source.contains("approve"), "{source}");
            audit.check_with("admin prolific reconciliation", ADMIN_LAYOUT);
            if viewport.0 == 1280 {
                // The release button gives the returned participant's place back.
                c.click(&c.xpath("//button[contains(., 'Release the 1 reservation')]"));
                c.wait_for(&base, "/admin/studies/pro/prolific");
                c.wait_for_text("Released 1 reservation(s).");
                audit.check_with("admin prolific, released", ADMIN_LAYOUT);
            }
        },
    );
    let Some(pages) = walked else {
        return;
    };
    assert_eq!(pages, 9);
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, "pro").unwrap().unwrap();
    let p = participants::by_pid(&mut conn, s.id, "pb-active")
        .unwrap()
        .unwrap();
    assert!(p.reserved_until.is_none(), "the place was released");
}

on_both_backends!(the_prolific_pages_pass_axe_on_a_phone_and_a_desktop);

/// The monitor (#15 point 5) of a running study (completions spread over hours, people on
/// several pages, a withdrawal), of an imported study, the door settings page and a door's
/// refusal page, at 360 and 1280 px: axe 0 serious or critical on each; the screenshots
/// (target/screenshots/admin-monitor-*.png) are for a person to look at.
fn a_real_browser_reads_the_monitor_and_the_door_pages(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    make_study(&app, "mon", |_| {});
    make_study(&app, "po", |_| {});
    for i in 0..14 {
        crate::survey::walk_to(
            &app.browser(),
            &format!("/s/mon?PROLIFIC_PID=done{i}"),
            "done",
        );
    }
    for (i, page) in ["feelings-now", "feelings-now", "situation", "check"]
        .into_iter()
        .enumerate()
    {
        crate::survey::walk_to(&app.browser(), &format!("/s/mon?PROLIFIC_PID=on{i}"), page);
    }
    {
        use schema::participants as p;
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let rows: Vec<(i64, Option<NaiveDateTime>)> = p::table
            .filter(p::completed_at.is_not_null())
            .select((p::id, p::completed_at))
            .order(p::id)
            .load(&mut conn)
            .unwrap();
        for (i, (id, at)) in rows.into_iter().enumerate() {
            let at = at.unwrap() - chrono::Duration::minutes(i as i64 * 47 % 600);
            diesel::update(p::table.find(id))
                .set((p::completed_at.eq(at), p::flag_fast.eq(i % 5 == 0)))
                .execute(&mut conn)
                .unwrap();
        }
        emotionbench::app::demo::generate_study(&mut conn, "imp", 30, 4).unwrap();
        let imp: i64 = schema::studies::table
            .filter(schema::studies::slug.eq("imp"))
            .select(schema::studies::id)
            .first(&mut conn)
            .unwrap();
        diesel::update(p::table.filter(p::study_id.eq(imp)))
            .set(p::imported.eq(true))
            .execute(&mut conn)
            .unwrap();
        let po = studies::load(&mut conn, "po").unwrap().unwrap();
        let door = emotionbench::domain::door::DoorSettings {
            prolific_only: true,
            ..Default::default()
        };
        emotionbench::store::doors::save(&mut conn, po.id, &door, &[]).unwrap();
    }
    crate::admin::add_user(
        &app,
        "monitor@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let walked = admin_at_both_widths(
        &base,
        &axe,
        backend,
        "monitor@example.org",
        |c, audit, viewport| {
            c.goto(&format!("{base}/admin/studies/mon"));
            c.wait_for(&base, "/admin/studies/mon");
            let source = c.source();
            assert!(
                source.contains("<svg") && source.contains("Completions per"),
                "{source}"
            );
            assert!(source.contains("How far participants got"), "{source}");
            audit.check_with("admin monitor", ADMIN_LAYOUT);
            // The chart and the funnel, for a person to look at.
            for part in ["over-time", "funnel"] {
                c.exec(
                    "document.getElementById(arguments[0]).scrollIntoView()",
                    json!([part]),
                );
                c.screenshot(&target_dir().join(format!(
                    "screenshots/admin-monitor-{part}-{}x{}-{backend}.png",
                    viewport.0, viewport.1
                )));
            }
            c.goto(&format!("{base}/admin/studies/imp"));
            c.wait_for(&base, "/admin/studies/imp");
            let source = c.source();
            assert!(source.contains("Imported data"), "{source}");
            assert!(!source.contains("Participant link"), "{source}");
            audit.check_with("admin monitor imported", ADMIN_LAYOUT);
            c.goto(&format!("{base}/admin/studies/mon/door"));
            c.wait_for(&base, "/admin/studies/mon/door");
            audit.check_with("admin door settings", ADMIN_LAYOUT);
            c.goto(&format!("{base}/s/po"));
            c.wait_for_text("only for Prolific participants");
            audit.check("door refusal");
        },
    );
    let Some(pages) = walked else {
        return;
    };
    assert_eq!(pages, 8);
}

on_both_backends!(a_real_browser_reads_the_monitor_and_the_door_pages);

/// What the language journeys expect to read, per language (issue #20).
struct Expected {
    tag: &'static str,
    consent: &'static str,
    demographics: &'static str,
    withdraw: &'static str,
    feelings_now: &'static str,
    open_items: &'static str,
    situation: &'static str,
    check: &'static str,
    debrief: &'static str,
    done: &'static str,
}

const GERMAN: Expected = Expected {
    tag: "de",
    consent: "Information und Einwilligung",
    demographics: "Über Sie",
    withdraw: "Von der Studie zurücktreten?",
    feelings_now: "Wie fühlen Sie sich gerade?",
    open_items: "Bitte beantworten Sie die noch offene Aussage, bevor Sie weitermachen",
    situation: "Stellen Sie sich diese Situation vor",
    check: "Noch eine Frage",
    debrief: "Über diese Studie",
    done: "Vielen Dank!",
};

const CHINESE: Expected = Expected {
    tag: "zh-CN",
    consent: "研究说明与知情同意",
    demographics: "关于您",
    withdraw: "要退出本研究吗？",
    feelings_now: "您此刻感觉如何？",
    open_items: "继续之前，请回答尚未作答的 1 个条目",
    situation: "想象这个情境",
    check: "还有一个问题",
    debrief: "关于本研究",
    done: "谢谢！",
};

/// The page's `<html lang>`, `dir` and `<h1>` as the browser has them.
fn lang_dir_heading(c: &Chrome) -> (String, String, String) {
    let v = c.exec(
        "var h = document.querySelector('h1');
         return [document.documentElement.lang, getComputedStyle(document.body).direction,
                 h ? h.textContent.trim() : ''];",
        json!([]),
    );
    let s = |i: usize| v[i].as_str().unwrap_or("").to_owned();
    (s(0), s(1), s(2))
}

#[track_caller]
fn assert_page(c: &Chrome, want: &Expected, heading: &str) {
    let (lang, dir, h1) = lang_dir_heading(c);
    assert_eq!(
        (lang.as_str(), dir.as_str(), h1.as_str()),
        (want.tag, "ltr", heading)
    );
}

/// One participant's whole survey in `want`'s language, chosen on the consent page's
/// switcher (the German one) or by the link's `lang=` (the Chinese one), every page audited.
fn journey_in(
    c: &Chrome,
    audit: &mut Audit<'_>,
    app: &crate::helpers::TestApp,
    want: &Expected,
    pid: &str,
    by_switcher: bool,
) {
    let base = app.base.clone();
    let floors = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let study = studies::load(&mut conn, "langs").unwrap().unwrap();
        emotionbench::app::evidence::page_floors(&mut conn, &study).unwrap()
    };
    let page = |p: &str| format!("/s/langs/{p}");
    let name = |p: &str| format!("{} {p}", want.tag);
    if by_switcher {
        c.goto(&format!("{base}/s/langs?PROLIFIC_PID={pid}"));
        c.wait_for(&base, &page("consent"));
        assert_eq!(lang_dir_heading(c).0, "en");
        c.click(&c.css(&format!("nav.languages a[hreflang='{}']", want.tag)));
        c.wait_for_text(want.consent);
    } else {
        c.goto(&format!(
            "{base}/s/langs?PROLIFIC_PID={pid}&lang={}",
            want.tag
        ));
        c.wait_for(&base, &page("consent"));
    }
    assert_page(c, want, want.consent);
    audit.check(&name("consent"));
    c.click(&c.css("button[name='consent'][value='yes']"));

    c.wait_for(&base, &page("demographics"));
    assert_page(c, want, want.demographics);
    audit.check(&name("demographics"));
    c.click(&c.css("footer a"));
    c.wait_for(&base, &page("withdraw"));
    assert_page(c, want, want.withdraw);
    audit.check(&name("withdraw confirmation"));
    c.click(&c.css("main a.button"));
    c.wait_for(&base, &page("demographics"));
    choose(
        c,
        &[
            ("gender", "Female"),
            ("year_of_birth", "1990"),
            ("country", "Germany"),
            ("employment_status", "Student"),
            ("education", "Vocational training"),
        ],
    );
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("feelings-now"));
    let shown = Instant::now();
    assert_page(c, want, want.feelings_now);
    let items = items_in(&c.source());
    for &n in &items[..items.len() - 1] {
        click_radio(
            c,
            &format!("item-{n}"),
            &panas_value("feelings-now", n).to_string(),
        );
    }
    c.click(&c.css("form button[type='submit']"));
    c.wait_for_text(want.open_items);
    audit.check(&name("feelings-now with errors"));
    let last = items[items.len() - 1];
    click_radio(
        c,
        &format!("item-{last}"),
        &panas_value("feelings-now", last).to_string(),
    );
    pause_past(shown, floors.floor(Page::PanasBefore, None));
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("situation"));
    let shown = Instant::now();
    assert_page(c, want, want.situation);
    audit.check(&name("situation"));
    let situation = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let study = studies::load(&mut conn, "langs").unwrap().unwrap();
        participants::by_pid(&mut conn, study.id, pid)
            .unwrap()
            .unwrap()
            .situation_id
    };
    pause_past(shown, floors.floor(Page::Situation, situation));
    c.click(&c.css("#continue"));

    c.wait_for(&base, &page("feelings-imagined"));
    let shown = Instant::now();
    audit.check(&name("feelings-imagined"));
    for n in items_in(&c.source()) {
        click_radio(
            c,
            &format!("item-{n}"),
            &panas_value("feelings-imagined", n).to_string(),
        );
    }
    pause_past(shown, floors.floor(Page::PanasAfter, None));
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("check"));
    let shown = Instant::now();
    assert_page(c, want, want.check);
    audit.check(&name("check"));
    // The stored value stays the English option, whatever the label says.
    click_radio(c, "answer", "A little");
    pause_past(shown, floors.floor(Page::Check, None));
    c.click(&c.css("form button[type='submit']"));

    c.wait_for(&base, &page("debrief"));
    assert_page(c, want, want.debrief);
    audit.check(&name("debrief"));
    c.click(&c.css("form button[type='submit']"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c
        .url()
        .starts_with("https://app.prolific.com/submissions/complete")
    {
        assert!(
            Instant::now() < deadline,
            "never redirected; at {}",
            c.url()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    c.goto(&format!("{base}/s/langs"));
    c.wait_for(&base, &page("done"));
    assert_page(c, want, want.done);
    audit.check(&name("done"));

    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, "langs").unwrap().unwrap();
    let p = participants::by_pid(&mut conn, study.id, pid)
        .unwrap()
        .unwrap();
    assert_eq!(p.status.as_str(), "completed");
    assert_eq!(p.language.as_deref(), Some(want.tag));
}

/// Issue #20: the survey in German (chosen on the consent page) and in Chinese (from the
/// link), every page audited at 360 px; the consent pages also at 1280 px; a right-to-left
/// catalogue (an Arabic stub the test writes) laid out right to left; and the study's report
/// with its humans by language, at both widths.
fn a_real_browser_takes_the_survey_in_german_and_in_chinese(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let Some(chrome) = Chrome::start() else {
        return;
    };
    let backend = backend_name(&db);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ar.ftl"),
        "language-name = العربية\nconsent-heading = معلومات وموافقة\ncontinue = متابعة\n",
    )
    .unwrap();
    let folder = dir.path().to_owned();
    let app = crate::helpers::spawn_app_with(db, move |s| s.catalogue_dir = Some(folder));
    let tags = ["en", "de", "zh-CN", "ar"];
    make_study(&app, "langs", |c| {
        c.languages = tags
            .iter()
            .map(|t| emotionbench::domain::language::Lang::parse(t).unwrap())
            .collect();
        // The consent in German; the other languages fall back to the English one.
        c.translations.insert(
            emotionbench::domain::language::Lang::parse("de").unwrap(),
            emotionbench::domain::study::StudyTexts {
                title: String::new(),
                consent: GERMAN_CONSENT.into(),
                debrief: "Vielen Dank.".into(),
            },
        );
    });
    let c = &chrome;
    let mut audit = Audit::new(c, axe.clone(), backend);
    journey_in(c, &mut audit, &app, &GERMAN, "pidlangde1", true);
    journey_in(c, &mut audit, &app, &CHINESE, "pidlangzh1", false);

    // Right to left: the page's direction, and the switcher and buttons laid out from the
    // right edge.
    // A new visitor: this browser's cookie names the Chinese participant, who is done.
    c.cmd("DELETE", "/cookie", Value::Null);
    c.goto(&format!("{}/s/langs/consent?lang=ar", app.base));
    c.wait_for_text("معلومات وموافقة");
    let (lang, dir, h1) = lang_dir_heading(c);
    assert_eq!(
        (lang.as_str(), dir.as_str(), h1.as_str()),
        ("ar", "rtl", "معلومات وموافقة")
    );
    let mirrored = c.exec(
        "var r = document.createRange(); r.selectNodeContents(document.querySelector('h1'));
         var h = r.getBoundingClientRect();
         var m = document.querySelector('main').getBoundingClientRect();
         return Math.abs(m.right - h.right) < Math.abs(h.left - m.left);",
        json!([]),
    );
    assert_eq!(mirrored, true, "the heading starts at the right");
    audit.check("ar consent");
    // The report of the study (#20, point 3): its humans split by the language they took
    // part in, on a phone here and on a desktop below.
    crate::admin::add_user(
        &app,
        "langs@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let report_by_language = |c: &Chrome, audit: &mut Audit<'_>, width: &str| {
        sign_in(c, &app.base, "langs@example.org", crate::admin::PASSWORD);
        c.goto(&format!("{}/admin/studies/langs/report", app.base));
        c.wait_for(&app.base, "/admin/studies/langs/report");
        let source = c.source();
        assert!(source.contains("By language"), "{source}");
        audit.check_with(&format!("report {width}"), ADMIN_LAYOUT);
        c.exec(
            "Array.from(document.querySelectorAll('h2')).find(function (h) { \
               return h.textContent === 'By language'; }).scrollIntoView();",
            json!([]),
        );
        audit.check_with(&format!("report by language {width}"), ADMIN_LAYOUT);
        // The study form with a consent and debrief field pair for each other language.
        c.goto(&format!("{}/admin/studies/langs/edit", app.base));
        c.wait_for(&app.base, "/admin/studies/langs/edit");
        let source = c.source();
        for tag in ["de", "zh-CN", "ar"] {
            assert!(
                source.contains(&format!("<legend>Consent and debrief in {tag}</legend>")),
                "{source}"
            );
        }
        assert!(source.contains(GERMAN_CONSENT), "{source}");
        audit.check_with(
            &format!("study form in four languages {width}"),
            ADMIN_LAYOUT,
        );
    };
    report_by_language(c, &mut audit, "phone");
    let mut failures = std::mem::take(&mut audit.failures);
    let mut minor = std::mem::take(&mut audit.minor);
    let mut pages = audit.pages.len();
    drop(audit);
    drop(chrome);

    let Some(desktop) = Chrome::start_at((1280, 800)) else {
        return;
    };
    let mut wide = Audit::new(&desktop, axe, backend);
    for tag in ["de", "zh-CN", "ar"] {
        desktop.goto(&format!("{}/s/langs/consent?lang={tag}", app.base));
        desktop.wait_for(&app.base, "/s/langs/consent");
        assert_eq!(lang_dir_heading(&desktop).0, tag);
        // The German consent for German participants, the English one for the others.
        assert_eq!(
            desktop.source().contains(GERMAN_CONSENT),
            tag == "de",
            "{tag}"
        );
        wide.check(&format!("{tag} consent desktop"));
    }
    report_by_language(&desktop, &mut wide, "desktop");
    pages += wide.pages.len();
    failures.extend(wide.failures);
    minor.extend(wide.minor);
    for m in &minor {
        eprintln!("minor: {m}");
    }
    assert_eq!(pages, 2 * 9 + 1 + 3 + 2 * 3);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The German consent of the study the browser takes in four languages.
const GERMAN_CONSENT: &str = "Diese Studie leitet das Emotion Lab der Beispiel-Universität.";

on_both_backends!(a_real_browser_takes_the_survey_in_german_and_in_chinese);

/// Issue #18, acceptance point 3: a participant writes free text on the situation page, on a
/// phone (360 px) and on a desktop (1280 px). In each, the page with the field and the page
/// refusing an over-long text (the browser's `maxlength` taken off, as a form-filler would)
/// pass axe and the layout check, and so does the study form's free-text fieldset; the text
/// typed with the keyboard is what the export has.
fn a_real_browser_writes_free_text_on_the_situation_page_on_a_phone_and_a_desktop(db: TestDb) {
    let Some(axe) = axe_source() else { return };
    let backend = backend_name(&db);
    let app = spawn_app(db);
    crate::freetext::make_text_study(&app, "texts", true, 120);
    crate::admin::add_user(
        &app,
        "texts@example.org",
        emotionbench::store::users::Role::Admin,
    );
    let base = app.base.clone();
    let page = |p: &str| format!("/s/texts/{p}");
    let mut failures = Vec::new();
    let mut minor = Vec::new();
    let mut pages = 0;
    let mut typed = Vec::new();
    for (viewport, pid) in [
        ((360, 740), "5f1a2b3c4d5e6f7a8b9c0f01"),
        ((1280, 800), "5f1a2b3c4d5e6f7a8b9c0f02"),
    ] {
        let Some(chrome) = Chrome::start_at(viewport) else {
            return;
        };
        let c = &chrome;
        let mut audit = Audit::new(c, axe.clone(), backend);
        c.goto(&format!("{base}/s/texts?PROLIFIC_PID={pid}"));
        c.wait_for(&base, &page("consent"));
        c.click(&c.css("button[name='consent'][value='yes']"));
        c.wait_for(&base, &page("demographics"));
        for (name, value) in [
            ("gender", "Female"),
            ("year_of_birth", "1990"),
            ("country", "Prefer not to say"),
            ("employment_status", "Student"),
            ("education", "University - Bachelors"),
        ] {
            fill(c, &format!("f-{name}"), value);
        }
        c.click(&c.css("button[type='submit']"));
        c.wait_for(&base, &page("feelings-now"));
        for n in items_in(&c.source()) {
            click_radio(
                c,
                &format!("item-{n}"),
                &panas_value("feelings-now", n).to_string(),
            );
        }
        c.click(&c.css("form button[type='submit']"));

        c.wait_for(&base, &page("situation"));
        let source = c.source();
        assert!(source.contains("<textarea"), "{source}");
        assert!(source.contains(crate::freetext::HUMAN_PROMPT), "{source}");
        c.exec(
            "document.getElementById('free-text').scrollIntoView({block: 'center'});",
            json!([]),
        );
        audit.check("free-text situation");
        // Over the limit: the page comes back with the message and the text.
        c.exec(
            "document.getElementById('free-text').removeAttribute('maxlength');",
            json!([]),
        );
        let field = c.css("#free-text");
        c.cmd(
            "POST",
            &format!("/element/{field}/value"),
            json!({"text": "x".repeat(121)}),
        );
        c.click(&c.css("#continue"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.exec(
            "return document.readyState === 'complete' && !!document.getElementById('free-text-error')",
            json!([]),
        ) != true
        {
            assert!(Instant::now() < deadline, "no error after an over-long text");
            std::thread::sleep(Duration::from_millis(25));
        }
        assert_eq!(
            c.exec(
                "return document.getElementById('free-text').value.length",
                json!([])
            ),
            json!(121),
            "the text is kept"
        );
        c.exec(
            "document.getElementById('free-text').scrollIntoView({block: 'center'});",
            json!([]),
        );
        audit.check("free-text refused");
        // Typed with the keyboard: a line break and a formula among the words.
        let text = format!("=1+1 they are loud at night ({}).\nBut kind.", viewport.0);
        let field = c.css("#free-text");
        c.cmd("POST", &format!("/element/{field}/clear"), json!({}));
        c.cmd(
            "POST",
            &format!("/element/{field}/value"),
            json!({"text": text}),
        );
        c.click(&c.css("#continue"));

        c.wait_for(&base, &page("feelings-imagined"));
        for n in items_in(&c.source()) {
            click_radio(
                c,
                &format!("item-{n}"),
                &panas_value("feelings-imagined", n).to_string(),
            );
        }
        c.click(&c.css("form button[type='submit']"));
        c.wait_for(&base, &page("check"));
        click_radio(c, "answer", "A little");
        c.click(&c.css("form button[type='submit']"));
        c.wait_for(&base, &page("debrief"));
        c.click(&c.css("form button[type='submit']"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while !c
            .url()
            .starts_with("https://app.prolific.com/submissions/complete")
        {
            assert!(
                Instant::now() < deadline,
                "never redirected; at {}",
                c.url()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // The researcher's side: the study form's fieldset, as the edit form shows it.
        sign_in(c, &base, "texts@example.org", crate::admin::PASSWORD);
        c.goto(&format!("{base}/admin/studies/texts/edit"));
        c.wait_for(&base, "/admin/studies/texts/edit");
        assert_eq!(
            c.exec(
                "return document.getElementById('free_text_task').value",
                json!([])
            ),
            json!(crate::freetext::HUMAN_TASK)
        );
        c.exec(
            "document.getElementById('free_text_task').scrollIntoView({block: 'center'});",
            json!([]),
        );
        audit.check_with("free-text study form", ADMIN_LAYOUT);
        pages += audit.pages.len();
        failures.extend(std::mem::take(&mut audit.failures));
        minor.extend(std::mem::take(&mut audit.minor));
        typed.push(text);
    }
    for m in &minor {
        eprintln!("minor: {m}");
    }
    assert_eq!(pages, 6);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The export has each participant's text as typed, the formula neutralised.
    let researcher = crate::admin::signed_in(&app, emotionbench::store::users::Role::Researcher);
    let wide = researcher.get("/admin/studies/texts/export/wide.csv");
    assert_eq!(wide.status, 200);
    let mut r = csv::Reader::from_reader(wide.body.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
    let at = header.iter().position(|h| h == "free_text").unwrap();
    let mut exported: Vec<String> = r.records().map(|rec| rec.unwrap()[at].to_owned()).collect();
    exported.sort();
    let mut want: Vec<String> = typed.iter().map(|t| format!("'{t}")).collect();
    want.sort();
    assert_eq!(exported, want);
}

on_both_backends!(a_real_browser_writes_free_text_on_the_situation_page_on_a_phone_and_a_desktop);
