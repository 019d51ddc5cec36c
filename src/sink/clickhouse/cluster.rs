//! Many ClickHouse endpoints and cluster mode: the nodes of `INGEST_CLICKHOUSE_URL` with their
//! health, the cluster's shards (from `system.clusters`), which shard a trace belongs to, the
//! tables as the cluster lays them out, and the span insert that routes rows to their shard.
//!
//! Why the client picks the shard (ARCHITECTURE.md has the long form): an insert goes straight
//! to one replica of the shard that owns its rows, as one block whose bytes depend only on the
//! rows, so a retry after a timeout, to the same replica or another one of that shard, is the
//! same block and `ReplicatedMergeTree` drops it by its hash (`insert_deduplicate`, on by
//! default; on 22.2 and later by the rows' dedup token instead, `dedup.rs`). Through the
//! `Distributed` table a node would parse, hash, split and re-send every row (a second hop and
//! a second encoding per row), and in 18.16's default asynchronous mode keep the split blocks
//! on its own disk until the shards take them: a node that dies holds rows nobody else can
//! send.
//!
//! Routing agrees with the `Distributed` table's sharding key, `sipHash64(trace_id)`: the same
//! hash (SipHash-2-4 with a zero key, as ClickHouse computes it; a test checks values the
//! server computed) modulo the shards' total weight, weights taken in shard order as the
//! `Distributed` engine does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clickhouse_rs::errors::{ConnectionError, DriverError, Error as ChError};
use clickhouse_rs::types::Query;
use clickhouse_rs::{ClientHandle, Options, Pool};

use super::block::{spans_block, Inserted, RowRun};
use super::errors::{InsertError, Retry, StoreError};
use super::health::{self, Health};
use super::schema::Table;
use super::version::ServerVersion;
use super::{dedup, Store};
use crate::clock::now_ms;
use crate::row::{col, RowBatch};

/// The `Distributed` table's sharding key; `shard_hash` is its Rust twin.
pub(super) const SHARDING_KEY: &str = "sipHash64(trace_id)";

/// Tables spread over the shards (by `SHARDING_KEY`): stored as `<name>_local` on each shard's
/// replicas, read through a `Distributed` table of the original name. Every other table of
/// `schema::TABLES` is replicated to every node of the cluster, so it reads the same anywhere.
const SHARDED: &[&str] = &["spans"];

/// ClickHouse's `sipHash64` of a string: SipHash-2-4, key (0, 0), over the bytes.
pub fn shard_hash(s: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher24::new_with_keys(0, 0);
    h.write(s);
    h.finish()
}

/// One ClickHouse server of `INGEST_CLICKHOUSE_URL`.
pub(super) struct Node {
    /// Connections are opened lazily by the first operation, on the caller's runtime.
    pub(super) pool: Pool,
    /// What the pool was made from, for a pool of long-running statements.
    options: Options,
    /// The only node: nothing else to rotate to, so leaving and rejoining the rotation is not
    /// logged (the operation's own error says what happened).
    pub(super) alone: bool,
    /// `tcp://host:port` without credentials, for messages.
    pub(super) address: String,
    /// Host (an IPv6 address without brackets) and port as given, to find the node in
    /// `system.clusters`.
    host: String,
    port: u16,
    /// In rotation or backing off (`health.rs`).
    health: Health,
    /// The server's release as `major << 32 | minor` (0: not read yet); read by the first
    /// insert on a connection to it, and again after it failed (it may be back as another
    /// release).
    version: AtomicU64,
}

impl Node {
    pub(super) fn new(options: Options, host: &str, port: u16) -> Node {
        Node {
            pool: Pool::new(options.clone()),
            options,
            alone: false,
            address: format!("tcp://{host}:{port}"),
            // `system.clusters` writes an IPv6 address without the brackets a URL needs.
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            health: Health::default(),
            version: AtomicU64::new(0),
        }
    }

