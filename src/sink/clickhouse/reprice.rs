//! Re-pricing stored spans: read what a span's price depends on, and write corrected copies.
//!
//! A corrected copy is the stored row with its cost columns, priced model id, pricing source,
//! priced-at time and request count replaced, and a `version` newer than the row it corrects
//! ([`correction_version`]), so the `ReplacingMergeTree(version)` keeps it (`FINAL` shows it
//! at once, merges drop the old copy). Every other column is copied inside ClickHouse (`INSERT ... SELECT` joined with the
//! corrections, sent to a temporary table of the connection's own), so no value but the
//! price changes.

use chrono::DateTime;
use chrono_tz::Tz;
use clickhouse_rs::types::{Block, Decimal};
use clickhouse_rs::ClientHandle;

use super::admin::utc;
use super::errors::StoreError;
use super::{sql_string, Store};
use crate::pricing::{CostColumns, Money, StoredUsage};

use crate::row::{col, SPANS_COLUMNS};

/// Scale of the money columns: `Decimal(18, 10)`.
const MONEY_SCALE: u8 = 10;

/// Corrections sent to ClickHouse per insert into the scratch table.
const CORRECTIONS_PER_STATEMENT: usize = 2000;

/// The cost columns in table order, as `CostColumns::columns` holds them.
const COST_COLUMNS: [&str; 9] = names(col::prompt_cost);

/// The usage columns in table order, as `StoredUsage::columns` holds them.
const USAGE_COLUMNS: [&str; 9] = names(col::input_tokens);

const _: () = assert!(col::total_cost == col::prompt_cost + 8);
const _: () = assert!(col::request_count == col::input_tokens + 8);

/// The names of `N` consecutive `spans` columns from `first` (a `row::col` index).
const fn names<const N: usize>(first: usize) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = SPANS_COLUMNS[first + i].0;
        i += 1;
    }
    out
}

/// Columns a correction replaces, besides the costs.
const REPLACED: [&str; 5] = [
    "priced_model_id",
    "pricing_source",
    "priced_at",
    "request_count",
    "version",
];

/// What a stored span's price depends on, and the price it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSpan {
    pub key: SpanKey,
    pub span_type: String,
    pub provider: String,
    pub model_id: String,
    pub usage: StoredUsage,
    pub costs: CostColumns,
    pub priced_model_id: String,
    pub pricing_source: String,
    /// The cost the client reported (`reported_cost`), which stands as the total while the
    /// table does not know the model, as at ingest.
    pub reported_cost: Option<Money>,
    /// The stored row's `version`: its copy must be newer.
    pub version: u64,
}

/// The table's deduplication key of a span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanKey {
    pub org_id: String,
    pub trace_id: String,
    pub start_time_ms: u64,
    pub span_id: String,
}

/// A span's new price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correction {
    pub key: SpanKey,
    pub costs: CostColumns,
    pub priced_model_id: String,
    pub pricing_source: String,
    /// Epoch seconds; `None` for a span no longer priced.
    pub priced_at: Option<u32>,
    pub request_count: u64,
    /// The copy's `version` ([`correction_version`]).
    pub version: u64,
    /// The `version` of the row the price was computed from: the copy is made of that row
    /// only, so a span stored again meanwhile (other usage, its own price) keeps its row.
    pub row_version: u64,
}

/// The `version` of a corrected copy of a row stored at `stored`, written by a re-pricing
/// that started at `run_ms` (epoch ms): the run's time, but at least the first millisecond of
/// the second after `stored`. So the copy wins over the row it corrects even when that row
/// was stamped by a clock ahead of this one (or in the same millisecond), and its second is
/// never its row's ingest second, so the quota, which counts rows whose `version` is their
/// `ingested_at` (`Store::count_spans_by_org`), never counts it.
pub fn correction_version(run_ms: u64, stored: u64) -> u64 {
    run_ms.max((stored / 1000).saturating_add(1).saturating_mul(1000))
}

