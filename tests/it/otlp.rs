//! `POST /v1/traces` against the real server: every real client capture stored span by span
//! (and once, when an exporter retries), the protocol's edges (formats, codings, a bomb, a
//! broken body, partial success, each retryable status, the quota answer, a bearer key, the
//! body cap of its own), the counters in `/metrics`, client costs and provider aliases priced
//! end to end (`priced.rs`), and the live Python and Node exporters (`live.rs`).

use std::collections::HashMap;
use std::io::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

mod empty;
mod live;
mod priced;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/otlp");

/// An OTLP export request with the key as `x-api-key` (as `OTEL_EXPORTER_OTLP_HEADERS` sets
/// it); `headers` are extra header lines.
fn otlp_request(key: &str, content_type: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\nx-api-key: {key}\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    let mut r = r.into_bytes();
    r.extend_from_slice(body);
    r
}

pub(crate) fn post(
    server: &Server,
    key: &str,
    content_type: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut c = server.connect();
    c.send(&otlp_request(key, content_type, headers, body));
    c.read_response()
}

pub(crate) const PROTOBUF: &str = "application/x-protobuf";
pub(crate) const JSON: &str = "application/json";

pub(crate) fn capture(file: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{file}")).expect("capture")
}

/// A capture's `Content-Type` and `Content-Encoding`, from its `.headers` file.
fn capture_headers(file: &str) -> (String, Option<String>) {
    let stem = file
        .trim_end_matches(".gz")
        .trim_end_matches(".pb")
        .trim_end_matches(".json");
    let text = std::fs::read_to_string(format!("{FIXTURES}/{stem}.headers")).expect("headers");
    let mut ct = String::new();
    let mut ce = None;
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-type" => ct = v.trim().to_string(),
                "content-encoding" => ce = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    (ct, ce)
}

