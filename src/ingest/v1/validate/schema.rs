//! The v1 schema, object by object: batch > trace > span > usage, customer, rate limit, chunk
//! jitter, metadata, sample arrays.

use simd_json::{Node, StaticNode};

use super::*;

impl<'a> Walker<'_, 'a> {
    pub(super) fn batch(&mut self) -> Batch<'a> {
        let root = Path::Root;
        let mut out = Batch {
            traces: &[],
            span_count: 0,
        };
        self.object(&root, &BATCH_REQUIRED, |w, key, p, seen| {
            match key {
                "version" => {
                    w.once(seen, 0, p, key);
                    let n = w.next();
                    if !matches!(n, Node::String("v1")) {
                        w.skip(n);
                        w.issues.push(
                            p,
                            "invalid_literal",
                            format_args!("Invalid literal value, expected \"v1\""),
                        );
                    }
                }
                "traces" => {
                    w.once(seen, 1, p, key);
                    (out.traces, out.span_count) = w.traces(p);
                }
                _ => return false,
            }
            true
        });
        out
    }

    pub(super) fn traces(&mut self, path: &Path<'_>) -> (&'a [Trace<'a>], usize) {
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

    pub(super) fn trace(&mut self, path: &Path<'_>) -> Trace<'a> {
        let mut t = Trace::default();
        let Some(seen) = self.object(path, &TRACE_REQUIRED, |w, key, p, seen| {
            match key {
                "traceId" => {
                    w.once(seen, 0, p, key);
                    t.trace_id = w.string(p, 1, 128).unwrap_or("");
                }
                "spans" => {
                    w.once(seen, 1, p, key);
                    t.spans = w.spans(p);
                }
                "traceName" => {
                    w.once(seen, 2, p, key);
                    t.trace_name = w.string(p, 0, 256);
                }
                "agentName" => {
                    w.once(seen, 3, p, key);
                    t.agent_name = w.string(p, 0, 256);
                }
                "workflowName" => {
                    w.once(seen, 4, p, key);
                    t.workflow_name = w.string(p, 0, 256);
                }
                "workflowRunId" => {
                    w.once(seen, 5, p, key);
                    t.workflow_run_id = w.string(p, 0, 128);
                }
                "sessionId" => {
                    w.once(seen, 6, p, key);
                    t.session_id = w.string(p, 0, 128);
                }
                "metadata" => {
                    w.once(seen, 7, p, key);
                    t.metadata = w.metadata(p);
                }
                "customer" => {
                    w.once(seen, 8, p, key);
                    t.customer = w.customer(p);
                }
                _ => return false,
            }
            true
        }) else {
            return t;
        };

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

    pub(super) fn customer(&mut self, path: &Path<'_>) -> Option<Customer<'a>> {
        let mut c = Customer {
            id: "",
            name: None,
            image_url: None,
        };
        self.object(path, &CUSTOMER_REQUIRED, |w, key, p, seen| {
            match key {
                "id" => {
                    w.once(seen, 0, p, key);
                    c.id = w.string(p, 1, 128).unwrap_or("");
                }
                "name" => {
                    w.once(seen, 1, p, key);
                    c.name = w.string(p, 0, 256);
                }
                "imageUrl" => {
                    w.once(seen, 2, p, key);
                    c.image_url = w.any_string(p).filter(|s| {
                        let ok = is_absolute_url(s);
                        if !ok {
                            w.issues
                                .push(p, "invalid_string", format_args!("Invalid url"));
                        }
                        w.len_ok(p, s, 0, 2048) && ok
                    });
                }
                _ => return false,
            }
            true
        })?;
        Some(c)
    }

    pub(super) fn spans(&mut self, path: &Path<'_>) -> &'a [Span<'a>] {
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
            // Each span is built where it is kept, in the arena: a `Span` is 736 bytes, and
            // building it on the stack cost a copy of it into the arena too.
            if i < MAX {
                out.push(Span::default());
                let s = out.last_mut().expect("a span was just pushed");
                self.span(&path.index(i), s);
            } else {
                self.span(&path.index(i), &mut Span::default());
            }
        }
        out.into_bump_slice()
    }

    /// Reads a span into `s`, which is `Span::default()`.
    pub(super) fn span(&mut self, path: &Path<'_>, s: &mut Span<'a>) {
        let (mut start, mut end) = (None, None);
        let Some(_) = self.object(path, &SPAN_REQUIRED, |w, key, p, seen| {
            // Bits 0..5 are the required fields, in `SPAN_REQUIRED` order.
            match key {
                "spanId" => {
                    w.once(seen, 0, p, key);
                    s.span_id = w.string(p, 1, 128).unwrap_or("");
                }
                "spanType" => {
                    w.once(seen, 1, p, key);
                    s.span_type = w.span_type(p).unwrap_or(SpanType::Other);
                }
                "name" => {
                    w.once(seen, 2, p, key);
                    s.name = w.string(p, 0, 512).unwrap_or("");
                }
                "startTime" => {
                    w.once(seen, 3, p, key);
                    start = w.int(p);
                }
                "endTime" => {
                    w.once(seen, 4, p, key);
                    end = w.int(p);
                }
                "parentSpanId" => {
                    w.once(seen, 5, p, key);
                    s.parent_span_id = w.string(p, 1, 128);
                }
                "status" => {
                    w.once(seen, 6, p, key);
                    s.status = w.status(p).unwrap_or_default();
                }
                "errorMessage" => {
                    w.once(seen, 7, p, key);
                    s.error_message = w.string(p, 0, 8192);
                }
                "provider" => {
                    w.once(seen, 8, p, key);
                    s.provider = w.string(p, 0, 128);
                }
                "modelId" => {
                    w.once(seen, 9, p, key);
                    s.model_id = w.string(p, 0, 256);
                }
                "usage" => {
                    w.once(seen, 10, p, key);
                    s.usage = w.numbers(p, &USAGE_FIELDS, &[], Self::int).map(usage);
                }
                "ttftMs" => {
                    w.once(seen, 11, p, key);
                    s.ttft_ms = w.non_negative(p);
                }
                "chunkOffsets" => {
                    w.once(seen, 12, p, key);
                    s.chunk_offsets = w.int_array(p);
                }
                "chunkTokens" => {
                    w.once(seen, 13, p, key);
                    s.chunk_tokens = w.int_array(p);
                }
                "reasoningOffsets" => {
                    w.once(seen, 14, p, key);
                    s.reasoning_offsets = w.int_array(p);
                }
                "reasoningChunkTokens" => {
                    w.once(seen, 15, p, key);
                    s.reasoning_chunk_tokens = w.int_array(p);
                }
                "reasoningDurationMs" => {
                    w.once(seen, 16, p, key);
                    s.reasoning_duration_ms = w.int(p);
                }
                "modelCallMs" => {
                    w.once(seen, 17, p, key);
                    s.model_call_ms = w.int(p);
                }
                "input" => {
                    w.once(seen, 18, p, key);
                    s.input = w.string(p, 0, 1_000_000);
                }
                "output" => {
                    w.once(seen, 19, p, key);
                    s.output = w.string(p, 0, 1_000_000);
                }
                "toolCatalog" => {
                    w.once(seen, 20, p, key);
                    s.tool_catalog = w.string(p, 0, 1_000_000);
                }
                "sources" => {
                    w.once(seen, 21, p, key);
                    s.sources = w.string(p, 0, 1_000_000);
                }
                "systemFingerprint" => {
                    w.once(seen, 22, p, key);
                    s.system_fingerprint = w.string(p, 0, 256);
                }
                "safetyMetadata" => {
                    w.once(seen, 23, p, key);
                    s.safety_metadata = w.string(p, 0, 16384);
                }
                "rateLimit" => {
                    w.once(seen, 24, p, key);
                    s.rate_limit = w
                        .numbers(p, &RATE_LIMIT_FIELDS, &[], Self::int)
                        .map(rate_limit);
                }
                "metadata" => {
                    w.once(seen, 25, p, key);
                    s.metadata = w.metadata(p);
                }
                "responseTimeMs" => {
                    w.once(seen, 26, p, key);
                    s.response_time_ms = w.int(p);
                }
                "effectiveOutputTps" => {
                    w.once(seen, 27, p, key);
                    s.effective_output_tps = w.non_negative(p);
                }
                "effectiveTotalTps" => {
                    w.once(seen, 28, p, key);
                    s.effective_total_tps = w.non_negative(p);
                }
                "outputTps" => {
                    w.once(seen, 29, p, key);
                    s.output_tps = w.non_negative(p);
                }
                "inputTps" => {
                    w.once(seen, 30, p, key);
                    s.input_tps = w.non_negative(p);
                }
                "chunkJitter" => {
                    w.once(seen, 31, p, key);
                    s.chunk_jitter = w
                        .numbers(p, &JITTER_FIELDS, &JITTER_FIELDS, Self::non_negative)
                        .and_then(chunk_jitter);
                }
                _ => return false,
            }
            true
        }) else {
            return;
        };
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
    }

    pub(super) fn span_type(&mut self, path: &Path<'_>) -> Option<SpanType> {
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

    pub(super) fn status(&mut self, path: &Path<'_>) -> Option<Status> {
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
    pub(super) fn bad_enum(&mut self, path: &Path<'_>, options: &str, got: &str) {
        self.issues.push(
            path,
            "invalid_enum_value",
            format_args!("Invalid enum value. Expected {options}, received '{got}'"),
        );
    }

    /// A strict object whose members are all numbers read by `read` (`int` or
    /// `non_negative`); `required` is `names` (all required) or empty (none). Returns the
    /// values by position in `names`.
    pub(super) fn numbers<T: Copy, const N: usize>(
        &mut self,
        path: &Path<'_>,
        names: &[&'static str; N],
        required: &[&'static str],
        mut read: impl FnMut(&mut Self, &Path<'_>) -> Option<T>,
    ) -> Option<[Option<T>; N]> {
        let mut values = [None; N];
        self.object(path, required, |w, key, p, seen| {
            let Some(i) = names.iter().position(|&name| name == key) else {
                return false;
            };
            w.once(seen, i as u32, p, key);
            values[i] = read(w, p);
            true
        })?;
        Some(values)
    }

    /// Walks a strict object: `member` reads each member's value, marking its bit in `seen`
    /// with `once`, or answers `false` for a key the object does not have, which is skipped
    /// and reported; then the `required` members (bits `0..`) not seen are reported. `None`
    /// when the value is not an object (reported too), else the bits seen.
    #[inline]
    pub(super) fn object(
        &mut self,
        path: &Path<'_>,
        required: &[&'static str],
        mut member: impl FnMut(&mut Self, &'a str, &Path<'_>, &mut u64) -> bool,
    ) -> Option<u64> {
        let n = self.next();
        let Node::Object { len, .. } = n else {
            self.wrong_type(path, "object", n);
            return None;
        };
        let mut seen = 0u64;
        let mut unknown = None;
        for _ in 0..len {
            let key = self.key();
            if !member(self, key, &path.key(key), &mut seen) {
                self.unknown_key(&mut unknown, key);
            }
        }
        self.finish_object(path, seen, required, unknown);
        Some(seen)
    }

    /// An array of at most 200 integers.
    pub(super) fn int_array(&mut self, path: &Path<'_>) -> &'a [u64] {
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
    pub(super) fn metadata(&mut self, path: &Path<'_>) -> Metadata<'a> {
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

    pub(super) fn duplicate_keys(&mut self, path: &Path<'_>, map: &[(&'a str, &'a str)]) {
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
