//! A fleet against the local cluster of `scripts/cluster.sh` (2 shards x 2 replicas, ZooKeeper,
//! Redis): two ingest replicas sharing the load, exactly once through a replica killed with
//! `kill -9` and through a whole shard down, dedup of a retried block on another replica,
//! revocation on both replicas within 1 s, the fleet-wide rate limit and its fallback.
//!
//! The cluster is shared and the tests stop nodes of it, so they run one at a time (`LOCK`),
//! each on its own database, dropped ON CLUSTER at the end. `scripts/test.sh` brings the
//! cluster up and sets `TRACEINGEST_CLUSTER_TESTS=required`; without the cluster (and without
//! that variable) the tests say so and pass.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
        let cluster = Cluster::read(lock);
        cluster.up();
        Some(cluster)
    }

    fn read(lock: MutexGuard<'static, ()>) -> Cluster {
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

    /// `kill -9` of a node (or of Redis: `redis`).
    fn kill9(&self, name: &str) {
        let file = if name == "redis" {
            self.run_dir.join("redis/redis.pid")
        } else {
            self.node(name).pid_file.clone()
        };
        let pid: i32 = std::fs::read_to_string(&file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: kill(2) on a process the cluster script started for the tests.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        // SAFETY: signal 0 only checks that the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
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

    /// Drops a test's database everywhere.
    fn drop_database(&self, db: &str) {
        self.sql_at(
            "s1r1",
            &format!("DROP DATABASE IF EXISTS `{db}` ON CLUSTER `{}`", self.name),
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

fn metric(server: &Server, name: &str) -> f64 {
    let r = server.get_admin("/metrics");
    let text = String::from_utf8(r.body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no metric {name} in:\n{text}"))
}

fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
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
        let wrong = cluster.count_at(
            &n.name,
            &format!(
                "SELECT count() FROM `{db}`.spans_local WHERE sipHash64(trace_id) % 2 != {}",
                n.shard - 1
            ),
        );
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

#[test]
fn two_replicas_share_the_load_and_every_span_is_stored_once() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let a = cluster.server("s1r1", None, &[]);
    cleanup.1 = a.database.clone();
    let b = cluster.server("s2r2", Some(&a.database), &[]);
    let key = a.ready_key("org-fleet");
    b.ready_key_existing(&key);
    let started = Instant::now();
    let cpu_before = cluster.cpu_s();
    let (stop, accepted) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..2 {
            let (stop, accepted, key) = (&stop, &accepted, &key);
            let (a, b) = (&a, &b);
            s.spawn(move || load(&[a, b], key, &format!("share{t}-"), stop, accepted, &[]));
        }
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::Relaxed);
    });
    let accepted = accepted.load(Ordering::Relaxed);
    assert!(accepted > 500, "only {accepted} spans in 5 s");
    a.wait_rows_within(accepted, Duration::from_secs(30));
    check_stored_once(&cluster, &a, accepted);
    let cpu = cluster.cpu_s() - cpu_before;
    for s in [&a, &b] {
        assert!(
            metric(s, "traceingest_flush_rows_total") > 0.0,
            "both replicas insert"
        );
    }
    eprintln!(
        "two replicas: {accepted} spans accepted, stored once (FINAL = raw = {accepted}), {:.1} s; \
         ClickHouse CPU {cpu:.2} s on 4 nodes = {:.1} us per span (small inserts every 100 ms: \
         mostly the cost per insert)",
        started.elapsed().as_secs_f64(),
        cpu * 1e6 / accepted as f64
    );
}

#[test]
fn a_replica_killed_during_load_loses_and_duplicates_nothing() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let a = cluster.server("s1r1", None, &[]);
    cleanup.1 = a.database.clone();
    let b = cluster.server("s2r1", Some(&a.database), &[]);
    let key = a.ready_key("org-kill");
    b.ready_key_existing(&key);
    let (stop, accepted) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|s| {
        let (stop2, accepted2, key2) = (&stop, &accepted, &key);
        let (a2, b2) = (&a, &b);
        s.spawn(move || load(&[a2, b2], key2, "kill-", stop2, accepted2, &[]));
        std::thread::sleep(Duration::from_millis(1500));
        // A replica of each shard: inserts fail over to the other one.
        cluster.kill9("s1r2");
        cluster.kill9("s2r2");
        std::thread::sleep(Duration::from_millis(2500));
        cluster.up();
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, Ordering::Relaxed);
    });
    let accepted = accepted.load(Ordering::Relaxed);
    a.wait_rows_within(accepted, Duration::from_secs(60));
    check_stored_once(&cluster, &a, accepted);
    eprintln!("kill -9 of a replica per shard: {accepted} spans, stored once");
}

