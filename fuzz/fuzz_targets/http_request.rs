//! Arbitrary bytes through the request framing, whole and split at an arbitrary point: both
//! must give the same head and the same de-chunked body, and an accepted head the framing a
//! plain reading of its header lines gives.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceingest::http::fuzz_split_equivalence(data));
