//! OTLP over gRPC against the real server, on the port of `/ingest`: tonic's client (hyper's
//! h2, as Rust exporters and the collector's Go client speak it) exports real captures, plain
//! and gzip, and they are stored span by span as over OTLP/HTTP; a raw h2 client sends what
//! no well-behaved client sends (unknown methods, wrong content types and codings, broken and
//! missing messages, more than one, one too large); and the refusals carry the `grpc-status`
//! and `RetryInfo` that exporters act on.

use std::net::SocketAddr;

use bytes::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use tonic::codec::CompressionEncoding;
use tonic::Code;

use crate::otlp::{capture, expected, json_export, post, stored_lines, JSON, T0};
use crate::support::*;

const EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// One export with tonic's generated client on a new channel, the key as `x-api-key`.
fn export(
    addr: SocketAddr,
    key: &str,
    request: ExportTraceServiceRequest,
    gzip: bool,
) -> Result<ExportTraceServiceResponse, tonic::Status> {
    export_answer(addr, key, request, gzip).map(tonic::Response::into_inner)
}

/// `export`, with the answer's metadata.
fn export_answer(
    addr: SocketAddr,
    key: &str,
    request: ExportTraceServiceRequest,
    gzip: bool,
) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
    runtime().block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("an endpoint")
            .connect()
            .await
            .expect("connect");
        let mut client = TraceServiceClient::new(channel);
        if gzip {
            client = client.send_compressed(CompressionEncoding::Gzip);
        }
        let mut request = tonic::Request::new(request);
        if !key.is_empty() {
            request
                .metadata_mut()
                .insert("x-api-key", key.parse().expect("ASCII"));
        }
        client.export(request).await
    })
}

/// A metadata value as a number, if the answer has it.
fn meta_u64(meta: &tonic::metadata::MetadataMap, name: &str) -> Option<u64> {
    meta.get(name).map(|v| v.to_str().unwrap().parse().unwrap())
}

/// The Python SDK's capture (7 spans over 4 traces) as the request message.
fn python_capture() -> ExportTraceServiceRequest {
    ExportTraceServiceRequest::decode(&capture("python-sdk-genai-plain.pb")[..]).expect("decodes")
}

/// A gRPC answer as a raw h2 client sees it.
#[derive(Debug)]
struct Raw {
    /// `grpc-status` (from the trailers, or the headers of a trailers-only answer).
    status: Option<i32>,
    message: String,
    headers: http::HeaderMap,
    data: Vec<u8>,
}

/// One call with a raw h2 client: `headers` beside `:path` and the key, then `body` as DATA.
fn raw_call(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Raw {
    runtime().block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{addr}{path}"));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let (answer, mut sending) = client
            .send_request(request.body(()).unwrap(), body.is_empty())
            .expect("send the request");
        if !body.is_empty() {
            sending
                .send_data(Bytes::from(body), true)
                .expect("send the body");
        }
        let answer = answer.await.expect("an answer");
        assert_eq!(answer.status(), 200, "gRPC answers are all HTTP 200");
        let (parts, mut recv) = answer.into_parts();
        let mut data = Vec::new();
        while let Some(piece) = recv.data().await {
            let piece = piece.expect("data");
            let _ = recv.flow_control().release_capacity(piece.len());
            data.extend_from_slice(&piece);
        }
        let trailers = recv.trailers().await.expect("trailers");
        let meta = trailers.as_ref().unwrap_or(&parts.headers);
        let text = |name: &str| meta.get(name).map(|v| v.to_str().unwrap().to_string());
        Raw {
            status: text("grpc-status").map(|s| s.parse().unwrap()),
            message: text("grpc-message").unwrap_or_default(),
            headers: parts.headers,
            data,
        }
    })
}

