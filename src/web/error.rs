//! The one error type of the web edge: every failure becomes a page with a plain message and the
//! right status; the cause chain goes to the log, never to the visitor.

use actix_web::http::StatusCode;
use actix_web::http::header::ContentType;
use actix_web::{HttpResponse, ResponseError};
use askama::Template;

use crate::store::{DbError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("page not found")]
    NotFound,
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Not signed in: pages redirect to the login page, downloads answer 401.
    #[error("not signed in")]
    Unauthorized { next: String, download: bool },
    #[error("too many requests: {0}")]
    TooManyRequests(String),
    #[error("request body too large")]
    PayloadTooLarge,
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Db(DbError::Pool(_) | DbError::Connect { .. })
            | StoreError::NotCommitted(_) => AppError::Unavailable(e.to_string()),
            StoreError::Query(diesel::result::Error::NotFound) => AppError::NotFound,
            // The server went away under an open connection: unavailable, not a bug.
            StoreError::Query(diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::ClosedConnection
                | diesel::result::DatabaseErrorKind::UnableToSendCommand,
                _,
            )) => AppError::Unavailable(e.to_string()),
            other => AppError::Internal(other.to_string()),
        }
    }
}

impl From<crate::app::Error> for AppError {
    fn from(e: crate::app::Error) -> Self {
        use crate::app::Error as E;
        match e {
            E::Store(e) => e.into(),
            E::NoStudy(_) | E::NoRun(_) => AppError::NotFound,
            E::Invalid(m) => AppError::BadRequest(m),
            other => AppError::Internal(other.to_string()),
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: &'a str,
}

impl ResponseError for AppError {
    fn status_code(&self) -> StatusCode {
        match self {
            AppError::NotFound => StatusCode::NOT_FOUND,
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::Unauthorized { download: true, .. } => StatusCode::UNAUTHORIZED,
            AppError::Unauthorized {
                download: false, ..
            } => StatusCode::SEE_OTHER,
            AppError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        if let AppError::Unauthorized {
            next,
            download: false,
        } = self
        {
            let mut target = String::from("/admin/login?next=");
            for b in next.bytes() {
                if b.is_ascii_alphanumeric() || b"/-_.".contains(&b) {
                    target.push(b as char);
                } else {
                    target.push_str(&format!("%{b:02X}"));
                }
            }
            return HttpResponse::SeeOther()
                .insert_header(("Location", target))
                .insert_header(("Cache-Control", "no-store"))
                .finish();
        }
        let (title, message) = match self {
            AppError::NotFound => ("Page not found", "There is no page at this address."),
            AppError::BadRequest(m) => ("Something is wrong with this request", m.as_str()),
            AppError::Forbidden(m) => ("Not allowed", m.as_str()),
            AppError::Unauthorized { .. } => {
                ("Please sign in", "This download needs a signed-in account.")
            }
            AppError::TooManyRequests(m) => ("Please wait", m.as_str()),
            AppError::PayloadTooLarge => (
                "Too much data",
                "This request is larger than any form of this site sends.",
            ),
            AppError::Unavailable(_) => (
                "Temporarily unavailable",
                "The server cannot reach its database right now. Your earlier answers are safe; \
                 please try again in a minute.",
            ),
            AppError::Internal(_) => (
                "Something went wrong",
                "An unexpected error occurred. It has been logged; please try again.",
            ),
        };
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let body = ErrorPage { title, message }
            .render()
            .unwrap_or_else(|_| format!("{status}"));
        HttpResponse::build(status)
            .content_type(ContentType::html())
            .insert_header(("Cache-Control", "no-store"))
            .body(body)
    }
}

pub async fn not_found() -> Result<HttpResponse, AppError> {
    Err(AppError::NotFound)
}
