//! `traceingest deadletter replay FILE`: inserts the rows of a dead-letter file again, once the
//! cause of their refusal is mended (a `spans` table changed by hand and put back, a value a
//! column constraint refused and the constraint dropped).
//!
//! Every line is checked before anything is inserted: a line that is not a dead-letter line of
//! this build (or of an earlier one) stops the command with its line number, and nothing is
//! written (`--skip-damaged` leaves such lines out instead, listing them). Only whole lines are
//! read: a last line without its newline (a write in progress, or one a crash cut short) is
//! left out and said so. The rows then go in as they were refused, every column unchanged
//! (`version` included), in inserts of at most `CHUNK_ROWS` rows or `CHUNK_BYTES` of lines. A
//! replay is idempotent: a row inserted twice has the same sorting key and version, so the
//! table keeps one copy (`SELECT ... FINAL` at once, merges later), and a replay stopped half
//! way can be run again whole. FILE itself is never changed.
//!
//! What ClickHouse refuses is treated as the flush thread does: an insert refused for some
//! rows' values is split in halves until those rows are found, and they are written, with the
//! new error, to the refused file (by default `FILE.refused`), which is itself a dead-letter
//! file to replay later. Each run replaces it with what that run refused (it is written aside
//! and renamed at the end), so running the command again never repeats a row there. An error
//! that refuses any rows (the table does not take these columns) or that lasts (ClickHouse
//! unreachable for `TRIES` tries) stops the command, saying how many rows were inserted before.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::config::StoreArgs;
use crate::row::{col, metadata_pairs, row_from_values, RowBatch, RowRef, Value, SPANS_COLUMNS};
use crate::sink::clickhouse::{InsertError, Retry, RowRun, ShardsDone, Store};
use crate::sink::deadletter::{row_values, DeadLetters};

/// Rows per insert.
const CHUNK_ROWS: usize = 10_000;

/// Bytes of lines per insert (a line may carry a 1 MB input).
const CHUNK_BYTES: usize = 64 << 20;

/// Tries of an insert ClickHouse could not take (unreachable, busy), 1 s apart and doubling.
const TRIES: u32 = 6;

/// Tries of a chunk's first insert refused with an error code this build does not know, before
/// it is split as a refusal of some rows (its halves are split at once, as the flush thread's).
const UNKNOWN_TRIES: u32 = 2;

