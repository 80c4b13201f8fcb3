//! The Prolific loop's use cases (#15), shared by `emotionbench prolific …` and the admin's
//! Prolific pages: the draft from our study, the submissions, bulk approval, rejection, return
//! requests, the reconciliation, and the webhook that gives a returned participant's place to
//! the next arrival.
//!
//! Every action that reaches Prolific is audited after Prolific accepted it (with what was
//! sent, never the token). Nothing happens on its own: approval is automatic only when the
//! study's settings say so, and then it is Prolific that approves (the COMPLETED code's
//! `AUTOMATICALLY_APPROVE` action). Network calls run outside any transaction.

use serde_json::json;

use super::error::{Error, Result, invalid};
use crate::domain::prolific::{
    self as rules, Action, BULK_APPROVE_MAX, CodeRules, DEFAULT_ESTIMATED_MINUTES, Ours,
    StudyCodes, SubmissionStatus, Suggestion,
};
use crate::prolific::{ProlificClient, ProlificError, StudyDraft, Submission, signature};
use crate::store::prolific::{self as pstore, DraftSettings, Event, ProlificStudy};
use crate::store::studies::{self, Study};
use crate::store::{DbConnection, audit, now};

impl From<ProlificError> for Error {
    fn from(e: ProlificError) -> Self {
        Error::Prolific(e)
    }
}

fn study(conn: &mut DbConnection, slug: &str) -> Result<Study> {
    studies::load(conn, slug)?.ok_or_else(|| Error::NoStudy(slug.to_owned()))
}

fn linked_study(conn: &mut DbConnection, slug: &str) -> Result<(Study, ProlificStudy, String)> {
    let s = study(conn, slug)?;
    let p = pstore::get(conn, s.id)?;
    match p {
        Some(p) => match p.prolific_study_id.clone() {
            Some(id) => Ok((s, p, id)),
            None => Err(no_draft(slug)),
        },
        None => Err(no_draft(slug)),
    }
}

fn no_draft(slug: &str) -> Error {
    invalid(format!(
        "study {slug:?} has no Prolific draft yet: create it first (`emotionbench prolific draft \
         --study {slug}` or the study's Prolific page)"
    ))
}

/// A study's Prolific state for the pages: its settings (if any) and the defaults a first
/// draft would use.
#[derive(Debug, Clone)]
pub struct Overview {
    pub settings: Option<ProlificStudy>,
    pub default_places: i32,
    /// The estimate from our completions, or `None` (the default is then sent).
    pub estimated_minutes: Option<u32>,
}

pub fn overview(conn: &mut DbConnection, slug: &str) -> Result<Overview> {
    let s = study(conn, slug)?;
    Ok(Overview {
        settings: pstore::get(conn, s.id)?,
        default_places: default_places(conn, &s)?,
        estimated_minutes: rules::estimated_minutes(&pstore::completion_seconds(conn, s.id)?),
    })
}

fn default_places(conn: &mut DbConnection, s: &Study) -> Result<i32> {
    let n = pstore::situation_count(conn, s.situation_set_id)?;
    Ok(i32::try_from(n.saturating_mul(i64::from(s.target_per_situation))).unwrap_or(i32::MAX))
}

/// What `draft` did.
#[derive(Debug, Clone)]
pub struct DraftOutcome {
    pub prolific_study_id: String,
    /// Created now (else an existing draft was updated).
    pub created: bool,
    pub estimated_minutes: u32,
    /// The estimate came from our completions (else it is [`DEFAULT_ESTIMATED_MINUTES`]).
    pub estimated_from_data: bool,
    pub places: i32,
    pub codes: Vec<(String, &'static str, Vec<&'static str>)>,
}

