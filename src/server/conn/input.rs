//! The connection's input side: reading request bodies into `buf` (by `Content-Length` or
//! de-chunked in place, with their size caps, deadlines and minimum rate), waiting for more
//! bytes under a deadline, lingering before a close, and the small buffer an idle connection
//! keeps.

use std::time::{Duration, Instant};

use monoio::buf::IoBufMut;
use monoio::io::{AsyncWriteRent, CancelableAsyncReadRent};

use super::{Conn, Stop, GROW_BUF, IDLE_LOOK, LINGER, SMALL_BUF};
use crate::config::Config;
use crate::http::refusal::{refusal, ConnError, Refusal};
use crate::http::request::{self, ChunkedDecoder, Framing, Head, Parsed};
use crate::http::response::Outcome;
use crate::ingest::body::{PaddedBody, BODY_PADDING};
use crate::server::Shared;

/// Result of waiting for more bytes.
pub(super) enum Read {
    Data,
    /// Peer closed, error or drain: close without answering.
    Closed,
    /// The deadline passed first.
    TimedOut,
}

impl Conn {
    /// Reads and drops the body of a request that takes none. Returns whether the connection
    /// may stay open, or `None` when a refusal (413, 400, 408) was answered instead.
    pub(super) async fn skip_body(
        &mut self,
        shared: &Shared,
        head: &Head,
        max_body: u64,
    ) -> Result<Option<bool>, Stop> {
        if head.expect_continue
            && !matches!(head.framing, Framing::None | Framing::Length(0))
            && self.buf.len() - self.start == head.len
        {
            // The client holds the body back until a 100 Continue it will not get: answer at
            // once and close rather than wait for a body nobody wants (RFC 9110 §10.1.1).
            return Ok(Some(false));
        }
        let len = self.read_body(shared, head, max_body).await?;
        if let Some(r) = len.refused {
            self.answer(shared, &Outcome::Refused(r), false, false);
            return Ok(None);
        }
        self.consume(head.len + len.raw);
        Ok(Some(head.keep_alive))
    }

    /// Runs `f` on the body at `buf[start..start + len]` with simd-json's padding after it:
    /// the bytes that follow it in `buf` (what de-chunking in place left of a chunked body's
    /// framing, a pipelined request), topped up with spaces past what was read if there are
    /// not enough. The parse leaves the padding as it was, and the spaces are dropped again
    /// before `f`'s result is returned, so `buf` keeps exactly the bytes read. A
    /// `Content-Length` body was read with room for the padding (`read_body`), so this does not
    /// reallocate.
    pub(super) fn with_padded_body<R>(
        &mut self,
        start: usize,
        len: usize,
        f: impl FnOnce(PaddedBody<'_>) -> R,
    ) -> R {
        let read = self.buf.len();
        let end = start + len + BODY_PADDING;
        if read < end {
            self.buf.resize(end, b' ');
        }
        let result = f(PaddedBody::new(&mut self.buf[start..end], len));
        self.buf.truncate(read);
        result
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start += n;
        debug_assert!(self.start <= self.buf.len());
    }

    /// Makes the whole body available at `buf[start + head.len..]`. A body that stalls for the
    /// idle timeout, or arrives below the minimum rate, is refused with `408`.
    pub(super) async fn read_body(
        &mut self,
        shared: &Shared,
        head: &Head,
        max_body: u64,
    ) -> Result<BodyLen, Stop> {
        let body_started = Instant::now();
        match head.framing {
            // Room for the whole body, and the padding the parse needs after it, at once.
            Framing::Length(n) if n <= max_body => {
                let need = self.start + head.len + n as usize;
                if self.buf.capacity() < need + BODY_PADDING {
                    self.buf.reserve(need + BODY_PADDING - self.buf.len());
                }
            }
            _ => {}
        }
        let mut decoder = ChunkedDecoder::default();
        loop {
            let region = &mut self.buf[self.start + head.len..];
            match request::frame_body(head.framing, &mut decoder, region, max_body) {
                Ok(Parsed::Complete(b)) => {
                    return Ok(BodyLen {
                        len: b.body_len,
                        raw: b.raw_len,
                        refused: None,
                    })
                }
                Ok(Parsed::Partial) => {
                    let deadline = self.body_deadline(shared, head, body_started);
                    match self.read_more(shared, deadline, false).await {
                        Read::Data => {}
                        Read::Closed => return Err(Stop::Close),
                        Read::TimedOut => return Ok(BodyLen::refused(slow_body())),
                    }
                }
                Err(error) => {
                    return Ok(BodyLen::refused(refusal(ConnError::Http {
                        error,
                        max_body,
                    })))
                }
            }
        }
    }

    /// When the next body bytes must have arrived by: within the idle timeout, and, past the
    /// grace period, soon enough that the average rate since the body started stays at or above
    /// `INGEST_MIN_BODY_RATE_BYTES_PER_SEC`.
    pub(super) fn body_deadline(
        &self,
        shared: &Shared,
        head: &Head,
        body_started: Instant,
    ) -> Instant {
        // Raw bytes on the wire (chunk framing included) received so far.
        let received = self.buf.len() - self.start - head.len;
        rate_deadline(&shared.config, received, body_started)
    }

    /// Reads at least one more byte into `buf`, first writing pending answers. `idle` means no
    /// request is in progress, so a drain may close the connection and the buffers shrink.
    pub(super) async fn read_more(
        &mut self,
        shared: &Shared,
        deadline: Instant,
        idle: bool,
    ) -> Read {
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
            self.buf.reserve(self.buf.capacity().max(GROW_BUF));
        }
        // Idle, the connection gives back its large buffers once, `IDLE_LOOK` in, then waits
        // for its deadline or the drain signal. A read in the middle of a request waits for its
        // deadline only: the drain lets a request finish.
        let mut look = idle;
        loop {
            if (idle && shared.is_draining()) || self.worker.drain.is_cut_off() {
                return Read::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Read::TimedOut;
            }
            look &= self.holds_idle_memory();
            let wait = if look {
                (deadline - now).min(IDLE_LOOK)
            } else {
                deadline - now
            };
            let buf = std::mem::take(&mut self.buf);
            let len = buf.len();
            let worker = self.worker.clone();
            // A cancelled read hands its buffer back, so a timeout never loses buffered bytes.
            let (res, slice) = {
                let mut recv = std::pin::pin!(self
                    .stream
                    .cancelable_read(buf.slice_mut(len..), self.canceller.handle()));
                monoio::select! {
                    r = &mut recv => r,
                    _ = monoio::time::sleep(wait) => {
                        self.canceller = std::mem::take(&mut self.canceller).cancel();
                        recv.await
                    }
                    _ = worker.drain.wait(idle) => {
                        self.canceller = std::mem::take(&mut self.canceller).cancel();
                        recv.await
                    }
                }
            };
            self.buf = slice.into_inner();
            match res {
                Ok(0) => return Read::Closed,
                Ok(_) => return Read::Data,
                Err(e) if e.raw_os_error() == Some(libc::ECANCELED) => {
                    if look {
                        self.release_idle_memory();
                        look = false;
                    }
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::debug!(error = %e, "read failed");
                    return Read::Closed;
                }
            }
        }
    }

