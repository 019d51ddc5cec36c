//! What records the spool gives up do to its gauges and counters.

use super::*;

/// A spool of small segments holding batches `t0` to `t7` of `rows` rows each.
fn eight_batches(dir: &TestDir, rows: usize) -> (Spool, Arc<FlushStats>) {
    let (mut spool, stats) = open(dir, 64 << 10);
    for i in 0..8 {
        spool
            .append(&batch("o", &format!("t{i}"), rows, 0), false)
            .unwrap();
    }
    (spool, stats)
}

/// The next read fails with EIO for longer than `READ_GIVE_UP`: the next `read_next` gives
/// up the rest of that segment.
fn give_up_after_a_lasting_eio(spool: &mut Spool) {
    faults::arm_errno(Site::SpoolRead, 1, libc::EIO);
    assert!(spool.read_next().is_none());
    let retry = spool.read_retry.as_mut().expect("a failed read");
    retry.since -= READ_GIVE_UP;
    retry.at = Instant::now();
    faults::arm_errno(Site::SpoolRead, 1, libc::EIO);
}

/// Records given up because the disk changed under the spool (`lose_rest`) leave
/// `spool_rows` (and so `/health`'s `buffered` and `traceingest_buffered_rows`), and are
/// counted in `rows_lost`: the spool rows gauge went back to 0 once everything else was read,
/// and the rows given up were counted nowhere but as records. (It stayed at their rows for the
/// rest of the run.)
#[test]
fn rows_given_up_leave_the_spool_rows_and_count_as_lost() {
    let dir = TestDir::new("spool-lose-rows");
    let (mut spool, stats) = eight_batches(&dir, 3);
    let first_segment_records = u64::from(spool.segments[0].records);
    assert!(spool.segments.len() >= 2 && first_segment_records > 1);
    assert_eq!(trace(&spool.read_next().unwrap()), "t0");
    give_up_after_a_lasting_eio(&mut spool);
    let mut read = 1;
    while spool.read_next().is_some() {
        read += 1;
    }
    assert_eq!(read, 8 - (first_segment_records - 1));
    assert!(!spool.backlog());
    assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 0);
    assert_eq!(
        stats.rows_lost.load(Ordering::Relaxed),
        3 * (first_segment_records - 1)
    );

    // A segment cut short on disk is given up the same way.
    let dir = TestDir::new("spool-lose-rows-cut");
    let (mut spool, stats) = eight_batches(&dir, 2);
    let first = u64::from(spool.segments[0].records);
    let seg = segment::segment_path(&dir.path().join("spool"), spool.segments[0].id);
    OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(HEADER_LEN)
        .unwrap();
    let mut read = 0;
    while spool.read_next().is_some() {
        read += 1;
    }
    assert_eq!(read, 8 - first);
    assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 0);
    assert_eq!(stats.rows_lost.load(Ordering::Relaxed), 2 * first);
}

/// Reads everything the spool gives back now, confirming each record: the traces read.
fn read_and_confirm_all(spool: &mut Spool) -> Vec<String> {
    let mut traces = Vec::new();
    while let Some(r) = spool.read_next() {
        traces.push(trace(&r));
        spool.confirm(r.pos);
    }
    traces
}

/// Records given up for a lasting read error are not lost with their segment: once the rest
/// is confirmed the file stays on disk (with its acks), and the next start reads them back.
/// Found by an audit: the segment was deleted once its other records were confirmed, so the
/// records given up (readable again after a failover, say) were gone for good.
#[test]
fn records_given_up_for_a_read_error_are_read_again_at_the_next_start() {
    let dir = TestDir::new("spool-lose-kept");
    let (mut spool, _) = eight_batches(&dir, 3);
    let first = spool.segments[0].records as usize;
    let first_path = segment::segment_path(&dir.path().join("spool"), spool.segments[0].id);
    let r = spool.read_next().unwrap();
    assert_eq!(trace(&r), "t0");
    spool.confirm(r.pos);
    give_up_after_a_lasting_eio(&mut spool);
    let read = read_and_confirm_all(&mut spool);
    assert_eq!(read.len(), 8 - first, "the later segments' records");
    assert!(
        !spool.segments.iter().any(|s| s.id == 0),
        "the first segment is done for this run"
    );
    assert!(first_path.exists(), "the segment stays on disk");
    drop(spool);

    let (mut spool, _) = open(&dir, 64 << 10);
    let again = read_and_confirm_all(&mut spool);
    let given_up: Vec<String> = (1..first).map(|i| format!("t{i}")).collect();
    assert_eq!(again, given_up, "only the records given up, none confirmed");
    drop(spool);
    let (mut spool, _) = open(&dir, 64 << 10);
    assert!(spool.read_next().is_none(), "all confirmed now");
    assert!(!first_path.exists(), "and the segment gone");
}

/// A record that passes its checksum and does not decode (a newer build's format, after a
/// roll-back) is not replayed, and not confirmed either: the segment stays on disk for a
/// build that decodes it. Found by an audit: it was acked, its rows counted lost and the
/// segment deleted, so rolling back a release during an outage lost every record the newer
/// build had spooled.
#[test]
fn a_record_this_build_cannot_decode_stays_on_disk() {
    let dir = TestDir::new("spool-newer-record");
    let (mut spool, _) = open(&dir, 1 << 20);
    for i in 0..3 {
        spool
            .append(&batch("o", &format!("t{i}"), 2, 0), false)
            .unwrap();
    }
    let id = spool.segments[0].id;
    drop(spool);
    // Record 0 as a newer build would write it: another format byte, a checksum that holds.
    let path = segment::segment_path(&dir.path().join("spool"), id);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = HEADER_LEN as usize;
    let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let payload = at + segment::FRAME_LEN as usize;
    bytes[payload] = 0xEE;
    let mut checked = bytes[at..at + 4].to_vec();
    checked.extend_from_slice(&bytes[payload..payload + len]);
    let crc = crc32c::crc32c(&checked);
    bytes[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let (mut spool, stats) = open(&dir, 1 << 20);
    assert_eq!(
        read_and_confirm_all(&mut spool),
        ["t1", "t2"].map(String::from)
    );
    assert_eq!(stats.spool_bad_records.load(Ordering::Relaxed), 1);
    drop(spool);
    assert!(path.exists(), "the segment stays on disk");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "as it was");
    // The next start finds t1 and t2 confirmed and the newer record still there.
    let (mut spool, _) = open(&dir, 1 << 20);
    assert!(spool.read_next().is_none());
    drop(spool);
    assert!(path.exists());
}

/// An append that fails half-written and cannot be cut back off the file leaves its segment:
/// the next batch goes to a new one, and every record appended reads back. Found by an
/// audit: the writer was kept, the next record landed after the half one while the spool
/// noted it at the old end, and reading back there found a bad frame and gave up the rest of
/// the segment, accepted batches included.
#[test]
fn an_append_that_cannot_be_cut_back_moves_the_next_batch_to_a_new_segment() {
    let dir = TestDir::new("spool-torn-append");
    let (mut spool, _) = open(&dir, 1 << 20);
    spool.append(&batch("o", "t0", 2, 0), false).unwrap();
    faults::arm(Site::SegmentTorn, 2);
    assert!(spool.append(&batch("o", "t1", 2, 0), false).is_err());
    spool.append(&batch("o", "t2", 2, 0), false).unwrap();
    spool.append(&batch("o", "t3", 2, 0), false).unwrap();
    assert_eq!(spool.segments.len(), 2, "t2 and t3 in a new segment");
    assert_eq!(
        read_and_confirm_all(&mut spool),
        ["t0", "t2", "t3"].map(String::from)
    );
}
