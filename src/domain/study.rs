//! Study configuration: what a researcher sets, with the defaults of the paper's human study.

use std::collections::BTreeMap;

use super::language::Lang;
use super::situation::Valence;
use serde::{Deserialize, Serialize};

/// Lifecycle of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum StudyStatus {
    Draft,
    Open,
    Closed,
}

impl StudyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }

    pub fn parse(s: &str) -> Option<StudyStatus> {
        [Self::Draft, Self::Open, Self::Closed]
            .into_iter()
            .find(|x| x.as_str() == s)
    }
}

impl std::str::FromStr for StudyStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| format!("unknown study status {s:?}"))
    }
}

impl std::fmt::Display for StudyStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Slugs a study may not take: a study's pages live at `/admin/studies/{slug}`, so a study
/// called `new` would be shadowed by the new-study form (or shadow it, depending on route
/// order). Every literal first segment under `/admin/studies/` in the route table must be here
/// (`web::routes`' unit test checks it); the rest are words a later route may well use.
pub const RESERVED_SLUGS: [&str; 12] = [
    "new", "edit", "delete", "create", "import", "export", "report", "status", "search", "admin",
    "assets", "login",
];

/// The demographic questions of the paper's Prolific study, asked by default.
pub const DEFAULT_DEMOGRAPHICS: [&str; 5] = [
    "gender",
    "year_of_birth",
    "country",
    "employment_status",
    "education",
];

/// Everything a study needs besides its instrument and situation set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StudyConfig {
    pub slug: String,
    pub title: String,
    pub consent_text: String,
    pub debrief_text: String,
    /// Completed participants wanted per situation; when every situation has them the study is full.
    pub target_per_situation: i32,
    /// Shuffle the PANAS item order per participant (the order shown is stored).
    pub shuffle_items: bool,
    /// A failed attention check ends the survey with the FAILED_ATTENTION_CHECK code (else: flag only).
    pub attention_check_ends: bool,
    pub demographics: Vec<String>,
    pub pid_param: String,
    pub study_id_param: String,
    pub session_id_param: String,
    pub code_completed: Option<String>,
    pub code_no_consent: Option<String>,
    pub code_failed_check: Option<String>,
    pub code_screened_out: Option<String>,
    /// Seconds before "Continue" on the situation page counts as read (a quality flag only).
    pub min_situation_seconds: i32,
    /// Minutes an unfinished participant holds a situation before the slot is given to others.
    pub reservation_minutes: i32,
    /// The languages participants may take the study in; the first is the default (issue #20).
    /// Files written before languages existed have none: English.
    #[serde(default = "default_languages")]
    pub languages: Vec<Lang>,
    /// Only situations of these valences are assigned to participants (#18); empty for every
    /// situation of the set. Left out of files when empty, as before valences existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub valences: Vec<Valence>,
    /// A free-text field on the situation page (#18): the open prompt of one free-text task,
    /// asked of every participant. Left out of files when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_text: Option<FreeTextField>,
    /// The consent and debrief in the study's other languages, by language (`consent_text`
    /// and `debrief_text` are its default language's): participants are asked for consent in
    /// the language they take the study in. Left out of files when there are none, as before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub translations: BTreeMap<Lang, StudyTexts>,
}

/// A study's consent and debrief texts in one of its other languages, and its title there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyTexts {
    /// The title in the pages' header; blank for the default language's (the title is not an
    /// ethics text, so opening does not need it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    pub consent: String,
    pub debrief: String,
}

/// The longest title, in bytes.
pub const MAX_TITLE_BYTES: usize = 200;

/// The longest consent or debrief text, in bytes.
pub const MAX_TEXT_BYTES: usize = 20_000;

