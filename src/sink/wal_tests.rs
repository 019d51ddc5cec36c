//! Tests of `wal.rs`.

use super::*;
use crate::sink::clickhouse::test_support::batch;
use crate::sink::segment;
use crate::sink::test_dir::TestDir;
use crossbeam_channel::Sender;

/// The channels and settings of a write-ahead thread not started yet.
struct Setup {
    tx: Sender<WalRequest>,
    rx: Receiver<WalRequest>,
    out: Receiver<WalEvent>,
    out_tx: Sender<WalEvent>,
    stats: Arc<FlushStats>,
    cfg: SpoolConfig,
}

fn setup(dir: &TestDir, max_bytes: u64) -> Setup {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (out_tx, out) = crossbeam_channel::unbounded();
    Setup {
        tx,
        rx,
        out,
        out_tx,
        stats: Arc::default(),
        cfg: SpoolConfig::new(dir.path().to_path_buf(), max_bytes),
    }
}

/// A write-ahead thread running on a fresh spool of `max_bytes`.
struct Running {
    tx: Sender<WalRequest>,
    out: Receiver<WalEvent>,
    stats: Arc<FlushStats>,
    handle: JoinHandle<()>,
}

fn running(dir: &TestDir, max_bytes: u64) -> Running {
    let s = setup(dir, max_bytes);
    let writer = Writer::create(dir.path(), 1).unwrap();
    s.stats.spool_bytes.store(HEADER_LEN, Ordering::Relaxed);
    let handle = spawn(s.cfg, writer, Arc::clone(&s.stats), s.rx, s.out_tx).unwrap();
    Running {
        tx: s.tx,
        out: s.out,
        stats: s.stats,
        handle,
    }
}

/// The batches the flush thread was sent so far, without the segment announcements.
fn logged(out: &Receiver<WalEvent>) -> Vec<Logged> {
    out.try_iter()
        .filter_map(|e| match e {
            WalEvent::Logged(l) => Some(l),
            WalEvent::Started { .. } => None,
        })
        .collect()
}

fn request(tx: &Sender<WalRequest>, trace: &str) -> oneshot::Receiver<Result<(), WalRefusal>> {
    let (done, wait) = oneshot::channel();
    tx.send(WalRequest {
        batch: batch("o", trace, 3, 1_700_000_000_000),
        done,
    })
    .unwrap();
    wait
}

/// Started without a segment (none could be created at start-up: a full disk), the thread
/// refuses batches while it still cannot make one, and takes them once it can.
#[test]
fn without_a_first_segment_batches_are_refused_until_one_can_be_made() {
    let dir = TestDir::new("wal-no-segment");
    let Setup {
        tx,
        rx,
        out,
        out_tx,
        stats,
        mut cfg,
    } = setup(&dir, 1 << 30);
    // A directory that is not there yet stands for the disk that cannot take a file.
    cfg.dir = dir.path().join("later");
    let later = cfg.dir.clone();
    let handle = spawn_without_segment(cfg, 5, Arc::clone(&stats), rx, out_tx).unwrap();
    assert_eq!(
        futures_executor_block_on(request(&tx, "refused")),
        Ok(Err(WalRefusal::Failed))
    );
    std::fs::create_dir_all(&later).unwrap();
    assert_eq!(futures_executor_block_on(request(&tx, "taken")), Ok(Ok(())));
    drop(tx);
    handle.join().unwrap();
    let logged = logged(&out);
    assert_eq!(logged.len(), 1);
    assert!(logged[0].pos.segment > 5, "{:?}", logged[0].pos);
    let s = segment::scan(
        &segment::segment_path(&later, logged[0].pos.segment),
        |_, p| codec::rows_in(p).map_or(0, u64::from),
    )
    .unwrap();
    assert_eq!((s.records, s.rows), (1, 3));
}

