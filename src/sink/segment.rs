//! Append-only segment files of checksummed records.
//!
//! This is the one on-disk layout of the spool and the write-ahead log:
//!
//! ```text
//! segment = "TISPOOL1" created_ms:u64le  record*
//! record  = len:u32le crc:u32le payload[len]      crc = CRC-32C(len bytes ++ payload)
//! ```
//!
//! A segment is only ever appended to, by one writer, and deleted whole once every record in it
//! is confirmed (see `spool/`). A crash can leave a torn record at the end of the newest
//! segment: `scan` finds the first record whose frame is short or whose checksum fails and
//! truncates the file there, so a torn write costs the record being written (which nobody was
//! told is safe) and never the start-up. Records are never rewritten in place, so a bad
//! checksum anywhere but the tail means the disk lied; a power cut may also leave a group of
//! records not yet fsynced with holes. The two look alike, and the format cannot find the
//! record after a bad one: the file is cut at the first bad record either way, but the bytes
//! cut are first copied to a new `<segment>.seg.cut-<ms>` for an operator (unless they are all
//! zeros: space allocated and never written), and the caller counts the cut.
//!
//! Beside each segment, its ack file lists the records already confirmed (`acks.rs`).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::clock;

/// Identifies the format; a change of layout gets a new magic.
pub const MAGIC: [u8; 8] = *b"TISPOOL1";
/// Magic plus the creation time.
pub const HEADER_LEN: u64 = 16;
/// Length and checksum before each payload.
pub const FRAME_LEN: u64 = 8;
/// Larger than any batch a 1 GiB body could make; a bigger length is a corrupt frame.
pub const MAX_RECORD: u32 = 1 << 30;

/// Where one record is: what a reader needs to find it and an ack needs to name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPos {
    pub segment: u64,
    /// 0-based index of the record in its segment.
    pub index: u32,
    /// Offset of the record's frame in the file.
    pub offset: u64,
    /// Frame plus payload bytes.
    pub len: u64,
}

impl RecordPos {
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

pub fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:016}.seg"))
}

/// The id of a segment file name (`0000000000000042.seg` -> 42).
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let id = name.strip_suffix(".seg")?;
    if id.len() != 16 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

fn checksum(len: [u8; 4], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&len), payload)
}

/// Makes a new directory entry durable (a new segment must survive a power cut once fsynced).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Appends records to the newest segment.
#[derive(Debug)]
pub struct Writer {
    file: File,
    id: u64,
    /// Bytes in the file, header included: the next record's offset.
    len: u64,
    records: u32,
    created_ms: u64,
    /// Frame + payload of the record being written, reused.
    scratch: Vec<u8>,
    /// A failed append could not be cut back off the file: its bytes lie where the next
    /// record would go, so nothing may be appended to this segment again.
    torn: bool,
}

