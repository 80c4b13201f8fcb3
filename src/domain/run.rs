//! What a model run is made of, before any I/O: its sampling parameters, which situations it
//! covers, and the list of trials with their seeded item orders.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::prompt::{CustomTemplate, Measure, shuffled_order, trial_seed};
use super::protocol::{Persona, Protocol};
use super::situation::{Situation, Valence};

/// Gives a stored enum `as_str`, `parse` (exactly what `as_str` writes) and `Display`.
macro_rules! stored_names {
    ($ty:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $text),*
                }
            }

            pub fn parse(s: &str) -> Option<$ty> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// Where a run stands (`model_runs.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Queued,
    Running,
    Paused,
    Cancelled,
    Completed,
    Failed,
}

stored_names!(RunStatus {
    Queued => "queued",
    Running => "running",
    Paused => "paused",
    Cancelled => "cancelled",
    Completed => "completed",
    Failed => "failed",
});

impl RunStatus {
    /// Workers may claim its trials.
    pub fn is_active(self) -> bool {
        matches!(self, RunStatus::Queued | RunStatus::Running)
    }
}

/// Where a trial stands in the queue (`model_trials.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialStatus {
    Pending,
    Leased,
    Done,
    Failed,
}

stored_names!(TrialStatus {
    Pending => "pending",
    Leased => "leased",
    Done => "done",
    Failed => "failed",
});

/// How a done trial's scores were read (`model_trials.method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialMethod {
    /// From the reply's text only.
    Parsed,
    /// From the text, with every item's answer distribution from the token log-probabilities.
    Logprobs,
}

stored_names!(TrialMethod {
    Parsed => "parsed",
    Logprobs => "logprobs",
});

/// Sampling parameters sent with every request of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunParams {
    pub temperature: f64,
    pub top_p: f64,
    pub max_tokens: u32,
    /// Send a per-trial seed to providers that accept one (OpenAI-compatible, Gemini).
    pub send_seed: bool,
    /// The wording when the run's template is a researcher's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_template: Option<CustomTemplate>,
    /// Ask for token log-probabilities (where the provider gives them) and store each item's
    /// answer distribution (#17).
    #[serde(default, skip_serializing_if = "is_false")]
    pub logprobs: bool,
    /// Send every request even when the response cache holds its answer (the fresh answers
    /// replace the cached ones).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fresh: bool,
    /// The run pauses once its recorded cost reaches this (micro-USD; `--max-cost`). Trials
    /// in flight when it is reached still finish, so the total can pass it by at most one
    /// in-flight window (the provider's concurrency times one trial's cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_micros: Option<i64>,
    /// Send the trials through the provider's batch API (OpenAI Batch, Anthropic Message
    /// Batches): about half the price, answers within the provider's window instead of at once.
    #[serde(default, skip_serializing_if = "is_false")]
    pub batch: bool,
    /// How the questions are asked: the paper's separate prompts, or a conversation that
    /// mirrors a participant's session (#17). Runs made before protocols are `paper`.
    #[serde(default, skip_serializing_if = "is_paper")]
    pub protocol: Protocol,
    /// Only the situations of these valences (#18; `--valence`), empty for all of them. Kept
    /// with the run beside its selection so that its page says what it took.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub valences: Vec<Valence>,
}

fn is_paper(p: &Protocol) -> bool {
    *p == Protocol::Paper
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for RunParams {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 512,
            send_seed: true,
            custom_template: None,
            logprobs: false,
            fresh: false,
            max_cost_micros: None,
            batch: false,
            protocol: Protocol::Paper,
            valences: Vec::new(),
        }
    }
}

/// Which situations a run takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// Every situation of the study's set.
    All,
    /// Every situation of the set `tested-175` (the 175 the paper tested).
    Tested,
    /// Every situation of the named set.
    Set(String),
    /// The situations of these emotions (in the study's set).
    Emotions(Vec<String>),
    /// The situations of these factors, named `Emotion-index` (e.g. `Anger-0`) or by factor name.
    Factors(Vec<String>),
    /// These situation keys.
    Keys(Vec<String>),
}

