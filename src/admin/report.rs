//! The alignment report of a study for researchers: the Table-2 layout, the alignment summary
//! and inline SVG charts (presentation attributes only, as the CSP has no inline styles).

use actix_web::{HttpResponse, web};
use askama::Template;
use serde::Deserialize;

use super::{Nav, Researcher};
use crate::app::{
    self,
    report::{ModelSelection, ReportRequest, parse_alpha},
};
use crate::domain::report::{Correction, Mode, Options, Unit};
use crate::domain::split::Side;
use crate::export::report::{View, view};
use crate::web::error::AppError;
use crate::web::render::render;
use crate::web::state::AppState;

/// Query parameters; all optional.
#[derive(Debug, Deserialize)]
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
}

impl ReportQuery {
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

#[derive(Template)]
#[template(path = "admin/report.html")]
struct ReportPage {
    nav: Nav,
    view: View,
    models: String,
    runs: String,
    split: String,
}

pub async fn show(
    state: web::Data<AppState>,
    user: Researcher,
    slug: web::Path<String>,
    query: web::Query<ReportQuery>,
) -> Result<HttpResponse, AppError> {
    let request = query
        .request(&slug.into_inner())
        .map_err(AppError::BadRequest)?;
    let models = request.models.clone();
    let runs = request
        .runs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let split = request.split.map_or("all", Side::as_str).to_owned();
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
    let view = view(&report).map_err(AppError::internal)?;
    render(ReportPage {
        nav: Nav::of(user.session()),
        view,
        models: match models {
            ModelSelection::All => "all".to_owned(),
            ModelSelection::Only(m) => m.join(","),
        },
        runs,
        split,
    })
}
