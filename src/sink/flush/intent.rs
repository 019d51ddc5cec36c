//! Cluster mode: the spool records an insert is made of, kept on disk while it is unfinished, so
//! that after a stop or a crash the same records make the same insert again and each shard gets
//! the same block, which its replicated table drops if it already took it.
//!
//! Before the first attempt of an insert whose pieces are all whole batches with a place in the
//! spool (`wal` mode, or read back from the spool), their positions go to `spool/insert.intent`
//! (written to a temporary file and renamed: a crash leaves the old intent or the new one). At a
//! stop, a frozen insert's batches are spooled first and their positions written the same way.
//! The file is removed once the insert is written, bisected or given up. At start-up, as the
//! spool is read back, the records the file names are held apart until all are read (they may
//! come after newer batches that were spooled earlier), then they go in front of the queue, in
//! the file's order, as the next insert.

use std::io;
use std::path::PathBuf;
use std::time::Instant;

use super::queue::Entry;
use super::State;
use crate::sink::clickhouse::ShardsDone;
use crate::sink::segment::RecordPos;

/// (segment, index) of each record, in insert order.
pub(super) type Intent = Vec<(u64, u32)>;

const FILE: &str = "insert.intent";

impl State {
    fn intent_path(&self) -> PathBuf {
        self.spool.dir().join(FILE)
    }

    /// The intent a previous run left, if any (cluster mode reads it once at start-up).
    pub(super) fn load_intent(&mut self) {
        let path = self.intent_path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let parsed: Option<Intent> = text
            .lines()
            .map(|l| {
                let (s, i) = l.split_once(' ')?;
                Some((s.parse().ok()?, i.parse().ok()?))
            })
            .collect();
        match parsed {
            Some(records) if !records.is_empty() => {
                self.intent = Some(records);
                self.intent_on_disk = true;
            }
            _ => {
                tracing::warn!(file = %path.display(), "ignoring an unreadable insert intent");
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// A record read back from the spool: held apart if the previous run's unfinished insert
    /// names it; once every record it names is held, they are put in front of the queue in its
    /// order as the next insert (frozen, every shard to do). Returns the entry when it is not
    /// held.
    pub(super) fn hold_for_intent(&mut self, entry: Entry) -> Option<Entry> {
        let Some(records) = &self.intent else {
            return Some(entry);
        };
        let Some(pos) = entry.pos else {
            return Some(entry);
        };
        if !records.contains(&(pos.segment, pos.index)) {
            return Some(entry);
        }
        self.held.push(entry);
        None
    }

    /// After reading the spool back: the held insert, complete, goes in front of the queue; or,
    /// with the spool read to its end and some records missing (confirmed after all), the held
    /// batches go to the queue as any others and the intent is dropped.
    pub(super) fn apply_intent(&mut self, arrived: Instant) {
        let Some(records) = &self.intent else {
            return;
        };
        if self.held.len() == records.len() {
            let records = self.intent.take().unwrap_or_default();
            let mut held = std::mem::take(&mut self.held);
            held.sort_by_key(|e| {
                let pos = e.pos.map(|p| (p.segment, p.index));
                records.iter().position(|r| Some(*r) == pos)
            });
            let n = held.len();
            for entry in held.into_iter().rev() {
                self.push_front(entry, arrived);
            }
            tracing::info!(
                batches = n,
                "replaying the unfinished insert of the previous run as the same blocks"
            );
            self.frozen = Some((n, ShardsDone::default()));
        } else if !self.spool.backlog() {
            tracing::info!(
                batches = records.len(),
                found = self.held.len(),
                "the previous run's unfinished insert was partly confirmed; replaying without it"
            );
            self.intent = None;
            for entry in std::mem::take(&mut self.held) {
                self.push(entry, arrived);
            }
            self.clear_intent();
        }
    }

    /// Before the first attempt of an insert of the first `pieces` pieces (before the insert
    /// shares them, or they would not count as whole): their positions on disk, if every one
    /// is a whole batch in the spool; else no intent.
    pub(super) fn note_intent(&mut self, pieces: usize) {
        let records: Option<Intent> = self
            .queue
            .iter()
            .take(pieces)
            .map(|p| {
                p.is_whole()
                    .then_some(p.entry.pos)
                    .flatten()
                    .map(|pos| (pos.segment, pos.index))
            })
            .collect();
        match records {
            Some(records) => self.write_intent(&records),
            None => self.clear_intent(),
        }
    }

    /// At a stop, the frozen insert's batches were spooled at `positions`, in order.
    pub(super) fn note_stopped_intent(&mut self, positions: &[RecordPos]) {
        let records: Intent = positions.iter().map(|p| (p.segment, p.index)).collect();
        self.write_intent(&records);
    }

    fn write_intent(&mut self, records: &[(u64, u32)]) {
        let path = self.intent_path();
        let tmp = path.with_extension("tmp");
        let text: String = records.iter().map(|(s, i)| format!("{s} {i}\n")).collect();
        let written: io::Result<()> =
            std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
        match written {
            Ok(()) => self.intent_on_disk = true,
            Err(e) => tracing::warn!(
                error = %e,
                "cannot write the insert intent; a replay after a crash may store a copy of \
                 this insert's rows that only FINAL removes"
            ),
        }
    }

    /// The insert is written, bisected or given up.
    pub(super) fn clear_intent(&mut self) {
        if std::mem::take(&mut self.intent_on_disk) {
            let _ = std::fs::remove_file(self.intent_path());
        }
    }
}
