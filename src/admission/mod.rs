//! Checks 6 and 7 of the contract: the key's rate limit, then its organisation's monthly quota.
//!
//! Both run on the worker after the schema check and before the write buffer, without a lock:
//! one compare-and-swap on the key's `Bucket` (`rate.rs`) and one on the organisation's `Usage`
//! (`quota.rs`). The control thread owns the rest: it loads plans (`plan.rs`) for organisations
//! into their `Account`s, hands each key's bucket over to the next key set, and re-counts usage
//! in ClickHouse every few seconds. A batch refused by the quota gets its rate-limit tokens back,
//! and a batch refused after admission (full buffer, shutdown, the write-ahead log full or
//! failing) gets both back.

pub mod fleet;
pub mod plan;
pub mod quota;
pub mod rate;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::auth::Principal;
use crate::calendar::Month;
use plan::Plan;
use quota::{hard_limit, near_limit, Usage};
use rate::{Credit, Rate, Take};

/// Why a batch was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionError {
    /// The key's rate limit: `Retry-After` from the real deficit.
    RateLimited {
        per_second: u32,
        burst: u32,
        retry_after_s: u64,
    },
    /// The organisation's monthly quota is used up (not retryable this month).
    QuotaExceeded {
        limit: u64,
        used: u64,
        spans: u64,
        month: Month,
    },
}

/// Admission state reported on every answer that got past authentication.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitHeaders {
    /// `X-RateLimit-Limit` (bucket capacity in spans) and `X-RateLimit-Remaining` (whole spans
    /// left); absent when the key's plan has no rate limit.
    pub rate: Option<(u64, u64)>,
    /// `X-Quota-Used` and `X-Quota-Limit` (spans this UTC month) with `X-Quota-Warning: 90%`:
    /// present once usage reaches 90% of the plan's quota, and on a `quota_exceeded` refusal.
    pub quota: Option<(u64, u64)>,
}

/// A limit header's value (`LimitHeaders::each`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitValue {
    Count(u64),
    Text(&'static str),
}

impl LimitHeaders {
    /// Each header these limits give, in the order answers carry them: the names and values
    /// that OTLP/HTTP's and v1's headers and gRPC's metadata all write.
    pub fn each(&self, mut header: impl FnMut(&'static str, LimitValue)) {
        if let Some((limit, remaining)) = self.rate {
            header("x-ratelimit-limit", LimitValue::Count(limit));
            header("x-ratelimit-remaining", LimitValue::Count(remaining));
        }
        if let Some((used, limit)) = self.quota {
            header("x-quota-warning", LimitValue::Text("90%"));
            header("x-quota-used", LimitValue::Count(used));
            header("x-quota-limit", LimitValue::Count(limit));
        }
    }
}

/// Monthly quota word meaning "unlimited".
const UNLIMITED: u64 = u64::MAX;

/// One organisation: the plan in force and the month's usage. Shared by all its keys' principals
/// and kept across key-set refreshes, so usage and counters survive a refresh.
pub struct Account {
    pub org_id: Arc<str>,
    /// The plan's rate (`Rate::pack`), set by the control thread.
    rate: AtomicU64,
    /// The plan's monthly span quota; `UNLIMITED` for none.
    monthly_spans: AtomicU64,
    pub usage: Usage,
    /// Batches refused with `quota_exceeded`, for `/metrics`.
    pub quota_refusals: AtomicU64,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("org_id", &self.org_id)
            .field("rate", &self.rate())
            .field("monthly_spans", &self.monthly_spans())
            .finish_non_exhaustive()
    }
}

impl Account {
    pub fn new(org_id: Arc<str>, plan: &Plan) -> Account {
        let account = Account {
            org_id,
            rate: AtomicU64::new(0),
            monthly_spans: AtomicU64::new(UNLIMITED),
            usage: Usage::default(),
            quota_refusals: AtomicU64::new(0),
        };
        account.set_plan(plan);
        account
    }

