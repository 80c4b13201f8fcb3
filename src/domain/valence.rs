//! The valence control (#18, point 4): the report's comparison of a model's change (Δ =
//! evoked − default) after a situation and after its variant of another valence, paired by
//! situation.
//!
//! Why paired by situation: a variant rewrites one situation (same emotion, factor and scenario
//! position, another valence), so the question "does the change follow the valence?" is asked
//! of each situation against its own rewrite. Each situation contributes one difference
//! `Δ(original) − Δ(variant)`; the differences are tested with a paired t-test (the
//! situations are the sample), with `d_z` and a t interval from `domain::stats`. The cohort's
//! default mean cancels in the difference, but each Δ is shown against it.
//!
//! Pure: the inputs are the set's situations (id, key, valence, link) and a cohort's trials.

use std::collections::HashMap;

use serde::Serialize;

use super::observation::{Condition, ModelInput};
use super::situation::Valence;
use super::stats;

/// What the comparison needs to know of one situation of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The situation's row id, as in [`Condition::Evoked`].
    pub id: i64,
    pub key: String,
    pub valence: Valence,
    /// The original's key, for a variant.
    pub variant_of: Option<String>,
}

/// A situation and one of its variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pair {
    pub original: i64,
    pub original_key: String,
    pub original_valence: Valence,
    pub variant: i64,
    pub variant_key: String,
    pub variant_valence: Valence,
}

/// Every (original, variant) pair of the set, in the set's order of the variants. A variant
/// whose original is not in `members` (or is itself a variant) pairs with nothing: the
/// importer refuses such files, so this only guards against a set changed since.
pub fn pairs(members: &[Member]) -> Vec<Pair> {
    let by_key: HashMap<&str, &Member> = members.iter().map(|m| (m.key.as_str(), m)).collect();
    members
        .iter()
        .filter_map(|v| {
            let original = by_key.get(v.variant_of.as_deref()?)?;
            if original.variant_of.is_some() || original.id == v.id {
                return None;
            }
            Some(Pair {
                original: original.id,
                original_key: original.key.clone(),
                original_valence: original.valence,
                variant: v.id,
                variant_key: v.key.clone(),
                variant_valence: v.valence,
            })
        })
        .collect()
}

/// The ids of the situations that are variants: the report's main tables leave their trials
/// out (they are the control, compared here), so that an emotion's Δ stays the Δ of its
/// EmotionBench situations.
pub fn variant_ids(members: &[Member]) -> Vec<i64> {
    members
        .iter()
        .filter(|m| m.variant_of.is_some())
        .map(|m| m.id)
        .collect()
}

/// One cohort, one contrast of valences (e.g. negative originals against their positive
/// variants), one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub cohort: String,
    pub original_valence: Valence,
    pub variant_valence: Valence,
    pub category: String,
    /// Situations with scored trials on both sides (and a default mean).
    pub pairs: usize,
    /// Mean over the pairs of Δ(original) and of Δ(variant).
    pub delta_original: Option<f64>,
    pub delta_variant: Option<f64>,
    /// Mean of `Δ(original) − Δ(variant)` and its 95 % t interval.
    pub difference: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub t: Option<f64>,
    pub df: Option<f64>,
    pub p: Option<f64>,
    /// Paired effect size `d_z` of the differences.
    pub dz: Option<f64>,
    /// `p < α`.
    pub significant: bool,
    /// The row in words: whether the change follows the valence, with the test.
    pub verdict: String,
}

/// The report's valence section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub pairs: Vec<Pair>,
    pub rows: Vec<Row>,
    /// What the test can and cannot say.
    pub caveat: String,
}

/// The mean of each category's scores over the trials of one condition.
fn means(trials: &[&[f64]], categories: usize) -> Option<Vec<f64>> {
    if trials.is_empty() {
        return None;
    }
    let n = trials.len() as f64;
    Some(
        (0..categories)
            .map(|c| trials.iter().filter_map(|t| t.get(c)).sum::<f64>() / n)
            .collect(),
    )
}

