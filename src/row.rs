//! One storage row per span, packed per request into a `RowBatch` that owns all its bytes.
//!
//! A `RowBatch` is what a worker hands to the flush thread: one `Vec<Row>` of fixed-size rows plus
//! three side buffers (all string bytes, metadata pairs, sample-array integers) that rows index
//! into. Building one costs a handful of allocations per request, none per span once the vectors
//! are reserved, and the flush thread borrows `&str` straight out of `text` to build its insert
//! block, so every string is copied exactly once on its way from the socket to ClickHouse.

use std::ops::Range;

use crate::admission::UsageTicket;

/// A string stored in `RowBatch::text`: byte offset and length. Always valid UTF-8.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Text {
    pub start: u32,
    pub len: u32,
}

/// A run of entries in one of the batch's side vectors (`meta` or `ints`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Run {
    pub start: u32,
    pub len: u32,
}

impl Run {
    pub fn range(self) -> Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

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

/// One span as stored. Field order follows the `spans` table; see `sink/clickhouse.rs`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Row {
    pub org_id: Text,
    pub project_id: Text,
    pub trace_id: Text,
    pub span_id: Text,
    pub parent_span_id: Text,
    pub span_type: &'static str,
    pub name: Text,
    pub start_time_ms: u64,
    pub end_time_ms: u64,
    pub duration_ms: u64,
    pub status: &'static str,
    pub error_message: Text,
    pub provider: Text,
    pub model_id: Text,
    pub priced_model_id: Text,
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
    pub pricing_source: &'static str,
    /// Epoch seconds; `None` when unpriced.
    pub priced_at: Option<u32>,
    pub trace_name: Text,
    pub agent_name: Text,
    pub workflow_name: Text,
    pub workflow_run_id: Text,
    pub session_id: Text,
    /// Merged trace + span metadata (span wins), entries of `RowBatch::meta`.
    pub metadata: Run,
    pub input: Text,
    pub output: Text,
    pub tool_catalog: Text,
    pub system_fingerprint: Text,
    pub safety_metadata: Text,
    pub sources: Text,
    pub rate_limit_requests_limit: Option<u64>,
    pub rate_limit_requests_remaining: Option<u64>,
    pub rate_limit_requests_reset_ms: Option<u64>,
    pub rate_limit_tokens_limit: Option<u64>,
    pub rate_limit_tokens_remaining: Option<u64>,
    pub rate_limit_tokens_reset_ms: Option<u64>,
    /// Entries of `RowBatch::ints`.
    pub chunk_offsets: Run,
    pub chunk_tokens: Run,
    pub reasoning_offsets: Run,
    pub reasoning_chunk_tokens: Run,
    pub customer_id: Text,
    pub customer_name: Text,
    pub customer_image_url: Text,
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
}

/// The rows of one accepted request, owning every byte they refer to.
#[derive(Debug, Default, Clone)]
pub struct RowBatch {
    pub rows: Vec<Row>,
    /// All string bytes, UTF-8; `Text` values index into it.
    pub text: Vec<u8>,
    /// Metadata key/value pairs; `Row::metadata` runs index into it.
    pub meta: Vec<(Text, Text)>,
    /// Sample-array values; the four array `Run`s of a row index into it.
    pub ints: Vec<u64>,
    /// The rows' place in their organisation's monthly usage: dropping it (once the rows are
    /// written or given up) tells the quota they left the write buffer. Empty when the
    /// organisation has no quota. Process-local accounting, not data: the spool codec does not
    /// write it, and the flush thread keeps it apart from the rows while they wait in the spool.
    pub usage: UsageTicket,
}

impl RowBatch {
    /// The string a `Text` refers to.
    #[inline]
    pub fn str(&self, t: Text) -> &str {
        let bytes = &self.text[t.start as usize..(t.start + t.len) as usize];
        // SAFETY: `text` only ever receives whole `&str`s through `push_str`, and every `Text`
        // handed out covers exactly one of them, so the slice is valid UTF-8.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// Appends a string and returns where it is.
    ///
    /// # Panics
    /// When the batch's text passes 4 GiB, which the 10 MiB body cap rules out.
    #[inline]
    pub fn push_str(&mut self, s: &str) -> Text {
        let start = u32::try_from(self.text.len()).expect("row batch text over 4 GiB");
        self.text.extend_from_slice(s.as_bytes());
        Text {
            start,
            len: s.len() as u32,
        }
    }

    /// Appends integers and returns their run.
    #[inline]
    pub fn push_ints(&mut self, v: &[u64]) -> Run {
        let start = self.ints.len() as u32;
        self.ints.extend_from_slice(v);
        Run {
            start,
            len: v.len() as u32,
        }
    }

    /// The ints of a run.
    #[inline]
    pub fn ints(&self, r: Run) -> &[u64] {
        &self.ints[r.range()]
    }

    /// The metadata pairs of a run.
    #[inline]
    pub fn meta(&self, r: Run) -> &[(Text, Text)] {
        &self.meta[r.range()]
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Approximate heap bytes held, for buffer accounting.
    pub fn heap_bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Row>()
            + self.text.capacity()
            + self.meta.capacity() * std::mem::size_of::<(Text, Text)>()
            + self.ints.capacity() * 8
    }
}