#[derive(Debug, Clone, clap::Subcommand)]
pub enum DeadLetterCommand {
    /// Insert a dead-letter file's rows again, every column as it was refused; rows ClickHouse
    /// still refuses go to the refused file (see README, "Guarantees").
    Replay(ReplayArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The dead-letter file: `INGEST_DATA_DIR/deadletter/spans.jsonl`, best moved away first
    /// (the server starts a new one), or the refused file of an earlier replay.
    pub file: PathBuf,
    /// Where the rows ClickHouse still refuses go, replaced by each run [default: FILE.refused].
    #[arg(long)]
    pub refused: Option<PathBuf>,
    /// Leave out lines that are not dead-letter lines (listing them) instead of stopping.
    #[arg(long)]
    pub skip_damaged: bool,
    /// Check every line and print what would be inserted; connect to nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub async fn run(command: &DeadLetterCommand) -> anyhow::Result<()> {
    match command {
        DeadLetterCommand::Replay(args) => replay(args).await,
    }
}

/// `n row` or `n rows`.
fn rows(n: u64) -> String {
    format!("{n} row{}", if n == 1 { "" } else { "s" })
}

/// Rows replayed so far.
#[derive(Debug, Default)]
struct Outcome {
    inserted: u64,
    refused: u64,
}

async fn replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let file = &args.file;
    let refused_path = args
        .refused
        .clone()
        .unwrap_or_else(|| with_suffix(file, ".refused"));
    if same_file(file, &refused_path) {
        bail!(
            "--refused {} is the file being replayed; name another",
            refused_path.display()
        );
    }
    let (size, tail) = whole_lines(file)?;
    let mut per_org: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    let mut chunks = Chunks::open(file, size, args.skip_damaged)?;
    while let Some((batch, _)) = chunks.next_batch()? {
        total += batch.len() as u64;
        let mut reader = batch.reader(0..batch.len());
        while let Some(values) = reader.next_row() {
            if let Value::Str(org) = values[col::org_id] {
                *per_org.entry(org.to_string()).or_default() += 1;
            }
        }
    }
    let orgs = per_org
        .iter()
        .map(|(org, n)| format!("{org} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let orgs = if orgs.is_empty() {
        String::new()
    } else {
        format!(" ({orgs})")
    };
    outln!("{}: {} to replay{orgs}", file.display(), rows(total));
    if tail > 0 {
        outln!(
            "the last {tail} bytes are not a whole line (a write in progress, or one a crash cut \
             short): left out"
        );
    }
    for (line, why) in &chunks.damaged {
        eprintln!("{} line {line}: {why}; left out", file.display());
    }
    let damaged = chunks.damaged.len();
    if args.dry_run {
        outln!("nothing inserted (--dry-run)");
    } else if total > 0 {
        let store = args.store.open()?;
        // As `reprice` does: the table must have every column the rows have.
        store.migrate().await?;
        insert_all(&store, file, size, &refused_path, total).await?;
    }
    if damaged > 0 {
        bail!(
            "{damaged} damaged line{} of {} left out (listed above)",
            if damaged == 1 { "" } else { "s" },
            file.display()
        );
    }
    Ok(())
}

/// Inserts the rows of the first `size` bytes of `file` (`total` rows), the ones still
/// refused going to `refused_path` (replaced; removed when this run refused none).
async fn insert_all(
    store: &Store,
    file: &Path,
    size: u64,
    refused_path: &Path,
    total: u64,
) -> anyhow::Result<()> {
    // Written aside, so that the refused file only ever holds one run's rows.
    let aside = with_suffix(refused_path, ".partial");
    match std::fs::remove_file(&aside) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot remove {}", aside.display()))
        }
        _ => {}
    }
    let refused = DeadLetters::at(aside.clone());
    let mut outcome = Outcome::default();
    let mut chunks = Chunks::open(file, size, true)?;
    let mut stopped = None;
    while let Some((batch, lines)) = chunks.next_batch()? {
        if let Err(e) = insert_isolating(store, &batch, &refused, &mut outcome).await {
            stopped = Some(e.context(format!(
                "stopped at lines {} to {} of {}",
                lines.start(),
                lines.end(),
                file.display()
            )));
            break;
        }
    }
    // What this run refused replaces what an earlier run did (those rows are still in FILE).
    let kept = if outcome.refused > 0 {
        std::fs::rename(&aside, refused_path).with_context(|| {
            format!(
                "cannot rename {} to {}",
                aside.display(),
                refused_path.display()
            )
        })?;
        format!(
            ", {} refused (in {})",
            rows(outcome.refused),
            refused_path.display()
        )
    } else {
        match std::fs::remove_file(refused_path) {
            Ok(()) => format!(
                "; {} of an earlier run removed: this run refused no row",
                refused_path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot remove {}", refused_path.display()))
            }
        }
    };
    let summary = format!(
        "{} of {} inserted into {}.spans{kept}",
        outcome.inserted,
        rows(total),
        store.database()
    );
    if let Some(e) = stopped {
        return Err(e.context(format!(
            "{summary}; the rest was not tried: run the same command again once ClickHouse takes \
             inserts (a row inserted twice is stored once)"
        )));
    }
    outln!("{summary}");
    if outcome.refused > 0 {
        bail!(
            "{} still refused by ClickHouse: written to {} with the error of each",
            rows(outcome.refused),
            refused_path.display()
        );
    }
    Ok(())
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.to_path_buf().into_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

