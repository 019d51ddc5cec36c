//! The flush thread: buffers the `RowBatch`es workers send and writes them to ClickHouse in batched inserts.
//!
//! One named thread (`flush`) with its own current-thread tokio runtime. The thread blocks on the
//! crossbeam channel with a deadline (`recv_deadline`), never inside the runtime, and enters the
//! runtime only for the duration of one insert (`block_on`). So:
//!
//! - an insert starts when `max_rows` rows are waiting or `interval` has passed since the oldest
//!   waiting row arrived, whichever comes first; every flush writes everything waiting, in
//!   inserts of at most `max_rows` rows (a batch is never cut in normal operation);
//! - while a failed insert waits for its retry (capped exponential backoff with jitter), the
//!   thread keeps receiving, so accepted rows pile up here rather than in the workers; workers
//!   bound the total with `buffered_rows`, which this thread decrements once rows are written
//!   or given up;
//! - a refused insert is bisected until the rows ClickHouse refuses are isolated; those are
//!   logged with their (org, trace, span) ids at error level and counted. Nothing is dropped
//!   silently. (A later issue adds a dead-letter file for them; that is where they will go.)
//! - when every sender is gone the thread writes what is left, retrying until
//!   `shutdown_timeout`, then reports what it could not write.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::clickhouse::{InsertError, Inserted, Retry, RowRun, Store, StoreError};
use crate::metrics::Histogram;
use crate::row::RowBatch;

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
    /// After the channel closes, how long to keep retrying before giving up on what is left.
    pub shutdown_timeout: Duration,
    /// First retry delay after a transient failure.
    pub retry_min: Duration,
    /// Cap of the exponential retry delay.
    pub retry_max: Duration,
    /// Counters for the metrics endpoint; the caller keeps a clone.
    pub stats: Arc<FlushStats>,
}

impl FlushConfig {
    /// The defaults of the contract: flush every second or at 10 000 rows, retry 100 ms .. 5 s,
    /// 10 s to drain at shutdown.
    pub fn new(url: impl Into<String>, database: impl Into<String>) -> FlushConfig {
        FlushConfig {
            url: url.into(),
            database: database.into(),
            interval: Duration::from_millis(1000),
            max_rows: 10_000,
            shutdown_timeout: Duration::from_secs(10),
            retry_min: Duration::from_millis(100),
            retry_max: Duration::from_secs(5),
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
            .finish_non_exhaustive()
    }
}

/// Counters a metrics endpoint reads while the thread runs.
#[derive(Debug, Default)]
pub struct FlushStats {
    /// Successful inserts.
    pub batches_flushed: AtomicU64,
    pub rows_flushed: AtomicU64,
    /// Failed insert attempts (each retry counts).
    pub flush_errors: AtomicU64,
    /// Duration of the last successful insert, ms.
    pub last_flush_ms: AtomicU64,
    /// When the last successful insert finished, epoch ms (0 = never).
    pub last_flush_at_ms: AtomicU64,
    /// Rows ClickHouse refused for good (logged with their ids).
    pub rows_rejected: AtomicU64,
    /// Durations of successful inserts.
    pub flush_duration: Histogram,
}

/// What the thread did, returned when it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushReport {
    pub rows_flushed: u64,
    /// Rows ClickHouse refused for good; each was logged with its ids at error level.
    pub rows_rejected: u64,
    /// Rows still buffered when the shutdown deadline passed (logged at error level).
    pub rows_unwritten: u64,
}

/// Starts the flush thread. Fails only on a bad URL or database name, or if the runtime cannot
/// be built: nothing is received before the store and runtime exist.
pub fn spawn(
    cfg: FlushConfig,
    rx: Receiver<RowBatch>,
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
        .spawn(move || Flusher::new(cfg, store, rt, buffered_rows).run(rx))
        .map_err(|e| StoreError {
            code: None,
            message: format!("cannot start the flush thread: {e}"),
        })?;
    Ok(handle)
}

