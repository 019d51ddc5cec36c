//! The OTLP decoder's fuzz property (`fuzz_decode`), with prost's decode of the same bytes
//! (opentelemetry-proto's generated types) as the independent oracle.
//!
//! For any bytes: neither decoder (protobuf, JSON) panics; the mapping keeps or refuses every
//! span the reader saw; and the reader agrees with prost: if both accept the body, they see
//! the same spans with the same ids, names, kinds, times, status, attributes (values compared
//! exactly, doubles by their bits), resource and scope, and the same number of events and
//! links; a body prost refuses is refused; a body prost accepts is accepted, unless values are
//! nested past `MAX_VALUE_DEPTH` (prost's limit is 100 messages, ours lower on purpose).
//! And the JSON reader agrees with the protobuf one: prost's decode of an accepted body,
//! written as OTLP/JSON, is read by `json.rs` as the same spans (`json_agrees`).
//!
//! The oracle is compiled for tests and for the fuzz build (`--cfg fuzzing`), where
//! opentelemetry-proto is a dependency; the server never links it.

use bumpalo::Bump;

use super::OtlpDecoder;

/// Decodes arbitrary bytes as OTLP protobuf and as OTLP/JSON and checks the property above.
pub fn fuzz_decode(data: &[u8]) {
    let arena = Bump::new();
    let mut decoder = OtlpDecoder::new();
    let decoded = decoder.decode_protobuf(data, &arena);
    #[cfg(any(test, fuzzing))]
    oracle::check(data, decoded.as_ref().ok());
    #[cfg(not(any(test, fuzzing)))]
    let _ = decoded;
    let mut copy = data.to_vec();
    let json_arena = Bump::new();
    if let Ok(d) = decoder.decode_json(crate::ingest::body::PaddedBody::pad(&mut copy), &json_arena)
    {
        let kept: usize = d.batch.traces.iter().map(|t| t.spans.len()).sum();
        assert_eq!(kept, d.batch.span_count);
    }
}

#[cfg(any(test, fuzzing))]
mod oracle {
    use bumpalo::Bump;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use prost::Message;

    use super::super::proto;
    use super::super::protowire::ProtoErrorKind;
    use super::super::raw::{Attr, RawSpan, Resource, Scope, SpanSink, Value};
    use super::super::Decoded;

    /// A value as both sides can spell it.
    #[derive(Debug, Clone, PartialEq)]
    enum CValue {
        Empty,
        Str(String),
        Bool(bool),
        Int(i64),
        /// The bits, so NaN equals NaN.
        Double(u64),
        Bytes(Vec<u8>),
        Array(Vec<CValue>),
        Kvlist(Vec<(String, CValue)>),
    }

    type CAttrs = Vec<(String, CValue)>;

    /// A span with everything the reader reports about it.
    #[derive(Debug, Clone, PartialEq)]
    struct CSpan {
        resource: CAttrs,
        scope: (String, String, CAttrs),
        trace_id: Vec<u8>,
        span_id: Vec<u8>,
        parent_span_id: Vec<u8>,
        name: String,
        kind: i32,
        start: u64,
        end: u64,
        status: (i32, String),
        attributes: CAttrs,
        events: u32,
        links: u32,
    }

    fn ours(v: &Value<'_>) -> CValue {
        match *v {
            Value::Empty => CValue::Empty,
            Value::Str(s) => CValue::Str(s.into()),
            Value::Bool(b) => CValue::Bool(b),
            Value::Int(i) => CValue::Int(i),
            Value::Double(d) => CValue::Double(d.to_bits()),
            Value::Bytes(b) => CValue::Bytes(b.into()),
            Value::Array(items) => CValue::Array(items.iter().map(ours).collect()),
            Value::Kvlist(kvs) => CValue::Kvlist(our_attrs(kvs)),
        }
    }

