//! Spilling: past the memory room the newest whole batches move to the spool; the spool is
//! read back oldest first when memory has room; at shutdown everything left goes there.

use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::queue::{Entry, Piece};
use super::State;
use crate::sink::segment::RecordPos;
use crate::sink::spool::SpoolError;

impl State {
    /// Puts an entry in the spool: appends it, or, if it is there already, only drops the
    /// memory copy. The caller then releases the entry's memory.
    pub(super) fn spool_entry(
        &mut self,
        entry: &Entry,
        over_limit: bool,
    ) -> Result<RecordPos, SpoolError> {
        let rows = entry.batch.len() as u64;
        if let Some(pos) = entry.pos {
            self.spool.release(pos, rows);
            self.keep_ticket(pos, entry);
            return Ok(pos);
        }
        match self.spool.append(&entry.batch, over_limit) {
            Ok(pos) => {
                self.cfg.stats.full.store(false, Ordering::Relaxed);
                self.keep_ticket(pos, entry);
                Ok(pos)
            }
            Err(e) => {
                match &e {
                    SpoolError::Full => {
                        if !self.cfg.stats.full.swap(true, Ordering::Relaxed) {
                            tracing::warn!(
                                spool_bytes = self.spool.bytes(),
                                "memory and spool are full; refusing new batches until ClickHouse takes rows"
                            );
                        }
                    }
                    SpoolError::Io(_) => {
                        tracing::error!(error = %e, "cannot write to the spool; keeping the rows in memory")
                    }
                }
                Err(e)
            }
        }
    }

    /// The entry's rows now wait only in the spool, at `pos`: its quota ticket waits there too,
    /// so that the spans stay counted until they are inserted. (Dropping the ticket with the
    /// memory copy would tell the quota they are in ClickHouse, and the next usage sync would
    /// forget them.)
    fn keep_ticket(&mut self, pos: RecordPos, entry: &Entry) {
        let ticket = entry.usage.take();
        if !ticket.is_empty() {
            self.tickets.insert((pos.segment, pos.index), ticket);
        }
    }

    /// Gives back the memory an entry held (its rows still counted, `rows` of them).
    pub(super) fn release(&self, entry: &Entry, rows: usize) {
        self.cfg.budget.release(rows as u64, entry.bytes);
    }

    /// Past `room()`, moves the newest whole batches to the spool until memory is under half
    /// of it.
    pub(super) fn relieve(&mut self) {
        if !self.cfg.budget.over(1, 1) {
            // `buffer` mode: memory has room again, so batches are taken. (In `wal` mode the
            // flag is the write-ahead thread's: it is about disk only.)
            if self.input.is_buffer() {
                self.cfg.stats.full.store(false, Ordering::Relaxed);
            }
            return;
        }
        let (mut rows, mut bytes) = (self.cfg.budget.rows(), self.cfg.budget.bytes());
        let (room_rows, room_bytes) = self.cfg.budget.room();
        let (low_rows, low_bytes) = (room_rows / 2, room_bytes / 2);
        let mut k = 0;
        let pinned = self.inflight.max(self.frozen.map_or(0, |f| f.0));
        for p in self.queue.iter().skip(pinned).rev() {
            if rows <= low_rows && bytes <= low_bytes {
                break;
            }
            if !p.is_whole() {
                break;
            }
            rows = rows.saturating_sub(p.len() as u64);
            bytes = bytes.saturating_sub(p.entry.bytes);
            k += 1;
        }
        let first = self.queue.len() - k;
        let mut tail: VecDeque<Piece> = self.queue.drain(first..).collect();
        while let Some(p) = tail.pop_front() {
            if self.spool_entry(&p.entry, false).is_err() {
                self.queue.push_back(p);
                self.queue.extend(tail);
                return;
            }
            self.queued_rows -= p.len();
            self.release(&p.entry, p.len());
        }
    }

    /// Reads the spool back while memory is under half of `room()`, up to one insert's worth;
    /// not while held refused rows fill their share of memory (`held_at_bound`).
    pub(super) fn refill(&mut self) {
        if self.stopping {
            return;
        }
        let since = Instant::now()
            .checked_sub(self.cfg.interval)
            .unwrap_or_else(Instant::now);
        // With nothing in memory, one record is read whatever the bound says (the memory
        // counted may all be in the channel), so an insert is always attempted.
        let held_at_bound = self.spool.backlog() && self.held_at_bound();
        while !held_at_bound
            && self.spool.backlog()
            && self.queued_rows < self.cfg.max_rows
            && (self.queue.is_empty() || !self.cfg.budget.over(1, 2))
        {
            let Some(r) = self.spool.read_next() else {
                break;
            };
            // A record this process spooled has its ticket in `tickets` until it is confirmed;
            // one from an earlier run has none (its spans are not counted until inserted).
            let entry = Entry::new(r.batch, Some(r.pos));
            self.cfg.budget.take(entry.batch.len() as u64, entry.bytes);
            // Replayed rows are old: due at once.
            if let Some(entry) = self.hold_for_intent(entry) {
                self.push(entry, since);
            }
        }
        self.apply_intent(since);
    }

    /// Shutdown: moves everything still in memory to the spool (past its bound if it must) and
    /// fsyncs, so that the next start inserts it.
    pub(super) fn spool_everything(&mut self) {
        self.requeue_undelivered();
        let mut done: Vec<*const Entry> = Vec::new();
        // A frozen insert's batches, spooled first: where they went, for the next start.
        let mut frozen = self.frozen.take().map(|(pieces, _)| (pieces, Vec::new()));
        // Records of earlier runs' inserts read back so far: still in the spool, and still
        // named by the intent file.
        for entry in std::mem::take(&mut self.held) {
            self.push(entry, Instant::now());
        }
        while let Some(p) = self.queue.pop_front() {
            self.queued_rows -= p.len();
            self.cfg.budget.release(p.len() as u64, 0);
            let ptr = Rc::as_ptr(&p.entry);
            if done.contains(&ptr) {
                continue;
            }
            done.push(ptr);
            let entry = &p.entry;
            let unsettled = entry.left.get();
            // A batch partly inserted goes to the spool whole: its inserted rows come again
            // and collapse in the table.
            match self.spool_entry(entry, true) {
                Ok(pos) => {
                    if let Some((pieces, at)) = &mut frozen {
                        if at.len() < *pieces {
                            at.push(pos);
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(
                        rows = unsettled,
                        error = %e,
                        "cannot spool rows at shutdown; they are lost"
                    );
                    self.report.rows_lost += unsettled as u64;
                    self.cfg
                        .stats
                        .rows_lost
                        .fetch_add(unsettled as u64, Ordering::Relaxed);
                }
            }
            self.cfg.budget.release(0, entry.bytes);
        }
        if let Err(e) = self.spool.sync() {
            tracing::error!(error = %e, "cannot fsync the spool at shutdown");
        }
        match frozen {
            Some((pieces, at)) if at.len() == pieces => self.note_stopped_intent(&at),
            // Earlier runs' inserts not replayed yet stay in the file.
            _ => self.clear_intent(),
        }
        self.report.rows_spooled = self.cfg.stats.spool_rows.load(Ordering::Relaxed);
        if self.report.rows_spooled > 0 {
            tracing::warn!(
                rows = self.report.rows_spooled,
                dir = %self.spool.dir().display(),
                "rows not yet in ClickHouse stay in the spool; the next start inserts them"
            );
        }
    }
}
