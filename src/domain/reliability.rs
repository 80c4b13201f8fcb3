//! The psychometrics of one report cohort (#16, point 4): the reliability of each category
//! (Cronbach's α, McDonald's ω, `domain::psychometrics`), the item-position effect across the
//! item orders shown, and test–retest across repeats of the same prompt (ICC(1)).
//!
//! Pure, no I/O; the app layer hands in each cohort's answered questionnaires
//! ([`Response`]). Every coefficient that cannot be computed is `null` with the reason, never
//! a number made up.
//!
//! # Decisions
//! - **Keying.** Reliability is of the scale as its authors key it: reverse-keyed items are
//!   reversed (`reverse_constant − x`) in both report modes. The paper's raw sums (paper mode)
//!   add unreversed items, but α/ω of a sum whose items point in opposite directions measure
//!   the keying, not the consistency; α and ω do not depend on the multiplier or on sum vs
//!   mean.
//! - **Measures separately.** Humans: before (`default`) and after (`evoked`) each get their
//!   own α and ω. Models the same: default trials, and evoked trials pooled over situations
//!   (the situation's effect is part of the true-score variance there, as for humans who each
//!   imagined one situation). Only trials whose answers fit the instrument count.
//! - **Item position.** The mean raw answer (not reversed: a position effect is a tendency to
//!   answer higher or lower there, whatever the item) at each displayed position, pooled over
//!   both measures. Meaningful only when orders vary; when no order is recorded or every
//!   response shows one order, the block says so and gives no means.
//! - **Test–retest.** ICC(1), the one-way random-effects, single-measure intraclass
//!   correlation of Shrout & Fleiss (1979) (`pingouin.intraclass_corr` "ICC1"), per category
//!   on the scores the report tests: targets are prompts (a run's default prompt or one
//!   situation's evoked prompt), raters are repeats (exchangeable, hence one-way). The design
//!   must be balanced: `k` is the most common number of scored repeats per prompt (ties: the
//!   larger), prompts with fewer are left out, prompts with more contribute their first `k`
//!   by repeat index. Humans answer once per measure: no test–retest.

use std::collections::BTreeMap;

use serde::Serialize;

use super::instrument::Instrument;
use super::measure::Measure;
use super::psychometrics::{ReliabilityError, cronbach_alpha, mcdonald_omega};
use super::stats::f_cdf;

/// Which prompt a model trial repeated: a run's default prompt or one situation's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Prompt {
    pub run: i64,
    /// `None` for the default measure.
    pub situation: Option<i64>,
    pub repeat: i32,
}

/// One answered questionnaire of a cohort.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub measure: Measure,
    /// One answer per item, canonical order (`answers[i]` answers item `i + 1`), validated by
    /// scoring.
    pub answers: Vec<i32>,
    /// The category scores the report uses (its convention).
    pub scores: Vec<f64>,
    /// Item numbers in the order shown (display position 1 first), when recorded.
    pub shown: Option<Vec<u32>>,
    /// Models: the prompt this trial repeated.
    pub prompt: Option<Prompt>,
}

/// How the instrument keys its categories: item indexes and reverse keying.
#[derive(Debug, Clone, PartialEq)]
pub struct Keying {
    pub categories: Vec<(String, Vec<usize>)>,
    pub reverse: Vec<bool>,
    pub reverse_constant: i32,
}

impl Keying {
    pub fn of(instrument: &Instrument) -> Keying {
        Keying {
            categories: instrument
                .categories
                .iter()
                .map(|c| {
                    let items = c
                        .items
                        .iter()
                        .filter_map(|&n| usize::try_from(n).ok()?.checked_sub(1))
                        .filter(|&i| i < instrument.items.len())
                        .collect();
                    (c.name.clone(), items)
                })
                .collect(),
            reverse: instrument.items.iter().map(|i| i.reverse).collect(),
            reverse_constant: instrument.scoring.reverse_constant,
        }
    }
}

/// A coefficient, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coefficient {
    pub value: Option<f64>,
    /// Why `value` is null.
    pub missing: Option<String>,
}

