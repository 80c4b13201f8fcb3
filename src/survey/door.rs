//! Identity at the door (issue #15, point 2): a study's optional checks on who may start it,
//! run where a participant would be made (the consent page and its answer) and, for a study
//! that requires Prolific's token, on a link that would continue someone by their Prolific id.
//! A refusal is a clear page and stores nothing. Pilots (the study's pilot link) pass.
//!
//! Prolific's token lives two minutes, longer than reading a consent page may take, so it is
//! verified when the consent page is shown, and the page's form carries a MAC binding that
//! visit to the verified Prolific id ([`DOOR_FIELD`]); the answer is accepted only with it.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, http::header};
use askama::Template;

use crate::domain::door::DoorSettings;
use crate::domain::prolific_token::{self, Expected, TokenError};
use crate::store::{doors, studies::Study};
use crate::web::error::AppError;
use crate::web::render::render_status;
use crate::web::state::AppState;

/// A refusal: the survey's "unavailable" page, with this page's words.
#[derive(Template)]
#[template(path = "survey/unavailable.html")]
struct Refused {
    /// English: the door's refusals are not in the catalogues yet (docs/languages.md).
    tr: crate::web::i18n::Tr,
    title: String,
    heading: &'static str,
    message: &'static str,
    prolific: bool,
}

/// The consent form's field that binds its visit to a verified Prolific id.
pub const DOOR_FIELD: &str = "door";

/// The ids a link or form carries, as the door sees them.
pub struct Ids<'a> {
    pub pid: Option<&'a str>,
    pub study_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// The `prolific_token` query value.
    pub token: Option<&'a str>,
}

/// Why the door stays shut, each with its page.
#[derive(Debug)]
pub enum Refusal {
    /// "Prolific only", and the link has no Prolific id.
    NoPid,
    /// The study requires Prolific's token; it is missing or does not verify.
    Token(Option<TokenError>),
    /// The keys to check the token with cannot be had now.
    KeysUnavailable,
    /// The Prolific id took part in an excluded earlier study.
    Excluded,
}

impl Refusal {
    pub fn page(
        &self,
        study: &Study,
        english: crate::web::i18n::Tr,
    ) -> Result<HttpResponse, AppError> {
        let (heading, message, prolific, status) = match self {
            Refusal::NoPid => (
                "This study is only for Prolific participants",
                "Please open this study from Prolific: the link Prolific gives you carries your \
                 Prolific ID. Nothing has been stored.",
                false,
                StatusCode::FORBIDDEN,
            ),
            Refusal::Token(Some(TokenError::Expired)) => (
                "Your link from Prolific has expired",
                "Links from Prolific are valid for two minutes. Please open the study again from \
                 your Prolific dashboard. Nothing has been stored.",
                false,
                StatusCode::FORBIDDEN,
            ),
            Refusal::Token(_) => (
                "We could not confirm that you came from Prolific",
                "This study can only be started from the link Prolific gives you. Please open \
                 the study again from your Prolific dashboard. Nothing has been stored.",
                false,
                StatusCode::FORBIDDEN,
            ),
            Refusal::KeysUnavailable => (
                "Please try again in a minute",
                "We cannot check your link from Prolific at the moment. Nothing has been \
                 stored. Please wait a minute and open the study again from Prolific.",
                false,
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            Refusal::Excluded => (
                "You have already taken part in a related study",
                "Thank you for your interest. This study is for people who have not taken part \
                 in our earlier related studies, so we cannot include you. Nothing has been \
                 stored.",
                true,
                StatusCode::FORBIDDEN,
            ),
        };
        let mut resp = render_status(
            Refused {
                tr: english,
                title: study.title.clone(),
                heading,
                message,
                prolific,
            },
            status,
        )?;
        if matches!(self, Refusal::KeysUnavailable) {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("60"));
        }
        Ok(resp)
    }
}

