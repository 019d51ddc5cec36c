//! Token counts and client-reported costs in v1 meanings: which dialect a span's usage is read
//! from, whether its instrumentation counted the cache inside its input (and reasoning inside
//! its output), and exact money from the digits the client wrote.
//!
//! v1's `inputTokens` includes cache reads and excludes cache writes; `outputTokens` includes
//! reasoning. The GenAI conventions count both cache reads and writes inside
//! `gen_ai.usage.input_tokens` and reasoning inside `output_tokens`, and so do most
//! instrumentations (OpenLLMetry, OpenInference, Pydantic AI, Logfire and the AI SDK v6 add
//! Anthropic's separate cache counts to its `input_tokens`). Some pass a provider's own count
//! on unchanged, which leaves the cache out (Anthropic's and Amazon Bedrock's `input_tokens`)
//! or reasoning out (Gemini's `candidatesTokenCount`); `Counting::of` tells them apart, and
//! `docs/otlp.md` lists the rules and the instrumentations checked.

use super::keys::{Bucket, Dialect};
use super::raw::Value;
use crate::ingest::wire::Usage;
use crate::pricing::MAX_MONEY;
use crate::row::Money;

/// Buckets per dialect (`keys::Bucket`).
const BUCKETS: usize = 7;

/// Instrumentation scopes that pass the provider's own input count on, Amazon Bedrock's
/// `inputTokens` (and, on InvokeModel, Anthropic's `input_tokens`): it excludes cache reads and
/// writes, which they report next to it. (OpenLLMetry's Bedrock instrumentation; OpenInference's,
/// Python and JS: but see `OPENINFERENCE_BEDROCK`.) Strands Agents is not one: it passes each
/// model provider's count (Bedrock's without the cache, OpenAI's and LiteLLM's with it) and its
/// total, which says which (Bedrock's `totalTokens` counts the cache).
const INPUT_WITHOUT_CACHE_SCOPES: [&str; 3] = [
    "opentelemetry.instrumentation.bedrock",
    OPENINFERENCE_BEDROCK,
    "@arizeai/openinference-instrumentation-bedrock",
];

/// OpenInference's Python Bedrock instrumentation, which adds Anthropic's cache counts to its
/// input on InvokeModel for a Claude model: the one path where it sets `llm.system`
/// (`anthropic`). Its Converse and other InvokeModel paths pass Bedrock's count on.
const OPENINFERENCE_BEDROCK: &str = "openinference.instrumentation.bedrock";

/// The token counts one span reported: per dialect and bucket, the best-ranked (lowest) name's.
#[derive(Default)]
pub struct Reported([[Option<(u8, u64)>; BUCKETS]; 3]);

/// Where a span's counts came from: what decides how they were counted.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The instrumentation scope's name.
    pub scope: &'a str,
    /// The span's provider (best-ranked provider attribute).
    pub provider: Option<&'a str>,
    /// The span's `llm.system` (OpenInference), whatever provider ranked better.
    pub llm_system: Option<&'a str>,
}

/// How one span's instrumentation counted: whether its input leaves the cache out, and
/// whether its output leaves reasoning out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Counting {
    input_without_cache: bool,
    output_without_reasoning: bool,
}

impl Reported {
    #[inline]
    pub fn offer(&mut self, d: Dialect, b: Bucket, rank: u8, n: u64) {
        let slot = &mut self.0[d as usize][b as usize];
        if slot.is_none_or(|(r, _)| rank <= r) {
            *slot = Some((rank, n));
        }
    }

    fn get(&self, d: Dialect, b: Bucket) -> Option<u64> {
        self.0[d as usize][b as usize].map(|(_, n)| n)
    }

    /// The span's usage in v1 meanings, from one dialect: the AI SDK's if the span has its
    /// input or output counts, else OpenInference's, else GenAI's (else the first with any
    /// count).
    pub fn usage(&self, origin: Origin<'_>) -> Option<Usage> {
        const ORDER: [Dialect; 3] = [Dialect::AiSdk, Dialect::OpenInference, Dialect::GenAi];
        let has =
            |d: Dialect, buckets: &[Bucket]| buckets.iter().any(|&b| self.get(d, b).is_some());
        let dialect = ORDER
            .into_iter()
            .find(|&d| has(d, &[Bucket::Input, Bucket::Output]))
            .or_else(|| {
                ORDER
                    .into_iter()
                    .find(|&d| self.0[d as usize].iter().any(Option::is_some))
            })?;
        let get = |b: Bucket| self.get(dialect, b);
        let (read, write) = (get(Bucket::CacheRead), get(Bucket::CacheWrite));
        let reasoning = get(Bucket::Reasoning);
        let counting = Counting::of(self, dialect, origin);
        let input = match get(Bucket::NoCache) {
            // The AI SDK v6 says how many input tokens missed the cache: exact.
            Some(no_cache) => Some(no_cache.saturating_add(read.unwrap_or(0))),
            None => get(Bucket::Input).map(|i| {
                if counting.input_without_cache {
                    i.saturating_add(read.unwrap_or(0))
                } else {
                    i.saturating_sub(write.unwrap_or(0))
                }
            }),
        };
        let output = get(Bucket::Output).map(|o| {
            if counting.output_without_reasoning {
                o.saturating_add(reasoning.unwrap_or(0))
            } else {
                o
            }
        });
        Some(Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: get(Bucket::Total),
            reasoning_tokens: reasoning,
            cached_input_tokens: read,
            cache_write_input_tokens: write,
            ..Usage::default()
        })
    }
}

