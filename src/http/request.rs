//! HTTP/1.1 request framing: the head (via httparse), then `Content-Length` or chunked bodies.
//!
//! Sans-I/O: every function looks at bytes already read and says `Partial` (read more), a parsed
//! value, or an `HttpError`. The connection owns the buffer and the socket; this file never sees
//! either, which is what lets the fuzz target split input at arbitrary points.

use std::ops::Range;

use crate::hex;
use crate::ingest::compress::{CompressError, Encoding};

/// Limits on what a client may send, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of request line plus headers (`431` past it).
    pub max_head_bytes: usize,
    /// Header count (`431` past it).
    pub max_headers: usize,
    /// Body bytes after de-chunking (`413` past it).
    pub max_body_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 16 * 1024,
            max_headers: 64,
            max_body_bytes: 10 * 1024 * 1024,
        }
    }
}

/// The only routes the server knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /ingest`: a v1 JSON batch.
    Ingest,
    /// `POST /v1/traces`: an OTLP/HTTP trace export.
    OtlpTraces,
    Health,
    Ready,
    Metrics,
    NotFound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Other,
}

/// The request's `Content-Type`, by what the server does with it (parameters ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    /// No `Content-Type` header.
    Absent,
    /// `application/json`.
    Json,
    /// `application/x-protobuf` (also `application/protobuf`).
    Protobuf,
    /// Anything else.
    Other,
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (no `Content-Length`, no `Transfer-Encoding`).
    None,
    Length(u64),
    Chunked,
}

/// A parsed request head. Header values the server needs are kept as byte ranges of the
/// connection buffer (relative to the start of the head), so nothing is copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: Method,
    pub route: Route,
    /// `0` for HTTP/1.0, `1` for HTTP/1.1.
    pub minor_version: u8,
    /// Bytes of the request line and headers including the blank line.
    pub len: usize,
    pub framing: Framing,
    /// HTTP/1.1 without `Connection: close`. HTTP/1.0 is never kept alive.
    pub keep_alive: bool,
    /// `Expect: 100-continue` was sent.
    pub expect_continue: bool,
    /// Value of `Authorization` (trimmed), if present.
    pub authorization: Option<Range<usize>>,
    /// Value of `x-api-key` (trimmed), if present.
    pub x_api_key: Option<Range<usize>>,
    pub content_type: MediaType,
    /// The body's `Content-Encoding`: one coding the server decodes, or `Unsupported` (`415`)
    /// for any other coding or more than one.
    pub content_encoding: Result<Encoding, CompressError>,
}

/// Why a request cannot be served. Each maps to one status in `http/response.rs`; all of them
/// close the connection, because the framing of what follows is no longer trustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpError {
    /// Malformed request line, header, chunk or conflicting framing: `400`.
    BadRequest(&'static str),
    /// Head over `max_head_bytes` or more than `max_headers` headers: `431`.
    HeadTooLarge,
    /// A request target that does not end within `max_head_bytes`: `414`.
    UriTooLong,
    /// Body over `max_body_bytes`: `413`.
    BodyTooLarge,
    /// A transfer coding other than `chunked` before the final `chunked`: `501`.
    UnsupportedTransferEncoding,
    /// An HTTP version other than 1.0 or 1.1: `505`.
    UnsupportedVersion,
    /// An `Expect` other than `100-continue`: `417`.
    ExpectationFailed,
}

/// Outcome of looking at the bytes read so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<T> {
    Partial,
    Complete(T),
}

