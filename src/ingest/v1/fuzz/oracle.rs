//! The fuzz oracle: an independent reading of the v1 contract, JSON parser and schema rules.
//!
//! It shares no code with `decode.rs`/`validate/`: it parses JSON by recursive descent into a
//! tree that keeps repeated keys, reads numbers as JavaScript does (correctly rounded doubles,
//! infinite on overflow), decodes `\u` escapes to UTF-16 and replaces lone surrogates with
//! U+FFFD (`String::from_utf16_lossy`), and checks every rule of the schema table directly on
//! that tree. Slow and simple on purpose: it is only ever compared with the decoder.

/// The oracle refuses nesting past this; the decoder's parser stops at 1024 levels.
const ORACLE_MAX_DEPTH: usize = 1100;

/// A JSON value as the oracle reads it: repeated keys kept in order.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// Why the oracle could not parse a body (shown in a failing property's message).
#[derive(Debug)]
#[allow(dead_code)] // The fields are read through `Debug` only.
pub(super) enum ParseError {
    NotUtf8,
    /// At this byte offset.
    Syntax(usize),
    TooDeep,
}

pub(super) fn parse(data: &[u8]) -> Result<J, ParseError> {
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let text = std::str::from_utf8(data).map_err(|_| ParseError::NotUtf8)?;
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(ParseError::Syntax(p.i));
    }
    Ok(v)
}

struct Parser<'s> {
    s: &'s [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn err<T>(&self) -> Result<T, ParseError> {
        Err(ParseError::Syntax(self.i))
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<J, ParseError> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') | Some(b'[') if depth >= ORACLE_MAX_DEPTH => Err(ParseError::TooDeep),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.eat(b'}') {
                    return Ok(J::Obj(members));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return self.err();
                    }
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b':') {
                        return self.err();
                    }
                    let v = self.value(depth + 1)?;
                    members.push((key, v));
                    self.ws();
                    if self.eat(b',') {
                        continue;
                    }
                    if self.eat(b'}') {
                        return Ok(J::Obj(members));
                    }
                    return self.err();
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']') {
                    return Ok(J::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(b',') {
                        continue;
                    }
                    if self.eat(b']') {
                        return Ok(J::Arr(items));
                    }
                    return self.err();
                }
            }
            Some(b'"') => Ok(J::Str(self.string()?)),
            Some(b't') => self.literal(b"true", J::Bool(true)),
            Some(b'f') => self.literal(b"false", J::Bool(false)),
            Some(b'n') => self.literal(b"null", J::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.err(),
        }
    }

    fn literal(&mut self, word: &[u8], v: J) -> Result<J, ParseError> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            self.err()
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, read as a double.
    fn number(&mut self) -> Result<J, ParseError> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.s.get(p.i).is_some_and(u8::is_ascii_digit) {
                p.i += 1;
            }
            p.i > s
        };
        self.eat(b'-');
        if self.eat(b'0') {
        } else if !digits(self) {
            return self.err();
        }
        if self.eat(b'.') && !digits(self) {
            return self.err();
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if !digits(self) {
                return self.err();
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII");
        Ok(J::Num(
            text.parse().expect("a JSON number is a Rust float literal"),
        ))
    }

    /// A string literal: UTF-16 code units from raw text and escapes, then lossy decoding.
    fn string(&mut self) -> Result<String, ParseError> {
        self.i += 1;
        let mut units: Vec<u16> = Vec::new();
        loop {
            let Some(&b) = self.s.get(self.i) else {
                return self.err();
            };
            match b {
                b'"' => {
                    self.i += 1;
                    return Ok(String::from_utf16_lossy(&units));
                }
                b'\\' => {
                    let Some(&e) = self.s.get(self.i + 1) else {
                        return self.err();
                    };
                    self.i += 2;
                    let unit = match e {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => {
                            let hex = self.s.get(self.i..self.i + 4).unwrap_or_default();
                            if hex.len() != 4 || !hex.iter().all(u8::is_ascii_hexdigit) {
                                return self.err();
                            }
                            self.i += 4;
                            let hex = std::str::from_utf8(hex).expect("ASCII");
                            u16::from_str_radix(hex, 16).expect("four hex digits")
                        }
                        _ => return self.err(),
                    };
                    units.push(unit);
                }
                0x00..=0x1f => return self.err(),
                _ => {
                    // The whole input is valid UTF-8: take one character.
                    let rest = std::str::from_utf8(&self.s[self.i..]).expect("checked");
                    let c = rest.chars().next().expect("not empty");
                    let mut buf = [0u16; 2];
                    units.extend_from_slice(c.encode_utf16(&mut buf));
                    self.i += c.len_utf8();
                }
            }
        }
    }
}

