//! The one place that turns an outcome into a status line, headers and a JSON body.

use crate::http::request::HttpError;
use crate::ingest::validate::{write_json_string, Issue};

/// Everything `/ingest` and the other routes can answer, before it becomes bytes.
#[derive(Debug)]
pub enum Outcome {
    /// `202 {"accepted": N}`.
    Accepted { spans: usize },
    /// `200` with a JSON or text body prepared by the caller.
    Ok {
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A refusal: status, stable code and message; schema failures carry their issues.
    Refused(Refusal),
}

/// A refused request. The codes are stable API: clients switch on them.
#[derive(Debug)]
pub struct Refusal {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    /// Seconds, for `429` rate limits and `503`.
    pub retry_after: Option<u64>,
    pub issues: Vec<Issue>,
    /// The connection must be closed after this answer.
    pub close: bool,
}

impl Refusal {
    #[cold]
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
            retry_after: None,
            issues: Vec::new(),
            close: false,
        }
    }

    pub fn closing(mut self) -> Refusal {
        self.close = true;
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Refusal {
        self.retry_after = Some(seconds);
        self
    }

    #[cold]
    pub fn from_http(e: HttpError, max_body: u64) -> Refusal {
        match e {
            HttpError::BadRequest(why) => {
                Refusal::new(400, "bad_request", format!("malformed HTTP request: {why}"))
            }
            HttpError::HeadTooLarge => Refusal::new(
                431,
                "headers_too_large",
                "request header block too large or too many header fields",
            ),
            HttpError::BodyTooLarge => Refusal::new(
                413,
                "payload_too_large",
                format!("request body exceeds the limit of {max_body} bytes"),
            ),
            HttpError::UnsupportedTransferEncoding => Refusal::new(
                501,
                "unsupported_transfer_encoding",
                "only Transfer-Encoding: chunked is supported",
            ),
            HttpError::UnsupportedVersion => Refusal::new(
                505,
                "http_version_not_supported",
                "only HTTP/1.0 and HTTP/1.1 are supported",
            ),
            HttpError::ExpectationFailed => Refusal::new(
                417,
                "expectation_failed",
                "the only supported expectation is Expect: 100-continue",
            ),
        }
        .closing()
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        417 => "Expectation Failed",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// Extra headers some answers carry (`Allow`, ...), written verbatim, plus the admission state.
#[derive(Debug, Default)]
pub struct ExtraHeaders<'a> {
    pub lines: &'a [(&'a str, &'a str)],
    pub limits: LimitHeaders,
}

/// Admission state reported on every `/ingest` answer that got past authentication.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitHeaders {
    /// `X-RateLimit-Limit` (bucket capacity in spans) and `X-RateLimit-Remaining` (whole spans
    /// left); absent when the key's plan has no rate limit.
    pub rate: Option<(u64, u64)>,
    /// `X-Quota-Used` and `X-Quota-Limit` (spans this UTC month) with `X-Quota-Warning: 90%`:
    /// present once usage reaches 90% of the plan's quota, and on a `quota_exceeded` refusal.
    pub quota: Option<(u64, u64)>,
}

/// Appends the whole answer to `out`. `keep_alive` is what the request allowed; the outcome may
/// still force a close. Returns whether the connection stays open.
pub fn write(
    out: &mut Vec<u8>,
    outcome: &Outcome,
    keep_alive: bool,
    head_only: bool,
    extra: &ExtraHeaders<'_>,
) -> bool {
    let mut body_buf = Vec::new();
    let (status, content_type, body, close, retry_after): (u16, &str, &[u8], bool, Option<u64>) =
        match outcome {
            Outcome::Accepted { spans } => {
                let mut digits = [0u8; 20];
                let d = format_u64(*spans as u64, &mut digits);
                let n = d.len();
                let mut body = [0u8; 40];
                body[..12].copy_from_slice(b"{\"accepted\":");
                body[12..12 + n].copy_from_slice(d);
                body[12 + n] = b'}';
                // Fast path: one write, no allocation.
                return write_raw(
                    out,
                    202,
                    "application/json",
                    &body[..13 + n],
                    keep_alive,
                    None,
                    extra,
                    head_only,
                );
            }
            Outcome::Ok { content_type, body } => (200, content_type, body, false, None),
            Outcome::Refused(r) => {
                write_refusal_body(&mut body_buf, r);
                (
                    r.status,
                    "application/json",
                    &body_buf,
                    r.close,
                    r.retry_after,
                )
            }
        };
    write_raw(
        out,
        status,
        content_type,
        body,
        keep_alive && !close,
        retry_after,
        extra,
        head_only,
    )
}

