//! The only code that talks to ClickHouse: schema and migration, span inserts, error classes, API
//! keys, organisations and their monthly span counts.
//!
//! Everything here is async on tokio and is driven by the flush thread or the control thread, each
//! from its own current-thread runtime. A [`Store`]'s pooled connections belong to the runtime
//! that opened them, so every thread builds its own `Store`; `Store::new` does no I/O.
//!
//! Invariants:
//! - The `spans` table is written in ONE native insert block per call. The workers already
//!   wrote every batch in the columns' native layout (`row.rs`), so building the block is
//!   appending each batch's column regions to reused buffers (once more copied by the client
//!   into its send buffer).
//! - The column list (`row::SPANS_COLUMNS`) is the single source of truth: the DDL, the
//!   migration check and the insert block are all generated from it, so they cannot disagree.
//! - Only types that ClickHouse 18.16 and current releases share: no DateTime64, Map,
//!   LowCardinality, CODEC, TTL.
//! - A failed operation's connection is dropped, never returned to the pool, and a panic of
//!   the client crate becomes an error (`Store::guard`), never the end of the calling thread.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clickhouse_rs::errors::{codes, Error as ChError};
use clickhouse_rs::types::column::EncodedColumn;
use clickhouse_rs::types::{Block, Complex, DateTimeType, SqlType};
use clickhouse_rs::{ClientHandle, Options, Pool};

pub use crate::row::SPANS_COLUMNS;
use crate::row::{Kind, RowBatch, Value, COLUMNS, KINDS, REGIONS};

/// Scale of every money column: `Decimal(18, 10)`, i.e. `Money` units of 1e-10 USD.
const MONEY_SCALE: u8 = 10;

static DECIMAL_18_10: SqlType = SqlType::Decimal(18, MONEY_SCALE);
static DATETIME: SqlType = SqlType::DateTime(DateTimeType::DateTime32);

/// A column kind's type for the client crate (checked against `Kind::sql_type` by a test, and
/// against the table by the client before it sends the block).
fn wire_type(kind: Kind) -> SqlType {
    match kind {
        Kind::Str => SqlType::String,
        Kind::U64 => SqlType::UInt64,
        Kind::OptU64 => SqlType::Nullable(&SqlType::UInt64),
        Kind::OptF64 => SqlType::Nullable(&SqlType::Float64),
        Kind::Money => SqlType::Nullable(&DECIMAL_18_10),
        Kind::Time => DATETIME.clone(),
        Kind::OptTime => SqlType::Nullable(&DATETIME),
        Kind::Ints => SqlType::Array(&SqlType::UInt64),
        Kind::MetaKeys | Kind::MetaValues => SqlType::Array(&SqlType::String),
    }
}

/// Builds the insert block from runs of rows: every batch already holds its rows in the
/// columns' native layout, so each run's regions are appended to the block's column buffers
/// whole (a few copies per batch, whatever its width). Only array end offsets are rewritten:
/// a batch counts them from its own first row, the block from its first. Returns the block,
/// the buffers it shares (to give back to `spares` once the insert is done) and the block's
/// size on the wire.
fn spans_block(
    runs: &[RowRun<'_>],
    rows: usize,
    spares: Vec<Vec<u8>>,
) -> (Block, Vec<Arc<Vec<u8>>>, usize) {
    let mut spares = spares.into_iter();
    let mut bufs: Vec<Vec<u8>> = (0..REGIONS)
        .map(|i| {
            let mut b = spares.next().unwrap_or_default();
            b.clear();
            // At most the runs' whole regions (a run may be part of a batch).
            b.reserve(runs.iter().map(|r| r.batch.region(i).len()).sum());
            b
        })
        .collect();
    // Array columns: elements in the block so far.
    let mut elems = [0u64; COLUMNS];
    for run in runs {
        let b = run.batch;
        let (from, to) = (b.cut(run.rows.start), b.cut(run.rows.end));
        for (c, kind) in KINDS.iter().enumerate() {
            let (h, t) = (2 * c, 2 * c + 1);
            let head = &b.head(c)[from[h]..to[h]];
            if kind.is_array() {
                let first = b.elems_before(c, run.rows.start) as u64;
                if first == elems[c] {
                    bufs[h].extend_from_slice(head);
                } else {
                    for o in head.chunks_exact(8) {
                        let o = u64::from_le_bytes(o.try_into().expect("8 bytes"));
                        bufs[h].extend_from_slice(&(o - first + elems[c]).to_le_bytes());
                    }
                }
                elems[c] += b.elems_before(c, run.rows.end) as u64 - first;
            } else {
                bufs[h].extend_from_slice(head);
            }
            bufs[t].extend_from_slice(&b.tail(c)[from[t]..to[t]]);
        }
    }
    let bytes = bufs.iter().map(Vec::len).sum();
    let mut taken = Vec::with_capacity(REGIONS);
    let mut bufs = bufs.into_iter();
    let mut block = Block::new();
    for (&(name, _), &kind) in SPANS_COLUMNS.iter().zip(KINDS) {
        let head = Arc::new(bufs.next().expect("a head per column"));
        let tail = Arc::new(bufs.next().expect("a tail per column"));
        taken.push(head.clone());
        taken.push(tail.clone());
        block = block.column(
            name,
            EncodedColumn {
                sql_type: wire_type(kind),
                rows,
                parts: vec![head, tail],
            },
        );
    }
    (block, taken, bytes)
}

/// A refused row as a JSON object with one key per `spans` column, for the dead-letter file:
/// strings as strings, money as an exact decimal string, times as epoch seconds, absent
/// values as `null`.
pub fn row_json(values: Vec<Value<'_>>) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::with_capacity(COLUMNS);
    for ((&(name, _), &kind), v) in SPANS_COLUMNS.iter().zip(KINDS).zip(values) {
        let v = match v {
            Value::Str(s) => serde_json::Value::from(s),
            Value::U64(n) => serde_json::Value::from(n),
            Value::I64(units) if kind == Kind::Money => {
                serde_json::Value::from(crate::pricing::format_money(units))
            }
            Value::I64(n) => serde_json::Value::from(n),
            Value::F64(f) => serde_json::Value::from(f),
            Value::U32(n) => serde_json::Value::from(n),
            Value::Null => serde_json::Value::Null,
            Value::Ints(v) => serde_json::Value::from(v),
            Value::Strs(v) => serde_json::Value::from(v),
        };
        m.insert(name.to_string(), v);
    }
    m
}

/// Engine of `spans`. ReplacingMergeTree keyed on (org, trace, start, span) makes a client's
/// retry of the same batch collapse to one row per span; `ingested_at` picks the newest copy.
/// The partition expression only uses functions 18.16 has.
const SPANS_ENGINE: &str = "ENGINE = ReplacingMergeTree(ingested_at) \
     PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, 1000))) \
     ORDER BY (org_id, trace_id, start_time_ms, span_id)";

/// `api_keys` columns in table order. Revoking inserts a new version of the row (higher
/// `version`, `revoked_at` set); readers use `FINAL`. `version` is epoch microseconds, bumped
/// past the previous version, so a revoke in the same second as the create still wins.
pub const API_KEYS_COLUMNS: &[(&str, &str)] = &[
    ("key_hash", "String"),
    ("display_prefix", "String"),
    ("org_id", "String"),
    ("project_id", "String"),
    ("created_at", "DateTime"),
    ("revoked_at", "Nullable(DateTime)"),
    ("updated_at", "DateTime"),
    ("version", "UInt64"),
];

const API_KEYS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) ORDER BY key_hash";

/// `orgs` columns in table order: each organisation's plan. Changing the plan inserts a new
/// version of the row; readers use `FINAL`. An organisation without a row is on the default plan.
pub const ORGS_COLUMNS: &[(&str, &str)] = &[
    ("org_id", "String"),
    ("plan", "String"),
    ("created_at", "DateTime"),
    ("updated_at", "DateTime"),
    ("version", "UInt64"),
];

const ORGS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) ORDER BY org_id";

/// Most organisations named in one usage count, to keep the query text small.
const COUNT_ORGS_PER_QUERY: usize = 1000;

