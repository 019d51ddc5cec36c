//! The only code that talks to ClickHouse. This file: the `Store` (a connection pool to one
//! server plus the database the service owns), its URL, and `from_row!`, which reads a result
//! row into a struct; the jobs are one file each.
//!
//! - `schema.rs`: the tables and `migrate`; `schema_rebuild.rs`: a `spans` of an older shape
//!   rebuilt.
//! - `block.rs`: the span insert (`insert_runs`) and its reused column buffers.
//! - `errors.rs`: `InsertError` and its `Retry` class, `StoreError`.
//! - `admin.rs`: keys, organisations and the monthly span counts.
//! - `reprice.rs`: reading stored spans' prices and writing corrected copies.
//! - `cluster.rs`: many endpoints and cluster mode (the shards, the tables as a cluster lays
//!   them out, the insert routed by shard); `cluster_columns.rs`: a column a release adds,
//!   given to a cluster's tables node by node; `health.rs`: a node's back-off and probe;
//!   `dedup.rs`: what makes a retried block a duplicate (window, token); `version.rs`: a
//!   server's release and what it supports.
//!
//! Everything here is async on tokio and is driven by the flush thread or the control thread
//! (or a CLI command), each from its own current-thread runtime. A `Store`'s pooled
//! connections belong to the runtime that opened them, so every thread builds its own `Store`;
//! `Store::new` does no I/O. A failed operation's connection is dropped, never returned to the
//! pool: the next operation opens a fresh one.

/// A struct read from a result row: each field from the column of its name, or from the column
/// named after `=`, e.g. `from_row!(row, OrgRecord { org_id, plan, created_at = "created" })`.
macro_rules! from_row {
    ($row:expr, $ty:ident { $($field:ident $(= $column:literal)?),* $(,)? }) => {
        $ty { $($field: $row.get(from_row!(@column $field $($column)?))?),* }
    };
    (@column $field:ident $column:literal) => {
        $column
    };
    (@column $field:ident) => {
        stringify!($field)
    };
}

mod admin;
mod admin_state;
#[cfg(test)]
mod admin_tests;
mod block;
mod cluster;
mod cluster_columns;
mod dedup;
mod errors;
mod health;
#[cfg(test)]
mod migrate_audit_tests;
#[cfg(test)]
mod migrate_tests;
mod order;
mod reprice;
mod schema;
mod schema_rebuild;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
mod usage;
mod version;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clickhouse_rs::errors::Error as ChError;
use clickhouse_rs::types::{Block, Complex};
use clickhouse_rs::{ClientHandle, Options, Pool};

use cluster::{Node, Nodes, Topology};

pub use admin::{
    revoke_target, ActiveKey, AdminLoad, KeptCounts, KeyRecord, KeyRow, KeyRows, OrgRecord, Revoked,
};
pub use admin_state::AdminTables;
pub use block::{Inserted, RowRun};
pub use cluster::{shard_hash, ShardsDone};
pub use errors::{InsertError, Retry, StoreError};
pub use reprice::{correction_version, Correction, SpanFilter, SpanKey, StoredSpan};
pub use schema::{Migrated, Unchecked, API_KEYS_COLUMNS, ORGS_COLUMNS};
pub use usage::CountStats;
pub use version::ServerVersion;

