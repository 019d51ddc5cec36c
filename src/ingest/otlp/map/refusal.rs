//! Why an OTLP span is refused on its own, and the answer's description of the refusals.

use bumpalo::Bump;

use super::cut_utf16;
use crate::ingest::otlp::raw::{self, RawSpan};

/// Why a span was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    TraceId,
    SpanId,
    ParentSpanId,
    /// An id a JSON body spelled as neither hex nor base64 of 8 or 16 bytes
    /// (`RawSpan::unreadable_ids`).
    TraceIdText,
    SpanIdText,
    ParentSpanIdText,
    /// `start_time_unix_nano` or `end_time_unix_nano` is 0: not set (the proto calls both
    /// semantically required).
    NoStartTime,
    NoEndTime,
    EndBeforeStart,
    /// Its cost does not fit the cost columns (found when its row is built: `rows::build`).
    CostTooLarge,
}

impl Refused {
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::TraceId => "its trace id is not 16 bytes, or is all zero",
            Refused::SpanId => "its span id is not 8 bytes, or is all zero",
            Refused::ParentSpanId => "its parent span id is neither empty nor 8 bytes",
            Refused::TraceIdText => {
                "its trace id is neither 32 hex digits nor the base64 of 16 bytes"
            }
            Refused::SpanIdText => "its span id is neither 16 hex digits nor the base64 of 8 bytes",
            Refused::ParentSpanIdText => {
                "its parent span id is neither empty, 16 hex digits nor the base64 of 8 bytes"
            }
            Refused::NoStartTime => "its start time is not set (startTimeUnixNano is 0)",
            Refused::NoEndTime => "its end time is not set (endTimeUnixNano is 0)",
            Refused::EndBeforeStart => "it ends before it starts",
            Refused::CostTooLarge => {
                "its token counts give a cost above 99999999.9999999999 USD, which cannot be stored"
            }
        }
    }
}

/// The first refused span, described once the count is known (`describe_refusals`).
#[derive(Debug, Clone, Copy)]
pub struct FirstRefusal<'a> {
    pub why: Refused,
    /// Hex, or `(none)`.
    pub span_id: &'a str,
    pub name: &'a str,
}

/// The answer's `partial_success.error_message`: how many spans were refused, and which was
/// the first and why.
pub fn describe_refusals<'a>(rejected: u64, first: &FirstRefusal<'_>, arena: &'a Bump) -> &'a str {
    let name = cut_utf16(first.name, 128);
    bumpalo::format!(
        in arena,
        "{rejected} span{} rejected; the first, span {} ({name:?}), because {}",
        if rejected == 1 { "" } else { "s" },
        first.span_id,
        first.why.as_str()
    )
    .into_bump_str()
}

/// Why a span is refused, if it is.
pub(super) fn refusal(s: &RawSpan<'_, '_>) -> Option<Refused> {
    let zero = |id: &[u8]| id.iter().all(|&b| b == 0);
    if s.unreadable_ids & raw::TRACE_ID != 0 {
        Some(Refused::TraceIdText)
    } else if s.unreadable_ids & raw::SPAN_ID != 0 {
        Some(Refused::SpanIdText)
    } else if s.unreadable_ids & raw::PARENT_SPAN_ID != 0 {
        Some(Refused::ParentSpanIdText)
    } else if s.trace_id.len() != 16 || zero(s.trace_id) {
        Some(Refused::TraceId)
    } else if s.span_id.len() != 8 || zero(s.span_id) {
        Some(Refused::SpanId)
    } else if !s.parent_span_id.is_empty() && s.parent_span_id.len() != 8 {
        Some(Refused::ParentSpanId)
    } else if s.start_ns == 0 {
        Some(Refused::NoStartTime)
    } else if s.end_ns == 0 {
        Some(Refused::NoEndTime)
    } else if s.end_ns < s.start_ns {
        Some(Refused::EndBeforeStart)
    } else {
        None
    }
}
