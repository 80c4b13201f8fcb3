//! The one CSRF module. Every form carries its token in the field [`FIELD`]; there is one check
//! per kind of token:
//!
//! - [`check_double_submit`]: visitors without a session (the survey, the login form) get a
//!   random cookie ([`COOKIE`]) that every form echoes;
//! - [`check_session`]: signed-in researchers echo the token stored with their session.

use actix_web::HttpRequest;
use actix_web::cookie::{Cookie, SameSite};

use crate::auth::password::random_secret;
use crate::web::error::AppError;

/// The cookie of the double-submit token.
pub const COOKIE: &str = "eb_csrf";
/// The form field that carries the token, in every form of the application.
pub const FIELD: &str = "csrf";

/// Shorter cookie values are not ours: a new token is issued instead.
const MIN_LEN: usize = 16;

/// Whether the request came over HTTPS (cookies are then marked `Secure`).
pub fn is_https(req: &HttpRequest) -> bool {
    req.connection_info().scheme() == "https"
}

/// The double-submit cookie holding `token`.
pub fn cookie(req: &HttpRequest, token: &str) -> Cookie<'static> {
    Cookie::build(COOKIE, token.to_owned())
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(is_https(req))
        .finish()
}

/// The request's double-submit token, or a new one to set on the response (`true`).
pub fn token(req: &HttpRequest) -> (String, bool) {
    match req.cookie(COOKIE) {
        Some(c) if c.value().len() >= MIN_LEN => (c.value().to_owned(), false),
        _ => (random_secret(32), true),
    }
}

/// The token a submitted form carries.
pub fn field(fields: &[(String, String)]) -> Option<&str> {
    fields
        .iter()
        .find(|(k, _)| k == FIELD)
        .map(|(_, v)| v.as_str())
}

/// Rejects a POST whose form token does not match its double-submit cookie (403).
pub fn check_double_submit(req: &HttpRequest, fields: &[(String, String)]) -> Result<(), AppError> {
    let cookie = req.cookie(COOKIE);
    match (cookie, field(fields)) {
        (Some(c), Some(f))
            if c.value().len() >= MIN_LEN && constant_time_eq(c.value().as_bytes(), f.as_bytes()) =>
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

/// Compares in time independent of where the inputs differ (tokens are secrets).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
