use std::cell::RefCell;

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

#[derive(Default)]
pub struct Encoder {
    buffer: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Self {
        Encoder { buffer: Vec::new() }
    }

    /// traceingest patch: an encoder writing into the buffer `give_back` kept, if any.
    pub(crate) fn reuse() -> Self {
        Encoder {
            buffer: SPARE.with(|spare| std::mem::take(&mut spare.borrow_mut().buffer)),
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

    pub fn get_buffer(self) -> Vec<u8> {
        self.buffer
    }

    pub fn get_buffer_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}