pub(super) fn depth(v: &J) -> usize {
    match v {
        J::Arr(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        J::Obj(members) => 1 + members.iter().map(|(_, v)| depth(v)).max().unwrap_or(0),
        _ => 0,
    }
}

/// The largest integer a double holds exactly (2^53 - 1), the schema's bound on counts.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// Every rule of the contract's schema, checked on the tree; returns what is wrong (empty when
/// the batch is valid). Written from the contract's tables, not from `validate.rs`.
pub(super) fn violations(root: &J) -> Vec<String> {
    let mut v = Vec::new();
    check_batch(root, &mut v);
    v
}

/// The members of an object if it is one with no repeated key and only `allowed` keys, and
/// with every `required` key.
fn strict<'j>(
    j: &'j J,
    allowed: &[&str],
    required: &[&str],
    at: &str,
    v: &mut Vec<String>,
) -> Option<&'j [(String, J)]> {
    let J::Obj(members) = j else {
        v.push(format!("{at}: not an object"));
        return None;
    };
    for (i, (k, _)) in members.iter().enumerate() {
        if members[..i].iter().any(|(p, _)| p == k) {
            v.push(format!("{at}.{k}: repeated"));
        }
        if !allowed.contains(&k.as_str()) {
            v.push(format!("{at}.{k}: unknown"));
        }
    }
    for r in required {
        if !members.iter().any(|(k, _)| k == r) {
            v.push(format!("{at}.{r}: missing"));
        }
    }
    Some(members)
}

fn get<'j>(members: &'j [(String, J)], key: &str) -> Option<&'j J> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn utf16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// A string of `min..=max` UTF-16 units (when present).
fn text<'j>(
    j: Option<&'j J>,
    min: usize,
    max: usize,
    at: &str,
    v: &mut Vec<String>,
) -> Option<&'j str> {
    match j? {
        J::Str(s) if (min..=max).contains(&utf16(s)) => Some(s),
        _ => {
            v.push(format!("{at}: not a string of {min}..={max}"));
            None
        }
    }
}

/// An integer 0..=2^53-1 (when present).
fn integer(j: Option<&J>, at: &str, v: &mut Vec<String>) -> Option<f64> {
    match j? {
        J::Num(n) if n.is_finite() && n.fract() == 0.0 && *n >= 0.0 && *n <= MAX_SAFE => Some(*n),
        _ => {
            v.push(format!("{at}: not an integer 0..=2^53-1"));
            None
        }
    }
}

/// A finite number >= 0 (when present).
fn non_negative(j: Option<&J>, at: &str, v: &mut Vec<String>) {
    if let Some(j) = j {
        if !matches!(j, J::Num(n) if n.is_finite() && *n >= 0.0) {
            v.push(format!("{at}: not a number >= 0"));
        }
    }
}

fn one_of(j: Option<&J>, options: &[&str], at: &str, v: &mut Vec<String>) {
    if let Some(j) = j {
        if !matches!(j, J::Str(s) if options.contains(&s.as_str())) {
            v.push(format!("{at}: not one of {options:?}"));
        }
    }
}

fn metadata(j: Option<&J>, at: &str, v: &mut Vec<String>) {
    let Some(j) = j else { return };
    let J::Obj(members) = j else {
        v.push(format!("{at}: not an object"));
        return;
    };
    if members.len() > 64 {
        v.push(format!("{at}: more than 64 keys"));
    }
    for (i, (k, val)) in members.iter().enumerate() {
        if members[..i].iter().any(|(p, _)| p == k) {
            v.push(format!("{at}.{k}: repeated"));
        }
        if utf16(k) > 128 {
            v.push(format!("{at}.{k}: key too long"));
        }
        text(Some(val), 0, 1024, &format!("{at}.{k}"), v);
    }
}