/// The text participants in `lang` read: `pick` of its translation when there is one that is
/// not blank, else `default` (the default language's; a draft or pilot may lack translations,
/// an open study has them all: the launch checklist).
pub fn text_in<'a>(
    translations: &'a BTreeMap<Lang, StudyTexts>,
    lang: &Lang,
    default: &'a str,
    pick: impl Fn(&'a StudyTexts) -> &'a str,
) -> &'a str {
    translations
        .get(lang)
        .map(pick)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(default)
}

/// The situation page's free-text field of a study (#18): which free-text task's prompt it
/// asks, whether an answer is needed to continue, and how long one may be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreeTextField {
    /// The key of an instrument of the free-text kind.
    pub task: String,
    /// Whether the page refuses to continue without an answer (else the field is optional).
    #[serde(default)]
    pub required: bool,
    /// The longest answer, in characters (Unicode scalar values, not bytes).
    #[serde(default = "default_max_chars")]
    pub max_chars: u32,
}

/// The length limit a new field starts with.
pub const DEFAULT_FREE_TEXT_CHARS: u32 = 2_000;

/// The longest limit a study may set: 2,000 characters of four-byte UTF-8, percent-encoded
/// (12 bytes each), stay under the default request body limit of 32 KiB (`max_body_bytes`),
/// so an answer within the limit is never cut off by a 413.
pub const MAX_FREE_TEXT_CHARS: u32 = 2_000;

fn default_max_chars() -> u32 {
    DEFAULT_FREE_TEXT_CHARS
}

impl FreeTextField {
    /// What a stored or typed field must hold: a task key and a limit within
    /// 1..=[`MAX_FREE_TEXT_CHARS`].
    pub fn validate(&self) -> Result<(), String> {
        if self.task.trim().is_empty() {
            return Err("the free-text field names no task".into());
        }
        if !(1..=MAX_FREE_TEXT_CHARS).contains(&self.max_chars) {
            return Err(format!(
                "the free-text limit must be 1 to {MAX_FREE_TEXT_CHARS} characters"
            ));
        }
        Ok(())
    }
}

fn default_languages() -> Vec<Lang> {
    vec![Lang::english()]
}

impl StudyConfig {
    pub fn new(slug: &str, title: &str) -> Self {
        Self {
            slug: slug.to_owned(),
            title: title.to_owned(),
            consent_text: String::new(),
            debrief_text: String::new(),
            target_per_situation: 10,
            shuffle_items: true,
            attention_check_ends: false,
            demographics: DEFAULT_DEMOGRAPHICS.iter().map(|s| s.to_string()).collect(),
            pid_param: "PROLIFIC_PID".into(),
            study_id_param: "STUDY_ID".into(),
            session_id_param: "SESSION_ID".into(),
            code_completed: None,
            code_no_consent: None,
            code_failed_check: None,
            code_screened_out: None,
            min_situation_seconds: 10,
            reservation_minutes: 30,
            languages: default_languages(),
            valences: Vec::new(),
            free_text: None,
            translations: BTreeMap::new(),
        }
    }

    /// The consent text participants in `lang` read.
    pub fn consent_in(&self, lang: &Lang) -> &str {
        text_in(&self.translations, lang, &self.consent_text, |t| &t.consent)
    }

    /// The debrief text participants in `lang` read.
    pub fn debrief_in(&self, lang: &Lang) -> &str {
        text_in(&self.translations, lang, &self.debrief_text, |t| &t.debrief)
    }

    /// The title participants in `lang` see.
    pub fn title_in(&self, lang: &Lang) -> &str {
        text_in(&self.translations, lang, &self.title, |t| &t.title)
    }

