//! The ingest pipeline: a request body -> a decoded batch of borrowed spans (`wire`) -> priced
//! rows (`rows`) -> admitted (`crate::admission`) -> handed to the storage side
//! (`crate::sink::Handoff`).
//!
//! Every wire format is a front end that decodes a body into the same `wire::Batch`; the rest
//! of the pipeline is shared. Front ends: `v1` (the v1 JSON batch, `/ingest`) and `otlp` (an
//! OTLP/HTTP trace export, `/v1/traces`); a body sent with a `Content-Encoding` is decoded
//! first, within the body cap (`compress`). Everything here is
//! synchronous and does no I/O: a worker calls `Pipeline::ingest_v1` with the body in the buffer
//! its connection owns (with simd-json's padding after it, `body.rs`, so the JSON front ends
//! parse it where it lies) and gets back either the rows handed over (`Handed`, to await in
//! write-ahead mode) or why they were refused. The pipeline knows nothing of the server: it is
//! built from what it needs (prices, the hand-off, the clock, the batch limit, where unpriced
//! spans are counted: `unpriced.rs`, which also logs each model without a price once).

pub mod body;
pub mod compress;
pub mod otlp;
pub mod rows;
pub mod unpriced;
pub mod v1;
pub mod wire;

use std::sync::Arc;

use bumpalo::Bump;

use crate::admission::{self, AdmissionError, LimitHeaders};
use crate::auth::Principal;
use crate::clock::Clock;
use crate::pricing::{Pricer, SharedPrices};
use crate::row::RowBatch;
use crate::sink::{Handed, Handoff, HandoffError};
use body::PaddedBody;
use compress::{CompressError, Decompressor, Encoding};
use otlp::{OtlpDecoder, OtlpError};
use rows::BuildError;
use unpriced::UnpricedModels;
use v1::Decoder;
use wire::Batch;

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
    /// The rows would take `bytes` of the write buffer, more than the `limit` one batch may.
    TooLarge {
        bytes: u64,
        limit: u64,
        body_len: usize,
    },
}

/// Why the pipeline refused a batch, by stage.
#[derive(Debug)]
pub enum IngestError {
    Decode(DecodeError),
    Admission(AdmissionError),
    Handoff(HandoffError),
}

impl From<DecodeError> for IngestError {
    fn from(e: DecodeError) -> IngestError {
        IngestError::Decode(e)
    }
}

impl From<AdmissionError> for IngestError {
    fn from(e: AdmissionError) -> IngestError {
        IngestError::Admission(e)
    }
}

impl From<HandoffError> for IngestError {
    fn from(e: HandoffError) -> IngestError {
        IngestError::Handoff(e)
    }
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

/// What a pipeline needs from the process, given once at start.
#[derive(Clone)]
pub struct Parts {
    /// The price table in force (swapped whole on reload).
    pub prices: Arc<SharedPrices>,
    /// Where rows go, with the memory they are reserved in.
    pub handoff: Handoff,
    /// Wall clock (rows, quota month) and monotonic clock (rate limits).
    pub clock: Clock,
    /// The most one batch's rows may take (`batch_limit`).
    pub batch_limit: u64,
    /// Where accepted spans without a price are counted (and their models logged once).
    pub unpriced: Arc<UnpricedModels>,
}

/// Per-worker state reused by every request the worker serves.
pub struct Pipeline {
    parts: Parts,
    work: Work,
    /// The decoded body of a request sent with a `Content-Encoding`.
    decompressor: Decompressor,
}

/// The decoders and what a request's spans are built in, apart from the decompressor, whose
/// buffer may be the body they read.
struct Work {
    v1: Decoder,
    otlp: OtlpDecoder,
    /// Holds the decoded batch of the request being served; reset after each request.
    arena: Bump,
    /// The worker's model-match cache.
    pricer: Pricer,
}

impl Pipeline {
    pub fn new(parts: Parts) -> Pipeline {
        Pipeline {
            parts,
            work: Work {
                v1: Decoder::new(),
                otlp: OtlpDecoder::new(),
                arena: Bump::with_capacity(1 << 20),
                pricer: Pricer::new(),
            },
            decompressor: Decompressor::new(),
        }
    }

    /// The hand-off this pipeline sends to (and its memory budget).
    pub fn handoff(&self) -> &Handoff {
        &self.parts.handoff
    }

    /// A v1 batch: checks 4 to 8 of the contract's order (the caller did size, drain and key)
    /// and hands the rows over. The caller answers `202` with the spans `Handed::settle`
    /// returns (at once in `buffer` mode, after the fsync in `wal` mode); `limits` gets the
    /// rate-limit and quota state the answer reports.
    /// `body` is as it came, coded as `encoding`; `cap` is the most it may decode to. It is
    /// parsed where it lies (or, coded, where it is decoded to), so it is changed.
    pub fn ingest_v1(
        &mut self,
        principal: &Principal,
        body: PaddedBody<'_>,
        encoding: Encoding,
        cap: usize,
        limits: &mut LimitHeaders,
    ) -> Result<Handed, IngestError> {
        let now_ms = self.parts.clock.now_ms();
        let body = decoded(&mut self.decompressor, body, encoding, cap)?;
        let rows = self.work.build_v1(&self.parts, principal, body, now_ms)?;
        let handed = self.hand_over(principal, rows, now_ms, limits)?;
        // Accepted: its spans without a price count (a refused batch's tally is dropped by
        // the next build).
        self.parts.unpriced.publish(self.work.pricer.unpriced());
        Ok(handed)
    }