/// Creates the study's Prolific draft, or updates it when there is one: title, description,
/// the external URL with Prolific's placeholders under our parameter names, the completion
/// codes with their actions, places, reward and the estimated time (our median completion
/// time, or the stated default without completions). The settings are saved first, so a
/// failed request leaves them for the next try.
pub fn draft(
    conn: &mut DbConnection,
    client: &ProlificClient,
    public_base: &str,
    slug: &str,
    input: &DraftSettings,
    actor: &audit::Actor,
) -> Result<DraftOutcome> {
    let s = study(conn, slug)?;
    if input.reward_cents <= 0 {
        return Err(invalid(
            "the reward must be a positive amount in cents (or pence)",
        ));
    }
    if input.description.trim().is_empty() {
        return Err(invalid(
            "Prolific shows participants a description: write one",
        ));
    }
    if input.places.is_some_and(|p| p <= 0) {
        return Err(invalid("places must be at least 1"));
    }
    if input
        .screen_out_reward_cents
        .is_some_and(|r| r <= 0 || r >= input.reward_cents)
    {
        return Err(invalid(
            "the screen-out payment must be positive and less than the reward",
        ));
    }
    let places = match input.places {
        Some(p) => p,
        None => default_places(conn, &s)?,
    };
    if places <= 0 {
        return Err(invalid(
            "the study has no situations to fill: set the places explicitly",
        ));
    }
    let codes = rules::completion_codes(
        &StudyCodes {
            completed: s.code_completed.clone(),
            no_consent: s.code_no_consent.clone(),
            failed_check: s.code_failed_check.clone(),
            screened_out: s.code_screened_out.clone(),
        },
        CodeRules {
            auto_approve: input.auto_approve,
            screen_out_reward_cents: input.screen_out_reward_cents,
            places,
        },
    )
    .map_err(Error::Invalid)?;
    let measured = rules::estimated_minutes(&pstore::completion_seconds(conn, s.id)?);
    let minutes = measured.unwrap_or(DEFAULT_ESTIMATED_MINUTES);
    conn.write_transaction(|conn| pstore::save_settings(conn, s.id, input))?;
    let existing = pstore::get(conn, s.id)?.and_then(|p| p.prolific_study_id);
    let body = StudyDraft {
        name: s.title.clone(),
        internal_name: format!("emotionbench:{}", s.slug),
        description: input.description.trim().to_owned(),
        external_study_url: rules::external_study_url(
            public_base,
            &s.slug,
            &s.pid_param,
            &s.study_id_param,
            &s.session_id_param,
        ),
        prolific_id_option: "url_parameters",
        completion_codes: codes.clone(),
        total_available_places: places,
        reward: input.reward_cents,
        estimated_completion_time: minutes,
    };
    let (made, created) = match &existing {
        Some(id) => (client.update_study(id, &body)?, false),
        None => (client.create_study(&body)?, true),
    };
    let minutes_i = i32::try_from(minutes).unwrap_or(i32::MAX);
    conn.write_transaction(|conn| {
        pstore::set_drafted(conn, s.id, &made.id, minutes_i)?;
        audit::record(
            conn,
            actor,
            if created {
                "prolific.draft.create"
            } else {
                "prolific.draft.update"
            },
            Some(&s.slug),
            Some(&json!({
                "prolific_study_id": made.id,
                "places": places,
                "reward_cents": input.reward_cents,
                "estimated_minutes": minutes,
                "estimated_from_data": measured.is_some(),
                "auto_approve": input.auto_approve,
                "completion_codes": codes,
            })),
        )?;
        Ok::<_, Error>(())
    })?;
    Ok(DraftOutcome {
        prolific_study_id: made.id,
        created,
        estimated_minutes: minutes,
        estimated_from_data: measured.is_some(),
        places,
        codes: codes
            .iter()
            .map(|c| {
                (
                    c.code.clone(),
                    c.code_type,
                    c.actions.iter().map(|a| a.action).collect(),
                )
            })
            .collect(),
    })
}

/// The study's submissions on Prolific.
pub fn submissions(
    conn: &mut DbConnection,
    client: &ProlificClient,
    slug: &str,
) -> Result<Vec<Submission>> {
    let (_, _, id) = linked_study(conn, slug)?;
    Ok(client.submissions(&id)?)
}

/// What `approve` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    pub approved: usize,
    pub requests: usize,
}

/// Approves submissions in bulk, at most [`BULK_APPROVE_MAX`] per request. `ids`: these
/// submissions (each must be the study's and awaiting review); `None`: every submission of
/// the study awaiting review. Each request that Prolific accepted is audited with its ids; a
/// failure stops there and says how many went through.
pub fn approve(
    conn: &mut DbConnection,
    client: &ProlificClient,
    slug: &str,
    ids: Option<&[String]>,
    actor: &audit::Actor,
) -> Result<Approved> {
    let (s, _, pid) = linked_study(conn, slug)?;
    let all = client.submissions(&pid)?;
    let awaiting: Vec<&Submission> = all
        .iter()
        .filter(|x| SubmissionStatus::parse(&x.status) == Some(SubmissionStatus::AwaitingReview))
        .collect();
    let chosen: Vec<String> = match ids {
        None => awaiting.iter().map(|x| x.id.clone()).collect(),
        Some(ids) => {
            for id in ids {
                if !awaiting.iter().any(|x| &x.id == id) {
                    return Err(invalid(format!(
                        "submission {id:?} is not one of this study's submissions awaiting review"
                    )));
                }
            }
            ids.to_vec()
        }
    };
    let mut done = Approved {
        approved: 0,
        requests: 0,
    };
    for chunk in chosen.chunks(BULK_APPROVE_MAX) {
        if let Err(e) = client.bulk_approve(chunk) {
            // The requests before this one went through (and are audited): say so.
            return Err(if done.requests == 0 {
                e.into()
            } else {
                invalid(format!(
                    "{e} (approved before this request: {} in {} request(s))",
                    done.approved, done.requests
                ))
            });
        }
        done.approved += chunk.len();
        done.requests += 1;
        conn.write_transaction(|conn| {
            audit::record(
                conn,
                actor,
                "prolific.approve",
                Some(&s.slug),
                Some(&json!({"prolific_study_id": pid, "submission_ids": chunk})),
            )
        })?;
    }
    Ok(done)
}

