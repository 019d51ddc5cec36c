//! Intake: batches taken off the channel from the workers (or the write-ahead thread) into
//! the flush thread's queue, and the bell that wakes the thread only when intake needs it.
//!
//! Between inserts the flush thread sleeps until the next insert is due, without looking at
//! the channel: senders only add to it, which wakes nobody. Three things wake it sooner: the
//! first batch when nothing waits (it then blocks on the channel), enough rows waiting to make
//! an insert due at once (`max_rows`, or `max_bytes` in the budget), and memory past the budget's room, which it relieves by
//! spooling. The senders check the last two after each send (`Intake::send`, two atomic loads
//! and the budget's) and ring the `Bell`: `Thread::unpark`, a futex wake only while the thread
//! is parked. So under a stream of small requests the thread wakes about twice per insert
//! interval, not for every batch nor every few milliseconds: each wake-up of a sleeping thread
//! costs tens of microseconds of CPU on a virtual machine.

use std::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, SendError, Sender, TryRecvError};

use super::queue::Entry;
use super::State;
use crate::row::RowBatch;
use crate::sink::budget::MemoryBudget;
use crate::sink::wal::{Logged, WalEvent};

/// Most batches taken off the channel in one go, so that a flood cannot starve an insert.
const INTAKE_BOUND: usize = 4096;

/// Wakes the flush thread when intake needs it before its next due time (see the module).
#[derive(Debug)]
pub struct Bell {
    /// The flush thread, once it runs; until then (and for senders without a flush thread,
    /// in benches and tests) ringing does nothing.
    flusher: OnceLock<Thread>,
    /// Rows sent and not yet taken off the channel. A sender counts its rows after its send,
    /// so the flush thread may take them first and the count dip below zero for a moment: it
    /// never counts rows that are not there, and the late sender still sees the sum and rings.
    pending: AtomicI64,
    /// Ring once `pending` reaches this: the rows that make an insert due at once. Only
    /// meaningful while the thread sleeps; `i64::MAX` otherwise.
    wake_rows: AtomicI64,
    /// Ring once the budget holds this many bytes: `max_bytes`, which also makes an insert
    /// due at once. `u64::MAX` while the thread is awake.
    wake_bytes: AtomicU64,
    /// The memory the batches are reserved in: past its room the thread must spool.
    budget: Arc<MemoryBudget>,
    /// Bytes of the budget that held refused rows keep (`HeldLoad`), set by the thread when
    /// it arms: they make no insert due.
    held_bytes: AtomicU64,
}

impl Bell {
    fn new(budget: Arc<MemoryBudget>) -> Bell {
        Bell {
            flusher: OnceLock::new(),
            pending: AtomicI64::new(0),
            wake_rows: AtomicI64::new(i64::MAX),
            wake_bytes: AtomicU64::new(u64::MAX),
            budget,
            held_bytes: AtomicU64::new(0),
        }
    }

    /// A sender's side, after `rows` went into the channel.
    fn sent(&self, rows: i64) {
        let pending = self.pending.fetch_add(rows, Ordering::SeqCst) + rows;
        if pending >= self.wake_rows.load(Ordering::SeqCst) || self.due_or_over(pending) {
            self.ring();
        }
    }

    /// Unparks the flush thread: an atomic swap, and a futex wake only if it is parked. A ring
    /// while it is awake makes its next park return at once, which it takes as a look at the
    /// channel.
    fn ring(&self) {
        if let Some(t) = self.flusher.get() {
            t.unpark();
        }
    }

    /// The budget holds `max_bytes` besides what held refused rows keep (an insert is due),
    /// or is past its room with batches on the channel (`pending` rows) that the thread can
    /// spool. Past its room with nothing on the channel, waking it would not help: it relieved
    /// what it could before it slept (what is left is held, or an insert's pieces).
    fn due_or_over(&self, pending: i64) -> bool {
        let held = self.held_bytes.load(Ordering::SeqCst);
        self.budget.bytes().saturating_sub(held) >= self.wake_bytes.load(Ordering::SeqCst)
            || (pending > 0 && self.budget.over(1, 1))
    }