#[test]
fn a_retried_block_on_the_other_replica_is_dropped_as_a_duplicate() {
    use traceingest::row::{RowBatch, RowRef};
    use traceingest::sink::clickhouse::{RowRun, ShardsDone, Store};
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let db = format!("ti_it_dedup_{}", std::process::id());
    let _drop = DropDb(&cluster, db.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = Store::new(&cluster.url, &db)
        .unwrap()
        .in_cluster(Some(&cluster.name))
        .unwrap();
    rt.block_on(store.migrate()).unwrap();
    let traces: Vec<String> = (0..40).map(|i| format!("dedup-trace-{i}")).collect();
    let rows: Vec<RowRef<'_>> = traces
        .iter()
        .flat_map(|t| {
            ["a", "b"].map(|s| RowRef {
                org_id: "org-dedup",
                trace_id: t,
                span_id: s,
                start_time_ms: 1_700_000_000_000,
                end_time_ms: 1_700_000_000_001,
                ingested_at: 1_700_000_000,
                ..RowRef::default()
            })
        })
        .collect();
    let batch = RowBatch::from_rows(&rows);
    let runs = [RowRun {
        batch: &batch,
        rows: 0..batch.len(),
    }];
    // Each insert of a shard goes to the next replica in turn: the second one sends the very
    // same blocks to the other replica of each shard, as a retry after a timeout would.
    for _ in 0..2 {
        let mut done = ShardsDone::default();
        let n = rt
            .block_on(store.insert_runs_resuming(&runs, &mut done))
            .unwrap();
        assert_eq!(n.rows, 80);
    }
    let count = |modifier: &str| {
        cluster.count_at(
            "s1r1",
            &format!("SELECT count() FROM `{db}`.spans {modifier}"),
        )
    };
    assert_eq!((count("FINAL"), count("")), (80, 80), "(FINAL, raw)");
    for n in &cluster.nodes {
        let local = cluster.count_at(&n.name, &format!("SELECT count() FROM `{db}`.spans_local"));
        assert!(local > 0 && local < 80, "{}: {local} rows", n.name);
    }
}

#[test]
fn a_whole_shard_down_spools_then_refuses_and_everything_arrives_when_it_returns() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let a = cluster.server(
        "s1r1",
        None,
        &[
            ("INGEST_BUFFER_MAX_BYTES", "262144"),
            ("INGEST_SPOOL_MAX_BYTES", "262144"),
        ],
    );
    cleanup.1 = a.database.clone();
    let key = a.ready_key("org-shard");
    cluster.kill9("s2r1");
    cluster.kill9("s2r2");
    // A 503 while the spool still has room is the flush thread not having moved the newest
    // batches to disk yet (a tight loop of requests outruns it): wait a moment and go on. The
    // test ends at the refusals that come with memory and spool full.
    let (mut accepted, mut refused, mut lagging, mut i) = (0u64, 0, 0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while refused < 3 {
        assert!(
            Instant::now() < deadline,
            "never refused: {accepted} spans accepted"
        );
        let r = a.post_ingest(&key, &batch(&format!("shard{i}"), 2, 5));
        i += 1;
        match (r.status, r.code().as_str()) {
            (202, _) => accepted += 10,
            (503, "buffer_full") => {
                assert!(r.header("retry-after").is_some());
                if metric(&a, "traceingest_buffer_full") == 1.0 {
                    refused += 1;
                } else {
                    lagging += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            (s, c) => panic!("unexpected {s} {c}"),
        }
    }
    let spool_max = metric(&a, "traceingest_spool_max_bytes");
    assert!(
        metric(&a, "traceingest_spool_bytes") > spool_max * 0.8,
        "refused with room in the spool"
    );
    assert!(
        metric(&a, "traceingest_spooled_rows_total") > 0.0,
        "the spool took rows first"
    );
    let spooled = metric(&a, "traceingest_spool_bytes");
    cluster.up();
    a.wait_rows_within(accepted, Duration::from_secs(90));
    check_stored_once(&cluster, &a, accepted);
    eprintln!(
        "shard down: {accepted} spans accepted, {spooled} spool bytes at the refusal \
         ({lagging} early 503s while the spool had room), all stored once"
    );
}

#[test]
fn a_key_revoked_through_one_node_is_refused_by_both_replicas_within_a_second() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let a = cluster.server("s1r1", None, &[]);
    cleanup.1 = a.database.clone();
    let b = cluster.server("s2r2", Some(&a.database), &[]);
    let key = a.ready_key("org-revoke");
    b.ready_key_existing(&key);
    let body = batch("rev", 1, 1);
    assert_eq!(b.post_ingest(&key, &body).status, 202);
    let out = a.cli(&["keys", "revoke", &key[..12]]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let revoked = Instant::now();
    let mut refused: [Option<Duration>; 2] = [None, None];
    while refused.iter().any(Option::is_none) {
        assert!(revoked.elapsed() < Duration::from_secs(3), "{refused:?}");
        for (i, s) in [&a, &b].into_iter().enumerate() {
            if refused[i].is_none() && s.post_ingest(&key, &body).status == 401 {
                refused[i] = Some(revoked.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let slowest = refused.iter().flatten().max().copied().unwrap();
    eprintln!("revocation: refused after {refused:?}");
    assert!(slowest <= Duration::from_secs(1), "{refused:?}");
}

/// Sends `rate` spans per second (batches of 10) spread over `servers` for `secs`; returns the
/// spans accepted and the time it took.
fn paced(servers: &[&Server], key: &str, tag: &str, rate: u64, secs: u64) -> (u64, Duration) {
    let started = Instant::now();
    let batches = rate * secs / 10;
    let mut accepted = 0;
    for i in 0..batches {
        let due = started + Duration::from_micros(i * 10_000_000 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let r = servers[i as usize % servers.len()]
            .post_ingest(key, &batch(&format!("{tag}{i}"), 1, 10));
        match r.status {
            202 => accepted += 10,
            429 => assert_eq!(r.code(), "rate_limited"),
            s => panic!("unexpected {s}"),
        }
    }
    (accepted, started.elapsed())
}

#[test]
fn a_key_at_three_times_its_rate_across_two_replicas_gets_at_most_the_bound() {
    const R: u64 = 100;
    const SYNC_MS: u64 = 100;
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let limits = [
        ("INGEST_RATE_LIMIT_RPS", "100"),
        ("INGEST_REDIS_URL", cluster.redis.as_str()),
        ("INGEST_REDIS_SYNC_MS", "100"),
    ];
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let a = cluster.server("s1r1", None, &limits);
    cleanup.1 = a.database.clone();
    let b = cluster.server("s2r2", Some(&a.database), &limits);
    let key = a.ready_key("org-rate");
    b.ready_key_existing(&key);
    // Both replicas lease for the key before the load starts.
    std::thread::sleep(Duration::from_millis(3 * SYNC_MS));
    let (accepted, took) = paced(&[&a, &b], &key, "rate", 3 * R, 10);
    // burst + R x T + N x H, H = max(2 x R x S, batch) = 20 spans.
    let hold = (2 * R * SYNC_MS / 1000).max(10);
    let bound = R + R * took.as_secs_f64().ceil() as u64 + 2 * hold;
    eprintln!(
        "fleet rate limit: {accepted} spans accepted in {:.1} s at {} spans/s over 2 replicas; \
         bound {bound}; two local buckets would allow {}",
        took.as_secs_f64(),
        3 * R,
        2 * (R + R * 10)
    );
    assert!(accepted <= bound, "{accepted} > {bound}");
    assert!(
        accepted >= R * 10 * 8 / 10,
        "throttled too hard: {accepted}"
    );
    for s in [&a, &b] {
        assert_eq!(metric(s, "traceingest_rate_limit_fallback"), 0.0);
        assert!(metric(s, "traceingest_rate_limit_leased_spans_total") > 0.0);
    }
}

#[test]
fn with_redis_down_each_replica_still_enforces_the_limit_on_its_own() {
    const R: u64 = 100;
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let limits = [
        ("INGEST_RATE_LIMIT_RPS", "100"),
        ("INGEST_REDIS_URL", cluster.redis.as_str()),
    ];
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let a = cluster.server("s1r1", None, &limits);
    cleanup.1 = a.database.clone();
    let key = a.ready_key("org-redis-down");
    cluster.kill9("redis");
    wait_until("the fallback", Duration::from_secs(5), || {
        metric(&a, "traceingest_rate_limit_fallback") == 1.0
    });
    let (accepted, took) = paced(&[&a], &key, "down", 3 * R, 4);
    let bound = R + R * took.as_secs_f64().ceil() as u64;
    eprintln!(
        "Redis down: {accepted} spans accepted in {took:?} at {} spans/s, bound {bound}",
        3 * R
    );
    assert!(accepted <= bound, "{accepted} > {bound}");
    assert!(accepted >= R * 3, "{accepted}");
    cluster.up();
    wait_until("fleet mode again", Duration::from_secs(10), || {
        metric(&a, "traceingest_rate_limit_fallback") == 0.0
    });
}

/// Inserts frozen by a shard outage (the other shard took them), then the server stops
/// (`SIGTERM`, or `kill -9` in `wal` mode), the shard returns and the server starts again: the
/// replay sends the same blocks (`spool/insert.intent`), so the shard that had them drops them
/// and every span is stored once, raw and with `FINAL`.
fn a_stop_during_an_unfinished_insert(durability: &str, kill: bool) {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let mut cleanup = DropDb(&cluster, String::new());
    let mut a = cluster.server(
        "s1r1",
        None,
        &[
            ("INGEST_DURABILITY", durability),
            ("INGEST_SHUTDOWN_TIMEOUT_MS", "3000"),
        ],
    );
    cleanup.1 = a.database.clone();
    let key = a.ready_key("org-replay");
    cluster.kill9("s2r1");
    cluster.kill9("s2r2");
    let mut accepted = 0;
    for i in 0..30 {
        assert_eq!(
            a.post_ingest(&key, &batch(&format!("rep{i}"), 2, 5)).status,
            202
        );
        accepted += 10;
    }
    wait_until("a failed insert", Duration::from_secs(10), || {
        metric(&a, "traceingest_flush_errors_total") > 0.0
    });
    let shard1 = |c: &Cluster| {
        c.count_at(
            "s1r1",
            &format!("SELECT count() FROM `{}`.spans_local", a.database),
        )
    };
    let before = shard1(&cluster);
    assert!(before > 0, "shard 1 took its part of the frozen insert");
    // Batches after the frozen insert: a replay that did not keep its composition would put
    // them in the same insert, and shard 1 would get its rows again in another block.
    for i in 30..40 {
        assert_eq!(
            a.post_ingest(&key, &batch(&format!("rep{i}"), 2, 5)).status,
            202
        );
        accepted += 10;
    }
    if kill {
        a.signal(libc::SIGKILL);
        a.wait_exit(Duration::from_secs(10));
    } else {
        a.signal(SIGTERM);
        assert_eq!(a.wait_exit(Duration::from_secs(20)), 0);
    }
    assert!(
        a.data_dir().join("spool/insert.intent").exists(),
        "the unfinished insert is written down"
    );
    cluster.up();
    a.spawn();
    a.wait_rows_within(accepted, Duration::from_secs(60));
    check_stored_once(&cluster, &a, accepted);
    wait_until("the intent removed", Duration::from_secs(10), || {
        !a.data_dir().join("spool/insert.intent").exists()
    });
    eprintln!(
        "{durability} {}: {accepted} spans, {before} on shard 1 before the stop, stored once",
        if kill { "kill -9" } else { "SIGTERM" }
    );
}

#[test]
fn a_clean_stop_during_an_unfinished_insert_replays_the_same_blocks() {
    a_stop_during_an_unfinished_insert("buffer", false);
}

#[test]
fn kill_9_in_wal_mode_during_an_unfinished_insert_replays_the_same_blocks() {
    a_stop_during_an_unfinished_insert("wal", true);
}

/// `reprice` in cluster mode: it reads through `spans` (`FINAL` per shard) and writes the
/// corrected copies through it, so each lands on its own span's shard; the tables then keep
/// one row per span, with the new costs.
#[test]
fn reprice_through_the_distributed_table_corrects_every_shard() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ti-cluster-reprice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let genai = |input: f64, output: f64| {
        serde_json::json!([{"id": "acme", "name": "Acme", "api_pattern": "x",
            "provider_match": {"starts_with": "acme"},
            "models": [{"id": "model-x", "match": {"starts_with": "model-x"},
                        "prices": {"input_mtok": input, "output_mtok": output}}]}])
        .to_string()
    };
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    std::fs::write(&old, genai(1.0, 10.0)).unwrap();
    std::fs::write(&new, genai(2.0, 20.0)).unwrap();
    let mut cleanup = DropDb(&cluster, String::new());
    let server = cluster.server(
        "s1r1",
        None,
        &[("INGEST_PRICING_FILE", old.to_str().unwrap())],
    );
    cleanup.1 = server.database.clone();
    let key = server.ready_key("org-reprice");
    let start = 1_785_369_600_000u64; // 2026-07-30T00:00:00Z
    let traces: Vec<serde_json::Value> = (0..8)
        .map(|t| {
            let spans: Vec<serde_json::Value> = (0..2)
                .map(|s| {
                    serde_json::json!({"spanId": format!("s{s}"), "spanType": "llm",
                        "name": "call", "startTime": start, "endTime": start + 100,
                        "provider": "acme", "modelId": "model-x-1",
                        "usage": {"inputTokens": 1000, "outputTokens": 100}})
                })
                .collect();
            serde_json::json!({"traceId": format!("rp-{t}"), "traceName": "t", "spans": spans})
        })
        .collect();
    let body = serde_json::to_vec(&serde_json::json!({"version": "v1", "traces": traces})).unwrap();
    assert_eq!(server.post_ingest(&key, &body).status, 202);
    server.wait_rows(16);
    check_stored_once(&cluster, &server, 16);
    let priced_at = |cost: &str| {
        server.rows(
            "count() AS n",
            &format!("WHERE toString(total_cost) = '{cost}'"),
        )[0]["n"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    // 1000 x 1e-6 + 100 x 10e-6.
    assert_eq!(priced_at("0.0020000000"), 16);

    let out = server.cli(&[
        "reprice",
        "--from",
        "2026-07-30",
        "--to",
        "2026-07-31",
        "--file",
        new.to_str().unwrap(),
    ]);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "reprice failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(summary.contains("16 corrected rows written"), "{summary}");
    // The Distributed table forwards the corrected rows to the shards in the background, and
    // each shard's other replica fetches them: wait until every replica shows only new costs.
    let db = &server.database;
    let old_costs_at = |node: &str| {
        cluster.count_at(
            node,
            &format!(
                "SELECT count() FROM `{db}`.spans_local FINAL \
                 WHERE toString(total_cost) != '0.0040000000'"
            ),
        )
    };
    wait_until(
        "the corrected rows on every replica",
        Duration::from_secs(30),
        || cluster.nodes.iter().all(|n| old_costs_at(&n.name) == 0),
    );
    assert_eq!(priced_at("0.0040000000"), 16);
    assert_eq!(server.count(), 16, "one row per span after FINAL");
    for n in &cluster.nodes {
        let wrong = cluster.count_at(
            &n.name,
            &format!(
                "SELECT count() FROM `{db}`.spans_local WHERE sipHash64(trace_id) % 2 != {}",
                n.shard - 1
            ),
        );
        assert_eq!(wrong, 0, "{}: a corrected row on the wrong shard", n.name);
    }
    let again = server.cli(&[
        "reprice",
        "--from",
        "2026-07-30",
        "--to",
        "2026-07-31",
        "--file",
        new.to_str().unwrap(),
    ]);
    let again = String::from_utf8_lossy(&again.stdout);
    assert!(again.contains("0 corrected rows written"), "{again}");
    // A command that forgets INGEST_CLICKHOUSE_CLUSTER is refused before it changes anything.
    let single = Command::new(BIN)
        .args(["reprice", "--from", "2026-07-30", "--to", "2026-07-31"])
        .env(
            "INGEST_CLICKHOUSE_URL",
            format!("tcp://127.0.0.1:{}", cluster.node("s1r1").native),
        )
        .env("INGEST_CLICKHOUSE_DATABASE", db)
        .env_remove("INGEST_CLICKHOUSE_CLUSTER")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&single.stderr);
    assert!(!single.status.success(), "{err}");
    assert!(
        err.contains("is a cluster's table (Distributed); set INGEST_CLICKHOUSE_CLUSTER"),
        "{err}"
    );
    assert_eq!(server.count(), 16);
    assert_eq!(priced_at("0.0040000000"), 16);
    let _ = std::fs::remove_dir_all(&dir);
}
