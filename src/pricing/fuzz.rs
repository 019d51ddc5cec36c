//! Fuzz property of pricing: arbitrary usage, prices and start times never panic or overflow,
//! the prices in force at the start time are used, every cost is the exact half-up rounding of
//! count x price, and the total is the sum of the dimensions.
//!
//! The start time is picked around the schedule's change points (a period's start, a daily
//! window's opening or closing): 1 ms before, at, 1 ms after, a little either side, or
//! anywhere; the period and window in force are found again by a plain scan of the schedule.
//!
//! The expected costs are computed here independently of `money.rs`/`table.rs`: billable counts
//! straight from the contract's rules, each price as the `mantissa x 10^exponent` it was written
//! from, and the rounding in plain `u128` arithmetic. The input's tail is also priced as a
//! (provider, modelId) pair against the built-in table, which fuzzes model matching.

use std::sync::OnceLock;

use super::costs::Money;
use crate::ingest::wire::Usage;

use super::instant::DAY_S;
use super::money::{Price, MAX_MONEY};
use super::rates::{Dimension, Rates};
use super::schedule::{Period, PriceSet, Tier, Window};
use super::table::{ModelPrice, PriceTable, Source};
use super::Pricer;

/// A price as written: `mantissa x 10^exponent` USD per unit.
pub type WrittenPrice = (u64, i8);

/// A price per dimension (`Dimension` order) as written.
type Written = [Option<WrittenPrice>; 8];

/// One fuzz input, decoded from bytes (and encodable, for seeds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FuzzCall {
    /// The nine usage counts in contract order; `None` = no usage object at all.
    pub usage: Option<[Option<u64>; 9]>,
    /// Base price per dimension (`Dimension` order).
    pub base: [Option<WrittenPrice>; 8],
    /// Long-context threshold and the prices that tier lays over the base.
    pub tier: Option<(u64, [Option<WrittenPrice>; 8])>,
    /// When the call started, relative to the schedule's change points.
    pub at: AtPick,
    /// Price changes (up to three), each replacing the prices before it whole.
    pub changes: Vec<Change>,
    pub provider: Option<String>,
    pub model_id: String,
}

/// A price change of the fuzzed schedule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    /// Milliseconds after the change before it (the first: after 0) where it applies; 0 is
    /// read as 1, and a change that would begin past `u64::MAX` is left out.
    pub gap: u64,
    pub prices: [Option<WrittenPrice>; 8],
    /// A daily window (seconds after midnight UTC where it opens and closes, below 86400)
    /// with prices of its own.
    pub window: Option<(u32, u32, [Option<WrittenPrice>; 8])>,
    /// A long-context tier of the change's own prices, as `FuzzCall::tier` is of the base's
    /// (its window's prices have none).
    pub tier: Option<(u64, [Option<WrittenPrice>; 8])>,
}

/// How a call's start time is picked: near one of the schedule's change points, or anywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AtPick {
    /// Modulo 5: 1 ms before the point, at it, 1 ms after it, up to 2^20 ms either side of
    /// it (`delta`'s low bit the side, the rest the distance), or at `delta` itself.
    pub how: u8,
    /// Which change point, modulo their number.
    pub point: u8,
    pub delta: u64,
}

const DAY_MS: u64 = 86_400_000;

impl AtPick {
    /// At `at_ms`, whatever the schedule.
    pub const fn anywhere(at_ms: u64) -> AtPick {
        AtPick {
            how: 4,
            point: 0,
            delta: at_ms,
        }
    }

    /// The start time this picks for a model with `periods`: the change points are each
    /// period's start and, on the day it starts and the next, where its windows open and close.
    pub fn resolve(&self, periods: &[Period]) -> u64 {
        let mut points = Vec::new();
        for p in periods {
            points.push(p.from_ms);
            let day = p.from_ms - p.from_ms % DAY_MS;
            for w in p.windows.iter() {
                for d in [day, day.saturating_add(DAY_MS)] {
                    points.push(d.saturating_add(u64::from(w.from_s) * 1000));
                    points.push(d.saturating_add(u64::from(w.to_s) * 1000));
                }
            }
        }
        let Some(&point) = points.get(self.point as usize % points.len().max(1)) else {
            return self.delta;
        };
        match self.how % 5 {
            0 => point.saturating_sub(1),
            1 => point,
            2 => point.saturating_add(1),
            3 => {
                let off = (self.delta >> 1) % (1 << 20);
                if self.delta & 1 == 1 {
                    point.saturating_add(off)
                } else {
                    point.saturating_sub(off)
                }
            }
            _ => self.delta,
        }
    }
}

