//! The per-key rate limit: a token bucket counted in spans, as GCRA on one `AtomicU64`.
//!
//! GCRA (the generic cell rate algorithm) stores a single number per key, the *theoretical
//! arrival time* (TAT): the instant at which the bucket would be full again. With `rate` spans
//! per second and room for `burst` spans, one span "costs" `ceil(1e9 / rate)` ns and the bucket may
//! run at most `tau = burst` spans' cost ahead of now. A batch of cost `c` is allowed when
//! `max(tat, now) + c <= now + tau`, and then the TAT moves to `max(tat, now) + c`. Every worker
//! thread updates the same word with a compare-and-swap, so the limit holds for the whole process
//! whichever core serves the connection, without a lock.
//!
//! Time is nanoseconds on a monotonic clock with an arbitrary origin, passed in by the caller
//! (`now`), so tests pin it. A TAT of 0 means a full bucket, which is how every key starts.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use super::fleet::Lease;

const NS_PER_S: u128 = 1_000_000_000;

/// A TAT further than this past the plan in force's limit is debt run up under a plan that
/// refilled more slowly, and is cut to the limit. Less is a caller's `now` read a little before
/// another worker's (a thread descheduled between reading the clock and its compare-and-swap):
/// cutting that would hand the lag's worth of spans out.
const CUT_SLACK_NS: u64 = 1_000_000_000;

/// How much of a refusal's wait `Retry-After` may leave out: each span's cost is rounded up to
/// whole ns, so `rate` spans take a little over a second (200 ns at 300/s); an answer of
/// ceil(deficit / rate) seconds is honest to within this.
const RETRY_SLACK_NS: u64 = 1_000_000;

/// Highest rate a plan may set, in spans per second: at this rate a span still costs 10 ns.
pub const MAX_RATE: u32 = 100_000_000;

/// A bucket's shape: refill rate and capacity, both in spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Spans per second, 1..=`MAX_RATE`.
    pub per_second: u32,
    /// Capacity in spans, >= 1 (the contract's default is `per_second`).
    pub burst: u32,
}

impl Rate {
    /// Nanoseconds of credit one span costs, rounded up: never more than the rate. The
    /// rounding gives away less than 0.1% of the rate below 1,000,000 spans a second, and up to
    /// 10% near `MAX_RATE` (9.9e7 a second: 11 ns a span, 9.1e7).
    fn span_ns(self) -> u128 {
        NS_PER_S.div_ceil(u128::from(self.per_second.max(1)))
    }

    /// Nanoseconds of credit `spans` spans cost: `spans` times one span's, rounded once per
    /// span and not once per batch, so a full bucket takes exactly `burst` spans however they
    /// are split into batches (rounding each batch's cost up made three single spans at 3/s
    /// cost more than the whole bucket).
    fn cost_ns(self, spans: u64) -> u64 {
        u64::try_from(u128::from(spans) * self.span_ns()).unwrap_or(u64::MAX)
    }

    /// How far the TAT may run ahead of now: the time a full bucket takes to refill.
    fn tau_ns(self) -> u64 {
        self.cost_ns(u64::from(self.burst))
    }

    /// What one batch costs: its span count clamped to `1..=burst` (so a batch larger than the
    /// bucket still goes through when the bucket is full).
    pub fn cost_spans(self, spans: u64) -> u64 {
        spans.clamp(1, u64::from(self.burst.max(1)))
    }

    /// Whole spans available at `now` for a bucket whose TAT is `tat`.
    fn available(self, tat: u64, now: u64) -> u64 {
        let free_ns = now
            .saturating_add(self.tau_ns())
            .saturating_sub(tat.max(now));
        let spans = u128::from(free_ns) / self.span_ns();
        (spans as u64).min(u64::from(self.burst))
    }

    /// The packed form `Account` keeps in one atomic word: rate in the high half, burst in the
    /// low half; 0 = no limit.
    pub fn pack(rate: Option<Rate>) -> u64 {
        rate.map_or(0, |r| u64::from(r.per_second) << 32 | u64::from(r.burst))
    }

    pub fn unpack(word: u64) -> Option<Rate> {
        let (per_second, burst) = ((word >> 32) as u32, word as u32);
        (per_second > 0 && burst > 0).then_some(Rate { per_second, burst })
    }
}

