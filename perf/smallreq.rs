//! Small-request meter: an open loop of small bodies (`fixtures::sdk()` by default) at a
//! moderate rate on a few keep-alive connections, and what the server spends per request,
//! thread by thread: CPU, wake-ups, and (optionally) ClickHouse's CPU for the same rows.
//!
//! ```text
//! target/release/examples/smallreq --addr A --key K --pid P [--rate 1000] [--connections 2]
//!     [--secs 20] [--fixture sdk|small|health] [--one-write] [--ch-pid N] [--label L]
//!     [--cpu N]
//! ```
//!
//! Request `i` is due at `start + i / rate` (open loop: a slow answer does not slow the offered
//! rate; `--rate 0` sends back to back instead, a closed loop for the saturated cost), sent as a head and then a body, two writes like most HTTP clients (`--one-write`: one).
//! `--fixture health` sends `GET /health` instead: what the connection's plumbing alone costs.
//! The window runs from the first request until the server reports nothing buffered (`/health`),
//! so the flush thread's inserts of these rows count. Per thread of the server it reads
//! `/proc/<pid>/task/<tid>/schedstat` (run time in ns, exact where `stat`'s ticks are 10 ms),
//! `stat` (user and system split, in ticks) and `status` (voluntary and involuntary context
//! switches: a voluntary switch is a sleep, so each is one wake-up). ClickHouse's CPU is from
//! `/proc/<ch-pid>/stat` over the same window. Prints one JSON object per run; several runs
//! against two servers alternate old and new (`perf/smallreq.sh`).

#[path = "answer.rs"]
mod answer;
#[path = "fixtures.rs"]
mod fixtures;
#[path = "meter.rs"]
mod meter;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

struct Args {
    addr: SocketAddr,
    key: String,
    pid: u32,
    rate: f64,
    connections: usize,
    secs: f64,
    fixture: String,
    one_write: bool,
    ch_pid: Option<u32>,
    label: String,
    warmup: f64,
    /// Pin the sending threads to this CPU (the server's worker 0 is pinned to CPU 0).
    cpu: Option<usize>,
}

