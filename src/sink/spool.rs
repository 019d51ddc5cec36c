//! The on-disk queue of batches waiting for ClickHouse.
//!
//! Segments under `INGEST_DATA_DIR/spool`, read back oldest first, deleted once confirmed.
//!
//! One `Spool` belongs to the flush thread. It sees every record of the directory, whoever
//! wrote it:
//!
//! - in `buffer` mode the flush thread itself appends (`append`) the batches memory cannot hold;
//! - in `wal` mode the write-ahead thread (`wal.rs`) appends every batch before it is answered,
//!   and tells the flush thread where each one went (`logged`) and when it started a new segment
//!   (`started`); the flush thread may drop its memory copy (`release`), since the record is on
//!   disk.
//!
//! The queue is a FIFO: the flush thread's memory holds the oldest batches, the spool the newer
//! ones. While anything waits on disk (the *backlog*, from `cursor` to the last record), every
//! new batch goes behind it, and `read_next` brings records back into memory oldest first. A
//! record is *confirmed* once its rows are in ClickHouse or in the dead-letter file; its index
//! goes to the segment's ack file, and a segment no one will append to again is deleted once all
//! its records are confirmed. At start-up (`open`) whatever the directory holds is scanned, torn
//! tails are cut (`segment::scan`), acked records are skipped, and the rest is the backlog.
//!
//! Reading back tells a record that is gone from a read that failed. A record not there as it
//! was scanned or appended (a bad frame, a file cut short or deleted) will not come back: the
//! rest of its segment is given up, logged and counted. A failed read (no file descriptor left,
//! an EIO) may pass: nothing is given up, and `read_next` tries again after a backoff.
//!
//! fsync policy: `buffer` mode fsyncs a segment when it is sealed and at shutdown (`sync`), so a
//! killed process loses nothing it spooled (the page cache survives it) and a power cut loses at
//! most the unsealed segment's unsynced tail. In `wal` mode the write-ahead thread fsyncs every
//! group before answering. New segment files are fsynced with their directory entry.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::codec;
use super::segment::{self, RecordPos, ScanError, Writer, HEADER_LEN};
use super::stats::FlushStats;
use crate::row::RowBatch;

/// First wait after a read of the backlog failed with an I/O error; doubled after each failure
/// in a row, up to `READ_RETRY_MAX`.
const READ_RETRY_MIN: Duration = Duration::from_millis(100);
const READ_RETRY_MAX: Duration = Duration::from_secs(5);
/// How long a read of the backlog that fails with an error other than a shortage of resources
/// (an EIO: a bad sector, a failing disk) is tried again before the rest of its segment is
/// given up. Retried for ever, one unreadable record would hold back every batch queued behind
/// the backlog until the spool filled and every request was refused.
const READ_GIVE_UP: Duration = Duration::from_secs(60);

/// Errors that say the process is short of something for a moment (descriptors, memory), not
/// that the data is unreadable: reading is tried again for as long as they last.
fn is_shortage(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS | libc::EAGAIN)
    ) || e.kind() == io::ErrorKind::Interrupted
}

/// Where the spool lives and how large it may grow.
#[derive(Debug, Clone)]
pub struct SpoolConfig {
    /// `INGEST_DATA_DIR/spool`.
    pub dir: PathBuf,
    /// `INGEST_SPOOL_MAX_BYTES`: segment files may not grow past this in total.
    pub max_bytes: u64,
    /// A segment is sealed (and a new one started) once it reaches this size.
    pub segment_bytes: u64,
}

impl SpoolConfig {
    /// Segments of an eighth of the spool, between 4 KiB and 64 MiB: small enough that
    /// confirmed data is deleted soon, large enough that a segment is not a file per batch.
    pub fn new(dir: PathBuf, max_bytes: u64) -> SpoolConfig {
        SpoolConfig {
            dir,
            max_bytes,
            segment_bytes: (max_bytes / 8).clamp(4 << 10, 64 << 20),
        }
    }
}

/// Why a batch could not be spooled; it stays where it was (in memory).
#[derive(Debug)]
pub enum SpoolError {
    /// `max_bytes` reached.
    Full,
    Io(io::Error),
}

impl std::fmt::Display for SpoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpoolError::Full => f.write_str("the spool is full (INGEST_SPOOL_MAX_BYTES)"),
            SpoolError::Io(e) => write!(f, "spool I/O error: {e}"),
        }
    }
}

/// What the flush thread knows about one segment file.
#[derive(Debug)]
struct Segment {
    id: u64,
    created_ms: u64,
    /// Records known to be in the file: appended by this thread, announced by the write-ahead
    /// thread, or found at start-up.
    records: u32,
    /// End of the last known record (file length as far as the reader may go).
    end: u64,
    /// How many of `done` are set.
    confirmed: u32,
    /// Records whose rows are in ClickHouse or dead-lettered (including those acked by a
    /// previous run), or given up: skipped when reading back. A record confirmed twice (an
    /// insert replayed, a record read back twice) counts once, so the segment is never
    /// deleted before its last record is done.
    done: Marks,
    /// Records whose batch is in the flush thread's memory (read back, or logged in `wal`
    /// mode and not released): skipped when reading back, so that a record memory still
    /// holds is never read a second time, whatever order memory releases its records in.
    in_memory: Marks,
    /// No record will be added: a newer segment exists, or it is from a previous run.
    sealed: bool,
    /// The ack file, opened on first confirmation.
    ack: Option<File>,
    /// Opened on first read.
    reader: Option<File>,
}

impl Segment {
    fn new(id: u64, created_ms: u64) -> Segment {
        Segment {
            id,
            created_ms,
            records: 0,
            end: HEADER_LEN,
            confirmed: 0,
            done: Marks::default(),
            in_memory: Marks::default(),
            sealed: false,
            ack: None,
            reader: None,
        }
    }

    fn done(&self) -> bool {
        self.sealed && self.confirmed >= self.records
    }

    /// Marks record `index` done; whether it was not already.
    fn mark_done(&mut self, index: u32) -> bool {
        let new = self.done.set(index);
        if new {
            self.confirmed += 1;
        }
        new
    }
}

/// A set of record indices, as a bit per index.
#[derive(Debug, Default)]
struct Marks(Vec<u64>);

