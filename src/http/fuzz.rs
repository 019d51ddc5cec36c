//! Fuzz property of request framing (tests and fuzzing only): any bytes, framed whole or
//! split at arbitrary points, give the same requests, each framed where a plain reading of
//! the bytes frames it, and never panic.

use super::request::{
    frame_body, parse_head, ChunkedDecoder, Framing, Head, HttpError, Limits, Parsed,
};

/// One request framed from bytes already read: the head, the decoded body, and how many
/// bytes it took (the next pipelined request starts right after them).
#[derive(Debug, PartialEq, Eq)]
pub struct Framed {
    pub head: Head,
    pub body: Vec<u8>,
    pub consumed: usize,
}

/// Why framing stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Every byte so far framed, or a request begun and not complete: the connection waits.
    MoreBytes,
    /// The last request framed does not keep the connection alive: nothing after it is read.
    Close,
    /// A head or body the parser refused: the connection answers it and closes.
    Refused(HttpError),
}

/// The requests framed in turn from one connection's bytes, and why framing stopped.
#[derive(Debug, PartialEq, Eq)]
pub struct Frames {
    pub requests: Vec<Framed>,
    pub end: End,
}

/// Frames every request pipelined in `data`, as the connection loop does: a head, then its
/// body (`Content-Length` or chunked, through the server's `frame_body`), then the next
/// request from the bytes left over, until a request that closes the connection, a refusal,
/// or the end of the bytes. The bytes are fed in pieces ending at each of `cuts` (then the
/// whole), as a connection receiving those reads would.
pub fn frame_in_pieces(data: &[u8], cuts: &[usize], limits: &Limits) -> Frames {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    ends.sort_unstable();
    ends.push(data.len());
    let mut buf: Vec<u8> = Vec::with_capacity(data.len());
    let mut fed = 0;
    // Where the request being framed starts in `buf`.
    let mut start = 0;
    let mut head: Option<Head> = None;
    let mut decoder = ChunkedDecoder::default();
    let mut requests = Vec::new();
    let end = |requests, end| Frames { requests, end };
    for piece_end in ends {
        if piece_end < fed {
            continue;
        }
        buf.extend_from_slice(&data[fed..piece_end]);
        fed = piece_end;
        loop {
            if head.is_none() {
                match parse_head(&buf[start..], limits) {
                    Err(e) => return end(requests, End::Refused(e)),
                    Ok(Parsed::Partial) => break,
                    Ok(Parsed::Complete(h)) => head = Some(h),
                }
            }
            let h = head.as_ref().expect("set above");
            let region = &mut buf[start + h.len..];
            match frame_body(h.framing, &mut decoder, region, limits.max_body_bytes) {
                Err(e) => return end(requests, End::Refused(e)),
                Ok(Parsed::Partial) => break,
                Ok(Parsed::Complete(b)) => {
                    let h = head.take().expect("set above");
                    let body_start = start + h.len;
                    let body = buf[body_start..body_start + b.body_len].to_vec();
                    let consumed = h.len + b.raw_len;
                    start += consumed;
                    decoder = ChunkedDecoder::default();
                    let keep_alive = h.keep_alive;
                    requests.push(Framed {
                        head: h,
                        body,
                        consumed,
                    });
                    if !keep_alive {
                        return end(requests, End::Close);
                    }
                }
            }
        }
    }
    end(requests, End::MoreBytes)
}

/// Fuzz property: framing `data` whole and split at points chosen by its first bytes gives the
/// same requests and the same end, and never panics; each request framed is framed where a
/// plain reading of the same bytes frames it.
pub fn fuzz_split_equivalence(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let (control, data) = data.split_at(2);
    let limits = Limits {
        max_head_bytes: 2048,
        max_headers: 16,
        max_body_bytes: 4096,
    };
    let whole = frame_in_pieces(data, &[], &limits);
    let a = control[0] as usize * data.len() / 256;
    let b = a + (control[1] as usize * (data.len() - a)) / 256;
    let split = frame_in_pieces(data, &[a, b], &limits);
    let bytewise: Vec<usize> = (1..data.len().min(300)).collect();
    let tiny = frame_in_pieces(data, &bytewise, &limits);
    assert_eq!(whole, split, "split at {a},{b} changed the result");
    assert_eq!(whole, tiny, "byte-by-byte feeding changed the result");
    check_plain_reading(data, &whole, &limits);
}

