//! The invitation link's page (public: the invitee has no account yet). The invitee sets a
//! password under the policy of every account; a used, expired or unknown link gets a page
//! that says which and what to do. The form is CSRF-protected like the sign-in form (the
//! double-submit cookie), and bad links count against the address's sign-in limits.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::field;
use crate::app::accounts::{self, Acceptance, Accepted, InviteLookup, MAX_PASSWORD_BYTES};
use crate::auth;
use crate::store::users::Role;
use crate::web::error::AppError;
use crate::web::render::render_status;
use crate::web::state::AppState;
use crate::web::{csrf, request};

/// The form, or the account it created.
#[derive(Template)]
#[template(path = "admin/invite_accept.html")]
struct AcceptPage {
    csrf: String,
    token: String,
    email: String,
    role: Role,
    error: Option<String>,
    /// The account exists now: the page says so and links to sign-in instead of the form.
    created: bool,
}

/// A link that does not (or no longer) work.
#[derive(Template)]
#[template(path = "admin/invite_invalid.html")]
struct InvalidPage {
    heading: &'static str,
    message: String,
}

/// Tokens are 32 alphanumerics (`password::random_secret`); anything else is no link of ours
/// and is not looked up.
fn plausible(token: &str) -> bool {
    token.len() <= 64 && !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn invalid_page(link: &InviteLookup) -> Result<HttpResponse, AppError> {
    let (status, heading, message) = match link {
        InviteLookup::Used => (
            StatusCode::GONE,
            "This invitation has been used",
            "The account of this invitation has been created already; each link works once. \
             If it is yours, sign in with the password you chose."
                .to_owned(),
        ),
        InviteLookup::Expired => (
            StatusCode::GONE,
            "This invitation has expired",
            format!(
                "Invitation links work for {} hours. Please ask the admin who invited you for a \
                 new one.",
                accounts::INVITE_HOURS
            ),
        ),
        InviteLookup::Unknown | InviteLookup::Valid(_) => (
            StatusCode::NOT_FOUND,
            "This invitation link is not valid",
            "Check that you opened the whole link as it was sent to you. A newer invitation to \
             the same address replaces older links; if you have one, use that."
                .to_owned(),
        ),
    };
    render_status(InvalidPage { heading, message }, status)
}

fn with_csrf(mut resp: HttpResponse, req: &HttpRequest, token: &str, new: bool) -> HttpResponse {
    if new {
        let _ = resp.add_cookie(&csrf::cookie(req, token));
    }
    resp
}

/// `GET /invite/{token}`.
pub async fn form(
    state: web::Data<AppState>,
    req: HttpRequest,
    token: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let token = token.into_inner();
    let found = if plausible(&token) {
        let t = token.clone();
        state
            .db(move |conn| Ok(accounts::invitation(conn, &t)))
            .await??
    } else {
        InviteLookup::Unknown
    };
    let InviteLookup::Valid(invite) = found else {
        return invalid_page(&found);
    };
    let (csrf, new) = csrf::token(&req);
    let resp = render_status(
        AcceptPage {
            csrf: csrf.clone(),
            token,
            email: invite.email,
            role: invite.role,
            error: None,
            created: false,
        },
        StatusCode::OK,
    )?;
    Ok(with_csrf(resp, &req, &csrf, new))
}

/// `POST /invite/{token}`: creates the account.
pub async fn accept(
    state: web::Data<AppState>,
    req: HttpRequest,
    token: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_double_submit(&req, &form)?;
    let token = token.into_inner();
    let password = field(&form, "password").unwrap_or("").to_owned();
    let repeated = field(&form, "password2").unwrap_or("").to_owned();
    if password.len() > MAX_PASSWORD_BYTES || repeated.len() > MAX_PASSWORD_BYTES {
        return Err(AppError::BadRequest("That password is too long.".into()));
    }
    if !plausible(&token) {
        return invalid_page(&InviteLookup::Unknown);
    }
    let answer = Acceptance {
        token: token.clone(),
        password,
        repeated,
        client_ip: request::client_addr(&req, &state.settings.trusted_proxies),
    };
    let pool = state.pool.clone();
    // On the blocking pool: Argon2 takes tens of milliseconds by design.
    let outcome = web::block(move || accounts::accept_invite(&pool, answer))
        .await
        .map_err(AppError::internal)??;
    let csrf = csrf::field(&form).unwrap_or("").to_owned();
    match outcome {
        Accepted::Created(user) => render_status(
            AcceptPage {
                csrf,
                token: String::new(),
                email: user.email,
                role: user.role,
                error: None,
                created: true,
            },
            StatusCode::OK,
        ),
        Accepted::Refused(reason) => {
            // The form again, with the reason: the link is still valid.
            let t = token.clone();
            let found = state
                .db(move |conn| Ok(accounts::invitation(conn, &t)))
                .await??;
            let InviteLookup::Valid(invite) = found else {
                return invalid_page(&found);
            };
            render_status(
                AcceptPage {
                    csrf,
                    token,
                    email: invite.email,
                    role: invite.role,
                    error: Some(reason),
                    created: false,
                },
                StatusCode::UNPROCESSABLE_ENTITY,
            )
        }
        Accepted::Link(link) => invalid_page(&link),
        Accepted::AccountExists(email) => Err(AppError::BadRequest(format!(
            "An account for {email} exists already. Sign in with its password, or ask an admin."
        ))),
        Accepted::Throttled => Err(AppError::TooManyRequests(format!(
            "Too many invalid links or failed sign-ins from your address. Please wait {} \
             minutes and try again.",
            auth::THROTTLE_WINDOW_MINUTES
        ))),
    }
}