#[inline]
fn utc(epoch_seconds: u32) -> DateTime<Tz> {
    DateTime::<Utc>::from_timestamp(i64::from(epoch_seconds), 0)
        .unwrap_or_default()
        .with_timezone(&Tz::UTC)
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// What the flush thread should do with rows whose insert failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Transient (network, timeouts, server overloaded): keep the rows, back off, retry.
    Later,
    /// The table or a column is missing: run `migrate`, then retry.
    AfterMigrate,
    /// Refused because of some rows' values: split the insert to isolate the bad rows.
    Split,
    /// Refused whatever the rows (schema mismatch, client-side error): retrying cannot succeed.
    Never,
    /// The server refused with a code this build does not know: retried like `Later`, but only
    /// a few times on the same rows (the flush thread's cap), then split like `Split`, so an
    /// unknown data error ends in the dead-letter file instead of being retried forever.
    Unknown,
}

/// A failed span insert, classified from the ClickHouse server error code when there is one.
#[derive(Debug, Clone)]
pub struct InsertError {
    pub retry: Retry,
    /// ClickHouse server error code, when the server answered with an exception.
    pub code: Option<u32>,
    pub message: String,
}

impl InsertError {
    #[cold]
    fn from_clickhouse(err: &ChError) -> InsertError {
        let (retry, code) = classify(err);
        InsertError {
            retry,
            code,
            message: err.to_string(),
        }
    }

    /// An insert that did not finish before a caller's deadline.
    #[cold]
    pub fn timed_out() -> InsertError {
        InsertError {
            retry: Retry::Later,
            code: None,
            message: "insert did not finish before the deadline".to_string(),
        }
    }
}

impl From<ChError> for InsertError {
    fn from(err: ChError) -> InsertError {
        InsertError::from_clickhouse(&err)
    }
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InsertError {}

/// Any other storage failure: bad configuration, ClickHouse unreachable or refusing a query.
#[derive(Debug, Clone)]
pub struct StoreError {
    /// ClickHouse server error code, when the server answered with an exception.
    pub code: Option<u32>,
    pub message: String,
}

impl StoreError {
    #[cold]
    fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            code: None,
            message: message.into(),
        }
    }
}

impl From<ChError> for StoreError {
    #[cold]
    fn from(err: ChError) -> StoreError {
        StoreError {
            code: server_code(&err),
            message: err.to_string(),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

fn server_code(err: &ChError) -> Option<u32> {
    match err {
        ChError::Server(e) => Some(e.code),
        _ => None,
    }
}

/// Decides what to do after a failed insert.
///
/// Errors that are nobody's rows' fault keep the rows (they wait in memory, then in the spool,
/// and past both ingest answers `503`, which is visible and loses nothing); only errors that name
/// the data split the insert; only errors that no retry can cure give up (to the dead-letter
/// file). An unknown server code is `Unknown`: retried a few times, then split.
fn classify(err: &ChError) -> (Retry, Option<u32>) {
    let e = match err {
        // Network, protocol desync, timeouts: a fresh connection may well succeed.
        ChError::Io(_) | ChError::Connection(_) | ChError::Driver(_) => {
            return (Retry::Later, None)
        }
        // The client refused the block before sending it (its types do not cast to the
        // table's), a bad URL, or a local misuse: the same block can never succeed.
        ChError::FromSql(_) | ChError::Url(_) | ChError::Other(_) => return (Retry::Never, None),
        ChError::Server(e) => e,
    };
    let retry = match e.code {
        codes::UNKNOWN_TABLE | codes::UNKNOWN_DATABASE | codes::NO_SUCH_COLUMN_IN_TABLE => {
            Retry::AfterMigrate
        }
        // Current releases refuse one block spanning more than `max_partitions_per_insert_block`
        // months with the same code as "too many parts": smaller inserts do succeed.
        codes::TOO_MANY_PARTS if e.message.contains("partitions for single INSERT") => Retry::Split,
        codes::CANNOT_PARSE_TEXT
        | codes::CANNOT_PARSE_INPUT_ASSERTION_FAILED
        | codes::CANNOT_PARSE_DATE
        | codes::CANNOT_PARSE_DATETIME
        | codes::CANNOT_PARSE_NUMBER
        | codes::ARGUMENT_OUT_OF_BOUND
        | codes::CANNOT_CONVERT_TYPE
        | codes::INCORRECT_DATA
        | codes::TOO_LARGE_ARRAY_SIZE
        | codes::TOO_LARGE_STRING_SIZE
        | codes::SIZES_OF_ARRAYS_DOESNT_MATCH
        | codes::VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
        | codes::DECIMAL_OVERFLOW
        | FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
        | VIOLATED_CONSTRAINT => Retry::Split,
        codes::UNSUPPORTED_METHOD
        | codes::INCORRECT_NUMBER_OF_COLUMNS
        | codes::THERE_IS_NO_COLUMN
        | codes::NOT_FOUND_COLUMN_IN_BLOCK
        | codes::NUMBER_OF_COLUMNS_DOESNT_MATCH
        | codes::ILLEGAL_COLUMN
        | codes::UNKNOWN_IDENTIFIER
        | codes::NOT_IMPLEMENTED
        | codes::LOGICAL_ERROR
        | codes::UNKNOWN_TYPE
        | codes::TYPE_MISMATCH
        | codes::SYNTAX_ERROR
        | codes::DUPLICATE_COLUMN
        | ILLEGAL_TYPE_OF_ARGUMENT => Retry::Never,
        // The server is busy, short of something, or unreachable behind it: nobody's rows'
        // fault, so these are retried for as long as it takes (the rows wait in the spool).
        codes::TIMEOUT_EXCEEDED
        | codes::TOO_SLOW
        | codes::READONLY
        | codes::CANNOT_ALLOCATE_MEMORY
        | codes::UNKNOWN_USER
        | codes::WRONG_PASSWORD
        | codes::REQUIRED_PASSWORD
        | codes::TOO_MANY_SIMULTANEOUS_QUERIES
        | codes::NO_FREE_CONNECTION
        | codes::SOCKET_TIMEOUT
        | codes::NETWORK_ERROR
        | codes::TABLE_IS_DROPPED
        | codes::ABORTED
        | codes::MEMORY_LIMIT_EXCEEDED
        | codes::TABLE_IS_READ_ONLY
        | codes::NOT_ENOUGH_SPACE
        | codes::TOO_MANY_PARTS
        | codes::ALL_CONNECTION_TRIES_FAILED
        | codes::REPLICA_IS_NOT_IN_QUORUM
        | codes::ALL_REPLICAS_ARE_STALE
        | codes::QUERY_WAS_CANCELLED
        | codes::ALL_REPLICAS_LOST
        | codes::KEEPER_EXCEPTION
        | AUTHENTICATION_FAILED => Retry::Later,
        // Anything else: maybe transient, maybe the data; retried a few times, then split.
        _ => Retry::Unknown,
    };
    (retry, Some(e.code))
}

/// Codes the client crate does not name.
const ILLEGAL_TYPE_OF_ARGUMENT: u32 = 43;
const FUNCTION_THROW_IF_VALUE_IS_NON_ZERO: u32 = 395;
const VIOLATED_CONSTRAINT: u32 = 469;
const AUTHENTICATION_FAILED: u32 = 516;

// ---------------------------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------------------------

/// Rows of one batch that go into an insert together: whole batches normally, parts of one
/// while the flush thread is isolating a bad row.
#[derive(Debug, Clone)]
pub struct RowRun<'a> {
    pub batch: &'a RowBatch,
    /// A range of the batch's rows.
    pub rows: Range<usize>,
}

/// What one successful insert wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inserted {
    pub rows: usize,
    /// Approximate uncompressed size of the data sent.
    pub bytes: usize,
}

/// An API key as stored: never the key itself, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Lowercase hex SHA-256 of the whole key (64 characters).
    pub key_hash: String,
    /// First 12 characters of the key: what `list` shows and `revoke` takes.
    pub display_prefix: String,
    pub org_id: String,
    /// Empty when the key is not tied to a project.
    pub project_id: String,
    /// Epoch seconds.
    pub created_at: u32,
    /// Epoch seconds; `None` while the key is active.
    pub revoked_at: Option<u32>,
}

/// What the authenticator needs about one active key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveKey {
    pub hash: [u8; 32],
    pub org_id: String,
    pub project_id: String,
}

/// An organisation as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgRecord {
    pub org_id: String,
    /// A plan name; checked against the configured plans when written, not when read.
    pub plan: String,
    /// Epoch seconds.
    pub created_at: u32,
    /// Epoch seconds of the last plan change.
    pub updated_at: u32,
}

