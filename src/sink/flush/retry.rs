//! After a failed insert: back off and retry (transient), migrate then retry (missing table),
//! bisect to isolate refused rows, and give refused rows to the dead-letter file.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::queue::{Entry, Piece};
use super::State;
use crate::row::{col, Value};
use crate::sink::clickhouse::{InsertError, Retry, RowRun};

/// Migrate-then-retry cycles on the same rows before they are treated as refused.
const MAX_MIGRATE_ATTEMPTS: u32 = 3;

/// After ClickHouse had not the memory for an insert (the query's own limit), how long inserts
/// stay at most half its size: that limit stays, and trying the full size once in a while
/// finds out whether it was lifted, at the cost of one failed insert.
const SMALLER_FOR: Duration = Duration::from_secs(600);

/// Refused rows logged one line each per dead-letter write; the rest get one line.
pub(super) const LOGGED_ROWS: usize = 10;

/// Back-off between tries to write held refused rows to the dead-letter file.
const DEAD_LETTER_RETRY_MIN: Duration = Duration::from_secs(1);
/// While held refused rows take 1 / `HELD_SHARE` of the memory room (`MemoryBudget::room`),
/// the spool is not read: intake keeps the rest.
const HELD_SHARE: u64 = 4;
const DEAD_LETTER_RETRY_MAX: Duration = Duration::from_secs(60);

impl State {
    /// Handles a failed insert of the first `pieces` pieces (`rows` rows). Returns whether to
    /// go on with the next insert at once (after a split or a rejection) rather than wait.
    pub(super) fn failed(&mut self, pieces: usize, rows: usize, e: &InsertError) -> bool {
        self.cfg.stats.flush_errors.fetch_add(1, Ordering::Relaxed);
        let suspect = self.queue.front().is_some_and(|p| p.suspect);
        let class = self.class(e);
        match class {
            Retry::Later => {
                self.back_off(e);
                false
            }
            Retry::Unknown | Retry::AfterMigrate => {
                self.capped_failures += 1;
                self.needs_migrate |= class == Retry::AfterMigrate;
                self.back_off(e);
                false
            }
            // Halves, each tried alone: to isolate the rows at fault (`Split`), or, without
            // blaming any row, because ClickHouse had not the memory for the whole (`Smaller`).
            Retry::Smaller | Retry::Split if rows > 1 => {
                let isolating = class == Retry::Split;
                if isolating {
                    tracing::warn!(
                        rows,
                        code = e.code,
                        error = %e,
                        "insert refused; splitting it to isolate the rows at fault"
                    );
                } else {
                    self.cap_after_memory_refusal(rows, e);
                }
                self.capped_failures = 0;
                if !suspect {
                    self.rows_at_fault = false;
                }
                self.bisect(pieces, rows, isolating);
                true
            }
            // A single row: the server's memory (its total, or the user's other queries), not
            // the insert's size, so later inserts need not be small: without this, a server
            // short of memory for a while left one batch an insert for 10 minutes.
            Retry::Smaller => {
                self.smaller = None;
                self.back_off(e);
                false
            }
            Retry::Split | Retry::Never => {
                self.capped_failures = 0;
                self.rows_at_fault |= suspect;
                self.reject(pieces, rows, e);
                true
            }
        }
    }

    /// What a failure of the head insert leads to: `e`'s class, or `Split` once a capped class
    /// reached its cap (or, while isolating, once the rows were shown to matter).
    pub(super) fn class(&self, e: &InsertError) -> Retry {
        // Part of an isolation of refused rows (`Piece::suspect`): not merely a half of an
        // insert ClickHouse had not the memory for, whose rows nothing was said against.
        let suspect = self.queue.front().is_some_and(|p| p.suspect);
        match e.retry {
            // While isolating, an unknown refusal is taken as the rows' once the bisection has
            // shown the rows matter: some of them went in, or one was refused alone. Until
            // then it is retried up to the cap before each split, so that an unlisted error
            // that is nobody's rows' fault (the server's, lasting longer than the first tries)
            // does not split the insert down to single rows and dead-letter every good one.
            // (Not for a memory split's other half once an isolation inside its first half
            // found a bad row: its good rows were dead-lettered within three tries.)
            Retry::Unknown if suspect && self.rows_at_fault => Retry::Split,
            Retry::Unknown if self.capped_failures + 1 >= self.cfg.max_unknown_attempts => {
                Retry::Split
            }
            Retry::AfterMigrate if self.capped_failures + 1 >= MAX_MIGRATE_ATTEMPTS => Retry::Split,
            r => r,
        }
    }