/// `message` behind gRPC's prefix (compressed flag, big-endian length).
fn framed(compressed: bool, message: &[u8]) -> Vec<u8> {
    let mut out = vec![u8::from(compressed)];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The real SDK capture exported over gRPC, plain and gzip, is stored span by span exactly as
/// the same capture over OTLP/HTTP (the expected lines of `otlp.rs`), and HTTP/1 keeps working
/// on the same port.
#[test]
fn grpc_exports_are_stored_as_their_http_twins() {
    let server = Server::start();
    let want = expected("python-sdk-genai");
    for (org, gzip) in [("org-grpc", false), ("org-grpc-gz", true)] {
        let key = server.ready_key(org);
        let answer = export(server.addr, &key, python_capture(), gzip).expect("exported");
        assert_eq!(answer.partial_success, None, "{org}");
        server.wait_rows(want.len() as u64 * if gzip { 2 } else { 1 });
        assert_eq!(stored_lines(&server, org), want, "{org}");
    }
    let exported = server.metric("traceingest_responses_total{status=\"200\",code=\"exported\"}");
    assert_eq!(exported, Some(2.0), "{}", server.metrics_text());
    let body_bytes = server.metric_value("traceingest_request_body_bytes_total");
    let plain = python_capture().encoded_len() as f64;
    assert!(
        body_bytes > plain && body_bytes < 2.0 * plain,
        "the plain message and the smaller gzip one: {body_bytes} against {plain}"
    );
    // Plain HTTP/1 on the same port, after the HTTP/2 connections.
    let key = server.ready_key("org-http");
    let r = post(
        &server,
        &key,
        JSON,
        &[],
        &json_export(&[("0000000000000001", T0, T0 + 1)]),
    );
    assert_eq!(r.status, 200);
}

/// Spans with bad ids or an end before their start are left out one by one, as over HTTP,
/// and reported in `partial_success`; in write-ahead mode, after the fsync.
#[test]
fn a_grpc_partial_success_names_the_rejected_spans() {
    let server = Server::start_with(&[("INGEST_DURABILITY", "wal")]);
    let key = server.ready_key("org-grpc-partial");
    let mut request = python_capture();
    let spans = &mut request.resource_spans[0].scope_spans[0].spans;
    let total = spans.len();
    spans[0].span_id = vec![1, 2, 3];
    let answer = export(server.addr, &key, request, false).expect("exported");
    let partial = answer.partial_success.expect("a partial success");
    assert_eq!(partial.rejected_spans, 1);
    assert!(partial.error_message.contains("span"), "{partial:?}");
    server.wait_rows(total as u64 - 1);
    assert!(
        server.metric_value("traceingest_wal_batches_total") >= 1.0,
        "the export waited for the write-ahead log"
    );
}

/// Every refusal a client can provoke, with the `grpc-status` the OTLP exporters act on (they
/// retry only `UNAVAILABLE`, `RESOURCE_EXHAUSTED` and the like) and a message that says why.
#[test]
fn grpc_refusals_carry_their_codes_and_why() {
    let server = Server::start_with(&[("INGEST_OTLP_MAX_BODY_BYTES", "100000")]);
    let key = server.ready_key("org-grpc-edges");
    let message = python_capture().encode_to_vec();
    let grpc = [
        ("content-type", "application/grpc"),
        ("x-api-key", key.as_str()),
    ];
    let unknown_key = format!("ti_{}", "A".repeat(key.len() - 3));
    let on_demand = || server.metric_value("traceingest_key_refreshes_on_demand_total");
    let loads = on_demand();
    let call = |path: &str, extra: &[(&str, &str)], body: Vec<u8>| {
        let mut headers = grpc.to_vec();
        for (k, v) in extra {
            headers.retain(|(h, _)| h != k);
            headers.push((k, v));
        }
        raw_call(server.addr, path, &headers, body)
    };
    // The raw client's well-formed call is taken: the cases below differ from it in one way.
    let ok = call(EXPORT, &[], framed(false, &message));
    assert_eq!(ok.status, Some(0), "{ok:?}");
    assert_eq!(
        &ok.data[..],
        &framed(false, &[])[..],
        "an empty ExportTraceServiceResponse"
    );
    assert_eq!(
        ok.headers.get("content-type").unwrap(),
        "application/grpc",
        "{ok:?}"
    );
    // gzip, flagged on the message as gRPC has it (another organisation: the same spans).
    let key_gz = server.ready_key("org-grpc-edges-gz");
    let zipped = call(
        EXPORT,
        &[("grpc-encoding", "gzip"), ("x-api-key", &key_gz)],
        framed(true, &gzip(&message)),
    );
    assert_eq!(zipped.status, Some(0), "{zipped:?}");

    const INVALID_ARGUMENT: i32 = 3;
    const UNIMPLEMENTED: i32 = 12;
    const UNAUTHENTICATED: i32 = 16;
    let cases: Vec<(&str, Raw, i32, &str)> = vec![
        (
            "unknown method",
            call(
                "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                &[],
                framed(false, &message),
            ),
            UNIMPLEMENTED,
            "unknown method",
        ),
        (
            "gRPC-JSON",
            call(
                EXPORT,
                &[("content-type", "application/grpc+json")],
                framed(false, &message),
            ),
            UNIMPLEMENTED,
            "application/grpc",
        ),
        (
            "snappy",
            call(
                EXPORT,
                &[("grpc-encoding", "snappy")],
                framed(true, &message),
            ),
            UNIMPLEMENTED,
            "snappy",
        ),
        (
            "no key",
            raw_call(server.addr, EXPORT, &grpc[..1], framed(false, &message)),
            UNAUTHENTICATED,
            "API key",
        ),
        (
            "unknown key",
            // Well formed, in no key set: refused after the early key-set load it asks for.
            call(
                EXPORT,
                &[("x-api-key", &unknown_key)],
                framed(false, &message),
            ),
            UNAUTHENTICATED,
            "(invalid_api_key)",
        ),
        (
            "a key header twice",
            // The valid key second: a proxy reading the first would see another one.
            raw_call(
                server.addr,
                EXPORT,
                &[grpc[0], ("x-api-key", &unknown_key), grpc[1]],
                framed(false, &message),
            ),
            INVALID_ARGUMENT,
            "two x-api-key headers with different values",
        ),
        (
            "not protobuf",
            call(EXPORT, &[], framed(false, b"\xff\xff\xff\xff")),
            INVALID_ARGUMENT,
            "(invalid_otlp)",
        ),
        (
            "a message cut short",
            call(EXPORT, &[], framed(false, &message)[..100].to_vec()),
            INVALID_ARGUMENT,
            "one whole",
        ),
        (
            "no message",
            call(EXPORT, &[], Vec::new()),
            INVALID_ARGUMENT,
            "one whole",
        ),
        (
            "two messages",
            call(
                EXPORT,
                &[],
                [framed(false, &message), framed(false, &message)].concat(),
            ),
            INVALID_ARGUMENT,
            "more than one message",
        ),
        (
            "flagged compressed, sent plain",
            call(EXPORT, &[], framed(true, &message)),
            INVALID_ARGUMENT,
            "identity",
        ),
        (
            "larger than INGEST_OTLP_MAX_BODY_BYTES",
            call(EXPORT, &[], framed(false, &vec![0; 100_001])),
            INVALID_ARGUMENT,
            "100000",
        ),
        (
            "a gzip bomb",
            call(
                EXPORT,
                &[("grpc-encoding", "gzip")],
                framed(true, &gzip(&vec![0; 1_000_000])),
            ),
            INVALID_ARGUMENT,
            "100000",
        ),
    ];
    for (what, got, code, says) in cases {
        assert_eq!(got.status, Some(code), "{what}: {got:?}");
        assert!(got.message.contains(says), "{what}: {got:?}");
        assert!(got.data.is_empty(), "{what}: trailers only: {got:?}");
    }
    assert!(
        on_demand() > loads,
        "the unknown key asked for an early key-set load"
    );
    let snappy = call(
        EXPORT,
        &[("grpc-encoding", "snappy")],
        framed(true, &message),
    );
    assert_eq!(
        snappy.headers.get("grpc-accept-encoding").unwrap(),
        "identity,gzip,deflate,zstd"
    );
    // Only the two good calls were stored.
    server.wait_rows(14);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert_eq!(server.count(), 14);
}

/// A rate-limited export is `RESOURCE_EXHAUSTED` with the delay in a `RetryInfo`, which the
/// exporters wait; a used-up quota is `PERMISSION_DENIED`, which none retries.
#[test]
fn grpc_rate_limits_say_when_and_quotas_are_final() {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Duration {
        #[prost(int64, tag = "1")]
        seconds: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct RetryInfo {
        #[prost(message, optional, tag = "1")]
        retry_delay: Option<Duration>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct Any {
        #[prost(string, tag = "1")]
        type_url: String,
        #[prost(bytes = "vec", tag = "2")]
        value: Vec<u8>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    struct Status {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(message, repeated, tag = "3")]
        details: Vec<Any>,
    }

    let server = Server::start_with(&[
        ("INGEST_PLANS", "slow:unlimited:1:10"),
        ("INGEST_DEFAULT_PLAN", "slow"),
    ]);
    let key = server.ready_key("org-grpc-rate");
    // 1 span a second, a bucket of 10: the first export of 7 spans leaves 3, and the second,
    // unless it comes 4 s later, finds too few. Both answers say what is left, as OTLP/HTTP's
    // headers do.
    let answer = export_answer(server.addr, &key, python_capture(), false).expect("exported");
    let meta = answer.metadata();
    assert_eq!(meta_u64(meta, "x-ratelimit-limit"), Some(10), "{meta:?}");
    let left = meta_u64(meta, "x-ratelimit-remaining").expect("remaining");
    assert!((3..=4).contains(&left), "{meta:?}");
    let refused = export(server.addr, &key, python_capture(), false).expect_err("rate-limited");
    let meta = refused.metadata();
    assert_eq!(meta_u64(meta, "x-ratelimit-limit"), Some(10), "{meta:?}");
    assert!(
        meta_u64(meta, "x-ratelimit-remaining").expect("remaining") < 7,
        "{meta:?}"
    );
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("rate_limited"), "{refused:?}");
    let status = Status::decode(refused.details()).expect("grpc-status-details-bin");
    assert_eq!(status.code, Code::ResourceExhausted as i32);
    assert_eq!(status.details.len(), 1, "{status:?}");
    assert_eq!(
        status.details[0].type_url,
        "type.googleapis.com/google.rpc.RetryInfo"
    );
    let retry = RetryInfo::decode(&status.details[0].value[..]).unwrap();
    let seconds = retry.retry_delay.as_ref().expect("a delay").seconds;
    assert!((1..=10).contains(&seconds), "{seconds}");
    let alone = refused
        .metadata()
        .get_bin("google.rpc.retryinfo-bin")
        .expect("the Python exporter's RetryInfo")
        .to_bytes()
        .unwrap();
    assert_eq!(RetryInfo::decode(&alone[..]).unwrap(), retry);
    drop(server);

    let server = Server::start_with(&[("INGEST_PLANS", "tiny:1"), ("INGEST_DEFAULT_PLAN", "tiny")]);
    let key = server.ready_key("org-grpc-quota");
    let refused = export(server.addr, &key, python_capture(), false).expect_err("over quota");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("quota"), "{refused:?}");
    let meta = refused.metadata();
    assert_eq!(meta_u64(meta, "x-quota-limit"), Some(1), "{meta:?}");
    assert_eq!(meta_u64(meta, "x-quota-used"), Some(0), "{meta:?}");
    assert_eq!(meta.get("x-quota-warning").unwrap(), "90%");
    assert!(
        refused
            .metadata()
            .get_bin("google.rpc.retryinfo-bin")
            .is_none(),
        "no delay: not to be retried"
    );
    let missing = export(server.addr, "", python_capture(), false).expect_err("no key");
    assert_eq!(missing.code(), Code::Unauthenticated, "{missing:?}");
}

/// Opens an HTTP/2 connection, starts no stream, and waits (at most `within`) for the server
/// to close it: whether it did.
async fn closed_by_the_server(addr: SocketAddr, within: std::time::Duration) -> bool {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (_client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    matches!(tokio::time::timeout(within, conn).await, Ok(Ok(())))
}

/// An HTTP/2 connection without a stream is closed (`GOAWAY`) after the idle timeout, as an
/// idle HTTP/1 one is; and one open when the server drains does not hold up its exit.
#[test]
fn idle_grpc_connections_close_on_their_timeout_and_on_the_drain() {
    use std::time::{Duration, Instant};
    let server = Server::start_with(&[("INGEST_IDLE_TIMEOUT_MS", "300")]);
    let started = Instant::now();
    assert!(runtime().block_on(closed_by_the_server(server.addr, Duration::from_secs(10))));
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "not before the timeout"
    );
    drop(server);

    let mut server = Server::start();
    let addr = server.addr;
    let holder = std::thread::spawn(move || {
        runtime().block_on(closed_by_the_server(addr, Duration::from_secs(30)))
    });
    std::thread::sleep(Duration::from_millis(300));
    server.signal(libc::SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(15)), 0);
    assert!(holder.join().unwrap(), "the drain closed the connection");
}

