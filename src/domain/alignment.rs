//! How each model lines up with the humans, measured against how well humans line up with each
//! other (a noise ceiling) and against responders that know nothing (null baselines), every
//! number with a seeded bootstrap 95 % interval (#16).
//!
//! Pure: the caller passes the layout, the humans' and the models' category scores, the answer
//! scale (for the uniform responder) and the options; nothing here reads a clock or a file.
//!
//! # Metrics (each a [`Metric`]: value, ci_low, ci_high)
//! Over the factor table (factor × category cells), the humans' change Δ = mean(after − before)
//! with its paired test, the model's Δ = evoked − default mean with the mode's test
//! ([`model_test`]'s procedure), each cell tested at α **uncorrected** (a resample cannot carry a
//! correction over the table consistently, and the point estimate is computed the same way):
//! - `direction_agreement`: share of cells, among those where the humans **or** the model change
//!   significantly, in which ↑/↓/− agree (cells where neither does carry no information about
//!   direction; with few humans they were what made a model "agree" everywhere);
//! - `delta_correlation`: Pearson r of the model's Δ with the humans' Δ across factors, per
//!   category (the overall and per-emotion values are the mean over categories);
//! - `evoked_mae`: mean |model evoked mean − human evoked mean| over cells;
//! - `default_gap`: model default mean − human default mean per category (overall: the mean of
//!   its absolute values; per emotion not defined, the default measure has no emotion);
//! - `wasserstein`: Wasserstein-1 between the humans' evoked category scores and the model's
//!   evoked trials' per factor, in points of the score, mean over cells;
//! - `jensen_shannon`: Jensen–Shannon distance (base 2) between the same two samples as
//!   histograms: each category's observed score range cut into as many equal bins as the answer
//!   scale has points (5 for PANAS), so a histogram has the resolution of one answer step.
//!
//! # Intervals, ceiling and baselines
//! - Bootstrap: each resample draws the humans with replacement within each factor and the
//!   model's trials with replacement within each condition (the default measure, and each
//!   situation), and recomputes every metric; the interval is the 2.5th and 97.5th percentile
//!   (numpy's linear rule) of the resamples on which the metric is defined, and none when it is
//!   undefined on more than half of them. Random streams: `ChaCha8Rng::seed_from_u64(seed)`, one
//!   stream for the humans and one per cohort (`set_stream`), so the result does not depend on
//!   the order cohorts are computed in.
//! - Ceiling: the same metrics between two random halves of the humans (split within each
//!   factor), repeated `resamples` times; the value is the mean over splits and the interval
//!   their 2.5th–97.5th percentiles. Each half has half the humans, so the ceiling is that of
//!   half-size samples: a model compared with all humans can come out above it.
//! - Baselines, each treated exactly as a model: `uniform` answers every item uniformly on the
//!   instrument's scale and is scored as the models are; `marginal` draws, for each trial, one
//!   human at random from all the humans and answers with their before (default) or after
//!   (evoked) scores, so it knows the population's average change but not the situation;
//!   `shuffled` (one per model) is the model's own trials with the situation labels of its
//!   evoked trials permuted. The two responders answer the models' design: per condition as
//!   many trials as the model with most there.

use std::collections::{BTreeMap, HashMap};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::bootstrap::percentile;
use super::distance;
use super::instrument::{Convention, Instrument};
use super::observation::{
    Condition, HumanObservation, Layout, Mode, ModelInput, Options, PAPER_EPSILON, Trial, Unit,
};
use super::stats;

/// A factor with fewer humans than this gets a warning: its human Δ rests on too few people.
pub const FEW_HUMANS: usize = 10;

/// One alignment number with its bootstrap 95 % interval; `null` when undefined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Metric {
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// The six alignment metrics of one scope (overall, a category or an emotion).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    pub direction_agreement: Metric,
    pub delta_correlation: Metric,
    pub evoked_mae: Metric,
    pub default_gap: Metric,
    pub wasserstein: Metric,
    pub jensen_shannon: Metric,
}

/// The metrics of one category or emotion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScopeMetrics {
    pub name: String,
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// Everything a model, the ceiling or a baseline is measured by: overall (flattened into the
/// object), per category and per emotion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSet {
    #[serde(flatten)]
    pub overall: Metrics,
    /// Factor cells where the humans or the other side change significantly (the denominator of
    /// `direction_agreement`), and those that agree, on the full data (for the ceiling: the mean
    /// over splits, rounded).
    pub cells_compared: usize,
    pub cells_agreeing: usize,
    pub categories: Vec<ScopeMetrics>,
    pub emotions: Vec<ScopeMetrics>,
}

/// The distances of one factor × category cell, model vs humans (point values).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellDistance {
    pub emotion: String,
    pub factor: String,
    pub category: String,
    pub humans: usize,
    pub trials: usize,
    pub wasserstein: Option<f64>,
    pub jensen_shannon: Option<f64>,
}

/// How one model lines up with the humans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alignment {
    pub model: String,
    #[serde(flatten)]
    pub metrics: MetricSet,
    /// Per factor × category: Wasserstein-1 and Jensen–Shannon (their means are the metrics).
    pub distances: Vec<CellDistance>,
    pub summary: String,
}

/// Which null responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BaselineKind {
    Uniform,
    Marginal,
    Shuffled,
}

/// A null responder's alignment with the humans.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    pub name: String,
    pub kind: BaselineKind,
    /// The model whose trials were shuffled (`shuffled` only).
    pub model: Option<String>,
    #[serde(flatten)]
    pub metrics: MetricSet,
}

/// The humans against themselves: two random halves per split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceiling {
    pub splits: usize,
    #[serde(flatten)]
    pub metrics: MetricSet,
}

/// A factor named for a warning, with its number of humans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FactorCount {
    pub emotion: String,
    pub factor: String,
    pub humans: usize,
}

/// How the intervals were drawn and which factors the human side is thin or missing on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    pub seed: u64,
    pub resamples: usize,
    /// Factors with at least one but fewer than [`FEW_HUMANS`] humans.
    pub few_humans: Vec<FactorCount>,
    /// Factors without any human: left out of every metric, listed here.
    pub no_humans: Vec<FactorCount>,
    /// The warnings as sentences (the rendered report prints these).
    pub warnings: Vec<String>,
}

/// Everything the alignment adds to a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Output {
    pub alignment: Vec<Alignment>,
    pub ceiling: Option<Ceiling>,
    pub baselines: Vec<Baseline>,
    pub method: Method,
}

/// The instrument's answer scale and scoring, for the uniform responder (and the histograms'
/// resolution).
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerScale {
    pub instrument: Instrument,
    pub convention: Convention,
}

// ---------------------------------------------------------------------------
// Layout of the flat metric rows
// ---------------------------------------------------------------------------

const DIR: usize = 0;
const CORR: usize = 1;
const MAE: usize = 2;
const GAP: usize = 3;
const W1: usize = 4;
const JS: usize = 5;
/// Metrics per scope.
const NM: usize = 6;

/// Factors, categories, emotions; scopes are overall, then each category, then each emotion.
struct Shape {
    factors: usize,
    cats: usize,
    emotions: usize,
    emotion_of: Vec<usize>,
}

impl Shape {
    fn cells(&self) -> usize {
        self.factors * self.cats
    }
    fn width(&self) -> usize {
        (1 + self.cats + self.emotions) * NM
    }
}

/// The sorted distinct evoked values of every cell (humans and all cohorts together), each
/// with its histogram bin: a resample only counts how often each value was drawn.
struct Support {
    values: Vec<f64>,
    /// `offset[cell]..offset[cell + 1]` are the cell's values.
    offset: Vec<usize>,
    bin: Vec<usize>,
    bins: usize,
}

impl Support {
    fn index(&self, cell: usize, v: f64) -> usize {
        let s = &self.values[self.offset[cell]..self.offset[cell + 1]];
        self.offset[cell] + s.partition_point(|x| *x < v)
    }
}

/// The humans with complete scores, grouped by factor.
struct Humans {
    by_factor: Vec<Vec<u32>>,
    before: Vec<f64>,
    after: Vec<f64>,
    /// Support index of each human × category's after score.
    after_at: Vec<usize>,
}

/// A situation's trials: `start..start + len` of a cohort's evoked rows.
struct Situation {
    factor: usize,
    start: usize,
    len: usize,
}

/// A cohort's scored trials: default rows, and evoked rows ordered by situation.
struct CohortData {
    default: Vec<f64>,
    situations: Vec<Situation>,
    evoked: Vec<f64>,
    evoked_at: Vec<usize>,
}