    /// Puts `plan` in force. Returns true when the organisation had no quota and now has one
    /// (its usage must be counted before it can be trusted).
    pub fn set_plan(&self, plan: &Plan) -> bool {
        self.rate.store(Rate::pack(plan.rate), Ordering::Release);
        let before = self
            .monthly_spans
            .swap(plan.monthly_spans.unwrap_or(UNLIMITED), Ordering::AcqRel);
        before == UNLIMITED && plan.monthly_spans.is_some()
    }

    pub fn rate(&self) -> Option<Rate> {
        Rate::unpack(self.rate.load(Ordering::Acquire))
    }

    pub fn monthly_spans(&self) -> Option<u64> {
        Some(self.monthly_spans.load(Ordering::Acquire)).filter(|&n| n != UNLIMITED)
    }
}

/// Every organisation the control thread knows, for the usage sync and `/metrics`.
pub struct Accounts(ArcSwap<Vec<Arc<Account>>>);

impl Default for Accounts {
    fn default() -> Accounts {
        Accounts(ArcSwap::from_pointee(Vec::new()))
    }
}

impl Accounts {
    pub fn replace(&self, accounts: Vec<Arc<Account>>) {
        self.0.store(Arc::new(accounts));
    }

    pub fn load(&self) -> Arc<Vec<Arc<Account>>> {
        self.0.load_full()
    }
}

/// Spans of a buffered batch counted in its organisation's usage. It travels inside the
/// `RowBatch` (through the write-ahead thread in `wal` mode); the flush thread keeps it while
/// the batch waits in memory or in the spool and drops it once the rows are written or given
/// up, which moves the spans from "buffered" to "flushed" for the next usage sync. It is
/// process-local accounting, never written to the spool: a batch read back from a previous
/// run's spool carries an empty ticket.
#[derive(Default)]
pub struct UsageTicket(Option<(Arc<Account>, Month, u64)>);

impl Drop for UsageTicket {
    fn drop(&mut self) {
        if let Some((account, month, spans)) = self.0.take() {
            account.usage.flushed(month, spans);
        }
    }
}

impl UsageTicket {
    /// No quota to account for (the organisation has none, or the ticket was moved out).
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `n` of the batch's rows are written or given up: their spans leave the buffered count
    /// now, not when the whole batch is done (a batch partly stored while the rest waits, on
    /// a shard that refuses its part or in a bisection, was counted twice meanwhile: in
    /// ClickHouse's count and in memory). The ticket keeps the rest.
    pub fn flush_part(&mut self, n: u64) {
        if let Some((account, month, spans)) = &mut self.0 {
            let part = n.min(*spans);
            account.usage.flushed(*month, part);
            *spans -= part;
        }
    }

    /// The batch was not buffered after all: its spans go back to the quota.
    pub fn release(mut self) {
        if let Some((account, month, spans)) = self.0.take() {
            account.usage.release(month, spans);
        }
    }
}

impl Clone for UsageTicket {
    /// A copy of a batch is not a second reservation: the copy carries no ticket.
    fn clone(&self) -> UsageTicket {
        UsageTicket(None)
    }
}

impl fmt::Debug for UsageTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some((a, m, n)) => write!(f, "UsageTicket({} {m} {n})", a.org_id),
            None => f.write_str("UsageTicket(none)"),
        }
    }
}

/// What `admit` took for a batch: handed to the batch (`into_ticket`) once it is buffered, or
/// given back (`cancel`) if it is refused after all.
#[must_use = "a reservation is either turned into a ticket or cancelled"]
#[derive(Debug)]
pub struct Reservation {
    /// Rate-limit credit taken (`None`: no rate limit).
    credit: Option<Credit>,
    /// Quota reserved (`None`: no quota).
    quota: Option<(Month, u64)>,
}

impl Reservation {
    /// The batch is buffered: its spans stay counted until the ticket is dropped.
    pub fn into_ticket(self, principal: &Principal) -> UsageTicket {
        self.into_parts(principal).0
    }

    /// The batch is handed over but may still be refused (write-ahead mode: the disk may fail
    /// or fill up before the fsync): the ticket goes with the batch (`UsageTicket::release`
    /// gives the quota back), the rate-limit credit stays with the request (`RateRefund`).
    pub fn into_parts(self, principal: &Principal) -> (UsageTicket, RateRefund) {
        let ticket = UsageTicket(
            self.quota
                .map(|(month, spans)| (principal.account.clone(), month, spans)),
        );
        let refund = RateRefund(self.credit.map(|c| (principal.bucket.clone(), c)));
        (ticket, refund)
    }