/// Requests waiting together share one fsync, are answered in order, and reach the
/// flusher with their positions; the records are in the segment.
#[test]
fn a_group_shares_one_fsync() {
    let dir = TestDir::new("wal-group");
    let Setup {
        tx,
        rx,
        out,
        out_tx,
        stats,
        cfg,
    } = setup(&dir, 1 << 30);
    let waits: Vec<_> = (0..50).map(|i| request(&tx, &format!("t{i}"))).collect();
    drop(tx);
    let writer = Writer::create(dir.path(), 7).unwrap();
    spawn(cfg, writer, Arc::clone(&stats), rx, out_tx)
        .unwrap()
        .join()
        .unwrap();
    for w in waits {
        assert_eq!(futures_executor_block_on(w), Ok(Ok(())));
    }
    assert_eq!(stats.wal_syncs.load(Ordering::Relaxed), 1);
    assert_eq!(stats.wal_batches.load(Ordering::Relaxed), 50);
    let logged = logged(&out);
    assert_eq!(logged.len(), 50);
    for (i, l) in logged.iter().enumerate() {
        assert_eq!((l.pos.segment, l.pos.index), (7, i as u32));
    }
    let s = segment::scan(&segment::segment_path(dir.path(), 7), |_, p| {
        u64::from(codec::rows_in(p).unwrap())
    })
    .unwrap();
    assert_eq!((s.records, s.rows), (50, 150));
    assert_eq!(
        stats.spool_bytes.load(Ordering::Relaxed),
        s.len - HEADER_LEN,
        "the first segment's header is counted by whoever created it"
    );
}

#[test]
fn refuses_past_the_spool_bound_and_rolls_segments() {
    let dir = TestDir::new("wal-full");
    // Room for a few records only (each about 1.3 KiB); segments of 4 KiB.
    let Running {
        tx,
        out,
        stats,
        handle,
    } = running(&dir, 12 << 10);
    let mut answers = Vec::new();
    for i in 0..20 {
        // One at a time: each is its own group.
        answers.push(futures_executor_block_on(request(&tx, &format!("t{i}"))).unwrap());
    }
    drop(tx);
    handle.join().unwrap();
    let ok = answers.iter().filter(|a| a.is_ok()).count();
    assert!((2..20).contains(&ok), "{answers:?}");
    assert!(answers[ok..].iter().all(|a| *a == Err(WalRefusal::Full)));
    assert!(stats.full.load(Ordering::Relaxed));
    assert!(stats.spool_bytes.load(Ordering::Relaxed) <= 12 << 10);
    let segments: std::collections::BTreeSet<u64> =
        logged(&out).iter().map(|l| l.pos.segment).collect();
    assert!(segments.len() >= 2, "rolled to a new segment: {segments:?}");
}

/// A roll that fails after its file was made (the disk full while writing the header, an
/// EIO on its fsync) may leave the file behind when it cannot be removed either. The next
/// roll takes a fresh id: one group is refused, the log goes on. (It used to try the same
/// id again and get EEXIST for good: every request `503` until a restart.)
#[test]
fn a_leftover_segment_file_does_not_wedge_the_log() {
    let dir = TestDir::new("wal-leftover");
    let mut s = setup(&dir, 1 << 30);
    s.cfg.segment_bytes = 4 << 10;
    // What a failed create of segment 2 left: a file without even its header.
    std::fs::write(segment::segment_path(dir.path(), 2), b"").unwrap();
    let writer = Writer::create(dir.path(), 1).unwrap();
    let handle = spawn(s.cfg, writer, Arc::clone(&s.stats), s.rx, s.out_tx).unwrap();
    // One request per group: segment 1 is past 4 KiB after a few.
    let answers: Vec<_> = (0..10)
        .map(|i| futures_executor_block_on(request(&s.tx, &format!("t{i}"))).unwrap())
        .collect();
    drop(s.tx);
    handle.join().unwrap();
    let failed = answers.iter().filter(|a| a.is_err()).count();
    assert_eq!(failed, 1, "{answers:?}");
    assert!(
        answers[answers.len() - 3..].iter().all(Result::is_ok),
        "{answers:?}"
    );
    // Segment 2 is skipped, and the log rolls on from 3.
    let segments: std::collections::BTreeSet<u64> =
        logged(&s.out).iter().map(|l| l.pos.segment).collect();
    assert_eq!(segments.iter().take(2).collect::<Vec<_>>(), [&1, &3]);
}