/// Prolific's token of a link, verified for `study`: the Prolific id it vouches for (the
/// link's, or the token's own when the link has none), or the refusal.
pub async fn verify_token(
    state: &AppState,
    study: &Study,
    door: &DoorSettings,
    ids: &Ids<'_>,
) -> Result<String, Refusal> {
    let token = ids.token.ok_or(Refusal::Token(None))?;
    let audience = door.token_audience.as_deref().unwrap_or_default();
    let expected = Expected {
        audience,
        workspace_id: door.token_workspace_id.as_deref(),
        link: vec![
            (study.pid_param.as_str(), ids.pid),
            (study.study_id_param.as_str(), ids.study_id),
            (study.session_id_param.as_str(), ids.session_id),
        ],
        now: chrono::Utc::now().timestamp(),
    };
    let refused = |e: TokenError| {
        // The reason, never the token.
        tracing::info!(study = %study.slug, reason = %e, "Prolific token refused");
        Refusal::Token(Some(e))
    };
    let kid = prolific_token::key_id(token).map_err(refused)?;
    let mut keys = state.jwks.keys(false).await.map_err(|e| {
        tracing::warn!(error = %e, "Prolific's key set is unavailable");
        Refusal::KeysUnavailable
    })?;
    if keys.key(&kid).is_none() {
        // A rotated key: fetch again (the cache limits how often).
        keys = state
            .jwks
            .keys(true)
            .await
            .map_err(|_| Refusal::KeysUnavailable)?;
    }
    let verified = prolific_token::verify(token, &keys, &expected).map_err(refused)?;
    match ids.pid.or(verified.get(&study.pid_param)) {
        Some(pid) => Ok(pid.to_owned()),
        None => Err(Refusal::Token(Some(TokenError::Malformed(
            "no Prolific id in the link or the token",
        )))),
    }
}

/// Whether Prolific id `pid` took part in a study `study`'s door excludes.
pub async fn excluded(
    state: &AppState,
    study: &Study,
    door: &DoorSettings,
    pid: Option<&str>,
) -> Result<bool, AppError> {
    let (Some(pid), false) = (pid, door.exclude_studies.is_empty()) else {
        return Ok(false);
    };
    let (id, pid) = (study.id, pid.to_owned());
    state
        .db(move |conn| doors::took_part_in_excluded(conn, id, &pid))
        .await
}

/// The consent page's checks (not for pilots): the Prolific id the visit may start as (the
/// link's, or the verified token's), or the page that refuses.
pub async fn at_consent_page(
    state: &AppState,
    study: &Study,
    door: &DoorSettings,
    ids: &Ids<'_>,
) -> Result<Result<Option<String>, Refusal>, AppError> {
    let pid = if door.require_token {
        match verify_token(state, study, door, ids).await {
            Ok(pid) => Some(pid),
            Err(r) => return Ok(Err(r)),
        }
    } else {
        ids.pid.map(str::to_owned)
    };
    if door.prolific_only && pid.is_none() {
        return Ok(Err(Refusal::NoPid));
    }
    if excluded(state, study, door, pid.as_deref()).await? {
        return Ok(Err(Refusal::Excluded));
    }
    Ok(Ok(pid))
}

/// The MAC that binds consent form `visit` to the Prolific id its token vouched for.
pub fn mark(state: &AppState, visit: &str, pid: &str) -> String {
    state.keyed(b"emotionbench door v1", &format!("{visit}|{pid}"))
}

/// The consent answer's checks (not for pilots): `None` to go on, or the refusal.
pub async fn at_consent_answer(
    state: &AppState,
    study: &Study,
    door: &DoorSettings,
    visit: &str,
    pid: Option<&str>,
    door_mark: Option<&str>,
) -> Result<Option<Refusal>, AppError> {
    if door.require_token {
        let ok = match (pid, door_mark) {
            (Some(pid), Some(m)) => {
                crate::auth::constant_time_eq(mark(state, visit, pid).as_bytes(), m.as_bytes())
            }
            _ => false,
        };
        if !ok {
            return Ok(Some(Refusal::Token(None)));
        }
    }
    if door.prolific_only && pid.is_none() {
        return Ok(Some(Refusal::NoPid));
    }
    if excluded(state, study, door, pid).await? {
        return Ok(Some(Refusal::Excluded));
    }
    Ok(None)
}
