//! The one place that maps why a request was refused to its answer: status, stable code,
//! message and headers.
//!
//! Each stage returns its own small error: the connection (`ConnError`: framing, limits,
//! timeouts, routing, draining), authentication (`AuthError`), the ingest pipeline
//! (`IngestError`: decoding, admission, hand-off) and readiness (`NotReady`). `refusal` turns
//! any of them into a `Refusal`, which `response.rs` writes in the route's format. The codes
//! are stable API: clients switch on them.

use crate::admission::AdmissionError;
use crate::auth::AuthError;
use crate::http::request::HttpError;
use crate::ingest::compress::CompressError;
use crate::ingest::{DecodeError, IngestError};
use crate::server::ops::{NotReady, READY_BUFFER_PERCENT};
use crate::sink::HandoffError;

/// A refused request, ready to be written.
#[derive(Debug)]
pub struct Refusal {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    /// Seconds, for `429` rate limits and `503`.
    pub retry_after: Option<u64>,
    /// `Allow`, for `405`.
    pub allow: Option<&'static str>,
    /// A schema failure's issues (the v1 body's `issues`).
    pub issues: Vec<crate::ingest::Issue>,
    /// The connection must be closed after this answer.
    pub close: bool,
}

/// Refusals of the connection itself, before or around a request's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnError {
    /// The request's framing or head broke a rule or a limit (`max_body` is the body cap).
    Http {
        error: HttpError,
        max_body: u64,
    },
    /// The head did not arrive within the header timeout.
    HeadTimeout,
    /// The body stalled or arrived below the minimum rate.
    SlowBody,
    /// The server is shutting down.
    Draining,
    NotFound,
    /// A method the path does not take; `allow` lists those it does.
    MethodNotAllowed {
        allow: &'static str,
        path: &'static str,
    },
    /// An OTLP export whose `Content-Type` is neither protobuf nor JSON.
    UnsupportedMediaType,
}

/// Anything a request can be refused for.
#[derive(Debug)]
pub enum Refused {
    Conn(ConnError),
    Auth(AuthError),
    Ingest(IngestError),
    NotReady(NotReady),
}

impl From<ConnError> for Refused {
    fn from(e: ConnError) -> Refused {
        Refused::Conn(e)
    }
}

impl From<AuthError> for Refused {
    fn from(e: AuthError) -> Refused {
        Refused::Auth(e)
    }
}

impl From<IngestError> for Refused {
    fn from(e: IngestError) -> Refused {
        Refused::Ingest(e)
    }
}

impl From<NotReady> for Refused {
    fn from(e: NotReady) -> Refused {
        Refused::NotReady(e)
    }
}

/// The answer to a refusal: status, code, message, `Retry-After`, `Allow`, and whether the
/// connection closes after it.
#[cold]
pub fn refusal(why: impl Into<Refused>) -> Refusal {
    refusal_of(why.into())
}

/// The answer to a refusal on `/v1/traces`: as `refusal`, except that a used-up monthly quota
/// is `403`, which OTLP exporters do not retry (they retry `429` for ever).
#[cold]
pub fn otlp_refusal(why: impl Into<Refused>) -> Refusal {
    let mut r = refusal_of(why.into());
    if r.code == "quota_exceeded" {
        r.status = 403;
    }
    r
}

fn refusal_of(why: Refused) -> Refusal {
    match why {
        Refused::Conn(e) => conn(e),
        Refused::Auth(AuthError::Missing) => new(
            401,
            "missing_api_key",
            "send the API key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'",
        ),
        Refused::Auth(AuthError::NotBearer) => new(
            401,
            "invalid_authorization_scheme",
            "the Authorization header must be 'Bearer <key>'; or send the key as \
             'x-api-key: <key>'",
        ),
        Refused::Auth(AuthError::Invalid | AuthError::Unknown) => {
            new(401, "invalid_api_key", "the API key is unknown or revoked")
        }
        Refused::Ingest(IngestError::Decode(e)) => decode(e),
        Refused::Ingest(IngestError::Admission(e)) => admission(e),
        Refused::Ingest(IngestError::Handoff(e)) => handoff(e),
        Refused::NotReady(e) => not_ready(e),
    }
}

fn new(status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        code,
        message: message.into(),
        retry_after: None,
        allow: None,
        issues: Vec::new(),
        close: false,
    }
}

impl Refusal {
    fn closing(mut self) -> Refusal {
        self.close = true;
        self
    }

    fn retry_after(mut self, seconds: u64) -> Refusal {
        self.retry_after = Some(seconds);
        self
    }
}

