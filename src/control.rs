//! The control thread: keeps keys, plans and quota usage fresh and reloads the pricing file, off
//! the workers.
//!
//! It owns a small tokio runtime (ClickHouse queries are async) and runs these loops on it until
//! told to stop:
//!
//! - every `INGEST_KEY_REFRESH_MS` the `Refresher` loads organisations and keys, puts each
//!   organisation's plan in force and swaps a new key set in (each key keeps its rate-limit
//!   bucket), reading only what the two tables' parts say changed since the set in force was
//!   built: nothing, the keys written since, or every key; sooner when a worker met an unknown
//!   key and asked (`auth::refresh`), but at most once per `ON_DEMAND_GAP` however many asked,
//!   and an early load pushes the next periodic one back;
//! - every `INGEST_QUOTA_SYNC_MS` `sync_usage` re-counts this month's spans in ClickHouse for
//!   every organisation with a quota; at once, only those of an organisation that gets a
//!   quota or one with a quota seen for the first time;
//! - with `INGEST_PRICING_FILE`, every second (and at once on SIGHUP) the pricing file is
//!   checked and a new table swapped in when it changed;
//! - with `INGEST_REDIS_URL`, every `INGEST_REDIS_SYNC_MS` the `fleet::Leaser` tops up the
//!   keys' rate-limit leases from Redis, and at the stop gives back what they hold unspent.
//!
//! The loops run concurrently, so a slow count never delays a revocation, and a slow or
//! unreachable ClickHouse (a key load waits up to its query timeout) never delays a price
//! change. A failed load keeps what is in place and is logged once until it recovers.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::admission::plan::Plans;
use crate::admission::{Account, Accounts};
use crate::auth::refresh::{RefreshDemand, ON_DEMAND_GAP};
use crate::auth::{DigestHasher, KeyHash, KeySet, KeyStore, Principal};
use crate::calendar::Month;
use crate::clock;
use crate::fleet::Leaser;
use crate::server::Shared;
use crate::sink::clickhouse::{AdminLoad, AdminTables, CountStats, KeptCounts, KeyRows, Store};

/// Builds key sets and keeps one `Account` per organisation for the life of the process.
pub struct Refresher {
    plans: Plans,
    /// Every organisation seen since start, by id: the same `Account` (usage, counters) across
    /// refreshes.
    accounts: HashMap<Arc<str>, Arc<Account>>,
    /// The plan name each organisation's record gave at the last refresh (`None`: no record),
    /// to log changes once.
    recorded: HashMap<Arc<str>, Option<String>>,
    /// Organisations whose usage must be counted now: new ones with a quota (what they used
    /// this month before, in an earlier run or on another replica, is unknown until counted)
    /// and ones whose plan just brought a quota. Only they are counted, not every organisation.
    to_count: Vec<Arc<Account>>,
    /// The state of the key and organisation tables the set in force was built from (every
    /// row of its parts applied), and when every key was last read: a refresh that finds the
    /// same state keeps the set, one that finds new parts reads only those.
    built_from: Option<(AdminTables, Instant)>,
    /// Every key read so far, revoked ones too, with the newest version read: a row read from a
    /// new part changes the set only when it is at least as new.
    versions: HashMap<KeyHash, u64, BuildHasherDefault<DigestHasher>>,
}

/// How long the key set goes without a read of every key: past this a refresh reads them all,
/// whatever the tables' state says (a safeguard; the state is exact as far as known).
pub const REBUILD_AT_LEAST_EVERY: Duration = Duration::from_secs(600);

impl Refresher {
    pub fn new(plans: Plans) -> Refresher {
        Refresher {
            plans,
            accounts: HashMap::new(),
            recorded: HashMap::new(),
            to_count: Vec::new(),
            built_from: None,
            versions: HashMap::default(),
        }
    }

