//! The web server, in-process on a random port, on both backends.

use diesel::connection::SimpleConnection;

use crate::helpers::{TestDb, spawn_app};
use crate::on_both_backends;

fn the_start_page_lists_open_studies_with_strict_headers(db: TestDb) {
    {
        let pool = db.pool();
        let mut conn = pool.get().unwrap();
        emotionbench::app::demo::load_demo(&mut conn).unwrap();
    }
    let app = spawn_app(db);
    let r = app.get("/");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("EmotionBench demo"), "{}", r.body);
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    // Forms may post only here, and the completion redirect that answers the last form may go
    // only to Prolific (browsers apply form-action to that redirect; see tests/api/browser.rs).
    assert!(
        csp.contains("form-action 'self' https://app.prolific.com;"),
        "{csp}"
    );
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

fn unknown_pages_get_a_404_page(db: TestDb) {
    let app = spawn_app(db);
    let r = app.get("/no/such/page");
    assert_eq!(r.status, 404);
    assert!(r.body.contains("Page not found"), "{}", r.body);
    assert!(r.body.contains("<!doctype html>"));
    assert_eq!(app.get("/assets/missing.css").status, 404);
}

fn health_and_assets_answer(db: TestDb) {
    let app = spawn_app(db);
    let h = app.get("/healthz");
    assert_eq!((h.status, h.body.as_str()), (200, "ok\n"));
    let css = app.get("/assets/app.css");
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
    assert!(css.body.contains("focus-visible"));
}

fn a_failed_request_is_logged_once_with_its_cause_and_the_id_the_page_shows(db: TestDb) {
    let app = spawn_app(db);
    let ok = app.get("/");
    assert_eq!(ok.status, 200);
    let ok_id = ok
        .header("x-request-id")
        .expect("every response has a request id");
    assert!(
        ok_id.len() == 16 && ok_id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{ok_id}"
    );
    // Successes write no line at the default level.
    assert_eq!(app.log_lines_with(ok_id), Vec::<String>::new());

    // The start page lists studies: without their table it fails.
    let pool = app.pool();
    pool.get()
        .unwrap()
        .batch_execute("ALTER TABLE studies RENAME TO studies_gone")
        .unwrap();
    let r = app.get("/");
    assert_eq!(r.status, 500);
    let id = r.header("x-request-id").unwrap().to_owned();
    assert_ne!(id, ok_id);
    assert!(r.body.contains("Something went wrong"), "{}", r.body);
    assert!(
        r.body.contains(&id),
        "the page shows the id to quote: {}",
        r.body
    );
    assert!(
        !r.body.contains("studies"),
        "no cause on the page: {}",
        r.body
    );
    let lines = app.log_lines_with(&id);
    assert_eq!(lines.len(), 1, "logged once: {lines:#?}");
    let line = &lines[0];
    assert!(
        line.contains("ERROR") && line.contains("request failed"),
        "{line}"
    );
    assert!(
        line.contains("route=/ ") && line.contains("status=500"),
        "{line}"
    );
    // The cause chain, down to the database's own message naming the table.
    assert!(
        line.contains("internal error: database") && line.contains("studies"),
        "{line}"
    );
}

on_both_backends!(
    a_failed_request_is_logged_once_with_its_cause_and_the_id_the_page_shows,
    the_start_page_lists_open_studies_with_strict_headers,
    unknown_pages_get_a_404_page,
    health_and_assets_answer,
);