/// Reads the input front to back; past the end every byte is zero.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }

    /// A flag byte, then a value: the flag's low bit says present, its upper bits shift the
    /// value right, so small and huge values are equally easy to reach.
    fn count(&mut self) -> Option<u64> {
        let (flag, v) = self.shifted();
        (flag & 1 == 1).then_some(v)
    }

    /// A flag byte, then a value shifted right by the flag's upper bits.
    fn shifted(&mut self) -> (u8, u64) {
        let flag = self.u8();
        let v = self.u64();
        (flag, v >> (flag >> 2).min(63))
    }

    fn price(&mut self) -> Option<WrittenPrice> {
        let m = self.count()?;
        Some((m, self.u8() as i8))
    }

    fn prices(&mut self) -> [Option<WrittenPrice>; 8] {
        std::array::from_fn(|_| self.price())
    }
}

impl FuzzCall {
    pub fn from_bytes(data: &[u8]) -> FuzzCall {
        let mut b = Bytes(data);
        let usage = (b.u8() & 1 == 1).then(|| std::array::from_fn(|_| b.count()));
        let base = b.prices();
        let tier = (b.u8() & 1 == 1).then(|| (b.u64(), b.prices()));
        let at = AtPick {
            how: b.u8(),
            point: b.u8(),
            delta: b.u64(),
        };
        let changes = (0..b.u8() % 4)
            .map(|_| {
                let (gap, prices) = (b.shifted().1, b.prices());
                // Bit 0: a window; bit 1: a tier.
                let has = b.u8();
                Change {
                    gap,
                    prices,
                    window: (has & 1 == 1).then(|| (b.u32() % DAY_S, b.u32() % DAY_S, b.prices())),
                    tier: (has & 2 == 2).then(|| (b.u64(), b.prices())),
                }
            })
            .collect();
        let provider_len = b.u8();
        let rest = b.0;
        let (provider, model) = if provider_len == 0 {
            (None, rest)
        } else {
            let n = (provider_len as usize - 1).min(rest.len());
            (Some(&rest[..n]), &rest[n..])
        };
        FuzzCall {
            usage,
            base,
            tier,
            at,
            changes,
            provider: provider.map(|p| String::from_utf8_lossy(p).into_owned()),
            model_id: String::from_utf8_lossy(model).into_owned(),
        }
    }

    /// The bytes `from_bytes` reads back as this call (provider names up to 254 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let count = |out: &mut Vec<u8>, c: Option<u64>| {
            out.push(u8::from(c.is_some()));
            out.extend_from_slice(&c.unwrap_or(0).to_le_bytes());
        };
        let prices = |out: &mut Vec<u8>, ps: &[Option<WrittenPrice>; 8]| {
            for p in ps {
                count(out, p.map(|p| p.0));
                if let Some((_, e)) = p {
                    out.push(*e as u8);
                }
            }
        };
        out.push(u8::from(self.usage.is_some()));
        for c in self.usage.unwrap_or_default() {
            if self.usage.is_some() {
                count(&mut out, c);
            }
        }
        prices(&mut out, &self.base);
        out.push(u8::from(self.tier.is_some()));
        if let Some((threshold, ps)) = &self.tier {
            out.extend_from_slice(&threshold.to_le_bytes());
            prices(&mut out, ps);
        }
        out.extend_from_slice(&[self.at.how, self.at.point]);
        out.extend_from_slice(&self.at.delta.to_le_bytes());
        out.push(self.changes.len().min(3) as u8);
        for c in self.changes.iter().take(3) {
            out.push(0);
            out.extend_from_slice(&c.gap.to_le_bytes());
            prices(&mut out, &c.prices);
            out.push(u8::from(c.window.is_some()) | u8::from(c.tier.is_some()) << 1);
            if let Some((from, to, ps)) = &c.window {
                out.extend_from_slice(&from.to_le_bytes());
                out.extend_from_slice(&to.to_le_bytes());
                prices(&mut out, ps);
            }
            if let Some((threshold, ps)) = &c.tier {
                out.extend_from_slice(&threshold.to_le_bytes());
                prices(&mut out, ps);
            }
        }
        match &self.provider {
            Some(p) => {
                out.push(p.len().min(254) as u8 + 1);
                out.extend_from_slice(&p.as_bytes()[..p.len().min(254)]);
            }
            None => out.push(0),
        }
        out.extend_from_slice(self.model_id.as_bytes());
        out
    }
}

