//! The Prolific loop's rules, without I/O: which completion codes a draft carries and what each
//! does, what a rejection and a return request must hold before anything is sent, the estimated
//! time, and the reconciliation table (each participant's status there next to ours, and the
//! action that suggests).
//!
//! The values are Prolific's, from its public API reference (cited next to each); the client
//! (`crate::prolific`) sends them and the fake (`crate::prolific::fake`) checks them.

use crate::domain::survey::ParticipantStatus;

/// At most this many ids per bulk-approve request: "We recommend a maximum of 1,000 submission
/// or participant IDs per request"
/// (<https://docs.prolific.com/api-reference/submissions/bulk-approve-submissions>).
pub const BULK_APPROVE_MAX: usize = 1000;

/// A rejection's message is sent to the participant and "must be at least 100 chars long"
/// (<https://docs.prolific.com/api-reference/submissions/transition-submission>).
pub const REJECT_MESSAGE_MIN_CHARS: usize = 100;

/// The estimated completion time sent when the study has no completed participant yet.
pub const DEFAULT_ESTIMATED_MINUTES: u32 = 10;

/// `rejection_category` of a REJECT transition. Prolific's list, as its reference and its own
/// CLI (prolific-oss/cli, `cmd/submission/transition.go`) spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectionCategory {
    TooQuickly,
    TooSlowly,
    FailedInstructions,
    IncompLongitudinal,
    FailedCheck,
    LowEffort,
    Malingering,
    NoCode,
    BadCode,
    NoData,
    UnsuppDevice,
    Other,
}

impl RejectionCategory {
    pub const ALL: [RejectionCategory; 12] = [
        RejectionCategory::TooQuickly,
        RejectionCategory::TooSlowly,
        RejectionCategory::FailedInstructions,
        RejectionCategory::IncompLongitudinal,
        RejectionCategory::FailedCheck,
        RejectionCategory::LowEffort,
        RejectionCategory::Malingering,
        RejectionCategory::NoCode,
        RejectionCategory::BadCode,
        RejectionCategory::NoData,
        RejectionCategory::UnsuppDevice,
        RejectionCategory::Other,
    ];

    /// The value on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectionCategory::TooQuickly => "TOO_QUICKLY",
            RejectionCategory::TooSlowly => "TOO_SLOWLY",
            RejectionCategory::FailedInstructions => "FAILED_INSTRUCTIONS",
            RejectionCategory::IncompLongitudinal => "INCOMP_LONGITUDINAL",
            RejectionCategory::FailedCheck => "FAILED_CHECK",
            RejectionCategory::LowEffort => "LOW_EFFORT",
            RejectionCategory::Malingering => "MALINGERING",
            RejectionCategory::NoCode => "NO_CODE",
            RejectionCategory::BadCode => "BAD_CODE",
            RejectionCategory::NoData => "NO_DATA",
            RejectionCategory::UnsuppDevice => "UNSUPP_DEVICE",
            RejectionCategory::Other => "OTHER",
        }
    }

    /// What the admin page's menu says.
    pub fn label(self) -> &'static str {
        match self {
            RejectionCategory::TooQuickly => "Completed too quickly",
            RejectionCategory::TooSlowly => "Completed too slowly",
            RejectionCategory::FailedInstructions => "Did not follow the instructions",
            RejectionCategory::IncompLongitudinal => "Incomplete longitudinal study",
            RejectionCategory::FailedCheck => "Failed attention checks",
            RejectionCategory::LowEffort => "Low effort",
            RejectionCategory::Malingering => "Malingering",
            RejectionCategory::NoCode => "No completion code",
            RejectionCategory::BadCode => "Wrong completion code",
            RejectionCategory::NoData => "No data",
            RejectionCategory::UnsuppDevice => "Unsupported device",
            RejectionCategory::Other => "Other",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s.trim())
    }
}

