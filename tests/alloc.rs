//! The request path's allocation promise, asserted with a counting allocator: once warm, turning
//! a body into priced rows (decode, validate, price, build) allocates a small fixed number of
//! times per request, the same for 10 spans as for 1000, so nothing is allocated per span; and
//! pricing a (provider, modelId) already seen allocates nothing.
//!
//! Its own test binary because a `#[global_allocator]` is process-wide.

#[path = "../perf/fixtures.rs"]
mod fixtures;
#[path = "../perf/otlp_fixtures.rs"]
#[rustfmt::skip]
mod otlp_fixtures;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use std::io::Write;

use bumpalo::Bump;
use traceingest::auth::Principal;
use traceingest::ingest::body::PaddedBody;
use traceingest::ingest::compress::{Decompressor, Encoding};
use traceingest::ingest::otlp::OtlpDecoder;
use traceingest::ingest::wire::Usage;
use traceingest::ingest::Pipeline;
use traceingest::ingest::{rows, BatchLimit};
use traceingest::pricing::{PriceTable, Pricer, SharedPrices};
use traceingest::server::Shared;
use traceingest::sink::Handoff;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations (and reallocations) per thread.
struct Counting;

// SAFETY: every method forwards to the system allocator with the caller's arguments, so it
// upholds GlobalAlloc's contract exactly as System does; counting touches only a
// const-initialised thread-local Cell, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn request_path_allocations_do_not_grow_with_spans() {
    let shared = Shared::for_bench();
    let (sender, _receiver) = crossbeam_channel::unbounded();
    let mut pipeline =
        Pipeline::new(shared.pipeline_parts(Handoff::buffer(shared.budget.clone(), sender)));
    let principal = Principal::unlimited("org-alloc", "project-alloc");
    let typical = fixtures::typical();
    // The first 10 spans of the typical fixture's first trace (same seed, same draws).
    let ten = fixtures::batch(2, 1, 10, 500);

    // Allocations made while turning one body into rows; the copy of the body (with the
    // padding the connection's buffer has after it) is made before counting, and dropping the
    // rows frees without allocating.
    let mut allocations_for = |body: &[u8]| {
        let mut body = body.to_vec();
        let body = PaddedBody::pad(&mut body);
        let before = allocations();
        let rows = pipeline
            .build_v1(&principal, body, 1_760_000_000_000)
            .expect("fixtures are valid batches");
        let n = allocations() - before;
        (n, rows.len())
    };

    // Warm-up: decoder buffers, the arena and the price-match cache reach their working size.
    for _ in 0..2 {
        allocations_for(&typical);
        allocations_for(&ten);
    }
    let (thousand_a, spans) = allocations_for(&typical);
    assert_eq!(spans, 1000);
    let (small, spans) = allocations_for(&ten);
    assert_eq!(spans, 10);
    let (thousand_b, _) = allocations_for(&typical);

    assert_eq!(
        thousand_a, thousand_b,
        "a warm pipeline allocates the same every time"
    );
    assert_eq!(
        thousand_a, small,
        "1000 spans must allocate no more than 10 spans: nothing per span"
    );
    // The RowBatch's one buffer (all its columns, allocated at their exact size), nothing else.
    assert_eq!(thousand_a, 1, "allocations per request");
}

/// A (provider, modelId) the pricer has seen before is priced without allocating, whether it
/// matched a price or not.
#[test]
fn a_cached_match_prices_without_allocating() {
    let shared = SharedPrices::builtin();
    let t = shared.current();
    let usage = Usage {
        input_tokens: Some(1200),
        output_tokens: Some(300),
        cached_input_tokens: Some(200),
        ..Usage::default()
    };
    let mut p = Pricer::new();
    let calls = [
        (Some("azure"), "gpt-4o-2024-08-06"),
        (Some("anthropic.messages"), "claude-sonnet-4-5-20250929"),
        (None, "not-a-model"),
    ];
    for (prov, model) in calls {
        p.price(&t, prov, Some(model), Some(&usage), 0).unwrap();
    }
    let before = allocations();
    let mut total = 0;
    for _ in 0..1000 {
        for (prov, model) in calls {
            if let Some(r) = p.price(&t, prov, Some(model), Some(&usage), 0).unwrap() {
                total += r.costs.total.unwrap_or(0);
            }
        }
    }
    assert_eq!(allocations() - before, 0);
    assert!(total > 0);
    assert_eq!(p.cache_stats().misses, 3);
}

