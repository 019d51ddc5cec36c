//! gRPC's metadata codings for `grpc.rs`: `grpc-message`'s percent-encoding and the
//! `google.rpc.RetryInfo` of a refusal with a delay, in binary (`-bin`) metadata.

use crate::http::otlp::{self as answer, Format};

/// The delay a refusal with a `Retry-After` asks for, as exporters read it: a
/// `google.rpc.RetryInfo`, alone (`google.rpc.retryinfo-bin`, which the Python exporter reads)
/// and in the details of a `google.rpc.Status` (`grpc-status-details-bin`, which the Go
/// exporter and the collector read), each base64 without padding. The Go exporter retries
/// `RESOURCE_EXHAUSTED` only with it; both wait the delay it gives.
pub(super) fn retry_info(
    code: i32,
    message: &str,
    retry_after: Option<u64>,
) -> Option<RetryMetadata> {
    use crate::ingest::otlp::protowire::write;
    let seconds = retry_after?;
    // google.protobuf.Duration { int64 seconds = 1; }
    let mut delay = Vec::new();
    write::uint(&mut delay, 1, seconds);
    // google.rpc.RetryInfo { Duration retry_delay = 1; }
    let mut retry = Vec::new();
    write::bytes(&mut retry, 1, &delay);
    // google.protobuf.Any { string type_url = 1; bytes value = 2; }
    let mut any = Vec::new();
    write::bytes(&mut any, 1, b"type.googleapis.com/google.rpc.RetryInfo");
    write::bytes(&mut any, 2, &retry);
    // google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3; }
    let mut status = Vec::new();
    answer::status(Format::Protobuf, code, message, &mut status);
    write::bytes(&mut status, 3, &any);
    Some(RetryMetadata {
        retry_info: base64(&retry),
        status_details: base64(&status),
    })
}

/// `google.rpc.retryinfo-bin` and `grpc-status-details-bin`, coded.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct RetryMetadata {
    pub(super) retry_info: Vec<u8>,
    pub(super) status_details: Vec<u8>,
}

/// Standard base64 without padding, as gRPC writes binary metadata.
pub(super) fn base64(bytes: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]);
        }
    }
    out
}

/// `grpc-message`'s encoding: bytes outside printable ASCII, and `%`, as `%XX`.
pub(super) fn percent_encode(message: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}
