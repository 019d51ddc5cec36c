//! Tests of `grpc.rs`.

use super::*;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn the_preface_is_told_from_http1_by_its_first_bytes() {
    assert_eq!(sniff(b""), Sniff::Undecided);
    assert_eq!(sniff(b"P"), Sniff::Undecided);
    assert_eq!(sniff(b"PRI * HTTP/2"), Sniff::Undecided);
    assert_eq!(sniff(PREFACE), Sniff::Http2);
    let mut more = PREFACE.to_vec();
    more.extend_from_slice(b"\x00\x00\x12\x04");
    assert_eq!(sniff(&more), Sniff::Http2);
    assert_eq!(sniff(b"POST /ingest HTTP/1.1\r\n"), Sniff::Http1);
    assert_eq!(sniff(b"PRI * HTTP/1.1\r\n"), Sniff::Http1);
    assert_eq!(sniff(b"GET / HTTP/1.1\r\n"), Sniff::Http1);
}

#[test]
fn base64_matches_rfc_4648_without_padding() {
    for (plain, coded) in [
        ("", ""),
        ("f", "Zg"),
        ("fo", "Zm8"),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg"),
        ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), coded.as_bytes(), "{plain}");
    }
    assert_eq!(base64(&[0xff, 0xfe, 0xfd]), b"//79");
}

#[test]
fn grpc_messages_are_percent_encoded() {
    assert_eq!(percent_encode("plain text: ok"), b"plain text: ok");
    assert_eq!(percent_encode("100% é\n"), b"100%25 %C3%A9%0A");
}

#[test]
fn refusals_get_the_grpc_codes_exporters_act_on() {
    let code_of = |why: Refused| grpc_code(&otlp_refusal(why));
    assert_eq!(
        code_of(Refused::Auth(AuthError::Missing)),
        code::UNAUTHENTICATED
    );
    assert_eq!(
        code_of(Refused::Conn(ConnError::Draining)),
        code::UNAVAILABLE
    );
    assert_eq!(
        code_of(Refused::Conn(ConnError::NotFound)),
        code::UNIMPLEMENTED
    );
    assert_eq!(
        code_of(Refused::Conn(ConnError::UnsupportedMediaType)),
        code::UNIMPLEMENTED
    );
    assert_eq!(
        code_of(Refused::Conn(ConnError::SlowBody)),
        code::DEADLINE_EXCEEDED
    );
    // Too large is not retried: the same export would be refused again.
    assert_eq!(
        code_of(Refused::Conn(ConnError::Http {
            error: HttpError::BodyTooLarge,
            max_body: 1
        })),
        code::INVALID_ARGUMENT
    );
}

/// `RetryInfo` as prost decodes it, inside the `Status` of `grpc-status-details-bin`.
#[test]
fn retry_info_decodes_with_prost() {
    use prost::Message;
    #[derive(Clone, PartialEq, prost::Message)]
    struct Duration {
        #[prost(int64, tag = "1")]
        seconds: i64,
        #[prost(int32, tag = "2")]
        nanos: i32,
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
        #[prost(string, tag = "2")]
        message: String,
        #[prost(message, repeated, tag = "3")]
        details: Vec<Any>,
    }
    let message = "draining (draining)";
    let coded = retry_info(code::UNAVAILABLE, message, Some(7)).expect("a Retry-After");
    let alone = RetryInfo::decode(&unbase64(&coded.retry_info)[..]).expect("a RetryInfo");
    assert_eq!(
        alone.retry_delay,
        Some(Duration {
            seconds: 7,
            nanos: 0
        })
    );
    let bytes = unbase64(&coded.status_details);
    let status = Status::decode(&bytes[..]).expect("a Status");
    assert_eq!(status.code, code::UNAVAILABLE);
    assert_eq!(status.message, message);
    assert_eq!(status.details.len(), 1);
    assert_eq!(
        status.details[0].type_url,
        "type.googleapis.com/google.rpc.RetryInfo"
    );
    let retry = RetryInfo::decode(&status.details[0].value[..]).expect("a RetryInfo");
    assert_eq!(
        retry.retry_delay,
        Some(Duration {
            seconds: 7,
            nanos: 0
        })
    );
    assert_eq!(retry_info(code::UNAVAILABLE, message, None), None);
}

