//! Refused rows the dead-letter file cannot take: held in memory (and counted so), written
//! once it can, spooled at a stop; the spool not read while they take a quarter of memory.

use super::offline::queued;
use super::*;

/// A configuration whose dead-letter file cannot be written: a file stands where its
/// directory's parent should be (no directory can be made there, whoever runs the test), until
/// the test removes it (the returned path).
fn blocked_dead_letters(dir: &TestDir) -> (std::path::PathBuf, FlushConfig) {
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let cfg = FlushConfig {
        dead_letter_dir: blocked.join("deadletter"),
        ..config("unused", NATIVE_URL)
    };
    (blocked, cfg)
}

/// `cfg` with a memory budget whose room is 8 rows (a quarter of it, where held rows stop the
/// spool being read, is 2).
fn room_of_8_rows(cfg: FlushConfig) -> FlushConfig {
    FlushConfig {
        budget: Arc::new(MemoryBudget::new(16, 1 << 30)),
        ..cfg
    }
}

/// A new start on `dir`'s spool finds nothing to read back: every record was confirmed.
pub(super) fn assert_spool_confirmed(cfg: FlushConfig, dir: &TestDir) {
    let mut f = offline_flusher(cfg, dir);
    f.st.refill();
    assert!(f.st.queue.is_empty(), "every record confirmed");
}

/// A refusal that names the data and is never retried.
fn type_mismatch() -> InsertError {
    InsertError {
        retry: Retry::Never,
        code: Some(53),
        message: "Type mismatch".into(),
    }
}

/// Found by an audit: in `buffer` mode, refused rows the dead-letter file could not take
/// (its directory unwritable, the disk full) were counted lost when only in memory. They are
/// held until the file can take them, and spooled if the service stops first.
#[test]
fn refused_rows_the_dead_letter_file_cannot_take_are_held_then_written_or_spooled() {
    let dir = TestDir::new("flush-dead-blocked");
    let (blocked, cfg) = blocked_dead_letters(&dir);
    let mut f = queued(&dir, cfg, 3);
    let st = &mut f.st;
    let never = type_mismatch();
    let (pieces, rows) = st.next_insert();
    assert!(st.failed(pieces, rows, &never));
    assert_eq!(st.report.rows_lost, 0, "nothing lost");
    assert_eq!(
        st.report.rows_rejected, 0,
        "nothing in the dead-letter file yet"
    );
    assert!(st.queue.is_empty());
    assert_eq!(st.cfg.budget.rows(), 3, "held in memory");
    let held = |st: &State| st.cfg.stats.dead_letter_held_rows.load(Ordering::Relaxed);
    assert_eq!(held(st), 3, "and shown");
    let next = st.retry_dead_letters(Some(Instant::now()));
    assert!(
        next.is_some_and(|at| at > Instant::now()),
        "a retry is due later"
    );
    assert!(st.retry_dead_letters(None).is_some(), "still blocked");
    // The operator makes room: the next try writes them.
    std::fs::remove_file(&blocked).unwrap();
    assert_eq!(st.retry_dead_letters(None), None);
    let dead = std::fs::read_to_string(blocked.join("deadletter/spans.jsonl")).unwrap();
    assert_eq!(dead.lines().count(), 3, "{dead}");
    assert_eq!(st.report.rows_rejected, 3);
    assert_eq!(held(st), 0);
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));

    // Blocked again, and the service stops before it clears: the rows go to the spool.
    std::fs::remove_dir_all(&blocked).unwrap();
    std::fs::write(&blocked, b"").unwrap();
    let b = batch("o", "u", 2, 1_700_000_000_000);
    st.cfg.budget.take(b.len() as u64, b.heap_bytes() as u64);
    st.push(Entry::new(b, None), Instant::now());
    let (pieces, rows) = st.next_insert();
    st.failed(pieces, rows, &never);
    assert_eq!(st.cfg.budget.rows(), 2, "held in memory");
    assert_eq!(held(st), 2);
    st.spool_everything();
    assert_eq!(held(st), 0);
    assert_eq!(st.report.rows_lost, 0, "nothing lost");
    assert_eq!(st.report.rows_spooled, 2, "spooled for the next start");
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));
}

