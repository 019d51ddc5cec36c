//! The dead-letter file: every row ClickHouse refused for good, one JSON line each.
//!
//! The file is `INGEST_DATA_DIR/deadletter/spans.jsonl`.
//!
//! A line is `{"dead_lettered_at_ms", "code", "error", "org_id", "trace_id", "span_id", "row"}`
//! where `row` has one key per `spans` column with the exact values that were refused (money as
//! decimal strings, times as epoch seconds), so an operator can see why, fix and re-insert
//! (`traceingest deadletter replay`, which reads a row back with [`row_values`]). The file is
//! opened, appended and fsynced for each refused insert (a rare event), and never read or
//! truncated by the service, so it may be rotated or moved away at any time: the server's
//! writes hold an exclusive `flock` on it and check, once they have it, that the path still
//! names the file they opened, and a replay holds a shared one for its run, so a move never
//! lets rows be appended to a file after a replay has read it.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::clickhouse::{InsertError, RowRun};
use crate::clock::now_ms;
use crate::row::{col, version_of_ingested_at, Kind, Value, COLUMNS, KINDS, SPANS_COLUMNS};

/// Where refused rows go.
#[derive(Debug, Clone)]
pub struct DeadLetters {
    path: PathBuf,
    /// The size past which a write is refused (`with_max_bytes`).
    max_bytes: u64,
    /// Whether writes lock the file against a replay (the server's file, not a replay's own
    /// refused file, which the replay locks by other means).
    locked: bool,
}

impl DeadLetters {
    /// The server's file `dir/spans.jsonl`; the directory is created on first use.
    pub fn new(dir: &Path) -> DeadLetters {
        DeadLetters {
            locked: true,
            ..DeadLetters::at(dir.join("spans.jsonl"))
        }
    }

    /// The file at `path` (what a replay still cannot insert), without a size bound.
    pub fn at(path: PathBuf) -> DeadLetters {
        DeadLetters {
            path,
            max_bytes: u64::MAX,
            locked: false,
        }
    }

    /// Refuses a write that would take a non-empty file past `max_bytes` (the server's
    /// `INGEST_DEAD_LETTER_MAX_BYTES`), as a full disk would: the flush thread then holds the
    /// rows until the file is moved away. A write into an empty file is never refused, so rows
    /// of one insert larger than the bound still get in.
    pub fn with_max_bytes(self, max_bytes: u64) -> DeadLetters {
        DeadLetters { max_bytes, ..self }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line per row of `runs` and fsyncs. Returns the rows written.
    pub fn write(&self, runs: &[RowRun<'_>], err: &InsertError) -> io::Result<usize> {
        let at = now_ms();
        let mut out = Vec::new();
        let mut rows = 0;
        for run in runs {
            let mut reader = run.batch.reader(run.rows.clone());
            while let Some(values) = reader.next_row() {
                let row = row_json(values);
                let line = serde_json::json!({
                    "dead_lettered_at_ms": at,
                    "code": err.code,
                    "error": err.message,
                    "org_id": row["org_id"],
                    "trace_id": row["trace_id"],
                    "span_id": row["span_id"],
                    "row": row,
                });
                serde_json::to_writer(&mut out, &line).map_err(io::Error::other)?;
                out.push(b'\n');
                rows += 1;
            }
        }
        if let Some(dir) = self.path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir)?;
                // Its entry in the data directory too (the file's is synced after the write).
                if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    crate::sink::segment::sync_dir(parent)?;
                }
            }
        }
        let (mut f, readable) = self.open()?;
        // A failed write is tried again later (the flush thread holds the rows): what part of
        // it reached the file is cut off first, so a retry neither repeats rows nor leaves half
        // a line in front of the next.
        let before = f.metadata()?.len();
        if before > 0 && before.saturating_add(out.len() as u64) > self.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "the dead-letter file holds {before} bytes, and these {rows} rows' {} more \
                     would take it past INGEST_DEAD_LETTER_MAX_BYTES ({}): move it away (and \
                     replay it with `traceingest deadletter replay`) to let them in",
                    out.len(),
                    self.max_bytes
                ),
            ));
        }
        if !ends_a_line(&f, before, readable)? {
            out.insert(0, b'\n');
        }
        let written = f.write_all(&out).and_then(|()| {
            #[cfg(test)]
            crate::sink::faults::check(crate::sink::faults::Site::DeadLetterSync, libc::EIO)?;
            f.sync_data()?;
            // A file just made (the first refusal, or after the last one was moved away): its
            // directory entry too, or a power cut could lose the file after the spool records
            // of its rows were confirmed and deleted.
            match self.path.parent() {
                Some(dir) if before == 0 && !dir.as_os_str().is_empty() => {
                    crate::sink::segment::sync_dir(dir)
                }
                _ => Ok(()),
            }
        });
        if let Err(e) = written {
            let _ = f.set_len(before);
            return Err(e);
        }
        Ok(rows)
    }
}

