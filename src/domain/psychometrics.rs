//! Reliability of a scale: Cronbach's α and McDonald's ω (total) for an
//! `n_respondents × k_items` answer matrix (#16).
//!
//! Pure, no I/O. Every value is checked against an independent computation:
//! `tools/stats_reference.py` (pingouin for α; numpy for ω, cross-checked by a
//! scipy minres fit) prints the numbers pinned in the tests below.
//!
//! # Missing answers
//! A respondent with any missing (`None`) answer is left out entirely
//! (listwise deletion, pingouin's `nan_policy="listwise"`). Pingouin's default
//! is pairwise covariances, which can give a covariance matrix no respondent
//! set produced (and even α > 1); listwise keeps α and ω computed on one and
//! the same set of people, which is what a report can state ("n = …").
//!
//! # Errors
//! Undefined results are a typed [`ReliabilityError`], never NaN and never a
//! panic: fewer than 2 items or 2 complete respondents, rows of different
//! lengths, non-finite answers, zero total variance (α), an item without
//! variance (ω works on correlations), and a one-factor fit that does not
//! converge or is improper (a communality above 1, a "Heywood case").

/// Why a reliability coefficient could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReliabilityError {
    #[error("need at least 2 items, got {0}")]
    TooFewItems(usize),
    #[error("need at least 2 respondents with every answer, got {0}")]
    TooFewRespondents(usize),
    #[error("respondent {row} has {len} answers, expected {expected}")]
    RaggedRow {
        row: usize,
        len: usize,
        expected: usize,
    },
    #[error("respondent {row}, item {item}: the answer is not a finite number")]
    NotFinite { row: usize, item: usize },
    #[error("the total score has no variance")]
    ZeroTotalVariance,
    #[error("item {0} has no variance (every respondent gave the same answer)")]
    ZeroItemVariance(usize),
    #[error("the one-factor fit did not converge in {0} iterations")]
    NoConvergence(usize),
    #[error("the one-factor fit is improper (item {0} has a communality above 1)")]
    Heywood(usize),
}

/// The answers of the respondents that answered every item, after checking
/// the matrix's shape and values.
fn complete_rows(rows: &[Vec<Option<f64>>]) -> Result<Vec<Vec<f64>>, ReliabilityError> {
    let k = rows.first().map_or(0, Vec::len);
    if k < 2 {
        return Err(ReliabilityError::TooFewItems(k));
    }
    let mut complete = Vec::with_capacity(rows.len());
    for (row, answers) in rows.iter().enumerate() {
        if answers.len() != k {
            return Err(ReliabilityError::RaggedRow {
                row,
                len: answers.len(),
                expected: k,
            });
        }
        if let Some(item) = answers
            .iter()
            .position(|a| a.is_some_and(|v| !v.is_finite()))
        {
            return Err(ReliabilityError::NotFinite { row, item });
        }
        if let Some(values) = answers.iter().copied().collect::<Option<Vec<f64>>>() {
            complete.push(values);
        }
    }
    if complete.len() < 2 {
        return Err(ReliabilityError::TooFewRespondents(complete.len()));
    }
    Ok(complete)
}

/// Sample covariance matrix (`ddof = 1`, as pandas' `DataFrame.cov`).
fn covariance(x: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = x.len() as f64;
    let k = x[0].len();
    let means: Vec<f64> = (0..k)
        .map(|j| x.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let mut c = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in i..k {
            let s: f64 = x
                .iter()
                .map(|r| (r[i] - means[i]) * (r[j] - means[j]))
                .sum();
            c[i][j] = s / (n - 1.0);
            c[j][i] = c[i][j];
        }
    }
    c
}

/// Cronbach's α, as pingouin's `cronbach_alpha(data, nan_policy="listwise")`:
/// `α = k/(k−1) · (1 − tr(C) / ΣC)` with `C` the sample covariance matrix
/// (`ddof = 1`; the ratio makes the choice of ddof cancel). Pingouin's source:
/// `pingouin/reliability.py`, `C = data.cov(); k / (k - 1) * (1 - np.trace(C) / C.sum().sum())`.
///
/// `rows[r][i]` is respondent `r`'s answer to item `i`, `None` when missing
/// (such respondents are dropped, see the module doc). α can be negative when
/// items correlate negatively (reverse-keyed items not reversed): that is
/// returned as is, it is information.
pub fn cronbach_alpha(rows: &[Vec<Option<f64>>]) -> Result<f64, ReliabilityError> {
    let x = complete_rows(rows)?;
    let c = covariance(&x);
    let k = c.len() as f64;
    let trace: f64 = (0..c.len()).map(|i| c[i][i]).sum();
    let total: f64 = c.iter().flatten().sum();
    // Relative threshold: identical totals leave rounding noise, not variance.
    if total <= trace.abs() * 1e-12 || total <= 0.0 {
        return Err(ReliabilityError::ZeroTotalVariance);
    }
    Ok(k / (k - 1.0) * (1.0 - trace / total))
}