/// Which stored spans: `start_time_ms` in `[from_ms, to_ms)`, optionally of one organisation
/// and of one model (as the client sent it, or as it was priced).
#[derive(Debug, Clone, Copy)]
pub struct SpanFilter<'a> {
    pub from_ms: u64,
    pub to_ms: u64,
    pub org: Option<&'a str>,
    pub model: Option<&'a str>,
}

impl SpanFilter<'_> {
    fn sql(&self) -> String {
        let mut w = format!(
            "start_time_ms >= {} AND start_time_ms < {}",
            self.from_ms, self.to_ms
        );
        if let Some(org) = self.org {
            w.push_str(&format!(" AND org_id = {}", sql_string(org)));
        }
        if let Some(m) = self.model {
            let m = sql_string(m);
            w.push_str(&format!(" AND (model_id = {m} OR priced_model_id = {m})"));
        }
        w
    }
}

impl Store {
    /// The stored `llm` and `embedding` spans `filter` selects, as `FINAL` shows them.
    pub async fn spans_to_reprice(
        &self,
        filter: &SpanFilter<'_>,
    ) -> Result<Vec<StoredSpan>, StoreError> {
        let costs: Vec<String> = COST_COLUMNS
            .iter()
            .map(|c| format!("toString({c}) AS {c}"))
            .collect();
        let block = self
            .fetch(format!(
                "SELECT org_id, trace_id, start_time_ms, span_id, span_type, provider, model_id, \
                 {}, {}, priced_model_id, pricing_source, \
                 toString(reported_cost) AS reported_cost, version \
                 FROM {} FINAL WHERE {} AND span_type IN ('llm', 'embedding')",
                USAGE_COLUMNS.join(", "),
                costs.join(", "),
                self.spans_table,
                filter.sql()
            ))
            .await?;
        let mut spans = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let money_of = |c: &str| -> Result<Option<Money>, StoreError> {
                let text: Option<String> = row.get(c)?;
                text.map(|t| {
                    parse_money(&t).ok_or_else(|| {
                        StoreError::new(format!("{c} {t:?} is not a Decimal(18, 10)"))
                    })
                })
                .transpose()
            };
            let mut money = [None; 9];
            for (m, c) in money.iter_mut().zip(COST_COLUMNS) {
                *m = money_of(c)?;
            }
            let mut counts = [0; 9];
            for (n, c) in counts.iter_mut().zip(USAGE_COLUMNS) {
                *n = row.get(c)?;
            }
            spans.push(StoredSpan {
                key: from_row!(
                    row,
                    SpanKey {
                        org_id,
                        trace_id,
                        start_time_ms,
                        span_id,
                    }
                ),
                span_type: row.get("span_type")?,
                provider: row.get("provider")?,
                model_id: row.get("model_id")?,
                usage: StoredUsage::from_columns(counts),
                costs: CostColumns::from_columns(money),
                priced_model_id: row.get("priced_model_id")?,
                pricing_source: row.get("pricing_source")?,
                reported_cost: money_of("reported_cost")?,
                version: row.get("version")?,
            });
        }
        Ok(spans)
    }

    /// The earliest start time of a stored `llm` or `embedding` span `filter` selects, `None`
    /// when there is none: where a run goes on after a window that held no span, so that a
    /// wide range (a `--to` in microseconds by mistake is 20 million days away) costs one
    /// query per stretch without spans, not one per day. Read without `FINAL`: a row a later
    /// copy replaced may name a window that then holds nothing, which only costs its read.
    pub async fn next_start_to_reprice(
        &self,
        filter: &SpanFilter<'_>,
    ) -> Result<Option<u64>, StoreError> {
        let block = self
            .fetch(format!(
                "SELECT count() AS n, min(start_time_ms) AS first FROM {} \
                 WHERE {} AND span_type IN ('llm', 'embedding')",
                self.spans_table,
                filter.sql()
            ))
            .await?;
        let Some(row) = block.rows().next() else {
            return Ok(None);
        };
        let n: u64 = row.get("n")?;
        Ok(if n == 0 {
            None
        } else {
            Some(row.get("first")?)
        })
    }

    /// Writes a corrected copy, at its own `version`, of every stored row `corrections` names
    /// (all of them selected by `filter`) that `FINAL` still shows: a span stored again since
    /// it was read keeps its new row. `run` names the scratch table. Returns the corrections
    /// written: those whose row `FINAL` still showed just before the write.
    pub async fn write_repriced(
        &self,
        filter: &SpanFilter<'_>,
        corrections: &[Correction],
        run: u64,
    ) -> Result<u64, StoreError> {
        if corrections.is_empty() {
            return Ok(0);
        }
        let scratch = scratch_name(run);
        let mut c = self.long_running().get_handle().await?;
        create_scratch(&mut c, &scratch).await?;
        let result = async {
            for chunk in corrections.chunks(CORRECTIONS_PER_STATEMENT) {
                c.insert(scratch.as_str(), block_of(chunk)).await?;
            }
            let names: Vec<&str> = SPANS_COLUMNS.iter().map(|c| c.0).collect();
            let select: Vec<String> = names
                .iter()
                .map(|&name| match name {
                    _ if COST_COLUMNS.contains(&name) || REPLACED.contains(&name) => {
                        format!("new_{name}")
                    }
                    _ => format!("`{name}`"),
                })
                .collect();
            let joined = format!(
                "(SELECT * FROM {} FINAL WHERE {}) ANY INNER JOIN {scratch} \
                 USING (org_id, trace_id, start_time_ms, span_id, version)",
                self.spans_table,
                filter.sql()
            );
            // What the write will take: a span stored again since it was read is not (the
            // window between this count and the write is a statement's, not the run's).
            let block = c
                .query(format!("SELECT count() AS n FROM {joined}"))
                .fetch_all()
                .await?;
            let matched: u64 = match block.rows().next() {
                Some(row) => row.get("n")?,
                None => 0,
            };
            c.execute(format!(
                "INSERT INTO {} (`{}`) SELECT {} FROM {joined}",
                self.spans_table,
                names.join("`, `"),
                select.join(", "),
            ))
            .await?;
            Ok::<_, StoreError>(matched)
        }
        .await;
        let dropped = c
            .execute(format!("DROP TEMPORARY TABLE IF EXISTS {scratch}"))
            .await;
        let written = result?;
        dropped?;
        Ok(written)
    }
}

