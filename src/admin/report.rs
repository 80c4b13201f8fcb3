//! The alignment report of a study for researchers: a filter form with the study's own choices,
//! the tables, the alignment summary and inline SVG charts (presentation attributes only, as
//! the CSP has no inline styles), each chart also downloadable as SVG from its own route with
//! the same query.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use askama::Template;

use super::{Nav, Researcher};
use crate::app::{
    self,
    report::{Choices, ModelSelection, ReportRequest, parse_alpha},
};
use crate::domain::report::{Correction, Mode, Options, Unit};
use crate::domain::split::Side;
use crate::export::report::{View, view};
use crate::web::error::AppError;
use crate::web::render::render_status;
use crate::web::state::AppState;

/// Query parameters; all optional. A key given more than once (a multiple select list) is
/// read as the comma-separated list of its values.
#[derive(Debug, Default, Clone)]
pub struct ReportQuery {
    mode: Option<String>,
    alpha: Option<String>,
    unit: Option<String>,
    models: Option<String>,
    correction: Option<String>,
    /// Comma-separated run ids (one cohort per run; two are compared).
    runs: Option<String>,
    instrument: Option<String>,
    split: Option<String>,
    /// The query as it came, re-encoded: the chart download links repeat it.
    encoded: String,
}

/// `application/x-www-form-urlencoded` of one key or value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl ReportQuery {
    fn from_pairs(pairs: &[(String, String)]) -> ReportQuery {
        let mut q = ReportQuery::default();
        for (k, v) in pairs {
            let slot = match k.as_str() {
                "mode" => &mut q.mode,
                "alpha" => &mut q.alpha,
                "unit" => &mut q.unit,
                "models" => &mut q.models,
                "correction" => &mut q.correction,
                "runs" => &mut q.runs,
                "instrument" => &mut q.instrument,
                "split" => &mut q.split,
                _ => continue,
            };
            *slot = Some(match slot.take() {
                Some(before) => format!("{before},{v}"),
                None => v.clone(),
            });
        }
        q.encoded = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        q
    }

    /// The request for study `slug`.
    fn request(&self, slug: &str) -> Result<ReportRequest, String> {
        let (options, models) = self.options()?;
        let nonempty = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let runs = match nonempty(&self.runs) {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .filter(|r| !r.trim().is_empty())
                .map(|r| {
                    r.trim()
                        .parse::<crate::store::RunId>()
                        .map_err(|_| format!("runs: {r:?} is not a run id"))
                })
                .collect::<Result<_, _>>()?,
        };
        let split = match nonempty(&self.split).filter(|s| s != "all") {
            None => None,
            Some(s) => {
                Some(Side::parse(&s).ok_or_else(|| format!("split: {s:?} is not train or test"))?)
            }
        };
        Ok(ReportRequest {
            models,
            runs,
            instrument: nonempty(&self.instrument),
            split,
            ..ReportRequest::new(slug, options)
        })
    }

    fn options(&self) -> Result<(Options, ModelSelection), String> {
        let mut o = Options::default();
        if let Some(m) = self.mode.as_deref().filter(|s| !s.is_empty()) {
            o.mode = m.parse::<Mode>()?;
        }
        if let Some(u) = self.unit.as_deref().filter(|s| !s.is_empty()) {
            o.unit = u.parse::<Unit>()?;
        }
        if let Some(c) = self
            .correction
            .as_deref()
            .filter(|s| !s.is_empty() && *s != "none")
        {
            o.correction = Some(c.parse::<Correction>()?);
        }
        if let Some(a) = self.alpha.as_deref().filter(|s| !s.is_empty()) {
            o.alpha = parse_alpha(a)?;
        }
        let models = self
            .models
            .as_deref()
            .unwrap_or("all")
            .parse::<ModelSelection>()?;
        Ok((o, models))
    }
}

