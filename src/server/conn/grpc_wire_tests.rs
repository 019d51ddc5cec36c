//! `grpc.rs` against gRPC over HTTP/2 (grpc/grpc's `doc/PROTOCOL-HTTP2.md` and
//! `doc/statuscodes.md`) and against hostile clients: what each malformed call is answered,
//! and the bounds a client cannot get past (streams, header blocks, floods, resets).

use std::sync::Arc;
use std::time::Duration;

use std::io::ErrorKind;
use std::sync::atomic::Ordering;

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
    // An HTTP/2 client that is not gRPC's: a GET with no content type.
    let mut browser = with(&[]);
    *browser.method_mut() = http::Method::GET;
    browser.headers_mut().remove("content-type");
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
        ("GET, no content type", browser, vec![], 415, UNIMPLEMENTED, "unknown method GET"),
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

/// What gRPC leaves to the server, accepted: a message of length 0 (an empty
/// `ExportTraceServiceRequest`: nothing to store, `OK`), calls without `te: trailers` (which
/// only detects proxies that drop trailers) or with it, and `grpc-timeout` in any form,
/// which is not read: the server's own deadlines bound every call.
#[test]
fn empty_messages_te_and_grpc_timeout_do_not_break_an_export() {
    let shared = shared();
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let answers = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let mut answers = Vec::new();
        let empty = harness::export_request(addr, &[("x-api-key", &key)]);
        let a = harness::call(&mut client, empty, harness::framed(&[])).await;
        answers.push(("empty", a.expect("an answer")));
        for (what, header) in [
            ("te", ("te", "trailers")),
            ("1 ns", ("grpc-timeout", "1n")),
            ("9 digits", ("grpc-timeout", "123456789S")),
            ("no unit", ("grpc-timeout", "10")),
            ("garbage", ("grpc-timeout", "soon")),
            ("an hour", ("grpc-timeout", "1H")),
        ] {
            let request = harness::export_request(addr, &[("x-api-key", &key), header]);
            let a = harness::call(&mut client, request, harness::message(1)).await;
            answers.push((what, a.expect("an answer")));
        }
        answers
    });
    server.thread.join().expect("the server ends");
    for (what, a) in &answers {
        assert_eq!((a.status, a.http), (Some(0), 200), "{what}: {a:?}");
        assert_eq!(
            a.data, [0; 5],
            "{what}: an empty ExportTraceServiceResponse"
        );
    }
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 6);
}

/// A refusal answered before the client ended its stream is followed by `RST_STREAM`
/// (`NO_ERROR`), as PROTOCOL-HTTP2.md's early server closure asks, and the data the client
/// sent for it, unread, does not keep the connection's flow-control window: an export sent
/// next on the same connection, larger than what is left of the window, is stored.
#[test]
fn an_early_refusal_resets_its_stream_and_gives_its_window_back() {
    let mut shared = Shared::for_bench();
    shared.config.otlp_max_body_bytes = 4 << 20;
    let shared = Arc::new(shared);
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let (refused, reason, stored) = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        // Settings first, so the client knows the 1 MiB windows.
        let first = harness::export_request(addr, &[("x-api-key", &key)]);
        let a = harness::call(&mut client, first, harness::message(1)).await;
        assert_eq!(a.expect("an answer").status, Some(0));
        let mut wrong = harness::export_request(addr, &[("x-api-key", &key)]);
        *wrong.uri_mut() = format!("http://{addr}/nothing/Here").parse().unwrap();
        let mut ready = client.clone().ready().await.expect("ready");
        let (answer, mut sending) = ready.send_request(wrong, false).expect("a stream");
        // 900 KiB the server never reads, and the stream left open.
        sending
            .send_data(bytes::Bytes::from(vec![0u8; 900 * 1024]), false)
            .expect("data");
        let refused = harness::read_answer(answer).await.expect("an answer");
        let reason = poll_fn(|cx| sending.poll_reset(cx)).await.expect("a reset");
        // Spans enough for a message of more than the 124 KiB left of the window.
        let big = harness::message(4000);
        assert!(big.len() > 200 * 1024, "{}", big.len());
        let request = harness::export_request(addr, &[("x-api-key", &key)]);
        let stored = harness::call(&mut client, request, big).await;
        (refused, reason, stored.expect("an answer"))
    });
    server.thread.join().expect("the server ends");
    assert_eq!(refused.status, Some(code::UNIMPLEMENTED), "{refused:?}");
    assert_eq!(reason, h2::Reason::NO_ERROR);
    assert_eq!(stored.status, Some(0), "{stored:?}");
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 4001);
}

