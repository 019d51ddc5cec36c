//! The spool's unit tests.

use super::read::READ_GIVE_UP;
use super::*;
use crate::sink::clickhouse::test_support::batch;
use crate::sink::faults::{self, Site};
use crate::sink::test_dir::TestDir;

mod lost;

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
    assert_eq!(files(&dir, ".ack2"), 0);
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

/// Ack files left without their segment (a crash between the removals) are not taken by a
/// new segment of the same id: they are removed at start-up, their id is not reused, and the
/// new segment's records are replayed after the next restart.
#[test]
fn an_orphan_ack_file_does_not_confirm_a_new_segments_records() {
    for (old, new) in [(true, false), (false, true), (true, true)] {
        let dir = TestDir::new("spool-orphan-ack");
        let spool_dir = dir.path().join("spool");
        // The crash: the ack files of segment 1 are there, its segment gone.
        std::fs::create_dir_all(&spool_dir).unwrap();
        if old {
            let entries: Vec<u8> = [0u32, 1, 2].iter().flat_map(|i| i.to_le_bytes()).collect();
            std::fs::write(acks::old_ack_path(&spool_dir, 1), entries).unwrap();
        }
        if new {
            let key = AckKey {
                segment: 1,
                created_ms: crate::clock::now_ms(),
            };
            let entries: Vec<u8> = (0..3).flat_map(|i| acks::entry(key, i)).collect();
            std::fs::write(acks::ack_path(&spool_dir, 1), entries).unwrap();
        }
        let again = orphan_case(&dir);
        assert_eq!(again, ["new0", "new1", "new2"], "old {old}, new {new}");
        for path in acks::ack_paths(&spool_dir, 1) {
            assert!(!path.exists(), "{} removed", path.display());
        }
        assert!(
            !segment::segment_path(&spool_dir, 1).exists(),
            "id 1 not reused"
        );
    }
}

