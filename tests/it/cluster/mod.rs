//! A fleet against the local cluster of `scripts/cluster.sh` (2 shards x 2 replicas, ZooKeeper,
//! Redis). This file: the cluster as the tests see it (its nodes, SQL on a node, stopping and
//! starting them) and the helpers they share. `storage.rs`: exactly once through a replica
//! killed with `kill -9` or hung with `SIGSTOP`, a whole shard down, a retried block on another
//! replica, replays after a stop, re-pricing. `limits.rs`: revocation, the fleet-wide rate limit
//! (a key leased in advance and one that was not), its fallback when Redis is down, quotas.
//! `schema.rs`: a column a later release adds, on every node, and with a node down or a
//! replica lagging during `migrate`.
//!
//! The cluster is shared and the tests stop nodes of it, so they run one at a time (`LOCK` in
//! this process, an `flock` across processes), each on its own database, dropped ON CLUSTER at
//! the end. `scripts/test.sh` brings the
//! cluster up and sets `TRACEINGEST_CLUSTER_TESTS=required`; without the cluster (and without
//! that variable) the tests say so and pass.

mod limits;
mod schema;
mod storage;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use traceingest::sink::clickhouse::ServerVersion;

use crate::support::*;

static LOCK: Mutex<()> = Mutex::new(());

/// One ClickHouse node of the local cluster.
#[derive(Debug, Clone)]
struct Node {
    name: String,
    shard: u32,
    native: u16,
    http: u16,
    pid_file: PathBuf,
}

/// The local cluster as `scripts/cluster.sh up` describes it in its env file.
struct Cluster {
    url: String,
    name: String,
    redis: String,
    nodes: Vec<Node>,
    run_dir: PathBuf,
    _lock: MutexGuard<'static, ()>,
    /// `flock` on `tests.lock` in the run directory: test processes of other checkouts on the
    /// same machine wait too, as they stop nodes of the same cluster.
    _machine_lock: std::fs::File,
}

fn run_dir() -> PathBuf {
    std::env::var_os("CLUSTER_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/traceingest-cluster"))
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh")
}

impl Cluster {
    /// The cluster, every node up; `None` (the test passes, saying why) when there is none
    /// and the tests are not required.
    fn get() -> Option<Cluster> {
        let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let env = run_dir().join("env");
        if !env.exists() {
            assert!(
                std::env::var("TRACEINGEST_CLUSTER_TESTS").as_deref() != Ok("required"),
                "no local cluster: run scripts/cluster.sh up"
            );
            eprintln!("skipped: no local cluster (scripts/cluster.sh up starts one)");
            return None;
        }
        let machine_lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(run_dir().join("tests.lock"))
            .unwrap();
        // SAFETY: flock(2) on a file this process just opened; released when it is closed.
        let locked = unsafe {
            use std::os::fd::AsRawFd;
            libc::flock(machine_lock.as_raw_fd(), libc::LOCK_EX)
        };
        assert_eq!(locked, 0, "flock: {}", std::io::Error::last_os_error());
        let cluster = Cluster::read(lock, machine_lock);
        cluster.up();
        Some(cluster)
    }

    fn read(lock: MutexGuard<'static, ()>, machine_lock: std::fs::File) -> Cluster {
        let text = std::fs::read_to_string(run_dir().join("env")).unwrap();
        let mut vars = HashMap::new();
        let mut nodes = Vec::new();
        for line in text.lines() {
            let (k, v) = line.split_once('=').unwrap();
            if k == "NODE" {
                let f: Vec<&str> = v.split(' ').collect();
                nodes.push(Node {
                    name: f[0].into(),
                    shard: f[1].parse().unwrap(),
                    native: f[3].parse().unwrap(),
                    http: f[4].parse().unwrap(),
                    pid_file: f[5].into(),
                });
            } else {
                vars.insert(k.to_string(), v.to_string());
            }
        }
        Cluster {
            url: vars["INGEST_CLICKHOUSE_URL"].clone(),
            name: vars["INGEST_CLICKHOUSE_CLUSTER"].clone(),
            redis: vars["INGEST_REDIS_URL"].clone(),
            run_dir: vars["RUN_DIR"].clone().into(),
            nodes,
            _lock: lock,
            _machine_lock: machine_lock,
        }
    }

