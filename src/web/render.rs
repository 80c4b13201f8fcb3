//! Rendering pages and redirects: every HTML response of the application goes through here.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use askama::Template;

use crate::web::error::AppError;

/// Renders a page with 200. Pages may hold answers: never cached.
pub fn render<T: Template>(page: T) -> Result<HttpResponse, AppError> {
    render_status(page, StatusCode::OK)
}

pub fn render_status<T: Template>(page: T, status: StatusCode) -> Result<HttpResponse, AppError> {
    let body = page.render().map_err(AppError::internal)?;
    Ok(HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(body))
}

/// 303 See Other: after a POST the browser GETs the next page (reload never resubmits).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header(("Location", location))
        .insert_header(("Cache-Control", "no-store"))
        .finish()
}