/// Found by a review: rows read back from the spool that the dead-letter file could not take
/// kept their record and left memory, so they were tried again only at the next start, and
/// their segments stayed in the spool until then (in `wal` mode, every row). They are held
/// like the others (shown, their record kept), kept at a stop, and written, their record
/// confirmed, once the file takes them.
#[test]
fn refused_spooled_rows_are_held_until_the_dead_letter_file_takes_them() {
    let dir = TestDir::new("flush-dead-spooled");
    let (blocked, cfg) = blocked_dead_letters(&dir);
    let never = type_mismatch();
    let held = |st: &State| st.cfg.stats.dead_letter_held_rows.load(Ordering::Relaxed);
    let refused_from_the_spool = |f: &mut Flusher| {
        f.st.refill();
        let (pieces, rows) = f.st.next_insert();
        assert_eq!(rows, 3, "the record is read back");
        assert!(f.st.failed(pieces, rows, &never));
        assert_eq!(held(&f.st), 3, "held and shown");
        assert_eq!(f.st.report.rows_rejected, 0);
        assert_eq!(f.st.cfg.budget.rows(), 3, "in memory");
    };
    {
        let mut f = offline_flusher(cfg.clone(), &dir);
        f.st.spool
            .append(&batch("o", "s", 3, 1_700_000_000_000), false)
            .unwrap();
        f.st.spool.sync().unwrap();
        refused_from_the_spool(&mut f);
        // A stop before the file takes them: the record stays for the next start.
        f.st.spool_everything();
        assert_eq!(f.st.report.rows_lost, 0);
        assert_eq!(held(&f.st), 0);
    }
    {
        let mut f = offline_flusher(cfg.clone(), &dir);
        refused_from_the_spool(&mut f);
        std::fs::remove_file(&blocked).unwrap();
        assert_eq!(f.st.retry_dead_letters(None), None, "written");
        let dead = std::fs::read_to_string(blocked.join("deadletter/spans.jsonl")).unwrap();
        assert_eq!(dead.lines().count(), 3, "{dead}");
        assert_eq!((held(&f.st), f.st.report.rows_rejected), (0, 3));
        assert_eq!((f.st.cfg.budget.rows(), f.st.cfg.budget.bytes()), (0, 0));
        f.st.spool_everything();
    }
    assert_spool_confirmed(cfg, &dir);
}

/// Found by the next review: held refused rows from the spool grew without a bound while the
/// dead-letter file stayed full (every record of the backlog read, refused and held in turn).
/// Once held rows take a quarter of the memory room the spool is not read and nothing is due
/// for it (no spinning); once the file takes the held rows, the backlog is read again.
#[test]
fn held_rows_at_a_quarter_of_memory_stop_the_spool_being_read_until_written() {
    let dir = TestDir::new("flush-dead-bound");
    let (blocked, cfg) = blocked_dead_letters(&dir);
    let cfg = room_of_8_rows(cfg);
    let never = type_mismatch();
    let mut f = offline_flusher(cfg.clone(), &dir);
    for trace in ["s1", "s2", "s3"] {
        f.st.spool
            .append(&batch("o", trace, 3, 1_700_000_000_000), false)
            .unwrap();
    }
    f.st.spool.sync().unwrap();
    let st = &mut f.st;
    // Two records fill half the room; refused, they are held.
    st.refill();
    let (pieces, rows) = st.next_insert();
    assert_eq!(rows, 6);
    assert!(st.failed(pieces, rows, &never));
    assert!(st.held_at_bound());
    st.refill();
    assert!(st.queue.is_empty(), "the third record is not read");
    assert!(st.spool.backlog());
    assert_eq!(st.due(), None, "nothing due: the thread sleeps");
    assert_eq!(st.cfg.budget.rows(), 6, "only the held rows in memory");

    std::fs::remove_file(&blocked).unwrap();
    assert_eq!(st.retry_dead_letters(None), None, "written");
    assert!(
        st.due().is_some_and(|at| at <= Instant::now()),
        "the backlog is due"
    );
    st.refill();
    let (pieces, rows) = st.next_insert();
    assert_eq!(rows, 3, "the third record");
    assert!(st.failed(pieces, rows, &never));
    let dead = std::fs::read_to_string(blocked.join("deadletter/spans.jsonl")).unwrap();
    assert_eq!(dead.lines().count(), 9, "{dead}");
    assert_eq!((st.report.rows_rejected, st.report.rows_lost), (9, 0));
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));
    st.spool_everything();
    drop(f);
    assert_spool_confirmed(cfg, &dir);
}

