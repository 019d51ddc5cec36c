//! The schema: the `spans`, `api_keys` and `orgs` tables, created when missing and given the
//! columns a table made by an older release lacks (`Store::migrate`; in cluster mode node by
//! node, `cluster_columns.rs`). A `spans` table whose engine or keys an older release chose
//! differently is rebuilt: a new table of the right shape takes its place at once (one
//! `RENAME`, so no insert is lost), then the old rows are copied into it partition by
//! partition, and the old table is dropped. An interrupted rebuild is resumed by the next
//! `migrate`. `Store::pending_migration` finds what `migrate` would do, reading only (what a
//! dry run may do before it reads spans).
//!
//! The `spans` columns come from `row::SPANS_COLUMNS`, the single source of truth shared with
//! the insert block, so the DDL and the inserts cannot disagree. Only types ClickHouse 18.16
//! and current releases share: no DateTime64, Map, LowCardinality, CODEC, TTL.

use std::fmt;
use std::time::Duration;

use clickhouse_rs::errors::codes;
use clickhouse_rs::ClientHandle;

use super::cluster_columns::REPLICATION_WAIT;
use super::errors::StoreError;
use super::Store;
use crate::row::SPANS_COLUMNS;

/// The shape of `spans`. ReplacingMergeTree keyed on (org, trace, start, span) makes a
/// client's retry of the same batch collapse to one row per span; `version` picks the copy
/// kept: the latest ingest, or a re-pricing's corrected copy, which a replay of the original
/// cannot override. The partition expression only uses functions 18.16 has.
pub(super) const SPANS_SHAPE: Shape = Shape {
    engine: "ReplacingMergeTree(version)",
    partition_by: "toYYYYMM(toDateTime(intDiv(start_time_ms, 1000)))",
    order_by: "org_id, trace_id, start_time_ms, span_id",
};

/// The shape of `spans` as releases before the `version` column made it (the deduplication
/// version was `ingested_at`): `migrate` rebuilds it into `SPANS_SHAPE`.
pub(super) const OLDER_SPANS_SHAPE: Shape = Shape {
    engine: "ReplacingMergeTree(ingested_at)",
    ..SPANS_SHAPE
};

/// The shapes of `api_keys` and `orgs`, which no release has changed.
pub(super) const API_KEYS_SHAPE: Shape = Shape {
    engine: "ReplacingMergeTree(version)",
    partition_by: "",
    order_by: "key_hash",
};
pub(super) const ORGS_SHAPE: Shape = Shape {
    order_by: "org_id",
    ..API_KEYS_SHAPE
};

/// Engine of `spans`, as DDL: `SPANS_SHAPE` written out (a test checks they agree).
pub(super) const SPANS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) \
     PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, 1000))) \
     ORDER BY (org_id, trace_id, start_time_ms, span_id)";

/// A MergeTree table's engine with its arguments, partition key and sorting key, written as
/// ClickHouse prints them back in `system.tables` (spacing aside).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub engine: &'static str,
    pub partition_by: &'static str,
    pub order_by: &'static str,
}

impl Shape {
    pub(super) fn ddl(&self) -> String {
        let partition = if self.partition_by.is_empty() {
            String::new()
        } else {
            format!(" PARTITION BY {}", self.partition_by)
        };
        format!(
            "ENGINE = {}{partition} ORDER BY ({})",
            self.engine, self.order_by
        )
    }

    /// Whether a table `system.tables` describes so (its `engine_full`, `partition_key`,
    /// `sorting_key`) has this shape. Spacing and quoting do not count.
    pub(super) fn matches(
        &self,
        engine_full: &str,
        partition_key: &str,
        sorting_key: &str,
    ) -> bool {
        let norm = |s: &str| -> String {
            s.chars()
                .filter(|c| !c.is_whitespace() && *c != '`')
                .collect()
        };
        let next = if self.partition_by.is_empty() {
            "ORDERBY"
        } else {
            "PARTITIONBY"
        };
        norm(engine_full).starts_with(&(norm(self.engine) + next))
            && norm(partition_key) == norm(self.partition_by)
            && norm(sorting_key) == norm(self.order_by)
    }
}

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

pub(super) const API_KEYS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) ORDER BY key_hash";

/// `orgs` columns in table order: each organisation's plan. Changing the plan inserts a new
/// version of the row; readers use `FINAL`. An organisation without a row is on the default plan.
pub const ORGS_COLUMNS: &[(&str, &str)] = &[
    ("org_id", "String"),
    ("plan", "String"),
    ("created_at", "DateTime"),
    ("updated_at", "DateTime"),
    ("version", "UInt64"),
];

