//! The survey's use case: a participant's page submit. The page decision (which move a form
//! asks for, or why it cannot be stored) over `domain::survey`'s parsers, and the one trip to
//! the database that stores it. The HTTP handler (`survey::pages::post`) runs it through
//! `AppState::survey_db` (on SQLite the writer) and renders the outcome.

use crate::domain::freetext::{self, HumanTextError};
use crate::domain::instrument::Instrument;
use crate::domain::measure::Measure;
use crate::domain::survey::{
    ATTENTION_CHECK, CONSENT_FIELD, FormErrors, HONEYPOT_FIELD, Outcome, Page, PageEvent,
    ParticipantStatus, SessionKey, grade_check, parse_demographics, parse_questionnaire,
};
use crate::store::participants::{
    self, Arrival, Created, Effect, FreeTextAnswer, Participant, Submitted,
};
use crate::store::studies::Study;
use crate::store::{DbConnection, StoreError, instruments};

/// The situation page's free-text field as participants get it (#18): the study's setting
/// with the prompt of its task resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextField {
    pub task: String,
    pub prompt: String,
    pub required: bool,
    pub max_chars: u32,
}

/// The study's free-text field, if it has one. A study whose task is gone, is not a free-text
/// task or has no target is an inconsistency (the study form refuses to save one), never a
/// page without the field: participants would be asked less than the study says.
pub fn text_field(conn: &mut DbConnection, study: &Study) -> Result<Option<TextField>, StoreError> {
    let Some(f) = &study.free_text.0 else {
        return Ok(None);
    };
    let prompt = match instruments::load(conn, &f.task)? {
        Some((_, task)) if task.is_free_text() => freetext::human_prompt(&task),
        _ => None,
    };
    let prompt = prompt.ok_or_else(|| {
        StoreError::Inconsistent(format!(
            "study {} asks the free-text task {:?}, which is not a free-text task with a target",
            study.slug, f.task
        ))
    })?;
    Ok(Some(TextField {
        task: f.task.clone(),
        prompt,
        required: f.required,
        max_chars: f.max_chars,
    }))
}

/// A submitted survey page: whose (the key in the study's cookie), which page the form was
/// posted to (`None`: no page of ours), and its fields.
pub struct PageForm {
    pub key: SessionKey,
    pub page: Option<Page>,
    pub fields: Vec<(String, String)>,
}

/// What a page's form asks to store, or why it cannot be stored.
enum Decision {
    Submit(Page, Effect),
    /// Incomplete or out-of-range answers: the page again with the messages (422).
    Invalid(FormErrors),
    /// A form no page of ours sends (400).
    BadRequest(String),
}

/// What the situation page's submit needs besides its form (read only on that page).
#[derive(Default)]
struct SituationState {
    /// When the page was first shown (for its minimum time).
    shown: Option<chrono::NaiveDateTime>,
    /// The study's free-text field.
    field: Option<TextField>,
}