/// Rejects one submission with one of Prolific's categories and a message of at least 100
/// characters; both are checked before anything is sent.
pub fn reject(
    conn: &mut DbConnection,
    client: &ProlificClient,
    slug: &str,
    submission: &str,
    category: &str,
    message: &str,
    actor: &audit::Actor,
) -> Result<String> {
    let (category, message) = rules::check_rejection(category, message).map_err(Error::Invalid)?;
    let (s, _, pid) = linked_study(conn, slug)?;
    let status = client.reject(submission, category, &message)?;
    conn.write_transaction(|conn| {
        audit::record(
            conn,
            actor,
            "prolific.reject",
            Some(&s.slug),
            Some(&json!({
                "prolific_study_id": pid,
                "submission_id": submission,
                "rejection_category": category.as_str(),
                "message": message,
            })),
        )
    })?;
    Ok(status)
}

/// Asks the participant of one submission to return it, with the reasons given.
pub fn request_return(
    conn: &mut DbConnection,
    client: &ProlificClient,
    slug: &str,
    submission: &str,
    reasons: &[String],
    actor: &audit::Actor,
) -> Result<()> {
    let reasons = rules::check_return_reasons(reasons).map_err(Error::Invalid)?;
    let (s, _, pid) = linked_study(conn, slug)?;
    client.request_return(submission, &reasons)?;
    conn.write_transaction(|conn| {
        audit::record(
            conn,
            actor,
            "prolific.request_return",
            Some(&s.slug),
            Some(&json!({
                "prolific_study_id": pid,
                "submission_id": submission,
                "request_return_reasons": reasons,
            })),
        )
    })?;
    Ok(())
}

/// One row of the reconciliation: a participant here, a submission there, or both.
#[derive(Debug, Clone)]
pub struct ReconcileRow {
    pub prolific_pid: String,
    pub submission_id: Option<String>,
    /// Our export id (the participant's pseudonym in exports), when we have the participant.
    pub export_id: Option<String>,
    pub ours: String,
    pub theirs: Option<String>,
    pub suggestion: Suggestion,
    pub participant: Option<crate::store::ParticipantId>,
}

/// Each participant's Prolific status next to ours and what it suggests (rows that need an
/// action first).
pub fn reconcile(
    conn: &mut DbConnection,
    client: &ProlificClient,
    slug: &str,
) -> Result<Vec<ReconcileRow>> {
    let (s, _, pid) = linked_study(conn, slug)?;
    let subs = client.submissions(&pid)?;
    let ours = pstore::linked(conn, s.id)?;
    let at = now();
    let mut rows = Vec::new();
    let mut used = vec![false; subs.len()];
    for p in &ours {
        let found = subs.iter().position(|x| {
            p.prolific_session_id.as_deref() == Some(x.id.as_str())
                || p.prolific_pid.as_deref() == Some(x.participant_id.as_str())
        });
        if let Some(i) = found {
            used[i] = true;
        }
        let theirs = found.map(|i| &subs[i]);
        let o = Ours {
            status: p.status,
            holds_place: p.holds_place(at),
        };
        rows.push(ReconcileRow {
            prolific_pid: p.prolific_pid.clone().unwrap_or_default(),
            submission_id: theirs.map(|x| x.id.clone()),
            export_id: Some(p.export_id.clone()),
            ours: p.status.as_str().to_owned(),
            theirs: theirs.map(|x| x.status.clone()),
            suggestion: rules::suggest(Some(o), theirs.map(|x| x.status.as_str())),
            participant: Some(p.id),
        });
    }
    for (x, _) in subs.iter().zip(&used).filter(|(_, u)| !**u) {
        rows.push(ReconcileRow {
            prolific_pid: x.participant_id.clone(),
            submission_id: Some(x.id.clone()),
            export_id: None,
            ours: "none".into(),
            theirs: Some(x.status.clone()),
            suggestion: rules::suggest(None, Some(&x.status)),
            participant: None,
        });
    }
    rows.sort_by_key(|r| r.suggestion.action == Action::Nothing);
    Ok(rows)
}

