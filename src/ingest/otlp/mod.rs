//! The OTLP/HTTP trace front end as a library: an `ExportTraceServiceRequest` (protobuf or
//! JSON) -> the same borrowed batch the v1 decoder makes (`wire::Batch`), plus what the answer
//! and `/metrics` need; and the answers' bytes.
//!
//! # Use
//!
//! One [`OtlpDecoder`] per worker, reused for every request; the request's arena is reset
//! before each one, exactly as for `/ingest`:
//!
//! ```ignore
//! arena.reset();
//! let body = decompressor.decompress(encoding, raw, cap)?;        // ingest::compress
//! let decoded = match content_type {
//!     Protobuf => otlp.decode_protobuf(body.into_bytes(), &arena),
//!     Json => otlp.decode_json(body, &arena),                      // parses in place
//! };
//! let mut decoded = decoded?;                                      // Err: 400, google.rpc.Status
//! let rows = match ingest::rows::build(&decoded.batch, ...) {      // the shared pipeline
//!     Err(BuildError::CostTooLarge(spans)) => {                    // rare: refuse those alone
//!         decoded.reject_spans(&spans, ...);
//!         ingest::rows::build(&decoded.batch, ...)?
//!     }
//!     rows => rows?,
//! };
//! http::otlp::export_response(format, decoded.partial_success(), &mut out);
//! ```
//!
//! A body that is not an export at all is an [`OtlpError`] (answer `400` with
//! `http::otlp::status`). Spans with bad ids or an end before their start are left out one by
//! one and counted in [`Decoded::rejected_spans`] with a message for
//! `partial_success.error_message`; the other spans are in the batch. So are spans whose cost
//! does not fit the cost columns, once the rows find them (`Decoded::reject_spans`). Strings past a v1 limit
//! are cut, attributes past the metadata limits dropped, both counted for `/metrics`.
//!
//! # Layout
//!
//! - `protowire.rs`: the protobuf wire format reader (sans-I/O cursor, every length checked).
//! - `proto.rs`: the OTLP trace schema over that reader.
//! - `json.rs`: the same schema over simd-json's tape (OTLP/JSON).
//! - `raw.rs`: spans as both read them (`RawSpan`, `Value`), the `SpanSink` they feed.
//! - `keys.rs`: attribute names, dialect by dialect; `map.rs`: `RawSpan` -> `wire::Span`,
//!   grouped into traces; `usage.rs`: token counts and costs in v1 meanings. The table is in
//!   `docs/otlp.md`.
//! - `fuzz.rs` (tests and fuzzing only): the fuzz property, against prost's decode of the same
//!   bytes.
//!
//! **Invariant:** no allocation per span outside the request's arena: strings borrow the
//! (decompressed) body, everything else is in the arena; `tests/alloc.rs` asserts it.

#[cfg(test)]
mod captures;
#[cfg(test)]
mod decode_tests;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzz;
mod json;
pub mod keys;
mod map;
mod proto;
pub mod protowire;
mod raw;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
mod usage;

use std::fmt;
use std::mem;

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;
use simd_json::{Buffers, Node, StaticNode, Tape};

#[cfg(any(test, feature = "fuzzing"))]
pub use fuzz::fuzz_decode;
pub use json::ShapeError;
pub use map::{cut_utf16, limit, Counts, Refused};
pub use protowire::{ProtoError, ProtoErrorKind};
pub use raw::MAX_VALUE_DEPTH;

use crate::ingest::body::PaddedBody;
use crate::ingest::json::{self as json_in_place, JsonError, Placeholder, Repairs};
use crate::ingest::wire::{Batch, Trace};
use map::FirstRefusal;

/// A decoded export: the spans that were kept, and what became of the rest.
#[derive(Debug, Clone, Copy)]
pub struct Decoded<'a> {
    /// The spans kept, grouped by trace; may be empty.
    pub batch: Batch<'a>,
    /// Spans refused one by one (bad or missing ids, end before start; a cost too large to
    /// store: `reject_spans`).
    pub rejected_spans: u64,
    /// Why, for `partial_success.error_message`; `Some` exactly when spans were rejected.
    pub error_message: Option<&'a str>,
    /// Strings cut to a v1 limit (`/metrics`).
    pub truncated_strings: u64,
    /// Attributes left out of metadata: past 64 keys, or a key over 128 units (`/metrics`).
    pub dropped_attributes: u64,
    /// The first span refused, which `error_message` describes.
    first_refusal: Option<FirstRefusal<'a>>,
}

impl<'a> Decoded<'a> {
    /// `(rejected_spans, error_message)` when some spans were refused: the answer's
    /// `partial_success`.
    pub fn partial_success(&self) -> Option<(u64, &'a str)> {
        self.error_message.map(|m| (self.rejected_spans, m))
    }