impl Coefficient {
    fn of<E: std::fmt::Display>(r: Result<f64, E>) -> Coefficient {
        match r {
            Ok(v) if v.is_finite() => Coefficient {
                value: Some(v),
                missing: None,
            },
            Ok(_) => Coefficient::none("not a finite number"),
            Err(e) => Coefficient::none(&e.to_string()),
        }
    }

    fn none(reason: &str) -> Coefficient {
        Coefficient {
            value: None,
            missing: Some(reason.to_owned()),
        }
    }
}

/// α and ω of one category on one measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryReliability {
    pub category: String,
    pub measure: Measure,
    /// Responses with every item of the category.
    pub respondents: usize,
    pub items: usize,
    pub alpha: Option<f64>,
    pub omega: Option<f64>,
    /// Why `alpha` is null.
    pub alpha_missing: Option<String>,
    /// Why `omega` is null.
    pub omega_missing: Option<String>,
}

/// The mean raw answer at one displayed position.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PositionMean {
    /// 1 = shown first.
    pub position: usize,
    pub n: usize,
    pub mean: f64,
}

/// The item-position effect of a cohort.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemPosition {
    /// Whether the responses showed the items in more than one order.
    pub shuffled: bool,
    /// Distinct orders among the responses with a recorded order.
    pub orders: usize,
    /// Responses with a recorded order.
    pub responses: usize,
    /// Empty unless shuffled.
    pub positions: Vec<PositionMean>,
    /// Largest minus smallest position mean (null unless shuffled).
    pub spread: Option<f64>,
    pub note: String,
}

/// ICC(1) of one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryRetest {
    pub category: String,
    pub icc1: Option<f64>,
    /// The 95 % confidence interval (F distribution), when `icc1` has one.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Why `icc1` is null.
    pub missing: Option<String>,
}

/// Test–retest of a cohort over repeats of the same prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRetest {
    /// "ICC(1)" (Shrout & Fleiss 1979; pingouin ICC1).
    pub statistic: &'static str,
    /// Prompts used (targets).
    pub prompts: usize,
    /// Repeats per prompt used (raters).
    pub repeats: usize,
    pub categories: Vec<CategoryRetest>,
    pub note: String,
}

/// Everything the report shows of a cohort's psychometrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Psychometrics {
    pub reliability: Vec<CategoryReliability>,
    pub item_position: ItemPosition,
    pub test_retest: TestRetest,
}

/// The psychometrics of one cohort (see the module doc for the choices).
pub fn psychometrics(keying: &Keying, responses: &[Response]) -> Psychometrics {
    Psychometrics {
        reliability: reliability(keying, responses),
        item_position: item_position(responses),
        test_retest: test_retest(keying, responses),
    }
}

/// α and ω per measure (default, then evoked) and category, reverse-keyed items reversed.
pub fn reliability(keying: &Keying, responses: &[Response]) -> Vec<CategoryReliability> {
    let mut out = Vec::new();
    for measure in [Measure::Default, Measure::Evoked] {
        for (name, items) in &keying.categories {
            let rows: Vec<Vec<Option<f64>>> = responses
                .iter()
                .filter(|r| r.measure == measure)
                .map(|r| {
                    items
                        .iter()
                        .map(|&i| {
                            let a = *r.answers.get(i)?;
                            let keyed = if keying.reverse.get(i).copied().unwrap_or(false) {
                                keying.reverse_constant - a
                            } else {
                                a
                            };
                            Some(f64::from(keyed))
                        })
                        .collect()
                })
                .collect();
            let respondents = rows
                .iter()
                .filter(|r| r.iter().all(Option::is_some))
                .count();
            let (alpha, omega) = if rows.is_empty() {
                let none = Coefficient::none("no responses");
                (none.clone(), none)
            } else {
                let numbered =
                    |r: Result<f64, ReliabilityError>| r.map_err(|e| instrument_item(e, items));
                (
                    Coefficient::of(numbered(cronbach_alpha(&rows))),
                    Coefficient::of(numbered(mcdonald_omega(&rows))),
                )
            };
            out.push(CategoryReliability {
                category: name.clone(),
                measure,
                respondents,
                items: items.len(),
                alpha: alpha.value,
                omega: omega.value,
                alpha_missing: alpha.missing,
                omega_missing: omega.missing,
            });
        }
    }
    out
}

