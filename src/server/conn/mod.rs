//! One client connection: owns its read buffer, frames requests, runs them, writes answers.
//!
//! Requests are handled strictly in order, so pipelined requests are answered in order: answers
//! accumulate in `out` and are written whenever the connection must wait for more input. A
//! request's body is read into `buf` and handed to the pipeline from there, with simd-json's
//! padding after it (`with_padded_body`), so the JSON front ends parse it where it lies.
//!
//! Every wait on the client has a deadline: the idle keep-alive timeout between requests, the
//! header timeout from the first byte of a head, the minimum body rate (and the idle timeout)
//! while a body arrives, and the idle timeout for the client to take an answer. An idle
//! connection keeps only a small read buffer. In write-ahead mode a request also awaits its
//! fsync (`Handed::settle`); that wait starts once the body is read, so no client deadline
//! applies to it, and the write-ahead thread answers every request it was handed.
//!
//! The input side (bodies, waiting for bytes, lingering, idle buffers) is in `input.rs`.

use std::cell::{Cell, RefCell};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::io::{CancelableAsyncWriteRentExt, Canceller};
use monoio::net::TcpStream;

use crate::admission;
use crate::admission::LimitHeaders;
use crate::auth::refresh::UNKNOWN_KEY_WAIT;
use crate::auth::{AuthError, Principal};
use crate::http::otlp::Format;
use crate::http::refusal::{otlp_refusal, refusal, ConnError, Refusal, Refused};
use crate::http::request::{self, Framing, Head, HttpError, MediaType, Method, Parsed, Route};
use crate::http::response::{self, ExtraHeaders, Outcome};
use crate::ingest::compress::Encoding;
use crate::ingest::{DecodeError, Exported, IngestError, OtlpFormat, Pipeline};
use crate::server::drain::DrainSignal;
use crate::server::keywait::KeyWaits;
use crate::server::{ops, Shared};
use crate::sink::Handed;

mod grpc;
mod input;

use grpc::Sniff;
use input::{rate_deadline, Read};

/// Read buffer of a new connection, and all an idle one keeps: most request heads fit, and
/// 2000 idle connections hold 4 MiB of buffers between them.
const SMALL_BUF: usize = 2 * 1024;
/// Least growth of a full read buffer (a head or chunked body larger than it).
const GROW_BUF: usize = 16 * 1024;
/// A buffer grown past this for a large body is given back once the request is done.
const KEEP_BUF: usize = 2 * 1024 * 1024;
/// Largest body read and dropped on a path that takes none (`/health`, `/ready`, unknown
/// paths) or with a method that takes none (`GET /ingest`); a larger one is refused before it
/// is read (`413`, or the `405` that closes the connection), so no client can make a worker
/// hold more than this for a request nobody wanted a body with.
const NO_BODY_MAX: u64 = 64 * 1024;
/// After an answer that closes the connection, how long input is still read and dropped.
const LINGER: Duration = Duration::from_secs(2);
/// After this long without a request, an idle connection gives back its large buffers (once
/// per idle spell; it then waits for its idle deadline or the drain, without a timer tick).
const IDLE_LOOK: Duration = Duration::from_millis(200);
/// The longest a request waits for the flush thread to make room in memory (`wait_for_room`);
/// the `Retry-After` of the `503 buffer_full` it gets after that.
const ROOM_WAIT: Duration = Duration::from_secs(1);

/// What one worker thread shares between its connections.
pub struct Worker {
    pub shared: Arc<Shared>,
    /// Decoder, arena and price cache; borrowed only inside the synchronous part of a request.
    pub pipeline: RefCell<Pipeline>,
    /// Open connections on this worker, for the connection cap and the shutdown wait.
    pub active: Cell<usize>,
    /// Connections waiting for an early key-set load (an unknown key may be a new one).
    pub key_waits: KeyWaits,
    /// Fired when the drain starts: wakes the idle connections, which then close.
    pub drain: DrainSignal,
}

