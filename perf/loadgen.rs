//! Open-loop load generator and meter for a running traceingest: drives `POST /ingest` and
//! `POST /v1/traces` over loopback with the seeded fixtures and measures what the server and
//! its ClickHouse spend, writing JSON figures.
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
//!    accepted, the rows counted in ClickHouse and the rows buffered in the server;
//! 5. `open_sdk`: 1,000 requests/s of the 3-span batch real SDKs send, on 2 connections;
//!    `open_otlp`, `open_otlp_gzip`, `open_otlp_v1`: the 512-span OTLP export as protobuf, as
//!    gzip-compressed protobuf and as the same spans in v1 JSON, at `--otlp-rate` each (after
//!    4 s of each of the protobuf and the v1 export at that rate, `warm`); then
//!    `--otlp-rounds` - 1 (2) more rounds of the protobuf and v1 phases, alternating
//!    (`otlp_rounds`: each round's CPU per GB and per export of both).
//!
//! Every open loop and the sustain run also carry ClickHouse's bill (`bill.rs`, key
//! `clickhouse`): its CPU by thread until its merges are quiet, parts, bytes on disk.
//! Every request gets unique trace ids (`drive.rs`), so no row is deduplicated away.
//!
//! `--only typical|small|open:<req/s>|open-small:<req/s>|open-sdk:<req/s>|open-otlp:<req/s>|`
//! `open-otlp-gzip:<req/s>|open-otlp-v1:<req/s>|sustain:<req/s>|ramp-typical:<req/s>|`
//! `ramp-small:<req/s>` runs
//! one phase alone (after the warm-up; an open-loop phase also after 4 s of its own fixture at its
//! rate, `warm`), e.g. under `perf record`, and writes its JSON to `--out`
//! (default `perf/out/only.json`); an open-loop phase also counts the requests over 10 ms and
//! lists when the first 200 of them were due, which shows whether slow requests come alone or
//! in a stall.

#[path = "answer.rs"]
mod answer;
#[path = "bill.rs"]
mod bill;
#[path = "drive.rs"]
mod drive;
#[path = "fixtures.rs"]
mod fixtures;
#[path = "meter.rs"]
mod meter;
#[path = "otlp_fixtures.rs"]
#[rustfmt::skip]
mod otlp_fixtures;
#[path = "phases.rs"]
mod phases;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use bill::ClickHouse;
use drive::{drive, Fixture};
use phases::{max_phase, open_phase, ramp, sustain_phase, wait_drained};

pub struct Args {
    addr: SocketAddr,
    /// The server's admin listener, for `/metrics`.
    admin: SocketAddr,
    key: String,
    pid: u32,
    database: String,
    connections: usize,
    phase: Duration,
    sustain: Duration,
    /// OTLP exports per second of the three OTLP phases (the same span rate for each).
    otlp_rate: f64,
    /// Rounds of the protobuf and v1 twin phases, alternating (`--otlp-rounds`): the machine's
    /// speed drifts between phases, so one pair alone can mislead.
    otlp_rounds: usize,
    out: Option<String>,
    /// Only this phase (see the module's doc), e.g. to profile the server under it.
    only: Option<String>,
    /// The ClickHouse the server writes to (`--clickhouse-http`, `--clickhouse-pid`).
    ch: ClickHouse,
}

/// The sdk phase's rate: issue 18's "1,000 such requests per second on 2 connections".
const SDK_RATE: f64 = 1000.0;

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
        otlp_rate: 40.0,
        otlp_rounds: 3,
        out: None,
        only: None,
        ch: ClickHouse {
            http: "127.0.0.1:8123".parse().unwrap(),
            pid: None,
        },
    };
    let mut ch_pid = None;
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
            "--otlp-rate" => a.otlp_rate = v.parse().expect("--otlp-rate <exports per second>"),
            "--otlp-rounds" => a.otlp_rounds = v.parse().expect("--otlp-rounds <rounds>"),
            "--out" => a.out = Some(v),
            "--only" => a.only = Some(v),
            "--clickhouse-http" => a.ch.http = v.parse().expect("--clickhouse-http host:port"),
            "--clickhouse-pid" => ch_pid = Some(v.parse().expect("--clickhouse-pid")),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        !a.key.is_empty() && a.pid != 0 && !a.database.is_empty(),
        "--key, --pid and --database are needed"
    );
    // Without a pid: the first ClickHouse server process running, as before there was a
    // ClickHouse of the harness's own.
    a.ch.pid = ch_pid.or_else(meter::clickhouse_pid);
    a
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