/// A rejection checked before any request: a category of Prolific's list and a message of at
/// least [`REJECT_MESSAGE_MIN_CHARS`] characters (counted as characters, not bytes).
pub fn check_rejection(
    category: &str,
    message: &str,
) -> Result<(RejectionCategory, String), String> {
    let Some(c) = RejectionCategory::parse(category) else {
        let all: Vec<&str> = RejectionCategory::ALL.iter().map(|c| c.as_str()).collect();
        return Err(format!(
            "unknown rejection category {category:?}: one of {}",
            all.join(", ")
        ));
    };
    let message = message.trim();
    let n = message.chars().count();
    if n < REJECT_MESSAGE_MIN_CHARS {
        return Err(format!(
            "the message to the participant has {n} characters; Prolific requires at least \
             {REJECT_MESSAGE_MIN_CHARS}: explain what was wrong"
        ));
    }
    Ok((c, message.to_owned()))
}

/// Return reasons checked before any request: "The return reason must be provided in the
/// request and can be any free text string"
/// (<https://docs.prolific.com/api-reference/submissions/request-submission-return>).
pub fn check_return_reasons(reasons: &[String]) -> Result<Vec<String>, String> {
    let kept: Vec<String> = reasons
        .iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect();
    if kept.is_empty() {
        return Err("give the participant a reason for the return request".into());
    }
    Ok(kept)
}

/// A submission's status on Prolific (`SubmissionShortStatus` of
/// <https://docs.prolific.com/api-reference/studies/get-study-submissions>; `PROCESSING` is
/// what an approved or rejected submission shows for a moment, per Prolific's help).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmissionStatus {
    Reserved,
    Active,
    TimedOut,
    AwaitingReview,
    Approved,
    Returned,
    Rejected,
    ScreenedOut,
    Processing,
}

impl SubmissionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SubmissionStatus::Reserved => "RESERVED",
            SubmissionStatus::Active => "ACTIVE",
            SubmissionStatus::TimedOut => "TIMED-OUT",
            SubmissionStatus::AwaitingReview => "AWAITING REVIEW",
            SubmissionStatus::Approved => "APPROVED",
            SubmissionStatus::Returned => "RETURNED",
            SubmissionStatus::Rejected => "REJECTED",
            SubmissionStatus::ScreenedOut => "SCREENED OUT",
            SubmissionStatus::Processing => "PROCESSING",
        }
    }

    /// Reads the list's spelling (`AWAITING REVIEW`) and the filter's (`AWAITING_REVIEW`),
    /// case-insensitively, as the reference says its status parameters are.
    pub fn parse(s: &str) -> Option<Self> {
        let norm = s.trim().to_ascii_uppercase().replace('_', " ");
        let norm = if norm == "TIMED OUT" {
            "TIMED-OUT".to_owned()
        } else {
            norm
        };
        [
            SubmissionStatus::Reserved,
            SubmissionStatus::Active,
            SubmissionStatus::TimedOut,
            SubmissionStatus::AwaitingReview,
            SubmissionStatus::Approved,
            SubmissionStatus::Returned,
            SubmissionStatus::Rejected,
            SubmissionStatus::ScreenedOut,
            SubmissionStatus::Processing,
        ]
        .into_iter()
        .find(|v| v.as_str() == norm)
    }

    /// The participant gave the place back (returned, or Prolific timed them out): the place
    /// they hold here can go to the next arrival.
    pub fn gave_up_the_place(self) -> bool {
        matches!(
            self,
            SubmissionStatus::Returned | SubmissionStatus::TimedOut
        )
    }
}

/// One completion code of a draft: `{"code", "code_type", "actions": [{"action", …}]}`
/// (`completion_codes` of <https://docs.prolific.com/api-reference/studies/create-study>).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CompletionCode {
    pub code: String,
    pub code_type: &'static str,
    pub actions: Vec<CodeAction>,
}

