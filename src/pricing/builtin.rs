//! The price table shipped in the binary: current models of the major vendors, in USD.
//!
//! Token prices are written per million tokens and request, image and web-search prices per
//! unit, as the vendors publish them; `Price::per_million` converts them exactly at compile time
//! (a malformed literal does not build). Ids are canonical `vendor/model` ids in OpenRouter's
//! spelling; aliases are other exact spellings (OpenRouter's, vendor aliases, older names).
//!
//! What is not modelled: batch and flex discounts, DeepSeek's former off-peak discount, the
//! 1-hour Anthropic cache write (the 5-minute one is listed), Gemini context-cache storage per
//! hour, and audio tokens. No vendor here prices reasoning tokens apart from output tokens, so no
//! model has an `internal_reasoning` price and reasoning is billed as completion.
//!
//! Sources: the vendors' pricing pages as of [`CHECKED`], cross-checked against the MIT-licensed
//! genai-prices data set. Web search: Anthropic $10 per 1k searches; OpenAI $10 per 1k tool
//! calls (GPT-5 and o-series) and $25 per 1k (GPT-4o and GPT-4.1); Google grounding with Search
//! $35 per 1k grounded prompts (Gemini 2.x) and $14 per 1k queries (Gemini 3.x); xAI Live Search
//! $25 per 1k sources. Perplexity's request fee is its high-context fee per 1k requests.

use super::instant::date_ms;
use super::money::Price;
use super::rates::{Dimension, Rates};
use super::schedule::{check_periods, Period, PriceSet, Tier};
use super::table::{ModelPrice, Source};

/// When the figures below were last checked against the vendors' published prices.
pub const CHECKED: &str = "2026-11-22";

/// Rates under construction, with one const method per dimension.
#[derive(Clone, Copy)]
struct R(Rates);

/// No prices yet.
const fn r() -> R {
    R(Rates::NONE)
}

impl R {
    /// Input (prompt) tokens, USD per 1M.
    const fn input(self, mtok: &str) -> R {
        R(self.0.with(Dimension::Prompt, Price::per_million(mtok)))
    }
    /// Output (completion) tokens, USD per 1M.
    const fn output(self, mtok: &str) -> R {
        R(self.0.with(Dimension::Completion, Price::per_million(mtok)))
    }
    /// Cached input tokens read, USD per 1M.
    const fn cache_read(self, mtok: &str) -> R {
        R(self.0.with(Dimension::CacheRead, Price::per_million(mtok)))
    }
    /// Input tokens written to the cache, USD per 1M.
    const fn cache_write(self, mtok: &str) -> R {
        R(self.0.with(Dimension::CacheWrite, Price::per_million(mtok)))
    }
    /// USD per request.
    const fn request(self, usd: &str) -> R {
        R(self.0.with(Dimension::Request, Price::per_unit(usd)))
    }
    /// USD per web search.
    const fn search(self, usd: &str) -> R {
        R(self.0.with(Dimension::WebSearch, Price::per_unit(usd)))
    }
    /// Images generated as output tokens at their own rate (USD per 1M), `tokens` per image:
    /// billed per image into `image_cost` and taken out of the completion count.
    const fn image_output(self, mtok: &str, tokens: u32) -> R {
        R(self.0.with_image_output(Price::per_million(mtok), tokens))
    }
}

/// Prices from one instant on: base rates and an optional long-context tier.
#[derive(Clone, Copy)]
struct Dated {
    /// Epoch ms (UTC) where these prices take effect; 0 for a model's first prices.
    from: u64,
    base: R,
    /// Threshold and the prices that change above it (the rest stay as in `base`).
    tier: Option<(u64, R)>,
}

/// Prices that take effect on a date (00:00 UTC), checked when the binary is built.
const fn from(date: &'static str, base: R) -> Dated {
    Dated {
        from: date_ms(date),
        base,
        tier: None,
    }
}

impl Dated {
    /// These prices with a long-context tier: above `threshold` input tokens, `tier`'s prices
    /// replace the base ones for the whole call.
    const fn above(mut self, threshold: u64, tier: R) -> Dated {
        self.tier = Some((threshold, tier));
        self
    }
}