    /// Loads organisations and keys, puts each organisation's plan in force, and swaps a new
    /// key set into `keys`. What it reads of the keys depends on the tables' state against
    /// the one the set in force was built from (`Store::load_admin`): the same state keeps
    /// that set (ClickHouse looks at its parts, and reads no row); new parts of `api_keys`
    /// alone (keys created or revoked since) are read and applied to a copy of it; anything
    /// else, and a set `REBUILD_AT_LEAST_EVERY` old, reads every key (`FINAL`). Returns the
    /// number of keys.
    pub async fn refresh(
        &mut self,
        store: &Store,
        keys: &KeyStore,
        accounts: &Accounts,
    ) -> Result<usize, String> {
        let seen = self
            .built_from
            .as_ref()
            .filter(|(_, at)| at.elapsed() < REBUILD_AT_LEAST_EVERY)
            .map(|(tables, _)| tables);
        let began = Instant::now();
        let (tables, orgs, rows) = match store.load_admin(seen).await {
            Ok(AdminLoad::Unchanged) => {
                keys.confirm(clock::now_ms());
                return Ok(keys.len());
            }
            Ok(AdminLoad::Loaded { tables, orgs, keys }) => (tables, orgs, keys),
            Err(e) => return Err(e.to_string()),
        };
        let (read_all, rows) = match rows {
            KeyRows::All(rows) => (true, rows),
            KeyRows::Added(rows) => (false, rows),
        };
        let records: HashMap<String, String> =
            orgs.into_iter().map(|o| (o.org_id, o.plan)).collect();

        let known = self.accounts.len();
        let default = self.plans.default_plan();
        for org in records.keys().map(String::as_str).chain(
            rows.iter()
                .filter(|k| !k.revoked)
                .map(|k| k.org_id.as_str()),
        ) {
            if !self.accounts.contains_key(org) {
                let id: Arc<str> = org.into();
                let account = Arc::new(Account::new(id.clone(), default));
                // `set_plan` below asks for a count when the organisation's plan brings a
                // quota the default plan lacks; when the default plan has one, nothing changes
                // there, so ask here.
                if default.monthly_spans.is_some() {
                    self.to_count.push(account.clone());
                }
                self.accounts.insert(id, account);
            }
        }
        for (org, account) in &self.accounts {
            let record = records.get(&**org);
            let plan = match record {
                Some(name) => self.plans.get(name).unwrap_or(default),
                None => default,
            };
            if account.set_plan(plan) && !self.to_count.iter().any(|a| Arc::ptr_eq(a, account)) {
                self.to_count.push(account.clone());
            }
            let last = self.recorded.get(org);
            if last.map(Option::as_ref) != Some(record) {
                match record {
                    Some(name) if self.plans.get(name).is_none() => tracing::warn!(
                        org = %org,
                        plan = %name,
                        default = %default.name,
                        "organisation's plan is not configured (INGEST_PLANS); using the default plan"
                    ),
                    _ if last.is_none() => {
                        tracing::debug!(org = %org, plan = %plan.name, "organisation plan")
                    }
                    _ => tracing::info!(org = %org, plan = %plan.name, "organisation plan changed"),
                }
                self.recorded.insert(org.clone(), record.cloned());
            }
        }
        if self.accounts.len() != known {
            accounts.replace(self.accounts.values().cloned().collect());
        }

        if !read_all && rows.is_empty() {
            // Only organisations changed (their plans are in force above), or parts already
            // read were merged: the set stands.
            keys.confirm(clock::now_ms());
            self.built_from = self.built_from.take().map(|(_, at)| (tables, at));
            return Ok(keys.len());
        }
        let old = keys.current();
        let mut set = if read_all {
            self.versions.clear();
            KeySet::with_capacity_and_hasher(rows.len(), Default::default())
        } else {
            (*old).clone()
        };
        for k in rows {
            match self.versions.get_mut(&k.hash) {
                Some(v) if *v > k.version => continue,
                Some(v) => *v = k.version,
                None => {
                    self.versions.insert(k.hash, k.version);
                }
            }
            if k.revoked {
                set.remove(&k.hash);
                continue;
            }
            let account = self.accounts[k.org_id.as_str()].clone();
            let principal = match old.get(&k.hash) {
                // Unchanged: the same entry (no allocation, and none freed with the old set).
                Some(p) if Arc::ptr_eq(&p.account, &account) && *p.project_id == *k.project_id => {
                    p.clone()
                }
                // The key keeps its bucket: a refresh must not refill it.
                known => Arc::new(Principal {
                    org_id: account.org_id.clone(),
                    project_id: k.project_id.into(),
                    bucket: known.map(|p| p.bucket.clone()).unwrap_or_default(),
                    account,
                }),
            };
            set.insert(k.hash, principal);
        }
        let n = set.len();
        keys.replace(set, clock::now_ms(), read_all);
        let read_all_at = match &self.built_from {
            Some((_, at)) if !read_all => *at,
            _ => began,
        };
        self.built_from = Some((tables, read_all_at));
        Ok(n)
    }

