//! Issue #14, points 4 and 5: one browser shared by two Prolific ids, and what an export or a
//! Prolific id alone lets someone do to a participant.

use emotionbench::store::{participants, studies};

use crate::helpers::{TestApp, TestDb, cli, ok, spawn_app};
use crate::on_both_backends;
use crate::survey::{make_study, walk_to};

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbb";

fn by_pid(app: &TestApp, slug: &str, pid: &str) -> Option<participants::Participant> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    participants::by_pid(&mut conn, s.id, pid).unwrap()
}

fn answers(app: &TestApp, p: &participants::Participant) -> usize {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    participants::answers(&mut conn, p.id).unwrap().len()
}

/// Point 4: after participant A on a browser, the link with `PROLIFIC_PID=B` used to land on
/// A's pages (the unknown id fell back to the cookie), so B's answers were stored as A's.
fn a_link_with_another_prolific_id_never_continues_the_cookies_participant(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "shared", |_| {});
    let b = app.browser();
    walk_to(
        &b,
        &format!("/s/shared?PROLIFIC_PID={A}"),
        "feelings-imagined",
    );
    let a = by_pid(&app, "shared", A).unwrap();
    let a_answers = answers(&app, &a);
    assert_eq!(a_answers, 20, "A answered the first questionnaire");

    // The same browser, B's link: B's own participant, from the start.
    let (page, path) = b.open(&format!("/s/shared?PROLIFIC_PID={B}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(path.ends_with("/consent"), "B landed on {path}");
    let (_, path) = walk_to(&b, &path, "feelings-now");
    let (page, _) = b.open(&path);
    let r = crate::survey::submit_current(&b, &path, &page);
    assert_eq!(r.status, 303, "{}", r.body);
    let bp = by_pid(&app, "shared", B).expect("B exists");
    assert_ne!(bp.id, a.id);
    assert_eq!(answers(&app, &bp), 20, "B's answers are B's");
    let a_now = by_pid(&app, "shared", A).unwrap();
    assert_eq!(
        answers(&app, &a_now),
        a_answers,
        "A's answers are unchanged"
    );
    assert_eq!(a_now.page, a.page, "A did not move");

    // A's link on the same browser again: A's pages, where A stopped.
    let (_, path) = b.open(&format!("/s/shared?PROLIFIC_PID={A}"));
    assert!(path.ends_with("/feelings-imagined"), "A resumed at {path}");
}

on_both_backends!(a_link_with_another_prolific_id_never_continues_the_cookies_participant);

/// Point 5: the exported `participant` column was the survey cookie's value, so anyone with an
/// export could resume a participant and withdraw them; a Prolific id alone could too.
fn neither_an_export_nor_a_prolific_id_alone_can_withdraw_a_participant(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "open-data", |_| {});
    let owner = app.browser();
    let (_, path) = walk_to(
        &owner,
        &format!("/s/open-data?PROLIFIC_PID={A}"),
        "feelings-imagined",
    );
    let p = by_pid(&app, "open-data", A).unwrap();

    // The export names the participant by an id that is not the cookie's secret.
    let csv = ok(cli(
        &app.db.url,
        &["export", "long", "--study", "open-data", "--status", "all"],
    ));
    let exported: Vec<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(1))
        .collect();
    assert!(!exported.is_empty(), "{csv}");
    assert!(exported.iter().all(|e| *e == exported[0]));
    assert_ne!(exported[0], p.public_id);
    assert!(
        !csv.contains(&p.public_id),
        "the export holds the session secret"
    );

    // A cookie holding the exported id names nobody.
    let study_id = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        studies::load(&mut conn, "open-data").unwrap().unwrap().id
    };
    let r = app
        .browser()
        .agent
        .get(app.base.clone() + "/s/open-data/feelings-imagined")
        .header("Cookie", format!("eb_p{study_id}={}", exported[0]))
        .call()
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(
        r.headers().get("location").unwrap().to_str().unwrap(),
        "/s/open-data",
        "the exported id resumed someone"
    );

    // Another device with the Prolific id may continue, but not withdraw.
    let other = app.browser();
    let (page, resumed_at) = other.open(&format!("/s/open-data?PROLIFIC_PID={A}"));
    assert_eq!(resumed_at, path, "resumes where the participant stopped");
    assert!(
        !page.body.contains("/withdraw"),
        "no withdraw link when resumed"
    );
    assert_eq!(other.get("/s/open-data/withdraw").status, 403);
    let csrf = page.csrf();
    let r = other.post("/s/open-data/withdraw", &[("csrf", &csrf)]);
    assert_eq!(r.status, 403, "{}", r.body);
    let still = by_pid(&app, "open-data", A).unwrap();
    assert_eq!(answers(&app, &still), 20, "nothing was deleted");
    assert_eq!(still.status, p.status);

    // The device that started the survey may.
    let (page, _) = owner.open(&path);
    assert!(page.body.contains("/withdraw"), "{}", page.body);
    let form = owner.get("/s/open-data/withdraw");
    assert_eq!(form.status, 200, "{}", form.body);
    let r = owner.post("/s/open-data/withdraw", &[("csrf", &form.csrf())]);
    assert_eq!(r.status, 303, "{}", r.body);
    let gone = by_pid(&app, "open-data", A).unwrap();
    assert_eq!(answers(&app, &gone), 0);
}

on_both_backends!(neither_an_export_nor_a_prolific_id_alone_can_withdraw_a_participant);
