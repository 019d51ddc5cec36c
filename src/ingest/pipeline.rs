//! `Pipeline`: what a worker calls with a request's body: decode (through `compress` for a
//! coded body), validate, price, write the rows, admit, hand over. Built with the `server`
//! feature only, as its hand-off is the sink's.

use std::sync::Arc;

use bumpalo::Bump;

use super::body::PaddedBody;
use super::compress::{Decompressor, Encoding};
use super::otlp::{OtlpDecoder, Refused};
use super::rows::{self, BuildError};
use super::unpriced::UnpricedModels;
use super::v1::Decoder;
use super::wire::Batch;
use super::{BatchLimit, DecodeError, Exported, OtlpFormat};
use crate::admission::{self, AdmissionError, LimitHeaders};
use crate::auth::Principal;
use crate::clock::Clock;
use crate::pricing::{Pricer, SharedPrices};
use crate::row::RowBatch;
use crate::sink::{Handed, Handoff, HandoffError};

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

/// What a pipeline needs from the process, given once at start.
#[derive(Clone)]
pub struct Parts {
    /// The price table in force (swapped whole on reload).
    pub prices: Arc<SharedPrices>,
    /// Where rows go, with the memory they are reserved in.
    pub handoff: Handoff,
    /// Wall clock (rows, quota month) and monotonic clock (rate limits).
    pub clock: Clock,
    /// The most rows and bytes one batch's rows may take (`BatchLimit::of_buffer`).
    pub batch_limit: BatchLimit,
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

    /// Drops the hand-off's sender (`Handoff::close`): the worker's thread is ending.
    pub fn close_handoff(&mut self) {
        self.parts.handoff.close();
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
        let mut decoded = match format {
            OtlpFormat::Protobuf => w.otlp.decode_protobuf(body.into_bytes(), &w.arena),
            OtlpFormat::Json => w.otlp.decode_json(body, &w.arena),
        }
        .map_err(DecodeError::Otlp)?;
        // One table for both builds, so that the second cannot refuse another span.
        let table = self.parts.prices.current();
        let limit = self.parts.batch_limit;
        let arena = &w.arena;
        let build = |pricer: &mut Pricer, batch: &Batch<'_>| {
            rows::build(batch, principal, &table, pricer, now_ms, limit, arena)
        };
        let mut built =
            (decoded.batch.span_count > 0).then(|| build(&mut w.pricer, &decoded.batch));
        if let Some(Err(BuildError::CostTooLarge(spans))) = &built {
            // A span whose cost cannot be stored (token counts no model call reaches) is
            // refused on its own, as one with bad ids is (docs/otlp.md), and the rest built
            // again (rare: the first build's work is lost, and its tally of unpriced spans).
            decoded.reject_spans(spans, Refused::CostTooLarge, arena);
            w.pricer.unpriced().clear();
            built = (decoded.batch.span_count > 0).then(|| build(&mut w.pricer, &decoded.batch));
        }
        let exported = Exported {
            spans: decoded.batch.span_count,
            rejected: decoded.rejected_spans,
            // Only when spans were rejected: the answer's `partial_success` message.
            message: decoded.error_message.map(str::to_string),
            truncated_strings: decoded.truncated_strings,
            dropped_attributes: decoded.dropped_attributes,
        };
        let Some(rows) = built else {
            return Ok((None, exported));
        };
        let rows = rows.map_err(|e| refusal(e, body_len))?;
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
        self.parts
            .handoff
            .send(principal, rows, admitted)
            .map_err(|e| {
                // The refusal gave the credit and the quota back: the answer says so, not what
                // the admission had taken.
                *limits = admission::peek(principal, mono_ns, now_ms);
                IngestError::from(e)
            })
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
    .map_err(|e| refusal(e, body_len))
}