    /// Decodes, validates and prices a v1 body (not coded) into rows stamped `now_ms`,
    /// without handing them over.
    pub fn build_v1(
        &mut self,
        principal: &Principal,
        body: PaddedBody<'_>,
        now_ms: u64,
    ) -> Result<RowBatch, DecodeError> {
        self.work.build_v1(&self.parts, principal, body, now_ms)
    }

    /// An OTLP export (`POST /v1/traces`), protobuf or JSON, coded as `encoding` and decoding
    /// to at most `cap` bytes: decoded, the invalid spans left out (counted in `Exported`),
    /// the rest priced, admitted and handed over as a v1 batch's are. `None` when no span was
    /// left to hand over (nothing is admitted then).
    pub fn ingest_otlp(
        &mut self,
        principal: &Principal,
        body: PaddedBody<'_>,
        format: OtlpFormat,
        encoding: Encoding,
        cap: usize,
        limits: &mut LimitHeaders,
    ) -> Result<(Option<Handed>, Exported), IngestError> {
        let now_ms = self.parts.clock.now_ms();
        let w = &mut self.work;
        w.arena.reset();
        w.pricer.unpriced().clear();
        let body = decoded(&mut self.decompressor, body, encoding, cap)?;
        let body_len = body.len();
        let decoded = match format {
            OtlpFormat::Protobuf => w.otlp.decode_protobuf(body.into_bytes(), &w.arena),
            OtlpFormat::Json => w.otlp.decode_json(body, &w.arena),
        }
        .map_err(DecodeError::Otlp)?;
        let exported = Exported {
            spans: decoded.batch.span_count,
            rejected: decoded.rejected_spans,
            // Only when spans were rejected: the answer's `partial_success` message.
            message: decoded.error_message.map(str::to_string),
            truncated_strings: decoded.truncated_strings,
            dropped_attributes: decoded.dropped_attributes,
        };
        if decoded.batch.span_count == 0 {
            return Ok((None, exported));
        }
        let rows = build(
            &self.parts,
            &mut w.pricer,
            &decoded.batch,
            principal,
            now_ms,
            body_len,
            &w.arena,
        )?;
        let handed = self.hand_over(principal, rows, now_ms, limits)?;
        self.parts.unpriced.publish(self.work.pricer.unpriced());
        Ok((Some(handed), exported))
    }

    /// Checks 6 to 8: the key's rate limit, the organisation's monthly quota, room in the
    /// write buffer; then the rows are handed over. A refusal from the hand-off gives the
    /// rate-limit credit and quota back.
    fn hand_over(
        &mut self,
        principal: &Principal,
        rows: RowBatch,
        now_ms: u64,
        limits: &mut LimitHeaders,
    ) -> Result<Handed, IngestError> {
        let n = rows.len() as u64;
        let mono_ns = self.parts.clock.mono_ns();
        let admitted = admission::admit(principal, n, mono_ns, now_ms, limits)?;
        Ok(self.parts.handoff.send(principal, rows, admitted)?)
    }
}

/// The body as sent when it is not coded, else decoded into `decompressor`'s buffer (at most
/// `cap` bytes, padded in turn).
fn decoded<'b>(
    decompressor: &'b mut Decompressor,
    body: PaddedBody<'b>,
    encoding: Encoding,
    cap: usize,
) -> Result<PaddedBody<'b>, DecodeError> {
    match encoding {
        Encoding::Identity => Ok(body),
        coded => decompressor
            .decompress(coded, body.bytes(), cap)
            .map_err(DecodeError::Encoding),
    }
}

impl Work {
    /// Decodes, validates and prices a v1 body into rows.
    fn build_v1(
        &mut self,
        parts: &Parts,
        principal: &Principal,
        body: PaddedBody<'_>,
        now_ms: u64,
    ) -> Result<RowBatch, DecodeError> {
        self.arena.reset();
        self.pricer.unpriced().clear();
        let body_len = body.len();
        let batch = self.v1.decode(body, &self.arena)?;
        build(
            parts,
            &mut self.pricer,
            &batch,
            principal,
            now_ms,
            body_len,
            &self.arena,
        )
    }
}

/// Prices a decoded batch's spans and builds their rows, against one price table for the
/// whole batch even if a reload lands meanwhile.
fn build(
    parts: &Parts,
    pricer: &mut Pricer,
    batch: &Batch<'_>,
    principal: &Principal,
    now_ms: u64,
    body_len: usize,
    arena: &Bump,
) -> Result<RowBatch, DecodeError> {
    let table = parts.prices.current();
    rows::build(
        batch,
        principal,
        &table,
        pricer,
        now_ms,
        parts.batch_limit,
        arena,
    )
    .map_err(|e| match e {
        BuildError::Issues(issues) => DecodeError::Schema(issues),
        BuildError::TooLarge(t) => DecodeError::TooLarge {
            bytes: t.bytes,
            limit: t.limit,
            body_len,
        },
    })
}

/// The most one batch's rows may take in the write buffer: a quarter of it, so that a batch
/// always fits beside others. Real batches take about 1.6 times their body (strings of a
/// trace are stored with each of its spans), far below this for any body under the body cap;
/// only trace-level strings repeated over thousands of spans come near it.
pub fn batch_limit(buffer_max_bytes: u64) -> u64 {
    buffer_max_bytes / 4
}
