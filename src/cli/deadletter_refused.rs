//! The refused file of `deadletter replay` and the file its run writes aside.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::rows;

/// Where a run writes its refused rows until its end, and that file, locked for the run.
/// Dropped, it is removed if its path still names it and it is empty (a run that refused
/// nothing, or stopped before writing there); refused rows that were not renamed onto the
/// refused file (a failed rename, a panic) stay there.
pub(super) struct LockedAside {
    pub(super) path: PathBuf,
    pub(super) file: std::fs::File,
}

impl LockedAside {
    /// Whether `path` names this very file now.
    pub(super) fn named(&self) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        match (std::fs::metadata(&self.path), self.file.metadata()) {
            (Ok(p), Ok(f)) => (p.dev(), p.ino()) == (f.dev(), f.ino()),
            _ => false,
        }
    }
}

impl Drop for LockedAside {
    fn drop(&mut self) {
        if self.named() && self.file.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Opens (creating) `aside` and locks it for this process, or says that another replay has it.
/// While this process holds the lock, the path names the locked file: only its holder removes
/// or renames it, and a file locked after its path went elsewhere is let go and opened again.
pub(super) fn lock_aside(aside: &Path) -> anyhow::Result<LockedAside> {
    use std::os::fd::AsRawFd as _;
    loop {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(aside)
            .with_context(|| format!("cannot open {}", aside.display()))?;
        // SAFETY: `flock` on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::WouldBlock {
                bail!(
                    "another `deadletter replay` is writing its refused rows to {}: wait for it \
                     to end, or name another --refused",
                    aside.display()
                );
            }
            return Err(e).with_context(|| format!("cannot lock {}", aside.display()));
        }
        let locked = LockedAside {
            path: aside.to_path_buf(),
            file,
        };
        if locked.named() {
            return Ok(locked);
        }
        // Its holder removed or renamed it between our open and our lock: let it go (its drop
        // leaves what the path names alone) and open the path again.
        drop(locked);
    }
}

/// The refused file as the run found it, held from before the run checks it (`refused_keys`)
/// to its end, so that the run replaces or removes only that file: absent, or open and
/// exclusively locked. A server whose dead-letter file it is (named with `--refused`) cannot
/// append to it meanwhile (its writes hold their rows, as during a replay of the file in
/// place), and a file that appears at the path during the run is left as it is.
pub(super) struct HeldRefused {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl HeldRefused {
    /// Opens and locks the file at `path` (waiting for a server's write to end, at most
    /// `wait`), or notes that there is none.
    pub(super) fn hold(path: &Path, wait: Duration) -> anyhow::Result<HeldRefused> {
        let cannot = || format!("cannot lock {}", path.display());
        loop {
            // Open for writing (nothing is written through it): where `flock` is emulated with
            // byte-range locks (NFS), an exclusive lock needs that, and a read-only descriptor
            // gets `EBADF`. Read-only when writing is not permitted: replacing or removing the
            // file needs only its directory.
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::PermissionDenied => std::fs::File::open(path),
                    _ => Err(e),
                });
            let file = match opened {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(HeldRefused {
                        path: path.to_path_buf(),
                        file: None,
                    })
                }
                Err(e) => return Err(e).with_context(cannot),
            };
            lock_for_run(&file, libc::LOCK_EX, wait, path)?;
            let held = HeldRefused {
                path: path.to_path_buf(),
                file: Some(file),
            };
            // Moved or replaced between the open and the lock: the path's file is another.
            if held.names_it() {
                return Ok(held);
            }
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    #[cfg(test)]
    pub(super) fn file(&self) -> Option<&std::fs::File> {
        self.file.as_ref()
    }

    /// Whether the path still names the file held.
    fn names_it(&self) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        match (
            std::fs::metadata(&self.path),
            self.file.as_ref().map(|f| f.metadata()),
        ) {
            (Ok(p), Some(Ok(f))) => (p.dev(), p.ino()) == (f.dev(), f.ino()),
            _ => false,
        }
    }

    /// Puts this run's refused rows (`refused` of them, in `aside`) in place of the file held,
    /// or removes it when the run tried every row and refused none; says what it did, for the
    /// summary. A file other than the one held at the path (one that appeared, or replaced
    /// it) is left as it is: removing it or renaming onto it could lose rows written there
    /// during the run; this run's refused rows then stay in `aside`, and the error says so.
    pub(super) fn settle(
        self,
        aside: &Path,
        refused: u64,
        stopped: bool,
    ) -> anyhow::Result<String> {
        let ours = match &self.file {
            None => !self.path.exists(),
            Some(_) => self.names_it(),
        };
        if refused > 0 && !ours {
            bail!(
                "{} appeared or was replaced during the run (another writer's file?): left as it \
                 is; this run's refused rows are in {}",
                self.path.display(),
                aside.display()
            );
        }
        if refused == 0 && !ours {
            return Ok(String::new());
        }
        if refused > 0 && self.file.is_none() {
            // Nothing at the path when the run checked: nothing there may be replaced.
            rename_noreplace(aside, &self.path).with_context(|| {
                format!(
                    "{} appeared during the run (another writer's file?): left as it is; this \
                     run's refused rows are in {}",
                    self.path.display(),
                    aside.display()
                )
            })?;
            sync_parent(&self.path);
            return Ok(format!(
                ", {} refused (in {})",
                rows(refused),
                self.path.display()
            ));
        }
        // The lock held: nobody else writes the file until the rename or removal.
        settle_refused(&self.path, aside, refused, stopped)
    }
}

