//! The OTLP specification's own rules, one test each: protobuf's (unknown fields of every wire
//! type, fields sent twice, UTF-8), OTLP/JSON's (ids, 64-bit integers, enums, names, unknown
//! fields, nulls), empty exports and the answers' `partial_success`.
//! (opentelemetry-proto `docs/specification.md`, "JSON Protobuf Encoding", "Full Success",
//! "Partial Success"; proto3's encoding and JSON mapping.)

use super::*;
use crate::http::otlp::{export_response, Format};
use crate::ingest::otlp::protowire::{write, WireType};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

/// Writes one field (or several) of a message.
type Field<'f> = &'f dyn Fn(&mut Vec<u8>);

/// A message of `fields`, each written by its closure.
fn msg(fields: &[Field<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        f(&mut out);
    }
    out
}

/// Unknown fields (numbers no OTLP message uses) of every wire type: varint, fixed64,
/// length-delimited, a group holding a nested group, fixed32.
fn unknown(out: &mut Vec<u8>) {
    write::uint(out, 1001, u64::MAX);
    write::fixed64(out, 1002, 7);
    write::bytes(out, 1003, b"\xff\xfe not UTF-8, not a message");
    write::key(out, 1004, WireType::StartGroup);
    write::uint(out, 1, 5);
    write::key(out, 2, WireType::StartGroup);
    write::bytes(out, 3, b"x");
    write::key(out, 2, WireType::EndGroup);
    write::key(out, 1004, WireType::EndGroup);
    write::fixed32(out, 1005, 9);
}

fn decode_proto(body: &[u8]) -> Result<String, String> {
    let arena = Bump::new();
    OtlpDecoder::new()
        .decode_protobuf(body, &arena)
        .map(|d| render(&d))
        .map_err(|e| e.to_string())
}

/// An export of one span, every message of it written with (`extra` = `unknown`) or without
/// unknown fields.
fn export_bytes(extra: &dyn Fn(&mut Vec<u8>)) -> Vec<u8> {
    let x = |o: &mut Vec<u8>| extra(o);
    let any = |field: u32, v: &dyn Fn(&mut Vec<u8>, u32)| msg(&[&x, &|o| v(o, field), &x]);
    let string = any(1, &|o, f| write::bytes(o, f, b"v"));
    let int = any(3, &|o, f| write::uint(o, f, -2i64 as u64));
    let kv = |key: &[u8], value: &[u8]| {
        msg(&[&x, &|o| write::bytes(o, 1, key), &x, &|o| {
            write::bytes(o, 2, value)
        }])
    };
    let array = msg(&[&x, &|o| write::bytes(o, 1, &string), &x, &|o| {
        write::bytes(o, 1, &int)
    }]);
    let kvlist = msg(&[&|o| write::bytes(o, 1, &kv(b"in", &int)), &x]);
    let arr_value = any(5, &|o, f| write::bytes(o, f, &array));
    let kvl_value = any(6, &|o, f| write::bytes(o, f, &kvlist));
    let bytes_value = any(7, &|o, f| write::bytes(o, f, b"\x00\xff"));
    let double_value = any(4, &|o, f| write::fixed64(o, f, 1.5f64.to_bits()));
    let status = msg(&[&x, &|o| write::bytes(o, 2, b"it failed"), &x, &|o| {
        write::uint(o, 3, 2)
    }]);
    let event = msg(&[&|o| write::fixed64(o, 1, 5), &x, &|o| {
        write::bytes(o, 2, b"e")
    }]);
    let link = msg(&[&|o| write::bytes(o, 1, &TRACE), &x, &|o| {
        write::fixed32(o, 6, 1)
    }]);
    let span = msg(&[
        &x,
        &|o| write::bytes(o, 1, &TRACE),
        &|o| write::bytes(o, 2, &[0, 0, 0, 0, 0, 0, 0, 1]),
        &x,
        &|o| write::bytes(o, 5, b"s"),
        &|o| write::uint(o, 6, 3),
        &|o| write::fixed64(o, 7, 1_000_000),
        &|o| write::fixed64(o, 8, 3_000_000),
        &|o| write::bytes(o, 9, &kv(b"s", &string)),
        &|o| write::bytes(o, 9, &kv(b"a", &arr_value)),
        &|o| write::bytes(o, 9, &kv(b"m", &kvl_value)),
        &|o| write::bytes(o, 9, &kv(b"b", &bytes_value)),
        &|o| write::bytes(o, 9, &kv(b"d", &double_value)),
        &|o| write::bytes(o, 11, &event),
        &|o| write::bytes(o, 13, &link),
        &|o| write::bytes(o, 15, &status),
        &|o| write::fixed32(o, 16, 0x301),
        &x,
    ]);
    let scope = msg(&[&x, &|o| write::bytes(o, 1, b"lib"), &x]);
    let resource = msg(&[&x, &|o| write::bytes(o, 1, &kv(b"r", &string)), &x]);
    let scope_spans = msg(&[&x, &|o| write::bytes(o, 1, &scope), &x, &|o| {
        write::bytes(o, 2, &span)
    }]);
    let resource_spans = msg(&[&x, &|o| write::bytes(o, 1, &resource), &x, &|o| {
        write::bytes(o, 2, &scope_spans)
    }]);
    msg(&[&x, &|o| write::bytes(o, 1, &resource_spans), &x])
}