/// Held rows go to the dead-letter file as soon as it takes an insert's refused rows again,
/// not after their back-off (up to 60 s).
#[test]
fn held_rows_follow_the_first_refusal_the_file_takes_again() {
    let dir = TestDir::new("flush-dead-follow");
    let (blocked, cfg) = blocked_dead_letters(&dir);
    let mut f = queued(&dir, cfg, 3);
    let st = &mut f.st;
    let never = type_mismatch();
    let (pieces, rows) = st.next_insert();
    assert!(st.failed(pieces, rows, &never));
    assert!(st
        .undelivered_retry_at
        .is_some_and(|at| at > Instant::now()));
    std::fs::remove_file(&blocked).unwrap();
    let b = batch("o", "u", 2, 1_700_000_000_000);
    st.cfg.budget.take(b.len() as u64, b.heap_bytes() as u64);
    st.push(Entry::new(b, None), Instant::now());
    let (pieces, rows) = st.next_insert();
    assert!(st.failed(pieces, rows, &never));
    let dead = std::fs::read_to_string(blocked.join("deadletter/spans.jsonl")).unwrap();
    assert_eq!(dead.lines().count(), 5, "{dead}");
    assert!(st.undelivered.is_empty());
    assert_eq!(
        st.cfg.stats.dead_letter_held_rows.load(Ordering::Relaxed),
        0
    );
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));
}

/// Found by the fourth and fifth reviews: the bytes held refused rows keep in the budget woke
/// the sleeping thread as if an insert were due (`max_bytes`), and held rows past the memory
/// room as if it had to spool, though it can neither insert nor spool them: it spun until the
/// next dead-letter try. Now it sleeps until then.
#[test]
fn held_rows_do_not_wake_the_thread_as_if_an_insert_were_due() {
    let dir = TestDir::new("flush-dead-sleep");
    let (_blocked, cfg) = blocked_dead_letters(&dir);
    let cfg = FlushConfig {
        // Any byte in the budget is an insert's worth.
        max_bytes: 1,
        ..room_of_8_rows(cfg)
    };
    // More rows than the room: memory is past it, but only by what is held.
    let mut f = queued(&dir, cfg, 9);
    let st = &mut f.st;
    st.spool
        .append(&batch("o", "later", 3, 1_700_000_000_000), false)
        .unwrap();
    let (pieces, rows) = st.next_insert();
    assert!(st.failed(pieces, rows, &type_mismatch()));
    assert!(st.held_at_bound() && st.spool.backlog() && st.queue.is_empty());
    assert_eq!(st.due(), None);
    let next_try = st.retry_dead_letters(Some(Instant::now()));
    assert!(next_try.is_some());
    let began = Instant::now();
    st.receive(next_try);
    // A spin returns in microseconds; a sleep lasts until the try, about 1 s away.
    assert!(
        began.elapsed() >= std::time::Duration::from_millis(500),
        "woke after {:?}",
        began.elapsed()
    );
}

/// What held rows keep counted: their rows, and each batch's bytes once, however many of its
/// pieces are held (a bisected batch), until the last of them is written.
#[test]
fn held_load_counts_each_batch_once() {
    let entry = Rc::new(Entry::new(batch("o", "t", 4, 1_700_000_000_000), None));
    let rows = entry.batch.len();
    let piece = |start: usize, end: usize| Piece {
        entry: Rc::clone(&entry),
        start,
        end,
        arrived: Instant::now(),
        cap: usize::MAX,
        suspect: false,
    };
    let (a, b) = (piece(0, 2), piece(2, rows));
    let mut held = super::super::retry::HeldLoad::default();
    held.add(std::slice::from_ref(&a));
    held.add(std::slice::from_ref(&b));
    assert_eq!(held.load(), (rows as u64, entry.bytes));
    held.remove(std::slice::from_ref(&a));
    assert_eq!(
        held.load(),
        ((rows - 2) as u64, entry.bytes),
        "b still holds it"
    );
    held.remove(std::slice::from_ref(&b));
    assert_eq!(held.load(), (0, 0));
}
