//! Model runs in the admin UI (admins): the providers (read-only, from the config file), the
//! runs list, a form to create a run, a run page with live progress, pause/resume/cancel.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

use super::run_plan::{PlanQuery, Planning};
use super::{Admin, Nav, actor, field};
use crate::app::{
    self,
    runs::{RunAction, RunRequest},
};
use crate::config::ProviderConfig;
use crate::domain::prompt::Template as PromptTemplate;
use crate::domain::protocol::Protocol;
use crate::domain::run::{RunParams, Selection};
use crate::domain::situation::Valence;
use crate::store::runs::{self, Progress, Run, TrialRecord};
use crate::store::studies::{self, StudySummary};
use crate::store::{RunId, StoreError};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

pub struct ProviderView {
    pub config: ProviderConfig,
    /// Whether the key's environment variable is set in this process (never its value).
    pub key_present: Option<bool>,
}

#[derive(Template)]
#[template(path = "admin/providers.html")]
struct ProvidersPage {
    nav: Nav,
    providers: Vec<ProviderView>,
    worker_slots: usize,
}

pub async fn providers(state: web::Data<AppState>, admin: Admin) -> Result<HttpResponse, AppError> {
    let providers = state
        .settings
        .providers
        .iter()
        .map(|p| ProviderView {
            key_present: p
                .api_key_env
                .as_ref()
                .map(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty())),
            config: p.clone(),
        })
        .collect();
    render(ProvidersPage {
        nav: Nav::of(admin.session()),
        providers,
        worker_slots: state.settings.serve_worker_slots(),
    })
}

pub struct RunRow {
    pub run: Run,
    pub progress: Progress,
    /// The run's language tag, or "study default" (#20).
    pub language: String,
}

/// How a run's language reads on the pages: its tag, or "study default" when it named none.
/// A stored language that is not a tag is an error, as everywhere.
fn language_label(run: &Run) -> Result<String, StoreError> {
    Ok(run
        .language()?
        .map_or_else(|| "study default".to_owned(), String::from))
}

#[derive(Template)]
#[template(path = "admin/runs.html")]
struct RunsPage {
    nav: Nav,
    runs: Vec<RunRow>,
}

pub async fn list(state: web::Data<AppState>, admin: Admin) -> Result<HttpResponse, AppError> {
    let runs = state
        .db(|conn| {
            let mut out = Vec::new();
            for run in runs::list(conn)? {
                let progress = runs::progress(conn, run.id)?;
                let language = language_label(&run)?;
                out.push(RunRow {
                    run,
                    progress,
                    language,
                });
            }
            Ok(out)
        })
        .await?;
    render(RunsPage {
        nav: Nav::of(admin.session()),
        runs,
    })
}

pub struct RunForm {
    pub study: String,
    pub provider: String,
    pub model: String,
    pub template: String,
    pub repeats: String,
    pub default_repeats: String,
    pub situations: String,
    pub seed: String,
    pub temperature: String,
    /// `paper`, `within-session` or `persona` (#17).
    pub protocol: String,
    /// Valences to take, comma-separated (#18); empty for all.
    pub valence: String,
    /// One of the study's language tags (#20); empty for its default.
    pub language: String,
}

impl RunForm {
    /// What the notes a person confirmed were about: a changed provider, model or temperature
    /// has other notes, so its confirmation does not carry over.
    pub fn notes_key(&self) -> String {
        format!("{}|{}|{}", self.provider, self.model, self.temperature)
    }
}

#[derive(Template)]
#[template(path = "admin/run_form.html")]
struct FormPage {
    nav: Nav,
    form: RunForm,
    studies: Vec<StudySummary>,
    providers: Vec<String>,
    templates: Vec<&'static str>,
    /// (name, what it does) of every protocol.
    protocols: Vec<(&'static str, &'static str)>,
    errors: Vec<String>,
    /// Where the model's requests will differ from what was asked, to confirm before the run
    /// exists (the server's workers start on it at once).
    notes: Vec<String>,
    planning: Planning,
}

