//! Fleet-wide rate limits, the control thread's side: every `INGEST_REDIS_SYNC_MS` one
//! pipelined round trip to Redis tops up the leases of the keys in use (`admission::fleet`), or
//! a `PING` when none needs anything, so an unreachable Redis shows at once.
//!
//! Redis holds one GCRA bucket per key (`traceingest:rate:<sha256 of the key>`, the theoretical
//! arrival time in microseconds of Redis's own clock, so the replicas' clocks do not matter).
//! A round asks, per key, for what brings the replica's allowance up to its hold, and charges
//! what the local bucket let through meanwhile; the script grants what the bucket has. Keys
//! used since the last round all take part; keys neither used nor leased yet at most
//! `UNUSED_PER_ROUND` a round, so a round's size follows the keys in use, not the key set. Only
//! this thread talks to Redis: the workers read atomics.
//!
//! Redis unreachable (a refused connection, no answer within 1 s, an error): every lease falls
//! back to the key's local bucket, one warning is logged and `/metrics` shows
//! `traceingest_rate_limit_fallback 1`; rounds go on trying every second, and the first that
//! succeeds puts the keys back in fleet mode (logged once).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client};

use crate::admission::fleet::{hold, FleetStatus};
use crate::admission::rate::Rate;
use crate::auth::{hex, KeyStore};

/// GCRA in Redis: KEYS[1] the key's bucket; ARGV rate (spans/s), burst, spans wanted, spans
/// to charge, spans given back. The charge is taken whatever the bucket holds (the spans were
/// admitted already) but the debt is capped at one bucket, so that a long outage does not lock
/// the key out for as long afterwards (the documented bound counts local admissions in full,
/// repaid or not); spans given back (a stopping replica's unspent lease) are put back, never
/// past a full bucket; then as much of `want` as the bucket has is granted. Returns the spans
/// granted. A bucket found further ahead than that cap (debt run up under a plan that refilled
/// more slowly, or Redis's clock stepped back) is cut to it first: left alone, it gave the key
/// nothing until Redis's clock caught up, however long that was.
const SCRIPT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local charge = tonumber(ARGV[4])
local give = tonumber(ARGV[5] or '0')
local per = 1000000 / rate
local tau = burst * per
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
if tat > now + 2 * tau then tat = now + 2 * tau end
if charge > 0 then
  tat = math.min(tat + charge * per, now + 2 * tau)
end
if give > 0 then
  tat = math.max(tat - give * per, now)
end
local free = math.floor((now + tau - tat) / per)
if free < 0 then free = 0 end
local grant = math.min(want, free)
tat = tat + grant * per
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil(2 * tau / 1000) + 1000)
return grant
"#;

/// How long a connection attempt or a round may take.
const TIMEOUT: Duration = Duration::from_secs(1);
/// After a failure, the next attempt.
const RETRY: Duration = Duration::from_secs(1);
/// The most keys one round leases that were not used since the last round and hold no lease
/// yet (at start, after an outage, new keys): leased ahead of their first use, a bounded
/// number at a time, so that a round stays one short round trip however many keys there are.
const UNUSED_PER_ROUND: usize = 1000;

/// The control thread's connection to Redis and the state of fleet mode.
pub struct Leaser {
    client: Client,
    /// The URL without a password, for messages.
    address: String,
    conn: Option<(MultiplexedConnection, String)>,
    sync_ms: u64,
    /// When the last round began: leases are topped up once per `sync_ms` plus the round's
    /// own time (and whatever else held this thread), so the hold must last that long.
    last_round: Option<Instant>,
    status: Arc<FleetStatus>,
    /// No attempt before this (after a failure).
    retry_at: Option<Instant>,
    /// When the fallback started (logged once, with its end).
    failing_since: Option<Instant>,
}

