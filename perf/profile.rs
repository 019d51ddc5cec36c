//! Runs one stage of the request path in a loop on a fixture, for `valgrind --tool=callgrind`
//! (see `perf/profile.sh`): exact instruction counts per stage, no network, no ClickHouse.
//!
//! `cargo run --release --example profile -- <small|sdk|typical|large> <whole|decode|simd|flush> [N]`
//!
//! Fixtures `otlp` (the 512-span export of `perf/otlp_fixtures.rs` as protobuf, through
//! `Pipeline::ingest_otlp`) and `otlp-v1` (the same spans as v1 JSON) take `whole` and
//! `decode`: the two front ends' instructions per byte on the same spans (issue 15).
//!
//! `flush` is the flush thread's side: one `Store::insert_spans` of ten requests' rows into
//! ClickHouse (database `perf_profile`, which `perf/profile.sh` drops afterwards).
//!
//! Only `iteration` is meant to be measured (`--toggle-collect=*profile*iteration*`), so
//! generating the fixture and warming up do not count. Run outside valgrind, it also prints
//! this thread's CPU time per `iteration` (fastest and median): time spent descheduled does
//! not count, so two builds can be compared on a busy machine (`simd` vs `whole` is the bench's
//! ratio in CPU time).

#[path = "fixtures.rs"]
mod fixtures;
#[path = "otlp_fixtures.rs"]
mod otlp_fixtures;

use std::hint::black_box;
use std::sync::Arc;

use bumpalo::Bump;
use simd_json::{Buffers, Node, Tape};
use traceingest::auth::Principal;
use traceingest::http::response::LimitHeaders;
use traceingest::ingest::body::{PaddedBody, BODY_PADDING};
use traceingest::ingest::compress::Encoding;
use traceingest::ingest::otlp::OtlpDecoder;
use traceingest::ingest::v1::Decoder;
use traceingest::ingest::{OtlpFormat, Pipeline};
use traceingest::row::RowBatch;
use traceingest::server::Shared;
use traceingest::sink::{Handed, Handoff, Store};

/// The stage to run.
#[derive(Clone, Copy)]
enum Stage {
    /// `Pipeline::ingest`: decode, validate, price, build rows, hand over.
    Whole,
    /// `Decoder::decode` only.
    Decode,
    /// `simd_json::fill_tape` only: the reference.
    Simd,
    /// `Store::insert_spans` of ten requests' rows: block building and the ClickHouse protocol.
    Flush,
}

/// Rows ready to insert, for `Stage::Flush`.
struct FlushState {
    rt: tokio::runtime::Runtime,
    store: Store,
    batches: Vec<RowBatch>,
}

struct State {
    stage: Stage,
    /// The body is an OTLP protobuf export, not v1 JSON.
    otlp: bool,
    otlp_decoder: OtlpDecoder,
    pipeline: Pipeline,
    principal: Principal,
    decoder: Decoder,
    arena: Bump,
    buffers: Buffers,
    tape: Vec<Node<'static>>,
    flush: Option<FlushState>,
}

/// One measured request: what callgrind collects (`--toggle-collect=*profile*iteration*`).
/// The warm-up calls `work` directly, so it is not counted.
#[inline(never)]
fn iteration(s: &mut State, buf: &mut [u8], len: usize) -> usize {
    work(s, buf, len)
}

/// One request's worth of work on `buf[..len]` (a fresh copy of the fixture, followed by
/// simd-json's padding as the connection's buffer has it).
#[inline(never)]
fn work(s: &mut State, buf: &mut [u8], len: usize) -> usize {
    match s.stage {
        Stage::Whole if s.otlp => {
            let mut limits = LimitHeaders::default();
            let (handed, _) = s
                .pipeline
                .ingest_otlp(
                    &s.principal,
                    PaddedBody::new(buf, len),
                    OtlpFormat::Protobuf,
                    Encoding::Identity,
                    usize::MAX,
                    &mut limits,
                )
                .expect("accepted");
            match handed.expect("spans handed over") {
                Handed::Buffered { spans } => spans,
                Handed::Logging { spans, .. } => spans,
            }
        }
        Stage::Decode if s.otlp => {
            s.arena.reset();
            let d = s
                .otlp_decoder
                .decode_protobuf(&buf[..len], &s.arena)
                .expect("valid export");
            d.batch.span_count
        }
        Stage::Whole => {
            let mut limits = LimitHeaders::default();
            match s
                .pipeline
                .ingest_v1(
                    &s.principal,
                    PaddedBody::new(buf, len),
                    Encoding::Identity,
                    usize::MAX,
                    &mut limits,
                )
                .expect("accepted")
            {
                Handed::Buffered { spans } => spans,
                Handed::Logging { spans, .. } => spans,
            }
        }
        Stage::Decode => {
            s.arena.reset();
            let body = PaddedBody::new(buf, len);
            let batch = s.decoder.decode(body, &s.arena).expect("valid batch");
            batch.span_count
        }
        Stage::Simd => {
            let mut tape: Tape<'_> = Tape(std::mem::take(&mut s.tape)).reset();
            // The bare body: `fill_tape` copies it into a padded buffer of its own.
            let body = &mut buf[..len];
            simd_json::fill_tape(body, &mut s.buffers, &mut tape).expect("valid JSON");
            let n = tape.0.len();
            s.tape = tape.reset().0;
            n
        }
        Stage::Flush => {
            let f = s.flush.as_ref().expect("flush state");
            f.rt.block_on(f.store.insert_spans(&f.batches))
                .expect("insert into ClickHouse");
            f.batches.iter().map(RowBatch::len).sum()
        }
    }
}