    /// `scripts/cluster.sh up`: starts whatever is down; then waits until every replicated
    /// table on every node is writable with all its replicas active (a node killed with
    /// `kill -9` keeps its ZooKeeper session until it times out, and its restarted tables wait
    /// for that before they take part again).
    fn up(&self) {
        let out = Command::new("bash")
            .arg(script())
            .arg("up")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cluster.sh up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sql = "SELECT count() FROM system.replicas \
                   WHERE is_readonly OR is_session_expired OR active_replicas < total_replicas";
        for n in &self.nodes {
            wait_until(
                &format!("every replica on {} active", n.name),
                Duration::from_secs(90),
                || self.count_at(&n.name, sql) == 0,
            );
        }
    }

    fn node(&self, name: &str) -> &Node {
        self.nodes.iter().find(|n| n.name == name).unwrap()
    }

    fn http(&self, name: &str) -> String {
        format!("127.0.0.1:{}", self.node(name).http)
    }

    /// The pid of a node (or of Redis: `redis`).
    fn pid(&self, name: &str) -> i32 {
        let file = if name == "redis" {
            self.run_dir.join("redis/redis.pid")
        } else {
            self.node(name).pid_file.clone()
        };
        std::fs::read_to_string(&file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Sends a signal to a node (or to Redis: `redis`).
    fn signal(&self, name: &str, sig: i32) {
        // SAFETY: kill(2) on a process the cluster script started for the tests.
        unsafe {
            libc::kill(self.pid(name), sig);
        }
    }

    /// `kill -9` of a node (or of Redis: `redis`); returns once it is gone.
    fn kill9(&self, name: &str) {
        let pid = self.pid(name);
        self.signal(name, libc::SIGKILL);
        // SAFETY: signal 0 only checks that the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops a node as an operator would (SIGTERM: its replicated tables leave ZooKeeper as
    /// inactive); returns once its process is gone. The guard starts it again when dropped,
    /// whatever the test did, so the next test finds every node up.
    fn stop(&self, name: &str) -> Stopped<'_> {
        let pid = self.pid(name);
        let guard = Stopped {
            cluster: self,
            started: false,
        };
        self.signal(name, libc::SIGTERM);
        wait_until(
            &format!("{name} to stop"),
            Duration::from_secs(30),
            // SAFETY: signal 0 only checks that the process exists.
            || unsafe { libc::kill(pid, 0) } != 0,
        );
        guard
    }

    /// The settings of a server in cluster mode; `first` is the node it reads keys from.
    fn env(&self, first: &str) -> Vec<(String, String)> {
        let first_url = format!("tcp://127.0.0.1:{}", self.node(first).native);
        let mut urls: Vec<&str> = self.url.split(',').filter(|u| *u != first_url).collect();
        urls.insert(0, &first_url);
        vec![
            ("INGEST_CLICKHOUSE_URL".into(), urls.join(",")),
            ("INGEST_CLICKHOUSE_CLUSTER".into(), self.name.clone()),
        ]
    }

    /// A server in cluster mode reading keys from `first`, on `database` if given (a second
    /// replica of the same service), with extra settings.
    /// Rows in `db`'s `spans_local` on `node` that the sharding key puts on another shard.
    fn rows_of_other_shards(&self, node: &Node, db: &str) -> u64 {
        self.count_at(
            &node.name,
            &format!(
                "SELECT count() FROM `{db}`.spans_local WHERE sipHash64(trace_id) % 2 != {}",
                node.shard - 1
            ),
        )
    }

    /// Two ingest servers, on nodes `first` and `second`, sharing one new database, with
    /// `extra` settings; and the guard that drops that database. Bound first in a `let`
    /// pattern, the guard is dropped after the servers, so neither sees its tables go.
    fn pair(
        &self,
        first: &str,
        second: &str,
        extra: &[(&str, &str)],
    ) -> (DropDb<'_>, Server, Server) {
        let a = self.server(first, None, extra);
        // Set before `b` starts, so a failed start still drops the database.
        let guard = DropDb(self, a.database.clone());
        let b = self.server(second, Some(&a.database), extra);
        (guard, a, b)
    }

    fn server(&self, first: &str, database: Option<&str>, extra: &[(&str, &str)]) -> Server {
        let env = self.env(first);
        let mut all: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        all.extend_from_slice(extra);
        let mut s = Server::new(&self.http("s1r1"), &all);
        if let Some(db) = database {
            s.set_env("INGEST_CLICKHOUSE_DATABASE", db);
        }
        s.spawn();
        s
    }

    /// Runs SQL on a node over HTTP, with settings as URL parameters.
    fn sql_at(&self, node: &str, sql: &str) -> String {
        let mut s = TcpStream::connect(self.http(node)).unwrap();
        let req = format!(
            "POST /?distributed_ddl_task_timeout=30 HTTP/1.0\r\nHost: ch\r\nContent-Length: {}\r\n\r\n{sql}",
            sql.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(" 200 "), "{node}: {sql}: {body}");
        body.to_string()
    }

    /// CPU seconds (user + system) the ClickHouse nodes have used so far, all together.
    fn cpu_s(&self) -> f64 {
        self.nodes
            .iter()
            .map(|n| {
                let pid = std::fs::read_to_string(&n.pid_file).unwrap();
                let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap();
                // Fields after the command's closing parenthesis; utime and stime are the 14th
                // and 15th of the line, in clock ticks (100 per second).
                let rest = &stat[stat.rfind(')').unwrap() + 2..];
                let f: Vec<&str> = rest.split(' ').collect();
                (f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()) as f64 / 100.0
            })
            .sum()
    }

    fn count_at(&self, node: &str, sql: &str) -> u64 {
        self.sql_at(node, sql).trim().parse().unwrap()
    }

    /// Drops a test's database everywhere, with `SYNC` on a release whose `Atomic` databases
    /// would otherwise keep the tables' ZooKeeper paths for minutes (docs/fleet.md).
    fn drop_database(&self, db: &str) {
        let version = self.sql_at("s1r1", "SELECT version()");
        let version = ServerVersion::parse(&version).expect("a ClickHouse version");
        self.sql_at(
            "s1r1",
            &format!(
                "DROP DATABASE IF EXISTS `{db}` ON CLUSTER `{}`{}",
                self.name,
                version.drop_suffix()
            ),
        );
    }
}

/// Drops the database ON CLUSTER when the test ends, whatever happened.
struct DropDb<'a>(&'a Cluster, String);

impl Drop for DropDb<'_> {
    fn drop(&mut self) {
        if self.1.is_empty() {
            return;
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.0.up();
            self.0.drop_database(&self.1);
        }));
    }
}

