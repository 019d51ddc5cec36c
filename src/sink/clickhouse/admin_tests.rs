//! Keys and organisations against a real ClickHouse: insert, list, revoke and load keys;
//! put, get and list organisations and count their months.

use super::test_support::*;
use super::*;
use crate::row::{RowBatch, RowRef};

#[test]
fn keys_insert_list_revoke_load() {
    if skip() {
        return;
    }
    let db = TestDb::new("keys");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let key = |hash: &str, prefix: &str, org: &str, project: &str, created: u32| KeyRecord {
        key_hash: hash.repeat(32),
        display_prefix: prefix.to_string(),
        org_id: org.to_string(),
        project_id: project.to_string(),
        created_at: created,
        revoked_at: None,
    };
    let a = key("0a", "ti_aaaaaaaaa", "org-a", "", 1_700_000_000);
    let b = key("1b", "ti_bbbbbbbbb", "org-b", "proj-b", 1_700_000_001);
    let c = key("2c", "ti_o'quote\\", "org-c", "", 1_700_000_002);
    for k in [&a, &b, &c] {
        rt.block_on(store.insert_key(k)).unwrap();
    }
    assert!(rt
        .block_on(store.insert_key(&key("zz", "ti_x", "o", "", 0)))
        .is_err());
    assert_eq!(
        rt.block_on(store.list_keys()).unwrap(),
        vec![a.clone(), b.clone(), c.clone()]
    );

    let revoke = |p: &str| rt.block_on(store.revoke_key(p, false)).unwrap();
    assert_eq!(revoke("ti_bbbbbbbbb"), Revoked::Keys(1));
    assert_eq!(revoke("ti_bbbbbbbbb"), Revoked::Keys(0));
    assert_eq!(revoke("ti_nothing__"), Revoked::Keys(0));
    assert_eq!(revoke("ti_o'quote\\"), Revoked::Keys(1));

    let listed = rt.block_on(store.list_keys()).unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0], a);
    assert!(listed[1].revoked_at.is_some() && listed[2].revoked_at.is_some());
    assert_eq!(
        rt.block_on(store.load_active_keys()).unwrap(),
        vec![ActiveKey {
            hash: [0x0a; 32],
            org_id: "org-a".into(),
            project_id: String::new(),
        }]
    );
}

/// Found in review: `keys create` reports the key it made as `created key ti_AbCdEfGhI... for
/// org ...`, and `keys revoke ti_AbCdEfGhI...`, pasted from there, took the argument for a whole
/// key (it is longer than a display prefix), revoked nothing and said "no active key is
/// ti_AbCdEfGhI...". A display prefix followed by the "..." the commands print names the key.
#[test]
fn a_display_prefix_as_printed_with_its_dots_revokes() {
    if skip() {
        return;
    }
    let db = TestDb::new("keys_dots");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    for (hash, prefix) in [("0a", "ti_aaaaaaaaa"), ("1b", "ti_bbbbbbbbb")] {
        let record = KeyRecord {
            key_hash: hash.repeat(32),
            display_prefix: prefix.to_string(),
            org_id: "org-a".to_string(),
            project_id: String::new(),
            created_at: 1_700_000_000,
            revoked_at: None,
        };
        rt.block_on(store.insert_key(&record)).unwrap();
    }
    let revoke = |p: &str| rt.block_on(store.revoke_key(p, false)).unwrap();
    assert_eq!(revoke("ti_aaaaaaaaa..."), Revoked::Keys(1));
    assert_eq!(revoke("ti_bbbbbbbbb\u{2026}"), Revoked::Keys(1));
    let active: Vec<[u8; 32]> = rt
        .block_on(store.load_active_keys())
        .unwrap()
        .into_iter()
        .map(|k| k.hash)
        .collect();
    assert!(active.is_empty(), "{active:?}");
}

