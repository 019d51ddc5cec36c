//! The walk's issue reports (all cold): wrong types, lengths, sizes, duplicate, missing and
//! unknown keys.

use simd_json::Node;

use super::*;

impl<'a> Walker<'_, 'a> {
    /// `n` (already read) is not of the expected type: skip it and record `invalid_type`.
    #[cold]
    #[inline(never)]
    pub(super) fn wrong_type(&mut self, path: &Path<'_>, expected: &str, n: Node<'a>) {
        self.skip(n);
        let received = self.received(n);
        self.issues.push(
            path,
            "invalid_type",
            format_args!("Expected {expected}, received {received}"),
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn too_long(&mut self, path: &Path<'_>, max: usize) {
        self.issues.push(
            path,
            "too_big",
            format_args!("String must contain at most {max} character(s)"),
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn too_short(&mut self, path: &Path<'_>, min: usize) {
        self.issues.push(
            path,
            "too_small",
            format_args!("String must contain at least {min} character(s)"),
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn array_size(&mut self, path: &Path<'_>, len: usize, min: usize, max: usize) {
        if len < min {
            self.issues.push(
                path,
                "too_small",
                format_args!("Array must contain at least {min} element(s)"),
            );
        } else {
            self.issues.push(
                path,
                "too_big",
                format_args!("Array must contain at most {max} element(s)"),
            );
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn below_zero(&mut self, path: &Path<'_>) {
        self.issues.push(
            path,
            "too_small",
            format_args!("Number must be greater than or equal to 0"),
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn above_safe(&mut self, path: &Path<'_>) {
        self.issues.push(
            path,
            "too_big",
            format_args!("Number must be less than or equal to {MAX_SAFE_INTEGER}"),
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn duplicate(&mut self, path: &Path<'_>, key: &str) {
        self.issues.push(
            path,
            "duplicate_key",
            format_args!("Key '{key}' appears more than once in the object"),
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn custom(&mut self, path: &Path<'_>, message: &'static str) {
        self.issues.push(path, "custom", format_args!("{message}"));
    }

    /// Marks field `bit` as seen, reporting a repeated key.
    #[inline]
    pub(super) fn once(&mut self, seen: &mut u64, bit: u32, path: &Path<'_>, key: &str) {
        let m = 1u64 << bit;
        if *seen & m != 0 {
            self.duplicate(path, key);
        }
        *seen |= m;
    }

    /// Reports required fields (bits `0..names.len()`) that were not seen, and unknown keys.
    #[inline]
    pub(super) fn finish_object(
        &mut self,
        path: &Path<'_>,
        seen: u64,
        required: &[&'static str],
        unknown: Option<Vec<&str>>,
    ) {
        let mask = (1u64 << required.len()) - 1;
        if seen & mask != mask {
            self.missing(path, seen, required);
        }
        if let Some(keys) = unknown {
            self.unrecognized(path, &keys);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn missing(&mut self, path: &Path<'_>, seen: u64, required: &[&'static str]) {
        for (bit, name) in required.iter().enumerate() {
            if seen & (1 << bit) == 0 {
                self.issues
                    .push(&path.key(name), "invalid_type", format_args!("Required"));
            }
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn unrecognized(&mut self, path: &Path<'_>, keys: &[&str]) {
        let mut list = String::new();
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                list.push_str(", ");
            }
            list.push('\'');
            list.push_str(k);
            list.push('\'');
        }
        self.issues.push(
            path,
            "unrecognized_keys",
            format_args!("Unrecognized key(s) in object: {list}"),
        );
    }

    /// An unknown key: remember it for the `unrecognized_keys` issue and skip its value.
    #[cold]
    #[inline(never)]
    pub(super) fn unknown_key(&mut self, unknown: &mut Option<Vec<&'a str>>, key: &'a str) {
        unknown.get_or_insert_with(Vec::new).push(key);
        let n = self.next();
        self.skip(n);
    }
}
