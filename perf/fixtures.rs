//! Seeded generator of realistic v1 batches: the fixtures for benches, load runs and fuzz seeds.
//!
//! No dependencies, so benches, tests, the load generator and the fuzz corpus writer can all
//! include it with `#[path]`. The same seed always gives the same bytes. Every batch is valid
//! under the v1 schema and has what real clients send: JSON escapes (`\n`, `\"`, `\\`, `\t`,
//! `\u00e9`, an escaped surrogate pair), non-ASCII text (accents, CJK, emoji), trace and span
//! metadata, usage with cached and reasoning tokens, rate-limit headers, error spans, tool and
//! embedding spans, and the fields newer v1 clients add (`customer`, `chunkJitter`).

#![allow(dead_code)]

/// xorshift64*: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
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
    "résumé",
    "données",
    "東京",
    "数据",
    "🚀",
    "👍",
    "tool",
    "call",
    "weather",
    "Berlin",
    "JSON",
    "function",
    "arguments",
    "assistant",
    "user",
    "system",
    "context",
    "window",
    "tokens",
    "and",
    "is",
    "to",
    "in",
    "for",
    "with",
    "please",
    "answer",
    "customer",
    "order",
    "refund",
    "Straße",
    "größer",
    "Привет",
    "مرحبا",
    "→",
    "€",
    "C:\\temp",
    "{\"k\": 1}",
    "tab\there",
];

const MODELS: &[(&str, &str)] = &[
    ("openai.chat", "gpt-4o"),
    ("openai.chat", "gpt-4o-mini-2024-07-18"),
    ("anthropic.messages", "claude-sonnet-4-5-20250929"),
    ("anthropic.messages", "claude-3-5-haiku-latest"),
    ("google-vertex", "gemini-2.5-pro"),
    ("azure", "gpt-4o-2024-08-06"),
    (
        "amazon-bedrock",
        "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
    ),
    ("mistral", "mistral-large-latest"),
    ("xai", "grok-4"),
    ("deepseek", "deepseek-chat"),
    ("openai.chat", "o3-mini"),
    ("acme", "in-house-model-v2"),
];

const EMBEDDING_MODELS: &[(&str, &str)] = &[
    ("openai.embeddings", "text-embedding-3-small"),
    ("cohere", "embed-english-v3.0"),
];

/// Escape sequences that stand for text, inserted verbatim into the JSON.
const RAW_ESCAPES: &[&str] = &["\\u00e9", "\\ud83d\\ude00", "\\/", "\\u2014"];

/// Appends `s` as a JSON string body (without quotes), escaping what JSON requires.
fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// JSON string body of prose of about `len` bytes: words (some non-ASCII), newlines, quotes,
/// backslashes, tabs and a few `\u` escapes.
fn text(rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 32);
    let mut word = String::new();
    while out.len() < len {
        word.clear();
        word.push_str(rng.pick(WORDS));
        match rng.below(24) {
            0 => word.push('\n'),
            1 => word.push_str(" \"quoted\" "),
            _ => word.push(' '),
        }
        push_escaped(&mut out, &word);
        if rng.below(40) == 0 {
            out.push_str(rng.pick(RAW_ESCAPES));
            out.push(' ');
        }
    }
    out
}

/// A short JSON string body without escapes.
fn word(rng: &mut Rng) -> &'static str {
    rng.pick(&["alpha", "beta", "gamma", "delta", "eval", "prod", "canary"])
}