/// `rename(2)` that fails when `to` exists (`RENAME_NOREPLACE`; where the filesystem lacks it,
/// checked just before a plain rename).
fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(from)?, c(to)?);
    // SAFETY: both paths are NUL-terminated strings that live across the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
        return Err(e);
    }
    if to.exists() {
        return Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists));
    }
    std::fs::rename(from, to)
}

/// Puts this run's refused rows (`refused` of them, in `aside`) in place of `refused_path`;
/// says what it did, for the summary.
fn settle_refused(
    refused_path: &Path,
    aside: &Path,
    refused: u64,
    stopped: bool,
) -> anyhow::Result<String> {
    let said = if refused > 0 {
        std::fs::rename(aside, refused_path).with_context(|| {
            format!(
                "cannot rename {} to {} (this run's refused rows are in the first)",
                aside.display(),
                refused_path.display()
            )
        })?;
        format!(
            ", {} refused (in {})",
            rows(refused),
            refused_path.display()
        )
    } else {
        // The empty aside goes when its lock does (`LockedAside`).
        if stopped {
            return Ok(String::new());
        }
        // Every row of FILE was tried, and those of the earlier refused file are in FILE.
        match std::fs::remove_file(refused_path) {
            Ok(()) => format!(
                "; {} of an earlier run removed: this run refused no row",
                refused_path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot remove {}", refused_path.display()))
            }
        }
    };
    sync_parent(refused_path);
    Ok(said)
}

/// Makes a rename or removal at `path` survive a crash (best effort: the rows are in FILE
/// anyway): an fsync of its directory.
fn sync_parent(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// How long a replay waits for its lock on FILE or on the refused file. The server holds one
/// only while it writes refused rows (milliseconds); longer, another `deadletter replay` holds
/// it for its whole run (one whose FILE is this run's refused file, or the other way round),
/// and two such runs waiting for each other would wait for ever.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Takes the `flock` `op` (`LOCK_SH` or `LOCK_EX`) on `f`, waiting at most `wait`: `true`
/// once held, `false` when the file's filesystem does not lock files, and `WouldBlock` when
/// it was still held elsewhere after `wait`.
pub(super) fn lock_within(f: &std::fs::File, op: i32, wait: Duration) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd as _;
    let until = Instant::now() + wait;
    loop {
        // SAFETY: `flock` on a descriptor `f` owns for the call; no memory is passed.
        if unsafe { libc::flock(f.as_raw_fd(), op | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        if crate::sink::deadletter::unlockable(&e) {
            return Ok(false);
        }
        match e.kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => return Err(e),
        }
    }
}

/// `lock_within` on `f`, the file at `path`, for a run: a filesystem that does not lock files
/// is warned of (the run goes on unlocked), a lock held elsewhere past `wait` is the error.
pub(super) fn lock_for_run(
    f: &std::fs::File,
    op: i32,
    wait: Duration,
    path: &Path,
) -> anyhow::Result<()> {
    match lock_within(f, op, wait) {
        Ok(true) => {}
        Ok(false) => crate::cli::note(
            "WARN",
            format_args!(
                "warning: the filesystem of {} does not lock files; going on without its lock",
                path.display()
            ),
        ),
        Err(e) => return Err(locked_too_long(e, path, wait)),
    }
    Ok(())
}

/// The error of a lock on `path` `lock_within` did not get.
pub(super) fn locked_too_long(e: std::io::Error, path: &Path, wait: Duration) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::WouldBlock {
        anyhow::anyhow!(
            "{} stayed locked for {:?}: another `traceingest deadletter replay` is using it (as \
             its FILE or its --refused file); run this one once that one has ended",
            path.display(),
            wait
        )
    } else {
        anyhow::Error::new(e).context(format!("cannot lock {}", path.display()))
    }
}
