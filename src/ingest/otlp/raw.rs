//! OTLP spans as both decoders read them, before mapping: borrowed ids, names and attribute
//! values, the interface (`SpanSink`) through which the decoders hand them on, and the JSON
//! rendering of attribute values.
//!
//! Strings borrow from the request body; nested values (arrays, key-value lists) and JSON ids
//! decoded to bytes live in the request's arena. A span's own attributes live in a scratch
//! vector the decoder reuses for the next span, so a sink must copy what it keeps.

use std::fmt::Write as _;

use bumpalo::collections::String as BString;
use bumpalo::Bump;

/// An attribute value (`AnyValue`). `Empty` is an `AnyValue` with no field set, or none at all.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Value<'a> {
    #[default]
    Empty,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(&'a [u8]),
    Array(&'a [Value<'a>]),
    Kvlist(&'a [Attr<'a>]),
}

/// One attribute (`KeyValue`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Attr<'a> {
    pub key: &'a str,
    pub value: Value<'a>,
}

/// `AnyValue`s nested in arrays and key-value lists deeper than this refuse the body (an
/// attribute's own value is depth 1). prost refuses beyond its 100 message levels; this is far
/// below that, so whatever this reader accepts, prost accepts too.
pub const MAX_VALUE_DEPTH: u32 = 16;

/// What a `ResourceSpans` says about where its spans come from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resource<'a> {
    pub attributes: &'a [Attr<'a>],
}

/// The instrumentation scope (library) of a `ScopeSpans`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub attributes: &'a [Attr<'a>],
}

/// Bits of `RawSpan::unreadable_ids`: the ids a JSON body spelled as neither hex nor base64
/// of 8 or 16 bytes (`json_id` gave `None`).
pub const TRACE_ID: u8 = 1;
pub const SPAN_ID: u8 = 2;
pub const PARENT_SPAN_ID: u8 = 4;

/// One span as sent. Fields the mapping does not use (trace state, flags, dropped counts) are
/// read and checked but not kept; events and links are only counted.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawSpan<'a, 's> {
    pub trace_id: &'a [u8],
    pub span_id: &'a [u8],
    /// Empty for a root span.
    pub parent_span_id: &'a [u8],
    pub name: &'a str,
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub status_message: &'a str,
    pub attributes: &'s [Attr<'a>],
    pub events: u32,
    pub links: u32,
    /// Which ids a JSON body spelled unreadably (`TRACE_ID`, `SPAN_ID`, `PARENT_SPAN_ID`; the
    /// id itself is then empty): the span is refused, and its refusal says why.
    pub unreadable_ids: u8,
}

/// Where a decoder hands each span, with the resource and scope it came under.
pub trait SpanSink<'a> {
    fn span(&mut self, span: &RawSpan<'a, '_>, scope: &Scope<'a>, resource: &Resource<'a>);

    /// About `spans` more spans are coming (a scope's count, known before its spans are read),
    /// so that what the sink keeps per span can be sized once.
    fn reserve(&mut self, _spans: usize) {}
}

/// Lower-case hex of `bytes`, in the arena.
pub fn hex<'a>(bytes: &[u8], arena: &'a Bump) -> &'a str {
    let out = arena.alloc_slice_fill_copy(bytes.len() * 2, 0u8);
    crate::hex::encode_into(bytes, out);
    // SAFETY: hex digits are ASCII, so UTF-8 (std's check costs more than the encoding).
    unsafe { std::str::from_utf8_unchecked(out) }
}

/// A value as JSON text, for metadata and content fields: strings quoted and escaped, bytes as
/// a base64 string (as OTLP/JSON writes them), non-finite doubles as the strings `"NaN"`,
/// `"Infinity"`, `"-Infinity"`, an empty value as `null`.
pub fn to_json<'a>(v: &Value<'_>, arena: &'a Bump) -> &'a str {
    let mut out = BString::new_in(arena);
    write_json(v, &mut out);
    out.into_bump_str()
}

fn write_json(v: &Value<'_>, out: &mut BString<'_>) {
    match *v {
        Value::Empty => out.push_str("null"),
        Value::Str(s) => write_json_str(s, out),
        Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Double(d) if d.is_nan() => out.push_str("\"NaN\""),
        Value::Double(d) if d.is_infinite() => out.push_str(if d > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        }),
        // The shortest digits that read back as `d`; with an exponent where the plain form
        // would run into zeros past 16 digits (`1e300` was 301 characters, enough alone to pass
        // a metadata value's cut).
        Value::Double(d) if d != 0.0 && !(1e-6..1e16).contains(&d.abs()) => {
            let _ = write!(out, "{d:e}");
        }
        Value::Double(d) => {
            let _ = write!(out, "{d}");
        }
        Value::Bytes(b) => {
            out.push('"');
            base64_into(b, out);
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Kvlist(kvs) => {
            out.push('{');
            for (i, kv) in kvs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_str(kv.key, out);
                out.push(':');
                write_json(&kv.value, out);
            }
            out.push('}');
        }
    }
}

