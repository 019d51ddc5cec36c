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
//! record is *confirmed* once its rows are in ClickHouse or in the dead-letter file; an entry
//! for it goes to the segment's ack file (`acks.rs`), and a segment no one will append to again
//! is deleted once all its records are confirmed. At start-up (`open`) whatever the directory
//! holds is scanned, torn tails are cut (`segment::scan`), acked records are skipped, and the
//! rest is the backlog.
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

use super::acks::{self, AckKey};
use super::codec;
use super::segment::{self, RecordPos, ScanError, Writer, HEADER_LEN};
use super::stats::FlushStats;
use crate::row::RowBatch;

use read::ReadRetry;

mod read;
mod recover;
#[cfg(test)]
mod tests;

/// Cluster mode's unfinished inserts (`flush/intent.rs`), in the spool directory: the segment
/// ids it names are not reused (`open`).
pub const INTENT_FILE: &str = "insert.intent";

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
    /// Rows of each record waiting in the backlog (appended, released from memory, or found at
    /// start-up), by index, as `FlushStats::spool_rows` counts them; 0 once read back or given
    /// up, so that records given up (`lose_rest`) leave that gauge.
    rows: Vec<u32>,
    /// No record will be added: a newer segment exists, or it is from a previous run.
    sealed: bool,
    /// Records of it were given up (unreadable, or of a format this build cannot decode):
    /// once the rest is done, the file and its acks stay on disk instead of going, for the
    /// next start to read again (a damaged record is cut there, the bytes from it kept in a
    /// `.cut` file for `deadletter salvage`) or a newer build to decode.
    keep: bool,
    /// The ack file (`acks.rs`), opened on first confirmation.
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
            rows: Vec::new(),
            sealed: false,
            keep: false,
            ack: None,
            reader: None,
        }
    }

    /// What its ack entries are bound to.
    fn ack_key(&self) -> AckKey {
        AckKey {
            segment: self.id,
            created_ms: self.created_ms,
        }
    }

    fn done(&self) -> bool {
        self.sealed && self.confirmed >= self.records
    }

    /// Record `index` joins the backlog with `rows` rows.
    fn set_rows(&mut self, index: u32, rows: u64) {
        let i = index as usize;
        if self.rows.len() <= i {
            self.rows.resize(i + 1, 0);
        }
        self.rows[i] = u32::try_from(rows).unwrap_or(u32::MAX);
    }

    /// Record `index` leaves the backlog: the rows it was counted with there.
    fn take_rows(&mut self, index: u32) -> u64 {
        self.rows
            .get_mut(index as usize)
            .map_or(0, |r| u64::from(std::mem::take(r)))
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
    /// Fsyncs that sealed a segment and failed: its records may not be on disk, although a
    /// later `sync` (of the next segment) passes.
    seal_failures: u64,
}

impl Spool {
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

    /// A new segment at the next free id. An id whose file exists is passed over: a
    /// write-ahead segment whose creation failed and whose file could not be removed (`wal`
    /// mode, at a stop, where this thread numbers on from the write-ahead thread's last
    /// announced segment) would otherwise refuse the segment, and the rows of the stop with it.
    fn create_segment(&mut self) -> Result<Writer, SpoolError> {
        let mut tries = 0;
        loop {
            let id = self.take_next_id();
            match Writer::create(&self.cfg.dir, id) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 64 => {
                    tracing::warn!(
                        segment = id,
                        "a spool segment file of this id exists already; taking the next id"
                    );
                    tries += 1;
                }
                r => return r.map_err(SpoolError::Io),
            }
        }
    }

    /// `buffer` mode: appends a batch memory cannot hold. It joins the backlog. `over_limit`
    /// (shutdown only) lets the spool pass `max_bytes` rather than lose accepted rows. In `wal`
    /// mode only at a stop, once the write-ahead thread has ended, into a segment of its own.
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
            if let Err(e) = self.seal_writer() {
                // Sealed all the same (its records still read back, from the page cache, and
                // `seal_failures` tells a stop not to rely on them): this batch goes to a new
                // segment rather than being refused, which at a stop would lose it.
                tracing::error!(error = %e, "cannot fsync a spool segment as it is sealed; its records may not survive a power cut");
            }
            // `wal` mode, at a stop (the rest of a batch partly settled: `flush/spill.rs`): the
            // write-ahead thread numbered its segments on from `next_id`; this one goes after.
            if let Some(last) = self.segments.back() {
                self.next_id = self.next_id.max(last.id + 1);
            }
            let w = self.create_segment()?;
            let id = w.id();
            self.stats
                .spool_bytes
                .fetch_add(HEADER_LEN, Ordering::Relaxed);
            self.stats.spool_segments.fetch_add(1, Ordering::Relaxed);
            self.segments.push_back(Segment::new(id, w.created_ms()));
            self.writer = Some(w);
        }
        let w = self.writer.as_mut().expect("a writer after the roll");
        let pos = match w.append(&self.scratch) {
            Ok(pos) => pos,
            Err(e) => {
                if w.is_torn() {
                    // Half a record lies where the next would go: the next batch goes to a
                    // new segment (this one's records still read back, up to its known end).
                    tracing::error!(error = %e, "a failed spool append could not be cut back off its segment; the next batch goes to a new one");
                    if let Err(e) = self.seal_writer() {
                        tracing::error!(error = %e, "cannot fsync a spool segment as it is sealed; its records may not survive a power cut");
                    }
                }
                return Err(SpoolError::Io(e));
            }
        };
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
        self.seal_failures += u64::from(synced.is_err());
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
        if let Some(seg) = self.segment_mut(pos.segment) {
            seg.set_rows(pos.index, rows);
        }
        self.stats.spool_rows.fetch_add(rows, Ordering::Relaxed);
        self.stats.rows_spooled.fetch_add(rows, Ordering::Relaxed);
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
        let key = seg.ack_key();
        if seg.ack.is_none() {
            match acks::open(&dir, key) {
                Ok(f) => seg.ack = Some(f),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open a spool ack file; a restart may insert some rows twice (FINAL still shows one)")
                }
            }
        }
        if let Some(f) = &mut seg.ack {
            if let Err(e) = f.write_all(&acks::entry(key, pos.index)) {
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
        let path = segment::segment_path(&self.cfg.dir, id);
        if seg.keep && path.exists() {
            tracing::warn!(
                segment = id,
                path = %path.display(),
                "a spool segment with records given up stays on disk: the next start reads \
                 what is not confirmed again"
            );
        } else {
            // The ack files first (see `recover`).
            remove_acks(&self.cfg.dir, id);
            remove(&path);
        }
        sub(&self.stats.spool_bytes, seg.end);
        sub(&self.stats.spool_segments, 1);
        // Room was made: let the next batch try (it sets the flag again if still full).
        self.stats.full.store(false, Ordering::Relaxed);
        self.update_oldest();
    }

    /// How many fsyncs sealing a segment failed so far: what was appended since a count was
    /// read is durable only if `sync` passes and the count is the same.
    pub fn seal_failures(&self) -> u64 {
        self.seal_failures
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

/// Removes both ack files of segment `id` (the current format's and an earlier build's).
fn remove_acks(dir: &Path, id: u64) {
    for path in acks::ack_paths(dir, id) {
        remove(&path);
    }
}

fn remove(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot delete a spool file"),
    }
}
