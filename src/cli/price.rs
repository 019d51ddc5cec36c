//! `traceingest price`: prices one model call from the command line, or lists the price table,
//! exactly as the server would (built-in table plus the optional pricing file).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::ingest::wire::Usage;
use crate::pricing::{format_money, Dimension, ModelPrice, PriceTable, Pricer, Source, CHECKED};

/// Largest count the ingest schema accepts (2^53 - 1).
const MAX_COUNT: u64 = (1 << 53) - 1;

/// Counts as the client would report them; an absent flag is an absent count (a request count
/// defaults to 1).
#[derive(Debug, Clone, clap::Args)]
pub struct PriceArgs {
    /// Client-side provider id, e.g. `openai.chat`, `azure`, `anthropic.messages`,
    /// `amazon-bedrock`.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id as the client reports it, e.g. `gpt-4o-2024-08-06`.
    #[arg(long, required_unless_present = "list")]
    pub model: Option<String>,
    /// inputTokens (including cached ones).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub input: Option<u64>,
    /// outputTokens (including reasoning ones).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub output: Option<u64>,
    /// cachedInputTokens.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub cached: Option<u64>,
    /// cacheWriteInputTokens.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub cache_write: Option<u64>,
    /// reasoningTokens.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub reasoning: Option<u64>,
    /// imageCount.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub images: Option<u64>,
    /// webSearchCount.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub searches: Option<u64>,
    /// requestCount (1 when absent).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub requests: Option<u64>,
    /// Print the whole price table instead.
    #[arg(long, conflicts_with = "model")]
    pub list: bool,
    /// Pricing file over the built-in table (own format, OpenRouter or LiteLLM JSON).
    #[arg(long, env = "INGEST_PRICING_FILE")]
    pub file: Option<PathBuf>,
}

/// Runs the command: prints the breakdown (or the table); an unknown model prints
/// `unknown model` and is an error, so the exit status is non-zero.
pub fn run(args: &PriceArgs) -> anyhow::Result<()> {
    let table = match &args.file {
        Some(path) => PriceTable::from_file(path)?,
        None => PriceTable::builtin(),
    };
    if args.list {
        print!("{}", list(&table));
        return Ok(());
    }
    let model = args
        .model
        .as_deref()
        .context("--model is required unless --list is given")?;
    match explain(&table, args.provider.as_deref(), model, &usage_of(args))? {
        Some(text) => {
            print!("{text}");
            Ok(())
        }
        None => {
            println!("unknown model");
            bail!(
                "no price for model {model:?}{}",
                args.provider
                    .as_deref()
                    .map(|p| format!(" from provider {p:?}"))
                    .unwrap_or_default()
            )
        }
    }
}

/// The usage object the flags describe.
fn usage_of(args: &PriceArgs) -> Usage {
    Usage {
        input_tokens: args.input,
        output_tokens: args.output,
        total_tokens: None,
        reasoning_tokens: args.reasoning,
        cached_input_tokens: args.cached,
        cache_write_input_tokens: args.cache_write,
        image_count: args.images,
        web_search_count: args.searches,
        request_count: args.requests,
    }
}

/// The priced id, source, tier and nine-column breakdown; `None` for an unknown model.
fn explain(
    table: &PriceTable,
    provider: Option<&str>,
    model_id: &str,
    usage: &Usage,
) -> anyhow::Result<Option<String>> {
    let mut pricer = Pricer::new();
    let Some(model) = pricer.lookup(table, provider, model_id) else {
        return Ok(None);
    };
    let b = model
        .breakdown(Some(usage))
        .with_context(|| format!("pricing {model_id:?} as {}", model.id))?;
    let mut out = String::new();
    let _ = writeln!(out, "model      {}", model.id);
    let _ = writeln!(out, "source     {}", source_of(table, model));
    let _ = match (&model.long_context, b.long_context) {
        (Some(lc), true) => writeln!(out, "tier       long context (input > {})", lc.threshold),
        (Some(lc), false) => writeln!(out, "tier       base (long context above {})", lc.threshold),
        (None, _) => writeln!(out, "tier       base"),
    };
    let mut rows = vec![[
        "dimension".to_string(),
        "count".to_string(),
        "USD per unit".to_string(),
        "cost USD".to_string(),
    ]];
    let costs = b.costs.dimensions();
    for d in Dimension::ALL {
        let i = d as usize;
        rows.push([
            d.name().to_string(),
            b.counts[i].to_string(),
            b.rates.get(d).map_or("-".to_string(), |p| p.to_string()),
            costs[i].map_or("-".to_string(), format_money),
        ]);
    }
    rows.push([
        "total".to_string(),
        String::new(),
        String::new(),
        b.costs.total.map_or("-".to_string(), format_money),
    ]);
    out += &table_text(&rows, &[false, true, false, true]);
    Ok(Some(out))
}

/// Where a model's prices come from, for people.
fn source_of(table: &PriceTable, model: &ModelPrice) -> String {
    match (model.source, table.file()) {
        (Source::File, Some(f)) => format!("file ({f})"),
        (Source::File, None) => "file".to_string(),
        (Source::Builtin, _) => format!("builtin (checked {CHECKED})"),
    }
}

