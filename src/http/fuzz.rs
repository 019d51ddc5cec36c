//! Fuzz property of request framing (tests and fuzzing only): any bytes, framed whole or
//! split at arbitrary points, give the same head and body, and never panic.

use super::request::{parse_head, ChunkedDecoder, Framing, Head, HttpError, Limits, Parsed};

/// A whole request framed from bytes already read: the head, the decoded body, and how many
/// bytes it took. What the connection does, minus the socket; used by the fuzz target.
#[derive(Debug, PartialEq, Eq)]
pub struct Framed {
    pub head: Head,
    pub body: Vec<u8>,
    pub consumed: usize,
}

/// Frames one request from `buf`, which is fed to the parser in pieces ending at each of
/// `cuts` (then the whole), as a connection receiving those reads would.
pub fn frame_in_pieces(
    data: &[u8],
    cuts: &[usize],
    limits: &Limits,
) -> Result<Parsed<Framed>, HttpError> {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    ends.sort_unstable();
    ends.push(data.len());
    let mut buf: Vec<u8> = Vec::with_capacity(data.len());
    let mut fed = 0;
    let mut head: Option<Head> = None;
    let mut chunked = ChunkedDecoder::default();
    for end in ends {
        if end < fed {
            continue;
        }
        buf.extend_from_slice(&data[fed..end]);
        fed = end;
        if head.is_none() {
            match parse_head(&buf, limits)? {
                Parsed::Partial => continue,
                Parsed::Complete(h) => head = Some(h),
            }
        }
        let h = head.as_ref().expect("set above");
        match h.framing {
            Framing::None => {
                return Ok(Parsed::Complete(Framed {
                    head: h.clone(),
                    body: Vec::new(),
                    consumed: h.len,
                }))
            }
            Framing::Length(n) => {
                if n > limits.max_body_bytes {
                    return Err(HttpError::BodyTooLarge);
                }
                let n = n as usize;
                if buf.len() - h.len >= n {
                    return Ok(Parsed::Complete(Framed {
                        head: h.clone(),
                        body: buf[h.len..h.len + n].to_vec(),
                        consumed: h.len + n,
                    }));
                }
            }
            Framing::Chunked => {
                if let Parsed::Complete(b) =
                    chunked.advance(&mut buf[h.len..], limits.max_body_bytes)?
                {
                    return Ok(Parsed::Complete(Framed {
                        head: h.clone(),
                        body: buf[h.len..h.len + b.body_len].to_vec(),
                        consumed: h.len + b.raw_len,
                    }));
                }
            }
        }
    }
    Ok(Parsed::Partial)
}

/// Fuzz property: framing `data` whole and split at points chosen by its first bytes gives the
/// same result, and never panics.
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
    if let Ok(Parsed::Complete(framed)) = &whole {
        assert_eq!(
            Some(framed.head.framing),
            plain_framing(&data[..framed.head.len]),
            "framing another reader of the same head lines would not agree with"
        );
    }
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
    // Optional whitespace is spaces and tabs only.
    fn ows(v: &[u8]) -> &[u8] {
        let start = v.iter().position(|b| !matches!(b, b' ' | b'\t'));
        let start = start.unwrap_or(v.len());
        let end = v.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
        &v[start..end.map_or(start, |e| e + 1)]
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