/// Twenty exports at once on a new HTTP/2 connection (tonic multiplexes them, opening streams
/// before it has the server's settings): every one is answered and stored.
#[test]
fn concurrent_grpc_exports_on_one_connection_are_all_stored() {
    let server = Server::start();
    let key = server.ready_key("org-grpc-many");
    let answers = runtime().block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
            .unwrap()
            .connect()
            .await
            .expect("connect");
        let calls = (0..20u8).map(|n| {
            let mut client = TraceServiceClient::new(channel.clone());
            let mut request = python_capture();
            // Trace ids of this export's own.
            for rs in &mut request.resource_spans {
                for ss in &mut rs.scope_spans {
                    for span in &mut ss.spans {
                        span.trace_id[0] = n;
                    }
                }
            }
            let mut request = tonic::Request::new(request);
            request
                .metadata_mut()
                .insert("x-api-key", key.parse().unwrap());
            async move { client.export(request).await }
        });
        futures_util::future::join_all(calls).await
    });
    for (n, answer) in answers.into_iter().enumerate() {
        let answer = answer.unwrap_or_else(|e| panic!("export {n}: {e:?}"));
        assert_eq!(answer.into_inner().partial_success, None, "export {n}");
    }
    server.wait_rows(20 * 7);
}

/// An HTTP/2 frame: 24-bit length, type, flags, stream id, payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A header as HPACK's literal without indexing, new name, no Huffman (lengths under 127).
fn literal(name: &str, value: &str) -> Vec<u8> {
    let mut out = vec![0x00, name.len() as u8];
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
    out
}

