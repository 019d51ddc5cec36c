//! Instants for dated prices: dates, RFC 3339 times and epoch milliseconds (all UTC), and the
//! time of day of a daily price window.
//!
//! Integer arithmetic only (the civil-date conversion of `crate::calendar`, here as a `const fn`
//! so the built-in table's dates are checked when the binary is built).

/// Milliseconds in a day.
const DAY_MS: u64 = 86_400_000;

/// Seconds in a day.
pub(crate) const DAY_S: u32 = 86_400;

/// (year, month 1..=12, day 1..=31) -> days since 1970-01-01 (H. Hinnant's algorithm).
const fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days in a month of a year (proleptic Gregorian).
const fn month_days(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `n` ASCII digits at `at`, or `None`.
const fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    if at + n > b.len() {
        return None;
    }
    let mut v = 0i64;
    let mut i = 0;
    while i < n {
        let c = b[at + i];
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as i64;
        i += 1;
    }
    Some(v)
}

/// `YYYY-MM-DD` at the start of `b` -> days since the epoch; `None` if malformed or before 1970.
const fn date_days(b: &[u8]) -> Option<i64> {
    let (Some(y), Some(m), Some(d)) = (digits(b, 0, 4), digits(b, 5, 2), digits(b, 8, 2)) else {
        return None;
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' || m < 1 || m > 12 {
        return None;
    }
    if d < 1 || d > month_days(y, m) || y < 1970 {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// `YYYY-MM-DD` (00:00 UTC) or `YYYY-MM-DDTHH:MM[:SS]Z` -> epoch milliseconds, checked at
/// compile time when used in a constant (the built-in table): a malformed instant does not
/// build.
pub const fn date_ms(text: &str) -> u64 {
    let b = text.as_bytes();
    let Some(days) = date_days(b) else {
        panic!("not a date (YYYY-MM-DD, 1970 or later)");
    };
    let day = days as u64 * DAY_MS;
    if b.len() == 10 {
        return day;
    }
    let (Some(h), Some(m)) = (digits(b, 11, 2), digits(b, 14, 2)) else {
        panic!("expected YYYY-MM-DDTHH:MM[:SS]Z");
    };
    let (s, end) = match digits(b, 17, 2) {
        Some(s) if b.len() == 20 && b[16] == b':' => (s, 19),
        _ => (0, 16),
    };
    if b[10] != b'T' || b[13] != b':' || b.len() != end + 1 || b[end] != b'Z' {
        panic!("expected YYYY-MM-DDTHH:MM[:SS]Z");
    }
    if h > 23 || m > 59 || s > 59 {
        panic!("not a time of day");
    }
    day + ((h * 60 + m) * 60 + s) as u64 * 1000
}

/// `HH:MM` (UTC) -> seconds after midnight, checked at compile time in a constant.
pub const fn clock_s(text: &str) -> u32 {
    let b = text.as_bytes();
    match (digits(b, 0, 2), digits(b, 3, 2)) {
        (Some(h), Some(m)) if b.len() == 5 && b[2] == b':' && h < 24 && m < 60 => {
            (h * 3600 + m * 60) as u32
        }
        _ => panic!("not a time of day (HH:MM)"),
    }
}

/// Parses when a price starts or a span is priced: `YYYY-MM-DD` (00:00 UTC), an RFC 3339 time
/// (`2026-07-30T12:15:00Z`, `2026-07-30T14:15:00+02:00`, fractions of a second allowed) or
/// epoch milliseconds (`1785369600000`). Errors say what is wrong in a few words.
pub fn parse_instant(text: &str) -> Result<u64, &'static str> {
    parse(text, Epoch::Any)
}

/// When a price starts, as a pricing file gives it (`changes[].from`, genai-prices'
/// `start_date`): `YYYY-MM-DD` or an RFC 3339 time, as `docs/pricing-file.md` says. Not epoch
/// milliseconds: a date written without dashes (`20260730`) would be read as 1970-01-01
/// 05:37:40.730 UTC, and the price change would be in force for every span.
pub fn parse_file_instant(text: &str) -> Result<u64, &'static str> {
    parse(text, Epoch::No)
}

