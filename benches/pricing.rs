//! Criterion bench of pricing per span: with the (provider, modelId) match cached (the request
//! path; target < 100 ns per span) and, for comparison, with an uncached match.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use traceingest::ingest::wire::Usage;
use traceingest::pricing::{Pricer, SharedPrices};

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

/// Prices a mix of typical spans: Azure, Anthropic, Bedrock, Vertex with a long-context call.
fn pricing(c: &mut Criterion) {
    let shared = SharedPrices::builtin();
    let table = shared.current();
    let spans = [
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
    ];
    let mut pricer = Pricer::new();
    for (p, m, u) in &spans {
        pricer
            .price(&table, *p, Some(m), Some(u), START_MS)
            .unwrap();
    }

    let mut g = c.benchmark_group("pricing");
    g.throughput(Throughput::Elements(spans.len() as u64));
    g.bench_function("cached_match", |b| {
        b.iter(|| {
            for (p, m, u) in &spans {
                let r = pricer.price(
                    &table,
                    black_box(*p),
                    black_box(Some(m)),
                    Some(u),
                    black_box(START_MS),
                );
                black_box(r.ok());
            }
        })
    });
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
criterion_main!(benches);
