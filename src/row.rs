//! One storage row per span, written by the worker straight into ClickHouse's native column
//! layout: a `RowBatch` is a request's rows as the `spans` columns, back to back, in one buffer.
//!
//! The column list below (`spans_columns!`) is the single source of truth for the `spans`
//! table: its DDL and migration check (`sink/clickhouse.rs`), the layout of a batch, how a row's
//! values are measured and written, and how they are read back for the dead-letter file.
//!
//! Why the wire layout, and why in the worker: a row is written once, where its strings already
//! are (the decoder's buffer), in the form ClickHouse reads. Before, each span became a fixed
//! 856-byte `Row` plus a copy of its strings, and the flush thread then wrote every value again
//! into its insert block, one value at a time (about 0.9 µs of CPU per row, as much as a
//! third of the server's CPU per GB). Now the flush thread appends each batch's column regions
//! to its block whole, a few copies per batch, and a batch in memory is about its size on the
//! wire, so the same memory bound holds more rows.
//!
//! Layout of a batch of `n` rows: for each column, a *head* and a *tail* region:
//!
//! | kind | head | tail |
//! |---|---|---|
//! | `String` | varint length + bytes, per row | - |
//! | `UInt64`, `DateTime` | 8 or 4 bytes per row | - |
//! | `Nullable(T)` | null map, 1 byte per row | `T` per row (zero where null) |
//! | `Array(T)` | end offset (`u64`, counted from the batch's first row) per row | the values |
//!
//! A batch is built in two passes over its rows (`RowBatch::build`): the first measures every
//! column (so the buffer is allocated once, at its exact size, and a batch whose rows would be
//! too large is refused before anything is allocated), the second writes each row's values at
//! the end of each column's region. Nothing else allocates.

use std::fmt;
use std::mem::{self, MaybeUninit};
use std::ops::Range;

use crate::admission::UsageTicket;

/// Money in units of 1e-10 USD: exactly ClickHouse `Decimal(18, 10)`.
pub type Money = i64;

/// The nine cost columns, in table order. `None` = not priced for that dimension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CostColumns {
    pub prompt: Option<Money>,
    pub completion: Option<Money>,
    pub request: Option<Money>,
    pub image: Option<Money>,
    pub web_search: Option<Money>,
    pub internal_reasoning: Option<Money>,
    pub cache_read: Option<Money>,
    pub cache_write: Option<Money>,
    pub total: Option<Money>,
}

impl CostColumns {
    /// The eight dimensions without the total, in the order of `pricing::Dimension`.
    pub fn dimensions(&self) -> [Option<Money>; 8] {
        [
            self.prompt,
            self.completion,
            self.request,
            self.image,
            self.web_search,
            self.internal_reasoning,
            self.cache_read,
            self.cache_write,
        ]
    }
}

/// One span as stored, borrowing its strings: what `RowBatch::build` writes. Field order
/// follows the `spans` table.
#[derive(Debug, Clone, Copy, Default)]
pub struct RowRef<'a> {
    pub org_id: &'a str,
    pub project_id: &'a str,
    pub trace_id: &'a str,
    pub span_id: &'a str,
    /// Empty = absent, as for every optional string below.
    pub parent_span_id: &'a str,
    pub span_type: &'a str,
    pub name: &'a str,
    pub start_time_ms: u64,
    pub end_time_ms: u64,
    pub duration_ms: u64,
    pub status: &'a str,
    pub error_message: &'a str,
    pub provider: &'a str,
    pub model_id: &'a str,
    pub priced_model_id: &'a str,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub reasoning_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_input_tokens: u64,
    pub image_count: u64,
    pub web_search_count: u64,
    pub request_count: u64,
    pub ttft_ms: Option<f64>,
    pub reasoning_duration_ms: Option<u64>,
    pub model_call_ms: Option<u64>,
    pub costs: CostColumns,
    /// `""` when unpriced, else `"builtin"` or `"file"`.
    pub pricing_source: &'a str,
    /// Epoch seconds; `None` when unpriced.
    pub priced_at: Option<u32>,
    pub trace_name: &'a str,
    pub agent_name: &'a str,
    pub workflow_name: &'a str,
    pub workflow_run_id: &'a str,
    pub session_id: &'a str,
    /// The trace's metadata with the span's own on top (see `ingest::rows::merge_metadata`).
    pub metadata: &'a [(&'a str, &'a str)],
    pub input: &'a str,
    pub output: &'a str,
    pub tool_catalog: &'a str,
    pub system_fingerprint: &'a str,
    pub safety_metadata: &'a str,
    pub sources: &'a str,
    pub rate_limit_requests_limit: Option<u64>,
    pub rate_limit_requests_remaining: Option<u64>,
    pub rate_limit_requests_reset_ms: Option<u64>,
    pub rate_limit_tokens_limit: Option<u64>,
    pub rate_limit_tokens_remaining: Option<u64>,
    pub rate_limit_tokens_reset_ms: Option<u64>,
    pub chunk_offsets: &'a [u64],
    pub chunk_tokens: &'a [u64],
    pub reasoning_offsets: &'a [u64],
    pub reasoning_chunk_tokens: &'a [u64],
    pub customer_id: &'a str,
    pub customer_name: &'a str,
    pub customer_image_url: &'a str,
    pub response_time_ms: Option<u64>,
    pub effective_output_tps: Option<f64>,
    pub effective_total_tps: Option<f64>,
    pub output_tps: Option<f64>,
    pub input_tps: Option<f64>,
    pub chunk_jitter_min: Option<f64>,
    pub chunk_jitter_p10: Option<f64>,
    pub chunk_jitter_median: Option<f64>,
    pub chunk_jitter_avg: Option<f64>,
    pub chunk_jitter_p90: Option<f64>,
    pub chunk_jitter_max: Option<f64>,
    /// Epoch seconds.
    pub ingested_at: u32,
    /// The cost the client reported for the call (OTLP), next to ours; `None` when it sent none.
    pub reported_cost: Option<Money>,
}

