//! The price table in force, shared by all workers and replaced whole when the pricing file is
//! reloaded (on SIGHUP or when a polling thread sees it change).
//!
//! Workers call [`SharedPrices::current`] once per request (one atomic increment) and price
//! against that `Arc` — a reload never changes a table under a request. Reloads run on control
//! threads: they read the file, build a new table and swap it in; on any error the old table
//! stays and the error says why.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use arc_swap::ArcSwap;

use super::file::PricingFileError;
use super::table::PriceTable;

/// What the pricing file looked like at the last load attempt, to notice a change cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    Missing,
    File {
        len: u64,
        modified: Option<SystemTime>,
        /// A file replaced by rename has another inode even with the same size and time.
        inode: u64,
    },
}

/// The shared, swappable price table.
#[derive(Debug)]
pub struct SharedPrices {
    table: ArcSwap<PriceTable>,
    /// The file's stamp at the last load attempt; the lock also serialises reloads.
    seen: Mutex<Option<Stamp>>,
}

impl SharedPrices {
    /// Shares `table`; no file seen yet.
    pub fn new(table: PriceTable) -> Self {
        SharedPrices {
            table: ArcSwap::from_pointee(table),
            seen: Mutex::new(None),
        }
    }

    /// The built-in table alone.
    pub fn builtin() -> Self {
        Self::new(PriceTable::builtin())
    }

    /// Start-up: the built-in table, with the pricing file on top when a path is given.
    pub fn load(path: Option<&Path>) -> Result<Self, PricingFileError> {
        let shared = Self::builtin();
        if let Some(path) = path {
            shared.reload_from(path)?;
        }
        Ok(shared)
    }

    /// The table in force. Cheap (an atomic increment); take it once per request.
    #[inline]
    pub fn current(&self) -> Arc<PriceTable> {
        self.table.load_full()
    }

    /// Puts `table` in force.
    pub fn replace(&self, table: PriceTable) {
        self.table.store(Arc::new(table));
    }

    /// Builds built-in + the file at `path` and puts it in force. On error the table in force
    /// stays and the error names the file, the line and key, and the reason.
    pub fn reload_from(&self, path: &Path) -> Result<(), PricingFileError> {
        let mut seen = self.lock();
        *seen = Some(stamp(path));
        self.put(PriceTable::from_file(path)?);
        Ok(())
    }

    /// Puts a table loaded from a file in force, reporting once what the file's prices could
    /// not represent.
    fn put(&self, table: PriceTable) {
        for note in table.notes() {
            tracing::warn!(file = table.file().unwrap_or(""), "pricing file: {note}");
        }
        self.table.store(Arc::new(table));
    }

    /// Reloads if the file's size, modification time or inode changed since the last attempt
    /// (for a thread polling every second). `Ok(true)` when a new table is in force. A broken
    /// or vanished file is reported once per change, not on every poll.
    pub fn reload_if_changed(&self, path: &Path) -> Result<bool, PricingFileError> {
        let mut seen = self.lock();
        let now = stamp(path);
        if *seen == Some(now) {
            return Ok(false);
        }
        *seen = Some(now);
        self.put(PriceTable::from_file(path)?);
        Ok(true)
    }

