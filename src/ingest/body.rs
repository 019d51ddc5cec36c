//! `PaddedBody`: a request body followed by the padding simd-json needs to parse it where it
//! lies, so the JSON front ends make no copy of it.
//!
//! simd-json reads whole SIMD words, so a parse in place needs `BODY_PADDING` readable bytes
//! after the body. Their content does not matter and the parse leaves them as they were
//! (`simd_json::fill_tape_padded`), so the padding may be the start of the next pipelined
//! request, what is left of a chunked body's framing after de-chunking in place, or spaces
//! added for the purpose. The connection's buffer (`server/conn/input.rs`) and the decompressor's
//! output buffer (`compress.rs`) hand bodies over in this form.

/// Bytes that must follow a body, of any content: simd-json's `INPUT_PADDING`.
pub const BODY_PADDING: usize = simd_json::INPUT_PADDING;

/// A body of `len` bytes at the start of a buffer that holds at least `BODY_PADDING` more.
#[derive(Debug)]
pub struct PaddedBody<'a> {
    /// The body, then the padding (and possibly more).
    buf: &'a mut [u8],
    /// The body's length.
    len: usize,
}

impl<'a> PaddedBody<'a> {
    /// The body `buf[..len]`, with `buf[len..]` as its padding.
    ///
    /// # Panics
    ///
    /// If `buf` holds fewer than `len + BODY_PADDING` bytes.
    pub fn new(buf: &'a mut [u8], len: usize) -> PaddedBody<'a> {
        assert!(
            buf.len().saturating_sub(len) >= BODY_PADDING,
            "a padded body needs {BODY_PADDING} bytes after its {len} (buffer of {})",
            buf.len()
        );
        PaddedBody { buf, len }
    }

    /// The whole of `vec` as the body, after appending the padding (spaces) to `vec`. For
    /// tests, benches and tools that hold a body in a `Vec` of its own.
    pub fn pad(vec: &'a mut Vec<u8>) -> PaddedBody<'a> {
        let len = vec.len();
        vec.resize(len + BODY_PADDING, b' ');
        PaddedBody::new(vec, len)
    }

    /// The body's length.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The body's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The body's bytes, for a reader that needs no padding; they keep the body's lifetime.
    pub fn into_bytes(self) -> &'a mut [u8] {
        &mut self.buf[..self.len]
    }

    /// The same body without its first `n` bytes (a byte-order mark).
    pub fn skip(self, n: usize) -> PaddedBody<'a> {
        let n = n.min(self.len);
        PaddedBody {
            buf: &mut self.buf[n..],
            len: self.len - n,
        }
    }

    /// The buffer (body then padding) and the body's length, for the parser.
    pub fn into_parts(self) -> (&'a mut [u8], usize) {
        (self.buf, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padding_follows_the_body() {
        let mut v = b"{}".to_vec();
        let body = PaddedBody::pad(&mut v);
        assert_eq!(body.bytes(), b"{}");
        let (buf, len) = body.skip(1).into_parts();
        assert_eq!((len, buf.len()), (1, 1 + BODY_PADDING));
        assert_eq!(v.len(), 2 + BODY_PADDING);
    }

    #[test]
    #[should_panic(expected = "a padded body needs")]
    fn a_buffer_without_room_for_the_padding_is_refused() {
        let mut v = vec![0u8; BODY_PADDING + 1];
        PaddedBody::new(&mut v, 2);
    }
}
