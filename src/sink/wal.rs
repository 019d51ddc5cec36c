//! The write-ahead thread (`INGEST_DURABILITY=wal`).
//!
//! It appends each batch to the spool, fsyncs once per group, then answers the workers and
//! hands the batches to the flush thread.
//!
//! Workers never touch the disk: a worker sends its `RowBatch` with a oneshot sender
//! (`WalRequest`) and awaits the receiver, which any thread can complete and which wakes the
//! worker's monoio task through monoio's cross-thread waker. This thread blocks on the
//! channel, takes every request waiting (up to `MAX_GROUP`), encodes and appends them, and
//! makes them durable with one `fdatasync`: concurrent requests share that fsync (group
//! commit). Only then does it answer them, in order, and forward each batch with its record
//! position (`Logged`) to the flush thread, which confirms the record once its rows are in
//! ClickHouse.
//!
//! A request is refused (`WalRefusal::Full`) when the spool would pass
//! `INGEST_SPOOL_MAX_BYTES`; if the disk fails, the group's records are cut off the segment
//! again and refused (`WalRefusal::Failed`), so nothing answered `503` is replayed later, and
//! the next group starts a new segment (with a fresh id for every attempt: a failed attempt may
//! leave its file behind). A refused batch's quota ticket is released here (its spans go back
//! to the organisation's monthly quota); the worker gives back the rate-limit credit.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;
use futures_channel::oneshot;

use super::codec;
use super::flush::Intake;
use super::segment::{RecordPos, Writer, HEADER_LEN};
use super::spool::SpoolConfig;
use super::stats::FlushStats;
use crate::row::RowBatch;

/// Most requests made durable by one fsync.
const MAX_GROUP: usize = 1024;

/// Why a batch was not made durable; the worker answers `503`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalRefusal {
    /// The spool is at `INGEST_SPOOL_MAX_BYTES`.
    Full,
    /// The disk refused the write or the fsync.
    Failed,
}

/// A worker's batch and the way to tell it the outcome.
pub struct WalRequest {
    pub batch: RowBatch,
    pub done: oneshot::Sender<Result<(), WalRefusal>>,
}

/// A durable batch on its way to the flush thread.
pub struct Logged {
    pub batch: RowBatch,
    pub pos: RecordPos,
    /// Creation time of the record's segment (a new segment is announced by its first record).
    pub segment_created_ms: u64,
}

/// Starts the write-ahead thread with the spool's current segment `writer`. It ends when every
/// worker has dropped its sender, after answering everything received.
pub fn spawn(
    cfg: SpoolConfig,
    writer: Writer,
    stats: Arc<FlushStats>,
    rx: Receiver<WalRequest>,
    out: impl Into<Intake<Logged>>,
) -> std::io::Result<JoinHandle<()>> {
    let out = out.into();
    std::thread::Builder::new()
        .name("wal".into())
        .spawn(move || {
            Wal {
                cfg,
                next_id: writer.id() + 1,
                writer,
                stats,
                out,
                broken: false,
                scratch: Vec::new(),
            }
            .run(rx)
        })
}

struct Wal {
    cfg: SpoolConfig,
    writer: Writer,
    /// Id of the next segment to try: one more after each attempt, failed or not, so a file a
    /// failed attempt could not remove does not block the ids after it.
    next_id: u64,
    stats: Arc<FlushStats>,
    out: Intake<Logged>,
    /// The last group failed: start a new segment before the next one.
    broken: bool,
    /// Encoded batch, reused.
    scratch: Vec<u8>,
}

impl Wal {
    fn run(mut self, rx: Receiver<WalRequest>) {
        let mut group: Vec<WalRequest> = Vec::with_capacity(MAX_GROUP);
        while let Ok(first) = rx.recv() {
            group.push(first);
            while group.len() < MAX_GROUP {
                match rx.try_recv() {
                    Ok(r) => group.push(r),
                    Err(_) => break,
                }
            }
            self.commit(&mut group);
        }
        if let Err(e) = self.writer.sync() {
            tracing::error!(error = %e, "write-ahead log: final fsync failed");
        }
    }

