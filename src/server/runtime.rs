//! Worker threads: one monoio runtime per core, each with its own `SO_REUSEPORT` listener.
//!
//! The kernel spreads new connections over the listeners; a connection stays on the worker that
//! accepted it. io_uring is used where the kernel allows it, else the legacy epoll driver, and
//! the log says which. On drain (`Workers::drain`, a oneshot per worker, so an idle worker has
//! no timer to poll a flag with) a worker stops accepting, lets its connections finish (they see
//! the drain flag), and drops its sender, which is how the flush thread learns intake is over.
//!
//! Worker N is pinned to core N unless `INGEST_PIN_WORKERS=false`. A pinned worker cannot
//! follow the thread that wakes it, but keeps its caches; on the 2-vCPU VM of
//! `perf/RESULTS.md`, shared with ClickHouse and the clients, pinned workers took less CPU per
//! small request at 8,000 requests/s and the same at 1,000 (see there).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use monoio::net::TcpListener;
use socket2::{Domain, Protocol, Socket, Type};

use crate::ingest::Pipeline;
use crate::server::conn::{self, Worker};
use crate::server::drain::DrainSignal;
use crate::server::keywait::KeyWaits;
use crate::server::Shared;
use crate::sink::Handoff;

/// Binds `workers` listeners to one address with `SO_REUSEPORT`. With port 0 the first bind
/// picks the port and the others join it. Returns the listeners and the bound address.
pub fn bind(addr: SocketAddr, workers: usize) -> io::Result<(Vec<StdListener>, SocketAddr)> {
    let mut listeners = Vec::with_capacity(workers);
    let mut bound = addr;
    for _ in 0..workers {
        let socket = Socket::new(
            Domain::for_address(bound),
            Type::STREAM,
            Some(Protocol::TCP),
        )?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.set_nonblocking(true)?;
        socket.bind(&bound.into())?;
        socket.listen(4096)?;
        let std: StdListener = socket.into();
        bound = std.local_addr()?;
        listeners.push(std);
    }
    Ok((listeners, bound))
}

/// Which monoio driver a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    IoUring,
    Legacy,
}

impl Driver {
    pub fn detect(force_legacy: bool) -> Driver {
        if !force_legacy && monoio::utils::detect_uring() {
            Driver::IoUring
        } else {
            Driver::Legacy
        }
    }
}

/// The running workers: their threads, and the signal that starts their drain.
pub struct Workers {
    handles: Vec<JoinHandle<()>>,
    drain: Vec<oneshot::Sender<()>>,
}

impl Workers {
    /// Tells every worker to stop accepting and let its connections finish (the caller has set
    /// `Shared::draining`, which connections and `/ready` read).
    pub fn drain(&mut self) {
        for tx in self.drain.drain(..) {
            let _ = tx.send(());
        }
    }

