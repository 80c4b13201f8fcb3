//! The alignment report: humans and models side by side, per group (overall, emotion, factor)
//! and instrument category, with the statistics of the EmotionBench paper and the alignment of
//! each model with the humans.
//!
//! Pure: the caller scores the answers (instrument categories, canonical order) and passes the
//! observations; this module computes summaries, tests, effect sizes, corrections, alignment.
//!
//! # Statistics
//! - **Humans**: each participant answered before (default) and after (evoked) imagining one
//!   situation, so a group's change is the **paired** t-test of after vs before (`df = n − 1`)
//!   with the paired effect size `d_z`. The same in both modes (the paper's human analysis was
//!   done in a spreadsheet; paired is the design).
//! - **Models**: the default-measure trials (no situation) against the evoked trials of the
//!   group, two-sample, effect size Hedges' g.
//!   - `Mode::Paper` reproduces the upstream `hypothesis_testing` exactly: `ε = 1e-8` added to
//!     both SDs, a two-sided F-test for equal variances at α (`equal_var` iff `p > α`), then
//!     Student or Welch from the summaries; every trial (repeats included) is one sample, and
//!     an emotion pools its factors' trials (so it is weighted by trials). With ε, a default
//!     measure without variance (GPT-4's NA = 10 every time) still gives a finite test, and any
//!     change is "significant".
//!   - `Mode::Default` is Welch without ε. A group whose two measures both have zero variance
//!     has no test (`t`, `df`, `p` = null, not significant) unless the means are equal
//!     (`t = 0, p = 1`). `Unit::Situation` first averages the repeats of each situation, so
//!     the evoked sample is the situations (the default measure has no situation: its trials
//!     stay the sample).
//! - A change is significant when `p ≤ α` (upstream rejects unless `p > α`); with a
//!   correction (Benjamini–Hochberg or Holm) the factor rows of each cohort are adjusted
//!   together (all factors × categories) and significance uses the adjusted p.
//! - No NaN or infinity reaches the output: every undefined number is `None` (JSON null).

use serde::Serialize;

use super::alignment;
pub use super::alignment::{Alignment, AnswerScale, Baseline, Ceiling, Method, Metric};
pub use super::change::{CategoryResult, Direction, signed};
use super::change::{decide, finite, human_category, model_category, unit_values};
pub use super::observation::{
    Condition, Correction, Factor, HumanObservation, Layout, Mode, ModelInput, Options,
    PAPER_EPSILON, Trial, Unit, choice, model_test,
};
use super::stats::{self, Summary};

/// Level of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Overall,
    Emotion,
    Factor,
}

/// One row of the report: all situations, one emotion, or one factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub level: Level,
    pub emotion: Option<String>,
    pub factor: Option<String>,
    pub categories: Vec<CategoryResult>,
}

/// Humans or a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Humans,
    Model,
}

/// One column of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cohort {
    pub name: String,
    pub kind: Kind,
    /// Participants (humans) or trials with scores (models).
    pub observations: usize,
    /// Model trials that failed (excluded from the statistics); 0 for humans.
    pub failed_trials: usize,
    pub groups: Vec<Group>,
    /// Reliability, item position and test–retest (`domain::reliability`), as the cohort's
    /// `reliability`, `item_position` and `test_retest`; set by the app, which has the item
    /// answers (`None` only for a report built without them).
    #[serde(flatten)]
    pub psychometrics: Option<super::reliability::Psychometrics>,
}

