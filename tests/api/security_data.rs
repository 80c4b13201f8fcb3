//! Issue #14, the data and transport side of the black-box probe: formula injection in CSV
//! exports and reports, Markdown injection in reports, birth years that are not years, study
//! slugs that shadow routes, world-readable data files, slow clients, HEAD, and the proxy's
//! HSTS. Each test performs the attack and asserts the safe outcome.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use emotionbench::domain::instrument::Instrument;
use emotionbench::store::users;

use crate::admin::signed_in;
use crate::exports::pandas_python;
use crate::helpers::{TestApp, TestDb, cli, ok, spawn_app, spawn_app_with, stderr};
use crate::on_both_backends;
use crate::survey::{make_study, walk_to};

/// A factor name from a situation file, a formula.
const FACTOR: &str = "=HYPERLINK(\"http://evil.example/f\",\"factor\")";
/// Imported demographics.
const COUNTRY: &str = "=HYPERLINK(\"http://evil.example/c\",\"UK\")";
const GENDER: &str = "@SUM(1+1)*cmd|' /C calc'!A0";
const EMPLOYMENT: &str = "+44 20 7946 0000";
/// A model name: a formula for spreadsheets, a script and a table break for Markdown.
const MODEL: &str = "=cmd|' /C calc'!A0 <script>alert(1)</script> | x";
/// A live participant's PROLIFIC_PID: entry allows letters, digits, '-' and '_', and a
/// spreadsheet evaluates this one (as -2 - 3 - the name cmd_calc).
const PID: &str = "-2-3-cmd_calc";

/// What makes a spreadsheet evaluate a cell (OWASP).
fn dangerous(cell: &str) -> bool {
    let plain_number = cell.parse::<f64>().is_ok_and(f64::is_finite)
        && cell.bytes().all(|b| b"+-.0123456789eE".contains(&b));
    cell.starts_with(['=', '+', '-', '@', '\t', '\r']) && !plain_number
}

fn write_csv(path: &Path, rows: &[Vec<String>]) {
    let mut w = csv::Writer::from_path(path).unwrap();
    for r in rows {
        w.write_record(r).unwrap();
    }
    w.flush().unwrap();
}

/// Study `inj` (closed, imported): a situation set whose factor is a formula, two imported
/// participants with formulas for demographics (and negative score changes), and an imported
/// model run whose model name is a formula, a script and a pipe.
fn injected_study(db: &TestDb, dir: &Path) {
    let panas = Instrument::panas();
    let situations = dir.join("situations.csv");
    let mut rows = vec![
        [
            "key",
            "emotion",
            "factor_index",
            "factor_name",
            "scenario_index",
            "text",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for s in 0..2 {
        rows.push(vec![
            format!("Anger-0_scenario-{s}"),
            "Anger".into(),
            "0".into(),
            FACTOR.into(),
            s.to_string(),
            format!("Someone ignores you, again ({s})."),
        ]);
    }
    write_csv(&situations, &rows);
    ok(cli(
        &db.url,
        &[
            "import",
            "situations",
            situations.to_str().unwrap(),
            "--set",
            "inj-set",
        ],
    ));
    let humans = dir.join("humans.csv");
    let mut header: Vec<String> = [
        "participant",
        "situation_id",
        "emotion",
        "factor_index",
        "scenario_index",
        "gender",
        "year_of_birth",
        "country",
        "employment_status",
        "education",
    ]
    .map(str::to_owned)
    .to_vec();
    for phase in ["before", "after"] {
        for item in &panas.items {
            header.push(format!("{phase}_{}_{}", item.number, item.text));
        }
    }
    let person = |n: &str, situation: &str, demo: [&str; 5]| {
        let mut row: Vec<String> = vec![n.into(), situation.into(), "Anger".into(), "0".into()];
        row.push(situation.chars().last().map_or("0".into(), |c| {
            (c.to_digit(10).unwrap_or(1) - 1).to_string()
        }));
        row.extend(demo.map(str::to_owned));
        // 3 before, 1 after: both scores fall, so the *_diff columns are negative numbers.
        row.extend(std::iter::repeat_n("3".to_owned(), panas.items.len()));
        row.extend(std::iter::repeat_n("1".to_owned(), panas.items.len()));
        row
    };
    write_csv(
        &humans,
        &[
            header,
            person(
                "1",
                "Angry_F1S1",
                [GENDER, "1990", COUNTRY, EMPLOYMENT, "-"],
            ),
            person(
                "2",
                "Angry_F1S2",
                ["Female", "1985", "United Kingdom", "Employed", "None"],
            ),
        ],
    );
    ok(cli(
        &db.url,
        &[
            "import",
            "humans",
            humans.to_str().unwrap(),
            "--study",
            "inj",
            "--set",
            "inj-set",
        ],
    ));
    let results = dir.join("model.csv");
    let mut rows = vec![vec![
        "question-0".to_owned(),
        "order-0".into(),
        "General_test-0_order-0".into(),
        "Anger-0_scenario-0_test-0_order-0".into(),
        "Anger-0_scenario-1_test-0_order-0".into(),
    ]];
    rows.push(vec![
        String::new(),
        String::new(),
        "prompt".into(),
        "situation 0".into(),
        "situation 1".into(),
    ]);
    for item in &panas.items {
        rows.push(vec![
            format!("{}. {}", item.number, item.text),
            item.number.to_string(),
            "3".into(),
            "1".into(),
            "1".into(),
        ]);
    }
    write_csv(&results, &rows);
    ok(cli(
        &db.url,
        &[
            "import",
            "model-results",
            results.to_str().unwrap(),
            "--study",
            "inj",
            &format!("--model={MODEL}"),
        ],
    ));
}

/// The cells of a CSV file exactly as written (header, rows).
fn read_cells(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (header, rows)
}

fn column<'a>(file: &'a (Vec<String>, Vec<Vec<String>>), name: &str) -> Vec<&'a str> {
    let i = file
        .0
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    file.1.iter().map(|r| r[i].as_str()).collect()
}

