//! Worker threads: one monoio runtime per core, each with its own `SO_REUSEPORT` listener.
//!
//! The kernel spreads new connections over the listeners; a connection stays on the worker that
//! accepted it. io_uring is used where the kernel allows it, else the legacy epoll driver, and
//! the log says which. On drain (`Workers::drain`, a oneshot per worker, so an idle worker has
//! no timer to poll a flag with) a worker shuts its listener (`shutdown(2)`: its accept in flight
//! ends, connections queued on it are reset, new ones go to the workers still listening or are
//! refused), lets its connections finish (they see the drain flag), and drops its sender, which
//! is how the flush thread learns intake is over.
//!
//! Worker N is pinned to core N unless `INGEST_PIN_WORKERS=false`. A pinned worker cannot
//! follow the thread that wakes it, but keeps its caches; on the 2-vCPU VM of
//! `perf/RESULTS.md`, shared with ClickHouse and the clients, pinned workers took less CPU per
//! small request at 8,000 requests/s and the same at 1,000 (see there).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::os::fd::AsRawFd;
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

/// How long a worker waits, once it has shut its listener, for the accept it has in flight to
/// end. It ends at once (the shutdown wakes it); this bounds the drain should a kernel not.
const ACCEPT_END_WAIT: Duration = Duration::from_millis(500);

/// `shutdown(2)` of a listening socket, both ways: Linux then fails its pending and later
/// accepts (`EINVAL`), resets the connections in its queue and takes it out of its
/// `SO_REUSEPORT` group, though the descriptor stays open. On both drivers this reaches an
/// accept in flight, which dropping its future or closing the descriptor does not with io_uring.
fn shut_listener(listener: &TcpListener) -> io::Result<()> {
    // SAFETY: shutdown(2) on the listener's own descriptor, open while `listener` is borrowed;
    // it touches no memory.
    if unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
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
    // An accept in flight is never dropped: with io_uring, monoio (built without its
    // `async-cancel` feature) cancels nothing when an operation's future is dropped; the
    // accept stays in the kernel and monoio keeps the listener's descriptor open for it, so
    // the socket goes on listening, and when the accept takes a connection its descriptor is
    // thrown away unclosed and that client waits unanswered until the process exits (with
    // `async-cancel` the cancel would race the accept, and a result for a dropped operation is
    // thrown away all the same). So the drain (`Workers::drain`, or its sender gone: the main
    // thread is ending) shuts the listening socket instead, which ends the accept in flight
    // with an error (or with a connection it took just before, served like any other), resets
    // the connections queued on it and takes it out of the `SO_REUSEPORT` group, so new
    // connections go to the workers still listening, or are refused once none is.
    let mut drain = std::pin::pin!(drain);
    // Set when the listener is shut: how long the accept in flight may still take to end.
    let mut shut: Option<Pin<Box<monoio::time::Sleep>>> = None;
    loop {
        let mut accept = std::pin::pin!(listener.accept());
        let accepted = std::future::poll_fn(|cx| {
            if shut.is_none() && drain.as_mut().poll(cx).is_ready() {
                if let Err(e) = shut_listener(&listener) {
                    tracing::warn!(error = %e, "cannot shut the listener; leaving its accept");
                    return Poll::Ready(None);
                }
                shut = Some(Box::pin(monoio::time::sleep(ACCEPT_END_WAIT)));
            }
            if let Poll::Ready(r) = accept.as_mut().poll(cx) {
                return Poll::Ready(Some(r));
            }
            let gave_up = shut
                .as_mut()
                .is_some_and(|limit| limit.as_mut().poll(cx).is_ready());
            if gave_up {
                tracing::warn!("the accept did not end when its listener was shut; leaving it");
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await;
        let Some(accepted) = accepted else { break };
        match accepted {
            // Also one the accept took as the drain began: still idle, it sees the drain and
            // closes at once.
            Ok((stream, _peer)) => match conn::ActiveGuard::admit(&worker) {
                Some(slot) => {
                    monoio::spawn(Contained(conn::serve(stream, slot)));
                }
                // Over the cap: close at once rather than queue unbounded work.
                None => drop(stream),
            },
            // The listener is shut: the accept ends with `EINVAL`.
            Err(_) if shut.is_some() => break,
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
    // A task still pending now (a request waiting for an fsync that did not come, a gRPC
    // export whose client left, which no connection counts) is never dropped: monoio's
    // runtime leaves its pending tasks when it ends, and each holds the worker. The sender
    // goes now, so the flush thread (or the write-ahead thread) learns intake is over when
    // every worker's thread has ended, whatever they left.
    worker.pipeline.borrow_mut().close_handoff();
}

/// A connection's task with its panics kept in: a panic ends that connection (logged, the
/// socket closed as the task's state is dropped), not the worker thread with every other
/// connection on it and its listener left open with nobody accepting. Nothing a request sends
/// should panic (the parsers are fuzzed); this is for the bug that was missed.
pub(crate) struct Contained<F>(pub(crate) F);

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

    /// What the drain relies on, on both drivers: shutting a listener ends the accept it has in
    /// flight at once, with an error, and new connections are refused.
    #[test]
    fn shutting_a_listener_ends_its_accept_in_flight() {
        async fn check() {
            let (mut listeners, addr) = bind("127.0.0.1:0".parse().unwrap(), 1).unwrap();
            let listener = TcpListener::from_std(listeners.pop().unwrap()).unwrap();
            let mut accept = std::pin::pin!(listener.accept());
            monoio::select! {
                _ = &mut accept => panic!("nothing connected"),
                // The runtime has parked: the accept is in the kernel (io_uring) or waits for
                // readiness (legacy).
                _ = monoio::time::sleep(Duration::from_millis(20)) => {}
            }
            shut_listener(&listener).unwrap();
            let ended = monoio::time::timeout(Duration::from_secs(1), accept).await;
            assert!(matches!(ended, Ok(Err(_))), "{ended:?}");
            assert!(std::net::TcpStream::connect(addr).is_err(), "refused");
        }
        if monoio::utils::detect_uring() {
            monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                .enable_timer()
                .build()
                .unwrap()
                .block_on(check());
        }
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap()
            .block_on(check());
    }

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

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod stop_tests;
