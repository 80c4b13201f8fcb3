//! Study configuration: what a researcher sets, with the defaults of the paper's human study.

use serde::{Deserialize, Serialize};

/// Lifecycle of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
        }
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
        if self.target_per_situation < 1 {
            return Err("the target per situation must be at least 1".into());
        }
        if self.reservation_minutes < 1 {
            return Err("the reservation timeout must be at least 1 minute".into());
        }
        if self.min_situation_seconds < 0 {
            return Err("the minimum situation time cannot be negative".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
