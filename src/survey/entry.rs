//! `GET /s/{study}`: the link participants follow. Resumes the participant of this browser or
//! of this Prolific id; otherwise creates one (when the study is open and not full).

use std::collections::HashMap;

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::context::{self, SurveyContext};
use crate::domain::assignment::mix_seed;
use crate::domain::prompt::{canonical_order, shuffled_order};
use crate::domain::study::StudyStatus;
use crate::domain::survey::{ExternalId, SessionKey};
use crate::store::participants::{self, Arrival};
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::{render, see_other};
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "survey/unavailable.html")]
pub struct Unavailable {
    pub title: String,
    pub heading: &'static str,
    pub message: &'static str,
    pub prolific: bool,
}

pub async fn get(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
) -> Result<HttpResponse, AppError> {
    let ctx = SurveyContext::load(&state, &req, &slug).await?;
    let study = ctx.study.clone();
    let param = |name: &str| -> Result<Option<String>, AppError> {
        match query.get(name) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => ExternalId::parse(v)
                .map(|id| Some(id.as_str().to_owned()))
                .map_err(|e| {
                    AppError::BadRequest(format!("The link you followed is not valid: {name} {e}."))
                }),
        }
    };
    let arrival = Arrival {
        prolific_pid: param(&study.pid_param)?,
        prolific_study_id: param(&study.study_id_param)?,
        prolific_session_id: param(&study.session_id_param)?,
        user_agent: req
            .headers()
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(300).collect()),
    };

    // A link's Prolific id always wins: it resumes that id's participant, or makes a new one,
    // whatever participant this browser's cookie names (one browser shared by two people must
    // never store the second one's answers as the first one's). Without an id, the cookie's.
    let existing = match &arrival.prolific_pid {
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
                // this participant by the id, with a key that cannot withdraw them.
                Some(p) => {
                    let pid = p.id;
                    let key = state
                        .survey_db(move |conn| Ok(participants::resume_key(conn, pid)?))
                        .await?;
                    Some((p, SessionKey::Resumed(key)))
                }
                None => None,
            }
        }
        None => ctx.participant.clone().zip(ctx.key.clone()),
    };

    let (participant, key) = match existing {
        Some(found) => found,
        None => {
            let prolific = arrival.prolific_pid.is_some();
            let unavailable = |heading, message| Unavailable {
                title: study.title.clone(),
                heading,
                message,
                prolific,
            };
            if study.status() != StudyStatus::Open {
                return render(unavailable(
                    "This study is not open",
                    "Thank you for your interest. This study is not accepting participants at the moment.",
                ));
            }
            if state.study_is_full(&study).await? {
                return render(unavailable(
                    "This study is full",
                    "Thank you for your interest. Every place in this study has been taken.",
                ));
            }
            let n = ctx.instrument.items.len();
            let public_id = crate::auth::password::random_secret(24);
            let orders = if study.shuffles_items() {
                let nonce: u64 = rand::random();
                let seed = mix_seed(study.seed as u64, nonce);
                (
                    shuffled_order(n, seed),
                    shuffled_order(n, mix_seed(seed, 1)),
                )
            } else {
                (canonical_order(n), canonical_order(n))
            };
            let s = study.clone();
            let key = SessionKey::Owner(public_id.clone());
            let p = state
                .survey_db(move |conn| participants::create(conn, &s, &public_id, &arrival, orders))
                .await?;
            // Two tabs raced on one Prolific id and the other made the row: continue it as a
            // resumed browser (this one never held the row's secret).
            if p.public_id == key.cookie_value() {
                (p, key)
            } else {
                let pid = p.id;
                let key = state
                    .survey_db(move |conn| Ok(participants::resume_key(conn, pid)?))
                    .await?;
                (p, SessionKey::Resumed(key))
            }
        }
    };
    let (token, new_token) = csrf::token(&req);
    let mut resp = see_other(&format!(
        "/s/{}/{}",
        study.slug,
        participant.page().as_str()
    ));
    let _ = resp.add_cookie(&context::participant_cookie(&req, &study, &key));
    if new_token {
        let _ = resp.add_cookie(&csrf::cookie(&req, &token));
    }
    Ok(resp)
}