/// No cell of the file would be evaluated by a spreadsheet.
#[track_caller]
fn assert_inert(what: &str, text: &str) {
    let (header, rows) = read_cells(text);
    for (r, row) in std::iter::once(&header).chain(&rows).enumerate() {
        for (c, cell) in row.iter().enumerate() {
            assert!(
                !dangerous(cell),
                "{what}: row {r}, column {}: {cell:?} would run as a formula",
                header[c]
            );
        }
    }
}

/// pandas' view of `columns` of each file: every cell as text (`dtype=str`) and each column's
/// dtype when pandas parses the file as usual.
fn pandas_read(python: &Path, file: &Path, columns: &[&str]) -> serde_json::Value {
    let script = "import sys, json, pandas as pd\n\
        f, cols = sys.argv[1], sys.argv[2:]\n\
        t = pd.read_csv(f, dtype=str, keep_default_na=False)\n\
        n = pd.read_csv(f)\n\
        print(json.dumps({c: {'cells': list(t[c]), 'dtype': str(n[c].dtype), \
        'min': (float(n[c].min()) if n[c].dtype.kind in 'if' else None)} for c in cols}))\n";
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(file)
        .args(columns)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn export_to(db: &TestDb, what: &str, study: &str, file: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "export",
        what,
        "--study",
        study,
        "-o",
        file.to_str().unwrap(),
    ];
    args.extend(extra);
    ok(cli(&db.url, &args));
    std::fs::read_to_string(file).unwrap()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
#[track_caller]
fn assert_owner_only(path: &Path) {
    let m = mode(path);
    assert_eq!(m & 0o077, 0, "{} is {m:o}", path.display());
}

fn formula_cells_are_neutralised_in_the_cli_exports_and_raw_on_request(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    injected_study(&db, dir.path());
    let wide_file = dir.path().join("wide.csv");
    let wide = export_to(&db, "wide", "inj", &wide_file, &[]);
    let long = export_to(&db, "long", "inj", &dir.path().join("long.csv"), &[]);
    let codebook_file = dir.path().join("codebook.csv");
    let codebook = export_to(&db, "codebook", "inj", &codebook_file, &[]);
    for (what, text) in [("wide", &wide), ("long", &long), ("codebook", &codebook)] {
        assert_inert(what, text);
    }
    let w = read_cells(&wide);
    let quoted = |s: &str| format!("'{s}");
    assert_eq!(
        column(&w, "country"),
        [quoted(COUNTRY).as_str(), "United Kingdom"]
    );
    assert_eq!(column(&w, "gender"), [quoted(GENDER).as_str(), "Female"]);
    assert_eq!(
        column(&w, "employment_status"),
        [quoted(EMPLOYMENT).as_str(), "Employed"]
    );
    assert_eq!(column(&w, "education"), ["'-", "None"]);
    assert_eq!(column(&w, "factor"), [quoted(FACTOR).as_str(); 2]);
    assert_eq!(column(&w, "year_of_birth"), ["1990", "1985"]);
    // Numbers stay numbers: the negative changes are not touched.
    assert_eq!(column(&w, "positive_affect_diff"), ["-20", "-20"]);
    let l = read_cells(&long);
    assert!(column(&l, "factor").iter().all(|f| *f == quoted(FACTOR)));
    // The codebook says what was done and how to get the stored values.
    let cb = read_cells(&codebook);
    let country =
        cb.1.iter()
            .find(|r| r[0] == "wide" && r[1] == "country")
            .unwrap();
    assert!(country[5].contains("prefixed with '"), "{country:?}");
    assert!(country[5].contains("--raw-cells"), "{country:?}");
    let diff =
        cb.1.iter()
            .find(|r| r[0] == "wide" && r[1] == "positive_affect_diff")
            .unwrap();
    assert!(!diff[5].contains("prefixed"), "numbers are not: {diff:?}");
    if let Some(python) = pandas_python() {
        let p = pandas_read(
            &python,
            &wide_file,
            &[
                "country",
                "factor",
                "positive_affect_diff",
                "negative_affect_diff",
            ],
        );
        assert_eq!(p["country"]["cells"][0], quoted(COUNTRY));
        assert_eq!(p["factor"]["cells"][1], quoted(FACTOR));
        for c in ["positive_affect_diff", "negative_affect_diff"] {
            assert_eq!(p[c]["dtype"], "int64", "{c}: {p}");
            assert!(p[c]["min"].as_f64().unwrap() < 0.0, "{c}: {p}");
        }
    }
    // --raw-cells: the stored values, for scripts; the codebook says so too.
    let raw_file = dir.path().join("raw.csv");
    let raw = read_cells(&export_to(&db, "wide", "inj", &raw_file, &["--raw-cells"]));
    assert_eq!(column(&raw, "country"), [COUNTRY, "United Kingdom"]);
    assert_eq!(column(&raw, "factor"), [FACTOR; 2]);
    let raw_cb = export_to(
        &db,
        "codebook",
        "inj",
        &dir.path().join("raw-codebook.csv"),
        &["--raw-cells"],
    );
    assert!(raw_cb.contains("Exported raw (--raw-cells)"));
    if let Some(python) = pandas_python() {
        let p = pandas_read(&python, &raw_file, &["country"]);
        assert_eq!(p["country"]["cells"][0], COUNTRY);
    }
    // The export files are the owner's only (point 13), on either backend.
    #[cfg(unix)]
    for f in [&wide_file, &codebook_file, &raw_file] {
        assert_owner_only(f);
    }
}

fn web_exports_neutralise_a_live_prolific_id_and_give_raw_cells_on_request(db: TestDb) {
    let app = spawn_app(db);
    let dir = tempfile::tempdir().unwrap();
    injected_study(&app.db, dir.path());
    make_study(&app, "live", |_| {});
    let encoded: String = PID
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    walk_to(
        &app.browser(),
        &format!("/s/live?PROLIFIC_PID={encoded}"),
        "never",
    );
    let researcher = signed_in(&app, users::Role::Researcher);
    let wide = researcher.get("/admin/studies/live/export/wide.csv");
    assert_eq!(wide.status, 200);
    assert_inert("live wide.csv", &wide.body);
    let w = read_cells(&wide.body);
    assert_eq!(column(&w, "prolific_pid"), [format!("'{PID}").as_str()]);
    let long = researcher.get("/admin/studies/live/export/long.csv");
    assert_inert("live long.csv", &long.body);
    assert!(
        column(&read_cells(&long.body), "prolific_pid")
            .iter()
            .all(|p| *p == format!("'{PID}"))
    );
    let raw = researcher.get("/admin/studies/live/export/wide.csv?raw=1");
    assert_eq!(column(&read_cells(&raw.body), "prolific_pid"), [PID]);
    let inj = researcher.get("/admin/studies/inj/export/wide.csv");
    assert_inert("inj wide.csv", &inj.body);
    assert_eq!(
        column(&read_cells(&inj.body), "country")[0],
        format!("'{COUNTRY}")
    );
    let codebook = researcher.get("/admin/studies/inj/export/codebook.csv");
    assert_inert("codebook.csv", &codebook.body);
    assert!(codebook.body.contains("?raw=1"));
    assert_eq!(
        researcher
            .get("/admin/studies/live/export/wide.csv?raw=maybe")
            .status,
        400
    );
}

fn report_csv_and_markdown_make_model_and_factor_names_inert(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    injected_study(&db, dir.path());
    let csv_file = dir.path().join("report.csv");
    ok(cli(
        &db.url,
        &[
            "report",
            "--study",
            "inj",
            "--format",
            "csv",
            "-o",
            csv_file.to_str().unwrap(),
        ],
    ));
    #[cfg(unix)]
    assert_owner_only(&csv_file);
    let text = std::fs::read_to_string(&csv_file).unwrap();
    assert_inert("report.csv", &text);
    let r = read_cells(&text);
    let cohorts: std::collections::BTreeSet<&str> = column(&r, "cohort").into_iter().collect();
    assert!(
        cohorts.contains(format!("'{MODEL}").as_str()),
        "{cohorts:?}"
    );
    assert!(column(&r, "factor").contains(&format!("'{FACTOR}").as_str()));
    if let Some(python) = pandas_python() {
        let p = pandas_read(&python, &csv_file, &["cohort", "delta"]);
        assert_eq!(p["delta"]["dtype"], "float64", "{p}");
        assert!(p["delta"]["min"].as_f64().unwrap() < 0.0, "{p}");
    }
    let raw = stdout_of(
        &db,
        &["report", "--study", "inj", "--format", "csv", "--raw-cells"],
    );
    assert!(column(&read_cells(&raw), "cohort").contains(&MODEL));
    // Markdown: no tag, no link, and the pipe in the name does not add a table column.
    let md = stdout_of(&db, &["report", "--study", "inj", "--format", "md"]);
    assert!(!md.contains("<script>"), "{md}");
    assert!(md.contains("&lt;script&gt;"), "{md}");
    let unescaped_pipes = |line: &str| {
        let b = line.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
            .count()
    };
    // Every table (Table 1, then the factor tables, which name the factors) keeps its width.
    let mut tables: Vec<Vec<&str>> = Vec::new();
    let mut last_was_row = false;
    for l in md.lines() {
        let row = l.starts_with("| ");
        match (row, last_was_row, tables.last_mut()) {
            (true, true, Some(t)) => t.push(l),
            (true, _, _) => tables.push(vec![l]),
            _ => {}
        }
        last_was_row = row;
    }
    assert!(tables.len() >= 3, "{md}");
    for t in &tables {
        assert!(t.len() > 3, "{md}");
        let width = unescaped_pipes(t[0]);
        for line in t {
            assert_eq!(unescaped_pipes(line), width, "{line}");
        }
    }
    let table = &tables[0];
    assert!(
        table[0].contains(r"=cmd\|' /C calc'!A0 &lt;script&gt;alert(1)&lt;/script&gt; \| x"),
        "{}",
        table[0]
    );
}

fn stdout_of(db: &TestDb, args: &[&str]) -> String {
    ok(cli(&db.url, args))
}

fn a_year_of_birth_that_is_not_a_year_is_refused_on_import_and_nothing_is_stored(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    injected_study(&db, dir.path());
    let humans = std::fs::read_to_string(dir.path().join("humans.csv")).unwrap();
    let bad = humans.replacen(",1985,", ",=1+1,", 1);
    assert_ne!(bad, humans);
    let file = dir.path().join("bad.csv");
    std::fs::write(&file, bad).unwrap();
    let o = cli(
        &db.url,
        &[
            "import",
            "humans",
            file.to_str().unwrap(),
            "--study",
            "inj2",
            "--set",
            "inj-set",
        ],
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("line 3, column year_of_birth"), "{e}");
    assert!(e.contains("\"=1+1\" is not a year"), "{e}");
    let o = cli(&db.url, &["export", "wide", "--study", "inj2"]);
    assert!(!o.status.success(), "the study was not created");
}

fn a_study_cannot_take_a_route_word_for_its_slug(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "seed", |_| {});
    let admin = signed_in(&app, users::Role::Admin);
    let token = admin.get("/admin").csrf();
    let form = |slug: &'static str| -> Vec<(&'static str, String)> {
        [
            ("title", "Shadow"),
            ("slug", slug),
            ("consent_text", "Consent."),
            ("debrief_text", "Debrief."),
            ("instrument", "PANAS"),
            ("set", "demo"),
            ("target", "3"),
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
        .map(|(k, v)| (k, v.to_owned()))
        .to_vec()
    };
    for slug in ["new", "-x"] {
        let mut fields = form(slug);
        fields.push(("csrf", token.clone()));
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = admin.post("/admin/studies", &fields);
        assert_eq!(r.status, 422, "{slug}: {}", r.body);
    }
    // The route still shows the form, and no study of that name exists anywhere.
    let r = admin.get("/admin/studies/new");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("name=\"slug\""), "{}", r.body);
    let o = cli(&app.db.url, &["export", "wide", "--study", "new"]);
    assert!(!o.status.success());
    // The importers create studies too: they are refused the same way.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("h.csv");
    std::fs::write(&f, "participant\n").unwrap();
    let o = cli(
        &app.db.url,
        &[
            "import",
            "humans",
            f.to_str().unwrap(),
            "--study",
            "new",
            "--set",
            "demo",
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("reserved"), "{}", stderr(&o));
    // A valid slug still works.
    let mut fields = form("shadow-ok");
    fields.push(("csrf", token.clone()));
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(admin.post("/admin/studies", &fields).status, 303);
}