/// Appends three records to a fresh spool over what `dir` holds, restarts it, and reads back.
fn orphan_case(dir: &TestDir) -> Vec<String> {
    {
        let (mut spool, _) = open(dir, 1 << 30);
        for i in 0..3 {
            spool
                .append(&batch("o", &format!("new{i}"), 1, 0), false)
                .unwrap();
        }
        spool.sync().unwrap();
    }
    let (mut spool, _) = open(dir, 1 << 30);
    std::iter::from_fn(|| spool.read_next())
        .map(|r| trace(&r))
        .collect()
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
/// roll still goes, into a new segment (refused, at a stop, its batch was lost), and the
/// failure is counted (`seal_failures`: a stop does not rely on what the segment holds);
/// the old one counts as sealed all the same (nothing is appended to it again, and its
/// records read back), so it is deleted once they are confirmed. (It stayed unsealed, and
/// on disk for the rest of the run.)
#[test]
fn a_segment_whose_sealing_fsync_failed_still_goes_once_confirmed() {
    let dir = TestDir::new("spool-seal-fails");
    let (mut spool, stats) = open(&dir, 64 << 10);
    // The first roll has no segment to seal; the second does.
    faults::arm(Site::SegmentSync, 1);
    for i in 0..8 {
        let b = batch("o", &format!("t{i}"), 3, 0);
        spool.append(&b, false).unwrap();
    }
    assert_eq!(spool.seal_failures(), 1, "the sealing fsync failed once");
    assert!(
        files(&dir, ".seg") > 1,
        "the appends went on in a new segment"
    );
    let read: Vec<Replayed> = std::iter::from_fn(|| spool.read_next()).collect();
    assert_eq!(read.len(), 8);
    for r in &read {
        spool.confirm(r.pos);
    }
    assert_eq!(files(&dir, ".seg"), 0);
    assert_eq!(stats.spool_bytes.load(Ordering::Relaxed), 0);
}

/// A torn last ack entry (a crash or a failed write in the middle of one) is ignored when
/// read, and the acks appended after it by the next run stay whole: the file is cut back to
/// its last whole entry before it is appended to. (They were appended after the torn bytes,
/// so every later entry was read shifted: a record confirmed then was replayed, and one
/// never confirmed was taken as confirmed and lost.)
#[test]
fn acks_appended_after_a_torn_entry_are_read_back_as_written() {
    let dir = TestDir::new("spool-torn-ack");
    let spool_dir = dir.path().join("spool");
    let traces: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    let traces: Vec<&str> = traces.iter().map(String::as_str).collect();
    left_with(&dir, &traces, &[]);
    // The first byte of the ack of record 5, as a crash left it.
    std::fs::write(acks::ack_path(&spool_dir, 1), [5u8]).unwrap();
    {
        let (mut spool, _) = open(&dir, 1 << 30);
        let first = spool.read_next().expect("record 0");
        assert_eq!(trace(&first), "t0");
        spool.confirm(first.pos);
        // Killed here: record 0 is confirmed, no other.
    }
    let (mut spool, _) = open(&dir, 1 << 30);
    let again: Vec<String> = std::iter::from_fn(|| spool.read_next())
        .map(|r| trace(&r))
        .collect();
    assert_eq!(again, traces[1..]);
}

/// Appends `tail` to every ack file of segment 1 (whatever its format): what a power cut
/// leaves when a file's size reached the disk and its last bytes did not.
fn damage_acks(dir: &TestDir, tail: &[u8]) {
    let spool_dir = dir.path().join("spool");
    let mut n = 0;
    for e in std::fs::read_dir(&spool_dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("0000000000000001.ack") {
            let mut f = OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(tail).unwrap();
            n += 1;
        }
    }
    assert!(n > 0, "an ack file to damage");
}

/// Runs a spool over records `traces`, confirms the records `confirm` (by index), and
/// stops: the records a restart replays after `damage` changed the ack files.
fn replayed_after(
    traces: &[&str],
    confirm: &[usize],
    damage: impl FnOnce(&TestDir),
) -> Vec<String> {
    let dir = TestDir::new("spool-ack-damage");
    left_with(&dir, traces, &[]);
    {
        let (mut spool, _) = open(&dir, 1 << 30);
        let read: Vec<Replayed> = std::iter::from_fn(|| spool.read_next()).collect();
        assert_eq!(read.len(), traces.len());
        for &i in confirm {
            spool.confirm(read[i].pos);
        }
    }
    damage(&dir);
    let (mut spool, _) = open(&dir, 1 << 30);
    std::iter::from_fn(|| spool.read_next())
        .map(|r| trace(&r))
        .collect()
}

/// A power cut leaves zeros at the end of an ack file (its size reached the disk, its last
/// bytes did not). Record 2 was confirmed before record 0 (confirms come out of order after
/// an intent replay or a retry): the zeros must not confirm record 0. (They read as "record 0
/// confirmed": record 0 was skipped at the next start and its rows lost.)
#[test]
fn a_zero_tail_of_an_ack_file_confirms_nothing() {
    for zeros in [4, 8, 12, 4096] {
        let again = replayed_after(&["t0", "t1", "t2"], &[2], |dir| {
            damage_acks(dir, &vec![0u8; zeros])
        });
        assert_eq!(again, ["t0", "t1"], "{zeros} zeros");
    }
}

/// The key of segment 1's ack entries, from its header.
fn key_of_segment_1(dir: &TestDir) -> AckKey {
    let header = std::fs::read(segment::segment_path(&dir.path().join("spool"), 1)).unwrap();
    AckKey {
        segment: 1,
        created_ms: u64::from_le_bytes(header[8..16].try_into().unwrap()),
    }
}

/// Bytes a power cut may leave at the end of an ack file (whatever the disk held there: a
/// deleted ack file's entries, or anything) confirm nothing: here record 1 was confirmed,
/// and records 0 and 2 must come back. (A bare index took any 4 bytes for an entry.)
#[test]
fn garbage_at_the_end_of_an_ack_file_confirms_nothing() {
    let random = acks::random_bytes(4096);
    // (what, the bytes from the spool's directory and random bytes)
    type Garbage = fn(&TestDir, &[u8]) -> Vec<u8>;
    let cases: [(&str, Garbage); 4] = [
        ("random bytes", |_, random| random.to_vec()),
        ("an earlier build's entries", |_, _| {
            [0u32, 2].iter().flat_map(|i| i.to_le_bytes()).collect()
        }),
        ("another segment's entries", |dir, _| {
            let key = AckKey {
                segment: 2,
                ..key_of_segment_1(dir)
            };
            [0, 2]
                .into_iter()
                .flat_map(|i| acks::entry(key, i))
                .collect()
        }),
        ("entries of an earlier segment 1", |dir, _| {
            let mut key = key_of_segment_1(dir);
            key.created_ms -= 1;
            [0, 2]
                .into_iter()
                .flat_map(|i| acks::entry(key, i))
                .collect()
        }),
    ];
    for (what, garbage) in cases {
        let again = replayed_after(&["t0", "t1", "t2"], &[1], |dir| {
            damage_acks(dir, &garbage(dir, &random))
        });
        assert_eq!(again, ["t0", "t2"], "{what}");
    }
}

/// A segment an earlier build confirmed records of (bare indices in `<id>.ack`) keeps them
/// confirmed, with those of the current format's file (the union), and once its last record
/// is confirmed both ack files go with it; at start-up too, when the two together confirm
/// every record.
#[test]
fn an_earlier_builds_ack_file_is_still_honoured_and_removed_with_its_segment() {
    let dir = TestDir::new("spool-old-acks");
    let spool_dir = dir.path().join("spool");
    left_with(&dir, &["t0", "t1", "t2", "t3"], &[]);
    let key = key_of_segment_1(&dir);
    let old: Vec<u8> = [2u32, 1].iter().flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(acks::old_ack_path(&spool_dir, 1), old).unwrap();
    std::fs::write(acks::ack_path(&spool_dir, 1), acks::entry(key, 0)).unwrap();
    let (mut spool, stats) = open(&dir, 1 << 30);
    assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 1, "only t3's row");
    let r = spool.read_next().expect("t3");
    assert_eq!(trace(&r), "t3");
    assert!(spool.read_next().is_none());
    spool.confirm(r.pos);
    assert_eq!(files(&dir, ".seg"), 0);
    assert_eq!(files(&dir, ".ack"), 0);
    assert_eq!(files(&dir, ".ack2"), 0);
    drop(spool);

    // Confirmed in full by the two files together: gone at start-up, with both.
    left_with(&dir, &["t0", "t1"], &[]);
    let key = key_of_segment_1(&dir);
    std::fs::write(acks::old_ack_path(&spool_dir, 1), 1u32.to_le_bytes()).unwrap();
    std::fs::write(acks::ack_path(&spool_dir, 1), acks::entry(key, 0)).unwrap();
    let (mut spool, _) = open(&dir, 1 << 30);
    assert!(spool.read_next().is_none());
    assert_eq!(files(&dir, ".seg"), 0);
    assert_eq!(files(&dir, ".ack"), 0);
    assert_eq!(files(&dir, ".ack2"), 0);
}

