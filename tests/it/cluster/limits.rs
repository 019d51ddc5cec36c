//! Limits that hold across the fleet: a revoked key on both replicas, the fleet-wide rate limit
//! with its bound (a key leased before the load, and one the replicas had never seen), each
//! replica's own limit while Redis is down, and an organisation's monthly quota counted over
//! the cluster.

use super::*;

/// Rate R and burst B of the tests' key (spans/s, spans), and the replicas' lease interval S.
const R: u64 = 100;
const B: u64 = 100;
const SYNC_MS: u64 = 100;
/// Spans per request of `paced`.
const BATCH: u64 = 10;

/// The longest a lease round is taken to take (Q, the time between two rounds' starts less S:
/// the local cluster's Redis answers in under a millisecond when idle, a few on the busy test
/// box).
const ROUND_MS: u64 = 10;

/// What a replica holds for a key: H = min(B, max(ceil(2 x R x (S + Q)), largest batch)).
fn hold() -> u64 {
    (2 * R * (SYNC_MS + ROUND_MS))
        .div_ceil(1000)
        .clamp(BATCH, B)
}

/// The documented bound (docs/fleet.md, "Rate limits") for N replicas over `secs` seconds:
/// B + R x T + N x H, plus, for a key whose first requests came before its first lease, what
/// each replica's local bucket may let through until then, B + R x S' (S' = the lease
/// interval plus the round's own time, counted here as a second interval).
fn fleet_bound(replicas: u64, secs: f64, cold: bool) -> u64 {
    let leased = B as f64 + R as f64 * secs + (replicas * hold()) as f64;
    let local = if cold {
        replicas as f64 * (B as f64 + R as f64 * 2.0 * SYNC_MS as f64 / 1000.0)
    } else {
        0.0
    };
    (leased + local).floor() as u64
}