/// The expected lines of a capture (shared with `src/ingest/otlp/captures.rs`).
pub(crate) fn expected(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("{FIXTURES}/expected/{name}.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The stored rows of `org`, as the expected files write them; and the check that no trace
/// costs more than its model calls.
pub(crate) fn stored_lines(server: &Server, org: &str) -> Vec<String> {
    let rows = server.rows(
        "trace_id, span_id, parent_span_id, span_type, name, provider, model_id, input_tokens, \
         output_tokens, cached_input_tokens, cache_write_input_tokens, reasoning_tokens, \
         toString(reported_cost) AS reported, toString(total_cost) AS total, priced_model_id, \
         pricing_source",
        &format!("WHERE org_id = '{org}'"),
    );
    let s = |r: &Value, k: &str| r[k].as_str().unwrap_or("").to_string();
    let names: HashMap<(String, String), String> = rows
        .iter()
        .map(|r| ((s(r, "trace_id"), s(r, "span_id")), s(r, "name")))
        .collect();
    let money = |t: &str| -> i64 {
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        int.parse::<i64>().unwrap() * 10_000_000_000
            + format!("{frac:0<10}").parse::<i64>().unwrap()
    };
    let mut totals: HashMap<String, (i64, i64)> = HashMap::new();
    let mut lines: Vec<String> = rows
        .iter()
        .map(|r| {
            let parent = s(r, "parent_span_id");
            let parent = if parent.is_empty() {
                "root".to_string()
            } else {
                names
                    .get(&(s(r, "trace_id"), parent))
                    .cloned()
                    .unwrap_or_else(|| "?".into())
            };
            let span_type = s(r, "span_type");
            let total = r["total"].as_str();
            let t = totals.entry(s(r, "trace_id")).or_default();
            t.0 += total.map_or(0, money);
            if matches!(span_type.as_str(), "llm" | "embedding") {
                t.1 += total.map_or(0, money);
            }
            let priced = match total {
                None => "unpriced".to_string(),
                Some(c) => format!(
                    "{}={c} ({})",
                    s(r, "priced_model_id"),
                    s(r, "pricing_source")
                ),
            };
            let n = |k: &str| {
                r[k].as_str()
                    .map_or_else(|| r[k].to_string(), str::to_string)
            };
            format!(
                "{span_type} {:?} <{parent}> {}/{} {}/{}/{}/{}/{} reported={} {priced}",
                s(r, "name"),
                s(r, "provider"),
                s(r, "model_id"),
                n("input_tokens"),
                n("output_tokens"),
                n("cached_input_tokens"),
                n("cache_write_input_tokens"),
                n("reasoning_tokens"),
                r["reported"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    for (trace, (all, calls)) in totals {
        assert_eq!(all, calls, "trace {trace} costs more than its model calls");
    }
    lines.sort();
    lines
}

/// Every real client capture, sent as the client sent it (its content type and coding), is
/// answered 200 and stored span by span: type, parent, provider, model, the token buckets, the
/// reported and our cost, and no trace priced twice.
#[test]
fn every_capture_is_stored_span_by_span() {
    let server = Server::start();
    let cases = [
        ("python-sdk-genai.pb.gz", "python-sdk-genai"),
        ("python-sdk-genai-plain.pb", "python-sdk-genai"),
        ("js-sdk-genai.json", "js-sdk-genai"),
        ("openinference-openai.pb", "openinference-openai"),
        ("openllmetry-openai.pb", "openllmetry-openai"),
        ("vercel-ai.pb", "vercel-ai"),
        ("pydantic-ai.pb", "pydantic-ai"),
    ];
    let mut total = 0;
    for (i, (file, name)) in cases.iter().enumerate() {
        let org = format!("org-capture-{i}");
        let key = server.ready_key(&org);
        let (ct, ce) = capture_headers(file);
        let headers: Vec<(&str, &str)> = ce
            .as_deref()
            .map(|e| ("Content-Encoding", e))
            .into_iter()
            .collect();
        let r = post(&server, &key, &ct, &headers, &capture(file));
        assert_eq!(
            r.status,
            200,
            "{file}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
        let want = expected(name);
        total += want.len() as u64;
        server.wait_rows(total);
        assert_eq!(stored_lines(&server, &org), want, "{file}");
        // The answer is in the request's format: an empty ExportTraceServiceResponse.
        assert_eq!(r.header("content-type"), Some(ct.as_str()), "{file}");
        if ct == JSON {
            assert_eq!(r.body, b"{}", "{file}");
        } else {
            assert!(r.body.is_empty(), "{file}");
        }
    }
    // Sent again (an exporter's retry): received and stored (the raw rows grow by the
    // export's spans), and shown once (FINAL). Merges are stopped so that ClickHouse cannot
    // fold the copies away before the raw count sees them.
    server.ch_exec(&format!("SYSTEM STOP MERGES {}.spans", server.database));
    let raw = server.raw_count();
    let resent = expected("vercel-ai").len() as u64;
    let key = server.ready_key("org-capture-5");
    let r = post(&server, &key, PROTOBUF, &[], &capture("vercel-ai.pb"));
    assert_eq!(r.status, 200);
    wait_for("the resent spans in the raw rows", || {
        server.raw_count() == raw + resent
    });
    assert_eq!(server.count(), total, "FINAL shows each span once");
    assert_eq!(
        stored_lines(&server, "org-capture-5"),
        expected("vercel-ai")
    );
}

/// Polls `cond` until it holds, for at most 20 s.
fn wait_for(what: &str, cond: impl FnMut() -> bool) {
    wait_until(what, Duration::from_secs(20), cond);
}

/// A one-span export (OTLP/JSON), valid unless `span_id` or the times say otherwise.
pub(crate) fn json_export(spans: &[(&str, u64, u64)]) -> Vec<u8> {
    let spans: Vec<Value> = spans
        .iter()
        .map(|&(id, start_ns, end_ns)| {
            json!({
                "traceId": "5b8efff798038103d269b633813fc60c",
                "spanId": id,
                "name": "chat gpt-4o",
                "kind": 3,
                "startTimeUnixNano": start_ns.to_string(),
                "endTimeUnixNano": end_ns.to_string(),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1000"}},
                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 100}}
                ]
            })
        })
        .collect();
    serde_json::to_vec(&json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "edge"}}]},
        "scopeSpans": [{"spans": spans}]
    }]}))
    .unwrap()
}

pub(crate) const T0: u64 = 1_780_000_000_000_000_000;

/// `google.rpc.Status` as protobuf: (code, message).
fn status_protobuf(body: &[u8]) -> (u64, String) {
    let (mut code, mut message, mut i) = (0u64, String::new(), 0);
    while i < body.len() {
        let key = body[i];
        i += 1;
        let mut varint = || {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let b = body[i];
                i += 1;
                v |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b < 0x80 {
                    return v;
                }
            }
        };
        match key {
            0x08 => code = varint(),
            0x12 => {
                let n = varint() as usize;
                message = String::from_utf8(body[i..i + n].to_vec()).unwrap();
                i += n;
            }
            other => panic!("unexpected field key {other:#x} in {body:?}"),
        }
    }
    (code, message)
}