/// One built-in model.
struct Entry {
    id: &'static str,
    aliases: &'static [&'static str],
    /// The prices from the beginning.
    first: Dated,
    /// Later prices, in time order; each replaces the previous ones whole.
    changes: &'static [Dated],
}

/// A model without a long-context tier.
const fn m(id: &'static str, aliases: &'static [&'static str], base: R) -> Entry {
    Entry {
        id,
        aliases,
        first: Dated {
            from: 0,
            base,
            tier: None,
        },
        changes: &[],
    }
}

/// A model whose prices change for calls with more than `threshold` input tokens.
const fn tiered(
    id: &'static str,
    aliases: &'static [&'static str],
    base: R,
    threshold: u64,
    tier: R,
) -> Entry {
    let mut e = m(id, aliases, base);
    e.first.tier = Some((threshold, tier));
    e
}

impl Entry {
    /// The model's later prices (price cuts, introductory prices that end, new tiers).
    const fn changes(mut self, later: &'static [Dated]) -> Entry {
        self.changes = later;
        self
    }
}

/// Anthropic's usual ladder: cache write 1.25x input, cache read 0.1x input; web search $0.01.
const fn claude(input: &str, cache_write: &str, cache_read: &str, output: &str) -> R {
    r().input(input)
        .cache_write(cache_write)
        .cache_read(cache_read)
        .output(output)
        .search("0.01")
}

/// Input, cached input and output, the shape of most OpenAI, Google and xAI prices.
const fn icr(input: &str, cache_read: &str, output: &str) -> R {
    r().input(input).cache_read(cache_read).output(output)
}

/// Input and output only.
const fn io(input: &str, output: &str) -> R {
    r().input(input).output(output)
}

/// Embedding models: input only.
const fn emb(input: &str) -> R {
    r().input(input)
}