/// One of the worker's `INGEST_MAX_CONNECTIONS_PER_WORKER` connection slots: taken in the accept
/// loop (so a burst of accepts cannot overshoot the cap before any connection task has run),
/// given back however the connection ends.
pub struct ActiveGuard(Rc<Worker>);

impl ActiveGuard {
    /// Takes a slot, or `None` when the worker is at its cap.
    pub fn admit(worker: &Rc<Worker>) -> Option<ActiveGuard> {
        let active = worker.active.get();
        if active >= worker.shared.config.max_connections_per_worker {
            return None;
        }
        worker.active.set(active + 1);
        Some(ActiveGuard(worker.clone()))
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
    }
}

/// Why the connection loop stops.
enum Stop {
    /// Peer closed, timed out, failed, or we decided to close.
    Close,
    /// The connection opened with HTTP/2's preface: gRPC (`grpc.rs`) takes it over.
    Http2,
}

struct Conn {
    stream: TcpStream,
    /// The worker, for its drain signal.
    worker: Rc<Worker>,
    /// Bytes read and not yet consumed start at `start`.
    buf: Vec<u8>,
    start: usize,
    /// Answers not yet written.
    out: Vec<u8>,
    /// Longest wait for the client to take a write (the idle timeout).
    write_timeout: Duration,
    /// An answer that closes the connection was written: linger before closing.
    closing: bool,
    /// Cancels a read or write whose deadline passed. One per connection, reused: a fresh
    /// `Canceller` per operation cost two allocations per request (its shared state and the
    /// first insert into its set); after a cancel, `Canceller::cancel` hands back a new one that
    /// keeps the set's memory.
    canceller: Canceller,
}

/// Serves one connection until it closes; `slot` is its place under the worker's cap.
pub async fn serve(stream: TcpStream, slot: ActiveGuard) {
    let worker = slot.0.clone();
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        worker: worker.clone(),
        buf: Vec::with_capacity(SMALL_BUF),
        start: 0,
        out: Vec::new(),
        write_timeout: worker.shared.config.idle_timeout,
        closing: false,
        canceller: Canceller::new(),
    };
    if let Err(Stop::Http2) = conn.run(&worker).await {
        let Conn { stream, buf, .. } = conn;
        grpc::serve(stream, buf, worker).await;
        return;
    }
    let flushed = conn.out.is_empty() || conn.flush().await.is_ok();
    if flushed && conn.closing {
        conn.linger(&worker.shared).await;
    }
}

impl Conn {
    async fn run(&mut self, worker: &Worker) -> Result<(), Stop> {
        let shared = &*worker.shared;
        let limits = shared.config.limits;
        let mut first = true;
        loop {
            // 1. A complete head, within the header timeout of its first byte. The first bytes
            // of a connection may instead be HTTP/2's preface (gRPC).
            let mut head_started: Option<Instant> = None;
            let head = loop {
                let sniffed = if first {
                    grpc::sniff(&self.buf[self.start..])
                } else {
                    Sniff::Http1
                };
                let parsed = match sniffed {
                    Sniff::Http2 => return Err(Stop::Http2),
                    Sniff::Undecided => Ok(Parsed::Partial),
                    Sniff::Http1 => request::parse_head(&self.buf[self.start..], &limits),
                };
                match parsed {
                    Ok(Parsed::Complete(h)) => break h,
                    Ok(Parsed::Partial) => {
                        let idle = self.start == self.buf.len();
                        let deadline = if idle {
                            Instant::now() + shared.config.idle_timeout
                        } else {
                            // Bytes of this head arrived with the last read (or were left over
                            // from the one before): the clock starts at the first of them.
                            *head_started.get_or_insert_with(Instant::now)
                                + shared.config.header_timeout
                        };
                        match self.read_more(shared, deadline, idle).await {
                            Read::Data => {}
                            Read::Closed => return Err(Stop::Close),
                            // Idle past the keep-alive timeout: no request to answer.
                            Read::TimedOut if idle => return Err(Stop::Close),
                            Read::TimedOut => {
                                let r = refusal(ConnError::HeadTimeout);
                                self.answer(shared, &Outcome::Refused(r), false, false);
                                return Err(Stop::Close);
                            }
                        }
                    }
                    Err(error) => {
                        let r = refusal(ConnError::Http {
                            error,
                            max_body: limits.max_body_bytes,
                        });
                        self.answer(shared, &Outcome::Refused(r), false, false);
                        return Err(Stop::Close);
                    }
                }
            };
            first = false;
            let keep_alive = self.handle(worker, &head).await?;
            if !keep_alive {
                return Err(Stop::Close);
            }
            if self.start == self.buf.len() {
                self.start = 0;
                self.buf.clear();
                if self.buf.capacity() > KEEP_BUF {
                    self.buf = Vec::with_capacity(SMALL_BUF);
                }
            }
            if self.out.len() > 64 * 1024 {
                self.flush().await?;
            }
        }
    }

