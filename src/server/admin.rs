//! The admin listener (`INGEST_ADMIN_ADDR`): `/metrics`, `/health` and `/ready` on an address
//! of their own, off the public port.
//!
//! In hosted use the ingest port faces the internet, and `/metrics` names every organisation
//! that hit its quota and shows the traffic figures, so it is served only here (the public port
//! answers it `404`). `/health` and `/ready` are served on both: load balancers probe the public
//! port, Prometheus and orchestrators may use this one.
//!
//! One thread of its own with a small monoio runtime (epoll), so nothing here touches the
//! workers: a scrape is answered from the same atomics `/metrics` always read. The HTTP is the
//! workers' own parser and answer writer, kept simple: requests in order on a connection, no
//! bodies (a request with one is answered and the connection closed), a deadline on every read
//! and write, and at most `MAX_CONNECTIONS` open at once. Its answers are not counted in
//! `traceingest_responses_total`, which counts the public port's traffic.

use std::cell::Cell;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};

use crate::http::refusal::{refusal, ConnError};
use crate::http::request::{self, Framing, Method, Parsed, Route};
use crate::http::response::{self, ExtraHeaders, Outcome};
use crate::server::{ops, Shared};

/// Open admin connections at most; more are closed at once (scrapers and probes need few).
const MAX_CONNECTIONS: usize = 64;
/// The largest request head the admin listener reads.
const MAX_HEAD: usize = 8 * 1024;

/// Binds the admin listener. Port 0 picks a free port; the bound address is returned.
pub fn bind(addr: SocketAddr) -> io::Result<(StdListener, SocketAddr)> {
    let listener = StdListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// Starts the admin thread. It serves until the process exits (during a drain `/ready`
/// answers `503 not_ready`, which is what orchestrators should see).
pub fn spawn(listener: StdListener, shared: Arc<Shared>) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("admin".into())
        .spawn(move || {
            let runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build();
            match runtime {
                Ok(mut rt) => rt.block_on(accept_loop(listener, shared)),
                Err(e) => tracing::error!(error = %e, "admin listener runtime failed to start"),
            }
        })
}

async fn accept_loop(listener: StdListener, shared: Arc<Shared>) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot register the admin listener");
            return;
        }
    };
    let open = Rc::new(Cell::new(0usize));
    loop {
        match listener.accept().await {
            Ok((stream, _)) if open.get() < MAX_CONNECTIONS => {
                open.set(open.get() + 1);
                let (open, shared) = (open.clone(), shared.clone());
                monoio::spawn(async move {
                    serve(stream, &shared).await;
                    open.set(open.get() - 1);
                });
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "admin accept failed");
                monoio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Answers the requests of one connection in order until it closes, breaks a rule or idles
/// past the idle timeout.
async fn serve(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    let config = &shared.config;
    let limits = request::Limits {
        max_head_bytes: MAX_HEAD,
        ..config.limits
    };
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut out = Vec::with_capacity(4096);
    loop {
        // A whole head: within the idle timeout of the last answer, then within the header
        // timeout of its first byte.
        let mut deadline = Instant::now() + config.idle_timeout;
        let mut started = false;
        let (head, keep_alive) = loop {
            match request::parse_head(&buf, &limits) {
                Ok(Parsed::Complete(head)) => {
                    // No admin path takes a body: answer, then close rather than read it.
                    let bodiless = matches!(head.framing, Framing::None | Framing::Length(0));
                    let keep_alive = head.keep_alive && bodiless;
                    break (head, keep_alive);
                }
                Ok(Parsed::Partial) => {}
                Err(error) => {
                    let r = refusal(ConnError::Http { error, max_body: 0 });
                    out.clear();
                    let extra = ExtraHeaders::default();
                    response::write(&mut out, &Outcome::Refused(r), false, false, &extra);
                    let _ = write(&mut stream, &mut out, config.idle_timeout).await;
                    return;
                }
            }
            if !buf.is_empty() && !started {
                started = true;
                deadline = Instant::now() + config.header_timeout;
            }
            let Some(wait) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            buf.reserve(1024);
            // After what is already there: a head may come in several reads.
            let len = buf.len();
            let spare = std::mem::take(&mut buf).slice_mut(len..);
            let (res, back) = match monoio::time::timeout(wait, stream.read(spare)).await {
                Ok(r) => r,
                Err(_) => return,
            };
            buf = back.into_inner();
            match res {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let head_only = head.method == Method::Head;
        let outcome = match (head.route, head.method) {
            (Route::Health | Route::Ready | Route::Metrics, Method::Post | Method::Other) => {
                Outcome::Refused(refusal(ConnError::MethodNotAllowed {
                    allow: "GET, HEAD",
                    path: "this path",
                }))
            }
            (Route::Health, _) => ops::health(shared),
            (Route::Ready, _) => ops::ready(shared),
            (Route::Metrics, _) => ops::metrics(shared),
            _ => Outcome::Refused(refusal(ConnError::NotFound)),
        };
        out.clear();
        let open = response::write(
            &mut out,
            &outcome,
            keep_alive,
            head_only,
            &ExtraHeaders::default(),
        );
        if write(&mut stream, &mut out, config.idle_timeout)
            .await
            .is_err()
            || !open
        {
            return;
        }
        buf.drain(..head.len);
    }
}

/// Writes `out` whole within `timeout`.
async fn write(stream: &mut TcpStream, out: &mut Vec<u8>, timeout: Duration) -> io::Result<()> {
    let bytes = std::mem::take(out);
    match monoio::time::timeout(timeout, stream.write_all(bytes)).await {
        Ok((res, back)) => {
            *out = back;
            res.map(|_| ())
        }
        Err(_) => Err(io::Error::from(io::ErrorKind::TimedOut)),
    }
}
