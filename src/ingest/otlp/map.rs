//! OTLP spans -> the shared borrowed model (`wire::Span`, grouped into `wire::Trace`s): span
//! type, provider and model, content, status, times, metadata, each string within the v1
//! limits; token counts and costs through `usage.rs`.
//!
//! `Mapper` is the `SpanSink` both decoders feed. Per span it classifies every attribute once
//! (`keys::classify`), keeps the best-ranked value of each mapped meaning, decides the span
//! type, and puts everything it did not map (and, on spans that are not model calls, their
//! usage and cost: aggregates that must never be priced) into metadata. A span with bad ids or
//! an end before its start is refused on its own and counted. `finish` (`map/traces.rs`)
//! groups the spans by trace id, where they arrived (a trace interleaved with others is one
//! entry per run of its spans), and names each trace after its root span.

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;

use super::keys::{self, Field, Key, INPUT_PARTS, OUTPUT_PARTS};
use super::raw::{self, Attr, RawSpan, Resource, Scope, SpanSink, Value};
use super::usage::{count, money, Origin, Reported};
use crate::ingest::wire::utf16_len;
use crate::ingest::wire::{Span, SpanType, Status};
use crate::row::Money;

mod identity;
mod refusal;
mod traces;

use identity::{Ident, Identity, Names, Outranked, AGENT_KEY};
#[cfg(test)]
pub(super) use identity::{SESSION_KEYS, USER_KEYS};
use refusal::refusal;
pub use refusal::{describe_refusals, FirstRefusal, Refused};

/// The v1 contract's limits, in UTF-16 code units; longer strings are cut (and counted).
pub mod limit {
    pub const NAME: usize = 512;
    pub const ERROR_MESSAGE: usize = 8192;
    pub const PROVIDER: usize = 128;
    pub const MODEL_ID: usize = 256;
    pub const CONTENT: usize = 1_000_000;
    pub const FINGERPRINT: usize = 256;
    pub const TRACE_NAME: usize = 256;
    pub const AGENT_NAME: usize = 256;
    pub const SESSION_ID: usize = 128;
    pub const CUSTOMER_ID: usize = 128;
    pub const METADATA_KEYS: usize = 64;
    pub const METADATA_KEY: usize = 128;
    pub const METADATA_VALUE: usize = 1024;
}

/// Metadata pairs in the arena.
type Pairs<'a> = &'a [(&'a str, &'a str)];

/// A resource's and scope's metadata pairs, as every span under them gets them.
#[derive(Clone, Copy)]
struct Context<'a> {
    pairs: Pairs<'a>,
    /// Their keys' bits (`key_bit`).
    bits: u64,
    /// Resource attributes left out for a key over 128 units: dropped from every span's
    /// metadata, so counted per span, as a span attribute's are.
    dropped: u64,
}

/// What became of the spans and attributes of one request, for its answer and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Spans refused on their own (bad ids, end before start, a cost too large to store).
    pub rejected_spans: u64,
    /// Strings cut to a v1 limit.
    pub truncated_strings: u64,
    /// Attributes left out of metadata (past 64 keys, or a key over 128 units).
    pub dropped_attributes: u64,
}

/// Turns OTLP spans into the shared model; one per request, all of it in the request's arena.
pub struct Mapper<'a> {
    arena: &'a Bump,
    /// The spans mapped so far, in arrival order, and beside each its `Ident`.
    spans: BVec<'a, Span<'a>>,
    idents: BVec<'a, Ident<'a>>,
    /// Sessions and users spans sent under a worse-ranked name with another value, by span in
    /// arrival order; empty (never allocated) unless a span does.
    outranked: BVec<'a, Outranked<'a>>,
    counts: Counts,
    first_refusal: Option<FirstRefusal<'a>>,
    /// Per attribute of the span being mapped: what it is, and whether it was used.
    keys: BVec<'a, (Key, Use)>,
    /// Flattened message parts of the span being mapped: (output?, rank of the prefix they
    /// came under, index, field, text).
    parts: BVec<'a, (bool, u8, u32, Field, &'a str)>,
    /// The metadata pairs of the resource and scope last seen (computed once per pair), their
    /// keys' bits, and how many resource attributes their keys' length left out.
    context: Option<([usize; 4], Context<'a>)>,
    /// The last finite double rendered as text, by its bits.
    last_double: Option<(u64, &'a str)>,
}

/// What became of an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Into metadata.
    Metadata,
    /// Mapped onto a column.
    Mapped,
    /// Usage or cost: mapped on a model call, metadata elsewhere.
    IfPriced,
    /// A span type's attribute, by the convention it belongs to (`Convention`): metadata
    /// unless it decided the type, and even then on an `other` span (which loses it).
    Type(Convention),
}