/// The reason with the item named by its number on the instrument (`psychometrics` counts
/// items from 0 within the matrix it was given: the category's).
fn instrument_item(e: ReliabilityError, items: &[usize]) -> String {
    let number = |i: usize| items.get(i).map_or(i + 1, |&index| index + 1);
    match e {
        ReliabilityError::ZeroItemVariance(i) => format!(
            "item {} has no variance (every respondent gave the same answer)",
            number(i)
        ),
        ReliabilityError::Heywood(i) => format!(
            "the one-factor fit is improper (item {} has a communality above 1)",
            number(i)
        ),
        ReliabilityError::NotFinite { row, item } => format!(
            "respondent {row}, item {}: the answer is not a finite number",
            number(item)
        ),
        other => other.to_string(),
    }
}

/// The mean raw answer by displayed position, when the orders vary.
pub fn item_position(responses: &[Response]) -> ItemPosition {
    let recorded: Vec<(&Response, &Vec<u32>)> = responses
        .iter()
        .filter_map(|r| Some((r, r.shown.as_ref()?)))
        .collect();
    let mut orders: Vec<&Vec<u32>> = recorded.iter().map(|(_, o)| *o).collect();
    orders.sort();
    orders.dedup();
    let shuffled = orders.len() > 1;
    let mut result = ItemPosition {
        shuffled,
        orders: orders.len(),
        responses: recorded.len(),
        positions: Vec::new(),
        spread: None,
        note: String::new(),
    };
    if recorded.is_empty() {
        result.note = "no item order was recorded: the position effect cannot be measured".into();
        return result;
    }
    if !shuffled {
        result.note = "every response showed the items in one order: position and item cannot \
                       be told apart"
            .into();
        return result;
    }
    let mut sums: Vec<(usize, f64)> = Vec::new();
    for (r, order) in &recorded {
        for (position, &item) in order.iter().enumerate() {
            let answer = usize::try_from(item)
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| r.answers.get(i));
            if let Some(&a) = answer {
                if sums.len() <= position {
                    sums.resize(position + 1, (0, 0.0));
                }
                sums[position].0 += 1;
                sums[position].1 += f64::from(a);
            }
        }
    }
    result.positions = sums
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(p, &(n, s))| PositionMean {
            position: p + 1,
            n,
            mean: s / n as f64,
        })
        .collect();
    let means = result.positions.iter().map(|p| p.mean);
    let (lo, hi) = means.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), m| {
        (lo.min(m), hi.max(m))
    });
    result.spread = (hi >= lo).then_some(hi - lo);
    result.note = format!(
        "mean raw answer at each displayed position over {} responses in {} orders; with \
         shuffled orders each item appears at every position alike, so differences between \
         positions are the position's effect",
        recorded.len(),
        orders.len()
    );
    result
}

/// Why an ICC(1) cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IccError {
    #[error("need at least 2 prompts, got {0}")]
    TooFewTargets(usize),
    #[error("need at least 2 repeats per prompt, got {0}")]
    TooFewRepeats(usize),
    #[error("prompt {0} does not have the same number of repeats as the first")]
    Unbalanced(usize),
    #[error("a score is not a finite number")]
    NotFinite,
    #[error("the scores have no variance")]
    NoVariance,
}

/// ICC(1) of a balanced `targets × k` table (Shrout & Fleiss 1979, case 1; pingouin "ICC1"):
/// `(MSB − MSW) / (MSB + (k − 1)·MSW)` from the one-way ANOVA of the scores by target, with
/// `MSB = k·Σ(x̄ᵢ − x̄)² / (n − 1)` and `MSW = ΣΣ(xᵢⱼ − x̄ᵢ)² / (n·(k − 1))`.
pub fn icc1(table: &[Vec<f64>]) -> Result<f64, IccError> {
    let a = one_way(table)?;
    Ok((a.msb - a.msw) / (a.msb + (a.k - 1.0) * a.msw))
}