    /// The flush thread's side, before it parks: from now on senders ring once `rows` wait or
    /// the budget holds `bytes` besides the `held_bytes` held refused rows keep. Returns
    /// whether it should not park at all (they already do, or memory is past room with
    /// batches on the channel).
    fn arm(&self, rows: i64, bytes: u64, held_bytes: u64) -> bool {
        self.held_bytes.store(held_bytes, Ordering::SeqCst);
        self.wake_rows.store(rows, Ordering::SeqCst);
        self.wake_bytes.store(bytes, Ordering::SeqCst);
        // Pairs with the sender's `fetch_add` then `load`: either it sees this bound, or this
        // sees its rows.
        fence(Ordering::SeqCst);
        let pending = self.pending.load(Ordering::SeqCst);
        pending >= rows || self.due_or_over(pending)
    }

    fn disarm(&self) {
        self.wake_rows.store(i64::MAX, Ordering::SeqCst);
        self.wake_bytes.store(u64::MAX, Ordering::SeqCst);
    }

    fn taken(&self, rows: i64) {
        self.pending.fetch_sub(rows, Ordering::SeqCst);
    }
}

/// What a batch on the channel holds, for the bell's count.
pub trait Rows {
    fn rows(&self) -> i64;
}

impl Rows for RowBatch {
    fn rows(&self) -> i64 {
        self.len() as i64
    }
}

impl Rows for WalEvent {
    fn rows(&self) -> i64 {
        match self {
            WalEvent::Logged(l) => l.batch.len() as i64,
            WalEvent::Started { .. } => 0,
        }
    }
}

/// The sending end of intake: the channel and the bell. One per worker (or the write-ahead
/// thread); when the last is dropped the flush thread sees the channel closed (each drop
/// rings, so a sleeping thread finds out at once).
pub struct Intake<T: Rows> {
    /// `None` only inside `drop`.
    tx: Option<Sender<T>>,
    bell: Arc<Bell>,
}

impl<T: Rows> Intake<T> {
    /// Sends `item` on and rings if intake now needs the flush thread. Never blocks. On
    /// failure (the flush thread is gone) the item comes back.
    pub fn send(&self, item: T) -> Result<(), SendError<T>> {
        let rows = item.rows();
        self.tx.as_ref().expect("sender").send(item)?;
        self.bell.sent(rows);
        Ok(())
    }
}

/// A handle that wakes the flush thread when memory is past its room, for a worker about to
/// wait for room (`Handoff::nudge_flush`): a batch refused for room raises the budget's
/// largest batch, which shrinks the room without anything arriving to ring the bell.
#[derive(Debug, Clone)]
pub struct Nudge(Arc<Bell>);

impl Nudge {
    /// Rings if memory is past its room: the thread wakes and spools what it can.
    pub fn nudge(&self) {
        if self.0.budget.over(1, 1) {
            self.0.ring();
        }
    }
}

impl<T: Rows> Clone for Intake<T> {
    fn clone(&self) -> Intake<T> {
        Intake {
            tx: self.tx.clone(),
            bell: self.bell.clone(),
        }
    }
}

impl<T: Rows> Drop for Intake<T> {
    fn drop(&mut self) {
        drop(self.tx.take());
        self.bell.ring();
    }
}

/// A sender with a bell no flush thread listens to: for benches and tests that drain the
/// channel themselves.
impl<T: Rows> From<Sender<T>> for Intake<T> {
    fn from(tx: Sender<T>) -> Intake<T> {
        Intake {
            tx: Some(tx),
            bell: Arc::new(Bell::new(Arc::new(MemoryBudget::new(u64::MAX, u64::MAX)))),
        }
    }
}