/// One side of a comparison, per cell: Δ, evoked mean, direction (−1, 0, 1; 0 also when
/// untested), histogram counts; per category the default mean. NaN is undefined.
struct Side {
    delta: Vec<f64>,
    evoked: Vec<f64>,
    dir: Vec<i8>,
    n: Vec<u32>,
    default_mean: Vec<f64>,
    counts: Vec<u32>,
}

impl Side {
    fn new(shape: &Shape, support: &Support) -> Side {
        let cells = shape.cells();
        Side {
            delta: vec![f64::NAN; cells],
            evoked: vec![f64::NAN; cells],
            dir: vec![0; cells],
            n: vec![0; cells],
            default_mean: vec![f64::NAN; shape.cats],
            counts: vec![0; support.values.len()],
        }
    }
}

// ---------------------------------------------------------------------------
// Significance without the incomplete beta function in the inner loop
// ---------------------------------------------------------------------------

/// Critical values by degrees of freedom, found once by bisection: p falls as |t| (or F away
/// from 1) grows, so "p ≤ α" is "|t| ≥ t*". Within a hair of a critical value the exact p
/// decides, so a resample is classified exactly as [`model_test`] would.
struct Critical {
    alpha: f64,
    t: HashMap<u64, f64>,
    f: HashMap<(u64, u64), (f64, f64)>,
}

const HAIR: f64 = 1e-9;

impl Critical {
    fn new(alpha: f64) -> Critical {
        Critical {
            alpha,
            t: HashMap::new(),
            f: HashMap::new(),
        }
    }

    fn t_star(&mut self, df: f64) -> f64 {
        let alpha = self.alpha;
        *self.t.entry(df.to_bits()).or_insert_with(|| {
            let p = |t: f64| stats::t_two_sided_p(t, df);
            bisect(|t| p(t) <= alpha, 1.0)
        })
    }

    /// Two-sided t-test at α: whether `p ≤ α`. `df_low ≤ df ≤ df_high` bound Welch's df, whose
    /// critical value then lies between theirs: only in between is anything computed.
    fn t_significant(&mut self, t: f64, df: f64, df_low: f64, df_high: f64) -> bool {
        let at = t.abs();
        if !(at.is_finite() && df.is_finite() && df > 0.0) {
            return false;
        }
        let loose = self.t_star(df_high);
        if at < loose * (1.0 - HAIR) {
            return false;
        }
        let strict = self.t_star(df_low);
        if at > strict * (1.0 + HAIR) {
            return true;
        }
        if df_low == df_high && (at - strict).abs() > strict * HAIR {
            return at > strict;
        }
        stats::t_two_sided_p(t, df) <= self.alpha
    }

    /// Paper mode's F-test for equal variances: whether `p > α`, i.e. `F` lies strictly between
    /// the two critical values.
    fn f_equal(&mut self, f: f64, dfn: f64, dfd: f64) -> bool {
        let alpha = self.alpha;
        let (lo, hi) = *self
            .f
            .entry((dfn.to_bits(), dfd.to_bits()))
            .or_insert_with(|| {
                let hi = bisect(|x| stats::f_sf(x, dfn, dfd) <= alpha / 2.0, 1.0);
                let lo = 1.0 / bisect(|y| stats::f_cdf(1.0 / y, dfn, dfd) <= alpha / 2.0, 1.0);
                (lo, hi)
            });
        let near = |c: f64| (f - c).abs() <= c * HAIR;
        if near(lo) || near(hi) {
            let p = (2.0 * stats::f_cdf(f, dfn, dfd).min(stats::f_sf(f, dfn, dfd))).min(1.0);
            return p > alpha;
        }
        f > lo && f < hi
    }
}

/// The smallest `x > 0` with `holds(x)` for a predicate that is false near 0 and stays true
/// once true; starts from `guess` and doubles until it holds.
fn bisect(holds: impl Fn(f64) -> bool, guess: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, guess);
    let mut tries = 0;
    while !holds(hi) && tries < 200 {
        lo = hi;
        hi *= 2.0;
        tries += 1;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Count, mean and variance from shifted sums (`Σ(x − shift)`, `Σ(x − shift)²`): shifting by a
/// value of the sample keeps a sample of equal values at variance exactly 0.
fn moments(n: f64, s1: f64, s2: f64, shift: f64) -> (f64, f64) {
    let mean = s1 / n;
    let var = if n >= 2.0 {
        ((s2 - s1 * mean) / (n - 1.0)).max(0.0)
    } else {
        f64::NAN
    };
    (mean + shift, var)
}

/// The direction of a model's change under the mode's test from the two samples' moments:
/// the same decisions as [`model_test`] (Welch, or paper mode's ε, F-test, Student or Welch).
fn model_direction(
    crit: &mut Critical,
    options: Options,
    (nd, md, vd): (f64, f64, f64),
    (ne, me, ve): (f64, f64, f64),
) -> i8 {
    if nd < 2.0 || ne < 2.0 || !vd.is_finite() || !ve.is_finite() {
        return 0;
    }
    let diff = me - md;
    let (vd, ve) = match options.mode {
        Mode::Default => (vd, ve),
        Mode::Paper => {
            let eps = |v: f64| (v.sqrt() + PAPER_EPSILON).powi(2);
            (eps(vd), eps(ve))
        }
    };
    let student = options.mode == Mode::Paper && crit.f_equal(ve / vd, ne - 1.0, nd - 1.0);
    let (t, df, low, high) = if student {
        let df = nd + ne - 2.0;
        let pooled = ((nd - 1.0) * vd + (ne - 1.0) * ve) / df;
        let se = (pooled * (1.0 / nd + 1.0 / ne)).sqrt();
        if se == 0.0 {
            return 0;
        }
        (diff / se, df, df, df)
    } else {
        let (ud, ue) = (vd / nd, ve / ne);
        let s2 = ud + ue;
        if s2 == 0.0 {
            return 0;
        }
        let (rd, re) = (ud / s2, ue / s2);
        let df = 1.0 / (rd * rd / (nd - 1.0) + re * re / (ne - 1.0));
        (diff / s2.sqrt(), df, (nd.min(ne) - 1.0), nd + ne - 2.0)
    };
    if crit.t_significant(t, df, low, high) {
        if t > 0.0 { 1 } else { -1 }
    } else {
        0
    }
}

// ---------------------------------------------------------------------------
// Filling a side
// ---------------------------------------------------------------------------

/// The humans of `groups` (per factor, indices into `h`) as a side: paired Δ and test.
// The category loops index several per-cell arrays in step; an iterator over one would hide it.
#[allow(clippy::needless_range_loop)]
fn fill_humans(
    shape: &Shape,
    h: &Humans,
    groups: &[Vec<u32>],
    crit: &mut Critical,
    side: &mut Side,
) {
    let c_n = shape.cats;
    side.counts.fill(0);
    let mut before_sum = vec![0.0; c_n];
    let mut total = 0usize;
    for (f, members) in groups.iter().enumerate() {
        total += members.len();
        for c in 0..c_n {
            let cell = f * c_n + c;
            let Some(&first) = members.first() else {
                side.delta[cell] = f64::NAN;
                side.evoked[cell] = f64::NAN;
                side.dir[cell] = 0;
                side.n[cell] = 0;
                continue;
            };
            let at = |i: u32| i as usize * c_n + c;
            let d0 = h.after[at(first)] - h.before[at(first)];
            let a0 = h.after[at(first)];
            let (mut sd, mut sd2, mut sa) = (0.0, 0.0, 0.0);
            for &i in members {
                let d = h.after[at(i)] - h.before[at(i)] - d0;
                sd += d;
                sd2 += d * d;
                sa += h.after[at(i)] - a0;
                before_sum[c] += h.before[at(i)];
                side.counts[h.after_at[at(i)]] += 1;
            }
            let n = members.len() as f64;
            let (delta, var) = moments(n, sd, sd2, d0);
            side.delta[cell] = delta;
            side.evoked[cell] = sa / n + a0;
            side.n[cell] = members.len() as u32;
            side.dir[cell] = if n >= 2.0 && var > 0.0 {
                let t = delta / (var / n).sqrt();
                if crit.t_significant(t, n - 1.0, n - 1.0, n - 1.0) {
                    if t > 0.0 { 1 } else { -1 }
                } else {
                    0
                }
            } else {
                0
            };
        }
    }
    for c in 0..c_n {
        side.default_mean[c] = if total > 0 {
            before_sum[c] / total as f64
        } else {
            f64::NAN
        };
    }
}

/// Which rows of a cohort a side is computed from: all of them, or a resample.
enum Rows<'a> {
    All,
    Draw(&'a mut ChaCha8Rng),
}

impl Rows<'_> {
    fn pick(&mut self, k: usize, len: usize) -> usize {
        match self {
            Rows::All => k,
            Rows::Draw(rng) => rng.random_range(0..len),
        }
    }
}

