//! A sans-I/O reader of the protobuf wire format: a cursor over `&'a [u8]` that yields
//! `(field number, wire type)` and borrows length-delimited fields, checking every length.
//!
//! It knows no schema (`proto.rs` does). The rules are prost's (`encoding.rs`), so that a body
//! prost refuses is refused here too: a key is a varint of at most 32 bits with a field number
//! of at least 1 and a wire type of 0, 1, 2, 3, 4 or 5; a varint has at most 10 bytes, the
//! tenth at most 1; a length never runs past what is left of its message; a string is UTF-8.
//! An unknown field is skipped, never refused, deprecated groups included (nested at most
//! [`MAX_GROUP_DEPTH`] deep, so skipping never recurses without bound). Nothing allocates.

use std::fmt;

/// How a field's value is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    Varint = 0,
    Fixed64 = 1,
    Len = 2,
    StartGroup = 3,
    EndGroup = 4,
    Fixed32 = 5,
}

/// Groups nested inside an unknown field that are still skipped; deeper is refused.
pub const MAX_GROUP_DEPTH: u32 = 16;

/// Why a body is not a protobuf message. `Copy`, two words: the hot path never formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtoError {
    pub kind: ProtoErrorKind,
    /// Byte offset in the body where reading failed.
    pub offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoErrorKind {
    /// A field, a length or a varint runs past the end of its message.
    Truncated,
    /// A varint of more than 10 bytes, or one that overflows 64 bits.
    BadVarint,
    /// A key with field number 0 or one that does not fit 32 bits.
    BadKey,
    /// Wire type 6 or 7.
    BadWireType,
    /// A known field with another wire type than its schema's.
    WrongWireType,
    /// A string field that is not UTF-8.
    NotUtf8,
    /// An end-group key without its start group.
    UnexpectedEndGroup,
    /// Values (or groups) nested deeper than the decoder allows.
    TooDeep,
}

impl ProtoErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProtoErrorKind::Truncated => "a field runs past the end of its message",
            ProtoErrorKind::BadVarint => "invalid varint",
            ProtoErrorKind::BadKey => "invalid field key",
            ProtoErrorKind::BadWireType => "invalid wire type",
            ProtoErrorKind::WrongWireType => "a field has the wrong wire type for its schema",
            ProtoErrorKind::NotUtf8 => "a string field is not valid UTF-8",
            ProtoErrorKind::UnexpectedEndGroup => "an end-group tag without its start",
            ProtoErrorKind::TooDeep => "values nested too deep",
        }
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.kind.as_str(), self.offset)
    }
}

impl std::error::Error for ProtoError {}