/// Runs one fuzz input; panics on any disagreement with the independent computation.
pub fn fuzz_price(data: &[u8]) {
    let call = FuzzCall::from_bytes(data);
    let usage = call.usage.map(|u| Usage {
        input_tokens: u[0],
        output_tokens: u[1],
        total_tokens: u[2],
        reasoning_tokens: u[3],
        cached_input_tokens: u[4],
        cache_write_input_tokens: u[5],
        image_count: u[6],
        web_search_count: u[7],
        request_count: u[8],
    });
    check_model(&call, usage.as_ref());
    check_matching(&call, usage.as_ref());
}

/// Parses a written price through the public parser; `None` if it refuses the text (too many
/// digits or decimal places), which is also exercised.
fn parse_price(p: Option<WrittenPrice>) -> Option<(Price, WrittenPrice)> {
    let (m, e) = p?;
    let price = Price::parse(&format!("{m}e{e}")).ok()?;
    Some((price, (m, e)))
}

fn check_model(call: &FuzzCall, usage: Option<&Usage>) {
    let (base, written_base, base_tier) = price_set(&call.base, call.tier.as_ref());
    let mut periods = vec![Period::always(base)];
    // Each change's start, its prices as written, its window's (from, to, prices) and its
    // tier's (threshold, prices).
    type WrittenChange = (
        u64,
        Written,
        Option<(u32, u32, Written)>,
        Option<(u64, Written)>,
    );
    let mut schedule: Vec<WrittenChange> = Vec::new();
    let mut from = 0u64;
    for change in &call.changes {
        let Some(next) = from.checked_add(change.gap.max(1)) else {
            break;
        };
        from = next;
        let (prices, written, tier) = price_set(&change.prices, change.tier.as_ref());
        let window = change.window.map(|(from_s, to_s, prices)| {
            let (rates, written) = rates_of(&prices);
            let window = Window {
                from_s,
                to_s,
                prices: PriceSet::flat(rates),
            };
            (window, (from_s, to_s, written))
        });
        periods.push(Period {
            from_ms: from,
            prices,
            windows: window.iter().map(|(w, _)| w.clone()).collect(),
        });
        schedule.push((from, written, window.map(|(_, w)| w), tier));
    }
    assert_eq!(super::schedule::check_periods(&periods), Ok(()));
    let model = ModelPrice {
        periods: periods.into_boxed_slice(),
        ..ModelPrice::new("fuzz/model", Source::File, PriceSet::default())
    };
    let at = call.at.resolve(&model.periods);

    // The prices in force: the last change that began at or before `at` (a plain scan, all
    // of them), else the base. In a change, its window's prices if `at` falls in it on its own
    // day or, for a window across midnight, in the one that opened the day before. Outside a
    // window, the tier of the base or the change if one was written, which applies strictly
    // above its threshold, to inputTokens + cacheWriteInputTokens.
    let mut changed = None;
    for (i, (from, ..)) in schedule.iter().enumerate() {
        if *from <= at {
            changed = Some(i);
        }
    }
    let in_window = changed
        .and_then(|i| schedule[i].2)
        .filter(|&(from_s, to_s, _)| {
            let (at, day) = (i128::from(at), i128::from(DAY_MS));
            let midnight = at - at % day;
            let (open, close) = (i128::from(from_s) * 1000, i128::from(to_s) * 1000);
            let close = if to_s < from_s { close + day } else { close };
            [midnight - day, midnight]
                .iter()
                .any(|d| d + open <= at && at < d + close)
        });
    let tier_written = match changed {
        _ if in_window.is_some() => None,
        Some(i) => schedule[i].3,
        None => base_tier,
    };
    let tier = tier_written.filter(|(threshold, _)| {
        usage.is_some_and(|u| {
            let size = u128::from(u.input_tokens.unwrap_or(0))
                + u128::from(u.cache_write_input_tokens.unwrap_or(0));
            size > u128::from(*threshold)
        })
    });
    let selected = model.select(usage, at);
    let want_from = changed.map_or(0, |i| schedule[i].0);
    assert_eq!(
        selected.period.from_ms, want_from,
        "period at {at}: {call:?}"
    );
    assert_eq!(
        selected.window.map(|w| (w.from_s, w.to_s)),
        in_window.map(|(from_s, to_s, _)| (from_s, to_s)),
        "window at {at}: {call:?}"
    );
    assert_eq!(
        selected.tier,
        tier.map(|(threshold, _)| threshold),
        "tier at {at}: {call:?}"
    );
    let written = match (changed, in_window, tier) {
        (Some(_), Some((.., w)), _) => w,
        (_, _, Some((_, w))) => w,
        (Some(i), None, None) => schedule[i].1,
        (None, _, None) => written_base,
    };
    let counts = billable(
        usage,
        written[Dimension::InternalReasoning as usize].is_some(),
    );
    let expected: Result<[Option<u128>; 8], ()> = (0..8)
        .map(|i| match written[i] {
            Some(p) if counts[i] > 0 => exact_cost(counts[i], p).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>, ()>>()
        .map(|v| v.try_into().expect("eight"));
    let expected = expected.and_then(|costs| {
        let total: u128 = costs.iter().flatten().sum();
        if total > MAX_MONEY as u128 {
            Err(())
        } else {
            Ok((costs, total))
        }
    });

    let got = model.costs(usage, at);
    match (got, expected) {
        (Ok(c), Ok((costs, total))) => {
            assert_eq!(
                c.dimensions(),
                costs.map(|c| c.map(|c| c as Money)),
                "at {at}: {call:?}"
            );
            let sum: Money = c.dimensions().iter().flatten().sum();
            assert_eq!(c.total, Some(sum), "total is not the sum: {call:?}");
            assert_eq!(c.total, Some(total as Money), "{call:?}");
            let breakdown = model.breakdown(usage, at).expect("costs succeeded");
            assert_eq!(breakdown.selected, selected);
            assert_eq!(breakdown.costs, c);
        }
        (Err(_), Err(())) => {}
        (got, want) => panic!("costs {got:?}, expected {want:?} at {at} for {call:?}"),
    }
}

/// A price set from written base prices and, if one is written, a tier laid over them: the
/// set, the base prices it took, and the tier's threshold with the prices in force above it
/// (the base's where the tier writes none).
fn price_set(
    base: &Written,
    tier: Option<&(u64, Written)>,
) -> (PriceSet, Written, Option<(u64, Written)>) {
    let (rates, written) = rates_of(base);
    let Some((threshold, prices)) = tier else {
        return (PriceSet::flat(rates), written, None);
    };
    let (over, written_over) = rates_of(prices);
    let mut above = written;
    for (i, w) in written_over.iter().enumerate() {
        if w.is_some() {
            above[i] = *w;
        }
    }
    let tiers = vec![Tier {
        threshold: *threshold,
        rates: rates.overlaid(&over),
    }];
    let set = PriceSet::tiered(rates, tiers).expect("one tier");
    (set, written, Some((*threshold, above)))
}

/// Rates from written prices, through the public parser (which may refuse a price with too
/// many digits or decimal places; that is exercised too), and the prices it took.
fn rates_of(prices: &[Option<WrittenPrice>; 8]) -> (Rates, [Option<WrittenPrice>; 8]) {
    let mut rates = Rates::NONE;
    let mut written = [None; 8];
    for (i, d) in Dimension::ALL.into_iter().enumerate() {
        if let Some((price, w)) = parse_price(prices[i]) {
            rates.set(d, Some(price));
            written[i] = Some(w);
        }
    }
    (rates, written)
}

/// Billable counts per dimension (`Dimension` order), from the contract's pricing rules.
fn billable(usage: Option<&Usage>, reasoning_priced: bool) -> [u64; 8] {
    let Some(u) = usage else {
        // No usage: one request, nothing else.
        return [0, 0, 1, 0, 0, 0, 0, 0];
    };
    let input = u.input_tokens.unwrap_or(0);
    let output = u.output_tokens.unwrap_or(0);
    let cached = u.cached_input_tokens.unwrap_or(0);
    let reasoning = u.reasoning_tokens.unwrap_or(0);
    let (completion, reasoning) = if reasoning_priced {
        (output.saturating_sub(reasoning), reasoning)
    } else {
        (output, 0)
    };
    [
        input.saturating_sub(cached),
        completion,
        u.request_count.unwrap_or(1),
        u.image_count.unwrap_or(0),
        u.web_search_count.unwrap_or(0),
        reasoning,
        cached,
        u.cache_write_input_tokens.unwrap_or(0),
    ]
}

/// `count x mantissa x 10^exponent` USD in units of 1e-10 USD, rounded half up; `Err` when it
/// does not fit `Decimal(18, 10)`.
fn exact_cost(count: u64, (mantissa, exponent): WrittenPrice) -> Result<u128, ()> {
    let product = u128::from(count) * u128::from(mantissa);
    if product == 0 {
        // Zero at any scale, however large (see `regression_zero_price_with_a_huge_exponent`).
        return Ok(0);
    }
    let shift = i32::from(exponent) + 10;
    let units = if shift >= 0 {
        let factor = 10u128.checked_pow(shift as u32).ok_or(())?;
        product.checked_mul(factor).ok_or(())?
    } else {
        match 10u128.checked_pow((-shift) as u32) {
            // `product < 2^128 < 10^39 / 2`: it rounds to zero.
            None => 0,
            Some(d) => product / d + u128::from(product % d >= d - product % d),
        }
    };
    if units > MAX_MONEY as u128 {
        Err(())
    } else {
        Ok(units)
    }
}

/// Matching arbitrary (provider, modelId) pairs against the built-in table never panics, and
/// a match prices exactly like the matched model, with the prices a plain scan of its schedule
/// finds in force at a start time picked around its change points.
fn check_matching(call: &FuzzCall, usage: Option<&Usage>) {
    static TABLE: OnceLock<PriceTable> = OnceLock::new();
    let table = TABLE.get_or_init(PriceTable::builtin);
    let provider = call.provider.as_deref();
    let model = table.find(provider, &call.model_id);
    let at = call.at.resolve(model.map_or(&[], |m| &m.periods));
    let mut pricer = Pricer::new();
    let priced = pricer.price(table, provider, Some(&call.model_id), usage, at);
    match (priced, model) {
        (Ok(None), None) => {}
        (Ok(Some(p)), Some(m)) => {
            assert_eq!(p.model_id, m.id);
            assert_eq!(Ok(p.costs), m.costs(usage, at));
        }
        (Err(e), Some(m)) => assert_eq!(m.costs(usage, at), Err(e)),
        (got, m) => panic!("pricer {got:?} but table match {:?}", m.map(|m| &m.id)),
    }
    if let Some(m) = model {
        let rates = plain_rates(&m.periods, usage, at);
        assert!(
            std::ptr::eq(m.select(usage, at).rates, rates),
            "{} at {at}: not the prices in force then",
            m.id
        );
    }
    // A cached second lookup agrees with the first.
    let again = pricer.price(table, provider, Some(&call.model_id), usage, at);
    assert_eq!(again, priced);
}

/// The rates in force at `at`, found without `schedule.rs`: the last period that began at or
/// before it (a scan of all of them), the first of its windows open at that time of day, and
/// the last (highest) tier the input size is strictly above.
fn plain_rates<'p>(periods: &'p [Period], usage: Option<&Usage>, at: u64) -> &'p Rates {
    let mut period = &periods[0];
    for p in periods {
        if p.from_ms <= at {
            period = p;
        }
    }
    let second = (at / 1000 % 86_400) as u32;
    let open = |w: &&Window| match w.from_s <= w.to_s {
        true => (w.from_s..w.to_s).contains(&second),
        false => !(w.to_s..w.from_s).contains(&second),
    };
    let set = period
        .windows
        .iter()
        .find(open)
        .map_or(&period.prices, |w| &w.prices);
    let size = usage.map(|u| {
        u128::from(u.input_tokens.unwrap_or(0))
            + u128::from(u.cache_write_input_tokens.unwrap_or(0))
    });
    let mut rates = &set.base;
    for t in set.tiers.iter() {
        if size.is_some_and(|size| size > u128::from(t.threshold)) {
            rates = &t.rates;
        }
    }
    rates
}

#[cfg(test)]
#[path = "fuzz_tests.rs"]
mod tests;
