//! The price table shipped in the binary: the current text, reasoning, embedding and image
//! generation models of the major vendors (one file each; `bedrock.rs` for other vendors'
//! models as Amazon Bedrock sells them), with their dated prices, long-context tiers,
//! documented aliases, and where each model's figures come from.
//!
//! The table is written by hand in this project's own form, as facts. Token prices are written
//! per million tokens and request, image and web-search prices per unit, as the vendors publish
//! them; `Price::per_million` converts them exactly at compile time, and dates are checked at
//! compile time too (a malformed literal does not build). Ids are canonical `vendor/model` ids
//! in OpenRouter's spelling; aliases are other exact spellings (vendor aliases, snapshots, older
//! names).
//!
//! Conventions:
//! - A model's first prices apply from the beginning; `.changes(&[from("2026-07-30", ...)])`
//!   lists later ones, each replacing the previous whole.
//! - `icr`/`io` models have no separate cache-write price, and `io` ones no cache-read price
//!   either: cached and cache-write input tokens are then billed at the input price (a client
//!   that reports them is not undercharged for tokens the vendor bills as input).
//! - A model whose ids or aliases reach another model through matching's fallbacks (a release
//!   date or `-preview` removed, dashes as dots) must say so with `.over(&[...])`: it takes
//!   precedence over those models for its own ids. A test checks the whole table.
//! - A host that sells a vendor's model at other prices than the vendor's gets an entry of its
//!   own under the id matching tries first for that host: Amazon Bedrock's prices are
//!   `bedrock/<Bedrock id without region prefix>` (`bedrock/openai.gpt-5.4`), `.over` the
//!   vendor's model. Without one, a Bedrock id is priced as the vendor's model.
//!
//! What is not modelled: batch and flex discounts, regional endpoint premiums (Bedrock and
//! Vertex regional endpoints, +10% on some), the 1-hour Anthropic cache write (the 5-minute
//! one is listed), context-cache storage per hour, and audio, image and video input tokens
//! (billed at the text input price).

use super::instant::{clock_s, date_ms};
use super::money::Price;
use super::rates::{Dimension, Rates};
use super::schedule::{check_periods, Period, PriceSet, Tier, Window};
use super::table::{ModelPrice, Provenance, Source};

mod amazon;
mod anthropic;
mod bedrock;
mod cohere;
mod deepseek;
mod google;
mod meta;
mod mistral;
mod openai;
mod perplexity;
mod xai;

/// The genai-prices data set the figures were cross-checked against: pydantic/genai-prices
/// `prices/new_data/v2/data.json` at commit 47df840, committed on this date. A figure checked
/// only against it is as fresh as this, not as the day it was compared.
const DATA_SET_DATE: &str = "2026-08-21";

/// Figures that agree with the data set, and nothing else was read.
const DATA_SET_ONLY: &str =
    "the genai-prices data set (47df840, 2026-08-21) only; the vendor page was not read";

/// Figures that agree with the data set and with a stored copy of the vendor page.
const VENDOR_COPY: &str = "the genai-prices data set (47df840, 2026-08-21) and an undated stored \
     copy of the vendor page, which agree";

/// Every vendor's models, in listing order.
const VENDORS: &[&[Entry]] = &[
    openai::MODELS,
    anthropic::MODELS,
    google::MODELS,
    mistral::MODELS,
    xai::MODELS,
    deepseek::MODELS,
    meta::MODELS,
    amazon::MODELS,
    cohere::MODELS,
    perplexity::MODELS,
    bedrock::MODELS,
];

/// Where a model's figures come from: a page, the date of the newest source they were checked
/// against, and what that was.
#[derive(Clone, Copy)]
struct Src {
    url: &'static str,
    /// `YYYY-MM-DD`: the date of the newest source the figures were compared with (the data
    /// set's, or a vendor page's when one was read), never the day the comparison was made.
    checked: &'static str,
    basis: &'static str,
}

/// Figures from `url`, cross-checked only against the data set.
const fn data_set(url: &'static str) -> Src {
    Src {
        url,
        checked: DATA_SET_DATE,
        basis: DATA_SET_ONLY,
    }
}

/// Figures from `url`, confirmed by a stored copy of that page.
const fn vendor_copy(url: &'static str) -> Src {
    Src {
        url,
        checked: DATA_SET_DATE,
        basis: VENDOR_COPY,
    }
}