impl DeadLetters {
    /// Opens the file to append to it, with whether it could be opened to read as well (to
    /// see how it ends; a file this process may only write is appended to as it is). The
    /// server's file is locked, and is the file the path names once locked: one moved away
    /// between the open and the lock is let go and the path opened again.
    fn open(&self) -> io::Result<(std::fs::File, bool)> {
        use std::os::fd::AsRawFd as _;
        for _ in 0..8 {
            let (f, readable) = match OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&self.path)
            {
                Ok(f) => (f, true),
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => (
                    OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&self.path)?,
                    false,
                ),
                Err(e) => return Err(e),
            };
            if !self.locked {
                return Ok((f, readable));
            }
            // SAFETY: `flock` on a descriptor `f` owns for the call; no memory is passed.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = io::Error::last_os_error();
                if unlockable(&e) {
                    tracing::warn!(
                        error = %e,
                        path = %self.path.display(),
                        "the dead-letter file cannot be locked (a filesystem without locks, or \
                         its lock manager failing); writing it unlocked"
                    );
                    if self.names(&f) {
                        return Ok((f, readable));
                    }
                    continue;
                }
                if e.kind() != io::ErrorKind::WouldBlock {
                    return Err(e);
                }
                if self.names(&f) {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        "a `traceingest deadletter replay` holds the dead-letter file \
                         (replaying it in place, or as its --refused file); refused rows go in \
                         once it ends (move the file away before replaying it)",
                    ));
                }
                // A replay holds the file, moved away: the path names a new one.
                continue;
            }
            if self.names(&f) {
                return Ok((f, readable));
            }
        }
        Err(io::Error::other(
            "the dead-letter file was moved away 8 times while it was being opened",
        ))
    }

    /// Whether the path names the file `f` has open.
    fn names(&self, f: &std::fs::File) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        match (std::fs::metadata(&self.path), f.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
}

/// Whether a `flock` error says the file cannot be locked at all (NFS without a working lock
/// manager: `ENOLCK`; filesystems without locks: `EOPNOTSUPP`, `ENOSYS`), rather than that the
/// lock is taken.
pub fn unlockable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS)
    )
}

/// Whether the next line may start at `f`'s end (`before` bytes): a line a crash cut short
/// stays a line of its own, the next row does not join it. A file this process cannot read
/// may end in one: a blank line costs nothing (replay skips those).
fn ends_a_line(f: &std::fs::File, before: u64, readable: bool) -> io::Result<bool> {
    match (before, readable) {
        (0, _) => Ok(true),
        (_, false) => Ok(false),
        (_, true) => {
            let mut last = [0];
            std::os::unix::fs::FileExt::read_exact_at(f, &mut last, before - 1)?;
            Ok(last[0] == b'\n')
        }
    }
}

/// A refused row as a JSON object with one key per `spans` column, for the dead-letter file:
/// strings as strings, money as an exact decimal string, times as epoch seconds, absent
/// values as `null`.
pub fn row_json(values: Vec<Value<'_>>) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::with_capacity(COLUMNS);
    for ((&(name, _), &kind), v) in SPANS_COLUMNS.iter().zip(KINDS).zip(values) {
        let v = match v {
            Value::Str(s) => serde_json::Value::from(s),
            Value::U64(n) => serde_json::Value::from(n),
            Value::I64(units) if kind == Kind::Money => {
                serde_json::Value::from(crate::pricing::format_money(units))
            }
            Value::I64(n) => serde_json::Value::from(n),
            Value::F64(f) => serde_json::Value::from(f),
            Value::U32(n) => serde_json::Value::from(n),
            Value::Null => serde_json::Value::Null,
            Value::Ints(v) => serde_json::Value::from(v),
            Value::Strs(v) => serde_json::Value::from(v),
        };
        m.insert(name.to_string(), v);
    }
    m
}

