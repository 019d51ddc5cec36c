//! Ack files: the records of a spool segment already confirmed, so a restart skips them.
//!
//! ```text
//! <id>.ack2 = entry*   entry = !index:u32le check:u32le
//!                      check = CRC-32C("TIACK2" ++ id:u64le ++ created_ms:u64le ++ index:u32le)
//! <id>.ack  = index:u32le*                  (earlier builds: read, never written, 0 ignored)
//! ```
//!
//! `created_ms` is the one in the segment's header. An ack file is appended to by the flush
//! thread (`Spool::confirm`) without fsync: losing entries only means re-inserting rows that
//! ClickHouse's `ReplacingMergeTree` collapses again. But a power cut may leave a file whose size
//! reached the disk and whose last bytes did not: zeros there, or whatever the disk held before
//! (a deleted ack file's entries, say). In the old format four zero bytes read as "record 0
//! confirmed", and a record never inserted was skipped at the next start: its rows were lost.
//! Here an entry counts only if its check holds, and the check binds it to its segment (id and
//! creation time): zeros, garbage and another segment's entries fail it but for a chance of
//! 2^-32 an entry. No entry is all zeros (the index is stored complemented), and an all-zero
//! entry is refused outright, so zeros never confirm anything.
//!
//! A failed check only ever costs a replay. Entries after the last good one (what a power cut
//! or a torn write leaves) are cut off before the file is appended to again, so they are not
//! read as damage in the middle at every later start.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Bytes of an entry of the current format.
pub const ENTRY_LEN: usize = 8;
/// Bytes of an entry of the old format (`<id>.ack`).
const OLD_ENTRY_LEN: usize = 4;
/// Goes into every check, so that no other CRC-32C of the crate (a record's) can pass for one.
const CHECK_TAG: &[u8] = b"TIACK2";

/// The segment an ack file's entries belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckKey {
    pub segment: u64,
    /// From the segment's header: a later segment of the same id (an id reused by a build
    /// that did not know this file) does not take these entries for its own.
    pub created_ms: u64,
}

/// The ack file of segment `id`, the one written.
pub fn ack_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016}.ack2"))
}

/// The ack file of segment `id` as earlier builds wrote it (bare indices): read, never written.
pub fn old_ack_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016}.ack"))
}

/// Both ack files of segment `id`: what goes when the segment goes.
pub fn ack_paths(dir: &Path, id: u64) -> [PathBuf; 2] {
    [ack_path(dir, id), old_ack_path(dir, id)]
}

/// The segment id of an ack file name of either format (`0000000000000042.ack2` -> 42).
pub fn parse_ack_name(name: &str) -> Option<u64> {
    let id = name
        .strip_suffix(".ack2")
        .or_else(|| name.strip_suffix(".ack"))?;
    if id.len() != 16 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

fn check(key: AckKey, index: u32) -> u32 {
    let mut bytes = [0u8; CHECK_TAG.len() + 20];
    let (tag, rest) = bytes.split_at_mut(CHECK_TAG.len());
    tag.copy_from_slice(CHECK_TAG);
    rest[..8].copy_from_slice(&key.segment.to_le_bytes());
    rest[8..16].copy_from_slice(&key.created_ms.to_le_bytes());
    rest[16..].copy_from_slice(&index.to_le_bytes());
    crc32c::crc32c(&bytes)
}

/// The entry that confirms record `index` of `key`'s segment.
pub fn entry(key: AckKey, index: u32) -> [u8; ENTRY_LEN] {
    let mut e = [0u8; ENTRY_LEN];
    e[..4].copy_from_slice(&(!index).to_le_bytes());
    e[4..].copy_from_slice(&check(key, index).to_le_bytes());
    e
}

/// The record an entry confirms, or `None` if it fails its check.
fn decode(key: AckKey, e: &[u8]) -> Option<u32> {
    if e.len() != ENTRY_LEN || e.iter().all(|&b| b == 0) {
        return None;
    }
    let index = !u32::from_le_bytes(e[..4].try_into().expect("4 bytes"));
    let stored = u32::from_le_bytes(e[4..].try_into().expect("4 bytes"));
    (stored == check(key, index)).then_some(index)
}

/// What the ack files of one segment say.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Acks {
    /// Records confirmed, ascending, each once.
    pub confirmed: Vec<u32>,
    /// Entries that fail their check with a good one after them: bytes the disk changed, or
    /// (old format) zero entries an earlier build appended after.
    pub bad_inside: u64,
    /// Entries after the last good one that fail their check (a torn entry counts): what a
    /// power cut or a torn write leaves, or (old format) zero entries at the end.
    pub bad_at_end: u64,
}

