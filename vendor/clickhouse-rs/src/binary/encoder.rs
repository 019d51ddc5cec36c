use crate::types::{Marshal, StatBuffer};

#[derive(Default)]
pub struct Encoder {
    buffer: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Self {
        Encoder { buffer: Vec::new() }
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
