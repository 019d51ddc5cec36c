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
//! file to replay later. Each run replaces it with what that run refused (it is written aside,
//! in a file locked for the run, and renamed at the end), so running the command again never
//! repeats a row there; a run replaces it only when every row in it is also in FILE, and only
//! the file it checked (`HeldRefused`: locked for the run, so a server's dead-letter file named
//! with `--refused` loses no row written during the run), and one
//! that stops before the end without refusing any leaves it as it was. An error
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

#[path = "deadletter_refused.rs"]
mod refused;
use refused::{lock_aside, lock_for_run, HeldRefused, LockedAside, LOCK_WAIT};

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
    /// still refuses go to the refused file (see README, "Guarantees"). Exits 0 when every row
    /// went in, 3 when rows are still refused or damaged lines were left out, 1 when it
    /// stopped part-way or could not start.
    Replay(ReplayArgs),
    /// Find the records still whole in what a spool segment's cut kept
    /// (`INGEST_DATA_DIR/spool/<segment>.seg.cut-<ms>`) and write their rows as a dead-letter
    /// file to check and replay (see README, "Guarantees").
    Salvage(super::salvage::SalvageArgs),
}

#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The dead-letter file: `INGEST_DATA_DIR/deadletter/spans.jsonl`, best moved away first
    /// (the server starts a new one), or the refused file of an earlier replay.
    pub file: PathBuf,
    /// Where the rows ClickHouse still refuses go, replaced by each run (only when FILE holds
    /// every row already there) [default: FILE.refused].
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
        DeadLetterCommand::Salvage(args) => super::salvage::run(args),
    }
}

/// A replay that went through its whole file but did not insert every row: some are still
/// refused (in the refused file) or were on damaged lines left out (`--skip-damaged`). The
/// command exits `3` (done as far as it can be; running it again as it is changes nothing),
/// where a run that stopped part-way or could not start exits `1` (running it again once the
/// cause is gone is safe: a row inserted twice is stored once).
#[derive(Debug)]
pub struct PartlyDone(pub String);

impl std::fmt::Display for PartlyDone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PartlyDone {}