    /// The organisations whose usage should be counted now (and forgets them): those of
    /// `to_count` that still have a quota once their plan is in force.
    pub fn take_to_count(&mut self) -> Vec<Arc<Account>> {
        let mut due = std::mem::take(&mut self.to_count);
        due.retain(|a| a.monthly_spans().is_some());
        due
    }
}

/// Re-counts this month's spans in ClickHouse for every organisation with a quota and merges
/// the counts into their usage (see `admission::quota`). Returns how many organisations.
pub async fn sync_usage(
    store: &Store,
    accounts: &[Arc<Account>],
    now_ms: u64,
) -> Result<usize, String> {
    let month = Month::of_ms(now_ms);
    let limited: Vec<&Arc<Account>> = accounts
        .iter()
        .filter(|a| a.monthly_spans().is_some())
        .collect();
    if limited.is_empty() {
        return Ok(0);
    }
    // Taken before the count starts: these rows are in ClickHouse, so in the count. Rows
    // flushed while it runs may be in it or not, and would count twice until the next sync
    // (a false `quota_exceeded` near the limit): an organisation that had any is counted
    // again, having taken them, up to `COUNTS` times; past that it stays over-counted until
    // the next sync, never under.
    let mut taken: Vec<u64> = limited.iter().map(|a| a.usage.begin_sync(month)).collect();
    let mut pending: Vec<usize> = (0..limited.len()).collect();
    for round in 1..=COUNTS {
        let ids: Vec<&str> = pending.iter().map(|&i| &*limited[i].org_id).collect();
        let counts = match store
            .count_spans_by_org(&ids, month.start_s(), month.end_s(), (now_ms / 1000) as i64)
            .await
        {
            Ok(counts) => counts.into_iter().collect::<HashMap<String, u64>>(),
            Err(e) => {
                for &i in &pending {
                    limited[i].usage.abort_sync(month, taken[i]);
                }
                return Err(e.to_string());
            }
        };
        pending.retain(|&i| {
            let a = &limited[i];
            if round < COUNTS && a.usage.flushed_since_sync(month) > 0 {
                taken[i] += a.usage.begin_sync(month);
                return true;
            }
            let stored = counts.get(&*a.org_id).copied().unwrap_or(0);
            a.usage.finish_sync(month, stored, taken[i]);
            false
        });
        if pending.is_empty() {
            break;
        }
    }
    Ok(limited.len())
}

/// How many times `sync_usage` counts an organisation whose rows were flushed while it counted.
const COUNTS: usize = 3;

/// Logs the first failure of a periodic job and its recovery, not every attempt.
struct Failing {
    what: &'static str,
    since: Option<Instant>,
}

impl Failing {
    fn new(what: &'static str) -> Failing {
        Failing { what, since: None }
    }

    fn ok(&mut self) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                failed_for_ms = since.elapsed().as_millis() as u64,
                "{} recovered",
                self.what
            );
        }
    }

    fn failed(&mut self, error: &str) {
        if self.since.is_none() {
            self.since = Some(Instant::now());
            tracing::warn!(error, "{} failed; keeping the current state", self.what);
        }
    }
}

