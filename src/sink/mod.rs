//! Storage side: the flush thread that batches accepted rows, the spool and write-ahead log on disk, and the ClickHouse store.
//!
//! Workers send each request's `RowBatch` over a crossbeam channel (after reserving its rows and
//! bytes; `ingest::handoff`), to `flush` directly or through `wal` (write-ahead mode); `flush`
//! buffers them in bounded memory, moves the excess to `spool` (files in `segment` format,
//! batches in `codec` form), inserts on `max_rows` or `interval`, and sends refused rows to
//! `deadletter`; `clickhouse` is the only code that knows ClickHouse (schema, inserts, error
//! classes, keys). Each thread that talks to ClickHouse (flush, control) builds its own `Store`
//! on its own current-thread tokio runtime; no other thread runs tokio.

pub mod clickhouse;
pub mod codec;
pub mod deadletter;
pub mod flush;
pub mod segment;
pub mod spool;
pub mod wal;

pub use clickhouse::{
    ActiveKey, InsertError, Inserted, KeyRecord, Retry, RowRun, Store, StoreError,
};
pub use flush::{spawn, FlushConfig, FlushReport, FlushStats};

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
