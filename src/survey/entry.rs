//! The way in: `GET /s/{study}`, the link participants follow, and the consent page of a
//! browser that has no participant yet. The link resumes the participant of this browser or
//! of this Prolific id; otherwise it sends the browser to the consent page, and only the answer
//! there makes a participant (issue #14, point 6: opening a link stores nothing, and one
//! address may start only so many participants in a while).

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::context::{self, SurveyContext};
use super::door;
use super::pages::{self, Visit};
use crate::app::survey::{self as survey_app, Arrived};
use crate::domain::assignment::mix_seed;
use crate::domain::language::{self, Lang};
use crate::domain::prolific_token::TOKEN_PARAM;
use crate::domain::prompt::{canonical_order, shuffled_order};
use crate::domain::study::StudyStatus;
use crate::domain::survey::{ExternalId, Page, SessionKey};
use crate::store::participants::{self, Arrival, Participant};
use crate::store::studies::Study;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::i18n::Tr;
use crate::web::render::{render, render_status, see_other};
use crate::web::state::AppState;

/// The hidden fields of a visitor's consent form ([`pages::Visit`]).
pub const VISIT_FIELD: &str = "visit";
pub const PID_FIELD: &str = "prolific_pid";
pub const STUDY_ID_FIELD: &str = "prolific_study_id";
pub const SESSION_ID_FIELD: &str = "prolific_session_id";
/// The pilot token (the query parameter of the consent page and the form's hidden field).
pub const PILOT_FIELD: &str = "pilot";
/// Every field a visitor's consent form sends besides the answer.
const VISITOR_FIELDS: [&str; 8] = [
    csrf::FIELD,
    context::LANG_PARAM,
    VISIT_FIELD,
    PID_FIELD,
    STUDY_ID_FIELD,
    SESSION_ID_FIELD,
    PILOT_FIELD,
    door::DOOR_FIELD,
];
/// The random part of a visit id is this many ASCII letters and digits.
const VISIT_NONCE_LEN: usize = 24;

#[derive(Template)]
#[template(path = "survey/unavailable.html")]
pub struct Unavailable {
    pub tr: Tr,
    pub title: String,
    pub heading: String,
    pub message: String,
    pub prolific: bool,
}

/// The English messages (for the pages whose texts are not in the catalogues yet).
fn english(state: &AppState) -> Tr {
    state.catalogues.tr(&Lang::english())
}

/// The Prolific ids a link (or a visitor's form) carries, each checked.
struct LinkIds {
    pid: Option<String>,
    study_id: Option<String>,
    session_id: Option<String>,
    /// Prolific's signed `prolific_token` (checked by the door when the study requires it).
    token: Option<String>,
}

impl LinkIds {
    fn door(&self) -> door::Ids<'_> {
        door::Ids {
            pid: self.pid.as_deref(),
            study_id: self.study_id.as_deref(),
            session_id: self.session_id.as_deref(),
            token: self.token.as_deref(),
        }
    }
}

