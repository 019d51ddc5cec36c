//! The operations endpoints: `/health` (liveness), `/ready` (readiness) and `/metrics`.

use std::sync::atomic::Ordering;

use crate::clock;
use crate::http::refusal::refusal;
use crate::http::response::Outcome;
use crate::metrics::{self, Snapshot};
use crate::server::Shared;

/// Share of a bound (`INGEST_BUFFER_MAX_ROWS` of rows and `INGEST_BUFFER_MAX_BYTES` of bytes in
/// memory, `INGEST_SPOOL_MAX_BYTES` of spool) past which the instance says it is not ready, so a load balancer sends new work
/// elsewhere before batches get `503 buffer_full`.
pub const READY_BUFFER_PERCENT: u64 = 90;

/// Why an instance is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// A stop was asked for: during `INGEST_DRAIN_DELAY_MS`, then the drain.
    Draining,
    /// `wal` mode: the write-ahead log cannot write to disk: `/ingest` refuses batches with
    /// `503 storage_unavailable` until it can start a new segment (it keeps trying on its own).
    WriteAheadFailing,
    /// Memory and spool are both full: `/ingest` refuses batches with `503 buffer_full`.
    BufferFull,
    /// The key set could not be loaded from ClickHouse for this long (ms).
    StoreUnreachable { for_ms: u64 },
    /// The write buffer holds this many rows in memory of at most `max`.
    BufferNearlyFull { buffered: u64, max: u64 },
    /// The write buffer holds this many heap bytes in memory of at most `max`.
    BufferBytesNearlyFull { bytes: u64, max: u64 },
    /// The spool holds this many bytes of at most `max`.
    SpoolNearlyFull { bytes: u64, max: u64 },
}

/// What readiness is decided from, read once per `/ready`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    /// A stop was asked for: during `INGEST_DRAIN_DELAY_MS`, or the drain itself.
    pub draining: bool,
    /// The write-ahead log is failing (`FlushStats::wal_failing`).
    pub wal_failing: bool,
    /// Memory and spool are both full (`FlushStats::full`).
    pub buffer_full: bool,
    pub key_set_age_ms: u64,
    pub store_timeout_ms: u64,
    /// Rows held in memory (not those only in the spool) and `INGEST_BUFFER_MAX_ROWS`. The
    /// flush thread moves the excess to the spool, so memory fills up only when the spool cannot
    /// take it.
    pub memory_rows: u64,
    pub memory_max_rows: u64,
    /// Heap bytes of the batches held in memory and `INGEST_BUFFER_MAX_BYTES`: the bound
    /// real rows (about 1 KiB each) reach first.
    pub memory_bytes: u64,
    pub memory_max_bytes: u64,
    /// Bytes of the spool on disk and `INGEST_SPOOL_MAX_BYTES`.
    pub spool_bytes: u64,
    pub spool_max_bytes: u64,
}

fn over(used: u64, max: u64) -> bool {
    u128::from(used) * 100 > u128::from(max) * u128::from(READY_BUFFER_PERCENT)
}

/// The readiness rule, from plain numbers: not draining, the write-ahead log (if any) not
/// failing, memory and spool not full, keys loaded
/// from ClickHouse within `store_timeout_ms`, and neither the memory rows, the memory bytes nor
/// the spool over 90% of their bounds. The first reason that holds, in that order, is the answer.
pub fn readiness(load: &Load) -> Result<(), NotReady> {
    if load.draining {
        return Err(NotReady::Draining);
    }
    // Before a full buffer: a failing log refuses every batch before it looks for room.
    if load.wal_failing {
        return Err(NotReady::WriteAheadFailing);
    }
    if load.buffer_full {
        return Err(NotReady::BufferFull);
    }
    if load.key_set_age_ms > load.store_timeout_ms {
        return Err(NotReady::StoreUnreachable {
            for_ms: load.key_set_age_ms,
        });
    }
    if over(load.memory_rows, load.memory_max_rows) {
        return Err(NotReady::BufferNearlyFull {
            buffered: load.memory_rows,
            max: load.memory_max_rows,
        });
    }
    if over(load.memory_bytes, load.memory_max_bytes) {
        return Err(NotReady::BufferBytesNearlyFull {
            bytes: load.memory_bytes,
            max: load.memory_max_bytes,
        });
    }
    if over(load.spool_bytes, load.spool_max_bytes) {
        return Err(NotReady::SpoolNearlyFull {
            bytes: load.spool_bytes,
            max: load.spool_max_bytes,
        });
    }
    Ok(())
}