/// A client that resets its export in the middle of the message: the room its prefix took
/// (`Running::hold`) is given back, the export is not stored, and the connection goes on.
#[test]
fn an_export_reset_mid_message_gives_its_room_back() {
    let shared = shared();
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let addr = server.addr;
    let message = harness::message(40);
    assert!(message.len() > 1000 && message.len() < 10_000);
    let metrics = shared.clone();
    let after = harness::client_runtime().block_on(async {
        let mut client = harness::connect(addr).await;
        let request = harness::export_request(addr, &[("x-api-key", &key)]);
        let mut ready = client.clone().ready().await.expect("ready");
        let (answer, mut sending) = ready.send_request(request, false).expect("a stream");
        sending
            .send_data(bytes::Bytes::from(message[..1000].to_vec()), false)
            .expect("data");
        let held = |n| metrics.metrics.grpc_message_bytes.load(Ordering::Relaxed) == n;
        let mut waited = 0;
        while !held(message.len() as u64 - 5) {
            assert!(waited < 1000, "the prefix was never counted");
            waited += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        sending.send_reset(h2::Reason::CANCEL);
        assert!(answer.await.is_err(), "no answer to a reset stream");
        let mut waited = 0;
        while !held(0) {
            assert!(waited < 1000, "the room was never given back");
            waited += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let request = harness::export_request(addr, &[("x-api-key", &key)]);
        harness::call(&mut client, request, harness::message(2)).await
    });
    server.thread.join().expect("the server ends");
    assert_eq!(after.expect("an answer").status, Some(0));
    let rows: usize = server.rows.try_iter().map(|b| b.len()).sum();
    assert_eq!(rows, 2, "only the export after the reset");
}

/// Raw HTTP/2 frames, for clients no h2 library would be.
mod raw {
    use std::io::{Read as _, Write as _};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const CONTINUATION: u8 = 0x9;
    pub const END_STREAM: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;

    /// A frame: 24-bit length, type, flags, stream id, payload.
    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend_from_slice(&[kind, flags]);
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// HPACK's literal without indexing, new name, no Huffman (name under 127 bytes).
    pub fn literal(name: &str, value: &[u8]) -> Vec<u8> {
        let mut out = vec![0x00, name.len() as u8];
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&length(value.len()));
        out.extend_from_slice(value);
        out
    }

    /// HPACK's string length (7-bit prefix, no Huffman).
    pub fn length(mut n: usize) -> Vec<u8> {
        if n < 127 {
            return vec![n as u8];
        }
        let mut out = vec![127];
        n -= 127;
        while n >= 128 {
            out.push((n % 128) as u8 | 0x80);
            n /= 128;
        }
        out.push(n as u8);
        out
    }

    /// An export's request head, its key in `x-api-key`.
    pub fn export_head(key: &str) -> Vec<u8> {
        [
            literal(":method", b"POST"),
            literal(":scheme", b"http"),
            literal(":path", super::EXPORT_PATH.as_bytes()),
            literal(":authority", b"test"),
            literal("content-type", b"application/grpc"),
            literal("x-api-key", key.as_bytes()),
        ]
        .concat()
    }

    /// Connects and sends the preface, empty SETTINGS and the ack of the server's.
    pub fn connect(addr: SocketAddr) -> TcpStream {
        let mut tcp = TcpStream::connect(addr).unwrap();
        tcp.write_all(super::PREFACE).unwrap();
        tcp.write_all(&frame(SETTINGS, 0, 0, &[])).unwrap();
        tcp.write_all(&frame(SETTINGS, 0x1, 0, &[])).unwrap();
        tcp
    }

    /// Reads the server's frames until it closes the connection (a reset counts as closed;
    /// at most `within`): each frame's type, stream and payload.
    pub fn until_closed(tcp: &mut TcpStream, within: Duration) -> Vec<(u8, u32, Vec<u8>)> {
        tcp.set_read_timeout(Some(within)).unwrap();
        let mut all = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match tcp.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("the server did not close the connection: {e}"),
            }
        }
        let mut frames = Vec::new();
        let mut at = 0;
        while at + 9 <= all.len() {
            let len = u32::from_be_bytes([0, all[at], all[at + 1], all[at + 2]]) as usize;
            let stream = u32::from_be_bytes(all[at + 5..at + 9].try_into().unwrap());
            let end = (at + 9 + len).min(all.len());
            frames.push((all[at + 3], stream, all[at + 9..end].to_vec()));
            at += 9 + len;
        }
        frames
    }

    /// The error code of the server's `GOAWAY`, if it sent one.
    pub fn goaway(frames: &[(u8, u32, Vec<u8>)]) -> Option<u32> {
        frames
            .iter()
            .find(|(kind, _, p)| *kind == GOAWAY && p.len() >= 8)
            .map(|(_, _, p)| u32::from_be_bytes(p[4..8].try_into().unwrap()))
    }
}

