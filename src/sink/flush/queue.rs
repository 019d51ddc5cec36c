//! The queue of accepted rows waiting for an insert: `Entry` (one batch) and `Piece` (a range
//! of one), when the next insert is due, what it takes, and what happens once it is written.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::State;
use crate::admission::UsageTicket;
use crate::clock::now_ms;
use crate::row::RowBatch;
use crate::sink::clickhouse::Inserted;
use crate::sink::segment::RecordPos;

/// One accepted batch held in memory.
pub(super) struct Entry {
    /// Its `usage` ticket is taken out into `Entry::usage` on arrival.
    pub(super) batch: RowBatch,
    /// The batch's place in its organisation's quota: dropped with the entry once its rows are
    /// inserted or given up; moved to `State::tickets` when the batch goes to the spool.
    pub(super) usage: Cell<UsageTicket>,
    /// Where the batch is in the spool, when it is there too (read back, or `wal` mode).
    pub(super) pos: Option<RecordPos>,
    /// `batch.heap_bytes()`, counted in the `MemoryBudget` while the entry lives.
    pub(super) bytes: u64,
    /// Rows neither inserted nor dead-lettered yet; at 0 the batch is confirmed.
    pub(super) left: Cell<usize>,
}

impl Entry {
    /// A batch arriving in the buffer (from a worker, the write-ahead thread or the spool),
    /// its usage ticket taken out of it.
    pub(super) fn new(mut batch: RowBatch, pos: Option<RecordPos>) -> Entry {
        Entry {
            bytes: batch.heap_bytes() as u64,
            usage: Cell::new(std::mem::take(&mut batch.usage)),
            left: Cell::new(batch.len()),
            batch,
            pos,
        }
    }
}

/// Rows of one entry waiting in the buffer.
pub(super) struct Piece {
    /// Shared by the pieces of a batch being bisected; dropped with its last piece.
    pub(super) entry: Rc<Entry>,
    /// Range of `entry.batch.rows` this piece covers.
    pub(super) start: usize,
    pub(super) end: usize,
    /// When the batch arrived: the flush interval runs from the oldest waiting row.
    pub(super) arrived: Instant,
    /// Largest insert this piece may join: `usize::MAX` normally; while a refused insert is
    /// being bisected, the size of the piece's half, so that each half is tried on its own.
    pub(super) cap: usize,
    /// Part of a bisection isolating refused rows (`Retry::Split`, or an unknown error taken
    /// for one): its going in shows the refusal was some rows'. Not so for the halves of an
    /// insert ClickHouse had not the memory for (`Retry::Smaller`).
    pub(super) suspect: bool,
}

impl Piece {
    pub(super) fn len(&self) -> usize {
        self.end - self.start
    }

    /// A whole batch, not part of a bisection: may move to the spool.
    pub(super) fn is_whole(&self) -> bool {
        self.start == 0
            && self.end == self.entry.batch.len()
            && self.cap == usize::MAX
            && Rc::strong_count(&self.entry) == 1
    }
}

impl State {
    pub(super) fn push(&mut self, entry: Entry, arrived: Instant) {
        let rows = entry.batch.len();
        self.queued_rows += rows;
        self.queue.push_back(Piece {
            start: 0,
            end: rows,
            entry: Rc::new(entry),
            arrived,
            cap: usize::MAX,
            suspect: false,
        });
    }

    /// Puts an entry in front of the queue (a replayed unfinished insert, `intent.rs`).
    pub(super) fn push_front(&mut self, entry: Entry, arrived: Instant) {
        let rows = entry.batch.len();
        self.queued_rows += rows;
        self.queue.push_front(Piece {
            start: 0,
            end: rows,
            entry: Rc::new(entry),
            arrived,
            cap: usize::MAX,
            suspect: false,
        });
    }

    /// When the next insert should start, if anything is waiting.
    pub(super) fn due(&self) -> Option<Instant> {
        // A backlog to read hurries the inserts, unless held refused rows keep it from being
        // read (`refill`): then nothing is due for it until they are written.
        let backlog = self.spool.backlog() && !self.held_at_bound();
        let at = match self.queue.front() {
            // (Not `max_insert_rows`: after an insert ClickHouse had not the memory for, one
            // of a few rows each time one is due would make a part per batch.)
            Some(p)
                if self.queued_rows >= self.cfg.max_rows
                    || self
                        .cfg
                        .budget
                        .bytes()
                        .saturating_sub(self.held_load.load().1)
                        >= self.cfg.max_bytes
                    || backlog =>
            {
                p.arrived
            }
            Some(p) => p.arrived + self.cfg.interval,
            // Reading the spool back fails for now: not before the next try, or the thread
            // would spin through `flush` while it fails.
            None if backlog => self.spool.read_retry_at().unwrap_or_else(Instant::now),
            None => return None,
        };
        Some(self.retry_at.map_or(at, |r| r.max(at)))
    }