/// A raw HTTP/2 client that never answers the server's pings (so h2 never closes the
/// connection by itself) and reads only when asked: the preface, empty settings and the ack of
/// the server's, then one export's HEADERS with `key` (stream 1), and its message as DATA when
/// `send_body` is called.
struct RawClient {
    stream: std::net::TcpStream,
    message: Vec<u8>,
}

impl RawClient {
    fn open(addr: SocketAddr, settings: &[u8], key: &str) -> RawClient {
        use std::io::Write as _;
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .unwrap();
        stream.write_all(&frame(0x4, 0, 0, settings)).unwrap();
        stream.write_all(&frame(0x4, 0x1, 0, &[])).unwrap();
        let headers = [
            literal(":method", "POST"),
            literal(":scheme", "http"),
            literal(":path", EXPORT),
            literal(":authority", "perf"),
            literal("content-type", "application/grpc"),
            literal("x-api-key", key),
        ]
        .concat();
        if !key.is_empty() {
            stream.write_all(&frame(0x1, 0x4, 1, &headers)).unwrap();
        }
        RawClient {
            stream,
            message: framed(false, &python_capture().encode_to_vec()),
        }
    }

    fn send_body(&mut self) {
        use std::io::Write as _;
        self.stream
            .write_all(&frame(0x0, 0x1, 1, &self.message))
            .unwrap();
    }

