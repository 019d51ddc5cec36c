//! Tests of `grpc.rs`.

use super::*;

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
