//! `Leaser` against a `redis-server` of the test's own (on a free port, killed on drop; the
//! integration tests' `fleet.rs` starts theirs the same way).

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::admission::plan::Plan;
use crate::admission::rate::{Credit, Rate, Take};
use crate::admission::Account;
use crate::auth::{hash_key, KeySet, Principal};

struct Redis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Redis {
    fn start() -> Redis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        Redis::start_on(port)
    }

    /// A fresh one on `port` (empty: as a Redis without persistence restarts).
    fn start_on(port: u16) -> Redis {
        let dir = std::env::temp_dir().join(format!("traceingest-lib-redis-{port}"));
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
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { child, port, dir }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A plan of no quota and this rate limit.
fn rate_plan(per_second: u32, burst: u32) -> Plan {
    Plan {
        name: "rated".into(),
        monthly_spans: None,
        rate: Some(Rate { per_second, burst }),
    }
}

/// A key store holding one key of an organisation on `plan`; the key's Redis bucket name.
fn one_key(plan: &Plan) -> (KeyStore, Arc<Principal>, String) {
    let account = Arc::new(Account::new("org".into(), plan));
    let principal = Arc::new(Principal::new("org".into(), "".into(), account));
    let hash = hash_key(b"ti_the-key");
    let mut set = KeySet::default();
    set.insert(hash, principal.clone());
    let keys = KeyStore::new("ti_");
    keys.replace(set, 0, true);
    (keys, principal, format!("traceingest:rate:{}", hex(&hash)))
}

/// Redis's clock, in microseconds (the script's).
async fn redis_now_us(conn: &mut MultiplexedConnection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    s * 1_000_000 + us
}

/// A bucket whose TAT lies further ahead than the plan in force ever lets it run (debt run up
/// under a plan that refilled far more slowly, `orgs set-plan` since; or Redis's clock stepped
/// back, a failover to a replica whose clock is behind) is cut to one bucket of debt, as the
/// local bucket's is. Found by an audit: the script kept such a TAT, so the key got nothing
/// from the fleet until Redis's clock caught up with it: the old plan's refill time (an hour
/// here), or the whole step back, with `429`s saying "retry in 1 s" all along.
#[test]
fn a_redis_bucket_far_ahead_of_its_plan_is_cut_to_one_bucket_of_debt() {
    let redis = Redis::start();
    let rt = runtime();
    // 1,000 spans/s, a bucket of 1,000: a full bucket refills in 1 s.
    let plan = rate_plan(1_000, 1_000);
    let (keys, principal, bucket) = one_key(&plan);
    let mut leaser = Leaser::new(&redis.url(), Duration::from_millis(100), Arc::default()).unwrap();
    rt.block_on(async {
        let client = Client::open(redis.url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        // The key is used (its local bucket lets the batch through): the round leases it.
        let rate = plan.rate.unwrap();
        assert!(matches!(
            principal.bucket.take(rate, 10, 1),
            Take::Taken { .. }
        ));
        leaser.round(&keys).await;
        assert!(principal.bucket.lease.is_fleet(), "the round reached Redis");
        // Then an hour of debt appears: the old plan's, or Redis's clock stepped back by an
        // hour. The key keeps asking (from its lease: no local spans to charge).
        let ahead = redis_now_us(&mut conn).await + 3_600 * 1_000_000;
        let _: () = redis::cmd("SET")
            .arg(&bucket)
            .arg(ahead)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _ = principal.bucket.take(rate, 1_000, 2);
        assert_eq!(principal.bucket.lease.demand().local, 0);
        let _ = principal.bucket.take(rate, 1_000, 3);
        leaser.round(&keys).await;
        let tat: u64 = redis::cmd("GET")
            .arg(&bucket)
            .query_async(&mut conn)
            .await
            .unwrap();
        let now = redis_now_us(&mut conn).await;
        // At most one bucket (1 s) of debt past an empty bucket (1 s): 2 s ahead.
        assert!(
            tat <= now + 2_000_000,
            "the bucket's TAT is {} s ahead of Redis's clock",
            (tat - now) / 1_000_000
        );
    });
}

/// Redis gone, then back (restarted empty): the replica falls back to its local buckets at
/// once, and once Redis answers again its keys are leased from it again: no key stays locked
/// out, in either mode.
#[test]
fn a_key_is_served_while_redis_is_down_and_leased_again_once_it_is_back() {
    let rt = runtime();
    let plan = rate_plan(100, 100);
    let rate = plan.rate.unwrap();
    let (keys, principal, _) = one_key(&plan);
    let status = Arc::new(FleetStatus::default());
    let redis = Redis::start();
    let port = redis.port;
    let mut leaser = Leaser::new(&redis.url(), Duration::from_millis(100), status.clone()).unwrap();
    let bucket = &principal.bucket;
    let mut mono = 1_000_000_000u64;
    rt.block_on(async {
        assert!(matches!(bucket.take(rate, 10, mono), Take::Taken { .. }));
        leaser.round(&keys).await;
        assert!(bucket.lease.is_fleet());
        assert!(matches!(
            bucket.take(rate, 5, mono),
            Take::Taken {
                credit: Credit::Leased { .. },
                ..
            }
        ));
    });
    drop(redis);
    rt.block_on(async {
        leaser.round(&keys).await;
        assert!(status.fallback.load(Ordering::Relaxed), "the round failed");
        // Found by an audit: the first round after an outage measured its interval from the
        // last round before it and so leased a full bucket per busy key on every replica.
        assert!(leaser.last_round.is_none(), "the outage is no interval");
        assert!(!bucket.lease.is_fleet(), "local buckets decide");
        mono += 10_000_000_000;
        assert!(matches!(
            bucket.take(rate, 100, mono),
            Take::Taken {
                credit: Credit::Local { .. },
                ..
            }
        ));
    });
    let _redis = Redis::start_on(port);
    rt.block_on(async {
        // Rounds wait a second after a failure; then the next one reaches Redis.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            leaser.round(&keys).await;
            if !status.fallback.load(Ordering::Relaxed) && bucket.lease.is_fleet() {
                break;
            }
            assert!(Instant::now() < deadline, "Redis never taken back");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The local spans were charged (a bucket of debt at most): the key is refused for a
        // while, then leased again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            mono += 50_000_000;
            if let Take::Taken { credit, .. } = bucket.take(rate, 10, mono) {
                assert!(matches!(credit, Credit::Leased { .. }));
                break;
            }
            assert!(Instant::now() < deadline, "the key stays locked out");
            leaser.round(&keys).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

/// 1 span/s, a bucket of 100: nothing refills within a test's few milliseconds.
const SLOW: Rate = Rate {
    per_second: 1,
    burst: 100,
};

/// One key of a plan of `rate` and a leaser for it, against `redis`: the key store, its
/// principal, its bucket's name in Redis, the leaser.
fn slow_key(redis: &Redis, rate: Rate) -> (KeyStore, Arc<Principal>, String, Leaser) {
    let (keys, principal, bucket) = one_key(&rate_plan(rate.per_second, rate.burst));
    let leaser = Leaser::new(&redis.url(), Duration::from_millis(100), Arc::default()).unwrap();
    (keys, principal, bucket, leaser)
}

async fn connect(redis: &Redis) -> MultiplexedConnection {
    let client = Client::open(redis.url()).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// The spans a key's Redis bucket has free now (what the script would grant).
async fn redis_free(conn: &mut MultiplexedConnection, bucket: &str, rate: Rate) -> u64 {
    let tat: Option<u64> = redis::cmd("GET")
        .arg(bucket)
        .query_async(conn)
        .await
        .unwrap();
    let now = redis_now_us(conn).await;
    let per = 1_000_000 / u64::from(rate.per_second);
    let tau = u64::from(rate.burst) * per;
    (now + tau).saturating_sub(tat.unwrap_or(0).max(now)) / per
}

/// A stopping replica gives Redis back what its lease holds unspent, and charges what its local
/// bucket let through: the spans it was granted and did not use are the key's again at once,
/// not after the bucket refilled (at 1 span/s, here, 30 s; a key sending large batches slowly
/// lost a batch's worth at every rolling restart). What is given back never fills the bucket
/// past full, even when Redis lost it meanwhile (restarted empty).
#[test]
fn a_stopping_replica_gives_back_its_unspent_lease() {
    let (redis, rt) = (Redis::start(), runtime());
    let (keys, principal, bucket, mut leaser) = slow_key(&redis, SLOW);
    let (lease, rate) = (&principal.bucket.lease, SLOW);
    rt.block_on(async {
        let mut conn = connect(&redis).await;
        // 60 spans through the local bucket, charged by the round; then a batch of 30 asked
        // of the lease (1 span, refused), so the next round leases 30.
        assert!(matches!(
            principal.bucket.take(rate, 60, 1),
            Take::Taken {
                credit: Credit::Local { .. },
                ..
            }
        ));
        leaser.round(&keys).await;
        assert!(lease.is_fleet());
        assert!(matches!(
            principal.bucket.take(rate, 30, 2),
            Take::Refused { .. }
        ));
        leaser.round(&keys).await;
        assert_eq!(lease.demand().held, 30);
        assert!(matches!(
            principal.bucket.take(rate, 10, 3),
            Take::Taken {
                credit: Credit::Leased { .. },
                ..
            }
        ));
        assert_eq!(lease.demand().held, 20);
        assert_eq!(redis_free(&mut conn, &bucket, rate).await, 10);
        // 5 more through the local bucket after Redis went unreachable and came back would be
        // charged at the stop too: counted here directly.
        lease.count_local(5);
        leaser.give_back(&keys).await;
        assert_eq!(lease.demand().held, 0, "the allowance went back");
        assert!(!lease.is_fleet(), "nothing left to spend in fleet mode");
        // 100 - 60 - 10 - 5 (one more if a second of refill passed meanwhile).
        let free = redis_free(&mut conn, &bucket, rate).await;
        assert!((25..=26).contains(&free), "{free} spans free");

        // Leased again, then Redis loses the bucket: giving back does not overfill it.
        let _ = principal.bucket.take(rate, 20, 4);
        leaser.round(&keys).await;
        assert!(lease.demand().held > 0);
        let _: () = redis::cmd("DEL")
            .arg(&bucket)
            .query_async(&mut conn)
            .await
            .unwrap();
        leaser.give_back(&keys).await;
        assert_eq!(redis_free(&mut conn, &bucket, rate).await, 100);
    });
}

/// A batch refused by a later check after a round topped its lease up again: its spans go
/// back to the fleet's bucket at the next round, not on top of the replica's hold.
#[test]
fn a_refund_past_the_hold_goes_back_to_redis() {
    let (redis, rt) = (Redis::start(), runtime());
    let (keys, principal, bucket, mut leaser) = slow_key(&redis, SLOW);
    let (lease, rate) = (&principal.bucket.lease, SLOW);
    rt.block_on(async {
        let mut conn = connect(&redis).await;
        // 30 through the local bucket, then a batch of 30 asked of the lease: leased.
        let _ = principal.bucket.take(rate, 30, 1);
        leaser.round(&keys).await;
        assert!(matches!(
            principal.bucket.take(rate, 30, 2),
            Take::Refused { .. }
        ));
        leaser.round(&keys).await;
        assert_eq!(lease.demand().held, 30);
        let Take::Taken { credit, .. } = principal.bucket.take(rate, 30, 3) else {
            panic!("the lease holds 30");
        };
        // The batch waits on a later check while a round tops the lease up again.
        leaser.round(&keys).await;
        assert_eq!(lease.demand().held, 30);
        assert_eq!(redis_free(&mut conn, &bucket, rate).await, 10);
        principal.bucket.refund(credit);
        assert_eq!(lease.peek(rate), 30, "the hold, no more");
        leaser.round(&keys).await;
        let free = redis_free(&mut conn, &bucket, rate).await;
        assert!((40..=41).contains(&free), "{free} spans free");
    });
}
