//! The v1 schema: walks simd-json's tape once, building the arena-allocated `wire` types and
//! checking every rule of the contract, with issues collected by JSON path.
//!
//! The walk never recurses deeper than the schema (batch > trace > span > usage): a value of an
//! unexpected shape is skipped in one step using the element count the tape stores in every
//! container header, so nesting depth costs nothing here. Slices are sized from the tape's item
//! counts (capped at the schema's limits) so they never grow, and the happy path formats nothing.

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;
use simd_json::{Node, StaticNode};

pub use super::issue::{write_json_string, Issue, PathSeg, MAX_ISSUES};
use super::issue::{Issues, Path};
use super::wire::{
    Batch, ChunkJitter, Customer, Metadata, RateLimit, Span, SpanType, Status, Trace, Usage,
};

/// 2^53 - 1: the largest integer every JSON reader (JavaScript included) holds exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A number literal simd-json cannot hold (an integer beyond `u64`/`i64`, or a value that
/// overflows a double), which `decode` replaced by a same-length string before re-parsing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Placeholder {
    /// Byte offset of the placeholder string's content in the parsed body.
    pub offset: usize,
    /// The literal's value as a double: finite for a huge integer, infinite when it overflows.
    pub value: f64,
}

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

/// Length of `s` in UTF-16 code units, as JavaScript counts it: one per scalar value, two for
/// those outside the Basic Multilingual Plane (4-byte UTF-8 sequences).
#[inline]
pub fn utf16_len(s: &str) -> usize {
    s.as_bytes()
        .iter()
        .map(|&b| usize::from((b as i8) >= -0x40) + usize::from(b >= 0xF0))
        .sum()
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

fn empty_span<'a>() -> Span<'a> {
    Span::default()
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
    // ----- tape access -----

    #[inline]
    fn next(&mut self) -> Node<'a> {
        let n = self.tape[self.pos];
        self.pos += 1;
        n
    }

    /// Skips the contents of a container whose header was just read.
    #[inline]
    fn skip(&mut self, n: Node<'a>) {
        if let Node::Object { count, .. } | Node::Array { count, .. } = n {
            self.pos += count;
        }
    }

    /// An object key: simd-json always stores keys as strings.
    #[inline]
    fn key(&mut self) -> &'a str {
        match self.next() {
            Node::String(s) => s,
            _ => "",
        }
    }

    /// If `s` stands for an out-of-range number literal, that literal's value.
    #[inline]
    fn placeholder(&self, s: &str) -> Option<f64> {
        if self.placeholders.is_empty() {
            None
        } else {
            self.find_placeholder(s)
        }
    }

    #[cold]
    fn find_placeholder(&self, s: &str) -> Option<f64> {
        let offset = (s.as_ptr() as usize).wrapping_sub(self.base);
        self.placeholders
            .binary_search_by_key(&offset, |p| p.offset)
            .ok()
            .map(|i| self.placeholders[i].value)
    }

    fn received(&self, n: Node<'a>) -> &'static str {
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

    // ----- issues (all cold) -----

    /// `n` (already read) is not of the expected type: skip it and record `invalid_type`.
    #[cold]
    #[inline(never)]
    fn wrong_type(&mut self, path: &Path<'_>, expected: &str, n: Node<'a>) {
        self.skip(n);
        let received = self.received(n);
        self.issues.push(
            path,
            "invalid_type",
            format_args!("Expected {expected}, received {received}"),
        );
    }

    #[cold]
    #[inline(never)]
    fn too_long(&mut self, path: &Path<'_>, max: usize) {
        self.issues.push(
            path,
            "too_big",
            format_args!("String must contain at most {max} character(s)"),
        );
    }

    #[cold]
    #[inline(never)]
    fn too_short(&mut self, path: &Path<'_>, min: usize) {
        self.issues.push(
            path,
            "too_small",
            format_args!("String must contain at least {min} character(s)"),
        );
    }

    #[cold]
    #[inline(never)]
    fn array_size(&mut self, path: &Path<'_>, len: usize, min: usize, max: usize) {
        if len < min {
            self.issues.push(
                path,
                "too_small",
                format_args!("Array must contain at least {min} element(s)"),
            );
        } else {
            self.issues.push(
                path,
                "too_big",
                format_args!("Array must contain at most {max} element(s)"),
            );
        }
    }

    #[cold]
    #[inline(never)]
    fn below_zero(&mut self, path: &Path<'_>) {
        self.issues.push(
            path,
            "too_small",
            format_args!("Number must be greater than or equal to 0"),
        );
    }

    #[cold]
    #[inline(never)]
    fn above_safe(&mut self, path: &Path<'_>) {
        self.issues.push(
            path,
            "too_big",
            format_args!("Number must be less than or equal to {MAX_SAFE_INTEGER}"),
        );
    }

    #[cold]
    #[inline(never)]
    fn duplicate(&mut self, path: &Path<'_>, key: &str) {
        self.issues.push(
            path,
            "duplicate_key",
            format_args!("Key '{key}' appears more than once in the object"),
        );
    }

    #[cold]
    #[inline(never)]
    fn custom(&mut self, path: &Path<'_>, message: &'static str) {
        self.issues.push(path, "custom", format_args!("{message}"));
    }

    /// Marks field `bit` as seen, reporting a repeated key.
    #[inline]
    fn once(&mut self, seen: &mut u64, bit: u32, path: &Path<'_>, key: &str) {
        let m = 1u64 << bit;
        if *seen & m != 0 {
            self.duplicate(path, key);
        }
        *seen |= m;
    }

    /// Reports required fields (bits `0..names.len()`) that were not seen, and unknown keys.
    #[inline]
    fn finish_object(
        &mut self,
        path: &Path<'_>,
        seen: u64,
        required: &[&'static str],
        unknown: Option<Vec<&str>>,
    ) {
        let mask = (1u64 << required.len()) - 1;
        if seen & mask != mask {
            self.missing(path, seen, required);
        }
        if let Some(keys) = unknown {
            self.unrecognized(path, &keys);
        }
    }

    #[cold]
    #[inline(never)]
    fn missing(&mut self, path: &Path<'_>, seen: u64, required: &[&'static str]) {
        for (bit, name) in required.iter().enumerate() {
            if seen & (1 << bit) == 0 {
                self.issues
                    .push(&path.key(name), "invalid_type", format_args!("Required"));
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn unrecognized(&mut self, path: &Path<'_>, keys: &[&str]) {
        let mut list = String::new();
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                list.push_str(", ");
            }
            list.push('\'');
            list.push_str(k);
            list.push('\'');
        }
        self.issues.push(
            path,
            "unrecognized_keys",
            format_args!("Unrecognized key(s) in object: {list}"),
        );
    }

    /// An unknown key: remember it for the `unrecognized_keys` issue and skip its value.
    #[cold]
    #[inline(never)]
    fn unknown_key(&mut self, unknown: &mut Option<Vec<&'a str>>, key: &'a str) {
        unknown.get_or_insert_with(Vec::new).push(key);
        let n = self.next();
        self.skip(n);
    }

    // ----- scalars -----

    /// Checks a string's length in UTF-16 units; `min` is 0 or 1, so a byte test decides it.
    #[inline]
    fn len_ok(&mut self, path: &Path<'_>, s: &str, min: usize, max: usize) -> bool {
        if s.len() < min {
            self.too_short(path, min);
            return false;
        }
        // UTF-16 length <= UTF-8 length: only count when the bytes exceed the limit.
        if s.len() > max && utf16_len(s) > max {
            self.too_long(path, max);
            return false;
        }
        true
    }

    /// A string value with no length rule.
    #[inline]
    fn any_string(&mut self, path: &Path<'_>) -> Option<&'a str> {
        let n = self.next();
        if let Node::String(s) = n {
            if self.placeholder(s).is_none() {
                return Some(s);
            }
        }
        self.wrong_type(path, "string", n);
        None
    }

    /// A string of `min..=max` UTF-16 units.
    #[inline]
    fn string(&mut self, path: &Path<'_>, min: usize, max: usize) -> Option<&'a str> {
        let s = self.any_string(path)?;
        self.len_ok(path, s, min, max).then_some(s)
    }

    #[inline]
    fn int(&mut self, path: &Path<'_>) -> Option<u64> {
        match self.next() {
            Node::Static(StaticNode::U64(v)) if v <= MAX_SAFE_INTEGER => Some(v),
            n => self.number_slow(path, n, NumKind::Int).map(|v| v as u64),
        }
    }

    #[inline]
    fn non_negative(&mut self, path: &Path<'_>) -> Option<f64> {
        match self.next() {
            Node::Static(StaticNode::F64(v)) if v > 0.0 => Some(v),
            Node::Static(StaticNode::U64(v)) => Some(v as f64),
            n => self.number_slow(path, n, NumKind::NonNeg),
        }
    }

    /// Every number case off the fast paths, including out-of-range placeholders and wrong
    /// types. Returns the value as a double (exact for accepted integers).
    fn number_slow(&mut self, path: &Path<'_>, n: Node<'a>, kind: NumKind) -> Option<f64> {
        let expected = match kind {
            NumKind::Int => "integer",
            NumKind::NonNeg => "number",
        };
        let v = match n {
            Node::Static(StaticNode::U64(v)) => v as f64,
            Node::Static(StaticNode::I64(v)) => v as f64,
            Node::Static(StaticNode::F64(v)) => v,
            Node::String(s) => match self.placeholder(s) {
                Some(v) => v,
                None => {
                    self.wrong_type(path, expected, n);
                    return None;
                }
            },
            _ => {
                self.wrong_type(path, expected, n);
                return None;
            }
        };
        if v.is_infinite() {
            self.wrong_type(path, "number", n);
            return None;
        }
        if matches!(kind, NumKind::Int) && v.fract() != 0.0 {
            self.issues.push(
                path,
                "invalid_type",
                format_args!("Expected integer, received float"),
            );
            return None;
        }
        if v < 0.0 {
            self.below_zero(path);
            return None;
        }
        if matches!(kind, NumKind::Int) && v > MAX_SAFE_INTEGER as f64 {
            self.above_safe(path);
            return None;
        }
        // `-0` and `-0.0` are zero.
        Some(v + 0.0)
    }

    // ----- the schema -----

    fn batch(&mut self) -> Batch<'a> {
        let root = Path::Root;
        let mut out = Batch {
            traces: &[],
            span_count: 0,
        };
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(&root, "object", n);
            return out;
        };
        let mut seen = 0u64;
        let mut unknown = None;
        for _ in 0..len {
            let key = self.key();
            let p = root.key(key);
            match key {
                "version" => {
                    self.once(&mut seen, 0, &p, key);
                    let n = self.next();
                    if !matches!(n, Node::String("v1")) {
                        self.skip(n);
                        self.issues.push(
                            &p,
                            "invalid_literal",
                            format_args!("Invalid literal value, expected \"v1\""),
                        );
                    }
                }
                "traces" => {
                    self.once(&mut seen, 1, &p, key);
                    (out.traces, out.span_count) = self.traces(&p);
                }
                _ => self.unknown_key(&mut unknown, key),
            }
        }
        self.finish_object(&root, seen, &BATCH_REQUIRED, unknown);
        out
    }

    fn traces(&mut self, path: &Path<'_>) -> (&'a [Trace<'a>], usize) {
        const MAX: usize = 1000;
        let n = self.next();
        let Node::Array { len, count } = n else {
            self.wrong_type(path, "array", n);
            return (&[], 0);
        };
        if !(1..=MAX).contains(&len) {
            self.array_size(path, len, 1, MAX);
        }
        let end = self.pos + count;
        let mut out = BVec::with_capacity_in(len.min(MAX), self.arena);
        let mut spans = 0;
        for i in 0..len {
            if self.issues.is_full() {
                self.pos = end;
                break;
            }
            let t = self.trace(&path.index(i));
            if i < MAX {
                spans += t.spans.len();
                out.push(t);
            }
        }
        (out.into_bump_slice(), spans)
    }

    fn trace(&mut self, path: &Path<'_>) -> Trace<'a> {
        let mut t = Trace {
            trace_id: "",
            spans: &[],
            trace_name: None,
            agent_name: None,
            workflow_name: None,
            workflow_run_id: None,
            session_id: None,
            metadata: &[],
            customer: None,
        };
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(path, "object", n);
            return t;
        };
        let mut seen = 0u64;
        let mut unknown = None;
        for _ in 0..len {
            let key = self.key();
            let p = path.key(key);
            match key {
                "traceId" => {
                    self.once(&mut seen, 0, &p, key);
                    t.trace_id = self.string(&p, 1, 128).unwrap_or("");
                }
                "spans" => {
                    self.once(&mut seen, 1, &p, key);
                    t.spans = self.spans(&p);
                }
                "traceName" => {
                    self.once(&mut seen, 2, &p, key);
                    t.trace_name = self.string(&p, 0, 256);
                }
                "agentName" => {
                    self.once(&mut seen, 3, &p, key);
                    t.agent_name = self.string(&p, 0, 256);
                }
                "workflowName" => {
                    self.once(&mut seen, 4, &p, key);
                    t.workflow_name = self.string(&p, 0, 256);
                }
                "workflowRunId" => {
                    self.once(&mut seen, 5, &p, key);
                    t.workflow_run_id = self.string(&p, 0, 128);
                }
                "sessionId" => {
                    self.once(&mut seen, 6, &p, key);
                    t.session_id = self.string(&p, 0, 128);
                }
                "metadata" => {
                    self.once(&mut seen, 7, &p, key);
                    t.metadata = self.metadata(&p);
                }
                "customer" => {
                    self.once(&mut seen, 8, &p, key);
                    t.customer = self.customer(&p);
                }
                _ => self.unknown_key(&mut unknown, key),
            }
        }
        self.finish_object(path, seen, &TRACE_REQUIRED, unknown);

        // Cross-field rules, judged only on fields that are themselves valid: a field that was
        // sent (its bit is seen) but came out `None` already has its own issue.
        let bad = |bit: u32, v: Option<&str>| seen & (1 << bit) != 0 && v.is_none();
        let non_empty = |v: Option<&str>| v.is_some_and(|s| !s.is_empty());
        if !bad(2, t.trace_name)
            && !bad(3, t.agent_name)
            && !non_empty(t.trace_name)
            && !non_empty(t.agent_name)
        {
            self.custom(
                &path.key("traceName"),
                "At least one of traceName and agentName must be a non-empty string",
            );
        }
        if !bad(4, t.workflow_name)
            && !bad(5, t.workflow_run_id)
            && non_empty(t.workflow_name) != non_empty(t.workflow_run_id)
        {
            self.custom(
                &path.key("workflowRunId"),
                "workflowName and workflowRunId must both be non-empty or both be absent",
            );
        }
        t
    }

    fn customer(&mut self, path: &Path<'_>) -> Option<Customer<'a>> {
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(path, "object", n);
            return None;
        };
        let mut c = Customer {
            id: "",
            name: None,
            image_url: None,
        };
        let mut seen = 0u64;
        let mut unknown = None;
        for _ in 0..len {
            let key = self.key();
            let p = path.key(key);
            match key {
                "id" => {
                    self.once(&mut seen, 0, &p, key);
                    c.id = self.string(&p, 1, 128).unwrap_or("");
                }
                "name" => {
                    self.once(&mut seen, 1, &p, key);
                    c.name = self.string(&p, 0, 256);
                }
                "imageUrl" => {
                    self.once(&mut seen, 2, &p, key);
                    c.image_url = self.any_string(&p).filter(|s| {
                        let ok = is_absolute_url(s);
                        if !ok {
                            self.issues
                                .push(&p, "invalid_string", format_args!("Invalid url"));
                        }
                        self.len_ok(&p, s, 0, 2048) && ok
                    });
                }
                _ => self.unknown_key(&mut unknown, key),
            }
        }
        self.finish_object(path, seen, &CUSTOMER_REQUIRED, unknown);
        Some(c)
    }

    fn spans(&mut self, path: &Path<'_>) -> &'a [Span<'a>] {
        const MAX: usize = 2000;
        let n = self.next();
        let Node::Array { len, count } = n else {
            self.wrong_type(path, "array", n);
            return &[];
        };
        if !(1..=MAX).contains(&len) {
            self.array_size(path, len, 1, MAX);
        }
        let end = self.pos + count;
        let mut out = BVec::with_capacity_in(len.min(MAX), self.arena);
        for i in 0..len {
            if self.issues.is_full() {
                self.pos = end;
                break;
            }
            let s = self.span(&path.index(i));
            if i < MAX {
                out.push(s);
            }
        }
        out.into_bump_slice()
    }

    fn span(&mut self, path: &Path<'_>) -> Span<'a> {
        let mut s = empty_span();
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(path, "object", n);
            return s;
        };
        let mut seen = 0u64;
        let mut unknown = None;
        let (mut start, mut end) = (None, None);
        for _ in 0..len {
            let key = self.key();
            let p = path.key(key);
            // Bits 0..5 are the required fields, in `SPAN_REQUIRED` order.
            match key {
                "spanId" => {
                    self.once(&mut seen, 0, &p, key);
                    s.span_id = self.string(&p, 1, 128).unwrap_or("");
                }
                "spanType" => {
                    self.once(&mut seen, 1, &p, key);
                    s.span_type = self.span_type(&p).unwrap_or(SpanType::Other);
                }
                "name" => {
                    self.once(&mut seen, 2, &p, key);
                    s.name = self.string(&p, 0, 512).unwrap_or("");
                }
                "startTime" => {
                    self.once(&mut seen, 3, &p, key);
                    start = self.int(&p);
                }
                "endTime" => {
                    self.once(&mut seen, 4, &p, key);
                    end = self.int(&p);
                }
                "parentSpanId" => {
                    self.once(&mut seen, 5, &p, key);
                    s.parent_span_id = self.string(&p, 1, 128);
                }
                "status" => {
                    self.once(&mut seen, 6, &p, key);
                    s.status = self.status(&p).unwrap_or_default();
                }
                "errorMessage" => {
                    self.once(&mut seen, 7, &p, key);
                    s.error_message = self.string(&p, 0, 8192);
                }
                "provider" => {
                    self.once(&mut seen, 8, &p, key);
                    s.provider = self.string(&p, 0, 128);
                }
                "modelId" => {
                    self.once(&mut seen, 9, &p, key);
                    s.model_id = self.string(&p, 0, 256);
                }
                "usage" => {
                    self.once(&mut seen, 10, &p, key);
                    s.usage = self
                        .numbers(&p, &USAGE_FIELDS, NumKind::Int, 0)
                        .map(|v| Usage {
                            input_tokens: v[0].map(|x| x as u64),
                            output_tokens: v[1].map(|x| x as u64),
                            total_tokens: v[2].map(|x| x as u64),
                            reasoning_tokens: v[3].map(|x| x as u64),
                            cached_input_tokens: v[4].map(|x| x as u64),
                            cache_write_input_tokens: v[5].map(|x| x as u64),
                            image_count: v[6].map(|x| x as u64),
                            web_search_count: v[7].map(|x| x as u64),
                            request_count: v[8].map(|x| x as u64),
                        });
                }
                "ttftMs" => {
                    self.once(&mut seen, 11, &p, key);
                    s.ttft_ms = self.non_negative(&p);
                }
                "chunkOffsets" => {
                    self.once(&mut seen, 12, &p, key);
                    s.chunk_offsets = self.int_array(&p);
                }
                "chunkTokens" => {
                    self.once(&mut seen, 13, &p, key);
                    s.chunk_tokens = self.int_array(&p);
                }
                "reasoningOffsets" => {
                    self.once(&mut seen, 14, &p, key);
                    s.reasoning_offsets = self.int_array(&p);
                }
                "reasoningChunkTokens" => {
                    self.once(&mut seen, 15, &p, key);
                    s.reasoning_chunk_tokens = self.int_array(&p);
                }
                "reasoningDurationMs" => {
                    self.once(&mut seen, 16, &p, key);
                    s.reasoning_duration_ms = self.int(&p);
                }
                "modelCallMs" => {
                    self.once(&mut seen, 17, &p, key);
                    s.model_call_ms = self.int(&p);
                }
                "input" => {
                    self.once(&mut seen, 18, &p, key);
                    s.input = self.string(&p, 0, 1_000_000);
                }
                "output" => {
                    self.once(&mut seen, 19, &p, key);
                    s.output = self.string(&p, 0, 1_000_000);
                }
                "toolCatalog" => {
                    self.once(&mut seen, 20, &p, key);
                    s.tool_catalog = self.string(&p, 0, 1_000_000);
                }
                "sources" => {
                    self.once(&mut seen, 21, &p, key);
                    s.sources = self.string(&p, 0, 1_000_000);
                }
                "systemFingerprint" => {
                    self.once(&mut seen, 22, &p, key);
                    s.system_fingerprint = self.string(&p, 0, 256);
                }
                "safetyMetadata" => {
                    self.once(&mut seen, 23, &p, key);
                    s.safety_metadata = self.string(&p, 0, 16384);
                }
                "rateLimit" => {
                    self.once(&mut seen, 24, &p, key);
                    s.rate_limit = self
                        .numbers(&p, &RATE_LIMIT_FIELDS, NumKind::Int, 0)
                        .map(|v| RateLimit {
                            requests_limit: v[0].map(|x| x as u64),
                            requests_remaining: v[1].map(|x| x as u64),
                            requests_reset_ms: v[2].map(|x| x as u64),
                            tokens_limit: v[3].map(|x| x as u64),
                            tokens_remaining: v[4].map(|x| x as u64),
                            tokens_reset_ms: v[5].map(|x| x as u64),
                        });
                }
                "metadata" => {
                    self.once(&mut seen, 25, &p, key);
                    s.metadata = self.metadata(&p);
                }
                "responseTimeMs" => {
                    self.once(&mut seen, 26, &p, key);
                    s.response_time_ms = self.int(&p);
                }
                "effectiveOutputTps" => {
                    self.once(&mut seen, 27, &p, key);
                    s.effective_output_tps = self.non_negative(&p);
                }
                "effectiveTotalTps" => {
                    self.once(&mut seen, 28, &p, key);
                    s.effective_total_tps = self.non_negative(&p);
                }
                "outputTps" => {
                    self.once(&mut seen, 29, &p, key);
                    s.output_tps = self.non_negative(&p);
                }
                "inputTps" => {
                    self.once(&mut seen, 30, &p, key);
                    s.input_tps = self.non_negative(&p);
                }
                "chunkJitter" => {
                    self.once(&mut seen, 31, &p, key);
                    let all = (1 << JITTER_FIELDS.len()) - 1;
                    s.chunk_jitter = self
                        .numbers(&p, &JITTER_FIELDS, NumKind::NonNeg, all)
                        .and_then(|v| {
                            Some(ChunkJitter {
                                min: v[0]?,
                                p10: v[1]?,
                                median: v[2]?,
                                avg: v[3]?,
                                p90: v[4]?,
                                max: v[5]?,
                            })
                        });
                }
                _ => self.unknown_key(&mut unknown, key),
            }
        }
        self.finish_object(path, seen, &SPAN_REQUIRED, unknown);
        s.start_time = start.unwrap_or(0);
        s.end_time = end.unwrap_or(0);
        if let (Some(start), Some(end)) = (start, end) {
            if end < start {
                self.custom(
                    &path.key("endTime"),
                    "endTime must be greater than or equal to startTime",
                );
            }
        }
        s
    }

    fn span_type(&mut self, path: &Path<'_>) -> Option<SpanType> {
        let s = self.any_string(path)?;
        Some(match s {
            "llm" => SpanType::Llm,
            "tool" => SpanType::Tool,
            "agent" => SpanType::Agent,
            "embedding" => SpanType::Embedding,
            "other" => SpanType::Other,
            _ => {
                self.bad_enum(path, "'agent' | 'llm' | 'tool' | 'embedding' | 'other'", s);
                return None;
            }
        })
    }

    fn status(&mut self, path: &Path<'_>) -> Option<Status> {
        let s = self.any_string(path)?;
        Some(match s {
            "ok" => Status::Ok,
            "error" => Status::Error,
            "aborted" => Status::Aborted,
            _ => {
                self.bad_enum(path, "'ok' | 'error' | 'aborted'", s);
                return None;
            }
        })
    }

    #[cold]
    #[inline(never)]
    fn bad_enum(&mut self, path: &Path<'_>, options: &str, got: &str) {
        self.issues.push(
            path,
            "invalid_enum_value",
            format_args!("Invalid enum value. Expected {options}, received '{got}'"),
        );
    }

    /// A strict object whose members are all numbers of one kind; `required` is a bit mask
    /// over `names`. Returns the values by position in `names`.
    fn numbers<const N: usize>(
        &mut self,
        path: &Path<'_>,
        names: &[&'static str; N],
        kind: NumKind,
        required: u64,
    ) -> Option<[Option<f64>; N]> {
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(path, "object", n);
            return None;
        };
        let mut values = [None; N];
        let mut seen = 0u64;
        let mut unknown = None;
        for _ in 0..len {
            let key = self.key();
            let p = path.key(key);
            match names.iter().position(|&name| name == key) {
                Some(i) => {
                    self.once(&mut seen, i as u32, &p, key);
                    values[i] = match kind {
                        NumKind::Int => self.int(&p).map(|v| v as f64),
                        NumKind::NonNeg => self.non_negative(&p),
                    };
                }
                None => self.unknown_key(&mut unknown, key),
            }
        }
        if seen & required != required {
            for (bit, name) in names.iter().enumerate() {
                if required & !seen & (1 << bit) != 0 {
                    self.issues
                        .push(&path.key(name), "invalid_type", format_args!("Required"));
                }
            }
        }
        if let Some(keys) = unknown {
            self.unrecognized(path, &keys);
        }
        Some(values)
    }

    /// An array of at most 200 integers.
    fn int_array(&mut self, path: &Path<'_>) -> &'a [u64] {
        const MAX: usize = 200;
        let n = self.next();
        let Node::Array { len, count } = n else {
            self.wrong_type(path, "array", n);
            return &[];
        };
        if len > MAX {
            self.array_size(path, len, 0, MAX);
        }
        let end = self.pos + count;
        let mut out = BVec::with_capacity_in(len.min(MAX), self.arena);
        // Fast path: a flat array of small unsigned integers, the shape clients send.
        if count == len && len <= MAX {
            for n in &self.tape[self.pos..end] {
                match *n {
                    Node::Static(StaticNode::U64(v)) if v <= MAX_SAFE_INTEGER => out.push(v),
                    _ => break,
                }
            }
            if out.len() == len {
                self.pos = end;
                return out.into_bump_slice();
            }
            out.clear();
        }
        for i in 0..len {
            if self.issues.is_full() {
                self.pos = end;
                break;
            }
            if let Some(v) = self.int(&path.index(i)) {
                if i < MAX {
                    out.push(v);
                }
            }
        }
        out.into_bump_slice()
    }

    /// An object of string to string: at most 64 keys of at most 128 units, values of at most
    /// 1024 units, keys unique.
    fn metadata(&mut self, path: &Path<'_>) -> Metadata<'a> {
        const MAX_KEYS: usize = 64;
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(path, "object", n);
            return &[];
        };
        if len > MAX_KEYS {
            self.issues.push(
                path,
                "too_big",
                format_args!("Object must contain at most {MAX_KEYS} key(s)"),
            );
        }
        let mut out = BVec::with_capacity_in(len.min(MAX_KEYS), self.arena);
        for i in 0..len {
            let key = self.key();
            let p = path.key(key);
            if key.len() > 128 && utf16_len(key) > 128 {
                self.issues.push(
                    &p,
                    "too_big",
                    format_args!("Key must contain at most 128 character(s)"),
                );
            }
            let value = self.string(&p, 0, 1024);
            if i < MAX_KEYS {
                out.push((key, value.unwrap_or("")));
            }
        }
        // Past the key limit the batch fails anyway, so repeated keys are only looked for in
        // maps of an acceptable size.
        if len <= MAX_KEYS && len > 1 {
            self.duplicate_keys(path, &out);
        }
        out.into_bump_slice()
    }

    fn duplicate_keys(&mut self, path: &Path<'_>, map: &[(&'a str, &'a str)]) {
        if map.len() <= 16 {
            for i in 1..map.len() {
                if map[..i].iter().any(|(k, _)| *k == map[i].0) {
                    self.duplicate(&path.key(map[i].0), map[i].0);
                }
            }
            return;
        }
        // Larger maps: sort positions by key (in the arena) and compare neighbours.
        let mut order = BVec::with_capacity_in(map.len(), self.arena);
        order.extend(0..map.len() as u8);
        order.sort_unstable_by_key(|&i| (map[i as usize].0, i));
        for pair in order.windows(2) {
            let (a, b) = (pair[0] as usize, pair[1] as usize);
            if map[a].0 == map[b].0 {
                self.duplicate(&path.key(map[b].0), map[b].0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::decode::tests::{check, with_batch, with_span, with_span_field};

    /// A batch whose one trace carries `trace_extra` and one minimal span.
    fn with_trace(trace_extra: &str) -> String {
        format!(
            r#"{{"version":"v1","traces":[{{"traceId":"t1"{trace_extra},"spans":[{{"spanId":"s1","spanType":"llm","name":"n","startTime":1,"endTime":2}}]}}]}}"#
        )
    }

    /// A JSON string literal of `n` copies of `unit`.
    fn text(unit: &str, n: usize) -> String {
        format!("\"{}\"", unit.repeat(n))
    }

    /// `,"field":<string of max units>` passes and one unit more fails, counted in UTF-16
    /// units: ASCII, 2-byte `é` (1 unit) and 4-byte emoji (2 units) fill the same limit.
    fn check_string_limit(field: &str, max: usize, in_trace: bool, path: &str) {
        let body = |v: String| {
            // The other name keeps the trace's "traceName or agentName" rule satisfied.
            let other = if field == "agentName" {
                "traceName"
            } else {
                "agentName"
            };
            let extra = format!(",\"{other}\":\"x\",\"{field}\":{v}");
            if in_trace {
                with_trace(&extra)
            } else {
                with_span(&extra)
            }
        };
        let ok = "ok 1";
        check(body(text("a", max)), ok);
        check(body(text("é", max)), ok);
        check(body(text("😀", max / 2)), ok);
        check(body(text("\\ud83d\\ude00", max / 2)), ok);
        let over = format!("{path} too_big");
        check(body(text("a", max + 1)), &over);
        check(body(text("é", max + 1)), &over);
        check(body(format!("\"{}a\"", "😀".repeat(max / 2))), &over);
    }

    #[test]
    fn string_limits() {
        let span = "traces.0.spans.0.";
        for (field, max) in [
            ("name", 512),
            ("errorMessage", 8192),
            ("provider", 128),
            ("modelId", 256),
            ("input", 1_000_000),
            ("output", 1_000_000),
            ("toolCatalog", 1_000_000),
            ("sources", 1_000_000),
            ("systemFingerprint", 256),
            ("safetyMetadata", 16384),
            ("spanId", 128),
            ("parentSpanId", 128),
        ] {
            let path = format!("{span}{field}");
            let body = |v: String| with_span_field(field, &v);
            check(body(text("a", max)), "ok 1");
            check(body(text("é", max)), "ok 1");
            check(body(text("😀", max / 2)), "ok 1");
            check(body(text("a", max + 1)), &format!("{path} too_big"));
            check(
                body(format!("\"{}a\"", "😀".repeat(max / 2))),
                &format!("{path} too_big"),
            );
        }
        for (field, max) in [("traceName", 256), ("agentName", 256), ("sessionId", 128)] {
            check_string_limit(field, max, true, &format!("traces.0.{field}"));
        }
        check(
            with_trace(&format!(
                ",\"agentName\":\"a\",\"workflowName\":{},\"workflowRunId\":\"r\"",
                text("é", 257)
            )),
            "traces.0.workflowName too_big",
        );
        check(
            with_trace(&format!(
                ",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":{}",
                text("😀", 64)
            )),
            "ok 1",
        );
        check(
            with_trace(&format!(
                ",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":{}",
                text("a", 129)
            )),
            "traces.0.workflowRunId too_big",
        );
        check(
            with_trace(&format!(
                ",\"traceName\":\"x\",\"traceId\":{}",
                text("😀", 64)
            ))
            .replacen("\"traceId\":\"t1\",", "", 1),
            "ok 1",
        );
        check(
            with_trace(&format!(
                ",\"traceName\":\"x\",\"traceId\":{}",
                text("😀", 65)
            ))
            .replacen("\"traceId\":\"t1\",", "", 1),
            "traces.0.traceId too_big",
        );
        assert_eq!(utf16_len("aé😀\u{FFFD}"), 5);
    }

    #[test]
    fn batch_and_trace_rules() {
        let span = r#"{"spanId":"s","spanType":"tool","name":"","startTime":0,"endTime":0}"#;
        let trace = format!(r#"{{"traceId":"t","agentName":"a","spans":[{span}]}}"#);
        let traces = |n: usize| vec![trace.as_str(); n].join(",");
        let spans = |n: usize| vec![span; n].join(",");
        let cases: Vec<(String, &str)> = vec![
            (format!(r#"{{"version":"v1","traces":[{trace}]}}"#), "ok 1"),
            (format!(r#"{{"traces":[{trace}]}}"#), "version invalid_type"),
            (format!(r#"{{"version":"v2","traces":[{trace}]}}"#), "version invalid_literal"),
            (format!(r#"{{"version":1,"traces":[{trace}]}}"#), "version invalid_literal"),
            (format!(r#"{{"version":null,"traces":[{trace}]}}"#), "version invalid_literal"),
            (format!(r#"{{"version":"v1","version":"v1","traces":[{trace}]}}"#), "version duplicate_key"),
            (r#"{"version":"v1"}"#.into(), "traces invalid_type"),
            (r#"{"version":"v1","traces":{}}"#.into(), "traces invalid_type"),
            (r#"{"version":"v1","traces":[]}"#.into(), "traces too_small"),
            (format!(r#"{{"version":"v1","traces":[{}]}}"#, traces(1000)), "ok 1000"),
            (format!(r#"{{"version":"v1","traces":[{}]}}"#, traces(1001)), "traces too_big"),
            (format!(r#"{{"version":"v1","traces":[{trace}],"extra":1,"more":{{}}}}"#), " unrecognized_keys"),
            (r#"{"version":"v1","traces":[1]}"#.into(), "traces.0 invalid_type"),
            (r#"{}"#.into(), "version invalid_type\ntraces invalid_type"),
            // Trace fields.
            (with_trace(",\"agentName\":\"a\""), "ok 1"),
            (with_trace(",\"agentName\":\"a\"").replace("\"traceId\":\"t1\",", ""), "traces.0.traceId invalid_type"),
            (with_trace(",\"agentName\":\"a\",\"traceId\":\"t2\""), "traces.0.traceId duplicate_key"),
            (with_trace(",\"agentName\":\"a\"").replace("\"traceId\":\"t1\"", "\"traceId\":\"\""), "traces.0.traceId too_small"),
            (with_trace(",\"agentName\":\"a\"").replace("\"traceId\":\"t1\"", "\"traceId\":7"), "traces.0.traceId invalid_type"),
            (r#"{"version":"v1","traces":[{"traceId":"t","agentName":"a"}]}"#.into(), "traces.0.spans invalid_type"),
            (r#"{"version":"v1","traces":[{"traceId":"t","agentName":"a","spans":[]}]}"#.into(), "traces.0.spans too_small"),
            (format!(r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":[{}]}}]}}"#, spans(2000)), "ok 2000"),
            (format!(r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":[{}]}}]}}"#, spans(2001)), "traces.0.spans too_big"),
            (format!(r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":{span}}}]}}"#), "traces.0.spans invalid_type"),
            (with_trace(",\"traceName\":\"x\",\"bogus\":[1,{}],\"other\":null"), "traces.0 unrecognized_keys"),
            (with_trace(",\"traceName\":null"), "traces.0.traceName invalid_type"),
            (with_trace(",\"traceName\":\"x\",\"sessionId\":null"), "traces.0.sessionId invalid_type"),
            (with_trace(",\"traceName\":\"x\",\"metadata\":null"), "traces.0.metadata invalid_type"),
            // At least one of traceName, agentName non-empty.
            (with_trace(""), "traces.0.traceName custom"),
            (with_trace(",\"traceName\":\"\",\"agentName\":\"\""), "traces.0.traceName custom"),
            (with_trace(",\"agentName\":\"a\""), "ok 1"),
            (with_trace(",\"traceName\":\"\",\"agentName\":\"a\""), "ok 1"),
            // An invalid traceName reports itself only.
            (with_trace(",\"traceName\":5"), "traces.0.traceName invalid_type"),
            // workflowName and workflowRunId together.
            (with_trace(",\"agentName\":\"a\",\"workflowName\":\"w\""), "traces.0.workflowRunId custom"),
            (with_trace(",\"agentName\":\"a\",\"workflowRunId\":\"r\""), "traces.0.workflowRunId custom"),
            (with_trace(",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":\"\""), "traces.0.workflowRunId custom"),
            (with_trace(",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":\"r\""), "ok 1"),
            (with_trace(",\"agentName\":\"a\",\"workflowName\":\"\",\"workflowRunId\":\"\""), "ok 1"),
            // customer (newer clients).
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\"}"), "ok 1"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"name\":\"N\",\"imageUrl\":\"https://x.test/a.png\"}"), "ok 1"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"imageUrl\":\"mailto:a@b\"}"), "ok 1"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"imageUrl\":\"data:image/png;base64,AA==\"}"), "ok 1"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{}"), "traces.0.customer.id invalid_type"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"\"}"), "traces.0.customer.id too_small"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"nick\":\"n\"}"), "traces.0.customer unrecognized_keys"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"id\":\"d\"}"), "traces.0.customer.id duplicate_key"),
            (with_trace(",\"agentName\":\"a\",\"customer\":null"), "traces.0.customer invalid_type"),
            (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"name\":null}"), "traces.0.customer.name invalid_type"),
            (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":{}}}", text("a", 129))), "traces.0.customer.id too_big"),
            (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"name\":{}}}", text("😀", 128))), "ok 1"),
            (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"name\":{}}}", text("a", 257))), "traces.0.customer.name too_big"),
            (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"imageUrl\":\"https://x/{}\"}}", "a".repeat(2038))), "ok 1"),
            (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"imageUrl\":\"https://x/{}\"}}", "a".repeat(2039))), "traces.0.customer.imageUrl too_big"),
        ];
        for (input, expected) in cases {
            check(input, expected);
        }
        for bad_url in [
            "x.test/a.png",
            "",
            "https:",
            "1http://x",
            "ht tp://x",
            "https://x y",
            ":x",
            "a_b:c",
            "https://x\\t",
        ] {
            check(
                with_trace(&format!(
                    ",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"imageUrl\":\"{bad_url}\"}}"
                )),
                "traces.0.customer.imageUrl invalid_string",
            );
        }
    }

    #[test]
    fn span_rules() {
        let s = "traces.0.spans.0";
        let mut cases: Vec<(String, String)> = Vec::new();
        for field in ["spanId", "spanType", "name", "startTime", "endTime"] {
            cases.push((
                with_span_field(field, ""),
                format!("{s}.{field} invalid_type"),
            ));
        }
        let span_cases: &[(&str, &str)] = &[
            ("", "ok 1"),
            (",\"spanId\":\"again\"", ".spanId duplicate_key"),
            (",\"status\":\"ok\",\"status\":\"error\"", ".status duplicate_key"),
            (",\"colour\":\"red\",\"size\":1", " unrecognized_keys"),
            // Enums.
            (",\"status\":\"ok\"", "ok 1"),
            (",\"status\":\"error\",\"errorMessage\":\"boom\"", "ok 1"),
            (",\"status\":\"aborted\"", "ok 1"),
            (",\"status\":\"fine\"", ".status invalid_enum_value"),
            (",\"status\":\"OK\"", ".status invalid_enum_value"),
            (",\"status\":null", ".status invalid_type"),
            (",\"status\":1", ".status invalid_type"),
            // Optional strings: null, wrong type, too short.
            (",\"parentSpanId\":\"p\"", "ok 1"),
            (",\"parentSpanId\":\"\"", ".parentSpanId too_small"),
            (",\"parentSpanId\":null", ".parentSpanId invalid_type"),
            (",\"provider\":null", ".provider invalid_type"),
            (",\"modelId\":[\"gpt\"]", ".modelId invalid_type"),
            (",\"input\":{\"role\":\"user\"}", ".input invalid_type"),
            (",\"output\":true", ".output invalid_type"),
            (",\"errorMessage\":\"\"", "ok 1"),
            // Integers.
            (",\"modelCallMs\":3.0,\"reasoningDurationMs\":1e3,\"responseTimeMs\":-0", "ok 1"),
            (",\"modelCallMs\":-0.0,\"reasoningDurationMs\":0,\"responseTimeMs\":9007199254740991", "ok 1"),
            (",\"modelCallMs\":3.5", ".modelCallMs invalid_type"),
            (",\"modelCallMs\":-1", ".modelCallMs too_small"),
            (",\"modelCallMs\":-1.0", ".modelCallMs too_small"),
            (",\"modelCallMs\":9007199254740992", ".modelCallMs too_big"),
            (",\"modelCallMs\":9007199254740992.0", ".modelCallMs too_big"),
            (",\"modelCallMs\":1e300", ".modelCallMs too_big"),
            (",\"modelCallMs\":\"3\"", ".modelCallMs invalid_type"),
            (",\"modelCallMs\":null", ".modelCallMs invalid_type"),
            (",\"responseTimeMs\":0.5", ".responseTimeMs invalid_type"),
            (",\"reasoningDurationMs\":true", ".reasoningDurationMs invalid_type"),
            // Numbers >= 0.
            (",\"ttftMs\":0,\"outputTps\":1.5,\"inputTps\":-0.0,\"effectiveOutputTps\":1e2,\"effectiveTotalTps\":7", "ok 1"),
            (",\"ttftMs\":-0.001", ".ttftMs too_small"),
            (",\"ttftMs\":-3", ".ttftMs too_small"),
            (",\"ttftMs\":null", ".ttftMs invalid_type"),
            (",\"outputTps\":\"1\"", ".outputTps invalid_type"),
            (",\"inputTps\":-1", ".inputTps too_small"),
            (",\"effectiveOutputTps\":-1", ".effectiveOutputTps too_small"),
            (",\"effectiveTotalTps\":[]", ".effectiveTotalTps invalid_type"),
            // Usage and rateLimit: strict objects of optional integers.
            (",\"usage\":{}", "ok 1"),
            (",\"usage\":{\"inputTokens\":1,\"outputTokens\":2,\"totalTokens\":3,\"reasoningTokens\":0,\"cachedInputTokens\":0,\"cacheWriteInputTokens\":0,\"imageCount\":0,\"webSearchCount\":0,\"requestCount\":1}", "ok 1"),
            (",\"usage\":{\"inputTokens\":null}", ".usage.inputTokens invalid_type"),
            (",\"usage\":{\"inputTokens\":1.5}", ".usage.inputTokens invalid_type"),
            (",\"usage\":{\"outputTokens\":-2}", ".usage.outputTokens too_small"),
            (",\"usage\":{\"inputTokens\":1,\"inputTokens\":2}", ".usage.inputTokens duplicate_key"),
            (",\"usage\":{\"promptTokens\":1}", ".usage unrecognized_keys"),
            (",\"usage\":[]", ".usage invalid_type"),
            (",\"usage\":null", ".usage invalid_type"),
            (",\"rateLimit\":{\"requestsLimit\":1,\"requestsRemaining\":0,\"requestsResetMs\":10.0,\"tokensLimit\":5,\"tokensRemaining\":4,\"tokensResetMs\":0}", "ok 1"),
            (",\"rateLimit\":{\"tokensResetMs\":0.5}", ".rateLimit.tokensResetMs invalid_type"),
            (",\"rateLimit\":{\"retryAfter\":1}", ".rateLimit unrecognized_keys"),
            (",\"rateLimit\":null", ".rateLimit invalid_type"),
            // Sample arrays.
            (",\"chunkOffsets\":[],\"chunkTokens\":[1,2.0,1e1],\"reasoningOffsets\":[0],\"reasoningChunkTokens\":[9007199254740991]", "ok 1"),
            (",\"chunkOffsets\":[1,2.5]", ".chunkOffsets.1 invalid_type"),
            (",\"chunkTokens\":[-1]", ".chunkTokens.0 too_small"),
            (",\"reasoningOffsets\":[null]", ".reasoningOffsets.0 invalid_type"),
            (",\"reasoningChunkTokens\":[[1]]", ".reasoningChunkTokens.0 invalid_type"),
            (",\"chunkOffsets\":{}", ".chunkOffsets invalid_type"),
            (",\"chunkOffsets\":null", ".chunkOffsets invalid_type"),
            // chunkJitter (newer clients): all six numbers >= 0.
            (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":5}", "ok 1"),
            (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"max\":5}", ".chunkJitter.p90 invalid_type"),
            (",\"chunkJitter\":{\"min\":-1,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":5}", ".chunkJitter.min too_small"),
            (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":5,\"p99\":6}", ".chunkJitter unrecognized_keys"),
            (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":null}", ".chunkJitter.max invalid_type"),
            (",\"chunkJitter\":null", ".chunkJitter invalid_type"),
            // Metadata.
            (",\"metadata\":{}", "ok 1"),
            (",\"metadata\":{\"k\":\"\"}", "ok 1"),
            (",\"metadata\":{\"k\":1}", ".metadata.k invalid_type"),
            (",\"metadata\":{\"k\":null}", ".metadata.k invalid_type"),
            (",\"metadata\":{\"k\":\"a\",\"j\":\"b\",\"k\":\"c\"}", ".metadata.k duplicate_key"),
            (",\"metadata\":[]", ".metadata invalid_type"),
            (",\"metadata\":\"k=v\"", ".metadata invalid_type"),
        ];
        for (extra, expected) in span_cases {
            let expected = if expected.starts_with("ok") {
                expected.to_string()
            } else {
                format!("{s}{expected}")
            };
            cases.push((with_span(extra), expected));
        }
        // endTime >= startTime.
        cases.push((
            with_span("").replace("\"endTime\":2", "\"endTime\":0"),
            format!("{s}.endTime custom"),
        ));
        cases.push((
            with_span("").replace("\"endTime\":2", "\"endTime\":1"),
            "ok 1".into(),
        ));
        // An invalid time reports itself, not the order.
        cases.push((
            with_span("").replace("\"endTime\":2", "\"endTime\":-5"),
            format!("{s}.endTime too_small"),
        ));
        // Sample array sizes.
        let ints = |n: usize| vec!["7"; n].join(",");
        cases.push((
            with_span(&format!(",\"chunkOffsets\":[{}]", ints(200))),
            "ok 1".into(),
        ));
        cases.push((
            with_span(&format!(",\"chunkOffsets\":[{}]", ints(201))),
            format!("{s}.chunkOffsets too_big"),
        ));
        // Metadata sizes, in UTF-16 units.
        let map = |n: usize| {
            (0..n)
                .map(|i| format!("\"key{i}\":\"v\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        cases.push((
            with_span(&format!(",\"metadata\":{{{}}}", map(64))),
            "ok 1".into(),
        ));
        cases.push((
            with_span(&format!(",\"metadata\":{{{}}}", map(65))),
            format!("{s}.metadata too_big"),
        ));
        cases.push((
            with_span(&format!(",\"metadata\":{{{},\"key7\":\"w\"}}", map(30))),
            format!("{s}.metadata.key7 duplicate_key"),
        ));
        let key128 = "😀".repeat(64);
        cases.push((
            with_span(&format!(
                ",\"metadata\":{{\"{key128}\":{}}}",
                text("é", 1024)
            )),
            "ok 1".into(),
        ));
        cases.push((
            with_span(&format!(",\"metadata\":{{\"{key128}a\":\"v\"}}")),
            format!("{s}.metadata.{key128}a too_big"),
        ));
        cases.push((
            with_span(&format!(",\"metadata\":{{\"k\":{}}}", text("😀", 512))),
            "ok 1".into(),
        ));
        cases.push((
            with_span(&format!(
                ",\"metadata\":{{\"k\":\"{}a\"}}",
                "😀".repeat(512)
            )),
            format!("{s}.metadata.k too_big"),
        ));
        // Trace metadata follows the same rules.
        cases.push((
            with_trace(&format!(
                ",\"agentName\":\"a\",\"metadata\":{{{}}}",
                map(65)
            )),
            "traces.0.metadata too_big".into(),
        ));
        for (input, expected) in &cases {
            check(input, expected);
        }
    }

    #[test]
    fn issues_are_collected_over_the_body_and_capped() {
        // Problems in different traces and spans all come back, in body order.
        let body = r#"{"version":"v1","traces":[
            {"traceId":"t","agentName":"a","spans":[
                {"spanId":"s","spanType":"llm","name":"n","startTime":5,"endTime":4},
                {"spanId":"s","spanType":"bot","name":"n","startTime":1,"endTime":2,"usage":{"inputTokens":-1}}]},
            {"traceId":"","spans":[{"spanId":"s","spanType":"llm","name":"n","startTime":1,"endTime":2,"metadata":{"a":1}}]}]}"#;
        check(
            body,
            "traces.0.spans.0.endTime custom\n\
             traces.0.spans.1.spanType invalid_enum_value\n\
             traces.0.spans.1.usage.inputTokens too_small\n\
             traces.1.traceId too_small\n\
             traces.1.spans.0.metadata.a invalid_type\n\
             traces.1.traceName custom",
        );
        // 150 bad spans: exactly 100 issues.
        let bad = r#"{"spanId":"s","spanType":"bot","name":"n","startTime":1,"endTime":2}"#;
        let body = format!(
            r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":[{}]}},{{"traceId":"u"}}]}}"#,
            vec![bad; 150].join(",")
        );
        let mut input = body.into_bytes();
        let arena = Bump::new();
        let mut decoder = crate::ingest::decode::Decoder::new();
        match decoder.decode(&mut input, &arena) {
            Err(crate::ingest::decode::DecodeError::Schema(issues)) => {
                assert_eq!(issues.len(), MAX_ISSUES);
                assert_eq!(
                    issues[99].path,
                    vec![
                        PathSeg::Key("traces".into()),
                        PathSeg::Index(0),
                        PathSeg::Key("spans".into()),
                        PathSeg::Index(99),
                        PathSeg::Key("spanType".into()),
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn full_batch_round_trips() {
        let body = r#"{"version":"v1","traces":[{
            "traceId":"trace-1","traceName":"Chat \"turn\"\n","agentName":"agent é","workflowName":"wf",
            "workflowRunId":"run-1","sessionId":"sess","metadata":{"env":"prod","tier":"\u00e9\ud83d\ude00"},
            "customer":{"id":"cust-1","name":"Ada","imageUrl":"https://img.test/a.png"},
            "spans":[{
                "spanId":"s1","parentSpanId":"s0","spanType":"llm","name":"call","startTime":1700000000000,
                "endTime":1700000001500,"status":"error","errorMessage":"rate \\ limited","provider":"openai.chat",
                "modelId":"gpt-4o","usage":{"inputTokens":10,"outputTokens":20,"totalTokens":30,"reasoningTokens":5,
                "cachedInputTokens":2,"cacheWriteInputTokens":1,"imageCount":0,"webSearchCount":3,"requestCount":1},
                "ttftMs":123.5,"chunkOffsets":[0,10,20],"chunkTokens":[1,2,3],"reasoningOffsets":[5],
                "reasoningChunkTokens":[7],"reasoningDurationMs":40,"modelCallMs":1500,
                "input":"Hi \ud83d\ude00 caf\u00e9 日本","output":"line1\nline2\t\"q\"","toolCatalog":"[]","sources":"s",
                "systemFingerprint":"fp_1","safetyMetadata":"{}",
                "rateLimit":{"requestsLimit":100,"requestsRemaining":99,"requestsResetMs":1000,"tokensLimit":1000,
                "tokensRemaining":900,"tokensResetMs":60000},
                "metadata":{"k":"v"},"responseTimeMs":1600,"effectiveOutputTps":13.3,"effectiveTotalTps":20,
                "outputTps":14,"inputTps":0,
                "chunkJitter":{"min":0.5,"p10":1,"median":2,"avg":2.5,"p90":4,"max":9}
            },{"spanId":"s2","spanType":"tool","name":"","startTime":5,"endTime":5}]}]}"#;
        with_batch(body, |b| {
            assert_eq!(b.span_count, 2);
            let t = &b.traces[0];
            assert_eq!(t.trace_id, "trace-1");
            assert_eq!(t.trace_name, Some("Chat \"turn\"\n"));
            assert_eq!(t.agent_name, Some("agent é"));
            assert_eq!(t.workflow_name, Some("wf"));
            assert_eq!(t.workflow_run_id, Some("run-1"));
            assert_eq!(t.session_id, Some("sess"));
            assert_eq!(t.metadata, &[("env", "prod"), ("tier", "é😀")]);
            let c = t.customer.unwrap();
            assert_eq!(
                (c.id, c.name, c.image_url),
                ("cust-1", Some("Ada"), Some("https://img.test/a.png"))
            );
            let s = &t.spans[0];
            assert_eq!(s.span_id, "s1");
            assert_eq!(s.parent_span_id, Some("s0"));
            assert_eq!(s.span_type, SpanType::Llm);
            assert_eq!(s.name, "call");
            assert_eq!(
                (s.start_time, s.end_time),
                (1_700_000_000_000, 1_700_000_001_500)
            );
            assert_eq!(s.status, Status::Error);
            assert_eq!(s.error_message, Some("rate \\ limited"));
            assert_eq!(s.provider, Some("openai.chat"));
            assert_eq!(s.model_id, Some("gpt-4o"));
            assert_eq!(
                s.usage,
                Some(Usage {
                    input_tokens: Some(10),
                    output_tokens: Some(20),
                    total_tokens: Some(30),
                    reasoning_tokens: Some(5),
                    cached_input_tokens: Some(2),
                    cache_write_input_tokens: Some(1),
                    image_count: Some(0),
                    web_search_count: Some(3),
                    request_count: Some(1),
                })
            );
            assert_eq!(s.ttft_ms, Some(123.5));
            assert_eq!(s.chunk_offsets, &[0, 10, 20]);
            assert_eq!(s.chunk_tokens, &[1, 2, 3]);
            assert_eq!(s.reasoning_offsets, &[5]);
            assert_eq!(s.reasoning_chunk_tokens, &[7]);
            assert_eq!(s.reasoning_duration_ms, Some(40));
            assert_eq!(s.model_call_ms, Some(1500));
            assert_eq!(s.input, Some("Hi 😀 café 日本"));
            assert_eq!(s.output, Some("line1\nline2\t\"q\""));
            assert_eq!(s.tool_catalog, Some("[]"));
            assert_eq!(s.sources, Some("s"));
            assert_eq!(s.system_fingerprint, Some("fp_1"));
            assert_eq!(s.safety_metadata, Some("{}"));
            assert_eq!(
                s.rate_limit,
                Some(RateLimit {
                    requests_limit: Some(100),
                    requests_remaining: Some(99),
                    requests_reset_ms: Some(1000),
                    tokens_limit: Some(1000),
                    tokens_remaining: Some(900),
                    tokens_reset_ms: Some(60000),
                })
            );
            assert_eq!(s.metadata, &[("k", "v")]);
            assert_eq!(s.response_time_ms, Some(1600));
            assert_eq!(s.effective_output_tps, Some(13.3));
            assert_eq!(s.effective_total_tps, Some(20.0));
            assert_eq!(s.output_tps, Some(14.0));
            assert_eq!(s.input_tps, Some(0.0));
            assert_eq!(
                s.chunk_jitter,
                Some(ChunkJitter {
                    min: 0.5,
                    p10: 1.0,
                    median: 2.0,
                    avg: 2.5,
                    p90: 4.0,
                    max: 9.0
                })
            );
            // The minimal span: every optional field absent.
            let m = &t.spans[1];
            assert_eq!(
                (m.span_id, m.span_type, m.name, m.start_time, m.end_time),
                ("s2", SpanType::Tool, "", 5, 5)
            );
            assert_eq!(m.status, Status::Ok);
            assert!(
                m.parent_span_id.is_none() && m.error_message.is_none() && m.provider.is_none()
            );
            assert!(m.model_id.is_none() && m.usage.is_none() && m.ttft_ms.is_none());
            assert!(m.chunk_offsets.is_empty() && m.chunk_tokens.is_empty());
            assert!(m.reasoning_offsets.is_empty() && m.reasoning_chunk_tokens.is_empty());
            assert!(m.reasoning_duration_ms.is_none() && m.model_call_ms.is_none());
            assert!(m.input.is_none() && m.output.is_none() && m.tool_catalog.is_none());
            assert!(
                m.sources.is_none()
                    && m.system_fingerprint.is_none()
                    && m.safety_metadata.is_none()
            );
            assert!(
                m.rate_limit.is_none() && m.metadata.is_empty() && m.response_time_ms.is_none()
            );
            assert!(m.effective_output_tps.is_none() && m.effective_total_tps.is_none());
            assert!(m.output_tps.is_none() && m.input_tps.is_none() && m.chunk_jitter.is_none());
        });
        // A trace without optional fields.
        with_batch(&with_trace(",\"agentName\":\"a\""), |b| {
            let t = &b.traces[0];
            assert!(
                t.trace_name.is_none() && t.workflow_name.is_none() && t.workflow_run_id.is_none()
            );
            assert!(t.session_id.is_none() && t.metadata.is_empty() && t.customer.is_none());
        });
    }
}
