//! The flush thread: buffers accepted batches in bounded memory, spools the excess to disk, and writes them to ClickHouse in batched inserts.
//!
//! One named thread (`flush`) with its own current-thread tokio runtime. Batches arrive on a
//! crossbeam channel, from the workers (`buffer` mode) or from the write-ahead thread (`wal`
//! mode, already on disk). The thread blocks on the channel with a deadline (`recv_deadline`)
//! between inserts, and while an insert or migration runs it keeps taking batches off the
//! channel every `INTAKE_POLL` (`drive`), so a slow ClickHouse never stalls intake. So:
//!
//! - an insert starts when `max_rows` rows are waiting or `interval` has passed since the oldest
//!   waiting row arrived, whichever comes first; every flush writes everything that was waiting
//!   when it began, in inserts of at most `max_rows` rows (a batch is never cut in normal
//!   operation). Rows that arrive during a flush wait for their own interval unless a quarter of
//!   `max_rows` or of the memory room is waiting (or the spool has a backlog), so under steady
//!   load ClickHouse gets one insert per interval, or inserts of at least a quarter of
//!   `max_rows`, not a stream of small ones as fast as they complete;
//! - memory is bounded: workers reserve each batch's rows and heap bytes against
//!   `INGEST_BUFFER_MAX_ROWS`/`INGEST_BUFFER_MAX_BYTES` (`ingest::handoff`); past the bound
//!   less room for the largest batch seen (`State::room`), this thread moves the newest batches
//!   to the spool (`spool.rs`) until memory is under half of that, and while anything waits on
//!   disk new batches go behind it. When ClickHouse
//!   answers, the spool is read back oldest first. Whatever the outage, memory stays under the
//!   bound and the spool under `INGEST_SPOOL_MAX_BYTES`; past both, ingest answers `503`;
//! - a failed insert is classified from ClickHouse's error code (`clickhouse::Retry`):
//!   transient errors keep the rows and retry with capped exponential backoff and jitter, for
//!   as long as it takes; an unknown error is retried `max_unknown_attempts` times and a
//!   missing table `MAX_MIGRATE_ATTEMPTS` times (migrating in between), then treated as a data
//!   error: the insert is bisected until the refused rows are isolated, and those go to the
//!   dead-letter file (`deadletter.rs`) with the error. Nothing is retried forever on the same
//!   rows unless ClickHouse is unreachable or overloaded, and nothing is dropped silently;
//! - a batch is *confirmed* (its spool record acked, then deleted) once all its rows are
//!   inserted or dead-lettered;
//! - when every sender is gone the thread inserts what memory holds while ClickHouse answers,
//!   for at most a third of `shutdown_timeout`, then spools the rest (exceeding the spool's bound
//!   if it must: those rows were accepted) and fsyncs. Rows are lost only if the disk fails.
//!
//! Exactly once in the table: a replayed or retried row is byte for byte the row of the first
//! attempt (its `ingested_at` was fixed when it was accepted), and `spans` is a
//! `ReplacingMergeTree` keyed on (org, trace, start, span), so `SELECT ... FINAL` shows one row
//! however often a crash made it be inserted.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};

use super::clickhouse::{InsertError, Inserted, Retry, RowRun, Store, StoreError};
use super::deadletter::DeadLetters;
use super::segment::RecordPos;
use super::spool::{Spool, SpoolError};
use super::wal::Logged;
use crate::admission::UsageTicket;
use crate::metrics::Histogram;
use crate::row::{col, RowBatch, Value};

/// While an insert runs, how often the thread takes new batches off the channel.
const INTAKE_POLL: Duration = Duration::from_millis(5);

/// While batches keep arriving between inserts, how long the thread sleeps before taking in
/// everything that came meanwhile (see `State::receive`).
const INTAKE_BATCH: Duration = Duration::from_millis(5);

/// Most batches taken off the channel in one go, so that a flood cannot starve an insert.
const INTAKE_BOUND: usize = 4096;
/// Migrate-then-retry cycles on the same rows before they are treated as refused.
const MAX_MIGRATE_ATTEMPTS: u32 = 3;

/// Everything the flush thread needs, built once at start-up.
#[derive(Clone)]
pub struct FlushConfig {
    /// ClickHouse native-protocol URL, e.g. `tcp://127.0.0.1:9000`.
    pub url: String,
    /// Database holding the `spans` table.
    pub database: String,
    /// Longest time a row waits before its flush starts (`INGEST_FLUSH_INTERVAL_MS`).
    pub interval: Duration,
    /// Rows waiting that trigger a flush at once, and the largest insert (`INGEST_FLUSH_MAX_ROWS`).
    pub max_rows: usize,
    /// After the channel closes, how long the thread may take: a third inserting, the rest
    /// for spooling what is left (which takes time in proportion to the memory bound).
    pub shutdown_timeout: Duration,
    /// First retry delay after a transient failure.
    pub retry_min: Duration,
    /// Cap of the exponential retry delay.
    pub retry_max: Duration,
    /// Rows memory may hold (`INGEST_BUFFER_MAX_ROWS`); workers enforce it, this thread spools
    /// before it is reached.
    pub buffer_max_rows: u64,
    /// Heap bytes memory may hold (`INGEST_BUFFER_MAX_BYTES`); same rule.
    pub buffer_max_bytes: u64,
    /// Insert attempts on the same rows refused with an unknown error code before splitting.
    pub max_unknown_attempts: u32,
    /// Where refused rows go (`INGEST_DATA_DIR/deadletter`).
    pub dead_letter_dir: PathBuf,
    /// Counters for the metrics endpoint; the caller keeps a clone.
    pub stats: Arc<FlushStats>,
}

