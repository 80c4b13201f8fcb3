//! The change of one instrument category between the two measures, and its test: the cells
//! of the report (`domain::report`) and of its split by language (`domain::by_language`),
//! kept below both so each reads the same statistics.
//!
//! Humans: paired after − before (`d_z`); models: default against evoked trials, two-sample by
//! mode (`observation::model_test`, Hedges' g). See `domain::report` for the whole method.

use serde::Serialize;

use super::observation::{Options, Unit, model_test};
use super::stats::{self, Summary, TTest};

pub(crate) fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// A category's evoked values from (situation, value) pairs: every trial, or (`Unit::Situation`)
/// the mean over each situation's repeats.
pub(crate) fn unit_values(members: impl Iterator<Item = (i64, f64)>, unit: Unit) -> Vec<f64> {
    match unit {
        Unit::Trial => members.map(|(_, v)| v).collect(),
        Unit::Situation => {
            let mut by: std::collections::BTreeMap<i64, (f64, usize)> = Default::default();
            for (s, v) in members {
                let e = by.entry(s).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
            by.values().map(|(sum, n)| sum / *n as f64).collect()
        }
    }
}

/// Direction of a change as the paper prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Up,
    Down,
    None,
}

impl Direction {
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::Up => "↑",
            Direction::Down => "↓",
            Direction::None => "−",
        }
    }
}

/// The numbers of one category in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryResult {
    pub name: String,
    pub n_default: usize,
    pub n_evoked: usize,
    pub default_mean: Option<f64>,
    pub default_sd: Option<f64>,
    pub evoked_mean: Option<f64>,
    pub evoked_sd: Option<f64>,
    /// `evoked_mean − default_mean`.
    pub delta: Option<f64>,
    pub t: Option<f64>,
    pub df: Option<f64>,
    /// Two-sided p of the test.
    pub p: Option<f64>,
    /// The corrected p (factor rows, when a correction was asked for).
    pub p_adjusted: Option<f64>,
    pub significant: bool,
    pub direction: Direction,
    /// Hedges' g (models) or paired d_z (humans).
    pub effect_size: Option<f64>,
    /// "paired", "student", "welch", or "none" when no test was possible.
    pub test: &'static str,
}

impl CategoryResult {
    /// The paper's cell: `↑ (+22.2)`, `↓ (-27.6)`, `− (+0.2)`; `n/a` without data.
    pub fn cell(&self) -> String {
        match self.delta {
            Some(d) => format!("{} ({})", self.direction.arrow(), signed(d)),
            None => "n/a".to_owned(),
        }
    }

    /// `28.0 ± 8.9` of the default measure.
    pub fn default_cell(&self) -> String {
        match (self.default_mean, self.default_sd) {
            (Some(m), Some(s)) => format!("{m:.1} ± {s:.1}"),
            (Some(m), None) => format!("{m:.1}"),
            _ => "n/a".to_owned(),
        }
    }
}

/// `+0.2`, `-0.9`, one decimal (the paper's format).
pub fn signed(x: f64) -> String {
    let r = format!("{x:.1}");
    if r.starts_with('-') {
        if r == "-0.0" { "0.0".to_owned() } else { r }
    } else {
        format!("+{r}")
    }
}

pub(crate) fn described(
    name: &str,
    default: &[f64],
    evoked: &[f64],
) -> (CategoryResult, Option<Summary>, Option<Summary>) {
    let d = stats::try_summary(default);
    let e = stats::try_summary(evoked);
    let sd = |s: Option<Summary>| s.filter(|s| s.n >= 2).and_then(|s| finite(s.sd));
    let result = CategoryResult {
        name: name.to_owned(),
        n_default: default.len(),
        n_evoked: evoked.len(),
        default_mean: d.and_then(|s| finite(s.mean)),
        default_sd: sd(d),
        evoked_mean: e.and_then(|s| finite(s.mean)),
        evoked_sd: sd(e),
        delta: match (d, e) {
            (Some(d), Some(e)) => finite(e.mean - d.mean),
            _ => None,
        },
        t: None,
        df: None,
        p: None,
        p_adjusted: None,
        significant: false,
        direction: Direction::None,
        effect_size: None,
        test: "none",
    };
    (result, d, e)
}

pub(crate) fn apply_test(result: &mut CategoryResult, test: Option<TTest>, name: &'static str) {
    if let Some(t) = test
        && let (Some(tv), Some(df), Some(p)) = (finite(t.t), finite(t.df), finite(t.p))
    {
        result.t = Some(tv);
        result.df = Some(df);
        result.p = Some(p.clamp(0.0, 1.0));
        result.test = name;
    }
}

pub(crate) fn decide(result: &mut CategoryResult, alpha: f64) {
    let p = result.p_adjusted.or(result.p);
    result.significant = p.is_some_and(|p| p <= alpha);
    result.direction = match (result.significant, result.t) {
        (true, Some(t)) if t > 0.0 => Direction::Up,
        (true, Some(t)) if t < 0.0 => Direction::Down,
        _ => Direction::None,
    };
}

/// Paired after-vs-before of the humans in one group.
pub(crate) fn human_category(name: &str, before: &[f64], after: &[f64]) -> CategoryResult {
    let (mut r, _, _) = described(name, before, after);
    apply_test(&mut r, stats::paired_t(before, after), "paired");
    r.effect_size = stats::paired_dz(before, after).and_then(finite);
    r
}

/// Two-sample default-vs-evoked of a model in one group, by mode.
pub(crate) fn model_category(
    name: &str,
    default: &[f64],
    evoked: &[f64],
    options: Options,
) -> CategoryResult {
    let (mut r, d, e) = described(name, default, evoked);
    if let (Some(d), Some(e)) = (d, e) {
        if let Some((test, name)) = model_test(d, e, options) {
            apply_test(&mut r, Some(test), name);
        }
        r.effect_size = stats::hedges_g(d, e).and_then(finite);
    }
    r
}
