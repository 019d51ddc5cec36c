//! `traceingest price`: prices one model call from the command line, or lists the price table,
//! exactly as the server would (built-in table plus the optional pricing file), with the
//! prices in force at a given time.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::clock;
use crate::ingest::wire::Usage;
use crate::pricing::{
    format_instant, format_money, parse_cli_instant, Dimension, ModelPrice, Price, PriceSet,
    PriceTable, Pricer, Source,
};

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
    /// The call's startTime: an RFC 3339 time (`2026-07-30T12:00:00Z`), a date (00:00 UTC) or
    /// epoch milliseconds; the prices in force then apply. Default: now.
    #[arg(long, value_parser = at_ms)]
    pub at: Option<u64>,
    /// Print the whole price table instead: every model, every dated price, where the built-in
    /// prices come from.
    #[arg(long, conflicts_with = "model")]
    pub list: bool,
    /// Pricing file over the built-in table (own format, genai-prices v2, OpenRouter or
    /// LiteLLM JSON).
    #[arg(long, env = "INGEST_PRICING_FILE")]
    pub file: Option<PathBuf>,
}

/// `--at`'s value parser.
fn at_ms(text: &str) -> Result<u64, String> {
    parse_cli_instant(text).map_err(str::to_string)
}

/// Runs the command: prints the breakdown (or the table); an unknown model prints
/// `unknown model` and is an error, so the exit status is non-zero.
pub fn run(args: &PriceArgs) -> anyhow::Result<()> {
    let table = match &args.file {
        Some(path) => PriceTable::from_file(path)?,
        None => PriceTable::builtin(),
    };
    for note in table.notes() {
        super::note("WARN", format_args!("pricing file: {note}"));
    }
    if args.list {
        super::out(format_args!("{}", list(&table)));
        return Ok(());
    }
    let model = args
        .model
        .as_deref()
        .context("--model is required unless --list is given")?;
    let at = args.at.unwrap_or_else(clock::now_ms);
    match explain(&table, args.provider.as_deref(), model, &usage_of(args), at)? {
        Some(text) => {
            super::out(format_args!("{text}"));
            Ok(())
        }
        None => {
            outln!("unknown model");
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

/// The priced id, source, the prices in force at `at` and the nine-column breakdown; `None`
/// for an unknown model.
fn explain(
    table: &PriceTable,
    provider: Option<&str>,
    model_id: &str,
    usage: &Usage,
    at: u64,
) -> anyhow::Result<Option<String>> {
    let mut pricer = Pricer::new();
    let Some(model) = pricer.lookup(table, provider, model_id) else {
        return Ok(None);
    };
    let b = model
        .breakdown(Some(usage), at)
        .with_context(|| format!("pricing {model_id:?} as {}", model.id))?;
    let mut out = String::new();
    let _ = writeln!(out, "model      {}", model.id);
    let _ = writeln!(out, "source     {}", source_of(table, model));
    let _ = writeln!(out, "at         {}", format_instant(at));
    let s = b.selected;
    let since = match s.period.from_ms {
        0 => "the first prices".to_string(),
        from => format!("since {}", format_instant(from)),
    };
    let window = s.window.map_or(String::new(), |w| {
        format!(", daily {} UTC", window_text(w.from_s, w.to_s))
    });
    let _ = writeln!(out, "prices     {since}{window}");
    let set = s.window.map_or(&s.period.prices, |w| &w.prices);
    let _ = match (s.tier, set.tiers.first()) {
        (Some(t), _) => writeln!(out, "tier       long context (input > {t})"),
        (None, Some(t)) => writeln!(out, "tier       base (long context above {})", t.threshold),
        (None, None) => writeln!(out, "tier       base"),
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
            s.rates.get(d).map_or("-".to_string(), |p| p.to_string()),
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

/// `HH:MM-HH:MM`.
fn window_text(from_s: u32, to_s: u32) -> String {
    use crate::pricing::format_time_of_day;
    format!(
        "{}-{}",
        format_time_of_day(from_s),
        format_time_of_day(to_s)
    )
}

/// Where a model's prices come from, for people.
fn source_of(table: &PriceTable, model: &ModelPrice) -> String {
    match (model.source, table.file(), model.provenance) {
        (Source::File, Some(f), _) => format!("file ({f})"),
        (Source::File, None, _) => "file".to_string(),
        (Source::Builtin, _, Some(p)) => {
            format!("builtin: {} (checked {}; {})", p.url, p.checked, p.basis)
        }
        (Source::Builtin, _, None) => "builtin".to_string(),
    }
}

/// A price as listed: tokens per 1M, others per unit.
fn shown(d: Dimension, p: Price) -> String {
    if d.is_tokens() {
        p.per_million_string()
    } else {
        p.to_string()
    }
}

/// The tiers of a price set as `> 200000: prompt 2.5, completion 15`.
fn tiers_text(set: &PriceSet) -> String {
    if set.tiers.is_empty() {
        return "-".to_string();
    }
    set.tiers
        .iter()
        .map(|t| {
            let changed: Vec<String> = Dimension::ALL
                .iter()
                .filter(|&&d| t.rates.get(d) != set.base.get(d))
                .map(|&d| {
                    let p = t.rates.get(d).map_or("-".to_string(), |p| shown(d, p));
                    format!("{} {p}", d.name())
                })
                .collect();
            format!("> {}: {}", t.threshold, changed.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The whole table: per model one row per dated period (and per daily window), each price
/// (tokens per 1M, others per unit) and the tiers; then where each built-in model's prices
/// come from and when they were checked.
fn list(table: &PriceTable) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pricing file: {}",
        table.file().unwrap_or("none (built-in prices only)")
    );
    let _ = writeln!(
        out,
        "token prices in USD per 1M tokens; request, image and web_search in USD per unit; \
         \"from\" is when a price took effect (UTC)\n"
    );
    let mut header = vec!["id".to_string(), "source".to_string(), "from".to_string()];
    header.extend(Dimension::ALL.iter().map(|d| d.name().to_string()));
    header.push("long context".to_string());
    let mut rows = vec![header];
    let mut row = |m: &ModelPrice, from: String, set: &PriceSet| {
        let mut r = vec![m.id.clone(), m.source.as_str().to_string(), from];
        r.extend(Dimension::ALL.iter().map(|&d| match set.base.get(d) {
            None => "-".to_string(),
            // An image billed out of the output tokens: its price and its tokens.
            Some(p) if d == Dimension::Image && set.base.image_tokens() > 0 => {
                format!("{}={}tok", shown(d, p), set.base.image_tokens())
            }
            Some(p) => shown(d, p),
        }));
        r.push(tiers_text(set));
        rows.push(r);
    };
    for m in table.models() {
        for p in m.periods.iter() {
            let from = match p.from_ms {
                0 => "-".to_string(),
                ms => format_instant(ms),
            };
            row(m, from.clone(), &p.prices);
            for w in p.windows.iter() {
                row(
                    m,
                    format!("{from} {} UTC", window_text(w.from_s, w.to_s)),
                    &w.prices,
                );
            }
        }
    }
    let mut right = vec![false, false, false];
    right.extend([true; 8]);
    right.push(false);
    out += &table_text(&rows, &right);
    let sourced: Vec<[String; 4]> = table
        .models()
        .iter()
        .filter_map(|m| {
            m.provenance.map(|p| {
                [
                    m.id.clone(),
                    p.checked.to_string(),
                    p.url.to_string(),
                    p.basis.to_string(),
                ]
            })
        })
        .collect();
    if !sourced.is_empty() {
        let _ = writeln!(out, "\nwhere the built-in prices come from");
        let mut rows = vec![[
            "id".to_string(),
            "checked".to_string(),
            "source".to_string(),
            "checked against".to_string(),
        ]];
        rows.extend(sourced);
        out += &table_text(&rows, &[false; 4]);
    }
    out
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
    fn flags_parse_times() {
        let at = |v: &str| parse(&["--model", "x", "--at", v]).map(|a| a.at);
        assert_eq!(at("2026-07-30T00:00:00Z"), Ok(Some(1_785_369_600_000)));
        assert_eq!(at("2026-07-30"), Ok(Some(1_785_369_600_000)));
        assert_eq!(at("1785369600000"), Ok(Some(1_785_369_600_000)));
        assert!(at("yesterday").is_err());
        // A date without dashes is not taken for epoch milliseconds in 1970.
        assert!(at("20260730").is_err());
        let why = at_ms("20260730").unwrap_err();
        assert!(why.contains("YYYY-MM-DD"), "{why}");
        assert_eq!(at("100000000000"), Ok(Some(100_000_000_000)));
        assert_eq!(parse(&["--model", "x"]).unwrap().at, None);
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
        let text = explain(
            &t,
            Some("azure"),
            "gpt-4o-2024-08-06",
            &usage,
            1_785_369_600_000,
        )
        .unwrap()
        .unwrap();
        let head = text.lines().take(5).collect::<Vec<_>>().join("\n");
        assert!(
            head.starts_with("model      openai/gpt-4o\nsource     builtin"),
            "{head}"
        );
        let expect = "at         2026-07-30
prices     the first prices
tier       base
dimension           count  USD per unit      cost USD
prompt                800  0.0000025     0.0020000000
completion            100  0.00001       0.0010000000
request                 1  -                        -
image                   0  -                        -
web_search              0  0.025                    -
internal_reasoning      0  -                        -
cache_read            200  0.00000125    0.0002500000
cache_write             0  0.0000025                -
total                                    0.0032500000
";
        assert!(text.ends_with(expect), "{text}");
        assert_eq!(explain(&t, None, "no-such-model", &usage, 0).unwrap(), None);
        let huge = Usage {
            input_tokens: Some(MAX_COUNT),
            ..Usage::default()
        };
        let err = explain(&t, None, "openai/gpt-4o", &huge, 0).unwrap_err();
        assert!(
            format!("{err:#}").contains("does not fit Decimal(18, 10)"),
            "{err:#}"
        );
    }

    #[test]
    fn explains_which_dated_prices_and_tier_apply() {
        let t = PriceTable::builtin();
        let usage = Usage {
            input_tokens: Some(300_000),
            output_tokens: Some(1000),
            ..Usage::default()
        };
        let lines = |at: &str| {
            let at = crate::pricing::parse_instant(at).unwrap();
            let text = explain(&t, Some("openai"), "gpt-5.6-luna", &usage, at)
                .unwrap()
                .unwrap();
            text.lines()
                .filter(|l| {
                    l.starts_with("prices") || l.starts_with("tier") || l.starts_with("total")
                })
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
        };
        // Before the cut: 300000 x 2e-6 = 0.6; 1000 x 9e-6 = 0.009.
        assert_eq!(
            lines("2026-07-29T23:59:59Z"),
            [
                "prices the first prices",
                "tier long context (input > 272000)",
                "total 0.6090000000"
            ]
        );
        // From the cut: 300000 x 0.4e-6 = 0.12; 1000 x 1.8e-6 = 0.0018.
        assert_eq!(
            lines("2026-07-30T00:00:00Z"),
            [
                "prices since 2026-07-30",
                "tier long context (input > 272000)",
                "total 0.1218000000"
            ]
        );
    }

    #[test]
    fn lists_every_dated_price() {
        let t = PriceTable::builtin();
        let text = list(&t);
        assert!(text.starts_with("pricing file: none (built-in prices only)\n"));
        let (prices, sources) = text
            .split_once("\nwhere the built-in prices come from\n")
            .unwrap();
        let cells = |prefix: &str| -> Vec<Vec<String>> {
            prices
                .lines()
                .filter(|l| l.starts_with(prefix))
                .map(|l| l.split_whitespace().map(str::to_string).collect())
                .collect()
        };
        assert_eq!(
            cells("google/gemini-2.5-pro "),
            [[
                "google/gemini-2.5-pro",
                "builtin",
                "-",
                "1.25",
                "10",
                "-",
                "-",
                "0.035",
                "-",
                "0.125",
                "1.25",
                ">",
                "200000:",
                "prompt",
                "2.5,",
                "completion",
                "15,",
                "cache_read",
                "0.25,",
                "cache_write",
                "2.5"
            ]]
        );
        let source = sources
            .lines()
            .find(|l| l.starts_with("google/gemini-2.5-pro "))
            .unwrap();
        // Checked only against the data set: its date, and it says so.
        assert!(
            source.contains("2026-08-21  https://ai.google.dev/gemini-api/docs/pricing"),
            "{source}"
        );
        assert!(
            source.contains("data set (47df840, 2026-08-21) only"),
            "{source}"
        );
        // A figure that departs from the data set says what it follows instead.
        let sonnet = sources
            .lines()
            .find(|l| l.starts_with("anthropic/claude-sonnet-4 "))
            .unwrap();
        assert!(
            sonnet.contains("the tier above 200K input tokens: that copy only"),
            "{sonnet}"
        );
        assert_eq!(
            sources.lines().count(),
            t.models().len() + 1,
            "one line per built-in model and a header"
        );
        let luna = cells("openai/gpt-5.6-luna ");
        assert_eq!(luna.len(), 2, "{luna:?}");
        assert_eq!(luna[0][2..5], ["-", "1", "6"]);
        assert_eq!(luna[1][2..5], ["2026-07-30", "0.2", "1.2"]);
        let rows: usize = t
            .models()
            .iter()
            .map(|m| m.periods.iter().map(|p| 1 + p.windows.len()).sum::<usize>())
            .sum();
        assert_eq!(prices.lines().count(), rows + 4);
        // DeepSeek's old off-peak window is its own row.
        let chat = cells("deepseek/deepseek-chat ");
        assert_eq!(chat[1][2..5], ["-", "16:30-00:30", "UTC"]);
    }
}