/// A connection pool to one ClickHouse server plus the database the service owns.
pub struct Store {
    /// Connections are opened lazily by the first operation, on the caller's runtime. Replaced
    /// whole after the client crate panicked (see `guard`).
    pool: Mutex<Pool>,
    /// The column buffers of the last span insert, kept for the next (see `spans_block`).
    spares: Mutex<Spares>,
    /// What the pool was made from, to make a new one.
    options: Options,
    /// The database name as given (validated: ASCII letters, digits, `_`).
    database: String,
    /// `` `db`.`spans` ``, ready for SQL.
    spans_table: String,
    /// `` `db`.`api_keys` ``, ready for SQL.
    keys_table: String,
    /// `` `db`.`orgs` ``, ready for SQL.
    orgs_table: String,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("database", &self.database)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Checks the URL (`tcp://[user[:password]@]host[:port]`, optional `?compression=lz4`) and
    /// the database name. Does no I/O; connections open on first use.
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
        let options = options_from_url(url)?;
        Ok(Store {
            pool: Mutex::new(Pool::new(options.clone())),
            spares: Mutex::new(Spares::default()),
            options,
            database: database.to_string(),
            spans_table: format!("`{database}`.`spans`"),
            keys_table: format!("`{database}`.`api_keys`"),
            orgs_table: format!("`{database}`.`orgs`"),
        })
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    async fn handle(&self) -> Result<ClientHandle, ChError> {
        let pending = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_handle();
        pending.await
    }

    /// Runs one operation of the client crate, turning a panic inside it into a lost
    /// connection.
    ///
    /// clickhouse-rs 1.1.0-alpha.1 panics (`inner.take().unwrap()`) when the server closed a
    /// pooled connection between the client's ping and its query (a ClickHouse restart, a
    /// proxy dropping connections). That must not end the flush or the control thread: the
    /// panic becomes an I/O error, retried like any other, and the pool is replaced in case the
    /// lost handle kept one of its slots.
    async fn guard<T, E: From<ChError>>(
        &self,
        op: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        match CatchUnwind(Box::pin(op)).await {
            Ok(result) => result,
            Err(why) => {
                *self.pool.lock().unwrap_or_else(PoisonError::into_inner) =
                    Pool::new(self.options.clone());
                tracing::error!(error = %why, "the ClickHouse client panicked; reconnecting");
                Err(E::from(ChError::Io(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    format!("the ClickHouse client panicked: {why}"),
                ))))
            }
        }
    }

    /// Runs a query and returns its whole result.
    async fn fetch(&self, sql: String) -> Result<Block<Complex>, ChError> {
        self.guard(async {
            let mut c = self.handle().await?;
            c.query(sql).fetch_all().await
        })
        .await
    }

    /// Inserts one block.
    async fn insert_block(&self, table: &str, block: Block) -> Result<(), ChError> {
        self.guard(async {
            let mut c = self.handle().await?;
            c.insert(table, block).await
        })
        .await
    }

    /// Health check: opens (or reuses) a connection and pings the server.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.guard(async {
            let mut c = self.handle().await?;
            c.ping().await?;
            Ok(())
        })
        .await
    }

    /// Creates the database and tables if missing, and adds columns a table created by an
    /// older release lacks. Idempotent. Fails if an existing column has an unexpected type.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.guard(self.migrate_on_one_connection()).await
    }

    async fn migrate_on_one_connection(&self) -> Result<(), StoreError> {
        let mut c = self.handle().await?;
        c.execute(format!("CREATE DATABASE IF NOT EXISTS `{}`", self.database))
            .await?;
        c.execute(create_table_sql(
            &self.spans_table,
            SPANS_COLUMNS,
            SPANS_ENGINE,
        ))
        .await?;
        c.execute(create_table_sql(
            &self.keys_table,
            API_KEYS_COLUMNS,
            API_KEYS_ENGINE,
        ))
        .await?;
        c.execute(create_table_sql(
            &self.orgs_table,
            ORGS_COLUMNS,
            ORGS_ENGINE,
        ))
        .await?;
        self.add_missing_columns(&mut c, "spans", SPANS_COLUMNS)
            .await?;
        self.add_missing_columns(&mut c, "api_keys", API_KEYS_COLUMNS)
            .await?;
        self.add_missing_columns(&mut c, "orgs", ORGS_COLUMNS)
            .await?;
        Ok(())
    }

    async fn add_missing_columns(
        &self,
        c: &mut ClientHandle,
        table: &str,
        expected: &[(&str, &str)],
    ) -> Result<(), StoreError> {
        let block = c
            .query(format!(
                "SELECT name, type FROM system.columns WHERE database = '{}' AND table = '{table}'",
                self.database
            ))
            .fetch_all()
            .await?;
        let mut existing = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let name: String = row.get("name")?;
            let ty: String = row.get("type")?;
            existing.push((name, ty));
        }
        let mut previous: Option<&str> = None;
        for &(name, ty) in expected {
            match existing.iter().find(|(n, _)| n == name) {
                Some((_, found)) if same_type(found, ty) => {}
                Some((_, found)) => {
                    return Err(StoreError::new(format!(
                        "column {}.{table}.{name} has type {found}, expected {ty}; \
                         fix the table by hand (the service never changes a column's type)",
                        self.database
                    )))
                }
                None => {
                    let after = previous
                        .map(|p| format!(" AFTER `{p}`"))
                        .unwrap_or_default();
                    c.execute(format!(
                        "ALTER TABLE `{}`.`{table}` ADD COLUMN `{name}` {ty}{after}",
                        self.database
                    ))
                    .await?;
                    tracing::info!(
                        database = %self.database,
                        table,
                        column = name,
                        "added missing column"
                    );
                }
            }
            previous = Some(name);
        }
        Ok(())
    }

    /// Inserts every row of every batch in one insert.
    pub async fn insert_spans(&self, batches: &[RowBatch]) -> Result<(), InsertError> {
        let runs: Vec<RowRun<'_>> = batches
            .iter()
            .map(|batch| RowRun {
                batch,
                rows: 0..batch.len(),
            })
            .collect();
        self.insert_runs(&runs).await.map(|_| ())
    }

    /// Inserts the given runs of rows in one insert block.
    pub async fn insert_runs(&self, runs: &[RowRun<'_>]) -> Result<Inserted, InsertError> {
        let rows: usize = runs.iter().map(|r| r.rows.len()).sum();
        if rows == 0 {
            return Ok(Inserted { rows: 0, bytes: 0 });
        }
        self.guard(async {
            // Connect first: while ClickHouse is down, retries cost no block building.
            let mut c = self.handle().await?;
            let spares = std::mem::take(
                &mut self
                    .spares
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .buffers,
            );
            let (block, taken, bytes) = spans_block(runs, rows, spares);
            let sent = c.insert(self.spans_table.as_str(), block).await;
            // On error the handle is dropped here and its connection discarded, not pooled.
            drop(c);
            self.spares
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .reclaim(taken, bytes);
            sent?;
            Ok(Inserted { rows, bytes })
        })
        .await
    }

    /// Stores a new key (or a new version of one).
    pub async fn insert_key(&self, key: &KeyRecord) -> Result<(), StoreError> {
        if decode_hash(&key.key_hash).is_none() {
            return Err(StoreError::new("key hash must be 64 hex characters"));
        }
        if key.display_prefix.is_empty() || key.org_id.is_empty() {
            return Err(StoreError::new(
                "a key needs a display prefix and an org id",
            ));
        }
        self.write_keys(&[(key.clone(), now_version())]).await
    }

    /// Every key, active or revoked, oldest first.
    pub async fn list_keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
        let mut keys: Vec<KeyRecord> = self
            .read_keys("")
            .await?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        keys.sort_by(|a, b| {
            (a.created_at, &a.display_prefix).cmp(&(b.created_at, &b.display_prefix))
        });
        Ok(keys)
    }

    /// Revokes every active key with this display prefix; returns how many (0 if none).
    pub async fn revoke_key(&self, display_prefix: &str) -> Result<usize, StoreError> {
        // Filtering on `display_prefix` before FINAL is safe: all versions of a key share it.
        let filter = format!(" WHERE display_prefix = {}", sql_string(display_prefix));
        let now = now_seconds();
        let revoked: Vec<(KeyRecord, u64)> = self
            .read_keys(&filter)
            .await?
            .into_iter()
            .filter(|(k, _)| k.revoked_at.is_none())
            .map(|(mut k, version)| {
                k.revoked_at = Some(now);
                (k, now_version().max(version + 1))
            })
            .collect();
        if !revoked.is_empty() {
            self.write_keys(&revoked).await?;
        }
        Ok(revoked.len())
    }

    /// Hashes and owners of every key that is not revoked, for the in-memory key set.
    /// A row whose hash is not 64 hex characters is skipped with a warning.
    pub async fn load_active_keys(&self) -> Result<Vec<ActiveKey>, StoreError> {
        let keys = self.read_keys("").await?;
        let mut active = Vec::with_capacity(keys.len());
        for (k, _) in keys {
            if k.revoked_at.is_some() {
                continue;
            }
            match decode_hash(&k.key_hash) {
                Some(hash) => active.push(ActiveKey {
                    hash,
                    org_id: k.org_id,
                    project_id: k.project_id,
                }),
                None => tracing::warn!(
                    display_prefix = %k.display_prefix,
                    "skipping API key with a malformed hash"
                ),
            }
        }
        Ok(active)
    }

    /// Latest version of each key (FINAL), with that version. The revoked filter is applied by
    /// the caller, after FINAL: old servers may move a WHERE on a non-key column before it.
    async fn read_keys(&self, filter: &str) -> Result<Vec<(KeyRecord, u64)>, StoreError> {
        let block = self
            .fetch(format!(
                "SELECT key_hash, display_prefix, org_id, project_id, \
                 toUInt32(created_at) AS created, toUInt32(revoked_at) AS revoked, version \
                 FROM {} FINAL{filter}",
                self.keys_table
            ))
            .await?;
        let mut keys = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let key = KeyRecord {
                key_hash: row.get("key_hash")?,
                display_prefix: row.get("display_prefix")?,
                org_id: row.get("org_id")?,
                project_id: row.get("project_id")?,
                created_at: row.get("created")?,
                revoked_at: row.get("revoked")?,
            };
            keys.push((key, row.get("version")?));
        }
        Ok(keys)
    }

    async fn write_keys(&self, keys: &[(KeyRecord, u64)]) -> Result<(), StoreError> {
        let now = utc(now_seconds());
        let strings =
            |f: fn(&KeyRecord) -> &str| -> Vec<&str> { keys.iter().map(|(k, _)| f(k)).collect() };
        let block = Block::new()
            .column("key_hash", strings(|k| &k.key_hash))
            .column("display_prefix", strings(|k| &k.display_prefix))
            .column("org_id", strings(|k| &k.org_id))
            .column("project_id", strings(|k| &k.project_id))
            .column(
                "created_at",
                keys.iter()
                    .map(|(k, _)| utc(k.created_at))
                    .collect::<Vec<_>>(),
            )
            .column(
                "revoked_at",
                keys.iter()
                    .map(|(k, _)| k.revoked_at.map(utc))
                    .collect::<Vec<_>>(),
            )
            .column("updated_at", vec![now; keys.len()])
            .column(
                "version",
                keys.iter().map(|&(_, v)| v).collect::<Vec<u64>>(),
            );
        self.insert_block(&self.keys_table, block).await?;
        Ok(())
    }
}

