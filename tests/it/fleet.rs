//! Fleet-wide rate limits against a Redis of the test's own (no ClickHouse cluster needed):
//! one server leasing its keys' budgets, through a proxy that slows Redis down.
//!
//! Each test starts `redis-server` on a free port in a directory of its own (installed by
//! `scripts/cluster.sh up`, as `scripts/test.sh` runs it; the tests fail without it).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::private_clickhouse::free_port;
use crate::support::*;

/// A `redis-server` of this test's own, killed on drop.
pub struct Redis {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl Redis {
    pub fn start() -> Redis {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("traceingest-it-redis-{port}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server, or scripts/cluster.sh up)");
        wait_until("redis-server up", Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Redis { child, port, dir }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TCP proxy to `port` that holds every chunk of the server's answers for `delay` before
/// passing it on: a Redis that takes `delay` to answer each round trip.
pub fn slow_proxy(port: u16, delay: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            pipe(
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                Arc::default(),
                Duration::ZERO,
            );
            pipe(server, client, Arc::default(), delay);
        }
    });
    proxy_port
}

/// Sends `rate` spans per second in batches of 10 for `secs` and returns the spans accepted
/// and how long it took (longer than `secs` on a busy machine); every answer is `202` or
/// `429 rate_limited`.
fn paced(server: &Server, key: &str, tag: &str, rate: u64, secs: u64) -> (u64, Duration) {
    let started = Instant::now();
    let mut accepted = 0;
    for i in 0..rate * secs / 10 {
        let due = started + Duration::from_micros(i * 10_000_000 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let r = server.post_ingest(key, &batch(&format!("{tag}{i}"), 1, 10));
        match r.status {
            202 => accepted += 10,
            429 => assert_eq!(r.code(), "rate_limited"),
            s => panic!("unexpected {s}: {}", String::from_utf8_lossy(&r.body)),
        }
    }
    (accepted, started.elapsed())
}

/// A Redis that takes longer to answer than the lease interval: a key sent at twice its rate
/// still gets its rate. Found by an audit: the hold was two intervals of the key's rate, but
/// a replica tops up once per interval *plus* the round's own time, so with 200 ms round trips
/// at a 100 ms interval a key got about 60 of its 100 spans a second (20 spans held, topped up
/// every ~330 ms).
#[test]
fn a_slow_redis_does_not_throttle_a_key_below_its_rate() {
    const R: u64 = 100;
    let redis = Redis::start();
    let port = slow_proxy(redis.port, Duration::from_millis(200));
    let server = Server::start_with(&[
        ("INGEST_RATE_LIMIT_RPS", &R.to_string()),
        ("INGEST_REDIS_URL", &format!("redis://127.0.0.1:{port}")),
        ("INGEST_REDIS_SYNC_MS", "100"),
    ]);
    let key = server.ready_key("org-slow-redis");
    wait_until("the key leased", Duration::from_secs(10), || {
        server.metric_value("traceingest_rate_limit_leased_spans_total") > 0.0
    });
    let secs = 6;
    let (accepted, took) = paced(&server, &key, "slow", 2 * R, secs);
    eprintln!(
        "slow Redis: {accepted} spans accepted in {secs} s at {} spans/s",
        2 * R
    );
    assert_eq!(server.metric_value("traceingest_rate_limit_fallback"), 0.0);
    assert!(
        accepted >= R * secs * 9 / 10,
        "throttled below the key's rate: {accepted} < 90% of {}",
        R * secs
    );
    // Never more than the fleet bound for one replica: B + R x T + H, H at most B, over the
    // time the sending really took.
    let bound = R + R * (took.as_secs() + 1) + R;
    assert!(accepted <= bound, "{accepted} > {bound} in {took:?}");
}

/// A key set far larger than what is used: the fleet's limits stay on. Found by an audit: every
/// round asked Redis for a lease for every key not leased yet, used or not, in one pipelined
/// round trip, so a round's size grew with the key set. Once such a round took longer than the
/// 1 s Redis timeout it failed, the failure put every key back in local mode, and the next round
/// asked for all of them again: the replica never left its fallback, and each replica enforced
/// the limit alone. Measured on the test machine, 100,000 keys' scripts take Redis 1 to 1.5 s
/// by themselves; here 30,000 keys and a Redis whose answers come 100 ms a piece (16 KiB) make
/// that happen at a size a debug build loads quickly.
#[test]
fn a_large_key_set_does_not_keep_fleet_rate_limits_off() {
    let redis = Redis::start();
    let port = slow_proxy(redis.port, Duration::from_millis(100));
    let server = Server::start_with(&[
        ("INGEST_RATE_LIMIT_RPS", "100"),
        ("INGEST_REDIS_URL", &format!("redis://127.0.0.1:{port}")),
        ("INGEST_REDIS_SYNC_MS", "100"),
        ("INGEST_KEY_REFRESH_MS", "1000"),
    ]);
    let key = server.ready_key("org-busy");
    const UNUSED: u64 = 30_000;
    server.ch_exec(&format!(
        "INSERT INTO `{}`.api_keys (key_hash, display_prefix, org_id, project_id, created_at, \
         updated_at, version) SELECT lower(hex(SHA256(toString(number)))), \
         concat('ti_unused', toString(number)), concat('org-unused', toString(number % 1000)), \
         '', now(), now(), 1 FROM numbers({UNUSED})",
        server.database
    ));
    wait_until("the unused keys loaded", Duration::from_secs(30), || {
        server.metric_value("traceingest_keys") > UNUSED as f64
    });
    let metric = |name: &str| server.metric_value(&format!("traceingest_rate_limit_{name}"));
    let errors = metric("redis_errors_total");
    // Ten spans over 3 s, the whole key set in place: the rounds that lease for the busy key
    // keep succeeding. (Whether that key's own lease was topped up is not observable from
    // outside: `leased_spans_total` counts the unused keys' first leases too.)
    for i in 0..10 {
        let r = server.post_ingest(&key, &batch(&format!("busy{i}"), 1, 1));
        assert_eq!(r.status, 202);
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(metric("redis_errors_total"), errors, "lease rounds failed");
    assert_eq!(metric("fallback"), 0.0);
}

/// `redis-cli` against `port` (from redis-tools, which redis-server depends on): the reply.
fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--raw"])
        .args(args)
        .output()
        .expect("redis-cli");
    assert!(out.status.success(), "redis-cli {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The spans free now in the only key bucket of a Redis (what the lease script would grant),
/// for a rate of 1 span/s and a bucket of `burst`.
fn free_spans(port: u16, burst: u64) -> u64 {
    let buckets = redis_cli(port, &["--scan", "--pattern", "traceingest:rate:*"]);
    let buckets: Vec<&str> = buckets.lines().collect();
    assert_eq!(buckets.len(), 1, "{buckets:?}");
    let tat: u64 = redis_cli(port, &["GET", buckets[0]])
        .trim()
        .parse()
        .unwrap();
    let time = redis_cli(port, &["TIME"]);
    let mut time = time.lines().map(|l| l.trim().parse::<u64>().unwrap());
    let now = time.next().unwrap() * 1_000_000 + time.next().unwrap();
    (now + burst * 1_000_000).saturating_sub(tat.max(now)) / 1_000_000
}

/// A replica stopped (SIGTERM) gives the fleet's bucket back what its lease held unspent: at
/// 1 span/s a key otherwise lost a lease's worth (here 40 spans: 40 s of its rate) at every
/// rolling restart.
#[test]
fn a_stopped_replica_gives_its_unspent_lease_back() {
    let redis = Redis::start();
    let mut server = Server::start_with(&[
        ("INGEST_PLANS", "slow:unlimited:1:100"),
        ("INGEST_DEFAULT_PLAN", "slow"),
        (
            "INGEST_REDIS_URL",
            &format!("redis://127.0.0.1:{}", redis.port),
        ),
        ("INGEST_REDIS_SYNC_MS", "100"),
        ("INGEST_LOG", "info"),
    ]);
    let key = server.ready_key("org-give-back");
    let leased = || server.metric_value("traceingest_rate_limit_leased_spans_total");
    wait_until("the key leased", Duration::from_secs(10), || leased() > 0.0);
    // A batch of 50 is more than the lease (1 span): refused, and the next round leases 50.
    assert_eq!(server.post_ingest(&key, &batch("gb0", 1, 50)).status, 429);
    wait_until("the lease topped up", Duration::from_secs(10), || {
        leased() >= 50.0
    });
    let r = server.post_ingest(&key, &batch("gb1", 1, 10));
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    // 50 leased (10 of them spent), at 1 span/s: about 50 free in Redis.
    let before = free_spans(redis.port, 100);
    assert!(before <= 60, "{before} spans free while the lease is held");
    server.signal(libc::SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(30)), 0);
    let after = free_spans(redis.port, 100);
    assert!(
        after >= 90,
        "{after} spans free after the stop ({before} before): the lease's 40 unspent spans \
         were not given back"
    );
    assert!(
        server
            .log()
            .contains("gave the fleet's rate-limit buckets back"),
        "{}",
        server.log()
    );
    server.wait_rows(10);
}