#[test]
fn formats_codings_and_broken_bodies() {
    // A 4 MiB cap, so that a bomb past it is quick to make.
    let server = Server::start_with(&[("INGEST_OTLP_MAX_BODY_BYTES", "4194304")]);
    let key = server.ready_key("org-edges");
    let plain = capture("python-sdk-genai-plain.pb");
    let spans = expected("python-sdk-genai").len() as u64;

    // Every coding of the same protobuf export.
    let gzip = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&plain).unwrap();
        e.finish().unwrap()
    };
    let deflate = {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&plain).unwrap();
        e.finish().unwrap()
    };
    let zstd =
        ruzstd::encoding::compress_to_vec(&plain[..], ruzstd::encoding::CompressionLevel::Fastest);
    for (coding, body) in [("gzip", &gzip), ("deflate", &deflate), ("zstd", &zstd)] {
        let r = post(
            &server,
            &key,
            PROTOBUF,
            &[("Content-Encoding", coding)],
            body,
        );
        assert_eq!(
            r.status,
            200,
            "{coding}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
    }
    // One copy of the spans, whichever coding brought them (each export has its own ids, but
    // the three are the same bytes).
    server.wait_rows(spans);

    // OTLP/JSON with a coding too: gzip, answered in JSON.
    let json_gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&json_export(&[("00000000000000a1", T0, T0 + 2_000_000)]))
            .unwrap();
        e.finish().unwrap()
    };
    let r = post(
        &server,
        &key,
        JSON,
        &[("Content-Encoding", "gzip")],
        &json_gz,
    );
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        (r.header("content-type"), &r.body[..]),
        (Some(JSON), &b"{}"[..])
    );
    server.wait_rows(spans + 1);
    assert_eq!(
        server.rows(
            "span_type, toString(input_tokens) AS input, toString(total_cost) AS t",
            "WHERE span_id = '00000000000000a1'"
        ),
        vec![json!({"span_type": "llm", "input": "1000", "t": "0.0035000000"})]
    );

    // A gzip bomb: 64 MiB of zeros in about 64 KB, 16 times the cap; refused once the cap is
    // reached (413), never inflated whole.
    let bomb = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            e.write_all(&zeros).unwrap();
        }
        e.finish().unwrap()
    };
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let r = post(
        &server,
        &key,
        PROTOBUF,
        &[("Content-Encoding", "gzip")],
        &bomb,
    );
    assert_eq!(r.status, 413, "{:?}", String::from_utf8_lossy(&r.body));
    let (code, message) = status_protobuf(&r.body);
    assert_eq!(code, 3, "INVALID_ARGUMENT");
    assert!(message.contains("payload_too_large"), "{message}");

    // Broken or unknown codings, a truncated protobuf, a wrong content type.
    // (content type, extra headers, body, status, code)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [u8], u16, &'a str);
    let cases: [Case; 5] = [
        (
            PROTOBUF,
            &[("Content-Encoding", "br")],
            &plain,
            415,
            "unsupported_content_encoding",
        ),
        (
            PROTOBUF,
            &[("Content-Encoding", "gzip")],
            &plain,
            400,
            "invalid_content_encoding",
        ),
        (
            PROTOBUF,
            &[],
            &plain[..plain.len() - 7],
            400,
            "invalid_otlp",
        ),
        ("text/plain", &[], &plain, 415, "unsupported_media_type"),
        (JSON, &[], b"{\"resourceSpans\": 7}", 400, "invalid_otlp"),
    ];
    for (ct, headers, body, status, code) in cases {
        let r = post(&server, &key, ct, headers, body);
        assert_eq!(
            r.status,
            status,
            "{ct} {headers:?}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
        let message = if r.header("content-type") == Some(PROTOBUF) {
            status_protobuf(&r.body).1
        } else {
            r.json()["message"].as_str().unwrap().to_string()
        };
        assert!(message.ends_with(&format!("({code})")), "{message}");
    }

    // The same gzip body on /ingest is decoded too (it used to be "not valid UTF-8").
    let v1 = batch("gz", 1, 2);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&v1).unwrap();
    let gz = e.finish().unwrap();
    let mut c = server.connect();
    let mut req = format!(
        "POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {key}\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    req.extend_from_slice(&gz);
    c.send(&req);
    let r = c.read_response();
    assert_eq!((r.status, r.json()["accepted"].as_u64()), (202, Some(2)));
    server.wait_rows(spans + 3);

    // 401: a Status in the request's format, JSON here.
    let r = post(&server, "ti_nope", JSON, &[], &json_export(&[]));
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["code"], 16, "UNAUTHENTICATED");
}