/// Parses a request head from the start of `buf`.
pub fn parse_head(buf: &[u8], limits: &Limits) -> Result<Parsed<Head>, HttpError> {
    let mut storage = [httparse::EMPTY_HEADER; 128];
    let max = limits.max_headers.min(storage.len());
    let mut req = httparse::Request::new(&mut storage[..max]);
    // Only the first `max_head_bytes` can belong to an acceptable head: looking past them would
    // let a bad byte beyond the cap decide the answer, which then depends on how the bytes were
    // split into reads (found by the http_request fuzz target).
    let view = &buf[..buf.len().min(limits.max_head_bytes)];
    let status = match req.parse(view) {
        Ok(s) => s,
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::HeadTooLarge),
        Err(httparse::Error::Version) => return version_error(view, limits),
        Err(e) => return Err(HttpError::BadRequest(bad_head_reason(e))),
    };
    let len = match status {
        httparse::Status::Partial => {
            return if view.len() >= limits.max_head_bytes {
                Err(over_the_cap(view))
            } else {
                Ok(Parsed::Partial)
            };
        }
        httparse::Status::Complete(len) => len,
    };
    if let Some(why) = bare_line_break(&buf[..len]) {
        return Err(HttpError::BadRequest(why));
    }
    let minor_version = req.version.unwrap_or(1);
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        _ => Method::Other,
    };
    let route = route_of(req.path.unwrap_or(""));

    let mut content_length: Option<u64> = None;
    let mut te = Codings::default();
    let mut close = false;
    let mut expect_continue = false;
    let mut authorization = None;
    let mut x_api_key = None;
    let mut content_type = MediaType::Absent;
    let mut content_encoding = Ok(Encoding::Identity);
    let mut seen_encoding = false;
    let base = buf.as_ptr() as usize;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        let value = h.value;
        if name.eq_ignore_ascii_case(b"content-length") {
            // RFC 9110 §8.6: repeated lines or a list of one identical value may be taken as
            // that value; anything else is refused, never resolved by picking one.
            for element in value.split(|&b| b == b',') {
                let n = parse_content_length(element)?;
                match content_length {
                    Some(prev) if prev != n => {
                        return Err(HttpError::BadRequest("conflicting Content-Length headers"))
                    }
                    _ => content_length = Some(n),
                }
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Several lines are one list (RFC 9110 §5.3): the codings in order, the last one
            // deciding the framing.
            for coding in value.split(|&b| b == b',') {
                te.add(trim(coding));
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',') {
                let token = trim(token);
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            if trim(value).eq_ignore_ascii_case(b"100-continue") {
                expect_continue = true;
            } else {
                return Err(HttpError::ExpectationFailed);
            }
        } else if name.eq_ignore_ascii_case(b"authorization") {
            // Neither key header is a list (RFC 9110 §5.3): of two that differ, a proxy or a
            // log reading the first would see another key than the one the server checks. A
            // repetition of one value (a client's two layers both adding it) says one thing.
            if authorization
                .as_ref()
                .is_some_and(|r: &Range<usize>| buf[r.clone()] != *trim(value))
            {
                return Err(HttpError::BadRequest(
                    "two Authorization headers with different values",
                ));
            }
            authorization = Some(trimmed_range(value, base));
        } else if name.eq_ignore_ascii_case(b"x-api-key") {
            if x_api_key
                .as_ref()
                .is_some_and(|r: &Range<usize>| buf[r.clone()] != *trim(value))
            {
                return Err(HttpError::BadRequest(
                    "two x-api-key headers with different values",
                ));
            }
            x_api_key = Some(trimmed_range(value, base));
        } else if name.eq_ignore_ascii_case(b"content-type") {
            content_type = media_type(value);
        } else if name.eq_ignore_ascii_case(b"content-encoding") {
            content_encoding = match content_encoding {
                Ok(Encoding::Identity) if !seen_encoding => Encoding::from_header(Some(value)),
                // A second header lists a second coding.
                _ => Err(CompressError::Unsupported),
            };
            seen_encoding = true;
        }
    }
    // Any `Transfer-Encoding` makes the body chunked, or the request an error.
    let chunked = te.any;
    if chunked && content_length.is_some() {
        // RFC 9112 §6.3: a request with both is a smuggling attempt or a broken client.
        return Err(HttpError::BadRequest(
            "both Content-Length and Transfer-Encoding sent",
        ));
    }
    if chunked {
        te.check(minor_version)?;
    }
    let framing = match (chunked, content_length) {
        (true, _) => Framing::Chunked,
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::None,
    };
    // HTTP/1.0 connections are always closed after the answer, `Connection: keep-alive` or
    // not: one rule is simpler than 1.0's opt-in persistence, and 1.0 clients are rare.
    let keep_alive = !close && minor_version == 1;
    // RFC 9110 §10.1.1: a 100-continue expectation in an HTTP/1.0 request is ignored.
    let expect_continue = expect_continue && minor_version == 1;
    Ok(Parsed::Complete(Head {
        method,
        route,
        minor_version,
        len,
        framing,
        keep_alive,
        expect_continue,
        authorization,
        x_api_key,
        content_type,
        content_encoding,
    }))
}

