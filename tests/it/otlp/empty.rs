//! An export without spans, over HTTP.

use super::*;

/// An export that carries no span (an empty protobuf body is the empty
/// `ExportTraceServiceRequest`) is a full success, as the specification asks: `200` with an
/// empty `ExportTraceServiceResponse` in the request's format, nothing stored.
#[test]
fn an_empty_export_is_a_full_success() {
    let server = Server::start();
    let key = server.ready_key("org-empty");
    let cases: [(&str, &[u8], &[u8]); 4] = [
        (PROTOBUF, b"", b""),
        (PROTOBUF, b"\x0a\x00", b""),
        (JSON, b"{}", b"{}"),
        (
            JSON,
            b"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[]}]}]}",
            b"{}",
        ),
    ];
    for (ct, body, answer) in cases {
        let r = post(&server, &key, ct, &[], body);
        assert_eq!(
            r.status,
            200,
            "{ct} {body:?}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(
            (r.header("content-type"), &r.body[..]),
            (Some(ct), answer),
            "{body:?}"
        );
    }
    // Then a span, so that a row proves the empty exports stored nothing before it.
    let r = post(
        &server,
        &key,
        JSON,
        &[],
        &json_export(&[("00000000000000e1", T0, T0 + 1)]),
    );
    assert_eq!(r.status, 200);
    server.wait_rows(1);
    assert_eq!(
        server.rows("span_id", ""),
        vec![json!({"span_id": "00000000000000e1"})]
    );
}