impl Store {
    /// Every organisation with a record (latest version), by id.
    pub async fn list_orgs(&self) -> Result<Vec<OrgRecord>, StoreError> {
        let mut orgs: Vec<OrgRecord> = self
            .read_orgs("")
            .await?
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        orgs.sort_by(|a, b| a.org_id.cmp(&b.org_id));
        Ok(orgs)
    }

    /// One organisation's record, if it has one.
    pub async fn get_org(&self, org_id: &str) -> Result<Option<OrgRecord>, StoreError> {
        let filter = format!(" WHERE org_id = {}", sql_string(org_id));
        Ok(self
            .read_orgs(&filter)
            .await?
            .into_iter()
            .next()
            .map(|(o, _)| o))
    }

    /// Creates the organisation's record, or replaces its plan. `created_at` is kept from the
    /// existing record; the new version is newer than any before.
    pub async fn put_org(&self, org_id: &str, plan: &str) -> Result<(), StoreError> {
        if org_id.is_empty() || plan.is_empty() {
            return Err(StoreError::new("an organisation needs an id and a plan"));
        }
        let filter = format!(" WHERE org_id = {}", sql_string(org_id));
        let previous = self.read_orgs(&filter).await?.into_iter().next();
        let now = now_seconds();
        let (created_at, version) = match previous {
            Some((o, v)) => (o.created_at, now_version().max(v + 1)),
            None => (now, now_version()),
        };
        let block = Block::new()
            .column("org_id", vec![org_id])
            .column("plan", vec![plan])
            .column("created_at", vec![utc(created_at)])
            .column("updated_at", vec![utc(now)])
            .column("version", vec![version]);
        self.insert_block(&self.orgs_table, block).await?;
        Ok(())
    }

    /// Latest version of each organisation (FINAL), with that version.
    async fn read_orgs(&self, filter: &str) -> Result<Vec<(OrgRecord, u64)>, StoreError> {
        let block = self
            .fetch(format!(
                "SELECT org_id, plan, toUInt32(created_at) AS created, \
                 toUInt32(updated_at) AS updated, version FROM {} FINAL{filter}",
                self.orgs_table
            ))
            .await?;
        let mut orgs = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let org = OrgRecord {
                org_id: row.get("org_id")?,
                plan: row.get("plan")?,
                created_at: row.get("created")?,
                updated_at: row.get("updated")?,
            };
            orgs.push((org, row.get("version")?));
        }
        Ok(orgs)
    }

    /// Spans stored per organisation with `ingested_at` in `[from_s, to_s)` (Unix seconds), for
    /// the given organisations; an organisation without spans is absent from the answer.
    ///
    /// Counts rows as stored, without `FINAL`: a client's retry that the table has not merged
    /// away yet counts twice (it was accepted twice), and stops counting once merged. `FINAL`
    /// over a month of spans every few seconds would cost far more than that is worth.
    pub async fn count_spans_by_org(
        &self,
        org_ids: &[&str],
        from_s: i64,
        to_s: i64,
    ) -> Result<Vec<(String, u64)>, StoreError> {
        let mut counts = Vec::new();
        for chunk in org_ids.chunks(COUNT_ORGS_PER_QUERY) {
            let list = chunk
                .iter()
                .map(|o| sql_string(o))
                .collect::<Vec<_>>()
                .join(",");
            let block = self
                .fetch(format!(
                    "SELECT org_id, count() AS n FROM {} \
                     WHERE org_id IN ({list}) \
                     AND ingested_at >= toDateTime({from_s}) AND ingested_at < toDateTime({to_s}) \
                     GROUP BY org_id",
                    self.spans_table
                ))
                .await?;
            for row in block.rows() {
                counts.push((row.get("org_id")?, row.get("n")?));
            }
        }
        Ok(counts)
    }
}

/// A future that turns a panic while polling the inner future into `Err(message)`.
struct CatchUnwind<'a, T>(Pin<Box<dyn Future<Output = T> + 'a>>);

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => {
                let why = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                Poll::Ready(Err(why))
            }
        }
    }
}

/// The buffers of a sent block, emptied for the next one, in the order they were taken. A buffer
/// still shared (the client kept the block) is replaced by an empty one; one far larger than
/// this block needed (after a burst) is shrunk, so an idle server does not keep it.
/// The spare column buffers between inserts, and how large the recent inserts were.
#[derive(Default)]
struct Spares {
    buffers: Vec<Vec<u8>>,
    /// Bytes of the largest block of the current and of the previous `SPARES_WINDOW` inserts.
    peak: usize,
    previous_peak: usize,
    inserts: usize,
}

/// Inserts per window of `Spares::peak`.
const SPARES_WINDOW: usize = 64;

