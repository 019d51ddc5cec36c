//! The flush thread: accepted batches in bounded memory, the excess in the spool, written to
//! ClickHouse in large inserts.
//!
//! One named thread (`flush`) with its own current-thread tokio runtime; this file is its loop
//! (`Flusher::run`: wait for batches or the next due insert, `flush`, and at the end
//! `shutdown`). The jobs around it: `intake.rs` (taking batches off the channel), `queue.rs`
//! (what waits, when an insert is due, what it takes), `spill.rs` (memory bound, spool),
//! `retry.rs` (what a failed insert leads to), `shards.rs` (cluster mode: what a failed insert
//! leaves to split or dead-letter once some shards wrote their part). Invariants:
//!
//! - an insert starts when `max_rows` rows or `max_bytes` wait or `interval` has passed since
//!   the oldest waiting row arrived; under steady load that is one insert per interval;
//! - memory stays under the `MemoryBudget`, the spool under `INGEST_SPOOL_MAX_BYTES`; past
//!   both, workers answer `503`;
//! - no row is dropped silently: rows are inserted, dead-lettered with ClickHouse's error, or
//!   kept (memory, then spool) and retried; a batch is confirmed in the spool once all its rows
//!   are inserted or dead-lettered;
//! - a replayed or retried row is byte for byte the row of the first attempt, so the
//!   `ReplacingMergeTree` shows it once after `FINAL`;
//! - in cluster mode a failed insert is retried with the same pieces (`State::frozen`) until
//!   every shard took them, so each shard gets the same block again and its replicated table
//!   drops the copy it may already hold; when it is split or given up instead, only the rows
//!   of the shards that did not take them are.

mod intake;
mod intent;
mod queue;
mod retry;
mod shards;
mod spill;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use intake::{Input, Intake, Nudge, Rows};
use queue::{Entry, Piece};

use super::budget::MemoryBudget;
use super::clickhouse::{InsertError, Retry, RowRun, ShardsDone, Store, StoreError};
use super::deadletter::DeadLetters;
use super::spool::Spool;
use super::stats::FlushStats;
use crate::admission::UsageTicket;
use crate::row::RowBatch;

/// While an insert runs, how often the thread takes new batches off the channel.
const INTAKE_POLL: Duration = Duration::from_millis(5);

/// Everything the flush thread needs, built once at start-up.
#[derive(Clone)]
pub struct FlushConfig {
    /// ClickHouse native-protocol URL, e.g. `tcp://127.0.0.1:9000`.
    pub url: String,
    /// Database holding the `spans` table.
    pub database: String,
    /// `INGEST_CLICKHOUSE_CLUSTER`: rows are routed by shard into replicated tables.
    pub cluster: Option<String>,
    /// Longest time a row waits before its flush starts (`INGEST_FLUSH_INTERVAL_MS`).
    pub interval: Duration,
    /// Rows waiting that trigger a flush at once, and the largest insert (`INGEST_FLUSH_MAX_ROWS`).
    pub max_rows: usize,
    /// Bytes held that trigger a flush at once, and the largest insert in bytes (at most half
    /// the memory room) (`INGEST_FLUSH_MAX_BYTES`).
    pub max_bytes: u64,
    /// After the channel closes, how long the thread may take: a third inserting, the rest
    /// for spooling what is left (which takes time in proportion to the memory bound).
    pub shutdown_timeout: Duration,
    /// When the stop began (set by `serve` as it starts the drain; never, for tests and
    /// library use that only close the channel): inserts end two thirds of `shutdown_timeout`
    /// after it at the latest, so that the watchdog, `shutdown_timeout` and 500 ms after it,
    /// leaves the spooling its third even when the workers took their whole third and more.
    pub stop_began: Arc<OnceLock<Instant>>,
    /// First retry delay after a transient failure.
    pub retry_min: Duration,
    /// Cap of the exponential retry delay.
    pub retry_max: Duration,
    /// Rows and bytes in memory, shared with the workers: they reserve, this thread spools
    /// before the bounds are reached and releases what it wrote.
    pub budget: Arc<MemoryBudget>,
    /// Insert attempts on the same rows refused with an unknown error code before splitting.
    pub max_unknown_attempts: u32,
    /// Where refused rows go (`INGEST_DATA_DIR/deadletter`).
    pub dead_letter_dir: PathBuf,
    /// The dead-letter file's bound: past it refused rows are held as when it cannot be
    /// written (`INGEST_DEAD_LETTER_MAX_BYTES`).
    pub dead_letter_max_bytes: u64,
    /// Counters for the metrics endpoint; the caller keeps a clone.
    pub stats: Arc<FlushStats>,
    /// Nice levels the thread lowers its own priority by when it starts (`INGEST_FLUSH_NICE`).
    pub nice: u8,
}

