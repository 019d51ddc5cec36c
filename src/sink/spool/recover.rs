//! Start-up: what a previous run left in the spool directory, scanned, cut where bad, and made
//! the backlog.

use super::*;

impl Spool {
    /// Opens (creating) the directory and recovers what a previous run left: scans every
    /// segment, cuts torn tails, deletes what is fully confirmed, and makes the rest the backlog.
    pub fn open(cfg: SpoolConfig, stats: Arc<FlushStats>) -> io::Result<Spool> {
        std::fs::create_dir_all(&cfg.dir)?;
        let mut ids = Vec::new();
        let mut orphans = Vec::new();
        let mut max_id = 0;
        for entry in std::fs::read_dir(&cfg.dir)? {
            let name = entry?.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(id) = segment::parse_segment_name(name) {
                ids.push(id);
                max_id = max_id.max(id);
            } else if let Some(id) = acks::parse_ack_name(name) {
                orphans.push(id);
                max_id = max_id.max(id);
            } else if let Some(id) = segment::parse_cut_name(name) {
                // A cut file names its segment: a new one of that id would be taken for it.
                max_id = max_id.max(id);
            }
        }
        // Cluster mode: an insert's intent names its records until after they are confirmed,
        // so it may name segments deleted since. A new segment of such an id would have its
        // records taken for the unfinished insert (`flush/intent.rs`).
        if let Ok(text) = std::fs::read_to_string(cfg.dir.join(INTENT_FILE)) {
            for id in text
                .lines()
                .filter_map(|l| l.split_once(' ')?.0.parse::<u64>().ok())
            {
                max_id = max_id.max(id);
            }
        }
        ids.sort_unstable();
        // An ack file without its segment (a crash between the two removals of an older
        // build, which removed the segment first): its acks name records of a segment that is
        // gone, and a new segment of the same id must not take them for its own. (Ids also
        // count the ack files, so a new segment never reuses one anyway, and entries of the
        // current format name their segment's creation time.)
        orphans.sort_unstable();
        orphans.dedup();
        for id in orphans {
            if ids.binary_search(&id).is_err() {
                tracing::warn!(
                    segment = id,
                    "removing the ack file of a spool segment that is gone"
                );
                remove_acks(&cfg.dir, id);
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
            seal_failures: 0,
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
        // Rows per record: which count is known once the acks are read, and they are read
        // with the creation time from the segment's header, which `scan` reads.
        let mut rows_of = Vec::new();
        let scanned = match segment::scan(&path, |_, payload| {
            rows_of.push(codec::rows_in(payload).map_or(0, u64::from));
            0
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
        let key = AckKey {
            segment: id,
            created_ms: scanned.created_ms,
        };
        let acks = acks::read(&self.cfg.dir, key)?;
        if acks.bad_inside + acks.bad_at_end > 0 {
            tracing::warn!(
                segment = id,
                bad_inside = acks.bad_inside,
                bad_at_end = acks.bad_at_end,
                "ignored spool ack entries that cannot be trusted (at the end: what a power cut \
                 or a torn write left; inside: bytes the disk changed); the records they may \
                 have confirmed are inserted again, and FINAL shows one copy"
            );
        }
        let mut acked = acks.confirmed;
        acked.retain(|&i| i < scanned.records);
        let confirmed = acked.len() as u32;
        if scanned.records == 0 || confirmed >= scanned.records {
            // The ack files first: a crash between the removals leaves a segment without acks
            // (replayed whole: copies FINAL collapses), never acks a later segment of the same
            // id would take for its own.
            remove_acks(&self.cfg.dir, id);
            remove(&path);
            return Ok(());
        }
        let rows: u64 = rows_of
            .iter()
            .zip(0u32..)
            .filter(|(_, i)| acked.binary_search(i).is_err())
            .map(|(rows, _)| rows)
            .sum();
        let stats = &self.stats;
        stats.spool_bytes.fetch_add(scanned.len, Ordering::Relaxed);
        stats.spool_segments.fetch_add(1, Ordering::Relaxed);
        stats.spool_rows.fetch_add(rows, Ordering::Relaxed);
        let mut seg = Segment {
            records: scanned.records,
            end: scanned.len,
            sealed: true,
            ..Segment::new(id, scanned.created_ms)
        };
        for (i, &rows) in (0u32..).zip(&rows_of) {
            if acked.binary_search(&i).is_err() {
                seg.set_rows(i, rows);
            }
        }
        for i in acked {
            seg.mark_done(i);
        }
        self.segments.push_back(seg);
        Ok(())
    }
}
