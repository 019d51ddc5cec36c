//! The byte form of a `RowBatch` in spool and write-ahead records: hand-written, little-endian, checked on the way back.
//!
//! A record written by one build is read back by the same or a later one, after a crash or
//! restart; the segment layer (`segment.rs`) has already checked its CRC, so what can go wrong
//! here is a program bug or a format from another version, never a torn write. Decoding still
//! checks the whole layout (`RowBatch::from_parts`: every region's size, string lengths, null
//! flags, array offsets, UTF-8), because reading a batch back trusts it.
//!
//! ```text
//! batch v2 = version:u8=2 rows:u32 columns:u16 bound:u32 x (2 x columns + 1) data
//! ```
//!
//! `data` is the batch's column regions as they are in memory (ClickHouse's native layout, see
//! `row/`), so writing a record is one copy and reading one back a copy and a check.
//!
//! A spool written by an earlier build is replayed after an upgrade. Columns are only ever
//! added at the end of the list, so a version-2 record with fewer columns gets the added ones
//! filled as `migrate` fills them on stored rows (`RowBatch::from_older_parts`). Version 1, the
//! first format (a fixed-size row struct per span plus a text buffer), is turned into rows and
//! written into a version-2 batch (`legacy`).

use std::fmt;
use std::sync::Mutex;

use crate::row::{CostColumns, RowBatch, RowRef, COLUMNS, REGIONS};

/// First byte of every batch this build writes.
const VERSION: u8 = 2;

/// First byte of the previous format's batches.
const VERSION_1: u8 = 1;

/// Bytes before the bounds: version, rows, columns.
const HEADER: usize = 1 + 4 + 2;

/// A record that does not decode to a valid batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub &'static str);

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad spool record: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

/// Appends `batch` to `out`. The quota ticket is process-local accounting, not data, so it is
/// not written; a decoded batch carries an empty one.
pub fn encode(batch: &RowBatch, out: &mut Vec<u8>) {
    let data = batch.data();
    out.reserve(HEADER + 4 * (REGIONS + 1) + data.len());
    out.push(VERSION);
    out.extend_from_slice(&(batch.len() as u32).to_le_bytes());
    out.extend_from_slice(&(COLUMNS as u16).to_le_bytes());
    for b in batch.bounds() {
        out.extend_from_slice(&b.to_le_bytes());
    }
    out.extend_from_slice(data);
}

/// The number of rows of an encoded batch, read from its header only.
pub fn rows_in(bytes: &[u8]) -> Result<u32, CodecError> {
    if bytes.len() < 5 || !matches!(bytes[0], VERSION | VERSION_1) {
        return Err(CodecError("unknown version or short header"));
    }
    Ok(u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]))
}

/// Rebuilds a batch, checking its whole layout.
pub fn decode(bytes: &[u8]) -> Result<RowBatch, CodecError> {
    match bytes.first() {
        Some(&VERSION) => {}
        Some(&VERSION_1) => return legacy::decode(bytes),
        _ => return Err(CodecError("unknown version")),
    }
    let mut r = Reader { bytes, at: 1 };
    let rows = r.u32()? as usize;
    let columns = usize::from(u16::from_le_bytes(r.array()?));
    if columns > COLUMNS {
        return Err(CodecError(
            "written with a column list this build does not know",
        ));
    }
    let mut bounds = vec![0u32; 2 * columns + 1];
    for b in &mut bounds {
        *b = r.u32()?;
    }
    let data = r.take(bounds[2 * columns] as usize)?.to_vec();
    if r.at != bytes.len() {
        return Err(CodecError("trailing bytes"));
    }
    if columns < COLUMNS {
        // An earlier build's record: the columns added since are filled in.
        return RowBatch::from_older_parts(rows, columns, &bounds, data).map_err(CodecError);
    }
    let bounds: [u32; REGIONS + 1] = bounds.try_into().map_err(|_| CodecError("bounds"))?;
    RowBatch::from_parts(rows, bounds, data).map_err(CodecError)
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
}

