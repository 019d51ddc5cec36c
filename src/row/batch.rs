//! `RowBatch`: a request's rows in the columns' native layout, in one buffer of the exact size;
//! built from measured rows, cut at row boundaries, checked when read back from disk.

use std::fmt;
use std::mem::{self, MaybeUninit};
use std::ops::Range;

use super::columns::{col, measure_row, write_chunk, Kind, COLUMNS, KINDS, REGIONS};
use super::read::{check_strings, read_varint, skip_strings, RowReader};
use super::write::{Cursor, Writer};
use super::RowRef;
use crate::admission::UsageTicket;

/// The rows `RowBatch::write` writes, produced on demand a chunk at a time: `fill` puts what
/// each row is made from (`Item`) in the chunk's slots, and `row` makes the row. The writer
/// asks `row` for one column of a chunk's rows at a time; inlined, that computes only the
/// column's value, so a source whose items are small (references to a span) never makes a
/// whole `RowRef` (over 1 KB) at all.
pub trait RowSource<'a> {
    type Item: Copy;

    /// Makes the next items in `slots`, as many as fit (fewer only at the end), and returns
    /// how many.
    fn fill(&mut self, slots: &mut [MaybeUninit<Self::Item>]) -> usize;

    /// The row of an item.
    fn row(&self, item: &Self::Item) -> RowRef<'a>;
}

/// The rows of a slice.
struct Slice<'s, 'a> {
    rows: &'s [RowRef<'a>],
    at: usize,
}

impl<'a> RowSource<'a> for Slice<'_, 'a> {
    type Item = RowRef<'a>;

    #[inline(always)]
    fn row(&self, item: &RowRef<'a>) -> RowRef<'a> {
        *item
    }

    fn fill(&mut self, slots: &mut [MaybeUninit<RowRef<'a>>]) -> usize {
        let rows = &self.rows[self.at..];
        let n = rows.len().min(slots.len());
        for (slot, r) in slots.iter_mut().zip(&rows[..n]) {
            slot.write(*r);
        }
        self.at += n;
        n
    }
}

/// Rows written column by column at a time (see `write_chunk`).
const CHUNK: usize = 32;

/// The regions whose rows have no fixed width: every `String` column's head and every
/// `Array(String)` column's tail, as column indexes, in column order.
pub const WALKED: [usize; walked_count()] = walked();

/// Whether rows of kind `k` vary in width where the flush thread cuts them: a `String`'s head,
/// an `Array(String)`'s tail.
const fn is_walked(k: Kind) -> bool {
    matches!(k, Kind::Str | Kind::MetaKeys | Kind::MetaValues)
}

const fn walked_count() -> usize {
    let (mut n, mut c) = (0, 0);
    while c < KINDS.len() {
        if is_walked(KINDS[c]) {
            n += 1;
        }
        c += 1;
    }
    n
}

const fn walked() -> [usize; walked_count()] {
    let mut out = [0; walked_count()];
    let (mut n, mut c) = (0, 0);
    while c < KINDS.len() {
        if is_walked(KINDS[c]) {
            out[n] = c;
            n += 1;
        }
        c += 1;
    }
    out
}

/// The region a walked column `c` is cut in: its head for a `String`, its tail for an
/// `Array(String)`.
pub const fn walked_region(c: usize) -> usize {
    if matches!(KINDS[c], Kind::Str) {
        2 * c
    } else {
        2 * c + 1
    }
}

/// Column `c`'s place in `WALKED` (`c` must be a `String` or `Array(String)` column).
pub const fn walked_index(c: usize) -> usize {
    let mut w = 0;
    while WALKED[w] != c {
        w += 1;
    }
    w
}

/// Where a group of rows (one trace's, in the table's key order) starts in a batch: its first
/// row and, for each `WALKED` region, the offset of that row's first byte there. A batch's
/// groups let the flush thread cut it at trace boundaries without walking its strings
/// (`RowBatch::group_row`, `RowBatch::group_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupStart {
    row: u64,
    at: [u64; WALKED.len()],
}

/// Bytes of one group in a batch's index: its row and its offsets, `u32` each.
const GROUP_BYTES: usize = 4 * (1 + WALKED.len());

/// A batch whose rows would not fit one batch's share of the write buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// What the rows would take.
    pub bytes: u64,
    /// The most one batch may take.
    pub limit: u64,
}

