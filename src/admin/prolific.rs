//! A study's Prolific pages (#15): the draft (settings and the button that creates or updates
//! it), the submissions with approve, reject and return forms (admins; CSRF like every admin
//! form), and the reconciliation (each participant's status there next to ours, with the
//! suggested action). Parse → `app::prolific` → render; a Prolific failure is shown on the page
//! with what Prolific answered (502), never the token.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::{Admin, Nav, Researcher, actor, field};
use crate::app::{self, prolific::ReconcileRow};
use crate::domain::prolific::{RejectionCategory, SubmissionStatus};
use crate::prolific::{ProlificClient, Submission};
use crate::store::prolific::DraftSettings;
use crate::store::studies::Study;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render_status, see_other};
use crate::web::state::AppState;

use super::studies::load_study;

#[derive(Template)]
#[template(path = "admin/prolific.html")]
struct ProlificPage {
    nav: Nav,
    study: Study,
    token_env: String,
    token_set: bool,
    webhook_url: String,
    webhook_secret_env: String,
    webhook_set: bool,
    prolific_study_id: Option<String>,
    description: String,
    reward_cents: String,
    places: String,
    default_places: i32,
    auto_approve: bool,
    screen_out_reward: String,
    estimate: String,
    submissions: Vec<SubRow>,
    awaiting: Vec<String>,
    categories: Vec<(&'static str, &'static str)>,
    notice: Option<String>,
    error: Option<String>,
}

/// A submission row and whether it can be approved (awaiting review).
struct SubRow {
    s: Submission,
    awaiting: bool,
}

#[derive(Template)]
#[template(path = "admin/prolific_reconcile.html")]
struct ReconcilePage {
    nav: Nav,
    study: Study,
    rows: Vec<ReconcileRow>,
    releasable: usize,
    error: Option<String>,
}

/// The client for pages: a page waits out a Retry-After of at most 10 s (a longer one is
/// shown as an error to try again later; the command line waits up to the configured limit).
fn client(state: &AppState) -> ProlificClient {
    let mut s = state.settings.prolific.clone();
    s.max_retry_after_seconds = s.max_retry_after_seconds.min(10);
    ProlificClient::new(&s)
}

/// A use case's failure: the request's own problems stay 4xx; Prolific's answers are shown on
/// the page (502, or 503 without a token).
enum Failure {
    Page(String, StatusCode),
    Other(AppError),
}

impl From<app::Error> for Failure {
    fn from(e: app::Error) -> Self {
        match e {
            app::Error::Prolific(p) => {
                let status = if matches!(p, crate::prolific::ProlificError::NoToken(_)) {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::BAD_GATEWAY
                };
                Failure::Page(p.to_string(), status)
            }
            app::Error::Invalid(m) => Failure::Page(sentence(&m), StatusCode::BAD_REQUEST),
            other => Failure::Other(other.into()),
        }
    }
}

/// A use case's message as the page's sentence: capitalised, with a full stop.
fn sentence(m: &str) -> String {
    let mut c = m.chars();
    let mut out: String = match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    };
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// What the page says after a successful action (a fixed text; only counts come from the URL).
fn notice(done: Option<&str>, n: Option<usize>, m: Option<usize>) -> Option<String> {
    Some(match done? {
        "draft" => "The Prolific draft is saved on Prolific.".to_owned(),
        "approve" => format!(
            "Approved {} submission(s) in {} request(s).",
            n.unwrap_or(0),
            m.unwrap_or(0)
        ),
        "reject" => "The submission is rejected.".to_owned(),
        "return" => "The participant was asked to return the submission.".to_owned(),
        "release" => format!("Released {} reservation(s).", n.unwrap_or(0)),
        _ => return None,
    })
}

#[derive(serde::Deserialize)]
pub struct Done {
    done: Option<String>,
    n: Option<usize>,
    m: Option<usize>,
}

