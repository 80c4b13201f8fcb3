//! The participant protocol over HTTP: resume, idempotent submits, validation, consent,
//! withdrawal, CSRF, the completion redirect, balanced assignment.

use diesel::connection::SimpleConnection;
use emotionbench::domain::study::{StudyConfig, StudyStatus};
use emotionbench::store::{self, instruments, participants, situations, studies};

use crate::helpers::{Backend, Browser, Reply, TestApp, TestDb, spawn_app};
use crate::on_both_backends;

pub const PID: &str = "5f1a2b3c4d5e6f7a8b9c0d1e";

/// A study over the demo situations with Prolific codes, opened.
pub fn make_study(app: &TestApp, slug: &str, tweak: impl FnOnce(&mut StudyConfig)) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let demo = emotionbench::domain::demo::demo_study();
    if situations::find_set(&mut conn, "demo").unwrap().is_none() {
        situations::import(&mut conn, "demo", "demo", &demo.situations).unwrap();
    }
    let set = situations::find_set(&mut conn, "demo").unwrap().unwrap();
    let inst = instruments::ensure_builtin(&mut conn).unwrap();
    create_study(&mut conn, slug, inst, set, tweak);
}

/// A study like [`make_study`] on an instrument of the upstream `questionnaires.json` (imported
/// here when missing); false (skipped) without the upstream data.
pub fn make_scale_study(app: &TestApp, slug: &str, key: &str) -> bool {
    let Some(data) = crate::helpers::upstream() else {
        return false;
    };
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    if instruments::load(&mut conn, key).unwrap().is_none() {
        emotionbench::app::imports::import_instruments(
            &mut conn,
            &data.join("questionnaires.json"),
        )
        .unwrap();
    }
    let demo = emotionbench::domain::demo::demo_study();
    if situations::find_set(&mut conn, "demo").unwrap().is_none() {
        situations::import(&mut conn, "demo", "demo", &demo.situations).unwrap();
    }
    let set = situations::find_set(&mut conn, "demo").unwrap().unwrap();
    let (inst, _) = instruments::load(&mut conn, key).unwrap().unwrap();
    create_study(&mut conn, slug, inst, set, |_| {});
    true
}

fn create_study(
    conn: &mut emotionbench::store::DbConnection,
    slug: &str,
    inst: emotionbench::store::InstrumentId,
    set: emotionbench::store::SituationSetId,
    tweak: impl FnOnce(&mut StudyConfig),
) {
    let mut c = StudyConfig::new(slug, "Feelings study");
    c.consent_text = "Please read this consent text.\n\nSecond paragraph.".into();
    c.debrief_text = "Thank you. This was about feelings.".into();
    c.code_completed = Some("COMPLETE1".into());
    c.code_no_consent = Some("NOCONSENT1".into());
    c.code_failed_check = Some("FAILED1".into());
    c.code_screened_out = Some("FULL1".into());
    c.min_situation_seconds = 0;
    tweak(&mut c);
    studies::create(
        conn,
        &c,
        StudyStatus::Open,
        studies::Sources::new(inst, Some(set)),
        42,
    )
    .unwrap();
}

/// Item numbers of the questionnaire on this page, in display order.
pub fn items_on(page: &Reply) -> Vec<u32> {
    items_in(&page.body)
}

