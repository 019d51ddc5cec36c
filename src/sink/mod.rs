//! The storage side: everything after a worker has priced a request's rows.
//!
//! - `handoff.rs`: a worker's end: reserve memory (`budget.rs`), send the batch to the flush
//!   thread (`buffer` mode) or the write-ahead thread (`wal`), await the fsync.
//! - `wal.rs`: the write-ahead thread: append, one fsync per group, answer the workers.
//! - `flush/`: the flush thread: memory queue, spool spill, inserts, retries, dead letters.
//! - `spool/`, `segment.rs`, `acks.rs`, `codec.rs`: the spool on disk: segments of records,
//!   the records of each already confirmed, a `RowBatch` as bytes.
//! - `deadletter.rs`: rows ClickHouse refused for good, as JSON lines.
//! - `clickhouse/`: the only code that talks to ClickHouse.
//! - `stats.rs`: the counters and gauges all of these keep for `/metrics` and `/ready`.
//!
//! Each thread that talks to ClickHouse (flush, control, a CLI command) builds its own `Store`
//! on its own current-thread tokio runtime; no other thread runs tokio.

pub mod acks;
pub mod budget;
pub mod clickhouse;
pub mod codec;
pub mod deadletter;
pub mod flush;
pub mod handoff;
pub mod salvage;
pub mod segment;
pub mod spool;
pub mod stats;
pub mod wal;

pub use budget::MemoryBudget;
pub use clickhouse::{
    ActiveKey, InsertError, Inserted, KeyRecord, Migrated, Retry, RowRun, Store, StoreError,
};
pub use flush::{spawn, FlushConfig, FlushReport};
pub use handoff::{Handed, Handoff, HandoffError};
pub use stats::FlushStats;

#[cfg(test)]
pub(crate) mod test_dir {
    //! A fresh directory per test under the system temp dir, removed on drop.

    use std::path::{Path, PathBuf};

    pub struct TestDir(PathBuf);

    impl TestDir {
        pub fn new(name: &str) -> TestDir {
            static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("traceingest-{name}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TestDir(dir)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
pub(crate) mod faults {
    //! Disk faults for tests, armed per thread: tests run side by side in one process, so a
    //! process-wide fault (a lowered `RLIMIT_NOFILE`, a full file system) would hit the others.
    //! Only code running on the test's own thread sees its faults.

    use std::cell::Cell;
    use std::io;

    /// Where a fault can be armed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Site {
        /// `Spool::read_payload`: opening or reading a segment to read a record back.
        SpoolRead,
        /// `segment::Writer::create`, after the file was made.
        SegmentCreate,
        /// `segment::Writer::sync`.
        SegmentSync,
        /// `DeadLetters::write`, after its lines reached the file, before its fsync.
        DeadLetterSync,
        /// `segment::Writer::append`, before the record is written.
        SegmentWrite,
        /// `segment::Writer::append`: half the record is written, then the write fails, and
        /// so does cutting the file back (an I/O error, then another).
        SegmentTorn,
    }
    const SITES: usize = 6;

    thread_local! {
        /// Faults left to raise, by `Site`.
        static ARMED: Cell<[u32; SITES]> = const { Cell::new([0; SITES]) };
        /// The error to raise there instead of the site's own (0: the site's own).
        static ERRNO: Cell<[i32; SITES]> = const { Cell::new([0; SITES]) };
    }

    /// The next `n` operations at `site` on this thread fail, with the site's own error.
    pub fn arm(site: Site, n: u32) {
        arm_errno(site, n, 0);
    }

    /// The next `n` operations at `site` on this thread fail with `errno` (0: the site's own).
    pub fn arm_errno(site: Site, n: u32, errno: i32) {
        ARMED.with(|a| {
            let mut armed = a.get();
            armed[site as usize] = n;
            a.set(armed);
        });
        ERRNO.with(|e| {
            let mut errnos = e.get();
            errnos[site as usize] = errno;
            e.set(errnos);
        });
    }

    /// Called at `site`: the error `errno` (or the one armed) if a fault is armed there (one
    /// fewer is left).
    pub fn check(site: Site, errno: i32) -> io::Result<()> {
        ARMED.with(|a| {
            let mut armed = a.get();
            match armed[site as usize] {
                0 => Ok(()),
                n => {
                    armed[site as usize] = n - 1;
                    a.set(armed);
                    let armed_errno = ERRNO.with(|e| e.get()[site as usize]);
                    let errno = if armed_errno != 0 { armed_errno } else { errno };
                    Err(io::Error::from_raw_os_error(errno))
                }
            }
        })
    }
}
