//! Evidence against bots and LLM agents (`domain::evidence`): the study's evidence page (counts
//! per signal, the flagged participants, the exclusion rules and their form) and one
//! participant's page (each signal with its reason, page times against their floors).

use actix_web::{HttpResponse, web};
use askama::Template;

use super::studies::load_study;
use super::{Admin, Nav, Researcher, actor};
use crate::app;
use crate::domain::evidence::{Assessed, Assessment, ExclusionRules, Signal, StudyEvidence};
use crate::store::evidence::{Scope, StoredRules};
use crate::store::participants::{self, ParticipantBrief};
use crate::store::studies::Study;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

/// The flagged participants the evidence page lists at most (the wide export has them all).
const LISTED: usize = 200;

/// One signal's line: the signal, how many carry it, whether the rules exclude by it.
pub struct SignalLine {
    pub signal: Signal,
    pub count: usize,
    pub excludes: bool,
}

/// A flagged participant's line.
pub struct Flagged {
    pub export_id: String,
    pub imported: bool,
    pub reasons: String,
    pub excluded: bool,
}

#[derive(Template)]
#[template(path = "admin/evidence.html")]
struct EvidencePage {
    nav: Nav,
    study: Study,
    assessed: usize,
    lines: Vec<SignalLine>,
    flagged: Vec<Flagged>,
    flagged_total: usize,
    excluded_total: usize,
    models: Vec<String>,
    rules: StoredRules,
    error: Option<String>,
}

fn evidence_page(
    nav: Nav,
    study: Study,
    evidence: StudyEvidence,
    rules: StoredRules,
    error: Option<String>,
) -> EvidencePage {
    let lines = evidence
        .signal_counts()
        .into_iter()
        .map(|(signal, count)| SignalLine {
            signal,
            count,
            excludes: rules.rules.signals.contains(&signal),
        })
        .collect();
    let (_, excluded_total) = evidence.exclusions();
    let all_flagged: Vec<&Assessed> = evidence
        .people
        .iter()
        .filter(|p| !p.assessment.findings.is_empty())
        .collect();
    let flagged = all_flagged
        .iter()
        .take(LISTED)
        .map(|p| Flagged {
            export_id: p.export_id.clone(),
            imported: p.imported,
            reasons: p.assessment.reasons(),
            excluded: !evidence.excluded_by(p.id).is_empty(),
        })
        .collect();
    EvidencePage {
        nav,
        study,
        assessed: evidence.people.len(),
        lines,
        flagged_total: all_flagged.len(),
        flagged,
        excluded_total,
        models: evidence.models.clone(),
        rules,
        error,
    }
}

async fn load(state: &AppState, study: &Study) -> Result<(StudyEvidence, StoredRules), AppError> {
    let s = study.clone();
    state
        .db(move |conn| {
            let evidence = app::evidence::study_evidence(conn, &s, Scope::All)?;
            let rules = crate::store::evidence::rules(conn, s.id)?;
            Ok((evidence, rules))
        })
        .await
}

/// `GET /admin/studies/{study}/evidence`.
pub async fn show(
    state: web::Data<AppState>,
    user: Researcher,
    slug: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let study = load_study(&state, &slug).await?;
    let (evidence, rules) = load(&state, &study).await?;
    render(evidence_page(
        Nav::of(user.session()),
        study,
        evidence,
        rules,
        None,
    ))
}

/// `POST /admin/studies/{study}/exclusions`: the checked signals become the study's exclusion
/// rules (audited), back to the evidence page.
pub async fn set_rules(
    state: web::Data<AppState>,
    admin: Admin,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    csrf::check_session(&admin.session().csrf_token, &form)?;
    let study = load_study(&state, &slug).await?;
    let names: Vec<&str> = form
        .iter()
        .filter(|(k, _)| k == "signal")
        .map(|(_, v)| v.as_str())
        .collect();
    let rules = match ExclusionRules::parse_list(&names.join(",")) {
        Ok(r) => r,
        Err(message) => {
            let (evidence, stored) = load(&state, &study).await?;
            return render_status(
                evidence_page(
                    Nav::of(admin.session()),
                    study,
                    evidence,
                    stored,
                    Some(message),
                ),
                actix_web::http::StatusCode::BAD_REQUEST,
            );
        }
    };
    let who = actor(admin.session());
    let slug2 = study.slug.clone();
    state
        .db(move |conn| Ok(app::evidence::set_rules(conn, &slug2, &rules, &who)))
        .await??;
    Ok(see_other(&format!(
        "/admin/studies/{}/evidence",
        study.slug
    )))
}

/// One page's time on the participant's page, formatted.
pub struct TimeLine {
    pub page: &'static str,
    pub seconds: String,
    pub floor: String,
}

/// The assessment as the participant's page shows it.
pub struct Shown {
    pub findings: Vec<crate::domain::evidence::Finding>,
    pub rsi: String,
    pub model: String,
    pub times: Vec<TimeLine>,
}

impl Shown {
    fn of(a: &Assessment) -> Shown {
        let secs = |ms: i64| format!("{:.1} s", ms as f64 / 1000.0);
        Shown {
            findings: a.findings.clone(),
            rsi: match a.rsi {
                Some(r) => format!("{r:.2} (evidence above 2)"),
                None => "not computed (fewer than 10 timed participants, or no timings)".into(),
            },
            model: match &a.model_lr {
                Some((m, l)) => format!("log10 LR {l:.1} against {m} (evidence above 2)"),
                None => "not computed (no model runs, or fewer than 10 other humans)".into(),
            },
            times: a
                .pages
                .iter()
                .map(|t| TimeLine {
                    page: t.page.as_str(),
                    seconds: secs(t.ms),
                    floor: t.floor_ms.map_or_else(|| "–".to_owned(), secs),
                })
                .collect(),
        }
    }
}

#[derive(Template)]
#[template(path = "admin/participant.html")]
struct ParticipantPage {
    nav: Nav,
    study: Study,
    who: ParticipantBrief,
    shown: Option<Shown>,
    excluded_by: Vec<Signal>,
}

/// `GET /admin/studies/{study}/participants/{participant}` (export or Prolific id): the
/// evidence about one participant.
pub async fn participant(
    state: web::Data<AppState>,
    user: Researcher,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, AppError> {
    let (slug, which) = path.into_inner();
    if which.is_empty() || which.len() > 64 {
        return Err(AppError::NotFound);
    }
    let study = load_study(&state, &slug).await?;
    let s = study.clone();
    let found = state
        .db(move |conn| {
            let Some(who) = participants::find_by_export_or_pid(conn, s.id, &which)? else {
                return Ok(None);
            };
            let evidence = app::evidence::study_evidence(conn, &s, Scope::All)?;
            let assessment = evidence.of(who.id.0).cloned();
            let excluded_by = evidence.excluded_by(who.id.0);
            Ok(Some((who, assessment, excluded_by)))
        })
        .await?;
    let Some((who, assessment, excluded_by)) = found else {
        return Err(AppError::NotFound);
    };
    render(ParticipantPage {
        nav: Nav::of(user.session()),
        study,
        who,
        shown: assessment.as_ref().map(Shown::of),
        excluded_by,
    })
}
