//! Plans: a name, a monthly span quota and a rate limit; built-in defaults plus `INGEST_PLANS`.
//!
//! `INGEST_PLANS` is a comma-separated list of `name:quota[:rate[:burst]]`:
//!
//! - `quota`: spans per UTC calendar month, or `unlimited`;
//! - `rate`: spans per second for each key of the organisation, `unlimited`, or left out (or
//!   empty) for `INGEST_RATE_LIMIT_RPS`;
//! - `burst`: bucket capacity in spans; left out, it is the rate (the contract's default).
//!
//! An entry with the name of a built-in plan replaces it; the other built-ins stay.

use crate::admission::quota::MAX_QUOTA;
use crate::admission::rate::{Rate, MAX_RATE};

/// One plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    /// Spans per UTC calendar month; `None` = unlimited.
    pub monthly_spans: Option<u64>,
    /// Each key's token bucket; `None` = no rate limit.
    pub rate: Option<Rate>,
}

/// The configured plans and the one organisations without a record are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plans {
    plans: Vec<Plan>,
    default: usize,
}

/// What a built-in plan says about its rate before the default rate is known.
enum RateSpec {
    /// `INGEST_RATE_LIMIT_RPS`.
    Default,
    Limited(u32),
}

/// Built-in plans: (name, monthly quota, rate).
const BUILTIN: &[(&str, Option<u64>, RateSpec)] = &[
    ("free", Some(10_000), RateSpec::Default),
    ("pro", Some(1_000_000), RateSpec::Limited(1_000)),
    ("enterprise", None, RateSpec::Limited(10_000)),
    ("self-hosted", None, RateSpec::Default),
];

/// The plan of organisations without a record, unless `INGEST_DEFAULT_PLAN` says otherwise.
pub const DEFAULT_PLAN: &str = "self-hosted";

/// Parses `INGEST_RATE_LIMIT_RPS`: spans per second (1..=100000000) or `unlimited`.
pub fn parse_default_rate(s: &str) -> Result<Option<u32>, String> {
    parse_rate(s.trim()).map_err(|why| format!("INGEST_RATE_LIMIT_RPS {why}, got {s:?}"))
}

fn parse_rate(s: &str) -> Result<Option<u32>, String> {
    if s.eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_RATE).contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "must be spans per second from 1 to {MAX_RATE}, or \"unlimited\""
        )),
    }
}

fn resolve_rate(spec: &RateSpec, default_rate: Option<u32>) -> Option<Rate> {
    let per_second = match spec {
        RateSpec::Default => default_rate?,
        RateSpec::Limited(n) => *n,
    };
    Some(Rate {
        per_second,
        burst: per_second,
    })
}

fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Parses one `name:quota[:rate[:burst]]` entry.
fn parse_entry(entry: &str, default_rate: Option<u32>) -> Result<Plan, String> {
    let bad = |why: &str| format!("INGEST_PLANS entry {entry:?}: {why}");
    let mut fields = entry.split(':').map(str::trim);
    let name = fields.next().unwrap_or("");
    if !valid_name(name) {
        return Err(bad(
            "the plan name must be 1 to 32 of letters, digits, '-' and '_'",
        ));
    }
    let monthly_spans = match fields.next() {
        None | Some("") => return Err(bad("the monthly quota is missing (a number or unlimited)")),
        Some(q) if q.eq_ignore_ascii_case("unlimited") => None,
        Some(q) => Some(q.parse::<u64>().ok().filter(|&q| q <= MAX_QUOTA).ok_or_else(|| {
            bad(&format!(
                "the monthly quota must be a whole number of spans up to {MAX_QUOTA}, or \"unlimited\""
            ))
        })?),
    };
    let rate = match fields.next() {
        None | Some("") => resolve_rate(&RateSpec::Default, default_rate),
        Some(r) => parse_rate(r)
            .map_err(|why| bad(&format!("the rate {why}")))?
            .map(|per_second| Rate {
                per_second,
                burst: per_second,
            }),
    };
    let rate = match (fields.next(), rate) {
        // Left empty, as the rate may be: the default, the rate.
        (None | Some(""), rate) => rate,
        (Some(b), Some(rate)) => {
            let burst = b.parse::<u32>().ok().filter(|&b| b >= 1).ok_or_else(|| {
                bad("the burst must be a whole number of spans from 1 to 4294967295")
            })?;
            Some(Rate { burst, ..rate })
        }
        (Some(_), None) => return Err(bad("a burst needs a limited rate")),
    };
    if fields.next().is_some() {
        return Err(bad(
            "too many fields; the form is name:quota[:rate[:burst]]",
        ));
    }
    Ok(Plan {
        name: name.to_string(),
        monthly_spans,
        rate,
    })
}

