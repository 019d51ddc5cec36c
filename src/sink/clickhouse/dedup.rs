//! What makes a retried span insert a duplicate ClickHouse drops, in cluster mode: how many
//! blocks each shard's `spans_local` remembers (`replicated_deduplication_window`, set when the
//! table is made), and, on a server that takes one (22.2 and later), the dedup token an insert
//! carries instead of the hash of its bytes.
//!
//! The window. A retry is recognised while fewer than `DEDUP_WINDOW` other blocks reached the
//! shard since the first attempt (ClickHouse's own default is 100 on 18.16). The longest gap
//! between an attempt and its retry is the insert timeout plus the flush thread's longest
//! back-off, 65 s; each ingest replica sends a shard at most one block per flush interval under
//! steady load (1 s by default). The window covers that gap for `FLEET_SIZED_FOR` replicas:
//! in time, a retry is recognised within `DEDUP_WINDOW x interval / N` seconds with N replicas
//! (docs/fleet.md). ZooKeeper keeps one small node per remembered block and shard.
//!
//! The token. A shard's block is made of the rows of an insert in their order, so a retry is the
//! same bytes and 18.16 drops it by their hash. The token says the same thing without depending
//! on the bytes: it hashes only what identifies the rows (organisation, trace, span, start,
//! version), so a replay after an upgrade that added a column, which re-encodes the rows, is
//! still recognised. Rows a client sent twice have another `version` and get another token.

use std::hash::Hasher;
use std::time::Duration;

use siphasher::sip128::{Hasher128, SipHasher24};

use super::block::RowRun;
use super::version::ServerVersion;
use crate::row::col;

/// The longest a span insert may take before the client gives up on it (the native insert
/// timeout of every connection).
pub(super) const INSERT_TIMEOUT: Duration = Duration::from_secs(60);

/// The flush thread's longest back-off between two attempts of a frozen insert (the default of
/// `FlushConfig::retry_max`).
const RETRY_MAX: Duration = Duration::from_secs(5);

/// The default `INGEST_FLUSH_INTERVAL_MS`.
const INTERVAL: Duration = Duration::from_secs(1);

/// Ingest replicas the window is sized for at the default interval.
const FLEET_SIZED_FOR: u64 = 16;

/// Blocks of a shard's `spans_local` whose hashes are kept for dedup (1040).
pub(super) const DEDUP_WINDOW: u64 = dedup_window(
    INSERT_TIMEOUT.saturating_add(RETRY_MAX),
    INTERVAL,
    FLEET_SIZED_FOR,
);

/// Blocks reaching a shard while a retry may still come (`reach`), with `replicas` ingest
/// replicas each inserting once per `interval`.
pub(super) const fn dedup_window(reach: Duration, interval: Duration, replicas: u64) -> u64 {
    let per_replica = reach.as_millis().div_ceil(interval.as_millis()) as u64;
    per_replica * replicas
}

/// The `SETTINGS` clause of `spans_local` (every release since 18.16 takes it).
pub(super) fn spans_local_settings() -> String {
    format!(" SETTINGS replicated_deduplication_window = {DEDUP_WINDOW}")
}

