//! The one error type of the web edge.
//!
//! Error policy:
//! - Every failure of a request becomes an [`AppError`]: a page with a plain message and the
//!   right status (the login redirect for anonymous visitors of admin pages). The visitor never
//!   sees a cause; a 5xx page shows the request id to quote instead.
//! - A 5xx keeps its cause ([`AppError::Internal`], [`AppError::Unavailable`] box the error of
//!   the layer below, `#[source]`) and its whole cause chain is logged **once**, at `error`, by
//!   the request middleware (`web::request_log`), in one line with the request id, method, route
//!   pattern, status and latency. Nothing else logs it: code below returns errors, it does not
//!   log them.
//! - A 4xx is the visitor's doing: logged at `warn` with its message (no cause to keep).
//! - Successes are logged at `debug` only, so the default (`info`) adds no line per request.

use actix_web::http::StatusCode;
use actix_web::http::header::ContentType;
use actix_web::{HttpResponse, ResponseError};
use askama::Template;

use crate::store::{DbError, StoreError};
use crate::web::request;

/// The cause of a server-side failure, kept for the log.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

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
    /// The database cannot be reached (503): the cause says why.
    #[error("database unavailable")]
    Unavailable(#[source] Cause),
    /// A bug or broken stored data (500): the cause says what.
    #[error("internal error")]
    Internal(#[source] Cause),
}

impl AppError {
    /// A 500 with this cause (an error of a layer below, or a message naming a broken invariant).
    pub fn internal(cause: impl Into<Cause>) -> Self {
        AppError::Internal(cause.into())
    }
}

/// An error's message followed by its sources', `: `-separated; a source whose message its
/// parent already ends with (`#[error("database: {0}")]` over `#[from]`) is not repeated.
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut last = self.0.to_string();
        f.write_str(&last)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            let msg = e.to_string();
            if !last.ends_with(&msg) {
                write!(f, ": {msg}")?;
            }
            last = msg;
            next = e.source();
        }
        Ok(())
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Db(DbError::Pool(_) | DbError::Connect { .. })
            | StoreError::NotCommitted(_) => AppError::Unavailable(Box::new(e)),
            StoreError::Query(diesel::result::Error::NotFound) => AppError::NotFound,
            // The server went away under an open connection: unavailable, not a bug.
            StoreError::Query(diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::ClosedConnection
                | diesel::result::DatabaseErrorKind::UnableToSendCommand,
                _,
            )) => AppError::Unavailable(Box::new(e)),
            other => AppError::Internal(Box::new(other)),
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
            other => AppError::Internal(Box::new(other)),
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: &'a str,
    /// On server errors: the id to quote, which finds the logged cause.
    request_id: Option<request::RequestId>,
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
        // Logged by the request middleware, which knows the request: once, with the cause.
        let request_id = status.is_server_error().then(request::current).flatten();
        let body = ErrorPage {
            title,
            message,
            request_id,
        }
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
