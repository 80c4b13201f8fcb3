//! The one CSRF module. Every form carries its token in the field [`FIELD`]; there is one check
//! per kind of token:
//!
//! - [`check_double_submit`]: visitors without a session (the survey, the login form) get a
//!   cookie ([`cookie_name`]) that every form echoes. The token is signed with the
//!   installation's key (`AppState::form_key`, the same in every replica): a value planted in
//!   the cookie by someone else (a sibling subdomain, a network attacker on plain HTTP) does
//!   not pass unless it is one this server issued. Over HTTPS the cookie is named with the
//!   `__Host-` prefix, which browsers accept only from this very host, Secure, with Path=/;
//!   so a planted cookie cannot even take its place there.
//! - [`check_session`]: signed-in researchers echo the token stored with their session.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::{HttpRequest, web};

use crate::auth::constant_time_eq;
use crate::auth::password::random_secret;
use crate::web::error::AppError;
use crate::web::request;
use crate::web::state::AppState;

/// The cookie of the double-submit token over plain HTTP.
pub const COOKIE: &str = "eb_csrf";
/// Its name over HTTPS.
pub const HOST_COOKIE: &str = "__Host-eb_csrf";
/// The form field that carries the token, in every form of the application.
pub const FIELD: &str = "csrf";

/// A token is `NONCE-MAC`: this many random alphanumerics, a dash, [`MAC_HEX`] hex digits.
const NONCE_LEN: usize = 24;
const MAC_HEX: usize = 32;

/// Whether the request came over HTTPS (cookies are then marked `Secure`): the connection's
/// scheme, or a trusted proxy's `X-Forwarded-Proto` ([`request::scheme`]); without the
/// application's state (never in the server) no proxy is trusted.
pub fn is_https(req: &HttpRequest) -> bool {
    let trusted = req
        .app_data::<web::Data<AppState>>()
        .map(|s| s.settings.trusted_proxies.as_slice())
        .unwrap_or_default();
    request::scheme(req, trusted) == "https"
}

/// The name of the double-submit cookie for this request: `__Host-` over HTTPS.
pub fn cookie_name(req: &HttpRequest) -> &'static str {
    if is_https(req) { HOST_COOKIE } else { COOKIE }
}

/// The double-submit cookie holding `token`.
pub fn cookie(req: &HttpRequest, token: &str) -> Cookie<'static> {
    Cookie::build(cookie_name(req), token.to_owned())
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(is_https(req))
        .finish()
}

fn key(req: &HttpRequest) -> Option<&[u8]> {
    req.app_data::<web::Data<AppState>>().map(|s| s.form_key())
}

/// The MAC of a CSRF token's nonce.
fn mac(key: &[u8], nonce: &str) -> String {
    crate::auth::keyed_mac(key, b"emotionbench csrf v1", nonce)
}

fn sign(key: &[u8], nonce: &str) -> String {
    format!("{nonce}-{}", mac(key, nonce))
}

/// Whether `token` is one this installation signed.
fn is_signed(key: &[u8], token: &str) -> bool {
    match token.split_once('-') {
        Some((nonce, tag))
            if nonce.len() == NONCE_LEN && nonce.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            tag.len() == MAC_HEX && constant_time_eq(tag.as_bytes(), mac(key, nonce).as_bytes())
        }
        _ => false,
    }
}

/// The request's double-submit token, or a new one to set on the response (`true`).
pub fn token(req: &HttpRequest) -> (String, bool) {
    let Some(key) = key(req) else {
        // Without the application's key nothing can be signed, and nothing unsigned passes
        // the check: the form fails closed.
        return (random_secret(NONCE_LEN), true);
    };
    match req.cookie(cookie_name(req)) {
        Some(c) if is_signed(key, c.value()) => (c.value().to_owned(), false),
        _ => (sign(key, &random_secret(NONCE_LEN)), true),
    }
}

/// The token a submitted form carries.
pub fn field(fields: &[(String, String)]) -> Option<&str> {
    fields
        .iter()
        .find(|(k, _)| k == FIELD)
        .map(|(_, v)| v.as_str())
}

/// Rejects a POST whose form token does not match its double-submit cookie, or whose cookie
/// this installation did not sign (403).
pub fn check_double_submit(req: &HttpRequest, fields: &[(String, String)]) -> Result<(), AppError> {
    let cookie = req.cookie(cookie_name(req));
    match (key(req), cookie, field(fields)) {
        (Some(key), Some(c), Some(f))
            if is_signed(key, c.value()) && constant_time_eq(c.value().as_bytes(), f.as_bytes()) =>
        {
            Ok(())
        }
        _ => Err(AppError::Forbidden(
            "This form has expired or did not come from this site. Please go back, reload the page and try again."
                .into(),
        )),
    }
}

/// Rejects a POST whose form token is not its session's (403).
pub fn check_session(session_token: &str, fields: &[(String, String)]) -> Result<(), AppError> {
    match field(fields) {
        Some(g) if constant_time_eq(g.as_bytes(), session_token.as_bytes()) => Ok(()),
        _ => Err(AppError::Forbidden(
            "This form has expired or did not come from this site. Please reload the page and try again.".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tokens_signed_with_the_key_pass() {
        let key = b"a key of this installation";
        let t = sign(key, &random_secret(NONCE_LEN));
        assert!(is_signed(key, &t));
        assert!(!is_signed(b"another installation", &t));
        assert!(!is_signed(key, &"B".repeat(32)));
        assert!(!is_signed(
            key,
            &format!("{}-{}", "B".repeat(NONCE_LEN), "0".repeat(MAC_HEX))
        ));
        let (nonce, _) = t.split_once('-').unwrap_or_default();
        let mut other = nonce.to_owned();
        other.replace_range(0..1, if other.starts_with('a') { "b" } else { "a" });
        assert!(!is_signed(key, &format!("{other}-{}", mac(key, nonce))));
        assert!(!is_signed(key, ""));
    }
}
