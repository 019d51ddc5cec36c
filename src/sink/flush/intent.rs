//! Cluster mode: the spool records an insert is made of, kept on disk while it is unfinished, so
//! that after a stop or a crash the same records make the same insert again and each shard gets
//! the same block, which its replicated table drops if it already took it.
//!
//! Before the first attempt of an insert whose pieces are all whole batches with a place in the
//! spool (`wal` mode, or read back from the spool), their positions go to `spool/insert.intent`
//! (written to a temporary file and renamed: a crash leaves the old intent or the new one). At a
//! stop, a frozen insert's batches are spooled first and their positions written the same way.
//! The insert's intent leaves the file once it is written, bisected or given up.
//!
//! The file may name several unfinished inserts, one group of lines each, groups parted by an
//! empty line: those of earlier runs whose records were not read back yet stay in it next to
//! this run's current one. (After an outage in `buffer` mode a stop spools the frozen insert
//! last, behind the batches spilled during the outage, so this run makes other inserts, each
//! with its intent, before it reads those records; replacing the file would lose them and
//! replay them later as ordinary batches, in other blocks.) At start-up, as the spool is read
//! back, the records the file names are held apart until a group is complete (they may come
//! after newer batches that were spooled earlier); then its batches go in front of the queue,
//! in the group's order, as the next insert, frozen like a failed one, once no other insert is
//! frozen (that one must be retried as it was first sent). A kill during the replay leaves the
//! file as it was, so the next start replays the same groups again.

use std::io;
use std::path::PathBuf;
use std::time::Instant;

use super::queue::Entry;
use super::State;
use crate::sink::clickhouse::ShardsDone;
use crate::sink::segment::RecordPos;
use crate::sink::spool::INTENT_FILE as FILE;

/// (segment, index) of each record, in insert order.
pub(super) type Intent = Vec<(u64, u32)>;

impl State {
    fn intent_path(&self) -> PathBuf {
        self.spool.dir().join(FILE)
    }

    /// The unfinished inserts a previous run left, if any (cluster mode reads them once at
    /// start-up). A file of an older release has one group and no empty line.
    pub(super) fn load_intent(&mut self) {
        let path = self.intent_path();
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let parsed: Option<Vec<Intent>> = text
            .split("\n\n")
            .filter(|group| !group.trim().is_empty())
            .map(|group| {
                group
                    .lines()
                    .map(|l| {
                        let (s, i) = l.split_once(' ')?;
                        Some((s.parse().ok()?, i.parse().ok()?))
                    })
                    .collect()
            })
            .collect();
        match parsed {
            Some(groups) if !groups.is_empty() => {
                self.intents = groups;
                self.intent_on_disk = true;
            }
            _ => {
                tracing::warn!(file = %path.display(), "ignoring an unreadable insert intent");
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    /// A record read back from the spool: held apart if an earlier run's unfinished insert
    /// names it (`apply_intent` puts it back). Returns the entry when it is not held.
    pub(super) fn hold_for_intent(&mut self, entry: Entry) -> Option<Entry> {
        let Some(pos) = entry.pos else {
            return Some(entry);
        };
        let named = (pos.segment, pos.index);
        if !self.intents.iter().any(|g| g.contains(&named)) {
            return Some(entry);
        }
        self.held.push(entry);
        None
    }

    /// After reading the spool back: an earlier run's insert whose records are all held goes
    /// in front of the queue in its order as the next insert (frozen, every shard to do), if no
    /// insert is frozen already; one at a time, as only one insert is frozen. With the spool
    /// read to its end, a group with records missing (confirmed after all) is dropped and its
    /// held batches go to the queue as any others.
    pub(super) fn apply_intent(&mut self, arrived: Instant) {
        if self.intents.is_empty() {
            return;
        }
        let position = |e: &Entry| e.pos.map(|p| (p.segment, p.index));
        let is_held = |held: &[Entry], r: &(u64, u32)| held.iter().any(|e| position(e) == Some(*r));
        if !self.spool.backlog() {
            let (complete, partial): (Vec<Intent>, Vec<Intent>) = std::mem::take(&mut self.intents)
                .into_iter()
                .partition(|g| g.iter().all(|r| is_held(&self.held, r)));
            self.intents = complete;
            if !partial.is_empty() {
                let (release, keep): (Vec<Entry>, Vec<Entry>) =
                    std::mem::take(&mut self.held).into_iter().partition(|e| {
                        partial
                            .iter()
                            .any(|g| position(e).is_some_and(|p| g.contains(&p)))
                    });
                self.held = keep;
                tracing::info!(
                    inserts = partial.len(),
                    found = release.len(),
                    "an unfinished insert of the previous run was partly confirmed; replaying \
                     its batches without it"
                );
                for entry in release {
                    self.push(entry, arrived);
                }
                self.save_intents();
            }
        }
        if self.frozen.is_some() {
            return;
        }
        let Some(at) = self
            .intents
            .iter()
            .position(|g| g.iter().all(|r| is_held(&self.held, r)))
        else {
            return;
        };
        let records = self.intents.remove(at);
        let (mut group, keep): (Vec<Entry>, Vec<Entry>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|e| position(e).is_some_and(|p| records.contains(&p)));
        self.held = keep;
        group.sort_by_key(|e| records.iter().position(|r| Some(*r) == position(e)));
        let n = group.len();
        for entry in group.into_iter().rev() {
            self.push_front(entry, arrived);
        }
        tracing::info!(
            batches = n,
            "replaying an unfinished insert of the previous run as the same blocks"
        );
        self.frozen = Some((n, ShardsDone::default()));
        // Its records are now the current insert's: in the file until it is written.
        self.current_intent = Some(records);
        self.save_intents();
    }

    /// Before the first attempt of an insert of the first `pieces` pieces (before the insert
    /// shares them, or they would not count as whole): their positions on disk, if every one
    /// is a whole batch in the spool; else no intent.
    pub(super) fn note_intent(&mut self, pieces: usize) {
        self.current_intent = self
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
        self.save_intents();
    }

    /// At a stop, the frozen insert's batches were spooled at `positions`, in order.
    pub(super) fn note_stopped_intent(&mut self, positions: &[RecordPos]) {
        self.current_intent = Some(positions.iter().map(|p| (p.segment, p.index)).collect());
        self.save_intents();
    }

    /// The current insert is written, bisected or given up: its intent goes; earlier runs'
    /// stay.
    pub(super) fn clear_intent(&mut self) {
        if self.current_intent.take().is_some() {
            self.save_intents();
        }
    }

    /// Writes the earlier runs' unfinished inserts and the current one to the file, or removes
    /// it when there is none.
    fn save_intents(&mut self) {
        let path = self.intent_path();
        let groups: Vec<&Intent> = self.intents.iter().chain(&self.current_intent).collect();
        if groups.is_empty() {
            if std::mem::take(&mut self.intent_on_disk) {
                let _ = std::fs::remove_file(&path);
            }
            return;
        }
        let tmp = path.with_extension("tmp");
        let text: Vec<String> = groups
            .iter()
            .map(|g| g.iter().map(|(s, i)| format!("{s} {i}\n")).collect())
            .collect();
        let written: io::Result<()> =
            std::fs::write(&tmp, text.join("\n")).and_then(|()| std::fs::rename(&tmp, &path));
        match written {
            Ok(()) => self.intent_on_disk = true,
            Err(e) => tracing::warn!(
                error = %e,
                "cannot write the insert intent; a replay after a crash may store a copy of \
                 this insert's rows that only FINAL removes"
            ),
        }
    }
}
