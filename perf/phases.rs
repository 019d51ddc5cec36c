//! The load generator's phases: closed-loop maximum, open-loop ramp, open loop at a fixed rate
//! and the sustain run, each measuring the server's CPU from `/proc` and (open loops and
//! sustain) ClickHouse's whole bill (`bill.rs`), plus what they wait on between phases.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::bill;
use crate::drive::{drive, Fixture};
use crate::meter::{self, Cpu};
pub use crate::meter::{buffered, wait_drained};
use crate::Args;

/// Polls `/health` in the background for the largest buffered row count.
pub struct PeakBuffered {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<()>,
}

impl PeakBuffered {
    fn start(addr: SocketAddr) -> PeakBuffered {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(buffered(addr), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        PeakBuffered { stop, peak, handle }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
        self.peak.load(Ordering::Relaxed)
    }
}

/// Before a measured phase: everything accepted is in ClickHouse, ClickHouse has finished
/// merging what the phases before left (at most `SETTLE_MAX`), and the table is emptied.
/// ClickHouse shares the two cores: a phase started while it merges the previous phase's parts
/// measures that backlog, and one that starts on the tens of millions of rows the earlier
/// phases leave pays for merging them (in the 07:32 and 08:05 runs of 2026-11-24 the 60 s
/// sustain run fell behind at 8.9 us of ClickHouse CPU per row, while the same rate on a fresh
/// table kept up at 4.7 to 5.8). Merges that a phase's own inserts cause run during it and are
/// part of what it measures.
pub fn settle(a: &Args) -> f64 {
    wait_drained(a.addr);
    let t0 = Instant::now();
    while a.ch.merges(Some(&a.database)) > 0 && t0.elapsed() < SETTLE_MAX {
        std::thread::sleep(Duration::from_millis(200));
    }
    a.ch.query(&format!("TRUNCATE TABLE {}.spans", a.database));
    t0.elapsed().as_secs_f64()
}

/// The longest `settle` waits for ClickHouse's merges.
pub const SETTLE_MAX: Duration = Duration::from_secs(120);

pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// Closed-loop maximum: throughput and the server's CPU per byte and per span.
pub fn max_phase(a: &Args, f: &Fixture, connections: usize) -> Value {
    wait_drained(a.addr);
    let peak = PeakBuffered::start(a.addr);
    let ch = a.ch.pid;
    let ch_before = ch.map(Cpu::read);
    let before = Cpu::read(a.pid);
    let t0 = Instant::now();
    let buffered_start = buffered(a.addr);
    let tally = drive(a.addr, &a.key, f, connections, None, a.phase);
    let secs = t0.elapsed().as_secs_f64();
    let buffered_end = buffered(a.addr);
    // The flush thread's work for these rows counts too.
    wait_drained(a.addr);
    let drained_after = t0.elapsed().as_secs_f64();
    let cpu = Cpu::read(a.pid).since(&before);
    let ch_cpu = match (ch, ch_before) {
        (Some(pid), Some(b)) => Cpu::read(pid).since(&b).total,
        _ => f64::NAN,
    };
    let peak_buffered = peak.finish();
    let bytes = tally.accepted * f.body.len() as u64;
    let spans = tally.accepted * f.spans;
    // What the server sustains with its ClickHouse: accepted spans that also left the write
    // buffer during the phase. The rest of the accepted rate only filled the buffer, which a
    // longer run cannot repeat.
    let left_buffer = spans as f64 - (buffered_end as f64 - buffered_start as f64);
    json!({
        "fixture": f.name,
        "connections": connections,
        "seconds": secs,
        "requests_per_s": tally.accepted as f64 / secs,
        "processed_requests_per_s": (tally.accepted + tally.refused) as f64 / secs,
        "sustained_requests_per_s": left_buffer / f.spans as f64 / secs,
        "spans_per_s": spans as f64 / secs,
        "body_mb_per_s": bytes as f64 / secs / 1e6,
        "refused": tally.refused,
        "cpu": cpu.to_json(),
        "cpu_s_per_gb": cpu.total / (bytes as f64 / 1e9),
        "worker_cpu_s_per_gb": cpu.workers / (bytes as f64 / 1e9),
        "cpu_s_per_million_spans": cpu.total / (spans as f64 / 1e6),
        "spans_per_cpu_s": spans as f64 / cpu.total,
        "peak_buffered_rows": peak_buffered,
        "drained_after_s": drained_after,
        "clickhouse_cpu_s": ch_cpu,
        "clickhouse_cpu_us_per_row": ch_cpu / spans as f64 * 1e6,
        "flush_cpu_us_per_row": cpu.flush / spans as f64 * 1e6,
        "body_bytes": f.body.len(),
        "spans_per_batch": f.spans,
    })
}

/// Seconds of each ramp step.
pub const RAMP_STEP: Duration = Duration::from_secs(20);

/// The highest offered rate the server keeps up with, open loop, starting from `start` (the
/// closed loop's sustained rate): up in steps of 20% while a `RAMP_STEP` run at the rate keeps
/// up, or down in steps of 20% until one does (at most 12 steps), each from a settled
/// ClickHouse (`settle`). A rate is kept up with when nothing is refused, the last request
/// went out less than half a second late (the worker was not queueing requests), and the
/// server had written everything within 1.5 s of the end (ClickHouse was not queueing rows:
/// with the 1 s flush interval up to an interval's worth waits at any time, plus an insert; a
/// backlog growing by a tenth of the intake over the 20 s step adds two seconds). 20 s rather
/// than the 6 s of the first harness: on these two shared cores ClickHouse's merges grow with
/// what a step has written, and a short step hid a backlog the 60 s sustain run then showed.
///
/// The closed loop alone is a poor estimate: it overloads the two shared cores, so how much
/// reaches ClickHouse there depends on how the CPU is split between the worker taking requests
/// it will spool and the flush thread and ClickHouse draining them.
pub fn ramp(a: &Args, f: &Fixture, start: f64) -> Value {
    let mut steps = Vec::new();
    let mut best: Option<f64> = None;
    let mut rate = start;
    for _ in 0..12 {
        let settled = settle(a);
        let t0 = Instant::now();
        let tally = drive(a.addr, &a.key, f, a.connections, Some(rate), RAMP_STEP);
        let late = t0.elapsed().as_secs_f64() - RAMP_STEP.as_secs_f64();
        let end = Instant::now();
        wait_drained(a.addr);
        let drain = end.elapsed().as_secs_f64();
        let kept = tally.refused == 0 && late < 0.5 && drain < 1.5;
        steps.push(json!({
            "settled_s": settled,
            "offered_per_s": rate,
            "accepted": tally.accepted,
            "refused": tally.refused,
            "late_s": late,
            "drained_after_s": drain,
            "kept_up": kept,
        }));
        match (kept, best) {
            (true, _) => {
                best = Some(rate);
                rate *= 1.2;
            }
            // The first rate that fails after one that kept up ends the ramp.
            (false, Some(_)) => break,
            (false, None) => rate /= 1.2,
        }
    }
    json!({
        "fixture": f.name,
        "start_per_s": start,
        "step_seconds": RAMP_STEP.as_secs_f64(),
        "max_per_s": best.unwrap_or(rate),
        "steps": steps,
    })
}

/// Open loop at `rate` requests per second: latency percentiles from the due time, and the
/// server's CPU per byte, per span and per request in this steady state (nothing refused,
/// nothing spooled), counted until the flush thread has written every accepted row; then
/// ClickHouse's bill (`bill::finish`: its CPU until its merges are quiet, parts, bytes on disk).
/// Per GB is per GB of body as sent (`cpu_s_per_gb`) and as decoded (`cpu_s_per_decoded_gb`:
/// the uncompressed body; the same unless the fixture is compressed).
pub fn open_phase(a: &Args, f: &Fixture, rate: f64, label: &str) -> Value {
    let settled = settle(a);
    let connections = f.connections.unwrap_or(a.connections);
    let peak = PeakBuffered::start(a.addr);
    let ch_start = bill::start(&a.ch);
    let before = Cpu::read(a.pid);
    let t0 = Instant::now();
    let tally = drive(a.addr, &a.key, f, connections, Some(rate), a.phase);
    let secs = t0.elapsed().as_secs_f64();
    wait_drained(a.addr);
    let cpu = Cpu::read(a.pid).since(&before);
    let peak_buffered = peak.finish();
    let spans = tally.accepted * f.spans;
    let clickhouse = bill::finish(&a.ch, &a.database, ch_start, secs, spans);
    let bytes = tally.accepted as f64 * f.wire_bytes();
    let decoded = tally.accepted as f64 * f.decoded_bytes();
    let requests = tally.accepted as f64;
    let mut l = tally.latencies_us;
    l.sort_unstable();
    let mut slow = tally.slow;
    slow.sort_by(|a, b| a.0.total_cmp(&b.0));
    // When the slow requests were due, not every one of them: a stall of a few hundred
    // milliseconds at 30,000 requests per second is thousands.
    let slow_count = slow.len();
    slow.truncate(200);
    json!({
        "label": label,
        "settled_s": settled,
        "fixture": f.name,
        "path": f.path,
        "content_encoding": f.encoding,
        "offered_per_s": rate,
        "connections": connections,
        "accepted": tally.accepted,
        "refused": tally.refused,
        "first_refusal_status": tally.first_refusal,
        "p50_ms": percentile(&l, 50.0),
        "p99_ms": percentile(&l, 99.0),
        "p999_ms": percentile(&l, 99.9),
        "max_ms": l.last().map_or(0.0, |&v| v as f64 / 1000.0),
        "peak_buffered_rows": peak_buffered,
        "over_10ms": slow_count,
        "over_10ms_at_s_ms": slow,
        "seconds": secs,
        "spans_per_s": spans as f64 / secs,
        "body_mb_per_s": bytes / secs / 1e6,
        "cpu": cpu.to_json(),
        "cpu_s_per_gb": cpu.total / (bytes / 1e9),
        "cpu_s_per_decoded_gb": cpu.total / (decoded / 1e9),
        "worker_cpu_s_per_gb": cpu.workers / (bytes / 1e9),
        "cpu_s_per_million_spans": cpu.total / (spans as f64 / 1e6),
        "spans_per_cpu_s": spans as f64 / cpu.total,
        "cpu_us_per_request": {
            "total": cpu.total / requests * 1e6,
            "workers": cpu.workers / requests * 1e6,
            "flush": cpu.flush / requests * 1e6,
            "other": (cpu.total - cpu.workers - cpu.flush) / requests * 1e6,
        },
        "worker_cpu_us_per_request": cpu.workers / requests * 1e6,
        "flush_cpu_us_per_row": cpu.flush / spans as f64 * 1e6,
        "body_bytes": f.wire_bytes(),
        "decoded_bytes": f.decoded_bytes(),
        "reused_bodies": f.reused(),
        "spans_per_batch": f.spans,
        "clickhouse": clickhouse,
    })
}

/// Open loop at `rate` for the sustain time, sampling intake and ClickHouse every second.
pub fn sustain_phase(a: &Args, f: &Fixture, rate: f64) -> Value {
    let settled = settle(a);
    let ch = a.ch.pid;
    let (server_before, ch_before) = (Cpu::read(a.pid), ch.map(Cpu::read));
    // `settle` emptied the table; the server's count covers every phase.
    let rows_before = a.ch.rows(&a.database);
    let accepted_before = meter::metric(a.admin, "traceingest_spans_accepted_total");
    let ch_start = bill::start(&a.ch);
    let stop = Arc::new(AtomicBool::new(false));
    let samples = std::thread::scope(|s| {
        let sampler = {
            let stop = stop.clone();
            s.spawn(move || {
                let t0 = Instant::now();
                let mut out = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    out.push(json!({
                        "t": t0.elapsed().as_secs_f64(),
                        "accepted_spans": meter::metric(a.admin, "traceingest_spans_accepted_total"),
                        "rows_in_clickhouse": a.ch.rows(&a.database),
                        "buffered_rows": buffered(a.addr),
                    }));
                    std::thread::sleep(Duration::from_secs(1));
                }
                out
            })
        };
        let tally = drive(a.addr, &a.key, f, a.connections, Some(rate), a.sustain);
        stop.store(true, Ordering::Relaxed);
        (tally, sampler.join().unwrap())
    });
    let (tally, samples) = samples;
    // After intake stops: how long until ClickHouse has every row.
    let t0 = Instant::now();
    let target =
        meter::metric(a.admin, "traceingest_spans_accepted_total") - accepted_before + rows_before;
    while a.ch.rows(&a.database) < target && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let catch_up = t0.elapsed().as_secs_f64();
    let server = Cpu::read(a.pid).since(&server_before);
    let ch_cpu = match (ch, ch_before) {
        (Some(pid), Some(b)) => Cpu::read(pid).since(&b).total,
        _ => f64::NAN,
    };
    let written = a.ch.rows(&a.database).saturating_sub(rows_before) as f64;
    let first = &samples[0];
    let last = &samples[samples.len() - 1];
    let dt = last["t"].as_f64().unwrap() - first["t"].as_f64().unwrap();
    let d = |k: &str| last[k].as_u64().unwrap_or(0) as f64 - first[k].as_u64().unwrap_or(0) as f64;
    let max_buffered = samples
        .iter()
        .filter_map(|s| s["buffered_rows"].as_u64())
        .max()
        .unwrap_or(0);
    let rows_at_end = a.ch.rows(&a.database);
    let clickhouse = bill::finish(
        &a.ch,
        &a.database,
        ch_start,
        a.sustain.as_secs_f64(),
        tally.accepted * f.spans,
    );
    json!({
        "fixture": f.name,
        "settled_s": settled,
        "offered_per_s": rate,
        "seconds": a.sustain.as_secs_f64(),
        "accepted": tally.accepted,
        "refused": tally.refused,
        "accepted_spans_per_s": d("accepted_spans") / dt,
        "clickhouse_rows_per_s": d("rows_in_clickhouse") / dt,
        "max_buffered_rows": max_buffered,
        "catch_up_s": catch_up,
        "cpu": server.to_json(),
        "flush_busy_share": server.flush / (a.sustain.as_secs_f64() + catch_up),
        "flush_cpu_us_per_row": server.flush / written * 1e6,
        "clickhouse_cpu_s": ch_cpu,
        "clickhouse_cpu_us_per_row": ch_cpu / written * 1e6,
        "rows_in_clickhouse_at_end": rows_at_end,
        "accepted_spans_at_end": target,
        "samples": samples,
        "body_bytes": f.wire_bytes(),
        "spans_per_batch": f.spans,
        "clickhouse": clickhouse,
    })
}