async fn page(
    state: &AppState,
    req: &HttpRequest,
    nav: Nav,
    study: Study,
    form: Option<&[(String, String)]>,
    notice: Option<String>,
    mut error: Option<String>,
) -> Result<ProlificPage, AppError> {
    let slug = study.slug.clone();
    let overview = state
        .db(move |conn| Ok(app::prolific::overview(conn, &slug)))
        .await??;
    let settings = overview.settings.clone();
    let prolific_study_id = settings.as_ref().and_then(|s| s.prolific_study_id.clone());
    let mut submissions = Vec::new();
    if prolific_study_id.is_some() && state.settings.prolific.token.is_some() {
        let (c, slug) = (client(state), study.slug.clone());
        match state
            .db(move |conn| Ok(app::prolific::submissions(conn, &c, &slug)))
            .await?
        {
            Ok(s) => submissions = s,
            Err(e) => {
                if error.is_none() {
                    error = Some(format!("Could not list the submissions: {e}"));
                }
            }
        }
    }
    let rows: Vec<SubRow> = submissions
        .into_iter()
        .map(|s| SubRow {
            awaiting: SubmissionStatus::parse(&s.status) == Some(SubmissionStatus::AwaitingReview),
            s,
        })
        .collect();
    let awaiting = rows
        .iter()
        .filter(|r| r.awaiting)
        .map(|r| r.s.id.clone())
        .collect();
    let typed = |name: &str| form.and_then(|f| field(f, name)).map(str::to_owned);
    let base = crate::web::request::public_base(
        req,
        &state.settings.trusted_proxies,
        state.settings.public_url.as_deref(),
    );
    let p = &state.settings.prolific;
    Ok(ProlificPage {
        nav,
        token_env: p.token_env.clone(),
        token_set: p.token.is_some(),
        webhook_url: format!("{base}/prolific/webhook"),
        webhook_secret_env: p.webhook_secret_env.clone(),
        webhook_set: p.webhook_secret.is_some(),
        prolific_study_id,
        description: typed("description")
            .or_else(|| settings.as_ref().map(|s| s.description.clone()))
            .unwrap_or_default(),
        reward_cents: typed("reward_cents")
            .or_else(|| settings.as_ref().map(|s| s.reward_cents.to_string()))
            .unwrap_or_default(),
        places: typed("places")
            .or_else(|| {
                settings
                    .as_ref()
                    .and_then(|s| s.places)
                    .map(|p| p.to_string())
            })
            .unwrap_or_default(),
        default_places: overview.default_places,
        auto_approve: match form {
            Some(f) => field(f, "auto_approve").is_some(),
            None => settings.as_ref().is_some_and(|s| s.auto_approve),
        },
        screen_out_reward: typed("screen_out_reward_cents")
            .or_else(|| {
                settings
                    .as_ref()
                    .and_then(|s| s.screen_out_reward_cents)
                    .map(|r| r.to_string())
            })
            .unwrap_or_default(),
        estimate: match overview.estimated_minutes {
            Some(m) => format!("{m} min (the median completion time here)"),
            None => format!(
                "{} min (a default: nobody has completed the study yet)",
                crate::domain::prolific::DEFAULT_ESTIMATED_MINUTES
            ),
        },
        submissions: rows,
        awaiting,
        categories: RejectionCategory::ALL
            .iter()
            .map(|c| (c.as_str(), c.label()))
            .collect(),
        notice,
        error,
        study,
    })
}

/// `GET /admin/studies/{study}/prolific`.
pub async fn show(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: Researcher,
    slug: web::Path<String>,
    q: web::Query<Done>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    let n = notice(q.done.as_deref(), q.n, q.m);
    let p = page(&state, &req, Nav::of(user.session()), study, None, n, None).await?;
    render_status(p, StatusCode::OK)
}

/// Runs an admin action; on a failure shows the page again with the message (and the form as
/// typed), on success goes back to the page with a notice.
async fn act<F>(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: &str,
    form: &[(String, String)],
    f: F,
) -> Result<HttpResponse, AppError>
where
    F: FnOnce(
            &mut crate::store::DbConnection,
            &ProlificClient,
            &crate::store::audit::Actor,
        ) -> app::Result<String>
        + Send
        + 'static,
{
    csrf::check_session(&admin.session().csrf_token, form)?;
    let study = load_study(&state, slug).await?;
    let (c, who) = (client(&state), actor(admin.session()));
    let done = state.db(move |conn| Ok(f(conn, &c, &who))).await?;
    match done.map_err(Failure::from) {
        Ok(query) => Ok(see_other(&format!(
            "/admin/studies/{}/prolific?{query}",
            study.slug
        ))),
        Err(Failure::Page(message, status)) => {
            let p = page(
                &state,
                &req,
                Nav::of(admin.session()),
                study,
                Some(form),
                None,
                Some(message),
            )
            .await?;
            render_status(p, status)
        }
        Err(Failure::Other(e)) => Err(e),
    }
}

fn number(form: &[(String, String)], name: &str, label: &str) -> app::Result<Option<i32>> {
    match field(form, name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<i32>()
            .map(Some)
            .map_err(|_| app::Error::Invalid(format!("{label} must be a whole number"))),
    }
}

