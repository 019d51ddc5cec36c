//! What the key and organisation tables hold, told without reading their rows: the state
//! `Store::load_admin` compares with the last one to read nothing (no change), only the parts
//! of `api_keys` that are new (keys created or revoked since), or everything.
//!
//! A MergeTree part never changes once written. An insert writes a new part holding new block
//! numbers; a merge replaces parts by one covering their block range (for a
//! `ReplacingMergeTree`, keeping each key's newest version: no row it drops is the newest of
//! its key); a mutation (`ALTER ... DELETE/UPDATE`) rewrites parts under a higher mutation
//! version. So, from one state to the next, with every row of the old parts already read:
//! - a part gone must lie inside a part still there (merged away), else rows were removed
//!   (`TRUNCATE`, a dropped partition, a detached part): read everything;
//! - a new part with a mutation version higher than the parts it replaces: read everything;
//! - a new part that is exactly the gone parts it covers, end to end: nothing new in it;
//! - any other new part (an insert, or a merge of parts never seen): read its rows, newest
//!   version of each key winning over what was read before.
//!
//! A table made again has a new creation time, or parts of the same names with other rows or
//! times: read everything. Not told apart, with `Refresher`'s periodic read of every key as
//! the bound: a table made again within the same second with parts of the same names, rows and
//! times, or whose parts cover the old ones end to end; a part dropped by hand (`DROP PART`,
//! 19.x and later) or lost by a replica and merged over before the next look. Rows of one key
//! with the same version are applied in the order read, which `FINAL` may not follow across
//! loads (the versions the CLI writes are microseconds, one apart at least).
//!
//! A new part merged away before its rows were read is left out of what counts as read
//! (`Store::load_admin`), so the part it went into counts as holding blocks never read: the
//! same load looks at the parts again and reads that one.

/// One active part of `api_keys` (`system.parts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub partition: String,
    pub min_block: i64,
    pub max_block: i64,
    /// `data_version` where it differs from `min_block` (the part was mutated), else 0.
    pub mutation: i64,
    /// Its rows and when it was written (seconds): a part of the same name with other ones is
    /// another part (the table made again, block numbers starting over).
    pub rows: u64,
    pub modified: u32,
}

impl Part {
    fn inside(&self, outer: &Part) -> bool {
        self.partition == outer.partition
            && outer.min_block <= self.min_block
            && self.max_block <= outer.max_block
    }
}

/// The state of the two tables on the node read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminTables {
    /// `api_keys`'s active parts, by name.
    pub keys: Vec<Part>,
    /// `orgs`'s active parts (name, rows, time written) and both tables' creation times.
    pub rest: Vec<String>,
}

/// Which rows of `api_keys` a load must read to go from `old` to `new`.
#[derive(Debug, PartialEq, Eq)]
pub enum KeysToRead {
    /// Every key (`FINAL`).
    All,
    /// Only the rows of these parts (names); none when nothing was added.
    Parts(Vec<String>),
}

/// Whether a table was made again between `old` and `new`: its creation time (in `rest`, with
/// the orgs' parts, which are read whole anyway) changed.
pub fn made_again(old: &AdminTables, new: &AdminTables) -> bool {
    fn created(t: &AdminTables) -> impl Iterator<Item = &String> {
        t.rest.iter().filter(|l| l.contains(" created "))
    }
    !created(old).eq(created(new))
}