    /// The node refused, did not answer, or failed an operation with a transient error: out
    /// of rotation for a back-off, after which the next operation that picks it is its probe.
    /// Logged when it leaves the rotation, not at every failed probe.
    fn failed(&self, why: &str) {
        let f = self.health.failed(now_ms());
        self.version.store(0, Ordering::Relaxed);
        if f.first && !self.alone {
            tracing::warn!(
                node = %self.address,
                error = why,
                "ClickHouse node out of rotation; it is probed again after a back-off \
                 (250 ms, doubling to 15 s while it keeps failing)"
            );
        }
    }

    /// An operation succeeded on the node: back in rotation if it was out.
    fn succeeded(&self) {
        if self.health.succeeded() && !self.alone {
            tracing::info!(node = %self.address, "ClickHouse node back in rotation");
        }
    }

    /// The server's release, read once per node (`SELECT version()`) on `c`, a connection
    /// to it. A version it cannot read is taken as the oldest supported: nothing is sent that
    /// an old server would refuse.
    async fn version(&self, c: &mut ClientHandle) -> Result<ServerVersion, ChError> {
        let known = self.version.load(Ordering::Relaxed);
        if known != 0 {
            return Ok(ServerVersion::new((known >> 32) as u32, known as u32));
        }
        let block = c.query("SELECT version() AS v").fetch_all().await?;
        let text: String = match block.rows().next() {
            Some(r) => r.get("v")?,
            None => String::new(),
        };
        let v = ServerVersion::parse(&text).unwrap_or_else(|| {
            tracing::warn!(node = %self.address, version = %text, "unreadable ClickHouse version");
            ServerVersion::OLDEST
        });
        self.version.store(
            u64::from(v.major) << 32 | u64::from(v.minor),
            Ordering::Relaxed,
        );
        Ok(v)
    }

    /// A connection from the pool, opened if need be. A failure to connect is one line that
    /// names ClickHouse, its address and the setting that gives it (`INGEST_CLICKHOUSE_URL`):
    /// it is what a user sees when ClickHouse is down or the URL is wrong. A failure takes the
    /// node out of rotation; a connection does not count as a success (the operation on it
    /// must succeed: a node may accept connections and fail every insert).
    async fn handle(&self) -> Result<ClientHandle, ChError> {
        let unreachable = |why: String| {
            ChError::Io(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                format!(
                    "cannot reach ClickHouse at {} (INGEST_CLICKHOUSE_URL): {why}",
                    self.address
                ),
            ))
        };
        let got = self.pool.get_handle().await.map_err(|e| match e {
            ChError::Io(e) => unreachable(e.to_string()),
            ChError::Connection(ConnectionError::IoError(e)) => unreachable(e.to_string()),
            ChError::Connection(e) => unreachable(e.to_string()),
            // Connected, but no native-protocol handshake came back: typically the HTTP port.
            ChError::Driver(DriverError::Timeout) => unreachable(format!(
                "connected, but no answer to the native-protocol handshake within {} s; is this \
                 ClickHouse's native port (9000 by default; 8123 is its HTTP port)?",
                super::CONNECT_TIMEOUT.as_secs()
            )),
            other => other,
        });
        if let Err(e) = &got {
            self.failed(&e.to_string());
        }
        got
    }
}

/// The nodes of `INGEST_CLICKHOUSE_URL`, in the order given.
pub(super) struct Nodes {
    pub(super) list: Vec<Node>,
}

impl Nodes {
    /// `candidates` in the order to try them: those in rotation first (from `start` on, so
    /// that callers can spread their load), then those out of it, soonest back first (when
    /// none is in rotation, one of them must be tried: that is the probe).
    pub(super) fn order(&self, candidates: &[usize], start: usize) -> Vec<usize> {
        let health: Vec<&Health> = candidates.iter().map(|&i| &self.list[i].health).collect();
        health::order(&health, start, now_ms())
            .into_iter()
            .map(|at| candidates[at])
            .collect()
    }

    /// A connection to the first node that answers, in list order (the nodes all hold the
    /// same keys, organisations and, through `Distributed` tables, spans). For these reads a
    /// connection whose handshake was answered is the node's probe: it counts as a success.
    pub(super) async fn any_handle(&self) -> Result<ClientHandle, ChError> {
        Ok(self.any_handle_indexed().await?.1)
    }