/// An earlier build cut only a torn entry off its ack file before appending to it, so zeros a
/// power cut left at its end (its size on disk, not its bytes) end up inside the file once that
/// build confirmed more after a restart: here record 2 confirmed, the cut, then record 3. The
/// zeros must not confirm record 0 there either. (Only zeros at the end were refused: record 0,
/// never inserted, was skipped and its rows lost.)
#[test]
fn zeros_inside_an_earlier_builds_ack_file_confirm_nothing() {
    let dir = TestDir::new("spool-old-acks-zeros");
    let spool_dir = dir.path().join("spool");
    left_with(&dir, &["t0", "t1", "t2", "t3"], &[]);
    let old: Vec<u8> = [2u32, 0, 0, 3]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    std::fs::write(acks::old_ack_path(&spool_dir, 1), old).unwrap();
    let (mut spool, stats) = open(&dir, 1 << 30);
    assert_eq!(stats.spool_rows.load(Ordering::Relaxed), 2, "t0's and t1's");
    let again: Vec<String> = std::iter::from_fn(|| spool.read_next())
        .map(|r| trace(&r))
        .collect();
    assert_eq!(again, ["t0", "t1"]);
}

/// `wal` mode: the flush thread confirms records of segments the write-ahead thread created,
/// binding each entry to the creation time it was told (`Started`, `Logged`); the next start
/// binds them to the one in each segment's header. The two are one number: the records
/// confirmed, out of order and across segments, are skipped, and only those.
#[test]
fn acks_of_the_write_ahead_threads_segments_hold_at_the_next_start() {
    use crate::sink::wal::{self, WalEvent, WalRequest};
    let dir = TestDir::new("spool-wal-acks");
    let mut cfg = SpoolConfig::new(dir.path().join("spool"), 1 << 30);
    cfg.segment_bytes = 4 << 10;
    let stats = Arc::new(FlushStats::default());
    let mut spool = Spool::open(cfg.clone(), Arc::clone(&stats)).unwrap();
    let writer = Writer::create(&cfg.dir, spool.take_next_id()).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (out_tx, out) = crossbeam_channel::unbounded::<WalEvent>();
    let handle = wal::spawn(cfg.clone(), writer, Arc::clone(&stats), rx, out_tx).unwrap();
    for i in 0..30 {
        let (done, _) = futures_channel::oneshot::channel();
        let batch = batch("o", &format!("w{i:02}"), 1, 0);
        tx.send(WalRequest { batch, done }).unwrap();
    }
    drop(tx);
    handle.join().unwrap();
    let mut logged = Vec::new();
    for event in out.try_iter() {
        if let Some(l) = wal::tests::hand_to_spool(event, &mut spool) {
            logged.push((trace_of(&l.batch), l.pos));
        }
    }
    assert_eq!(logged.len(), 30);
    let segments = logged.last().unwrap().1.segment - logged[0].1.segment + 1;
    assert!(segments >= 3, "{segments} segments");
    // Every third record confirmed, newest first.
    for (_, pos) in logged.iter().step_by(3).rev() {
        spool.confirm(*pos);
    }
    drop(spool);
    let (mut spool, _) = open(&dir, 1 << 30);
    let again: Vec<String> = std::iter::from_fn(|| spool.read_next())
        .map(|r| trace(&r))
        .collect();
    let want: Vec<String> = logged
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(_, (t, _))| t.clone())
        .collect();
    assert_eq!(again, want);
}

