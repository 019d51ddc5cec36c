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

    pub(super) fn customer(&mut self, path: &Path<'_>) -> Option<Customer<'a>> {
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
            let s = self.span(&path.index(i));
            if i < MAX {
                out.push(s);
            }
        }
        out.into_bump_slice()
    }

    pub(super) fn span(&mut self, path: &Path<'_>) -> Span<'a> {
        let mut s = Span::default();
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

    /// A strict object whose members are all numbers of one kind; `required` is a bit mask
    /// over `names`. Returns the values by position in `names`.
    pub(super) fn numbers<const N: usize>(
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
