//! The records still whole in the bytes a spool segment's cut kept (`<segment>.seg.cut-<ms>`).
//!
//! A segment is cut at its first bad record (`segment.rs`): the format cannot tell where the
//! record after a bad one starts, so the spool replays none of them. Here every byte of the kept
//! bytes is tried as the start of a record instead: a frame whose length fits, whose checksum
//! (CRC-32C over length and payload) holds and whose payload decodes to a valid batch (the
//! whole layout checked, as a batch read back is) is taken, and the search goes on after it.
//! Bytes in no such record are counted: the damaged record itself, and whatever else the disk
//! changed. `traceingest deadletter salvage` writes what is found as a dead-letter file, for an
//! operator to check and then `deadletter replay`.
//!
//! Rows found may already be in ClickHouse (a record confirmed before the damage): a replay
//! inserts them with their own `version`, and the table keeps one copy.

use super::codec;
use super::segment::{self, FRAME_LEN, HEADER_LEN, MAGIC};
use crate::row::RowBatch;

/// A record found: where its frame starts in the bytes given, and its batch.
#[derive(Debug)]
pub struct Found {
    pub offset: usize,
    pub batch: RowBatch,
}

/// What a search found.
#[derive(Debug, Default)]
pub struct Salvaged {
    pub found: Vec<Found>,
    /// Bytes in no record found (a segment's header not counted).
    pub lost_bytes: usize,
}