/// The name of the set holding the 175 situations the paper tested (see docs/reproduce.md).
pub const TESTED_SET: &str = "tested-175";

impl FromStr for Selection {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let list = |v: &str| -> Result<Vec<String>, String> {
            let items: Vec<String> = v
                .split(',')
                .map(|x| x.trim().to_owned())
                .filter(|x| !x.is_empty())
                .collect();
            if items.is_empty() {
                Err(format!("{s:?}: the list after ':' is empty"))
            } else {
                Ok(items)
            }
        };
        match s.split_once(':') {
            None if s.eq_ignore_ascii_case("all") => Ok(Selection::All),
            None if s.eq_ignore_ascii_case("tested") => Ok(Selection::Tested),
            Some((kind, rest)) => match kind.trim().to_ascii_lowercase().as_str() {
                "set" => Ok(Selection::Set(rest.trim().to_owned())),
                "emotion" => Ok(Selection::Emotions(list(rest)?)),
                "factor" => Ok(Selection::Factors(list(rest)?)),
                "keys" | "key" => Ok(Selection::Keys(list(rest)?)),
                _ => Err(bad_selection(s)),
            },
            None => Err(bad_selection(s)),
        }
    }
}

fn bad_selection(s: &str) -> String {
    format!(
        "unknown situation selection {s:?}: use all, tested, set:NAME, emotion:Anger[,Fear], \
         factor:Anger-0[,...] or keys:KEY[,KEY]"
    )
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selection::All => f.write_str("all"),
            Selection::Tested => f.write_str("tested"),
            Selection::Set(name) => write!(f, "set:{name}"),
            Selection::Emotions(v) => write!(f, "emotion:{}", v.join(",")),
            Selection::Factors(v) => write!(f, "factor:{}", v.join(",")),
            Selection::Keys(v) => write!(f, "keys:{}", v.join(",")),
        }
    }
}

impl Selection {
    /// Whether a situation is of one of `valences` (all of them when empty).
    pub fn valence_matches(valences: &[Valence], s: &Situation) -> bool {
        valences.is_empty() || valences.contains(&s.valence)
    }

    /// Whether a situation of the chosen set belongs to the selection (All, Tested and Set
    /// choose the set; within it they take everything).
    pub fn matches(&self, s: &Situation) -> bool {
        match self {
            Selection::All | Selection::Tested | Selection::Set(_) => true,
            Selection::Emotions(v) => v.iter().any(|e| e.eq_ignore_ascii_case(&s.emotion)),
            Selection::Factors(v) => {
                let code = format!("{}-{}", s.emotion, s.factor_index);
                v.iter().any(|f| {
                    f.eq_ignore_ascii_case(&code) || f.eq_ignore_ascii_case(s.factor_name.trim())
                })
            }
            Selection::Keys(v) => v.iter().any(|k| k == &s.key),
        }
    }
}

/// One trial to create: a measure, a situation (none for the default measure), a repeat
/// index and the item order shown, derived from the run seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedTrial {
    pub measure: Measure,
    /// Index into the situations given to [`plan_trials`]; None for the default measure.
    pub situation: Option<usize>,
    /// `""` for the default measure (so the uniqueness of trials holds on both backends).
    pub situation_key: String,
    pub repeat: u32,
    /// Item numbers in display order.
    pub item_order: Vec<u32>,
    /// A conversation's first questionnaire (within-session, persona): its display order.
    pub before_order: Option<Vec<u32>>,
    /// Who a persona trial answers as.
    pub persona: Option<Persona>,
}

/// The item order of one trial: a permutation seeded from the run seed and the trial identity,
/// so a run can be reproduced and `prompt show --seed` shows what a run sent.
pub fn trial_order(
    run_seed: u64,
    measure: Measure,
    key: &str,
    repeat: u32,
    items: usize,
) -> Vec<u32> {
    shuffled_order(items, trial_seed(run_seed, measure, key, repeat))
}