/// Where batches come from, and the bell their senders ring.
pub struct Input {
    from: Source,
    bell: Arc<Bell>,
}

enum Source {
    /// `buffer` mode: straight from the workers.
    Buffer(Receiver<RowBatch>),
    /// `wal` mode: from the write-ahead thread, each already durable in the spool.
    Logged(Receiver<WalEvent>),
}

pub(super) enum Incoming {
    Batch(RowBatch),
    Wal(WalEvent),
}

impl Input {
    /// `buffer` mode: the workers' sending end (cloned into each `Handoff`) and the flush
    /// thread's. `budget` is the one the workers reserve in.
    pub fn buffer(budget: &Arc<MemoryBudget>) -> (Intake<RowBatch>, Input) {
        let bell = Arc::new(Bell::new(budget.clone()));
        let (tx, rx) = crossbeam_channel::unbounded();
        let input = Input {
            from: Source::Buffer(rx),
            bell: bell.clone(),
        };
        (Intake { tx: Some(tx), bell }, input)
    }

    /// `wal` mode: the write-ahead thread's sending end and the flush thread's.
    pub fn logged(budget: &Arc<MemoryBudget>) -> (Intake<WalEvent>, Input) {
        let bell = Arc::new(Bell::new(budget.clone()));
        let (tx, rx) = crossbeam_channel::unbounded();
        let input = Input {
            from: Source::Logged(rx),
            bell: bell.clone(),
        };
        (Intake { tx: Some(tx), bell }, input)
    }

    /// A `Nudge` for this thread's bell.
    pub fn nudge(&self) -> Nudge {
        Nudge(self.bell.clone())
    }

    /// Batches come straight from the workers (not from the write-ahead thread).
    pub(super) fn is_buffer(&self) -> bool {
        matches!(self.from, Source::Buffer(_))
    }

    /// Called on the flush thread: the bell now unparks it.
    pub(super) fn listen(&self) {
        let _ = self.bell.flusher.set(std::thread::current());
    }

    fn recv(&self) -> Result<Incoming, RecvTimeoutError> {
        let gone = |_| RecvTimeoutError::Disconnected;
        match &self.from {
            Source::Buffer(rx) => rx.recv().map(Incoming::Batch).map_err(gone),
            Source::Logged(rx) => rx.recv().map(Incoming::Wal).map_err(gone),
        }
    }

    pub(super) fn try_recv(&self) -> Result<Incoming, TryRecvError> {
        match &self.from {
            Source::Buffer(rx) => rx.try_recv().map(Incoming::Batch),
            Source::Logged(rx) => rx.try_recv().map(Incoming::Wal),
        }
    }
}

impl State {
    /// Waits until `at` (or, when `None`, for the first batch) and takes in what came.
    ///
    /// With nothing waiting the thread blocks on the channel, so the first batch wakes it at
    /// once (and its arrival starts the insert interval). Otherwise it parks until `at`, the
    /// next insert, unless a sender rings first (see the module): batches wait on the channel
    /// meanwhile, reserved in the memory budget, and are taken in when it wakes.
    pub(super) fn receive(&mut self, at: Option<Instant>) {
        let Some(at) = at else {
            match self.input.recv() {
                Ok(item) => {
                    self.accept(item);
                    self.poll_intake();
                }
                Err(_) => self.close(),
            }
            return;
        };
        if !self.backlogged {
            // Rows or `max_bytes` that make an insert due wake it, except while a failed insert
            // waits for its retry (none can be made before); batches arriving with memory past
            // its room wake it to spool them. The bytes held refused rows keep make no insert
            // due: this thread can neither insert nor spool them, and woken for them it would
            // spin.
            let (rows, bytes) = if self.retry_at.is_some_and(|r| r > Instant::now()) {
                (i64::MAX, u64::MAX)
            } else {
                (
                    self.cfg.max_rows.saturating_sub(self.queued_rows).max(1) as i64,
                    self.cfg.max_bytes,
                )
            };
            if !self.input.bell.arm(rows, bytes, self.held_load.load().1) {
                std::thread::park_timeout(at.saturating_duration_since(Instant::now()));
            }
            self.input.bell.disarm();
        }
        self.poll_intake();
    }