fn parse_args() -> Args {
    let mut a = Args {
        addr: "127.0.0.1:4000".parse().unwrap(),
        key: String::new(),
        pid: 0,
        rate: 1000.0,
        connections: 2,
        secs: 20.0,
        fixture: "sdk".into(),
        one_write: false,
        ch_pid: None,
        label: String::new(),
        warmup: 2.0,
        cpu: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(k) = args.next() {
        if k == "--one-write" {
            a.one_write = true;
            continue;
        }
        let v = args.next().unwrap_or_default();
        match k.as_str() {
            "--addr" => a.addr = v.parse().expect("--addr host:port"),
            "--key" => a.key = v,
            "--pid" => a.pid = v.parse().expect("--pid"),
            "--rate" => a.rate = v.parse().expect("--rate"),
            "--connections" => a.connections = v.parse().expect("--connections"),
            "--secs" => a.secs = v.parse().expect("--secs"),
            "--fixture" => a.fixture = v,
            "--ch-pid" => a.ch_pid = Some(v.parse().expect("--ch-pid")),
            "--label" => a.label = v,
            "--warmup-secs" => a.warmup = v.parse().expect("--warmup-secs"),
            "--cpu" => a.cpu = Some(v.parse().expect("--cpu")),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        !a.key.is_empty() && a.pid != 0,
        "--key and --pid are required"
    );
    a
}

/// One thread's counters.
#[derive(Default, Clone, Copy)]
struct Task {
    run_ns: u64,
    user_ticks: u64,
    system_ticks: u64,
    voluntary: u64,
    involuntary: u64,
    minor_faults: u64,
}

/// Every thread of `pid`, by name; threads of one kind (`worker-N`) are summed as `workers`.
fn tasks(pid: u32) -> BTreeMap<String, Task> {
    let mut out: BTreeMap<String, Task> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in dir.flatten() {
        let p = task.path();
        let read = |f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
        let name = read("comm").trim().to_string();
        let name = if name.starts_with("worker-") {
            "workers".to_string()
        } else {
            name
        };
        let run_ns = read("schedstat")
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let stat = read("stat");
        let fields: Vec<u64> = stat
            .rfind(')')
            .map(|i| &stat[i + 2..])
            .unwrap_or("")
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let status = read("status");
        let count = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let t = out.entry(name).or_default();
        t.run_ns += run_ns;
        t.minor_faults += fields.get(7).copied().unwrap_or(0);
        t.user_ticks += fields.get(11).copied().unwrap_or(0);
        t.system_ticks += fields.get(12).copied().unwrap_or(0);
        t.voluntary += count("voluntary_ctxt_switches:");
        t.involuntary += count("nonvoluntary_ctxt_switches:");
    }
    out
}

static BATCH: AtomicU64 = AtomicU64::new(1);

/// One keep-alive connection sending the fixture.
struct Conn {
    stream: TcpStream,
    head: Vec<u8>,
    body: Vec<u8>,
    offsets: Vec<usize>,
    one_write: bool,
    buf: Vec<u8>,
}

impl Conn {
    fn open(a: &Args, body: &[u8]) -> Conn {
        let stream = TcpStream::connect(a.addr).expect("connect to the server");
        stream.set_nodelay(true).unwrap();
        let head = if body.is_empty() {
            format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", a.addr).into_bytes()
        } else {
            format!(
                "POST /ingest HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
                 Authorization: Bearer {}\r\nContent-Length: {}\r\n\r\n",
                a.addr,
                a.key,
                body.len()
            )
            .into_bytes()
        };
        let body = body.to_vec();
        let offsets = fixtures::trace_id_offsets(&body);
        // Seeds differ per process so runs never repeat trace ids (no row deduplicated away).
        let seed = (u64::from(std::process::id()) & 0xFFFF) << 24;
        BATCH.fetch_max(seed, Ordering::Relaxed);
        Conn {
            stream,
            head,
            body,
            offsets,
            one_write: a.one_write,
            buf: vec![0; 64 * 1024],
        }
    }

    fn post(&mut self) -> u16 {
        fixtures::stamp(
            &mut self.body,
            &self.offsets,
            BATCH.fetch_add(1, Ordering::Relaxed),
        );
        if self.one_write || self.body.is_empty() {
            let mut all = self.head.clone();
            all.extend_from_slice(&self.body);
            self.stream.write_all(&all).expect("send");
        } else {
            self.stream.write_all(&self.head).expect("send head");
            self.stream.write_all(&self.body).expect("send body");
        }
        answer::read(&mut self.stream, &mut self.buf)
    }
}

/// Open loop for `secs`: (accepted, refused, latencies in microseconds from the due time).
fn drive(a: &Args, body: &[u8], secs: f64) -> (u64, u64, Vec<u64>) {
    let next = AtomicU64::new(0);
    let total = Mutex::new((0u64, 0u64, Vec::new()));
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + Duration::from_secs_f64(secs);
    std::thread::scope(|s| {
        for _ in 0..a.connections {
            s.spawn(|| {
                if let Some(cpu) = a.cpu {
                    pin(cpu);
                }
                let mut conn = Conn::open(a, body);
                let (mut ok, mut refused, mut lat) = (0, 0, Vec::new());
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    // `--rate 0`: closed loop, each connection sends back to back.
                    let due = if a.rate > 0.0 {
                        start + Duration::from_secs_f64(i as f64 / a.rate)
                    } else {
                        Instant::now().max(start)
                    };
                    if due >= end {
                        break;
                    }
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    if matches!(conn.post(), 200 | 202) {
                        ok += 1;
                        lat.push(due.elapsed().as_micros() as u64);
                    } else {
                        refused += 1;
                    }
                }
                let mut t = total.lock().unwrap();
                t.0 += ok;
                t.1 += refused;
                t.2.extend(lat);
            });
        }
    });
    total.into_inner().unwrap()
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((p / 100.0) * (sorted.len() - 1) as f64).round() as usize] as f64 / 1000.0
}