/// Whether `a` and `b` name the same file (`b` may not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The bytes of `file`'s whole lines (up to and including its last newline now: what the
/// server appends meanwhile waits for the next replay), and how many bytes follow them.
fn whole_lines(file: &Path) -> anyhow::Result<(u64, u64)> {
    let cannot = || format!("cannot read {}", file.display());
    let mut f = std::fs::File::open(file).with_context(cannot)?;
    let size = f.metadata().with_context(cannot)?.len();
    let mut end = size;
    let mut window = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(window.len() as u64);
        let buf = &mut window[..(end - start) as usize];
        f.seek(SeekFrom::Start(start)).with_context(cannot)?;
        f.read_exact(buf).with_context(cannot)?;
        if let Some(at) = buf.iter().rposition(|&b| b == b'\n') {
            let whole = start + at as u64 + 1;
            return Ok((whole, size - whole));
        }
        end = start;
    }
    Ok((0, size))
}

/// The first `size` bytes of a dead-letter file, read as batches of up to `CHUNK_ROWS` lines
/// or `CHUNK_BYTES`; blank lines are skipped.
struct Chunks<'p> {
    file: &'p Path,
    reader: BufReader<std::io::Take<std::fs::File>>,
    /// Lines read so far.
    number: usize,
    /// Leave out damaged lines instead of failing.
    skip_damaged: bool,
    /// The damaged lines left out so far: number and what is wrong.
    damaged: Vec<(usize, String)>,
}

