//! Request body -> `wire::Batch`: simd-json parses the body where it lies, in the buffer it
//! was read into (which has simd-json's padding after it: `PaddedBody`), into a reused tape;
//! then the schema walk (`validate`) turns the tape into arena-allocated wire types.
//!
//! The parse unescapes strings in place and makes no copy of the body, so every `&str` of a
//! decoded batch borrows the body's buffer. simd-json refuses two things the contract accepts: a
//! lone UTF-16 surrogate in a `\u` escape, and a number literal it cannot hold (`1e400`,
//! `18446744073709551616`). Only when a parse fails (for any reason) is more work done: the
//! strings it had unescaped before failing are written back (`restore.rs`), so the body reads
//! as the body as sent did; then, if the failure was one of those two, the body is repaired in
//! place with same-length text (`\uD83D` -> `\uFFFD`; the literal -> a `"000"` placeholder
//! string whose offset is remembered so the walk reports the number at its exact path) and
//! parsed again. A body that parses costs no check and no copy for this.
//! Nesting depth is bounded by simd-json's iterative parser (1024 levels, no recursion).

use std::mem;

use bumpalo::Bump;
use simd_json::{Buffers, ErrorType, Node, Tape};

use super::restore::Restore;
use super::validate::{self, Placeholder};
use crate::ingest::body::PaddedBody;
use crate::ingest::wire::Batch;
use crate::ingest::DecodeError;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Repairs attempted per body: a surrogate pass and a number pass each fix every case at once,
/// so two suffice for any body; the rest is margin.
const MAX_REPAIRS: usize = 4;

/// Per-worker decoding state, reused by every request so a warm decode allocates nothing
/// outside the request's arena.
pub struct Decoder {
    /// simd-json's scratch: structural indexes, unescape buffer.
    buffers: Buffers,
    /// The tape's storage. Always empty between calls, hence `'static`.
    tape: Vec<Node<'static>>,
    /// Out-of-range number literals replaced in this body, sorted by offset.
    placeholders: Vec<Placeholder>,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    pub fn new() -> Self {
        Decoder {
            buffers: Buffers::default(),
            tape: Vec::new(),
            placeholders: Vec::new(),
        }
    }

    /// Parses and validates `body` (which may start with one UTF-8 BOM) in place. Every `&str`
    /// in the result borrows the body's buffer; every slice lives in `arena`. The body is
    /// changed: strings are unescaped where they lie, and a repair rewrites what it repairs.
    pub fn decode<'a>(
        &mut self,
        body: PaddedBody<'a>,
        arena: &'a Bump,
    ) -> Result<Batch<'a>, DecodeError> {
        let bom = if body.bytes().starts_with(BOM) {
            BOM.len()
        } else {
            0
        };
        let (buf, len) = body.skip(bom).into_parts();
        let padded_len = buf.len();
        // Every attempt, and every write between attempts, goes through this pointer; `buf`
        // itself is not used again.
        let ptr = buf.as_mut_ptr();
        self.placeholders.clear();
        let mut tape: Tape<'a> = Tape(mem::take(&mut self.tape)).reset();
        let mut repairs = 0;
        loop {
            // A failed parse must give the buffer back for the repair and the next attempt,
            // which the borrow checker cannot express for a loan that lives on as `'a` when
            // the parse succeeds; so every attempt borrows it afresh from this pointer.
            // SAFETY: `ptr..ptr + padded_len` is the buffer `body` lent us for `'a` (body then
            // padding, initialised). No other reference into it is live: a failed attempt's
            // references (the tape's strings) are dropped before the buffer is written again.
            let input: &'a mut [u8] = unsafe { std::slice::from_raw_parts_mut(ptr, padded_len) };
            let Err(e) = parse(input, len, &mut self.buffers, &mut tape) else {
                break;
            };
            let failure = Failure {
                error: &e,
                structurals: self.buffers.structural_indexes(),
                body: ptr,
                len,
                bom,
                may_repair: repairs < MAX_REPAIRS,
            };
            if let Err(refusal) = failure.handle(&mut tape.0, &mut self.placeholders) {
                self.tape = tape.reset().0;
                return Err(refusal);
            }
            repairs += 1;
        }
        self.placeholders.sort_unstable_by_key(|p| p.offset);
        let result = validate::batch(&tape.0, arena, &self.placeholders, ptr as usize);
        self.tape = tape.reset().0;
        result.map_err(DecodeError::Schema)
    }
}

