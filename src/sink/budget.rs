//! `MemoryBudget`: the rows and heap bytes of accepted batches held in memory, against
//! `INGEST_BUFFER_MAX_ROWS` and `INGEST_BUFFER_MAX_BYTES`.
//!
//! Workers `reserve` a batch before handing it over and are refused (`503 buffer_full`) past
//! either bound; the flush thread `release`s what it wrote, dead-lettered or moved to the
//! spool, `take`s what it reads back from the spool, and keeps memory under `room()` (half the
//! bound) by spooling, so that a worker is refused only when the spool cannot take more: the
//! other half is what workers may hand over while the flush thread is busy with something
//! else (a segment's fsync, an insert's intake poll). With only one batch of margin, as
//! before, a tight loop of requests met `503 buffer_full` while the spool had room. Plain
//! atomics: nothing here blocks.

use std::sync::atomic::{AtomicU64, Ordering};

/// The memory bound was reached: refuse the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// Rows and bytes in memory and their bounds; shared by the workers and the flush thread.
#[derive(Debug)]
pub struct MemoryBudget {
    /// Rows accepted and held in memory.
    rows: AtomicU64,
    /// Heap bytes of the batches held in memory (`RowBatch::heap_bytes`).
    bytes: AtomicU64,
    max_rows: u64,
    max_bytes: u64,
    /// The largest batch (rows, heap bytes) a worker has tried to reserve: the flush thread
    /// keeps room for one more of it.
    largest_rows: AtomicU64,
    largest_bytes: AtomicU64,
}

impl MemoryBudget {
    pub fn new(max_rows: u64, max_bytes: u64) -> MemoryBudget {
        MemoryBudget {
            rows: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            max_rows,
            max_bytes,
            largest_rows: AtomicU64::new(0),
            largest_bytes: AtomicU64::new(0),
        }
    }

    /// A worker's reservation for a batch of `rows` rows taking `bytes` heap bytes. A batch
    /// larger than the whole byte bound still goes in when memory holds no bytes, so that no
    /// valid batch is refused forever.
    pub fn reserve(&self, rows: u64, bytes: u64) -> Result<(), Full> {
        self.largest_rows.fetch_max(rows, Ordering::Relaxed);
        self.largest_bytes.fetch_max(bytes, Ordering::Relaxed);
        let before = self.rows.fetch_add(rows, Ordering::AcqRel);
        if before + rows > self.max_rows {
            self.rows.fetch_sub(rows, Ordering::AcqRel);
            return Err(Full);
        }
        let before = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        if before > 0 && before + bytes > self.max_bytes {
            self.bytes.fetch_sub(bytes, Ordering::AcqRel);
            self.rows.fetch_sub(rows, Ordering::AcqRel);
            return Err(Full);
        }
        Ok(())
    }

    /// Counts rows and bytes in without checking the bounds: what the flush thread reads back
    /// from the spool (it reads only while there is room), and tests that stand in for workers.
    pub fn take(&self, rows: u64, bytes: u64) {
        self.rows.fetch_add(rows, Ordering::AcqRel);
        self.bytes.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Gives rows and bytes back: written, dead-lettered, spooled, or refused after reserving.
    pub fn release(&self, rows: u64, bytes: u64) {
        self.rows.fetch_sub(rows, Ordering::AcqRel);
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Rows held in memory.
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Acquire)
    }

    /// Heap bytes held in memory.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// `INGEST_BUFFER_MAX_ROWS`.
    pub fn max_rows(&self) -> u64 {
        self.max_rows
    }

    /// `INGEST_BUFFER_MAX_BYTES`.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The (rows, bytes) the flush thread lets its queue use before it spools: half the
    /// bound, the other half being the margin for intake while it reacts; less when the
    /// largest batch a worker has tried to hand over needs more margin than that, but at least
    /// a quarter of the bound.
    pub fn room(&self) -> (u64, u64) {
        let keep = |max: u64, largest: &AtomicU64| {
            max.saturating_sub(largest.load(Ordering::Relaxed))
                .min(max / 2)
                .max(max / 4)
        };
        (
            keep(self.max_rows, &self.largest_rows),
            keep(self.max_bytes, &self.largest_bytes),
        )
    }

