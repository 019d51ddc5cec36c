//! `traceingest reprice`: recomputes the cost columns of stored spans with the price table in
//! force now (built-in plus the pricing file) and writes corrected rows, which the table's
//! deduplication keeps; prints, per model, the rows changed and the total cost before and
//! after. `--dry-run` writes nothing: it does not migrate either, and refuses a table that
//! needs a migration (its spans could not be read in the shape this build expects).
//!
//! Spans are read a day of start times at a time, so memory holds one day's priced spans of
//! the selection; each day's corrections are written before the next is read.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::clock;
use crate::config::StoreArgs;
use crate::ingest::rows::CLIENT_SOURCE;
use crate::pricing::{
    format_instant, format_money, parse_cli_instant, reprice, CostColumns, Money, PriceTable,
};
use crate::sink::clickhouse::{correction_version, Correction, SpanFilter, Store, StoredSpan};

/// Start times read per query.
const WINDOW_MS: u64 = 86_400_000;

#[derive(Debug, Clone, clap::Args)]
pub struct RepriceArgs {
    /// First start time to re-price (inclusive): RFC 3339, a date (00:00 UTC) or epoch ms.
    #[arg(long, value_parser = instant)]
    pub from: u64,
    /// End of the start times to re-price (exclusive), in the same forms.
    #[arg(long, value_parser = instant)]
    pub to: u64,
    /// Only this organisation's spans.
    #[arg(long, value_parser = not_empty)]
    pub org: Option<String>,
    /// Only spans of this model: as the client sent it, or as it was priced (`vendor/model`).
    #[arg(long, value_parser = not_empty)]
    pub model: Option<String>,
    /// Print what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Pricing file over the built-in table, as the servers use it.
    #[arg(long, env = "INGEST_PRICING_FILE")]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
}

fn instant(text: &str) -> Result<u64, String> {
    parse_cli_instant(text).map_err(str::to_string)
}

/// A filter's value. An empty one (a shell variable not set) is refused: `--org ''` would
/// select nothing and say so as if all were well, and `--model ''` every span ingest left
/// unpriced (their `priced_model_id` is empty), whatever their model.
fn not_empty(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("empty; leave the flag out to select every one".to_string());
    }
    Ok(text.to_string())
}

/// Rows examined and changed, and their total cost before and after, for one model.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    rows: u64,
    changed: u64,
    before: Money,
    after: Money,
}

pub async fn run(args: &RepriceArgs) -> anyhow::Result<()> {
    if args.from >= args.to {
        bail!(
            "--from ({}) must be before --to ({}): the range is [from, to)",
            format_instant(args.from),
            format_instant(args.to)
        );
    }
    let table = match &args.file {
        Some(path) => PriceTable::from_file(path)?,
        None => PriceTable::builtin(),
    };
    let store = args.store.open()?;
    // The table must have its current shape (the `version` column decides which copy stays).
    // A dry run only looks: it may not create, alter or rebuild anything.
    if args.dry_run {
        let pending = super::pending_in_existing(&store).await?;
        if !pending.is_noop() {
            bail!(
                "the schema of database {} is older than this build's; a dry run changes \
                 nothing, so it stops here. Run `traceingest migrate` (or `reprice` without \
                 --dry-run) first. It would do:\n{pending}",
                store.database()
            );
        }
    } else {
        super::migrate_existing(&store).await?;
    }
    let run = Run {
        table: &table,
        version: clock::now_ms(),
        priced_at: clock::now_s(),
        dry_run: args.dry_run,
    };
    let done = run
        .range(
            &store,
            args.from,
            args.to,
            args.org.as_deref(),
            args.model.as_deref(),
        )
        .await?;
    print_summary(&done.tallies, (!args.dry_run).then_some(done.written));
    Ok(())
}

/// One run's settings: the table it prices with, the time it stamps, whether it writes.
struct Run<'t> {
    table: &'t PriceTable,
    /// Epoch ms: the corrected copies' `version` (or newer: `correction_version`).
    version: u64,
    /// Epoch seconds: the corrected copies' `priced_at`.
    priced_at: u32,
    dry_run: bool,
}

/// What a run did.
#[derive(Debug, Default)]
struct Done {
    /// Per model label (`label`).
    tallies: BTreeMap<String, Tally>,
    /// Corrected rows written.
    written: u64,
    /// Windows of start times read.
    windows: u64,
}

