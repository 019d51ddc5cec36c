//! Hostile clients over real TCP: framing that could smuggle a request, slow and idle clients,
//! each answered precisely or cut off; hostile JSON bodies in `json.rs`.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

mod expect;
mod json;

/// Reads raw bytes until `buf` holds a whole head; returns its status code and the head.
fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(u16, String)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let status = head.split(' ').nth(1)?.parse().ok()?;
            return Some((status, head));
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Reads until EOF (or a reset); panics if more bytes arrive first.
fn assert_eof(stream: &mut TcpStream, what: &str) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => assert!(
            rest.is_empty(),
            "{what}: bytes after the answer: {:?}",
            String::from_utf8_lossy(&rest)
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{what}: {e}"),
    }
}

/// The value of a counter in `/metrics`.
fn metric(server: &Server, name: &str) -> u64 {
    server.metric_value(name) as u64
}

fn health_ok(server: &Server) {
    let mut c = server.connect();
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
}

// ----- 1. HTTP framing -----

#[test]
fn malformed_framing_is_refused_and_closed() {
    let server = Server::start();
    let key = server.ready_key("org-framing");
    let post = |extra: &str| {
        format!("POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n{extra}")
    };
    let chunked = |body: &str| format!("{}Transfer-Encoding: chunked\r\n\r\n{body}", post(""));
    let big_header = format!("GET /health HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let many_headers: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
    let cases: Vec<(String, u16, &str)> = vec![
        (
            post("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}"),
            400,
            "bad_request",
        ),
        (
            post("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}"),
            400,
            "bad_request",
        ),
        (
            post("Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
            400,
            "bad_request",
        ),
        (post("Content-Length: 2, 3\r\n\r\n{}"), 400, "bad_request"),
        (post("Content-Length: 2,\r\n\r\n{}"), 400, "bad_request"),
        (post("Content-Length: -2\r\n\r\n{}"), 400, "bad_request"),
        // RFC 9112 §6.3: `chunked` not last (or not once) leaves the length unknown: 400.
        (post("Transfer-Encoding: gzip\r\n\r\n"), 400, "bad_request"),
        (
            post("Transfer-Encoding: chunked, gzip\r\n\r\n"),
            400,
            "bad_request",
        ),
        (
            post("Transfer-Encoding: gzip, chunked\r\n\r\n"),
            501,
            "unsupported_transfer_encoding",
        ),
        (
            post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400,
            "bad_request",
        ),
        (chunked("zz\r\n{}\r\n0\r\n\r\n"), 400, "bad_request"),
        (chunked("2 \r\n{}\r\n0\r\n\r\n"), 400, "bad_request"),
        (chunked("2;=x\r\n{}\r\n0\r\n\r\n"), 400, "bad_request"),
        (chunked("2\r\n{}XX0\r\n\r\n"), 400, "bad_request"),
        (chunked("2\n{}\r\n0\r\n\r\n"), 400, "bad_request"),
        (
            chunked("2\r\n{}\r\n0\r\nno colon\r\n\r\n"),
            400,
            "bad_request",
        ),
        (chunked("fffffffffffffffff\r\n"), 413, "payload_too_large"),
        (big_header, 431, "headers_too_large"),
        (
            format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(20_000)),
            414,
            "uri_too_long",
        ),
        (
            format!("GET /health HTTP/1.1\r\n{many_headers}\r\n"),
            431,
            "headers_too_large",
        ),
        (
            "GET /health HTTP/1.1\r\nHost : t\r\n\r\n".into(),
            400,
            "bad_request",
        ),
        (
            "GET /health HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n".into(),
            400,
            "bad_request",
        ),
        (
            "GET /health HTTP/1.1\nHost: t\n\n".into(),
            400,
            "bad_request",
        ),
        (
            "GET /health HTTP/1.1\r\nHost: t\rX: y\r\n\r\n".into(),
            400,
            "bad_request",
        ),
        (
            "GET /health HTTP/1.1\r\nX: a\0b\r\n\r\n".into(),
            400,
            "bad_request",
        ),
        ("GET /he alth HTTP/1.1\r\n\r\n".into(), 400, "bad_request"),
        (
            "GET /health HTTP/3.0\r\n\r\n".into(),
            505,
            "http_version_not_supported",
        ),
        (
            post("Expect: 200-ok\r\nContent-Length: 2\r\n\r\n{}"),
            417,
            "expectation_failed",
        ),
    ];
    for (raw, status, code) in &cases {
        let mut c = server.connect();
        c.send(raw.as_bytes());
        let r = c
            .try_read_response()
            .unwrap_or_else(|| panic!("no answer to {raw:?}"));
        assert_eq!((r.status, r.code().as_str()), (*status, *code), "{raw:?}");
        assert_eq!(r.header("connection"), Some("close"), "{raw:?}");
        assert!(c.is_closed(), "still open after {raw:?}");
    }
    // The well-formed neighbours of those cases are served: a chunked body with extensions
    // and trailers, a repeated identical Content-Length, and a list of identical values.
    let body = batch("frame-ok", 1, 1);
    let (a, b) = body.split_at(10);
    let mut raw = post("Transfer-Encoding: chunked\r\n\r\n").into_bytes();
    raw.extend_from_slice(format!("{:x};name=\"v\"\r\n", a.len()).as_bytes());
    raw.extend_from_slice(a);
    raw.extend_from_slice(format!("\r\n{:X}\r\n", b.len()).as_bytes());
    raw.extend_from_slice(b);
    raw.extend_from_slice(b"\r\n0\r\nX-Trailer: 1\r\n\r\n");
    let mut c = server.connect();
    c.send(&raw);
    assert_eq!(c.read_response().json(), json!({"accepted": 1}));
    let same = format!(
        "Content-Length: {n}\r\nContent-Length: {n}, {n}\r\n\r\n",
        n = 2
    );
    c.send(format!("{}{{}}", post(&same)).as_bytes());
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    server.wait_rows(1);
}

/// Found by an audit (2026-11-28), each a way for a client without a key to stop a worker or
/// the process: a bodiless `POST` with a bad key was answered again and again from the same
/// head; a body on a path that takes none was read whatever its size (`Content-Length` of
/// 10^12: the allocation aborted the process; 2^64 - 1: a worker panicked); chunked framing
/// (trailer lines, chunk extensions) was held in memory without a bound.
#[test]
fn requests_without_a_key_cannot_stop_a_worker_or_the_process() {
    let server = Server::start();
    let key = server.ready_key("org-hostile-heads");
    // A bodiless POST with no key, then one with an unknown key, then a valid batch, on one
    // connection: one answer each, in order.
    let mut c = server.connect();
    c.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n\r\n");
    let r = c.read_response();
    assert_eq!((r.status, r.code()), (401, "missing_api_key".to_string()));
    c.send(
        b"POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ti_0123456789abcdef0123456789abcdef\r\n\r\n",
    );
    assert_eq!(c.read_response().status, 401);
    c.send(&ingest_request(&key, &batch("hostile-heads", 1, 2)));
    assert_eq!(c.read_response().status, 202);
    assert!(
        metric(
            &server,
            "traceingest_responses_total{status=\"401\",code=\"missing_api_key\"}"
        ) <= 1,
        "one answer per request"
    );

    // Bodies on paths that take none: refused by size before anything is read or allocated.
    for (path, length) in [
        ("/nope", "1000000000000"),
        ("/health", "9999999999999999999"),
        ("/ready", "65537"),
    ] {
        let mut c = server.connect();
        c.send(
            format!("GET {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {length}\r\n\r\n")
                .as_bytes(),
        );
        let r = c.read_response();
        assert_eq!(r.status, 413, "{path} with a body of {length} bytes");
        assert!(c.is_closed(), "closed after refusing the body");
    }
    // A wrong method on the ingest routes takes no body either, key or not: a large one is
    // answered at once (without a byte of it sent) and the connection closed; a small one is
    // read and dropped, and the connection kept.
    for (method, path) in [
        ("GET", "/ingest"),
        ("PUT", "/v1/traces"),
        ("DELETE", "/ingest"),
    ] {
        let mut c = server.connect();
        c.send(
            format!("{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 10485760\r\n\r\n")
                .as_bytes(),
        );
        let r = c.read_response();
        assert_eq!(r.status, 405, "{method} {path} with a large body");
        assert!(
            c.is_closed(),
            "{method} {path}: closed without reading the body"
        );
        let mut c = server.connect();
        c.send(
            format!("{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
                .as_bytes(),
        );
        assert_eq!(c.read_response().status, 405, "{method} {path}");
        c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.read_response().status, 200, "{method} {path}: kept");
    }
    // Chunked, its size unknown: answered at once too, not read.
    let mut c = server.connect();
    c.send(b"GET /v1/traces HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(c.read_response().status, 405, "chunked");
    assert!(c.is_closed(), "chunked: closed without reading the body");
    // A key header sent twice with different values is refused, whichever copy is the valid
    // key: a proxy or a log reading the first would see another key than the one checked.
    for twice in [
        format!("x-api-key: ti_0123456789abcdef0123456789abcdef\r\nx-api-key: {key}"),
        format!("Authorization: Bearer ti_0123456789abcdef0123456789abcdef\r\nAuthorization: Bearer {key}"),
    ] {
        let mut c = server.connect();
        c.send(
            format!("POST /ingest HTTP/1.1\r\nHost: t\r\n{twice}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}")
                .as_bytes(),
        );
        let r = c.read_response();
        assert_eq!(
            (r.status, r.code()),
            (400, "bad_request".to_string()),
            "{twice}"
        );
    }
    // The same key twice (two layers of a client each adding it) is that key.
    let mut twice = ingest_request(&key, &batch("hostile-heads-twice", 1, 2));
    let at = twice.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    twice.splice(
        at..at,
        format!("authorization: Bearer {key}\r\n").into_bytes(),
    );
    let mut c = server.connect();
    c.send(&twice);
    assert_eq!(c.read_response().status, 202, "the same key twice");
    // A small one is still read and dropped, and the connection kept.
    let mut c = server.connect();
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(c.read_response().status, 200);
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
    // A chunked body on a bodiless path: refused once past 64 KiB, not read forever.
    let mut c = server.connect();
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = format!("4000\r\n{}\r\n", "a".repeat(0x4000));
    for _ in 0..6 {
        c.send(chunk.as_bytes());
    }
    assert_eq!(c.read_response().status, 413);

    // Trailer lines without end, on a keyed /ingest: refused within 16 KiB of trailers.
    let mut c = server.connect();
    c.send(
        format!(
            "POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n"
        )
        .as_bytes(),
    );
    let trailer = format!("X-T: {}\r\n", "a".repeat(8000));
    for _ in 0..4 {
        c.send(trailer.as_bytes());
    }
    let r = c.read_response();
    assert_eq!((r.status, r.code()), (400, "bad_request".to_string()));

    // Through all of it both workers kept serving, and nothing was lost.
    for _ in 0..8 {
        health_ok(&server);
    }
    let r = server.post_ingest(&key, &batch("hostile-heads-after", 1, 2));
    assert_eq!(r.status, 202);
    server.wait_rows(6);
}

/// The admin listener reads a head that arrives in several pieces (a scraper's head split by
/// the network), not only one that comes in a single read.
#[test]
fn the_admin_listener_reads_a_head_in_pieces() {
    let server = Server::start();
    let mut c = Client::connect(server.admin);
    for piece in [
        &b"GET /hea"[..],
        b"lth HTTP/1.1\r\n",
        b"Host: x\r\n",
        b"\r\n",
    ] {
        c.send(piece);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.read_response().status, 200);
    c.send(b"GET /metrics HTTP/1.1\r\n");
    std::thread::sleep(Duration::from_millis(100));
    c.send(b"\r\n");
    let r = c.read_response();
    assert_eq!(r.status, 200);
    assert!(String::from_utf8_lossy(&r.body).contains("traceingest_"));
}

/// A compressed body under a body cap below 64 KiB (the decompressor's first buffer): the
/// buffer's growth once panicked on crossed bounds, which ended the worker.
#[test]
fn compressed_bodies_work_under_a_small_body_cap() {
    use std::io::Write as _;
    let server = Server::start_with(&[("INGEST_MAX_BODY_BYTES", "50000")]);
    let key = server.ready_key("org-small-cap");
    let body = batch("small-cap", 2, 5);
    assert!(body.len() < 50_000);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&body).unwrap();
    let gz = e.finish().unwrap();
    for _ in 0..4 {
        let mut c = server.connect();
        c.send(
            format!(
                "POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                gz.len()
            )
            .as_bytes(),
        );
        c.send(&gz);
        let r = c.read_response();
        assert_eq!(r.status, 202, "{:?}", r.json());
    }
    server.wait_rows(10);
    health_ok(&server);
}

#[test]
fn smuggled_requests_are_never_executed() {
    let server = Server::start();
    let key = server.ready_key("org-smuggle");
    let head = format!("POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n");
    // Each variant hides a complete, valid request in the body of the second one, where a
    // front end reading the other framing would see it as a third request.
    let smuggled = ingest_request(&key, &batch("smuggled", 1, 1));
    let smuggled = String::from_utf8(smuggled).unwrap();
    let chunk_then = format!("0\r\n\r\n{smuggled}");
    let n = chunk_then.len();
    let variants: Vec<(String, u16)> = vec![
        (format!("Content-Length: {n}\r\nTransfer-Encoding: chunked\r\n\r\n{chunk_then}"), 400),
        (format!("Transfer-Encoding: chunked\r\nContent-Length: {n}\r\n\r\n{chunk_then}"), 400),
        (format!("Content-Length: 0\r\nContent-Length: {n}\r\n\r\n{chunk_then}"), 400),
        (format!("Content-Length: {n}, 0\r\n\r\n{chunk_then}"), 400),
        (format!("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\nContent-Length: {n}\r\n\r\n{chunk_then}"), 400),
        (format!("Transfer-Encoding : chunked\r\nContent-Length: {n}\r\n\r\n{chunk_then}"), 400),
        (format!("Transfer-Encoding: chunked\nContent-Length: {n}\r\n\r\n{chunk_then}"), 400),
        (format!("Transfer-Encoding: xchunked\r\n\r\n{chunk_then}"), 400),
        (format!("Transfer-Encoding: chunked, identity\r\n\r\n{chunk_then}"), 400),
        // A chunk size that wraps a 64-bit counter to 0x10.
        (format!("Transfer-Encoding: chunked\r\n\r\n10000000000000010\r\n{smuggled}"), 413),
    ];
    for (i, (rest, status)) in variants.iter().enumerate() {
        let first = ingest_request(&key, &batch(&format!("front{i}"), 1, 1));
        let mut pipeline = first;
        pipeline.extend_from_slice(head.as_bytes());
        pipeline.extend_from_slice(rest.as_bytes());
        let mut c = server.connect();
        c.send(&pipeline);
        assert_eq!(
            c.read_response().json(),
            json!({"accepted": 1}),
            "variant {i}"
        );
        let r = c.read_response();
        assert_eq!(
            r.status,
            *status,
            "variant {i}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.header("connection"), Some("close"), "variant {i}");
        // Nothing more: the smuggled request is never answered, so never executed.
        assert!(c.is_closed(), "variant {i}: a third answer arrived");
    }
    // Every connection above is closed, so the count is final: only the front requests.
    assert_eq!(
        metric(&server, "traceingest_batches_accepted_total"),
        variants.len() as u64
    );
    server.wait_rows(variants.len() as u64);
    assert!(server
        .rows("span_id", "WHERE span_id LIKE 'smuggled%'")
        .is_empty());
}

#[test]
fn expect_100_continue_only_after_the_checks_pass() {
    let server = Server::start();
    let key = server.ready_key("org-expect");
    let body = batch("expect", 1, 2);
    let head = |auth: &str, len: usize| {
        format!(
            "POST /ingest HTTP/1.1\r\nHost: t\r\n{auth}Expect: 100-continue\r\nContent-Length: {len}\r\n\r\n"
        )
    };

    // A valid key: 100 Continue, then the body, then the final answer.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = Vec::new();
    s.write_all(head(&format!("Authorization: Bearer {key}\r\n"), body.len()).as_bytes())
        .unwrap();
    let (status, line) = read_head(&mut s, &mut buf).expect("an interim answer");
    assert_eq!(status, 100, "{line}");
    assert!(buf.is_empty(), "only the 100 before the body is sent");
    s.write_all(&body).unwrap();
    let mut c = Client::from_stream(s);
    assert_eq!(c.read_response().json(), json!({"accepted": 2}));

    // No key, an unknown key, a body over the cap: the final status at once, no 100, close.
    let cases = [
        (head("", body.len()), 401, "missing_api_key"),
        (
            head(&format!("x-api-key: ti_{}\r\n", "B".repeat(43)), body.len()),
            401,
            "invalid_api_key",
        ),
        (
            head(&format!("Authorization: Bearer {key}\r\n"), 20 << 20),
            413,
            "payload_too_large",
        ),
        (
            "GET /health HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
                .to_owned(),
            200,
            "",
        ),
    ];
    for (raw, want, code) in cases {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let mut buf = Vec::new();
        let (status, head) = read_head(&mut s, &mut buf).expect("a final answer");
        assert_eq!(status, want, "{raw:?}: {head}");
        assert!(head.contains("connection: close"), "{head}");
        // Whatever follows is the answer's body, then the connection ends.
        s.read_to_end(&mut buf).expect("the connection ends");
        let rest = String::from_utf8_lossy(&buf);
        assert!(
            rest.contains(&format!("\"code\":\"{code}\"")) || code.is_empty(),
            "{rest}"
        );
        assert!(!rest.contains("HTTP/1.1"), "a second answer: {rest}");
    }
}

#[test]
fn http_1_0_is_answered_and_closed() {
    let server = Server::start();
    let key = server.ready_key("org-http10");
    let body = batch("http10", 1, 1);
    let ingest = {
        let mut r = format!(
            "POST /ingest HTTP/1.0\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(&body);
        r
    };
    let cases: [(&[u8], u16); 3] = [
        (b"GET /health HTTP/1.0\r\n\r\n", 200),
        (
            b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            200,
        ),
        (&ingest, 202),
    ];
    for (raw, status) in cases {
        let mut c = server.connect();
        c.send(raw);
        let r = c.read_response();
        assert_eq!(r.status, status, "{:?}", String::from_utf8_lossy(raw));
        assert_eq!(r.header("connection"), Some("close"));
        assert!(c.is_closed());
    }
    server.wait_rows(1);
}

// ----- 2. Slow and idle clients -----

#[test]
fn slowloris_is_cut_off_while_others_are_served() {
    let server = Server::start_with(&[
        ("INGEST_WORKERS", "1"),
        ("INGEST_HEADER_TIMEOUT_MS", "1000"),
    ]);
    let head =
        b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: one byte a second, for a minute\r\n\r\n";
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    slow.write_all(&head[..1]).unwrap();
    // The one worker serves a normal client while the slow head is pending.
    health_ok(&server);
    let mut answer = Vec::new();
    let mut sent = 1;
    let cut_off = loop {
        // One byte, then wait up to a second for the server to answer or close.
        let mut chunk = [0u8; 1024];
        match slow.read(&mut chunk) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break true,
        }
        if sent == head.len() {
            break false;
        }
        if slow.write_all(&head[sent..sent + 1]).is_err() {
            break true;
        }
        sent += 1;
    };
    assert!(cut_off, "the whole slow head was taken ({sent} bytes)");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408 "),
        "{answer}"
    );
    health_ok(&server);
}

#[test]
fn header_deadline_runs_from_the_first_byte() {
    let server = Server::start_with(&[
        ("INGEST_WORKERS", "1"),
        ("INGEST_HEADER_TIMEOUT_MS", "1000"),
    ]);
    // Idle for longer than the header timeout (which does not apply while idle), then a head
    // in two pieces: served, on a fresh connection and on a kept-alive one.
    let mut c = server.connect();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(1500));
        c.send(b"GET /health HTTP/1.1\r\n");
        std::thread::sleep(Duration::from_millis(100));
        c.send(b"Host: t\r\n\r\n");
        assert_eq!(c.read_response().status, 200);
    }
}