/// The transfer codings a request's `Transfer-Encoding` lines list, as far as framing cares.
#[derive(Default)]
struct Codings {
    /// At least one coding was listed.
    any: bool,
    /// The last coding listed is `chunked`.
    last_chunked: bool,
    /// How many times `chunked` is listed.
    chunked: u32,
    /// How many codings are listed.
    codings: u32,
    /// An element is empty or does not begin with a coding's name (a token).
    malformed: bool,
}

impl Codings {
    /// Adds one list element (`coding` trimmed). An empty one is not skipped (RFC 9110
    /// §5.6.1 would) but refused: a proxy that does not skip it reads another last coding.
    fn add(&mut self, coding: &[u8]) {
        let is_chunked = coding.eq_ignore_ascii_case(b"chunked");
        // `transfer-coding = token *( OWS ";" OWS transfer-parameter )`: the parameters
        // matter to no decision here, the name must be a token.
        let name = trim(coding.split(|&b| b == b';').next().unwrap_or(b""));
        self.malformed |= name.is_empty() || !name.iter().all(|&b| is_tchar(b));
        self.any = true;
        self.last_chunked = is_chunked;
        self.chunked += u32::from(is_chunked);
        self.codings += 1;
    }

    /// Whether the body can be read as chunked. RFC 9112 §6.1 and §6.3: `chunked` must be
    /// the last coding, applied once, else the body's length is unknown (`400`); a list with
    /// an empty or malformed element is `400` too; any coding before `chunked` is one this
    /// server does not implement (`501`); and a `Transfer-Encoding` in HTTP/1.0 is faulty
    /// framing (`400`). Every one of them closes the connection.
    fn check(&self, minor_version: u8) -> Result<(), HttpError> {
        if minor_version == 0 {
            return Err(HttpError::BadRequest("Transfer-Encoding in HTTP/1.0"));
        }
        if self.malformed {
            return Err(HttpError::BadRequest(
                "an empty or malformed element in Transfer-Encoding",
            ));
        }
        if !self.last_chunked {
            return Err(HttpError::BadRequest(
                "Transfer-Encoding does not end in chunked, so the body's length is unknown",
            ));
        }
        if self.chunked > 1 {
            return Err(HttpError::BadRequest(
                "chunked listed more than once in Transfer-Encoding",
            ));
        }
        if self.codings > 1 {
            return Err(HttpError::UnsupportedTransferEncoding);
        }
        Ok(())
    }
}

/// The media type of a `Content-Type` value, parameters (`; charset=utf-8`) ignored.
fn media_type(value: &[u8]) -> MediaType {
    let essence = trim(value.split(|&b| b == b';').next().unwrap_or(b""));
    if essence.eq_ignore_ascii_case(b"application/json") {
        MediaType::Json
    } else if essence.eq_ignore_ascii_case(b"application/x-protobuf")
        || essence.eq_ignore_ascii_case(b"application/protobuf")
    {
        MediaType::Protobuf
    } else {
        MediaType::Other
    }
}

/// httparse says `Version` for any request line it cannot read to the end: only a well-formed
/// `HTTP/d.d` other than 1.x is an unsupported version; anything else is a bad request.
///
/// httparse stops at the first byte that cannot be `HTTP/1.x`, which may be before the line
/// ends (`HTTP/2` of `HTTP/2.0`): which of the two answers applies is only known at the line's
/// end, so until then the head is still partial (see `regression_version_error_waits_for_the_line_end`).
#[cold]
fn version_error(buf: &[u8], limits: &Limits) -> Result<Parsed<Head>, HttpError> {
    let Some(line_end) = buf.iter().position(|&b| b == b'\r' || b == b'\n') else {
        return if buf.len() >= limits.max_head_bytes {
            Err(over_the_cap(buf))
        } else {
            Ok(Parsed::Partial)
        };
    };
    let line = &buf[..line_end];
    let parts: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    match parts.as_slice() {
        [_, _, v]
            if v.len() == 8
                && v.starts_with(b"HTTP/")
                && v[5].is_ascii_digit()
                && v[6] == b'.'
                && v[7].is_ascii_digit() =>
        {
            Err(HttpError::UnsupportedVersion)
        }
        _ => Err(HttpError::BadRequest("invalid request line")),
    }
}