#[test]
fn orgs_put_get_list_and_monthly_counts() {
    if skip() {
        return;
    }
    let db = TestDb::new("orgs");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    assert_eq!(rt.block_on(store.get_org("org-a")).unwrap(), None);
    rt.block_on(store.put_org("org-a", "free")).unwrap();
    rt.block_on(store.put_org("org-b'q", "pro")).unwrap();
    let a = rt.block_on(store.get_org("org-a")).unwrap().unwrap();
    assert_eq!(a.plan, "free");
    rt.block_on(store.put_org("org-a", "enterprise")).unwrap();
    let a2 = rt.block_on(store.get_org("org-a")).unwrap().unwrap();
    assert_eq!(
        (a2.plan.as_str(), a2.created_at),
        ("enterprise", a.created_at)
    );
    let listed: Vec<(String, String)> = rt
        .block_on(store.list_orgs())
        .unwrap()
        .into_iter()
        .map(|o| (o.org_id, o.plan))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("org-a".to_string(), "enterprise".to_string()),
            ("org-b'q".to_string(), "pro".to_string())
        ]
    );

    // `batch` rows are ingested at 1_700_000_100 (2023-11-14).
    let mut batches = vec![batch("org-a", "t1", 3, 0), batch("org-b'q", "t2", 2, 0)];
    let ids = ["s0", "s1", "s2", "s3"];
    let december: Vec<_> = ids
        .iter()
        .map(|id| RowRef {
            ingested_at: 1_701_388_800, // 2023-12-01 00:00:00
            version: 1_701_388_800_250,
            ..row("org-a", "t3", id, 0, true)
        })
        .collect();
    batches.push(RowBatch::from_rows(&december));
    // A corrected copy `reprice` wrote of one of November's spans: the same ingest time, a
    // later version. Not an ingest: not counted against the quota.
    let corrected = [RowRef {
        version: 1_702_000_000_000,
        ..row("org-a", "t3", "s0", 0, true)
    }];
    batches.push(RowBatch::from_rows(&corrected));
    rt.block_on(store.insert_spans(&batches)).unwrap();
    let november = (1_698_796_800, 1_701_388_800);
    let now = crate::clock::now_s() as i64;
    let mut counts = rt
        .block_on(store.count_spans_by_org(
            &["org-a", "org-b'q", "org-c"],
            november.0,
            november.1,
            now,
        ))
        .unwrap();
    counts.sort();
    assert_eq!(
        counts,
        vec![("org-a".to_string(), 3), ("org-b'q".to_string(), 2)]
    );
    let december = rt
        .block_on(store.count_spans_by_org(&["org-a"], 1_701_388_800, 1_704_067_200, now))
        .unwrap();
    assert_eq!(december, vec![("org-a".to_string(), 4)]);
}

