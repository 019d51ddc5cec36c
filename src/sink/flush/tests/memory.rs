//! Inserts ClickHouse had not the memory for (`MEMORY_LIMIT_EXCEEDED`, `Retry::Smaller`): split
//! without blaming any row, and smaller for a while; never dead-lettered.

use super::offline::{drive, queued, unknown_error};
use super::*;
use crate::sink::clickhouse::Inserted;

fn out_of_memory() -> InsertError {
    use clickhouse_rs::errors::{Error as ChError, ServerError};
    InsertError::from(ChError::Server(ServerError {
        code: 241,
        name: "DB::Exception".into(),
        message: "Memory limit (for query) exceeded: would use 9.31 GiB (attempt to allocate \
                  chunk of 4194304 bytes), maximum: 9.31 GiB"
            .into(),
        stack_trace: String::new(),
    }))
}

/// Drives inserts until the queue is empty, ClickHouse taking at most `most` rows an insert
/// (more fail with `out_of_memory`). Returns the rows of every insert tried, in order.
fn drive_with_room_for(st: &mut State, most: usize) -> Vec<usize> {
    let tried = drive(st, |_, _, rows| (rows > most).then(out_of_memory));
    tried.into_iter().map(|(rows, _)| rows).collect()
}

/// Found by an audit: `MEMORY_LIMIT_EXCEEDED` was retried at the same size, so a block past
/// the user's `max_memory_usage` waited forever (and held the rows behind it). Now the insert
/// is split in halves until they fit, no row dead-lettered, and the next inserts are no larger
/// than the last size refused halved.
#[test]
fn an_insert_without_the_memory_goes_in_halves_and_the_next_ones_are_smaller() {
    let dir = TestDir::new("flush-memory");
    let mut f = queued(&dir, config("unused", NATIVE_URL), 8);
    let st = &mut f.st;
    assert_eq!(drive_with_room_for(st, 2), vec![8, 4, 2, 2, 2, 2]);
    assert_eq!((st.report.rows_flushed, st.report.rows_rejected), (8, 0));
    assert_eq!(st.cfg.budget.rows(), 0);
    // Eight batches of one row each: inserts of two, none refused.
    for i in 0..8 {
        let b = batch("o", &format!("t{i}"), 1, 1_700_000_000_000);
        st.cfg.budget.take(b.len() as u64, b.heap_bytes() as u64);
        st.push(Entry::new(b, None), Instant::now());
    }
    assert_eq!(st.max_insert_rows(), 2);
    assert_eq!(drive_with_room_for(st, 2), vec![2, 2, 2, 2]);
    assert_eq!((st.report.rows_flushed, st.report.rows_rejected), (16, 0));
    // Once the while has passed, inserts are full size again.
    st.smaller = st.smaller.map(|(rows, _)| (rows, Instant::now()));
    assert_eq!(st.max_insert_rows(), st.cfg.max_rows);
}

/// Found by a review of the memory split: while inserts were capped, a batch of more rows than
/// the cap was still sent whole (an insert takes at least one batch), refused, and halved down
/// to the cap again: log2(batch / cap) failed inserts for every such batch. It is cut at the
/// cap before it is sent, and its rows still go in once each.
#[test]
fn a_batch_past_the_cap_is_cut_before_it_is_sent() {
    let dir = TestDir::new("flush-memory-cut");
    let mut f = queued(&dir, config("unused", NATIVE_URL), 8);
    let st = &mut f.st;
    assert_eq!(drive_with_room_for(st, 2), vec![8, 4, 2, 2, 2, 2]);
    let b = batch("o", "t-big", 7, 1_700_000_000_000);
    st.cfg.budget.take(b.len() as u64, b.heap_bytes() as u64);
    st.push(Entry::new(b, None), Instant::now());
    assert_eq!(drive_with_room_for(st, 2), vec![2, 2, 2, 1]);
    assert_eq!((st.report.rows_flushed, st.report.rows_rejected), (15, 0));
    assert_eq!((st.cfg.budget.rows(), st.cfg.budget.bytes()), (0, 0));
}

/// A server short of memory as a whole refuses even one row: it is waited for like any
/// transient error, never dead-lettered, and everything goes in once it has memory again.
#[test]
fn a_single_row_without_the_memory_waits() {
    let dir = TestDir::new("flush-memory-row");
    let mut f = queued(&dir, config("unused", NATIVE_URL), 8);
    let st = &mut f.st;
    for _ in 0..40 {
        let (pieces, rows) = st.next_insert();
        st.failed(pieces, rows, &out_of_memory());
    }
    assert_eq!(st.next_insert().1, 1, "split down to one row");
    assert!(st.retry_at.is_some(), "backing off");
    assert_eq!(
        st.max_insert_rows(),
        st.cfg.max_rows,
        "not the inserts' size: later ones are full size"
    );
    assert_eq!(st.report.rows_rejected, 0, "no row dead-lettered");
    assert_eq!(st.queued_rows, 8, "every row kept");
    drive_with_room_for(st, usize::MAX);
    assert_eq!((st.report.rows_flushed, st.report.rows_rejected), (8, 0));
}

