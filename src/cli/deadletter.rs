//! `traceingest deadletter replay FILE`: inserts the rows of a dead-letter file again, once the
//! cause of their refusal is mended (a `spans` table changed by hand and put back, a value a
//! column constraint refused and the constraint dropped).
//!
//! Every line is checked before anything is inserted: a line that is not a dead-letter line of
//! this build (or of an earlier one) stops the command with its line number, and nothing is
//! written. The rows then go in as they were refused, every column unchanged (`version`
//! included), in inserts of at most `CHUNK_ROWS` rows or `CHUNK_BYTES` of lines. A replay is
//! idempotent: a row inserted twice has the same sorting key and version, so the table keeps
//! one copy (`SELECT ... FINAL` at once, merges later), and a replay stopped half way can be
//! run again whole.
//!
//! What ClickHouse refuses is treated as the flush thread does: an insert refused for some
//! rows' values is split in halves until those rows are found, and they are written, with the
//! new error, to the refused file (by default `FILE.refused`, appended), which is itself a
//! dead-letter file to replay later. An error that refuses any rows (the table does not take
//! these columns) or that lasts (ClickHouse unreachable for `TRIES` tries) stops the command,
//! saying how many rows were inserted before.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::config::StoreArgs;
use crate::row::{metadata_pairs, row_from_values, RowBatch, RowRef, SPANS_COLUMNS};
use crate::sink::clickhouse::{InsertError, Retry, RowRun, ShardsDone, Store};
use crate::sink::deadletter::{row_values, DeadLetters};

/// Rows per insert.
const CHUNK_ROWS: usize = 10_000;

/// Bytes of lines per insert (a line may carry a 1 MB input).
const CHUNK_BYTES: usize = 64 << 20;

/// Tries of an insert ClickHouse could not take (unreachable, busy), 1 s apart and doubling.
const TRIES: u32 = 6;

/// Tries of an insert refused with an error code this build does not know, before it is
/// split as a refusal of some rows.
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
    /// (the server starts a new one), or a refused file of an earlier replay.
    pub file: PathBuf,
    /// Where rows ClickHouse still refuses are appended [default: FILE.refused].
    #[arg(long)]
    pub refused: Option<PathBuf>,
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

/// Rows replayed so far.
#[derive(Debug, Default)]
struct Outcome {
    inserted: u64,
    refused: u64,
}

