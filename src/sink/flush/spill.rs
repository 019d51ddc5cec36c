//! Spilling: past the memory room the newest whole batches move to the spool; the spool is
//! read back oldest first when memory has room; at shutdown everything left goes there (of a
//! batch partly inserted or dead-lettered, only the rows still waiting: `spool_rest`).

use std::collections::VecDeque;
use std::ops::Range;
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

    /// Shutdown, for a batch whose other rows are inserted or dead-lettered already (a
    /// bisection settled some of its pieces): only the rows still waiting, `p` and its batch's
    /// other pieces in the queue, go to the spool, as a new record. Spooled whole, its
    /// dead-lettered rows would come back at the next start, be refused again, and be written
    /// to the dead-letter file and counted a second time. Its quota ticket moves to the new
    /// record whole (it was never cut while its rows were settled one piece at a time: it goes
    /// once all of them are done). The batch's own record, if it has one (read back, or `wal`
    /// mode), goes into `replaced`, to be confirmed once the new one is durable. `None` when
    /// the batch is whole (nothing settled), or when its rest cannot be written: then it is
    /// spooled whole as before, and nothing is lost.
    ///
    /// A frozen insert (cluster mode) of such pieces is named in the intent by the new
    /// records: its replay sends their rows, not the pieces it sent, as with whole batches
    /// before (a bisected insert's halves are new blocks anyway, docs/fleet.md). A crash
    /// instead of a stop leaves a batch's record whole (`wal` mode, or read back): the next
    /// start meets its dead-lettered rows again, as the spool records no settled rows.
    fn spool_rest(&mut self, p: &Piece, replaced: &mut Vec<RecordPos>) -> Option<RecordPos> {
        let entry = &p.entry;
        let waiting = entry.left.get();
        if waiting == entry.batch.len() {
            return None;
        }
        let mut runs: Vec<Range<usize>> = std::iter::once(p.start..p.end)
            .chain(
                self.queue
                    .iter()
                    .filter(|q| Rc::ptr_eq(&q.entry, entry))
                    .map(|q| q.start..q.end),
            )
            .collect();
        runs.sort_by_key(|r| r.start);
        let rest = match entry.batch.select(&runs) {
            // Every row not settled is in one of its pieces (held refused rows are back in
            // the queue): a rest of fewer rows would lose some.
            Ok(rest) if rest.len() == waiting => rest,
            r => {
                tracing::warn!(
                    rows = waiting,
                    error = r.err(),
                    "cannot cut a batch's waiting rows from it; spooling it whole"
                );
                return None;
            }
        };
        let pos = match self.spool.append(&rest, true) {
            Ok(pos) => pos,
            Err(e) => {
                tracing::warn!(rows = waiting, error = %e, "cannot spool a batch's waiting rows alone; spooling it whole");
                return None;
            }
        };
        if let Some(old) = entry.pos {
            // A record this process spooled before it was read back keeps its ticket here.
            if let Some(ticket) = self.tickets.remove(&(old.segment, old.index)) {
                self.tickets.insert((pos.segment, pos.index), ticket);
            }
            replaced.push(old);
        }
        self.keep_ticket(pos, entry);
        Some(pos)
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
            // Only a whole batch, none of its rows settled (a bisected one waits in memory).
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
        // Records whose batch's waiting rows went to a new record (`spool_rest`): confirmed
        // once that one is durable.
        let mut replaced: Vec<RecordPos> = Vec::new();
        // A segment holding such a rest may be sealed (and fsynced) by a later append: its
        // fsync failing, the last `sync` passing would not make the rest durable.
        let seal_failures = self.spool.seal_failures();
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
            let spooled = match self.spool_rest(&p, &mut replaced) {
                Some(pos) => Ok(pos),
                None => self.spool_entry(entry, true),
            };
            match spooled {
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
        match self.spool.sync() {
            // The rest of each partly settled batch is durable: its old record goes.
            Ok(()) if self.spool.seal_failures() == seal_failures => {
                for pos in replaced {
                    self.spool.confirm(pos);
                }
            }
            // Both stay (the next start inserts the rest twice, which collapses in the table,
            // and meets refused rows again), so that nothing is lost.
            Ok(()) => {
                self.report.spool_sync_failed = true;
                tracing::error!(
                    "a spool segment's fsync failed at shutdown; the records rests replace stay too"
                )
            }
            Err(e) => {
                self.report.spool_sync_failed = true;
                tracing::error!(error = %e, "cannot fsync the spool at shutdown")
            }
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