/// Per category, each pair's (Δ original, Δ variant) of one cohort, for the pairs of one
/// contrast that have scored trials on both sides. Scored trials only: a failed trial has no
/// scores, and the main tables count failures separately.
pub fn pair_deltas(model: &ModelInput, pairs: &[&Pair], categories: usize) -> Vec<Vec<(f64, f64)>> {
    let mut default: Vec<&[f64]> = Vec::new();
    let mut evoked: HashMap<i64, Vec<&[f64]>> = HashMap::new();
    for t in &model.trials {
        let Some(scores) = t.scores.as_deref() else {
            continue;
        };
        if scores.len() < categories {
            continue;
        }
        match t.condition {
            Condition::Default => default.push(scores),
            Condition::Evoked { situation, .. } => {
                evoked.entry(situation).or_default().push(scores)
            }
        }
    }
    let mut out = vec![Vec::new(); categories];
    let Some(base) = means(&default, categories) else {
        return out;
    };
    for p in pairs {
        let (Some(o), Some(v)) = (
            evoked.get(&p.original).and_then(|t| means(t, categories)),
            evoked.get(&p.variant).and_then(|t| means(t, categories)),
        ) else {
            continue;
        };
        for (c, column) in out.iter_mut().enumerate() {
            column.push((o[c] - base[c], v[c] - base[c]));
        }
    }
    out
}

fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

/// The paired test of one category's (Δ original, Δ variant) pairs.
pub fn test_row(
    cohort: &str,
    contrast: (Valence, Valence),
    category: &str,
    deltas: &[(f64, f64)],
    alpha: f64,
) -> Row {
    let original: Vec<f64> = deltas.iter().map(|d| d.0).collect();
    let variant: Vec<f64> = deltas.iter().map(|d| d.1).collect();
    // after − before = Δ(original) − Δ(variant).
    let test = stats::paired_t(&variant, &original);
    let ci = stats::paired_mean_ci(&variant, &original, 0.95);
    let dz = stats::paired_dz(&variant, &original);
    let significant = test.is_some_and(|t| t.p < alpha);
    let mut row = Row {
        cohort: cohort.to_owned(),
        original_valence: contrast.0,
        variant_valence: contrast.1,
        category: category.to_owned(),
        pairs: deltas.len(),
        delta_original: mean(&original),
        delta_variant: mean(&variant),
        difference: ci
            .map(|c| c.0)
            .or_else(|| mean(&deltas.iter().map(|(o, v)| o - v).collect::<Vec<f64>>())),
        ci_low: ci.map(|c| c.1),
        ci_high: ci.map(|c| c.2),
        t: test.map(|t| t.t),
        df: test.map(|t| t.df),
        p: test.map(|t| t.p),
        dz,
        significant,
        verdict: String::new(),
    };
    row.verdict = verdict(&row, alpha);
    row
}

/// The row in words. "Follows the valence" means what the control is for: the change after a
/// situation differs from the change after the same situation told with another valence, so
/// it is not the mere presence of a story. The direction is stated as measured.
pub fn verdict(row: &Row, alpha: f64) -> String {
    let (o, v) = (row.original_valence, row.variant_valence);
    let n = row.pairs;
    let Some(t) = row.t else {
        return format!(
            "{}: {n} situation(s) with both a {o} and a {v} version answered; a paired test \
             needs at least two with differences that vary, so nothing can be said.",
            row.category
        );
    };
    let diff = row.difference.unwrap_or(0.0);
    let way = if diff >= 0.0 { "larger" } else { "smaller" };
    let interval = match (row.ci_low, row.ci_high) {
        (Some(l), Some(h)) => format!("95% CI {l:+.2} to {h:+.2}; "),
        _ => String::new(),
    };
    let dz = row
        .dz
        .map_or_else(String::new, |d| format!(", d_z = {d:.2}"));
    let test = format!(
        "{interval}paired t({:.0}) = {t:.2}, p = {}{dz}, {n} situations",
        row.df.unwrap_or(0.0),
        p_text(row.p.unwrap_or(1.0)),
    );
    if row.significant {
        format!(
            "{}: the change after the {o} situations is {way} than after their {v} variants \
             by {:.2} ({test}): the change follows the valence at α = {alpha}.",
            row.category,
            diff.abs()
        )
    } else {
        format!(
            "{}: no significant difference between the change after the {o} situations and \
             after their {v} variants ({:+.2}; {test}): this does not show that the change \
             follows the valence (nor that it does not).",
            row.category, diff
        )
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_owned()
    } else {
        format!("{p:.3}")
    }
}

/// The caveat printed with the section.
pub const CAVEAT: &str = "Paired by situation: each situation's Δ is the mean over its scored \
    trials minus the cohort's default mean, and a situation counts once however many repeats \
    it had. The test is a paired t-test over the situations, uncorrected for the number of \
    categories; with a handful of variants it has little power, and a variant differs from its \
    original in more than valence (length, wording, topic), so a difference is evidence for, \
    not proof of, valence as the cause. Humans are not compared here: each participant sees \
    one situation.";