/// The 95 % confidence interval of ICC(1) from the F distribution (Shrout & Fleiss 1979;
/// pingouin's `CI95`): with `F = MSB/MSW`, `df₁ = n − 1`, `df₂ = n(k − 1)`,
/// `F_L = F / F₀.₉₇₅(df₁, df₂)`, `F_U = F · F₀.₉₇₅(df₂, df₁)`, the bounds are
/// `(F_L − 1)/(F_L + k − 1)` and `(F_U − 1)/(F_U + k − 1)`. `None` when MSW is 0 (every
/// prompt answered identically on each repeat: F is infinite).
pub fn icc1_ci95(table: &[Vec<f64>]) -> Result<Option<(f64, f64)>, IccError> {
    let a = one_way(table)?;
    if a.msw <= 0.0 {
        return Ok(None);
    }
    let f = a.msb / a.msw;
    let (df1, df2) = (a.n - 1.0, a.n * (a.k - 1.0));
    let fl = f / f_quantile(0.975, df1, df2);
    let fu = f * f_quantile(0.975, df2, df1);
    let bound = |x: f64| (x - 1.0) / (x + a.k - 1.0);
    let (lo, hi) = (bound(fl), bound(fu));
    Ok((lo.is_finite() && hi.is_finite()).then_some((lo, hi)))
}

/// The `p` quantile of the F distribution (as `scipy.stats.f.ppf`), by bisection on the exact
/// distribution function.
fn f_quantile(p: f64, dfn: f64, dfd: f64) -> f64 {
    super::stats::bisect_crossing(|x| f_cdf(x, dfn, dfd) < p)
}

/// The one-way ANOVA of a balanced table by target.
struct OneWay {
    n: f64,
    k: f64,
    msb: f64,
    msw: f64,
}

fn one_way(table: &[Vec<f64>]) -> Result<OneWay, IccError> {
    let n = table.len();
    if n < 2 {
        return Err(IccError::TooFewTargets(n));
    }
    let k = table[0].len();
    if k < 2 {
        return Err(IccError::TooFewRepeats(k));
    }
    if let Some(bad) = table.iter().position(|row| row.len() != k) {
        return Err(IccError::Unbalanced(bad));
    }
    if table.iter().flatten().any(|x| !x.is_finite()) {
        return Err(IccError::NotFinite);
    }
    let (nf, kf) = (n as f64, k as f64);
    let means: Vec<f64> = table
        .iter()
        .map(|row| row.iter().sum::<f64>() / kf)
        .collect();
    let grand = means.iter().sum::<f64>() / nf;
    let msb = kf * means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (nf - 1.0);
    let ssw: f64 = table
        .iter()
        .zip(&means)
        .map(|(row, m)| row.iter().map(|x| (x - m).powi(2)).sum::<f64>())
        .sum();
    let msw = ssw / (nf * (kf - 1.0));
    let denominator = msb + (kf - 1.0) * msw;
    // Relative threshold: identical scores leave rounding noise, not variance.
    if denominator <= grand.abs() * 1e-12 || denominator <= 0.0 {
        return Err(IccError::NoVariance);
    }
    Ok(OneWay {
        n: nf,
        k: kf,
        msb,
        msw,
    })
}

/// A prompt without its repeat: run and situation (`None`: the default prompt).
type PromptKey = (i64, Option<i64>);