/// The best-ranked value of each mapped meaning on one span.
#[derive(Default)]
struct Found<'a> {
    operation: Option<&'a str>,
    openinference_kind: Option<&'a str>,
    ai_operation: Option<&'a str>,
    llm_request_type: Option<&'a str>,
    traceloop_kind: Option<&'a str>,
    provider: Ranked<&'a str>,
    llm_system: Option<&'a str>,
    model: Ranked<&'a str>,
    usage: Reported,
    cost: Ranked<Money>,
    input: Ranked<Value<'a>>,
    output: Ranked<Value<'a>>,
    tool_catalog: Ranked<Value<'a>>,
    session: Names<'a>,
    user: Names<'a>,
    agent: Option<&'a str>,
    fingerprint: Ranked<&'a str>,
    ttft_ms: Ranked<f64>,
    error_type: Option<&'a str>,
}

/// A value and the rank of the name it came under (lower wins).
#[derive(Clone, Copy)]
struct Ranked<T>(Option<(u8, T)>);

impl<T> Default for Ranked<T> {
    fn default() -> Self {
        Ranked(None)
    }
}

impl<T: Copy> Ranked<T> {
    #[inline]
    fn offer(&mut self, rank: u8, v: T) {
        if self.0.is_none_or(|(r, _)| rank <= r) {
            self.0 = Some((rank, v));
        }
    }
    #[inline]
    fn get(&self) -> Option<T> {
        self.0.map(|(_, v)| v)
    }
}

impl<'a> SpanSink<'a> for Mapper<'a> {
    fn span(&mut self, s: &RawSpan<'a, '_>, scope: &Scope<'a>, resource: &Resource<'a>) {
        if let Some(why) = refusal(s) {
            self.counts.rejected_spans += 1;
            if self.first_refusal.is_none() {
                self.first_refusal = Some(FirstRefusal {
                    why,
                    span_id: match s.span_id {
                        _ if s.unreadable_ids & raw::SPAN_ID != 0 => "(unreadable)",
                        [] => "(none)",
                        id => raw::hex(id, self.arena),
                    },
                    name: s.name,
                });
            }
            return;
        }
        self.map(s, scope, resource);
    }

    fn reserve(&mut self, spans: usize) {
        // Grown by doubling instead, a vector of large spans is copied at every step (the
        // arena cannot grow it in place while other allocations follow it).
        self.spans.reserve(spans);
        self.idents.reserve(spans);
    }
}

