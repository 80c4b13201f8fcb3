//! The alignment report of a study for researchers: the Table-2 layout, the alignment summary
//! and inline SVG charts (presentation attributes only, as the CSP has no inline styles).

use actix_web::{HttpResponse, web};
use askama::Template;
use serde::Deserialize;

use super::{Nav, Researcher};
use crate::domain::report::{Correction, Mode, Options, Unit};
use crate::export::report::{View, view};
use crate::ops::{self, ModelSelection, ReportError};
use crate::web::{AppError, AppState, render};

/// Query parameters; all optional.
#[derive(Debug, Deserialize)]
pub struct ReportQuery {
    mode: Option<String>,
    alpha: Option<String>,
    unit: Option<String>,
    models: Option<String>,
    correction: Option<String>,
}

impl ReportQuery {
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

/// α must be a number strictly between 0 and 1.
pub fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("α must be a number between 0 and 1, not {s:?}")),
    }
}

#[derive(Template)]
#[template(path = "admin/report.html")]
struct ReportPage {
    nav: Nav,
    view: View,
    models: String,
}

pub async fn show(
    state: web::Data<AppState>,
    user: Researcher,
    slug: web::Path<String>,
    query: web::Query<ReportQuery>,
) -> Result<HttpResponse, AppError> {
    let (options, models) = query.options().map_err(AppError::BadRequest)?;
    let slug = slug.into_inner();
    let selection = models.clone();
    let report = state
        .db(
            move |conn| match ops::report(conn, &slug, &selection, options) {
                Err(ReportError::Store(e)) => Err(e),
                other => Ok(other),
            },
        )
        .await?
        .map_err(|e| match e {
            ReportError::NoStudy(_) => AppError::NotFound,
            other => AppError::BadRequest(other.to_string()),
        })?;
    let view = view(&report).map_err(|e| AppError::Internal(e.to_string()))?;
    render(ReportPage {
        nav: Nav::of(user.session()),
        view,
        models: match models {
            ModelSelection::All => "all".to_owned(),
            ModelSelection::Only(m) => m.join(","),
        },
    })
}