/// Per-factor running sums of a cohort's evoked sample (trials or situation means).
#[derive(Clone, Copy, Default)]
struct Sums {
    n: f64,
    s1: f64,
    s2: f64,
    shift: f64,
    trials: u32,
    set: bool,
}

/// Buffers a cohort's side is computed in, reused across resamples.
#[derive(Default)]
struct Scratch {
    sums: Vec<Sums>,
    picks: Vec<usize>,
}

/// A cohort as a side: its default rows and each situation's rows, all or resampled.
#[allow(clippy::needless_range_loop)]
fn fill_cohort(
    shape: &Shape,
    d: &CohortData,
    options: Options,
    mut rows: Rows<'_>,
    crit: &mut Critical,
    scratch: &mut Scratch,
    side: &mut Side,
) {
    let c_n = shape.cats;
    side.counts.fill(0);
    let nd = d.default.len() / c_n.max(1);
    // The default measure, per category.
    let mut default = [(0.0f64, 0.0f64, 0.0f64); 16];
    let mut default_big = Vec::new();
    let dm: &mut [(f64, f64, f64)] = if c_n <= default.len() {
        &mut default[..c_n]
    } else {
        default_big.resize(c_n, (0.0, 0.0, 0.0));
        &mut default_big
    };
    for k in 0..nd {
        let r = rows.pick(k, nd);
        for (c, acc) in dm.iter_mut().enumerate() {
            let shift = d.default[c];
            let x = d.default[r * c_n + c] - shift;
            acc.0 += x;
            acc.1 += x * x;
            acc.2 = shift;
        }
    }
    scratch.sums.clear();
    scratch.sums.resize(shape.cells(), Sums::default());
    for s in &d.situations {
        // One draw per trial, used for every category: a resampled trial keeps its scores.
        scratch.picks.clear();
        for k in 0..s.len {
            scratch.picks.push(s.start + rows.pick(k, s.len));
        }
        for c in 0..c_n {
            let cell = s.factor * c_n + c;
            let sums = &mut scratch.sums[cell];
            if !sums.set {
                sums.shift = d.evoked[s.start * c_n + c];
                sums.set = true;
            }
            let shift = sums.shift;
            let (mut sum, mut sq) = (0.0, 0.0);
            for &r in &scratch.picks {
                let v = d.evoked[r * c_n + c] - shift;
                sum += v;
                sq += v * v;
                side.counts[d.evoked_at[r * c_n + c]] += 1;
            }
            sums.trials += s.len as u32;
            match options.unit {
                Unit::Trial => {
                    sums.n += s.len as f64;
                    sums.s1 += sum;
                    sums.s2 += sq;
                }
                Unit::Situation => {
                    let m = sum / s.len as f64;
                    sums.n += 1.0;
                    sums.s1 += m;
                    sums.s2 += m * m;
                }
            }
        }
    }
    let nd_f = nd as f64;
    for c in 0..c_n {
        let (s1, s2, shift) = dm[c];
        let (mean, var) = if nd > 0 {
            moments(nd_f, s1, s2, shift)
        } else {
            (f64::NAN, f64::NAN)
        };
        side.default_mean[c] = mean;
        for f in 0..shape.factors {
            let cell = f * c_n + c;
            let s = scratch.sums[cell];
            side.n[cell] = s.trials;
            if s.n == 0.0 || nd == 0 {
                side.delta[cell] = f64::NAN;
                side.evoked[cell] = if s.n > 0.0 {
                    s.s1 / s.n + s.shift
                } else {
                    f64::NAN
                };
                side.dir[cell] = 0;
                continue;
            }
            let (me, ve) = moments(s.n, s.s1, s.s2, s.shift);
            side.evoked[cell] = me;
            side.delta[cell] = me - mean;
            side.dir[cell] = model_direction(crit, options, (nd_f, mean, var), (s.n, me, ve));
        }
    }
}

// ---------------------------------------------------------------------------
// The metrics of two sides
// ---------------------------------------------------------------------------