    fn our_attrs(kvs: &[Attr<'_>]) -> CAttrs {
        kvs.iter()
            .map(|a| (a.key.to_string(), ours(&a.value)))
            .collect()
    }

    fn theirs(v: Option<&AnyValue>) -> CValue {
        use any_value::Value as V;
        match v.and_then(|v| v.value.as_ref()) {
            None | Some(V::StringValueStrindex(_)) => CValue::Empty,
            Some(V::StringValue(s)) => CValue::Str(s.clone()),
            Some(V::BoolValue(b)) => CValue::Bool(*b),
            Some(V::IntValue(i)) => CValue::Int(*i),
            Some(V::DoubleValue(d)) => CValue::Double(d.to_bits()),
            Some(V::BytesValue(b)) => CValue::Bytes(b.clone()),
            Some(V::ArrayValue(a)) => {
                CValue::Array(a.values.iter().map(|v| theirs(Some(v))).collect())
            }
            Some(V::KvlistValue(l)) => CValue::Kvlist(their_attrs(&l.values)),
        }
    }

    fn their_attrs(kvs: &[KeyValue]) -> CAttrs {
        kvs.iter()
            .map(|kv| (kv.key.clone(), theirs(kv.value.as_ref())))
            .collect()
    }

    /// Collects what the reader hands on.
    #[derive(Default)]
    struct Collect(Vec<CSpan>);

    impl<'a> SpanSink<'a> for Collect {
        fn span(&mut self, s: &RawSpan<'a, '_>, scope: &Scope<'a>, resource: &Resource<'a>) {
            self.0.push(CSpan {
                resource: our_attrs(resource.attributes),
                scope: (
                    scope.name.into(),
                    scope.version.into(),
                    our_attrs(scope.attributes),
                ),
                trace_id: s.trace_id.into(),
                span_id: s.span_id.into(),
                parent_span_id: s.parent_span_id.into(),
                name: s.name.into(),
                kind: s.kind,
                start: s.start_ns,
                end: s.end_ns,
                status: (s.status_code, s.status_message.into()),
                attributes: our_attrs(s.attributes),
                events: s.events,
                links: s.links,
            });
        }
    }

    fn prost_spans(req: &ExportTraceServiceRequest) -> Vec<CSpan> {
        let mut out = Vec::new();
        for rs in &req.resource_spans {
            let resource = rs
                .resource
                .as_ref()
                .map_or_else(Vec::new, |r| their_attrs(&r.attributes));
            for ss in &rs.scope_spans {
                let scope = ss.scope.as_ref().map_or_else(
                    || (String::new(), String::new(), Vec::new()),
                    |s| {
                        (
                            s.name.clone(),
                            s.version.clone(),
                            their_attrs(&s.attributes),
                        )
                    },
                );
                for sp in &ss.spans {
                    out.push(CSpan {
                        resource: resource.clone(),
                        scope: scope.clone(),
                        trace_id: sp.trace_id.clone(),
                        span_id: sp.span_id.clone(),
                        parent_span_id: sp.parent_span_id.clone(),
                        name: sp.name.clone(),
                        kind: sp.kind,
                        start: sp.start_time_unix_nano,
                        end: sp.end_time_unix_nano,
                        status: sp
                            .status
                            .as_ref()
                            .map_or((0, String::new()), |s| (s.code, s.message.clone())),
                        attributes: their_attrs(&sp.attributes),
                        events: sp.events.len() as u32,
                        links: sp.links.len() as u32,
                    });
                }
            }
        }
        out
    }

    /// The property, given the full decoder's result for `data`.
    pub(super) fn check(data: &[u8], decoded: Option<&Decoded<'_>>) {
        let arena = Bump::new();
        let mut collect = Collect::default();
        let ours = proto::walk(data, &arena, &mut collect).map(|()| collect.0);
        let theirs = ExportTraceServiceRequest::decode(data);
        assert_eq!(
            ours.is_ok(),
            decoded.is_some(),
            "the reader and the decoder agree"
        );
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => {
                let spans = prost_spans(&theirs);
                assert_eq!(ours, spans, "the same spans as prost");
                let d = decoded.expect("accepted");
                assert_eq!(
                    d.batch.span_count as u64 + d.rejected_spans,
                    ours.len() as u64,
                    "every span kept or refused"
                );
                let kept: usize = d.batch.traces.iter().map(|t| t.spans.len()).sum();
                assert_eq!(kept, d.batch.span_count);
                json_agrees(&theirs);
            }
            (Ok(ours), Err(e)) => {
                panic!(
                    "accepted a body prost refuses ({e}); read {} spans",
                    ours.len()
                )
            }
            (Err(e), Ok(_)) => {
                // Only nesting deeper than our limit may be refused where prost accepts.
                assert_eq!(
                    e.kind,
                    ProtoErrorKind::TooDeep,
                    "refused a body prost accepts: {e}"
                );
            }
            (Err(_), Err(_)) => {}
        }
    }
    /// The JSON front end reads the same spans as the protobuf one: an export prost accepted,
    /// written as OTLP/JSON (`to_json`), walked by `json.rs`, gives prost's spans, up to what
    /// JSON cannot say (an id of a length other than 8 or 16 bytes is unreadable there, a NaN's payload).
    fn json_agrees(req: &ExportTraceServiceRequest) {
        let mut text = to_json(req).into_bytes();
        let arena = Bump::new();
        let mut collect = Collect::default();
        let tape = simd_json::to_tape(&mut text).expect("the oracle writes valid JSON");
        let read = super::super::json::walk(&tape.0, &arena, &mut collect);
        assert_eq!(
            read,
            Ok(()),
            "the JSON reader refused prost's export written as JSON"
        );
        let want = prost_spans(req);
        let got = collect.0;
        assert_eq!(
            got.len(),
            want.len(),
            "the JSON reader saw another number of spans"
        );
        for (got, want) in got.into_iter().zip(want) {
            let (got, want) = comparable(got, want);
            assert_eq!(
                got, want,
                "the JSON reader and the protobuf reader see different spans"
            );
        }
    }