    /// Runs one request whose head is parsed; consumes its body. Returns keep-alive.
    async fn handle(&mut self, worker: &Worker, head: &Head) -> Result<bool, Stop> {
        let shared = &*worker.shared;
        let head_only = head.method == Method::Head;

        let otlp = match head.route {
            Route::Ingest => false,
            Route::OtlpTraces => true,
            _ => {
                // Other routes take no body: read and drop a small one if sent; a larger one
                // is refused (413) and the connection closed.
                let Some(keep_alive) = self.skip_body(shared, head, NO_BODY_MAX).await? else {
                    return Ok(false);
                };
                let outcome = match (head.route, head.method) {
                    // Only on the admin listener (`admin.rs`): it names organisations and
                    // shows traffic figures, which the internet-facing port must not.
                    (Route::Metrics, _) => Outcome::Refused(refusal(ConnError::NotFound)),
                    // A wrong method on a known path; any method on an unknown one is 404.
                    (Route::Health | Route::Ready, Method::Post | Method::Other) => {
                        Outcome::Refused(refusal(ConnError::MethodNotAllowed {
                            allow: "GET, HEAD",
                            path: "this path",
                        }))
                    }
                    (Route::Health, _) => ops::health(shared),
                    (Route::Ready, _) => ops::ready(shared),
                    _ => Outcome::Refused(refusal(ConnError::NotFound)),
                };
                return Ok(self.answer(shared, &outcome, keep_alive, head_only));
            }
        };
        // `/v1/traces` answers in the request's format (JSON unless it is protobuf), refusals
        // as `google.rpc.Status`; a used-up quota is 403 there (exporters retry 429).
        let mut extra = ExtraHeaders {
            limits: LimitHeaders::default(),
            otlp: otlp.then_some(match head.content_type {
                MediaType::Protobuf => Format::Protobuf,
                _ => Format::Json,
            }),
        };
        let refuse = |why: Refused| {
            if otlp {
                otlp_refusal(why)
            } else {
                refusal(why)
            }
        };
        let max_body = if otlp {
            shared.config.otlp_max_body_bytes
        } else {
            shared.config.limits.max_body_bytes
        };
        if head.method != Method::Post {
            // A wrong method takes no body, whoever sends it (no key is checked first): a small
            // one is read and dropped, as on the routes that take none; a larger or chunked one
            // (whose size is unknown) is not read at all, and the 405 closes the connection.
            let keep_alive = if matches!(head.framing, Framing::Chunked)
                || matches!(head.framing, Framing::Length(n) if n > NO_BODY_MAX)
            {
                false
            } else {
                match self.skip_body(shared, head, NO_BODY_MAX).await? {
                    Some(keep_alive) => keep_alive,
                    None => return Ok(false),
                }
            };
            let r = refuse(Refused::Conn(ConnError::MethodNotAllowed {
                allow: "POST",
                path: if otlp { "/v1/traces" } else { "/ingest" },
            }));
            let outcome = Outcome::Refused(r);
            return Ok(self.answer_full(shared, &outcome, keep_alive, head_only, extra, None));
        }

        // 1. Size, from Content-Length, before reading anything.
        if let Framing::Length(n) = head.framing {
            if n > max_body {
                let r = refuse(Refused::Conn(ConnError::Http {
                    error: HttpError::BodyTooLarge,
                    max_body,
                }));
                self.answer_full(shared, &Outcome::Refused(r), false, false, extra, None);
                return Ok(false);
            }
        }
        // 2. Draining.
        if shared.is_draining() {
            let r = refuse(Refused::Conn(ConnError::Draining));
            self.answer_full(shared, &Outcome::Refused(r), false, false, extra, None);
            return Ok(false);
        }
        // 3. The key. One the key set does not know may have been created since the last
        // refresh: ask the control thread for an early one, wait for it (coalesced with every
        // other asker, at most `UNKNOWN_KEY_WAIT`), and look again.
        let keys_at = shared.keys.generation();
        let principal = match self.authenticate(shared, head) {
            Err(AuthError::Unknown) => {
                wait_for_new_key(worker).await;
                self.authenticate(shared, head)
            }
            known => known,
        };
        let principal = match principal {
            Ok(p) => p,
            Err(e) => {
                let r = refuse(Refused::Auth(e));
                // Keep the connection only if the whole body is already here to skip.
                let keep = match head.framing {
                    Framing::None => {
                        self.consume(head.len);
                        head.keep_alive
                    }
                    Framing::Length(n) if !head.expect_continue => {
                        let have = self.buf.len() - self.start - head.len;
                        if have as u64 >= n {
                            self.consume(head.len + n as usize);
                            head.keep_alive
                        } else {
                            false
                        }
                    }
                    _ => false,
                };
                return Ok(self.answer_full(
                    shared,
                    &Outcome::Refused(r),
                    keep,
                    false,
                    extra,
                    None,
                ));
            }
        };
        // Past authentication every answer reports the key's rate-limit state.
        extra.limits = admission::peek(&principal, shared.clock.mono_ns(), shared.clock.now_ms());
        // The checks that need no body passed: let a waiting client send it. A body its
        // coding or media type already refuses (the `415`s of step 4) is not asked for: the
        // final status now, and the connection closed, since the client holds the body back.
        if head.expect_continue && self.buf.len() - self.start == head.len {
            if let Err(why) = body_coding(head, otlp) {
                let org = Some(&*principal.org_id);
                self.answer_full(
                    shared,
                    &Outcome::Refused(refuse(why)),
                    false,
                    false,
                    extra,
                    org,
                );
                return Ok(false);
            }
            response::write_continue(&mut self.out);
            self.flush().await?;
        }
        let body = self.read_body(shared, head, max_body).await?;
        if let Some(refusal) = body.refused {
            let org = Some(&*principal.org_id);
            self.answer_full(shared, &Outcome::Refused(refusal), false, false, extra, org);
            return Ok(false);
        }
        shared
            .metrics
            .body_bytes
            .fetch_add(body.len as u64, Ordering::Relaxed);
        let nudge = || worker.pipeline.borrow().handoff().nudge_flush();
        if wait_for_room(shared, nudge).await {
            shared.metrics.room_waits.fetch_add(1, Ordering::Relaxed);
        }
        // The key again, now that the body is in, if the key set changed since: one revoked
        // while it came (a slow client's takes minutes, hours at the least rate) must not put
        // its batch in. A key known at the head and unknown now was revoked: no early load is
        // asked for.
        let principal = match self.recheck(shared, head, keys_at, principal) {
            Ok(p) => p,
            Err(e) => {
                self.consume(head.len + body.raw);
                extra.limits = LimitHeaders::default();
                let outcome = Outcome::Refused(refuse(Refused::Auth(e)));
                return Ok(self.answer_full(shared, &outcome, head.keep_alive, false, extra, None));
            }
        };
        let body_start = self.start + head.len;
        // 4 on: the body's coding and format, decoding, the schema, admission, the hand-off.
        let outcome = match body_coding(head, otlp) {
            Err(why) => Err(refuse(why)),
            Ok(encoding) if !otlp => {
                let result = self.with_padded_body(body_start, body.len, |bytes| {
                    worker.pipeline.borrow_mut().ingest_v1(
                        &principal,
                        bytes,
                        encoding,
                        max_body as usize,
                        &mut extra.limits,
                    )
                });
                // In write-ahead mode this waits (without blocking the worker) for the fsync.
                match result {
                    Ok(handed) => match handed.settle().await {
                        Ok(spans) => Ok(Outcome::Accepted { spans }),
                        Err(e) => {
                            extra.limits = refunded_limits(shared, &principal);
                            Err(refuse(Refused::Ingest(IngestError::from(e))))
                        }
                    },
                    Err(e) => Err(refuse(Refused::Ingest(e))),
                }
            }
            Ok(encoding) => {
                let format = match head.content_type {
                    MediaType::Protobuf => OtlpFormat::Protobuf,
                    _ => OtlpFormat::Json,
                };
                let result = self.with_padded_body(body_start, body.len, |bytes| {
                    worker.pipeline.borrow_mut().ingest_otlp(
                        &principal,
                        bytes,
                        format,
                        encoding,
                        max_body as usize,
                        &mut extra.limits,
                    )
                });
                finish_export(shared, &principal, result, &mut extra.limits)
                    .await
                    .map(|partial| Outcome::Exported {
                        format: extra.otlp.unwrap_or(Format::Json),
                        partial,
                    })
            }
        };
        self.consume(head.len + body.raw);
        let outcome = match outcome {
            Ok(o) => {
                let spans = match &o {
                    Outcome::Accepted { spans } => *spans as u64,
                    _ => 0,
                };
                if spans > 0 {
                    shared
                        .metrics
                        .spans_accepted
                        .fetch_add(spans, Ordering::Relaxed);
                }
                shared
                    .metrics
                    .batches_accepted
                    .fetch_add(1, Ordering::Relaxed);
                o
            }
            Err(r) => Outcome::Refused(r),
        };
        Ok(self.answer_full(
            shared,
            &outcome,
            head.keep_alive,
            false,
            extra,
            Some(&principal.org_id),
        ))
    }