fn limits(cluster: &Cluster) -> [(&'static str, String); 3] {
    [
        ("INGEST_RATE_LIMIT_RPS", R.to_string()),
        ("INGEST_REDIS_URL", cluster.redis.clone()),
        ("INGEST_REDIS_SYNC_MS", SYNC_MS.to_string()),
    ]
}

fn settings<'a>(limits: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    limits.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Revocation reaches a replica with the first key-set load that begins after the revoked
/// version of the key is on the ClickHouse node the replica reads from (docs/fleet.md). The
/// test holds each replica to exactly that, counted in loads rather than seconds, so a busy
/// machine cannot fail it: once the new version is readable on the replica's node and
/// `traceingest_key_set_loads_total` has then gone up by 2 (the second of those loads began
/// after the first ended, so after the row was there), the key must be refused. The seconds
/// it took are printed.
#[test]
fn a_key_revoked_through_one_node_is_refused_by_both_replicas_within_one_key_load() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &[]);
    let key = a.ready_key("org-revoke");
    b.ready_key_existing(&key);
    let body = batch("rev", 1, 1);
    assert_eq!(b.post_ingest(&key, &body).status, 202);
    let prefix = &key[..12];
    let out = a.cli(&["keys", "revoke", prefix]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let revoked = Instant::now();
    let revoked_version = format!(
        "SELECT count() FROM `{}`.api_keys FINAL WHERE display_prefix = '{prefix}' \
         AND revoked_at IS NOT NULL",
        a.database
    );
    // Per replica: its node, the load count read once the revocation was on that node, and
    // when it refused the key.
    let mut replicas = [(&a, "s1r1", None, None), (&b, "s2r2", None, None)];
    while replicas.iter().any(|r| r.3.is_none()) {
        assert!(
            revoked.elapsed() < Duration::from_secs(60),
            "not refused within a minute: {:?}",
            replicas.map(|r| r.3)
        );
        for (server, node, loads_then, refused) in &mut replicas {
            if refused.is_some() {
                continue;
            }
            if loads_then.is_none() && cluster.count_at(node, &revoked_version) == 1 {
                *loads_then = Some(server.key_loads());
            }
            // Read before the request: a load counted here ended before it was answered.
            let loads_now = server.key_loads();
            let status = server.post_ingest(&key, &body).status;
            if status == 401 {
                *refused = Some(revoked.elapsed());
            } else if let Some(then) = *loads_then {
                assert!(
                    loads_now < then + 2.0,
                    "{node}'s replica still accepts the revoked key ({status}) after 2 key-set \
                     loads since the revocation reached its node"
                );
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    eprintln!("revocation: refused after {:?}", replicas.map(|r| r.3));
}

#[test]
fn a_key_at_three_times_its_rate_across_two_replicas_gets_at_most_the_bound() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let limits = limits(&cluster);
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &settings(&limits));
    let key = a.ready_key("org-rate");
    b.ready_key_existing(&key);
    // Both replicas lease for the key before the load starts (a lease round every SYNC_MS;
    // waited for, not slept on: a busy CI machine once took more than 3 rounds).
    wait_until(
        "both replicas holding a lease for the key",
        Duration::from_secs(10),
        || {
            [&a, &b]
                .iter()
                .all(|s| s.metric_value("traceingest_rate_limit_leased_spans_total") > 0.0)
        },
    );
    let sent = paced(&[&a, &b], &key, "rate", 3 * R, 10);
    let (accepted, took) = (sent.total(), sent.took.as_secs_f64());
    let bound = fleet_bound(2, took, false);
    eprintln!(
        "fleet rate limit: {accepted} spans accepted in {took:.1} s at {} spans/s over 2 \
         replicas; bound {bound}; two local buckets would allow {}",
        3 * R,
        2 * (B + R * 10)
    );
    assert!(accepted <= bound, "{accepted} > {bound}");
    assert!(
        accepted >= R * 10 * 8 / 10,
        "throttled too hard: {accepted}"
    );
    for (s, remaining) in [&a, &b].into_iter().zip(&sent.first_remaining) {
        assert!(
            remaining.is_some_and(|r| r <= hold()),
            "leased before the load: the first answer shows what the replica holds ({remaining:?})"
        );
        assert_eq!(s.metric_value("traceingest_rate_limit_fallback"), 0.0);
        assert!(s.metric_value("traceingest_rate_limit_leased_spans_total") > 0.0);
    }
}

/// A key the replicas have never seen, sent at 3R across both from its first request: each
/// learns it from that request (an early key-set load) and lets it through its local bucket
/// until its first lease, at most one lease round later; that is the bound's local term.
///
/// Whether a replica's first batch beats its first lease is a race: the request resumes after
/// the key-set load (a wake-up) while a lease round is due within 100 ms. Both replicas losing
/// it (their first answers then come from a lease) leaves the local term untested, so the
/// test then runs again with a new key, three times at most; the bound is checked every time.
#[test]
fn a_key_not_leased_in_advance_gets_at_most_the_bound_with_the_local_term() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let limits = limits(&cluster);
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &settings(&limits));
    const ATTEMPTS: usize = 3;
    for attempt in 1..=ATTEMPTS {
        let key = a.create_key(&format!("org-cold{attempt}"));
        // The key's row on the node b reads keys from, so that b's first request finds it.
        wait_until("the key replicated", Duration::from_secs(10), || {
            cluster.count_at(
                "s2r2",
                &format!(
                    "SELECT count() FROM `{}`.api_keys WHERE org_id = 'org-cold{attempt}'",
                    a.database
                ),
            ) > 0
        });
        let sent = paced(&[&a, &b], &key, &format!("cold{attempt}-"), 3 * R, 5);
        let (accepted, took) = (sent.total(), sent.took.as_secs_f64());
        let bound = fleet_bound(2, took, true);
        // A first answer from the local bucket shows what it has left (B less the batch);
        // from a lease, at most what the replica holds.
        let local_first = sent
            .first_remaining
            .iter()
            .filter(|r| r.is_some_and(|r| r > hold()))
            .count();
        eprintln!(
            "cold key, attempt {attempt}: {accepted} spans accepted in {took:.1} s at {} \
             spans/s over 2 replicas ({local_first} of 2 first batches through the local \
             bucket, remaining {:?}); bound {bound} (leased in advance: {})",
            3 * R,
            sent.first_remaining,
            fleet_bound(2, took, false)
        );
        assert!(accepted <= bound, "{accepted} > {bound}");
        assert!(accepted >= R * 5 * 8 / 10, "throttled too hard: {accepted}");
        for s in [&a, &b] {
            assert!(s.metric_value("traceingest_rate_limit_leased_spans_total") > 0.0);
        }
        if local_first >= 1 {
            return;
        }
    }
    panic!(
        "in {ATTEMPTS} attempts with a new key each, no replica let a key's first batch \
         through its local bucket: its first lease always came first"
    );
}