/// The test's own base64 reader (standard alphabet, no padding).
fn unbase64(coded: &[u8]) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for &c in coded {
        acc = acc << 6 | u32::from(value(c));
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// A gRPC server on a worker of its own (a monoio thread serving `connections` connections
/// with `serve`), its rows sent to a channel the test holds, and an h2 client for it.
pub(super) mod harness {
    use std::net::SocketAddr;
    use std::sync::Arc;

    use crate::server::conn::Worker;
    use crate::server::drain::DrainSignal;
    use crate::server::keywait::KeyWaits;
    use crate::server::Shared;
    use crate::sink::Handoff;

    pub struct TestServer {
        pub addr: SocketAddr,
        pub thread: std::thread::JoinHandle<()>,
        pub rows: crossbeam_channel::Receiver<crate::row::RowBatch>,
    }

    /// Serves the next `connections` connections to a listener of its own, all at once,
    /// until every one has ended and every export they started too.
    pub fn start(shared: Arc<Shared>, connections: usize) -> TestServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap();
        let (tx, rows) = crossbeam_channel::unbounded();
        let thread = std::thread::spawn(move || {
            monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
                .enable_timer()
                .build()
                .expect("a monoio runtime")
                .block_on(async move {
                    let handoff = Handoff::buffer(shared.budget.clone(), tx);
                    let worker = std::rc::Rc::new(Worker {
                        pipeline: std::cell::RefCell::new(crate::ingest::Pipeline::new(
                            shared.pipeline_parts(handoff),
                        )),
                        active: std::cell::Cell::new(0),
                        key_waits: KeyWaits::default(),
                        drain: DrainSignal::default(),
                        shared,
                    });
                    let listener =
                        monoio::net::TcpListener::from_std(listener).expect("a listener");
                    let mut served = Vec::new();
                    for _ in 0..connections {
                        let (stream, _) = listener.accept().await.expect("accept");
                        served.push(monoio::spawn(super::serve(
                            stream,
                            Vec::new(),
                            worker.clone(),
                        )));
                    }
                    for s in served {
                        s.await;
                    }
                    // And the exports they started (each holds the worker).
                    while std::rc::Rc::strong_count(&worker) > 1 {
                        monoio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                });
        });
        TestServer { addr, thread, rows }
    }

    pub fn client_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    }

    /// An h2 client connection (prior knowledge), driven by a task of the runtime.
    pub async fn connect(addr: SocketAddr) -> h2::client::SendRequest<bytes::Bytes> {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
    }

    /// A key the server knows, of an organisation without limits.
    pub fn known_key(shared: &Shared) -> String {
        let key = crate::auth::generate_key(&shared.config.key_prefix).unwrap();
        let mut set = crate::auth::KeySet::default();
        set.insert(
            crate::auth::hash_key(key.as_bytes()),
            Arc::new(crate::auth::Principal::unlimited("org", "")),
        );
        shared.keys.replace(set, 0, true);
        key
    }

    /// An export of `spans` spans of one trace, as its gRPC message (prefix included).
    pub fn message(spans: u64) -> Vec<u8> {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
        use prost::Message;
        let spans = (1..=spans)
            .map(|i| Span {
                trace_id: vec![7; 16],
                span_id: i.to_be_bytes().to_vec(),
                name: format!("span {i}"),
                start_time_unix_nano: 1_700_000_000_000_000_000,
                end_time_unix_nano: 1_700_000_001_000_000_000,
                ..Span::default()
            })
            .collect();
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..ScopeSpans::default()
                }],
                ..ResourceSpans::default()
            }],
        };
        framed(&request.encode_to_vec())
    }

    /// `bytes` behind gRPC's uncompressed prefix.
    pub fn framed(bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        out.extend_from_slice(bytes);
        out
    }

    /// An answer: `grpc-status` (trailers, or the headers of a trailers-only answer), its
    /// metadata and its data, its HTTP status, and whether it was trailers-only (one HEADERS
    /// frame that ends the stream: no data, no trailers).
    #[derive(Debug)]
    pub struct Answer {
        pub status: Option<i32>,
        pub meta: http::HeaderMap,
        pub data: Vec<u8>,
        pub http: u16,
        pub trailers_only: bool,
    }

    /// Sends `request` with `body` as one DATA frame and ends the stream; reads the answer.
    pub async fn call(
        client: &mut h2::client::SendRequest<bytes::Bytes>,
        request: http::Request<()>,
        body: Vec<u8>,
    ) -> Result<Answer, h2::Error> {
        call_frames(client, request, vec![body]).await
    }

    /// Sends `request`, then each of `pieces` as a DATA frame, the last with END_STREAM (no
    /// pieces: END_STREAM on the HEADERS); reads the answer.
    pub async fn call_frames(
        client: &mut h2::client::SendRequest<bytes::Bytes>,
        request: http::Request<()>,
        pieces: Vec<Vec<u8>>,
    ) -> Result<Answer, h2::Error> {
        let mut ready = client.clone().ready().await?;
        let (answer, mut sending) = ready.send_request(request, pieces.is_empty())?;
        let n = pieces.len();
        for (i, piece) in pieces.into_iter().enumerate() {
            sending.send_data(bytes::Bytes::from(piece), i + 1 == n)?;
        }
        read_answer(answer).await
    }

    /// Reads an answer to its end.
    pub async fn read_answer(answer: h2::client::ResponseFuture) -> Result<Answer, h2::Error> {
        let (parts, mut recv) = answer.await?.into_parts();
        let ended = recv.is_end_stream();
        let mut data = Vec::new();
        while let Some(piece) = recv.data().await {
            let piece = piece?;
            let _ = recv.flow_control().release_capacity(piece.len());
            data.extend_from_slice(&piece);
        }
        let trailers = recv.trailers().await?;
        let trailers_only = ended && data.is_empty() && trailers.is_none();
        let meta = trailers.unwrap_or(parts.headers);
        let status = meta
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().parse().unwrap());
        Ok(Answer {
            status,
            meta,
            data,
            http: parts.status.as_u16(),
            trailers_only,
        })
    }

    /// An export's request head, with `headers` besides the path and content type.
    pub fn export_request(addr: SocketAddr, headers: &[(&str, &str)]) -> http::Request<()> {
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{addr}{}", super::EXPORT_PATH))
            .header("content-type", "application/grpc");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.body(()).unwrap()
    }
}

