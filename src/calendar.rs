//! UTC calendar arithmetic: days since the epoch <-> dates, and the calendar months quotas run on.
//!
//! Pure integer functions (H. Hinnant's algorithms, proleptic Gregorian), so the request path
//! can find the current month with a handful of operations and tests can pin any instant.

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 -> (year, month 1..=12, day 1..=31).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month 1..=12, day 1..=31) -> days since 1970-01-01.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A UTC calendar month, counted from January 1970 (= 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month(pub u32);

impl Month {
    /// The month an instant (Unix milliseconds) falls in. Instants before 1970 are January 1970.
    pub fn of_ms(ms: u64) -> Month {
        let (y, m, _) = civil_from_days(ms as i64 / DAY_MS);
        Month(((y - 1970) * 12 + i64::from(m) - 1).max(0) as u32)
    }

    /// Year and month 1..=12.
    pub fn year_month(self) -> (i64, u32) {
        (1970 + i64::from(self.0 / 12), self.0 % 12 + 1)
    }

    /// Unix seconds of the first instant of the month.
    pub fn start_s(self) -> i64 {
        let (y, m) = self.year_month();
        days_from_civil(y, m, 1) * 86_400
    }

    /// Unix seconds of the first instant of the next month.
    pub fn end_s(self) -> i64 {
        Month(self.0 + 1).start_s()
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m) = self.year_month();
        write!(f, "{y:04}-{m:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip() {
        for z in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
    }

    #[test]
    fn months() {
        // (instant in ms, month as text, start of that month in s)
        let cases: &[(u64, &str, i64)] = &[
            (0, "1970-01", 0),
            (1_700_000_000_000, "2023-11", 1_698_796_800),
            // The last millisecond of February 2024 (a leap year) and the first of March.
            (1_709_251_199_999, "2024-02", 1_706_745_600),
            (1_709_251_200_000, "2024-03", 1_709_251_200),
            // New Year.
            (1_735_689_599_999, "2024-12", 1_733_011_200),
            (1_735_689_600_000, "2025-01", 1_735_689_600),
        ];
        for &(ms, text, start) in cases {
            let m = Month::of_ms(ms);
            assert_eq!(m.to_string(), text, "{ms}");
            assert_eq!(m.start_s(), start, "{ms}");
            assert!(m.start_s() * 1000 <= ms as i64 && (ms as i64) < m.end_s() * 1000);
        }
        assert_eq!(Month(11).end_s(), Month(12).start_s());
        assert_eq!(Month(12).to_string(), "1971-01");
    }
}
