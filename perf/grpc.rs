//! OTLP over gRPC against OTLP/HTTP on the same export: the 512-span protobuf export of the
//! benches (`otlp_fixtures::export_512`), sent at `--rate` exports a second for `--secs`, once
//! as `POST /v1/traces` on a keep-alive HTTP/1.1 connection and once as
//! `TraceService/Export` on one HTTP/2 connection (h2's client, the one tonic uses), alternating
//! for `--rounds` rounds, so both see the same machine. Every export gets trace ids of its own.
//!
//! ```text
//! target/release/examples/grpc --addr A --key K --pid P [--rate 40] [--secs 10] [--rounds 3]
//!     [--only http|grpc]
//! ```
//!
//! The window of a phase runs from its first export until the server reports nothing buffered
//! (`/health`), so the flush thread's inserts count. The server's CPU is from `/proc/<pid>/stat`
//! (all threads). Prints one JSON object per phase: exports answered, CPU per export and per
//! GB of the protobuf, p50/p99 latency.

#[path = "answer.rs"]
mod answer;
#[path = "meter.rs"]
mod meter;
#[path = "otlp_fixtures.rs"]
mod otlp_fixtures;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;

struct Args {
    addr: SocketAddr,
    key: String,
    pid: u32,
    rate: f64,
    secs: f64,
    rounds: usize,
    /// `http` or `grpc`: only that protocol's phases (for a profile of one).
    only: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        addr: "127.0.0.1:4000".parse().unwrap(),
        key: String::new(),
        pid: 0,
        rate: 40.0,
        secs: 10.0,
        rounds: 3,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => a.addr = v.parse().expect("--addr host:port"),
            "--key" => a.key = v,
            "--pid" => a.pid = v.parse().expect("--pid <server pid>"),
            "--rate" => a.rate = v.parse().expect("--rate <exports per second>"),
            "--secs" => a.secs = v.parse().expect("--secs <seconds>"),
            "--rounds" => a.rounds = v.parse().expect("--rounds <n>"),
            "--only" => a.only = Some(v),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        a.pid > 0 && !a.key.is_empty(),
        "--pid and --key are required"
    );
    a
}

/// The export, and where every span's trace id sits in it.
struct Export {
    body: Vec<u8>,
    trace_ids: Vec<usize>,
    stamp: u64,
}

impl Export {
    fn new() -> Export {
        let spans = otlp_fixtures::export_512_spans();
        let body = otlp_fixtures::otlp_protobuf(&spans);
        let trace_ids = otlp_fixtures::trace_id_offsets(&body, &spans)
            .into_iter()
            .map(|(at, _)| at)
            .collect();
        Export {
            body,
            trace_ids,
            stamp: std::process::id() as u64 * 1_000_000_000,
        }
    }

    /// The next export: the first 8 bytes of every trace id replaced by a new number, so no
    /// two exports share a trace (the spans of one trace keep sharing theirs).
    fn next(&mut self) -> &[u8] {
        self.stamp += 1;
        for &at in &self.trace_ids {
            self.body[at..at + 8].copy_from_slice(&self.stamp.to_be_bytes());
        }
        &self.body
    }
}

/// Sleeps until export `i` is due.
fn pace(start: Instant, i: usize, rate: f64) {
    let due = start + Duration::from_secs_f64(i as f64 / rate);
    if let Some(wait) = due.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
}

/// `POST /v1/traces` (protobuf) for the phase; latencies in µs of the exports answered 200.
fn http_phase(a: &Args, export: &mut Export) -> (usize, Vec<u64>) {
    let mut stream = TcpStream::connect(a.addr).expect("connect");
    stream.set_nodelay(true).unwrap();
    let mut buf = Vec::new();
    let (mut ok, mut lat) = (0, Vec::new());
    let n = (a.secs * a.rate) as usize;
    let start = Instant::now();
    for i in 0..n {
        pace(start, i, a.rate);
        let body = export.next();
        let head = format!(
            "POST /v1/traces HTTP/1.1\r\nHost: perf\r\nContent-Type: application/x-protobuf\r\n\
             x-api-key: {}\r\nContent-Length: {}\r\n\r\n",
            a.key,
            body.len()
        );
        let t = Instant::now();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        if answer::read(&mut stream, &mut buf) == 200 {
            ok += 1;
            lat.push(t.elapsed().as_micros() as u64);
        }
    }
    (ok, lat)
}

