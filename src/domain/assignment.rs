//! Balanced assignment of participants to situations.
//!
//! Each participant imagines one situation of the study's set. The caller reads, inside a DB
//! transaction, one [`Cell`] per situation (completed participants and *live* reservations, i.e.
//! active and not expired; a reservation that went stale, by default after 30 minutes, is simply
//! not counted) and calls [`assign`], which picks the situation and returns a [`Draw`] to record
//! with the participant.
//!
//! # Rule
//!
//! 1. The load of a situation is `completed + active`. The least-loaded situation is chosen.
//! 2. Among equal loads, the one with the fewest completed participants is preferred: its load
//!    is made of reservations, some of which will be abandoned, so it is the one most likely to
//!    end below the others. This keeps the *completed* counts within one of each other when
//!    participants drop out.
//! 3. Remaining ties are broken uniformly at random with `ChaCha8Rng::seed_from_u64(seed)`; the
//!    tied situations (ascending id), the seed and the load are recorded in the [`Draw`], so the
//!    choice can be replayed and audited.
//!
//! # Target
//!
//! With a per-situation `target`:
//!
//! * a situation whose completed count reached the target is never offered;
//! * a situation whose load reached the target (`completed + active >= target`) is offered only
//!   when no situation has room left: a reservation may be abandoned, and over-recruiting slightly
//!   beats turning a participant away;
//! * but at most **one** reservation beyond the target is allowed: a situation whose load is
//!   already `target + 1` or more is not offered. So, as long as only live reservations
//!   complete, no situation ends with more than `target + 1` completed participants. Without this
//!   cap, every arrival during the final minutes would pile onto the last open situations.
//!
//! Consequently [`assign`] returns [`Assignment::Full`] in two cases: the study is full for good
//! (every situation has `completed >= target`, see [`is_full`]), or, transiently, every situation
//! that still lacks completions already holds at least `target + 1 - completed` live
//! reservations. In the second case a later arrival may be assigned once a reservation expires.
//! **Close the study on [`is_full`], not on `Assignment::Full`.** In the simulation below
//! (~50 in flight, 20 % dropouts, target 6 × 175) 40–180 of ~1,450 arrivals are turned away
//! this way, all near the end.
//!
//! The bound assumes a participant can complete only while their reservation is live; the caller
//! should not count a completion that arrives after the reservation went stale against the
//! target unchecked (it would push that situation past `target + 1`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One situation's current counts, as read by the caller in its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub situation_id: i64,
    /// Participants who completed the survey with this situation.
    pub completed: u32,
    /// Live (active and not expired) reservations.
    pub active: u32,
}

impl Cell {
    /// `completed + active`, the quantity that is balanced.
    fn load(&self) -> u32 {
        self.completed.saturating_add(self.active)
    }
}

/// The outcome of one assignment, recorded as JSON with the participant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draw {
    /// The situation assigned.
    pub situation_id: i64,
    /// The tied situations the random choice was made among, ascending id (contains
    /// `situation_id`; a single element when there was no tie).
    pub candidates: Vec<i64>,
    /// The seed of the tie-breaking RNG.
    pub seed: u64,
    /// The load (`completed + active`) of the chosen situation before this participant.
    pub load: u32,
}

/// What [`assign`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment {
    Assigned(Draw),
    /// No situation can take this participant (see the module documentation: for good when
    /// [`is_full`], else until a reservation expires).
    Full,
}

