//! The new-run form's planning block (#16, point 5): effect size, α and power in the query of
//! `GET /admin/runs/new` give the repeats the report's two-sample test needs
//! (`domain::power`, as `emotionbench plan`), and the form's repeat fields are set to them.
//! A GET form, answered by the server: the CSP allows no inline script.

use serde::Deserialize;

use crate::domain::power;

/// The planning inputs as typed (kept to show them again).
#[derive(Debug, Default, Deserialize)]
pub struct PlanQuery {
    pub effect_size: Option<String>,
    pub plan_alpha: Option<String>,
    pub power: Option<String>,
}

/// What the block shows: the inputs, and the answer or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct Planning {
    pub effect_size: String,
    pub alpha: String,
    pub power: String,
    /// The sentence with the answer, when the inputs gave one.
    pub answer: Option<String>,
    /// The repeats to set the form's fields to.
    pub repeats: Option<u32>,
    pub error: Option<String>,
}

/// The report's default α (`report --alpha`) and the usual 80 % power.
const DEFAULT_ALPHA: &str = "0.01";
const DEFAULT_POWER: &str = "0.8";

impl Planning {
    /// The block before anything was asked.
    pub fn empty() -> Planning {
        Planning::of(&PlanQuery::default())
    }

    /// The answer to the query (none when no effect size was given).
    pub fn of(query: &PlanQuery) -> Planning {
        let text = |v: &Option<String>, default: &str| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .unwrap_or(default)
                .to_owned()
        };
        let mut planning = Planning {
            effect_size: text(&query.effect_size, ""),
            alpha: text(&query.plan_alpha, DEFAULT_ALPHA),
            power: text(&query.power, DEFAULT_POWER),
            answer: None,
            repeats: None,
            error: None,
        };
        if planning.effect_size.is_empty() {
            return planning;
        }
        let number = |what: &str, s: &str| {
            s.parse::<f64>()
                .map_err(|_| format!("the {what} must be a number, not {s:?}"))
        };
        let result = number("effect size", &planning.effect_size).and_then(|d| {
            let a = number("α", &planning.alpha)?;
            let p = number("power", &planning.power)?;
            power::plan(d, a, p).map_err(|e| e.to_string())
        });
        match result {
            Ok(plan) => {
                planning.answer = Some(format!(
                    "{} trials in each group compared: power {:.3} for d = {} at α = {} \
                     ({}, df = {}). The repeat fields below are set to {}.",
                    plan.repeats,
                    plan.achieved_power,
                    plan.effect_size,
                    plan.alpha,
                    plan.test,
                    plan.df,
                    plan.repeats
                ));
                planning.repeats = Some(plan.repeats);
            }
            Err(e) => planning.error = Some(e),
        }
        planning
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(d: &str, a: &str, p: &str) -> PlanQuery {
        PlanQuery {
            effect_size: Some(d.into()),
            plan_alpha: Some(a.into()),
            power: Some(p.into()),
        }
    }

    #[test]
    fn an_answer_sets_the_repeats_and_bad_input_says_why() {
        let ok = Planning::of(&query("0.5", "0.05", "0.8"));
        assert_eq!(ok.repeats, Some(64));
        assert!(ok.answer.unwrap().starts_with("64 trials in each group"));
        let bad = Planning::of(&query("half", "0.05", "0.8"));
        assert_eq!(bad.repeats, None);
        assert_eq!(
            bad.error.as_deref(),
            Some("the effect size must be a number, not \"half\"")
        );
        let none = Planning::empty();
        assert_eq!(
            (none.repeats, none.error, none.alpha.as_str()),
            (None, None, "0.01")
        );
    }
}
