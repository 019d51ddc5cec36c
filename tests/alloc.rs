//! The request path's allocation promise, asserted with a counting allocator: once warm, turning
//! a body into priced rows (decode, validate, price, build) allocates a small fixed number of
//! times per request, the same for 10 spans as for 1000, so nothing is allocated per span; and
//! pricing a (provider, modelId) already seen allocates nothing.
//!
//! Its own test binary because a `#[global_allocator]` is process-wide.

#[path = "../perf/fixtures.rs"]
mod fixtures;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use traceingest::auth::Principal;
use traceingest::ingest::wire::Usage;
use traceingest::ingest::Pipeline;
use traceingest::pricing::{Pricer, SharedPrices};
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

    // Allocations made while turning one body into rows; the copy of the body is made before
    // counting, and dropping the rows frees without allocating.
    let mut allocations_for = |body: &[u8]| {
        let mut body = body.to_vec();
        let before = allocations();
        let rows = pipeline
            .build_v1(&principal, &mut body, 1_760_000_000_000)
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