/// A cursor over one message's bytes. `base` is the offset of `buf[0]` in the body, so errors
/// point into the body whatever the nesting.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader of a whole body.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            base: 0,
        }
    }

    /// The bytes not read yet.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos.min(self.buf.len())..]
    }

    /// True when every field has been read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Offset in the body of the next byte to read.
    #[inline]
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[cold]
    fn err(&self, kind: ProtoErrorKind) -> ProtoError {
        ProtoError {
            kind,
            offset: self.offset(),
        }
    }

    /// The next field's number and wire type; call only when `!is_empty()`.
    #[inline]
    pub fn key(&mut self) -> Result<(u32, WireType), ProtoError> {
        let at = self.pos;
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            _ => return Err(self.err_at(at, ProtoErrorKind::BadWireType)),
        };
        if key > u64::from(u32::MAX) || key >> 3 == 0 {
            return Err(self.err_at(at, ProtoErrorKind::BadKey));
        }
        Ok(((key >> 3) as u32, wire))
    }

    #[cold]
    fn err_at(&self, pos: usize, kind: ProtoErrorKind) -> ProtoError {
        ProtoError {
            kind,
            offset: self.base + pos,
        }
    }

    /// A varint (wire type 0 value, or a length).
    #[inline]
    pub fn varint(&mut self) -> Result<u64, ProtoError> {
        match self.buf.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.varint_slow(),
        }
    }

    fn varint_slow(&mut self) -> Result<u64, ProtoError> {
        let rest = self.rest();
        if let Some((value, n)) = varint(rest) {
            self.pos += n;
            return Ok(value);
        }
        // The input ended before the varint's last byte, or its ten bytes were not a varint.
        Err(
            self.err(if rest.len() < 10 && rest.iter().all(|&b| b >= 0x80) {
                ProtoErrorKind::Truncated
            } else {
                ProtoErrorKind::BadVarint
            }),
        )
    }

    /// `n` raw bytes.
    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if n > self.buf.len() - self.pos {
            return Err(self.err(ProtoErrorKind::Truncated));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// A wire type 1 value.
    #[inline]
    pub fn fixed64(&mut self) -> Result<u64, ProtoError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A wire type 5 value.
    #[inline]
    pub fn fixed32(&mut self) -> Result<u32, ProtoError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    /// A length-delimited value's bytes (wire type 2), borrowed.
    #[inline]
    pub fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let len = self.varint()?;
        match usize::try_from(len) {
            Ok(n) => self.take(n),
            Err(_) => Err(self.err(ProtoErrorKind::Truncated)),
        }
    }

    /// A length-delimited value as a reader of its own (an embedded message).
    #[inline]
    pub fn message(&mut self) -> Result<Reader<'a>, ProtoError> {
        let len = self.varint()?;
        let start = self.pos;
        let buf = match usize::try_from(len) {
            Ok(n) => self.take(n)?,
            Err(_) => return Err(self.err(ProtoErrorKind::Truncated)),
        };
        Ok(Reader {
            buf,
            pos: 0,
            base: self.base + start,
        })
    }

    /// A string field, checked to be UTF-8 (with SIMD past a few words: prompts and answers
    /// are most of an export's bytes, and std's check slows down on non-ASCII text).
    #[inline]
    pub fn str(&mut self) -> Result<&'a str, ProtoError> {
        let at = self.pos;
        let b = self.bytes()?;
        utf8(b).ok_or_else(|| self.err_at(at, ProtoErrorKind::NotUtf8))
    }

    /// Refuses a known field whose wire type is not `expected` (prost refuses it too).
    #[inline]
    pub fn expect(&self, got: WireType, expected: WireType) -> Result<(), ProtoError> {
        if got == expected {
            Ok(())
        } else {
            Err(self.err(ProtoErrorKind::WrongWireType))
        }
    }

    /// The value of a field of wire type `wire` that the schema does not use.
    pub fn skip(&mut self, field: u32, wire: WireType) -> Result<(), ProtoError> {
        self.skip_nested(field, wire, 0)
    }

    fn skip_nested(&mut self, field: u32, wire: WireType, depth: u32) -> Result<(), ProtoError> {
        match wire {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.take(8).map(drop),
            WireType::Fixed32 => self.take(4).map(drop),
            WireType::Len => self.bytes().map(drop),
            WireType::StartGroup => {
                if depth >= MAX_GROUP_DEPTH {
                    return Err(self.err(ProtoErrorKind::TooDeep));
                }
                loop {
                    if self.is_empty() {
                        return Err(self.err(ProtoErrorKind::Truncated));
                    }
                    let at = self.pos;
                    let (inner, inner_wire) = self.key()?;
                    if inner_wire == WireType::EndGroup {
                        if inner != field {
                            return Err(self.err_at(at, ProtoErrorKind::UnexpectedEndGroup));
                        }
                        return Ok(());
                    }
                    self.skip_nested(inner, inner_wire, depth + 1)?;
                }
            }
            WireType::EndGroup => Err(self.err(ProtoErrorKind::UnexpectedEndGroup)),
        }
    }
}

/// The varint at the start of `b` and its length in bytes (what `Reader::varint` reads past
/// its one-byte case); `None` if it is truncated or invalid. One and two bytes (small numbers,
/// the lengths of spans and of strings up to 16 KiB) without the general loop, which the compiler does not
/// specialise for them: it was 5% of an OTLP export's instructions.
#[inline(always)]
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    match *b {
        [b0, ..] if b0 < 0x80 => Some((u64::from(b0), 1)),
        [b0, b1, ..] if b1 < 0x80 => Some((u64::from(b0 & 0x7F) | u64::from(b1) << 7, 2)),
        _ => varint_long(b),
    }
}

/// `varint` of three bytes or more, or none.
fn varint_long(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in b.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7F) << (7 * i);
        if byte < 0x80 {
            return (i < 9 || byte <= 1).then_some((value, i + 1));
        }
    }
    None
}

/// `b` as a `str` if it is UTF-8. Short strings (attribute keys, names, ids: most of an
/// export's strings) are nearly always ASCII, which a word-at-a-time test settles faster than
/// std's general check; long ones (prompts and answers, most of its bytes) go to SIMD.
#[inline]
pub fn utf8(b: &[u8]) -> Option<&str> {
    if b.len() < 64 {
        if b.is_ascii() {
            // SAFETY: ASCII is UTF-8.
            Some(unsafe { std::str::from_utf8_unchecked(b) })
        } else {
            std::str::from_utf8(b).ok()
        }
    } else {
        simdutf8::basic::from_utf8(b).ok()
    }
}