    /// Reads the server's frames until it closes the connection (at most 15 s): whether a DATA
    /// frame on stream 1 held an empty `ExportTraceServiceResponse` (the export's answer).
    fn until_closed(&mut self) -> bool {
        use std::io::Read as _;
        self.stream
            .set_read_timeout(Some(std::time::Duration::from_secs(15)))
            .unwrap();
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("the server did not close the connection within 15 s: {e}"),
            }
        }
        let (mut at, mut answered) = (0, false);
        while at + 9 <= all.len() {
            let len = u32::from_be_bytes([0, all[at], all[at + 1], all[at + 2]]) as usize;
            let (kind, stream) = (
                all[at + 3],
                u32::from_be_bytes(all[at + 5..at + 9].try_into().unwrap()),
            );
            let payload = &all[at + 9..(at + 9 + len).min(all.len())];
            answered |= kind == 0x0 && stream == 1 && payload == [0, 0, 0, 0, 0];
            at += 9 + len;
        }
        answered
    }
}

/// Clients h2 alone would keep forever: one that never answers the `GOAWAY`'s ping, and one
/// that never lets the answer of its export out (a stream window of 0). Each is dropped once
/// the idle timeout and `CLOSE_WAIT` (2 s) have passed with no export running, not before; the
/// export was stored all the same.
#[test]
fn grpc_clients_that_never_read_or_answer_are_dropped() {
    use std::time::{Duration, Instant};
    let server = Server::start_with(&[("INGEST_IDLE_TIMEOUT_MS", "500")]);
    let key = server.ready_key("org-grpc-stuck");

    // No stream: dropped 0.5 + 2 s after it connected.
    let started = Instant::now();
    let mut silent = RawClient::open(server.addr, &[], "");
    assert!(!silent.until_closed());
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2400),
        "dropped too early: {took:?}"
    );

    // An export whose answer cannot be sent: SETTINGS_INITIAL_WINDOW_SIZE (4) = 0.
    let mut stuck = RawClient::open(server.addr, &[0, 4, 0, 0, 0, 0], &key);
    stuck.send_body();
    let sent = Instant::now();
    server.wait_rows(7);
    assert!(!stuck.until_closed(), "no window for the answer");
    let took = sent.elapsed();
    assert!(
        took >= Duration::from_millis(2400),
        "dropped too early: {took:?}"
    );
}

