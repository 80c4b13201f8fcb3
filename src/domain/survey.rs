//! The participant protocol as a state machine, and the parsing of what participants submit.
//! Pure: the web layer feeds it form fields and stores what it returns.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::instrument::Instrument;
use super::measure::Measure;

/// The pages of the survey, in order. A participant is always on exactly one of them; any
/// other page redirects there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Page {
    Consent,
    Demographics,
    PanasBefore,
    Situation,
    PanasAfter,
    Check,
    Debrief,
    /// Completed: the completion code.
    Done,
    /// Ended early (declined consent, failed attention check, screened out).
    Ended,
    /// Withdrew: answers deleted.
    Withdrawn,
}

/// How a participant's session ended, with the Prolific completion-code kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    NoConsent,
    FailedAttentionCheck,
    ScreenedOut,
}

impl Outcome {
    /// The participant status stored for this outcome.
    pub fn status(self) -> ParticipantStatus {
        match self {
            Outcome::Completed => ParticipantStatus::Completed,
            Outcome::NoConsent => ParticipantStatus::NoConsent,
            Outcome::FailedAttentionCheck => ParticipantStatus::FailedCheck,
            Outcome::ScreenedOut => ParticipantStatus::ScreenedOut,
        }
    }
}

/// What a survey cookie holds: the participant's own session secret (the browser that started
/// the survey), or the key of a browser that resumed the participant by Prolific id. Both may
/// continue the survey; only the first may withdraw, since a Prolific id is known to others
/// (the researcher, anyone with an export) and withdrawing deletes every answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionKey {
    Owner(String),
    Resumed(String),
}

/// Marks a resumed key in the cookie; session secrets are alphanumeric, so never start with it.
const RESUMED_PREFIX: &str = "r-";

impl SessionKey {
    pub fn from_cookie(value: &str) -> SessionKey {
        match value.strip_prefix(RESUMED_PREFIX) {
            Some(key) => SessionKey::Resumed(key.to_owned()),
            None => SessionKey::Owner(value.to_owned()),
        }
    }

    pub fn cookie_value(&self) -> String {
        match self {
            SessionKey::Owner(secret) => secret.clone(),
            SessionKey::Resumed(key) => format!("{RESUMED_PREFIX}{key}"),
        }
    }

    /// Whether this browser may withdraw the participant (delete the answers).
    pub fn may_withdraw(&self) -> bool {
        matches!(self, SessionKey::Owner(_))
    }
}

/// The consent page's form field (`yes` or `no`); the template names it the same.
pub const CONSENT_FIELD: &str = "consent";

/// The situation page's honeypot (`domain::evidence`): a text field people never see or reach
/// (visually hidden, `aria-hidden`, `tabindex="-1"`), labelled "leave this empty". A name a
/// form-filling script fills gladly.
pub const HONEYPOT_FIELD: &str = "website";

/// What happened to a page (`page_events.event`): shown to the participant, or submitted by
/// them. The time between the two is the situation page's reading time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageEvent {
    Shown,
    Submitted,
}

impl PageEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            PageEvent::Shown => "shown",
            PageEvent::Submitted => "submitted",
        }
    }

    pub fn parse(s: &str) -> Option<PageEvent> {
        [PageEvent::Shown, PageEvent::Submitted]
            .into_iter()
            .find(|e| e.as_str() == s)
    }
}

/// Where a participant's session stands (`participants.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParticipantStatus {
    /// Still answering.
    Active,
    Completed,
    /// Withdrew: answers deleted, the row kept so a returning Prolific id is not new.
    Withdrawn,
    NoConsent,
    FailedCheck,
    ScreenedOut,
}

impl ParticipantStatus {
    pub const ALL: [ParticipantStatus; 6] = [
        ParticipantStatus::Active,
        ParticipantStatus::Completed,
        ParticipantStatus::Withdrawn,
        ParticipantStatus::NoConsent,
        ParticipantStatus::FailedCheck,
        ParticipantStatus::ScreenedOut,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ParticipantStatus::Active => "active",
            ParticipantStatus::Completed => "completed",
            ParticipantStatus::Withdrawn => "withdrawn",
            ParticipantStatus::NoConsent => "no_consent",
            ParticipantStatus::FailedCheck => "failed_check",
            ParticipantStatus::ScreenedOut => "screened_out",
        }
    }

    pub fn parse(s: &str) -> Option<ParticipantStatus> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// The outcome a status records, for the statuses that end a session with a code.
    pub fn outcome(self) -> Option<Outcome> {
        match self {
            ParticipantStatus::Completed => Some(Outcome::Completed),
            ParticipantStatus::NoConsent => Some(Outcome::NoConsent),
            ParticipantStatus::FailedCheck => Some(Outcome::FailedAttentionCheck),
            ParticipantStatus::ScreenedOut => Some(Outcome::ScreenedOut),
            ParticipantStatus::Active | ParticipantStatus::Withdrawn => None,
        }
    }
}