/// Reads the form of the participant's current page `current` into the move it asks for.
fn decide(
    study: &Study,
    instrument: &Instrument,
    p: &Participant,
    current: Page,
    fields: &[(String, String)],
    ignored: &[&str],
    situation: &SituationState,
) -> Decision {
    let extra = ignored;
    let invalid = |e: FormErrors| {
        if e.general.is_empty() {
            Decision::Invalid(e)
        } else {
            Decision::BadRequest(e.general.join("; "))
        }
    };
    let only_ignored = || fields.iter().all(|(k, _)| ignored.contains(&k.as_str()));
    match current {
        Page::Consent => match parse_consent(fields, ignored) {
            Ok(consent) => {
                let (to, effect) = consent_move(consent);
                Decision::Submit(to, effect)
            }
            Err(m) => Decision::BadRequest(m),
        },
        Page::Demographics => {
            match parse_demographics(&study.demographic_fields(), this_year(), fields, extra) {
                Ok(d) => Decision::Submit(Page::PanasBefore, Effect::Demographics(d)),
                Err(e) => invalid(e),
            }
        }
        Page::PanasBefore | Page::PanasAfter => {
            let order = p.order(current, instrument.items.len());
            match parse_questionnaire(instrument, &order, fields, extra) {
                Ok(a) => Decision::Submit(
                    current.next().unwrap_or(Page::Done),
                    Effect::Answers {
                        phase: current.phase().unwrap_or(Measure::Default),
                        answers: a.answers,
                    },
                ),
                Err(e) => invalid(e),
            }
        }
        Page::Situation => {
            // Whatever the honeypot holds is evidence, never a reason to refuse the page
            // (nothing rejects); only the study's free text, missing or too long, brings the
            // page back.
            let (honeypot, text) = match parse_situation(fields, ignored, situation.field.as_ref())
            {
                Ok(form) => form,
                Err(SituationRefused::BadRequest(m)) => return Decision::BadRequest(m),
                Err(SituationRefused::Text(e)) => return Decision::Invalid(e),
            };
            let seconds = situation
                .shown
                .map_or(0, |s| (crate::store::now() - s).num_seconds());
            Decision::Submit(
                Page::PanasAfter,
                Effect::Situation {
                    too_fast: seconds < i64::from(study.min_situation_seconds),
                    honeypot,
                    text,
                },
            )
        }
        Page::Check => match grade_check(fields, extra) {
            Ok((answer, passed)) => Decision::Submit(
                Page::Debrief,
                Effect::Check {
                    key: ATTENTION_CHECK.key.to_owned(),
                    answer,
                    passed,
                },
            ),
            Err(e) => invalid(e),
        },
        Page::Debrief => {
            if !only_ignored() {
                return Decision::BadRequest("unexpected fields".into());
            }
            if p.flag_failed_check && study.check_failure_ends() {
                Decision::Submit(Page::Ended, Effect::End(Outcome::FailedAttentionCheck))
            } else {
                Decision::Submit(Page::Done, Effect::Complete)
            }
        }
        // Not reached: final pages take no submissions (the caller redirects first).
        Page::Done | Page::Ended | Page::Withdrawn => {
            Decision::BadRequest("This page takes no answers.".into())
        }
    }
}

/// The consent form's answer: `true` to take part. Any field but the answer and the `ignored`
/// ones makes the form one no page of ours sends.
pub fn parse_consent(fields: &[(String, String)], ignored: &[&str]) -> Result<bool, String> {
    let answer: Vec<&str> = fields
        .iter()
        .filter(|(k, _)| k == CONSENT_FIELD)
        .map(|(_, v)| v.as_str())
        .collect();
    let unexpected = fields
        .iter()
        .any(|(k, _)| k != CONSENT_FIELD && !ignored.contains(&k.as_str()));
    match (answer.as_slice(), unexpected) {
        (["yes"], false) => Ok(true),
        (["no"], false) => Ok(false),
        _ => Err("Please choose whether you agree to take part.".into()),
    }
}

/// The key of [`FormErrors::items`] under which the situation page's free-text error is
/// given (the page has no numbered items).
pub const TEXT_ERROR: u32 = 0;

/// The catalogue id of the message for a required free text left empty.
pub const TEXT_MISSING: &str = "free-text-missing";
/// The catalogue id of the message for a free text over the study's limit.
pub const TEXT_TOO_LONG: &str = "free-text-too-long";

/// Why the situation page's form was not stored.
enum SituationRefused {
    /// The free text is missing (required) or too long: the page again, the text kept.
    Text(FormErrors),
    /// A form no page of ours sends.
    BadRequest(String),
}

