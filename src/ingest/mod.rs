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

/// The fewest bytes a span takes in a v1 body: `{"spanId":"a","spanType":"llm","name":"",`
/// `"startTime":0,"endTime":0}` and the comma before the next (every other field is optional).
pub const SMALLEST_V1_SPAN: u64 = 68;

/// The fewest bytes a span the OTLP front end keeps takes in a protobuf export: its trace id
/// (16 bytes) and span id (8), both required, and its start and end times (fixed64, both
/// required non-zero), each behind a one-byte tag (and the ids a one-byte length): 46 bytes,
/// behind the `spans` field's tag and length. OTLP/JSON spells the same span longer.
pub const SMALLEST_OTLP_SPAN: u64 = 48;

/// The most spans one body within the caps can carry: a v1 body of `max_body_bytes`
/// (`INGEST_MAX_BODY_BYTES`; at most 1,000 traces of 2,000 spans by the schema) or an OTLP
/// export of `otlp_max_body_bytes` (`INGEST_OTLP_MAX_BODY_BYTES`), decoded, each of the
/// smallest spans. A row bound (`BatchLimit::rows`) at least this large is never reached.
pub fn most_spans_in_a_body(max_body_bytes: u64, otlp_max_body_bytes: u64) -> u64 {
    // The schema's bounds (`v1/validate/schema.rs`): traces per batch, spans per trace.
    const V1_MOST_SPANS: u64 = 1000 * 2000;
    let v1 = (max_body_bytes / SMALLEST_V1_SPAN).min(V1_MOST_SPANS);
    v1.max(otlp_max_body_bytes / SMALLEST_OTLP_SPAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bumpalo::Bump;

    /// The smallest v1 span is accepted, takes `SMALLEST_V1_SPAN` bytes in a batch, and
    /// nothing can go from it: every key is required and every value as short as it may be.
    #[test]
    fn the_smallest_v1_span_is_valid_and_takes_its_bytes() {
        let fields = [
            r#""spanId":"a""#,
            r#""spanType":"llm""#,
            r#""name":"""#,
            r#""startTime":0"#,
            r#""endTime":0"#,
        ];
        let span_of = |fields: &[&str]| format!("{{{}}}", fields.join(","));
        let spans = |span: &str, n: usize| {
            let spans = vec![span; n].join(",");
            format!(
                r#"{{"version":"v1","traces":[{{"traceId":"t","traceName":"t","spans":[{spans}]}}]}}"#
            )
        };
        let decoded = |body: String| {
            let mut body = body.into_bytes();
            let arena = Bump::new();
            v1::Decoder::new()
                .decode(body::PaddedBody::pad(&mut body), &arena)
                .map(|b| b.span_count)
                .map_err(|e| format!("{e:?}"))
        };
        let smallest = span_of(&fields);
        assert_eq!(decoded(spans(&smallest, 10)), Ok(10));
        assert_eq!(
            spans(&smallest, 11).len() - spans(&smallest, 10).len(),
            SMALLEST_V1_SPAN as usize
        );
        for i in 0..fields.len() {
            let mut without = fields.to_vec();
            without.remove(i);
            let without = span_of(&without);
            let refused = decoded(spans(&without, 1));
            assert!(
                matches!(&refused, Err(e) if e.starts_with("Schema")),
                "{without}: {refused:?}"
            );
        }
    }

    /// The smallest OTLP span is kept, takes `SMALLEST_OTLP_SPAN` bytes in an export, and
    /// each of its fields is required.
    #[test]
    fn the_smallest_otlp_span_is_kept_and_takes_its_bytes() {
        use opentelemetry_proto::tonic::trace::v1::Span;
        use prost::Message;
        let smallest = Span {
            trace_id: vec![1; 16],
            span_id: vec![1; 8],
            start_time_unix_nano: 1,
            end_time_unix_nano: 1,
            ..Span::default()
        };
        // The span's bytes behind the `spans` field's tag and one-byte length.
        assert_eq!(smallest.encoded_len() as u64 + 2, SMALLEST_OTLP_SPAN);
        let kept = |span: &Span| {
            let export = otlp::testkit::export(vec![span.clone(); 3]).encode_to_vec();
            let arena = Bump::new();
            let d = otlp::OtlpDecoder::new()
                .decode_protobuf(&export, &arena)
                .expect("an export");
            d.batch.span_count
        };
        assert_eq!(kept(&smallest), 3);
        let without: [fn(&mut Span); 4] = [
            |s| s.trace_id.clear(),
            |s| s.span_id.clear(),
            |s| s.start_time_unix_nano = 0,
            |s| s.end_time_unix_nano = 0,
        ];
        for (i, strip) in without.iter().enumerate() {
            let mut span = smallest.clone();
            strip(&mut span);
            assert_eq!(kept(&span), 0, "field {i}");
        }
    }

    #[test]
    fn most_spans_in_a_body_is_the_larger_front_end_s() {
        let (v1_body, otlp_body) = (10 * 1024 * 1024, 20 * 1024 * 1024);
        assert_eq!(
            most_spans_in_a_body(v1_body, otlp_body),
            20 * 1024 * 1024 / 48
        );
        assert_eq!(most_spans_in_a_body(v1_body, 1), 10 * 1024 * 1024 / 68);
        // A v1 batch holds at most 1,000 traces of 2,000 spans, whatever the body cap.
        assert_eq!(most_spans_in_a_body(1 << 30, 1), 2_000_000);
    }
}
