//! Reads the first spool record format (version 1) into a current `RowBatch`.
//!
//! Version 1: `batch = version:u8=1 rows:u32 text_len:u32 meta:u32 ints:u32 text[text_len]
//! (start:u32 len:u32)x2 x meta  u64 x ints  row x rows`, where a row is the fields of
//! `Row` below in order (Text, Meta, Ints = a run, start:u32 len:u32; u64; u32; label =
//! len:u8 bytes; Option<T> = 0 | 1 T; f64 as its IEEE bits; usage = the nine counts as u64,
//! costs = the nine as Option<i64>, both in table order).

use std::sync::Mutex;

use super::{CodecError, Reader, VERSION_1};
use crate::row::{CostColumns, MetaPairs, RowBatch, RowRef, StoredUsage};

/// Bytes before the text: version, four counts.
pub(super) const HEADER_1: usize = 1 + 4 * 4;

/// A run of the record's text (bytes) or of one of its side vectors (entries): where it
/// starts and how long it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Run {
    pub start: u32,
    pub len: u32,
}

impl Run {
    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// A version-1 record, decoded and checked.
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub rows: Vec<Row>,
    pub text: Vec<u8>,
    pub meta: Vec<(Run, Run)>,
    pub ints: Vec<u64>,
}

impl Batch {
    fn str(&self, t: Run) -> &str {
        // Checked by `check`: on char boundaries of UTF-8 text.
        std::str::from_utf8(&self.text[t.range()]).unwrap_or_default()
    }

    fn ints(&self, r: Run) -> &[u64] {
        &self.ints[r.range()]
    }

    /// The rows as `RowRef`s, written into a batch of the current layout.
    fn convert(&self) -> RowBatch {
        let meta: Vec<Vec<(&str, &str)>> = self
            .rows
            .iter()
            .map(|r| {
                self.meta[r.metadata.range()]
                    .iter()
                    .map(|&(k, v)| (self.str(k), self.str(v)))
                    .collect()
            })
            .collect();
        let rows: Vec<RowRef<'_>> = self
            .rows
            .iter()
            .zip(&meta)
            .map(|(r, meta)| self.row_ref(r, meta))
            .collect();
        RowBatch::from_rows(&rows)
    }

    #[cfg(test)]
    fn push_str(&mut self, s: &str) -> Run {
        let start = self.text.len() as u32;
        self.text.extend_from_slice(s.as_bytes());
        Run {
            start,
            len: s.len() as u32,
        }
    }

    #[cfg(test)]
    fn push_meta(&mut self, pairs: MetaPairs<'_>) -> Run {
        let start = self.meta.len() as u32;
        for (k, v) in pairs.iter() {
            let pair = (self.push_str(k), self.push_str(v));
            self.meta.push(pair);
        }
        Run {
            start,
            len: pairs.len() as u32,
        }
    }

    #[cfg(test)]
    fn push_ints(&mut self, v: &[u64]) -> Run {
        let start = self.ints.len() as u32;
        self.ints.extend_from_slice(v);
        Run {
            start,
            len: v.len() as u32,
        }
    }
}

/// A version-1 record, as a batch of the current layout.
pub(super) fn decode(bytes: &[u8]) -> Result<RowBatch, CodecError> {
    decode_v1(bytes).map(|b| b.convert())
}

