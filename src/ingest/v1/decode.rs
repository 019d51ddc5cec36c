//! Request body -> `wire::Batch`: simd-json parses the body where it lies, in the buffer it
//! was read into (which has simd-json's padding after it: `PaddedBody`), into a reused tape;
//! then the schema walk (`validate`) turns the tape into arena-allocated wire types.
//!
//! The parse, with its rare repairs (lone surrogates, out-of-range numbers: for v1 both) and
//! its error message, is `ingest::json`'s, shared with OTLP/JSON.

use std::mem;

use bumpalo::Bump;
use simd_json::{Buffers, Node, Tape};

use super::validate;
use crate::ingest::body::PaddedBody;
use crate::ingest::json::{self, JsonError, Placeholder, Repairs};
use crate::ingest::wire::Batch;
use crate::ingest::DecodeError;

const BOM: &[u8] = b"\xEF\xBB\xBF";

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
        // The walk finds the placeholders by their address.
        let base = buf.as_ptr() as usize;
        self.placeholders.clear();
        let mut tape: Tape<'a> = Tape(mem::take(&mut self.tape)).reset();
        let repairs = Repairs {
            numbers: Some(&mut self.placeholders),
        };
        if let Err(e) = json::parse_in_place(buf, len, bom, &mut self.buffers, &mut tape, repairs) {
            self.tape = tape.reset().0;
            return Err(invalid_json(e));
        }
        self.placeholders.sort_unstable_by_key(|p| p.offset);
        let result = validate::batch(&tape.0, arena, &self.placeholders, base);
        self.tape = tape.reset().0;
        result.map_err(DecodeError::Schema)
    }
}

/// The `invalid_json` refusal of a body that is not JSON.
#[cold]
pub(super) fn invalid_json(e: JsonError) -> DecodeError {
    DecodeError::InvalidJson(format!("the body is not valid JSON: {e}"))
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
            // A byte that is not printable ASCII is shown by value, not as a Latin-1 `char`.
            (b" \xEF\xBB\xBF{}".to_vec(), "invalid_json: the body is not valid JSON: unexpected byte 0xEF (at byte 1)"),
            (b"[\x0c1]".to_vec(), "invalid_json: the body is not valid JSON: unexpected byte 0x0C (at byte 1)"),
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
