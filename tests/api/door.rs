//! Issue #15 point 2, identity at the door: Prolific's signed `prolific_token` (RS256 against a
//! JWKS this test serves itself, with key pairs `openssl` makes at test time), "Prolific only",
//! excluded Prolific ids of earlier studies, and a study's own limit per address. Every
//! refusal is a clear page and stores nothing.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use diesel::prelude::*;
use emotionbench::store::schema::{audit_log, participants, studies};
use emotionbench::store::users::Role;

use crate::admin::signed_in;
use crate::helpers::{
    Browser, Reply, TestApp, TestDb, cli, consent_form, fields, ok, spawn_app_with,
};
use crate::on_both_backends;
use crate::survey::make_study;

const AUDIENCE: &str = "survey.example.org";
const WORKSPACE: &str = "ws123";

/// An RSA key pair made by `openssl` now, and the JWK of its public half.
struct Key {
    pair: ring::signature::RsaKeyPair,
    kid: String,
}

impl Key {
    fn new(dir: &Path, kid: &str) -> Key {
        let path = dir.join(format!("{kid}.der"));
        let out = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
            ])
            .args(["-outform", "DER", "-out"])
            .arg(&path)
            .output()
            .expect("openssl is needed to make the test's key pair (apt-get install openssl)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let der = std::fs::read(&path).unwrap();
        // OpenSSL 3.0 writes the DER of `genpkey` as PKCS#1, later ones as PKCS#8.
        let pair = ring::signature::RsaKeyPair::from_der(&der)
            .or_else(|_| ring::signature::RsaKeyPair::from_pkcs8(&der))
            .unwrap();
        Key {
            pair,
            kid: kid.into(),
        }
    }

    fn jwk(&self) -> serde_json::Value {
        let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(self.pair.public());
        serde_json::json!({
            "kty": "RSA",
            "kid": self.kid,
            "alg": "RS256",
            "use": "sig",
            "key_ops": ["verify"],
            "n": URL_SAFE_NO_PAD.encode(&public.n),
            "e": URL_SAFE_NO_PAD.encode(&public.e),
        })
    }

    /// An RS256 JWT with `claims`, its header naming key `kid` (normally this key's).
    fn sign_as(&self, kid: &str, claims: &serde_json::Value) -> String {
        let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": kid});
        let b = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        let message = format!("{}.{}", b(&header), b(claims));
        let mut sig = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &ring::rand::SystemRandom::new(),
                message.as_bytes(),
                &mut sig,
            )
            .unwrap();
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(sig))
    }

    fn sign(&self, claims: &serde_json::Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

/// Claims as Prolific would sign them for `pid`, valid from `iat` for two minutes.
fn claims(pid: &str, iat: i64) -> serde_json::Value {
    serde_json::json!({
        "aud": AUDIENCE,
        "iat": iat,
        "exp": iat + 120,
        "prolific": {"workspace_id": WORKSPACE, "PROLIFIC_PID": pid, "STUDY_ID": "pstudy"},
    })
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Serves `body` as the JWKS on a random port, answering every request; its URL.
fn serve_jwks(body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/.well-known/study/jwks.json")
}

fn app_with_jwks(db: TestDb, url: String) -> TestApp {
    spawn_app_with(db, move |s| s.prolific_jwks_url = url)
}

/// Saves the door of `slug` through the admin page, as an admin.
fn set_door(admin: &Browser, slug: &str, extra: &[(&str, &str)]) -> Reply {
    let page = admin.get(&format!("/admin/studies/{slug}/door"));
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = page.csrf();
    let mut form = vec![("csrf", csrf.as_str())];
    form.extend_from_slice(extra);
    admin.post(&format!("/admin/studies/{slug}/door"), &form)
}

fn participants_of(app: &TestApp, slug: &str) -> Vec<Option<String>> {
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    participants::table
        .inner_join(studies::table)
        .filter(studies::slug.eq(slug))
        .select(participants::prolific_pid)
        .load(&mut conn)
        .unwrap()
}

fn link(slug: &str, pid: &str, token: Option<&str>) -> String {
    let mut l = format!("/s/{slug}?PROLIFIC_PID={pid}&STUDY_ID=pstudy&SESSION_ID=sess1");
    if let Some(t) = token {
        l.push_str(&format!("&prolific_token={t}"));
    }
    l
}

/// Opens `link` in a new browser and agrees on the consent page: the answer's reply, or the
/// page itself when the door refused it.
fn consent_through(app: &TestApp, link: &str) -> Reply {
    let b = app.browser();
    let (page, path) = b.open(link);
    if page.status != 200 {
        return page;
    }
    let form = consent_form(&page, None, "yes");
    b.post(&path, &fields(&form))
}

fn a_valid_prolific_token_enters_and_expired_forged_or_missing_ones_are_refused(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let key = Key::new(dir.path(), "k1");
    let other = Key::new(dir.path(), "k2");
    let url = serve_jwks(serde_json::json!({"keys": [key.jwk()]}).to_string());
    let app = app_with_jwks(db, url);
    make_study(&app, "door", |_| {});
    let admin = signed_in(&app, Role::Admin);
    // Requiring the token without its audience is refused by the form.
    let r = set_door(&admin, "door", &[("require_token", "on")]);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.body.contains("audience"), "{}", r.body);
    let r = set_door(
        &admin,
        "door",
        &[
            ("require_token", "on"),
            ("token_audience", AUDIENCE),
            ("token_workspace_id", WORKSPACE),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);

    // A valid token enters: the consent page, then the participant under the link's id.
    let t = key.sign(&claims("pid-ok", now()));
    let r = consent_through(&app, &link("door", "pid-ok", Some(&t)));
    assert_eq!(r.status, 303, "{}", r.body);
    assert!(
        r.location().unwrap().ends_with("/demographics"),
        "{:?}",
        r.location()
    );
    assert_eq!(
        participants_of(&app, "door"),
        vec![Some("pid-ok".to_owned())]
    );

    // Refused, each with a clear page, and nothing stored.
    let expired = key.sign(&claims("pid-x", now() - 600));
    let forged = other.sign_as("k1", &claims("pid-x", now()));
    let unknown_key = other.sign(&claims("pid-x", now()));
    let mut wrong_aud = claims("pid-x", now());
    wrong_aud["aud"] = serde_json::json!("evil.example.org");
    let wrong_aud = key.sign(&wrong_aud);
    let mut wrong_ws = claims("pid-x", now());
    wrong_ws["prolific"]["workspace_id"] = serde_json::json!("another");
    let wrong_ws = key.sign(&wrong_ws);
    let other_pid = key.sign(&claims("pid-y", now()));
    let mut hour = claims("pid-x", now());
    hour["exp"] = serde_json::json!(now() + 3600);
    hour.as_object_mut().unwrap().remove("iat");
    let hour = key.sign(&hour);
    for (what, token, says) in [
        ("expired", Some(expired.as_str()), "has expired"),
        ("wrongly signed", Some(forged.as_str()), "could not confirm"),
        (
            "unknown key",
            Some(unknown_key.as_str()),
            "could not confirm",
        ),
        (
            "another audience",
            Some(wrong_aud.as_str()),
            "could not confirm",
        ),
        (
            "another workspace",
            Some(wrong_ws.as_str()),
            "could not confirm",
        ),
        (
            "another participant's",
            Some(other_pid.as_str()),
            "could not confirm",
        ),
        ("an hour long", Some(hour.as_str()), "could not confirm"),
        ("missing", None, "could not confirm"),
        ("garbage", Some("not-a-token"), "could not confirm"),
    ] {
        let b = app.browser();
        let (page, _) = b.open(&link("door", "pid-x", token));
        assert_eq!(page.status, 403, "{what}: {}", page.body);
        assert!(page.body.contains(says), "{what}: {}", page.body);
        assert!(page.body.contains("Nothing has been stored"), "{what}");
        assert!(!page.body.contains(&t), "the page never echoes a token");
    }
    assert_eq!(participants_of(&app, "door").len(), 1, "nothing stored");

    // A consent form whose Prolific id was changed after the token was checked is refused.
    let b = app.browser();
    let t = key.sign(&claims("pid-z", now()));
    let (page, path) = b.open(&link("door", "pid-z", Some(&t)));
    assert_eq!(page.status, 200, "{}", page.body);
    let mut form = consent_form(&page, None, "yes");
    for (k, v) in &mut form {
        if k == "prolific_pid" {
            *v = "pid-stolen".into();
        }
    }
    let r = b.post(&path, &fields(&form));
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(participants_of(&app, "door").len(), 1, "nothing stored");

    // Continuing someone by their Prolific id from another browser needs a valid token too.
    let (page, _) = app.browser().open(&link("door", "pid-ok", None));
    assert_eq!(page.status, 403, "{}", page.body);
    let t = key.sign(&claims("pid-ok", now()));
    let (page, path) = app.browser().open(&link("door", "pid-ok", Some(&t)));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(path.ends_with("/demographics"), "resumed: {path}");

    // The settings change is audited with what was set.
    let pool = app.pool();
    let mut conn = pool.get().unwrap();
    let detail: Vec<Option<String>> = audit_log::table
        .filter(audit_log::action.eq("study.door"))
        .select(audit_log::detail)
        .load(&mut conn)
        .unwrap();
    assert_eq!(detail.len(), 1);
    assert!(detail[0].as_deref().unwrap_or("").contains(AUDIENCE));
}

fn without_the_keys_the_door_stays_shut_with_a_try_again_page(db: TestDb) {
    // Nothing listens on this port: the key set cannot be fetched.
    let dead = format!("http://127.0.0.1:{}/jwks.json", crate::helpers::free_port());
    let app = app_with_jwks(db, dead);
    make_study(&app, "shut", |_| {});
    let admin = signed_in(&app, Role::Admin);
    let r = set_door(
        &admin,
        "shut",
        &[("require_token", "on"), ("token_audience", AUDIENCE)],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let dir = tempfile::tempdir().unwrap();
    let key = Key::new(dir.path(), "k1");
    let t = key.sign(&claims("pid-1", now()));
    let (page, _) = app.browser().open(&link("shut", "pid-1", Some(&t)));
    assert_eq!(page.status, 503, "{}", page.body);
    assert!(page.body.contains("try again"), "{}", page.body);
    assert_eq!(page.header("retry-after"), Some("60"));
    assert!(participants_of(&app, "shut").is_empty());
}

fn prolific_only_turns_away_links_without_a_prolific_id(db: TestDb) {
    let app = spawn_app_with(db, |_| {});
    make_study(&app, "po", |_| {});
    let admin = signed_in(&app, Role::Admin);
    let r = set_door(&admin, "po", &[("prolific_only", "on")]);
    assert_eq!(r.status, 303, "{}", r.body);
    let (page, _) = app.browser().open("/s/po");
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(
        page.body.contains("only for Prolific participants"),
        "{}",
        page.body
    );
    // A form sent without the id (hand-made) is refused too.
    let b = app.browser();
    let (page, path) = b.open(&link("po", "pid-0", None));
    assert_eq!(page.status, 200, "{}", page.body);
    let form: Vec<(String, String)> = consent_form(&page, None, "yes")
        .into_iter()
        .filter(|(k, _)| k != "prolific_pid")
        .collect();
    let r = b.post(&path, &fields(&form));
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(participants_of(&app, "po").is_empty());
    let r = consent_through(&app, &link("po", "pid-1", None));
    assert_eq!(r.status, 303, "with an id: {}", r.body);
    assert_eq!(participants_of(&app, "po"), vec![Some("pid-1".to_owned())]);
}

fn prolific_ids_of_excluded_earlier_studies_are_turned_away(db: TestDb) {
    let app = spawn_app_with(db, |_| {});
    make_study(&app, "earlier", |_| {});
    make_study(&app, "later", |_| {});
    let r = consent_through(&app, &link("earlier", "pid-old", None));
    assert_eq!(r.status, 303, "{}", r.body);
    let admin = signed_in(&app, Role::Admin);
    let r = set_door(&admin, "later", &[("exclude", "earlier")]);
    assert_eq!(r.status, 303, "{}", r.body);
    let page = admin.get("/admin/studies/later/door");
    assert!(
        page.body.contains("value=\"earlier\" checked"),
        "{}",
        page.body
    );
    // Excluding itself or a study that does not exist: the form says so.
    let r = set_door(
        &admin,
        "later",
        &[("exclude", "later"), ("exclude", "nope")],
    );
    assert_eq!(r.status, 422);
    assert!(
        r.body.contains("cannot exclude its own") && r.body.contains("nope"),
        "{}",
        r.body
    );

    let (page, _) = app.browser().open(&link("later", "pid-old", None));
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("already taken part in a related study"));
    assert!(participants_of(&app, "later").is_empty(), "nothing stored");
    let r = consent_through(&app, &link("later", "pid-new", None));
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(
        participants_of(&app, "later"),
        vec![Some("pid-new".to_owned())]
    );
}

fn a_studys_own_limit_per_address_applies(db: TestDb) {
    // The server's limit is off in tests (every participant comes from 127.0.0.1).
    let app = spawn_app_with(db, |_| {});
    make_study(&app, "lim", |_| {});
    make_study(&app, "free", |_| {});
    let admin = signed_in(&app, Role::Admin);
    let r = set_door(&admin, "lim", &[("address_limit", "2")]);
    assert_eq!(r.status, 303, "{}", r.body);
    let r = set_door(&admin, "lim", &[("address_limit", "many")]);
    assert_eq!(r.status, 422, "{}", r.body);
    for i in 0..2 {
        let r = consent_through(&app, &format!("/s/lim?PROLIFIC_PID=a{i}"));
        assert_eq!(r.status, 303, "{}", r.body);
    }
    let r = consent_through(&app, "/s/lim?PROLIFIC_PID=a3");
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(participants_of(&app, "lim").len(), 2);
    // Another study keeps the server's (no) limit.
    for i in 0..3 {
        let r = consent_through(&app, &format!("/s/free?PROLIFIC_PID=b{i}"));
        assert_eq!(r.status, 303, "{}", r.body);
    }
}

/// The door page's state of `slug`, as the admin sees it.
fn door_page(admin: &Browser, slug: &str) -> String {
    let page = admin.get(&format!("/admin/studies/{slug}/door"));
    assert_eq!(page.status, 200, "{}", page.body);
    page.body
}

fn the_door_travels_with_the_definition_file_and_a_duplicate(db: TestDb) {
    let app = spawn_app_with(db, |_| {});
    make_study(&app, "first", |_| {});
    make_study(&app, "second", |_| {});
    let admin = signed_in(&app, Role::Admin);
    let r = set_door(
        &admin,
        "second",
        &[
            ("require_token", "on"),
            ("token_audience", AUDIENCE),
            ("prolific_only", "on"),
            ("address_limit", "5"),
            ("exclude", "first"),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    let text = ok(cli(&app.db.url, &["studies", "export", "second"]));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["door"]["require_token"], true, "{text}");
    assert_eq!(v["door"]["exclude_studies"], serde_json::json!(["first"]));
    // A study without a door writes none: such files read and write as before.
    let plain = ok(cli(&app.db.url, &["studies", "export", "first"]));
    assert!(!plain.contains("\"door\""), "{plain}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("second.study.json");
    std::fs::write(&file, &text).unwrap();
    let f = file.to_str().unwrap();
    ok(cli(
        &app.db.url,
        &["studies", "import", f, "--slug", "third"],
    ));
    ok(cli(
        &app.db.url,
        &["studies", "duplicate", "second", "fourth"],
    ));
    for slug in ["third", "fourth"] {
        let body = door_page(&admin, slug);
        assert!(
            body.contains("name=\"require_token\" checked"),
            "{slug}: {body}"
        );
        assert!(body.contains("name=\"prolific_only\" checked"), "{slug}");
        assert!(body.contains(&format!("value=\"{AUDIENCE}\"")), "{slug}");
        assert!(body.contains("value=\"5\""), "{slug}");
        assert!(body.contains("value=\"first\" checked"), "{slug}");
    }
    // Where an excluded study does not exist, it is left out and said so.
    let elsewhere = text.replace("\"first\"", "\"gone\"");
    std::fs::write(&file, &elsewhere).unwrap();
    let said = ok(cli(
        &app.db.url,
        &["studies", "import", f, "--slug", "fifth"],
    ));
    assert!(
        said.contains("excluded study gone: not on this installation"),
        "{said}"
    );
    assert!(!door_page(&admin, "fifth").contains("value=\"gone\""));
    // A door that does not validate is refused with the file.
    let bad = text.replace(&format!("\"{AUDIENCE}\""), "\"<bad>\"");
    std::fs::write(&file, &bad).unwrap();
    let out = cli(&app.db.url, &["studies", "import", f, "--slug", "sixth"]);
    assert!(!out.status.success());
    assert!(
        crate::helpers::stderr(&out).contains("door"),
        "{}",
        crate::helpers::stderr(&out)
    );
}

on_both_backends!(
    the_door_travels_with_the_definition_file_and_a_duplicate,
    a_valid_prolific_token_enters_and_expired_forged_or_missing_ones_are_refused,
    without_the_keys_the_door_stays_shut_with_a_try_again_page,
    prolific_only_turns_away_links_without_a_prolific_id,
    prolific_ids_of_excluded_earlier_studies_are_turned_away,
    a_studys_own_limit_per_address_applies,
);
