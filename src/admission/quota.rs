//! The monthly quota of one organisation: how many spans it used this UTC month, lock-free.
//!
//! Three counters, each a (month, count) pair packed in one `AtomicU64`, so a new month resets a
//! counter in the same atomic step that first writes to it, with no reset race:
//!
//! - `stored`: spans of the organisation that ClickHouse held for the month at the last sync
//!   (every replica's flushed rows);
//! - `unsynced`: spans this process accepted that the last `stored` snapshot does not include;
//! - `flushed`: spans of this process written (or given up) since the last sync. Spans waiting
//!   in the spool are not: the flush thread keeps their ticket until they are inserted.
//!
//! Used = `stored + unsynced`. Workers reserve a batch against the limit with one CAS on
//! `unsynced`; the flush side adds to `flushed` when a batch leaves the write buffer; the sync
//! (control thread) takes `flushed` *before* it counts in ClickHouse, stores the count, and then
//! removes what it took from `unsynced`: rows flushed before the count started are in the count,
//! rows still buffered stay in `unsynced`. Rows flushed while the count ran may be in it or not;
//! the sync counts such an organisation again, having taken them (`flushed_since_sync`), so
//! they do not count twice, unless flushes keep racing its counts (then they count twice until
//! the next sync, never lost). See README "Rate limits and quotas".

use std::sync::atomic::{AtomicU64, Ordering};

use crate::calendar::Month;

/// Low bits of a packed word hold the count (up to 1.7e13 spans a month), high bits the month.
const COUNT_BITS: u32 = 44;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// The largest monthly quota a plan may set: its hard limit, and a batch past it, still fit a
/// counter (a larger one saturated the counters below its hard limit, so it never refused).
pub const MAX_QUOTA: u64 = 10_000_000_000_000;
const _: () = assert!(MAX_QUOTA + MAX_QUOTA / 10 + (1 << 32) < COUNT_MASK);

/// The hard limit of a plan's monthly quota: floor(limit x 1.1). Refuse when used + incoming
/// would pass it.
pub fn hard_limit(limit: u64) -> u64 {
    limit.saturating_add(limit / 10)
}

/// Whether `used` has reached 90% of `limit` (the warning threshold).
pub fn near_limit(used: u64, limit: u64) -> bool {
    u128::from(used) * 10 >= u128::from(limit) * 9
}

/// A count that belongs to one month; reading it for another month gives 0.
#[derive(Debug, Default)]
pub struct MonthCount(AtomicU64);

fn pack(month: Month, count: u64) -> u64 {
    u64::from(month.0) << COUNT_BITS | count.min(COUNT_MASK)
}

fn unpack(word: u64) -> (Month, u64) {
    (Month((word >> COUNT_BITS) as u32), word & COUNT_MASK)
}

/// `word`'s count for `month` (0 when the word holds another month).
fn count_in(word: u64, month: Month) -> u64 {
    match unpack(word) {
        (m, n) if m == month => n,
        _ => 0,
    }
}

impl MonthCount {
    pub fn get(&self, month: Month) -> u64 {
        count_in(self.0.load(Ordering::Acquire), month)
    }

    /// Applies `f` to the count of `month`; a word of an older month counts as 0 and moves to
    /// `month`; a word of a newer month is left alone (the change belongs to a month that is over).
    fn update(&self, month: Month, f: impl Fn(u64) -> u64) -> u64 {
        let old = self
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| match unpack(w) {
                (m, _) if m > month => None,
                (m, n) if m == month => Some(pack(month, f(n))),
                _ => Some(pack(month, f(0))),
            });
        match old {
            Ok(w) => count_in(w, month),
            Err(_) => 0,
        }
    }

    pub fn add(&self, month: Month, n: u64) {
        self.update(month, |c| c.saturating_add(n));
    }

    pub fn sub(&self, month: Month, n: u64) {
        self.update(month, |c| c.saturating_sub(n));
    }

    pub fn set(&self, month: Month, n: u64) {
        self.update(month, |_| n);
    }

    /// Sets the month's count to 0 and returns what it was.
    pub fn take(&self, month: Month) -> u64 {
        self.update(month, |_| 0)
    }
}