/// A batch the log refuses gives its spans back to the organisation's quota; a batch it
/// takes keeps them counted, in the ticket that travels on to the flush thread.
#[test]
fn a_refused_batch_gives_its_quota_back() {
    use crate::admission::plan::Plan;
    use crate::admission::{admit, Account};
    use crate::http::response::LimitHeaders;
    let dir = TestDir::new("wal-quota");
    let Running {
        tx, out, handle, ..
    } = running(&dir, 12 << 10);
    let plan = Plan {
        name: "test".into(),
        monthly_spans: Some(1_000),
        rate: None,
    };
    let account = Arc::new(Account::new("o".into(), &plan));
    let p = crate::auth::Principal::new("o".into(), "".into(), account);
    let now_ms = 1_700_000_000_000;
    let month = crate::calendar::Month::of_ms(now_ms);
    let mut accepted = 0;
    for i in 0..20 {
        let mut b = batch("o", &format!("t{i}"), 3, now_ms);
        let mut limits = LimitHeaders::default();
        b.usage = admit(&p, 3, 0, now_ms, &mut limits)
            .unwrap()
            .into_ticket(&p);
        let (done, wait) = oneshot::channel();
        tx.send(WalRequest { batch: b, done }).unwrap();
        if futures_executor_block_on(wait).unwrap().is_ok() {
            accepted += 3;
        }
    }
    drop(tx);
    handle.join().unwrap();
    assert!((6..60).contains(&accepted), "{accepted}");
    assert_eq!(
        p.account.usage.used(month),
        accepted,
        "refused spans given back"
    );
    let logged = logged(&out);
    assert_eq!(logged.len() as u64 * 3, accepted);
    assert_eq!(p.account.usage.begin_sync(month), 0, "nothing flushed yet");
    drop(logged);
    assert_eq!(p.account.usage.begin_sync(month), accepted);
}

/// A minimal executor for the tests: the oneshot is runtime-agnostic.
fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}
/// A group larger than a segment is cut into segments of at most `segment_bytes`, each
/// announced before its records, and every request is answered. (A group of up to
/// `MAX_GROUP` requests used to go into one segment, however large.)
#[test]
fn a_large_group_is_cut_into_segments() {
    let dir = TestDir::new("wal-large-group");
    let mut s = setup(&dir, 1 << 30);
    s.cfg.segment_bytes = 8 << 10;
    // 60 requests arrive during one fsync: one group.
    let waits: Vec<_> = (0..60).map(|i| request(&s.tx, &format!("g{i}"))).collect();
    drop(s.tx);
    let writer = Writer::create(dir.path(), 1).unwrap();
    spawn(s.cfg, writer, Arc::clone(&s.stats), s.rx, s.out_tx)
        .unwrap()
        .join()
        .unwrap();
    for w in waits {
        assert_eq!(futures_executor_block_on(w), Ok(Ok(())));
    }
    let mut announced = Vec::new();
    let mut records = 0;
    for event in s.out.try_iter() {
        match event {
            WalEvent::Started { segment, .. } => announced.push(segment),
            WalEvent::Logged(l) => {
                assert_eq!(announced.last(), Some(&l.pos.segment), "announced first");
                records += 1;
            }
        }
    }
    assert_eq!(records, 60);
    assert!(announced.len() >= 5, "{announced:?}");
    assert_eq!(
        s.stats.wal_syncs.load(Ordering::Relaxed),
        announced.len() as u64,
        "one fsync per segment"
    );
    for id in announced {
        let len = std::fs::metadata(segment::segment_path(dir.path(), id))
            .unwrap()
            .len();
        assert!(len <= 8 << 10, "segment {id}: {len} bytes");
    }
}

