//! A small JSON reader for pricing files: keeps every number as the text it was written as and
//! every value's line, so prices convert exactly and errors can point at a line.
//!
//! serde_json turns numbers into `f64` unless its crate-wide `arbitrary_precision` feature is
//! on, and `2.5e-06` must become exactly 25/10^7; this reader is the smaller change. It is used
//! only when a pricing file is loaded, never on the request path.

/// One value and the line (1-based) where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub line: u32,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    /// The number exactly as written, e.g. `2.5e-06`.
    Number(String),
    String(String),
    Array(Vec<Node>),
    /// Members in file order; a repeated key is kept (callers that care refuse it).
    Object(Vec<(String, Node)>),
}

impl Value {
    /// The JSON type name, for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

impl Node {
    /// The last member named `key` of an object (as JavaScript reads duplicates), else `None`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A syntax error: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub line: u32,
    pub column: u32,
    pub reason: &'static str,
}

/// Deepest nesting accepted; pricing files are three or four levels deep.
const MAX_DEPTH: u32 = 64;

/// Parses one JSON document (a leading byte-order mark is ignored).
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut r = Reader {
        b: text.as_bytes(),
        pos: 0,
        line: 1,
        line_start: 0,
    };
    r.skip_ws();
    let node = r.value(0)?;
    r.skip_ws();
    if r.pos != r.b.len() {
        return Err(r.error("unexpected text after the JSON value"));
    }
    Ok(node)
}

/// Cursor over the document's bytes, counting lines for error positions.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    line: u32,
    /// Byte offset where the current line starts, for the column.
    line_start: usize,
}

