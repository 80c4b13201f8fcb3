//! Login and logout. Wrong password and unknown account get the same answer and cost the same
//! (a dummy Argon2 verification); failures are throttled per account and client address, per
//! address, and slowed down per account (`app::accounts::sign_in`, `auth`).

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::{Researcher, actor, field, session_cookie_name};
use crate::app::accounts::{self, MAX_EMAIL_BYTES, MAX_PASSWORD_BYTES, SignIn, SignedIn};
use crate::auth;
use crate::domain::account::return_path;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;
use crate::web::{csrf, request};

#[derive(Template)]
#[template(path = "admin/login.html")]
struct LoginPage {
    csrf: String,
    next: String,
    email: String,
    error: Option<&'static str>,
    /// No enabled admin exists: say how the operator creates the first one.
    first_admin_hint: Option<&'static str>,
}

/// The hint for the sign-in page, when the installation has no enabled admin yet.
async fn first_admin_hint(state: &AppState) -> Result<Option<&'static str>, AppError> {
    let none = state
        .db(|conn| Ok(accounts::needs_first_admin(conn)))
        .await??;
    Ok(none.then_some(accounts::FIRST_ADMIN_HINT))
}

#[derive(serde::Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

pub async fn form(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<NextQuery>,
) -> Result<HttpResponse, AppError> {
    let (csrf, new) = csrf::token(&req);
    let mut resp = render(LoginPage {
        csrf: csrf.clone(),
        next: return_path(query.next.as_deref()).to_owned(),
        email: String::new(),
        error: None,
        first_admin_hint: first_admin_hint(&state).await?,
    })?;
    if new {
        let _ = resp.add_cookie(&csrf::cookie(&req, &csrf));
    }
    Ok(resp)
}

pub async fn submit(
    state: web::Data<AppState>,
    req: HttpRequest,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_double_submit(&req, &form)?;
    let email = field(&form, "email").unwrap_or("").trim().to_lowercase();
    let secret = field(&form, "password").unwrap_or("").to_owned();
    let next = return_path(field(&form, "next")).to_owned();
    let csrf = csrf::field(&form).unwrap_or("").to_owned();
    if email.len() > MAX_EMAIL_BYTES || secret.len() > MAX_PASSWORD_BYTES {
        return Err(AppError::BadRequest(
            "That is too long for an email address or password.".into(),
        ));
    }
    let ip = request::client_addr(&req, &state.settings.trusted_proxies);
    // The growing delay is waited here, off the database and off the blocking pool.
    let (e2, ip2) = (email.clone(), ip.clone());
    let delay = state
        .db(move |conn| Ok(accounts::sign_in_delay(conn, &e2, &ip2)))
        .await??;
    if !delay.is_zero() {
        actix_web::rt::time::sleep(delay).await;
    }
    let attempt = SignIn {
        email: email.clone(),
        password: secret,
        client_ip: ip,
        user_agent: req
            .headers()
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(300).collect::<String>()),
    };
    let (pool, dummy_hash) = (state.pool.clone(), state.dummy_hash());
    // On the blocking pool: Argon2 takes tens of milliseconds by design.
    let outcome = web::block(move || accounts::sign_in(&pool, attempt, &dummy_hash))
        .await
        .map_err(AppError::internal)??;
    match outcome {
        SignedIn::Session { token, .. } => {
            let cookie = Cookie::build(session_cookie_name(&req), token)
                .path("/")
                .http_only(true)
                .same_site(SameSite::Lax)
                .secure(csrf::is_https(&req))
                .max_age(CookieDuration::hours(auth::SESSION_HOURS))
                .finish();
            let mut resp = see_other(&next);
            let _ = resp.add_cookie(&cookie);
            Ok(resp)
        }
        SignedIn::Throttled => Err(AppError::TooManyRequests(format!(
            "Too many failed sign-in attempts. Please wait {} minutes and try again.",
            auth::THROTTLE_WINDOW_MINUTES
        ))),
        SignedIn::Refused => render_status(
            LoginPage {
                csrf,
                next,
                email,
                error: Some("Wrong email or password."),
                first_admin_hint: first_admin_hint(&state).await?,
            },
            StatusCode::UNAUTHORIZED,
        ),
    }
}

pub async fn logout(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: Researcher,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&user.session().csrf_token, &form)?;
    let id = user.session().id;
    let who = actor(user.session());
    state
        .db(move |conn| Ok(accounts::sign_out(conn, id, &who)))
        .await??;
    let mut resp = see_other("/admin/login");
    let mut gone = Cookie::new(session_cookie_name(&req), "");
    gone.set_path("/");
    gone.set_secure(csrf::is_https(&req));
    gone.make_removal();
    let _ = resp.add_cookie(&gone);
    Ok(resp)
}
