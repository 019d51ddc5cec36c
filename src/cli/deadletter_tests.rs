//! Tests of deadletter replay's reading and splitting.

use super::refused::{lock_within, locked_too_long};
use super::*;
use crate::sink::test_dir::TestDir;

#[test]
fn only_whole_lines_are_read() {
    let dir = TestDir::new("replay-lines");
    let file = dir.path().join("f.jsonl");
    for (text, want) in [
        ("", (0, 0)),
        ("{}\n", (3, 0)),
        ("{}\n{\"row\"", (3, 6)),
        ("no newline", (0, 10)),
    ] {
        std::fs::write(&file, text).unwrap();
        let f = std::fs::File::open(&file).unwrap();
        assert_eq!(whole_lines(&f, &file).unwrap(), want, "{text:?}");
    }
    // A last line longer than the window read from the end at a time.
    let long = format!("{}\n{}", "a".repeat(100_000), "b".repeat(70_000));
    std::fs::write(&file, &long).unwrap();
    let f = std::fs::File::open(&file).unwrap();
    assert_eq!(whole_lines(&f, &file).unwrap(), (100_001, 70_000));
}

#[test]
fn damaged_lines_are_named_or_left_out_with_their_numbers() {
    let dir = TestDir::new("replay-damaged");
    let path = dir.path().join("f.jsonl");
    std::fs::write(&path, b"\n\xff\xfe\n{\"row\": {}}\n  \n").unwrap();
    let f = std::fs::File::open(&path).unwrap();
    let (size, tail) = whole_lines(&f, &path).unwrap();
    assert_eq!((size, tail), (19, 0));
    let err = Chunks::open(&f, &path, size, false)
        .unwrap()
        .next_batch()
        .unwrap_err()
        .to_string();
    assert!(err.contains("f.jsonl line 2: not UTF-8"), "{err}");
    let mut chunks = Chunks::open(&f, &path, size, true).unwrap();
    assert!(chunks.next_batch().unwrap().is_none(), "no row left");
    let lines: Vec<usize> = chunks.damaged.iter().map(|(n, _)| *n).collect();
    assert_eq!(lines, [2, 3]);
    assert_eq!(chunks.damaged[1].1, "no value for column `org_id`");
}

/// Dead-letter lines of `spans` rows of one trace, as the server writes them.
fn dead_letter_lines(spans: usize) -> String {
    let dir = TestDir::new("replay-lines-src");
    let dl = DeadLetters::new(dir.path());
    let b = crate::row::test_rows::batch("org-1", "trace-1", spans, 1_700_000_000_000);
    let err = InsertError {
        retry: Retry::Split,
        code: Some(395),
        message: "refused".into(),
    };
    dl.write(&[RowRun::whole(&b)], &err).unwrap();
    std::fs::read_to_string(dl.path()).unwrap()
}

/// Found in review: damaged lines counted towards a chunk's 64 MB, and a chunk of nothing
/// but damaged lines read as the end of the file, so the rows after them were never tried.
#[test]
fn rows_after_64_mb_of_damaged_lines_are_read() {
    let dir = TestDir::new("replay-long-damage");
    let path = dir.path().join("f.jsonl");
    let garbage = "x".repeat(CHUNK_BYTES + 1);
    std::fs::write(&path, format!("{garbage}\n{}", dead_letter_lines(2))).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    let (size, _) = whole_lines(&f, &path).unwrap();
    let mut chunks = Chunks::open(&f, &path, size, true).unwrap();
    let (batch, lines) = chunks.next_batch().unwrap().expect("the rows after it");
    assert_eq!((batch.len(), lines), (2, 2..=3));
    assert!(chunks.next_batch().unwrap().is_none());
    assert_eq!(chunks.damaged.len(), 1);
}