/// The gzip phase's fixture: a distinct compressed body for every request a phase at `rate`
/// and its warm-up (`warm`) send, plus 10%.
fn otlp_gzip(a: &Args, rate: f64) -> Fixture {
    let count = (rate * (a.phase + WARM).as_secs_f64() * 1.1).ceil() as usize;
    eprintln!("loadgen: compressing {count} OTLP exports");
    Fixture::otlp_gzip(count.max(1))
}

/// How long an open-loop phase's own fixture is sent at its rate before the phase is measured
/// (`warm`).
const WARM: Duration = Duration::from_secs(4);

/// Sends `f` at `rate` for `WARM`, then waits until the server has stored it. The first
/// seconds at a new rate and body size grow the worker's and the flush thread's heaps to
/// what that load holds (a second of row batches, the insert's column buffers): tens of
/// thousands of page faults, paid once by a long-running server, not per request. Measured
/// without this, whichever phase ran first paid them: the OTLP export measured before its
/// v1 twin in one server cost 3-5% more CPU per GB than after it (perf/RESULTS.md).
fn warm(a: &Args, f: &Fixture, rate: f64) {
    let connections = f.connections.unwrap_or(a.connections);
    drive(a.addr, &a.key, f, connections, Some(rate), WARM);
    wait_drained(a.addr);
}

/// One phase alone, named as `--only` names it.
fn only_phase(a: &Args, only: &str, typical: &Fixture, small: &Fixture) -> Value {
    let (name, rate) = match only.split_once(':') {
        Some((n, r)) => (n, Some(r.parse::<f64>().expect("--only <phase>:<req/s>"))),
        None => (only, None),
    };
    eprintln!("loadgen: {only} only");
    let open = |f: &Fixture, r: f64| {
        warm(a, f, r);
        open_phase(a, f, r, "only")
    };
    match (name, rate) {
        ("typical", None) => max_phase(a, typical, 4),
        ("small", None) => max_phase(a, small, 4),
        ("open", Some(r)) => open(typical, r),
        ("open-small", Some(r)) => open(small, r),
        ("open-sdk", Some(r)) => open(&Fixture::sdk(), r),
        ("open-otlp", Some(r)) => open(&Fixture::otlp(), r),
        ("open-otlp-gzip", Some(r)) => open(&otlp_gzip(a, r), r),
        ("open-otlp-v1", Some(r)) => open(&Fixture::otlp_v1(), r),
        ("sustain", Some(r)) => sustain_phase(a, typical, r),
        ("ramp-typical", Some(r)) => ramp(a, typical, r),
        ("ramp-small", Some(r)) => ramp(a, small, r),
        _ => panic!(
            "--only: typical, small, or one of open, open-small, open-sdk, open-otlp, \
             open-otlp-gzip, open-otlp-v1, sustain, ramp-typical, ramp-small with :<req/s>; \
             got {only}"
        ),
    }
}

fn write_json(path: &str, v: &Value) {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir).expect("create output directory");
    }
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).expect("write");
    eprintln!("loadgen: wrote {path}");
}