async fn form_page(
    state: &AppState,
    admin: &Admin,
    form: RunForm,
    errors: Vec<String>,
    notes: Vec<String>,
    status: StatusCode,
    planning: Planning,
) -> Result<HttpResponse, AppError> {
    let studies = state.db(|conn| Ok(studies::list_all(conn)?)).await?;
    render_status(
        FormPage {
            nav: Nav::of(admin.session()),
            form,
            studies,
            providers: state
                .settings
                .providers
                .iter()
                .map(|p| p.name.clone())
                .collect(),
            templates: PromptTemplate::BUILTIN_NAMES.to_vec(),
            protocols: Protocol::ALL
                .iter()
                .map(|p| (p.as_str(), p.describe()))
                .collect(),
            errors,
            notes,
            planning,
        },
        status,
    )
}

/// The empty form; with a planning query (`run_plan`), the answer and the repeats it needs.
pub async fn new_form(
    state: web::Data<AppState>,
    admin: Admin,
    query: web::Query<PlanQuery>,
) -> Result<HttpResponse, AppError> {
    let planning = Planning::of(&query);
    let repeats = planning.repeats.map(|n| n.to_string());
    let form = RunForm {
        study: String::new(),
        provider: state
            .settings
            .providers
            .first()
            .map(|p| p.name.clone())
            .unwrap_or_default(),
        model: String::new(),
        template: "eb-code".into(),
        repeats: repeats.clone().unwrap_or_else(|| "10".into()),
        default_repeats: repeats.unwrap_or_else(|| "50".into()),
        situations: "all".into(),
        seed: String::new(),
        temperature: "0".into(),
        protocol: Protocol::Paper.as_str().into(),
        valence: String::new(),
        language: String::new(),
    };
    form_page(
        &state,
        &admin,
        form,
        Vec::new(),
        Vec::new(),
        StatusCode::OK,
        planning,
    )
    .await
}

fn read_form(fields: &[(String, String)]) -> RunForm {
    let g = |n: &str| field(fields, n).unwrap_or("").trim().to_owned();
    RunForm {
        study: g("study"),
        provider: g("provider"),
        model: g("model"),
        template: g("template"),
        repeats: g("repeats"),
        default_repeats: g("default_repeats"),
        situations: g("situations"),
        seed: g("seed"),
        temperature: g("temperature"),
        protocol: g("protocol"),
        valence: g("valence"),
        language: g("language"),
    }
}

/// The run the form asks for, or what is wrong with the form.
fn request_of(form: &RunForm) -> Result<RunRequest, Vec<String>> {
    let mut errors = Vec::new();
    if !PromptTemplate::BUILTIN_NAMES.contains(&form.template.as_str()) {
        // Custom template files are for the command line: a form must not name server files.
        errors.push("Choose one of the built-in templates.".to_owned());
    }
    let repeats = form
        .repeats
        .parse::<u32>()
        .map_err(|_| errors.push("Repeats must be a whole number.".into()))
        .ok();
    let default_repeats = form
        .default_repeats
        .parse::<u32>()
        .map_err(|_| errors.push("Default-measure repeats must be a whole number.".into()))
        .ok();
    let selection = form
        .situations
        .parse::<Selection>()
        .map_err(|e| errors.push(format!("Situations: {e}")))
        .ok();
    let seed = match form.seed.as_str() {
        "" => None,
        s => s
            .parse::<u64>()
            .map_err(|_| errors.push("The seed must be a whole number.".into()))
            .ok(),
    };
    // A form from before protocols existed has none: the paper's.
    let protocol = match form.protocol.as_str() {
        "" => Some(Protocol::Paper),
        p => Protocol::parse(p).or_else(|| {
            errors.push("Choose one of the protocols.".into());
            None
        }),
    };
    let valences = match form.valence.as_str() {
        "" => Vec::new(),
        list => Valence::parse_list(list).unwrap_or_else(|e| {
            errors.push(format!("Valence: {e}."));
            Vec::new()
        }),
    };
    let temperature = form
        .temperature
        .parse::<f64>()
        .ok()
        .filter(|t| (0.0..=2.0).contains(t))
        .or_else(|| {
            errors.push("The temperature must be a number from 0 to 2.".into());
            None
        });
    let (
        Some(repeats),
        Some(default_repeats),
        Some(selection),
        Some(temperature),
        Some(protocol),
        true,
    ) = (
        repeats,
        default_repeats,
        selection,
        temperature,
        protocol,
        errors.is_empty(),
    )
    else {
        return Err(errors);
    };
    if repeats > 1000 || default_repeats > 1000 {
        return Err(vec!["At most 1,000 repeats.".into()]);
    }
    Ok(RunRequest {
        study: form.study.clone(),
        provider: form.provider.clone(),
        model: form.model.clone(),
        template: form.template.clone(),
        repeats,
        default_repeats,
        selection,
        seed,
        // Checked against the study's languages by the use case, as `run --language` is.
        language: (!form.language.is_empty()).then(|| form.language.clone()),
        params: RunParams {
            temperature,
            protocol,
            valences,
            ..RunParams::default()
        },
        // The study's own instrument (the command line can pick another with --instrument).
        instrument: None,
    })
}

