//! Planning a model run (#16, point 5): how many repeats (trials per condition) the report's
//! two-sample test needs to detect a standardized effect `d` with a given α and power.
//!
//! The report compares a model's default trials with its evoked trials by a two-sided
//! two-sample t-test (Welch by default, Student in paper mode). With equal group sizes `n`
//! (a run asks each condition `repeats` times) and equal variances, Welch's degrees of freedom
//! equal Student's `2n − 2`, so the plan uses Student's test, as statsmodels'
//! `TTestIndPower` does:
//!
//! `power(n) = P(T' > c) + P(T' < −c)`, `T' ~ noncentral t(df = 2n − 2, δ = d·√(n/2))`,
//! `c = t_{1−α/2}(2n − 2)`,
//!
//! and the answer is the smallest integer `n ≥ 2` with `power(n) ≥ target`. Pure code; every
//! value is pinned against statsmodels (`TTestIndPower().solve_power`, `.power`) and
//! `scipy.stats.nct` by `tools/stats_reference.py`.

use super::stats::{ln_gamma, reg_inc_beta, t_two_sided_p};

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("the effect size must be a finite number other than 0, not {0}")]
    EffectSize(f64),
    #[error("α must be between 0 and 1 (exclusive), not {0}")]
    Alpha(f64),
    #[error("the power must be between 0 and 1 (exclusive), not {0}")]
    Power(f64),
    #[error("more than {MAX_REPEATS} repeats per condition would be needed")]
    TooMany,
}

/// The largest plan answered: beyond it the effect is too small to plan a run for.
pub const MAX_REPEATS: u32 = 10_000_000;

/// A plan: the repeats per condition and what they achieve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Plan {
    pub effect_size: f64,
    pub alpha: f64,
    /// The power asked for.
    pub power: f64,
    /// Trials per condition (per group of the test).
    pub repeats: u32,
    /// The power those repeats give (≥ `power`).
    pub achieved_power: f64,
    /// Degrees of freedom of the test, `2·repeats − 2`.
    pub df: f64,
    /// The two-sided critical value of t at α.
    pub critical_t: f64,
    /// Which test the plan is for.
    pub test: &'static str,
}

/// The repeats per condition needed (see the module doc).
pub fn plan(effect_size: f64, alpha: f64, power: f64) -> Result<Plan, PlanError> {
    if !effect_size.is_finite() || effect_size == 0.0 {
        return Err(PlanError::EffectSize(effect_size));
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(PlanError::Alpha(alpha));
    }
    if !(power > 0.0 && power < 1.0) {
        return Err(PlanError::Power(power));
    }
    let d = effect_size.abs();
    // Power grows with n: double until reached, then bisect for the smallest n.
    let (mut lo, mut hi) = (1u32, 2u32);
    while two_sample_power(d, hi, alpha) < power {
        if hi >= MAX_REPEATS {
            return Err(PlanError::TooMany);
        }
        lo = hi;
        hi = hi.saturating_mul(2).min(MAX_REPEATS);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if two_sample_power(d, mid, alpha) >= power {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let df = 2.0 * f64::from(hi) - 2.0;
    Ok(Plan {
        effect_size,
        alpha,
        power,
        repeats: hi,
        achieved_power: two_sample_power(d, hi, alpha),
        df,
        critical_t: t_critical(alpha, df),
        test: "two-sided two-sample t (Student; Welch's df with equal n and variances)",
    })
}

/// The power of the two-sided two-sample t-test with `n` observations per group for a
/// standardized effect `d` at level `alpha` (statsmodels `TTestIndPower().power(d, n, alpha)`).
/// `n < 2` gives 0 (no degrees of freedom).
pub fn two_sample_power(d: f64, n: u32, alpha: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let nf = f64::from(n);
    let df = 2.0 * nf - 2.0;
    let delta = d * (nf / 2.0).sqrt();
    let c = t_critical(alpha, df);
    let upper = 1.0 - nct_cdf(c, df, delta);
    let lower = nct_cdf(-c, df, delta);
    (upper + lower).clamp(0.0, 1.0)
}

/// `t` with `P(|T| ≥ t) = alpha` for Student's t with `df` degrees of freedom (as
/// `scipy.stats.t.isf(alpha / 2, df)`), by bisection on the exact two-sided p.
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    // The two-sided p falls as t grows: t is still below the answer while p > alpha.
    super::stats::bisect_crossing(|t| t_two_sided_p(t, df) > alpha)
}

/// The standard normal distribution function Φ(x), through `erfc(z) = Q(½, z²)` (the
/// regularized upper incomplete gamma function), accurate in relative terms in both tails.
pub fn normal_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let z = x / std::f64::consts::SQRT_2;
    if z < 0.0 {
        0.5 * gamma_q(0.5, z * z)
    } else {
        1.0 - 0.5 * gamma_q(0.5, z * z)
    }
}