/// One large group brings the spool near its bound; ClickHouse takes all of it. The next
/// request rolls to a new segment and may be refused `Full`, but the flush thread hears of
/// the roll, deletes the confirmed segment, and the requests after it are taken. (No record
/// of the new segment reached the flush thread, so the old one was never sealed nor
/// deleted: every request `503 buffer_full` until a restart.) With segments of an eighth of
/// the spool, and with one segment allowed to take all of it.
#[test]
fn the_log_takes_batches_again_after_a_large_group_is_confirmed() {
    use crate::sink::spool::Spool;
    for whole_spool_segments in [false, true] {
        let dir = TestDir::new("wal-large-group-confirmed");
        let mut s = setup(&dir, 64 << 10);
        if whole_spool_segments {
            s.cfg.segment_bytes = s.cfg.max_bytes;
        }
        // The flush thread's side, which inserts and confirms everything at once.
        let mut spool = Spool::open(s.cfg.clone(), Arc::clone(&s.stats)).unwrap();
        let out = s.out;
        let flush = |spool: &mut Spool, wait: std::time::Duration| {
            while let Ok(event) = out.recv_timeout(wait) {
                if let Some(l) = hand_to_spool(event, spool) {
                    spool.confirm(l.pos);
                }
            }
        };
        let writer = Writer::create(dir.path(), spool.take_next_id()).unwrap();
        s.stats
            .spool_bytes
            .fetch_add(writer.len(), Ordering::Relaxed);
        // 60 requests arrive during one fsync: one group.
        let waits: Vec<_> = (0..60).map(|i| request(&s.tx, &format!("g{i}"))).collect();
        let handle = spawn(s.cfg, writer, Arc::clone(&s.stats), s.rx, s.out_tx).unwrap();
        for w in waits {
            // Taken, or refused `Full` once the spool is at its bound.
            assert!(futures_executor_block_on(w).is_ok());
        }
        flush(&mut spool, std::time::Duration::from_millis(200));
        let answers: Vec<_> = (0..5)
            .map(|i| {
                let answer = futures_executor_block_on(request(&s.tx, &format!("n{i}")));
                flush(&mut spool, std::time::Duration::from_millis(100));
                answer.unwrap()
            })
            .collect();
        drop(s.tx);
        handle.join().unwrap();
        assert!(
            answers[1..].iter().all(Result::is_ok),
            "whole-spool segments {whole_spool_segments}: {answers:?}"
        );
    }
}

/// A write-ahead thread's state, driven on the test thread (whose disk faults it then meets),
/// probing at once whenever the log is failing.
fn on_this_thread(s: &Setup, writer: Option<Writer>, next_id: u64) -> Wal {
    let mut wal = Wal::new(
        s.cfg.clone(),
        writer,
        next_id,
        Arc::clone(&s.stats),
        s.out_tx.clone().into(),
    );
    wal.probe = Probe::new(std::time::Duration::ZERO, std::time::Duration::ZERO);
    wal
}

/// What the flush thread does with one event of the write-ahead thread, as far as `spool` is
/// concerned (a new segment started, a record logged); the logged record, for the test to
/// confirm or look at. (Shared with the spool's tests.)
pub(crate) fn hand_to_spool(
    event: WalEvent,
    spool: &mut crate::sink::spool::Spool,
) -> Option<Logged> {
    match event {
        WalEvent::Started {
            segment,
            created_ms,
        } => {
            spool.started(segment, created_ms);
            None
        }
        WalEvent::Logged(l) => {
            spool.logged(l.pos, l.segment_created_ms);
            Some(l)
        }
    }
}

/// Hands what the write-ahead thread told the flush thread to `spool`, each record inserted
/// and confirmed at once.
fn confirm_all(out: &Receiver<WalEvent>, spool: &mut crate::sink::spool::Spool) {
    for event in out.try_iter() {
        if let Some(l) = hand_to_spool(event, spool) {
            spool.confirm(l.pos);
        }
    }
}

/// The segment files in `dir`, by id.
fn segment_files(dir: &std::path::Path) -> Vec<u64> {
    let mut ids: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| segment::parse_segment_name(e.unwrap().file_name().to_str()?))
        .collect();
    ids.sort_unstable();
    ids
}