/// How a column is laid out, and which type its values have in `RowRef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `String` (`&str`).
    Str,
    /// `UInt64` (`u64`).
    U64,
    /// `DateTime`: epoch seconds (`u32`).
    Time,
    /// `Nullable(UInt64)` (`Option<u64>`).
    OptU64,
    /// `Nullable(Float64)` (`Option<f64>`).
    OptF64,
    /// `Nullable(Decimal(18, 10))`: `Option<Money>`, units of 1e-10 USD as the `Int64` the
    /// decimal is on the wire.
    Money,
    /// `Nullable(DateTime)` (`Option<u32>`).
    OptTime,
    /// `Array(UInt64)` (`&[u64]`).
    Ints,
    /// `Array(String)` of the keys, or of the values, of a row's metadata.
    MetaKeys,
    MetaValues,
}

impl Kind {
    pub const fn sql_type(self) -> &'static str {
        match self {
            Kind::Str => "String",
            Kind::U64 => "UInt64",
            Kind::Time => "DateTime",
            Kind::OptU64 => "Nullable(UInt64)",
            Kind::OptF64 => "Nullable(Float64)",
            Kind::Money => "Nullable(Decimal(18, 10))",
            Kind::OptTime => "Nullable(DateTime)",
            Kind::Ints => "Array(UInt64)",
            Kind::MetaKeys | Kind::MetaValues => "Array(String)",
        }
    }

    /// Bytes per row in the head region; 0 for a `String`, whose rows vary.
    pub const fn head_width(self) -> usize {
        match self {
            Kind::Str => 0,
            Kind::U64 | Kind::Ints | Kind::MetaKeys | Kind::MetaValues => 8,
            Kind::Time => 4,
            Kind::OptU64 | Kind::OptF64 | Kind::Money | Kind::OptTime => 1,
        }
    }

    /// Bytes per row in the tail region, for a `Nullable`; 0 otherwise.
    pub const fn tail_width(self) -> usize {
        match self {
            Kind::OptU64 | Kind::OptF64 | Kind::Money => 8,
            Kind::OptTime => 4,
            _ => 0,
        }
    }

    /// An `Array`: the head holds end offsets into the tail's values.
    pub const fn is_array(self) -> bool {
        matches!(self, Kind::Ints | Kind::MetaKeys | Kind::MetaValues)
    }
}

/// Bytes of `n` as an unsigned LEB128 varint (ClickHouse's string length prefix).
#[inline]
pub const fn varint_len(n: u64) -> u64 {
    if n < 0x80 {
        // Most strings: ids, names, labels.
        return 1;
    }
    // 7 bits a byte.
    let bits = 64 - n.leading_zeros() as u64;
    bits.div_ceil(7)
}

/// Variable bytes of a column's value in a row (what the fixed widths do not cover).
macro_rules! measure {
    (Str, $v:expr) => {{
        let n = $v.len() as u64;
        varint_len(n) + n
    }};
    (Ints, $v:expr) => {
        8 * $v.len() as u64
    };
    (MetaKeys, $v:expr) => {
        $v.iter()
            .map(|(k, _)| varint_len(k.len() as u64) + k.len() as u64)
            .sum::<u64>()
    };
    (MetaValues, $v:expr) => {
        $v.iter()
            .map(|(_, v)| varint_len(v.len() as u64) + v.len() as u64)
            .sum::<u64>()
    };
    ($fixed:ident, $v:expr) => {
        0
    };
}