on_both_backends!(
    formula_cells_are_neutralised_in_the_cli_exports_and_raw_on_request,
    web_exports_neutralise_a_live_prolific_id_and_give_raw_cells_on_request,
    report_csv_and_markdown_make_model_and_factor_names_inert,
    a_year_of_birth_that_is_not_a_year_is_refused_on_import_and_nothing_is_stored,
    a_study_cannot_take_a_route_word_for_its_slug,
);

/// The SQLite database, its WAL and shared-memory files and the demo's data directory are the
/// owner's only, whatever the umask (tests run under 022), after `demo` and after `serve`.
#[cfg(unix)]
#[test]
fn the_database_and_its_wal_are_created_owner_only_by_demo_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (child, _, base) = crate::cli::start_demo(&data);
    let child = KillOnDrop(child);
    // A page that writes: the WAL and SHM files exist from the first connection on.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let _ = agent.get(format!("{base}/healthz")).call();
    let files = [
        "emotionbench.db",
        "emotionbench.db-wal",
        "emotionbench.db-shm",
    ];
    for f in files {
        assert_owner_only(&data.join(f));
    }
    assert_owner_only(&data);
    drop(child);
    // `serve` on a fresh file.
    let db = dir.path().join("serve.db");
    let port = crate::helpers::free_port();
    let _serve = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_emotionbench"))
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .current_dir(dir.path())
            .env("DATABASE_URL", format!("sqlite://{}", db.display()))
            .env_remove("EMOTIONBENCH_CONFIG")
            .env("EMOTIONBENCH_LOG", "warn")
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while agent
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .call()
        .is_err()
    {
        assert!(Instant::now() < deadline, "serve did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    for f in ["serve.db", "serve.db-wal", "serve.db-shm"] {
        assert_owner_only(&dir.path().join(f));
    }
}