/// simd-json's parse of `input[..len]` in place, in a function of its own: inlined into
/// `decode`, its stage 2 was compiled around the rest of `decode` and took 3% more
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
    /// body), then repairs the body if the failure is one the contract accepts: `Ok` to parse
    /// again, else the `invalid_json` refusal. Out of line, so that the parse's own loop stays
    /// as tight as simd-json's.
    #[cold]
    #[inline(never)]
    fn handle(
        self,
        tape: &mut Vec<Node<'_>>,
        placeholders: &mut Vec<Placeholder>,
    ) -> Result<(), DecodeError> {
        let e = self.error;
        let trailing = is_trailing_data(tape, e);
        let restore = Restore::collect(tape, self.structurals, self.body, self.len);
        tape.clear();
        // SAFETY: `body..body + len` is the body `decode` was lent for its whole run, and no
        // other reference into it is live: the tape, the only holder of any, is empty.
        let body = unsafe { std::slice::from_raw_parts_mut(self.body, self.len) };
        let repaired = match restore {
            Some(restore) => {
                restore.apply(body);
                self.may_repair && repair(body, e, placeholders)
            }
            // Cannot happen (see `restore.rs`); if it did, the error stands.
            None => false,
        };
        if repaired {
            Ok(())
        } else {
            Err(DecodeError::InvalidJson(describe(
                body, e, trailing, self.bom,
            )))
        }
    }
}

/// Fixes, in the body as sent, what the contract accepts but simd-json refuses. Returns
/// whether anything changed (if not, the error stands).
#[cold]
fn repair(body: &mut [u8], e: &simd_json::Error, placeholders: &mut Vec<Placeholder>) -> bool {
    match e.error() {
        ErrorType::InvalidNumber => repair_numbers(body, placeholders),
        // Stage 1 reports bad UTF-8 as `InvalidUtf8`; some string parsers report a lone low
        // surrogate that way too.
        ErrorType::InvalidUnicodeCodepoint | ErrorType::InvalidUtf8 => {
            std::str::from_utf8(body).is_ok() && repair_surrogates(body)
        }
        _ => false,
    }
}

/// The `invalid_json` message: what is wrong and, when simd-json knows, the byte offset in
/// the body as sent (BOM included). `body` is the body after the BOM.
#[cold]
fn describe(body: &[u8], e: &simd_json::Error, trailing: bool, bom: usize) -> String {
    let at = e.index() + bom;
    let c = e.character().unwrap_or(' ');
    let what = match e.error() {
        ErrorType::Eof => "the body is empty".to_owned(),
        ErrorType::InvalidUtf8 => match std::str::from_utf8(body) {
            Err(u) => format!("not valid UTF-8 (at byte {})", u.valid_up_to() + bom),
            Ok(_) => "invalid \\u escape in a string".to_owned(),
        },
        ErrorType::InvalidUnicodeCodepoint => "invalid \\u escape in a string".to_owned(),
        ErrorType::InvalidEscape => "invalid escape sequence in a string".to_owned(),
        ErrorType::DepthLimitExceeded => format!(
            "nested deeper than {} levels (at byte {at})",
            simd_json::DEFAULT_MAX_DEPTH
        ),
        ErrorType::InternalError if trailing => {
            // `at` is the root's closing bracket; point at what follows it.
            let rest = body.get(e.index() + 1..).unwrap_or_default();
            let gap = rest
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .count();
            format!(
                "unexpected data after the JSON value (at byte {})",
                at + 1 + gap
            )
        }
        ErrorType::TrailingData => "unexpected data after the JSON value".to_owned(),
        ErrorType::InvalidNumber => format!("invalid number (at byte {at})"),
        ErrorType::ExpectedTrue | ErrorType::ExpectedFalse | ErrorType::ExpectedNull => {
            format!("invalid literal (at byte {at})")
        }
        ErrorType::ExpectedObjectColon => format!("expected ':' (at byte {at})"),
        ErrorType::ExpectedObjectKey => format!("expected a string key (at byte {at})"),
        ErrorType::ExpectedArrayContent => {
            format!("expected ',' or ']', found '{c}' (at byte {at})")
        }
        ErrorType::ExpectedObjectContent => {
            format!("expected ',', '}}' or a string key, found '{c}' (at byte {at})")
        }
        ErrorType::Syntax if e.character().is_none() => {
            "unterminated string or control character in a string".to_owned()
        }
        ErrorType::Syntax => "unexpected end of the body".to_owned(),
        _ if e.character().is_some() => format!("unexpected '{c}' (at byte {at})"),
        other => format!("{other:?}"),
    };
    format!("the body is not valid JSON: {what}")
}