    /// Intake is over: inserts go on for a third of the shutdown timeout, but never past two
    /// thirds of it since the stop began (`FlushConfig::stop_began`), however long the workers
    /// took to finish their requests: the last third (and the watchdog's 500 ms) is the
    /// spooling's.
    fn close(&mut self) {
        self.closed = true;
        let third = self.cfg.shutdown_timeout / 3;
        let mut until = Instant::now() + third;
        if let Some(began) = self.cfg.stop_began.get() {
            until = until.min(*began + 2 * third);
        }
        self.insert_until = Some(until);
    }

    /// Takes in whatever the channel holds now, without waiting (at most `INTAKE_BOUND`
    /// batches); returns how many it took.
    pub(super) fn poll_intake(&mut self) -> usize {
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
        let rows = match &item {
            Incoming::Batch(b) => b.rows(),
            Incoming::Wal(w) => w.rows(),
        };
        self.input.bell.taken(rows);
        let entry = match item {
            Incoming::Batch(b) => Entry::new(b, None),
            Incoming::Wal(WalEvent::Logged(Logged {
                batch,
                pos,
                segment_created_ms,
            })) => {
                self.spool.logged(pos, segment_created_ms);
                Entry::new(batch, Some(pos))
            }
            Incoming::Wal(WalEvent::Started {
                segment,
                created_ms,
            }) => return self.spool.started(segment, created_ms),
        };
        let rows = entry.batch.len();
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the sixth review: with held refused rows close to the room, batches arriving
    /// during a retry wait pushed memory past the room without waking the thread (the room was
    /// measured without the held rows), so workers were refused with the spool empty; and
    /// memory past the room that the thread could not spool woke it on every turn. Past its room,
    /// memory wakes the thread when batches are on the channel, and only then.
    #[test]
    fn memory_past_room_rings_only_with_batches_to_spool() {
        let budget = Arc::new(MemoryBudget::new(32, 1 << 30));
        let bell = Bell::new(Arc::clone(&budget));
        // 20 rows in memory, past the room of 16, all of them held (their bytes too).
        budget.take(20, 4000);
        assert!(budget.over(1, 1));
        assert!(
            !bell.arm(i64::MAX, u64::MAX, 4000),
            "nothing on the channel: the thread sleeps"
        );
        assert!(!bell.due_or_over(0));
        // A sender's batch arrives: the thread must wake to spool it.
        budget.take(2, 100);
        assert!(bell.due_or_over(2));
        // Under the room, a batch rings only when it makes an insert due.
        budget.release(22, 4100);
        assert!(!bell.due_or_over(2));
        assert!(!bell.arm(i64::MAX, 1000, 0));
        budget.take(2, 1000);
        assert!(bell.due_or_over(2), "max_bytes reached");
        assert!(!bell.arm(i64::MAX, 1000, 1000), "but all of it held");
    }

    /// A worker about to wait for room nudges the flush thread, which may sleep with nothing
    /// arriving to wake it: past its room, memory makes the nudge ring (here the test's own
    /// thread stands in for the flush thread and is unparked).
    #[test]
    fn a_nudge_past_the_room_wakes_the_flush_thread() {
        let budget = Arc::new(MemoryBudget::new(32, 1 << 30));
        let (_tx, input) = Input::buffer(&budget);
        input.listen();
        let nudge = input.nudge();
        budget.take(20, 100);
        let began = Instant::now();
        nudge.nudge();
        std::thread::park_timeout(std::time::Duration::from_secs(30));
        assert!(
            began.elapsed() < std::time::Duration::from_secs(10),
            "not woken: {:?}",
            began.elapsed()
        );
    }
}