/// Redis killed: both replicas fall back to their own buckets, each logs it once however many
/// rounds fail, `/metrics` shows it, and each still enforces the key's limit on its own.
#[test]
fn with_redis_down_each_replica_still_enforces_the_limit_on_its_own() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let limits = limits(&cluster);
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &settings(&limits));
    let key = a.ready_key("org-redis-down");
    b.ready_key_existing(&key);
    let warning = "Redis unreachable";
    for s in [&a, &b] {
        assert_eq!(log_lines(s, warning), 0);
    }
    cluster.kill9("redis");
    wait_until("the fallback on both", Duration::from_secs(5), || {
        [&a, &b]
            .iter()
            .all(|s| s.metric_value("traceingest_rate_limit_fallback") == 1.0)
    });
    let sent = paced(&[&a, &b], &key, "down", 3 * R, 4);
    let took = sent.took.as_secs_f64();
    // Each replica alone: its local bucket, B + R x T.
    let alone = (B as f64 + R as f64 * took).floor() as u64;
    eprintln!(
        "Redis down: {:?} spans accepted by the two replicas in {took:.1} s at {} spans/s; \
         each bounded by {alone}",
        sent.accepted,
        3 * R
    );
    for (s, &accepted) in [&a, &b].into_iter().zip(&sent.accepted) {
        assert!(accepted <= alone, "{accepted} > {alone}");
        assert!(accepted >= R * 3, "{accepted}");
        assert_eq!(s.metric_value("traceingest_rate_limit_fallback"), 1.0);
        // The rounds kept failing (one a second), the warning came once.
        assert!(s.metric_value("traceingest_rate_limit_redis_errors_total") >= 2.0);
        assert_eq!(log_lines(s, warning), 1, "{}", s.log());
    }
    // Not one fleet bucket any more: together they let more through than one would.
    assert!(sent.total() > alone, "{} <= {alone}", sent.total());
    cluster.up();
    wait_until("fleet mode again", Duration::from_secs(10), || {
        [&a, &b]
            .iter()
            .all(|s| s.metric_value("traceingest_rate_limit_fallback") == 0.0)
    });
    for s in [&a, &b] {
        assert_eq!(log_lines(s, warning), 1);
    }
}
/// An organisation on a small plan, its spans sent through both replicas at the key's rate on
/// each: refused with `quota_exceeded` once over floor(quota x 1.1) plus the fleet's overshoot
/// (README, "Several replicas"; docs/fleet.md, "Quotas"): `(N - 1) x min(hard, K x (B + R x
/// W))` for what the other replicas accepted unseen, W = quota sync + the count's own time +
/// flush interval + D, and `min(hard, K x (B + R x D))` for a replica's own spans a count may
/// miss, D being what an insert and its replication to the replica the count reads take.
///
/// D and the count's time depend on how busy the machine is (a second or more while CI builds
/// beside the cluster), so the test measures them while it sends: `Visibility` polls every
/// replica for the organisation's rows, and the bound uses the longest time an accepted span
/// took to be on every replica of its shard (which covers the flush interval and D), and the
/// longest count through `spans`. What does not depend on timing is checked as such: each
/// replica refuses before it alone accepted the hard limit (it counts the other's spans), and
/// not before the fleet did (a count never exceeds the truth).
#[test]
fn a_quota_over_the_cluster_holds_within_the_fleet_overshoot() {
    const QUOTA: u64 = 2000;
    const RATE: u64 = 200;
    const SYNC_MS: u64 = 500;
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let plans = format!("tiny:{QUOTA}:{RATE}");
    let env = [
        ("INGEST_PLANS", plans.as_str()),
        ("INGEST_QUOTA_SYNC_MS", "500"),
        ("INGEST_FLUSH_INTERVAL_MS", "100"),
    ];
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &env);
    let out = a.cli(&["orgs", "create", "org-quota", "--plan", "tiny"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = a.ready_key("org-quota");
    b.ready_key_existing(&key);
    let hard = QUOTA * 11 / 10;
    let visibility = Visibility::new(&cluster, &a.database, "org-quota");
    // Each replica gets the key's rate (batches of 10 in turn at twice the rate), until both
    // have refused for two quota syncs.
    let servers = [&a, &b];
    let started = Instant::now();
    let mut accepted_at: Vec<(Instant, u64)> = Vec::new();
    let (mut accepted, mut own) = (0u64, [0u64; 2]);
    let mut refused_since = [None::<Instant>; 2];
    let mut own_at_refusal = [0u64; 2];
    std::thread::scope(|scope| {
        let probe = scope.spawn(|| visibility.run());
        for i in 0u64.. {
            let due = started + Duration::from_micros(i * 10 * 1_000_000 / (2 * RATE));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let at = (i % 2) as usize;
            let r = servers[at].post_ingest(&key, &batch(&format!("quota{i}"), 1, 10));
            match (r.status, r.code().as_str()) {
                (202, _) => {
                    accepted += 10;
                    own[at] += 10;
                    accepted_at.push((Instant::now(), accepted));
                }
                (429, "quota_exceeded") => {
                    if refused_since[at].is_none() {
                        refused_since[at] = Some(Instant::now());
                        own_at_refusal[at] = own[at];
                    }
                }
                (s, c) => panic!("unexpected {s} {c}"),
            }
            let settled = Duration::from_millis(2 * SYNC_MS);
            if refused_since
                .iter()
                .all(|t| t.is_some_and(|t| t.elapsed() > settled))
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "never refused: {accepted}"
            );
        }
        wait_until(
            "every accepted span on every replica",
            Duration::from_secs(60),
            || visibility.visible() >= accepted,
        );
        visibility.stop();
        probe.join().unwrap();
    });
    let lag = visibility.lag(&accepted_at);
    let count_s = visibility.longest_count();
    // One key, burst = rate.
    let admits = |secs: f64| hard.min((RATE as f64 * (1.0 + secs)) as u64);
    let w = SYNC_MS as f64 / 1000.0 + count_s + lag;
    let bound = hard + admits(w) + admits(lag);
    eprintln!(
        "quota over the cluster: {accepted} spans accepted through 2 replicas ({} and {}; hard \
         limit {hard}, bound with the fleet overshoot {bound}: insert to every replica within \
         {lag:.2} s, counts within {count_s:.2} s) in {:.1} s",
        own[0],
        own[1],
        started.elapsed().as_secs_f64()
    );
    assert!(
        accepted <= bound,
        "accepted past the bound {bound} (hard limit {hard})"
    );
    // Each replica's own spans were not over the limit when it first refused: it counted the
    // other's (the fleet passed the limit when each had sent about half of it, so this holds
    // while the other's spans take less than about half the sending time to be counted).
    for (at, own) in own_at_refusal.iter().enumerate() {
        assert!(
            *own < hard,
            "replica {at} refused only after accepting {own} itself (lag {lag:.2} s)"
        );
    }
    // A replica refuses once its count, which never exceeds the truth, reaches the limit.
    assert!(
        accepted >= hard,
        "refused before the hard limit: {accepted}"
    );
    a.wait_rows_within(accepted, Duration::from_secs(30));
    check_stored_once(&cluster, &a, accepted);
}