/// `n row` or `n rows`.
pub(super) fn rows(n: u64) -> String {
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
    let aside = with_suffix(&refused_path, ".partial");
    for other in [&refused_path, &aside] {
        if same_file(file, other) {
            bail!(
                "the refused rows would be written to {}, the file being replayed; name another \
                 --refused",
                other.display()
            );
        }
    }
    // One run at a time writes to a refused file (through its aside, locked for the run).
    let lock = if args.dry_run {
        None
    } else {
        Some(lock_aside(&aside)?)
    };
    let source =
        std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
    // A server writing refused rows to this file (it was moved away after the server opened
    // it) finishes its write first; none starts while the run holds the file.
    if !args.dry_run {
        // A shared lock: the server takes an exclusive one to write its dead-letter file
        // (`DeadLetters::write`) and, while a replay holds the file, writes to a new one at
        // its path instead.
        lock_for_run(&source, libc::LOCK_SH, LOCK_WAIT, file)?;
    }
    let (size, tail) = whole_lines(&source, file)?;
    // The run replaces the refused file: only when every row in it is in FILE too, and only
    // the file it checked (held from here to the end of the run).
    let held = if args.dry_run {
        None
    } else {
        Some(HeldRefused::hold(&refused_path, LOCK_WAIT)?)
    };
    let mut earlier = refused_keys(&refused_path)?;
    let mut per_org: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    let mut chunks = Chunks::open(&source, file, size, args.skip_damaged)?;
    while let Some((batch, _)) = chunks.next_batch()? {
        total += batch.len() as u64;
        let mut reader = batch.reader(0..batch.len());
        while let Some(values) = reader.next_row() {
            if let Value::Str(org) = values[col::org_id] {
                *per_org.entry(org.to_string()).or_default() += 1;
            }
            if !earlier.is_empty() {
                earlier.remove(&RowKey::of(&values));
            }
        }
    }
    if !earlier.is_empty() && total > 0 {
        bail!(
            "{} holds {} that {} does not (the refused rows of another file's replay?); this run \
             would replace it: replay it or move it away first, or name another --refused",
            refused_path.display(),
            rows(earlier.len() as u64),
            file.display()
        );
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
    let first_pass = std::mem::take(&mut chunks.damaged);
    for (line, why) in &first_pass {
        super::note(
            "WARN",
            format_args!("{} line {line}: {why}; left out", file.display()),
        );
    }
    if args.dry_run {
        outln!("nothing inserted (--dry-run)");
    } else if total > 0 {
        let store = args.store.open()?;
        // As `reprice` does: the table must have every column the rows have, in a database
        // that exists (a mistyped one would take the rows where nobody reads them).
        super::migrate_existing(&store).await?;
        let mut chunks = Chunks::open(&source, file, size, args.skip_damaged)?;
        let aside = lock.as_ref().expect("locked unless a dry run");
        let held = held.expect("held unless a dry run");
        insert_all(&store, &mut chunks, &first_pass, held, aside, total).await?;
    }
    let damaged = first_pass.len();
    if damaged > 0 {
        bail!(PartlyDone(format!(
            "{damaged} damaged line{} of {} left out (listed above)",
            if damaged == 1 { "" } else { "s" },
            file.display()
        )));
    }
    Ok(())
}

/// What tells a refused row from another: its key in the table and its version, as the first
/// 16 bytes of their SHA-256 (so that a refused file of millions of rows stays small in memory).
#[derive(Debug, PartialEq, Eq, Hash)]
struct RowKey([u8; 16]);

impl RowKey {
    fn of(values: &[Value<'_>]) -> RowKey {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        for c in [
            col::org_id,
            col::trace_id,
            col::start_time_ms,
            col::span_id,
            col::version,
        ] {
            match &values[c] {
                Value::Str(s) => {
                    h.update((s.len() as u64).to_le_bytes());
                    h.update(s.as_bytes());
                }
                Value::U64(n) => h.update(n.to_le_bytes()),
                _ => h.update([0xff]),
            }
        }
        let digest = h.finalize();
        let mut key = [0; 16];
        key.copy_from_slice(&digest[..16]);
        RowKey(key)
    }
}

/// The rows of a refused file an earlier run left (none if there is none).
fn refused_keys(path: &Path) -> anyhow::Result<std::collections::HashSet<RowKey>> {
    let mut keys = std::collections::HashSet::new();
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(keys),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let (size, tail) = whole_lines(&f, path)?;
    if tail > 0 {
        bail!(
            "{}, the refused file of an earlier run, ends in a line without its newline: mend it, \
             move it away or name another --refused",
            path.display()
        );
    }
    let mut chunks = Chunks::open(&f, path, size, false)?;
    chunks.mend = "it is the refused file of an earlier run: mend it, move it away or name \
                   another --refused";
    while let Some((batch, _)) = chunks.next_batch()? {
        let mut reader = batch.reader(0..batch.len());
        while let Some(values) = reader.next_row() {
            keys.insert(RowKey::of(&values));
        }
    }
    Ok(keys)
}

/// Inserts the rows `chunks` reads (`total` rows), the ones still refused going to
/// `refused_path` through `aside`: replaced when this run refused rows, removed when it tried
/// every row and refused none, left as it is when it stopped without refusing any.
async fn insert_all(
    store: &Store,
    chunks: &mut Chunks<'_>,
    first_pass: &[(usize, String)],
    held: HeldRefused,
    aside: &LockedAside,
    total: u64,
) -> anyhow::Result<()> {
    // Written aside, so that the refused file only ever holds one run's rows: emptied of what
    // a run killed before its end left there.
    aside
        .file
        .set_len(0)
        .with_context(|| format!("cannot empty {}", aside.path.display()))?;
    let refused = DeadLetters::at(aside.path.to_path_buf());
    let mut outcome = Outcome::default();
    let mut stopped = None;
    loop {
        let (batch, lines) = match chunks.next_batch() {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(e) => {
                stopped = Some(e);
                break;
            }
        };
        if let Err(e) = insert_isolating(store, &batch, &refused, &mut outcome).await {
            stopped = Some(e.context(format!(
                "stopped at lines {} to {} of {}",
                lines.start(),
                lines.end(),
                chunks.file.display()
            )));
            break;
        }
    }
    // The second pass must read what the first checked: else rows may not have been tried.
    if stopped.is_none()
        && (chunks.damaged != first_pass || outcome.inserted + outcome.refused != total)
    {
        stopped = Some(anyhow::anyhow!(
            "{} changed while it was replayed ({} rows checked, {} inserted or refused)",
            chunks.file.display(),
            total,
            outcome.inserted + outcome.refused
        ));
    }
    let refused_path = held.path().to_path_buf();
    let settled = held.settle(&aside.path, outcome.refused, stopped.is_some());
    let summary = format!(
        "{} of {} inserted into {}.spans",
        outcome.inserted,
        rows(total),
        store.database()
    );
    let kept = match settled {
        Ok(kept) => kept,
        Err(e) => {
            let e = e.context(summary);
            return Err(match stopped {
                Some(first) => e.context(format!("{first:#}")),
                None => e,
            });
        }
    };
    if let Some(e) = stopped {
        return Err(e.context(format!(
            "{summary}{kept}; the rest was not tried: run the same command again once \
             ClickHouse takes inserts (a row inserted twice is stored once)"
        )));
    }
    outln!("{summary}{kept}");
    if outcome.refused > 0 {
        bail!(PartlyDone(format!(
            "{} still refused by ClickHouse: written to {} with the error of each",
            rows(outcome.refused),
            refused_path.display()
        )));
    }
    Ok(())
}

/// `path` with `suffix` added to its file name.
pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
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

/// The bytes of `f`'s whole lines (up to and including its last newline now: what the server
/// appends meanwhile waits for the next replay), and how many bytes follow them. `path` is
/// for messages.
fn whole_lines(f: &std::fs::File, path: &Path) -> anyhow::Result<(u64, u64)> {
    let cannot = || format!("cannot read {}", path.display());
    let mut f = f;
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
    /// For messages.
    file: &'p Path,
    reader: BufReader<std::io::Take<std::fs::File>>,
    /// Lines read so far.
    number: usize,
    /// Leave out damaged lines instead of failing.
    skip_damaged: bool,
    /// What to do about a damaged line, for the message that stops at one.
    mend: &'static str,
    /// The damaged lines left out so far: number and what is wrong.
    damaged: Vec<(usize, String)>,
}

/// `Chunks::mend` for a file to replay.
const MEND_LINE: &str = "mend or delete the line, or pass --skip-damaged to replay the others";

impl<'p> Chunks<'p> {
    /// The first `size` bytes of `source` from its start (`file` names it in messages).
    fn open(
        source: &std::fs::File,
        file: &'p Path,
        size: u64,
        skip_damaged: bool,
    ) -> anyhow::Result<Chunks<'p>> {
        let cannot = || format!("cannot read {}", file.display());
        let mut f = source.try_clone().with_context(cannot)?;
        f.seek(SeekFrom::Start(0)).with_context(cannot)?;
        Ok(Chunks {
            file,
            reader: BufReader::new(f.take(size)),
            number: 0,
            skip_damaged,
            mend: MEND_LINE,
            damaged: Vec::new(),
        })
    }

    /// The next lines' rows and the lines they came from, or `None` at the end; an error names
    /// the file and the line.
    fn next_batch(&mut self) -> anyhow::Result<Option<(RowBatch, RangeInclusive<usize>)>> {
        // Lines whose values are all damaged make an empty batch: read on.
        loop {
            match self.next_lines()? {
                Some((batch, _)) if batch.is_empty() => {}
                next => return Ok(next),
            }
        }
    }

    /// `next_batch`, which may be empty when every line's values are damaged.
    fn next_lines(&mut self) -> anyhow::Result<Option<(RowBatch, RangeInclusive<usize>)>> {
        let mut chunk: Vec<(usize, serde_json::Map<String, serde_json::Value>)> = Vec::new();
        let mut bytes = 0;
        let mut line = Vec::new();
        while chunk.len() < CHUNK_ROWS && bytes < CHUNK_BYTES {
            line.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut line)
                .with_context(|| format!("{} line {}", self.file.display(), self.number + 1))?;
            if n == 0 {
                break;
            }
            self.number += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let object = std::str::from_utf8(&line)
                .map_err(|e| format!("not UTF-8: {e}"))
                .and_then(row_object);
            match object {
                // Only lines kept count towards the chunk's bound: damaged ones, however long,
                // never end the reading.
                Ok(row) => {
                    bytes += line.len();
                    chunk.push((self.number, row));
                }
                Err(why) if self.skip_damaged => self.damaged.push((self.number, why)),
                Err(why) => bail!(
                    "{} line {}: {why} ({})",
                    self.file.display(),
                    self.number,
                    self.mend
                ),
            }
        }
        let (Some(&(first, _)), Some(&(last, _))) = (chunk.first(), chunk.last()) else {
            return Ok(None);
        };
        Ok(Some((self.batch_of(chunk)?, first..=last)))
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
                Err(why) => bail!("{} line {n}: {why} ({})", self.file.display(), self.mend),
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
    // Ranges of rows still to insert, the next on top, each with whether it is part of an
    // isolation of refused rows (`Piece::suspect` in the flush thread).
    let mut todo = vec![(0..batch.len(), false)];
    while let Some((rows, suspect)) = todo.pop() {
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
            match after_failure(err.retry, rows.len(), suspect, tries) {
                Step::Again => {
                    if err.retry == Retry::AfterMigrate {
                        store.migrate().await?;
                    }
                }
                Step::GiveUp => bail!(
                    "ClickHouse did not take an insert in {TRIES} tries: {}",
                    described(&err)
                ),
                Step::Stop => bail!(
                    "ClickHouse refuses these rows whatever their values: {}; is `spans` as \
                     `traceingest migrate` makes it?",
                    described(&err)
                ),
                Step::Refuse => {
                    refused
                        .write(&runs, &err)
                        .with_context(|| format!("cannot write {}", refused.path().display()))?;
                    outcome.refused += 1;
                    break;
                }
                Step::Halve { suspect } => {
                    let mid = rows.start + rows.len() / 2;
                    todo.push((mid..rows.end, suspect));
                    todo.push((rows.start..mid, suspect));
                    break;
                }
            }
            tokio::time::sleep(Duration::from_secs(1 << (tries - 1).min(4))).await;
        }
    }
    Ok(())
}