/// A `prolific_token` value as a JWT can be (base64url parts and dots); anything else is no
/// token, which the door refuses where one is required.
fn token(query: &HashMap<String, String>) -> Option<String> {
    query
        .get(TOKEN_PARAM)
        .filter(|t| {
            !t.is_empty()
                && t.len() <= crate::domain::prolific_token::MAX_TOKEN_LEN
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
        .cloned()
}

fn external(name: &str, value: Option<&String>) -> Result<Option<String>, AppError> {
    match value {
        None => Ok(None),
        Some(v) if v.trim().is_empty() => Ok(None),
        Some(v) => ExternalId::parse(v)
            .map(|id| Some(id.as_str().to_owned()))
            .map_err(|e| {
                AppError::BadRequest(format!("The link you followed is not valid: {name} {e}."))
            }),
    }
}

/// The ids in a link's query, under the study's parameter names.
fn link_ids(study: &Study, query: &HashMap<String, String>) -> Result<LinkIds, AppError> {
    Ok(LinkIds {
        pid: external(&study.pid_param, query.get(&study.pid_param))?,
        study_id: external(&study.study_id_param, query.get(&study.study_id_param))?,
        session_id: external(&study.session_id_param, query.get(&study.session_id_param))?,
        token: token(query),
    })
}

/// The consent page's URL, carrying the link's ids and token on (only ids [`ExternalId`]
/// accepted: letters, digits, `-` and `_`, and tokens of base64url and dots, so nothing needs
/// escaping).
fn consent_url(study: &Study, ids: &LinkIds, lang: Option<Lang>) -> String {
    let token_param = TOKEN_PARAM.to_owned();
    let lang_param = context::LANG_PARAM.to_owned();
    let lang = lang.map(|l| l.to_string());
    let params: Vec<String> = [
        (&study.pid_param, &ids.pid),
        (&study.study_id_param, &ids.study_id),
        (&study.session_id_param, &ids.session_id),
        (&token_param, &ids.token),
        (&lang_param, &lang),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.as_ref().map(|v| format!("{name}={v}")))
    .collect();
    let base = format!("/s/{}/{}", study.slug, Page::Consent.as_str());
    if params.is_empty() {
        base
    } else {
        format!("{base}?{}", params.join("&"))
    }
}

/// The polite page for a study that takes no newcomers (not open, or every place taken).
/// A pilot (the study's pilot link) may start in a draft too, and is never turned away as full:
/// it takes no place.
async fn closed(
    state: &AppState,
    study: &Study,
    tr: &Tr,
    prolific: bool,
    pilot: bool,
) -> Result<Option<HttpResponse>, AppError> {
    let page = |heading, message| Unavailable {
        title: study.title_in(tr.language()).to_owned(),
        heading: tr.t(heading),
        message: tr.t(message),
        prolific,
        tr: tr.clone(),
    };
    if pilot && study.status() != StudyStatus::Closed {
        return Ok(None);
    }
    if study.status() != StudyStatus::Open {
        return render(page("not-open-heading", "not-open-message")).map(Some);
    }
    if state.study_is_full(study).await? {
        return render(page("study-full-heading", "study-full-message")).map(Some);
    }
    Ok(None)
}

pub async fn get(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
) -> Result<HttpResponse, AppError> {
    let ctx = SurveyContext::load(&state, &req, &slug).await?;
    let study = ctx.study.clone();
    let ids = link_ids(&study, &query)?;

    // A link's Prolific id always wins: it resumes that id's participant, or leads to a new
    // one, whatever participant this browser's cookie names (one browser shared by two people
    // must never store the second one's answers as the first one's). Without an id, the
    // cookie's.
    let existing = match &ids.pid {
        Some(pid) => {
            let pid = pid.clone();
            let id = study.id;
            let found = state
                .survey_db(move |conn| Ok(participants::by_pid(conn, id, &pid)?))
                .await?;
            match found {
                // This browser started it: it keeps its own key.
                Some(p) if ctx.participant.as_ref().is_some_and(|c| c.id == p.id) => {
                    ctx.key.clone().map(|k| (p, k))
                }
                // Another browser, or one that holds someone else's cookie: it may continue
                // this participant by the id, with a key that cannot withdraw them (where the
                // study requires Prolific's token, only with a valid one: an id alone is no
                // proof).
                Some(p) => {
                    let d = state.door(study.id).await?;
                    if d.require_token {
                        if let Err(refusal) =
                            door::verify_token(&state, &study, &d, &ids.door()).await
                        {
                            return refusal.page(&study, english(&state));
                        }
                    }
                    Some(resumed(&state, p).await?)
                }
                None => None,
            }
        }
        None => ctx.participant.clone().zip(ctx.key.clone()),
    };

    let Some((participant, key)) = existing else {
        if let Some(page) = closed(&state, &study, &ctx.tr, ids.pid.is_some(), false).await? {
            return Ok(page);
        }
        let lang = context::link_lang(&req).and_then(|l| Lang::parse(l).ok());
        return Ok(see_other(&consent_url(&study, &ids, lang)));
    };
    let (token, new_token) = csrf::token(&req);
    let mut resp = see_other(&ctx.page_url(participant.page()));
    let _ = resp.add_cookie(&context::participant_cookie(&req, &study, &key));
    Ok(pages::with_csrf(resp, &req, &token, new_token))
}

/// A participant continued by a browser that did not start it: the key such browsers share.
async fn resumed(state: &AppState, p: Participant) -> Result<(Participant, SessionKey), AppError> {
    let id = p.id;
    let key = state
        .survey_db(move |conn| Ok(participants::resume_key(conn, id)?))
        .await?;
    Ok((p, SessionKey::Resumed(key)))
}

/// `GET /s/{study}/consent`: the information and consent page. A browser with a participant
/// (and no other Prolific id in the link) goes on where it is; any other gets the page with
/// a fresh visit id, and nothing is stored until it answers.
pub async fn consent_form(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
) -> Result<HttpResponse, AppError> {
    let mut ctx = SurveyContext::load(&state, &req, &slug).await?;
    let ids = link_ids(&ctx.study, &query)?;
    let pilot = query
        .get(PILOT_FIELD)
        .filter(|t| state.is_pilot_token(ctx.study.id, t))
        .cloned();
    if ids.pid.is_none() && pilot.is_none() {
        if let Some(p) = &ctx.participant {
            // Participants made before consent made them still sit here: their own page.
            if p.page() == Page::Consent {
                return pages::show(&state, &req, &slug, Page::Consent.as_str()).await;
            }
            return Ok(see_other(&ctx.page_url(p.page())));
        }
    }
    // From here on the page is a new visit's, whoever this browser's cookie names.
    ctx.as_visitor(&state, &req);
    if let Some(page) = closed(
        &state,
        &ctx.study,
        &ctx.tr,
        ids.pid.is_some(),
        pilot.is_some(),
    )
    .await?
    {
        return Ok(page);
    }
    // The door (pilots pass): the Prolific id this visit may start as.
    let (pid, require_token) = if pilot.is_some() {
        (ids.pid.clone(), false)
    } else {
        let d = state.door(ctx.study.id).await?;
        match door::at_consent_page(&state, &ctx.study, &d, &ids.door()).await? {
            Ok(pid) => (pid, d.require_token),
            Err(refusal) => return refusal.page(&ctx.study, english(&state)),
        }
    };
    let (token, new_token) = csrf::token(&req);
    let visit_id = context::new_visit(
        &state,
        &crate::auth::password::random_secret(VISIT_NONCE_LEN),
    );
    let visit = Visit {
        door: pid
            .as_deref()
            .filter(|_| require_token)
            .map(|p| door::mark(&state, &visit_id, p)),
        id: visit_id,
        prolific_pid: pid,
        prolific_study_id: ids.study_id,
        prolific_session_id: ids.session_id,
        pilot,
    };
    let languages = switcher(&req, &ctx);
    let resp = render(pages::visitor_consent(&ctx, &token, visit, languages))?;
    Ok(pages::with_csrf(resp, &req, &token, new_token))
}

/// `GET /s/{study}/pilot/{token}`: the study's pilot link (shown to researchers on the study
/// page). Leads to the consent page as a new pilot, whatever this browser did before; a wrong
/// token is a page that does not exist.
pub async fn pilot(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, AppError> {
    let (slug, token) = path.into_inner();
    let study = state.study(&slug).await?.ok_or(AppError::NotFound)?;
    if !state.is_pilot_token(study.id, &token) {
        return Err(AppError::NotFound);
    }
    let tr = state
        .catalogues
        .tr(context::visitor_language(&req, &study).unwrap_or(&Lang::english()));
    if let Some(page) = closed(&state, &study, &tr, false, true).await? {
        return Ok(page);
    }
    Ok(see_other(&format!(
        "/s/{}/{}?{PILOT_FIELD}={token}",
        study.slug,
        Page::Consent.as_str()
    )))
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a String> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Random item orders for the two questionnaire pages, or the canonical one.
fn item_orders(study: &Study, n: usize) -> (Vec<u32>, Vec<u32>) {
    if study.shuffles_items() {
        let nonce: u64 = rand::random();
        let seed = mix_seed(study.seed as u64, nonce);
        (
            shuffled_order(n, seed),
            shuffled_order(n, mix_seed(seed, 1)),
        )
    } else {
        (canonical_order(n), canonical_order(n))
    }
}

/// `POST /s/{study}/consent`. A visitor's answer makes the participant (at most the configured
/// number per client address and window); a form without a visit id is the answer of a
/// participant made before consent made them.
pub async fn consent(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    form: web::Form<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let fields = form.into_inner();
    csrf::check_double_submit(&req, &fields)?;
    let Some(visit) = field(&fields, VISIT_FIELD) else {
        return pages::submit(&state, &req, &slug, Page::Consent.as_str(), fields).await;
    };
    let Some(shown_at) = context::visit_shown(&state, visit) else {
        return Err(AppError::BadRequest("This form is not valid.".into()));
    };
    let consent =
        survey_app::parse_consent(&fields, &VISITOR_FIELDS).map_err(AppError::BadRequest)?;
    let (mut ctx, _) = SurveyContext::start(&state, &req, &slug).await?;
    let study = ctx.study.clone();
    // The language the consent page was shown in (its hidden field), when the study has it;
    // else the browser's choice among the study's, else its default.
    let accept = req
        .headers()
        .get(actix_web::http::header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let lang = language::choose(
        field(&fields, context::LANG_PARAM).map(String::as_str),
        accept,
        study.languages(),
    )
    .cloned()
    .unwrap_or_else(Lang::english);
    ctx.tr = state.catalogues.tr(&lang);
    let arrival = Arrival {
        language: Some(lang.to_string()),
        prolific_pid: external("Prolific id", field(&fields, PID_FIELD))?,
        prolific_study_id: external("study id", field(&fields, STUDY_ID_FIELD))?,
        prolific_session_id: external("session id", field(&fields, SESSION_ID_FIELD))?,
        user_agent: req
            .headers()
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(300).collect()),
        pilot: match field(&fields, PILOT_FIELD) {
            None => false,
            Some(t) if state.is_pilot_token(study.id, t) => true,
            Some(_) => return Err(AppError::BadRequest("This pilot link is not valid.".into())),
        },
    };
    let prolific = arrival.prolific_pid.is_some();
    if let Some(page) = closed(&state, &study, &ctx.tr, prolific, arrival.pilot).await? {
        return Ok(page);
    }
    // Pilots come from the researchers, who hold the link's token: not checked at the door
    // nor limited per address.
    if !arrival.pilot {
        let d = state.door(study.id).await?;
        let refusal = door::at_consent_answer(
            &state,
            &study,
            &d,
            visit,
            arrival.prolific_pid.as_deref(),
            field(&fields, door::DOOR_FIELD).map(String::as_str),
        )
        .await?;
        if let Some(refusal) = refusal {
            return refusal.page(&study, english(&state));
        }
        let addr = crate::web::request::client_addr(&req, &state.settings.trusted_proxies);
        let limit = d.limit(state.settings.new_participants_per_address);
        if let Err(wait) = state.admit_new_participant(study.id, limit, &addr) {
            return too_many(&study, &ctx.tr, wait);
        }
    }
    let public_id = context::visit_secret(&state, visit);
    let form = Arrived {
        public_id: public_id.clone(),
        orders: item_orders(&study, ctx.instrument.items.len()),
        arrival,
        consent,
        shown_at,
    };
    let s = study.clone();
    let p = state
        .survey_db(move |conn| survey_app::begin(conn, &s, form))
        .await?;
    // The same visit sent twice owns its participant; a Prolific id that another browser had
    // already started is continued as a resumed browser (this one never held its secret).
    let (p, key) = if p.public_id == public_id {
        (p, SessionKey::Owner(public_id))
    } else {
        resumed(&state, p).await?
    };
    let mut resp = see_other(&pages::after_submit(&ctx, &p));
    let _ = resp.add_cookie(&context::participant_cookie(&req, &study, &key));
    Ok(resp)
}

/// 429 for an address that started its limit of participants in the window.
/// (Not the "return your submission" advice: they should come back, not give up their place.)
fn too_many(study: &Study, tr: &Tr, wait: std::time::Duration) -> Result<HttpResponse, AppError> {
    let mut resp = render_status(
        Unavailable {
            title: study.title_in(tr.language()).to_owned(),
            heading: tr.t("too-many-heading"),
            message: tr.t("too-many-message"),
            prolific: false,
            tr: tr.clone(),
        },
        StatusCode::TOO_MANY_REQUESTS,
    )?;
    if let Ok(v) =
        actix_web::http::header::HeaderValue::from_str(&wait.as_secs().max(1).to_string())
    {
        resp.headers_mut()
            .insert(actix_web::http::header::RETRY_AFTER, v);
    }
    Ok(resp)
}

/// The consent page's language switcher: one link per study language (none when it has only
/// one), each the page's own address with the same query and that `lang=`.
fn switcher(req: &HttpRequest, ctx: &SurveyContext) -> Vec<pages::LangLink> {
    let langs = ctx.study.languages();
    if langs.len() < 2 {
        return Vec::new();
    }
    let kept: Vec<&str> = req
        .query_string()
        .split('&')
        .filter(|kv| !kv.is_empty() && kv.split('=').next() != Some(context::LANG_PARAM))
        .collect();
    langs
        .iter()
        .map(|l| {
            let mut query = kept.clone();
            let own = format!("{}={l}", context::LANG_PARAM);
            query.push(&own);
            pages::LangLink {
                tag: l.to_string(),
                name: ctx.tr.name_of(l),
                url: format!(
                    "/s/{}/{}?{}",
                    ctx.study.slug,
                    Page::Consent.as_str(),
                    query.join("&")
                ),
                current: l == ctx.tr.language(),
            }
        })
        .collect()
}