/// Invalid spans are left out one by one (`partial_success`), the others stored.
#[test]
fn partial_success_rejects_only_the_invalid_spans() {
    let server = Server::start();
    let key = server.ready_key("org-partial");
    let body = json_export(&[
        ("0000000000000001", T0, T0 + 5_000_000),
        ("00000000000000", T0, T0 + 1),       // 7 bytes: not a span id
        ("0000000000000003", T0 + 9, T0 + 1), // ends before it starts
        ("0000000000000004", T0, T0 + 1_500_000),
    ]);
    let r = post(&server, &key, JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    let answer = r.json();
    assert_eq!(answer["partialSuccess"]["rejectedSpans"], "2", "{answer}");
    assert!(
        !answer["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .is_empty(),
        "{answer}"
    );
    server.wait_rows(2);
    let rows = server.rows(
        "span_id, span_type, start_time_ms, end_time_ms, toString(total_cost) AS t",
        "ORDER BY span_id",
    );
    assert_eq!(
        rows,
        vec![
            json!({"span_id": "0000000000000001", "span_type": "llm", "start_time_ms": "1780000000000",
                   "end_time_ms": "1780000000005", "t": "0.0035000000"}),
            json!({"span_id": "0000000000000004", "span_type": "llm", "start_time_ms": "1780000000000",
                   "end_time_ms": "1780000000001", "t": "0.0035000000"}),
        ]
    );
    assert_eq!(
        server.metric("traceingest_otlp_rejected_spans_total"),
        Some(2.0)
    );
}

/// A span whose token counts give a cost the cost columns cannot hold (OTLP counts may be any
/// u64) is refused on its own, as one with a bad id is; the rest of the export is stored.
#[test]
fn a_span_whose_cost_cannot_be_stored_is_refused_alone() {
    let server = Server::start();
    let key = server.ready_key("org-huge-usage");
    let chat = |tokens: Value| {
        vec![
            ("gen_ai.operation.name", str("chat")),
            ("gen_ai.provider.name", str("openai")),
            ("gen_ai.request.model", str("gpt-4o")),
            ("gen_ai.usage.input_tokens", tokens),
        ]
    };
    let body = export_of(
        "lib",
        &[
            ("0000000000000d01", chat(int(1000))),
            ("0000000000000d02", chat(str("18446744073709551615"))),
        ],
    );
    let r = post(&server, &key, JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    let answer = r.json();
    assert_eq!(answer["partialSuccess"]["rejectedSpans"], "1", "{answer}");
    let message = answer["partialSuccess"]["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("0000000000000d02") && message.contains("cannot be stored"),
        "{answer}"
    );
    server.wait_rows(1);
    assert_eq!(
        server.rows("span_id, toString(total_cost) AS t", "ORDER BY span_id"),
        vec![json!({"span_id": "0000000000000d01", "t": "0.0025000000"})]
    );
}

/// The OTLP/HTTP specification makes 429, 502, 503 and 504 retryable; this server sends 429
/// (the key's rate limit) and 503 (memory and spool full here; draining and a failing
/// write-ahead log in the tests below), each with `Retry-After`. It never sends 502 or 504 (it
/// is no gateway: an unreachable ClickHouse is spooled, not refused). A used-up monthly quota
/// is 403, which exporters do not retry.
#[test]
fn retryable_statuses_and_the_quota_answer() {
    // 429: one span per second for the key.
    let server = Server::start_with(&[("INGEST_RATE_LIMIT_RPS", "1")]);
    let key = server.ready_key("org-rate");
    let two = json_export(&[
        ("0000000000000001", T0, T0 + 1),
        ("0000000000000002", T0, T0 + 1),
    ]);
    let r = post(&server, &key, JSON, &[], &two);
    assert_eq!(r.status, 200, "the first span's worth of the bucket");
    let r = post(
        &server,
        &key,
        PROTOBUF,
        &[],
        &capture("python-sdk-genai-plain.pb"),
    );
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
    assert_eq!(status_protobuf(&r.body).0, 8, "RESOURCE_EXHAUSTED");
    drop(server);

    // 503 with Retry-After (memory and spool full): `durability.rs`,
    // `a_full_spool_answers_503_with_retry_after_and_keeps_what_it_accepted`. (An export of
    // more spans than memory holds rows is 413 `batch_too_large`, never retried.)
    let server = Server::start_with(&[
        ("INGEST_BUFFER_MAX_ROWS", "1"),
        ("INGEST_FLUSH_MAX_ROWS", "1"),
    ]);
    let key = server.ready_key("org-full");
    let r = post(&server, &key, JSON, &[], &two);
    assert_eq!(r.status, 413);
    assert_eq!(r.header("retry-after"), None);
    assert_eq!(r.json()["code"], 3, "INVALID_ARGUMENT");
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("(batch_too_large)"),
        "{}",
        r.json()
    );
    drop(server);

    // 403: the month's quota is used up (one span, 1.1 allowed).
    let server = Server::start_with(&[("INGEST_PLANS", "tiny:1"), ("INGEST_DEFAULT_PLAN", "tiny")]);
    let key = server.ready_key("org-quota");
    let r = post(&server, &key, JSON, &[], &two);
    assert_eq!(r.status, 403, "{:?}", String::from_utf8_lossy(&r.body));
    assert!(r.header("retry-after").is_none());
    let status = r.json();
    assert_eq!(status["code"], 7, "PERMISSION_DENIED");
    assert!(
        status["message"].as_str().unwrap().contains("quota"),
        "{status}"
    );
    // /ingest keeps the v1 contract's 429 for the same refusal.
    let r = server.post_ingest(&key, &batch("q", 1, 2));
    assert_eq!((r.status, r.code().as_str()), (429, "quota_exceeded"));
}

/// An OTLP/JSON export of one span per `(span id, attributes)`, under the instrumentation
/// scope `scope`; attribute values are OTLP `AnyValue`s (`str`, `int`, `dbl`).
fn export_of(scope: &str, spans: &[(&str, Vec<(&str, Value)>)]) -> Vec<u8> {
    let spans: Vec<Value> = spans
        .iter()
        .map(|(id, attrs)| {
            let attrs: Vec<Value> = attrs
                .iter()
                .map(|(k, v)| json!({"key": k, "value": v}))
                .collect();
            json!({
                "traceId": "7a8efff798038103d269b633813fc60c",
                "spanId": id,
                "name": "chat",
                "kind": 3,
                "startTimeUnixNano": T0.to_string(),
                "endTimeUnixNano": (T0 + 1_000_000).to_string(),
                "attributes": attrs,
            })
        })
        .collect();
    serde_json::to_vec(&json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": str("edge")}]},
        "scopeSpans": [{"scope": {"name": scope}, "spans": spans}]
    }]}))
    .unwrap()
}