/// Writes one column's values of a chunk of rows at the end of its head and tail.
macro_rules! write_column {
    (Str, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {{
        let mut head = $w.take(2 * $c);
        for $r in $rows {
            head.string($v);
        }
        $w.give(2 * $c, head);
    }};
    (U64, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.fixed::<8>(2 * $c, $rows, |$r| u64::to_le_bytes($v))
    };
    (Time, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.fixed::<4>(2 * $c, $rows, |$r| u32::to_le_bytes($v))
    };
    (OptU64, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<8>($c, $rows, |$r| $v.map(u64::to_le_bytes))
    };
    (OptF64, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<8>($c, $rows, |$r| $v.map(f64::to_le_bytes))
    };
    (Money, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<8>($c, $rows, |$r| $v.map(i64::to_le_bytes))
    };
    (OptTime, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.nullable::<4>($c, $rows, |$r| $v.map(u32::to_le_bytes))
    };
    (Ints, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.array($c, $rows, |$r, tail| {
            let ints: &[u64] = $v;
            for i in ints {
                tail.put(&i.to_le_bytes());
            }
            ints.len()
        })
    };
    (MetaKeys, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.metadata($c, $rows, |$r| $v, |&(k, _)| k)
    };
    (MetaValues, $w:expr, $c:expr, $rows:expr, |$r:ident| $v:expr) => {
        $w.metadata($c, $rows, |$r| $v, |&(_, v)| v)
    };
}

/// Declares the `spans` columns in table order as `name: Kind(row.field.path)`.
macro_rules! spans_columns {
    ($($name:ident: $kind:ident($($field:ident).+)),* $(,)?) => {
        /// `spans` columns in table order: (name, ClickHouse type).
        pub const SPANS_COLUMNS: &[(&str, &str)] = &[$((stringify!($name), Kind::$kind.sql_type())),*];

        /// How each column of `SPANS_COLUMNS` is laid out.
        pub const KINDS: &[Kind] = &[$(Kind::$kind),*];

        /// Column indexes, by name.
        #[allow(non_upper_case_globals, dead_code)]
        pub mod col {
            use super::ColumnIndex;
            $(pub const $name: usize = ColumnIndex::$name as usize;)*
        }

        #[allow(non_camel_case_types, dead_code)]
        enum ColumnIndex { $($name),* }

        /// Adds a row's variable bytes to each column's count.
        #[inline]
        fn measure_row(r: &RowRef<'_>, var: &mut [u64; COLUMNS]) {
            $(var[col::$name] += measure!($kind, r.$($field).+);)*
        }

        /// Writes a few rows' values at the end of every column, column by column: the rows
        /// stay in the L1 cache while each column's region is written in order (row by row,
        /// the 152 regions written at once cost a TLB miss on almost every value).
        #[inline]
        fn write_chunk(rows: &[RowRef<'_>], w: &mut Writer<'_>) {
            $(write_column!($kind, w, col::$name, rows, |r| r.$($field).+);)*
        }
    };
}

/// The number of `spans` columns.
pub const COLUMNS: usize = KINDS.len();

/// Head and tail regions of every column.
pub const REGIONS: usize = 2 * COLUMNS;

spans_columns! {
    org_id: Str(org_id),
    project_id: Str(project_id),
    trace_id: Str(trace_id),
    span_id: Str(span_id),
    parent_span_id: Str(parent_span_id),
    span_type: Str(span_type),
    name: Str(name),
    start_time_ms: U64(start_time_ms),
    end_time_ms: U64(end_time_ms),
    duration_ms: U64(duration_ms),
    status: Str(status),
    error_message: Str(error_message),
    provider: Str(provider),
    model_id: Str(model_id),
    priced_model_id: Str(priced_model_id),
    input_tokens: U64(input_tokens),
    output_tokens: U64(output_tokens),
    total_tokens: U64(total_tokens),
    reasoning_tokens: U64(reasoning_tokens),
    cached_input_tokens: U64(cached_input_tokens),
    cache_write_input_tokens: U64(cache_write_input_tokens),
    image_count: U64(image_count),
    web_search_count: U64(web_search_count),
    request_count: U64(request_count),
    ttft_ms: OptF64(ttft_ms),
    reasoning_duration_ms: OptU64(reasoning_duration_ms),
    model_call_ms: OptU64(model_call_ms),
    prompt_cost: Money(costs.prompt),
    completion_cost: Money(costs.completion),
    request_cost: Money(costs.request),
    image_cost: Money(costs.image),
    web_search_cost: Money(costs.web_search),
    internal_reasoning_cost: Money(costs.internal_reasoning),
    cache_read_cost: Money(costs.cache_read),
    cache_write_cost: Money(costs.cache_write),
    total_cost: Money(costs.total),
    pricing_source: Str(pricing_source),
    priced_at: OptTime(priced_at),
    trace_name: Str(trace_name),
    agent_name: Str(agent_name),
    workflow_name: Str(workflow_name),
    workflow_run_id: Str(workflow_run_id),
    session_id: Str(session_id),
    metadata_keys: MetaKeys(metadata),
    metadata_values: MetaValues(metadata),
    input: Str(input),
    output: Str(output),
    tool_catalog: Str(tool_catalog),
    system_fingerprint: Str(system_fingerprint),
    safety_metadata: Str(safety_metadata),
    sources: Str(sources),
    rate_limit_requests_limit: OptU64(rate_limit_requests_limit),
    rate_limit_requests_remaining: OptU64(rate_limit_requests_remaining),
    rate_limit_requests_reset_ms: OptU64(rate_limit_requests_reset_ms),
    rate_limit_tokens_limit: OptU64(rate_limit_tokens_limit),
    rate_limit_tokens_remaining: OptU64(rate_limit_tokens_remaining),
    rate_limit_tokens_reset_ms: OptU64(rate_limit_tokens_reset_ms),
    chunk_offsets: Ints(chunk_offsets),
    chunk_tokens: Ints(chunk_tokens),
    reasoning_offsets: Ints(reasoning_offsets),
    reasoning_chunk_tokens: Ints(reasoning_chunk_tokens),
    ingested_at: Time(ingested_at),
    // Fields newer v1 clients send.
    customer_id: Str(customer_id),
    customer_name: Str(customer_name),
    customer_image_url: Str(customer_image_url),
    response_time_ms: OptU64(response_time_ms),
    effective_output_tps: OptF64(effective_output_tps),
    effective_total_tps: OptF64(effective_total_tps),
    output_tps: OptF64(output_tps),
    input_tps: OptF64(input_tps),
    chunk_jitter_min: OptF64(chunk_jitter_min),
    chunk_jitter_p10: OptF64(chunk_jitter_p10),
    chunk_jitter_median: OptF64(chunk_jitter_median),
    chunk_jitter_avg: OptF64(chunk_jitter_avg),
    chunk_jitter_p90: OptF64(chunk_jitter_p90),
    chunk_jitter_max: OptF64(chunk_jitter_max),
    // OTLP front end. New columns go last: an existing table gets them by `ADD COLUMN`, and a
    // spool record written before them reads back with them empty (`sink/codec.rs`).
    reported_cost: Money(reported_cost),
}

/// Where a region of a batch under construction gets its next bytes: the unwritten rest of it.
/// Every write is bounds-checked (a measuring mistake panics; it never writes out of bounds).
struct Cursor<'b>(&'b mut [MaybeUninit<u8>]);

impl<'b> Cursor<'b> {
    /// Initialised bytes as what they are anyway: valid `MaybeUninit<u8>`s.
    #[inline]
    fn uninit(bytes: &[u8]) -> &[MaybeUninit<u8>] {
        // SAFETY: `[u8]` and `[MaybeUninit<u8>]` have the same layout, and initialised bytes
        // are valid `MaybeUninit<u8>`s.
        unsafe { &*(bytes as *const [u8] as *const [MaybeUninit<u8>]) }
    }

    /// The next `n` bytes, to be written by the caller.
    #[inline]
    fn advance(&mut self, n: usize) -> &'b mut [MaybeUninit<u8>] {
        let (dst, rest) = mem::take(&mut self.0).split_at_mut(n);
        self.0 = rest;
        dst
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.advance(bytes.len())
            .copy_from_slice(Cursor::uninit(bytes));
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        let (dst, rest) = mem::take(&mut self.0)
            .split_first_mut()
            .expect("a measured region has room for its bytes");
        dst.write(b);
        self.0 = rest;
    }

    /// A `String` value: varint length, then the bytes.
    #[inline]
    fn string(&mut self, s: &str) {
        let mut n = s.len() as u64;
        while n >= 0x80 {
            self.byte(n as u8 | 0x80);
            n >>= 7;
        }
        self.byte(n as u8);
        if !s.is_empty() {
            self.put(s.as_bytes());
        }
    }
}

