//! The immutable price table: models, their rates per dimension and long-context tier, and the
//! arithmetic that turns a call's usage into the nine cost columns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::costs::{CostColumns, Money};
use crate::ingest::wire::Usage;

use super::builtin;
use super::matching;
use super::money::{Price, PriceError, MAX_MONEY};

/// One priced dimension of a call. The discriminant indexes [`Rates`] and count arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dimension {
    Prompt = 0,
    Completion = 1,
    Request = 2,
    Image = 3,
    WebSearch = 4,
    InternalReasoning = 5,
    CacheRead = 6,
    CacheWrite = 7,
}

impl Dimension {
    /// All eight, in cost-column order.
    pub const ALL: [Dimension; 8] = [
        Dimension::Prompt,
        Dimension::Completion,
        Dimension::Request,
        Dimension::Image,
        Dimension::WebSearch,
        Dimension::InternalReasoning,
        Dimension::CacheRead,
        Dimension::CacheWrite,
    ];

    /// The name used in the pricing file and in the cost column.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Prompt => "prompt",
            Dimension::Completion => "completion",
            Dimension::Request => "request",
            Dimension::Image => "image",
            Dimension::WebSearch => "web_search",
            Dimension::InternalReasoning => "internal_reasoning",
            Dimension::CacheRead => "cache_read",
            Dimension::CacheWrite => "cache_write",
        }
    }

    /// True for token dimensions (listed per 1M), false for per-request/image/search ones.
    pub fn is_tokens(self) -> bool {
        !matches!(
            self,
            Dimension::Request | Dimension::Image | Dimension::WebSearch
        )
    }
}

/// A model's price per unit for each dimension; `None` = that dimension is not billed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rates {
    prices: [Option<Price>; 8],
}

impl Rates {
    /// No dimension priced.
    pub const NONE: Rates = Rates { prices: [None; 8] };

    /// These rates with one dimension set (for building tables in const context).
    pub const fn with(mut self, d: Dimension, price: Price) -> Rates {
        self.prices[d as usize] = Some(price);
        self
    }

    /// Sets or clears one dimension.
    pub fn set(&mut self, d: Dimension, price: Option<Price>) {
        self.prices[d as usize] = price;
    }

    /// The price of one dimension.
    #[inline]
    pub fn get(&self, d: Dimension) -> Option<Price> {
        self.prices[d as usize]
    }

    /// True when no dimension is priced.
    pub fn is_empty(&self) -> bool {
        self.prices.iter().all(Option::is_none)
    }

    /// `self` with every dimension `over` prices replaced by `over`'s price.
    pub fn overlaid(&self, over: &Rates) -> Rates {
        let mut r = *self;
        for (mine, theirs) in r.prices.iter_mut().zip(over.prices) {
            if theirs.is_some() {
                *mine = theirs;
            }
        }
        r
    }
}

/// Higher prices for calls whose input is strictly above a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongContext {
    /// Input tokens (inputTokens + cacheWriteInputTokens) above which the tier applies.
    pub threshold: u64,
    /// Complete rates for such calls: the base rates with the tier's prices laid over them.
    pub rates: Rates,
}

/// Where a model's prices came from; recorded in each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Builtin,
    File,
}

impl Source {
    /// The `pricing_source` column value.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::File => "file",
        }
    }
}

/// One priced model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPrice {
    /// Canonical `vendor/model` id, as the row's priced model id.
    pub id: String,
    /// Other ids that name this model exactly (lower case), e.g. OpenRouter's spelling.
    pub aliases: Vec<String>,
    pub source: Source,
    /// Rates for ordinary calls.
    pub base: Rates,
    pub long_context: Option<LongContext>,
}

/// Everything one pricing computation decided, for the `price` command and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakdown<'t> {
    /// True when the long-context tier applied.
    pub long_context: bool,
    /// The rates used (base or tier).
    pub rates: &'t Rates,
    /// Billable count per dimension (index = `Dimension as usize`).
    pub counts: [u64; 8],
    pub costs: CostColumns,
}

impl ModelPrice {
    /// The rates that apply to a call, and whether they are the long-context tier.
    #[inline]
    pub fn rates_for(&self, usage: Option<&Usage>) -> (&Rates, bool) {
        match (&self.long_context, usage) {
            (Some(lc), Some(u)) if input_size(u) > u128::from(lc.threshold) => (&lc.rates, true),
            _ => (&self.base, false),
        }
    }

