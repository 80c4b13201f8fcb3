//! Researcher and admin pages. Access is enforced by extractors: a handler that takes
//! `Researcher` needs any signed-in account, one that takes `Admin` needs the admin role.
//! Anonymous visitors are sent to the login page (or get 401 on downloads).

pub mod audit;
pub mod data;
pub mod doors;
pub mod evidence;
pub mod exports;
pub mod invites;
pub mod login;
pub mod monitor_chart;
pub mod prolific;
pub mod report;
pub mod run_plan;
pub mod runs;
pub mod studies;
pub mod study_reuse;
pub mod users;

use std::future::Future;
use std::pin::Pin;

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};

use crate::auth::token_hash;
use crate::store::sessions::{self, Session};
use crate::store::users::Role;
use crate::web::error::AppError;
use crate::web::state::AppState;

/// The session cookie over plain HTTP, and over HTTPS (where `__Host-` makes browsers refuse
/// one set by another host, such as a sibling subdomain).
pub const SESSION_COOKIE: &str = "eb_session";
pub const HOST_SESSION_COOKIE: &str = "__Host-eb_session";

/// The session cookie's name for this request.
pub fn session_cookie_name(req: &HttpRequest) -> &'static str {
    if crate::web::csrf::is_https(req) {
        HOST_SESSION_COOKIE
    } else {
        SESSION_COOKIE
    }
}

/// Any signed-in account (researcher or admin).
pub struct Researcher(pub Session);

/// A signed-in admin.
pub struct Admin(pub Session);

async fn session_of(req: HttpRequest) -> Result<Session, AppError> {
    let unauthorized = || AppError::Unauthorized {
        next: req.path().to_owned(),
        download: req.path().contains("/export/"),
    };
    let Some(token) = req
        .cookie(session_cookie_name(&req))
        .map(|c| c.value().to_owned())
    else {
        return Err(unauthorized());
    };
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| AppError::internal("no application state"))?
        .clone();
    let hash = token_hash(&token);
    state
        .db(move |conn| Ok(sessions::find(conn, &hash)?))
        .await?
        .ok_or_else(unauthorized)
}

impl FromRequest for Researcher {
    type Error = AppError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, AppError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { session_of(req).await.map(Researcher) })
    }
}

impl FromRequest for Admin {
    type Error = AppError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, AppError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let s = session_of(req).await?;
            if s.user.role == Role::Admin {
                Ok(Admin(s))
            } else {
                Err(AppError::Forbidden("This page is for admins only.".into()))
            }
        })
    }
}

impl Researcher {
    pub fn session(&self) -> &Session {
        &self.0
    }
}

impl Admin {
    pub fn session(&self) -> &Session {
        &self.0
    }
}

/// One field of a submitted form.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// What every admin page shows around its content.
pub struct Nav {
    pub email: String,
    pub is_admin: bool,
    pub csrf: String,
}

impl Nav {
    pub fn of(s: &Session) -> Nav {
        Nav {
            email: s.user.email.clone(),
            is_admin: s.user.role == Role::Admin,
            csrf: s.csrf_token.clone(),
        }
    }
}

/// The audit actor for a session.
pub fn actor(s: &Session) -> crate::store::audit::Actor {
    crate::store::audit::Actor::User {
        id: s.user.id,
        email: s.user.email.clone(),
    }
}
