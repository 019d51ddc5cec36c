use std::cell::RefCell;
use std::sync::Arc;

use crate::types::{Marshal, StatBuffer};

// traceingest patch: the send buffer of the last large command on this thread, emptied, for the
// next one. A fresh buffer for every insert block means the kernel faults in every page of it
// again (a third of the flush thread's CPU with 100 MB blocks). Commands are encoded and
// written on the thread that runs the connection, so a thread-local slot is enough.
thread_local! {
    static SPARE: RefCell<Spare> = const {
        RefCell::new(Spare {
            buffer: Vec::new(),
            peak: 0,
            previous_peak: 0,
            commands: 0,
        })
    };
}

struct Spare {
    buffer: Vec<u8>,
    /// Largest command of the current and of the previous 64 given back.
    peak: usize,
    previous_peak: usize,
    commands: usize,
}

/// traceingest patch: below this a buffer is not worth keeping.
const SPARE_MIN_BYTES: usize = 64 << 10;

/// traceingest patch: keeps a written command's buffer for the next `Encoder::reuse` on this
/// thread (the larger of the two is kept). Sizes vary from block to block, so the buffer keeps
/// its size; it is freed only once it is over 4 times the largest of the last 64 to 128
/// commands (a burst is over).
pub(crate) fn give_back(mut buffer: Vec<u8>) {
    let used = buffer.len();
    if buffer.capacity() < SPARE_MIN_BYTES {
        return;
    }
    buffer.clear();
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        spare.peak = spare.peak.max(used);
        spare.commands += 1;
        if spare.commands == 64 {
            spare.previous_peak = spare.peak;
            spare.peak = 0;
            spare.commands = 0;
        }
        if spare.buffer.capacity() < buffer.capacity() {
            spare.buffer = buffer;
        }
        let recent = spare.peak.max(spare.previous_peak);
        if spare.buffer.capacity() > 4 * recent.max(SPARE_MIN_BYTES) {
            spare.buffer = Vec::new();
        }
    });
}

/// traceingest patch: a shared part at least this large is sent from where it is
/// (`Encoder::write_shared`) instead of being copied into the command's buffer; smaller ones
/// are cheaper to copy than to give their own `iovec`.
pub const SHARE_MIN_BYTES: usize = 16 << 10;

/// traceingest patch: an encoded command: its own bytes, and shared parts to be sent in place
/// at given offsets of them (`splices`, in order of offset), so that large column data goes from
/// the caller's buffers straight to the socket.
#[derive(Default)]
pub(crate) struct Packed {
    pub bytes: Vec<u8>,
    /// (offset in `bytes` before which the part goes, the part).
    pub splices: Vec<(usize, Arc<Vec<u8>>)>,
}

impl Packed {
    /// Total length on the wire.
    pub fn len(&self) -> usize {
        self.bytes.len() + self.splices.iter().map(|(_, p)| p.len()).sum::<usize>()
    }

    /// Segment `i` of the command as it goes on the wire: even ones are runs of `bytes`
    /// between splices, odd ones the shared parts; `2 * splices.len() + 1` in all.
    pub fn segment(&self, i: usize) -> &[u8] {
        if i % 2 == 1 {
            return &self.splices[i / 2].1;
        }
        let k = i / 2;
        let start = if k == 0 { 0 } else { self.splices[k - 1].0 };
        let end = self.splices.get(k).map_or(self.bytes.len(), |s| s.0);
        &self.bytes[start..end]
    }

    pub fn segments(&self) -> usize {
        2 * self.splices.len() + 1
    }

    /// `other` after `self`.
    pub fn append(&mut self, other: Packed) {
        let shift = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.splices
            .extend(other.splices.into_iter().map(|(at, p)| (at + shift, p)));
    }
}

impl From<Vec<u8>> for Packed {
    fn from(bytes: Vec<u8>) -> Packed {
        Packed {
            bytes,
            splices: Vec::new(),
        }
    }
}

#[derive(Default)]
pub struct Encoder {
    buffer: Vec<u8>,
    /// traceingest patch: shared parts to send in place (see `Packed`).
    splices: Vec<(usize, Arc<Vec<u8>>)>,
}

impl Encoder {
    pub fn new() -> Self {
        Encoder {
            buffer: Vec::new(),
            splices: Vec::new(),
        }
    }