    /// The nine cost columns of one call. `total` is always `Some` (0 when nothing is billed).
    #[inline]
    pub fn costs(&self, usage: Option<&Usage>) -> Result<CostColumns, PriceError> {
        let mut columns = CostColumns::default();
        self.costs_into(usage, &mut columns)?;
        Ok(columns)
    }

    /// [`ModelPrice::costs`] written into `out` (which it overwrites whole), so the request
    /// path builds the columns in place instead of copying them around. On error `out` holds
    /// no meaningful value.
    #[inline(always)]
    pub fn costs_into(
        &self,
        usage: Option<&Usage>,
        out: &mut CostColumns,
    ) -> Result<(), PriceError> {
        let (rates, _) = self.rates_for(usage);
        let counts = billable_counts(usage, rates.get(Dimension::InternalReasoning).is_some());
        let mut total: Money = 0;
        // A dimension costs something only with a price and a positive count.
        let mut cost = |d: Dimension| -> Result<Option<Money>, PriceError> {
            let i = d as usize;
            match rates.prices[i] {
                Some(p) if counts[i] > 0 => {
                    let c = p.cost(counts[i])?;
                    // Each term is at most MAX_MONEY, so eight of them fit an i64.
                    total += c;
                    Ok(Some(c))
                }
                _ => Ok(None),
            }
        };
        out.prompt = cost(Dimension::Prompt)?;
        out.completion = cost(Dimension::Completion)?;
        out.request = cost(Dimension::Request)?;
        out.image = cost(Dimension::Image)?;
        out.web_search = cost(Dimension::WebSearch)?;
        out.internal_reasoning = cost(Dimension::InternalReasoning)?;
        out.cache_read = cost(Dimension::CacheRead)?;
        out.cache_write = cost(Dimension::CacheWrite)?;
        if total > MAX_MONEY {
            return Err(PriceError::Overflow);
        }
        out.total = Some(total);
        Ok(())
    }

    /// Prices one call and says how: tier, rates, billable counts and costs (for the `price`
    /// command and tests; the request path uses [`ModelPrice::costs`]).
    pub fn breakdown(&self, usage: Option<&Usage>) -> Result<Breakdown<'_>, PriceError> {
        let (rates, long_context) = self.rates_for(usage);
        Ok(Breakdown {
            long_context,
            rates,
            counts: billable_counts(usage, rates.get(Dimension::InternalReasoning).is_some()),
            costs: self.costs(usage)?,
        })
    }
}

/// Input size for the long-context tier: inputTokens (which includes the cached part) plus
/// cacheWriteInputTokens. In `u128`: a saturated `u64` sum would not be above a threshold of
/// `u64::MAX` (see `regression_long_context_size_does_not_saturate`).
#[inline]
fn input_size(u: &Usage) -> u128 {
    u128::from(u.input_tokens.unwrap_or(0)) + u128::from(u.cache_write_input_tokens.unwrap_or(0))
}

/// Billable count per dimension, as the contract defines them. Absent counts are 0, except the
/// request count, which is 1 when absent (also when the whole usage is absent).
#[inline]
pub fn billable_counts(usage: Option<&Usage>, reasoning_priced: bool) -> [u64; 8] {
    let mut c = [0u64; 8];
    let Some(u) = usage else {
        c[Dimension::Request as usize] = 1;
        return c;
    };
    let input = u.input_tokens.unwrap_or(0);
    let output = u.output_tokens.unwrap_or(0);
    let cached = u.cached_input_tokens.unwrap_or(0);
    let reasoning = u.reasoning_tokens.unwrap_or(0);
    c[Dimension::Prompt as usize] = input.saturating_sub(cached);
    c[Dimension::CacheRead as usize] = cached;
    c[Dimension::CacheWrite as usize] = u.cache_write_input_tokens.unwrap_or(0);
    if reasoning_priced {
        c[Dimension::InternalReasoning as usize] = reasoning;
        c[Dimension::Completion as usize] = output.saturating_sub(reasoning);
    } else {
        c[Dimension::Completion as usize] = output;
    }
    c[Dimension::Request as usize] = u.request_count.unwrap_or(1);
    c[Dimension::Image as usize] = u.image_count.unwrap_or(0);
    c[Dimension::WebSearch as usize] = u.web_search_count.unwrap_or(0);
    c
}