/// A child process that is killed when the test ends, also when it fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An export written over an existing world-readable file leaves it owner-only.
#[cfg(unix)]
#[test]
fn an_export_over_a_world_readable_file_leaves_it_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let app = TestApp::prepare(TestDb::sqlite());
    let dir = tempfile::tempdir().unwrap();
    injected_study(&app.db, dir.path());
    for (what, args) in [
        ("wide", vec!["export", "wide", "--study", "inj"]),
        ("report", vec!["report", "--study", "inj"]),
    ] {
        let file = dir.path().join(format!("{what}.out"));
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut args = args;
        args.extend(["-o", file.to_str().unwrap()]);
        ok(cli(&app.db.url, &args));
        assert_owner_only(&file);
    }
}

/// A raw HTTP exchange: writes `head`, then `trickle` one byte per `every`, and returns what the
/// server sent and when the connection ended (or the read gave up after `give_up`).
fn trickle(
    base: &str,
    head: &str,
    trickle: &'static [u8],
    every: Duration,
    give_up: Duration,
) -> (String, Duration) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(give_up)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    std::thread::spawn(move || {
        for b in trickle {
            std::thread::sleep(every);
            if writer.write_all(&[*b]).is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    (
        String::from_utf8_lossy(&got).into_owned(),
        started.elapsed(),
    )
}

/// Without nginx in front, a client sending its body (or its head) one byte a second no longer
/// holds the connection: it gets 408 and the connection is closed within the timeout.
#[test]
fn a_request_trickled_byte_by_byte_is_cut_off_with_408() {
    let app = spawn_app_with(TestDb::sqlite(), |s| s.request_timeout_seconds = 2);
    let body: &'static [u8] = &[b'a'; 100];
    let head = "POST /admin/login HTTP/1.1\r\nHost: x\r\n\
        Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n";
    let (reply, took) = trickle(
        &app.base,
        head,
        body,
        Duration::from_secs(1),
        Duration::from_secs(30),
    );
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(
        took < Duration::from_secs(8),
        "the body held the connection {took:?}"
    );
    // The head itself, trickled.
    let (reply, took) = trickle(
        &app.base,
        "GET / HTTP/1.1\r\nHost: x\r\n",
        b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        Duration::from_secs(1),
        Duration::from_secs(30),
    );
    assert!(
        took < Duration::from_secs(8),
        "the head held the connection {took:?}: {reply}"
    );
    // A normal client is unaffected.
    assert_eq!(app.get("/healthz").status, 200);
}

/// HEAD on a GET route answers as GET does, without the body (it was 404).
#[test]
fn head_answers_like_get_without_a_body() {
    let app = spawn_app(TestDb::sqlite());
    make_study(&app, "h", |_| {});
    for path in ["/", "/healthz", "/assets/app.css", "/admin/login", "/s/h"] {
        let get = app.get(path);
        let addr = app.base.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "HEAD {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        let status: u16 = head[9..12].parse().unwrap();
        assert_eq!(status, get.status, "{path}: {head}");
        assert!(body.is_empty(), "{path}: HEAD sent a body");
        let headers: HashMap<String, String> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        assert_eq!(
            headers.get("content-type").map(String::as_str),
            get.header("content-type"),
            "{path}"
        );
        if let Some(len) = headers.get("content-length") {
            assert_eq!(len.parse::<usize>().unwrap(), get.body.len(), "{path}");
        }
    }
}

/// nginx gives a location that has an `add_header` of its own none of the server's: the
/// `/assets/` block served without HSTS. Every such location of deploy/nginx.conf repeats it
/// (deploy/validate.sh checks the same).
#[test]
fn every_nginx_location_that_adds_headers_keeps_hsts() {
    let conf = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/nginx.conf"),
    )
    .unwrap();
    let server_hsts = conf.contains("add_header Strict-Transport-Security");
    assert!(server_hsts, "the server block sends HSTS");
    let mut locations = 0;
    let mut rest = conf.as_str();
    while let Some(at) = rest.find("location ") {
        let block = &rest[at..];
        let open = block.find('{').unwrap();
        let mut depth = 0;
        let mut end = open;
        for (i, c) in block[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = &block[open..end];
        let name = block[..open].trim();
        let code: Vec<&str> = body
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .collect();
        if code.iter().any(|l| l.starts_with("add_header")) {
            assert!(
                code.iter()
                    .any(|l| l.starts_with("add_header Strict-Transport-Security")),
                "{name} adds headers but drops HSTS"
            );
        }
        locations += 1;
        rest = &block[end..];
    }
    assert!(locations >= 2, "{locations}");
    let validate = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/validate.sh"),
    )
    .unwrap();
    assert!(validate.contains("Strict-Transport-Security"));
    let units = ["emotionbench-serve.service", "emotionbench-worker.service"];
    for unit in units {
        let text = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("deploy")
                .join(unit),
        )
        .unwrap();
        assert!(text.contains("\nUMask=0077\n"), "{unit}");
    }
}