/// Every trial of a run: `default_repeats` default-measure trials, then `repeats` per situation
/// in the order given.
pub fn plan_trials(
    situation_keys: &[&str],
    repeats: u32,
    default_repeats: u32,
    run_seed: u64,
    items: usize,
) -> Vec<PlannedTrial> {
    let mut out = Vec::with_capacity(
        (default_repeats as usize).saturating_add(situation_keys.len() * repeats as usize),
    );
    for repeat in 0..default_repeats {
        out.push(PlannedTrial {
            measure: Measure::Default,
            situation: None,
            situation_key: String::new(),
            repeat,
            item_order: trial_order(run_seed, Measure::Default, "", repeat, items),
            before_order: None,
            persona: None,
        });
    }
    for (index, key) in situation_keys.iter().enumerate() {
        for repeat in 0..repeats {
            out.push(PlannedTrial {
                measure: Measure::Evoked,
                situation: Some(index),
                situation_key: (*key).to_owned(),
                repeat,
                item_order: trial_order(run_seed, Measure::Evoked, key, repeat, items),
                before_order: None,
                persona: None,
            });
        }
    }
    out
}

/// The trials of a within-session run: `repeats` conversations per situation, each an evoked
/// trial whose first questionnaire has its own seeded order (the default measure's order for
/// the same key and repeat), as each participant got their own two orders.
pub fn plan_within_session(
    situation_keys: &[&str],
    repeats: u32,
    run_seed: u64,
    items: usize,
) -> Vec<PlannedTrial> {
    let mut out = plan_trials(situation_keys, repeats, 0, run_seed, items);
    for t in &mut out {
        t.before_order = Some(trial_order(
            run_seed,
            Measure::Default,
            &t.situation_key,
            t.repeat,
            items,
        ));
    }
    out
}

/// One human participant for a persona run: who they are, the situation they saw (an index
/// into the run's situations, and its key) and the two item orders they were shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonaSeat {
    pub persona: Persona,
    pub situation: usize,
    pub situation_key: String,
    pub before_order: Vec<u32>,
    pub after_order: Vec<u32>,
}

/// The trials of a persona run: one conversation per participant, in the order given, with
/// that participant's situation and orders; the repeat index numbers the participants (it is
/// part of the trial's seed and cache address).
pub fn plan_personas(seats: Vec<PersonaSeat>) -> Vec<PlannedTrial> {
    (0u32..)
        .zip(seats)
        .map(|(repeat, seat)| PlannedTrial {
            measure: Measure::Evoked,
            situation: Some(seat.situation),
            situation_key: seat.situation_key,
            repeat,
            item_order: seat.after_order,
            before_order: Some(seat.before_order),
            persona: Some(seat.persona),
        })
        .collect()
}

/// The cost in millionths of a dollar of some tokens at prices per million tokens.
pub fn cost_micros(
    input_tokens: i64,
    output_tokens: i64,
    price_in: Option<f64>,
    price_out: Option<f64>,
) -> Option<i64> {
    if price_in.is_none() && price_out.is_none() {
        return None;
    }
    // tokens × (USD per 1e6 tokens) = USD × 1e6 = micro-USD.
    let micros = input_tokens as f64 * price_in.unwrap_or(0.0)
        + output_tokens as f64 * price_out.unwrap_or(0.0);
    Some(micros.round() as i64)
}