/// After a failed parse: whether the failure was data after a complete top-level object or
/// array. simd-json reports that as an internal error at the root's closing bracket, with the
/// root's header already finished on the tape.
fn is_trailing_data(tape: &[Node<'_>], e: &simd_json::Error) -> bool {
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
fn repair_surrogates(buf: &mut [u8]) -> bool {
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
fn is_json_number(t: &[u8]) -> bool {
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
fn out_of_range(token: &[u8]) -> Option<f64> {
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
mod in_place;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ingest::PathSeg;

    /// Decodes `input` and renders the outcome: `ok <spans>`, `invalid_json: <message>`, or one
    /// `<path> <code>` line per issue (path segments joined with `.`).
    pub(crate) fn render(input: &[u8]) -> String {
        let mut body = input.to_vec();
        let arena = Bump::new();
        let mut decoder = Decoder::new();
        match decoder.decode(PaddedBody::pad(&mut body), &arena) {
            Ok(b) => format!("ok {}", b.span_count),
            Err(DecodeError::InvalidJson(m)) => format!("invalid_json: {m}"),
            Err(DecodeError::Schema(issues)) => issues
                .iter()
                .map(|i| {
                    let path: Vec<String> = i
                        .path
                        .iter()
                        .map(|s| match s {
                            PathSeg::Key(k) => k.to_string(),
                            PathSeg::Index(n) => n.to_string(),
                        })
                        .collect();
                    format!("{} {}", path.join("."), i.code)
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("{e:?}"),
        }
    }

    /// The one assertion helper: `expected` is `render(input)` exactly, except that an
    /// `invalid_json` expectation need only be the start of the message.
    #[track_caller]
    pub(crate) fn check(input: impl AsRef<[u8]>, expected: &str) {
        let got = render(input.as_ref());
        let matches = if expected.starts_with("invalid_json") {
            got.starts_with(expected)
        } else {
            got == expected
        };
        assert!(
            matches,
            "input: {}\nexpected: {expected}\ngot: {got}",
            String::from_utf8_lossy(input.as_ref())
        );
    }

    /// A valid batch of one trace with one span carrying `span_extra` (`,"k":v` pairs).
    pub(crate) fn with_span(span_extra: &str) -> String {
        format!(
            r#"{{"version":"v1","traces":[{{"traceId":"t1","traceName":"tn","spans":[{{"spanId":"s1","spanType":"llm","name":"n","startTime":1,"endTime":2{span_extra}}}]}}]}}"#
        )
    }

    /// A valid batch of one trace with one span of the required fields, where `field` is set
    /// to the JSON `value` (replacing a required field of that name); an empty `value` leaves
    /// the field out.
    pub(crate) fn with_span_field(field: &str, value: &str) -> String {
        let mut members = vec![
            ("spanId", "\"s1\""),
            ("spanType", "\"llm\""),
            ("name", "\"n\""),
            ("startTime", "1"),
            ("endTime", "2"),
        ];
        match members.iter_mut().find(|(k, _)| *k == field) {
            Some(member) => member.1 = value,
            None => members.push((field, value)),
        }
        members.retain(|(_, v)| !v.is_empty());
        let span: Vec<String> = members
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!(
            r#"{{"version":"v1","traces":[{{"traceId":"t1","traceName":"tn","spans":[{{{}}}]}}]}}"#,
            span.join(",")
        )
    }

    /// Decodes `input`, which must be valid, and hands the batch to `f`.
    pub(crate) fn with_batch(input: &str, f: impl FnOnce(&Batch<'_>)) {
        let mut body = input.as_bytes().to_vec();
        let arena = Bump::new();
        let mut decoder = Decoder::new();
        match decoder.decode(PaddedBody::pad(&mut body), &arena) {
            Ok(b) => f(&b),
            Err(e) => panic!("{input}\n{e:?}"),
        }
    }

    #[test]
    fn json_level() {
        let ok = with_span("");
        let deep_array = "[".repeat(100_000);
        let deep_valid = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (ok.clone().into(), "ok 1"),
            ([BOM, ok.as_bytes()].concat(), "ok 1"),
            // One BOM only.
            ([BOM, BOM, ok.as_bytes()].concat(), "invalid_json"),
            (
                b"".to_vec(),
                "invalid_json: the body is not valid JSON: the body is empty",
            ),
            (b"  \n ".to_vec(), "invalid_json"),
            (BOM.to_vec(), "invalid_json"),
            (
                format!("{ok} x").into(),
                "invalid_json: the body is not valid JSON: unexpected data after the JSON value",
            ),
            (
                format!("{ok}}}").into(),
                "invalid_json: the body is not valid JSON: unexpected data after the JSON value",
            ),
            (format!("{ok}{ok}").into(), "invalid_json"),
            (b"{} \n x".to_vec(), "invalid_json: the body is not valid JSON: unexpected data after the JSON value (at byte 5)"),
            (b"\"v1\" 2".to_vec(), "invalid_json: the body is not valid JSON: unexpected data after the JSON value"),
            (b"[,]".to_vec(), "invalid_json: the body is not valid JSON: unexpected ',' (at byte 1)"),
            (b"[}".to_vec(), "invalid_json: the body is not valid JSON: unexpected '}' (at byte 1)"),
            (b"{\"a\":}".to_vec(), "invalid_json: the body is not valid JSON: unexpected '}' (at byte 5)"),
            (b"{\"a\" 1}".to_vec(), "invalid_json: the body is not valid JSON: expected ':' (at byte 5)"),
            (b"[1 2]".to_vec(), "invalid_json: the body is not valid JSON: expected ',' or ']', found '2' (at byte 3)"),
            (b"{\"a\":1".to_vec(), "invalid_json: the body is not valid JSON: unexpected end of the body"),
            (b"{\"version\":\"v1\",".to_vec(), "invalid_json"),
            (b"{\"version\" \"v1\"}".to_vec(), "invalid_json"),
            (b"{\"version\":\"v1\nx\"}".to_vec(), "invalid_json"),
            (b"{\"version\":\"\\x\"}".to_vec(), "invalid_json"),
            (b"{\"version\":\"\\uZZZZ\"}".to_vec(), "invalid_json"),
            (b"{\"version\":tru}".to_vec(), "invalid_json"),
            (b"{\"version\":01}".to_vec(), "invalid_json"),
            (b"{\"version\":1.}".to_vec(), "invalid_json"),
            (b"{\"version\":-}".to_vec(), "invalid_json"),
            (b"{\"version\":1e400x}".to_vec(), "invalid_json"),
            (b"{'version':1}".to_vec(), "invalid_json"),
            // Invalid UTF-8: a lone continuation byte inside a string, and an overlong form.
            (
                b"{\"version\":\"a\x80b\"}".to_vec(),
                "invalid_json: the body is not valid JSON: not valid UTF-8 (at byte 13)",
            ),
            (
                [&b"{\"version\":\"\xC0\xAF\"}"[..]].concat(),
                "invalid_json: the body is not valid JSON: not valid UTF-8 (at byte 12)",
            ),
            // Deep nesting is refused by simd-json's iterative parser, not by a stack overflow.
            (
                deep_array.into_bytes(),
                "invalid_json: the body is not valid JSON: nested deeper than 1024 levels",
            ),
            (deep_valid.into_bytes(), "invalid_json"),
            // Nesting inside an unknown key is skipped without recursion.
            (
                with_span(&format!(",\"x\":{}1{}", "[".repeat(1000), "]".repeat(1000)))
                    .into_bytes(),
                "traces.0.spans.0 unrecognized_keys",
            ),
            // Top-level values of the wrong type.
            (b"[]".to_vec(), " invalid_type"),
            (b"\"v1\"".to_vec(), " invalid_type"),
            (b"null".to_vec(), " invalid_type"),
            (b"12".to_vec(), " invalid_type"),
        ];
        for (input, expected) in cases {
            check(&input, expected);
        }
    }

    #[test]
    fn nesting_up_to_the_limit_is_skipped_without_recursion() {
        // 1024 levels in all (5 of them the batch's own) parse; the walk skips the unknown
        // key's value in one step.
        let depth = simd_json::DEFAULT_MAX_DEPTH - 5;
        let body = with_span(&format!(
            ",\"x\":{}{}",
            "[".repeat(depth),
            "]".repeat(depth)
        ));
        check(body, "traces.0.spans.0 unrecognized_keys");
    }

    #[test]
    fn escapes_and_surrogates() {
        let cases = [
            // Lone high, lone low, high followed by a non-low escape, high at string end.
            (r#""\uD83D""#, "\u{FFFD}"),
            (r#""a\uDE00b""#, "a\u{FFFD}b"),
            (r#""\uD83D\u0041""#, "\u{FFFD}A"),
            (r#""\uD83D\uD83D\uDE00""#, "\u{FFFD}😀"),
            (r#""\ud83d x""#, "\u{FFFD} x"),
            // An escaped backslash followed by `uD83D` is text, not an escape.
            (r#""\\uD83D""#, "\\uD83D"),
            // A proper pair, `\u0000`, and the usual escapes.
            (r#""\uD83D\uDE00""#, "😀"),
            (r#""a\u0000b""#, "a\0b"),
            (r#""\n\"\\\/\t\u00e9é""#, "\n\"\\/\té\u{e9}"),
        ];
        for (lit, expected) in cases {
            let body = with_span(&format!(",\"provider\":{lit}"));
            with_batch(&body, |b| {
                assert_eq!(b.traces[0].spans[0].provider, Some(expected), "{lit}");
            });
        }
        // A repaired surrogate does not disturb what follows, including a later bad number.
        let body = with_span(r#","provider":"\uD83D","modelId":"\\uD83D","ttftMs":1e400"#);
        check(body, "traces.0.spans.0.ttftMs invalid_type");
    }

    #[test]
    fn out_of_range_numbers() {
        let s = "traces.0.spans.0";
        let cases = [
            ("startTime", "1e400", ".startTime invalid_type"),
            ("startTime", "-1e400", ".startTime invalid_type"),
            ("startTime", "18446744073709551616", ".startTime too_big"),
            ("startTime", "-9223372036854775809", ".startTime too_small"),
            ("ttftMs", "1e400", ".ttftMs invalid_type"),
            (
                "usage",
                r#"{"inputTokens":1E+999}"#,
                ".usage.inputTokens invalid_type",
            ),
            (
                "chunkOffsets",
                "[1,18446744073709551616,3]",
                ".chunkOffsets.1 too_big",
            ),
            ("name", "1e400", ".name invalid_type"),
            (
                "metadata",
                r#"{"k":18446744073709551616}"#,
                ".metadata.k invalid_type",
            ),
            // Inside an unknown key: only the unknown key is reported.
            ("x", "[1e400]", " unrecognized_keys"),
            // A huge integer is still a number >= 0; the ones simd-json holds pass as usual.
            ("ttftMs", "18446744073709551616", "ok 1"),
            ("ttftMs", "1e308", "ok 1"),
            ("modelCallMs", "1e-400", "ok 1"),
        ];
        for (field, value, expected) in cases {
            let expected = match expected {
                "ok 1" => expected.to_owned(),
                _ => format!("{s}{expected}"),
            };
            check(with_span_field(field, value), &expected);
        }
        with_batch(&with_span(",\"ttftMs\":18446744073709551616"), |b| {
            assert_eq!(b.traces[0].spans[0].ttft_ms, Some(18446744073709551616.0));
        });
        // Many out-of-range literals are all repaired in one pass.
        let many: String = (0..250).map(|_| ",1e400").collect();
        let mut expected = vec!["traces.0.spans.0.chunkTokens too_big".to_owned()];
        expected.extend((1..100).map(|i| format!("traces.0.spans.0.chunkTokens.{i} invalid_type")));
        check(
            with_span(&format!(",\"chunkTokens\":[0{many}]")),
            &expected.join("\n"),
        );
    }

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

    #[test]
    fn warm_decoder_reuses_storage() {
        // The same decoder and a reset arena decode body after body (the allocation count
        // itself is asserted by the counting-allocator test).
        let mut decoder = Decoder::new();
        let mut arena = Bump::new();
        for extra in ["", ",\"startTime\":1e400", "", ",\"provider\":\"\\uD800\""] {
            let input = with_span(extra);
            let mut body = input.clone().into_bytes();
            arena.reset();
            let r = decoder.decode(PaddedBody::pad(&mut body), &arena);
            assert_eq!(r.is_ok(), !extra.contains("1e400"), "{input}");
        }
        assert!(decoder.tape.is_empty());
    }
}