/// The rows of one accepted request in the `spans` columns' native layout, owning every byte.
#[derive(Clone)]
pub struct RowBatch {
    rows: usize,
    /// Every region back to back, in column order, head before tail; then, for a batch of
    /// several groups (`RowBatch::write`'s `groups`), their index: `GROUP_BYTES` per group.
    data: Vec<u8>,
    /// Region `i` is `data[bounds[i]..bounds[i + 1]]`; column `c`'s head is region `2c`, its
    /// tail region `2c + 1`.
    bounds: [u32; REGIONS + 1],
    /// The rows' place in their organisation's monthly usage: dropping it (once the rows are
    /// written or given up) tells the quota they left the write buffer. Empty when the
    /// organisation has no quota. Process-local accounting, not data: the spool codec does not
    /// write it, and the flush thread keeps it apart from the rows while they wait in the spool.
    pub usage: UsageTicket,
}

impl Default for RowBatch {
    fn default() -> Self {
        RowBatch {
            rows: 0,
            data: Vec::new(),
            bounds: [0; REGIONS + 1],
            usage: UsageTicket::default(),
        }
    }
}

impl fmt::Debug for RowBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowBatch")
            .field("rows", &self.rows)
            .field("bytes", &self.data.len())
            .finish_non_exhaustive()
    }
}

impl PartialEq for RowBatch {
    /// Same rows, byte for byte (the quota ticket is accounting, not data; the group index
    /// is derived from the rows).
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows && self.bounds == other.bounds && self.data() == other.data()
    }
}

/// What a batch's rows take, column by column: the first of the two passes `RowBatch::write`
/// needs, made by the caller as it produces the rows (`RowBatch::build` makes it itself).
#[derive(Debug, Clone)]
pub struct Measure {
    rows: usize,
    /// Bytes of each column that vary from row to row (strings, array values).
    var: [u64; COLUMNS],
}

impl Default for Measure {
    fn default() -> Self {
        Measure {
            rows: 0,
            var: [0; COLUMNS],
        }
    }
}

impl Measure {
    /// Counts one more row.
    #[inline]
    pub fn add(&mut self, r: &RowRef<'_>) {
        measure_row(r, &mut self.var);
        self.rows += 1;
    }

    /// Where the next row will start: the start of a group, when rows are measured in the
    /// order they are written.
    #[inline]
    pub fn group_start(&self) -> GroupStart {
        GroupStart {
            row: self.rows as u64,
            at: WALKED.map(|c| self.var[c]),
        }
    }
}

