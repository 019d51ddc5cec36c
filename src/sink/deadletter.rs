//! The dead-letter file: every row ClickHouse refused for good, one JSON line each.
//!
//! The file is `INGEST_DATA_DIR/deadletter/spans.jsonl`.
//!
//! A line is `{"dead_lettered_at_ms", "code", "error", "org_id", "trace_id", "span_id", "row"}`
//! where `row` has one key per `spans` column with the exact values that were refused (money as
//! decimal strings, times as epoch seconds), so an operator can see why, fix and re-insert. The
//! file is opened, appended and fsynced for each refused insert (a rare event), and never read
//! or truncated by the service, so it may be rotated or moved away at any time.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::clickhouse::{InsertError, RowRun};
use crate::clock::now_ms;
use crate::row::{Kind, Value, COLUMNS, KINDS, SPANS_COLUMNS};

/// Where refused rows go.
#[derive(Debug, Clone)]
pub struct DeadLetters {
    path: PathBuf,
}

impl DeadLetters {
    /// The file `dir/spans.jsonl`; the directory is created on first use.
    pub fn new(dir: &Path) -> DeadLetters {
        DeadLetters {
            path: dir.join("spans.jsonl"),
        }
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
            std::fs::create_dir_all(dir)?;
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        // A failed write is tried again later (the flush thread holds the rows): what part of
        // it reached the file is cut off first, so a retry neither repeats rows nor leaves half
        // a line in front of the next.
        let before = f.metadata()?.len();
        let written = f.write_all(&out).and_then(|()| {
            #[cfg(test)]
            crate::sink::faults::check(crate::sink::faults::Site::DeadLetterSync, libc::EIO)?;
            f.sync_data()
        });
        if let Err(e) = written {
            let _ = f.set_len(before);
            return Err(e);
        }
        Ok(rows)
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