async fn replay(args: &ReplayArgs) -> anyhow::Result<()> {
    let file = &args.file;
    let refused_path = args.refused.clone().unwrap_or_else(|| {
        let mut p = file.clone().into_os_string();
        p.push(".refused");
        PathBuf::from(p)
    });
    if same_file(file, &refused_path) {
        bail!(
            "--refused {} is the file being replayed; name another",
            refused_path.display()
        );
    }
    // The lines there now: what the server appends meanwhile waits for the next replay.
    let size = std::fs::metadata(file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .len();
    let mut per_org: BTreeMap<String, u64> = BTreeMap::new();
    let mut rows = 0u64;
    let mut chunks = Chunks::open(file, size)?;
    while let Some(batch) = chunks.next_batch()? {
        rows += batch.len() as u64;
        let mut reader = batch.reader(0..batch.len());
        while let Some(values) = reader.next_row() {
            if let crate::row::Value::Str(org) = values[crate::row::col::org_id] {
                *per_org.entry(org.to_string()).or_default() += 1;
            }
        }
    }
    let orgs = per_org
        .iter()
        .map(|(org, n)| format!("{org} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    outln!("{}: {rows} rows to replay ({orgs})", file.display());
    if args.dry_run {
        outln!("nothing inserted (--dry-run)");
        return Ok(());
    }
    if rows == 0 {
        return Ok(());
    }
    let store = args.store.open()?;
    store.migrate().await?;
    let refused = DeadLetters::at(refused_path);
    let mut outcome = Outcome::default();
    let mut chunks = Chunks::open(file, size)?;
    while let Some(batch) = chunks.next_batch()? {
        insert_isolating(&store, &batch, &refused, &mut outcome)
            .await
            .with_context(|| {
                format!(
                    "{} of {rows} rows inserted and {} refused before this",
                    outcome.inserted, outcome.refused
                )
            })?;
    }
    outln!(
        "inserted {} rows into {}.spans",
        outcome.inserted,
        store.database()
    );
    if outcome.refused > 0 {
        bail!(
            "{} rows still refused by ClickHouse: written to {} with the error of each",
            outcome.refused,
            refused.path().display()
        );
    }
    Ok(())
}

/// Whether `a` and `b` name the same file (`b` may not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The first `size` bytes of a dead-letter file, read as batches of up to `CHUNK_ROWS` lines
/// or `CHUNK_BYTES`; blank lines are skipped.
struct Chunks<'p> {
    file: &'p Path,
    reader: BufReader<std::io::Take<std::fs::File>>,
    /// Lines read so far.
    number: usize,
}

impl<'p> Chunks<'p> {
    fn open(file: &'p Path, size: u64) -> anyhow::Result<Chunks<'p>> {
        let f =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        Ok(Chunks {
            file,
            reader: BufReader::new(f.take(size)),
            number: 0,
        })
    }

    /// The next lines' rows, or `None` at the end; an error names the file and line.
    fn next_batch(&mut self) -> anyhow::Result<Option<RowBatch>> {
        let mut chunk: Vec<(usize, String)> = Vec::new();
        let mut bytes = 0;
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
            if !line.trim().is_empty() {
                bytes += line.len();
                chunk.push((self.number, line));
            }
        }
        if chunk.is_empty() {
            return Ok(None);
        }
        let batch =
            batch_of(&chunk).map_err(|e| anyhow::anyhow!("{}: {e}", self.file.display()))?;
        Ok(Some(batch))
    }
}

/// The rows of dead-letter lines as one batch, in the table's key order; an error names the
/// line.
fn batch_of(lines: &[(usize, String)]) -> Result<RowBatch, String> {
    let parsed = lines
        .iter()
        .map(|(n, line)| {
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| format!("line {n}: not a JSON object: {e}"))?;
            match v {
                serde_json::Value::Object(mut o) => match o.remove("row") {
                    Some(serde_json::Value::Object(row)) => Ok(row),
                    _ => Err(format!(
                        "line {n}: no `row` object: not a line of a dead-letter file"
                    )),
                },
                _ => Err(format!("line {n}: not a JSON object")),
            }
        })
        .collect::<Result<Vec<_>, String>>()?;
    let values = parsed
        .iter()
        .zip(lines)
        .map(|(row, (n, _))| row_values(row).map_err(|e| format!("line {n}: {e}")))
        .collect::<Result<Vec<_>, String>>()?;
    let pairs = values
        .iter()
        .zip(lines)
        .map(|(v, (n, _))| {
            metadata_pairs(v).map_err(|c| {
                format!(
                    "line {n}: columns `metadata_keys` and `metadata_values` must be arrays of strings of one length (`{}`)",
                    SPANS_COLUMNS[c].0
                )
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut rows: Vec<RowRef<'_>> = values
        .iter()
        .zip(&pairs)
        .map(|(v, p)| row_from_values(v, p).expect("row_values gives every column its kind"))
        .collect();
    rows.sort_by_key(RowRef::table_key);
    Ok(RowBatch::from_rows(&rows))
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
                Retry::Unknown if tries < UNKNOWN_TRIES => {}
                Retry::Later | Retry::AfterMigrate => {
                    bail!(
                        "ClickHouse did not take the insert after {TRIES} tries: {}; run the \
                         same command again (a row inserted twice is stored once)",
                        described(&err)
                    )
                }
                Retry::Never => bail!(
                    "ClickHouse refuses these rows whatever their values: {}; is `spans` as \
                     `traceingest migrate` makes it? Mend it, then run the same command again",
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