    /// Looks up the request's key in the key set in force.
    fn authenticate(&self, shared: &Shared, head: &Head) -> Result<Arc<Principal>, AuthError> {
        let h = &self.buf[self.start..];
        let authorization = head.authorization.clone().map(|r| &h[r]);
        let x_api_key = head.x_api_key.clone().map(|r| &h[r]);
        shared.keys.authenticate(authorization, x_api_key)
    }

    /// The head's `principal`, or the key looked up again if the key set was replaced since
    /// `keys_at`.
    fn recheck(
        &self,
        shared: &Shared,
        head: &Head,
        keys_at: u64,
        principal: Arc<Principal>,
    ) -> Result<Arc<Principal>, AuthError> {
        if shared.keys.generation() == keys_at {
            return Ok(principal);
        }
        self.authenticate(shared, head)
    }

    fn answer(
        &mut self,
        shared: &Shared,
        outcome: &Outcome,
        keep_alive: bool,
        head_only: bool,
    ) -> bool {
        let extra = ExtraHeaders::default();
        self.answer_full(shared, outcome, keep_alive, head_only, extra, None)
    }

    /// Writes an answer, counts it, and logs a refusal (status, code and the organisation when
    /// the key is known; never the key or the body).
    fn answer_full(
        &mut self,
        shared: &Shared,
        outcome: &Outcome,
        keep_alive: bool,
        head_only: bool,
        extra: ExtraHeaders,
        org: Option<&str>,
    ) -> bool {
        let (status, code) = match outcome {
            Outcome::Accepted { .. } => (202, "accepted"),
            Outcome::Exported { .. } => (200, "exported"),
            Outcome::Ok { .. } => (200, "ok"),
            Outcome::Refused(r) => {
                tracing::debug!(
                    status = r.status,
                    code = r.code,
                    org = org.unwrap_or(""),
                    "refused request"
                );
                (r.status, r.code)
            }
        };
        shared.metrics.count_response(status, code);
        let open = response::write(&mut self.out, outcome, keep_alive, head_only, &extra);
        self.closing |= !open;
        open
    }

