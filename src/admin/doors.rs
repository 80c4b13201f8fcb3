//! A study's door settings (#15 point 2): who may start it. `GET` shows them, `POST` saves
//! them (admins; validated, audited by `app::doors::update`).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

use super::studies::load_study;
use super::{Admin, Nav, actor, field};
use crate::app;
use crate::domain::door::DoorSettings;
use crate::store::doors;
use crate::store::studies::{self, Study, StudySummary};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/door.html")]
struct DoorPage {
    nav: Nav,
    study: Study,
    door: DoorSettings,
    /// What was typed in the limit field (kept as typed when it does not parse).
    limit: String,
    /// The other studies, to choose exclusions from.
    others: Vec<StudySummary>,
    server_limit: u32,
    /// The server's window, in words.
    window: String,
    errors: Vec<String>,
}

impl DoorPage {
    fn excludes(&self, slug: &str) -> bool {
        self.door.exclude_studies.iter().any(|s| s == slug)
    }
}

async fn page(
    state: &AppState,
    nav: Nav,
    study: Study,
    door: DoorSettings,
    limit: String,
    errors: Vec<String>,
) -> Result<DoorPage, AppError> {
    let own = study.id;
    let others = state
        .db(move |conn| {
            Ok(studies::list_all(conn)?
                .into_iter()
                .filter(|s| s.id != own)
                .collect::<Vec<_>>())
        })
        .await?;
    Ok(DoorPage {
        nav,
        study,
        door,
        limit,
        others,
        server_limit: state.settings.new_participants_per_address,
        window: match state.settings.new_participants_window_seconds {
            s if s % 60 == 0 => format!("{} minutes", s / 60),
            s => format!("{s} seconds"),
        },
        errors,
    })
}

pub async fn form(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    let id = study.id;
    let door = state.db(move |conn| doors::load(conn, id)).await?;
    let limit = door
        .address_limit
        .map(|n| n.to_string())
        .unwrap_or_default();
    render(
        page(
            &state,
            Nav::of(admin.session()),
            study,
            door,
            limit,
            Vec::new(),
        )
        .await?,
    )
}

/// The settings a form sent, or what is wrong with its limit field.
fn parse(form: &[(String, String)]) -> (DoorSettings, String, Vec<String>) {
    let text = |name: &str| {
        field(form, name)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let limit = field(form, "address_limit").unwrap_or("").trim().to_owned();
    let mut errors = Vec::new();
    let address_limit = match limit.as_str() {
        "" => None,
        v => match v.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                errors.push("The limit per address must be a whole number, or empty.".into());
                None
            }
        },
    };
    let door = DoorSettings {
        require_token: field(form, "require_token") == Some("on"),
        token_audience: text("token_audience"),
        token_workspace_id: text("token_workspace_id"),
        prolific_only: field(form, "prolific_only") == Some("on"),
        address_limit,
        exclude_studies: form
            .iter()
            .filter(|(k, _)| k == "exclude")
            .map(|(_, v)| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect(),
    };
    (door, limit, errors)
}

pub async fn save(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let study = load_study(&state, &slug).await?;
    let (door, limit, mut errors) = parse(&form);
    if errors.is_empty() {
        let (id, s, d, who) = (
            study.id,
            study.slug.clone(),
            door.clone(),
            actor(admin.session()),
        );
        let saved = state
            .db(move |conn| Ok(app::doors::update(conn, id, &s, &d, &who)))
            .await?;
        match saved {
            Ok(()) => {
                // This process's survey pages use the new door at once (others within a second).
                state.forget_study(&study.slug);
                return Ok(see_other(&format!("/admin/studies/{}", study.slug)));
            }
            Err(app::Error::Invalid(m)) => errors.push(m),
            Err(e) => return Err(e.into()),
        }
    }
    render_status(
        page(&state, Nav::of(admin.session()), study, door, limit, errors).await?,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
}
