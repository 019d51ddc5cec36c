//! The byte form of a `RowBatch` in spool and write-ahead records: hand-written, little-endian, checked on the way back.
//!
//! A record written by one build is read back by the same or a later one, after a crash or
//! restart; the segment layer (`segment.rs`) has already checked its CRC, so what can go wrong
//! here is a program bug or a format from another version, never a torn write. Decoding still
//! checks every offset, every run and the UTF-8 of the text, because `RowBatch::str` trusts
//! them (`from_utf8_unchecked`).
//!
//! ```text
//! batch   = version:u8=1 rows:u32 text_len:u32 meta:u32 ints:u32
//!           text[text_len] (start:u32 len:u32)x2 x meta  u64 x ints  row x rows
//! row     = the fields of `Row` in declaration order (see `row_fields!`):
//!           Text = start:u32 len:u32; Run = start:u32 len:u32; u64; u32;
//!           label = len:u8 bytes; Option<T> = 0 | 1 T; f64 as its IEEE bits
//! ```
//!
//! Both directions are generated from one field list and destructure `Row` without `..`, so a
//! field added to `Row` and forgotten here is a compile error, not a silently empty column.

use std::fmt;
use std::sync::Mutex;

use crate::admission::UsageTicket;
use crate::row::{CostColumns, Row, RowBatch, Run, Text};

/// First byte of every encoded batch.
const VERSION: u8 = 1;

/// Bytes before the text: version, four counts.
const HEADER: usize = 1 + 4 * 4;

/// A record that does not decode to a valid batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub &'static str);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad spool record: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

/// Appends `batch` to `out`.
pub fn encode(batch: &RowBatch, out: &mut Vec<u8>) {
    // Destructured without `..`: a field added to `RowBatch` must be placed here. The quota
    // ticket is process-local accounting, not data, so it is not written; a decoded batch
    // carries an empty one.
    let RowBatch {
        rows,
        text,
        meta,
        ints,
        usage: _,
    } = batch;
    out.reserve(HEADER + text.len() + meta.len() * 16 + ints.len() * 8 + rows.len() * 512);
    out.push(VERSION);
    for n in [rows.len(), text.len(), meta.len(), ints.len()] {
        put_u32(out, n as u32);
    }
    out.extend_from_slice(text);
    for &(k, v) in meta {
        put_text(out, k);
        put_text(out, v);
    }
    for &i in ints {
        out.extend_from_slice(&i.to_le_bytes());
    }
    for row in rows {
        encode_row(row, out);
    }
}

/// The number of rows of an encoded batch, read from its header only.
pub fn rows_in(bytes: &[u8]) -> Result<u32, CodecError> {
    if bytes.len() < HEADER || bytes[0] != VERSION {
        return Err(CodecError("unknown version or short header"));
    }
    Ok(u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]))
}

/// Rebuilds a batch, checking that every string and run it refers to is inside the batch.
pub fn decode(bytes: &[u8]) -> Result<RowBatch, CodecError> {
    let mut r = Reader { bytes, at: 0 };
    if r.u8()? != VERSION {
        return Err(CodecError("unknown version"));
    }
    let rows = r.u32()? as usize;
    let text_len = r.u32()? as usize;
    let meta_len = r.u32()? as usize;
    let ints_len = r.u32()? as usize;
    // Every count is bounded by the bytes left, so a corrupt count cannot allocate wildly.
    let left = bytes.len().saturating_sub(HEADER);
    if text_len > left || meta_len > left / 16 || ints_len > left / 8 || rows > left / 64 {
        return Err(CodecError("counts larger than the record"));
    }
    let text = r.take(text_len)?.to_vec();
    let mut meta = Vec::with_capacity(meta_len);
    for _ in 0..meta_len {
        meta.push((r.text()?, r.text()?));
    }
    let mut ints = Vec::with_capacity(ints_len);
    for _ in 0..ints_len {
        ints.push(r.u64()?);
    }
    let mut batch = RowBatch {
        rows: Vec::with_capacity(rows),
        text,
        meta,
        ints,
        usage: UsageTicket::default(),
    };
    for _ in 0..rows {
        let row = decode_row(&mut r)?;
        batch.rows.push(row);
    }
    if r.at != bytes.len() {
        return Err(CodecError("trailing bytes"));
    }
    check(&batch)?;
    Ok(batch)
}

// ---------------------------------------------------------------------------------------------
// The row, field by field.
// ---------------------------------------------------------------------------------------------