#[test]
fn an_earlier_refused_file_is_read_whole_or_refused() {
    let dir = TestDir::new("replay-earlier");
    let path = dir.path().join("f.refused");
    assert!(refused_keys(&path).unwrap().is_empty(), "none there");
    let lines = dead_letter_lines(3);
    std::fs::write(&path, &lines).unwrap();
    assert_eq!(refused_keys(&path).unwrap().len(), 3);
    // Its last row without a newline would go unchecked: refused.
    std::fs::write(&path, lines.trim_end()).unwrap();
    let e = format!("{:#}", refused_keys(&path).unwrap_err());
    assert!(e.contains("ends in a line without its newline"), "{e}");
    // A damaged line: not the advice for a file to replay.
    std::fs::write(&path, format!("{lines}{{\"row\": 1}}\n")).unwrap();
    let e = format!("{:#}", refused_keys(&path).unwrap_err());
    assert!(e.contains("line 4: no `row` object"), "{e}");
    assert!(e.contains("refused file of an earlier run"), "{e}");
    assert!(!e.contains("--skip-damaged"), "{e}");
}

#[test]
fn one_run_at_a_time_writes_aside_and_its_file_goes_with_it() {
    let dir = TestDir::new("replay-lock");
    let aside = dir.path().join("f.refused.partial");
    let first = lock_aside(&aside).unwrap();
    let e = format!("{:#}", lock_aside(&aside).err().expect("locked"));
    assert!(e.contains("another `deadletter replay`"), "{e}");
    drop(first);
    assert!(!aside.exists(), "an unused aside is removed");
    // Renamed away (rows were refused), and a new file at its path: not removed.
    let second = lock_aside(&aside).unwrap();
    std::fs::rename(&aside, dir.path().join("f.refused")).unwrap();
    std::fs::write(&aside, "another run's").unwrap();
    drop(second);
    assert!(aside.exists(), "not this run's file");
    assert!(dir.path().join("f.refused").exists());
    std::fs::remove_file(&aside).unwrap();
    // Refused rows not renamed away (a failed rename) stay where the message says.
    let third = lock_aside(&aside).unwrap();
    std::fs::write(&aside, "refused rows").unwrap();
    drop(third);
    assert_eq!(std::fs::read_to_string(&aside).unwrap(), "refused rows");
    // A locked file whose path went elsewhere is not the path's file any more.
    std::fs::remove_file(&aside).unwrap();
    let fourth = lock_aside(&aside).unwrap();
    std::fs::remove_file(&aside).unwrap();
    assert!(!fourth.named());
}

#[test]
fn a_damaged_line_says_what_is_wrong() {
    assert!(row_object("{\"row\": {\"org_id\": \"o")
        .unwrap_err()
        .starts_with("the line ends before its JSON does"));
    assert!(row_object("{\"row\": 1}")
        .unwrap_err()
        .starts_with("no `row` object"));
    assert_eq!(row_object("[1]").unwrap_err(), "not a JSON object");
    assert!(row_object("{,}").unwrap_err().starts_with("not JSON"));
    assert!(row_object("{\"row\": {}}").unwrap().is_empty());
    assert_eq!(rows(1), "1 row");
    assert_eq!(rows(2), "2 rows");
}

/// Found by a review: a chunk refused for memory was halved, and a half, no longer the whole
/// chunk, was split at once by an unknown error as if it isolated refused rows, so its good
/// rows went to the refused file one by one. Halves for memory keep their range's standing;
/// only an isolation's halves split at once. The rest of the decision, as it was.
#[test]
fn a_half_for_memory_gets_an_unknown_error_s_tries_as_its_chunk_did() {
    use Step::*;
    let cases = [
        // (retry, rows, suspect, tries) -> step
        ((Retry::Smaller, 8, false, 1), Halve { suspect: false }),
        ((Retry::Smaller, 8, true, 1), Halve { suspect: true }),
        ((Retry::Unknown, 4, false, 1), Again),
        (
            (Retry::Unknown, 4, false, UNKNOWN_TRIES),
            Halve { suspect: true },
        ),
        ((Retry::Unknown, 4, true, 1), Halve { suspect: true }),
        ((Retry::Unknown, 1, true, 1), Refuse),
        ((Retry::Split, 4, false, 1), Halve { suspect: true }),
        ((Retry::Split, 1, false, 1), Refuse),
        ((Retry::Smaller, 1, false, 1), Again),
        ((Retry::Smaller, 1, false, TRIES), GiveUp),
        ((Retry::Later, 4, true, TRIES - 1), Again),
        ((Retry::AfterMigrate, 4, false, TRIES), GiveUp),
        ((Retry::Never, 4, false, 1), Stop),
    ];
    for ((retry, rows, suspect, tries), want) in cases {
        assert_eq!(
            after_failure(retry, rows, suspect, tries),
            want,
            "{retry:?}, {rows} rows, suspect {suspect}, try {tries}"
        );
    }
}

