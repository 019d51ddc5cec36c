//! Flags and `INGEST_*` environment variables, resolved once at start into one checked `Config`.
//!
//! Two stages, as ripgrep does it: clap reads raw values (each flag also reads its environment
//! variable), then `ServeArgs::resolve` checks them together and builds the `Config` every other
//! part receives. Nothing reads the environment after start-up.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::admission::plan::{self, Plans};
use crate::http::request::Limits;
use crate::ingest::BatchLimit;
use crate::sink::clickhouse::Store;
use crate::sink::flush::DEFAULT_NICE as DEFAULT_FLUSH_NICE;

pub use crate::log_format::{LogArgs, LogFormat, DEFAULT_LOG_FILTER};

/// Where ClickHouse is; shared by `serve` and every command that talks to it.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// ClickHouse native-protocol URL, or several comma-separated (the nodes of a cluster).
    #[arg(
        long,
        global = true,
        env = "INGEST_CLICKHOUSE_URL",
        default_value = "tcp://127.0.0.1:9000"
    )]
    pub clickhouse_url: String,
    /// ClickHouse database holding the `spans`, `api_keys` and `orgs` tables.
    #[arg(
        long,
        global = true,
        env = "INGEST_CLICKHOUSE_DATABASE",
        default_value = "traceingest"
    )]
    pub clickhouse_database: String,
    /// Cluster mode: a cluster of the servers' `remote_servers`; tables are made ON CLUSTER,
    /// spans sharded by trace id into replicated tables.
    #[arg(long, global = true, env = "INGEST_CLICKHOUSE_CLUSTER")]
    pub clickhouse_cluster: Option<String>,
}

impl StoreArgs {
    /// The store these arguments name, checked, in cluster mode when a cluster is named:
    /// every command that talks to ClickHouse opens it here, so none of them can treat a
    /// cluster's tables as a single server's.
    pub fn open(&self) -> anyhow::Result<Store> {
        self.check().map_err(anyhow::Error::msg)?;
        Ok(Store::new(&self.clickhouse_url, &self.clickhouse_database)?
            .in_cluster(self.clickhouse_cluster.as_deref())?)
    }

    pub fn check(&self) -> Result<(), String> {
        if !self
            .clickhouse_url
            .split(',')
            .all(|u| u.trim().starts_with("tcp://"))
        {
            return Err(format!(
                "INGEST_CLICKHOUSE_URL must be native-protocol URLs like tcp://127.0.0.1:9000 (comma-separated for several), got {:?}",
                redact_password(&self.clickhouse_url)
            ));
        }
        // The rest of each URL as `Store::new` reads it (no path, known parameters only, a
        // host and a port), so that start-up stops here and the message names the setting.
        for url in self.clickhouse_url.split(',').map(str::trim) {
            crate::sink::clickhouse::check_url(url)
                .map_err(|e| format!("INGEST_CLICKHOUSE_URL: {}", e.message))?;
        }
        if self.clickhouse_url.contains(',') && self.clickhouse_cluster.is_none() {
            return Err(
                "INGEST_CLICKHOUSE_URL names several nodes: set INGEST_CLICKHOUSE_CLUSTER too \
                 (without replicated tables each server would hold a different part of the data)"
                    .into(),
            );
        }
        if let Some(c) = &self.clickhouse_cluster {
            if c.is_empty()
                || c.len() > 128
                || !c
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                return Err(format!(
                    "INGEST_CLICKHOUSE_CLUSTER must name a cluster of remote_servers (1 to 128 of letters, digits, _ - .), got {c:?}"
                ));
            }
        }
        let db = &self.clickhouse_database;
        if db.is_empty()
            || db.len() > 128
            || !db.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || db.as_bytes()[0].is_ascii_digit()
        {
            return Err(format!(
                "INGEST_CLICKHOUSE_DATABASE must be 1 to 128 of letters, digits and '_' (not starting with a digit), got {db:?}"
            ));
        }
        Ok(())
    }
}