/// One organisation's usage of the month.
#[derive(Debug, Default)]
pub struct Usage {
    stored: MonthCount,
    unsynced: MonthCount,
    flushed: MonthCount,
}

impl Usage {
    /// Spans used in `month`, as far as this process knows.
    pub fn used(&self, month: Month) -> u64 {
        self.stored
            .get(month)
            .saturating_add(self.unsynced.get(month))
    }

    /// The month a reservation at `month` counts in: `month`, or the later one reserved in
    /// already (the month never goes back, see `reserve`). What answers that reserve nothing
    /// report usage for.
    pub fn month_from(&self, month: Month) -> Month {
        month.max(unpack(self.unsynced.0.load(Ordering::Acquire)).0)
    }

    /// Reserves `spans` spans of `month` if used + spans stays within `hard_limit`. Returns the
    /// month reserved in and the usage after the batch, or, refused, that month and the usage
    /// before it. One CAS: concurrent workers cannot both pass the last free spans.
    ///
    /// The month never goes back: a caller whose clock is behind a month another caller has
    /// reserved in already (a worker that read the clock just before midnight, or the wall
    /// clock stepped back across the turn of a month) reserves in that later month, against
    /// its counts. Its rows are stamped with the earlier month, so they count in the later one
    /// only until they are flushed and the next sync of the later month takes them out of
    /// `unsynced`: an over-count for a few seconds after midnight, or, for a clock stepped back
    /// (whose syncs count the earlier month meanwhile), until the clock is in the later month
    /// again; letting them through uncounted (as this did) let such a clock ignore the quota
    /// all that time.
    pub fn reserve(
        &self,
        month: Month,
        spans: u64,
        hard_limit: u64,
    ) -> Result<(Month, u64), (Month, u64)> {
        let mut word = self.unsynced.0.load(Ordering::Acquire);
        loop {
            let (m, unsynced) = unpack(word);
            let month = month.max(m);
            let unsynced = if m == month { unsynced } else { 0 };
            let used = self.stored.get(month).saturating_add(unsynced);
            if used.saturating_add(spans) > hard_limit {
                return Err((month, used));
            }
            let new = pack(month, unsynced + spans);
            match self.unsynced.0.compare_exchange_weak(
                word,
                new,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok((month, used + spans)),
                Err(current) => word = current,
            }
        }
    }

    /// Undoes a reservation whose batch was not buffered after all (full buffer, shutdown).
    pub fn release(&self, month: Month, spans: u64) {
        self.unsynced.sub(month, spans);
    }

    /// A reserved batch left the write buffer: written to ClickHouse or given up.
    pub fn flushed(&self, month: Month, spans: u64) {
        self.flushed.add(month, spans);
    }

    /// First step of a sync: takes the spans flushed since the last one. Call it before the
    /// count in ClickHouse starts, then `finish_sync` with the count, or `abort_sync`.
    pub fn begin_sync(&self, month: Month) -> u64 {
        self.flushed.take(month)
    }

    /// Spans flushed since `begin_sync` last took them: while a count runs, rows it may or
    /// may not have seen.
    pub fn flushed_since_sync(&self, month: Month) -> u64 {
        self.flushed.get(month)
    }

    /// Last step of a sync: `stored` is the count of the month in ClickHouse, `taken` what
    /// `begin_sync` returned.
    pub fn finish_sync(&self, month: Month, stored: u64, taken: u64) {
        // Store first, subtract second: a reader in between over-counts, never under-counts.
        self.stored.set(month, stored);
        self.unsynced.sub(month, taken);
    }

