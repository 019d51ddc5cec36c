//! Token counts and client-reported costs in v1 meanings: which dialect a span's usage is read
//! from, how its counts translate into v1's, and exact money from the digits the client wrote.

use super::keys::{Bucket, Dialect};
use super::raw::Value;
use crate::ingest::wire::Usage;
use crate::pricing::MAX_MONEY;
use crate::row::Money;

/// Buckets per dialect (`keys::Bucket`).
const BUCKETS: usize = 6;

/// The token counts one span reported: per dialect and bucket, the best-ranked (lowest) name's.
#[derive(Default)]
pub struct Reported([[Option<(u8, u64)>; BUCKETS]; 3]);

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
    ///
    /// Every dialect counts cache reads and cache writes inside its input and reasoning inside
    /// its output (the GenAI conventions say so; OpenInference's details and the AI SDK's
    /// cached count are parts of their totals). v1's input includes cache reads but not
    /// writes, so input = input - writes, and output and reasoning stay. A client that counted
    /// input without the cache (Anthropic's own usage fields: input below reads + writes,
    /// impossible if inclusive) gets input + reads instead; likewise output below reasoning
    /// means output + reasoning.
    pub fn usage(&self) -> Option<Usage> {
        const ORDER: [Dialect; 3] = [Dialect::AiSdk, Dialect::OpenInference, Dialect::GenAi];
        let has = |d: Dialect| {
            self.get(d, Bucket::Input).is_some() || self.get(d, Bucket::Output).is_some()
        };
        let dialect = ORDER.into_iter().find(|&d| has(d)).or_else(|| {
            ORDER
                .into_iter()
                .find(|&d| self.0[d as usize].iter().any(Option::is_some))
        })?;
        let get = |b: Bucket| self.get(dialect, b);
        let (read, write) = (get(Bucket::CacheRead), get(Bucket::CacheWrite));
        let reasoning = get(Bucket::Reasoning);
        let cache = read.unwrap_or(0).saturating_add(write.unwrap_or(0));
        let input = get(Bucket::Input).map(|i| {
            if i >= cache {
                i - write.unwrap_or(0)
            } else {
                i.saturating_add(read.unwrap_or(0))
            }
        });
        let output = get(Bucket::Output).map(|o| match reasoning {
            Some(r) if o < r => o.saturating_add(r),
            _ => o,
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
