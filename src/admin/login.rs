//! Login and logout. Wrong password and unknown account get the same answer and cost the same
//! (a dummy Argon2 verification); failures are throttled per account and per client address.

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use chrono::Duration;

use super::{Researcher, SESSION_COOKIE, actor, field};
use crate::auth::{self, password};
use crate::store::{audit, sessions, users};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/login.html")]
struct LoginPage {
    csrf: String,
    next: String,
    email: String,
    error: Option<&'static str>,
}

/// Only our own admin pages are valid places to return to after login.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/admin") && !n.starts_with("//") && !n.contains("://") => {
            n.to_owned()
        }
        _ => "/admin".to_owned(),
    }
}

fn client_ip(req: &HttpRequest) -> String {
    // The peer address, not X-Forwarded-For: a client could forge that to dodge throttling.
    req.peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[derive(serde::Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

pub async fn form(
    req: HttpRequest,
    query: web::Query<NextQuery>,
) -> Result<HttpResponse, AppError> {
    let (csrf, new) = csrf::token(&req);
    let mut resp = render(LoginPage {
        csrf: csrf.clone(),
        next: safe_next(query.next.as_deref()),
        email: String::new(),
        error: None,
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
    let next = safe_next(field(&form, "next"));
    let csrf = csrf::field(&form).unwrap_or("").to_owned();
    if email.len() > 254 || secret.len() > 1024 {
        return Err(AppError::BadRequest(
            "That is too long for an email address or password.".into(),
        ));
    }
    let ip = client_ip(&req);
    let since = crate::store::now() - Duration::minutes(auth::THROTTLE_WINDOW_MINUTES);
    let (e2, ip2) = (email.clone(), ip.clone());
    let (by_email, by_ip) = state
        .db(move |conn| Ok(sessions::recent_failures(conn, &e2, &ip2, since)?))
        .await?;
    if by_email >= auth::MAX_FAILURES_PER_ACCOUNT || by_ip >= auth::MAX_FAILURES_PER_ADDRESS {
        return Err(AppError::TooManyRequests(format!(
            "Too many failed sign-in attempts. Please wait {} minutes and try again.",
            auth::THROTTLE_WINDOW_MINUTES
        )));
    }
    let e2 = email.clone();
    let account = state
        .db(move |conn| Ok(users::for_login(conn, &e2)?))
        .await?;
    // Verify on the blocking pool: Argon2 takes tens of milliseconds by design.
    let dummy_hash = state.dummy_hash();
    let verified = web::block(move || match account {
        Some((user, hash)) if !user.disabled => password::verify(&secret, &hash).then_some(user),
        Some(_) | None => {
            let _ = password::verify(&secret, &dummy_hash);
            None
        }
    })
    .await
    .map_err(AppError::internal)?;
    match verified {
        Some(user) => {
            let token = password::random_secret(32);
            let csrf_token = password::random_secret(32);
            let hash = auth::token_hash(&token);
            let agent = req
                .headers()
                .get("user-agent")
                .and_then(|v| v.to_str().ok())
                .map(|s| s.chars().take(300).collect::<String>());
            let (ip2, e2) = (ip.clone(), email.clone());
            state
                .db(move |conn| {
                    sessions::create(
                        conn,
                        user.id,
                        &hash,
                        &csrf_token,
                        Duration::hours(auth::SESSION_HOURS),
                        Some(&ip2),
                        agent.as_deref(),
                    )?;
                    sessions::record_attempt(conn, &e2, &ip2, true)?;
                    audit::record(
                        conn,
                        &audit::Actor::User {
                            id: user.id,
                            email: user.email.clone(),
                        },
                        "login",
                        None,
                        None,
                    )?;
                    Ok(())
                })
                .await?;
            let cookie = Cookie::build(SESSION_COOKIE, token)
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
        None => {
            let (e2, ip2) = (email.clone(), ip.clone());
            state
                .db(move |conn| {
                    sessions::record_attempt(conn, &e2, &ip2, false)?;
                    audit::record(
                        conn,
                        &audit::Actor::Anonymous,
                        "login.failed",
                        Some(&e2),
                        Some(&serde_json::json!({"ip": ip2})),
                    )?;
                    Ok(())
                })
                .await?;
            render_status(
                LoginPage {
                    csrf,
                    next,
                    email,
                    error: Some("Wrong email or password."),
                },
                StatusCode::UNAUTHORIZED,
            )
        }
    }
}

pub async fn logout(
    state: web::Data<AppState>,
    user: Researcher,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&user.session().csrf_token, &form)?;
    let id = user.session().id;
    let who = actor(user.session());
    state
        .db(move |conn| {
            sessions::end(conn, id)?;
            audit::record(conn, &who, "logout", None, None)?;
            Ok(())
        })
        .await?;
    let mut resp = see_other("/admin/login");
    let mut gone = Cookie::new(SESSION_COOKIE, "");
    gone.set_path("/");
    gone.make_removal();
    let _ = resp.add_cookie(&gone);
    Ok(resp)
}
