//! `traceingest deadletter salvage FILE...`: the rows of the records still whole in what a
//! spool segment's cut kept (`<segment>.seg.cut-<ms>`, see `sink/salvage.rs`), written as a
//! dead-letter file (`FILE.jsonl`, or `--out`) for an operator to check and then insert with
//! `traceingest deadletter replay`. FILE itself is never changed, and a file already at the
//! output path is never written to: running the command again says so instead of adding the
//! rows twice.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};

use super::deadletter::with_suffix;
use crate::row::{col, RowBatch, Value};
use crate::sink::clickhouse::{InsertError, Retry, RowRun};
use crate::sink::deadletter::DeadLetters;
use crate::sink::salvage::salvage;

#[derive(Debug, Clone, clap::Args)]
pub struct SalvageArgs {
    /// What a cut kept (`INGEST_DATA_DIR/spool/<segment>.seg.cut-<ms>`), or a segment file.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The dead-letter file to write, for every FILE [default: FILE.jsonl for each]. It must
    /// not exist yet.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: &SalvageArgs) -> anyhow::Result<()> {
    // A file named twice (a glob overlapping a name, a link) would have its rows written
    // twice: files are told apart by device and inode.
    let mut seen = Vec::new();
    for file in &args.files {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(file).with_context(|| format!("{}", file.display()))?;
        let id = (meta.dev(), meta.ino());
        if seen.contains(&id) {
            bail!(
                "{} is given twice: its rows would be written twice",
                file.display()
            );
        }
        seen.push(id);
    }
    let outs: Vec<PathBuf> = match &args.out {
        Some(out) => vec![out.clone(); args.files.len()],
        None => args
            .files
            .iter()
            .map(|f| with_suffix(f, ".jsonl"))
            .collect(),
    };
    // Each output claimed before anything is written (made, empty, here, so that a second
    // run at the same time cannot write into it too).
    let mut claimed: Vec<&PathBuf> = Vec::new();
    for out in &outs {
        if claimed.contains(&out) {
            continue;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(out)
        {
            Ok(_) => claimed.push(out),
            Err(e) => {
                for made in &claimed {
                    let _ = std::fs::remove_file(made);
                }
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    bail!(
                        "{} exists already (salvaged before?): replay it, or move it away to \
                         salvage again",
                        out.display()
                    );
                }
                return Err(e).with_context(|| format!("creating {}", out.display()));
            }
        }
    }
    // Every output is made from its files alone, which are never changed: on an error, what
    // this run wrote goes again (partial, or claimed and empty, it would be taken for a
    // finished salvage: 'exists already (salvaged before?): replay it').
    let written = match write_outputs(args, &outs) {
        Ok(written) => written,
        Err(e) => {
            for made in &claimed {
                let _ = std::fs::remove_file(made);
            }
            return Err(e);
        }
    };
    // An output no record went to is not left behind, empty, to be taken for one.
    for out in claimed {
        if !written.contains(out) {
            let _ = std::fs::remove_file(out);
        }
    }
    for out in written {
        println!(
            "written to {0}: check it, then `traceingest deadletter replay {0}`",
            out.display()
        );
    }
    Ok(())
}

/// Salvages each file into its output (claimed already); the outputs a record went to.
fn write_outputs(args: &SalvageArgs, outs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (file, out) in args.files.iter().zip(outs) {
        let bytes = std::fs::read(file).with_context(|| format!("{}", file.display()))?;
        let got = salvage(&bytes);
        let rows: usize = got.found.iter().map(|f| f.batch.len()).sum();
        let records = got.found.len();
        println!(
            "{}: {records} record{} of {} found; {} of {} bytes in none (the damaged record, \
             and anything else the disk changed)",
            file.display(),
            if records == 1 { "" } else { "s" },
            super::deadletter::rows(rows as u64),
            got.lost_bytes,
            bytes.len()
        );
        for (org, n) in by_org(got.found.iter().map(|f| &f.batch)) {
            println!("  {org}: {}", super::deadletter::rows(n as u64));
        }
        // One append and one fsync for the file's records.
        let runs: Vec<RowRun<'_>> = got
            .found
            .iter()
            .map(|f| RowRun {
                batch: &f.batch,
                rows: 0..f.batch.len(),
            })
            .collect();
        let why = InsertError {
            retry: Retry::Never,
            code: None,
            message: format!(
                "salvaged from {}; not refused by ClickHouse",
                file.display()
            ),
        };
        if !runs.is_empty() {
            DeadLetters::at(out.clone())
                .write(&runs, &why)
                .with_context(|| format!("writing {}", out.display()))?;
        }
        if rows > 0 && !written.contains(out) {
            written.push(out.clone());
        }
    }
    Ok(written)
}