/// The valence section over every model cohort: one row per cohort × contrast × category.
/// `None` when the set has no variants (the report then has no such section).
pub fn compare(
    members: &[Member],
    models: &[ModelInput],
    categories: &[String],
    alpha: f64,
) -> Option<Comparison> {
    let all = pairs(members);
    if all.is_empty() {
        return None;
    }
    let mut contrasts: Vec<(Valence, Valence)> = all
        .iter()
        .map(|p| (p.original_valence, p.variant_valence))
        .collect();
    contrasts.sort();
    contrasts.dedup();
    let mut rows = Vec::new();
    for model in models {
        for &contrast in &contrasts {
            let chosen: Vec<&Pair> = all
                .iter()
                .filter(|p| (p.original_valence, p.variant_valence) == contrast)
                .collect();
            let deltas = pair_deltas(model, &chosen, categories.len());
            for (category, d) in categories.iter().zip(&deltas) {
                rows.push(test_row(&model.name, contrast, category, d, alpha));
            }
        }
    }
    Some(Comparison {
        pairs: all,
        rows,
        caveat: CAVEAT.to_owned(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::observation::Trial;
    use super::*;

    fn member(id: i64, key: &str, valence: Valence, of: Option<&str>) -> Member {
        Member {
            id,
            key: key.into(),
            valence,
            variant_of: of.map(str::to_owned),
        }
    }

    fn set() -> Vec<Member> {
        vec![
            member(1, "a", Valence::Negative, None),
            member(2, "b", Valence::Negative, None),
            member(3, "c", Valence::Negative, None),
            member(11, "a+", Valence::Positive, Some("a")),
            member(12, "b+", Valence::Positive, Some("b")),
            member(13, "c+", Valence::Positive, Some("c")),
            member(21, "a0", Valence::Neutral, Some("a")),
            // An orphan and a chain pair with nothing.
            member(30, "x+", Valence::Positive, Some("missing")),
            member(31, "a++", Valence::Positive, Some("a+")),
        ]
    }

    #[test]
    fn variants_pair_with_their_original_by_key() {
        let p = pairs(&set());
        let got: Vec<(i64, i64, Valence)> = p
            .iter()
            .map(|p| (p.original, p.variant, p.variant_valence))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 11, Valence::Positive),
                (2, 12, Valence::Positive),
                (3, 13, Valence::Positive),
                (1, 21, Valence::Neutral),
            ]
        );
        assert_eq!(variant_ids(&set()), vec![11, 12, 13, 21, 30, 31]);
        assert!(pairs(&set()[..3]).is_empty());
    }

    fn trial(situation: Option<i64>, scores: &[f64]) -> Trial {
        Trial {
            condition: match situation {
                None => Condition::Default,
                Some(situation) => Condition::Evoked {
                    factor: 0,
                    situation,
                },
            },
            scores: Some(scores.to_vec()),
        }
    }

    /// Default mean (10, 20); each situation's evoked scores; a failed trial left out.
    fn model() -> ModelInput {
        let mut trials = vec![
            trial(None, &[9.0, 19.0]),
            trial(None, &[11.0, 21.0]),
            Trial {
                condition: Condition::Evoked {
                    factor: 0,
                    situation: 1,
                },
                scores: None,
            },
        ];
        // (situation, negative affect, positive affect), two repeats each averaging to these.
        for (s, na, pa) in [
            (1, 16.0, 17.0),
            (2, 14.0, 18.0),
            (3, 19.0, 15.0),
            (11, 10.0, 24.0),
            (12, 11.0, 23.0),
            (13, 10.5, 22.0),
            (21, 12.0, 20.0),
        ] {
            trials.push(trial(Some(s), &[na - 1.0, pa + 1.0]));
            trials.push(trial(Some(s), &[na + 1.0, pa - 1.0]));
        }
        ModelInput {
            name: "m".into(),
            trials,
        }
    }

    #[test]
    fn deltas_are_per_situation_means_against_the_default_mean() {
        let all = pairs(&set());
        let positive: Vec<&Pair> = all
            .iter()
            .filter(|p| p.variant_valence == Valence::Positive)
            .collect();
        let d = pair_deltas(&model(), &positive, 2);
        assert_eq!(d[0], vec![(6.0, 0.0), (4.0, 1.0), (9.0, 0.5)]);
        assert_eq!(d[1], vec![(-3.0, 4.0), (-2.0, 3.0), (-5.0, 2.0)]);
        // A pair without trials on one side is left out.
        let partial = ModelInput {
            name: "m".into(),
            trials: model()
                .trials
                .into_iter()
                .filter(|t| !matches!(t.condition, Condition::Evoked { situation: 12, .. }))
                .collect(),
        };
        assert_eq!(pair_deltas(&partial, &positive, 2)[0].len(), 2);
    }

    #[test]
    fn the_paired_test_matches_scipy_and_says_the_change_follows_valence() {
        // Negative affect: differences 6, 3, 8.5 (Δ original − Δ variant).
        let deltas = [(6.0, 0.0), (4.0, 1.0), (9.0, 0.5)];
        let row = test_row(
            "m",
            (Valence::Negative, Valence::Positive),
            "Negative",
            &deltas,
            0.1,
        );
        assert_eq!(row.pairs, 3);
        assert!((row.difference.unwrap() - 5.833_333_333_333_333).abs() < 1e-12);
        assert!((row.t.unwrap() - T_REF).abs() < 1e-9, "{:?}", row.t);
        assert!((row.p.unwrap() - P_REF).abs() < 1e-9, "{:?}", row.p);
        assert!(
            (row.ci_low.unwrap() - CI_LOW_REF).abs() < 1e-9,
            "{:?}",
            row.ci_low
        );
        assert!(
            (row.ci_high.unwrap() - CI_HIGH_REF).abs() < 1e-9,
            "{:?}",
            row.ci_high
        );
        assert!((row.dz.unwrap() - DZ_REF).abs() < 1e-9, "{:?}", row.dz);
        assert_eq!(row.df, Some(2.0));
        assert!(row.significant);
        assert!(
            row.verdict.contains("follows the valence"),
            "{}",
            row.verdict
        );
        assert!(row.verdict.contains("larger"), "{}", row.verdict);
        // p = 0.067: at α = 0.05 the same data are not significant, and the words say so.
        let strict = test_row(
            "m",
            (Valence::Negative, Valence::Positive),
            "Negative",
            &deltas,
            0.05,
        );
        assert!(!strict.significant);
        assert!(
            strict.verdict.contains("does not show"),
            "{}",
            strict.verdict
        );
        // One pair: no test, and the words say why.
        let one = test_row(
            "m",
            (Valence::Negative, Valence::Neutral),
            "Negative",
            &deltas[..1],
            0.05,
        );
        assert_eq!((one.t, one.significant), (None, false));
        assert!(
            one.verdict.contains("nothing can be said"),
            "{}",
            one.verdict
        );
    }

    // tools/stats_reference.py, "Valence control": scipy 1.17.1
    // ttest_rel([6, 4, 9], [0, 1, 0.5]) → statistic, pvalue, confidence_interval(0.95);
    // d_z = mean / sd (ddof 1) of the differences.
    const T_REF: f64 = 3.668_996_928_526_713_7;
    const P_REF: f64 = 0.066_915_456_044_226_29;
    const CI_LOW_REF: f64 = -1.007_448_514_986_072_6;
    const CI_HIGH_REF: f64 = 12.674_115_181_652_738;
    const DZ_REF: f64 = 2.118_296_364_340_808;

    #[test]
    fn compare_gives_a_row_per_cohort_contrast_and_category() {
        let cats = vec!["Negative".to_owned(), "Positive".to_owned()];
        let c = compare(&set(), &[model()], &cats, 0.05).unwrap();
        assert_eq!(c.pairs.len(), 4);
        let labels: Vec<(Valence, &str, usize)> = c
            .rows
            .iter()
            .map(|r| (r.variant_valence, r.category.as_str(), r.pairs))
            .collect();
        assert_eq!(
            labels,
            vec![
                (Valence::Neutral, "Negative", 1),
                (Valence::Neutral, "Positive", 1),
                (Valence::Positive, "Negative", 3),
                (Valence::Positive, "Positive", 3),
            ]
        );
        // Positive affect falls after the negative situations and rises after the positive
        // variants: Δ original − Δ variant is negative.
        let pa = &c.rows[3];
        assert!(pa.difference.unwrap() < 0.0);
        assert!(pa.verdict.contains("smaller"), "{}", pa.verdict);
        assert!(compare(&set()[..3], &[model()], &cats, 0.05).is_none());
    }
}
