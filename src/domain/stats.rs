//! Statistics for comparing emotion scores: descriptive summaries, t-tests
//! (paired, Student, Welch), the two-sided F-test for equal variances used by
//! the upstream EmotionBench analysis, effect sizes, multiple-comparison
//! corrections and Pearson correlation, plus the special functions they need
//! (log-gamma, regularized incomplete beta, Student t and F distributions).
//!
//! Everything here is pure and dependency-free. Results are meant to go into
//! JSON and reports, so **no function returns NaN or an infinity for valid
//! input**: where a statistic is undefined the function returns `None` and says
//! so in its documentation.
//!
//! # Conventions
//! - Variances and standard deviations use `ddof = 1` (sample variance).
//! - Two-sample tests take `(a, b)` and report the difference **`b - a`**, so
//!   `a` is the reference group (e.g. the default/neutral condition) and `b`
//!   the treatment (e.g. the emotion-evoking situation). Paired tests take
//!   `(before, after)` and use `d = after - before`. Effect sizes follow the
//!   same sign.
//! - Numbers match SciPy (`scipy.stats.ttest_rel`, `ttest_ind`,
//!   `ttest_ind_from_stats`, `scipy.stats.f`, `scipy.stats.t`) and statsmodels
//!   (`multipletests`) to well within 1e-9 on the test vectors below.
//! - Zero variance: SciPy returns NaN or ±inf there. Here, when a test's
//!   standard error is exactly zero, the result is `t = 0, p = 1` if the two
//!   means (or the mean difference) are equal, and `None` otherwise (an
//!   infinite `t` is not JSON-safe; callers report "no variance").

/// Count, mean and sample standard deviation (`ddof = 1`) of one group.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (`ddof = 1`); `0.0` when `n < 2`.
    pub sd: f64,
}

/// Result of a t-test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TTest {
    /// The t statistic (sign: `b - a`, or `after - before` when paired).
    pub t: f64,
    /// Degrees of freedom (fractional for Welch).
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Result of the two-sided F-test for equal variances.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct FTest {
    /// `var(a) / var(b)`.
    pub f: f64,
    /// Numerator degrees of freedom, `n_a - 1`.
    pub dfn: f64,
    /// Denominator degrees of freedom, `n_b - 1`.
    pub dfd: f64,
    /// Two-sided p-value, `2 * min(cdf, sf)` (at most 1).
    pub p: f64,
}

// ---------------------------------------------------------------------------
// Descriptive statistics
// ---------------------------------------------------------------------------

/// Compensated (Neumaier) sum, accurate even for long inputs.
fn sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut s = 0.0_f64;
    let mut c = 0.0_f64;
    for v in values {
        let t = s + v;
        if s.abs() >= v.abs() {
            c += (s - t) + v;
        } else {
            c += (v - t) + s;
        }
        s = t;
    }
    s + c
}

/// Mean and sample variance (`ddof = 1`, `0.0` when `n < 2`).
///
/// When all values are identical the variance is exactly `0.0` and the mean
/// exactly that value (plain summation could leave rounding noise, which
/// would turn "no variance" into a huge t statistic).
fn mean_var(x: &[f64]) -> (f64, f64) {
    let Some(&first) = x.first() else {
        return (0.0, 0.0);
    };
    if x.iter().all(|&v| v == first) {
        return (first, 0.0);
    }
    let n = x.len() as f64;
    let m0 = sum(x.iter().copied()) / n;
    // One refinement step removes the rounding error of the first pass.
    let mean = m0 + sum(x.iter().map(|&v| v - m0)) / n;
    if x.len() < 2 {
        return (mean, 0.0);
    }
    let ss = sum(x.iter().map(|&v| (v - mean) * (v - mean)));
    (mean, ss / (n - 1.0))
}

/// Count, mean and sample standard deviation (`ddof = 1`) of `x`.
///
/// `sd` is `0.0` when `n < 2`; for an empty slice `mean` is `0.0` as well
/// (check `n`). Scores are expected to be finite: a NaN or infinite value
/// propagates into `mean`/`sd`. Use [`try_summary`] to get `None` instead.
pub fn summary(x: &[f64]) -> Summary {
    let (mean, var) = mean_var(x);
    Summary {
        n: x.len(),
        mean,
        sd: var.sqrt(),
    }
}

/// Like [`summary`], but `None` for an empty slice, for any non-finite value,
/// or if the result overflows.
pub fn try_summary(x: &[f64]) -> Option<Summary> {
    if x.is_empty() || !all_finite(x) {
        return None;
    }
    let s = summary(x);
    (s.mean.is_finite() && s.sd.is_finite()).then_some(s)
}

fn all_finite(x: &[f64]) -> bool {
    x.iter().all(|v| v.is_finite())
}

/// A summary usable by a two-sample test: `n >= 2`, finite mean, finite
/// non-negative sd. Returns `(n, mean, variance)`.
fn usable(s: Summary) -> Option<(f64, f64, f64)> {
    if s.n < 2 || !s.mean.is_finite() || !s.sd.is_finite() || s.sd < 0.0 {
        return None;
    }
    Some((s.n as f64, s.mean, s.sd * s.sd))
}

fn summary_of_sample(x: &[f64]) -> Option<Summary> {
    if x.len() < 2 {
        return None;
    }
    try_summary(x)
}

/// Pearson product-moment correlation (as `numpy.corrcoef(x, y)[0, 1]`).
///
/// `None` if the lengths differ, `n < 3`, a value is not finite, or either
/// variable has zero variance. The result is clamped to `[-1, 1]`.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 3 || !all_finite(x) || !all_finite(y) {
        return None;
    }
    let (mx, vx) = mean_var(x);
    let (my, vy) = mean_var(y);
    if vx <= 0.0 || vy <= 0.0 {
        return None;
    }
    let sxy = sum(x.iter().zip(y).map(|(&a, &b)| (a - mx) * (b - my)));
    let sxx = sum(x.iter().map(|&a| (a - mx) * (a - mx)));
    let syy = sum(y.iter().map(|&b| (b - my) * (b - my)));
    let r = sxy / (sxx.sqrt() * syy.sqrt());
    r.is_finite().then(|| r.clamp(-1.0, 1.0))
}

// ---------------------------------------------------------------------------
// t-tests
// ---------------------------------------------------------------------------

/// Builds a `TTest`, or `None` if anything came out non-finite.
fn ttest(t: f64, df: f64) -> Option<TTest> {
    if !t.is_finite() || !df.is_finite() || df <= 0.0 {
        return None;
    }
    let p = t_two_sided_p(t, df);
    p.is_finite().then_some(TTest { t, df, p })
}

/// The zero-standard-error case shared by all t-tests.
fn no_variance(diff: f64, df: f64) -> Option<TTest> {
    (diff == 0.0 && df.is_finite() && df > 0.0).then_some(TTest { t: 0.0, df, p: 1.0 })
}

/// Paired t-test, as `scipy.stats.ttest_rel(after, before)`: `d = after -
/// before`, `t = mean(d) / (sd(d) / sqrt(n))`, `df = n - 1`, two-sided p.
///
/// `None` if the lengths differ, `n < 2`, or a value is not finite. If all
/// differences are equal (zero variance): `t = 0, p = 1` when they are all
/// zero, otherwise `None` ("no variance": SciPy would give an infinite `t`).
pub fn paired_t(before: &[f64], after: &[f64]) -> Option<TTest> {
    let d = paired_diffs(before, after)?;
    let n = d.len() as f64;
    let (mean, var) = mean_var(&d);
    let df = n - 1.0;
    if var == 0.0 {
        return no_variance(mean, df);
    }
    ttest(mean / (var / n).sqrt(), df)
}

fn paired_diffs(before: &[f64], after: &[f64]) -> Option<Vec<f64>> {
    if before.len() != after.len() || before.len() < 2 {
        return None;
    }
    if !all_finite(before) || !all_finite(after) {
        return None;
    }
    let d: Vec<f64> = after.iter().zip(before).map(|(&y, &x)| y - x).collect();
    all_finite(&d).then_some(d)
}

