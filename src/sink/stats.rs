//! `FlushStats`: the storage side's counters and gauges (inserts, retries, dead letters, lost
//! rows, spool, write-ahead log), plain atomics that `/metrics` and `/ready` read.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::metrics::Histogram;

/// Counters and gauges a metrics endpoint reads while the thread runs. Plain atomics, so any
/// renderer can read them.
#[derive(Debug, Default)]
pub struct FlushStats {
    /// Successful inserts.
    pub batches_flushed: AtomicU64,
    pub rows_flushed: AtomicU64,
    /// Failed insert attempts (each retry counts).
    pub flush_errors: AtomicU64,
    /// Inserts scheduled again after a failure (backoff waits).
    pub retries: AtomicU64,
    /// Duration of the last successful insert, ms.
    pub last_flush_ms: AtomicU64,
    /// When the last successful insert finished, epoch ms (0 = never).
    pub last_flush_at_ms: AtomicU64,
    /// Rows ClickHouse refused for good (written to the dead-letter file).
    pub rows_rejected: AtomicU64,
    /// Rows ClickHouse refused for good that the dead-letter file could not take yet, held in
    /// memory until it can (a gauge).
    pub dead_letter_held_rows: AtomicU64,
    /// Rows that could be kept nowhere (dead-letter or spool write failed, or a spool record
    /// no longer decodes); each is logged at error level.
    pub rows_lost: AtomicU64,
    /// Bytes of spool segment files on disk.
    pub spool_bytes: AtomicU64,
    /// Spool segment files on disk.
    pub spool_segments: AtomicU64,
    /// Rows waiting only on disk (not in memory).
    pub spool_rows: AtomicU64,
    /// Creation time (epoch ms) of the oldest segment holding unconfirmed rows; 0 = none.
    pub spool_oldest_ms: AtomicU64,
    /// Rows moved from memory to the spool.
    pub rows_spooled: AtomicU64,
    /// Rows read back from the spool.
    pub rows_replayed: AtomicU64,
    /// Spool records that could not be read back (torn or corrupt).
    pub spool_bad_records: AtomicU64,
    /// Write-ahead mode: batches made durable, and the fsyncs that did it (group commit makes
    /// `wal_syncs` smaller under concurrency).
    pub wal_batches: AtomicU64,
    pub wal_syncs: AtomicU64,
    /// Write-ahead mode: the log cannot write (a write, an fsync or a new segment failed, and
    /// no new segment could be started since): every batch is refused `503
    /// storage_unavailable`, so `/ready` is false. Set and cleared by the write-ahead thread.
    pub wal_failing: AtomicBool,
    /// Memory and spool are both full: new batches are refused (`/ready` is false). Set by
    /// whoever appends to the spool when it is refused for lack of room; cleared when room
    /// is made.
    pub full: AtomicBool,
    /// Durations of successful inserts.
    pub flush_duration: Histogram,
}

impl FlushStats {
    /// Seconds since the oldest spool segment holding unwritten rows was created; 0 when the
    /// spool holds none.
    pub fn spool_oldest_age_s(&self, now_ms: u64) -> f64 {
        match self.spool_oldest_ms.load(Ordering::Relaxed) {
            0 => 0.0,
            oldest => now_ms.saturating_sub(oldest) as f64 / 1000.0,
        }
    }
}
