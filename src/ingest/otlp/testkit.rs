//! Test helpers of the OTLP module: attribute values and spans built with prost's types
//! (opentelemetry-proto), the same export written as OTLP/JSON, and a one-line rendering of
//! each decoded span that the dialect tests compare.

use bumpalo::Bump;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

use super::{Decoded, OtlpDecoder};
use crate::auth::Principal;
use crate::ingest::{rows, wire, BatchLimit};
use crate::pricing::{PriceTable, Pricer};
use crate::row::RowBatch;

pub(crate) fn s(v: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(v.into())),
    }
}
pub(crate) fn i(v: i64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::IntValue(v)),
    }
}
pub(crate) fn d(v: f64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::DoubleValue(v)),
    }
}
pub(crate) fn b(v: bool) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::BoolValue(v)),
    }
}
pub(crate) fn arr(v: Vec<AnyValue>) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::ArrayValue(ArrayValue { values: v })),
    }
}
pub(crate) fn kvl(v: Vec<(&str, AnyValue)>) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::KvlistValue(KeyValueList {
            values: kvs(&v),
        })),
    }
}
pub(crate) fn kvs(attrs: &[(&str, AnyValue)]) -> Vec<KeyValue> {
    attrs
        .iter()
        .map(|(k, v)| KeyValue {
            key: (*k).into(),
            value: Some(v.clone()),
            ..Default::default()
        })
        .collect()
}

pub(crate) const TRACE: [u8; 16] = [
    0x5b, 0x8e, 0xff, 0xf7, 0x98, 3, 0x81, 3, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c,
];

/// A span of the test trace with id `n` (1-based), parent `parent` (0 = root).
pub(crate) fn span(n: u8, parent: u8, name: &str, attrs: &[(&str, AnyValue)]) -> Span {
    Span {
        trace_id: TRACE.to_vec(),
        span_id: vec![0, 0, 0, 0, 0, 0, 0, n],
        parent_span_id: if parent == 0 {
            vec![]
        } else {
            vec![0, 0, 0, 0, 0, 0, 0, parent]
        },
        name: name.into(),
        kind: 3,
        start_time_unix_nano: 1_760_000_000_123_456_789,
        end_time_unix_nano: 1_760_000_001_500_000_000,
        attributes: kvs(attrs),
        ..Default::default()
    }
}

/// An export of `spans` under one resource (`service.name` = `svc`) and scope (`lib`).
pub(crate) fn export(spans: Vec<Span>) -> ExportTraceServiceRequest {
    export_in("lib", spans)
}