/// Chooses the situation for the next participant.
///
/// `target`: completed participants wanted per situation (None = unlimited). `seed`: e.g.
/// derived from the study seed and the participant's sequence number by the caller with
/// [`mix_seed`]; the choice among ties is uniform via `ChaCha8Rng::seed_from_u64(seed)`.
/// Candidates are listed in ascending situation_id so the draw is reproducible regardless of
/// input order. Cells repeating a situation_id are merged (their counts added).
///
/// Returns [`Assignment::Full`] when `cells` is empty, when every situation has reached the
/// target, or (transiently) when every situation still open already holds one reservation more
/// than it needs (see the module documentation).
pub fn assign(cells: &[Cell], target: Option<u32>, seed: u64) -> Assignment {
    let cells = normalise(cells);
    let offerable = |c: &&Cell| match target {
        None => true,
        // `load <= t` lets a situation at exactly the target take one extra reservation; the
        // least-load rule below only reaches those when no situation has `load < t`.
        Some(t) => c.completed < t && c.load() <= t,
    };
    let Some(best) = cells
        .iter()
        .filter(offerable)
        .map(|c| (c.load(), c.completed))
        .min()
    else {
        return Assignment::Full;
    };
    let candidates: Vec<i64> = cells
        .iter()
        .filter(offerable)
        .filter(|c| (c.load(), c.completed) == best)
        .map(|c| c.situation_id)
        .collect();
    let situation_id = pick(&candidates, seed);
    Assignment::Assigned(Draw {
        situation_id,
        candidates,
        seed,
        load: best.0,
    })
}

/// Full when every situation has `completed >= target` (None target → never full, unless there
/// is no situation). Empty cells → Full.
pub fn is_full(cells: &[Cell], target: Option<u32>) -> bool {
    if cells.is_empty() {
        return true;
    }
    match target {
        None => false,
        Some(t) => normalise(cells).iter().all(|c| c.completed >= t),
    }
}

/// Stable seed mixing (splitmix64) so callers derive per-participant seeds: `mix_seed(study_seed,
/// n)`. Not symmetric: `mix_seed(a, b) != mix_seed(b, a)` in general. The values are part of the
/// recorded draws and must never change.
pub fn mix_seed(a: u64, b: u64) -> u64 {
    splitmix64(splitmix64(a) ^ b)
}

