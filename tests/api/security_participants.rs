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
    assert!(
        crate::helpers::page_name(&path) == "consent",
        "B landed on {path}"
    );
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

fn participant_count(app: &TestApp, slug: &str) -> (usize, i64) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    let monitor = emotionbench::store::monitor::load(&mut conn, &s).unwrap();
    let rows: i64 = {
        use diesel::prelude::*;
        use emotionbench::store::schema::participants as p;
        p::table
            .filter(p::study_id.eq(s.id))
            .count()
            .get_result(&mut conn)
            .unwrap()
    };
    (rows as usize, monitor.counts.active)
}

/// Point 6: a GET of the link used to make a participant row (1,000 requests made 1,000
/// `active` rows; a bot filled a 6-place study in 0.37 s). Now only the consent answer makes
/// one; the same consent form sent twice makes one, not two.
fn opening_the_link_stores_nothing_only_the_consent_answer_makes_a_participant(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "door", |c| c.target_per_situation = 1);
    for i in 0..200 {
        let b = app.browser();
        let link = if i % 2 == 0 {
            format!("/s/door?PROLIFIC_PID=bot{i:021}")
        } else {
            "/s/door".to_owned()
        };
        let (page, path) = b.open(&link);
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(crate::helpers::page_name(&path), "consent", "{path}");
    }
    assert_eq!(
        participant_count(&app, "door"),
        (0, 0),
        "no row, none active"
    );

    // One person agrees, tapping the button twice (the same form sent twice).
    let b = app.browser();
    let (page, path) = b.open(&format!("/s/door?PROLIFIC_PID={A}"));
    let form = crate::helpers::consent_form(&page, None, "yes");
    let fields = crate::helpers::fields(&form);
    let first = b.post(&path, &fields);
    let second = b.post(&path, &fields);
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(first.location(), Some("/s/door/demographics"));
    assert_eq!(second.location(), Some("/s/door/demographics"));
    assert_eq!(participant_count(&app, "door"), (1, 1), "one row, active");
    let p = by_pid(&app, "door", A).unwrap();
    assert_eq!(p.page.as_str(), "demographics");
    assert!(p.situation_id.is_some(), "consent assigned a situation");
    // The browser continues its participant.
    assert_eq!(b.open("/s/door").1, "/s/door/demographics");

    // Another declines: a row that says so, not an active one.
    let b = app.browser();
    let (page, path) = b.open(&format!("/s/door?PROLIFIC_PID={B}"));
    let form = crate::helpers::consent_form(&page, None, "no");
    let fields = crate::helpers::fields(&form);
    assert_eq!(b.post(&path, &fields).status, 303);
    assert_eq!(participant_count(&app, "door"), (2, 1));
    assert_eq!(
        by_pid(&app, "door", B).unwrap().status.as_str(),
        "no_consent"
    );

    // A forged visit id is refused, and makes nothing.
    let b = app.browser();
    let (page, path) = b.open("/s/door");
    let csrf = page.csrf();
    let r = b.post(
        &path,
        &[("csrf", &csrf), ("visit", "short"), ("consent", "yes")],
    );
    assert_eq!(r.status, 400);
    assert_eq!(participant_count(&app, "door").0, 2);
}

on_both_backends!(opening_the_link_stores_nothing_only_the_consent_answer_makes_a_participant);

/// Point 6: new participants per client address are limited (configurable); behind a trusted
/// proxy the address is the forwarded one, so people behind one nginx are not limited together.
fn new_participants_per_address_are_limited(db: TestDb) {
    let app = crate::helpers::spawn_app_with(db, |s| {
        s.new_participants_per_address = 3;
        s.new_participants_window_seconds = 600;
        s.trusted_proxies = emotionbench::config::IpRange::parse_list("127.0.0.1").unwrap();
    });
    make_study(&app, "limited", |_| {});
    let consent_from = |forwarded: &str| {
        let b = app.browser();
        let (page, path) = b.open("/s/limited");
        let form = crate::helpers::consent_form(&page, None, "yes");
        let r = b
            .agent
            .post(b.url(&path))
            .header("X-Forwarded-For", forwarded)
            .send_form(form.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap();
        (
            r.status().as_u16(),
            r.headers().get("retry-after").is_some(),
        )
    };
    for _ in 0..3 {
        assert_eq!(consent_from("203.0.113.7"), (303, false));
    }
    let (status, retry) = consent_from("203.0.113.7");
    assert_eq!(status, 429, "the fourth from one address in the window");
    assert!(retry, "429 says when to come back");
    assert_eq!(
        participant_count(&app, "limited").0,
        3,
        "the refused one made nothing"
    );
    assert_eq!(
        consent_from("198.51.100.9"),
        (303, false),
        "another address"
    );
    assert_eq!(participant_count(&app, "limited").0, 4);
}

on_both_backends!(new_participants_per_address_are_limited);
