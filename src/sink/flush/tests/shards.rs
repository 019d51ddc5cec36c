//! Cluster mode without ClickHouse (a topology of two shards given by hand, `shards.rs`): what
//! a failed insert that one shard wrote leaves to split, dead-letter or retry.

use super::held::assert_spool_confirmed;
use super::*;
use crate::row::test_rows::{row, str_at};
use crate::row::{col, RowRef};
use crate::sink::clickhouse::shard_hash;

/// The shard (of two, equal weights) a trace's rows go to.
fn shard_of(trace: &str) -> usize {
    (shard_hash(trace.as_bytes()) % 2) as usize
}

/// A flusher in cluster mode that is not started, on a spool in `dir`, with two shards.
fn cluster_flusher(cfg: FlushConfig, dir: &TestDir) -> Flusher {
    let spool = Spool::open(
        SpoolConfig::new(dir.path().join("spool"), 1 << 20),
        Arc::clone(&cfg.stats),
    )
    .unwrap();
    let (_tx, input) = Input::buffer(&cfg.budget);
    let store = Store::new(NATIVE_URL, "unused")
        .unwrap()
        .in_cluster(Some("c"))
        .unwrap()
        .with_shards_for_tests(2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    Flusher::new(cfg, store, rt, input, spool)
}

/// Two batches in the spool, read back, each with traces of both shards (3 spans a trace),
/// made the next insert with its intent, as `flush` makes it. Returns the flusher, the
/// insert's pieces and rows, and the rows per shard.
fn an_insert_of_both_shards(
    cfg: &FlushConfig,
    dir: &TestDir,
) -> (Flusher, usize, usize, [usize; 2]) {
    let mut f = cluster_flusher(cfg.clone(), dir);
    let traces: Vec<String> = (0..12).map(|i| format!("trace-{i:02}")).collect();
    assert!(traces.iter().any(|t| shard_of(t) == 0) && traces.iter().any(|t| shard_of(t) == 1));
    let spans = ["s0", "s1", "s2"];
    let mut per_shard = [0; 2];
    for half in traces.chunks(6) {
        let rows: Vec<RowRef<'_>> = half
            .iter()
            .flat_map(|t| spans.map(|s| row("o", t, s, 1_700_000_000_000, false)))
            .collect();
        for t in half {
            per_shard[shard_of(t)] += spans.len();
        }
        f.st.spool
            .append(&crate::row::RowBatch::from_rows(&rows), false)
            .unwrap();
    }
    f.st.refill();
    let (pieces, rows) = f.st.next_insert();
    assert_eq!((pieces, rows), (2, 36));
    f.st.note_intent(pieces);
    assert!(intent_path(dir).exists());
    (f, pieces, rows, per_shard)
}

fn intent_path(dir: &TestDir) -> std::path::PathBuf {
    dir.path().join("spool").join("insert.intent")
}

fn cfg(dir: &TestDir) -> FlushConfig {
    FlushConfig {
        dead_letter_dir: dir.path().join("deadletter"),
        ..config("unused", NATIVE_URL)
    }
}

/// The defect this guards against: shard 1 refused its part of an insert for good (a type
/// mismatch) while shard 0 stored its own, and every row of the insert went to the
/// dead-letter file, shard 0's too: `deadletter replay` stored them a second time, and the
/// file named as lost rows that ClickHouse had. Only shard 1's rows are dead-lettered; shard
/// 0's count as written, and every record is confirmed.
#[test]
fn a_shard_refusing_for_good_dead_letters_only_its_own_rows() {
    let dir = TestDir::new("flush-shard-never");
    let cfg = cfg(&dir);
    let (mut f, pieces, rows, per_shard) = an_insert_of_both_shards(&cfg, &dir);
    let type_mismatch = InsertError {
        retry: Retry::Never,
        code: Some(53),
        message: "Type mismatch".into(),
    };
    let done = ShardsDone::of_shards_for_tests(&[0]);
    assert!(
        f.failed(pieces, rows, done, &type_mismatch),
        "goes on at once"
    );
    let dead = std::fs::read_to_string(dir.path().join("deadletter/spans.jsonl")).unwrap();
    let traces: Vec<String> = dead
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["trace_id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(traces.len(), per_shard[1], "{dead}");
    assert!(traces.iter().all(|t| shard_of(t) == 1), "{traces:?}");
    let st = &f.st;
    assert_eq!(
        (st.report.rows_flushed, st.report.rows_rejected),
        (per_shard[0] as u64, per_shard[1] as u64)
    );
    assert!(st.queue.is_empty() && st.queued_rows == 0 && st.frozen.is_none());
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));
    assert!(!intent_path(&dir).exists(), "the insert is done with");
    drop(f);
    assert_spool_confirmed(cfg, &dir);
}

/// The same for rows to isolate (`Retry::Split`): only shard 1's rows are bisected (shard 0
/// no longer gets them again as other blocks); once they are in, every record is confirmed.
#[test]
fn a_shard_refusing_some_rows_splits_only_its_own_rows() {
    let dir = TestDir::new("flush-shard-split");
    let cfg = cfg(&dir);
    let (mut f, pieces, rows, per_shard) = an_insert_of_both_shards(&cfg, &dir);
    let split = InsertError {
        retry: Retry::Split,
        code: Some(27),
        message: "Cannot parse input".into(),
    };
    assert!(f.failed(pieces, rows, ShardsDone::of_shards_for_tests(&[0]), &split));
    let st = &mut f.st;
    assert_eq!(st.report.rows_flushed, per_shard[0] as u64);
    assert_eq!(st.queued_rows, per_shard[1]);
    let waiting: Vec<String> = st
        .queue
        .iter()
        .flat_map(|p| (p.start..p.end).map(|i| str_at(&p.entry.batch, col::trace_id, i)))
        .collect();
    assert_eq!(waiting.len(), per_shard[1]);
    assert!(waiting.iter().all(|t| shard_of(t) == 1), "{waiting:?}");
    assert!(st.frozen.is_none() && !intent_path(&dir).exists());
    // The halves go in: nothing else is left of the two records.
    while !st.queue.is_empty() {
        let (pieces, rows) = st.next_insert();
        let inserted = crate::sink::clickhouse::Inserted { rows, bytes: 0 };
        st.written(pieces, inserted, Duration::ZERO);
    }
    assert_eq!(st.report.rows_flushed, rows as u64);
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));
    drop(f);
    assert_spool_confirmed(cfg, &dir);
}

/// A transient failure of the other shard changes nothing: the insert is retried whole, with
/// its intent, as the same blocks, the written shard skipped.
#[test]
fn a_shard_failing_for_now_keeps_the_insert_as_it_was() {
    let dir = TestDir::new("flush-shard-later");
    let cfg = cfg(&dir);
    let (mut f, pieces, rows, _) = an_insert_of_both_shards(&cfg, &dir);
    let done = ShardsDone::of_shards_for_tests(&[0]);
    assert!(!f.failed(pieces, rows, done, &InsertError::timed_out()));
    let st = &f.st;
    assert_eq!(st.frozen, Some((pieces, done)));
    assert_eq!(st.queued_rows, rows);
    assert!(st.queue.iter().take(pieces).all(Piece::is_whole));
    assert_eq!(st.report.rows_flushed, 0);
    assert!(intent_path(&dir).exists());
}