/// `traceingest migrate`: where ClickHouse is, and how long a cluster's migration waits for
/// replicas to apply the columns it adds.
#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Cluster mode: how long, after adding a column to one replica of a replicated table,
    /// `migrate` waits for the other replicas to apply it before it reports them ("not yet
    /// on") and exits 3. A server's start-up always waits 30 s.
    #[arg(
        long,
        env = "INGEST_MIGRATE_REPLICATION_WAIT_MS",
        default_value_t = 30_000,
        value_parser = clap::value_parser!(u64).range(..=3_600_000)
    )]
    pub replication_wait_ms: u64,
}

impl MigrateArgs {
    pub fn replication_wait(&self) -> Duration {
        Duration::from_millis(self.replication_wait_ms)
    }
}

/// Plans and rate limits; shared by `serve` and `orgs` (which checks plan names against them).
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Spans per second per API key for plans that set no rate, or "unlimited".
    #[arg(
        long,
        global = true,
        env = "INGEST_RATE_LIMIT_RPS",
        default_value = "100"
    )]
    pub rate_limit_rps: String,
    /// Plans as name:quota[:rate[:burst]],... (see README); they add to or replace the built-in
    /// free, pro, enterprise and self-hosted plans.
    #[arg(long, global = true, env = "INGEST_PLANS")]
    pub plans: Option<String>,
    /// Plan of organisations without a record in the `orgs` table.
    #[arg(long, global = true, env = "INGEST_DEFAULT_PLAN", default_value = plan::DEFAULT_PLAN)]
    pub default_plan: String,
}

impl PlanArgs {
    /// The checked plans; the error names the setting.
    pub fn resolve(&self) -> Result<Plans, String> {
        let default_rate = plan::parse_default_rate(&self.rate_limit_rps)?;
        Plans::resolve(self.plans.as_deref(), &self.default_plan, default_rate)
    }
}

