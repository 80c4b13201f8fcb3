//! The free-text report's numbers (#18 point 3): per cohort (a run's model, or the humans),
//! the mean score of default and evoked answers per emotion and overall, Welch's t-test of the
//! difference, Hedges' g, and a seeded percentile bootstrap CI of the difference of means;
//! the refusal rate beside it; the top-scored answers per emotion.

use serde::Serialize;

use super::bootstrap::{BootstrapCi, percentile_ci};
use super::measure::Measure;
use super::stats::{Summary, TTest, hedges_g, summary, welch_t};

/// Bootstrap resamples of each difference (fixed, so the report reproduces).
pub const RESAMPLES: usize = 2000;

/// One scored answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub measure: Measure,
    /// The situation's emotion; None for the default measure.
    pub emotion: Option<String>,
    pub situation_key: String,
    pub target: String,
    pub text: String,
    /// In [0, 1].
    pub score: f64,
    /// The refusal detector's verdict (its phrase list).
    pub refused: bool,
}

/// Default vs evoked for one emotion (or overall).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The emotion, or "Overall".
    pub emotion: String,
    pub default: Option<Summary>,
    pub evoked: Option<Summary>,
    /// Evoked minus default.
    pub difference: Option<f64>,
    /// Welch's t-test; t has the sign of evoked − default.
    pub test: Option<TTest>,
    /// Hedges' g of evoked vs default.
    pub effect: Option<f64>,
    /// 95 % percentile bootstrap CI of the difference of means.
    pub ci: Option<BootstrapCi>,
    /// Share of answers the refusal detector flagged, default and evoked.
    pub refusal_default: Option<f64>,
    pub refusal_evoked: Option<f64>,
}

/// A cohort's comparisons: Overall first, then each emotion in the order given.
pub fn compare(answers: &[Scored], emotions: &[String], seed: u64) -> Vec<Comparison> {
    let default: Vec<&Scored> = answers
        .iter()
        .filter(|a| a.measure == Measure::Default)
        .collect();
    let mut out = vec![one("Overall", &default, answers, seed)];
    for emotion in emotions {
        let evoked: Vec<&Scored> = answers
            .iter()
            .filter(|a| a.emotion.as_deref() == Some(emotion.as_str()))
            .collect();
        if evoked.is_empty() {
            continue;
        }
        let mut both: Vec<Scored> = default.iter().map(|a| (*a).clone()).collect();
        both.extend(evoked.into_iter().cloned());
        out.push(one(emotion, &default, &both, seed));
    }
    out
}

/// Default answers against the evoked ones among `answers`.
fn one(emotion: &str, default: &[&Scored], answers: &[Scored], seed: u64) -> Comparison {
    let d: Vec<f64> = default.iter().map(|a| a.score).collect();
    let evoked: Vec<&Scored> = answers
        .iter()
        .filter(|a| a.measure == Measure::Evoked)
        .collect();
    let e: Vec<f64> = evoked.iter().map(|a| a.score).collect();
    let sd = (!d.is_empty()).then(|| summary(&d));
    let se = (!e.is_empty()).then(|| summary(&e));
    let difference = match (sd, se) {
        (Some(a), Some(b)) => Some(b.mean - a.mean),
        _ => None,
    };
    let effect = match (sd, se) {
        (Some(a), Some(b)) => hedges_g(a, b),
        _ => None,
    };
    // The pooled answers are resampled with their measures; a resample without one of the
    // measures is undefined and left out (counted by `percentile_ci`).
    let pairs: Vec<(Measure, f64)> = answers.iter().map(|a| (a.measure, a.score)).collect();
    let ci = difference.and_then(|_| {
        percentile_ci(&pairs, seed, RESAMPLES, |s| {
            let mean = |m: Measure| {
                let v: Vec<f64> = s.iter().filter(|p| p.0 == m).map(|p| p.1).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            Some(mean(Measure::Evoked)? - mean(Measure::Default)?)
        })
        .ok()
    });
    let rate = |xs: &[&Scored]| {
        (!xs.is_empty()).then(|| xs.iter().filter(|a| a.refused).count() as f64 / xs.len() as f64)
    };
    Comparison {
        emotion: emotion.to_owned(),
        default: sd,
        evoked: se,
        difference,
        test: welch_t(&d, &e),
        effect,
        ci,
        refusal_default: rate(default),
        refusal_evoked: rate(&evoked),
    }
}

/// The `n` highest-scored evoked answers of each emotion (ties: the first stored first), and
/// of the default measure under "Default".
pub fn top_scored<'a>(
    answers: &'a [Scored],
    emotions: &[String],
    n: usize,
) -> Vec<(String, Vec<&'a Scored>)> {
    let mut out = Vec::new();
    let mut pick = |label: String, mut xs: Vec<&'a Scored>| {
        xs.sort_by(|a, b| b.score.total_cmp(&a.score));
        xs.truncate(n);
        if !xs.is_empty() {
            out.push((label, xs));
        }
    };
    pick(
        "Default".to_owned(),
        answers
            .iter()
            .filter(|a| a.measure == Measure::Default)
            .collect(),
    );
    for e in emotions {
        pick(
            e.clone(),
            answers
                .iter()
                .filter(|a| a.emotion.as_deref() == Some(e.as_str()))
                .collect(),
        );
    }
    out
}