/// Item numbers of the questionnaire in this HTML, in display order.
pub fn items_in(html: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in html.split("name=\"item-").skip(1) {
        let n: u32 = part.split('"').next().unwrap().parse().unwrap();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Submits the current page with valid answers; returns the reply (a redirect).
pub fn submit_current(b: &Browser, path: &str, page: &Reply) -> Reply {
    let csrf = page.csrf();
    let page_name = crate::helpers::page_name(path);
    let owned: Vec<(String, String)> = match page_name {
        "consent" => {
            let mut f = crate::helpers::hidden_fields(&page.body);
            f.push(("consent".into(), "yes".into()));
            f
        }
        "demographics" => vec![
            ("gender".into(), "Female".into()),
            ("year_of_birth".into(), "1990".into()),
            ("country".into(), "United Kingdom".into()),
            ("employment_status".into(), "Employed".into()),
            ("education".into(), "University - Masters".into()),
        ],
        "feelings-now" | "feelings-imagined" => items_on(page)
            .into_iter()
            .map(|n| {
                (
                    format!("item-{n}"),
                    (((n + u32::from(page_name == "feelings-now")) % 5) + 1).to_string(),
                )
            })
            .collect(),
        "check" => vec![("answer".into(), "A little".into())],
        _ => vec![],
    };
    let mut fields: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    fields.push(("csrf", &csrf));
    b.post(path, &fields)
}

/// Walks from the entry link to (but not through) `stop`; returns that page and its path.
pub fn walk_to(b: &Browser, entry: &str, stop: &str) -> (Reply, String) {
    let (mut page, mut path) = b.open(entry);
    for _ in 0..10 {
        if crate::helpers::page_name(&path) == stop {
            return (page, path);
        }
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let r = submit_current(b, &path, &page);
        assert_eq!(r.status, 303, "{path}: {}", r.body);
        let next = r.location().unwrap().to_owned();
        if !next.starts_with('/') {
            return (r, next);
        }
        (page, path) = b.open(&next);
    }
    panic!("never reached {stop}, at {path}");
}

fn count(app: &TestApp, sql_table: &str) -> i64 {
    use diesel::prelude::*;
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    diesel::sql_query(format!("SELECT COUNT(*) AS n FROM {sql_table}"))
        .get_result::<N>(&mut conn)
        .unwrap()
        .n
}

/// A participant's page events, (page, event), in the order they were written.
fn events_of(app: &TestApp, id: emotionbench::store::ParticipantId) -> Vec<(String, String)> {
    use diesel::prelude::*;
    use emotionbench::store::schema::page_events;
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    page_events::table
        .filter(page_events::participant_id.eq(id))
        .order(page_events::id)
        .select((page_events::page, page_events::event))
        .load::<(String, String)>(&mut conn)
        .unwrap()
}

fn participant(app: &TestApp, slug: &str, pid: &str) -> participants::Participant {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    participants::by_pid(&mut conn, s.id, pid).unwrap().unwrap()
}

fn the_whole_flow_from_the_prolific_link_to_the_completion_redirect(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "flow", |_| {});
    let b = app.browser();
    let entry = format!("/s/flow?PROLIFIC_PID={PID}&STUDY_ID=st1&SESSION_ID=se1");
    let (r, url) = walk_to(&b, &entry, "never");
    assert_eq!(r.status, 303);
    assert_eq!(
        url,
        "https://app.prolific.com/submissions/complete?cc=COMPLETE1"
    );

    let p = participant(&app, "flow", PID);
    assert_eq!(p.status.as_str(), "completed");
    assert_eq!(p.prolific_study_id.as_deref(), Some("st1"));
    assert_eq!(p.prolific_session_id.as_deref(), Some("se1"));
    assert!(p.situation_id.is_some() && p.assignment.is_some());
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let answers = participants::answers(&mut conn, p.id).unwrap();
    assert_eq!(answers.len(), 40);
    assert_eq!(
        answers.iter().filter(|a| a.0.as_str() == "default").count(),
        20
    );
    // The values posted: ((n + 1) % 5) + 1 before, (n % 5) + 1 after, by item number.
    for (phase, item, value) in &answers {
        let bump = u32::from(phase.as_str() == "default");
        assert_eq!(
            *value as u32,
            ((*item as u32 + bump) % 5) + 1,
            "{phase} {item}"
        );
    }
    let demo = serde_json::Value::Object(p.demographics.clone().unwrap().0);
    assert_eq!(demo["education"], "University - Masters");
    drop(conn);
    assert_eq!(count(&app, "attention_checks"), 1);
    // Shown and submitted timestamps for each of the 7 pages before the end (the consent
    // page's "shown" is when its page was shown, carried by its visit id), each page's "shown"
    // first in the order they were written: the evidence reads a page's time in that order.
    // The consent's "shown" is written with the participant's row and its "submitted" with the
    // consent's move (on Postgres, each in the same statement): once each.
    let events = events_of(&app, p.id);
    let consent: Vec<&str> = events
        .iter()
        .filter(|(page, _)| page == "consent")
        .map(|(_, e)| e.as_str())
        .collect();
    assert_eq!(consent, ["shown", "submitted"], "{events:?}");
    for page in crate::helpers::PAGES_TO_DEBRIEF {
        let of_page: Vec<&str> = events
            .iter()
            .filter(|(p, _)| p == page)
            .map(|(_, e)| e.as_str())
            .collect();
        assert_eq!(of_page.first(), Some(&"shown"), "{page}: {events:?}");
        assert_eq!(
            of_page.iter().filter(|e| **e == "submitted").count(),
            1,
            "{page}: {events:?}"
        );
    }
    // After completion, the done page shows the code.
    let (done, path) = b.open("/s/flow");
    assert!(path.ends_with("/done"));
    assert!(done.body.contains("COMPLETE1"));
}

fn the_same_prolific_id_resumes_the_same_participant(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "resume", |_| {});
    let entry = format!("/s/resume?PROLIFIC_PID={PID}");
    let first = app.browser();
    let (_, path) = walk_to(&first, &entry, "feelings-now");
    // Another browser (a phone after a laptop) with the same id continues where it was.
    let second = app.browser();
    let (page, path2) = second.open(&entry);
    assert_eq!(path2, path);
    assert_eq!(page.status, 200);
    assert_eq!(count(&app, "participants"), 1);
}