impl Writer {
    /// Creates segment `id` in `dir` and makes it durable (file and directory entry). If that
    /// fails once the file exists (no room for the header, an EIO on the fsync), the file is
    /// removed again: left there, it would make every later create of `id` fail (EEXIST).
    pub fn create(dir: &Path, id: u64) -> io::Result<Writer> {
        let path = segment_path(dir, id);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&path)?;
        let created_ms = clock::now_ms();
        let made_durable = (|| {
            #[cfg(test)]
            crate::sink::faults::check(crate::sink::faults::Site::SegmentCreate, libc::ENOSPC)?;
            let mut header = [0u8; HEADER_LEN as usize];
            header[..8].copy_from_slice(&MAGIC);
            header[8..].copy_from_slice(&created_ms.to_le_bytes());
            file.write_all(&header)?;
            file.sync_all()?;
            sync_dir(dir)
        })();
        if let Err(e) = made_durable {
            if let Err(re) = std::fs::remove_file(&path) {
                // Harmless at the next start (a segment without records is removed), and the
                // write-ahead thread's next roll takes another id.
                tracing::warn!(path = %path.display(), error = %re, "cannot remove a segment file whose creation failed");
            }
            return Err(e);
        }
        Ok(Writer {
            file,
            id,
            len: HEADER_LEN,
            records: 0,
            created_ms,
            scratch: Vec::new(),
            torn: false,
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bytes in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    pub fn created_ms(&self) -> u64 {
        self.created_ms
    }

    /// Appends one record (not yet fsynced). On failure the file is cut back to where it was,
    /// so a failed append never leaves half a record before the next one.
    /// Whether a failed append could not be cut back: the segment takes no more records.
    pub fn is_torn(&self) -> bool {
        self.torn
    }

    #[cfg(test)]
    fn write_with_faults(&mut self) -> io::Result<()> {
        use crate::sink::faults::{check, Site};
        check(Site::SegmentWrite, libc::ENOSPC)?;
        if check(Site::SegmentTorn, libc::EIO).is_err() {
            // Half the record reaches the file; the cut-back fails next (armed twice).
            self.file
                .write_all(&self.scratch[..self.scratch.len() / 2])?;
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        self.file.write_all(&self.scratch)
    }

    pub fn append(&mut self, payload: &[u8]) -> io::Result<RecordPos> {
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|&l| l <= MAX_RECORD)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "record over 1 GiB"))?;
        let len = len.to_le_bytes();
        self.scratch.clear();
        self.scratch.extend_from_slice(&len);
        self.scratch
            .extend_from_slice(&checksum(len, payload).to_le_bytes());
        self.scratch.extend_from_slice(payload);
        if self.torn {
            return Err(io::Error::other(
                "an earlier failed append could not be cut back off this segment",
            ));
        }
        #[cfg(test)]
        let written = self.write_with_faults();
        #[cfg(not(test))]
        let written = self.file.write_all(&self.scratch);
        if let Err(e) = written {
            #[cfg(test)]
            let cut = crate::sink::faults::check(crate::sink::faults::Site::SegmentTorn, libc::EIO)
                .and_then(|()| self.file.set_len(self.len));
            #[cfg(not(test))]
            let cut = self.file.set_len(self.len);
            if cut.is_err() {
                self.torn = true;
            }
            return Err(e);
        }
        let pos = RecordPos {
            segment: self.id,
            index: self.records,
            offset: self.len,
            len: self.scratch.len() as u64,
        };
        self.len += pos.len;
        self.records += 1;
        if self.scratch.capacity() > 4 << 20 {
            self.scratch = Vec::new();
        }
        Ok(pos)
    }

    /// Makes every record appended so far durable (`fdatasync`).
    pub fn sync(&self) -> io::Result<()> {
        #[cfg(test)]
        crate::sink::faults::check(crate::sink::faults::Site::SegmentSync, libc::EIO)?;
        self.file.sync_data()
    }

    /// Cuts the file back to `len` bytes (the end of a record): undoes appends whose group
    /// could not be made durable, so they are not replayed after a restart.
    pub fn truncate(&mut self, len: u64, records: u32) -> io::Result<()> {
        self.file.set_len(len)?;
        self.len = len;
        self.records = records;
        Ok(())
    }

    /// Records in the file.
    pub fn records(&self) -> u32 {
        self.records
    }
}

/// What `scan` found in a segment, after cutting off a torn tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    pub created_ms: u64,
    pub records: u32,
    /// Rows in all records (from each payload's header; see `codec::rows_in`).
    pub rows: u64,
    /// Bytes kept: the end of the last good record.
    pub len: u64,
    /// Bytes cut off the end (a torn write, or corruption).
    pub discarded: u64,
    /// Where the bytes cut off were kept (`<segment>.cut-<ms>`), unless they were all zeros
    /// (space a file system allocated but never wrote) or could not be copied (`Err`, logged
    /// by the caller: the good records before them are replayed anyway).
    pub kept: Option<Result<PathBuf, String>>,
}

/// Why a segment cannot be used at all.
#[derive(Debug)]
pub enum ScanError {
    Io(io::Error),
    /// Not a segment of this format: left alone and reported, never truncated.
    NotASegment,
}

impl From<io::Error> for ScanError {
    fn from(e: io::Error) -> ScanError {
        ScanError::Io(e)
    }
}