/// Walks `data` as a plain reader would, request by request, and checks that each request
/// the parser framed has the head length, framing, connection persistence, body and end the
/// plain reading gives, that where the parser waits for more bytes the plain reading finds no
/// complete request either, and that where it refuses, what it refused is not a request
/// plainly well formed and within `limits` (`plainly_acceptable`).
fn check_plain_reading(data: &[u8], framed: &Frames, limits: &Limits) {
    let mut at = 0;
    for (i, r) in framed.requests.iter().enumerate() {
        let rest = &data[at..];
        let head_len = plain_head_len(rest);
        assert_eq!(head_len, Some(r.head.len), "request {i} at {at}: head end");
        let head = &rest[..r.head.len];
        assert_eq!(
            plain_framing(head),
            Some(r.head.framing),
            "request {i} at {at}: framing another reader of the same head lines would not agree with"
        );
        assert_eq!(
            plain_keep_alive(head),
            r.head.keep_alive,
            "request {i} at {at}: whether the connection stays open"
        );
        let body = plain_body(r.head.framing, &rest[r.head.len..]);
        let Plain::Complete(body, raw) = body else {
            panic!("request {i} at {at}: framed, but its body is {body:?} to a plain reading");
        };
        assert_eq!(r.body, body, "request {i} at {at}: body");
        assert_eq!(
            r.consumed,
            r.head.len + raw,
            "request {i} at {at}: where it ends"
        );
        at += r.consumed;
    }
    if let End::Refused(e) = &framed.end {
        assert!(
            !plainly_acceptable(&data[at..], limits),
            "refused ({e:?}) a request at {at} that is plainly well formed and within the limits"
        );
    }
    if framed.end == End::MoreBytes {
        // Everything after the last request framed is a request still arriving.
        let rest = &data[at..];
        if let Some(len) = plain_head_len(rest) {
            if let Some(framing) = plain_framing(&rest[..len]) {
                if let Plain::Complete(..) = plain_body(framing, &rest[len..]) {
                    panic!("a whole request at {at} left waiting for more bytes");
                }
            }
        }
    }
}

