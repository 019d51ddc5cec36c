//! The rows of a span insert in the `spans` table's sorting-key order (organisation, trace id,
//! start time, span id), so that ClickHouse writes the block as it comes.
//!
//! ClickHouse sorts every insert block by the table's sorting key unless it finds it sorted
//! already (its `MergeTreeDataWriterBlocksAlreadySorted` event): the sort, and the copy of
//! every column in the new order that follows it, were a fifth to a third of its CPU per stored
//! row on 18.16 (perf/RESULTS.md). Workers write each batch's rows in key order
//! (`ingest/rows.rs`), so an insert's rows are groups, each a run of one batch's rows of one
//! (organisation, trace) already in (start, span id) order. Here the groups are sorted by
//! their first key; groups of the same trace whose rows interleave (a client that sent a
//! trace's spans in several requests) are merged row by row. Batches written by an earlier
//! build (read back from the spool) may be in any order: their rows still come out sorted,
//! only in more, shorter runs.
//!
//! The order is a function of the runs alone (ties go by run, then row), so a retried insert is
//! the same block byte for byte, which cluster mode's dedup needs.

use std::ops::Range;

use super::block::RowRun;
use crate::row::{col, skip_strings, walked_index, RowBatch};

/// Rows of one run that share organisation and trace, in (start, span id) order.
struct Group<'a> {
    org: &'a [u8],
    trace: &'a [u8],
    first: (u64, &'a [u8]),
    last: (u64, &'a [u8]),
    /// Index of the run the rows are in.
    run: usize,
    rows: Range<usize>,
    /// Where the group's first span id starts in its batch's `span_id` column.
    span_at: usize,
}

/// `runs` cut and reordered so that their rows, read in order, are sorted by the table's
/// sorting key. Every row of `runs` is in exactly one of the runs returned.
pub(super) fn in_key_order<'a>(runs: &[RowRun<'a>]) -> Vec<RowRun<'a>> {
    let mut groups = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        groups_of(run, i, &mut groups);
    }
    groups.sort_unstable_by(|a, b| {
        (a.org, a.trace, a.first, a.run, a.rows.start).cmp(&(
            b.org,
            b.trace,
            b.first,
            b.run,
            b.rows.start,
        ))
    });
    let mut out: Vec<RowRun<'a>> = Vec::with_capacity(groups.len());
    let mut i = 0;
    while i < groups.len() {
        // The groups of one trace: in order one after the other, unless one starts before
        // another ends.
        let mut j = i + 1;
        let mut reach = groups[i].last;
        let mut interleave = false;
        while j < groups.len()
            && groups[j].org == groups[i].org
            && groups[j].trace == groups[i].trace
        {
            interleave |= groups[j].first < reach;
            reach = reach.max(groups[j].last);
            j += 1;
        }
        if interleave {
            merge_rows(runs, &groups[i..j], &mut out);
        } else {
            for g in &groups[i..j] {
                push(&mut out, runs[g.run].batch, g.rows.clone());
            }
        }
        i = j;
    }
    out
}

/// Appends rows of `batch` to `out`, extending the last run when they follow on from it.
fn push<'a>(out: &mut Vec<RowRun<'a>>, batch: &'a RowBatch, rows: Range<usize>) {
    if let Some(last) = out.last_mut() {
        if std::ptr::eq(last.batch, batch) && last.rows.end == rows.start {
            last.rows.end = rows.end;
            return;
        }
    }
    out.push(RowRun { batch, rows });
}