fn write_raw(
    out: &mut Vec<u8>,
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
    retry_after: Option<u64>,
    extra: &ExtraHeaders<'_>,
    head_only: bool,
) -> bool {
    // Byte by byte rather than `write!`: the formatting machinery was a visible share of a
    // small request's answer.
    let line = |out: &mut Vec<u8>, parts: &[&[u8]]| {
        for p in parts {
            out.extend_from_slice(p);
        }
        out.extend_from_slice(b"\r\n");
    };
    let mut digits = [0u8; 20];
    let mut more = [0u8; 20];
    line(
        out,
        &[
            b"HTTP/1.1 ",
            format_u64(u64::from(status), &mut digits),
            b" ",
            reason(status).as_bytes(),
        ],
    );
    line(out, &[b"content-type: ", content_type.as_bytes()]);
    line(
        out,
        &[
            b"content-length: ",
            format_u64(body.len() as u64, &mut digits),
        ],
    );
    if let Some(s) = retry_after {
        line(out, &[b"retry-after: ", format_u64(s, &mut digits)]);
    }
    for (name, value) in extra.lines {
        line(out, &[name.as_bytes(), b": ", value.as_bytes()]);
    }
    if let Some((limit, remaining)) = extra.limits.rate {
        line(
            out,
            &[b"x-ratelimit-limit: ", format_u64(limit, &mut digits)],
        );
        line(
            out,
            &[b"x-ratelimit-remaining: ", format_u64(remaining, &mut more)],
        );
    }
    if let Some((used, limit)) = extra.limits.quota {
        out.extend_from_slice(b"x-quota-warning: 90%\r\n");
        line(out, &[b"x-quota-used: ", format_u64(used, &mut digits)]);
        line(out, &[b"x-quota-limit: ", format_u64(limit, &mut more)]);
    }
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !head_only {
        out.extend_from_slice(body);
    }
    keep_alive
}

/// `HTTP/1.1 100 Continue`, sent before reading a body the client holds back.
pub fn write_continue(out: &mut Vec<u8>) {
    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
}

/// `{"error": ..., "code": ..., "issues": [...]}`
fn write_refusal_body(out: &mut Vec<u8>, r: &Refusal) {
    out.extend_from_slice(b"{\"error\":");
    write_json_string(out, &r.message);
    out.extend_from_slice(b",\"code\":");
    write_json_string(out, r.code);
    if !r.issues.is_empty() {
        out.extend_from_slice(b",\"issues\":[");
        for (i, issue) in r.issues.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            issue.write_json(out);
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// Decimal digits of `n`, written at the end of `digits`.
fn format_u64(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(outcome: &Outcome, keep_alive: bool) -> (String, bool) {
        let mut out = Vec::new();
        let open = write(
            &mut out,
            outcome,
            keep_alive,
            false,
            &ExtraHeaders::default(),
        );
        (String::from_utf8(out).unwrap(), open)
    }

    #[test]
    fn accepted() {
        let (s, open) = render(&Outcome::Accepted { spans: 1234 }, true);
        assert_eq!(
            s,
            "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 17\r\n\r\n{\"accepted\":1234}"
        );
        assert!(open);
    }

    #[test]
    fn refusal_closes_when_asked() {
        let r = Refusal::new(503, "draining", "server is shutting down")
            .retry_after(1)
            .closing();
        let (s, open) = render(&Outcome::Refused(r), true);
        assert!(!open);
        assert!(s.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(s.contains("retry-after: 1\r\n"));
        assert!(s.contains("connection: close\r\n"));
        assert!(s.ends_with("{\"error\":\"server is shutting down\",\"code\":\"draining\"}"));
    }

    #[test]
    fn limit_headers() {
        let mut out = Vec::new();
        let extra = ExtraHeaders {
            lines: &[("allow", "POST")],
            limits: LimitHeaders {
                rate: Some((100, 0)),
                quota: Some((9_500, 10_000)),
            },
        };
        write(
            &mut out,
            &Outcome::Accepted { spans: 3 },
            true,
            false,
            &extra,
        );
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 14\r\n\
             allow: POST\r\nx-ratelimit-limit: 100\r\nx-ratelimit-remaining: 0\r\n\
             x-quota-warning: 90%\r\nx-quota-used: 9500\r\nx-quota-limit: 10000\r\n\r\n\
             {\"accepted\":3}"
        );
    }
}