fn the_cookie_resumes_after_closing_the_tab(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "cookie", |_| {});
    let b = app.browser();
    let (_, path) = walk_to(&b, "/s/cookie", "feelings-now");
    let (_, again) = b.open("/s/cookie");
    assert_eq!(again, path);
    assert_eq!(count(&app, "participants"), 1);
    // A different browser without the cookie is a new participant, once it consents.
    walk_to(&app.browser(), "/s/cookie", "demographics");
    assert_eq!(count(&app, "participants"), 2);
}

fn a_double_submitted_page_stores_one_set_of_answers(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "double", |_| {});
    let b = app.browser();
    let (page, path) = walk_to(&b, "/s/double", "feelings-now");
    let first = submit_current(&b, &path, &page);
    let second = submit_current(&b, &path, &page);
    assert_eq!(first.status, 303);
    assert_eq!(second.status, 303);
    assert_eq!(
        first.location(),
        second.location(),
        "both land on the next page"
    );
    assert_eq!(count(&app, "responses"), 20);
}

fn back_and_resubmit_of_an_earlier_page_changes_nothing(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "back", |_| {});
    let b = app.browser();
    let (demo_page, demo_path) = walk_to(&b, "/s/back", "demographics");
    let csrf = demo_page.csrf();
    let r = submit_current(&b, &demo_path, &demo_page);
    assert_eq!(r.status, 303);
    let (_, now_at) = walk_to(&b, "/s/back", "situation");
    let before = count(&app, "responses");
    let r = b.post(
        &demo_path,
        &[
            ("csrf", &csrf),
            ("gender", "Male"),
            ("year_of_birth", "1950"),
            ("country", "Other"),
            ("employment_status", "Retired"),
            ("education", "None"),
        ],
    );
    assert_eq!(r.status, 303);
    assert_eq!(r.location(), Some(now_at.as_str()));
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, "back").unwrap().unwrap();
    let p: Vec<_> = (1..=1)
        .filter_map(|_| {
            use diesel::prelude::*;
            store::schema::participants::table
                .filter(store::schema::participants::study_id.eq(s.id))
                .select(store::schema::participants::demographics)
                .first::<Option<String>>(&mut conn)
                .ok()
        })
        .collect();
    assert!(
        p[0].as_deref().unwrap().contains("Female"),
        "unchanged: {p:?}"
    );
    assert_eq!(count(&app, "responses"), before);
}

fn skipping_ahead_by_url_redirects_to_the_current_page(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "skip", |_| {});
    let b = app.browser();
    let (consent, path) = b.open("/s/skip");
    assert!(crate::helpers::page_name(&path) == "consent");
    // Before consent there is no participant: any page leads back in through the link.
    for page in ["feelings-imagined", "not-a-page"] {
        let r = b.get(&format!("/s/skip/{page}"));
        assert_eq!((r.status, r.location()), (303, Some("/s/skip")));
    }
    let csrf = consent.csrf();
    let r = b.post("/s/skip/check", &[("csrf", &csrf), ("answer", "A little")]);
    assert_eq!((r.status, r.location()), (303, Some("/s/skip")));
    // After consent, the participant's current page.
    let (_, path) = walk_to(&b, "/s/skip", "demographics");
    for page in ["feelings-imagined", "not-a-page", "consent"] {
        let r = b.get(&format!("/s/skip/{page}"));
        assert_eq!(
            (r.status, r.location()),
            (303, Some(path.as_str())),
            "{page}"
        );
    }
    let r = b.post("/s/skip/check", &[("csrf", &csrf), ("answer", "A little")]);
    assert_eq!((r.status, r.location()), (303, Some(path.as_str())));
    assert_eq!(count(&app, "attention_checks"), 0);
}