/// Cuts one run into its groups: a new group starts where the organisation or the trace
/// changes, or where (start, span id) goes back.
fn groups_of<'a>(run: &RowRun<'a>, index: usize, groups: &mut Vec<Group<'a>>) {
    let b = run.batch;
    if run.rows.is_empty() {
        return;
    }
    if let Some((g0, g1)) = b.groups_of(&run.rows) {
        // A worker wrote the batch in key order and indexed where each trace starts: its
        // groups are those traces, read at their ends only.
        let starts = b.head(col::start_time_ms);
        let start = |row: usize| {
            u64::from_le_bytes(starts[row * 8..row * 8 + 8].try_into().expect("8 bytes"))
        };
        let spans = b.head(col::span_id);
        for g in g0..g1 {
            let rows = b.group_row(g)..b.group_row(g + 1);
            let span_at = b.group_at(g, walked_index(col::span_id));
            let last_at = span_at + skip_strings(&spans[span_at..], rows.len() - 1);
            groups.push(Group {
                org: b
                    .string_at(col::org_id, b.group_at(g, walked_index(col::org_id)))
                    .0,
                trace: b
                    .string_at(col::trace_id, b.group_at(g, walked_index(col::trace_id)))
                    .0,
                first: (start(rows.start), b.string_at(col::span_id, span_at).0),
                last: (start(rows.end - 1), b.string_at(col::span_id, last_at).0),
                run: index,
                rows,
                span_at,
            });
        }
        return;
    }
    let at = |c: usize| b.column_cut_from(c, 0, (0, 0), run.rows.start).0;
    let (mut org_at, mut trace_at, mut span_at) =
        (at(col::org_id), at(col::trace_id), at(col::span_id));
    let starts = b.head(col::start_time_ms);
    let mut current: Option<Group<'a>> = None;
    for row in run.rows.clone() {
        let (org, next) = b.string_at(col::org_id, org_at);
        org_at = next;
        let (trace, next) = b.string_at(col::trace_id, trace_at);
        trace_at = next;
        let this_span_at = span_at;
        let (span, next) = b.string_at(col::span_id, span_at);
        span_at = next;
        let start = u64::from_le_bytes(starts[row * 8..row * 8 + 8].try_into().expect("8 bytes"));
        let key = (start, span);
        match &mut current {
            Some(g) if g.org == org && g.trace == trace && g.last <= key => {
                g.last = key;
                g.rows.end = row + 1;
            }
            _ => {
                groups.extend(current.take());
                current = Some(Group {
                    org,
                    trace,
                    first: key,
                    last: key,
                    run: index,
                    rows: row..row + 1,
                    span_at: this_span_at,
                });
            }
        }
    }
    groups.extend(current);
}

