//! The audit log (admins only).

use actix_web::{HttpResponse, web};
use askama::Template;

use super::{Admin, Nav};
use crate::store::audit::{self, Entry};
use crate::web::error::AppError;
use crate::web::render::render;
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/audit.html")]
struct AuditPage {
    nav: Nav,
    entries: Vec<Entry>,
}

pub async fn list(state: web::Data<AppState>, admin: Admin) -> Result<HttpResponse, AppError> {
    let entries = state.db(|conn| Ok(audit::recent(conn, 500)?)).await?;
    render(AuditPage {
        nav: Nav::of(admin.session()),
        entries,
    })
}