/// Raw settings of `traceingest serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "INGEST_HOST", default_value = "0.0.0.0")]
    pub host: IpAddr,
    /// TCP port (0 picks a free one; the chosen address is printed on stdout).
    #[arg(long, env = "INGEST_PORT", default_value_t = 4000)]
    pub port: u16,
    /// Address of the admin listener, which serves /metrics, /health and /ready off the public
    /// port (port 0 picks a free one; printed on stdout's second line).
    #[arg(long, env = "INGEST_ADMIN_ADDR", default_value = "127.0.0.1:4001")]
    pub admin_addr: SocketAddr,
    /// Worker threads, one per core by default.
    #[arg(long, env = "INGEST_WORKERS")]
    pub workers: Option<usize>,
    /// Largest accepted `/ingest` body in bytes, after de-chunking and decompression.
    #[arg(long, env = "INGEST_MAX_BODY_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub max_body_bytes: u64,
    /// Largest accepted OTLP export (`/v1/traces`) in bytes, after de-chunking and
    /// decompression.
    #[arg(long, env = "INGEST_OTLP_MAX_BODY_BYTES", default_value_t = 20 * 1024 * 1024)]
    pub otlp_max_body_bytes: u64,
    /// Largest request line plus headers in bytes.
    #[arg(long, env = "INGEST_MAX_HEADER_BYTES", default_value_t = 16 * 1024)]
    pub max_header_bytes: usize,
    /// Most header fields in one request.
    #[arg(long, env = "INGEST_MAX_HEADERS", default_value_t = 64)]
    pub max_headers: usize,
    /// Flush to ClickHouse at least this often (milliseconds).
    #[arg(long, env = "INGEST_FLUSH_INTERVAL_MS", default_value_t = 1000)]
    pub flush_interval_ms: u64,
    /// Flush as soon as this many rows are waiting; the most rows one insert takes.
    #[arg(long, env = "INGEST_FLUSH_MAX_ROWS", default_value_t = 500_000)]
    pub flush_max_rows: usize,
    /// Flush as soon as accepted batches hold this many bytes in memory; the most bytes one
    /// insert takes (past a quarter of --buffer-max-bytes, that quarter).
    #[arg(long, env = "INGEST_FLUSH_MAX_BYTES", default_value_t = 128 * 1024 * 1024)]
    pub flush_max_bytes: u64,
    /// How many nice levels below the workers the flush thread runs (0 to 19; 0: the same).
    #[arg(long, env = "INGEST_FLUSH_NICE", default_value_t = DEFAULT_FLUSH_NICE)]
    pub flush_nice: u8,
    /// Rows of accepted batches held in memory (at least --flush-max-rows); past it the newest
    /// batches go to the spool on disk, and `/ingest` answers 503 buffer_full only when the
    /// spool is full too. `/ready` answers 503 not_ready past 90% of it. A batch of more spans
    /// than this is refused (413 batch_too_large).
    #[arg(long, env = "INGEST_BUFFER_MAX_ROWS", default_value_t = 1_000_000)]
    pub buffer_max_rows: u64,
    /// Heap bytes of accepted batches held in memory (at least 65536); past it the newest
    /// batches go to the spool on disk, and `/ingest` answers 503 buffer_full only when the
    /// spool is full too. One batch's rows may take a quarter of it (413 batch_too_large).
    #[arg(long, env = "INGEST_BUFFER_MAX_BYTES", default_value_t = 512 * 1024 * 1024)]
    pub buffer_max_bytes: u64,
    /// Bytes the spool on disk may hold; with memory and spool full, `/ingest` answers 503. In
    /// wal mode one batch may take a quarter of it (413 batch_too_large).
    #[arg(long, env = "INGEST_SPOOL_MAX_BYTES", default_value_t = 1024 * 1024 * 1024)]
    pub spool_max_bytes: u64,
    /// Bytes the dead-letter file may hold (at least 65536); rows ClickHouse refuses for good
    /// past it are held in memory, counted against the buffer, until the file is moved away.
    #[arg(long, env = "INGEST_DEAD_LETTER_MAX_BYTES", default_value_t = 1024 * 1024 * 1024)]
    pub dead_letter_max_bytes: u64,
    /// Directory for the spool (and write-ahead log) and the dead-letter file.
    #[arg(long, env = "INGEST_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// `buffer`: 202 once in memory; `wal`: 202 once on disk (fsync).
    #[arg(long, env = "INGEST_DURABILITY", default_value = "buffer")]
    pub durability: String,
    /// How long a stop may take to finish requests and flush (milliseconds).
    #[arg(long, env = "INGEST_SHUTDOWN_TIMEOUT_MS", default_value_t = 10_000)]
    pub shutdown_timeout_ms: u64,
    /// On SIGTERM/SIGINT, how long `/ready` answers 503 while everything else goes on as
    /// before, so that load balancers stop sending new connections before the drain refuses
    /// them (milliseconds; 0, the default, drains at once).
    #[arg(long, env = "INGEST_DRAIN_DELAY_MS", default_value_t = 0)]
    pub drain_delay_ms: u64,
    /// Every API key starts with this.
    #[arg(long, env = "INGEST_KEY_PREFIX", default_value = "ti_")]
    pub key_prefix: String,
    /// How often the key set is reloaded from ClickHouse (milliseconds, at most 1000).
    #[arg(long, env = "INGEST_KEY_REFRESH_MS", default_value_t = 500)]
    pub key_refresh_ms: u64,
    /// Price overrides (own format, genai-prices v2 data.json, OpenRouter models JSON or LiteLLM
    /// JSON).
    #[arg(long, env = "INGEST_PRICING_FILE")]
    pub pricing_file: Option<PathBuf>,
    /// A connection idle this long between requests is closed (milliseconds).
    #[arg(long, env = "INGEST_IDLE_TIMEOUT_MS", default_value_t = 60_000)]
    pub idle_timeout_ms: u64,
    /// The whole header block must arrive within this time (milliseconds).
    #[arg(long, env = "INGEST_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// Least average rate of a request body in bytes per second once the grace period has
    /// passed; a slower body is answered 408 and the connection closed. 0 turns it off.
    #[arg(
        long,
        env = "INGEST_MIN_BODY_RATE_BYTES_PER_SEC",
        default_value_t = 1024
    )]
    pub min_body_rate_bytes_per_sec: u64,
    /// How long a body may arrive below the minimum rate before it is held to it (milliseconds).
    #[arg(long, env = "INGEST_BODY_RATE_GRACE_MS", default_value_t = 10_000)]
    pub body_rate_grace_ms: u64,
    /// Open connections per worker; past it new connections are closed at once.
    #[arg(
        long,
        env = "INGEST_MAX_CONNECTIONS_PER_WORKER",
        default_value_t = 10_000
    )]
    pub max_connections_per_worker: usize,
    /// Force the legacy (epoll) driver even where io_uring works.
    #[arg(long, env = "INGEST_FORCE_LEGACY_DRIVER", default_value_t = false)]
    pub force_legacy_driver: bool,
    /// Pin worker N to core N (`true` or `false`). Pinned, a worker keeps its caches: on the
    /// 2-vCPU perf VM, cores shared with ClickHouse and the clients, 22 instead of 26 µs of
    /// worker CPU per small request at 8,000 requests/s (`perf/RESULTS.md`).
    #[arg(long, env = "INGEST_PIN_WORKERS", default_value_t = true, action = clap::ArgAction::Set)]
    pub pin_workers: bool,
    /// How often monthly usage is re-counted in ClickHouse (milliseconds).
    #[arg(long, env = "INGEST_QUOTA_SYNC_MS", default_value_t = 5_000)]
    pub quota_sync_ms: u64,
    /// `/ready` answers 503 once the key set could not be refreshed from ClickHouse for this
    /// long (milliseconds).
    #[arg(long, env = "INGEST_READY_STORE_TIMEOUT_MS", default_value_t = 10_000)]
    pub ready_store_timeout_ms: u64,
    /// Fleet-wide rate limits: a Redis URL (redis://host:port) the replicas lease budget from.
    #[arg(long, env = "INGEST_REDIS_URL")]
    pub redis_url: Option<String>,
    /// How often each key's leased budget is topped up from Redis (milliseconds).
    #[arg(long, env = "INGEST_REDIS_SYNC_MS", default_value_t = 100)]
    pub redis_sync_ms: u64,
    /// Test only: shifts the wall clock (row timestamps, quota month) by this many ms.
    #[arg(
        long,
        env = "INGEST_TEST_CLOCK_OFFSET_MS",
        default_value_t = 0,
        allow_negative_numbers = true,
        hide = true
    )]
    pub test_clock_offset_ms: i64,
    #[command(flatten)]
    pub plans: PlanArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// When `/ingest` answers `202` (`INGEST_DURABILITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Once the rows are in the memory buffer: a crash loses what was not yet flushed or
    /// spooled.
    Buffer,
    /// Once the rows are in the write-ahead log on disk (fsynced): a crash loses nothing
    /// answered `202`.
    Wal,
}