/// The scratch table of the run that started at `run` (epoch ms), unique to this process.
fn scratch_name(run: u64) -> String {
    format!("reprice_{}_{}", std::process::id(), run)
}

/// Creates the scratch table the corrections are sent to, empty: a temporary table, the
/// connection's own, so a run killed mid-way (or whose connection is cut) leaves nothing in
/// the database; a table of the database stayed there, with what it held, for good.
async fn create_scratch(c: &mut ClientHandle, scratch: &str) -> Result<(), StoreError> {
    let mut columns = vec![
        "org_id String".to_string(),
        "trace_id String".to_string(),
        "start_time_ms UInt64".to_string(),
        "span_id String".to_string(),
        "version UInt64".to_string(),
    ];
    columns.extend(
        COST_COLUMNS
            .iter()
            .map(|col| format!("new_{col} Nullable(Decimal(18, 10))")),
    );
    columns.extend([
        "new_priced_model_id String".to_string(),
        "new_pricing_source String".to_string(),
        "new_priced_at Nullable(DateTime)".to_string(),
        "new_request_count UInt64".to_string(),
        "new_version UInt64".to_string(),
    ]);
    // This connection's earlier day of the same run.
    c.execute(format!("DROP TEMPORARY TABLE IF EXISTS {scratch}"))
        .await?;
    c.execute(format!(
        "CREATE TEMPORARY TABLE {scratch} ({})",
        columns.join(", ")
    ))
    .await?;
    Ok(())
}

