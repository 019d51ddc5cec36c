//! The span insert: runs of rows from many `RowBatch`es -> one native insert block, whose
//! column buffers are kept for the next insert.
//!
//! Every batch already holds its rows in the columns' native layout (`row/`), so a block is
//! each run's part of every column appended to one buffer per region; only array end offsets
//! are rewritten. The runs come in the table's sorting-key order (`order.rs`). Parts of 16 KiB and more go to the socket from these buffers (the client's
//! `writev`); smaller ones are copied into its send buffer.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, PoisonError};

use clickhouse_rs::types::column::EncodedColumn;
use clickhouse_rs::types::{Block, DateTimeType, SqlType};

use super::errors::InsertError;
use super::Store;
use crate::row::{
    skip_strings, walked_index, Kind, RowBatch, COLUMNS, KINDS, REGIONS, SPANS_COLUMNS, WALKED,
};

/// Scale of every money column: `Decimal(18, 10)`, i.e. `Money` units of 1e-10 USD.
const MONEY_SCALE: u8 = 10;

static DECIMAL_18_10: SqlType = SqlType::Decimal(18, MONEY_SCALE);
static DATETIME: SqlType = SqlType::DateTime(DateTimeType::DateTime32);

/// A column kind's type for the client crate (checked against `Kind::sql_type` by a test, and
/// against the table by the client before it sends the block).
pub(super) fn wire_type(kind: Kind) -> SqlType {
    match kind {
        Kind::Str => SqlType::String,
        Kind::U64 => SqlType::UInt64,
        Kind::OptU64 => SqlType::Nullable(&SqlType::UInt64),
        Kind::OptF64 => SqlType::Nullable(&SqlType::Float64),
        Kind::Money => SqlType::Nullable(&DECIMAL_18_10),
        Kind::Time => DATETIME.clone(),
        Kind::OptTime => SqlType::Nullable(&DATETIME),
        Kind::Ints => SqlType::Array(&SqlType::UInt64),
        Kind::MetaKeys | Kind::MetaValues => SqlType::Array(&SqlType::String),
    }
}

