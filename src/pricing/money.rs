//! Exact money: per-unit prices as decimal numbers, and costs rounded half-up once to 1e-10 USD.
//!
//! A [`Price`] is exactly `mantissa / 10^scale` USD per unit, with a mantissa below 2^64, so the
//! product of any `u64` count and any price fits in a `u128` and nothing here can wrap or panic.
//! Costs are [`Money`]: integer units of 1e-10 USD, i.e. ClickHouse `Decimal(18, 10)`.

use std::fmt;

use super::costs::Money;

/// The largest value a `Decimal(18, 10)` holds, in units of 1e-10 USD (18 nines).
pub const MAX_MONEY: Money = 999_999_999_999_999_999;

/// Decimal places of [`Money`].
const MONEY_SCALE: i32 = 10;

/// Most decimal places a price may have: below 1e-38 USD per unit nothing could ever be billed.
const MAX_SCALE: i32 = 38;

/// Fewest: `-18` allows prices up to ~1.8e37 USD per unit, far past anything that can be stored.
const MIN_SCALE: i32 = -18;

/// Powers of ten that fit a `u128` (10^0 ..= 10^38).
const POW10: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// Why a span could not be priced. Small and `Copy`: it travels on the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceError {
    /// A cost (one dimension or the total) does not fit `Decimal(18, 10)`; the caller answers 400.
    Overflow,
}

impl fmt::Display for PriceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PriceError::Overflow => {
                f.write_str("cost does not fit Decimal(18, 10) (more than 99999999.9999999999 USD)")
            }
        }
    }
}

impl std::error::Error for PriceError {}

/// A price per unit (token, request, image or search) in USD, exactly `mantissa / 10^scale`.
///
/// Invariants: `MIN_SCALE <= scale <= MAX_SCALE`, and the mantissa has no trailing zero unless it
/// is zero (then `scale == 0`), so equal prices compare equal.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Price {
    /// Significant digits; below 2^64 so `count * mantissa` always fits a `u128`.
    mantissa: u64,
    /// Decimal places; negative for prices that are multiples of 10, 100, ...
    scale: i8,
}

impl fmt::Debug for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Price({self})")
    }
}

/// Shows the exact per-unit price, e.g. `0.0000025`.
impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&decimal_string(self.mantissa as u128, self.scale as i32))
    }
}

impl Price {
    /// A price of zero (billed, at nothing).
    pub const ZERO: Price = Price {
        mantissa: 0,
        scale: 0,
    };

    /// Builds `mantissa / 10^scale`, normalised; `None` when out of range.
    const fn new(mut mantissa: u128, mut scale: i32) -> Option<Price> {
        if mantissa == 0 {
            return Some(Price::ZERO);
        }
        while mantissa.is_multiple_of(10) && scale > MIN_SCALE {
            mantissa /= 10;
            scale -= 1;
        }
        while scale < MIN_SCALE {
            // Only a very large price gets here; scale it into range if the mantissa allows.
            if mantissa > u128::MAX / 10 {
                return None;
            }
            mantissa *= 10;
            scale += 1;
        }
        if scale > MAX_SCALE || mantissa > u64::MAX as u128 {
            return None;
        }
        Some(Price {
            mantissa: mantissa as u64,
            scale: scale as i8,
        })
    }

