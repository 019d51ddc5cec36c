//! Seeded generator of a realistic OTLP export (512 spans, as the SDK's batch span processor
//! sends them) and of the same spans as a v1 batch, so both front ends can be measured on the
//! same data: per-GB CPU of `/v1/traces` against `/ingest`.
//!
//! Traces of an agent at work, 16 spans each: an `invoke_agent` root, model calls (`chat`, with
//! GenAI usage, cache reads, reasoning, response ids, prompts and answers of realistic size
//! with the escapes and non-ASCII text real ones have), tool calls and an embedding, under one
//! resource with the attributes the Python SDK puts there. The v1 batch carries the same ids
//! (hex), names, times, provider, model, counts and texts, the root's conversation id as the
//! trace's session, and as metadata what the OTLP mapping puts into metadata (the resource's
//! attributes and the scope's name included), so that both store the same rows byte for byte
//! (`tests/otlp_twin.rs`). Needs only the library (for the protobuf writer), so benches,
//! tests and examples include it with `#[path]`.

#![allow(dead_code)]

use traceingest::ingest::otlp::protowire::{write, WireType};

/// xorshift64* (as `fixtures.rs`).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the",
    "model",
    "returned",
    "a",
    "summary",
    "of",
    "quarterly",
    "revenue",
    "café",
    "naïve",
    "données",
    "東京",
    "数据",
    "🚀",
    "tool",
    "call",
    "weather",
    "Berlin",
    "JSON",
    "function",
    "arguments",
    "assistant",
    "user",
    "context",
    "window",
    "tokens",
    "and",
    "is",
    "to",
    "in",
    "please",
    "answer",
    "customer",
    "order",
    "refund",
    "Straße",
    "Привет",
    "→",
    "€",
    "\"quoted\"",
    "line\nbreak",
    "C:\\temp",
];

const MODELS: &[(&str, &str, &str)] = &[
    ("openai", "gpt-4o", "gpt-4o-2024-08-06"),
    ("openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"),
    (
        "anthropic",
        "claude-sonnet-4-5",
        "claude-sonnet-4-5-20250929",
    ),
    ("gcp.gemini", "gemini-2.5-pro", "gemini-2.5-pro"),
    (
        "aws.bedrock",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
    ),
    ("x_ai", "grok-4", "grok-4-0709"),
];

/// Prose of about `len` bytes (raw text, escaped by each encoder).
fn text(rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        out.push_str(rng.pick(WORDS));
        out.push(' ');
    }
    out
}

/// A value of a span attribute.
#[derive(Clone)]
pub enum Val {
    S(String),
    I(i64),
    D(f64),
}