impl Plans {
    /// The built-in plans with `spec` (`INGEST_PLANS`) applied, `default_plan`
    /// (`INGEST_DEFAULT_PLAN`) for organisations without a record, and `default_rate`
    /// (`INGEST_RATE_LIMIT_RPS`) for plans that do not set a rate. The error names the setting.
    pub fn resolve(
        spec: Option<&str>,
        default_plan: &str,
        default_rate: Option<u32>,
    ) -> Result<Plans, String> {
        let mut plans: Vec<Plan> = BUILTIN
            .iter()
            .map(|(name, monthly_spans, rate)| Plan {
                name: (*name).to_string(),
                monthly_spans: *monthly_spans,
                rate: resolve_rate(rate, default_rate),
            })
            .collect();
        let mut seen: Vec<String> = Vec::new();
        for entry in spec.unwrap_or("").split(',').map(str::trim) {
            if entry.is_empty() {
                continue;
            }
            let plan = parse_entry(entry, default_rate)?;
            if seen.contains(&plan.name) {
                return Err(format!("INGEST_PLANS names the plan {:?} twice", plan.name));
            }
            seen.push(plan.name.clone());
            match plans.iter_mut().find(|p| p.name == plan.name) {
                Some(p) => *p = plan,
                None => plans.push(plan),
            }
        }
        let default = plans
            .iter()
            .position(|p| p.name == default_plan)
            .ok_or_else(|| {
                format!(
                    "INGEST_DEFAULT_PLAN {default_plan:?} is not a plan; known plans: {}",
                    plans
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        Ok(Plans { plans, default })
    }

    pub fn get(&self, name: &str) -> Option<&Plan> {
        self.plans.iter().find(|p| p.name == name)
    }

    /// The plan of organisations without a record.
    pub fn default_plan(&self) -> &Plan {
        &self.plans[self.default]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Plan> {
        self.plans.iter()
    }

    /// The plan names, comma-separated, for error messages.
    pub fn names(&self) -> String {
        self.plans
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Plan {
    /// `name: 10000 spans/month, 100 spans/s (burst 100)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.name)?;
        match self.monthly_spans {
            Some(n) => write!(f, "{n} spans/month, ")?,
            None => write!(f, "unlimited spans/month, ")?,
        }
        match self.rate {
            Some(r) => write!(f, "{} spans/s (burst {})", r.per_second, r.burst),
            None => write!(f, "no rate limit"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_second: u32, burst: u32) -> Option<Rate> {
        Some(Rate { per_second, burst })
    }

    fn plan(name: &str, monthly_spans: Option<u64>, rate: Option<Rate>) -> Plan {
        Plan {
            name: name.into(),
            monthly_spans,
            rate,
        }
    }

    #[test]
    fn builtins_and_defaults() {
        let p = Plans::resolve(None, DEFAULT_PLAN, Some(100)).unwrap();
        assert_eq!(
            p.get("free"),
            Some(&plan("free", Some(10_000), rate(100, 100)))
        );
        assert_eq!(
            p.get("pro"),
            Some(&plan("pro", Some(1_000_000), rate(1_000, 1_000)))
        );
        assert_eq!(
            p.get("enterprise"),
            Some(&plan("enterprise", None, rate(10_000, 10_000)))
        );
        assert_eq!(p.default_plan(), &plan("self-hosted", None, rate(100, 100)));
        // INGEST_RATE_LIMIT_RPS=unlimited lifts the rate of the plans that use the default.
        let p = Plans::resolve(None, "free", None).unwrap();
        assert_eq!(p.default_plan(), &plan("free", Some(10_000), None));
        assert_eq!(p.get("pro").unwrap().rate, rate(1_000, 1_000));
    }

    #[test]
    fn ingest_plans_setting() {
        let p = Plans::resolve(
            Some(" free:500 , tiny:100:unlimited, pro:2000000:50:200,team:unlimited:, x:0:7, y:9:40:, z:9::"),
            "tiny",
            Some(100),
        )
        .unwrap();
        assert_eq!(
            p.get("free"),
            Some(&plan("free", Some(500), rate(100, 100)))
        );
        assert_eq!(p.default_plan(), &plan("tiny", Some(100), None));
        assert_eq!(
            p.get("pro"),
            Some(&plan("pro", Some(2_000_000), rate(50, 200)))
        );
        assert_eq!(p.get("team"), Some(&plan("team", None, rate(100, 100))));
        assert_eq!(p.get("x"), Some(&plan("x", Some(0), rate(7, 7))));
        // An empty burst is the default, as an empty rate is (it was refused).
        assert_eq!(p.get("y"), Some(&plan("y", Some(9), rate(40, 40))));
        assert_eq!(p.get("z"), Some(&plan("z", Some(9), rate(100, 100))));
        assert!(p.get("enterprise").is_some(), "untouched built-ins stay");
        assert_eq!(
            p.get("pro").unwrap().to_string(),
            "pro: 2000000 spans/month, 50 spans/s (burst 200)"
        );
    }

    #[test]
    fn bad_settings_name_themselves() {
        let cases: &[(&str, &str, &str)] = &[
            ("", "nope", "INGEST_DEFAULT_PLAN \"nope\" is not a plan"),
            ("a b:10", DEFAULT_PLAN, "plan name"),
            ("a", DEFAULT_PLAN, "monthly quota is missing"),
            ("a:-1", DEFAULT_PLAN, "monthly quota must be"),
            // Past what the usage counters hold: it never refused (found by an audit).
            ("a:10000000000001", DEFAULT_PLAN, "up to 10000000000000"),
            ("a:10:0", DEFAULT_PLAN, "the rate must be"),
            ("a:10:fast", DEFAULT_PLAN, "the rate must be"),
            ("a:10:100000001", DEFAULT_PLAN, "the rate must be"),
            ("a:10:5:0", DEFAULT_PLAN, "burst must be"),
            (
                "a:10:unlimited:5",
                DEFAULT_PLAN,
                "a burst needs a limited rate",
            ),
            ("a:10:5:5:5", DEFAULT_PLAN, "too many fields"),
            ("a:1,a:2", DEFAULT_PLAN, "twice"),
        ];
        for &(spec, default, want) in cases {
            let err = Plans::resolve(Some(spec), default, Some(100)).unwrap_err();
            assert!(err.contains(want), "{spec:?}: {err}");
            assert!(err.starts_with("INGEST_"), "{spec:?}: {err}");
        }
        assert_eq!(parse_default_rate("unlimited"), Ok(None));
        assert_eq!(parse_default_rate(" 250 "), Ok(Some(250)));
        assert!(parse_default_rate("0")
            .unwrap_err()
            .starts_with("INGEST_RATE_LIMIT_RPS"));
    }
}