/// One action of a completion code.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CodeAction {
    pub action: &'static str,
    /// `FIXED_SCREEN_OUT_PAYMENT` only: the payment (cents/pence) and how many may get it. The
    /// reference pages found name the action but not these fields; the names are those
    /// published integrations send (PsyNet's Prolific recruiter), so check a first draft's
    /// screen-out code on Prolific.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_screen_out_reward: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<i32>,
}

impl CodeAction {
    fn plain(action: &'static str) -> Self {
        Self {
            action,
            fixed_screen_out_reward: None,
            slots: None,
        }
    }
}

/// The study's codes, as our survey sends participants back with them.
#[derive(Debug, Clone, Default)]
pub struct StudyCodes {
    pub completed: Option<String>,
    pub no_consent: Option<String>,
    pub failed_check: Option<String>,
    pub screened_out: Option<String>,
}

/// What the study's rules say Prolific may do on its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct CodeRules {
    /// COMPLETED approves automatically (else every completion waits for a manual review).
    pub auto_approve: bool,
    /// SCREENED_OUT pays this fixed amount (cents/pence) to at most `places` participants;
    /// `None`: a screened-out submission waits for a manual review.
    pub screen_out_reward_cents: Option<i32>,
    pub places: i32,
}

/// The completion codes of a draft: COMPLETED → manual review, or automatic approval when the
/// study says so; NO_CONSENT and FAILED_ATTENTION_CHECK → ask for a return (they are not paid
/// and not penalised); SCREENED_OUT → the fixed screen-out payment when one is configured.
/// Code types and actions as the create-study reference lists them (`COMPLETED`,
/// `FAILED_ATTENTION_CHECK`, `NO_CONSENT`, `FIXED_SCREENOUT`, `OTHER`; `AUTOMATICALLY_APPROVE`,
/// `MANUALLY_REVIEW`, `REQUEST_RETURN`, `FIXED_SCREEN_OUT_PAYMENT`).
pub fn completion_codes(
    codes: &StudyCodes,
    rules: CodeRules,
) -> Result<Vec<CompletionCode>, String> {
    let Some(completed) = codes.completed.as_deref().filter(|c| !c.trim().is_empty()) else {
        return Err(
            "the study has no completion code: set it in the study's settings first (Prolific \
             needs one to know a participant finished)"
                .into(),
        );
    };
    let mut out = vec![CompletionCode {
        code: completed.trim().to_owned(),
        code_type: "COMPLETED",
        actions: vec![CodeAction::plain(if rules.auto_approve {
            "AUTOMATICALLY_APPROVE"
        } else {
            "MANUALLY_REVIEW"
        })],
    }];
    let mut push = |code: &Option<String>, code_type, actions| {
        if let Some(c) = code.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            out.push(CompletionCode {
                code: c.to_owned(),
                code_type,
                actions,
            });
        }
    };
    push(
        &codes.no_consent,
        "NO_CONSENT",
        vec![CodeAction::plain("REQUEST_RETURN")],
    );
    push(
        &codes.failed_check,
        "FAILED_ATTENTION_CHECK",
        vec![CodeAction::plain("REQUEST_RETURN")],
    );
    match rules.screen_out_reward_cents {
        Some(reward) => push(
            &codes.screened_out,
            "FIXED_SCREENOUT",
            vec![CodeAction {
                action: "FIXED_SCREEN_OUT_PAYMENT",
                fixed_screen_out_reward: Some(reward),
                slots: Some(rules.places),
            }],
        ),
        None => push(
            &codes.screened_out,
            "OTHER",
            vec![CodeAction::plain("MANUALLY_REVIEW")],
        ),
    }
    let mut seen = std::collections::HashSet::new();
    for c in &out {
        if !seen.insert(c.code.as_str()) {
            return Err(format!(
                "the completion code {:?} is used for two outcomes: give each its own",
                c.code
            ));
        }
    }
    Ok(out)
}

