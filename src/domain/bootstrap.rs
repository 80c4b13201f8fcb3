//! Seeded percentile bootstrap confidence intervals (#16).
//!
//! Pure: the random stream is `ChaCha8Rng::seed_from_u64(seed)`, so the same
//! data, seed and number of resamples give the same interval on every machine
//! and every run; a report can print the seed and a reader can reproduce it.
//!
//! Checked how: numpy cannot draw ChaCha8's stream, so the exact interval is
//! pinned by seed in Rust, and `tools/stats_reference.py` computes numpy's
//! percentile bootstrap of the same data (B = 20 000) which the tests require
//! to agree within Monte-Carlo tolerance.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A percentile bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BootstrapCi {
    pub low: f64,
    pub high: f64,
    /// Resamples on which the statistic was defined (the others are left out).
    pub resamples: usize,
}

/// Why no interval could be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BootstrapError {
    #[error("no data to resample")]
    Empty,
    #[error("need at least one resample")]
    NoResamples,
    #[error("the statistic is undefined on {undefined} of {resamples} resamples")]
    Undefined { undefined: usize, resamples: usize },
}

/// 95 % percentile bootstrap interval of `statistic` over `data`.
///
/// Draws `resamples` samples of `data.len()` indices uniformly with
/// replacement from `ChaCha8Rng::seed_from_u64(seed)` (row by row, index by
/// index), evaluates `statistic` on each, and returns the 2.5th and 97.5th
/// percentiles with linear interpolation (numpy's default `percentile`).
///
/// The statistic returns `None` where it is undefined (e.g. a correlation on
/// a resample without variance); such resamples are left out and counted, but
/// if more than half are undefined the interval would describe a different
/// population, so that is an error.
pub fn percentile_ci<T: Clone>(
    data: &[T],
    seed: u64,
    resamples: usize,
    statistic: impl Fn(&[T]) -> Option<f64>,
) -> Result<BootstrapCi, BootstrapError> {
    if data.is_empty() {
        return Err(BootstrapError::Empty);
    }
    if resamples == 0 {
        return Err(BootstrapError::NoResamples);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut sample = Vec::with_capacity(data.len());
    let mut values = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        sample.clear();
        sample.extend((0..data.len()).map(|_| data[rng.random_range(0..data.len())].clone()));
        if let Some(v) = statistic(&sample).filter(|v| v.is_finite()) {
            values.push(v);
        }
    }
    let undefined = resamples - values.len();
    if values.is_empty() || undefined * 2 > resamples {
        return Err(BootstrapError::Undefined {
            undefined,
            resamples,
        });
    }
    values.sort_by(f64::total_cmp);
    Ok(BootstrapCi {
        low: percentile(&values, 2.5),
        high: percentile(&values, 97.5),
        resamples: values.len(),
    })
}

/// `numpy.percentile(sorted, q)` with the default linear method.
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (pos - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::stats;

    /// Same array as `BOOT` in `tools/stats_reference.py`.
    const BOOT: [f64; 20] = [
        3.1, 2.4, 4.0, 3.6, 2.9, 3.3, 4.4, 2.2, 3.0, 3.8, 3.5, 2.7, 3.9, 3.2, 2.6, 4.1, 3.4, 2.8,
        3.7, 3.0,
    ];

    fn mean(x: &[f64]) -> Option<f64> {
        Some(stats::summary(x).mean)
    }

    #[test]
    fn same_seed_same_interval_other_seed_another() {
        let a = percentile_ci(&BOOT, 16, 2_000, mean).unwrap();
        let b = percentile_ci(&BOOT, 16, 2_000, mean).unwrap();
        let c = percentile_ci(&BOOT, 17, 2_000, mean).unwrap();
        assert_eq!(a, b);
        assert_ne!((a.low, a.high), (c.low, c.high));
        assert_eq!(a.resamples, 2_000);
    }

    #[test]
    fn interval_is_pinned_by_seed() {
        // ChaCha8's stream is fixed by rand_chacha's spec: this pins that the
        // resampling scheme itself (index order, percentile rule) never drifts.
        let ci = percentile_ci(&BOOT, 16, 20_000, mean).unwrap();
        assert!((ci.low - PINNED_LOW).abs() < 1e-12, "{ci:?}");
        assert!((ci.high - PINNED_HIGH).abs() < 1e-12, "{ci:?}");
    }
    // Printed by this test's first run (the means of 20 values with one decimal lie on a
    // 0.005 grid, which is why they equal numpy's to the last digit: a coincidence of the
    // grid, not the same stream).
    const PINNED_LOW: f64 = 3.025;
    const PINNED_HIGH: f64 = 3.535;

    #[test]
    fn interval_agrees_with_numpy_and_covers_the_estimate() {
        // numpy percentile bootstrap of the mean, B = 20 000, seed 16:
        // [3.0250000000000004, 3.5349999999999993] (tools/stats_reference.py).
        // Different random streams: agreement within Monte-Carlo error.
        let ci = percentile_ci(&BOOT, 16, 20_000, mean).unwrap();
        assert!((ci.low - 3.025).abs() < 0.01, "{ci:?}");
        assert!((ci.high - 3.535).abs() < 0.01, "{ci:?}");
        assert!(ci.low < 3.28 && 3.28 < ci.high);
    }

    #[test]
    fn undefined_resamples_are_counted_or_refused() {
        // Pearson is undefined when a resample has no variance in x.
        let pairs: Vec<(f64, f64)> = (0..30).map(|i| (f64::from(i % 5), f64::from(i))).collect();
        let r = |s: &[(f64, f64)]| {
            let (x, y): (Vec<f64>, Vec<f64>) = s.iter().copied().unzip();
            stats::pearson(&x, &y)
        };
        assert!(percentile_ci(&pairs, 1, 500, r).is_ok());
        assert_eq!(
            percentile_ci(&BOOT, 1, 10, |_| None),
            Err(BootstrapError::Undefined {
                undefined: 10,
                resamples: 10
            })
        );
        assert_eq!(
            percentile_ci::<f64>(&[], 1, 10, mean),
            Err(BootstrapError::Empty)
        );
        assert_eq!(
            percentile_ci(&BOOT, 1, 0, mean),
            Err(BootstrapError::NoResamples)
        );
    }

    #[test]
    fn percentile_is_numpys_linear_rule() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!((percentile(&x, 2.5) - 1.075).abs() < 1e-12);
        assert!((percentile(&x, 97.5) - 3.925).abs() < 1e-12);
        assert_eq!(percentile(&[5.0], 97.5), 5.0);
    }
}
