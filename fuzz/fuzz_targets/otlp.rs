//! Arbitrary bodies through the OTLP decoders (protobuf and JSON): never panics, and the
//! protobuf reader sees exactly the spans prost's decode of the same bytes has, and so does the
//! JSON reader when that decode is written as OTLP/JSON.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceingest::ingest::otlp::fuzz_decode(data));