/// The whole report (the JSON machine interface).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub study: String,
    pub instrument: String,
    pub alpha: f64,
    pub mode: Mode,
    pub unit: Unit,
    pub correction: Option<Correction>,
    /// How the instrument's categories were scored in this mode, and how the other
    /// convention differs (the report's header says it).
    pub scoring: String,
    /// Which humans: all completed participants, or one side of the study's split.
    pub humans_from: String,
    pub cohorts: Vec<Cohort>,
    /// Each model against the humans, with bootstrap intervals (`domain::alignment`).
    pub alignment: Vec<Alignment>,
    /// The humans against themselves (random halves): how aligned anyone can be.
    pub ceiling: Option<Ceiling>,
    /// Null responders measured like a model: uniform, population marginal, shuffled labels.
    pub baselines: Vec<Baseline>,
    /// The bootstrap's seed and resamples, and the factors with few or no humans.
    pub alignment_method: Method,
    /// Two model cohorts that differ only in their prompt template, compared.
    pub comparison: Option<Comparison>,
    /// Methods and provenance (software, generation time, each cohort's runs, the humans
    /// included and excluded): read from the store by `app::report`, so `None` from [`build`].
    pub provenance: Option<super::provenance::Provenance>,
    /// Persona runs (#17) against the humans by gender and by age band (`domain::groups`):
    /// read from the store by `app::report`, so empty from [`build`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<super::groups::GroupComparison>,
    /// The valence control (#18): each situation's Δ against its variants' (`domain::valence`);
    /// read by `app::report`, so `None` from [`build`], and `None` for a set without variants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valence: Option<super::valence::Comparison>,
    /// The report split by the study's languages (#20, `domain::by_language`): read by
    /// `app::report`, so `None` from [`build`], and `None` for a study in one language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_language: Option<super::by_language::ByLanguage>,
}

/// One row of a comparison of two prompt variants: the change under each and the difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonRow {
    pub level: Level,
    pub emotion: Option<String>,
    pub category: String,
    /// Δ (evoked − default) of the first cohort.
    pub delta_a: Option<f64>,
    /// Δ of the second cohort.
    pub delta_b: Option<f64>,
    /// `delta_b − delta_a`.
    pub difference: Option<f64>,
    pub t: Option<f64>,
    pub df: Option<f64>,
    pub p: Option<f64>,
    pub significant: bool,
}

/// Two cohorts of one model whose runs differ in the prompt template, side by side: per group
/// (overall and each emotion) and category, each Δ and the difference of the two Δs, tested
/// with Welch–Satterthwaite over the four samples ([`stats::difference_of_changes`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub rows: Vec<ComparisonRow>,
}

impl Report {
    /// The humans' cohort, if the study has any.
    pub fn humans(&self) -> Option<&Cohort> {
        self.cohorts.iter().find(|c| c.kind == Kind::Humans)
    }
}

/// Which observations belong to a group.
#[derive(Debug, Clone, Copy)]
enum Select {
    All,
    Emotion(usize),
    Factor(usize),
}

impl Select {
    fn contains(self, layout: &Layout, factor: usize) -> bool {
        match self {
            Select::All => true,
            Select::Emotion(e) => layout.factors.get(factor).is_some_and(|f| f.emotion == e),
            Select::Factor(f) => f == factor,
        }
    }
}

fn selections(layout: &Layout) -> Vec<(Level, Select)> {
    let mut out = vec![(Level::Overall, Select::All)];
    out.extend((0..layout.emotions.len()).map(|e| (Level::Emotion, Select::Emotion(e))));
    out.extend((0..layout.factors.len()).map(|f| (Level::Factor, Select::Factor(f))));
    out
}

fn group_names(layout: &Layout, select: Select) -> (Option<String>, Option<String>) {
    match select {
        Select::All => (None, None),
        Select::Emotion(e) => (layout.emotions.get(e).cloned(), None),
        Select::Factor(f) => {
            let factor = layout.factors.get(f);
            (
                factor.and_then(|x| layout.emotions.get(x.emotion).cloned()),
                factor.map(|x| x.name.clone()),
            )
        }
    }
}