mod legacy {
    //! Version 1: `batch = version:u8=1 rows:u32 text_len:u32 meta:u32 ints:u32 text[text_len]
    //! (start:u32 len:u32)x2 x meta  u64 x ints  row x rows`, where a row is the fields of
    //! `Row` below in order (Text, Meta, Ints = a run, start:u32 len:u32; u64; u32; label =
    //! len:u8 bytes; Option<T> = 0 | 1 T; f64 as its IEEE bits).

    use super::*;

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
        fn push_meta(&mut self, pairs: &[(&str, &str)]) -> Run {
            let start = self.meta.len() as u32;
            for (k, v) in pairs {
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
        // Text, Meta, Ints.
        ($run:ident) => { Run };
    }

    /// A `Row` field as the `RowRef` field of the same name.
    macro_rules! as_ref {
        (Text, $b:expr, $v:expr, $meta:expr) => {
            $b.str($v)
        };
        (Meta, $b:expr, $v:expr, $meta:expr) => {
            $meta
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

        fn costs(&mut self) -> Result<CostColumns, CodecError> {
            let mut v = [None; 9];
            for slot in &mut v {
                *slot = self.opt(|r| r.i64())?;
            }
            Ok(CostColumns::from_columns(v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::legacy;
    use super::*;
    use crate::row::test_rows::{batch, batch_then, row};

    fn round_trip(b: &RowBatch) -> RowBatch {
        let mut bytes = Vec::new();
        encode(b, &mut bytes);
        assert_eq!(rows_in(&bytes).unwrap() as usize, b.len());
        decode(&bytes).expect("decodes")
    }

    #[test]
    fn round_trips_full_sparse_and_empty_batches() {
        for b in [
            batch_then("org-é", "trace-1", 5, 1_700_000_000_000, "last"),
            batch("o", "t", 1, 0),
            RowBatch::default(),
        ] {
            assert_eq!(round_trip(&b), b);
        }
    }

    /// A record of the first version-2 column list (76 columns, before `version` and
    /// `reported_cost`) reads back with them filled as the migration fills stored rows.
    #[test]
    fn reads_a_record_of_the_first_version_2_column_list() {
        const FIRST_COLUMNS: usize = 76;
        let mut rows = vec![
            row("org-é", "trace-1", "span-0", 1_700_000_000_000, true),
            row("org-é", "trace-1", "span-1", 1_700_000_000_001, false),
        ];
        for r in &mut rows {
            r.version = crate::row::version_of_ingested_at(r.ingested_at);
            r.reported_cost = None;
        }
        for b in [RowBatch::from_rows(&rows), RowBatch::default()] {
            let mut bytes = Vec::new();
            encode(&b, &mut bytes);
            let bound = |bytes: &[u8], i: usize| {
                let at = HEADER + 4 * i;
                u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize
            };
            let data = HEADER + 4 * (REGIONS + 1);
            let old_len = bound(&bytes, 2 * FIRST_COLUMNS);
            let mut earlier = bytes[..HEADER].to_vec();
            earlier[5..7].copy_from_slice(&(FIRST_COLUMNS as u16).to_le_bytes());
            earlier.extend_from_slice(&bytes[HEADER..HEADER + 4 * (2 * FIRST_COLUMNS + 1)]);
            earlier.extend_from_slice(&bytes[data..data + old_len]);
            assert_eq!(decode(&earlier).expect("decodes"), b);
        }
    }

    #[test]
    fn refuses_a_damaged_or_foreign_record() {
        let b = batch("o", "t", 2, 0);
        let mut good = Vec::new();
        encode(&b, &mut good);
        let data_at = HEADER + 4 * (REGIONS + 1);
        type Mutate = fn(&mut Vec<u8>, usize);
        let cases: [(&str, Mutate, &str); 6] = [
            ("version", |v, _| v[0] = 9, "unknown version"),
            (
                "truncated",
                |v, _| v.truncate(v.len() - 1),
                "record ends early",
            ),
            ("trailing", |v, _| v.push(0), "trailing bytes"),
            (
                "columns",
                |v, _| v[5..7].copy_from_slice(&(COLUMNS as u16 + 1).to_le_bytes()),
                "written with a column list this build does not know",
            ),
            (
                // The first string's length byte: org_id no longer holds its two rows.
                "layout",
                |v, d| v[d] = 0x7f,
                "a string column does not hold its rows",
            ),
            (
                "rows",
                |v, _| v[1..5].copy_from_slice(&3u32.to_le_bytes()),
                "a string column does not hold its rows",
            ),
        ];
        for (what, mutate, want) in cases {
            let mut bytes = good.clone();
            mutate(&mut bytes, data_at);
            assert_eq!(decode(&bytes).unwrap_err(), CodecError(want), "{what}");
        }
    }

    /// A record written before the last column was added reads back with that column filled
    /// as the migration fills stored rows (`reported_cost`: NULL).
    #[test]
    fn a_record_written_before_a_column_was_added_reads_back_with_it_filled() {
        let mut rows = vec![
            row("org-é", "trace-1", "span-0", 1_700_000_000_000, true),
            row("org-é", "trace-1", "span-1", 1_700_000_000_001, false),
        ];
        for r in &mut rows {
            r.version = crate::row::version_of_ingested_at(r.ingested_at);
        }
        let b = RowBatch::from_rows(&rows);
        let mut bytes = Vec::new();
        encode(&b, &mut bytes);
        // The same record as a build without `version` (the last column) wrote it.
        let last_head = b.region(REGIONS - 2);
        let old_columns = (COLUMNS - 1) as u16;
        let mut old = Vec::new();
        old.push(bytes[0]);
        old.extend_from_slice(&bytes[1..5]);
        old.extend_from_slice(&old_columns.to_le_bytes());
        for bound in &b.bounds()[..REGIONS - 1] {
            old.extend_from_slice(&bound.to_le_bytes());
        }
        old.extend_from_slice(&b.data()[..last_head.start]);
        assert_eq!(decode(&old).expect("an older record decodes"), b);
    }

    /// The rows as a version-1 record, as an earlier build spooled them.
    fn v1_record(rows: &[RowRef<'_>]) -> Vec<u8> {
        let mut v1 = legacy::Batch::default();
        for r in rows {
            v1.push(r);
        }
        let mut bytes = Vec::new();
        legacy::encode_v1(&v1, &mut bytes);
        bytes
    }

    #[test]
    fn a_record_of_the_first_format_reads_back_as_the_same_rows() {
        let mut rows = vec![
            row("org-é", "trace-1", "span-0", 1_700_000_000_000, true),
            row("org-é", "trace-1", "span-1", 1_700_000_000_001, false),
        ];
        rows[1].span_type = "embedding";
        rows[1].status = "aborted";
        rows[1].pricing_source = "a-label-from-a-later-build";
        let bytes = v1_record(&rows);
        assert_eq!(rows_in(&bytes).unwrap(), 2);
        // Columns the first format predates are filled as the migration fills stored rows.
        for r in &mut rows {
            r.version = crate::row::version_of_ingested_at(r.ingested_at);
        }
        assert_eq!(decode(&bytes).unwrap(), RowBatch::from_rows(&rows));
    }

    #[test]
    fn refuses_a_first_format_record_that_breaks_its_invariants() {
        let rows = [row("o", "t", "s", 0, true), row("o", "t", "s2", 0, false)];
        let good = v1_record(&rows);
        let v1 = legacy::decode_v1(&good).unwrap();
        let text_at = legacy::HEADER_1;
        let rows_at = legacy::HEADER_1 + v1.text.len() + v1.meta.len() * 16 + v1.ints.len() * 8;
        // (what, mutation, expected error)
        type Mutate = fn(&mut Vec<u8>, usize, usize);
        let cases: [(&str, Mutate, &str); 5] = [
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
        // A string cut inside a character: 'é' is two bytes, the row takes one.
        let mut cut = good.clone();
        let org_id_len = rows_at + 4;
        cut[org_id_len..org_id_len + 4].copy_from_slice(&1u32.to_le_bytes());
        let org_id_start = u32::from_le_bytes(cut[rows_at..rows_at + 4].try_into().unwrap());
        // Point org_id at the 'é' of "proj-é" (project_id, the next string in the text).
        let text = &v1.text;
        let e = text.iter().position(|&b| b == 0xC3).unwrap() as u32;
        assert_ne!(org_id_start, e);
        cut[rows_at..rows_at + 4].copy_from_slice(&(e + 1).to_le_bytes());
        assert_eq!(
            decode(&cut).unwrap_err(),
            CodecError("a string outside the batch text")
        );
    }
}