    /// The count failed: put back what `begin_sync` took.
    pub fn abort_sync(&self, month: Month, taken: u64) {
        self.flushed.add(month, taken);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAN: Month = Month(660);
    const FEB: Month = Month(661);

    #[test]
    fn hard_limit_and_warning() {
        // (limit, hard limit, first used that warns)
        let cases: &[(u64, u64, u64)] = &[
            (100, 110, 90),
            (10_000, 11_000, 9_000),
            (1, 1, 1),
            (9, 9, 9),
            (15, 16, 14),
            (u64::MAX, u64::MAX, 16_602_069_666_338_596_454),
        ];
        for &(limit, hard, warn) in cases {
            assert_eq!(hard_limit(limit), hard, "{limit}");
            assert!(near_limit(warn, limit), "{limit}: {warn}");
            assert!(!near_limit(warn - 1, limit), "{limit}: {}", warn - 1);
        }
    }

    #[test]
    fn refuses_the_batch_that_would_pass_the_hard_limit() {
        // Plan of 100 spans: the hard limit is 110. Batches of 30 pass until 90; 90 + 30 > 110.
        let u = Usage::default();
        let hard = hard_limit(100);
        assert_eq!(u.reserve(JAN, 30, hard), Ok((JAN, 30)));
        assert_eq!(u.reserve(JAN, 30, hard), Ok((JAN, 60)));
        assert_eq!(u.reserve(JAN, 30, hard), Ok((JAN, 90)));
        assert_eq!(u.reserve(JAN, 30, hard), Err((JAN, 90)));
        // A refused batch consumed nothing: exactly the 20 left still fit.
        assert_eq!(u.reserve(JAN, 21, hard), Err((JAN, 90)));
        assert_eq!(u.reserve(JAN, 20, hard), Ok((JAN, 110)));
        assert_eq!(u.reserve(JAN, 1, hard), Err((JAN, 110)));
        // A released reservation gives its spans back.
        u.release(JAN, 20);
        assert_eq!(u.used(JAN), 90);
    }

    /// The largest quota a plan may set is still enforced: its hard limit fits the counters.
    #[test]
    fn the_largest_quota_is_enforced() {
        let u = Usage::default();
        let hard = hard_limit(MAX_QUOTA);
        assert_eq!(u.reserve(JAN, hard - 1, hard), Ok((JAN, hard - 1)));
        assert_eq!(u.reserve(JAN, 2, hard), Err((JAN, hard - 1)));
        assert_eq!(u.reserve(JAN, 1, hard), Ok((JAN, hard)));
        assert_eq!(u.reserve(JAN, 1, hard), Err((JAN, hard)));
    }

    #[test]
    fn a_new_month_starts_from_zero() {
        let u = Usage::default();
        let hard = hard_limit(100);
        assert_eq!(u.reserve(JAN, 100, hard), Ok((JAN, 100)));
        u.flushed(JAN, 100);
        let taken = u.begin_sync(JAN);
        u.finish_sync(JAN, 100, taken);
        assert_eq!(u.reserve(JAN, 11, hard), Err((JAN, 100)));
        // February: nothing used yet, whatever January's counters say.
        assert_eq!(u.used(FEB), 0);
        assert_eq!(u.reserve(FEB, 100, hard), Ok((FEB, 100)));
        // A late January event (a batch flushed after the turn of the month, another
        // worker's clock behind) does not touch February.
        u.flushed(JAN, 100);
        u.release(JAN, 5);
        assert_eq!(u.used(FEB), 100);
        // A worker still in January once February started reserves in February.
        assert_eq!(u.reserve(JAN, 1_000, hard), Err((FEB, 100)));
        assert_eq!(u.reserve(JAN, 10, hard), Ok((FEB, 110)));
        assert_eq!(u.used(FEB), 110);
        // A sync of January that finishes after one of February does not overwrite February.
        let t = u.begin_sync(FEB);
        u.finish_sync(FEB, 0, t);
        u.finish_sync(JAN, 5, 0);
        assert_eq!(u.used(FEB), 110);
    }

    /// A wall clock stepped back across the turn of a month (one that ran ahead, corrected)
    /// does not lift the quota. Found by an audit: a reservation for a month before the one
    /// the counters had reached was let through uncounted, whatever the usage, for as long as
    /// the clock stayed behind; and its spans never counted once flushed.
    #[test]
    fn a_clock_stepped_back_across_a_month_keeps_the_quota() {
        let u = Usage::default();
        let hard = hard_limit(100);
        // February 1st: the organisation uses its whole quota.
        assert_eq!(u.reserve(FEB, 110, hard), Ok((FEB, 110)));
        // The clock steps back into January 31st: the quota still holds.
        assert_eq!(u.reserve(JAN, 1, hard), Err((FEB, 110)));
        // Room again (a batch given back): a January reservation takes it, in February.
        u.release(FEB, 10);
        assert_eq!(u.reserve(JAN, 10, hard), Ok((FEB, 110)));
        assert_eq!(u.used(FEB), 110);
        // Its spans leave `unsynced` once flushed and synced, as any other February spans do
        // (ClickHouse counts them in January, by their `ingested_at`).
        u.flushed(FEB, 110);
        let t = u.begin_sync(FEB);
        u.finish_sync(FEB, 100, t);
        assert_eq!(u.used(FEB), 100);
        // A sync of February stored its count before this process reserved anything in
        // February: that count holds too (the sync moved `unsynced` to February).
        let u = Usage::default();
        assert_eq!(u.reserve(JAN, 10, hard), Ok((JAN, 10)));
        u.finish_sync(FEB, 110, 0);
        assert_eq!(u.reserve(JAN, 1, hard), Err((FEB, 110)));
    }

    #[test]
    fn sync_keeps_unflushed_and_counts_flushed_once() {
        let u = Usage::default();
        let hard = hard_limit(1_000);
        // Start: ClickHouse holds 100 spans of this org (other replicas, earlier runs).
        let t = u.begin_sync(JAN);
        u.finish_sync(JAN, 100, t);
        assert_eq!(u.used(JAN), 100);
        // This process accepts 50 + 30; the 50 are flushed, the 30 still buffered.
        u.reserve(JAN, 50, hard).unwrap();
        u.reserve(JAN, 30, hard).unwrap();
        u.flushed(JAN, 50);
        assert_eq!(u.used(JAN), 180);
        // Next sync: ClickHouse now has 100 + our 50 + 20 from another replica.
        let t = u.begin_sync(JAN);
        assert_eq!(t, 50);
        u.finish_sync(JAN, 170, t);
        assert_eq!(u.used(JAN), 200, "170 stored + 30 still buffered");
        // A batch flushed while the count ran is counted twice until the next sync...
        u.reserve(JAN, 10, hard).unwrap();
        let t = u.begin_sync(JAN);
        u.flushed(JAN, 30);
        u.finish_sync(JAN, 200, t);
        assert_eq!(u.used(JAN), 240);
        // ...and once after it.
        let t = u.begin_sync(JAN);
        u.finish_sync(JAN, 200, t);
        assert_eq!(u.used(JAN), 210);
        // A failed count puts back what it took.
        u.flushed(JAN, 10);
        let t = u.begin_sync(JAN);
        u.abort_sync(JAN, t);
        let t = u.begin_sync(JAN);
        u.finish_sync(JAN, 210, t);
        assert_eq!(u.used(JAN), 210);
    }

    #[test]
    fn concurrent_reservations_never_pass_the_limit() {
        let u = std::sync::Arc::new(Usage::default());
        let hard = hard_limit(1_000);
        let accepted: u64 = (0..8)
            .map(|_| {
                let u = u.clone();
                std::thread::spawn(move || {
                    (0..200).filter(|_| u.reserve(JAN, 7, hard).is_ok()).count() as u64 * 7
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(accepted, 1_100 / 7 * 7);
        assert_eq!(u.used(JAN), accepted);
    }
}