/// A failed fsync makes the log failing (`/ready` turns `503`), and with no request arriving
/// (a load balancer sends none to an instance that is not ready) its probes start a new
/// segment, a failed probe leaving it failing, until one succeeds: ready again, and the probe's
/// segment takes batches. The segment before it is sealed and deleted once confirmed, and
/// the spool's byte count stays that of the files. (The log tried again only when a request
/// came, and nothing told `/ready`: it answered `200` while every batch was `503
/// storage_unavailable`.)
#[test]
fn a_failing_log_is_not_ready_and_recovers_by_itself() {
    use crate::sink::faults::{self, Site};
    use crate::sink::spool::Spool;
    let dir = TestDir::new("wal-probe");
    let s = setup(&dir, 1 << 30);
    let mut spool = Spool::open(s.cfg.clone(), Arc::clone(&s.stats)).unwrap();
    let writer = Writer::create(dir.path(), spool.take_next_id()).unwrap();
    let first = writer.id();
    s.stats
        .spool_bytes
        .fetch_add(writer.len(), Ordering::Relaxed);
    let mut wal = on_this_thread(&s, Some(writer), first + 1);
    wal.announce();
    let mut group = Vec::new();
    let failing = || s.stats.wal_failing.load(Ordering::Relaxed);

    let taken = request(&s.tx, "taken");
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(futures_executor_block_on(taken), Ok(Ok(())));
    assert!(!failing());
    confirm_all(&s.out, &mut spool);

    faults::arm(Site::SegmentSync, 1);
    let refused = request(&s.tx, "refused");
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(
        futures_executor_block_on(refused),
        Ok(Err(WalRefusal::Failed))
    );
    assert!(failing(), "a failed fsync makes the log failing");

    // No request: the next step probes, and this probe fails.
    faults::arm(Site::SegmentCreate, 1);
    assert!(wal.step(&s.rx, &mut group));
    assert!(failing(), "a failed probe leaves it failing");
    assert_eq!(segment_files(dir.path()), [first]);

    // Still no request: the next probe starts a segment.
    assert!(wal.step(&s.rx, &mut group));
    assert!(!failing(), "a probe that starts a segment ends the failure");
    let probed = segment_files(dir.path());
    assert_eq!(probed.len(), 2, "{probed:?}");
    confirm_all(&s.out, &mut spool);
    assert_eq!(
        segment_files(dir.path()),
        probed[1..],
        "the segment before the probe's is sealed and, confirmed, deleted"
    );

    let after = request(&s.tx, "after");
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(futures_executor_block_on(after), Ok(Ok(())));
    let logged = logged(&s.out);
    assert_eq!(logged.len(), 1);
    assert_eq!(
        logged[0].pos.segment, probed[1],
        "the probe's segment is used"
    );
    let on_disk = std::fs::metadata(segment::segment_path(dir.path(), probed[1]))
        .unwrap()
        .len();
    assert_eq!(s.stats.spool_bytes.load(Ordering::Relaxed), on_disk);
}

/// A log whose new segment cannot be created (past its size: the disk full) is failing until
/// a probe can create one.
#[test]
fn a_failed_segment_creation_makes_the_log_failing_until_a_probe_succeeds() {
    use crate::sink::faults::{self, Site};
    let dir = TestDir::new("wal-probe-create");
    let mut s = setup(&dir, 1 << 30);
    s.cfg.segment_bytes = 4 << 10;
    let mut wal = on_this_thread(&s, Some(Writer::create(dir.path(), 1).unwrap()), 2);
    let mut group = Vec::new();
    let failing = || s.stats.wal_failing.load(Ordering::Relaxed);
    let mut answers = Vec::new();
    faults::arm(Site::SegmentCreate, 1);
    // One request per group, until one needs a new segment.
    while !failing() {
        let answer = request(&s.tx, &format!("t{}", answers.len()));
        assert!(wal.step(&s.rx, &mut group));
        answers.push(futures_executor_block_on(answer).unwrap());
        assert!(answers.len() < 10, "{answers:?}");
    }
    assert_eq!(answers.last(), Some(&Err(WalRefusal::Failed)));
    assert!(wal.step(&s.rx, &mut group), "a probe, no request");
    assert!(!failing());
    let answer = request(&s.tx, "after");
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(futures_executor_block_on(answer), Ok(Ok(())));
}

