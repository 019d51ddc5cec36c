//! Open-loop load generator and meter for a running traceingest: drives `POST /ingest` over
//! loopback with the seeded fixtures and measures what the server spends, writing JSON figures.
//!
//! Started by `perf/run.sh`, which owns the server and ClickHouse. Phases:
//! 1. `max_typical`, `max_small`: closed loop (every connection sends back to back) to find the
//!    most the server accepts, with its CPU time from `/proc/<pid>` (process and per thread),
//!    counted until the flush thread has written everything accepted;
//! 2. `ramp_typical`, `ramp_small`: the maximum rate, the highest open-loop rate the server
//!    keeps up with, ClickHouse included (`ramp`), searched in 20% steps from what the closed
//!    loop sustained (accepted spans that also left the write buffer during it);
//! 3. `open_50`, `open_80`: open loop at 50% and 80% of the typical maximum, then the small
//!    fixture at 80% of its own;
//!    each also measures the server's CPU in this steady state; request `i` is due
//!    at `start + i / rate`, and its latency runs from that due time, not from when a connection
//!    was free to send it (corrects for coordinated omission, as wrk2 does);
//! 4. `sustain`: open loop at 80% for `--sustain` seconds, sampling every second the spans
//!    accepted, the rows counted in ClickHouse and the rows buffered in the server.
//!
//! Every batch gets unique trace ids (`fixtures::stamp`), so no row is deduplicated away.
//!
//! `--only typical|small|open:<req/s>|open-small:<req/s>|ramp-typical:<req/s>|ramp-small:<req/s>`
//! runs one phase alone (after the warm-up), e.g. under
//! `perf record`; an open-loop phase also counts the requests over 10 ms and lists when the first
//! 200 of them were due, which
//! shows whether slow requests come alone or in a stall.

#[path = "fixtures.rs"]
mod fixtures;
#[path = "meter.rs"]
mod meter;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use meter::{http_get, Cpu};

struct Args {
    addr: SocketAddr,
    /// The server's admin listener, for `/metrics`.
    admin: SocketAddr,
    key: String,
    pid: u32,
    database: String,
    connections: usize,
    phase: Duration,
    sustain: Duration,
    out: String,
    /// Only this phase: a closed loop (`typical` or `small`) or an open loop of the typical
    /// fixture (`open:<requests per second>`), e.g. to profile the server under it.
    only: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        addr: "127.0.0.1:4000".parse().unwrap(),
        admin: "127.0.0.1:4001".parse().unwrap(),
        key: String::new(),
        pid: 0,
        database: String::new(),
        connections: 8,
        phase: Duration::from_secs(15),
        sustain: Duration::from_secs(20),
        out: "perf/out/load.json".into(),
        only: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--addr" => a.addr = v.parse().expect("--addr host:port"),
            "--admin" => a.admin = v.parse().expect("--admin host:port"),
            "--key" => a.key = v,
            "--pid" => a.pid = v.parse().expect("--pid"),
            "--database" => a.database = v,
            "--connections" => a.connections = v.parse().expect("--connections"),
            "--phase-secs" => a.phase = Duration::from_secs(v.parse().expect("--phase-secs")),
            "--sustain-secs" => a.sustain = Duration::from_secs(v.parse().expect("--sustain-secs")),
            "--out" => a.out = v,
            "--only" => a.only = Some(v),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(!a.key.is_empty() && a.pid != 0 && !a.database.is_empty());
    a
}

/// A fixture ready to send: body, span count and where its trace ids are.
struct Fixture {
    name: &'static str,
    body: Vec<u8>,
    spans: u64,
    offsets: Vec<usize>,
}

impl Fixture {
    fn new(name: &'static str, body: Vec<u8>, spans: u64) -> Fixture {
        let offsets = fixtures::trace_id_offsets(&body);
        Fixture {
            name,
            body,
            spans,
            offsets,
        }
    }
}

/// Numbers every batch sent by this process, so trace ids never repeat.
static BATCH: AtomicU64 = AtomicU64::new(1);

