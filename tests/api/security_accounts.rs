//! Issue #14, sign-in and tokens: each test performs the attack the black-box probe performed
//! and asserts the safe outcome. Concurrent sign-in, forwarded client addresses, lockout of a
//! known account, `next` with CR/LF, the password and email policy, planted CSRF cookies.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use emotionbench::store::schema::{audit_log, login_attempts};
use emotionbench::store::{participants, studies, users};

use crate::admin::{PASSWORD, add_user};
use crate::helpers::{Reply, TestApp, TestDb, spawn_app, spawn_app_with};
use crate::on_both_backends;
use crate::survey::{PID, make_study};

/// A POST with extra request headers (a forwarded address, a scheme, planted cookies).
fn post_with(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, &str)],
    fields: &[(&str, &str)],
) -> Reply {
    let mut req = agent.post(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    into_reply(req.send_form(fields.iter().copied()).unwrap())
}

fn get_with(agent: &ureq::Agent, url: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = agent.get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    into_reply(req.call().unwrap())
}

fn into_reply(mut r: ureq::http::Response<ureq::Body>) -> Reply {
    let headers = r
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    Reply {
        status: r.status().as_u16(),
        headers,
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// Every `Set-Cookie` header of a reply.
fn set_cookies(r: &Reply) -> Vec<&str> {
    r.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.as_str())
        .collect()
}

/// A sign-in from `forwarded` (sent as X-Forwarded-For), on a fresh browser.
fn login_from(app: &TestApp, forwarded: &str, email: &str, pass: &str) -> Reply {
    let b = app.browser();
    let form = b.get("/admin/login");
    post_with(
        &b.agent,
        &b.url("/admin/login"),
        &[("X-Forwarded-For", forwarded)],
        &[
            ("csrf", &form.csrf()),
            ("email", email),
            ("password", pass),
            ("next", "/admin"),
        ],
    )
}

/// (failed, succeeded) recorded attempts for an account.
fn attempts(app: &TestApp, email: &str) -> (i64, i64) {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let count = |ok: bool, conn: &mut emotionbench::store::DbConnection| {
        login_attempts::table
            .filter(login_attempts::email.eq(email))
            .filter(login_attempts::succeeded.eq(ok))
            .count()
            .get_result::<i64>(conn)
            .unwrap()
    };
    (count(false, &mut conn), count(true, &mut conn))
}

/// The client addresses of the audit rows of an action, oldest first.
fn audited_ips(app: &TestApp, action: &str) -> Vec<Option<String>> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    audit_log::table
        .filter(audit_log::action.eq(action))
        .order(audit_log::id)
        .select(audit_log::client_ip)
        .load(&mut conn)
        .unwrap()
}

/// Sends `passwords.len()` sign-ins for one account at once (one thread each, released
/// together) and returns their statuses in the order of `passwords`.
fn at_once(app: &TestApp, email: &str, passwords: &[&str]) -> Vec<u16> {
    let b = app.browser();
    let csrf = b.get("/admin/login").csrf();
    let barrier = Barrier::new(passwords.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = passwords
            .iter()
            .enumerate()
            .map(|(i, pass)| {
                let (b, csrf, barrier) = (&b, &csrf, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    if i + 1 == passwords.len() {
                        // The last one starts a little after the others, as in the probe.
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    b.post(
                        "/admin/login",
                        &[
                            ("csrf", csrf),
                            ("email", email),
                            ("password", pass),
                            ("next", "/admin"),
                        ],
                    )
                    .status
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Point 1: 30 concurrent wrong passwords for one account from one address, then 100 with the
/// right password last. At most the limit (5) of wrong passwords is ever verified; the rest get
/// 429 without their password being looked at, and the right password is not let in past the
/// limit.
fn concurrent_sign_ins_never_verify_more_than_the_limit(db: TestDb) {
    let app = spawn_app(db);
    add_user(&app, "ada@example.org", users::Role::Admin);
    let statuses = at_once(&app, "ada@example.org", &["wrong password"; 30]);
    let evaluated = statuses.iter().filter(|s| **s == 401).count();
    let throttled = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(
        (evaluated, throttled),
        (5, 25),
        "statuses of 30 concurrent wrong passwords: {statuses:?}"
    );
    assert_eq!(attempts(&app, "ada@example.org"), (5, 0));

    add_user(&app, "bob@example.org", users::Role::Admin);
    let mut passwords = vec!["wrong password"; 99];
    passwords.push(PASSWORD);
    let statuses = at_once(&app, "bob@example.org", &passwords);
    let (failed, succeeded) = attempts(&app, "bob@example.org");
    let wrong_verified = statuses.iter().filter(|s| **s == 401).count();
    assert!(
        wrong_verified <= 5 && failed == wrong_verified as i64 && failed <= 5,
        "{wrong_verified} wrong passwords verified, {failed} failures recorded: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| matches!(s, 401 | 303 | 429)),
        "{statuses:?}"
    );
    assert_eq!(
        succeeded,
        i64::from(statuses[99] == 303),
        "only the right password can succeed"
    );
    // The right password got in only if it was reserved before the fifth failure (the probe
    // saw it accepted after 17).
    if statuses[99] == 303 {
        let pool = app.pool();
        let mut conn = pool.get().unwrap();
        let rows: Vec<(i64, bool)> = login_attempts::table
            .filter(login_attempts::email.eq("bob@example.org"))
            .order(login_attempts::id)
            .select((login_attempts::id, login_attempts::succeeded))
            .load(&mut conn)
            .unwrap();
        let before = rows.iter().take_while(|(_, ok)| !ok).count();
        assert!(before <= 4, "{before} failures recorded before the success");
    }
}

/// Point 2, without trusted proxies: a forged X-Forwarded-For is ignored. Every failure counts
/// against the TCP peer and the audit log records the peer.
fn a_forged_forwarded_address_is_ignored_without_trusted_proxies(db: TestDb) {
    let app = spawn_app(db);
    add_user(&app, "ada@example.org", users::Role::Admin);
    for i in 0..5 {
        let r = login_from(&app, &format!("203.0.113.{i}"), "ada@example.org", "wrong!");
        assert_eq!(r.status, 401, "{}", r.body);
    }
    // A sixth "address" is still 127.0.0.1: the pair is blocked, right password or not.
    let r = login_from(&app, "203.0.113.99", "ada@example.org", PASSWORD);
    assert_eq!(r.status, 429, "{}", r.body);
    let ips = audited_ips(&app, "login.failed");
    assert_eq!(ips.len(), 5);
    assert!(
        ips.iter().all(|ip| ip.as_deref() == Some("127.0.0.1")),
        "{ips:?}"
    );
}

/// Point 2, with the test's peer 127.0.0.1 trusted: two forwarded addresses are throttled
/// separately, and the audit rows record the forwarded address.
fn behind_a_trusted_proxy_forwarded_addresses_are_throttled_separately(db: TestDb) {
    let app = spawn_app_with(db, |s| {
        s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    });
    add_user(&app, "ada@example.org", users::Role::Admin);
    // Anonymous failures at many accounts from one client: that client is blocked at 20...
    for i in 0..20 {
        let r = login_from(&app, "198.51.100.7", &format!("nobody{i}@example.org"), "x");
        assert_eq!(r.status, 401, "{}", r.body);
    }
    let r = login_from(&app, "198.51.100.7", "ada@example.org", PASSWORD);
    assert_eq!(r.status, 429, "{}", r.body);
    // ...and nobody else is: a researcher behind the same proxy signs in.
    let r = login_from(&app, "203.0.113.5", "ada@example.org", PASSWORD);
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/admin")),
        "{}",
        r.body
    );
    // nginx appends the peer it saw; what the client itself put in front is not believed.
    let r = login_from(&app, "10.9.9.9, 198.51.100.7", "ada@example.org", PASSWORD);
    assert_eq!(r.status, 429, "{}", r.body);
    let failed = audited_ips(&app, "login.failed");
    assert_eq!(failed.len(), 20);
    assert!(
        failed
            .iter()
            .all(|ip| ip.as_deref() == Some("198.51.100.7")),
        "{failed:?}"
    );
    assert_eq!(
        audited_ips(&app, "login"),
        vec![Some("203.0.113.5".to_owned())]
    );
}

/// Point 7: five wrong tries at a known account from one place block that place only; the
/// owner elsewhere still signs in with the right password, after a delay that grows with the
/// failures from elsewhere.
fn failures_elsewhere_slow_an_account_down_but_never_lock_its_owner_out(db: TestDb) {
    let app = spawn_app_with(db, |s| {
        s.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    });
    add_user(&app, "admin@localhost", users::Role::Admin);
    for _ in 0..5 {
        let r = login_from(&app, "198.51.100.7", "admin@localhost", "guess guess");
        assert_eq!(r.status, 401, "{}", r.body);
    }
    // The attacker's place is blocked, even with the right password.
    let r = login_from(&app, "198.51.100.7", "admin@localhost", PASSWORD);
    assert_eq!(r.status, 429, "{}", r.body);
    // The owner, elsewhere, gets in, slowed down by the failures from elsewhere.
    let t = Instant::now();
    let r = login_from(&app, "203.0.113.5", "admin@localhost", PASSWORD);
    let slowed = t.elapsed();
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/admin")),
        "{}",
        r.body
    );
    assert!(slowed >= Duration::from_millis(250), "{slowed:?}");
    // More failures from other places make each attempt wait longer.
    for i in 0..2 {
        let r = login_from(&app, &format!("192.0.2.{i}"), "admin@localhost", "guess");
        assert_eq!(r.status, 401, "{}", r.body);
    }
    let t = Instant::now();
    let r = login_from(&app, "203.0.113.5", "admin@localhost", PASSWORD);
    assert_eq!(r.status, 303, "{}", r.body);
    assert!(
        t.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t.elapsed()
    );
}

/// Point 8: a `next` with CR/LF after a successful sign-in is a 303 to /admin, not a 500.
fn a_next_with_control_characters_falls_back_to_admin(db: TestDb) {
    let app = spawn_app(db);
    add_user(&app, "ada@example.org", users::Role::Admin);
    for next in [
        "/admin\r\nSet-Cookie: eb_session=planted",
        "/admin/studies\n",
        "/admin/\u{e9}",
        "/admin\u{0}",
    ] {
        let b = app.browser();
        let form = b.get("/admin/login");
        let r = b.post(
            "/admin/login",
            &[
                ("csrf", &form.csrf()),
                ("email", "ada@example.org"),
                ("password", PASSWORD),
                ("next", next),
            ],
        );
        assert_eq!(
            (r.status, r.location()),
            (303, Some("/admin")),
            "{next:?}: {}",
            r.body
        );
        assert_eq!(b.get("/admin").status, 200, "signed in");
    }
    // The login form does not echo one either.
    let page = app
        .browser()
        .get("/admin/login?next=%2Fadmin%0D%0AX-Evil:%201");
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("name=\"next\" value=\"/admin\""),
        "{}",
        page.body
    );
}

/// Runs `admin create-user EMAIL` with `password` on standard input.
fn create_user(url: &str, email: &str, password: &str) -> std::process::Output {
    use std::io::Write;
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_emotionbench"))
        .args(["admin", "create-user", email, "--role", "admin"])
        .env("DATABASE_URL", url)
        .env_remove("EMOTIONBENCH_CONFIG")
        .env("EMOTIONBENCH_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    c.wait_with_output().unwrap()
}

/// Point 10: whitespace-only, common and over-long passwords and malformed emails are refused
/// by `create-user`; the longest password it accepts is one sign-in accepts.
fn create_user_refuses_weak_passwords_and_malformed_emails(db: TestDb) {
    let app = TestApp::prepare(db);
    let url = app.db.url.clone();
    let long = "x1".repeat(2500);
    for (password, why) in [
        ("          ", "only spaces"),
        ("password12", "first an attacker tries"),
        ("Password 123", "first an attacker tries"),
        ("1234567890", "first an attacker tries"),
        (long.as_str(), "at most 1024 bytes"),
    ] {
        let o = create_user(&url, "weak@example.org", password);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{password:?} was accepted");
        assert!(err.contains(why), "{password:?}: {err}");
    }
    for email in [
        "two@at@example.org",
        "with space@example.org",
        "Rita <rita@example.org>",
        "<script>@example.org",
        "no-at-sign",
    ] {
        let o = create_user(&url, email, "a perfectly fine secret");
        assert!(!o.status.success(), "{email:?} was accepted");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("is not an email address"),
            "{email:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    assert!(
        users::list(&mut conn).unwrap().is_empty(),
        "nothing was created"
    );
    drop(conn);
    // The longest password creation accepts (1,024 bytes) is one sign-in accepts too.
    let longest = "ab".repeat(512);
    let o = create_user(&url, "long@example.org", &longest);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = create_user(&url, "longer@example.org", &format!("{longest}c"));
    assert!(!o.status.success());
    let app = spawn_app(app.db);
    let b = app.browser();
    let form = b.get("/admin/login");
    let r = b.post(
        "/admin/login",
        &[
            ("csrf", &form.csrf()),
            ("email", "long@example.org"),
            ("password", &longest),
        ],
    );
    assert_eq!(
        (r.status, r.location()),
        (303, Some("/admin")),
        "{}",
        r.body
    );
}

/// Point 12: a double-submit cookie the attacker planted (any value, echoed in the field) is
/// refused on the login form and on survey POSTs; the server's own tokens still pass.
fn a_planted_csrf_cookie_is_refused_on_login_and_survey_posts(db: TestDb) {
    let app = spawn_app(db);
    add_user(&app, "ada@example.org", users::Role::Admin);
    let planted = "B".repeat(32);
    let fresh = app.browser();
    let r = post_with(
        &fresh.agent,
        &fresh.url("/admin/login"),
        &[("Cookie", &format!("eb_csrf={planted}"))],
        &[
            ("csrf", &planted),
            ("email", "ada@example.org"),
            ("password", PASSWORD),
        ],
    );
    assert_eq!(r.status, 403, "login with a planted cookie: {}", r.body);
    // The same shape with a token this server issued passes (the test can fail).
    let issued = app.browser().get("/admin/login").csrf();
    let r = post_with(
        &fresh.agent,
        &fresh.url("/admin/login"),
        &[("Cookie", &format!("eb_csrf={issued}"))],
        &[
            ("csrf", &issued),
            ("email", "ada@example.org"),
            ("password", PASSWORD),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);

    make_study(&app, "planted", |_| {});
    let b = app.browser();
    let (consent, path) = b.open(&format!("/s/planted?PROLIFIC_PID={PID}"));
    assert!(crate::helpers::page_name(&path) == "consent", "{path}");
    let attacker = app.browser();
    // The consent form posted by hand with the double-submit cookie `token`.
    let post_consent = |token: &str| {
        let form = crate::helpers::consent_form(&consent, Some(token), "yes");
        post_with(
            &attacker.agent,
            &attacker.url(&path),
            &[("Cookie", &format!("eb_csrf={token}"))],
            &crate::helpers::fields(&form),
        )
    };
    // The consent answer (which makes the participant) with a planted token: refused,
    // nothing made.
    let r = post_consent(&planted);
    assert_eq!(r.status, 403, "consent with a planted cookie: {}", r.body);
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let study = studies::load(&mut conn, "planted").unwrap().unwrap();
    assert!(
        participants::by_pid(&mut conn, study.id, PID)
            .unwrap()
            .is_none()
    );
    drop(conn);
    // The participant's own token, in the same hand-made request, passes.
    let r = post_consent(&consent.csrf());
    assert_eq!(r.status, 303, "{}", r.body);
    let mut conn = pool.get().unwrap();
    let p = participants::by_pid(&mut conn, study.id, PID)
        .unwrap()
        .unwrap();
    drop(conn);
    // A page of the participant and withdrawal, with the participant's cookie and a planted
    // token: refused, nothing moved.
    let participant = format!("eb_p{}={}", study.id, p.public_id);
    for url in ["/s/planted/demographics", "/s/planted/withdraw"] {
        let r = post_with(
            &attacker.agent,
            &attacker.url(url),
            &[("Cookie", &format!("{participant}; eb_csrf={planted}"))],
            &[("csrf", &planted), ("gender", "Female")],
        );
        assert_eq!(r.status, 403, "{url} with a planted cookie: {}", r.body);
    }
    let mut conn = pool.get().unwrap();
    let after = participants::by_pid(&mut conn, study.id, PID)
        .unwrap()
        .unwrap();
    assert_eq!(
        (after.page, after.status),
        (p.page, p.status),
        "nothing moved"
    );
}

/// Point 12: over HTTPS the cookies are `__Host-` (Secure, Path=/, no Domain), and a plain
/// `eb_csrf` cookie, which a sibling host could set, does not stand in for it. HTTPS here is
/// what a trusted proxy (the test's peer) says.
fn over_tls_the_cookies_are_host_prefixed(db: TestDb) {
    let app = spawn_app_with(db, |s| {
        s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    });
    add_user(&app, "ada@example.org", users::Role::Admin);
    let b = app.browser();
    let tls = [("X-Forwarded-Proto", "https")];
    let form = get_with(&b.agent, &b.url("/admin/login"), &tls);
    let cookies = set_cookies(&form);
    assert!(
        cookies.iter().any(|c| c.starts_with("__Host-eb_csrf=")
            && c.contains("Secure")
            && c.contains("Path=/")
            && !c.contains("Domain")),
        "{cookies:?}"
    );
    let token = form.csrf();
    let sibling = app.browser();
    let r = post_with(
        &sibling.agent,
        &sibling.url("/admin/login"),
        &[
            ("X-Forwarded-Proto", "https"),
            ("Cookie", &format!("eb_csrf={token}")),
        ],
        &[
            ("csrf", &token),
            ("email", "ada@example.org"),
            ("password", PASSWORD),
        ],
    );
    assert_eq!(r.status, 403, "a plain cookie over TLS: {}", r.body);
    let r = post_with(
        &sibling.agent,
        &sibling.url("/admin/login"),
        &[
            ("X-Forwarded-Proto", "https"),
            ("Cookie", &format!("__Host-eb_csrf={token}")),
        ],
        &[
            ("csrf", &token),
            ("email", "ada@example.org"),
            ("password", PASSWORD),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let cookies = set_cookies(&r);
    assert!(
        cookies
            .iter()
            .any(|c| c.starts_with("__Host-eb_session=") && c.contains("Secure")),
        "{cookies:?}"
    );
}

/// The same `X-Forwarded-Proto: https` from a peer that is not a trusted proxy is anyone's
/// claim: the cookies stay the plain-HTTP ones.
fn an_untrusted_peer_cannot_claim_https(db: TestDb) {
    let app = spawn_app(db);
    let b = app.browser();
    let form = get_with(
        &b.agent,
        &b.url("/admin/login"),
        &[("X-Forwarded-Proto", "https")],
    );
    let cookies = set_cookies(&form);
    assert!(
        cookies
            .iter()
            .any(|c| c.starts_with("eb_csrf=") && !c.contains("Secure")),
        "{cookies:?}"
    );
    assert!(
        !cookies.iter().any(|c| c.starts_with("__Host-")),
        "{cookies:?}"
    );
}

on_both_backends!(
    an_untrusted_peer_cannot_claim_https,
    concurrent_sign_ins_never_verify_more_than_the_limit,
    a_forged_forwarded_address_is_ignored_without_trusted_proxies,
    behind_a_trusted_proxy_forwarded_addresses_are_throttled_separately,
    failures_elsewhere_slow_an_account_down_but_never_lock_its_owner_out,
    a_next_with_control_characters_falls_back_to_admin,
    create_user_refuses_weak_passwords_and_malformed_emails,
    a_planted_csrf_cookie_is_refused_on_login_and_survey_posts,
    over_tls_the_cookies_are_host_prefixed,
);