/// Whether `bytes` begin with a whole request in a narrow form every reader accepts and the
/// parser must too: a request line of an upper-case method, an origin-form target of URI
/// characters and `HTTP/1.0` or `HTTP/1.1`; header lines of a token, a colon and visible
/// ASCII, spaces and tabs; no `Expect` but `100-continue`; lengths of at most 10 digits and
/// framing `plain_framing` accepts;
/// head and body within `limits`; chunk lines of at most 15 hex digits with `;token[=token]`
/// extensions, and trailers of the header lines' form. Anything outside that form, well formed
/// or not, is not judged (`false`).
fn plainly_acceptable(bytes: &[u8], limits: &Limits) -> bool {
    let Some(head_len) = plain_head_len(bytes) else {
        return false;
    };
    if head_len > limits.max_head_bytes {
        return false;
    }
    let head = &bytes[..head_len];
    // Every line with its CR, the empty one ending the head left out.
    let Some(mut text) = head.strip_suffix(b"\n\r\n") else {
        return false;
    };
    while let Some(rest) = text.strip_prefix(b"\r\n") {
        text = rest;
    }
    let mut lines = text.split(|&b| b == b'\n');
    let Some(request_line) = lines.next() else {
        return false;
    };
    let Some(request_line) = request_line.strip_suffix(b"\r") else {
        return false;
    };
    let parts: Vec<&[u8]> = request_line.split(|&b| b == b' ').collect();
    let [method, target, version] = parts[..] else {
        return false;
    };
    let uri_char = |b: &u8| b.is_ascii_alphanumeric() || b"-._~/?=&%+:@!$'()*,;".contains(b);
    if method.is_empty()
        || !method.iter().all(u8::is_ascii_uppercase)
        || !target.starts_with(b"/")
        || !target.iter().all(uri_char)
        || !matches!(version, b"HTTP/1.0" | b"HTTP/1.1")
    {
        return false;
    }
    let mut fields = 0;
    // The key headers' values: a second copy with another value is refused (`parse_head`).
    let (mut authorization, mut api_key): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    for line in lines {
        let Some(line) = line.strip_suffix(b"\r") else {
            return false;
        };
        if !plain_field(line) {
            return false;
        }
        let colon = line.iter().position(|&b| b == b':').unwrap_or(0);
        let (name, value) = (&line[..colon], ows(&line[colon + 1..]));
        if name.eq_ignore_ascii_case(b"expect") && !value.eq_ignore_ascii_case(b"100-continue") {
            return false;
        }
        for (key, seen) in [
            (&b"authorization"[..], &mut authorization),
            (&b"x-api-key"[..], &mut api_key),
        ] {
            if name.eq_ignore_ascii_case(key) {
                if seen.is_some_and(|v| v != value) {
                    return false;
                }
                *seen = Some(value);
            }
        }
        // A length of more than 10 digits (leading zeros) is not judged.
        if name.eq_ignore_ascii_case(b"content-length")
            && value.split(|&b| b == b',').any(|n| ows(n).len() > 10)
        {
            return false;
        }
        fields += 1;
    }
    if fields > limits.max_headers {
        return false;
    }
    match plain_framing(head) {
        Some(Framing::Length(n)) => {
            n <= limits.max_body_bytes && (bytes.len() - head_len) as u64 >= n
        }
        Some(Framing::None) => true,
        Some(Framing::Chunked) => plain_chunked_within(&bytes[head_len..], limits.max_body_bytes),
        None => false,
    }
}

/// `token ":" OWS value OWS` with visible ASCII, spaces and tabs in the value.
fn plain_field(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    colon > 0
        && line[..colon].iter().all(|&b| super::request::is_tchar(b))
        && line[colon + 1..]
            .iter()
            .all(|&b| b == b' ' || b == b'\t' || b.is_ascii_graphic())
}

/// A whole chunked body in the narrow form `plainly_acceptable` describes, decoding to at most
/// `max_body` bytes: chunk lines of at most 256 bytes, trailers of at most 1 KiB, 64 KiB in all
/// (well inside the parser's bounds on each).
fn plain_chunked_within(bytes: &[u8], max_body: u64) -> bool {
    let line =
        |from: usize| crlf_line(bytes, from).filter(|l| !l.contains(&b'\r') && !l.contains(&b'\n'));
    let (mut at, mut decoded) = (0usize, 0u64);
    loop {
        let Some(size_line) = line(at) else {
            return false;
        };
        at += size_line.len() + 2;
        let hex = size_line
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        let ext_ok = size_line[hex..].split(|&b| b == b';').skip(1).all(|ext| {
            let mut halves = ext.splitn(2, |&b| b == b'=');
            halves.all(|t| !t.is_empty() && t.iter().all(|&b| super::request::is_tchar(b)))
        });
        if hex == 0
            || hex > 15
            || size_line.len() > 256
            || !(size_line.len() == hex || size_line[hex] == b';')
            || !ext_ok
        {
            return false;
        }
        let Ok(size) = u64::from_str_radix(std::str::from_utf8(&size_line[..hex]).unwrap(), 16)
        else {
            return false;
        };
        if size == 0 {
            break;
        }
        decoded += size;
        if decoded > max_body || ((bytes.len() - at) as u64) < size + 2 {
            return false;
        }
        at += size as usize;
        if &bytes[at..at + 2] != b"\r\n" {
            return false;
        }
        at += 2;
    }
    let trailers_from = at;
    loop {
        let Some(trailer) = line(at) else {
            return false;
        };
        at += trailer.len() + 2;
        if trailer.is_empty() {
            return at <= 64 * 1024;
        }
        if !plain_field(trailer) || at - trailers_from > 1024 {
            return false;
        }
    }
}