/// An instant given on the command line (`price --at`, `reprice --from`/`--to`): what
/// `parse_instant` reads, but epoch milliseconds of fewer than 12 digits (before 1973-03-03)
/// are refused. They are a date written without dashes (`20260701`, 1970-01-01 05:37 as
/// milliseconds), and `reprice --from 20260701` would rewrite every stored span up to `--to`.
pub fn parse_cli_instant(text: &str) -> Result<u64, &'static str> {
    parse(text, Epoch::AtLeast12Digits)
}

/// Which epoch milliseconds an instant may be written as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Epoch {
    Any,
    /// From 1973-03-03 on: fewer digits are a date without dashes.
    AtLeast12Digits,
    No,
}

fn parse(text: &str, epoch: Epoch) -> Result<u64, &'static str> {
    let t = text.trim();
    let b = t.as_bytes();
    let expected = match epoch {
        Epoch::No => "expected YYYY-MM-DD or an RFC 3339 time",
        _ => "expected YYYY-MM-DD, an RFC 3339 time or epoch milliseconds",
    };
    if !b.is_empty() && b.iter().all(u8::is_ascii_digit) {
        return match epoch {
            Epoch::No => Err(expected),
            Epoch::AtLeast12Digits if b.len() < 12 => Err(
                "epoch milliseconds before 1973: a date is written YYYY-MM-DD (epoch \
                 milliseconds have 13 digits today)",
            ),
            _ => t
                .parse::<u64>()
                .map_err(|_| "epoch milliseconds out of range"),
        };
    }
    let days = date_days(b).ok_or(expected)?;
    let day_ms = days as u64 * DAY_MS;
    if b.len() == 10 {
        return Ok(day_ms);
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return Err("expected 'T' after the date");
    }
    let (clock_ms, offset_s) = clock(&b[11..]).ok_or("expected HH:MM:SS[.fff] and Z or ±HH:MM")?;
    let ms = day_ms as i64 + clock_ms as i64 - offset_s * 1000;
    u64::try_from(ms).map_err(|_| "before 1970")
}

/// `HH:MM:SS[.fff...]` then `Z` or `±HH:MM` -> (milliseconds into the day, offset in seconds).
fn clock(b: &[u8]) -> Option<(u64, i64)> {
    let (h, m, s) = (digits(b, 0, 2)?, digits(b, 3, 2)?, digits(b, 6, 2)?);
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let mut i = 8;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                ms = ms * 10 + (b[i] - b'0') as i64;
            }
            i += 1;
        }
        match i - start {
            0 => return None,
            1 => ms *= 100,
            2 => ms *= 10,
            _ => {}
        }
    }
    let offset = offset_s(&b[i..])?;
    Some((((h * 60 + m) * 60 + s) as u64 * 1000 + ms as u64, offset))
}

