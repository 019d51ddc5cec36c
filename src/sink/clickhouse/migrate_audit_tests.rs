//! Migrations against a real ClickHouse, from every schema an earlier release made and from
//! tables that are not the service's: each earlier `spans` upgraded with its rows, a foreign
//! or broken table refused before any change, with the table and column named, and two
//! servers migrating one database at once.

use super::schema::create_table_sql;
use super::test_support::*;
use super::*;
use crate::row::SPANS_COLUMNS;
use serde_json::json;

/// `spans`' engine as releases before the `version` column made it.
const OLDER_SPANS_ENGINE: &str = "ENGINE = ReplacingMergeTree(ingested_at) \
     PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, 1000))) \
     ORDER BY (org_id, trace_id, start_time_ms, span_id)";

/// The `spans` columns of the first release: everything up to `chunk_jitter_max`.
fn first_release_columns() -> Vec<(&'static str, &'static str)> {
    SPANS_COLUMNS
        .iter()
        .copied()
        .take_while(|(n, _)| *n != "version")
        .collect()
}

/// Inserts one row of `columns` over HTTP: the given values, every other column its type's
/// empty value.
fn insert_old_row(table: &str, columns: &[(&str, &str)], values: &[(&str, String)]) {
    let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
    let row: Vec<String> = columns
        .iter()
        .map(
            |&(name, ty)| match values.iter().find(|(n, _)| *n == name) {
                Some((_, v)) => v.clone(),
                None if ty.starts_with("Nullable") => "NULL".to_string(),
                None if ty.starts_with("Array") => "[]".to_string(),
                None if ty == "String" => "''".to_string(),
                None => "0".to_string(),
            },
        )
        .collect();
    http_query(&format!(
        "INSERT INTO {table} (`{}`) VALUES ({})",
        names.join("`, `"),
        row.join(", ")
    ));
}

fn column_list(db: &str, table: &str) -> Vec<(String, String)> {
    json_rows(&format!(
        "SELECT name, type FROM system.columns WHERE database = '{db}' AND table = '{table}'"
    ))
    .iter()
    .map(|r| {
        (
            r["name"].as_str().unwrap().to_string(),
            r["type"].as_str().unwrap().to_string(),
        )
    })
    .collect()
}

fn table_names(db: &str) -> Vec<String> {
    json_rows(&format!(
        "SELECT name FROM system.tables WHERE database = '{db}' ORDER BY name"
    ))
    .iter()
    .map(|r| r["name"].as_str().unwrap().to_string())
    .collect()
}

/// Each `spans` an earlier release made (the first: no `orgs`, no `reported_cost`; then
/// `reported_cost` at the end; both with the `ingested_at` engine) becomes the current table:
/// every column of its type, in `SPANS_COLUMNS` order, the old rows with `version` =
/// `ingested_at` in ms and the added columns NULL, inserts working; a second `migrate` does
/// nothing.
#[test]
fn every_earlier_release_is_upgraded_with_its_rows() {
    if skip() {
        return;
    }
    let first = first_release_columns();
    let mut with_reported = first.clone();
    with_reported.push(("reported_cost", "Nullable(Decimal(18, 10))"));
    let rt = rt();
    for (release, spans, with_orgs) in [("r1", &first, false), ("r2", &with_reported, true)] {
        let db = TestDb::new(&format!("h_schema_upgrade_{release}"));
        http_query(&format!("CREATE DATABASE `{}`", db.0));
        http_query(&create_table_sql(
            &format!("`{}`.spans", db.0),
            spans,
            OLDER_SPANS_ENGINE,
        ));
        let keys: &[(&str, &str)] = API_KEYS_COLUMNS;
        http_query(&create_table_sql(
            &format!("`{}`.api_keys", db.0),
            keys,
            "ENGINE = ReplacingMergeTree(version) ORDER BY key_hash",
        ));
        if with_orgs {
            let orgs: &[(&str, &str)] = ORGS_COLUMNS;
            http_query(&create_table_sql(
                &format!("`{}`.orgs", db.0),
                orgs,
                "ENGINE = ReplacingMergeTree(version) ORDER BY org_id",
            ));
        }
        let mut values = vec![
            ("org_id", "'o'".to_string()),
            ("trace_id", "'t-old'".to_string()),
            ("span_id", "'s'".to_string()),
            ("start_time_ms", "1700000000000".to_string()),
            ("ingested_at", "toDateTime(1700000100)".to_string()),
            ("customer_id", "'c'".to_string()),
        ];
        if with_orgs {
            values.push(("reported_cost", "1.5".to_string()));
        }
        insert_old_row(&format!("`{}`.spans", db.0), spans, &values);
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let done = rt.block_on(store.migrate()).unwrap();
        assert_eq!(done.rebuilt_spans, Some(1), "{release}: {done}");
        assert_eq!(
            done.created_tables,
            if with_orgs { vec![] } else { vec!["orgs"] },
            "{release}"
        );
        let want: Vec<(String, String)> = SPANS_COLUMNS
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let got = column_list(&db.0, "spans");
        assert_eq!(got.len(), want.len(), "{release}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                g.0 == w.0 && schema::same_type(&g.1, &w.1),
                "{release}: {g:?} != {w:?}"
            );
        }
        let rows = json_rows(&format!(
            "SELECT trace_id, customer_id, version, toString(reported_cost) AS reported \
             FROM `{}`.spans FINAL",
            db.0
        ));
        let reported = if with_orgs {
            json!("1.5000000000")
        } else {
            json!(null)
        };
        assert_eq!(
            rows,
            vec![json!({"trace_id": "t-old", "customer_id": "c",
                        "version": "1700000100000", "reported": reported})],
            "{release}"
        );
        rt.block_on(store.insert_spans(&[batch("o", "t-new", 2, 1_700_000_000_000)]))
            .unwrap();
        let again = rt.block_on(store.migrate()).unwrap();
        assert!(again.is_noop() && again.is_complete(), "{release}: {again}");
        assert_eq!(
            table_names(&db.0),
            vec!["api_keys", "orgs", "spans"],
            "{release}"
        );
    }
}