/// Builds the insert block from runs of rows: every batch already holds its rows in the
/// columns' native layout, so each run's part of a column is appended to the block's buffer
/// for that column whole. Only array end offsets are rewritten: a batch counts them from its
/// own first row, the block from its first. Runs may come in any order (`order.rs` interleaves
/// batches); a batch's runs cost one pass over it when they come in row order, as they do from
/// `order::in_key_order`. Returns the block, the buffers it shares (to give back to `spares`
/// once the insert is done) and the block's size on the wire.
pub(super) fn spans_block(
    runs: &[RowRun<'_>],
    rows: usize,
    spares: Vec<Vec<u8>>,
) -> (Block, Vec<Arc<Vec<u8>>>, usize) {
    // Each distinct batch once (its slot), for the buffers' sizes and the cursors.
    let mut batches: Vec<&RowBatch> = Vec::new();
    let mut slot_of: HashMap<*const RowBatch, usize> = HashMap::new();
    let slots: Vec<usize> = runs
        .iter()
        .map(|r| match batches.last() {
            Some(&b) if std::ptr::eq(b, r.batch) => batches.len() - 1,
            _ => *slot_of
                .entry(r.batch as *const RowBatch)
                .or_insert_with(|| {
                    batches.push(r.batch);
                    batches.len() - 1
                }),
        })
        .collect();
    // Columns whose rows are all the same across the block (empty, null, zero, the one
    // organisation): about half of a typical insert's columns, each written at once instead
    // of a run at a time (with interleaved traces, thousands of short copies per column).
    // Only where batches are large: checking every column of thousands of small batches (a
    // few spans each, out of the caches by now) cost the flush thread three times what it
    // saved (perf/RESULTS.md).
    let large = rows >= UNIFORM_MIN_ROWS * batches.len();
    let uniform: Vec<Option<(&[u8], &[u8])>> = (0..COLUMNS)
        .map(|c| {
            if !large {
                return None;
            }
            let first = batches.first()?.uniform(c)?;
            batches[1..]
                .iter()
                .all(|b| b.uniform(c) == Some(first))
                .then_some(first)
        })
        .collect();
    let mut spares = spares.into_iter();
    let mut bufs: Vec<Vec<u8>> = (0..REGIONS)
        .map(|i| {
            let mut b = spares.next().unwrap_or_default();
            b.clear();
            // At most the batches' whole regions (a run may be part of a batch).
            b.reserve(batches.iter().map(|b| b.region(i).len()).sum());
            b
        })
        .collect();
    for (c, u) in uniform.iter().enumerate() {
        if let Some((head, tail)) = u {
            repeat(&mut bufs[2 * c], head, rows);
            repeat(&mut bufs[2 * c + 1], tail, rows);
        }
    }
    let skip: Vec<bool> = uniform.iter().map(Option::is_some).collect();
    // Where the data is read from decides the loop: a run at a time while most runs are whole
    // batches (each batch is read once, in order, while in the cache); a column at a time
    // when batches come in many parts (interleaved traces of large batches: each column then
    // reads every batch's region in order, a few cache lines per batch at a time, instead of
    // every region of a batch for each short part, which missed the cache for every part).
    if runs.len() > 2 * batches.len() {
        by_column(runs, &slots, batches.len(), &skip, &mut bufs);
    } else {
        by_run(runs, &slots, batches.len(), &skip, &mut bufs);
    }
    let bytes = bufs.iter().map(Vec::len).sum();
    let mut taken = Vec::with_capacity(REGIONS);
    let mut bufs = bufs.into_iter();
    let mut block = Block::new();
    for (&(name, _), &kind) in SPANS_COLUMNS.iter().zip(KINDS) {
        let head = Arc::new(bufs.next().expect("a head per column"));
        let tail = Arc::new(bufs.next().expect("a tail per column"));
        taken.push(head.clone());
        taken.push(tail.clone());
        block = block.column(
            name,
            EncodedColumn {
                sql_type: wire_type(kind),
                rows,
                parts: vec![head, tail],
            },
        );
    }
    (block, taken, bytes)
}

/// `pattern` `n` times at the end of `buf`, by doubling what is written.
fn repeat(buf: &mut Vec<u8>, pattern: &[u8], n: usize) {
    let (start, total) = (buf.len(), pattern.len() * n);
    if total == 0 {
        return;
    }
    if let [byte] = pattern {
        buf.resize(start + total, *byte);
        return;
    }
    buf.reserve(total);
    buf.extend_from_slice(pattern);
    while buf.len() - start < total {
        let have = buf.len() - start;
        buf.extend_from_within(start..start + have.min(total - have));
    }
}

/// Appends rows `rows` of `b`'s column `c`, which lie at `from..to` of its head and tail, to
/// the block's buffers; `elems` counts the block's array elements so far.
#[inline]
fn append(
    bufs: &mut [Vec<u8>],
    b: &RowBatch,
    c: usize,
    rows: &Range<usize>,
    from: (usize, usize),
    to: (usize, usize),
    elems: &mut u64,
) {
    let (h, t) = (2 * c, 2 * c + 1);
    let head = &b.head(c)[from.0..to.0];
    let kind = KINDS[c];
    if kind.is_array() {
        let first = b.elems_before(c, rows.start) as u64;
        if first == *elems {
            bufs[h].extend_from_slice(head);
        } else {
            for o in head.chunks_exact(8) {
                let o = u64::from_le_bytes(o.try_into().expect("8 bytes"));
                bufs[h].extend_from_slice(&(o - first + *elems).to_le_bytes());
            }
        }
        *elems += b.elems_before(c, rows.end) as u64 - first;
    } else {
        bufs[h].extend_from_slice(head);
    }
    // Only `Nullable`s and arrays have a tail.
    if kind.tail_width() > 0 || kind.is_array() {
        bufs[t].extend_from_slice(&b.tail(c)[from.1..to.1]);
    }
}

/// The block a run at a time. A batch met in parts is cut where its last part ended (the
/// cut is kept per batch), so a batch whose parts come in row order is cut in one pass.
fn by_run(
    runs: &[RowRun<'_>],
    slots: &[usize],
    batches: usize,
    skip: &[bool],
    bufs: &mut [Vec<u8>],
) {
    let mut elems = [0u64; COLUMNS];
    let mut cuts: Vec<Option<(usize, Box<[usize; REGIONS]>)>> = vec![None; batches];
    for (run, &slot) in runs.iter().zip(slots) {
        let b = run.batch;
        let cut = if run.rows.start == 0 && run.rows.end == b.len() {
            None
        } else {
            let from = match &cuts[slot] {
                Some((row, at)) if *row == run.rows.start => **at,
                Some((row, at)) if *row < run.rows.start => b.cut_from(*row, at, run.rows.start),
                _ => b.cut(run.rows.start),
            };
            let to = b.cut_from(run.rows.start, &from, run.rows.end);
            cuts[slot] = Some((run.rows.end, Box::new(to)));
            Some((from, to))
        };
        for (c, e) in elems.iter_mut().enumerate() {
            if skip[c] {
                continue;
            }
            let (h, t) = (2 * c, 2 * c + 1);
            let (from, to) = match &cut {
                Some((f, e)) => ((f[h], f[t]), (e[h], e[t])),
                None => ((0, 0), (b.head(c).len(), b.tail(c).len())),
            };
            append(bufs, b, c, &run.rows, from, to, e);
        }
    }
}

/// The block a column at a time, each batch's place in the column kept as its runs go by.
fn by_column(
    runs: &[RowRun<'_>],
    slots: &[usize],
    batches: usize,
    skip: &[bool],
    bufs: &mut [Vec<u8>],
) {
    // Per batch: the row its cursor is at, and where that row starts in the region walked
    // (a string column's head, an `Array(String)`'s tail).
    let mut cursor: Vec<(usize, usize)> = vec![(0, 0); batches];
    // Per run: its first and end group, when it is whole groups of a batch that has a group
    // index (a batch written by a worker): then no string is walked to find where it lies.
    let groups: Vec<Option<(usize, usize)>> =
        runs.iter().map(|r| r.batch.groups_of(&r.rows)).collect();
    for c in (0..COLUMNS).filter(|&c| !skip[c]) {
        // The column's place in `WALKED`, if its rows vary in width.
        let windex = if WALKED.contains(&c) {
            walked_index(c)
        } else {
            usize::MAX
        };
        let kind = KINDS[c];
        let [head_buf, tail_buf] = bufs.get_disjoint_mut([2 * c, 2 * c + 1]).expect("regions");
        // The batches were written up to an interval ago and are out of the caches; each run's
        // part of a column is a short read from one of many batches, which the hardware
        // prefetchers cannot follow: ask for the part a few runs ahead.
        let ahead = |i: usize| {
            let (Some(run), Some(g)) = (runs.get(i + PREFETCH_RUNS), groups.get(i + PREFETCH_RUNS))
            else {
                return;
            };
            let head = run.batch.head(c);
            let at = match (kind, g) {
                (Kind::Str, Some((g0, _))) => run.batch.group_at(*g0, windex),
                (Kind::Str, None) => return,
                _ => run.rows.start * kind.head_width(),
            };
            if let Some(b) = head.get(at..) {
                prefetch(b);
            }
            if kind.tail_width() > 0 {
                if let Some(b) = run.batch.tail(c).get(run.rows.start * kind.tail_width()..) {
                    prefetch(b);
                }
            }
        };
        // One loop per layout, so each is a few bounds checks and copies per run.
        match kind {
            Kind::Str => {
                cursor.fill((0, 0));
                for (i, ((run, &slot), g)) in runs.iter().zip(slots).zip(&groups).enumerate() {
                    ahead(i);
                    let head = run.batch.head(c);
                    let (from, to) = match *g {
                        Some((g0, g1)) => {
                            let at = |g| run.batch.group_at(g, windex);
                            cursor[slot] = (run.rows.end, at(g1));
                            (at(g0), at(g1))
                        }
                        None => walk(&mut cursor[slot], head, &run.rows, run.batch.len()),
                    };
                    head_buf.extend_from_slice(&head[from..to]);
                }
            }
            Kind::Ints | Kind::MetaKeys | Kind::MetaValues => {
                cursor.fill((0, 0));
                let mut elems = 0u64;
                for (i, ((run, &slot), g)) in runs.iter().zip(slots).zip(&groups).enumerate() {
                    ahead(i);
                    let b = run.batch;
                    let (first, last) = (
                        b.elems_before(c, run.rows.start),
                        b.elems_before(c, run.rows.end),
                    );
                    rebase(
                        head_buf,
                        &b.head(c)[run.rows.start * 8..run.rows.end * 8],
                        first as u64,
                        elems,
                    );
                    elems += (last - first) as u64;
                    let tail = b.tail(c);
                    let (from, to) = match *g {
                        _ if kind == Kind::Ints => (8 * first, 8 * last),
                        Some((g0, g1)) => {
                            let at = |g| b.group_at(g, windex);
                            cursor[slot] = (last, at(g1));
                            (at(g0), at(g1))
                        }
                        None => walk(
                            &mut cursor[slot],
                            tail,
                            &(first..last),
                            b.elems_before(c, b.len()),
                        ),
                    };
                    tail_buf.extend_from_slice(&tail[from..to]);
                }
            }
            _ => {
                let (hw, tw) = (kind.head_width(), kind.tail_width());
                for (i, run) in runs.iter().enumerate() {
                    ahead(i);
                    let (start, end) = (run.rows.start, run.rows.end);
                    head_buf.extend_from_slice(&run.batch.head(c)[start * hw..end * hw]);
                    if tw > 0 {
                        tail_buf.extend_from_slice(&run.batch.tail(c)[start * tw..end * tw]);
                    }
                }
            }
        }
    }
}

/// The rows a batch of an insert must have on average for the insert's columns to be checked
/// for rows that are all alike (`RowBatch::uniform`).
const UNIFORM_MIN_ROWS: usize = 32;

/// Runs ahead whose parts `by_column` asks the cache for.
const PREFETCH_RUNS: usize = 6;

/// Asks for the cache line at the start of `b` (a hint; nothing on other architectures).
#[inline]
fn prefetch(b: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint never faults and reads nothing; SSE is in every x86_64.
    #[allow(unused_unsafe)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// Where strings `items` of a region of `total` strings lie, from a cursor (the item it is at,
/// and that item's offset) that moves on to the range's end: a batch's runs, met in order, walk
/// each region once.
#[inline]
fn walk(
    cursor: &mut (usize, usize),
    region: &[u8],
    items: &Range<usize>,
    total: usize,
) -> (usize, usize) {
    let (at_item, at) = *cursor;
    let from = if at_item == items.start {
        at
    } else if at_item < items.start {
        at + skip_strings(&region[at..], items.start - at_item)
    } else {
        skip_strings(region, items.start)
    };
    let to = if items.end == total {
        region.len()
    } else {
        from + skip_strings(&region[from..], items.len())
    };
    *cursor = (items.end, to);
    (from, to)
}

/// Array end offsets counted from `first` (a batch's), appended counted from `elems` (the
/// block's so far).
#[inline]
fn rebase(out: &mut Vec<u8>, offsets: &[u8], first: u64, elems: u64) {
    if first == elems {
        out.extend_from_slice(offsets);
    } else {
        for o in offsets.chunks_exact(8) {
            let o = u64::from_le_bytes(o.try_into().expect("8 bytes"));
            out.extend_from_slice(&(o - first + elems).to_le_bytes());
        }
    }
}

/// Rows of one batch that go into an insert together: whole batches normally, parts of one
/// while the flush thread is isolating a bad row.
#[derive(Debug, Clone)]
pub struct RowRun<'a> {
    pub batch: &'a RowBatch,
    /// A range of the batch's rows.
    pub rows: Range<usize>,
}

impl<'a> RowRun<'a> {
    /// All of a batch's rows.
    pub fn whole(batch: &'a RowBatch) -> RowRun<'a> {
        RowRun {
            batch,
            rows: 0..batch.len(),
        }
    }
}

/// What one successful insert wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inserted {
    pub rows: usize,
    /// Approximate uncompressed size of the data sent.
    pub bytes: usize,
}

impl Store {
    /// Inserts every row of every batch in one insert.
    pub async fn insert_spans(&self, batches: &[RowBatch]) -> Result<(), InsertError> {
        let runs: Vec<RowRun<'_>> = batches.iter().map(RowRun::whole).collect();
        self.insert_runs(&runs).await.map(|_| ())
    }

    /// Inserts the given runs of rows in one insert block, in the table's sorting-key order
    /// (`order.rs`).
    pub async fn insert_runs(&self, runs: &[RowRun<'_>]) -> Result<Inserted, InsertError> {
        let rows: usize = runs.iter().map(|r| r.rows.len()).sum();
        if rows == 0 {
            return Ok(Inserted { rows: 0, bytes: 0 });
        }
        let runs = &super::order::in_key_order(runs);
        // Connect first: while ClickHouse is down, retries cost no block building.
        let mut c = self.handle().await?;
        let (block, taken, bytes) = spans_block(runs, rows, self.take_spares(0));
        let sent = c.insert(self.spans_table.as_str(), block).await;
        // On error the handle has no connection left and nothing goes back to the pool.
        drop(c);
        self.give_spares(0, taken, bytes);
        sent?;
        Ok(Inserted { rows, bytes })
    }

    /// The spare column buffers of set `slot` (empty the first time).
    pub(super) fn take_spares(&self, slot: usize) -> Vec<Vec<u8>> {
        let mut sets = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
        match sets.get_mut(slot) {
            Some(set) => std::mem::take(&mut set.buffers),
            None => Vec::new(),
        }
    }

    /// Gives a sent block's buffers back to set `slot` (`Spares::reclaim`).
    pub(super) fn give_spares(&self, slot: usize, taken: Vec<Arc<Vec<u8>>>, used: usize) {
        let mut sets = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
        if sets.len() <= slot {
            sets.resize_with(slot + 1, Spares::default);
        }
        sets[slot].reclaim(taken, used);
    }
}

/// The spare column buffers between inserts, and how large the recent inserts were.
#[derive(Default)]
pub(super) struct Spares {
    pub(super) buffers: Vec<Vec<u8>>,
    /// Bytes of the largest block of the current and of the previous `SPARES_WINDOW` inserts.
    peak: usize,
    previous_peak: usize,
    inserts: usize,
}

/// Inserts per window of `Spares::peak`.
pub(super) const SPARES_WINDOW: usize = 64;

impl Spares {
    /// Takes back a sent block's buffers (`used` bytes in all), emptied, in the order they were
    /// taken. Insert sizes vary a lot (the flush thread inserts what has arrived), so buffers
    /// keep their size across small blocks; only when they hold over 4 times what the largest
    /// block of the last 64 to 128 inserts needed (a burst is over) are they freed, so an
    /// idle server does not keep a burst's memory. A buffer the client still shares is
    /// replaced by an empty one.
    pub(super) fn reclaim(&mut self, taken: Vec<Arc<Vec<u8>>>, used: usize) {
        self.peak = self.peak.max(used);
        self.inserts += 1;
        if self.inserts == SPARES_WINDOW {
            self.previous_peak = self.peak;
            self.peak = 0;
            self.inserts = 0;
        }
        let recent = self.peak.max(self.previous_peak);
        let mut held = 0;
        self.buffers = taken
            .into_iter()
            .map(|shared| match Arc::try_unwrap(shared) {
                Ok(mut buffer) => {
                    buffer.clear();
                    held += buffer.capacity();
                    buffer
                }
                Err(_) => Vec::new(),
            })
            .collect();
        if held > 4 * recent + (1 << 20) {
            self.buffers.clear();
        }
    }
}
