//! Criterion bench of pricing per span: with the (provider, modelId) match cached (the request
//! path; target < 100 ns per span), the same for models with dated prices, and, for
//! comparison, with an uncached match.
//!
//! On a busy machine wall-clock figures drift; instruction counts do not. With
//! `PRICING_ITERATIONS=N` set the binary prices the cached mix N times in `price_mix` and
//! exits, for callgrind:
//!
//! ```text
//! PRICING_ITERATIONS=100000 valgrind --tool=callgrind --collect-atstart=no \
//!     --toggle-collect='*price_mix*' target/release/deps/pricing-<hash>
//! ```
//!
//! (instructions / N / 4 = per span; `PRICING_MIX=dated` for the dated mix).

use std::hint::black_box;

use criterion::{criterion_group, Criterion, Throughput};
use traceingest::ingest::wire::Usage;
use traceingest::pricing::{PriceTable, Pricer, SharedPrices};

/// A usage object with the given input, cached and output tokens.
fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        total_tokens: Some(input + output),
        cached_input_tokens: Some(cached),
        ..Usage::default()
    }
}

/// When the spans started: 2026-11-24 12:00 UTC (epoch ms).
const START_MS: u64 = 1_795_521_600_000;

/// (provider, modelId, usage) of one span.
type Call = (Option<&'static str>, &'static str, Usage);

/// A mix of typical spans: Azure, Anthropic, Bedrock, Vertex with a long-context call.
fn typical() -> [Call; 4] {
    [
        (Some("azure"), "gpt-4o-2024-08-06", usage(1200, 200, 300)),
        (
            Some("anthropic.messages"),
            "claude-sonnet-4-5-20250929",
            usage(5000, 4000, 800),
        ),
        (
            Some("amazon-bedrock"),
            "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
            usage(900, 0, 150),
        ),
        (
            Some("google-vertex"),
            "gemini-2.5-pro",
            usage(250_000, 100_000, 2000),
        ),
    ]
}

/// Models with dated prices: two periods and a tier (Luna, above 272K), five periods and a
/// daily window (deepseek-chat), a price change to come (Gemini 3.6 Flash), image output.
fn dated() -> [Call; 4] {
    [
        (Some("openai"), "gpt-5.6-luna", usage(300_000, 0, 1000)),
        (Some("deepseek"), "deepseek-chat", usage(5000, 4000, 800)),
        (Some("google"), "gemini-3.6-flash", usage(900, 0, 150)),
        (
            Some("google"),
            "gemini-2.5-flash-image",
            usage(100, 0, 2000),
        ),
    ]
}

/// Prices `spans` once each, `n` times, through a warm cache: the loop callgrind counts.
#[inline(never)]
fn price_mix(pricer: &mut Pricer, table: &PriceTable, spans: &[Call], n: u64) {
    for _ in 0..n {
        for (p, m, u) in spans {
            let r = pricer.price(table, black_box(*p), black_box(Some(m)), Some(u), START_MS);
            black_box(r.ok());
        }
    }
}

fn pricing(c: &mut Criterion) {
    let shared = SharedPrices::builtin();
    let table = shared.current();
    let mut g = c.benchmark_group("pricing");
    for (name, spans) in [("cached_match", typical()), ("cached_match_dated", dated())] {
        let mut pricer = Pricer::new();
        price_mix(&mut pricer, &table, &spans, 1);
        g.throughput(Throughput::Elements(spans.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| price_mix(&mut pricer, &table, &spans, 1))
        });
    }
    let spans = typical();
    g.bench_function("uncached_match", |b| {
        b.iter(|| {
            for (p, m, u) in &spans {
                let model = table.find(black_box(*p), black_box(m));
                black_box(model.map(|m| m.costs(Some(u), START_MS)));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, pricing);

fn main() {
    if let Some(n) = std::env::var("PRICING_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        let shared = SharedPrices::builtin();
        let table = shared.current();
        let mut pricer = Pricer::new();
        let dated_mix = std::env::var("PRICING_MIX").is_ok_and(|m| m == "dated");
        let spans = if dated_mix { dated() } else { typical() };
        price_mix(&mut pricer, &table, &spans, 1);
        price_mix(&mut pricer, &table, &spans, n);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