/// One span, as both encoders write it.
pub struct GenSpan {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub error: Option<String>,
    /// v1 fields.
    pub span_type: &'static str,
    pub provider: Option<&'static str>,
    pub model: Option<&'static str>,
    /// v1 usage: input (with cache reads), output, cached, reasoning.
    pub usage: Option<[u64; 4]>,
    pub input: Option<String>,
    pub output: Option<String>,
    /// Every OTLP attribute, in order; `mapped` says which the mapping turns into columns.
    pub attrs: Vec<(&'static str, Val, bool)>,
}

/// Resource attributes (the Python SDK's, plus a service).
pub const RESOURCE: &[(&str, &str)] = &[
    ("service.name", "support-agent"),
    ("service.version", "1.4.2"),
    ("deployment.environment", "prod"),
    ("telemetry.sdk.language", "python"),
    ("telemetry.sdk.name", "opentelemetry"),
    ("telemetry.sdk.version", "1.45.2"),
];

/// The instrumentation scope the spans are exported under.
pub const SCOPE_NAME: &str = "opentelemetry.instrumentation.genai";

/// `n` spans in traces of 16.
pub fn spans(seed: u64, n: usize) -> Vec<GenSpan> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n);
    let mut trace_id = [0u8; 16];
    let mut root = [0u8; 8];
    let mut t0 = 0u64;
    for i in 0..n {
        let pos = i % 16;
        if pos == 0 {
            trace_id[..8].copy_from_slice(&rng.next().to_be_bytes());
            trace_id[8..].copy_from_slice(&rng.next().to_be_bytes());
            t0 = 1_760_000_000_000_000_000 + rng.below(1 << 40);
        }
        let span_id = (rng.next() | 1).to_be_bytes();
        let start_ns = t0 + pos as u64 * 7_000_000 + rng.below(1_000_000);
        let end_ns = start_ns + 1_000_000 + rng.below(3_000_000_000);
        let mut s = GenSpan {
            trace_id,
            span_id,
            parent: (pos > 0).then_some(root),
            name: String::new(),
            kind: 1,
            start_ns,
            end_ns,
            error: None,
            span_type: "other",
            provider: None,
            model: None,
            usage: None,
            input: None,
            output: None,
            attrs: Vec::new(),
        };
        match pos {
            0 => {
                root = span_id;
                s.name = "invoke_agent support-agent".into();
                s.span_type = "agent";
                s.attrs
                    .push(("gen_ai.operation.name", Val::S("invoke_agent".into()), true));
                s.attrs
                    .push(("gen_ai.agent.name", Val::S("support-agent".into()), true));
                s.attrs.push((
                    "gen_ai.conversation.id",
                    Val::S(format!("conv-{:08x}", rng.next() as u32)),
                    true,
                ));
            }
            p if p % 4 == 3 => {
                let tool = rng.pick(&["get_weather", "lookup_order", "search_docs"]);
                s.name = format!("execute_tool {tool}");
                s.span_type = "tool";
                let args = format!(
                    "{{\"query\": \"{}\"}}",
                    text(&mut rng, 40).replace(['"', '\\', '\n'], " ")
                );
                let result = text(&mut rng, 200);
                s.input = Some(args.clone());
                s.output = Some(result.clone());
                s.attrs
                    .push(("gen_ai.operation.name", Val::S("execute_tool".into()), true));
                s.attrs
                    .push(("gen_ai.tool.name", Val::S(tool.into()), false));
                s.attrs.push((
                    "gen_ai.tool.call.id",
                    Val::S(format!("call_{:016x}", rng.next())),
                    false,
                ));
                s.attrs
                    .push(("gen_ai.tool.call.arguments", Val::S(args), true));
                s.attrs
                    .push(("gen_ai.tool.call.result", Val::S(result), true));
            }
            9 => {
                s.name = "embeddings text-embedding-3-small".into();
                s.kind = 3;
                s.span_type = "embedding";
                s.provider = Some("openai");
                s.model = Some("text-embedding-3-small");
                let tokens = 8 + rng.below(500);
                s.usage = Some([tokens, 0, 0, 0]);
                s.attrs
                    .push(("gen_ai.operation.name", Val::S("embeddings".into()), true));
                s.attrs
                    .push(("gen_ai.provider.name", Val::S("openai".into()), true));
                s.attrs.push((
                    "gen_ai.request.model",
                    Val::S("text-embedding-3-small".into()),
                    true,
                ));
                s.attrs
                    .push(("gen_ai.usage.input_tokens", Val::I(tokens as i64), true));
            }
            _ => {
                let (provider, request, response) = MODELS[rng.below(MODELS.len() as u64) as usize];
                s.name = format!("chat {request}");
                s.kind = 3;
                s.span_type = "llm";
                s.provider = Some(provider);
                s.model = Some(response);
                let input = 200 + rng.below(20_000);
                let cached = rng.below(input / 2);
                let output = 10 + rng.below(2000);
                let reasoning = rng.below(output / 4 + 1);
                s.usage = Some([input, output, cached, reasoning]);
                let prompt = format!(
                    "[{{\"role\":\"user\",\"parts\":[{{\"type\":\"text\",\"content\":{:?}}}]}}]",
                    text(&mut rng, 700)
                );
                let answer = format!("[{{\"role\":\"assistant\",\"parts\":[{{\"type\":\"text\",\"content\":{:?}}}]}}]", text(&mut rng, 350));
                s.input = Some(prompt.clone());
                s.output = Some(answer.clone());
                s.attrs
                    .push(("gen_ai.operation.name", Val::S("chat".into()), true));
                s.attrs
                    .push(("gen_ai.provider.name", Val::S(provider.into()), true));
                s.attrs
                    .push(("gen_ai.request.model", Val::S(request.into()), true));
                s.attrs
                    .push(("gen_ai.response.model", Val::S(response.into()), true));
                s.attrs
                    .push(("gen_ai.request.temperature", Val::D(0.2), false));
                s.attrs
                    .push(("gen_ai.request.max_tokens", Val::I(4096), false));
                s.attrs.push((
                    "gen_ai.response.id",
                    Val::S(format!("chatcmpl-{:016x}", rng.next())),
                    false,
                ));
                s.attrs.push((
                    "gen_ai.response.finish_reasons",
                    Val::S("stop".into()),
                    false,
                ));
                s.attrs
                    .push(("gen_ai.usage.input_tokens", Val::I(input as i64), true));
                s.attrs
                    .push(("gen_ai.usage.output_tokens", Val::I(output as i64), true));
                s.attrs.push((
                    "gen_ai.usage.cache_read.input_tokens",
                    Val::I(cached as i64),
                    true,
                ));
                s.attrs.push((
                    "gen_ai.usage.reasoning.output_tokens",
                    Val::I(reasoning as i64),
                    true,
                ));
                s.attrs
                    .push(("gen_ai.input.messages", Val::S(prompt), true));
                s.attrs
                    .push(("gen_ai.output.messages", Val::S(answer), true));
                s.attrs
                    .push(("server.address", Val::S("api.example.com".into()), false));
                if rng.below(20) == 0 {
                    s.error = Some("429 Too Many Requests: \"rate limit\" reached".into());
                }
            }
        }
        out.push(s);
    }
    out
}