/// One keep-alive connection.
struct Conn {
    stream: TcpStream,
    head: Vec<u8>,
    body: Vec<u8>,
    buf: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr, key: &str, f: &Fixture) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to the server");
        stream.set_nodelay(true).unwrap();
        let head = format!(
            "POST /ingest HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Authorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n",
            f.body.len()
        )
        .into_bytes();
        Conn {
            stream,
            head,
            body: f.body.clone(),
            buf: vec![0; 64 * 1024],
        }
    }

    /// Sends the fixture with fresh trace ids and returns the answer's status.
    fn post(&mut self, f: &Fixture) -> u16 {
        fixtures::stamp(
            &mut self.body,
            &f.offsets,
            BATCH.fetch_add(1, Ordering::Relaxed),
        );
        self.stream.write_all(&self.head).expect("send head");
        self.stream.write_all(&self.body).expect("send body");
        let mut have = 0;
        loop {
            let n = self
                .stream
                .read(&mut self.buf[have..])
                .expect("read answer");
            assert!(n > 0, "server closed the connection");
            have += n;
            let text = &self.buf[..have];
            let Some(end) = text.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = std::str::from_utf8(&text[..end]).expect("ASCII head");
            let status: u16 = head[9..12].parse().expect("status");
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while have < end + 4 + len {
                let n = self.stream.read(&mut self.buf[have..]).expect("read body");
                assert!(n > 0, "server closed the connection");
                have += n;
            }
            return status;
        }
    }
}

/// What one phase did.
#[derive(Default)]
struct Tally {
    accepted: u64,
    refused: u64,
    /// Latency of each accepted request from its due time, microseconds (open loop only).
    latencies_us: Vec<u64>,
    /// (seconds into the phase it was due, latency ms) of requests over 10 ms (open loop).
    slow: Vec<(f64, f64)>,
}

/// Runs `connections` threads against the server. With `rate`, request `i` is due at
/// `start + i / rate` (open loop); without, each connection sends back to back (closed loop).
fn drive(a: &Args, f: &Fixture, connections: usize, rate: Option<f64>, run: Duration) -> Tally {
    let total = Arc::new(Mutex::new(Tally::default()));
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now() + Duration::from_millis(50);
    std::thread::scope(|s| {
        for _ in 0..connections {
            let (total, next) = (total.clone(), next.clone());
            s.spawn(move || {
                let mut conn = Conn::open(a.addr, &a.key, f);
                let mut t = Tally::default();
                loop {
                    let due = match rate {
                        Some(r) => {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            start + Duration::from_secs_f64(i as f64 / r)
                        }
                        None => Instant::now().max(start),
                    };
                    if due >= start + run {
                        break;
                    }
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let status = conn.post(f);
                    if status == 202 {
                        t.accepted += 1;
                        if rate.is_some() {
                            let us = due.elapsed().as_micros() as u64;
                            t.latencies_us.push(us);
                            if us > 10_000 {
                                let at = due.duration_since(start).as_secs_f64();
                                t.slow.push((at, us as f64 / 1000.0));
                            }
                        }
                    } else {
                        t.refused += 1;
                    }
                }
                let mut total = total.lock().unwrap();
                total.accepted += t.accepted;
                total.refused += t.refused;
                total.latencies_us.extend(t.latencies_us);
                total.slow.extend(t.slow);
            });
        }
    });
    Arc::into_inner(total).unwrap().into_inner().unwrap()
}

/// Rows accepted and not yet written, from `/health`.
fn buffered(addr: SocketAddr) -> u64 {
    let body = http_get(addr, "/health", "");
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    v["buffered"].as_u64().unwrap_or(0)
}

/// A query's answer from the local ClickHouse's HTTP interface.
fn clickhouse(query: &str) -> String {
    let ch: SocketAddr = "127.0.0.1:8123".parse().unwrap();
    http_get(ch, "/", query)
}

/// Rows in the `spans` table (raw count: every batch has unique ids).
fn rows_in_clickhouse(database: &str) -> u64 {
    let q = format!("SELECT count() FROM {database}.spans");
    clickhouse(&q).trim().parse().unwrap_or(0)
}