    /// True for a price of zero.
    pub fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    /// Parses a non-negative decimal as written: `0.0000025`, `2.5e-06`, `3`, `1E-7`.
    ///
    /// The text is read digit by digit, never through a float, so `2.5e-06` is exactly 25/10^7.
    /// Errors say what is wrong in a few words, for the pricing-file error message.
    pub fn parse(text: &str) -> Result<Price, &'static str> {
        let b = text.trim().as_bytes();
        if b.is_empty() {
            return Err("empty price");
        }
        let mut i = 0;
        if b[0] == b'-' {
            return Err("negative price");
        }
        if b[0] == b'+' {
            i += 1;
        }
        // `mantissa` holds the significant digits seen so far except a run of trailing zeros,
        // which waits in `zeros` so that `1000000000000000000000000` does not overflow.
        let mut mantissa: u128 = 0;
        let mut zeros: i64 = 0;
        let mut frac_digits: i64 = 0;
        let mut digits = 0usize;
        let mut seen_point = false;
        while i < b.len() {
            let c = b[i];
            match c {
                b'0'..=b'9' => {
                    digits += 1;
                    if seen_point {
                        frac_digits += 1;
                    }
                    if c == b'0' {
                        if mantissa != 0 {
                            zeros += 1;
                        }
                    } else {
                        while zeros > 0 {
                            mantissa = mantissa.checked_mul(10).ok_or(TOO_PRECISE)?;
                            zeros -= 1;
                        }
                        mantissa = mantissa
                            .checked_mul(10)
                            .and_then(|m| m.checked_add((c - b'0') as u128))
                            .ok_or(TOO_PRECISE)?;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                b'e' | b'E' => break,
                _ => return Err("not a decimal number"),
            }
            i += 1;
        }
        if digits == 0 {
            return Err("not a decimal number");
        }
        let mut exponent: i64 = 0;
        if i < b.len() {
            // b[i] is 'e' or 'E'.
            i += 1;
            let negative = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                exponent = (exponent * 10 + (b[i] - b'0') as i64).min(1_000_000);
                i += 1;
            }
            if i == start || i != b.len() {
                return Err("not a decimal number");
            }
            if negative {
                exponent = -exponent;
            }
        }
        if mantissa == 0 {
            return Ok(Price::ZERO);
        }
        let scale = frac_digits - exponent - zeros;
        if scale > MAX_SCALE as i64 {
            return Err("more than 38 decimal places");
        }
        if scale < MIN_SCALE as i64 {
            return Err("price too large");
        }
        Price::new(mantissa, scale as i32).ok_or(TOO_PRECISE)
    }

    /// A price written per million units (`"2.5"` = $2.50 per 1M tokens), checked at compile
    /// time: a malformed literal in the built-in table does not build.
    pub const fn per_million(text: &str) -> Price {
        Price::const_decimal(text, 6)
    }

    /// A price written per unit (`"0.01"` = one cent per search), checked at compile time.
    pub const fn per_unit(text: &str) -> Price {
        Price::const_decimal(text, 0)
    }

    /// This price times a whole number (the price of `n` tokens as one unit, e.g. an image
    /// of 1290 output tokens), exactly; checked at compile time in a constant.
    pub const fn times(self, n: u64) -> Price {
        match Price::new(self.mantissa as u128 * n as u128, self.scale as i32) {
            Some(p) => p,
            None => panic!("price out of range"),
        }
    }

    /// [`Price::times`] for figures read at run time: `None` when out of range.
    pub fn checked_times(self, n: u64) -> Option<Price> {
        Price::new(self.mantissa as u128 * n as u128, self.scale as i32)
    }

    /// This price divided by `10^places` (`per_million` of a per-1M price), exactly; `None`
    /// when that needs more than 38 decimal places.
    pub fn shifted(self, places: u8) -> Option<Price> {
        Price::new(self.mantissa as u128, self.scale as i32 + i32::from(places))
    }

    /// Plain decimal literal (`digits[.digits]`) divided by `10^extra_scale`, in const context.
    const fn const_decimal(text: &str, extra_scale: i32) -> Price {
        let b = text.as_bytes();
        assert!(!b.is_empty(), "empty price literal");
        let mut mantissa: u128 = 0;
        let mut scale = extra_scale;
        let mut seen_point = false;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'.' {
                assert!(!seen_point, "two decimal points in a price literal");
                seen_point = true;
            } else {
                assert!(c.is_ascii_digit(), "price literal is not a plain decimal");
                mantissa = mantissa * 10 + (c - b'0') as u128;
                if seen_point {
                    scale += 1;
                }
            }
            i += 1;
        }
        match Price::new(mantissa, scale) {
            Some(p) => p,
            None => panic!("price literal out of range"),
        }
    }

    /// The cost of `count` units in 1e-10 USD, rounded half-up once.
    ///
    /// `Err(Overflow)` when it does not fit `Decimal(18, 10)`; never wraps, never panics.
    #[inline(always)]
    pub fn cost(self, count: u64) -> Result<Money, PriceError> {
        // Both factors are below 2^64, so the product fits a u128.
        let product = count as u128 * self.mantissa as u128;
        let shift = self.scale as i32 - MONEY_SCALE;
        let units = if shift > 0 {
            // More decimal places than Money: divide, rounding half-up. shift <= 28.
            let d = POW10[shift as usize];
            let (q, r) = if product <= u64::MAX as u128 && shift <= 19 {
                let (p, d) = (product as u64, d as u64);
                ((p / d) as u128, (p % d) as u128)
            } else {
                (product / d, product % d)
            };
            // r * 2 >= d, written without the doubling.
            q + (r >= d - r) as u128
        } else {
            // shift >= -28, so the factor is at most 10^28.
            product
                .checked_mul(POW10[(-shift) as usize])
                .ok_or(PriceError::Overflow)?
        };
        if units > MAX_MONEY as u128 {
            return Err(PriceError::Overflow);
        }
        Ok(units as Money)
    }

    /// The price of one million units as an exact decimal string (`2.5` for $2.50 per 1M).
    pub fn per_million_string(self) -> String {
        decimal_string(self.mantissa as u128, self.scale as i32 - 6)
    }
}