/// The checked configuration of a running server.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// The admin listener: `/metrics`, `/health`, `/ready`.
    pub admin: SocketAddr,
    pub workers: usize,
    pub limits: Limits,
    /// `INGEST_OTLP_MAX_BODY_BYTES`: the body cap of `/v1/traces` (`limits.max_body_bytes` is
    /// `/ingest`'s).
    pub otlp_max_body_bytes: u64,
    pub flush_interval: Duration,
    pub flush_max_rows: usize,
    pub flush_max_bytes: u64,
    /// `INGEST_FLUSH_NICE`: nice levels the flush thread runs below the rest of the process.
    pub flush_nice: u8,
    pub buffer_max_rows: u64,
    pub buffer_max_bytes: u64,
    pub spool_max_bytes: u64,
    pub dead_letter_max_bytes: u64,
    pub data_dir: PathBuf,
    pub durability: Durability,
    pub shutdown_timeout: Duration,
    /// `INGEST_DRAIN_DELAY_MS`: `/ready` false before the drain begins.
    pub drain_delay: Duration,
    pub key_prefix: String,
    pub key_refresh: Duration,
    pub pricing_file: Option<PathBuf>,
    pub idle_timeout: Duration,
    pub header_timeout: Duration,
    /// Bytes per second a body must average after `body_rate_grace`; 0 = no minimum.
    pub min_body_rate: u64,
    pub body_rate_grace: Duration,
    pub max_connections_per_worker: usize,
    pub force_legacy_driver: bool,
    pub pin_workers: bool,
    pub clickhouse_url: String,
    pub clickhouse_database: String,
    /// `INGEST_CLICKHOUSE_CLUSTER` (cluster mode).
    pub clickhouse_cluster: Option<String>,
    /// `INGEST_REDIS_URL`: fleet-wide rate limits when set.
    pub redis_url: Option<String>,
    /// `INGEST_REDIS_SYNC_MS`.
    pub redis_sync: Duration,
    /// Plans, the default plan and the default rate.
    pub plans: Plans,
    pub quota_sync: Duration,
    pub ready_store_timeout: Duration,
    /// Test-only wall-clock shift; 0 in production.
    pub clock_offset_ms: i64,
}