/// Why a head that fills `view` (the first `max_head_bytes`) without ending is refused: `414`
/// if its request target begins in it and does not end there (RFC 9110 §15.5.15), else `431`
/// (a method that does not end, or nothing but empty lines, is no long target). Decided on
/// `view` alone, so the answer does not depend on how the bytes were split into reads.
#[cold]
fn over_the_cap(view: &[u8]) -> HttpError {
    // Empty lines before the request line are skipped (RFC 9112 §2.2), as httparse does.
    let line = &view[view
        .iter()
        .take_while(|&&b| matches!(b, b'\r' | b'\n'))
        .count()..];
    let target_too_long = line
        .iter()
        .position(|&b| b == b' ')
        .is_some_and(|method_end| {
            !line[method_end + 1..]
                .iter()
                .any(|&b| matches!(b, b' ' | b'\r' | b'\n'))
        });
    if target_too_long {
        HttpError::UriTooLong
    } else {
        HttpError::HeadTooLarge
    }
}

/// httparse accepts a bare LF as a line break (RFC 9112 §2.2 allows it); this server refuses
/// it, because a proxy in front that does not would read different header lines than we do.
/// A bare CR is already an httparse error.
fn bare_line_break(head: &[u8]) -> Option<&'static str> {
    let mut prev = 0u8;
    for &b in head {
        if b == b'\n' && prev != b'\r' {
            return Some("bare LF in request head");
        }
        prev = b;
    }
    None
}

#[cold]
fn bad_head_reason(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status",
        httparse::Error::Token => "invalid token in request line",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "invalid HTTP version",
    }
}

fn route_of(target: &str) -> Route {
    // The absolute form (`http://host/ingest`), which RFC 9112 §3.2.2 says a server must
    // accept, names the same path; the authority does not select anything here.
    let scheme = |s: &str| {
        target
            .get(..s.len())
            .filter(|p| p.eq_ignore_ascii_case(s))
            .map(|_| &target[s.len()..])
    };
    // The authority ends at the first `/`, `?` or `#` (RFC 3986 §3.2): in `http://x?/ingest`
    // the path is empty and `/ingest` is the query, so a proxy in front sees `/` there.
    let path = match scheme("http://").or_else(|| scheme("https://")) {
        Some(rest) => match rest.find(['/', '?', '#']) {
            Some(i) if rest.as_bytes()[i] == b'/' => &rest[i..],
            _ => "/",
        },
        None => target,
    };
    // The query string does not select a route.
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    match path {
        "/ingest" => Route::Ingest,
        "/v1/traces" => Route::OtlpTraces,
        "/health" => Route::Health,
        "/ready" => Route::Ready,
        "/metrics" => Route::Metrics,
        _ => Route::NotFound,
    }
}

/// `Content-Length = 1*DIGIT`; no sign, no spaces inside, no overflow.
fn parse_content_length(value: &[u8]) -> Result<u64, HttpError> {
    let v = trim(value);
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(HttpError::BadRequest("invalid Content-Length"));
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let Some(start) = start else { return &[] };
    let end = v
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(start);
    &v[start..=end]
}

fn trimmed_range(value: &[u8], base: usize) -> Range<usize> {
    let t = trim(value);
    let start = if t.is_empty() {
        value.as_ptr() as usize - base
    } else {
        t.as_ptr() as usize - base
    };
    start..start + t.len()
}

/// Incremental, in-place decoder of a chunked body.
///
/// The raw chunked bytes and the decoded body share one buffer region: chunk data is moved down
/// over the chunk-size lines as it is decoded (`write <= read` always), so the decoded body ends
/// up contiguous at the start of the region without a second buffer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ChunkedDecoder {
    /// Next raw byte to look at, relative to the body start.
    read: usize,
    /// End of the decoded body so far, relative to the body start.
    write: usize,
    /// Data bytes left in the current chunk.
    remaining: u64,
    /// Where the trailer section starts, relative to the body start.
    trailers_from: usize,
    state: ChunkState,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Expecting a chunk-size line.
    #[default]
    Size,
    /// Inside chunk data (`remaining` bytes to go).
    Data,
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// After the last chunk: trailer fields, then an empty line.
    Trailers,
}

/// Longest chunk-size line accepted, extensions included.
const MAX_CHUNK_LINE: usize = 4096;
/// Most bytes of trailer fields accepted, all lines together (they are read and ignored).
const MAX_TRAILERS: usize = 16 * 1024;
/// Framing (chunk-size lines with their extensions, CRLFs, trailers) accepted beyond one byte
/// per byte of data. The cap on the body counts decoded bytes, and the raw bytes stay in the
/// connection's buffer until the body is complete, so without this a client could make it
/// hold gigabytes for a small body: 1-byte chunks with 4 KiB extensions, or endless trailers.
const FRAMING_ALLOWANCE: usize = 64 * 1024;

