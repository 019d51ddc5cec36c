//! What a priced call produces: the nine cost columns, in exact integer money.

/// Money in units of 1e-10 USD: exactly ClickHouse `Decimal(18, 10)`.
pub type Money = i64;

/// The nine cost columns, in table order. `None` = not priced for that dimension.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CostColumns {
    pub prompt: Option<Money>,
    pub completion: Option<Money>,
    pub request: Option<Money>,
    pub image: Option<Money>,
    pub web_search: Option<Money>,
    pub internal_reasoning: Option<Money>,
    pub cache_read: Option<Money>,
    pub cache_write: Option<Money>,
    pub total: Option<Money>,
}

impl CostColumns {
    /// The eight dimensions without the total, in the order of `pricing::Dimension`.
    pub fn dimensions(&self) -> [Option<Money>; 8] {
        let [d @ .., _total] = self.columns();
        d
    }

    /// The nine columns in table order (the eight dimensions, then the total).
    pub fn columns(&self) -> [Option<Money>; 9] {
        [
            self.prompt,
            self.completion,
            self.request,
            self.image,
            self.web_search,
            self.internal_reasoning,
            self.cache_read,
            self.cache_write,
            self.total,
        ]
    }

    /// The nine columns given in table order.
    pub fn from_columns(c: [Option<Money>; 9]) -> CostColumns {
        let [prompt, completion, request, image, web_search, internal_reasoning, cache_read, cache_write, total] =
            c;
        CostColumns {
            prompt,
            completion,
            request,
            image,
            web_search,
            internal_reasoning,
            cache_read,
            cache_write,
            total,
        }
    }
}
