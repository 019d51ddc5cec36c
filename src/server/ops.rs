//! The operations endpoints: `/health` (liveness), `/ready` (readiness) and `/metrics`.

use std::sync::atomic::Ordering;

use crate::control;
use crate::http::response::{Outcome, Refusal};
use crate::metrics::{self, Snapshot};
use crate::server::Shared;

/// Share of `INGEST_BUFFER_MAX_ROWS` past which the instance says it is not ready, so a load
/// balancer sends new work elsewhere before batches get `503 buffer_full`.
const READY_BUFFER_PERCENT: u64 = 90;

/// Why an instance is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    Draining,
    /// The key set could not be loaded from ClickHouse for this long (ms).
    StoreUnreachable {
        for_ms: u64,
    },
    /// The write buffer holds this many rows of at most `max`.
    BufferNearlyFull {
        buffered: u64,
        max: u64,
    },
}

/// The readiness rule, from plain numbers: not draining, keys loaded from ClickHouse within
/// `store_timeout_ms`, and the write buffer under 90% full.
pub fn readiness(
    draining: bool,
    key_set_age_ms: u64,
    store_timeout_ms: u64,
    buffered: u64,
    buffer_max: u64,
) -> Result<(), NotReady> {
    if draining {
        return Err(NotReady::Draining);
    }
    if key_set_age_ms > store_timeout_ms {
        return Err(NotReady::StoreUnreachable {
            for_ms: key_set_age_ms,
        });
    }
    if u128::from(buffered) * 100 > u128::from(buffer_max) * u128::from(READY_BUFFER_PERCENT) {
        return Err(NotReady::BufferNearlyFull {
            buffered,
            max: buffer_max,
        });
    }
    Ok(())
}

/// Milliseconds since the key set was last loaded.
fn key_set_age_ms(shared: &Shared) -> u64 {
    control::now_ms().saturating_sub(shared.keys.refreshed_at_ms())
}

pub fn health(shared: &Shared) -> Outcome {
    Outcome::Ok {
        content_type: "application/json",
        body: format!("{{\"status\":\"ok\",\"buffered\":{}}}", shared.buffered()).into_bytes(),
    }
}

pub fn ready(shared: &Shared) -> Outcome {
    let verdict = readiness(
        shared.is_draining(),
        key_set_age_ms(shared),
        shared.config.ready_store_timeout.as_millis() as u64,
        shared.buffered(),
        shared.buffer_max_rows,
    );
    let why = match verdict {
        Ok(()) => {
            return Outcome::Ok {
                content_type: "application/json",
                body: b"{\"ready\":true}".to_vec(),
            }
        }
        Err(NotReady::Draining) => "draining for shutdown".to_string(),
        Err(NotReady::StoreUnreachable { for_ms }) => format!(
            "ClickHouse has been unreachable for {} s (API keys not refreshed)",
            for_ms / 1000
        ),
        Err(NotReady::BufferNearlyFull { buffered, max }) => format!(
            "the write buffer is over {READY_BUFFER_PERCENT}% full ({buffered} of {max} rows)"
        ),
    };
    Outcome::Refused(Refusal::new(503, "not_ready", why))
}

pub fn metrics(shared: &Shared) -> Outcome {
    let stats = &shared.flush_stats;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut s = Snapshot::new(&shared.metrics, &stats.flush_duration);
    s.flush_batches = load(&stats.batches_flushed);
    s.flush_rows = load(&stats.rows_flushed);
    s.flush_errors = load(&stats.flush_errors);
    s.flush_rejected_rows = load(&stats.rows_rejected);
    s.buffered_rows = shared.buffered();
    s.buffer_max_rows = shared.buffer_max_rows;
    s.key_set_age_s = key_set_age_ms(shared) as f64 / 1000.0;
    s.keys = shared.keys.len() as u64;
    s.quota_refusals = shared
        .accounts
        .load()
        .iter()
        .map(|a| (a.org_id.to_string(), load(&a.quota_refusals)))
        .filter(|&(_, n)| n > 0)
        .collect();
    Outcome::Ok {
        content_type: metrics::CONTENT_TYPE,
        body: s.encode().into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_rule() {
        // (draining, key-set age ms, buffered) with a 10 s store timeout and 1000 rows of buffer.
        let cases: &[(bool, u64, u64, Result<(), NotReady>)] = &[
            (false, 0, 0, Ok(())),
            (false, 10_000, 900, Ok(())),
            (true, 0, 0, Err(NotReady::Draining)),
            (
                false,
                10_001,
                0,
                Err(NotReady::StoreUnreachable { for_ms: 10_001 }),
            ),
            (
                false,
                0,
                901,
                Err(NotReady::BufferNearlyFull {
                    buffered: 901,
                    max: 1000,
                }),
            ),
        ];
        for &(draining, age, buffered, want) in cases {
            assert_eq!(
                readiness(draining, age, 10_000, buffered, 1000),
                want,
                "{draining} {age} {buffered}"
            );
        }
    }
}