/// Corrections as a block of the scratch table's columns.
fn block_of(chunk: &[Correction]) -> Block {
    let strings = |f: fn(&Correction) -> &str| -> Vec<String> {
        chunk.iter().map(|x| f(x).to_string()).collect()
    };
    let mut block = Block::new()
        .column("org_id", strings(|x| &x.key.org_id))
        .column("trace_id", strings(|x| &x.key.trace_id))
        .column(
            "start_time_ms",
            chunk
                .iter()
                .map(|x| x.key.start_time_ms)
                .collect::<Vec<u64>>(),
        )
        .column("span_id", strings(|x| &x.key.span_id))
        .column(
            "version",
            chunk.iter().map(|x| x.row_version).collect::<Vec<u64>>(),
        );
    for (i, name) in COST_COLUMNS.iter().enumerate() {
        let values: Vec<Option<Decimal>> = chunk
            .iter()
            .map(|x| x.costs.columns()[i].map(|m| Decimal::new(m, MONEY_SCALE)))
            .collect();
        block = block.column(&format!("new_{name}"), values);
    }
    block
        .column("new_priced_model_id", strings(|x| &x.priced_model_id))
        .column("new_pricing_source", strings(|x| &x.pricing_source))
        .column(
            "new_priced_at",
            chunk
                .iter()
                .map(|x| x.priced_at.map(utc))
                .collect::<Vec<Option<DateTime<Tz>>>>(),
        )
        .column(
            "new_request_count",
            chunk.iter().map(|x| x.request_count).collect::<Vec<u64>>(),
        )
        .column(
            "new_version",
            chunk.iter().map(|x| x.version).collect::<Vec<u64>>(),
        )
}

