//! Protocols that mirror what the human participants did (#17).
//!
//! - `paper`: the paper's separate prompts (one request per measure; see [`super::prompt`]).
//! - `within-session`: one conversation, as a participant's session: the questionnaire "right
//!   now", then the situation and the questionnaire again. The model's first answer stays in
//!   the conversation when it reads the situation, as the participant's did.
//! - `persona`: the same conversation, one per human participant of the study, the model told
//!   that person's profile (gender, age from the year of birth, country, employment, education)
//!   and shown their own item orders.
//!
//! The texts a participant reads (page headings, instructions, the situation page) are defined
//! here once: the survey pages (`survey::pages`, `templates/survey/situation.html`) render these
//! same constants, so a conversation carries exactly what the humans were shown. The one
//! sentence the humans never read is [`reply_format`]: a participant clicks a radio button, a
//! model has to be told how to write its answers down so that they can be read back.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::instrument::Instrument;
use super::prompt::{ChatMessage, PromptError};

/// How a run asks its questions (`RunParams::protocol`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum Protocol {
    /// The paper's separate prompts: a default-measure request and an evoked-measure request.
    #[default]
    Paper,
    /// Questionnaire, situation, questionnaire again, in one conversation.
    WithinSession,
    /// The within-session conversation once per human participant, as that person.
    Persona,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Paper, Protocol::WithinSession, Protocol::Persona];

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Paper => "paper",
            Protocol::WithinSession => "within-session",
            Protocol::Persona => "persona",
        }
    }

    /// Exactly what [`Protocol::as_str`] writes.
    pub fn parse(s: &str) -> Option<Protocol> {
        Self::ALL.into_iter().find(|p| p.as_str() == s.trim())
    }

    /// A trial of this protocol is a two-turn conversation.
    pub fn is_conversation(self) -> bool {
        !matches!(self, Protocol::Paper)
    }

    /// One sentence for forms and reports.
    pub fn describe(self) -> &'static str {
        match self {
            Protocol::Paper => "separate prompts per measure, as the paper",
            Protocol::WithinSession => {
                "questionnaire, situation, questionnaire again, in one conversation"
            }
            Protocol::Persona => {
                "one within-session conversation per human participant, told their profile"
            }
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------------
// What the participants read (the survey pages render these constants)
// ---------------------------------------------------------------------------------------------

/// The heading of the questionnaire before the situation.
pub const BEFORE_HEADING: &str = "How do you feel right now?";
/// The heading of the questionnaire after the situation.
pub const AFTER_HEADING: &str = "How do you feel, imagining yourself in that situation?";
/// The heading of the situation page.
pub const SITUATION_HEADING: &str = "Imagine this situation";
/// The paragraph above the situation.
pub const SITUATION_INTRO: &str = "Please read the situation below carefully. Then imagine, as \
vividly as you can, that you are the person in it and that it is happening to you now. Take \
your time.";

/// Before the situation, for PANAS (its items are single feeling words).
const BEFORE_INSTRUCTIONS: &str = "This scale consists of a number of words that describe \
different feelings and emotions. Read each item and then choose the answer that fits. \
Indicate to what extent you feel this way right now, that is, at the present moment.";

/// Before the situation, for instruments other than PANAS (whose items are statements, not
/// single feeling words).
const BEFORE_INSTRUCTIONS_STATEMENTS: &str = "Read each statement and choose the answer that \
fits how you feel right now, that is, at the present moment.";

/// Added when the instrument's items carry their own options (BDI: groups of statements).
const OWN_OPTIONS_INSTRUCTIONS: &str = " Each group below lists statements: choose the one \
that fits best.";

const AFTER_INSTRUCTIONS: &str = "Now imagine that you are the person in the situation you \
just read. Read each item and choose the answer that fits: to what extent do you feel this \
way now, imagining yourself in that situation?";

/// The instructions above a questionnaire page, before or after the situation.
pub fn questionnaire_instructions(instrument: &Instrument, before: bool) -> String {
    let mut text = match (before, instrument.key.eq_ignore_ascii_case("PANAS")) {
        (true, true) => BEFORE_INSTRUCTIONS,
        (true, false) => BEFORE_INSTRUCTIONS_STATEMENTS,
        (false, _) => AFTER_INSTRUCTIONS,
    }
    .to_owned();
    if instrument.items.iter().any(|i| !i.options.is_empty()) {
        text.push_str(OWN_OPTIONS_INSTRUCTIONS);
    }
    text
}

/// The label of one answer on the survey's radio buttons: `"3 – Moderately"`, or the bare
/// number where the instrument labels only some values.
pub fn answer_label(instrument: &Instrument, value: i32) -> String {
    match instrument.label_for(value) {
        Some(l) => format!("{value} – {l}"),
        None => value.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Personas
// ---------------------------------------------------------------------------------------------

/// One human participant's profile as a persona trial states it (`model_trials.persona`).
/// Values are the participant's answers verbatim; a field they left empty is None.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persona {
    /// The participant's export id (the exports' pseudonymous id), to pair trial and person.
    pub participant: String,
    pub gender: Option<String>,
    /// In whole years: the year the participant took part minus their year of birth.
    pub age: Option<i32>,
    pub country: Option<String>,
    pub employment: Option<String>,
    pub education: Option<String>,
}

/// What a participant may answer instead of a value; not a fact to tell the model.
const PREFER_NOT: &str = "Prefer not to say";

fn answer(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case(PREFER_NOT))
        .map(str::to_owned)
}

impl Persona {
    /// The profile from the survey's demographic answers (`gender`, `year_of_birth`,
    /// `country`, `employment_status`, `education`; see `study::DEFAULT_DEMOGRAPHICS`), the
    /// age counted at `year`, the year the participant took part. A year of birth that is not
    /// a year, or gives an age outside 0..=120, leaves the age unknown.
    pub fn from_answers(
        participant: &str,
        get: impl Fn(&str) -> Option<String>,
        year: i32,
    ) -> Persona {
        let age = answer(get("year_of_birth").as_deref())
            .and_then(|y| y.parse::<i32>().ok())
            .map(|born| year - born)
            .filter(|a| (0..=120).contains(a));
        Persona {
            participant: participant.to_owned(),
            gender: answer(get("gender").as_deref()),
            age,
            country: answer(get("country").as_deref()),
            employment: answer(get("employment_status").as_deref()),
            education: answer(get("education").as_deref()),
        }
    }

    /// [`Persona::from_answers`] over the stored demographic answers (a JSON object; numbers
    /// are read as their decimal text, anything else as unanswered).
    pub fn from_json(
        participant: &str,
        answers: &serde_json::Map<String, serde_json::Value>,
        year: i32,
    ) -> Persona {
        Persona::from_answers(
            participant,
            |k| match answers.get(k)? {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            },
            year,
        )
    }

    /// Whether anything is known about the person (a participant who answered no demographic
    /// question gives no persona).
    pub fn is_empty(&self) -> bool {
        self.gender.is_none()
            && self.age.is_none()
            && self.country.is_none()
            && self.employment.is_none()
            && self.education.is_none()
    }

    /// `Gender: Female\nAge: 34\n…`, the fields the participant answered, in the survey's order.
    pub fn profile_lines(&self) -> String {
        let age = self.age.map(|a| a.to_string());
        [
            ("Gender", self.gender.as_ref()),
            ("Age", age.as_ref()),
            ("Country of residence", self.country.as_ref()),
            ("Employment status", self.employment.as_ref()),
            ("Education", self.education.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name}: {v}")))
        .collect::<Vec<_>>()
        .join("\n")
    }
}

/// The age bands the report groups by (the usual survey bands; a last open band).
pub const AGE_BANDS: [(i32, Option<i32>, &str); 6] = [
    (18, Some(24), "18–24"),
    (25, Some(34), "25–34"),
    (35, Some(44), "35–44"),
    (45, Some(54), "45–54"),
    (55, Some(64), "55–64"),
    (65, None, "65+"),
];

/// The band of an age: one of [`AGE_BANDS`], `"under 18"`, or `"unknown"`.
pub fn age_band(age: Option<i32>) -> &'static str {
    let Some(age) = age else {
        return "unknown";
    };
    AGE_BANDS
        .iter()
        .find(|(lo, hi, _)| age >= *lo && hi.is_none_or(|h| age <= h))
        .map(|(_, _, name)| *name)
        .unwrap_or(if age < 18 { "under 18" } else { "unknown" })
}

// ---------------------------------------------------------------------------------------------
// The conversation
// ---------------------------------------------------------------------------------------------

/// How the model is to write its answers down (the humans click; see the module comment).
pub fn reply_format(instrument: &Instrument) -> String {
    let own = instrument.items.iter().any(|i| !i.options.is_empty());
    let scale = if own {
        "the number of the statement you choose".to_owned()
    } else {
        let labels: Vec<String> = (instrument.min..=instrument.max)
            .map(|v| answer_label(instrument, v))
            .collect();
        format!(
            "a number from {} to {} ({})",
            instrument.min,
            instrument.max,
            labels.join(", ")
        )
    };
    format!(
        "Answer every item with {scale}. Reply with one line per item: the item's number, a \
         period and your answer, e.g. \"1. {}\".",
        instrument.min
    )
}

/// The system message: who the model is to be, and the paper's answer constraint.
fn system_message(instrument: &Instrument, persona: Option<&Persona>) -> String {
    let mut text = String::from("You are taking part in a study on emotions.");
    if let Some(p) = persona {
        text.push_str(" Answer every question as the following person would, in their place:\n");
        text.push_str(&p.profile_lines());
        text.push('\n');
    } else {
        text.push(' ');
    }
    text.push_str(&format!(
        "You can only reply to numbers from {} to {}.",
        instrument.min, instrument.max
    ));
    text
}

/// One questionnaire page as text: heading, instructions, the items numbered by display
/// position (an item with its own options lists them), the reply format.
fn questionnaire(
    instrument: &Instrument,
    order: &[u32],
    before: bool,
) -> Result<String, PromptError> {
    super::prompt::check_order(instrument, order)?;
    let heading = if before {
        BEFORE_HEADING
    } else {
        AFTER_HEADING
    };
    let mut text = format!(
        "{heading}\n{}\n\n",
        questionnaire_instructions(instrument, before)
    );
    for (position, number) in (1u32..).zip(order) {
        let item = instrument.item(*number).ok_or(PromptError::BadOrder)?;
        if item.options.is_empty() {
            text.push_str(&format!("{position}. {}\n", item.text));
        } else {
            let options: Vec<String> = item
                .options
                .iter()
                .map(|o| format!("{} – {}", o.value, o.text))
                .collect();
            text.push_str(&format!("{position}. {}\n", options.join("; ")));
        }
    }
    text.push('\n');
    text.push_str(&reply_format(instrument));
    Ok(text)
}

/// The first request of a conversation: the system message and the questionnaire "right
/// now" in `before_order`.
pub fn first_turn(
    instrument: &Instrument,
    before_order: &[u32],
    persona: Option<&Persona>,
) -> Result<Vec<ChatMessage>, PromptError> {
    Ok(vec![
        ChatMessage::new("system", system_message(instrument, persona)),
        ChatMessage::new("user", questionnaire(instrument, before_order, true)?),
    ])
}

/// The situation page and the questionnaire again, in `after_order`, as one user message.
pub fn second_turn(
    instrument: &Instrument,
    situation: &str,
    after_order: &[u32],
) -> Result<ChatMessage, PromptError> {
    if situation.trim().is_empty() {
        return Err(PromptError::MissingSituation);
    }
    Ok(ChatMessage::new(
        "user",
        format!(
            "{SITUATION_HEADING}\n{SITUATION_INTRO}\n\n\"{situation}\"\n\n{}",
            questionnaire(instrument, after_order, false)?
        ),
    ))
}

/// The second request: the first turn, the model's own reply to it, the second turn.
pub fn conversation(first: &[ChatMessage], reply: &str, second: &ChatMessage) -> Vec<ChatMessage> {
    let mut out = first.to_vec();
    out.push(ChatMessage::new("assistant", reply.to_owned()));
    out.push(second.clone());
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn panas() -> Instrument {
        Instrument::panas()
    }

    #[test]
    fn protocols_read_back_as_written_and_only_conversations_are_two_turns() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        assert_eq!(Protocol::parse("Paper"), None);
        assert!(!Protocol::Paper.is_conversation());
        assert!(Protocol::WithinSession.is_conversation());
        assert!(Protocol::Persona.is_conversation());
    }

    #[test]
    fn the_first_turn_is_the_before_page_with_items_in_the_given_order() {
        let inst = panas();
        let order: Vec<u32> = (1..=20).rev().collect();
        let m = first_turn(&inst, &order, None).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].role, "system");
        assert!(
            m[0].content
                .ends_with("You can only reply to numbers from 1 to 5.")
        );
        let user = &m[1].content;
        assert!(user.starts_with(&format!("{BEFORE_HEADING}\n{BEFORE_INSTRUCTIONS}\n\n")));
        let lines: Vec<&str> = user
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        assert_eq!(lines.len(), 20);
        assert_eq!(lines[0], format!("1. {}", inst.item(20).unwrap().text));
        assert_eq!(lines[19], format!("20. {}", inst.item(1).unwrap().text));
        assert!(user.ends_with(&reply_format(&inst)));
        assert!(reply_format(&inst).contains(&answer_label(&inst, 1)));
    }

    #[test]
    fn the_second_request_holds_the_first_the_reply_and_the_situation_page() {
        let inst = panas();
        let first = first_turn(&inst, &(1..=20).collect::<Vec<_>>(), None).unwrap();
        let second =
            second_turn(&inst, "You lose your keys.", &(1..=20).collect::<Vec<_>>()).unwrap();
        assert!(second.content.starts_with(&format!(
            "{SITUATION_HEADING}\n{SITUATION_INTRO}\n\n\"You lose your keys.\"\n\n{AFTER_HEADING}\n{AFTER_INSTRUCTIONS}"
        )));
        let all = conversation(&first, "1. 2\n2. 3", &second);
        let roles: Vec<&str> = all.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert_eq!(all[2].content, "1. 2\n2. 3");
        assert_eq!(
            second_turn(&inst, "  ", &[1]).unwrap_err(),
            PromptError::MissingSituation
        );
        assert_eq!(
            first_turn(&inst, &[1, 1], None).unwrap_err(),
            PromptError::BadOrder
        );
    }

    #[test]
    fn a_persona_is_the_answers_with_the_age_from_the_year_of_birth() {
        let answers = |k: &str| {
            match k {
                "gender" => Some("Female"),
                "year_of_birth" => Some("1990"),
                "country" => Some("Prefer not to say"),
                "employment_status" => Some("Full-time"),
                "education" => Some(" "),
                _ => None,
            }
            .map(str::to_owned)
        };
        let p = Persona::from_answers("abc", answers, 2024);
        assert_eq!(p.age, Some(34));
        assert_eq!(p.country, None, "'prefer not to say' is not told as a fact");
        assert_eq!(p.education, None);
        assert_eq!(
            p.profile_lines(),
            "Gender: Female\nAge: 34\nEmployment status: Full-time"
        );
        let m = first_turn(&panas(), &(1..=20).collect::<Vec<_>>(), Some(&p)).unwrap();
        assert!(
            m[0].content.contains("Gender: Female\nAge: 34\n"),
            "{}",
            m[0].content
        );
        let unknown =
            Persona::from_answers("x", |k| (k == "year_of_birth").then(|| "soon".into()), 2024);
        assert!(unknown.is_empty());
    }

    #[test]
    fn age_bands_cover_adults_and_say_unknown() {
        assert_eq!(age_band(Some(18)), "18–24");
        assert_eq!(age_band(Some(24)), "18–24");
        assert_eq!(age_band(Some(25)), "25–34");
        assert_eq!(age_band(Some(64)), "55–64");
        assert_eq!(age_band(Some(90)), "65+");
        assert_eq!(age_band(Some(16)), "under 18");
        assert_eq!(age_band(None), "unknown");
    }
}