impl Counting {
    /// How `dialect`'s counts on this span were counted. The conventions' way (cache inside
    /// input, reasoning inside output) unless one of these says otherwise:
    ///
    /// 1. the instrumentation is known to pass a count that leaves them out:
    ///    `INPUT_WITHOUT_CACHE_SCOPES` (not OpenInference's Python Bedrock instrumentation's
    ///    Claude spans, `OPENINFERENCE_BEDROCK`); the AI SDK before v6 (no `inputTokenDetails`), whose
    ///    counts are the provider's own: Anthropic's and Bedrock's input without the cache,
    ///    Google's output without reasoning;
    /// 2. the reported total is the sum of the parts only if they are left out (an inclusive
    ///    count's total is input + output);
    /// 3. the counts are impossible the other way: input below its cache reads + writes,
    ///    output below its reasoning.
    fn of(r: &Reported, dialect: Dialect, origin: Origin<'_>) -> Counting {
        let get = |b: Bucket| r.get(dialect, b);
        let cache = get(Bucket::CacheRead)
            .unwrap_or(0)
            .saturating_add(get(Bucket::CacheWrite).unwrap_or(0));
        let reasoning = get(Bucket::Reasoning).unwrap_or(0);
        let (input, output) = (get(Bucket::Input), get(Bucket::Output));

        let mut c = Counting::default();
        let claude_invoke_model =
            origin.scope == OPENINFERENCE_BEDROCK && origin.llm_system == Some("anthropic");
        if INPUT_WITHOUT_CACHE_SCOPES.contains(&origin.scope) && !claude_invoke_model {
            c.input_without_cache = true;
        }
        if dialect == Dialect::AiSdk && get(Bucket::NoCache).is_none() {
            let provider = origin.provider.unwrap_or("");
            c.input_without_cache |=
                provider.contains("anthropic") || provider.starts_with("amazon-bedrock");
            c.output_without_reasoning |= provider.starts_with("google.");
        }
        if let (Some(i), Some(o), Some(total)) = (input, output, get(Bucket::Total)) {
            let by_total = by_total(i, o, total, cache, reasoning);
            c.input_without_cache |= by_total.input_without_cache;
            c.output_without_reasoning |= by_total.output_without_reasoning;
        }
        c.input_without_cache |= input.is_some_and(|i| i < cache);
        c.output_without_reasoning |= output.is_some_and(|o| o < reasoning);
        c
    }
}

/// What a total says: the one way of leaving parts out (cache from input, reasoning from
/// output) under which input + output + the parts left out is the total, if exactly one such
/// way exists and counting everything in does not fit as well.
fn by_total(input: u64, output: u64, total: u64, cache: u64, reasoning: u64) -> Counting {
    let sum = |c: Counting| {
        input
            .saturating_add(output)
            .saturating_add(if c.input_without_cache { cache } else { 0 })
            .saturating_add(if c.output_without_reasoning {
                reasoning
            } else {
                0
            })
    };
    if sum(Counting::default()) == total {
        return Counting::default();
    }
    let mut fits = [(true, false), (false, true), (true, true)]
        .into_iter()
        .map(|(i, o)| Counting {
            input_without_cache: i,
            output_without_reasoning: o,
        })
        // A part that is zero leaves nothing out: that way is the inclusive one.
        .filter(|c| {
            (!c.input_without_cache || cache > 0) && (!c.output_without_reasoning || reasoning > 0)
        })
        .filter(|&c| sum(c) == total);
    match (fits.next(), fits.next()) {
        (Some(c), None) => c,
        _ => Counting::default(),
    }
}

/// A token count: a non-negative integer, as an integer, an integral double or a decimal
/// string (JSON clients send 64-bit integers as strings).
pub fn count(v: &Value<'_>) -> Option<u64> {
    match *v {
        Value::Int(i) => u64::try_from(i).ok(),
        Value::Double(d) if d >= 0.0 && d.fract() == 0.0 && d < 1.8e19 => Some(d as u64),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A cost in USD as exact money (units of 1e-10 USD, half-up): from the decimal digits the
/// client wrote (a double's shortest representation), never through float arithmetic.
pub fn money(v: &Value<'_>) -> Option<Money> {
    let mut buf = [0u8; 40];
    let text: &str = match *v {
        Value::Str(s) => s.trim(),
        Value::Int(i) => {
            let units = i.checked_mul(10_000_000_000)?;
            return (0..=MAX_MONEY).contains(&units).then_some(units);
        }
        // Below half a unit: zero (and Display would write hundreds of digits).
        Value::Double(d) if (0.0..5e-11).contains(&d) => return Some(0),
        Value::Double(d) if (0.0..1e8).contains(&d) => {
            use std::io::Write;
            let mut w = &mut buf[..];
            write!(w, "{d}").ok()?;
            let len = 40 - w.len();
            std::str::from_utf8(&buf[..len]).ok()?
        }
        _ => return None,
    };
    decimal_units(text)
}

/// `123.45678901234` -> units of 1e-10, rounded half-up; `None` if not a plain non-negative
/// decimal or past `Decimal(18, 10)`.
fn decimal_units(s: &str) -> Option<Money> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let int = int.trim_start_matches('0');
    if int.len() > 8 {
        return None;
    }
    let mut units: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    for i in 0..10 {
        let d = frac.as_bytes().get(i).map_or(0, |b| b - b'0');
        units = units * 10 + i64::from(d);
    }
    if frac.as_bytes().get(10).is_some_and(|&b| b >= b'5') {
        units += 1;
    }
    (units <= MAX_MONEY).then_some(units)
}
