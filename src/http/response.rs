//! Writes an answer: an `Outcome` (accepted, exported, ok, or a `Refusal`) as a status line,
//! headers and a body: JSON on `/ingest` and the operations routes; on `/v1/traces` an OTLP
//! `ExportTraceServiceResponse` or `google.rpc.Status` in the request's format.

pub use crate::admission::LimitHeaders;
use crate::admission::LimitValue;
use crate::http::json::write_json_string;
use crate::http::otlp::{self, code, Format};
pub use crate::http::refusal::Refusal;
use crate::ingest::{Issue, PathSeg};

/// Everything `/ingest` and the other routes can answer, before it becomes bytes.
#[derive(Debug)]
pub enum Outcome {
    /// `202 {"accepted": N}`.
    Accepted { spans: usize },
    /// `200` with an `ExportTraceServiceResponse`: empty, or `partial_success` when spans were
    /// left out (how many, and why).
    Exported {
        format: Format,
        partial: Option<(u64, String)>,
    },
    /// `200` with a JSON or text body prepared by the caller.
    Ok {
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A refusal: status, stable code and message; schema failures carry their issues.
    Refused(Refusal),
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
        403 => "Forbidden",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
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

/// What an answer carries beyond its outcome: the admission state reported on every
/// `/ingest` and `/v1/traces` answer that got past authentication, and, on `/v1/traces`, the
/// format refusals are written in (`google.rpc.Status`).
#[derive(Debug, Default)]
pub struct ExtraHeaders {
    pub limits: LimitHeaders,
    pub otlp: Option<Format>,
}

/// Appends the whole answer to `out`. `keep_alive` is what the request allowed; the outcome may
/// still force a close. Returns whether the connection stays open.
pub fn write(
    out: &mut Vec<u8>,
    outcome: &Outcome,
    keep_alive: bool,
    head_only: bool,
    extra: &ExtraHeaders,
) -> bool {
    let mut body_buf = Vec::new();
    let (status, content_type, body, close, retry_after, allow): (
        u16,
        &str,
        &[u8],
        bool,
        Option<u64>,
        Option<&str>,
    ) = match outcome {
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
                None,
                extra,
                head_only,
            );
        }
        Outcome::Exported { format, partial } => {
            let partial = partial.as_ref().map(|(n, m)| (*n, m.as_str()));
            otlp::export_response(*format, partial, &mut body_buf);
            (200, format.content_type(), &body_buf, false, None, None)
        }
        Outcome::Ok { content_type, body } => (200, content_type, body, false, None, None),
        Outcome::Refused(r) if extra.otlp.is_some() => {
            let format = extra.otlp.unwrap_or(Format::Json);
            let message = format!("{} ({})", r.message, r.code);
            otlp::status(format, grpc_code(r.status), &message, &mut body_buf);
            (
                r.status,
                format.content_type(),
                &body_buf,
                r.close,
                r.retry_after,
                r.allow,
            )
        }
        Outcome::Refused(r) => {
            write_refusal_body(&mut body_buf, r);
            (
                r.status,
                "application/json",
                &body_buf,
                r.close,
                r.retry_after,
                r.allow,
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
        allow,
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
    allow: Option<&str>,
    extra: &ExtraHeaders,
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
    line(out, &[b"date: ", &date_now()]);
    if let Some(s) = retry_after {
        line(out, &[b"retry-after: ", format_u64(s, &mut digits)]);
    }
    if let Some(methods) = allow {
        line(out, &[b"allow: ", methods.as_bytes()]);
    }
    extra.limits.each(|name, value| {
        let value = match value {
            LimitValue::Count(n) => format_u64(n, &mut digits),
            LimitValue::Text(t) => t.as_bytes(),
        };
        line(out, &[name.as_bytes(), b": ", value]);
    });
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !head_only {
        out.extend_from_slice(body);
    }
    keep_alive
}

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
const DATE_LEN: usize = 29;

/// Now as an IMF-fixdate, the `Date` every answer carries (RFC 9110, 6.6.1: an origin server
/// with a clock sends one). Formatted at most once a second per thread.
fn date_now() -> [u8; DATE_LEN] {
    use std::cell::Cell;
    thread_local! {
        static CACHE: Cell<(u64, [u8; DATE_LEN])> = const { Cell::new((u64::MAX, [0; DATE_LEN])) };
    }
    let now = crate::clock::now_ms() / 1000;
    CACHE.with(|c| {
        let (second, text) = c.get();
        if second == now {
            return text;
        }
        let text = http_date(now);
        c.set((now, text));
        text
    })
}

/// Unix seconds as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(secs: u64) -> [u8; DATE_LEN] {
    const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let days = secs / 86_400;
    let in_day = secs % 86_400;
    let (year, month, day) = crate::calendar::civil_from_days(days as i64);
    let two = |n: u64| [b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8];
    let mut out = [0u8; DATE_LEN];
    out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
    out[3..5].copy_from_slice(b", ");
    out[5..7].copy_from_slice(&two(u64::from(day)));
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[month as usize - 1]);
    out[11] = b' ';
    let year = year.clamp(0, 9999) as u64;
    out[12..14].copy_from_slice(&two(year / 100));
    out[14..16].copy_from_slice(&two(year));
    out[16] = b' ';
    out[17..19].copy_from_slice(&two(in_day / 3600));
    out[19] = b':';
    out[20..22].copy_from_slice(&two(in_day / 60 % 60));
    out[22] = b':';
    out[23..25].copy_from_slice(&two(in_day % 60));
    out[25..].copy_from_slice(b" GMT");
    out
}

/// The `google.rpc.Code` of a refusal's status, for an OTLP `Status` body.
pub fn grpc_code(status: u16) -> i32 {
    match status {
        401 => code::UNAUTHENTICATED,
        403 => code::PERMISSION_DENIED,
        404 => code::NOT_FOUND,
        408 | 504 => code::DEADLINE_EXCEEDED,
        429 => code::RESOURCE_EXHAUSTED,
        405 | 501 | 505 => code::UNIMPLEMENTED,
        502 | 503 => code::UNAVAILABLE,
        500..=599 => code::INTERNAL,
        _ => code::INVALID_ARGUMENT,
    }
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
            write_issue(out, issue);
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// `{"path":[...],"code":"...","message":"..."}`
fn write_issue(out: &mut Vec<u8>, issue: &Issue) {
    out.extend_from_slice(b"{\"path\":[");
    for (i, seg) in issue.path.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match seg {
            PathSeg::Key(k) => write_json_string(out, k),
            PathSeg::Index(n) => {
                let mut digits = [0u8; 20];
                out.extend_from_slice(format_u64(*n as u64, &mut digits));
            }
        }
    }
    out.extend_from_slice(b"],\"code\":");
    write_json_string(out, issue.code);
    out.extend_from_slice(b",\"message\":");
    write_json_string(out, &issue.message);
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

    fn check_issue(issue: Issue, expected: &str) {
        let mut out = Vec::new();
        write_issue(&mut out, &issue);
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn issue_json() {
        check_issue(
            Issue {
                path: vec![
                    PathSeg::Key("traces".into()),
                    PathSeg::Index(0),
                    PathSeg::Key("metadata".into()),
                    PathSeg::Key("a\"b\\c\n\u{1}é😀".into()),
                ],
                code: "too_big",
                message: "tab\there \u{7f}".into(),
            },
            "{\"path\":[\"traces\",0,\"metadata\",\"a\\\"b\\\\c\\n\\u0001é😀\"],\
             \"code\":\"too_big\",\"message\":\"tab\\there \u{7f}\"}",
        );
        check_issue(
            Issue {
                path: vec![],
                code: "invalid_type",
                message: "\u{8}\u{c}\r\u{1f}".into(),
            },
            r#"{"path":[],"code":"invalid_type","message":"\b\f\r\u001f"}"#,
        );
    }

    fn render(outcome: &Outcome, keep_alive: bool) -> (String, bool) {
        let mut out = Vec::new();
        let open = write(
            &mut out,
            outcome,
            keep_alive,
            false,
            &ExtraHeaders::default(),
        );
        (without_date(String::from_utf8(out).unwrap()), open)
    }

    /// The answer without its `date` line, checked to be there once, as now, right after
    /// `content-length`.
    fn without_date(s: String) -> String {
        let at = s.find("\r\ndate: ").expect("an answer carries a date") + 2;
        let end = at + "date: ".len() + DATE_LEN + 2;
        let line = &s[at..end];
        assert_eq!(s.matches("\r\ndate: ").count(), 1, "{s}");
        assert!(line.ends_with(" GMT\r\n"), "{line:?}");
        let now = crate::clock::now_ms() / 1000;
        let near = [now - 1, now, now + 1].map(|t| format!("date: {}\r\n", text(t)));
        assert!(near.iter().any(|n| n == line), "{line:?} is not now");
        format!("{}{}", &s[..at], &s[end..])
    }

    fn text(secs: u64) -> String {
        String::from_utf8(http_date(secs).to_vec()).unwrap()
    }

    #[test]
    fn dates_are_imf_fixdates() {
        for (secs, want) in [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (4_102_444_799, "Thu, 31 Dec 2099 23:59:59 GMT"),
        ] {
            assert_eq!(text(secs), want, "{secs}");
        }
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
        let r = crate::http::refusal::refusal(crate::http::refusal::ConnError::Draining);
        let (s, open) = render(&Outcome::Refused(r), true);
        assert!(!open);
        assert!(s.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(s.contains("retry-after: 1\r\n"));
        assert!(s.contains("connection: close\r\n"));
        assert!(s.ends_with(
            "{\"error\":\"the server is shutting down; retry on another instance\",\
             \"code\":\"draining\"}"
        ));
    }

    #[test]
    fn method_not_allowed_says_what_is() {
        let r = crate::http::refusal::refusal(crate::http::refusal::ConnError::MethodNotAllowed {
            allow: "POST",
            path: "/ingest",
        });
        let (s, open) = render(&Outcome::Refused(r), true);
        assert!(open);
        assert!(s.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{s}");
        assert!(s.contains("\r\nallow: POST\r\n"), "{s}");
    }

    #[test]
    fn limit_headers() {
        let mut out = Vec::new();
        let extra = ExtraHeaders {
            otlp: None,
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
        let s = without_date(String::from_utf8(out).unwrap());
        assert_eq!(
            s,
            "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 14\r\n\
             x-ratelimit-limit: 100\r\nx-ratelimit-remaining: 0\r\n\
             x-quota-warning: 90%\r\nx-quota-used: 9500\r\nx-quota-limit: 10000\r\n\r\n\
             {\"accepted\":3}"
        );
    }
}
