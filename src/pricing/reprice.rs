//! Re-pricing a stored row: what its span would be priced at with the table in force now, from
//! what the `spans` row kept. One pure call, for a command that rewrites stored rows.

use crate::ingest::wire::Usage;

use super::money::PriceError;
use super::pricer::Priced;
use super::table::PriceTable;

/// The nine usage counts as a `spans` row stores them (`RowRef::usage`): an absent count is
/// stored as 0, and the request count as the span's `requestCount`, 1 when a priced span had
/// none, 0 when an unpriced span had none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    pub reasoning_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_input_tokens: u64,
    pub image_count: u64,
    pub web_search_count: u64,
    pub request_count: u64,
}

impl StoredUsage {
    /// How a row stores a span's `usage`, `priced` or not.
    pub fn new(usage: &Usage, priced: bool) -> StoredUsage {
        StoredUsage {
            input_tokens: usage.input_tokens.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            total_tokens: usage.total_tokens.unwrap_or(0),
            reasoning_tokens: usage.reasoning_tokens.unwrap_or(0),
            cached_input_tokens: usage.cached_input_tokens.unwrap_or(0),
            cache_write_input_tokens: usage.cache_write_input_tokens.unwrap_or(0),
            image_count: usage.image_count.unwrap_or(0),
            web_search_count: usage.web_search_count.unwrap_or(0),
            request_count: usage.request_count.unwrap_or(u64::from(priced)),
        }
    }

    /// The nine counts in table order (`input_tokens` to `request_count`).
    pub fn columns(&self) -> [u64; 9] {
        [
            self.input_tokens,
            self.output_tokens,
            self.total_tokens,
            self.reasoning_tokens,
            self.cached_input_tokens,
            self.cache_write_input_tokens,
            self.image_count,
            self.web_search_count,
            self.request_count,
        ]
    }

    /// The nine counts given in table order.
    pub fn from_columns(c: [u64; 9]) -> StoredUsage {
        let [input_tokens, output_tokens, total_tokens, reasoning_tokens, cached_input_tokens, cache_write_input_tokens, image_count, web_search_count, request_count] =
            c;
        StoredUsage {
            input_tokens,
            output_tokens,
            total_tokens,
            reasoning_tokens,
            cached_input_tokens,
            cache_write_input_tokens,
            image_count,
            web_search_count,
            request_count,
        }
    }

    /// The usage the span is priced with. Counts of 0 price like absent ones, except the
    /// request count: a stored 0 is read as absent (1 request), because an unpriced span
    /// without `requestCount` stored 0 and would be billed one request now; a span that
    /// reported `requestCount: 0` cannot be told apart from it.
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: Some(self.input_tokens),
            output_tokens: Some(self.output_tokens),
            total_tokens: Some(self.total_tokens),
            reasoning_tokens: Some(self.reasoning_tokens),
            cached_input_tokens: Some(self.cached_input_tokens),
            cache_write_input_tokens: Some(self.cache_write_input_tokens),
            image_count: Some(self.image_count),
            web_search_count: Some(self.web_search_count),
            request_count: (self.request_count > 0).then_some(self.request_count),
        }
    }
}

/// Prices a stored `llm` or `embedding` row with `table` (the table in force now): the cost
/// columns, the priced model id and the pricing source its span would get, with the prices in
/// force at the span's start time. `provider` and `model_id` as stored (empty = absent).
/// `Ok(None)`: no model id, or a model `table` does not know (every cost null). Pure: no
/// I/O, no cache, the same answer for the same table and row; it allocates while matching.
pub fn reprice<'t>(
    table: &'t PriceTable,
    provider: &str,
    model_id: &str,
    usage: &StoredUsage,
    start_time_ms: u64,
) -> Result<Option<Priced<'t>>, PriceError> {
    let provider = (!provider.is_empty()).then_some(provider);
    let Some(model) = (!model_id.is_empty())
        .then(|| table.find(provider, model_id))
        .flatten()
    else {
        return Ok(None);
    };
    Ok(Some(Priced {
        costs: model.costs(Some(&usage.usage()), start_time_ms)?,
        model_id: &model.id,
        source: model.source.as_str(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::{parse_instant, Pricer};

    /// What the row keeps of a span's usage (see `ingest::rows`).
    fn stored(u: Option<&Usage>, priced: bool) -> StoredUsage {
        let u = u.copied().unwrap_or_default();
        StoredUsage {
            input_tokens: u.input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
            total_tokens: u.total_tokens.unwrap_or(0),
            reasoning_tokens: u.reasoning_tokens.unwrap_or(0),
            cached_input_tokens: u.cached_input_tokens.unwrap_or(0),
            cache_write_input_tokens: u.cache_write_input_tokens.unwrap_or(0),
            image_count: u.image_count.unwrap_or(0),
            web_search_count: u.web_search_count.unwrap_or(0),
            request_count: u.request_count.unwrap_or(u64::from(priced)),
        }
    }

    #[test]
    fn a_stored_row_reprices_as_its_span_prices() {
        let table = PriceTable::builtin();
        let usages = [
            None,
            Some(Usage::default()),
            Some(Usage {
                input_tokens: Some(300_000),
                cached_input_tokens: Some(100_000),
                cache_write_input_tokens: Some(5000),
                output_tokens: Some(3000),
                reasoning_tokens: Some(1000),
                image_count: Some(1),
                web_search_count: Some(2),
                request_count: Some(3),
                total_tokens: Some(303_000),
            }),
            Some(Usage {
                input_tokens: Some(1000),
                output_tokens: Some(10),
                ..Usage::default()
            }),
        ];
        let calls = [
            ("openai", "gpt-5.6-luna"),
            ("anthropic.messages", "claude-sonnet-4-5-20250929"),
            ("google", "gemini-2.5-flash-image"),
            ("perplexity", "sonar"),
            ("deepseek", "deepseek-chat"),
            ("", "gpt-4o"),
            ("openai", "no-such-model"),
        ];
        let times = [
            "2025-06-01T20:00:00Z",
            "2026-07-29",
            "2026-07-30",
            "2026-11-24",
        ];
        for (provider, model) in calls {
            for u in &usages {
                for at in times {
                    let at = parse_instant(at).unwrap();
                    let p = (!provider.is_empty()).then_some(provider);
                    let live = Pricer::new().price(&table, p, Some(model), u.as_ref(), at);
                    let row = stored(u.as_ref(), matches!(live, Ok(Some(_))));
                    let again = reprice(&table, provider, model, &row, at);
                    assert_eq!(again, live, "{provider} {model} {u:?} {at}");
                }
            }
        }
        assert_eq!(
            reprice(&table, "openai", "", &StoredUsage::default(), 0),
            Ok(None)
        );
    }

    #[test]
    fn a_row_unpriced_at_ingest_is_priced_with_one_request() {
        // Stored when the model was unknown: requestCount absent -> 0.
        let table = PriceTable::builtin();
        let row = StoredUsage::default();
        let p = reprice(&table, "perplexity", "sonar", &row, 0)
            .unwrap()
            .unwrap();
        assert_eq!(p.costs.request, Some(120_000_000));
        assert_eq!((p.model_id, p.source), ("perplexity/sonar", "builtin"));
    }
}