/// Convergence threshold of the principal-axis iterations (largest change of
/// a communality), and their cap.
const OMEGA_TOL: f64 = 1e-12;
const OMEGA_MAX_ITER: usize = 10_000;

/// McDonald's ω (total) from a one-factor model fitted to the items'
/// correlation matrix by **iterated principal-axis factoring** (`psych::fa(fm
/// = "pa")`; at convergence this is the minimum-residual / unweighted least
/// squares solution, which `tools/stats_reference.py` checks with an
/// independent scipy `least_squares` fit):
///
/// 1. `R` = the Pearson correlations of the complete respondents;
/// 2. start with communalities `h = 1`; repeat: put `h` on the diagonal of
///    `R`, take its largest eigenvalue `e` and eigenvector `v`, loadings
///    `λ = √e · v` (sign chosen so `Σλ ≥ 0`), `h = λ²`; stop when no `h`
///    changes by more than 1e-12 (at most 10 000 rounds);
/// 3. `ω = (Σλ)² / ((Σλ)² + Σ(1 − λ²))`, the model-implied share of the
///    standardized total score's variance due to the common factor
///    (McDonald 1999). `psych::omega`'s `omega.tot` divides by the observed
///    `1ᵀR1` instead, which differs slightly when the model does not fit.
///
/// Errors: as [`cronbach_alpha`], plus an item with no variance, no
/// convergence, or an improper solution (a communality above 1).
pub fn mcdonald_omega(rows: &[Vec<Option<f64>>]) -> Result<f64, ReliabilityError> {
    let x = complete_rows(rows)?;
    let r = correlation(&x)?;
    let lambda = one_factor_pa(&r)?;
    let s: f64 = lambda.iter().sum();
    let unique: f64 = lambda.iter().map(|l| 1.0 - l * l).sum();
    Ok(s * s / (s * s + unique))
}