/// Figures from `url` that depart from the data set: `basis` says how and on what evidence.
/// They were compared with the data set, so that is the date checked.
const fn departs(url: &'static str, basis: &'static str) -> Src {
    Src {
        url,
        checked: DATA_SET_DATE,
        basis,
    }
}

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
    /// Reasoning tokens billed apart from output, USD per 1M.
    const fn reasoning(self, mtok: &str) -> R {
        R(self
            .0
            .with(Dimension::InternalReasoning, Price::per_million(mtok)))
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

/// Anthropic's usual ladder: cache write (5 minutes) 1.25x input, cache read 0.1x input; web
/// search $10 per 1000.
const fn claude(input: &str, cache_write: &str, cache_read: &str, output: &str) -> R {
    r().input(input)
        .cache_write(cache_write)
        .cache_read(cache_read)
        .output(output)
        .search("0.01")
}

/// Input, cached input and output, the shape of most OpenAI, Google and xAI prices; cache
/// writes cost the input price.
const fn icr(input: &str, cache_read: &str, output: &str) -> R {
    r().input(input)
        .cache_write(input)
        .cache_read(cache_read)
        .output(output)
}

/// Input and output only; cached and cache-write input tokens cost the input price.
const fn io(input: &str, output: &str) -> R {
    icr(input, input, output)
}

/// Embedding models: input only (cached and cache-write input tokens, should a client report
/// them, cost the input price, as genai-prices bills them).
const fn emb(input: &str) -> R {
    r().input(input).cache_read(input).cache_write(input)
}

/// Prices that apply every day between two times of day (UTC, `HH:MM`; a window whose end is
/// before its start crosses midnight).
#[derive(Clone, Copy)]
struct Daily {
    from_s: u32,
    to_s: u32,
    base: R,
}

const fn daily(from: &str, to: &str, base: R) -> Daily {
    Daily {
        from_s: clock_s(from),
        to_s: clock_s(to),
        base,
    }
}

/// Prices from one instant on: base rates, an optional long-context tier, daily windows.
#[derive(Clone, Copy)]
struct Dated {
    /// Epoch ms (UTC) where these prices take effect; 0 for a model's first prices.
    from: u64,
    base: R,
    /// Threshold and the prices that change above it (the rest stay as in `base`).
    tier: Option<(u64, R)>,
    windows: &'static [Daily],
}

/// A model's first prices.
const fn p(base: R) -> Dated {
    Dated {
        from: 0,
        base,
        tier: None,
        windows: &[],
    }
}

/// Prices that take effect on a date (00:00 UTC) or at `YYYY-MM-DDTHH:MM[:SS]Z`.
const fn from(when: &'static str, base: R) -> Dated {
    Dated {
        from: date_ms(when),
        ..p(base)
    }
}

impl Dated {
    /// These prices with a long-context tier: above `threshold` input tokens, `tier`'s prices
    /// replace the base ones for the whole call.
    const fn above(mut self, threshold: u64, tier: R) -> Dated {
        self.tier = Some((threshold, tier));
        self
    }

    /// These prices with daily windows of other prices (first match wins).
    const fn daily(mut self, windows: &'static [Daily]) -> Dated {
        self.windows = windows;
        self
    }
}

/// One built-in model.
struct Entry {
    id: &'static str,
    aliases: &'static [&'static str],
    /// The models this one takes precedence over for its own ids (see the module docs).
    over: &'static [&'static str],
    source: Src,
    /// The prices from the beginning.
    first: Dated,
    /// Later prices, in time order; each replaces the previous ones whole.
    changes: &'static [Dated],
}

/// A model with one set of prices.
const fn m(id: &'static str, aliases: &'static [&'static str], source: Src, base: R) -> Entry {
    Entry {
        id,
        aliases,
        over: &[],
        source,
        first: p(base),
        changes: &[],
    }
}

/// A model whose prices change for calls with more than `threshold` input tokens.
const fn tiered(
    id: &'static str,
    aliases: &'static [&'static str],
    source: Src,
    base: R,
    threshold: u64,
    tier: R,
) -> Entry {
    let mut e = m(id, aliases, source, base);
    e.first.tier = Some((threshold, tier));
    e
}

impl Entry {
    /// The model's first prices, when they need more than [`m`] or [`tiered`] say.
    const fn first(mut self, first: Dated) -> Entry {
        self.first = first;
        self
    }

    /// The model's later prices (price cuts, introductory prices that end, new tiers).
    const fn changes(mut self, later: &'static [Dated]) -> Entry {
        self.changes = later;
        self
    }

    /// The models this one takes precedence over for its own ids.
    const fn over(mut self, models: &'static [&'static str]) -> Entry {
        self.over = models;
        self
    }
}

/// Every built-in entry, in listing order.
fn entries() -> impl Iterator<Item = &'static Entry> {
    VENDORS.iter().flat_map(|v| v.iter())
}

/// The built-in models as table rows (tier prices laid over the base ones).
pub(crate) fn models() -> Vec<ModelPrice> {
    entries()
        .map(|e| {
            let periods: Vec<Period> = std::iter::once(&e.first)
                .chain(e.changes)
                .map(|d| Period {
                    from_ms: d.from,
                    prices: prices_of(d.base, d.tier),
                    windows: d
                        .windows
                        .iter()
                        .map(|w| Window {
                            from_s: w.from_s,
                            to_s: w.to_s,
                            prices: prices_of(w.base, None),
                        })
                        .collect(),
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
                provenance: Some(Provenance {
                    url: e.source.url,
                    checked: e.source.checked,
                    basis: e.source.basis,
                }),
            }
        })
        .collect()
}

/// One price set: base rates and the tier laid over them.
fn prices_of(base: R, tier: Option<(u64, R)>) -> PriceSet {
    let tiers = tier
        .map(|(threshold, t)| Tier {
            threshold,
            rates: base.0.overlaid(&t.0),
        })
        .into_iter()
        .collect();
    PriceSet::tiered(base.0, tiers).expect("one tier")
}

#[cfg(test)]
mod tests;
