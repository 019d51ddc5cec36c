//! Criterion benches of the OTLP front end on a realistic 512-span export
//! (`perf/otlp_fixtures.rs`), next to prost and quick-protobuf on the same bytes and to the
//! v1 JSON path on the same spans. Throughput is in body bytes (uncompressed, except where a
//! bench says it reads the gzip body).
//!
//! Group `otlp_read_512` (the protobuf bytes):
//! - `reader`: our wire reader and schema walk, every span with its attributes, no mapping;
//! - `prost_decode`: `ExportTraceServiceRequest::decode` (opentelemetry-proto), a `String`
//!   and a `Vec` per field;
//! - `quick_protobuf`: quick-protobuf's generated reader (borrowed strings), code generated
//!   by pb-rs from opentelemetry-proto's `.proto` files (`benches/otlp_quick/`).
//!
//! Group `otlp_512` (the protobuf bytes): `decode_map` (`OtlpDecoder::decode_protobuf`),
//! `decode_map_rows` (plus pricing and `rows::build`, what the request path does after the
//! body is read). Group `otlp_512_gzip` (the same, gzip-compressed: throughput in *compressed*
//! bytes): `gunzip` alone and `gunzip_decode_map_rows`; `otlp_512_zstd/unzstd` likewise for
//! zstd (ruzstd's own encoder, fastest level). Group `v1_512` (the same spans as a v1
//! batch, its JSON bytes): `decode_validate_rows`, the v1 path's equivalent.

use std::hint::black_box;
use std::io::Write;

#[path = "../perf/otlp_fixtures.rs"]
#[rustfmt::skip]
mod otlp_fixtures;
mod otlp_quick;

use bumpalo::Bump;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use traceingest::auth::Principal;
use traceingest::ingest::body::{PaddedBody, BODY_PADDING};
use traceingest::ingest::compress::{Decompressor, Encoding};
use traceingest::ingest::otlp::{read_protobuf_spans, OtlpDecoder};
use traceingest::ingest::v1::Decoder;
use traceingest::ingest::{rows, BatchLimit};
use traceingest::pricing::{PriceTable, Pricer};

const NOW_MS: u64 = 1_760_000_000_000;
const CAP: usize = 64 << 20;

fn otlp(c: &mut Criterion) {
    traceingest::server::keep_freed_memory();
    let (proto, v1) = otlp_fixtures::export_512();
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&proto).unwrap();
        e.finish().unwrap()
    };
    let principal = Principal::unlimited("org-bench", "project-bench");
    let table = PriceTable::builtin();

    let mut g = c.benchmark_group("otlp_read_512");
    g.throughput(Throughput::Bytes(proto.len() as u64));
    let mut arena = Bump::new();
    g.bench_function("reader", |b| {
        b.iter(|| {
            arena.reset();
            black_box(read_protobuf_spans(black_box(&proto), &arena).unwrap())
        })
    });
    g.bench_function("prost_decode", |b| {
        b.iter(|| black_box(ExportTraceServiceRequest::decode(black_box(&proto[..])).unwrap()))
    });
    g.bench_function("quick_protobuf", |b| {
        b.iter(|| black_box(otlp_quick::decode(black_box(&proto)).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("otlp_512");
    g.throughput(Throughput::Bytes(proto.len() as u64));
    let mut decoder = OtlpDecoder::new();
    g.bench_function("decode_map", |b| {
        b.iter(|| {
            arena.reset();
            black_box(
                decoder
                    .decode_protobuf(&proto, &arena)
                    .unwrap()
                    .batch
                    .span_count,
            )
        })
    });
    let mut pricer = Pricer::new();
    g.bench_function("decode_map_rows", |b| {
        b.iter(|| {
            arena.reset();
            let d = decoder.decode_protobuf(&proto, &arena).unwrap();
            rows::build(
                &d.batch,
                &principal,
                &table,
                &mut pricer,
                NOW_MS,
                BatchLimit::NONE,
                &arena,
            )
            .unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("otlp_512_gzip");
    g.throughput(Throughput::Bytes(gz.len() as u64));
    let mut inflate = Decompressor::new();
    g.bench_function("gunzip", |b| {
        b.iter(|| black_box(inflate.decompress(Encoding::Gzip, &gz, CAP).unwrap().len()))
    });
    g.bench_function("gunzip_decode_map_rows", |b| {
        b.iter(|| {
            arena.reset();
            let body = inflate.decompress(Encoding::Gzip, &gz, CAP).unwrap();
            let d = decoder.decode_protobuf(body.into_bytes(), &arena).unwrap();
            rows::build(
                &d.batch,
                &principal,
                &table,
                &mut pricer,
                NOW_MS,
                BatchLimit::NONE,
                &arena,
            )
            .unwrap()
        })
    });
    g.finish();

    // zstd (ruzstd): the same body compressed by ruzstd (its fastest level; others are unimplemented).
    let zst =
        ruzstd::encoding::compress_to_vec(&proto[..], ruzstd::encoding::CompressionLevel::Fastest);
    let mut g = c.benchmark_group("otlp_512_zstd");
    g.throughput(Throughput::Bytes(zst.len() as u64));
    g.bench_function("unzstd", |b| {
        b.iter(|| black_box(inflate.decompress(Encoding::Zstd, &zst, CAP).unwrap().len()))
    });
    g.finish();

    let mut g = c.benchmark_group("v1_512");
    g.throughput(Throughput::Bytes(v1.len() as u64));
    let mut v1_decoder = Decoder::new();
    let mut v1_arena = Bump::new();
    g.bench_function("decode_validate_rows", |b| {
        b.iter_batched_ref(
            // The body with simd-json's padding after it, as the connection hands it over.
            || {
                let mut b = v1.clone();
                b.resize(v1.len() + BODY_PADDING, b' ');
                b
            },
            |body| {
                v1_arena.reset();
                let body = PaddedBody::new(body, v1.len());
                let batch = v1_decoder.decode(body, &v1_arena).expect("valid batch");
                rows::build(
                    &batch,
                    &principal,
                    &table,
                    &mut pricer,
                    NOW_MS,
                    BatchLimit::NONE,
                    &v1_arena,
                )
                .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
    eprintln!(
        "otlp bench sizes: protobuf {} B, gzip {} B, zstd {} B, v1 JSON {} B (512 spans)",
        proto.len(),
        gz.len(),
        zst.len(),
        v1.len()
    );
}

criterion_group!(benches, otlp);
criterion_main!(benches);
