//! The flush thread against a real ClickHouse: insert timing, dead letters, outages, the
//! memory bound and the spool, shutdown, quota tickets, bisection.

use super::super::clickhouse::test_support::*;
use super::super::spool::SpoolConfig;
use super::super::test_dir::TestDir;
use super::*;
use crate::row::RowBatch;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;

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
    // The first insert is waited for, not assumed done by now: on a loaded machine (CI builds
    // the fuzz targets beside the tests) it once took longer than the 2 s of sending. The
    // bound below counts the wait, and nothing is sent during it.
    wait_for("the first insert", Duration::from_secs(30), || {
        h.stats.batches_flushed.load(Ordering::Relaxed) >= 1
    });
    let inserts = h.stats.batches_flushed.load(Ordering::Relaxed);
    let most = began.elapsed().as_millis() / interval.as_millis() + 1;
    assert!(
        inserts as u128 <= most,
        "{inserts} inserts in {:?} of steady intake; at most {most} expected",
        began.elapsed()
    );
    wait_for("every row", Duration::from_secs(30), || {
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
        h.budget.rows() == 0
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

/// The byte bound starts an insert before the interval, as the row bound does, and caps it:
/// batches of more than `max_bytes` together go in one insert each.
#[test]
fn flushes_at_max_bytes_before_the_interval() {
    if skip() {
        return;
    }
    let db = TestDb::new("maxbytes");
    migrated(&db);
    let one = batch("o", "t0", 6, 1_700_000_000_000);
    let bytes = one.heap_bytes() as u64;
    let cfg = FlushConfig {
        interval: Duration::from_secs(600),
        max_rows: 1_000_000,
        max_bytes: bytes + bytes / 2,
        ..config(&db.0, NATIVE_URL)
    };
    let h = Harness::start(cfg, TestDir::new("flush-maxbytes"));
    h.send(one);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(rows_in(&db), 0, "under max_bytes: waits for the interval");
    h.send(batch("o", "t1", 6, 1_700_000_000_000));
    wait_for("12 rows", Duration::from_secs(5), || rows_in(&db) == 12);
    // Two batches are over max_bytes together: an insert each.
    assert_eq!(h.stats.batches_flushed.load(Ordering::Relaxed), 2);
    h.finish();
}

/// Between inserts the thread sleeps until the next one is due; memory past the budget's room
/// wakes it (the sender rings), so it spools at once instead of after the interval.
#[test]
fn memory_past_room_wakes_the_sleeping_thread_to_spool() {
    if skip() {
        return;
    }
    let db = TestDb::new("bell");
    migrated(&db);
    let one = batch("o", "probe", 10, 0).heap_bytes() as u64;
    let cfg = FlushConfig {
        interval: Duration::from_secs(600),
        budget: Arc::new(MemoryBudget::new(1_000_000, one * 8)),
        ..config(&db.0, NATIVE_URL)
    };
    let h = Harness::start(cfg, TestDir::new("flush-bell"));
    for i in 0..6 {
        h.send(batch("o", &format!("t-{i}"), 10, 1_700_000_000_000));
    }
    // Room is half the bound: four batches. The sixth is past it.
    wait_for(
        "memory back under its room",
        Duration::from_secs(10),
        || h.budget.bytes() <= one * 4,
    );
    assert!(h.stats.rows_spooled.load(Ordering::Relaxed) >= 10);
    // What the spool holds at the stop stays there for the next start.
    let (report, _) = h.finish();
    assert_eq!(report.rows_flushed + report.rows_spooled, 60);
    assert_eq!(rows_in(&db), report.rows_flushed);
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
        // Isolating the bad row takes several inserts, each on a fresh connection after the
        // refusal: room for that on a busy machine (the shutdown inserts for a third of it).
        shutdown_timeout: Duration::from_secs(60),
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
    assert_eq!(h.budget.rows(), 20);
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
        budget: Arc::new(MemoryBudget::new(1_000_000, one * 8)),
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
            || h.budget.bytes() <= one * 8,
        );
        peak = peak.max(h.budget.bytes());
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
    // The spool's rows are replayed at once (the interval is 10 minutes): checking
    // `spool_rows` here would race with that.
    wait_for("7 rows", Duration::from_secs(10), || rows_in(&db) == 7);
    assert_eq!(
        h.stats.rows_replayed.load(Ordering::Relaxed),
        7,
        "from the spool"
    );
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
        budget: Arc::new(MemoryBudget::new(1_000_000, one * 8)),
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
            || h.budget.bytes() <= one * 8,
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

#[test]
fn bisect_splits_across_pieces() {
    let dir = TestDir::new("flush-bisect");
    let cfg = config("unused", NATIVE_URL);
    let mut f = offline_flusher(cfg, &dir);
    for (trace, n) in [("a", 3), ("b", 4), ("c", 2)] {
        let b = batch("o", trace, n, 0);
        f.st.push(Entry::new(b, None), Instant::now());
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

/// Cluster mode's intent (`intent.rs`): a batch of more rows than `max_rows` is never cut
/// (an insert takes at least one whole piece), so its insert has an intent like any other and
/// a replay sends it as the same block. Only a refusal's bisection makes partial pieces; their
/// insert has no intent (the halves are new blocks anyway, also for the shards that took the
/// whole), which docs/fleet.md lists among the cases only `FINAL` collapses.
#[test]
fn a_batch_over_max_rows_is_one_insert_with_its_intent_and_bisected_halves_have_none() {
    let dir = TestDir::new("flush-intent");
    let cfg = FlushConfig {
        max_rows: 4,
        ..config("unused", NATIVE_URL)
    };
    let mut f = offline_flusher(cfg, &dir);
    let st = &mut f.st;
    let mut positions = Vec::new();
    for trace in ["a", "b"] {
        let b = batch("o", trace, 10, 0);
        let pos = st.spool.append(&b, false).unwrap();
        positions.push(format!("{} {}\n", pos.segment, pos.index));
        st.push(Entry::new(b, Some(pos)), Instant::now());
    }
    let intent = dir.path().join("spool").join("insert.intent");
    let written = || std::fs::read_to_string(&intent).ok();
    // 10 rows > max_rows 4: one whole batch per insert, with its intent.
    assert_eq!(st.next_insert(), (1, 10));
    st.note_intent(1);
    assert_eq!(written().as_deref(), Some(positions[0].as_str()));
    // Refused and bisected: halves of 5, which have no intent.
    st.bisect(1, 10);
    assert_eq!(written(), None, "a bisection drops the intent");
    assert_eq!(st.next_insert(), (1, 5));
    st.note_intent(1);
    assert_eq!(written(), None);
    // The bisected batch written, the next one is whole again.
    st.queue.drain(..2);
    assert_eq!(st.next_insert(), (1, 10));
    st.note_intent(1);
    assert_eq!(written().as_deref(), Some(positions[1].as_str()));
}

/// While the spool cannot be read back (an I/O error that may pass), the next insert is due
/// when the spool will be tried again, not at once: the thread waits for it instead of
/// spinning through `flush` and `refill`.
#[test]
fn a_failing_spool_read_is_waited_for_not_spun_on() {
    use crate::sink::faults::{self, Site};
    let dir = TestDir::new("flush-read-fails");
    let mut f = offline_flusher(config("unused", NATIVE_URL), &dir);
    let st = &mut f.st;
    for trace in ["a", "b"] {
        st.spool.append(&batch("o", trace, 3, 0), false).unwrap();
    }
    assert!(st.spool.backlog());
    faults::arm(Site::SpoolRead, 1);
    st.refill();
    assert!(st.queue.is_empty(), "nothing read");
    assert!(st.spool.backlog(), "nothing lost");
    let due = st.due().expect("the backlog is due");
    assert!(due > Instant::now(), "due when the read is tried again");
    assert_eq!(Some(due), st.spool.read_retry_at());
}

/// Cluster mode's intent after a stop that followed an outage: the previous run's frozen
/// insert was spooled last, behind batches spilled earlier, so it is read back only after
/// other inserts. Its intent must outlive those inserts' own intents and this run's stop,
/// or the next start would replay its records as ordinary batches, in other blocks.
#[test]
fn audit_previous_runs_intent_survives_a_new_insert_and_a_stop() {
    let dir = TestDir::new("audit-intent");
    let cfg = FlushConfig {
        max_rows: 4,
        ..config("unused", NATIVE_URL)
    };
    let intent = dir.path().join("spool").join("insert.intent");
    let frozen = {
        let mut f = offline_flusher(cfg.clone(), &dir);
        for trace in ["s1", "s2", "s3"] {
            f.st.spool.append(&batch("o", trace, 3, 0), false).unwrap();
        }
        let frozen =
            f.st.spool
                .append(&batch("o", "frozen", 3, 0), false)
                .unwrap();
        f.st.spool.sync().unwrap();
        f.st.note_stopped_intent(&[frozen]);
        frozen
    };
    let want = format!("{} {}\n", frozen.segment, frozen.index);
    let mut f = offline_flusher(cfg, &dir);
    f.st.load_intent();
    f.st.refill();
    assert!(!f.st.intents.is_empty());
    let (pieces, _) = f.st.next_insert();
    f.st.note_intent(pieces);
    f.st.frozen = Some((pieces, ShardsDone::default()));
    f.st.spool_everything();
    let after_stop = std::fs::read_to_string(&intent).ok();
    assert!(
        after_stop
            .as_deref()
            .is_some_and(|t| t.contains(want.as_str())),
        "{after_stop:?} want {want:?}"
    );
}

/// Each unfinished insert an intent file names is replayed alone, as the same pieces, after
/// whatever insert is frozen already (never in its place); an insert written in between keeps
/// the others in the file; a stop during the replay keeps them all.
#[test]
fn unfinished_inserts_of_earlier_runs_are_replayed_one_by_one_after_the_frozen_one() {
    use crate::sink::clickhouse::Inserted;
    let dir = TestDir::new("flush-intents");
    let cfg = FlushConfig {
        max_rows: 4,
        ..config("unused", NATIVE_URL)
    };
    let intent = dir.path().join("spool").join("insert.intent");
    let on_disk = || std::fs::read_to_string(&intent).unwrap_or_default();
    use crate::sink::segment::RecordPos;
    let line = |p: RecordPos| format!("{} {}\n", p.segment, p.index);
    let [a, b, c, d] = {
        let mut f = offline_flusher(cfg.clone(), &dir);
        let st = &mut f.st;
        let at =
            ["a", "b", "c", "d"].map(|t| st.spool.append(&batch("o", t, 3, 0), false).unwrap());
        st.spool.sync().unwrap();
        // Two unfinished inserts, as two stops in a row leave them: `d` (the older) and `b`.
        st.note_stopped_intent(&[at[3]]);
        st.intents = vec![vec![(at[3].segment, at[3].index)]];
        st.note_stopped_intent(&[at[1]]);
        at
    };
    assert_eq!(on_disk(), format!("{}\n{}", line(d), line(b)));
    let mut f = offline_flusher(cfg.clone(), &dir);
    let st = &mut f.st;
    st.load_intent();
    assert_eq!(st.intents.len(), 2);
    // `a` is read back and frozen after a failed insert; then the rest is read.
    st.cfg.max_rows = 1;
    st.refill();
    st.cfg.max_rows = 100;
    let ids = |st: &State| -> Vec<(u64, u32)> {
        st.queue
            .iter()
            .map(|p| p.entry.pos.map(|p| (p.segment, p.index)).unwrap())
            .collect()
    };
    let done = ShardsDone::default();
    st.frozen = Some((1, done));
    st.refill();
    // Everything is read; `b` and `d` are complete, but `a` stays the frozen insert.
    assert!(!st.spool.backlog());
    assert_eq!(st.frozen, Some((1, done)));
    assert_eq!(ids(st)[0], (a.segment, a.index));
    // `a` written: the next insert is `d`, alone, then `b`, alone; `c` after them.
    let write = |st: &mut State| {
        let (pieces, rows) = st.next_insert();
        st.frozen = None;
        st.clear_intent();
        st.written(pieces, Inserted { rows, bytes: 0 }, Duration::ZERO);
    };
    write(st);
    st.refill();
    assert_eq!(ids(st), vec![(d.segment, d.index), (c.segment, c.index)]);
    assert_eq!(st.next_insert(), (1, 3));
    assert!(st.frozen.is_some());
    assert_eq!(on_disk(), format!("{}\n{}", line(b), line(d)));
    write(st);
    assert_eq!(on_disk(), line(b), "d is written, b is still to replay");
    st.refill();
    assert_eq!(ids(st), vec![(b.segment, b.index), (c.segment, c.index)]);
    assert_eq!(st.next_insert(), (1, 3));
    // A stop (or a kill) during the replay of `b`: the next start replays it again.
    st.spool_everything();
    assert_eq!(on_disk(), line(b));
}

/// Errors that are nobody's rows' fault (found by an audit: ZooKeeper lost by a replicated
/// table, a ClickHouse quota, a full disk, an insert of unknown outcome) keep the rows however
/// often they come back: before, they were `Unknown`, so after 8 tries the insert was split
/// down to single rows and every good row dead-lettered.
#[test]
fn transient_server_errors_never_dead_letter_good_rows() {
    use clickhouse_rs::errors::{Error as ChError, ServerError};
    let dir = TestDir::new("flush-transient");
    let cfg = FlushConfig {
        dead_letter_dir: dir.path().join("deadletter"),
        ..config("unused", NATIVE_URL)
    };
    let mut f = offline_flusher(cfg, &dir);
    let st = &mut f.st;
    for (trace, n) in [("a", 3), ("b", 4)] {
        let b = batch("o", trace, n, 1_700_000_000_000);
        st.cfg.budget.take(b.len() as u64, b.heap_bytes() as u64);
        st.push(Entry::new(b, None), Instant::now());
    }
    let err = |code: u32, message: &str| {
        InsertError::from(ChError::Server(ServerError {
            code,
            name: "DB::Exception".into(),
            message: message.into(),
            stack_trace: String::new(),
        }))
    };
    for (code, message) in [
        (225, "ZooKeeper session has been expired."),
        (319, "Unknown status, client must retry"),
        (201, "Quota for user default expired"),
        (
            75,
            "Cannot write to file, errno: 28, strerror: No space left on device",
        ),
    ] {
        let e = err(code, message);
        for _ in 0..20 {
            let (pieces, rows) = st.next_insert();
            assert!(!st.failed(pieces, rows, &e), "backs off, no split");
        }
        assert_eq!(st.report.rows_rejected, 0, "code {code}");
        assert_eq!(st.queued_rows, 7, "code {code}: every row kept");
        assert!(
            st.queue.iter().all(|p| p.cap == usize::MAX),
            "code {code}: not split"
        );
    }
}
