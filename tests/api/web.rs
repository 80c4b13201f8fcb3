//! The web server, in-process on a random port, on both backends.

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

on_both_backends!(
    the_start_page_lists_open_studies_with_strict_headers,
    unknown_pages_get_a_404_page,
    health_and_assets_answer,
);
