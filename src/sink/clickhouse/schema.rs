//! The schema: the `spans`, `api_keys` and `orgs` tables, created when missing and given the
//! columns a table made by an older release lacks (`Store::migrate`).
//!
//! The `spans` columns come from `row::SPANS_COLUMNS`, the single source of truth shared with
//! the insert block, so the DDL and the inserts cannot disagree. Only types ClickHouse 18.16
//! and current releases share: no DateTime64, Map, LowCardinality, CODEC, TTL.

use std::fmt;

use clickhouse_rs::ClientHandle;

use super::errors::StoreError;
use super::Store;
use crate::row::SPANS_COLUMNS;

/// Engine of `spans`. ReplacingMergeTree keyed on (org, trace, start, span) makes a client's
/// retry of the same batch collapse to one row per span; `ingested_at` picks the newest copy.
/// The partition expression only uses functions 18.16 has.
pub(super) const SPANS_ENGINE: &str = "ENGINE = ReplacingMergeTree(ingested_at) \
     PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, 1000))) \
     ORDER BY (org_id, trace_id, start_time_ms, span_id)";

/// `api_keys` columns in table order. Revoking inserts a new version of the row (higher
/// `version`, `revoked_at` set); readers use `FINAL`. `version` is epoch microseconds, bumped
/// past the previous version, so a revoke in the same second as the create still wins.
pub const API_KEYS_COLUMNS: &[(&str, &str)] = &[
    ("key_hash", "String"),
    ("display_prefix", "String"),
    ("org_id", "String"),
    ("project_id", "String"),
    ("created_at", "DateTime"),
    ("revoked_at", "Nullable(DateTime)"),
    ("updated_at", "DateTime"),
    ("version", "UInt64"),
];

const API_KEYS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) ORDER BY key_hash";

/// `orgs` columns in table order: each organisation's plan. Changing the plan inserts a new
/// version of the row; readers use `FINAL`. An organisation without a row is on the default plan.
pub const ORGS_COLUMNS: &[(&str, &str)] = &[
    ("org_id", "String"),
    ("plan", "String"),
    ("created_at", "DateTime"),
    ("updated_at", "DateTime"),
    ("version", "UInt64"),
];

const ORGS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) ORDER BY org_id";

/// A table's name, columns (name, type) and engine.
pub(super) type Table<E = &'static str> =
    (&'static str, &'static [(&'static str, &'static str)], E);

/// Every table the service owns (in cluster mode laid out by `cluster::cluster_tables`).
pub(super) const TABLES: [Table; 3] = [
    ("spans", SPANS_COLUMNS, SPANS_ENGINE),
    ("api_keys", API_KEYS_COLUMNS, API_KEYS_ENGINE),
    ("orgs", ORGS_COLUMNS, ORGS_ENGINE),
];

/// What a migration did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migrated {
    pub database: String,
    /// The database did not exist.
    pub created_database: bool,
    /// Tables that did not exist.
    pub created_tables: Vec<&'static str>,
    /// (table, column) added to a table an older release made.
    pub added_columns: Vec<(&'static str, &'static str)>,
}

impl Migrated {
    /// Nothing needed doing.
    pub fn is_noop(&self) -> bool {
        !self.created_database && self.created_tables.is_empty() && self.added_columns.is_empty()
    }
}

impl fmt::Display for Migrated {
    /// One line per change, or that the schema was up to date.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_noop() {
            return write!(
                f,
                "database {}: schema up to date (tables {}), nothing changed",
                self.database,
                TABLES.map(|t| t.0).join(", ")
            );
        }
        if self.created_database {
            writeln!(f, "created database {}", self.database)?;
        }
        for t in &self.created_tables {
            writeln!(f, "created table {}.{t}", self.database)?;
        }
        for (t, c) in &self.added_columns {
            writeln!(f, "added column {}.{t}.{c}", self.database)?;
        }
        Ok(())
    }
}