/// A client that resets each export as soon as the server has taken it, while its task still
/// waits (here, for a key-set load that may know its key), opens the next one in its place:
/// h2 counts only open streams, so without a bound of their own the exports of one
/// connection piled up (a thousand tasks, each holding its headers, from a client that never
/// had more than 100 streams open), from a few bytes per stream.
#[test]
fn exports_reset_by_the_client_do_not_pile_up_on_its_connection() {
    let shared = Arc::new(Shared::for_bench());
    let unknown = crate::auth::generate_key(&shared.config.key_prefix).unwrap();
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let rt = harness::client_runtime();
    let client = rt.block_on(async {
        let mut client = harness::connect(addr).await;
        for _ in 0..10 {
            let mut opened = Vec::new();
            for _ in 0..MAX_STREAMS {
                let Ok(ready) = client.clone().ready().await else {
                    return client;
                };
                client = ready;
                let request = harness::export_request(addr, &[("x-api-key", &unknown)]);
                let Ok((_, sending)) = client.send_request(request, false) else {
                    return client;
                };
                opened.push(sending);
            }
            // The server takes them (its tasks start), then the client resets them all.
            tokio::time::sleep(Duration::from_millis(50)).await;
            for mut s in opened {
                s.send_reset(h2::Reason::CANCEL);
            }
        }
        client
    });
    drop((client, rt));
    // The server ends once every export it started has (after the key wait, 500 ms).
    server.thread.join().expect("the server ends");
    let started = shared.metrics.responses(401, "invalid_api_key");
    assert!(started > 0, "the server took the exports");
    assert!(
        started <= u64::from(MAX_STREAMS),
        "{started} exports ran on one connection"
    );
}