/// Regularized upper incomplete gamma `Q(a, x)` for `a > 0`, `x ≥ 0`: the series for `P`
/// below `x < a + 1`, the continued fraction (modified Lentz) for `Q` above.
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    if x.is_infinite() {
        return 0.0;
    }
    let front = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut ap, mut term) = (a, 1.0 / a);
        let mut sum = term;
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        (1.0 - sum * front).clamp(0.0, 1.0)
    } else {
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -f64::from(i) * (f64::from(i) - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-17 {
                break;
            }
        }
        (front * h).clamp(0.0, 1.0)
    }
}

/// The distribution function of the noncentral t with `df` degrees of freedom and
/// noncentrality `delta` (as `scipy.stats.nct.cdf(t, df, delta)`): Lenth's algorithm AS 243
/// (Applied Statistics 38, 1989), the series R's `pnt` uses, with its error bound 1e-12;
/// for very large `df` or `|δ|` (where the Poisson weights underflow) R's normal
/// approximation.
pub fn nct_cdf(t: f64, df: f64, delta: f64) -> f64 {
    const ERRMAX: f64 = 1e-12;
    const ITRMAX: u32 = 1000;
    let (tt, del, negdel) = if t >= 0.0 {
        (t, delta, false)
    } else {
        (-t, -delta, true)
    };
    if df > 4e5 || del * del > 2.0 * std::f64::consts::LN_2 * 1021.0 {
        // Abramowitz & Stegun 26.7.10, as R.
        let s = 1.0 / (4.0 * df);
        let z = (tt * (1.0 - s) - del) / (1.0 + tt * tt * 2.0 * s).sqrt();
        let lower = normal_cdf(z);
        return if negdel { 1.0 - lower } else { lower };
    }
    let x = tt * tt / (tt * tt + df);
    let mut tnc = 0.0;
    if x > 0.0 {
        let lambda = del * del;
        let mut p = 0.5 * (-0.5 * lambda).exp();
        let mut q = (2.0 / std::f64::consts::PI).sqrt() * p * del;
        let mut s = 0.5 - p;
        if s < 1e-7 {
            s = -0.5 * (-0.5 * lambda).exp_m1();
        }
        let mut a = 0.5;
        let b = 0.5 * df;
        let rxb = (1.0 - x).powf(b);
        let albeta = 0.5 * std::f64::consts::PI.ln() + ln_gamma(b) - ln_gamma(0.5 + b);
        let mut xodd = reg_inc_beta(a, b, x);
        let mut godd = 2.0 * rxb * (a * x.ln() - albeta).exp();
        let bx = b * x;
        let mut xeven = if bx < f64::EPSILON { bx } else { 1.0 - rxb };
        let mut geven = bx * rxb;
        tnc = p * xodd + q * xeven;
        for it in 1..=ITRMAX {
            a += 1.0;
            xodd -= godd;
            xeven -= geven;
            godd *= x * (a + b - 1.0) / a;
            geven *= x * (a + b - 0.5) / (a + 0.5);
            p *= lambda / f64::from(2 * it);
            q *= lambda / f64::from(2 * it + 1);
            tnc += p * xodd + q * xeven;
            s -= p;
            if s < -1e-10 || (s <= 0.0 && it > 1) {
                break;
            }
            if (2.0 * s * (xodd - godd)).abs() < ERRMAX {
                break;
            }
        }
    }
    tnc += normal_cdf(-del);
    let tnc = tnc.min(1.0);
    if negdel { 1.0 - tnc } else { tnc }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b} (tol {tol})");
    }

    // Pinned from tools/stats_reference.py, power_reference() (scipy.stats.norm / t / nct,
    // statsmodels TTestIndPower).
    #[test]
    fn normal_cdf_matches_scipy() {
        close(normal_cdf(0.0), 0.5, 1e-16);
        close(normal_cdf(1.96), 0.9750021048517795, 1e-15);
        close(normal_cdf(-1.0), 0.15865525393145707, 1e-15);
        let tail = normal_cdf(-8.0);
        assert!((tail / 6.22096057427174e-16 - 1.0).abs() < 1e-12, "{tail}");
    }

    #[test]
    fn t_critical_matches_scipy() {
        close(t_critical(0.05, 10.0), 2.2281388519862753, 1e-12);
        close(t_critical(0.01, 126.0), 2.615412127078789, 1e-12);
        close(t_critical(0.05, 2.0), 4.302652729749464, 1e-12);
    }

    #[test]
    fn noncentral_t_matches_scipy() {
        close(nct_cdf(1.5, 10.0, 2.0), 0.3047854473760421, 1e-11);
        close(nct_cdf(-1.0, 5.0, 1.0), 0.030807353260750292, 1e-11);
        close(nct_cdf(2.0, 30.0, 3.0), 0.16241420800393983, 1e-11);
        close(nct_cdf(0.0, 7.0, -0.5), 0.6914624612740131, 1e-11);
        close(nct_cdf(-2.5, 200.0, -1.0), 0.06872537848749606, 1e-11);
    }

    #[test]
    fn power_matches_statsmodels() {
        close(two_sample_power(0.5, 64, 0.05), 0.8014595579222542, 1e-10);
        close(two_sample_power(0.8, 20, 0.01), 0.43797260451926584, 1e-10);
        close(two_sample_power(1.0, 2, 0.05), 0.09520175549788396, 1e-10);
        assert_eq!(two_sample_power(1.0, 1, 0.05), 0.0);
    }

    // statsmodels TTestIndPower().solve_power(d, alpha=a, power=p) (fractional), rounded up.
    #[test]
    fn plan_matches_statsmodels_solve_power() {
        for (d, a, p, n) in [
            (0.5, 0.05, 0.8, 64),
            (0.2, 0.05, 0.8, 394),
            (0.8, 0.01, 0.9, 49),
            (1.5, 0.05, 0.95, 13),
            (2.5, 0.05, 0.8, 4),
            (-0.5, 0.05, 0.8, 64),
        ] {
            let plan = plan(d, a, p).unwrap();
            assert_eq!(plan.repeats, n, "d={d} α={a} power={p}");
            assert!(plan.achieved_power >= p);
            assert!(two_sample_power(d.abs(), n - 1, a) < p);
            close(plan.df, 2.0 * f64::from(n) - 2.0, 0.0);
        }
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert_eq!(plan(0.0, 0.05, 0.8), Err(PlanError::EffectSize(0.0)));
        assert!(matches!(
            plan(f64::NAN, 0.05, 0.8),
            Err(PlanError::EffectSize(_))
        ));
        assert_eq!(plan(0.5, 1.0, 0.8), Err(PlanError::Alpha(1.0)));
        assert_eq!(plan(0.5, 0.05, 0.0), Err(PlanError::Power(0.0)));
        assert_eq!(plan(1e-6, 0.05, 0.99), Err(PlanError::TooMany));
    }
}