    /// Writes every pending answer. A client that does not take them within the write timeout
    /// is dropped, so a reader that never reads cannot hold the connection forever.
    async fn flush(&mut self) -> Result<(), Stop> {
        // Most answers fit in the socket's send buffer: one plain non-blocking `send(2)` takes
        // them at once, without an io_uring operation, its deadline timer and a wake-up of this
        // task. Whatever the socket cannot take now goes the normal way, with the deadline. It
        // is tried even past the drain's cut-off, which it cannot hold up: an answer to a batch
        // already handed over (one finished as the cut-off came) gets out, so its client does
        // not send it again.
        match send_now(&self.stream, &self.out) {
            Ok(n) => {
                self.out.drain(..n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                tracing::debug!(error = %e, "write failed");
                return Err(Stop::Close);
            }
        }
        if self.worker.drain.is_cut_off() {
            return Err(Stop::Close);
        }
        if self.out.is_empty() {
            return Ok(());
        }
        let out = std::mem::take(&mut self.out);
        let timeout = self.write_timeout;
        let worker = self.worker.clone();
        // A cancelled write ends (with its buffer) before the connection is closed, so no
        // operation outlives the socket. The drain's cut-off ends it too: a client that does
        // not read must not keep the worker, and its sender to the flush thread, past the
        // shutdown's third (the watchdog would end the process before the spooling).
        let mut write = std::pin::pin!(CancelableAsyncWriteRentExt::write_all(
            &mut self.stream,
            out,
            self.canceller.handle()
        ));
        let (res, mut out) = monoio::select! {
            r = &mut write => r,
            _ = monoio::time::sleep(timeout) => {
                self.canceller = std::mem::take(&mut self.canceller).cancel();
                write.await
            }
            _ = worker.drain.wait(false) => {
                self.canceller = std::mem::take(&mut self.canceller).cancel();
                write.await
            }
        };
        if worker.drain.is_cut_off() {
            return Err(Stop::Close);
        }
        out.clear();
        self.out = out;
        res.map(|_| ()).map_err(|_| Stop::Close)
    }
}

/// Settles an OTLP export the pipeline took (in write-ahead mode, waits for its fsync) and
/// counts it. Ok holds what `partial_success` reports (spans left out, and why); a refusal
/// leaves the key's limits after its refund in `limits`. Shared by OTLP/HTTP and gRPC.
async fn finish_export(
    shared: &Shared,
    principal: &Principal,
    result: Result<(Option<Handed>, Exported), IngestError>,
    limits: &mut LimitHeaders,
) -> Result<Option<(u64, String)>, Refusal> {
    let (handed, exported) = result.map_err(|e| otlp_refusal(Refused::Ingest(e)))?;
    let settled = match handed {
        Some(h) => h.settle().await.map(|_| ()),
        None => Ok(()),
    };
    match settled {
        Ok(()) => {
            shared.metrics.count_export(&exported);
            Ok(exported.message.map(|m| (exported.rejected, m)))
        }
        Err(e) => {
            *limits = refunded_limits(shared, principal);
            Err(otlp_refusal(Refused::Ingest(IngestError::from(e))))
        }
    }
}

/// What the head alone says of a body on `/ingest` or `/v1/traces`: the coding to decode it
/// with, or its refusal, a `Content-Encoding` not decoded or an OTLP export's `Content-Type`
/// neither protobuf nor JSON (step 4 in `handle`; also before a body the client holds back
/// for `Expect: 100-continue` is asked for).
fn body_coding(head: &Head, otlp: bool) -> Result<Encoding, Refused> {
    match (head.content_encoding, head.content_type) {
        (Err(e), _) => Err(Refused::Ingest(IngestError::Decode(DecodeError::Encoding(
            e,
        )))),
        (Ok(_), MediaType::Absent | MediaType::Other) if otlp => {
            Err(Refused::Conn(ConnError::UnsupportedMediaType))
        }
        (Ok(encoding), _) => Ok(encoding),
    }
}

/// Waits (at most `UNKNOWN_KEY_WAIT`) for an early key-set load, asked for by a request with a
/// key the set in force does not know: it may have been created since the last refresh. Every
/// asker on every worker shares the one load.
async fn wait_for_new_key(worker: &Worker) {
    let target = worker.shared.keys.demand.ask();
    let deadline = Instant::now() + UNKNOWN_KEY_WAIT;
    worker
        .key_waits
        .until_loaded(&worker.shared, target, deadline)
        .await;
}

/// The key's limits after a refusal in the write-ahead log gave back what the admission took
/// (the rate-limit credit here, the quota in the write-ahead thread before it answered): the
/// answer reports those, not the state the refused batch left for a moment.
fn refunded_limits(shared: &Shared, principal: &Principal) -> LimitHeaders {
    admission::peek(principal, shared.clock.mono_ns(), shared.clock.now_ms())
}

/// One non-blocking `send(2)` of `bytes` (retried only if a signal interrupts it): how many
/// the socket took, or `WouldBlock` if none.
fn send_now(stream: &TcpStream, bytes: &[u8]) -> std::io::Result<usize> {
    let fd = stream.as_raw_fd();
    loop {
        // SAFETY: `fd` is the open socket `stream` owns for the whole call, and `bytes` is a
        // valid slice of `bytes.len()` readable bytes. `MSG_NOSIGNAL`: a closed peer gives
        // `EPIPE`, not a SIGPIPE.
        let n = unsafe {
            libc::send(
                fd,
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Waits, at most `ROOM_WAIT`, while memory has no room for another batch as large as the
/// largest yet and the spool still has room. The flush thread keeps memory under half its
/// bound by spooling, so memory gets there only when that thread is behind, on a busy
/// machine, and is about to make room (`MemoryBudget::behind`): refusing then would answer
/// `503 buffer_full` with the spool not full. Only decides whether to wait: the hand-off's
/// reservation is what refuses. It looks again after 1 ms, then 2, 4, 8 and every 16 ms: many
/// connections waiting at once cost their worker little. Returns whether it waited.
async fn wait_for_room(shared: &Shared, nudge: impl FnOnce()) -> bool {
    if !shared.budget.behind() {
        return false;
    }
    // The flush thread may be asleep with nothing arriving to wake it (a refused batch shrank
    // the room): `nudge` (`Handoff::nudge_flush`) makes it spool at once rather than at its
    // next due time.
    nudge();
    let deadline = Instant::now() + ROOM_WAIT;
    let mut step = Duration::from_millis(1);
    while shared.budget.behind()
        && !shared.is_buffer_full()
        && !shared.is_draining()
        && Instant::now() < deadline
    {
        monoio::time::sleep(step).await;
        step = (step * 2).min(Duration::from_millis(16));
    }
    true
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[path = "auth_tests.rs"]
mod auth_tests;
