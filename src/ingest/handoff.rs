//! The hand-off of a request's rows to the storage side: reserve room in memory, send, and (in write-ahead mode) await the fsync.
//!
//! A worker reserves the batch's rows and heap bytes against `INGEST_BUFFER_MAX_ROWS` and
//! `INGEST_BUFFER_MAX_BYTES` before sending it, and refuses it with `503 buffer_full` when they
//! would pass: the flush thread keeps memory a batch short of both by spooling, so the refusal
//! only comes when it cannot (spool full, or disk slower than intake). Nothing here
//! blocks or touches the disk: in `wal` mode the worker's task awaits a oneshot that the
//! write-ahead thread completes after its group's fsync.
//!
//! The batch arrives admitted (rate limit and quota taken, `admission::admit`). Whenever it is
//! refused from here on (memory full, intake over, the write-ahead log full or failing) the
//! key gets its rate-limit credit back and the organisation its quota: the quota ticket rides
//! in the batch (released here, or by the write-ahead thread when it refuses the batch), the
//! rate-limit credit stays with the request (`Handed::Logging::refund`).

use std::sync::atomic::Ordering;

use crossbeam_channel::{SendError, Sender};
use futures_channel::oneshot;

use crate::admission::{RateRefund, Reservation};
use crate::auth::Principal;
use crate::http::response::Refusal;
use crate::row::RowBatch;
use crate::server::Shared;
use crate::sink::wal::{WalRefusal, WalRequest};

/// Where a worker sends its batches; one clone per worker.
#[derive(Clone)]
pub enum Handoff {
    /// `INGEST_DURABILITY=buffer`: straight to the flush thread; `202` at once.
    Buffer(Sender<RowBatch>),
    /// `INGEST_DURABILITY=wal`: to the write-ahead thread; `202` once on disk.
    Wal(Sender<WalRequest>),
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
        /// Rate-limit credit, given back if the batch is refused (the write-ahead thread gives
        /// the quota back).
        refund: RateRefund,
        done: oneshot::Receiver<Result<(), WalRefusal>>,
    },
}

impl Handoff {
    /// Reserves room for `rows` (admitted for `principal`) and sends them on with their quota
    /// ticket. Refuses when memory is full or intake is over, giving the admission back.
    pub fn send(
        &self,
        shared: &Shared,
        principal: &Principal,
        mut rows: RowBatch,
        admitted: Reservation,
    ) -> Result<Handed, Refusal> {
        let n = rows.len() as u64;
        let bytes = rows.heap_bytes() as u64;
        if let Err(full) = reserve(shared, n, bytes) {
            admitted.cancel(principal);
            return Err(full);
        }
        let (ticket, refund) = admitted.into_parts(principal);
        rows.usage = ticket;
        let spans = n as usize;
        // On failure the channel hands the batch back, so its ticket can be released.
        let mut unsent = match self {
            Handoff::Buffer(tx) => match tx.send(rows) {
                Ok(()) => return Ok(Handed::Buffered { spans }),
                Err(SendError(rows)) => rows,
            },
            Handoff::Wal(tx) => {
                let (done, wait) = oneshot::channel();
                match tx.send(WalRequest { batch: rows, done }) {
                    Ok(()) => {
                        return Ok(Handed::Logging {
                            spans,
                            rows: n,
                            bytes,
                            refund,
                            done: wait,
                        })
                    }
                    Err(SendError(request)) => request.batch,
                }
            }
        };
        // Intake is over: not buffered after all.
        std::mem::take(&mut unsent.usage).release();
        refund.give_back();
        unreserve(shared, n, bytes);
        Err(draining())
    }
}

impl Handed {
    /// The number of spans accepted, once they are as safe as the mode promises.
    pub async fn settle(self, shared: &Shared) -> Result<usize, Refusal> {
        match self {
            Handed::Buffered { spans } => Ok(spans),
            Handed::Logging {
                spans,
                rows,
                bytes,
                refund,
                done,
            } => {
                let refusal = match done.await {
                    Ok(Ok(())) => return Ok(spans),
                    Ok(Err(WalRefusal::Full)) => full(),
                    Ok(Err(WalRefusal::Failed)) => Refusal::new(
                        503,
                        "storage_unavailable",
                        "the write-ahead log cannot write to disk; retry shortly",
                    )
                    .retry_after(1),
                    // The write-ahead thread is gone: the server is stopping.
                    Err(oneshot::Canceled) => draining(),
                };
                // Refused: memory, rate-limit credit (and, by the write-ahead thread, the
                // quota) go back.
                unreserve(shared, rows, bytes);
                refund.give_back();
                Err(refusal)
            }
        }
    }
}

fn reserve(shared: &Shared, rows: u64, bytes: u64) -> Result<(), Refusal> {
    // The flush thread keeps room for the largest batch it knows of.
    let stats = &shared.flush_stats;
    stats.largest_batch_rows.fetch_max(rows, Ordering::Relaxed);
    stats
        .largest_batch_bytes
        .fetch_max(bytes, Ordering::Relaxed);
    let before = shared.buffered_rows.fetch_add(rows, Ordering::AcqRel);
    if before + rows > shared.buffer_max_rows {
        shared.buffered_rows.fetch_sub(rows, Ordering::AcqRel);
        return Err(full());
    }
    let memory = &shared.flush_stats.buffered_bytes;
    let before = memory.fetch_add(bytes, Ordering::AcqRel);
    // A batch larger than the whole bound still goes in when memory is empty, so that no valid
    // batch is refused forever.
    if before > 0 && before + bytes > shared.config.buffer_max_bytes {
        memory.fetch_sub(bytes, Ordering::AcqRel);
        shared.buffered_rows.fetch_sub(rows, Ordering::AcqRel);
        return Err(full());
    }
    Ok(())
}

fn unreserve(shared: &Shared, rows: u64, bytes: u64) {
    shared.buffered_rows.fetch_sub(rows, Ordering::AcqRel);
    shared
        .flush_stats
        .buffered_bytes
        .fetch_sub(bytes, Ordering::AcqRel);
}

#[cold]
fn full() -> Refusal {
    Refusal::new(
        503,
        "buffer_full",
        "the write buffer is full; retry shortly",
    )
    .retry_after(1)
}

#[cold]
fn draining() -> Refusal {
    Refusal::new(503, "draining", "the server is shutting down").closing()
}