static MODELS: &[Entry] = &[
    // ---- OpenAI ----
    m("openai/gpt-5.5", &[], icr("5", "0.5", "30").search("0.01")),
    m("openai/gpt-5.5-pro", &[], io("30", "180").search("0.01")),
    // Long-context tier above 272K input tokens: 2x input and cache, 1.5x output.
    tiered(
        "openai/gpt-5.6-sol",
        &["openai/gpt-5.6"],
        icr("5", "0.5", "30").cache_write("6.25").search("0.01"),
        272_000,
        icr("10", "1", "45").cache_write("12.5"),
    ),
    // OpenAI cut Terra's prices by 20% on 2026-07-30.
    tiered(
        "openai/gpt-5.6-terra",
        &[],
        icr("2.5", "0.25", "15").cache_write("3.125").search("0.01"),
        272_000,
        icr("5", "0.5", "22.5").cache_write("6.25"),
    )
    .changes(&[from(
        "2026-07-30",
        icr("2", "0.2", "12").cache_write("2.5").search("0.01"),
    )
    .above(272_000, icr("4", "0.4", "18").cache_write("5"))]),
    // OpenAI cut Luna's prices by 80% on 2026-07-30.
    tiered(
        "openai/gpt-5.6-luna",
        &[],
        icr("1", "0.1", "6").cache_write("1.25").search("0.01"),
        272_000,
        icr("2", "0.2", "9").cache_write("2.5"),
    )
    .changes(&[from(
        "2026-07-30",
        icr("0.2", "0.02", "1.2").cache_write("0.25").search("0.01"),
    )
    .above(272_000, icr("0.4", "0.04", "1.8").cache_write("0.5"))]),
    tiered(
        "openai/gpt-5.4",
        &[],
        icr("2.5", "0.25", "15").search("0.01"),
        272_000,
        icr("5", "0.5", "22.5"),
    ),
    tiered(
        "openai/gpt-5.4-pro",
        &[],
        io("30", "180").search("0.01"),
        272_000,
        io("60", "270"),
    ),
    m(
        "openai/gpt-5.4-mini",
        &[],
        icr("0.75", "0.075", "4.5").search("0.01"),
    ),
    m(
        "openai/gpt-5.4-nano",
        &[],
        icr("0.2", "0.02", "1.25").search("0.01"),
    ),
    m(
        "openai/gpt-5.3",
        &[],
        icr("1.75", "0.175", "14").search("0.01"),
    ),
    m(
        "openai/gpt-5.3-codex",
        &[],
        icr("1.75", "0.175", "14").search("0.01"),
    ),
    m(
        "openai/gpt-5.2",
        &[],
        icr("1.75", "0.175", "14").search("0.01"),
    ),
    m("openai/gpt-5.2-pro", &[], io("21", "168").search("0.01")),
    m(
        "openai/gpt-5.1",
        &["openai/gpt-5.1-codex"],
        icr("1.25", "0.125", "10").search("0.01"),
    ),
    m(
        "openai/gpt-5.1-codex-mini",
        &[],
        icr("0.25", "0.025", "2").search("0.01"),
    ),
    m(
        "openai/gpt-5",
        &["openai/gpt-5-codex"],
        icr("1.25", "0.125", "10").search("0.01"),
    ),
    m(
        "openai/gpt-5-mini",
        &[],
        icr("0.25", "0.025", "2").search("0.01"),
    ),
    m(
        "openai/gpt-5-nano",
        &[],
        icr("0.05", "0.005", "0.4").search("0.01"),
    ),
    m("openai/gpt-5-pro", &[], io("15", "120").search("0.01")),
    m("openai/gpt-4.1", &[], icr("2", "0.5", "8").search("0.025")),
    m(
        "openai/gpt-4.1-mini",
        &[],
        icr("0.4", "0.1", "1.6").search("0.025"),
    ),
    m(
        "openai/gpt-4.1-nano",
        &[],
        icr("0.1", "0.025", "0.4").search("0.025"),
    ),
    // Its snapshots after the first, which kept its own launch price (next entry).
    m(
        "openai/gpt-4o",
        &["openai/gpt-4o-2024-08-06", "openai/gpt-4o-2024-11-20"],
        icr("2.5", "1.25", "10").search("0.025"),
    ),
    // The first gpt-4o snapshot kept its launch price.
    m("openai/gpt-4o-2024-05-13", &[], io("5", "15")),
    m(
        "openai/gpt-4o-mini",
        &[],
        icr("0.15", "0.075", "0.6").search("0.025"),
    ),
    m("openai/chatgpt-4o-latest", &[], io("5", "15")),
    m("openai/o3", &[], icr("2", "0.5", "8").search("0.01")),
    m("openai/o3-pro", &[], io("20", "80").search("0.01")),
    m("openai/o3-mini", &[], icr("1.1", "0.55", "4.4")),
    m(
        "openai/o4-mini",
        &[],
        icr("1.1", "0.275", "4.4").search("0.01"),
    ),
    m("openai/o1", &["openai/o1-preview"], icr("15", "7.5", "60")),
    m("openai/o1-pro", &[], io("150", "600")),
    m(
        "openai/gpt-4-turbo",
        &[
            "openai/gpt-4-turbo-preview",
            "openai/gpt-4-0125-preview",
            "openai/gpt-4-1106-preview",
            "openai/gpt-4-vision-preview",
        ],
        io("10", "30"),
    ),
    m("openai/gpt-4", &[], io("30", "60")),
    m("openai/gpt-3.5-turbo", &[], io("0.5", "1.5")),
    m("openai/text-embedding-3-small", &[], emb("0.02")),
    m("openai/text-embedding-3-large", &[], emb("0.13")),
    m("openai/text-embedding-ada-002", &[], emb("0.1")),
    // ---- Anthropic (cache write = 5-minute cache) ----
    m(
        "anthropic/claude-opus-5",
        &[],
        claude("5", "6.25", "0.5", "25"),
    ),
    // Introductory 2/10 ended 2026-09-01.
    m(
        "anthropic/claude-sonnet-5",
        &[],
        claude("3", "3.75", "0.3", "15"),
    ),
    m(
        "anthropic/claude-fable-5",
        &[],
        claude("10", "12.5", "1", "50"),
    ),
    m(
        "anthropic/claude-opus-4.8",
        &[],
        claude("5", "6.25", "0.5", "25"),
    ),
    m(
        "anthropic/claude-opus-4.7",
        &[],
        claude("5", "6.25", "0.5", "25"),
    ),
    // 4.6 models dropped their long-context surcharge on 2026-03-13.
    m(
        "anthropic/claude-opus-4.6",
        &[],
        claude("5", "6.25", "0.5", "25"),
    ),
    m(
        "anthropic/claude-sonnet-4.6",
        &[],
        claude("3", "3.75", "0.3", "15"),
    ),
    m(
        "anthropic/claude-opus-4.5",
        &[],
        claude("5", "6.25", "0.5", "25"),
    ),
    tiered(
        "anthropic/claude-sonnet-4.5",
        &["anthropic/claude-4.5-sonnet"],
        claude("3", "3.75", "0.3", "15"),
        200_000,
        claude("6", "7.5", "0.6", "22.5"),
    ),
    m(
        "anthropic/claude-haiku-4.5",
        &["anthropic/claude-4.5-haiku"],
        claude("1", "1.25", "0.1", "5"),
    ),
    m(
        "anthropic/claude-opus-4.1",
        &[],
        claude("15", "18.75", "1.5", "75"),
    ),
    m(
        "anthropic/claude-opus-4",
        &["anthropic/claude-opus-4.0", "anthropic/claude-4-opus"],
        claude("15", "18.75", "1.5", "75"),
    ),
    tiered(
        "anthropic/claude-sonnet-4",
        &["anthropic/claude-sonnet-4.0", "anthropic/claude-4-sonnet"],
        claude("3", "3.75", "0.3", "15"),
        200_000,
        claude("6", "7.5", "0.6", "22.5"),
    ),
    m(
        "anthropic/claude-3.7-sonnet",
        &["anthropic/claude-sonnet-3.7"],
        claude("3", "3.75", "0.3", "15"),
    ),
    m(
        "anthropic/claude-3.5-sonnet",
        &[],
        claude("3", "3.75", "0.3", "15"),
    ),
    m(
        "anthropic/claude-3.5-haiku",
        &[],
        claude("0.8", "1", "0.08", "4"),
    ),
    m(
        "anthropic/claude-3-opus",
        &[],
        r().input("15")
            .cache_write("18.75")
            .cache_read("1.5")
            .output("75"),
    ),
    m(
        "anthropic/claude-3-haiku",
        &[],
        r().input("0.25")
            .cache_write("0.3")
            .cache_read("0.03")
            .output("1.25"),
    ),
    // ---- Google (Gemini API and Vertex AI list prices) ----
    tiered(
        "google/gemini-3.1-pro-preview",
        &["google/gemini-3.1-pro"],
        icr("2", "0.2", "12").search("0.014"),
        200_000,
        icr("4", "0.4", "18"),
    ),
    tiered(
        "google/gemini-3-pro-preview",
        &["google/gemini-3-pro"],
        icr("2", "0.2", "12").search("0.014"),
        200_000,
        icr("4", "0.4", "18"),
    ),
    // Introductory prices until 2026-12-31; the standard ones from 2027-01-01.
    m(
        "google/gemini-3.6-flash",
        &[],
        icr("0.75", "0.075", "3.75").search("0.014"),
    )
    .changes(&[from(
        "2027-01-01",
        icr("1.5", "0.15", "7.5").search("0.014"),
    )]),
    m(
        "google/gemini-3.5-flash",
        &[],
        icr("1.5", "0.15", "9").search("0.014"),
    ),
    m(
        "google/gemini-3.5-flash-lite",
        &[],
        icr("0.3", "0.03", "2.5").search("0.014"),
    ),
    m(
        "google/gemini-3.1-flash-lite",
        &[],
        icr("0.25", "0.025", "1.5").search("0.014"),
    ),
    m(
        "google/gemini-3-flash-preview",
        &["google/gemini-3-flash"],
        icr("0.5", "0.05", "3").search("0.014"),
    ),
    tiered(
        "google/gemini-2.5-pro",
        &[],
        icr("1.25", "0.125", "10").search("0.035"),
        200_000,
        icr("2.5", "0.25", "15"),
    ),
    m(
        "google/gemini-2.5-flash",
        &[],
        icr("0.3", "0.03", "2.5").search("0.035"),
    ),
    m(
        "google/gemini-2.5-flash-lite",
        &[],
        icr("0.1", "0.01", "0.4").search("0.035"),
    ),
    // Text output at Gemini 2.5 Flash's $2.50; image output $30 per 1M tokens, 1290 tokens per
    // 1024x1024 image ($0.0387 an image). No context caching for this model.
    m(
        "google/gemini-2.5-flash-image",
        &["google/gemini-2.5-flash-image-preview"],
        io("0.3", "2.5").image_output("30", 1290),
    ),
    m(
        "google/gemini-2.0-flash",
        &[],
        icr("0.1", "0.025", "0.4").search("0.035"),
    ),
    m("google/gemini-2.0-flash-lite", &[], io("0.075", "0.3")),
    tiered(
        "google/gemini-1.5-pro",
        &["google/gemini-pro-1.5"],
        io("1.25", "5"),
        128_000,
        io("2.5", "10"),
    ),
    tiered(
        "google/gemini-1.5-flash",
        &["google/gemini-flash-1.5"],
        icr("0.075", "0.01875", "0.3"),
        128_000,
        icr("0.15", "0.0375", "0.6"),
    ),
    m("google/gemini-embedding-001", &[], emb("0.15")),
    // ---- Mistral ----
    m(
        "mistralai/mistral-large-2512",
        &[
            "mistralai/mistral-large-latest",
            "mistralai/mistral-large-3",
        ],
        icr("0.5", "0.05", "1.5"),
    ),
    m(
        "mistralai/mistral-large",
        &[
            "mistralai/mistral-large-2407",
            "mistralai/mistral-large-2411",
        ],
        io("2", "6"),
    ),
    m(
        "mistralai/mistral-medium-3.1",
        &[
            "mistralai/mistral-medium-2508",
            "mistralai/mistral-medium-latest",
        ],
        icr("0.4", "0.04", "2"),
    ),
    m(
        "mistralai/mistral-medium-3",
        &["mistralai/mistral-medium-2505"],
        io("0.4", "2"),
    ),
    m(
        "mistralai/mistral-small-2603",
        &["mistralai/mistral-small-4"],
        icr("0.15", "0.015", "0.6"),
    ),
    m(
        "mistralai/mistral-small",
        &["mistralai/mistral-small-latest"],
        io("0.1", "0.3"),
    ),
    m(
        "mistralai/codestral-2508",
        &["mistralai/codestral-latest"],
        icr("0.3", "0.03", "0.9"),
    ),
    m("mistralai/codestral", &[], io("0.3", "0.9")),
    m("mistralai/devstral-2512", &[], icr("0.4", "0.04", "2")),
    m("mistralai/magistral-medium", &[], io("2", "5")),
    m("mistralai/magistral-small", &[], io("0.5", "1.5")),
    // The Ministral 3 family (2512) replaced the 2410 models; `-latest` names it.
    m(
        "mistralai/ministral-14b-2512",
        &[
            "mistralai/ministral-14b-latest",
            "mistralai/ministral-3-14b-2512",
        ],
        icr("0.2", "0.02", "0.2"),
    ),
    m(
        "mistralai/ministral-8b-2512",
        &[
            "mistralai/ministral-8b-latest",
            "mistralai/ministral-3-8b-2512",
        ],
        io("0.15", "0.15"),
    ),
    m(
        "mistralai/ministral-3b-2512",
        &[
            "mistralai/ministral-3b-latest",
            "mistralai/ministral-3-3b-2512",
        ],
        icr("0.1", "0.01", "0.1"),
    ),
    m(
        "mistralai/ministral-8b",
        &["mistralai/ministral-8b-2410"],
        io("0.1", "0.1"),
    ),
    m(
        "mistralai/ministral-3b",
        &["mistralai/ministral-3b-2410"],
        io("0.04", "0.04"),
    ),
    m(
        "mistralai/mistral-nemo",
        &["mistralai/open-mistral-nemo"],
        io("0.15", "0.15"),
    ),
    m("mistralai/pixtral-large", &[], io("2", "6")),
    m("mistralai/mistral-saba", &[], io("0.2", "0.6")),
    m("mistralai/mistral-embed", &[], emb("0.1")),
    // ---- xAI ----
    m("x-ai/grok-4.5", &[], icr("2", "0.5", "6")),
    m("x-ai/grok-4.3", &[], icr("1.25", "0.2", "2.5")),
    m("x-ai/grok-4.20", &[], icr("1.25", "0.2", "2.5")),
    m("x-ai/grok-4.20-multi-agent", &[], icr("2", "0.2", "6")),
    tiered(
        "x-ai/grok-4",
        &[],
        icr("3", "0.75", "15").search("0.025"),
        128_000,
        io("6", "30"),
    ),
    m(
        "x-ai/grok-4-fast-reasoning",
        &["x-ai/grok-4-fast"],
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-4-fast-non-reasoning",
        &[],
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-4.1-fast-reasoning",
        &["x-ai/grok-4.1-fast"],
        icr("0.2", "0.05", "0.5"),
    ),
    m(
        "x-ai/grok-4.1-fast-non-reasoning",
        &[],
        icr("0.2", "0.05", "0.5"),
    ),
    m("x-ai/grok-code-fast-1", &[], icr("0.2", "0.02", "1.5")),
    m("x-ai/grok-3", &[], icr("3", "0.75", "15").search("0.025")),
    m(
        "x-ai/grok-3-mini",
        &[],
        icr("0.3", "0.075", "0.5").search("0.025"),
    ),
    // ---- DeepSeek (standard hours) ----
    m(
        "deepseek/deepseek-chat",
        &["deepseek/deepseek-v3"],
        icr("0.27", "0.07", "1.1"),
    ),
    m(
        "deepseek/deepseek-reasoner",
        &["deepseek/deepseek-r1"],
        icr("0.55", "0.14", "2.19"),
    ),
    m(
        "deepseek/deepseek-v4-pro",
        &[],
        icr("0.435", "0.003625", "0.87"),
    ),
    m(
        "deepseek/deepseek-v4-flash",
        &[],
        icr("0.14", "0.0028", "0.28"),
    ),
    m("deepseek/deepseek-v3.2", &[], io("0.2288", "0.3432")),
    m(
        "deepseek/deepseek-v3.1-terminus",
        &[],
        icr("0.27", "0.13", "0.95"),
    ),
    // ---- Meta Llama (Meta sells no API: Amazon Bedrock's on-demand list prices) ----
    m(
        "meta-llama/llama-4-maverick",
        &[
            "meta-llama/llama-4-maverick-17b-instruct",
            "meta-llama/llama-4-maverick-17b-128e-instruct",
        ],
        io("0.24", "0.97"),
    ),
    m(
        "meta-llama/llama-4-scout",
        &[
            "meta-llama/llama-4-scout-17b-instruct",
            "meta-llama/llama-4-scout-17b-16e-instruct",
        ],
        io("0.17", "0.66"),
    ),
    m("meta-llama/llama-3.3-70b-instruct", &[], io("0.72", "0.72")),
    m(
        "meta-llama/llama-3.2-90b-instruct",
        &["meta-llama/llama-3.2-90b-vision-instruct"],
        io("0.72", "0.72"),
    ),
    m(
        "meta-llama/llama-3.2-11b-instruct",
        &["meta-llama/llama-3.2-11b-vision-instruct"],
        io("0.16", "0.16"),
    ),
    m("meta-llama/llama-3.2-3b-instruct", &[], io("0.15", "0.15")),
    m("meta-llama/llama-3.2-1b-instruct", &[], io("0.1", "0.1")),
    m("meta-llama/llama-3.1-70b-instruct", &[], io("0.72", "0.72")),
    m("meta-llama/llama-3.1-8b-instruct", &[], io("0.22", "0.22")),
    m("meta-llama/llama-3-70b-instruct", &[], io("2.65", "3.5")),
    m("meta-llama/llama-3-8b-instruct", &[], io("0.3", "0.6")),
    // ---- Amazon ----
    m(
        "amazon/nova-premier",
        &["amazon/nova-premier-v1"],
        icr("2.5", "0.625", "12.5"),
    ),
    m(
        "amazon/nova-pro",
        &["amazon/nova-pro-v1"],
        icr("0.8", "0.2", "3.2"),
    ),
    m(
        "amazon/nova-lite",
        &["amazon/nova-lite-v1"],
        icr("0.06", "0.015", "0.24"),
    ),
    m(
        "amazon/nova-micro",
        &["amazon/nova-micro-v1"],
        icr("0.035", "0.00875", "0.14"),
    ),
    m(
        "amazon/nova-2-lite",
        &["amazon/nova-2-lite-v1"],
        icr("0.3", "0.075", "2.5"),
    ),
    m("amazon/titan-embed-text-v2", &[], emb("0.02")),
    m("amazon/titan-embed-text-v1", &[], emb("0.1")),
    // ---- Cohere ----
    m(
        "cohere/command-a",
        &["cohere/command-a-03-2025"],
        io("2.5", "10"),
    ),
    m(
        "cohere/command-r-plus",
        &["cohere/command-r-plus-08-2024"],
        io("2.5", "10"),
    ),
    m(
        "cohere/command-r",
        &["cohere/command-r-08-2024"],
        io("0.15", "0.6"),
    ),
    m(
        "cohere/command-r7b",
        &["cohere/command-r7b-12-2024"],
        io("0.0375", "0.15"),
    ),
    m("cohere/embed-v4.0", &[], emb("0.12")),
    // ---- Perplexity (token prices plus a fee per request) ----
    m("perplexity/sonar", &[], io("1", "1").request("0.012")),
    m("perplexity/sonar-pro", &[], io("3", "15").request("0.014")),
    m(
        "perplexity/sonar-reasoning",
        &[],
        io("1", "5").request("0.012"),
    ),
    m(
        "perplexity/sonar-reasoning-pro",
        &[],
        io("2", "8").request("0.014"),
    ),
];

