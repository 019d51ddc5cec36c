//! `spans` rebuilt into its current shape (`SPANS_SHAPE`) when an older release made it with
//! another engine or keys, which ClickHouse cannot alter in place: part of `Store::migrate`
//! (`schema.rs`), without a cluster only.

use clickhouse_rs::ClientHandle;

use super::errors::StoreError;
use super::schema::{create_table_sql, raced_with, Mode, RACE_RETRIES, SPANS_ENGINE, SPANS_SHAPE};
use super::Store;
use crate::row::SPANS_COLUMNS;

/// Where the old `spans` waits while its rows are copied into the rebuilt one.
const OLD_SPANS: &str = "spans_before_rebuild";
/// The rebuilt `spans` until it takes the old one's place.
const NEW_SPANS: &str = "spans_rebuild";

/// The `SELECT` list that copies an older `spans` table's rows into the current column list:
/// columns it has are copied, `version` it lacks (or left 0 by `ADD COLUMN`) comes from
/// `ingested_at`, any other column it lacks gets its type's default.
pub(super) fn copy_select(old_columns: &[String]) -> String {
    let has = |name: &str| old_columns.iter().any(|c| c == name);
    SPANS_COLUMNS
        .iter()
        .map(|&(name, ty)| match name {
            "version" if has("version") => {
                "if(version = 0, toUInt64(ingested_at) * 1000, version)".to_string()
            }
            "version" => "toUInt64(ingested_at) * 1000".to_string(),
            _ if has(name) => format!("`{name}`"),
            _ => default_of(ty).to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A literal of a column type's default value, in SQL 18.16 understands.
fn default_of(ty: &str) -> String {
    match ty {
        "String" => "''".into(),
        "UInt64" => "toUInt64(0)".into(),
        "DateTime" => "toDateTime(0)".into(),
        "Array(UInt64)" => "emptyArrayUInt64()".into(),
        "Array(String)" => "emptyArrayString()".into(),
        _ => format!("CAST(NULL AS {ty})"),
    }
}

impl Store {
    /// Rebuilds `spans` when an older release made it with another shape (engine, partition or
    /// sorting key), or finishes a rebuild an earlier `migrate` began. Returns the rows copied
    /// when it did either; `Inspect` changes nothing and returns the rows there are to copy.
    ///
    /// The new table takes the old one's place in one `RENAME` (inserts from running servers
    /// go to it from then on), so no insert is lost; the old rows are then copied in, one
    /// partition per statement, with the columns the old table lacked filled as spool records
    /// of earlier builds are (`version` from `ingested_at`). Copying a row twice (a rebuild
    /// resumed after a crash) leaves two identical copies that `FINAL` and merges collapse.
    ///
    /// Another migration at the same time (two servers starting) makes a step fail on a table
    /// it renamed, made or dropped first (`TABLE_ALREADY_EXISTS`, `UNKNOWN_TABLE`): the state
    /// is then read again and the rebuild resumed from there, as after a crash.
    pub(super) async fn rebuild_spans_if_needed(
        &self,
        c: &mut ClientHandle,
        mode: Mode,
    ) -> Result<Option<u64>, StoreError> {
        let mut raced = 0;
        loop {
            match self.rebuild_spans_once(c, mode).await {
                Err(e) if raced < RACE_RETRIES && raced_with(&e) => {
                    tracing::info!(database = %self.database, error = %e,
                        "another migration is rebuilding the spans table too; looking again");
                    raced += 1;
                    *c = self.handle().await?;
                }
                done => return done,
            }
        }
    }

    async fn rebuild_spans_once(
        &self,
        c: &mut ClientHandle,
        mode: Mode,
    ) -> Result<Option<u64>, StoreError> {
        let db = &self.database;
        let tables = c
            .query(format!(
                "SELECT name, engine_full, partition_key, sorting_key FROM system.tables \
                 WHERE database = '{db}' AND name IN ('spans', '{OLD_SPANS}')"
            ))
            .fetch_all()
            .await?;
        let mut spans_shape_ok = true;
        let mut old_exists = false;
        for row in tables.rows() {
            let name: String = row.get("name")?;
            if name == OLD_SPANS {
                old_exists = true;
                continue;
            }
            let engine_full: String = row.get("engine_full")?;
            let partition_key: String = row.get("partition_key")?;
            let sorting_key: String = row.get("sorting_key")?;
            // A cluster's `spans` was refused before (`refuse_other_modes_tables`).
            spans_shape_ok = SPANS_SHAPE.matches(&engine_full, &partition_key, &sorting_key);
            if !spans_shape_ok && mode == Mode::Apply {
                tracing::warn!(
                    database = %db,
                    found = %engine_full,
                    want = %SPANS_SHAPE.ddl(),
                    "the spans table has an older shape; rebuilding it"
                );
            }
        }
        if spans_shape_ok && !old_exists {
            return Ok(None);
        }
        let (spans, old) = (format!("`{db}`.`spans`"), format!("`{db}`.`{OLD_SPANS}`"));
        if !spans_shape_ok && old_exists {
            return Err(StoreError::new(format!(
                "{db}.spans has an older shape and {db}.{OLD_SPANS} exists too: an earlier \
                 rebuild was interrupted in a way this build cannot resume; move one of them \
                 away by hand"
            )));
        }
        if mode == Mode::Inspect {
            let from = if spans_shape_ok { &old } else { &spans };
            let rows = count(c, format!("SELECT count() AS n FROM {from}")).await?;
            return Ok(Some(rows));
        }
        if !spans_shape_ok {
            let new = format!("`{db}`.`{NEW_SPANS}`");
            c.execute(format!("DROP TABLE IF EXISTS {new}")).await?;
            c.execute(create_table_sql(&new, SPANS_COLUMNS, SPANS_ENGINE))
                .await?;
            let swap = format!("RENAME TABLE {spans} TO {old}, {new} TO {spans}");
            if let Err(e) = c.execute(swap).await {
                // Another migration swapped its own table in first: this one is nobody's.
                let mut fresh = self.handle().await?;
                fresh.execute(format!("DROP TABLE IF EXISTS {new}")).await?;
                return Err(e.into());
            }
        }
        // Copy the old rows in, one partition at a time, on a connection whose statements may
        // run as long as a partition takes.
        let mut copier = self.long_running().get_handle().await?;
        let old_columns: Vec<String> = self
            .columns(c, OLD_SPANS)
            .await?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        let select = copy_select(&old_columns);
        let partitions = c
            .query(format!(
                "SELECT DISTINCT partition FROM system.parts \
                 WHERE database = '{db}' AND table = '{OLD_SPANS}' AND active"
            ))
            .fetch_all()
            .await?;
        let key: String = c
            .query(format!(
                "SELECT partition_key FROM system.tables \
                 WHERE database = '{db}' AND name = '{OLD_SPANS}'"
            ))
            .fetch_all()
            .await?
            .rows()
            .next()
            .map(|r| r.get::<String, _>("partition_key"))
            .transpose()?
            .unwrap_or_default();
        let names: Vec<&str> = SPANS_COLUMNS.iter().map(|c| c.0).collect();
        let mut copied = 0u64;
        for row in partitions.rows() {
            let partition: String = row.get("partition")?;
            let filter = if key.is_empty() {
                String::new()
            } else {
                format!(" WHERE ({key}) = {partition}")
            };
            let rows = count(c, format!("SELECT count() AS n FROM {old}{filter}")).await?;
            copier
                .execute(format!(
                    "INSERT INTO {spans} (`{}`) SELECT {select} FROM {old}{filter}",
                    names.join("`, `")
                ))
                .await?;
            copied += rows;
            tracing::info!(database = %db, partition, rows, "copied a partition into the rebuilt spans table");
        }
        // `IF EXISTS`: another migration copying at the same time may have finished first.
        c.execute(format!("DROP TABLE IF EXISTS {old}")).await?;
        tracing::info!(database = %db, rows = copied, "spans table rebuilt");
        Ok(Some(copied))
    }
}

/// The `n` of a one-row `SELECT count() AS n ...`.
async fn count(c: &mut ClientHandle, sql: String) -> Result<u64, StoreError> {
    let block = c.query(sql).fetch_all().await?;
    Ok(block
        .rows()
        .next()
        .map(|r| r.get::<u64, _>("n"))
        .transpose()?
        .unwrap_or(0))
}