    /// The batch was not buffered (refused by the same request's next check, as it was
    /// admitted): give the rate-limit credit, all of it, and the quota back.
    pub fn cancel(self, principal: &Principal) {
        if let Some(credit) = self.credit {
            principal.bucket.refund_at(credit, credit.taken_at());
        }
        if let Some((month, spans)) = self.quota {
            principal.account.usage.release(month, spans);
        }
    }
}

/// Rate-limit credit a handed-over batch took, given back if the batch is refused after all.
#[derive(Debug, Default)]
#[must_use = "dropping a refund keeps the credit taken; call `give_back` if the batch is refused"]
pub struct RateRefund(Option<(Arc<rate::Bucket>, Credit)>);

impl RateRefund {
    /// The batch was refused: the key gets the credit back.
    pub fn give_back(self) {
        if let Some((bucket, credit)) = self.0 {
            bucket.refund(credit);
        }
    }

    /// `give_back` at `now` on the caller's monotonic clock (tests pin it).
    #[cfg(test)]
    fn give_back_at(self, now: u64) {
        if let Some((bucket, credit)) = self.0 {
            bucket.refund_at(credit, now);
        }
    }
}

/// The headers of an answer that got past authentication but was not admitted (or not
/// checked): rate-limit credit and, past 90%, quota usage, without taking anything.
pub fn peek(principal: &Principal, mono_ns: u64, now_ms: u64) -> LimitHeaders {
    let account = &principal.account;
    let rate = account
        .rate()
        .map(|r| (u64::from(r.burst), principal.bucket.peek(r, mono_ns)));
    LimitHeaders {
        rate,
        quota: quota_warning(account, now_ms),
    }
}

/// The quota headers at `now_ms` (none under 90% of the quota, or without one): the usage of
/// the month a batch would be reserved in, as `admit` reports it.
fn quota_warning(account: &Account, now_ms: u64) -> Option<(u64, u64)> {
    account.monthly_spans().and_then(|limit| {
        let used = account
            .usage
            .used(account.usage.month_from(Month::of_ms(now_ms)));
        near_limit(used, limit).then_some((used, limit))
    })
}

