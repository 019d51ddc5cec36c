//! The v1 schema: walks simd-json's tape once, building the arena-allocated `wire` types and
//! checking every rule of the contract, with issues collected by JSON path.
//!
//! This file: the walker and its tape access. `schema.rs` walks batch > trace > span >
//! usage; `scalars.rs` reads strings and numbers with their rules; `report.rs` records issues.
//!
//! The walk never recurses deeper than the schema (batch > trace > span > usage): a value of an
//! unexpected shape is skipped in one step using the element count the tape stores in every
//! container header, so nesting depth costs nothing here. Slices are sized from the tape's item
//! counts (capped at the schema's limits) so they never grow, and the happy path formats nothing.

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;
use simd_json::{Node, StaticNode};

pub use super::issue::{Issue, PathSeg, MAX_ISSUES};
use super::issue::{Issues, Path};
use crate::ingest::json::Placeholder;

mod report;
mod scalars;
mod schema;
#[cfg(test)]
mod tests;
pub use crate::ingest::wire::utf16_len;
use crate::ingest::wire::{
    Batch, ChunkJitter, Customer, Metadata, RateLimit, Span, SpanType, Status, Trace, Usage,
};

/// 2^53 - 1: the largest integer every JSON reader (JavaScript included) holds exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Walks a parsed tape into a `Batch`, or returns up to `MAX_ISSUES` issues.
///
/// `placeholders` (sorted by offset) and `base` (address of the parsed body's first byte) let
/// the walk recognise the strings that stand for out-of-range numbers.
pub(crate) fn batch<'a>(
    tape: &[Node<'a>],
    arena: &'a Bump,
    placeholders: &[Placeholder],
    base: usize,
) -> Result<Batch<'a>, Vec<Issue>> {
    let mut w = Walker {
        tape,
        pos: 0,
        arena,
        issues: Issues::default(),
        placeholders,
        base,
    };
    let batch = w.batch();
    debug_assert_eq!(w.pos, tape.len(), "the walk reads every node exactly once");
    if w.issues.is_empty() {
        Ok(batch)
    } else {
        Err(w.issues.into_vec())
    }
}

struct Walker<'t, 'a> {
    tape: &'t [Node<'a>],
    /// Index of the next tape node to read.
    pos: usize,
    arena: &'a Bump,
    issues: Issues,
    placeholders: &'t [Placeholder],
    base: usize,
}

/// `scheme:rest` with a valid scheme, a non-empty rest, and no whitespace anywhere.
fn is_absolute_url(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(colon) = b.iter().position(|&c| c == b':') else {
        return false;
    };
    colon > 0
        && b[0].is_ascii_alphabetic()
        && b[1..colon]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        && colon + 1 < b.len()
        && !s.chars().any(char::is_whitespace)
}

/// Field names of the objects whose members are all numbers, in struct order.
const USAGE_FIELDS: [&str; 9] = [
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "reasoningTokens",
    "cachedInputTokens",
    "cacheWriteInputTokens",
    "imageCount",
    "webSearchCount",
    "requestCount",
];
const RATE_LIMIT_FIELDS: [&str; 6] = [
    "requestsLimit",
    "requestsRemaining",
    "requestsResetMs",
    "tokensLimit",
    "tokensRemaining",
    "tokensResetMs",
];
const JITTER_FIELDS: [&str; 6] = ["min", "p10", "median", "avg", "p90", "max"];

/// `Usage` from its members, `v[i]` being `USAGE_FIELDS[i]`.
fn usage(v: [Option<u64>; 9]) -> Usage {
    Usage {
        input_tokens: v[0],
        output_tokens: v[1],
        total_tokens: v[2],
        reasoning_tokens: v[3],
        cached_input_tokens: v[4],
        cache_write_input_tokens: v[5],
        image_count: v[6],
        web_search_count: v[7],
        request_count: v[8],
    }
}

/// `RateLimit` from its members, `v[i]` being `RATE_LIMIT_FIELDS[i]`.
fn rate_limit(v: [Option<u64>; 6]) -> RateLimit {
    RateLimit {
        requests_limit: v[0],
        requests_remaining: v[1],
        requests_reset_ms: v[2],
        tokens_limit: v[3],
        tokens_remaining: v[4],
        tokens_reset_ms: v[5],
    }
}

/// `ChunkJitter` from its members, `v[i]` being `JITTER_FIELDS[i]`; all are required.
fn chunk_jitter(v: [Option<f64>; 6]) -> Option<ChunkJitter> {
    Some(ChunkJitter {
        min: v[0]?,
        p10: v[1]?,
        median: v[2]?,
        avg: v[3]?,
        p90: v[4]?,
        max: v[5]?,
    })
}

/// Names of required fields, in the bit order the object walkers use for them (bits 0..n).
const BATCH_REQUIRED: [&str; 2] = ["version", "traces"];
const TRACE_REQUIRED: [&str; 2] = ["traceId", "spans"];
const SPAN_REQUIRED: [&str; 5] = ["spanId", "spanType", "name", "startTime", "endTime"];
const CUSTOMER_REQUIRED: [&str; 1] = ["id"];

/// What a number field accepts.
#[derive(Clone, Copy)]
enum NumKind {
    /// An integer in `0..=MAX_SAFE_INTEGER`.
    Int,
    /// Any number `>= 0`, fractions allowed.
    NonNeg,
}

impl<'a> Walker<'_, 'a> {
    #[inline]
    pub(super) fn next(&mut self) -> Node<'a> {
        let n = self.tape[self.pos];
        self.pos += 1;
        n
    }

    /// Skips the contents of a container whose header was just read.
    #[inline]
    pub(super) fn skip(&mut self, n: Node<'a>) {
        if let Node::Object { count, .. } | Node::Array { count, .. } = n {
            self.pos += count;
        }
    }

    /// An object key: simd-json always stores keys as strings.
    #[inline]
    pub(super) fn key(&mut self) -> &'a str {
        match self.next() {
            Node::String(s) => s,
            _ => "",
        }
    }

    /// If `s` stands for an out-of-range number literal, that literal's value.
    #[inline]
    pub(super) fn placeholder(&self, s: &str) -> Option<f64> {
        if self.placeholders.is_empty() {
            None
        } else {
            self.find_placeholder(s)
        }
    }

    #[cold]
    pub(super) fn find_placeholder(&self, s: &str) -> Option<f64> {
        let offset = (s.as_ptr() as usize).wrapping_sub(self.base);
        self.placeholders
            .binary_search_by_key(&offset, |p| p.offset)
            .ok()
            .map(|i| self.placeholders[i].value)
    }

    pub(super) fn received(&self, n: Node<'a>) -> &'static str {
        match n {
            Node::String(s) => match self.placeholder(s) {
                Some(v) if v.is_infinite() => "infinity",
                Some(_) => "number",
                None => "string",
            },
            Node::Object { .. } => "object",
            Node::Array { .. } => "array",
            Node::Static(StaticNode::Null) => "null",
            Node::Static(StaticNode::Bool(_)) => "boolean",
            Node::Static(_) => "number",
        }
    }
}