/// What went wrong with one request, by what should happen next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// 429: wait (Retry-After when given) and retry; lower the concurrency.
    RateLimited,
    /// 5xx: retry with backoff.
    Server,
    /// No complete reply in time: retry with backoff.
    Timeout,
    /// Refused, reset or broken connection: retry with backoff.
    Connection,
    /// 401/403, no key, or a key the provider calls invalid in its body (Gemini answers 400
    /// `API_KEY_INVALID`): never retried; the run fails with a message.
    Auth,
    /// The account's quota, credit or spend limit is used up (OpenAI 429 `insufficient_quota`,
    /// Anthropic `billing_error` or its spend-limit 400, Gemini per-day `RESOURCE_EXHAUSTED`):
    /// retrying cannot help, so the run fails with a message.
    Quota,
    /// 404: the model (or the base URL) does not exist; the run fails with a message.
    UnknownModel,
    /// 400 and other 4xx: the request itself is wrong; not retried.
    BadRequest,
    /// The reply was not a completion we can read, or its text not the answers (parse).
    Parse,
    /// The reply stopped at the token cap (no answer, or an unreadable partial one); not
    /// re-asked unless the provider says `retry_truncated`.
    Truncated,
    /// The model declined to answer; not re-asked unless `retry_refused`.
    Refused,
    /// The provider's safety system withheld the prompt or the reply; as `Refused`.
    Blocked,
    /// The prompt could not be built from the study's instrument and situation (recorded on
    /// the trial; no request was sent).
    Prompt,
    /// An attempt whose worker lost its lease before it finished (another worker took over).
    Abandoned,
    /// An attempt cut short when its worker stopped (the trial went back to the queue).
    Interrupted,
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Server => "server",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connection => "connection",
            ErrorClass::Auth => "auth",
            ErrorClass::Quota => "quota",
            ErrorClass::UnknownModel => "unknown_model",
            ErrorClass::BadRequest => "bad_request",
            ErrorClass::Parse => "parse",
            ErrorClass::Truncated => "truncated",
            ErrorClass::Refused => "refused",
            ErrorClass::Blocked => "blocked",
            ErrorClass::Prompt => "prompt",
            ErrorClass::Abandoned => "abandoned",
            ErrorClass::Interrupted => "interrupted",
        }
    }

    pub const ALL: [ErrorClass; 15] = [
        ErrorClass::RateLimited,
        ErrorClass::Server,
        ErrorClass::Timeout,
        ErrorClass::Connection,
        ErrorClass::Auth,
        ErrorClass::Quota,
        ErrorClass::UnknownModel,
        ErrorClass::BadRequest,
        ErrorClass::Parse,
        ErrorClass::Truncated,
        ErrorClass::Refused,
        ErrorClass::Blocked,
        ErrorClass::Prompt,
        ErrorClass::Abandoned,
        ErrorClass::Interrupted,
    ];

    /// A stored value (`model_trials.error_class`, `trial_attempts.error_class`), exactly as
    /// [`ErrorClass::as_str`] writes it.
    pub fn parse(s: &str) -> Option<ErrorClass> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Not the trial's fault and the same for every trial: the run stops with the message.
    pub fn stops_the_run(self) -> bool {
        matches!(
            self,
            ErrorClass::Auth | ErrorClass::Quota | ErrorClass::UnknownModel
        )
    }

    /// Worth another attempt after a pause.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorClass::RateLimited
                | ErrorClass::Server
                | ErrorClass::Timeout
                | ErrorClass::Connection
        )
    }
}

/// Which request field carries the output-token cap (OpenAI-compatible servers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenField {
    /// `max_tokens`: what OpenAI-compatible servers (vLLM, llama.cpp, Mistral) read.
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's reasoning models refuse `max_tokens`.
    MaxCompletionTokens,
}