/// Why a batch got no rows, as the refusal of the whole body (a v1 batch's spans whose cost
/// cannot be stored are schema issues at their `usage`).
fn refusal(e: BuildError, body_len: usize) -> DecodeError {
    match e {
        BuildError::CostTooLarge(spans) => DecodeError::Schema(rows::cost_issues(&spans)),
        BuildError::TooLarge(t) => DecodeError::TooLarge {
            bytes: t.bytes,
            limit: t.limit,
            body_len,
        },
        BuildError::TooManySpans { spans, limit } => DecodeError::TooManySpans { spans, limit },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::plan::Plan;
    use crate::admission::rate::Rate;
    use crate::admission::Account;
    use crate::sink::budget::MemoryBudget;

    fn body(n: usize) -> Vec<u8> {
        let spans: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"spanId":"s{i}","spanType":"tool","name":"x","startTime":1,"endTime":2}}"#
                )
            })
            .collect();
        format!(
            r#"{{"version":"v1","traces":[{{"traceId":"t","traceName":"t","spans":[{}]}}]}}"#,
            spans.join(",")
        )
        .into_bytes()
    }

    /// A batch the hand-off refuses (no room in memory) gets its rate-limit credit and quota
    /// back, and the `503` says so: its headers are what the next request finds, not what the
    /// refused batch took for a moment (found by an audit: remaining 0 and a 90% quota
    /// warning on an answer that had given them back).
    #[test]
    fn a_refused_hand_off_answers_with_the_limits_given_back() {
        let plan = Plan {
            name: "p".into(),
            monthly_spans: Some(10),
            rate: Some(Rate {
                per_second: 10,
                burst: 10,
            }),
        };
        let account = Arc::new(Account::new("org".into(), &plan));
        let principal = Principal::new("org".into(), "".into(), account);
        // No room at all: every batch is refused with buffer_full.
        let budget = Arc::new(MemoryBudget::new(1, 1));
        budget.reserve(1, 1).unwrap();
        let (mut p, _rx) = pipeline_on(budget, BatchLimit::NONE);
        let mut limits = LimitHeaders::default();
        let mut b = body(10);
        let r = p.ingest_v1(
            &principal,
            PaddedBody::pad(&mut b),
            Encoding::Identity,
            1 << 20,
            &mut limits,
        );
        assert!(
            matches!(r, Err(IngestError::Handoff(HandoffError::BufferFull))),
            "{:?}",
            r.err()
        );
        let now = admission::peek(&principal, p.parts.clock.mono_ns(), p.parts.clock.now_ms());
        assert_eq!(limits, now);
        // A full bucket, and no quota warning: nothing of the refused batch counts.
        assert_eq!(limits.rate, Some((10, 10)));
        assert_eq!(limits.quota, None);
    }

    /// A pipeline handing over into `budget`, what it hands over received at the other end.
    fn pipeline_on(
        budget: Arc<MemoryBudget>,
        batch_limit: BatchLimit,
    ) -> (Pipeline, crossbeam_channel::Receiver<RowBatch>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let parts = Parts {
            prices: Arc::new(SharedPrices::builtin()),
            handoff: Handoff::buffer(budget, tx),
            clock: Clock::new(0),
            batch_limit,
            unpriced: Arc::default(),
        };
        (Pipeline::new(parts), rx)
    }

    /// A pipeline whose write buffer holds `max_rows` rows (and 1 GiB), with its budget.
    fn small_buffer(max_rows: u64) -> (Pipeline, crossbeam_channel::Receiver<RowBatch>) {
        let budget = Arc::new(MemoryBudget::new(max_rows, 1 << 30));
        pipeline_on(budget, BatchLimit::of_buffer(max_rows, 1 << 30))
    }

    /// A batch of more spans than the write buffer holds rows can never be handed over, even
    /// to an empty buffer: every front end refuses it as `413 batch_too_large` naming both
    /// counts and the setting, before admission (nothing taken). It was `503 buffer_full`,
    /// which clients retry for ever. One at the limit goes in.
    #[test]
    fn a_batch_of_more_spans_than_the_buffer_holds_is_too_large_for_every_front_end() {
        use crate::http::refusal::{otlp_refusal, refusal};
        use crate::ingest::otlp::testkit::{export, span, to_json};
        use prost::Message;
        let principal = Principal::unlimited("org", "");
        let (mut p, rx) = small_buffer(5);
        let mut limits = LimitHeaders::default();
        fn too_many<T>(r: Result<T, IngestError>) -> DecodeError {
            match r {
                Err(IngestError::Decode(e @ DecodeError::TooManySpans { spans: 6, limit: 5 })) => e,
                Err(e) => panic!("{e:?}"),
                Ok(_) => panic!("accepted"),
            }
        }
        let check = |r: crate::http::refusal::Refusal| {
            assert_eq!(
                (r.status, r.code, r.retry_after),
                (413, "batch_too_large", None)
            );
            assert_eq!(
                r.message,
                "the batch has 6 spans, more than the 5 rows the write buffer holds \
                 (INGEST_BUFFER_MAX_ROWS), so it can never be accepted; send at most 5 spans \
                 per batch"
            );
        };

        let mut b = body(6);
        let r = p.ingest_v1(
            &principal,
            PaddedBody::pad(&mut b),
            Encoding::Identity,
            1 << 20,
            &mut limits,
        );
        check(refusal(IngestError::Decode(too_many(r))));

        let six = export((1..=6).map(|n| span(n, 0, "x", &[])).collect());
        for (format, mut body) in [
            (OtlpFormat::Protobuf, six.encode_to_vec()),
            (OtlpFormat::Json, to_json(&six)),
        ] {
            let r = p.ingest_otlp(
                &principal,
                PaddedBody::pad(&mut body),
                format,
                Encoding::Identity,
                1 << 20,
                &mut limits,
            );
            check(otlp_refusal(IngestError::Decode(too_many(
                r.map(|(h, _)| h),
            ))));
        }
        assert_eq!(p.handoff().budget().rows(), 0, "nothing reserved");

        let mut b = body(5);
        let r = p.ingest_v1(
            &principal,
            PaddedBody::pad(&mut b),
            Encoding::Identity,
            1 << 20,
            &mut limits,
        );
        assert!(r.is_ok(), "{:?}", r.err());
        assert_eq!(rx.try_iter().map(|b| b.len()).sum::<usize>(), 5);
    }
}