/// The halves of an insert refused for memory going in say nothing of the rows: an unknown
/// error that follows is retried up to its cap before any split, as outside a bisection, so a
/// lasting server-side error does not dead-letter good rows.
#[test]
fn halves_of_a_memory_split_going_in_do_not_blame_the_rows() {
    let dir = TestDir::new("flush-memory-unknown");
    let mut f = queued(&dir, config("unused", NATIVE_URL), 8);
    let st = &mut f.st;
    let (pieces, rows) = st.next_insert();
    assert!(st.failed(pieces, rows, &out_of_memory()), "split at once");
    let (pieces, rows) = st.next_insert();
    assert_eq!(rows, 4);
    st.written(pieces, Inserted { rows, bytes: 0 }, Duration::ZERO);
    let e = unknown_error();
    for _ in 0..20 {
        let (pieces, rows) = st.next_insert();
        st.failed(pieces, rows, &e);
    }
    assert_eq!(st.report.rows_rejected, 0, "no row dead-lettered");
    assert_eq!(st.queued_rows, 4, "the other half kept");
}

/// Found by a review: a half of an insert refused for memory that held a bad row was bisected
/// to isolate it (`Split`), which showed those rows at fault; the other half, never suspected
/// of anything, then met an unknown error (the server's, say) and was split at once as if it
/// were part of that isolation: its good rows were dead-lettered within three tries, not
/// retried up to the cap first.
#[test]
fn an_isolation_inside_a_memory_split_does_not_blame_the_other_half() {
    let dir = TestDir::new("flush-memory-split-unknown");
    let mut f = queued(&dir, config("unused", NATIVE_URL), 8);
    let st = &mut f.st;
    let split = InsertError {
        retry: Retry::Split,
        code: Some(27),
        message: "Cannot parse input".into(),
    };
    // Eight rows refused for memory; in the first half, row 0 is refused for its value.
    while st.queued_rows > 4 {
        let (pieces, rows) = st.next_insert();
        let has_row_0 = st.queue.iter().take(pieces).any(|p| p.start == 0);
        if rows == 8 {
            st.failed(pieces, rows, &out_of_memory());
        } else if has_row_0 {
            st.failed(pieces, rows, &split);
        } else {
            st.written(pieces, Inserted { rows, bytes: 0 }, Duration::ZERO);
        }
    }
    assert_eq!(st.report.rows_rejected, 1, "row 0 dead-lettered");
    let front = st.queue.front().expect("the other half");
    assert_eq!((front.start, front.end), (4, 8));
    // The other half meets an unknown error, fewer times than its cap.
    let e = unknown_error();
    for _ in 0..st.cfg.max_unknown_attempts - 1 {
        let (pieces, rows) = st.next_insert();
        st.failed(pieces, rows, &e);
    }
    assert_eq!(st.report.rows_rejected, 1, "no good row dead-lettered");
    assert_eq!(st.queued_rows, 4, "the other half kept");
}

/// Found by a review: a limit the insert shares with other queries, the server's whole memory
/// (`(total)`) or its user's (`(for user)`), passed while a heavy query ran, capped inserts at
/// the size at which the bisection happened to go in once that query ended: e.g. 39 rows an
/// insert, for 10 minutes, each renewed by the next such refusal (a part per few batches). The
/// halves still go in, but only the query's own limit (`(for query)`) caps the next inserts.
#[test]
fn a_shortage_the_insert_shares_with_other_queries_leaves_no_cap() {
    use clickhouse_rs::errors::{Error as ChError, ServerError};
    for limit in ["(total)", "(for user)"] {
        let dir = TestDir::new("flush-memory-total");
        let mut f = queued(&dir, config("unused", NATIVE_URL), 8);
        let st = &mut f.st;
        let e = InsertError::from(ChError::Server(ServerError {
            code: 241,
            name: "DB::Exception".into(),
            message: format!(
                "Memory limit {limit} exceeded: would use 9.31 GiB (attempt to allocate chunk \
                 of 4194304 bytes), maximum: 9.31 GiB"
            ),
            stack_trace: String::new(),
        }));
        assert_eq!(e.retry, Retry::Smaller);
        let (pieces, rows) = st.next_insert();
        assert!(st.failed(pieces, rows, &e), "{limit}: split at once");
        // The heavy query ends: the halves go in.
        let tried = drive(st, |_, _, _| None);
        assert_eq!(tried, vec![(4, false), (4, false)], "{limit}");
        assert_eq!(st.max_insert_rows(), st.cfg.max_rows, "{limit}: no cap");
        assert_eq!(st.report.rows_rejected, 0);
    }
}