/// One step of SplitMix64 from state `x` (Steele, Lea & Flood 2014): `splitmix64(0)` is the
/// generator's first output from seed 0.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Sorted by situation_id, duplicates merged.
fn normalise(cells: &[Cell]) -> Vec<Cell> {
    let mut sorted = cells.to_vec();
    sorted.sort_by_key(|c| c.situation_id);
    let mut out: Vec<Cell> = Vec::with_capacity(sorted.len());
    for c in sorted {
        match out.last_mut() {
            Some(last) if last.situation_id == c.situation_id => {
                last.completed = last.completed.saturating_add(c.completed);
                last.active = last.active.saturating_add(c.active);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Uniform choice among the (non-empty) candidates. The index is drawn as a `u64` so the result
/// does not depend on the platform's pointer width.
fn pick(candidates: &[i64], seed: u64) -> i64 {
    let n = candidates.len() as u64;
    let i = if n > 1 {
        ChaCha8Rng::seed_from_u64(seed).random_range(0..n)
    } else {
        0
    };
    usize::try_from(i)
        .ok()
        .and_then(|i| candidates.get(i))
        .or(candidates.first())
        .copied()
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cell(situation_id: i64, completed: u32, active: u32) -> Cell {
        Cell {
            situation_id,
            completed,
            active,
        }
    }

    fn draw(a: Assignment) -> Draw {
        match a {
            Assignment::Assigned(d) => d,
            Assignment::Full => panic!("expected an assignment, got Full"),
        }
    }

    #[test]
    fn picks_the_least_loaded() {
        let cells = [cell(1, 3, 1), cell(2, 2, 1), cell(3, 4, 0), cell(4, 1, 3)];
        for seed in 0..50 {
            let d = draw(assign(&cells, None, seed));
            assert_eq!(d.situation_id, 2);
            assert_eq!(d.candidates, vec![2]);
            assert_eq!(d.load, 3);
            assert_eq!(d.seed, seed);
        }
    }

    #[test]
    fn active_reservations_count_as_load() {
        // 1 has fewer completed but more load.
        let cells = [cell(1, 0, 5), cell(2, 3, 0)];
        assert_eq!(draw(assign(&cells, None, 7)).situation_id, 2);
    }

    #[test]
    fn equal_loads_prefer_fewest_completed() {
        let cells = [cell(1, 4, 0), cell(2, 3, 1), cell(3, 2, 2), cell(4, 2, 2)];
        for seed in 0..50 {
            let d = draw(assign(&cells, None, seed));
            assert_eq!(d.candidates, vec![3, 4]);
            assert!(d.situation_id == 3 || d.situation_id == 4);
            assert_eq!(d.load, 4);
        }
    }

    #[test]
    fn ties_are_recorded_ascending_whatever_the_input_order() {
        let cells = [cell(9, 1, 0), cell(-2, 1, 0), cell(5, 1, 0), cell(3, 2, 0)];
        let mut reversed = cells;
        reversed.reverse();
        for seed in 0..50 {
            let d = draw(assign(&cells, None, seed));
            assert_eq!(d.candidates, vec![-2, 5, 9]);
            assert_eq!(d, draw(assign(&reversed, None, seed)));
        }
    }

    #[test]
    fn same_seed_same_pick() {
        let cells: Vec<Cell> = (0..20).map(|i| cell(i, 0, 0)).collect();
        for seed in [0, 1, 42, u64::MAX] {
            let a = draw(assign(&cells, Some(3), seed));
            let b = draw(assign(&cells, Some(3), seed));
            assert_eq!(a, b);
        }
    }

    #[test]
    fn draw_is_replayable_from_what_is_recorded() {
        let cells: Vec<Cell> = (0..20).map(|i| cell(i * 3, 1, 0)).collect();
        let d = draw(assign(&cells, None, 99));
        assert_eq!(pick(&d.candidates, d.seed), d.situation_id);
        // Pinned: the recorded draws of a study must stay reproducible across versions.
        assert_eq!(
            d.situation_id,
            ChaCha8Rng::seed_from_u64(99).random_range(0..20u64) as i64 * 3
        );
    }

    #[test]
    fn different_seeds_spread_over_ties() {
        let cells: Vec<Cell> = (1..=5).map(|i| cell(i, 2, 1)).collect();
        let mut counts: BTreeMap<i64, u32> = BTreeMap::new();
        for n in 0..5000 {
            let d = draw(assign(&cells, None, mix_seed(12345, n)));
            *counts.entry(d.situation_id).or_default() += 1;
        }
        assert_eq!(counts.len(), 5, "{counts:?}");
        // Expected 1000 each; sd ≈ 28, so ±150 is > 5 sd.
        for (&id, &c) in &counts {
            assert!((850..=1150).contains(&c), "situation {id}: {c} of 5000");
        }
    }

    #[test]
    fn target_reached_is_excluded() {
        // 1 and 2 reached the target; 3 is the only one offered even though it is the most loaded.
        let cells = [cell(1, 5, 0), cell(2, 6, 0), cell(3, 4, 1)];
        for seed in 0..20 {
            let d = draw(assign(&cells, Some(5), seed));
            assert_eq!(d.situation_id, 3);
            assert_eq!(d.candidates, vec![3]);
        }
        assert!(!is_full(&cells, Some(5)));
    }

    #[test]
    fn reserved_to_target_is_offered_only_when_nothing_has_room() {
        // 1 is at completed + active = target; 2 has room despite more completions.
        let cells = [cell(1, 2, 3), cell(2, 4, 0)];
        assert_eq!(draw(assign(&cells, Some(5), 1)).situation_id, 2);
        // Nothing has room: the least loaded of those still short of the target is offered.
        // Equal loads: fewest completed first.
        let cells = [cell(1, 2, 3), cell(2, 4, 1), cell(3, 5, 0)];
        let d = draw(assign(&cells, Some(5), 1));
        assert_eq!((d.situation_id, d.candidates, d.load), (1, vec![1], 5));
        let cells = [cell(1, 4, 1), cell(2, 4, 1), cell(3, 5, 0), cell(4, 3, 3)];
        for seed in 0..20 {
            let d = draw(assign(&cells, Some(5), seed));
            assert_eq!((d.candidates, d.load), (vec![1, 2], 5));
        }
    }

    #[test]
    fn at_most_one_reservation_beyond_the_target() {
        // Every open situation holds one spare reservation already: transiently Full...
        let cells = [cell(1, 2, 4), cell(2, 4, 2), cell(3, 5, 0)];
        assert_eq!(assign(&cells, Some(5), 1), Assignment::Full);
        // ...but the study is not full: it must not be closed.
        assert!(!is_full(&cells, Some(5)));
        // Once a reservation expires, 2 is offered again.
        let cells = [cell(1, 2, 4), cell(2, 4, 1), cell(3, 5, 0)];
        assert_eq!(draw(assign(&cells, Some(5), 1)).situation_id, 2);
    }

    #[test]
    fn all_full_is_full() {
        let cells = [cell(1, 5, 0), cell(2, 7, 2), cell(3, 5, 1)];
        assert_eq!(assign(&cells, Some(5), 3), Assignment::Full);
        assert!(is_full(&cells, Some(5)));
        assert!(!is_full(&cells, Some(6)));
        assert!(!is_full(&cells, None));
        assert_eq!(draw(assign(&cells, None, 3)).situation_id, 1);
        // A target of 0 wants nobody.
        assert!(is_full(&[cell(1, 0, 0)], Some(0)));
        assert_eq!(assign(&[cell(1, 0, 0)], Some(0), 0), Assignment::Full);
    }

    #[test]
    fn empty_is_full() {
        assert_eq!(assign(&[], None, 0), Assignment::Full);
        assert_eq!(assign(&[], Some(3), 0), Assignment::Full);
        assert!(is_full(&[], None));
        assert!(is_full(&[], Some(3)));
    }

    #[test]
    fn duplicate_ids_are_merged() {
        let cells = [cell(1, 1, 0), cell(2, 1, 0), cell(1, 0, 1)];
        let d = draw(assign(&cells, None, 0));
        assert_eq!((d.situation_id, d.candidates, d.load), (2, vec![2], 1));
        assert!(is_full(&[cell(1, 2, 0), cell(1, 1, 0)], Some(3)));
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        let cells = [cell(1, u32::MAX, u32::MAX), cell(2, u32::MAX - 1, 0)];
        let d = draw(assign(&cells, None, 0));
        assert_eq!((d.situation_id, d.load), (2, u32::MAX - 1));
        // Both saturate to u32::MAX: fewest completed decides.
        let cells = [cell(1, u32::MAX, 5), cell(2, 5, u32::MAX)];
        let d = draw(assign(&cells, None, 0));
        assert_eq!(
            (d.situation_id, d.candidates, d.load),
            (2, vec![2], u32::MAX)
        );
    }

    #[test]
    fn draw_round_trips_as_json() {
        let d = Draw {
            situation_id: 7,
            candidates: vec![3, 7],
            seed: u64::MAX,
            load: 4,
        };
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"situation_id":7,"candidates":[3,7],"seed":18446744073709551615,"load":4}"#
        );
        assert_eq!(serde_json::from_str::<Draw>(&json).unwrap(), d);
        let c = cell(1, 2, 3);
        let back: Cell = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn mix_seed_is_splitmix64_and_stable() {
        // Reference output of SplitMix64 seeded with 0.
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix_seed(0, 0), splitmix64(splitmix64(0)));
        // Pinned values: recorded seeds must not change between versions.
        assert_eq!(mix_seed(1, 2), PINNED_MIX_1_2);
        assert_ne!(mix_seed(1, 2), mix_seed(2, 1));
        let seeds: std::collections::BTreeSet<u64> = (0..1000).map(|n| mix_seed(7, n)).collect();
        assert_eq!(seeds.len(), 1000);
    }

    const PINNED_MIX_1_2: u64 = 0xBCD9_DBB4_9673_066B;

    // ---------------------------------------------------------------------------------------
    // Simulation: arrivals over time, many in flight, 20 % abandon.

    #[derive(Debug)]
    struct SimResult {
        completed: Vec<u32>,
        arrivals: u32,
        max_in_flight: usize,
        assigned: u32,
        /// Turned away while the study was not full (every open situation held a spare).
        turned_away_not_full: u32,
    }

    /// Time is in steps. Each step first resolves the reservations that end at that step, then
    /// lets 1–4 participants arrive (mean 2.5). A participant completes after 3..reservation
    /// steps (80 %) or abandons (20 %): its reservation stays live and becomes stale
    /// `reservation` steps after the assignment. The mean stay is ~20 steps, so ~50 participants
    /// are in flight at once. Situation ids are sparse and the cells are passed in varying order.
    ///
    /// Arrivals stop after `arrivals`, except that with a target they go on (at most 3 ×
    /// `arrivals`) until the study is full, as a recruitment platform keeps sending participants
    /// to an open study.
    fn simulate(
        seed: u64,
        situations: usize,
        arrivals: u32,
        target: Option<u32>,
        reservation: usize,
    ) -> SimResult {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cells: Vec<Cell> = (0..situations)
            .map(|i| cell(1000 + 7 * i as i64, 0, 0))
            .collect();
        let index: BTreeMap<i64, usize> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| (c.situation_id, i))
            .collect();
        // events[t] = (cell index, completes?)
        let mut events: Vec<Vec<(usize, bool)>> = Vec::new();
        let mut in_flight = 0usize;
        let mut res = SimResult {
            completed: Vec::new(),
            arrivals: 0,
            max_in_flight: 0,
            assigned: 0,
            turned_away_not_full: 0,
        };
        let recruiting = |n: u32, cells: &[Cell]| {
            n < arrivals || (target.is_some() && !is_full(cells, target) && n < 3 * arrivals)
        };
        let mut n = 0u32;
        let mut t = 0usize;
        while recruiting(n, &cells) || in_flight > 0 {
            for (i, completes) in events.get_mut(t).map(std::mem::take).unwrap_or_default() {
                let c = &mut cells[i];
                c.active -= 1;
                if completes {
                    c.completed += 1;
                }
                in_flight -= 1;
            }
            for _ in 0..rng.random_range(1..=4u32) {
                if !recruiting(n, &cells) {
                    break;
                }
                n += 1;
                let mut view = cells.clone();
                if rng.random_bool(0.5) {
                    view.reverse();
                }
                let full = is_full(&view, target);
                if let Some(tg) = target {
                    assert_eq!(full, cells.iter().all(|c| c.completed >= tg));
                }
                match assign(&view, target, mix_seed(seed, u64::from(n))) {
                    Assignment::Full => {
                        if !full {
                            res.turned_away_not_full += 1;
                            // Only when every open situation holds a spare reservation.
                            let tg = target.unwrap();
                            assert!(
                                cells
                                    .iter()
                                    .all(|c| c.completed >= tg || c.completed + c.active > tg)
                            );
                        }
                    }
                    Assignment::Assigned(d) => {
                        assert!(!full, "assigned while the study is full");
                        assert!(d.candidates.contains(&d.situation_id));
                        let i = index[&d.situation_id];
                        assert_eq!(d.load, cells[i].completed + cells[i].active);
                        res.assigned += 1;
                        cells[i].active += 1;
                        in_flight += 1;
                        let (at, completes) = if rng.random_bool(0.2) {
                            (t + reservation, false)
                        } else {
                            (t + rng.random_range(3..reservation), true)
                        };
                        if events.len() <= at {
                            events.resize_with(at + 1, Vec::new);
                        }
                        events[at].push((i, completes));
                    }
                }
            }
            res.max_in_flight = res.max_in_flight.max(in_flight);
            t += 1;
        }
        assert!(cells.iter().all(|c| c.active == 0));
        res.completed = cells.iter().map(|c| c.completed).collect();
        res.arrivals = n;
        res
    }

    fn spread(v: &[u32]) -> u32 {
        v.iter().max().unwrap() - v.iter().min().unwrap()
    }

    /// Without a target the simulation stops after the 1,400th arrival, and whatever is still
    /// in flight then resolves with nobody left to replace the ~10 late dropouts. No rule can
    /// make max − min ≤ 1 certain at such an arbitrary stop (it would need every live
    /// reservation to sit alone on a situation at the lowest completed level, impossible with
    /// ~50 in flight); it is ≤ 1 for most seeds and ≤ 2 for all. For comparison, over 500 seeds
    /// this rule gives max − min ≤ 1 for 81 %, the load alone (random among equal loads) for
    /// 27 %, the load then *most* completed for 15 %. With a target the study keeps recruiting
    /// until full and ≤ 1 is certain (next test).
    #[test]
    fn simulation_keeps_completed_counts_within_one() {
        let mut within_one = 0;
        let seeds = 0..40u64;
        for seed in seeds.clone() {
            let r = simulate(seed, 175, 1400, None, 30);
            let total: u32 = r.completed.iter().sum();
            eprintln!(
                "seed {seed}: max-min {} (min {}, max {}), completed {total}, max in flight {}",
                spread(&r.completed),
                r.completed.iter().min().unwrap(),
                r.completed.iter().max().unwrap(),
                r.max_in_flight
            );
            assert_eq!((r.arrivals, r.assigned), (1400, 1400));
            assert!(r.max_in_flight >= 40, "only {} in flight", r.max_in_flight);
            // Roughly 20 % dropped out.
            assert!((1050..=1190).contains(&total), "{total} completed");
            assert!(spread(&r.completed) <= 2, "seed {seed}: {:?}", r.completed);
            if spread(&r.completed) <= 1 {
                within_one += 1;
            }
        }
        let n = seeds.count();
        eprintln!("max-min <= 1 for {within_one} of {n} seeds");
        assert!(
            4 * within_one >= 3 * n,
            "only {within_one} of {n} within one"
        );
    }

    #[test]
    fn simulation_with_target_closes_when_all_reached_it() {
        for seed in 0..40u64 {
            let r = simulate(seed, 175, 1400, Some(6), 30);
            eprintln!(
                "seed {seed} target 6: min {}, max {}, arrivals {}, assigned {}, turned away \
                 before full {}, max in flight {}",
                r.completed.iter().min().unwrap(),
                r.completed.iter().max().unwrap(),
                r.arrivals,
                r.assigned,
                r.turned_away_not_full,
                r.max_in_flight
            );
            // The study filled (is_full ⇔ all reached 6 was checked at every arrival) and the
            // over-recruitment stayed within one.
            assert!(r.arrivals < 3 * 1400, "never filled: {:?}", r.completed);
            assert!(r.completed.iter().all(|&c| c >= 6), "{:?}", r.completed);
            assert!(r.completed.iter().all(|&c| c <= 7), "{:?}", r.completed);
            assert!(r.max_in_flight >= 40, "only {} in flight", r.max_in_flight);
        }
    }

    proptest::proptest! {
        #[test]
        fn assigns_only_known_open_situations(
            raw in proptest::collection::vec((-50i64..50, 0u32..12, 0u32..6), 0..40),
            target in proptest::option::of(0u32..10),
            seed in proptest::prelude::any::<u64>(),
        ) {
            let cells: Vec<Cell> = raw.iter().map(|&(id, c, a)| cell(id, c, a)).collect();
            let merged = normalise(&cells);
            match assign(&cells, target, seed) {
                Assignment::Assigned(d) => {
                    let chosen = merged.iter().find(|c| c.situation_id == d.situation_id);
                    proptest::prop_assert!(chosen.is_some());
                    let chosen = chosen.unwrap();
                    if let Some(t) = target {
                        proptest::prop_assert!(chosen.completed < t);
                        proptest::prop_assert!(chosen.load() <= t);
                    }
                    proptest::prop_assert!(!is_full(&cells, target));
                    proptest::prop_assert!(d.candidates.windows(2).all(|w| w[0] < w[1]));
                    proptest::prop_assert!(d.candidates.contains(&d.situation_id));
                    proptest::prop_assert_eq!(d.load, chosen.load());
                    // Least loaded among the offerable ones.
                    for c in &merged {
                        if target.is_none_or(|t| c.completed < t && c.load() <= t) {
                            proptest::prop_assert!(
                                (c.load(), c.completed) >= (chosen.load(), chosen.completed)
                            );
                        }
                    }
                    let mut shuffled = cells.clone();
                    shuffled.reverse();
                    proptest::prop_assert_eq!(
                        assign(&shuffled, target, seed),
                        Assignment::Assigned(d)
                    );
                }
                Assignment::Full => {
                    // Full for good, or every open situation already holds a spare reservation.
                    if !is_full(&cells, target) {
                        let t = target.unwrap();
                        proptest::prop_assert!(
                            merged.iter().all(|c| c.completed >= t || c.load() > t)
                        );
                    }
                }
            }
        }
    }
}
