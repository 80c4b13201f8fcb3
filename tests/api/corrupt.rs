//! Stored values that do not decode are errors naming table, row and column, never a default:
//! the participant sees the plain error page.

use diesel::connection::SimpleConnection;
use emotionbench::store::{StoreError, participants, studies};

use crate::helpers::{TestApp, TestDb, spawn_app};
use crate::on_both_backends;
use crate::survey::{PID, make_study, walk_to};

fn corrupt_status_of(app: &TestApp, slug: &str) -> emotionbench::store::ParticipantId {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, slug).unwrap().unwrap();
    let p = participants::by_pid(&mut conn, study.id, PID)
        .unwrap()
        .unwrap();
    conn.batch_execute(&format!(
        "UPDATE participants SET status = 'bogus' WHERE id = {}",
        p.id
    ))
    .unwrap();
    p.id
}

fn a_participant_whose_stored_status_does_not_decode_gets_the_error_page(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "corrupt", |_| {});
    let b = app.browser();
    let (_, path) = walk_to(
        &b,
        &format!("/s/corrupt?PROLIFIC_PID={PID}"),
        "feelings-now",
    );
    let id = corrupt_status_of(&app, "corrupt");

    let r = b.get(&path);
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(r.body.contains("Something went wrong"), "{}", r.body);
    // The plain page: the cause is for the log, not for the participant.
    assert!(!r.body.contains("bogus"), "{}", r.body);
    // The log line carries the request id the page shows, and the cause: table, row, column.
    let request = r.header("x-request-id").unwrap().to_owned();
    assert!(r.body.contains(&request), "{}", r.body);
    let lines = app.log_lines_with(&request);
    assert_eq!(lines.len(), 1, "logged once: {lines:#?}");
    let line = &lines[0];
    assert!(line.contains("ERROR"), "{line}");
    assert!(
        line.contains(&format!("participants row {id}, column status")) && line.contains("bogus"),
        "{line}"
    );

    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, "corrupt").unwrap().unwrap();
    let err = StoreError::from(participants::by_pid(&mut conn, study.id, PID).unwrap_err());
    match err {
        StoreError::Corrupt {
            table,
            row,
            column,
            detail,
        } => {
            assert_eq!(
                (table, row.as_str(), column.as_str()),
                ("participants", id.to_string().as_str(), "status")
            );
            assert!(detail.contains("bogus"), "{detail}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

on_both_backends!(a_participant_whose_stored_status_does_not_decode_gets_the_error_page);

/// A stored role that does not decode is an error too: it used to fall back to "researcher",
/// silently granting an account some access whatever its row said.
fn an_account_whose_stored_role_does_not_decode_is_refused_with_the_error_page(db: TestDb) {
    let app = spawn_app(db);
    let admin = crate::admin::signed_in(&app, emotionbench::store::users::Role::Admin);
    assert_eq!(admin.get("/admin").status, 200);
    let pool = app.pool();
    pool.get()
        .unwrap()
        .batch_execute("UPDATE users SET role = 'root' WHERE email = 'admin@example.org'")
        .unwrap();

    let r = admin.get("/admin");
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(!r.body.contains("root"), "{}", r.body);
    let request = r.header("x-request-id").unwrap().to_owned();
    let lines = app.log_lines_with(&request);
    assert_eq!(lines.len(), 1, "logged once: {lines:#?}");
    assert!(
        lines[0].contains("users row of a signed-in session, column role")
            && lines[0].contains("root"),
        "{}",
        lines[0]
    );
}

on_both_backends!(an_account_whose_stored_role_does_not_decode_is_refused_with_the_error_page);

/// A study's translated consent that does not decode is an error, not a study without
/// translations (whose German participants would be asked to consent in English).
fn a_study_whose_stored_translations_do_not_decode_gets_the_error_page(db: TestDb) {
    let app = spawn_app(db);
    make_study(&app, "untrans", |c| {
        c.languages = ["en", "de"]
            .iter()
            .map(|t| emotionbench::domain::language::Lang::parse(t).unwrap())
            .collect();
    });
    let pool = app.pool();
    pool.get()
        .unwrap()
        .batch_execute(
            r#"UPDATE studies SET translations = '{"de": {"consent": 7}}' WHERE slug = 'untrans'"#,
        )
        .unwrap();
    let r = app.browser().get("/s/untrans/consent?lang=de");
    assert_eq!(r.status, 500, "{}", r.body);
    let request = r.header("x-request-id").unwrap().to_owned();
    let lines = app.log_lines_with(&request);
    assert_eq!(lines.len(), 1, "logged once: {lines:#?}");
    assert!(
        lines[0].contains("translations") && lines[0].contains("translated study texts"),
        "{}",
        lines[0]
    );
}

on_both_backends!(a_study_whose_stored_translations_do_not_decode_gets_the_error_page);