/// The values of a dead-letter line's `row` ([`row_json`]'s inverse), in column order, as
/// `RowReader` gives them; an error names the column and what is wrong with it. Columns this
/// build added after `ingested_at` that a file of an earlier build lacks (the last ones, all
/// of them from the first one missing) get what `migrate` gives stored rows (empty, zero or
/// NULL; `version` from `ingested_at`); every other column must be there, and no key may be
/// other than a column.
pub fn row_values(
    row: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<Value<'_>>, String> {
    use serde_json::Value as J;
    // A key that is no column: only looked for when the columns present are fewer than the
    // keys (76 lookups a line, not a scan of the columns for every key).
    let present = SPANS_COLUMNS
        .iter()
        .filter(|(name, _)| row.contains_key(*name))
        .count();
    if present < row.len() {
        if let Some(extra) = row
            .keys()
            .find(|k| !SPANS_COLUMNS.iter().any(|(name, _)| name == k))
        {
            return Err(format!(
                "`{extra}` is not a column of this build's spans table"
            ));
        }
    }
    let mut values = Vec::with_capacity(COLUMNS);
    for (c, (&(name, sql), &kind)) in SPANS_COLUMNS.iter().zip(KINDS).enumerate() {
        let Some(j) = row.get(name) else {
            // An earlier build lacks the columns added since: only a run to the last column.
            let later = SPANS_COLUMNS[c + 1..]
                .iter()
                .find(|(later, _)| row.contains_key(*later));
            // `version` is derived whatever follows it: builds of the OTLP work wrote
            // `reported_cost` before `version` existed.
            if c <= col::ingested_at || (later.is_some() && c != col::version) {
                return Err(format!("no value for column `{name}`"));
            }
            values.push(match kind {
                _ if c == col::version => {
                    let Value::U32(at) = values[col::ingested_at] else {
                        unreachable!("ingested_at is read first")
                    };
                    Value::U64(version_of_ingested_at(at))
                }
                Kind::Str => Value::Str(""),
                Kind::U64 => Value::U64(0),
                Kind::Time => Value::U32(0),
                Kind::Ints => Value::Ints(Vec::new()),
                Kind::MetaKeys | Kind::MetaValues => Value::Strs(Vec::new()),
                Kind::OptU64 | Kind::OptF64 | Kind::Money | Kind::OptTime => Value::Null,
            });
            continue;
        };
        let nullable = kind.tail_width() > 0;
        let v = match (kind, j) {
            (_, J::Null) if nullable => Some(Value::Null),
            (Kind::Str, J::String(s)) => Some(Value::Str(s)),
            (Kind::U64 | Kind::OptU64, J::Number(n)) => n.as_u64().map(Value::U64),
            (Kind::Time | Kind::OptTime, J::Number(n)) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Value::U32),
            (Kind::OptF64, J::Number(n)) => n.as_f64().map(Value::F64),
            (Kind::Money, J::String(s)) => crate::pricing::parse_money(s).map(Value::I64),
            (Kind::Ints, J::Array(a)) => a
                .iter()
                .map(J::as_u64)
                .collect::<Option<Vec<u64>>>()
                .map(Value::Ints),
            (Kind::MetaKeys | Kind::MetaValues, J::Array(a)) => a
                .iter()
                .map(J::as_str)
                .collect::<Option<Vec<&str>>>()
                .map(Value::Strs),
            _ => None,
        };
        let what = match kind {
            Kind::Money => "a decimal string with 10 places such as \"0.0000250000\", or null",
            Kind::Time => "epoch seconds",
            Kind::OptTime => "epoch seconds, or null",
            _ => sql,
        };
        values.push(v.ok_or_else(|| format!("column `{name}` must be {what}, got {}", shown(j)))?);
    }
    Ok(values)
}

