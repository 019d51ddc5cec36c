//! The decoder, which parses the body where it lies and writes back what a failed parse
//! unescaped (`restore.rs`), against the decoder as it was before: every parse of a fresh
//! copy of the body, so the body stays as sent for the repairs and the error message. Both
//! must give the same outcome (the batch's every value, each issue, each message, byte for
//! byte) on every body; checked on generated bodies full of escapes, lone surrogates, numbers
//! out of range, whitespace between tokens and random damage.

use bumpalo::Bump;
use simd_json::{Buffers, Tape, INPUT_PADDING};

use super::{invalid_json, Decoder, BOM};
use crate::ingest::body::PaddedBody;
use crate::ingest::json::{describe, is_trailing_data, repair, Placeholder, MAX_REPAIRS};
use crate::ingest::v1::validate;
use crate::ingest::wire::Batch;
use crate::ingest::DecodeError;

/// An outcome as text: the whole batch (`Debug`), or the error.
fn render(r: Result<Batch<'_>, DecodeError>) -> String {
    match r {
        Ok(b) => format!("ok {b:?}"),
        Err(e) => format!("{e:?}"),
    }
}

/// The decoder as it was: each attempt parses a fresh padded copy of the body as sent (as
/// repaired so far).
fn decode_by_copy(input: &[u8]) -> String {
    let bom = if input.starts_with(BOM) { BOM.len() } else { 0 };
    let mut body = input[bom..].to_vec();
    let len = body.len();
    let mut placeholders = Vec::new();
    let mut buffers = Buffers::default();
    let mut repairs = 0;
    loop {
        let mut copy = body.clone();
        copy.resize(len + INPUT_PADDING, b' ');
        let base = copy.as_ptr() as usize;
        let mut tape = Tape::null();
        let e = match simd_json::fill_tape_padded(&mut copy, len, &mut buffers, &mut tape) {
            Ok(()) => {
                placeholders.sort_unstable_by_key(|p: &Placeholder| p.offset);
                let arena = Bump::new();
                let r = validate::batch(&tape.0, &arena, &placeholders, base);
                return render(r.map_err(DecodeError::Schema));
            }
            Err(e) => e,
        };
        let trailing = is_trailing_data(&tape.0, &e);
        drop(tape);
        if repairs == MAX_REPAIRS || !repair(&mut body, &e, Some(&mut placeholders)) {
            return render(Err(invalid_json(describe(&body, &e, trailing, bom))));
        }
        repairs += 1;
    }
}

/// xorshift64*: the same bodies on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.below(from.len())]
    }
}

/// Pieces of string content: escapes of every kind, lone surrogates, an escaped backslash
/// before `uD83D`, raw UTF-8.
const TEXT: &[&str] = &[
    "a",
    "tool",
    "\\n",
    "\\\"",
    "\\\\",
    "\\/",
    "\\t",
    "\\b\\f\\r",
    "\\u00e9",
    "é",
    "😀",
    "\\uD83D\\uDE00",
    "\\ud83d\\ude00",
    "\\uD83D",
    "\\uDE00",
    "\\\\uD83D",
    "\\u0001",
    "\\u0000",
    "\\u005C",
    "\\u0022",
    " ",
];

/// Number literals, in range and not.
const NUMBERS: &[&str] = &[
    "1",
    "2",
    "0",
    "1.5",
    "-1",
    "1e400",
    "-1e400",
    "18446744073709551616",
    "-9223372036854775809",
    "1e-400",
    "1E+999",
    "9007199254740993",
];

/// Whitespace between tokens.
const SPACE: &[&str] = &["", "", "", " ", "\n  ", "\t", "\r\n"];

/// Makes a JSON value.
type Gen = fn(&mut Rng) -> String;

fn string(rng: &mut Rng) -> String {
    let n = rng.below(5);
    let text: String = (0..n).map(|_| rng.pick(TEXT)).collect();
    format!("\"{text}\"")
}

