//! The service's clocks: the one wall clock everything reads, and `Clock`, the shifted wall
//! clock and monotonic clock of the request path.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Unix milliseconds of the real wall clock (0 before 1970). Key-set age, spool segment times,
/// flush times and dead-letter stamps read this; rows and quota months read `Clock::now_ms`.
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Unix microseconds of the real wall clock: the version of an `api_keys` or `orgs` row.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Unix seconds of the real wall clock, as ClickHouse's `DateTime` holds them.
pub fn now_s() -> u32 {
    u32::try_from(now_us() / 1_000_000).unwrap_or(u32::MAX)
}

/// The request path's clocks. `now_ms` is the wall clock that stamps rows (`ingested_at`) and
/// picks the quota month; `mono_ns` is the monotonic clock of the rate limiter. Copied into
/// every worker: all copies share one origin.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
    /// Test-only shift of the wall clock (`INGEST_TEST_CLOCK_OFFSET_MS`), 0 in production.
    offset_ms: i64,
}

impl Clock {
    pub fn new(offset_ms: i64) -> Clock {
        Clock {
            origin: Instant::now(),
            offset_ms,
        }
    }

    /// Unix milliseconds (shifted by the test offset).
    pub fn now_ms(&self) -> u64 {
        (now_ms() as i64).saturating_add(self.offset_ms).max(0) as u64
    }

    /// Nanoseconds since this clock was made; never goes back.
    pub fn mono_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_shifts_only_the_wall_clock() {
        let real = Clock::new(0);
        let later = Clock::new(86_400_000);
        let (a, b) = (real.now_ms(), later.now_ms());
        assert!(
            b >= a + 86_400_000 && b < a + 86_400_000 + 60_000,
            "{a} {b}"
        );
        assert_eq!(Clock::new(-i64::MAX).now_ms(), 0, "never before 1970");
        let m = real.mono_ns();
        assert!(real.mono_ns() >= m);
        let (s, ms) = (u64::from(now_s()), now_ms());
        assert!(ms / 1000 >= s && ms / 1000 - s <= 1, "{s} {ms}");
    }
}