/// What `insert_isolating` does after the `tries`-th failure of a range of `rows` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Try the same range again (after a back-off; `AfterMigrate`: after `migrate`).
    Again,
    /// The halves, each on its own; `suspect` when they isolate refused rows.
    Halve { suspect: bool },
    /// The single row goes to the refused file.
    Refuse,
    /// ClickHouse did not take it in `TRIES` tries: stop the command.
    GiveUp,
    /// Refused whatever the values: stop the command.
    Stop,
}

/// The decision of `insert_isolating`, on its own. `suspect`: the range is part of an
/// isolation of refused rows, so an unknown refusal is taken as its rows' at once; a range that
/// is not (a whole chunk, or a half of one ClickHouse had not the memory for) is tried
/// `UNKNOWN_TRIES` times first.
fn after_failure(retry: Retry, rows: usize, suspect: bool, tries: u32) -> Step {
    match retry {
        // Out of memory for these rows: halves, none of them suspected for it.
        Retry::Smaller if rows > 1 => Step::Halve { suspect },
        Retry::Later | Retry::AfterMigrate | Retry::Smaller if tries < TRIES => Step::Again,
        Retry::Unknown if !suspect && tries < UNKNOWN_TRIES => Step::Again,
        Retry::Later | Retry::AfterMigrate | Retry::Smaller => Step::GiveUp,
        Retry::Never => Step::Stop,
        Retry::Split | Retry::Unknown if rows == 1 => Step::Refuse,
        Retry::Split | Retry::Unknown => Step::Halve { suspect: true },
    }
}

/// An insert error with its ClickHouse code when there is one.
fn described(err: &InsertError) -> String {
    match err.code {
        Some(code) => format!("code {code}: {}", err.message),
        None => err.message.clone(),
    }
}

#[cfg(test)]
#[path = "deadletter_tests.rs"]
mod tests;