/// Source of table generations: every table ever built gets a distinct one, so a match cache can
/// tell any two tables apart.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// The prices in force: built once (built-in + file overrides), then shared read-only.
#[derive(Debug)]
pub struct PriceTable {
    models: Vec<ModelPrice>,
    /// Lower-case id or alias -> index into `models`.
    index: HashMap<Box<str>, u32>,
    generation: u64,
    /// The pricing file merged in, if any (for `price --list`).
    file: Option<String>,
}

impl PriceTable {
    /// The built-in table alone.
    pub fn builtin() -> PriceTable {
        PriceTable::merge(builtin::models(), Vec::new(), None)
    }

    /// Built-in models, then `overrides` (from a file) on top: a file model replaces every
    /// built-in model one of its ids or aliases names, and takes over that model's aliases.
    pub(crate) fn merge(
        builtin: Vec<ModelPrice>,
        overrides: Vec<ModelPrice>,
        file: Option<String>,
    ) -> PriceTable {
        let mut file_keys: HashMap<String, usize> = HashMap::new();
        for (i, m) in overrides.iter().enumerate() {
            for k in keys_of(m) {
                file_keys.entry(k).or_insert(i);
            }
        }
        let mut models = Vec::with_capacity(builtin.len() + overrides.len());
        let mut index: HashMap<Box<str>, u32> = HashMap::new();
        let first_file = builtin
            .iter()
            .filter(|b| !keys_of(b).any(|k| file_keys.contains_key(&k)))
            .count();
        for b in builtin {
            let replaced_by = keys_of(&b).find_map(|k| file_keys.get(&k).copied());
            match replaced_by {
                // Built-in aliases now lead to the file model (unless a file model has the key).
                Some(f) => {
                    for k in keys_of(&b) {
                        index.entry(k.into()).or_insert((first_file + f) as u32);
                    }
                }
                None => {
                    for k in keys_of(&b) {
                        index.entry(k.into()).or_insert(models.len() as u32);
                    }
                    models.push(b);
                }
            }
        }
        debug_assert_eq!(models.len(), first_file);
        for (k, f) in file_keys {
            index.insert(k.into(), (first_file + f) as u32);
        }
        models.extend(overrides);
        PriceTable {
            models,
            index,
            generation: NEXT_GENERATION.fetch_add(1, Ordering::Relaxed),
            file,
        }
    }

    /// Distinct for every table built; match caches compare it to know they are stale.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// All models, built-in ones first.
    pub fn models(&self) -> &[ModelPrice] {
        &self.models
    }

    /// The pricing file merged into this table, if any.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The date the built-in prices were last checked against the vendors' pages.
    pub fn checked(&self) -> &'static str {
        builtin::CHECKED
    }

    /// The model with exactly this id or alias (case-insensitive), without any matching.
    pub fn get(&self, id: &str) -> Option<&ModelPrice> {
        let i = *self.index.get(id.to_lowercase().as_str())?;
        Some(&self.models[i as usize])
    }

    /// Matches (provider, modelId) to a model, uncached: see [`matching`] for the candidates.
    pub fn find(&self, provider: Option<&str>, model_id: &str) -> Option<&ModelPrice> {
        self.resolve(provider, model_id)
            .map(|i| &self.models[i as usize])
    }

    /// Index of the matched model. Allocates; the [`super::Pricer`] caches it.
    pub(crate) fn resolve(&self, provider: Option<&str>, model_id: &str) -> Option<u32> {
        matching::candidates(provider, model_id)
            .iter()
            .find_map(|c| self.index.get(c.as_str()).copied())
    }

    /// The model at an index `resolve` returned for this table.
    #[inline]
    pub(crate) fn model(&self, i: u32) -> &ModelPrice {
        &self.models[i as usize]
    }
}

/// The lower-case index keys of a model: its id, then its aliases.
fn keys_of(m: &ModelPrice) -> impl Iterator<Item = String> + '_ {
    std::iter::once(&m.id)
        .chain(m.aliases.iter())
        .map(|k| k.to_lowercase())
}