/// Reads both ack files of `key`'s segment (a missing one confirms nothing).
pub fn read(dir: &Path, key: AckKey) -> io::Result<Acks> {
    let mut acks = Acks::default();
    if let Some(bytes) = read_file(&ack_path(dir, key.segment))? {
        let keep = good_len(key, &bytes);
        for e in bytes[..keep].chunks_exact(ENTRY_LEN) {
            match decode(key, e) {
                Some(i) => acks.confirmed.push(i),
                None => acks.bad_inside += 1,
            }
        }
        acks.bad_at_end += (bytes.len() - keep).div_ceil(ENTRY_LEN) as u64;
    }
    if let Some(bytes) = read_file(&old_ack_path(dir, key.segment))? {
        let entries = bytes.chunks_exact(OLD_ENTRY_LEN);
        acks.bad_at_end += u64::from(!entries.remainder().is_empty());
        let indices: Vec<u32> = entries
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        // A zero entry may be a power cut's, not record 0's, and a bare index cannot tell:
        // record 0 is replayed rather than risked. Not only at the end: an earlier build cut
        // only a torn entry off before appending, so zeros a power cut left end up inside the
        // file once that build confirmed more after its restart. (This costs a replay of
        // record 0 in each segment an earlier build confirmed it in.)
        let zeros_at_end = indices.iter().rev().take_while(|&&i| i == 0).count();
        let zeros = indices.iter().filter(|&&i| i == 0).count();
        acks.bad_at_end += zeros_at_end as u64;
        acks.bad_inside += (zeros - zeros_at_end) as u64;
        acks.confirmed
            .extend(indices.iter().copied().filter(|&i| i != 0));
    }
    acks.confirmed.sort_unstable();
    acks.confirmed.dedup();
    Ok(acks)
}