/// A node `Cluster::stop` stopped: `start` brings it back (`scripts/cluster.sh up`, which
/// waits until every replica is active again); so does dropping the guard, test failed or not.
struct Stopped<'a> {
    cluster: &'a Cluster,
    started: bool,
}

impl Stopped<'_> {
    fn start(mut self) {
        self.started = true;
        self.cluster.up();
    }
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        if !self.started {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.cluster.up()));
        }
    }
}

/// The server's rows: (with FINAL, without).
fn counts(server: &Server) -> (u64, u64) {
    (server.count(), server.raw_count())
}

/// Waits until every replica holds all `total` rows of its shard (reads through `Distributed`
/// may go to a replica still fetching parts), then checks: every node holds only rows of its
/// own shard (by the `Distributed` table's key), both shards have rows, and the table holds
/// each span exactly once, counted with and without `FINAL`.
fn check_stored_once(cluster: &Cluster, server: &Server, total: u64) {
    let db = &server.database;
    let local = |node: &str, modifier: &str| {
        cluster.count_at(
            node,
            &format!("SELECT count() FROM `{db}`.spans_local {modifier}"),
        )
    };
    let mut per_shard = [0u64; 2];
    wait_until(
        "every replica to hold its shard's rows",
        Duration::from_secs(60),
        || {
            for shard in 1..=2 {
                let (r1, r2) = (
                    local(&format!("s{shard}r1"), ""),
                    local(&format!("s{shard}r2"), ""),
                );
                if r1 != r2 {
                    return false;
                }
                per_shard[shard - 1] = r1;
            }
            per_shard.iter().sum::<u64>() >= total
        },
    );
    for n in &cluster.nodes {
        let wrong = cluster.rows_of_other_shards(n, db);
        assert_eq!(wrong, 0, "{}: rows of the other shard", n.name);
        assert_eq!(
            local(&n.name, "FINAL"),
            per_shard[n.shard as usize - 1],
            "{}: a duplicate",
            n.name
        );
    }
    assert!(
        per_shard.iter().all(|&n| n > 0),
        "both shards hold rows: {per_shard:?}"
    );
    assert_eq!(per_shard.iter().sum::<u64>(), total, "raw rows per shard");
    assert_eq!(counts(server), (total, total), "(FINAL, raw)");
}

