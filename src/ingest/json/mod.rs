//! A JSON body parsed in place by simd-json, shared by the JSON front ends (v1's `/ingest`,
//! OTLP/JSON): the body is parsed where it lies, in the buffer it was read into (which has
//! simd-json's padding after it: `PaddedBody`), into the caller's reused tape.
//!
//! The parse unescapes strings in place and makes no copy of the body, so every `&str` on the
//! tape borrows the body's buffer. simd-json refuses two things JSON (RFC 8259) allows: a lone
//! UTF-16 surrogate in a `\u` escape (JavaScript apps send one when they cut a string inside
//! an emoji), and a number literal it cannot hold (`1e400`, `18446744073709551616`). Only when
//! a parse fails (for any reason) is more work done: the strings it had unescaped before
//! failing are written back (`restore.rs`), so the body reads as the body as sent did; then,
//! if the failure was one of those two, the body is repaired in place with same-length text
//! (`\uD83D` -> `\uFFFD`, so the string holds U+FFFD there; with `Repairs::numbers`, the
//! literal -> a `"000"` placeholder string whose offset is remembered, so v1's walk reports the
//! number at its exact path, and OTLP's puts the double back on the tape) and parsed again. A body that parses costs no check and no copy
//! for this. Nesting depth is bounded by simd-json's iterative parser (1024 levels, no
//! recursion).

mod restore;

use std::fmt;

use simd_json::{Buffers, ErrorType, Node, Tape};

use restore::Restore;

/// Repairs attempted per body: a surrogate pass and a number pass each fix every case at once,
/// so two suffice for any body; the rest is margin.
pub(crate) const MAX_REPAIRS: usize = 4;

/// A number literal simd-json cannot hold (an integer beyond `u64`/`i64`, or a value that
/// overflows a double), which `parse_in_place` replaced by a same-length string before
/// re-parsing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Placeholder {
    /// Byte offset of the placeholder string's content in the parsed body.
    pub offset: usize,
    /// The literal's value as a double: finite for a huge integer, infinite when it overflows.
    pub value: f64,
}

/// Why a body is not JSON: what is wrong and, when simd-json knows it, the byte offset in the
/// body as sent. `Copy`: nothing is formatted until it is answered. Its `Display` is the part
/// after "the body is not valid JSON: ".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonError {
    what: What,
    at: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Empty,
    Utf8,
    UnicodeEscape,
    Escape,
    TooDeep,
    Trailing,
    Number,
    Literal,
    ExpectedColon,
    ExpectedKey,
    ExpectedArrayContent(char),
    ExpectedObjectContent(char),
    Unterminated,
    EndsEarly,
    Unexpected(char),
    Syntax,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.what {
            What::Empty => f.write_str("the body is empty")?,
            What::Utf8 => f.write_str("not valid UTF-8")?,
            What::UnicodeEscape => f.write_str("invalid \\u escape in a string")?,
            What::Escape => f.write_str("invalid escape sequence in a string")?,
            What::TooDeep => write!(
                f,
                "nested deeper than {} levels",
                simd_json::DEFAULT_MAX_DEPTH
            )?,
            What::Trailing => f.write_str("unexpected data after the JSON value")?,
            What::Number => f.write_str("invalid number")?,
            What::Literal => f.write_str("invalid literal")?,
            What::ExpectedColon => f.write_str("expected ':'")?,
            What::ExpectedKey => f.write_str("expected a string key")?,
            What::ExpectedArrayContent(c) => write!(f, "expected ',' or ']', found {}", Shown(c))?,
            What::ExpectedObjectContent(c) => {
                write!(f, "expected ',', '}}' or a string key, found {}", Shown(c))?
            }
            What::Unterminated => {
                f.write_str("unterminated string or control character in a string")?
            }
            What::EndsEarly => f.write_str("unexpected end of the body")?,
            What::Unexpected(c) => write!(f, "unexpected {}", Shown(c))?,
            What::Syntax => f.write_str("syntax error")?,
        }
        match self.at {
            Some(at) => write!(f, " (at byte {at})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for JsonError {}

/// The byte a parse stopped at, for a message: `'}'` when it is printable ASCII, else its value
/// (`byte 0xEF`: simd-json hands the byte over as a Latin-1 `char`, so a BOM's first byte would
/// print as `ï` and a form feed raw).
struct Shown(char);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            c if c.is_ascii_graphic() || c == ' ' => write!(f, "'{c}'"),
            c => write!(f, "byte 0x{:02X}", u32::from(c)),
        }
    }
}

