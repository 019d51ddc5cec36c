//! What records the spool gives up do to its gauges and counters.

use super::*;

/// Records given up because the disk changed under the spool (`lose_rest`) leave
/// `spool_rows` (and so `/health`'s `buffered` and `traceingest_buffered_rows`), and are
/// counted in `rows_lost`: the spool rows gauge went back to 0 once everything else was read,
/// and the rows given up were counted nowhere but as records. (It stayed at their rows for the
/// rest of the run.)
#[test]
fn rows_given_up_leave_the_spool_rows_and_count_as_lost() {
    let dir = TestDir::new("spool-lose-rows");
    let (mut spool, stats) = open(&dir, 64 << 10);
    for i in 0..8 {
        spool
            .append(&batch("o", &format!("t{i}"), 3, 0), false)
            .unwrap();
    }
    let first_segment_records = u64::from(spool.segments[0].records);
    assert!(spool.segments.len() >= 2 && first_segment_records > 1);
    assert_eq!(trace(&spool.read_next().unwrap()), "t0");
    faults::arm_errno(Site::SpoolRead, 1, libc::EIO);
    assert!(spool.read_next().is_none());
    let retry = spool.read_retry.as_mut().expect("a failed read");
    retry.since -= READ_GIVE_UP;
    retry.at = Instant::now();
    faults::arm_errno(Site::SpoolRead, 1, libc::EIO);
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
    let (mut spool, stats) = open(&dir, 64 << 10);
    for i in 0..8 {
        spool
            .append(&batch("o", &format!("t{i}"), 2, 0), false)
            .unwrap();
    }
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
