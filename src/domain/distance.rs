//! Distributional distances between human and model answers (#16):
//! Wasserstein-1 between two samples on the answer scale and the
//! Jensen–Shannon distance between two answer histograms.
//!
//! Pure, no I/O; the values are checked against scipy by
//! `tools/stats_reference.py` (pinned in the tests below).

/// Why a distance could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistanceError {
    #[error("sample {0} is empty")]
    EmptySample(char),
    #[error("histogram {0} is empty (no category has a count)")]
    EmptyHistogram(char),
    #[error("the histograms have {0} and {1} categories")]
    CategoryMismatch(usize, usize),
    #[error("a value or count is not a finite number")]
    NotFinite,
    #[error("a count is negative")]
    NegativeCount,
}

/// Wasserstein-1 (earth mover's) distance between the empirical
/// distributions of two samples, `∫ |F_u(x) − F_v(x)| dx`, in the units of the
/// answer scale: equal to `scipy.stats.wasserstein_distance(u, v)` (unweighted).
/// On a 1..5 scale, moving every answer up by one step costs exactly 1.
///
/// The samples may differ in size; errors for an empty sample or a non-finite
/// value.
pub fn wasserstein_1(u: &[f64], v: &[f64]) -> Result<f64, DistanceError> {
    if u.is_empty() {
        return Err(DistanceError::EmptySample('u'));
    }
    if v.is_empty() {
        return Err(DistanceError::EmptySample('v'));
    }
    if !u.iter().chain(v).all(|x| x.is_finite()) {
        return Err(DistanceError::NotFinite);
    }
    let sorted = |x: &[f64]| {
        let mut s = x.to_vec();
        s.sort_by(f64::total_cmp);
        s
    };
    let (u, v) = (sorted(u), sorted(v));
    let mut all: Vec<f64> = u.iter().chain(&v).copied().collect();
    all.sort_by(f64::total_cmp);
    // Between consecutive pooled values both CDFs are constant: add
    // |F_u − F_v| times the width of each step.
    let cdf = |s: &[f64], x: f64| s.partition_point(|&y| y <= x) as f64 / s.len() as f64;
    let total = all
        .windows(2)
        .map(|w| (cdf(&u, w[0]) - cdf(&v, w[0])).abs() * (w[1] - w[0]))
        .sum();
    Ok(total)
}

/// Jensen–Shannon **distance** (the square root of the divergence) between two
/// histograms over the same categories, with base-2 logarithms so it lies in
/// `[0, 1]`: equal to `scipy.spatial.distance.jensenshannon(p, q, base=2)`.
///
/// `p` and `q` are counts (or any non-negative weights) per category, each
/// normalized to sum 1 here. Errors: different numbers of categories, no
/// categories, a histogram whose counts sum to zero (an empty histogram has
/// no distribution to compare), or a negative or non-finite count.
pub fn jensen_shannon(p: &[f64], q: &[f64]) -> Result<f64, DistanceError> {
    if p.len() != q.len() {
        return Err(DistanceError::CategoryMismatch(p.len(), q.len()));
    }
    if !p.iter().chain(q).all(|x| x.is_finite()) {
        return Err(DistanceError::NotFinite);
    }
    if p.iter().chain(q).any(|&x| x < 0.0) {
        return Err(DistanceError::NegativeCount);
    }
    let (sp, sq): (f64, f64) = (p.iter().sum(), q.iter().sum());
    if sp <= 0.0 {
        return Err(DistanceError::EmptyHistogram('p'));
    }
    if sq <= 0.0 {
        return Err(DistanceError::EmptyHistogram('q'));
    }
    // Σ a·ln(a/m), with 0·ln 0 = 0 (scipy's rel_entr).
    let kl = |a: f64, m: f64| if a > 0.0 { a * (a / m).ln() } else { 0.0 };
    let divergence: f64 = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            let (a, b) = (a / sp, b / sq);
            let m = (a + b) / 2.0;
            (kl(a, m) + kl(b, m)) / 2.0
        })
        .sum();
    // Rounding can leave a tiny negative divergence for identical histograms.
    Ok((divergence.max(0.0) / std::f64::consts::LN_2).sqrt())
}

#[cfg(test)]
mod tests {
    //! Pinned values from `tools/stats_reference.py` (scipy
    //! `wasserstein_distance`, `jensenshannon(base=2)`); same arrays.
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn wasserstein_matches_scipy() {
        let u = [1., 2., 2., 3., 4., 5., 5., 5.];
        let v = [1., 1., 2., 2., 2., 3., 3., 4., 5.];
        close(wasserstein_1(&u, &v).unwrap(), 0.8194444444444444);
        close(wasserstein_1(&v, &u).unwrap(), 0.8194444444444444);
        close(
            wasserstein_1(&[0.5, 3.25, -1.0], &[2.0]).unwrap(),
            1.9166666666666667,
        );
    }

    #[test]
    fn wasserstein_is_the_shift_on_the_scale() {
        let u = [1., 2., 3., 4.];
        let v = [2., 3., 4., 5.];
        close(wasserstein_1(&u, &v).unwrap(), 1.0);
        close(wasserstein_1(&u, &u).unwrap(), 0.0);
    }

    #[test]
    fn wasserstein_errors() {
        assert_eq!(
            wasserstein_1(&[], &[1.]),
            Err(DistanceError::EmptySample('u'))
        );
        assert_eq!(
            wasserstein_1(&[1.], &[]),
            Err(DistanceError::EmptySample('v'))
        );
        assert_eq!(
            wasserstein_1(&[1., f64::NAN], &[1.]),
            Err(DistanceError::NotFinite)
        );
    }

    #[test]
    fn jensen_shannon_matches_scipy_base_2() {
        let p = [3., 0., 5., 2., 0.];
        let q = [1., 4., 4., 0., 1.];
        close(jensen_shannon(&p, &q).unwrap(), 0.6259074597582085);
        close(jensen_shannon(&q, &p).unwrap(), 0.6259074597582085);
        close(
            jensen_shannon(&[10., 20., 30.], &[0.2, 0.5, 0.3]).unwrap(),
            0.17727035577461916,
        );
        close(jensen_shannon(&p, &p).unwrap(), 0.0);
        // Disjoint supports: the maximum, 1 in base 2.
        close(jensen_shannon(&[1., 0.], &[0., 7.]).unwrap(), 1.0);
    }

    #[test]
    fn jensen_shannon_errors() {
        use DistanceError::*;
        assert_eq!(
            jensen_shannon(&[0., 0.], &[1., 2.]),
            Err(EmptyHistogram('p'))
        );
        assert_eq!(
            jensen_shannon(&[1., 2.], &[0., 0.]),
            Err(EmptyHistogram('q'))
        );
        assert_eq!(jensen_shannon(&[], &[]), Err(EmptyHistogram('p')));
        assert_eq!(
            jensen_shannon(&[1.], &[1., 2.]),
            Err(CategoryMismatch(1, 2))
        );
        assert_eq!(jensen_shannon(&[-1., 2.], &[1., 2.]), Err(NegativeCount));
        assert_eq!(
            jensen_shannon(&[f64::INFINITY, 2.], &[1., 2.]),
            Err(NotFinite)
        );
    }
}