    /// `any_handle`, with the node's index in the list.
    pub(super) async fn any_handle_indexed(&self) -> Result<(usize, ClientHandle), ChError> {
        let all: Vec<usize> = (0..self.list.len()).collect();
        let mut last = None;
        for i in self.order(&all, 0) {
            match self.list[i].handle().await {
                Ok(h) => {
                    self.list[i].succeeded();
                    return Ok((i, h));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| ChError::Other("no ClickHouse node configured".into())))
    }

    /// A pool to the first node whose statements may run for hours, opened on first use.
    pub(super) fn long_running(&self) -> Pool {
        let day = Duration::from_secs(24 * 3600);
        Pool::new(
            self.list[0]
                .options
                .clone()
                .execute_timeout(Some(day))
                .query_timeout(day),
        )
    }

    /// The node of the list that `system.clusters` names so (host name or address, and port).
    fn position(&self, host_name: &str, host_address: &str, port: u16) -> Option<usize> {
        self.list
            .iter()
            .position(|n| n.port == port && (n.host == host_name || n.host == host_address))
    }

    /// A connection to node `i` of the list, opened if need be (a failure takes it out of
    /// rotation, as any operation's).
    pub(super) async fn handle_at(&self, i: usize) -> Result<ClientHandle, ChError> {
        self.list[i].handle().await
    }

    /// `tcp://host:port` of every node, comma-separated.
    pub(super) fn addresses(&self) -> String {
        let a: Vec<&str> = self.list.iter().map(|n| n.address.as_str()).collect();
        a.join(",")
    }
}

/// A cluster's shards as the ingest side uses them.
#[derive(Debug)]
pub(super) struct Topology {
    /// Per shard in `shard_num` order: the indexes of its replicas in `Nodes::list`.
    pub(super) shards: Vec<Vec<usize>>,
    /// `hash % slots.len()` -> shard index: each shard `weight` times, in shard order, as the
    /// `Distributed` engine's selector.
    slots: Vec<usize>,
    /// Per shard: where its next insert starts in its replica list (spreads the inserts).
    next: Vec<AtomicUsize>,
}

impl Topology {
    /// From `system.clusters` rows (shard_num, weight, host_name, host_address, port) and the
    /// nodes the service was given.
    fn new(rows: &[(u32, u32, String, String, u16)], nodes: &Nodes) -> Result<Topology, String> {
        let mut shard_nums: Vec<u32> = rows.iter().map(|r| r.0).collect();
        shard_nums.sort_unstable();
        shard_nums.dedup();
        if shard_nums.is_empty() {
            return Err("the cluster has no shards (is it in remote_servers?)".into());
        }
        let mut shards = Vec::with_capacity(shard_nums.len());
        let mut slots = Vec::new();
        for (i, &num) in shard_nums.iter().enumerate() {
            let mine: Vec<&(u32, u32, String, String, u16)> =
                rows.iter().filter(|r| r.0 == num).collect();
            let weight = mine[0].1;
            slots.extend(std::iter::repeat_n(i, weight as usize));
            let replicas: Vec<usize> = mine
                .iter()
                .filter_map(|r| nodes.position(&r.2, &r.3, r.4))
                .collect();
            if replicas.is_empty() {
                let listed: Vec<String> = mine.iter().map(|r| format!("{}:{}", r.2, r.4)).collect();
                return Err(format!(
                    "INGEST_CLICKHOUSE_URL names no replica of shard {num} ({}); give every node \
                     as remote_servers names it",
                    listed.join(", ")
                ));
            }
            shards.push(replicas);
        }
        if slots.is_empty() {
            return Err("every shard has weight 0".into());
        }
        let next = shards.iter().map(|_| AtomicUsize::new(0)).collect();
        Ok(Topology {
            shards,
            slots,
            next,
        })
    }

    /// The shard (index) a trace id's rows belong to.
    pub(super) fn shard_of(&self, trace_id: &[u8]) -> usize {
        self.slots[(shard_hash(trace_id) % self.slots.len() as u64) as usize]
    }
}

/// Which shards of an insert are written: kept by the flush thread while it retries the same
/// rows, so a retry sends only what is missing, and sends it as the same block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardsDone(u64);

impl ShardsDone {
    fn has(self, shard: usize) -> bool {
        shard < 64 && self.0 & (1 << shard) != 0
    }