/// The situation page's form: whether its hidden honeypot field came back non-empty, and the
/// free-text answer when the study has the field (`None`: none given). Any field but these
/// and the `ignored` ones (the free text too, when the study has no field) makes the form one
/// no page of ours sends.
fn parse_situation(
    fields: &[(String, String)],
    ignored: &[&str],
    text_field: Option<&TextField>,
) -> Result<(bool, Option<FreeTextAnswer>), SituationRefused> {
    let mut filled = false;
    let mut texts = Vec::new();
    for (k, v) in fields {
        if k == HONEYPOT_FIELD {
            filled |= !v.trim().is_empty();
        } else if k == freetext::HUMAN_FIELD && text_field.is_some() {
            texts.push(v.as_str());
        } else if !ignored.contains(&k.as_str()) {
            return Err(SituationRefused::BadRequest("unexpected fields".into()));
        }
    }
    let Some(field) = text_field else {
        return Ok((filled, None));
    };
    let refuse = |message: String| {
        let mut e = FormErrors::default();
        e.items.insert(TEXT_ERROR, message);
        SituationRefused::Text(e)
    };
    match freetext::human_answer(&texts, field.required, field.max_chars) {
        Ok(body) => Ok((
            filled,
            body.map(|body| FreeTextAnswer {
                task: field.task.clone(),
                prompt: field.prompt.clone(),
                body,
            }),
        )),
        // The messages are catalogue ids: the page words them in the participant's language.
        Err(HumanTextError::Missing) => Err(refuse(TEXT_MISSING.into())),
        Err(HumanTextError::TooLong { .. }) => Err(refuse(TEXT_TOO_LONG.into())),
        Err(HumanTextError::Twice) => Err(SituationRefused::BadRequest("unexpected fields".into())),
    }
}

/// Where a consent answer leads and what it stores.
fn consent_move(consent: bool) -> (Page, Effect) {
    if consent {
        (Page::Demographics, Effect::Consent)
    } else {
        (Page::Ended, Effect::End(Outcome::NoConsent))
    }
}

/// A consent form sent by a browser that has no participant yet: the participant it makes.
pub struct Arrived {
    /// The new participant's session secret (the owner's cookie).
    pub public_id: String,
    pub arrival: Arrival,
    /// Item orders of the two questionnaire pages.
    pub orders: (Vec<u32>, Vec<u32>),
    pub consent: bool,
    /// When its consent page was shown (recorded as that page's "shown" event).
    pub shown_at: chrono::NaiveDateTime,
}

/// The participant's row is made here, at the consent answer, not when the link is opened
/// (issue #14, point 6): following a link stores nothing, so only people who answered the
/// consent page exist and count. When the same form was sent twice (a double tap) or the
/// Prolific id already has a participant, that one is returned and nothing changes.
///
/// Two statements, as when the link made the row and the consent moved it: the INSERT
/// commits on its own, then the consent's transaction (which on Postgres takes the study's
/// advisory assignment lock). The INSERT stays outside that transaction so that the lock,
/// which every consent of the study waits for, is never held across it; it once also had to
/// (its foreign-key lock on the study row deadlocked the row lock consents then took).
/// A crash between the two leaves a participant on the consent page, which counts nowhere
/// (assignment, monitor) and which the same form, sent again, takes on from there.
pub fn begin(
    conn: &mut DbConnection,
    study: &Study,
    form: Arrived,
) -> Result<Participant, StoreError> {
    // Never later than now (the clocks of two replicas may differ by a little).
    let shown = form.shown_at.min(crate::store::now());
    let created = participants::create(
        conn,
        study,
        &form.public_id,
        &form.arrival,
        form.orders,
        shown,
    )?;
    let p = match created {
        Created::New(p) => p,
        Created::Found(p) => {
            if p.page() != Page::Consent || p.status != ParticipantStatus::Active {
                return Ok(p);
            }
            // Left on the consent page by a crash after its INSERT (see above).
            participants::record_event_at(conn, p.id, Page::Consent, PageEvent::Shown, shown)?;
            p
        }
    };
    let (to, effect) = consent_move(form.consent);
    let (_, now): (Submitted, _) =
        participants::submit_and_get(conn, study, p.id, Page::Consent, to, effect)?;
    Ok(now)
}

/// The current year (demographics ask for a birth year and check it against this).
pub fn this_year() -> i32 {
    use chrono::Datelike;
    chrono::Utc::now().year()
}

/// How a page submit ended, from its one trip to the database.
pub enum Posted {
    /// No participant of this browser in this study.
    NoParticipant,
    /// The participant as it now is: moved on by this submit, or already elsewhere (a double
    /// click, Back + resubmit, a forged URL), in which case nothing changed.
    Moved(Participant),
    /// The form needs correcting: nothing was stored.
    Invalid(Participant, Vec<(String, String)>, FormErrors),
    BadRequest(String),
}