/// Posts `batch(tag, 2, 5)` (10 spans) to each server in turn until `stop`; returns the spans
/// answered 202. Every other answer is a test failure unless `allow` lists its code.
fn load(
    servers: &[&Server],
    key: &str,
    prefix: &str,
    stop: &AtomicBool,
    accepted: &AtomicU64,
    allow: &[&str],
) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let s = servers[i as usize % servers.len()];
        let r = s.post_ingest(key, &batch(&format!("{prefix}{i}"), 2, 5));
        match r.status {
            202 => {
                accepted.fetch_add(10, Ordering::Relaxed);
            }
            _ if allow.contains(&r.code().as_str()) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            st => panic!("unexpected {st}: {}", String::from_utf8_lossy(&r.body)),
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What `paced` sent.
struct Paced {
    /// Spans accepted by each server, in the order given.
    accepted: Vec<u64>,
    /// From the first request to the last answer.
    took: Duration,
    /// `X-RateLimit-Remaining` of each server's first answer.
    first_remaining: Vec<Option<u64>>,
}

impl Paced {
    fn total(&self) -> u64 {
        self.accepted.iter().sum()
    }
}

/// Sends `rate` spans per second (batches of 10) spread over `servers` in turn for `secs`,
/// starting at once; every answer is `202` or `429 rate_limited`.
fn paced(servers: &[&Server], key: &str, tag: &str, rate: u64, secs: u64) -> Paced {
    let started = Instant::now();
    let batches = rate * secs / 10;
    let mut out = Paced {
        accepted: vec![0; servers.len()],
        took: Duration::ZERO,
        first_remaining: vec![None; servers.len()],
    };
    for i in 0..batches {
        let due = started + Duration::from_micros(i * 10_000_000 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let at = i as usize % servers.len();
        let r = servers[at].post_ingest(key, &batch(&format!("{tag}{i}"), 1, 10));
        if i < servers.len() as u64 {
            out.first_remaining[at] = r
                .header("x-ratelimit-remaining")
                .map(|v| v.parse().unwrap());
        }
        match r.status {
            202 => out.accepted[at] += 10,
            429 => assert_eq!(r.code(), "rate_limited"),
            s => panic!("unexpected {s}: {}", String::from_utf8_lossy(&r.body)),
        }
    }
    out.took = started.elapsed();
    out
}

/// How many lines of a server's log contain `text`.
fn log_lines(server: &Server, text: &str) -> usize {
    server.log().lines().filter(|l| l.contains(text)).count()
}