/// A finished body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramedBody {
    /// Decoded body length (at the start of the region).
    pub body_len: usize,
    /// Raw bytes the body took on the wire (a chunked one's framing and trailers included):
    /// the next pipelined request starts this far after the head.
    pub raw_len: usize,
}

/// Where a request's body ends, looking at the bytes read so far after its head (`region`):
/// `Partial` until all of it is there, then the decoded body (at the start of `region`, where
/// a chunked one is de-chunked in place) and the raw bytes it took. `decoder` carries a
/// chunked body's progress from one call to the next; a fresh one per request. The
/// connection loop reads bodies with this, and the fuzz harness frames pipelined requests
/// with it, so the harness runs the server's own framing.
pub fn frame_body(
    framing: Framing,
    decoder: &mut ChunkedDecoder,
    region: &mut [u8],
    max_body: u64,
) -> Result<Parsed<FramedBody>, HttpError> {
    match framing {
        Framing::None => Ok(Parsed::Complete(FramedBody {
            body_len: 0,
            raw_len: 0,
        })),
        Framing::Length(n) if n > max_body => Err(HttpError::BodyTooLarge),
        Framing::Length(n) if (region.len() as u64) < n => Ok(Parsed::Partial),
        Framing::Length(n) => Ok(Parsed::Complete(FramedBody {
            body_len: n as usize,
            raw_len: n as usize,
        })),
        Framing::Chunked => decoder.advance(region, max_body),
    }
}

impl ChunkedDecoder {
    /// Decodes as far as `region` (the bytes read so far after the head) allows.
    pub fn advance(
        &mut self,
        region: &mut [u8],
        max_body: u64,
    ) -> Result<Parsed<FramedBody>, HttpError> {
        loop {
            match self.state {
                ChunkState::Size => {
                    let Some(line_end) = find_crlf(&region[self.read..], MAX_CHUNK_LINE)? else {
                        return Ok(Parsed::Partial);
                    };
                    let line = &region[self.read..self.read + line_end];
                    let size = parse_chunk_size(line)?;
                    self.read += line_end + 2;
                    self.check_framing()?;
                    if size == 0 {
                        self.trailers_from = self.read;
                        self.state = ChunkState::Trailers;
                    } else {
                        if (self.write as u64).saturating_add(size) > max_body {
                            return Err(HttpError::BodyTooLarge);
                        }
                        self.remaining = size;
                        self.state = ChunkState::Data;
                    }
                }
                ChunkState::Data => {
                    let available = region.len() - self.read;
                    if available == 0 {
                        return Ok(Parsed::Partial);
                    }
                    let n = (self.remaining.min(available as u64)) as usize;
                    region.copy_within(self.read..self.read + n, self.write);
                    self.read += n;
                    self.write += n;
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        self.state = ChunkState::DataEnd;
                    } else {
                        return Ok(Parsed::Partial);
                    }
                }
                ChunkState::DataEnd => {
                    if region.len() - self.read < 2 {
                        return Ok(Parsed::Partial);
                    }
                    if &region[self.read..self.read + 2] != b"\r\n" {
                        return Err(HttpError::BadRequest("chunk data not followed by CRLF"));
                    }
                    self.read += 2;
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailers => {
                    // Each line may take what the lines before it left of `MAX_TRAILERS`, so
                    // the section as a whole is bounded, not each line.
                    let left = MAX_TRAILERS - (self.read - self.trailers_from).min(MAX_TRAILERS);
                    let found = find_crlf(&region[self.read..], left).map_err(|e| match e {
                        TOO_LONG => HttpError::BadRequest("trailer section over 16 KiB"),
                        e => e,
                    });
                    let Some(line_end) = found? else {
                        return Ok(Parsed::Partial);
                    };
                    let line = &region[self.read..self.read + line_end];
                    if !line.is_empty() && !is_valid_trailer(line) {
                        return Err(HttpError::BadRequest("malformed trailer field"));
                    }
                    self.read += line_end + 2;
                    self.check_framing()?;
                    if line.is_empty() {
                        return Ok(Parsed::Complete(FramedBody {
                            body_len: self.write,
                            raw_len: self.read,
                        }));
                    }
                }
            }
        }
    }

