//! The worker's side of fleet-wide rate limits: each key's `Lease`, budget leased from Redis
//! in chunks by the control thread (`crate::redis`) and spent here with one compare-and-swap.
//!
//! A key's `Bucket` (`rate.rs`) holds a `Lease`. While the lease is in fleet mode the worker
//! spends its allowance and never touches Redis; the control thread tops it up every
//! `INGEST_REDIS_SYNC_MS` (S) from a GCRA bucket in Redis that every replica draws from, up to
//! a small hold H = min(burst, max(ceil(2 x rate x (S + Q)), largest batch asked for)), S + Q
//! being the time between the starts of the last two rounds (Q: mostly what Redis takes to
//! answer), which is how often top-ups come. In local mode
//! (no Redis configured, a key not leased yet, or Redis unreachable) the key's own bucket in
//! this process decides, and what it lets through is counted and charged to Redis at the next
//! round, so the fleet's bucket knows it.
//!
//! The bound (README, docs/fleet.md): over any T seconds a key gets at most
//! `burst + rate x T + N x H + L` spans across N replicas: Redis grants at most
//! `burst + rate x T`, each replica may hold H granted before the window, and L is what local
//! buckets let through in it. A local bucket is full when local mode starts (leases do not draw
//! from it), so each replica adds at most `burst + rate x S'` before its first lease of a key
//! (S' = one round interval plus the round's own time) and `burst + rate x T_f` during a Redis
//! outage of T_f. The charge Redis takes for those is capped at one bucket of debt, so L is
//! counted in full in the bound, repaid or not.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::rate::{Credit, Rate, Take};

/// Bits of `Lease::local` that count spans (a round never charges 2^40); the rest number the
/// round.
const COUNT_BITS: u32 = 40;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// One key's budget leased from the fleet's bucket.
#[derive(Debug, Default)]
pub struct Lease {
    /// Fleet mode: the allowance decides. Off: the key's local bucket does.
    fleet: AtomicBool,
    /// Spans granted by Redis and not spent yet.
    allowance: AtomicU64,
    /// Spans the local bucket let through since the last round, charged to Redis then (the
    /// low `COUNT_BITS`), and the round they wait for (the bits above: `demand` moves it on),
    /// so that a refund takes back only spans no round has charged yet.
    local: AtomicU64,
    /// Spans asked for (taken or refused) since the last round: a key nobody uses is not
    /// topped up.
    asked: AtomicU64,
    /// The largest batch cost asked for since the last round: the hold must fit it.
    largest: AtomicU64,
    /// The most a refund fills the allowance to: the hold of the round that last topped it
    /// up (0 in local mode). A refund of a batch taken before a top-up would otherwise leave
    /// the replica holding more than H, which the fleet's bound counts once per replica.
    ceiling: AtomicU64,
    /// Leased spans refunded past `ceiling`: given back to Redis at the next round.
    returned: AtomicU64,
}

/// What the control thread takes from a lease for one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    pub fleet: bool,
    /// Unspent allowance.
    pub held: u64,
    /// Spans the local bucket let through, to charge.
    pub local: u64,
    pub asked: u64,
    pub largest: u64,
    /// Leased spans refunded past the hold, to give back.
    pub returned: u64,
}

impl Lease {
    pub fn is_fleet(&self) -> bool {
        self.fleet.load(Ordering::Acquire)
    }

