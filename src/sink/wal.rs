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
//! ClickHouse. A segment is at most `segment_bytes` (a group that would pass it is split), and
//! each new segment is announced to the flush thread before its records (`WalEvent::Started`):
//! only then may the flush thread delete the older ones, and it must hear of it even when no
//! record follows (every request after the roll refused `Full` until that deletion makes room).
//!
//! A request is refused (`WalRefusal::Full`) when the spool would pass
//! `INGEST_SPOOL_MAX_BYTES`; if the disk fails, the group's records are cut off the segment
//! again and refused (`WalRefusal::Failed`), so nothing answered `503` is replayed later, and
//! the next group starts a new segment (with a fresh id for every attempt: a failed attempt may
//! leave its file behind). A refused batch's quota ticket is released here (its spans go back
//! to the organisation's monthly quota); the worker gives back the rate-limit credit.
//!
//! While the log is failing (`FlushStats::wal_failing`, which turns `/ready` to `503`) the thread
//! does not wait for a request to try again: a load balancer sends none to an instance that is
//! not ready. It waits for requests at most until the next probe, which tries to start a new
//! segment (`roll`: a header and two fsyncs), 1 s after the failure and then twice as long each
//! time up to 30 s; the waits go back to 1 s only once a batch is durable again, not when a
//! probe starts a segment (a nearly full disk takes a header and not the next batch). A segment
//! a probe starts is like any other just rolled: sealed and deleted once a newer one starts,
//! removed at start-up if it is still empty.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use futures_channel::oneshot;

use super::codec;
use super::flush::Intake;
use super::segment::{RecordPos, Writer, HEADER_LEN};
use super::spool::SpoolConfig;
use super::stats::FlushStats;
use crate::row::RowBatch;

/// Most requests made durable by one fsync.
const MAX_GROUP: usize = 1024;

/// While the log is failing: the wait before the first probe, and the longest between two.
const PROBE_FIRST: Duration = Duration::from_secs(1);
const PROBE_MAX: Duration = Duration::from_secs(30);

/// While the log is failing, a failed attempt at a new segment is logged at error level at most
/// this often (the first at once); the others at debug level.
const FAILURE_LOG_GAP: Duration = Duration::from_secs(600);

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
    /// Creation time of the record's segment.
    pub segment_created_ms: u64,
}

/// What the write-ahead thread tells the flush thread, in the order it happened.
// `Logged` is nearly every message, and boxing it would allocate once per batch; a channel
// slot was already the size of a `Logged`.
#[allow(clippy::large_enum_variant)]
pub enum WalEvent {
    /// Segment `segment` is the one appended to from now on: every older one is complete, so
    /// the flush thread seals it (and deletes it once all its records are confirmed). Sent when
    /// the thread starts and at every roll, before any record of the segment and whether or
    /// not one follows.
    Started {
        segment: u64,
        created_ms: u64,
    },
    Logged(Logged),
}

/// Starts the write-ahead thread with the spool's current segment `writer`. It ends when every
/// worker has dropped its sender, after answering everything received.
pub fn spawn(
    cfg: SpoolConfig,
    writer: Writer,
    stats: Arc<FlushStats>,
    rx: Receiver<WalRequest>,
    out: impl Into<Intake<WalEvent>>,
) -> std::io::Result<JoinHandle<()>> {
    let next_id = writer.id() + 1;
    start(cfg, Some(writer), next_id, stats, rx, out)
}

/// `spawn` when the first segment could not be created (a full disk after a crash): the
/// thread starts without one, refuses batches (`503 storage_unavailable`) until it can create
/// segment `next_id` or a later one, and meanwhile the flush thread replays the spool, which
/// is what makes room.
pub fn spawn_without_segment(
    cfg: SpoolConfig,
    next_id: u64,
    stats: Arc<FlushStats>,
    rx: Receiver<WalRequest>,
    out: impl Into<Intake<WalEvent>>,
) -> std::io::Result<JoinHandle<()>> {
    start(cfg, None, next_id, stats, rx, out)
}

fn start(
    cfg: SpoolConfig,
    writer: Option<Writer>,
    next_id: u64,
    stats: Arc<FlushStats>,
    rx: Receiver<WalRequest>,
    out: impl Into<Intake<WalEvent>>,
) -> std::io::Result<JoinHandle<()>> {
    let out = out.into();
    let wal = Wal::new(cfg, writer, next_id, stats, out);
    std::thread::Builder::new()
        .name("wal".into())
        .spawn(move || wal.run(rx))
}

struct Wal {
    cfg: SpoolConfig,
    /// The current segment; `None` until one could be created (`spawn_without_segment`).
    writer: Option<Writer>,
    /// Id of the next segment to try: one more after each attempt, failed or not, so a file a
    /// failed attempt could not remove does not block the ids after it.
    next_id: u64,
    stats: Arc<FlushStats>,
    out: Intake<WalEvent>,
    /// The last group or segment failed: start a new segment before the next record. Kept in
    /// step with `FlushStats::wal_failing` (`set_broken`).
    broken: bool,
    /// While `broken`: when to probe, and the waits before probes.
    probe: Probe,
    /// Encoded batch, reused.
    scratch: Vec<u8>,
}

