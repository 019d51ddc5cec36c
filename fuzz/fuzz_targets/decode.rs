//! Arbitrary bodies through decode + validate: never panics, and an accepted body satisfies
//! every schema rule according to an independent slow validator.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceingest::ingest::fuzz_decode(data));
