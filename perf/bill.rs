//! ClickHouse's side of a phase's bill: its CPU by thread (insert, merges, other) until its
//! merges are quiet, the parts the phase's inserts created and the rows merges rewrote
//! (`system.events`), and the bytes the phase's rows take on disk after the merges
//! (`system.parts`, `system.columns`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::meter;

/// The ClickHouse the server writes to: its HTTP interface (queries) and its process (CPU).
pub struct ClickHouse {
    pub http: SocketAddr,
    /// Its server process; `None` when none was given or found (then no CPU is reported).
    pub pid: Option<u32>,
}

impl ClickHouse {
    /// A query's answer (the error text if it failed: callers parse what they expect).
    pub fn query(&self, q: &str) -> String {
        meter::http_get(self.http, "/", q)
    }

    /// A query answering one number; 0 if it did not.
    pub fn number(&self, q: &str) -> u64 {
        self.query(q).trim().parse().unwrap_or(0)
    }

    /// Rows in the `spans` table (raw count: every request has unique ids).
    pub fn rows(&self, database: &str) -> u64 {
        self.number(&format!("SELECT count() FROM {database}.spans"))
    }

    /// Merges running on the whole server (the harness's ClickHouse is its own, so whatever
    /// merges is the load's doing), or on one database.
    pub fn merges(&self, database: Option<&str>) -> u64 {
        let filter = database.map_or(String::new(), |d| format!(" WHERE database = '{d}'"));
        self.number(&format!("SELECT count() FROM system.merges{filter}"))
    }

    pub fn version(&self) -> String {
        self.query("SELECT version()").trim().to_string()
    }

    /// CPU seconds of the whole process, 0 without a pid.
    pub fn cpu(&self) -> f64 {
        self.pid.map_or(0.0, |p| meter::Cpu::read(p).total)
    }

    fn events(&self) -> HashMap<String, u64> {
        tsv(&self.query("SELECT event, value FROM system.events FORMAT TSV"))
            .filter_map(|r| Some((r.first()?.to_string(), r.get(1)?.parse().ok()?)))
            .collect()
    }
}

fn tsv(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines().map(|l| l.split('\t').collect())
}

/// What a thread of ClickHouse 18.16 does, by its name.
#[derive(Clone, Copy, PartialEq)]
enum Job {
    /// `TCPHandler`: a native-protocol connection, i.e. the flush thread's inserts.
    Insert,
    /// `BackgrProcPool`: background merges.
    Merges,
    Other,
}

fn job(name: &str) -> Job {
    match name {
        "TCPHandler" => Job::Insert,
        "BackgrProcPool" => Job::Merges,
        _ => Job::Other,
    }
}

/// CPU seconds of every thread of the process, by thread id.
fn threads(pid: Option<u32>) -> HashMap<u32, (Job, f64)> {
    let Some(pid) = pid else {
        return HashMap::new();
    };
    meter::thread_cpu(pid)
        .into_iter()
        .map(|(tid, name, secs)| (tid, (job(&name), secs)))
        .collect()
}

/// ClickHouse as a phase starts.
pub struct Start {
    at: Instant,
    total: f64,
    threads: HashMap<u32, (Job, f64)>,
    events: HashMap<String, u64>,
}

pub fn start(ch: &ClickHouse) -> Start {
    Start {
        at: Instant::now(),
        total: ch.cpu(),
        threads: threads(ch.pid),
        events: ch.events(),
    }
}

/// Merges must have been absent this long in a row before the bill is read.
const QUIET: Duration = Duration::from_secs(2);
/// The longest the bill waits for quiet merges.
const QUIET_MAX: Duration = Duration::from_secs(120);

/// The bill of a phase that began at `start`, sent for `send_secs` and had `spans` accepted,
/// read once the server has written every accepted row (the caller waits for that) and
/// ClickHouse's merges have been quiet for 2 s (at most 120 s): ClickHouse's CPU in total and
/// by thread per accepted span, the parts created and rows merged, and what the phase's rows
/// (`database.spans`, emptied before the phase) take on disk, per stored row.
pub fn finish(ch: &ClickHouse, database: &str, start: Start, send_secs: f64, spans: u64) -> Value {
    let waited_from = Instant::now();
    let mut quiet_since: Option<Instant> = None;
    let quiet = loop {
        if ch.merges(None) == 0 {
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= QUIET {
                break true;
            }
        } else {
            quiet_since = None;
        }
        if waited_from.elapsed() >= QUIET_MAX {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let wait_s = waited_from.elapsed().as_secs_f64();
    let total = ch.cpu() - start.total;
    let (mut insert, mut merges) = (0.0, 0.0);
    for (tid, (job, secs)) in threads(ch.pid) {
        let before = start.threads.get(&tid).map_or(0.0, |t| t.1);
        match job {
            Job::Insert => insert += secs - before,
            Job::Merges => merges += secs - before,
            Job::Other => {}
        }
    }
    let events = ch.events();
    let delta = |k: &str| {
        events.get(k).copied().unwrap_or(0) as f64
            - start.events.get(k).copied().unwrap_or(0) as f64
    };
    let parts_created = delta("MergeTreeDataWriterBlocks");
    let q = format!(
        "SELECT count(), sum(rows), sum(bytes_on_disk), sum(data_compressed_bytes), \
         sum(data_uncompressed_bytes) FROM system.parts \
         WHERE database = '{database}' AND table = 'spans' AND active FORMAT TSV"
    );
    let parts_answer = ch.query(&q);
    let p: Vec<f64> = parts_answer
        .trim()
        .split('\t')
        .map(|v| v.parse().unwrap_or(f64::NAN))
        .collect();
    let p = |i: usize| p.get(i).copied().unwrap_or(f64::NAN);
    let rows = p(1);
    let q = format!(
        "SELECT name, data_compressed_bytes, data_uncompressed_bytes FROM system.columns \
         WHERE database = '{database}' AND table = 'spans' \
         ORDER BY data_compressed_bytes DESC LIMIT 5 FORMAT TSV"
    );
    let columns: Vec<Value> = tsv(&ch.query(&q))
        .filter(|r| r.len() == 3)
        .map(|r| {
            let n = |v: &str| v.parse::<f64>().unwrap_or(f64::NAN) / rows;
            json!({
                "name": r[0],
                "compressed_per_span": n(r[1]),
                "uncompressed_per_span": n(r[2]),
            })
        })
        .collect();
    let per_row = |s: f64| s / spans as f64 * 1e6;
    json!({
        "seconds": start.at.elapsed().as_secs_f64(),
        "waited_for_merges_s": wait_s,
        "merges_quiet": quiet,
        "cpu_s": {
            "total": total,
            "insert": insert,
            "merges": merges,
            "other": total - insert - merges,
        },
        "cpu_us_per_row": {
            "total": per_row(total),
            "insert": per_row(insert),
            "merges": per_row(merges),
            "other": per_row(total - insert - merges),
        },
        "spans_per_cpu_s": spans as f64 / total,
        "parts_created": parts_created,
        "parts_per_minute": parts_created / (send_secs / 60.0),
        "rows_inserted": delta("MergeTreeDataWriterRows"),
        "rows_merged": delta("MergedRows"),
        "active_parts": p(0),
        "rows_stored": rows,
        "bytes_on_disk_per_span": p(2) / rows,
        "compressed_per_span": p(3) / rows,
        "uncompressed_per_span": p(4) / rows,
        "largest_columns": columns,
    })
}