/// What to read of `api_keys` after `old` (parts whose every row was read) to know what `new`
/// (its active parts now) holds. A table made again (`made_again`) reads everything too.
pub fn parts_to_read(old: &[Part], new: &[Part]) -> KeysToRead {
    let is_in = |p: &Part, parts: &[Part]| parts.iter().any(|q| q.name == p.name);
    let same_name_other_part = old
        .iter()
        .any(|o| new.iter().any(|n| n.name == o.name && n != o));
    if same_name_other_part {
        return KeysToRead::All;
    }
    let gone: Vec<&Part> = old.iter().filter(|p| !is_in(p, new)).collect();
    if gone.iter().any(|g| !new.iter().any(|n| g.inside(n))) {
        return KeysToRead::All;
    }
    let mut read = Vec::new();
    for n in new.iter().filter(|p| !is_in(p, old)) {
        let mut within: Vec<&&Part> = gone.iter().filter(|g| g.inside(n)).collect();
        let mutation = within.iter().map(|g| g.mutation).max().unwrap_or(0);
        if n.mutation > mutation {
            return KeysToRead::All;
        }
        within.sort_by_key(|g| g.min_block);
        let mut next = n.min_block;
        let end_to_end = !within.is_empty()
            && within.iter().all(|g| {
                let follows = g.min_block == next;
                next = g.max_block + 1;
                follows
            })
            && next == n.max_block + 1;
        if !end_to_end {
            read.push(n.name.clone());
        }
    }
    KeysToRead::Parts(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_to_read(old: &AdminTables, new: &AdminTables) -> KeysToRead {
        if made_again(old, new) {
            return KeysToRead::All;
        }
        parts_to_read(&old.keys, &new.keys)
    }

    fn part(name: &str, min: i64, max: i64, mutation: i64) -> Part {
        Part {
            name: name.to_string(),
            partition: "all".to_string(),
            min_block: min,
            max_block: max,
            mutation,
            rows: 1,
            modified: 100,
        }
    }

    fn state(keys: &[&Part]) -> AdminTables {
        AdminTables {
            keys: keys.iter().map(|&p| p.clone()).collect(),
            rest: vec!["api_keys created 100".into(), "orgs created 100".into()],
        }
    }

    fn parts(names: &[&str]) -> KeysToRead {
        KeysToRead::Parts(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn inserts_are_read_merges_of_read_parts_are_not() {
        let a = part("all_1_1_0", 1, 1, 0);
        let b = part("all_2_2_0", 2, 2, 0);
        let c = part("all_3_3_0", 3, 3, 0);
        // An insert: its part.
        assert_eq!(
            keys_to_read(&state(&[&a]), &state(&[&a, &b])),
            parts(&["all_2_2_0"])
        );
        // A merge of parts read: nothing.
        let ab = part("all_1_2_1", 1, 2, 0);
        assert_eq!(keys_to_read(&state(&[&a, &b]), &state(&[&ab])), parts(&[]));
        // A merge that took a part never seen (inserted and merged between two loads): read.
        let abc = part("all_1_3_1", 1, 3, 0);
        assert_eq!(
            keys_to_read(&state(&[&a, &b]), &state(&[&abc])),
            parts(&["all_1_3_1"])
        );
        // ... and when block numbers were skipped (a gap is not known to be empty).
        let a_c = part("all_1_3_1", 1, 3, 0);
        assert_eq!(
            keys_to_read(&state(&[&a, &c]), &state(&[&a_c])),
            parts(&["all_1_3_1"])
        );
        // A merge and an insert at once.
        let d = part("all_4_4_0", 4, 4, 0);
        assert_eq!(
            keys_to_read(&state(&[&a, &b, &c]), &state(&[&abc, &d])),
            parts(&["all_4_4_0"])
        );
        // The same state: nothing.
        assert_eq!(keys_to_read(&state(&[&abc]), &state(&[&abc])), parts(&[]));
    }

    #[test]
    fn removals_mutations_and_a_new_table_read_everything() {
        let a = part("all_1_1_0", 1, 1, 0);
        let b = part("all_2_2_0", 2, 2, 0);
        // A part gone, in no part that is there (TRUNCATE, a detached part).
        assert_eq!(
            keys_to_read(&state(&[&a, &b]), &state(&[&b])),
            KeysToRead::All
        );
        assert_eq!(keys_to_read(&state(&[&a]), &state(&[])), KeysToRead::All);
        // A mutation (ALTER DELETE) of a part: same blocks, a higher mutation version.
        let a3 = part("all_1_1_0_3", 1, 1, 3);
        assert_eq!(
            keys_to_read(&state(&[&a, &b]), &state(&[&a3, &b])),
            KeysToRead::All
        );
        // A later merge of mutated parts read since: no new mutation, nothing to read.
        let b3 = part("all_2_2_0_3", 2, 2, 3);
        let ab3 = part("all_1_2_1_3", 1, 2, 3);
        assert_eq!(
            keys_to_read(&state(&[&a3, &b3]), &state(&[&ab3])),
            parts(&[])
        );
        // Another partition is not a cover.
        let other = Part {
            partition: "other".into(),
            ..part("other_1_2_1", 1, 2, 0)
        };
        assert_eq!(
            keys_to_read(&state(&[&a]), &state(&[&other])),
            KeysToRead::All
        );
        // A part of the same name with other rows or another time: the table made again
        // within the second its creation time is told in.
        let other_a = Part {
            rows: 2,
            ..a.clone()
        };
        assert_eq!(
            keys_to_read(&state(&[&a]), &state(&[&other_a])),
            KeysToRead::All
        );
        let later_a = Part {
            modified: 101,
            ..a.clone()
        };
        assert_eq!(
            keys_to_read(&state(&[&a]), &state(&[&later_a])),
            KeysToRead::All
        );
        // The table made again.
        let mut again = state(&[&a]);
        again.rest[0] = "api_keys created 200".into();
        assert_eq!(keys_to_read(&state(&[&a]), &again), KeysToRead::All);
    }
}