    fn set(&mut self, shard: usize) {
        if shard < 64 {
            self.0 |= 1 << shard;
        }
    }
}

/// Whether a shard's failure of class `a` keeps more of the rows waiting than one of class
/// `b`: from waiting (`Later`), through retrying a few times, splitting without blame
/// (`Smaller`) and splitting to isolate bad rows, to giving them up (`Never`).
fn keeps_more(a: Retry, b: Retry) -> bool {
    let rank = |r: Retry| match r {
        Retry::Later => 0,
        Retry::AfterMigrate => 1,
        Retry::Unknown => 2,
        Retry::Smaller => 3,
        Retry::Split => 4,
        Retry::Never => 5,
    };
    rank(a) < rank(b)
}

/// Cuts runs of rows into per-shard runs, order kept: each shard's runs are its rows in the
/// order of `runs`, so the same runs always give the same blocks.
pub(super) fn route<'a>(runs: &[RowRun<'a>], topology: &Topology) -> Vec<Vec<RowRun<'a>>> {
    let mut out: Vec<Vec<RowRun<'a>>> = vec![Vec::new(); topology.shards.len()];
    // Per batch: the row after its last run, and where that row's trace id starts (a batch's
    // runs come in row order, so each batch's trace ids are read once).
    let mut cursors: HashMap<*const RowBatch, (usize, usize)> = HashMap::new();
    for run in runs {
        if run.rows.is_empty() {
            continue;
        }
        let batch = run.batch;
        let head = batch.head(col::trace_id);
        let (at_row, at) = cursors
            .get(&(batch as *const RowBatch))
            .copied()
            .unwrap_or((0, 0));
        let mut at = if at_row <= run.rows.start {
            batch
                .column_cut_from(col::trace_id, at_row, (at, 0), run.rows.start)
                .0
        } else {
            batch
                .column_cut_from(col::trace_id, 0, (0, 0), run.rows.start)
                .0
        };
        let mut previous: (&[u8], usize) = (&[], usize::MAX);
        let mut start = run.rows.start;
        let mut current = usize::MAX;
        for row in run.rows.clone() {
            let (len, used) = varint(&head[at..]);
            let id = &head[at + used..at + used + len];
            at += used + len;
            // A trace's rows are adjacent: hash each trace id once.
            let shard = if id == previous.0 {
                previous.1
            } else {
                topology.shard_of(id)
            };
            previous = (id, shard);
            if shard != current {
                if current != usize::MAX {
                    out[current].push(RowRun {
                        batch,
                        rows: start..row,
                    });
                }
                current = shard;
                start = row;
            }
        }
        out[current].push(RowRun {
            batch,
            rows: start..run.rows.end,
        });
        cursors.insert(batch as *const RowBatch, (run.rows.end, at));
    }
    out
}

/// A string's length prefix in a checked batch.
fn varint(bytes: &[u8]) -> (usize, usize) {
    let mut v = 0usize;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= usize::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return (v, i + 1);
        }
    }
    unreachable!("a checked batch holds whole varints")
}

/// `ENGINE = X(args) rest` -> `ENGINE = ReplicatedX('path', '{replica}', args) rest`.
pub(super) fn replicated(engine: &str, zk_path: &str) -> String {
    let rest = engine
        .strip_prefix("ENGINE = ")
        .expect("engines are written `ENGINE = Name(args) ...`");
    let open = rest.find('(').expect("an engine with parentheses");
    let (name, args) = (&rest[..open], &rest[open + 1..]);
    let sep = if args.starts_with(')') { "" } else { ", " };
    format!("ENGINE = Replicated{name}('{zk_path}', '{{replica}}'{sep}{args}")
}

/// Where a sharded table's replicas keep their part of it in ZooKeeper: one replica set per
/// shard. The other replicated tables have one replica set spanning every node.
const PER_SHARD_PATH: &str = "/clickhouse/tables/{shard}/";

