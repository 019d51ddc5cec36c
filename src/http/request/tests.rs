//! Unit tests of request framing: heads, lengths, chunked bodies, and their limits.

use super::*;
use crate::http::fuzz_split_equivalence;

fn head(raw: &str) -> Result<Parsed<Head>, HttpError> {
    parse_head(raw.as_bytes(), &Limits::default())
}

fn complete(raw: &str) -> Head {
    match head(raw) {
        Ok(Parsed::Complete(h)) => h,
        other => panic!("expected a complete head for {raw:?}, got {other:?}"),
    }
}

#[test]
fn content_type_and_encoding() {
    use CompressError::Unsupported;
    type Case = (
        &'static str,
        Route,
        MediaType,
        Result<Encoding, CompressError>,
    );
    let cases: &[Case] = &[
        (
            "POST /ingest HTTP/1.1\r\n\r\n",
            Route::Ingest,
            MediaType::Absent,
            Ok(Encoding::Identity),
        ),
        (
            "POST /v1/traces HTTP/1.1\r\nContent-Type: application/x-protobuf\r\n\
             Content-Encoding: gzip\r\n\r\n",
            Route::OtlpTraces,
            MediaType::Protobuf,
            Ok(Encoding::Gzip),
        ),
        (
            "POST /v1/traces?x HTTP/1.1\r\ncontent-type: Application/JSON; charset=utf-8\r\n\
             content-encoding: ZSTD\r\n\r\n",
            Route::OtlpTraces,
            MediaType::Json,
            Ok(Encoding::Zstd),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Type: text/plain\r\n\
             Content-Encoding: deflate\r\n\r\n",
            Route::Ingest,
            MediaType::Other,
            Ok(Encoding::Deflate),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Type: application/protobuf\r\n\
             Content-Encoding: identity\r\n\r\n",
            Route::Ingest,
            MediaType::Protobuf,
            Ok(Encoding::Identity),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Encoding: br\r\n\r\n",
            Route::Ingest,
            MediaType::Absent,
            Err(Unsupported),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Encoding: gzip, gzip\r\n\r\n",
            Route::Ingest,
            MediaType::Absent,
            Err(Unsupported),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Encoding: gzip\r\n\r\n",
            Route::Ingest,
            MediaType::Absent,
            Err(Unsupported),
        ),
    ];
    for &(raw, route, media, coding) in cases {
        let h = complete(raw);
        assert_eq!(
            (h.route, h.content_type, h.content_encoding),
            (route, media, coding),
            "{raw:?}"
        );
    }
}