/// Checks 6 (rate limit) and 7 (quota) for a batch of `spans` spans. On success the batch's
/// rate-limit credit and quota are taken; `headers` gets what the answer reports either way,
/// in whole: what a `peek` before the body found (a month may have begun since, a sync or a
/// plan change may have moved the limits) is replaced.
pub fn admit(
    principal: &Principal,
    spans: u64,
    mono_ns: u64,
    now_ms: u64,
    headers: &mut LimitHeaders,
) -> Result<Reservation, AdmissionError> {
    let account = &principal.account;
    *headers = LimitHeaders::default();
    let mut reservation = Reservation {
        credit: None,
        quota: None,
    };
    if let Some(rate) = account.rate() {
        match principal.bucket.take(rate, spans, mono_ns) {
            Take::Taken { remaining, credit } => {
                headers.rate = Some((u64::from(rate.burst), remaining));
                reservation.credit = Some(credit);
            }
            Take::Refused {
                retry_after_s,
                remaining,
            } => {
                headers.rate = Some((u64::from(rate.burst), remaining));
                headers.quota = quota_warning(account, now_ms);
                return Err(AdmissionError::RateLimited {
                    per_second: rate.per_second,
                    burst: rate.burst,
                    retry_after_s,
                });
            }
        }
    }
    if let Some(limit) = account.monthly_spans() {
        match account
            .usage
            .reserve(Month::of_ms(now_ms), spans, hard_limit(limit))
        {
            Ok((month, used)) => {
                headers.quota = near_limit(used, limit).then_some((used, limit));
                reservation.quota = Some((month, spans));
            }
            Err((month, used)) => {
                reservation.cancel(principal);
                if let (Some(rate), Some((_, remaining))) = (account.rate(), headers.rate.as_mut())
                {
                    // The credit just given back is available again.
                    *remaining = principal.bucket.peek(rate, mono_ns);
                }
                headers.quota = Some((used, limit));
                account.quota_refusals.fetch_add(1, Ordering::Relaxed);
                return Err(AdmissionError::QuotaExceeded {
                    limit,
                    used,
                    spans,
                    month,
                });
            }
        }
    }
    Ok(reservation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(rate: Option<(u32, u32)>, quota: Option<u64>) -> Principal {
        let plan = Plan {
            name: "test".into(),
            monthly_spans: quota,
            rate: rate.map(|(per_second, burst)| Rate { per_second, burst }),
        };
        let account = Arc::new(Account::new("org".into(), &plan));
        Principal::new("org".into(), "".into(), account)
    }

    const S: u64 = 1_000_000_000;
    /// 2024-01-15 and 2024-02-01, Unix ms.
    const JAN: u64 = 1_705_276_800_000;
    const FEB: u64 = 1_706_745_600_000;

    /// (status, code, Retry-After, rate headers, quota headers) of one admission.
    type Answer = (
        u16,
        &'static str,
        Option<u64>,
        Option<(u64, u64)>,
        Option<(u64, u64)>,
    );

    fn admit_one(p: &Principal, spans: u64, mono: u64, now_ms: u64) -> Answer {
        let mut h = LimitHeaders::default();
        match admit(p, spans, mono, now_ms, &mut h) {
            Ok(r) => {
                drop(r.into_ticket(p));
                (202, "", None, h.rate, h.quota)
            }
            Err(AdmissionError::RateLimited { retry_after_s, .. }) => {
                (429, "rate_limited", Some(retry_after_s), h.rate, h.quota)
            }
            Err(AdmissionError::QuotaExceeded { .. }) => {
                (429, "quota_exceeded", None, h.rate, h.quota)
            }
        }
    }

    #[test]
    fn rate_then_quota() {
        // 10 spans/s, plan of 100 spans a month (hard limit 110).
        let p = principal(Some((10, 10)), Some(100));
        let cases: &[(u64, u64, u64, Answer)] = &[
            // (spans, mono s, wall ms, answer)
            (10, 1, JAN, (202, "", None, Some((10, 0)), None)),
            (
                1,
                1,
                JAN,
                (429, "rate_limited", Some(1), Some((10, 0)), None),
            ),
            (10, 2, JAN, (202, "", None, Some((10, 0)), None)),
            (10, 3, JAN, (202, "", None, Some((10, 0)), None)),
            (10, 4, JAN, (202, "", None, Some((10, 0)), None)),
            (10, 5, JAN, (202, "", None, Some((10, 0)), None)),
            (10, 6, JAN, (202, "", None, Some((10, 0)), None)),
            (10, 7, JAN, (202, "", None, Some((10, 0)), None)),
            (10, 8, JAN, (202, "", None, Some((10, 0)), None)),
            // 90 of 100: the warning starts.
            (10, 9, JAN, (202, "", None, Some((10, 0)), Some((90, 100)))),
            // 90 + 30 > 110: refused without Retry-After, and the rate credit is given back.
            (
                30,
                10,
                JAN,
                (429, "quota_exceeded", None, Some((10, 10)), Some((90, 100))),
            ),
            (
                10,
                10,
                JAN,
                (202, "", None, Some((10, 0)), Some((100, 100))),
            ),
            (
                10,
                11,
                JAN,
                (202, "", None, Some((10, 0)), Some((110, 100))),
            ),
            (
                1,
                12,
                JAN,
                (
                    429,
                    "quota_exceeded",
                    None,
                    Some((10, 10)),
                    Some((110, 100)),
                ),
            ),
            // A new month starts from zero.
            (10, 13, FEB, (202, "", None, Some((10, 0)), None)),
        ];
        for (i, &(spans, mono_s, now_ms, want)) in cases.iter().enumerate() {
            assert_eq!(admit_one(&p, spans, mono_s * S, now_ms), want, "case {i}");
        }
        assert_eq!(p.account.quota_refusals.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn unlimited_plans_take_nothing_and_report_nothing() {
        let p = principal(None, None);
        for _ in 0..1000 {
            assert_eq!(admit_one(&p, 2000, 0, JAN), (202, "", None, None, None));
        }
        assert_eq!(peek(&p, 0, JAN), LimitHeaders::default());
    }

    #[test]
    fn cancel_gives_everything_back() {
        let p = principal(Some((10, 10)), Some(100));
        let mut h = LimitHeaders::default();
        let r = admit(&p, 10, S, JAN, &mut h).unwrap();
        assert_eq!(h.rate, Some((10, 0)));
        r.cancel(&p);
        assert_eq!(p.account.usage.used(Month::of_ms(JAN)), 0);
        assert_eq!(peek(&p, S, JAN).rate, Some((10, 10)));
    }

    #[test]
    fn parts_give_back_separately() {
        let p = principal(Some((10, 10)), Some(100));
        let month = Month::of_ms(JAN);
        let mut h = LimitHeaders::default();
        let (ticket, refund) = admit(&p, 10, S, JAN, &mut h).unwrap().into_parts(&p);
        assert!(!ticket.is_empty());
        assert_eq!(p.account.usage.used(month), 10);
        assert_eq!(peek(&p, S, JAN).rate, Some((10, 0)));
        ticket.release();
        refund.give_back_at(S);
        assert_eq!(p.account.usage.used(month), 0);
        assert_eq!(peek(&p, S, JAN).rate, Some((10, 10)));
        let unlimited = principal(None, None);
        let (ticket, refund) = admit(&unlimited, 10, S, JAN, &mut h)
            .unwrap()
            .into_parts(&unlimited);
        assert!(ticket.is_empty());
        refund.give_back();
    }

    #[test]
    fn a_ticket_marks_its_spans_flushed_when_dropped() {
        let p = principal(None, Some(100));
        let month = Month::of_ms(JAN);
        let mut h = LimitHeaders::default();
        let ticket = admit(&p, 40, 0, JAN, &mut h).unwrap().into_ticket(&p);
        let copy = ticket.clone();
        drop(copy);
        assert_eq!(p.account.usage.begin_sync(month), 0, "a copy is no ticket");
        let mut ticket = ticket;
        ticket.flush_part(15);
        assert_eq!(
            p.account.usage.flushed_since_sync(month),
            15,
            "a part written"
        );
        drop(ticket);
        let taken = p.account.usage.begin_sync(month);
        assert_eq!(taken, 40, "the rest at the drop, once");
        p.account.usage.finish_sync(month, 40, taken);
        assert_eq!(p.account.usage.used(month), 40);
    }

    /// A batch the key's local bucket let through (no lease yet, or Redis unreachable) and a
    /// later check refused is not charged to the fleet's bucket in Redis: the spans never went
    /// in. Found by an audit: the refund gave the local bucket its credit back but left the
    /// spans in the lease's charge, so every batch refused by the quota or a full buffer was
    /// charged to the fleet at the next round as if admitted.
    #[test]
    fn a_refused_batch_is_not_charged_to_the_fleet() {
        // Refused by the quota (hard limit 5) after the rate limit took it.
        let p = principal(Some((10, 10)), Some(5));
        let mut h = LimitHeaders::default();
        assert!(matches!(
            admit(&p, 8, S, JAN, &mut h),
            Err(AdmissionError::QuotaExceeded { .. })
        ));
        assert_eq!(p.bucket.lease.demand().local, 0, "quota refusal");
        // Admitted, then refused by the hand-off (a full buffer, the write-ahead log).
        let (ticket, refund) = admit(&p, 3, S, JAN, &mut h).unwrap().into_parts(&p);
        ticket.release();
        refund.give_back_at(S);
        let r = admit(&p, 2, S, JAN, &mut h).unwrap();
        r.cancel(&p);
        assert_eq!(p.bucket.lease.demand().local, 0, "refused after admission");
        // What was let through is charged.
        drop(admit(&p, 4, S, JAN, &mut h).unwrap().into_ticket(&p));
        assert_eq!(p.bucket.lease.demand().local, 4);
    }

    /// The headers of an admitted (or rate-limited) batch are the admission's, not what the
    /// `peek` before its body found. Found by an audit: `admit` set the quota headers only when
    /// usage was past 90%, so a body that came in after the month turned (or after a plan
    /// change lifted the quota or the rate limit) was answered with last month's
    /// `X-Quota-Used` and a 90% warning, or a rate limit the key no longer had.
    #[test]
    fn the_answer_carries_the_admissions_headers_not_the_peeks() {
        // 2024-01-31 23:59:59.
        const JAN_END: u64 = FEB - 1_000;
        let p = principal(Some((10, 10)), Some(100));
        // 95 spans in January (a batch larger than the bucket costs the bucket).
        assert_eq!(admit_one(&p, 95, S, JAN).0, 202);
        let mut h = peek(&p, 2 * S, JAN_END);
        assert_eq!(h.quota, Some((95, 100)), "the body's head came in January");
        // The body is in after midnight: February has used nothing.
        let r = admit(&p, 1, 2 * S, FEB, &mut h).unwrap();
        drop(r.into_ticket(&p));
        assert_eq!(
            h,
            LimitHeaders {
                rate: Some((10, 9)),
                quota: None
            }
        );
        // Rate-limited in February: the quota headers are February's too.
        let mut h = peek(&p, 2 * S, JAN_END);
        assert!(matches!(
            admit(&p, 10, 2 * S, FEB, &mut h),
            Err(AdmissionError::RateLimited { .. })
        ));
        assert_eq!(
            h,
            LimitHeaders {
                rate: Some((10, 9)),
                quota: None
            }
        );
        // The plan lost its quota and its rate limit while the body came: no limit headers.
        let p = principal(Some((10, 10)), Some(100));
        assert_eq!(admit_one(&p, 95, S, JAN).0, 202);
        let mut h = peek(&p, 2 * S, JAN);
        assert!(h.quota.is_some() && h.rate.is_some());
        p.account.set_plan(&Plan {
            name: "unlimited".into(),
            monthly_spans: None,
            rate: None,
        });
        drop(admit(&p, 1, 3 * S, JAN, &mut h).unwrap().into_ticket(&p));
        assert_eq!(h, LimitHeaders::default());
    }

    /// The quota headers of an answer that reserves nothing (a `peek`, a rate-limited batch)
    /// read the month a reservation would count in. Found in review: since the month never
    /// goes back (`Usage::reserve`), a clock stepped back across the turn of a month reserves
    /// in the later month, but these headers read the earlier one: `X-Quota-Used` went
    /// missing (or gave last month's count) beside admissions that reported the later month's.
    #[test]
    fn headers_without_a_reservation_read_the_month_reservations_count_in() {
        // 2024-01-31 23:59:59.
        const JAN_END: u64 = FEB - 1_000;
        let p = principal(Some((10, 10)), Some(100));
        // 95 spans on February 1st (a batch larger than the bucket costs the bucket).
        assert_eq!(admit_one(&p, 95, S, FEB).0, 202);
        // The clock steps back into January: a reservation still counts in February.
        assert_eq!(peek(&p, 2 * S, JAN_END).quota, Some((95, 100)));
        assert_eq!(admit_one(&p, 1, 2 * S, JAN_END).4, Some((96, 100)));
        let mut h = LimitHeaders::default();
        assert!(matches!(
            admit(&p, 10, 2 * S, JAN_END, &mut h),
            Err(AdmissionError::RateLimited { .. })
        ));
        assert_eq!(h.quota, Some((96, 100)));
    }

    #[test]
    fn plan_changes_apply_in_place() {
        let p = principal(Some((10, 10)), None);
        let pro = Plan {
            name: "pro".into(),
            monthly_spans: Some(1000),
            rate: None,
        };
        assert!(
            p.account.set_plan(&pro),
            "unlimited -> limited asks for a sync"
        );
        assert!(!p.account.set_plan(&pro));
        assert_eq!(p.account.rate(), None);
        assert_eq!(p.account.monthly_spans(), Some(1000));
    }
}