impl Config {
    /// The most one batch may take (`ingest::BatchLimit`): of the memory buffer, and in `wal`
    /// mode a quarter of the spool too, where every batch is a record first. (A batch whose
    /// record alone passed `INGEST_SPOOL_MAX_BYTES` was refused `503 buffer_full` on every
    /// try, however empty the spool.)
    pub fn batch_limit(&self) -> BatchLimit {
        let limit = BatchLimit::of_buffer(self.buffer_max_rows, self.buffer_max_bytes);
        match self.durability {
            Durability::Wal => BatchLimit {
                bytes: limit.bytes.min(self.spool_max_bytes / 4),
                ..limit
            },
            Durability::Buffer => limit,
        }
    }

    /// The body cap, `/ingest`'s or `/v1/traces`'s (the larger), whose bodies' rows may not fit
    /// in one batch (`batch_limit`): rows take from about 1.25 to 5 times their body, so a
    /// batch limit under twice the cap refuses bodies near it (`413 batch_too_large`). Start-up
    /// warns with the setting and its value.
    pub fn body_cap_past_batch_limit(&self) -> Option<(&'static str, u64)> {
        let cap = if self.otlp_max_body_bytes > self.limits.max_body_bytes {
            ("INGEST_OTLP_MAX_BODY_BYTES", self.otlp_max_body_bytes)
        } else {
            ("INGEST_MAX_BODY_BYTES", self.limits.max_body_bytes)
        };
        (self.batch_limit().bytes < cap.1.saturating_mul(2)).then_some(cap)
    }
}

