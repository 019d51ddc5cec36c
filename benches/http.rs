//! Criterion bench of HTTP framing: parsing a client's request head, and de-chunking a 1 MB
//! body in place (the cost a chunked upload adds before the JSON is looked at).

use std::hint::black_box;

#[path = "../perf/fixtures.rs"]
mod fixtures;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use traceingest::http::request::{parse_head, ChunkedDecoder, Limits, Parsed};

/// The head an SDK sends with a 1 MB batch.
fn head(content_length: usize) -> Vec<u8> {
    format!(
        "POST /ingest HTTP/1.1\r\n\
         Host: ingest.example.com\r\n\
         User-Agent: traceingest-sdk-node/1.4.2 (linux; node 22.11.0)\r\n\
         Content-Type: application/json\r\n\
         Authorization: Bearer ti_4fJq9ZtR2mXv8LbN0cKp7WsYd3HgE6aUo1iTn5QeVrB\r\n\
         Content-Length: {content_length}\r\n\
         Accept: application/json\r\n\
         Accept-Encoding: gzip, deflate, br\r\n\
         X-Request-Id: 5b0d1c3e-8f2a-4c6b-9e7d-1a2b3c4d5e6f\r\n\
         Connection: keep-alive\r\n\r\n"
    )
    .into_bytes()
}

/// The body in 16 KiB chunks, as a streaming client sends it.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 1000 + 16);
    for chunk in body.chunks(16 * 1024) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn http(c: &mut Criterion) {
    let limits = Limits::default();
    let body = fixtures::typical();
    let head = head(body.len());

    let mut g = c.benchmark_group("http");
    g.throughput(Throughput::Bytes(head.len() as u64));
    g.bench_function("parse_head", |b| {
        b.iter(|| match parse_head(black_box(&head), &limits) {
            Ok(Parsed::Complete(h)) => h.len,
            _ => unreachable!("the head is complete and valid"),
        })
    });

    let raw = chunked(&body);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("dechunk_typical", |b| {
        b.iter_batched_ref(
            || raw.clone(),
            |region| {
                let mut d = ChunkedDecoder::default();
                match d.advance(region, limits.max_body_bytes) {
                    Ok(Parsed::Complete(done)) => done.body_len,
                    _ => unreachable!("the body is complete"),
                }
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, http);
criterion_main!(benches);