/// Student's two-sample t-test (pooled variance), as
/// `scipy.stats.ttest_ind(b, a, equal_var=True)`; `t` has the sign of
/// `mean(b) - mean(a)`, `df = n_a + n_b - 2`.
///
/// `None` if a group has fewer than 2 values or a value is not finite. If both
/// groups have zero variance: `t = 0, p = 1` when the means are equal,
/// otherwise `None`. One zero-variance group is fine.
pub fn student_t(a: &[f64], b: &[f64]) -> Option<TTest> {
    student_t_from_summary(summary_of_sample(a)?, summary_of_sample(b)?)
}

/// Welch's unequal-variance t-test, as
/// `scipy.stats.ttest_ind(b, a, equal_var=False)`, with the
/// Welch–Satterthwaite `df`; `t` has the sign of `mean(b) - mean(a)`.
///
/// `None` if a group has fewer than 2 values or a value is not finite. If one
/// group has zero variance, `df = n_other - 1`. If both do: `t = 0, p = 1,
/// df = n_a + n_b - 2` (Welch's df is 0/0 there; p is 1 for any df) when the
/// means are equal, otherwise `None`.
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<TTest> {
    welch_t_from_summary(summary_of_sample(a)?, summary_of_sample(b)?)
}

/// Student's t-test from summary statistics, as
/// `scipy.stats.ttest_ind_from_stats(b.mean, b.sd, b.n, a.mean, a.sd, a.n,
/// equal_var=True)`. Same sign convention and edge cases as [`student_t`];
/// also `None` for a summary with `n < 2` or a non-finite or negative field.
pub fn student_t_from_summary(a: Summary, b: Summary) -> Option<TTest> {
    let (na, ma, va) = usable(a)?;
    let (nb, mb, vb) = usable(b)?;
    let df = na + nb - 2.0;
    let pooled = ((na - 1.0) * va + (nb - 1.0) * vb) / df;
    let se = (pooled * (1.0 / na + 1.0 / nb)).sqrt();
    let diff = mb - ma;
    if se == 0.0 {
        return no_variance(diff, df);
    }
    ttest(diff / se, df)
}

/// Welch's t-test from summary statistics, as
/// `scipy.stats.ttest_ind_from_stats(b.mean, b.sd, b.n, a.mean, a.sd, a.n,
/// equal_var=False)`. Same sign convention and edge cases as [`welch_t`].
pub fn welch_t_from_summary(a: Summary, b: Summary) -> Option<TTest> {
    let (na, ma, va) = usable(a)?;
    let (nb, mb, vb) = usable(b)?;
    let ua = va / na;
    let ub = vb / nb;
    let s2 = ua + ub;
    let diff = mb - ma;
    if s2 == 0.0 {
        return no_variance(diff, na + nb - 2.0);
    }
    // Welch–Satterthwaite, written with the shares of s2 so that tiny or huge
    // variances cannot underflow or overflow the squares.
    let ra = ua / s2;
    let rb = ub / s2;
    let df = 1.0 / (ra * ra / (na - 1.0) + rb * rb / (nb - 1.0));
    ttest(diff / s2.sqrt(), df)
}

/// The difference of two independent changes, `(b_after − b_before) − (a_after − a_before)`,
/// with Welch's approach carried to four independent groups: standard error
/// `sqrt(Σ var_i / n_i)` and the Welch–Satterthwaite degrees of freedom
/// `(Σ u_i)² / Σ (u_i² / (n_i − 1))` with `u_i = var_i / n_i`. This compares, say, the Δ of
/// one prompt template with the Δ of another where every trial is its own sample.
///
/// `t` has the sign of the difference. `None` under the same conditions as
/// [`welch_t_from_summary`] (a group with fewer than 2 values, a non-finite value, or no
/// variance anywhere while the difference is not zero).
pub fn difference_of_changes(
    a_before: Summary,
    a_after: Summary,
    b_before: Summary,
    b_after: Summary,
) -> Option<TTest> {
    let groups = [
        usable(a_before)?,
        usable(a_after)?,
        usable(b_before)?,
        usable(b_after)?,
    ];
    let diff = (groups[3].1 - groups[2].1) - (groups[1].1 - groups[0].1);
    let u: Vec<f64> = groups.iter().map(|(n, _, v)| v / n).collect();
    let s2: f64 = u.iter().sum();
    if s2 == 0.0 {
        let df: f64 = groups.iter().map(|(n, _, _)| n - 1.0).sum();
        return no_variance(diff, df);
    }
    // As in `welch_t_from_summary`: shares of s2 keep the squares in range.
    let df = 1.0
        / groups
            .iter()
            .zip(&u)
            .map(|((n, _, _), ui)| (ui / s2) * (ui / s2) / (n - 1.0))
            .sum::<f64>();
    ttest(diff / s2.sqrt(), df)
}

// ---------------------------------------------------------------------------
// F-test
// ---------------------------------------------------------------------------

/// Two-sided F-test for equal variances, as the upstream EmotionBench analysis
/// does it: `F = var(a) / var(b)` (`ddof = 1`), `dfn = n_a - 1`,
/// `dfd = n_b - 1`, `p = 2 * min(cdf(F), sf(F))` under `F(dfn, dfd)`.
///
/// (Upstream puts the larger variance on top and takes `2 * sf`; that is the
/// same p whenever it is at most 1, because `F(d1, d2)` and `1 / F(d2, d1)`
/// have the same distribution; this form never exceeds 1.)
///
/// `None` if a group has fewer than 2 values or a value is not finite, or if
/// only `b` has zero variance (`F` would be infinite). If both variances are
/// zero the variances are equal: `F = 1, p = 1`. If only `a` has zero
/// variance, `F = 0` and `p = 0`.
pub fn f_test(a: &[f64], b: &[f64]) -> Option<FTest> {
    f_test_from_summary(summary_of_sample(a)?, summary_of_sample(b)?)
}

/// [`f_test`] from summary statistics (the upstream procedure works on
/// mean/sd/n). Same edge cases; also `None` for a summary with `n < 2` or a
/// non-finite or negative field.
pub fn f_test_from_summary(a: Summary, b: Summary) -> Option<FTest> {
    let (na, _, va) = usable(a)?;
    let (nb, _, vb) = usable(b)?;
    let dfn = na - 1.0;
    let dfd = nb - 1.0;
    if vb == 0.0 {
        return (va == 0.0).then_some(FTest {
            f: 1.0,
            dfn,
            dfd,
            p: 1.0,
        });
    }
    let f = va / vb;
    if !f.is_finite() {
        return None;
    }
    let p = (2.0 * f_cdf(f, dfn, dfd).min(f_sf(f, dfn, dfd))).min(1.0);
    p.is_finite().then_some(FTest { f, dfn, dfd, p })
}

// ---------------------------------------------------------------------------
// Effect sizes
// ---------------------------------------------------------------------------

/// Cohen's d with the pooled standard deviation:
/// `(mean_b - mean_a) / sqrt(((n_a-1) var_a + (n_b-1) var_b) / (n_a+n_b-2))`.
///
/// `None` for a summary with `n < 2` or a non-finite or negative field. If the
/// pooled SD is zero: `0.0` when the means are equal, otherwise `None`.
pub fn cohens_d(a: Summary, b: Summary) -> Option<f64> {
    let (na, ma, va) = usable(a)?;
    let (nb, mb, vb) = usable(b)?;
    let pooled_sd = (((na - 1.0) * va + (nb - 1.0) * vb) / (na + nb - 2.0)).sqrt();
    let diff = mb - ma;
    if pooled_sd == 0.0 {
        return (diff == 0.0).then_some(0.0);
    }
    let d = diff / pooled_sd;
    d.is_finite().then_some(d)
}