fn main() {
    let a = parse_args();
    let (body, spans) = match a.fixture.as_str() {
        "sdk" => (fixtures::sdk(), fixtures::SDK_SPANS as u64),
        "small" => (fixtures::small(), 5),
        // No body: `GET /health`, the cost of the connection's plumbing alone.
        "health" => (Vec::new(), 0),
        other => panic!("unknown fixture {other} (sdk, small or health)"),
    };
    if a.warmup > 0.0 {
        drive(&a, &body, a.warmup);
        meter::wait_drained(a.addr);
    }
    let hz = meter::ticks_per_second();
    let ch_before = a.ch_pid.map(meter::Cpu::read);
    let before = tasks(a.pid);
    let t0 = Instant::now();
    let (accepted, refused, mut lat) = drive(&a, &body, a.secs);
    let sent_s = t0.elapsed().as_secs_f64();
    meter::wait_drained(a.addr);
    let window_s = t0.elapsed().as_secs_f64();
    let after = tasks(a.pid);
    let ch_cpu = match (a.ch_pid, ch_before) {
        (Some(pid), Some(b)) => meter::Cpu::read(pid).since(&b).total,
        _ => f64::NAN,
    };
    lat.sort_unstable();
    let per = |v: f64| v / accepted.max(1) as f64;
    // Per request: run, user and system CPU seconds, wake-ups, preemptions, page faults.
    let figures = |run: f64, user: f64, sys: f64, vol: u64, invol: u64, faults: u64| {
        json!({
            "cpu_us_per_req": per(run) * 1e6,
            "user_us_per_req": per(user) * 1e6,
            "sys_us_per_req": per(sys) * 1e6,
            "wakeups_per_req": per(vol as f64),
            "preempted_per_req": per(invol as f64),
            "faults_per_req": per(faults as f64),
        })
    };
    let mut threads = Map::new();
    let (mut run_s, mut user_s, mut sys_s, mut vol, mut invol, mut faults) =
        (0.0, 0.0, 0.0, 0, 0, 0);
    for (name, t) in &after {
        let b = before.get(name).copied().unwrap_or_default();
        let run = (t.run_ns.saturating_sub(b.run_ns)) as f64 / 1e9;
        let user = t.user_ticks.saturating_sub(b.user_ticks) as f64 / hz;
        let sys = t.system_ticks.saturating_sub(b.system_ticks) as f64 / hz;
        let v = t.voluntary.saturating_sub(b.voluntary);
        let i = t.involuntary.saturating_sub(b.involuntary);
        let f = t.minor_faults.saturating_sub(b.minor_faults);
        faults += f;
        run_s += run;
        user_s += user;
        sys_s += sys;
        vol += v;
        invol += i;
        threads.insert(name.clone(), figures(run, user, sys, v, i, f));
    }
    let rows = accepted * spans;
    let mut out = json!({
        "label": a.label,
        "fixture": a.fixture,
        "body_bytes": body.len(),
        "spans_per_request": spans,
        "rate": a.rate,
        "connections": a.connections,
        "one_write": a.one_write,
        "accepted": accepted,
        "refused": refused,
        "achieved_per_s": accepted as f64 / sent_s,
        "window_s": window_s,
        "server_spans_per_cpu_s": rows as f64 / run_s,
        "clickhouse_cpu_us_per_req": per(ch_cpu) * 1e6,
        "clickhouse_spans_per_cpu_s": rows as f64 / ch_cpu,
        "p50_ms": pct(&lat, 50.0),
        "p99_ms": pct(&lat, 99.0),
        "max_ms": lat.last().map_or(0.0, |&v| v as f64 / 1000.0),
        "threads": threads,
    });
    if let (Some(out), Value::Object(all)) = (
        out.as_object_mut(),
        figures(run_s, user_s, sys_s, vol, invol, faults),
    ) {
        out.extend(all);
    }
    println!("{out}");
}
