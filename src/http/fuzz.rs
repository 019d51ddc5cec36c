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
}