/// Checks every record of a segment and truncates it after the last good one.
/// `rows_in(index, payload)` says how many rows of a record to count.
pub fn scan(path: &Path, mut rows_in: impl FnMut(u32, &[u8]) -> u64) -> Result<Scanned, ScanError> {
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    let file_len = file.metadata()?.len();
    let mut header = [0u8; HEADER_LEN as usize];
    file.read_exact_at(&mut header[..file_len.min(HEADER_LEN) as usize], 0)?;
    if file_len < HEADER_LEN || header == [0; HEADER_LEN as usize] && all_zeros(&file, 0, file_len)?
    {
        // Torn while being created (short, or all zeros: its size reached the disk but not
        // its bytes): nothing was ever written to it, as `Writer::create` fsyncs the header
        // before it returns. Start it over.
        return Ok(Scanned {
            created_ms: clock::now_ms(),
            records: 0,
            rows: 0,
            len: 0,
            discarded: file_len,
            kept: None,
        });
    }
    if header[..8] != MAGIC {
        return Err(ScanError::NotASegment);
    }
    let created_ms = u64::from_le_bytes(header[8..].try_into().expect("8 bytes"));
    let mut reader = io::BufReader::with_capacity(1 << 20, &file);
    io::Seek::seek(&mut reader, io::SeekFrom::Start(HEADER_LEN))?;
    let (mut at, mut records, mut rows) = (HEADER_LEN, 0u32, 0u64);
    let mut payload = Vec::new();
    while let Some(len) = read_frame(&mut reader, file_len - at, &mut payload)? {
        at += FRAME_LEN + len as u64;
        rows += rows_in(records, &payload);
        records += 1;
    }
    let discarded = file_len - at;
    let mut kept = None;
    if discarded > 0 {
        // A write torn by a crash and a record the disk changed look alike here (a group of
        // records not yet fsynced may reach the disk with holes), and the format cannot find
        // the record after a bad one: what is cut is kept for an operator either way.
        if !all_zeros(&file, at, file_len)? {
            kept = Some(keep_cut(&file, path, at, file_len).map_err(|e| e.to_string()));
        }
        if let Err(e) = file.set_len(at) {
            // Not cut: the next start copies the same bytes again, so this copy goes.
            if let Some(Ok(copy)) = &kept {
                let _ = std::fs::remove_file(copy);
            }
            return Err(e.into());
        }
        // Cut: the copy stays whether or not the cut reaches the disk (a second copy of the
        // same bytes is harmless, a lost one is not).
        file.sync_all()?;
    }
    Ok(Scanned {
        created_ms,
        records,
        rows,
        len: at,
        discarded,
        kept,
    })
}

/// Whether `file[at..end]` is all zeros.
fn all_zeros(file: &File, at: u64, end: u64) -> io::Result<bool> {
    let mut buf = vec![0u8; 1 << 16];
    let mut from = at;
    while from < end {
        let n = (end - from).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], from)?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        from += n as u64;
    }
    Ok(true)
}

/// Copies `file[at..end]` to a new `<path>.cut-<ms>` (never over an earlier one), fsynced,
/// before the segment is cut there.
fn keep_cut(file: &File, path: &Path, at: u64, end: u64) -> io::Result<PathBuf> {
    let now = clock::now_ms();
    let mut n = 0;
    let (kept, mut out) = loop {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".cut-{}", now + n));
        let kept = PathBuf::from(name);
        match OpenOptions::new().write(true).create_new(true).open(&kept) {
            Ok(f) => break (kept, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    };
    let mut from = OffsetReader { file, at };
    let copied = io::copy(&mut (&mut from).take(end - at), &mut out)
        .and_then(|_| out.sync_all())
        .and_then(|()| match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => sync_dir(dir),
            _ => Ok(()),
        });
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&kept);
        return Err(e);
    }
    Ok(kept)
}

/// The segment id of a file `keep_cut` made (`0000000000000042.seg.cut-<ms>` -> 42).
pub fn parse_cut_name(name: &str) -> Option<u64> {
    let (segment, ms) = name.split_once(".cut-")?;
    if ms.is_empty() || !ms.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    parse_segment_name(segment)
}

