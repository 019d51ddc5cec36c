//! The bytes of OTLP/HTTP answers, in the request's format: `ExportTraceServiceResponse` for a
//! success (with `partial_success` when spans were rejected), `google.rpc.Status` for errors.
//!
//! Written by hand into a buffer the caller owns (a connection's output), so answering
//! allocates nothing once that buffer has grown. JSON follows the protobuf JSON mapping with
//! OTLP's lowerCamelCase names; the `int64` `rejectedSpans` is a decimal string, as that
//! mapping writes 64-bit integers (receivers accept both).

use super::json::write_json_string;
use crate::ingest::otlp::protowire::{self, write};

/// The answer's encoding: the request's content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`.
    Json,
}

impl Format {
    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Protobuf => "application/x-protobuf",
            Format::Json => "application/json",
        }
    }
}

/// `google.rpc.Code` values the OTLP answers use.
pub mod code {
    /// `400`: the body is not an export.
    pub const INVALID_ARGUMENT: i32 = 3;
    /// `403`: not allowed (e.g. the monthly quota is used up).
    pub const PERMISSION_DENIED: i32 = 7;
    /// `429`: rate limited.
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    /// `503`: draining, buffer full, storage unavailable.
    pub const UNAVAILABLE: i32 = 14;
    /// `401`: no valid key.
    pub const UNAUTHENTICATED: i32 = 16;
    /// `404`: no such path.
    pub const NOT_FOUND: i32 = 5;
    /// `408`, `504`: a deadline passed.
    pub const DEADLINE_EXCEEDED: i32 = 4;
    /// `405`, `501`, `505`: not implemented here.
    pub const UNIMPLEMENTED: i32 = 12;
    /// Other `5xx`.
    pub const INTERNAL: i32 = 13;
}

/// Appends an `ExportTraceServiceResponse`: empty on full success, else with
/// `partial_success { rejected_spans, error_message }`.
pub fn export_response(format: Format, partial: Option<(u64, &str)>, out: &mut Vec<u8>) {
    match (format, partial) {
        (Format::Protobuf, None) => {}
        (Format::Protobuf, Some((rejected, message))) => {
            // ExportTracePartialSuccess { int64 rejected_spans = 1; string error_message = 2; }
            let mut inner_len = 0;
            if rejected != 0 {
                inner_len += 1 + varint_len(rejected);
            }
            if !message.is_empty() {
                inner_len += 1 + varint_len(message.len() as u64) + message.len();
            }
            write::key(out, 1, protowire::WireType::Len);
            write::varint(out, inner_len as u64);
            if rejected != 0 {
                write::uint(out, 1, rejected);
            }
            if !message.is_empty() {
                write::bytes(out, 2, message.as_bytes());
            }
        }
        (Format::Json, None) => out.extend_from_slice(b"{}"),
        (Format::Json, Some((rejected, message))) => {
            out.extend_from_slice(b"{\"partialSuccess\":{\"rejectedSpans\":\"");
            push_decimal(out, rejected);
            out.extend_from_slice(b"\",\"errorMessage\":");
            write_json_string(out, message);
            out.extend_from_slice(b"}}");
        }
    }
}

/// Appends a `google.rpc.Status { code, message }` (no details).
pub fn status(format: Format, code: i32, message: &str, out: &mut Vec<u8>) {
    match format {
        Format::Protobuf => {
            if code != 0 {
                // int32: negative values are ten-byte varints, as protobuf writes them.
                write::uint(out, 1, code as i64 as u64);
            }
            if !message.is_empty() {
                write::bytes(out, 2, message.as_bytes());
            }
        }
        Format::Json => {
            out.extend_from_slice(b"{\"code\":");
            push_decimal_signed(out, code.into());
            out.extend_from_slice(b",\"message\":");
            write_json_string(out, message);
            out.push(b'}');
        }
    }
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn push_decimal_signed(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_decimal(out, v.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTracePartialSuccess, ExportTraceServiceResponse,
    };
    use prost::Message;

    /// `google.rpc.Status` as prost would decode it (only the fields this module writes).
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
    }

    #[test]
    fn export_responses_decode_with_prost() {
        type Case<'s> = (Option<(u64, &'s str)>, Option<(i64, &'s str)>);
        let cases: [Case<'_>; 4] = [
            (None, None),
            (
                Some((3, "3 spans rejected: bad ids")),
                Some((3, "3 spans rejected: bad ids")),
            ),
            (Some((300, "")), Some((300, ""))),
            (Some((1, &"é".repeat(100))), Some((1, &"é".repeat(100)))),
        ];
        for (partial, expected) in cases {
            let mut out = Vec::new();
            export_response(Format::Protobuf, partial, &mut out);
            let got = ExportTraceServiceResponse::decode(&out[..]).expect("decodes");
            let want = ExportTraceServiceResponse {
                partial_success: expected.map(|(n, m)| ExportTracePartialSuccess {
                    rejected_spans: n,
                    error_message: m.into(),
                }),
            };
            assert_eq!(got, want, "{partial:?}");
            // And JSON, through a JSON parser.
            let mut out = Vec::new();
            export_response(Format::Json, partial, &mut out);
            let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
            match expected {
                None => assert_eq!(v, serde_json::json!({})),
                Some((n, m)) => assert_eq!(
                    v,
                    serde_json::json!({"partialSuccess": {"rejectedSpans": n.to_string(), "errorMessage": m}})
                ),
            }
        }
    }

    #[test]
    fn statuses_decode_with_prost() {
        for (code, message) in [
            (
                code::INVALID_ARGUMENT,
                "the body is not valid JSON: \"x\"\n(at byte 3)",
            ),
            (code::UNAVAILABLE, ""),
            (0, "no code"),
            (-1, "negative"),
        ] {
            let mut out = Vec::new();
            status(Format::Protobuf, code, message, &mut out);
            let got = RpcStatus::decode(&out[..]).expect("decodes");
            assert_eq!(
                got,
                RpcStatus {
                    code,
                    message: message.into()
                }
            );
            let mut out = Vec::new();
            status(Format::Json, code, message, &mut out);
            let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
            assert_eq!(v, serde_json::json!({"code": code, "message": message}));
        }
        assert_eq!(Format::Json.content_type(), "application/json");
    }

    #[test]
    fn varint_lengths() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u64::MAX] {
            let mut out = Vec::new();
            write::varint(&mut out, v);
            assert_eq!(varint_len(v), out.len(), "{v}");
        }
    }
}
