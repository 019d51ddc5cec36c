//! Strings and numbers with their rules: lengths in UTF-16 units, integers up to 2^53-1,
//! non-negative numbers, and out-of-range literals.

use simd_json::{Node, StaticNode};

use super::*;

impl<'a> Walker<'_, 'a> {
    /// Checks a string's length in UTF-16 units; `min` is 0 or 1, so a byte test decides it.
    #[inline]
    pub(super) fn len_ok(&mut self, path: &Path<'_>, s: &str, min: usize, max: usize) -> bool {
        if s.len() < min {
            self.too_short(path, min);
            return false;
        }
        // UTF-16 length <= UTF-8 length: only count when the bytes exceed the limit.
        if s.len() > max && utf16_len(s) > max {
            self.too_long(path, max);
            return false;
        }
        true
    }

    /// A string value with no length rule.
    #[inline]
    pub(super) fn any_string(&mut self, path: &Path<'_>) -> Option<&'a str> {
        let n = self.next();
        if let Node::String(s) = n {
            if self.placeholder(s).is_none() {
                return Some(s);
            }
        }
        self.wrong_type(path, "string", n);
        None
    }

    /// A string of `min..=max` UTF-16 units. Always inlined: the fifteen string members of a
    /// span paid a call each (0.35% of the whole path's instructions).
    #[inline(always)]
    pub(super) fn string(&mut self, path: &Path<'_>, min: usize, max: usize) -> Option<&'a str> {
        let s = self.any_string(path)?;
        self.len_ok(path, s, min, max).then_some(s)
    }

    #[inline]
    pub(super) fn int(&mut self, path: &Path<'_>) -> Option<u64> {
        match self.next() {
            Node::Static(StaticNode::U64(v)) if v <= MAX_SAFE_INTEGER => Some(v),
            n => self.number_slow(path, n, NumKind::Int).map(|v| v as u64),
        }
    }

    #[inline]
    pub(super) fn non_negative(&mut self, path: &Path<'_>) -> Option<f64> {
        match self.next() {
            Node::Static(StaticNode::F64(v)) if v > 0.0 => Some(v),
            Node::Static(StaticNode::U64(v)) => Some(v as f64),
            n => self.number_slow(path, n, NumKind::NonNeg),
        }
    }

    /// Every number case off the fast paths, including out-of-range placeholders and wrong
    /// types. Returns the value as a double (exact for accepted integers).
    pub(super) fn number_slow(
        &mut self,
        path: &Path<'_>,
        n: Node<'a>,
        kind: NumKind,
    ) -> Option<f64> {
        let expected = match kind {
            NumKind::Int => "integer",
            NumKind::NonNeg => "number",
        };
        let v = match n {
            Node::Static(StaticNode::U64(v)) => v as f64,
            Node::Static(StaticNode::I64(v)) => v as f64,
            Node::Static(StaticNode::F64(v)) => v,
            Node::String(s) => match self.placeholder(s) {
                Some(v) => v,
                None => {
                    self.wrong_type(path, expected, n);
                    return None;
                }
            },
            _ => {
                self.wrong_type(path, expected, n);
                return None;
            }
        };
        if v.is_infinite() {
            self.wrong_type(path, "number", n);
            return None;
        }
        if matches!(kind, NumKind::Int) && v.fract() != 0.0 {
            self.issues.push(
                path,
                "invalid_type",
                format_args!("Expected integer, received float"),
            );
            return None;
        }
        if v < 0.0 {
            self.below_zero(path);
            return None;
        }
        if matches!(kind, NumKind::Int) && v > MAX_SAFE_INTEGER as f64 {
            self.above_safe(path);
            return None;
        }
        // `-0` and `-0.0` are zero.
        Some(v + 0.0)
    }
}