/// The whole table: id, source, each price (tokens per 1M, others per unit), the tier.
fn list(table: &PriceTable) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "built-in prices checked {CHECKED}{}",
        table
            .file()
            .map(|f| format!("; pricing file {f}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "token prices in USD per 1M tokens; request, image and web_search in USD per unit\n"
    );
    let mut header = vec!["id".to_string(), "source".to_string()];
    header.extend(Dimension::ALL.iter().map(|d| d.name().to_string()));
    header.push("long context".to_string());
    let mut rows = vec![header];
    let shown = |d: Dimension, p: crate::pricing::Price| {
        if d.is_tokens() {
            p.per_million_string()
        } else {
            p.to_string()
        }
    };
    for m in table.models() {
        let mut row = vec![m.id.clone(), m.source.as_str().to_string()];
        row.extend(
            Dimension::ALL
                .iter()
                .map(|&d| m.base.get(d).map_or("-".to_string(), |p| shown(d, p))),
        );
        row.push(match &m.long_context {
            None => "-".to_string(),
            Some(lc) => {
                let changed: Vec<String> = Dimension::ALL
                    .iter()
                    .filter(|&&d| lc.rates.get(d) != m.base.get(d))
                    .filter_map(|&d| {
                        lc.rates
                            .get(d)
                            .map(|p| format!("{} {}", d.name(), shown(d, p)))
                    })
                    .collect();
                format!("> {}: {}", lc.threshold, changed.join(", "))
            }
        });
        rows.push(row);
    }
    let mut right = vec![false, false];
    right.extend([true; 8]);
    right.push(false);
    out + &table_text(&rows, &right)
}

/// Rows as aligned columns (two spaces apart); `right[i]` right-aligns column i.
fn table_text<R: AsRef<[String]>>(rows: &[R], right: &[bool]) -> String {
    let cols = rows.first().map_or(0, |r| r.as_ref().len());
    let mut width = vec![0; cols];
    for r in rows {
        for (i, cell) in r.as_ref().iter().enumerate() {
            width[i] = width[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.as_ref().iter().enumerate() {
            if i > 0 {
                line += "  ";
            }
            let pad = " ".repeat(width[i] - cell.chars().count());
            if right.get(i).copied().unwrap_or(false) {
                line += &pad;
                line += cell;
            } else {
                line += cell;
                line += &pad;
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: PriceArgs,
    }

    fn parse(argv: &[&str]) -> Result<PriceArgs, String> {
        Cli::try_parse_from(std::iter::once("price").chain(argv.iter().copied()))
            .map(|c| c.args)
            .map_err(|e| e.kind().to_string())
    }

    #[test]
    fn flags_parse() {
        let a = parse(&[
            "--provider",
            "azure",
            "--model",
            "gpt-4o",
            "--input",
            "10",
            "--cache-write",
            "3",
        ])
        .unwrap();
        assert_eq!(a.provider.as_deref(), Some("azure"));
        assert_eq!(usage_of(&a).input_tokens, Some(10));
        assert_eq!(usage_of(&a).cache_write_input_tokens, Some(3));
        assert_eq!(usage_of(&a).output_tokens, None);
        assert!(parse(&["--list"]).unwrap().list);
        assert!(
            parse(&["--input", "10"]).is_err(),
            "--model or --list is required"
        );
        assert!(parse(&["--model", "x", "--input", "9007199254740992"]).is_err());
        assert!(parse(&["--model", "x", "--list"]).is_err());
    }

    #[test]
    fn explains_a_call() {
        let t = PriceTable::builtin();
        let usage = Usage {
            input_tokens: Some(1000),
            cached_input_tokens: Some(200),
            output_tokens: Some(100),
            ..Usage::default()
        };
        let text = explain(&t, Some("azure"), "gpt-4o-2024-08-06", &usage)
            .unwrap()
            .unwrap();
        let expect = format!(
            "model      openai/gpt-4o
source     builtin (checked {CHECKED})
tier       base
dimension           count  USD per unit      cost USD
prompt                800  0.0000025     0.0020000000
completion            100  0.00001       0.0010000000
request                 1  -                        -
image                   0  -                        -
web_search              0  0.025                    -
internal_reasoning      0  -                        -
cache_read            200  0.00000125    0.0002500000
cache_write             0  -                        -
total                                    0.0032500000
"
        );
        assert_eq!(text, expect);
        assert_eq!(explain(&t, None, "no-such-model", &usage).unwrap(), None);
        let huge = Usage {
            input_tokens: Some(MAX_COUNT),
            ..Usage::default()
        };
        let err = explain(&t, None, "openai/gpt-4o", &huge).unwrap_err();
        assert!(
            format!("{err:#}").contains("does not fit Decimal(18, 10)"),
            "{err:#}"
        );
    }

    #[test]
    fn lists_the_table() {
        let t = PriceTable::builtin();
        let text = list(&t);
        assert!(text.starts_with(&format!("built-in prices checked {CHECKED}\n")));
        let line = text
            .lines()
            .find(|l| l.starts_with("google/gemini-2.5-pro "))
            .unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "google/gemini-2.5-pro",
                "builtin",
                "1.25",
                "10",
                "-",
                "-",
                "0.035",
                "-",
                "0.125",
                "-",
                ">",
                "200000:",
                "prompt",
                "2.5,",
                "completion",
                "15,",
                "cache_read",
                "0.25"
            ]
        );
        assert_eq!(text.lines().count(), t.models().len() + 4);
    }
}
