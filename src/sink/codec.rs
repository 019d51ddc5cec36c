//! The byte form of a `RowBatch` in spool and write-ahead records.
//!
//! Hand-written, little-endian, checked on the way back. A record written by one build is read
//! back by the same or a later one, after a crash or restart; the segment layer (`segment.rs`)
//! has already checked its CRC, so what can go wrong here is a program bug or a format from
//! another version, never a torn write. Decoding still checks the whole layout
//! (`RowBatch::from_parts`: every region's size, string lengths, null flags, array offsets,
//! UTF-8), because reading a batch back trusts it.
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
//! written into a version-2 batch (`codec/legacy.rs`).

use std::fmt;

use crate::row::{RowBatch, COLUMNS, REGIONS};

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

/// Whether `len` bytes starting at `bytes` could be a batch of this build's format, from its
/// header alone: a version-2 header whose column count and last bound give exactly `len`
/// bytes. What `deadletter salvage` asks before it computes a checksum over `len` bytes at
/// every offset of a damaged record. Version 1 is never taken: its header does not give its
/// length (a `0x01`, common in data, would cost a checksum of megabytes at every such byte),
/// and a spool of the builds that wrote it was replayed by the first start of a later one.
pub fn fits(bytes: &[u8], len: usize) -> bool {
    if bytes.first() != Some(&VERSION) {
        return false;
    }
    let Some(columns) = bytes.get(5..7) else {
        return false;
    };
    let columns = usize::from(u16::from_le_bytes([columns[0], columns[1]]));
    if columns == 0 || columns > COLUMNS {
        return false;
    }
    let head = HEADER + 4 * (2 * columns + 1);
    let Some(last) = bytes.get(head - 4..head) else {
        return false;
    };
    let data = u32::from_le_bytes(last.try_into().expect("4 bytes")) as usize;
    head.checked_add(data) == Some(len)
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

mod legacy;

#[cfg(test)]
mod tests {
    use super::legacy;
    use super::*;
    use crate::row::test_rows::{batch, batch_then, row};
    use crate::row::RowRef;

    fn round_trip(b: &RowBatch) -> RowBatch {
        let mut bytes = Vec::new();
        encode(b, &mut bytes);
        assert_eq!(rows_in(&bytes).unwrap() as usize, b.len());
        decode(&bytes).expect("decodes")
    }

    /// A record's header tells its length: only the length it was written with fits.
    #[test]
    fn a_header_fits_its_own_length_only() {
        let mut bytes = Vec::new();
        encode(&batch("o", "t", 3, 0), &mut bytes);
        let n = bytes.len();
        assert!(fits(&bytes, n));
        assert!(!fits(&bytes, n - 1) && !fits(&bytes, n + 1));
        assert!(!fits(&bytes[..10], n), "a header cut short");
        let mut no_columns = bytes.clone();
        no_columns[5..7].copy_from_slice(&0u16.to_le_bytes());
        assert!(!fits(&no_columns, n));
        assert!(!fits(&[0x02; 64], 64) && !fits(&[], 0));
        assert!(!fits(&[VERSION_1; 64], 64), "version 1 is never taken");
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

    /// Found by a review: an earlier build's record (fewer columns) whose `ingested_at`
    /// bounds lie past its data made `decode` panic (a slice out of range) instead of refusing
    /// it. `deadletter salvage` decodes whatever bytes pass a checksum, strings a client sent
    /// included, so one such record stopped the salvage of a whole cut.
    #[test]
    fn an_older_record_whose_bounds_pass_its_data_is_refused() {
        let columns = COLUMNS - 1;
        for rows in [0u32, 1] {
            let mut bytes = vec![VERSION];
            bytes.extend_from_slice(&rows.to_le_bytes());
            bytes.extend_from_slice(&(columns as u16).to_le_bytes());
            let data_len = 8u32;
            for i in 0..=2 * columns {
                let bound = match i {
                    i if i == 2 * crate::row::col::ingested_at => 1000,
                    i if i == 2 * crate::row::col::ingested_at + 1 => 1000 + 4 * rows,
                    i if i == 2 * columns => data_len,
                    _ => 0,
                };
                bytes.extend_from_slice(&bound.to_le_bytes());
            }
            bytes.extend_from_slice(&[0u8; 8]);
            assert!(fits(&bytes, bytes.len()));
            assert!(decode(&bytes).is_err(), "{rows} rows");
        }
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