    /// The flush thread is behind: memory is over `room()` and has no room left for the
    /// largest batch a worker has tried to hand over, in rows or in bytes. The flush thread
    /// brings memory back under `room()` by spooling; until it does, the next batch may be
    /// refused although the spool has room (`server::conn`'s `wait_for_room` waits then).
    pub fn behind(&self) -> bool {
        let (room_rows, room_bytes) = self.room();
        let (rows, bytes) = (self.rows(), self.bytes());
        let no_room = |held: u64, room: u64, largest: &AtomicU64, max: u64| {
            held > room && held + largest.load(Ordering::Relaxed) > max
        };
        no_room(rows, room_rows, &self.largest_rows, self.max_rows)
            || no_room(bytes, room_bytes, &self.largest_bytes, self.max_bytes)
    }

    /// Memory is over `room() * num / den`, in rows or in bytes.
    pub fn over(&self, num: u64, den: u64) -> bool {
        let (room_rows, room_bytes) = self.room();
        self.rows() > room_rows / den * num || self.bytes() > room_bytes / den * num
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_refuses_past_either_bound_and_takes_nothing_then() {
        let b = MemoryBudget::new(100, 1000);
        assert_eq!(b.reserve(60, 400), Ok(()));
        assert_eq!(b.reserve(50, 10), Err(Full), "rows");
        assert_eq!(b.reserve(10, 700), Err(Full), "bytes");
        assert_eq!((b.rows(), b.bytes()), (60, 400));
        b.release(60, 400);
        assert_eq!(
            b.reserve(1, 5000),
            Ok(()),
            "alone, a batch over the bound goes in"
        );
        assert_eq!(b.reserve(1, 1), Err(Full));
    }

    #[test]
    fn room_keeps_space_for_the_largest_batch() {
        let b = MemoryBudget::new(1000, 1000);
        assert_eq!(b.room(), (500, 500), "half: the rest is intake's margin");
        let _ = b.reserve(100, 300);
        b.release(100, 300);
        assert_eq!(
            b.room(),
            (500, 500),
            "batches within the margin change nothing"
        );
        let _ = b.reserve(600, 700);
        b.release(600, 700);
        assert_eq!(b.room(), (400, 300), "room for the largest batch");
        let _ = b.reserve(900, 900);
        assert_eq!(b.room(), (250, 250), "at least a quarter");
        assert!(b.over(1, 1));
        b.release(900, 900);
        assert!(!b.over(1, 1));
    }

    #[test]
    fn behind_when_the_largest_batch_would_not_fit_and_not_once_memory_is_back_under_room() {
        let b = MemoryBudget::new(1000, 1000);
        assert!(!b.behind(), "empty");
        b.reserve(10, 100).unwrap();
        assert!(!b.behind(), "largest batch 100 bytes, 100 held");
        b.take(0, 800);
        assert!(!b.behind(), "900 held: a batch of 100 more still fits");
        b.take(0, 10);
        assert!(
            b.behind(),
            "910 held: a batch of 100 more would pass 1000 bytes"
        );
        b.release(0, 860);
        assert!(!b.behind(), "50 held, under room");
        // Rows alike.
        b.reserve(200, 1).unwrap();
        b.take(600, 0);
        assert!(b.behind(), "810 rows held: 200 more would pass 1000");
        b.release(600, 0);
        assert!(!b.behind());
    }

    /// `BatchLimit::rows` is exactly the most rows `reserve` takes in one batch with memory
    /// empty: a batch within it is refused only for a while (`503 buffer_full`), one past it
    /// would be refused for ever, so it is refused as too large before it gets here.
    #[test]
    fn the_batch_limit_s_rows_are_what_an_empty_budget_takes_at_once() {
        use crate::ingest::BatchLimit;
        for (max_rows, max_bytes) in [(1, 65_536), (1000, 1 << 20), (1_000_000, 512 << 20)] {
            let limit = BatchLimit::of_buffer(max_rows, max_bytes);
            let b = MemoryBudget::new(max_rows, max_bytes);
            assert_eq!(b.reserve(limit.rows + 1, 1), Err(Full), "{max_rows}");
            assert_eq!(b.reserve(limit.rows, 1), Ok(()), "{max_rows}");
            assert_eq!(limit.bytes, max_bytes / 4);
        }
    }
}