/// Declares how each `Row` field is written; generates `encode_row`, `decode_row` and `check_row`.
macro_rules! row_fields {
    ($($field:ident: $kind:ident),* $(,)?) => {
        fn encode_row(row: &Row, out: &mut Vec<u8>) {
            // No `..`: a new field of `Row` must be added to the list below.
            let Row { $($field),* } = *row;
            $(put!($kind, out, $field);)*
        }

        fn decode_row(r: &mut Reader<'_>) -> Result<Row, CodecError> {
            Ok(Row { $($field: get!($kind, r),)* })
        }

        fn check_row(text: &str, row: &Row) -> Result<(), CodecError> {
            $(check!($kind, text, row.$field);)*
            Ok(())
        }
    };
}

macro_rules! put {
    (Text, $out:expr, $v:expr) => {
        put_text($out, $v)
    };
    (Run, $out:expr, $v:expr) => {
        put_run($out, $v)
    };
    (Label, $out:expr, $v:expr) => {
        put_label($out, $v)
    };
    (U64, $out:expr, $v:expr) => {
        $out.extend_from_slice(&$v.to_le_bytes())
    };
    (U32, $out:expr, $v:expr) => {
        put_u32($out, $v)
    };
    (OptU64, $out:expr, $v:expr) => {
        put_opt($out, $v.map(u64::to_le_bytes))
    };
    (OptU32, $out:expr, $v:expr) => {
        put_opt($out, $v.map(u32::to_le_bytes))
    };
    (OptF64, $out:expr, $v:expr) => {
        put_opt($out, $v.map(|f: f64| f.to_bits().to_le_bytes()))
    };
    (Costs, $out:expr, $v:expr) => {
        put_costs($out, &$v)
    };
}

macro_rules! get {
    (Text, $r:expr) => {
        $r.text()?
    };
    (Run, $r:expr) => {
        $r.run()?
    };
    (Label, $r:expr) => {
        $r.label()?
    };
    (U64, $r:expr) => {
        $r.u64()?
    };
    (U32, $r:expr) => {
        $r.u32()?
    };
    (OptU64, $r:expr) => {
        $r.opt(|r| r.u64())?
    };
    (OptU32, $r:expr) => {
        $r.opt(|r| r.u32())?
    };
    (OptF64, $r:expr) => {
        $r.opt(|r| r.u64().map(f64::from_bits))?
    };
    (Costs, $r:expr) => {
        $r.costs()?
    };
}

macro_rules! check {
    (Text, $text:expr, $v:expr) => {
        check_text($text, $v)?
    };
    // Which side vector a run indexes is checked by the caller (`check`); other kinds hold no
    // reference into the batch.
    ($other:ident, $text:expr, $v:expr) => {
        ()
    };
}

row_fields! {
    org_id: Text,
    project_id: Text,
    trace_id: Text,
    span_id: Text,
    parent_span_id: Text,
    span_type: Label,
    name: Text,
    start_time_ms: U64,
    end_time_ms: U64,
    duration_ms: U64,
    status: Label,
    error_message: Text,
    provider: Text,
    model_id: Text,
    priced_model_id: Text,
    input_tokens: U64,
    output_tokens: U64,
    total_tokens: U64,
    reasoning_tokens: U64,
    cached_input_tokens: U64,
    cache_write_input_tokens: U64,
    image_count: U64,
    web_search_count: U64,
    request_count: U64,
    ttft_ms: OptF64,
    reasoning_duration_ms: OptU64,
    model_call_ms: OptU64,
    costs: Costs,
    pricing_source: Label,
    priced_at: OptU32,
    trace_name: Text,
    agent_name: Text,
    workflow_name: Text,
    workflow_run_id: Text,
    session_id: Text,
    metadata: Run,
    input: Text,
    output: Text,
    tool_catalog: Text,
    system_fingerprint: Text,
    safety_metadata: Text,
    sources: Text,
    rate_limit_requests_limit: OptU64,
    rate_limit_requests_remaining: OptU64,
    rate_limit_requests_reset_ms: OptU64,
    rate_limit_tokens_limit: OptU64,
    rate_limit_tokens_remaining: OptU64,
    rate_limit_tokens_reset_ms: OptU64,
    chunk_offsets: Run,
    chunk_tokens: Run,
    reasoning_offsets: Run,
    reasoning_chunk_tokens: Run,
    customer_id: Text,
    customer_name: Text,
    customer_image_url: Text,
    response_time_ms: OptU64,
    effective_output_tps: OptF64,
    effective_total_tps: OptF64,
    output_tps: OptF64,
    input_tps: OptF64,
    chunk_jitter_min: OptF64,
    chunk_jitter_p10: OptF64,
    chunk_jitter_median: OptF64,
    chunk_jitter_avg: OptF64,
    chunk_jitter_p90: OptF64,
    chunk_jitter_max: OptF64,
    ingested_at: U32,
}