/// Pearson r over the cells `cells` of both sides' Δ (both defined), as [`stats::pearson`]:
/// NaN for fewer than 3 cells or no variance.
fn pearson_cells(h: &Side, m: &Side, cells: impl Iterator<Item = usize> + Clone) -> f64 {
    let ok = |i: &usize| h.delta[*i].is_finite() && m.delta[*i].is_finite();
    let (mut n, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for i in cells.clone().filter(ok) {
        n += 1.0;
        sx += h.delta[i];
        sy += m.delta[i];
    }
    if n < 3.0 {
        return f64::NAN;
    }
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for i in cells.filter(ok) {
        let (a, b) = (h.delta[i] - mx, m.delta[i] - my);
        sxy += a * b;
        sxx += a * a;
        syy += b * b;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return f64::NAN;
    }
    (sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0)
}

/// Wasserstein-1 and Jensen–Shannon of one cell from the two sides' counts.
fn cell_distances(
    support: &Support,
    cell: usize,
    h: &Side,
    m: &Side,
    bins: &mut [f64],
) -> (f64, f64) {
    let (nh, nm) = (h.n[cell] as f64, m.n[cell] as f64);
    if nh == 0.0 || nm == 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let (start, end) = (support.offset[cell], support.offset[cell + 1]);
    let (mut fh, mut fm, mut w) = (0.0, 0.0, 0.0);
    let (ph, pm) = bins.split_at_mut(support.bins);
    ph.fill(0.0);
    pm.fill(0.0);
    for k in start..end {
        let (ch, cm) = (f64::from(h.counts[k]), f64::from(m.counts[k]));
        fh += ch / nh;
        fm += cm / nm;
        if k + 1 < end {
            w += (fh - fm).abs() * (support.values[k + 1] - support.values[k]);
        }
        ph[support.bin[k]] += ch;
        pm[support.bin[k]] += cm;
    }
    let js = distance::jensen_shannon(ph, pm).unwrap_or(f64::NAN);
    (w, js)
}

#[derive(Clone, Copy, Default)]
struct Acc {
    compared: u32,
    agreeing: u32,
    mae: (f64, u32),
    w1: (f64, u32),
    js: (f64, u32),
}

fn mean_of((s, n): (f64, u32)) -> f64 {
    if n > 0 { s / f64::from(n) } else { f64::NAN }
}

/// Every metric of `m` against `h` into `out` (one row, [`Shape::width`] wide); returns the
/// overall (compared, agreeing) counts.
fn metrics(
    shape: &Shape,
    support: &Support,
    h: &Side,
    m: &Side,
    bins: &mut [f64],
    accs: &mut [Acc],
    out: &mut [f64],
) -> (u32, u32) {
    let c_n = shape.cats;
    let scope_cat = |c: usize| 1 + c;
    let scope_emo = |e: usize| 1 + c_n + e;
    accs.fill(Acc::default());
    for f in 0..shape.factors {
        for c in 0..c_n {
            let cell = f * c_n + c;
            if !(h.delta[cell].is_finite() && m.delta[cell].is_finite()) {
                continue;
            }
            let (w, js) = cell_distances(support, cell, h, m, bins);
            let abs = (m.evoked[cell] - h.evoked[cell]).abs();
            for s in [0, scope_cat(c), scope_emo(shape.emotion_of[f])] {
                let a = &mut accs[s];
                if h.dir[cell] != 0 || m.dir[cell] != 0 {
                    a.compared += 1;
                    a.agreeing += u32::from(h.dir[cell] == m.dir[cell]);
                }
                if abs.is_finite() {
                    a.mae.0 += abs;
                    a.mae.1 += 1;
                }
                if w.is_finite() {
                    a.w1.0 += w;
                    a.w1.1 += 1;
                }
                if js.is_finite() {
                    a.js.0 += js;
                    a.js.1 += 1;
                }
            }
        }
    }
    for (s, a) in accs.iter().enumerate() {
        let row = &mut out[s * NM..(s + 1) * NM];
        row[DIR] = if a.compared > 0 {
            f64::from(a.agreeing) / f64::from(a.compared)
        } else {
            f64::NAN
        };
        row[MAE] = mean_of(a.mae);
        row[W1] = mean_of(a.w1);
        row[JS] = mean_of(a.js);
        row[CORR] = f64::NAN;
        row[GAP] = f64::NAN;
    }
    // Correlations: per category over all factors; per emotion the mean over categories of
    // the correlation within its factors; overall the mean over categories.
    let (mut r_sum, mut r_all) = (0.0, true);
    let mut gap_sum = (0.0, 0u32);
    for c in 0..c_n {
        let r = pearson_cells(h, m, (0..shape.factors).map(|f| f * c_n + c));
        out[scope_cat(c) * NM + CORR] = r;
        r_sum += r;
        r_all &= r.is_finite();
        let gap = m.default_mean[c] - h.default_mean[c];
        out[scope_cat(c) * NM + GAP] = gap;
        if gap.is_finite() {
            gap_sum.0 += gap.abs();
            gap_sum.1 += 1;
        }
    }
    out[CORR] = if r_all && c_n > 0 {
        r_sum / c_n as f64
    } else {
        f64::NAN
    };
    out[GAP] = mean_of(gap_sum);
    for e in 0..shape.emotions {
        let (mut sum, mut all) = (0.0, true);
        for c in 0..c_n {
            let cells = (0..shape.factors)
                .filter(|f| shape.emotion_of[*f] == e)
                .map(|f| f * c_n + c);
            let r = pearson_cells(h, m, cells);
            sum += r;
            all &= r.is_finite();
        }
        out[scope_emo(e) * NM + CORR] = if all && c_n > 0 {
            sum / c_n as f64
        } else {
            f64::NAN
        };
    }
    (accs[0].compared, accs[0].agreeing)
}

// ---------------------------------------------------------------------------
// Preparing the data
// ---------------------------------------------------------------------------

fn humans_data(shape: &Shape, humans: &[HumanObservation]) -> (Vec<Vec<u32>>, Vec<f64>, Vec<f64>) {
    let mut by_factor = vec![Vec::new(); shape.factors];
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let finite = |x: &[f64]| x.len() == shape.cats && x.iter().all(|v| v.is_finite());
    for h in humans {
        if h.factor < shape.factors && finite(&h.before) && finite(&h.after) {
            by_factor[h.factor].push((before.len() / shape.cats.max(1)) as u32);
            before.extend_from_slice(&h.before);
            after.extend_from_slice(&h.after);
        }
    }
    (by_factor, before, after)
}

/// A cohort's scored default rows, its evoked rows' (factor, situation), and those rows
/// (categories contiguous), ordered by situation.
type CohortRows = (Vec<f64>, Vec<(usize, i64)>, Vec<f64>);

/// A cohort's scored trials (the right number of finite scores), evoked rows by situation.
fn cohort_rows(shape: &Shape, trials: &[Trial]) -> CohortRows {
    let usable = |s: &Option<Vec<f64>>| {
        s.as_ref()
            .filter(|s| s.len() == shape.cats && s.iter().all(|v| v.is_finite()))
            .cloned()
    };
    let mut default = Vec::new();
    let mut evoked: BTreeMap<(usize, i64), Vec<f64>> = BTreeMap::new();
    for t in trials {
        let Some(s) = usable(&t.scores) else { continue };
        match t.condition {
            Condition::Default => default.extend_from_slice(&s),
            Condition::Evoked { factor, situation } if factor < shape.factors => evoked
                .entry((factor, situation))
                .or_default()
                .extend_from_slice(&s),
            Condition::Evoked { .. } => {}
        }
    }
    let mut keys = Vec::new();
    let mut rows = Vec::new();
    for (k, v) in evoked {
        for _ in 0..v.len() / shape.cats.max(1) {
            keys.push(k);
        }
        rows.extend(v);
    }
    (default, keys, rows)
}

/// The answers' histogram bins: the scale's points, or 5 without a scale.
fn bins_of(scale: Option<&AnswerScale>) -> usize {
    scale
        .map(|s| (s.instrument.max - s.instrument.min + 1).max(1) as usize)
        .unwrap_or(5)
        .min(1000)
}

fn support(
    shape: &Shape,
    humans: (&[Vec<u32>], &[f64]),
    cohorts: &[CohortRows],
    real: usize,
    bins: usize,
) -> Support {
    let c_n = shape.cats;
    let mut per_cell: Vec<Vec<f64>> = vec![Vec::new(); shape.cells()];
    let (by_factor, after) = humans;
    for (f, members) in by_factor.iter().enumerate() {
        for &i in members {
            for c in 0..c_n {
                per_cell[f * c_n + c].push(after[i as usize * c_n + c]);
            }
        }
    }
    // The histograms' range per category: what the humans and the models answered (not the
    // null responders, so a model's Jensen–Shannon does not depend on which baselines ran;
    // their values outside it fall into the end bins).
    let mut range = vec![(f64::INFINITY, f64::NEG_INFINITY); c_n];
    for (k, (_, keys, rows)) in cohorts.iter().enumerate() {
        for (r, (f, _)) in keys.iter().enumerate() {
            for c in 0..c_n {
                let v = rows[r * c_n + c];
                per_cell[f * c_n + c].push(v);
                if k < real {
                    range[c] = (range[c].0.min(v), range[c].1.max(v));
                }
            }
        }
    }
    for members in by_factor {
        for &i in members {
            for (c, r) in range.iter_mut().enumerate() {
                let v = after[i as usize * c_n + c];
                *r = (r.0.min(v), r.1.max(v));
            }
        }
    }
    let mut values = Vec::new();
    let mut offset = vec![0];
    for v in per_cell.iter_mut() {
        v.sort_by(f64::total_cmp);
        v.dedup();
        values.extend_from_slice(v);
        offset.push(values.len());
    }
    let mut bin = Vec::with_capacity(values.len());
    for cell in 0..shape.cells() {
        let (lo, hi) = range[cell % c_n.max(1)];
        for v in &values[offset[cell]..offset[cell + 1]] {
            let b = if hi > lo {
                (((v - lo) / (hi - lo)) * bins as f64).floor() as usize
            } else {
                0
            };
            bin.push(b.min(bins - 1));
        }
    }
    Support {
        values,
        offset,
        bin,
        bins,
    }
}

/// The models' design: the most scored default trials any model has, and per situation the
/// most evoked trials any model has there.
fn design(models: &[ModelInput]) -> (usize, BTreeMap<(usize, i64), usize>) {
    let mut default = 0;
    let mut evoked: BTreeMap<(usize, i64), usize> = BTreeMap::new();
    for m in models {
        let mut d = 0;
        let mut e: BTreeMap<(usize, i64), usize> = BTreeMap::new();
        for t in m.trials.iter().filter(|t| t.scores.is_some()) {
            match t.condition {
                Condition::Default => d += 1,
                Condition::Evoked { factor, situation } => {
                    *e.entry((factor, situation)).or_default() += 1
                }
            }
        }
        default = default.max(d);
        for (k, n) in e {
            let x = evoked.entry(k).or_default();
            *x = (*x).max(n);
        }
    }
    (default, evoked)
}

fn synthetic(
    name: &str,
    models: &[ModelInput],
    mut answer: impl FnMut(bool) -> Option<Vec<f64>>,
) -> ModelInput {
    let (default, evoked) = design(models);
    let mut trials = Vec::new();
    for _ in 0..default {
        trials.push(Trial {
            condition: Condition::Default,
            scores: answer(false),
        });
    }
    for ((factor, situation), n) in evoked {
        for _ in 0..n {
            trials.push(Trial {
                condition: Condition::Evoked { factor, situation },
                scores: answer(true),
            });
        }
    }
    ModelInput {
        name: name.to_owned(),
        trials,
    }
}

/// The null responders: uniform, marginal, and each model shuffled.
fn baselines(
    humans: &[HumanObservation],
    models: &[ModelInput],
    scale: Option<&AnswerScale>,
    seed: u64,
) -> Vec<(BaselineKind, Option<String>, ModelInput)> {
    let mut out = Vec::new();
    if models.is_empty() {
        return out;
    }
    let stream = |k: u64| {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(1_000_000 + k);
        r
    };
    if let Some(s) = scale {
        let mut rng = stream(0);
        let i = &s.instrument;
        let u = synthetic("uniform responder", models, |_| {
            let answers: Vec<i32> = (0..i.items.len())
                .map(|_| rng.random_range(i.min..=i.max))
                .collect();
            i.score(&answers, s.convention)
                .ok()
                .map(|v| v.into_iter().map(|c| c.value).collect())
        });
        out.push((BaselineKind::Uniform, None, u));
    }
    if !humans.is_empty() {
        let mut rng = stream(1);
        let m = synthetic("population marginal", models, |evoked| {
            let h = &humans[rng.random_range(0..humans.len())];
            Some(if evoked {
                h.after.clone()
            } else {
                h.before.clone()
            })
        });
        out.push((BaselineKind::Marginal, None, m));
    }
    for (k, model) in models.iter().enumerate() {
        let mut rng = stream(2 + k as u64);
        let mut labels: Vec<Condition> = model
            .trials
            .iter()
            .filter(|t| t.scores.is_some() && t.condition != Condition::Default)
            .map(|t| t.condition)
            .collect();
        labels.shuffle(&mut rng);
        let mut next = labels.into_iter();
        let trials = model
            .trials
            .iter()
            .map(|t| {
                let condition = if t.scores.is_some() && t.condition != Condition::Default {
                    next.next().unwrap_or(t.condition)
                } else {
                    t.condition
                };
                Trial {
                    condition,
                    scores: t.scores.clone(),
                }
            })
            .collect();
        out.push((
            BaselineKind::Shuffled,
            Some(model.name.clone()),
            ModelInput {
                name: format!("{} (shuffled labels)", model.name),
                trials,
            },
        ));
    }
    out
}

// ---------------------------------------------------------------------------
// Putting it together
// ---------------------------------------------------------------------------

/// Per cohort: the point row, its (compared, agreeing), and the resample rows.
struct Computed {
    point: Vec<f64>,
    counts: (u32, u32),
    rows: Vec<f64>,
}

/// The point estimates and bootstrap rows of every cohort against all the humans.
fn bootstrap(
    shape: &Shape,
    support: &Support,
    humans: &Humans,
    cohorts: &[CohortData],
    first: usize,
    options: Options,
) -> Vec<Computed> {
    let width = shape.width();
    let mut crit = Critical::new(options.alpha);
    let mut h_side = Side::new(shape, support);
    let mut m_side = Side::new(shape, support);
    let mut scratch = Scratch::default();
    let mut bins = vec![0.0; 2 * support.bins];
    let mut accs = vec![Acc::default(); 1 + shape.cats + shape.emotions];
    fill_humans(shape, humans, &humans.by_factor, &mut crit, &mut h_side);
    let mut out: Vec<Computed> = cohorts
        .iter()
        .map(|d| {
            fill_cohort(
                shape,
                d,
                options,
                Rows::All,
                &mut crit,
                &mut scratch,
                &mut m_side,
            );
            let mut point = vec![f64::NAN; width];
            let counts = metrics(
                shape, support, &h_side, &m_side, &mut bins, &mut accs, &mut point,
            );
            Computed {
                point,
                counts,
                rows: vec![f64::NAN; width * options.resamples],
            }
        })
        .collect();
    let mut h_rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut rngs: Vec<ChaCha8Rng> = (0..cohorts.len())
        .map(|k| {
            let mut r = ChaCha8Rng::seed_from_u64(options.seed);
            r.set_stream(1 + (first + k) as u64);
            r
        })
        .collect();
    let mut draw: Vec<Vec<u32>> = humans
        .by_factor
        .iter()
        .map(|m| Vec::with_capacity(m.len()))
        .collect();
    for b in 0..options.resamples {
        for (f, members) in humans.by_factor.iter().enumerate() {
            draw[f].clear();
            for _ in 0..members.len() {
                draw[f].push(members[h_rng.random_range(0..members.len())]);
            }
        }
        fill_humans(shape, humans, &draw, &mut crit, &mut h_side);
        for ((d, rng), c) in cohorts.iter().zip(&mut rngs).zip(&mut out) {
            fill_cohort(
                shape,
                d,
                options,
                Rows::Draw(rng),
                &mut crit,
                &mut scratch,
                &mut m_side,
            );
            let row = &mut c.rows[b * width..(b + 1) * width];
            metrics(shape, support, &h_side, &m_side, &mut bins, &mut accs, row);
        }
    }
    out
}

/// The bootstrap of every cohort and the ceiling, on up to as many threads as the machine has
/// cores: each cohort has its own random stream and every thread replays the humans' stream,
/// so the result is the same on one core or many.
#[allow(clippy::type_complexity)]
fn in_parallel(
    shape: &Shape,
    support: &Support,
    humans: &Humans,
    data: &[CohortData],
    options: Options,
) -> (Vec<Computed>, Option<(Vec<f64>, (f64, f64))>) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = data.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let ceiling = (options.resamples > 0)
            .then(|| s.spawn(move || ceiling_rows(shape, support, humans, options)));
        let parts: Vec<_> = data
            .chunks(chunk)
            .enumerate()
            .map(|(i, part)| {
                s.spawn(move || bootstrap(shape, support, humans, part, i * chunk, options))
            })
            .collect();
        // A panicking worker is a bug here, never input: re-raise it.
        let computed = parts
            .into_iter()
            .flat_map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        let ceiling = ceiling.map(|c| c.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        (computed, ceiling)
    })
}