fn int_array(j: Option<&J>, at: &str, v: &mut Vec<String>) {
    let Some(j) = j else { return };
    let J::Arr(items) = j else {
        v.push(format!("{at}: not an array"));
        return;
    };
    if items.len() > 200 {
        v.push(format!("{at}: more than 200 items"));
    }
    for (i, item) in items.iter().enumerate() {
        integer(Some(item), &format!("{at}.{i}"), v);
    }
}

fn check_batch(j: &J, v: &mut Vec<String>) {
    let Some(m) = strict(j, &["version", "traces"], &["version", "traces"], "", v) else {
        return;
    };
    if let Some(version) = get(m, "version") {
        if *version != J::Str("v1".into()) {
            v.push("version: not \"v1\"".into());
        }
    }
    match get(m, "traces") {
        Some(J::Arr(traces)) => {
            if !(1..=1000).contains(&traces.len()) {
                v.push("traces: not 1..=1000 items".into());
            }
            for (i, t) in traces.iter().enumerate() {
                check_trace(t, &format!("traces.{i}"), v);
            }
        }
        Some(_) => v.push("traces: not an array".into()),
        None => {}
    }
}

fn check_trace(j: &J, at: &str, v: &mut Vec<String>) {
    const KEYS: &[&str] = &[
        "traceId",
        "spans",
        "traceName",
        "agentName",
        "workflowName",
        "workflowRunId",
        "sessionId",
        "metadata",
        "customer",
    ];
    let Some(m) = strict(j, KEYS, &["traceId", "spans"], at, v) else {
        return;
    };
    let f = |k: &str| format!("{at}.{k}");
    text(get(m, "traceId"), 1, 128, &f("traceId"), v);
    let trace_name = text(get(m, "traceName"), 0, 256, &f("traceName"), v);
    let agent_name = text(get(m, "agentName"), 0, 256, &f("agentName"), v);
    let workflow_name = text(get(m, "workflowName"), 0, 256, &f("workflowName"), v);
    let workflow_run_id = text(get(m, "workflowRunId"), 0, 128, &f("workflowRunId"), v);
    text(get(m, "sessionId"), 0, 128, &f("sessionId"), v);
    metadata(get(m, "metadata"), &f("metadata"), v);
    let filled = |s: Option<&str>| s.is_some_and(|s| !s.is_empty());
    if !filled(trace_name) && !filled(agent_name) {
        v.push(format!("{at}: neither traceName nor agentName"));
    }
    if filled(workflow_name) != filled(workflow_run_id) {
        v.push(format!(
            "{at}: workflowName without workflowRunId or the reverse"
        ));
    }
    if let Some(c) = get(m, "customer") {
        if let Some(cm) = strict(c, &["id", "name", "imageUrl"], &["id"], &f("customer"), v) {
            text(get(cm, "id"), 1, 128, &f("customer.id"), v);
            text(get(cm, "name"), 0, 256, &f("customer.name"), v);
            if let Some(url) = text(get(cm, "imageUrl"), 0, 2048, &f("customer.imageUrl"), v) {
                if !absolute_url(url) {
                    v.push(format!("{at}.customer.imageUrl: not an absolute URL"));
                }
            }
        }
    }
    match get(m, "spans") {
        Some(J::Arr(spans)) => {
            if !(1..=2000).contains(&spans.len()) {
                v.push(format!("{at}.spans: not 1..=2000 items"));
            }
            for (i, s) in spans.iter().enumerate() {
                check_span(s, &format!("{at}.spans.{i}"), v);
            }
        }
        Some(_) => v.push(format!("{at}.spans: not an array")),
        None => {}
    }
}

/// RFC 3986 `scheme ":" rest` with a non-empty rest and no whitespace.
fn absolute_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
        && !s.chars().any(char::is_whitespace)
}