const ENHANCE_YOUR_CALM: u32 = 0xb;
const COMPRESSION_ERROR: u32 = 0x9;

/// A header block that never ends (CONTINUATION frames without END_HEADERS, each a little
/// more of a 1 MiB value): the server goes away after a few of them, holding at most its
/// 8 KiB header cap meanwhile, and no export starts.
#[test]
fn a_continuation_flood_is_cut_off() {
    use std::io::Write as _;
    let shared = shared();
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let mut tcp = raw::connect(server.addr);
    let mut block = raw::export_head(&key);
    block.extend_from_slice(&[0x00, 5]);
    block.extend_from_slice(b"x-pad");
    block.extend_from_slice(&raw::length(1 << 20));
    block.extend_from_slice(&[b'a'; 1000]);
    tcp.write_all(&raw::frame(raw::HEADERS, 0, 1, &block))
        .unwrap();
    let piece = raw::frame(raw::CONTINUATION, 0, 1, &[b'a'; 1000]);
    let mut sent = 0;
    while sent < 1000 && tcp.write_all(&piece).is_ok() {
        sent += 1;
    }
    let frames = raw::until_closed(&mut tcp, Duration::from_secs(30));
    server.thread.join().expect("the server ends");
    let code = raw::goaway(&frames);
    assert!(
        matches!(code, Some(ENHANCE_YOUR_CALM | COMPRESSION_ERROR)),
        "{code:?} after {sent} frames"
    );
    assert_eq!(shared.metrics.responses(200, "exported"), 0);
}

/// An HPACK bomb: one 4000-byte header put in the dynamic table, then named again with one
/// byte each, a header list of megabytes from one frame. The server goes away
/// (`ENHANCE_YOUR_CALM`) without building it; no export starts.
#[test]
fn an_hpack_bomb_is_refused_without_being_decoded_whole() {
    use std::io::Write as _;
    let shared = shared();
    let key = harness::known_key(&shared);
    let server = harness::start(shared.clone(), 1);
    let mut tcp = raw::connect(server.addr);
    let mut block = raw::export_head(&key);
    // Literal with incremental indexing, new name: dynamic table entry 62.
    block.extend_from_slice(&[0x40, 5]);
    block.extend_from_slice(b"x-pad");
    block.extend_from_slice(&raw::length(4000));
    block.extend_from_slice(&[b'a'; 4000]);
    // Indexed header field 62, 12,000 times: 48 MB decoded.
    block.extend_from_slice(&[0x80 | 62; 12_000]);
    let flags = raw::END_HEADERS | raw::END_STREAM;
    tcp.write_all(&raw::frame(raw::HEADERS, flags, 1, &block))
        .unwrap();
    let frames = raw::until_closed(&mut tcp, Duration::from_secs(30));
    server.thread.join().expect("the server ends");
    assert_eq!(raw::goaway(&frames), Some(ENHANCE_YOUR_CALM), "{frames:?}");
    assert_eq!(shared.metrics.responses(400, "bad_request"), 0);
    assert_eq!(shared.metrics.responses(200, "exported"), 0);
}