#[test]
fn slow_body_below_the_minimum_rate_gets_408() {
    let server = Server::start_with(&[
        ("INGEST_MIN_BODY_RATE_BYTES_PER_SEC", "1000"),
        ("INGEST_BODY_RATE_GRACE_MS", "1000"),
    ]);
    let key = server.ready_key("org-slowbody");
    // A body at a normal pace is taken.
    let r = server.post_ingest(&key, &batch("fast", 2, 3));
    assert_eq!(r.status, 202);

    // 10 bytes every 200 ms is 50 bytes a second.
    let body = batch("slow", 1, 1);
    let request = ingest_request(&key, &body);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.write_all(&request[..request.len() - body.len()]).unwrap();
    let mut answer = Vec::new();
    for piece in body.chunks(10) {
        if s.write_all(piece).is_err() {
            break;
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                break;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let mut c = Client::from_stream(s);
    // The answer may have arrived whole already; read whatever else there is.
    let mut rest = Vec::new();
    let _ = c.stream.read_to_end(&mut rest);
    answer.extend_from_slice(&rest);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(answer.contains("\"code\":\"request_timeout\""), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(c.is_closed());
    server.wait_rows(6);
}

#[test]
fn idle_keep_alive_connections_are_closed() {
    let server = Server::start_with(&[("INGEST_IDLE_TIMEOUT_MS", "1000")]);
    let mut c = server.connect();
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
    // Nothing sent: the server closes without an answer.
    assert_eof(&mut c.stream, "idle connection");
}

#[test]
fn a_client_that_never_reads_is_dropped() {
    let server = Server::start_with(&[("INGEST_IDLE_TIMEOUT_MS", "1000")]);
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
    // Each answer (a 404) is several times the size of its request.
    let requests = b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n".repeat(100);
    let deadline = Instant::now() + Duration::from_secs(120);
    // Pipeline requests and never read an answer: once the socket buffers are full the
    // server's writes stall, and it drops the connection after the idle timeout.
    let dropped = loop {
        match s.write_all(&requests) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break true,
        }
        if Instant::now() > deadline {
            break false;
        }
    };
    assert!(
        dropped,
        "the server kept writing to a client that never reads"
    );
    health_ok(&server);
}

#[test]
fn connections_past_the_cap_are_closed_at_once() {
    let server = Server::start_with(&[
        ("INGEST_WORKERS", "1"),
        ("INGEST_MAX_CONNECTIONS_PER_WORKER", "8"),
    ]);
    let mut held: Vec<Client> = (0..8)
        .map(|_| {
            let mut c = server.connect();
            c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
            assert_eq!(c.read_response().status, 200);
            c
        })
        .collect();
    let mut extra = server.connect();
    let _ = extra.try_send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eof(&mut extra.stream, "a connection past the cap");
    // A slot comes back when a connection ends.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut c = server.connect();
        let _ = c.try_send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
        if let Some(r) = c.try_read_response() {
            assert_eq!(r.status, 200);
            break;
        }
        assert!(Instant::now() < deadline, "the freed slot never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Raises this process's open-files limit (the server inherits it) and returns it.
fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(65_536);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
    }
    lim.rlim_cur
}

/// Resident memory of a process in KiB.
fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[test]
fn two_thousand_idle_connections_do_not_stop_a_new_client() {
    let limit = raise_fd_limit();
    let wanted = 2000usize;
    assert!(
        limit >= wanted as u64 + 200,
        "the open-files limit ({limit}) is too low for this test"
    );
    let server = Server::start_with(&[("INGEST_WORKERS", "1")]);
    health_ok(&server);
    let pid = server.pid();
    let base_fds = open_fds(pid);
    let before = rss_kib(pid);
    let idle: Vec<TcpStream> = (0..wanted)
        .map(|_| TcpStream::connect(server.addr).unwrap())
        .collect();
    // Wait until the server has accepted them all.
    let deadline = Instant::now() + Duration::from_secs(60);
    // (A few connections of the checks before may still be closing.)
    while open_fds(pid) + 10 < base_fds + wanted {
        assert!(Instant::now() < deadline, "connections were not accepted");
        std::thread::sleep(Duration::from_millis(50));
    }
    health_ok(&server);
    // Half send a partial head, so both idle shapes are held.
    for s in idle.iter().step_by(2) {
        (&*s).write_all(b"GET /health HTTP/1.1\r\n").unwrap();
    }
    health_ok(&server);
    let after = rss_kib(pid);
    let per_conn = (after.saturating_sub(before)) * 1024 / wanted as u64;
    eprintln!(
        "RSS with {wanted} idle connections: {before} KiB -> {after} KiB, about {per_conn} bytes each"
    );
    assert!(
        per_conn < 32 * 1024,
        "an idle connection costs {per_conn} bytes"
    );
    drop(idle);
}

// ----- 3. Hostile JSON -----