/// Where a head ends to a plain reading: after the empty lines before the request line
/// (RFC 9112 §2.2), at the first empty line.
fn plain_head_len(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while bytes[from..].starts_with(b"\r\n") {
        from += 2;
    }
    let end = bytes[from..].windows(4).position(|w| w == b"\r\n\r\n")?;
    Some(from + end + 4)
}

/// A body to a plain reading.
#[derive(Debug)]
enum Plain {
    /// The decoded body and the raw bytes it took.
    Complete(Vec<u8>, usize),
    /// Not all of it there.
    Incomplete,
    /// Not a body a plain reader could frame.
    Malformed,
}

/// The bytes from `from` up to the next CRLF, if one follows.
fn crlf_line(bytes: &[u8], from: usize) -> Option<&[u8]> {
    let n = bytes[from..].windows(2).position(|w| w == b"\r\n")?;
    Some(&bytes[from..from + n])
}

/// A body framed by its head's framing, read as RFC 9112 §7.1 says: a chunk-size line (hex,
/// then extensions that are skipped), that many bytes and CRLF, until a zero size; then
/// trailer lines until an empty one.
fn plain_body(framing: Framing, bytes: &[u8]) -> Plain {
    match framing {
        Framing::None => Plain::Complete(Vec::new(), 0),
        Framing::Length(n) => match usize::try_from(n) {
            Ok(n) if n <= bytes.len() => Plain::Complete(bytes[..n].to_vec(), n),
            _ => Plain::Incomplete,
        },
        Framing::Chunked => {
            let line = |from: usize| crlf_line(bytes, from);
            let mut body = Vec::new();
            let mut at = 0;
            loop {
                let Some(size_line) = line(at) else {
                    return Plain::Incomplete;
                };
                at += size_line.len() + 2;
                let hex = size_line
                    .iter()
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
                let Ok(size) = std::str::from_utf8(&size_line[..hex])
                    .map_err(|_| ())
                    .and_then(|h| usize::from_str_radix(h, 16).map_err(|_| ()))
                else {
                    return Plain::Malformed;
                };
                if size == 0 {
                    break;
                }
                if bytes.len() - at < size.saturating_add(2) {
                    return Plain::Incomplete;
                }
                body.extend_from_slice(&bytes[at..at + size]);
                at += size;
                if &bytes[at..at + 2] != b"\r\n" {
                    return Plain::Malformed;
                }
                at += 2;
            }
            loop {
                let Some(trailer) = line(at) else {
                    return Plain::Incomplete;
                };
                at += trailer.len() + 2;
                if trailer.is_empty() {
                    return Plain::Complete(body, at);
                }
            }
        }
    }
}

/// Whether a plain reader keeps the connection open after this request: HTTP/1.1 without a
/// `close` among its `Connection` options (this server never keeps HTTP/1.0 alive).
fn plain_keep_alive(head: &[u8]) -> bool {
    let mut lines = head.split(|&b| b == b'\n').skip_while(|l| *l == b"\r");
    let Some(request_line) = lines.next() else {
        return false;
    };
    if !request_line.ends_with(b" HTTP/1.1\r") {
        return false;
    }
    !lines.any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            return false;
        };
        line[..colon].eq_ignore_ascii_case(b"connection")
            && line[colon + 1..]
                .split(|&b| b == b',')
                .any(|t| ows(t).eq_ignore_ascii_case(b"close"))
    })
}