/// Rows of one batch waiting in the buffer.
struct Piece {
    /// Shared by the pieces of a batch being bisected; dropped with its last piece.
    batch: Rc<RowBatch>,
    /// Range of `batch.rows` this piece covers.
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

    fn run(&self) -> RowRun<'_> {
        RowRun {
            batch: &self.batch,
            rows: &self.batch.rows[self.start..self.end],
        }
    }
}

struct Flusher {
    cfg: FlushConfig,
    store: Store,
    /// Entered only for one insert or migration at a time.
    rt: tokio::runtime::Runtime,
    /// Oldest first.
    queue: VecDeque<Piece>,
    queued_rows: usize,
    /// Shared with the workers: rows accepted but not yet written or given up.
    buffered_rows: Arc<AtomicU64>,
    /// Consecutive transient failures, for the backoff.
    attempt: u32,
    /// No insert before this instant (backing off after a transient failure).
    retry_at: Option<Instant>,
    /// A failure said the table or a column is missing: migrate before the next insert.
    needs_migrate: bool,
    /// Jitter source (splitmix64 state).
    rng: u64,
    report: FlushReport,
}

impl Flusher {
    fn new(
        cfg: FlushConfig,
        store: Store,
        rt: tokio::runtime::Runtime,
        buffered_rows: Arc<AtomicU64>,
    ) -> Flusher {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64);
        Flusher {
            cfg,
            store,
            rt,
            queue: VecDeque::new(),
            queued_rows: 0,
            buffered_rows,
            attempt: 0,
            retry_at: None,
            needs_migrate: false,
            rng: seed,
            report: FlushReport::default(),
        }
    }

    fn run(mut self, rx: Receiver<RowBatch>) -> FlushReport {
        loop {
            let received = match self.due() {
                Some(at) if at <= Instant::now() => {
                    self.flush(None);
                    continue;
                }
                Some(at) => rx.recv_deadline(at),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match received {
                Ok(batch) => self.push(batch),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        self.shutdown()
    }

    /// When the next insert should start, if anything is waiting.
    fn due(&self) -> Option<Instant> {
        let oldest = self.queue.front()?.arrived;
        let at = if self.queued_rows >= self.cfg.max_rows {
            oldest
        } else {
            oldest + self.cfg.interval
        };
        Some(self.retry_at.map_or(at, |r| r.max(at)))
    }

    fn push(&mut self, batch: RowBatch) {
        if batch.is_empty() {
            return;
        }
        self.queued_rows += batch.len();
        self.queue.push_back(Piece {
            start: 0,
            end: batch.len(),
            batch: Rc::new(batch),
            arrived: Instant::now(),
            cap: usize::MAX,
        });
    }

    /// Writes everything waiting, insert by insert, until done or a transient failure.
    fn flush(&mut self, deadline: Option<Instant>) {
        while !self.queue.is_empty() {
            if self.needs_migrate {
                match self.block_on(self.store.migrate(), deadline) {
                    Ok(Ok(())) => self.needs_migrate = false,
                    Ok(Err(e)) => {
                        let err = InsertError {
                            retry: Retry::AfterMigrate,
                            code: e.code,
                            message: format!("migrate before retry failed: {e}"),
                        };
                        return self.back_off(&err);
                    }
                    Err(timeout) => return self.back_off(&timeout),
                }
            }
            let (pieces, rows) = self.next_insert();
            let started = Instant::now();
            let result = {
                let runs: Vec<RowRun<'_>> =
                    self.queue.iter().take(pieces).map(Piece::run).collect();
                self.block_on(self.store.insert_runs(&runs), deadline)
                    .unwrap_or_else(Err)
            };
            match result {
                Ok(inserted) => self.written(pieces, inserted, started.elapsed()),
                Err(e) => {
                    self.cfg.stats.flush_errors.fetch_add(1, Ordering::Relaxed);
                    match e.retry {
                        Retry::Later | Retry::AfterMigrate => {
                            self.needs_migrate |= e.retry == Retry::AfterMigrate;
                            return self.back_off(&e);
                        }
                        Retry::Split if rows > 1 => {
                            tracing::warn!(
                                rows,
                                code = e.code,
                                error = %e,
                                "insert refused; splitting it to isolate the rows at fault"
                            );
                            self.bisect(pieces, rows);
                        }
                        Retry::Split | Retry::Never => self.reject(pieces, rows, &e),
                    }
                }
            }
        }
    }

    /// Runs a future on the thread's runtime, bounded by `deadline` when there is one.
    fn block_on<T>(
        &self,
        fut: impl Future<Output = T>,
        deadline: Option<Instant>,
    ) -> Result<T, InsertError> {
        match deadline {
            None => Ok(self.rt.block_on(fut)),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                self.rt
                    .block_on(async { tokio::time::timeout(left, fut).await })
                    .map_err(|_| InsertError::timed_out())
            }
        }
    }

    /// The front pieces that make the next insert: at most `max_rows` rows (and no more than
    /// any included piece's cap), but always at least one piece.
    fn next_insert(&self) -> (usize, usize) {
        let (mut pieces, mut rows, mut cap) = (0, 0, usize::MAX);
        for p in &self.queue {
            let cap_with = cap.min(p.cap);
            if pieces > 0 && rows + p.len() > self.cfg.max_rows.min(cap_with) {
                break;
            }
            pieces += 1;
            rows += p.len();
            cap = cap_with;
        }
        (pieces, rows)
    }

    fn written(&mut self, pieces: usize, inserted: Inserted, took: Duration) {
        self.queue.drain(..pieces);
        self.queued_rows -= inserted.rows;
        self.buffered_rows
            .fetch_sub(inserted.rows as u64, Ordering::AcqRel);
        self.attempt = 0;
        self.retry_at = None;
        self.report.rows_flushed += inserted.rows as u64;
        let ms = took.as_millis() as u64;
        let stats = &self.cfg.stats;
        stats.batches_flushed.fetch_add(1, Ordering::Relaxed);
        stats
            .rows_flushed
            .fetch_add(inserted.rows as u64, Ordering::Relaxed);
        stats.last_flush_ms.store(ms, Ordering::Relaxed);
        stats.flush_duration.observe(took);
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        stats.last_flush_at_ms.store(now_ms, Ordering::Relaxed);
        tracing::info!(
            rows = inserted.rows,
            bytes = inserted.bytes,
            ms,
            waiting = self.queued_rows,
            "flushed spans"
        );
    }

    /// Keeps every row and schedules the next attempt.
    fn back_off(&mut self, e: &InsertError) {
        let delay = self.backoff_delay();
        self.attempt = self.attempt.saturating_add(1);
        self.retry_at = Some(Instant::now() + delay);
        tracing::warn!(
            attempt = self.attempt,
            retry_in_ms = delay.as_millis() as u64,
            waiting = self.queued_rows,
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
                    batch: Rc::clone(&p.batch),
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

    /// Gives up rows ClickHouse will never take, logging each one's ids.
    fn reject(&mut self, pieces: usize, rows: usize, e: &InsertError) {
        // The server answered: connectivity is fine, whatever the backoff had reached.
        self.attempt = 0;
        self.retry_at = None;
        tracing::error!(
            rows,
            code = e.code,
            error = %e,
            "ClickHouse refused rows for good; giving them up"
        );
        for p in self.queue.drain(..pieces) {
            for row in &p.batch.rows[p.start..p.end] {
                tracing::error!(
                    org_id = p.batch.str(row.org_id),
                    trace_id = p.batch.str(row.trace_id),
                    span_id = p.batch.str(row.span_id),
                    code = e.code,
                    error = %e,
                    "span not written"
                );
            }
        }
        self.queued_rows -= rows;
        self.buffered_rows.fetch_sub(rows as u64, Ordering::AcqRel);
        self.report.rows_rejected += rows as u64;
        self.cfg
            .stats
            .rows_rejected
            .fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// All senders are gone: write what is left, retrying until the shutdown deadline.
    fn shutdown(mut self) -> FlushReport {
        let deadline = Instant::now() + self.cfg.shutdown_timeout;
        while !self.queue.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match self.retry_at {
                Some(at) if at > now => std::thread::sleep(at.min(deadline) - now),
                _ => self.flush(Some(deadline)),
            }
        }
        if self.queued_rows > 0 {
            let rows = self.queued_rows as u64;
            tracing::error!(
                rows,
                timeout_ms = self.cfg.shutdown_timeout.as_millis() as u64,
                "shutdown deadline passed; rows could not be written to ClickHouse"
            );
            self.buffered_rows.fetch_sub(rows, Ordering::AcqRel);
            self.report.rows_unwritten = rows;
            self.queue.clear();
            self.queued_rows = 0;
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::super::clickhouse::test_support::*;
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn config(db: &str, url: &str) -> FlushConfig {
        FlushConfig {
            retry_min: Duration::from_millis(20),
            retry_max: Duration::from_millis(200),
            ..FlushConfig::new(url, db)
        }
    }

    /// Sends a batch the way a worker does: count first, then hand over.
    fn send(tx: &crossbeam_channel::Sender<RowBatch>, buffered: &AtomicU64, b: RowBatch) {
        buffered.fetch_add(b.len() as u64, Ordering::AcqRel);
        tx.send(b).unwrap();
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
        let stats = Arc::clone(&cfg.stats);
        let buffered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::bounded(16);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        send(&tx, &buffered, batch("o", "t1", 6, 1_700_000_000_000));
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            rows_in(&db),
            0,
            "6 rows < max_rows must wait for the interval"
        );
        send(&tx, &buffered, batch("o", "t2", 6, 1_700_000_000_000));
        wait_for("12 rows", Duration::from_secs(5), || rows_in(&db) == 12);
        wait_for("buffered back to 0", Duration::from_secs(1), || {
            buffered.load(Ordering::Acquire) == 0
        });
        assert_eq!(stats.rows_flushed.load(Ordering::Relaxed), 12);
        // 6 + 6 > max_rows: two inserts, a batch is never cut.
        assert_eq!(stats.batches_flushed.load(Ordering::Relaxed), 2);
        drop(tx);
        let report = flusher.join().unwrap();
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
        let buffered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::bounded(16);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        let t0 = Instant::now();
        send(&tx, &buffered, batch("o", "t1", 3, 1_700_000_000_000));
        wait_for("3 rows", Duration::from_secs(5), || rows_in(&db) == 3);
        assert!(t0.elapsed() >= Duration::from_millis(300));

        // The remainder goes out on disconnect, long before its interval.
        let cfg = FlushConfig {
            interval: Duration::from_secs(600),
            ..config(&db.0, NATIVE_URL)
        };
        drop(tx);
        assert_eq!(flusher.join().unwrap().rows_flushed, 3);
        let (tx, rx) = crossbeam_channel::bounded(16);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        for i in 0..5 {
            send(
                &tx,
                &buffered,
                batch("o", &format!("t-{i}"), 4, 1_700_000_000_000),
            );
        }
        drop(tx);
        let report = flusher.join().unwrap();
        assert_eq!(report.rows_flushed, 20);
        assert_eq!(rows_in(&db), 23);
        assert_eq!(buffered.load(Ordering::Acquire), 0);
    }

    #[test]
    fn refused_rows_are_isolated_and_the_rest_written() {
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
        let stats = Arc::clone(&cfg.stats);
        let buffered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::bounded(16);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        let mut bad = batch("o", "t1", 5, 1_700_000_000_000);
        push_row(&mut bad, "o", "t1", "poison", 1_700_000_000_000, true);
        send(&tx, &buffered, batch("o", "t0", 3, 1_700_000_000_000));
        send(&tx, &buffered, bad);
        send(&tx, &buffered, batch("o", "t2", 4, 1_700_000_000_000));
        drop(tx);
        let report = flusher.join().unwrap();
        assert_eq!(
            report,
            FlushReport {
                rows_flushed: 12,
                rows_rejected: 1,
                rows_unwritten: 0
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
        assert_eq!(buffered.load(Ordering::Acquire), 0);
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

    #[test]
    fn keeps_rows_and_accepts_more_while_clickhouse_is_down() {
        if skip() {
            return;
        }
        let db = TestDb::new("outage");
        migrated(&db);
        // A port nobody listens on yet: ClickHouse "down".
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = FlushConfig {
            interval: Duration::from_millis(50),
            ..config(&db.0, &format!("tcp://127.0.0.1:{port}"))
        };
        let stats = Arc::clone(&cfg.stats);
        let buffered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::bounded(4);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        // More batches than the channel holds: the thread must keep receiving while failing.
        for i in 0..10 {
            send(
                &tx,
                &buffered,
                batch("o", &format!("t-{i}"), 2, 1_700_000_000_000),
            );
            std::thread::sleep(Duration::from_millis(30));
        }
        assert!(stats.flush_errors.load(Ordering::Relaxed) >= 2);
        assert_eq!(buffered.load(Ordering::Acquire), 20);
        assert_eq!(rows_in(&db), 0);
        // ClickHouse "comes back".
        proxy(TcpListener::bind(("127.0.0.1", port)).unwrap());
        wait_for("20 rows", Duration::from_secs(5), || rows_in(&db) == 20);
        drop(tx);
        let report = flusher.join().unwrap();
        assert_eq!(report.rows_flushed, 20);
        assert_eq!(buffered.load(Ordering::Acquire), 0);
    }

    #[test]
    fn shutdown_gives_up_after_the_timeout_when_clickhouse_is_unreachable() {
        let cfg = FlushConfig {
            interval: Duration::from_secs(600),
            shutdown_timeout: Duration::from_millis(400),
            ..config("ti_sink_test_unreachable", "tcp://127.0.0.1:1")
        };
        let buffered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::bounded(4);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        send(&tx, &buffered, batch("o", "t", 7, 1_700_000_000_000));
        let t0 = Instant::now();
        drop(tx);
        let report = flusher.join().unwrap();
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(400) && took < Duration::from_secs(3),
            "{took:?}"
        );
        assert_eq!(
            report,
            FlushReport {
                rows_unwritten: 7,
                ..FlushReport::default()
            }
        );
        assert_eq!(buffered.load(Ordering::Acquire), 0);
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
        let buffered = Arc::new(AtomicU64::new(0));
        let (tx, rx) = crossbeam_channel::bounded(4);
        let flusher = spawn(cfg, rx, Arc::clone(&buffered)).unwrap();
        send(&tx, &buffered, batch("o", "t", 3, 1_700_000_000_000));
        drop(tx);
        assert_eq!(flusher.join().unwrap().rows_flushed, 3);
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
        let store = Store::new(NATIVE_URL, "unused").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut f = Flusher::new(
            config("unused", NATIVE_URL),
            store,
            rt,
            Arc::new(AtomicU64::new(0)),
        );
        f.push(batch("o", "a", 3, 0));
        f.push(batch("o", "b", 4, 0));
        f.push(batch("o", "c", 2, 0));
        assert_eq!(f.next_insert(), (3, 9));
        f.bisect(3, 9);
        let shape: Vec<(usize, usize, usize)> =
            f.queue.iter().map(|p| (p.start, p.end, p.cap)).collect();
        assert_eq!(shape, vec![(0, 3, 4), (0, 1, 4), (1, 4, 5), (0, 2, 5)]);
        assert_eq!(f.next_insert(), (2, 4));
        f.queue.drain(..2);
        assert_eq!(f.next_insert(), (2, 5));
        f.bisect(2, 5);
        let shape: Vec<(usize, usize, usize)> =
            f.queue.iter().map(|p| (p.start, p.end, p.cap)).collect();
        assert_eq!(shape, vec![(1, 3, 2), (3, 4, 3), (0, 2, 3)]);
        assert_eq!(f.next_insert(), (1, 2));
    }
}