    /// Checks what a database constraint cannot: the slug is used in URLs, file names and on
    /// command lines (`--study SLUG`, hence no leading '-').
    pub fn validate(&self) -> Result<(), String> {
        let slug_ok = self.slug.len() <= 64
            && self
                .slug
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && self
                .slug
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !slug_ok {
            return Err(format!(
                "invalid slug {:?}: use 1-64 lowercase letters, digits or '-', starting with a \
                 letter or digit",
                self.slug
            ));
        }
        if RESERVED_SLUGS.contains(&self.slug.as_str()) {
            return Err(format!(
                "the slug {:?} is reserved: it is a word of the admin pages' addresses",
                self.slug
            ));
        }
        if self.title.trim().is_empty() {
            return Err("the title is empty".into());
        }
        super::language::check_list(&self.languages)?;
        if self.target_per_situation < 1 {
            return Err("the target per situation must be at least 1".into());
        }
        if self.reservation_minutes < 1 {
            return Err("the reservation timeout must be at least 1 minute".into());
        }
        if self.min_situation_seconds < 0 {
            return Err("the minimum situation time cannot be negative".into());
        }
        if let Some(f) = &self.free_text {
            f.validate()?;
        }
        let others = self.languages.get(1..).unwrap_or_default();
        for (lang, texts) in &self.translations {
            if !others.contains(lang) {
                return Err(format!(
                    "the consent and debrief in {lang} are not for one of the study's other \
                     languages"
                ));
            }
            if texts.consent.len() > MAX_TEXT_BYTES
                || texts.debrief.len() > MAX_TEXT_BYTES
                || texts.title.len() > MAX_TITLE_BYTES
            {
                return Err(format!(
                    "the title, consent or debrief text in {lang} is too long"
                ));
            }
        }
        Ok(())
    }
}

/// The placeholders of [`CONSENT_TEMPLATE`] and [`DEBRIEF_TEMPLATE`]: a study does not open
/// while its consent or debrief text still holds one of them.
pub const PLACEHOLDERS: [&str; 5] = [
    "[RESEARCHER]",
    "[CONTACT]",
    "[ETHICS APPROVAL]",
    "[DATA USE]",
    "[WITHDRAWAL]",
];

/// What the new-study form starts with: the parts an ethics board expects, each one a
/// placeholder the researcher must replace before the study can open.
pub const CONSENT_TEMPLATE: &str = "This study is run by [RESEARCHER]. Questions about it go to \
[CONTACT].\n\nIt was approved by [ETHICS APPROVAL].\n\nYou will read a short everyday situation \
and rate how you feel before and after imagining it. This takes about 10 minutes. Some \
situations may be unpleasant to imagine.\n\nHow your answers are used and kept: [DATA USE]. We \
do not ask for your name.\n\nTaking part is voluntary. [WITHDRAWAL]\n\nYou must be 18 or older \
to take part.";

/// The debrief the new-study form starts with.
pub const DEBRIEF_TEMPLATE: &str = "Thank you for taking part. The study compares how people \
and language models say they feel in the same situations.\n\nIf a situation upset you, or you \
have questions, write to [CONTACT].";

/// One condition for opening a study, and whether it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckItem {
    pub label: &'static str,
    pub ok: bool,
    /// What to do about it when it does not hold.
    pub fix: String,
}

/// Whether the study uses Prolific's parameter names: then participants are paid by the
/// completion code, so a study without one would leave them unpaid.
pub fn uses_prolific(c: &StudyConfig) -> bool {
    c.pid_param == "PROLIFIC_PID"
}