/// Releases the reservations the reconciliation suggests releasing (participants who returned
/// or timed out on Prolific and still hold a place here). Returns how many were released.
pub fn release_returned(
    conn: &mut DbConnection,
    client: &ProlificClient,
    slug: &str,
    actor: &audit::Actor,
) -> Result<usize> {
    let rows = reconcile(conn, client, slug)?;
    let mut released = 0;
    for r in rows
        .iter()
        .filter(|r| r.suggestion.action == Action::ReleaseReservation)
    {
        let Some(id) = r.participant else { continue };
        let done = conn.write_transaction(|conn| {
            let done = pstore::release_reservation(conn, id)?;
            if done {
                audit::record(
                    conn,
                    actor,
                    "prolific.release",
                    Some(slug),
                    Some(&json!({
                        "participant": r.export_id,
                        "submission_id": r.submission_id,
                        "prolific_status": r.theirs,
                    })),
                )?;
            }
            Ok::<_, Error>(done)
        })?;
        released += usize::from(done);
    }
    Ok(released)
}

/// Why a webhook call was not acted on; each maps to its HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookRefusal {
    /// No secret configured: nothing can be verified (503).
    NotConfigured,
    /// Missing or wrong signature or timestamp (401).
    BadSignature,
    /// Signed, but without an event id, or a body that is not the documented JSON (400).
    Malformed(String),
}

/// What a verified webhook call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// The event id was seen before: acknowledged, nothing changed.
    Duplicate,
    /// A return or a time-out whose participant held a place here: released now.
    Released,
    /// Recorded; nothing to do here (another event type or status, or no such participant).
    Recorded(&'static str),
}

/// The webhook's input, as the handler read it.
pub struct HookCall<'a> {
    pub signature: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub event_id: Option<&'a str>,
    pub body: &'a [u8],
}

/// Handles one webhook call: verifies the signature over timestamp + body (constant time),
/// records the event id (a repeated id changes nothing), and on a `submission.status.change`
/// to RETURNED or TIMED-OUT releases that participant's reservation at once, so the next
/// arrival gets the situation. Payload: `{"resource_id", "event_type", "participant_id",
/// "status"}` (<https://docs.prolific.com/api-reference/webhooks/receiving>).
pub fn webhook(
    conn: &mut DbConnection,
    secret: Option<&crate::config::Secret>,
    call: &HookCall<'_>,
) -> Result<std::result::Result<HookOutcome, HookRefusal>> {
    let Some(secret) = secret else {
        return Ok(Err(HookRefusal::NotConfigured));
    };
    let (Some(sig), Some(ts)) = (call.signature, call.timestamp) else {
        return Ok(Err(HookRefusal::BadSignature));
    };
    if !signature::verify(secret.expose(), ts, call.body, sig) {
        return Ok(Err(HookRefusal::BadSignature));
    }
    let Some(event_id) = call.event_id.map(str::trim).filter(|e| !e.is_empty()) else {
        return Ok(Err(HookRefusal::Malformed("no X-Event-ID header".into())));
    };
    let v: serde_json::Value = match serde_json::from_slice(call.body) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Err(HookRefusal::Malformed(format!(
                "body is not JSON: {e}"
            ))));
        }
    };
    let Some(event_type) = v["event_type"].as_str() else {
        return Ok(Err(HookRefusal::Malformed("no event_type".into())));
    };
    let resource = v["resource_id"].as_str();
    let status = v["status"].as_str();
    let pid = v["participant_id"].as_str();
    conn.write_transaction(|conn| {
        // The submission id is not kept: it is Prolific's id of a person's submission, and
        // the participant row (which retention deletes) is the only link we keep to it.
        let fresh = pstore::record_event(
            conn,
            &Event {
                event_id,
                event_type,
                resource_id: None,
                status,
            },
        )?;
        if !fresh {
            return Ok(Ok(HookOutcome::Duplicate));
        }
        let gave_up = event_type == "submission.status.change"
            && status
                .and_then(SubmissionStatus::parse)
                .is_some_and(SubmissionStatus::gave_up_the_place);
        let Some(resource) = resource.filter(|_| gave_up) else {
            pstore::set_event_outcome(conn, event_id, None, "ignored")?;
            return Ok(Ok(HookOutcome::Recorded("nothing to do for this event")));
        };
        let Some(p) = pstore::for_submission(conn, resource, pid)? else {
            pstore::set_event_outcome(conn, event_id, None, "no participant")?;
            return Ok(Ok(HookOutcome::Recorded("no participant here for this submission")));
        };
        if !pstore::release_reservation(conn, p.id)? {
            pstore::set_event_outcome(conn, event_id, Some(p.id), "nothing held")?;
            return Ok(Ok(HookOutcome::Recorded("the participant held no place")));
        }
        pstore::set_event_outcome(conn, event_id, Some(p.id), "released")?;
        audit::record(
            conn,
            &audit::Actor::ProlificWebhook,
            "prolific.release",
            Some(&p.export_id),
            Some(&json!({"event_id": event_id, "submission_id": resource, "prolific_status": status})),
        )?;
        Ok(Ok(HookOutcome::Released))
    })
}