fn missing_or_out_of_range_answers_get_a_4xx_page_and_store_nothing(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "invalid", |_| {});
    let b = app.browser();
    let (page, path) = walk_to(&b, "/s/invalid", "feelings-now");
    let csrf = page.csrf();
    let items = items_on(&page);
    assert_eq!(items.len(), 20);
    let owned: Vec<(String, String)> = items[..19]
        .iter()
        .map(|n| (format!("item-{n}"), "3".to_string()))
        .collect();
    let mut fields: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    fields.push(("csrf", &csrf));
    let r = b.post(&path, &fields);
    assert_eq!(r.status, 422);
    assert!(r.body.contains("Please answer every item"), "{}", r.body);
    assert!(r.body.contains(&format!("err-item-{}", items[19])));
    assert!(r.body.contains("checked"), "what was entered is kept");
    let last = format!("item-{}", items[19]);
    fields.push((&last, "9"));
    let r = b.post(&path, &fields);
    assert_eq!(r.status, 422);
    assert!(r.body.contains("from 1 to 5"), "{}", r.body);
    fields.pop();
    let long = "3".repeat(10_000);
    fields.push((&last, &long));
    assert_eq!(b.post(&path, &fields).status, 400);
    fields.pop();
    fields.push((&last, "3"));
    fields.push(("sneaky", "1"));
    assert_eq!(b.post(&path, &fields).status, 400);
    assert_eq!(count(&app, "responses"), 0);
    // Still on the same page.
    assert_eq!(b.open("/s/invalid").1, path);
}

fn declining_consent_ends_with_no_consent_and_stores_nothing(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "decline", |_| {});
    let b = app.browser();
    let (consent, path) = b.open(&format!("/s/decline?PROLIFIC_PID={PID}"));
    let form = crate::helpers::consent_form(&consent, None, "no");
    let fields = crate::helpers::fields(&form);
    let r = b.post(&path, &fields);
    assert_eq!(r.status, 303);
    assert_eq!(
        r.location(),
        Some("https://app.prolific.com/submissions/complete?cc=NOCONSENT1")
    );
    let p = participant(&app, "decline", PID);
    assert_eq!(p.status.as_str(), "no_consent");
    assert!(p.situation_id.is_none(), "no situation reserved");
    assert_eq!(count(&app, "responses"), 0);
    let (page, _) = b.open("/s/decline");
    assert!(page.body.contains("NOCONSENT1"));
}

/// Withdrawing deletes the questionnaire answers, the demographics and the free text of the
/// situation page (#18).
fn withdrawing_deletes_the_answers(db: TestDb) {
    let app = spawn_app(db);
    crate::freetext::make_text_study(&app, "withdraw", false, 100);
    let b = app.browser();
    let (page, path) = walk_to(&b, &format!("/s/withdraw?PROLIFIC_PID={PID}"), "situation");
    assert_eq!(count(&app, "responses"), 20);
    assert!(
        page.body.contains("/s/withdraw/withdraw"),
        "every page links to withdrawal"
    );
    let r = b.post(
        &path,
        &[
            ("csrf", &page.csrf()),
            ("free_text", "My neighbours are kind."),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(count(&app, "participant_texts"), 1);
    let confirm = b.get("/s/withdraw/withdraw");
    assert_eq!(confirm.status, 200);
    let r = b.post("/s/withdraw/withdraw", &[("csrf", &confirm.csrf())]);
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/s/withdraw/withdrawn"))
    );
    assert_eq!(count(&app, "responses"), 0);
    assert_eq!(count(&app, "participant_texts"), 0, "the free text too");
    let p = participant(&app, "withdraw", PID);
    assert_eq!(p.status.as_str(), "withdrawn");
    assert!(p.demographics.is_none());
    let (page, _) = b.open("/s/withdraw");
    assert!(
        page.body.contains("return your submission"),
        "{}",
        page.body
    );
    // The same Prolific id coming back does not start again.
    let (_, path) = app
        .browser()
        .open(&format!("/s/withdraw?PROLIFIC_PID={PID}"));
    assert!(path.ends_with("/withdrawn"));
}

fn a_forged_or_missing_csrf_token_is_refused(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "csrf", |_| {});
    let b = app.browser();
    let (_, path) = b.open("/s/csrf");
    let r = b.post(&path, &[("consent", "yes")]);
    assert_eq!(r.status, 403);
    let r = b.post(
        &path,
        &[("consent", "yes"), ("csrf", "forged-forged-forged-forged")],
    );
    assert_eq!(r.status, 403);
    assert!(r.body.contains("Not allowed"));
    assert_eq!(b.open("/s/csrf").1, path, "still on consent");
    let r = b.post("/s/csrf/withdraw", &[("csrf", "nope")]);
    assert_eq!(r.status, 403);
}