    /// Takes a batch's cost out of the allowance, or refuses it (`Retry-After` from the part
    /// missing at the key's rate, at least 1 s: the next top-up is due well before).
    pub fn take(&self, rate: Rate, spans: u64) -> Take {
        let cost = rate.cost_spans(spans);
        self.asked.fetch_add(cost, Ordering::Relaxed);
        self.largest.fetch_max(cost, Ordering::Relaxed);
        let mut have = self.allowance.load(Ordering::Acquire);
        loop {
            if have < cost {
                return Take::Refused {
                    retry_after_s: (cost - have).div_ceil(u64::from(rate.per_second)).max(1),
                    remaining: have.min(u64::from(rate.burst)),
                };
            }
            match self.allowance.compare_exchange_weak(
                have,
                have - cost,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Take::Taken {
                        remaining: (have - cost).min(u64::from(rate.burst)),
                        credit: Credit::Leased { spans: cost },
                    }
                }
                Err(now) => have = now,
            }
        }
    }

    /// Spans the allowance holds.
    pub fn peek(&self, rate: Rate) -> u64 {
        self.allowance
            .load(Ordering::Acquire)
            .min(u64::from(rate.burst))
    }

    /// Gives back spans taken from the allowance (a batch refused by a later check), up to
    /// the hold; the rest goes back to Redis at the next round.
    pub fn refund(&self, spans: u64) {
        let ceiling = self.ceiling.load(Ordering::Acquire);
        let mut over = 0;
        let _ = self
            .allowance
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                let kept = spans.min(ceiling.saturating_sub(a));
                over = spans - kept;
                Some(a + kept)
            });
        if over > 0 {
            self.returned.fetch_add(over, Ordering::AcqRel);
        }
    }

    /// The local bucket let `spans` through; returns the round that will charge them.
    pub fn count_local(&self, spans: u64) -> u64 {
        self.local.fetch_add(spans, Ordering::Relaxed) >> COUNT_BITS
    }

    /// Spans the local bucket let through (counted for `round`) were refused by a later check
    /// after all: not to be charged. If that round has taken them already, the charge stands
    /// (the fleet's bucket is stricter for a moment), and spans other batches added since are
    /// not touched.
    pub fn uncount_local(&self, spans: u64, round: u64) {
        let _ = self
            .local
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n >> COUNT_BITS == round).then(|| n - spans.min(n & COUNT_MASK))
            });
    }

    /// Control thread: what happened since the last round (the counters restart from 0).
    pub fn demand(&self) -> Demand {
        Demand {
            fleet: self.is_fleet(),
            held: self.allowance.load(Ordering::Acquire),
            local: self.next_round() & COUNT_MASK,
            asked: self.asked.swap(0, Ordering::Relaxed),
            largest: self.largest.swap(0, Ordering::Relaxed),
            returned: self.returned.swap(0, Ordering::AcqRel),
        }
    }

    /// Starts the next round of local counts (from 0); returns the last one's word.
    fn next_round(&self) -> u64 {
        let bump =
            |n: u64| Some((((n >> COUNT_BITS) + 1) % (1 << (64 - COUNT_BITS))) << COUNT_BITS);
        self.local
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, bump)
            .unwrap_or(0)
    }

    /// Control thread: Redis granted `spans` more, topping the lease up to `hold` (`None`: the
    /// round asked for nothing and the hold stays); the lease is in fleet mode from now on.
    pub fn grant(&self, spans: u64, hold: Option<u64>) {
        if let Some(hold) = hold {
            self.ceiling.store(hold, Ordering::Release);
        }
        self.allowance.fetch_add(spans, Ordering::AcqRel);
        self.fleet.store(true, Ordering::Release);
    }

    /// Control thread: a round failed to charge what it took and to give back what it
    /// returned (Redis went away mid-round): keep both for the next one.
    pub fn recharge(&self, spans: u64, returned: u64) {
        self.local.fetch_add(spans, Ordering::Relaxed);
        self.returned.fetch_add(returned, Ordering::AcqRel);
    }

    /// Control thread, at a stop (the workers are done): takes the unspent allowance out to
    /// give it back to Redis; the local bucket decides from now on.
    pub fn surrender(&self) -> u64 {
        self.fleet.store(false, Ordering::Release);
        self.ceiling.store(0, Ordering::Release);
        self.allowance.swap(0, Ordering::AcqRel)
    }

    /// Control thread: Redis is unreachable; the local bucket decides until it is back. The
    /// allowance is dropped (it was granted to a fleet view this replica no longer has).
    pub fn fall_back(&self) {
        self.fleet.store(false, Ordering::Release);
        self.ceiling.store(0, Ordering::Release);
        self.allowance.store(0, Ordering::Release);
    }
}

/// The most a replica holds for a key: two intervals between top-ups of its rate, or the
/// largest batch asked for, never more than the bucket. `interval_ms`: the time between the
/// starts of the last two rounds, the sync interval plus a round's own time.
pub fn hold(rate: Rate, interval_ms: u64, largest: u64) -> u64 {
    let per_interval = (2 * u64::from(rate.per_second) * interval_ms).div_ceil(1000);
    per_interval
        .max(largest)
        .clamp(1, u64::from(rate.burst).max(1))
}

/// Fleet rate limiting as `/metrics` shows it.
#[derive(Debug, Default)]
pub struct FleetStatus {
    /// `INGEST_REDIS_URL` is set.
    pub configured: AtomicBool,
    /// Redis is unreachable: every key is limited by this replica's own bucket.
    pub fallback: AtomicBool,
    /// Rounds that failed to reach Redis.
    pub errors: AtomicU64,
    /// Spans granted by Redis to this replica.
    pub granted: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const R10: Rate = Rate {
        per_second: 10,
        burst: 20,
    };