/// The eventfd workers ring when they ask for an early key-set load, as the control thread's
/// runtime sees it.
struct Bell<'a> {
    demand: &'a RefreshDemand,
    /// `None` if the eventfd could not be made or registered (never seen in practice): then
    /// the loop looks at the requests every `ON_DEMAND_GAP` instead.
    fd: Option<AsyncFd<BorrowedFd<'a>>>,
}

impl<'a> Bell<'a> {
    /// Must be called on the runtime that will wait on it.
    fn new(demand: &'a RefreshDemand) -> Bell<'a> {
        let fd = demand.bell().and_then(|fd| {
            // SAFETY: the eventfd is owned by `demand` (in the `KeyStore` of the `Shared` this
            // thread holds an `Arc` of) and never closed or replaced while it lives; the borrow
            // ties this registration to it, and `fd` is dropped before it.
            unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                .map_err(std::io::Error::from)
        });
        if let Err(e) = &fd {
            tracing::warn!(error = %e, "no eventfd for early key refreshes; polling instead");
        }
        Bell {
            demand,
            fd: fd.ok(),
        }
    }

    /// Returns at `until`, or earlier once a worker rings.
    async fn wait(&mut self, until: tokio::time::Instant) {
        let Some(fd) = &self.fd else {
            let poll = tokio::time::Instant::now() + ON_DEMAND_GAP;
            tokio::time::sleep_until(until.min(poll)).await;
            return;
        };
        tokio::select! {
            _ = tokio::time::sleep_until(until) => {}
            ready = fd.readable() => {
                self.demand.silence();
                if let Ok(mut guard) = ready {
                    guard.clear_ready();
                }
            }
        }
    }
}

/// How often the pricing file's size, modification time and inode are looked at.
const PRICE_CHECK: Duration = Duration::from_secs(1);

/// A request to reload the pricing file now (SIGHUP), from the signal thread to the control
/// thread's price loop.
#[derive(Default)]
pub struct PriceReload {
    asked: AtomicBool,
    bell: tokio::sync::Notify,
}

impl PriceReload {
    /// Asks for a reload; the file is read even if it looks unchanged. Callable from any
    /// thread; a request made while the loop is busy is kept until it next waits.
    pub fn ask(&self) {
        self.asked.store(true, Ordering::Release);
        self.bell.notify_one();
    }
}

/// Starts the control thread. It opens its own connections to ClickHouse (a pool belongs to
/// the runtime that opened it); `counts` are the usage count's counts per part from the count
/// at start (`Store::take_kept_counts`), so its first count reads only what is new since.
pub fn spawn(
    mut refresher: Refresher,
    counts: KeptCounts,
    shared: Arc<Shared>,
    reload_prices: Arc<PriceReload>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            let config = &shared.config;
            let open = || {
                Store::new(&config.clickhouse_url, &config.clickhouse_database)?
                    .in_cluster(config.clickhouse_cluster.as_deref())
            };
            let stores = open().and_then(|a| Ok((a, open()?)));
            let (key_store, usage_store) = match stores {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "control thread cannot open ClickHouse");
                    return;
                }
            };
            usage_store.keep_counts(counts);
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "control thread cannot start its runtime");
                    return;
                }
            };
            // The key loop asks the usage loop to count these organisations now (new ones
            // with a quota, or ones that just got a quota).
            let count_now: RefCell<Vec<Arc<Account>>> = RefCell::new(Vec::new());
            let sync_asked = tokio::sync::Notify::new();
            let keys_loop = async {
                let demand = &shared.keys.demand;
                let mut bell = Bell::new(demand);
                let mut failing = Failing::new("key refresh");
                let mut last = Instant::now();
                let mut next = last;
                while !stop.load(Ordering::Acquire) {
                    // Wait for the periodic time, or for a worker's request once the gap since
                    // the last refresh has passed (and at least every second, to see `stop`).
                    let now = Instant::now();
                    let asked = demand.is_wanted() && next > now;
                    let due = if asked {
                        (last + ON_DEMAND_GAP).min(next)
                    } else {
                        next
                    };
                    if due > now {
                        let until = due.min(now + Duration::from_secs(1));
                        bell.wait(until.into()).await;
                        continue;
                    }
                    last = now;
                    next = now + config.key_refresh;
                    demand.begin(asked);
                    let result = refresher
                        .refresh(&key_store, &shared.keys, &shared.accounts)
                        .await;
                    demand.end();
                    match result {
                        Ok(_) => failing.ok(),
                        Err(e) => failing.failed(&e),
                    }
                    let due = refresher.take_to_count();
                    if !due.is_empty() {
                        count_now.borrow_mut().extend(due);
                        sync_asked.notify_one();
                    }
                }
            };
            // Its own loop, not a step of the key loop: a key load waiting on ClickHouse (up to
            // its query timeout) must not hold back a price change.
            let prices_loop = async {
                let Some(path) = &config.pricing_file else { return };
                while !stop.load(Ordering::Acquire) {
                    tokio::select! {
                        _ = tokio::time::sleep(PRICE_CHECK) => {}
                        _ = reload_prices.bell.notified() => {}
                    }
                    let result = if reload_prices.asked.swap(false, Ordering::AcqRel) {
                        shared.prices.reload_from(path).map(|_| true)
                    } else {
                        shared.prices.reload_if_changed(path)
                    };
                    match result {
                        Ok(true) => tracing::info!(file = %path.display(), "pricing file reloaded"),
                        Ok(false) => {}
                        Err(e) => tracing::error!(error = %e, "pricing file not reloaded; keeping the current table"),
                    }
                }
            };
            let usage_loop = async {
                let mut next = Instant::now() + config.quota_sync;
                // What the counts had read when last added to `/metrics`.
                let mut published = CountStats::default();
                let mut failing = Failing::new("quota usage sync");
                while !stop.load(Ordering::Acquire) {
                    let asked = std::mem::take(&mut *count_now.borrow_mut());
                    let counted = if Instant::now() >= next {
                        next = Instant::now() + config.quota_sync;
                        let accounts = shared.accounts.load();
                        Some(sync_usage(&usage_store, &accounts, shared.clock.now_ms()).await)
                    } else if !asked.is_empty() {
                        Some(sync_usage(&usage_store, &asked, shared.clock.now_ms()).await)
                    } else {
                        None
                    };
                    if counted.is_some() {
                        let now = usage_store.count_stats();
                        shared.metrics.add_usage(now.since(published));
                        published = now;
                    }
                    match counted {
                        Some(Ok(_)) => failing.ok(),
                        Some(Err(e)) => failing.failed(&e),
                        None => {}
                    }
                    // Until the next count or the key loop's ask, and at least every second to
                    // see `stop`: no timer ticks in between (each wake-up of an idle thread costs
                    // tens of microseconds of CPU on a virtual machine).
                    let until = next.min(Instant::now() + Duration::from_secs(1));
                    tokio::select! {
                        _ = tokio::time::sleep_until(until.into()) => {}
                        _ = sync_asked.notified() => {}
                    }
                }
            };
            let leases_loop = async {
                let Some(url) = &config.redis_url else { return };
                let mut leaser = match Leaser::new(url, config.redis_sync, shared.fleet.clone()) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!(error = %e, "fleet rate limits off");
                        return;
                    }
                };
                while !stop.load(Ordering::Acquire) {
                    leaser.round(&shared.keys).await;
                    // The interval, in steps of at most 100 ms that look at `stop`: the main
                    // thread waits for the give-back below only so long (with S at 1 s, a
                    // round, a whole sleep and the give-back's round trip took longer).
                    let next = Instant::now() + config.redis_sync;
                    while !stop.load(Ordering::Acquire) {
                        let left = next.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        tokio::time::sleep(left.min(Duration::from_millis(100))).await;
                    }
                }
                // `stop` is set once the workers are done: nothing spends the leases now.
                leaser.give_back(&shared.keys).await;
            };
            rt.block_on(async { tokio::join!(keys_loop, usage_loop, prices_loop, leases_loop) });
        })
}

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