impl<'p> Chunks<'p> {
    fn open(file: &'p Path, size: u64, skip_damaged: bool) -> anyhow::Result<Chunks<'p>> {
        let f =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        Ok(Chunks {
            file,
            reader: BufReader::new(f.take(size)),
            number: 0,
            skip_damaged,
            damaged: Vec::new(),
        })
    }

    /// The next lines' rows and the lines they came from, or `None` at the end; an error names
    /// the file and the line.
    fn next_batch(&mut self) -> anyhow::Result<Option<(RowBatch, RangeInclusive<usize>)>> {
        let mut chunk: Vec<(usize, serde_json::Map<String, serde_json::Value>)> = Vec::new();
        let mut bytes = 0;
        let first = self.number + 1;
        while chunk.len() < CHUNK_ROWS && bytes < CHUNK_BYTES {
            let mut line = String::new();
            let n = self
                .reader
                .read_line(&mut line)
                .with_context(|| format!("{} line {}", self.file.display(), self.number + 1))?;
            if n == 0 {
                break;
            }
            self.number += 1;
            if line.trim().is_empty() {
                continue;
            }
            bytes += line.len();
            match row_object(&line) {
                Ok(row) => chunk.push((self.number, row)),
                Err(why) if self.skip_damaged => self.damaged.push((self.number, why)),
                Err(why) => bail!(
                    "{} line {}: {why} (mend or delete the line, or pass --skip-damaged to \
                     replay the others)",
                    self.file.display(),
                    self.number
                ),
            }
        }
        if chunk.is_empty() {
            return Ok(None);
        }
        let lines = first..=self.number;
        Ok(Some((self.batch_of(chunk)?, lines)))
    }

    /// The rows of checked lines as one batch, in the table's key order; a line whose values
    /// are wrong is left out or stops it, as a damaged one.
    fn batch_of(
        &mut self,
        chunk: Vec<(usize, serde_json::Map<String, serde_json::Value>)>,
    ) -> anyhow::Result<RowBatch> {
        let mut values = Vec::with_capacity(chunk.len());
        for (n, row) in &chunk {
            let checked = row_values(row).and_then(|v| {
                let pairs = metadata_pairs(&v).map_err(|c| {
                    format!(
                        "columns `metadata_keys` and `metadata_values` must be arrays of strings \
                         of one length (`{}`)",
                        SPANS_COLUMNS[c].0
                    )
                })?;
                Ok((v, pairs))
            });
            match checked {
                Ok(vp) => values.push(vp),
                Err(why) if self.skip_damaged => self.damaged.push((*n, why)),
                Err(why) => bail!(
                    "{} line {n}: {why} (mend or delete the line, or pass --skip-damaged to \
                     replay the others)",
                    self.file.display()
                ),
            }
        }
        let mut rows: Vec<RowRef<'_>> = values
            .iter()
            .map(|(v, p)| row_from_values(v, p).expect("row_values gives every column its kind"))
            .collect();
        rows.sort_by_key(RowRef::table_key);
        Ok(RowBatch::from_rows(&rows))
    }
}

/// A dead-letter line's `row` object.
fn row_object(line: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(line) {
        Ok(serde_json::Value::Object(mut o)) => match o.remove("row") {
            Some(serde_json::Value::Object(row)) => Ok(row),
            _ => Err("no `row` object: not a line of a dead-letter file".to_string()),
        },
        Ok(_) => Err("not a JSON object".to_string()),
        Err(e) if e.is_eof() => Err(format!("the line ends before its JSON does: {e}")),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// Inserts `batch`, isolating the rows ClickHouse refuses for their values into `refused`
/// (halves, as the flush thread does). Stops at an error that refuses any rows, and at one
/// that lasts `TRIES` tries.
async fn insert_isolating(
    store: &Store,
    batch: &RowBatch,
    refused: &DeadLetters,
    outcome: &mut Outcome,
) -> anyhow::Result<()> {
    // Ranges of rows still to insert, the next on top.
    let mut todo = Vec::new();
    todo.push(0..batch.len());
    while let Some(rows) = todo.pop() {
        let whole = rows.len() == batch.len();
        let runs = [RowRun {
            batch,
            rows: rows.clone(),
        }];
        let mut done = ShardsDone::default();
        let mut tries = 0;
        loop {
            let err = match store.insert_runs_resuming(&runs, &mut done).await {
                Ok(_) => {
                    outcome.inserted += rows.len() as u64;
                    break;
                }
                Err(e) => e,
            };
            tries += 1;
            match err.retry {
                Retry::Later | Retry::AfterMigrate if tries < TRIES => {
                    if err.retry == Retry::AfterMigrate {
                        store.migrate().await?;
                    }
                }
                Retry::Unknown if whole && tries < UNKNOWN_TRIES => {}
                Retry::Later | Retry::AfterMigrate => {
                    bail!(
                        "ClickHouse did not take an insert in {TRIES} tries: {}",
                        described(&err)
                    )
                }
                Retry::Never => bail!(
                    "ClickHouse refuses these rows whatever their values: {}; is `spans` as \
                     `traceingest migrate` makes it?",
                    described(&err)
                ),
                Retry::Split | Retry::Unknown => {
                    if rows.len() == 1 {
                        refused.write(&runs, &err).with_context(|| {
                            format!("cannot write {}", refused.path().display())
                        })?;
                        outcome.refused += 1;
                    } else {
                        let mid = rows.start + rows.len() / 2;
                        todo.push(mid..rows.end);
                        todo.push(rows.start..mid);
                    }
                    break;
                }
            }
            tokio::time::sleep(Duration::from_secs(1 << (tries - 1).min(4))).await;
        }
    }
    Ok(())
}

/// An insert error with its ClickHouse code when there is one.
fn described(err: &InsertError) -> String {
    match err.code {
        Some(code) => format!("code {code}: {}", err.message),
        None => err.message.clone(),
    }
}

#[cfg(test)]
mod tests {
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
            assert_eq!(whole_lines(&file).unwrap(), want, "{text:?}");
        }
        // A last line longer than the window read from the end at a time.
        let long = format!("{}\n{}", "a".repeat(100_000), "b".repeat(70_000));
        std::fs::write(&file, &long).unwrap();
        assert_eq!(whole_lines(&file).unwrap(), (100_001, 70_000));
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
}