pub(super) const ORGS_ENGINE: &str = "ENGINE = ReplacingMergeTree(version) ORDER BY org_id";

/// A table's name, columns (name, type) and engine.
pub(super) type Table<E = &'static str> =
    (&'static str, &'static [(&'static str, &'static str)], E);

/// Every table the service owns (in cluster mode laid out by `cluster::cluster_tables`).
pub(super) const TABLES: [Table; 3] = [
    ("spans", SPANS_COLUMNS, SPANS_ENGINE),
    ("api_keys", API_KEYS_COLUMNS, API_KEYS_ENGINE),
    ("orgs", ORGS_COLUMNS, ORGS_ENGINE),
];

/// What a migration did, or (`pending`) what it would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Migrated {
    pub database: String,
    /// Found read-only by `pending_migration`: nothing below was done, it is what `migrate`
    /// would do.
    pub pending: bool,
    /// The database did not exist.
    pub created_database: bool,
    /// Tables that did not exist.
    pub created_tables: Vec<&'static str>,
    /// `spans` was rebuilt into its current shape, with this many rows copied (pending: the
    /// rows there are to copy).
    pub rebuilt_spans: Option<u64>,
    /// (table, column) added to a table an older release made (in cluster mode, on at least
    /// one node).
    pub added_columns: Vec<(&'static str, &'static str)>,
    /// Cluster mode: nodes not looked at (`host:port`, why). A later `migrate` (or start-up)
    /// that reaches one adds what its tables lack.
    pub unchecked_nodes: Vec<(String, Unchecked)>,
    /// Cluster mode: (`host:port`, table, column) a replica still lacked when `migrate` stopped
    /// waiting for replication to bring it from the replica that was altered.
    pub not_yet_replicated: Vec<(String, &'static str, &'static str)>,
    /// Cluster mode: (`host:port`, table) a node that answered has no such table: the
    /// `CREATE ... ON CLUSTER` that made it elsewhere has not run there (yet).
    pub without_table: Vec<(String, &'static str)>,
}

/// Why a node of the cluster was not checked (and so not altered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchecked {
    /// `system.clusters` lists it, but `INGEST_CLICKHOUSE_URL` does not.
    NotInUrl,
    /// It did not answer (down, restarting, or cut off).
    Unreachable,
}

impl Migrated {
    /// Nothing needed doing (on the nodes that were checked).
    pub fn is_noop(&self) -> bool {
        !self.created_database
            && self.created_tables.is_empty()
            && self.added_columns.is_empty()
            && self.rebuilt_spans.is_none()
    }

    /// Every node was checked and has every column: nothing is left for a later run.
    pub fn is_complete(&self) -> bool {
        self.unchecked_nodes.is_empty()
            && self.not_yet_replicated.is_empty()
            && self.without_table.is_empty()
    }
}

impl fmt::Display for Migrated {
    /// One line per change, or that the schema was up to date.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_noop() && self.is_complete() {
            return write!(
                f,
                "database {}: schema up to date (tables {}), nothing changed",
                self.database,
                TABLES.map(|t| t.0).join(", ")
            );
        }
        let (create, add, rebuild, copy) = if self.pending {
            ("would create", "would add", "would rebuild", "rows to copy")
        } else {
            ("created", "added", "rebuilt", "rows copied")
        };
        if self.created_database {
            writeln!(f, "{create} database {}", self.database)?;
        }
        for t in &self.created_tables {
            writeln!(f, "{create} table {}.{t}", self.database)?;
        }
        for (t, c) in &self.added_columns {
            writeln!(f, "{add} column {}.{t}.{c}", self.database)?;
        }
        if let Some(rows) = self.rebuilt_spans {
            writeln!(
                f,
                "{rebuild} table {}.spans as {} ({rows} {copy})",
                self.database,
                SPANS_SHAPE.ddl()
            )?;
        }
        for (node, why) in &self.unchecked_nodes {
            let (what, then) = match why {
                Unchecked::Unreachable => ("did not answer", "run migrate again once it is up"),
                Unchecked::NotInUrl => (
                    "is not in INGEST_CLICKHOUSE_URL",
                    "add it there and run migrate again",
                ),
            };
            writeln!(
                f,
                "not checked: node {node} {what}; its tables were not altered: {then}"
            )?;
        }
        for (node, t, c) in &self.not_yet_replicated {
            writeln!(
                f,
                "not yet on {node}: column {}.{t}.{c}; the replica has yet to apply the ALTER \
                 (ZooKeeper brings it): run migrate again to check",
                self.database
            )?;
        }
        for (node, t) in &self.without_table {
            writeln!(
                f,
                "not on {node}: table {}.{t}; the CREATE ... ON CLUSTER that made it on the \
                 other nodes has not run there yet (the node runs it when its distributed DDL \
                 queue gets to it, usually within seconds; if a later migrate still finds it \
                 missing, that queue may be stuck: restart the node): run migrate again to \
                 check",
                self.database
            )?;
        }
        Ok(())
    }
}