/// Protobuf: a field the schema does not know is skipped, whatever its wire type (groups,
/// nested, included), in every message of the export, and the span reads as without them.
#[test]
fn protobuf_unknown_fields_of_every_wire_type_are_skipped_everywhere() {
    let plain = decode_proto(&export_bytes(&|_| {})).unwrap();
    assert_eq!(
        plain,
        "other s status=error error=it failed \
         meta[s=v,a=[\"v\",-2],m={\"in\":-2},b=\"AP8=\",d=1.5,r=v]\n\
         rejected=0 truncated=0 dropped=0"
    );
    let with_unknown = export_bytes(&unknown);
    assert!(with_unknown.len() > export_bytes(&|_| {}).len() + 20 * 40);
    assert_eq!(decode_proto(&with_unknown).unwrap(), plain);
}

/// Protobuf: a scalar field sent twice keeps the last value; a message field sent twice is
/// merged (its scalars overwritten, its repeated fields appended).
#[test]
fn protobuf_fields_sent_twice() {
    let status = |o: &mut Vec<u8>, code: Option<u64>, message: Option<&[u8]>| {
        let mut s = Vec::new();
        if let Some(m) = message {
            write::bytes(&mut s, 2, m);
        }
        if let Some(c) = code {
            write::uint(&mut s, 3, c);
        }
        write::bytes(o, 15, &s);
    };
    let attr = |key: &[u8], value: &[u8]| {
        let mut any = Vec::new();
        write::bytes(&mut any, 1, value);
        let mut kv = Vec::new();
        write::bytes(&mut kv, 1, key);
        write::bytes(&mut kv, 2, &any);
        kv
    };
    let span = msg(&[
        &|o| write::bytes(o, 1, &[9; 3]),
        &|o| write::bytes(o, 1, &TRACE),
        &|o| write::bytes(o, 2, &[0, 0, 0, 0, 0, 0, 0, 1]),
        &|o| write::bytes(o, 5, b"first"),
        &|o| write::bytes(o, 5, b"last"),
        &|o| write::fixed64(o, 7, 9_000_000),
        &|o| write::fixed64(o, 7, 1_000_000),
        &|o| write::fixed64(o, 8, 2_000_000),
        &|o| write::fixed64(o, 8, 4_000_000),
        &|o| status(o, Some(2), None),
        &|o| status(o, None, Some(b"merged")),
    ]);
    let scope = |name: &'static [u8]| {
        move |o: &mut Vec<u8>| {
            let mut s = Vec::new();
            write::bytes(&mut s, 1, name);
            write::bytes(o, 1, &s);
        }
    };
    let resource = |key: &'static [u8]| {
        move |o: &mut Vec<u8>| {
            let mut r = Vec::new();
            write::bytes(&mut r, 1, &attr(key, b"x"));
            write::bytes(o, 1, &r);
        }
    };
    let scope_spans = msg(&[
        &scope(b"one"),
        &|o| write::bytes(o, 2, &span),
        &scope(b"two"),
    ]);
    let resource_spans = msg(&[
        &resource(b"r1"),
        &|o| write::bytes(o, 2, &scope_spans),
        &resource(b"r2"),
    ]);
    let body = msg(&[&|o| write::bytes(o, 1, &resource_spans)]);
    let arena = Bump::new();
    let d = OtlpDecoder::new().decode_protobuf(&body, &arena).unwrap();
    assert_eq!(
        render(&d),
        "other last status=error error=merged meta[r1=x,r2=x]\n\
         rejected=0 truncated=0 dropped=0"
    );
    let sp = &d.batch.traces[0].spans[0];
    assert_eq!((sp.start_time, sp.end_time), (1, 4));
    assert!(
        sp.all_metadata().any(|kv| kv == ("otel.scope.name", "two")),
        "{:?}",
        sp.all_metadata().collect::<Vec<_>>()
    );
}