/// One option of a select list.
pub struct Choice {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

fn choice(value: &str, label: &str, selected: bool) -> Choice {
    Choice {
        value: value.to_owned(),
        label: label.to_owned(),
        selected,
    }
}

/// The filter form, its fields filled with what was asked (also when it was wrong).
pub struct Form {
    pub mode: Vec<Choice>,
    pub unit: Vec<Choice>,
    pub correction: Vec<Choice>,
    pub alpha: String,
    pub models: Vec<Choice>,
    pub runs: Vec<Choice>,
    pub instruments: Vec<Choice>,
    pub split: Vec<Choice>,
}

fn form(q: &ReportQuery, choices: &Choices) -> Form {
    let listed = |s: &Option<String>| -> Vec<String> {
        s.as_deref()
            .unwrap_or("")
            .split(',')
            .map(|x| x.trim().to_owned())
            .filter(|x| !x.is_empty())
            .collect()
    };
    let is = |s: &Option<String>, v: &str, default: bool| match s.as_deref() {
        None | Some("") => default,
        Some(x) => x == v,
    };
    let models = listed(&q.models);
    let runs = listed(&q.runs);
    let mut split = vec![choice("all", "all", is(&q.split, "all", true))];
    if choices.split
        || q.split
            .as_deref()
            .is_some_and(|s| s != "all" && !s.is_empty())
    {
        split.push(choice("train", "train side", is(&q.split, "train", false)));
        split.push(choice("test", "test side", is(&q.split, "test", false)));
    }
    Form {
        mode: vec![
            choice("default", "default (Welch)", is(&q.mode, "default", true)),
            choice(
                "paper",
                "paper (upstream procedure)",
                is(&q.mode, "paper", false),
            ),
        ],
        unit: vec![
            choice("trial", "trial", is(&q.unit, "trial", true)),
            choice(
                "situation",
                "situation mean",
                is(&q.unit, "situation", false),
            ),
        ],
        correction: vec![
            choice("none", "none", is(&q.correction, "none", true)),
            choice("bh", "Benjamini–Hochberg", is(&q.correction, "bh", false)),
            choice("holm", "Holm", is(&q.correction, "holm", false)),
        ],
        alpha: q.alpha.clone().unwrap_or_else(|| "0.01".to_owned()),
        models: choices
            .models
            .iter()
            .map(|m| choice(m, m, models.contains(m)))
            .collect(),
        runs: choices
            .runs
            .iter()
            .map(|(id, label)| choice(&id.to_string(), label, runs.contains(&id.to_string())))
            .collect(),
        instruments: choices
            .instruments
            .iter()
            .enumerate()
            .map(|(i, k)| choice(k, k, is(&q.instrument, k, i == 0)))
            .collect(),
        split,
    }
}

#[derive(Template)]
#[template(path = "admin/report.html")]
struct ReportPage {
    nav: Nav,
    study: String,
    form: Form,
    /// Why the report could not be made (the form stays, to correct it).
    error: Option<String>,
    view: Option<View>,
}

/// 404 for what names something the study does not have; 400 for the rest.
fn status_of(e: &app::Error) -> StatusCode {
    match e {
        app::Error::UnknownRun { .. } | app::Error::NoInstrument(_) => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    }
}

pub async fn show(
    state: web::Data<AppState>,
    user: Researcher,
    slug: web::Path<String>,
    query: web::Query<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let slug = slug.into_inner();
    let q = ReportQuery::from_pairs(&query);
    let request = q.request(&slug);
    let (s, instrument) = (slug.clone(), q.instrument.clone());
    let (choices, outcome) = state
        .db(move |conn| {
            let choices = match app::report::choices(conn, &s, instrument.as_deref()) {
                Err(app::Error::Store(e)) => return Err(e),
                other => other,
            };
            let outcome = match request {
                Err(m) => Err((StatusCode::BAD_REQUEST, m)),
                Ok(r) => match app::report::report(conn, &r) {
                    Err(app::Error::Store(e)) => return Err(e),
                    Err(e) => Err((status_of(&e), e.to_string())),
                    Ok(report) => Ok(report),
                },
            };
            Ok((choices, outcome))
        })
        .await?;
    let choices = choices.map_err(|e| match e {
        app::Error::NoStudy(_) => AppError::NotFound,
        other => AppError::BadRequest(other.to_string()),
    })?;
    let (status, error, view) = match outcome {
        Err((status, m)) => (status, Some(m), None),
        Ok(report) => {
            let mut v = view(&report).map_err(AppError::internal)?;
            for f in &mut v.charts.figures {
                f.href = format!(
                    "/admin/studies/{}/report/export/{}.svg?{}",
                    form_encode(&slug),
                    f.name,
                    q.encoded
                );
            }
            (StatusCode::OK, None, Some(v))
        }
    };
    render_status(
        ReportPage {
            nav: Nav::of(user.session()),
            form: form(&q, &choices),
            study: slug,
            error,
            view,
        },
        status,
    )
}

/// One chart of the report as an SVG file (`bars-0.svg`, …, `scatter.svg`), for the same
/// query as the page.
pub async fn chart_svg(
    state: web::Data<AppState>,
    _user: Researcher,
    path: web::Path<(String, String)>,
    query: web::Query<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let (slug, file) = path.into_inner();
    let name = file
        .strip_suffix(".svg")
        .ok_or(AppError::NotFound)?
        .to_owned();
    let request = ReportQuery::from_pairs(&query)
        .request(&slug)
        .map_err(AppError::BadRequest)?;
    let report = state
        .db(move |conn| match app::report::report(conn, &request) {
            Err(app::Error::Store(e)) => Err(e),
            other => Ok(other),
        })
        .await?
        .map_err(|e| match e {
            app::Error::NoStudy(_) => AppError::NotFound,
            other => AppError::BadRequest(other.to_string()),
        })?;
    let svg = crate::export::charts::chart(&report, &name)
        .map_err(AppError::internal)?
        .ok_or(AppError::NotFound)?;
    Ok(HttpResponse::Ok()
        .content_type("image/svg+xml; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{}-{name}.svg\"", form_encode(&slug)),
        ))
        .body(svg))
}
