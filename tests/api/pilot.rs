//! Issue #13, point 4: pilot mode. The study page's pilot link runs the real pages, also in a
//! draft, and its participants count nowhere: not in the assignment's balance or targets, the
//! monitor's totals, the default exports or the report; "Delete pilot data" removes them.

use emotionbench::domain::study::StudyStatus;
use emotionbench::store::{monitor, participants, studies};

use crate::admin::signed_in;
use crate::helpers::{TestApp, TestDb, cli, ok, spawn_app};
use crate::on_both_backends;
use crate::survey::{make_study, walk_to};
use emotionbench::store::users::Role;

/// The pilot link's path, as the study page shows it to a researcher.
fn pilot_path(app: &TestApp, b: &crate::helpers::Browser, slug: &str) -> String {
    let page = b.get(&format!("/admin/studies/{slug}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let marker = "id=\"pilot-url\" value=\"";
    let start = page.body.find(marker).expect("a pilot link") + marker.len();
    let url = page.body[start..].split('"').next().unwrap();
    let path = url
        .strip_prefix(&app.base)
        .expect("an absolute link")
        .to_owned();
    assert!(path.starts_with(&format!("/s/{slug}/pilot/")), "{path}");
    path
}

/// (active, completed, pilot) on the monitor, and the completions the assignment sees.
fn counted(app: &TestApp, slug: &str) -> (i64, i64, i64, u32) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    let m = monitor::load(&mut conn, &s).unwrap();
    let cells = participants::cells(&mut conn, &s, emotionbench::store::now()).unwrap();
    let assigned: u32 = cells.iter().map(|c| c.completed + c.active).sum();
    (
        m.counts.active,
        m.counts.completed,
        m.counts.pilot,
        assigned,
    )
}

fn lines(text: &str) -> usize {
    text.lines().filter(|l| !l.is_empty()).count()
}

fn pilots_walk_a_draft_to_the_end_and_count_nowhere(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "trial", |c| c.target_per_situation = 1);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let s = studies::load(&mut conn, "trial").unwrap().unwrap();
        studies::set_status(&mut conn, s.id, StudyStatus::Draft).unwrap();
    }
    let researcher = signed_in(&app, Role::Researcher);
    let admin = signed_in(&app, Role::Admin);
    let pilot = pilot_path(&app, &researcher, "trial");
    // The ordinary link of a draft turns people away; the pilot link does not.
    let (closed, _) = app.browser().open("/s/trial");
    assert!(closed.body.contains("not open"), "{}", closed.body);
    let b = app.browser();
    let (consent, path) = b.open(&pilot);
    assert_eq!(crate::helpers::page_name(&path), "consent", "{path}");
    assert!(consent.body.contains("Pilot run"));
    let (done, path) = walk_to(&b, &pilot, "done");
    assert!(path.ends_with("/done"), "{path}");
    assert!(done.body.contains("Thank you"));
    assert_eq!(counted(&app, "trial"), (0, 0, 1, 0), "only the pilot line");

    // A second pilot, left midway: holds no place either.
    walk_to(&app.browser(), &pilot, "feelings-now");
    assert_eq!(counted(&app, "trial"), (0, 0, 2, 0));

    // Exports leave pilots out unless asked for, on the web and the CLI.
    let r = &researcher;
    for (query, expect_header_only) in [("", true), ("?status=all", true), ("?pilot=1", false)] {
        let csv = r.get(&format!("/admin/studies/trial/export/wide.csv{query}"));
        assert_eq!(csv.status, 200);
        assert_eq!(
            lines(&csv.body) == 1,
            expect_header_only,
            "{query}: {}",
            csv.body
        );
    }
    let wide = ok(cli(
        &app.db.url,
        &["export", "wide", "--study", "trial", "--status", "all"],
    ));
    assert_eq!(lines(&wide), 1, "{wide}");
    let wide = ok(cli(
        &app.db.url,
        &[
            "export",
            "wide",
            "--study",
            "trial",
            "--status",
            "all",
            "--include-pilot",
        ],
    ));
    assert_eq!(lines(&wide), 3, "both pilots: {wide}");
    // Each row says it is a pilot, so a file with pilots cannot pass for real data.
    let mut rows = wide.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = rows.next().unwrap_or_default();
    let at = header
        .iter()
        .position(|c| *c == "pilot")
        .expect("a pilot column");
    assert!(rows.all(|r| r[at] == "true"), "{wide}");

    // A made-up token is no pilot link, nor a made-up pilot field in the consent form.
    assert_eq!(
        app.browser()
            .get("/s/trial/pilot/0123456789abcdef0123456789abcdef")
            .status,
        404
    );
    let b = app.browser();
    let (page, path) = b.open(&pilot);
    let mut form = crate::helpers::consent_form(&page, None, "yes");
    for (k, v) in form.iter_mut() {
        if k == "pilot" {
            *v = "f".repeat(32);
        }
    }
    assert_eq!(b.post(&path, &crate::helpers::fields(&form)).status, 400);

    // Opened: a real participant fills the one place of a situation; a pilot still counts
    // nowhere.
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let s = studies::load(&mut conn, "trial").unwrap().unwrap();
        studies::set_status(&mut conn, s.id, StudyStatus::Open).unwrap();
    }
    // The server reads a study row at most once a second (`web::state::STUDY_FRESH`).
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    walk_to(&app.browser(), "/s/trial?PROLIFIC_PID=realperson1", "done");
    walk_to(&app.browser(), &pilot, "done");
    assert_eq!(counted(&app, "trial"), (0, 1, 3, 1));

    // "Delete pilot data": the pilots go, the real participant stays; audited.
    let page = admin.get("/admin/studies/trial");
    assert!(page.body.contains("Delete pilot data (3)"), "{}", page.body);
    let r = admin.post(
        "/admin/studies/trial/pilots/delete",
        &[("csrf", &page.csrf())],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(counted(&app, "trial"), (0, 1, 0, 1));
    let audit = admin.get("/admin/audit");
    assert!(
        audit.body.contains("participant.delete-pilots"),
        "{}",
        audit.body
    );
    // A researcher may not.
    let page = researcher.get("/admin/studies/trial");
    assert!(!page.body.contains("Delete pilot data"));
    let r = researcher.post(
        "/admin/studies/trial/pilots/delete",
        &[("csrf", &page.csrf())],
    );
    assert_eq!(r.status, 403);
}

on_both_backends!(pilots_walk_a_draft_to_the_end_and_count_nowhere);
