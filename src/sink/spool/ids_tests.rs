//! How the spool numbers its segments.

use super::{batch, open};
use crate::sink::segment::segment_path;
use crate::sink::test_dir::TestDir;

/// A file already at the id the spool takes next (a write-ahead segment whose failed creation
/// could not remove it) is passed over, not the end of the append: at a stop that append keeps
/// the last rows of accepted batches.
#[test]
fn a_segment_file_already_at_the_next_id_is_passed_over() {
    let dir = TestDir::new("spool-taken-id");
    let (mut spool, _stats) = open(&dir, 1 << 30);
    let taken = spool.take_next_id() + 1;
    std::fs::write(segment_path(spool.dir(), taken), b"left over").unwrap();
    let pos = spool
        .append(&batch("o", "t", 3, 0), true)
        .expect("appended to the next free id");
    assert_eq!(
        std::fs::read(segment_path(spool.dir(), taken)).unwrap(),
        b"left over",
        "the other file is left alone"
    );
    spool.sync().unwrap();
    drop(spool);
    let (mut spool, _) = open(&dir, 1 << 30);
    let back: Vec<_> = std::iter::from_fn(|| spool.read_next()).collect();
    assert_eq!(
        back.len(),
        1,
        "the record reads back after a restart ({pos:?})"
    );
}
