//! Train/test splits of a study's completed participants for fine-tuning (paper appendix F:
//! 866 train, 400 test), stratified by situation and reproducible from a seed.
//!
//! The algorithm, fixed so that a recorded seed always gives the same split:
//!
//! 1. Members are sorted by (stratum, id); the stratum is the participant's situation key.
//! 2. Each stratum of size `n_s` gets `floor(n_s · T / N)` test places (T test, N members);
//!    the `T − Σ floor` places left go one each to the strata with the largest remainder
//!    `n_s · T mod N`, ties broken by a seeded permutation of the strata
//!    (`shuffled_order(strata, keyed_seed("EBSPLIT0", seed, ""))`).
//! 3. Within a stratum the members are permuted by
//!    `shuffled_order(n_s, keyed_seed("EBSPLIT1", seed, stratum))`; the first ones of that
//!    order are test, the rest train.
//!
//! Every stratum's share of the test set thus differs from its proportional share by less than
//! one participant, and the same members and seed give the same assignment on any machine.

use super::prompt::{keyed_seed, shuffled_order};

/// Which side of a split a participant is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Side {
    Train,
    Test,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Train => "train",
            Side::Test => "test",
        }
    }

    pub fn parse(s: &str) -> Option<Side> {
        match s {
            "train" => Some(Side::Train),
            "test" => Some(Side::Test),
            _ => None,
        }
    }
}

/// One participant to split: its id and its stratum (situation key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: i64,
    pub stratum: String,
}

/// Assigns every member to train or test: exactly `test` members to test, stratified as the
/// module docs describe. The result is sorted by id.
pub fn assign(members: &[Member], test: usize, seed: u64) -> Result<Vec<(i64, Side)>, String> {
    let n = members.len();
    if test > n {
        return Err(format!(
            "--test {test} is more than the {n} completed participants"
        ));
    }
    let mut sorted: Vec<&Member> = members.iter().collect();
    sorted.sort_by(|a, b| (&a.stratum, a.id).cmp(&(&b.stratum, b.id)));
    if sorted.windows(2).any(|w| w[0].id == w[1].id) {
        return Err("a participant is listed twice".into());
    }
    // Strata in key order: (key, members).
    let mut strata: Vec<(&str, Vec<i64>)> = Vec::new();
    for m in sorted {
        match strata.last_mut() {
            Some((key, ids)) if *key == m.stratum => ids.push(m.id),
            _ => strata.push((&m.stratum, vec![m.id])),
        }
    }
    let total = n as u128;
    let t = test as u128;
    let mut quota: Vec<usize> = Vec::with_capacity(strata.len());
    let mut remainder: Vec<u128> = Vec::with_capacity(strata.len());
    for (_, ids) in &strata {
        let share = ids.len() as u128 * t;
        quota.push(usize::try_from(share.checked_div(total).unwrap_or(0)).unwrap_or(0));
        remainder.push(share.checked_rem(total).unwrap_or(0));
    }
    let left = test - quota.iter().sum::<usize>();
    let tie = shuffled_order(strata.len(), keyed_seed(*b"EBSPLIT0", seed, ""));
    let mut rank: Vec<usize> = (0..strata.len()).collect();
    // Largest remainder first; among equals, the seeded order.
    rank.sort_by(|&a, &b| remainder[b].cmp(&remainder[a]).then(tie[a].cmp(&tie[b])));
    for &s in rank.iter().take(left) {
        quota[s] += 1;
    }
    let mut out = Vec::with_capacity(n);
    for ((key, ids), q) in strata.iter().zip(&quota) {
        let order = shuffled_order(ids.len(), keyed_seed(*b"EBSPLIT1", seed, key));
        for (position, index) in order.iter().enumerate() {
            let side = if position < *q {
                Side::Test
            } else {
                Side::Train
            };
            out.push((ids[*index as usize - 1], side));
        }
    }
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn members(sizes: &[usize]) -> Vec<Member> {
        let mut id = 0;
        let mut out = Vec::new();
        for (s, size) in sizes.iter().enumerate() {
            for _ in 0..*size {
                id += 1;
                out.push(Member {
                    id,
                    stratum: format!("S{s:03}"),
                });
            }
        }
        out
    }

    fn tests_per_stratum(m: &[Member], a: &[(i64, Side)]) -> Vec<usize> {
        let mut counts = std::collections::BTreeMap::new();
        for (id, side) in a {
            let s = &m.iter().find(|x| x.id == *id).unwrap().stratum;
            *counts.entry(s.clone()).or_insert(0) += usize::from(*side == Side::Test);
        }
        counts.into_values().collect()
    }

    #[test]
    fn exact_test_count_stratified_and_reproducible() {
        // 175 strata of 6 to 9 (like the human cohort).
        let sizes: Vec<usize> = (0..175).map(|i| 6 + i % 4).collect();
        let m = members(&sizes);
        let n = m.len();
        let a = assign(&m, 400, 7).unwrap();
        assert_eq!(a.len(), n);
        assert_eq!(a.iter().filter(|x| x.1 == Side::Test).count(), 400);
        for (size, got) in sizes.iter().zip(tests_per_stratum(&m, &a)) {
            let exact = *size as f64 * 400.0 / n as f64;
            assert!((got as f64 - exact).abs() < 1.0, "{size}: {got} vs {exact}");
        }
        // Same seed, any input order: same split. Another seed: another split.
        let mut reversed = m.clone();
        reversed.reverse();
        assert_eq!(assign(&reversed, 400, 7).unwrap(), a);
        assert_ne!(assign(&m, 400, 8).unwrap(), a);
    }

    #[test]
    fn edge_cases() {
        let m = members(&[3, 2]);
        assert!(assign(&m, 6, 1).is_err());
        assert!(assign(&m, 5, 1).unwrap().iter().all(|x| x.1 == Side::Test));
        assert!(assign(&m, 0, 1).unwrap().iter().all(|x| x.1 == Side::Train));
        assert!(assign(&[], 0, 1).unwrap().is_empty());
    }
}