    /// What JSON cannot say the same way: an id of a length other than 8 or 16 bytes (its hex
    /// may read as base64, else it is unreadable (`RawSpan::unreadable_ids`); either way the mapping refuses it or reads
    /// some other valid id, by design), and a NaN's payload.
    fn comparable(mut got: CSpan, want: CSpan) -> (CSpan, CSpan) {
        for (g, w) in [
            (&mut got.trace_id, &want.trace_id),
            (&mut got.span_id, &want.span_id),
            (&mut got.parent_span_id, &want.parent_span_id),
        ] {
            if !matches!(w.len(), 0 | 8 | 16) {
                g.clone_from(w);
            }
        }
        (normalise(got), normalise(want))
    }

    fn normalise(mut s: CSpan) -> CSpan {
        fn value(v: &mut CValue) {
            match v {
                CValue::Double(bits) if f64::from_bits(*bits).is_nan() => {
                    *bits = f64::NAN.to_bits()
                }
                CValue::Array(items) => items.iter_mut().for_each(value),
                CValue::Kvlist(kvs) => kvs.iter_mut().for_each(|(_, v)| value(v)),
                _ => {}
            }
        }
        for attrs in [&mut s.resource, &mut s.scope.2, &mut s.attributes] {
            attrs.iter_mut().for_each(|(_, v)| value(v));
        }
        s
    }