impl TokenField {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenField::MaxTokens => "max_tokens",
            TokenField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// The parameters a run's requests actually carry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SentParams {
    pub profile: String,
    /// None: not sent (the model samples at its own default).
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub token_field: TokenField,
    pub max_tokens: u32,
    /// None: no seed is sent.
    pub seed_field: Option<String>,
    pub system_message: bool,
    /// `top_logprobs` asked with `logprobs: true`; None: no log-probabilities are asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Where what is sent differs from what was asked, and why (shown before the run starts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The stored parameters of a run (the `params` column): what was requested, and what is sent.
/// Runs made before profiles existed have no `sent`; it is then worked out when they load.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunManifest {
    #[serde(flatten)]
    pub requested: RunParams,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<SentParams>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_error_class_reads_back_as_itself_and_nothing_else_decodes() {
        for c in ErrorClass::ALL {
            assert_eq!(ErrorClass::parse(c.as_str()), Some(c));
            // serde (the JSON of `runs show --trials`) spells it as stored.
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
        let names: std::collections::HashSet<_> =
            ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), ErrorClass::ALL.len());
        assert_eq!(ErrorClass::parse("Parse"), None);
        assert_eq!(ErrorClass::parse(""), None);
    }

    fn situation(key: &str, emotion: &str, fi: u32, factor: &str) -> Situation {
        Situation {
            key: key.into(),
            emotion: emotion.into(),
            factor_index: fi,
            factor_name: factor.into(),
            scenario_index: 0,
            text: "t".into(),
            variant_of: None,
            valence: super::super::situation::Valence::Negative,
        }
    }

    #[test]
    fn selections_parse_and_print_back() {
        for s in [
            "all",
            "tested",
            "set:tested-175",
            "emotion:Anger,Fear",
            "factor:Anger-0",
            "keys:a,b",
        ] {
            let parsed: Selection = s.parse().unwrap();
            assert_eq!(parsed.to_string(), s);
        }
        assert!("emotion:".parse::<Selection>().is_err());
        assert!("everything".parse::<Selection>().is_err());
    }

    #[test]
    fn selections_match_by_emotion_factor_code_factor_name_and_key() {
        let s = situation("Anger-0_scenario-1", "Anger", 0, "Queue Jumpers");
        assert!(Selection::Emotions(vec!["anger".into()]).matches(&s));
        assert!(!Selection::Emotions(vec!["Fear".into()]).matches(&s));
        assert!(Selection::Factors(vec!["Anger-0".into()]).matches(&s));
        assert!(Selection::Factors(vec!["queue jumpers".into()]).matches(&s));
        assert!(!Selection::Factors(vec!["Anger-1".into()]).matches(&s));
        assert!(Selection::Keys(vec!["Anger-0_scenario-1".into()]).matches(&s));
    }

    #[test]
    fn a_plan_has_default_then_evoked_trials_with_reproducible_distinct_orders() {
        let plan = plan_trials(&["a", "b"], 3, 2, 42, 20);
        assert_eq!(plan.len(), 2 + 2 * 3);
        assert_eq!(plan[0].measure, Measure::Default);
        assert_eq!(plan[0].situation_key, "");
        assert_eq!(plan[2].situation, Some(0));
        assert_eq!(plan[7].situation_key, "b");
        assert_eq!(plan[7].repeat, 2);
        assert_eq!(plan, plan_trials(&["a", "b"], 3, 2, 42, 20));
        assert_ne!(plan[2].item_order, plan[3].item_order);
        for t in &plan {
            let mut sorted = t.item_order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (1..=20).collect::<Vec<u32>>());
        }
        assert_ne!(
            plan[0].item_order,
            plan_trials(&[], 0, 1, 43, 20)[0].item_order
        );
    }

    #[test]
    fn within_session_trials_are_evoked_with_their_own_first_order() {
        let plan = plan_within_session(&["a", "b"], 2, 7, 20);
        assert_eq!(plan.len(), 4);
        for t in &plan {
            assert_eq!(t.measure, Measure::Evoked);
            let before = t.before_order.clone().unwrap();
            assert_eq!(
                before,
                trial_order(7, Measure::Default, &t.situation_key, t.repeat, 20)
            );
            assert_ne!(before, t.item_order);
        }
        let seat = |n: &str, s: usize| PersonaSeat {
            persona: Persona {
                participant: n.into(),
                ..Persona::default()
            },
            situation: s,
            situation_key: format!("k{s}"),
            before_order: vec![2, 1],
            after_order: vec![1, 2],
        };
        let p = plan_personas(vec![seat("x", 1), seat("y", 1)]);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].repeat, p[1].repeat), (0, 1));
        assert_eq!(p[1].persona.as_ref().unwrap().participant, "y");
        assert_eq!(p[0].before_order, Some(vec![2, 1]));
        assert_eq!(p[0].item_order, vec![1, 2]);
    }

    #[test]
    fn cost_is_tokens_times_price_per_million() {
        assert_eq!(
            cost_micros(1_000_000, 0, Some(0.15), Some(0.6)),
            Some(150_000)
        );
        assert_eq!(
            cost_micros(1000, 500, Some(3.0), Some(15.0)),
            Some(3000 + 7500)
        );
        assert_eq!(cost_micros(10, 10, None, None), None);
    }
}