/// An export of `spans` under one resource (`service.name` = `svc`) and the instrumentation
/// scope `scope`.
pub(crate) fn export_in(scope: &str, spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: kvs(&[("service.name", s("svc"))]),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: scope.into(),
                    ..Default::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// OTLP/JSON of a value, as the specification writes it (ids hex, 64-bit integers strings).
fn json_value(v: &AnyValue) -> serde_json::Value {
    use any_value::Value as V;
    use serde_json::json;
    match &v.value {
        None => json!({}),
        Some(V::StringValue(s)) => json!({ "stringValue": s }),
        Some(V::BoolValue(b)) => json!({ "boolValue": b }),
        Some(V::IntValue(i)) => json!({ "intValue": i.to_string() }),
        Some(V::DoubleValue(d)) if d.is_nan() => json!({ "doubleValue": "NaN" }),
        Some(V::DoubleValue(d)) if d.is_infinite() => {
            json!({ "doubleValue": if *d > 0.0 { "Infinity" } else { "-Infinity" } })
        }
        Some(V::DoubleValue(d)) => json!({ "doubleValue": d }),
        Some(V::BytesValue(_)) | Some(V::StringValueStrindex(_)) => json!({}),
        Some(V::ArrayValue(a)) => {
            json!({ "arrayValue": { "values": a.values.iter().map(json_value).collect::<Vec<_>>() } })
        }
        Some(V::KvlistValue(l)) => json!({ "kvlistValue": { "values": json_attrs(&l.values) } }),
    }
}

fn json_attrs(kvs: &[KeyValue]) -> serde_json::Value {
    kvs.iter()
        .map(|kv| {
            serde_json::json!({
                "key": kv.key,
                "value": kv.value.as_ref().map_or(serde_json::json!({}), json_value),
            })
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// The export as OTLP/JSON.
pub(crate) fn to_json(req: &ExportTraceServiceRequest) -> Vec<u8> {
    use serde_json::json;
    let rs: Vec<_> = req
        .resource_spans
        .iter()
        .map(|rs| {
            let scopes: Vec<_> = rs
                .scope_spans
                .iter()
                .map(|ss| {
                    let spans: Vec<_> = ss
                        .spans
                        .iter()
                        .map(|sp| {
                            json!({
                                "traceId": hex(&sp.trace_id),
                                "spanId": hex(&sp.span_id),
                                "parentSpanId": hex(&sp.parent_span_id),
                                "name": sp.name,
                                "kind": sp.kind,
                                "startTimeUnixNano": sp.start_time_unix_nano.to_string(),
                                "endTimeUnixNano": sp.end_time_unix_nano.to_string(),
                                "attributes": json_attrs(&sp.attributes),
                                "status": sp.status.as_ref().map_or(json!({}), |st| json!({"code": st.code, "message": st.message})),
                            })
                        })
                        .collect();
                    json!({
                        "scope": { "name": ss.scope.as_ref().map_or("", |s| &s.name) },
                        "spans": spans,
                    })
                })
                .collect();
            json!({
                "resource": { "attributes": json_attrs(rs.resource.as_ref().map_or(&[][..], |r| &r.attributes)) },
                "scopeSpans": scopes,
            })
        })
        .collect();
    serde_json::to_vec(&json!({ "resourceSpans": rs })).unwrap()
}

/// One line per kept span, in batch order, then the counts.
pub(crate) fn render(d: &Decoded<'_>) -> String {
    let mut out = Vec::new();
    for t in d.batch.traces {
        for sp in t.spans {
            out.push(render_span(t, sp));
        }
    }
    out.push(format!(
        "rejected={} truncated={} dropped={}",
        d.rejected_spans, d.truncated_strings, d.dropped_attributes
    ));
    if let Some(m) = d.error_message {
        out.push(m.to_string());
    }
    out.join("\n")
}

fn render_span(t: &wire::Trace<'_>, sp: &wire::Span<'_>) -> String {
    let mut f = vec![format!("{} {}", sp.span_type.as_str(), sp.name)];
    let mut opt = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            f.push(format!("{k}={v}"));
        }
    };
    opt("provider", sp.provider.map(Into::into));
    opt("model", sp.model_id.map(Into::into));
    if let Some(u) = sp.usage {
        let n = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
        f.push(format!(
            "usage={}/{}/{}/{}/{}/{}",
            n(u.input_tokens),
            n(u.output_tokens),
            n(u.cached_input_tokens),
            n(u.cache_write_input_tokens),
            n(u.reasoning_tokens),
            n(u.total_tokens)
        ));
    }
    let mut opt = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            f.push(format!("{k}={v}"));
        }
    };
    opt("cost", sp.reported_cost.map(crate::pricing::format_money));
    opt(
        "status",
        (sp.status != wire::Status::Ok).then(|| sp.status.as_str().into()),
    );
    opt("error", sp.error_message.map(Into::into));
    opt("input", sp.input.map(Into::into));
    opt("output", sp.output.map(Into::into));
    opt("tools", sp.tool_catalog.map(Into::into));
    opt("ttft", sp.ttft_ms.map(|t| t.to_string()));
    opt("fp", sp.system_fingerprint.map(Into::into));
    opt("session", t.session_id.map(Into::into));
    opt("user", t.customer.map(|c| c.id.into()));
    opt("agent", t.agent_name.map(Into::into));
    let meta: Vec<String> = sp
        .all_metadata()
        .filter(|(k, _)| *k != "service.name" && *k != "otel.scope.name")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !meta.is_empty() {
        f.push(format!("meta[{}]", meta.join(",")));
    }
    f.join(" ")
}

/// Decodes `req` as protobuf and as JSON; both must render alike; returns the rendering.
pub(crate) fn decode_both(req: &ExportTraceServiceRequest) -> String {
    let proto = req.encode_to_vec();
    let mut json = to_json(req);
    let mut dec = OtlpDecoder::new();
    let arena = Bump::new();
    let a = render(
        &dec.decode_protobuf(&proto, &arena)
            .expect("protobuf decodes"),
    );
    let arena2 = Bump::new();
    let b = render(
        &dec.decode_json(crate::ingest::body::PaddedBody::pad(&mut json), &arena2)
            .expect("JSON decodes"),
    );
    assert_eq!(a, b, "protobuf and JSON differ");
    a
}

/// The rows of a decoded batch, priced against the built-in table for organisation `o`,
/// project `p`, stamped 2025-10-09 (`1_760_000_000_000` ms), with no size limit.
pub(crate) fn priced_rows(batch: &wire::Batch<'_>, arena: &Bump) -> RowBatch {
    rows::build(
        batch,
        &Principal::unlimited("o", "p"),
        &PriceTable::builtin(),
        &mut Pricer::new(),
        1_760_000_000_000,
        BatchLimit::NONE,
        arena,
    )
    .expect("rows")
}

/// Decodes an OTLP/JSON body and renders it (`render`), or the error's message.
pub(crate) fn decode_json_str(body: &str) -> Result<String, String> {
    let mut body = body.as_bytes().to_vec();
    let arena = Bump::new();
    OtlpDecoder::new()
        .decode_json(crate::ingest::body::PaddedBody::pad(&mut body), &arena)
        .map(|d| render(&d))
        .map_err(|e| e.to_string())
}

/// An OTLP/JSON export of one span (`other n`) with these attributes (JSON text, comma
/// separated).
pub(crate) fn json_span_with(attributes: &str) -> String {
    format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","name":"n","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{attributes}]}}]}}]}}]}}"#
    )
}