/// The server's `INGEST_FLUSH_NICE`: level with the workers. With fewer workers than cores,
/// below them the flush thread no longer takes a worker's core for milliseconds when an
/// insert is due, which cuts the tail latency of requests at moderate rates, but under
/// saturation it gets too small a share to keep pace with a stream of small requests; with a
/// worker per core (the default) it changed neither (perf/RESULTS.md, "The flush thread's
/// priority"). An ingest service's clients (background exporters) gain less from the tail
/// than they lose from the capacity.
pub const DEFAULT_NICE: u8 = 0;

impl FlushConfig {
    /// A configuration for tests and library use: flush every second or at 10,000 rows or
    /// 128 MiB, retry 100 ms .. 5 s, 10 s to drain at shutdown, 256 MiB / 1 M rows of memory.
    /// (The server's own defaults are `config.rs`'s.)
    pub fn new(url: impl Into<String>, database: impl Into<String>) -> FlushConfig {
        FlushConfig {
            url: url.into(),
            database: database.into(),
            cluster: None,
            interval: Duration::from_millis(1000),
            max_rows: 10_000,
            max_bytes: 128 << 20,
            shutdown_timeout: Duration::from_secs(10),
            stop_began: Arc::default(),
            retry_min: Duration::from_millis(100),
            retry_max: Duration::from_secs(5),
            budget: Arc::new(MemoryBudget::new(1_000_000, 256 << 20)),
            max_unknown_attempts: 8,
            dead_letter_dir: PathBuf::from("data/deadletter"),
            dead_letter_max_bytes: u64::MAX,
            stats: Arc::default(),
            nice: 0,
        }
    }
}

impl fmt::Debug for FlushConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password.
        let url = match url::Url::parse(&self.url) {
            Ok(mut u) if u.password().is_some() => {
                let _ = u.set_password(Some("***"));
                u.to_string()
            }
            _ => self.url.clone(),
        };
        f.debug_struct("FlushConfig")
            .field("url", &url)
            .field("database", &self.database)
            .field("cluster", &self.cluster)
            .field("interval", &self.interval)
            .field("max_rows", &self.max_rows)
            .field("max_bytes", &self.max_bytes)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("retry_min", &self.retry_min)
            .field("retry_max", &self.retry_max)
            .field("buffer_max_rows", &self.budget.max_rows())
            .field("buffer_max_bytes", &self.budget.max_bytes())
            .field("dead_letter_dir", &self.dead_letter_dir)
            .field("dead_letter_max_bytes", &self.dead_letter_max_bytes)
            .field("nice", &self.nice)
            .finish_non_exhaustive()
    }
}

/// What the thread did, returned when it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushReport {
    pub rows_flushed: u64,
    /// Rows ClickHouse refused for good; each is in the dead-letter file.
    pub rows_rejected: u64,
    /// Rows left in the spool for the next start.
    pub rows_spooled: u64,
    /// Rows kept nowhere (a disk failure); each was logged at error level.
    pub rows_lost: u64,
    /// An fsync of the spool failed during the stop: the rows it holds survive the process
    /// but may not survive a power cut or a host restart.
    pub spool_sync_failed: bool,
}

/// Starts the flush thread. Fails only on a bad URL or database name, or if the runtime cannot
/// be built: nothing is received before the store and runtime exist.
pub fn spawn(
    cfg: FlushConfig,
    input: Input,
    spool: Spool,
) -> Result<JoinHandle<FlushReport>, StoreError> {
    let store = Store::new(&cfg.url, &cfg.database)?.in_cluster(cfg.cluster.as_deref())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoreError {
            code: None,
            message: format!("cannot build the flush thread's runtime: {e}"),
        })?;
    let handle = std::thread::Builder::new()
        .name("flush".into())
        .spawn(move || {
            if let Err(e) = lower_priority(cfg.nice) {
                tracing::warn!(
                    nice = cfg.nice,
                    "cannot lower the flush thread's priority ({e}); it runs at the workers'"
                );
            }
            Flusher::new(cfg, store, rt, input, spool).run()
        })
        .map_err(|e| StoreError {
            code: None,
            message: format!("cannot start the flush thread: {e}"),
        })?;
    Ok(handle)
}

