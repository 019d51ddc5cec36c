//! On-demand key-set refreshes: a key created a moment ago works on its first request.
//!
//! The control thread reloads the key set every `INGEST_KEY_REFRESH_MS`; a key created in
//! between is unknown until then. So a worker that meets a well-formed key it does not know
//! asks for a refresh (`ask`) and waits, without blocking, until a load that began after it
//! asked has finished (`loaded`), then looks the key up again. Asking is two atomic operations
//! and, for the first asker since the last refresh, one non-blocking `write(2)` to an eventfd
//! the control thread waits on; no lock, no allocation.
//!
//! The control thread coalesces: it runs one load at a time, at most one every
//! `ON_DEMAND_GAP`, however many workers ask, and every asker waiting shares it. So a flood of
//! random keys costs ClickHouse at most one key-set load (two queries) per `ON_DEMAND_GAP`, and
//! each such request waits at most `UNKNOWN_KEY_WAIT` longer for its `401`.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The least time between the starts of two on-demand loads (10 per second at most).
pub const ON_DEMAND_GAP: Duration = Duration::from_millis(100);
/// The longest a request with an unknown key waits for the load it asked for.
pub const UNKNOWN_KEY_WAIT: Duration = Duration::from_millis(500);

/// Requests for a key-set load, and the count of loads begun and finished.
#[derive(Debug, Default)]
pub struct RefreshDemand {
    /// Loads of the key set begun (by the control thread, periodic or on demand).
    started: AtomicU64,
    /// Loads finished, whether they succeeded or not (a failed load keeps the old set, and
    /// waiting longer would not help the askers).
    finished: AtomicU64,
    /// A worker asked since the control thread last took the requests.
    wanted: AtomicBool,
    /// Loads run because a worker asked (before their periodic time), for `/metrics`.
    on_demand: AtomicU64,
    /// The eventfd the control thread waits on; set by it once it is ready to listen. Until
    /// then (and in benches and tests without a control thread) asking only sets `wanted`.
    bell: OnceLock<OwnedFd>,
}

impl RefreshDemand {
    /// Worker side: asks for a load and returns the number of the load whose end answers
    /// the request (any load begun after this call).
    pub fn ask(&self) -> u64 {
        // Read first: a load numbered past it begins after this point, so after the key in
        // question was created, and will know it.
        let target = self.started.load(Ordering::SeqCst) + 1;
        if !self.wanted.load(Ordering::Relaxed) && !self.wanted.swap(true, Ordering::SeqCst) {
            self.ring();
        }
        target
    }

    /// Whether the load `target` (or a later one) has finished.
    pub fn loaded(&self, target: u64) -> bool {
        self.finished.load(Ordering::SeqCst) >= target
    }

    /// Loads finished so far.
    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    /// Loads run because a worker asked.
    pub fn on_demand(&self) -> u64 {
        self.on_demand.load(Ordering::Relaxed)
    }

    /// Control side: whether a worker asked since the last `take`.
    pub fn is_wanted(&self) -> bool {
        self.wanted.load(Ordering::SeqCst)
    }

    /// Control side: a load begins now; it answers every request made before this call.
    /// `asked`: it runs because a worker asked, ahead of its periodic time.
    pub fn begin(&self, asked: bool) {
        self.wanted.store(false, Ordering::SeqCst);
        self.started.fetch_add(1, Ordering::SeqCst);
        if asked {
            self.on_demand.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Control side: the load begun last has finished (the new key set is in place, or the
    /// load failed).
    pub fn end(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
    }

    /// Control side: the eventfd to wait on, created on the first call.
    pub fn bell(&self) -> std::io::Result<BorrowedFd<'_>> {
        if self.bell.get().is_none() {
            // SAFETY: eventfd(2) with valid flags; the result is checked before use.
            let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: `fd` is a new descriptor that nothing else owns.
            let _ = self.bell.set(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        Ok(self.bell.get().expect("set above").as_fd())
    }

    /// Control side: empties the eventfd after it woke the control thread.
    pub fn silence(&self) {
        if let Some(fd) = self.bell.get() {
            let mut count = [0u8; 8];
            // SAFETY: reads 8 bytes into a local 8-byte buffer from a valid non-blocking fd;
            // the result (EAGAIN when already empty) needs no handling.
            let _ = unsafe { libc::read(fd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
        }
    }

    /// Wakes the control thread: one non-blocking `write(2)`, which never waits (an eventfd's
    /// counter cannot fill up with one write per load).
    fn ring(&self) {
        if let Some(fd) = self.bell.get() {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a local buffer to a valid non-blocking eventfd.
            let _ = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_is_answered_by_a_load_begun_after_it() {
        let d = RefreshDemand::default();
        let target = d.ask();
        assert_eq!(target, 1);
        assert!(d.is_wanted() && !d.loaded(target));
        // Asking again before the load begins shares it.
        assert_eq!(d.ask(), 1);
        d.begin(true);
        assert!(!d.is_wanted());
        // Asked during the load: that load may not know the key; the next one answers.
        assert_eq!(d.ask(), 2);
        d.end();
        assert!(d.loaded(1) && !d.loaded(2));
        d.begin(true);
        d.end();
        assert!(d.loaded(2));
        assert_eq!((d.on_demand(), d.finished()), (2, 2));
    }

    #[test]
    fn the_bell_wakes_and_is_silenced() {
        let d = RefreshDemand::default();
        let fd = d.bell().unwrap().as_raw_fd();
        let readable = || {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, no wait.
            unsafe { libc::poll(&mut p, 1, 0) == 1 }
        };
        assert!(!readable());
        d.ask();
        assert!(readable(), "the first ask rings");
        d.silence();
        assert!(!readable());
        d.ask();
        assert!(
            !readable(),
            "no second ring until a load takes the requests"
        );
        d.begin(true);
        d.ask();
        assert!(readable());
    }
}
