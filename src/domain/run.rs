//! What a model run is made of, before any I/O: its sampling parameters, which situations it
//! covers, and the list of trials with their seeded item orders.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::prompt::{CustomTemplate, Measure, shuffled_order, trial_seed};
use super::situation::Situation;

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
}

impl Default for RunParams {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 1.0,
            max_tokens: 512,
            send_seed: true,
            custom_template: None,
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

/// The name of the set holding the 175 situations the paper tested (see the README's import).
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
            });
        }
    }
    out
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn situation(key: &str, emotion: &str, fi: u32, factor: &str) -> Situation {
        Situation {
            key: key.into(),
            emotion: emotion.into(),
            factor_index: fi,
            factor_name: factor.into(),
            scenario_index: 0,
            text: "t".into(),
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