/// Milliseconds since the key set was last loaded.
fn key_set_age_ms(shared: &Shared) -> u64 {
    clock::now_ms().saturating_sub(shared.keys.refreshed_at_ms())
}

pub fn health(shared: &Shared) -> Outcome {
    Outcome::Ok {
        content_type: "application/json",
        body: format!("{{\"status\":\"ok\",\"buffered\":{}}}", shared.buffered()).into_bytes(),
    }
}

pub fn ready(shared: &Shared) -> Outcome {
    let stats = &shared.flush_stats;
    let verdict = readiness(&Load {
        draining: shared.is_stopping(),
        wal_failing: stats.wal_failing.load(Ordering::Relaxed),
        buffer_full: shared.is_buffer_full(),
        key_set_age_ms: key_set_age_ms(shared),
        store_timeout_ms: shared.config.ready_store_timeout.as_millis() as u64,
        memory_rows: shared.budget.rows(),
        memory_max_rows: shared.budget.max_rows(),
        memory_bytes: shared.budget.bytes(),
        memory_max_bytes: shared.budget.max_bytes(),
        spool_bytes: stats.spool_bytes.load(Ordering::Relaxed),
        spool_max_bytes: shared.config.spool_max_bytes,
    });
    match verdict {
        Ok(()) => Outcome::Ok {
            content_type: "application/json",
            body: b"{\"ready\":true}".to_vec(),
        },
        Err(why) => Outcome::Refused(refusal(why)),
    }
}