/// `s` as a JSON string literal.
pub fn write_json_str(s: &str, out: &mut BString<'_>) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1F => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_into(bytes: &[u8], out: &mut BString<'_>) {
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let v = u32::from(chunk[0]) << 16
            | u32::from(*chunk.get(1).unwrap_or(&0)) << 8
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= n {
                out.push(BASE64[(v >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

/// Decodes standard or URL-safe base64 (padding optional) into the arena; `None` if `s` is
/// not base64.
pub fn base64_decode<'a>(s: &str, arena: &'a Bump) -> Option<&'a [u8]> {
    let t = s.trim_end_matches('=');
    if s.len() - t.len() > 2 || t.len() % 4 == 1 {
        return None;
    }
    let out = arena.alloc_slice_fill_copy(t.len() * 3 / 4, 0u8);
    let mut acc = 0u32;
    let mut bits = 0;
    let mut at = 0;
    for c in t.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out[at] = (acc >> bits) as u8;
            at += 1;
        }
    }
    Some(&out[..at])
}

/// Decodes hex (either case) into the arena; `None` if `s` is not an even number of hex digits.
pub fn hex_decode<'a>(s: &str, arena: &'a Bump) -> Option<&'a [u8]> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    let out = arena.alloc_slice_fill_copy(b.len() / 2, 0u8);
    crate::hex::decode_into(b, out)?;
    Some(out)
}

/// A trace or span id as OTLP/JSON writes it: hex, as the specification says (16 or 32 digits,
/// either case), or base64 (as protobuf's own JSON mapping and some exporters write bytes: 12
/// or 24 characters). Decided by length and alphabet; anything else is `None`; an empty
/// string is an absent id.
pub fn json_id<'a>(s: &str, arena: &'a Bump) -> Option<&'a [u8]> {
    if s.is_empty() {
        return Some(&[]);
    }
    let decoded = match s.len() {
        16 | 32 => hex_decode(s, arena).or_else(|| base64_decode(s, arena)),
        _ => base64_decode(s, arena).or_else(|| hex_decode(s, arena)),
    };
    match decoded {
        Some(b) if b.len() == 8 || b.len() == 16 => Some(b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_json() {
        let arena = Bump::new();
        let nested = [Value::Int(-3), Value::Str("a\"b\\c\n\u{1}é")];
        let kv = [
            Attr {
                key: "k",
                value: Value::Array(&nested),
            },
            Attr {
                key: "e",
                value: Value::Empty,
            },
        ];
        let cases = [
            (Value::Empty, "null"),
            (Value::Str("x"), "\"x\""),
            (Value::Bool(true), "true"),
            (Value::Int(i64::MIN), "-9223372036854775808"),
            (Value::Double(0.1), "0.1"),
            (Value::Double(1e300), "1e300"),
            (Value::Double(-2.5e-300), "-2.5e-300"),
            (Value::Double(1e16), "1e16"),
            (Value::Double(9_999_999_999_999_998.0), "9999999999999998"),
            (Value::Double(1e-6), "0.000001"),
            (Value::Double(0.0), "0"),
            (Value::Double(-0.0), "-0"),
            (Value::Double(f64::NAN), "\"NaN\""),
            (Value::Double(f64::NEG_INFINITY), "\"-Infinity\""),
            (Value::Bytes(b"\x00\xffab"), "\"AP9hYg==\""),
            (Value::Array(&nested), "[-3,\"a\\\"b\\\\c\\n\\u0001é\"]"),
            (
                Value::Kvlist(&kv),
                "{\"k\":[-3,\"a\\\"b\\\\c\\n\\u0001é\"],\"e\":null}",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(to_json(&v, &arena), want, "{v:?}");
        }
    }

    #[test]
    fn ids_in_hex_and_base64() {
        let arena = Bump::new();
        let trace: [u8; 16] = [
            0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f,
            0xc6, 0x0c,
        ];
        let short: &[u8] = &[0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74];
        let cases: &[(&str, Option<&[u8]>)] = &[
            ("5b8efff798038103d269b633813fc60c", Some(&trace)),
            ("5B8EFFF798038103D269B633813FC60C", Some(&trace)),
            ("W47/95gDgQPSabYzgT/GDA==", Some(&trace)),
            ("W47_95gDgQPSabYzgT_GDA", Some(&trace)),
            ("eee19b7ec3c1b174", Some(short)),
            ("7uGbfsPBsXQ=", Some(short)),
            ("", Some(&[])),
            ("zz", None),
            ("5b8efff798038103d269b633813fc60", None),
            ("not an id at all", None),
            ("AAAA", None),
        ];
        for (s, want) in cases {
            assert_eq!(json_id(s, &arena), *want, "{s}");
        }
        assert_eq!(hex(&trace, &arena), "5b8efff798038103d269b633813fc60c");
        let mut b = BString::new_in(&arena);
        base64_into(&trace, &mut b);
        assert_eq!(b.as_str(), "W47/95gDgQPSabYzgT/GDA==");
        for n in 0..7 {
            let bytes: Vec<u8> = (0..n).map(|i| i * 37 + 1).collect();
            let mut b = BString::new_in(&arena);
            base64_into(&bytes, &mut b);
            assert_eq!(base64_decode(&b, &arena), Some(&bytes[..]), "{n}");
        }
    }
}