/// A `spans` table that is not the service's (another engine, other keys, none of its
/// columns) is refused before any change: neither altered nor dropped.
#[test]
fn a_foreign_spans_table_is_refused_untouched() {
    if skip() {
        return;
    }
    let db = TestDb::new("h_schema_foreign");
    http_query(&format!("CREATE DATABASE `{}`", db.0));
    http_query(&format!(
        "CREATE TABLE `{}`.spans (id UInt64, payload String) ENGINE = MergeTree ORDER BY id",
        db.0
    ));
    http_query(&format!(
        "INSERT INTO `{}`.spans VALUES (1, 'precious')",
        db.0
    ));
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    let looked = rt.block_on(store.pending_migration()).unwrap_err();
    let err = rt.block_on(store.migrate()).unwrap_err();
    for e in [looked, err] {
        assert!(
            e.message.contains(&format!("{}.spans", db.0)) && e.message.contains("MergeTree"),
            "{e}"
        );
    }
    assert_eq!(table_names(&db.0), vec!["spans"], "nothing made or renamed");
    assert_eq!(
        column_list(&db.0, "spans"),
        vec![
            ("id".to_string(), "UInt64".to_string()),
            ("payload".to_string(), "String".to_string())
        ],
        "no column added"
    );
    assert_eq!(
        json_rows(&format!("SELECT payload FROM `{}`.spans", db.0)),
        vec![json!({"payload": "precious"})]
    );
}

/// `api_keys` or `orgs` of another engine (a plain MergeTree keeps every version of a key,
/// so a revoked key would read back active) is refused before any change, naming the table.
#[test]
fn key_and_org_tables_of_another_engine_are_refused() {
    if skip() {
        return;
    }
    let rt = rt();
    for table in ["api_keys", "orgs"] {
        let db = TestDb::new(&format!("h_schema_engine_{table}"));
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        rt.block_on(store.migrate()).unwrap();
        let columns: &[(&str, &str)] = if table == "orgs" {
            ORGS_COLUMNS
        } else {
            API_KEYS_COLUMNS
        };
        http_query(&format!("DROP TABLE `{}`.{table}", db.0));
        http_query(&create_table_sql(
            &format!("`{}`.{table}", db.0),
            columns,
            &format!("ENGINE = MergeTree ORDER BY {}", columns[0].0),
        ));
        let err = rt.block_on(store.migrate()).unwrap_err();
        assert!(
            err.message.contains(&format!("{}.{table}", db.0))
                && err.message.contains("ReplacingMergeTree(version)"),
            "{table}: {err}"
        );
    }
}