/// Whether the schema is changed or only inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Apply,
    /// Read only: find what `Apply` would do.
    Inspect,
}

impl Store {
    /// Creates the database and tables if missing, and adds columns a table created by an
    /// older release lacks. Idempotent. Fails if an existing column has an unexpected type.
    pub async fn migrate(&self) -> Result<Migrated, StoreError> {
        self.schema(Mode::Apply, REPLICATION_WAIT).await
    }

    /// `migrate`, waiting up to `replication_wait` (instead of `REPLICATION_WAIT`) for the
    /// replicas of a cluster's replicated tables to apply the columns it adds.
    pub async fn migrate_waiting(
        &self,
        replication_wait: Duration,
    ) -> Result<Migrated, StoreError> {
        self.schema(Mode::Apply, replication_wait).await
    }

    /// What `migrate` would do, found with `SELECT`s only: nothing is created, altered or
    /// rebuilt. Fails where `migrate` would (a column of an unexpected type, an interrupted
    /// rebuild it cannot resume).
    pub async fn pending_migration(&self) -> Result<Migrated, StoreError> {
        self.schema(Mode::Inspect, Duration::ZERO).await
    }

    /// Without a cluster, a step that fails because another migration (a second server
    /// starting) made, renamed or dropped a table or column first is done again from what
    /// the server has then, keeping what was done before in the report.
    async fn schema(&self, mode: Mode, replication_wait: Duration) -> Result<Migrated, StoreError> {
        let mut done = Migrated {
            database: self.database.clone(),
            pending: mode == Mode::Inspect,
            ..Migrated::default()
        };
        let mut raced = 0;
        loop {
            match self.schema_pass(mode, replication_wait, &mut done).await {
                Err(e) if raced < RACE_RETRIES && self.cluster.is_none() && raced_with(&e) => {
                    tracing::info!(database = %self.database, error = %e,
                        "another migration changed the schema meanwhile; looking again");
                    raced += 1;
                }
                Err(e) => return Err(e),
                Ok(()) => return Ok(done),
            }
        }
    }

    async fn schema_pass(
        &self,
        mode: Mode,
        replication_wait: Duration,
        done: &mut Migrated,
    ) -> Result<(), StoreError> {
        let mut c = self.handle().await?;
        let db = &self.database;
        let found = c
            .query(format!(
                "SELECT count() AS n FROM system.databases WHERE name = '{db}'"
            ))
            .fetch_all()
            .await?;
        let new_database = found
            .rows()
            .next()
            .map(|r| r.get::<u64, _>("n"))
            .transpose()?
            == Some(0);
        done.created_database |= new_database;
        let on = &self.on_cluster;
        if mode == Mode::Inspect && new_database {
            done.created_tables = TABLES.map(|t| t.0).to_vec();
            return Ok(());
        }
        let tables: Vec<Table<String>> = match &self.cluster {
            None => TABLES.map(|(t, c, e)| (t, c, e.to_string())).to_vec(),
            Some(cluster) => super::cluster::cluster_tables(&TABLES, db, cluster),
        };
        if !new_database {
            self.refuse_other_modes_tables(&mut c, &tables).await?;
            if self.cluster.is_none() {
                self.refuse_foreign_tables(&mut c).await?;
            }
        }
        // Cluster mode: a connection to every node, opened when the first table that exists
        // is checked for missing columns (a start-up that creates everything needs none).
        let mut fleet = None;
        if mode == Mode::Apply && (new_database || on.is_empty()) {
            c.execute(create_database_sql(db, on)).await?;
        }
        // Every table's columns first, their types checked, before anything changes: a
        // column of another type in `orgs` must not stop the migration after `spans` got its
        // new columns. (In cluster mode each node is checked as its columns are added.)
        // Each table's columns and, on a single server, the ones it lacks.
        let mut found = Vec::with_capacity(tables.len());
        for (table, columns, _) in &tables {
            let existing = self.columns(&mut c, table).await?;
            let missing = match self.cluster {
                None => self.missing_columns(table, columns, &existing)?,
                Some(_) => Vec::new(),
            };
            found.push((existing, missing));
        }
        for ((table, columns, engine), (existing, missing)) in tables.into_iter().zip(found) {
            if existing.is_empty() && mode == Mode::Inspect {
                done.created_tables.push(table);
                continue;
            }
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
            let added = match &self.cluster {
                None => {
                    self.add_missing_columns(&mut c, table, &missing, mode)
                        .await?
                }
                Some(cluster) => {
                    if fleet.is_none() {
                        fleet = Some(self.connect_fleet(cluster, replication_wait, done).await?);
                    }
                    let fleet = fleet.as_mut().expect("connected above");
                    self.add_missing_columns_in_cluster(fleet, table, columns, &engine, mode, done)
                        .await?
                }
            };
            for column in added {
                done.added_columns.push((table, column));
            }
        }
        // A cluster's tables are made in the current shape; rebuilding one is done by hand
        // (docs/fleet.md).
        if self.cluster.is_none() {
            if let Some(rows) = self.rebuild_spans_if_needed(&mut c, mode).await? {
                done.rebuilt_spans = Some(done.rebuilt_spans.unwrap_or(0) + rows);
            }
        }
        Ok(())
    }

