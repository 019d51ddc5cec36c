//! The v1 batch as decoded: borrowed views of the request body, allocated in the request's arena.
//!
//! Every `&'a str` points into the connection's body buffer (simd-json unescapes in place), and
//! every slice lives in the per-request `bumpalo::Bump`. Nothing here owns heap memory, so a whole
//! batch is dropped by resetting the arena.
//!
//! Two front ends produce it: the v1 JSON decoder (`decode.rs`) and the OTLP decoder
//! (`otlp/`); everything after decoding (pricing, rows) is shared and cannot tell them apart.

use crate::row::Money;

/// A validated batch. `version` is always `"v1"` and is not kept.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    pub traces: &'a [Trace<'a>],
    /// Total number of spans over all traces (what `202 {"accepted": N}` reports).
    pub span_count: usize,
}

/// A string-to-string map, in the order the keys appeared. Keys are unique (duplicates are refused).
pub type Metadata<'a> = &'a [(&'a str, &'a str)];

/// One trace. `Default` has an empty id, no spans and every optional field absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Trace<'a> {
    pub trace_id: &'a str,
    pub spans: &'a [Span<'a>],
    pub trace_name: Option<&'a str>,
    pub agent_name: Option<&'a str>,
    pub workflow_name: Option<&'a str>,
    pub workflow_run_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// Empty when absent.
    pub metadata: Metadata<'a>,
    pub customer: Option<Customer<'a>>,
}

/// Sent by newer v1 clients: who the traced call was made for.
#[derive(Debug, Clone, Copy)]
pub struct Customer<'a> {
    pub id: &'a str,
    pub name: Option<&'a str>,
    pub image_url: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpanType {
    Agent,
    Llm,
    Tool,
    Embedding,
    /// The default: a span that is none of the above (never priced).
    #[default]
    Other,
}

impl SpanType {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanType::Agent => "agent",
            SpanType::Llm => "llm",
            SpanType::Tool => "tool",
            SpanType::Embedding => "embedding",
            SpanType::Other => "other",
        }
    }
    /// Only model calls are priced.
    pub fn is_priced(self) -> bool {
        matches!(self, SpanType::Llm | SpanType::Embedding)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Status {
    #[default]
    Ok,
    Error,
    /// Sent by newer v1 clients.
    Aborted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Aborted => "aborted",
        }
    }
}

/// Token and unit counts as the client reported them. `None` means "not reported", never zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
    pub image_count: Option<u64>,
    pub web_search_count: Option<u64>,
    pub request_count: Option<u64>,
}

/// Provider rate-limit headers captured by the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimit {
    pub requests_limit: Option<u64>,
    pub requests_remaining: Option<u64>,
    pub requests_reset_ms: Option<u64>,
    pub tokens_limit: Option<u64>,
    pub tokens_remaining: Option<u64>,
    pub tokens_reset_ms: Option<u64>,
}

/// Inter-chunk timing statistics of a streamed answer (newer v1 clients).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkJitter {
    pub min: f64,
    pub p10: f64,
    pub median: f64,
    pub avg: f64,
    pub p90: f64,
    pub max: f64,
}

/// One span. `Default` is an empty `other` span: every optional field absent, every string
/// and list empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct Span<'a> {
    pub span_id: &'a str,
    pub parent_span_id: Option<&'a str>,
    pub span_type: SpanType,
    pub name: &'a str,
    /// Epoch milliseconds.
    pub start_time: u64,
    /// Epoch milliseconds, `>= start_time`.
    pub end_time: u64,
    pub status: Status,
    pub error_message: Option<&'a str>,
    pub provider: Option<&'a str>,
    pub model_id: Option<&'a str>,
    pub usage: Option<Usage>,
    pub ttft_ms: Option<f64>,
    /// Empty when absent.
    pub chunk_offsets: &'a [u64],
    pub chunk_tokens: &'a [u64],
    pub reasoning_offsets: &'a [u64],
    pub reasoning_chunk_tokens: &'a [u64],
    pub reasoning_duration_ms: Option<u64>,
    pub model_call_ms: Option<u64>,
    pub input: Option<&'a str>,
    pub output: Option<&'a str>,
    pub tool_catalog: Option<&'a str>,
    pub sources: Option<&'a str>,
    pub system_fingerprint: Option<&'a str>,
    pub safety_metadata: Option<&'a str>,
    pub rate_limit: Option<RateLimit>,
    /// Empty when absent.
    pub metadata: Metadata<'a>,
    /// Pairs stored after `metadata` and shared with other spans of the batch instead of
    /// copied into each span's list: an OTLP span's resource attributes and scope name. Their
    /// keys are none of the span's own, and its trace has no metadata (the row's keys stay
    /// distinct). Always empty for v1 spans.
    pub shared_metadata: Metadata<'a>,
    pub response_time_ms: Option<u64>,
    pub effective_output_tps: Option<f64>,
    pub effective_total_tps: Option<f64>,
    pub output_tps: Option<f64>,
    pub input_tps: Option<f64>,
    pub chunk_jitter: Option<ChunkJitter>,
    /// The cost the client computed itself (OTLP `gen_ai.usage.cost` and the like), in units of
    /// 1e-10 USD; never sent by v1 clients. Stored as `reported_cost`, and the row's total
    /// when the price table does not know the model (`pricing_source = 'client'`).
    pub reported_cost: Option<Money>,
}

impl<'a> Span<'a> {
    /// The span's metadata pairs in its row's order, `metadata` then `shared_metadata` (its
    /// trace's, which `ingest::rows::merge_metadata` puts first, aside).
    pub fn all_metadata(&self) -> impl Iterator<Item = (&'a str, &'a str)> + use<'a> {
        self.metadata.iter().chain(self.shared_metadata).copied()
    }
}

/// Length of `s` in UTF-16 code units, as JavaScript counts it: one per scalar value, two for
/// those outside the Basic Multilingual Plane (4-byte UTF-8 sequences).
#[inline]
pub fn utf16_len(s: &str) -> usize {
    s.as_bytes()
        .iter()
        .map(|&b| usize::from((b as i8) >= -0x40) + usize::from(b >= 0xF0))
        .sum()
}