impl Leaser {
    /// Checks the URL; does no I/O.
    pub fn new(url: &str, sync: Duration, status: Arc<FleetStatus>) -> Result<Leaser, String> {
        let client = Client::open(url).map_err(|e| {
            format!(
                "INGEST_REDIS_URL {:?}: {e}",
                crate::config::redact_password(url)
            )
        })?;
        let address = match url::Url::parse(url) {
            Ok(mut u) => {
                let _ = u.set_password(None);
                u.to_string()
            }
            Err(_) => "redis".to_string(),
        };
        status.configured.store(true, Ordering::Relaxed);
        Ok(Leaser {
            client,
            address,
            conn: None,
            sync_ms: sync.as_millis() as u64,
            last_round: None,
            status,
            retry_at: None,
            failing_since: None,
        })
    }

    /// One round: charge and top up every key with a rate limit that needs it.
    pub async fn round(&mut self, keys: &KeyStore) {
        if self.retry_at.is_some_and(|at| Instant::now() < at) {
            return;
        }
        match tokio::time::timeout(TIMEOUT, self.try_round(keys)).await {
            Ok(Ok(())) => self.recovered(),
            Ok(Err(e)) => self.failed(keys, &e),
            Err(_) => self.failed(keys, "no answer within 1 s"),
        }
    }