    /// Refuses a body whose framing outweighs its data by more than `FRAMING_ALLOWANCE`.
    fn check_framing(&self) -> Result<(), HttpError> {
        let framing = self.read - self.write;
        if framing > self.write.saturating_add(FRAMING_ALLOWANCE) {
            return Err(HttpError::BadRequest(
                "chunked framing (chunk lines, extensions, trailers) larger than the data it carries",
            ));
        }
        Ok(())
    }

    /// Decoded bytes so far.
    pub fn decoded_len(&self) -> usize {
        self.write
    }
}

/// `find_crlf`'s answer to a line past its bound.
const TOO_LONG: HttpError = HttpError::BadRequest("chunk line too long");

/// Position of the first CRLF, `None` if not there yet; a bare LF or an overlong line is an
/// error.
fn find_crlf(bytes: &[u8], max_line: usize) -> Result<Option<usize>, HttpError> {
    let window = &bytes[..bytes.len().min(max_line + 2)];
    match window.iter().position(|&b| b == b'\n') {
        Some(0) => Err(HttpError::BadRequest("bare LF in chunked body")),
        Some(i) if window[i - 1] == b'\r' => {
            if window[..i - 1].contains(&b'\r') {
                Err(HttpError::BadRequest("bare CR in chunked body"))
            } else {
                Ok(Some(i - 1))
            }
        }
        Some(_) => Err(HttpError::BadRequest("bare LF in chunked body")),
        None if bytes.len() > max_line + 1 => Err(TOO_LONG),
        None => Ok(None),
    }
}

/// `chunk-size [ chunk-ext ] `: hex digits, then optionally `;name[=value]` extensions, which
/// are ignored but must be well formed tokens or quoted strings.
fn parse_chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let digits = line
        .iter()
        .take_while(|&&b| hex::digit(b).is_some())
        .count();
    if digits == 0 {
        return Err(HttpError::BadRequest("invalid chunk size"));
    }
    // Leading zeros are allowed, but the value must fit in 64 bits.
    let significant = line[..digits].iter().skip_while(|&&b| b == b'0').count();
    if significant > 15 {
        return Err(HttpError::BodyTooLarge);
    }
    let size = line[..digits]
        .iter()
        .fold(0u64, |n, &b| n << 4 | u64::from(hex::digit(b).unwrap_or(0)));
    let rest = &line[digits..];
    if !valid_chunk_ext(rest) {
        return Err(HttpError::BadRequest("invalid chunk extension"));
    }
    Ok(size)
}

pub(super) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `*( BWS ";" BWS ext-name [ BWS "=" BWS ( token / quoted-string ) ] )`
fn valid_chunk_ext(mut s: &[u8]) -> bool {
    let skip_ws = |s: &mut &[u8]| {
        while let [b' ' | b'\t', rest @ ..] = *s {
            *s = rest;
        }
    };
    let take_token = |s: &mut &[u8]| -> bool {
        let n = s.iter().take_while(|&&b| is_tchar(b)).count();
        *s = &s[n..];
        n > 0
    };
    loop {
        if s.is_empty() {
            return true;
        }
        // BWS is allowed before `;` only: `5 ` alone is not a chunk-size line.
        skip_ws(&mut s);
        if s.first() != Some(&b';') {
            return false;
        }
        s = &s[1..];
        skip_ws(&mut s);
        if !take_token(&mut s) {
            return false;
        }
        skip_ws(&mut s);
        if let [b'=', rest @ ..] = s {
            s = rest;
            skip_ws(&mut s);
            if let [b'"', rest @ ..] = s {
                s = rest;
                loop {
                    match s {
                        [b'"', rest @ ..] => {
                            s = rest;
                            break;
                        }
                        [b'\\', c, rest @ ..] if *c == b'\t' || *c >= 0x20 && *c != 0x7f => {
                            s = rest
                        }
                        [c, rest @ ..] if *c == b'\t' || (*c >= 0x20 && *c != 0x7f) => s = rest,
                        _ => return false,
                    }
                }
            } else if !take_token(&mut s) {
                return false;
            }
        }
    }
}

/// `field-name ":" OWS field-value OWS` with a token name and visible or blank value bytes.
fn is_valid_trailer(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    colon > 0
        && line[..colon].iter().all(|&b| is_tchar(b))
        && line[colon + 1..]
            .iter()
            .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod tests;
