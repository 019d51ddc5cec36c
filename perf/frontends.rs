//! The two front ends on the same 512 spans, interleaved in one process: the OTLP export
//! (`perf/otlp_fixtures.rs`, protobuf) and its v1 JSON twin, each decoded and built into rows
//! as the worker does (`decode_protobuf` or `Decoder::decode`, then `rows::build`), run after
//! run in a rotating order, so that a machine whose speed drifts (these VMs: up to 1.5x between
//! minutes) slows both alike. The criterion benches run one group after the other, minutes
//! apart, and their OTLP/v1 ratio moves with the drift; this one's stays within a few percent.
//!
//! ```text
//! target/release/examples/frontends [--iterations 200] [--keep 40] [--evict-mb 0]
//!     [--toggle VAR] [--interleave]
//! ```
//!
//! - `--keep K`: each run's row batch is held until K newer ones exist, as the flush thread
//!   holds a second's worth until its insert (40 exports at 40 a second), so each new batch is
//!   written into memory that is not in the caches, as in the server. `--keep 0` frees it at
//!   once, as the `build_rows` bench does, and the next run reuses the same, cached, block.
//! - `--evict-mb M`: before each run, write M MiB elsewhere (the caches emptied, as another
//!   process on the core would leave them), then copy the body in (as `recv` would).
//! - `--interleave`: the OTLP export's spans in round-robin order over its 32 traces, as a
//!   batch span processor sends concurrent traces (the same spans and bytes; the v1 twin
//!   unchanged, its rows the same either way).
//! - `--toggle VAR`: every other run of each front end has the environment variable VAR set
//!   to `1`: an A/B of a scratch build that reads it, reported as `base` and `exp`.
//!
//! Prints, per front end, the medians of the decode, the rows, and their total per export
//! (µs of wall time on this thread; pin it with `taskset -c 1` on a quiet core), and the OTLP
//! to v1 ratio per export and per byte of body (issue 15's per-GB target counts the server's
//! whole CPU, of which this is the worker's request path).

#[path = "otlp_fixtures.rs"]
#[rustfmt::skip]
mod otlp_fixtures;

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use bumpalo::Bump;
use traceingest::auth::Principal;
use traceingest::ingest::body::{PaddedBody, BODY_PADDING};
use traceingest::ingest::otlp::OtlpDecoder;
use traceingest::ingest::v1::Decoder;
use traceingest::ingest::{rows, BatchLimit};
use traceingest::pricing::{PriceTable, Pricer};
use traceingest::row::RowBatch;

const NOW_MS: u64 = 1_760_000_000_000;