impl Marks {
    /// Adds `i`; whether it was not there.
    fn set(&mut self, i: u32) -> bool {
        let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
    }

    fn clear(&mut self, i: u32) {
        if let Some(w) = self.0.get_mut((i / 64) as usize) {
            *w &= !(1u64 << (i % 64));
        }
    }

    fn get(&self, i: u32) -> bool {
        self.0
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
}

/// The next record to read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    segment: u64,
    offset: u64,
    index: u32,
}

/// Reading the backlog failed with an I/O error that may pass (out of file descriptors, an
/// EIO): when to try again.
#[derive(Debug, Clone, Copy)]
struct ReadRetry {
    /// No read before this.
    at: Instant,
    /// The wait that led to `at`: the next failure waits twice as long.
    wait: Duration,
    /// Failures in a row, for the log line once reads work again.
    failures: u32,
    /// When the first of them happened.
    since: Instant,
}

/// A record read back: its batch and where it is, to confirm it later.
pub struct Replayed {
    pub batch: RowBatch,
    pub pos: RecordPos,
}

pub struct Spool {
    cfg: SpoolConfig,
    /// Oldest first, ids ascending.
    segments: VecDeque<Segment>,
    /// First record of the backlog; `None` when every unconfirmed record is also in memory.
    cursor: Option<Cursor>,
    /// `buffer` mode: this thread's own writer, created on the first append.
    writer: Option<Writer>,
    /// Id of the next segment this thread creates.
    next_id: u64,
    stats: Arc<FlushStats>,
    /// Encoded batch / read payload, reused.
    scratch: Vec<u8>,
    /// The last read of the backlog failed: `read_next` waits until `at` (the flush thread
    /// too, `read_retry_at`). `None` while reads work.
    read_retry: Option<ReadRetry>,
}