    /// After an answer that closes the connection: send FIN, then read and drop whatever the
    /// client still sends (the rest of a refused body, pipelined requests) until it closes too
    /// or `LINGER` passes. Closing a socket with unread input makes the kernel send a reset,
    /// which can destroy the answer before the client has read it.
    pub(super) async fn linger(&mut self, shared: &Shared) {
        if self.stream.shutdown().await.is_err() {
            return;
        }
        let deadline = Instant::now() + LINGER;
        loop {
            self.start = self.buf.len();
            if !matches!(self.read_more(shared, deadline, false).await, Read::Data) {
                return;
            }
        }
    }

    /// An idle connection holds more than a small read buffer and no write buffer.
    pub(super) fn holds_idle_memory(&self) -> bool {
        (self.buf.is_empty() && self.buf.capacity() > SMALL_BUF)
            || (self.out.is_empty() && self.out.capacity() > 0)
    }

    /// An idle connection keeps a small read buffer and no write buffer, so thousands of idle
    /// connections cost little (a body or a burst of pipelined answers may have grown them).
    pub(super) fn release_idle_memory(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > SMALL_BUF {
            self.buf = Vec::with_capacity(SMALL_BUF);
        }
        if self.out.is_empty() && self.out.capacity() > 0 {
            self.out = Vec::new();
        }
    }
}

/// When the next bytes of a body that started at `body_started` and of which `received` bytes
/// arrived must be there: within the idle timeout, and, past the grace period, soon enough
/// that the average rate stays at or above `INGEST_MIN_BODY_RATE_BYTES_PER_SEC`. HTTP/1 bodies
/// and gRPC messages alike.
pub(super) fn rate_deadline(config: &Config, received: usize, body_started: Instant) -> Instant {
    let stalled = Instant::now() + config.idle_timeout;
    if config.min_body_rate == 0 {
        return stalled;
    }
    let micros = received as u128 * 1_000_000 / u128::from(config.min_body_rate);
    let earned = Duration::from_micros(micros.min(u128::from(u64::MAX)) as u64);
    stalled.min(body_started + earned.max(config.body_rate_grace))
}

#[cold]
fn slow_body() -> Refusal {
    refusal(ConnError::SlowBody)
}

/// Sizes of a read body.
#[derive(Default)]
pub(super) struct BodyLen {
    /// Decoded body bytes at `start + head.len`.
    pub(super) len: usize,
    /// Raw bytes the body took on the wire.
    pub(super) raw: usize,
    /// The body broke a limit or the chunked framing: answer this and close.
    pub(super) refused: Option<Refusal>,
}

impl BodyLen {
    pub(super) fn refused(r: Refusal) -> BodyLen {
        BodyLen {
            refused: Some(r),
            ..BodyLen::default()
        }
    }
}