impl Run<'_> {
    /// Re-prices the spans of `[from, to)` of `org` and `model` (`None`: all), a day of start
    /// times at a time; a day without spans is followed by the next start time there is.
    async fn range(
        &self,
        store: &Store,
        from: u64,
        to: u64,
        org: Option<&str>,
        model: Option<&str>,
    ) -> anyhow::Result<Done> {
        let mut done = Done::default();
        let mut next = Some(from);
        while let Some(from) = next.filter(|&f| f < to) {
            let filter = SpanFilter {
                from_ms: from,
                to_ms: to.min(from.saturating_add(WINDOW_MS)),
                org,
                model,
            };
            let spans = store
                .spans_to_reprice(&filter)
                .await
                .with_context(|| format!("reading spans from {}", format_instant(from)))?;
            done.windows += 1;
            let mut corrections = Vec::new();
            for span in &spans {
                let (label, correction) = correct(self.table, span, self.priced_at, self.version)?;
                let t = done.tallies.entry(label).or_default();
                t.rows += 1;
                t.before += span.costs.total.unwrap_or(0);
                match correction {
                    Some(c) => {
                        t.changed += 1;
                        t.after += c.costs.total.unwrap_or(0);
                        corrections.push(c);
                    }
                    None => t.after += span.costs.total.unwrap_or(0),
                }
            }
            if !self.dry_run {
                done.written += store
                    .write_repriced(&filter, &corrections, self.version)
                    .await
                    .with_context(|| format!("writing spans from {}", format_instant(from)))?;
            }
            let rest = SpanFilter {
                from_ms: filter.to_ms,
                to_ms: to,
                ..filter
            };
            next = if spans.is_empty() && rest.from_ms < to {
                store.next_start_to_reprice(&rest).await.with_context(|| {
                    format!("looking for spans from {}", format_instant(rest.from_ms))
                })?
            } else {
                Some(rest.from_ms)
            };
        }
        Ok(done)
    }
}

/// A stored span's price with `table`: the summary's model label, and the correction when its
/// price, priced model or pricing source changes (`None`: the row stays as it is).
/// `run_ms` is when the run started: the copy's `version` is that, or newer than the row's.
fn correct(
    table: &PriceTable,
    span: &StoredSpan,
    priced_at: u32,
    run_ms: u64,
) -> anyhow::Result<(String, Option<Correction>)> {
    let priced = reprice(
        table,
        &span.provider,
        &span.model_id,
        &span.usage,
        span.key.start_time_ms,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "span {}/{} of {}: {e}",
            span.key.trace_id,
            span.key.span_id,
            span.key.org_id
        )
    })?;
    let (costs, model, source, at, requests) = match &priced {
        Some(p) => (
            p.costs,
            p.model_id,
            p.source,
            Some(priced_at),
            // A priced span bills one request when it reported none (stored as 0).
            span.usage.request_count.max(1),
        ),
        // Our table does not know the model: the cost the client reported stands as the
        // total, as at ingest (`ingest::rows`).
        None if span.reported_cost.is_some() => (
            CostColumns {
                total: span.reported_cost,
                ..CostColumns::default()
            },
            "",
            CLIENT_SOURCE,
            Some(priced_at),
            span.usage.request_count,
        ),
        // A client-reported price (of a row stored without `reported_cost`) stays.
        None if span.pricing_source == CLIENT_SOURCE => {
            return Ok((label(span, None), None));
        }
        None => (
            CostColumns::default(),
            "",
            "",
            None,
            span.usage.request_count,
        ),
    };
    let unchanged =
        costs == span.costs && model == span.priced_model_id && source == span.pricing_source;
    let correction = (!unchanged).then(|| Correction {
        key: span.key.clone(),
        costs,
        priced_model_id: model.to_string(),
        pricing_source: source.to_string(),
        priced_at: at,
        request_count: requests,
        version: correction_version(run_ms, span.version),
        row_version: span.version,
    });
    Ok((label(span, priced.as_ref().map(|p| p.model_id)), correction))
}

/// How the summary names a span's model: the id it is priced as now, else what the client
/// sent, marked unpriced.
fn label(span: &StoredSpan, priced_as: Option<&str>) -> String {
    match priced_as {
        Some(id) => id.to_string(),
        None if span.model_id.is_empty() => "(no model)".to_string(),
        None => format!("{} (unpriced)", span.model_id),
    }
}