/// A replay into a database that does not exist (a mistyped `--clickhouse-database`) is
/// refused, naming it, and creates nothing: it made the database, put the rows there, and
/// exited 0, so the rows an operator meant to recover went where nobody reads them.
#[test]
fn a_replay_refuses_a_database_that_does_not_exist() {
    use crate::sink::clickhouse::test_support::{count, rt, skip, TestDb, NATIVE_URL};
    if skip() {
        return;
    }
    let db = TestDb::new("replay_no_db");
    let dir = TestDir::new("replay-no-db");
    let file = dir.path().join("f.jsonl");
    std::fs::write(&file, dead_letter_lines(2)).unwrap();
    let args = ReplayArgs {
        file: file.clone(),
        refused: None,
        skip_damaged: false,
        dry_run: false,
        store: StoreArgs {
            clickhouse_url: NATIVE_URL.into(),
            clickhouse_database: db.0.clone(),
            clickhouse_cluster: None,
        },
    };
    let e = format!("{:#}", rt().block_on(replay(&args)).unwrap_err());
    assert!(
        e.contains(&format!("ClickHouse has no database {:?}", db.0))
            && e.contains("INGEST_CLICKHOUSE_DATABASE"),
        "{e}"
    );
    let databases = count(&format!(
        "SELECT count() FROM system.databases WHERE name = '{}'",
        db.0
    ));
    assert_eq!(databases, 0, "the replay created the database");
}

/// Found in an audit: the end of a run replaced the refused file (or removed it, when the run
/// refused nothing) whatever had happened to it since the run checked it. Named with
/// `--refused` as the server's own dead-letter file, that lost the rows the server refused
/// during the run (the only copy: their spool records were confirmed). The run now holds the
/// file it checked: one there at its start is locked (the server's writes wait, holding their
/// rows), one that appears meanwhile is left as it is, this run's rows kept aside.
#[test]
fn a_run_replaces_or_removes_only_the_refused_file_it_checked() {
    let dir = TestDir::new("replay-held-refused");
    let server = DeadLetters::new(dir.path());
    let path = server.path().to_path_buf();
    let aside = dir.path().join("spans.jsonl.partial");
    let b = crate::row::test_rows::batch("org-1", "trace-1", 1, 1_700_000_000_000);
    let err = InsertError {
        retry: Retry::Split,
        code: Some(395),
        message: "refused".into(),
    };
    let refuse = || server.write(&[RowRun::whole(&b)], &err);

    // None at the start; the server refuses a row during the run.
    let held = HeldRefused::hold(&path, LOCK_WAIT).unwrap();
    refuse().unwrap();
    let servers = std::fs::read(&path).unwrap();
    let said = held.settle(&aside, 0, false).unwrap();
    assert_eq!(said, "", "a run that refused nothing");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        servers,
        "the server's row kept"
    );

    // Again, and this run refused a row: it stays aside, and the error says where.
    std::fs::remove_file(&path).unwrap();
    let held = HeldRefused::hold(&path, LOCK_WAIT).unwrap();
    refuse().unwrap();
    let servers = std::fs::read(&path).unwrap();
    std::fs::write(&aside, "this run's row\n").unwrap();
    let e = format!("{:#}", held.settle(&aside, 1, false).unwrap_err());
    assert!(
        e.contains(&aside.display().to_string()) && e.contains("appeared"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        servers,
        "the server's row kept"
    );
    assert_eq!(std::fs::read_to_string(&aside).unwrap(), "this run's row\n");

    // There at the start: the server cannot append to it during the run, so it is replaced
    // as checked; the server's row is held, and goes to the file at the path afterwards.
    let held = HeldRefused::hold(&path, LOCK_WAIT).unwrap();
    let busy = refuse().unwrap_err();
    assert_eq!(busy.kind(), std::io::ErrorKind::WouldBlock, "{busy}");
    assert_eq!(std::fs::read(&path).unwrap(), servers);
    held.settle(&aside, 1, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "this run's row\n",
        "replaced"
    );
    refuse().unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);

    // There at the start, and the run refused nothing: removed.
    let held = HeldRefused::hold(&path, LOCK_WAIT).unwrap();
    let said = held.settle(&aside, 0, false).unwrap();
    assert!(said.contains("removed"), "{said}");
    assert!(!path.exists());
}