impl<'a> Mapper<'a> {
    pub fn new(arena: &'a Bump) -> Mapper<'a> {
        Mapper {
            arena,
            // Empty until the decoder says how many spans come (`reserve`): an arena vector
            // that grows copies its whole old capacity (64 spans were 55 KB, copied for every
            // export from memory the caches no longer held).
            spans: BVec::new_in(arena),
            idents: BVec::new_in(arena),
            outranked: BVec::new_in(arena),
            counts: Counts::default(),
            first_refusal: None,
            keys: BVec::with_capacity_in(64, arena),
            parts: BVec::new_in(arena),
            context: None,
            last_double: None,
        }
    }

    /// `s` cut to `max` UTF-16 units at a char boundary, counted when cut.
    #[inline]
    fn cut(&mut self, s: &'a str, max: usize) -> &'a str {
        // A UTF-16 unit per byte at least, so most strings are decided by their length.
        if s.len() <= max {
            return s;
        }
        let cut = cut_utf16(s, max);
        if cut.len() < s.len() {
            self.counts.truncated_strings += 1;
        }
        cut
    }

    /// Maps a span and pushes it (built where it is kept: a span is large) with its `Ident`.
    fn map(&mut self, s: &RawSpan<'a, '_>, scope: &Scope<'a>, resource: &Resource<'a>) {
        let mut f = Found::default();
        self.keys.clear();
        self.parts.clear();
        for a in s.attributes {
            let key = keys::classify(a.key);
            let used = self.take(key, a, &mut f);
            self.keys.push((key, used));
        }
        let (span_type, decided_by) = span_type(&f, s.name);
        let priced = span_type.is_priced();

        let error = s.status_code == 2;
        let error_message = match (error, s.status_message) {
            (false, _) => None,
            (true, "") => f.error_type,
            (true, m) => Some(m),
        };
        let input = self.content(f.input.get(), false);
        let output = self.content(f.output.get(), true);
        let tool_catalog = f.tool_catalog.get().map(|v| self.text(v));
        let (metadata, shared_metadata) =
            self.metadata(s.attributes, (span_type, decided_by), scope, resource);
        let span = Span {
            span_id: raw::hex(s.span_id, self.arena),
            parent_span_id: match s.parent_span_id {
                p if p.iter().all(|&b| b == 0) => None,
                p => Some(raw::hex(p, self.arena)),
            },
            span_type,
            name: self.cut(s.name, limit::NAME),
            start_time: s.start_ns / 1_000_000,
            end_time: s.end_ns / 1_000_000,
            status: if error { Status::Error } else { Status::Ok },
            error_message: error_message.map(|m| self.cut(m, limit::ERROR_MESSAGE)),
            provider: f.provider.get().map(|p| self.cut(p, limit::PROVIDER)),
            model_id: f.model.get().map(|m| self.cut(m, limit::MODEL_ID)),
            usage: if priced {
                f.usage.usage(Origin {
                    scope: scope.name,
                    provider: f.provider.get(),
                    llm_system: f.llm_system,
                })
            } else {
                None
            },
            ttft_ms: f.ttft_ms.get(),
            input: input.map(|t| self.cut(t, limit::CONTENT)),
            output: output.map(|t| self.cut(t, limit::CONTENT)),
            tool_catalog: tool_catalog.map(|t| self.cut(t, limit::CONTENT)),
            system_fingerprint: f.fingerprint.get().map(|t| self.cut(t, limit::FINGERPRINT)),
            metadata,
            shared_metadata,
            reported_cost: if priced { f.cost.get() } else { None },
            ..Span::default()
        };
        self.spans.push(span);
        let mut trace = [0u8; 16];
        trace.copy_from_slice(s.trace_id);
        let (session, user) = (f.session.best(), f.user.best());
        let mut ident = Ident {
            trace: u128::from_be_bytes(trace),
            session: session.map(|(_, t)| self.cut(t, limit::SESSION_ID)),
            user: user.map(|(_, t)| self.cut(t, limit::CUSTOMER_ID)),
            agent: f.agent.map(|t| self.cut(t, limit::AGENT_NAME)),
            session_rank: session.map_or(0, |(r, _)| r),
            user_rank: user.map_or(0, |(r, _)| r),
            outranked: false,
        };
        if f.session.several() || f.user.several() {
            ident.outranked = self.keep_outranked(&f, &ident);
        }
        self.idents.push(ident);
    }

    /// Records what attribute `a` (of meaning `key`) says, and whether it was used.
    #[inline]
    fn take(&mut self, key: Key, a: &Attr<'a>, f: &mut Found<'a>) -> Use {
        let v = a.value;
        let s = match v {
            Value::Str(s) if !s.is_empty() => Some(s),
            _ => None,
        };
        if key == Key::Other {
            if a.key == "error.type" {
                f.error_type = s;
            }
            return Use::Metadata;
        }
        let used = match (key, s) {
            (Key::Usage(d, b, rank), _) => match count(&v) {
                Some(n) => {
                    f.usage.offer(d, b, rank, n);
                    return Use::IfPriced;
                }
                None => false,
            },
            (Key::Cost(rank), _) => match money(&v) {
                Some(c) => {
                    f.cost.offer(rank, c);
                    return Use::IfPriced;
                }
                None => false,
            },
            (Key::InputText(rank), _) if v != Value::Empty => {
                f.input.offer(rank, v);
                true
            }
            (Key::OutputText(rank), _) if v != Value::Empty => {
                f.output.offer(rank, v);
                true
            }
            (Key::ToolCatalog(rank), _) if v != Value::Empty => {
                f.tool_catalog.offer(rank, v);
                true
            }
            (Key::InputPart(p), _) => self.part(a, p, INPUT_PARTS[p as usize].len(), false),
            (Key::OutputPart(p), _) => self.part(a, p, OUTPUT_PARTS[p as usize].len(), true),
            (Key::TtftMs(rank), _) => match number(&v) {
                Some(ms) => {
                    f.ttft_ms.offer(rank, ms);
                    true
                }
                None => false,
            },
            (Key::TtftSeconds(rank), _) => match number(&v) {
                Some(s) => {
                    f.ttft_ms.offer(2 + rank, s * 1000.0);
                    true
                }
                None => false,
            },
            (_, None) => false,
            (Key::Operation, Some(s)) => return type_key(&mut f.operation, s, Convention::GenAi),
            (Key::OpenInferenceKind, Some(s)) => {
                return type_key(&mut f.openinference_kind, s, Convention::OpenInference)
            }
            (Key::AiOperationId, Some(s)) => {
                return type_key(&mut f.ai_operation, s, Convention::AiSdk)
            }
            (Key::LlmRequestType, Some(s)) => {
                return type_key(&mut f.llm_request_type, s, Convention::LlmRequestType)
            }
            (Key::TraceloopKind, Some(s)) => {
                return type_key(&mut f.traceloop_kind, s, Convention::Traceloop)
            }
            (Key::AgentName, Some(s)) => set(&mut f.agent, s),
            (Key::Provider(rank), Some(s)) => {
                if rank == keys::LLM_SYSTEM {
                    f.llm_system = Some(s);
                }
                offer(&mut f.provider, rank, s)
            }
            (Key::Model(rank), Some(s)) => offer(&mut f.model, rank, s),
            (Key::Session(rank), Some(s)) => f.session.offer(rank, s),
            (Key::User(rank), Some(s)) => f.user.offer(rank, s),
            (Key::Fingerprint(rank), Some(s)) => offer(&mut f.fingerprint, rank, s),
            _ => false,
        };
        if used {
            Use::Mapped
        } else {
            Use::Metadata
        }
    }

    /// Records one field of a flattened message list; roles and text contents (whole, or
    /// the text parts of a multi-part one) are rendered, other fields (tool calls, images)
    /// are dropped with them.
    fn part(&mut self, a: &Attr<'a>, rank: u8, prefix: usize, output: bool) -> bool {
        match (keys::part(a.key, prefix), a.value) {
            (Some((index, Some(field))), Value::Str(s)) => {
                self.parts.push((output, rank, index, field, s));
                true
            }
            (Some((_, None)), _) => true,
            _ => false,
        }
    }

    /// A content value as text: a string as it is, anything else as JSON; without one, the
    /// flattened message parts (`[{"role":…,"content":…},…]`), if any: those of the
    /// best-ranked prefix only (a span sending the same messages under two conventions), and
    /// of a field sent twice the last, as for every other attribute, so no key is repeated.
    fn content(&mut self, v: Option<Value<'a>>, output: bool) -> Option<&'a str> {
        if let Some(v) = v {
            return Some(self.text(v));
        }
        let best = self
            .parts
            .iter()
            .filter(|p| p.0 == output)
            .map(|p| p.1)
            .min()?;
        let mut parts: BVec<'_, _> = BVec::from_iter_in(
            self.parts
                .iter()
                .filter(|p| p.0 == output && p.1 == best)
                .map(|p| (p.2, p.3, p.4)),
            self.arena,
        );
        // Stable: a field sent twice keeps its order, and the later one is written.
        parts.sort_by_key(|p| (p.0, p.1));
        parts.dedup_by(|later, earlier| {
            let same = (later.0, later.1) == (earlier.0, earlier.1);
            if same {
                *earlier = *later;
            }
            same
        });
        let mut out = bumpalo::collections::String::new_in(self.arena);
        out.push('[');
        let mut i = 0;
        while i < parts.len() {
            let index = parts[i].0;
            if out.len() > 1 {
                out.push(',');
            }
            out.push('{');
            let mut first = true;
            // A whole content wins over text parts sent beside it.
            let whole = parts[i..]
                .iter()
                .take_while(|p| p.0 == index)
                .any(|p| p.1 == Field::Content);
            let mut in_parts = false;
            while i < parts.len() && parts[i].0 == index {
                let (_, field, text) = parts[i];
                i += 1;
                match field {
                    Field::ContentPart(_) if whole => continue,
                    Field::ContentPart(_) if in_parts => out.push(','),
                    _ if !first => out.push(','),
                    _ => {}
                }
                match field {
                    Field::Role => out.push_str("\"role\":"),
                    Field::Content => out.push_str("\"content\":"),
                    Field::ContentPart(_) => {
                        if !in_parts {
                            out.push_str("\"content\":[");
                            in_parts = true;
                        }
                        out.push_str("{\"type\":\"text\",\"text\":");
                    }
                }
                raw::write_json_str(text, &mut out);
                if in_parts {
                    out.push('}');
                }
                first = false;
            }
            if in_parts {
                out.push(']');
            }
            out.push('}');
        }
        out.push(']');
        Some(out.into_bump_str())
    }

    /// A value as text: strings as they are, the rest JSON-encoded.
    #[inline]
    fn text(&mut self, v: Value<'a>) -> &'a str {
        match v {
            Value::Str(s) => s,
            Value::Int(i) => {
                let mut buf = itoa::Buffer::new();
                self.arena.alloc_str(buf.format(i))
            }
            // The same settings (temperature, top_p) come on span after span: the last one's
            // text is kept, since formatting a double the shortest way is slow.
            Value::Double(d) if d.is_finite() => match self.last_double {
                Some((bits, text)) if bits == d.to_bits() => text,
                _ => {
                    let text = raw::to_json(&v, self.arena);
                    self.last_double = Some((d.to_bits(), text));
                    text
                }
            },
            v => raw::to_json(&v, self.arena),
        }
    }

    /// The span's metadata: its unmapped attributes (on a span that is not a model call, its
    /// usage and cost too; the type attributes of the conventions that did not decide its
    /// type, and on an `other` span the one that did), then its resource's
    /// attributes and scope name, at most 64 keys. As two lists: the span's own, and the
    /// resource's, which every span under that resource and scope shares (`Span::
    /// shared_metadata`) unless one of the span's keys is among them or the 64 keys cut them:
    /// then all of them are in the first list and the second is empty.
    fn metadata(
        &mut self,
        attrs: &[Attr<'a>],
        (span_type, decided_by): (SpanType, Convention),
        scope: &Scope<'a>,
        resource: &Resource<'a>,
    ) -> (Pairs<'a>, Pairs<'a>) {
        let Context {
            pairs: context,
            bits: context_bits,
            dropped,
        } = self.context(scope, resource);
        self.counts.dropped_attributes += dropped;
        let keys = std::mem::replace(&mut self.keys, BVec::new_in(self.arena));
        let mut out = BVec::with_capacity_in(
            (attrs.len() + context.len()).min(limit::METADATA_KEYS),
            self.arena,
        );
        // A bit per key (`key_bit`): most keys are told apart without comparing them.
        let mut seen = 0u64;
        for (a, &(_, used)) in attrs.iter().zip(keys.iter()) {
            let keep = match used {
                Use::Metadata => true,
                Use::Mapped => false,
                Use::IfPriced => !span_type.is_priced(),
                Use::Type(c) => span_type == SpanType::Other || c != decided_by,
            };
            if !keep {
                continue;
            }
            // (A key of at most 128 bytes has at most 128 UTF-16 units.)
            if a.key.len() > limit::METADATA_KEY && utf16_len(a.key) > limit::METADATA_KEY {
                self.counts.dropped_attributes += 1;
                continue;
            }
            let value = self.text(a.value);
            let value = self.cut(value, limit::METADATA_VALUE);
            self.put(&mut out, &mut seen, a.key, value, true);
        }
        self.keys = keys;
        if seen & context_bits == 0 && out.len() + context.len() <= limit::METADATA_KEYS {
            // None of the span's keys is the resource's (the usual case): the resource's pairs
            // as they are, shared with the other spans instead of copied (a copy was 32 bytes
            // a pair written per span, into memory the caches no longer held in the server).
            return (out.into_bump_slice(), context);
        }
        // The resource's keys are distinct, so each is looked for among the span's own keys
        // only, and only when its bit is one of theirs.
        let own = out.len();
        for &(k, v) in context {
            if seen & key_bit(k) != 0 && out[..own].iter().any(|&(ok, _)| ok == k) {
                continue;
            }
            if out.len() == limit::METADATA_KEYS {
                self.counts.dropped_attributes += 1;
                continue;
            }
            out.push((k, v));
        }
        (out.into_bump_slice(), &[])
    }

    /// Adds a pair unless its key is there already (a repeated attribute replaces the value;
    /// a resource attribute never replaces the span's own); past 64 keys, drops it.
    #[inline]
    fn put(
        &mut self,
        out: &mut BVec<'a, (&'a str, &'a str)>,
        seen: &mut u64,
        k: &'a str,
        v: &'a str,
        replace: bool,
    ) {
        let bit = key_bit(k);
        if *seen & bit != 0 {
            if let Some(slot) = out.iter_mut().find(|(ok, _)| *ok == k) {
                if replace {
                    slot.1 = v;
                }
                return;
            }
        }
        if out.len() == limit::METADATA_KEYS {
            self.counts.dropped_attributes += 1;
            return;
        }
        *seen |= bit;
        out.push((k, v));
    }

    /// The resource's attributes and the scope's name as metadata pairs (a key once: its
    /// first value; a key over 128 units left out and counted), with their keys' bits
    /// (`key_bit`), computed once for all the spans under the same resource and scope.
    fn context(&mut self, scope: &Scope<'a>, resource: &Resource<'a>) -> Context<'a> {
        // Arena slices and body strings never share an address while the request lives, so
        // equal addresses and lengths are equal contents.
        let id = [
            resource.attributes.as_ptr() as usize,
            resource.attributes.len(),
            scope.name.as_ptr() as usize,
            scope.name.len(),
        ];
        if let Some((seen, context)) = self.context {
            if seen == id {
                return context;
            }
        }
        let mut pairs = BVec::with_capacity_in(resource.attributes.len() + 1, self.arena);
        let mut bits = 0u64;
        let mut dropped = 0;
        let scope_name = (!scope.name.is_empty()).then_some(Value::Str(scope.name));
        let attrs = resource.attributes.iter().map(|a| (a.key, a.value));
        for (k, v) in attrs.chain(scope_name.map(|v| ("otel.scope.name", v))) {
            if utf16_len(k) > limit::METADATA_KEY {
                dropped += 1;
                continue;
            }
            let bit = key_bit(k);
            if bits & bit != 0 && pairs.iter().any(|&(seen, _)| seen == k) {
                continue;
            }
            bits |= bit;
            let v = self.text(v);
            pairs.push((k, cut_utf16(v, limit::METADATA_VALUE)));
        }
        let context = Context {
            pairs: pairs.into_bump_slice(),
            bits,
            dropped,
        };
        self.context = Some((id, context));
        context
    }
}

/// A key's bit in the 64-bit filter `Mapper::put` tells keys apart with: its length, middle
/// and last byte, mixed (by length alone, `telemetry.sdk.language` and `deployment.environment`
/// met, and every such pair cost a search of the pairs so far).
#[inline]
fn key_bit(k: &str) -> u64 {
    let b = k.as_bytes();
    let (mid, last) = match b {
        [] => (0, 0),
        _ => (b[b.len() / 2], b[b.len() - 1]),
    };
    let h = (b.len() as u32) ^ u32::from(mid) << 8 ^ u32::from(last) << 16;
    1u64 << (h.wrapping_mul(0x9E37_79B1) >> 26)
}

#[inline]
fn type_key<'a>(slot: &mut Option<&'a str>, s: &'a str, convention: Convention) -> Use {
    *slot = Some(s);
    Use::Type(convention)
}

/// The conventions that say what a span is, in the order `span_type` asks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convention {
    /// `gen_ai.operation.name`.
    GenAi,
    /// `openinference.span.kind`.
    OpenInference,
    /// `ai.operationId`, or the span's name.
    AiSdk,
    /// `llm.request.type`.
    LlmRequestType,
    /// `traceloop.span.kind`, or nothing said at all.
    Traceloop,
}

#[inline]
fn set<'a>(slot: &mut Option<&'a str>, s: &'a str) -> bool {
    *slot = Some(s);
    true
}