/// Creates the run once its notes (what the model's requests leave out or change) are
/// confirmed: with notes, the form comes back showing them and a box to tick.
pub async fn create(
    state: web::Data<AppState>,
    admin: Admin,
    fields: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &fields)?;
    let form = read_form(&fields);
    let refused = StatusCode::UNPROCESSABLE_ENTITY;
    let req = match request_of(&form) {
        Ok(req) => req,
        Err(errors) => {
            return form_page(
                &state,
                &admin,
                form,
                errors,
                Vec::new(),
                refused,
                Planning::empty(),
            )
            .await;
        }
    };
    let notes = match app::runs::notes(&state.settings, &req) {
        Ok(notes) => notes,
        Err(app::Error::Invalid(m)) => {
            return form_page(
                &state,
                &admin,
                form,
                vec![m],
                Vec::new(),
                refused,
                Planning::empty(),
            )
            .await;
        }
        Err(e) => return Err(e.into()),
    };
    let confirmed = field(&fields, "accept_notes") == Some(form.notes_key().as_str());
    if !notes.is_empty() && !confirmed {
        return form_page(
            &state,
            &admin,
            form,
            Vec::new(),
            notes,
            StatusCode::OK,
            Planning::empty(),
        )
        .await;
    }
    let settings = state.settings.clone();
    let who = actor(admin.session());
    let created = state
        .db(move |conn| Ok(app::runs::create(conn, &settings, &req, &who)))
        .await?;
    match created {
        Ok(c) => Ok(see_other(&format!("/admin/runs/{}", c.run.0))),
        Err(app::Error::Invalid(message)) => {
            form_page(
                &state,
                &admin,
                form,
                vec![message],
                Vec::new(),
                refused,
                Planning::empty(),
            )
            .await
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Template)]
#[template(path = "admin/run.html")]
struct RunPage {
    nav: Nav,
    run: Run,
    progress: Progress,
    parse_failure_percent: String,
    cost: String,
    latest: Vec<TrialRecord>,
    /// What the run's requests leave out or change, recorded when it was made.
    notes: Vec<String>,
    /// The language it asks in (see [`language_label`]).
    language: String,
}

pub async fn show(
    state: web::Data<AppState>,
    admin: Admin,
    id: web::Path<i64>,
) -> Result<HttpResponse, AppError> {
    let id = RunId(id.into_inner());
    let (run, progress, latest) = state
        .db(move |conn| {
            let run =
                runs::get(conn, id)?.ok_or(StoreError::Query(diesel::result::Error::NotFound))?;
            Ok((run, runs::progress(conn, id)?, runs::latest(conn, id, 8)?))
        })
        .await?;
    let notes = app::runs::recorded_notes(&run)?;
    let language = language_label(&run)?;
    let attempts = progress.finished() + progress.parse_failures;
    let parse_failure_percent = if attempts > 0 {
        format!(
            "{:.1}",
            100.0 * progress.parse_failures as f64 / attempts as f64
        )
    } else {
        "0.0".into()
    };
    render(RunPage {
        nav: Nav::of(admin.session()),
        cost: format!("{:.4}", progress.cost_micros as f64 / 1e6),
        run,
        progress,
        parse_failure_percent,
        latest,
        notes,
        language,
    })
}

pub async fn action(
    state: web::Data<AppState>,
    admin: Admin,
    path: web::Path<(i64, String)>,
    fields: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &fields)?;
    let (id, what) = path.into_inner();
    let run = RunId(id);
    let action = RunAction::parse(&what).ok_or(AppError::NotFound)?;
    let who = actor(admin.session());
    state
        .db(move |conn| Ok(app::runs::change(conn, run, action, &who)))
        .await??;
    Ok(see_other(&format!("/admin/runs/{id}")))
}