fn conn(e: ConnError) -> Refusal {
    match e {
        ConnError::Http { error, max_body } => http(error, max_body).closing(),
        ConnError::HeadTimeout => new(
            408,
            "request_timeout",
            "the request head did not arrive in time",
        )
        .closing(),
        ConnError::SlowBody => new(
            408,
            "request_timeout",
            "the request body stalled or arrived below the minimum rate",
        )
        .closing(),
        ConnError::Draining => draining(),
        ConnError::NotFound => new(404, "not_found", "no such path; POST batches to /ingest"),
        ConnError::UnsupportedMediaType => new(
            415,
            "unsupported_media_type",
            "send OTLP exports as Content-Type: application/x-protobuf or application/json",
        ),
        ConnError::MethodNotAllowed { allow, path } => {
            let message = if allow == "POST" {
                format!("use POST on {path}")
            } else {
                "method not allowed on this path".to_string()
            };
            Refusal {
                allow: Some(allow),
                ..new(405, "method_not_allowed", message)
            }
        }
    }
}

fn http(e: HttpError, max_body: u64) -> Refusal {
    match e {
        HttpError::BadRequest(why) => {
            new(400, "bad_request", format!("malformed HTTP request: {why}"))
        }
        HttpError::HeadTooLarge => new(
            431,
            "headers_too_large",
            "request header block too large or too many header fields",
        ),
        HttpError::UriTooLong => new(
            414,
            "uri_too_long",
            "request target longer than the limit on the request head",
        ),
        HttpError::BodyTooLarge => new(
            413,
            "payload_too_large",
            format!("request body exceeds the limit of {max_body} bytes"),
        ),
        HttpError::UnsupportedTransferEncoding => new(
            501,
            "unsupported_transfer_encoding",
            "only Transfer-Encoding: chunked is supported",
        ),
        HttpError::UnsupportedVersion => new(
            505,
            "http_version_not_supported",
            "only HTTP/1.0 and HTTP/1.1 are supported",
        ),
        HttpError::ExpectationFailed => new(
            417,
            "expectation_failed",
            "the only supported expectation is Expect: 100-continue",
        ),
    }
}

/// The one answer while the server shuts down, wherever the request noticed it.
fn draining() -> Refusal {
    new(
        503,
        "draining",
        "the server is shutting down; retry on another instance",
    )
    .retry_after(1)
    .closing()
}

fn decode(e: DecodeError) -> Refusal {
    match e {
        DecodeError::Encoding(e @ CompressError::Unsupported) => {
            new(415, "unsupported_content_encoding", e.to_string())
        }
        // Closing, as every `payload_too_large` (README): the body was read whole, but a
        // client sending that much should not go on on the same connection.
        DecodeError::Encoding(e @ CompressError::TooLarge { .. }) => {
            new(413, "payload_too_large", e.to_string()).closing()
        }
        DecodeError::Encoding(e) => new(400, "invalid_content_encoding", e.to_string()),
        DecodeError::Otlp(e) => new(400, "invalid_otlp", e.to_string()),
        DecodeError::InvalidJson(message) => new(400, "invalid_json", message),
        DecodeError::Schema(issues) => {
            let n = issues.len();
            Refusal {
                issues,
                ..new(
                    400,
                    "validation_failed",
                    format!(
                        "the batch does not match the v1 schema ({n} issue{})",
                        if n == 1 { "" } else { "s" }
                    ),
                )
            }
        }
        DecodeError::TooLarge {
            bytes,
            limit,
            body_len,
        } => new(
            413,
            "batch_too_large",
            format!(
                "the batch's spans would take {bytes} bytes as rows ({body_len} bytes of \
                 body), more than the {limit} bytes one batch may take; send fewer spans per \
                 batch, or repeat less trace-level data (trace metadata and names are stored \
                 with every span)"
            ),
        ),
        DecodeError::TooManySpans { spans, limit } => new(
            413,
            "batch_too_large",
            format!(
                "the batch has {spans} spans, more than the {limit} rows the write buffer \
                 holds (INGEST_BUFFER_MAX_ROWS), so it can never be accepted; send at most \
                 {limit} spans per batch"
            ),
        ),
    }
}

fn admission(e: AdmissionError) -> Refusal {
    match e {
        AdmissionError::RateLimited {
            per_second,
            burst,
            retry_after_s,
        } => new(
            429,
            "rate_limited",
            format!(
                "rate limit exceeded: this API key may send {per_second} spans per second \
                 (bursts of {burst}); retry in {retry_after_s} s"
            ),
        )
        .retry_after(retry_after_s),
        AdmissionError::QuotaExceeded {
            limit,
            used,
            spans,
            month,
        } => new(
            429,
            "quota_exceeded",
            format!(
                "the monthly quota of this organisation's plan is used up ({used} of {limit} \
                 spans used in {month}, this batch has {spans}); upgrade the plan to send \
                 more this month"
            ),
        ),
    }
}