#[inline]
fn offer<'a>(slot: &mut Ranked<&'a str>, rank: u8, s: &'a str) -> bool {
    slot.offer(rank, s);
    true
}

/// The span's type, from the first convention that says: GenAI's operation name,
/// OpenInference's span kind, the AI SDK's operation id (or span name), OpenLLMetry's request
/// type and span kind. Only model calls themselves are `llm`/`embedding`.
fn span_type(f: &Found<'_>, name: &str) -> (SpanType, Convention) {
    if let Some(op) = f.operation {
        let t = match op {
            "chat" | "text_completion" | "generate_content" => SpanType::Llm,
            "embeddings" => SpanType::Embedding,
            "execute_tool" => SpanType::Tool,
            "invoke_agent" | "create_agent" => SpanType::Agent,
            _ => SpanType::Other,
        };
        return (t, Convention::GenAi);
    }
    if let Some(kind) = f.openinference_kind {
        let is = |k: &str| kind.eq_ignore_ascii_case(k);
        let t = if is("LLM") {
            SpanType::Llm
        } else if is("EMBEDDING") {
            SpanType::Embedding
        } else if is("TOOL") {
            SpanType::Tool
        } else if is("AGENT") {
            SpanType::Agent
        } else {
            SpanType::Other
        };
        return (t, Convention::OpenInference);
    }
    let ai = f
        .ai_operation
        .or_else(|| name.starts_with("ai.").then_some(name));
    if let Some(op) = ai {
        // The operation id, without the function id some versions append to the name.
        let op = op.split(' ').next().unwrap_or(op);
        let t = if op.ends_with(".doGenerate") || op.ends_with(".doStream") {
            SpanType::Llm
        } else if op.ends_with(".doEmbed") {
            SpanType::Embedding
        } else if op == "ai.toolCall" {
            SpanType::Tool
        } else {
            SpanType::Other
        };
        return (t, Convention::AiSdk);
    }
    if let Some(t) = f.llm_request_type {
        let t = match t {
            "chat" | "completion" => SpanType::Llm,
            "embedding" => SpanType::Embedding,
            _ => SpanType::Other,
        };
        return (t, Convention::LlmRequestType);
    }
    let t = match f.traceloop_kind {
        Some("tool") => SpanType::Tool,
        Some("agent") => SpanType::Agent,
        _ => SpanType::Other,
    };
    (t, Convention::Traceloop)
}

/// A number (ttft).
fn number(v: &Value<'_>) -> Option<f64> {
    match *v {
        Value::Int(i) => Some(i as f64),
        Value::Double(d) if d.is_finite() => Some(d),
        Value::Str(s) => s.trim().parse().ok().filter(|d: &f64| d.is_finite()),
        _ => None,
    }
    .filter(|&d| d >= 0.0)
}

/// The longest prefix of `s` of at most `max` UTF-16 units that ends at a char boundary.
pub fn cut_utf16(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}