/// Reads and checks a version-1 record.
pub(super) fn decode_v1(bytes: &[u8]) -> Result<Batch, CodecError> {
    let mut r = Reader { bytes, at: 0 };
    if r.u8()? != VERSION_1 {
        return Err(CodecError("unknown version"));
    }
    let rows = r.u32()? as usize;
    let text_len = r.u32()? as usize;
    let meta_len = r.u32()? as usize;
    let ints_len = r.u32()? as usize;
    // Every count is bounded by the bytes left, so a corrupt count cannot allocate wildly.
    let left = bytes.len().saturating_sub(HEADER_1);
    if text_len > left || meta_len > left / 16 || ints_len > left / 8 || rows > left / 64 {
        return Err(CodecError("counts larger than the record"));
    }
    let text = r.take(text_len)?.to_vec();
    let mut meta = Vec::with_capacity(meta_len);
    for _ in 0..meta_len {
        meta.push((r.run()?, r.run()?));
    }
    let mut ints = Vec::with_capacity(ints_len);
    for _ in 0..ints_len {
        ints.push(r.u64()?);
    }
    let mut batch = Batch {
        rows: Vec::with_capacity(rows),
        text,
        meta,
        ints,
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

/// Writes a version-1 record: only tests write the old format, to check it is still read.
#[cfg(test)]
pub(super) fn encode_v1(batch: &Batch, out: &mut Vec<u8>) {
    let Batch {
        rows,
        text,
        meta,
        ints,
    } = batch;
    out.push(VERSION_1);
    for n in [rows.len(), text.len(), meta.len(), ints.len()] {
        put_u32(out, n as u32);
    }
    out.extend_from_slice(text);
    for &(k, v) in meta {
        put_run(out, k);
        put_run(out, v);
    }
    for &i in ints {
        out.extend_from_slice(&i.to_le_bytes());
    }
    for row in rows {
        encode_row(row, out);
    }
}

// ---------------------------------------------------------------------------------------------
// The row, field by field.
// ---------------------------------------------------------------------------------------------

/// Declares each field of a version-1 row and how it is written; generates `Row`,
/// `encode_row`, `decode_row`, `check_row` and the conversions from and to `RowRef`.
macro_rules! row_fields {
    ($($field:ident: $kind:ident),* $(,)?) => {
        /// One span as version 1 wrote it.
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        pub(super) struct Row {
            $(pub $field: ty!($kind),)*
        }

        #[cfg(test)]
        fn encode_row(row: &Row, out: &mut Vec<u8>) {
            $(put!($kind, out, row.$field);)*
        }

        fn decode_row(r: &mut Reader<'_>) -> Result<Row, CodecError> {
            Ok(Row { $($field: get!($kind, r),)* })
        }

        fn check_row(text: &str, row: &Row) -> Result<(), CodecError> {
            $(check!($kind, text, row.$field);)*
            Ok(())
        }

        impl Batch {
            /// A row of this record as a `RowRef` (its metadata pairs given, borrowed).
            fn row_ref<'b>(&'b self, row: &Row, metadata: &'b [(&'b str, &'b str)]) -> RowRef<'b> {
                RowRef {
                    $($field: as_ref!($kind, self, row.$field, metadata),)*
                    // Columns added since: as the migration fills them on stored rows.
                    ..added_columns(row.ingested_at)
                }
            }

            /// Appends a row given as a `RowRef`: how an earlier build wrote it (tests).
            #[cfg(test)]
            pub(super) fn push(&mut self, r: &RowRef<'_>) {
                let row = Row { $($field: from_ref!($kind, self, r.$field),)* };
                self.rows.push(row);
            }
        }
    };
}

/// The type of a `Row` field.
macro_rules! ty {
    (Label) => { &'static str };
    (U64) => { u64 };
    (U32) => { u32 };
    (OptU64) => { Option<u64> };
    (OptU32) => { Option<u32> };
    (OptF64) => { Option<f64> };
    (Costs) => { CostColumns };
    (Usage) => { StoredUsage };
    // Text, Meta, Ints.
    ($run:ident) => { Run };
}

/// A `Row` field as the `RowRef` field of the same name.
macro_rules! as_ref {
    (Text, $b:expr, $v:expr, $meta:expr) => {
        $b.str($v)
    };
    (Meta, $b:expr, $v:expr, $meta:expr) => {
        MetaPairs::from($meta)
    };
    (Ints, $b:expr, $v:expr, $meta:expr) => {
        $b.ints($v)
    };
    ($same:ident, $b:expr, $v:expr, $meta:expr) => {
        $v
    };
}

/// A `RowRef` field as the `Row` field of the same name, its strings and runs appended to
/// the record.
#[cfg(test)]
macro_rules! from_ref {
    (Text, $b:expr, $v:expr) => {
        $b.push_str($v)
    };
    (Label, $b:expr, $v:expr) => {
        intern($v).expect("a label")
    };
    (Meta, $b:expr, $v:expr) => {
        $b.push_meta($v)
    };
    (Ints, $b:expr, $v:expr) => {
        $b.push_ints($v)
    };
    ($same:ident, $b:expr, $v:expr) => {
        $v
    };
}

#[cfg(test)]
macro_rules! put {
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
    (Usage, $out:expr, $v:expr) => {
        put_usage($out, &$v)
    };
    // Text, Meta, Ints: a run.
    ($run:ident, $out:expr, $v:expr) => {
        put_run($out, $v)
    };
}

macro_rules! get {
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
    (Usage, $r:expr) => {
        $r.usage()?
    };
    // Text, Meta, Ints: a run.
    ($run:ident, $r:expr) => {
        $r.run()?
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
    usage: Usage,
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
    metadata: Meta,
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
    chunk_offsets: Ints,
    chunk_tokens: Ints,
    reasoning_offsets: Ints,
    reasoning_chunk_tokens: Ints,
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

/// The columns this format predates, as `migrate` fills them on stored rows.
fn added_columns<'b>(ingested_at: u32) -> RowRef<'b> {
    RowRef {
        version: crate::row::version_of_ingested_at(ingested_at),
        ..RowRef::default()
    }
}

/// Every string's run on char boundaries inside `text`, every other run inside its vector.
fn check(b: &Batch) -> Result<(), CodecError> {
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

/// A slice of valid UTF-8 between two char boundaries is valid UTF-8.
fn check_text(text: &str, t: Run) -> Result<(), CodecError> {
    let r = t.range();
    if r.end > text.len() || !text.is_char_boundary(r.start) || !text.is_char_boundary(r.end) {
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

#[cfg(test)]
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
fn put_run(out: &mut Vec<u8>, r: Run) {
    put_u32(out, r.start);
    put_u32(out, r.len);
}

#[cfg(test)]
fn put_label(out: &mut Vec<u8>, s: &'static str) {
    // Labels are short enum names ("llm", "builtin"); a longer one is a program bug.
    let len = u8::try_from(s.len()).expect("a row label longer than 255 bytes");
    out.push(len);
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
fn put_opt<const N: usize>(out: &mut Vec<u8>, v: Option<[u8; N]>) {
    match v {
        None => out.push(0),
        Some(bytes) => {
            out.push(1);
            out.extend_from_slice(&bytes);
        }
    }
}

/// The nine costs, in table order (the eight dimensions, then the total).
#[cfg(test)]
fn put_costs(out: &mut Vec<u8>, c: &CostColumns) {
    for v in c.dimensions().into_iter().chain([c.total]) {
        put_opt(out, v.map(i64::to_le_bytes));
    }
}

/// The nine usage counts, in table order, each a `u64`.
#[cfg(test)]
fn put_usage(out: &mut Vec<u8>, u: &StoredUsage) {
    for v in u.columns() {
        out.extend_from_slice(&v.to_le_bytes());
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

pub(super) fn intern(s: &str) -> Result<&'static str, CodecError> {
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

impl Reader<'_> {
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

    fn usage(&mut self) -> Result<StoredUsage, CodecError> {
        let mut v = [0; 9];
        for slot in &mut v {
            *slot = self.u64()?;
        }
        Ok(StoredUsage::from_columns(v))
    }

    fn costs(&mut self) -> Result<CostColumns, CodecError> {
        let mut v = [None; 9];
        for slot in &mut v {
            *slot = self.opt(|r| r.i64())?;
        }
        Ok(CostColumns::from_columns(v))
    }
}
