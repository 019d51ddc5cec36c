//! The hand-off of a request's rows to the storage side: reserve room in memory, send, and (in write-ahead mode) await the fsync.
//!
//! A worker reserves the batch's rows and heap bytes against `INGEST_BUFFER_MAX_ROWS` and
//! `INGEST_BUFFER_MAX_BYTES` before sending it, and refuses it with `503 buffer_full` when they
//! would pass: the flush thread keeps memory a batch short of both by spooling, so the refusal
//! only comes when it cannot (spool full, or disk slower than intake). Nothing here
//! blocks or touches the disk: in `wal` mode the worker's task awaits a oneshot that the
//! write-ahead thread completes after its group's fsync.

use std::sync::atomic::Ordering;

use crossbeam_channel::Sender;
use futures_channel::oneshot;

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
        done: oneshot::Receiver<Result<(), WalRefusal>>,
    },
}

impl Handoff {
    /// Reserves room for `rows` and sends them on. Refuses when memory is full or intake is over.
    pub fn send(&self, shared: &Shared, rows: RowBatch) -> Result<Handed, Refusal> {
        let n = rows.len() as u64;
        let bytes = rows.heap_bytes() as u64;
        reserve(shared, n, bytes)?;
        let spans = n as usize;
        let handed = match self {
            Handoff::Buffer(tx) => tx.send(rows).map(|()| Handed::Buffered { spans }).ok(),
            Handoff::Wal(tx) => {
                let (done, wait) = oneshot::channel();
                tx.send(WalRequest { batch: rows, done })
                    .map(|()| Handed::Logging {
                        spans,
                        rows: n,
                        bytes,
                        done: wait,
                    })
                    .ok()
            }
        };
        handed.ok_or_else(|| {
            unreserve(shared, n, bytes);
            draining()
        })
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
                done,
            } => match done.await {
                Ok(Ok(())) => Ok(spans),
                Ok(Err(WalRefusal::Full)) => {
                    unreserve(shared, rows, bytes);
                    Err(full())
                }
                Ok(Err(WalRefusal::Failed)) => {
                    unreserve(shared, rows, bytes);
                    Err(Refusal::new(
                        503,
                        "storage_unavailable",
                        "the write-ahead log cannot write to disk; retry shortly",
                    )
                    .retry_after(1))
                }
                // The write-ahead thread is gone: the server is stopping.
                Err(oneshot::Canceled) => {
                    unreserve(shared, rows, bytes);
                    Err(draining())
                }
            },
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