/// Reads the next frame into `payload`; `None` at the end or at the first torn or bad record.
fn read_frame(r: &mut impl Read, left: u64, payload: &mut Vec<u8>) -> io::Result<Option<u32>> {
    if left < FRAME_LEN {
        return Ok(None);
    }
    let mut frame = [0u8; FRAME_LEN as usize];
    r.read_exact(&mut frame)?;
    let len_bytes: [u8; 4] = frame[..4].try_into().expect("4 bytes");
    let len = u32::from_le_bytes(len_bytes);
    let crc = u32::from_le_bytes(frame[4..].try_into().expect("4 bytes"));
    if len > MAX_RECORD || u64::from(len) > left - FRAME_LEN {
        return Ok(None);
    }
    payload.clear();
    payload.resize(len as usize, 0);
    r.read_exact(payload)?;
    if checksum(len_bytes, payload) != crc {
        return Ok(None);
    }
    Ok(Some(len))
}

/// The payload of a whole record whose frame starts at `at` of `bytes` and whose checksum
/// holds, or `None`: what `salvage.rs` looks for at every byte of what a cut kept.
pub fn frame_at(bytes: &[u8], at: usize) -> Option<&[u8]> {
    let len_bytes: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    let len = u32::from_le_bytes(len_bytes);
    if len > MAX_RECORD {
        return None;
    }
    let crc = u32::from_le_bytes(bytes.get(at + 4..at + 8)?.try_into().ok()?);
    let start = at + FRAME_LEN as usize;
    let payload = bytes.get(start..start.checked_add(len as usize)?)?;
    (checksum(len_bytes, payload) == crc).then_some(payload)
}

/// Reads one record at `offset` of `file` (whose good bytes end at `end`) into `payload`.
/// Returns the record's total length, or `None` if it is torn or fails its checksum.
pub fn read_at(
    file: &File,
    offset: u64,
    end: u64,
    payload: &mut Vec<u8>,
) -> io::Result<Option<u64>> {
    let mut r = OffsetReader { file, at: offset };
    Ok(read_frame(&mut r, end.saturating_sub(offset), payload)?.map(|l| FRAME_LEN + l as u64))
}

/// `Read` over `pread`, so a reader and the writer can share a file without a shared cursor.
struct OffsetReader<'a> {
    file: &'a File,
    at: u64,
}

