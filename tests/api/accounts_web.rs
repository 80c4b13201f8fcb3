//! Issue #13 point 6, accounts in the browser: invitation links (single use, 72 h, hash only),
//! disable/enable, roles, the last admin kept, the audit entries, and the first-admin hints of
//! `serve` and the sign-in page.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use emotionbench::store::schema::{audit_log, invites};
use emotionbench::store::users;

use crate::admin::{PASSWORD, login_form, signed_in};
use crate::helpers::{Browser, Reply, TestApp, TestDb, spawn_app};
use crate::on_both_backends;

const NEW_PASSWORD: &str = "a sturdy new passphrase";

/// Invites `email` as `role` from the admin's browser; returns the link's path.
fn invite(admin: &Browser, email: &str, role: &str) -> String {
    let csrf = admin.get("/admin/users").csrf();
    let r = admin.post(
        "/admin/users/invite",
        &[("csrf", &csrf), ("email", email), ("role", role)],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let start = r.body.find("/invite/").expect("the page shows the link");
    let token: String = r.body[start + "/invite/".len()..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    assert_eq!(token.len(), 32, "{}", r.body);
    assert!(
        r.body.contains(&format!("{}/invite/{token}", admin.base)),
        "the link is absolute, ready to send: {}",
        r.body
    );
    format!("/invite/{token}")
}

/// Sets a password through an invitation link in a fresh browser.
fn accept(app: &TestApp, link: &str, password: &str, repeated: &str) -> Reply {
    let b = app.browser();
    let form = b.get(link);
    assert_eq!(form.status, 200, "{}", form.body);
    b.post(
        link,
        &[
            ("csrf", &form.csrf()),
            ("password", password),
            ("password2", repeated),
        ],
    )
}

fn audit_actions(app: &TestApp) -> Vec<(String, Option<String>)> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    audit_log::table
        .order(audit_log::id)
        .select((audit_log::action, audit_log::target))
        .load(&mut conn)
        .unwrap()
}

fn user_id(app: &TestApp, email: &str) -> i64 {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    users::list(&mut conn)
        .unwrap()
        .into_iter()
        .find(|u| u.email == email)
        .unwrap()
        .id
        .0
}

fn an_invited_researcher_sets_a_password_once_and_signs_in(db: TestDb) {
    let app = spawn_app(db);
    let admin = signed_in(&app, users::Role::Admin);
    let link = invite(&admin, "Rita@Example.org", "researcher");
    // Only the token's hash is stored.
    let token = link.trim_start_matches("/invite/");
    let stored: Vec<String> = {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        invites::table
            .select(invites::token_hash)
            .load(&mut conn)
            .unwrap()
    };
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0], token);
    assert_eq!(stored[0], emotionbench::auth::token_hash(token));
    // The accounts page lists the open invitation.
    let page = admin.get("/admin/users");
    assert!(page.body.contains("rita@example.org"), "{}", page.body);

    let form = app.browser().get(&link);
    assert!(form.body.contains("rita@example.org") && form.body.contains("researcher"));
    let done = accept(&app, &link, NEW_PASSWORD, NEW_PASSWORD);
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Your account is ready"), "{}", done.body);

    let b = app.browser();
    let r = login_form(&b, "rita@example.org", NEW_PASSWORD);
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/admin")),
        "{}",
        r.body
    );
    assert_eq!(b.get("/admin").status, 200);
    assert_eq!(b.get("/admin/users").status, 403, "a researcher");

    // The link works once.
    let again = app.browser().get(&link);
    assert_eq!(again.status, 410);
    assert!(again.body.contains("has been used"), "{}", again.body);
    let form_page = app.browser();
    let other_link_form = form_page.get("/admin/login");
    let r = form_page.post(
        &link,
        &[
            ("csrf", &other_link_form.csrf()),
            ("password", "another fine passphrase"),
            ("password2", "another fine passphrase"),
        ],
    );
    assert_eq!(r.status, 410, "{}", r.body);
    let r = login_form(
        &app.browser(),
        "rita@example.org",
        "another fine passphrase",
    );
    assert_eq!(r.status, 401, "the second use changed nothing");

    let actions = audit_actions(&app);
    let target = Some("rita@example.org".to_owned());
    assert!(
        actions.contains(&("user.invite".into(), target.clone())),
        "{actions:?}"
    );
    assert!(
        actions.contains(&("user.accept-invite".into(), target)),
        "{actions:?}"
    );
}

