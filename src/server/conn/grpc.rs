//! OTLP over gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export` on the same
//! port as `/ingest` and `/v1/traces`.
//!
//! A connection whose first bytes are HTTP/2's connection preface (gRPC's "prior knowledge"
//! h2c) is handed here by `Conn::run` with what it read so far. hyper's `h2` does the framing,
//! HPACK and flow control on the connection through monoio's poll-io adapter. Each stream is
//! one export, run in a task of its own on this worker: its metadata is checked (path,
//! content type, `grpc-encoding`, the API key in `authorization` or `x-api-key`), its one
//! length-prefixed message read into a buffer of its own (under the same deadline and minimum
//! rate as an HTTP/1 body), then it goes through the same pipeline as an OTLP/HTTP protobuf
//! export (`Pipeline::ingest_otlp`, `finish_export`). The answer is an
//! `ExportTraceServiceResponse` and `grpc-status: 0`, or a trailers-only error whose
//! `grpc-status` is the refusal's `google.rpc.Code` (`grpc_code`): the OTLP/HTTP twin's, with
//! a `RetryInfo` where the refusal has a `Retry-After` (`retry_info`), so exporters retry
//! `RESOURCE_EXHAUSTED` and `UNAVAILABLE` after the delay the server asks for, and never retry
//! a used-up quota (`PERMISSION_DENIED`) or an export too large (`INVALID_ARGUMENT`).
//!
//! The connection gets a `GOAWAY` after the idle timeout with no export running, and on the
//! drain; the exports in flight finish and their answers go out. A client that does not close
//! it then (one that never reads, or never answers h2's ping) is dropped 2 s after the
//! `GOAWAY` or the last export's end, whichever is later, whatever h2 still holds open for it;
//! the drain's cut-off ends everything.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::{HeaderMap, HeaderValue, Request, Response};
use monoio::io::IntoPollIo;
use monoio::net::TcpStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{finish_export, rate_deadline, wait_for_new_key, wait_for_room, Worker};
use crate::admission::{self, LimitHeaders, LimitValue};
use crate::auth::AuthError;
use crate::http::otlp::{self as answer, code, Format};
use crate::http::refusal::{otlp_refusal, ConnError, Refusal, Refused};
use crate::http::request::HttpError;
use crate::http::response::grpc_code as http_grpc_code;
use crate::ingest::body::{PaddedBody, BODY_PADDING};
use crate::ingest::compress::Encoding;
use crate::ingest::OtlpFormat;
use crate::server::runtime::Contained;
use crate::server::Shared;

#[path = "grpc_meta.rs"]
mod meta;
#[cfg(test)]
use meta::base64;
use meta::{percent_encode, retry_info};

/// HTTP/2's connection preface: what a gRPC client sends first on a plaintext connection.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The one method served.
pub const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Exports in flight on one connection (HTTP/2's recommended least); a client opening more
/// waits for one to finish. A client may open streams before it has the server's settings,
/// and those past the limit are refused (`REFUSED_STREAM`), which not every client retries
/// (hyper's does not): with 8, tonic's 9th concurrent export on a new connection failed.
const MAX_STREAMS: u32 = 100;
/// Message bytes the exports of one connection may hold at once while they are read and
/// decoded, in units of the largest message (`INGEST_OTLP_MAX_BODY_BYTES`), each counted at
/// the length its prefix declares: without it, 100 streams could make the server hold 100
/// messages for one connection, where an HTTP/1 connection holds one body. An export whose
/// message does not fit is refused at once (`UNAVAILABLE`, retry in 1 s), never made to wait:
/// a waiting stream's unread data would hold the connection's flow-control window and could
/// stall the exports holding the room.
const HELD_MESSAGES: u64 = 4;
/// Flow-control window of a stream and of the connection: what a client may send ahead of
/// what the exports have taken. A stream is read only once its key is known, so this is also
/// the message bytes a client without a valid key can make the server hold per connection
/// (about what the kernel buffers for an HTTP/1 connection), besides each stream's headers
/// (`MAX_HEADER_LIST`, for the 500 ms an unknown key waits). 1 MiB lets an export arrive at
/// full speed over a link with a large round trip, which h2's default of 64 KiB would not.
const WINDOW: u32 = 1 << 20;
/// Largest header block (HPACK-decoded) a client may send: gRPC metadata is a few hundred
/// bytes (path, content type, user agent, the key, a timeout).
const MAX_HEADER_LIST: u32 = 8 * 1024;
/// The code of a refusal of an unsupported `grpc-encoding`, as OTLP/HTTP's of a
/// `Content-Encoding`; its answer names the codings served (`grpc-accept-encoding`).
const UNSUPPORTED_ENCODING: &str = "unsupported_content_encoding";
/// gRPC's message prefix: a compressed flag, then the length (big-endian `u32`).
const PREFIX: usize = 5;
/// How long a closing connection waits, after its `GOAWAY` and after its last export's end,
/// for the client to close it (to take the answers and the `GOAWAY` and answer h2's ping)
/// before it is dropped.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// What the first bytes of a connection say about its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniff {
    /// The whole preface: HTTP/2.
    Http2,
    /// A prefix of the preface so far (possibly nothing): read more to tell.
    Undecided,
    /// Not the preface: HTTP/1.
    Http1,
}