/// Rows per organisation, so an operator sees whose spans a cut held.
fn by_org<'a>(batches: impl Iterator<Item = &'a RowBatch>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for b in batches {
        let mut rows = b.reader(0..b.len());
        while let Some(values) = rows.next_row() {
            if let Value::Str(org) = &values[col::org_id] {
                *counts.entry(org.to_string()).or_default() += 1;
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::clickhouse::test_support::batch;
    use crate::sink::segment::Writer;

    /// Found by a review: a cut file named twice (`salvage a.cut a.cut`, or two globs that
    /// overlap) passed the check that the output does not exist, then had its rows written to
    /// it twice, and the counts printed twice. It is refused, nothing written.
    #[test]
    fn a_file_given_twice_is_refused_before_anything_is_written() {
        let dir = crate::sink::test_dir::TestDir::new("salvage-twice");
        let mut w = Writer::create(dir.path(), 1).unwrap();
        let mut payload = Vec::new();
        crate::sink::codec::encode(&batch("o", "t", 3, 0), &mut payload);
        w.append(&payload).unwrap();
        let file = crate::sink::segment::segment_path(dir.path(), 1);
        let out = with_suffix(&file, ".jsonl");
        let args = SalvageArgs {
            files: vec![
                file.clone(),
                dir.path().join(".").join(file.file_name().unwrap()),
            ],
            out: None,
        };
        assert!(run(&args).is_err());
        assert!(!out.exists(), "nothing written");
        let link = dir.path().join("link.cut");
        std::fs::hard_link(&file, &link).unwrap();
        let args = SalvageArgs {
            files: vec![file.clone(), link],
            out: None,
        };
        assert!(run(&args).is_err(), "a hard link is the same file");
        assert!(!out.exists(), "nothing written");
        let args = SalvageArgs {
            files: vec![file],
            out: None,
        };
        run(&args).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
    }

    /// Outputs are claimed before anything is written: one that exists stops the run and
    /// the outputs claimed before it are removed again; a file with no record leaves none.
    #[test]
    fn outputs_are_claimed_first_and_none_is_left_empty() {
        let dir = crate::sink::test_dir::TestDir::new("salvage-claim");
        let (empty, other) = (dir.path().join("a.cut"), dir.path().join("b.cut"));
        std::fs::write(&empty, [0u8; 100]).unwrap();
        std::fs::write(&other, [7u8; 100]).unwrap();
        let taken = with_suffix(&other, ".jsonl");
        std::fs::write(&taken, "").unwrap();
        let both = SalvageArgs {
            files: vec![empty.clone(), other.clone()],
            out: None,
        };
        let err = run(&both).unwrap_err().to_string();
        assert!(err.contains("exists already"), "{err}");
        assert!(!with_suffix(&empty, ".jsonl").exists(), "its claim removed");
        std::fs::remove_file(&taken).unwrap();
        run(&both).unwrap();
        assert!(!with_suffix(&empty, ".jsonl").exists() && !taken.exists());
    }

    /// Found by a review: a file that fails after the outputs were claimed (here a directory,
    /// which cannot be read) left the earlier file's output written and its own claimed and
    /// empty; the next run called them salvaged before and said to replay them, the empty one
    /// too, and its rows were never salvaged. An error leaves no output of the run behind.
    #[test]
    fn an_error_leaves_no_output_behind() {
        let dir = crate::sink::test_dir::TestDir::new("salvage-error");
        let mut w = Writer::create(dir.path(), 1).unwrap();
        let mut payload = Vec::new();
        crate::sink::codec::encode(&batch("o", "t", 3, 0), &mut payload);
        w.append(&payload).unwrap();
        let file = crate::sink::segment::segment_path(dir.path(), 1);
        let unreadable = dir.path().join("b.cut");
        std::fs::create_dir(&unreadable).unwrap();
        let args = SalvageArgs {
            files: vec![file.clone(), unreadable.clone()],
            out: None,
        };
        assert!(run(&args).is_err());
        assert!(!with_suffix(&file, ".jsonl").exists(), "its rows written");
        assert!(
            !with_suffix(&unreadable, ".jsonl").exists(),
            "claimed, empty"
        );
        std::fs::remove_dir(&unreadable).unwrap();
        let args = SalvageArgs {
            files: vec![file.clone()],
            out: None,
        };
        run(&args).unwrap();
        let out = std::fs::read_to_string(with_suffix(&file, ".jsonl")).unwrap();
        assert_eq!(out.lines().count(), 3);
    }
}
