//! Tests of counting on one replica of each shard, with scripted replicas.

use std::cell::RefCell;

use super::on_one_replica;

/// Replicas 0..n: which ones fail to connect, are stale, fail to check, fail to count.
#[derive(Default)]
struct Shard {
    down: Vec<usize>,
    stale: Vec<usize>,
    unchecked: Vec<usize>,
    failing: Vec<usize>,
}

/// What `on_one_replica` does over `order` on `shard`: each step it took, and the result
/// (the replica counted on, or the last error).
fn run(shard: &Shard, order: &[usize]) -> (Vec<String>, Result<usize, Option<String>>) {
    let steps = RefCell::new(Vec::new());
    let counted = RefCell::new(None);
    let step = |s: String| steps.borrow_mut().push(s);
    let result = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(on_one_replica(
            order,
            async |n| {
                step(format!("connect {n}"));
                if shard.down.contains(&n) {
                    Err(format!("{n} down"))
                } else {
                    Ok(n)
                }
            },
            async |n: &mut usize| {
                step(format!("check {n}"));
                if shard.unchecked.contains(n) {
                    return Err(format!("{n} unchecked"));
                }
                Ok(shard.stale.contains(n))
            },
            async |n: &mut usize| {
                step(format!("count {n}"));
                if shard.failing.contains(n) {
                    return Err(format!("{n} failed"));
                }
                *counted.borrow_mut() = Some(*n);
                Ok(())
            },
        ));
    let result = result.map(|()| counted.borrow().expect("counted on one"));
    (steps.into_inner(), result)
}

#[test]
fn a_stale_replica_is_counted_on_only_when_no_other_counts() {
    // The first fresh replica that answers, past one down and one stale.
    let shard = Shard {
        down: vec![0],
        stale: vec![1],
        ..Shard::default()
    };
    let (steps, got) = run(&shard, &[0, 1, 2]);
    assert_eq!(got, Ok(2));
    assert_eq!(
        steps,
        [
            "connect 0",
            "connect 1",
            "check 1",
            "connect 2",
            "check 2",
            "count 2"
        ]
    );

    // The fresh one fails to count: the stale ones, in the order they were found.
    let shard = Shard {
        stale: vec![0, 2],
        failing: vec![1, 0],
        ..Shard::default()
    };
    let (steps, got) = run(&shard, &[0, 1, 2]);
    assert_eq!(got, Ok(2));
    assert_eq!(
        steps,
        [
            "connect 0",
            "check 0",
            "connect 1",
            "check 1",
            "count 1",
            "connect 2",
            "check 2",
            "count 0",
            "count 2"
        ]
    );

    // One whose check fails is not counted on at all, stale or not.
    let shard = Shard {
        unchecked: vec![0],
        stale: vec![1],
        ..Shard::default()
    };
    assert_eq!(run(&shard, &[0, 1]).1, Ok(1));
    let shard = Shard {
        unchecked: vec![0],
        ..Shard::default()
    };
    assert_eq!(run(&shard, &[1, 0]).1, Ok(1));

    // None counts: the last error; no replica at all: none.
    let shard = Shard {
        down: vec![0],
        stale: vec![1],
        failing: vec![1],
        ..Shard::default()
    };
    for order in [[1, 0], [0, 1]] {
        // The stale one's count comes last, after every other replica was tried.
        assert_eq!(run(&shard, &order).1, Err(Some("1 failed".to_string())));
    }
    assert_eq!(run(&shard, &[0]).1, Err(Some("0 down".to_string())));
    assert_eq!(run(&Shard::default(), &[]).1, Err(None));
}