    /// At a stop, once the workers are done: gives Redis back what this replica's leases hold
    /// unspent, and charges what its local buckets let through since the last round, in one
    /// attempt of at most 1 s. Without it a stopping replica's leases (up to H a key: a whole
    /// batch's worth for a key that sends large batches slowly) were lost to the key until the
    /// bucket refilled, at every rolling restart.
    pub async fn give_back(&mut self, keys: &KeyStore) {
        match tokio::time::timeout(TIMEOUT, self.try_give_back(keys)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(spans)) => tracing::info!(
                spans,
                "gave the fleet's rate-limit buckets back what this replica held unspent"
            ),
            Ok(Err(e)) => tracing::warn!(
                redis = %self.address,
                error = %e,
                "could not give the fleet back this replica's unspent rate-limit leases"
            ),
            Err(_) => tracing::warn!(
                redis = %self.address,
                "could not give the fleet back this replica's unspent rate-limit leases: \
                 no answer within 1 s"
            ),
        }
    }

    /// Returns the spans given back.
    async fn try_give_back(&mut self, keys: &KeyStore) -> Result<u64, String> {
        let set = keys.current();
        let mut pipe = redis::pipe();
        let mut given = 0;
        let mut calls = 0;
        let (conn, sha) = self.connection().await?;
        for (hash, principal) in set.iter() {
            let Some(rate) = principal.account.rate() else {
                continue;
            };
            let lease = &principal.bucket.lease;
            let d = lease.demand();
            let held = lease.surrender() + d.returned;
            if held == 0 && d.local == 0 {
                continue;
            }
            script_call(&mut pipe, sha, hash, rate, 0, d.local, held);
            given += held;
            calls += 1;
        }
        if calls == 0 {
            return Ok(0);
        }
        pipe.query_async::<Vec<u64>>(conn)
            .await
            .map_err(|e| e.to_string())?;
        Ok(given)
    }

    /// The connection to Redis and the script's SHA, connecting (and loading the script) if
    /// there is none.
    async fn connection(&mut self) -> Result<(&mut MultiplexedConnection, &str), String> {
        if self.conn.is_none() {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(TIMEOUT))
                .set_response_timeout(Some(TIMEOUT));
            let mut conn = self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| e.to_string())?;
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(SCRIPT)
                .query_async(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
            self.conn = Some((conn, sha));
        }
        match self.conn.as_mut() {
            Some((conn, sha)) => Ok((conn, sha.as_str())),
            None => Err("not connected".into()),
        }
    }

    async fn try_round(&mut self, keys: &KeyStore) -> Result<(), String> {
        // Leases are topped up every `sync_ms` plus a round's time: with a Redis slower than
        // the interval, two intervals alone would run dry before the next top-up. The time
        // since the last round began measures it (capped: the hold is at most the bucket).
        let now = Instant::now();
        let interval_ms = self.last_round.map_or(self.sync_ms, |at| {
            (now - at).as_millis().min(u128::from(u32::MAX)) as u64
        });
        self.last_round = Some(now);
        let (conn, sha) = self.connection().await?;
        let set = keys.current();
        let mut pipe = redis::pipe();
        // (lease, spans charged, spans given back, hold) of each invocation, in order.
        let mut asked = Vec::new();
        let mut unused_left = UNUSED_PER_ROUND;
        for (hash, principal) in set.iter() {
            let Some(rate) = principal.account.rate() else {
                continue;
            };
            let lease = &principal.bucket.lease;
            let d = lease.demand();
            // Nobody used the key: what it holds stays, nothing more is leased.
            let to_hold = (!d.fleet || d.asked > 0).then(|| hold(rate, interval_ms, d.largest));
            let want = to_hold.map_or(0, |h| h.saturating_sub(d.held));
            if d.fleet && want == 0 && d.local == 0 && d.returned == 0 {
                continue;
            }
            if !d.fleet && d.asked == 0 && d.local == 0 {
                if unused_left == 0 {
                    continue;
                }
                unused_left -= 1;
            }
            script_call(&mut pipe, sha, hash, rate, want, d.local, d.returned);
            asked.push((principal.clone(), d.local, d.returned, to_hold));
        }
        if asked.is_empty() {
            // Nothing to lease: still ask, so that a Redis gone away shows (log, `/metrics`)
            // before a key needs it.
            return redis::cmd("PING")
                .query_async::<String>(conn)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string());
        }
        let granted: Result<Vec<u64>, _> = pipe.query_async(conn).await;
        match granted {
            Ok(granted) => {
                let mut total = 0;
                for ((principal, _, _, to_hold), g) in asked.iter().zip(granted) {
                    principal.bucket.lease.grant(g, *to_hold);
                    total += g;
                }
                self.status.granted.fetch_add(total, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                for (principal, charge, returned, _) in &asked {
                    principal.bucket.lease.recharge(*charge, *returned);
                }
                Err(e.to_string())
            }
        }
    }

    fn recovered(&mut self) {
        self.retry_at = None;
        if let Some(since) = self.failing_since.take() {
            self.status.fallback.store(false, Ordering::Relaxed);
            tracing::info!(
                redis = %self.address,
                failed_for_ms = since.elapsed().as_millis() as u64,
                "Redis reachable again: rate limits hold across the fleet again"
            );
        }
    }

    fn failed(&mut self, keys: &KeyStore, error: &str) {
        self.conn = None;
        // The first round after the outage tops up for one interval, not for the whole outage
        // (it leased a full bucket per busy key on every replica).
        self.last_round = None;
        self.retry_at = Some(Instant::now() + RETRY);
        self.status.errors.fetch_add(1, Ordering::Relaxed);
        for principal in keys.current().values() {
            principal.bucket.lease.fall_back();
        }
        if self.failing_since.is_none() {
            self.failing_since = Some(Instant::now());
            self.status.fallback.store(true, Ordering::Relaxed);
            tracing::warn!(
                redis = %self.address,
                error,
                "Redis unreachable: each replica now enforces rate limits with its own buckets \
                 (a key may get up to the number of replicas times its rate)"
            );
        }
    }
}

/// Adds one call of the script to `pipe`: `want` spans asked for, `charge` spans the local
/// bucket let through, `give` spans of the lease given back.
fn script_call(
    pipe: &mut redis::Pipeline,
    sha: &str,
    hash: &[u8; 32],
    rate: Rate,
    want: u64,
    charge: u64,
    give: u64,
) {
    pipe.cmd("EVALSHA")
        .arg(sha)
        .arg(1)
        .arg(format!("traceingest:rate:{}", hex(hash)))
        .arg(rate.per_second)
        .arg(rate.burst)
        .arg(want)
        .arg(charge)
        .arg(give);
}

#[cfg(test)]
#[path = "fleet_tests.rs"]
mod tests;