fn the_completion_redirect_is_never_sent_before_the_commit(db: TestDb) {
    let backend = db.backend;
    let app = spawn_app(db);
    make_study(&app, "commit", |_| {});
    let b = app.browser();
    let (debrief, path) = walk_to(&b, &format!("/s/commit?PROLIFIC_PID={PID}"), "debrief");
    // Make the final write fail inside the database.
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let (create, drop_sql) = match backend {
        Backend::Sqlite => (
            "CREATE TRIGGER block_completion BEFORE UPDATE OF status ON participants \
             WHEN NEW.status = 'completed' BEGIN SELECT RAISE(ABORT, 'simulated failure'); END;",
            "DROP TRIGGER block_completion;",
        ),
        Backend::Postgres => (
            "CREATE FUNCTION block_completion() RETURNS trigger AS $$ BEGIN \
             IF NEW.status = 'completed' THEN RAISE EXCEPTION 'simulated failure'; END IF; \
             RETURN NEW; END $$ LANGUAGE plpgsql; \
             CREATE TRIGGER block_completion BEFORE UPDATE ON participants \
             FOR EACH ROW EXECUTE FUNCTION block_completion();",
            "DROP TRIGGER block_completion ON participants; DROP FUNCTION block_completion();",
        ),
    };
    conn.batch_execute(create).unwrap();
    let r = submit_current(&b, &path, &debrief);
    assert!(r.status >= 500, "status {}", r.status);
    assert!(r.location().is_none(), "no redirect after a failed write");
    assert!(!r.body.contains("COMPLETE1"));
    let p = participant(&app, "commit", PID);
    assert_eq!((p.status.as_str(), p.page.as_str()), ("active", "debrief"));
    // Once the database accepts the write, the same submit completes.
    conn.batch_execute(drop_sql).unwrap();
    let r = submit_current(&b, &path, &debrief);
    assert_eq!(
        r.location(),
        Some("https://app.prolific.com/submissions/complete?cc=COMPLETE1")
    );
    assert_eq!(
        participant(&app, "commit", PID).status.as_str(),
        "completed"
    );
}

fn closed_and_full_studies_show_a_polite_page(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "tiny", |c| c.target_per_situation = 1);
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        use diesel::prelude::*;
        diesel::update(store::schema::studies::table)
            .set(store::schema::studies::status.eq("closed"))
            .execute(&mut conn)
            .unwrap();
    }
    let (r, _) = app.browser().open(&format!("/s/tiny?PROLIFIC_PID={PID}"));
    assert_eq!(r.status, 200);
    assert!(
        r.body.contains("not open") && r.body.contains("return your submission"),
        "{}",
        r.body
    );
    assert_eq!(count(&app, "participants"), 0);
    assert_eq!(app.browser().get("/s/nosuchstudy").status, 404);
}

/// The radio values offered for item `n` on a page, in order.
fn radio_values(html: &str, n: u32) -> Vec<String> {
    let needle = format!("name=\"item-{n}\" value=\"");
    html.split(&needle)
        .skip(1)
        .map(|p| p.split('"').next().unwrap().to_owned())
        .collect()
}

/// Posts the questionnaire page with `value(item)` for every item.
fn post_items(b: &Browser, path: &str, page: &Reply, value: impl Fn(u32) -> String) -> Reply {
    let csrf = page.csrf();
    let owned: Vec<(String, String)> = items_on(page)
        .into_iter()
        .map(|n| (format!("item-{n}"), value(n)))
        .collect();
    let mut fields: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    fields.push(("csrf", &csrf));
    b.post(path, &fields)
}

fn default_answers(app: &TestApp, slug: &str) -> Vec<(u32, i32)> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let s = studies::load(&mut conn, slug).unwrap().unwrap();
    let p = participants::by_pid(&mut conn, s.id, PID).unwrap().unwrap();
    let mut a: Vec<(u32, i32)> = participants::answers(&mut conn, p.id)
        .unwrap()
        .into_iter()
        .filter(|(phase, _, _)| phase.as_str() == "default")
        .map(|(_, item, value)| (item as u32, value))
        .collect();
    a.sort_unstable();
    a
}

