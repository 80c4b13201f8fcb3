//! The accounts page (admins only): the accounts, invitations, disable/enable and role. An
//! invitation's link is shown once, to the admin who sends it; the invitee sets the password
//! on the link's page (`admin::invites`), so no admin ever chooses or sees someone's password.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::{Admin, Nav, actor, field};
use crate::app::accounts::{self, Invited, MAX_EMAIL_BYTES};
use crate::domain::account::AccountChange;
use crate::store::UserId;
use crate::store::invites::{self, Invite};
use crate::store::users::{self, Role, User};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    nav: Nav,
    me: UserId,
    users: Vec<User>,
    invites: Vec<Invite>,
    /// The invitation form as sent, when it was refused.
    email: String,
    role: Role,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "admin/invite.html")]
struct InvitePage {
    nav: Nav,
    invited: Invited,
    link: String,
}

async fn users_page(
    state: &AppState,
    admin: &Admin,
    email: String,
    role: Role,
    error: Option<String>,
) -> Result<UsersPage, AppError> {
    let (users, invites) = state
        .db(|conn| Ok((users::list(conn)?, invites::pending(conn)?)))
        .await?;
    Ok(UsersPage {
        nav: Nav::of(admin.session()),
        me: admin.session().user.id,
        users,
        invites,
        email,
        role,
        error,
    })
}

pub async fn list(state: web::Data<AppState>, admin: Admin) -> Result<HttpResponse, AppError> {
    render(users_page(&state, &admin, String::new(), Role::Researcher, None).await?)
}

fn role_field(form: &[(String, String)]) -> Result<Role, AppError> {
    field(form, "role")
        .and_then(Role::parse)
        .ok_or_else(|| AppError::BadRequest("Choose the role: admin or researcher.".into()))
}

/// The address links are built on: the configured public URL, else the one this request came
/// to (the admin's own browser sent it, and the admin copies the link from this very page).
fn link_base(state: &AppState, req: &HttpRequest) -> String {
    match &state.settings.public_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => {
            let info = req.connection_info();
            format!("{}://{}", info.scheme(), info.host())
        }
    }
}

/// `POST /admin/users/invite`: creates the invitation and shows its link, once.
pub async fn invite(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let email = field(&form, "email").unwrap_or("").trim().to_lowercase();
    let role = role_field(&form)?;
    if email.len() > MAX_EMAIL_BYTES {
        return Err(AppError::BadRequest(
            "That email address is too long.".into(),
        ));
    }
    let who = actor(admin.session());
    let e2 = email.clone();
    let outcome = state
        .db(move |conn| Ok(accounts::invite(conn, &e2, role, &who)))
        .await?;
    match outcome {
        Ok(invited) => {
            let link = format!("{}/invite/{}", link_base(&state, &req), invited.token);
            render(InvitePage {
                nav: Nav::of(admin.session()),
                invited,
                link,
            })
        }
        // A refused address goes back to the form with the reason next to it.
        Err(crate::app::Error::Invalid(reason)) => render_status(
            users_page(&state, &admin, email, role, Some(reason)).await?,
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        Err(other) => Err(other.into()),
    }
}

fn user_id(path: &str) -> Result<UserId, AppError> {
    path.parse().map_err(|_| AppError::NotFound)
}

async fn apply(
    state: &AppState,
    admin: &Admin,
    id: UserId,
    change: AccountChange,
) -> Result<HttpResponse, AppError> {
    let who = actor(admin.session());
    state
        .db(move |conn| Ok(accounts::change(conn, id, change, &who)))
        .await??;
    Ok(see_other("/admin/users"))
}

/// `POST /admin/users/{user}/status`: `disabled=yes` disables (and ends its sessions),
/// `disabled=no` enables.
pub async fn set_status(
    state: web::Data<AppState>,
    admin: Admin,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let id = user_id(&path)?;
    let change = match field(&form, "disabled") {
        Some("yes") => AccountChange::Disable,
        Some("no") => AccountChange::Enable,
        _ => {
            return Err(AppError::BadRequest(
                "Say whether to disable or enable.".into(),
            ));
        }
    };
    apply(&state, &admin, id, change).await
}

/// `POST /admin/users/{user}/role`.
pub async fn set_role(
    state: web::Data<AppState>,
    admin: Admin,
    path: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let id = user_id(&path)?;
    let role = role_field(&form)?;
    apply(&state, &admin, id, AccountChange::SetRole(role)).await
}
