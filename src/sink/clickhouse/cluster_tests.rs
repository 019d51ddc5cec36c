//! Cluster mode: shard routing, topology, replicas in turn, and the cluster's DDL.

use super::*;

impl Store {
    /// For tests elsewhere: a cluster of `shards` shards of equal weight, each with the first
    /// node as its replica, without asking ClickHouse.
    pub(crate) fn with_shards_for_tests(self, shards: usize) -> Store {
        *self.topology.lock().unwrap() = Some(Arc::new(Topology {
            shards: vec![vec![0]; shards],
            slots: (0..shards).collect(),
            next: (0..shards).map(|_| AtomicUsize::new(0)).collect(),
        }));
        self
    }
}

impl ShardsDone {
    /// For tests elsewhere: these shards written.
    pub(crate) fn of_shards_for_tests(shards: &[usize]) -> ShardsDone {
        let mut done = ShardsDone::default();
        for &s in shards {
            done.set(s);
        }
        done
    }
}

/// A shard's error is about its rows only: the insert's error is the one that keeps the most
/// rows, so that a shard refusing its rows for good does not get the rows of a shard that is
/// only down given up with them.
#[test]
fn the_insert_fails_with_the_shard_error_that_keeps_the_most_rows() {
    use Retry::*;
    let order = [Later, AfterMigrate, Unknown, Smaller, Split, Never];
    for (i, &a) in order.iter().enumerate() {
        for (j, &b) in order.iter().enumerate() {
            assert_eq!(keeps_more(a, b), i < j, "{a:?} {b:?}");
        }
    }
}

/// `sipHash64` as ClickHouse 18.16 computes it (`SELECT sipHash64('...')`).
#[test]
fn shard_hash_is_clickhouses_siphash64() {
    for (s, want) in [
        ("", 2_202_906_307_356_721_367u64),
        ("abc", 4_596_069_200_710_135_518),
    ] {
        assert_eq!(shard_hash(s.as_bytes()), want, "{s:?}");
    }
}

