//! Keep-alive, pipelining and many concurrent connections.

use serde_json::json;

use crate::support::*;

#[test]
fn keep_alive_and_pipelined_requests_are_answered_in_order() {
    let server = Server::start();
    let key = server.ready_key("org-pipe");
    let mut c = server.connect();
    // Keep-alive: three requests one after another on one connection.
    for i in 0..3 {
        c.send(&ingest_request(&key, &batch(&format!("ka{i}"), 1, i + 1)));
        let r = c.read_response();
        assert_eq!(r.json(), json!({"accepted": i + 1}));
    }
    // Pipelined: four requests in one write, one of them bad; answers come back in order.
    let mut all = Vec::new();
    all.extend(ingest_request(&key, &batch("p0", 1, 1)));
    all.extend(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    all.extend(ingest_request(&key, b"[1,2"));
    all.extend(ingest_request(&key, &batch("p3", 2, 2)));
    c.send(&all);
    assert_eq!(c.read_response().json(), json!({"accepted": 1}));
    assert_eq!(c.read_response().json()["status"], "ok");
    assert_eq!(c.read_response().status, 400);
    assert_eq!(c.read_response().json(), json!({"accepted": 4}));
    server.wait_rows(6 + 1 + 4);
}

/// Bodies are parsed where they lie in the connection's buffer, with what follows them as
/// simd-json's padding: the next pipelined request, or what de-chunking in place left of a
/// chunked body's framing. A body that needs a repair (a lone surrogate, a number out of
/// simd-json's range) after escaped strings is parsed, written back and parsed again there;
/// none of it may disturb the requests that follow or the values stored.
#[test]
fn bodies_parsed_in_place_leave_pipelined_requests_and_values_intact() {
    let server = Server::start();
    let key = server.ready_key("org-inplace");
    let span = |id: &str, extra: &str| {
        format!(
            r#"{{"version":"v1","traces":[{{"traceId":"{id}","traceName":"q \"x\" \u00e9\n","spans":[{{"spanId":"s","spanType":"llm","name":"a\b\t\ud83d\ude00","startTime":1,"endTime":2{extra}}}]}}]}}"#
        )
    };
    let repaired = span(
        "ip-rep",
        r#","provider":"\uD83D","ttftMs":18446744073709551616"#,
    );
    let chunked = span("ip-chunk", r#","errorMessage":"\uDE00 \/ \\""#);
    let mut all = ingest_request(&key, repaired.as_bytes());
    all.extend(format!("POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nTransfer-Encoding: chunked\r\n\r\n").as_bytes());
    for piece in chunked.as_bytes().chunks(7) {
        all.extend(format!("{:x}\r\n", piece.len()).as_bytes());
        all.extend(piece);
        all.extend(b"\r\n");
    }
    all.extend(b"0\r\n\r\n");
    all.extend(ingest_request(&key, span("ip-plain", "").as_bytes()));
    let mut c = server.connect();
    c.send(&all);
    for _ in 0..3 {
        assert_eq!(c.read_response().json(), json!({"accepted": 1}));
    }
    // A body that ends where the bytes read end: its padding is added past them, and gone
    // again before the next request is read.
    for id in ["ip-last", "ip-next"] {
        c.send(&ingest_request(&key, span(id, "").as_bytes()));
        assert_eq!(c.read_response().json(), json!({"accepted": 1}));
    }
    server.wait_rows(5);
    let rows = server.rows(
        "trace_id, trace_name, name, provider, error_message, ttft_ms",
        "ORDER BY trace_id",
    );
    let row = |id: &str| rows.iter().find(|r| r["trace_id"] == id).expect(id).clone();
    for id in ["ip-chunk", "ip-last", "ip-next", "ip-plain", "ip-rep"] {
        let r = row(id);
        assert_eq!(r["trace_name"], "q \"x\" é\n", "{id}");
        assert_eq!(r["name"], "a\u{8}\t😀", "{id}");
    }
    assert_eq!(row("ip-rep")["provider"], "\u{FFFD}");
    assert_eq!(row("ip-rep")["ttft_ms"], 18446744073709551616.0);
    assert_eq!(row("ip-chunk")["error_message"], "\u{FFFD} / \\");
}

#[test]
fn many_connections_at_once() {
    let server = Server::start();
    let key = server.ready_key("org-many");
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let addr = server.addr;
            let key = key.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..5 {
                    c.send(&ingest_request(&key, &batch(&format!("m{t}-{i}"), 2, 3)));
                    assert_eq!(c.read_response().status, 202);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    server.wait_rows(32 * 5 * 6);
}

#[test]
fn malformed_request_gets_400_and_close() {
    let server = Server::start();
    let mut c = server.connect();
    c.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (400, "bad_request"));
    assert!(c.is_closed());
    let mut c = server.connect();
    c.send(b"NOT HTTP AT ALL\r\n\r\n");
    assert_eq!(c.read_response().status, 400);
    assert!(c.is_closed());
}
