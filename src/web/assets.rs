//! Static assets, embedded in the binary so a single file is the whole product.

use actix_web::{HttpResponse, web};

use super::error::AppError;

const APP_CSS: &str = include_str!("../../assets/app.css");
const SITUATION_JS: &str = include_str!("../../assets/situation.js");

pub async fn serve(file: web::Path<String>) -> Result<HttpResponse, AppError> {
    let (body, content_type) = match file.as_str() {
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "situation.js" => (SITUATION_JS, "text/javascript; charset=utf-8"),
        _ => return Err(AppError::NotFound),
    };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(body))
}