/// When an organisation's spans became visible on every replica of their shard, polled while a
/// test sends: the sum over shards of the smallest count among the shard's replicas, with the
/// time the poll ended; and how long a count through `spans` (what a quota sync runs) took.
struct Visibility<'a> {
    cluster: &'a Cluster,
    local_sql: String,
    count_sql: String,
    samples: Mutex<Vec<(Instant, u64)>>,
    longest_count_us: AtomicU64,
    done: AtomicBool,
}

impl<'a> Visibility<'a> {
    fn new(cluster: &'a Cluster, db: &str, org: &str) -> Visibility<'a> {
        Visibility {
            cluster,
            local_sql: format!("SELECT count() FROM `{db}`.spans_local WHERE org_id = '{org}'"),
            count_sql: format!("SELECT count() FROM `{db}`.spans WHERE org_id = '{org}'"),
            samples: Mutex::new(Vec::new()),
            longest_count_us: AtomicU64::new(0),
            done: AtomicBool::new(false),
        }
    }

    /// Polls until `stop`.
    fn run(&self) {
        let shards: std::collections::BTreeSet<u32> =
            self.cluster.nodes.iter().map(|n| n.shard).collect();
        while !self.done.load(Ordering::Acquire) {
            let visible: u64 = shards
                .iter()
                .map(|&s| {
                    let replicas = self.cluster.nodes.iter().filter(|n| n.shard == s);
                    replicas
                        .map(|n| self.cluster.count_at(&n.name, &self.local_sql))
                        .min()
                        .unwrap_or(0)
                })
                .sum();
            self.samples.lock().unwrap().push((Instant::now(), visible));
            let t = Instant::now();
            self.cluster.count_at("s1r1", &self.count_sql);
            self.longest_count_us
                .fetch_max(t.elapsed().as_micros() as u64, Ordering::AcqRel);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&self) {
        self.done.store(true, Ordering::Release);
    }

    fn visible(&self) -> u64 {
        self.samples.lock().unwrap().last().map_or(0, |&(_, n)| n)
    }

    /// The longest time, in seconds, from a span's `202` until as many spans as had been
    /// accepted by then were on every replica (rows are flushed in the order they were
    /// accepted, give or take a batch or two in flight together).
    fn lag(&self, accepted_at: &[(Instant, u64)]) -> f64 {
        let samples = self.samples.lock().unwrap();
        accepted_at
            .iter()
            .map(|&(at, total)| {
                let seen = samples
                    .iter()
                    .find(|&&(t, n)| t >= at && n >= total)
                    .expect("every accepted span was seen");
                seen.0.duration_since(at).as_secs_f64()
            })
            .fold(0.0, f64::max)
    }

    fn longest_count(&self) -> f64 {
        self.longest_count_us.load(Ordering::Acquire) as f64 / 1e6
    }
}