/// A page submit in one trip to the database: the participant, the form read against their
/// current page, and `participants::submit` (one transaction that first moves the participant
/// on with a conditional UPDATE, so a double submit stores nothing twice). The participant is
/// read outside that transaction; the UPDATE's condition (still on this page, still active)
/// is what makes the move safe, exactly as when the two were separate requests to the pool.
///
/// `ignored` names the fields the web edge adds to every form (its CSRF token): accepted on any
/// page, never stored.
pub fn submit_page(
    conn: &mut DbConnection,
    study: &Study,
    instrument: &Instrument,
    form: PageForm,
    ignored: &[&str],
) -> Result<Posted, StoreError> {
    let PageForm {
        key,
        page: requested,
        fields,
    } = form;
    let Some(p) = participants::by_key(conn, study.id, &key)? else {
        return Ok(Posted::NoParticipant);
    };
    let current = p.page();
    if requested != Some(current) || current.is_terminal() {
        return Ok(Posted::Moved(p));
    }
    let situation = if current == Page::Situation {
        SituationState {
            shown: participants::first_shown(conn, p.id, Page::Situation)?,
            field: text_field(conn, study)?,
        }
    } else {
        SituationState::default()
    };
    match decide(study, instrument, &p, current, &fields, ignored, &situation) {
        Decision::Submit(to, effect) => {
            // A stale submit (another tab or a double click got there first) changes
            // nothing; either way the participant continues from wherever they now are.
            let (_, now): (Submitted, _) =
                participants::submit_and_get(conn, study, p.id, current, to, effect)?;
            Ok(Posted::Moved(now))
        }
        Decision::Invalid(e) => Ok(Posted::Invalid(p, fields, e)),
        Decision::BadRequest(m) => Ok(Posted::BadRequest(m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(required: bool) -> TextField {
        TextField {
            task: "SAY".into(),
            prompt: "Say something about cats.".into(),
            required,
            max_chars: 5,
        }
    }

    fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn refused_with(r: Result<(bool, Option<FreeTextAnswer>), SituationRefused>) -> String {
        match r {
            Err(SituationRefused::Text(e)) => e.items[&TEXT_ERROR].clone(),
            Err(SituationRefused::BadRequest(m)) => format!("400 {m}"),
            Ok(_) => "stored".into(),
        }
    }

    #[test]
    fn the_situation_form_takes_the_free_text_only_when_the_study_asks_one() {
        let hp = HONEYPOT_FIELD;
        let ok = parse_situation(
            &form(&[(hp, ""), ("free_text", " héllo ")]),
            &[],
            Some(&field(true)),
        );
        let Ok((false, Some(answer))) = ok else {
            panic!("not stored");
        };
        assert_eq!(
            (
                answer.task.as_str(),
                answer.prompt.as_str(),
                answer.body.as_str()
            ),
            ("SAY", "Say something about cats.", "héllo")
        );
        // Its Debug (an Effect may reach a log line) shows the length, never the words.
        assert!(!format!("{answer:?}").contains("héllo"));
        assert!(matches!(
            parse_situation(&form(&[(hp, "x")]), &[], Some(&field(false))),
            Ok((true, None))
        ));
        let no_field = parse_situation(&form(&[("free_text", "hi")]), &[], None);
        assert_eq!(refused_with(no_field), "400 unexpected fields");
        let twice = form(&[("free_text", "a"), ("free_text", "b")]);
        assert_eq!(
            refused_with(parse_situation(&twice, &[], Some(&field(false)))),
            "400 unexpected fields"
        );
        let long = form(&[("free_text", "abcdef")]);
        assert_eq!(
            refused_with(parse_situation(&long, &[], Some(&field(false)))),
            TEXT_TOO_LONG
        );
        assert_eq!(
            refused_with(parse_situation(&form(&[]), &[], Some(&field(true)))),
            TEXT_MISSING
        );
    }
}