/// Lowers the calling thread's priority by `levels` nice levels (at most to 19). On Linux a
/// thread's nice value is its own (`setpriority(2)` on its thread id), so the workers keep
/// theirs. Going back up needs privileges, so this is done once, at the start.
fn lower_priority(levels: u8) -> std::io::Result<()> {
    if levels == 0 {
        return Ok(());
    }
    // SAFETY: gettid(2) has no arguments and cannot fail.
    let tid = unsafe { libc::gettid() } as libc::id_t;
    // getpriority(2) may return -1 as a value, so errno tells a failure apart.
    // SAFETY: errno is this thread's; getpriority and setpriority only read their arguments.
    let now = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, tid)
    };
    if now == -1 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(0) {
            return Err(err);
        }
    }
    let target = (now + i32::from(levels)).min(19);
    // SAFETY: as above.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, target) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

struct Flusher {
    store: Store,
    /// Entered only for one insert or migration at a time.
    rt: tokio::runtime::Runtime,
    st: State,
}

/// Everything but the store and runtime, so that an insert borrowing the store can run while
/// intake mutates this.
struct State {
    cfg: FlushConfig,
    input: Input,
    /// Every sender is gone.
    closed: bool,
    /// Until when inserts may go on once intake has closed (a third of the shutdown timeout
    /// after it closed); then what is left is spooled.
    insert_until: Option<Instant>,
    /// Shutting down: the spool is not read back any more.
    stopping: bool,
    /// Oldest first.
    queue: VecDeque<Piece>,
    queued_rows: usize,
    /// Head pieces in the insert that is running: never moved to the spool.
    inflight: usize,
    /// Cluster mode, after a failed insert: the head pieces it had, to be retried exactly so
    /// (same rows, same order, so the same block per shard), and the shards that took them.
    frozen: Option<(usize, ShardsDone)>,
    /// Cluster mode: earlier runs' unfinished inserts, each until its records are read back
    /// and it is replayed (`intent.rs`), and the records read so far.
    intents: Vec<intent::Intent>,
    held: Vec<Entry>,
    /// Cluster mode: the records of the insert at the head of the queue, in the intent file
    /// with `intents` until it is written, bisected or given up.
    current_intent: Option<intent::Intent>,
    /// `spool/insert.intent` exists.
    intent_on_disk: bool,
    spool: Spool,
    /// Quota tickets of batches this process accepted that wait only in the spool, by record
    /// (segment, index): their spans stay counted as buffered, not yet in ClickHouse, until the
    /// record is confirmed (see `admission::quota`).
    tickets: HashMap<(u64, u32), UsageTicket>,
    dead: DeadLetters,
    /// Refused rows only in memory that the dead-letter file could not take, with their error:
    /// held (still counted in the memory budget) until it can, spooled at shutdown.
    undelivered: Vec<(Vec<Piece>, InsertError)>,
    /// What `undelivered` keeps counted in the memory budget.
    held_load: retry::HeldLoad,
    /// Since when rows are held, and when to try the dead-letter file again.
    undelivered_at: Option<Instant>,
    undelivered_retry_at: Option<Instant>,
    /// Failed tries since rows are held, for the back-off.
    undelivered_tries: u32,
    /// Consecutive transient failures, for the backoff.
    attempt: u32,
    /// No insert before this instant (backing off after a transient failure).
    retry_at: Option<Instant>,
    /// A failure said the table or a column is missing: migrate before the next insert.
    needs_migrate: bool,
    /// The last failure got no answer from ClickHouse (refused, unreachable, timed out).
    unreachable: bool,
    /// Consecutive failures of the head insert with a capped class (unknown code, missing
    /// table after migrating).
    capped_failures: u32,
    /// While isolating refused rows (`Piece::suspect`): some rows of the refused insert went
    /// in, or one was refused alone, so the refusal is the rows' and an unknown error splits
    /// at once (`retry.rs`).
    rows_at_fault: bool,
    /// After ClickHouse had not the memory for an insert: the most rows an insert takes, and
    /// until when (`retry.rs`, `State::max_insert_rows`).
    smaller: Option<(usize, Instant)>,
    /// Jitter source (splitmix64 state).
    rng: u64,
    report: FlushReport,
    /// The last poll stopped at `INTAKE_BOUND` with more waiting: take it in without sleeping.
    backlogged: bool,
}