impl Spares {
    /// Takes back a sent block's buffers (`used` bytes in all), emptied, in the order they were
    /// taken. Insert sizes vary a lot (the flush thread inserts what has arrived), so buffers
    /// keep their size across small blocks; only when they hold over 4 times what the largest
    /// block of the last 64 to 128 inserts needed (a burst is over) are they freed, so an
    /// idle server does not keep a burst's memory. A buffer the client still shares is
    /// replaced by an empty one.
    fn reclaim(&mut self, taken: Vec<Arc<Vec<u8>>>, used: usize) {
        self.peak = self.peak.max(used);
        self.inserts += 1;
        if self.inserts == SPARES_WINDOW {
            self.previous_peak = self.peak;
            self.peak = 0;
            self.inserts = 0;
        }
        let recent = self.peak.max(self.previous_peak);
        let mut held = 0;
        self.buffers = taken
            .into_iter()
            .map(|shared| match Arc::try_unwrap(shared) {
                Ok(mut buffer) => {
                    buffer.clear();
                    held += buffer.capacity();
                    buffer
                }
                Err(_) => Vec::new(),
            })
            .collect();
        if held > 4 * recent + (1 << 20) {
            self.buffers.clear();
        }
    }
}

fn create_table_sql(table: &str, columns: &[(&str, &str)], engine: &str) -> String {
    let mut sql = format!("CREATE TABLE IF NOT EXISTS {table} (");
    for (i, (name, ty)) in columns.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('`');
        sql.push_str(name);
        sql.push_str("` ");
        sql.push_str(ty);
    }
    sql.push_str(") ");
    sql.push_str(engine);
    sql
}

/// Type names as `system.columns` spells them may differ in spacing between releases.
fn same_type(found: &str, expected: &str) -> bool {
    found
        .chars()
        .filter(|c| !c.is_whitespace())
        .eq(expected.chars().filter(|c| !c.is_whitespace()))
}

/// Client options. Server settings, if ever needed, go through `Options::with_setting`: as URL
/// parameters they corrupt the protocol with 18.16.
fn options_from_url(url: &str) -> Result<Options, StoreError> {
    let bad = |why: &str| StoreError::new(format!("ClickHouse URL {url:?}: {why}"));
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
        .connection_timeout(Duration::from_secs(2))
        .query_timeout(Duration::from_secs(30))
        .insert_timeout(Some(Duration::from_secs(60)))
        .execute_timeout(Some(Duration::from_secs(60)));
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
    Ok(options)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A ClickHouse string literal.
fn sql_string(s: &str) -> String {
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

fn decode_hash(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let h = (pair[0] as char).to_digit(16)?;
        let l = (pair[1] as char).to_digit(16)?;
        out[i] = (h * 16 + l) as u8;
    }
    Some(out)
}

fn now_seconds() -> u32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    u32::try_from(secs).unwrap_or(u32::MAX)
}

fn now_version() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[cfg(test)]
pub(crate) mod test_support {
    //! A real ClickHouse for tests: a throwaway database per test and a raw HTTP reader.

    use std::io::{Read, Write};
    use std::net::TcpStream;

    pub const NATIVE_URL: &str = "tcp://127.0.0.1:9000";
    const HTTP_ADDR: &str = "127.0.0.1:8123";

    /// True when the tests must skip ClickHouse (env `TI_SKIP_CLICKHOUSE`); says so.
    pub fn skip() -> bool {
        if std::env::var_os("TI_SKIP_CLICKHOUSE").is_some() {
            eprintln!("TI_SKIP_CLICKHOUSE is set: skipping a test that needs ClickHouse");
            return true;
        }
        false
    }

    /// Runs one query over HTTP; panics on failure. Returns the response body.
    pub fn http_query(sql: &str) -> String {
        let mut s = TcpStream::connect(HTTP_ADDR)
            .unwrap_or_else(|e| panic!("ClickHouse HTTP at {HTTP_ADDR} unreachable: {e}"));
        let head = format!(
            "POST / HTTP/1.0\r\nHost: {HTTP_ADDR}\r\nContent-Length: {}\r\n\r\n",
            sql.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(sql.as_bytes()).unwrap();
        let mut response = Vec::new();
        s.read_to_end(&mut response).unwrap();
        let response = String::from_utf8(response).expect("UTF-8 response");
        let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "query {sql:?} failed: {head}\n{body}"
        );
        body.to_string()
    }

    /// Rows of a `FORMAT JSONEachRow` query.
    pub fn json_rows(sql: &str) -> Vec<serde_json::Value> {
        http_query(&format!("{sql} FORMAT JSONEachRow"))
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON row"))
            .collect()
    }

    pub fn count(sql: &str) -> u64 {
        http_query(sql).trim().parse().expect("a count")
    }

    /// A database name unique to this test and process, dropped (with its tables) on drop.
    pub struct TestDb(pub String);

    impl TestDb {
        pub fn new(test: &str) -> TestDb {
            let name = format!("ti_sink_test_{test}_{}", std::process::id());
            http_query(&format!("DROP DATABASE IF EXISTS `{name}`"));
            TestDb(name)
        }
    }

    impl Drop for TestDb {
        fn drop(&mut self) {
            let _ = std::panic::catch_unwind(|| {
                http_query(&format!("DROP DATABASE IF EXISTS `{}`", self.0))
            });
        }
    }