/// When the failing log next tries a new segment with no request to make it.
struct Probe {
    /// The wait after a failure, and the longest it doubles to (`PROBE_FIRST`, `PROBE_MAX`;
    /// tests set their own).
    first: Duration,
    max: Duration,
    /// The wait after the next failed attempt.
    wait: Duration,
    /// When to try (meaningful while broken).
    at: Instant,
    /// Attempts at a new segment that failed in a row, and when one was last logged at error
    /// level: a disk that stays broken for a day must not fill the log with a line every 30 s.
    failures: u64,
    logged_at: Option<Instant>,
}

impl Probe {
    fn new(first: Duration, max: Duration) -> Probe {
        Probe {
            first,
            max,
            wait: first,
            at: Instant::now() + first,
            failures: 0,
            logged_at: None,
        }
    }

    /// An attempt failed (or the log just broke): the next probe comes after the current wait,
    /// and the one after that twice as late.
    fn failed(&mut self) {
        self.at = Instant::now() + self.wait;
        self.wait = (self.wait * 2).min(self.max);
    }
}

impl Wal {
    fn new(
        cfg: SpoolConfig,
        writer: Option<Writer>,
        next_id: u64,
        stats: Arc<FlushStats>,
        out: Intake<WalEvent>,
    ) -> Wal {
        let mut wal = Wal {
            cfg,
            next_id,
            broken: false,
            writer,
            stats,
            out,
            probe: Probe::new(PROBE_FIRST, PROBE_MAX),
            scratch: Vec::new(),
        };
        if wal.writer.is_none() {
            wal.set_broken();
        }
        wal
    }

    fn run(mut self, rx: Receiver<WalRequest>) {
        self.announce();
        let mut group: Vec<WalRequest> = Vec::with_capacity(MAX_GROUP);
        while self.step(&rx, &mut group) {}
        if let Some(Err(e)) = self.writer.as_ref().map(Writer::sync) {
            tracing::error!(error = %e, "write-ahead log: final fsync failed");
        }
    }