/// The write cursors of every region of a batch under construction, and each array column's
/// running element count (its next end offset).
struct Writer<'b> {
    cur: [Cursor<'b>; REGIONS],
    elems: [u64; COLUMNS],
}

impl<'b> Writer<'b> {
    /// Region `i`'s cursor, taken out so that a column's loop keeps it in registers; `give`
    /// puts it back.
    #[inline]
    fn take(&mut self, i: usize) -> Cursor<'b> {
        Cursor(mem::take(&mut self.cur[i].0))
    }

    #[inline]
    fn give(&mut self, i: usize, cursor: Cursor<'b>) {
        self.cur[i] = cursor;
    }

    /// `W` bytes per row into region `i`: one bounds check for the whole chunk.
    #[inline]
    fn fixed<'r, const W: usize>(
        &mut self,
        i: usize,
        rows: &[RowRef<'r>],
        mut value: impl FnMut(&RowRef<'r>) -> [u8; W],
    ) {
        let dst = self.cur[i].advance(rows.len() * W);
        for (d, r) in dst.chunks_exact_mut(W).zip(rows) {
            d.copy_from_slice(Cursor::uninit(&value(r)));
        }
    }

    /// An `Array` column: `values` writes a row's elements into the tail and says how many;
    /// the head gets each row's end offset.
    #[inline]
    fn array<'r>(
        &mut self,
        c: usize,
        rows: &[RowRef<'r>],
        mut values: impl FnMut(&RowRef<'r>, &mut Cursor<'b>) -> usize,
    ) {
        let mut tail = self.take(2 * c + 1);
        let mut elems = self.elems[c];
        self.fixed::<8>(2 * c, rows, |r| {
            elems += values(r, &mut tail) as u64;
            elems.to_le_bytes()
        });
        self.elems[c] = elems;
        self.give(2 * c + 1, tail);
    }

    /// The keys or the values (`pick`) of each row's metadata, as an `Array(String)`.
    #[inline]
    fn metadata<'r>(
        &mut self,
        c: usize,
        rows: &[RowRef<'r>],
        meta: impl Fn(&RowRef<'r>) -> &'r [(&'r str, &'r str)],
        pick: impl Fn(&(&'r str, &'r str)) -> &'r str,
    ) {
        self.array(c, rows, |r, tail| {
            let pairs = meta(r);
            for pair in pairs {
                tail.string(pick(pair));
            }
            pairs.len()
        });
    }

    /// A `Nullable` column: null flags into the head, values (zero where null) into the tail.
    #[inline]
    fn nullable<'r, const W: usize>(
        &mut self,
        c: usize,
        rows: &[RowRef<'r>],
        value: impl Fn(&RowRef<'r>) -> Option<[u8; W]>,
    ) {
        let flags = self.cur[2 * c].advance(rows.len());
        for (f, r) in flags.iter_mut().zip(rows) {
            f.write(u8::from(value(r).is_none()));
        }
        self.fixed::<W>(2 * c + 1, rows, |r| value(r).unwrap_or([0; W]));
    }
}

/// The rows `RowBatch::write` writes, produced on demand a chunk at a time, each row made
/// straight into its slot of the chunk.
pub trait RowSource<'a> {
    /// Makes the next rows in `slots`, as many as fit (fewer only at the end), and returns
    /// how many.
    fn fill(&mut self, slots: &mut [MaybeUninit<RowRef<'a>>]) -> usize;
}

/// The rows of a slice.
struct Slice<'s, 'a> {
    rows: &'s [RowRef<'a>],
    at: usize,
}

impl<'a> RowSource<'a> for Slice<'_, 'a> {
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

/// Rows written column by column at a time (see `write_chunk`): 32 rows of about 1 KB.
const CHUNK: usize = 32;

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
    /// Every region back to back, in column order, head before tail.
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
    /// Same rows, byte for byte (the quota ticket is accounting, not data).
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows && self.bounds == other.bounds && self.data == other.data
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
        let mut data: Vec<u8> = Vec::with_capacity(total);
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
            // Not initialised up front: 32 rows of 1 KB each would be zeroed for every batch.
            let mut chunk = [const { MaybeUninit::<RowRef<'a>>::uninit() }; CHUNK];
            loop {
                let n = source.fill(&mut chunk);
                // SAFETY: `fill` wrote the first `n` slots (`RowRef` is `Copy`: nothing to
                // drop, and a slot written again is simply overwritten).
                let rows = unsafe {
                    &*(&chunk[..n] as *const [MaybeUninit<RowRef<'a>>] as *const [RowRef<'a>])
                };
                write_chunk(rows, &mut w);
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
        Ok(RowBatch {
            rows,
            data,
            bounds,
            usage: UsageTicket::default(),
        })
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

    /// Every region, back to back.
    pub fn data(&self) -> &[u8] {
        &self.data
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
                Kind::Str => skip_strings(self.head(c), row).expect("checked batch"),
                _ => row * kind.head_width(),
            };
            at[2 * c + 1] = match kind {
                Kind::Ints => 8 * self.elems_before(c, row),
                Kind::MetaKeys | Kind::MetaValues => {
                    skip_strings(self.tail(c), self.elems_before(c, row)).expect("checked batch")
                }
                _ => row * kind.tail_width(),
            };
        }
        at
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

/// Byte offset just past the first `n` strings of `bytes`, or `None` if they do not fit.
fn skip_strings(bytes: &[u8], n: usize) -> Option<usize> {
    strings_end(bytes, n, |_| true)
}

/// `skip_strings`, checking that every one of the strings is UTF-8.
fn check_strings(bytes: &[u8], n: usize) -> Result<Option<usize>, &'static str> {
    let mut utf8 = true;
    let end = strings_end(bytes, n, |s| {
        utf8 = std::str::from_utf8(s).is_ok();
        utf8
    });
    if utf8 {
        Ok(end)
    } else {
        Err("a string is not UTF-8")
    }
}

/// Byte offset just past the first `n` strings of `bytes`, if they fit and each passes `ok`.
#[inline]
fn strings_end(bytes: &[u8], n: usize, mut ok: impl FnMut(&[u8]) -> bool) -> Option<usize> {
    let mut at = 0;
    for _ in 0..n {
        let (len, used) = read_varint(&bytes[at..])?;
        let start = at.checked_add(used)?;
        at = start.checked_add(usize::try_from(len).ok()?)?;
        if at > bytes.len() || !ok(&bytes[start..at]) {
            return None;
        }
    }
    Some(at)
}

/// An unsigned LEB128 varint at the start of `bytes`: (value, bytes used).
fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Reads a checked batch's rows in order, value by value.
pub struct RowReader<'b> {
    batch: &'b RowBatch,
    /// Read position in every region.
    at: [usize; REGIONS],
    /// Array columns: elements before the current row.
    elems: [usize; COLUMNS],
    row: usize,
    end: usize,
}

/// One value as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'b> {
    Str(&'b str),
    U64(u64),
    /// `Money` as well: units of 1e-10 USD.
    I64(i64),
    F64(f64),
    U32(u32),
    Null,
    Ints(Vec<u64>),
    Strs(Vec<&'b str>),
}

impl<'b> RowReader<'b> {
    /// The next row's values, in column order, or `None` past the range.
    pub fn next_row(&mut self) -> Option<Vec<Value<'b>>> {
        if self.row >= self.end {
            return None;
        }
        let values = (0..COLUMNS).map(|c| self.value(c)).collect();
        self.row += 1;
        Some(values)
    }

    fn take(&mut self, region: usize, n: usize) -> &'b [u8] {
        let bytes = &self.batch.data[self.batch.region(region)];
        let s = &bytes[self.at[region]..self.at[region] + n];
        self.at[region] += n;
        s
    }

    fn string(&mut self, region: usize) -> &'b str {
        let bytes = &self.batch.data[self.batch.region(region)];
        let (len, used) = read_varint(&bytes[self.at[region]..]).expect("checked batch");
        self.at[region] += used;
        let s = self.take(region, len as usize);
        std::str::from_utf8(s).expect("checked batch")
    }

    fn fixed<const W: usize>(&mut self, region: usize) -> [u8; W] {
        self.take(region, W).try_into().expect("W bytes")
    }

    fn value(&mut self, c: usize) -> Value<'b> {
        let (head, tail) = (2 * c, 2 * c + 1);
        let kind = KINDS[c];
        let null = kind.tail_width() > 0 && self.take(head, 1)[0] == 1;
        let v = match kind {
            Kind::Str => Value::Str(self.string(head)),
            Kind::U64 => Value::U64(u64::from_le_bytes(self.fixed(head))),
            Kind::Time => Value::U32(u32::from_le_bytes(self.fixed(head))),
            Kind::OptU64 => Value::U64(u64::from_le_bytes(self.fixed(tail))),
            Kind::OptF64 => Value::F64(f64::from_le_bytes(self.fixed(tail))),
            Kind::Money => Value::I64(i64::from_le_bytes(self.fixed(tail))),
            Kind::OptTime => Value::U32(u32::from_le_bytes(self.fixed(tail))),
            Kind::Ints | Kind::MetaKeys | Kind::MetaValues => {
                let end = u64::from_le_bytes(self.fixed(head)) as usize;
                let n = end - self.elems[c];
                self.elems[c] = end;
                if kind == Kind::Ints {
                    Value::Ints(
                        (0..n)
                            .map(|_| u64::from_le_bytes(self.fixed(tail)))
                            .collect(),
                    )
                } else {
                    Value::Strs((0..n).map(|_| self.string(tail)).collect())
                }
            }
        };
        if null {
            Value::Null
        } else {
            v
        }
    }
}

