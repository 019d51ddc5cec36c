//! `Expect: 100-continue` on a body the head already refuses.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::read_head;
use crate::support::*;

/// A body whose `Content-Encoding` is not decoded, or an OTLP export whose `Content-Type` is
/// neither protobuf nor JSON, is refused from its head: a client holding the body back for a
/// `100 Continue` gets the final `415` at once, not a `100` and then the `415` after sending
/// the whole body for nothing.
#[test]
fn expect_100_continue_is_not_answered_for_a_body_the_head_refuses() {
    let server = Server::start();
    let key = server.ready_key("org-expect-415");
    let cases = [
        (
            "/ingest",
            "Content-Type: application/json\r\nContent-Encoding: br\r\n",
            "unsupported_content_encoding",
        ),
        (
            "/v1/traces",
            "Content-Type: application/x-protobuf\r\nContent-Encoding: gzip, zstd\r\n",
            "unsupported_content_encoding",
        ),
        (
            "/v1/traces",
            "Content-Type: text/plain\r\n",
            "unsupported_media_type",
        ),
    ];
    for (path, headers, code) in cases {
        let raw = format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n{headers}\
             Expect: 100-continue\r\nContent-Length: 100\r\n\r\n"
        );
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let mut buf = Vec::new();
        let (status, head) = read_head(&mut s, &mut buf).expect("a final answer");
        assert_eq!(status, 415, "{raw:?}: {head}");
        assert!(head.contains("connection: close"), "{head}");
        s.read_to_end(&mut buf).expect("the connection ends");
        let rest = String::from_utf8_lossy(&buf);
        assert!(rest.contains(code), "{raw:?}: {rest}");
        assert!(!rest.contains("HTTP/1.1"), "a second answer: {rest}");
    }
    // The same heads without the expectation, body sent: the same refusal, the connection
    // kept (the body was read whole).
    let mut c = server.connect();
    c.send(
        format!(
            "POST /ingest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n\
             Content-Encoding: br\r\nContent-Length: 2\r\n\r\n{{}}"
        )
        .as_bytes(),
    );
    let r = c.read_response();
    assert_eq!(
        (r.status, r.code().as_str()),
        (415, "unsupported_content_encoding")
    );
    assert_eq!(r.header("connection"), None);
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_response().status, 200);
}
