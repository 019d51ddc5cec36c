//! One client connection: owns its read buffer, frames requests, runs them, writes answers.
//!
//! Requests are handled strictly in order, so pipelined requests are answered in order: answers
//! accumulate in `out` and are written whenever the connection must wait for more input. The
//! body of a request is parsed in place in `buf`; it is the only copy until rows are built.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::buf::IoBufMut;
use monoio::io::{AsyncWriteRentExt, CancelableAsyncReadRent, Canceller};
use monoio::net::TcpStream;

use crate::admission;
use crate::auth::AuthError;
use crate::http::request::{self, ChunkedDecoder, Framing, Head, Method, Parsed, Route};
use crate::http::response::{self, ExtraHeaders, Outcome, Refusal};
use crate::ingest::Pipeline;
use crate::server::{ops, Shared};

/// Start size of a connection's read buffer.
const INITIAL_BUF: usize = 16 * 1024;
/// A buffer grown past this for a large body is given back once the request is done.
const KEEP_BUF: usize = 2 * 1024 * 1024;
/// How often a connection blocked on a read looks at the drain flag.
const DRAIN_POLL: Duration = Duration::from_millis(200);

/// What one worker thread shares between its connections.
pub struct Worker {
    pub shared: Arc<Shared>,
    /// Decoder, arena and price cache; borrowed only inside the synchronous part of a request.
    pub pipeline: RefCell<Pipeline>,
    /// Open connections on this worker, for the connection cap and the shutdown wait.
    pub active: Cell<usize>,
}

/// Decrements the worker's connection count however the connection ends.
struct ActiveGuard(Rc<Worker>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
    }
}

/// Why the connection loop stops.
enum Stop {
    /// Peer closed, timed out, failed, or we decided to close.
    Close,
}

struct Conn {
    stream: TcpStream,
    /// Bytes read and not yet consumed start at `start`.
    buf: Vec<u8>,
    start: usize,
    /// Answers not yet written.
    out: Vec<u8>,
}

/// Serves one connection until it closes.
pub async fn serve(stream: TcpStream, worker: Rc<Worker>) {
    worker.active.set(worker.active.get() + 1);
    let _guard = ActiveGuard(worker.clone());
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        buf: Vec::with_capacity(INITIAL_BUF),
        start: 0,
        out: Vec::with_capacity(1024),
    };
    let _ = conn.run(&worker).await;
    if !conn.out.is_empty() {
        let _ = conn.flush().await;
    }
}

/// Result of waiting for more bytes.
enum Read {
    Data,
    /// Peer closed, error, timeout or drain: close without answering.
    Closed,
}

