//! Intake: batches taken off the channel from the workers (or the write-ahead thread) into
//! the flush thread's queue, without waking for every one under steady load.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};

use super::queue::Entry;
use super::State;
use crate::row::RowBatch;
use crate::sink::wal::Logged;

/// While batches keep arriving between inserts, how long the thread sleeps before taking in
/// everything that came meanwhile (see `State::receive`).
const INTAKE_BATCH: Duration = Duration::from_millis(5);

/// Most batches taken off the channel in one go, so that a flood cannot starve an insert.
const INTAKE_BOUND: usize = 4096;

/// Where batches come from.
pub enum Input {
    /// `buffer` mode: straight from the workers.
    Buffer(Receiver<RowBatch>),
    /// `wal` mode: from the write-ahead thread, each already durable in the spool.
    Logged(Receiver<Logged>),
}

pub(super) enum Incoming {
    Batch(RowBatch),
    Logged(Logged),
}

impl Input {
    pub(super) fn recv_deadline(&self, at: Option<Instant>) -> Result<Incoming, RecvTimeoutError> {
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

    pub(super) fn try_recv(&self) -> Result<Incoming, TryRecvError> {
        match self {
            Input::Buffer(rx) => rx.try_recv().map(Incoming::Batch),
            Input::Logged(rx) => rx.try_recv().map(Incoming::Logged),
        }
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
    pub(super) fn receive(&mut self, at: Option<Instant>) {
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
}