fn handoff(e: HandoffError) -> Refusal {
    match e {
        HandoffError::BufferFull => new(
            503,
            "buffer_full",
            "the write buffer is full; retry shortly",
        )
        .retry_after(1),
        HandoffError::WalFailed => new(
            503,
            "storage_unavailable",
            "the write-ahead log cannot write to disk; retry shortly",
        )
        .retry_after(1),
        HandoffError::Draining => draining(),
    }
}

fn not_ready(e: NotReady) -> Refusal {
    let why = match e {
        NotReady::BufferFull => {
            return new(
                503,
                "buffer_full",
                "memory buffer and spool are full; batches are refused until ClickHouse takes \
                 rows",
            )
        }
        NotReady::WriteAheadFailing => {
            return new(
                503,
                "storage_unavailable",
                "the write-ahead log cannot write to disk; batches are refused until it can \
                 start a new segment",
            )
        }
        NotReady::Draining => "shutting down: a stop was asked for".to_string(),
        NotReady::StoreUnreachable { for_ms } => format!(
            "ClickHouse has been unreachable for {} s (API keys not refreshed)",
            for_ms / 1000
        ),
        NotReady::BufferNearlyFull { buffered, max } => format!(
            "the write buffer is over {READY_BUFFER_PERCENT}% full ({buffered} of {max} rows in \
             memory)"
        ),
        NotReady::BufferBytesNearlyFull { bytes, max } => format!(
            "the write buffer is over {READY_BUFFER_PERCENT}% full ({bytes} of {max} bytes in \
             memory)"
        ),
        NotReady::SpoolNearlyFull { bytes, max } => {
            format!("the spool is over {READY_BUFFER_PERCENT}% full ({bytes} of {max} bytes)")
        }
    };
    new(503, "not_ready", why)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stage's error, with the status, code, Retry-After and close it gets.
    #[test]
    fn every_refusal_has_its_status_and_code() {
        let month = crate::calendar::Month::of_ms(1_705_276_800_000);
        let cases: Vec<(Refused, u16, &str, Option<u64>, bool)> = vec![
            (
                ConnError::Http {
                    error: HttpError::BodyTooLarge,
                    max_body: 10,
                }
                .into(),
                413,
                "payload_too_large",
                None,
                true,
            ),
            (
                IngestError::Decode(DecodeError::Encoding(CompressError::TooLarge { cap: 10 }))
                    .into(),
                413,
                "payload_too_large",
                None,
                true,
            ),
            (
                ConnError::Http {
                    error: HttpError::UriTooLong,
                    max_body: 10,
                }
                .into(),
                414,
                "uri_too_long",
                None,
                true,
            ),
            (
                ConnError::HeadTimeout.into(),
                408,
                "request_timeout",
                None,
                true,
            ),
            (ConnError::Draining.into(), 503, "draining", Some(1), true),
            (
                IngestError::Handoff(HandoffError::Draining).into(),
                503,
                "draining",
                Some(1),
                true,
            ),
            (ConnError::NotFound.into(), 404, "not_found", None, false),
            (
                AuthError::NotBearer.into(),
                401,
                "invalid_authorization_scheme",
                None,
                false,
            ),
            (
                AuthError::Unknown.into(),
                401,
                "invalid_api_key",
                None,
                false,
            ),
            (
                IngestError::Admission(AdmissionError::RateLimited {
                    per_second: 10,
                    burst: 10,
                    retry_after_s: 3,
                })
                .into(),
                429,
                "rate_limited",
                Some(3),
                false,
            ),
            (
                IngestError::Admission(AdmissionError::QuotaExceeded {
                    limit: 100,
                    used: 100,
                    spans: 5,
                    month,
                })
                .into(),
                429,
                "quota_exceeded",
                None,
                false,
            ),
            (
                NotReady::WriteAheadFailing.into(),
                503,
                "storage_unavailable",
                None,
                false,
            ),
            (
                IngestError::Handoff(HandoffError::BufferFull).into(),
                503,
                "buffer_full",
                Some(1),
                false,
            ),
            (
                IngestError::Decode(DecodeError::TooLarge {
                    bytes: 2,
                    limit: 1,
                    body_len: 1,
                })
                .into(),
                413,
                "batch_too_large",
                None,
                false,
            ),
            (
                IngestError::Decode(DecodeError::TooManySpans { spans: 2, limit: 1 }).into(),
                413,
                "batch_too_large",
                None,
                false,
            ),
        ];
        for (why, status, code, retry_after, close) in cases {
            let shown = format!("{why:?}");
            let r = refusal(why);
            assert_eq!(
                (r.status, r.code, r.retry_after, r.close),
                (status, code, retry_after, close),
                "{shown}"
            );
        }
        let r = refusal(ConnError::MethodNotAllowed {
            allow: "POST",
            path: "/ingest",
        });
        assert_eq!(
            (r.status, r.allow, r.message.as_str()),
            (405, Some("POST"), "use POST on /ingest")
        );
    }
}