#[test]
fn heads() {
    let h = complete(
        "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nx-api-key:  k1 \r\n\r\n",
    );
    assert_eq!(h.route, Route::Ingest);
    assert_eq!(h.method, Method::Post);
    assert_eq!(h.framing, Framing::Length(12));
    assert!(h.keep_alive);
    let raw = "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nx-api-key:  k1 \r\n\r\n";
    assert_eq!(&raw[h.x_api_key.unwrap()], "k1");
    // A key header repeated with the same value is that value.
    let raw = "POST /ingest HTTP/1.1\r\nx-api-key: k1\r\nX-API-KEY:  k1\r\nAuthorization: Bearer k1\r\nauthorization: Bearer k1 \r\n\r\n";
    let h = complete(raw);
    assert_eq!(&raw[h.x_api_key.unwrap()], "k1");
    assert_eq!(&raw[h.authorization.unwrap()], "Bearer k1");

    let h = complete("GET /health?x=1 HTTP/1.0\r\n\r\n");
    assert_eq!(h.route, Route::Health);
    assert!(!h.keep_alive);
    // HTTP/1.0 is answered and closed even when it asks for keep-alive, and its
    // 100-continue expectation is ignored.
    let h =
        complete("GET /health HTTP/1.0\r\nConnection: keep-alive\r\nExpect: 100-continue\r\n\r\n");
    assert!(!h.keep_alive);
    assert!(!h.expect_continue);
    let h = complete("GET /x HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert!(!h.keep_alive);
    assert_eq!(h.route, Route::NotFound);
    let h = complete("POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.framing, Framing::Chunked);
    let h = complete("POST /ingest HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(5));
    // RFC 9110 §8.6: a list of identical values is that value.
    let h = complete("POST /ingest HTTP/1.1\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(h.framing, Framing::Length(5));
    let h = complete("POST /ingest HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n");
    assert_eq!(h.framing, Framing::Chunked);
    let h = complete("POST /ingest HTTP/1.1\r\nExpect: 100-Continue\r\n\r\n");
    assert!(h.expect_continue);
    // Empty lines before the request line are ignored (RFC 9112 §2.2).
    assert_eq!(
        complete("\r\nGET /health HTTP/1.1\r\n\r\n").route,
        Route::Health
    );
    // The absolute form names the same paths (RFC 9112 §3.2.2: a server must accept it).
    for (target, route) in [
        ("http://x/health", Route::Health),
        ("https://ingest.example.com:8443/ingest?a=1", Route::Ingest),
        ("HTTP://x/health", Route::Health),
        ("http://x", Route::NotFound),
        ("http://x/v1/traces", Route::OtlpTraces),
        // The authority ends at `?` or `#` too: the path of these is empty, not `/ingest`.
        ("http://x?/ingest", Route::NotFound),
        ("http://x#/ingest", Route::NotFound),
        ("http://x?a=/ingest", Route::NotFound),
        ("http://x/health?next=/ingest", Route::Health),
    ] {
        let h = complete(&format!("POST {target} HTTP/1.1\r\n\r\n"));
        assert_eq!(h.route, route, "{target}");
    }
}

#[test]
fn partial_heads() {
    assert_eq!(head("POST /ingest HTTP/1.1\r\nHost"), Ok(Parsed::Partial));
    assert_eq!(head(""), Ok(Parsed::Partial));
}

const TE_NOT_CHUNKED: &str =
    "Transfer-Encoding does not end in chunked, so the body's length is unknown";
const TE_MALFORMED: &str = "an empty or malformed element in Transfer-Encoding";

#[test]
fn bad_heads() {
    let cases: &[(&str, HttpError)] = &[
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::BadRequest("both Content-Length and Transfer-Encoding sent"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            HttpError::BadRequest("conflicting Content-Length headers"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            HttpError::BadRequest("invalid Content-Length"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
            HttpError::BadRequest("invalid Content-Length"),
        ),
        // RFC 9112 §6.1, §6.3: `chunked` last and once, else the length is unknown (400);
        // another coding before it is one not implemented (501).
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            HttpError::UnsupportedTransferEncoding,
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::UnsupportedTransferEncoding,
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::BadRequest("chunked listed more than once in Transfer-Encoding"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            HttpError::BadRequest(TE_NOT_CHUNKED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n",
            HttpError::BadRequest(TE_NOT_CHUNKED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            HttpError::BadRequest(TE_NOT_CHUNKED),
        ),
        // An empty element, or one that is not a coding's name (a token), is a malformed
        // list (400), wherever it stands: not a coding this server does not implement (501).
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked,\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: , chunked\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding:\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: g zip, chunked\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: \"gzip\", chunked\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: ;q=1, chunked\r\n\r\n",
            HttpError::BadRequest(TE_MALFORMED),
        ),
        // A coding with parameters is still a coding.
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: gzip ; q=1 ,\tChunked\r\n\r\n",
            HttpError::UnsupportedTransferEncoding,
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n",
            HttpError::BadRequest(TE_NOT_CHUNKED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked;q=1\r\n\r\n",
            HttpError::BadRequest(TE_NOT_CHUNKED),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n\r\n",
            HttpError::BadRequest("both Content-Length and Transfer-Encoding sent"),
        ),
        (
            "POST /ingest HTTP/1.0\r\nTransfer-Encoding: gzip\r\n\r\n",
            HttpError::BadRequest("Transfer-Encoding in HTTP/1.0"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nx-api-key: ti_a\r\nX-Api-Key: ti_b\r\n\r\n",
            HttpError::BadRequest("two x-api-key headers with different values"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n",
            HttpError::BadRequest("two Authorization headers with different values"),
        ),
        ("GARBAGE\r\n\r\n", HttpError::BadRequest("invalid token in request line")),
        ("GET / HTTP/2.0\r\n\r\n", HttpError::UnsupportedVersion),
        ("NOT HTTP AT ALL\r\n\r\n", HttpError::BadRequest("invalid request line")),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n",
            HttpError::BadRequest("conflicting Content-Length headers"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 5,\r\n\r\n",
            HttpError::BadRequest("invalid Content-Length"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 0x5\r\n\r\n",
            HttpError::BadRequest("invalid Content-Length"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            HttpError::BadRequest("invalid Content-Length"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n",
            HttpError::BadRequest("invalid Content-Length"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            HttpError::BadRequest("chunked listed more than once in Transfer-Encoding"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n",
            HttpError::BadRequest(TE_NOT_CHUNKED),
        ),
        (
            "POST /ingest HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::BadRequest("Transfer-Encoding in HTTP/1.0"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nExpect: 200-ok\r\n\r\n",
            HttpError::ExpectationFailed,
        ),
        // Line breaks: a bare LF anywhere in the head, a bare CR, obs-fold.
        (
            "GET / HTTP/1.1\nHost: x\r\n\r\n",
            HttpError::BadRequest("bare LF in request head"),
        ),
        (
            "GET / HTTP/1.1\r\nHost: x\n\r\n",
            HttpError::BadRequest("bare LF in request head"),
        ),
        (
            "GET / HTTP/1.1\r\nHost: x\r\n\n",
            HttpError::BadRequest("bare LF in request head"),
        ),
        (
            "GET / HTTP/1.1\r\nHost: x\rContent-Length: 5\r\n\r\n",
            HttpError::BadRequest("invalid header value"),
        ),
        (
            "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
            HttpError::BadRequest("invalid header name"),
        ),
        // Whitespace between a field name and the colon (RFC 9112 §5.1).
        (
            "POST /ingest HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
            HttpError::BadRequest("invalid header name"),
        ),
        (
            "POST /ingest HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n",
            HttpError::BadRequest("invalid header name"),
        ),
        // Control bytes in names, values and the request line.
        (
            "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n",
            HttpError::BadRequest("invalid header value"),
        ),
        (
            "GET / HTTP/1.1\r\nX: a\x7fb\r\n\r\n",
            HttpError::BadRequest("invalid header value"),
        ),
        (
            "GET / HTTP/1.1\r\nX\x01: a\r\n\r\n",
            HttpError::BadRequest("invalid header name"),
        ),
        (
            "GET /\x01 HTTP/1.1\r\n\r\n",
            HttpError::BadRequest("invalid token in request line"),
        ),
        (
            "GET  / HTTP/1.1\r\n\r\n",
            HttpError::BadRequest("invalid token in request line"),
        ),
        (
            "GET / HTTP/1.1 \r\n\r\n",
            HttpError::BadRequest("invalid line ending"),
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(head(raw), Err(*want), "for {raw:?}");
    }
}

#[test]
fn head_limits() {
    let big = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    assert_eq!(head(&big), Err(HttpError::HeadTooLarge));
    let partial_big = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(20_000));
    assert_eq!(head(&partial_big), Err(HttpError::HeadTooLarge));
    // A request target that does not end within the cap is 414, whole or partial; one that
    // ends, with the head going on past the cap, is 431.
    let long_target = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(20_000));
    assert_eq!(head(&long_target), Err(HttpError::UriTooLong));
    assert_eq!(head(&long_target[..16_500]), Err(HttpError::UriTooLong));
    assert_eq!(
        head(&format!("\r\n{}", &long_target[..16_500])),
        Err(HttpError::UriTooLong)
    );
    let long_version = format!("GET /x HTTP/2{}\r\n\r\n", "0".repeat(20_000));
    assert_eq!(head(&long_version), Err(HttpError::HeadTooLarge));
    let target_then_header = format!(
        "GET /{} HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(10_000),
        "b".repeat(10_000)
    );
    assert_eq!(head(&target_then_header), Err(HttpError::HeadTooLarge));
    fuzz_split_equivalence(long_target.as_bytes());
    // 414 names a target too long: where no target began within the cap (a method that does
    // not end, or nothing but empty lines), the head is too large (431), not the URI.
    let long_method = format!("{} / HTTP/1.1\r\n\r\n", "A".repeat(20_000));
    assert_eq!(head(&long_method), Err(HttpError::HeadTooLarge));
    assert_eq!(head(&"\r\n".repeat(10_000)), Err(HttpError::HeadTooLarge));
    let many: String = (0..100).map(|i| format!("X{i}: y\r\n")).collect();
    let raw = format!("GET / HTTP/1.1\r\n{many}\r\n");
    assert_eq!(head(&raw), Err(HttpError::HeadTooLarge));
}

/// Found by the `http_request` fuzz target: byte by byte, httparse refused
/// `POST /ingest HTTP/2` (a bad request) before `.1\r\n` arrived and made it
/// `HTTP/2.1` (an unsupported version), so the answer depended on how the bytes were split.
#[test]
fn regression_version_error_waits_for_the_line_end() {
    let raw = "POST /ingest HTTP/2.1\r\nHost: t\r\n\r\n";
    for end in 0..raw.len() {
        let want = if end <= raw.find('\r').unwrap() {
            Ok(Parsed::Partial)
        } else {
            Err(HttpError::UnsupportedVersion)
        };
        assert_eq!(head(&raw[..end]), want, "{:?}", &raw[..end]);
    }
    assert_eq!(
        head("GET / HTTP/2.1x\r\n"),
        Err(HttpError::BadRequest("invalid request line"))
    );
    let endless = format!("GET / HTTP/2{}", "0".repeat(20_000));
    assert_eq!(head(&endless), Err(HttpError::HeadTooLarge));
    // The fuzzer's input (two control bytes, then the request).
    fuzz_split_equivalence(
        b"\xc7\x80POST /ingest HTTP/2.1\r\nHost: t\r\nAuthorization: Bearer ti_x\x10\x10\
          GET /health HTTP/\r\nCon1te.n",
    );
}

/// Found by the http_request fuzz target: a byte httparse refuses that lies past the head
/// cap gave `400` when the whole input was parsed at once but `431` when a read ended
/// before it, because the parser looked beyond the cap. Only the first `max_head_bytes`
/// are parsed now, so an unterminated head over the cap is `431` however it arrives.
#[test]
fn regression_a_bad_byte_past_the_head_cap_does_not_decide_the_answer() {
    let limits = Limits {
        max_head_bytes: 2048,
        max_headers: 16,
        max_body_bytes: 4096,
    };
    let mut raw = b"POST /ingest HTTP/1.1\r\nHost: ".to_vec();
    raw.extend(std::iter::repeat_n(b'a', 2100));
    raw.push(0xff);
    raw.extend_from_slice(b"\r\n\r\n");
    assert_eq!(parse_head(&raw, &limits), Err(HttpError::HeadTooLarge));
    assert_eq!(
        parse_head(&raw[..2100], &limits),
        Err(HttpError::HeadTooLarge)
    );
    let mut input = vec![64, 128];
    input.extend_from_slice(&raw);
    fuzz_split_equivalence(&input);
    // A bad byte inside the cap is still a bad request.
    assert_eq!(
        head("POST /ingest HTTP/1.1\r\nHost: \x7f\r\n\r\n"),
        Err(HttpError::BadRequest("invalid header value"))
    );
}

/// Decodes `raw` fed in pieces of `step` bytes, as the connection would.
fn dechunk(raw: &[u8], step: usize, max: u64) -> Result<(Vec<u8>, usize), HttpError> {
    let mut dec = ChunkedDecoder::default();
    let mut region = Vec::new();
    let mut fed = 0;
    loop {
        let next = (fed + step).min(raw.len());
        region.extend_from_slice(&raw[fed..next]);
        fed = next;
        match dec.advance(&mut region, max)? {
            Parsed::Complete(b) => return Ok((region[..b.body_len].to_vec(), b.raw_len)),
            Parsed::Partial if fed == raw.len() => return Err(HttpError::BadRequest("incomplete")),
            Parsed::Partial => {}
        }
    }
}

#[test]
fn chunked_bodies_any_split() {
    let raw =
        b"5\r\nhello\r\n1;ext=1;q=\"a b\"\r\n \r\n06\r\nworld!\r\n0\r\nTrailer: x\r\n\r\nNEXT";
    for step in 1..raw.len() {
        let (body, used) = dechunk(raw, step, 1024).unwrap();
        assert_eq!(body, b"hello world!");
        assert_eq!(&raw[used..], b"NEXT");
    }
}

#[test]
fn chunked_errors() {
    let cases: &[(&[u8], HttpError)] = &[
        (b"zz\r\n", HttpError::BadRequest("invalid chunk size")),
        (
            b"5\r\nhelloXX",
            HttpError::BadRequest("chunk data not followed by CRLF"),
        ),
        (
            b"5\nhello\r\n",
            HttpError::BadRequest("bare LF in chunked body"),
        ),
        (b"5;=\r\n", HttpError::BadRequest("invalid chunk extension")),
        (b"5 x\r\n", HttpError::BadRequest("invalid chunk extension")),
        (b"5 \r\n", HttpError::BadRequest("invalid chunk extension")),
        (b" 5\r\n", HttpError::BadRequest("invalid chunk size")),
        (b"-5\r\n", HttpError::BadRequest("invalid chunk size")),
        (b"0x5\r\n", HttpError::BadRequest("invalid chunk extension")),
        (b"\r\n", HttpError::BadRequest("invalid chunk size")),
        (
            b"5;a=\"x\r\n",
            HttpError::BadRequest("invalid chunk extension"),
        ),
        (b"5\r\r\n", HttpError::BadRequest("bare CR in chunked body")),
        (
            b"5\r\nhello\n\r",
            HttpError::BadRequest("chunk data not followed by CRLF"),
        ),
        (
            b"0\r\nX: y\n\r\n",
            HttpError::BadRequest("bare LF in chunked body"),
        ),
        (
            b"0\r\n folded: y\r\n\r\n",
            HttpError::BadRequest("malformed trailer field"),
        ),
        (b"ffffffffffffffffff\r\n", HttpError::BodyTooLarge),
        (b"11\r\n", HttpError::BodyTooLarge),
        (
            b"0\r\nbad trailer\r\n\r\n",
            HttpError::BadRequest("malformed trailer field"),
        ),
    ];
    for (raw, want) in cases {
        assert_eq!(dechunk(raw, raw.len(), 16), Err(*want), "for {raw:?}");
    }
    // The cap counts decoded bytes over all chunks.
    let raw = b"8\r\n12345678\r\n9\r\n123456789\r\n0\r\n\r\n";
    assert_eq!(dechunk(raw, 3, 16), Err(HttpError::BodyTooLarge));
    assert!(dechunk(raw, 3, 17).is_ok());
}

/// The raw bytes of a chunked body stay in the connection's buffer until it is complete, so
/// its framing is bounded too, not only its decoded size: many trailer lines, or long chunk
/// extensions on tiny chunks, are refused within about `FRAMING_ALLOWANCE` of framing.
#[test]
fn chunked_framing_is_bounded_as_well_as_the_body() {
    let framing_error = |raw: &[u8]| {
        let mut dec = ChunkedDecoder::default();
        let mut region = raw.to_vec();
        dec.advance(&mut region, 1 << 30)
    };
    // `lines` trailer lines of 8,000 bytes each after a 2-byte body.
    let with_trailers = |lines: usize| {
        let mut raw = b"2\r\n{}\r\n0\r\n".to_vec();
        for _ in 0..lines {
            raw.extend_from_slice(b"X-T: ");
            raw.extend(std::iter::repeat_n(b'a', 8000));
            raw.extend_from_slice(b"\r\n");
        }
        raw.extend_from_slice(b"\r\n");
        raw
    };
    // The third passes 16 KiB in all; two are fine.
    assert_eq!(
        framing_error(&with_trailers(3)),
        Err(HttpError::BadRequest("trailer section over 16 KiB"))
    );
    assert!(matches!(
        framing_error(&with_trailers(2)),
        Ok(Parsed::Complete(_))
    ));

    // 1-byte chunks with a 4,000-byte extension each: refused once the framing passes the
    // allowance (about 17 chunks), long before the 1 GiB cap on the decoded body.
    let mut one = b"1;e=".to_vec();
    one.extend(std::iter::repeat_n(b'a', 4000));
    one.extend_from_slice(b"\r\nx\r\n");
    let raw: Vec<u8> = one.iter().copied().cycle().take(one.len() * 40).collect();
    let mut dec = ChunkedDecoder::default();
    let mut region = raw.clone();
    let err = dec.advance(&mut region, 1 << 30).unwrap_err();
    assert!(
        matches!(err, HttpError::BadRequest(m) if m.contains("larger than the data")),
        "{err:?}"
    );
    assert!(dec.decoded_len() < 20, "{}", dec.decoded_len());
    // Ordinary framing is far inside it: 100-byte chunks of a 1 MB body.
    let mut raw = Vec::new();
    for _ in 0..10_000 {
        raw.extend_from_slice(b"64\r\n");
        raw.extend(std::iter::repeat_n(b'z', 100));
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let (body, _) = dechunk(&raw, 16 * 1024, 1 << 30).unwrap();
    assert_eq!(body.len(), 1_000_000);
}

/// The decisions of the Transfer-Encoding list, the absolute form and 414 against 431, fed a
/// byte at a time (every split point at once) and as every prefix: the same requests and the
/// same refusal as the whole, each prefix either waiting for more or already that answer.
#[test]
fn new_head_decisions_do_not_depend_on_the_split() {
    use crate::http::fuzz::{frame_in_pieces, End};
    let limits = Limits {
        max_head_bytes: 512,
        max_headers: 16,
        max_body_bytes: 4096,
    };
    let post = |te: &str| format!("POST /ingest HTTP/1.1\r\n{te}\r\n5\r\nhello\r\n0\r\n\r\n");
    let target = |n: usize, rest: &str| format!("GET /{}{rest}", "a".repeat(n));
    let (te, too_large) = (
        HttpError::UnsupportedTransferEncoding,
        HttpError::HeadTooLarge,
    );
    let (uri, malformed) = (HttpError::UriTooLong, HttpError::BadRequest(TE_MALFORMED));
    let mut cases: Vec<(String, Option<HttpError>)> = vec![
        (post("Transfer-Encoding: Chunked\r\n"), None),
        (post("Transfer-Encoding: \tchunked \r\n"), None),
        (post("Transfer-Encoding: gzip ,chunked\r\n"), Some(te)),
        (
            post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
            Some(te),
        ),
        (post("Transfer-Encoding: , chunked\r\n"), Some(malformed)),
        (
            post("Transfer-Encoding: chunked, gzip\r\n"),
            Some(HttpError::BadRequest(TE_NOT_CHUNKED)),
        ),
        (
            "GET http://u:p@[::1]:4000/health HTTP/1.1\r\n\r\n\
             GET HTTP://x?/health HTTP/1.1\r\n\r\n"
                .into(),
            None,
        ),
        // The space after the target as the cap's last byte (431: the target ended, the head
        // did not), then a byte later (414); with an empty line before, the same a line later.
        (target(506, " HTTP/1.1\r\n\r\n"), Some(too_large)),
        (target(507, " HTTP/1.1\r\n\r\n"), Some(uri)),
        (target(508, " HTTP/1.1\r\n\r\n"), Some(uri)),
        (
            format!("\r\n{}", target(504, " HTTP/1.1\r\n\r\n")),
            Some(too_large),
        ),
        (
            format!("\r\n{}", target(505, " HTTP/1.1\r\n\r\n")),
            Some(uri),
        ),
        (
            format!("{} / HTTP/1.1\r\n\r\n", "A".repeat(600)),
            Some(too_large),
        ),
        (format!("{} / HTTP/1.1\r\n\r\n", "A".repeat(511)), Some(uri)),
        ("\r\n".repeat(300), Some(too_large)),
    ];
    // A head of exactly the cap is read; one byte more is not.
    let exact = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(512 - 18));
    assert_eq!(exact.len(), 512);
    cases.push((exact.clone(), None));
    cases.push((
        format!("GET /a{}", &exact[5..]),
        Some(HttpError::HeadTooLarge),
    ));
    for (raw, refused) in &cases {
        let data = raw.as_bytes();
        let whole = frame_in_pieces(data, &[], &limits);
        let every: Vec<usize> = (1..data.len()).collect();
        assert_eq!(frame_in_pieces(data, &every, &limits), whole, "{raw:?}");
        match refused {
            Some(e) => assert_eq!(whole.end, End::Refused(*e), "{raw:?}"),
            None => assert!(
                !whole.requests.is_empty() && !matches!(whole.end, End::Refused(_)),
                "{raw:?}: {whole:?}"
            ),
        }
        let answer = parse_head(data, &limits);
        for end in 0..data.len() {
            let got = parse_head(&data[..end], &limits);
            assert!(
                got == Ok(Parsed::Partial) || got == answer,
                "{raw:?} cut at {end}: {got:?}, whole {answer:?}"
            );
        }
    }
}