fn any_value(out: &mut Vec<u8>, v: &Val) {
    match v {
        Val::S(s) => write::bytes(out, 1, s.as_bytes()),
        Val::I(i) => write::uint(out, 3, *i as u64),
        Val::D(d) => write::fixed64(out, 4, d.to_bits()),
    }
}

fn key_value(out: &mut Vec<u8>, field: u32, k: &str, v: &Val) {
    let mut any = Vec::new();
    any_value(&mut any, v);
    let mut kv = Vec::new();
    write::bytes(&mut kv, 1, k.as_bytes());
    write::bytes(&mut kv, 2, &any);
    write::bytes(out, field, &kv);
}

/// The spans as an `ExportTraceServiceRequest` (one resource, one scope).
pub fn otlp_protobuf(spans: &[GenSpan]) -> Vec<u8> {
    let mut scope_spans = Vec::new();
    let mut scope = Vec::new();
    write::bytes(&mut scope, 1, SCOPE_NAME.as_bytes());
    write::bytes(&mut scope, 2, b"0.9.1");
    write::bytes(&mut scope_spans, 1, &scope);
    for s in spans {
        let mut sp = Vec::new();
        write::bytes(&mut sp, 1, &s.trace_id);
        write::bytes(&mut sp, 2, &s.span_id);
        if let Some(p) = s.parent {
            write::bytes(&mut sp, 4, &p);
        }
        write::fixed32(&mut sp, 16, 0x101);
        write::bytes(&mut sp, 5, s.name.as_bytes());
        write::uint(&mut sp, 6, s.kind as u64);
        write::fixed64(&mut sp, 7, s.start_ns);
        write::fixed64(&mut sp, 8, s.end_ns);
        for (k, v, _) in &s.attrs {
            key_value(&mut sp, 9, k, v);
        }
        if let Some(e) = &s.error {
            let mut st = Vec::new();
            write::bytes(&mut st, 2, e.as_bytes());
            write::uint(&mut st, 3, 2);
            write::bytes(&mut sp, 15, &st);
        }
        write::bytes(&mut scope_spans, 2, &sp);
    }
    let mut resource = Vec::new();
    for (k, v) in RESOURCE {
        key_value(&mut resource, 1, k, &Val::S((*v).into()));
    }
    let mut rs = Vec::new();
    write::bytes(&mut rs, 1, &resource);
    write::bytes(&mut rs, 2, &scope_spans);
    let mut req = Vec::new();
    write::bytes(&mut req, 1, &rs);
    let _ = WireType::Len;
    req
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The same spans as a v1 batch (one v1 trace per trace; metadata = what the OTLP mapping
/// keeps as metadata: the unmapped attributes and the resource).
pub fn v1_json(spans: &[GenSpan]) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut s = String::from("{\"version\":\"v1\",\"traces\":[");
    for (ti, trace) in spans.chunks(16).enumerate() {
        if ti > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"traceId\":\"{}\",\"traceName\":",
            hex(&trace[0].trace_id)
        );
        json_str(&mut s, &trace[0].name);
        s.push_str(",\"agentName\":\"support-agent\"");
        // The root's conversation id, which the OTLP mapping makes the trace's session.
        let conversation = trace[0]
            .attrs
            .iter()
            .find(|a| a.0 == "gen_ai.conversation.id");
        if let Some((_, Val::S(id), _)) = conversation {
            s.push_str(",\"sessionId\":");
            json_str(&mut s, id);
        }
        s.push_str(",\"spans\":[");
        for (i, sp) in trace.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"spanId\":\"{}\",\"spanType\":\"{}\",\"name\":",
                hex(&sp.span_id),
                sp.span_type
            );
            json_str(&mut s, &sp.name);
            let _ = write!(
                s,
                ",\"startTime\":{},\"endTime\":{}",
                sp.start_ns / 1_000_000,
                sp.end_ns / 1_000_000
            );
            if let Some(p) = sp.parent {
                let _ = write!(s, ",\"parentSpanId\":\"{}\"", hex(&p));
            }
            if let Some(e) = &sp.error {
                s.push_str(",\"status\":\"error\",\"errorMessage\":");
                json_str(&mut s, e);
            }
            if let Some(p) = sp.provider {
                let _ = write!(s, ",\"provider\":\"{p}\"");
            }
            if let Some(m) = sp.model {
                let _ = write!(s, ",\"modelId\":\"{m}\"");
            }
            if let Some([input, output, cached, reasoning]) = sp.usage {
                let _ = write!(
                    s,
                    ",\"usage\":{{\"inputTokens\":{input},\"outputTokens\":{output},\"cachedInputTokens\":{cached},\"reasoningTokens\":{reasoning}}}"
                );
            }
            if let Some(t) = &sp.input {
                s.push_str(",\"input\":");
                json_str(&mut s, t);
            }
            if let Some(t) = &sp.output {
                s.push_str(",\"output\":");
                json_str(&mut s, t);
            }
            s.push_str(",\"metadata\":{");
            let mut first = true;
            let unmapped = sp.attrs.iter().filter(|a| !a.2).map(|(k, v, _)| {
                let v = match v {
                    Val::S(s) => s.clone(),
                    Val::I(i) => i.to_string(),
                    Val::D(d) => d.to_string(),
                };
                (*k, v)
            });
            // The resource's attributes and the scope's name, as the OTLP mapping adds them.
            let resource = RESOURCE
                .iter()
                .chain([&("otel.scope.name", SCOPE_NAME)])
                .map(|(k, v)| (*k, v.to_string()));
            for (k, v) in unmapped.chain(resource) {
                if !first {
                    s.push(',');
                }
                first = false;
                json_str(&mut s, k);
                s.push(':');
                json_str(&mut s, &v);
            }
            s.push_str("}}");
        }
        s.push_str("]}");
    }
    s.push_str("]}");
    s.into_bytes()
}