/// Protobuf: a `string` that is not UTF-8 refuses the export (proto3 requires UTF-8, and
/// prost refuses it), wherever it is; `bytes` fields (ids, `bytesValue`) may be any bytes.
#[test]
fn protobuf_strings_must_be_utf8_bytes_need_not() {
    let bad = b"MARKER\xc3\x28"; // a lead byte, then no continuation
    let mut req = export(vec![span(1, 0, "ok", &[])]);
    let proto = req.encode_to_vec();
    assert!(decode_proto(&proto).is_ok());
    // Each string field in turn replaced by invalid bytes, by patching the encoding: prost
    // cannot write them, so each is a marker of the same length, swapped after encoding.
    let marker = "MARKER!!";
    let places: [&dyn Fn(&mut ExportTraceServiceRequest); 5] = [
        &|r| r.resource_spans[0].scope_spans[0].spans[0].name = marker.into(),
        &|r| r.resource_spans[0].scope_spans[0].spans[0].attributes = kvs(&[(marker, s("v"))]),
        &|r| r.resource_spans[0].scope_spans[0].spans[0].attributes = kvs(&[("k", s(marker))]),
        &|r| {
            r.resource_spans[0].scope_spans[0]
                .scope
                .as_mut()
                .unwrap()
                .name = marker.into()
        },
        &|r| r.resource_spans[0].resource.as_mut().unwrap().attributes = kvs(&[("k", s(marker))]),
    ];
    for (i, place) in places.iter().enumerate() {
        let mut r = req.clone();
        place(&mut r);
        let mut bytes = r.encode_to_vec();
        let at = bytes
            .windows(marker.len())
            .position(|w| w == marker.as_bytes())
            .expect("marker");
        bytes[at..at + marker.len()].copy_from_slice(bad);
        let err = decode_proto(&bytes).unwrap_err();
        assert!(err.contains("not valid UTF-8"), "{i}: {err}");
    }
    // Bytes that are not UTF-8 in bytes fields are fine.
    let sp = &mut req.resource_spans[0].scope_spans[0].spans[0];
    sp.trace_id = vec![0xff; 16];
    sp.span_id = vec![0xfe; 8];
    sp.attributes = vec![opentelemetry_proto::tonic::common::v1::KeyValue {
        key: "b".into(),
        value: Some(AnyValue {
            value: Some(
                opentelemetry_proto::tonic::common::v1::any_value::Value::BytesValue(vec![
                    0xff, 0xc3,
                ]),
            ),
        }),
        ..Default::default()
    }];
    assert_eq!(
        decode_proto(&req.encode_to_vec()).unwrap(),
        "other ok meta[b=\"/8M=\"]\nrejected=0 truncated=0 dropped=0"
    );
}

/// An export that carries no span (no body at all, no resource spans, resources without
/// scopes, scopes without spans) is a full success: nothing rejected, no `partial_success`,
/// so an empty `ExportTraceServiceResponse` (`{}` in JSON).
#[test]
fn empty_exports_are_full_successes() {
    let mut proto_bodies: Vec<Vec<u8>> = vec![
        vec![],
        ExportTraceServiceRequest::default().encode_to_vec(),
        msg(&[&|o| write::bytes(o, 1, &[])]),
    ];
    let mut req = export(vec![]);
    proto_bodies.push(req.encode_to_vec());
    req.resource_spans[0].scope_spans.clear();
    proto_bodies.push(req.encode_to_vec());
    for body in &proto_bodies {
        let arena = Bump::new();
        let d = OtlpDecoder::new().decode_protobuf(body, &arena).unwrap();
        assert_eq!(
            (d.batch.span_count, d.partial_success()),
            (0, None),
            "{body:x?}"
        );
    }
    for body in [
        "{}",
        r#"{"resourceSpans":[]}"#,
        r#"{"resourceSpans":null}"#,
        r#"{"resourceSpans":[{}]}"#,
        r#"{"resourceSpans":[{"resource":{},"scopeSpans":[]}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"scope":{"name":"x"},"spans":[]}]}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":null}]}]}"#,
    ] {
        let mut b = body.as_bytes().to_vec();
        let arena = Bump::new();
        let d = OtlpDecoder::new()
            .decode_json(crate::ingest::body::PaddedBody::pad(&mut b), &arena)
            .unwrap();
        assert_eq!(
            (d.batch.span_count, d.partial_success()),
            (0, None),
            "{body}"
        );
    }
    let mut out = Vec::new();
    export_response(Format::Protobuf, None, &mut out);
    assert!(out.is_empty());
    export_response(Format::Json, None, &mut out);
    assert_eq!(out, b"{}");
}