/// The repairs a front end wants besides lone surrogates (always repaired).
pub(crate) struct Repairs<'r> {
    /// Where out-of-range number literals replaced by placeholder strings are recorded (in
    /// the order found); `None`: such a literal refuses the body (a front end whose walk does
    /// not know placeholders would read them as strings).
    pub numbers: Option<&'r mut Vec<Placeholder>>,
}

/// Parses `buf[..len]` (a body after a BOM of `bom` bytes, only for the error's offsets; the
/// padding after it) in place onto `tape`, repairing what JSON allows and simd-json refuses
/// (see the module's doc). `buf` is changed: strings are unescaped where they lie, and a
/// repair rewrites what it repairs. On `Err`, `tape` is empty.
pub(crate) fn parse_in_place<'a>(
    buf: &'a mut [u8],
    len: usize,
    bom: usize,
    buffers: &mut Buffers,
    tape: &mut Tape<'a>,
    mut repairs: Repairs<'_>,
) -> Result<(), JsonError> {
    let padded_len = buf.len();
    // Every attempt, and every write between attempts, goes through this pointer; `buf`
    // itself is not used again.
    let ptr = buf.as_mut_ptr();
    let mut attempts = 0;
    loop {
        // A failed parse must give the buffer back for the repair and the next attempt,
        // which the borrow checker cannot express for a loan that lives on as `'a` when
        // the parse succeeds; so every attempt borrows it afresh from this pointer.
        // SAFETY: `ptr..ptr + padded_len` is the buffer `buf` lent us for `'a` (body then
        // padding, initialised). No other reference into it is live: a failed attempt's
        // references (the tape's strings) are dropped before the buffer is written again.
        let input: &'a mut [u8] = unsafe { std::slice::from_raw_parts_mut(ptr, padded_len) };
        let Err(e) = parse(input, len, buffers, tape) else {
            return Ok(());
        };
        let failure = Failure {
            error: &e,
            structurals: buffers.structural_indexes(),
            body: ptr,
            len,
            bom,
            may_repair: attempts < MAX_REPAIRS,
        };
        failure.handle(&mut tape.0, repairs.numbers.as_deref_mut())?;
        attempts += 1;
    }
}

/// simd-json's parse of `input[..len]` in place, in a function of its own: inlined into
/// v1's `decode`, its stage 2 was compiled around the rest of `decode` and took 3% more
/// instructions.
#[inline(never)]
fn parse<'a>(
    input: &'a mut [u8],
    len: usize,
    buffers: &mut Buffers,
    tape: &mut Tape<'a>,
) -> simd_json::Result<()> {
    simd_json::fill_tape_padded(input, len, buffers, tape)
}

/// A failed parse of the body at `body` (`len` bytes after a BOM of `bom` bytes).
struct Failure<'f> {
    error: &'f simd_json::Error,
    /// Stage 1's structural indexes of the body (`Restore` needs them).
    structurals: &'f [u32],
    body: *mut u8,
    len: usize,
    bom: usize,
    /// Whether another repair may be tried (`MAX_REPAIRS`).
    may_repair: bool,
}

impl Failure<'_> {
    /// Writes back what the parse unescaped (emptying `tape`, whose strings point into the
    /// body), then repairs the body if the failure is one JSON allows: `Ok` to parse
    /// again, else the refusal. Out of line, so that the parse's own loop stays
    /// as tight as simd-json's.
    #[cold]
    #[inline(never)]
    fn handle(
        self,
        tape: &mut Vec<Node<'_>>,
        numbers: Option<&mut Vec<Placeholder>>,
    ) -> Result<(), JsonError> {
        let e = self.error;
        let trailing = is_trailing_data(tape, e);
        let restore = Restore::collect(tape, self.structurals, self.body, self.len);
        tape.clear();
        // SAFETY: `body..body + len` is the body `parse_in_place` was lent for its whole run,
        // and no other reference into it is live: the tape, the only holder of any, is empty.
        let body = unsafe { std::slice::from_raw_parts_mut(self.body, self.len) };
        let repaired = match restore {
            Some(restore) => {
                restore.apply(body);
                self.may_repair && repair(body, e, numbers)
            }
            // Cannot happen (see `restore.rs`); if it did, the error stands.
            None => false,
        };
        if repaired {
            Ok(())
        } else {
            Err(describe(body, e, trailing, self.bom))
        }
    }
}

