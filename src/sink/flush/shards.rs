//! Cluster mode, after an insert that some shards wrote and another refused: only the rows of
//! the shards that did not write theirs are split or dead-lettered; the others are stored and
//! count as written.
//!
//! Until the insert is split or given up it is retried whole (`State::frozen`), skipping the
//! shards that wrote their block, so nothing changes for a transient failure. Only when the
//! failure ends the frozen insert (`State::dissolves`) are its pieces cut down to the rows left
//! (`State::narrow`), before `State::failed` handles them as the whole insert was handled
//! before: a bisection no longer sends the written shards' rows again as other blocks, and a
//! dead-letter file no longer holds rows that ClickHouse has (a `deadletter replay` would
//! store them a second time, and an operator would count them lost).
//!
//! The written rows are settled only after `failed` (`State::settle_stored`): until the
//! insert's intent leaves the file (`failed` clears it) nothing on disk changes, so a crash
//! before that replays the same insert, whose written blocks the shards drop again. A crash
//! after it replays the records not yet confirmed as ordinary batches, as after any
//! bisection or refusal (docs/fleet.md, "Guarantees").

use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use super::queue::{Entry, Piece};
use super::State;
use crate::row::RowBatch;
use crate::sink::clickhouse::{InsertError, Retry};

/// Rows of a batch (by its address), as `Store::rows_left` gives them.
pub(super) type RowsLeft = Vec<(*const RowBatch, Range<usize>)>;

/// Rows of an entry some shards stored, to settle once the failure is handled.
pub(super) type Stored = Vec<(Rc<Entry>, usize)>;

impl State {
    /// Whether the failure `e` of an insert of `rows` rows ends it: its pieces are split or
    /// dead-lettered rather than retried as they are (`failed`).
    pub(super) fn dissolves(&self, rows: usize, e: &InsertError) -> bool {
        match self.class(e) {
            Retry::Smaller | Retry::Split if rows > 1 => true,
            Retry::Split | Retry::Never => true,
            Retry::Later | Retry::Unknown | Retry::AfterMigrate | Retry::Smaller => false,
        }
    }

    /// Cuts the first `pieces` pieces down to the rows of `left` (the rows of the shards that
    /// did not write them), in the pieces' order. Returns the new count of pieces and rows,
    /// and the rows taken out per entry (stored), for `settle_stored`.
    pub(super) fn narrow(&mut self, pieces: usize, left: RowsLeft) -> (usize, usize, Stored) {
        let mut by_batch: HashMap<*const RowBatch, Vec<Range<usize>>> = HashMap::new();
        for (batch, rows) in left {
            by_batch.entry(batch).or_default().push(rows);
        }
        for ranges in by_batch.values_mut() {
            ranges.sort_unstable_by_key(|r| r.start);
        }
        let (mut kept, mut stored): (Vec<Piece>, Stored) = (Vec::new(), Vec::new());
        for p in self.queue.drain(..pieces).collect::<Vec<_>>() {
            let mut rows = 0;
            let ranges = by_batch
                .get(&(&p.entry.batch as *const RowBatch))
                .map_or(&[][..], Vec::as_slice);
            for r in ranges {
                let (start, end) = (r.start.max(p.start), r.end.min(p.end));
                if start >= end {
                    continue;
                }
                rows += end - start;
                match kept.last_mut() {
                    Some(last) if Rc::ptr_eq(&last.entry, &p.entry) && last.end == start => {
                        last.end = end;
                    }
                    _ => kept.push(Piece {
                        entry: Rc::clone(&p.entry),
                        start,
                        end,
                        ..p
                    }),
                }
            }
            if rows < p.len() {
                stored.push((Rc::clone(&p.entry), p.len() - rows));
            }
        }
        let (n, rows) = (kept.len(), kept.iter().map(Piece::len).sum());
        for p in kept.into_iter().rev() {
            self.queue.push_front(p);
        }
        let taken: usize = stored.iter().map(|s| s.1).sum();
        self.queued_rows -= taken;
        self.cfg.budget.release(taken as u64, 0);
        (n, rows, stored)
    }

    /// The rows `narrow` took out are in ClickHouse: counted as written, and their batches
    /// confirmed once all their rows are done.
    pub(super) fn settle_stored(&mut self, stored: Stored) {
        let rows: usize = stored.iter().map(|s| s.1).sum();
        if rows == 0 {
            return;
        }
        for (entry, n) in &stored {
            self.settle(entry, *n);
        }
        self.report.rows_flushed += rows as u64;
        self.cfg
            .stats
            .rows_flushed
            .fetch_add(rows as u64, Ordering::Relaxed);
        tracing::info!(
            rows,
            "the shards that wrote their part of the failed insert keep it; only the other \
             shards' rows are split or dead-lettered"
        );
    }
}