/// What `Bucket::take` took for one batch, to hand back with `Bucket::refund` if the batch is
/// refused later on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credit {
    /// Out of the key's local bucket: `ns` of its credit, and `spans` counted for the charge
    /// to the fleet's bucket at lease round `round` (`Lease::count_local`); `tat` is the TAT
    /// the take left, at `now` on the caller's clock, which was `at` on this process's, after
    /// `cuts` cuts of the bucket's debt (`Bucket::cuts`).
    Local {
        ns: u64,
        spans: u64,
        round: u64,
        tat: u64,
        now: u64,
        at: Instant,
        cuts: u32,
    },
    /// Out of the lease's allowance (fleet mode).
    Leased { spans: u64 },
}

impl Credit {
    /// The caller's `now` when the credit was taken (0 for a lease's).
    pub fn taken_at(&self) -> u64 {
        match *self {
            Credit::Local { now, .. } => now,
            Credit::Leased { .. } => 0,
        }
    }
}

/// The answer of `Bucket::take`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// The batch's cost was taken. `remaining`: whole spans left; `credit`: what to hand back
    /// with `Bucket::refund` if the batch is refused later on.
    Taken { remaining: u64, credit: Credit },
    /// Not enough credit. `retry_after_s` = ceil(deficit / rate), at least 1: after that long the
    /// same batch fits (if nobody else spends the credit first).
    Refused { retry_after_s: u64, remaining: u64 },
}

/// One key's bucket: its theoretical arrival time, in ns on the caller's monotonic clock, and
/// the budget leased from the fleet (`fleet.rs`), which decides instead while it is in fleet
/// mode.
#[derive(Debug, Default)]
pub struct Bucket {
    tat: AtomicU64,
    /// How many times a plan change's debt was cut (`take_local`): a refund of a batch taken
    /// before a cut gives nothing back, the cut having forgiven its debt already.
    cuts: AtomicU32,
    pub lease: Lease,
}

impl Bucket {
    /// Takes the cost of a batch of `spans` spans at `now`, or says how long to wait.
    pub fn take(&self, rate: Rate, spans: u64, now: u64) -> Take {
        if self.lease.is_fleet() {
            return self.lease.take(rate, spans);
        }
        let mut taken = self.take_local(rate, spans, now);
        if let Take::Taken {
            credit: Credit::Local { spans, round, .. },
            ..
        } = &mut taken
        {
            *round = self.lease.count_local(*spans);
        }
        taken
    }