/// Some spans refused: `partial_success` carries their count and a message in English; the
/// answer's `rejectedSpans` is a decimal string in JSON (int64), a varint in protobuf.
#[test]
fn partial_success_counts_and_describes_the_refused_spans() {
    let mut bad = span(2, 1, "no end", &[]);
    bad.end_time_unix_nano = 0;
    let mut zero = span(3, 1, "zero id", &[]);
    zero.span_id = vec![0; 8];
    let req = export(vec![span(1, 0, "kept", &[]), bad, zero]);
    let arena = Bump::new();
    let proto = req.encode_to_vec();
    let d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
    assert_eq!(d.batch.span_count, 1);
    let (rejected, message) = d.partial_success().expect("partial success");
    assert_eq!(rejected, 2);
    assert_eq!(
        message,
        "2 spans rejected; the first, span 0000000000000002 (\"no end\"), because its end time \
         is not set (endTimeUnixNano is 0)"
    );
    let mut out = Vec::new();
    export_response(Format::Json, d.partial_success(), &mut out);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["partialSuccess"]["rejectedSpans"], "2");
    assert_eq!(v["partialSuccess"]["errorMessage"], message);
}

/// A JSON export's spellings: ids in hex of either case (not base64 first), 64-bit integers as
/// numbers (exact past 2^53) or decimal strings, enums as integers (or their names, or
/// integers in strings), and names in lowerCamelCase or protobuf's snake_case.
#[test]
fn json_ids_integers_and_enums() {
    let span = |fields: &str| {
        format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"name":"n",{fields}}}]}}]}}]}}"#)
    };
    let ids = r#""traceId":"5B8EfFF798038103d269b633813FC60C","spanId":"EEE19B7EC3C1B174""#;
    for times in [
        r#""startTimeUnixNano":1760000000123456789,"endTimeUnixNano":1760000001999999999"#,
        r#""startTimeUnixNano":"1760000000123456789","endTimeUnixNano":"1760000001999999999""#,
        r#""start_time_unix_nano":"1760000000123456789","end_time_unix_nano":1760000001999999999"#,
    ] {
        let body = span(&format!("{ids},{times}"));
        let mut b = body.into_bytes();
        let arena = Bump::new();
        let d = OtlpDecoder::new()
            .decode_json(crate::ingest::body::PaddedBody::pad(&mut b), &arena)
            .unwrap();
        let sp = &d.batch.traces[0].spans[0];
        assert_eq!(
            d.batch.traces[0].trace_id,
            "5b8efff798038103d269b633813fc60c"
        );
        assert_eq!(sp.span_id, "eee19b7ec3c1b174");
        assert_eq!(
            (sp.start_time, sp.end_time),
            (1_760_000_000_123, 1_760_000_001_999)
        );
    }
    let times = r#""startTimeUnixNano":"1","endTimeUnixNano":"2""#;
    for (status, want) in [
        (r#"{"code":2,"message":"m"}"#, "status=error error=m"),
        (r#"{"code":"2","message":"m"}"#, "status=error error=m"),
        (
            r#"{"code":"STATUS_CODE_ERROR","message":"m"}"#,
            "status=error error=m",
        ),
        (r#"{"code":1,"message":"m"}"#, ""),
        (r#"{"code":"STATUS_CODE_OK"}"#, ""),
        (r#"{"code":0}"#, ""),
        (r#"{"code":null}"#, ""),
    ] {
        for kind in ["3", "\"SPAN_KIND_CLIENT\"", "null", "0", "\"3\""] {
            let body = span(&format!(r#"{ids},{times},"kind":{kind},"status":{status}"#));
            let got = decode_json_str(&body).unwrap();
            let want = if want.is_empty() {
                "other n\nrejected=0 truncated=0 dropped=0".to_string()
            } else {
                format!("other n {want}\nrejected=0 truncated=0 dropped=0")
            };
            assert_eq!(got, want, "{kind} {status}");
        }
    }
    for (value, meta) in [
        (r#"{"intValue":7}"#, "7"),
        (
            r#"{"intValue":"-9223372036854775808"}"#,
            "-9223372036854775808",
        ),
        (r#"{"intValue":9223372036854775807}"#, "9223372036854775807"),
        (r#"{"int_value":"12"}"#, "12"),
        (r#"{"doubleValue":2}"#, "2"),
        (r#"{"doubleValue":"-Infinity"}"#, "\"-Infinity\""),
        (r#"{"bytesValue":"AP8="}"#, "\"AP8=\""),
        (r#"{"bytesValue":"AP8"}"#, "\"AP8=\""),
        (r#"{"bytesValue":"_-8="}"#, "\"/+8=\""),
    ] {
        let body = json_span_with(&format!(r#"{{"key":"k","value":{value}}}"#));
        assert_eq!(
            decode_json_str(&body).unwrap(),
            format!("other n meta[k={meta}]\nrejected=0 truncated=0 dropped=0"),
            "{value}"
        );
    }
    for (bad, why) in [
        (r#""kind":"SPAN_KIND_NONSENSE""#, "kind must be an enum"),
        (r#""kind":1.5"#, "kind must be an enum"),
        (r#""status":{"code":true}"#, "status code must be an enum"),
    ] {
        let body = span(&format!("{ids},{times},{bad}"));
        let err = decode_json_str(&body).unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

/// OTLP/JSON receivers must ignore fields with unknown names, of any JSON type, in every
/// message, and read the message as if they were not there.
#[test]
fn json_unknown_fields_are_ignored_everywhere() {
    let u = r#""zz":{"a":[1,{"b":null}],"c":"d"},"yy":[[]],"xx":1.5,"ww":"s","vv":true,"uu":null"#;
    let body = |u: &str| {
        let c = if u.is_empty() { "" } else { "," };
        format!(
            r#"{{{u}{c}"resourceSpans":[{{{u}{c}"resource":{{{u}{c}"attributes":[{{{u}{c}"key":"r","value":{{{u}{c}"stringValue":"x"}}}}]}},
              "scopeSpans":[{{{u}{c}"scope":{{{u}{c}"name":"lib"}},"spans":[{{{u}{c}
                "traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","name":"n",
                "startTimeUnixNano":"1","endTimeUnixNano":"2",
                "status":{{{u}{c}"code":2}},
                "events":[{{{u}{c}"name":"e"}}],"links":[{{{u}{c}"traceId":"5b8efff798038103d269b633813fc60c"}}],
                "attributes":[{{"key":"a","value":{{{u}{c}"arrayValue":{{{u}{c}"values":[{{{u}{c}"intValue":"1"}}]}}}}}},
                              {{"key":"m","value":{{"kvlistValue":{{{u}{c}"values":[{{"key":"k","value":{{"boolValue":false}}}}]}}}}}}]
              }}]}}]}}]}}"#
        )
    };
    let plain = decode_json_str(&body("")).unwrap();
    assert_eq!(
        plain,
        "other n status=error meta[a=[1],m={\"k\":false},r=x]\nrejected=0 truncated=0 dropped=0"
    );
    assert_eq!(decode_json_str(&body(u)).unwrap(), plain);
}

/// `null` for any field is the field absent (proto3's JSON mapping), also where the field is
/// a message, a list, an id or an integer.
#[test]
fn json_null_is_absent_for_every_field() {
    let body = r#"{"resourceSpans":[{"resource":null,"schemaUrl":null,"scopeSpans":[{"scope":null,"schemaUrl":null,"spans":[
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","parentSpanId":null,
         "traceState":null,"name":"n","kind":null,"startTimeUnixNano":"1","endTimeUnixNano":"2",
         "attributes":null,"droppedAttributesCount":null,"events":null,"droppedEventsCount":null,
         "links":null,"droppedLinksCount":null,"status":null,"flags":null},
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000002","parentSpanId":"0000000000000001",
         "name":null,"startTimeUnixNano":"1","endTimeUnixNano":"2","status":{"code":2,"message":null},
         "attributes":[null,{"key":null,"value":{"arrayValue":null}},{"key":"k","value":{"arrayValue":{"values":null}}},
                       {"key":"j","value":{"kvlistValue":{"values":[null]}}}]},
        {"traceId":null,"spanId":"0000000000000003","name":"no trace id","startTimeUnixNano":"1","endTimeUnixNano":null}
    ]}]}]}"#;
    assert_eq!(
        decode_json_str(body).unwrap(),
        "other n\n\
         other  status=error meta[=null,k=[],j={}]\n\
         rejected=1 truncated=0 dropped=0\n\
         1 span rejected; the first, span 0000000000000003 (\"no trace id\"), because its trace \
         id is not 16 bytes, or is all zero"
    );
}