/// The earlier of two optional instants.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn drive<T>(
    rt: &tokio::runtime::Runtime,
    st: &mut State,
    fut: impl Future<Output = T>,
    deadline: Option<Instant>,
) -> Result<T, InsertError> {
    rt.block_on(async {
        let bounded = async {
            match deadline {
                None => Ok(fut.await),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    tokio::time::timeout(left, fut)
                        .await
                        .map_err(|_| InsertError::timed_out())
                }
            }
        };
        tokio::pin!(bounded);
        // Once intake closes (shutdown), an insert gets a deadline if it had none: inserting
        // stops a third of the shutdown timeout after intake closed; then its rows are spooled.
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
        let mut stop_by: Option<tokio::time::Instant> = None;
        loop {
            if stop_by.is_none() && deadline.is_none() {
                stop_by = st.insert_until.map(tokio::time::Instant::from_std);
            }
            let give_up = stop_by.unwrap_or(far);
            tokio::select! {
                biased;
                r = &mut bounded => return r,
                _ = tokio::time::sleep(INTAKE_POLL), if !st.closed => {
                    st.poll_intake();
                }
                _ = tokio::time::sleep_until(give_up), if stop_by.is_some() => {
                    return Err(InsertError::timed_out());
                }
            }
        }
    })
}

impl Flusher {
    fn new(
        cfg: FlushConfig,
        store: Store,
        rt: tokio::runtime::Runtime,
        input: Input,
        spool: Spool,
    ) -> Flusher {
        let seed = crate::clock::now_us() | 1;
        let mut flusher = Flusher {
            store,
            rt,
            st: State {
                dead: DeadLetters::new(&cfg.dead_letter_dir)
                    .with_max_bytes(cfg.dead_letter_max_bytes),
                undelivered: Vec::new(),
                held_load: retry::HeldLoad::default(),
                undelivered_at: None,
                undelivered_retry_at: None,
                undelivered_tries: 0,
                cfg,
                input,
                closed: false,
                insert_until: None,
                stopping: false,
                queue: VecDeque::new(),
                queued_rows: 0,
                inflight: 0,
                frozen: None,
                intents: Vec::new(),
                held: Vec::new(),
                current_intent: None,
                intent_on_disk: false,
                spool,
                tickets: HashMap::new(),
                attempt: 0,
                retry_at: None,
                needs_migrate: false,
                unreachable: false,
                capped_failures: 0,
                rows_at_fault: false,
                smaller: None,
                rng: seed,
                report: FlushReport::default(),
                backlogged: false,
            },
        };
        if flusher.store.replicated() {
            flusher.st.load_intent();
        }
        flusher
    }

    fn run(mut self) -> FlushReport {
        self.st.input.listen();
        while !self.st.closed {
            // On every wake-up: memory past its room is one reason a sender rang.
            self.st.relieve();
            let dead_letters = self.st.retry_dead_letters(Some(Instant::now()));
            match self.st.due() {
                // (`due` may say "now" by reading the clock itself: read it after.)
                Some(at) if at <= Instant::now() => self.flush(None),
                at => self.st.receive(earliest(at, dead_letters)),
            }
        }
        self.shutdown()
    }

