//! The landing page and the health check.

use actix_web::{HttpResponse, web};
use askama::Template;
use askama_web::WebTemplate;
use diesel::connection::SimpleConnection;

use super::error::AppError;
use super::state::AppState;
use crate::store::{self, studies::StudySummary};

#[derive(Template, WebTemplate)]
#[template(path = "home.html")]
pub struct HomePage {
    studies: Vec<StudySummary>,
}

pub async fn index(state: web::Data<AppState>) -> Result<HomePage, AppError> {
    let studies = state
        .db(|conn| Ok(store::studies::list_open(conn)?))
        .await?;
    Ok(HomePage { studies })
}

/// 200 when the database answers, 503 otherwise (for load balancers and `demo`'s own check).
pub async fn health(state: web::Data<AppState>) -> Result<HttpResponse, AppError> {
    let answered = state.db(|conn| Ok(conn.batch_execute("SELECT 1"))).await;
    match answered {
        Ok(Ok(())) => Ok(HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .insert_header(("Cache-Control", "no-store"))
            .body("ok\n")),
        Ok(Err(e)) => Err(AppError::Unavailable(Box::new(e))),
        Err(e) => Err(AppError::Unavailable(Box::new(e))),
    }
}