fn human_cohort(layout: &Layout, humans: &[HumanObservation]) -> Cohort {
    let groups = selections(layout)
        .into_iter()
        .map(|(level, select)| {
            let members: Vec<&HumanObservation> = humans
                .iter()
                .filter(|h| select.contains(layout, h.factor))
                .collect();
            let categories = layout
                .categories
                .iter()
                .enumerate()
                .map(|(c, name)| {
                    let (before, after): (Vec<f64>, Vec<f64>) = members
                        .iter()
                        .filter_map(|h| Some((*h.before.get(c)?, *h.after.get(c)?)))
                        .unzip();
                    human_category(name, &before, &after)
                })
                .collect();
            let (emotion, factor) = group_names(layout, select);
            Group {
                level,
                emotion,
                factor,
                categories,
            }
        })
        .collect();
    Cohort {
        name: "humans".to_owned(),
        kind: Kind::Humans,
        observations: humans.len(),
        failed_trials: 0,
        groups,
        psychometrics: None,
    }
}

/// Evoked values of one category for a group: per trial, or per situation mean.
fn evoked_values(
    layout: &Layout,
    trials: &[Evoked<'_>],
    select: Select,
    c: usize,
    unit: Unit,
) -> Vec<f64> {
    let members = trials
        .iter()
        .filter(|(f, _, _)| select.contains(layout, *f))
        .filter_map(|(_, s, v)| Some((*s, *v.get(c)?)));
    unit_values(members, unit)
}

fn model_cohort(layout: &Layout, model: &ModelInput, options: Options) -> Cohort {
    let (defaults, evoked, failed) = split_trials(model);
    let groups = selections(layout)
        .into_iter()
        .map(|(level, select)| {
            let categories = layout
                .categories
                .iter()
                .enumerate()
                .map(|(c, name)| {
                    let d: Vec<f64> = defaults.iter().filter_map(|s| s.get(c).copied()).collect();
                    let e = evoked_values(layout, &evoked, select, c, options.unit);
                    model_category(name, &d, &e, options)
                })
                .collect();
            let (emotion, factor) = group_names(layout, select);
            Group {
                level,
                emotion,
                factor,
                categories,
            }
        })
        .collect();
    Cohort {
        name: model.name.clone(),
        kind: Kind::Model,
        observations: defaults.len() + evoked.len(),
        failed_trials: failed,
        groups,
        psychometrics: None,
    }
}

/// Adjusts the p of the factor rows together and re-decides significance everywhere.
fn finish(cohort: &mut Cohort, options: Options) {
    if let Some(correction) = options.correction {
        let mut cells: Vec<&mut CategoryResult> = cohort
            .groups
            .iter_mut()
            .filter(|g| g.level == Level::Factor)
            .flat_map(|g| g.categories.iter_mut())
            .filter(|c| c.p.is_some())
            .collect();
        let p: Vec<f64> = cells.iter().map(|c| c.p.unwrap_or(1.0)).collect();
        let adjusted = match correction {
            Correction::Bh => stats::bh_adjust(&p),
            Correction::Holm => stats::holm_adjust(&p),
        };
        for (cell, a) in cells.iter_mut().zip(adjusted) {
            cell.p_adjusted = finite(a);
        }
    }
    for c in cohort
        .groups
        .iter_mut()
        .flat_map(|g| g.categories.iter_mut())
    {
        decide(c, options.alpha);
    }
}

/// The inputs of a report besides the options.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    pub study: String,
    pub instrument: String,
    pub layout: Layout,
    /// The scoring note for the header (see [`Report::scoring`]).
    pub scoring: String,
    /// Which humans (see [`Report::humans_from`]).
    pub humans_from: String,
    /// Empty: no human cohort.
    pub humans: Vec<HumanObservation>,
    pub models: Vec<ModelInput>,
    /// Indexes into `models` of two prompt variants to compare.
    pub compare: Option<(usize, usize)>,
    /// The answer scale and scoring, for the uniform responder baseline (none without it).
    pub scale: Option<AnswerScale>,
}