/// ICC(1) per category over repeats of the same prompt (see the module doc).
pub fn test_retest(keying: &Keying, responses: &[Response]) -> TestRetest {
    let mut by_prompt: BTreeMap<PromptKey, Vec<(i32, &Response)>> = BTreeMap::new();
    for r in responses {
        if let Some(p) = r.prompt {
            by_prompt
                .entry((p.run, p.situation))
                .or_default()
                .push((p.repeat, r));
        }
    }
    let mut result = TestRetest {
        statistic: "ICC(1)",
        prompts: 0,
        repeats: 0,
        categories: Vec::new(),
        note: String::new(),
    };
    if by_prompt.is_empty() {
        result.note = "no repeated prompts (humans answer each measure once)".into();
        return result;
    }
    // k: the most common repeat count ≥ 2 (ties: the larger).
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for trials in by_prompt.values().filter(|t| t.len() >= 2) {
        *counts.entry(trials.len()).or_default() += 1;
    }
    let Some(k) = counts
        .iter()
        .max_by_key(|(len, how_many)| (**how_many, **len))
        .map(|(len, _)| *len)
    else {
        result.note = "no prompt has 2 scored repeats".into();
        for (name, _) in &keying.categories {
            result.categories.push(CategoryRetest {
                category: name.clone(),
                icc1: None,
                ci_low: None,
                ci_high: None,
                missing: Some(IccError::TooFewRepeats(1).to_string()),
            });
        }
        return result;
    };
    let used: Vec<Vec<&Response>> = by_prompt
        .into_values()
        .filter(|t| t.len() >= k)
        .map(|mut t| {
            t.sort_by_key(|(repeat, _)| *repeat);
            t.into_iter().take(k).map(|(_, r)| r).collect()
        })
        .collect();
    result.prompts = used.len();
    result.repeats = k;
    result.note = format!(
        "ICC(1), one-way random effects, single measure (Shrout & Fleiss 1979), on the report's \
         category scores: {} prompts × {k} repeats (prompts with fewer scored repeats left out, \
         those with more give their first {k})",
        used.len()
    );
    for (c, (name, _)) in keying.categories.iter().enumerate() {
        let table: Vec<Vec<f64>> = used
            .iter()
            .map(|t| t.iter().filter_map(|r| r.scores.get(c).copied()).collect())
            .collect();
        let (icc1, missing) = match icc1(&table) {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let ci = icc1_ci95(&table).ok().flatten();
        result.categories.push(CategoryRetest {
            category: name.clone(),
            icc1,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            missing,
        });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    // Shrout & Fleiss (1979), Table 2 (6 targets × 4 judges; they report ICC(1,1) = .17);
    // tools/stats_reference.py, retest_reference(): pingouin.intraclass_corr "ICC(1,1)".
    const ICC_TABLE: [[f64; 4]; 6] = [
        [9.0, 2.0, 5.0, 8.0],
        [6.0, 1.0, 3.0, 2.0],
        [8.0, 4.0, 6.0, 8.0],
        [7.0, 1.0, 2.0, 6.0],
        [10.0, 5.0, 6.0, 9.0],
        [6.0, 2.0, 4.0, 7.0],
    ];

    #[test]
    fn icc1_matches_pingouin() {
        let t: Vec<Vec<f64>> = ICC_TABLE.iter().map(|r| r.to_vec()).collect();
        close(icc1(&t).unwrap(), ICC1_PINGOUIN);
        let (lo, hi) = icc1_ci95(&t).unwrap().unwrap();
        close(lo, -0.13293232487475098);
        close(hi, 0.722560062328121);
    }

    const ICC1_PINGOUIN: f64 = 0.1657417684054755;

    #[test]
    fn icc1_refuses_what_it_cannot_compute() {
        assert_eq!(icc1(&[vec![1.0, 2.0]]), Err(IccError::TooFewTargets(1)));
        assert_eq!(
            icc1(&[vec![1.0], vec![2.0]]),
            Err(IccError::TooFewRepeats(1))
        );
        assert_eq!(
            icc1(&[vec![1.0, 2.0], vec![2.0]]),
            Err(IccError::Unbalanced(1))
        );
        assert_eq!(
            icc1(&[vec![3.0, 3.0], vec![3.0, 3.0]]),
            Err(IccError::NoVariance)
        );
    }

    fn keying() -> Keying {
        // Two categories of 3 items; item 3 reverse keyed on a 1..5 scale.
        Keying {
            categories: vec![("A".into(), vec![0, 1, 2]), ("B".into(), vec![3, 4, 5])],
            reverse: vec![false, false, true, false, false, false],
            reverse_constant: 6,
        }
    }

    fn response(measure: Measure, answers: [i32; 6]) -> Response {
        Response {
            measure,
            answers: answers.to_vec(),
            scores: vec![0.0, 0.0],
            shown: None,
            prompt: None,
        }
    }

    /// The reversed item enters α as `6 − x`: α of the keyed rows equals α computed directly
    /// on them; B has a constant item (ω refused, with the reason).
    #[test]
    fn reliability_reverses_keyed_items_and_says_why_a_value_is_missing() {
        let raw = [
            [1, 2, 5, 3, 1, 4],
            [2, 2, 4, 3, 2, 4],
            [3, 4, 2, 3, 3, 5],
            [4, 5, 1, 3, 4, 5],
            [5, 4, 2, 3, 5, 3],
        ];
        let responses: Vec<Response> = raw.iter().map(|a| response(Measure::Default, *a)).collect();
        let r = reliability(&keying(), &responses);
        assert_eq!(r.len(), 4);
        let keyed: Vec<Vec<Option<f64>>> = raw
            .iter()
            .map(|a| {
                vec![
                    Some(f64::from(a[0])),
                    Some(f64::from(a[1])),
                    Some(f64::from(6 - a[2])),
                ]
            })
            .collect();
        close(r[0].alpha.unwrap(), cronbach_alpha(&keyed).unwrap());
        assert!(r[0].alpha.unwrap() > 0.9, "{:?}", r[0]);
        assert_eq!((r[0].respondents, r[0].items), (5, 3));
        assert_eq!(r[1].category, "B");
        assert_eq!(r[1].omega, None);
        assert_eq!(
            r[1].omega_missing.as_deref(),
            Some("item 4 has no variance (every respondent gave the same answer)")
        );
        assert_eq!(r[2].measure, Measure::Evoked);
        assert_eq!(r[2].alpha_missing.as_deref(), Some("no responses"));
    }

    #[test]
    fn item_position_needs_shuffled_orders() {
        let mut a = response(Measure::Default, [1, 2, 3, 4, 5, 1]);
        let none = item_position(std::slice::from_ref(&a));
        assert!(!none.shuffled && none.positions.is_empty());
        assert!(none.note.starts_with("no item order was recorded"));
        a.shown = Some(vec![1, 2, 3, 4, 5, 6]);
        let one = item_position(&[a.clone(), a.clone()]);
        assert_eq!((one.shuffled, one.orders, one.spread), (false, 1, None));
        let mut b = response(Measure::Evoked, [5, 5, 5, 1, 1, 1]);
        b.shown = Some(vec![6, 5, 4, 3, 2, 1]);
        let two = item_position(&[a, b]);
        assert!(two.shuffled);
        // Position 1: item 1 (1) and item 6 (1); position 4: item 4 (4) and item 3 (5).
        assert_eq!(two.positions[0].mean, 1.0);
        assert_eq!(two.positions[3].mean, 4.5);
        assert_eq!(two.positions.len(), 6);
        // Positions 1..6: 1, 1.5, 2, 4.5, 5, 3.
        close(two.spread.unwrap(), 4.0);
    }

    /// Prompts with the common repeat count are used; ICC(1) per category equals `icc1` on
    /// the same table.
    #[test]
    fn test_retest_uses_the_common_repeat_count() {
        let mut responses = Vec::new();
        for (s, row) in ICC_TABLE.iter().enumerate() {
            for (repeat, &x) in row.iter().enumerate() {
                let mut r = response(Measure::Evoked, [1; 6]);
                r.scores = vec![x, 2.0 * x];
                r.prompt = Some(Prompt {
                    run: 1,
                    situation: Some(s as i64),
                    repeat: repeat as i32,
                });
                responses.push(r);
            }
        }
        // A prompt with one repeat only is left out.
        let mut lone = response(Measure::Default, [1; 6]);
        lone.prompt = Some(Prompt {
            run: 1,
            situation: None,
            repeat: 0,
        });
        responses.push(lone);
        let t = test_retest(&keying(), &responses);
        assert_eq!((t.prompts, t.repeats), (6, 4));
        let table: Vec<Vec<f64>> = ICC_TABLE.iter().map(|r| r.to_vec()).collect();
        close(t.categories[0].icc1.unwrap(), icc1(&table).unwrap());
        close(t.categories[1].icc1.unwrap(), icc1(&table).unwrap());
        let humans = test_retest(&keying(), &[response(Measure::Default, [1; 6])]);
        assert!(humans.categories.is_empty());
        assert!(humans.note.starts_with("no repeated prompts"));
    }
}
