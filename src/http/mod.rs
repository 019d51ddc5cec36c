//! HTTP/1.1 on the wire: request framing (`request.rs`), the mapping of every refusal to its
//! answer (`refusal.rs`), and writing answers (`response.rs`, with the JSON string writer in
//! `json.rs`, and the OTLP answers' bytes in `otlp.rs`); `fuzz.rs` holds the fuzz property of
//! framing (tests and fuzzing only).

#[cfg(any(test, feature = "fuzzing"))]
mod fuzz;
pub mod json;
pub mod otlp;
#[cfg(feature = "server")]
pub mod refusal;
pub mod request;
#[cfg(feature = "server")]
pub mod response;

#[cfg(any(test, feature = "fuzzing"))]
pub use fuzz::fuzz_split_equivalence;