fn str(v: &str) -> Value {
    json!({ "stringValue": v })
}
fn int(v: u64) -> Value {
    json!({ "intValue": v.to_string() })
}
fn dbl(v: f64) -> Value {
    json!({ "doubleValue": v })
}

/// A request to the server in the middle of a drain: `503` with `Retry-After`, a
/// `google.rpc.Status` (`UNAVAILABLE`) in the request's format, and the connection closed.
#[test]
fn draining_answers_503_unavailable() {
    let server = Server::start_with(&[("INGEST_SHUTDOWN_TIMEOUT_MS", "10000")]);
    let key = server.ready_key("org-drain");
    let body = capture("python-sdk-genai-plain.pb");
    // A request under way when the signal comes (its head not finished), which the drain
    // lets finish. Its first bytes travel in one write behind a complete `GET /health`: once
    // that is answered, the server holds them, so the connection is not an idle one (which
    // the drain would close).
    let mut c = server.connect();
    c.send(
        format!(
            "GET /health HTTP/1.1\r\nHost: t\r\n\r\n\
             POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: {PROTOBUF}\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(c.read_response().status, 200);
    server.signal(SIGTERM);
    wait_for("the admin listener to report the drain", || {
        server.get_admin("/ready").status == 503
    });
    c.send(format!("x-api-key: {key}\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
    c.send(&body);
    let r = c.read_response();
    assert_eq!(r.status, 503, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.header("content-type"), Some(PROTOBUF));
    let (code, message) = status_protobuf(&r.body);
    assert_eq!(code, 14, "UNAVAILABLE");
    assert!(message.ends_with("(draining)"), "{message}");
    assert!(c.is_closed());
    assert_eq!(
        server.raw_count(),
        0,
        "nothing of the refused export is stored"
    );
}

/// In write-ahead mode, an export the log cannot write (the disk refuses: here a file size
/// limit on the server) is `503` with `Retry-After` and a `Status`, and is not stored; the
/// next export goes to a new segment and is.
#[test]
fn a_failing_write_ahead_log_answers_503() {
    let mut server = Server::new(CH_HTTP, &[("INGEST_DURABILITY", "wal")]);
    // 256 KiB per file: the segment passes it after a few exports of ~40 KB of rows.
    server.set_file_size_limit(256 * 1024);
    server.spawn();
    let key = server.ready_key("org-wal");
    let prompt = "a prompt of forty thousand bytes. ".repeat(1200);
    let mut stored = Vec::new();
    let mut refused = None;
    for n in 1..=40u64 {
        let id = format!("{n:016x}");
        let body = export_of(
            "lib",
            &[(
                &id,
                vec![
                    ("gen_ai.operation.name", str("chat")),
                    ("gen_ai.input.messages", str(&prompt)),
                ],
            )],
        );
        let r = post(&server, &key, JSON, &[], &body);
        match r.status {
            200 => stored.push(id),
            503 => {
                assert_eq!(r.header("retry-after"), Some("1"));
                let status = r.json();
                assert_eq!(status["code"], 14, "UNAVAILABLE: {status}");
                assert!(
                    status["message"]
                        .as_str()
                        .unwrap()
                        .ends_with("(storage_unavailable)"),
                    "{status}"
                );
                refused = Some(id);
                break;
            }
            s => panic!("unexpected {s}: {:?}", String::from_utf8_lossy(&r.body)),
        }
    }
    let refused = refused.expect("the log never passed the file size limit");
    assert!(!stored.is_empty(), "exports before the limit are stored");
    // The next export starts a new segment.
    let id = "00000000000000ff".to_string();
    let body = export_of(
        "lib",
        &[(&id, vec![("gen_ai.operation.name", str("chat"))])],
    );
    let r = post(&server, &key, JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    stored.push(id);
    server.wait_rows(stored.len() as u64);
    let rows: Vec<String> = server
        .rows("span_id", "ORDER BY span_id")
        .iter()
        .map(|r| r["span_id"].as_str().unwrap().to_string())
        .collect();
    stored.sort();
    assert_eq!(rows, stored, "every accepted export, and not {refused}");
}

/// A key as `Authorization: Bearer`; a body past `/ingest`'s cap (10 MiB) but within the OTLP
/// cap (20 MiB) is taken on `/v1/traces` and refused on `/ingest`; what the mapping cut and
/// dropped is counted in `/metrics` on the admin listener.
#[test]
fn a_bearer_key_a_body_cap_of_its_own_and_the_counters() {
    let server = Server::start();
    let key = server.ready_key("org-bearer");
    let bearer = format!("Bearer {key}");

    // 12 MiB: a chat span (its operation name is mapped, not metadata) with 69 unmapped
    // attributes: `note`, of 12 MiB (cut to 1024 units), and 68 small ones. 64 fit in
    // metadata, 5 are dropped, and so is the resource's `service.name` (a 65th key): 6.
    let big = "x".repeat(12 << 20);
    let mut attrs = vec![("gen_ai.operation.name", str("chat")), ("note", str(&big))];
    let names: Vec<String> = (1..=68).map(|n| format!("a{n:02}")).collect();
    for n in &names {
        attrs.push((n.as_str(), int(7)));
    }
    let body = export_of("", &[("0000000000000b01", attrs)]);
    assert!(
        body.len() > 12 << 20 && body.len() < 20 << 20,
        "{}",
        body.len()
    );
    let mut c = server.connect();
    let mut req = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: {JSON}\r\n\
         Authorization: {bearer}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    c.send(&req);
    let r = c.read_response();
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    server.wait_rows(1);
    let row = &server.rows(
        "org_id, toString(length(metadata_keys)) AS keys, metadata_values[indexOf(metadata_keys, 'note')] AS note",
        "",
    )[0];
    assert_eq!(row["org_id"], "org-bearer");
    assert_eq!(row["keys"], "64");
    assert_eq!(row["note"].as_str().map(str::len), Some(1024));
    assert_eq!(
        server.metric("traceingest_otlp_truncated_strings_total"),
        Some(1.0)
    );
    assert_eq!(
        server.metric("traceingest_otlp_dropped_attributes_total"),
        Some(6.0)
    );

    // The same size on /ingest: 413 from the head alone, the v1 cap.
    let r = server.post_ingest(&key, &body);
    assert_eq!((r.status, r.code().as_str()), (413, "payload_too_large"));
}