/// One batch of `traces` traces with `spans` spans each; about `text_len` bytes of input and
/// `text_len / 2` of output per llm span.
pub fn batch(seed: u64, traces: usize, spans: usize, text_len: usize) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut rng = Rng::new(seed);
    let mut s = String::with_capacity(traces * spans * (text_len * 2 + 700) + 64);
    s.push_str("{\"version\":\"v1\",\"traces\":[");
    for t in 0..traces {
        if t > 0 {
            s.push(',');
        }
        let trace_id = rng.next();
        let _ = write!(
            s,
            "{{\"traceId\":\"tr-{trace_id:016x}\",\"traceName\":\"support-chat \\u2014 {}\",\"agentName\":\"helper\",\
             \"sessionId\":\"sess-{}\",\"metadata\":{{\"env\":\"prod\",\"region\":\"eu-west-1\",\"tenant\":\"t{}\",\"locale\":\"fr-FR\"}}",
            word(&mut rng),
            rng.below(1000),
            rng.below(50)
        );
        if t % 3 == 0 {
            let _ = write!(
                s,
                ",\"workflowName\":\"refund-flow\",\"workflowRunId\":\"run-{:08x}\"",
                rng.next() as u32
            );
        }
        if t % 4 == 1 {
            let _ = write!(
                s,
                ",\"customer\":{{\"id\":\"cus_{:06}\",\"name\":\"Zoë Müller\",\"imageUrl\":\"https://cdn.example.com/u/{}.png\"}}",
                rng.below(1_000_000),
                rng.below(1000)
            );
        }
        s.push_str(",\"spans\":[");
        let start = 1_760_000_000_000u64 + rng.below(1_000_000_000);
        for i in 0..spans {
            if i > 0 {
                s.push(',');
            }
            let st = start + i as u64 * 10;
            let kind = match (i, i % 8) {
                (0, _) => "agent",
                (_, 3) | (_, 6) => "tool",
                (_, 5) => "embedding",
                _ => "llm",
            };
            let _ = write!(
                s,
                "{{\"spanId\":\"sp-{:016x}\",\"spanType\":\"{kind}\",\"name\":\"step {i}: {}\",\"startTime\":{st},\"endTime\":{}",
                rng.next(),
                word(&mut rng),
                st + 5 + rng.below(3000)
            );
            if i > 0 {
                let _ = write!(s, ",\"parentSpanId\":\"sp-parent-{t}\"");
            }
            match kind {
                "llm" => {
                    let (provider, model) = MODELS[rng.below(MODELS.len() as u64) as usize];
                    let input = 100 + rng.below(20_000);
                    let output = rng.below(2000);
                    let _ = write!(
                        s,
                        ",\"provider\":\"{provider}\",\"modelId\":\"{model}\",\"usage\":{{\"inputTokens\":{input},\"outputTokens\":{output},\
                         \"cachedInputTokens\":{},\"reasoningTokens\":{},\"totalTokens\":{}}},\"ttftMs\":{}.{},\"modelCallMs\":{},\
                         \"input\":\"{}\",\"output\":\"{}\",\"systemFingerprint\":\"fp_{:010x}\",\
                         \"chunkOffsets\":[1,5,9,14,22,31],\"chunkTokens\":[3,4,4,5,8,9],\
                         \"rateLimit\":{{\"requestsLimit\":10000,\"requestsRemaining\":{},\"tokensLimit\":2000000,\"tokensRemaining\":{}}},\
                         \"metadata\":{{\"prompt_version\":\"v{}\",\"env\":\"staging\"}}",
                        rng.below(input / 2),
                        rng.below(output / 4 + 1),
                        input + output,
                        rng.below(900),
                        rng.below(10),
                        rng.below(9000),
                        text(&mut rng, text_len),
                        text(&mut rng, text_len / 2),
                        rng.next() >> 24,
                        rng.below(10_000),
                        rng.below(2_000_000),
                        rng.below(9)
                    );
                    if rng.below(10) == 0 {
                        s.push_str(",\"status\":\"error\",\"errorMessage\":\"429 Too Many Requests: \\\"rate limit\\\" reached\"");
                    }
                    if rng.below(4) == 0 {
                        let _ = write!(
                            s,
                            ",\"responseTimeMs\":{},\"outputTps\":{}.5,\"chunkJitter\":{{\"min\":0.5,\"p10\":1,\"median\":2.5,\"avg\":3.1,\"p90\":7,\"max\":{}}}",
                            rng.below(9000),
                            rng.below(200),
                            10 + rng.below(90)
                        );
                    }
                }
                "embedding" => {
                    let (provider, model) =
                        EMBEDDING_MODELS[rng.below(EMBEDDING_MODELS.len() as u64) as usize];
                    let _ = write!(
                        s,
                        ",\"provider\":\"{provider}\",\"modelId\":\"{model}\",\"usage\":{{\"inputTokens\":{}}},\"input\":\"{}\"",
                        1 + rng.below(500),
                        text(&mut rng, text_len / 4)
                    );
                }
                "tool" => {
                    let _ = write!(
                        s,
                        ",\"input\":\"{}\",\"output\":\"{}\",\"metadata\":{{\"tool\":\"{}\"}}",
                        text(&mut rng, 60),
                        text(&mut rng, 120),
                        word(&mut rng)
                    );
                }
                _ => {}
            }
            s.push('}');
        }
        s.push_str("]}");
    }
    s.push_str("]}");
    s.into_bytes()
}