    /// Waits for requests and commits them as one group; while the log is failing, waits only
    /// until the next probe and, if no request came, probes. False once every sender is gone.
    fn step(&mut self, rx: &Receiver<WalRequest>, group: &mut Vec<WalRequest>) -> bool {
        let first = if self.broken {
            match rx.recv_deadline(self.probe.at) {
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => {
                    self.roll();
                    return true;
                }
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        } else {
            match rx.recv() {
                Ok(r) => r,
                Err(_) => return false,
            }
        };
        group.push(first);
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        self.commit(group);
        true
    }

    /// The log failed: every record waits for a new segment, `/ready` says so, and the next
    /// probe is due after the current wait: the first one, unless the log failed again since
    /// its last probe started a segment without a batch being durable after it.
    fn set_broken(&mut self) {
        if !self.broken {
            self.broken = true;
            self.stats.wal_failing.store(true, Ordering::Relaxed);
            self.probe.failed();
        }
    }

    /// Appends, fsyncs and answers one group. No segment grows past `segment_bytes` (but for
    /// a single larger record): before the record that would pass it, what the group appended
    /// so far is made durable and answered, and the rest goes to a new segment. (A group of up
    /// to `MAX_GROUP` large requests used to land in one segment as large as the whole spool.)
    fn commit(&mut self, group: &mut Vec<WalRequest>) {
        let mut appended: Vec<(WalRequest, RecordPos)> = Vec::with_capacity(group.len());
        let mut start = self.group_start();
        // A write, an fsync or a roll failed: the rest of the group is refused.
        let mut failed = false;
        for r in group.drain(..) {
            if failed {
                refuse(r, WalRefusal::Failed);
                continue;
            }
            self.scratch.clear();
            codec::encode(&r.batch, &mut self.scratch);
            let need = self.scratch.len() as u64 + super::segment::FRAME_LEN;
            let past_size = self
                .writer
                .as_ref()
                .is_some_and(|w| !w.is_empty() && w.len() + need > self.cfg.segment_bytes);
            if self.broken || past_size {
                // What went to the old segment is made durable first, so that an fsync, and the
                // cut-back after a failed one, concerns one file. The roll happens even if this
                // batch is then refused `Full`: hearing of it, the flush thread can delete the
                // old segment, which is what makes room.
                if !self.settle(&mut appended, start, None) || !self.roll() {
                    failed = true;
                    refuse(r, WalRefusal::Failed);
                    continue;
                }
                start = self.group_start();
            }
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
            let writer = self
                .writer
                .as_mut()
                .expect("a segment: rolled above if none");
            match writer.append(&self.scratch) {
                Ok(pos) => {
                    self.stats.spool_bytes.fetch_add(pos.len, Ordering::Relaxed);
                    appended.push((r, pos));
                }
                Err(e) => {
                    failed = true;
                    refuse(r, WalRefusal::Failed);
                    self.settle(&mut appended, start, Some(e));
                }
            }
        }
        self.settle(&mut appended, start, None);
    }

    /// Makes `appended`, the records written to the current segment since `start` (its length
    /// and records then), durable with one fsync, and answers them: `Ok`, and on to the flush
    /// thread. If a write failed (`failure`) or the fsync does, they are cut back off the
    /// segment and refused, and the next record starts a new segment. Returns whether they
    /// were made durable.
    fn settle(
        &mut self,
        appended: &mut Vec<(WalRequest, RecordPos)>,
        start: (u64, u32),
        failure: Option<std::io::Error>,
    ) -> bool {
        if appended.is_empty() && failure.is_none() {
            return true;
        }
        let writer = self
            .writer
            .as_mut()
            .expect("records were appended to a segment");
        let synced = match failure {
            Some(e) => Err(e),
            None => {
                // Counted whether or not it succeeds, but only when it ran: a failed write
                // refuses the group without one.
                self.stats.wal_syncs.fetch_add(1, Ordering::Relaxed);
                writer.sync()
            }
        };
        if let Err(e) = synced {
            tracing::error!(
                error = %e,
                batches = appended.len(),
                "write-ahead log: write or fsync failed; refusing the group"
            );
            let (start_len, start_records) = start;
            let cut = writer.len() - start_len;
            if writer.truncate(start_len, start_records).is_ok() {
                sub(&self.stats.spool_bytes, cut);
            }
            self.set_broken();
            for (r, _) in appended.drain(..) {
                refuse(r, WalRefusal::Failed);
            }
            return false;
        }
        self.stats.full.store(false, Ordering::Relaxed);
        // The log works: the next failure's first probe comes after the first wait.
        self.probe.wait = self.probe.first;
        self.stats
            .wal_batches
            .fetch_add(appended.len() as u64, Ordering::Relaxed);
        let created = writer.created_ms();
        for (r, pos) in appended.drain(..) {
            let WalRequest { batch, done } = r;
            // The flush thread gets the batch whether or not the worker is still waiting: it
            // is durable, so it will be inserted (the client may have gone; it saw no answer).
            let _ = done.send(Ok(()));
            let _ = self.out.send(WalEvent::Logged(Logged {
                batch,
                pos,
                segment_created_ms: created,
            }));
        }
        true
    }

    /// Seals the current segment (already fsynced) and starts the next one; whether it could.
    /// Failing, it leaves the log broken (the next record, or the next probe, tries again);
    /// succeeding, it ends a failure.
    fn roll(&mut self) -> bool {
        let id = self.next_id;
        self.next_id += 1;
        let next = match Writer::create(&self.cfg.dir, id) {
            Ok(w) => w,
            Err(e) => {
                if self.broken {
                    self.probe.failed();
                } else {
                    self.set_broken();
                }
                self.probe.failures += 1;
                let now = Instant::now();
                if self
                    .probe
                    .logged_at
                    .is_none_or(|at| now.duration_since(at) >= FAILURE_LOG_GAP)
                {
                    self.probe.logged_at = Some(now);
                    tracing::error!(
                        error = %e,
                        segment = id,
                        attempts = self.probe.failures,
                        "write-ahead log: cannot start a new segment; refusing batches and not \
                         ready until one can be made (trying again every 1 s to 30 s)"
                    );
                } else {
                    tracing::debug!(error = %e, segment = id, attempts = self.probe.failures, "write-ahead log: still cannot start a new segment");
                }
                return false;
            }
        };
        self.stats
            .spool_bytes
            .fetch_add(HEADER_LEN, Ordering::Relaxed);
        self.stats.spool_segments.fetch_add(1, Ordering::Relaxed);
        self.writer = Some(next);
        if self.broken {
            tracing::info!(
                segment = id,
                failed_attempts = self.probe.failures,
                "write-ahead log: new segment started; taking batches again"
            );
        }
        self.broken = false;
        self.stats.wal_failing.store(false, Ordering::Relaxed);
        // The wait is kept until a batch is durable (`settle`): a segment started proves little
        // on a disk that takes a header and not the next record (nearly full), and a wait back
        // at 1 s made `/ready` flap every second there.
        self.probe.failures = 0;
        self.probe.logged_at = None;
        self.announce();
        true
    }

    /// Tells the flush thread that the current segment is the newest: the older ones are
    /// complete. (Without it a segment was sealed only by a record of a newer one, and a roll
    /// followed by nothing but `Full` refusals kept the old segment, and the spool full, for good.)
    fn announce(&self) {
        if let Some(w) = &self.writer {
            let _ = self.out.send(WalEvent::Started {
                segment: w.id(),
                created_ms: w.created_ms(),
            });
        }
    }

    /// The current segment's length and records: where a group starts.
    fn group_start(&self) -> (u64, u32) {
        self.writer
            .as_ref()
            .map_or((0, 0), |w| (w.len(), w.records()))
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
#[path = "wal_tests.rs"]
pub(crate) mod tests;