fn correlation(x: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, ReliabilityError> {
    let c = covariance(x);
    let sd: Vec<f64> = (0..c.len()).map(|i| c[i][i].sqrt()).collect();
    if let Some(item) = sd.iter().position(|&s| s <= 0.0 || !s.is_finite()) {
        return Err(ReliabilityError::ZeroItemVariance(item));
    }
    let k = c.len();
    Ok((0..k)
        .map(|i| {
            (0..k)
                .map(|j| {
                    if i == j {
                        1.0
                    } else {
                        (c[i][j] / (sd[i] * sd[j])).clamp(-1.0, 1.0)
                    }
                })
                .collect()
        })
        .collect())
}

/// One-factor loadings by iterated principal axes (see [`mcdonald_omega`]).
fn one_factor_pa(r: &[Vec<f64>]) -> Result<Vec<f64>, ReliabilityError> {
    let k = r.len();
    let mut h = vec![1.0; k];
    // The previous round's eigenvector: the reduced matrix changes a little per round, so
    // from it a few power steps find the new one. A full Jacobi decomposition each round
    // was half of `bench report` (perf, BENCHMARKS.md); Jacobi stays the first round's
    // solver and the fallback when the power steps do not settle.
    let mut previous: Option<Vec<f64>> = None;
    for _ in 0..OMEGA_MAX_ITER {
        let mut reduced = r.to_vec();
        for (i, row) in reduced.iter_mut().enumerate() {
            row[i] = h[i];
        }
        // R is a correlation matrix (positive semi-definite), so R − diag(1 − h) has no
        // eigenvalue below −max(1 − h): a far tighter floor than Gershgorin's, and the
        // power steps converge about as fast as the top eigenvalue stands out.
        let floor = -h.iter().map(|hi| 1.0 - hi).fold(0.0, f64::max);
        let (e, v) = match previous
            .as_deref()
            .and_then(|start| top_eigen_from(&reduced, start, floor))
        {
            Some(pair) => pair,
            None => top_eigen(reduced),
        };
        previous = Some(v.clone());
        if e <= 0.0 {
            return Err(ReliabilityError::NoConvergence(OMEGA_MAX_ITER));
        }
        let mut lambda: Vec<f64> = v.iter().map(|vi| e.sqrt() * vi).collect();
        if lambda.iter().sum::<f64>() < 0.0 {
            lambda.iter_mut().for_each(|l| *l = -*l);
        }
        let change = lambda
            .iter()
            .zip(&h)
            .map(|(l, hi)| (l * l - hi).abs())
            .fold(0.0, f64::max);
        h = lambda.iter().map(|l| l * l).collect();
        if let Some(item) = h.iter().position(|&hi| hi > 1.0 + 1e-9) {
            return Err(ReliabilityError::Heywood(item));
        }
        if change < OMEGA_TOL {
            return Ok(lambda);
        }
    }
    Err(ReliabilityError::NoConvergence(OMEGA_MAX_ITER))
}

/// Power steps allowed per round before falling back to Jacobi, and when they
/// have settled (largest change of a component of the unit vector).
const POWER_MAX_STEPS: usize = 500;
const POWER_TOL: f64 = 1e-15;

/// Largest (algebraic) eigenvalue and its unit eigenvector of a symmetric
/// matrix by power iteration from `start`, on `A − cI` with `c` a lower bound
/// of the spectrum (when negative: the tighter of `floor`, which the caller
/// knows to be one, and Gershgorin's) so that every eigenvalue of the shifted
/// matrix is ≥ 0 and the largest algebraic one dominates, as [`top_eigen`]
/// picks it. The eigenvalue is the Rayleigh quotient `vᵀAv`. `None` when the
/// steps do not settle (close or repeated top eigenvalues, a start orthogonal
/// to the answer): the caller then uses Jacobi.
fn top_eigen_from(a: &[Vec<f64>], start: &[f64], floor: f64) -> Option<(f64, Vec<f64>)> {
    let k = a.len();
    let gershgorin = (0..k)
        .map(|i| {
            let off: f64 = (0..k).filter(|&j| j != i).map(|j| a[i][j].abs()).sum();
            a[i][i] - off
        })
        .fold(0.0, f64::min);
    let shift = gershgorin.max(floor).min(0.0);
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let n0 = norm(start);
    if !(n0 > 0.0 && n0.is_finite()) {
        return None;
    }
    let mut v: Vec<f64> = start.iter().map(|x| x / n0).collect();
    let mut w = vec![0.0; k];
    for _ in 0..POWER_MAX_STEPS {
        for (wi, row) in w.iter_mut().zip(a) {
            *wi = row.iter().zip(&v).map(|(x, y)| x * y).sum::<f64>();
        }
        for (wi, vi) in w.iter_mut().zip(&v) {
            *wi -= shift * vi;
        }
        let n = norm(&w);
        if !(n > 0.0 && n.is_finite()) {
            return None;
        }
        let mut change: f64 = 0.0;
        for (wi, vi) in w.iter_mut().zip(v.iter_mut()) {
            *wi /= n;
            change = change.max((*wi - *vi).abs());
            *vi = *wi;
        }
        if change < POWER_TOL * (k as f64) {
            let e: f64 = a
                .iter()
                .zip(&v)
                .map(|(row, vi)| vi * row.iter().zip(&v).map(|(x, y)| x * y).sum::<f64>())
                .sum();
            return Some((e, v));
        }
    }
    None
}

/// Largest eigenvalue and its unit eigenvector of a symmetric matrix, by the
/// cyclic Jacobi method (exact to rounding for the small matrices of a scale).
fn top_eigen(mut a: Vec<Vec<f64>>) -> (f64, Vec<f64>) {
    let k = a.len();
    let mut v: Vec<Vec<f64>> = (0..k)
        .map(|i| (0..k).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
        .collect();
    for _sweep in 0..100 {
        let off: f64 = (0..k)
            .flat_map(|i| (0..k).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..k {
            for q in p + 1..k {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let sign = if theta >= 0.0 { 1.0 } else { -1.0 };
                let t = sign / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (x, y) = (row[p], row[q]);
                    row[p] = c * x - s * y;
                    row[q] = s * x + c * y;
                }
                let (head, tail) = a.split_at_mut(q);
                for (x, y) in head[p].iter_mut().zip(tail[0].iter_mut()) {
                    let (xv, yv) = (*x, *y);
                    *x = c * xv - s * yv;
                    *y = s * xv + c * yv;
                }
                for row in v.iter_mut() {
                    let (x, y) = (row[p], row[q]);
                    row[p] = c * x - s * y;
                    row[q] = s * x + c * y;
                }
            }
        }
    }
    let top = (0..k)
        .max_by(|&i, &j| a[i][i].total_cmp(&a[j][j]))
        .unwrap_or(0);
    (a[top][top], v.iter().map(|row| row[top]).collect())
}

#[cfg(test)]
mod tests {
    //! Pinned values come from `tools/stats_reference.py` (pingouin 0.5 for α;
    //! numpy principal axes for ω, agreeing with scipy's minres fit to 1e-11).
    //! The datasets are copied verbatim from that script.
    use super::*;

    fn m(rows: &[&[f64]]) -> Vec<Vec<Option<f64>>> {
        rows.iter()
            .map(|r| r.iter().map(|&v| Some(v)).collect())
            .collect()
    }

    fn alpha_small() -> Vec<Vec<Option<f64>>> {
        m(&[
            &[1., 1., 1.],
            &[2., 1., 1.],
            &[2., 1., 2.],
            &[3., 2., 1.],
            &[2., 3., 2.],
            &[2., 3., 3.],
            &[3., 2., 3.],
            &[3., 3., 3.],
            &[2., 3., 2.],
            &[3., 3., 3.],
        ])
    }

    fn items_12x5() -> Vec<Vec<Option<f64>>> {
        m(&[
            &[3., 5., 4., 3., 4.],
            &[2., 2., 3., 2., 1.],
            &[4., 3., 3., 4., 3.],
            &[5., 4., 5., 5., 4.],
            &[1., 2., 1., 2., 2.],
            &[3., 4., 3., 3., 4.],
            &[4., 4., 5., 3., 3.],
            &[3., 3., 2., 2., 3.],
            &[5., 5., 4., 4., 5.],
            &[3., 2., 3., 3., 2.],
            &[1., 1., 2., 1., 2.],
            &[4., 3., 4., 5., 4.],
        ])
    }

    fn heywood() -> Vec<Vec<Option<f64>>> {
        let mut x = items_12x5();
        for (row, v) in [(0, 4.), (2, 3.), (7, 2.)] {
            x[row][0] = Some(v);
        }
        x
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }

    #[test]
    fn alpha_matches_pingouin() {
        close(cronbach_alpha(&alpha_small()).unwrap(), 0.7734375);
        close(cronbach_alpha(&items_12x5()).unwrap(), 0.9286430900426386);
    }

    #[test]
    fn alpha_drops_incomplete_respondents_listwise_as_pingouin() {
        let mut x = items_12x5();
        x[1][2] = None;
        x[4][0] = None;
        x[9][4] = None;
        close(cronbach_alpha(&x).unwrap(), 0.9107142857142858);
        // Same as removing those rows by hand.
        let kept: Vec<_> = items_12x5()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| ![1, 4, 9].contains(i))
            .map(|(_, r)| r)
            .collect();
        close(cronbach_alpha(&kept).unwrap(), 0.9107142857142858);
    }

    #[test]
    fn alpha_can_be_negative_for_opposed_items() {
        let x = m(&[&[1., 5.], &[2., 4.], &[3., 3.], &[5., 2.]]);
        assert!(cronbach_alpha(&x).unwrap() < 0.0);
    }

    #[test]
    fn omega_matches_the_reference_one_factor_fit() {
        close(mcdonald_omega(&items_12x5()).unwrap(), 0.9294974615475312);
        close(mcdonald_omega(&alpha_small()).unwrap(), 0.7860417257520687);
    }

    #[test]
    fn omega_refuses_a_heywood_case() {
        assert_eq!(
            mcdonald_omega(&heywood()),
            Err(ReliabilityError::Heywood(0))
        );
        // α is still defined there.
        assert!(cronbach_alpha(&heywood()).is_ok());
    }

    #[test]
    fn degenerate_inputs_are_typed_errors() {
        use ReliabilityError::*;
        assert_eq!(cronbach_alpha(&[]), Err(TooFewItems(0)));
        assert_eq!(cronbach_alpha(&m(&[&[1.], &[2.]])), Err(TooFewItems(1)));
        assert_eq!(cronbach_alpha(&m(&[&[1., 2.]])), Err(TooFewRespondents(1)));
        let mut x = items_12x5();
        x.iter_mut().skip(1).for_each(|r| r[0] = None);
        assert_eq!(cronbach_alpha(&x), Err(TooFewRespondents(1)));
        assert_eq!(
            cronbach_alpha(&m(&[&[1., 2.], &[1., 2., 3.]])),
            Err(RaggedRow {
                row: 1,
                len: 3,
                expected: 2
            })
        );
        let mut x = items_12x5();
        x[3][1] = Some(f64::NAN);
        assert_eq!(cronbach_alpha(&x), Err(NotFinite { row: 3, item: 1 }));
        assert_eq!(
            cronbach_alpha(&m(&[&[3., 3.], &[3., 3.], &[3., 3.]])),
            Err(ZeroTotalVariance)
        );
        assert_eq!(
            mcdonald_omega(&m(&[&[1., 3.], &[2., 3.], &[3., 3.]])),
            Err(ZeroItemVariance(1))
        );
    }

    #[test]
    fn top_eigen_of_a_known_matrix() {
        // [[2, 1], [1, 2]] has eigenvalues 3 and 1; the top vector is (1, 1)/√2.
        let (e, v) = top_eigen(vec![vec![2.0, 1.0], vec![1.0, 2.0]]);
        close(e, 3.0);
        close(v[0].abs(), std::f64::consts::FRAC_1_SQRT_2);
        close(v[0], v[1]);
    }

    #[test]
    fn power_steps_find_the_largest_algebraic_eigenvalue_as_jacobi_does() {
        // [[2, 1], [1, 2]] from a start off the answer.
        let (e, v) = top_eigen_from(&[vec![2.0, 1.0], vec![1.0, 2.0]], &[1.0, 0.2], -1.0).unwrap();
        close(e, 3.0);
        close(v[0], std::f64::consts::FRAC_1_SQRT_2);
        close(v[1], std::f64::consts::FRAC_1_SQRT_2);
        // Eigenvalues 1 and −3: the shift makes 1 (Jacobi's pick) dominate, not −3.
        let a = vec![vec![-1.0, 2.0], vec![2.0, -1.0]];
        let (e, v) = top_eigen_from(&a, &[1.0, 0.0], f64::NEG_INFINITY).unwrap();
        let (je, jv) = top_eigen(a);
        close(e, je);
        close(e, 1.0);
        close(v[0].abs(), jv[0].abs());
        // A repeated top eigenvalue does not settle on one vector from every start: the
        // caller falls back to Jacobi; a zero start is refused.
        assert!(top_eigen_from(&[vec![1.0, 0.0], vec![0.0, 1.0]], &[0.0, 0.0], 0.0).is_none());
    }

    #[test]
    fn the_warm_started_fit_gives_the_full_jacobi_fit() {
        // Every round by Jacobi, as before the power steps: same loadings to 1e-10.
        for x in [items_12x5(), alpha_small()] {
            let r = correlation(&complete_rows(&x).unwrap()).unwrap();
            let fast = one_factor_pa(&r).unwrap();
            let mut h = vec![1.0; r.len()];
            let mut slow = Vec::new();
            for _ in 0..OMEGA_MAX_ITER {
                let mut reduced = r.clone();
                for (i, row) in reduced.iter_mut().enumerate() {
                    row[i] = h[i];
                }
                let (e, v) = top_eigen(reduced);
                slow = v.iter().map(|vi| e.sqrt() * vi).collect::<Vec<f64>>();
                if slow.iter().sum::<f64>() < 0.0 {
                    slow.iter_mut().for_each(|l| *l = -*l);
                }
                let change = slow
                    .iter()
                    .zip(&h)
                    .map(|(l, hi)| (l * l - hi).abs())
                    .fold(0.0, f64::max);
                h = slow.iter().map(|l| l * l).collect();
                if change < OMEGA_TOL {
                    break;
                }
            }
            for (a, b) in fast.iter().zip(&slow) {
                assert!((a - b).abs() < 1e-10, "{a} vs {b}");
            }
        }
    }
}