impl FlushConfig {
    /// The defaults of the contract: flush every second or at 10 000 rows, retry 100 ms .. 5 s,
    /// 10 s to drain at shutdown, 256 MiB / 1 M rows of memory.
    pub fn new(url: impl Into<String>, database: impl Into<String>) -> FlushConfig {
        FlushConfig {
            url: url.into(),
            database: database.into(),
            interval: Duration::from_millis(1000),
            max_rows: 10_000,
            shutdown_timeout: Duration::from_secs(10),
            retry_min: Duration::from_millis(100),
            retry_max: Duration::from_secs(5),
            buffer_max_rows: 1_000_000,
            buffer_max_bytes: 256 << 20,
            max_unknown_attempts: 8,
            dead_letter_dir: PathBuf::from("data/deadletter"),
            stats: Arc::default(),
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
            .field("interval", &self.interval)
            .field("max_rows", &self.max_rows)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("retry_min", &self.retry_min)
            .field("retry_max", &self.retry_max)
            .field("buffer_max_rows", &self.buffer_max_rows)
            .field("buffer_max_bytes", &self.buffer_max_bytes)
            .field("dead_letter_dir", &self.dead_letter_dir)
            .finish_non_exhaustive()
    }
}

/// Counters and gauges a metrics endpoint reads while the thread runs. Plain atomics, so any
/// renderer can read them.
#[derive(Debug, Default)]
pub struct FlushStats {
    /// Successful inserts.
    pub batches_flushed: AtomicU64,
    pub rows_flushed: AtomicU64,
    /// Failed insert attempts (each retry counts).
    pub flush_errors: AtomicU64,
    /// Inserts scheduled again after a failure (backoff waits).
    pub retries: AtomicU64,
    /// Duration of the last successful insert, ms.
    pub last_flush_ms: AtomicU64,
    /// When the last successful insert finished, epoch ms (0 = never).
    pub last_flush_at_ms: AtomicU64,
    /// Rows ClickHouse refused for good (written to the dead-letter file).
    pub rows_rejected: AtomicU64,
    /// Rows that could be kept nowhere (dead-letter or spool write failed, or a spool record
    /// no longer decodes); each is logged at error level.
    pub rows_lost: AtomicU64,
    /// Heap bytes of accepted batches held in memory (workers add, this thread subtracts).
    pub buffered_bytes: AtomicU64,
    /// The largest batch (heap bytes, rows) a worker has tried to hand over: this thread keeps
    /// room for one more of it.
    pub largest_batch_bytes: AtomicU64,
    pub largest_batch_rows: AtomicU64,
    /// Bytes of spool segment files on disk.
    pub spool_bytes: AtomicU64,
    /// Spool segment files on disk.
    pub spool_segments: AtomicU64,
    /// Rows waiting only on disk (not in memory).
    pub spool_rows: AtomicU64,
    /// Creation time (epoch ms) of the oldest segment holding unconfirmed rows; 0 = none.
    pub spool_oldest_ms: AtomicU64,
    /// Rows moved from memory to the spool.
    pub rows_spooled: AtomicU64,
    /// Rows read back from the spool.
    pub rows_replayed: AtomicU64,
    /// Spool records that could not be read back (torn or corrupt).
    pub spool_bad_records: AtomicU64,
    /// Write-ahead mode: batches made durable, and the fsyncs that did it (group commit makes
    /// `wal_syncs` smaller under concurrency).
    pub wal_batches: AtomicU64,
    pub wal_syncs: AtomicU64,
    /// Memory and spool are both full: new batches are refused (`/ready` is false). Set by
    /// whoever appends to the spool when it is refused for lack of room; cleared when room
    /// is made.
    pub full: AtomicBool,
    /// Durations of successful inserts.
    pub flush_duration: Histogram,
}

impl FlushStats {
    /// Seconds since the oldest spool segment holding unwritten rows was created; 0 when the
    /// spool holds none.
    pub fn spool_oldest_age_s(&self, now_ms: u64) -> f64 {
        match self.spool_oldest_ms.load(Ordering::Relaxed) {
            0 => 0.0,
            oldest => now_ms.saturating_sub(oldest) as f64 / 1000.0,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
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
}

/// Where batches come from.
pub enum Input {
    /// `buffer` mode: straight from the workers.
    Buffer(Receiver<RowBatch>),
    /// `wal` mode: from the write-ahead thread, each already durable in the spool.
    Logged(Receiver<Logged>),
}

enum Incoming {
    Batch(RowBatch),
    Logged(Logged),
}

impl Input {
    fn recv_deadline(&self, at: Option<Instant>) -> Result<Incoming, RecvTimeoutError> {
        fn wait<T>(rx: &Receiver<T>, at: Option<Instant>) -> Result<T, RecvTimeoutError> {
            match at {
                Some(at) => rx.recv_deadline(at),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            }
        }
        match self {
            Input::Buffer(rx) => wait(rx, at).map(Incoming::Batch),
            Input::Logged(rx) => wait(rx, at).map(Incoming::Logged),
        }
    }

    fn try_recv(&self) -> Result<Incoming, TryRecvError> {
        match self {
            Input::Buffer(rx) => rx.try_recv().map(Incoming::Batch),
            Input::Logged(rx) => rx.try_recv().map(Incoming::Logged),
        }
    }
}

/// Starts the flush thread. Fails only on a bad URL or database name, or if the runtime cannot
/// be built: nothing is received before the store and runtime exist.
pub fn spawn(
    cfg: FlushConfig,
    input: Input,
    spool: Spool,
    buffered_rows: Arc<AtomicU64>,
) -> Result<JoinHandle<FlushReport>, StoreError> {
    let store = Store::new(&cfg.url, &cfg.database)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoreError {
            code: None,
            message: format!("cannot build the flush thread's runtime: {e}"),
        })?;
    let handle = std::thread::Builder::new()
        .name("flush".into())
        .spawn(move || Flusher::new(cfg, store, rt, input, spool, buffered_rows).run())
        .map_err(|e| StoreError {
            code: None,
            message: format!("cannot start the flush thread: {e}"),
        })?;
    Ok(handle)
}

/// One accepted batch held in memory.
struct Entry {
    /// Its `usage` ticket is taken out into `Entry::usage` on arrival.
    batch: RowBatch,
    /// The batch's place in its organisation's quota: dropped with the entry once its rows are
    /// inserted or given up; moved to `State::tickets` when the batch goes to the spool.
    usage: Cell<UsageTicket>,
    /// Where the batch is in the spool, when it is there too (read back, or `wal` mode).
    pos: Option<RecordPos>,
    /// `batch.heap_bytes()`, counted in `FlushStats::buffered_bytes` while the entry lives.
    bytes: u64,
    /// Rows neither inserted nor dead-lettered yet; at 0 the batch is confirmed.
    left: Cell<usize>,
    /// Some rows could not be dead-lettered: do not confirm the record, so a restart tries
    /// them again.
    keep_record: Cell<bool>,
}

/// Rows of one entry waiting in the buffer.
struct Piece {
    /// Shared by the pieces of a batch being bisected; dropped with its last piece.
    entry: Rc<Entry>,
    /// Range of `entry.batch.rows` this piece covers.
    start: usize,
    end: usize,
    /// When the batch arrived: the flush interval runs from the oldest waiting row.
    arrived: Instant,
    /// Largest insert this piece may join: `usize::MAX` normally; while a refused insert is
    /// being bisected, the size of the piece's half, so that each half is tried on its own.
    cap: usize,
}

impl Piece {
    fn len(&self) -> usize {
        self.end - self.start
    }