/// The settings one span insert into a shard's `spans_local` carries on `version`: the dedup
/// token of its rows where the server takes one, else none (the block's bytes decide).
pub(super) fn insert_settings(
    version: ServerVersion,
    runs: &[RowRun<'_>],
) -> Vec<(&'static str, String)> {
    if version.supports_insert_deduplication_token() {
        vec![("insert_deduplication_token", token(runs))]
    } else {
        Vec::new()
    }
}

/// Columns that identify a row: the table's sorting key and the version that picks the copy.
const IDENTITY: [usize; 5] = [
    col::org_id,
    col::trace_id,
    col::span_id,
    col::start_time_ms,
    col::version,
];

/// The dedup token of a shard's block: SipHash-2-4 (128 bits) of its row count and of each
/// identity column's values for its rows, in order, as the batches hold them (strings with
/// their length prefixes), so how the rows are cut into runs does not change it.
pub(super) fn token(runs: &[RowRun<'_>]) -> String {
    let cuts: Vec<_> = runs
        .iter()
        .filter(|r| !r.rows.is_empty())
        .map(|r| (r, r.batch.cut(r.rows.start), r.batch.cut(r.rows.end)))
        .collect();
    let mut h = SipHasher24::new_with_keys(0, 0);
    h.write_u64(runs.iter().map(|r| r.rows.len() as u64).sum());
    for c in IDENTITY {
        for (run, from, to) in &cuts {
            h.write(&run.batch.head(c)[from[2 * c]..to[2 * c]]);
        }
    }
    format!("traceingest-{:032x}", h.finish128().as_u128())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::{RowBatch, RowRef};

    #[test]
    fn the_window_covers_a_retry_for_the_fleet_it_is_sized_for() {
        assert_eq!(DEDUP_WINDOW, 65 * 16);
        // (reach ms, interval ms, replicas, blocks)
        let cases = [
            (65_000, 1000, 1, 65),
            (65_000, 100, 2, 1300),
            (65_500, 1000, 2, 132),
        ];
        for (reach, interval, replicas, want) in cases {
            let got = dedup_window(
                Duration::from_millis(reach),
                Duration::from_millis(interval),
                replicas,
            );
            assert_eq!(got, want, "{reach} {interval} {replicas}");
        }
        assert_eq!(
            spans_local_settings(),
            " SETTINGS replicated_deduplication_window = 1040"
        );
    }

    fn rows<'a>(traces: &'a [String], version: u64) -> Vec<RowRef<'a>> {
        traces
            .iter()
            .flat_map(|t| {
                ["a", "b"].map(|s| RowRef {
                    org_id: "org",
                    trace_id: t,
                    span_id: s,
                    start_time_ms: 1_700_000_000_000,
                    version,
                    name: "x",
                    ..RowRef::default()
                })
            })
            .collect()
    }

    #[test]
    fn the_token_names_the_rows_and_only_on_a_server_that_takes_it() {
        let traces: Vec<String> = (0..4).map(|i| format!("t{i}")).collect();
        let batch = RowBatch::from_rows(&rows(&traces, 7));
        let run = |r: std::ops::Range<usize>| RowRun {
            batch: &batch,
            rows: r,
        };
        let whole = token(&[run(0..8)]);
        assert!(
            whole.starts_with("traceingest-") && whole.len() == 12 + 32,
            "{whole}"
        );
        // The same rows cut into other runs, or from a batch with other values in columns
        // that do not identify a row: the same token.
        assert_eq!(token(&[run(0..3), run(3..8)]), whole);
        let mut other = rows(&traces, 7);
        for r in &mut other {
            r.name = "another name";
        }
        let renamed = RowBatch::from_rows(&other);
        let renamed_run = [RowRun {
            batch: &renamed,
            rows: 0..8,
        }];
        assert_eq!(token(&renamed_run), whole);
        // Other rows, fewer rows, or the same spans sent again (another version): another.
        assert_ne!(token(&[run(0..7)]), whole);
        assert_ne!(token(&[run(1..8)]), whole);
        let again = RowBatch::from_rows(&rows(&traces, 8));
        let again_run = [RowRun {
            batch: &again,
            rows: 0..8,
        }];
        assert_ne!(token(&again_run), whole);

        // (server, settings the insert carries)
        let cases: &[((u32, u32), &[&str])] = &[
            ((18, 16), &[]),
            ((22, 1), &[]),
            ((22, 2), &["insert_deduplication_token"]),
            ((24, 8), &["insert_deduplication_token"]),
        ];
        for &((major, minor), want) in cases {
            let got = insert_settings(ServerVersion::new(major, minor), &[run(0..8)]);
            let names: Vec<&str> = got.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, want, "{major}.{minor}");
            if let Some((_, value)) = got.first() {
                assert_eq!(*value, whole);
            }
        }
    }
}