/// The spans of the 512-span export (`export_512`), for `trace_id_offsets`.
pub fn export_512_spans() -> Vec<GenSpan> {
    spans(42, 512)
}

/// The 512-span export of the benches: (OTLP protobuf, v1 JSON) of the same spans.
pub fn export_512() -> (Vec<u8>, Vec<u8>) {
    let spans = export_512_spans();
    (otlp_protobuf(&spans), v1_json(&spans))
}

/// Where the 16 trace-id bytes of every span sit in `body`, the `otlp_protobuf` of `spans`,
/// each with the index of its trace (0 for the first trace id, 1 for the next, ...), so a load
/// generator can give every export trace ids of its own without re-encoding it. Each span's
/// id is its first field (tag `0x0a`, length 16), found in span order.
pub fn trace_id_offsets(body: &[u8], spans: &[GenSpan]) -> Vec<(usize, u32)> {
    let mut out = Vec::with_capacity(spans.len());
    let (mut from, mut trace, mut last) = (0, 0u32, None);
    for s in spans {
        let mut needle = vec![0x0a, 16];
        needle.extend_from_slice(&s.trace_id);
        let at = from
            + body[from..]
                .windows(needle.len())
                .position(|w| w == needle)
                .expect("every span's trace id is in its protobuf");
        if last.is_some_and(|l| l != s.trace_id) {
            trace += 1;
        }
        last = Some(s.trace_id);
        out.push((at + 2, trace));
        from = at + needle.len();
    }
    out
}
