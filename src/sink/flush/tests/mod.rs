//! The flush thread against a real ClickHouse: insert timing, dead letters, outages, the
//! memory bound and the spool, shutdown, quota tickets (`live`); bisection, intents and retries
//! without it (`offline`), refused rows held (`held`), inserts refused for memory (`memory`),
//! a stop's partly settled batches (`stop`), a failed insert some shards wrote (`shards`).
//! The helpers they share are here.

use super::super::clickhouse::test_support::*;
use super::super::spool::SpoolConfig;
use super::super::test_dir::TestDir;
use super::*;
use crate::row::RowBatch;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;

mod held;
mod live;
mod memory;
mod offline;
mod shards;
mod stop;

fn config(db: &str, url: &str) -> FlushConfig {
    FlushConfig {
        retry_min: Duration::from_millis(20),
        retry_max: Duration::from_millis(200),
        ..FlushConfig::new(url, db)
    }
}

/// A flush thread in `buffer` mode with its data directory, fed the way workers feed it.
struct Harness {
    tx: Option<Intake<RowBatch>>,
    budget: Arc<MemoryBudget>,
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
        let budget = Arc::clone(&cfg.budget);
        let (tx, input) = Input::buffer(&budget);
        let thread = spawn(cfg, input, spool).unwrap();
        Harness {
            tx: Some(tx),
            budget,
            stats,
            thread: Some(thread),
            dir,
        }
    }

    /// Sends a batch the way a worker does: reserve rows and bytes (past the bound too: a
    /// test drives memory over it on purpose), then hand over.
    fn send(&self, b: RowBatch) {
        let (rows, bytes) = (b.len() as u64, b.heap_bytes() as u64);
        if self.budget.reserve(rows, bytes).is_err() {
            self.budget.take(rows, bytes);
        }
        self.tx.as_ref().unwrap().send(b).unwrap();
    }

    /// Closes intake and waits for the thread's report; hands back the data directory.
    fn finish(mut self) -> (FlushReport, TestDir) {
        drop(self.tx.take());
        let report = self.thread.take().unwrap().join().unwrap();
        assert_eq!(self.budget.rows(), 0, "rows released");
        assert_eq!(self.budget.bytes(), 0, "memory released");
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

/// A flusher that is not started, on a spool in `dir`: for tests of its queue alone.
fn offline_flusher(cfg: FlushConfig, dir: &TestDir) -> Flusher {
    let spool = Spool::open(
        SpoolConfig::new(dir.path().join("spool"), 1 << 20),
        Arc::clone(&cfg.stats),
    )
    .unwrap();
    let (_tx, input) = Input::buffer(&cfg.budget);
    let store = Store::new(NATIVE_URL, "unused").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    Flusher::new(cfg, store, rt, input, spool)
}
