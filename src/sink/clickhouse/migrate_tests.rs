//! Migrations against a real ClickHouse: columns an older release's table lacks, a table of
//! an older shape rebuilt with every row, a missing table, and the column types as the
//! server prints them.

use super::schema::create_table_sql;
use super::test_support::*;
use super::*;
use crate::row::SPANS_COLUMNS;
use serde_json::json;

/// `spans`' engine as releases before the `version` column made it.
const OLDER_SPANS_ENGINE: &str = "ENGINE = ReplacingMergeTree(ingested_at) \
     PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, 1000))) \
     ORDER BY (org_id, trace_id, start_time_ms, span_id)";

#[test]
fn adds_columns_a_table_from_an_older_release_lacks() {
    if skip() {
        return;
    }
    let db = TestDb::new("evolve");
    http_query(&format!("CREATE DATABASE `{}`", db.0));
    let old: Vec<(&str, &str)> = SPANS_COLUMNS
        .iter()
        .copied()
        .take_while(|(n, _)| *n != "customer_id")
        .collect();
    http_query(&create_table_sql(
        &format!("`{}`.spans", db.0),
        &old,
        OLDER_SPANS_ENGINE,
    ));
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let b = batch("org-e", "trace-e", 2, 1_700_000_000_000);
    rt.block_on(store.insert_spans(&[b])).unwrap();
    let names: Vec<String> = json_rows(&format!(
        "SELECT name FROM system.columns WHERE database = '{}' AND table = 'spans'",
        db.0
    ))
    .iter()
    .map(|r| r["name"].as_str().unwrap().to_string())
    .collect();
    assert_eq!(names, SPANS_COLUMNS.iter().map(|c| c.0).collect::<Vec<_>>());

    // A column with another type is refused, not silently kept.
    http_query(&format!(
        "ALTER TABLE `{}`.api_keys MODIFY COLUMN project_id Nullable(String)",
        db.0
    ));
    let err = rt.block_on(store.migrate()).unwrap_err();
    assert!(err.message.contains("project_id"), "{err}");
}

#[test]
fn insert_into_a_missing_table_asks_for_migrate() {
    if skip() {
        return;
    }
    let db = TestDb::new("missing");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    let err = rt
        .block_on(store.insert_spans(&[batch("o", "t", 1, 0)]))
        .unwrap_err();
    assert_eq!(err.retry, Retry::AfterMigrate, "{err}");
    let unreachable = Store::new("tcp://127.0.0.1:1", &db.0).unwrap();
    let err = rt
        .block_on(unreachable.insert_spans(&[batch("o", "t", 1, 0)]))
        .unwrap_err();
    assert_eq!(err.retry, Retry::Later, "{err}");
}