fn expired_unknown_and_weak_invitations_are_refused_clearly(db: TestDb) {
    let app = spawn_app(db);
    let admin = signed_in(&app, users::Role::Admin);
    let link = invite(&admin, "eve@example.org", "researcher");

    // A weak password: the policy's message, on the form, nothing stored.
    for (weak, message) in [
        ("short", "at least 10 characters"),
        ("password123", "one of the first an attacker tries"),
        ("eve@example.org", "one of the first an attacker tries"),
    ] {
        let r = accept(&app, &link, weak, weak);
        assert_eq!(r.status, 422, "{weak}: {}", r.body);
        assert!(r.body.contains(message), "{weak}: {}", r.body);
        assert!(r.body.contains("aria-invalid=\"true\""), "{}", r.body);
    }
    let r = accept(&app, &link, NEW_PASSWORD, "a different passphrase");
    assert_eq!(r.status, 422);
    assert!(r.body.contains("The two passwords differ"), "{}", r.body);
    assert_eq!(
        login_form(&app.browser(), "eve@example.org", NEW_PASSWORD).status,
        401
    );

    // Unknown links.
    for bad in [
        "/invite/nosuchtokennosuchtokennosuchtok",
        "/invite/%3Cscript%3E",
    ] {
        let r = app.browser().get(bad);
        assert_eq!(r.status, 404, "{bad}");
        assert!(r.body.contains("not valid"), "{}", r.body);
    }

    // Expired: its stored expiry moved into the past.
    {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        diesel::update(invites::table)
            .set(invites::expires_at.eq(emotionbench::store::now() - chrono::Duration::minutes(1)))
            .execute(&mut conn)
            .unwrap();
    }
    let r = app.browser().get(&link);
    assert_eq!(r.status, 410);
    assert!(
        r.body.contains("has expired") && r.body.contains("72 hours"),
        "{}",
        r.body
    );
    let b = app.browser();
    let csrf = b.get("/admin/login").csrf();
    let r = b.post(
        &link,
        &[
            ("csrf", &csrf),
            ("password", NEW_PASSWORD),
            ("password2", NEW_PASSWORD),
        ],
    );
    assert_eq!(r.status, 410, "{}", r.body);
    assert_eq!(
        login_form(&app.browser(), "eve@example.org", NEW_PASSWORD).status,
        401
    );
    // The accounts page no longer lists it as open.
    let page = admin.get("/admin/users");
    assert!(!page.body.contains("Open invitations"), "{}", page.body);

    // No CSRF token: refused before anything is looked at.
    let r = app.browser().post(
        &link,
        &[("password", NEW_PASSWORD), ("password2", NEW_PASSWORD)],
    );
    assert_eq!(r.status, 403);
}

fn inviting_needs_an_admin_and_a_free_address(db: TestDb) {
    let app = spawn_app(db);
    let researcher = signed_in(&app, users::Role::Researcher);
    let csrf = researcher.get("/admin").csrf();
    let r = researcher.post(
        "/admin/users/invite",
        &[
            ("csrf", &csrf),
            ("email", "x@example.org"),
            ("role", "admin"),
        ],
    );
    assert_eq!(r.status, 403);
    let admin = signed_in(&app, users::Role::Admin);
    let csrf = admin.get("/admin/users").csrf();
    for (email, why) in [
        ("researcher@example.org", "exists already"),
        ("not an address", "is not an email address"),
    ] {
        let r = admin.post(
            "/admin/users/invite",
            &[("csrf", &csrf), ("email", email), ("role", "researcher")],
        );
        assert_eq!(r.status, 422, "{email}");
        assert!(r.body.contains(why), "{email}: {}", r.body);
        assert!(r.body.contains("aria-invalid=\"true\""));
    }
    // A second invitation to one address replaces the first link.
    let first = invite(&admin, "new@example.org", "researcher");
    let second = invite(&admin, "new@example.org", "admin");
    assert_eq!(app.browser().get(&first).status, 404);
    let form = app.browser().get(&second);
    assert_eq!(form.status, 200);
    assert!(form.body.contains("admin"));
}

