//! A sliding-window limit: at most `limit` events per key within `window`. Used for new
//! participants per client address (issue #14, point 6): one address may start only so many
//! participants in a while, so a script cannot fill a study's places in a second.
//!
//! The clock is passed in, so the logic is testable without waiting.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Past this many keys, every admission first forgets keys with no event left in the window
/// (bounds the memory an address scan could take).
const PRUNE_ABOVE: usize = 10_000;

#[derive(Debug)]
pub struct RateWindow<K> {
    limit: u32,
    window: Duration,
    events: HashMap<K, VecDeque<Instant>>,
}

impl<K: Eq + Hash + Clone> RateWindow<K> {
    /// `limit` 0 means no limit.
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            events: HashMap::new(),
        }
    }

    /// Records an event for `key` at `now` and returns true, or returns false (recording
    /// nothing) when `key` already had `limit` events in the window before `now`.
    pub fn admit(&mut self, key: &K, now: Instant) -> bool {
        self.admit_up_to(key, now, self.limit)
    }

    /// [`Self::admit`] with a limit of its own for this call (a study's own limit, #15 point
    /// 2); the window is the same.
    pub fn admit_up_to(&mut self, key: &K, now: Instant, limit: u32) -> bool {
        if limit == 0 {
            return true;
        }
        let window = self.window;
        let fresh = |at: &Instant| now.saturating_duration_since(*at) < window;
        if self.events.len() > PRUNE_ABOVE {
            self.events.retain(|_, q| q.back().is_some_and(fresh));
        }
        let queue = self.events.entry(key.clone()).or_default();
        while queue.front().is_some_and(|at| !fresh(at)) {
            queue.pop_front();
        }
        if queue.len() >= limit as usize {
            return false;
        }
        queue.push_back(now);
        true
    }

    /// When `key` may next be admitted (`None`: now).
    pub fn retry_after(&self, key: &K, now: Instant) -> Option<Duration> {
        self.retry_after_up_to(key, now, self.limit)
    }

    /// [`Self::retry_after`] under the limit of [`Self::admit_up_to`].
    pub fn retry_after_up_to(&self, key: &K, now: Instant, limit: u32) -> Option<Duration> {
        let queue = self.events.get(key)?;
        if limit == 0 || queue.len() < limit as usize {
            return None;
        }
        let oldest = *queue.front()?;
        (oldest + self.window).checked_duration_since(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_per_key_then_refuses_until_the_window_moves_on() {
        let t0 = Instant::now();
        let mut w = RateWindow::new(3, Duration::from_secs(60));
        let a = "10.0.0.1".to_owned();
        let b = "10.0.0.2".to_owned();
        assert!(w.admit(&a, t0));
        assert!(w.admit(&a, t0 + Duration::from_secs(10)));
        assert!(w.admit(&a, t0 + Duration::from_secs(20)));
        assert!(
            !w.admit(&a, t0 + Duration::from_secs(30)),
            "fourth in a minute"
        );
        assert!(w.admit(&b, t0 + Duration::from_secs(30)), "another address");
        assert_eq!(
            w.retry_after(&a, t0 + Duration::from_secs(30)),
            Some(Duration::from_secs(30))
        );
        // The first event left the window: one more is admitted, not more.
        assert!(w.admit(&a, t0 + Duration::from_secs(60)));
        assert!(!w.admit(&a, t0 + Duration::from_secs(61)));
    }

    #[test]
    fn a_refused_attempt_does_not_extend_the_block() {
        let t0 = Instant::now();
        let mut w = RateWindow::new(1, Duration::from_secs(10));
        assert!(w.admit(&1, t0));
        for s in 1..10 {
            assert!(!w.admit(&1, t0 + Duration::from_secs(s)));
        }
        assert!(w.admit(&1, t0 + Duration::from_secs(10)));
    }

    #[test]
    fn zero_means_unlimited() {
        let t0 = Instant::now();
        let mut w = RateWindow::new(0, Duration::from_secs(10));
        assert!((0..1000).all(|_| w.admit(&"x", t0)));
        assert_eq!(w.retry_after(&"x", t0), None);
    }

    #[test]
    fn idle_keys_are_forgotten_when_many_addresses_came_by() {
        let t0 = Instant::now();
        let mut w = RateWindow::new(1, Duration::from_secs(10));
        for k in 0..=PRUNE_ABOVE {
            assert!(w.admit(&k, t0));
        }
        assert!(w.admit(&usize::MAX, t0 + Duration::from_secs(11)));
        assert_eq!(w.events.len(), 1, "only the new key is left");
    }
}