const TOO_PRECISE: &str = "more than 19 significant digits";

/// Formats Money (1e-10 USD units) with exactly 10 decimal places: `25000` -> `0.0000025000`.
pub fn format_money(value: Money) -> String {
    let abs = value.unsigned_abs();
    let int = abs / 10_000_000_000;
    let frac = abs % 10_000_000_000;
    let sign = if value < 0 { "-" } else { "" };
    format!("{sign}{int}.{frac:010}")
}

/// The inverse of [`format_money`]: an optional `-`, digits, `.` and exactly 10 digits, within
/// `Decimal(18, 10)` (at most [`MAX_MONEY`] units either way). `None` for anything else.
pub fn parse_money(text: &str) -> Option<Money> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.')?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || !all_digits(frac) || frac.len() != 10 || int.len() > 8 {
        return None;
    }
    let units = int.parse::<Money>().ok()? * 10_000_000_000 + frac.parse::<Money>().ok()?;
    if units > MAX_MONEY {
        return None;
    }
    Some(if negative { -units } else { units })
}

/// `mantissa / 10^scale` written out exactly, without trailing zeros after the point.
fn decimal_string(mantissa: u128, scale: i32) -> String {
    let digits = mantissa.to_string();
    if scale <= 0 {
        if mantissa == 0 {
            return "0".to_string();
        }
        return format!("{digits}{}", "0".repeat((-scale) as usize));
    }
    let scale = scale as usize;
    let (int, frac) = if digits.len() > scale {
        let (a, b) = digits.split_at(digits.len() - scale);
        (a.to_string(), b.to_string())
    } else {
        (
            "0".to_string(),
            format!("{}{digits}", "0".repeat(scale - digits.len())),
        )
    };
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        int
    } else {
        format!("{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row: price text, count, expected cost in 1e-10 USD (or overflow).
    fn check(price: &str, count: u64, expect: Result<Money, PriceError>) {
        let p = Price::parse(price).unwrap_or_else(|e| panic!("{price}: {e}"));
        assert_eq!(p.cost(count), expect, "{price} x {count}");
    }

    #[test]
    fn costs_are_exact_and_rounded_half_up_once() {
        // 2.5e-6 USD = 25000 units of 1e-10; x 1000 = 25_000_000 units = 0.0025 USD.
        check("0.0000025", 1000, Ok(25_000_000));
        check("2.5e-06", 1000, Ok(25_000_000));
        // 1.5e-11 USD = 0.15 units per unit: x 3 = 0.45 -> 0; x 4 = 0.6 -> 1.
        check("0.000000000015", 3, Ok(0));
        check("0.000000000015", 4, Ok(1));
        // 5e-11 = 0.5 units: exactly half rounds up.
        check("0.00000000005", 1, Ok(1));
        // 4.9999e-11 = 0.49999 units rounds down.
        check("0.000000000049999", 1, Ok(0));
        // 1e-38 x u64::MAX = 1.8e-19 USD -> 0 units, no overflow in the product.
        check("1e-38", u64::MAX, Ok(0));
        // 1 USD x (10^8 - 1) = 999999990000000000 units: fits.
        check("1", 99_999_999, Ok(999_999_990_000_000_000));
        // 1 USD x 10^8 = 10^18 units: one past Decimal(18, 10).
        check("1", 100_000_000, Err(PriceError::Overflow));
        // A huge price never panics.
        check("1e18", u64::MAX, Err(PriceError::Overflow));
        check("18446744073709551615", u64::MAX, Err(PriceError::Overflow));
        check("0", u64::MAX, Ok(0));
    }

    #[test]
    fn parse_accepts_decimals_as_written_and_rejects_the_rest() {
        assert_eq!(Price::parse("0.0000025"), Price::parse("2.5e-06"));
        assert_eq!(Price::parse("0.0000025"), Price::parse("25E-7"));
        assert_eq!(Price::parse("0.00000250000"), Price::parse("0.0000025"));
        assert_eq!(Price::parse("100"), Price::parse("1e2"));
        assert_eq!(Price::parse("0.000"), Ok(Price::ZERO));
        assert_eq!(
            Price::parse("1000000000000000000000000000000e-30"),
            Price::parse("1")
        );
        assert_eq!(Price::parse("-1"), Err("negative price"));
        assert_eq!(Price::parse("abc"), Err("not a decimal number"));
        assert_eq!(Price::parse("1.2.3"), Err("not a decimal number"));
        assert_eq!(Price::parse("1e"), Err("not a decimal number"));
        assert_eq!(Price::parse("."), Err("not a decimal number"));
        assert_eq!(Price::parse("1e-39"), Err("more than 38 decimal places"));
        assert_eq!(Price::parse("1e19"), Err("price too large"));
        assert_eq!(
            Price::parse("1.2345678901234567890123"),
            Err("more than 19 significant digits")
        );
        // 17 significant digits, as float printers write them: kept exactly.
        let p = Price::parse("1.6666666666666667e-07").unwrap();
        assert_eq!(p.to_string(), "0.00000016666666666666667");
    }

    #[test]
    fn const_literals_match_runtime_parsing() {
        assert_eq!(
            Price::per_million("2.5"),
            Price::parse("0.0000025").unwrap()
        );
        assert_eq!(
            Price::per_million("0.00875"),
            Price::parse("8.75e-9").unwrap()
        );
        assert_eq!(Price::per_million("150"), Price::parse("0.00015").unwrap());
        assert_eq!(Price::per_unit("0.01"), Price::parse("0.01").unwrap());
        assert_eq!(Price::per_million("2.5").per_million_string(), "2.5");
        assert_eq!(Price::per_million("150").per_million_string(), "150");
        assert_eq!(Price::per_unit("0.01").per_million_string(), "10000");
        assert_eq!(
            Price::per_million("30").times(1290),
            Price::per_unit("0.0387")
        );
        assert_eq!(Price::per_million("0").times(1290), Price::ZERO);
        assert_eq!(
            Price::parse("2.5").unwrap().shifted(6),
            Some(Price::per_million("2.5"))
        );
        assert_eq!(Price::parse("1").unwrap().shifted(39), None);
    }

    #[test]
    fn money_formats_with_ten_places() {
        assert_eq!(format_money(25000), "0.0000025000");
        assert_eq!(format_money(0), "0.0000000000");
        assert_eq!(format_money(125_000_000_000), "12.5000000000");
        assert_eq!(format_money(MAX_MONEY), "99999999.9999999999");
        assert_eq!(format_money(-1), "-0.0000000001");
        assert_eq!(format_money(i64::MIN), "-922337203.6854775808");
    }

    #[test]
    fn money_parses_back_exactly_what_it_formats() {
        for units in [0, 1, -1, 25_000, 125_000_000_000, MAX_MONEY, -MAX_MONEY] {
            assert_eq!(parse_money(&format_money(units)), Some(units), "{units}");
        }
        for bad in [
            "",
            "1",
            "1.5",
            ".0000000001",
            "1.",
            "+1.0000000000",
            "1.00000000001",
            "--1.0000000000",
            " 1.0000000000",
            "1e3.0000000000",
            "100000000.0000000000",
            "-922337203.6854775808",
            "1.000000000\u{0661}",
        ] {
            assert_eq!(parse_money(bad), None, "{bad:?}");
        }
    }
}