/// A `spans` table an older release made (`ReplacingMergeTree(ingested_at)`, no `version`
/// column) is rebuilt into the current shape with every row, `version` from `ingested_at`;
/// the next `migrate` changes nothing. `pending_migration` finds the same beforehand and
/// changes nothing.
#[test]
fn a_table_of_an_older_shape_is_rebuilt_with_every_row() {
    if skip() {
        return;
    }
    let db = TestDb::new("rebuild");
    http_query(&format!("CREATE DATABASE `{}`", db.0));
    let old: Vec<(&str, &str)> = SPANS_COLUMNS
        .iter()
        .copied()
        .take_while(|(n, _)| *n != "version")
        .collect();
    http_query(&create_table_sql(
        &format!("`{}`.spans", db.0),
        &old,
        OLDER_SPANS_ENGINE,
    ));
    let names: Vec<&str> = old.iter().map(|c| c.0).collect();
    // Two months, and one span twice (a client's retry the table has not merged yet).
    for (trace, start, ingested) in [
        ("t-nov", 1_700_000_000_000u64, 1_700_000_100u32),
        ("t-dec", 1_702_000_000_000, 1_702_000_100),
        ("t-dec", 1_702_000_000_000, 1_702_000_200),
    ] {
        let values: Vec<String> = old
            .iter()
            .map(|&(name, ty)| match name {
                "org_id" => "'o'".to_string(),
                "trace_id" => format!("'{trace}'"),
                "span_id" => "'s'".to_string(),
                "start_time_ms" => start.to_string(),
                "ingested_at" => format!("toDateTime({ingested})"),
                _ if ty.starts_with("Nullable") => "NULL".to_string(),
                _ if ty.starts_with("Array") => "[]".to_string(),
                _ if ty == "String" => "''".to_string(),
                _ => "0".to_string(),
            })
            .collect();
        http_query(&format!(
            "INSERT INTO `{}`.spans (`{}`) VALUES ({})",
            db.0,
            names.join("`, `"),
            values.join(", ")
        ));
    }
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    // Looking first changes nothing and finds what `migrate` then does.
    let pending = rt.block_on(store.pending_migration()).unwrap();
    assert!(pending.pending && pending.to_string().contains("would rebuild"));
    assert_eq!(pending.rebuilt_spans, Some(3), "{pending}");
    let shape = |db: &str| {
        json_rows(&format!(
            "SELECT name, engine_full FROM system.tables WHERE database = '{db}' ORDER BY name"
        ))
    };
    assert_eq!(shape(&db.0).len(), 1, "{:?}", shape(&db.0));
    assert!(shape(&db.0)[0]["engine_full"]
        .as_str()
        .unwrap()
        .starts_with("ReplacingMergeTree(ingested_at)"));
    let done = rt.block_on(store.migrate()).unwrap();
    assert_eq!(done.rebuilt_spans, Some(3), "{done}");
    assert_eq!(done.added_columns, pending.added_columns);
    assert_eq!(done.created_tables, pending.created_tables);
    assert_eq!(
        done.added_columns,
        vec![("spans", "version"), ("spans", "reported_cost")]
    );
    let rows = json_rows(&format!(
        "SELECT trace_id, toUInt32(ingested_at) AS at, version FROM `{}`.spans FINAL \
         ORDER BY trace_id",
        db.0
    ));
    assert_eq!(
        rows,
        vec![
            json!({"trace_id": "t-dec", "at": 1_702_000_200u64, "version": "1702000200000"}),
            json!({"trace_id": "t-nov", "at": 1_700_000_100u64, "version": "1700000100000"}),
        ]
    );
    let engine = json_rows(&format!(
        "SELECT engine_full FROM system.tables WHERE database = '{}' AND name LIKE 'spans%'",
        db.0
    ));
    assert_eq!(engine.len(), 1, "the old table is gone: {engine:?}");
    assert!(
        engine[0]["engine_full"]
            .as_str()
            .unwrap()
            .starts_with("ReplacingMergeTree(version)"),
        "{engine:?}"
    );
    let again = rt.block_on(store.migrate()).unwrap();
    assert!(again.is_noop(), "{again}");
    // Inserts go on as before.
    rt.block_on(store.insert_spans(&[batch("o", "t-new", 2, 1_702_000_000_000)]))
        .unwrap();
    assert_eq!(
        count(&format!("SELECT count() FROM `{}`.spans FINAL", db.0)),
        4
    );
}