/// The built-in models as table rows (tier prices laid over the base ones).
pub(crate) fn models() -> Vec<ModelPrice> {
    MODELS
        .iter()
        .map(|e| {
            let periods: Vec<Period> = std::iter::once(&e.first)
                .chain(e.changes)
                .map(|d| Period {
                    from_ms: d.from,
                    prices: prices_of(d),
                    windows: Box::new([]),
                })
                .collect();
            if let Err(why) = check_periods(&periods) {
                panic!("built-in model {}: {why}", e.id);
            }
            ModelPrice {
                id: e.id.to_string(),
                aliases: e.aliases.iter().map(|a| a.to_string()).collect(),
                source: Source::Builtin,
                periods: periods.into_boxed_slice(),
                provenance: None,
            }
        })
        .collect()
}

/// One dated entry's price set.
fn prices_of(d: &Dated) -> PriceSet {
    let tiers = d
        .tier
        .map(|(threshold, t)| Tier {
            threshold,
            rates: d.base.0.overlaid(&t.0),
        })
        .into_iter()
        .collect();
    PriceSet::tiered(d.base.0, tiers).expect("one tier")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn table_is_large_lower_case_and_unambiguous() {
        let models = models();
        assert!(models.len() >= 60, "{} models", models.len());
        let mut keys = HashSet::new();
        for m in &models {
            assert!(m.id.contains('/'), "{} is not vendor/model", m.id);
            assert!(!m.latest().prices.base.is_empty(), "{} has no price", m.id);
            for k in std::iter::once(&m.id).chain(&m.aliases) {
                assert_eq!(k, &k.to_lowercase(), "{k} is not lower case");
                assert!(keys.insert(k.clone()), "{k} names two models");
            }
        }
        for vendor in [
            "openai/",
            "anthropic/",
            "google/",
            "mistralai/",
            "x-ai/",
            "deepseek/",
            "meta-llama/",
            "amazon/",
            "cohere/",
        ] {
            let n = models.iter().filter(|m| m.id.starts_with(vendor)).count();
            assert!(n >= 4, "only {n} models of {vendor}");
        }
    }

    #[test]
    fn tiers_raise_prices_and_keep_untiered_dimensions() {
        for m in models() {
            let set = &m.latest().prices;
            let Some(lc) = set.tiers.first() else {
                continue;
            };
            assert!(lc.threshold >= 100_000, "{}", m.id);
            for d in Dimension::ALL {
                match (set.base.get(d), lc.rates.get(d)) {
                    (Some(_), None) => panic!("{} loses {} above the tier", m.id, d.name()),
                    (Some(b), Some(t)) => {
                        assert!(
                            t.cost(1_000_000).unwrap() >= b.cost(1_000_000).unwrap(),
                            "{}",
                            m.id
                        )
                    }
                    _ => {}
                }
            }
        }
    }
}
