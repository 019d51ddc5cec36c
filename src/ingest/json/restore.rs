//! After a failed parse in place: writes back the strings simd-json unescaped before it
//! failed, so the body reads as the body as sent did for the repairs and the error message.
//!
//! `fill_tape_padded` unescapes each string where it lies, and only once the whole string has
//! parsed: the decoded text is written from the string's first byte on and the rest of its
//! bytes, up to the closing quote, are left as they were. Nothing else in the body is written.
//! So after a failure the body differs from the one sent only inside strings that were parsed
//! (every one of them is on the tape) and lie before the failure. Their original bytes are
//! gone, but what the decoder needs from the body is not those bytes:
//!
//! - the repairs look for lone surrogate escapes inside strings and for number literals outside
//!   them, at their byte offsets, and parse again;
//! - the error message reads the body only to tell invalid UTF-8 (which stage 1 finds before
//!   anything is written) from a bad escape, and after the failure point.
//!
//! So each such string is rewritten as a JSON string of the same value, in the same place:
//! opening quote where it was, the value escaped only where JSON requires (`"`, `\` and control
//! characters), closing quote, then spaces up to the next structural character. The next
//! structural character after a string's opening quote (from stage 1's index, which the
//! failure leaves as it was) lies after its closing quote with only whitespace in between, so
//! every offset outside strings is kept, and the rewrite always fits: each character escaped
//! this way takes at most the bytes it took as sent (a raw control character is refused by
//! stage 1, so the sent one was an escape of 2 or 6 bytes; `"` and `\` were escapes too;
//! anything from a `\u` escape took 6 or 12 bytes; raw bytes are kept). The rewritten strings
//! hold no `\u` escape of a surrogate and no number outside a string, so the repairs find
//! exactly what they would have found in the body as sent; a string that parsed cannot have
//! held a lone surrogate.

use std::ops::Range;

use simd_json::Node;

/// One string to write back: the region from its opening quote to the next structural
/// character, and its JSON text in `Restore::text`.
struct Rewrite {
    region: Range<usize>,
    text: Range<usize>,
}

/// The rewrites a failed parse needs, collected while the tape still borrows the body and
/// applied once it no longer does.
pub(super) struct Restore {
    rewrites: Vec<Rewrite>,
    text: Vec<u8>,
}

impl Restore {
    /// Collects from `tape` (what the failed parse of the body at `base`, `len` bytes long,
    /// left) every string's rewrite. `structurals` are stage 1's structural indexes of that
    /// body. `None` if some string's JSON text would not fit its region, which the reasoning
    /// above rules out.
    #[cold]
    pub(super) fn collect(
        tape: &[Node<'_>],
        structurals: &[u32],
        base: *const u8,
        len: usize,
    ) -> Option<Restore> {
        let mut restore = Restore {
            rewrites: Vec::new(),
            text: Vec::new(),
        };
        for node in tape {
            let Node::String(s) = node else { continue };
            // The string's value starts just after its opening quote.
            let quote = (s.as_ptr() as usize)
                .checked_sub(base as usize)?
                .checked_sub(1)?;
            let next = structurals.partition_point(|&i| i as usize <= quote);
            let end = structurals
                .get(next)
                .map_or(len, |&i| (i as usize).min(len));
            let start = restore.text.len();
            restore.text.push(b'"');
            escape_into(s.as_bytes(), &mut restore.text);
            restore.text.push(b'"');
            let text = start..restore.text.len();
            if text.len() > end - quote {
                return None;
            }
            restore.rewrites.push(Rewrite {
                region: quote..end,
                text,
            });
        }
        Some(restore)
    }

    /// Writes the strings back into `body`.
    #[cold]
    pub(super) fn apply(&self, body: &mut [u8]) {
        for r in &self.rewrites {
            let (text, rest) = body[r.region.clone()].split_at_mut(r.text.len());
            text.copy_from_slice(&self.text[r.text.clone()]);
            rest.fill(b' ');
        }
    }
}

/// `value` as the content of a JSON string: `"`, `\` and control characters escaped (the short
/// escapes where JSON has one), every other byte as it is.
fn escape_into(value: &[u8], out: &mut Vec<u8>) {
    for &b in value {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x0C => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0..=0x1F => {
                let d = crate::hex::DIGITS;
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', d[usize::from(b >> 4)]]);
                out.push(d[usize::from(b & 0xF)]);
                continue;
            }
            _ => {
                out.push(b);
                continue;
            }
        };
        out.extend_from_slice(&[b'\\', short]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simd_json::{Buffers, Tape};

    /// Parses `json` in place (it must fail), restores it, and returns the restored body.
    fn restored(json: &str) -> String {
        let mut buf = json.as_bytes().to_vec();
        let len = buf.len();
        buf.resize(len + simd_json::INPUT_PADDING, b' ');
        let mut buffers = Buffers::default();
        let base = buf.as_ptr() as usize;
        let mut tape = Tape::null();
        let failed = simd_json::fill_tape_padded(&mut buf, len, &mut buffers, &mut tape).is_err();
        assert!(failed, "{json} parses");
        let restore = Restore::collect(
            &tape.0,
            buffers.structural_indexes(),
            base as *const u8,
            len,
        )
        .expect("fits");
        drop(tape);
        restore.apply(&mut buf[..len]);
        String::from_utf8(buf[..len].to_vec()).expect("UTF-8")
    }

    #[test]
    fn strings_parsed_before_a_failure_are_written_back_with_the_same_value() {
        let cases = [
            // Escapes of every kind before a bad number, offsets after them kept.
            (
                r#"{"a\n":"x\"y\\z\/\u00e9\uD83D\uDE00\t" ,"b":1e400}"#,
                r#"{"a\n":"x\"y\\z/é😀\t"              ,"b":1e400}"#,
            ),
            // A control character only `\u` can escape, and a string right before the failure
            // with no space after it.
            (r#"["\u0001\u0000","\n"x]"#, r#"["\u0001\u0000","\n"x]"#),
            // Before a lone surrogate: the failing string itself was not written.
            (
                r#"{"k":"\u0041\n","p":"\uD83D"}"#,
                r#"{"k":"A\n"     ,"p":"\uD83D"}"#,
            ),
            // Nothing parsed: nothing to write.
            ("[1e400]", "[1e400]"),
        ];
        for (json, want) in cases {
            assert_eq!(restored(json), want, "{json}");
        }
    }

    #[test]
    fn each_escape_takes_no_more_room_than_the_one_sent() {
        for b in 0..=0x7Fu8 {
            let mut short = Vec::new();
            escape_into(&[b], &mut short);
            let sent = match b {
                b'"' | b'\\' | 0x08 | 0x0C | b'\n' | b'\r' | b'\t' => 2,
                0..=0x1F => 6,
                _ => 1,
            };
            assert!(short.len() <= sent, "{b:#x}: {short:?}");
            let json = format!("\"{}\"", String::from_utf8(short).unwrap());
            let back: String = serde_json::from_str(&json).unwrap();
            assert_eq!(back.as_bytes(), [b], "{json}");
        }
    }
}