    /// The front pieces that make the next insert: the frozen ones after a failure in cluster
    /// mode, else at most `max_insert_rows` rows (and no more than any included piece's cap) and
    /// `max_bytes`, at most half of `room()`, in bytes, but always at least one piece.
    /// (An insert's pieces stay in memory until it ends, however long ClickHouse takes: the
    /// other half is for intake, and for what must move to the spool meanwhile.)
    pub(super) fn next_insert(&mut self) -> (usize, usize) {
        if let Some((pieces, _)) = self.frozen {
            return (pieces, self.queue.iter().take(pieces).map(Piece::len).sum());
        }
        let max_bytes = (self.cfg.budget.room().1 / 2).min(self.cfg.max_bytes);
        let max_rows = self.max_insert_rows();
        self.cut_front(max_rows);
        let (mut pieces, mut rows, mut bytes, mut cap) = (0, 0, 0, usize::MAX);
        for p in &self.queue {
            let cap_with = cap.min(p.cap);
            let whole = if p.is_whole() { p.entry.bytes } else { 0 };
            if pieces > 0 && (rows + p.len() > max_rows.min(cap_with) || bytes + whole > max_bytes)
            {
                break;
            }
            pieces += 1;
            rows += p.len();
            bytes += whole;
            cap = cap_with;
        }
        (pieces, rows)
    }

    /// While inserts are capped after an insert ClickHouse had not the memory for
    /// (`State::smaller`), a front piece of more rows than `most` is cut there: an insert takes
    /// at least one piece, so a batch past the cap was sent whole, refused and halved again,
    /// log2(batch / cap) failed inserts for each such batch. (Not otherwise: a whole batch may
    /// move to the spool and be named in an insert intent, a cut one not.)
    fn cut_front(&mut self, most: usize) {
        if most >= self.cfg.max_rows {
            return;
        }
        let Some(front) = self.queue.front_mut() else {
            return;
        };
        if front.len() <= most {
            return;
        }
        let cut = front.start + most;
        let rest = Piece {
            entry: Rc::clone(&front.entry),
            start: cut,
            end: front.end,
            arrived: front.arrived,
            cap: front.cap,
            suspect: front.suspect,
        };
        front.end = cut;
        self.queue.insert(1, rest);
    }

    /// The most rows an insert takes: `max_rows`, or fewer for a while after ClickHouse had
    /// not the memory for one (`State::smaller`).
    pub(super) fn max_insert_rows(&self) -> usize {
        match self.smaller {
            Some((rows, until)) if Instant::now() < until => self.cfg.max_rows.min(rows),
            _ => self.cfg.max_rows,
        }
    }

    /// Enough waits for the next insert to go at once, without waiting for its interval: a
    /// quarter of the memory room (so that a fast intake does not fill memory, and spool,
    /// while the interval runs). Otherwise an insert waits for its interval or its row or byte
    /// bound (`due`): every insert is a part ClickHouse writes and merges again, and fewer,
    /// larger parts cost it less per row (perf/RESULTS.md).
    pub(super) fn worth_chaining(&self) -> bool {
        self.cfg.budget.over(1, 4)
    }

    /// Rows of `n` of an entry are inserted or dead-lettered; confirms it once all are.
    pub(super) fn settle(&mut self, entry: &Entry, n: usize) {
        // Their spans leave the quota's buffered count now (`UsageTicket::flush_part`):
        // the entry's ticket, or the spool's for a batch read back.
        let mut ticket = entry.usage.take();
        ticket.flush_part(n as u64);
        entry.usage.set(ticket);
        if let Some(ticket) = entry
            .pos
            .and_then(|pos| self.tickets.get_mut(&(pos.segment, pos.index)))
        {
            ticket.flush_part(n as u64);
        }
        let left = entry.left.get() - n;
        entry.left.set(left);
        if left == 0 {
            self.cfg.budget.release(0, entry.bytes);
            if let Some(pos) = entry.pos {
                self.spool.confirm(pos);
                // Inserted or given up: the spans leave the quota's buffered count.
                self.tickets.remove(&(pos.segment, pos.index));
            }
        }
    }

    pub(super) fn written(&mut self, pieces: usize, inserted: Inserted, took: Duration) {
        for p in self.queue.drain(..pieces).collect::<Vec<_>>() {
            // Part of a refused insert went in: the refusal was some rows' (`failed`).
            self.rows_at_fault |= p.suspect;
            self.settle(&p.entry, p.len());
        }
        self.queued_rows -= inserted.rows;
        self.cfg.budget.release(inserted.rows as u64, 0);
        self.attempt = 0;
        self.retry_at = None;
        self.capped_failures = 0;
        self.report.rows_flushed += inserted.rows as u64;
        let ms = took.as_millis() as u64;
        let stats = &self.cfg.stats;
        stats.batches_flushed.fetch_add(1, Ordering::Relaxed);
        stats
            .rows_flushed
            .fetch_add(inserted.rows as u64, Ordering::Relaxed);
        stats.last_flush_ms.store(ms, Ordering::Relaxed);
        stats.flush_duration.observe(took);
        stats.last_flush_at_ms.store(now_ms(), Ordering::Relaxed);
        tracing::info!(
            rows = inserted.rows,
            bytes = inserted.bytes,
            ms,
            waiting = self.queued_rows,
            "flushed spans"
        );
        // Memory went down: this may end a "full" state even if no batch arrives.
        self.relieve();
    }
}