    pub use crate::row::test_rows::{batch, batch_then, row};
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::row::RowRef;
    use serde_json::{json, Value};

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// The column list exactly as the storage contract orders it.
    #[test]
    fn spans_columns_are_in_contract_order() {
        let expected = "org_id, project_id, trace_id, span_id, parent_span_id, span_type, name, \
            start_time_ms, end_time_ms, duration_ms, status, error_message, provider, model_id, \
            priced_model_id, input_tokens, output_tokens, total_tokens, reasoning_tokens, \
            cached_input_tokens, cache_write_input_tokens, image_count, web_search_count, \
            request_count, ttft_ms, reasoning_duration_ms, model_call_ms, prompt_cost, \
            completion_cost, request_cost, image_cost, web_search_cost, internal_reasoning_cost, \
            cache_read_cost, cache_write_cost, total_cost, pricing_source, priced_at, trace_name, \
            agent_name, workflow_name, workflow_run_id, session_id, metadata_keys, \
            metadata_values, input, output, tool_catalog, system_fingerprint, safety_metadata, \
            sources, rate_limit_requests_limit, rate_limit_requests_remaining, \
            rate_limit_requests_reset_ms, rate_limit_tokens_limit, rate_limit_tokens_remaining, \
            rate_limit_tokens_reset_ms, chunk_offsets, chunk_tokens, reasoning_offsets, \
            reasoning_chunk_tokens, ingested_at, customer_id, customer_name, customer_image_url, \
            response_time_ms, effective_output_tps, effective_total_tps, output_tps, input_tps, \
            chunk_jitter_min, chunk_jitter_p10, chunk_jitter_median, chunk_jitter_avg, \
            chunk_jitter_p90, chunk_jitter_max, reported_cost";
        let names: Vec<&str> = SPANS_COLUMNS.iter().map(|c| c.0).collect();
        let expected: Vec<&str> = expected.split(", ").collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn error_classes() {
        let server = |code: u32, message: &str| {
            ChError::Server(clickhouse_rs::errors::ServerError {
                code,
                name: String::new(),
                message: message.to_string(),
                stack_trace: String::new(),
            })
        };
        let io = ChError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let cases = [
            (io, Retry::Later),
            (server(252, "Too many parts (300)"), Retry::Later),
            (
                server(
                    252,
                    "Too many partitions for single INSERT block (more than 100)",
                ),
                Retry::Split,
            ),
            (server(241, "Memory limit exceeded"), Retry::Later),
            (server(159, "Timeout exceeded"), Retry::Later),
            (server(60, "Table x doesn't exist"), Retry::AfterMigrate),
            (server(16, "No such column"), Retry::AfterMigrate),
            (server(53, "Type mismatch"), Retry::Never),
            (server(395, "throwIf"), Retry::Split),
            (server(117, "Incorrect data"), Retry::Split),
            (server(100_000, "unknown"), Retry::Unknown),
            (server(210, "Network error"), Retry::Later),
            (server(516, "Authentication failed"), Retry::Later),
            (ChError::Other("x".into()), Retry::Never),
        ];
        for (err, expected) in cases {
            assert_eq!(InsertError::from_clickhouse(&err).retry, expected, "{err}");
        }
    }

    #[test]
    fn urls_and_names() {
        assert!(Store::new("tcp://127.0.0.1:9000", "ok_db_1").is_ok());
        assert!(Store::new("tcp://u:p%40ss@h?compression=lz4", "x").is_ok());
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
        assert_eq!(decode_hash(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(decode_hash(&"AB".repeat(32)), Some([0xab; 32]));
        assert_eq!(decode_hash(&"zz".repeat(32)), None);
        assert_eq!(decode_hash("ab"), None);
    }

    #[test]
    fn migrate_twice_then_insert_and_read_back_every_column() {
        if skip() {
            return;
        }
        let db = TestDb::new("roundtrip");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.ping())
            .expect("ClickHouse on 127.0.0.1:9000");
        rt.block_on(store.migrate()).unwrap();
        rt.block_on(store.migrate()).unwrap();

        let columns = json_rows(&format!(
            "SELECT name, type FROM system.columns WHERE database = '{}' AND table = 'spans'",
            db.0
        ));
        let found = pairs(&columns, "name", "type");
        let expected: Vec<(String, String)> = SPANS_COLUMNS
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        assert_eq!(found, expected);

        let first = batch("org-1", "trace-🚀", 2, 1_700_000_000_000);
        let second = batch("org-2", "trace-2", 1, 1_700_000_000_500);
        rt.block_on(store.insert_spans(&[first, second])).unwrap();

        let rows = json_rows(&format!(
            "SELECT *, toString(prompt_cost) AS prompt_s, toString(completion_cost) AS completion_s, \
             toString(request_cost) AS request_s, toString(image_cost) AS image_s, \
             toString(web_search_cost) AS web_search_s, \
             toString(internal_reasoning_cost) AS internal_reasoning_s, \
             toString(cache_read_cost) AS cache_read_s, toString(cache_write_cost) AS cache_write_s, \
             toString(total_cost) AS total_s, toUInt32(priced_at) AS priced_at_s, \
             toUInt32(ingested_at) AS ingested_at_s \
             FROM `{}`.spans ORDER BY org_id, span_id",
            db.0
        ));
        assert_eq!(rows.len(), 3);
        check_full_row(&rows[0], "org-1", "trace-🚀", "span-0", 1_700_000_000_000);
        check_sparse_row(&rows[1], "org-1", "trace-🚀", "span-1", 1_700_000_000_001);
        check_full_row(&rows[2], "org-2", "trace-2", "span-0", 1_700_000_000_500);
    }

    /// The string columns `a` and `b` of every row.
    fn pairs(rows: &[Value], a: &str, b: &str) -> Vec<(String, String)> {
        let s = |v: &Value| v.as_str().unwrap().to_string();
        rows.iter().map(|r| (s(&r[a]), s(&r[b]))).collect()
    }

    fn u64_of(v: &Value) -> u64 {
        match v {
            Value::String(s) => s.parse().unwrap(),
            Value::Number(n) => n.as_u64().unwrap(),
            other => panic!("not a UInt64: {other}"),
        }
    }

    fn check(row: &Value, expected: &[(&str, Value)]) {
        for (column, want) in expected {
            let got = &row[*column];
            let same = match (got, want) {
                (Value::String(_), Value::Number(_)) => u64_of(got) == want.as_u64().unwrap(),
                (Value::Array(g), Value::Array(w)) if w.iter().all(Value::is_u64) => g
                    .iter()
                    .map(u64_of)
                    .eq(w.iter().map(|x| x.as_u64().unwrap())),
                (Value::Number(g), Value::Number(w)) => g.as_f64() == w.as_f64(),
                _ => got == want,
            };
            assert!(same, "column {column}: got {got}, want {want}");
        }
    }

    fn check_common(row: &Value, org: &str, trace: &str, span: &str, start: u64) {
        check(
            row,
            &[
                ("org_id", json!(org)),
                ("project_id", json!("proj-é")),
                ("trace_id", json!(trace)),
                ("span_id", json!(span)),
                ("span_type", json!("llm")),
                ("name", json!("chat 🚀 ünïcödé")),
                ("start_time_ms", json!(start)),
                ("end_time_ms", json!(start + 1500)),
                ("duration_ms", json!(1500)),
                ("ingested_at_s", json!(1_700_000_100)),
            ],
        );
    }

    fn check_full_row(row: &Value, org: &str, trace: &str, span: &str, start: u64) {
        check_common(row, org, trace, span, start);
        check(
            row,
            &[
                ("parent_span_id", json!("parent-1")),
                ("status", json!("error")),
                (
                    "error_message",
                    json!("boom \"quoted\" \\ back\nslash\ttab \u{0} nul"),
                ),
                ("provider", json!("openai.chat")),
                ("model_id", json!("gpt-4o-2024-08-06")),
                ("priced_model_id", json!("openai/gpt-4o")),
                ("input_tokens", json!(1000)),
                ("output_tokens", json!(200)),
                ("total_tokens", json!(1200)),
                ("reasoning_tokens", json!(50)),
                ("cached_input_tokens", json!(300)),
                ("cache_write_input_tokens", json!(7)),
                ("image_count", json!(2)),
                ("web_search_count", json!(3)),
                ("request_count", json!(1)),
                ("ttft_ms", json!(123.5)),
                ("reasoning_duration_ms", json!(400)),
                ("model_call_ms", json!(1400)),
                ("prompt_s", json!("0.0000012345")),
                ("completion_s", json!("0.0000000001")),
                ("request_s", json!("1.0000000000")),
                ("image_s", json!("0.0000000000")),
                ("web_search_s", json!("99999999.9999999999")),
                ("internal_reasoning_s", Value::Null),
                ("cache_read_s", json!("0.0000000250")),
                ("cache_write_s", json!("0.0000000003")),
                ("total_s", json!("1.0000012599")),
                ("pricing_source", json!("builtin")),
                ("priced_at_s", json!(1_700_000_050)),
                ("trace_name", json!("trace ✓")),
                ("agent_name", json!("agent 😀")),
                ("workflow_name", json!("wf")),
                ("workflow_run_id", json!("run-1")),
                ("session_id", json!("sess-1")),
                ("metadata_keys", json!(["env", "ключ", "empty"])),
                ("metadata_values", json!(["prod", "значение 🎉", ""])),
                ("input", json!("input: 你好 🌍")),
                ("output", json!("output")),
                ("tool_catalog", json!("[{\"name\":\"search\"}]")),
                ("system_fingerprint", json!("fp_123")),
                ("safety_metadata", json!("{}")),
                ("sources", json!("https://example.com")),
                ("rate_limit_requests_limit", json!(500)),
                ("rate_limit_requests_remaining", json!(499)),
                ("rate_limit_requests_reset_ms", json!(60_000)),
                ("rate_limit_tokens_limit", json!(u64::MAX)),
                ("rate_limit_tokens_remaining", json!(0)),
                ("rate_limit_tokens_reset_ms", json!(1)),
                ("chunk_offsets", json!([0, 10, 20])),
                ("chunk_tokens", json!([5, 6, 7])),
                ("reasoning_offsets", json!([1])),
                ("reasoning_chunk_tokens", json!([u64::MAX])),
                ("customer_id", json!("cust-1")),
                ("customer_name", json!("Ćustomer")),
                ("customer_image_url", json!("https://example.com/a.png")),
                ("response_time_ms", json!(1600)),
                ("effective_output_tps", json!(133.25)),
                ("effective_total_tps", json!(800.5)),
                ("output_tps", json!(142.75)),
                ("input_tps", json!(0.0)),
                ("chunk_jitter_min", json!(0.5)),
                ("chunk_jitter_p10", json!(1.0)),
                ("chunk_jitter_median", json!(2.25)),
                ("chunk_jitter_avg", json!(2.5)),
                ("chunk_jitter_p90", json!(4.0)),
                ("chunk_jitter_max", json!(9.75)),
            ],
        );
    }

    fn check_sparse_row(row: &Value, org: &str, trace: &str, span: &str, start: u64) {
        check_common(row, org, trace, span, start);
        let mut expected: Vec<(&str, Value)> = vec![
            ("status", json!("ok")),
            ("pricing_source", json!("")),
            ("metadata_keys", json!([])),
            ("metadata_values", json!([])),
            ("chunk_offsets", json!([])),
            ("chunk_tokens", json!([])),
            ("reasoning_offsets", json!([])),
            ("reasoning_chunk_tokens", json!([])),
            ("priced_at_s", Value::Null),
        ];
        for (name, ty) in SPANS_COLUMNS {
            if ty.starts_with("Nullable") {
                expected.push((name, Value::Null));
            } else if *ty == "UInt64" && !name.contains("time_ms") && *name != "duration_ms" {
                expected.push((name, json!(0)));
            } else if *ty == "String"
                && !matches!(
                    *name,
                    "org_id"
                        | "project_id"
                        | "trace_id"
                        | "span_id"
                        | "name"
                        | "span_type"
                        | "status"
                        | "pricing_source"
                )
            {
                expected.push((name, json!("")));
            }
        }
        check(row, &expected);
    }

    /// An insert whose money columns hold no value at all: the client crate gives such a column
    /// a default scale, converted to the table's before sending (vendor/clickhouse-rs patch).
    #[test]
    fn an_insert_of_only_unpriced_rows_stores_null_costs() {
        if skip() {
            return;
        }
        let db = TestDb::new("unpriced");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        let b = RowBatch::from_rows(&[row("org-u", "trace-u", "span-1", 1_700_000_000_001, false)]);
        rt.block_on(store.insert_spans(std::slice::from_ref(&b)))
            .unwrap();
        let rows = json_rows(&format!(
            "SELECT *, toUInt32(priced_at) AS priced_at_s, toUInt32(ingested_at) AS ingested_at_s \
             FROM `{}`.spans",
            db.0
        ));
        assert_eq!(rows.len(), 1);
        check_sparse_row(&rows[0], "org-u", "trace-u", "span-1", 1_700_000_000_001);
    }

    #[test]
    fn same_batch_twice_deduplicates() {
        if skip() {
            return;
        }
        let db = TestDb::new("dedupe");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        let b = batch("org-d", "trace-d", 5, 1_700_000_000_000);
        rt.block_on(store.insert_spans(std::slice::from_ref(&b)))
            .unwrap();
        rt.block_on(store.insert_spans(std::slice::from_ref(&b)))
            .unwrap();
        assert_eq!(
            count(&format!("SELECT count() FROM `{}`.spans FINAL", db.0)),
            5
        );
        assert_eq!(
            count(&format!(
                "SELECT uniqExact(org_id, trace_id, span_id) FROM `{}`.spans",
                db.0
            )),
            5
        );
    }

    #[test]
    fn adds_columns_a_table_from_an_older_release_lacks() {
        if skip() {
            return;
        }
        let db = TestDb::new("evolve");
        http_query(&format!("CREATE DATABASE `{}`", db.0));
        let old: Vec<(&str, &str)> = SPANS_COLUMNS
            .iter()
            .copied()
            .take_while(|(n, _)| *n != "customer_id")
            .collect();
        http_query(&create_table_sql(
            &format!("`{}`.spans", db.0),
            &old,
            SPANS_ENGINE,
        ));
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        let b = batch("org-e", "trace-e", 2, 1_700_000_000_000);
        rt.block_on(store.insert_spans(&[b])).unwrap();
        let names: Vec<String> = json_rows(&format!(
            "SELECT name FROM system.columns WHERE database = '{}' AND table = 'spans'",
            db.0
        ))
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
        assert_eq!(names, SPANS_COLUMNS.iter().map(|c| c.0).collect::<Vec<_>>());

        // A column with another type is refused, not silently kept.
        http_query(&format!(
            "ALTER TABLE `{}`.api_keys MODIFY COLUMN project_id Nullable(String)",
            db.0
        ));
        let err = rt.block_on(store.migrate()).unwrap_err();
        assert!(err.message.contains("project_id"), "{err}");
    }

    #[test]
    fn insert_into_a_missing_table_asks_for_migrate() {
        if skip() {
            return;
        }
        let db = TestDb::new("missing");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        let err = rt
            .block_on(store.insert_spans(&[batch("o", "t", 1, 0)]))
            .unwrap_err();
        assert_eq!(err.retry, Retry::AfterMigrate, "{err}");
        let unreachable = Store::new("tcp://127.0.0.1:1", &db.0).unwrap();
        let err = rt
            .block_on(unreachable.insert_spans(&[batch("o", "t", 1, 0)]))
            .unwrap_err();
        assert_eq!(err.retry, Retry::Later, "{err}");
    }

    #[test]
    fn keys_insert_list_revoke_load() {
        if skip() {
            return;
        }
        let db = TestDb::new("keys");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        let key = |hash: &str, prefix: &str, org: &str, project: &str, created: u32| KeyRecord {
            key_hash: hash.repeat(32),
            display_prefix: prefix.to_string(),
            org_id: org.to_string(),
            project_id: project.to_string(),
            created_at: created,
            revoked_at: None,
        };
        let a = key("0a", "ti_aaaaaaaaa", "org-a", "", 1_700_000_000);
        let b = key("1b", "ti_bbbbbbbbb", "org-b", "proj-b", 1_700_000_001);
        let c = key("2c", "ti_o'quote\\", "org-c", "", 1_700_000_002);
        for k in [&a, &b, &c] {
            rt.block_on(store.insert_key(k)).unwrap();
        }
        assert!(rt
            .block_on(store.insert_key(&key("zz", "ti_x", "o", "", 0)))
            .is_err());
        assert_eq!(
            rt.block_on(store.list_keys()).unwrap(),
            vec![a.clone(), b.clone(), c.clone()]
        );

        assert_eq!(rt.block_on(store.revoke_key("ti_bbbbbbbbb")).unwrap(), 1);
        assert_eq!(rt.block_on(store.revoke_key("ti_bbbbbbbbb")).unwrap(), 0);
        assert_eq!(rt.block_on(store.revoke_key("ti_nothing__")).unwrap(), 0);
        assert_eq!(rt.block_on(store.revoke_key("ti_o'quote\\")).unwrap(), 1);

        let listed = rt.block_on(store.list_keys()).unwrap();
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[0], a);
        assert!(listed[1].revoked_at.is_some() && listed[2].revoked_at.is_some());
        assert_eq!(
            rt.block_on(store.load_active_keys()).unwrap(),
            vec![ActiveKey {
                hash: [0x0a; 32],
                org_id: "org-a".into(),
                project_id: String::new(),
            }]
        );
    }

    #[test]
    fn orgs_put_get_list_and_monthly_counts() {
        if skip() {
            return;
        }
        let db = TestDb::new("orgs");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        assert_eq!(rt.block_on(store.get_org("org-a")).unwrap(), None);
        rt.block_on(store.put_org("org-a", "free")).unwrap();
        rt.block_on(store.put_org("org-b'q", "pro")).unwrap();
        let a = rt.block_on(store.get_org("org-a")).unwrap().unwrap();
        assert_eq!(a.plan, "free");
        rt.block_on(store.put_org("org-a", "enterprise")).unwrap();
        let a2 = rt.block_on(store.get_org("org-a")).unwrap().unwrap();
        assert_eq!(
            (a2.plan.as_str(), a2.created_at),
            ("enterprise", a.created_at)
        );
        let listed: Vec<(String, String)> = rt
            .block_on(store.list_orgs())
            .unwrap()
            .into_iter()
            .map(|o| (o.org_id, o.plan))
            .collect();
        assert_eq!(
            listed,
            vec![
                ("org-a".to_string(), "enterprise".to_string()),
                ("org-b'q".to_string(), "pro".to_string())
            ]
        );

        // `batch` rows are ingested at 1_700_000_100 (2023-11-14).
        let mut batches = vec![batch("org-a", "t1", 3, 0), batch("org-b'q", "t2", 2, 0)];
        let ids = ["s0", "s1", "s2", "s3"];
        let december: Vec<_> = ids
            .iter()
            .map(|id| RowRef {
                ingested_at: 1_701_388_800, // 2023-12-01 00:00:00
                ..row("org-a", "t3", id, 0, true)
            })
            .collect();
        batches.push(RowBatch::from_rows(&december));
        rt.block_on(store.insert_spans(&batches)).unwrap();
        let november = (1_698_796_800, 1_701_388_800);
        let mut counts = rt
            .block_on(store.count_spans_by_org(
                &["org-a", "org-b'q", "org-c"],
                november.0,
                november.1,
            ))
            .unwrap();
        counts.sort();
        assert_eq!(
            counts,
            vec![("org-a".to_string(), 3), ("org-b'q".to_string(), 2)]
        );
        let december = rt
            .block_on(store.count_spans_by_org(&["org-a"], 1_701_388_800, 1_704_067_200))
            .unwrap();
        assert_eq!(december, vec![("org-a".to_string(), 4)]);
    }

    /// Parts of batches in one insert: every run's regions are cut at its rows, and array
    /// offsets (counted from each batch's first row) are rebased on the block's.
    #[test]
    fn runs_of_parts_of_batches_store_every_row_whole() {
        if skip() {
            return;
        }
        let db = TestDb::new("runs");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        // Even rows are full (metadata, sample arrays), odd ones sparse.
        let a = batch("org-a", "trace-a", 6, 1_700_000_000_000);
        let b = batch("org-b", "trace-b", 3, 1_700_000_000_000);
        let runs = [
            RowRun {
                batch: &a,
                rows: 1..4,
            },
            RowRun {
                batch: &b,
                rows: 0..2,
            },
            RowRun {
                batch: &a,
                rows: 4..6,
            },
        ];
        let inserted = rt.block_on(store.insert_runs(&runs)).unwrap();
        assert_eq!(inserted.rows, 7);
        let rows = json_rows(&format!(
            "SELECT org_id, span_id, metadata_keys, metadata_values, chunk_offsets, \
             reasoning_chunk_tokens, toString(total_cost) AS total_s, input \
             FROM `{}`.spans ORDER BY org_id, span_id",
            db.0
        ));
        let got = pairs(&rows, "org_id", "span_id");
        let want: Vec<(String, String)> = [
            ("org-a", "span-1"),
            ("org-a", "span-2"),
            ("org-a", "span-3"),
            ("org-a", "span-4"),
            ("org-a", "span-5"),
            ("org-b", "span-0"),
            ("org-b", "span-1"),
        ]
        .iter()
        .map(|(o, s)| (o.to_string(), s.to_string()))
        .collect();
        assert_eq!(got, want);
        for r in &rows {
            let n: usize = r["span_id"].as_str().unwrap()[5..].parse().unwrap();
            if n.is_multiple_of(2) {
                assert_eq!(r["metadata_keys"], json!(["env", "ключ", "empty"]), "{r}");
                assert_eq!(r["metadata_values"], json!(["prod", "значение 🎉", ""]));
                assert_eq!(r["chunk_offsets"], json!(["0", "10", "20"]));
                assert_eq!(r["reasoning_chunk_tokens"], json!([u64::MAX.to_string()]));
                assert_eq!(r["total_s"], "1.0000012599");
                assert_eq!(r["input"], "input: 你好 🌍");
            } else {
                assert_eq!(r["metadata_keys"], json!([]), "{r}");
                assert_eq!(r["chunk_offsets"], json!([]));
                assert_eq!(r["total_s"], Value::Null);
                assert_eq!(r["input"], "");
            }
        }
    }

    #[test]
    fn every_kind_has_the_same_type_for_the_client_as_in_the_table() {
        use Kind::*;
        for kind in [
            Str, U64, OptU64, OptF64, Money, Time, OptTime, Ints, MetaKeys, MetaValues,
        ] {
            let wire = wire_type(kind).to_string();
            assert!(
                same_type(&wire, kind.sql_type()),
                "{wire} vs {}",
                kind.sql_type()
            );
        }
    }

    #[test]
    fn spare_buffers_survive_small_inserts_and_go_after_a_burst() {
        let sent = |bytes: usize| vec![Arc::new(Vec::<u8>::with_capacity(bytes))];
        let mut spares = Spares::default();
        // A large block, then smaller ones: the buffer keeps its size for the next large one.
        spares.reclaim(sent(8 << 20), 8 << 20);
        for _ in 0..10 {
            let taken = std::mem::take(&mut spares.buffers);
            assert!(
                taken[0].capacity() >= 8 << 20,
                "shrunk after a small insert"
            );
            spares.reclaim(vec![Arc::new(taken.into_iter().next().unwrap())], 100 << 10);
        }
        // Two windows of small blocks only: the burst is over and the memory goes.
        for _ in 0..2 * SPARES_WINDOW {
            let taken = std::mem::take(&mut spares.buffers);
            let buffer = taken.into_iter().next().unwrap_or_default();
            spares.reclaim(vec![Arc::new(buffer)], 100 << 10);
        }
        assert!(spares.buffers.iter().all(|b| b.capacity() == 0));
        // A buffer the client still holds is replaced by an empty one, not waited for.
        let shared = Arc::new(Vec::<u8>::with_capacity(1024));
        let _client = shared.clone();
        spares.reclaim(vec![shared], 1024);
        assert_eq!(spares.buffers.len(), 1);
        assert_eq!(spares.buffers[0].capacity(), 0);
    }

    #[test]
    fn an_insert_gives_its_column_buffers_back_for_the_next() {
        if skip() {
            return;
        }
        let db = TestDb::new("spares");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        // 3000 rows: the fixed-width columns (24 KB) and the larger string columns pass the
        // client's SHARE_MIN_BYTES, so they go to the socket from these buffers in place, and
        // must come back all the same once written; the small ones are copied.
        const ROWS: usize = 3000;
        let first = [batch("org-s", "trace-1", ROWS, 1_700_000_000_000)];
        rt.block_on(store.insert_spans(&first)).unwrap();
        let spares: Vec<(usize, usize)> = store
            .spares
            .lock()
            .unwrap()
            .buffers
            .iter()
            .map(|b| (b.len(), b.capacity()))
            .collect();
        assert_eq!(spares.len(), 2 * SPANS_COLUMNS.len());
        assert!(spares.iter().all(|&(len, _)| len == 0));
        let start = 2 * crate::row::col::start_time_ms;
        assert!(
            spares[start].1 >= ROWS * 8,
            "a column sent in place came back: {:?}",
            spares[start]
        );
        let total: usize = spares.iter().map(|&(_, cap)| cap).sum();
        assert!(total > ROWS * 100, "kept {total} bytes of buffers");
        // The next insert writes into them, and its rows are stored like the first's.
        let second = [batch("org-s", "trace-2", ROWS, 1_700_000_000_000)];
        rt.block_on(store.insert_spans(&second)).unwrap();
        let rows = json_rows(&format!(
            "SELECT trace_id, count() AS n, sum(start_time_ms) AS starts, \
             sum(length(input)) AS input_bytes, sum(length(metadata_keys)) AS keys \
             FROM `{}`.spans WHERE org_id = 'org-s' GROUP BY trace_id ORDER BY trace_id",
            db.0
        ));
        let starts: u64 = (0..ROWS as u64).map(|i| 1_700_000_000_000 + i).sum();
        let full = ROWS as u64 / 2;
        for (r, trace) in rows.iter().zip(["trace-1", "trace-2"]) {
            assert_eq!(r["trace_id"], trace);
            assert_eq!(u64_of(&r["n"]), ROWS as u64);
            assert_eq!(u64_of(&r["starts"]), starts);
            assert_eq!(
                u64_of(&r["input_bytes"]),
                full * "input: 你好 🌍".len() as u64
            );
            assert_eq!(u64_of(&r["keys"]), full * 3);
        }
        assert_eq!(rows.len(), 2);
    }

    /// Insert throughput of the block path; run with `--ignored --nocapture`.
    #[test]
    #[ignore]
    fn insert_rate() {
        let db = TestDb::new("rate");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        let batches: Vec<RowBatch> = (0..100)
            .map(|i| batch("org-r", &format!("trace-{i}"), 500, 1_700_000_000_000))
            .collect();
        let rows: usize = batches.iter().map(RowBatch::len).sum();
        let runs: Vec<RowRun<'_>> = batches
            .iter()
            .map(|b| RowRun {
                batch: b,
                rows: 0..b.len(),
            })
            .collect();
        let t0 = std::time::Instant::now();
        let _block = spans_block(&runs, rows, Vec::new());
        let build = t0.elapsed();
        let t1 = std::time::Instant::now();
        rt.block_on(store.insert_runs(&runs)).unwrap();
        let total = t1.elapsed();
        let rate = |d: std::time::Duration| rows as f64 / d.as_secs_f64();
        eprintln!(
            "{rows} rows: block {build:?} ({:.0} rows/s), \
             block+insert {total:?} ({:.0} rows/s)",
            rate(build),
            rate(total)
        );
    }
}