/// A `Decimal(18, 10)` as ClickHouse prints it (`-12.3400000000`) -> units of 1e-10 USD.
fn parse_money(text: &str) -> Option<Money> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty()
        || frac.len() > 10
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut units: i64 = int.parse::<i64>().ok()?.checked_mul(10_000_000_000)?;
    let mut scale = 1_000_000_000i64;
    for b in frac.bytes() {
        units = units.checked_add(i64::from(b - b'0') * scale)?;
        scale /= 10;
    }
    Some(if negative { -units } else { units })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_newer_than_its_row_and_never_in_its_ingest_second() {
        for (run, stored, want) in [
            // The usual case: the run is later than the row.
            (5_000_500, 1_000_250, 5_000_500),
            // The same second, the same millisecond, or a row from a clock ahead of ours.
            (1_000_900, 1_000_250, 1_001_000),
            (1_000_250, 1_000_250, 1_001_000),
            (1_000_000, 9_000_999, 9_001_000),
        ] {
            let v = correction_version(run, stored);
            assert_eq!(v, want, "run {run} stored {stored}");
            assert!(v > stored && v / 1000 != stored / 1000);
        }
        assert_eq!(correction_version(0, u64::MAX), u64::MAX, "saturates");
    }

    /// A span stored again between a re-pricing's read and its write (a client's retry with
    /// other usage, flushed late) is not given the price computed for the row that was read:
    /// a correction is joined to exactly the row (`version`) it was computed from.
    #[test]
    fn repricing_corrects_only_the_row_it_read() {
        use crate::row::test_rows::row;
        use crate::row::RowBatch;
        use crate::sink::clickhouse::test_support::*;
        if skip() {
            return;
        }
        let db = TestDb::new("reprice_race");
        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let rt = rt();
        rt.block_on(store.migrate()).unwrap();
        let start = 1_700_000_000_000;
        let mut first = row("org-r", "trace-r", "span-1", start, true);
        first.usage.input_tokens = 1000;
        rt.block_on(store.insert_spans(&[RowBatch::from_rows(&[first])]))
            .unwrap();
        let filter = SpanFilter {
            from_ms: start,
            to_ms: start + 1,
            org: None,
            model: None,
        };
        let read = rt.block_on(store.spans_to_reprice(&filter)).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].usage.input_tokens, 1000);

        // Meanwhile the span arrives again with other usage and its own price.
        let mut again = row("org-r", "trace-r", "span-1", start, true);
        again.usage.input_tokens = 5000;
        again.costs.total = Some(50_000);
        again.version = first.version + 1;
        rt.block_on(store.insert_spans(&[RowBatch::from_rows(&[again])]))
            .unwrap();

        let run = first.version + 60_000;
        let correction = priced_at_1e4(read[0].key.clone(), run, read[0].version);
        let written = rt
            .block_on(store.write_repriced(&filter, &[correction], run))
            .unwrap();
        assert_eq!(written, 0, "nothing written, and it says so");
        let rows = json_rows(&format!(
            "SELECT input_tokens, toString(total_cost) AS t FROM `{}`.spans FINAL",
            db.0
        ));
        assert_eq!(
            rows,
            [serde_json::json!({"input_tokens": "5000", "t": "0.0000050000"})],
            "the later row keeps its own price, not the one computed for 1000 tokens"
        );
    }

    /// A correction of the row of `key` at `row_version` to a total of 10,000 units
    /// (`acme/x`, from a pricing file), by a run that started at `run` (epoch ms).
    fn priced_at_1e4(key: SpanKey, run: u64, row_version: u64) -> Correction {
        Correction {
            key,
            costs: CostColumns {
                total: Some(10_000),
                ..CostColumns::default()
            },
            priced_model_id: "acme/x".into(),
            pricing_source: "file".into(),
            priced_at: Some(1_700_000_200),
            request_count: 1,
            version: correction_version(run, row_version),
            row_version,
        }
    }

    /// A run killed between making its scratch table and dropping it leaves nothing in the
    /// database (a table there stayed, with its corrections, for good); the next run's
    /// corrections go in as ever.
    #[test]
    fn a_killed_runs_scratch_table_goes_with_its_connection() {
        use crate::row::test_rows::row;
        use crate::row::RowBatch;
        use crate::sink::clickhouse::test_support::*;
        if skip() {
            return;
        }
        let db = TestDb::new("reprice_scratch");
        let rt = rt();
        let start = 1_700_000_000_000;
        let stored = row("org-s", "trace-s", "span-1", start, true);
        let key = SpanKey {
            org_id: "org-s".into(),
            trace_id: "trace-s".into(),
            start_time_ms: start,
            span_id: "span-1".into(),
        };
        let correction = priced_at_1e4(key, 1_800_000_000_000, stored.version);
        {
            let store = Store::new(NATIVE_URL, &db.0).unwrap();
            rt.block_on(store.migrate()).unwrap();
            rt.block_on(store.insert_spans(&[RowBatch::from_rows(&[stored])]))
                .unwrap();
            rt.block_on(async {
                let mut c = store.long_running().get_handle().await.unwrap();
                let scratch = scratch_name(1);
                create_scratch(&mut c, &scratch).await.unwrap();
                c.insert(
                    scratch.as_str(),
                    block_of(std::slice::from_ref(&correction)),
                )
                .await
                .unwrap();
            });
            // Killed here: the process, its pool and its connections go.
        }
        let tables = json_rows(&format!(
            "SELECT name FROM system.tables WHERE database = '{}' ORDER BY name",
            db.0
        ));
        let names: Vec<&str> = tables.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["api_keys", "orgs", "spans"]);

        let store = Store::new(NATIVE_URL, &db.0).unwrap();
        let filter = SpanFilter {
            from_ms: start,
            to_ms: start + 1,
            org: None,
            model: None,
        };
        let written = rt
            .block_on(store.write_repriced(&filter, &[correction], 2))
            .unwrap();
        assert_eq!(written, 1);
        let rows = json_rows(&format!(
            "SELECT toString(total_cost) AS t, pricing_source AS s FROM `{}`.spans FINAL",
            db.0
        ));
        assert_eq!(
            rows,
            [serde_json::json!({"t": "0.0000010000", "s": "file"})]
        );
    }

    #[test]
    fn money_as_clickhouse_prints_it() {
        for (text, units) in [
            ("0.0000000000", Some(0)),
            ("2.2500000000", Some(22_500_000_000)),
            ("0.0000000001", Some(1)),
            ("-1.5", Some(-15_000_000_000)),
            ("99999999.9999999999", Some(999_999_999_999_999_999)),
            ("1.00000000001", None),
            ("x", None),
            ("", None),
        ] {
            assert_eq!(parse_money(text), units, "{text}");
            if let Some(u) = units.filter(|u| *u >= 0) {
                assert_eq!(parse_money(&crate::pricing::format_money(u)), Some(u));
            }
        }
    }
}