fn main() {
    // The server's malloc settings, so the stages are measured as they run there.
    traceingest::server::keep_freed_memory();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: profile <small|sdk|typical|large|otlp|otlp-v1> <whole|decode|simd|flush> [iterations]";
    let fixture = args.first().map(String::as_str);
    let otlp = fixture == Some("otlp");
    let body = match fixture {
        Some("small") => fixtures::small(),
        Some("sdk") => fixtures::sdk(),
        Some("typical") => fixtures::typical(),
        Some("large") => fixtures::large(),
        Some("otlp") => otlp_fixtures::export_512().0,
        Some("otlp-v1") => otlp_fixtures::export_512().1,
        _ => panic!("{usage}"),
    };
    let stage = match args.get(1).map(String::as_str) {
        Some("whole") => Stage::Whole,
        Some("decode") => Stage::Decode,
        Some("simd") => Stage::Simd,
        Some("flush") => Stage::Flush,
        _ => panic!("{usage}"),
    };
    assert!(
        !otlp || matches!(stage, Stage::Whole | Stage::Decode),
        "the otlp fixture takes whole or decode"
    );
    let n: usize = args.get(2).map_or(10, |s| s.parse().expect("iterations"));

    let shared = Arc::new(Shared::for_bench());
    let (sender, receiver) = crossbeam_channel::unbounded::<RowBatch>();
    let mut state = State {
        stage,
        otlp,
        otlp_decoder: OtlpDecoder::new(),
        pipeline: Pipeline::new(
            shared.pipeline_parts(Handoff::buffer(shared.budget.clone(), sender)),
        ),
        principal: Principal::unlimited("org-profile", ""),
        decoder: Decoder::new(),
        arena: Bump::new(),
        buffers: Buffers::default(),
        tape: Vec::new(),
        flush: None,
    };
    if let Stage::Flush = stage {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let store = Store::new("tcp://127.0.0.1:9000", "perf_profile").expect("store");
        rt.block_on(store.migrate()).expect("migrate perf_profile");
        let mut batches = Vec::new();
        // Trace ids of their own per request, as real traffic has: ten copies of the same
        // spans would be merged row by row into the table's key order (`order.rs`).
        let offsets = fixtures::trace_id_offsets(&body);
        for n in 0..10 {
            let mut copy = body.clone();
            fixtures::stamp(&mut copy, &offsets, n);
            let rows = state
                .pipeline
                .build_v1(
                    &state.principal,
                    PaddedBody::pad(&mut copy),
                    1_760_000_000_000,
                )
                .expect("valid batch");
            batches.push(rows);
        }
        state.flush = Some(FlushState { rt, store, batches });
    }
    let len = body.len();
    let mut copy = body.clone();
    copy.resize(len + BODY_PADDING, b' ');
    // Warm-up: buffers, arena and price cache at their working size.
    for _ in 0..2 {
        copy[..len].copy_from_slice(&body);
        black_box(work(&mut state, &mut copy, len));
        while let Ok(b) = receiver.try_recv() {
            shared.budget.release(b.len() as u64, b.heap_bytes() as u64);
        }
    }
    let mut items = 0;
    let mut times = Vec::with_capacity(n);
    let (t0, cpu0) = (std::time::Instant::now(), cpu_seconds());
    for _ in 0..n {
        copy[..len].copy_from_slice(&body);
        let t = thread_cpu_ns();
        items += black_box(iteration(&mut state, &mut copy, len));
        times.push(thread_cpu_ns() - t);
        // Rows are dropped here, as the flush thread would, outside `iteration`.
        while let Ok(b) = receiver.try_recv() {
            shared.budget.release(b.len() as u64, b.heap_bytes() as u64);
        }
    }
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    println!("{} iterations of {} bytes: {items} items", n, body.len());
    // This thread's CPU time in `iteration` alone (meaningful only outside valgrind; time
    // spent descheduled on a busy machine does not count): the fastest and the median.
    times.sort_unstable();
    if let (Some(min), Some(median)) = (times.first(), times.get(times.len() / 2)) {
        println!(
            "CPU per iteration: fastest {:.1} µs, median {:.1} µs",
            *min as f64 / 1e3,
            *median as f64 / 1e3
        );
    }
    if let Stage::Flush = stage {
        // Meaningful only outside valgrind.
        println!(
            "insert_spans: {:.0} rows/s wall, {:.2} µs of this process's CPU per row",
            items as f64 / wall,
            cpu / items as f64 * 1e6
        );
    }
}

/// CPU time this thread has used, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}
