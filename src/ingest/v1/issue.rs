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