impl Store {
    /// Creates the database and tables if missing, and adds columns a table created by an
    /// older release lacks. Idempotent. Fails if an existing column has an unexpected type.
    pub async fn migrate(&self) -> Result<Migrated, StoreError> {
        let mut c = self.handle().await?;
        let db = &self.database;
        let mut done = Migrated {
            database: db.clone(),
            ..Migrated::default()
        };
        let found = c
            .query(format!(
                "SELECT count() AS n FROM system.databases WHERE name = '{db}'"
            ))
            .fetch_all()
            .await?;
        done.created_database = found
            .rows()
            .next()
            .map(|r| r.get::<u64, _>("n"))
            .transpose()?
            == Some(0);
        let on = &self.on_cluster;
        if done.created_database || on.is_empty() {
            c.execute(format!("CREATE DATABASE IF NOT EXISTS `{db}`{on}"))
                .await?;
        }
        let tables: Vec<Table<String>> = match &self.cluster {
            None => TABLES.map(|(t, c, e)| (t, c, e.to_string())).to_vec(),
            Some(cluster) => super::cluster::cluster_tables(&TABLES, db, cluster),
        };
        for (table, columns, engine) in tables {
            let existing = self.columns(&mut c, table).await?;
            if existing.is_empty() {
                c.execute(create_table_sql(
                    &format!("`{db}`.`{table}`{on}"),
                    columns,
                    &engine,
                ))
                .await?;
                tracing::info!(database = %db, table, "created table");
                done.created_tables.push(table);
                continue;
            }
            for column in self
                .add_missing_columns(&mut c, table, columns, &existing)
                .await?
            {
                done.added_columns.push((table, column));
            }
        }
        Ok(done)
    }

    /// A table's (column, type) as `system.columns` has them; empty when it does not exist.
    async fn columns(
        &self,
        c: &mut ClientHandle,
        table: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let block = c
            .query(format!(
                "SELECT name, type FROM system.columns WHERE database = '{}' AND table = '{table}'",
                self.database
            ))
            .fetch_all()
            .await?;
        let mut existing = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            existing.push((row.get("name")?, row.get("type")?));
        }
        Ok(existing)
    }

    /// Adds the columns of `expected` that `existing` lacks, each after its predecessor;
    /// returns their names.
    async fn add_missing_columns(
        &self,
        c: &mut ClientHandle,
        table: &str,
        expected: &[(&'static str, &str)],
        existing: &[(String, String)],
    ) -> Result<Vec<&'static str>, StoreError> {
        let mut added = Vec::new();
        let mut previous: Option<&str> = None;
        for &(name, ty) in expected {
            match existing.iter().find(|(n, _)| n == name) {
                Some((_, found)) if same_type(found, ty) => {}
                Some((_, found)) => {
                    return Err(StoreError::new(format!(
                        "column {}.{table}.{name} has type {found}, expected {ty}; \
                         fix the table by hand (the service never changes a column's type)",
                        self.database
                    )))
                }
                None => {
                    let after = previous
                        .map(|p| format!(" AFTER `{p}`"))
                        .unwrap_or_default();
                    c.execute(format!(
                        "ALTER TABLE `{}`.`{table}`{} ADD COLUMN `{name}` {ty}{after}",
                        self.database, self.on_cluster
                    ))
                    .await?;
                    tracing::info!(
                        database = %self.database,
                        table,
                        column = name,
                        "added missing column"
                    );
                    added.push(name);
                }
            }
            previous = Some(name);
        }
        Ok(added)
    }
}

pub(super) fn create_table_sql(table: &str, columns: &[(&str, &str)], engine: &str) -> String {
    let mut sql = format!("CREATE TABLE IF NOT EXISTS {table} (");
    for (i, (name, ty)) in columns.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('`');
        sql.push_str(name);
        sql.push_str("` ");
        sql.push_str(ty);
    }
    sql.push_str(") ");
    sql.push_str(engine);
    sql
}

/// Type names as `system.columns` spells them may differ in spacing between releases.
pub(super) fn same_type(found: &str, expected: &str) -> bool {
    found
        .chars()
        .filter(|c| !c.is_whitespace())
        .eq(expected.chars().filter(|c| !c.is_whitespace()))
}