/// More exports at once than a connection runs are all answered and stored: those past the
/// limit wait in h2 until one ends.
#[test]
fn more_concurrent_exports_than_a_connection_runs_are_all_answered() {
    let shared = Arc::new(Shared::for_bench());
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let n = MAX_STREAMS as usize + 50;
    let statuses = harness::client_runtime().block_on(async {
        let client = harness::connect(addr).await;
        // One call first, so the client has the server's SETTINGS (its 100 streams) before
        // the burst: streams opened past it before then are refused (`REFUSED_STREAM`, which
        // a client retries), not queued.
        let first = harness::export_request(addr, &[("x-api-key", &key)]);
        let a = harness::call(&mut client.clone(), first, harness::message(2)).await;
        assert_eq!(a.expect("an answer").status, Some(0));
        let calls: Vec<_> = (0..n)
            .map(|_| {
                let mut client = client.clone();
                let request = harness::export_request(addr, &[("x-api-key", &key)]);
                tokio::spawn(async move {
                    let a = harness::call(&mut client, request, harness::message(2)).await;
                    // An empty `ExportTraceServiceResponse`, after its prefix.
                    a.map(|a| {
                        (
                            a.status,
                            a.data == [0; 5],
                            a.meta.contains_key("grpc-message"),
                        )
                    })
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for c in calls {
            statuses.push(c.await.unwrap().expect("an answer"));
        }
        statuses
    });
    assert!(
        statuses.iter().all(|s| *s == (Some(0), true, false)),
        "{statuses:?}"
    );
    server.thread.join().expect("the server ends");
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 2 * (n + 1));
}

/// gRPC calls are `POST`: an export sent with another method is an unknown method
/// (`UNIMPLEMENTED`), not served. (It was, whatever the method.)
#[test]
fn an_export_not_sent_as_post_is_unimplemented() {
    let shared = Arc::new(Shared::for_bench());
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let answers = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let mut answers = Vec::new();
        for method in ["PUT", "POST"] {
            let mut request = harness::export_request(addr, &[("x-api-key", &key)]);
            *request.method_mut() = method.parse().unwrap();
            let a = harness::call(&mut client, request, harness::message(1)).await;
            let a = a.expect("an answer");
            let message = a
                .meta
                .get("grpc-message")
                .map(|m| m.to_str().unwrap().to_string());
            answers.push((a.status, message));
        }
        answers
    });
    server.thread.join().expect("the server ends");
    assert_eq!(answers[0].0, Some(code::UNIMPLEMENTED), "{answers:?}");
    let message = answers[0].1.as_deref().unwrap_or_default();
    assert!(message.contains("unknown method PUT"), "{message}");
    assert_eq!(answers[1], (Some(0), None));
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 1, "only the POST's span");
}

/// An export of more spans than the write buffer holds rows (`INGEST_BUFFER_MAX_ROWS`) can
/// never be handed over: it is `INVALID_ARGUMENT` (OTLP/HTTP's `413 batch_too_large`), which
/// exporters do not retry, with both counts and the setting in its message. It was
/// `UNAVAILABLE` with a `RetryInfo` (`503 buffer_full`), retried for ever.
#[test]
fn an_export_of_more_spans_than_the_buffer_holds_is_invalid_not_retried() {
    let mut shared = Shared::for_bench();
    shared.config.buffer_max_rows = 5;
    shared.budget = Arc::new(crate::sink::budget::MemoryBudget::new(
        5,
        shared.config.buffer_max_bytes,
    ));
    let shared = Arc::new(shared);
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let answers = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let mut answers = Vec::new();
        for spans in [6, 5] {
            let request = harness::export_request(addr, &[("x-api-key", &key)]);
            let a = harness::call(&mut client, request, harness::message(spans)).await;
            let a = a.expect("an answer");
            let message = a
                .meta
                .get("grpc-message")
                .map(|m| m.to_str().unwrap().to_string());
            let retry = a.meta.contains_key("google.rpc.retryinfo-bin");
            answers.push((a.status, message, retry));
        }
        answers
    });
    server.thread.join().expect("the server ends");
    let (status, message, retry) = &answers[0];
    assert_eq!(*status, Some(code::INVALID_ARGUMENT), "{answers:?}");
    assert!(!retry, "no RetryInfo: {answers:?}");
    let message = message.as_deref().unwrap_or_default();
    assert!(
        message.contains("6 spans")
            && message.contains("5 rows")
            && message.contains("INGEST_BUFFER_MAX_ROWS"),
        "{message}"
    );
    assert_eq!(answers[1].0, Some(0), "{answers:?}");
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 5, "only the export within the limit");
}

