//! Reading the spool's backlog back, oldest first: records given up when they are not there
//! as written, reads that fail retried with a backoff.

use super::*;

/// First wait after a read of the backlog failed with an I/O error; doubled after each failure
/// in a row, up to `READ_RETRY_MAX`.
const READ_RETRY_MIN: Duration = Duration::from_millis(100);
const READ_RETRY_MAX: Duration = Duration::from_secs(5);
/// How long a read of the backlog that fails with an error other than a shortage of resources
/// (an EIO: a bad sector, a failing disk) is tried again before the rest of its segment is
/// given up. Retried for ever, one unreadable record would hold back every batch queued behind
/// the backlog until the spool filled and every request was refused.
pub(super) const READ_GIVE_UP: Duration = Duration::from_secs(60);

/// Errors that say the process is short of something for a moment (descriptors, memory), not
/// that the data is unreadable: reading is tried again for as long as they last.
fn is_shortage(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS | libc::EAGAIN)
    ) || e.kind() == io::ErrorKind::Interrupted
}

/// Reading the backlog failed with an I/O error that may pass (out of file descriptors, an
/// EIO): when to try again.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReadRetry {
    /// No read before this.
    pub(super) at: Instant,
    /// The wait that led to `at`: the next failure waits twice as long.
    pub(super) wait: Duration,
    /// Failures in a row, for the log line once reads work again.
    pub(super) failures: u32,
    /// When the first of them happened.
    pub(super) since: Instant,
}

impl Spool {
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
                            let seg = &mut self.segments[i];
                            seg.in_memory.set(pos.index);
                            seg.take_rows(pos.index);
                            let rows = batch.len() as u64;
                            sub(&self.stats.spool_rows, rows);
                            self.stats.rows_replayed.fetch_add(rows, Ordering::Relaxed);
                            return Some(Replayed { batch, pos });
                        }
                        Err(e) => {
                            let rows = match self.segments[i].take_rows(pos.index) {
                                0 => codec::rows_in(&self.scratch).map_or(0, u64::from),
                                rows => rows,
                            };
                            tracing::error!(
                                segment = pos.segment,
                                record = pos.index,
                                rows,
                                error = %e,
                                "a spool record passed its checksum but does not decode (written \
                                 by a newer build?); its rows are not replayed by this one, and \
                                 its segment stays on disk"
                            );
                            sub(&self.stats.spool_rows, rows);
                            self.stats.rows_lost.fetch_add(rows, Ordering::Relaxed);
                            self.stats.spool_bad_records.fetch_add(1, Ordering::Relaxed);
                            // Not confirmed (no ack): a build that decodes it replays it.
                            let seg = &mut self.segments[i];
                            seg.keep = true;
                            seg.mark_done(pos.index);
                            self.delete_if_done(pos.segment);
                            self.update_oldest();
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
            crate::sink::faults::check(crate::sink::faults::Site::SpoolRead, libc::EMFILE)?;
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
        let (mut lost, mut rows) = (0u32, 0u64);
        for index in cur.index..seg.records {
            if !seg.in_memory.get(index) && !seg.done.get(index) {
                seg.mark_done(index);
                lost += 1;
                rows += seg.take_rows(index);
            }
        }
        // Not confirmed (no ack): the file stays on disk, and the next start reads them again
        // (or cuts the file at a damaged one and keeps the bytes for `deadletter salvage`).
        seg.keep = true;
        tracing::error!(
            segment = seg.id,
            from_record = cur.index,
            records = lost,
            rows,
            "spool segment unreadable from this record on; those records are given up until \
             the next start, and the segment stays on disk"
        );
        self.stats
            .spool_bad_records
            .fetch_add(u64::from(lost), Ordering::Relaxed);
        // Their rows wait nowhere any more: out of the spool's gauge, into the lost.
        sub(&self.stats.spool_rows, rows);
        self.stats.rows_lost.fetch_add(rows, Ordering::Relaxed);
        self.cursor = Some(Cursor {
            segment: seg.id,
            offset: seg.end,
            index: seg.records,
        });
        let id = seg.id;
        self.delete_if_done(id);
        self.update_oldest();
    }

    pub(super) fn advance_to_segment_after(&mut self, id: u64) {
        self.cursor = self.segments.iter().find(|s| s.id > id).map(|s| Cursor {
            segment: s.id,
            offset: HEADER_LEN,
            index: 0,
        });
    }
}