/// The rows of groups of one trace that interleave, merged by (start, span id), ties by run
/// and row.
fn merge_rows<'a>(runs: &[RowRun<'a>], groups: &[Group<'a>], out: &mut Vec<RowRun<'a>>) {
    let mut rows: Vec<(u64, &'a [u8], usize, usize)> = Vec::new();
    for g in groups {
        let b = runs[g.run].batch;
        let starts = b.head(col::start_time_ms);
        let mut at = g.span_at;
        for row in g.rows.clone() {
            let (span, next) = b.string_at(col::span_id, at);
            at = next;
            let start =
                u64::from_le_bytes(starts[row * 8..row * 8 + 8].try_into().expect("8 bytes"));
            rows.push((start, span, g.run, row));
        }
    }
    rows.sort_unstable();
    for (_, _, run, row) in rows {
        push(out, runs[run].batch, row..row + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::test_rows::row;
    use crate::row::RowRef;

    /// The sorting key of every row the runs hold, in order.
    fn keys(runs: &[RowRun<'_>]) -> Vec<(String, String, u64, String)> {
        let mut out = Vec::new();
        for r in runs {
            let mut reader = r.batch.reader(r.rows.clone());
            while let Some(v) = reader.next_row() {
                let s = |c: usize| match &v[c] {
                    crate::row::Value::Str(s) => s.to_string(),
                    v => panic!("{v:?}"),
                };
                let start = match v[col::start_time_ms] {
                    crate::row::Value::U64(n) => n,
                    ref v => panic!("{v:?}"),
                };
                out.push((s(col::org_id), s(col::trace_id), start, s(col::span_id)));
            }
        }
        out
    }

    /// A small deterministic generator (xorshift), so the cases are the same on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn every_row_comes_out_once_in_key_order_and_the_same_runs_give_the_same_order() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..200 {
            // Batches of a few orgs and traces, some sorted as workers write them, some not,
            // and traces split over several batches with interleaving start times.
            let names: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
            let spans: Vec<String> = (0..40).map(|i| format!("s{i:02}")).collect();
            let mut batches = Vec::new();
            for _ in 0..1 + rng.next(6) {
                let n = 1 + rng.next(12) as usize;
                let mut rows: Vec<RowRef<'_>> = (0..n)
                    .map(|_| {
                        let org = if rng.next(4) == 0 { "org-b" } else { "org-a" };
                        let trace = &names[rng.next(5) as usize];
                        let span = &spans[rng.next(8) as usize];
                        row(org, trace, span, 1000 + rng.next(6), false)
                    })
                    .collect();
                if rng.next(3) > 0 {
                    rows.sort_by_key(RowRef::table_key);
                }
                batches.push(RowBatch::from_rows(&rows));
            }
            // Whole batches, or a batch cut in two as a bisection does.
            let mut runs = Vec::new();
            for b in &batches {
                if b.len() > 2 && rng.next(4) == 0 {
                    let cut = 1 + rng.next(b.len() as u64 - 1) as usize;
                    runs.push(RowRun {
                        batch: b,
                        rows: 0..cut,
                    });
                    runs.push(RowRun {
                        batch: b,
                        rows: cut..b.len(),
                    });
                } else {
                    runs.push(RowRun::whole(b));
                }
            }
            let sorted = in_key_order(&runs);
            let got = keys(&sorted);
            let mut want = keys(&runs);
            want.sort();
            assert_eq!(got, want, "case {case}: the same rows, sorted");
            let again = in_key_order(&runs);
            let ranges = |r: &[RowRun<'_>]| -> Vec<(*const RowBatch, Range<usize>)> {
                r.iter()
                    .map(|r| (r.batch as *const _, r.rows.clone()))
                    .collect()
            };
            assert_eq!(
                ranges(&sorted),
                ranges(&again),
                "case {case}: deterministic"
            );
            for w in sorted.windows(2) {
                assert!(
                    !(std::ptr::eq(w[0].batch, w[1].batch) && w[0].rows.end == w[1].rows.start),
                    "case {case}: adjacent runs of one batch are joined"
                );
            }
        }
    }

    /// The block made from sorted runs holds, column by column, exactly the bytes a batch of
    /// the same rows in that order holds: the block builder's cursors follow batches visited
    /// in many short runs.
    #[test]
    fn a_block_of_sorted_runs_is_the_batch_of_its_rows_in_that_order() {
        let names = Names::new(30);
        let batches: Vec<RowBatch> = sorted_rows(&mut Rng(7), &names, 8, 20)
            .iter()
            .map(|rows| RowBatch::from_rows(rows))
            .collect();
        let runs: Vec<RowRun<'_>> = batches.iter().map(RowRun::whole).collect();
        let sorted = in_key_order(&runs);
        assert!(sorted.len() > runs.len(), "batches interleave");
        // The reference: every row read back in the sorted runs' order, written as one batch.
        let mut owned = Vec::new();
        for r in &sorted {
            let mut reader = r.batch.reader(r.rows.clone());
            while let Some(v) = reader.next_row() {
                owned.push(v.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>());
            }
        }
        let rows: usize = sorted.iter().map(|r| r.rows.len()).sum();
        let (_, taken, _) = super::super::block::spans_block(&sorted, rows, Vec::new());
        let reference = {
            // Rebuild the rows in that order from their batches (RowRef borrows).
            let mut refs = Vec::new();
            for r in &sorted {
                for i in r.rows.clone() {
                    refs.push((r.batch, i));
                }
            }
            let single: Vec<RowBatch> = refs
                .iter()
                .map(|&(b, i)| {
                    let one = RowRun {
                        batch: b,
                        rows: i..i + 1,
                    };
                    let (_, parts, _) = super::super::block::spans_block(&[one], 1, Vec::new());
                    parts_to_batch(parts, 1)
                })
                .collect();
            let all: Vec<RowRun<'_>> = single
                .iter()
                .map(|b| RowRun {
                    batch: b,
                    rows: 0..1,
                })
                .collect();
            let (_, parts, _) = super::super::block::spans_block(&all, rows, Vec::new());
            parts
        };
        assert_eq!(owned.len(), rows);
        for (i, (got, want)) in taken.iter().zip(&reference).enumerate() {
            assert_eq!(got.as_slice(), want.as_slice(), "region {i}");
        }
    }

    /// Batches a worker wrote (each trace's start indexed) sort and make blocks exactly as the
    /// same batches read back from the spool (no index) do: the index only saves walking.
    #[test]
    fn indexed_batches_sort_and_make_the_same_blocks_as_unindexed_ones() {
        let names = Names::new(12);
        let rows = sorted_rows(&mut Rng(11), &names, 6, 25);
        let indexed: Vec<RowBatch> = rows.iter().map(|r| RowBatch::from_sorted_rows(r)).collect();
        let plain: Vec<RowBatch> = rows.iter().map(|r| RowBatch::from_rows(r)).collect();
        assert!(indexed.iter().any(|b| b.groups() > 1));
        assert!(plain.iter().all(|b| b.groups() == 0));
        let sorted = |batches: &[RowBatch]| {
            let runs: Vec<RowRun<'_>> = batches.iter().map(RowRun::whole).collect();
            let out = in_key_order(&runs);
            let at: Vec<(usize, Range<usize>)> = out
                .iter()
                .map(|r| {
                    let i = batches
                        .iter()
                        .position(|b| std::ptr::eq(b, r.batch))
                        .unwrap();
                    (i, r.rows.clone())
                })
                .collect();
            let rows = out.iter().map(|r| r.rows.len()).sum();
            let (_, parts, _) = super::super::block::spans_block(&out, rows, Vec::new());
            let parts: Vec<Vec<u8>> = parts.iter().map(|p| p.to_vec()).collect();
            (at, parts)
        };
        let (a, b) = (sorted(&indexed), sorted(&plain));
        assert_eq!(a.0, b.0, "the same runs");
        assert_eq!(a.1, b.1, "the same block");
    }

    /// Trace ids (`trace-00`, ...) and 30 span ids for random rows.
    struct Names {
        traces: Vec<String>,
        spans: Vec<String>,
    }

    impl Names {
        fn new(traces: usize) -> Names {
            Names {
                traces: (0..traces).map(|i| format!("trace-{i:02}")).collect(),
                spans: (0..30).map(|i| format!("span-{i:02}")).collect(),
            }
        }
    }

    /// `batches` batches of 1 to `most` random rows each, full or sparse, every batch in key
    /// order (trace, start, span) as a worker writes it.
    fn sorted_rows<'n>(
        rng: &mut Rng,
        names: &'n Names,
        batches: usize,
        most: u64,
    ) -> Vec<Vec<RowRef<'n>>> {
        (0..batches)
            .map(|_| {
                let mut rows: Vec<RowRef<'n>> = (0..1 + rng.next(most) as usize)
                    .map(|_| {
                        let t = &names.traces[rng.next(names.traces.len() as u64) as usize];
                        let s = &names.spans[rng.next(30) as usize];
                        row("org", t, s, rng.next(50), rng.next(2) == 0)
                    })
                    .collect();
                rows.sort_by(|a, b| {
                    (a.trace_id, a.start_time_ms, a.span_id).cmp(&(
                        b.trace_id,
                        b.start_time_ms,
                        b.span_id,
                    ))
                });
                rows
            })
            .collect()
    }

    /// A one-row block's column parts as a batch (its regions, back to back).
    fn parts_to_batch(parts: Vec<std::sync::Arc<Vec<u8>>>, rows: usize) -> RowBatch {
        let mut bounds = [0u32; crate::row::REGIONS + 1];
        let mut data = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            data.extend_from_slice(p);
            bounds[i + 1] = data.len() as u32;
        }
        RowBatch::from_parts(rows, bounds, data).expect("a checked layout")
    }

    #[test]
    fn sorted_batches_of_other_traces_are_whole_runs() {
        let spans = ["a", "b", "c"];
        let one = |trace: &'static str| {
            RowBatch::from_rows(
                &spans
                    .iter()
                    .enumerate()
                    .map(|(i, s)| row("org", trace, s, 10 + i as u64, true))
                    .collect::<Vec<_>>(),
            )
        };
        let (x, y, z) = (one("t3"), one("t1"), one("t2"));
        let runs: Vec<RowRun<'_>> = [&x, &y, &z]
            .iter()
            .map(|b| RowRun {
                batch: b,
                rows: 0..3,
            })
            .collect();
        let sorted = in_key_order(&runs);
        let order: Vec<*const RowBatch> = sorted.iter().map(|r| r.batch as *const _).collect();
        assert_eq!(order, vec![&y as *const _, &z as *const _, &x as *const _]);
        assert!(sorted.iter().all(|r| r.rows == (0..3)));
    }
}