/// Computes the report.
pub fn build(inputs: &Inputs, options: Options) -> Report {
    let mut cohorts = Vec::with_capacity(inputs.models.len() + 1);
    if !inputs.humans.is_empty() {
        cohorts.push(human_cohort(&inputs.layout, &inputs.humans));
    }
    for m in &inputs.models {
        cohorts.push(model_cohort(&inputs.layout, m, options));
    }
    for c in &mut cohorts {
        finish(c, options);
    }
    let aligned = alignment::align(
        &inputs.layout,
        &inputs.humans,
        &inputs.models,
        inputs.scale.as_ref(),
        options,
    );
    let comparison = inputs.compare.and_then(|(a, b)| {
        Some(compare(
            &inputs.layout,
            inputs.models.get(a)?,
            inputs.models.get(b)?,
            options,
        ))
    });
    Report {
        study: inputs.study.clone(),
        instrument: inputs.instrument.clone(),
        alpha: options.alpha,
        mode: options.mode,
        unit: options.unit,
        correction: options.correction,
        scoring: inputs.scoring.clone(),
        humans_from: inputs.humans_from.clone(),
        cohorts,
        alignment: aligned.alignment,
        ceiling: aligned.ceiling,
        baselines: aligned.baselines,
        alignment_method: aligned.method,
        comparison,
        provenance: None,
        groups: Vec::new(),
        valence: None,
        by_language: None,
    }
}

/// An evoked trial's factor, situation and category scores.
type Evoked<'a> = (usize, i64, &'a [f64]);

/// A model's scored default trials, scored evoked trials, and failed trials (counted).
fn split_trials(model: &ModelInput) -> (Vec<&[f64]>, Vec<Evoked<'_>>, usize) {
    let mut defaults = Vec::new();
    let mut evoked = Vec::new();
    let mut failed = 0;
    for t in &model.trials {
        match (&t.scores, t.condition) {
            (None, _) => failed += 1,
            (Some(s), Condition::Default) => defaults.push(s.as_slice()),
            (Some(s), Condition::Evoked { factor, situation }) => {
                evoked.push((factor, situation, s.as_slice()))
            }
        }
    }
    (defaults, evoked, failed)
}