/// Hedges' g: Cohen's d times the small-sample correction
/// `J = 1 - 3 / (4 (n_a + n_b) - 9)`. Same edge cases as [`cohens_d`].
pub fn hedges_g(a: Summary, b: Summary) -> Option<f64> {
    let d = cohens_d(a, b)?;
    let n = (a.n + b.n) as f64;
    Some(d * (1.0 - 3.0 / (4.0 * n - 9.0)))
}

/// Paired effect size `d_z = mean(d) / sd(d)` with `d = after - before`.
///
/// `None` if the lengths differ, `n < 2`, or a value is not finite. If all
/// differences are equal: `0.0` when they are zero, otherwise `None`.
pub fn paired_dz(before: &[f64], after: &[f64]) -> Option<f64> {
    let d = paired_diffs(before, after)?;
    let (mean, var) = mean_var(&d);
    if var == 0.0 {
        return (mean == 0.0).then_some(0.0);
    }
    let dz = mean / var.sqrt();
    dz.is_finite().then_some(dz)
}

// ---------------------------------------------------------------------------
// Multiple comparisons
// ---------------------------------------------------------------------------

/// Inputs are p-values; NaN becomes 1 (nothing to reject) and the rest is
/// clamped to `[0, 1]`, so the outputs are always finite.
fn sanitize_p(p: &[f64]) -> Vec<f64> {
    p.iter()
        .map(|&v| if v.is_nan() { 1.0 } else { v.clamp(0.0, 1.0) })
        .collect()
}

fn ascending_order(p: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    order
}

/// Benjamini–Hochberg adjusted p-values in input order, as statsmodels
/// `multipletests(p, method="fdr_bh")[1]`: for sorted `p_(i)` (rank `i`
/// from 1), `min_{k >= i} m p_(k) / k`, capped at 1.
///
/// Inputs should be p-values; a NaN is treated as 1 and values outside
/// `[0, 1]` are clamped, so the output is always finite.
pub fn bh_adjust(p: &[f64]) -> Vec<f64> {
    let p = sanitize_p(p);
    let m = p.len() as f64;
    let order = ascending_order(&p);
    let mut out = vec![0.0; p.len()];
    let mut running = 1.0_f64;
    for (rank0, &idx) in order.iter().enumerate().rev() {
        let raw = p[idx] * m / (rank0 as f64 + 1.0);
        running = running.min(raw);
        out[idx] = running.min(1.0);
    }
    out
}

/// Holm (step-down Bonferroni) adjusted p-values in input order, as
/// statsmodels `multipletests(p, method="holm")[1]`: for sorted `p_(i)`,
/// `max_{k <= i} (m - k + 1) p_(k)`, capped at 1.
///
/// Inputs are sanitized as in [`bh_adjust`].
pub fn holm_adjust(p: &[f64]) -> Vec<f64> {
    let p = sanitize_p(p);
    let m = p.len() as f64;
    let order = ascending_order(&p);
    let mut out = vec![0.0; p.len()];
    let mut running = 0.0_f64;
    for (rank0, &idx) in order.iter().enumerate() {
        let raw = (m - rank0 as f64) * p[idx];
        running = running.max(raw);
        out[idx] = running.min(1.0);
    }
    out
}

// ---------------------------------------------------------------------------
// Special functions and distributions
// ---------------------------------------------------------------------------

const LANCZOS_G: f64 = 7.0;
const LANCZOS_COEF: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// Natural log of the gamma function for `x > 0` (Lanczos, g = 7, n = 9;
/// about 1e-15 relative accuracy). Returns NaN for `x <= 0` or NaN and
/// `+inf` for `x = +inf`; callers in this module never pass such values.
pub fn ln_gamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(π x); sin(π x) > 0 on (0, 0.5).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let z = x - 1.0;
    let mut acc = LANCZOS_COEF[0];
    for (i, &c) in LANCZOS_COEF.iter().enumerate().skip(1) {
        acc += c / (z + i as f64);
    }
    let t = z + LANCZOS_G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (z + 0.5) * t.ln() - t + acc.ln()
}

fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// Regularized incomplete beta function `I_x(a, b)` for `a, b > 0`,
/// `0 <= x <= 1` (continued fraction, modified Lentz). Returns NaN for
/// arguments outside that domain.
pub fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    inc_beta_xy(a, b, x, 1.0 - x)
}