/// `TraceService/Export` on one HTTP/2 connection for the phase.
fn grpc_phase(a: &Args, export: &mut Export) -> (usize, Vec<u64>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(a.addr)
            .await
            .expect("connect");
        tcp.set_nodelay(true).unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let (mut ok, mut lat) = (0, Vec::new());
        let n = (a.secs * a.rate) as usize;
        let start = Instant::now();
        let mut client = client.ready().await.expect("ready");
        for i in 0..n {
            let due = start + Duration::from_secs_f64(i as f64 / a.rate);
            tokio::time::sleep_until(due.into()).await;
            let body = export.next();
            let mut message = vec![0];
            message.extend_from_slice(&(body.len() as u32).to_be_bytes());
            message.extend_from_slice(body);
            let request = http::Request::builder()
                .method("POST")
                .uri(format!(
                    "http://{}/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                    a.addr
                ))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .header("x-api-key", &a.key)
                .body(())
                .unwrap();
            let t = Instant::now();
            let (answer, mut sending) = client.send_request(request, false).expect("send");
            sending.send_data(Bytes::from(message), true).expect("data");
            let answer = answer.await.expect("answer");
            let mut recv = answer.into_body();
            while let Some(piece) = recv.data().await {
                let piece = piece.expect("data");
                let _ = recv.flow_control().release_capacity(piece.len());
            }
            let trailers = recv.trailers().await.expect("trailers");
            if trailers
                .and_then(|t| t.get("grpc-status").cloned())
                .as_ref()
                == Some(&http::HeaderValue::from_static("0"))
            {
                ok += 1;
                lat.push(t.elapsed().as_micros() as u64);
            }
            client = client.ready().await.expect("ready");
        }
        (ok, lat)
    })
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p / 100.0).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let a = parse_args();
    let mut export = Export::new();
    let bytes = export.body.len();
    // A short warm-up of each, not measured.
    let warm = Args {
        secs: 1.0,
        only: None,
        ..a
    };
    http_phase(&warm, &mut export);
    grpc_phase(&warm, &mut export);
    meter::wait_drained(warm.addr);
    let a = Args {
        secs: a.secs,
        only: a.only,
        ..warm
    };
    for round in 1..=a.rounds {
        for protocol in ["http", "grpc"] {
            if a.only.as_deref().is_some_and(|only| only != protocol) {
                continue;
            }
            let before = meter::Cpu::read(a.pid);
            let t0 = Instant::now();
            let (ok, mut lat) = match protocol {
                "http" => http_phase(&a, &mut export),
                _ => grpc_phase(&a, &mut export),
            };
            meter::wait_drained(a.addr);
            let window = t0.elapsed().as_secs_f64();
            let cpu = meter::Cpu::read(a.pid).since(&before);
            lat.sort_unstable();
            let gb = (ok * bytes) as f64 / 1e9;
            println!(
                "{}",
                json!({
                    "round": round,
                    "protocol": protocol,
                    "exports": ok,
                    "export_bytes": bytes,
                    "window_s": window,
                    "server_cpu_s": cpu.total,
                    "cpu_ms_per_export": cpu.total / ok.max(1) as f64 * 1e3,
                    "cpu_s_per_gb": cpu.total / gb,
                    "workers_cpu_s": cpu.workers,
                    "flush_cpu_s": cpu.flush,
                    "p50_ms": pct(&lat, 50.0),
                    "p99_ms": pct(&lat, 99.0),
                })
            );
        }
    }
}