/// Connection pools to the ClickHouse servers plus the database the service owns.
pub struct Store {
    /// The servers of `INGEST_CLICKHOUSE_URL`, each with its pool and health.
    nodes: Nodes,
    /// `INGEST_CLICKHOUSE_CLUSTER`: cluster mode (`cluster.rs`) when set.
    cluster: Option<String>,
    /// `` ON CLUSTER `name` `` for `CREATE` and `DROP` in cluster mode, else empty (never for
    /// `ALTER`: `cluster_columns.rs` says why).
    on_cluster: String,
    /// The cluster's shards, read once (cluster mode).
    topology: Mutex<Option<Arc<Topology>>>,
    /// The column buffers of the last span insert, kept for the next (see `block.rs`): one
    /// set, or in cluster mode one per shard, as the shards of an insert are written at once.
    spares: Mutex<Vec<block::Spares>>,
    /// `tcp://host:port` of every node without credentials, for messages.
    address: String,
    /// The database name as given (validated: ASCII letters, digits, `_`).
    database: String,
    /// `` `db`.`spans` ``, ready for SQL.
    spans_table: String,
    /// `` `db`.`api_keys` ``, ready for SQL.
    keys_table: String,
    /// `` `db`.`orgs` ``, ready for SQL.
    orgs_table: String,
    /// The usage count's counts per part, kept between counts (`usage.rs`), and what the
    /// counts read so far.
    usage: Mutex<(usage::PartCounts, usage::CountStats)>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("address", &self.address)
            .field("database", &self.database)
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Checks the URL (`tcp://[user[:password]@]host[:port]`, optional `?compression=lz4`; or
    /// several, comma-separated) and the database name. Does no I/O; connections open on first
    /// use.
    pub fn new(url: &str, database: &str) -> Result<Store, StoreError> {
        if database.is_empty()
            || database.len() > 128
            || !database
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            return Err(StoreError::new(format!(
                "ClickHouse database name {database:?} must be 1 to 128 ASCII letters, digits or _"
            )));
        }
        let mut list = Vec::new();
        for one in url.split(',').map(str::trim) {
            let (options, host, port) = options_from_url(one)?;
            list.push(Node::new(options, &host, port));
        }
        if let [only] = list.as_mut_slice() {
            only.alone = true;
        }
        let nodes = Nodes { list };
        Ok(Store {
            address: nodes.addresses(),
            nodes,
            cluster: None,
            on_cluster: String::new(),
            topology: Mutex::default(),
            spares: Mutex::default(),
            database: database.to_string(),
            spans_table: format!("`{database}`.`spans`"),
            keys_table: format!("`{database}`.`api_keys`"),
            orgs_table: format!("`{database}`.`orgs`"),
            usage: Mutex::default(),
        })
    }

    /// Cluster mode (`INGEST_CLICKHOUSE_CLUSTER`): tables made `ON CLUSTER`, spans sharded
    /// by trace id into replicated tables. `None` leaves the single-server schema.
    pub fn in_cluster(mut self, cluster: Option<&str>) -> Result<Store, StoreError> {
        if let Some(name) = cluster {
            if name.is_empty()
                || name.len() > 128
                || !name
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.')
            {
                return Err(StoreError::new(format!(
                    "ClickHouse cluster name {name:?} must be 1 to 128 ASCII letters, digits, _, - or ."
                )));
            }
            self.on_cluster = format!(" ON CLUSTER `{name}`");
            self.cluster = Some(name.to_string());
        }
        Ok(self)
    }

    /// The tables are replicated (cluster mode): an insert retried with the same rows must be
    /// the same block, so that ClickHouse drops the copy.
    pub fn replicated(&self) -> bool {
        self.cluster.is_some()
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    /// `tcp://host:port` (comma-separated when several), without credentials.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// A connection from the pool of the first node in rotation that answers, opened if need
    /// be. A failure to connect names ClickHouse and its address: it is what a user sees when
    /// ClickHouse is down.
    async fn handle(&self) -> Result<ClientHandle, ChError> {
        self.nodes.any_handle().await
    }

    /// A pool to the first node whose statements may run for hours (a migration's copy, a
    /// re-pricing's insert), opened on first use.
    fn long_running(&self) -> Pool {
        self.nodes.long_running()
    }

    /// Runs a query and returns its whole result.
    async fn fetch(&self, sql: String) -> Result<Block<Complex>, ChError> {
        let mut c = self.handle().await?;
        c.query(sql).fetch_all().await
    }

    /// Inserts one block.
    async fn insert_block(&self, table: &str, block: Block) -> Result<(), ChError> {
        let mut c = self.handle().await?;
        c.insert(table, block).await
    }

    /// Health check: opens (or reuses) a connection and pings the server.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut c = self.handle().await?;
        c.ping().await?;
        Ok(())
    }
}

/// How long opening a connection (TCP and the native-protocol handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Checks one node's URL as `Store::new` reads it, opening nothing: `INGEST_CLICKHOUSE_URL`'s
/// check at start-up. The error shows the URL without its password.
pub fn check_url(url: &str) -> Result<(), StoreError> {
    options_from_url(url).map(drop)
}