/// Fixes, in the body as sent, what JSON allows but simd-json refuses (numbers only when the
/// caller wants them, `Repairs::numbers`). Returns whether anything changed (if not, the
/// error stands).
#[cold]
pub(crate) fn repair(
    body: &mut [u8],
    e: &simd_json::Error,
    numbers: Option<&mut Vec<Placeholder>>,
) -> bool {
    match (e.error(), numbers) {
        (ErrorType::InvalidNumber, Some(placeholders)) => repair_numbers(body, placeholders),
        // Stage 1 reports bad UTF-8 as `InvalidUtf8`; some string parsers report a lone low
        // surrogate that way too.
        (ErrorType::InvalidUnicodeCodepoint | ErrorType::InvalidUtf8, _) => {
            std::str::from_utf8(body).is_ok() && repair_surrogates(body)
        }
        _ => false,
    }
}

/// What is wrong with the body and, when simd-json knows, the byte offset in the body as sent
/// (BOM included; simd-json's index inside a string is not a byte offset, so string errors
/// have none). `body` is the body after the BOM, as sent (restored).
#[cold]
pub(crate) fn describe(body: &[u8], e: &simd_json::Error, trailing: bool, bom: usize) -> JsonError {
    let at = Some(e.index() + bom);
    let c = e.character().unwrap_or(' ');
    let (what, at) = match e.error() {
        ErrorType::Eof => (What::Empty, None),
        ErrorType::InvalidUtf8 => match std::str::from_utf8(body) {
            Err(u) => (What::Utf8, Some(u.valid_up_to() + bom)),
            Ok(_) => (What::UnicodeEscape, None),
        },
        ErrorType::InvalidUnicodeCodepoint => (What::UnicodeEscape, None),
        ErrorType::InvalidEscape => (What::Escape, None),
        ErrorType::DepthLimitExceeded => (What::TooDeep, at),
        ErrorType::InternalError if trailing => {
            // `at` is the root's closing bracket; point at what follows it.
            let rest = body.get(e.index() + 1..).unwrap_or_default();
            let gap = rest
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .count();
            (What::Trailing, Some(e.index() + bom + 1 + gap))
        }
        ErrorType::TrailingData => (What::Trailing, None),
        ErrorType::InvalidNumber => (What::Number, at),
        ErrorType::ExpectedTrue | ErrorType::ExpectedFalse | ErrorType::ExpectedNull => {
            (What::Literal, at)
        }
        ErrorType::ExpectedObjectColon => (What::ExpectedColon, at),
        ErrorType::ExpectedObjectKey => (What::ExpectedKey, at),
        ErrorType::ExpectedArrayContent => (What::ExpectedArrayContent(c), at),
        ErrorType::ExpectedObjectContent => (What::ExpectedObjectContent(c), at),
        ErrorType::Syntax if e.character().is_none() => (What::Unterminated, None),
        ErrorType::Syntax => (What::EndsEarly, None),
        _ if e.character().is_some() => (What::Unexpected(c), at),
        _ => (What::Syntax, at),
    };
    JsonError { what, at }
}