impl ServeArgs {
    /// Checks every value and builds the `Config`; the error names the setting.
    pub fn resolve(&self) -> Result<Config, String> {
        self.store.check()?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = workers(self.workers, cores)?;
        let listen = SocketAddr::new(self.host, self.port);
        if listeners_overlap(listen, self.admin_addr) {
            let every = if listen.ip().to_canonical() == self.admin_addr.ip().to_canonical() {
                ""
            } else {
                ", and one listens on every address"
            };
            return Err(format!(
                "INGEST_ADMIN_ADDR {} overlaps the public listener INGEST_HOST:INGEST_PORT \
                 {listen} (both on port {}{every}): give the admin listener another port",
                self.admin_addr,
                listen.port()
            ));
        }
        if self.max_body_bytes == 0 || self.max_body_bytes > 1 << 30 {
            return Err(format!(
                "INGEST_MAX_BODY_BYTES must be 1..=1073741824, got {}",
                self.max_body_bytes
            ));
        }
        if self.otlp_max_body_bytes == 0 || self.otlp_max_body_bytes > 1 << 30 {
            return Err(format!(
                "INGEST_OTLP_MAX_BODY_BYTES must be 1..=1073741824, got {}",
                self.otlp_max_body_bytes
            ));
        }
        if !(512..=1 << 20).contains(&self.max_header_bytes) {
            return Err(format!(
                "INGEST_MAX_HEADER_BYTES must be 512..=1048576, got {}",
                self.max_header_bytes
            ));
        }
        if !(4..=128).contains(&self.max_headers) {
            return Err(format!(
                "INGEST_MAX_HEADERS must be 4..=128, got {}",
                self.max_headers
            ));
        }
        if self.flush_interval_ms == 0 {
            return Err("INGEST_FLUSH_INTERVAL_MS must be at least 1, got 0".into());
        }
        if self.flush_nice > 19 {
            return Err(format!(
                "INGEST_FLUSH_NICE must be 0..=19 (nice levels below the workers), got {}",
                self.flush_nice
            ));
        }
        // clickhouse-rs 1.1.0-alpha.1 encodes array columns wrongly past 1,048,576 rows in one
        // insert (perf/RESULTS.md, "Known limit found on the way"), so stay well below it.
        if !(1..=1_000_000).contains(&self.flush_max_rows) {
            return Err(format!(
                "INGEST_FLUSH_MAX_ROWS must be 1..=1000000, got {}",
                self.flush_max_rows
            ));
        }
        if self.buffer_max_rows < self.flush_max_rows as u64 {
            return Err(format!(
                "INGEST_BUFFER_MAX_ROWS ({}) must be at least INGEST_FLUSH_MAX_ROWS ({})",
                self.buffer_max_rows, self.flush_max_rows
            ));
        }
        const MIN_BYTES: u64 = 64 * 1024;
        if self.buffer_max_bytes < MIN_BYTES {
            return Err(format!(
                "INGEST_BUFFER_MAX_BYTES must be at least {MIN_BYTES} (64 KiB), got {}",
                self.buffer_max_bytes
            ));
        }
        if self.flush_max_bytes < MIN_BYTES {
            return Err(format!(
                "INGEST_FLUSH_MAX_BYTES must be at least {MIN_BYTES} (64 KiB), got {}",
                self.flush_max_bytes
            ));
        }
        if self.spool_max_bytes < MIN_BYTES {
            return Err(format!(
                "INGEST_SPOOL_MAX_BYTES must be at least {MIN_BYTES} (64 KiB), got {}",
                self.spool_max_bytes
            ));
        }
        if self.dead_letter_max_bytes < MIN_BYTES {
            return Err(format!(
                "INGEST_DEAD_LETTER_MAX_BYTES must be at least {MIN_BYTES} (64 KiB), got {}",
                self.dead_letter_max_bytes
            ));
        }
        if self.data_dir.as_os_str().is_empty() {
            return Err("INGEST_DATA_DIR must name a directory (it is created if missing)".into());
        }
        if self.data_dir.exists() && !self.data_dir.is_dir() {
            return Err(format!(
                "INGEST_DATA_DIR {} exists and is not a directory",
                self.data_dir.display()
            ));
        }
        let durability = match self.durability.as_str() {
            "buffer" => Durability::Buffer,
            "wal" => Durability::Wal,
            other => {
                return Err(format!(
                    "INGEST_DURABILITY must be \"buffer\" (202 once in memory) or \"wal\" (202 once fsynced to disk), got {other:?}"
                ))
            }
        };
        check_key_prefix(&self.key_prefix).map_err(|e| format!("INGEST_KEY_PREFIX {e}"))?;
        if !(10..=1000).contains(&self.key_refresh_ms) {
            return Err(format!(
                "INGEST_KEY_REFRESH_MS must be 10..=1000 (revocations must apply within 1 s), got {}",
                self.key_refresh_ms
            ));
        }
        if let Some(p) = &self.pricing_file {
            if !p.is_file() {
                return Err(format!(
                    "INGEST_PRICING_FILE {} does not exist or is not a file",
                    p.display()
                ));
            }
        }
        for (name, v) in [
            ("INGEST_IDLE_TIMEOUT_MS", self.idle_timeout_ms),
            ("INGEST_HEADER_TIMEOUT_MS", self.header_timeout_ms),
            ("INGEST_SHUTDOWN_TIMEOUT_MS", self.shutdown_timeout_ms),
        ] {
            if v == 0 {
                return Err(format!("{name} must be at least 1, got 0"));
            }
        }
        // Connection deadlines go to monoio's timer, which panics on a deadline u64::MAX ms
        // away: bound them well inside it.
        const DAY_MS: u64 = 86_400_000;
        for (name, v) in [
            ("INGEST_IDLE_TIMEOUT_MS", self.idle_timeout_ms),
            ("INGEST_HEADER_TIMEOUT_MS", self.header_timeout_ms),
            ("INGEST_BODY_RATE_GRACE_MS", self.body_rate_grace_ms),
        ] {
            if v > DAY_MS {
                return Err(format!(
                    "{name} must be at most {DAY_MS} (one day), got {v}"
                ));
            }
        }
        // A deploy waits for the stop: a typo of a few more digits should not hold it for
        // days. Ten minutes is more than any load balancer's health-check interval.
        if self.drain_delay_ms > 600_000 {
            return Err(format!(
                "INGEST_DRAIN_DELAY_MS must be at most 600000 (ten minutes), got {}",
                self.drain_delay_ms
            ));
        }
        if self.min_body_rate_bytes_per_sec > 1 << 30 {
            return Err(format!(
                "INGEST_MIN_BODY_RATE_BYTES_PER_SEC must be 0 (off) to 1073741824, got {}",
                self.min_body_rate_bytes_per_sec
            ));
        }
        if self.min_body_rate_bytes_per_sec > 0 && self.body_rate_grace_ms == 0 {
            return Err(
                "INGEST_BODY_RATE_GRACE_MS must be at least 1 while INGEST_MIN_BODY_RATE_BYTES_PER_SEC is set, got 0"
                    .into(),
            );
        }
        if self.max_connections_per_worker == 0 {
            return Err("INGEST_MAX_CONNECTIONS_PER_WORKER must be at least 1, got 0".into());
        }
        let plans = self.plans.resolve()?;
        if !(100..=600_000).contains(&self.quota_sync_ms) {
            return Err(format!(
                "INGEST_QUOTA_SYNC_MS must be 100..=600000, got {}",
                self.quota_sync_ms
            ));
        }
        if self.ready_store_timeout_ms < 2 * self.key_refresh_ms {
            return Err(format!(
                "INGEST_READY_STORE_TIMEOUT_MS ({}) must be at least twice INGEST_KEY_REFRESH_MS ({}), \
                 or a single slow refresh would make the instance unready",
                self.ready_store_timeout_ms, self.key_refresh_ms
            ));
        }
        if let Some(url) = &self.redis_url {
            // This build's Redis client has no TLS: `rediss://` would be refused below as if
            // it were not a URL at all.
            if url.starts_with("rediss://") {
                return Err(format!(
                    "INGEST_REDIS_URL: rediss:// (TLS) is not supported by this build; use \
                     redis:// (on a private network, or through a TLS tunnel), got {:?}",
                    redact_password(url)
                ));
            }
            if !url.starts_with("redis://") || redis::Client::open(url.as_str()).is_err() {
                return Err(format!(
                    "INGEST_REDIS_URL must be a URL like redis://127.0.0.1:6379, got {:?}",
                    redact_password(url)
                ));
            }
        }
        if !(10..=1000).contains(&self.redis_sync_ms) {
            return Err(format!(
                "INGEST_REDIS_SYNC_MS must be 10..=1000, got {}",
                self.redis_sync_ms
            ));
        }
        // A century either way is more than any test needs and keeps the arithmetic far from
        // overflow.
        const CENTURY_MS: i64 = 100 * 366 * 86_400_000;
        if !(-CENTURY_MS..=CENTURY_MS).contains(&self.test_clock_offset_ms) {
            return Err(format!(
                "INGEST_TEST_CLOCK_OFFSET_MS must be within 100 years ({CENTURY_MS} ms), got {}",
                self.test_clock_offset_ms
            ));
        }
        Ok(Config {
            listen,
            admin: self.admin_addr,
            workers,
            limits: Limits {
                max_head_bytes: self.max_header_bytes,
                max_headers: self.max_headers,
                max_body_bytes: self.max_body_bytes,
            },
            otlp_max_body_bytes: self.otlp_max_body_bytes,
            flush_interval: Duration::from_millis(self.flush_interval_ms),
            flush_max_rows: self.flush_max_rows,
            // An insert takes at most a quarter of the buffer (`room() / 2`): made due only at
            // a larger mark, it would come after memory passed its room (half the buffer), where
            // the newest batches are spooled, and under load rows would go through the disk.
            flush_max_bytes: self.flush_max_bytes.min(self.buffer_max_bytes / 4),
            flush_nice: self.flush_nice,
            buffer_max_rows: self.buffer_max_rows,
            buffer_max_bytes: self.buffer_max_bytes,
            spool_max_bytes: self.spool_max_bytes,
            dead_letter_max_bytes: self.dead_letter_max_bytes,
            data_dir: self.data_dir.clone(),
            durability,
            shutdown_timeout: Duration::from_millis(self.shutdown_timeout_ms),
            drain_delay: Duration::from_millis(self.drain_delay_ms),
            key_prefix: self.key_prefix.clone(),
            key_refresh: Duration::from_millis(self.key_refresh_ms),
            pricing_file: self.pricing_file.clone(),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            min_body_rate: self.min_body_rate_bytes_per_sec,
            body_rate_grace: Duration::from_millis(self.body_rate_grace_ms),
            max_connections_per_worker: self.max_connections_per_worker,
            force_legacy_driver: self.force_legacy_driver,
            pin_workers: self.pin_workers,
            clickhouse_url: self.store.clickhouse_url.clone(),
            clickhouse_database: self.store.clickhouse_database.clone(),
            clickhouse_cluster: self.store.clickhouse_cluster.clone(),
            redis_url: self.redis_url.clone(),
            redis_sync: Duration::from_millis(self.redis_sync_ms),
            plans,
            quota_sync: Duration::from_millis(self.quota_sync_ms),
            ready_store_timeout: Duration::from_millis(self.ready_store_timeout_ms),
            clock_offset_ms: self.test_clock_offset_ms,
        })
    }
}