impl Conn {
    async fn run(&mut self, worker: &Worker) -> Result<(), Stop> {
        let shared = &*worker.shared;
        let limits = shared.config.limits;
        loop {
            // 1. A complete head.
            let head_started = Instant::now();
            let head = loop {
                match request::parse_head(&self.buf[self.start..], &limits) {
                    Ok(Parsed::Complete(h)) => break h,
                    Ok(Parsed::Partial) => {
                        let idle = self.start == self.buf.len();
                        let deadline = if idle {
                            Instant::now() + shared.config.idle_timeout
                        } else {
                            head_started + shared.config.header_timeout
                        };
                        if let Read::Closed = self.read_more(shared, deadline, idle).await {
                            return Err(Stop::Close);
                        }
                    }
                    Err(e) => {
                        let r = Refusal::from_http(e, limits.max_body_bytes);
                        self.answer(shared, &Outcome::Refused(r), false, false);
                        return Err(Stop::Close);
                    }
                }
            };
            let keep_alive = self.handle(worker, &head).await?;
            if !keep_alive {
                return Err(Stop::Close);
            }
            if self.start == self.buf.len() {
                self.start = 0;
                self.buf.clear();
                if self.buf.capacity() > KEEP_BUF {
                    self.buf = Vec::with_capacity(INITIAL_BUF);
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
        let max_body = shared.config.limits.max_body_bytes;
        let head_only = head.method == Method::Head;

        if head.route != Route::Ingest {
            // Other routes take no body: read and drop one if sent.
            let len = self.read_body(shared, head).await?;
            if let Some(r) = len.refused {
                self.answer(shared, &Outcome::Refused(r), false, false);
                return Ok(false);
            }
            self.consume(head.len + len.raw);
            let outcome = match (head.route, head.method) {
                (_, Method::Post | Method::Other) => Outcome::Refused(Refusal::new(
                    405,
                    "method_not_allowed",
                    "method not allowed on this path",
                )),
                (Route::Health, _) => ops::health(shared),
                (Route::Ready, _) => ops::ready(shared),
                (Route::Metrics, _) => ops::metrics(shared),
                _ => Outcome::Refused(Refusal::new(
                    404,
                    "not_found",
                    "no such path; POST batches to /ingest",
                )),
            };
            let allow: &[(&str, &str)] = if matches!(outcome, Outcome::Refused(ref r) if r.status == 405)
            {
                &[("allow", "GET, HEAD")]
            } else {
                &[]
            };
            return Ok(self.answer_with(shared, &outcome, head.keep_alive, head_only, allow));
        }
        if head.method != Method::Post {
            let len = self.read_body(shared, head).await?;
            if let Some(r) = len.refused {
                self.answer(shared, &Outcome::Refused(r), false, false);
                return Ok(false);
            }
            self.consume(head.len + len.raw);
            let r = Refusal::new(405, "method_not_allowed", "use POST on /ingest");
            return Ok(self.answer_with(
                shared,
                &Outcome::Refused(r),
                head.keep_alive,
                head_only,
                &[("allow", "POST")],
            ));
        }

        // 1. Size, from Content-Length, before reading anything.
        if let Framing::Length(n) = head.framing {
            if n > max_body {
                let r = Refusal::from_http(request::HttpError::BodyTooLarge, max_body);
                self.answer(shared, &Outcome::Refused(r), false, false);
                return Ok(false);
            }
        }
        // 2. Draining.
        if shared.is_draining() {
            let r = Refusal::new(
                503,
                "draining",
                "the server is shutting down; retry on another instance",
            )
            .retry_after(1)
            .closing();
            self.answer(shared, &Outcome::Refused(r), false, false);
            return Ok(false);
        }
        // 3. The key.
        let principal = {
            let h = &self.buf[self.start..];
            let authorization = head.authorization.clone().map(|r| &h[r]);
            let x_api_key = head.x_api_key.clone().map(|r| &h[r]);
            shared.keys.authenticate(authorization, x_api_key)
        };
        let principal = match principal {
            Ok(p) => p,
            Err(e) => {
                let r = match e {
                    AuthError::Missing => Refusal::new(
                        401,
                        "missing_api_key",
                        "send the API key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
                    ),
                    AuthError::Invalid => {
                        Refusal::new(401, "invalid_api_key", "the API key is unknown or revoked")
                    }
                };
                // Keep the connection only if the whole body is already here to skip.
                let keep = match head.framing {
                    Framing::None => head.keep_alive,
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
                return Ok(self.answer(shared, &Outcome::Refused(r), keep, false));
            }
        };
        // Past authentication every answer reports the key's rate-limit state.
        let mut limits = admission::peek(&principal, shared.clock.mono_ns(), shared.clock.now_ms());
        // The checks that need no body passed: let a waiting client send it.
        if head.expect_continue && self.buf.len() - self.start == head.len {
            response::write_continue(&mut self.out);
            self.flush().await?;
        }
        let body = self.read_body(shared, head).await?;
        if let Some(refusal) = body.refused {
            self.answer_full(
                shared,
                &Outcome::Refused(refusal),
                false,
                false,
                ExtraHeaders { lines: &[], limits },
                Some(&principal.org_id),
            );
            return Ok(false);
        }
        shared
            .metrics
            .body_bytes
            .fetch_add(body.len as u64, Ordering::Relaxed);
        let body_start = self.start + head.len;
        let now_ms = shared.clock.now_ms();
        let result = {
            let mut pipeline = worker.pipeline.borrow_mut();
            let bytes = &mut self.buf[body_start..body_start + body.len];
            pipeline.ingest(shared, &principal, bytes, now_ms, &mut limits)
        };
        self.consume(head.len + body.raw);
        let outcome = match result {
            Ok(spans) => {
                shared
                    .metrics
                    .spans_accepted
                    .fetch_add(spans as u64, Ordering::Relaxed);
                shared
                    .metrics
                    .batches_accepted
                    .fetch_add(1, Ordering::Relaxed);
                Outcome::Accepted { spans }
            }
            Err(r) => Outcome::Refused(r),
        };
        Ok(self.answer_full(
            shared,
            &outcome,
            head.keep_alive,
            false,
            ExtraHeaders { lines: &[], limits },
            Some(&principal.org_id),
        ))
    }

    fn answer(
        &mut self,
        shared: &Shared,
        outcome: &Outcome,
        keep_alive: bool,
        head_only: bool,
    ) -> bool {
        self.answer_with(shared, outcome, keep_alive, head_only, &[])
    }

    fn answer_with(
        &mut self,
        shared: &Shared,
        outcome: &Outcome,
        keep_alive: bool,
        head_only: bool,
        extra: &[(&str, &str)],
    ) -> bool {
        let extra = ExtraHeaders {
            lines: extra,
            ..ExtraHeaders::default()
        };
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
        extra: ExtraHeaders<'_>,
        org: Option<&str>,
    ) -> bool {
        let (status, code) = match outcome {
            Outcome::Accepted { .. } => (202, "accepted"),
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
        response::write(&mut self.out, outcome, keep_alive, head_only, &extra)
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        debug_assert!(self.start <= self.buf.len());
    }

    /// Makes the whole body available at `buf[start + head.len..]`.
    async fn read_body(&mut self, shared: &Shared, head: &Head) -> Result<BodyLen, Stop> {
        let max_body = shared.config.limits.max_body_bytes;
        match head.framing {
            Framing::None => Ok(BodyLen::default()),
            Framing::Length(n) => {
                if n > max_body {
                    return Ok(BodyLen::refused(Refusal::from_http(
                        request::HttpError::BodyTooLarge,
                        max_body,
                    )));
                }
                let need = self.start + head.len + n as usize;
                if self.buf.capacity() < need {
                    self.buf.reserve(need - self.buf.len());
                }
                while self.buf.len() < need {
                    let deadline = Instant::now() + shared.config.idle_timeout;
                    if let Read::Closed = self.read_more(shared, deadline, false).await {
                        return Err(Stop::Close);
                    }
                }
                Ok(BodyLen {
                    len: n as usize,
                    raw: n as usize,
                    refused: None,
                })
            }
            Framing::Chunked => {
                let mut decoder = ChunkedDecoder::default();
                loop {
                    let region = &mut self.buf[self.start + head.len..];
                    match decoder.advance(region, max_body) {
                        Ok(Parsed::Complete(b)) => {
                            return Ok(BodyLen {
                                len: b.body_len,
                                raw: b.raw_len,
                                refused: None,
                            })
                        }
                        Ok(Parsed::Partial) => {
                            let deadline = Instant::now() + shared.config.idle_timeout;
                            if let Read::Closed = self.read_more(shared, deadline, false).await {
                                return Err(Stop::Close);
                            }
                        }
                        Err(e) => return Ok(BodyLen::refused(Refusal::from_http(e, max_body))),
                    }
                }
            }
        }
    }

    /// Reads at least one more byte into `buf`, first writing pending answers. `idle` means no
    /// request is in progress, so a drain may close the connection.
    async fn read_more(&mut self, shared: &Shared, deadline: Instant, idle: bool) -> Read {
        if !self.out.is_empty() && self.flush().await.is_err() {
            return Read::Closed;
        }
        if self.start > 0 && self.start == self.buf.len() {
            self.start = 0;
            self.buf.clear();
        } else if self.start > 0 && self.buf.len() == self.buf.capacity() {
            // Move the partial request to the front instead of growing.
            self.buf.copy_within(self.start.., 0);
            self.buf.truncate(self.buf.len() - self.start);
            self.start = 0;
        }
        if self.buf.len() == self.buf.capacity() {
            self.buf.reserve(self.buf.capacity().max(INITIAL_BUF));
        }
        loop {
            if idle && shared.is_draining() {
                return Read::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Read::Closed;
            }
            let wait = (deadline - now).min(DRAIN_POLL);
            let buf = std::mem::take(&mut self.buf);
            let len = buf.len();
            // A cancelled read hands its buffer back, so a timeout never loses buffered bytes.
            let canceller = Canceller::new();
            let mut recv = std::pin::pin!(self
                .stream
                .cancelable_read(buf.slice_mut(len..), canceller.handle()));
            let (res, slice) = monoio::select! {
                r = &mut recv => r,
                _ = monoio::time::sleep(wait) => {
                    canceller.cancel();
                    recv.await
                }
            };
            self.buf = slice.into_inner();
            match res {
                Ok(0) => return Read::Closed,
                Ok(_) => return Read::Data,
                Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::debug!(error = %e, "read failed");
                    return Read::Closed;
                }
            }
        }
    }

    async fn flush(&mut self) -> Result<(), Stop> {
        let out = std::mem::take(&mut self.out);
        let (res, mut out) = self.stream.write_all(out).await;
        out.clear();
        self.out = out;
        res.map(|_| ()).map_err(|_| Stop::Close)
    }
}

/// Sizes of a read body.
#[derive(Default)]
struct BodyLen {
    /// Decoded body bytes at `start + head.len`.
    len: usize,
    /// Raw bytes the body took on the wire.
    raw: usize,
    /// The body broke a limit or the chunked framing: answer this and close.
    refused: Option<Refusal>,
}

impl BodyLen {
    fn refused(r: Refusal) -> BodyLen {
        BodyLen {
            refused: Some(r),
            ..BodyLen::default()
        }
    }
}
