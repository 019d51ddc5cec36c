//! Arbitrary usage and prices: pricing never overflows or panics, and total = sum of the parts.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| traceingest::pricing::fuzz_price(data));