#[cfg(test)]
#[path = "grpc_wire_tests.rs"]
mod wire;

/// Found in the drain audit: an export runs in a task of its own, which no connection counts
/// once its client has gone, so a worker draining then ended its runtime with the export
/// still waiting (here for its fsync) and left it there, holding the worker and its sender to
/// the write-ahead thread (in `buffer` mode, to the flush thread): that thread never learned
/// intake was over, and the process hung in its stop until the watchdog's exit 2 (in `buffer`
/// mode losing the accepted rows still in memory). The worker's sender goes with its thread.
#[test]
fn an_export_whose_client_left_does_not_keep_the_workers_sender_past_the_drain() {
    let shared = Arc::new(Shared::for_bench());
    let key = harness::known_key(&shared);
    let (tx, wal) = crossbeam_channel::unbounded();
    let handoff = crate::sink::Handoff::wal(shared.budget.clone(), tx);
    let (listeners, addr) =
        crate::server::runtime::bind("127.0.0.1:0".parse().unwrap(), 1).expect("a listener");
    let mut workers =
        crate::server::runtime::spawn_workers(listeners, shared.clone(), handoff).unwrap();
    let rt = harness::client_runtime();
    let held = rt.block_on(async {
        let client = harness::connect(addr).await;
        let mut ready = client.ready().await.unwrap();
        let request = harness::export_request(addr, &[("x-api-key", &key)]);
        let (_answer, mut sending) = ready.send_request(request, false).unwrap();
        sending
            .send_data(bytes::Bytes::from(harness::message(1)), true)
            .unwrap();
        // The export is with the (held) write-ahead log, waiting for its fsync.
        let wal = wal.clone();
        tokio::task::spawn_blocking(move || wal.recv_timeout(Duration::from_secs(10)))
            .await
            .unwrap()
            .expect("the export's batch")
    });
    // The client goes: its connection ends, the export's task runs on.
    drop(rt);
    shared
        .draining
        .store(true, std::sync::atomic::Ordering::Release);
    workers.drain();
    workers.join();
    assert!(
        matches!(
            wal.try_recv(),
            Err(crossbeam_channel::TryRecvError::Disconnected)
        ),
        "the worker's thread ended and its sender with it"
    );
    drop(held);
}

#[cfg(test)]
#[path = "grpc_auth_tests.rs"]
mod auth;

/// An export the client resets before its message is whole can get no answer, and is counted
/// as none, as an HTTP/1.1 client gone mid-body is not: it was counted a `400`, as if the
/// server had refused a bad message, and `/metrics` showed refusals nobody received. A whole
/// export after it on the same connection is answered and counted.
#[test]
fn an_export_reset_mid_message_is_not_counted_as_refused() {
    let shared = Arc::new(Shared::for_bench());
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let rt = harness::client_runtime();
    let whole = rt.block_on(async {
        let mut client = harness::connect(addr).await;
        let message = harness::message(3);
        let request = || harness::export_request(addr, &[("x-api-key", &key)]);
        let (_answer, mut sending) = client
            .clone()
            .ready()
            .await
            .unwrap()
            .send_request(request(), false)
            .unwrap();
        sending
            .send_data(bytes::Bytes::from(message[..10].to_vec()), false)
            .unwrap();
        // Until the server holds the message's length: it is reading it.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while shared.metrics.grpc_message_bytes.load(Ordering::Relaxed) == 0 {
            assert!(std::time::Instant::now() < deadline, "the server reads");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sending.send_reset(h2::Reason::CANCEL);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while shared.metrics.grpc_message_bytes.load(Ordering::Relaxed) != 0 {
            assert!(std::time::Instant::now() < deadline, "the export ends");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        harness::call(&mut client, request(), message)
            .await
            .unwrap()
    });
    assert_eq!(whole.status, Some(0), "{whole:?}");
    drop(rt);
    server.thread.join().expect("the server ends");
    let bad = invalid("");
    assert_eq!(shared.metrics.responses(bad.status, bad.code), 0);
    assert_eq!(shared.metrics.responses(200, "exported"), 1);
}