/// The most worker threads (`INGEST_WORKERS`).
const MAX_WORKERS: usize = 1024;

/// `INGEST_WORKERS` (`setting`), checked, or one worker per core (at most `MAX_WORKERS`) when
/// it is unset.
fn workers(setting: Option<usize>, cores: usize) -> Result<usize, String> {
    let workers = setting.unwrap_or(cores.min(MAX_WORKERS));
    if !(1..=MAX_WORKERS).contains(&workers) {
        return Err(format!(
            "INGEST_WORKERS must be 1..={MAX_WORKERS}, got {workers}"
        ));
    }
    Ok(workers)
}

/// Whether listeners on `a` and `b` would take the same port on a shared address, which the
/// second bind is refused: the same address, or one that listens on every address covering
/// the other (`::` covers IPv4 too, Linux's dual-stack default; `0.0.0.0` covers no IPv6
/// address). Port 0 picks a free port: never the other's.
fn listeners_overlap(a: SocketAddr, b: SocketAddr) -> bool {
    if a.port() == 0 || a.port() != b.port() {
        return false;
    }
    let (x, y) = (a.ip().to_canonical(), b.ip().to_canonical());
    let covers = |x: IpAddr, y: IpAddr| x.is_unspecified() && (x.is_ipv6() || y.is_ipv4());
    x == y || covers(x, y) || covers(y, x)
}

