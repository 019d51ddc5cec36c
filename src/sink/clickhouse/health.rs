//! A ClickHouse node's place in the rotation: out after a failure for a back-off that doubles
//! with every failure in a row (250 ms up to 15 s), tried again once it is over (that try is
//! its probe), and counted as healthy again only when an operation succeeds on it: an insert
//! written, or for reads a connection whose handshake and ping were answered. A node that
//! accepts connections but fails every insert (read-only replica, too many parts, ZooKeeper
//! trouble) therefore backs off as far as one that refuses connections.
//!
//! Pure: the caller passes the clock (Unix ms), so the tests pin it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Shortest and longest time a node that failed is left out of rotation.
pub(super) const BACKOFF_MIN: Duration = Duration::from_millis(250);
pub(super) const BACKOFF_MAX: Duration = Duration::from_secs(15);

/// One node's health, shared by the tasks of the thread that owns its `Store`.
#[derive(Debug, Default)]
pub(super) struct Health {
    /// Unix ms until which the node is out of rotation (0: in rotation).
    down_until_ms: AtomicU64,
    /// Failures since the last success: the back-off doubles with each.
    failures: AtomicU32,
}

/// What a failure did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Failed {
    /// How long the node is out of rotation now.
    pub backoff: Duration,
    /// It was healthy until this failure (the one to log).
    pub first: bool,
}

impl Health {
    pub(super) fn in_rotation(&self, now_ms: u64) -> bool {
        self.down_until_ms.load(Ordering::Relaxed) <= now_ms
    }

    /// Unix ms until which the node is out (0 or past: in rotation).
    pub(super) fn down_until_ms(&self) -> u64 {
        self.down_until_ms.load(Ordering::Relaxed)
    }

    /// An operation on the node failed at `now_ms` (it refused, timed out, or answered with a
    /// transient error): out of rotation for `BACKOFF_MIN * 2^(failures in a row)`, capped.
    pub(super) fn failed(&self, now_ms: u64) -> Failed {
        let n = self.failures.fetch_add(1, Ordering::Relaxed);
        let backoff = BACKOFF_MIN.saturating_mul(1 << n.min(16)).min(BACKOFF_MAX);
        self.down_until_ms
            .store(now_ms + backoff.as_millis() as u64, Ordering::Relaxed);
        Failed {
            backoff,
            first: n == 0,
        }
    }

    /// An operation succeeded on the node: in rotation, its back-off starts over. Returns
    /// whether it was failing until now (the change to log).
    pub(super) fn succeeded(&self) -> bool {
        if self.failures.swap(0, Ordering::Relaxed) > 0 {
            self.down_until_ms.store(0, Ordering::Relaxed);
            return true;
        }
        false
    }
}

/// The order in which to try `nodes` (each candidate's health) at `now_ms`, as positions in
/// `nodes`: those in rotation first, from `start` on and wrapping (callers rotate `start` to
/// spread their load), then those out of it, soonest back first (when none is in rotation one
/// of them must be tried anyway: that is the probe).
pub(super) fn order(nodes: &[&Health], start: usize, now_ms: u64) -> Vec<usize> {
    let n = nodes.len().max(1);
    let mut up: Vec<usize> = (0..nodes.len())
        .map(|i| (start + i) % n)
        .filter(|&i| nodes[i].in_rotation(now_ms))
        .collect();
    let mut down: Vec<usize> = (0..nodes.len())
        .filter(|&i| !nodes[i].in_rotation(now_ms))
        .collect();
    down.sort_by_key(|&i| nodes[i].down_until_ms());
    up.extend(down);
    up
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn back_off_doubles_to_its_cap_and_logs_the_first_failure_only() {
        let h = Health::default();
        assert!(h.in_rotation(T0));
        let mut now = T0;
        let mut backoffs = Vec::new();
        for i in 0..10 {
            let f = h.failed(now);
            assert_eq!(f.first, i == 0, "failure {i}");
            assert!(!h.in_rotation(now));
            let until = now + f.backoff.as_millis() as u64;
            assert!(!h.in_rotation(until - 1));
            assert!(h.in_rotation(until), "its probe may go at {until}");
            backoffs.push(f.backoff.as_millis() as u64);
            // The probe, as soon as allowed, fails again.
            now = until;
        }
        assert_eq!(
            backoffs,
            [250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000, 15_000]
        );
        // Very many failures in a row stay at the cap (no overflow of the doubling).
        for _ in 0..100 {
            h.failed(now);
        }
        assert_eq!(h.failed(now).backoff, BACKOFF_MAX);
    }

    #[test]
    fn a_probe_that_succeeds_brings_the_node_back_and_the_back_off_starts_over() {
        let h = Health::default();
        assert!(!h.succeeded(), "a healthy node's success changes nothing");
        h.failed(T0);
        let f = h.failed(T0 + 250);
        assert_eq!(f.backoff, Duration::from_millis(500));
        assert!(!h.in_rotation(T0 + 600));
        // Back-off over: tried again (the probe), it answers.
        assert!(h.in_rotation(T0 + 750));
        assert!(h.succeeded(), "back in rotation: logged");
        assert!(h.in_rotation(T0 + 750));
        assert!(!h.succeeded(), "logged once");
        let f = h.failed(T0 + 1000);
        assert_eq!((f.backoff, f.first), (BACKOFF_MIN, true));
    }

    /// (nodes' state: None in rotation, Some(down until, relative ms)), start, now (relative)
    /// -> the order.
    #[test]
    fn rotation_order() {
        type Case = (&'static [Option<u64>], usize, u64, &'static [usize]);
        let cases: &[Case] = &[
            // All up: round robin from `start`.
            (&[None, None, None], 0, 0, &[0, 1, 2]),
            (&[None, None, None], 1, 0, &[1, 2, 0]),
            (&[None, None, None], 5, 0, &[2, 0, 1]),
            // Out of rotation: after the others, whatever `start` says.
            (&[Some(100), None, None], 0, 0, &[1, 2, 0]),
            (&[None, Some(100), None], 1, 0, &[2, 0, 1]),
            // Its back-off over: in rotation again (the next pick is its probe).
            (&[Some(100), None, None], 0, 100, &[0, 1, 2]),
            // All out: soonest back first.
            (&[Some(300), Some(100), Some(200)], 0, 0, &[1, 2, 0]),
            (&[Some(300), None, Some(200)], 2, 0, &[1, 2, 0]),
            (&[], 3, 0, &[]),
        ];
        for &(states, start, now, want) in cases {
            let nodes: Vec<Health> = states
                .iter()
                .map(|s| {
                    let h = Health::default();
                    if let Some(until) = s {
                        h.failures.store(1, Ordering::Relaxed);
                        h.down_until_ms.store(T0 + until, Ordering::Relaxed);
                    }
                    h
                })
                .collect();
            let refs: Vec<&Health> = nodes.iter().collect();
            assert_eq!(
                order(&refs, start, T0 + now),
                want,
                "{states:?} from {start} at +{now}"
            );
        }
    }
}