    /// After an insert of `rows` rows ClickHouse had not the memory for: while the limit was
    /// the query's own, inserts take at most half as many rows for `SMALLER_FOR`. A limit
    /// shared with other queries (the server's whole memory, the user's) says how busy the
    /// server was, not how large an insert it takes: no cap. (Capped, inserts stayed at
    /// whatever size went in once a heavy query ended, for 10 minutes, renewed by each such
    /// refusal.)
    fn cap_after_memory_refusal(&mut self, rows: usize, e: &InsertError) {
        if e.memory_shared() {
            tracing::warn!(
                rows,
                code = e.code,
                error = %e,
                "ClickHouse had not the memory for this insert (a limit shared with other \
                 queries); inserting it in halves (no row is at fault)"
            );
            return;
        }
        let now = Instant::now();
        let most = match self.smaller {
            Some((earlier, until)) if now < until => earlier.min(rows / 2),
            _ => rows / 2,
        };
        tracing::warn!(
            rows,
            code = e.code,
            error = %e,
            most_rows = most,
            for_s = SMALLER_FOR.as_secs(),
            "ClickHouse had not the memory for this insert; inserting it in halves, and at most \
             half as many rows at a time for a while (no row is at fault)"
        );
        self.smaller = Some((most, now + SMALLER_FOR));
    }