impl Reader<'_> {
    #[cold]
    fn error(&self, reason: &'static str) -> SyntaxError {
        let col = String::from_utf8_lossy(&self.b[self.line_start..self.pos.min(self.b.len())])
            .chars()
            .count();
        SyntaxError {
            line: self.line,
            column: col as u32 + 1,
            reason,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            match c {
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    self.line_start = self.pos;
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                _ => break,
            }
        }
    }

    fn value(&mut self, depth: u32) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let line = self.line;
        let value = match self.b.get(self.pos) {
            None => return Err(self.error("unexpected end of file")),
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => Value::Number(self.number()?),
            Some(b't') => self.literal("true", Value::Bool(true))?,
            Some(b'f') => self.literal("false", Value::Bool(false))?,
            Some(b'n') => self.literal("null", Value::Null)?,
            Some(_) => return Err(self.error("expected a JSON value")),
        };
        Ok(Node { line, value })
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, SyntaxError> {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn object(&mut self, depth: u32) -> Result<Value, SyntaxError> {
        self.pos += 1; // '{'
        let mut members = Vec::new();
        self.skip_ws();
        if self.b.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.b.get(self.pos) != Some(&b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.b.get(self.pos) != Some(&b':') {
                return Err(self.error("expected ':' after the key"));
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value(depth + 1)?;
            members.push((key, v));
            self.skip_ws();
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    fn array(&mut self, depth: u32) -> Result<Value, SyntaxError> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws();
        if self.b.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.b.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    /// A number token per the JSON grammar, returned as written; errors point at its start.
    fn number(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos;
        let b = self.b;
        let digits = |p: &mut usize| {
            let s = *p;
            while *p < b.len() && b[*p].is_ascii_digit() {
                *p += 1;
            }
            *p - s
        };
        let mut p = self.pos;
        if b[p] == b'-' {
            p += 1;
        }
        let int_start = p;
        let n = digits(&mut p);
        if n == 0 || (n > 1 && b[int_start] == b'0') {
            self.pos = start;
            return Err(self.error("malformed number"));
        }
        if p < b.len() && b[p] == b'.' {
            p += 1;
            if digits(&mut p) == 0 {
                self.pos = start;
                return Err(self.error("malformed number"));
            }
        }
        if p < b.len() && (b[p] == b'e' || b[p] == b'E') {
            p += 1;
            if p < b.len() && (b[p] == b'+' || b[p] == b'-') {
                p += 1;
            }
            if digits(&mut p) == 0 {
                self.pos = start;
                return Err(self.error("malformed number"));
            }
        }
        self.pos = p;
        // The token is ASCII, so this slice is valid UTF-8.
        Ok(String::from_utf8_lossy(&b[start..p]).into_owned())
    }

    /// A string; escapes decoded, a lone surrogate becomes U+FFFD.
    fn string(&mut self) -> Result<String, SyntaxError> {
        self.pos += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Err(self.error("unterminated string"));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    // Input was a &str and escapes produce valid UTF-8, so this never replaces.
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = self.b.get(self.pos) else {
                        return Err(self.error("unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let ch = self.unicode_escape()?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.error("invalid escape in string")),
                    }
                }
                0..=0x1f => return Err(self.error("control character in string")),
                _ => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// The character of a `\u` escape with its four hex digits (after the `u`), joining surrogate pairs.
    fn unicode_escape(&mut self) -> Result<char, SyntaxError> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) {
            if self.b[self.pos..].starts_with(b"\\u") {
                let save = self.pos;
                self.pos += 2;
                let lo = self.hex4()?;
                if (0xDC00..0xE000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
                }
                self.pos = save;
            }
            return Ok('\u{fffd}');
        }
        Ok(char::from_u32(hi).unwrap_or('\u{fffd}'))
    }

    /// The four hex digits of a `\u` escape; an error points at the first one missing.
    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        match crate::hex::escape_unit(self.b.get(self.pos..).unwrap_or_default()) {
            Ok(v) => {
                self.pos += 4;
                Ok(v)
            }
            Err(at) => {
                self.pos += at;
                Err(self.error("invalid \\u escape"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: Result<Value, (u32, u32, &str)>) {
        let got = parse(text)
            .map(|n| n.value)
            .map_err(|e| (e.line, e.column, e.reason));
        assert_eq!(got, expect, "{text:?}");
    }

    fn num(s: &str) -> Value {
        Value::Number(s.to_string())
    }

    #[test]
    fn reads_values_keeping_number_text() {
        check("2.5e-06", Ok(num("2.5e-06")));
        check(" -0.0 ", Ok(num("-0.0")));
        check("\u{feff}null", Ok(Value::Null));
        check(
            r#""a\u00e9\ud83d\ude00\ud800x\n""#,
            Ok(Value::String("aé😀\u{fffd}x\n".into())),
        );
        check(
            "[true, false, {}]",
            Ok(Value::Array(vec![
                Node {
                    line: 1,
                    value: Value::Bool(true),
                },
                Node {
                    line: 1,
                    value: Value::Bool(false),
                },
                Node {
                    line: 1,
                    value: Value::Object(vec![]),
                },
            ])),
        );
    }

    #[test]
    fn errors_point_at_line_and_column() {
        check(
            "{\n  \"a\": 1,\n  \"b\": }",
            Err((3, 8, "expected a JSON value")),
        );
        check("{\"a\": 01}", Err((1, 7, "malformed number")));
        check("[1.e5]", Err((1, 2, "malformed number")));
        check("[1 2]", Err((1, 4, "expected ',' or ']'")));
        check("\"abc", Err((1, 5, "unterminated string")));
        check("[\"\\u12x4\"]", Err((1, 7, "invalid \\u escape")));
        check("[\"\\uD83D\\u00\"]", Err((1, 13, "invalid \\u escape")));
        check("{} x", Err((1, 4, "unexpected text after the JSON value")));
        check("", Err((1, 1, "unexpected end of file")));
        check(&"[".repeat(100), Err((1, 66, "nested too deeply")));
    }

    #[test]
    fn lines_are_recorded_per_value() {
        let n = parse("{\n\"a\":\n  [1,\n   2]}").unwrap();
        let a = n.get("a").unwrap();
        assert_eq!(a.line, 3);
        let Value::Array(items) = &a.value else {
            panic!()
        };
        assert_eq!(items[1].line, 4);
    }
}