/// After a failed parse: whether the failure was data after a complete top-level object or
/// array. simd-json reports that as an internal error at the root's closing bracket, with the
/// root's header already finished on the tape.
pub(crate) fn is_trailing_data(tape: &[Node<'_>], e: &simd_json::Error) -> bool {
    if !matches!(e.error(), ErrorType::InternalError) {
        return false;
    }
    match (tape.first(), e.character()) {
        (Some(Node::Object { count, .. }), Some('}'))
        | (Some(Node::Array { count, .. }), Some(']')) => count + 1 == tape.len(),
        _ => false,
    }
}

/// The code unit of the `\u` escape whose four hex digits start at `at`, if they are there.
fn hex4(buf: &[u8], at: usize) -> Option<u32> {
    crate::hex::escape_unit(buf.get(at..)?).ok()
}

/// Rewrites every `\u` escape of an unpaired UTF-16 surrogate to `\uFFFD` (same length).
/// Tracks strings and escapes as simd-json's stage 1 does, so `\\uD83D` is left alone.
pub(crate) fn repair_surrogates(buf: &mut [u8]) -> bool {
    let high = 0xD800..0xDC00;
    let low = 0xDC00..0xE000;
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    while i < buf.len() {
        match (in_string, buf[i]) {
            (false, b'"') => in_string = true,
            (false, _) => {}
            (true, b'"') => in_string = false,
            (true, b'\\') if buf.get(i + 1) == Some(&b'u') => {
                let lone = match hex4(buf, i + 2) {
                    Some(cp) if high.contains(&cp) => {
                        let paired = buf.get(i + 6..i + 8) == Some(b"\\u")
                            && hex4(buf, i + 8).is_some_and(|lo| low.contains(&lo));
                        if paired {
                            i += 12;
                            continue;
                        }
                        true
                    }
                    Some(cp) => low.contains(&cp),
                    // Not four hex digits: left for the parser to refuse.
                    None => false,
                };
                if lone {
                    buf[i + 2..i + 6].copy_from_slice(b"FFFD");
                    changed = true;
                }
                i += 6;
                continue;
            }
            (true, b'\\') => {
                i += 2;
                continue;
            }
            (true, _) => {}
        }
        i += 1;
    }
    changed
}

/// Replaces every well-formed number literal that simd-json cannot hold with a same-length
/// string (`"0…0"`), recording where it is and its value. Returns whether anything changed.
fn repair_numbers(buf: &mut [u8], placeholders: &mut Vec<Placeholder>) -> bool {
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        if in_string {
            match b {
                b'"' => in_string = false,
                b'\\' => i += 1,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        if b != b'-' && !b.is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < buf.len() && matches!(buf[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
            i += 1;
        }
        if let Some(value) = out_of_range(&buf[start..i]) {
            buf[start] = b'"';
            buf[start + 1..i - 1].fill(b'0');
            buf[i - 1] = b'"';
            placeholders.push(Placeholder {
                offset: start + 1,
                value,
            });
            changed = true;
        }
    }
    changed
}

/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
pub(crate) fn is_json_number(t: &[u8]) -> bool {
    let digits = |t: &[u8], mut i: usize| {
        let s = i;
        while i < t.len() && t[i].is_ascii_digit() {
            i += 1;
        }
        (i > s).then_some(i)
    };
    let mut i = usize::from(t.first() == Some(&b'-'));
    match t.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(t, i).unwrap_or(i),
        _ => return false,
    }
    if t.get(i) == Some(&b'.') {
        let Some(j) = digits(t, i + 1) else {
            return false;
        };
        i = j;
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let Some(j) = digits(t, i) else {
            return false;
        };
        i = j;
    }
    i == t.len()
}

/// The value of a well-formed literal that simd-json refuses: an integer beyond `u64` (or
/// below `i64::MIN`), or any number that overflows a double (then infinite).
pub(crate) fn out_of_range(token: &[u8]) -> Option<f64> {
    if !is_json_number(token) {
        return None;
    }
    let text = std::str::from_utf8(token).ok()?;
    let value: f64 = text.parse().ok()?;
    if value.is_infinite() {
        return Some(value);
    }
    if token.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return None;
    }
    let fits = match text.strip_prefix('-') {
        Some(digits) => digits.len() < 19 || digits.parse::<u64>().is_ok_and(|m| m <= 1 << 63),
        None => text.parse::<u64>().is_ok(),
    };
    (!fits).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_literal_grammar() {
        for ok in ["0", "-0", "1", "-1.5e-3", "10E+2", "0.0", "123456789"] {
            assert!(is_json_number(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1-", "--1", "1.2.3", "1e5e5",
        ] {
            assert!(!is_json_number(bad.as_bytes()), "{bad}");
        }
        assert_eq!(out_of_range(b"18446744073709551615"), None);
        assert_eq!(
            out_of_range(b"18446744073709551616"),
            Some(18446744073709551616.0)
        );
        assert_eq!(out_of_range(b"-9223372036854775808"), None);
        assert!(out_of_range(b"-9223372036854775809").is_some());
        assert_eq!(out_of_range(b"1e308"), None);
        assert_eq!(out_of_range(b"1e309"), Some(f64::INFINITY));
        assert_eq!(out_of_range(b"-1e309"), Some(f64::NEG_INFINITY));
        assert_eq!(out_of_range(b"1e-999"), None);
    }
}