/// The launch checklist: what must hold before a study opens. Saving a draft that fails it is
/// fine; opening is refused with the items that fail (`today` is the date, UTC, of the check).
pub fn launch_checklist(
    c: &StudyConfig,
    retention: Option<chrono::NaiveDate>,
    today: chrono::NaiveDate,
) -> Vec<CheckItem> {
    let left = |text: &str| -> Vec<&'static str> {
        PLACEHOLDERS
            .iter()
            .copied()
            .filter(|p| text.contains(p))
            .collect()
    };
    let text_item = |label: &'static str, text: &str| {
        let left = left(text);
        let fix = if text.trim().is_empty() {
            "Write it.".to_owned()
        } else if !left.is_empty() {
            format!("Replace {}.", left.join(", "))
        } else {
            String::new()
        };
        CheckItem {
            label,
            ok: fix.is_empty(),
            fix,
        }
    };
    let code_needed = uses_prolific(c) && c.code_completed.is_none();
    let retention_fix = match retention {
        None => "Set the date after which participant data is deleted.".to_owned(),
        Some(d) if d <= today => format!("{d} is not in the future."),
        Some(_) => String::new(),
    };
    let mut items = vec![
        text_item(
            "Consent text written, placeholders replaced",
            &c.consent_text,
        ),
        text_item(
            "Debrief text written, placeholders replaced",
            &c.debrief_text,
        ),
        CheckItem {
            label: "Completion code for COMPLETED (Prolific parameters are used)",
            ok: !code_needed,
            fix: if code_needed {
                "Enter the code Prolific gave you for completed submissions.".into()
            } else {
                String::new()
            },
        },
        CheckItem {
            label: "Retention date in the future",
            ok: retention_fix.is_empty(),
            fix: retention_fix,
        },
    ];
    if let [_, others @ ..] = c.languages.as_slice()
        && !others.is_empty()
    {
        let fixes: Vec<String> = others
            .iter()
            .flat_map(|lang| {
                let texts = c.translations.get(lang).cloned().unwrap_or_default();
                [("consent", texts.consent), ("debrief", texts.debrief)]
                    .into_iter()
                    .filter_map(|(what, text)| {
                        let left = left(&text);
                        if text.trim().is_empty() {
                            Some(format!("Write the {what} text in {lang}."))
                        } else if !left.is_empty() {
                            Some(format!(
                                "Replace {} in the {what} text in {lang}.",
                                left.join(", ")
                            ))
                        } else {
                            None
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        items.push(CheckItem {
            label: "Consent and debrief texts in each of the study's other languages",
            ok: fixes.is_empty(),
            fix: fixes.join(" "),
        });
    }
    items
}

/// The failing items of a checklist as one sentence per item, for refusals.
pub fn checklist_problems(items: &[CheckItem]) -> Vec<String> {
    items
        .iter()
        .filter(|i| !i.ok)
        .map(|i| format!("{}: {}", i.label, i.fix))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(c: &mut StudyConfig) {
        c.consent_text = "Run by Dr A, a@example.org; approved by IRB 12.".into();
        c.debrief_text = "Thanks.".into();
        c.code_completed = Some("C0DE".into());
    }

    fn day(s: &str) -> chrono::NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn the_free_text_field_reads_with_its_defaults_and_checks_its_limit() {
        let f: FreeTextField = serde_json::from_str(r#"{"task": "SAY"}"#).unwrap();
        assert_eq!(
            f,
            FreeTextField {
                task: "SAY".into(),
                required: false,
                max_chars: DEFAULT_FREE_TEXT_CHARS,
            }
        );
        assert!(serde_json::from_str::<FreeTextField>(r#"{"task": "S", "max": 3}"#).is_err());
        let mut c = StudyConfig::new("s", "S");
        // A file without the field (as before #18) reads as none, and none is not written.
        let text = serde_json::to_string(&c).unwrap();
        assert!(!text.contains("free_text"), "{text}");
        let back: StudyConfig = serde_json::from_str(&text).unwrap();
        assert_eq!(back.free_text, None);
        for (max, ok) in [
            (0, false),
            (1, true),
            (MAX_FREE_TEXT_CHARS, true),
            (2_001, false),
        ] {
            c.free_text = Some(FreeTextField {
                max_chars: max,
                ..f.clone()
            });
            assert_eq!(c.validate().is_ok(), ok, "{max}");
        }
        c.free_text = Some(FreeTextField {
            task: " ".into(),
            ..f
        });
        assert!(c.validate().unwrap_err().contains("names no task"));
    }

    #[test]
    fn a_complete_study_passes_the_checklist() {
        let mut c = StudyConfig::new("s", "t");
        ready(&mut c);
        let items = launch_checklist(&c, Some(day("2027-01-01")), day("2026-12-01"));
        assert!(items.iter().all(|i| i.ok), "{items:?}");
        assert!(checklist_problems(&items).is_empty());
    }

    #[test]
    fn the_checklist_names_each_missing_item() {
        let c = StudyConfig::new("s", "t");
        let problems = checklist_problems(&launch_checklist(&c, None, day("2026-12-01")));
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].starts_with("Consent") && problems[0].contains("Write it"));
        assert!(problems[2].contains("COMPLETED"));
        assert!(problems[3].contains("Retention"));
    }

    #[test]
    fn template_placeholders_must_be_replaced() {
        let mut c = StudyConfig::new("s", "t");
        ready(&mut c);
        c.consent_text = CONSENT_TEMPLATE.into();
        c.debrief_text = DEBRIEF_TEMPLATE.into();
        let items = launch_checklist(&c, Some(day("2027-01-01")), day("2026-12-01"));
        for p in PLACEHOLDERS {
            assert!(items[0].fix.contains(p), "{p} in {:?}", items[0].fix);
        }
        assert!(!items[1].ok && items[1].fix.contains("[CONTACT]"));
        c.consent_text = c.consent_text.replace("[CONTACT]", "x@example.org");
        let items = launch_checklist(&c, Some(day("2027-01-01")), day("2026-12-01"));
        assert!(!items[0].fix.contains("[CONTACT]"));
    }

    fn lang(tag: &str) -> Lang {
        Lang::parse(tag).unwrap()
    }

    #[test]
    fn participants_read_the_consent_and_debrief_in_their_language_or_else_the_default() {
        let mut c = StudyConfig::new("s", "t");
        ready(&mut c);
        c.languages = vec![lang("en"), lang("de"), lang("es")];
        c.translations.insert(
            lang("de"),
            StudyTexts {
                title: String::new(),
                consent: "Einwilligung.".into(),
                debrief: " ".into(),
            },
        );
        assert_eq!(c.consent_in(&lang("de")), "Einwilligung.");
        // No title of its own: the default's.
        assert_eq!(c.title_in(&lang("de")), "t");
        c.translations.get_mut(&lang("de")).unwrap().title = "T auf Deutsch".into();
        assert_eq!(c.title_in(&lang("de")), "T auf Deutsch");
        // A blank translation, no translation, the default language: the default's text.
        assert_eq!(c.debrief_in(&lang("de")), "Thanks.");
        assert_eq!(c.consent_in(&lang("es")), c.consent_text);
        assert_eq!(c.consent_in(&lang("en")), c.consent_text);
        assert!(c.validate().is_ok());
        // Written to files and read back; a file without any (as before) reads as none.
        let text = serde_json::to_string(&c).unwrap();
        assert!(
            text.contains(
                r#""translations":{"de":{"title":"T auf Deutsch","consent":"Einwilligung.""#
            ),
            "{text}"
        );
        // A translation without a title (a file written before titles had one) reads.
        let untitled: StudyTexts =
            serde_json::from_str(r#"{"consent": "E.", "debrief": "D."}"#).unwrap();
        assert!(untitled.title.is_empty());
        assert_eq!(serde_json::from_str::<StudyConfig>(&text).unwrap(), c);
        let plain = serde_json::to_string(&StudyConfig::new("s", "t")).unwrap();
        assert!(!plain.contains("translations"), "{plain}");
        assert!(
            serde_json::from_str::<StudyConfig>(&plain)
                .unwrap()
                .translations
                .is_empty()
        );
    }

    #[test]
    fn translations_are_only_for_the_other_languages_and_not_too_long() {
        let mut c = StudyConfig::new("s", "t");
        c.languages = vec![lang("en"), lang("de")];
        for (tag, ok) in [("de", true), ("en", false), ("fr", false)] {
            c.translations = BTreeMap::from([(lang(tag), StudyTexts::default())]);
            assert_eq!(c.validate().is_ok(), ok, "{tag}");
        }
        c.translations = BTreeMap::from([(
            lang("de"),
            StudyTexts {
                title: String::new(),
                consent: "x".repeat(MAX_TEXT_BYTES + 1),
                debrief: String::new(),
            },
        )]);
        assert!(c.validate().unwrap_err().contains("too long"));
    }

    #[test]
    fn a_study_in_several_languages_opens_with_its_texts_in_each() {
        let mut c = StudyConfig::new("s", "t");
        ready(&mut c);
        let (until, today) = (Some(day("2027-01-01")), day("2026-12-01"));
        // One language: no such item.
        assert_eq!(launch_checklist(&c, until, today).len(), 4);
        c.languages = vec![lang("en"), lang("de"), lang("es")];
        c.translations.insert(
            lang("de"),
            StudyTexts {
                title: String::new(),
                consent: "Kontakt: [CONTACT].".into(),
                debrief: "Danke.".into(),
            },
        );
        let items = launch_checklist(&c, until, today);
        assert_eq!(items.len(), 5);
        assert!(!items[4].ok);
        assert_eq!(
            items[4].fix,
            "Replace [CONTACT] in the consent text in de. Write the consent text in es. \
             Write the debrief text in es."
        );
        c.translations.insert(
            lang("de"),
            StudyTexts {
                title: String::new(),
                consent: "Kontakt: a@example.org.".into(),
                debrief: "Danke.".into(),
            },
        );
        c.translations.insert(
            lang("es"),
            StudyTexts {
                title: String::new(),
                consent: "Consentimiento.".into(),
                debrief: "Gracias.".into(),
            },
        );
        let items = launch_checklist(&c, until, today);
        assert!(items.iter().all(|i| i.ok), "{items:?}");
    }

    #[test]
    fn the_retention_date_must_be_after_today() {
        let mut c = StudyConfig::new("s", "t");
        ready(&mut c);
        for (d, ok) in [
            ("2026-11-30", false),
            ("2026-12-01", false),
            ("2026-12-02", true),
        ] {
            let items = launch_checklist(&c, Some(day(d)), day("2026-12-01"));
            assert_eq!(items[3].ok, ok, "{d}");
        }
    }

    #[test]
    fn codes_are_needed_only_with_prolific_parameters() {
        let mut c = StudyConfig::new("s", "t");
        ready(&mut c);
        c.code_completed = None;
        let today = day("2026-12-01");
        assert!(!launch_checklist(&c, Some(day("2027-01-01")), today)[2].ok);
        c.pid_param = "uid".into();
        assert!(launch_checklist(&c, Some(day("2027-01-01")), today)[2].ok);
    }

    #[test]
    fn defaults_follow_the_paper_and_prolific() {
        let c = StudyConfig::new("panas-2026", "PANAS");
        assert_eq!(c.pid_param, "PROLIFIC_PID");
        assert_eq!(c.demographics.len(), 5);
        assert_eq!(c.reservation_minutes, 30);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn slugs_must_be_url_safe() {
        for bad in [
            "",
            "Has Space",
            "UPPER",
            "a/b",
            "-x",
            "new",
            "edit",
            &"x".repeat(65),
        ] {
            assert!(StudyConfig::new(bad, "t").validate().is_err(), "{bad:?}");
        }
        assert!(StudyConfig::new("ok", " ").validate().is_err());
    }

    #[test]
    fn statuses_round_trip() {
        for s in [StudyStatus::Draft, StudyStatus::Open, StudyStatus::Closed] {
            assert_eq!(s.as_str().parse::<StudyStatus>(), Ok(s));
        }
        assert!("done".parse::<StudyStatus>().is_err());
    }
}