/// A usage count reads only the partitions written since its month began (less a day for the
/// clocks): a row ingested this month is counted whatever month it started in (even past
/// 2106, where the partition's month wraps), and rows in parts written before the month are
/// not read, even stamped with its time.
#[test]
fn a_monthly_count_reads_only_partitions_written_since_the_month_began() {
    if skip() {
        return;
    }
    let db = TestDb::new("count_parts");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let now_s = crate::clock::now_ms() / 1000;
    let month = crate::calendar::Month::of_ms(now_s * 1000);
    // Started in 2019, in this month, on 2106-02-07 and in 2128, ingested now: the last two
    // are in partitions 197001 and 199205 (18.16's dates end, then `toDateTime` wraps), and all
    // are written now.
    let old_start = 1_550_000_000_000;
    let now_rows: Vec<RowRef> = [
        ("s0", old_start),
        ("s1", now_s * 1000),
        ("s2", old_start),
        ("s5", 4_294_950_000_000),
        ("s6", 5_000_000_000_000),
    ]
    .iter()
    .map(|&(id, start)| RowRef {
        ingested_at: now_s as u32,
        version: now_s * 1000,
        ..row("org-a", "t1", id, start, true)
    })
    .collect();
    // Stamped in January 2100 (a server clock far ahead), written now: before that month.
    let later_s: u64 = 4_102_444_800;
    let later_rows: Vec<RowRef> = ["s3", "s4"]
        .iter()
        .map(|id| RowRef {
            ingested_at: later_s as u32,
            version: later_s * 1000,
            ..row("org-a", "t2", id, later_s * 1000, true)
        })
        .collect();
    let batches = [
        RowBatch::from_rows(&now_rows),
        RowBatch::from_rows(&later_rows),
    ];
    rt.block_on(store.insert_spans(&batches)).unwrap();
    let count = |from: i64, to: i64, now: i64| {
        rt.block_on(store.count_spans_by_org(&["org-a"], from, to, now))
            .unwrap()
    };
    let now = now_s as i64;
    assert_eq!(
        count(month.start_s(), month.end_s(), now),
        vec![("org-a".to_string(), 5)],
        "every partition written read, a far-future start time's too"
    );
    let all: u64 = json_rows(&format!(
        "SELECT count() AS n FROM `{}`.spans WHERE ingested_at >= toDateTime({later_s})",
        db.0
    ))[0]["n"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(all, 2, "the rows are there");
    let january_2100 = (later_s as i64, later_s as i64 + 31 * 86_400);
    assert_eq!(
        count(january_2100.0, january_2100.1, now),
        vec![],
        "but in parts written long before their month"
    );
    // A stamping clock that reads 2100 now (a test clock, or one far off) wrote them in that
    // month as ClickHouse's clock sees it.
    assert_eq!(
        count(january_2100.0, january_2100.1, later_s as i64 + 3600),
        vec![("org-a".to_string(), 2)],
        "counted by a clock in their month"
    );
}

/// Partitions are left out of a count by when their parts were written: of three rows ingested
/// in the same month, one started in 2019 and written before the (shifted) month began, two
/// started in May 2020, one written before and one after, only the last two are counted (a
/// partition with a part written since is read whole). ClickHouse's own clock says
/// where "before" ends; the count's `now` moves the month's start onto it.
#[test]
fn a_monthly_count_leaves_out_partitions_written_before_the_month() {
    if skip() {
        return;
    }
    let db = TestDb::new("count_prune");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let clickhouse_now = || -> i64 {
        json_rows("SELECT toUInt32(now()) AS t")[0]["t"]
            .as_u64()
            .unwrap() as i64
    };
    // Both ingested on 2024-03-10, one started in February 2019, the other in May 2020.
    let ingested: u64 = 1_710_028_800;
    let insert = |span: &str, start: u64| {
        let rows = [RowRef {
            ingested_at: ingested as u32,
            version: ingested * 1000,
            ..row("org-a", span, span, start, true)
        }];
        rt.block_on(store.insert_spans(&[RowBatch::from_rows(&rows)]))
            .unwrap();
    };
    insert("before", 1_550_000_000_000);
    // Written before too, but in the partition of a part written after: read with it, as a
    // part written while ClickHouse's clock was behind would be.
    insert("early", 1_590_000_000_000);
    let between = clickhouse_now() + 1;
    while clickhouse_now() <= between {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    insert("after", 1_590_000_000_000);
    let march = crate::calendar::Month::of_ms(ingested * 1000);
    let count = |now: i64| {
        rt.block_on(store.count_spans_by_org(&["org-a"], march.start_s(), march.end_s(), now))
            .unwrap()
    };
    // The stamping clock's now such that the month began (less the margin) at `at` on
    // ClickHouse's clock: at `between`, only the part written after; a minute earlier, both.
    let shifted = |at: i64| march.start_s() - super::admin::CLOCK_MARGIN_S + clickhouse_now() - at;
    assert_eq!(count(shifted(between)), vec![("org-a".to_string(), 2)]);
    assert_eq!(count(shifted(between - 60)), vec![("org-a".to_string(), 3)]);
}

/// A usage count reads a part once: later counts add up the counts kept, read only the parts
/// inserted since, and read a merge's part anew (so a retry's duplicate merged away stops
/// counting). Some of the organisations again are counted from what is kept; another month,
/// or an organisation not counted yet, counts every part again.
#[test]
fn a_monthly_count_reads_each_part_once_and_a_merged_part_anew() {
    if skip() {
        return;
    }
    let db = TestDb::new("count_kept");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    http_query(&format!("SYSTEM STOP MERGES `{}`.spans", db.0));
    // `batch` rows are ingested at 1_700_000_100 (November 2023); one insert, one part.
    let insert = |b: RowBatch| rt.block_on(store.insert_spans(&[b])).unwrap();
    insert(batch("org-a", "t1", 3, 0));
    insert(batch("org-b", "t2", 2, 0));
    // A client's retry of one of the first spans: stored twice until merged.
    insert(batch("org-a", "t1", 1, 0));
    let november = (1_698_796_800, 1_701_388_800);
    let now = crate::clock::now_s() as i64;
    let count = |orgs: &[&str], month: (i64, i64)| {
        let before = store.count_stats();
        let counts = rt
            .block_on(store.count_spans_by_org(orgs, month.0, month.1, now))
            .unwrap();
        let s = store.count_stats();
        assert_eq!(s.counts, before.counts + 1);
        let read = |f: fn(&CountStats) -> usize| f(&s) - f(&before);
        (
            counts,
            (
                read(|s| s.parts_counted),
                read(|s| s.parts_summed),
                read(|s| s.whole),
            ),
        )
    };
    let counts = |a: u64, b: u64| vec![("org-a".to_string(), a), ("org-b".to_string(), b)];
    assert_eq!(
        count(&["org-a", "org-b"], november),
        (counts(4, 2), (3, 3, 0))
    );
    assert_eq!(
        count(&["org-a", "org-b"], november),
        (counts(4, 2), (0, 3, 0)),
        "nothing new: no rows read"
    );
    insert(batch("org-b", "t3", 5, 0));
    assert_eq!(
        count(&["org-a", "org-b"], november),
        (counts(4, 7), (1, 4, 0)),
        "only the new part read"
    );
    http_query(&format!("SYSTEM START MERGES `{}`.spans", db.0));
    http_query(&format!("OPTIMIZE TABLE `{}`.spans FINAL", db.0));
    assert_eq!(
        count(&["org-a", "org-b"], november),
        (counts(3, 7), (1, 1, 0)),
        "the merged part read anew, without the retry's copy"
    );
    assert_eq!(
        count(&["org-b"], november),
        (vec![("org-b".to_string(), 7)], (0, 1, 0)),
        "some of the organisations again: from the counts kept"
    );
    assert_eq!(
        count(&["org-c", "org-a"], november),
        (vec![("org-a".to_string(), 3)], (1, 1, 0)),
        "an organisation not counted yet: every part counted again"
    );
    assert_eq!(
        count(&["org-a", "org-b", "org-c"], november),
        (counts(3, 7), (0, 1, 0)),
        "and kept for all of them"
    );
    let december = (1_701_388_800, 1_704_067_200);
    assert_eq!(count(&["org-b"], december), (vec![], (1, 1, 0)));
    // Two counts at once on one `Store`: both right, and both in what it says it read.
    let before = store.count_stats();
    let (x, y) = rt.block_on(async {
        tokio::join!(
            store.count_spans_by_org(&["org-b"], november.0, november.1, now),
            store.count_spans_by_org(&["org-b"], november.0, november.1, now)
        )
    });
    let seven = vec![("org-b".to_string(), 7)];
    assert_eq!((x.unwrap(), y.unwrap()), (seven.clone(), seven));
    assert_eq!(store.count_stats().counts, before.counts + 2);
}