/// A JSON value for a message: at most 60 characters of it.
fn shown(j: &serde_json::Value) -> String {
    let text = j.to_string();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::clickhouse::test_support::batch_then;
    use crate::sink::clickhouse::Retry;
    use crate::sink::test_dir::TestDir;

    #[test]
    fn one_line_per_row_with_ids_error_and_values() {
        let dir = TestDir::new("deadletter");
        let dl = DeadLetters::new(&dir.path().join("deadletter"));
        let b = batch_then("org-1", "trace-1", 1, 1_700_000_000_000, "bad \"span\"");
        let err = InsertError {
            retry: Retry::Split,
            code: Some(395),
            message: "Value passed to 'throwIf' function is non zero".into(),
        };
        let runs = [RowRun {
            batch: &b,
            rows: 1..2,
        }];
        assert_eq!(dl.write(&runs, &err).unwrap(), 1);
        assert_eq!(dl.write(&runs, &err).unwrap(), 1);
        let text = std::fs::read_to_string(dl.path()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "appended, never truncated");
        let l = &lines[0];
        assert_eq!(l["code"], 395);
        assert_eq!(l["span_id"], "bad \"span\"");
        assert_eq!(l["trace_id"], "trace-1");
        assert!(l["error"].as_str().unwrap().contains("throwIf"));
        let row = &l["row"];
        assert_eq!(row["span_id"], "bad \"span\"");
        assert_eq!(row["web_search_cost"], "99999999.9999999999");
        assert_eq!(row["internal_reasoning_cost"], serde_json::Value::Null);
        assert_eq!(
            row["metadata_keys"],
            serde_json::json!(["env", "ключ", "empty"])
        );
        assert_eq!(row["chunk_offsets"], serde_json::json!([0, 10, 20]));
        assert_eq!(row["ingested_at"], 1_700_000_100);
        assert_eq!(
            row.as_object().unwrap().len(),
            crate::row::SPANS_COLUMNS.len()
        );
    }

    /// A write that would take a non-empty file past its bound is refused whole, as a full
    /// disk would refuse it, and the file is left as it was; an empty file takes any write, so
    /// one insert's rows larger than the bound are never held forever. A file moved away makes
    /// room.
    #[test]
    fn the_bound_refuses_writes_past_it_and_a_moved_file_makes_room() {
        let dir = TestDir::new("deadletter-bound");
        let b = batch_then("org-1", "trace-1", 2, 1_700_000_000_000, "s");
        assert!(b.len() > 1);
        let err = InsertError {
            retry: Retry::Split,
            code: Some(395),
            message: "refused".into(),
        };
        let one = [RowRun {
            batch: &b,
            rows: 0..1,
        }];
        // The size of one row's line, from an unbounded file.
        let probe = DeadLetters::at(dir.path().join("probe.jsonl"));
        probe.write(&one, &err).unwrap();
        let line = std::fs::metadata(probe.path()).unwrap().len();

        // Room for two lines and a half.
        let dl = DeadLetters::new(&dir.path().join("deadletter")).with_max_bytes(line * 5 / 2);
        assert_eq!(dl.write(&one, &err).unwrap(), 1);
        assert_eq!(dl.write(&one, &err).unwrap(), 1);
        let full = std::fs::read(dl.path()).unwrap();
        let refused = dl.write(&one, &err).unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::StorageFull);
        let why = refused.to_string();
        assert!(
            why.contains("INGEST_DEAD_LETTER_MAX_BYTES") && why.contains("move it away"),
            "{why}"
        );
        assert_eq!(std::fs::read(dl.path()).unwrap(), full, "left as it was");

        // Moved away: the next write starts a new file, and an empty file takes more than
        // the bound at once.
        std::fs::rename(dl.path(), dir.path().join("moved.jsonl")).unwrap();
        let tiny = DeadLetters::new(&dir.path().join("deadletter")).with_max_bytes(line / 2);
        assert_eq!(tiny.write(&[RowRun::whole(&b)], &err).unwrap(), b.len());
        assert_eq!(
            tiny.write(&one, &err).unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
        let text = std::fs::read_to_string(tiny.path()).unwrap();
        assert_eq!(text.lines().count(), b.len(), "{text}");
    }

    /// A replay holds the file it reads with a shared `flock`: the server's writes never
    /// append to it then. Replayed in place, the write is refused (the rows are held and tried
    /// again); moved away first, the write goes to a new file at the path.
    #[test]
    fn writes_never_append_to_a_file_a_replay_holds() {
        use std::os::fd::AsRawFd as _;
        let dir = TestDir::new("deadletter-lock");
        let dl = DeadLetters::new(&dir.path().join("deadletter"));
        let b = batch_then("org-1", "trace-1", 1, 1_700_000_000_000, "s");
        let err = InsertError {
            retry: Retry::Split,
            code: Some(395),
            message: "refused".into(),
        };
        dl.write(&[RowRun::whole(&b)], &err).unwrap();
        let before = std::fs::read(dl.path()).unwrap();
        let replay = std::fs::File::open(dl.path()).unwrap();
        // SAFETY: `flock` on a descriptor the test owns.
        assert_eq!(unsafe { libc::flock(replay.as_raw_fd(), libc::LOCK_SH) }, 0);

        let busy = dl.write(&[RowRun::whole(&b)], &err).unwrap_err();
        assert_eq!(busy.kind(), io::ErrorKind::WouldBlock, "{busy}");
        assert!(busy.to_string().contains("move the file away"), "{busy}");
        assert_eq!(std::fs::read(dl.path()).unwrap(), before, "left as it was");

        let moved = dir.path().join("moved.jsonl");
        std::fs::rename(dl.path(), &moved).unwrap();
        assert_eq!(dl.write(&[RowRun::whole(&b)], &err).unwrap(), b.len());
        assert_eq!(
            std::fs::read(&moved).unwrap(),
            before,
            "the moved file untouched"
        );
        let text = std::fs::read_to_string(dl.path()).unwrap();
        assert_eq!(text.lines().count(), b.len(), "a new file at the path");
        // A replay's own refused file is not locked by its writes (the replay locks it).
        let own = DeadLetters::at(moved.clone());
        assert_eq!(own.write(&[RowRun::whole(&b)], &err).unwrap(), b.len());
        drop(replay);
    }

    /// A line a crash cut short (no newline at its end) is not joined by the next row.
    #[test]
    fn a_line_cut_short_stays_a_line_of_its_own() {
        let dir = TestDir::new("deadletter-cut");
        let dl = DeadLetters::new(&dir.path().join("deadletter"));
        std::fs::create_dir_all(dir.path().join("deadletter")).unwrap();
        std::fs::write(dl.path(), "{\"row\": {\"org_id\"").unwrap();
        let b = batch_then("org-1", "trace-1", 1, 1_700_000_000_000, "s");
        let err = InsertError {
            retry: Retry::Split,
            code: Some(395),
            message: "refused".into(),
        };
        assert_eq!(dl.write(&[RowRun::whole(&b)], &err).unwrap(), 2);
        let text = std::fs::read_to_string(dl.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0], "{\"row\": {\"org_id\"");
        for l in &lines[1..] {
            serde_json::from_str::<serde_json::Value>(l).unwrap();
        }
    }

    /// Found in review: with a file it may only write, the writer could not look at its end
    /// and joined a cut line; it now starts on a new line (a blank one, if it was not cut).
    #[test]
    fn a_file_that_cannot_be_read_gets_a_newline_first() {
        let dir = TestDir::new("deadletter-end");
        let path = dir.path().join("f");
        for (text, readable, want) in [
            ("", false, true),
            ("cut", true, false),
            ("whole\n", true, true),
            ("whole\n", false, false),
            ("cut", false, false),
        ] {
            std::fs::write(&path, text).unwrap();
            let f = std::fs::File::open(&path).unwrap();
            let before = text.len() as u64;
            assert_eq!(ends_a_line(&f, before, readable).unwrap(), want, "{text:?}");
        }
    }

    /// What `row_json` writes, `row_values` reads back as it was, through the JSON text.
    #[test]
    fn a_row_reads_back_from_its_line_as_it_was_written() {
        use crate::row::test_rows::row;
        use crate::row::{RowBatch, RowRef};
        let mut full = row("org-1", "trace-1", "span \"1\"", 1_700_000_000_000, true);
        full.costs.total = Some(-crate::pricing::MAX_MONEY);
        full.ttft_ms = Some(0.1 + 0.2);
        // One that serde_json's default parser reads one unit in the last place off.
        full.chunk_jitter_p90 = Some(123_456_789.123_456_79);
        let rows: Vec<RowRef<'_>> = vec![full, row("org-1", "trace-1", "s2", 5, false)];
        let b = RowBatch::from_rows(&rows);
        let mut reader = b.reader(0..2);
        while let Some(values) = reader.next_row() {
            let text = serde_json::to_string(&row_json(values.clone())).unwrap();
            let back: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&text).unwrap();
            assert_eq!(row_values(&back).unwrap(), values);
        }
    }

    #[test]
    fn a_line_of_an_earlier_build_or_a_wrong_one_is_read_or_named() {
        use crate::row::test_rows::batch;
        let b = batch("org-1", "trace-1", 1, 1_700_000_000_000);
        let values = b.reader(0..1).next_row().unwrap();
        let line = row_json(values.clone());
        // Written before `customer_id` and the columns after it existed.
        let mut older = line.clone();
        for (name, _) in &SPANS_COLUMNS[col::customer_id..] {
            older.remove(*name);
        }
        let back = row_values(&older).unwrap();
        assert_eq!(back[..col::customer_id], values[..col::customer_id]);
        assert_eq!(back[col::customer_id], Value::Str(""));
        assert_eq!(back[col::response_time_ms], Value::Null);
        assert_eq!(back[col::version], Value::U64(1_700_000_100_000));
        assert_eq!(back[col::reported_cost], Value::Null);

        let wrong = |edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
            let mut l = line.clone();
            edit(&mut l);
            row_values(&l).unwrap_err()
        };
        assert_eq!(
            wrong(&|l| {
                l.remove("ingested_at");
            }),
            "no value for column `ingested_at`"
        );
        assert_eq!(
            wrong(&|l| {
                l.remove("customer_id");
            }),
            "no value for column `customer_id`",
            "a column missing before one present: no build wrote that"
        );
        // Except `version`, which an early build of the OTLP work wrote `reported_cost` without.
        let mut no_version = line.clone();
        no_version.remove("version");
        assert_eq!(
            row_values(&no_version).unwrap()[col::version],
            Value::U64(1_700_000_100_000)
        );
        assert_eq!(
            wrong(&|l| {
                l.insert("poison".into(), 1.into());
            }),
            "`poison` is not a column of this build's spans table"
        );
        let e = wrong(&|l| {
            l.insert("total_cost".into(), 0.5.into());
        });
        assert!(
            e.starts_with("column `total_cost` must be a decimal string"),
            "{e}"
        );
        let e = wrong(&|l| {
            l.insert("input_tokens".into(), (-1).into());
        });
        assert_eq!(e, "column `input_tokens` must be UInt64, got -1");
        let e = wrong(&|l| {
            l.insert("ingested_at".into(), (1u64 << 32).into());
        });
        assert_eq!(
            e,
            "column `ingested_at` must be epoch seconds, got 4294967296"
        );
        let e = wrong(&|l| {
            l.insert("input".into(), "x".repeat(1000).into());
            l.insert("span_id".into(), serde_json::Value::Null);
        });
        assert_eq!(e, "column `span_id` must be String, got null");
        let e = wrong(&|l| {
            l.insert("org_id".into(), "y".repeat(1000).into());
            l.insert("trace_id".into(), "y".repeat(1000).into());
            l.insert("chunk_tokens".into(), serde_json::json!([1, "2"]));
        });
        assert_eq!(
            e,
            "column `chunk_tokens` must be Array(UInt64), got [1,\"2\"]"
        );
        let e = wrong(&|l| {
            l.insert("metadata_keys".into(), "y".repeat(100).into());
        });
        assert!(e.ends_with(&format!("got \"{}...", "y".repeat(59))), "{e}");
    }

    /// Found in review: a write that failed after some of its lines reached the file (a full
    /// disk, a failed fsync) left them there, and the retry the flush thread now makes appended
    /// them again. They are cut off first.
    #[test]
    fn a_failed_write_leaves_nothing_behind_for_its_retry_to_repeat() {
        use crate::sink::faults::{self, Site};
        let dir = TestDir::new("deadletter-retry");
        let dl = DeadLetters::new(&dir.path().join("deadletter"));
        let b = batch_then("org-1", "trace-1", 3, 1_700_000_000_000, "bad");
        let err = InsertError {
            retry: Retry::Never,
            code: Some(53),
            message: "Type mismatch".into(),
        };
        let runs = [RowRun {
            batch: &b,
            rows: 0..4,
        }];
        assert_eq!(dl.write(&runs, &err).unwrap(), 4);
        faults::arm(Site::DeadLetterSync, 1);
        assert!(dl.write(&runs, &err).is_err());
        let text = std::fs::read_to_string(dl.path()).unwrap();
        assert_eq!(text.lines().count(), 4, "the failed write's lines are gone");
        assert_eq!(dl.write(&runs, &err).unwrap(), 4);
        let text = std::fs::read_to_string(dl.path()).unwrap();
        for line in text.lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        assert_eq!(text.lines().count(), 8);
    }
}
