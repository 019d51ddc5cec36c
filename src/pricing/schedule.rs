//! When which prices apply: a model's dated periods, the daily windows inside a period, and the
//! long-context tiers of a price set.
//!
//! A span is priced with the prices in force at its `startTime` (UTC): the last [`Period`]
//! that began at or before it, then the first of that period's [`Window`]s containing its time
//! of day (if any), then the highest [`Tier`] its input size is strictly above (if any). Each
//! step is a short scan over a handful of entries; nothing allocates.

use crate::ingest::wire::Usage;

use super::instant::DAY_S;
use super::rates::{input_size, Rates};

/// Higher prices for calls whose input is strictly above a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    /// Input tokens (inputTokens + cacheWriteInputTokens) above which the tier applies.
    pub threshold: u64,
    /// Complete rates for such calls (the whole call is priced at them).
    pub rates: Rates,
}

/// Base rates and the long-context tiers above them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PriceSet {
    pub base: Rates,
    /// Ascending by threshold, thresholds distinct.
    pub tiers: Box<[Tier]>,
}

impl PriceSet {
    /// Rates without tiers.
    pub fn flat(base: Rates) -> PriceSet {
        PriceSet {
            base,
            tiers: Box::new([]),
        }
    }

    /// Rates with tiers, sorted by threshold; `Err` when two tiers share a threshold.
    pub fn tiered(base: Rates, mut tiers: Vec<Tier>) -> Result<PriceSet, u64> {
        tiers.sort_by_key(|t| t.threshold);
        if let Some(w) = tiers.windows(2).find(|w| w[0].threshold == w[1].threshold) {
            return Err(w[0].threshold);
        }
        Ok(PriceSet {
            base,
            tiers: tiers.into_boxed_slice(),
        })
    }

    /// The rates for a call, and the threshold of the tier that applied (if one did).
    #[inline]
    pub fn select(&self, usage: Option<&Usage>) -> (&Rates, Option<u64>) {
        if let (false, Some(u)) = (self.tiers.is_empty(), usage) {
            let size = input_size(u);
            for t in self.tiers.iter().rev() {
                if size > u128::from(t.threshold) {
                    return (&t.rates, Some(t.threshold));
                }
            }
        }
        (&self.base, None)
    }
}

/// Prices that apply every day between two times of day (UTC), e.g. off-peak hours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Seconds after 00:00 UTC where the window opens (included).
    pub from_s: u32,
    /// Seconds after 00:00 UTC where it closes (excluded); below `from_s` it wraps midnight.
    pub to_s: u32,
    pub prices: PriceSet,
}

impl Window {
    /// True when `s` seconds after midnight UTC is inside the window.
    #[inline]
    pub fn contains(&self, s: u32) -> bool {
        if self.from_s <= self.to_s {
            self.from_s <= s && s < self.to_s
        } else {
            s >= self.from_s || s < self.to_s
        }
    }
}

/// The prices in force from one instant until the next period begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Period {
    /// Epoch milliseconds (UTC) where the period begins; the first period of a model begins at 0.
    pub from_ms: u64,
    /// The prices outside every window.
    pub prices: PriceSet,
    /// Daily windows with prices of their own; the first that contains a span's time of day wins.
    pub windows: Box<[Window]>,
}

impl Period {
    /// One price set for all time.
    pub fn always(prices: PriceSet) -> Period {
        Period {
            from_ms: 0,
            prices,
            windows: Box::new([]),
        }
    }

    /// The price set in force at `at_ms`, and the window it came from (if any).
    #[inline]
    pub fn select(&self, at_ms: u64) -> (&PriceSet, Option<&Window>) {
        if !self.windows.is_empty() {
            let s = ((at_ms / 1000) % u64::from(DAY_S)) as u32;
            if let Some(w) = self.windows.iter().find(|w| w.contains(s)) {
                return (&w.prices, Some(w));
            }
        }
        (&self.prices, None)
    }
}

/// The period in force at `at_ms`: the last one that began at or before it. `periods` is
/// non-empty, ascending, and the first begins at 0, so one always applies.
#[inline]
pub fn period_at(periods: &[Period], at_ms: u64) -> &Period {
    let mut i = periods.len() - 1;
    while i > 0 && periods[i].from_ms > at_ms {
        i -= 1;
    }
    &periods[i]
}

/// Checks a model's periods: at least one, the first from 0, strictly ascending.
pub fn check_periods(periods: &[Period]) -> Result<(), &'static str> {
    match periods.first() {
        None => Err("a model needs prices"),
        Some(p) if p.from_ms != 0 => Err("the first prices must apply from the beginning"),
        _ if periods.windows(2).any(|w| w[0].from_ms >= w[1].from_ms) => {
            Err("two price changes on the same instant, or out of order")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::money::Price;
    use super::super::rates::Dimension;
    use super::*;

    fn rates(prompt: &str) -> Rates {
        Rates::NONE.with(Dimension::Prompt, Price::per_million(prompt))
    }

    fn prompt_of(r: &Rates) -> String {
        r.get(Dimension::Prompt).unwrap().per_million_string()
    }

    #[test]
    fn periods_tiers_and_windows_select_by_time_and_size() {
        let day = 86_400_000;
        let periods = [
            Period::always(
                PriceSet::tiered(
                    rates("1"),
                    vec![Tier {
                        threshold: 100,
                        rates: rates("2"),
                    }],
                )
                .unwrap(),
            ),
            Period {
                from_ms: 10 * day,
                prices: PriceSet::flat(rates("3")),
                // 22:00-02:00 UTC, wrapping midnight.
                windows: Box::new([Window {
                    from_s: 22 * 3600,
                    to_s: 2 * 3600,
                    prices: PriceSet::flat(rates("4")),
                }]),
            },
        ];
        check_periods(&periods).unwrap();
        let usage = |n| Usage {
            input_tokens: Some(n),
            ..Usage::default()
        };
        // (at, input tokens) -> prompt price per 1M
        let cases = [
            (0, 100, "1"),
            (0, 101, "2"),
            (10 * day - 1, 101, "2"),
            (10 * day, 101, "4"),                 // 00:00, inside the window
            (10 * day + 2 * 3_600_000, 101, "3"), // 02:00, window closed
            (11 * day - 1, 1, "4"),               // 23:59:59.999
            (11 * day + 12 * 3_600_000, 1, "3"),
        ];
        for (at, input, want) in cases {
            let (set, _) = period_at(&periods, at).select(at);
            let (r, _) = set.select(Some(&usage(input)));
            assert_eq!(prompt_of(r), want, "at {at} input {input}");
        }
        assert_eq!(
            check_periods(&periods[1..]),
            Err("the first prices must apply from the beginning")
        );
        assert!(PriceSet::tiered(
            rates("1"),
            vec![
                Tier {
                    threshold: 5,
                    rates: rates("2")
                };
                2
            ]
        )
        .is_err());
    }
}