pub(super) const USAGE_KEYS: [&str; 9] = [
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "reasoningTokens",
    "cachedInputTokens",
    "cacheWriteInputTokens",
    "imageCount",
    "webSearchCount",
    "requestCount",
];
pub(super) const RATE_LIMIT_KEYS: [&str; 6] = [
    "requestsLimit",
    "requestsRemaining",
    "requestsResetMs",
    "tokensLimit",
    "tokensRemaining",
    "tokensResetMs",
];
pub(super) const JITTER_KEYS: [&str; 6] = ["min", "p10", "median", "avg", "p90", "max"];
pub(super) const INT_ARRAYS: [&str; 4] = [
    "chunkOffsets",
    "chunkTokens",
    "reasoningOffsets",
    "reasoningChunkTokens",
];
pub(super) const TPS: [&str; 4] = [
    "effectiveOutputTps",
    "effectiveTotalTps",
    "outputTps",
    "inputTps",
];
/// Optional span strings and their length limits.
const SPAN_TEXT: [(&str, usize, usize); 11] = [
    ("parentSpanId", 1, 128),
    ("errorMessage", 0, 8192),
    ("provider", 0, 128),
    ("modelId", 0, 256),
    ("input", 0, 1_000_000),
    ("output", 0, 1_000_000),
    ("toolCatalog", 0, 1_000_000),
    ("sources", 0, 1_000_000),
    ("systemFingerprint", 0, 256),
    ("safetyMetadata", 0, 16384),
    ("name", 0, 512),
];

fn check_span(j: &J, at: &str, v: &mut Vec<String>) {
    let mut keys = vec![
        "spanId",
        "spanType",
        "startTime",
        "endTime",
        "status",
        "usage",
        "ttftMs",
        "reasoningDurationMs",
        "modelCallMs",
        "rateLimit",
        "metadata",
        "responseTimeMs",
        "chunkJitter",
    ];
    keys.extend(INT_ARRAYS);
    keys.extend(TPS);
    keys.extend(SPAN_TEXT.iter().map(|(k, _, _)| *k));
    let required = ["spanId", "spanType", "name", "startTime", "endTime"];
    let Some(m) = strict(j, &keys, &required, at, v) else {
        return;
    };
    let f = |k: &str| format!("{at}.{k}");
    text(get(m, "spanId"), 1, 128, &f("spanId"), v);
    one_of(
        get(m, "spanType"),
        &["agent", "llm", "tool", "embedding", "other"],
        &f("spanType"),
        v,
    );
    one_of(
        get(m, "status"),
        &["ok", "error", "aborted"],
        &f("status"),
        v,
    );
    for (k, min, max) in SPAN_TEXT {
        text(get(m, k), min, max, &f(k), v);
    }
    let start = integer(get(m, "startTime"), &f("startTime"), v);
    let end = integer(get(m, "endTime"), &f("endTime"), v);
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            v.push(format!("{at}: endTime before startTime"));
        }
    }
    for k in ["reasoningDurationMs", "modelCallMs", "responseTimeMs"] {
        integer(get(m, k), &f(k), v);
    }
    non_negative(get(m, "ttftMs"), &f("ttftMs"), v);
    for k in TPS {
        non_negative(get(m, k), &f(k), v);
    }
    for k in INT_ARRAYS {
        int_array(get(m, k), &f(k), v);
    }
    metadata(get(m, "metadata"), &f("metadata"), v);
    for (k, names) in [
        ("usage", &USAGE_KEYS[..]),
        ("rateLimit", &RATE_LIMIT_KEYS[..]),
    ] {
        if let Some(o) = get(m, k) {
            if let Some(om) = strict(o, names, &[], &f(k), v) {
                for n in names {
                    integer(get(om, n), &format!("{at}.{k}.{n}"), v);
                }
            }
        }
    }
    if let Some(o) = get(m, "chunkJitter") {
        if let Some(om) = strict(o, &JITTER_KEYS, &JITTER_KEYS, &f("chunkJitter"), v) {
            for n in JITTER_KEYS {
                non_negative(get(om, n), &format!("{at}.chunkJitter.{n}"), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oracle_reads_json_as_the_contract_says() {
        let tree = parse(br#"{"a":"\uD83D\u0000","a":[1e400,-0,0.5]}"#).unwrap();
        assert_eq!(
            tree,
            J::Obj(vec![
                ("a".into(), J::Str("\u{FFFD}\0".into())),
                (
                    "a".into(),
                    J::Arr(vec![J::Num(f64::INFINITY), J::Num(-0.0), J::Num(0.5)])
                ),
            ])
        );
        for bad in [
            &b"{\"a\":01}"[..],
            b"[1,]",
            b"\"\x01\"",
            b"[] x",
            b"\"\\uD8\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