    /// Keeps every row and schedules the next attempt.
    pub(super) fn back_off(&mut self, e: &InsertError) {
        let delay = self.backoff_delay();
        self.attempt = self.attempt.saturating_add(1);
        self.retry_at = Some(Instant::now() + delay);
        self.unreachable = e.code.is_none() && e.retry == Retry::Later;
        self.cfg.stats.retries.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            attempt = self.attempt,
            retry_in_ms = delay.as_millis() as u64,
            waiting = self.queued_rows,
            spooled = self.cfg.stats.spool_rows.load(Ordering::Relaxed),
            code = e.code,
            error = %e,
            "insert failed; rows kept, will retry"
        );
    }

    /// `retry_min * 2^attempt` capped at `retry_max`, the upper half of it jittered.
    fn backoff_delay(&mut self) -> Duration {
        let (min, max) = (
            self.cfg.retry_min,
            self.cfg.retry_max.max(self.cfg.retry_min),
        );
        let base = min.saturating_mul(1u32 << self.attempt.min(20)).min(max);
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        (base / 2 + base.mul_f64(unit / 2.0)).max(min)
    }

    /// Replaces the refused insert's pieces with its two halves, each to be inserted alone;
    /// `suspect` when it isolates refused rows (`Piece::suspect`).
    pub(super) fn bisect(&mut self, pieces: usize, rows: usize, suspect: bool) {
        // New pieces: shards that took the whole will get the halves as other blocks (the
        // rows are the same, so `FINAL` still shows each once).
        self.frozen = None;
        self.clear_intent();
        let half = rows / 2;
        let mut halves: Vec<Piece> = Vec::with_capacity(pieces + 1);
        let mut seen = 0;
        for p in self.queue.drain(..pieces) {
            let len = p.len();
            if seen < half && seen + len > half {
                let cut = p.start + (half - seen);
                halves.push(Piece {
                    entry: Rc::clone(&p.entry),
                    start: p.start,
                    end: cut,
                    arrived: p.arrived,
                    cap: half,
                    suspect: p.suspect || suspect,
                });
                halves.push(Piece {
                    start: cut,
                    cap: rows - half,
                    suspect: p.suspect || suspect,
                    ..p
                });
            } else {
                let cap = if seen < half { half } else { rows - half };
                halves.push(Piece {
                    cap,
                    suspect: p.suspect || suspect,
                    ..p
                });
            }
            seen += len;
        }
        for p in halves.into_iter().rev() {
            self.queue.push_front(p);
        }
    }

    /// Gives up rows ClickHouse will never take: into the dead-letter file with the error.
    /// When that file cannot take them (unwritable, the disk full, past its bound), they are
    /// held in memory (`undelivered`; rows read from the spool keep their record meanwhile)
    /// and written there once it can take them, or spooled at shutdown. While held rows take a
    /// `HELD_SHARE` of the memory room, the spool is not read (`refill`), so a file that stays
    /// full never brings the spool's backlog into memory, and intake keeps the rest.
    fn reject(&mut self, pieces: usize, rows: usize, e: &InsertError) {
        self.frozen = None;
        self.clear_intent();
        // The server answered: connectivity is fine, whatever the backoff had reached.
        self.attempt = 0;
        self.retry_at = None;
        let refused: Vec<Piece> = self.queue.drain(..pieces).collect();
        self.queued_rows -= rows;
        match self.dead_letter(&refused, e, true) {
            Ok(()) => {
                self.settle_refused(&refused);
                // The file takes rows again (moved away, room made): the held ones need not
                // wait for their back-off.
                if !self.undelivered.is_empty() {
                    self.retry_dead_letters(None);
                }
            }
            Err(io) => {
                tracing::error!(
                    rows,
                    error = %io,
                    path = %self.dead.path().display(),
                    "cannot write the dead-letter file; the refused rows are held in memory (those \
                     from the spool keep their record there) and written to it once it can take \
                     them, or spooled at shutdown"
                );
                self.held_load.add(&refused);
                self.show_held();
                self.undelivered.push((refused, e.clone()));
                let now = Instant::now();
                self.undelivered_at.get_or_insert(now);
                self.undelivered_retry_at
                    .get_or_insert(now + DEAD_LETTER_RETRY_MIN);
            }
        }
    }

    /// Shows the held rows (`HeldLoad`) in `traceingest_dead_letter_held_rows`.
    fn show_held(&self) {
        self.cfg
            .stats
            .dead_letter_held_rows
            .store(self.held_load.load().0, Ordering::Relaxed);
    }

    /// Whether held refused rows take a `HELD_SHARE` of the memory room, in rows or in the
    /// bytes they keep counted (`HeldLoad`): then the spool is not read.
    pub(super) fn held_at_bound(&self) -> bool {
        let (rows, bytes) = self.held_load.load();
        if rows == 0 {
            return false;
        }
        let (room_rows, room_bytes) = self.cfg.budget.room();
        rows >= room_rows / HELD_SHARE || bytes >= room_bytes / HELD_SHARE
    }

    /// Writes `refused` to the dead-letter file with `e`, logging rows on the `first` try (with
    /// whether they were written) and, for rows held after it, again once written: the first
    /// `LOGGED_ROWS` one line each, then one line for the rest, so that a table refusing every
    /// insert (a column changed by hand) logs a few lines an insert, not one a span.
    fn dead_letter(&self, refused: &[Piece], e: &InsertError, first: bool) -> std::io::Result<()> {
        let runs: Vec<RowRun<'_>> = refused
            .iter()
            .map(|p| RowRun {
                batch: &p.entry.batch,
                rows: p.start..p.end,
            })
            .collect();
        let written = self.dead.write(&runs, e);
        if !first && written.is_err() {
            return written.map(drop);
        }
        let rows: usize = refused.iter().map(Piece::len).sum();
        let mut logged = 0;
        'rows: for p in refused {
            let mut reader = p.entry.batch.reader(p.start..p.end);
            while let Some(values) = reader.next_row() {
                if logged == LOGGED_ROWS {
                    break 'rows;
                }
                logged += 1;
                let id = |c: usize| match &values[c] {
                    Value::Str(s) => *s,
                    _ => "",
                };
                tracing::error!(
                    org_id = id(col::org_id),
                    trace_id = id(col::trace_id),
                    span_id = id(col::span_id),
                    code = e.code,
                    error = %e,
                    dead_letter = %self.dead.path().display(),
                    dead_lettered = written.is_ok(),
                    "ClickHouse refused a span for good; once it takes it again, `traceingest \
                     deadletter replay` inserts the dead-letter file's rows"
                );
            }
        }
        if rows > logged {
            tracing::error!(
                rows = rows - logged,
                code = e.code,
                error = %e,
                dead_letter = %self.dead.path().display(),
                dead_lettered = written.is_ok(),
                "ClickHouse refused more spans of this insert for good (not logged one by one; \
                 each is a line of the dead-letter file with its ids)"
            );
        }
        written.map(drop)
    }

    /// Refused rows are in the dead-letter file, and counted so: their memory, and their
    /// spool records, are given back.
    fn settle_refused(&mut self, refused: &[Piece]) {
        let rows: usize = refused.iter().map(Piece::len).sum();
        self.report.rows_rejected += rows as u64;
        self.cfg
            .stats
            .rows_rejected
            .fetch_add(rows as u64, Ordering::Relaxed);
        for p in refused {
            self.settle(&p.entry, p.len());
        }
        self.cfg.budget.release(rows as u64, 0);
    }

    /// Tries again to write held refused rows to the dead-letter file once their back-off has
    /// passed (at once with `now` = `None`). Returns when to try next, if rows are still held.
    pub(super) fn retry_dead_letters(&mut self, now: Option<Instant>) -> Option<Instant> {
        let since = self.undelivered_at?;
        if let Some(now) = now {
            if self.undelivered_retry_at.is_some_and(|at| at > now) {
                return self.undelivered_retry_at;
            }
        }
        while let Some((pieces, e)) = self.undelivered.first() {
            if let Err(io) = self.dead_letter(pieces, e, false) {
                let wait = DEAD_LETTER_RETRY_MIN
                    .saturating_mul(1 << self.undelivered_tries.min(6))
                    .min(DEAD_LETTER_RETRY_MAX);
                self.undelivered_tries += 1;
                tracing::error!(
                    held = self.held_load.load().0,
                    error = %io,
                    path = %self.dead.path().display(),
                    held_for_s = since.elapsed().as_secs(),
                    retry_in_ms = wait.as_millis() as u64,
                    "still cannot write the dead-letter file; refused rows stay held in memory"
                );
                self.undelivered_retry_at = Some(Instant::now() + wait);
                return self.undelivered_retry_at;
            }
            let (pieces, _) = self.undelivered.remove(0);
            self.held_load.remove(&pieces);
            self.show_held();
            self.settle_refused(&pieces);
        }
        tracing::info!(
            path = %self.dead.path().display(),
            "the dead-letter file is writable again; held refused rows are in it"
        );
        self.undelivered_at = None;
        self.undelivered_retry_at = None;
        self.undelivered_tries = 0;
        None
    }

    /// Shutdown: held refused rows that still cannot be dead-lettered go back in the queue,
    /// to be spooled with the rest; the next start tries them again.
    pub(super) fn requeue_undelivered(&mut self) {
        if self.retry_dead_letters(None).is_none() {
            return;
        }
        self.held_load = HeldLoad::default();
        self.show_held();
        for (pieces, _) in std::mem::take(&mut self.undelivered) {
            for p in pieces {
                self.queued_rows += p.len();
                self.queue.push_back(p);
            }
        }
        self.undelivered_at = None;
        self.undelivered_retry_at = None;
    }
}