impl std::fmt::Display for ParticipantStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub const PAGES_IN_ORDER: [Page; 8] = [
    Page::Consent,
    Page::Demographics,
    Page::PanasBefore,
    Page::Situation,
    Page::PanasAfter,
    Page::Check,
    Page::Debrief,
    Page::Done,
];

impl Page {
    pub fn as_str(self) -> &'static str {
        match self {
            Page::Consent => "consent",
            Page::Demographics => "demographics",
            Page::PanasBefore => "feelings-now",
            Page::Situation => "situation",
            Page::PanasAfter => "feelings-imagined",
            Page::Check => "check",
            Page::Debrief => "debrief",
            Page::Done => "done",
            Page::Ended => "ended",
            Page::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> Option<Page> {
        PAGES_IN_ORDER
            .iter()
            .chain(&[Page::Ended, Page::Withdrawn])
            .copied()
            .find(|p| p.as_str() == s)
    }

    /// The page after a successful submit of this one.
    pub fn next(self) -> Option<Page> {
        let i = PAGES_IN_ORDER.iter().position(|p| *p == self)?;
        PAGES_IN_ORDER.get(i + 1).copied()
    }

    /// 1-based step for the progress bar, and the number of steps.
    pub fn step(self) -> (usize, usize) {
        let n = PAGES_IN_ORDER.len();
        match PAGES_IN_ORDER.iter().position(|p| *p == self) {
            Some(i) => (i + 1, n),
            None => (n, n),
        }
    }

    /// Pages whose session is over: nothing more can be submitted.
    pub fn is_terminal(self) -> bool {
        matches!(self, Page::Done | Page::Ended | Page::Withdrawn)
    }

    /// The PANAS phase a page collects, as stored in `responses.phase`.
    pub fn phase(self) -> Option<Measure> {
        match self {
            Page::PanasBefore => Some(Measure::Default),
            Page::PanasAfter => Some(Measure::Evoked),
            _ => None,
        }
    }
}

/// The situation as a one-line reminder above the second questionnaire: the text up to
/// `max_chars` characters, cut at a word and marked with an ellipsis; and whether it was cut.
pub fn reminder(text: &str, max_chars: usize) -> (String, bool) {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max_chars {
        return (one_line, false);
    }
    let cut: String = one_line.chars().take(max_chars).collect();
    let at_word = match cut.rfind(' ') {
        Some(i) if i > max_chars / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    let short = at_word.trim_end_matches([',', ';', ':', '.', ' ']);
    (format!("{short}…"), true)
}

/// A Prolific (or similar) identifier taken from the entry URL: untrusted, so checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalId(String);

impl ExternalId {
    /// 1–64 ASCII letters, digits, `-` or `_` (Prolific ids are 24 hex digits).
    pub fn parse(s: &str) -> Result<ExternalId, String> {
        let s = s.trim();
        if s.is_empty() || s.len() > 64 {
            return Err("must be 1 to 64 characters".into());
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err("may contain only letters, digits, '-' and '_'".into());
        }
        Ok(ExternalId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Answers of one questionnaire page, keyed by display position, with per-item errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAnswers {
    /// (item number, display position 1-based, value) in display order.
    pub answers: Vec<(u32, u32, i32)>,
}

/// Why a questionnaire page was not accepted: for each item number shown, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FormErrors {
    pub items: HashMap<u32, String>,
    pub general: Vec<String>,
}

impl FormErrors {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.general.is_empty()
    }
}

/// The longest value any field may carry; anything longer is an abuse, not an answer.
pub const MAX_FIELD_LEN: usize = 200;

/// Parses a questionnaire page: fields `item-N` (N = item number) for every item in
/// `display_order`, each an integer in the instrument's range. Unknown fields (other than
/// `allowed_extra`) are an error: nothing partial is ever stored.
pub fn parse_questionnaire(
    instrument: &Instrument,
    display_order: &[u32],
    fields: &[(String, String)],
    allowed_extra: &[&str],
) -> Result<PageAnswers, FormErrors> {
    let mut errors = FormErrors::default();
    let mut given: HashMap<u32, &str> = HashMap::new();
    for (k, v) in fields {
        if v.len() > MAX_FIELD_LEN {
            errors.general.push(format!("the field {k:?} is too long"));
            continue;
        }
        if allowed_extra.contains(&k.as_str()) {
            continue;
        }
        let number = k
            .strip_prefix("item-")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| display_order.contains(n));
        match number {
            Some(n) => {
                if given.insert(n, v.as_str()).is_some() {
                    errors.items.insert(n, "answered twice".into());
                }
            }
            None => errors.general.push(format!("unexpected field {k:?}")),
        }
    }
    let mut answers = Vec::with_capacity(display_order.len());
    for (pos, n) in display_order.iter().enumerate() {
        match given.get(n).map(|v| v.trim()) {
            None | Some("") => {
                errors.items.entry(*n).or_insert_with(|| UNANSWERED.into());
            }
            Some(v) => match v.parse::<i32>() {
                Ok(x) if (instrument.min..=instrument.max).contains(&x) => {
                    answers.push((*n, pos as u32 + 1, x));
                }
                _ => {
                    errors.items.insert(
                        *n,
                        format!(
                            "Please choose one of the answers from {} to {}.",
                            instrument.min, instrument.max
                        ),
                    );
                }
            },
        }
    }
    if errors.is_empty() {
        Ok(PageAnswers { answers })
    } else {
        Err(errors)
    }
}

/// All answers identical: a straight-lining flag (never a reason to reject by itself).
pub fn is_straightlined(values: &[i32]) -> bool {
    values.len() > 1 && values.iter().all(|v| *v == values[0])
}

/// One demographic question: its field name, label and allowed answers (`None`: free year).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DemographicField {
    pub name: &'static str,
    pub label: &'static str,
    pub options: Vec<String>,
}

pub const PREFER_NOT: &str = "Prefer not to say";

/// The youngest age the consent admits (participants confirm they are at least 18): the
/// years of birth offered, and so accepted, stop at the year such a participant was born.
pub const MIN_AGE: i32 = 18;
/// The oldest age the year-of-birth list reaches.
pub const MAX_AGE: i32 = 100;

/// The demographic questions by name, with the answer options of the paper's study (plus
/// "Prefer not to say" everywhere). Year of birth offers the years a participant of
/// [`MIN_AGE`]–[`MAX_AGE`] could have been born in `current_year`: the page's options and the
/// server's check are this one list, so they cannot disagree.
/// The error of a question left unanswered (the pages show it in the participant's language).
pub const UNANSWERED: &str = "Please choose an answer.";

pub fn demographic_field(name: &str, current_year: i32) -> Option<DemographicField> {
    let opts = |v: &[&str]| -> Vec<String> {
        v.iter()
            .map(|s| s.to_string())
            .chain([PREFER_NOT.to_string()])
            .collect()
    };
    let f = match name {
        "gender" => DemographicField {
            name: "gender",
            label: "Gender",
            options: opts(&["Female", "Male", "Non-binary or another gender"]),
        },
        "year_of_birth" => DemographicField {
            name: "year_of_birth",
            label: "Year of birth",
            options: (current_year - MAX_AGE..=current_year - MIN_AGE)
                .rev()
                .map(|y| y.to_string())
                .chain([PREFER_NOT.to_string()])
                .collect(),
        },
        "country" => DemographicField {
            name: "country",
            label: "Country of residence",
            options: opts(&COUNTRIES),
        },
        "employment_status" => DemographicField {
            name: "employment_status",
            label: "Employment status",
            options: opts(&[
                "Employed",
                "Self-employed",
                "Unemployed",
                "Student",
                "Retired",
                "Other",
            ]),
        },
        "education" => DemographicField {
            name: "education",
            label: "Highest completed education",
            options: opts(&[
                "None",
                "Primary school",
                "Lower secondary school",
                "Upper secondary school",
                "Vocational training",
                "University - Bachelors",
                "University - Masters",
                "University - Doctorate",
            ]),
        },
        _ => return None,
    };
    Some(f)
}

/// Countries offered (Prolific's main pools first, then others); "Other" covers the rest.
const COUNTRIES: [&str; 27] = [
    "United Kingdom",
    "United States",
    "Canada",
    "Australia",
    "New Zealand",
    "Ireland",
    "South Africa",
    "Germany",
    "France",
    "Spain",
    "Italy",
    "Portugal",
    "Netherlands",
    "Belgium",
    "Poland",
    "Sweden",
    "Greece",
    "Mexico",
    "Chile",
    "India",
    "Israel",
    "Nigeria",
    "Kenya",
    "Zimbabwe",
    "Hong Kong",
    "Japan",
    "Other",
];

/// Parses the demographics page: every configured field answered with one of its options.
pub fn parse_demographics(
    fields_wanted: &[String],
    current_year: i32,
    fields: &[(String, String)],
    allowed_extra: &[&str],
) -> Result<Vec<(String, String)>, FormErrors> {
    let mut errors = FormErrors::default();
    let defs: Vec<DemographicField> = fields_wanted
        .iter()
        .filter_map(|n| demographic_field(n, current_year))
        .collect();
    for (k, v) in fields {
        if v.len() > MAX_FIELD_LEN {
            errors.general.push(format!("the field {k:?} is too long"));
        } else if !allowed_extra.contains(&k.as_str()) && !defs.iter().any(|d| d.name == k) {
            errors.general.push(format!("unexpected field {k:?}"));
        }
    }
    let mut out = Vec::new();
    for (i, d) in defs.iter().enumerate() {
        let vals: Vec<&str> = fields
            .iter()
            .filter(|(k, _)| k == d.name)
            .map(|(_, v)| v.as_str())
            .collect();
        match vals.as_slice() {
            [v] if d.options.iter().any(|o| o == v) => {
                out.push((d.name.to_string(), v.to_string()))
            }
            [] | [""] => {
                errors.items.insert(i as u32, UNANSWERED.into());
            }
            _ => {
                errors
                    .items
                    .insert(i as u32, "Please choose one of the answers offered.".into());
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The built-in attention check: an instructed item inside the question itself, fair under
/// Prolific's rules (it tells the participant exactly what to answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttentionCheck {
    pub key: &'static str,
    pub question: &'static str,
    pub options: [&'static str; 5],
    pub correct: &'static str,
}

pub const ATTENTION_CHECK: AttentionCheck = AttentionCheck {
    key: "instructed-1",
    question: "People notice different things in everyday life. To show that you are reading \
               this question carefully, please choose \"A little\" below, whatever your answer \
               would otherwise be.",
    options: [
        "Not at all",
        "A little",
        "Moderately",
        "Quite a bit",
        "Extremely",
    ],
    correct: "A little",
};

/// Checks the attention-check answer: Ok(passed) or an error when no valid option was chosen.
pub fn grade_check(
    fields: &[(String, String)],
    allowed_extra: &[&str],
) -> Result<(String, bool), FormErrors> {
    let mut errors = FormErrors::default();
    let mut answer = None;
    for (k, v) in fields {
        if v.len() > MAX_FIELD_LEN {
            errors.general.push(format!("the field {k:?} is too long"));
        } else if k == "answer" {
            if answer.replace(v.as_str()).is_some() {
                errors.general.push("answered twice".into());
            }
        } else if !allowed_extra.contains(&k.as_str()) {
            errors.general.push(format!("unexpected field {k:?}"));
        }
    }
    match answer {
        Some(a) if ATTENTION_CHECK.options.contains(&a) && errors.is_empty() => {
            Ok((a.to_string(), a == ATTENTION_CHECK.correct))
        }
        _ => {
            if errors.general.is_empty() {
                errors.items.insert(0, UNANSWERED.into());
            }
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_events_read_back_as_themselves() {
        for e in [PageEvent::Shown, PageEvent::Submitted] {
            assert_eq!(PageEvent::parse(e.as_str()), Some(e));
        }
        assert_eq!(PageEvent::parse("viewed"), None);
    }

    fn f(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn pages_follow_the_protocol_order() {
        let mut p = Page::Consent;
        let mut seen = vec![p];
        while let Some(n) = p.next() {
            seen.push(n);
            p = n;
        }
        assert_eq!(seen, PAGES_IN_ORDER.to_vec());
        assert_eq!(Page::Done.next(), None);
        assert_eq!(Page::PanasBefore.step(), (3, 8));
        for p in PAGES_IN_ORDER.iter().chain(&[Page::Ended, Page::Withdrawn]) {
            assert_eq!(Page::parse(p.as_str()), Some(*p));
        }
        assert_eq!(Page::parse("admin"), None);
    }

    #[test]
    fn external_ids_are_checked() {
        assert!(ExternalId::parse("5f1a2b3c4d5e6f7a8b9c0d1e").is_ok());
        assert!(ExternalId::parse("").is_err());
        assert!(ExternalId::parse("a b").is_err());
        assert!(ExternalId::parse("<script>").is_err());
        assert!(ExternalId::parse(&"x".repeat(65)).is_err());
    }

    #[test]
    fn a_complete_page_parses_in_display_order() {
        let panas = Instrument::panas();
        let order: Vec<u32> = (1..=20).rev().collect();
        let mut fields: Vec<(String, String)> = order
            .iter()
            .map(|n| (format!("item-{n}"), ((n % 5) + 1).to_string()))
            .collect();
        fields.push(("csrf".into(), "t".into()));
        let a = parse_questionnaire(&panas, &order, &fields, &["csrf"]).unwrap();
        assert_eq!(a.answers.len(), 20);
        assert_eq!(a.answers[0], (20, 1, 1));
        assert_eq!(a.answers[19], (1, 20, 2));
    }

    #[test]
    fn missing_out_of_range_and_unexpected_answers_are_reported_per_item() {
        let panas = Instrument::panas();
        let order: Vec<u32> = (1..=20).collect();
        let mut fields: Vec<(String, String)> = (1..=18)
            .map(|n| (format!("item-{n}"), "3".to_string()))
            .collect();
        fields.push(("item-19".into(), "6".into()));
        let e = parse_questionnaire(&panas, &order, &fields, &[]).unwrap_err();
        assert_eq!(e.items.len(), 2);
        assert!(e.items[&19].contains("1 to 5"));
        assert!(e.items[&20].contains("choose"));
        fields.push(("item-20".into(), "3".into()));
        fields.push(("item-21".into(), "3".into()));
        let e = parse_questionnaire(&panas, &order, &fields, &[]).unwrap_err();
        assert!(e.general.iter().any(|g| g.contains("item-21")));
        let long = vec![("item-1".to_string(), "1".repeat(10_000))];
        let e = parse_questionnaire(&panas, &order, &long, &[]).unwrap_err();
        assert!(e.general.iter().any(|g| g.contains("too long")));
    }

    #[test]
    fn straightlining_is_all_answers_equal() {
        assert!(is_straightlined(&[3; 20]));
        assert!(!is_straightlined(&[3, 3, 4]));
        assert!(!is_straightlined(&[3]));
    }

    #[test]
    fn demographics_accept_offered_answers_and_prefer_not_to_say() {
        let wanted: Vec<String> = super::super::study::DEFAULT_DEMOGRAPHICS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let ok = f(&[
            ("gender", "Female"),
            ("year_of_birth", "1990"),
            ("country", PREFER_NOT),
            ("employment_status", "Student"),
            ("education", "University - Masters"),
            ("csrf", "x"),
        ]);
        let d = parse_demographics(&wanted, 2026, &ok, &["csrf"]).unwrap();
        assert_eq!(d.len(), 5);
        let bad = f(&[("gender", "Robot"), ("year_of_birth", "2020")]);
        let e = parse_demographics(&wanted, 2026, &bad, &[]).unwrap_err();
        assert_eq!(e.items.len(), 5, "{e:?}");
    }

    #[test]
    fn the_year_of_birth_range_starts_at_the_consent_age() {
        let wanted = vec!["year_of_birth".to_string()];
        let year = |y: i32| f(&[("year_of_birth", &y.to_string())]);
        assert!(parse_demographics(&wanted, 2026, &year(2026 - MIN_AGE), &[]).is_ok());
        assert!(parse_demographics(&wanted, 2026, &year(2026 - MIN_AGE + 1), &[]).is_err());
        assert!(parse_demographics(&wanted, 2026, &year(2026 - MAX_AGE), &[]).is_ok());
        let offered = demographic_field("year_of_birth", 2026).map(|d| d.options);
        assert_eq!(
            offered.as_ref().and_then(|o| o.first()).map(String::as_str),
            Some("2008")
        );
    }

    #[test]
    fn a_reminder_is_one_line_cut_at_a_word() {
        assert_eq!(reminder("Short\n text.", 80), ("Short text.".into(), false));
        let (r, cut) = reminder(
            "You are walking home late, and someone follows you closely.",
            30,
        );
        assert!(cut);
        assert_eq!(r, "You are walking home late…");
        assert!(r.chars().count() <= 31);
        let (r, _) = reminder(&"x".repeat(50), 10);
        assert_eq!(r, format!("{}…", "x".repeat(10)));
    }

    #[test]
    fn the_attention_check_passes_only_on_the_instructed_answer() {
        assert!(grade_check(&f(&[("answer", "A little")]), &[]).unwrap().1);
        assert!(!grade_check(&f(&[("answer", "Extremely")]), &[]).unwrap().1);
        assert!(grade_check(&f(&[]), &[]).is_err());
        assert!(grade_check(&f(&[("answer", "Maybe")]), &[]).is_err());
        assert!(grade_check(&f(&[("answer", "A little"), ("x", "1")]), &[]).is_err());
    }
}