pub fn metrics(shared: &Shared) -> Outcome {
    let stats = &shared.flush_stats;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let mut s = Snapshot::new(&shared.metrics, &stats.flush_duration);
    s.flush_batches = load(&stats.batches_flushed);
    s.flush_rows = load(&stats.rows_flushed);
    s.flush_errors = load(&stats.flush_errors);
    s.flush_retries = load(&stats.retries);
    s.flush_rejected_rows = load(&stats.rows_rejected);
    s.dead_letter_held_rows = load(&stats.dead_letter_held_rows);
    s.lost_rows = load(&stats.rows_lost);
    s.buffered_rows = shared.buffered();
    s.buffer_max_rows = shared.budget.max_rows();
    s.buffered_bytes = shared.budget.bytes();
    s.buffer_max_bytes = shared.budget.max_bytes();
    s.buffer_full = shared.is_buffer_full();
    s.spool_bytes = load(&stats.spool_bytes);
    s.spool_max_bytes = shared.config.spool_max_bytes;
    s.spool_segments = load(&stats.spool_segments);
    s.spool_rows = load(&stats.spool_rows);
    s.spool_oldest_age_s = stats.spool_oldest_age_s(clock::now_ms());
    s.spooled_rows = load(&stats.rows_spooled);
    s.replayed_rows = load(&stats.rows_replayed);
    s.spool_bad_records = load(&stats.spool_bad_records);
    s.wal_batches = load(&stats.wal_batches);
    s.wal_syncs = load(&stats.wal_syncs);
    s.wal_failing = stats.wal_failing.load(Ordering::Relaxed);
    s.key_set_age_s = key_set_age_ms(shared) as f64 / 1000.0;
    s.keys = shared.keys.len() as u64;
    s.key_refreshes_on_demand = shared.keys.demand.on_demand();
    s.key_set_loads = shared.keys.loads();
    s.key_set_rebuilds = shared.keys.rebuilds();
    let fleet = &shared.fleet;
    s.fleet = fleet.configured.load(Ordering::Relaxed).then(|| {
        (
            fleet.fallback.load(Ordering::Relaxed),
            load(&fleet.errors),
            load(&fleet.granted),
        )
    });
    s.quota_refusals = shared
        .accounts
        .load()
        .iter()
        .map(|a| (a.org_id.to_string(), load(&a.quota_refusals)))
        .filter(|&(_, n)| n > 0)
        .collect();
    s.unpriced_spans = shared.unpriced.counts();
    Outcome::Ok {
        content_type: metrics::CONTENT_TYPE,
        body: s.encode().into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(shared: &Shared) -> u16 {
        match ready(shared) {
            Outcome::Ok { .. } => 200,
            Outcome::Refused(r) => r.status,
            _ => 0,
        }
    }

    /// Memory full by bytes (rows of about 1 KiB reach the default 512 MiB long before the
    /// million rows) refuses batches as surely as by rows: `/ready` says so before it does, and
    /// says ready again once the bytes are gone. (It looked at rows only, so with the spool
    /// failing, not full, every batch was `503 buffer_full` while `/ready` answered `200`.)
    #[test]
    fn not_ready_while_memory_is_nearly_full_of_bytes() {
        let shared = Shared::for_bench();
        shared.keys.confirm(clock::now_ms());
        assert_eq!(status(&shared), 200);
        let max = shared.budget.max_bytes();
        shared.budget.take(10, max / 100 * 95);
        assert_eq!(
            shared.budget.reserve(10, max / 10),
            Err(crate::sink::budget::Full)
        );
        assert_eq!(status(&shared), 503);
        shared.budget.release(10, max / 100 * 95);
        assert_eq!(status(&shared), 200);
    }

    /// A failing write-ahead log refuses every batch: `/ready` says so, with the code `/ingest`
    /// answers, and is ready again once the log is. (It answered `200` throughout.)
    #[test]
    fn not_ready_while_the_write_ahead_log_fails() {
        let shared = Shared::for_bench();
        shared.keys.confirm(clock::now_ms());
        assert_eq!(status(&shared), 200);
        let failing = &shared.flush_stats.wal_failing;
        failing.store(true, Ordering::Relaxed);
        match ready(&shared) {
            Outcome::Refused(r) => assert_eq!((r.status, r.code), (503, "storage_unavailable")),
            _ => panic!("ready while the write-ahead log fails"),
        }
        failing.store(false, Ordering::Relaxed);
        assert_eq!(status(&shared), 200);
    }

    #[test]
    fn readiness_rule() {
        // 10 s store timeout, 1000 rows of memory, 10 000 bytes of spool.
        let base = Load {
            store_timeout_ms: 10_000,
            memory_max_rows: 1000,
            memory_max_bytes: 100_000,
            spool_max_bytes: 10_000,
            ..Load::default()
        };
        let cases: &[(Load, Result<(), NotReady>)] = &[
            (base, Ok(())),
            (
                Load {
                    key_set_age_ms: 10_000,
                    memory_rows: 900,
                    memory_bytes: 90_000,
                    spool_bytes: 9_000,
                    ..base
                },
                Ok(()),
            ),
            (
                Load {
                    draining: true,
                    buffer_full: true,
                    ..base
                },
                Err(NotReady::Draining),
            ),
            (
                Load {
                    draining: true,
                    wal_failing: true,
                    ..base
                },
                Err(NotReady::Draining),
            ),
            (
                Load {
                    wal_failing: true,
                    buffer_full: true,
                    key_set_age_ms: 60_000,
                    spool_bytes: 9_001,
                    ..base
                },
                Err(NotReady::WriteAheadFailing),
            ),
            (
                Load {
                    buffer_full: true,
                    key_set_age_ms: 60_000,
                    ..base
                },
                Err(NotReady::BufferFull),
            ),
            (
                Load {
                    key_set_age_ms: 10_001,
                    memory_rows: 1000,
                    ..base
                },
                Err(NotReady::StoreUnreachable { for_ms: 10_001 }),
            ),
            (
                Load {
                    memory_rows: 901,
                    ..base
                },
                Err(NotReady::BufferNearlyFull {
                    buffered: 901,
                    max: 1000,
                }),
            ),
            (
                Load {
                    memory_bytes: 90_001,
                    spool_bytes: 9_001,
                    ..base
                },
                Err(NotReady::BufferBytesNearlyFull {
                    bytes: 90_001,
                    max: 100_000,
                }),
            ),
            (
                Load {
                    spool_bytes: 9_001,
                    ..base
                },
                Err(NotReady::SpoolNearlyFull {
                    bytes: 9_001,
                    max: 10_000,
                }),
            ),
        ];
        for (load, want) in cases {
            assert_eq!(readiness(load), *want, "{load:?}");
        }
    }
}