/// The framing an accepted head declares, read without httparse as a strict RFC 9112 reader
/// (a proxy in front) would: lines split at CRLF, no line folding, a field name a token right
/// before its colon, `Content-Length` lists of one repeated value, one `Transfer-Encoding:
/// chunked` and never both. `None` where such a reader would refuse the head or frame it in a
/// way the parser must not accept.
fn plain_framing(head: &[u8]) -> Option<Framing> {
    let text = head.strip_suffix(b"\r\n\r\n")?;
    // Empty lines before the request line are ignored (RFC 9112 §2.2).
    let mut lines = text.split(|&b| b == b'\n').skip_while(|l| *l == b"\r");
    let request_line = lines.next()?;
    let http10 = request_line.ends_with(b" HTTP/1.0\r") || request_line.ends_with(b" HTTP/1.0");
    let (mut length, mut chunked) = (None::<u64>, 0);
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|&b| super::request::is_tchar(b)) {
            return None;
        }
        let value = ows(value);
        if name.eq_ignore_ascii_case(b"content-length") {
            for n in value.split(|&b| b == b',') {
                let n = ows(n);
                if n.is_empty() || !n.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                let n: u64 = std::str::from_utf8(n).ok()?.parse().ok()?;
                if length.is_some_and(|l| l != n) {
                    return None;
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if !value.eq_ignore_ascii_case(b"chunked") {
                return None;
            }
            chunked += 1;
        }
    }
    match (chunked, length) {
        (0, Some(n)) => Some(Framing::Length(n)),
        (0, None) => Some(Framing::None),
        (1, None) if !http10 => Some(Framing::Chunked),
        _ => None,
    }
}