/// The table of what changed, and what was written (`None`: a dry run).
fn print_summary(tallies: &BTreeMap<String, Tally>, written: Option<u64>) {
    outln!(
        "{:<40} {:>10} {:>10} {:>22} {:>22}",
        "MODEL",
        "SPANS",
        "CHANGED",
        "TOTAL BEFORE (USD)",
        "TOTAL AFTER (USD)"
    );
    let mut all = Tally::default();
    for (model, t) in tallies {
        outln!(
            "{model:<40} {:>10} {:>10} {:>22} {:>22}",
            t.rows,
            t.changed,
            format_money(t.before),
            format_money(t.after)
        );
        all.rows += t.rows;
        all.changed += t.changed;
        all.before += t.before;
        all.after += t.after;
    }
    outln!(
        "{:<40} {:>10} {:>10} {:>22} {:>22}",
        "all",
        all.rows,
        all.changed,
        format_money(all.before),
        format_money(all.after)
    );
    match written {
        None => outln!("dry run: nothing written"),
        Some(n) => {
            outln!("{n} corrected rows written");
            let left = all.changed.saturating_sub(n);
            if left > 0 {
                outln!(
                    "{left} spans stored again since they were read left as they are (their new \
                     rows were priced when they arrived; run reprice again to check them)"
                );
            }
        }
    }
}

#[cfg(test)]
#[path = "reprice_tests.rs"]
mod store_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::StoredUsage;
    use crate::sink::clickhouse::SpanKey;

    fn stored(model: &str, total: Option<Money>, source: &str) -> StoredSpan {
        StoredSpan {
            key: SpanKey {
                org_id: "o".into(),
                trace_id: "t".into(),
                start_time_ms: 1_780_000_000_000,
                span_id: "s".into(),
            },
            span_type: "llm".into(),
            provider: "openai.chat".into(),
            model_id: model.into(),
            usage: StoredUsage {
                input_tokens: 1000,
                output_tokens: 100,
                ..StoredUsage::default()
            },
            costs: CostColumns {
                total,
                ..CostColumns::default()
            },
            priced_model_id: String::new(),
            pricing_source: source.into(),
            reported_cost: None,
            version: 1_780_000_000_000,
        }
    }

    /// The command line as `traceingest reprice` reads it.
    fn parse(args: &[&str]) -> Result<RepriceArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            reprice: RepriceArgs,
        }
        use clap::Parser as _;
        let base = ["reprice", "--from", "2026-07-01", "--to", "2026-08-01"];
        Cli::try_parse_from(base.iter().chain(args)).map(|c| c.reprice)
    }

    #[test]
    fn an_empty_filter_is_refused_not_read_as_a_value() {
        for flag in ["--org", "--model"] {
            let err = parse(&[flag, ""]).expect_err(flag);
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{flag}"
            );
            assert!(err.to_string().contains("empty"), "{err}");
        }
        let args = parse(&["--org", "acme", "--model", "gpt-4o"]).unwrap();
        assert_eq!(
            (args.org.as_deref(), args.model.as_deref()),
            (Some("acme"), Some("gpt-4o"))
        );
    }

    #[test]
    fn what_changes_and_what_stays() {
        let table = PriceTable::builtin();
        // Unpriced before, known now: priced, one request billed.
        let (label, c) = correct(&table, &stored("gpt-4o", None, ""), 7, 70_000).unwrap();
        let c = c.expect("a correction");
        assert_eq!(label, "openai/gpt-4o");
        assert_eq!((c.priced_at, c.request_count), (Some(7), 1));
        // Newer than the stored row, whose clock was ahead of the run's.
        assert_eq!(c.version, 1_780_000_001_000);
        assert!(c.costs.total.unwrap() > 0);
        // The same price again: nothing to write.
        let mut same = stored("gpt-4o", c.costs.total, "builtin");
        same.costs = c.costs;
        same.priced_model_id = c.priced_model_id.clone();
        same.pricing_source = c.pricing_source.clone();
        assert_eq!(correct(&table, &same, 8, 80_000).unwrap().1, None);
        // Unknown, client-priced: kept.
        let (label, c) = correct(&table, &stored("acme-9", Some(5), "client"), 7, 70_000).unwrap();
        assert_eq!((label.as_str(), c), ("acme-9 (unpriced)", None));
        // Unknown, once priced by a file no longer in force: the price goes.
        let mut gone = stored("acme-9", Some(5), "file");
        gone.priced_model_id = "acme/acme-9".into();
        let c = correct(&table, &gone, 7, 70_000)
            .unwrap()
            .1
            .expect("a correction");
        assert_eq!((c.costs, c.priced_at), (CostColumns::default(), None));
        // Unknown now, with a cost the client reported: that cost stands, as at ingest.
        gone.reported_cost = Some(9);
        let c = correct(&table, &gone, 7, 70_000)
            .unwrap()
            .1
            .expect("a correction");
        assert_eq!(
            (
                c.costs.total,
                c.pricing_source.as_str(),
                c.priced_model_id.as_str()
            ),
            (Some(9), "client", "")
        );
        assert_eq!((c.costs.prompt, c.priced_at), (None, Some(7)));
    }
}