/// Every `Text` on a char boundary inside `text`, every run inside its vector.
fn check(b: &RowBatch) -> Result<(), CodecError> {
    let text = std::str::from_utf8(&b.text).map_err(|_| CodecError("text is not UTF-8"))?;
    for &(k, v) in &b.meta {
        check_text(text, k)?;
        check_text(text, v)?;
    }
    for row in &b.rows {
        check_row(text, row)?;
        check_run(row.metadata, b.meta.len())?;
        for run in [
            row.chunk_offsets,
            row.chunk_tokens,
            row.reasoning_offsets,
            row.reasoning_chunk_tokens,
        ] {
            check_run(run, b.ints.len())?;
        }
    }
    Ok(())
}

/// A slice of valid UTF-8 between two char boundaries is valid UTF-8: what `RowBatch::str` needs.
fn check_text(text: &str, t: Text) -> Result<(), CodecError> {
    let (start, end) = (t.start as usize, t.start as usize + t.len as usize);
    if end > text.len() || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return Err(CodecError("a string outside the batch text"));
    }
    Ok(())
}

fn check_run(r: Run, len: usize) -> Result<(), CodecError> {
    if r.start as usize + r.len as usize > len {
        return Err(CodecError("a run outside its vector"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Primitives
// ---------------------------------------------------------------------------------------------

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_text(out: &mut Vec<u8>, t: Text) {
    put_u32(out, t.start);
    put_u32(out, t.len);
}

fn put_run(out: &mut Vec<u8>, r: Run) {
    put_u32(out, r.start);
    put_u32(out, r.len);
}

fn put_label(out: &mut Vec<u8>, s: &'static str) {
    // Labels are short enum names ("llm", "builtin"); a longer one is a program bug.
    let len = u8::try_from(s.len()).expect("a row label longer than 255 bytes");
    out.push(len);
    out.extend_from_slice(s.as_bytes());
}

fn put_opt<const N: usize>(out: &mut Vec<u8>, v: Option<[u8; N]>) {
    match v {
        None => out.push(0),
        Some(bytes) => {
            out.push(1);
            out.extend_from_slice(&bytes);
        }
    }
}

fn put_costs(out: &mut Vec<u8>, c: &CostColumns) {
    let CostColumns {
        prompt,
        completion,
        request,
        image,
        web_search,
        internal_reasoning,
        cache_read,
        cache_write,
        total,
    } = *c;
    for v in [
        prompt,
        completion,
        request,
        image,
        web_search,
        internal_reasoning,
        cache_read,
        cache_write,
        total,
    ] {
        put_opt(out, v.map(i64::to_le_bytes));
    }
}

/// Every label a `Row` can hold today; others (from a later build) are interned on first sight.
const KNOWN_LABELS: &[&str] = &[
    "",
    "agent",
    "llm",
    "tool",
    "embedding",
    "other",
    "ok",
    "error",
    "aborted",
    "builtin",
    "file",
];

/// Labels read back that `KNOWN_LABELS` lacks; leaked once each, at most `MAX_INTERNED`.
static INTERNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
const MAX_INTERNED: usize = 64;

fn intern(s: &str) -> Result<&'static str, CodecError> {
    if let Some(&k) = KNOWN_LABELS.iter().find(|&&k| k == s) {
        return Ok(k);
    }
    // Only the flush thread decodes, and only for labels a newer build wrote: never contended.
    let mut interned = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&k) = interned.iter().find(|&&k| k == s) {
        return Ok(k);
    }
    if interned.len() >= MAX_INTERNED {
        return Err(CodecError("too many distinct labels"));
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    interned.push(leaked);
    Ok(leaked)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(CodecError("record ends early"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, CodecError> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, CodecError> {
        self.array().map(u64::from_le_bytes)
    }

    fn i64(&mut self) -> Result<i64, CodecError> {
        self.array().map(i64::from_le_bytes)
    }

    fn text(&mut self) -> Result<Text, CodecError> {
        Ok(Text {
            start: self.u32()?,
            len: self.u32()?,
        })
    }

    fn run(&mut self) -> Result<Run, CodecError> {
        Ok(Run {
            start: self.u32()?,
            len: self.u32()?,
        })
    }

    fn label(&mut self) -> Result<&'static str, CodecError> {
        let len = self.u8()? as usize;
        let bytes = self.take(len)?;
        let s = std::str::from_utf8(bytes).map_err(|_| CodecError("label is not UTF-8"))?;
        intern(s)
    }

    fn opt<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, CodecError>,
    ) -> Result<Option<T>, CodecError> {
        match self.u8()? {
            0 => Ok(None),
            1 => f(self).map(Some),
            _ => Err(CodecError("bad option tag")),
        }
    }

    fn costs(&mut self) -> Result<CostColumns, CodecError> {
        let mut v = [None; 9];
        for slot in &mut v {
            *slot = self.opt(|r| r.i64())?;
        }
        let [prompt, completion, request, image, web_search, internal_reasoning, cache_read, cache_write, total] =
            v;
        Ok(CostColumns {
            prompt,
            completion,
            request,
            image,
            web_search,
            internal_reasoning,
            cache_read,
            cache_write,
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::clickhouse::test_support::{batch, push_row};

    fn round_trip(b: &RowBatch) -> RowBatch {
        let mut bytes = Vec::new();
        encode(b, &mut bytes);
        assert_eq!(rows_in(&bytes).unwrap() as usize, b.len());
        decode(&bytes).expect("decodes")
    }

    #[test]
    fn round_trips_full_sparse_and_empty_batches() {
        let mut full = batch("org-é", "trace-1", 5, 1_700_000_000_000);
        push_row(&mut full, "o", "t", "last", 42, true);
        for b in [full, batch("o", "t", 1, 0), RowBatch::default()] {
            let back = round_trip(&b);
            assert_eq!(back.rows, b.rows);
            assert_eq!(back.text, b.text);
            assert_eq!(back.meta, b.meta);
            assert_eq!(back.ints, b.ints);
        }
    }

    #[test]
    fn labels_come_back_as_the_same_statics() {
        let mut b = batch("o", "t", 2, 0);
        b.rows[0].span_type = "embedding";
        b.rows[1].status = "aborted";
        b.rows[1].pricing_source = "a-label-from-a-later-build";
        let back = round_trip(&b);
        assert_eq!(back.rows[0].span_type, "embedding");
        assert_eq!(back.rows[1].status, "aborted");
        assert_eq!(back.rows[1].pricing_source, "a-label-from-a-later-build");
    }

    #[test]
    fn refuses_what_would_break_the_batch_invariants() {
        let b = batch("o", "t", 2, 0);
        let mut good = Vec::new();
        encode(&b, &mut good);
        let text_at = HEADER;
        let rows_at = HEADER + b.text.len() + b.meta.len() * 16 + b.ints.len() * 8;
        // (what, mutation, expected error)
        type Mutate = fn(&mut Vec<u8>, usize, usize);
        let cases: [(&str, Mutate, &str); 6] = [
            ("version", |v, _, _| v[0] = 9, "unknown version"),
            (
                "truncated",
                |v, _, _| v.truncate(v.len() - 1),
                "record ends early",
            ),
            ("trailing", |v, _, _| v.push(0), "trailing bytes"),
            ("text not UTF-8", |v, t, _| v[t] = 0xff, "text is not UTF-8"),
            (
                // org_id.start of the first row points past the text.
                "string outside",
                |v, _, r| v[r..r + 4].copy_from_slice(&u32::MAX.to_le_bytes()),
                "a string outside the batch text",
            ),
            (
                "row count too large",
                |v, _, _| v[1..5].copy_from_slice(&u32::MAX.to_le_bytes()),
                "counts larger than the record",
            ),
        ];
        for (what, mutate, want) in cases {
            let mut bytes = good.clone();
            mutate(&mut bytes, text_at, rows_at);
            assert_eq!(decode(&bytes).unwrap_err(), CodecError(want), "{what}");
        }
    }

    #[test]
    fn refuses_a_string_cut_inside_a_character() {
        let mut b = RowBatch::default();
        let t = b.push_str("é");
        b.rows.push(Row {
            org_id: Text {
                start: t.start,
                len: 1,
            },
            ..Row::default()
        });
        let mut bytes = Vec::new();
        encode(&b, &mut bytes);
        assert_eq!(
            decode(&bytes).unwrap_err(),
            CodecError("a string outside the batch text")
        );
    }
}