/// One cohort of the free-text report: a run's model on a task.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cohort {
    /// The run (`model_runs.id`).
    pub run: i64,
    pub model: String,
    pub task: String,
    pub comparisons: Vec<Comparison>,
    /// Top-scored answers per emotion ("Default" first): (label, [(situation, target, score,
    /// text)]).
    pub examples: Vec<(String, Vec<Example>)>,
    /// Done trials without a score of this scorer (queued, failed or not queued yet).
    pub unscored: usize,
    pub scored: usize,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Example {
    pub situation: String,
    pub target: String,
    pub score: f64,
    pub text: String,
}

/// The free-text report of some runs for one scorer.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FreeTextReport {
    pub scorer: String,
    /// Every version the scorer reported for these answers (more than one: say so).
    pub versions: Vec<String>,
    pub cohorts: Vec<Cohort>,
    pub refusal_rule: String,
    pub seed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(measure: Measure, emotion: Option<&str>, score: f64, refused: bool) -> Scored {
        Scored {
            measure,
            emotion: emotion.map(str::to_owned),
            situation_key: emotion.unwrap_or("").to_owned(),
            target: "t".into(),
            text: format!("{score}"),
            score,
            refused,
        }
    }

    #[test]
    fn evoked_answers_are_compared_with_the_default_ones_per_emotion_and_overall() {
        let mut xs = vec![
            a(Measure::Default, None, 0.1, false),
            a(Measure::Default, None, 0.2, true),
            a(Measure::Default, None, 0.3, false),
        ];
        xs.extend([0.6, 0.7, 0.8].map(|s| a(Measure::Evoked, Some("Anger"), s, false)));
        xs.extend([0.2, 0.3].map(|s| a(Measure::Evoked, Some("Fear"), s, true)));
        let emotions = ["Anger", "Fear", "Joy"].map(String::from);
        let c = compare(&xs, &emotions, 7);
        assert_eq!(c.len(), 3, "Joy has no answers and no row");
        let anger = &c[1];
        assert_eq!(anger.emotion, "Anger");
        assert!((anger.difference.unwrap() - 0.5).abs() < 1e-12);
        // Welch: means 0.2 and 0.7, both sd 0.1, n 3: t = 0.5 / sqrt(0.01/3 * 2) = 6.1237.
        let t = anger.test.unwrap();
        assert!((t.t - 6.123_724_356_957_945).abs() < 1e-9, "{t:?}");
        assert!((t.df - 4.0).abs() < 1e-9);
        assert!(t.p < 0.01);
        assert!(anger.effect.unwrap() > 3.0);
        let ci = anger.ci.unwrap();
        assert!(ci.low <= 0.5 && 0.5 <= ci.high && ci.low > 0.0, "{ci:?}");
        assert!((anger.refusal_default.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(anger.refusal_evoked, Some(0.0));
        assert_eq!(c[2].refusal_evoked, Some(1.0));
        let overall = &c[0];
        assert_eq!(overall.evoked.unwrap().n, 5);
        assert!((overall.evoked.unwrap().mean - 0.52).abs() < 1e-12);
        // Same data and seed, same interval.
        assert_eq!(compare(&xs, &emotions, 7), c);
    }

    #[test]
    fn a_cohort_without_default_answers_has_no_difference_or_test() {
        let xs = vec![
            a(Measure::Evoked, Some("Anger"), 0.6, false),
            a(Measure::Evoked, Some("Anger"), 0.7, false),
        ];
        let c = compare(&xs, &["Anger".into()], 1);
        assert_eq!(c[0].difference, None);
        assert_eq!(c[0].test, None);
        assert_eq!(c[0].ci, None);
    }

    #[test]
    fn the_top_scored_answers_come_highest_first_per_emotion() {
        let xs = vec![
            a(Measure::Evoked, Some("Anger"), 0.2, false),
            a(Measure::Evoked, Some("Anger"), 0.9, false),
            a(Measure::Evoked, Some("Anger"), 0.5, false),
            a(Measure::Default, None, 0.4, false),
        ];
        let top = top_scored(&xs, &["Anger".into()], 2);
        assert_eq!(top[0].0, "Default");
        assert_eq!(top[1].0, "Anger");
        let scores: Vec<f64> = top[1].1.iter().map(|s| s.score).collect();
        assert_eq!(scores, [0.9, 0.5]);
    }
}