/// Spans per trace in every fixture below.
pub const SPANS_PER_TRACE: usize = 20;

/// 1 trace x 5 spans, about 2.8 KB (the three llm spans carry usage, rate limits and metadata
/// even with short texts).
pub fn small() -> Vec<u8> {
    batch(1, 1, 5, 20)
}

/// What real SDKs send: 1 trace x 3 spans (an agent span and two model calls with usage, rate
/// limits and metadata, short texts), about 1.7 KB: the per-request cost at moderate rates of
/// issue 18 (`open-sdk` in `perf/loadgen.rs`).
pub fn sdk() -> Vec<u8> {
    batch(1, 1, 3, 10)
}

/// Spans in `sdk`.
pub const SDK_SPANS: usize = 3;

/// 50 traces x 20 spans with realistic prompts and outputs, about 1 MB.
pub fn typical() -> Vec<u8> {
    batch(2, 50, SPANS_PER_TRACE, 500)
}

/// Near the 10 MiB body cap (about 98% of it): 505 traces x 20 spans like `typical`.
pub fn large() -> Vec<u8> {
    batch(3, LARGE_TRACES, SPANS_PER_TRACE, 500)
}

/// Traces in `large`.
pub const LARGE_TRACES: usize = 505;

/// Spans in a batch made by `batch`.
pub fn span_count(traces: usize, spans: usize) -> usize {
    traces * spans
}

/// Where the 16 hex digits of every `traceId` of a fixture start, for `stamp`.
pub fn trace_id_offsets(body: &[u8]) -> Vec<usize> {
    offsets_after(body, b"\"traceId\":\"tr-")
}

/// Where the text after every occurrence of `needle` starts: for `stamp` on bodies whose ids
/// are written differently (the OTLP export's v1 twin has 32 hex digits after `"traceId":"`).
pub fn offsets_after(body: &[u8], needle: &[u8]) -> Vec<usize> {
    body.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i + needle.len())
        .collect()
}

/// Rewrites every trace id of a fixture (same length) so that batch `n` has trace ids no other
/// batch has: load runs send every span once, so the table's deduplication never hides rows.
/// The ids look random, as real clients' (random 128-bit ids) do: a counter would hand
/// ClickHouse blocks already sorted by trace id, which real traffic never does.
pub fn stamp(body: &mut [u8], offsets: &[usize], n: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, &at) in offsets.iter().enumerate() {
        let id = stamp_id(n, i as u64);
        for d in 0..16 {
            body[at + d] = HEX[((id >> (60 - 4 * d)) & 15) as usize];
        }
    }
}

/// The 64 bits `stamp` writes for trace `i` of batch `n`: 40 bits of batch number, 24 bits of
/// trace index, mixed by a bijection (splitmix64's finaliser), so ids stay unique and look
/// random.
pub fn stamp_id(n: u64, i: u64) -> u64 {
    let mut id = (n << 24) | (i & 0xFF_FFFF);
    id = (id ^ (id >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    id = (id ^ (id >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    id ^ (id >> 31)
}
