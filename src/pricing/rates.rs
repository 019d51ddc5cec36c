//! One set of prices per dimension ([`Rates`]) and the arithmetic that turns a call's usage into
//! the nine cost columns with them.

use crate::ingest::wire::Usage;

use super::costs::{CostColumns, Money};
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
    /// Output tokens each image takes, for models that generate images as output tokens at a
    /// rate of their own: `imageCount x image_tokens` is taken out of the completion count and
    /// billed as images (the image price is per image). 0 = images are not output tokens.
    image_tokens: u32,
}

impl Rates {
    /// No dimension priced.
    pub const NONE: Rates = Rates {
        prices: [None; 8],
        image_tokens: 0,
    };

    /// These rates with image output: each image is `tokens` output tokens at `per_token` USD,
    /// billed as one image at `tokens x per_token` and taken out of the completion count.
    pub const fn with_image_output(mut self, per_token: Price, tokens: u32) -> Rates {
        self.prices[Dimension::Image as usize] = Some(per_token.times(tokens as u64));
        self.image_tokens = tokens;
        self
    }

    /// Output tokens per generated image (0 when images are not billed out of the output).
    pub fn image_tokens(&self) -> u32 {
        self.image_tokens
    }

    /// Sets the output tokens per generated image (see [`Rates::with_image_output`]).
    pub fn set_image_tokens(&mut self, tokens: u32) {
        self.image_tokens = tokens;
    }

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

    /// `self` with every dimension `over` prices replaced by `over`'s price (and `over`'s
    /// tokens per image, if it gives them).
    pub fn overlaid(&self, over: &Rates) -> Rates {
        let mut r = *self;
        for (mine, theirs) in r.prices.iter_mut().zip(over.prices) {
            if theirs.is_some() {
                *mine = theirs;
            }
        }
        if over.image_tokens > 0 {
            r.image_tokens = over.image_tokens;
        }
        r
    }

    /// The billable count per dimension of a call priced with these rates.
    #[inline]
    pub fn counts(&self, usage: Option<&Usage>) -> [u64; 8] {
        billable_counts(usage, self)
    }

    /// The nine cost columns of one call at these rates, written into `out` (which it
    /// overwrites whole). `total` is always `Some` (0 when nothing is billed). On error `out`
    /// holds no meaningful value.
    #[inline(always)]
    pub fn costs_into(
        &self,
        usage: Option<&Usage>,
        out: &mut CostColumns,
    ) -> Result<(), PriceError> {
        let counts = billable_counts(usage, self);
        let mut total: Money = 0;
        // A dimension costs something only with a price and a positive count.
        let mut cost = |d: Dimension| -> Result<Option<Money>, PriceError> {
            let i = d as usize;
            match self.prices[i] {
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
}

/// Input size for long-context tiers: inputTokens (which includes the cached part) plus
/// cacheWriteInputTokens. In `u128`: a saturated `u64` sum would not be above a threshold of
/// `u64::MAX` (see `regression_long_context_size_does_not_saturate`).
#[inline]
pub(crate) fn input_size(u: &Usage) -> u128 {
    u128::from(u.input_tokens.unwrap_or(0)) + u128::from(u.cache_write_input_tokens.unwrap_or(0))
}

/// Billable count per dimension, as the contract defines them, for a call priced at `rates`.
/// Absent counts are 0, except the request count, which is 1 when absent (also when the whole
/// usage is absent). For a model that generates images as output tokens of their own rate
/// (`image_tokens`), `imageCount x image_tokens` of the output tokens are images, not text:
/// completion is what remains (never below 0).
#[inline]
pub fn billable_counts(usage: Option<&Usage>, rates: &Rates) -> [u64; 8] {
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
    let images = u.image_count.unwrap_or(0);
    let text = output.saturating_sub(images.saturating_mul(u64::from(rates.image_tokens)));
    if rates.get(Dimension::InternalReasoning).is_some() {
        c[Dimension::InternalReasoning as usize] = reasoning;
        c[Dimension::Completion as usize] = text.saturating_sub(reasoning);
    } else {
        c[Dimension::Completion as usize] = text;
    }
    c[Dimension::Request as usize] = u.request_count.unwrap_or(1);
    c[Dimension::Image as usize] = images;
    c[Dimension::WebSearch as usize] = u.web_search_count.unwrap_or(0);
    c
}
