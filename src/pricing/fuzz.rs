//! Fuzz property of pricing: arbitrary usage, prices and start times never panic or overflow,
//! the prices in force at the start time are used, every cost is the exact half-up rounding of
//! count x price, and the total is the sum of the dimensions.
//!
//! The expected costs are computed here independently of `money.rs`/`table.rs`: billable counts
//! straight from the contract's rules, each price as the `mantissa x 10^exponent` it was written
//! from, and the rounding in plain `u128` arithmetic. The input's tail is also priced as a
//! (provider, modelId) pair against the built-in table, which fuzzes model matching.

use std::sync::OnceLock;

use super::costs::Money;
use crate::ingest::wire::Usage;

use super::money::{Price, MAX_MONEY};
use super::rates::{Dimension, Rates};
use super::schedule::{Period, PriceSet, Tier};
use super::table::{ModelPrice, PriceTable, Source};
use super::Pricer;

/// A price as written: `mantissa x 10^exponent` USD per unit.
pub type WrittenPrice = (u64, i8);

/// One fuzz input, decoded from bytes (and encodable, for seeds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FuzzCall {
    /// The nine usage counts in contract order; `None` = no usage object at all.
    pub usage: Option<[Option<u64>; 9]>,
    /// Base price per dimension (`Dimension` order).
    pub base: [Option<WrittenPrice>; 8],
    /// Long-context threshold and the prices that tier lays over the base.
    pub tier: Option<(u64, [Option<WrittenPrice>; 8])>,
    /// When the call started (epoch ms).
    pub at_ms: u64,
    /// A price change: from this instant (epoch ms, above 0) these prices replace the base and
    /// tier whole.
    pub change: Option<(u64, [Option<WrittenPrice>; 8])>,
    pub provider: Option<String>,
    pub model_id: String,
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

    /// A flag byte, then a value: the flag's low bit says present, its upper bits shift the
    /// value right, so small and huge values are equally easy to reach.
    fn count(&mut self) -> Option<u64> {
        let flag = self.u8();
        let v = self.u64();
        (flag & 1 == 1).then(|| v >> (flag >> 2).min(63))
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
        let at_ms = b.u64();
        let change = (b.u8() & 1 == 1).then(|| (b.u64().max(1), b.prices()));
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
            at_ms,
            change,
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
        out.extend_from_slice(&self.at_ms.to_le_bytes());
        out.push(u8::from(self.change.is_some()));
        if let Some((from, ps)) = &self.change {
            out.extend_from_slice(&from.to_le_bytes());
            prices(&mut out, ps);
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
    let (base, written_base) = rates_of(&call.base);
    let mut written_tier = written_base;
    let tiers: Vec<Tier> = call
        .tier
        .map(|(threshold, prices)| {
            let (over, written) = rates_of(&prices);
            for (i, w) in written.iter().enumerate() {
                if w.is_some() {
                    written_tier[i] = *w;
                }
            }
            Tier {
                threshold,
                rates: base.overlaid(&over),
            }
        })
        .into_iter()
        .collect();
    let mut periods = vec![Period::always(
        PriceSet::tiered(base, tiers).expect("one tier"),
    )];
    let mut written_change = None;
    if let Some((from, prices)) = call.change {
        let (rates, written) = rates_of(&prices);
        periods.push(Period {
            from_ms: from,
            prices: PriceSet::flat(rates),
            windows: Box::new([]),
        });
        written_change = Some((from, written));
    }
    let model = ModelPrice {
        periods: periods.into_boxed_slice(),
        ..ModelPrice::new("fuzz/model", Source::File, PriceSet::default())
    };

    // The change applies from its instant on; before it the base and its tier, which applies
    // strictly above its threshold, to inputTokens + cacheWriteInputTokens.
    let changed = written_change.filter(|(from, _)| call.at_ms >= *from);
    let tier = changed.is_none()
        && match (&call.tier, usage) {
            (Some((threshold, _)), Some(u)) => {
                let size = u128::from(u.input_tokens.unwrap_or(0))
                    + u128::from(u.cache_write_input_tokens.unwrap_or(0));
                size > u128::from(*threshold)
            }
            _ => false,
        };
    let written = match changed {
        Some((_, w)) => w,
        None if tier => written_tier,
        None => written_base,
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

    let got = model.costs(usage, call.at_ms);
    match (got, expected) {
        (Ok(c), Ok((costs, total))) => {
            assert_eq!(
                c.dimensions(),
                costs.map(|c| c.map(|c| c as Money)),
                "{call:?}"
            );
            let sum: Money = c.dimensions().iter().flatten().sum();
            assert_eq!(c.total, Some(sum), "total is not the sum: {call:?}");
            assert_eq!(c.total, Some(total as Money), "{call:?}");
            let breakdown = model.breakdown(usage, call.at_ms).expect("costs succeeded");
            assert_eq!(breakdown.selected.tier.is_some(), tier, "{call:?}");
            assert_eq!(breakdown.selected.period.from_ms > 0, changed.is_some());
            assert_eq!(breakdown.costs, c);
        }
        (Err(_), Err(())) => {}
        (got, want) => panic!("costs {got:?}, expected {want:?} for {call:?}"),
    }
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
/// a match prices exactly like the matched model.
fn check_matching(call: &FuzzCall, usage: Option<&Usage>) {
    static TABLE: OnceLock<PriceTable> = OnceLock::new();
    let table = TABLE.get_or_init(PriceTable::builtin);
    let provider = call.provider.as_deref();
    let mut pricer = Pricer::new();
    let priced = pricer.price(table, provider, Some(&call.model_id), usage, call.at_ms);
    let model = table.find(provider, &call.model_id);
    match (priced, model) {
        (Ok(None), None) => {}
        (Ok(Some(p)), Some(m)) => {
            assert_eq!(p.model_id, m.id);
            assert_eq!(Ok(p.costs), m.costs(usage, call.at_ms));
        }
        (Err(e), Some(m)) => assert_eq!(m.costs(usage, call.at_ms), Err(e)),
        (got, m) => panic!("pricer {got:?} but table match {:?}", m.map(|m| &m.id)),
    }
    // A cached second lookup agrees with the first.
    let again = pricer.price(table, provider, Some(&call.model_id), usage, call.at_ms);
    assert_eq!(again, priced);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip() {
        let call = FuzzCall {
            usage: Some([
                Some(1000),
                None,
                Some(3),
                Some(u64::MAX),
                None,
                None,
                None,
                None,
                Some(0),
            ]),
            base: [
                Some((25, -7)),
                None,
                Some((1, -2)),
                None,
                None,
                Some((3, 0)),
                None,
                None,
            ],
            tier: Some((200_000, [Some((5, -6)); 8])),
            at_ms: 1_785_369_600_000,
            change: Some((
                1_785_369_600_000,
                [None, Some((2, -7)), None, None, None, None, None, None],
            )),
            provider: Some("openai.chat".into()),
            model_id: "gpt-4o".into(),
        };
        assert_eq!(FuzzCall::from_bytes(&call.to_bytes()), call);
        let none = FuzzCall {
            model_id: "x".into(),
            ..FuzzCall::default()
        };
        assert_eq!(FuzzCall::from_bytes(&none.to_bytes()), none);
    }

    #[test]
    fn exact_cost_rounds_half_up_once() {
        // 3 tokens at 0.00000025 USD = 7.5e-7 USD = 7500 units exactly.
        assert_eq!(exact_cost(3, (25, -8)), Ok(7500));
        // 1 unit at 5e-11 USD is half a unit: rounds up.
        assert_eq!(exact_cost(1, (5, -11)), Ok(1));
        assert_eq!(exact_cost(1, (49, -12)), Ok(0));
        assert_eq!(exact_cost(u64::MAX, (u64::MAX, -128)), Ok(0));
        assert_eq!(exact_cost(1, (1, 8)), Err(()));
        assert_eq!(exact_cost(99_999_999, (1, 0)), Ok(999_999_990_000_000_000));
    }

    /// Found by the `pricing` fuzz target: a price written `0e101` is zero, and so is its cost,
    /// but this oracle computed `10^111` first and called the cost an overflow.
    #[test]
    fn regression_zero_price_with_a_huge_exponent() {
        assert_eq!(exact_cost(7873, (0, 101)), Ok(0));
        assert_eq!(exact_cost(0, (u64::MAX, 127)), Ok(0));
        fuzz_price(&[
            1, 1, 193, 30, 0, 0, 0, 0, 0, 0, 1, 242, 2, 0, 0, 0, 0, 0, 0, 1, 37, 31, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 241, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 250, 1, 125, 0, 0,
            0, 0, 0, 0, 0, 247, 1, 53, 12, 0, 0, 0, 0, 0, 0, 246, 0, 19, 97, 110, 116, 104, 114,
            241, 255, 255, 255, 255, 255, 255, 127, 111, 52, 0, 0, 0, 109, 101, 115, 115, 97, 103,
            101, 115, 99, 108, 97, 117, 100, 101, 45, 115, 111, 110, 110, 101, 116, 45, 52, 45, 53,
            45, 50, 48, 50, 53, 48, 57, 50, 57,
        ]);
    }

    /// The property holds on hand-made calls around the edges.
    #[test]
    fn fuzz_price_seeds() {
        let max = MAX_MONEY as u64;
        let calls = [
            FuzzCall::default(),
            FuzzCall {
                usage: Some([
                    Some(1000),
                    Some(200),
                    None,
                    Some(50),
                    Some(100),
                    Some(10),
                    Some(2),
                    Some(1),
                    None,
                ]),
                base: [Some((25, -7)); 8],
                tier: Some((
                    500,
                    [Some((5, -7)), None, None, None, None, None, None, None],
                )),
                at_ms: 1_785_369_599_999,
                change: Some((1_785_369_600_000, [Some((5, -7)); 8])),
                provider: Some("anthropic.messages".into()),
                model_id: "claude-sonnet-4-5-20250929".into(),
            },
            FuzzCall {
                usage: Some([
                    Some(300_000),
                    Some(10),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                ]),
                base: [Some((1, -6)); 8],
                tier: Some((272_000, [Some((2, -6)); 8])),
                at_ms: 1_785_369_600_000,
                change: Some((1_785_369_600_000, [Some((2, -7)); 8])),
                provider: Some("openai".into()),
                model_id: "gpt-5.6-luna".into(),
            },
            FuzzCall {
                usage: Some([Some(u64::MAX); 9]),
                base: [Some((u64::MAX, 127)); 8],
                tier: Some((u64::MAX, [Some((1, -128)); 8])),
                at_ms: u64::MAX,
                change: Some((u64::MAX, [Some((u64::MAX, 127)); 8])),
                provider: None,
                model_id: "us.anthropic.claude-3-5-sonnet-20240620-v1:0".into(),
            },
            FuzzCall {
                usage: Some([Some(max), None, None, None, None, None, None, None, None]),
                base: [Some((1, -10)), None, None, None, None, None, None, None],
                ..FuzzCall::default()
            },
        ];
        for call in calls {
            fuzz_price(&call.to_bytes());
        }
        for data in [&b""[..], b"\xff", &[0xffu8; 300], b"\x01\x05\x05\x05"] {
            fuzz_price(data);
        }
    }
}