/// Found by an audit: both of a run's locks were waited for without end, so two runs each
/// replaying the other's refused file (`replay X --refused Y` beside `replay Y --refused X`)
/// waited for each other for ever, and a run whose refused file another run was reading as
/// its FILE waited silently until that run ended. Each now waits a bounded time (the server
/// holds a lock only for a write) and then says who holds the file.
#[test]
fn a_lock_another_replay_holds_is_an_error_not_a_wait_without_end() {
    use std::os::fd::AsRawFd as _;
    let dir = TestDir::new("deadletter-lock-wait");
    let path = dir.path().join("spans.jsonl");
    std::fs::write(&path, "a line\n").unwrap();
    let wait = Duration::from_millis(50);
    // Another replay reads it as its FILE: a shared lock, held for its run.
    let other = std::fs::File::open(&path).unwrap();
    // SAFETY: `flock` on a descriptor the test owns.
    assert_eq!(unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_SH) }, 0);
    let e = format!("{:#}", HeldRefused::hold(&path, wait).err().unwrap());
    assert!(e.contains("another `traceingest deadletter replay`"), "{e}");
    // Let go, the file is held.
    drop(other);
    assert!(HeldRefused::hold(&path, wait).is_ok());
    // Another replay holds it as its refused file: an exclusive lock; FILE's shared one waits
    // for it no longer than the bound either.
    let other = std::fs::File::open(&path).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX) }, 0);
    let source = std::fs::File::open(&path).unwrap();
    let e = lock_within(&source, libc::LOCK_SH, wait).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    let said = format!("{:#}", locked_too_long(e, &path, wait));
    assert!(
        said.contains(&path.display().to_string()) && said.contains("50ms"),
        "{said}"
    );
    drop(other);
    assert!(lock_within(&source, libc::LOCK_SH, wait).unwrap());
}

/// Found by review: the refused file was held through a descriptor opened read-only. Where
/// `flock` is emulated with byte-range locks (NFS, which the dead-letter file's locking
/// provides for), an exclusive lock needs a descriptor open for writing: `EBADF`, and no run
/// could start while a refused file existed. It is held open for writing when it may be.
#[test]
fn the_refused_file_is_held_open_for_writing() {
    use std::os::fd::AsRawFd as _;
    let dir = TestDir::new("replay-held-refused-mode");
    let path = dir.path().join("spans.jsonl.refused");
    std::fs::write(&path, "a line\n").unwrap();
    let held = HeldRefused::hold(&path, LOCK_WAIT).unwrap();
    let fd = held.file().expect("a file there").as_raw_fd();
    // SAFETY: `fcntl(F_GETFL)` on a descriptor the held file owns; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert_eq!(flags & libc::O_ACCMODE, libc::O_RDWR);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a line\n");
}

/// Found by review: a server's write to its dead-letter file held as a run's `--refused` file
/// was refused saying a replay was reading the file in place and to move it away before
/// replaying it, advice for the other case; the server's log names both.
#[test]
fn a_server_write_to_a_held_refused_file_says_so() {
    let dir = TestDir::new("replay-held-refused-message");
    let server = DeadLetters::new(dir.path());
    let b = crate::row::test_rows::batch("org-1", "trace-1", 1, 1_700_000_000_000);
    let err = InsertError {
        retry: Retry::Split,
        code: Some(395),
        message: "refused".into(),
    };
    server.write(&[RowRun::whole(&b)], &err).unwrap();
    let held = HeldRefused::hold(server.path(), LOCK_WAIT).unwrap();
    let busy = server.write(&[RowRun::whole(&b)], &err).unwrap_err();
    assert_eq!(busy.kind(), std::io::ErrorKind::WouldBlock);
    assert!(busy.to_string().contains("--refused"), "{busy}");
    drop(held);
}