/// What ClickHouse 18.16 prints back for the shape's DDL matches it; other engines and keys
/// do not.
#[test]
fn shapes_match_what_the_server_prints() {
    use super::schema::SPANS_SHAPE;
    let printed = (
        "ReplacingMergeTree(version) PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, \
         1000))) ORDER BY (org_id, trace_id, start_time_ms, span_id) SETTINGS \
         index_granularity = 8192",
        "toYYYYMM(toDateTime(intDiv(start_time_ms, 1000)))",
        "org_id, trace_id, start_time_ms, span_id",
    );
    assert!(SPANS_SHAPE.matches(printed.0, printed.1, printed.2));
    assert_eq!(
        SPANS_SHAPE.ddl(),
        super::schema::SPANS_ENGINE
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        "the shape and the DDL say the same"
    );
    let older = printed.0.replace("(version)", "(ingested_at)");
    assert!(!SPANS_SHAPE.matches(&older, printed.1, printed.2));
    assert!(!SPANS_SHAPE.matches(printed.0, "toYYYYMMDD(x)", printed.2));
    assert!(!SPANS_SHAPE.matches(printed.0, printed.1, "org_id, trace_id"));
    let older = older.replace(" PARTITION", "PARTITION");
    assert!(super::schema::OLDER_SPANS_SHAPE.matches(&older, printed.1, printed.2));
    // The key and organisation tables, which have no partition key.
    use super::schema::{API_KEYS_SHAPE, ORGS_SHAPE};
    let keys = "ReplacingMergeTree(version) ORDER BY key_hash SETTINGS index_granularity = 8192";
    assert!(API_KEYS_SHAPE.matches(keys, "", "key_hash"));
    assert!(!ORGS_SHAPE.matches(keys, "", "key_hash"));
    assert!(ORGS_SHAPE.matches(&keys.replace("key_hash", "org_id"), "", "org_id"));
    assert!(!API_KEYS_SHAPE.matches("MergeTree ORDER BY key_hash", "", "key_hash"));
    assert!(!API_KEYS_SHAPE.matches(keys, "tuple()", "key_hash"));
    for (shape, engine) in [
        (API_KEYS_SHAPE, super::schema::API_KEYS_ENGINE),
        (ORGS_SHAPE, super::schema::ORGS_ENGINE),
    ] {
        assert_eq!(
            shape.ddl().replace(['(', ')'], ""),
            engine.replace(['(', ')'], "")
        );
    }
}

/// docs/fleet.md: a run without `INGEST_CLICKHOUSE_CLUSTER` against a cluster's tables stops
/// before it changes anything. Here `spans` (a `Distributed` table) lacks the newest column:
/// adding it there, on this node alone, would be a change made before the refusal.
#[test]
fn a_clusters_tables_are_refused_before_any_change() {
    if skip() {
        return;
    }
    let db = TestDb::new("cluster_refused");
    http_query(&format!("CREATE DATABASE `{}`", db.0));
    let old: Vec<(&str, &str)> = SPANS_COLUMNS[..SPANS_COLUMNS.len() - 1].to_vec();
    http_query(&create_table_sql(
        &format!("`{}`.spans_local", db.0),
        &old,
        super::schema::SPANS_ENGINE,
    ));
    http_query(&create_table_sql(
        &format!("`{}`.spans", db.0),
        &old,
        &format!(
            "ENGINE = Distributed('test_shard_localhost', '{}', 'spans_local', sipHash64(trace_id))",
            db.0
        ),
    ));
    let columns = || {
        count(&format!(
            "SELECT count() FROM system.columns WHERE database = '{}'",
            db.0
        ))
    };
    let tables = || {
        count(&format!(
            "SELECT count() FROM system.tables WHERE database = '{}'",
            db.0
        ))
    };
    let before = (columns(), tables());
    let rt = rt();
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let looked = rt.block_on(store.pending_migration()).unwrap_err();
    let err = rt.block_on(store.migrate()).unwrap_err();
    for e in [looked, err] {
        assert!(e.message.contains("cluster's table"), "{e}");
    }
    assert_eq!(
        (columns(), tables()),
        before,
        "migrate changed the cluster's tables before refusing"
    );

    // The other way round: cluster mode refuses a single server's `spans`, before it makes
    // the cluster's tables next to it.
    let single = TestDb::new("single_refused");
    let store = Store::new(NATIVE_URL, &single.0).unwrap();
    rt.block_on(store.migrate()).unwrap();
    let in_cluster = Store::new(NATIVE_URL, &single.0)
        .unwrap()
        .in_cluster(Some("test_shard_localhost"))
        .unwrap();
    let err = rt.block_on(in_cluster.migrate()).unwrap_err();
    assert!(err.message.contains("single server's table"), "{err}");
    assert_eq!(
        count(&format!(
            "SELECT count() FROM system.tables WHERE database = '{}'",
            single.0
        )),
        3,
        "nothing was created next to the single server's tables"
    );
}
