//! The hand-off of a request's rows to the storage side: reserve room in memory, send, and (in
//! write-ahead mode) await the fsync.
//!
//! A worker reserves the batch's rows and heap bytes in the `MemoryBudget` before sending it,
//! and is refused (`HandoffError::BufferFull`) when they would pass the bounds: the flush thread
//! keeps memory under half of both by spooling, so the refusal only comes when it cannot
//! (spool full, or intake outrunning it by half the bound). Nothing here blocks or touches the disk: in `wal`
//! mode the worker's task awaits a oneshot that the write-ahead thread completes after its
//! group's fsync.
//!
//! The batch arrives admitted (rate limit and quota taken, `admission::admit`). Whenever it is
//! refused from here on (memory full, intake over, the write-ahead log full or failing) the
//! key gets its rate-limit credit back and the organisation its quota: the quota ticket rides
//! in the batch (released here, or by the write-ahead thread when it refuses the batch), the
//! rate-limit credit stays with the request (`Handed::Logging::refund`).

use std::sync::Arc;

use crossbeam_channel::{SendError, Sender};
use futures_channel::oneshot;

use super::budget::MemoryBudget;
use super::flush::{Intake, Nudge};
use super::wal::{WalRefusal, WalRequest};
use crate::admission::{RateRefund, Reservation};
use crate::auth::Principal;
use crate::row::RowBatch;

/// Why a batch was not handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandoffError {
    /// Memory is at its bound and the spool cannot take more: retry shortly.
    BufferFull,
    /// The storage side stopped taking batches: the server is shutting down.
    Draining,
    /// Write-ahead mode: the log cannot write to disk.
    WalFailed,
}

/// Where a worker sends its batches; one clone per worker.
#[derive(Clone)]
pub struct Handoff {
    budget: Arc<MemoryBudget>,
    to: To,
    /// Wakes the flush thread (`nudge_flush`); none for benches and tests without one.
    nudge: Option<Nudge>,
}

#[derive(Clone)]
enum To {
    /// `INGEST_DURABILITY=buffer`: straight to the flush thread; `202` at once.
    Buffer(Intake<RowBatch>),
    /// `INGEST_DURABILITY=wal`: to the write-ahead thread; `202` once on disk.
    Wal(Sender<WalRequest>),
    /// `close`d: the sender is gone; every batch is refused as after intake ended.
    Closed,
}

/// Rows handed over, possibly still waiting for their fsync.
#[must_use = "a write-ahead batch is accepted only once `settle` says so"]
pub enum Handed {
    Buffered {
        spans: usize,
    },
    Logging {
        spans: usize,
        /// Rows and bytes reserved, given back if the batch is refused.
        rows: u64,
        bytes: u64,
        budget: Arc<MemoryBudget>,
        /// Rate-limit credit, given back if the batch is refused (the write-ahead thread gives
        /// the quota back).
        refund: RateRefund,
        done: oneshot::Receiver<Result<(), WalRefusal>>,
    },
}

impl Handoff {
    /// `buffer` mode: batches go straight to the flush thread (`flush::Input::buffer`; a bare
    /// channel sender is for benches and tests that drain the channel themselves).
    pub fn buffer(budget: Arc<MemoryBudget>, tx: impl Into<Intake<RowBatch>>) -> Handoff {
        Handoff {
            budget,
            to: To::Buffer(tx.into()),
            nudge: None,
        }
    }

    /// `wal` mode: batches go to the write-ahead thread.
    pub fn wal(budget: Arc<MemoryBudget>, tx: Sender<WalRequest>) -> Handoff {
        Handoff {
            budget,
            to: To::Wal(tx),
            nudge: None,
        }
    }

    /// With `nudge`, the flush thread's: `nudge_flush` wakes it.
    pub fn with_nudge(self, nudge: Nudge) -> Handoff {
        Handoff {
            nudge: Some(nudge),
            ..self
        }
    }

    /// Wakes the flush thread if memory is past its room, before a worker waits for room
    /// (`server::conn`'s `wait_for_room`): it spools at once instead of at its next due time.
    pub fn nudge_flush(&self) {
        if let Some(n) = &self.nudge {
            n.nudge();
        }
    }

    /// Drops the sender: once every worker's is gone, the storage side sees intake over.
    /// A worker calls it when its thread ends, since a request task still pending then is
    /// never dropped (monoio leaves it, and the worker it holds, when its runtime ends), and
    /// a sender kept that way would hold the flush or write-ahead thread in its stop
    /// forever. A batch sent afterwards is refused `Draining`.
    pub fn close(&mut self) {
        self.to = To::Closed;
    }

    /// The memory the batches are reserved in.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Reserves room for `rows` (admitted for `principal`) and sends them on with their quota
    /// ticket. Refuses when memory is full or intake is over, giving the admission back.
    pub fn send(
        &self,
        principal: &Principal,
        mut rows: RowBatch,
        admitted: Reservation,
    ) -> Result<Handed, HandoffError> {
        let n = rows.len() as u64;
        let bytes = rows.heap_bytes() as u64;
        if self.budget.reserve(n, bytes).is_err() {
            admitted.cancel(principal);
            return Err(HandoffError::BufferFull);
        }
        let (ticket, refund) = admitted.into_parts(principal);
        rows.usage = ticket;
        let spans = n as usize;
        // On failure the channel hands the batch back, so its ticket can be released.
        let mut unsent = match &self.to {
            To::Buffer(tx) => match tx.send(rows) {
                Ok(()) => return Ok(Handed::Buffered { spans }),
                Err(SendError(rows)) => rows,
            },
            To::Wal(tx) => {
                let (done, wait) = oneshot::channel();
                match tx.send(WalRequest { batch: rows, done }) {
                    Ok(()) => {
                        return Ok(Handed::Logging {
                            spans,
                            rows: n,
                            bytes,
                            budget: self.budget.clone(),
                            refund,
                            done: wait,
                        })
                    }
                    Err(SendError(request)) => request.batch,
                }
            }
            To::Closed => rows,
        };
        // Intake is over: not buffered after all.
        std::mem::take(&mut unsent.usage).release();
        refund.give_back();
        self.budget.release(n, bytes);
        Err(HandoffError::Draining)
    }
}

impl Handed {
    /// The number of spans accepted, once they are as safe as the mode promises.
    pub async fn settle(self) -> Result<usize, HandoffError> {
        match self {
            Handed::Buffered { spans } => Ok(spans),
            Handed::Logging {
                spans,
                rows,
                bytes,
                budget,
                refund,
                done,
            } => {
                let refused = match done.await {
                    Ok(Ok(())) => return Ok(spans),
                    Ok(Err(WalRefusal::Full)) => HandoffError::BufferFull,
                    Ok(Err(WalRefusal::Failed)) => HandoffError::WalFailed,
                    // The write-ahead thread is gone: the server is stopping.
                    Err(oneshot::Canceled) => HandoffError::Draining,
                };
                // Refused: memory, rate-limit credit (and, by the write-ahead thread, the
                // quota) go back.
                budget.release(rows, bytes);
                refund.give_back();
                Err(refused)
            }
        }
    }
}