impl Spool {
    /// Opens (creating) the directory and recovers what a previous run left: scans every
    /// segment, cuts torn tails, deletes what is fully confirmed, and makes the rest the backlog.
    pub fn open(cfg: SpoolConfig, stats: Arc<FlushStats>) -> io::Result<Spool> {
        std::fs::create_dir_all(&cfg.dir)?;
        let mut ids = Vec::new();
        let mut acks = Vec::new();
        let mut max_id = 0;
        for entry in std::fs::read_dir(&cfg.dir)? {
            let name = entry?.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = segment::parse_segment_name(name) {
                ids.push(id);
                max_id = max_id.max(id);
            } else if let Some(id) = segment::parse_ack_name(name) {
                acks.push(id);
                max_id = max_id.max(id);
            } else if let Some(id) = segment::parse_cut_name(name) {
                // A cut file names its segment: a new one of that id would be taken for it.
                max_id = max_id.max(id);
            }
        }
        ids.sort_unstable();
        // An ack file without its segment (a crash between the two removals of an older
        // build, which removed the segment first): its acks name records of a segment that is
        // gone, and a new segment of the same id must not take them for its own. (Ids also
        // count the ack files, so a new segment never reuses one anyway.)
        for id in acks {
            if ids.binary_search(&id).is_err() {
                tracing::warn!(
                    segment = id,
                    "removing the ack file of a spool segment that is gone"
                );
                remove(&segment::ack_path(&cfg.dir, id));
            }
        }
        let mut spool = Spool {
            segments: VecDeque::new(),
            cursor: None,
            writer: None,
            next_id: max_id + 1,
            stats,
            scratch: Vec::new(),
            read_retry: None,
            cfg,
        };
        for id in ids {
            // One segment that cannot be read stays where it is, for the next start or an
            // operator; the others are replayed (its id is never reused: `max_id`).
            if let Err(e) = spool.recover(id) {
                tracing::error!(
                    segment = id,
                    error = %e,
                    path = %segment::segment_path(&spool.cfg.dir, id).display(),
                    "cannot read a spool segment at start-up; it is left on disk, not replayed \
                     by this run"
                );
                spool
                    .stats
                    .spool_bad_records
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(first) = spool.segments.front() {
            spool.cursor = Some(Cursor {
                segment: first.id,
                offset: HEADER_LEN,
                index: 0,
            });
            tracing::info!(
                segments = spool.segments.len(),
                rows = spool.stats.spool_rows.load(Ordering::Relaxed),
                bytes = spool.stats.spool_bytes.load(Ordering::Relaxed),
                dir = %spool.cfg.dir.display(),
                "spool holds rows from a previous run; replaying them once ClickHouse answers"
            );
        }
        spool.update_oldest();
        Ok(spool)
    }

    fn recover(&mut self, id: u64) -> io::Result<()> {
        let path = segment::segment_path(&self.cfg.dir, id);
        let ack_path = segment::ack_path(&self.cfg.dir, id);
        let mut acked = segment::read_acks(&ack_path)?;
        acked.sort_unstable();
        acked.dedup();
        let scanned = match segment::scan(&path, |i, payload| {
            if acked.binary_search(&i).is_ok() {
                0
            } else {
                codec::rows_in(payload).map_or(0, u64::from)
            }
        }) {
            Ok(s) => s,
            Err(ScanError::NotASegment) => {
                tracing::error!(
                    path = %path.display(),
                    "not a spool segment (bad magic); left alone and skipped"
                );
                return Ok(());
            }
            Err(ScanError::Io(e)) => return Err(e),
        };
        if let Some(kept) = &scanned.kept {
            // A write torn by a crash, or records the disk changed: the records from the first
            // bad one on are lost to the spool (the format cannot find the one after it).
            match kept {
                Ok(kept) => tracing::error!(
                    path = %path.display(),
                    bytes = scanned.discarded,
                    kept_records = scanned.records,
                    cut = %kept.display(),
                    "cut a spool segment at a bad record (a write torn by a crash, or a record \
                     the disk changed); the records from there on are lost to the spool, the \
                     bytes cut kept beside it"
                ),
                Err(e) => tracing::error!(
                    path = %path.display(),
                    bytes = scanned.discarded,
                    kept_records = scanned.records,
                    error = %e,
                    "cut a spool segment at a bad record (a write torn by a crash, or a record \
                     the disk changed); the records from there on are lost, and the bytes cut \
                     could not be kept"
                ),
            }
            self.stats.spool_bad_records.fetch_add(1, Ordering::Relaxed);
        } else if scanned.discarded > 0 {
            tracing::warn!(
                path = %path.display(),
                bytes = scanned.discarded,
                kept_records = scanned.records,
                "cut zeros off the end of a spool segment (space allocated and never written: a \
                 power cut before an fsync)"
            );
        }
        acked.retain(|&i| i < scanned.records);
        let confirmed = acked.len() as u32;
        if scanned.records == 0 || confirmed >= scanned.records {
            // The ack file first: a crash between the two leaves a segment without acks
            // (replayed whole: copies FINAL collapses), never acks a later segment of the same
            // id would take for its own.
            remove(&ack_path);
            remove(&path);
            return Ok(());
        }
        let stats = &self.stats;
        stats.spool_bytes.fetch_add(scanned.len, Ordering::Relaxed);
        stats.spool_segments.fetch_add(1, Ordering::Relaxed);
        stats.spool_rows.fetch_add(scanned.rows, Ordering::Relaxed);
        let mut seg = Segment {
            records: scanned.records,
            end: scanned.len,
            sealed: true,
            ..Segment::new(id, scanned.created_ms)
        };
        for i in acked {
            seg.mark_done(i);
        }
        self.segments.push_back(seg);
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// Records are waiting on disk that are not in memory.
    pub fn backlog(&self) -> bool {
        self.cursor.is_some()
    }

    /// Bytes of all segment files.
    pub fn bytes(&self) -> u64 {
        self.stats.spool_bytes.load(Ordering::Relaxed)
    }

    /// `wal` mode: the segment id the write-ahead thread starts with.
    pub fn take_next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// `buffer` mode: appends a batch memory cannot hold. It joins the backlog. `over_limit`
    /// (shutdown only) lets the spool pass `max_bytes` rather than lose accepted rows.
    pub fn append(&mut self, batch: &RowBatch, over_limit: bool) -> Result<RecordPos, SpoolError> {
        self.scratch.clear();
        codec::encode(batch, &mut self.scratch);
        let need = self.scratch.len() as u64 + segment::FRAME_LEN;
        let roll = self
            .writer
            .as_ref()
            .is_none_or(|w| w.len() + need > self.cfg.segment_bytes && !w.is_empty());
        let new_segment = if roll { HEADER_LEN } else { 0 };
        if !over_limit && self.bytes() + need + new_segment > self.cfg.max_bytes {
            return Err(SpoolError::Full);
        }
        if roll {
            self.seal_writer().map_err(SpoolError::Io)?;
            let id = self.take_next_id();
            let w = Writer::create(&self.cfg.dir, id).map_err(SpoolError::Io)?;
            self.stats
                .spool_bytes
                .fetch_add(HEADER_LEN, Ordering::Relaxed);
            self.stats.spool_segments.fetch_add(1, Ordering::Relaxed);
            self.segments.push_back(Segment::new(id, w.created_ms()));
            self.writer = Some(w);
        }
        let w = self.writer.as_mut().expect("a writer after the roll");
        let pos = w.append(&self.scratch).map_err(SpoolError::Io)?;
        self.stats.spool_bytes.fetch_add(pos.len, Ordering::Relaxed);
        let rows = batch.len() as u64;
        self.note(pos);
        self.join_backlog(pos, rows);
        Ok(pos)
    }

    /// Seals this thread's writer: fsyncs it; it is deleted once its records are confirmed.
    /// Sealed even if the fsync fails: nothing is appended to it again and its records still
    /// read back (from the page cache), and a segment never sealed is never deleted.
    fn seal_writer(&mut self) -> io::Result<()> {
        let Some(w) = self.writer.take() else {
            return Ok(());
        };
        let synced = w.sync();
        let id = w.id();
        if let Some(seg) = self.segment_mut(id) {
            seg.sealed = true;
        }
        self.delete_if_done(id);
        synced
    }

    /// `wal` mode: the write-ahead thread started segment `id` (created at `created_ms`) and
    /// will not append to older ones again: they are sealed, and deleted if every record in
    /// them is confirmed. It says so before the segment's first record, and also when no record
    /// follows: an older segment must go to make room when every request is refused `Full`.
    pub fn started(&mut self, id: u64, created_ms: u64) {
        if self.segments.back().is_some_and(|s| s.id >= id) {
            return;
        }
        let older: Vec<u64> = self.segments.iter().map(|s| s.id).collect();
        for s in &mut self.segments {
            s.sealed = true;
        }
        self.segments.push_back(Segment::new(id, created_ms));
        for id in older {
            self.delete_if_done(id);
        }
    }

    /// `wal` mode: the write-ahead thread appended `pos` (in a segment created at
    /// `created_ms`; a segment not announced by `started` is started by its first record).
    /// The batch is in memory too unless `release` is called for it.
    pub fn logged(&mut self, pos: RecordPos, created_ms: u64) {
        self.started(pos.segment, created_ms);
        self.note(pos);
        if let Some(seg) = self.segment_mut(pos.segment) {
            seg.in_memory.set(pos.index);
        }
    }

    /// The memory copy of a record already in the spool is dropped (`wal` mode, or a record
    /// read back): it joins the backlog. Memory drops its newest records, so `pos` is either
    /// after the backlog's start or the record just before it: the backlog stays every
    /// unconfirmed record from the cursor on.
    pub fn release(&mut self, pos: RecordPos, rows: u64) {
        if let Some(seg) = self.segment_mut(pos.segment) {
            seg.in_memory.clear(pos.index);
        }
        if self
            .cursor
            .is_some_and(|c| (pos.segment, pos.offset) < (c.segment, c.offset))
        {
            self.cursor = None;
        }
        self.join_backlog(pos, rows);
    }

    fn note(&mut self, pos: RecordPos) {
        if let Some(seg) = self.segment_mut(pos.segment) {
            seg.records = seg.records.max(pos.index + 1);
            seg.end = seg.end.max(pos.end());
        }
        self.update_oldest();
    }

    fn join_backlog(&mut self, pos: RecordPos, rows: u64) {
        if self.cursor.is_none() {
            self.cursor = Some(Cursor {
                segment: pos.segment,
                offset: pos.offset,
                index: pos.index,
            });
        }
        self.stats.spool_rows.fetch_add(rows, Ordering::Relaxed);
        self.stats.rows_spooled.fetch_add(rows, Ordering::Relaxed);
    }

    /// The oldest record of the backlog, decoded; `None` once the backlog is empty, or while
    /// reading fails (until `read_retry_at`). Records that cannot be read back (corrupt, or no
    /// longer there) are logged, counted and confirmed (so their segment can go); a failure to
    /// read, which may pass, leaves them where they are.
    pub fn read_next(&mut self) -> Option<Replayed> {
        if self.read_retry.is_some_and(|r| Instant::now() < r.at) {
            return None;
        }
        loop {
            let cur = self.cursor?;
            let Some(i) = self.index_of(cur.segment) else {
                // Its segment is gone (every record confirmed): continue with the next one.
                self.advance_to_segment_after(cur.segment);
                continue;
            };
            let seg = &self.segments[i];
            if cur.offset >= seg.end {
                if i + 1 == self.segments.len() {
                    self.cursor = None;
                    return None;
                }
                self.advance_to_segment_after(cur.segment);
                continue;
            }
            if seg.done.get(cur.index) || seg.in_memory.get(cur.index) {
                // Confirmed (by a previous run, or an insert of this one), or still in memory:
                // skip it without decoding.
                match self.read_payload(i, cur) {
                    Ok(Some(len)) => self.cursor = Some(step(cur, len)),
                    Ok(None) => self.lose_rest(i, cur),
                    Err(e) => {
                        if self.read_failed(i, cur, e) {
                            return None;
                        }
                    }
                }
                continue;
            }
            match self.read_payload(i, cur) {
                Ok(Some(len)) => {
                    let pos = RecordPos {
                        segment: cur.segment,
                        index: cur.index,
                        offset: cur.offset,
                        len,
                    };
                    self.cursor = Some(step(cur, len));
                    match codec::decode(&self.scratch) {
                        Ok(batch) => {
                            self.segments[i].in_memory.set(pos.index);
                            let rows = batch.len() as u64;
                            sub(&self.stats.spool_rows, rows);
                            self.stats.rows_replayed.fetch_add(rows, Ordering::Relaxed);
                            return Some(Replayed { batch, pos });
                        }
                        Err(e) => {
                            let rows = codec::rows_in(&self.scratch).map_or(0, u64::from);
                            tracing::error!(
                                segment = pos.segment,
                                record = pos.index,
                                rows,
                                error = %e,
                                "a spool record passed its checksum but does not decode; its rows are lost"
                            );
                            sub(&self.stats.spool_rows, rows);
                            self.stats.rows_lost.fetch_add(rows, Ordering::Relaxed);
                            self.stats.spool_bad_records.fetch_add(1, Ordering::Relaxed);
                            self.confirm(pos);
                        }
                    }
                }
                Ok(None) => self.lose_rest(i, cur),
                Err(e) => {
                    if self.read_failed(i, cur, e) {
                        return None;
                    }
                }
            }
        }
    }

    /// While reading the backlog fails: when `read_next` tries again (it returns `None` until
    /// then, so the flush thread waits for this instead of asking again at once).
    pub fn read_retry_at(&self) -> Option<Instant> {
        self.read_retry.map(|r| r.at)
    }

    /// Reads the record at `cur` into `scratch`: its total length; `None` if the record is not
    /// there as it was scanned or appended (a bad frame, the file shorter than that or gone:
    /// the disk changed under us, and trying again will not bring it back); an error if the
    /// read itself failed (out of file descriptors, an EIO), which may pass.
    fn read_payload(&mut self, i: usize, cur: Cursor) -> io::Result<Option<u64>> {
        let path = segment::segment_path(&self.cfg.dir, cur.segment);
        let seg = &mut self.segments[i];
        let read = (|| {
            #[cfg(test)]
            super::faults::check(super::faults::Site::SpoolRead, libc::EMFILE)?;
            if seg.reader.is_none() {
                seg.reader = Some(File::open(path)?);
            }
            let file = seg.reader.as_ref().expect("opened above");
            segment::read_at(file, cur.offset, seg.end, &mut self.scratch)
        })();
        let read = match read {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::UnexpectedEof
                ) =>
            {
                Ok(None)
            }
            read => read,
        };
        if read.is_ok() {
            if let Some(r) = self.read_retry.take() {
                tracing::info!(
                    segment = cur.segment,
                    failures = r.failures,
                    "the spool can be read again; replaying it"
                );
            }
        }
        read
    }

    /// Reading segment `i` at `cur` failed with `e`, which may pass: the records stay where
    /// they are, the segment's reader is dropped (it is opened again: the handle may be what
    /// went bad), and the next try waits, twice as long after each failure in a row (`true`).
    /// Logged once, when the failures begin. A failure that is not a shortage of resources
    /// and has lasted `READ_GIVE_UP` gives up the rest of the segment instead (`false`: read
    /// on).
    fn read_failed(&mut self, i: usize, cur: Cursor, e: io::Error) -> bool {
        self.segments[i].reader = None;
        let now = Instant::now();
        let (wait, failures, since) = match self.read_retry {
            None => {
                tracing::error!(
                    segment = cur.segment,
                    record = cur.index,
                    error = %e,
                    "cannot read the spool back; its records stay there and reading is tried again"
                );
                (READ_RETRY_MIN, 1, now)
            }
            Some(r) => ((r.wait * 2).min(READ_RETRY_MAX), r.failures + 1, r.since),
        };
        if !is_shortage(&e) && now.duration_since(since) >= READ_GIVE_UP {
            tracing::error!(
                segment = cur.segment,
                record = cur.index,
                failures,
                error = %e,
                "the spool has been unreadable here for a minute; giving up the rest of this \
                 segment so that the batches behind it are not held back"
            );
            self.read_retry = None;
            self.lose_rest(i, cur);
            return false;
        }
        self.read_retry = Some(ReadRetry {
            at: now + wait,
            wait,
            failures,
            since,
        });
        true
    }

    /// A record of segment `i` cannot be read (the disk changed under us): the rest of what
    /// is known of the segment is given up, loudly, and the reader moves past it.
    fn lose_rest(&mut self, i: usize, cur: Cursor) {
        let seg = &mut self.segments[i];
        // Those not done yet and not in memory: a record memory holds is confirmed when its
        // rows are inserted, and the segment waits for it.
        let mut lost = 0u32;
        for index in cur.index..seg.records {
            if !seg.in_memory.get(index) && !seg.done.get(index) {
                seg.mark_done(index);
                lost += 1;
            }
        }
        tracing::error!(
            segment = seg.id,
            from_record = cur.index,
            records = lost,
            "spool segment unreadable from this record on; those records are lost"
        );
        self.stats
            .spool_bad_records
            .fetch_add(u64::from(lost), Ordering::Relaxed);
        self.cursor = Some(Cursor {
            segment: seg.id,
            offset: seg.end,
            index: seg.records,
        });
        let id = seg.id;
        self.delete_if_done(id);
        self.update_oldest();
    }

    fn advance_to_segment_after(&mut self, id: u64) {
        self.cursor = self.segments.iter().find(|s| s.id > id).map(|s| Cursor {
            segment: s.id,
            offset: HEADER_LEN,
            index: 0,
        });
    }

    /// The rows of `pos` are in ClickHouse or in the dead-letter file: record it, and delete
    /// the segment if that was its last unconfirmed record.
    pub fn confirm(&mut self, pos: RecordPos) {
        let dir = self.cfg.dir.clone();
        let Some(seg) = self.segment_mut(pos.segment) else {
            return;
        };
        seg.in_memory.clear(pos.index);
        if !seg.mark_done(pos.index) {
            // Confirmed before (an insert replayed after its record was read back again):
            // nothing more to record.
            return;
        }
        if seg.ack.is_none() {
            match OpenOptions::new()
                .create(true)
                .append(true)
                .open(segment::ack_path(&dir, pos.segment))
            {
                Ok(f) => seg.ack = Some(f),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open a spool ack file; a restart may insert some rows twice (FINAL still shows one)")
                }
            }
        }
        if let Some(f) = &mut seg.ack {
            if let Err(e) = f.write_all(&pos.index.to_le_bytes()) {
                tracing::warn!(error = %e, "cannot write a spool ack; a restart may insert some rows twice (FINAL still shows one)");
                seg.ack = None;
            }
        }
        let id = seg.id;
        // `buffer` mode: once the backlog is gone and all is confirmed, the own segment goes too.
        if self.cursor.is_none()
            && self.writer.as_ref().is_some_and(|w| w.id() == id)
            && self
                .segment_mut(id)
                .is_some_and(|s| s.confirmed >= s.records)
        {
            self.writer = None;
            if let Some(s) = self.segment_mut(id) {
                s.sealed = true;
            }
        }
        self.delete_if_done(id);
        self.update_oldest();
    }

    fn delete_if_done(&mut self, id: u64) {
        let Some(i) = self.index_of(id) else { return };
        if !self.segments[i].done() {
            return;
        }
        let seg = self.segments.remove(i).expect("index from index_of");
        if self.cursor.is_some_and(|c| c.segment == id) {
            self.advance_to_segment_after(id);
        }
        // The ack file first (see `recover`).
        remove(&segment::ack_path(&self.cfg.dir, id));
        remove(&segment::segment_path(&self.cfg.dir, id));
        sub(&self.stats.spool_bytes, seg.end);
        sub(&self.stats.spool_segments, 1);
        // Room was made: let the next batch try (it sets the flag again if still full).
        self.stats.full.store(false, Ordering::Relaxed);
        self.update_oldest();
    }

    /// `buffer` mode at shutdown: makes everything appended durable.
    pub fn sync(&mut self) -> io::Result<()> {
        match &self.writer {
            Some(w) => w.sync(),
            None => Ok(()),
        }
    }

    fn update_oldest(&self) {
        let oldest = self
            .segments
            .iter()
            .find(|s| s.confirmed < s.records)
            .map_or(0, |s| s.created_ms);
        self.stats.spool_oldest_ms.store(oldest, Ordering::Relaxed);
    }

    fn index_of(&self, id: u64) -> Option<usize> {
        self.segments.binary_search_by_key(&id, |s| s.id).ok()
    }

    fn segment_mut(&mut self, id: u64) -> Option<&mut Segment> {
        let i = self.index_of(id)?;
        self.segments.get_mut(i)
    }
}

/// Takes the data directory for this process (creating it): an exclusive `flock` on
/// `dir/LOCK`, held while the returned file is open. Two servers sharing a spool would replay
/// and delete each other's records.
pub fn lock_data_dir(dir: &Path) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("LOCK"))?;
    // SAFETY: flock(2) on a descriptor this function owns; no memory is passed.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!(
                "{} is in use by another traceingest process ({e}); give each server its own INGEST_DATA_DIR",
                dir.display()
            ),
        ));
    }
    Ok(file)
}