fn disabling_ends_sessions_and_roles_change_with_one_admin_always_left(db: TestDb) {
    let app = spawn_app(db);
    let admin = signed_in(&app, users::Role::Admin);
    let researcher = signed_in(&app, users::Role::Researcher);
    let rid = user_id(&app, "researcher@example.org");
    let aid = user_id(&app, "admin@example.org");
    let csrf = admin.get("/admin/users").csrf();
    let post = |path: String, fields: &[(&str, &str)]| {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        admin.post(&path, &all)
    };

    // Disable: the open session ends and sign-in is refused.
    assert_eq!(researcher.get("/admin").status, 200);
    let r = post(format!("/admin/users/{rid}/status"), &[("disabled", "yes")]);
    assert_eq!((r.status, r.location()), (303, Some("/admin/users")));
    assert_eq!(researcher.get("/admin").status, 303, "its session ended");
    let r = login_form(&app.browser(), "researcher@example.org", PASSWORD);
    assert_eq!(r.status, 401);
    assert!(admin.get("/admin/users").body.contains("disabled"));
    // Enable: the same password works again.
    let r = post(format!("/admin/users/{rid}/status"), &[("disabled", "no")]);
    assert_eq!(r.status, 303);
    let back = app.browser();
    assert_eq!(
        login_form(&back, "researcher@example.org", PASSWORD).status,
        303
    );

    // Role: the researcher becomes an admin at its next request.
    assert_eq!(back.get("/admin/users").status, 403);
    let r = post(format!("/admin/users/{rid}/role"), &[("role", "admin")]);
    assert_eq!(r.status, 303);
    assert_eq!(back.get("/admin/users").status, 200);
    let r = post(
        format!("/admin/users/{rid}/role"),
        &[("role", "researcher")],
    );
    assert_eq!(r.status, 303);
    assert_eq!(back.get("/admin/users").status, 403);

    // The last enabled admin can neither disable nor demote itself.
    for (path, fields) in [
        (format!("/admin/users/{aid}/status"), [("disabled", "yes")]),
        (format!("/admin/users/{aid}/role"), [("role", "researcher")]),
    ] {
        let r = post(path.clone(), &fields);
        assert_eq!(r.status, 400, "{path}");
        assert!(r.body.contains("last enabled admin"), "{}", r.body);
    }
    assert_eq!(admin.get("/admin/users").status, 200, "still an admin");
    // With a second admin, the first may step down.
    let r = post(format!("/admin/users/{rid}/role"), &[("role", "admin")]);
    assert_eq!(r.status, 303);
    let r = post(
        format!("/admin/users/{aid}/role"),
        &[("role", "researcher")],
    );
    assert_eq!(r.status, 303);
    assert_eq!(admin.get("/admin/users").status, 403);

    // Bad input: 400 or 404, never a change.
    let csrf2 = back.get("/admin/users").csrf();
    for (path, fields) in [
        (format!("/admin/users/{aid}/role"), vec![("role", "root")]),
        (
            format!("/admin/users/{aid}/status"),
            vec![("disabled", "maybe")],
        ),
        (
            "/admin/users/999999/status".to_owned(),
            vec![("disabled", "yes")],
        ),
        ("/admin/users/abc/role".to_owned(), vec![("role", "admin")]),
    ] {
        let mut all = vec![("csrf", csrf2.as_str())];
        all.extend(fields);
        let r = back.post(&path, &all);
        assert!([400, 404].contains(&r.status), "{path}: {}", r.status);
    }

    let actions: Vec<String> = audit_actions(&app).into_iter().map(|(a, _)| a).collect();
    for a in ["user.disable", "user.enable", "user.set-role"] {
        assert!(actions.iter().any(|x| x == a), "{a}: {actions:?}");
    }
}

fn serve_and_the_sign_in_page_say_how_to_create_the_first_admin(db: TestDb) {
    // The sign-in page, before any account exists and after.
    let app = spawn_app(db);
    let page = app.browser().get("/admin/login");
    assert!(
        page.body.contains("No admin account exists yet")
            && page
                .body
                .contains("emotionbench admin create-user EMAIL --role admin"),
        "{}",
        page.body
    );
    // `serve` on the same database prints it too.
    let stderr = serve_stderr_until(&app.db.url, "create-user");
    assert!(
        stderr.contains("emotionbench admin create-user EMAIL --role admin"),
        "{stderr}"
    );
    signed_in(&app, users::Role::Admin);
    let page = app.browser().get("/admin/login");
    assert!(!page.body.contains("No admin account exists yet"));
    let stderr = serve_stderr_until(&app.db.url, "\u{0}never");
    assert!(!stderr.contains("create-user"), "{stderr}");
}

/// Runs `emotionbench serve` on a free port and collects its standard error until a line
/// contains `needle` or 3 seconds pass (the hint comes before the server listens), then stops
/// it.
fn serve_stderr_until(db_url: &str, needle: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("DATABASE_URL", db_url)
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let done = line.contains(needle) || line.contains("listening");
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    lines.join("\n")
}

on_both_backends!(
    an_invited_researcher_sets_a_password_once_and_signs_in,
    expired_unknown_and_weak_invitations_are_refused_clearly,
    inviting_needs_an_admin_and_a_free_address,
    disabling_ends_sessions_and_roles_change_with_one_admin_always_left,
    serve_and_the_sign_in_page_say_how_to_create_the_first_admin,
);