    /// traceingest patch: an encoder writing into the buffer `give_back` kept, if any.
    pub(crate) fn reuse() -> Self {
        Encoder {
            buffer: SPARE.with(|spare| std::mem::take(&mut spare.borrow_mut().buffer)),
            splices: Vec::new(),
        }
    }

    /// traceingest patch: the bytes of a shared part, sent from where they are when they are
    /// at least `SHARE_MIN_BYTES` (the command keeps the `Arc` until it is written), else
    /// copied.
    pub fn write_shared(&mut self, part: &Arc<Vec<u8>>) {
        if part.len() >= SHARE_MIN_BYTES {
            self.splices.push((self.buffer.len(), Arc::clone(part)));
        } else {
            self.write_bytes(part);
        }
    }

    /// traceingest patch: the command as its own bytes and shared parts.
    pub(crate) fn into_packed(self) -> Packed {
        Packed {
            bytes: self.buffer,
            splices: self.splices,
        }
    }

    // traceingest patch: written straight into the buffer (one byte below 128, the usual case
    // for a string's length), not through a scratch array and `extend_from_slice`.
    pub fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buffer.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buffer.push(v as u8);
    }

    // traceingest patch: room for `additional` more bytes, so a column is encoded without
    // the buffer growing (and copying itself) along the way.
    pub fn reserve(&mut self, additional: usize) {
        self.buffer.reserve(additional);
    }

    pub fn string(&mut self, text: impl AsRef<str>) {
        let bytes = text.as_ref().as_bytes();
        self.byte_string(bytes);
    }

    pub fn byte_string(&mut self, source: impl AsRef<[u8]>) {
        self.uvarint(source.as_ref().len() as u64);
        self.write_bytes(source.as_ref());
    }

    pub fn write<T>(&mut self, value: T)
    where
        T: Copy + Marshal + StatBuffer,
    {
        let mut buffer = T::buffer();
        value.marshal(buffer.as_mut());
        self.write_bytes(buffer.as_ref());
    }

    pub fn write_bytes(&mut self, b: &[u8]) {
        self.buffer.extend_from_slice(b);
    }

    /// All bytes in one buffer (shared parts copied in where they go).
    pub fn get_buffer(self) -> Vec<u8> {
        if self.splices.is_empty() {
            return self.buffer;
        }
        let packed = self.into_packed();
        let mut out = Vec::with_capacity(packed.len());
        for i in 0..packed.segments() {
            out.extend_from_slice(packed.segment(i));
        }
        out
    }

    pub fn get_buffer_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

#[cfg(test)]
mod shared_parts_tests {
    use super::*;

    /// traceingest patch: large shared parts stay out of the command's buffer and are spliced
    /// back in place, in order; small ones are copied.
    #[test]
    fn large_parts_are_spliced_in_place_and_small_ones_copied() {
        let big = Arc::new(vec![7u8; SHARE_MIN_BYTES]);
        let small = Arc::new(vec![1u8, 2, 3]);
        let mut e = Encoder::new();
        e.write_bytes(b"head");
        e.write_shared(&big);
        e.write_shared(&small);
        e.write_shared(&big);
        e.write_bytes(b"tail");
        let packed = e.into_packed();
        assert_eq!(packed.bytes, b"head\x01\x02\x03tail");
        assert_eq!(packed.splices.len(), 2);
        assert_eq!(packed.segments(), 5);
        let segments: Vec<&[u8]> = (0..5).map(|i| packed.segment(i)).collect();
        assert_eq!(segments[0], b"head");
        assert_eq!(segments[1], &big[..]);
        assert_eq!(segments[2], b"\x01\x02\x03");
        assert_eq!(segments[3], &big[..]);
        assert_eq!(segments[4], b"tail");

        let mut flat = Encoder::new();
        flat.write_bytes(b"head");
        flat.write_shared(&big);
        flat.write_bytes(b"tail");
        let bytes = flat.get_buffer();
        assert_eq!(bytes.len(), 8 + SHARE_MIN_BYTES);
        assert_eq!(&bytes[..4], b"head");
        assert_eq!(&bytes[bytes.len() - 4..], b"tail");

        let mut joined = Packed::from(b"ab".to_vec());
        let mut second = Encoder::new();
        second.write_bytes(b"c");
        second.write_shared(&big);
        joined.append(second.into_packed());
        assert_eq!(
            joined.splices[0].0, 3,
            "positions shift by the first command's bytes"
        );
        assert_eq!(joined.len(), 3 + SHARE_MIN_BYTES);
    }
}