/// The OTLP path, from the gzip body a client sends to rows: decompress, decode, map, price,
/// build. Once warm it allocates the `RowBatch`'s buffer and nothing else, for 16 spans as for
/// 512; the protobuf and the JSON decoders alike.
#[test]
fn otlp_path_allocations_do_not_grow_with_spans() {
    let principal = Principal::unlimited("org-alloc", "project-alloc");
    let table = PriceTable::builtin();
    let mut pricer = Pricer::new();
    let mut decompressor = Decompressor::new();
    let mut decoder = OtlpDecoder::new();
    let mut arena = Bump::new();
    let gzip = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    };
    let big = gzip(&otlp_fixtures::otlp_protobuf(&otlp_fixtures::spans(7, 512)));
    let small = gzip(&otlp_fixtures::otlp_protobuf(&otlp_fixtures::spans(7, 16)));

    let mut allocations_for = |body: &[u8]| {
        let before = allocations();
        arena.reset();
        let plain = decompressor
            .decompress(Encoding::Gzip, body, 64 << 20)
            .expect("gzip");
        let decoded = decoder
            .decode_protobuf(plain.into_bytes(), &arena)
            .expect("decodes");
        let rows = rows::build(
            &decoded.batch,
            &principal,
            &table,
            &mut pricer,
            1_760_000_000_000,
            BatchLimit::NONE,
            &arena,
        )
        .expect("rows");
        (allocations() - before, rows.len())
    };
    for _ in 0..2 {
        allocations_for(&big);
        allocations_for(&small);
    }
    let (big_a, spans) = allocations_for(&big);
    assert_eq!(spans, 512);
    let (small_a, spans) = allocations_for(&small);
    assert_eq!(spans, 16);
    let (big_b, _) = allocations_for(&big);
    assert_eq!(
        big_a, big_b,
        "a warm OTLP path allocates the same every time"
    );
    assert_eq!(
        big_a, small_a,
        "512 spans allocate no more than 16: nothing per span"
    );
    assert_eq!(big_a, 1, "allocations per OTLP request: the RowBatch");

    // OTLP/JSON of the same spans: the JSON decoder's buffers are reused too.
    let json = |n: usize| otlp_json(&otlp_fixtures::spans(7, n));
    let (big, small) = (json(512), json(16));
    let mut json_allocations_for = |body: &[u8]| {
        let mut body = body.to_vec();
        let body = PaddedBody::pad(&mut body);
        let before = allocations();
        arena.reset();
        let decoded = decoder.decode_json(body, &arena).expect("decodes");
        let n = decoded.batch.span_count;
        (allocations() - before, n)
    };
    for _ in 0..2 {
        json_allocations_for(&big);
        json_allocations_for(&small);
    }
    let (big_a, spans) = json_allocations_for(&big);
    assert_eq!(spans, 512);
    let (small_a, _) = json_allocations_for(&small);
    assert_eq!(big_a, small_a, "JSON: 512 spans allocate no more than 16");
    assert_eq!(big_a, 0, "a warm JSON decode allocates nothing");
}

/// OTLP/JSON of generated spans (ids hex, integers as strings), as the JS exporter writes it.
fn otlp_json(spans: &[otlp_fixtures::GenSpan]) -> Vec<u8> {
    use serde_json::json;
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let value = |v: &otlp_fixtures::Val| match v {
        otlp_fixtures::Val::S(s) => json!({ "stringValue": s }),
        otlp_fixtures::Val::I(i) => json!({ "intValue": i.to_string() }),
        otlp_fixtures::Val::D(d) => json!({ "doubleValue": d }),
    };
    let spans: Vec<_> = spans
        .iter()
        .map(|s| {
            json!({
                "traceId": hex(&s.trace_id),
                "spanId": hex(&s.span_id),
                "parentSpanId": s.parent.map_or(String::new(), |p| hex(&p)),
                "name": s.name,
                "kind": s.kind,
                "startTimeUnixNano": s.start_ns.to_string(),
                "endTimeUnixNano": s.end_ns.to_string(),
                "attributes": s.attrs.iter().map(|(k, v, _)| json!({"key": k, "value": value(v)})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let resource: Vec<_> = otlp_fixtures::RESOURCE
        .iter()
        .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
        .collect();
    serde_json::to_vec(&json!({"resourceSpans": [{
        "resource": {"attributes": resource},
        "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
    }]}))
    .unwrap()
}