/// Half the time a number the schema accepts anywhere, so that some batches are valid.
fn number(rng: &mut Rng) -> String {
    match rng.below(2) {
        0 => "1".to_owned(),
        _ => rng.pick(NUMBERS).to_owned(),
    }
}

/// `"key":value` with whitespace around the colon.
fn member(rng: &mut Rng, key: &str, value: impl FnOnce(&mut Rng) -> String) -> String {
    let value = value(rng);
    format!(
        "\"{key}\"{}:{}{value}{}",
        rng.pick(SPACE),
        rng.pick(SPACE),
        rng.pick(SPACE)
    )
}

fn span(rng: &mut Rng, i: usize) -> String {
    let mut members = vec![
        member(rng, "spanId", |_| format!("\"s{i}\"")),
        member(rng, "spanType", |_| "\"llm\"".to_owned()),
        member(rng, "name", string),
        member(rng, "startTime", number),
        member(rng, "endTime", |r| match r.below(2) {
            0 => "2".to_owned(),
            _ => number(r),
        }),
    ];
    let optional: [(&str, Gen); 6] = [
        ("provider", string),
        ("modelId", string),
        ("errorMessage", string),
        ("ttftMs", number),
        ("usage", |r| {
            format!("{{\"inputTokens\":{},\"outputTokens\":1}}", number(r))
        }),
        ("metadata", |r| format!("{{{}:{}}}", string(r), string(r))),
    ];
    for (key, value) in optional {
        if rng.below(2) == 0 {
            members.push(member(rng, key, value));
        }
    }
    format!("{{{}}}", members.join(","))
}

fn body(rng: &mut Rng) -> Vec<u8> {
    let spans: Vec<String> = (0..1 + rng.below(3)).map(|i| span(rng, i)).collect();
    let trace = format!(
        "{{{},{},{}}}",
        member(rng, "traceId", string),
        member(rng, "traceName", string),
        member(rng, "spans", |_| format!("[{}]", spans.join(",")))
    );
    let mut b = format!(
        "{}{{\"version\":\"v1\",\"traces\":[{trace}]}}{}",
        rng.pick(SPACE),
        rng.pick(SPACE)
    )
    .into_bytes();
    if rng.below(8) == 0 {
        b.splice(0..0, BOM.iter().copied());
    }
    // Damage: bytes replaced, inserted or removed anywhere, escapes and quotes included.
    const DAMAGE: &[u8] = b"\"\\ux,:}]1e\x80 ";
    for _ in 0..rng.below(4).saturating_sub(1) {
        let at = rng.below(b.len());
        let byte = DAMAGE[rng.below(DAMAGE.len())];
        match rng.below(3) {
            0 => b[at] = byte,
            1 => b.insert(at, byte),
            _ => {
                b.remove(at);
            }
        }
    }
    b
}

#[test]
fn parsing_in_place_decodes_exactly_as_parsing_a_copy() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut decoder = Decoder::new();
    let mut arena = Bump::new();
    let (mut accepted, mut repaired, mut refused) = (0, 0, 0);
    for _ in 0..4000 {
        let input = body(&mut rng);
        let want = decode_by_copy(&input);
        let mut buf = input.clone();
        arena.reset();
        let got = render(decoder.decode(PaddedBody::pad(&mut buf), &arena));
        assert_eq!(got, want, "{}", String::from_utf8_lossy(&input));
        match got.split(' ').next() {
            Some("ok") => accepted += 1,
            Some(s) if s.starts_with("InvalidJson") => refused += 1,
            _ => {}
        }
        let text = String::from_utf8_lossy(&input);
        if [
            "1e400",
            "1E+999",
            "18446744073709551616",
            "\\uD83D\"",
            "\\uDE00",
        ]
        .iter()
        .any(|t| text.contains(t))
        {
            repaired += 1;
        }
    }
    // The generator reaches every path.
    eprintln!("{accepted} accepted, {repaired} to repair, {refused} refused");
    assert!(accepted > 100, "{accepted} accepted");
    assert!(repaired > 1000, "{repaired} with something to repair");
    assert!(refused > 100, "{refused} refused as JSON");
}