fn a_1_to_7_scale_renders_seven_choices_labelled_where_the_scale_labels_them(db: TestDb) {
    let app = spawn_app(db);
    if !make_scale_study(&app, "agq", "AGQ") {
        return;
    }
    let b = app.browser();
    let (page, path) = walk_to(&b, &format!("/s/agq?PROLIFIC_PID={PID}"), "feelings-now");
    assert_eq!(page.status, 200);
    let items = items_on(&page);
    assert_eq!(items.len(), 29);
    for n in &items {
        assert_eq!(
            radio_values(&page.body, *n),
            ["1", "2", "3", "4", "5", "6", "7"]
        );
    }
    // AGQ labels its two ends only; the middle values are bare numbers.
    assert!(
        page.body
            .contains("<span>1 – extremely uncharacteristic of me</span>"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<span>7 – extremely characteristic of me</span>")
    );
    assert!(page.body.contains("<span>4</span>"));
    assert!(
        page.body
            .contains("When people are especially nice, I wonder what they want.")
    );
    assert!(
        !page.body.contains("words that describe"),
        "PANAS instructions on AGQ"
    );
    // 8 is outside 1..=7: the page comes back, nothing stored.
    let r = post_items(&b, &path, &page, |n| {
        if n == 3 { "8".into() } else { "7".into() }
    });
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(default_answers(&app, "agq").is_empty());
    // 7 and 1 are in range.
    let r = post_items(&b, &path, &page, |n| {
        if n % 2 == 0 { "7".into() } else { "1".into() }
    });
    assert_eq!(r.status, 303, "{}", r.body);
    let stored = default_answers(&app, "agq");
    assert_eq!(stored.len(), 29);
    assert!(
        stored
            .iter()
            .all(|(n, v)| *v == if n % 2 == 0 { 7 } else { 1 })
    );
}

fn a_bdi_page_offers_each_items_own_four_statements(db: TestDb) {
    let app = spawn_app(db);
    if !make_scale_study(&app, "bdi", "BDI") {
        return;
    }
    let b = app.browser();
    let (page, path) = walk_to(&b, &format!("/s/bdi?PROLIFIC_PID={PID}"), "feelings-now");
    assert_eq!(page.status, 200);
    let items = items_on(&page);
    assert_eq!(items.len(), 21);
    for n in &items {
        assert_eq!(radio_values(&page.body, *n), ["0", "1", "2", "3"]);
    }
    // Item 1's own statements are its choices, each once (not repeated in the legend).
    for option in [
        "I do not feel sad.",
        "I feel sad.",
        "I am sad all the time and I can&#39;t snap out of it.",
        "I am so sad and unhappy that I can&#39;t stand it.",
    ] {
        let label = format!("<span>{option}</span>");
        assert_eq!(
            page.body.matches(&label).count(),
            1,
            "{label}\n{}",
            page.body
        );
    }
    assert!(
        !page.body.contains("0. I do not feel sad."),
        "options repeated in the legend"
    );
    assert!(page.body.contains("Choose one statement"));
    // 4 is outside 0..=3; a missing answer is refused too.
    let r = post_items(&b, &path, &page, |n| {
        if n == 21 { "4".into() } else { "0".into() }
    });
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("I do not feel sad."),
        "the page comes back with its options"
    );
    assert!(default_answers(&app, "bdi").is_empty());
    let r = post_items(&b, &path, &page, |n| ((n % 4) as i32).to_string());
    assert_eq!(r.status, 303, "{}", r.body);
    let stored = default_answers(&app, "bdi");
    assert_eq!(stored.len(), 21);
    assert!(stored.iter().all(|(n, v)| *v == (n % 4) as i32));
}

on_both_backends!(
    a_1_to_7_scale_renders_seven_choices_labelled_where_the_scale_labels_them,
    a_bdi_page_offers_each_items_own_four_statements,
);

on_both_backends!(
    the_whole_flow_from_the_prolific_link_to_the_completion_redirect,
    the_same_prolific_id_resumes_the_same_participant,
    the_cookie_resumes_after_closing_the_tab,
    a_double_submitted_page_stores_one_set_of_answers,
    back_and_resubmit_of_an_earlier_page_changes_nothing,
    skipping_ahead_by_url_redirects_to_the_current_page,
    missing_or_out_of_range_answers_get_a_4xx_page_and_store_nothing,
    declining_consent_ends_with_no_consent_and_stores_nothing,
    withdrawing_deletes_the_answers,
    a_forged_or_missing_csrf_token_is_refused,
    the_completion_redirect_is_never_sent_before_the_commit,
    closed_and_full_studies_show_a_polite_page,
);
