//! Seeded generator of realistic v1 batches: the fixtures for benches, load runs and fuzz seeds.
//!
//! No dependencies, so benches, the load generator and the fuzz corpus writer can all include it
//! with `#[path]`. The same seed always gives the same bytes.

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
    "the", "model", "returned", "a", "summary", "of", "quarterly", "revenue", "café", "naïve",
    "résumé", "données", "東京", "数据", "🚀", "👍", "tool", "call", "weather", "Berlin", "JSON",
    "function", "arguments", "assistant", "user", "system", "context", "window", "tokens", "and",
];

const MODELS: &[(&str, &str)] = &[
    ("openai.chat", "gpt-4o"),
    ("openai.chat", "gpt-4o-mini-2024-07-18"),
    ("anthropic.messages", "claude-sonnet-4-5-20250929"),
    ("anthropic.messages", "claude-3-5-haiku-latest"),
    ("google-vertex", "gemini-2.5-pro"),
    ("azure", "gpt-4o-2024-08-06"),
    ("amazon-bedrock", "us.anthropic.claude-3-5-sonnet-20240620-v1:0"),
    ("mistral", "mistral-large-latest"),
    ("xai", "grok-4"),
    ("deepseek", "deepseek-chat"),
];

/// Appends `s` as a JSON string body (without quotes), escaping what JSON requires.
fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// Prose of about `len` bytes with newlines, quotes, an escaped é and non-ASCII words.
fn text(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 32);
    while s.len() < len {
        s.push_str(rng.pick(WORDS));
        match rng.below(20) {
            0 => s.push('\n'),
            1 => s.push_str(" \"quoted\" "),
            2 => s.push_str("\\u00e9 "),
            _ => s.push(' '),
        }
    }
    let mut out = String::with_capacity(s.len() + 16);
    // `\u00e9` above is meant literally in the JSON, so escape everything but that.
    for (i, part) in s.split("\\u00e9").enumerate() {
        if i > 0 {
            out.push_str("\\u00e9");
        }
        push_escaped(&mut out, part);
    }
    out
}

/// One batch of `traces` traces with `spans` spans each; `text_len` bytes of input and output
/// per llm span.
pub fn batch(seed: u64, traces: usize, spans: usize, text_len: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut s = String::with_capacity(traces * spans * (text_len * 2 + 600) + 64);
    s.push_str("{\"version\":\"v1\",\"traces\":[");
    for t in 0..traces {
        if t > 0 {
            s.push(',');
        }
        let trace_id = rng.next();
        s.push_str(&format!(
            "{{\"traceId\":\"tr-{trace_id:016x}\",\"traceName\":\"support-chat\",\"agentName\":\"helper\",\
             \"sessionId\":\"sess-{}\",\"metadata\":{{\"env\":\"prod\",\"region\":\"eu-west-1\",\"tenant\":\"t{}\"}},\"spans\":[",
            rng.below(1000),
            rng.below(50)
        ));
        let start = 1_760_000_000_000u64 + rng.below(1_000_000_000);
        for i in 0..spans {
            if i > 0 {
                s.push(',');
            }
            let st = start + i as u64 * 10;
            let kind = if i == 0 { "agent" } else if i % 4 == 3 { "tool" } else { "llm" };
            s.push_str(&format!(
                "{{\"spanId\":\"sp-{:016x}\",\"spanType\":\"{kind}\",\"name\":\"step {i}\",\"startTime\":{st},\"endTime\":{}",
                rng.next(),
                st + 5 + rng.below(3000)
            ));
            if i > 0 {
                s.push_str(&format!(",\"parentSpanId\":\"sp-parent-{t}\""));
            }
            if kind == "llm" {
                let (provider, model) = MODELS[rng.below(MODELS.len() as u64) as usize];
                let input = 100 + rng.below(20_000);
                s.push_str(&format!(
                    ",\"provider\":\"{provider}\",\"modelId\":\"{model}\",\"usage\":{{\"inputTokens\":{input},\"outputTokens\":{},\
                     \"cachedInputTokens\":{},\"totalTokens\":{}}},\"ttftMs\":{}.{},\"input\":\"{}\",\"output\":\"{}\",\
                     \"chunkOffsets\":[1,5,9,14],\"chunkTokens\":[3,4,4,5],\"metadata\":{{\"prompt_version\":\"v{}\"}}",
                    rng.below(2000),
                    rng.below(input / 2),
                    input + 100,
                    rng.below(900),
                    rng.below(10),
                    text(&mut rng, text_len),
                    text(&mut rng, text_len / 2),
                    rng.below(9)
                ));
            } else if kind == "tool" {
                s.push_str(&format!(",\"input\":\"{}\",\"output\":\"{}\"", text(&mut rng, 60), text(&mut rng, 120)));
            }
            s.push('}');
        }
        s.push_str("]}");
    }
    s.push_str("]}");
    s.into_bytes()
}

/// 1 trace x 5 spans, about 2 KB.
pub fn small() -> Vec<u8> {
    batch(1, 1, 5, 160)
}

/// 50 traces x 20 spans with realistic prompts and outputs, about 1 MB.
pub fn typical() -> Vec<u8> {
    batch(2, 50, 20, 600)
}

/// Near the 10 MiB body cap.
pub fn large() -> Vec<u8> {
    batch(3, 480, 20, 600)
}

/// Spans in a batch made by `batch`.
pub fn span_count(traces: usize, spans: usize) -> usize {
    traces * spans
}