/// `Z`, `z`, or `±HH:MM` (the whole rest) -> seconds east of UTC.
fn offset_s(b: &[u8]) -> Option<i64> {
    match b {
        [b'Z' | b'z'] => Some(0),
        [sign @ (b'+' | b'-'), ..] if b.len() == 6 && b[3] == b':' => {
            let (h, m) = (digits(b, 1, 2)?, digits(b, 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let v = (h * 60 + m) * 60;
            Some(if *sign == b'-' { -v } else { v })
        }
        _ => None,
    }
}

/// A time of day as genai-prices writes it (`00:30:00Z`, `16:30:00`, `08:30:00+08:00`) ->
/// seconds after 00:00 UTC (0..86400). No offset means UTC.
pub fn parse_time_of_day(text: &str) -> Result<u32, &'static str> {
    let b = text.trim().as_bytes();
    let err = "expected HH:MM[:SS] with an optional Z or ±HH:MM";
    let (h, m) = (digits(b, 0, 2).ok_or(err)?, digits(b, 3, 2).ok_or(err)?);
    if b.get(2) != Some(&b':') || h > 23 || m > 59 {
        return Err(err);
    }
    let mut i = 5;
    let mut s = 0;
    if b.get(i) == Some(&b':') {
        s = digits(b, 6, 2).ok_or(err)?;
        if s > 59 {
            return Err(err);
        }
        i = 8;
        if b.get(i) == Some(&b'.') {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    let offset = if i == b.len() {
        0
    } else {
        offset_s(&b[i..]).ok_or(err)?
    };
    let utc = ((h * 60 + m) * 60 + s - offset).rem_euclid(DAY_S as i64);
    Ok(utc as u32)
}

/// Epoch milliseconds as people read them: `2026-07-30` at midnight UTC, else RFC 3339 in UTC
/// (`2026-04-26T12:15:00Z`, with milliseconds when there are any).
pub fn format_instant(ms: u64) -> String {
    let (y, m, d) = crate::calendar::civil_from_days((ms / DAY_MS) as i64);
    let rest = ms % DAY_MS;
    if rest == 0 {
        return format!("{y:04}-{m:02}-{d:02}");
    }
    let (h, min, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    if milli == 0 {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
    }
}

/// Seconds of the day as `HH:MM` (or `HH:MM:SS`) UTC.
pub fn format_time_of_day(s: u32) -> String {
    let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
    if sec == 0 {
        format!("{h:02}:{m:02}")
    } else {
        format!("{h:02}:{m:02}:{sec:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn const_dates_agree_with_the_calendar() {
        for days in (0..40_000).step_by(37) {
            let (y, m, d) = crate::calendar::civil_from_days(days);
            let text = format!("{y:04}-{m:02}-{d:02}");
            assert_eq!(date_ms(&text), days as u64 * DAY_MS, "{text}");
            assert_eq!(format_instant(days as u64 * DAY_MS), text);
        }
        assert_eq!(date_ms("2026-07-30"), 1_785_369_600_000);
        assert_eq!(
            date_ms("2026-04-26T12:15Z"),
            parse_instant("2026-04-26T12:15:00Z").unwrap()
        );
        assert_eq!(
            date_ms("2025-09-05T16:00:30Z"),
            parse_instant("2025-09-05T16:00:30Z").unwrap()
        );
        assert_eq!(clock_s("16:30"), 59_400);
    }

    #[test]
    fn instants_parse_in_every_accepted_form() {
        let cases: &[(&str, Result<u64, &str>)] = &[
            ("2026-07-30", Ok(1_785_369_600_000)),
            ("1785369600000", Ok(1_785_369_600_000)),
            ("2026-07-30T00:00:00Z", Ok(1_785_369_600_000)),
            ("2026-07-30T12:15:00Z", Ok(1_785_369_600_000 + 44_100_000)),
            (
                "2026-07-30T14:15:00+02:00",
                Ok(1_785_369_600_000 + 44_100_000),
            ),
            (
                "2026-07-29T22:15:00-14:00",
                Ok(1_785_369_600_000 + 44_100_000),
            ),
            ("2026-07-30t12:15:00.5z", Ok(1_785_369_600_000 + 44_100_500)),
            (
                "2026-07-30T12:15:00.123456Z",
                Ok(1_785_369_600_000 + 44_100_123),
            ),
            ("1970-01-01T00:30:00+01:00", Err("before 1970")),
            (
                "2026-02-29",
                Err("expected YYYY-MM-DD, an RFC 3339 time or epoch milliseconds"),
            ),
            (
                "2026-7-30",
                Err("expected YYYY-MM-DD, an RFC 3339 time or epoch milliseconds"),
            ),
            (
                "2026-07-30T12:15Z",
                Err("expected HH:MM:SS[.fff] and Z or ±HH:MM"),
            ),
            (
                "2026-07-30T12:15:00",
                Err("expected HH:MM:SS[.fff] and Z or ±HH:MM"),
            ),
            ("2026-07-30X12:15:00Z", Err("expected 'T' after the date")),
            (
                "99999999999999999999",
                Err("epoch milliseconds out of range"),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_instant(text), *want, "{text}");
        }
        assert_eq!(
            format_instant(1_785_369_600_000 + 44_100_000),
            "2026-07-30T12:15:00Z"
        );
        assert_eq!(
            format_instant(1_785_369_600_001),
            "2026-07-30T00:00:00.001Z"
        );
    }

    #[test]
    fn times_of_day_are_utc_seconds() {
        assert_eq!(parse_time_of_day("00:30:00Z"), Ok(1800));
        assert_eq!(parse_time_of_day("16:30:00"), Ok(59_400));
        assert_eq!(parse_time_of_day("16:30"), Ok(59_400));
        assert_eq!(parse_time_of_day("08:30:00+08:00"), Ok(1800));
        assert_eq!(parse_time_of_day("00:30:00+01:00"), Ok(DAY_S - 1800));
        assert!(parse_time_of_day("24:00:00").is_err());
        assert!(parse_time_of_day("noon").is_err());
        assert_eq!(format_time_of_day(59_400), "16:30");
        assert_eq!(format_time_of_day(59_401), "16:30:01");
    }
}
