//! Pricing: turns a model call's (provider, modelId, usage) into nine exact cost columns.
//!
//! # Layout
//!
//! - `costs.rs`: [`Money`] and [`CostColumns`], what a priced call produces (rows store them).
//! - `money.rs`: [`Price`] (exact decimal per unit), [`PriceError`], [`format_money`].
//! - `rates.rs`: [`Rates`] (a price per [`Dimension`]) and the cost arithmetic of one call.
//! - `schedule.rs`: when which prices apply: dated [`Period`]s, daily [`Window`]s, long-context
//!   [`Tier`]s.
//! - `instant.rs`: dates, RFC 3339 times and epoch milliseconds for dated prices.
//! - `table.rs`: [`PriceTable`], [`ModelPrice`] (id, aliases, periods, provenance).
//! - `builtin/`: the table shipped in the binary, one file per vendor, each model with its
//!   dated prices and where they come from.
//! - `matching.rs`: (provider, modelId) -> ordered candidate ids, each with the release date
//!   removed to reach it (so the table can refuse an older model of a newer release's family).
//! - `pricer.rs`: [`Pricer`], the per-worker match cache; [`Priced`], what a row gets.
//! - `reprice.rs`: [`reprice`], a stored row's costs with the table in force now, in one pure
//!   call from what the row kept ([`StoredUsage`]).
//! - `file.rs`: pricing files -> overrides: format detection, OpenRouter and LiteLLM readers,
//!   [`PricingFileError`]; `own.rs`: the project's own format; `genai.rs`: the genai-prices
//!   `v2` data set and its match rules. Every format is described in `docs/pricing-file.md`.
//! - `json.rs`: a small JSON reader that keeps numbers as written.
//! - `shared.rs`: [`SharedPrices`], the table in force, swapped whole on reload.
//! - `unpriced.rs`: [`UnpricedTally`], the spans a pricer found no price for, by provider
//!   ([`PROVIDER_LABELS`]), and the (provider, modelId) pairs it saw first.
//! - `fuzz.rs` (tests and fuzzing only): `fuzz_price`, the fuzz property, checked against an
//!   independent computation.
//!
//! **Invariant:** nothing on the request path ([`Pricer::price`]) does I/O, takes a lock, uses
//! floating point, or allocates once a (provider, modelId) pair is cached. A span is priced
//! with the prices in force at its `startTime`: choosing them is a scan over the model's few
//! periods, windows and tiers. Only [`PriceTable::from_file`] and [`SharedPrices`]' reloads
//! read files, on control threads.
//!
//! **Invariant:** money is integer. A price is `mantissa / 10^scale` USD per unit; a cost is
//! rounded half-up once per dimension to 1e-10 USD ([`Money`]); the total is the sum of the
//! priced dimensions; anything past `Decimal(18, 10)` is [`PriceError::Overflow`], never a
//! wrapped or clamped value. File prices are converted from their text, never through `f64`.
//!
//! Use: at start-up build a [`SharedPrices`] (built-in + optional file); each worker owns a
//! [`Pricer`], takes `shared.current()` once per request and calls [`Pricer::price_span`] (or
//! [`Pricer::price`]) per span.

mod builtin;
mod costs;
mod file;
#[cfg(any(test, feature = "fuzzing"))]
mod fuzz;
mod genai;
mod instant;
mod json;
mod matching;
mod money;
mod own;
mod pricer;
mod rates;
mod reprice;
mod schedule;
mod shared;
mod table;
mod unpriced;

#[cfg(test)]
mod genai_walk_tests;
#[cfg(test)]
mod tests;

pub use costs::{CostColumns, Money};
pub use file::{parse as parse_pricing_file, FileFormat, PricingFileError};
#[cfg(any(test, feature = "fuzzing"))]
pub use fuzz::{fuzz_price, AtPick, Change, FuzzCall};
pub use instant::{format_instant, format_time_of_day, parse_cli_instant, parse_instant};
pub use money::{format_money, parse_money, Price, PriceError, MAX_MONEY};
pub use pricer::{CacheStats, Priced, Pricer};
pub use rates::{billable_counts, Dimension, Rates};
pub use reprice::{reprice, StoredUsage};
pub use schedule::{Period, PriceSet, Tier, Window};
pub use shared::SharedPrices;
pub use table::{Breakdown, ModelPrice, PriceTable, Provenance, Selected, Source};
pub use unpriced::{UnpricedTally, PROVIDER_LABELS};