/// How a table of `cluster_tables` is spread over the nodes, from its engine: which nodes hold
/// one copy between them, so that an `ALTER` on one of them reaches the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spread {
    /// `Distributed`: a table of its own on every node, which nothing replicates.
    EachNode,
    /// Replicated within each shard (`spans_local`).
    PerShard,
    /// One replica set spanning every node (`api_keys`, `orgs`).
    Everywhere,
}

pub(super) fn spread(engine: &str) -> Spread {
    if engine.starts_with("ENGINE = Distributed") {
        Spread::EachNode
    } else if engine.contains(PER_SHARD_PATH) {
        Spread::PerShard
    } else {
        Spread::Everywhere
    }
}

/// One node of the cluster as `system.clusters` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ClusterNode {
    pub shard: u32,
    /// `host:port` as the cluster names it, for messages.
    pub name: String,
    /// Its place in `INGEST_CLICKHOUSE_URL`; `None`: not there, so not reachable by the service.
    pub at: Option<usize>,
}

/// The tables as a cluster lays them out: (name, columns, engine), in the order to create
/// them (a `Distributed` table after the local table it reads).
pub(super) fn cluster_tables(
    tables: &[Table],
    database: &str,
    cluster: &str,
) -> Vec<Table<String>> {
    let mut out = Vec::with_capacity(tables.len() + SHARDED.len());
    for &(name, columns, engine) in tables {
        if SHARDED.contains(&name) {
            let local = local_name(name);
            let path = format!("{PER_SHARD_PATH}{database}/{local}");
            out.push((
                local,
                columns,
                replicated(engine, &path) + &dedup::spans_local_settings(),
            ));
            out.push((
                name,
                columns,
                format!(
                    "ENGINE = Distributed('{cluster}', '{database}', '{local}', {SHARDING_KEY})"
                ),
            ));
        } else {
            out.push((
                name,
                columns,
                replicated(engine, &format!("/clickhouse/tables/all/{database}/{name}")),
            ));
        }
    }
    out
}

/// `spans` -> `spans_local`.
pub(super) fn local_name(name: &str) -> &'static str {
    match name {
        "spans" => "spans_local",
        other => unreachable!("no local table name for {other}"),
    }
}