    /// A table's (column, type) as `system.columns` has them; empty when it does not exist.
    pub(super) async fn columns(
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

    /// Tables of the other mode stop the migration before any DDL: without a cluster, one a
    /// cluster's `migrate` made (a `Distributed` or `Replicated*` engine), which a single
    /// server's `ALTER` or rebuild would change on one node only; in cluster mode, one whose
    /// engine is not the cluster's (a single server's `spans`), which the cluster's DDL would
    /// alter node by node as if it were replicated, or refuse halfway.
    async fn refuse_other_modes_tables(
        &self,
        c: &mut ClientHandle,
        tables: &[Table<String>],
    ) -> Result<(), StoreError> {
        let db = &self.database;
        let found = c
            .query(format!(
                "SELECT name, engine FROM system.tables WHERE database = '{db}'"
            ))
            .fetch_all()
            .await?;
        let mut engines: Vec<(String, String)> = Vec::with_capacity(found.row_count());
        for row in found.rows() {
            engines.push((row.get("name")?, row.get("engine")?));
        }
        // In the order of `tables`, so that `spans` is named first.
        for (name, _, want) in tables {
            let Some((_, engine)) = engines.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let clusters = engine == "Distributed" || engine.starts_with("Replicated");
            if self.cluster.is_none() && clusters {
                return Err(StoreError::new(format!(
                    "{db}.{name} is a cluster's table ({engine}); set INGEST_CLICKHOUSE_CLUSTER \
                     to the cluster's name (docs/fleet.md): nothing was changed"
                )));
            }
            let fits = if is_distributed(want) {
                engine == "Distributed"
            } else {
                engine.starts_with("Replicated")
            };
            if self.cluster.is_some() && !fits {
                let want = if is_distributed(want) {
                    "Distributed"
                } else {
                    "Replicated*"
                };
                return Err(StoreError::new(format!(
                    "{db}.{name} is a single server's table ({engine}), not the cluster's \
                     ({want}): INGEST_CLICKHOUSE_CLUSTER is set, but this database was made \
                     without it; use another database for the cluster (docs/fleet.md): \
                     nothing was changed"
                )));
            }
        }
        Ok(())
    }

    /// Without a cluster, a table of one of the service's names but of a shape no release made
    /// (engine, partition or sorting key: someone else's table, a view, a `spans` whose
    /// deduplication would not work) stops the migration before any DDL. Without this, its
    /// columns were added to it, and a `spans` was "rebuilt": its rows copied without the
    /// columns that are not the service's and the table dropped; an `api_keys` of another
    /// engine kept every version of a key, so a revoked key read back active.
    async fn refuse_foreign_tables(&self, c: &mut ClientHandle) -> Result<(), StoreError> {
        let db = &self.database;
        let found = c
            .query(format!(
                "SELECT name, engine, engine_full, partition_key, sorting_key FROM system.tables \
                 WHERE database = '{db}' AND name IN ('spans', 'api_keys', 'orgs')"
            ))
            .fetch_all()
            .await?;
        for row in found.rows() {
            let name: String = row.get("name")?;
            let engine: String = row.get("engine")?;
            let engine_full: String = row.get("engine_full")?;
            let partition_key: String = row.get("partition_key")?;
            let sorting_key: String = row.get("sorting_key")?;
            let known: &[Shape] = match name.as_str() {
                "spans" => &[SPANS_SHAPE, OLDER_SPANS_SHAPE],
                "api_keys" => &[API_KEYS_SHAPE],
                _ => &[ORGS_SHAPE],
            };
            if known
                .iter()
                .any(|s| s.matches(&engine_full, &partition_key, &sorting_key))
            {
                continue;
            }
            let shown = if engine_full.is_empty() {
                engine
            } else {
                engine_full
            };
            return Err(StoreError::new(format!(
                "{db}.{name} is not a table this service made: it is {shown}, expected {}; \
                 move it away or use another INGEST_CLICKHOUSE_DATABASE: nothing was changed",
                known[0].ddl()
            )));
        }
        Ok(())
    }

    /// Adds the `missing` columns (`missing_columns`), each after its predecessor; returns
    /// their names (`Inspect`: the names only, nothing added).
    async fn add_missing_columns(
        &self,
        c: &mut ClientHandle,
        table: &str,
        missing: &[Missing],
        mode: Mode,
    ) -> Result<Vec<&'static str>, StoreError> {
        if mode == Mode::Apply {
            for m in missing {
                self.add_column(c, table, m).await?;
            }
        }
        Ok(missing.iter().map(|m| m.name).collect())
    }