/// The rule for a key prefix (`INGEST_KEY_PREFIX`, `keys create --prefix`): 1 to 16 of
/// `[A-Za-z0-9_-]`, so a key is ASCII and its display prefix (its first 12 characters) a
/// byte slice.
pub fn check_key_prefix(prefix: &str) -> Result<(), String> {
    if prefix.is_empty()
        || prefix.len() > 16
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!("must be 1 to 16 of [A-Za-z0-9_-], got {prefix:?}"));
    }
    Ok(())
}

/// `url` (or several, comma-separated) with the password of each one's user info replaced by
/// `***`, for messages: a setting's value is echoed when it is refused, and these go to the
/// log. It need not parse (a URL that does not is what such a message is about): whatever lies
/// between the first `:` after the scheme and the last `@` is hidden. A comma starts another
/// URL only where a scheme follows it: a password may hold one.
pub fn redact_password(url: &str) -> String {
    let mut urls: Vec<&str> = Vec::new();
    let mut from = 0;
    for (at, _) in url.match_indices(',') {
        let next = url[at + 1..].trim_start();
        let scheme = next.find("://").map(|i| &next[..i]);
        if scheme.is_some_and(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        }) {
            urls.push(&url[from..at]);
            from = at + 1;
        }
    }
    urls.push(&url[from..]);
    urls.into_iter()
        .map(|one| {
            let start = one.find("://").map_or(0, |i| i + 3);
            let rest = &one[start..];
            match rest
                .rfind('@')
                .and_then(|at| Some((rest[..at].find(':')?, at)))
            {
                Some((colon, at)) => {
                    format!("{}{}:***{}", &one[..start], &rest[..colon], &rest[at..])
                }
                None => one.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
