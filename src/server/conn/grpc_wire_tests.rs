//! `grpc.rs` against gRPC over HTTP/2 (grpc/grpc's `doc/PROTOCOL-HTTP2.md` and
//! `doc/statuscodes.md`) and against hostile clients: what each malformed call is answered,
//! and the bounds a client cannot get past (streams, header blocks, floods, resets).

use std::sync::Arc;
use std::time::Duration;

use super::super::*;
use super::harness;
use crate::server::Shared;

/// A server whose idle timeout is short (a hostile connection ends 0.3 + 2 s after its last
/// export) and whose OTLP messages are at most 10,000 bytes.
fn shared() -> Arc<Shared> {
    let mut shared = Shared::for_bench();
    shared.config.idle_timeout = Duration::from_millis(300);
    shared.config.otlp_max_body_bytes = 10_000;
    Arc::new(shared)
}

fn meta(a: &harness::Answer, name: &str) -> String {
    a.meta
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// Every refusal a malformed call gets is a trailers-only answer (one HEADERS frame with
/// END_STREAM: `content-type`, `grpc-status`, `grpc-message`, no data) with the code gRPC's
/// documents name or, where the error is OTLP's, the OTLP/HTTP twin's code; and the
/// connection goes on serving exports. A content type that is not gRPC's at all is HTTP 415,
/// as the protocol asks, so that an HTTP/2 client that is not gRPC does not read the answer
/// as a success.
#[test]
fn every_malformed_call_is_refused_trailers_only_with_its_code() {
    let shared = shared();
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let message = harness::message(3);
    let with = |headers: &[(&str, &str)]| {
        let mut all = vec![("x-api-key", key.as_str())];
        all.extend_from_slice(headers);
        harness::export_request(addr, &all)
    };
    let prefix = |flag: u8, len: u32| {
        let mut p = vec![flag];
        p.extend_from_slice(&len.to_be_bytes());
        p
    };
    let mut no_type = with(&[]);
    no_type.headers_mut().remove("content-type");
    let mut text = with(&[]);
    text.headers_mut()
        .insert("content-type", HeaderValue::from_static("text/plain"));
    let mut json = with(&[]);
    json.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/grpc+json"),
    );
    let mut logs = with(&[]);
    *logs.uri_mut() =
        format!("http://{addr}/opentelemetry.proto.collector.logs.v1.LogsService/Export")
            .parse()
            .unwrap();
    let mut get = with(&[]);
    *get.method_mut() = http::Method::GET;
    let cut = message[..message.len() - 1].to_vec();
    const UNIMPLEMENTED: i32 = code::UNIMPLEMENTED;
    const INVALID: i32 = code::INVALID_ARGUMENT;
    // What, the call and its DATA frames, then the HTTP status, `grpc-status` and a part of
    // `grpc-message` answered.
    type Case<'a> = (&'a str, http::Request<()>, Vec<Vec<u8>>, u16, i32, &'a str);
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("no content type", no_type, vec![message.clone()], 415, UNIMPLEMENTED, "content-type"),
        ("text/plain", text, vec![message.clone()], 415, UNIMPLEMENTED, "content-type"),
        ("gRPC-JSON", json, vec![message.clone()], 200, UNIMPLEMENTED, "content-type"),
        ("another method", logs, vec![message.clone()], 200, UNIMPLEMENTED, "unknown method"),
        ("GET", get, vec![message.clone()], 200, UNIMPLEMENTED, "unknown method GET"),
        ("snappy", with(&[("grpc-encoding", "snappy")]), vec![message.clone()], 200, UNIMPLEMENTED, "snappy"),
        ("flagged compressed, identity", with(&[]), vec![[&[1][..], &message[1..]].concat()], 200, INVALID, "identity"),
        ("flag 2", with(&[]), vec![[&[2][..], &message[1..]].concat()], 200, INVALID, "neither 0 nor 1"),
        ("prefix past the cap", with(&[]), vec![prefix(0, 10_001)], 200, INVALID, "10000"),
        ("prefix past the data", with(&[]), vec![cut], 200, INVALID, "one whole"),
        ("prefix cut", with(&[]), vec![vec![0, 0, 0]], 200, INVALID, "one whole"),
        ("two messages", with(&[]), vec![[message.clone(), message.clone()].concat()], 200, INVALID, "more than one"),
        ("a second message in its own frame", with(&[]), vec![message.clone(), message.clone()], 200, INVALID, "more than one"),
        ("END_STREAM on the HEADERS", with(&[]), vec![], 200, INVALID, "one whole"),
        ("END_STREAM on an empty DATA", with(&[]), vec![vec![]], 200, INVALID, "one whole"),
    ];
    let (answers, last) = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let mut answers = Vec::new();
        for (what, request, pieces, http, code, says) in cases {
            let a = harness::call_frames(&mut client, request, pieces).await;
            answers.push((what, a.expect("an answer"), http, code, says));
        }
        let last = harness::call(&mut client, with(&[]), message.clone()).await;
        (answers, last.expect("an answer"))
    });
    server.thread.join().expect("the server ends");
    for (what, a, http, code, says) in &answers {
        assert!(a.trailers_only, "{what}: {a:?}");
        assert_eq!((a.http, a.status), (*http, Some(*code)), "{what}: {a:?}");
        assert_eq!(meta(a, "content-type"), "application/grpc", "{what}: {a:?}");
        assert!(meta(a, "grpc-message").contains(says), "{what}: {a:?}");
    }
    // The codings served, named where a coding was refused and only there.
    let snappy = &answers[5].1;
    assert_eq!(
        meta(snappy, "grpc-accept-encoding"),
        "identity,gzip,deflate,zstd"
    );
    assert!(meta(snappy, "grpc-message").ends_with("(unsupported_content_encoding)"));
    for (what, a, ..) in &answers[..5] {
        assert!(
            !a.meta.contains_key("grpc-accept-encoding"),
            "{what}: {a:?}"
        );
    }
    assert_eq!(
        (last.status, last.trailers_only),
        (Some(0), false),
        "{last:?}"
    );
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 3, "only the last export's spans");
}
