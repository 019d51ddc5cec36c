//! One storage row per span, written by the worker straight into ClickHouse's native column
//! layout: a `RowBatch` is a request's rows as the `spans` columns, back to back, in one buffer.
//!
//! - `columns.rs`: the `spans` column list (`spans_columns!`), the single source of truth for
//!   the table's DDL and migration check (`sink/clickhouse/schema.rs`), a batch's layout, and
//!   how a row's values are measured and written.
//! - `batch.rs`: `RowBatch` (built in two passes: measure, then write once into a buffer of
//!   the exact size), cut at row boundaries, and checked when read back from disk.
//! - `write.rs`: the bounds-checked cursors the second pass writes through.
//! - `read.rs`: `RowReader`, the values read back (for the dead-letter file).
//! - `select.rs`: `RowBatch::select`, a batch of some of another's rows (what the flush thread
//!   spools of a batch partly inserted or dead-lettered).
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
//! The flush thread appends each batch's regions to its insert block whole, and a batch in
//! memory is about its size on the wire.

mod batch;
mod columns;
mod read;
mod select;
#[cfg(test)]
pub(crate) mod test_rows;
#[cfg(test)]
mod tests;
mod write;

pub use batch::{
    walked_index, walked_region, GroupStart, Measure, RowBatch, RowSource, TooLarge, WALKED,
};
pub use columns::{
    col, metadata_pairs, row_from_values, varint_len, Kind, COLUMNS, KINDS, REGIONS, SPANS_COLUMNS,
};
pub use read::{skip_strings, RowReader, Value};

pub use crate::pricing::{CostColumns, Money, StoredUsage};

/// The `version` of a row stored before the column existed: its ingest time in ms, as precise
/// as `ingested_at` knows it (the migration and spool records of earlier builds use this).
pub fn version_of_ingested_at(ingested_at: u32) -> u64 {
    u64::from(ingested_at) * 1000
}

/// A row's metadata pairs: `first`, then `then`. Two slices so that pairs many rows share (an
/// OTLP resource's attributes, after each span's own) are stored once per request, not copied
/// into every span's list. Keys are distinct across both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaPairs<'a> {
    pub first: &'a [(&'a str, &'a str)],
    pub then: &'a [(&'a str, &'a str)],
}

impl<'a> MetaPairs<'a> {
    #[inline]
    pub fn len(&self) -> usize {
        self.first.len() + self.then.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.first.is_empty() && self.then.is_empty()
    }

    /// The pairs in order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &'a (&'a str, &'a str)> + use<'a> {
        self.first.iter().chain(self.then)
    }
}

impl<'a> From<&'a [(&'a str, &'a str)]> for MetaPairs<'a> {
    fn from(first: &'a [(&'a str, &'a str)]) -> MetaPairs<'a> {
        MetaPairs { first, then: &[] }
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
    /// The nine usage columns, `input_tokens` to `request_count`.
    pub usage: StoredUsage,
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
    /// The trace's metadata with the span's own on top (see `ingest::rows::merge_metadata`),
    /// then the pairs the span shares with others (`Span::shared_metadata`).
    pub metadata: MetaPairs<'a>,
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
    /// Which copy of a span the table keeps (`ReplacingMergeTree(version)`): epoch ms of the
    /// ingest, or of the re-pricing that wrote a corrected copy.
    pub version: u64,
    /// The cost the client reported for the call (OTLP), next to ours; `None` when it sent none.
    pub reported_cost: Option<Money>,
}

impl<'a> RowRef<'a> {
    /// The `spans` table's sorting key: organisation, trace id, start time, span id.
    pub fn table_key(&self) -> (&'a str, &'a str, u64, &'a str) {
        (self.org_id, self.trace_id, self.start_time_ms, self.span_id)
    }
}