/// Runs cut by shard: every row once, in order, each run on its rows' shard, adjacent rows
/// of a shard in one run; shard weights as the `Distributed` engine counts them.
#[test]
fn routing_by_trace() {
    use crate::row::{RowBatch, RowRef};
    let ids: Vec<String> = (0..12).map(|i| format!("trace-{i}")).collect();
    let rows: Vec<RowRef<'_>> = ids
        .iter()
        .flat_map(|t| {
            [RowRef {
                trace_id: t,
                ..RowRef::default()
            }; 3]
        })
        .collect();
    let batch = RowBatch::from_rows(&rows);
    for (weights, slots) in [(vec![1, 1], vec![0, 1]), (vec![2, 1], vec![0, 0, 1])] {
        let topology = Topology {
            shards: weights.iter().map(|_| vec![0]).collect(),
            slots: slots.clone(),
            next: weights.iter().map(|_| AtomicUsize::new(0)).collect(),
        };
        let run = RowRun {
            batch: &batch,
            rows: 2..batch.len() - 1,
        };
        let per_shard = route(&[run], &topology);
        let mut seen = Vec::new();
        for (shard, runs) in per_shard.iter().enumerate() {
            for r in runs {
                for row in r.rows.clone() {
                    let want = slots
                        [(shard_hash(rows[row].trace_id.as_bytes()) % slots.len() as u64) as usize];
                    assert_eq!(want, shard, "row {row} ({})", rows[row].trace_id);
                    seen.push(row);
                }
            }
            for w in runs.windows(2) {
                assert!(w[0].rows.end < w[1].rows.start, "adjacent runs are merged");
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (2..batch.len() - 1).collect::<Vec<_>>());
        assert!(per_shard.iter().all(|r| !r.is_empty()), "{weights:?}");
    }
}

/// A fake ClickHouse node: answers the handshake and pings, and every query with a server
/// exception of `code` (as a replica whose table or column is missing answers).
fn fake_node(code: u32) -> u16 {
    use std::io::{Read, Write};
    fn string(out: &mut Vec<u8>, s: &str) {
        out.push(s.len() as u8);
        out.extend_from_slice(s.as_bytes());
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let mut hello = true;
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    let mut out = Vec::new();
                    match buf[0] {
                        // Hello: name, 18.16, a revision before the time zone's.
                        0 if hello => {
                            hello = false;
                            out.push(0);
                            string(&mut out, "ClickHouse");
                            out.extend_from_slice(&[18, 16, 0xd0, 0xa5, 0x03]);
                        }
                        // Ping.
                        4 => out.push(4),
                        // Query: the exception.
                        1 => {
                            out.push(2);
                            out.extend_from_slice(&code.to_le_bytes());
                            string(&mut out, "DB::Exception");
                            string(&mut out, "Table db.spans_local doesn't exist.");
                            string(&mut out, "");
                            out.push(0);
                        }
                        _ => {}
                    }
                    if !out.is_empty() && conn.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// Found in audit: a replica answering that the table or a column is missing (its
/// `CREATE ... ON CLUSTER` has not run yet, or it has yet to apply an `ALTER` its peer has)
/// ended the shard's insert there, without trying the shard's other replica, which has
/// the table: the flush thread then migrated, and after three such answers split the
/// insert down to single rows and dead-lettered them, although the shard could take them.
/// It is that node's state, not the rows': the next replica is tried.
#[test]
fn a_replica_without_the_table_passes_the_insert_to_the_next() {
    use super::super::test_support::{batch, rt, skip, TestDb, NATIVE_URL};
    if skip() {
        return;
    }
    let db = TestDb::new("replica_without_table");
    let port = fake_node(60);
    let rt = rt();
    rt.block_on(Store::new(NATIVE_URL, &db.0).unwrap().migrate())
        .unwrap();
    let store = Store::new(&format!("tcp://127.0.0.1:{port},{NATIVE_URL}"), &db.0)
        .unwrap()
        .in_cluster(Some("c"))
        .unwrap();
    let topology = Topology {
        shards: vec![vec![0, 1]],
        slots: vec![0],
        next: vec![AtomicUsize::new(0)],
    };
    let b = batch("org-1", "trace-1", 3, 1_700_000_000_000);
    let runs = [RowRun {
        batch: &b,
        rows: 0..b.len(),
    }];
    let table = format!("`{}`.`spans`", db.0);
    let got = rt.block_on(store.insert_shard(&topology, &table, 0, &runs, b.len()));
    assert!(got.is_ok(), "{:?}", got.err());
}

/// Found in audit: the nodes of `INGEST_CLICKHOUSE_URL` are matched to `system.clusters`
/// by host, but the URL keeps an IPv6 address in brackets (`tcp://[::1]:9000`, the only
/// way to write one there), while `system.clusters` gives it bare: a cluster of IPv6
/// addresses was refused ("names no replica of shard") however it was written. An IPv6
/// address matches without its brackets.
#[test]
fn nodes_match_the_cluster_as_remote_servers_names_them() {
    let store = Store::new("tcp://CH-S1R1.example:9000,tcp://[::1]:9001", "db").unwrap();
    let rows = vec![
        (
            1,
            1,
            "CH-S1R1.example".to_string(),
            "10.0.0.1".to_string(),
            9000,
        ),
        (2, 1, "::1".to_string(), "::1".to_string(), 9001),
    ];
    let t = Topology::new(&rows, &store.nodes).unwrap();
    assert_eq!(t.shards, vec![vec![0], vec![1]]);
}

#[test]
fn engines_become_replicated() {
    let cases = [
        (
            "ENGINE = ReplacingMergeTree(version) ORDER BY key_hash",
            "ENGINE = ReplicatedReplacingMergeTree('/p', '{replica}', version) ORDER BY key_hash",
        ),
        (
            "ENGINE = MergeTree() ORDER BY x",
            "ENGINE = ReplicatedMergeTree('/p', '{replica}') ORDER BY x",
        ),
    ];
    for (engine, want) in cases {
        assert_eq!(replicated(engine, "/p"), want);
    }
}

/// docs/fleet.md ("Current ClickHouse releases") shows the DDL `migrate` issues in cluster
/// mode, the same on every release; each line there must be what the code makes.
#[test]
fn the_documented_cluster_ddl_is_what_migrate_issues() {
    use super::super::schema::{create_database_sql, create_table_sql, TABLES};
    let doc = include_str!("../../../docs/fleet.md");
    let on = " ON CLUSTER `local`";
    let mut statements = vec![create_database_sql("traceingest", on)];
    for (table, columns, engine) in cluster_tables(&TABLES, "traceingest", "local") {
        let sql = create_table_sql(&format!("`traceingest`.`{table}`{on}"), columns, &engine);
        // The column list, as the doc abbreviates it.
        let (head, rest) = sql.split_once(" (").unwrap();
        let (_, tail) = rest.split_once(") ENGINE").unwrap();
        statements.push(format!("{head} (<columns>) ENGINE{tail}"));
    }
    assert_eq!(statements.len(), 5);
    for sql in statements {
        assert!(
            doc.lines().any(|l| l == sql),
            "docs/fleet.md lacks the line:\n{sql}"
        );
    }
}

#[test]
fn tables_in_a_cluster() {
    let cols: &[(&str, &str)] = &[("trace_id", "String")];
    let tables: [Table; 2] = [
        (
            "spans",
            cols,
            "ENGINE = ReplacingMergeTree(v) ORDER BY trace_id",
        ),
        (
            "orgs",
            cols,
            "ENGINE = ReplacingMergeTree(v) ORDER BY trace_id",
        ),
    ];
    let got: Vec<(&str, String)> = cluster_tables(&tables, "db", "c")
        .into_iter()
        .map(|(n, _, e)| (n, e))
        .collect();
    assert_eq!(
        got,
        vec![
            ("spans_local", "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/spans_local', '{replica}', v) ORDER BY trace_id SETTINGS replicated_deduplication_window = 1040".to_string()),
            ("spans", "ENGINE = Distributed('c', 'db', 'spans_local', sipHash64(trace_id))".to_string()),
            ("orgs", "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/db/orgs', '{replica}', v) ORDER BY trace_id".to_string()),
        ]
    );
}

#[test]
fn each_cluster_table_is_altered_where_its_replicas_are() {
    let spreads: Vec<(&str, Spread)> = cluster_tables(&super::super::schema::TABLES, "db", "c")
        .into_iter()
        .map(|(n, _, e)| (n, spread(&e)))
        .collect();
    assert_eq!(
        spreads,
        vec![
            ("spans_local", Spread::PerShard),
            ("spans", Spread::EachNode),
            ("api_keys", Spread::Everywhere),
            ("orgs", Spread::Everywhere),
        ]
    );
}
