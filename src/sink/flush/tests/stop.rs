//! A stop (`spool_everything`) of batches a bisection partly settled: what it spools, and when
//! it confirms the records it replaces.

use super::*;

/// Found by a review: at a stop, the rest of a partly settled batch read back went into the
/// spool's segment, and the next batch's append rolled it, whose sealing fsync failed; the last
/// segment's fsync then passed, so the batch's old record was confirmed although its rest might
/// not be on disk (a power cut, or the pages the failed fsync dropped, would lose those rows).
/// The old record stays whenever an fsync of the stop failed: a duplicate, not a loss.
#[test]
fn an_old_record_stays_when_the_fsync_of_its_rests_segment_failed() {
    use crate::row::{col, test_rows::str_at};
    use crate::sink::codec;
    use crate::sink::faults::{self, Site};
    use crate::sink::segment::{FRAME_LEN, HEADER_LEN};
    let dir = TestDir::new("flush-rest-seal");
    let cfg = config("unused", NATIVE_URL);
    let (a, b) = (batch("o", "a", 4, 0), batch("o", "b", 4, 0));
    let framed = |b: &RowBatch| {
        let mut payload = Vec::new();
        codec::encode(b, &mut payload);
        payload.len() as u64 + FRAME_LEN
    };
    // The segment holds both records and a's rest, not b's too: b's rest rolls it.
    let rest = a.select(std::slice::from_ref(&(1..4))).unwrap();
    let segment_bytes = HEADER_LEN + framed(&a) + framed(&b) + framed(&rest);
    let mut f = offline_flusher(cfg.clone(), &dir);
    let st = &mut f.st;
    st.spool = Spool::open(
        SpoolConfig {
            dir: dir.path().join("spool"),
            max_bytes: 1 << 20,
            segment_bytes,
        },
        Arc::clone(&st.cfg.stats),
    )
    .unwrap();
    st.spool.append(&a, false).unwrap();
    st.spool.append(&b, false).unwrap();
    st.refill();
    assert_eq!(st.queue.len(), 2);
    // Row 0 of each settled by a bisection (inserted or dead-lettered): rows 1..4 wait.
    for p in &mut st.queue {
        p.start = 1;
        p.cap = 3;
        p.entry.left.set(3);
    }
    st.queued_rows -= 2;
    st.cfg.budget.release(2, 0);
    faults::arm(Site::SegmentSync, 1);
    st.spool_everything();
    assert_eq!(st.report.rows_lost, 0);
    assert!(st.report.spool_sync_failed, "the stop's report says so");
    drop(f);

    let mut f = offline_flusher(cfg, &dir);
    f.st.refill();
    let mut rows: Vec<String> =
        f.st.queue
            .iter()
            .flat_map(|q| (q.start..q.end).map(|i| str_at(&q.entry.batch, col::trace_id, i)))
            .collect();
    rows.sort();
    // Each old record and its rest (written, the rests not known durable: the segment
    // holding a's failed its fsync as b's rest rolled it into a new one).
    let want = [["a"; 7].as_slice(), &["b"; 7]].concat();
    assert_eq!(rows, want);
}

/// Found in the drain audit: the stop's inserts went on for a third of the shutdown timeout
/// from when intake closed, that is from when the workers had finished, which takes them up to
/// their third and 1 s more (the cut-off's wait for connections to close, the accept's end).
/// The spooling was then left less than its third before the watchdog (the timeout and 500 ms
/// after the stop began), and nothing of it with a timeout under 3 s: in `buffer` mode the
/// rows not spooled by then were lost. Inserts now end two thirds of the timeout after the
/// stop began, at the latest; a stop whose workers took that long spools at once.
#[test]
fn the_stops_inserts_end_two_thirds_of_the_timeout_after_the_stop_began() {
    if skip() {
        return;
    }
    let db = TestDb::new("stop_clock");
    migrated(&db);
    let timeout = Duration::from_secs(30);
    let cfg = FlushConfig {
        interval: Duration::from_secs(600),
        shutdown_timeout: timeout,
        ..config(&db.0, NATIVE_URL)
    };
    // The stop began a whole timeout ago: the workers took it all.
    cfg.stop_began
        .set(Instant::now().checked_sub(timeout).expect("up for 30 s"))
        .unwrap();
    let h = Harness::start(cfg, TestDir::new("flush-stop-clock"));
    h.send(batch("o", "t", 5, 1_700_000_000_000));
    let (report, dir) = h.finish();
    assert_eq!(
        report,
        FlushReport {
            rows_spooled: 5,
            ..FlushReport::default()
        },
        "no insert once the stop's inserting time is over: everything spooled"
    );
    assert!(segments(&dir) > 0);
    assert_eq!(rows_in(&db), 0);
}