    /// A whole batch, not part of a bisection: may move to the spool.
    fn is_whole(&self) -> bool {
        self.start == 0
            && self.end == self.entry.batch.len()
            && self.cap == usize::MAX
            && Rc::strong_count(&self.entry) == 1
    }
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
    spool: Spool,
    /// Quota tickets of batches this process accepted that wait only in the spool, by record
    /// (segment, index): their spans stay counted as buffered, not yet in ClickHouse, until the
    /// record is confirmed (see `admission::quota`).
    tickets: HashMap<(u64, u32), UsageTicket>,
    dead: DeadLetters,
    /// Shared with the workers: rows accepted and held in memory.
    buffered_rows: Arc<AtomicU64>,
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
    /// Jitter source (splitmix64 state).
    rng: u64,
    report: FlushReport,
    /// The last wait took batches in: wait by sleeping, not on the channel (`receive`).
    busy: bool,
    /// The last poll stopped at `INTAKE_BOUND` with more waiting: take it in without sleeping.
    backlogged: bool,
}

/// Runs a future on the thread's runtime, bounded by `deadline` when there is one, taking
/// new batches off the channel meanwhile.
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
        buffered_rows: Arc<AtomicU64>,
    ) -> Flusher {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64);
        Flusher {
            store,
            rt,
            st: State {
                dead: DeadLetters::new(&cfg.dead_letter_dir),
                cfg,
                input,
                closed: false,
                insert_until: None,
                stopping: false,
                queue: VecDeque::new(),
                queued_rows: 0,
                inflight: 0,
                spool,
                tickets: HashMap::new(),
                buffered_rows,
                attempt: 0,
                retry_at: None,
                needs_migrate: false,
                unreachable: false,
                capped_failures: 0,
                rng: seed,
                report: FlushReport::default(),
                busy: false,
                backlogged: false,
            },
        }
    }

    fn run(mut self) -> FlushReport {
        while !self.st.closed {
            // Also on timer wake-ups: a worker may wait for room for a larger batch.
            self.st.relieve();
            match self.st.due() {
                Some(at) if at <= Instant::now() => self.flush(None),
                at => self.st.receive(at),
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
                    Ok(Ok(())) => self.st.needs_migrate = false,
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
            let parts: Vec<(Rc<Entry>, usize, usize)> = self
                .st
                .queue
                .iter()
                .take(pieces)
                .map(|p| (Rc::clone(&p.entry), p.start, p.end))
                .collect();
            self.st.inflight = pieces;
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
                    self.store.insert_runs(&runs),
                    deadline,
                )
                .unwrap_or_else(Err)
            };
            self.st.inflight = 0;
            drop(parts);
            match result {
                Ok(inserted) => self.st.written(pieces, inserted, started.elapsed()),
                Err(e) => {
                    if !self.st.failed(pieces, rows, &e) {
                        return;
                    }
                }
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

impl State {
    /// Waits for batches until `at` (or forever when `None`) and takes in what came.
    ///
    /// Idle, the thread blocks on the channel, so the first batch wakes it at once. While
    /// batches keep coming it sleeps `INTAKE_BATCH` at a time without waiting on the channel,
    /// then takes in everything that arrived: a worker's send finds no sleeping receiver to wake
    /// (no futex call on the request path), and under a stream of small requests this thread
    /// wakes 200 times a second instead of every few batches. Nothing waits on it meanwhile:
    /// workers reserve memory themselves, and rows wait for the insert interval anyway.
    fn receive(&mut self, at: Option<Instant>) {
        if self.busy {
            if !self.backlogged {
                let now = Instant::now();
                let until = at.map_or(now + INTAKE_BATCH, |at| at.min(now + INTAKE_BATCH));
                std::thread::sleep(until.saturating_duration_since(now));
            }
            self.busy = self.poll_intake() > 0;
            return;
        }
        match self.input.recv_deadline(at) {
            Ok(item) => {
                self.accept(item);
                self.poll_intake();
                self.busy = true;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => self.close(),
        }
    }

    fn close(&mut self) {
        self.closed = true;
        self.insert_until = Some(Instant::now() + self.cfg.shutdown_timeout / 3);
    }

    /// Takes in whatever the channel holds now, without waiting (at most `INTAKE_BOUND`
    /// batches); returns how many it took.
    fn poll_intake(&mut self) -> usize {
        self.backlogged = false;
        for taken in 0..INTAKE_BOUND {
            match self.input.try_recv() {
                Ok(item) => self.accept(item),
                Err(TryRecvError::Empty) => return taken,
                Err(TryRecvError::Disconnected) => {
                    self.close();
                    return taken;
                }
            }
        }
        self.backlogged = true;
        INTAKE_BOUND
    }

    fn accept(&mut self, item: Incoming) {
        let (mut batch, pos) = match item {
            Incoming::Batch(b) => (b, None),
            Incoming::Logged(l) => {
                self.spool.logged(l.pos, l.segment_created_ms);
                (l.batch, Some(l.pos))
            }
        };
        let rows = batch.len();
        let entry = Entry {
            bytes: batch.heap_bytes() as u64,
            usage: Cell::new(std::mem::take(&mut batch.usage)),
            batch,
            pos,
            left: Cell::new(rows),
            keep_record: Cell::new(false),
        };
        if rows == 0 {
            // Workers never send one (a batch has at least one span); confirm it all the same.
            if let Some(pos) = entry.pos {
                self.spool.confirm(pos);
            }
            return self.release(&entry, 0);
        }
        // Behind a backlog, a batch goes to the spool too, so the spool stays oldest first.
        if self.spool.backlog() && self.spool_entry(&entry, false).is_ok() {
            return self.release(&entry, rows);
        }
        self.push(entry, Instant::now());
        self.relieve();
    }

    fn push(&mut self, entry: Entry, arrived: Instant) {
        let rows = entry.batch.len();
        self.queued_rows += rows;
        self.queue.push_back(Piece {
            start: 0,
            end: rows,
            entry: Rc::new(entry),
            arrived,
            cap: usize::MAX,
        });
    }

    /// Puts an entry in the spool: appends it, or, if it is there already, only drops the
    /// memory copy. The caller then releases the entry's memory.
    fn spool_entry(&mut self, entry: &Entry, over_limit: bool) -> Result<(), SpoolError> {
        let rows = entry.batch.len() as u64;
        if let Some(pos) = entry.pos {
            self.spool.release(pos, rows);
            self.keep_ticket(pos, entry);
            return Ok(());
        }
        match self.spool.append(&entry.batch, over_limit) {
            Ok(pos) => {
                self.cfg.stats.full.store(false, Ordering::Relaxed);
                self.keep_ticket(pos, entry);
                Ok(())
            }
            Err(e) => {
                match &e {
                    SpoolError::Full => {
                        if !self.cfg.stats.full.swap(true, Ordering::Relaxed) {
                            tracing::warn!(
                                spool_bytes = self.spool.bytes(),
                                "memory and spool are full; refusing new batches until ClickHouse takes rows"
                            );
                        }
                    }
                    SpoolError::Io(_) => {
                        tracing::error!(error = %e, "cannot write to the spool; keeping the rows in memory")
                    }
                }
                Err(e)
            }
        }
    }

    /// The entry's rows now wait only in the spool, at `pos`: its quota ticket waits there too,
    /// so that the spans stay counted until they are inserted. (Dropping the ticket with the
    /// memory copy would tell the quota they are in ClickHouse, and the next usage sync would
    /// forget them.)
    fn keep_ticket(&mut self, pos: RecordPos, entry: &Entry) {
        let ticket = entry.usage.take();
        if !ticket.is_empty() {
            self.tickets.insert((pos.segment, pos.index), ticket);
        }
    }

    /// Gives back the memory an entry held (its rows still counted, `rows` of them).
    fn release(&self, entry: &Entry, rows: usize) {
        self.buffered_rows.fetch_sub(rows as u64, Ordering::AcqRel);
        self.cfg
            .stats
            .buffered_bytes
            .fetch_sub(entry.bytes, Ordering::AcqRel);
    }

    fn memory(&self) -> (u64, u64) {
        (
            self.buffered_rows.load(Ordering::Acquire),
            self.cfg.stats.buffered_bytes.load(Ordering::Acquire),
        )
    }

    /// The memory this thread lets its queue use: the bound less room for the largest batch
    /// a worker has tried to hand over (but at least a quarter of the bound), so that a worker
    /// is refused only when the spool cannot take more, never because this thread stopped
    /// short of making room for one more batch.
    fn room(&self) -> (u64, u64) {
        let stats = &self.cfg.stats;
        let keep = |max: u64, largest: &AtomicU64| {
            max.saturating_sub(largest.load(Ordering::Relaxed))
                .max(max / 4)
        };
        (
            keep(self.cfg.buffer_max_rows, &stats.largest_batch_rows),
            keep(self.cfg.buffer_max_bytes, &stats.largest_batch_bytes),
        )
    }

    /// Enough waits for the next insert to go at once, without waiting for its interval: a
    /// quarter of `max_rows` (an insert that size is cheap for ClickHouse to merge), or a
    /// quarter of the memory room (so that a fast intake does not fill memory, and spool,
    /// while the interval runs).
    fn worth_chaining(&self) -> bool {
        self.queued_rows >= (self.cfg.max_rows / 4).max(1) || self.over(1, 4)
    }

    /// Memory is over `room() * num / den`.
    fn over(&self, num: u64, den: u64) -> bool {
        let (rows, bytes) = self.memory();
        let (room_rows, room_bytes) = self.room();
        rows > room_rows / den * num || bytes > room_bytes / den * num
    }

    /// Past `room()`, moves the newest whole batches to the spool until memory is under half
    /// of it.
    fn relieve(&mut self) {
        if !self.over(1, 1) {
            // `buffer` mode: memory has room again, so batches are taken. (In `wal` mode the
            // flag is the write-ahead thread's: it is about disk only.)
            if matches!(self.input, Input::Buffer(_)) {
                self.cfg.stats.full.store(false, Ordering::Relaxed);
            }
            return;
        }
        let (mut rows, mut bytes) = self.memory();
        let (room_rows, room_bytes) = self.room();
        let (low_rows, low_bytes) = (room_rows / 2, room_bytes / 2);
        let mut k = 0;
        for p in self.queue.iter().skip(self.inflight).rev() {
            if rows <= low_rows && bytes <= low_bytes {
                break;
            }
            if !p.is_whole() {
                break;
            }
            rows = rows.saturating_sub(p.len() as u64);
            bytes = bytes.saturating_sub(p.entry.bytes);
            k += 1;
        }
        let first = self.queue.len() - k;
        let mut tail: VecDeque<Piece> = self.queue.drain(first..).collect();
        while let Some(p) = tail.pop_front() {
            if self.spool_entry(&p.entry, false).is_err() {
                self.queue.push_back(p);
                self.queue.extend(tail);
                return;
            }
            self.queued_rows -= p.len();
            self.release(&p.entry, p.len());
        }
    }

    /// Reads the spool back while memory is under half of `room()`, up to one insert's worth.
    fn refill(&mut self) {
        if self.stopping {
            return;
        }
        let since = Instant::now()
            .checked_sub(self.cfg.interval)
            .unwrap_or_else(Instant::now);
        // With nothing in memory, one record is read whatever the bound says (the memory
        // counted may all be in the channel), so an insert is always attempted.
        while self.spool.backlog()
            && self.queued_rows < self.cfg.max_rows
            && (self.queue.is_empty() || !self.over(1, 2))
        {
            let Some(r) = self.spool.read_next() else {
                break;
            };
            // A record this process spooled has its ticket in `tickets` until it is confirmed;
            // one from an earlier run has none (its spans are not counted until inserted).
            let entry = Entry {
                bytes: r.batch.heap_bytes() as u64,
                usage: Cell::default(),
                left: Cell::new(r.batch.len()),
                batch: r.batch,
                pos: Some(r.pos),
                keep_record: Cell::new(false),
            };
            self.buffered_rows
                .fetch_add(entry.batch.len() as u64, Ordering::AcqRel);
            self.cfg
                .stats
                .buffered_bytes
                .fetch_add(entry.bytes, Ordering::AcqRel);
            // Replayed rows are old: due at once.
            self.push(entry, since);
        }
    }

    /// When the next insert should start, if anything is waiting.
    fn due(&self) -> Option<Instant> {
        let at = match self.queue.front() {
            Some(p) if self.queued_rows >= self.cfg.max_rows || self.spool.backlog() => p.arrived,
            Some(p) => p.arrived + self.cfg.interval,
            None if self.spool.backlog() => Instant::now(),
            None => return None,
        };
        Some(self.retry_at.map_or(at, |r| r.max(at)))
    }

    /// The front pieces that make the next insert: at most `max_rows` rows (and no more than
    /// any included piece's cap) and half of `room()` in bytes, but always at least one piece.
    /// (An insert's pieces stay in memory until it ends, however long ClickHouse takes: the
    /// other half is for intake, and for what must move to the spool meanwhile.)
    fn next_insert(&self) -> (usize, usize) {
        let max_bytes = self.room().1 / 2;
        let (mut pieces, mut rows, mut bytes, mut cap) = (0, 0, 0, usize::MAX);
        for p in &self.queue {
            let cap_with = cap.min(p.cap);
            let whole = if p.is_whole() { p.entry.bytes } else { 0 };
            if pieces > 0
                && (rows + p.len() > self.cfg.max_rows.min(cap_with) || bytes + whole > max_bytes)
            {
                break;
            }
            pieces += 1;
            rows += p.len();
            bytes += whole;
            cap = cap_with;
        }
        (pieces, rows)
    }

    /// Rows of `n` of an entry are inserted or dead-lettered; confirms it once all are.
    fn settle(&mut self, entry: &Entry, n: usize) {
        let left = entry.left.get() - n;
        entry.left.set(left);
        if left == 0 {
            self.cfg
                .stats
                .buffered_bytes
                .fetch_sub(entry.bytes, Ordering::AcqRel);
            if let Some(pos) = entry.pos {
                if !entry.keep_record.get() {
                    self.spool.confirm(pos);
                }
                // Inserted or given up: the spans leave the quota's buffered count.
                self.tickets.remove(&(pos.segment, pos.index));
            }
        }
    }

    fn written(&mut self, pieces: usize, inserted: Inserted, took: Duration) {
        for p in self.queue.drain(..pieces).collect::<Vec<_>>() {
            self.settle(&p.entry, p.len());
        }
        self.queued_rows -= inserted.rows;
        self.buffered_rows
            .fetch_sub(inserted.rows as u64, Ordering::AcqRel);
        self.attempt = 0;
        self.retry_at = None;
        self.capped_failures = 0;
        self.report.rows_flushed += inserted.rows as u64;
        let ms = took.as_millis() as u64;
        let stats = &self.cfg.stats;
        stats.batches_flushed.fetch_add(1, Ordering::Relaxed);
        stats
            .rows_flushed
            .fetch_add(inserted.rows as u64, Ordering::Relaxed);
        stats.last_flush_ms.store(ms, Ordering::Relaxed);
        stats.flush_duration.observe(took);
        stats.last_flush_at_ms.store(now_ms(), Ordering::Relaxed);
        tracing::info!(
            rows = inserted.rows,
            bytes = inserted.bytes,
            ms,
            waiting = self.queued_rows,
            "flushed spans"
        );
        // Memory went down: this may end a "full" state even if no batch arrives.
        self.relieve();
    }

    /// Handles a failed insert of the first `pieces` pieces (`rows` rows). Returns whether to
    /// go on with the next insert at once (after a split or a rejection) rather than wait.
    fn failed(&mut self, pieces: usize, rows: usize, e: &InsertError) -> bool {
        self.cfg.stats.flush_errors.fetch_add(1, Ordering::Relaxed);
        let bisecting = self.queue.front().is_some_and(|p| p.cap != usize::MAX);
        let class = match e.retry {
            // Once rows are being isolated, an unknown refusal is taken as theirs.
            Retry::Unknown if bisecting => Retry::Split,
            Retry::Unknown if self.capped_failures + 1 >= self.cfg.max_unknown_attempts => {
                Retry::Split
            }
            Retry::AfterMigrate if self.capped_failures + 1 >= MAX_MIGRATE_ATTEMPTS => Retry::Split,
            r => r,
        };
        match class {
            Retry::Later => {
                self.back_off(e);
                false
            }
            Retry::Unknown | Retry::AfterMigrate => {
                self.capped_failures += 1;
                self.needs_migrate |= class == Retry::AfterMigrate;
                self.back_off(e);
                false
            }
            Retry::Split if rows > 1 => {
                tracing::warn!(
                    rows,
                    code = e.code,
                    error = %e,
                    "insert refused; splitting it to isolate the rows at fault"
                );
                self.capped_failures = 0;
                self.bisect(pieces, rows);
                true
            }
            Retry::Split | Retry::Never => {
                self.capped_failures = 0;
                self.reject(pieces, rows, e);
                true
            }
        }
    }

    /// Keeps every row and schedules the next attempt.
    fn back_off(&mut self, e: &InsertError) {
        let delay = self.backoff_delay();
        self.attempt = self.attempt.saturating_add(1);
        self.retry_at = Some(Instant::now() + delay);
        self.unreachable = e.code.is_none() && e.retry == Retry::Later;
        self.cfg.stats.retries.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            attempt = self.attempt,
            retry_in_ms = delay.as_millis() as u64,
            waiting = self.queued_rows,
            spooled = self.cfg.stats.spool_rows.load(Ordering::Relaxed),
            code = e.code,
            error = %e,
            "insert failed; rows kept, will retry"
        );
    }

    /// `retry_min * 2^attempt` capped at `retry_max`, the upper half of it jittered.
    fn backoff_delay(&mut self) -> Duration {
        let (min, max) = (
            self.cfg.retry_min,
            self.cfg.retry_max.max(self.cfg.retry_min),
        );
        let base = min.saturating_mul(1u32 << self.attempt.min(20)).min(max);
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        (base / 2 + base.mul_f64(unit / 2.0)).max(min)
    }

    /// Replaces the refused insert's pieces with its two halves, each to be inserted alone.
    fn bisect(&mut self, pieces: usize, rows: usize) {
        let half = rows / 2;
        let mut halves: Vec<Piece> = Vec::with_capacity(pieces + 1);
        let mut seen = 0;
        for p in self.queue.drain(..pieces) {
            let len = p.len();
            if seen < half && seen + len > half {
                let cut = p.start + (half - seen);
                halves.push(Piece {
                    entry: Rc::clone(&p.entry),
                    start: p.start,
                    end: cut,
                    arrived: p.arrived,
                    cap: half,
                });
                halves.push(Piece {
                    start: cut,
                    cap: rows - half,
                    ..p
                });
            } else {
                let cap = if seen < half { half } else { rows - half };
                halves.push(Piece { cap, ..p });
            }
            seen += len;
        }
        for p in halves.into_iter().rev() {
            self.queue.push_front(p);
        }
    }

    /// Gives up rows ClickHouse will never take: into the dead-letter file with the error.
    fn reject(&mut self, pieces: usize, rows: usize, e: &InsertError) {
        // The server answered: connectivity is fine, whatever the backoff had reached.
        self.attempt = 0;
        self.retry_at = None;
        let refused: Vec<Piece> = self.queue.drain(..pieces).collect();
        let runs: Vec<RowRun<'_>> = refused
            .iter()
            .map(|p| RowRun {
                batch: &p.entry.batch,
                rows: p.start..p.end,
            })
            .collect();
        let written = self.dead.write(&runs, e);
        for p in &refused {
            let mut reader = p.entry.batch.reader(p.start..p.end);
            while let Some(values) = reader.next_row() {
                let id = |c: usize| match &values[c] {
                    Value::Str(s) => *s,
                    _ => "",
                };
                tracing::error!(
                    org_id = id(col::org_id),
                    trace_id = id(col::trace_id),
                    span_id = id(col::span_id),
                    code = e.code,
                    error = %e,
                    dead_letter = %self.dead.path().display(),
                    dead_lettered = written.is_ok(),
                    "ClickHouse refused a span for good"
                );
            }
        }
        let stats = Arc::clone(&self.cfg.stats);
        match written {
            Ok(_) => {
                self.report.rows_rejected += rows as u64;
                stats
                    .rows_rejected
                    .fetch_add(rows as u64, Ordering::Relaxed);
            }
            Err(io) => {
                tracing::error!(
                    rows,
                    error = %io,
                    path = %self.dead.path().display(),
                    "cannot write the dead-letter file; spooled rows are kept for the next start, the others are lost"
                );
                for p in &refused {
                    if p.entry.pos.is_some() {
                        p.entry.keep_record.set(true);
                    } else {
                        self.report.rows_lost += p.len() as u64;
                        stats.rows_lost.fetch_add(p.len() as u64, Ordering::Relaxed);
                    }
                }
            }
        }
        for p in &refused {
            self.settle(&p.entry, p.len());
        }
        self.queued_rows -= rows;
        self.buffered_rows.fetch_sub(rows as u64, Ordering::AcqRel);
    }

    /// Shutdown: moves everything still in memory to the spool (past its bound if it must) and
    /// fsyncs, so that the next start inserts it.
    fn spool_everything(&mut self) {
        let mut done: Vec<*const Entry> = Vec::new();
        while let Some(p) = self.queue.pop_front() {
            self.queued_rows -= p.len();
            self.buffered_rows
                .fetch_sub(p.len() as u64, Ordering::AcqRel);
            let ptr = Rc::as_ptr(&p.entry);
            if done.contains(&ptr) {
                continue;
            }
            done.push(ptr);
            let entry = &p.entry;
            let unsettled = entry.left.get();
            // A batch partly inserted goes to the spool whole: its inserted rows come again
            // and collapse in the table.
            match self.spool_entry(entry, true) {
                Ok(()) => {}
                Err(e) => {
                    tracing::error!(
                        rows = unsettled,
                        error = %e,
                        "cannot spool rows at shutdown; they are lost"
                    );
                    self.report.rows_lost += unsettled as u64;
                    self.cfg
                        .stats
                        .rows_lost
                        .fetch_add(unsettled as u64, Ordering::Relaxed);
                }
            }
            self.cfg
                .stats
                .buffered_bytes
                .fetch_sub(entry.bytes, Ordering::AcqRel);
        }
        if let Err(e) = self.spool.sync() {
            tracing::error!(error = %e, "cannot fsync the spool at shutdown");
        }
        self.report.rows_spooled = self.cfg.stats.spool_rows.load(Ordering::Relaxed);
        if self.report.rows_spooled > 0 {
            tracing::warn!(
                rows = self.report.rows_spooled,
                dir = %self.spool.dir().display(),
                "rows not yet in ClickHouse stay in the spool; the next start inserts them"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::clickhouse::test_support::*;
    use super::super::spool::SpoolConfig;
    use super::super::test_dir::TestDir;
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn config(db: &str, url: &str) -> FlushConfig {
        FlushConfig {
            retry_min: Duration::from_millis(20),
            retry_max: Duration::from_millis(200),
            ..FlushConfig::new(url, db)
        }
    }

    /// A flush thread in `buffer` mode with its data directory, fed the way workers feed it.
    struct Harness {
        tx: Option<crossbeam_channel::Sender<RowBatch>>,
        buffered: Arc<AtomicU64>,
        stats: Arc<FlushStats>,
        thread: Option<JoinHandle<FlushReport>>,
        dir: TestDir,
    }

    impl Harness {
        fn start(cfg: FlushConfig, dir: TestDir) -> Harness {
            Harness::start_spool(cfg, dir, 1 << 30)
        }

        fn start_spool(cfg: FlushConfig, dir: TestDir, spool_max: u64) -> Harness {
            let stats = Arc::clone(&cfg.stats);
            let spool = Spool::open(
                SpoolConfig::new(dir.path().join("spool"), spool_max),
                Arc::clone(&stats),
            )
            .unwrap();
            let cfg = FlushConfig {
                dead_letter_dir: dir.path().join("deadletter"),
                ..cfg
            };
            let buffered = Arc::new(AtomicU64::new(0));
            let (tx, rx) = crossbeam_channel::unbounded();
            let thread = spawn(cfg, Input::Buffer(rx), spool, Arc::clone(&buffered)).unwrap();
            Harness {
                tx: Some(tx),
                buffered,
                stats,
                thread: Some(thread),
                dir,
            }
        }

        /// Sends a batch the way a worker does: reserve rows and bytes, then hand over.
        fn send(&self, b: RowBatch) {
            let stats = &self.stats;
            stats
                .largest_batch_rows
                .fetch_max(b.len() as u64, Ordering::Relaxed);
            stats
                .largest_batch_bytes
                .fetch_max(b.heap_bytes() as u64, Ordering::Relaxed);
            self.buffered.fetch_add(b.len() as u64, Ordering::AcqRel);
            self.stats
                .buffered_bytes
                .fetch_add(b.heap_bytes() as u64, Ordering::AcqRel);
            self.tx.as_ref().unwrap().send(b).unwrap();
        }

        /// Closes intake and waits for the thread's report; hands back the data directory.
        fn finish(mut self) -> (FlushReport, TestDir) {
            drop(self.tx.take());
            let report = self.thread.take().unwrap().join().unwrap();
            assert_eq!(self.buffered.load(Ordering::Acquire), 0, "rows released");
            assert_eq!(
                self.stats.buffered_bytes.load(Ordering::Acquire),
                0,
                "memory released"
            );
            (report, self.dir)
        }
    }

    fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
        let until = Instant::now() + timeout;
        while !cond() {
            assert!(Instant::now() < until, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn migrated(db: &TestDb) {
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(store.migrate())
            .expect("ClickHouse on 127.0.0.1:9000");
    }

    fn rows_in(db: &TestDb) -> u64 {
        count(&format!("SELECT count() FROM `{}`.spans", db.0))
    }

    /// Segment files left in a data directory's spool.
    fn segments(dir: &TestDir) -> usize {
        std::fs::read_dir(dir.path().join("spool"))
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".seg"))
                })
                .count()
            })
            .unwrap_or(0)
    }

    /// Under a steady stream of batches, inserts go out once per interval. (They used to go
    /// back to back, each taking whatever arrived during the last: tens of small inserts a
    /// second, whose parts cost ClickHouse most of its CPU to merge.)
    #[test]
    fn steady_intake_gets_one_insert_per_interval() {
        if skip() {
            return;
        }
        let db = TestDb::new("steady");
        migrated(&db);
        let interval = Duration::from_millis(400);
        let cfg = FlushConfig {
            interval,
            ..config(&db.0, NATIVE_URL)
        };
        let h = Harness::start(cfg, TestDir::new("flush-steady"));
        let began = Instant::now();
        let mut sent: u64 = 0;
        while began.elapsed() < Duration::from_secs(2) {
            h.send(batch("o", &format!("t{sent}"), 2, 1_700_000_000_000));
            sent += 1;
            std::thread::sleep(Duration::from_millis(5));
        }
        let inserts = h.stats.batches_flushed.load(Ordering::Relaxed);
        let most = began.elapsed().as_millis() / interval.as_millis() + 1;
        assert!(inserts >= 1, "the interval passed while sending");
        assert!(
            inserts as u128 <= most,
            "{inserts} inserts in {:?} of steady intake; at most {most} expected",
            began.elapsed()
        );
        wait_for("every row", Duration::from_secs(5), || {
            rows_in(&db) == 2 * sent
        });
        let (report, _) = h.finish();
        assert_eq!(report.rows_spooled, 0);
    }

    #[test]
    fn flushes_at_max_rows_before_the_interval() {
        if skip() {
            return;
        }
        let db = TestDb::new("maxrows");
        migrated(&db);
        let cfg = FlushConfig {
            interval: Duration::from_secs(600),
            max_rows: 10,
            ..config(&db.0, NATIVE_URL)
        };
        let h = Harness::start(cfg, TestDir::new("flush-maxrows"));
        h.send(batch("o", "t1", 6, 1_700_000_000_000));
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            rows_in(&db),
            0,
            "6 rows < max_rows must wait for the interval"
        );
        h.send(batch("o", "t2", 6, 1_700_000_000_000));
        wait_for("12 rows", Duration::from_secs(5), || rows_in(&db) == 12);
        wait_for("buffered back to 0", Duration::from_secs(1), || {
            h.buffered.load(Ordering::Acquire) == 0
        });
        assert_eq!(h.stats.rows_flushed.load(Ordering::Relaxed), 12);
        // 6 + 6 > max_rows: two inserts, a batch is never cut.
        assert_eq!(h.stats.batches_flushed.load(Ordering::Relaxed), 2);
        let (report, _) = h.finish();
        assert_eq!(
            report,
            FlushReport {
                rows_flushed: 12,
                ..FlushReport::default()
            }
        );
    }

    #[test]
    fn flushes_on_the_interval_and_the_rest_on_disconnect() {
        if skip() {
            return;
        }
        let db = TestDb::new("interval");
        migrated(&db);
        let cfg = FlushConfig {
            interval: Duration::from_millis(300),
            max_rows: 1_000_000,
            ..config(&db.0, NATIVE_URL)
        };
        let h = Harness::start(cfg, TestDir::new("flush-interval"));
        let t0 = Instant::now();
        h.send(batch("o", "t1", 3, 1_700_000_000_000));
        wait_for("3 rows", Duration::from_secs(5), || rows_in(&db) == 3);
        assert!(t0.elapsed() >= Duration::from_millis(300));
        let (report, dir) = h.finish();
        assert_eq!(report.rows_flushed, 3);

        // The remainder goes out on disconnect, long before its interval.
        let cfg = FlushConfig {
            interval: Duration::from_secs(600),
            ..config(&db.0, NATIVE_URL)
        };
        let h = Harness::start(cfg, dir);
        for i in 0..5 {
            h.send(batch("o", &format!("t-{i}"), 4, 1_700_000_000_000));
        }
        let (report, _) = h.finish();
        assert_eq!(report.rows_flushed, 20);
        assert_eq!(rows_in(&db), 23);
    }

    #[test]
    fn refused_rows_go_to_the_dead_letter_file_and_the_rest_is_written() {
        if skip() {
            return;
        }
        let db = TestDb::new("poison");
        migrated(&db);
        http_query(&format!(
            "ALTER TABLE `{}`.spans ADD COLUMN poison UInt8 MATERIALIZED throwIf(span_id = 'poison')",
            db.0
        ));
        let cfg = FlushConfig {
            interval: Duration::from_secs(600),
            ..config(&db.0, NATIVE_URL)
        };
        let h = Harness::start(cfg, TestDir::new("flush-poison"));
        let bad = batch_then("o", "t1", 5, 1_700_000_000_000, "poison");
        h.send(batch("o", "t0", 3, 1_700_000_000_000));
        h.send(bad);
        h.send(batch("o", "t2", 4, 1_700_000_000_000));
        let stats = Arc::clone(&h.stats);
        let (report, dir) = h.finish();
        assert_eq!(
            report,
            FlushReport {
                rows_flushed: 12,
                rows_rejected: 1,
                ..FlushReport::default()
            }
        );
        assert_eq!(rows_in(&db), 12);
        assert_eq!(
            count(&format!(
                "SELECT count() FROM `{}`.spans WHERE span_id = 'poison'",
                db.0
            )),
            0
        );
        assert_eq!(stats.rows_rejected.load(Ordering::Relaxed), 1);
        let dead = std::fs::read_to_string(dir.path().join("deadletter/spans.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = dead
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{dead}");
        assert_eq!(lines[0]["span_id"], "poison");
        assert_eq!(lines[0]["code"], 395);
        assert_eq!(lines[0]["row"]["trace_id"], "t1");
    }

    /// Forwards every connection on `listener` to ClickHouse's native port.
    fn proxy(listener: TcpListener) {
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect("127.0.0.1:9000").unwrap();
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut c, mut s) = (client, server);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c, &mut s);
                    let _ = s.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s2, &mut c2);
                    let _ = c2.shutdown(std::net::Shutdown::Write);
                });
            }
        });
    }

    /// A port nobody listens on yet: ClickHouse "down" until `proxy` listens there.
    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn keeps_rows_and_accepts_more_while_clickhouse_is_down() {
        if skip() {
            return;
        }
        let db = TestDb::new("outage");
        migrated(&db);
        let port = free_port();
        let cfg = FlushConfig {
            interval: Duration::from_millis(50),
            ..config(&db.0, &format!("tcp://127.0.0.1:{port}"))
        };
        let h = Harness::start(cfg, TestDir::new("flush-outage"));
        for i in 0..10 {
            h.send(batch("o", &format!("t-{i}"), 2, 1_700_000_000_000));
            std::thread::sleep(Duration::from_millis(30));
        }
        assert!(h.stats.flush_errors.load(Ordering::Relaxed) >= 2);
        assert_eq!(h.buffered.load(Ordering::Acquire), 20);
        assert_eq!(rows_in(&db), 0);
        // ClickHouse "comes back".
        proxy(TcpListener::bind(("127.0.0.1", port)).unwrap());
        wait_for("20 rows", Duration::from_secs(5), || rows_in(&db) == 20);
        let (report, _) = h.finish();
        assert_eq!(report.rows_flushed, 20);
    }

    /// Memory holds at most its bound while ClickHouse is down: the rest goes to the spool,
    /// and comes back, every row once, when ClickHouse does; then the spool is empty.
    #[test]
    fn spills_past_the_memory_bound_and_replays_when_clickhouse_returns() {
        if skip() {
            return;
        }
        let db = TestDb::new("spill");
        migrated(&db);
        let port = free_port();
        let one = batch("o", "probe", 10, 0).heap_bytes() as u64;
        let cfg = FlushConfig {
            interval: Duration::from_millis(50),
            buffer_max_bytes: one * 8,
            ..config(&db.0, &format!("tcp://127.0.0.1:{port}"))
        };
        let h = Harness::start(cfg, TestDir::new("flush-spill"));
        let mut peak = 0;
        for i in 0..60 {
            h.send(batch("o", &format!("t-{i}"), 10, 1_700_000_000_000));
            // Workers refuse past the bound; this thread keeps memory under it by spooling.
            wait_for(
                "memory back under its bound",
                Duration::from_secs(10),
                || h.stats.buffered_bytes.load(Ordering::Acquire) <= one * 8,
            );
            peak = peak.max(h.stats.buffered_bytes.load(Ordering::Acquire));
        }
        assert!(peak <= one * 8);
        assert!(h.stats.rows_spooled.load(Ordering::Relaxed) >= 300);
        assert!(segments(&h.dir) > 0);
        assert_eq!(rows_in(&db), 0);
        proxy(TcpListener::bind(("127.0.0.1", port)).unwrap());
        wait_for("600 rows", Duration::from_secs(20), || rows_in(&db) == 600);
        wait_for("an empty spool", Duration::from_secs(5), || {
            h.stats.spool_rows.load(Ordering::Relaxed) == 0 && segments(&h.dir) == 0
        });
        assert!(h.stats.rows_replayed.load(Ordering::Relaxed) >= 300);
        assert_eq!(h.stats.spool_bytes.load(Ordering::Relaxed), 0);
        let (report, _) = h.finish();
        assert_eq!(report.rows_flushed, 600);
        assert_eq!(
            count(&format!(
                "SELECT uniqExact(trace_id, span_id) FROM `{}`.spans",
                db.0
            )),
            600
        );
    }

    /// Stopping while ClickHouse is unreachable spools what memory holds (quickly, not after
    /// the whole timeout); the next start on the same data directory inserts it.
    #[test]
    fn shutdown_spools_what_it_cannot_write_and_the_next_start_inserts_it() {
        let port = free_port();
        let cfg = FlushConfig {
            interval: Duration::from_secs(600),
            shutdown_timeout: Duration::from_secs(30),
            ..config(
                "ti_sink_test_unreachable",
                &format!("tcp://127.0.0.1:{port}"),
            )
        };
        let h = Harness::start(cfg, TestDir::new("flush-stop-spool"));
        h.send(batch("o", "t", 7, 1_700_000_000_000));
        // The last try at shutdown is refused at once: no waiting out the timeout.
        let t0 = Instant::now();
        let (report, dir) = h.finish();
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert_eq!(
            report,
            FlushReport {
                rows_spooled: 7,
                ..FlushReport::default()
            }
        );
        assert!(segments(&dir) > 0);
        if skip() {
            return;
        }
        let db = TestDb::new("restart");
        migrated(&db);
        let h = Harness::start(
            FlushConfig {
                interval: Duration::from_secs(600),
                ..config(&db.0, NATIVE_URL)
            },
            dir,
        );
        assert_eq!(h.stats.spool_rows.load(Ordering::Relaxed), 7, "recovered");
        wait_for("7 rows", Duration::from_secs(10), || rows_in(&db) == 7);
        let (report, dir) = h.finish();
        assert_eq!(report.rows_flushed, 7);
        assert_eq!(segments(&dir), 0, "confirmed segments are deleted");
    }

    /// A principal of an organisation with a monthly quota, for tickets.
    fn quota_principal(org: &str) -> crate::auth::Principal {
        use crate::admission::plan::Plan;
        use crate::admission::Account;
        let plan = Plan {
            name: "test".into(),
            monthly_spans: Some(1_000_000),
            rate: None,
        };
        let account = Arc::new(Account::new(org.into(), &plan));
        crate::auth::Principal::new(org.into(), "".into(), account)
    }

    /// Spans the quota was told left the buffer (in ClickHouse or given up), without losing
    /// them for the next look.
    fn flushed_spans(p: &crate::auth::Principal, month: crate::calendar::Month) -> u64 {
        let taken = p.account.usage.begin_sync(month);
        p.account.usage.abort_sync(month, taken);
        taken
    }

    /// A batch moved to the spool keeps its spans counted as buffered: the quota hears they
    /// left the buffer only once they are inserted, not when the memory copy is dropped.
    #[test]
    fn spooled_spans_stay_counted_until_they_are_inserted() {
        let p = quota_principal("o-quota");
        let now_ms = 1_700_000_000_000;
        let month = crate::calendar::Month::of_ms(now_ms);
        // ClickHouse "down" (nobody listens on the port) until the proxy starts.
        let db = (!skip()).then(|| {
            let db = TestDb::new("quota");
            migrated(&db);
            db
        });
        let database = db
            .as_ref()
            .map_or_else(|| "ti_sink_test_quota".to_string(), |d| d.0.clone());
        let port = free_port();
        let one = batch("o-quota", "probe", 10, 0).heap_bytes() as u64;
        let cfg = FlushConfig {
            interval: Duration::from_millis(50),
            buffer_max_bytes: one * 8,
            ..config(&database, &format!("tcp://127.0.0.1:{port}"))
        };
        let h = Harness::start(cfg, TestDir::new("flush-quota"));
        for i in 0..30 {
            let mut b = batch("o-quota", &format!("t-{i}"), 10, now_ms);
            let mut limits = crate::http::response::LimitHeaders::default();
            b.usage = crate::admission::admit(&p, 10, 0, now_ms, &mut limits)
                .unwrap()
                .into_ticket(&p);
            h.send(b);
            wait_for(
                "memory back under its bound",
                Duration::from_secs(10),
                || h.stats.buffered_bytes.load(Ordering::Acquire) <= one * 8,
            );
        }
        assert!(h.stats.spool_rows.load(Ordering::Relaxed) >= 100);
        assert_eq!(p.account.usage.used(month), 300);
        assert_eq!(
            flushed_spans(&p, month),
            0,
            "nothing is in ClickHouse: spooled spans must not count as flushed"
        );
        let Some(db) = db else {
            return;
        };
        proxy(TcpListener::bind(("127.0.0.1", port)).unwrap());
        wait_for("300 rows", Duration::from_secs(20), || rows_in(&db) == 300);
        wait_for("every span flushed", Duration::from_secs(5), || {
            flushed_spans(&p, month) == 300
        });
        let (report, _) = h.finish();
        assert_eq!(report.rows_flushed, 300);
    }

    #[test]
    fn migrates_when_the_table_is_missing() {
        if skip() {
            return;
        }
        let db = TestDb::new("remigrate");
        let cfg = FlushConfig {
            interval: Duration::from_millis(50),
            ..config(&db.0, NATIVE_URL)
        };
        let h = Harness::start(cfg, TestDir::new("flush-remigrate"));
        h.send(batch("o", "t", 3, 1_700_000_000_000));
        let (report, _) = h.finish();
        assert_eq!(report.rows_flushed, 3);
        assert_eq!(rows_in(&db), 3);
    }

    #[test]
    fn config_debug_hides_the_password() {
        let shown = format!("{:?}", FlushConfig::new("tcp://u:secret@h:9000", "db"));
        assert!(
            !shown.contains("secret") && shown.contains("***"),
            "{shown}"
        );
    }

    #[test]
    fn bisect_splits_across_pieces() {
        let dir = TestDir::new("flush-bisect");
        let cfg = config("unused", NATIVE_URL);
        let spool = Spool::open(
            SpoolConfig::new(dir.path().join("spool"), 1 << 20),
            Arc::clone(&cfg.stats),
        )
        .unwrap();
        let (_tx, rx) = crossbeam_channel::unbounded();
        let store = Store::new(NATIVE_URL, "unused").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut f = Flusher::new(
            cfg,
            store,
            rt,
            Input::Buffer(rx),
            spool,
            Arc::new(AtomicU64::new(0)),
        );
        for (trace, n) in [("a", 3), ("b", 4), ("c", 2)] {
            let b = batch("o", trace, n, 0);
            f.st.push(
                Entry {
                    bytes: 0,
                    usage: Cell::default(),
                    left: Cell::new(b.len()),
                    batch: b,
                    pos: None,
                    keep_record: Cell::new(false),
                },
                Instant::now(),
            );
        }
        let st = &mut f.st;
        assert_eq!(st.next_insert(), (3, 9));
        st.bisect(3, 9);
        let shape: Vec<(usize, usize, usize)> =
            st.queue.iter().map(|p| (p.start, p.end, p.cap)).collect();
        assert_eq!(shape, vec![(0, 3, 4), (0, 1, 4), (1, 4, 5), (0, 2, 5)]);
        assert_eq!(st.next_insert(), (2, 4));
        st.queue.drain(..2);
        assert_eq!(st.next_insert(), (2, 5));
        st.bisect(2, 5);
        let shape: Vec<(usize, usize, usize)> =
            st.queue.iter().map(|p| (p.start, p.end, p.cap)).collect();
        assert_eq!(shape, vec![(1, 3, 2), (3, 4, 3), (0, 2, 3)]);
        assert_eq!(st.next_insert(), (1, 2));
    }
}