/// `POST /admin/studies/{study}/prolific/draft`.
pub async fn draft(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let form = form.into_inner();
    let base = crate::web::request::public_base(
        &req,
        &state.settings.trusted_proxies,
        state.settings.public_url.as_deref(),
    );
    let f2 = form.clone();
    let slug2 = slug.clone();
    act(state, req, admin, &slug, &form, move |conn, c, who| {
        let input = DraftSettings {
            description: field(&f2, "description").unwrap_or("").to_owned(),
            reward_cents: number(&f2, "reward_cents", "The reward")?
                .ok_or_else(|| app::Error::Invalid("give the reward in cents (or pence)".into()))?,
            places: number(&f2, "places", "Places")?,
            auto_approve: field(&f2, "auto_approve").is_some(),
            screen_out_reward_cents: number(
                &f2,
                "screen_out_reward_cents",
                "The screen-out payment",
            )?,
        };
        app::prolific::draft(conn, c, &base, &slug2, &input, who)?;
        Ok("done=draft".into())
    })
    .await
}

/// `POST /admin/studies/{study}/prolific/approve`: the ticked submissions, or with `all` every
/// submission awaiting review.
pub async fn approve(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let form = form.into_inner();
    let all = field(&form, "all").is_some();
    let ids: Vec<String> = form
        .iter()
        .filter(|(k, _)| k == "submission")
        .map(|(_, v)| v.clone())
        .collect();
    let slug2 = slug.clone();
    act(state, req, admin, &slug, &form, move |conn, c, who| {
        if !all && ids.is_empty() {
            return Err(app::Error::Invalid(
                "tick the submissions to approve, or approve every one awaiting review".into(),
            ));
        }
        let chosen = (!all).then_some(ids.as_slice());
        let a = app::prolific::approve(conn, c, &slug2, chosen, who)?;
        Ok(format!("done=approve&n={}&m={}", a.approved, a.requests))
    })
    .await
}

/// `POST /admin/studies/{study}/prolific/reject`.
pub async fn reject(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let form = form.into_inner();
    let f2 = form.clone();
    let slug2 = slug.clone();
    act(state, req, admin, &slug, &form, move |conn, c, who| {
        let get = |n: &str| field(&f2, n).unwrap_or("").to_owned();
        let submission = get("submission");
        if submission.is_empty() {
            return Err(app::Error::Invalid(
                "choose the submission to reject".into(),
            ));
        }
        app::prolific::reject(
            conn,
            c,
            &slug2,
            &submission,
            &get("category"),
            &get("message"),
            who,
        )?;
        Ok("done=reject".into())
    })
    .await
}

/// `POST /admin/studies/{study}/prolific/return`.
pub async fn request_return(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let form = form.into_inner();
    let f2 = form.clone();
    let slug2 = slug.clone();
    act(state, req, admin, &slug, &form, move |conn, c, who| {
        let submission = field(&f2, "submission").unwrap_or("").to_owned();
        if submission.is_empty() {
            return Err(app::Error::Invalid(
                "choose the submission to ask a return for".into(),
            ));
        }
        let reasons: Vec<String> = f2
            .iter()
            .filter(|(k, _)| k == "reason")
            .map(|(_, v)| v.clone())
            .collect();
        app::prolific::request_return(conn, c, &slug2, &submission, &reasons, who)?;
        Ok("done=return".into())
    })
    .await
}

/// `GET /admin/studies/{study}/prolific/reconcile`.
pub async fn reconcile(
    state: web::Data<AppState>,
    user: Researcher,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    let (c, s2) = (client(&state), study.slug.clone());
    let found = state
        .db(move |conn| Ok(app::prolific::reconcile(conn, &c, &s2)))
        .await?;
    let (rows, error, status) = match found.map_err(Failure::from) {
        Ok(rows) => (rows, None, StatusCode::OK),
        // No draft yet is not an error of this page: it says so.
        Err(Failure::Page(m, s)) if s == StatusCode::BAD_REQUEST => {
            (Vec::new(), Some(m), StatusCode::OK)
        }
        Err(Failure::Page(m, s)) => (Vec::new(), Some(m), s),
        Err(Failure::Other(e)) => return Err(e),
    };
    let releasable = rows
        .iter()
        .filter(|r| r.suggestion.action == crate::domain::prolific::Action::ReleaseReservation)
        .count();
    render_status(
        ReconcilePage {
            nav: Nav::of(user.session()),
            study,
            rows,
            releasable,
            error,
        },
        status,
    )
}

/// `POST /admin/studies/{study}/prolific/release`: releases the reservations the
/// reconciliation suggests releasing.
pub async fn release(
    state: web::Data<AppState>,
    req: HttpRequest,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let form = form.into_inner();
    let slug2 = slug.clone();
    act(state, req, admin, &slug, &form, move |conn, c, who| {
        let n = app::prolific::release_returned(conn, c, &slug2, who)?;
        Ok(format!("done=release&n={n}"))
    })
    .await
}
