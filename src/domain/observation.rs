//! What the report and the alignment are computed from: the study's layout (categories,
//! emotions, factors), the humans' and the models' observations, and the options. Kept below
//! both `domain::report` and `domain::alignment` (which each read them) so neither has to
//! import the other's inputs.

use serde::Serialize;

use super::stats::{self, Summary, TTest};

/// The upstream constant added to standard deviations in paper mode.
pub const PAPER_EPSILON: f64 = 1e-8;

/// Which statistical procedure for the models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Upstream EmotionBench: F-test, then Student or Welch, ε on SDs, repeats pooled.
    Paper,
    /// Welch without ε.
    Default,
}

/// What one model observation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Every trial (repeats pooled, as upstream).
    Trial,
    /// The mean over the repeats of each situation.
    Situation,
}

/// Multiple-comparison correction across a cohort's factor table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    Bh,
    Holm,
}

/// Parses one of an option's values (as clap spells them), naming the choices when it fails:
/// the web form and the command line accept the same words.
pub fn choice<T: clap::ValueEnum>(what: &str, s: &str) -> Result<T, String> {
    T::from_str(s, false).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_owned()))
            .collect();
        format!("unknown {what} {s:?}: expected {}", names.join(" or "))
    })
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        choice("mode", s)
    }
}

impl std::str::FromStr for Unit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        choice("unit", s)
    }
}

impl std::str::FromStr for Correction {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        choice("correction", s)
    }
}

/// How the report is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub mode: Mode,
    pub alpha: f64,
    pub unit: Unit,
    pub correction: Option<Correction>,
    /// Seed of the alignment's bootstrap, ceiling splits and null responders: the same data and
    /// seed give the same report byte for byte.
    pub seed: u64,
    /// Bootstrap resamples, and the number of random half splits of the human ceiling; 0 turns
    /// both off (no intervals, no ceiling).
    pub resamples: usize,
}

/// The bootstrap's default seed (the number, so it is easy to remember and to quote).
pub const DEFAULT_SEED: u64 = 16;

/// 1,000 resamples: the Monte-Carlo error of a 2.5 % percentile is then about
/// √(0.025·0.975/1000) ≈ 0.5 percentage points of coverage, small against the intervals'
/// width, and the report of 10 models × 1,800 trials and 1,266 humans stays under a second
/// (BENCHMARKS.md, "Report"); more resamples are an option away.
pub const DEFAULT_RESAMPLES: usize = 1_000;

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Default,
            alpha: 0.01,
            unit: Unit::Trial,
            correction: None,
            seed: DEFAULT_SEED,
            resamples: DEFAULT_RESAMPLES,
        }
    }
}

/// A factor of the situation set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Factor {
    /// Index into [`Layout::emotions`].
    pub emotion: usize,
    pub index: i32,
    pub name: String,
}

/// The study's categories, emotions and factors, in display order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub categories: Vec<String>,
    pub emotions: Vec<String>,
    pub factors: Vec<Factor>,
}

/// One participant: the factor of the situation, category scores before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct HumanObservation {
    /// Index into [`Layout::factors`].
    pub factor: usize,
    pub before: Vec<f64>,
    pub after: Vec<f64>,
}

/// What a model trial measured: the default (baseline) state, or the state evoked by one
/// situation of the layout. Richer than [`crate::domain::measure::Measure`] (which only says
/// which of the two): an evoked trial carries its factor and situation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Default,
    /// `factor` indexes [`Layout::factors`]; `situation` identifies the situation.
    Evoked {
        factor: usize,
        situation: i64,
    },
}

/// One model trial: category scores, or `None` when it failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub condition: Condition,
    pub scores: Option<Vec<f64>>,
}

/// All trials of one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInput {
    pub name: String,
    pub trials: Vec<Trial>,
}

/// The model's default-vs-evoked test in `options.mode` from the two summaries, and its name:
/// Welch in the default mode; in paper mode ε on both SDs, then Student or Welch by the F-test
/// at α, as upstream. The report's cells and the alignment's resamples both call this, so a
/// resample is tested exactly as the table is.
pub fn model_test(d: Summary, e: Summary, options: Options) -> Option<(TTest, &'static str)> {
    match options.mode {
        Mode::Default => stats::welch_t_from_summary(d, e).map(|t| (t, "welch")),
        Mode::Paper => {
            let eps = |s: Summary| Summary {
                sd: s.sd + PAPER_EPSILON,
                ..s
            };
            let (d, e) = (eps(d), eps(e));
            // Upstream: equal variances unless the F-test rejects them at α.
            if stats::f_test_from_summary(e, d).is_some_and(|f| f.p > options.alpha) {
                stats::student_t_from_summary(d, e).map(|t| (t, "student"))
            } else {
                stats::welch_t_from_summary(d, e).map(|t| (t, "welch"))
            }
        }
    }
}