/// An export in flight when the server drains, whose message ends more than `CLOSE_WAIT` after
/// the `GOAWAY`, from a client that never answers pings: it is stored and answered, then the
/// connection is closed and the server exits.
#[test]
fn a_grpc_export_in_flight_during_the_drain_is_answered() {
    use std::time::Duration;
    let mut server = Server::start_with(&[("INGEST_SHUTDOWN_TIMEOUT_MS", "30000")]);
    let key = server.ready_key("org-grpc-drain");
    let mut client = RawClient::open(server.addr, &[], &key);
    std::thread::sleep(Duration::from_millis(300));
    server.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_secs(3));
    client.send_body();
    assert!(
        client.until_closed(),
        "the export's answer arrived before the close"
    );
    assert_eq!(server.wait_exit(Duration::from_secs(30)), 0);
    assert_eq!(server.count(), 7);
}

/// The exports of one connection hold at most 4 messages' worth of bytes while they are read
/// (each counted at the length its prefix declares): a fifth export finds no room and is
/// refused at once with `UNAVAILABLE` and a 1 s `RetryInfo`, never made to wait. An export that
/// ends gives its room back, and the next export on the same connection is stored.
#[test]
fn a_connection_holds_at_most_four_messages_being_read() {
    const MAX: u32 = 1 << 20;
    let server = Server::start_with(&[("INGEST_OTLP_MAX_BODY_BYTES", &MAX.to_string())]);
    let key = server.ready_key("org-grpc-held");
    let addr = server.addr;
    let message = framed(false, &python_capture().encode_to_vec());
    runtime().block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut client = client.ready().await.expect("ready");
        let request = || {
            http::Request::builder()
                .method("POST")
                .uri(format!("http://{addr}{EXPORT}"))
                .header("content-type", "application/grpc")
                .header("x-api-key", key.as_str())
                .body(())
                .unwrap()
        };
        // Four exports declare a whole 1 MiB message and send only its prefix.
        let mut holders = Vec::new();
        for _ in 0..4 {
            let (answer, mut body) = client.send_request(request(), false).expect("a stream");
            let mut prefix = vec![0u8];
            prefix.extend_from_slice(&MAX.to_be_bytes());
            body.send_data(Bytes::from(prefix), false)
                .expect("the prefix");
            holders.push((answer, body));
        }
        // The server counts the four before the next stream comes (polled between sleeps:
        // the client's connection runs on this thread).
        let mut waited = 0;
        while server.metric_value("traceingest_grpc_message_bytes") != f64::from(4 * MAX) {
            assert!(waited < 500, "4 MiB never held");
            waited += 1;
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let status = |headers: &http::HeaderMap, name: &str| {
            headers.get(name).map(|v| v.to_str().unwrap().to_string())
        };
        let (answer, mut body) = client.send_request(request(), false).expect("a stream");
        body.send_data(Bytes::from(message.clone()), true)
            .expect("the message");
        let refused = answer.await.expect("an answer");
        let meta = refused.headers();
        assert_eq!(
            status(meta, "grpc-status").as_deref(),
            Some("14"),
            "{meta:?}"
        );
        let why = status(meta, "grpc-message").unwrap_or_default();
        assert!(
            why.contains("connection_busy") && why.contains(&(4 * MAX).to_string()),
            "{why}"
        );
        assert!(meta.contains_key("google.rpc.retryinfo-bin"), "{meta:?}");

        // The first holder ends its stream short: refused for that, its room given back.
        let (answer, mut body) = holders.remove(0);
        body.send_data(Bytes::new(), true).expect("end the stream");
        let cut = answer.await.expect("an answer");
        assert_eq!(status(cut.headers(), "grpc-status").as_deref(), Some("3"));
        let (answer, mut body) = client.send_request(request(), false).expect("a stream");
        body.send_data(Bytes::from(message.clone()), true)
            .expect("the message");
        let (parts, mut recv) = answer.await.expect("an answer").into_parts();
        while let Some(piece) = recv.data().await {
            let _ = piece.expect("data");
        }
        let trailers = recv.trailers().await.expect("trailers").expect("trailers");
        assert_eq!(
            status(&trailers, "grpc-status").as_deref(),
            Some("0"),
            "{parts:?}"
        );
        drop(holders);
    });
    server.wait_rows(7);
    assert_eq!(
        server.metric_value("traceingest_responses_total{status=\"503\",code=\"connection_busy\"}"),
        1.0
    );
    // The holders' streams went with the connection: nothing stays counted.
    wait_until("nothing held", std::time::Duration::from_secs(10), || {
        server.metric_value("traceingest_grpc_message_bytes") == 0.0
    });
}