impl Read for OffsetReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::test_dir::TestDir;

    fn rows(_index: u32, p: &[u8]) -> u64 {
        p.len() as u64
    }

    fn write(dir: &Path, id: u64, payloads: &[&[u8]]) -> Vec<RecordPos> {
        let mut w = Writer::create(dir, id).unwrap();
        let pos = payloads.iter().map(|p| w.append(p).unwrap()).collect();
        w.sync().unwrap();
        pos
    }

    #[test]
    fn records_round_trip() {
        let dir = TestDir::new("seg-round-trip");
        let payloads: [&[u8]; 3] = [b"one", b"", &[7u8; 70_000]];
        let pos = write(dir.path(), 3, &payloads);
        let path = segment_path(dir.path(), 3);
        let s = scan(&path, rows).unwrap();
        assert_eq!((s.records, s.rows, s.discarded), (3, 70_003, 0));
        assert_eq!(s.len, pos[2].end());
        let file = File::open(&path).unwrap();
        let mut buf = Vec::new();
        for (p, want) in pos.iter().zip(payloads) {
            assert_eq!(
                read_at(&file, p.offset, s.len, &mut buf).unwrap(),
                Some(p.len)
            );
            assert_eq!(buf, want);
        }
        assert_eq!(parse_segment_name("0000000000000003.seg"), Some(3));
        assert_eq!(parse_segment_name("3.seg"), None);
    }

    /// Each case damages the end of a 3-record segment; scan keeps what is intact.
    #[test]
    fn a_torn_or_corrupt_tail_is_cut_off() {
        // (what, damage(file bytes, offset of the last record), records kept)
        type Damage = fn(&mut Vec<u8>, usize);
        let cases: [(&str, Damage, u32); 6] = [
            ("intact", |_, _| {}, 3),
            ("half a frame", |f, last| f.truncate(last + 3), 2),
            ("payload cut short", |f, _| f.truncate(f.len() - 1), 2),
            ("bad checksum", |f, last| f[last + 4] ^= 1, 2),
            (
                "flipped payload bit",
                |f, _| *f.last_mut().unwrap() ^= 0x80,
                2,
            ),
            (
                "absurd length",
                |f, last| f[last..last + 4].copy_from_slice(&u32::MAX.to_le_bytes()),
                2,
            ),
        ];
        for (what, damage, kept) in cases {
            let dir = TestDir::new("seg-torn");
            let pos = write(dir.path(), 1, &[b"aaaa", b"bbbb", b"cccccccc"]);
            let path = segment_path(dir.path(), 1);
            let mut bytes = std::fs::read(&path).unwrap();
            damage(&mut bytes, pos[2].offset as usize);
            std::fs::write(&path, &bytes).unwrap();
            let s = scan(&path, rows).unwrap();
            assert_eq!(s.records, kept, "{what}");
            let want_len = if kept == 3 {
                pos[2].end()
            } else {
                pos[2].offset
            };
            assert_eq!(s.len, want_len, "{what}");
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                want_len,
                "{what}: truncated on disk"
            );
            // Appending after the cut works and reads back.
            let again = scan(&path, rows).unwrap();
            assert_eq!(
                again.discarded, 0,
                "{what}: a second scan finds nothing to cut"
            );
        }
    }

    #[test]
    fn a_file_that_is_not_a_segment_is_refused_not_truncated() {
        let dir = TestDir::new("seg-foreign");
        let path = segment_path(dir.path(), 9);
        std::fs::write(&path, b"definitely not a spool segment").unwrap();
        assert!(matches!(scan(&path, rows), Err(ScanError::NotASegment)));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 30);
        // A file torn before its header was complete holds nothing: it counts as empty.
        std::fs::write(&path, &MAGIC[..5]).unwrap();
        let s = scan(&path, rows).unwrap();
        assert_eq!((s.records, s.len, s.discarded), (0, 0, 5));
    }

    /// A power cut right after a segment was created may leave its size on disk but not its
    /// header: all zeros. Nothing was written to it (`create` fsyncs the header before it
    /// returns), so it counts as empty and goes, instead of being refused as not a segment
    /// at every start until an operator removes it.
    #[test]
    fn a_segment_of_zeros_is_empty_not_foreign() {
        let dir = TestDir::new("seg-zeros");
        let path = segment_path(dir.path(), 4);
        for len in [HEADER_LEN as usize, 4096] {
            std::fs::write(&path, vec![0u8; len]).unwrap();
            let s = scan(&path, rows).unwrap();
            assert_eq!((s.records, s.len, s.discarded), (0, 0, len as u64));
            assert!(s.kept.is_none());
        }
        // Zeros in the header with bytes after them are not what a create leaves: refused.
        let mut bytes = vec![0u8; 64];
        bytes[40] = 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(scan(&path, rows), Err(ScanError::NotASegment)));
    }

    #[test]
    fn failed_group_is_cut_back() {
        let dir = TestDir::new("seg-cut-back");
        let mut w = Writer::create(dir.path(), 1).unwrap();
        let first = w.append(b"kept").unwrap();
        w.append(b"undone").unwrap();
        w.truncate(first.end(), 1).unwrap();
        let next = w.append(b"after").unwrap();
        assert_eq!((next.index, next.offset), (1, first.end()));
        let s = scan(&segment_path(dir.path(), 1), rows).unwrap();
        assert_eq!((s.records, s.rows), (2, 9));
    }

    /// A create that fails after making its file (ENOSPC writing the header, EIO on the fsync)
    /// takes the file away again, so the id can be created later; a file it did not make is
    /// left alone.
    #[test]
    fn a_failed_create_leaves_no_file() {
        use crate::sink::faults::{self, Site};
        let dir = TestDir::new("seg-create-fails");
        let path = segment_path(dir.path(), 5);
        faults::arm(Site::SegmentCreate, 1);
        let e = Writer::create(dir.path(), 5).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert!(!path.exists(), "no file left behind");
        let w = Writer::create(dir.path(), 5).expect("the same id again, once there is room");
        assert_eq!(w.len(), HEADER_LEN);
        drop(w);
        let e = Writer::create(dir.path(), 5).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(path.exists(), "not its file: left alone");
    }
}