    /// Waits for every worker thread to end.
    pub fn join(self) {
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// Starts one worker thread per listener. Each gets its own `Handoff` to the storage side.
pub fn spawn_workers(
    listeners: Vec<StdListener>,
    shared: Arc<Shared>,
    sender: Handoff,
) -> io::Result<Workers> {
    let driver = Driver::detect(shared.config.force_legacy_driver);
    let pin = shared.config.pin_workers;
    tracing::info!(
        ?driver,
        workers = listeners.len(),
        pinned = pin,
        "starting workers"
    );
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let mut workers = Workers {
        handles: Vec::with_capacity(listeners.len()),
        drain: Vec::with_capacity(listeners.len()),
    };
    for (i, listener) in listeners.into_iter().enumerate() {
        let shared = shared.clone();
        let sender = sender.clone();
        let core = (pin && !cores.is_empty()).then(|| cores[i % cores.len()]);
        let (drain_tx, drain) = oneshot::channel();
        let handle = std::thread::Builder::new()
            .name(format!("worker-{i}"))
            .spawn(move || {
                if let Some(core) = core {
                    core_affinity::set_for_current(core);
                }
                let run = worker_main(listener, shared, sender, drain);
                let result = match driver {
                    Driver::IoUring => monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                        .with_entries(1024)
                        .enable_timer()
                        .build()
                        .map(|mut rt| rt.block_on(run)),
                    Driver::Legacy => monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                        .enable_timer()
                        .build()
                        .map(|mut rt| rt.block_on(run)),
                };
                if let Err(e) = result {
                    tracing::error!(worker = i, error = %e, "worker runtime failed to start");
                }
            })?;
        workers.handles.push(handle);
        workers.drain.push(drain_tx);
    }
    Ok(workers)
}

async fn worker_main(
    listener: StdListener,
    shared: Arc<Shared>,
    sender: Handoff,
    drain: oneshot::Receiver<()>,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot register listener");
            return;
        }
    };
    let worker = Rc::new(Worker {
        pipeline: RefCell::new(Pipeline::new(shared.pipeline_parts(sender))),
        active: Cell::new(0),
        key_waits: KeyWaits::default(),
        drain: DrainSignal::default(),
        shared,
    });
    // An accept is never cancelled while serving (with io_uring a cancelled accept can lose a
    // connection the kernel already took); only the drain ends the loop: `Workers::drain`, or
    // its sender gone (the main thread is ending).
    let mut drain = std::pin::pin!(drain);
    loop {
        let accepted = monoio::select! {
            r = listener.accept() => r,
            _ = &mut drain => break,
        };
        match accepted {
            Ok((stream, _peer)) => match conn::ActiveGuard::admit(&worker) {
                Some(slot) => {
                    monoio::spawn(Contained(conn::serve(stream, slot)));
                }
                // Over the cap: close at once rather than queue unbounded work.
                None => drop(stream),
            },
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                // Out of descriptors and similar: back off instead of spinning.
                monoio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    drop(listener);
    // Idle connections wake and close; busy ones finish their request, within a third of the
    // shutdown timeout: the flush thread's insert time (another third) counts from when every
    // worker is done, and the spooling must end before the watchdog. A client that holds a
    // half-sent request past it is cut off unanswered (nothing of it was accepted) when the
    // runtime drops its task.
    worker.drain.fire();
    let deadline = Instant::now() + worker.shared.config.shutdown_timeout / 3;
    while worker.active.get() > 0 && Instant::now() < deadline {
        monoio::time::sleep(Duration::from_millis(10)).await;
    }
    if worker.active.get() > 0 {
        tracing::warn!(
            connections = worker.active.get(),
            "a third of the shutdown timeout passed with connections still open; closing them"
        );
        // Their reads are cancelled and they close; until they have, the runtime could not be
        // dropped (an io_uring read in flight keeps it), and the worker's sender with it.
        worker.drain.cut_off();
        let closing = Instant::now() + Duration::from_millis(500);
        while worker.active.get() > 0 && Instant::now() < closing {
            monoio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// A connection's task with its panics kept in: a panic ends that connection (logged, the
/// socket closed as the task's state is dropped), not the worker thread with every other
/// connection on it and its listener left open with nobody accepting. Nothing a request sends
/// should panic (the parsers are fuzzed); this is for the bug that was missed.
struct Contained<F>(F);

impl<F: Future<Output = ()>> Future for Contained<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `Contained` is pinned exactly when its one field is (structural pinning): the
        // field is never moved out or handed out unpinned, and `Contained` has no `Drop` and is
        // not `Unpin` unless `F` is.
        let inner = unsafe { self.map_unchecked_mut(|c| &mut c.0) };
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("(no message)");
                tracing::error!(panic = what, "a connection panicked; it is closed");
                Poll::Ready(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panicking connection ends alone: the worker's runtime, and the other tasks on it,
    /// go on.
    #[test]
    fn a_panicking_connection_leaves_the_worker_running() {
        let mut rt = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        let done = rt.block_on(async {
            let other = monoio::spawn(Contained(async {
                monoio::time::sleep(Duration::from_millis(20)).await;
            }));
            let bad = monoio::spawn(Contained(async {
                monoio::time::sleep(Duration::from_millis(5)).await;
                panic!("a bug in a request's handling");
            }));
            bad.await;
            other.await;
            true
        });
        assert!(done);
    }
}
