//! The second pass of `RowBatch::write`: bounds-checked cursors that write each column's
//! values at the end of its head and tail regions.

use std::mem::{self, MaybeUninit};

use super::columns::{COLUMNS, REGIONS};
use super::MetaPairs;

/// Where a region of a batch under construction gets its next bytes: the unwritten rest of it.
/// Every write is bounds-checked (a measuring mistake panics; it never writes out of bounds).
pub(super) struct Cursor<'b>(pub(super) &'b mut [MaybeUninit<u8>]);

impl<'b> Cursor<'b> {
    /// Initialised bytes as what they are anyway: valid `MaybeUninit<u8>`s.
    #[inline]
    pub(super) fn uninit(bytes: &[u8]) -> &[MaybeUninit<u8>] {
        // SAFETY: `[u8]` and `[MaybeUninit<u8>]` have the same layout, and initialised bytes
        // are valid `MaybeUninit<u8>`s.
        unsafe { &*(bytes as *const [u8] as *const [MaybeUninit<u8>]) }
    }

    /// The next `n` bytes, to be written by the caller.
    #[inline]
    pub(super) fn advance(&mut self, n: usize) -> &'b mut [MaybeUninit<u8>] {
        let (dst, rest) = mem::take(&mut self.0).split_at_mut(n);
        self.0 = rest;
        dst
    }

    #[inline]
    pub(super) fn put(&mut self, bytes: &[u8]) {
        copy(self.advance(bytes.len()), bytes);
    }

    #[inline]
    pub(super) fn byte(&mut self, b: u8) {
        let (dst, rest) = mem::take(&mut self.0)
            .split_first_mut()
            .expect("a measured region has room for its bytes");
        dst.write(b);
        self.0 = rest;
    }

    /// A `String` value: varint length, then the bytes.
    #[inline]
    pub(super) fn string(&mut self, s: &str) {
        let mut n = s.len() as u64;
        while n >= 0x80 {
            self.byte(n as u8 | 0x80);
            n >>= 7;
        }
        self.byte(n as u8);
        if !s.is_empty() {
            self.put(s.as_bytes());
        }
    }
}

/// The write cursors of every region of a batch under construction, and each array column's
/// running element count (its next end offset).
pub(super) struct Writer<'b> {
    pub(super) cur: [Cursor<'b>; REGIONS],
    pub(super) elems: [u64; COLUMNS],
}

impl<'b> Writer<'b> {
    /// Region `i`'s cursor, taken out so that a column's loop keeps it in registers; `give`
    /// puts it back.
    #[inline]
    pub(super) fn take(&mut self, i: usize) -> Cursor<'b> {
        Cursor(mem::take(&mut self.cur[i].0))
    }

    #[inline]
    pub(super) fn give(&mut self, i: usize, cursor: Cursor<'b>) {
        self.cur[i] = cursor;
    }

    /// `W` bytes per row into region `i`: one bounds check for the whole chunk.
    #[inline]
    pub(super) fn fixed<T, const W: usize>(
        &mut self,
        i: usize,
        rows: &[T],
        mut value: impl FnMut(&T) -> [u8; W],
    ) {
        let dst = self.cur[i].advance(rows.len() * W);
        for (d, r) in dst.chunks_exact_mut(W).zip(rows) {
            d.copy_from_slice(Cursor::uninit(&value(r)));
        }
    }

    /// An `Array` column: `values` writes a row's elements into the tail and says how many;
    /// the head gets each row's end offset.
    #[inline]
    pub(super) fn array<T>(
        &mut self,
        c: usize,
        rows: &[T],
        mut values: impl FnMut(&T, &mut Cursor<'b>) -> usize,
    ) {
        let mut tail = self.take(2 * c + 1);
        let mut elems = self.elems[c];
        self.fixed::<_, 8>(2 * c, rows, |r| {
            elems += values(r, &mut tail) as u64;
            elems.to_le_bytes()
        });
        self.elems[c] = elems;
        self.give(2 * c + 1, tail);
    }

    /// The keys or the values (`pick`) of each row's metadata, as an `Array(String)`.
    #[inline]
    pub(super) fn metadata<'r, T>(
        &mut self,
        c: usize,
        rows: &[T],
        meta: impl Fn(&T) -> MetaPairs<'r>,
        pick: impl Fn(&(&'r str, &'r str)) -> &'r str,
    ) {
        self.array(c, rows, |r, tail| {
            let pairs = meta(r);
            for pair in pairs.first {
                tail.string(pick(pair));
            }
            for pair in pairs.then {
                tail.string(pick(pair));
            }
            pairs.len()
        });
    }

    /// A `Nullable` column: null flags into the head, values (zero where null) into the tail.
    #[inline]
    pub(super) fn nullable<T, const W: usize>(
        &mut self,
        c: usize,
        rows: &[T],
        value: impl Fn(&T) -> Option<[u8; W]>,
    ) {
        let flags = self.cur[2 * c].advance(rows.len());
        for (f, r) in flags.iter_mut().zip(rows) {
            f.write(u8::from(value(r).is_none()));
        }
        self.fixed::<_, W>(2 * c + 1, rows, |r| value(r).unwrap_or([0; W]));
    }
}

/// Copies `src` into `dst`, which is as long: a string of up to 32 bytes (most of them) in two
/// overlapping moves of a fixed width instead of a call to `memcpy`.
#[inline(always)]
fn copy(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    let src = Cursor::uninit(src);
    match n {
        0..=3 => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = *s;
            }
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=15 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        16..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_writes_every_length_exactly() {
        let src: Vec<u8> = (0..100u8).collect();
        for n in 0..=src.len() {
            // One byte of room on each side, which must stay as it was.
            let mut buf = [MaybeUninit::new(0xAAu8); 102];
            copy(&mut buf[1..1 + n], &src[..n]);
            // SAFETY: every byte of `buf` was initialised above.
            let got: Vec<u8> = buf.iter().map(|b| unsafe { b.assume_init() }).collect();
            assert_eq!(&got[1..1 + n], &src[..n], "{n}");
            assert!(
                got[..1].iter().chain(&got[1 + n..]).all(|&b| b == 0xAA),
                "{n}"
            );
        }
    }
}