/// What held refused rows (`State::undelivered`) keep counted in the memory budget: their
/// rows, and their batches' bytes, each batch once however many of its pieces are held (the
/// budget gives a batch's bytes back only once all its rows are done). Kept as `undelivered`
/// changes, so that the loop's checks (`due`, `refill`, `receive`) cost nothing per turn.
#[derive(Debug, Default)]
pub(super) struct HeldLoad {
    rows: u64,
    bytes: u64,
    /// Held pieces per batch, by the address of its `Entry` (alive while a piece holds it).
    pieces: std::collections::HashMap<*const Entry, usize>,
}

impl HeldLoad {
    /// (rows, bytes).
    pub(super) fn load(&self) -> (u64, u64) {
        (self.rows, self.bytes)
    }

    pub(super) fn add(&mut self, pieces: &[Piece]) {
        for p in pieces {
            self.rows += p.len() as u64;
            let n = self.pieces.entry(Rc::as_ptr(&p.entry)).or_insert(0);
            if *n == 0 {
                self.bytes += p.entry.bytes;
            }
            *n += 1;
        }
    }

    pub(super) fn remove(&mut self, pieces: &[Piece]) {
        for p in pieces {
            self.rows -= p.len() as u64;
            let key = Rc::as_ptr(&p.entry);
            if let Some(n) = self.pieces.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.pieces.remove(&key);
                    self.bytes -= p.entry.bytes;
                }
            }
        }
    }
}