fn read_file(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The end of the last entry of `bytes` that passes its check (0 if none does).
fn good_len(key: AckKey, bytes: &[u8]) -> usize {
    let whole = bytes.len() - bytes.len() % ENTRY_LEN;
    bytes[..whole]
        .chunks_exact(ENTRY_LEN)
        .rposition(|e| decode(key, e).is_some())
        .map_or(0, |i| (i + 1) * ENTRY_LEN)
}

/// Opens (creating) the ack file of `key`'s segment to append entries to. What follows its
/// last good entry is cut off first: a torn entry would shift every entry appended after it,
/// and zeros a power cut left would be read as damage in the middle at every later start.
pub fn open(dir: &Path, key: AckKey) -> io::Result<File> {
    let path = ack_path(dir, key.segment);
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    if file.metadata()?.len() > 0 {
        let bytes = std::fs::read(&path)?;
        let keep = good_len(key, &bytes);
        if keep < bytes.len() {
            file.set_len(keep as u64)?;
        }
    }
    Ok(file)
}

/// The same `len` pseudo-random bytes at every call (xorshift64): garbage for tests.
#[cfg(test)]
pub(crate) fn random_bytes(len: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::test_dir::TestDir;
    use std::io::Write;

    const KEY: AckKey = AckKey {
        segment: 1,
        created_ms: 1_700_000_000_000,
    };

    fn entries(key: AckKey, indices: &[u32]) -> Vec<u8> {
        indices.iter().flat_map(|&i| entry(key, i)).collect()
    }

    /// Each case is an ack file of the current format, as written or as a crash or the disk
    /// left it: what it confirms, and the bad entries counted inside and at the end.
    #[test]
    fn entries_that_fail_their_check_confirm_nothing() {
        let other_segment = AckKey { segment: 2, ..KEY };
        let reused_id = AckKey {
            created_ms: KEY.created_ms + 1,
            ..KEY
        };
        let garbage = random_bytes(4096);
        let cat = |parts: &[&[u8]]| parts.concat();
        // (what, the file, confirmed, bad inside, bad at the end)
        type Case = (&'static str, Vec<u8>, Vec<u32>, u64, u64);
        let cases: Vec<Case> = vec![
            ("empty", vec![], vec![], 0, 0),
            ("as written", entries(KEY, &[2, 0, 1]), vec![0, 1, 2], 0, 0),
            (
                "zeros at the end",
                cat(&[&entries(KEY, &[2]), &[0; 16]]),
                vec![2],
                0,
                2,
            ),
            ("only zeros", vec![0; 4096], vec![], 0, 512),
            (
                "a torn entry",
                cat(&[&entries(KEY, &[0, 2]), &entry(KEY, 1)[..5]]),
                vec![0, 2],
                0,
                1,
            ),
            ("garbage", garbage.clone(), vec![], 0, 512),
            (
                "garbage inside",
                cat(&[&entries(KEY, &[3]), &garbage[..80], &entries(KEY, &[4])]),
                vec![3, 4],
                10,
                0,
            ),
            (
                "another segment's entries",
                entries(other_segment, &[0, 1, 2]),
                vec![],
                0,
                3,
            ),
            (
                "a reused id's entries",
                entries(reused_id, &[0, 1, 2]),
                vec![],
                0,
                3,
            ),
            (
                "a flipped bit",
                {
                    let mut e = entries(KEY, &[0, 5]);
                    e[8] ^= 4;
                    e
                },
                vec![0],
                0,
                1,
            ),
        ];
        for (what, bytes, confirmed, bad_inside, bad_at_end) in cases {
            let dir = TestDir::new("acks-check");
            std::fs::write(ack_path(dir.path(), 1), &bytes).unwrap();
            let acks = read(dir.path(), KEY).unwrap();
            let want = Acks {
                confirmed,
                bad_inside,
                bad_at_end,
            };
            assert_eq!(acks, want, "{what}");
        }
    }

    /// No entry is all zeros, record 0's included, for any segment.
    #[test]
    fn no_entry_is_all_zeros() {
        for segment in 0..1000 {
            for created_ms in [0, 1, u64::MAX] {
                let key = AckKey {
                    segment,
                    created_ms,
                };
                assert_ne!(entry(key, 0), [0; ENTRY_LEN]);
                assert_eq!(decode(key, &entry(key, 0)), Some(0));
            }
        }
    }

    /// Earlier builds' files (bare u32le indices) are read as before (a torn entry ignored),
    /// but a zero entry, at the end or inside, is not taken for record 0; with both files,
    /// their union.
    #[test]
    fn old_ack_files_are_still_read() {
        let old =
            |indices: &[u32]| -> Vec<u8> { indices.iter().flat_map(|i| i.to_le_bytes()).collect() };
        // (what, the old file, the current one, confirmed)
        type Case = (&'static str, Vec<u8>, Vec<u8>, Vec<u32>);
        let cases: Vec<Case> = vec![
            ("old only", old(&[3, 2, 5]), vec![], vec![2, 3, 5]),
            (
                "a torn entry",
                [old(&[3, 2, 5]), vec![9]].concat(),
                vec![],
                vec![2, 3, 5],
            ),
            ("zeros at the end", old(&[2, 0, 0]), vec![], vec![2]),
            ("record 0 last", old(&[2, 0]), vec![], vec![2]),
            ("record 0 first", old(&[0, 2]), vec![], vec![2]),
            // A power cut's zeros, then entries appended after them by the earlier build.
            ("zeros inside", old(&[2, 0, 0, 3]), vec![], vec![2, 3]),
            (
                "both",
                old(&[3, 2]),
                entries(KEY, &[4, 2, 0]),
                vec![0, 2, 3, 4],
            ),
        ];
        for (what, old_bytes, new_bytes, confirmed) in cases {
            let dir = TestDir::new("acks-old");
            std::fs::write(old_ack_path(dir.path(), 1), &old_bytes).unwrap();
            if !new_bytes.is_empty() {
                std::fs::write(ack_path(dir.path(), 1), &new_bytes).unwrap();
            }
            assert_eq!(
                read(dir.path(), KEY).unwrap().confirmed,
                confirmed,
                "{what}"
            );
        }
    }

    /// What follows the last good entry is cut off before the file is appended to, so the
    /// entries appended read back whole and nothing is left to count as damage.
    #[test]
    fn open_cuts_what_follows_the_last_good_entry() {
        let tails: [&[u8]; 4] = [&[], &[0; 13], &[7], &entry(AckKey { segment: 3, ..KEY }, 1)];
        for tail in tails {
            let dir = TestDir::new("acks-open");
            let path = ack_path(dir.path(), 1);
            std::fs::write(&path, [&entries(KEY, &[4])[..], tail].concat()).unwrap();
            let mut f = open(dir.path(), KEY).unwrap();
            f.write_all(&entry(KEY, 6)).unwrap();
            drop(f);
            let acks = read(dir.path(), KEY).unwrap();
            assert_eq!(
                acks,
                Acks {
                    confirmed: vec![4, 6],
                    ..Acks::default()
                },
                "tail {tail:?}"
            );
        }
        // Nothing good at all: cut to nothing.
        let dir = TestDir::new("acks-open-none");
        std::fs::write(ack_path(dir.path(), 1), [0u8; 24]).unwrap();
        drop(open(dir.path(), KEY).unwrap());
        assert_eq!(std::fs::metadata(ack_path(dir.path(), 1)).unwrap().len(), 0);
    }

    #[test]
    fn ack_names() {
        let dir = Path::new("/d");
        assert_eq!(ack_path(dir, 42), Path::new("/d/0000000000000042.ack2"));
        assert_eq!(old_ack_path(dir, 42), Path::new("/d/0000000000000042.ack"));
        assert_eq!(parse_ack_name("0000000000000042.ack2"), Some(42));
        assert_eq!(parse_ack_name("0000000000000042.ack"), Some(42));
        assert_eq!(parse_ack_name("42.ack2"), None);
        assert_eq!(parse_ack_name("0000000000000042.ack3"), None);
    }
}