/// A client that floods PINGs and SETTINGS (each of which the server must answer) and never
/// reads: the server stops reading once its answers are not taken (it holds one pending
/// pong and one pending settings ack, not one per frame), so the client's writes block, and
/// the connection, with no export running, is dropped after the idle timeout and `CLOSE_WAIT`.
#[test]
fn ping_and_settings_floods_from_a_client_that_never_reads_are_dropped() {
    use std::io::Write as _;
    let shared = shared();
    let server = harness::start(shared.clone(), 1);
    let mut tcp = raw::connect(server.addr);
    let mut chunk = Vec::new();
    for i in 0..1000u64 {
        chunk.extend_from_slice(&raw::frame(raw::PING, 0, 0, &i.to_be_bytes()));
        chunk.extend_from_slice(&raw::frame(raw::SETTINGS, 0, 0, &[]));
    }
    tcp.set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let started = std::time::Instant::now();
    let (mut at, mut blocked, mut sent) = (0, 0u32, 0u64);
    let error = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still connected after 60 s ({sent} bytes sent, blocked {blocked} times)"
        );
        // Whole frames only: a write cut short goes on where it stopped.
        match tcp.write(&chunk[at..]) {
            Ok(n) => {
                sent += n as u64;
                at = (at + n) % chunk.len();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                blocked += 1
            }
            Err(e) => break e,
        }
    };
    server.thread.join().expect("the server ends");
    assert!(
        matches!(
            error.kind(),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
        ),
        "{error}"
    );
    assert!(blocked > 0, "the server read all {sent} bytes");
}

/// CVE-2023-44487 (rapid reset): a client opens streams and resets each at once, 10,000 of
/// them, which costs it two frames a stream. The exports the server starts are bounded by
/// `MAX_STREAMS` (here each waits 500 ms for a key-set load that may know its key), and the
/// streams reset while they wait to be taken make h2 go away (`ENHANCE_YOUR_CALM`).
#[test]
fn rapid_reset_streams_start_no_more_exports_than_a_connection_runs() {
    use std::io::Write as _;
    let shared = shared();
    let unknown = crate::auth::generate_key(&shared.config.key_prefix).unwrap();
    let server = harness::start(shared.clone(), 1);
    let mut tcp = raw::connect(server.addr);
    let head = raw::export_head(&unknown);
    let mut flood = Vec::new();
    for i in 0..10_000u32 {
        let id = 2 * i + 1;
        flood.extend_from_slice(&raw::frame(raw::HEADERS, raw::END_HEADERS, id, &head));
        flood.extend_from_slice(&raw::frame(raw::RST_STREAM, 0, id, &8u32.to_be_bytes()));
    }
    let mut writer = tcp.try_clone().unwrap();
    let writing = std::thread::spawn(move || {
        // The server may close the connection before all of it is sent.
        let _ = writer.write_all(&flood);
    });
    let frames = raw::until_closed(&mut tcp, Duration::from_secs(30));
    writing.join().unwrap();
    server.thread.join().expect("the server ends");
    assert_eq!(raw::goaway(&frames), Some(ENHANCE_YOUR_CALM));
    let started = shared.metrics.responses(401, "invalid_api_key");
    assert!(
        started <= u64::from(MAX_STREAMS),
        "{started} exports ran on one connection"
    );
}