/// The ceiling's rows: one per random half split, and the mean (compared, agreeing).
fn ceiling_rows(
    shape: &Shape,
    support: &Support,
    humans: &Humans,
    options: Options,
) -> (Vec<f64>, (f64, f64)) {
    let width = shape.width();
    let mut crit = Critical::new(options.alpha);
    let mut a_side = Side::new(shape, support);
    let mut b_side = Side::new(shape, support);
    let mut bins = vec![0.0; 2 * support.bins];
    let mut accs = vec![Acc::default(); 1 + shape.cats + shape.emotions];
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    rng.set_stream(999_999);
    let mut rows = vec![f64::NAN; width * options.resamples];
    let mut shuffled = humans.by_factor.clone();
    let (mut half_a, mut half_b): (Vec<Vec<u32>>, Vec<Vec<u32>>) = (
        vec![Vec::new(); shape.factors],
        vec![Vec::new(); shape.factors],
    );
    let mut counts = (0.0, 0.0);
    for s in 0..options.resamples {
        for (f, members) in shuffled.iter_mut().enumerate() {
            members.shuffle(&mut rng);
            let mid = members.len() / 2;
            half_a[f].clear();
            half_a[f].extend_from_slice(&members[..mid]);
            half_b[f].clear();
            half_b[f].extend_from_slice(&members[mid..]);
        }
        fill_humans(shape, humans, &half_a, &mut crit, &mut a_side);
        fill_humans(shape, humans, &half_b, &mut crit, &mut b_side);
        let row = &mut rows[s * width..(s + 1) * width];
        let (n, a) = metrics(shape, support, &a_side, &b_side, &mut bins, &mut accs, row);
        counts.0 += f64::from(n);
        counts.1 += f64::from(a);
    }
    let r = options.resamples.max(1) as f64;
    (rows, (counts.0 / r, counts.1 / r))
}