fn trace_of(b: &crate::row::RowBatch) -> String {
    crate::row::test_rows::str_at(b, crate::row::col::trace_id, 0)
}

/// A segment an earlier build left, cut at a bad record at this start, with the earlier
/// build's ack file: what this run confirms of it goes to the current format's file, bound
/// to the header's creation time, and the next start honours both files.
#[test]
fn acks_this_run_adds_to_a_cut_earlier_builds_segment_hold_at_the_next_start() {
    let dir = TestDir::new("spool-cut-old-acks");
    let spool_dir = dir.path().join("spool");
    let traces = ["t0", "t1", "t2", "t3", "t4", "t5"];
    left_with(&dir, &traces, &[9; 40]);
    std::fs::write(acks::old_ack_path(&spool_dir, 1), 4u32.to_le_bytes()).unwrap();
    {
        let (mut spool, _) = open(&dir, 1 << 30);
        assert_eq!(cut_files(&dir).len(), 1, "cut at the bad record");
        let read: Vec<Replayed> = std::iter::from_fn(|| spool.read_next()).collect();
        let read_traces: Vec<String> = read.iter().map(trace).collect();
        assert_eq!(
            read_traces,
            ["t0", "t1", "t2", "t3", "t5"],
            "t4 acked before"
        );
        spool.confirm(read[3].pos);
        spool.confirm(read[0].pos);
    }
    assert_eq!(files(&dir, ".ack2"), 1);
    let (mut spool, _) = open(&dir, 1 << 30);
    let again: Vec<String> = std::iter::from_fn(|| spool.read_next())
        .map(|r| trace(&r))
        .collect();
    assert_eq!(again, ["t1", "t2", "t5"]);
}

#[path = "ids_tests.rs"]
mod ids;