/// Writers of the wire format, for the answers (`http/otlp.rs`) and tests.
pub mod write {
    use super::WireType;

    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn key(out: &mut Vec<u8>, field: u32, wire: WireType) {
        varint(out, u64::from(field) << 3 | wire as u64);
    }

    /// A length-delimited field.
    pub fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        key(out, field, WireType::Len);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }

    /// A varint field.
    pub fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
        key(out, field, WireType::Varint);
        varint(out, v);
    }

    /// A fixed64 field.
    pub fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
        key(out, field, WireType::Fixed64);
        out.extend_from_slice(&v.to_le_bytes());
    }

    /// A fixed32 field.
    pub fn fixed32(out: &mut Vec<u8>, field: u32, v: u32) {
        key(out, field, WireType::Fixed32);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::ProtoErrorKind::*;
    use super::*;

    /// Reads every field of `bytes` as `field:wire=value`, values rendered by type (strings for
    /// wire type 2), or the error with its offset.
    fn render(bytes: &[u8]) -> String {
        let mut r = Reader::new(bytes);
        let mut out = Vec::new();
        while !r.is_empty() {
            let step = r.key().and_then(|(f, w)| {
                let v = match w {
                    WireType::Varint => r.varint()?.to_string(),
                    WireType::Fixed64 => format!("{:#x}", r.fixed64()?),
                    WireType::Fixed32 => format!("{:#x}", r.fixed32()?),
                    WireType::Len => format!("{:?}", r.str()?),
                    WireType::StartGroup | WireType::EndGroup => {
                        r.skip(f, w)?;
                        "skipped".into()
                    }
                };
                Ok(format!("{f}:{}={v}", w as u8))
            });
            match step {
                Ok(s) => out.push(s),
                Err(e) => {
                    out.push(format!("{:?}@{}", e.kind, e.offset));
                    break;
                }
            }
        }
        out.join(" ")
    }

    /// A varint the slow way, bit by bit: what prost reads.
    fn reference_varint(b: &[u8]) -> Option<(u64, usize)> {
        let mut value = 0u128;
        for (i, &byte) in b.iter().enumerate().take(10) {
            value |= u128::from(byte & 0x7F) << (7 * i);
            if byte < 0x80 {
                return u64::try_from(value).ok().map(|v| (v, i + 1));
            }
        }
        None
    }

    #[test]
    fn varints_of_every_length_read_alike_both_ways() {
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for shift in 0..64 {
            for v in [
                1u64 << shift,
                (1u64 << shift) - 1,
                (1u64 << shift) + 1,
                u64::MAX >> shift,
            ] {
                let mut enc = Vec::new();
                write::varint(&mut enc, v);
                // Whole, then cut short by one byte, then followed by more bytes.
                inputs.push(enc.clone());
                inputs.push(enc[..enc.len() - 1].to_vec());
                enc.extend_from_slice(&[0x05, 0x81]);
                inputs.push(enc);
            }
        }
        // Not the shortest form (prost reads them), a tenth byte over 1, eleven bytes.
        inputs.push(vec![0x80, 0x00]);
        inputs.push(vec![0xff, 0x00, 0x07]);
        inputs.push([vec![0xff; 9], vec![0x02]].concat());
        inputs.push([vec![0xff; 9], vec![0x01]].concat());
        inputs.push(vec![0xff; 11]);
        for b in &inputs {
            let want = reference_varint(b);
            assert_eq!(varint(b), want, "{b:02x?}");
            let mut r = Reader::new(b);
            match want {
                Some((v, n)) => {
                    assert_eq!(r.varint(), Ok(v), "{b:02x?}");
                    assert_eq!(r.offset(), n, "{b:02x?}");
                }
                None => assert!(r.varint().is_err(), "{b:02x?}"),
            }
        }
    }

    #[test]
    fn every_wire_type_and_its_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"\x08\x96\x01", "1:0=150"),
            // Field numbers from 1 to 2^29 - 1.
            (b"\xf8\xff\xff\xff\x0f\x01", "536870911:0=1"),
            (
                b"\x09\x01\x02\x03\x04\x05\x06\x07\x08",
                "1:1=0x807060504030201",
            ),
            (b"\x15\x01\x02\x03\x04", "2:5=0x4030201"),
            (b"\x1a\x03abc\x1a\x00", "3:2=\"abc\" 3:2=\"\""),
            (b"\x22\x04\xf0\x9f\x9a\x80", "4:2=\"🚀\""),
            // The largest varint: ten bytes, the last holding bit 63.
            (
                b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                "1:0=18446744073709551615",
            ),
            // Varints written longer than needed are still varints.
            (b"\x08\x80\x80\x00", "1:0=0"),
            // Truncations: inside a varint, a fixed value, a length, a key.
            (b"\x08", "Truncated@1"),
            (b"\x08\x96", "Truncated@1"),
            (b"\x09\x01\x02\x03", "Truncated@1"),
            (b"\x15\x01", "Truncated@1"),
            (b"\x1a\x05abc", "Truncated@2"),
            (b"\x1a", "Truncated@1"),
            (b"\x88", "Truncated@0"),
            // A length beyond what is left, and beyond any buffer.
            (b"\x1a\xff\xff\xff\xff\x0fab", "Truncated@6"),
            (b"\x1a\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "Truncated@10"),
            // Bad varints: eleven bytes; a tenth byte above 1.
            (
                b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                "BadVarint@1",
            ),
            (
                b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
                "BadVarint@1",
            ),
            // Bad keys: field 0, wire types 6 and 7, a key beyond 32 bits.
            (b"\x00\x01", "BadKey@0"),
            (b"\x0e\x01", "BadWireType@0"),
            (b"\x0f\x01", "BadWireType@0"),
            (b"\x80\x80\x80\x80\x10\x01", "BadKey@0"),
            // Strings must be UTF-8.
            (b"\x0a\x02\xc3\x28", "NotUtf8@1"),
            // Groups are skipped whole, nested ones too; a stray end is refused.
            (
                b"\x0b\x08\x01\x13\x10\x02\x14\x0c\x08\x07",
                "1:3=skipped 1:0=7",
            ),
            (b"\x0b\x08\x01\x14", "UnexpectedEndGroup@3"),
            (b"\x0b\x08\x01", "Truncated@3"),
            (b"\x0c", "UnexpectedEndGroup@1"),
        ];
        for (bytes, expected) in cases {
            assert_eq!(render(bytes), *expected, "{bytes:x?}");
        }
    }

    #[test]
    fn long_strings_are_checked_too() {
        let mut body = vec![0x0a, 65];
        body.extend([b'a'; 64]);
        body.push(0xff);
        assert_eq!(render(&body), "NotUtf8@1");
        body[66] = b'b';
        assert_eq!(render(&body), format!("1:2=\"{}b\"", "a".repeat(64)));
    }

    #[test]
    fn groups_nest_only_so_deep() {
        let nested = |n: usize| {
            let mut b = b"\x0b".repeat(n);
            b.extend(b"\x0c".repeat(n));
            b
        };
        assert_eq!(render(&nested(MAX_GROUP_DEPTH as usize)), "1:3=skipped");
        assert!(render(&nested(MAX_GROUP_DEPTH as usize + 1)).starts_with("TooDeep@"));
        // Depth costs nothing else: a million nested starts is an error, not a stack overflow.
        assert!(render(&b"\x0b".repeat(1_000_000)).starts_with("TooDeep@"));
    }

    #[test]
    fn embedded_messages_report_offsets_in_the_body() {
        // Field 1 holds a message whose second field is truncated.
        let body = b"\x08\x01\x12\x04\x08\x01\x12\x05";
        let mut r = Reader::new(body);
        assert_eq!(r.key(), Ok((1, WireType::Varint)));
        r.varint().unwrap();
        assert_eq!(r.key(), Ok((2, WireType::Len)));
        let mut m = r.message().unwrap();
        assert!(r.is_empty());
        assert_eq!(m.key(), Ok((1, WireType::Varint)));
        assert_eq!(m.varint(), Ok(1));
        assert_eq!(m.key(), Ok((2, WireType::Len)));
        assert_eq!(
            m.bytes(),
            Err(ProtoError {
                kind: Truncated,
                offset: 8
            })
        );
        assert_eq!(
            Reader::new(b"\x08\x01").expect(WireType::Varint, WireType::Len),
            Err(ProtoError {
                kind: WrongWireType,
                offset: 0
            })
        );
    }

    #[test]
    fn writers_round_trip() {
        let mut out = Vec::new();
        write::uint(&mut out, 1, 300);
        write::bytes(&mut out, 2, b"hi");
        write::fixed64(&mut out, 3, 7);
        write::fixed32(&mut out, 4, 9);
        write::uint(&mut out, 536_870_911, u64::MAX);
        assert_eq!(
            render(&out),
            "1:0=300 2:2=\"hi\" 3:1=0x7 4:5=0x9 536870911:0=18446744073709551615"
        );
    }
}