impl Store {
    /// Inserts the runs: in cluster mode routed by shard, skipping the shards in `done` and
    /// adding those written to it (`insert_sharded`); else one block to the first server in
    /// rotation (`insert_runs`).
    pub async fn insert_runs_resuming(
        &self,
        runs: &[RowRun<'_>],
        done: &mut ShardsDone,
    ) -> Result<Inserted, InsertError> {
        match &self.cluster {
            Some(cluster) => self.insert_sharded(cluster, runs, done).await,
            None => self.insert_runs(runs).await,
        }
    }

    /// The release of the first node that answers, in the order reads use (`SELECT
    /// version()`, kept per node like the one inserts read): for DDL that depends on it.
    pub async fn server_version(&self) -> Result<ServerVersion, StoreError> {
        let all: Vec<usize> = (0..self.nodes.list.len()).collect();
        let mut last = None;
        for i in self.nodes.order(&all, 0) {
            let node = &self.nodes.list[i];
            match node.handle().await {
                Ok(mut c) => {
                    let v = node.version(&mut c).await?;
                    node.succeeded();
                    return Ok(v);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last
            .map(StoreError::from)
            .unwrap_or_else(|| StoreError::new("no ClickHouse node configured")))
    }

    /// Every node of the cluster, as `system.clusters` lists them (every replica of every
    /// shard, in shard order), each with its place in `INGEST_CLICKHOUSE_URL` when it is there.
    /// Read afresh (not the kept `Topology`): a migration wants the cluster as it is now.
    pub(super) async fn cluster_nodes(
        &self,
        cluster: &str,
    ) -> Result<Vec<ClusterNode>, StoreError> {
        let block = self
            .fetch(format!(
                "SELECT shard_num, host_name, host_address, port FROM system.clusters \
                 WHERE cluster = {} ORDER BY shard_num, replica_num",
                super::sql_string(cluster)
            ))
            .await?;
        let mut out = Vec::with_capacity(block.row_count());
        for r in block.rows() {
            let (shard, name, address, port): (u32, String, String, u16) = (
                r.get("shard_num")?,
                r.get("host_name")?,
                r.get("host_address")?,
                r.get("port")?,
            );
            out.push(ClusterNode {
                shard,
                at: self.nodes.position(&name, &address, port),
                name: format!("{name}:{port}"),
            });
        }
        if out.is_empty() {
            return Err(StoreError::new(format!(
                "ClickHouse knows no cluster {cluster:?} (INGEST_CLICKHOUSE_CLUSTER); \
                 see remote_servers in its configuration"
            )));
        }
        Ok(out)
    }

    /// The cluster's shards, read from `system.clusters` once and kept.
    pub(super) async fn topology(&self, cluster: &str) -> Result<Arc<Topology>, StoreError> {
        if let Some(t) = self
            .topology
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(t);
        }
        let block = self
            .fetch(format!(
                "SELECT shard_num, shard_weight, host_name, host_address, port \
                 FROM system.clusters WHERE cluster = {} ORDER BY shard_num, replica_num",
                super::sql_string(cluster)
            ))
            .await?;
        let mut rows = Vec::with_capacity(block.row_count());
        for r in block.rows() {
            rows.push((
                r.get::<u32, _>("shard_num")?,
                r.get::<u32, _>("shard_weight")?,
                r.get::<String, _>("host_name")?,
                r.get::<String, _>("host_address")?,
                r.get::<u16, _>("port")?,
            ));
        }
        if rows.is_empty() {
            return Err(StoreError::new(format!(
                "ClickHouse knows no cluster {cluster:?} (INGEST_CLICKHOUSE_CLUSTER); \
                 see remote_servers in its configuration"
            )));
        }
        let t = Arc::new(Topology::new(&rows, &self.nodes).map_err(StoreError::new)?);
        tracing::info!(
            cluster,
            shards = t.shards.len(),
            nodes = self.nodes.list.len(),
            "cluster topology loaded"
        );
        *self.topology.lock().unwrap_or_else(|e| e.into_inner()) = Some(t.clone());
        Ok(t)
    }

    /// Cluster mode's span insert: the runs cut by shard, each shard's rows one block sent to
    /// one of its replicas (the next one after a refusal or a network failure: the same bytes,
    /// so a block the first one did write is dropped as a duplicate). The shards are written
    /// at the same time, so an insert takes as long as its slowest shard rather than the sum
    /// of them (on this thread's single-threaded runtime: one shard's block is encoded while
    /// the others' are in flight). Shards in `done` are skipped; each shard written is added
    /// to it, so the caller can retry just the rest.
    pub(super) async fn insert_sharded(
        &self,
        cluster: &str,
        runs: &[RowRun<'_>],
        done: &mut ShardsDone,
    ) -> Result<Inserted, InsertError> {
        let topology = self.topology(cluster).await.map_err(|e| InsertError {
            retry: Retry::Later,
            code: e.code,
            message: e.message,
        })?;
        let per_shard = route(&super::order::in_key_order(runs), &topology);
        let table = format!("`{}`.`{}`", self.database, local_name("spans"));
        let pending = per_shard.iter().enumerate().filter_map(|(shard, runs)| {
            let rows: usize = runs.iter().map(|r| r.rows.len()).sum();
            (rows > 0 && !done.has(shard)).then(|| {
                let (topology, table) = (&topology, &table);
                async move {
                    let sent = self.insert_shard(topology, table, shard, runs, rows).await;
                    (shard, rows, sent)
                }
            })
        });
        let results = futures_util::future::join_all(pending).await;
        let mut total = Inserted { rows: 0, bytes: 0 };
        // A shard with every replica down does not hold the others back: they are written,
        // and the error comes once every shard was tried. A shard's error is about its own
        // rows only, so the insert's is the one that keeps the most rows (`keeps_more`): a
        // shard that refused its rows for good must not have another shard's rows, which only
        // wait for that shard, dead-lettered with them. The flush thread retries the same
        // insert; once only refused shards are left, it splits or dead-letters their rows
        // alone (`State::narrow`).
        let mut failed: Option<InsertError> = None;
        for (shard, rows, sent) in results {
            match sent {
                Ok(bytes) => {
                    total.rows += rows;
                    total.bytes += bytes;
                    done.set(shard);
                }
                Err(e) => {
                    let e = match e.retry {
                        Retry::Later => InsertError {
                            message: format!("shard {}: every replica failed: {}", shard + 1, e),
                            ..e
                        },
                        _ => e,
                    };
                    if failed.as_ref().is_none_or(|f| keeps_more(e.retry, f.retry)) {
                        failed = Some(e);
                    }
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }

    /// Cluster mode, after an insert of `runs` failed with the shards in `done` written: the
    /// rows of `runs` whose shard is not in `done` (the others are stored), as runs of the same
    /// batches. `None` outside cluster mode, or before the topology was read (then no shard
    /// was written).
    pub fn rows_left<'a>(&self, runs: &[RowRun<'a>], done: ShardsDone) -> Option<Vec<RowRun<'a>>> {
        self.cluster.as_ref()?;
        let topology = self
            .topology
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        let per_shard = route(runs, &topology);
        Some(
            per_shard
                .into_iter()
                .enumerate()
                .filter(|(shard, _)| !done.has(*shard))
                .flat_map(|(_, runs)| runs)
                .collect(),
        )
    }

    /// One shard's block, to its replicas in turn from the next in its rotation until one
    /// writes it: its size; when none did, a transient error if one of them failed so (the
    /// rows wait for it), else the last replica's error (`Unknown`, `AfterMigrate` or
    /// `Smaller` if that is what it said); or the first error that is the rows' or the
    /// schema's fault (not retryable: another replica would say the same).
    async fn insert_shard(
        &self,
        topology: &Topology,
        table: &str,
        shard: usize,
        runs: &[RowRun<'_>],
        rows: usize,
    ) -> Result<usize, InsertError> {
        let replicas = &topology.shards[shard];
        let start = topology.next[shard].fetch_add(1, Ordering::Relaxed);
        let (mut last, mut transient) = (None, None);
        for i in self.nodes.order(replicas, start) {
            let node = &self.nodes.list[i];
            match self.insert_block_at(node, table, shard, runs, rows).await {
                Ok(bytes) => return Ok(bytes),
                Err(e) if e.retry == Retry::Later => {
                    node.failed(&e.message);
                    transient = Some(e);
                }
                // Maybe the node's trouble, maybe the rows': the next replica is tried (it says
                // the same if it is the rows), but the node is not taken out of rotation. A
                // missing table or column is this node's state too (its `CREATE ... ON
                // CLUSTER` has not run yet, or it has yet to apply an `ALTER` its peers have):
                // another replica of the shard may well take the block. So may a replica with
                // more memory to spare (`Smaller`).
                Err(e)
                    if matches!(
                        e.retry,
                        Retry::Unknown | Retry::AfterMigrate | Retry::Smaller
                    ) =>
                {
                    last = Some(e)
                }
                Err(e) => return Err(e),
            }
        }
        Err(transient.or(last).unwrap_or_else(|| InsertError {
            retry: Retry::Later,
            code: None,
            message: "no replica".into(),
        }))
    }

    /// One block of `runs` (of `shard`, whose spare buffers it uses) into `table` on `node`,
    /// with the dedup token of its rows where the server takes one (`dedup.rs`); returns its
    /// size. Only a written block counts as the node's success.
    async fn insert_block_at(
        &self,
        node: &Node,
        table: &str,
        shard: usize,
        runs: &[RowRun<'_>],
        rows: usize,
    ) -> Result<usize, InsertError> {
        let mut c = node.handle().await?;
        let version = node.version(&mut c).await?;
        let mut query = Query::new(table);
        for (name, value) in dedup::insert_settings(version, runs) {
            query = query.setting(name, value);
        }
        let (block, taken, bytes) = spans_block(runs, rows, self.take_spares(shard));
        let sent = c.insert(query, block).await;
        drop(c);
        self.give_spares(shard, taken, bytes);
        sent?;
        node.succeeded();
        Ok(bytes)
    }
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
