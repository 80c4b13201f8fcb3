//! Reusing a study: duplicate it (admins), download its definition (researchers), import a
//! definition (admins). The same use cases as `emotionbench studies …`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

use super::studies::load_study;
use super::{Admin, Nav, Researcher, actor, field};
use crate::app;
use crate::domain::archive::StudyArchive;
use crate::store::StoreError;
use crate::store::studies::Study;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/duplicate_study.html")]
struct DuplicatePage {
    nav: Nav,
    study: Study,
    new_slug: String,
    new_title: String,
    errors: Vec<String>,
}

pub async fn duplicate_form(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    render(DuplicatePage {
        nav: Nav::of(admin.session()),
        new_slug: format!("{}-2", study.slug),
        new_title: format!("{} (copy)", study.title),
        study,
        errors: Vec::new(),
    })
}

/// Creates the copy as a draft and shows it; a taken or invalid slug shows the form again.
pub async fn duplicate(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let study = load_study(&state, &slug).await?;
    let new_slug = field(&form, "slug").unwrap_or("").trim().to_owned();
    let new_title = field(&form, "title").unwrap_or("").trim().to_owned();
    let who = actor(admin.session());
    let (from, s, t) = (study.slug.clone(), new_slug.clone(), new_title.clone());
    let made = state
        .db(move |conn| Ok(app::studies::duplicate(conn, &from, &s, &t, &who)))
        .await?;
    match made {
        Ok(made) => Ok(see_other(&format!("/admin/studies/{made}"))),
        Err(app::Error::Invalid(m) | app::Error::Store(StoreError::Conflict(m))) => render_status(
            DuplicatePage {
                nav: Nav::of(admin.session()),
                study,
                new_slug,
                new_title,
                errors: vec![m],
            },
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        Err(e) => Err(e.into()),
    }
}

/// The study's definition as a JSON download (no participant data in it).
pub async fn definition(
    state: web::Data<AppState>,
    _user: Researcher,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let slug = slug.into_inner();
    let s = slug.clone();
    let archive = state
        .db(move |conn| Ok(app::studies::export_definition(conn, &s)))
        .await??;
    let body = archive.to_json().map_err(AppError::internal)?;
    Ok(HttpResponse::Ok()
        .content_type("application/json; charset=utf-8")
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{slug}.study.json\""),
        ))
        .insert_header(("Cache-Control", "no-store"))
        .body(body))
}

#[derive(Template)]
#[template(path = "admin/import_study.html")]
struct ImportPage {
    nav: Nav,
    slug: String,
    set: String,
    errors: Vec<String>,
    done: Option<app::studies::ImportedStudy>,
}

pub async fn import_form(admin: Admin) -> Result<HttpResponse, AppError> {
    render(ImportPage {
        nav: Nav::of(admin.session()),
        slug: String::new(),
        set: String::new(),
        errors: Vec::new(),
        done: None,
    })
}

/// Imports an uploaded definition: the page says what was reused or created, or why nothing
/// was stored.
async fn import_text(
    state: &AppState,
    admin: &Admin,
    text: Result<String, String>,
    slug: String,
    set: String,
) -> Result<HttpResponse, AppError> {
    let who = actor(admin.session());
    let (s, n) = (slug.clone(), set.clone());
    let outcome = match text.and_then(|t| StudyArchive::parse(&t)) {
        Err(e) => Err(format!("The file cannot be imported: {e}.")),
        Ok(archive) => {
            let r = state
                .db(move |conn| {
                    Ok(app::studies::import_definition(
                        conn,
                        &archive,
                        Some(&s),
                        Some(&n),
                        &who,
                    ))
                })
                .await?;
            match r {
                Ok(done) => Ok(done),
                Err(app::Error::Invalid(m) | app::Error::Store(StoreError::Conflict(m))) => Err(m),
                Err(e) => return Err(e.into()),
            }
        }
    };
    let nav = Nav::of(admin.session());
    match outcome {
        Ok(done) => render(ImportPage {
            nav,
            slug,
            set,
            errors: Vec::new(),
            done: Some(done),
        }),
        Err(m) => render_status(
            ImportPage {
                nav,
                slug,
                set,
                errors: vec![m],
                done: None,
            },
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    }
}

/// Imports an uploaded definition file (multipart: `file`, `slug`, `set`), read by the data
/// pages' reader with its limit ([`super::data::UPLOAD_LIMIT`]).
pub async fn import(
    state: web::Data<AppState>,
    req: actix_web::HttpRequest,
    admin: Admin,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    use super::data::{Refused, receive};
    let upload = match receive(&req, payload).await {
        Ok(upload) => upload,
        Err(Refused::TooLarge) => return Err(AppError::PayloadTooLarge),
        Err(Refused::Unreadable(why)) => {
            return Err(AppError::BadRequest(format!(
                "The upload could not be read: {why}."
            )));
        }
    };
    csrf::check_session(&admin.session().csrf_token, &upload.fields)?;
    let text = |n: &str| field(&upload.fields, n).unwrap_or("").trim().to_owned();
    let (slug, set) = (text("slug"), text("set"));
    let file = match upload.file {
        None => Err("Choose the definition file to upload.".to_owned()),
        Some((_, bytes)) => {
            String::from_utf8(bytes).map_err(|_| "The file is not UTF-8 text.".to_owned())
        }
    };
    import_text(&state, &admin, file, slug, set).await
}
