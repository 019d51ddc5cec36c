//! `reprice` against a real ClickHouse: which windows of start times a run reads.

use super::*;
use crate::row::RowBatch;
use crate::sink::clickhouse::test_support::*;

const DAY: u64 = WINDOW_MS;

/// A range of a thousand days with spans on its first and last days only is read in three
/// windows (the first day, the empty second, then the last), not a thousand: an empty day is
/// followed by the next start time there is. (A `--to` typed in microseconds by mistake was
/// 20 million days of queries, for hours, with nothing printed.) Every span is still read.
#[test]
fn a_run_goes_from_an_empty_day_to_the_next_span() {
    if skip() {
        return;
    }
    let db = TestDb::new("reprice_gaps");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let t = 1_700_000_000_000;
    let to = t + 1000 * DAY;
    let rows = [
        row("org-g", "trace-g", "before", t - 1, true),
        row("org-g", "trace-g", "first", t, true),
        row("org-g", "trace-g", "last", to - 1, true),
        row("org-g", "trace-g", "after", to, true),
    ];
    rt.block_on(store.insert_spans(&[RowBatch::from_rows(&rows)]))
        .unwrap();
    let table = PriceTable::builtin();
    let run = Run {
        table: &table,
        version: 1_800_000_000_000,
        priced_at: 1_800_000_000,
        dry_run: true,
    };
    let done = rt.block_on(run.range(&store, t, to, None, None)).unwrap();
    let spans: u64 = done.tallies.values().map(|t| t.rows).sum();
    assert_eq!(spans, 2, "the first and the last, not those outside");
    assert_eq!(done.windows, 3);
    // Nothing to skip to: one window.
    let done = rt
        .block_on(run.range(&store, t + DAY, to - 1, None, None))
        .unwrap();
    assert_eq!((done.tallies.len(), done.windows), (0, 1));
}