struct Args {
    iterations: usize,
    keep: usize,
    evict_mb: usize,
    toggle: Option<String>,
    interleave: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        iterations: 200,
        keep: 40,
        evict_mb: 0,
        toggle: None,
        interleave: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(k) = args.next() {
        if k == "--interleave" {
            a.interleave = true;
            continue;
        }
        let v = args.next().unwrap_or_default();
        match k.as_str() {
            "--iterations" => a.iterations = v.parse().expect("--iterations N"),
            "--keep" => a.keep = v.parse().expect("--keep K"),
            "--evict-mb" => a.evict_mb = v.parse().expect("--evict-mb M"),
            "--toggle" => a.toggle = Some(v),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(a.iterations > 0, "--iterations must be at least 1");
    a
}

/// One run's times, µs: the decode, and the decode plus the rows.
#[derive(Clone, Copy)]
struct Run {
    decode: f64,
    total: f64,
}

impl Run {
    fn of(decode: Duration, total: Duration) -> Run {
        Run {
            decode: decode.as_secs_f64() * 1e6,
            total: total.as_secs_f64() * 1e6,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Medians of a set of runs: decode, rows, total.
fn medians(runs: &[Run]) -> (f64, f64, f64) {
    (
        median(runs.iter().map(|r| r.decode).collect()),
        median(runs.iter().map(|r| r.total - r.decode).collect()),
        median(runs.iter().map(|r| r.total).collect()),
    )
}

fn main() {
    let a = parse_args();
    // The server's malloc settings: without them a freed batch's pages go back to the kernel.
    traceingest::server::keep_freed_memory();
    let (mut proto, v1) = otlp_fixtures::export_512();
    if a.interleave {
        // Span k of every trace, then span k + 1 of every trace, ...
        let mut spans: Vec<(usize, otlp_fixtures::GenSpan)> = otlp_fixtures::export_512_spans()
            .into_iter()
            .enumerate()
            .collect();
        spans.sort_by_key(|&(i, _)| (i % 16, i / 16));
        let spans: Vec<_> = spans.into_iter().map(|(_, s)| s).collect();
        proto = otlp_fixtures::otlp_protobuf(&spans);
    }
    let principal = Principal::unlimited("org-frontends", "project-frontends");
    let table = PriceTable::builtin();
    let mut pricer = Pricer::new();
    let mut arena = Bump::new();
    let mut otlp = OtlpDecoder::new();
    let mut json = Decoder::new();
    // The connection's buffers: the body with simd-json's padding after it.
    let mut proto_buf = vec![0u8; proto.len() + BODY_PADDING];
    let mut v1_buf = vec![b' '; v1.len() + BODY_PADDING];
    let mut scratch = vec![0u8; a.evict_mb << 20];
    let mut held: VecDeque<RowBatch> = VecDeque::new();
    let variants = if a.toggle.is_some() { 2 } else { 1 };
    let kinds = 2 * variants;
    // runs[front end][variant]: front end 0 = OTLP, 1 = v1.
    let mut runs: [[Vec<Run>; 2]; 2] = Default::default();
    // One warm-up round of every kind, not counted.
    for it in 0..a.iterations + 1 {
        for step in 0..kinds {
            let k = (it + step) % kinds;
            // Front ends alternate, so that every run follows one of the other front end (a run
            // right after one of its own would find its code and data warmer).
            let (front, variant) = (k % 2, k / 2);
            if let Some(var) = &a.toggle {
                // SAFETY: this program has one thread.
                unsafe {
                    if variant == 1 {
                        std::env::set_var(var, "1");
                    } else {
                        std::env::remove_var(var);
                    }
                }
            }
            for i in (0..scratch.len()).step_by(64) {
                scratch[i] = scratch[i].wrapping_add(1);
            }
            black_box(scratch.first());
            arena.reset();
            // The body lands in the connection's buffer, as `recv` leaves it, before the clock.
            if front == 0 {
                proto_buf[..proto.len()].copy_from_slice(&proto);
            } else {
                v1_buf[..v1.len()].copy_from_slice(&v1);
            }
            let t = Instant::now();
            let batch = if front == 0 {
                otlp.decode_protobuf(&proto_buf[..proto.len()], &arena)
                    .expect("the fixture decodes")
                    .batch
            } else {
                json.decode(PaddedBody::new(&mut v1_buf, v1.len()), &arena)
                    .expect("the fixture decodes")
            };
            let decode = t.elapsed();
            let rows = rows::build(
                &batch,
                &principal,
                &table,
                &mut pricer,
                NOW_MS,
                BatchLimit::NONE,
                &arena,
            )
            .expect("the fixture's prices fit");
            let run = Run::of(decode, t.elapsed());
            held.push_back(rows);
            while held.len() > a.keep {
                held.pop_front();
            }
            if it > 0 {
                runs[front][variant].push(run);
            }
        }
    }
    let bytes = [proto.len() as f64, v1.len() as f64];
    println!(
        "{} iterations, row batches held: {}, caches evicted by {} MiB; protobuf {} B, v1 JSON {} B",
        a.iterations,
        a.keep,
        a.evict_mb,
        proto.len(),
        v1.len()
    );
    let [otlp_runs, v1_runs] = &runs;
    for (variant, (otlp, v1)) in otlp_runs.iter().zip(v1_runs).enumerate().take(variants) {
        let label = match (&a.toggle, variant) {
            (None, _) => String::new(),
            (Some(var), 0) => format!("base ({var} unset): "),
            (Some(var), _) => format!("exp ({var}=1): "),
        };
        let m = [medians(otlp), medians(v1)];
        for ((d, r, t), name) in m.iter().zip(["otlp", "v1"]) {
            println!("{label}{name:<4} decode {d:7.1} µs, rows {r:7.1} µs, total {t:7.1} µs");
        }
        println!(
            "{label}otlp / v1: decode {:.3}, rows {:.3}, per export {:.3}, per byte {:.3}",
            m[0].0 / m[1].0,
            m[0].1 / m[1].1,
            m[0].2 / m[1].2,
            (m[0].2 / bytes[0]) / (m[1].2 / bytes[1])
        );
    }
}