/// A view named `spans` is refused before any change, naming it: one lacking a column, which
/// takes no `ALTER` (the bare server error named neither table nor column), and one with
/// every column, which takes no insert (every batch would have failed).
#[test]
fn a_view_named_spans_is_refused() {
    if skip() {
        return;
    }
    let db = TestDb::new("h_schema_view");
    http_query(&format!("CREATE DATABASE `{}`", db.0));
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    http_query(&format!(
        "RENAME TABLE `{0}`.spans TO `{0}`.spans_data",
        db.0
    ));
    let all: Vec<&str> = SPANS_COLUMNS.iter().map(|c| c.0).collect();
    for columns in [&all[..all.len() - 1], &all[..]] {
        http_query(&format!("DROP TABLE IF EXISTS `{}`.spans", db.0));
        http_query(&format!(
            "CREATE VIEW `{0}`.spans AS SELECT `{1}` FROM `{0}`.spans_data",
            db.0,
            columns.join("`, `")
        ));
        let err = rt.block_on(store.migrate()).unwrap_err();
        assert!(
            err.message.contains(&format!("{}.spans", db.0)) && err.message.contains("View"),
            "{err}"
        );
    }
}

/// Two servers starting at once on a fresh database, and on one an earlier release made:
/// both migrations succeed, and the schema is the current one.
#[test]
fn two_servers_migrating_at_once_both_succeed() {
    if skip() {
        return;
    }
    for round in 0..9 {
        let db = TestDb::new(&format!("h_schema_race_{round}"));
        // 0: a fresh database; 1: `spans` lacks its newest column (both `ALTER` it); 2: an
        // older shape (both rebuild it).
        let old_columns: Vec<(&str, &str)> = match round % 3 {
            1 => SPANS_COLUMNS[..SPANS_COLUMNS.len() - 1].to_vec(),
            _ => first_release_columns(),
        };
        if round % 3 != 0 {
            let engine = if round % 3 == 1 {
                schema::SPANS_ENGINE
            } else {
                OLDER_SPANS_ENGINE
            };
            http_query(&format!("CREATE DATABASE `{}`", db.0));
            http_query(&create_table_sql(
                &format!("`{}`.spans", db.0),
                &old_columns,
                engine,
            ));
            insert_old_row(
                &format!("`{}`.spans", db.0),
                &old_columns,
                &[("trace_id", "'t'".to_string())],
            );
        }
        let name = db.0.clone();
        let both: Vec<_> = (0..2)
            .map(|_| {
                let name = name.clone();
                std::thread::spawn(move || {
                    let store = Store::new(NATIVE_URL, &name).unwrap();
                    rt().block_on(store.migrate())
                })
            })
            .collect();
        // Both joined before any check, so that a failure drops the database after both.
        let results: Vec<_> = both.into_iter().map(|h| h.join().unwrap()).collect();
        for r in results {
            assert!(r.is_ok(), "round {round}: {}", r.unwrap_err());
        }
        assert_eq!(table_names(&db.0), vec!["api_keys", "orgs", "spans"]);
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        assert!(rt().block_on(store.migrate()).unwrap().is_noop());
        if round % 3 != 0 {
            assert_eq!(
                count(&format!("SELECT count() FROM `{}`.spans FINAL", db.0)),
                1,
                "round {round}"
            );
        }
    }
}

/// A column of another type in a later table (`api_keys`) stops `migrate` before it changes
/// an earlier one: `spans` of an earlier release keeps its columns as they were, rather than
/// be upgraded by a migration that then fails (the types were checked table by table, as
/// each was migrated).
#[test]
fn a_wrong_type_in_any_table_stops_migrate_before_any_change() {
    if skip() {
        return;
    }
    let db = TestDb::new("h_schema_type_first");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    // `spans` as a release without its last column made it; `api_keys` with a column of
    // another type.
    let (last, _) = *SPANS_COLUMNS.last().unwrap();
    http_query(&format!(
        "ALTER TABLE `{}`.spans DROP COLUMN `{last}`",
        db.0
    ));
    http_query(&format!(
        "ALTER TABLE `{}`.api_keys MODIFY COLUMN project_id UInt32",
        db.0
    ));
    let before = column_list(&db.0, "spans");
    let err = rt.block_on(store.migrate()).unwrap_err();
    assert!(
        err.message.contains(&format!(
            "column {}.api_keys.project_id has type UInt32",
            db.0
        )),
        "{err}"
    );
    assert_eq!(column_list(&db.0, "spans"), before, "spans unchanged");
    assert!(!before.iter().any(|(n, _)| n == last));
}
