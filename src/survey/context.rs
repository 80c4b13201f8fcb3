//! What every survey request needs: the study, the participant (from the study's cookie), the
//! instrument. Its CSRF token is `web::csrf`'s double-submit one.

use std::sync::Arc;

use actix_web::HttpRequest;
use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};

use crate::domain::instrument::Instrument;
use crate::domain::language::{self, Lang};
use crate::domain::survey::{Page, SessionKey};
use crate::store::{self, participants::Participant, studies::Study};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::i18n::Tr;
use crate::web::state::AppState;

/// The query parameter of a link that asks for a language (`?lang=de`).
pub const LANG_PARAM: &str = "lang";

/// The cookie that holds a participant's session key for one study ([`SessionKey`]).
pub fn participant_cookie_name(study: &Study) -> String {
    format!("eb_p{}", study.id)
}

pub fn participant_cookie(req: &HttpRequest, study: &Study, key: &SessionKey) -> Cookie<'static> {
    Cookie::build(participant_cookie_name(study), key.cookie_value())
        .path(format!("/s/{}", study.slug))
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(csrf::is_https(req))
        .max_age(CookieDuration::days(30))
        .finish()
}

/// The study, its instrument and the participant of this browser.
pub struct SurveyContext {
    /// From [`AppState::study`]'s cache (at most a second old).
    pub study: Arc<Study>,
    pub instrument: Arc<Instrument>,
    pub participant: Option<Participant>,
    /// This browser's key for the study, from its cookie.
    pub key: Option<SessionKey>,
    /// The page's messages: the participant's language once known ([`SurveyContext::adopt`]),
    /// before that the link's or the browser's choice among the study's languages.
    pub tr: Tr,
}

/// The `lang=` of a request's query, if any (tags are ASCII letters, digits and `-`, so no
/// decoding is needed; anything else is no tag and is ignored by the choice).
pub fn link_lang(req: &HttpRequest) -> Option<&str> {
    req.query_string()
        .split('&')
        .find_map(|kv| kv.strip_prefix(LANG_PARAM)?.strip_prefix('='))
}

/// The language a visitor of `study` sees: the link's `lang=`, else the browser's
/// `Accept-Language`, among the study's languages; else its default.
pub fn visitor_language<'a>(req: &HttpRequest, study: &'a Study) -> Option<&'a Lang> {
    let accept = req
        .headers()
        .get(actix_web::http::header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    language::choose(link_lang(req), accept, study.languages())
}

impl SurveyContext {
    /// The study and its instrument (both from the caches), and the participant of this
    /// browser looked up in one trip to the database.
    pub async fn load(
        state: &AppState,
        req: &HttpRequest,
        slug: &str,
    ) -> Result<SurveyContext, AppError> {
        let (mut ctx, key) = Self::start(state, req, slug).await?;
        if let Some(key) = key {
            let id = ctx.study.id;
            ctx.participant = state
                .survey_db(move |conn| Ok(store::participants::by_key(conn, id, &key)?))
                .await?;
            if let Some(p) = ctx.participant.clone() {
                ctx.adopt(state, &p).await?;
            }
        }
        Ok(ctx)
    }

    /// The study and its instrument, without the participant (`None`), and this browser's
    /// participant id for the study from its cookie: pages that need the participant and
    /// more from the database look it up in the same trip.
    pub async fn start(
        state: &AppState,
        req: &HttpRequest,
        slug: &str,
    ) -> Result<(SurveyContext, Option<SessionKey>), AppError> {
        let study = state.study(slug).await?.ok_or(AppError::NotFound)?;
        let key = req
            .cookie(&participant_cookie_name(&study))
            .map(|c| SessionKey::from_cookie(c.value()));
        let instrument = state.instrument(study.instrument_id).await?;
        let tr = state
            .catalogues
            .tr(visitor_language(req, &study).unwrap_or(&Lang::english()));
        Ok((
            SurveyContext {
                study,
                instrument,
                participant: None,
                key: key.clone(),
                tr,
            },
            key,
        ))
    }

    /// The messages of a newcomer again (the link's or the browser's choice): for the consent
    /// page of a new visit in a browser whose cookie names someone else.
    pub fn as_visitor(&mut self, state: &AppState, req: &HttpRequest) {
        self.tr = state
            .catalogues
            .tr(visitor_language(req, &self.study).unwrap_or(&Lang::english()));
    }

    /// From now on, the messages of `p`'s own language (English for a participant made
    /// before languages existed), and the instrument's items and labels in it (#20) when the
    /// language is one of the study's other than its default (which shows the instrument as
    /// imported) and the instrument has a translation there.
    pub async fn adopt(&mut self, state: &AppState, p: &Participant) -> Result<(), AppError> {
        let lang = p.language()?.unwrap_or_else(Lang::english);
        if lang != *self.tr.language() {
            self.tr = state.catalogues.tr(&lang);
        }
        if let [_, others @ ..] = self.study.languages()
            && others.contains(&lang)
        {
            self.instrument = state.instrument_in(self.study.instrument_id, &lang).await?;
        }
        Ok(())
    }

    /// The study's entry link (where a browser without a participant is sent).
    pub fn entry_url(&self) -> String {
        format!("/s/{}", self.study.slug)
    }

    pub fn page_url(&self, page: Page) -> String {
        format!("/s/{}/{}", self.study.slug, page.as_str())
    }
}

/// The session secret of the participant a consent form with visit id `visit` makes: a keyed
/// hash, so the same form sent twice names one participant, while the page itself (its HTML)
/// never holds the cookie's value.
pub fn visit_secret(state: &AppState, visit: &str) -> String {
    state.keyed(b"emotionbench participant v1", visit)
}

/// A visit id for a consent page shown now: `NONCE-SECONDS-MAC`, a random nonce, when the page
/// was shown (Unix seconds) and a MAC of both, so the consent answer can record when its page
/// was shown (before the participant existed) without trusting the browser for the time.
pub fn new_visit(state: &AppState, nonce: &str) -> String {
    let body = format!("{nonce}-{}", chrono::Utc::now().timestamp());
    let mac = state.keyed(b"emotionbench visit v1", &body);
    format!("{body}-{mac}")
}

/// When the consent page of visit id `visit` was shown, if this installation issued the id
/// (`None`: forged or malformed).
pub fn visit_shown(state: &AppState, visit: &str) -> Option<chrono::NaiveDateTime> {
    let (body, mac) = visit.rsplit_once('-')?;
    let (nonce, seconds) = body.split_once('-')?;
    if nonce.len() != 24 || !nonce.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let expected = state.keyed(b"emotionbench visit v1", body);
    let same = crate::auth::constant_time_eq(expected.as_bytes(), mac.as_bytes());
    if !same {
        return None;
    }
    let at = chrono::DateTime::from_timestamp(seconds.parse().ok()?, 0)?.naive_utc();
    Some(at)
}

/// The Prolific completion URL for a code.
pub fn prolific_completion_url(code: &str) -> String {
    let code: String = code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    format!("https://app.prolific.com/submissions/complete?cc={code}")
}