fn step(c: Cursor, len: u64) -> Cursor {
    Cursor {
        segment: c.segment,
        offset: c.offset + len,
        index: c.index + 1,
    }
}

fn sub(a: &std::sync::atomic::AtomicU64, v: u64) {
    let _ = a.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
        Some(x.saturating_sub(v))
    });
}

fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot delete a spool file"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::clickhouse::test_support::batch;
    use crate::sink::faults::{self, Site};
    use crate::sink::test_dir::TestDir;

    fn open(dir: &TestDir, max: u64) -> (Spool, Arc<FlushStats>) {
        let stats = Arc::new(FlushStats::default());
        let spool = Spool::open(
            SpoolConfig::new(dir.path().join("spool"), max),
            Arc::clone(&stats),
        )
        .unwrap();
        (spool, stats)
    }

    /// Ends the wait before the next try to read; the wait it ended.
    fn skip_wait(spool: &mut Spool) -> Duration {
        let retry = spool.read_retry.as_mut().expect("a failed read");
        retry.at = Instant::now();
        retry.wait
    }

    fn trace(r: &Replayed) -> String {
        crate::row::test_rows::str_at(&r.batch, crate::row::col::trace_id, 0)
    }

    fn files(dir: &TestDir, ext: &str) -> usize {
        std::fs::read_dir(dir.path().join("spool"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(ext)
            })
            .count()
    }

    /// A spool left by an earlier run holding records `traces` (one row each), fsynced, and
    /// then `tail` appended to its segment as a crash or the disk left it: the segment's path.
    fn left_with(dir: &TestDir, traces: &[&str], tail: &[u8]) -> std::path::PathBuf {
        {
            let (mut spool, _) = open(dir, 1 << 30);
            for t in traces {
                spool.append(&batch("o", t, 1, 0), false).unwrap();
            }
            spool.sync().unwrap();
        }
        let seg = segment::segment_path(&dir.path().join("spool"), 1);
        let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(tail).unwrap();
        seg
    }

    /// The files `keep_cut` made.
    fn cut_files(dir: &TestDir) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir.path().join("spool"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".seg.cut-"))
            .collect()
    }

    /// Appended batches come back oldest first, across segments, and every segment is gone
    /// once all its records are confirmed.
    #[test]
    fn appends_read_back_in_order_and_confirmed_segments_go() {
        let dir = TestDir::new("spool-order");
        // 64 KiB: segments of 8 KiB, several records each.
        let (mut spool, stats) = open(&dir, 64 << 10);
        for i in 0..8 {
            spool
                .append(&batch("o", &format!("t{i}"), 3, 0), false)
                .unwrap();
        }
        assert!(spool.backlog());
        assert!(files(&dir, ".seg") >= 2);
        assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 24);
        let mut read = Vec::new();
        while let Some(r) = spool.read_next() {
            read.push(r);
        }
        assert!(!spool.backlog());
        let order: Vec<String> = read.iter().map(trace).collect();
        let want: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
        assert_eq!(order, want);
        assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 0);
        assert!(stats.spool_oldest_ms.load(Ordering::Relaxed) > 0);
        for r in &read {
            spool.confirm(r.pos);
        }
        assert_eq!(files(&dir, ".seg"), 0);
        assert_eq!(files(&dir, ".ack"), 0);
        assert_eq!(stats.spool_bytes.load(Ordering::Relaxed), 0);
        assert_eq!(stats.spool_segments.load(Ordering::Relaxed), 0);
        assert_eq!(stats.spool_oldest_ms.load(Ordering::Relaxed), 0);
    }

    /// Memory may release its records out of file order (an earlier run's unfinished insert
    /// put in front of the queue, then the queue's tail spooled): a record memory still holds is
    /// not read a second time, and a record confirmed twice counts once, so the segment stays
    /// until its last record is confirmed. (Before, the record was read again, inserted twice,
    /// counted twice, and the segment deleted with its last record unread.)
    #[test]
    fn records_in_memory_are_not_read_again_and_a_segment_waits_for_its_last() {
        let dir = TestDir::new("spool-out-of-order");
        {
            let (mut spool, _) = open(&dir, 1 << 30);
            for i in 0..6 {
                spool
                    .append(&batch("o", &format!("r{i}"), 1, 0), false)
                    .unwrap();
            }
            spool.sync().unwrap();
        }
        let (mut spool, _) = open(&dir, 1 << 30);
        let r0 = spool.read_next().unwrap();
        let r1 = spool.read_next().unwrap();
        assert_eq!((trace(&r0), trace(&r1)), ("r0".into(), "r1".into()));
        // Memory keeps r1 (frozen) and spools r0 back: the cursor goes back to r0.
        spool.release(r0.pos, 1);
        let mut read = Vec::new();
        while let Some(r) = spool.read_next() {
            read.push(r);
        }
        let order: Vec<String> = read.iter().map(trace).collect();
        assert_eq!(order, ["r0", "r2", "r3", "r4", "r5"], "r1 is in memory");
        // r1 confirmed twice (a replayed insert), the others but r5 once: the segment stays.
        spool.confirm(r1.pos);
        spool.confirm(r1.pos);
        for r in &read[..4] {
            spool.confirm(r.pos);
        }
        assert_eq!(files(&dir, ".seg"), 1, "r5 is not confirmed");
        spool.confirm(read[4].pos);
        assert_eq!(files(&dir, ".seg"), 0);
    }

    /// An ack file left without its segment (a crash between the two removals) is not taken
    /// by a new segment of the same id: its records are replayed after the next restart.
    #[test]
    fn an_orphan_ack_file_does_not_confirm_a_new_segments_records() {
        let dir = TestDir::new("spool-orphan-ack");
        let spool_dir = dir.path().join("spool");
        // The crash: the ack file of segment 1 is there, its segment gone.
        std::fs::create_dir_all(&spool_dir).unwrap();
        std::fs::write(segment::ack_path(&spool_dir, 1), 0u32.to_le_bytes()).unwrap();
        {
            let (mut spool, _) = open(&dir, 1 << 30);
            for i in 0..3 {
                spool
                    .append(&batch("o", &format!("new{i}"), 1, 0), false)
                    .unwrap();
            }
            spool.sync().unwrap();
        }
        let (mut spool, _) = open(&dir, 1 << 30);
        let again: Vec<String> = std::iter::from_fn(|| spool.read_next())
            .map(|r| trace(&r))
            .collect();
        assert_eq!(again, ["new0", "new1", "new2"]);
    }

    /// A record damaged in the middle of a segment loses the records after it to the spool
    /// (the format cannot find the one after a bad record), but their bytes are kept beside
    /// it, a second cut never overwrites the first's copy, and each cut is counted.
    #[test]
    fn a_cut_segment_keeps_its_bytes_and_is_counted() {
        let dir = TestDir::new("spool-damaged");
        let seg = left_with(&dir, &["t0", "t1", "t2", "t3", "t4", "t5"], &[]);
        let frame_at = |bytes: &[u8], n: usize| {
            let mut at = 16;
            for _ in 0..n {
                at += 8 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            }
            at
        };
        let cuts = || {
            let mut kept: Vec<Vec<u8>> = cut_files(&dir)
                .into_iter()
                .map(|p| std::fs::read(p).unwrap())
                .collect();
            kept.sort_by_key(Vec::len);
            kept
        };
        // A bit flipped in t4's payload, then (after a restart) in t1's length: a length that
        // reaches past the end looks like a torn write, and is kept all the same.
        let mut bytes = std::fs::read(&seg).unwrap();
        let t4 = frame_at(&bytes, 4);
        let first_len = bytes.len() - t4;
        bytes[t4 + 8 + 4] ^= 1;
        std::fs::write(&seg, &bytes).unwrap();
        let (spool, stats) = open(&dir, 1 << 30);
        assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 1);
        drop(spool);
        let mut bytes = std::fs::read(&seg).unwrap();
        let t1 = frame_at(&bytes, 1);
        bytes[t1 + 3] ^= 0x10;
        std::fs::write(&seg, &bytes).unwrap();
        let (mut again, stats) = open(&dir, 1 << 30);
        let read: Vec<String> = std::iter::from_fn(|| again.read_next())
            .map(|r| trace(&r))
            .collect();
        assert_eq!(read, ["t0"]);
        assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 1);
        let kept = cuts();
        assert_eq!(kept.len(), 2, "the second cut did not overwrite the first");
        assert!(kept.iter().any(|k| k.len() == first_len), "t4 and t5 kept");
        assert!(kept.iter().any(|k| k[..] == bytes[t1..]), "t1 to t3 kept");
    }

    /// Zeros at the end (space a file system allocated but a power cut kept from being
    /// written) are cut without a copy and not counted as a bad record.
    #[test]
    fn a_tail_of_zeros_is_cut_quietly() {
        let dir = TestDir::new("spool-zero-tail");
        left_with(&dir, &["t0"], &[0; 4096]);
        let (mut spool, stats) = open(&dir, 1 << 30);
        assert_eq!(spool.read_next().map(|r| trace(&r)).as_deref(), Some("t0"));
        assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 0);
        assert_eq!(files(&dir, ".seg"), 1);
        assert_eq!(cut_files(&dir), Vec::<std::path::PathBuf>::new());
    }

    /// When the bytes cut cannot be kept, the good records before them are still replayed.
    #[test]
    fn a_cut_that_cannot_be_kept_still_replays_the_records_before_it() {
        let dir = TestDir::new("spool-cut-unkept");
        let seg = left_with(&dir, &["t0"], &[200, 0, 0, 0, 1, 2]);
        // Every name the copy could take is a directory already.
        let now = crate::clock::now_ms();
        for n in 0..1100 {
            let mut name = seg.as_os_str().to_owned();
            name.push(format!(".cut-{}", now + n));
            std::fs::create_dir(std::path::PathBuf::from(name)).unwrap();
        }
        let (mut spool, stats) = open(&dir, 1 << 30);
        assert_eq!(spool.read_next().map(|r| trace(&r)).as_deref(), Some("t0"));
        assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 1);
    }

    /// A restart replays exactly the records not confirmed before it, and a torn tail is cut.
    #[test]
    fn a_restart_skips_acked_records_and_survives_a_torn_tail() {
        let dir = TestDir::new("spool-restart");
        {
            let (mut spool, _) = open(&dir, 1 << 30);
            for i in 0..5 {
                spool
                    .append(&batch("o", &format!("t{i}"), 2, 0), false)
                    .unwrap();
            }
            let read: Vec<Replayed> = std::iter::from_fn(|| spool.read_next()).collect();
            spool.confirm(read[1].pos);
            spool.confirm(read[3].pos);
            spool.sync().unwrap();
        }
        // A crash in the middle of a sixth record.
        let seg = segment::segment_path(&dir.path().join("spool"), 1);
        let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(&[200, 0, 0, 0, 1, 2]).unwrap();
        drop(f);

        let (mut spool, stats) = open(&dir, 1 << 30);
        assert_eq!(
            stats.spool_rows.load(Ordering::Relaxed),
            6,
            "3 records of 2 rows"
        );
        let mut again = Vec::new();
        while let Some(r) = spool.read_next() {
            again.push(trace(&r));
            spool.confirm(r.pos);
        }
        assert_eq!(again, ["t0", "t2", "t4"]);
        assert_eq!(files(&dir, ".seg"), 0, "all confirmed: deleted");
        // Nothing is left for a third start.
        let (mut spool, stats) = open(&dir, 1 << 30);
        assert!(spool.read_next().is_none());
        assert_eq!(stats.spool_segments.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn refuses_past_its_bound_unless_told_otherwise() {
        let dir = TestDir::new("spool-full");
        let (mut spool, _) = open(&dir, 64 << 10);
        let mut n = 0;
        while spool.append(&batch("o", "t", 10, 0), false).is_ok() {
            n += 1;
            assert!(n < 1000);
        }
        assert!(matches!(
            spool.append(&batch("o", "t", 10, 0), false),
            Err(SpoolError::Full)
        ));
        assert!(spool.bytes() <= 64 << 10);
        // At shutdown accepted rows go in regardless.
        spool.append(&batch("o", "t", 10, 0), true).unwrap();
        assert!(spool.bytes() > 64 << 10);
    }

    /// `wal` mode: records written by another writer are announced; dropping memory copies
    /// of the newest ones makes them the backlog, read back in log order.
    #[test]
    fn logged_records_released_from_memory_are_read_back_in_order() {
        let dir = TestDir::new("spool-wal");
        let (mut spool, stats) = open(&dir, 1 << 30);
        let id = spool.take_next_id();
        let mut w = Writer::create(spool.dir(), id).unwrap();
        let mut pos = Vec::new();
        let mut bytes = Vec::new();
        for i in 0..6 {
            bytes.clear();
            codec::encode(&batch("o", &format!("t{i}"), 2, 0), &mut bytes);
            let p = w.append(&bytes).unwrap();
            spool.logged(p, w.created_ms());
            pos.push(p);
        }
        w.sync().unwrap();
        assert!(!spool.backlog(), "everything is in memory too");
        // Memory drops its newest two, then (still full) the two before them.
        spool.release(pos[4], 2);
        spool.release(pos[5], 2);
        spool.release(pos[2], 2);
        spool.release(pos[3], 2);
        assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 8);
        let back: Vec<String> = std::iter::from_fn(|| spool.read_next())
            .map(|r| trace(&r))
            .collect();
        assert_eq!(back, ["t2", "t3", "t4", "t5"]);
        for p in pos {
            spool.confirm(p);
        }
        // The writer's segment is not sealed: it stays until the writer moves on.
        assert_eq!(files(&dir, ".seg"), 1);
        let mut w2 = Writer::create(spool.dir(), w.id() + 1).unwrap();
        let p = w2.append(&bytes).unwrap();
        spool.logged(p, w2.created_ms());
        assert_eq!(
            files(&dir, ".seg"),
            1,
            "the sealed, confirmed one is deleted"
        );
    }

    /// Reading the spool back fails for a while (out of file descriptors: a burst of
    /// connections): nothing is lost. The records stay, the segment's reader is dropped (to be
    /// opened again), tries wait 100 ms, then twice as long each time, and `read_next` does not
    /// touch the disk before then; once reads work, every record comes back in order and the
    /// segments go only when confirmed. (Such an error used to count as a corrupt record: the
    /// rest of the segment was given up and its file deleted.)
    #[test]
    fn a_failed_read_is_retried_later_and_loses_nothing() {
        let dir = TestDir::new("spool-read-fails");
        // 64 KiB: segments of 8 KiB, several records each.
        let (mut spool, stats) = open(&dir, 64 << 10);
        for i in 0..8 {
            spool
                .append(&batch("o", &format!("t{i}"), 3, 0), false)
                .unwrap();
        }
        let segments = files(&dir, ".seg");
        assert!(segments >= 2);
        let mut read = vec![spool.read_next().unwrap()];
        assert_eq!(trace(&read[0]), "t0");

        faults::arm(Site::SpoolRead, 3);
        let mut waits = Vec::new();
        for _ in 0..3 {
            assert!(spool.read_next().is_none(), "nothing read while reads fail");
            assert!(spool.backlog(), "the records are still waiting");
            let at = spool.read_retry_at().expect("a time to try again");
            assert!(at > Instant::now());
            assert!(
                spool.segments.iter().all(|s| s.reader.is_none()),
                "reopened next time"
            );
            assert!(spool.read_next().is_none(), "no try before its time");
            waits.push(skip_wait(&mut spool));
        }
        assert_eq!(waits, [100, 200, 400].map(Duration::from_millis));
        assert_eq!(files(&dir, ".seg"), segments, "no segment deleted");
        assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 0);
        assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 21);

        // Reads work again.
        read.extend(std::iter::from_fn(|| spool.read_next()));
        assert_eq!(spool.read_retry_at(), None);
        let order: Vec<String> = read.iter().map(trace).collect();
        let want: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
        assert_eq!(order, want);
        assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 0);
        for r in &read {
            spool.confirm(r.pos);
        }
        assert_eq!(files(&dir, ".seg"), 0);
    }

    /// A read that keeps failing with EIO (a bad sector) is retried for `READ_GIVE_UP`, then
    /// the rest of its segment is given up, loudly, and the records behind it are read: one
    /// unreadable record must not hold back everything queued behind the backlog. A shortage
    /// of descriptors is retried however long it lasts.
    #[test]
    fn a_lasting_eio_gives_up_its_segment_a_shortage_does_not() {
        let dir = TestDir::new("spool-read-eio");
        let (mut spool, stats) = open(&dir, 64 << 10);
        for i in 0..8 {
            spool
                .append(&batch("o", &format!("t{i}"), 3, 0), false)
                .unwrap();
        }
        let first_segment_records = spool.segments[0].records;
        assert!(spool.segments.len() >= 2 && first_segment_records < 8);
        let backdate = |spool: &mut Spool| {
            let retry = spool.read_retry.as_mut().expect("a failed read");
            retry.since -= READ_GIVE_UP;
            retry.at = Instant::now();
        };

        // Out of descriptors for longer than a minute: still waiting, nothing given up.
        faults::arm_errno(Site::SpoolRead, 2, libc::EMFILE);
        assert!(spool.read_next().is_none());
        backdate(&mut spool);
        assert!(spool.read_next().is_none());
        assert!(spool.read_retry_at().is_some());
        assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 0);
        skip_wait(&mut spool);
        assert_eq!(trace(&spool.read_next().unwrap()), "t0");

        // EIO: retried while it is young, then the first segment's rest is given up and the
        // next segment's records come back.
        faults::arm_errno(Site::SpoolRead, 2, libc::EIO);
        assert!(spool.read_next().is_none());
        skip_wait(&mut spool);
        assert!(spool.read_next().is_none(), "a young EIO is retried");
        backdate(&mut spool);
        faults::arm_errno(Site::SpoolRead, 1, libc::EIO);
        let next = spool
            .read_next()
            .expect("read on past the given-up records");
        assert_eq!(trace(&next), format!("t{first_segment_records}"));
        assert_eq!(spool.read_retry_at(), None);
        assert_eq!(
            stats.spool_bad_records.load(Ordering::Relaxed),
            u64::from(first_segment_records - 1),
            "the first segment's records after t0"
        );
    }

    /// `buffer` mode: the fsync that seals a full segment fails. The append that needed the
    /// roll is refused (its batch stays in memory) and the next starts a new segment; the old
    /// one counts as sealed all the same (nothing is appended to it again, and its records
    /// read back), so it is deleted once they are confirmed. (It stayed unsealed, and on disk
    /// for the rest of the run.)
    #[test]
    fn a_segment_whose_sealing_fsync_failed_still_goes_once_confirmed() {
        let dir = TestDir::new("spool-seal-fails");
        let (mut spool, stats) = open(&dir, 64 << 10);
        // The first roll has no segment to seal; the second does.
        faults::arm(Site::SegmentSync, 1);
        let mut refused = 0;
        for i in 0..8 {
            let b = batch("o", &format!("t{i}"), 3, 0);
            if spool.append(&b, false).is_err() {
                refused += 1;
                spool.append(&b, false).unwrap();
            }
        }
        assert_eq!(refused, 1, "the sealing fsync failed once");
        let read: Vec<Replayed> = std::iter::from_fn(|| spool.read_next()).collect();
        assert_eq!(read.len(), 8);
        for r in &read {
            spool.confirm(r.pos);
        }
        assert_eq!(files(&dir, ".seg"), 0);
        assert_eq!(stats.spool_bytes.load(Ordering::Relaxed), 0);
    }
}