/// Optional whitespace is spaces and tabs only.
fn ows(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let start = start.unwrap_or(v.len());
    let end = v.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    &v[start..end.map_or(start, |e| e + 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `http_request` target: two `Authorization` headers with different values
    /// are refused (`parse_head`), and the plain reading must not take such a request for one
    /// every reader accepts.
    #[test]
    fn regression_two_different_key_headers_are_not_plainly_acceptable() {
        for twice in [
            &b"Authorization: Bearer a\r\nAuthorization: Bearer b"[..],
            &b"x-api-key: a\r\nX-Api-Key: b"[..],
        ] {
            let mut data = b"\0\0POST /ingest HTTP/1.1\r\n".to_vec();
            data.extend_from_slice(twice);
            data.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
            fuzz_split_equivalence(&data);
        }
        // The same value twice is one value, and the request is taken.
        fuzz_split_equivalence(
            b"\0\0POST /ingest HTTP/1.1\r\nx-api-key: a\r\nx-api-key:  a\r\nContent-Length: 0\r\n\r\n",
        );
    }

    /// The independent reading frames what a strict reader would, and refuses what the parser
    /// must never accept (so an accepted smuggling shape fails the property).
    #[test]
    fn plain_framing_reads_heads_as_a_strict_reader() {
        let cases: &[(&[u8], Option<Framing>)] = &[
            (b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", Some(Framing::None)),
            (b"\r\nPOST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", Some(Framing::Length(5))),
            (b"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\ncontent-length:5\r\n\r\n", Some(Framing::Length(5))),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding:\tchunked \r\n\r\n", Some(Framing::Chunked)),
            (b"POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n", None),
            (b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", None),
            (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", None),
            (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", None),
            (b"POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\n", None),
            (b"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", None),
            (b"POST / HTTP/1.1\r\nX: a\r\n Content-Length: 5\r\n\r\n", None),
        ];
        for (head, want) in cases {
            assert_eq!(
                plain_framing(head),
                *want,
                "{}",
                String::from_utf8_lossy(head)
            );
        }
        // Each head the parser accepts passes the whole property.
        for (head, _) in cases {
            let mut input = vec![0x40, 0x80];
            input.extend_from_slice(head);
            input.extend_from_slice(b"5\r\nhello\r\n0\r\n\r\n");
            fuzz_split_equivalence(&input);
        }
    }

    /// The narrow form the refusal check judges: whole requests every reader takes, and
    /// nothing outside it.
    #[test]
    fn plainly_acceptable_is_a_narrow_form_of_whole_requests() {
        let limits = Limits {
            max_head_bytes: 2048,
            max_headers: 16,
            max_body_bytes: 4096,
        };
        let accepted: &[&[u8]] = &[
            b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n",
            b"\r\nPOST /ingest?x=1 HTTP/1.0\r\nContent-Length: 3, 3\r\nExpect: 100-continue\r\n\r\nabc",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b;c\r\nabc\r\n0\r\nT: v\r\n\r\n",
        ];
        for r in accepted {
            assert!(
                plainly_acceptable(r, &limits),
                "{}",
                String::from_utf8_lossy(r)
            );
            // And the parser takes each.
            let framed = frame_in_pieces(r, &[], &limits);
            assert_eq!(framed.requests.len(), 1, "{}", String::from_utf8_lossy(r));
        }
        let big_head = [&b"GET / HTTP/1.1\r\nX: "[..], &[b'a'; 2048], b"\r\n\r\n"].concat();
        let many = [&b"GET / HTTP/1.1\r\n"[..], &b"X: 1\r\n".repeat(17), b"\r\n"].concat();
        let not_judged: &[&[u8]] = &[
            b"GET /health HTTP/1.1\r\nHost: t\r\n",
            b"get / HTTP/1.1\r\n\r\n",
            b"GET  / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/2.0\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: \x80\r\n\r\n",
            b"GET / HTTP/1.1\r\nExpect: nothing\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 00000000005\r\n\r\nabcde",
            b"POST / HTTP/1.1\r\nContent-Length: 4097\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3 ;a\r\nabc\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n",
            &big_head,
            &many,
        ];
        for r in not_judged {
            assert!(
                !plainly_acceptable(r, &limits),
                "{}",
                String::from_utf8_lossy(r)
            );
        }
    }

    /// Requests pipelined in one read are framed in turn, each from the bytes the one before
    /// left, until one that closes the connection: what follows it is never read.
    #[test]
    fn pipelined_requests_are_framed_in_turn() {
        let first = b"POST /ingest HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        let second = b"\r\nPOST /v1/traces HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
            3;e=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n";
        let third = b"GET /health HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n";
        let data = [&first[..], second, third, b"GARBAGE\r\n\r\n"].concat();
        let framed = frame_in_pieces(&data, &[], &Limits::default());
        assert_eq!(framed.end, End::Close);
        let got: Vec<(&[u8], usize)> = framed
            .requests
            .iter()
            .map(|r| (&r.body[..], r.consumed))
            .collect();
        let want: [(&[u8], usize); 3] = [
            (b"hello", first.len()),
            (b"abcde", second.len()),
            (b"", third.len()),
        ];
        assert_eq!(got, want);
        check_plain_reading(&data, &framed, &Limits::default());
        for split in [0x00, 0x40, 0x80, 0xff] {
            let mut input = vec![split, 0x80];
            input.extend_from_slice(&data);
            fuzz_split_equivalence(&input);
        }
        // Without the close, the parser waits for the rest of the fourth request.
        let open = [
            &first[..],
            second,
            b"GET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\n",
        ]
        .concat();
        let framed = frame_in_pieces(&open, &[7, 70], &Limits::default());
        assert_eq!((framed.requests.len(), &framed.end), (3, &End::MoreBytes));
        check_plain_reading(&open, &framed, &Limits::default());
    }

    /// The plain reading finds a request framed one byte short or long, or a body cut wrong,
    /// or a whole request left waiting.
    #[test]
    fn plain_reading_catches_requests_framed_wrong() {
        let data = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n\
            POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\ncdGET / HTTP/1.1\r\n\r\n";
        let framed = frame_in_pieces(data, &[], &Limits::default());
        assert_eq!(framed.requests.len(), 3);
        check_plain_reading(data, &framed, &Limits::default());
        let wrong: [&dyn Fn(&mut Frames); 7] = [
            &|f| f.requests[0].consumed -= 1,
            &|f| f.requests[0].consumed += 1,
            &|f| f.requests[1].body.push(b'G'),
            &|f| f.requests[1].head.len += 1,
            &|f| {
                f.requests.pop();
                f.end = End::MoreBytes;
            },
            // Refusing a plain request, its head or its body.
            &|f| {
                f.requests.pop();
                f.end = End::Refused(HttpError::BadRequest("invalid token in request line"));
            },
            &|f| {
                f.requests.truncate(1);
                f.end = End::Refused(HttpError::BodyTooLarge);
            },
        ];
        for (i, spoil) in wrong.iter().enumerate() {
            let mut framed = frame_in_pieces(data, &[], &Limits::default());
            spoil(&mut framed);
            let caught =
                std::panic::catch_unwind(|| check_plain_reading(data, &framed, &Limits::default()));
            assert!(caught.is_err(), "spoiled framing {i} passed");
        }
    }
}
