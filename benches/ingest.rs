//! Criterion benches of the request path on the three fixtures, each stage on its own and the
//! whole path, next to simd-json's own parse of the same bytes (the reference line).
//!
//! Per fixture (group `ingest_<fixture>`, throughput in body bytes):
//! - `simd_json_tape`: `simd_json::fill_tape` with reused buffers, the least any JSON reader of
//!   this body can do on this machine;
//! - `decode_validate`: `Decoder::decode` (parse + schema walk into the arena);
//! - `build_rows`: pricing and row building from an already decoded batch;
//! - `whole_path`: `Pipeline::ingest`, body bytes to a `RowBatch` handed over a real crossbeam
//!   channel to a thread that drains it, as the flush thread does. No network.
//!
//! Every routine gets a fresh copy of the body (parsing unescapes in place); making the copy is
//! not timed. `decode_validate` and `whole_path` get it as the connection hands it over, with
//! simd-json's padding after it (`PaddedBody`), and parse it there; `simd_json_tape` gets it
//! bare, and `fill_tape` copies it into a padded buffer of its own. malloc is set up as `serve` sets it up (`keep_freed_memory`): with glibc's
//! defaults each iteration's 2 MB `RowBatch` was fresh pages, and `build_rows` measured the
//! kernel's page faults (0.58 ms per 1 MB fixture) instead of building rows (0.10 ms).

use std::hint::black_box;
use std::sync::Arc;

#[path = "../perf/fixtures.rs"]
mod fixtures;

use bumpalo::Bump;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use simd_json::{Buffers, Node, Tape};
use traceingest::auth::Principal;
use traceingest::http::response::LimitHeaders;
use traceingest::ingest::body::{PaddedBody, BODY_PADDING};
use traceingest::ingest::compress::Encoding;
use traceingest::ingest::v1::Decoder;
use traceingest::ingest::{rows, BatchLimit, Pipeline};
use traceingest::pricing::Pricer;
use traceingest::row::RowBatch;
use traceingest::server::Shared;
use traceingest::sink::Handoff;

const NOW_MS: u64 = 1_760_000_000_000;

fn principal() -> Principal {
    Principal::unlimited("org-bench", "project-bench")
}

fn ingest(c: &mut Criterion) {
    // The server's malloc settings (`serve` makes the same call): without them every
    // iteration's `RowBatch` is fresh pages from the kernel, which the server does not pay.
    traceingest::server::keep_freed_memory();
    let shared = Arc::new(Shared::for_bench());
    let (sender, receiver) = crossbeam_channel::unbounded::<RowBatch>();
    // Stands in for the flush thread: takes each batch, gives its rows back to the buffer count
    // and drops it.
    let drain = {
        let shared = shared.clone();
        std::thread::spawn(move || {
            for batch in receiver {
                shared
                    .budget
                    .release(batch.len() as u64, batch.heap_bytes() as u64);
            }
        })
    };
    let mut pipeline =
        Pipeline::new(shared.pipeline_parts(Handoff::buffer(shared.budget.clone(), sender)));
    let principal = principal();

    for (name, body, size) in [
        ("small", fixtures::small(), BatchSize::SmallInput),
        ("typical", fixtures::typical(), BatchSize::PerIteration),
        ("large", fixtures::large(), BatchSize::PerIteration),
    ] {
        let mut g = c.benchmark_group(format!("ingest_{name}"));
        g.throughput(Throughput::Bytes(body.len() as u64));
        if name == "large" {
            g.sample_size(20);
        }

        let mut buffers = Buffers::default();
        let mut tape_store: Vec<Node<'static>> = Vec::new();
        g.bench_function("simd_json_tape", |b| {
            b.iter_batched_ref(
                || body.clone(),
                |input| {
                    let mut tape: Tape<'_> = Tape(std::mem::take(&mut tape_store)).reset();
                    simd_json::fill_tape(input, &mut buffers, &mut tape).expect("valid JSON");
                    black_box(tape.0.len());
                    tape_store = tape.reset().0;
                },
                size,
            )
        });

        let len = body.len();
        let padded = {
            let mut p = body.clone();
            p.resize(len + BODY_PADDING, b' ');
            p
        };
        let mut decoder = Decoder::new();
        let mut arena = Bump::new();
        g.bench_function("decode_validate", |b| {
            b.iter_batched_ref(
                || padded.clone(),
                |input| {
                    arena.reset();
                    let input = PaddedBody::new(input, len);
                    let batch = decoder.decode(input, &arena).expect("valid batch");
                    black_box(batch.span_count);
                },
                size,
            )
        });

        {
            let mut input = padded.clone();
            let arena = Bump::new();
            let batch = decoder
                .decode(PaddedBody::new(&mut input, len), &arena)
                .expect("valid batch");
            let table = shared.prices.current();
            let mut pricer = Pricer::new();
            let mut scratch = Bump::new();
            g.bench_function("build_rows", |b| {
                b.iter(|| {
                    scratch.reset();
                    rows::build(
                        &batch,
                        &principal,
                        &table,
                        &mut pricer,
                        NOW_MS,
                        BatchLimit::NONE,
                        &scratch,
                    )
                    .expect("prices fit")
                })
            });
        }

        g.bench_function("whole_path", |b| {
            b.iter_batched_ref(
                || padded.clone(),
                |input| {
                    let mut limits = LimitHeaders::default();
                    let handed = pipeline
                        .ingest_v1(
                            &principal,
                            PaddedBody::new(input, len),
                            Encoding::Identity,
                            usize::MAX,
                            &mut limits,
                        )
                        .expect("accepted");
                    let _ = black_box(handed);
                },
                size,
            )
        });
        g.finish();
    }
    drop(pipeline);
    drain.join().expect("drain thread");
}

criterion_group!(benches, ingest);
criterion_main!(benches);
