//! quick-protobuf's reader of the OTLP trace schema, the bench's borrowed-string baseline.
//!
//! `generated/` is pb-rs 0.10's output, unedited, from opentelemetry-proto 0.33.1's `.proto`
//! files (which that crate ships; no network needed):
//!
//! ```sh
//! cargo install pb-rs --locked
//! P=$(ls -d ~/.cargo/registry/src/*/opentelemetry-proto-0.33.1)/src/proto/opentelemetry-proto
//! pb-rs -I $P -d benches/otlp_quick/generated $P/opentelemetry/proto/collector/trace/v1/trace_service.proto \
//!   $P/opentelemetry/proto/trace/v1/trace.proto $P/opentelemetry/proto/common/v1/common.proto \
//!   $P/opentelemetry/proto/resource/v1/resource.proto
//! ```
//!
//! Strings and bytes are `Cow::Borrowed` from the input; every repeated field is a `Vec`, so a
//! decode still allocates per span and per attribute.

#[allow(
    clippy::all,
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_snake_case
)]
mod generated;

use generated::opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
use quick_protobuf::{BytesReader, MessageRead};

/// Decodes a whole body as an `ExportTraceServiceRequest`, borrowing its strings.
pub fn decode(bytes: &[u8]) -> quick_protobuf::Result<ExportTraceServiceRequest<'_>> {
    let mut reader = BytesReader::from_bytes(bytes);
    ExportTraceServiceRequest::from_reader(&mut reader, bytes)
}