/// The external study URL: our entry link with Prolific's placeholders under the study's own
/// parameter names ("{{%PROLIFIC_PID%}} -> Participant Id, {{%STUDY_ID%}} -> This study Id,
/// {{%SESSION_ID%}} -> The session Id",
/// <https://docs.prolific.com/api-reference/studies/the-study-object>).
pub fn external_study_url(
    public_base: &str,
    slug: &str,
    pid_param: &str,
    study_param: &str,
    session_param: &str,
) -> String {
    format!(
        "{}/s/{slug}?{pid_param}={{{{%PROLIFIC_PID%}}}}&{study_param}={{{{%STUDY_ID%}}}}&{session_param}={{{{%SESSION_ID%}}}}",
        public_base.trim_end_matches('/')
    )
}

/// The estimated completion time in whole minutes (Prolific's `estimated_completion_time`)
/// from the completed participants' durations in seconds: the median, rounded up, at least 1.
/// `None` when there is no completion yet (the caller states the default it used).
pub fn estimated_minutes(durations_seconds: &[i64]) -> Option<u32> {
    let mut v: Vec<i64> = durations_seconds
        .iter()
        .copied()
        .filter(|d| *d >= 0)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0
    };
    Some(((median / 60.0).ceil() as u32).max(1))
}

/// Our side of a participant, for the reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ours {
    pub status: ParticipantStatus,
    /// Active and still holding a situation (`reserved_until` in the future).
    pub holds_place: bool,
}

/// What a reconciliation row suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Approve,
    /// Give the place they hold here to the next arrival.
    ReleaseReservation,
    RequestReturn,
    /// Look at it: approve, reject with a reason, or ask for a return.
    Review,
    Nothing,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Approve => "approve",
            Action::ReleaseReservation => "release the reservation",
            Action::RequestReturn => "request a return",
            Action::Review => "review",
            Action::Nothing => "nothing to do",
        }
    }
}

/// A reconciliation row's suggestion: the action and the sentence that explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub action: Action,
    pub why: String,
}

fn ours_text(o: Option<Ours>) -> &'static str {
    match o {
        None => "no record here",
        Some(o) => match o.status {
            ParticipantStatus::Active if o.holds_place => "active here",
            ParticipantStatus::Active => "active here (no place held)",
            ParticipantStatus::Completed => "completed here",
            ParticipantStatus::Withdrawn => "withdrew here",
            ParticipantStatus::NoConsent => "declined consent here",
            ParticipantStatus::FailedCheck => "failed the attention check here",
            ParticipantStatus::ScreenedOut => "screened out here",
        },
    }
}