    /// Writes everything that was waiting when it began (reading the spool back as memory
    /// allows), insert by insert, until done or a transient failure. In normal operation it
    /// goes on past that only while the next insert is due anyway (`max_rows` waiting, or a
    /// spool backlog) or is large enough (`worth_chaining`): chaining inserts of whatever
    /// arrived during the last one made hundreds of small inserts a minute under steady load,
    /// and ClickHouse spent most of its CPU merging their parts. The shutdown (`deadline`)
    /// writes everything.
    fn flush(&mut self, deadline: Option<Instant>) {
        let began = Instant::now();
        loop {
            // Intake closed during an insert: the shutdown takes over, with its deadline.
            if deadline.is_none() && self.st.closed {
                return;
            }
            self.st.refill();
            let Some(front) = self.st.queue.front() else {
                return;
            };
            if deadline.is_none()
                && front.arrived > began
                && !self.st.worth_chaining()
                && self.st.due().is_none_or(|at| at > Instant::now())
            {
                return;
            }
            if self.st.needs_migrate {
                match drive(&self.rt, &mut self.st, self.store.migrate(), deadline) {
                    Ok(Ok(_)) => self.st.needs_migrate = false,
                    Ok(Err(e)) => {
                        let err = InsertError {
                            retry: Retry::AfterMigrate,
                            code: e.code,
                            message: format!("migrate before retry failed: {e}"),
                        };
                        return self.st.back_off(&err);
                    }
                    Err(timeout) => return self.st.back_off(&timeout),
                }
            }
            let (pieces, rows) = self.st.next_insert();
            if self.store.replicated() && self.st.frozen.is_none() {
                self.st.note_intent(pieces);
            }
            let parts: Vec<(Rc<Entry>, usize, usize)> = self
                .st
                .queue
                .iter()
                .take(pieces)
                .map(|p| (Rc::clone(&p.entry), p.start, p.end))
                .collect();
            self.st.inflight = pieces;
            let mut done = self.st.frozen.map(|f| f.1).unwrap_or_default();
            let started = Instant::now();
            let result = {
                let runs: Vec<RowRun<'_>> = parts
                    .iter()
                    .map(|(e, start, end)| RowRun {
                        batch: &e.batch,
                        rows: *start..*end,
                    })
                    .collect();
                drive(
                    &self.rt,
                    &mut self.st,
                    self.store.insert_runs_resuming(&runs, &mut done),
                    deadline,
                )
                .unwrap_or_else(Err)
            };
            self.st.inflight = 0;
            drop(parts);
            match result {
                Ok(mut inserted) => {
                    // A resumed insert wrote only the shards left; all its rows are in now.
                    inserted.rows = rows;
                    self.st.frozen = None;
                    self.st.written(pieces, inserted, started.elapsed());
                    // Only once its records are confirmed (`written`): a crash in between
                    // leaves an intent naming confirmed records, which the next start drops
                    // (`apply_intent`), where one cleared first left records that the next
                    // start replayed as ordinary batches, other blocks than the shards took.
                    self.st.clear_intent();
                }
                Err(e) => {
                    if !self.failed(pieces, rows, done, &e) {
                        return;
                    }
                }
            }
        }
    }

    /// A failed insert of the first `pieces` pieces (`rows` rows), of which the shards in
    /// `done` wrote their part (cluster mode): `State::failed`, on the rows those shards did
    /// not write when the insert is split or given up (`shards.rs`). Returns whether to go on
    /// with the next insert at once.
    fn failed(&mut self, pieces: usize, rows: usize, done: ShardsDone, e: &InsertError) -> bool {
        let (mut pieces, mut rows, mut stored) = (pieces, rows, Vec::new());
        if self.store.replicated() {
            if done != ShardsDone::default() && self.st.dissolves(rows, e) {
                (pieces, rows, stored) = self.narrow(pieces, done);
            }
            self.st.frozen = Some((pieces, done));
        }
        let go_on = self.st.failed(pieces, rows, e);
        self.st.settle_stored(stored);
        go_on
    }

    /// Cluster mode: cuts the first `pieces` pieces, whose insert the shards in `done` wrote,
    /// down to the rows of the other shards (`State::narrow`): the new count of pieces and rows,
    /// and the rows stored. Unchanged when the store cannot tell.
    fn narrow(&mut self, pieces: usize, done: ShardsDone) -> (usize, usize, shards::Stored) {
        let left: Option<shards::RowsLeft> = {
            let runs: Vec<RowRun<'_>> = self
                .st
                .queue
                .iter()
                .take(pieces)
                .map(|p| RowRun {
                    batch: &p.entry.batch,
                    rows: p.start..p.end,
                })
                .collect();
            self.store.rows_left(&runs, done).map(|left| {
                left.into_iter()
                    .map(|r| (r.batch as *const RowBatch, r.rows))
                    .collect()
            })
        };
        match left {
            Some(left) if !left.is_empty() => self.st.narrow(pieces, left),
            _ => {
                let rows = self.st.queue.iter().take(pieces).map(Piece::len).sum();
                (pieces, rows, Vec::new())
            }
        }
    }

    /// All senders are gone: insert what memory holds while ClickHouse answers, for at most
    /// a third of the shutdown timeout, then spool the rest and fsync.
    fn shutdown(mut self) -> FlushReport {
        self.st.stopping = true;
        let deadline = self
            .st
            .insert_until
            .unwrap_or_else(|| Instant::now() + self.st.cfg.shutdown_timeout / 3);
        while !self.st.queue.is_empty() {
            let now = Instant::now();
            match self.st.retry_at {
                _ if now >= deadline => break,
                // ClickHouse does not answer at all: waiting for it only delays the spooling.
                Some(_) if self.st.unreachable => break,
                Some(at) if at >= deadline => break,
                Some(at) if at > now => std::thread::sleep(at - now),
                _ => self.flush(Some(deadline)),
            }
        }
        self.st.spool_everything();
        self.st.report
    }
}