/// Polls `/health` in the background for the largest buffered row count.
struct PeakBuffered {
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

/// Waits until everything accepted is written (or 60 s).
fn wait_drained(addr: SocketAddr) {
    let until = Instant::now() + Duration::from_secs(60);
    while buffered(addr) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Merges ClickHouse is running on the load's database.
fn merges_running(database: &str) -> u64 {
    let q = format!("SELECT count() FROM system.merges WHERE database = '{database}'");
    clickhouse(&q).trim().parse().unwrap_or(0)
}

/// Before a measured phase: everything accepted is in ClickHouse, ClickHouse has finished
/// merging what the phases before left (at most `SETTLE_MAX`), and the table is emptied.
/// ClickHouse shares the two cores: a phase started while it merges the previous phase's parts
/// measures that backlog, and one that starts on the tens of millions of rows the earlier
/// phases leave pays for merging them (in the 07:32 and 08:05 runs of 2026-11-24 the 60 s
/// sustain run fell behind at 8.9 us of ClickHouse CPU per row, while the same rate on a fresh
/// table kept up at 4.7 to 5.8). Merges that a phase's own inserts cause run during it and are
/// part of what it measures.
fn settle(a: &Args) -> f64 {
    wait_drained(a.addr);
    let t0 = Instant::now();
    while merges_running(&a.database) > 0 && t0.elapsed() < SETTLE_MAX {
        std::thread::sleep(Duration::from_millis(200));
    }
    clickhouse(&format!("TRUNCATE TABLE {}.spans", a.database));
    t0.elapsed().as_secs_f64()
}

/// The longest `settle` waits for ClickHouse's merges.
const SETTLE_MAX: Duration = Duration::from_secs(120);

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// Closed-loop maximum: throughput and the server's CPU per byte and per span.
fn max_phase(a: &Args, f: &Fixture, connections: usize) -> Value {
    wait_drained(a.addr);
    let peak = PeakBuffered::start(a.addr);
    let ch = meter::clickhouse_pid();
    let ch_before = ch.map(Cpu::read);
    let before = Cpu::read(a.pid);
    let t0 = Instant::now();
    let buffered_start = buffered(a.addr);
    let tally = drive(a, f, connections, None, a.phase);
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
const RAMP_STEP: Duration = Duration::from_secs(20);

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
fn ramp(a: &Args, f: &Fixture, start: f64) -> Value {
    let mut steps = Vec::new();
    let mut best: Option<f64> = None;
    let mut rate = start;
    for _ in 0..12 {
        let settled = settle(a);
        let t0 = Instant::now();
        let tally = drive(a, f, a.connections, Some(rate), RAMP_STEP);
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
/// server's CPU per byte and per span in this steady state (nothing refused, nothing spooled),
/// counted until the flush thread has written every accepted row.
fn open_phase(a: &Args, f: &Fixture, rate: f64, label: &str) -> Value {
    let settled = settle(a);
    let peak = PeakBuffered::start(a.addr);
    let before = Cpu::read(a.pid);
    let t0 = Instant::now();
    let tally = drive(a, f, a.connections, Some(rate), a.phase);
    let secs = t0.elapsed().as_secs_f64();
    wait_drained(a.addr);
    let cpu = Cpu::read(a.pid).since(&before);
    let peak_buffered = peak.finish();
    let bytes = tally.accepted * f.body.len() as u64;
    let spans = tally.accepted * f.spans;
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
        "offered_per_s": rate,
        "connections": a.connections,
        "accepted": tally.accepted,
        "refused": tally.refused,
        "p50_ms": percentile(&l, 50.0),
        "p99_ms": percentile(&l, 99.0),
        "p999_ms": percentile(&l, 99.9),
        "max_ms": l.last().map_or(0.0, |&v| v as f64 / 1000.0),
        "peak_buffered_rows": peak_buffered,
        "over_10ms": slow_count,
        "over_10ms_at_s_ms": slow,
        "seconds": secs,
        "spans_per_s": spans as f64 / secs,
        "body_mb_per_s": bytes as f64 / secs / 1e6,
        "cpu": cpu.to_json(),
        "cpu_s_per_gb": cpu.total / (bytes as f64 / 1e9),
        "worker_cpu_s_per_gb": cpu.workers / (bytes as f64 / 1e9),
        "cpu_s_per_million_spans": cpu.total / (spans as f64 / 1e6),
        "spans_per_cpu_s": spans as f64 / cpu.total,
        "worker_cpu_us_per_request": cpu.workers / tally.accepted as f64 * 1e6,
        "flush_cpu_us_per_row": cpu.flush / spans as f64 * 1e6,
        "body_bytes": f.body.len(),
        "spans_per_batch": f.spans,
    })
}

/// Open loop at `rate` for the sustain time, sampling intake and ClickHouse every second.
fn sustain_phase(a: &Args, f: &Fixture, rate: f64) -> Value {
    let settled = settle(a);
    let ch = meter::clickhouse_pid();
    let (server_before, ch_before) = (Cpu::read(a.pid), ch.map(Cpu::read));
    // `settle` emptied the table; the server's count covers every phase.
    let rows_before = rows_in_clickhouse(&a.database);
    let accepted_before = meter::metric(a.admin, "traceingest_spans_accepted_total");
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
                        "rows_in_clickhouse": rows_in_clickhouse(&a.database),
                        "buffered_rows": buffered(a.addr),
                    }));
                    std::thread::sleep(Duration::from_secs(1));
                }
                out
            })
        };
        let tally = drive(a, f, a.connections, Some(rate), a.sustain);
        stop.store(true, Ordering::Relaxed);
        (tally, sampler.join().unwrap())
    });
    let (tally, samples) = samples;
    // After intake stops: how long until ClickHouse has every row.
    let t0 = Instant::now();
    let target =
        meter::metric(a.admin, "traceingest_spans_accepted_total") - accepted_before + rows_before;
    while rows_in_clickhouse(&a.database) < target && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let catch_up = t0.elapsed().as_secs_f64();
    let server = Cpu::read(a.pid).since(&server_before);
    let ch_cpu = match (ch, ch_before) {
        (Some(pid), Some(b)) => Cpu::read(pid).since(&b).total,
        _ => f64::NAN,
    };
    let written = rows_in_clickhouse(&a.database).saturating_sub(rows_before) as f64;
    let first = &samples[0];
    let last = &samples[samples.len() - 1];
    let dt = last["t"].as_f64().unwrap() - first["t"].as_f64().unwrap();
    let d = |k: &str| last[k].as_u64().unwrap_or(0) as f64 - first[k].as_u64().unwrap_or(0) as f64;
    let max_buffered = samples
        .iter()
        .filter_map(|s| s["buffered_rows"].as_u64())
        .max()
        .unwrap_or(0);
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
        "rows_in_clickhouse_at_end": rows_in_clickhouse(&a.database),
        "accepted_spans_at_end": target,
        "samples": samples,
    })
}