/// `I_x(a, b)` with `y = 1 - x` supplied by the caller, so that values of `x`
/// near 1 keep full precision in `y`.
fn inc_beta_xy(a: f64, b: f64, x: f64, y: f64) -> f64 {
    let positive_finite = |v: f64| v > 0.0 && v.is_finite();
    if !positive_finite(a) || !positive_finite(b) || x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    if x < (a + 1.0) / (a + b + 2.0) {
        let front = (a * x.ln() + b * y.ln() - ln_beta(a, b)).exp();
        (front * beta_cf(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        let front = (b * y.ln() + a * x.ln() - ln_beta(b, a)).exp();
        (1.0 - front * beta_cf(b, a, y) / b).clamp(0.0, 1.0)
    }
}

/// Continued fraction for the incomplete beta function (modified Lentz).
/// Converges quickly for `x < (a + 1) / (a + b + 2)`.
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const MAX_ITER: u32 = 100_000;
    const EPS: f64 = 1e-16;
    const TINY: f64 = 1e-300;
    let fix = |v: f64| if v.abs() < TINY { TINY } else { v };
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 / fix(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_ITER {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / fix(1.0 + aa * d);
        c = fix(1.0 + aa / c);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// Two-sided p-value of Student's t distribution, `P(|T| >= |t|)` with `df`
/// degrees of freedom (as `2 * scipy.stats.t.sf(abs(t), df)`), computed as
/// `I_{df/(df+t²)}(df/2, 1/2)`. Accurate in relative terms for tiny p.
///
/// `t = ±inf` gives 0. Returns NaN if `t` is NaN or `df` is not a positive
/// finite number; the tests in this module never pass such arguments.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 || df.is_infinite() {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    // x = df / (df + t²) and 1 - x = t² / (df + t²), both without cancellation;
    // scaled by |t| so that a huge t cannot overflow t².
    let at = t.abs();
    let (x, y) = if at > 1.0 {
        let r = df / at / at;
        (r / (r + 1.0), 1.0 / (r + 1.0))
    } else {
        let t2 = at * at;
        (df / (df + t2), t2 / (df + t2))
    };
    inc_beta_xy(0.5 * df, 0.5, x, y).clamp(0.0, 1.0)
}

/// Cumulative distribution function of the F distribution with `dfn`, `dfd`
/// degrees of freedom (as `scipy.stats.f.cdf`):
/// `I_{dfn f / (dfn f + dfd)}(dfn/2, dfd/2)`.
///
/// `f <= 0` gives 0 and `f = +inf` gives 1. Returns NaN if `f` is NaN or a
/// degree of freedom is not a positive finite number.
pub fn f_cdf(f: f64, dfn: f64, dfd: f64) -> f64 {
    match f_xy(f, dfn, dfd) {
        Some((x, y)) => inc_beta_xy(0.5 * dfn, 0.5 * dfd, x, y),
        None => f64::NAN,
    }
}

/// Survival function `1 - cdf` of the F distribution (as `scipy.stats.f.sf`),
/// computed directly so that tiny upper tails keep their relative accuracy.
/// Same domain as [`f_cdf`].
pub fn f_sf(f: f64, dfn: f64, dfd: f64) -> f64 {
    match f_xy(f, dfn, dfd) {
        Some((x, y)) => inc_beta_xy(0.5 * dfd, 0.5 * dfn, y, x),
        None => f64::NAN,
    }
}

/// `x = dfn f / (dfn f + dfd)` and `y = 1 - x`, computed without cancellation.
fn f_xy(f: f64, dfn: f64, dfd: f64) -> Option<(f64, f64)> {
    let bad_df = |d: f64| d.is_nan() || d <= 0.0 || d.is_infinite();
    if f.is_nan() || bad_df(dfn) || bad_df(dfd) {
        return None;
    }
    if f <= 0.0 {
        return Some((0.0, 1.0));
    }
    if f.is_infinite() {
        return Some((1.0, 0.0));
    }
    let u = dfn * f;
    if u > dfd {
        let r = dfd / u;
        Some((1.0 / (1.0 + r), r / (1.0 + r)))
    } else {
        let r = u / dfd;
        Some((r / (1.0 + r), 1.0 / (1.0 + r)))
    }
}

/// The two-sided critical value of Student's t at `alpha` with `df` degrees of freedom, as
/// `scipy.stats.t.ppf(1 - alpha / 2, df)`.
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    bisect_crossing(|t| t_two_sided_p(t, df) > alpha)
}

/// The mean of the paired differences `after − before` and its two-sided `level` confidence
/// interval from Student's t, as `scipy.stats.ttest_rel(after, before).confidence_interval(level)`:
/// `mean ± t_crit · sd / √n`. `None` under the conditions of [`paired_t`]; an interval of
/// width zero when every difference is the same.
pub fn paired_mean_ci(before: &[f64], after: &[f64], level: f64) -> Option<(f64, f64, f64)> {
    let d = paired_diffs(before, after)?;
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    let n = d.len() as f64;
    let (mean, var) = mean_var(&d);
    let half = t_critical(1.0 - level, n - 1.0) * (var / n).sqrt();
    half.is_finite().then_some((mean, mean - half, mean + half))
}

/// The point `x ≥ 0` where `below(x)` turns from true to false, for a `below` that is true up
/// to one crossing and false after it (a monotone distribution function compared with its
/// target): doubling until past it, then bisecting to the spacing of doubles. Infinity when it
/// is still below at 1e300. Quantiles of the t and F distributions are found so, on their exact
/// distribution functions.
pub fn bisect_crossing(below: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while below(hi) {
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    // 200 halvings reach the spacing of doubles long before the cap.
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
// The reference literals are SciPy output, not approximations of constants.
#[allow(clippy::unwrap_used, clippy::approx_constant)]
mod tests {
    use super::*;

    // Tolerances: the brief asks for 1e-6; the implementation is far better,
    // so the tests hold it to this.
    const REL: f64 = 1e-9;
    const P_ABS: f64 = 1e-10;

    fn assert_rel(actual: f64, expected: f64, what: &str) {
        let tol = REL * expected.abs().max(1e-300);
        assert!(
            (actual - expected).abs() <= tol || actual == expected,
            "{what}: got {actual:e}, expected {expected:e}"
        );
    }

    /// p-values: absolute 1e-10, and relative 1e-9 below 1e-3.
    fn assert_p(actual: f64, expected: f64, what: &str) {
        assert!(actual.is_finite(), "{what}: p not finite ({actual})");
        if expected < 1e-3 {
            assert_rel(actual, expected, what);
        } else {
            assert!(
                (actual - expected).abs() <= P_ABS,
                "{what}: got p = {actual:e}, expected {expected:e}"
            );
        }
    }

    fn assert_t(r: Option<TTest>, t: f64, df: f64, p: f64, what: &str) {
        let r = r.unwrap_or_else(|| panic!("{what}: got None"));
        assert_rel(r.t, t, &format!("{what} t"));
        assert_rel(r.df, df, &format!("{what} df"));
        assert_p(r.p, p, &format!("{what} p"));
    }

    fn assert_f(r: Option<FTest>, f: f64, dfn: f64, dfd: f64, p: f64, what: &str) {
        let r = r.unwrap_or_else(|| panic!("{what}: got None"));
        assert_rel(r.f, f, &format!("{what} F"));
        assert_eq!(r.dfn, dfn, "{what} dfn");
        assert_eq!(r.dfd, dfd, "{what} dfd");
        assert_p(r.p, p, &format!("{what} p"));
    }

    fn assert_vec(actual: &[f64], expected: &[f64], what: &str) {
        assert_eq!(actual.len(), expected.len(), "{what}: length");
        for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
            assert_rel(a, e, &format!("{what}[{i}]"));
        }
    }

    // ---- data --------------------------------------------------------------
    //
    // The Python that produced every reference number below (scipy 1.17.1,
    // numpy 2.4.6, statsmodels 0.15.0) uses the same data, e.g.:
    //   A = [3.0, 4.0, 5.0, 4.0, 3.0, 5.0, 4.0, 2.0]
    //   B = [5.0, 6.0, 4.0, 7.0, 6.0, 5.0, 6.0, 7.0, 5.0, 6.0]
    //   stats.ttest_ind(B, A, equal_var=True)    # student_t(A, B)
    //   stats.ttest_ind(B, A, equal_var=False)   # welch_t(A, B) (.df for df)
    //   F = np.var(A, ddof=1) / np.var(B, ddof=1)
    //   2 * min(stats.f.cdf(F, len(A)-1, len(B)-1), stats.f.sf(F, len(A)-1, len(B)-1))
    //   stats.ttest_rel(after, before)           # paired_t(before, after)
    // and the LCG below, ported line for line:
    //   M = (1 << 64) - 1
    //   s = (s * 6364136223846793005 + 1442695040888963407) & M
    //   uniform = (s >> 11) * 2.0**-53
    //   normalish = (sum of 12 uniforms, added left to right from 0.0) - 6.0
    //   sample(seed, n, loc, scale) = [loc + scale * normalish() for _ in range(n)]

    const A: [f64; 8] = [3.0, 4.0, 5.0, 4.0, 3.0, 5.0, 4.0, 2.0];
    const B: [f64; 10] = [5.0, 6.0, 4.0, 7.0, 6.0, 5.0, 6.0, 7.0, 5.0, 6.0];
    /// Much larger variance than A.
    const C: [f64; 7] = [10.0, 30.0, -5.0, 45.0, 0.0, 25.0, 60.0];
    const N2A: [f64; 2] = [1.0, 2.0];
    const N2B: [f64; 2] = [3.0, 5.0];
    /// Zero variance.
    const Z: [f64; 4] = [4.0, 4.0, 4.0, 4.0];
    const V5: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 5.0];
    /// Tight groups far apart: p of order 1e-11.
    const T1: [f64; 6] = [10.0, 10.1, 9.9, 10.05, 9.95, 10.02];
    const T2: [f64; 7] = [11.0, 11.1, 10.9, 11.05, 10.95, 11.02, 10.98];
    /// Nearly equal means: p near 1.
    const NE1: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 5.0];
    const NE2: [f64; 5] = [1.01, 2.0, 3.0, 4.0, 5.0];

    struct Lcg(u64);

    impl Lcg {
        fn next_u64(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0
        }
        fn uniform(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 * (-53.0_f64).exp2()
        }
        fn normalish(&mut self) -> f64 {
            let mut acc = 0.0;
            for _ in 0..12 {
                acc += self.uniform();
            }
            acc - 6.0
        }
    }

    fn lcg_sample(seed: u64, n: usize, loc: f64, scale: f64) -> Vec<f64> {
        let mut g = Lcg(seed);
        (0..n).map(|_| loc + scale * g.normalish()).collect()
    }

    /// LA = sample(1, 10000, 3.0, 1.0)
    fn la() -> Vec<f64> {
        lcg_sample(1, 10_000, 3.0, 1.0)
    }
    /// LB = sample(2, 10000, 3.03, 1.5)
    fn lb() -> Vec<f64> {
        lcg_sample(2, 10_000, 3.03, 1.5)
    }
    /// LC = sample(3, 10000, 3.2, 1.0)
    fn lc() -> Vec<f64> {
        lcg_sample(3, 10_000, 3.2, 1.0)
    }
    /// LD = sample(5, 8000, 3.0, 1.05)
    fn ld() -> Vec<f64> {
        lcg_sample(5, 8_000, 3.0, 1.05)
    }
    /// g = Lcg(4); LPa = [v + 0.02 + 0.5 * g.normalish() for v in LA]
    fn lpa(la: &[f64]) -> Vec<f64> {
        let mut g = Lcg(4);
        la.iter().map(|&v| v + 0.02 + 0.5 * g.normalish()).collect()
    }

    #[test]
    fn difference_of_changes_matches_the_welch_satterthwaite_reference() {
        // numpy/scipy: diff = (mean(eb) − mean(db)) − (mean(ea) − mean(da)),
        // u = var(ddof=1)/n, df = (Σu)² / Σ(u²/(n−1)), p = 2·t.sf(|t|, df).
        let s = |x: &[f64]| summary(x);
        let r = difference_of_changes(
            s(&[20.0, 21.0, 22.0, 20.0, 23.0]),
            s(&[15.0, 17.0, 14.0, 18.0, 16.0, 15.0]),
            s(&[21.0, 20.0, 22.0, 21.0]),
            s(&[19.0, 18.0, 20.0, 21.0, 19.0]),
        )
        .unwrap();
        assert!((r.t - 3.546871236245044).abs() < 1e-9, "{r:?}");
        assert!((r.df - 15.675258280967087).abs() < 1e-9, "{r:?}");
        assert!((r.p - 0.0027586931641039513).abs() < 1e-9, "{r:?}");
        // Swapping the variants flips the sign only.
        let swapped = difference_of_changes(
            s(&[21.0, 20.0, 22.0, 21.0]),
            s(&[19.0, 18.0, 20.0, 21.0, 19.0]),
            s(&[20.0, 21.0, 22.0, 20.0, 23.0]),
            s(&[15.0, 17.0, 14.0, 18.0, 16.0, 15.0]),
        )
        .unwrap();
        assert!((swapped.t + r.t).abs() < 1e-12 && (swapped.p - r.p).abs() < 1e-12);
        // No variance anywhere: equal changes give t = 0, different ones no test.
        let c = |v: f64| summary(&[v, v, v]);
        let same = difference_of_changes(c(10.0), c(12.0), c(20.0), c(22.0)).unwrap();
        assert_eq!((same.t, same.p), (0.0, 1.0));
        assert!(difference_of_changes(c(10.0), c(12.0), c(20.0), c(23.0)).is_none());
        assert!(difference_of_changes(summary(&[1.0]), c(1.0), c(1.0), c(1.0)).is_none());
    }

    #[test]
    fn lcg_matches_python() {
        // LA[:3], LB[:3] printed by Python.
        let a = la();
        let b = lb();
        assert_eq!(
            a[..3],
            [3.198842832892569, 3.9336421355651483, 3.251892224997955]
        );
        assert_eq!(
            b[..3],
            [4.385694419648799, 0.04074268684054161, 2.5689804033624193]
        );
    }

    // ---- summary -----------------------------------------------------------

    #[test]
    fn summary_matches_numpy() {
        // np.mean(x), np.std(x, ddof=1)
        let s = summary(&A);
        assert_eq!(s.n, 8);
        assert_rel(s.mean, 3.75, "A mean");
        assert_rel(s.sd, 1.0350983390135313, "A sd");
        let s = summary(&C);
        assert_rel(s.mean, 23.571428571428573, "C mean");
        assert_rel(s.sd, 23.754698783308417, "C sd");
        let s = summary(&N2B);
        assert_rel(s.mean, 4.0, "N2B mean");
        assert_rel(s.sd, 1.4142135623730951, "N2B sd");
        let s = summary(&la());
        assert_eq!(s.n, 10_000);
        assert_rel(s.mean, 3.0022908691209698, "LA mean");
        assert_rel(s.sd, 1.0084863225590757, "LA sd");
        let s = summary(&ld());
        assert_rel(s.mean, 3.0064812619130508, "LD mean");
        assert_rel(s.sd, 1.046466445744362, "LD sd");
    }

    #[test]
    fn summary_edge_cases() {
        assert_eq!(
            summary(&[]),
            Summary {
                n: 0,
                mean: 0.0,
                sd: 0.0
            }
        );
        assert_eq!(
            summary(&[2.5]),
            Summary {
                n: 1,
                mean: 2.5,
                sd: 0.0
            }
        );
        // Identical values: exactly zero sd and the exact value as mean.
        let s = summary(&[0.1; 7]);
        assert_eq!(s.mean, 0.1);
        assert_eq!(s.sd, 0.0);
        assert_eq!(try_summary(&[]), None);
        assert_eq!(try_summary(&[1.0, f64::NAN]), None);
        assert_eq!(try_summary(&[1.0, f64::INFINITY]), None);
        assert_eq!(try_summary(&[1.0, 3.0]).unwrap().mean, 2.0);
    }

    // ---- Student -----------------------------------------------------------

    #[test]
    fn student_matches_scipy() {
        // stats.ttest_ind(b, a, equal_var=True) -> (statistic, pvalue); df = na + nb - 2
        assert_t(
            student_t(&A, &B),
            4.163331998932266,
            16.0,
            0.0007325955919440835,
            "A,B",
        );
        // very different variances
        assert_t(
            student_t(&C, &A),
            -2.3705513568358465,
            13.0,
            0.03390103200414933,
            "C,A",
        );
        assert_t(
            student_t(&A, &C),
            2.3705513568358465,
            13.0,
            0.03390103200414933,
            "A,C",
        );
        // n = 2
        assert_t(
            student_t(&N2A, &N2B),
            2.23606797749979,
            2.0,
            0.1548457452714834,
            "n=2",
        );
        // one group with zero variance
        assert_t(
            student_t(&Z, &V5),
            -1.247219128924647,
            7.0,
            0.2524258774709708,
            "Z,V5",
        );
        // p ~ 3e-11
        assert_t(
            student_t(&T1, &T2),
            26.275270322272174,
            11.0,
            2.8130094463716e-11,
            "T1,T2",
        );
        // p near 1
        assert_t(
            student_t(&NE1, &NE2),
            0.0020019989929905353,
            8.0,
            0.9984516590624679,
            "NE",
        );
    }

    #[test]
    fn student_large_samples() {
        let (a, b, c, d) = (la(), lb(), lc(), ld());
        assert_t(
            student_t(&a, &b),
            1.9344495605163385,
            19998.0,
            0.05307196574034194,
            "LA,LB",
        );
        // p ~ 9e-45
        assert_t(
            student_t(&a, &c),
            14.071950783386248,
            19998.0,
            9.238381119522968e-45,
            "LA,LC",
        );
        // unequal n
        assert_t(
            student_t(&a, &d),
            0.2724024143234339,
            17998.0,
            0.7853157414147129,
            "LA,LD",
        );
    }

    #[test]
    fn student_from_summary_matches_scipy() {
        // stats.ttest_ind_from_stats(mb, sb, nb, ma, sa, na, equal_var=True), which
        // equals ttest_ind on the raw data above.
        let s = |n, mean, sd| Summary { n, mean, sd };
        assert_t(
            student_t_from_summary(
                s(8, 3.75, 1.0350983390135313),
                s(10, 5.7, 0.9486832980505138),
            ),
            4.163331998932266,
            16.0,
            0.0007325955919440835,
            "A,B",
        );
        assert_t(
            student_t_from_summary(
                s(7, 23.571428571428573, 23.754698783308417),
                s(8, 3.75, 1.0350983390135313),
            ),
            -2.3705513568358465,
            13.0,
            0.03390103200414933,
            "C,A",
        );
        assert_t(
            student_t_from_summary(s(4, 4.0, 0.0), s(5, 3.0, 1.5811388300841898)),
            -1.247219128924647,
            7.0,
            0.2524258774709708,
            "Z,V5",
        );
        assert_t(
            student_t_from_summary(
                s(10_000, 3.0022908691209698, 1.0084863225590757),
                s(10_000, 3.2023553772535713, 1.0021270596020875),
            ),
            14.071950783386248,
            19998.0,
            9.238381119522968e-45,
            "LA,LC",
        );
    }

    // ---- Welch -------------------------------------------------------------

    #[test]
    fn welch_matches_scipy() {
        // stats.ttest_ind(b, a, equal_var=False) -> (statistic, df, pvalue)
        assert_t(
            welch_t(&A, &B),
            4.120784056950709,
            14.482404205939469,
            0.0009718212187691628,
            "A,B",
        );
        assert_t(
            welch_t(&C, &A),
            -2.205839841253269,
            6.019939027593781,
            0.06939257483686179,
            "C,A",
        );
        assert_t(
            welch_t(&N2A, &N2B),
            2.23606797749979,
            1.4705882352941178,
            0.19872738893452602,
            "n=2",
        );
        // one zero variance: df = n_other - 1 = 4, both orders
        assert_t(
            welch_t(&Z, &V5),
            -1.414213562373095,
            4.0,
            0.2301996410804989,
            "Z,V5",
        );
        assert_t(
            welch_t(&V5, &Z),
            1.414213562373095,
            4.0,
            0.2301996410804989,
            "V5,Z",
        );
        assert_t(
            welch_t(&T1, &T2),
            26.095309531465297,
            10.354288474529309,
            8.722707707950814e-11,
            "T1,T2",
        );
        assert_t(
            welch_t(&NE1, &NE2),
            0.0020019989929905353,
            7.999968000384509,
            0.9984516592545418,
            "NE",
        );
    }

    #[test]
    fn welch_large_samples() {
        let (a, b, c, d) = (la(), lb(), lc(), ld());
        assert_t(
            welch_t(&a, &b),
            1.9344495605163385,
            17452.001670348945,
            0.053074020986076144,
            "LA,LB",
        );
        assert_t(
            welch_t(&a, &c),
            14.071950783386248,
            19997.199839850146,
            9.238561769720393e-45,
            "LA,LC",
        );
        assert_t(
            welch_t(&a, &d),
            0.27128621950669835,
            16856.79307864081,
            0.7861742263602134,
            "LA,LD",
        );
    }

    #[test]
    fn welch_from_summary_matches_scipy() {
        // stats.ttest_ind_from_stats(mb, sb, nb, ma, sa, na, equal_var=False)
        let s = |n, mean, sd| Summary { n, mean, sd };
        assert_t(
            welch_t_from_summary(
                s(8, 3.75, 1.0350983390135313),
                s(10, 5.7, 0.9486832980505138),
            ),
            4.120784056950709,
            14.482404205939469,
            0.0009718212187691628,
            "A,B",
        );
        assert_t(
            welch_t_from_summary(s(5, 3.0, 1.5811388300841898), s(4, 4.0, 0.0)),
            1.414213562373095,
            4.0,
            0.2301996410804989,
            "V5,Z",
        );
        assert_t(
            welch_t_from_summary(
                s(10_000, 3.0022908691209698, 1.0084863225590757),
                s(10_000, 3.037384684780905, 1.5080103992476452),
            ),
            1.9344495605163385,
            17452.001670348945,
            0.053074020986076144,
            "LA,LB",
        );
    }

    #[test]
    fn two_sample_zero_variance_and_invalid() {
        // Both groups constant and equal: t = 0, p = 1.
        let same = student_t(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
        assert_eq!(
            same,
            TTest {
                t: 0.0,
                df: 3.0,
                p: 1.0
            }
        );
        let same = welch_t(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
        assert_eq!(
            same,
            TTest {
                t: 0.0,
                df: 3.0,
                p: 1.0
            }
        );
        // Both constant, different: no variance -> None (t would be infinite).
        assert_eq!(student_t(&[3.0, 3.0], &[4.0, 4.0]), None);
        assert_eq!(welch_t(&[3.0, 3.0], &[4.0, 4.0]), None);
        // Constant 0.1s: summation noise must not fake a variance.
        assert_eq!(student_t(&[0.1; 5], &[0.1; 3]).unwrap().p, 1.0);
        // Identical inputs with variance: t = 0, p = 1.
        let r = student_t(&A, &A).unwrap();
        assert_eq!((r.t, r.p), (0.0, 1.0));
        let r = welch_t(&B, &B).unwrap();
        assert_eq!((r.t, r.p, r.df), (0.0, 1.0, 18.0));
        // n < 2 in a group.
        assert_eq!(student_t(&[1.0], &B), None);
        assert_eq!(welch_t(&A, &[]), None);
        // Non-finite input.
        assert_eq!(student_t(&[1.0, f64::NAN], &B), None);
        assert_eq!(welch_t(&A, &[1.0, f64::INFINITY]), None);
        // Bad summaries.
        let ok = Summary {
            n: 5,
            mean: 1.0,
            sd: 1.0,
        };
        let one = Summary {
            n: 1,
            mean: 1.0,
            sd: 0.0,
        };
        let nan = Summary {
            n: 5,
            mean: f64::NAN,
            sd: 1.0,
        };
        let neg = Summary {
            n: 5,
            mean: 1.0,
            sd: -1.0,
        };
        for bad in [one, nan, neg] {
            assert_eq!(student_t_from_summary(ok, bad), None);
            assert_eq!(welch_t_from_summary(bad, ok), None);
            assert_eq!(f_test_from_summary(ok, bad), None);
            assert_eq!(cohens_d(bad, ok), None);
            assert_eq!(hedges_g(ok, bad), None);
        }
    }

    // ---- paired ------------------------------------------------------------

    const P1B: [f64; 6] = [10.0, 12.0, 9.0, 15.0, 11.0, 13.0];
    const P1A: [f64; 6] = [12.0, 13.0, 9.0, 18.0, 12.0, 16.0];
    const P4B: [f64; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    const P4A: [f64; 6] = [1.1, 1.9, 3.05, 3.9, 5.1, 5.96];

    /// P3b = [1.0 .. 30.0]; P3a = [v + 5.0 + (0.3 if i % 2 == 0 else -0.3)]
    fn p3() -> (Vec<f64>, Vec<f64>) {
        let b: Vec<f64> = (1..=30).map(f64::from).collect();
        let a = b
            .iter()
            .enumerate()
            .map(|(i, &v)| v + 5.0 + if i % 2 == 0 { 0.3 } else { -0.3 })
            .collect();
        (b, a)
    }

    #[test]
    fn paired_matches_scipy() {
        // stats.ttest_rel(after, before) -> (statistic, df, pvalue)
        assert_t(
            paired_t(&P1B, &P1A),
            3.3709993123162105,
            5.0,
            0.019868051523379414,
            "P1",
        );
        // n = 2
        assert_t(
            paired_t(&[1.0, 2.0], &[2.0, 5.0]),
            2.0,
            1.0,
            0.2951672353008665,
            "n=2",
        );
        // p ~ 5e-37
        let (b, a) = p3();
        assert_t(
            paired_t(&b, &a),
            89.75274678557503,
            29.0,
            5.14617545406314e-37,
            "P3",
        );
        // p near 1
        assert_t(
            paired_t(&P4B, &P4A),
            0.04347826086956238,
            5.0,
            0.9670031968427568,
            "P4",
        );
        // n = 10000
        let before = la();
        let after = lpa(&before);
        assert_t(
            paired_t(&before, &after),
            3.7566656434206083,
            9999.0,
            0.0001731704465761456,
            "LP",
        );
        // Reversed roles flip the sign only.
        let r = paired_t(&P1A, &P1B).unwrap();
        assert_rel(r.t, -3.3709993123162105, "reversed t");
    }

    #[test]
    fn paired_edge_cases() {
        // All differences zero: t = 0, p = 1.
        assert_eq!(
            paired_t(&A, &A),
            Some(TTest {
                t: 0.0,
                df: 7.0,
                p: 1.0
            })
        );
        // All differences equal but non-zero: no variance -> None.
        let shifted: Vec<f64> = A.iter().map(|v| v + 2.0).collect();
        assert_eq!(paired_t(&A, &shifted), None);
        assert_eq!(paired_t(&[1.0], &[2.0]), None);
        assert_eq!(paired_t(&[1.0, 2.0], &[2.0]), None);
        assert_eq!(paired_t(&[1.0, f64::NAN], &[2.0, 3.0]), None);
    }

    // ---- F-test ------------------------------------------------------------

    #[test]
    fn f_test_matches_scipy() {
        // F = np.var(a, ddof=1) / np.var(b, ddof=1); dfn, dfd = len(a) - 1, len(b) - 1
        // p = 2 * min(stats.f.cdf(F, dfn, dfd), stats.f.sf(F, dfn, dfd))
        assert_f(
            f_test(&A, &B),
            1.1904761904761905,
            7.0,
            9.0,
            0.7887345043241452,
            "A,B",
        );
        // very different variances, both orders (sf side and cdf side): p ~ 1e-8
        assert_f(
            f_test(&C, &A),
            526.6666666666667,
            6.0,
            7.0,
            1.2521480950986149e-08,
            "C,A",
        );
        assert_f(
            f_test(&A, &C),
            0.0018987341772151896,
            7.0,
            6.0,
            1.2521480950986149e-08,
            "A,C",
        );
        // n = 2
        assert_f(f_test(&N2A, &N2B), 0.25, 1.0, 1.0, 0.590334470601733, "n=2");
        // p near 1
        assert_f(
            f_test(&NE1, &NE2),
            1.0040079999357436,
            4.0,
            4.0,
            0.9970000160239517,
            "NE",
        );
        assert_f(
            f_test(&T1, &T2),
            1.1782945736434116,
            5.0,
            6.0,
            0.8337227477613576,
            "T",
        );
    }

    #[test]
    fn f_test_large_samples() {
        let (a, b, c, d) = (la(), lb(), lc(), ld());
        assert_f(
            f_test(&a, &c),
            1.0127317990078104,
            9999.0,
            9999.0,
            0.5270458367265403,
            "LA,LC",
        );
        assert_f(
            f_test(&a, &d),
            0.928729862233255,
            9999.0,
            7999.0,
            0.0004824500573917916,
            "LA,LD",
        );
        // scipy: F = 0.4472304366747837, p underflows to 0.0 (logcdf = -inf).
        let r = f_test(&a, &b).unwrap();
        assert_rel(r.f, 0.4472304366747837, "LA,LB F");
        assert!(r.p < 1e-300, "LA,LB p = {:e}", r.p);
    }

    #[test]
    fn f_test_from_summary_matches_scipy() {
        let s = |n, sd| Summary { n, mean: 0.0, sd };
        assert_f(
            f_test_from_summary(s(8, 1.0350983390135313), s(10, 0.9486832980505138)),
            1.1904761904761905,
            7.0,
            9.0,
            0.7887345043241452,
            "A,B",
        );
        assert_f(
            f_test_from_summary(s(7, 23.754698783308417), s(8, 1.0350983390135313)),
            526.6666666666667,
            6.0,
            7.0,
            1.2521480950986149e-08,
            "C,A",
        );
        assert_f(
            f_test_from_summary(s(10_000, 1.0084863225590757), s(8000, 1.046466445744362)),
            0.928729862233255,
            9999.0,
            7999.0,
            0.0004824500573917916,
            "LA,LD",
        );
    }

    #[test]
    fn f_test_zero_variance() {
        // Only a constant: F = 0 -> cdf = 0 -> p = 0 (scipy: F 0.0, p 0.0).
        assert_f(f_test(&Z, &V5), 0.0, 3.0, 4.0, 0.0, "Z,V5");
        // Only b constant: F infinite -> None.
        assert_eq!(f_test(&V5, &Z), None);
        // Both constant: equal variances.
        assert_eq!(
            f_test(&Z, &[1.0, 1.0]),
            Some(FTest {
                f: 1.0,
                dfn: 3.0,
                dfd: 1.0,
                p: 1.0
            })
        );
        assert_eq!(f_test(&[1.0], &V5), None);
    }

    // ---- effect sizes ------------------------------------------------------

    #[test]
    fn effect_sizes_match_reference() {
        // sp = np.sqrt(((na-1)*va + (nb-1)*vb) / (na+nb-2)); d = (mean(b) - mean(a)) / sp
        // g = d * (1 - 3 / (4*(na+nb) - 9))
        let cases: [(&[f64], &[f64], f64, f64); 6] = [
            (&A, &B, 1.97484176581315, 1.8808016817268094),
            (&C, &A, -1.2268768860035288, -1.1547076574150859),
            (&N2A, &N2B, 2.23606797749979, 1.2777531299998799),
            (&Z, &V5, -0.8366600265340756, -0.7436978013636227),
            (&T1, &T2, 14.618210916370066, 13.5983357361582),
            (&NE1, &NE2, 0.0012661753382427125, 0.0011436422409934178),
        ];
        for (i, (a, b, d, g)) in cases.into_iter().enumerate() {
            let (sa, sb) = (summary(a), summary(b));
            assert_rel(cohens_d(sa, sb).unwrap(), d, &format!("d case {i}"));
            assert_rel(hedges_g(sa, sb).unwrap(), g, &format!("g case {i}"));
        }
        let (sa, sc) = (summary(&la()), summary(&lc()));
        assert_rel(cohens_d(sa, sc).unwrap(), 0.1990074364691153, "d LA,LC");
        assert_rel(hedges_g(sa, sc).unwrap(), 0.19899997285059062, "g LA,LC");
    }

    #[test]
    fn effect_size_edge_cases() {
        let c3 = summary(&[3.0, 3.0]);
        let c4 = summary(&[4.0, 4.0, 4.0]);
        assert_eq!(cohens_d(c3, c3), Some(0.0));
        assert_eq!(hedges_g(c3, c3), Some(0.0));
        assert_eq!(cohens_d(c3, c4), None);
        assert_eq!(hedges_g(c3, c4), None);
        assert_eq!(cohens_d(summary(&[1.0]), summary(&A)), None);
    }

    #[test]
    fn paired_dz_matches_reference() {
        // dd = np.array(after) - np.array(before); dd.mean() / dd.std(ddof=1)
        assert_rel(paired_dz(&P1B, &P1A).unwrap(), 1.3762047064079508, "P1");
        assert_rel(
            paired_dz(&[1.0, 2.0], &[2.0, 5.0]).unwrap(),
            1.414213562373095,
            "n=2",
        );
        let (b, a) = p3();
        assert_rel(paired_dz(&b, &a).unwrap(), 16.386534670836244, "P3");
        assert_rel(paired_dz(&P4B, &P4A).unwrap(), 0.01774992567234071, "P4");
        let before = la();
        let after = lpa(&before);
        assert_rel(
            paired_dz(&before, &after).unwrap(),
            0.03756665643420608,
            "LP",
        );
        // edge cases
        assert_eq!(paired_dz(&A, &A), Some(0.0));
        let shifted: Vec<f64> = A.iter().map(|v| v - 1.0).collect();
        assert_eq!(paired_dz(&A, &shifted), None);
        assert_eq!(paired_dz(&[1.0], &[2.0]), None);
        assert_eq!(paired_dz(&A, &B), None);
    }

    // ---- multiple comparisons ----------------------------------------------

    #[test]
    fn bh_matches_statsmodels() {
        // multipletests(p, method='fdr_bh')[1]
        assert_vec(
            &bh_adjust(&[0.01, 0.04, 0.03, 0.005, 0.2, 0.04, 0.9]),
            &[0.035, 0.056, 0.056, 0.035, 0.23333333333333336, 0.056, 0.9],
            "bh 1",
        );
        assert_vec(&bh_adjust(&[0.5]), &[0.5], "bh single");
        assert_vec(
            &bh_adjust(&[1e-10, 0.5, 0.049, 0.051]),
            &[4e-10, 0.5, 0.06799999999999999, 0.06799999999999999],
            "bh 3",
        );
        assert_vec(
            &bh_adjust(&[0.3, 0.6, 0.02, 0.8, 0.35]),
            &[
                0.5833333333333334,
                0.7499999999999999,
                0.09999999999999999,
                0.8,
                0.5833333333333334,
            ],
            "bh 4",
        );
        assert!(bh_adjust(&[]).is_empty());
    }

    #[test]
    fn holm_matches_statsmodels() {
        // multipletests(p, method='holm')[1]
        assert_vec(
            &holm_adjust(&[0.01, 0.04, 0.03, 0.005, 0.2, 0.04, 0.9]),
            &[0.06, 0.16, 0.15, 0.035, 0.4, 0.16, 0.9],
            "holm 1",
        );
        assert_vec(&holm_adjust(&[0.5]), &[0.5], "holm single");
        assert_vec(
            &holm_adjust(&[1e-10, 0.5, 0.049, 0.051]),
            &[4e-10, 0.5, 0.14700000000000002, 0.14700000000000002],
            "holm 3",
        );
        // capped at 1
        assert_vec(
            &holm_adjust(&[0.3, 0.6, 0.02, 0.8, 0.35]),
            &[1.0, 1.0, 0.1, 1.0, 1.0],
            "holm 4",
        );
        assert!(holm_adjust(&[]).is_empty());
    }

    #[test]
    fn adjust_sanitizes_bad_input() {
        assert_eq!(bh_adjust(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert_eq!(holm_adjust(&[f64::NAN, 0.01]), vec![1.0, 0.02]);
        assert_eq!(holm_adjust(&[-0.5, 2.0]), vec![0.0, 1.0]);
    }

    // ---- Pearson -----------------------------------------------------------

    #[test]
    fn pearson_matches_numpy() {
        // np.corrcoef(x, y)[0, 1]
        let r = pearson(
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[2.0, 1.0, 4.0, 3.0, 7.0, 5.0],
        );
        assert_rel(r.unwrap(), 0.7917946548886295, "R1");
        // n = 3
        let r = pearson(&[1.0, 2.0, 3.0], &[3.0, 1.0, 1.5]);
        assert_rel(r.unwrap(), -0.720576692122892, "R2");
        // perfect negative
        let r = pearson(&[0.5, 1.5, 2.5, 3.5], &[-1.0, -3.0, -5.0, -7.0]);
        assert_rel(r.unwrap(), -1.0, "R3");
        let a = la();
        let pa = lpa(&a);
        assert_rel(pearson(&a, &pa).unwrap(), 0.8950391085890361, "LA,LPa");
        assert_rel(pearson(&a, &lb()).unwrap(), 0.005039193001467842, "LA,LB");
    }

    #[test]
    fn pearson_edge_cases() {
        assert_eq!(pearson(&[1.0, 2.0], &[2.0, 1.0]), None);
        assert_eq!(pearson(&[1.0, 2.0, 3.0], &[2.0, 2.0, 2.0]), None);
        assert_eq!(pearson(&[1.0, 2.0, 3.0], &[2.0, 1.0]), None);
        assert_eq!(pearson(&[1.0, 2.0, f64::NAN], &[2.0, 1.0, 0.0]), None);
    }

    // ---- special functions -------------------------------------------------

    #[test]
    fn ln_gamma_matches_scipy() {
        // scipy.special.gammaln(x)
        let cases = [
            (0.5, 0.5723649429247),
            (1.5, -0.12078223763524526),
            (3.7, 1.428072326665388),
            (10.0, 12.801827480081469),
            (100.25, 360.28455963776423),
            (10000.0, 82099.71749644238),
            (0.1, 2.252712651734206),
            (1e-5, 11.512919692895826),
        ];
        for (x, e) in cases {
            assert_rel(ln_gamma(x), e, &format!("gammaln({x})"));
        }
        assert!(ln_gamma(1.0).abs() < 1e-15);
        assert!(ln_gamma(0.0).is_nan());
    }

    #[test]
    fn reg_inc_beta_matches_scipy() {
        // scipy.special.betainc(a, b, x)
        let cases = [
            (0.5, 5.0, 0.1, 0.6833570849799877),
            (5000.0, 5000.0, 0.49, 0.02274203232457461),
            (2.0, 3.0, 0.9, 0.9963),
            (10000.0, 0.5, 0.9999, 0.1572940177633515),
            (0.5, 0.5, 0.3, 0.36901011956554536),
            (3.5, 1.25, 0.0001, 1.5731614214392094e-14),
        ];
        for (a, b, x, e) in cases {
            assert_rel(reg_inc_beta(a, b, x), e, &format!("betainc({a}, {b}, {x})"));
        }
        assert_eq!(reg_inc_beta(2.0, 3.0, 0.0), 0.0);
        assert_eq!(reg_inc_beta(2.0, 3.0, 1.0), 1.0);
        assert!(reg_inc_beta(-1.0, 3.0, 0.5).is_nan());
    }

    #[test]
    fn t_two_sided_p_matches_scipy() {
        // 2 * stats.t.sf(abs(t), df)
        let cases = [
            (2.0, 5.0, 0.10193947882985835),
            (0.001, 3.0, 0.9992648949694609),
            (50.0, 10.0, 2.47431032930268e-13),
            (1.96, 1e6, 0.04999606758526985),
            (-2.5, 0.5, 0.4009705290532932),
            (3.5, 17.3, 0.002684788370514295),
            (1.0, 1.0, 0.5000000000000001),
            (12.0, 19998.0, 4.615157798603873e-33),
        ];
        for (t, df, e) in cases {
            assert_p(t_two_sided_p(t, df), e, &format!("t p({t}, {df})"));
        }
        assert_eq!(t_two_sided_p(0.0, 7.0), 1.0);
        assert_eq!(t_two_sided_p(f64::INFINITY, 7.0), 0.0);
        assert_eq!(t_two_sided_p(1e200, 7.0), 0.0);
        assert!(t_two_sided_p(1.0, 0.0).is_nan());
    }

    #[test]
    fn f_cdf_matches_scipy() {
        // stats.f.cdf(f, dfn, dfd), stats.f.sf(f, dfn, dfd)
        let cases = [
            (1.0, 5.0, 7.0, 0.5187060870417944, 0.4812939129582055),
            (3.2, 2.0, 30.0, 0.9450081834438463, 0.05499181655615369),
            (0.05, 10.0, 4.0, 9.220214473478709e-05, 0.9999077978552652),
            (
                1.05,
                9999.0,
                9999.0,
                0.9926401777550705,
                0.007359822244929502,
            ),
            (400.0, 3.0, 3.0, 0.9997887449394249, 0.00021125506057509278),
            (0.5, 1.0, 1.0, 0.39182655203060723, 0.6081734479693928),
        ];
        for (f, d1, d2, cdf, sf) in cases {
            assert_p(f_cdf(f, d1, d2), cdf, &format!("f.cdf({f}, {d1}, {d2})"));
            assert_p(f_sf(f, d1, d2), sf, &format!("f.sf({f}, {d1}, {d2})"));
        }
        assert_eq!(f_cdf(0.0, 3.0, 4.0), 0.0);
        assert_eq!(f_cdf(-1.0, 3.0, 4.0), 0.0);
        assert_eq!(f_cdf(f64::INFINITY, 3.0, 4.0), 1.0);
        assert!(f_cdf(1.0, 0.0, 4.0).is_nan());
    }

    #[test]
    fn results_serialize_as_plain_numbers() {
        // The structs go into JSON: check the derive exists and field names.
        fn is_serialize<T: serde::Serialize>(_: &T) {}
        is_serialize(&summary(&A));
        is_serialize(&paired_t(&P1B, &P1A).unwrap());
        is_serialize(&f_test(&A, &B).unwrap());
    }
}