impl RowBatch {
    /// Writes the rows of `source`, which `measure` counted, into a batch allocated once at its
    /// exact size. Refused, before anything is allocated, when the rows would take more than
    /// `limit` bytes (or 4 GiB, past which region offsets do not fit a `u32`).
    ///
    /// # Panics
    /// When `source` yields other rows than `measure` counted (a region would overflow, or not
    /// be filled): a program bug, never bad input.
    pub fn write<'a>(
        measure: &Measure,
        limit: u64,
        source: &mut impl RowSource<'a>,
    ) -> Result<Self, TooLarge> {
        RowBatch::write_grouped(measure, &[], limit, source)
    }

    /// `write`, with the starts of the rows' groups (`Measure::group_start` before each
    /// group's first row, in order, the first at row 0), indexed after the regions when
    /// there are several (one group is cut only at its ends, which need no index).
    ///
    /// # Panics
    /// As `write`, and when `groups` do not start at row 0 or go back.
    pub fn write_grouped<'a, S: RowSource<'a>>(
        measure: &Measure,
        groups: &[GroupStart],
        limit: u64,
        source: &mut S,
    ) -> Result<Self, TooLarge> {
        let (rows, var) = (measure.rows, &measure.var);
        let mut bounds = [0u32; REGIONS + 1];
        let mut at = 0u64;
        for (c, kind) in KINDS.iter().enumerate() {
            let fixed = rows as u64;
            let head = fixed * kind.head_width() as u64 + if kind.is_array() { 0 } else { var[c] };
            let tail = fixed * kind.tail_width() as u64 + if kind.is_array() { var[c] } else { 0 };
            at += head;
            bounds[2 * c + 1] = u32::try_from(at).unwrap_or(u32::MAX);
            at += tail;
            bounds[2 * c + 2] = u32::try_from(at).unwrap_or(u32::MAX);
        }
        let limit = limit.min(u64::from(u32::MAX) - 1);
        if at > limit {
            return Err(TooLarge { bytes: at, limit });
        }
        let total = at as usize;
        let groups = if groups.len() > 1 { groups } else { &[] };
        assert!(
            groups.first().is_none_or(|g| g.row == 0)
                && groups.windows(2).all(|w| w[0].row <= w[1].row)
                && groups.last().is_none_or(|g| g.row < rows as u64),
            "groups start at row 0 and go forward"
        );
        let mut data: Vec<u8> = Vec::with_capacity(total + groups.len() * GROUP_BYTES);
        {
            let mut rest = &mut data.spare_capacity_mut()[..total];
            let cur: [Cursor<'_>; REGIONS] = std::array::from_fn(|i| {
                let len = (bounds[i + 1] - bounds[i]) as usize;
                let (region, after) = mem::take(&mut rest).split_at_mut(len);
                rest = after;
                Cursor(region)
            });
            let mut w = Writer {
                cur,
                elems: [0; COLUMNS],
            };
            // Not initialised up front: a chunk of `RowRef`s (1 KB each) would be zeroed for
            // every batch.
            let mut chunk = [const { MaybeUninit::<S::Item>::uninit() }; CHUNK];
            loop {
                let n = source.fill(&mut chunk);
                // SAFETY: `fill` wrote the first `n` slots (`Item` is `Copy`: nothing to
                // drop, and a slot written again is simply overwritten).
                let items =
                    unsafe { &*(&chunk[..n] as *const [MaybeUninit<S::Item>] as *const [S::Item]) };
                write_chunk(items, &mut w, &*source);
                if n < CHUNK {
                    break;
                }
            }
            // Every byte of every region written: none left uninitialised.
            assert!(
                w.cur.iter().all(|c| c.0.is_empty()),
                "a row source yields the rows its measure counted"
            );
        }
        // SAFETY: the regions cover `data[..total]` exactly, and each was written to its end
        // (checked just above).
        unsafe { data.set_len(total) };
        // Offsets within regions under 4 GiB (checked above) fit a `u32`.
        for g in groups {
            data.extend_from_slice(&(g.row as u32).to_le_bytes());
            for &at in &g.at {
                data.extend_from_slice(&(at as u32).to_le_bytes());
            }
        }
        Ok(RowBatch {
            rows,
            data,
            bounds,
            usage: UsageTicket::default(),
        })
    }

    /// The groups the batch was written with (`write_grouped`), 0 when it has no index (one
    /// group, or a batch read back from the spool).
    #[inline]
    pub fn groups(&self) -> usize {
        (self.data.len() - self.bounds[REGIONS] as usize) / GROUP_BYTES
    }

    #[inline]
    fn index_u32(&self, g: usize, i: usize) -> usize {
        let at = self.bounds[REGIONS] as usize + g * GROUP_BYTES + 4 * i;
        u32::from_le_bytes(self.data[at..at + 4].try_into().expect("4 bytes")) as usize
    }

    /// The first row of group `g` (`g == groups()`: the batch's end).
    #[inline]
    pub fn group_row(&self, g: usize) -> usize {
        if g == self.groups() {
            self.rows
        } else {
            self.index_u32(g, 0)
        }
    }

    /// Where group `g`'s first row starts in the region of walked column `WALKED[w]`: its
    /// head for a `String`, its tail for an `Array(String)` (`g == groups()`: the region's end).
    #[inline]
    pub fn group_at(&self, g: usize, w: usize) -> usize {
        if g == self.groups() {
            self.region(walked_region(WALKED[w])).len()
        } else {
            self.index_u32(g, 1 + w)
        }
    }

    /// The groups `g0..g1` whose rows are exactly `rows`, if `rows` starts and ends at group
    /// boundaries of an indexed batch.
    pub fn groups_of(&self, rows: &Range<usize>) -> Option<(usize, usize)> {
        let n = self.groups();
        if n == 0 {
            return None;
        }
        // The first group (of 0..=n, where n stands for the end) not before `row`.
        let find = |row: usize| {
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if self.group_row(mid) < row {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            (self.group_row(lo) == row).then_some(lo)
        };
        Some((find(rows.start)?, find(rows.end)?))
    }

    /// A batch of the given rows (tests, and records of the first spool format).
    pub fn from_rows(rows: &[RowRef<'_>]) -> RowBatch {
        RowBatch::from_rows_within(rows, u64::MAX).expect("rows under 4 GiB")
    }

    /// A batch of the given rows, unless they take more than `limit` bytes.
    pub fn from_rows_within(rows: &[RowRef<'_>], limit: u64) -> Result<RowBatch, TooLarge> {
        let mut measure = Measure::default();
        for r in rows {
            measure.add(r);
        }
        RowBatch::write(&measure, limit, &mut Slice { rows, at: 0 })
    }

    /// A batch of rows already in key order (trace id, start, span id), with each trace's
    /// start indexed as a worker's batch has it (tests).
    #[cfg(test)]
    pub fn from_sorted_rows(rows: &[RowRef<'_>]) -> RowBatch {
        fn key<'r>(r: &RowRef<'r>) -> (&'r str, u64, &'r str) {
            (r.trace_id, r.start_time_ms, r.span_id)
        }
        assert!(
            rows.windows(2).all(|w| key(&w[0]) <= key(&w[1])),
            "rows in key order"
        );
        let mut measure = Measure::default();
        let mut groups = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if i == 0 || rows[i - 1].trace_id != r.trace_id {
                groups.push(measure.group_start());
            }
            measure.add(r);
        }
        RowBatch::write_grouped(&measure, &groups, u64::MAX, &mut Slice { rows, at: 0 })
            .expect("rows under 4 GiB")
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Heap bytes held, for buffer accounting.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity() + mem::size_of::<Self>()
    }

    /// Every region, back to back (not the group index: a batch read back from the spool has
    /// none).
    pub fn data(&self) -> &[u8] {
        &self.data[..self.bounds[REGIONS] as usize]
    }

    /// Region boundaries (see the field).
    pub fn bounds(&self) -> &[u32; REGIONS + 1] {
        &self.bounds
    }

    /// Byte range of region `i` in `data()`.
    #[inline]
    pub fn region(&self, i: usize) -> Range<usize> {
        self.bounds[i] as usize..self.bounds[i + 1] as usize
    }

    /// Rebuilds a batch written when the column list had only its first `columns` columns
    /// (columns are only ever added at the end): the regions of the columns added since are
    /// filled as `migrate` fills them on stored rows (empty, zero or NULL; `version` from
    /// `ingested_at`), then the whole layout is checked as `from_parts` does. `bounds` has
    /// `2 * columns + 1` entries.
    pub fn from_older_parts(
        rows: usize,
        columns: usize,
        bounds: &[u32],
        mut data: Vec<u8>,
    ) -> Result<RowBatch, &'static str> {
        if columns > COLUMNS || bounds.len() != 2 * columns + 1 {
            return Err("a column list this build does not know");
        }
        if bounds[2 * columns] as usize != data.len() || columns <= col::ingested_at {
            return Err("regions do not cover the data");
        }
        let mut all = [0u32; REGIONS + 1];
        all[..bounds.len()].copy_from_slice(bounds);
        // `ingested_at` is written before any added column: 4 bytes a row.
        let at = (
            bounds[2 * col::ingested_at] as usize,
            bounds[2 * col::ingested_at + 1] as usize,
        );
        // Bounds not checked yet (`from_parts` checks them all below): inside the data first.
        if at.1 < at.0 || at.1 > data.len() || at.1 - at.0 != rows.saturating_mul(4) {
            return Err("a column's size does not match its rows");
        }
        let ingested: Vec<u32> = data[at.0..at.1]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        for (c, &kind) in KINDS.iter().enumerate().skip(columns) {
            // Head.
            if c == col::version {
                for &s in &ingested {
                    data.extend_from_slice(&super::version_of_ingested_at(s).to_le_bytes());
                }
            } else {
                let per_row: &[u8] = match kind {
                    Kind::Str => &[0],
                    Kind::U64 | Kind::Ints | Kind::MetaKeys | Kind::MetaValues => &[0; 8],
                    Kind::Time => &[0; 4],
                    // NULL.
                    Kind::OptU64 | Kind::OptF64 | Kind::Money | Kind::OptTime => &[1],
                };
                for _ in 0..rows {
                    data.extend_from_slice(per_row);
                }
            }
            all[2 * c + 1] = u32::try_from(data.len()).map_err(|_| "a batch over 4 GiB")?;
            // Tail: a Nullable's zero values; an empty array has none.
            data.resize(data.len() + rows * kind.tail_width(), 0);
            all[2 * c + 2] = u32::try_from(data.len()).map_err(|_| "a batch over 4 GiB")?;
        }
        RowBatch::from_parts(rows, all, data)
    }

    /// Rebuilds a batch from what `data()` and `bounds()` gave, checking that every region is
    /// exactly what `rows` rows of its column take (string lengths, null flags, array offsets,
    /// UTF-8), so that reading it back cannot go wrong.
    pub fn from_parts(
        rows: usize,
        bounds: [u32; REGIONS + 1],
        data: Vec<u8>,
    ) -> Result<RowBatch, &'static str> {
        if bounds[0] != 0 || bounds[REGIONS] as usize != data.len() {
            return Err("regions do not cover the data");
        }
        if bounds.windows(2).any(|w| w[0] > w[1]) {
            return Err("regions out of order");
        }
        let batch = RowBatch {
            rows,
            data,
            bounds,
            usage: UsageTicket::default(),
        };
        for (c, &kind) in KINDS.iter().enumerate() {
            let (head, tail) = (batch.head(c), batch.tail(c));
            let fixed_head = rows.checked_mul(kind.head_width());
            let fixed_tail = rows.checked_mul(kind.tail_width());
            match kind {
                Kind::Str => {
                    if check_strings(head, rows)? != Some(head.len()) {
                        return Err("a string column does not hold its rows");
                    }
                }
                _ if fixed_head != Some(head.len()) => {
                    return Err("a column's size does not match its rows");
                }
                Kind::Ints | Kind::MetaKeys | Kind::MetaValues => {
                    let mut last = 0;
                    for o in head.chunks_exact(8) {
                        let o = u64::from_le_bytes(o.try_into().expect("8 bytes"));
                        if o < last {
                            return Err("array offsets go back");
                        }
                        last = o;
                    }
                    let elems = usize::try_from(last).map_err(|_| "array offsets too large")?;
                    let fits = if kind == Kind::Ints {
                        elems.checked_mul(8) == Some(tail.len())
                    } else {
                        check_strings(tail, elems)? == Some(tail.len())
                    };
                    if !fits {
                        return Err("array values do not match their offsets");
                    }
                }
                _ => {
                    if fixed_tail != Some(tail.len()) {
                        return Err("a column's size does not match its rows");
                    }
                    if kind.tail_width() > 0 && head.iter().any(|&b| b > 1) {
                        return Err("a null map holds something other than 0 or 1");
                    }
                }
            }
            if kind.tail_width() == 0 && !kind.is_array() && !tail.is_empty() {
                return Err("a plain column has a tail");
            }
        }
        Ok(batch)
    }

    /// Column `c`'s head region.
    #[inline]
    pub fn head(&self, c: usize) -> &[u8] {
        &self.data[self.region(2 * c)]
    }

    /// Column `c`'s tail region.
    #[inline]
    pub fn tail(&self, c: usize) -> &[u8] {
        &self.data[self.region(2 * c + 1)]
    }

    /// Where row `row` starts in every region, as offsets into that region (`row == len()`
    /// gives the regions' ends). Fixed-width regions are arithmetic; strings are skipped over.
    pub fn cut(&self, row: usize) -> [usize; REGIONS] {
        assert!(row <= self.rows, "row {row} of a batch of {}", self.rows);
        let mut at = [0usize; REGIONS];
        if row == self.rows {
            for (i, a) in at.iter_mut().enumerate() {
                *a = self.region(i).len();
            }
            return at;
        }
        for (c, &kind) in KINDS.iter().enumerate() {
            at[2 * c] = match kind {
                Kind::Str => skip_strings(self.head(c), row),
                _ => row * kind.head_width(),
            };
            at[2 * c + 1] = match kind {
                Kind::Ints => 8 * self.elems_before(c, row),
                Kind::MetaKeys | Kind::MetaValues => {
                    skip_strings(self.tail(c), self.elems_before(c, row))
                }
                _ => row * kind.tail_width(),
            };
        }
        at
    }

    /// `cut(row)` from `at`, the cut at an earlier row `from`: only the rows between are
    /// skipped, so cutting a batch at increasing rows costs one pass over it in all.
    pub fn cut_from(&self, from: usize, at: &[usize; REGIONS], row: usize) -> [usize; REGIONS] {
        assert!(
            from <= row && row <= self.rows,
            "rows {from}..{row} of {}",
            self.rows
        );
        if row == self.rows || from == 0 {
            return self.cut(row);
        }
        let mut to = *at;
        for (c, &kind) in KINDS.iter().enumerate() {
            let (h, t) = (2 * c, 2 * c + 1);
            match kind {
                Kind::Str => to[h] += skip_strings(&self.head(c)[at[h]..], row - from),
                _ => to[h] = row * kind.head_width(),
            }
            to[t] = match kind {
                Kind::Ints => 8 * self.elems_before(c, row),
                Kind::MetaKeys | Kind::MetaValues => {
                    let n = self.elems_before(c, row) - self.elems_before(c, from);
                    at[t] + skip_strings(&self.tail(c)[at[t]..], n)
                }
                _ => row * kind.tail_width(),
            };
        }
        to
    }

    /// Where row `to` starts in column `c`'s head and tail, given where row `from <= to`
    /// starts (`at`): only the rows between are skipped. `at = (0, 0)` with `from = 0` is the
    /// column's start.
    #[inline]
    pub fn column_cut_from(
        &self,
        c: usize,
        from: usize,
        at: (usize, usize),
        to: usize,
    ) -> (usize, usize) {
        debug_assert!(
            from <= to && to <= self.rows,
            "rows {from}..{to} of {}",
            self.rows
        );
        let kind = KINDS[c];
        let head = match kind {
            Kind::Str => at.0 + skip_strings(&self.head(c)[at.0..], to - from),
            _ => to * kind.head_width(),
        };
        let tail = match kind {
            Kind::Ints => 8 * self.elems_before(c, to),
            Kind::MetaKeys | Kind::MetaValues => {
                let n = self.elems_before(c, to) - self.elems_before(c, from);
                at.1 + skip_strings(&self.tail(c)[at.1..], n)
            }
            _ => to * kind.tail_width(),
        };
        (head, tail)
    }

    /// When every row has the same value in column `c` (empty, null, zero, or one constant
    /// such as the organisation): that value's bytes in the head and in the tail, which the
    /// regions repeat once per row. `None` otherwise, or for an empty batch; an `Array` column
    /// counts only when every row's array is empty (its end offsets are then all 0).
    pub fn uniform(&self, c: usize) -> Option<(&[u8], &[u8])> {
        let (head, tail, rows) = (self.head(c), self.tail(c), self.rows);
        let kind = KINDS[c];
        let head_width = match kind {
            // A short string (one varint byte): the usual constant.
            Kind::Str => 1 + usize::from(*head.first().filter(|&&b| b < 0x80)?),
            _ => kind.head_width(),
        };
        let tail_width = kind.tail_width();
        if rows == 0 || head.len() != rows * head_width || tail.len() != rows * tail_width {
            return None;
        }
        // End offsets never decrease: all are 0 when the last one is.
        if kind.is_array() && head[head.len() - 8..] != [0; 8] {
            return None;
        }
        // A region that repeats its first `w` bytes is equal to itself shifted by `w`; most
        // that do not already differ in their last row.
        let repeats = |r: &[u8], w: usize| r[r.len() - w..] == r[..w] && r[w..] == r[..r.len() - w];
        (repeats(head, head_width) && repeats(tail, tail_width))
            .then(|| (&head[..head_width], &tail[..tail_width]))
    }

    /// The string of a `String` column's head that starts at byte `at`, and where the next
    /// one starts.
    #[inline]
    pub fn string_at(&self, c: usize, at: usize) -> (&[u8], usize) {
        let head = self.head(c);
        let (len, used) = read_varint(&head[at..]).expect("checked batch");
        let start = at + used;
        let end = start + len as usize;
        (&head[start..end], end)
    }

    /// Elements of array column `c` in the rows before `row`.
    pub fn elems_before(&self, c: usize, row: usize) -> usize {
        if row == 0 {
            0
        } else {
            self.offset(c, row - 1) as usize
        }
    }

    /// Array column `c`'s end offset of row `row`.
    #[inline]
    pub fn offset(&self, c: usize, row: usize) -> u64 {
        let at = row * 8;
        let bytes = &self.head(c)[at..at + 8];
        u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }

    /// Reads rows `range` back, one column value at a time: the dead-letter file's view.
    pub fn reader(&self, range: Range<usize>) -> RowReader<'_> {
        let cut = self.cut(range.start);
        let mut elems = [0usize; COLUMNS];
        for (c, e) in elems.iter_mut().enumerate() {
            if KINDS[c].is_array() {
                *e = self.elems_before(c, range.start);
            }
        }
        RowReader {
            batch: self,
            at: cut,
            elems,
            row: range.start,
            end: range.end,
        }
    }
}