fn main() {
    let a = parse_args();
    wait_for_key(&a);
    let typical = Fixture::v1(
        "typical",
        fixtures::typical(),
        fixtures::span_count(50, fixtures::SPANS_PER_TRACE) as u64,
    );
    let small = Fixture::v1("small", fixtures::small(), 5);

    // Warm-up at a rate ClickHouse on the same cores keeps up with: a closed loop here would
    // fill the write buffer and leave the next phase replaying the spool.
    eprintln!("loadgen: warming up");
    drive(
        a.addr,
        &a.key,
        &typical,
        2,
        Some(10.0),
        Duration::from_secs(2),
    );
    wait_drained(a.addr);
    if let Some(only) = &a.only {
        let mut v = only_phase(&a, only, &typical, &small);
        eprintln!("  {v}");
        v["only"] = json!(only);
        v["clickhouse_version"] = json!(a.ch.version());
        write_json(a.out.as_deref().unwrap_or("perf/out/only.json"), &v);
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
    // Fixed rates, not fractions of a maximum: what a user's traffic looks like.
    eprintln!("loadgen: small requests (sdk fixture) at {SDK_RATE} req/s on 2 connections");
    let open_sdk = open_phase(&a, &Fixture::sdk(), SDK_RATE, "sdk");
    eprintln!("  {open_sdk}");
    let rate = a.otlp_rate;
    // Both at their rate first: the OTLP rounds compare the two, and the first phase at a new
    // load would otherwise pay the heaps' growth (`warm`).
    warm(&a, &Fixture::otlp(), rate);
    warm(&a, &Fixture::otlp_v1(), rate);
    eprintln!("loadgen: OTLP protobuf at {rate} exports/s");
    let open_otlp = open_phase(&a, &Fixture::otlp(), rate, "otlp");
    eprintln!("  {open_otlp}");
    let gzip = otlp_gzip(&a, rate);
    eprintln!("loadgen: OTLP protobuf, gzip, at {rate} exports/s");
    let open_otlp_gzip = open_phase(&a, &gzip, rate, "otlp-gzip");
    eprintln!("  {open_otlp_gzip}");
    drop(gzip);
    eprintln!("loadgen: the same spans as v1 JSON at {rate} batches/s");
    let open_otlp_v1 = open_phase(&a, &Fixture::otlp_v1(), rate, "otlp-v1");
    eprintln!("  {open_otlp_v1}");
    // More rounds of the two, alternating (v1 first in even rounds), for issue 15's ratio:
    // each round's CPU per GB decoded and per export, protobuf and v1.
    let figures = |p: &Value| {
        json!({
            "cpu_s_per_decoded_gb": p["cpu_s_per_decoded_gb"],
            "cpu_us_per_request": p["cpu_us_per_request"]["total"],
        })
    };
    let mut otlp_rounds = vec![json!({"otlp": figures(&open_otlp), "v1": figures(&open_otlp_v1)})];
    for round in 2..=a.otlp_rounds {
        eprintln!(
            "loadgen: OTLP protobuf and v1 twin, round {round} of {}",
            a.otlp_rounds
        );
        let phase = |v1: bool| {
            if v1 {
                figures(&open_phase(&a, &Fixture::otlp_v1(), rate, "otlp-v1"))
            } else {
                figures(&open_phase(&a, &Fixture::otlp(), rate, "otlp"))
            }
        };
        let (first, second) = (phase(round % 2 == 0), phase(round % 2 == 1));
        let (otlp, v1) = if round % 2 == 0 {
            (second, first)
        } else {
            (first, second)
        };
        eprintln!("  otlp {otlp} v1 {v1}");
        otlp_rounds.push(json!({"otlp": otlp, "v1": v1}));
    }
    let status = meter::proc_status(a.pid);
    let result = json!({
        "connections": a.connections,
        "phase_seconds": a.phase.as_secs_f64(),
        "clickhouse_version": a.ch.version(),
        "max_typical": max_typical,
        "max_small": max_small,
        "ramp_typical": ramp_typical,
        "ramp_small": ramp_small,
        "open_loop": open,
        "open_small": open_small,
        "sustain": sustain,
        "open_sdk": open_sdk,
        "otlp_rate": rate,
        "open_otlp": open_otlp,
        "open_otlp_gzip": open_otlp_gzip,
        "open_otlp_v1": open_otlp_v1,
        "otlp_rounds": otlp_rounds,
        "vm_hwm_bytes": status.0,
        "vm_rss_bytes": status.1,
    });
    write_json(a.out.as_deref().unwrap_or("perf/out/load.json"), &result);
}