    fn new(
        batch: Batch<'a>,
        counts: Counts,
        first_refusal: Option<FirstRefusal<'a>>,
        arena: &'a Bump,
    ) -> Decoded<'a> {
        Decoded {
            batch,
            rejected_spans: counts.rejected_spans,
            error_message: first_refusal
                .map(|r| map::describe_refusals(counts.rejected_spans, &r, arena)),
            truncated_strings: counts.truncated_strings,
            dropped_attributes: counts.dropped_attributes,
            first_refusal,
        }
    }

    /// Refuses these spans of the batch, found after decoding (`spans`: (index in
    /// `batch.traces`, index in its `spans`), sorted, as `rows::build` names them), for `why`:
    /// the batch keeps the others, and they are counted and described as the decoder's own
    /// refusals are (the first refused while decoding stays the one described). Rare, so it
    /// copies the traces and the spans of every trace that loses some.
    #[cold]
    pub fn reject_spans(&mut self, spans: &[(usize, usize)], why: Refused, arena: &'a Bump) {
        let Some(&(t0, s0)) = spans.first() else {
            return;
        };
        let first = self.first_refusal.get_or_insert_with(|| {
            let span = &self.batch.traces[t0].spans[s0];
            FirstRefusal {
                why,
                span_id: span.span_id,
                name: span.name,
            }
        });
        let mut traces = BVec::with_capacity_in(self.batch.traces.len(), arena);
        let mut refused = spans.iter().peekable();
        let mut span_count = 0;
        for (ti, trace) in self.batch.traces.iter().enumerate() {
            let mut kept = BVec::new_in(arena);
            for (si, span) in trace.spans.iter().enumerate() {
                if refused.next_if(|&&at| at == (ti, si)).is_none() {
                    kept.push(*span);
                }
            }
            if kept.is_empty() {
                continue;
            }
            span_count += kept.len();
            traces.push(Trace {
                spans: kept.into_bump_slice(),
                ..*trace
            });
        }
        self.rejected_spans += (self.batch.span_count - span_count) as u64;
        self.batch = Batch {
            traces: traces.into_bump_slice(),
            span_count,
        };
        self.error_message = Some(map::describe_refusals(self.rejected_spans, first, arena));
    }
}

/// Why a body is not an OTLP export: the answer is `400` with a `google.rpc.Status` whose
/// message is this error's `Display`. `Copy`: nothing is formatted until it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpError {
    /// Not a protobuf `ExportTraceServiceRequest`.
    Protobuf(ProtoError),
    /// Not JSON: what is wrong, and where (byte offset) when known.
    Json(JsonError),
    /// JSON, but not an export: which field has the wrong type.
    Shape(&'static str),
    /// Attribute values nested deeper than [`MAX_VALUE_DEPTH`].
    TooDeep,
}

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OtlpError::Protobuf(e) if e.kind == ProtoErrorKind::TooDeep => write!(
                f,
                "the body is not a valid OTLP protobuf export: attribute values nested deeper \
                 than {MAX_VALUE_DEPTH} levels (at byte {})",
                e.offset
            ),
            OtlpError::Protobuf(e) => {
                write!(f, "the body is not a valid OTLP protobuf export: {e}")
            }
            OtlpError::Json(e) => write!(f, "the body is not valid JSON: {e}"),
            OtlpError::Shape(what) => write!(f, "the body is not an OTLP JSON export: {what}"),
            OtlpError::TooDeep => write!(
                f,
                "the body is not an OTLP JSON export: attribute values nested deeper than \
                 {MAX_VALUE_DEPTH} levels"
            ),
        }
    }
}

impl std::error::Error for OtlpError {}

/// Per-worker OTLP decoding state, reused by every request so that a warm decode allocates
/// nothing outside the request's arena.
pub struct OtlpDecoder {
    /// simd-json's scratch (structural indexes, unescape buffer).
    buffers: Buffers,
    /// The tape's storage; always empty between calls, hence `'static`.
    tape: Vec<Node<'static>>,
    /// Number literals simd-json cannot hold, replaced while parsing (`Repairs::numbers`).
    placeholders: Vec<Placeholder>,
}

impl Default for OtlpDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl OtlpDecoder {
    pub fn new() -> OtlpDecoder {
        OtlpDecoder {
            buffers: Buffers::default(),
            tape: Vec::new(),
            placeholders: Vec::new(),
        }
    }