/// Tells an HTTP/2 connection from an HTTP/1 one by its first bytes.
pub fn sniff(first: &[u8]) -> Sniff {
    let n = first.len().min(PREFACE.len());
    if first[..n] != PREFACE[..n] {
        Sniff::Http1
    } else if n == PREFACE.len() {
        Sniff::Http2
    } else {
        Sniff::Undecided
    }
}

/// Serves an HTTP/2 connection whose first bytes, `read`, were already taken from `stream`.
pub async fn serve(stream: TcpStream, read: Vec<u8>, worker: Rc<Worker>) {
    let shared = worker.shared.clone();
    let io = match stream.into_poll_io() {
        Ok(io) => Prefixed { read, at: 0, io },
        Err(e) => {
            tracing::debug!(error = %e, "gRPC connection: no poll-io");
            return;
        }
    };
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(MAX_STREAMS)
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .max_header_list_size(MAX_HEADER_LIST);
    let handshake = monoio::time::timeout(shared.config.header_timeout, builder.handshake(io));
    let mut conn = match handshake.await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "gRPC connection: handshake failed");
            return;
        }
        Err(_) => return,
    };
    // Accept streams; each runs in a task of its own, driven by this loop's polling of the
    // connection, and counted in `running`. Idleness is this count, not h2's open streams (a
    // stream whose answer a client never lets out stays open): after the idle timeout with no
    // export running, or on the drain, a `GOAWAY`; h2 closes once the client has taken it,
    // and a client that has not is dropped `CLOSE_WAIT` after the `GOAWAY` or the last
    // export's end, whichever is later. The exports end by their own deadlines; the drain's
    // cut-off ends everything.
    let running = Rc::new(Running::new(shared.clone()));
    let mut closing_since: Option<Instant> = None;
    loop {
        if worker.drain.is_cut_off() {
            return;
        }
        let now = Instant::now();
        if closing_since.is_none() && shared.is_draining() {
            conn.graceful_shutdown();
            closing_since = Some(now);
        }
        let busy = running.count.get() > 0;
        let wake = match closing_since {
            None if busy => None,
            None => Some(running.last_busy.get() + shared.config.idle_timeout),
            Some(_) if busy => None,
            // From the `GOAWAY` or the last export's end, whichever is later: an answer
            // queued in h2 goes out only while this loop polls the connection.
            Some(since) => {
                let from = since.max(running.last_busy.get());
                if now >= from + CLOSE_WAIT {
                    return;
                }
                Some(from + CLOSE_WAIT)
            }
        };
        let timer = async {
            match wake {
                Some(at) => monoio::time::sleep_until(monoio::time::Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        // At `MAX_STREAMS` exports running, no stream is taken: h2 counts only open streams,
        // and a client that resets each export it opened (one waiting for a key-set load,
        // buffer room or the write-ahead log runs on) could start any number. The
        // connection is still driven; new streams wait in h2, which sends `GOAWAY` to a
        // client resetting many of those.
        let full = running.count.get() >= MAX_STREAMS as usize;
        let incoming = async {
            if full {
                poll_fn(|cx| conn.poll_closed(cx)).await.err().map(Err)
            } else {
                conn.accept().await
            }
        };
        let next = monoio::select! {
            next = incoming => Some(next),
            _ = timer => None,
            // Full: until one ends; else until none runs.
            _ = running.until_below(if full { MAX_STREAMS as usize } else { 1 }), if busy => None,
            // Idle: the drain; closing: its cut-off.
            _ = worker.drain.wait(closing_since.is_none()) => None,
        };
        match next {
            Some(Some(Ok((request, respond)))) => {
                let worker = worker.clone();
                let guard = running.start();
                // A panic ends the stream (reset as its handles drop), not the worker.
                monoio::spawn(Contained(async move {
                    export(&worker, request, respond, &guard.0).await;
                    drop(guard);
                }));
            }
            Some(Some(Err(e))) => {
                tracing::debug!(error = %e, "gRPC connection failed");
                return;
            }
            // Closed, every stream done.
            Some(None) => return,
            // A timer, the last export's end or the drain: the next turn decides.
            None if closing_since.is_none()
                && running.count.get() == 0
                && Instant::now() >= running.last_busy.get() + shared.config.idle_timeout =>
            {
                conn.graceful_shutdown();
                closing_since = Some(Instant::now());
            }
            None => {}
        }
    }
}

/// The exports running on a connection, and when one last started or ended.
struct Running {
    count: Cell<usize>,
    last_busy: Cell<Instant>,
    /// Message bytes the running exports hold (`Held`), at most `HELD_MESSAGES` messages;
    /// also counted in the server's `grpc_message_bytes`.
    held: Cell<u64>,
    /// The connection loop, waiting for the count to fall below the number it holds.
    waiter: RefCell<Option<(usize, Waker)>>,
    shared: Arc<Shared>,
}

impl Running {
    fn new(shared: Arc<Shared>) -> Running {
        Running {
            count: Cell::new(0),
            last_busy: Cell::new(Instant::now()),
            held: Cell::new(0),
            waiter: RefCell::new(None),
            shared,
        }
    }
}

impl Running {
    /// Counts an export in until the guard drops.
    fn start(self: &Rc<Running>) -> RunningGuard {
        self.count.set(self.count.get() + 1);
        self.last_busy.set(Instant::now());
        RunningGuard(self.clone())
    }

    /// Counts `bytes` of a message in until the `Held` drops, if they fit under `limit`.
    fn hold(self: &Rc<Running>, bytes: u64, limit: u64) -> Option<Held> {
        let held = self.held.get() + bytes;
        if held > limit {
            return None;
        }
        self.held.set(held);
        self.shared
            .metrics
            .grpc_message_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        Some(Held {
            running: self.clone(),
            bytes,
        })
    }

    /// Resolves once fewer than `n` exports run.
    async fn until_below(&self, n: usize) {
        poll_fn(|cx| {
            if self.count.get() < n {
                return Poll::Ready(());
            }
            *self.waiter.borrow_mut() = Some((n, cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// A message's bytes counted in `Running::held` until dropped.
struct Held {
    running: Rc<Running>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        let held = &self.running.held;
        held.set(held.get() - self.bytes);
        self.running
            .shared
            .metrics
            .grpc_message_bytes
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// An export counted in `Running`; dropped when its task ends, however it ends.
struct RunningGuard(Rc<Running>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        let running = &self.0;
        running.count.set(running.count.get() - 1);
        running.last_busy.set(Instant::now());
        let mut waiter = running.waiter.borrow_mut();
        if matches!(*waiter, Some((n, _)) if running.count.get() < n) {
            if let Some((_, w)) = waiter.take() {
                w.wake();
            }
        }
    }
}

/// How an export ends without its answer being an export.
enum Ended {
    /// Refused: answered with this.
    Refused(Refusal),
    /// The stream failed before its message was in (reset by the client, or by h2 for a
    /// protocol error, or the connection gone): no answer can reach the client, so none is
    /// sent or counted, as an HTTP/1.1 client gone mid-body is not.
    Gone(h2::Error),
}

impl From<Refusal> for Ended {
    fn from(r: Refusal) -> Ended {
        Ended::Refused(r)
    }
}

/// Runs one stream (an export) of the connection `running` counts, and answers it.
async fn export(
    worker: &Worker,
    request: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    running: &Rc<Running>,
) {
    let shared = &*worker.shared;
    let mut org: Option<Arc<str>> = None;
    let mut limits = LimitHeaders::default();
    let grpc_type = is_grpc_type(request.headers().get("content-type"));
    let answer = match run(worker, request, running, &mut org, &mut limits).await {
        Ok(partial) => Ok(partial),
        Err(Ended::Refused(r)) => Err(r),
        Err(Ended::Gone(e)) => {
            tracing::debug!(
                error = %e,
                org = org.as_deref().unwrap_or(""),
                "gRPC stream ended before its message; not answered"
            );
            return;
        }
    };
    let (status, codename) = match &answer {
        Ok(_) => (200, "exported"),
        Err(r) => {
            tracing::debug!(
                status = r.status,
                code = r.code,
                org = org.as_deref().unwrap_or(""),
                grpc = true,
                "refused request"
            );
            (r.status, r.code)
        }
    };
    shared.metrics.count_response(status, codename);
    if let Err(e) = respond_with(&mut respond, answer, &limits, grpc_type) {
        tracing::debug!(error = %e, "gRPC answer not sent");
    }
}

/// Writes the answer: the response message and `grpc-status: 0`, or a trailers-only error.
/// Either carries the key's `limits` as metadata, named as OTLP/HTTP's headers. A refusal of a
/// call whose content type is not gRPC's (`grpc_type` false) is HTTP 415, as gRPC's protocol
/// asks, so that an HTTP/2 client that is not a gRPC client does not take it for a success.
fn respond_with(
    respond: &mut SendResponse<Bytes>,
    answer: Result<Option<(u64, String)>, Refusal>,
    limits: &LimitHeaders,
    grpc_type: bool,
) -> Result<(), h2::Error> {
    match answer {
        Ok(partial) => {
            let mut message = vec![0; PREFIX];
            let partial = partial.as_ref().map(|(n, m)| (*n, m.as_str()));
            answer::export_response(Format::Protobuf, partial, &mut message);
            let len = (message.len() - PREFIX) as u32;
            message[1..PREFIX].copy_from_slice(&len.to_be_bytes());
            let mut response = head();
            limit_metadata(limits, response.headers_mut());
            let mut sending = respond.send_response(response, false)?;
            sending.send_data(Bytes::from(message), false)?;
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            sending.send_trailers(trailers)
        }
        Err(refusal) => {
            let mut response = head();
            if !grpc_type {
                *response.status_mut() = http::StatusCode::UNSUPPORTED_MEDIA_TYPE;
            }
            let headers = response.headers_mut();
            limit_metadata(limits, headers);
            let code = grpc_code(&refusal);
            headers.insert("grpc-status", HeaderValue::from(code));
            // As an OTLP/HTTP `Status`: the message, then the v1 code in parentheses.
            let message = format!("{} ({})", refusal.message, refusal.code);
            if let Ok(v) = HeaderValue::from_bytes(&percent_encode(&message)) {
                headers.insert("grpc-message", v);
            }
            if let Some(retry) = retry_info(code, &message, refusal.retry_after) {
                for (name, value) in [
                    ("google.rpc.retryinfo-bin", retry.retry_info),
                    ("grpc-status-details-bin", retry.status_details),
                ] {
                    if let Ok(v) = HeaderValue::from_bytes(&value) {
                        headers.insert(name, v);
                    }
                }
            }
            if refusal.code == UNSUPPORTED_ENCODING {
                headers.insert(
                    "grpc-accept-encoding",
                    HeaderValue::from_static("identity,gzip,deflate,zstd"),
                );
            }
            respond.send_response(response, true).map(|_| ())
        }
    }
}

/// The key's rate limit and quota state as metadata: `x-ratelimit-limit` and
/// `x-ratelimit-remaining`, and past 90% of the quota `x-quota-warning`, `x-quota-used` and
/// `x-quota-limit`, as OTLP/HTTP sends them (`LimitHeaders::each`).
fn limit_metadata(limits: &LimitHeaders, headers: &mut HeaderMap) {
    limits.each(|name, value| {
        let value = match value {
            LimitValue::Count(n) => HeaderValue::from(n),
            LimitValue::Text(t) => HeaderValue::from_static(t),
        };
        headers.insert(name, value);
    });
}

/// `:status 200` and gRPC's content type: every gRPC answer, errors included, has them.
fn head() -> Response<()> {
    let mut response = Response::new(());
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    response
}

/// Checks the stream's metadata, reads its message and exports it. `org` is set once the key
/// is known, for the log, and `limits` then holds the key's limits for the answer. Ok holds
/// what `partial_success` reports.
async fn run(
    worker: &Worker,
    request: Request<RecvStream>,
    running: &Rc<Running>,
    org: &mut Option<Arc<str>>,
    limits: &mut LimitHeaders,
) -> Result<Option<(u64, String)>, Ended> {
    let shared = &*worker.shared;
    let (parts, mut body) = request.into_parts();
    let headers = &parts.headers;
    if parts.uri.path() != EXPORT_PATH || parts.method != http::Method::POST {
        return Err(unknown_method(&parts.method, parts.uri.path()).into());
    }
    if !is_grpc_proto(headers.get("content-type")) {
        return Err(Refusal {
            message: "send gRPC exports as content-type: application/grpc (protobuf)".into(),
            ..otlp_refusal(ConnError::UnsupportedMediaType)
        }
        .into());
    }
    let encoding = match headers.get("grpc-encoding").map(HeaderValue::as_bytes) {
        None | Some(b"identity") => Encoding::Identity,
        Some(name) => match Encoding::from_header(Some(name)) {
            Ok(e) => e,
            Err(_) => {
                return Err(Refusal {
                    code: UNSUPPORTED_ENCODING,
                    message: format!(
                        "grpc-encoding '{}' is not supported; use identity, gzip, deflate or zstd",
                        String::from_utf8_lossy(name)
                    ),
                    ..otlp_refusal(ConnError::UnsupportedMediaType)
                }
                .into())
            }
        },
    };
    if shared.is_draining() {
        return Err(otlp_refusal(Refused::Conn(ConnError::Draining)).into());
    }
    // As over HTTP/1.1: a key header sent twice with different values is refused, not settled
    // by which comes first.
    for (name, why) in [
        (
            "authorization",
            "two Authorization headers with different values",
        ),
        ("x-api-key", "two x-api-key headers with different values"),
    ] {
        let mut values = headers
            .get_all(name)
            .iter()
            .map(|v| v.as_bytes().trim_ascii());
        if let Some(first) = values.next() {
            if values.any(|v| v != first) {
                return Err(invalid(why).into());
            }
        }
    }
    let key = |headers: &HeaderMap| {
        shared.keys.authenticate(
            headers.get("authorization").map(HeaderValue::as_bytes),
            headers.get("x-api-key").map(HeaderValue::as_bytes),
        )
    };
    let keys_at = shared.keys.generation();
    let principal = match key(headers) {
        Err(AuthError::Unknown) => {
            wait_for_new_key(worker).await;
            key(headers)
        }
        known => known,
    }
    .map_err(|e| otlp_refusal(Refused::Auth(e)))?;
    *org = Some(principal.org_id.clone());
    *limits = admission::peek(&principal, shared.clock.mono_ns(), shared.clock.now_ms());
    let max_body = shared.config.otlp_max_body_bytes;
    let (mut message, held) = read_message(shared, &mut body, max_body, running).await?;
    let (compressed, len) = (message[0] == 1, message.len() - PREFIX);
    if compressed && encoding == Encoding::Identity {
        return Err(invalid(
            "a message is flagged compressed but the call's grpc-encoding is identity",
        )
        .into());
    }
    shared
        .metrics
        .body_bytes
        .fetch_add(len as u64, Ordering::Relaxed);
    let nudge = || worker.pipeline.borrow().handoff().nudge_flush();
    if wait_for_room(shared, nudge).await {
        shared.metrics.room_waits.fetch_add(1, Ordering::Relaxed);
    }
    // The key again, now that the message is in (as over HTTP/1.1), if the key set changed
    // since: one revoked while it came must not put its spans in.
    let principal = if shared.keys.generation() == keys_at {
        principal
    } else {
        key(headers).map_err(|e| {
            *limits = LimitHeaders::default();
            otlp_refusal(Refused::Auth(e))
        })?
    };
    message.resize(PREFIX + len + BODY_PADDING, 0);
    let body = PaddedBody::new(&mut message[PREFIX..], len);
    let result = worker.pipeline.borrow_mut().ingest_otlp(
        &principal,
        body,
        OtlpFormat::Protobuf,
        if compressed {
            encoding
        } else {
            Encoding::Identity
        },
        max_body as usize,
        limits,
    );
    // The message is parsed and its rows built: its memory goes before the fsync wait.
    drop(message);
    drop(held);
    let partial = finish_export(shared, &principal, result, limits).await?;
    shared
        .metrics
        .batches_accepted
        .fetch_add(1, Ordering::Relaxed);
    Ok(partial)
}

/// Reads a unary call's one message, prefix included, within the idle timeout per piece and
/// the minimum rate since the first, with its length counted in the connection's `running`
/// until the `Held` drops. A message larger than `max_body`, or than the room the connection's
/// other exports leave (`HELD_MESSAGES`), is refused from its prefix, before it is read.
async fn read_message(
    shared: &Shared,
    body: &mut RecvStream,
    max_body: u64,
    running: &Rc<Running>,
) -> Result<(Vec<u8>, Held), Ended> {
    let started = Instant::now();
    let mut message: Vec<u8> = Vec::new();
    let mut want: Option<(usize, Held)> = None;
    loop {
        let deadline = rate_deadline(&shared.config, message.len(), started);
        let piece =
            monoio::time::timeout_at(monoio::time::Instant::from_std(deadline), body.data()).await;
        let piece = match piece {
            Err(_) => return Err(otlp_refusal(Refused::Conn(ConnError::SlowBody)).into()),
            Ok(None) => break,
            // Reset (by the client, or by h2 for its protocol error) or the connection
            // gone: no answer can reach the client.
            Ok(Some(Err(e))) => return Err(Ended::Gone(e)),
            Ok(Some(Ok(piece))) => piece,
        };
        let _ = body.flow_control().release_capacity(piece.len());
        // Before the prefix is known, `message` holds at most 4 bytes: a piece (one frame, at
        // most 16 KiB) past them is all it may overshoot by before a check below.
        message.extend_from_slice(&piece);
        if want.is_none() && message.len() >= PREFIX {
            let len = u32::from_be_bytes(message[1..PREFIX].try_into().expect("4 bytes"));
            if message[0] > 1 {
                return Err(invalid("a message's compressed flag is neither 0 nor 1").into());
            }
            if u64::from(len) > max_body {
                return Err(otlp_refusal(Refused::Conn(ConnError::Http {
                    error: HttpError::BodyTooLarge,
                    max_body,
                }))
                .into());
            }
            let Some(held) = running.hold(u64::from(len), HELD_MESSAGES * max_body) else {
                return Err(connection_busy(running.held.get(), max_body).into());
            };
            want = Some((PREFIX + len as usize, held));
        }
        if let Some((total, _)) = want {
            if message.len() > total {
                return Err(invalid("the call carries more than one message").into());
            }
            // Room for the whole message and the padding at once.
            message.reserve_exact(total + BODY_PADDING - message.len());
        }
    }
    match want {
        Some((total, held)) if message.len() == total => Ok((message, held)),
        _ => Err(invalid("the call ended without one whole length-prefixed message").into()),
    }
}

/// Whether a content type is gRPC's (begins with `application/grpc`), whatever its codec.
fn is_grpc_type(value: Option<&HeaderValue>) -> bool {
    value.is_some_and(|v| {
        v.as_bytes()
            .get(..16)
            .is_some_and(|t| t.eq_ignore_ascii_case(b"application/grpc"))
    })
}

/// `application/grpc` or `application/grpc+proto`, with parameters or not.
fn is_grpc_proto(value: Option<&HeaderValue>) -> bool {
    let Some(v) = value.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let media = v.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/grpc")
        || media.eq_ignore_ascii_case("application/grpc+proto")
}

fn invalid(message: &str) -> Refusal {
    Refusal {
        message: message.into(),
        ..otlp_refusal(Refused::Conn(ConnError::Http {
            error: HttpError::BadRequest("not one gRPC message"),
            max_body: 0,
        }))
    }
}

/// An export whose message does not fit beside those the connection's other exports hold.
fn connection_busy(held: u64, max_body: u64) -> Refusal {
    Refusal {
        status: 503,
        code: "connection_busy",
        message: format!(
            "this connection's exports already hold {held} bytes of messages, and one more \
             would pass {HELD_MESSAGES} x INGEST_OTLP_MAX_BODY_BYTES ({max_body}); retry, or \
             spread concurrent exports over more connections"
        ),
        retry_after: Some(1),
        allow: None,
        issues: Vec::new(),
        close: false,
    }
}

fn unknown_method(method: &http::Method, path: &str) -> Refusal {
    Refusal {
        message: format!("unknown method {method} {path}; this server serves POST {EXPORT_PATH}"),
        ..otlp_refusal(ConnError::NotFound)
    }
}

/// A refusal's `grpc-status`: the `google.rpc.Code` of its OTLP/HTTP twin's `Status` body,
/// except that an unknown method or an unsupported content type or encoding is
/// `UNIMPLEMENTED`, as gRPC has it.
pub fn grpc_code(r: &Refusal) -> i32 {
    match r.status {
        404 | 415 => code::UNIMPLEMENTED,
        s => http_grpc_code(s),
    }
}

/// The connection for `h2`: the bytes the sniffing read first, then the socket.
struct Prefixed {
    read: Vec<u8>,
    at: usize,
    io: monoio::net::tcp::stream_poll::TcpStreamPoll,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.read.len() {
            let n = buf.remaining().min(self.read.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.read[at..at + n]);
            self.at += n;
            if self.at == self.read.len() {
                self.read = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
