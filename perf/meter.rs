//! What the load generator reads besides its own answers: the server's (and ClickHouse's) CPU
//! time and memory from `/proc/<pid>`, and small HTTP/1.0 requests to the server's `/health` and
//! `/metrics` and to ClickHouse's HTTP interface.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use serde_json::{json, Value};

/// CPU seconds (user + system) of a process: all of it, and split by thread name.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu {
    pub total: f64,
    /// Threads named `worker-N`: HTTP, JSON, validation, pricing, row building.
    pub workers: f64,
    /// The `flush` thread: insert blocks and the ClickHouse protocol.
    pub flush: f64,
    pub user: f64,
    pub system: f64,
    /// System (kernel) share of `workers` and of `flush`.
    pub workers_system: f64,
    pub flush_system: f64,
}

/// Clock ticks per second of `/proc/*/stat` CPU times.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// (utime, stime) in seconds from a `stat` file; the command name may hold spaces, so fields
/// are counted after its closing parenthesis.
fn stat_times(path: &str) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5), counted from `state` (field 3) here.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let hz = ticks_per_second();
    Some((utime / hz, stime / hz))
}

impl Cpu {
    pub fn read(pid: u32) -> Cpu {
        let (user, system) = stat_times(&format!("/proc/{pid}/stat")).unwrap_or_default();
        let mut cpu = Cpu {
            total: user + system,
            user,
            system,
            ..Cpu::default()
        };
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for task in tasks.flatten() {
                let dir = task.path();
                let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                let Some((u, s)) = stat_times(&dir.join("stat").to_string_lossy()) else {
                    continue;
                };
                match name.trim() {
                    n if n.starts_with("worker-") => {
                        cpu.workers += u + s;
                        cpu.workers_system += s;
                    }
                    "flush" => {
                        cpu.flush += u + s;
                        cpu.flush_system += s;
                    }
                    _ => {}
                }
            }
        }
        cpu
    }

    pub fn since(&self, before: &Cpu) -> Cpu {
        Cpu {
            total: self.total - before.total,
            workers: self.workers - before.workers,
            flush: self.flush - before.flush,
            user: self.user - before.user,
            system: self.system - before.system,
            workers_system: self.workers_system - before.workers_system,
            flush_system: self.flush_system - before.flush_system,
        }
    }

    pub fn to_json(self) -> Value {
        json!({
            "total_s": self.total,
            "workers_s": self.workers,
            "flush_s": self.flush,
            "other_s": self.total - self.workers - self.flush,
            "user_s": self.user,
            "system_s": self.system,
            "workers_system_s": self.workers_system,
            "flush_system_s": self.flush_system,
        })
    }
}

/// (thread id, thread name, CPU seconds) of every thread of a process: ClickHouse's CPU by what
/// its threads do (`bill.rs`).
pub fn thread_cpu(pid: u32) -> Vec<(u32, String, f64)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid = task.file_name().to_string_lossy().parse().ok()?;
            let dir = task.path();
            let name = std::fs::read_to_string(dir.join("comm")).ok()?;
            let (u, s) = stat_times(&dir.join("stat").to_string_lossy())?;
            Some((tid, name.trim().to_string(), u + s))
        })
        .collect()
}

/// Pid of the first ClickHouse server process found, if one runs (its CPU is reported next to
/// ours): the default when the load generator is not given `--clickhouse-pid`.
pub fn clickhouse_pid() -> Option<u32> {
    let dirs = std::fs::read_dir("/proc").ok()?;
    for d in dirs.flatten() {
        let Ok(pid) = d.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(d.path().join("comm")).unwrap_or_default();
        if comm.trim() == "clickhouse-serv" || comm.trim() == "clickhouse-server" {
            return Some(pid);
        }
    }
    None
}

/// (VmHWM, VmRSS) in bytes from `/proc/<pid>/status`.
pub fn proc_status(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (kb("VmHWM:"), kb("VmRSS:"))
}

/// One HTTP/1.0 request (GET, or POST when `body` is not empty); returns the answer's body.
/// Empty on any failure: callers treat a missing figure as zero.
pub fn http_get(addr: SocketAddr, path: &str, body: &str) -> String {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return String::new();
    };
    let method = if body.is_empty() { "GET" } else { "POST" };
    let req = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).is_err() {
        return String::new();
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    match text.split_once("\r\n\r\n") {
        Some((_, b)) => b.to_string(),
        None => String::new(),
    }
}

/// The value of an unlabelled counter in the server's `/metrics` (`addr`: its admin listener).
pub fn metric(addr: SocketAddr, name: &str) -> u64 {
    let text = http_get(addr, "/metrics", "");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Rows the server accepted and has not written yet, from the public port's `/health`.
pub fn buffered(addr: SocketAddr) -> u64 {
    let body = http_get(addr, "/health", "");
    let v: Value = serde_json::from_str(&body).unwrap_or_default();
    v["buffered"].as_u64().unwrap_or(0)
}

/// Waits until everything the server accepted is written (or 60 s).
pub fn wait_drained(addr: SocketAddr) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while buffered(addr) > 0 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
