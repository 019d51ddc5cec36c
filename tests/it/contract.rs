//! The contract's statuses in their order of precedence, auth headers, key revocation, body
//! limits and schema issues, all over real HTTP.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

#[test]
fn statuses_follow_the_order_of_checks() {
    let server = Server::start();
    let key = server.ready_key("org-order");
    let good = batch("order", 1, 2);

    // 202 with the span count.
    let r = server.post_ingest(&key, &good);
    assert_eq!(r.status, 202, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json(), json!({"accepted": 2}));

    // 4 before 5: not JSON at all.
    let r = server.post_ingest(&key, b"{\"version\": ");
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_json"));
    let r = server.post_ingest(&key, b"\xff\xfe{}");
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_json"));

    // 5: valid JSON, wrong shape, with issues.
    let r = server.post_ingest(&key, br#"{"version":"v2","traces":[]}"#);
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let issues = r.json()["issues"].as_array().unwrap().clone();
    assert!(
        issues.contains(
            &json!({"path":["version"],"code":"invalid_literal","message": issues[0]["message"]})
        ) || issues
            .iter()
            .any(|i| i["path"] == json!(["version"]) && i["code"] == "invalid_literal"),
        "{issues:?}"
    );
    assert!(
        issues
            .iter()
            .any(|i| i["path"] == json!(["traces"]) && i["code"] == "too_small"),
        "{issues:?}"
    );

    // 3 before 4: no key beats a broken body; unknown key too.
    let mut c = server.connect();
    c.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n{{{");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (401, "missing_api_key"));
    let fake = format!("ti_{}", "A".repeat(43));
    let r = server.post_ingest(&fake, b"{{{");
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_api_key"));
    let r = server.post_ingest("not-a-key", b"{{{");
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_api_key"));

    // 1 before 3: too large is decided from Content-Length, before the key and the body.
    let mut c = server.connect();
    c.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 20971520\r\n\r\n{}");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (413, "payload_too_large"));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.is_closed(), "413 closes the connection");

    // Other paths and methods.
    let mut c = server.connect();
    c.send(b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    c.send(b"GET /ingest HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (405, "method_not_allowed"));
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");
    assert!(r.json()["buffered"].is_u64());
    // Any method on an unknown path is 404 (it was 405 "use GET" for POST, found by an audit);
    // a wrong method on a known one is 405.
    for request in [
        &b"POST /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}"[..],
        b"POST /ingest/ HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}",
        b"DELETE /nope HTTP/1.1\r\nHost: t\r\n\r\n",
    ] {
        c.send(request);
        let r = c.read_response();
        assert_eq!(
            (r.status, r.code().as_str()),
            (404, "not_found"),
            "{}",
            String::from_utf8_lossy(request)
        );
    }
    c.send(b"POST /health HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (405, "method_not_allowed"));
}

#[test]
fn draining_answers_503_after_size_but_before_auth() {
    let server = Server::start_with(&[("INGEST_SHUTDOWN_TIMEOUT_MS", "5000")]);
    let key = server.ready_key("org-drain");
    // Connections with a request in progress are let finish during the drain.
    let mut big = server.connect();
    big.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\n");
    let mut nokey = server.connect();
    nokey.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\n");
    let mut keyed = server.connect();
    keyed.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\n");
    std::thread::sleep(Duration::from_millis(200));
    server.signal(SIGTERM);
    std::thread::sleep(Duration::from_millis(400));

    big.send(b"Content-Length: 20971520\r\n\r\n");
    assert_eq!(
        big.read_response().status,
        413,
        "size is checked before the drain"
    );
    nokey.send(b"Content-Length: 2\r\n\r\n{}");
    let r = nokey.read_response();
    assert_eq!(
        (r.status, r.code().as_str()),
        (503, "draining"),
        "drain is checked before the key"
    );
    assert_eq!(r.header("connection"), Some("close"));
    let body = batch("drain", 1, 1);
    keyed.send(
        format!(
            "Authorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    keyed.send(&body);
    assert_eq!(keyed.read_response().status, 503);
}

#[test]
fn both_key_headers_and_authorization_wins() {
    let server = Server::start();
    let key = server.ready_key("org-headers");
    let other = format!("ti_{}", "B".repeat(43));
    let body = batch("hdr", 1, 1);
    let send = |headers: String| {
        let mut c = server.connect();
        c.send(
            format!(
                "POST /ingest HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        c.send(&body);
        c.read_response().status
    };
    assert_eq!(send(format!("x-api-key: {key}\r\n")), 202);
    assert_eq!(send(format!("Authorization: bearer   {key}  \r\n")), 202);
    assert_eq!(send(format!("AUTHORIZATION: BEARER {key}\r\n")), 202);
    assert_eq!(
        send(format!(
            "Authorization: Bearer {key}\r\nx-api-key: {other}\r\n"
        )),
        202
    );
    assert_eq!(
        send(format!(
            "Authorization: Bearer {other}\r\nx-api-key: {key}\r\n"
        )),
        401
    );
    assert_eq!(send(format!("Authorization: Basic {key}\r\n")), 401);
}

#[test]
fn a_key_without_bearer_is_named_as_the_wrong_scheme() {
    let server = Server::start();
    let key = server.ready_key("org-scheme");
    let body = batch("scheme", 1, 1);
    let send = |authorization: &str| {
        let mut c = server.connect();
        c.send(
            format!(
                "POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: {authorization}\r\n\
                 Content-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        c.send(&body);
        c.read_response()
    };
    // The mistake a new user makes: the key alone, or another scheme.
    for authorization in [key.clone(), format!("Basic {key}"), format!("Token {key}")] {
        let r = send(&authorization);
        assert_eq!(
            (r.status, r.code().as_str()),
            (401, "invalid_authorization_scheme"),
            "Authorization: {authorization}"
        );
        let message = r.json()["error"].as_str().unwrap().to_string();
        assert!(message.contains("Bearer <key>"), "{message}");
    }
    assert_eq!(send(&format!("Bearer {key}")).status, 202);
    let answers = server.metric(
        "traceingest_responses_total{status=\"401\",code=\"invalid_authorization_scheme\"}",
    );
    assert_eq!(answers, Some(3.0), "counted under its own code");
}

/// The contract's "within 1 second" is the key refresh (`INGEST_KEY_REFRESH_MS`, 500 ms by
/// default) plus one load. Held here in loads, not seconds, so a busy machine cannot fail it:
/// the second load counted after `keys revoke` returned began after it, and must know.
#[test]
fn revoked_key_is_refused_after_the_next_key_load() {
    let server = Server::start();
    let key = server.ready_key("org-revoke");
    assert_eq!(server.post_ingest(&key, &batch("rv", 1, 1)).status, 202);
    let listed = server.cli(&["keys", "list"]);
    let listing = String::from_utf8(listed.stdout).unwrap();
    assert!(listing.contains(&key[..12]), "{listing}");
    assert!(!listing.contains(&key), "list must never show a whole key");
    assert!(listing.contains("active"));
    let out = server.cli(&["keys", "revoke", &key[..12]]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.wait_key_loads(server.key_loads() + 2.0);
    let r = server.post_ingest(&key, &batch("rv2", 1, 1));
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_api_key"));
    let listing = String::from_utf8(server.cli(&["keys", "list"]).stdout).unwrap();
    assert!(listing.contains("revoked"), "{listing}");
    // Revoking an unknown prefix is an error.
    assert!(!server
        .cli(&["keys", "revoke", "ti_doesnotex"])
        .status
        .success());
}

#[test]
fn chunked_bodies_and_the_cap() {
    let server = Server::start_with(&[("INGEST_MAX_BODY_BYTES", "4000")]);
    let key = server.ready_key("org-chunk");
    let body = batch("ch", 1, 3);
    assert!(body.len() < 4000);
    // A valid chunked body in odd pieces.
    let mut req = format!("POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
    for piece in body.chunks(97) {
        req.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        req.extend_from_slice(piece);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let mut c = server.connect();
    c.send(&req);
    let r = c.read_response();
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json(), json!({"accepted": 3}));

    // Past the cap: 413 as soon as the count passes it, then close.
    let mut c = server.connect();
    c.send(format!("POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\n\r\n").as_bytes());
    c.send(format!("{:x}\r\n{}\r\n", 3000, "x".repeat(3000)).as_bytes());
    c.send(format!("{:x}\r\n", 3000).as_bytes());
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (413, "payload_too_large"));
    assert!(c.is_closed());

    // A Content-Length just over the cap.
    let mut c = server.connect();
    c.send(format!("POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Length: 4001\r\n\r\n").as_bytes());
    assert_eq!(c.read_response().status, 413);
}

#[test]
fn schema_issues_point_at_the_value() {
    let server = Server::start();
    let key = server.ready_key("org-schema");
    let span = json!({"spanId":"s","spanType":"llm","name":"n","startTime":10,"endTime":20});
    let cases = [
        (
            json!({"version":"v1","traces":[{"traceId":"t","traceName":"x","spans":[span, {"spanId":"s2","spanType":"llm","name":"n","startTime":10,"endTime":5}]}]}),
            json!(["traces", 0, "spans", 1, "endTime"]),
            "custom",
        ),
        (
            json!({"version":"v1","traces":[{"traceId":"t","spans":[span]}]}),
            json!(["traces", 0, "traceName"]),
            "custom",
        ),
        (
            json!({"version":"v1","traces":[{"traceId":"t","traceName":"x","spans":[{"spanId":"s","spanType":"robot","name":"n","startTime":1,"endTime":2}]}]}),
            json!(["traces", 0, "spans", 0, "spanType"]),
            "invalid_enum_value",
        ),
        (
            json!({"version":"v1","traces":[{"traceId":"t","traceName":"x","extra":1,"spans":[span]}]}),
            json!(["traces", 0]),
            "unrecognized_keys",
        ),
        (
            json!({"version":"v1","traces":[{"traceId":"t","traceName":"x","spans":[{"spanId":"s","spanType":"llm","name":"n","startTime":1.5,"endTime":2}]}]}),
            json!(["traces", 0, "spans", 0, "startTime"]),
            "invalid_type",
        ),
        (
            json!({"version":"v1","traces":[{"traceId":"t","traceName":"x","sessionId":null,"spans":[span]}]}),
            json!(["traces", 0, "sessionId"]),
            "invalid_type",
        ),
        (
            json!({"version":"v1","traces":[{"traceId":"t".repeat(129),"traceName":"x","spans":[span]}]}),
            json!(["traces", 0, "traceId"]),
            "too_big",
        ),
    ];
    for (body, path, code) in cases {
        let r = server.post_ingest(&key, &serde_json::to_vec(&body).unwrap());
        assert_eq!(r.status, 400, "{body}");
        let issues = r.json()["issues"].as_array().cloned().unwrap_or_default();
        assert!(
            issues
                .iter()
                .any(|i| i["path"] == path && i["code"] == code),
            "expected {code} at {path} for {body}, got {issues:?}"
        );
    }
    // Duplicate keys are refused.
    let r = server.post_ingest(&key, br#"{"version":"v1","version":"v1","traces":[]}"#);
    assert_eq!(r.status, 400);
    assert!(
        r.json()["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["code"] == "duplicate_key"),
        "{:?}",
        r.json()
    );
    // Nothing of the refused batches was stored.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.count(), 0);
}

/// Rows are stored with their trace's strings repeated on every span, so a small body can ask
/// for far more memory than it is long. A batch whose rows would take more than a quarter of
/// the write buffer is refused with its own 413 before anything is allocated; the same spans
/// with little trace-level data are accepted.
#[test]
fn a_batch_whose_rows_would_not_fit_the_buffer_is_refused() {
    // A 64 KiB buffer: one batch's rows may take 16 KiB.
    let server = Server::start_with(&[("INGEST_BUFFER_MAX_BYTES", "65536")]);
    let key = server.ready_key("org-amplify");
    let span = |s: usize| json!({"spanId": format!("s{s}"), "spanType": "tool", "name": "", "startTime": 1, "endTime": 2});
    let spans: Vec<Value> = (0..100).map(span).collect();
    // 100 spans each carrying the trace's 4 KB of metadata: about 400 KB of rows from a
    // body of about 10 KB.
    let metadata: serde_json::Map<String, Value> = (0..4)
        .map(|i| (format!("k{i}"), Value::from("v".repeat(1000))))
        .collect();
    let amplified = json!({"version": "v1", "traces": [
        {"traceId": "t-big", "traceName": "x", "metadata": metadata, "spans": spans}
    ]});
    let body = serde_json::to_vec(&amplified).unwrap();
    assert!(body.len() < 16 * 1024, "{} bytes", body.len());
    let r = server.post_ingest(&key, &body);
    assert_eq!(
        (r.status, r.code().as_str()),
        (413, "batch_too_large"),
        "{r:?}"
    );
    let message = r.json()["error"].as_str().unwrap().to_string();
    assert!(message.contains("16384 bytes"), "{message}");
    assert!(message.contains("trace metadata"), "{message}");

    // The connection stays usable and the same spans without the metadata go in.
    let lean = json!({"version": "v1", "traces": [
        {"traceId": "t-lean", "traceName": "x", "spans": (0..20).map(span).collect::<Vec<_>>()}
    ]});
    let r = server.post_ingest(&key, &serde_json::to_vec(&lean).unwrap());
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    server.wait_rows(20);
    assert_eq!(
        server.count(),
        20,
        "nothing of the refused batch was stored"
    );
}

/// With `INGEST_BUFFER_MAX_ROWS` lowered (a small box), a batch of more spans than memory
/// holds rows could never be handed over: it is refused with 413 batch_too_large naming both
/// counts and the setting, not 503 buffer_full on every retry; a batch within the bound goes
/// in. The start-up log warns that the bound is below what a body may carry.
#[test]
fn a_batch_of_more_spans_than_the_buffer_holds_rows_is_refused_as_too_large() {
    let server = Server::start_with(&[
        ("INGEST_BUFFER_MAX_ROWS", "10"),
        ("INGEST_FLUSH_MAX_ROWS", "10"),
    ]);
    let key = server.ready_key("org-rows-bound");
    let r = server.post_ingest(&key, &batch("over", 1, 11));
    assert_eq!(r.status, 413, "{r:?}");
    assert_eq!(
        r.json(),
        json!({
            "error": "the batch has 11 spans, more than the 10 rows the write buffer holds \
                      (INGEST_BUFFER_MAX_ROWS), so it can never be accepted; send at most 10 \
                      spans per batch",
            "code": "batch_too_large"
        })
    );
    assert_eq!(r.header("retry-after"), None);

    // The connection stays usable; a batch within the bound is accepted and stored.
    let r = server.post_ingest(&key, &batch("within", 2, 4));
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json(), json!({"accepted": 8}));
    server.wait_rows(8);
    let ids: Vec<String> = server
        .rows("span_id", "ORDER BY span_id")
        .iter()
        .map(|r| r["span_id"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = (0..2)
        .flat_map(|t| (0..4).map(move |s| format!("within-s{t}-{s}")))
        .collect();
    assert_eq!(ids, want, "nothing of the refused batch was stored");
    assert!(
        server.log().contains("INGEST_BUFFER_MAX_ROWS is below"),
        "{}",
        server.log()
    );
}

/// In `wal` mode every batch is a spool record before it is answered: one whose rows pass a
/// quarter of `INGEST_SPOOL_MAX_BYTES` is `413 batch_too_large`. (One whose record alone was
/// larger than the spool was refused `503 buffer_full` on every try, however empty the spool.)
#[test]
fn in_wal_mode_a_batch_larger_than_the_spool_allows_is_too_large() {
    let server = Server::start_with(&[
        ("INGEST_DURABILITY", "wal"),
        ("INGEST_SPOOL_MAX_BYTES", "65536"),
    ]);
    let key = server.ready_key("org-wal-bound");
    // 300 spans take about 140 KB as rows: more than the whole spool.
    let r = server.post_ingest(&key, &batch("over", 1, 300));
    assert_eq!(r.status, 413, "{r:?}");
    assert_eq!(r.code(), "batch_too_large");
    assert_eq!(r.header("retry-after"), None);
    let r = server.post_ingest(&key, &batch("within", 1, 10));
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    server.wait_rows(10);
    assert_eq!(
        server.raw_count(),
        10,
        "nothing of the refused batch was stored"
    );
}