#[cfg(test)]
pub(crate) mod test_rows {
    //! Rows with every column set, or only the required ones, for tests across the crate.

    use super::*;

    pub const META: &[(&str, &str)] = &[("env", "prod"), ("ключ", "значение 🎉"), ("empty", "")];

    /// A row with every column set (`full`) or every optional column absent.
    pub fn row<'a>(
        org: &'a str,
        trace: &'a str,
        span: &'a str,
        start: u64,
        full: bool,
    ) -> RowRef<'a> {
        let mut r = RowRef {
            org_id: org,
            project_id: "proj-é",
            trace_id: trace,
            span_id: span,
            span_type: "llm",
            name: "chat 🚀 ünïcödé",
            start_time_ms: start,
            end_time_ms: start + 1500,
            duration_ms: 1500,
            status: "ok",
            ingested_at: 1_700_000_100,
            ..RowRef::default()
        };
        if full {
            r.parent_span_id = "parent-1";
            r.status = "error";
            r.error_message = "boom \"quoted\" \\ back\nslash\ttab \u{0} nul";
            r.provider = "openai.chat";
            r.model_id = "gpt-4o-2024-08-06";
            r.priced_model_id = "openai/gpt-4o";
            r.input_tokens = 1000;
            r.output_tokens = 200;
            r.total_tokens = 1200;
            r.reasoning_tokens = 50;
            r.cached_input_tokens = 300;
            r.cache_write_input_tokens = 7;
            r.image_count = 2;
            r.web_search_count = 3;
            r.request_count = 1;
            r.ttft_ms = Some(123.5);
            r.reasoning_duration_ms = Some(400);
            r.model_call_ms = Some(1400);
            r.costs = CostColumns {
                prompt: Some(12345),
                completion: Some(1),
                request: Some(10_000_000_000),
                image: Some(0),
                web_search: Some(999_999_999_999_999_999),
                internal_reasoning: None,
                cache_read: Some(250),
                cache_write: Some(3),
                total: Some(10_000_012_599),
            };
            r.pricing_source = "builtin";
            r.priced_at = Some(1_700_000_050);
            r.trace_name = "trace ✓";
            r.agent_name = "agent 😀";
            r.workflow_name = "wf";
            r.workflow_run_id = "run-1";
            r.session_id = "sess-1";
            r.metadata = META;
            r.input = "input: 你好 🌍";
            r.output = "output";
            r.tool_catalog = "[{\"name\":\"search\"}]";
            r.system_fingerprint = "fp_123";
            r.safety_metadata = "{}";
            r.sources = "https://example.com";
            r.rate_limit_requests_limit = Some(500);
            r.rate_limit_requests_remaining = Some(499);
            r.rate_limit_requests_reset_ms = Some(60_000);
            r.rate_limit_tokens_limit = Some(u64::MAX);
            r.rate_limit_tokens_remaining = Some(0);
            r.rate_limit_tokens_reset_ms = Some(1);
            r.chunk_offsets = &[0, 10, 20];
            r.chunk_tokens = &[5, 6, 7];
            r.reasoning_offsets = &[1];
            r.reasoning_chunk_tokens = &[u64::MAX];
            r.customer_id = "cust-1";
            r.customer_name = "Ćustomer";
            r.customer_image_url = "https://example.com/a.png";
            r.response_time_ms = Some(1600);
            r.effective_output_tps = Some(133.25);
            r.effective_total_tps = Some(800.5);
            r.output_tps = Some(142.75);
            r.input_tps = Some(0.0);
            r.chunk_jitter_min = Some(0.5);
            r.chunk_jitter_p10 = Some(1.0);
            r.chunk_jitter_median = Some(2.25);
            r.chunk_jitter_avg = Some(2.5);
            r.chunk_jitter_p90 = Some(4.0);
            r.chunk_jitter_max = Some(9.75);
        }
        r
    }

    /// `spans` rows of `org` in one batch, alternating full and sparse rows; span ids
    /// `span-0`, `span-1`, ...
    pub fn batch(org: &str, trace: &str, spans: usize, start: u64) -> RowBatch {
        batch_of(org, trace, spans, start, None)
    }

    /// `batch(org, trace, spans, start)` and then one full row with span id `last`.
    pub fn batch_then(org: &str, trace: &str, spans: usize, start: u64, last: &str) -> RowBatch {
        batch_of(org, trace, spans, start, Some(last))
    }

    fn batch_of(org: &str, trace: &str, spans: usize, start: u64, last: Option<&str>) -> RowBatch {
        let ids: Vec<String> = (0..spans).map(|i| format!("span-{i}")).collect();
        let mut rows: Vec<RowRef<'_>> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| row(org, trace, id, start + i as u64, i % 2 == 0))
            .collect();
        rows.extend(last.map(|last| row(org, trace, last, start, true)));
        RowBatch::from_rows(&rows)
    }

    /// The string column `c` of row `i`.
    pub fn str_at(b: &RowBatch, c: usize, i: usize) -> String {
        match &b.reader(i..i + 1).next_row().expect("a row")[c] {
            Value::Str(s) => s.to_string(),
            other => panic!("column {c} is not a string: {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_rows::*;
    use super::*;

    #[test]
    fn varint_lengths() {
        for (n, len) in [(0, 1), (1, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3)] {
            assert_eq!(varint_len(n), len, "{n}");
        }
        assert_eq!(varint_len(u64::MAX), 10);
    }

    /// The values of a row as the reader gives them back, computed from the row itself.
    fn expected(r: &RowRef<'_>) -> Vec<Value<'static>> {
        fn s(v: &str) -> Value<'static> {
            Value::Str(Box::leak(v.to_owned().into_boxed_str()))
        }
        fn ou(v: Option<u64>) -> Value<'static> {
            v.map_or(Value::Null, Value::U64)
        }
        fn of(v: Option<f64>) -> Value<'static> {
            v.map_or(Value::Null, Value::F64)
        }
        fn m(v: Option<i64>) -> Value<'static> {
            v.map_or(Value::Null, Value::I64)
        }
        let leak = |s: &str| &*Box::leak(s.to_owned().into_boxed_str());
        let keys = r.metadata.iter().map(|(k, _)| leak(k)).collect();
        let values = r.metadata.iter().map(|(_, v)| leak(v)).collect();
        let c = r.costs;
        vec![
            s(r.org_id),
            s(r.project_id),
            s(r.trace_id),
            s(r.span_id),
            s(r.parent_span_id),
            s(r.span_type),
            s(r.name),
            Value::U64(r.start_time_ms),
            Value::U64(r.end_time_ms),
            Value::U64(r.duration_ms),
            s(r.status),
            s(r.error_message),
            s(r.provider),
            s(r.model_id),
            s(r.priced_model_id),
            Value::U64(r.input_tokens),
            Value::U64(r.output_tokens),
            Value::U64(r.total_tokens),
            Value::U64(r.reasoning_tokens),
            Value::U64(r.cached_input_tokens),
            Value::U64(r.cache_write_input_tokens),
            Value::U64(r.image_count),
            Value::U64(r.web_search_count),
            Value::U64(r.request_count),
            of(r.ttft_ms),
            ou(r.reasoning_duration_ms),
            ou(r.model_call_ms),
            m(c.prompt),
            m(c.completion),
            m(c.request),
            m(c.image),
            m(c.web_search),
            m(c.internal_reasoning),
            m(c.cache_read),
            m(c.cache_write),
            m(c.total),
            s(r.pricing_source),
            r.priced_at.map_or(Value::Null, Value::U32),
            s(r.trace_name),
            s(r.agent_name),
            s(r.workflow_name),
            s(r.workflow_run_id),
            s(r.session_id),
            Value::Strs(keys),
            Value::Strs(values),
            s(r.input),
            s(r.output),
            s(r.tool_catalog),
            s(r.system_fingerprint),
            s(r.safety_metadata),
            s(r.sources),
            ou(r.rate_limit_requests_limit),
            ou(r.rate_limit_requests_remaining),
            ou(r.rate_limit_requests_reset_ms),
            ou(r.rate_limit_tokens_limit),
            ou(r.rate_limit_tokens_remaining),
            ou(r.rate_limit_tokens_reset_ms),
            Value::Ints(r.chunk_offsets.to_vec()),
            Value::Ints(r.chunk_tokens.to_vec()),
            Value::Ints(r.reasoning_offsets.to_vec()),
            Value::Ints(r.reasoning_chunk_tokens.to_vec()),
            Value::U32(r.ingested_at),
            s(r.customer_id),
            s(r.customer_name),
            s(r.customer_image_url),
            ou(r.response_time_ms),
            of(r.effective_output_tps),
            of(r.effective_total_tps),
            of(r.output_tps),
            of(r.input_tps),
            of(r.chunk_jitter_min),
            of(r.chunk_jitter_p10),
            of(r.chunk_jitter_median),
            of(r.chunk_jitter_avg),
            of(r.chunk_jitter_p90),
            of(r.chunk_jitter_max),
            m(r.reported_cost),
        ]
    }

    fn rows_of<'a>(ids: &'a [String]) -> Vec<RowRef<'a>> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let mut r = row(
                    "org-é",
                    "trace-1",
                    id,
                    1_700_000_000_000 + i as u64,
                    i % 3 != 1,
                );
                if i % 4 == 3 {
                    r.metadata = &[("env", "staging"), ("new", "n")];
                }
                if i % 5 == 4 {
                    r.input = Box::leak("x".repeat(300).into_boxed_str());
                }
                if i % 2 == 0 {
                    r.reported_cost = Some(42 + i as i64);
                }
                r
            })
            .collect()
    }

    #[test]
    fn every_value_reads_back_as_written() {
        let ids: Vec<String> = (0..23).map(|i| format!("span-{i}")).collect();
        let rows = rows_of(&ids);
        let batch = RowBatch::from_rows(&rows);
        assert_eq!(batch.len(), 23);
        assert_eq!(batch.data().len(), batch.bounds()[REGIONS] as usize);
        let mut reader = batch.reader(0..batch.len());
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(reader.next_row().expect("a row"), expected(r), "row {i}");
        }
        assert!(reader.next_row().is_none());
        // From the middle too: the cut skips exactly the rows before.
        let mut reader = batch.reader(7..9);
        assert_eq!(reader.next_row().unwrap(), expected(&rows[7]));
        assert_eq!(reader.next_row().unwrap(), expected(&rows[8]));
        assert!(reader.next_row().is_none());
    }

    #[test]
    fn regions_have_the_native_layout() {
        let batch = batch("o", "t", 2, 5);
        // Strings: varint length, bytes.
        assert_eq!(batch.head(col::org_id), b"\x01o\x01o");
        // UInt64.
        assert_eq!(
            batch.head(col::start_time_ms),
            [5u64.to_le_bytes(), 6u64.to_le_bytes()].concat()
        );
        // Nullable: null map, then values with zero for NULL (row 0 full, row 1 sparse).
        assert_eq!(batch.head(col::model_call_ms), [0, 1]);
        assert_eq!(
            batch.tail(col::model_call_ms),
            [1400u64.to_le_bytes(), [0; 8]].concat()
        );
        // Array: end offsets, then the values.
        assert_eq!(
            batch.head(col::chunk_offsets),
            [3u64.to_le_bytes(), 3u64.to_le_bytes()].concat()
        );
        assert_eq!(batch.tail(col::chunk_offsets).len(), 24);
        assert_eq!(batch.tail(col::metadata_keys)[..4], *b"\x03env");
    }

    #[test]
    fn cuts_point_at_row_starts() {
        let ids: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
        let rows = rows_of(&ids);
        let whole = RowBatch::from_rows(&rows);
        for split in 0..=rows.len() {
            let front = RowBatch::from_rows(&rows[..split]);
            let cut = whole.cut(split);
            for (i, &at) in cut.iter().enumerate() {
                let c = i / 2;
                let front_len = front.region(i).len();
                let expected = if KINDS[c].is_array() && i % 2 == 0 {
                    // Offsets are per row: the head cut is arithmetic.
                    8 * split
                } else {
                    front_len
                };
                assert_eq!(at, expected, "region {i} at row {split}");
            }
        }
    }

    #[test]
    fn too_large_is_refused_before_allocating() {
        let ids: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
        let rows = rows_of(&ids);
        let size = RowBatch::from_rows(&rows).data().len() as u64;
        assert_eq!(
            RowBatch::from_rows_within(&rows, size - 1).unwrap_err(),
            TooLarge {
                bytes: size,
                limit: size - 1
            }
        );
        assert!(RowBatch::from_rows_within(&rows, size).is_ok());
    }

    #[test]
    fn from_parts_takes_a_batch_back_and_refuses_a_damaged_one() {
        let b = batch("org", "trace", 5, 1);
        let back = RowBatch::from_parts(b.len(), *b.bounds(), b.data().to_vec()).unwrap();
        assert_eq!(back, b);

        // One byte more or less anywhere, a bad string length, a bad null flag, offsets that
        // go back, invalid UTF-8: every one refused.
        let mut bounds = *b.bounds();
        bounds[REGIONS] += 1;
        let mut longer = b.data().to_vec();
        longer.push(0);
        assert!(RowBatch::from_parts(5, bounds, longer).is_err());
        assert!(RowBatch::from_parts(4, *b.bounds(), b.data().to_vec()).is_err());

        let mut data = b.data().to_vec();
        data[b.region(2 * col::org_id).start] = 9;
        assert!(RowBatch::from_parts(5, *b.bounds(), data).is_err());

        let mut data = b.data().to_vec();
        data[b.region(2 * col::ttft_ms).start] = 2;
        assert!(RowBatch::from_parts(5, *b.bounds(), data).is_err());

        let mut data = b.data().to_vec();
        let offsets = b.region(2 * col::chunk_tokens).start;
        data[offsets..offsets + 8].copy_from_slice(&9u64.to_le_bytes());
        assert!(RowBatch::from_parts(5, *b.bounds(), data).is_err());

        for region in [2 * col::org_id, 2 * col::metadata_values + 1] {
            let mut data = b.data().to_vec();
            data[b.region(region).start + 1] = 0xFF;
            assert_eq!(
                RowBatch::from_parts(5, *b.bounds(), data).unwrap_err(),
                "a string is not UTF-8",
                "region {region}"
            );
        }
    }
}