/// Compares two prompt variants of one model: overall and per emotion, per category, the Δ of
/// each, `Δb − Δa`, and its test. Units follow `options.unit`; significance is `p ≤ α`.
pub fn compare(layout: &Layout, a: &ModelInput, b: &ModelInput, options: Options) -> Comparison {
    let (da, ea, _) = split_trials(a);
    let (db, eb, _) = split_trials(b);
    let mut rows = Vec::new();
    for (level, select) in selections(layout)
        .into_iter()
        .filter(|(l, _)| *l != Level::Factor)
    {
        for (c, name) in layout.categories.iter().enumerate() {
            let column =
                |d: &[&[f64]]| -> Vec<f64> { d.iter().filter_map(|s| s.get(c).copied()).collect() };
            let samples = [
                column(&da),
                evoked_values(layout, &ea, select, c, options.unit),
                column(&db),
                evoked_values(layout, &eb, select, c, options.unit),
            ];
            let s: Vec<Option<Summary>> = samples.iter().map(|x| stats::try_summary(x)).collect();
            let delta = |d: Option<Summary>, e: Option<Summary>| finite(e?.mean - d?.mean);
            let delta_a = delta(s[0], s[1]);
            let delta_b = delta(s[2], s[3]);
            let test = match (s[0], s[1], s[2], s[3]) {
                (Some(w), Some(x), Some(y), Some(z)) => stats::difference_of_changes(w, x, y, z)
                    .filter(|t| t.t.is_finite() && t.df.is_finite() && t.p.is_finite()),
                _ => None,
            };
            rows.push(ComparisonRow {
                level,
                emotion: group_names(layout, select).0,
                category: name.clone(),
                delta_a,
                delta_b,
                difference: delta_a.zip(delta_b).and_then(|(x, y)| finite(y - x)),
                t: test.map(|t| t.t),
                df: test.map(|t| t.df),
                p: test.map(|t| t.p.clamp(0.0, 1.0)),
                significant: test.is_some_and(|t| t.p <= options.alpha),
            });
        }
    }
    Comparison {
        a: a.name.clone(),
        b: b.name.clone(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Reference values below were computed with SciPy 1.x
    /// (`ttest_ind_from_stats`, `ttest_rel`, `f.cdf`) as the upstream code calls them.
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * b.abs().max(1.0)
    }

    fn layout() -> Layout {
        Layout {
            categories: vec!["Positive Affect".into(), "Negative Affect".into()],
            emotions: vec!["Anger".into(), "Fear".into()],
            factors: vec![
                Factor {
                    emotion: 0,
                    index: 0,
                    name: "A0".into(),
                },
                Factor {
                    emotion: 0,
                    index: 1,
                    name: "A1".into(),
                },
                Factor {
                    emotion: 1,
                    index: 0,
                    name: "F0".into(),
                },
            ],
        }
    }

    fn paper() -> Options {
        Options {
            mode: Mode::Paper,
            ..Options::default()
        }
    }

    #[test]
    fn paper_mode_uses_student_when_the_f_test_keeps_equal_variances() {
        // F-test p = 0.7133 > α → Student; scipy: t = 1.9756583111267099, p = 0.08360856130475644.
        let r = model_category(
            "PA",
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[3.0, 4.0, 5.0, 6.0, 8.0],
            paper(),
        );
        assert_eq!(r.test, "student");
        assert!(close(r.t.unwrap(), 1.9756583111267099));
        assert!(close(r.p.unwrap(), 0.08360856130475644));
        assert_eq!(r.df, Some(8.0));
        // Hedges' g without ε.
        assert!(close(r.effect_size.unwrap(), 1.1285951286973932));
        // Default mode: Welch, scipy ttest_ind(equal_var=False).
        let w = model_category(
            "PA",
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[3.0, 4.0, 5.0, 6.0, 8.0],
            Options::default(),
        );
        assert_eq!(w.test, "welch");
        assert!(close(w.t.unwrap(), 1.9756583222945239));
        assert!(close(w.p.unwrap(), 0.08495606629724337));
        assert!(close(w.df.unwrap(), 7.711133400200603));
    }

    #[test]
    fn paper_mode_uses_welch_when_the_f_test_rejects_equal_variances() {
        let d: Vec<f64> = [20.0, 21.0].repeat(10);
        let e: Vec<f64> = (0..20).map(|i| 10.0 + 2.0 * f64::from(i)).collect();
        let r = model_category("PA", &d, &e, paper());
        assert_eq!(r.test, "welch");
        assert!(close(r.t.unwrap(), 3.209682814817394));
        assert!(close(r.p.unwrap(), 0.004596651382614433));
    }

    #[test]
    fn paper_epsilon_makes_a_zero_variance_default_testable_and_default_mode_stays_finite() {
        let d = [10.0; 4];
        let e = [12.0, 13.0, 11.0, 14.0, 12.0];
        // scipy with sd + 1e-8: t = 4.706787202035164, p = 0.00926169704273526, df = 4.
        let r = model_category("NA", &d, &e, paper());
        assert_eq!(r.test, "welch");
        assert!(close(r.t.unwrap(), 4.706787202035164));
        assert!(close(r.p.unwrap(), 0.00926169704273526));
        assert!(close(r.df.unwrap(), 4.0));
        assert_eq!(r.default_sd, Some(0.0));
        // Both without variance, different means: upstream calls any change significant …
        let both = model_category("NA", &d, &[12.0; 5], paper());
        assert!(both.t.unwrap().is_finite() && both.p.unwrap() < 1e-9);
        // … the default mode has no test: null, not significant, no NaN.
        let mut none = model_category("NA", &d, &[12.0; 5], Options::default());
        decide(&mut none, 0.01);
        assert_eq!((none.t, none.df, none.p), (None, None, None));
        assert_eq!(none.effect_size, None);
        assert_eq!((none.significant, none.direction), (false, Direction::None));
        assert_eq!(none.delta, Some(2.0));
        assert_eq!(none.cell(), "− (+2.0)");
        // Nothing at all, or a single value: no test, null numbers.
        let empty = model_category("NA", &d, &[], paper());
        assert_eq!(
            (empty.evoked_mean, empty.delta, empty.t),
            (None, None, None)
        );
        let single = model_category("NA", &d, &[3.0], paper());
        assert_eq!((single.evoked_sd, single.t), (None, None));
        assert_eq!(empty.cell(), "n/a");
    }

    #[test]
    fn humans_get_the_paired_test_and_d_z() {
        // scipy ttest_rel: t = 4.3817804600413295, p = 0.022006046490798327, df = 3.
        let r = human_category("NA", &[10.0, 12.0, 14.0, 16.0], &[15.0, 14.0, 20.0, 19.0]);
        assert_eq!(r.test, "paired");
        assert!(close(r.t.unwrap(), 4.3817804600413295));
        assert!(close(r.p.unwrap(), 0.022006046490798327));
        assert_eq!(r.df, Some(3.0));
        assert!(close(r.effect_size.unwrap(), 2.1908902300206643));
        // n = 2 works; identical differences have no test.
        let two = human_category("NA", &[1.0, 2.0], &[2.0, 4.0]);
        assert_eq!(two.df, Some(1.0));
        let same = human_category("NA", &[1.0, 2.0], &[2.0, 3.0]);
        assert_eq!((same.t, same.p), (None, None));
    }

    fn trial(factor: Option<usize>, situation: i64, pa: f64, na: f64) -> Trial {
        Trial {
            condition: match factor {
                None => Condition::Default,
                Some(factor) => Condition::Evoked { factor, situation },
            },
            scores: Some(vec![pa, na]),
        }
    }

    fn inputs() -> Inputs {
        let mut trials = vec![
            trial(None, 0, 30.0, 10.0),
            trial(None, 0, 32.0, 11.0),
            trial(None, 0, 31.0, 10.0),
            Trial {
                condition: Condition::Default,
                scores: None,
            },
        ];
        for (f, s) in [(0, 1), (0, 2), (1, 3), (2, 4)] {
            for r in 0..3 {
                trials.push(trial(Some(f), s, 20.0 + f64::from(r), 25.0 - s as f64));
            }
        }
        let humans = (0..12)
            .map(|i| HumanObservation {
                factor: i % 3,
                before: vec![28.0 + (i % 4) as f64, 13.0 + (i % 3) as f64],
                after: vec![22.0 + (i % 5) as f64, 24.0 - (i % 2) as f64],
            })
            .collect();
        Inputs {
            study: "s".into(),
            instrument: "PANAS".into(),
            layout: layout(),
            scoring: "PANAS: sums".into(),
            humans_from: "all completed participants".into(),
            humans,
            models: vec![ModelInput {
                name: "m".into(),
                trials,
            }],
            compare: None,
            scale: None,
        }
    }

    #[test]
    fn groups_pool_trials_count_failures_and_align_with_the_humans() {
        let r = build(&inputs(), paper());
        assert_eq!(r.cohorts.len(), 2);
        let m = &r.cohorts[1];
        assert_eq!((m.observations, m.failed_trials), (15, 1));
        // overall, 2 emotions, 3 factors.
        let levels: Vec<Level> = m.groups.iter().map(|g| g.level).collect();
        assert_eq!(
            levels,
            [
                Level::Overall,
                Level::Emotion,
                Level::Emotion,
                Level::Factor,
                Level::Factor,
                Level::Factor
            ]
        );
        // Anger pools its two factors' trials (9), weighted by trials.
        assert_eq!(m.groups[1].categories[0].n_evoked, 9);
        assert_eq!(m.groups[1].emotion.as_deref(), Some("Anger"));
        assert_eq!(m.groups[3].factor.as_deref(), Some("A0"));
        assert_eq!(m.groups[0].categories[0].n_default, 3);
        // Unit situation: the evoked sample is the situations' means.
        let s = build(
            &inputs(),
            Options {
                unit: Unit::Situation,
                ..Options::default()
            },
        );
        assert_eq!(s.cohorts[1].groups[0].categories[0].n_evoked, 4);
        assert_eq!(s.cohorts[1].groups[0].categories[0].evoked_mean, Some(21.0));
        let a = &r.alignment[0];
        // 3 factors × 2 categories, each with humans and trials.
        assert_eq!(a.distances.len(), 6);
        assert!(a.metrics.cells_compared <= 6);
        assert!(a.summary.starts_with("m: "), "{}", a.summary);
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"));
    }

    #[test]
    fn a_correction_adjusts_the_factor_table_only() {
        let o = Options {
            correction: Some(Correction::Holm),
            ..paper()
        };
        let r = build(&inputs(), o);
        for c in &r.cohorts {
            for g in &c.groups {
                for x in &g.categories {
                    assert_eq!(
                        x.p_adjusted.is_some(),
                        g.level == Level::Factor && x.p.is_some()
                    );
                    if let (Some(p), Some(a)) = (x.p, x.p_adjusted) {
                        assert!(a >= p);
                        assert_eq!(x.significant, a <= o.alpha);
                    }
                }
            }
        }
    }

    #[test]
    fn cells_print_like_the_paper() {
        assert_eq!(signed(0.2), "+0.2");
        assert_eq!(signed(-0.94), "-0.9");
        assert_eq!(signed(-0.04), "0.0");
        let mut r = human_category("NA", &[10.0, 12.0, 14.0, 16.0], &[15.0, 14.0, 20.0, 19.0]);
        decide(&mut r, 0.05);
        assert_eq!(r.cell(), "↑ (+4.0)");
        decide(&mut r, 0.01);
        assert_eq!(r.cell(), "− (+4.0)");
    }

    #[test]
    fn two_prompt_variants_are_compared_per_emotion_with_the_difference_test() {
        let mut i = inputs();
        // Variant b: the same trials with NA raised by 4 in every evoked trial (a larger Δ).
        let mut b = i.models[0].clone();
        b.name = "m stability".into();
        for t in &mut b.trials {
            if let (Condition::Evoked { .. }, Some(s)) = (t.condition, t.scores.as_mut()) {
                s[1] += 4.0;
            }
        }
        i.models.push(b);
        i.compare = Some((0, 1));
        let r = build(&i, Options::default());
        let c = r.comparison.as_ref().unwrap();
        assert_eq!((c.a.as_str(), c.b.as_str()), ("m", "m stability"));
        // overall + 2 emotions, × 2 categories.
        assert_eq!(c.rows.len(), 6);
        let row = |level: Level, emotion: Option<&str>, cat: &str| {
            c.rows
                .iter()
                .find(|x| x.level == level && x.emotion.as_deref() == emotion && x.category == cat)
                .unwrap()
        };
        let na = row(Level::Emotion, Some("Anger"), "Negative Affect");
        assert!(close(na.difference.unwrap(), 4.0));
        assert!(close(na.delta_b.unwrap() - na.delta_a.unwrap(), 4.0));
        assert!(na.t.unwrap() > 0.0 && na.p.unwrap() < 0.01 && na.significant);
        // The same numbers as the cohorts' own Δ.
        let anger_a = &r.cohorts[1].groups[1].categories[1];
        assert_eq!(na.delta_a, anger_a.delta);
        let pa = row(Level::Overall, None, "Positive Affect");
        assert_eq!(pa.difference, Some(0.0));
        assert_eq!(pa.p, Some(1.0));
        assert!(!pa.significant);
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"));
    }
}
