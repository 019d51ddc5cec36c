//! Hex digits: the one encoder and decoder for key hashes, trace ids, escapes and chunk sizes.

/// Lower-case hex digits, by value.
pub const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The value of one hex digit, either case.
#[inline]
pub const fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Writes lower-case hex of `bytes` into `out`, which is exactly twice as long.
pub fn encode_into(bytes: &[u8], out: &mut [u8]) {
    assert_eq!(
        out.len(),
        bytes.len() * 2,
        "hex output is two digits per byte"
    );
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
}

/// Lower-case hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    encode_into(bytes, &mut out);
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Decodes `digits` (either case) into `out`, which is exactly half as long; `None` if the
/// lengths do not match or a byte is not a hex digit (then `out` is partly written).
pub fn decode_into(digits: &[u8], out: &mut [u8]) -> Option<()> {
    if digits.len() != out.len() * 2 {
        return None;
    }
    for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(())
}

/// Exactly `2 * N` hex digits (either case) as `N` bytes.
pub fn decode_array<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    decode_into(digits, &mut out)?;
    Some(out)
}

/// The four hex digits a JSON `\u` escape starts `b` with, as a UTF-16 code unit; else the
/// offset of the first byte that is not a hex digit (the end of `b` if it is shorter).
pub fn escape_unit(b: &[u8]) -> Result<u32, usize> {
    let mut v = 0u32;
    for i in 0..4 {
        match b.get(i).copied().and_then(digit) {
            Some(d) => v = v << 4 | u32::from(d),
            None => return Err(i),
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refusals() {
        let bytes: Vec<u8> = (0..=255).collect();
        let text = encode(&bytes);
        assert_eq!(&text[..8], "00010203");
        assert_eq!(&text[text.len() - 4..], "feff");
        let mut back = vec![0u8; 256];
        assert_eq!(decode_into(text.as_bytes(), &mut back), Some(()));
        assert_eq!(back, bytes);
        assert_eq!(
            decode_into(text.to_uppercase().as_bytes(), &mut back),
            Some(())
        );
        assert_eq!(back, bytes);

        assert_eq!(decode_array::<2>(b"aB0f"), Some([0xab, 0x0f]));
        for bad in ["aB0", "aB0f0", "zz00", "0g00", "+a00", " a00", "ab\u{e9}"] {
            assert_eq!(decode_array::<2>(bad.as_bytes()), None, "{bad:?}");
        }
        for c in 0..=255u8 {
            let want = (c as char).to_digit(16).map(|d| d as u8);
            assert_eq!(digit(c), want, "{c}");
        }
    }

    #[test]
    fn escape_units() {
        let cases: &[(&[u8], Result<u32, usize>)] = &[
            (b"D83D", Ok(0xD83D)),
            (b"00e9\\u", Ok(0xE9)),
            (b"ffff", Ok(0xFFFF)),
            (b"12g4", Err(2)),
            (b"+123", Err(0)),
            (b"12", Err(2)),
            (b"", Err(0)),
        ];
        for (b, want) in cases {
            assert_eq!(escape_unit(b), *want, "{:?}", String::from_utf8_lossy(b));
        }
    }
}