/// The suggestion for one participant: our status next to Prolific's. `theirs` is the raw
/// status text (`None`: no submission on Prolific); a status we do not know asks for a look.
pub fn suggest(ours: Option<Ours>, theirs: Option<&str>) -> Suggestion {
    use Action as A;
    use ParticipantStatus as P;
    use SubmissionStatus as S;
    let here = ours_text(ours);
    let Some(raw) = theirs else {
        return Suggestion {
            action: A::Nothing,
            why: format!("{here}, no submission on Prolific: not from this Prolific study"),
        };
    };
    let Some(there) = SubmissionStatus::parse(raw) else {
        return Suggestion {
            action: A::Review,
            why: format!(
                "{here}, status {raw:?} there, which this version does not know: check on Prolific"
            ),
        };
    };
    let (action, what) = match (ours.map(|o| (o.status, o.holds_place)), there) {
        (Some((P::Completed, _)), S::AwaitingReview) => (A::Approve, "approve"),
        (Some((P::Active, true)), s) if s.gave_up_the_place() => {
            (A::ReleaseReservation, "release the reservation")
        }
        (Some((P::Active, false)), s) if s.gave_up_the_place() => {
            (A::Nothing, "the place is already released")
        }
        (Some((P::Active, _)), S::AwaitingReview) => (
            A::Review,
            "submitted there without finishing here: review (no completion code came from us)",
        ),
        (
            Some((P::NoConsent | P::FailedCheck | P::Withdrawn, _)),
            S::AwaitingReview | S::Active,
        ) => (A::RequestReturn, "request a return (unpaid, no penalty)"),
        (Some((P::ScreenedOut, _)), S::AwaitingReview) => {
            (A::Review, "review: pay the screen-out or request a return")
        }
        (None, S::AwaitingReview) => (
            A::Review,
            "review: check the code they entered before rejecting (NO_DATA only when nothing arrived)",
        ),
        (Some((P::Completed, _)), S::Returned | S::TimedOut) => (
            A::Review,
            "they gave the submission back after finishing: decide whether their answers stay",
        ),
        (_, S::Approved | S::Rejected | S::ScreenedOut | S::Processing) => (A::Nothing, "decided"),
        (_, S::Reserved | S::Active) => (A::Nothing, "in progress"),
        (_, S::Returned | S::TimedOut) => (A::Nothing, "gone, nothing held here"),
    };
    Suggestion {
        action,
        why: format!("{here}, {} there: {what}", there.as_str()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ours(status: ParticipantStatus, holds_place: bool) -> Option<Ours> {
        Some(Ours {
            status,
            holds_place,
        })
    }

    #[test]
    fn the_reconciliation_table() {
        use Action as A;
        use ParticipantStatus as P;
        let cases: &[(Option<Ours>, Option<&str>, Action, &str)] = &[
            (
                ours(P::Completed, false),
                Some("AWAITING REVIEW"),
                A::Approve,
                "completed here, AWAITING REVIEW there: approve",
            ),
            (
                ours(P::Active, true),
                Some("RETURNED"),
                A::ReleaseReservation,
                "active here, RETURNED there: release the reservation",
            ),
            (
                ours(P::Active, true),
                Some("TIMED-OUT"),
                A::ReleaseReservation,
                "active here, TIMED-OUT there: release the reservation",
            ),
            (
                ours(P::Active, false),
                Some("RETURNED"),
                A::Nothing,
                "already released",
            ),
            (
                ours(P::Active, true),
                Some("ACTIVE"),
                A::Nothing,
                "in progress",
            ),
            (
                ours(P::Active, true),
                Some("AWAITING REVIEW"),
                A::Review,
                "without finishing here",
            ),
            (
                ours(P::NoConsent, false),
                Some("AWAITING REVIEW"),
                A::RequestReturn,
                "declined consent here",
            ),
            (
                ours(P::FailedCheck, false),
                Some("AWAITING_REVIEW"),
                A::RequestReturn,
                "request a return",
            ),
            (
                ours(P::Withdrawn, false),
                Some("ACTIVE"),
                A::RequestReturn,
                "withdrew here",
            ),
            (
                ours(P::Completed, false),
                Some("APPROVED"),
                A::Nothing,
                "decided",
            ),
            (
                ours(P::Completed, false),
                Some("RETURNED"),
                A::Review,
                "after finishing",
            ),
            (None, Some("AWAITING REVIEW"), A::Review, "no record here"),
            (None, Some("RETURNED"), A::Nothing, "no record here"),
            (
                ours(P::Completed, false),
                None,
                A::Nothing,
                "no submission on Prolific",
            ),
            (
                ours(P::Completed, false),
                Some("PARTIALLY APPROVED"),
                A::Review,
                "does not know",
            ),
        ];
        for (o, t, action, text) in cases {
            let s = suggest(*o, *t);
            assert_eq!(s.action, *action, "{o:?} {t:?}: {}", s.why);
            assert!(
                s.why.contains(text),
                "{o:?} {t:?}: {:?} lacks {text:?}",
                s.why
            );
        }
    }

    #[test]
    fn codes_carry_the_actions_the_rules_allow() {
        let codes = StudyCodes {
            completed: Some("DONE1".into()),
            no_consent: Some("NOC1".into()),
            failed_check: Some("FAIL1".into()),
            screened_out: Some("OUT1".into()),
        };
        let manual = completion_codes(
            &codes,
            CodeRules {
                auto_approve: false,
                screen_out_reward_cents: None,
                places: 40,
            },
        )
        .unwrap();
        let v = serde_json::to_value(&manual).unwrap();
        assert_eq!(v[0]["code_type"], "COMPLETED");
        assert_eq!(v[0]["actions"][0]["action"], "MANUALLY_REVIEW");
        assert_eq!(v[1]["code_type"], "NO_CONSENT");
        assert_eq!(v[1]["actions"][0]["action"], "REQUEST_RETURN");
        assert_eq!(v[2]["code_type"], "FAILED_ATTENTION_CHECK");
        assert_eq!(v[2]["actions"][0]["action"], "REQUEST_RETURN");
        assert_eq!(v[3]["actions"][0]["action"], "MANUALLY_REVIEW");
        assert!(v[3]["actions"][0].get("slots").is_none());
        let auto = completion_codes(
            &codes,
            CodeRules {
                auto_approve: true,
                screen_out_reward_cents: Some(20),
                places: 40,
            },
        )
        .unwrap();
        let v = serde_json::to_value(&auto).unwrap();
        assert_eq!(v[0]["actions"][0]["action"], "AUTOMATICALLY_APPROVE");
        assert_eq!(v[3]["code_type"], "FIXED_SCREENOUT");
        assert_eq!(v[3]["actions"][0]["action"], "FIXED_SCREEN_OUT_PAYMENT");
        assert_eq!(v[3]["actions"][0]["fixed_screen_out_reward"], 20);
        assert_eq!(v[3]["actions"][0]["slots"], 40);
        // Without a completion code there is no draft; one code for two outcomes is refused.
        assert!(completion_codes(&StudyCodes::default(), CodeRules::default()).is_err());
        let twice = StudyCodes {
            completed: Some("X".into()),
            no_consent: Some("X".into()),
            ..StudyCodes::default()
        };
        assert!(completion_codes(&twice, CodeRules::default()).is_err());
    }

    #[test]
    fn rejections_need_a_known_category_and_100_characters() {
        let long = "x".repeat(100);
        assert_eq!(
            check_rejection("LOW_EFFORT", &long).unwrap().0,
            RejectionCategory::LowEffort
        );
        assert!(check_rejection("LOW_EFFORT", &"x".repeat(99)).is_err());
        // Characters, not bytes; surrounding blanks do not count.
        assert!(check_rejection("NO_DATA", &"é".repeat(60)).is_err());
        assert!(check_rejection("NO_DATA", &format!("  {}  ", "x".repeat(99))).is_err());
        assert!(
            check_rejection("LAZY", &long)
                .unwrap_err()
                .contains("TOO_QUICKLY")
        );
        assert!(check_return_reasons(&[" ".into()]).is_err());
        assert_eq!(
            check_return_reasons(&["Withdrew consent.".into(), String::new()]).unwrap(),
            vec!["Withdrew consent.".to_owned()]
        );
    }

    #[test]
    fn the_estimate_is_the_median_rounded_up() {
        assert_eq!(estimated_minutes(&[]), None);
        assert_eq!(estimated_minutes(&[30]), Some(1));
        assert_eq!(estimated_minutes(&[300, 420, 3000]), Some(7));
        assert_eq!(estimated_minutes(&[300, 400]), Some(6));
    }

    #[test]
    fn statuses_read_both_spellings() {
        assert_eq!(
            SubmissionStatus::parse("awaiting_review"),
            Some(SubmissionStatus::AwaitingReview)
        );
        assert_eq!(
            SubmissionStatus::parse("TIMED-OUT"),
            Some(SubmissionStatus::TimedOut)
        );
        assert_eq!(SubmissionStatus::parse("nonsense"), None);
    }

    #[test]
    fn the_external_url_maps_the_placeholders_to_our_parameters() {
        assert_eq!(
            external_study_url("https://eb.example/", "s1", "pid", "sid", "sess"),
            "https://eb.example/s/s1?pid={{%PROLIFIC_PID%}}&sid={{%STUDY_ID%}}&sess={{%SESSION_ID%}}"
        );
    }
}