    /// Appends, fsyncs and answers one group.
    fn commit(&mut self, group: &mut Vec<WalRequest>) {
        if self.broken || (self.writer.len() >= self.cfg.segment_bytes && !self.writer.is_empty()) {
            if let Err(e) = self.roll() {
                tracing::error!(error = %e, "write-ahead log: cannot start a new segment");
                for r in group.drain(..) {
                    refuse(r, WalRefusal::Failed);
                }
                return;
            }
        }
        let (start_len, start_records) = (self.writer.len(), self.writer.records());
        let mut appended: Vec<(WalRequest, RecordPos)> = Vec::with_capacity(group.len());
        let mut failure = None;
        for r in group.drain(..) {
            if failure.is_some() {
                refuse(r, WalRefusal::Failed);
                continue;
            }
            self.scratch.clear();
            codec::encode(&r.batch, &mut self.scratch);
            let need = self.scratch.len() as u64 + super::segment::FRAME_LEN;
            if self.stats.spool_bytes.load(Ordering::Relaxed) + need > self.cfg.max_bytes {
                if !self.stats.full.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        spool_bytes = self.stats.spool_bytes.load(Ordering::Relaxed),
                        "write-ahead log full; refusing batches until ClickHouse takes rows"
                    );
                }
                refuse(r, WalRefusal::Full);
                continue;
            }
            match self.writer.append(&self.scratch) {
                Ok(pos) => {
                    self.stats.spool_bytes.fetch_add(pos.len, Ordering::Relaxed);
                    appended.push((r, pos));
                }
                Err(e) => {
                    failure = Some(e);
                    refuse(r, WalRefusal::Failed);
                }
            }
        }
        if appended.is_empty() && failure.is_none() {
            return;
        }
        let synced = match failure {
            Some(e) => Err(e),
            None => self.writer.sync(),
        };
        self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = synced {
            tracing::error!(
                error = %e,
                batches = appended.len(),
                "write-ahead log: write or fsync failed; refusing the group"
            );
            let cut = self.writer.len() - start_len;
            if self.writer.truncate(start_len, start_records).is_ok() {
                sub(&self.stats.spool_bytes, cut);
            }
            self.broken = true;
            for (r, _) in appended {
                refuse(r, WalRefusal::Failed);
            }
            return;
        }
        self.stats.full.store(false, Ordering::Relaxed);
        self.stats
            .wal_batches
            .fetch_add(appended.len() as u64, Ordering::Relaxed);
        let created = self.writer.created_ms();
        for (r, pos) in appended {
            let WalRequest { batch, done } = r;
            // The flush thread gets the batch whether or not the worker is still waiting: it
            // is durable, so it will be inserted (the client may have gone; it saw no answer).
            let _ = done.send(Ok(()));
            let _ = self.out.send(Logged {
                batch,
                pos,
                segment_created_ms: created,
            });
        }
    }

    /// Seals the current segment (already fsynced) and starts the next one.
    fn roll(&mut self) -> std::io::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let next = Writer::create(&self.cfg.dir, id)?;
        self.stats
            .spool_bytes
            .fetch_add(HEADER_LEN, Ordering::Relaxed);
        self.stats.spool_segments.fetch_add(1, Ordering::Relaxed);
        self.writer = next;
        self.broken = false;
        Ok(())
    }
}

/// Answers a request `503`: the batch is not kept, so its spans go back to the organisation's
/// quota here (the worker gives the rate-limit credit back).
fn refuse(r: WalRequest, why: WalRefusal) {
    let WalRequest { mut batch, done } = r;
    std::mem::take(&mut batch.usage).release();
    let _ = done.send(Err(why));
}

fn sub(a: &std::sync::atomic::AtomicU64, v: u64) {
    let _ = a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
        Some(x.saturating_sub(v))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::clickhouse::test_support::batch;
    use crate::sink::segment;
    use crate::sink::test_dir::TestDir;
    use crossbeam_channel::Sender;

    /// The channels and settings of a write-ahead thread not started yet.
    struct Setup {
        tx: Sender<WalRequest>,
        rx: Receiver<WalRequest>,
        out: Receiver<Logged>,
        out_tx: Sender<Logged>,
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
        out: Receiver<Logged>,
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

    fn request(tx: &Sender<WalRequest>, trace: &str) -> oneshot::Receiver<Result<(), WalRefusal>> {
        let (done, wait) = oneshot::channel();
        tx.send(WalRequest {
            batch: batch("o", trace, 3, 1_700_000_000_000),
            done,
        })
        .unwrap();
        wait
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
        let logged: Vec<Logged> = out.iter().collect();
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
        let segments: std::collections::BTreeSet<u64> = out.iter().map(|l| l.pos.segment).collect();
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
            s.out.iter().map(|l| l.pos.segment).collect();
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
        let logged: Vec<Logged> = out.iter().collect();
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
}
