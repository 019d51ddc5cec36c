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

/// What a replica holds for a key: H = min(B, max(ceil(2 x R x S), largest batch)).
fn hold() -> u64 {
    (2 * R * SYNC_MS).div_ceil(1000).clamp(BATCH, B)
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
    // Both replicas lease for the key before the load starts.
    std::thread::sleep(Duration::from_millis(3 * SYNC_MS));
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
#[test]
fn a_key_not_leased_in_advance_gets_at_most_the_bound_with_the_local_term() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let limits = limits(&cluster);
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &settings(&limits));
    let key = a.create_key("org-cold");
    // The key's row on the node b reads keys from, so that b's first request finds it.
    wait_until("the key replicated", Duration::from_secs(10), || {
        cluster.count_at(
            "s2r2",
            &format!("SELECT count() FROM `{}`.api_keys", a.database),
        ) > 0
    });
    let sent = paced(&[&a, &b], &key, "cold", 3 * R, 5);
    let (accepted, took) = (sent.total(), sent.took.as_secs_f64());
    let bound = fleet_bound(2, took, true);
    // A first answer from the local bucket shows what it has left (B less the batch); from a
    // lease, at most what the replica holds.
    let local_first = sent
        .first_remaining
        .iter()
        .filter(|r| r.is_some_and(|r| r > hold()))
        .count();
    eprintln!(
        "cold key: {accepted} spans accepted in {took:.1} s at {} spans/s over 2 replicas \
         ({local_first} of 2 first batches through the local bucket, remaining {:?}); bound \
         {bound} (leased in advance: {})",
        3 * R,
        sent.first_remaining,
        fleet_bound(2, took, false)
    );
    assert!(accepted <= bound, "{accepted} > {bound}");
    assert!(accepted >= R * 5 * 8 / 10, "throttled too hard: {accepted}");
    // The first request beats the first lease by the key-set load's wake-up (5 ms) against a
    // lease round due within 100 ms: both replicas losing that race is a 1-in-400 event.
    assert!(
        local_first >= 1,
        "no replica let the key's first batch through its local bucket: {:?}",
        sent.first_remaining
    );
    for s in [&a, &b] {
        assert!(s.metric_value("traceingest_rate_limit_leased_spans_total") > 0.0);
    }
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
/// W))` for what the other replicas accepted unseen, W = quota sync + flush interval + D, and
/// `min(hard, K x (B + R x D))` for a replica's own spans a count may miss, D being what an
/// insert and its replication to the replica the count reads take.
#[test]
fn a_quota_over_the_cluster_holds_within_the_fleet_overshoot() {
    const QUOTA: u64 = 2000;
    const RATE: u64 = 200;
    const SYNC_MS: u64 = 500;
    const FLUSH_MS: u64 = 100;
    /// D: what an insert and its replication may take, on this machine.
    const INSERT_MS: u64 = 1000;
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
    // One key, burst = rate.
    let admits = |secs: f64| hard.min((RATE as f64 * (1.0 + secs)) as u64);
    let w = (SYNC_MS + FLUSH_MS + INSERT_MS) as f64 / 1000.0;
    let bound = hard + admits(w) + admits(INSERT_MS as f64 / 1000.0);
    // Each replica gets the key's rate (batches of 10 in turn at twice the rate), until both
    // have refused for two quota syncs.
    let servers = [&a, &b];
    let started = Instant::now();
    let (mut accepted, mut refused_since) = (0u64, [None::<Instant>; 2]);
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
                assert!(
                    accepted <= bound,
                    "accepted past the bound {bound} (hard limit {hard})"
                );
            }
            (429, "quota_exceeded") => {
                refused_since[at].get_or_insert_with(Instant::now);
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
    eprintln!(
        "quota over the cluster: {accepted} spans accepted through 2 replicas (hard limit \
         {hard}, bound with the fleet overshoot {bound}) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // A replica refuses once its count, which never exceeds the truth, reaches the limit.
    assert!(
        accepted >= hard,
        "refused before the hard limit: {accepted}"
    );
    a.wait_rows_within(accepted, Duration::from_secs(30));
    check_stored_once(&cluster, &a, accepted);
}