    /// The local GCRA.
    fn take_local(&self, rate: Rate, spans: u64, now: u64) -> Take {
        let cost_spans = rate.cost_spans(spans);
        let cost = rate.cost_ns(cost_spans);
        let limit = now.saturating_add(rate.tau_ns());
        let mut tat = self.tat.load(Ordering::Acquire);
        loop {
            // No more debt than the plan in force allows: one that ran ahead under a plan with
            // a longer refill (a plan changed while the bucket was in use) is cut to this one's
            // (kept, so the bucket refills from there), and `Retry-After` never passes the time
            // this plan's bucket takes to refill by more than `CUT_SLACK_NS`. (A caller whose
            // `now` is more than that behind another's, stalled between reading the clock and
            // this, cuts too: the lag's worth of spans, at most a burst, is handed out.)
            if tat > limit.saturating_add(CUT_SLACK_NS) {
                match self.tat.compare_exchange_weak(
                    tat,
                    limit,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        self.cuts.fetch_add(1, Ordering::AcqRel);
                        tat = limit;
                    }
                    Err(current) => {
                        tat = current;
                        continue;
                    }
                }
            }
            let new = tat.max(now).saturating_add(cost);
            if new > limit {
                // ceil(deficit / rate), as the contract says, and the time after which the
                // batch fits: to within `RETRY_SLACK_NS`, which is what the per-span rounding
                // adds at the rates most plans use (at 3e7/s it adds 20 ms a second, and the
                // answer counts it).
                let wait = (new - limit).saturating_sub(RETRY_SLACK_NS);
                return Take::Refused {
                    retry_after_s: wait.div_ceil(NS_PER_S as u64).max(1),
                    remaining: rate.available(tat, now),
                };
            }
            match self
                .tat
                .compare_exchange_weak(tat, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Take::Taken {
                        remaining: rate.available(new, now),
                        credit: Credit::Local {
                            ns: cost,
                            spans: cost_spans,
                            round: 0,
                            tat: new,
                            now,
                            at: Instant::now(),
                            cuts: self.cuts.load(Ordering::Acquire),
                        },
                    }
                }
                Err(current) => tat = current,
            }
        }
    }

    /// Whole spans available at `now`, without taking any.
    pub fn peek(&self, rate: Rate, now: u64) -> u64 {
        if self.lease.is_fleet() {
            return self.lease.peek(rate);
        }
        rate.available(self.tat.load(Ordering::Acquire), now)
    }

    /// Gives back what `take` took, for a batch refused by a later check (quota, full buffer,
    /// a write-ahead refusal after its fsync), now: `refund_at` with the caller's clock moved
    /// on by the time since the take.
    pub fn refund(&self, credit: Credit) {
        let now = match credit {
            Credit::Local { now, at, .. } => {
                now.saturating_add(u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX))
            }
            Credit::Leased { .. } => 0,
        };
        self.refund_at(credit, now);
    }

    /// Gives back, at `now`, what of the batch's cost the bucket has not refilled since: all of
    /// it at once, none once time passed the TAT the take left (its credit came back by
    /// itself, and giving it again would hand a later batch's cost back too). Spans the local
    /// bucket let through are no longer charged to the fleet's bucket (unless a lease round
    /// charged them already).
    pub fn refund_at(&self, credit: Credit, now: u64) {
        match credit {
            Credit::Leased { spans } => self.lease.refund(spans),
            Credit::Local {
                ns,
                spans,
                round,
                tat,
                cuts,
                ..
            } => {
                // At most the batch's cost; none of it once time passed the TAT its take left
                // (its credit came back by itself), or once a plan change cut the debt (which
                // forgave it); and never past a full bucket. (Batches taken and refunded around
                // it move its stretch of the TAT: this is exact when they are refunded too, in
                // any order, and otherwise off by at most its cost.)
                if self.cuts.load(Ordering::Acquire) == cuts {
                    let _ = self
                        .tat
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                            let back = ns.min(tat.saturating_sub(now)).min(t.saturating_sub(now));
                            Some(t - back)
                        });
                }
                self.lease.uncount_local(spans, round);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_second: u32, burst: u32) -> Rate {
        Rate { per_second, burst }
    }

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    #[derive(Debug, Clone, Copy)]
    enum Step {
        /// At `t` ns, take a batch of `spans`: expect `Ok(remaining)` or `Err(retry_after_s)`.
        Get(u64, u64, Result<u64, u64>),
        /// At `t` ns, expect this many spans available.
        Peek(u64, u64),
    }
    use Step::*;

    /// Runs steps against one fresh bucket.
    fn check(rate: Rate, steps: &[Step]) {
        // Start the clock well after 0 so that "full bucket" is not an artefact of tat == 0.
        let base = 1_000 * S;
        let b = Bucket::default();
        for (i, &step) in steps.iter().enumerate() {
            match step {
                Get(t, spans, want) => {
                    let got = match b.take(rate, spans, base + t) {
                        Take::Taken { remaining, .. } => Ok(remaining),
                        Take::Refused { retry_after_s, .. } => Err(retry_after_s),
                    };
                    assert_eq!(got, want, "step {i}: {step:?} with {rate:?}");
                }
                Peek(t, want) => assert_eq!(b.peek(rate, base + t), want, "step {i}: {step:?}"),
            }
        }
    }

    #[test]
    fn gcra_arithmetic() {
        let r10 = rate(10, 10);
        // A full bucket takes its capacity at once, then refills one span per 100 ms.
        check(
            r10,
            &[
                Peek(0, 10),
                Get(0, 4, Ok(6)),
                Get(0, 6, Ok(0)),
                Get(0, 1, Err(1)),
                Peek(99 * MS, 0),
                Peek(100 * MS, 1),
                Get(100 * MS, 1, Ok(0)),
                Get(100 * MS, 1, Err(1)),
                Peek(2 * S, 10),
            ],
        );
        // A batch larger than the bucket costs the whole bucket, and goes through when full.
        check(
            r10,
            &[
                Get(0, 5_000, Ok(0)),
                Get(0, 5_000, Err(1)),
                Get(999 * MS, 5_000, Err(1)),
                Get(S, 5_000, Ok(0)),
            ],
        );
        // An empty batch still costs one span.
        check(r10, &[Get(0, 0, Ok(9))]);
    }

    #[test]
    fn retry_after_is_the_real_deficit_rounded_up() {
        // 10 spans/s with room for 50: waits of several seconds exist.
        let r = rate(10, 50);
        check(
            r,
            &[
                Get(0, 50, Ok(0)),
                // Deficit 30 spans / 10 per s = 3 s.
                Get(0, 30, Err(3)),
                // 500 ms later 5 spans came back: deficit 25 -> 2.5 s -> 3.
                Get(500 * MS, 30, Err(3)),
                Get(500 * MS, 5, Ok(0)),
                // Deficit 0.5 span -> 50 ms -> rounded up to 1 s.
                Get(550 * MS, 1, Err(1)),
                Get(600 * MS, 1, Ok(0)),
                Get(600 * MS, 30, Err(3)),
                // Honouring that Retry-After of 3 s is enough for the 30 spans.
                Get(600 * MS + 3 * S, 30, Ok(0)),
            ],
        );
        // A rate that does not divide a second: 3 spans/s, 1 span costs 333 333 334 ns, so the
        // whole bucket refills in 1 000 000 002 ns (never faster than the rate).
        let r3 = rate(3, 3);
        check(
            r3,
            &[
                Get(0, 3, Ok(0)),
                Peek(333_333_333, 0),
                Peek(333_333_334, 1),
                Get(S, 3, Err(1)),
                Get(S + 2, 3, Ok(0)),
            ],
        );
    }

    /// A full bucket takes exactly its capacity however the spans are split into batches, also
    /// where a span's cost is rounded (a rate that does not divide a second). Found by an
    /// audit: each batch's cost was rounded up on its own, so at 3 spans/s three single spans
    /// cost 1 000 000 002 ns against a bucket of 1 000 000 000, and the third was refused.
    #[test]
    fn a_full_bucket_takes_its_capacity_in_any_split() {
        for per_second in [3u32, 7, 300, 3000, 100, 1000] {
            let r = Rate {
                per_second,
                burst: per_second,
            };
            let b = Bucket::default();
            let now = 1_000 * S;
            let passed = (0..per_second)
                .filter(|_| matches!(b.take(r, 1, now), Take::Taken { .. }))
                .count() as u32;
            assert_eq!(passed, per_second, "single spans at {per_second}/s");
            assert!(matches!(b.take(r, 1, now), Take::Refused { .. }));
            // A batch of 2 then the rest.
            let b = Bucket::default();
            assert!(matches!(b.take(r, 2, now), Take::Taken { .. }));
            assert!(
                matches!(
                    b.take(r, u64::from(per_second) - 2, now),
                    Take::Taken { remaining: 0, .. }
                ),
                "2 + {} at {per_second}/s",
                per_second - 2
            );
        }
    }

    #[test]
    fn refund_gives_the_cost_back() {
        let r = rate(10, 10);
        let b = Bucket::default();
        let Take::Taken { credit, remaining } = b.take(r, 7, S) else {
            panic!("a full bucket takes 7")
        };
        assert_eq!(remaining, 3);
        b.refund_at(credit, S);
        assert_eq!(b.peek(r, S), 10);
    }

    /// A refund that comes after the bucket refilled past the take gives nothing back: the
    /// batch's credit already came back with time, and a later batch's cost must not. (It
    /// used to take the cost off the TAT whatever it was: 20 spans through a bucket of 10.)
    #[test]
    fn a_late_refund_gives_back_only_what_did_not_refill() {
        let r = rate(10, 10);
        let b = Bucket::default();
        let Take::Taken { credit: a, .. } = b.take(r, 10, S) else {
            panic!("a full bucket takes 10")
        };
        // 5 s later the bucket is full again and another batch empties it.
        assert!(matches!(
            b.take(r, 10, 6 * S),
            Take::Taken { remaining: 0, .. }
        ));
        b.refund_at(a, 6 * S);
        assert_eq!(b.peek(r, 6 * S), 0, "nothing of the first batch is owed");
        // Refunded half way through its refill, half of it is given back.
        let b = Bucket::default();
        let Take::Taken { credit, .. } = b.take(r, 10, S) else {
            panic!("a full bucket takes 10")
        };
        b.refund_at(credit, S + S / 2);
        assert_eq!(b.peek(r, S + S / 2), 10);
    }

    /// A caller whose `now` is a little behind another's (read before it was descheduled) does
    /// not cut the debt the other ran up: it is refused, and the bucket stays empty.
    #[test]
    fn a_stale_now_does_not_cut_anothers_debt() {
        let r = rate(1_000_000, 1_000_000);
        let b = Bucket::default();
        assert!(matches!(
            b.take(r, 1_000_000, S + 5 * MS),
            Take::Taken { remaining: 0, .. }
        ));
        assert!(matches!(b.take(r, 1, S), Take::Refused { .. }));
        assert_eq!(b.peek(r, S + 5 * MS), 0);
    }

    /// Batches refused together (a full buffer) give back all they took, in any order.
    #[test]
    fn refunds_of_batches_taken_together_give_back_everything_in_any_order() {
        let r = rate(10, 10);
        for reversed in [false, true] {
            let b = Bucket::default();
            let Take::Taken { credit: a, .. } = b.take(r, 5, S) else {
                panic!("5 fit")
            };
            let Take::Taken { credit: c, .. } = b.take(r, 5, S) else {
                panic!("5 more fit")
            };
            let order = if reversed { [c, a] } else { [a, c] };
            for credit in order {
                b.refund_at(credit, S);
            }
            assert_eq!(b.peek(r, S), 10, "reversed: {reversed}");
        }
    }

    /// A refund after a plan change cut the TAT gives back only what of the batch is still
    /// under it, not the debt the cut forgave already.
    #[test]
    fn a_refund_after_a_cut_gives_back_no_more_than_is_left() {
        let slow = rate(10, 1000);
        let fast = rate(1000, 1000);
        let b = Bucket::default();
        assert!(matches!(b.take(slow, 500, S), Take::Taken { .. }));
        let Take::Taken { credit, .. } = b.take(slow, 500, S) else {
            panic!("the second half fits")
        };
        // The plan changes; a take under it cuts the TAT (and is refused).
        assert!(matches!(b.take(fast, 1, S), Take::Refused { .. }));
        b.refund_at(credit, S);
        // The cut left the bucket empty under the fast plan, the batch's cost among what it
        // forgave: the refund gives nothing back, as a bucket that never took the batch shows.
        let never = Bucket::default();
        assert!(matches!(never.take(slow, 500, S), Take::Taken { .. }));
        assert!(matches!(never.take(fast, 1, S), Take::Refused { .. }));
        assert_eq!(b.peek(fast, S), never.peek(fast, S));
        assert_eq!(b.peek(fast, S), 0);
    }

    /// A plan changed while its bucket ran ahead under a longer refill: the debt is cut to the
    /// new plan's, so `Retry-After` stays within its refill time.
    #[test]
    fn debt_from_a_plan_with_a_longer_refill_is_cut_to_the_new_one() {
        let slow = rate(10, 1000);
        let fast = rate(1000, 1000);
        let b = Bucket::default();
        assert!(matches!(
            b.take(slow, 1000, S),
            Take::Taken { remaining: 0, .. }
        ));
        // Under the old plan the bucket refills in 100 s; under the new one in 1 s.
        assert_eq!(
            b.take(fast, 1000, S),
            Take::Refused {
                retry_after_s: 1,
                remaining: 0
            }
        );
        assert!(matches!(b.take(fast, 1000, 2 * S), Take::Taken { .. }));
    }

    /// `Retry-After` is ceil(deficit / rate) in spans also when the rate does not divide a
    /// second (each span's cost in ns is rounded up: `rate` spans took a little over 1 s, and
    /// the answer said 2).
    #[test]
    fn retry_after_counts_the_deficit_in_spans() {
        for per_second in [3, 7, 300, 600, 700] {
            let r = Rate {
                per_second,
                burst: per_second,
            };
            let b = Bucket::default();
            let all = u64::from(per_second);
            assert!(matches!(
                b.take(r, all, S),
                Take::Taken { remaining: 0, .. }
            ));
            assert_eq!(
                b.take(r, all, S),
                Take::Refused {
                    retry_after_s: 1,
                    remaining: 0
                },
                "{per_second}/s"
            );
        }
    }
    /// Where the per-span rounding adds more than `RETRY_SLACK_NS` (3e7 spans a second: 20 ms
    /// a second), `Retry-After` counts it: after that long the batch fits.
    #[test]
    fn retry_after_is_honest_at_high_rates() {
        let r = rate(30_000_000, 30_000_000);
        let b = Bucket::default();
        let all = u64::from(r.per_second);
        assert!(matches!(b.take(r, all, S), Take::Taken { .. }));
        let Take::Refused { retry_after_s, .. } = b.take(r, all, S) else {
            panic!("an empty bucket refuses")
        };
        assert_eq!(retry_after_s, 2);
        assert!(matches!(
            b.take(r, all, S + retry_after_s * S),
            Take::Taken { .. }
        ));
    }

    #[test]
    fn packing() {
        let r = rate(MAX_RATE, u32::MAX);
        assert_eq!(Rate::unpack(Rate::pack(Some(r))), Some(r));
        assert_eq!(Rate::unpack(Rate::pack(None)), None);
    }

    #[test]
    fn threads_share_one_limit() {
        // 8 threads race for a bucket of 1000 at a frozen instant: exactly 1000 spans pass.
        let r = rate(1000, 1000);
        let b = std::sync::Arc::new(Bucket::default());
        let taken: u64 = (0..8)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    (0..500)
                        .filter(|_| matches!(b.take(r, 1, S), Take::Taken { .. }))
                        .count() as u64
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(taken, 1000);
    }
}