    /// The stamp lock; a panic elsewhere while holding it leaves nothing half-done.
    fn lock(&self) -> MutexGuard<'_, Option<Stamp>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The file's current stamp.
fn stamp(path: &Path) -> Stamp {
    match std::fs::metadata(path) {
        Ok(m) => Stamp::File {
            len: m.len(),
            modified: m.modified().ok(),
            inode: inode(&m),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Stamp::Missing,
        // Unreadable metadata: treat as changed each time so the error is seen.
        Err(_) => Stamp::File {
            len: u64::MAX,
            modified: None,
            inode: 0,
        },
    }
}

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::Pricer;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh temp file path, removed on drop.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new() -> Self {
            static N: AtomicU32 = AtomicU32::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            TempFile(std::env::temp_dir().join(format!(
                "traceingest-pricing-{}-{n}.json",
                std::process::id()
            )))
        }
        fn write(&self, text: &str) {
            std::fs::write(&self.0, text).unwrap();
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// The prompt price per 1M of `id` in the table in force, or "unknown".
    fn prompt_of(shared: &SharedPrices, id: &str) -> String {
        let t = shared.current();
        match t.get(id) {
            Some(m) => format!(
                "{} {}",
                m.source.as_str(),
                m.latest()
                    .prices
                    .base
                    .get(crate::pricing::Dimension::Prompt)
                    .map(|p| p.per_million_string())
                    .unwrap_or_default()
            ),
            None => "unknown".into(),
        }
    }

    #[test]
    fn file_overrides_and_adds_models_and_a_broken_file_keeps_the_old_table() {
        let f = TempFile::new();
        f.write(r#"{"models": [{"id": "openai/gpt-4o", "prompt": "0.000001"}, {"id": "acme/x", "prompt": "1e-6"}]}"#);
        let shared = SharedPrices::load(Some(&f.0)).unwrap();
        assert_eq!(prompt_of(&shared, "openai/gpt-4o"), "file 1");
        assert_eq!(prompt_of(&shared, "acme/x"), "file 1");
        assert_eq!(prompt_of(&shared, "openai/gpt-4o-mini"), "builtin 0.15");
        let generation = shared.current().generation();

        f.write("{\"models\": [\n  {\"id\": \"acme/x\", \"prompt\": \"lots\"}\n]}");
        let err = shared.reload_from(&f.0).unwrap_err();
        assert_eq!(err.file, f.0.display().to_string());
        assert_eq!(err.line, Some(2));
        assert_eq!(err.key.as_deref(), Some("models[0].prompt"));
        assert_eq!(err.reason, "\"lots\": not a decimal number");
        assert_eq!(shared.current().generation(), generation);
        assert_eq!(prompt_of(&shared, "acme/x"), "file 1");

        let missing = TempFile::new();
        let err = shared.reload_from(&missing.0).unwrap_err();
        assert!(err.reason.starts_with("cannot read: "), "{err}");
        assert_eq!(prompt_of(&shared, "acme/x"), "file 1");
    }

    #[test]
    fn reload_if_changed_picks_up_a_changed_file_once() {
        let f = TempFile::new();
        f.write(r#"{"models": [{"id": "acme/x", "prompt": "0.000001"}]}"#);
        let shared = SharedPrices::builtin();
        assert_eq!(shared.reload_if_changed(&f.0), Ok(true));
        assert_eq!(shared.reload_if_changed(&f.0), Ok(false));
        assert_eq!(prompt_of(&shared, "acme/x"), "file 1");

        // A worker's cache sees the swap.
        let mut pricer = Pricer::new();
        let before = pricer
            .lookup(&shared.current(), None, "acme/x")
            .map(|m| m.id.clone());
        assert_eq!(before.as_deref(), Some("acme/x"));

        f.write(r#"{"models": [{"id": "acme/y", "prompt": "0.0000025"}]}"#);
        assert_eq!(shared.reload_if_changed(&f.0), Ok(true));
        assert_eq!(prompt_of(&shared, "acme/x"), "unknown");
        assert_eq!(prompt_of(&shared, "acme/y"), "file 2.5");
        assert!(pricer.lookup(&shared.current(), None, "acme/x").is_none());

        // Broken: reported once, old table kept, not re-reported while unchanged.
        f.write("{\"models\": [");
        assert!(shared.reload_if_changed(&f.0).is_err());
        assert_eq!(shared.reload_if_changed(&f.0), Ok(false));
        assert_eq!(prompt_of(&shared, "acme/y"), "file 2.5");

        // Removed: reported once, old table kept.
        std::fs::remove_file(&f.0).unwrap();
        assert!(shared.reload_if_changed(&f.0).is_err());
        assert_eq!(shared.reload_if_changed(&f.0), Ok(false));
        assert_eq!(prompt_of(&shared, "acme/y"), "file 2.5");
    }
}