/// Client options. Server settings, if ever needed, go through `Options::with_setting`: as URL
/// parameters they corrupt the protocol with 18.16.
/// Returns the options, host and port.
fn options_from_url(url: &str) -> Result<(Options, String, u16), StoreError> {
    // The URL as shown in messages: never its password.
    let shown = crate::config::redact_password(url);
    let bad = |why: &str| StoreError::new(format!("ClickHouse URL {shown:?}: {why}"));
    let parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if parsed.scheme() != "tcp" {
        return Err(bad(
            "scheme must be tcp:// (the native protocol, port 9000)",
        ));
    }
    let host = parsed.host_str().ok_or_else(|| bad("no host"))?;
    if !matches!(parsed.path(), "" | "/") {
        return Err(bad(
            "no path allowed; the database is configured separately",
        ));
    }
    let port = parsed.port().unwrap_or(9000);
    let addr = url::Url::parse(&format!("tcp://{host}:{port}")).map_err(|e| bad(&e.to_string()))?;
    let mut options = Options::new(addr)
        // One flush or control thread uses a Store at a time: one idle connection is enough.
        .pool_min(1)
        .pool_max(4)
        // A stale pooled connection is found by the ping and replaced once; anything longer is
        // the flush thread's backoff, which keeps accepting rows meanwhile.
        .ping_before_query(true)
        .send_retries(1)
        .retry_timeout(Duration::from_millis(100))
        .ping_timeout(Duration::from_secs(2))
        .connection_timeout(CONNECT_TIMEOUT)
        .query_timeout(Duration::from_secs(30))
        .insert_timeout(Some(dedup::INSERT_TIMEOUT))
        .execute_timeout(Some(Duration::from_secs(60)))
        // `ON CLUSTER` DDL waits for every node; a node that is down must not hold a
        // migration for 180 s (the server's default). The statement still reaches that node
        // when it is back, and the next migration finds the tables where it looks.
        .with_setting("distributed_ddl_task_timeout", 15_i64, true);
    if !parsed.username().is_empty() {
        options = options.username(&percent_decode(parsed.username()));
    }
    if let Some(password) = parsed.password() {
        options = options.password(&percent_decode(password));
    }
    for (key, value) in parsed.query_pairs() {
        match (&*key, &*value) {
            ("compression", "lz4") => options = options.with_compression(),
            ("compression", "none") => {}
            _ => return Err(bad(&format!("unsupported parameter {key}={value}"))),
        }
    }
    Ok((options, host.to_string(), port))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes[i] {
            b'%' => bytes
                .get(i + 1..i + 3)
                .and_then(crate::hex::decode_array::<1>),
            _ => None,
        };
        match escaped {
            Some([b]) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A ClickHouse string literal.
pub(crate) fn sql_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\\' || c == '\'' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn urls_and_names() {
        assert!(Store::new("tcp://127.0.0.1:9000", "ok_db_1").is_ok());
        assert!(Store::new("tcp://u:p%40ss@h?compression=lz4", "x").is_ok());
        let many = Store::new("tcp://a:9001, tcp://b", "x").unwrap();
        assert_eq!(many.address(), "tcp://a:9001,tcp://b:9000");
        assert!(many.in_cluster(Some("local")).unwrap().replicated());
        assert!(Store::new("tcp://a", "x")
            .unwrap()
            .in_cluster(Some("a b"))
            .is_err());
        assert!(Store::new("tcp://a,http://b", "x").is_err());
        for (url, db) in [
            ("http://127.0.0.1:8123", "x"),
            ("tcp://h/db", "x"),
            ("tcp://h?database=y", "x"),
            ("tcp://h", "bad-name"),
            ("tcp://h", ""),
            ("tcp://h", "a`b"),
        ] {
            assert!(Store::new(url, db).is_err(), "{url} {db}");
        }
        assert_eq!(percent_decode("p%40ss%zz"), "p@ss%zz");
        assert_eq!(sql_string("a'b\\c"), "'a\\'b\\\\c'");
    }
}