    /// The columns of `expected` that `existing` lacks, each with its predecessor. Fails if a
    /// column it has is of another type.
    pub(super) fn missing_columns(
        &self,
        table: &str,
        expected: &'static [(&'static str, &'static str)],
        existing: &[(String, String)],
    ) -> Result<Vec<Missing>, StoreError> {
        let mut missing = Vec::new();
        let mut previous: Option<&'static str> = None;
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
                None => missing.push(Missing {
                    name,
                    ty,
                    after: previous,
                }),
            }
            previous = Some(name);
        }
        Ok(missing)
    }

    /// `ALTER TABLE ... ADD COLUMN` on the server of `c` alone (never `ON CLUSTER`:
    /// `cluster_columns.rs` says why). A column another server added since it was found
    /// missing (two starting at once; 18.16 has no `ADD COLUMN IF NOT EXISTS`) is no error
    /// when its type is the one wanted.
    pub(super) async fn add_column(
        &self,
        c: &mut ClientHandle,
        table: &str,
        m: &Missing,
    ) -> Result<(), StoreError> {
        if let Err(e) = c.execute(self.add_column_sql(table, m)).await {
            let e = StoreError::from(e);
            if e.code != Some(codes::ILLEGAL_COLUMN) {
                return Err(e);
            }
            let now = self.columns(&mut self.handle().await?, table).await?;
            return match now.iter().find(|(n, _)| n == m.name) {
                Some((_, found)) if same_type(found, m.ty) => Ok(()),
                Some((_, found)) => Err(StoreError::new(format!(
                    "column {}.{table}.{} was added meanwhile with type {found}, expected {}; \
                     fix the table by hand (the service never changes a column's type)",
                    self.database, m.name, m.ty
                ))),
                None => Err(e),
            };
        }
        tracing::info!(
            database = %self.database,
            table,
            column = m.name,
            "added missing column"
        );
        Ok(())
    }
}

impl Store {
    /// `ALTER TABLE ... ADD COLUMN` of `m` to `table`.
    pub(super) fn add_column_sql(&self, table: &str, m: &Missing) -> String {
        let after = m.after.map(|p| format!(" AFTER `{p}`")).unwrap_or_default();
        format!(
            "ALTER TABLE `{}`.`{table}` ADD COLUMN `{}` {}{after}",
            self.database, m.name, m.ty
        )
    }
}

/// How many times a migration that met another one's changes looks again before it gives up.
pub(super) const RACE_RETRIES: u32 = 5;

/// A failure another migration at the same time causes: a table it made (`CREATE` without
/// `IF NOT EXISTS` meets it in 18.16 too) or renamed away, a column it added.
pub(super) fn raced_with(e: &StoreError) -> bool {
    matches!(
        e.code,
        Some(codes::TABLE_ALREADY_EXISTS | codes::UNKNOWN_TABLE | codes::ILLEGAL_COLUMN)
    )
}

/// A column a table lacks, and the one it goes after (`None`: first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Missing {
    pub name: &'static str,
    pub ty: &'static str,
    pub after: Option<&'static str>,
}

/// A table's engine DDL is a `Distributed` table's (cluster mode's `spans`).
fn is_distributed(engine: &str) -> bool {
    engine.starts_with("ENGINE = Distributed")
}

/// `on`: `` ON CLUSTER `name` `` or empty.
pub(super) fn create_database_sql(db: &str, on: &str) -> String {
    format!("CREATE DATABASE IF NOT EXISTS `{db}`{on}")
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