    /// An export as the OTLP/JSON specification writes it: ids in hex, 64-bit integers as
    /// decimal strings, bytes in base64, enums as numbers.
    fn to_json(req: &ExportTraceServiceRequest) -> String {
        use std::fmt::Write;
        fn string(out: &mut String, s: &str) {
            out.push_str(&serde_json::to_string(s).expect("a string"));
        }
        fn hex(out: &mut String, b: &[u8]) {
            out.push('"');
            for x in b {
                let _ = write!(out, "{x:02x}");
            }
            out.push('"');
        }
        fn base64(out: &mut String, b: &[u8]) {
            const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            out.push('"');
            for c in b.chunks(3) {
                let n = (u32::from(c[0]) << 16)
                    | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*c.get(2).unwrap_or(&0));
                for i in 0..4 {
                    if i <= c.len() {
                        out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
                    } else {
                        out.push('=');
                    }
                }
            }
            out.push('"');
        }
        fn any(out: &mut String, v: Option<&AnyValue>) {
            use any_value::Value as V;
            out.push('{');
            match v.and_then(|v| v.value.as_ref()) {
                None | Some(V::StringValueStrindex(_)) => {}
                Some(V::StringValue(s)) => {
                    out.push_str("\"stringValue\":");
                    string(out, s);
                }
                Some(V::BoolValue(b)) => {
                    let _ = write!(out, "\"boolValue\":{b}");
                }
                Some(V::IntValue(i)) => {
                    let _ = write!(out, "\"intValue\":\"{i}\"");
                }
                Some(V::DoubleValue(d)) if d.is_nan() => out.push_str("\"doubleValue\":\"NaN\""),
                Some(V::DoubleValue(d)) if d.is_infinite() => {
                    let sign = if *d < 0.0 { "-" } else { "" };
                    let _ = write!(out, "\"doubleValue\":\"{sign}Infinity\"");
                }
                Some(V::DoubleValue(d)) => {
                    let _ = write!(out, "\"doubleValue\":{d:?}");
                }
                Some(V::BytesValue(b)) => {
                    out.push_str("\"bytesValue\":");
                    base64(out, b);
                }
                Some(V::ArrayValue(a)) => {
                    out.push_str("\"arrayValue\":{\"values\":[");
                    for (i, item) in a.values.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        any(out, Some(item));
                    }
                    out.push_str("]}");
                }
                Some(V::KvlistValue(l)) => {
                    out.push_str("\"kvlistValue\":{\"values\":");
                    attrs(out, &l.values);
                    out.push('}');
                }
            }
            out.push('}');
        }
        fn attrs(out: &mut String, kvs: &[KeyValue]) {
            out.push('[');
            for (i, kv) in kvs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"key\":");
                string(out, &kv.key);
                if let Some(v) = &kv.value {
                    out.push_str(",\"value\":");
                    any(out, Some(v));
                }
                out.push('}');
            }
            out.push(']');
        }
        let mut out = String::from("{\"resourceSpans\":[");
        for (i, rs) in req.resource_spans.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            if let Some(r) = &rs.resource {
                out.push_str("\"resource\":{\"attributes\":");
                attrs(&mut out, &r.attributes);
                out.push_str("},");
            }
            out.push_str("\"scopeSpans\":[");
            for (j, ss) in rs.scope_spans.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push('{');
                if let Some(s) = &ss.scope {
                    out.push_str("\"scope\":{\"name\":");
                    string(&mut out, &s.name);
                    out.push_str(",\"version\":");
                    string(&mut out, &s.version);
                    out.push_str(",\"attributes\":");
                    attrs(&mut out, &s.attributes);
                    out.push_str("},");
                }
                out.push_str("\"spans\":[");
                for (k, sp) in ss.spans.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    out.push_str("{\"traceId\":");
                    hex(&mut out, &sp.trace_id);
                    out.push_str(",\"spanId\":");
                    hex(&mut out, &sp.span_id);
                    out.push_str(",\"parentSpanId\":");
                    hex(&mut out, &sp.parent_span_id);
                    out.push_str(",\"name\":");
                    string(&mut out, &sp.name);
                    let _ = write!(
                        out,
                        ",\"kind\":{},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\"",
                        sp.kind, sp.start_time_unix_nano, sp.end_time_unix_nano
                    );
                    out.push_str(",\"attributes\":");
                    attrs(&mut out, &sp.attributes);
                    let _ = write!(
                        out,
                        ",\"events\":[{}],\"links\":[{}]",
                        vec!["{}"; sp.events.len()].join(","),
                        vec!["{}"; sp.links.len()].join(",")
                    );
                    if let Some(st) = &sp.status {
                        let _ = write!(out, ",\"status\":{{\"code\":{},\"message\":", st.code);
                        string(&mut out, &st.message);
                        out.push('}');
                    }
                    out.push('}');
                }
                out.push_str("]}");
            }
            out.push_str("]}");
        }
        out.push_str("]}");
        out
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::super::testkit::{arr, export, i, kvl, s, span};
    use super::*;

    /// Seeds and known-hard inputs, each through the whole property.
    #[test]
    fn property_holds_on_seeds() {
        let good = export(vec![
            span(1, 0, "root", &[("k", s("v")), ("n", i(3))]),
            span(2, 1, "child", &[("l", arr(vec![kvl(vec![("a", i(1))])]))]),
        ])
        .encode_to_vec();
        let mut cases: Vec<Vec<u8>> = vec![
            vec![],
            good.clone(),
            good[..good.len() / 2].to_vec(),
            b"{\"resourceSpans\":[]}".to_vec(),
            b"\x0a\x00".to_vec(),
            // A group inside an unknown field, a field sent twice.
            b"\x0b\x08\x01\x0c".to_vec(),
            [&good[..], &good[..]].concat(),
        ];
        // Every single-byte change of the good body.
        for at in 0..good.len() {
            for delta in [1u8, 0x80, 0xFF] {
                let mut b = good.clone();
                b[at] = b[at].wrapping_add(delta);
                cases.push(b);
            }
        }
        for c in &cases {
            fuzz_decode(c);
        }
    }

    /// Two array values sent in one `AnyValue`, and in two `value` fields of one `KeyValue`,
    /// are merged (appended) as prost merges them; a string in between replaces.
    #[test]
    fn merges_like_prost() {
        let one = |v: u8| [0x2a, 0x04, 0x0a, 0x02, 0x18, v]; // array_value { values { int_value } }
        let kv = |any: &[u8]| {
            let mut b = vec![0x0a, 0x01, b'k'];
            b.extend([0x12, any.len() as u8]);
            b.extend(any);
            b
        };
        let any_twice = [one(1), one(2)].concat();
        let value_twice = [&kv(&one(1))[..], &kv(&one(2))[2 + 1..]].concat();
        let replaced = [one(1).to_vec(), vec![0x0a, 0x01, b'x'], one(3).to_vec()].concat();
        for kv_bytes in [kv(&any_twice), value_twice, kv(&replaced)] {
            // Span { trace_id, span_id, attributes { kv } } inside scope and resource spans.
            let mut sp = vec![0x0a, 16];
            sp.extend([1u8; 16]);
            sp.extend([0x12, 8]);
            sp.extend([2u8; 8]);
            sp.extend([0x4a, kv_bytes.len() as u8]);
            sp.extend(&kv_bytes);
            let ss = [vec![0x12, sp.len() as u8], sp].concat();
            let rs = [vec![0x12, ss.len() as u8], ss].concat();
            let req = [vec![0x0a, rs.len() as u8], rs].concat();
            fuzz_decode(&req);
        }
    }
}