/// Waits until the server knows the key (it reloads keys periodically).
fn wait_for_key(a: &Args) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = TcpStream::connect(a.addr).expect("connect to the server");
        let req = format!(
            "POST /ingest HTTP/1.0\r\nAuthorization: Bearer {}\r\nContent-Length: 2\r\n\r\n{{}}",
            a.key
        );
        s.write_all(req.as_bytes()).expect("send");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        if !out.starts_with(b"HTTP/1.1 401") && !out.starts_with(b"HTTP/1.0 401") {
            return;
        }
        assert!(Instant::now() < until, "the server never accepted the key");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn main() {
    let a = parse_args();
    wait_for_key(&a);
    let typical = Fixture::new(
        "typical",
        fixtures::typical(),
        fixtures::span_count(50, fixtures::SPANS_PER_TRACE) as u64,
    );
    let small = Fixture::new("small", fixtures::small(), 5);

    // Warm-up at a rate ClickHouse on the same cores keeps up with: a closed loop here would
    // fill the write buffer and leave the next phase replaying the spool.
    eprintln!("loadgen: warming up");
    drive(&a, &typical, 2, Some(10.0), Duration::from_secs(2));
    wait_drained(a.addr);
    if let Some(rate) = a.only.as_deref().and_then(|o| o.strip_prefix("open:")) {
        let rate: f64 = rate.parse().expect("--only open:<requests per second>");
        eprintln!("loadgen: open loop at {rate} req/s only");
        eprintln!("  {}", open_phase(&a, &typical, rate, "only"));
        return;
    }
    if let Some(rate) = a
        .only
        .as_deref()
        .and_then(|o| o.strip_prefix("open-small:"))
    {
        let rate: f64 = rate
            .parse()
            .expect("--only open-small:<requests per second>");
        eprintln!("loadgen: open loop of the small fixture at {rate} req/s only");
        eprintln!("  {}", open_phase(&a, &small, rate, "only"));
        return;
    }
    if let Some((which, start)) = a
        .only
        .as_deref()
        .and_then(|o| o.strip_prefix("ramp-"))
        .and_then(|o| o.split_once(':'))
    {
        let start: f64 = start
            .parse()
            .expect("--only ramp-typical|ramp-small:<start req/s>");
        let f = if which == "small" { &small } else { &typical };
        eprintln!("loadgen: ramp of the {which} fixture from {start} req/s only");
        eprintln!("  {}", ramp(&a, f, start));
        return;
    }
    if let Some(only) = &a.only {
        let f = if only == "small" { &small } else { &typical };
        eprintln!("loadgen: closed loop, {only} only");
        eprintln!("  {}", max_phase(&a, f, 4));
        return;
    }
    eprintln!("loadgen: closed loop, typical");
    let max_typical = max_phase(&a, &typical, 4);
    eprintln!("  {max_typical}");
    eprintln!("loadgen: closed loop, small");
    let max_small = max_phase(&a, &small, 4);
    eprintln!("  {max_small}");
    // The open-loop rates are fractions of the most the server keeps up with, ClickHouse
    // included (an offered rate above that only queues until the write buffer is full, then
    // is refused), found by a ramp from the closed loop's sustained rate.
    eprintln!("loadgen: ramp, typical");
    let ramp_typical = ramp(
        &a,
        &typical,
        max_typical["sustained_requests_per_s"].as_f64().unwrap(),
    );
    eprintln!("  {ramp_typical}");
    eprintln!("loadgen: ramp, small");
    let ramp_small = ramp(
        &a,
        &small,
        max_small["sustained_requests_per_s"].as_f64().unwrap(),
    );
    eprintln!("  {ramp_small}");
    let max_rate = ramp_typical["max_per_s"].as_f64().unwrap();
    let mut open = Vec::new();
    for (pct, label) in [(0.5, "50%"), (0.8, "80%")] {
        eprintln!("loadgen: open loop at {label} of the maximum");
        let v = open_phase(&a, &typical, max_rate * pct, label);
        eprintln!("  {v}");
        open.push(v);
    }
    // The small fixture's steady state, for its CPU per span.
    let max_small_rate = ramp_small["max_per_s"].as_f64().unwrap();
    eprintln!("loadgen: open loop of the small fixture at 80% of its maximum");
    let open_small = open_phase(&a, &small, max_small_rate * 0.8, "80%");
    eprintln!("  {open_small}");
    let mut sustain = Value::Null;
    if !a.sustain.is_zero() {
        eprintln!("loadgen: sustain at 80% for {:?}", a.sustain);
        sustain = sustain_phase(&a, &typical, max_rate * 0.8);
        eprintln!(
            "  clickhouse {:.0} rows/s vs accepted {:.0} spans/s",
            sustain["clickhouse_rows_per_s"], sustain["accepted_spans_per_s"]
        );
    }
    let status = meter::proc_status(a.pid);
    let result = json!({
        "connections": a.connections,
        "phase_seconds": a.phase.as_secs_f64(),
        "max_typical": max_typical,
        "max_small": max_small,
        "ramp_typical": ramp_typical,
        "ramp_small": ramp_small,
        "open_loop": open,
        "open_small": open_small,
        "sustain": sustain,
        "vm_hwm_bytes": status.0,
        "vm_rss_bytes": status.1,
    });
    if let Some(dir) = std::path::Path::new(&a.out).parent() {
        std::fs::create_dir_all(dir).expect("create output directory");
    }
    std::fs::write(&a.out, serde_json::to_string_pretty(&result).unwrap()).expect("write");
    eprintln!("loadgen: wrote {}", a.out);
}
