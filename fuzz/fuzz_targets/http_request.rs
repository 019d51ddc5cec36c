//! Arbitrary bytes through the request framing, every pipelined request in turn, whole and
//! split at arbitrary points: all must give the same requests (heads, de-chunked bodies, where
//! each ends), and each request the head, framing and end a plain reading of the bytes gives.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceingest::http::fuzz_split_equivalence(data));
