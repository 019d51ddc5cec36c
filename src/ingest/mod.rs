//! The ingest pipeline: a request body -> a decoded batch of borrowed spans (`wire`) -> priced
//! rows (`rows`) -> admitted (`crate::admission`) -> handed to the storage side
//! (`crate::sink::Handoff`).
//!
//! Every wire format is a front end that decodes a body into the same `wire::Batch`; the rest
//! of the pipeline is shared. Front ends: `v1` (the v1 JSON batch, `/ingest`) and `otlp` (an
//! OTLP/HTTP trace export, `/v1/traces`); a body sent with a `Content-Encoding` is decoded
//! first, within the body cap (`compress`); both JSON front ends parse through `json`. Everything here is
//! synchronous and does no I/O: a worker calls `Pipeline::ingest_v1` with the body in the buffer
//! its connection owns (with simd-json's padding after it, `body.rs`, so the JSON front ends
//! parse it where it lies) and gets back either the rows handed over (`Handed`, to await in
//! write-ahead mode) or why they were refused. The pipeline knows nothing of the server: it is
//! built from what it needs (prices, the hand-off, the clock, the `BatchLimit`, where unpriced
//! spans are counted: `unpriced.rs`, which also logs each model without a price once).

pub mod body;
pub mod compress;
pub mod json;
pub mod otlp;
pub mod rows;
pub mod unpriced;
pub mod v1;
pub mod wire;
// The pipeline's hand-off is the sink's, so it is built with the server only.
#[cfg(feature = "server")]
mod pipeline;

#[cfg(feature = "server")]
pub use pipeline::{IngestError, Parts, Pipeline};

use compress::CompressError;
use otlp::OtlpError;

#[cfg(any(test, feature = "fuzzing"))]
pub use v1::fuzz_decode;
pub use v1::{Issue, PathSeg};

/// Why a body was refused while decoding it or building its rows.
#[derive(Debug)]
pub enum DecodeError {
    /// The body's `Content-Encoding` is not one the server decodes (`415`), decodes past the
    /// body cap (`413`), or is not a valid stream of its coding (`400`).
    Encoding(CompressError),
    /// Not an OTLP export (`400`, answered with a `google.rpc.Status`).
    Otlp(OtlpError),
    /// Not JSON or not UTF-8. Says what and, when known, where.
    InvalidJson(String),
    /// Fails the schema: these (at most 100) issues.
    Schema(Vec<Issue>),
    /// The rows would take `bytes` of the write buffer, more than the `limit` one batch may
    /// (`BatchLimit::bytes`).
    TooLarge {
        bytes: u64,
        limit: u64,
        body_len: usize,
    },
    /// The batch has more `spans` than the write buffer holds rows (`limit`,
    /// `BatchLimit::rows`): it could never be handed over, however long the client waits.
    TooManySpans { spans: u64, limit: u64 },
}

/// Which encoding of an OTLP export the body is (its `Content-Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpFormat {
    Protobuf,
    Json,
}

/// What an OTLP export came to, for its answer and `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exported {
    /// Spans kept (and handed over).
    pub spans: usize,
    /// Spans left out (bad ids, end before start): `partial_success.rejected_spans`.
    pub rejected: u64,
    /// Why, when spans were left out: `partial_success.error_message`.
    pub message: Option<String>,
    /// Strings cut to a v1 limit.
    pub truncated_strings: u64,
    /// Attributes left out of metadata (past its limits).
    pub dropped_attributes: u64,
}

/// What one batch may take of the write buffer; a batch past either bound is refused with
/// `413 batch_too_large` after decoding and before its rows are written (`rows::build`), so
/// nothing is allocated for it and the client is told not to send it again as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimit {
    /// Rows, one per span: `INGEST_BUFFER_MAX_ROWS`, the memory's whole row bound. The hand-off
    /// (`MemoryBudget::reserve`) refuses a batch of more rows even with memory empty, which
    /// was a `503 buffer_full` on every try: a client retried it for ever.
    pub rows: u64,
    /// Bytes of rows: a quarter of `INGEST_BUFFER_MAX_BYTES`, so that a batch always fits
    /// beside others. Real batches take about 1.6 times their body (strings of a trace are
    /// stored with each of its spans), far below this for any body under the body cap; only
    /// trace-level strings repeated over thousands of spans come near it.
    pub bytes: u64,
}

impl BatchLimit {
    /// No limit (benches and tests that build rows without a buffer).
    pub const NONE: BatchLimit = BatchLimit {
        rows: u64::MAX,
        bytes: u64::MAX,
    };

    /// The limit of a write buffer of `max_rows` rows (`INGEST_BUFFER_MAX_ROWS`) and
    /// `max_bytes` heap bytes (`INGEST_BUFFER_MAX_BYTES`).
    pub fn of_buffer(max_rows: u64, max_bytes: u64) -> BatchLimit {
        BatchLimit {
            rows: max_rows,
            bytes: max_bytes / 4,
        }
    }
}