    /// Decodes an `application/x-protobuf` body. Strings borrow `body`; the rest is in `arena`.
    pub fn decode_protobuf<'a>(
        &mut self,
        body: &'a [u8],
        arena: &'a Bump,
    ) -> Result<Decoded<'a>, OtlpError> {
        let mut mapper = map::Mapper::new(arena);
        proto::walk(body, arena, &mut mapper).map_err(OtlpError::Protobuf)?;
        let (batch, counts, first) = mapper.finish();
        Ok(Decoded::new(batch, counts, first, arena))
    }

    /// Decodes an `application/json` body, parsing it where it lies, with no copy (strings
    /// are unescaped in place and a lone surrogate escape repaired, so `body` is changed;
    /// its padding is not: `ingest::json`). Strings borrow
    /// `body`; the rest is in `arena`.
    pub fn decode_json<'a>(
        &mut self,
        body: PaddedBody<'a>,
        arena: &'a Bump,
    ) -> Result<Decoded<'a>, OtlpError> {
        let mut tape: Tape<'a> = Tape(mem::take(&mut self.tape)).reset();
        let (buf, len) = body.into_parts();
        let base = buf.as_ptr() as usize;
        // A lone surrogate (a JavaScript string cut inside an emoji) is stored as U+FFFD, as
        // on `/ingest`. A number literal simd-json cannot hold (`100000000000000000000`, which
        // a `doubleValue` may be; an `intValue` past 64 bits, which JavaScript writes so) is
        // read as the double it is (`numbers_as_doubles`): a double field takes it, an
        // integer or string field refuses it as of the wrong type.
        self.placeholders.clear();
        let repairs = Repairs {
            numbers: Some(&mut self.placeholders),
        };
        let parsed =
            json_in_place::parse_in_place(buf, len, 0, &mut self.buffers, &mut tape, repairs)
                .map_err(OtlpError::Json)
                .and_then(|()| numbers_as_doubles(&mut tape.0, &mut self.placeholders, base));
        let result = parsed.and_then(|()| {
            let mut mapper = map::Mapper::new(arena);
            match json::walk(&tape.0, arena, &mut mapper) {
                Ok(()) => {
                    let (batch, counts, first) = mapper.finish();
                    Ok(Decoded::new(batch, counts, first, arena))
                }
                Err(ShapeError::Shape(what)) => Err(OtlpError::Shape(what)),
                Err(ShapeError::TooDeep) => Err(OtlpError::TooDeep),
            }
        });
        self.tape = tape.reset().0;
        result
    }
}

/// Puts back, as the doubles they are, the number literals the parse replaced with
/// placeholder strings (found by the address of their content in the body at `base`). The
/// repair rewrites literals wherever they are, an object's key too, which is not JSON: a
/// placeholder in a key's place refuses the body.
fn numbers_as_doubles(
    tape: &mut [Node<'_>],
    placeholders: &mut [Placeholder],
    base: usize,
) -> Result<(), OtlpError> {
    if placeholders.is_empty() {
        return Ok(());
    }
    placeholders.sort_unstable_by_key(|p| p.offset);
    let placeholder = |node: &Node<'_>| match *node {
        Node::String(s) => {
            let at = (s.as_ptr() as usize).wrapping_sub(base);
            placeholders
                .binary_search_by_key(&at, |p| p.offset)
                .ok()
                .map(|i| placeholders[i].value)
        }
        _ => None,
    };
    // The containers being walked: (an object?, members or elements left), and whether the
    // next node is a key.
    let mut open: Vec<(bool, usize)> = Vec::new();
    let mut key_next = false;
    for node in tape.iter_mut() {
        if key_next {
            if placeholder(node).is_some() {
                return Err(OtlpError::Shape("an object's keys must be strings"));
            }
            key_next = false;
            continue;
        }
        if let Some(value) = placeholder(node) {
            *node = Node::Static(StaticNode::F64(value));
        }
        // This value is one member or element of the innermost open container.
        if let Some(top) = open.last_mut() {
            top.1 -= 1;
        }
        match *node {
            Node::Object { len, .. } if len > 0 => open.push((true, len)),
            Node::Array { len, .. } if len > 0 => open.push((false, len)),
            _ => {}
        }
        while open.last().is_some_and(|&(_, left)| left == 0) {
            open.pop();
        }
        key_next = open.last().is_some_and(|&(object, _)| object);
    }
    Ok(())
}

/// Reads a protobuf export without mapping it and returns how many spans it has: the reader
/// alone, for the benches that compare it with prost and quick-protobuf on the same bytes.
#[doc(hidden)]
pub fn read_protobuf_spans(body: &[u8], arena: &Bump) -> Result<usize, OtlpError> {
    struct Count(usize);
    impl<'a> raw::SpanSink<'a> for Count {
        fn span(&mut self, _: &raw::RawSpan<'a, '_>, _: &raw::Scope<'a>, _: &raw::Resource<'a>) {
            self.0 += 1;
        }
    }
    let mut count = Count(0);
    proto::walk(body, arena, &mut count).map_err(OtlpError::Protobuf)?;
    Ok(count.0)
}
