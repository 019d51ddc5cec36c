//! The v1 front end: a v1 JSON batch -> `wire::Batch`, with the contract's schema checked and
//! every issue reported by JSON path.
//!
//! - `decode.rs`: the body parsed by simd-json where it lies (its buffer has simd-json's
//!   padding), with the rare repair of lone surrogates and out-of-range numbers
//!   (`ingest::json`, shared with OTLP/JSON).
//! - `validate/`: the schema walk over simd-json's tape into arena-allocated `wire` types.
//! - `issue.rs`: `Issue { path, code, message }` and the cheap path stack of the walk.
//! - `fuzz.rs` (tests and fuzzing only): the decoder against an independent oracle
//!   (`fuzz/oracle.rs`).

mod decode;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzz;
mod issue;
pub mod validate;

pub use decode::Decoder;
#[cfg(any(test, feature = "fuzzing"))]
pub use fuzz::fuzz_decode;
pub use issue::{Issue, PathSeg, MAX_ISSUES};