/// Column `j` of `rows` (`width` wide): its 2.5th and 97.5th percentile and mean over the rows
/// where it is defined, or `None` when more than half are undefined.
fn column(rows: &[f64], width: usize, j: usize, buf: &mut Vec<f64>) -> Option<(f64, f64, f64)> {
    buf.clear();
    buf.extend(
        rows.chunks_exact(width)
            .map(|r| r[j])
            .filter(|v| v.is_finite()),
    );
    let total = rows.len() / width.max(1);
    if buf.is_empty() || buf.len() * 2 < total {
        return None;
    }
    buf.sort_by(f64::total_cmp);
    let mean = buf.iter().sum::<f64>() / buf.len() as f64;
    Some((percentile(buf, 2.5), percentile(buf, 97.5), mean))
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The metric set from a point row (or, for the ceiling, the rows' means) and the rows.
fn metric_set(
    shape: &Shape,
    layout: &Layout,
    point: Option<&[f64]>,
    rows: &[f64],
    counts: (usize, usize),
) -> MetricSet {
    let width = shape.width();
    let mut buf = Vec::new();
    let scope = |s: usize, buf: &mut Vec<f64>| {
        let m = |k: usize, buf: &mut Vec<f64>| {
            let j = s * NM + k;
            let ci = column(rows, width, j, buf);
            let value = match point {
                Some(p) => finite(p[j]),
                None => ci.map(|c| c.2),
            };
            Metric {
                value,
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
            }
        };
        Metrics {
            direction_agreement: m(DIR, buf),
            delta_correlation: m(CORR, buf),
            evoked_mae: m(MAE, buf),
            default_gap: m(GAP, buf),
            wasserstein: m(W1, buf),
            jensen_shannon: m(JS, buf),
        }
    };
    MetricSet {
        overall: scope(0, &mut buf),
        cells_compared: counts.0,
        cells_agreeing: counts.1,
        categories: layout
            .categories
            .iter()
            .enumerate()
            .map(|(c, name)| ScopeMetrics {
                name: name.clone(),
                metrics: scope(1 + c, &mut buf),
            })
            .collect(),
        emotions: layout
            .emotions
            .iter()
            .enumerate()
            .map(|(e, name)| ScopeMetrics {
                name: name.clone(),
                metrics: scope(1 + shape.cats + e, &mut buf),
            })
            .collect(),
    }
}

fn cohort_data(shape: &Shape, support: &Support, (default, keys, rows): CohortRows) -> CohortData {
    let c_n = shape.cats;
    let mut situations: Vec<Situation> = Vec::new();
    for (r, &(factor, situation)) in keys.iter().enumerate() {
        match situations.last_mut() {
            Some(s) if keys[s.start] == (factor, situation) => s.len += 1,
            _ => situations.push(Situation {
                factor,
                start: r,
                len: 1,
            }),
        }
    }
    let evoked_at = keys
        .iter()
        .enumerate()
        .flat_map(|(r, (f, _))| {
            let rows = &rows;
            (0..c_n).map(move |c| support.index(f * c_n + c, rows[r * c_n + c]))
        })
        .collect();
    CohortData {
        default,
        situations,
        evoked: rows,
        evoked_at,
    }
}

fn factor_label(layout: &Layout, f: usize) -> (String, String) {
    let factor = &layout.factors[f];
    (
        layout
            .emotions
            .get(factor.emotion)
            .cloned()
            .unwrap_or_default(),
        factor.name.clone(),
    )
}

fn method(layout: &Layout, by_factor: &[Vec<u32>], options: Options) -> Method {
    let count = |f: usize| {
        let (emotion, factor) = factor_label(layout, f);
        FactorCount {
            emotion,
            factor,
            humans: by_factor[f].len(),
        }
    };
    let few: Vec<FactorCount> = (0..by_factor.len())
        .filter(|f| (1..FEW_HUMANS).contains(&by_factor[*f].len()))
        .map(count)
        .collect();
    let none: Vec<FactorCount> = (0..by_factor.len())
        .filter(|f| by_factor[*f].is_empty())
        .map(count)
        .collect();
    let name = |x: &FactorCount| format!("{} / {}", x.emotion, x.factor);
    let mut warnings = Vec::new();
    if !few.is_empty() {
        warnings.push(format!(
            "Fewer than {FEW_HUMANS} humans in {} of {} factors, whose human Δ is unreliable: {}.",
            few.len(),
            by_factor.len(),
            few.iter()
                .map(|x| format!("{} ({})", name(x), x.humans))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !none.is_empty() {
        warnings.push(format!(
            "No humans in {} of {} factors, left out of every alignment metric: {}.",
            none.len(),
            by_factor.len(),
            none.iter().map(name).collect::<Vec<_>>().join(", ")
        ));
    }
    Method {
        seed: options.seed,
        resamples: options.resamples,
        few_humans: few,
        no_humans: none,
        warnings,
    }
}

/// The per-cell distances of a cohort on the full data.
fn distances(
    shape: &Shape,
    layout: &Layout,
    support: &Support,
    humans: &Humans,
    d: &CohortData,
    options: Options,
) -> Vec<CellDistance> {
    let mut crit = Critical::new(options.alpha);
    let mut h = Side::new(shape, support);
    let mut m = Side::new(shape, support);
    fill_humans(shape, humans, &humans.by_factor, &mut crit, &mut h);
    fill_cohort(
        shape,
        d,
        options,
        Rows::All,
        &mut crit,
        &mut Scratch::default(),
        &mut m,
    );
    let mut bins = vec![0.0; 2 * support.bins];
    let mut out = Vec::new();
    for f in 0..shape.factors {
        let (emotion, factor) = factor_label(layout, f);
        for (c, category) in layout.categories.iter().enumerate() {
            let cell = f * shape.cats + c;
            let (w, js) = cell_distances(support, cell, &h, &m, &mut bins);
            out.push(CellDistance {
                emotion: emotion.clone(),
                factor: factor.clone(),
                category: category.clone(),
                humans: h.n[cell] as usize,
                trials: m.n[cell] as usize,
                wasserstein: finite(w),
                jensen_shannon: finite(js),
            });
        }
    }
    out
}

/// The alignment of every model with the humans, the human ceiling and the null baselines.
/// No humans: nothing to align with (empty output, the method still says so).
pub fn align(
    layout: &Layout,
    humans: &[HumanObservation],
    models: &[ModelInput],
    scale: Option<&AnswerScale>,
    options: Options,
) -> Output {
    let shape = Shape {
        factors: layout.factors.len(),
        cats: layout.categories.len(),
        emotions: layout.emotions.len(),
        emotion_of: layout
            .factors
            .iter()
            .map(|f| f.emotion.min(layout.emotions.len().saturating_sub(1)))
            .collect(),
    };
    let (by_factor, before, after) = humans_data(&shape, humans);
    let mut method = method(layout, &by_factor, options);
    if before.is_empty() || shape.cats == 0 || layout.emotions.is_empty() {
        method.warnings.clear();
        return Output {
            alignment: Vec::new(),
            ceiling: None,
            baselines: Vec::new(),
            method,
        };
    }
    let nulls = baselines(humans, models, scale, options.seed);
    let all: Vec<&ModelInput> = models.iter().chain(nulls.iter().map(|b| &b.2)).collect();
    let rows: Vec<_> = all.iter().map(|m| cohort_rows(&shape, &m.trials)).collect();
    let support = support(
        &shape,
        (&by_factor, &after),
        &rows,
        models.len(),
        bins_of(scale),
    );
    let after_at = by_factor
        .iter()
        .enumerate()
        .flat_map(|(f, members)| members.iter().map(move |&i| (f, i)))
        .fold(vec![0; after.len()], |mut at, (f, i)| {
            for c in 0..shape.cats {
                let k = i as usize * shape.cats + c;
                at[k] = support.index(f * shape.cats + c, after[k]);
            }
            at
        });
    let humans_data = Humans {
        by_factor,
        before,
        after,
        after_at,
    };
    let data: Vec<CohortData> = rows
        .into_iter()
        .map(|r| cohort_data(&shape, &support, r))
        .collect();
    let (computed, ceiling_rows) = in_parallel(&shape, &support, &humans_data, &data, options);
    let set = |c: &Computed| {
        metric_set(
            &shape,
            layout,
            Some(&c.point),
            &c.rows,
            (c.counts.0 as usize, c.counts.1 as usize),
        )
    };
    let ceiling = ceiling_rows.map(|(rows, (n, a))| Ceiling {
        splits: options.resamples,
        metrics: metric_set(
            &shape,
            layout,
            None,
            &rows,
            (n.round() as usize, a.round() as usize),
        ),
    });
    let baselines: Vec<Baseline> = nulls
        .iter()
        .zip(&computed[models.len()..])
        .map(|((kind, model, input), c)| Baseline {
            name: input.name.clone(),
            kind: *kind,
            model: model.clone(),
            metrics: set(c),
        })
        .collect();
    let alignment = models
        .iter()
        .zip(&computed)
        .zip(&data)
        .map(|((m, c), d)| {
            let metrics = set(c);
            let shuffled = baselines
                .iter()
                .find(|b| b.kind == BaselineKind::Shuffled && b.model.as_ref() == Some(&m.name));
            let summary = summary_line(&m.name, &metrics, ceiling.as_ref(), shuffled);
            Alignment {
                model: m.name.clone(),
                metrics,
                distances: distances(&shape, layout, &support, &humans_data, d, options),
                summary,
            }
        })
        .collect();
    Output {
        alignment,
        ceiling,
        baselines,
        method,
    }
}

/// `0.42 [0.30, 0.55]`, `0.42` without an interval, `n/a` when undefined.
pub fn with_ci(m: &Metric, digits: usize) -> String {
    match (m.value, m.ci_low, m.ci_high) {
        (Some(v), Some(l), Some(h)) => format!("{v:.digits$} [{l:.digits$}, {h:.digits$}]"),
        (Some(v), _, _) => format!("{v:.digits$}"),
        _ => "n/a".to_owned(),
    }
}

fn summary_line(
    model: &str,
    m: &MetricSet,
    ceiling: Option<&Ceiling>,
    shuffled: Option<&Baseline>,
) -> String {
    let o = &m.overall;
    if o.evoked_mae.value.is_none() && o.delta_correlation.value.is_none() {
        return format!("{model}: no factor with data from both the model and the humans.");
    }
    let direction = if m.cells_compared == 0 {
        "no factor cell where the humans or the model change significantly, so no direction \
         agreement"
            .to_owned()
    } else {
        format!(
            "same direction as the humans in {} of {} factor cells where the humans or the model \
             change significantly ({:.0} %, 95 % CI {})",
            m.cells_agreeing,
            m.cells_compared,
            100.0 * m.cells_agreeing as f64 / m.cells_compared as f64,
            match (o.direction_agreement.ci_low, o.direction_agreement.ci_high) {
                (Some(l), Some(h)) => format!("{:.0}–{:.0} %", 100.0 * l, 100.0 * h),
                _ => "n/a".to_owned(),
            }
        )
    };
    let per_cat = m
        .categories
        .iter()
        .map(|c| {
            format!(
                "{} r = {}",
                c.name,
                with_ci(&c.metrics.delta_correlation, 2)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut line = format!(
        "{model}: {direction}; correlation of Δ with the humans' Δ across factors: {per_cat}; \
         evoked means {} points from the humans' on average; default level {} points away",
        with_ci(&o.evoked_mae, 1),
        with_ci(&o.default_gap, 1),
    );
    let r = |x: &Metric| x.value.map_or("n/a".to_owned(), |v| format!("{v:.2}"));
    if let Some(c) = ceiling {
        line.push_str(&format!(
            "; human ceiling r = {}",
            r(&c.metrics.overall.delta_correlation)
        ));
    }
    if let Some(s) = shuffled {
        line.push_str(&format!(
            "; with shuffled situation labels r = {}",
            r(&s.metrics.overall.delta_correlation)
        ));
    }
    line.push('.');
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::domain::observation::Factor;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }

    fn layout(factors: usize, emotions: usize, cats: usize) -> Layout {
        Layout {
            categories: (0..cats).map(|c| format!("C{c}")).collect(),
            emotions: (0..emotions).map(|e| format!("E{e}")).collect(),
            factors: (0..factors)
                .map(|f| Factor {
                    emotion: f % emotions,
                    index: f as i32,
                    name: format!("F{f}"),
                })
                .collect(),
        }
    }

    fn evoked(factor: usize, situation: i64, score: f64) -> Trial {
        Trial {
            condition: Condition::Evoked { factor, situation },
            scores: Some(vec![score]),
        }
    }

    fn default_trial(score: f64) -> Trial {
        Trial {
            condition: Condition::Default,
            scores: Some(vec![score]),
        }
    }

    // The arrays of `alignment_reference` in tools/stats_reference.py.
    const BEFORE: [[f64; 4]; 3] = [
        [10., 11., 12., 13.],
        [10., 12., 11., 13.],
        [12., 12., 13., 11.],
    ];
    const AFTER: [[f64; 4]; 3] = [
        [14., 14., 16., 17.],
        [10., 12., 12., 13.],
        [9., 10., 10., 8.],
    ];
    const DEFAULT: [f64; 4] = [12., 13., 11., 12.];
    const EVOKED: [[f64; 4]; 3] = [
        [15., 17., 14., 16.],
        [12., 13., 12., 11.],
        [13., 14., 12., 13.],
    ];

    fn reference(factors: usize) -> (Vec<HumanObservation>, ModelInput) {
        let mut humans = Vec::new();
        let mut trials: Vec<Trial> = DEFAULT.iter().map(|&x| default_trial(x)).collect();
        for f in 0..factors {
            for i in 0..4 {
                humans.push(HumanObservation {
                    factor: f,
                    before: vec![BEFORE[f][i]],
                    after: vec![AFTER[f][i]],
                });
                trials.push(evoked(f, f as i64, EVOKED[f][i]));
            }
        }
        (
            humans,
            ModelInput {
                name: "m".into(),
                trials,
            },
        )
    }

    fn options(resamples: usize) -> Options {
        Options {
            alpha: 0.05,
            resamples,
            ..Options::default()
        }
    }

    #[test]
    fn metrics_match_the_scipy_reference_on_a_hand_checked_input() {
        // tools/stats_reference.py, alignment_reference(): directions (human, model) =
        // [(1, 1), (0, 0), (-1, 0)] → 1 of 2 significant cells agree; r = 0.72466…; evoked
        // MAE 1.41666…; default gap 0.3333…; W1 per factor [0.25, 0.25, 3.75]; JS [0, 0, 1].
        let (humans, model) = reference(3);
        let out = align(&layout(3, 1, 1), &humans, &[model], None, options(0));
        let a = &out.alignment[0];
        let o = &a.metrics.overall;
        assert_eq!((a.metrics.cells_compared, a.metrics.cells_agreeing), (2, 1));
        close(o.direction_agreement.value.unwrap(), 0.5);
        close(o.delta_correlation.value.unwrap(), 0.7246628740606165);
        close(o.evoked_mae.value.unwrap(), 1.4166666666666667);
        close(o.default_gap.value.unwrap(), 0.3333333333333339);
        close(
            a.metrics.categories[0].metrics.default_gap.value.unwrap(),
            0.3333333333333339,
        );
        close(o.wasserstein.value.unwrap(), 1.4166666666666667);
        close(o.jensen_shannon.value.unwrap(), 1.0 / 3.0);
        let w: Vec<f64> = a.distances.iter().map(|d| d.wasserstein.unwrap()).collect();
        let js: Vec<f64> = a
            .distances
            .iter()
            .map(|d| d.jensen_shannon.unwrap())
            .collect();
        assert_eq!(w, [0.25, 0.25, 3.75]);
        assert_eq!(js, [0.0, 0.0, 1.0]);
        // No resamples: values without intervals, no ceiling.
        assert_eq!((o.evoked_mae.ci_low, o.evoked_mae.ci_high), (None, None));
        assert!(out.ceiling.is_none());
        // The emotion's metrics are the overall ones here (one emotion); its default gap is
        // not defined (the default measure has no emotion).
        let e = &a.metrics.emotions[0].metrics;
        assert_eq!(e.evoked_mae.value, o.evoked_mae.value);
        assert_eq!(e.default_gap.value, None);
        assert!(
            a.summary.contains("in 1 of 2 factor cells where"),
            "{}",
            a.summary
        );
        assert!(!a.summary.contains("  "), "{}", a.summary);
    }

    #[test]
    fn a_bootstrap_interval_agrees_with_numpys() {
        // Factor 0 alone, B = 20 000: numpy (tools/stats_reference.py) gives [0.0, 2.0] for the
        // evoked MAE and for W1; different streams, so within Monte-Carlo error (the values lie
        // on a 0.125 grid).
        let (humans, model) = reference(1);
        let out = align(&layout(1, 1, 1), &humans, &[model], None, options(20_000));
        let o = &out.alignment[0].metrics.overall;
        for m in [&o.evoked_mae, &o.wasserstein] {
            assert!((m.ci_low.unwrap() - 0.0).abs() <= 0.125, "{m:?}");
            assert!((m.ci_high.unwrap() - 2.0).abs() <= 0.125, "{m:?}");
            assert!(
                m.ci_low.unwrap() <= m.value.unwrap() && m.value.unwrap() <= m.ci_high.unwrap()
            );
        }
    }

    /// `factors` factors with distinct human changes, 30 humans each, and a model whose trials
    /// follow the same changes (noise from a fixed generator).
    fn tracking(factors: usize) -> (Vec<HumanObservation>, ModelInput) {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut humans = Vec::new();
        let mut trials: Vec<Trial> = (0..50)
            .map(|_| default_trial(20.0 + f64::from(rng.random_range(-2..=2))))
            .collect();
        for f in 0..factors {
            let change = f as f64 - factors as f64 / 2.0;
            for _ in 0..30 {
                let before = 20.0 + f64::from(rng.random_range(-3..=3));
                let after = before + change + f64::from(rng.random_range(-2..=2));
                humans.push(HumanObservation {
                    factor: f,
                    before: vec![before],
                    after: vec![after],
                });
            }
            for s in 0..2 {
                for _ in 0..20 {
                    let v = 20.0 + change + f64::from(rng.random_range(-2..=2));
                    trials.push(evoked(f, (f * 2 + s) as i64, v));
                }
            }
        }
        (
            humans,
            ModelInput {
                name: "tracker".into(),
                trials,
            },
        )
    }

    #[test]
    fn same_seed_same_json_other_seed_other_intervals() {
        let (humans, model) = tracking(6);
        let l = layout(6, 2, 1);
        let run = |seed: u64| {
            let o = Options {
                seed,
                resamples: 200,
                ..Options::default()
            };
            serde_json::to_string(&align(&l, &humans, std::slice::from_ref(&model), None, o))
                .unwrap()
        };
        assert_eq!(run(16), run(16));
        let (a, b) = (
            align(
                &l,
                &humans,
                std::slice::from_ref(&model),
                None,
                Options {
                    resamples: 200,
                    ..Options::default()
                },
            ),
            align(
                &l,
                &humans,
                std::slice::from_ref(&model),
                None,
                Options {
                    seed: 17,
                    resamples: 200,
                    ..Options::default()
                },
            ),
        );
        let ci = |x: &Output| x.alignment[0].metrics.overall.evoked_mae;
        assert_ne!(ci(&a), ci(&b));
        // The point values do not depend on the seed.
        assert_eq!(ci(&a).value, ci(&b).value);
        let json = run(16);
        assert!(!json.contains("NaN") && !json.contains("inf"));
    }

    #[test]
    fn identical_sides_are_perfect_and_the_ceiling_of_a_consistent_population_is_near_it() {
        let (humans, model) = tracking(8);
        let l = layout(8, 2, 1);
        let out = align(
            &l,
            &humans,
            std::slice::from_ref(&model),
            None,
            options(200),
        );
        // The humans against themselves: the metrics function at its ideal.
        let shape = Shape {
            factors: 8,
            cats: 1,
            emotions: 2,
            emotion_of: (0..8).map(|f| f % 2).collect(),
        };
        let (by_factor, before, after) = humans_data(&shape, &humans);
        let rows = vec![cohort_rows(&shape, &model.trials)];
        let support = support(&shape, (&by_factor, &after), &rows, 1, 5);
        let after_at = (0..after.len())
            .map(|k| {
                let f = humans[k].factor;
                support.index(f, after[k])
            })
            .collect();
        let h = Humans {
            by_factor,
            before,
            after,
            after_at,
        };
        let mut crit = Critical::new(0.05);
        let mut side = Side::new(&shape, &support);
        fill_humans(&shape, &h, &h.by_factor, &mut crit, &mut side);
        let mut row = vec![f64::NAN; shape.width()];
        let mut bins = vec![0.0; 10];
        let mut accs = vec![Acc::default(); 4];
        metrics(
            &shape, &support, &side, &side, &mut bins, &mut accs, &mut row,
        );
        assert_eq!(&row[..NM], &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        // Random halves of 30 humans per factor: Δ correlation close to 1.
        let c = out.ceiling.as_ref().unwrap();
        assert_eq!(c.splits, 200);
        let r = c.metrics.overall.delta_correlation;
        assert!(r.value.unwrap() > 0.9, "{r:?}");
        assert!(r.ci_low.unwrap() <= r.value.unwrap() && r.value.unwrap() <= r.ci_high.unwrap());
    }

    #[test]
    fn shuffled_situation_labels_destroy_the_delta_correlation() {
        let (humans, model) = tracking(20);
        let out = align(&layout(20, 4, 1), &humans, &[model], None, options(100));
        let r = |m: &MetricSet| m.overall.delta_correlation.value.unwrap();
        let tracker = r(&out.alignment[0].metrics);
        let shuffled = out
            .baselines
            .iter()
            .find(|b| b.kind == BaselineKind::Shuffled)
            .unwrap();
        assert_eq!(shuffled.model.as_deref(), Some("tracker"));
        assert!(tracker > 0.95, "{tracker}");
        // With the labels permuted every factor holds a mix of all: its Δ is the average, and
        // what is left of r is noise (sd ≈ 1/√19 across 20 factors).
        assert!(r(&shuffled.metrics).abs() < 0.7, "{}", r(&shuffled.metrics));
        // The population marginal knows the average change only.
        let marginal = out
            .baselines
            .iter()
            .find(|b| b.kind == BaselineKind::Marginal)
            .unwrap();
        assert!(r(&marginal.metrics).abs() < 0.7);
        // No answer scale: no uniform responder.
        assert!(
            out.baselines
                .iter()
                .all(|b| b.kind != BaselineKind::Uniform)
        );
    }

    #[test]
    fn the_uniform_responder_answers_the_scale_and_is_scored_as_the_models() {
        let (humans, model) = tracking(4);
        let instrument = Instrument {
            key: "X".into(),
            min: 1,
            max: 5,
            labels: Vec::new(),
            items: (1..=4)
                .map(|n| crate::domain::instrument::Item {
                    number: n,
                    text: format!("item {n}"),
                    reverse: false,
                    options: Vec::new(),
                })
                .collect(),
            categories: vec![crate::domain::instrument::Category {
                name: "C0".into(),
                items: vec![1, 2, 3, 4],
            }],
            scoring: crate::domain::instrument::Scoring {
                mode: crate::domain::instrument::ScoreMode::Sum,
                multiplier: 1,
                reverse_constant: 6,
            },
            paper_raw_sum: false,
            prompt: "SCENARIO".into(),
            system_prompt: String::new(),
        };
        let scale = AnswerScale {
            instrument,
            convention: Convention::Authored,
        };
        let out = align(
            &layout(4, 1, 1),
            &humans,
            &[model],
            Some(&scale),
            options(50),
        );
        let u = out
            .baselines
            .iter()
            .find(|b| b.kind == BaselineKind::Uniform)
            .unwrap();
        // Sums of 4 answers on 1..5 average 12: the humans' evoked means are about 20 ± 2.
        let mae = u.metrics.overall.evoked_mae.value.unwrap();
        assert!((5.0..12.0).contains(&mae), "{mae}");
        assert_eq!(out.baselines.len(), 3);
    }

    #[test]
    fn thin_and_missing_human_cells_are_warned_about_and_listed() {
        let (mut humans, model) = tracking(3);
        // Factor 1 keeps 3 humans; factor 2 loses all of them.
        let mut kept = 0;
        humans.retain(|h| match h.factor {
            1 => {
                kept += 1;
                kept <= 3
            }
            2 => false,
            _ => true,
        });
        let out = align(&layout(3, 1, 1), &humans, &[model], None, options(20));
        let m = &out.method;
        assert_eq!(m.few_humans.len(), 1);
        assert_eq!(
            (m.few_humans[0].factor.as_str(), m.few_humans[0].humans),
            ("F1", 3)
        );
        assert_eq!(m.no_humans.len(), 1);
        assert_eq!(m.no_humans[0].factor, "F2");
        assert!(
            m.warnings[0].contains("Fewer than 10 humans in 1 of 3 factors"),
            "{:?}",
            m.warnings
        );
        assert!(m.warnings[0].contains("E0 / F1 (3)"));
        assert!(m.warnings[1].contains("No humans in 1 of 3 factors"));
        let d = &out.alignment[0].distances[2];
        assert_eq!((d.humans, d.wasserstein), (0, None));
        assert_eq!((m.seed, m.resamples), (16, 20));
        // Nobody at all: nothing to align, no warnings about cells.
        let none = align(&layout(3, 1, 1), &[], &[tracking(3).1], None, options(20));
        assert!(none.alignment.is_empty() && none.ceiling.is_none());
    }

    #[test]
    fn resampled_significance_decides_as_the_report_tests_do() {
        // The critical-value shortcut against the exact p of `model_test`, in both modes, on
        // samples around the threshold.
        use crate::domain::observation::model_test;
        use crate::domain::stats::Summary;
        for mode in [Mode::Default, Mode::Paper] {
            let o = Options {
                mode,
                ..Options::default()
            };
            let mut crit = Critical::new(o.alpha);
            for k in 0..400 {
                let (nd, ne) = (5 + k % 7, 4 + k % 11);
                let (sd_d, sd_e) = (0.5 + (k % 5) as f64, 0.2 + (k % 3) as f64 * 2.0);
                let diff = (k as f64 - 200.0) / 40.0;
                let d = Summary {
                    n: nd,
                    mean: 10.0,
                    sd: sd_d,
                };
                let e = Summary {
                    n: ne,
                    mean: 10.0 + diff,
                    sd: sd_e,
                };
                let exact = match model_test(d, e, o) {
                    Some((t, _)) if t.p <= o.alpha => t.t.signum() as i8,
                    _ => 0,
                };
                let fast = model_direction(
                    &mut crit,
                    o,
                    (nd as f64, d.mean, sd_d * sd_d),
                    (ne as f64, e.mean, sd_e * sd_e),
                );
                assert_eq!(fast, exact, "{mode:?} {k}");
            }
        }
    }
}
