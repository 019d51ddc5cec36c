//! Schema issues: where a value is (its JSON path), what is wrong (a stable code) and a message,
//! collected cheaply during the walk and written out as JSON.

use std::borrow::Cow;
use std::fmt;

/// The contract caps the `issues` array of a `400` at this many entries.
pub const MAX_ISSUES: usize = 100;

/// One step of a JSON path: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    Key(Cow<'static, str>),
    Index(usize),
}

/// One way the body fails the schema, e.g. `["traces", 0, "spans", 3, "endTime"]`, `custom`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub path: Vec<PathSeg>,
    /// Stable snake_case code: `invalid_type`, `too_small`, `too_big`, `invalid_enum_value`,
    /// `invalid_literal`, `invalid_string`, `unrecognized_keys`, `duplicate_key`, `custom`.
    pub code: &'static str,
    pub message: String,
}

impl Issue {
    /// `{"path":[...],"code":"...","message":"..."}`
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"path\":[");
        for (i, seg) in self.path.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match seg {
                PathSeg::Key(k) => write_json_string(out, k),
                PathSeg::Index(n) => out.extend_from_slice(n.to_string().as_bytes()),
            }
        }
        out.extend_from_slice(b"],\"code\":");
        write_json_string(out, self.code);
        out.extend_from_slice(b",\"message\":");
        write_json_string(out, &self.message);
        out.push(b'}');
    }
}

/// What `write_json_string` does with each byte: 0 = copy, `u` = `\u00XX`, else `\` + that byte.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Appends `s` as a JSON string literal (quotes, `\"`, `\\`, control characters escaped).
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = ESCAPE[b as usize];
        if esc == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if esc == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
        } else {
            out.extend_from_slice(&[b'\\', esc]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The path of the value being walked, as a chain of stack frames: building one costs nothing,
/// and it only becomes a `Vec<PathSeg>` when an issue is recorded.
#[derive(Clone, Copy)]
pub(crate) enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl<'p> Path<'p> {
    #[inline]
    pub(crate) fn key(&'p self, key: &'p str) -> Path<'p> {
        Path::Key(self, key)
    }

    #[inline]
    pub(crate) fn index(&'p self, index: usize) -> Path<'p> {
        Path::Index(self, index)
    }

    fn to_segs(self) -> Vec<PathSeg> {
        let mut segs = Vec::new();
        let mut at = self;
        loop {
            match at {
                Path::Root => break,
                Path::Key(parent, k) => {
                    segs.push(PathSeg::Key(Cow::Owned(k.to_owned())));
                    at = *parent;
                }
                Path::Index(parent, i) => {
                    segs.push(PathSeg::Index(i));
                    at = *parent;
                }
            }
        }
        segs.reverse();
        segs
    }
}

/// The issues of one body, capped at `MAX_ISSUES`; pushing past the cap is a no-op.
#[derive(Default)]
pub(crate) struct Issues {
    list: Vec<Issue>,
}

impl Issues {
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.list.len() >= MAX_ISSUES
    }

    /// Records an issue; the message is only formatted if it is kept.
    #[cold]
    #[inline(never)]
    pub(crate) fn push(
        &mut self,
        path: &Path<'_>,
        code: &'static str,
        message: fmt::Arguments<'_>,
    ) {
        if self.is_full() {
            return;
        }
        self.list.push(Issue {
            path: path.to_segs(),
            code,
            message: message.to_string(),
        });
    }

    pub(crate) fn into_vec(self) -> Vec<Issue> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(issue: Issue, expected: &str) {
        let mut out = Vec::new();
        issue.write_json(&mut out);
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn issue_json() {
        check(
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
        check(
            Issue {
                path: vec![],
                code: "invalid_type",
                message: "\u{8}\u{c}\r\u{1f}".into(),
            },
            r#"{"path":[],"code":"invalid_type","message":"\b\f\r\u001f"}"#,
        );
    }

    #[test]
    fn issues_cap_and_paths() {
        let mut issues = Issues::default();
        let root = Path::Root;
        let traces = root.key("traces");
        let t0 = traces.index(7);
        for _ in 0..150 {
            issues.push(&t0, "custom", format_args!("m"));
        }
        assert!(issues.is_full());
        let list = issues.into_vec();
        assert_eq!(list.len(), MAX_ISSUES);
        assert_eq!(
            list[0].path,
            vec![PathSeg::Key("traces".into()), PathSeg::Index(7)]
        );
    }
}