/// Searches `bytes` (a cut file's, or a whole segment's: its header is skipped) for records.
pub fn salvage(bytes: &[u8]) -> Salvaged {
    let mut at = if bytes.starts_with(&MAGIC) {
        HEADER_LEN as usize
    } else {
        0
    };
    let mut out = Salvaged::default();
    let frame = FRAME_LEN as usize;
    while at + frame <= bytes.len() {
        // The batch's header first: a checksum over a length read from the middle of a
        // payload can be megabytes long, at every offset. A header whose columns and data
        // size add up to the frame's length leaves next to nothing to chance (bytes written
        // to look like a record, in a damaged record's strings, still can: see README).
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let record = Some(len)
            .filter(|&len| at + frame + len <= bytes.len())
            .filter(|&len| codec::fits(&bytes[at + frame..], len))
            .and_then(|_| segment::frame_at(bytes, at))
            .and_then(|payload| Some((payload.len(), codec::decode(payload).ok()?)));
        match record {
            Some((len, batch)) => {
                out.found.push(Found { offset: at, batch });
                at += frame + len;
            }
            None => {
                out.lost_bytes += 1;
                at += 1;
            }
        }
    }
    // A file cut inside its segment header leaves `at` past its end.
    out.lost_bytes += bytes.len().saturating_sub(at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::clickhouse::test_support::batch;

    fn trace(b: &RowBatch) -> String {
        crate::row::test_rows::str_at(b, crate::row::col::trace_id, 0)
    }

    /// A segment of records `t0`..`t5` (one row each, `t3` of three); the offset of each
    /// record's frame.
    fn segment() -> (Vec<u8>, Vec<usize>) {
        let dir = crate::sink::test_dir::TestDir::new("salvage");
        let mut w = segment::Writer::create(dir.path(), 1).unwrap();
        let mut offsets = Vec::new();
        for (i, rows) in [1, 1, 1, 3, 1, 1].into_iter().enumerate() {
            let mut payload = Vec::new();
            codec::encode(&batch("o", &format!("t{i}"), rows, 0), &mut payload);
            offsets.push(w.append(&payload).unwrap().offset as usize);
        }
        w.sync().unwrap();
        (
            std::fs::read(segment::segment_path(dir.path(), 1)).unwrap(),
            offsets,
        )
    }

    #[test]
    fn finds_every_record_after_a_damaged_one() {
        let (mut bytes, offsets) = segment();
        // A byte of t1's payload changed: the segment is cut at t1, and t1 to t5 kept.
        bytes[offsets[1] + 20] ^= 0x40;
        let kept = &bytes[offsets[1]..];
        let got = salvage(kept);
        let traces: Vec<String> = got.found.iter().map(|f| trace(&f.batch)).collect();
        assert_eq!(traces, ["t2", "t3", "t4", "t5"]);
        assert_eq!(got.found[1].batch.len(), 3);
        assert_eq!(got.found[0].offset, offsets[2] - offsets[1]);
        assert_eq!(got.lost_bytes, offsets[2] - offsets[1], "t1's bytes");
    }

    #[test]
    fn a_whole_segment_reads_as_it_was_written() {
        let (bytes, offsets) = segment();
        let got = salvage(&bytes);
        assert_eq!(got.found.len(), 6);
        assert_eq!(got.lost_bytes, 0);
        let at: Vec<usize> = got.found.iter().map(|f| f.offset).collect();
        assert_eq!(at, offsets);
    }

    #[test]
    fn damage_in_a_length_or_a_torn_tail_loses_only_that_record() {
        let (mut bytes, offsets) = segment();
        // t2's length made larger than the file, and t5 torn half way.
        bytes[offsets[2] + 3] ^= 0x10;
        let torn = offsets[5] + (bytes.len() - offsets[5]) / 2;
        let got = salvage(&bytes[..torn]);
        let traces: Vec<String> = got.found.iter().map(|f| trace(&f.batch)).collect();
        assert_eq!(traces, ["t0", "t1", "t3", "t4"]);
        assert_eq!(
            got.lost_bytes,
            (offsets[3] - offsets[2]) + (torn - offsets[5])
        );
        // Nothing at all in zeros, or in nothing.
        assert!(salvage(&[0u8; 4096]).found.is_empty());
        assert_eq!(salvage(&[]).lost_bytes, 0);
    }

    /// Found by a review: a segment cut short inside its header (a crash while it was made)
    /// made the count of bytes in no record underflow (a panic, or a huge count in release).
    #[test]
    fn a_segment_shorter_than_its_header_has_nothing_and_counts_nothing() {
        let (bytes, _) = segment();
        for len in [8, 12, HEADER_LEN as usize] {
            let got = salvage(&bytes[..len]);
            assert!(got.found.is_empty());
            assert_eq!(got.lost_bytes, 0, "{len} bytes");
        }
    }

    /// Frames with a good checksum around payloads shaped like batches (a version-2 header:
    /// any row count, any column count up to this build's, bounds in order or not, the last
    /// one giving the payload's length; random data), amid random bytes: the search never
    /// panics, and every batch it returns decoded (checked whole). A planted record passes
    /// `fits` and the checksum by construction, as bytes a client wrote into a damaged
    /// record's strings can; what must hold is that the decoder refuses what is not a batch.
    /// (Bounds an earlier build's record gives past its data panicked in `from_older_parts`.)
    #[test]
    fn frames_around_arbitrary_batch_shaped_payloads_never_panic() {
        use crate::row::COLUMNS;
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut found = 0;
        for _ in 0..3000 {
            let columns = 1 + (next() as usize) % COLUMNS;
            let data_len = (next() as usize) % 600;
            let rows = (next() % 5) as u32;
            let mut payload = vec![2u8];
            payload.extend_from_slice(&rows.to_le_bytes());
            payload.extend_from_slice(&(columns as u16).to_le_bytes());
            let mut bound = 0u32;
            for _ in 0..2 * columns {
                bound = match next() % 8 {
                    0 => (next() % 700) as u32,
                    1 => bound + (next() % 4) as u32 * 4,
                    _ => (bound + (next() % 16) as u32).min(data_len as u32),
                };
                payload.extend_from_slice(&bound.to_le_bytes());
            }
            payload.extend_from_slice(&(data_len as u32).to_le_bytes());
            payload.extend((0..data_len).map(|_| match next() % 3 {
                0 => 0,
                1 => 1,
                _ => next() as u8,
            }));
            let mut bytes: Vec<u8> = (0..(next() % 40)).map(|_| next() as u8).collect();
            let len = (payload.len() as u32).to_le_bytes();
            let crc = crc32c::crc32c_append(crc32c::crc32c(&len), &payload);
            bytes.extend_from_slice(&len);
            bytes.extend_from_slice(&crc.to_le_bytes());
            bytes.extend_from_slice(&payload);
            bytes.extend((0..(next() % 40)).map(|_| next() as u8));
            for f in salvage(&bytes).found {
                assert!(f.batch.len() <= rows as usize);
                found += 1;
            }
        }
        // Almost none of these are batches; the odd one with no rows may be.
        assert!(found < 3000, "{found}");
    }
}