    /// Found in review: a refund arriving after a round had charged its batch took the charge of
    /// batches admitted since (the round's counter restarts from 0), so the fleet's bucket was
    /// undercharged. A refund takes back only spans of the round still counting.
    #[test]
    fn a_refund_after_its_round_leaves_later_charges_alone() {
        let l = Lease::default();
        let first = l.count_local(8);
        assert_eq!(l.demand().local, 8, "the round charges them");
        let second = l.count_local(5);
        assert_ne!(first, second);
        l.uncount_local(8, first);
        assert_eq!(l.demand().local, 5, "the later batch is still charged");
        // Refunded within its own round: not charged.
        let third = l.count_local(3);
        l.count_local(4);
        l.uncount_local(3, third);
        assert_eq!(l.demand().local, 4);
        // A round that failed puts its spans back, in the round counting now.
        l.recharge(6, 2);
        let d = l.demand();
        assert_eq!((d.local, d.returned), (6, 2));
    }

    /// Found by an audit: a refund of a batch taken before a round topped the lease up again
    /// filled the allowance past the hold (to 2H, and far more after a stalled fsync whose
    /// batches were all refused), past the N x H the fleet's bound allows. A refund fills the
    /// lease up to its hold; the rest goes back to Redis at the next round.
    #[test]
    fn a_refund_fills_the_lease_up_to_its_hold_and_returns_the_rest() {
        let l = Lease::default();
        l.grant(20, Some(20));
        assert!(matches!(l.take(R10, 20), Take::Taken { .. }));
        // The round tops it up while the batch waits on a later check.
        l.grant(20, Some(20));
        l.refund(20);
        let d = l.demand();
        assert_eq!((d.held, d.returned), (20, 20), "no more than the hold");
        assert_eq!(l.demand().returned, 0, "given back once");
        assert!(matches!(l.take(R10, 15), Take::Taken { .. }));
        l.refund(15);
        let d = l.demand();
        assert_eq!((d.held, d.returned), (20, 0), "room for all of it: kept");
        l.refund(7);
        // A round asking nothing keeps the hold; Redis gone, every refund is returned.
        l.grant(0, None);
        l.refund(1);
        assert_eq!(l.demand().returned, 8, "past the hold: returned");
        l.fall_back();
        l.refund(5);
        let d = l.demand();
        assert_eq!((d.held, d.returned), (0, 5));
    }

    #[test]
    fn a_lease_spends_what_was_granted() {
        let l = Lease::default();
        assert!(!l.is_fleet());
        l.grant(12, Some(12));
        assert!(l.is_fleet());
        // (spans asked, answer: Ok(remaining) or Err(retry_after_s))
        let cases: &[(u64, Result<u64, u64>)] = &[
            (5, Ok(7)),
            (7, Ok(0)),
            (1, Err(1)),
            // 15 missing at 10 spans/s: 2 s.
            (15, Err(2)),
            // A batch larger than the bucket costs the bucket (20): still 20 missing.
            (500, Err(2)),
        ];
        for &(spans, want) in cases {
            let got = match l.take(R10, spans) {
                Take::Taken { remaining, credit } => {
                    assert!(matches!(credit, Credit::Leased { .. }));
                    Ok(remaining)
                }
                Take::Refused { retry_after_s, .. } => Err(retry_after_s),
            };
            assert_eq!(got, want, "{spans} spans");
        }
        let d = l.demand();
        assert_eq!((d.held, d.asked, d.largest), (0, 5 + 7 + 1 + 15 + 20, 20));
        assert_eq!(l.demand().asked, 0, "counters restart each round");
        l.refund(3);
        assert_eq!(l.peek(R10), 3);
        l.fall_back();
        assert!(!l.is_fleet());
        assert_eq!(l.peek(R10), 0);
    }

    #[test]
    fn holds() {
        // (rate, burst, interval ms, largest asked, hold)
        let cases = [
            (100, 100, 100, 0, 20),
            (100, 100, 100, 50, 50),
            (100, 100, 100, 5000, 100),
            (1, 1, 100, 0, 1),
            (10_000, 10_000, 100, 0, 2000),
        ];
        for (per_second, burst, sync, largest, want) in cases {
            let r = Rate { per_second, burst };
            assert_eq!(hold(r, sync, largest), want, "{r:?} {sync} {largest}");
        }
    }
}