/// The real thread, started without a segment (the disk could not take one at start-up), is
/// failing until it can make one, and then makes one with no request arriving. Its probe's
/// segment, still empty when the server stops, is removed at the next start.
#[test]
fn the_thread_probes_on_its_own() {
    use crate::sink::spool::Spool;
    let dir = TestDir::new("wal-probe-thread");
    let Setup {
        tx,
        rx,
        out: _out,
        out_tx,
        stats,
        mut cfg,
    } = setup(&dir, 1 << 30);
    // A directory that is not there yet stands for the disk that cannot take a file.
    cfg.dir = dir.path().join("later");
    let later = cfg.clone();
    let handle = spawn_without_segment(cfg, 5, Arc::clone(&stats), rx, out_tx).unwrap();
    assert!(stats.wal_failing.load(Ordering::Relaxed));
    std::fs::create_dir_all(&later.dir).unwrap();
    // Not a timing assertion: the first probe is due after 1 s; this only bounds a hang.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while stats.wal_failing.load(Ordering::Relaxed) {
        assert!(
            std::time::Instant::now() < give_up,
            "no probe made a segment"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let made = segment_files(&later.dir);
    assert_eq!(made.len(), 1, "{made:?}");
    assert!(made[0] >= 5);
    drop(tx);
    handle.join().unwrap();
    let stats = Arc::new(FlushStats::default());
    drop(Spool::open(later.clone(), Arc::clone(&stats)).unwrap());
    assert_eq!(segment_files(&later.dir), [] as [u64; 0]);
    assert_eq!(stats.spool_bytes.load(Ordering::Relaxed), 0);
}

/// `traceingest_wal_syncs_total` counts fsyncs that ran: one for a failed fsync, none for a
/// failed write, which refuses its group without one. (A failed write counted one.)
#[test]
fn only_fsyncs_that_ran_are_counted() {
    use crate::sink::faults::{self, Site};
    let dir = TestDir::new("wal-syncs");
    let s = setup(&dir, 1 << 30);
    let mut wal = on_this_thread(&s, Some(Writer::create(dir.path(), 1).unwrap()), 2);
    let mut group = Vec::new();
    let syncs = || s.stats.wal_syncs.load(Ordering::Relaxed);
    for (site, counted) in [(Site::SegmentWrite, 0), (Site::SegmentSync, 1)] {
        let before = syncs();
        faults::arm(site, 1);
        let answer = request(&s.tx, "refused");
        assert!(wal.step(&s.rx, &mut group));
        assert_eq!(
            futures_executor_block_on(answer),
            Ok(Err(WalRefusal::Failed)),
            "{site:?}"
        );
        assert_eq!(syncs() - before, counted, "{site:?}");
        // The failed write left the log failing; the next step's probe ends it.
        assert!(wal.step(&s.rx, &mut group));
        assert!(!s.stats.wal_failing.load(Ordering::Relaxed));
    }
    let answer = request(&s.tx, "taken");
    let before = syncs();
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(futures_executor_block_on(answer), Ok(Ok(())));
    assert_eq!(syncs() - before, 1);
}

/// Found by review: a probe proves that a segment can be started, not that a record can be
/// written (a nearly full disk takes a header and not the next batch). The back-off went back
/// to its first wait at every probe that started a segment, so such a disk made `/ready` flap
/// every second, two error lines each time; it grows on until a batch is durable again.
#[test]
fn the_probe_back_off_grows_until_a_batch_is_durable() {
    use crate::sink::faults::{self, Site};
    use std::time::Duration;
    let dir = TestDir::new("wal-probe-back-off");
    let s = setup(&dir, 1 << 30);
    let mut wal = on_this_thread(&s, Some(Writer::create(dir.path(), 1).unwrap()), 2);
    let first = Duration::from_secs(1);
    wal.probe = Probe::new(first, Duration::from_secs(30));
    let mut group = Vec::new();
    let failing = || s.stats.wal_failing.load(Ordering::Relaxed);
    let mut waits = Vec::new();
    for _ in 0..3 {
        faults::arm(Site::SegmentWrite, 1);
        let answer = request(&s.tx, "refused");
        assert!(wal.step(&s.rx, &mut group));
        assert_eq!(
            futures_executor_block_on(answer),
            Ok(Err(WalRefusal::Failed))
        );
        assert!(failing());
        waits.push(wal.probe.wait);
        // The probe is due now (not waited for): it starts a segment.
        wal.probe.at = Instant::now();
        assert!(wal.step(&s.rx, &mut group));
        assert!(!failing(), "a probe that starts a segment ends the failure");
    }
    assert_eq!(waits, [2 * first, 4 * first, 8 * first]);
    // A durable batch ends the back-off.
    let answer = request(&s.tx, "taken");
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(futures_executor_block_on(answer), Ok(Ok(())));
    faults::arm(Site::SegmentWrite, 1);
    let answer = request(&s.tx, "refused");
    assert!(wal.step(&s.rx, &mut group));
    assert_eq!(
        futures_executor_block_on(answer),
        Ok(Err(WalRefusal::Failed))
    );
    assert_eq!(wal.probe.wait, 2 * first);
}
