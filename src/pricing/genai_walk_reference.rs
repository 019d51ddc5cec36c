//! The independent side of `genai_walk_tests.rs`: genai-prices' own rules at the data set's
//! commit (47df840), written from its `types.py`, `decompose.py` and `data_units.py`, over the
//! reference JSON read by a small reader of its own (numbers kept as text). Exact amounts are
//! integers in units of 1e-30 USD; no floating point, nothing shared with the engine but the
//! `Usage` type and the built-in table's tokens per image.

use std::collections::BTreeMap;

use regex_automata::meta::Regex;

use crate::ingest::wire::Usage;
use crate::pricing::{Dimension, PriceTable, Source};

// ---------------------------------------------------------------------------------------------
// A JSON reader that keeps numbers as their text.

#[derive(Debug)]
pub(super) enum J {
    Null,
    Bool,
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub(super) fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub(super) fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            other => panic!("expected a string, got {other:?}"),
        }
    }
    pub(super) fn arr(&self) -> &[J] {
        match self {
            J::Arr(a) => a,
            other => panic!("expected an array, got {other:?}"),
        }
    }
    pub(super) fn obj(&self) -> &[(String, J)] {
        match self {
            J::Obj(m) => m,
            other => panic!("expected an object, got {other:?}"),
        }
    }
}

pub(super) struct Reader<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

impl Reader<'_> {
    pub(super) fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    pub(super) fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.b[self.i], c, "at byte {}", self.i);
        self.i += 1;
    }
    pub(super) fn value(&mut self) -> J {
        self.ws();
        match self.b[self.i] {
            b'{' => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.b[self.i] == b'}' {
                    self.i += 1;
                    return J::Obj(m);
                }
                loop {
                    self.ws();
                    let J::Str(k) = self.value() else {
                        panic!("key at {}", self.i)
                    };
                    self.eat(b':');
                    m.push((k, self.value()));
                    self.ws();
                    self.i += 1;
                    if self.b[self.i - 1] == b'}' {
                        return J::Obj(m);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.b[self.i] == b']' {
                    self.i += 1;
                    return J::Arr(a);
                }
                loop {
                    a.push(self.value());
                    self.ws();
                    self.i += 1;
                    if self.b[self.i - 1] == b']' {
                        return J::Arr(a);
                    }
                }
            }
            b'"' => {
                self.i += 1;
                let mut s = String::new();
                loop {
                    let c = self.b[self.i];
                    self.i += 1;
                    match c {
                        b'"' => return J::Str(s),
                        b'\\' => {
                            let e = self.b[self.i];
                            self.i += 1;
                            match e {
                                b'n' => s.push('\n'),
                                b't' => s.push('\t'),
                                b'r' => s.push('\r'),
                                b'u' => {
                                    let hex =
                                        std::str::from_utf8(&self.b[self.i..self.i + 4]).unwrap();
                                    self.i += 4;
                                    let c = u32::from_str_radix(hex, 16).unwrap();
                                    s.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                                }
                                other => s.push(other as char),
                            }
                        }
                        _ => {
                            // Copy a whole UTF-8 sequence.
                            let start = self.i - 1;
                            let mut end = self.i;
                            while end < self.b.len() && (self.b[end] & 0xC0) == 0x80 {
                                end += 1;
                            }
                            s.push_str(std::str::from_utf8(&self.b[start..end]).unwrap());
                            self.i = end;
                        }
                    }
                }
            }
            b't' | b'f' | b'n' => {
                let word = if self.b[self.i] == b'f' { 5 } else { 4 };
                let j = if self.b[self.i] == b'n' {
                    J::Null
                } else {
                    J::Bool
                };
                self.i += word;
                j
            }
            _ => {
                let start = self.i;
                while self.i < self.b.len() && b"+-0123456789.eE".contains(&self.b[self.i]) {
                    self.i += 1;
                }
                J::Num(String::from_utf8(self.b[start..self.i].to_vec()).unwrap())
            }
        }
    }
}

pub(super) fn read_json(text: &str) -> J {
    Reader {
        b: text.as_bytes(),
        i: 0,
    }
    .value()
}

// ---------------------------------------------------------------------------------------------
// Exact amounts: u128 in units of 1e-30 USD.

pub(super) const E30: u32 = 30;

/// A JSON number's text (a plain decimal) as USD per `per` units -> 1e-30 USD per unit.
pub(super) fn per_unit(text: &str, per: u128) -> u128 {
    assert!(
        !text.contains(['e', 'E', '-']),
        "{text}: not a plain decimal"
    );
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let mantissa: u128 = format!("{int}{frac}").parse().unwrap();
    let scale = frac.len() as u32;
    let v = mantissa * 10u128.pow(E30 - scale);
    assert_eq!(v % per, 0, "{text} per {per} is finer than 1e-30");
    v / per
}

/// 1e-30 USD -> 1e-10 USD, half-up.
pub(super) fn round_1e10(v: u128) -> i64 {
    ((v + 5 * 10u128.pow(19)) / 10u128.pow(20)) as i64
}

// ---------------------------------------------------------------------------------------------
// genai-prices' units (`data_units.py`) for every price key the data set uses.

pub(super) struct Unit {
    pub(super) price_key: &'static str,
    pub(super) usage_key: &'static str,
    pub(super) per: u128,
    pub(super) dims: &'static [(&'static str, &'static str)],
}

pub(super) const UNITS: &[Unit] = &[
    unit("input_mtok", "input_tokens", &[("direction", "input")]),
    unit("output_mtok", "output_tokens", &[("direction", "output")]),
    unit(
        "cache_read_mtok",
        "cache_read_tokens",
        &[("direction", "input"), ("token_type", "cache_read")],
    ),
    unit(
        "cache_write_mtok",
        "cache_write_tokens",
        &[("direction", "input"), ("token_type", "cache_write")],
    ),
    unit(
        "cache_write_1h_mtok",
        "cache_write_1h_tokens",
        &[
            ("direction", "input"),
            ("token_type", "cache_write"),
            ("cache_ttl", "1h"),
        ],
    ),
    unit(
        "input_audio_mtok",
        "input_audio_tokens",
        &[("direction", "input"), ("modality", "audio")],
    ),
    unit(
        "output_audio_mtok",
        "output_audio_tokens",
        &[("direction", "output"), ("modality", "audio")],
    ),
    unit(
        "cache_audio_read_mtok",
        "cache_audio_read_tokens",
        &[
            ("direction", "input"),
            ("modality", "audio"),
            ("token_type", "cache_read"),
        ],
    ),
    unit(
        "input_image_mtok",
        "input_image_tokens",
        &[("direction", "input"), ("modality", "image")],
    ),
    unit(
        "cache_image_read_mtok",
        "cache_image_read_tokens",
        &[
            ("direction", "input"),
            ("modality", "image"),
            ("token_type", "cache_read"),
        ],
    ),
    unit(
        "output_image_mtok",
        "output_image_tokens",
        &[("direction", "output"), ("modality", "image")],
    ),
    unit(
        "input_video_mtok",
        "input_video_tokens",
        &[("direction", "input"), ("modality", "video")],
    ),
    unit(
        "output_video_mtok",
        "output_video_tokens",
        &[("direction", "output"), ("modality", "video")],
    ),
    unit(
        "output_reasoning_mtok",
        "output_reasoning_tokens",
        &[("direction", "output"), ("token_type", "reasoning")],
    ),
    unit(
        "output_citation_mtok",
        "output_citation_tokens",
        &[("direction", "output"), ("token_type", "citation")],
    ),
    Unit {
        price_key: "requests_kcount",
        usage_key: "requests",
        per: 1000,
        dims: &[("family", "requests")],
    },
    Unit {
        price_key: "web_searches_kcount",
        usage_key: "web_searches",
        per: 1000,
        dims: &[("family", "tool_calls"), ("tool_type", "web_search")],
    },
];

/// A token unit (family `tokens`, per 1M).
pub(super) const fn unit(
    price_key: &'static str,
    usage_key: &'static str,
    dims: &'static [(&'static str, &'static str)],
) -> Unit {
    Unit {
        price_key,
        usage_key,
        per: 1_000_000,
        dims,
    }
}

impl Unit {
    pub(super) fn family(&self) -> &str {
        self.dims
            .iter()
            .find(|(k, _)| *k == "family")
            .map_or("tokens", |d| d.1)
    }
    /// `self` is `other` or an ancestor of it: its dimensions are a subset of `other`'s.
    pub(super) fn covers(&self, other: &Unit) -> bool {
        self.family() == other.family() && self.dims.iter().all(|d| other.dims.contains(d))
    }
}

pub(super) fn unit_of(price_key: &str) -> &'static Unit {
    UNITS
        .iter()
        .find(|u| u.price_key == price_key)
        .unwrap_or_else(|| panic!("price key {price_key} unknown to this test: add its unit"))
}

/// One price field: base and (start, price) tiers, in 1e-30 USD per unit.
pub(super) struct FieldPrice {
    pub(super) base: u128,
    pub(super) tiers: Vec<(u64, u128)>,
}

impl FieldPrice {
    /// genai-prices' `calc_unit_price`: the highest tier whose start the call's input tokens
    /// are strictly above prices every unit of the field.
    pub(super) fn at(&self, total_input: u64) -> u128 {
        self.tiers
            .iter()
            .rev()
            .find(|(start, _)| total_input > *start)
            .map_or(self.base, |t| t.1)
    }
}

/// One genai-prices price object.
pub(super) struct PriceObject {
    pub(super) fields: BTreeMap<&'static str, FieldPrice>,
}

impl PriceObject {
    pub(super) fn read(j: &J) -> PriceObject {
        let mut fields = BTreeMap::new();
        for (k, v) in j.obj() {
            if matches!(v, J::Null) {
                continue;
            }
            let u = unit_of(k);
            let price = match v {
                J::Num(n) => FieldPrice {
                    base: per_unit(n, u.per),
                    tiers: Vec::new(),
                },
                J::Obj(_) => {
                    let num = |j: &J| match j {
                        J::Num(n) => n.clone(),
                        other => panic!("{other:?}"),
                    };
                    let mut tiers: Vec<(u64, u128)> = v
                        .get("tiers")
                        .unwrap()
                        .arr()
                        .iter()
                        .map(|t| {
                            (
                                num(t.get("start").unwrap()).parse().unwrap(),
                                per_unit(&num(t.get("price").unwrap()), u.per),
                            )
                        })
                        .collect();
                    tiers.sort_by_key(|t| t.0);
                    FieldPrice {
                        base: per_unit(&num(v.get("base").unwrap()), u.per),
                        tiers,
                    }
                }
                other => panic!("{k}: {other:?}"),
            };
            fields.insert(u.price_key, price);
        }
        PriceObject { fields }
    }

    pub(super) fn tier_starts(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self
            .fields
            .values()
            .flat_map(|f| f.tiers.iter().map(|t| t.0))
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    }

    /// genai-prices' total for a usage, exactly: the leaf count of each priced unit (its
    /// usage minus the leaves of its priced descendants, `compute_leaf_values`) at the
    /// field's price for the call's input tokens; requests count 1.
    pub(super) fn genai_total(&self, usage: &BTreeMap<&str, u64>) -> u128 {
        let value = |k: &str| usage.get(k).copied().unwrap_or(0);
        let mut priced: Vec<&Unit> = self.fields.keys().map(|k| unit_of(k)).collect();
        priced.sort_by_key(|u| (std::cmp::Reverse(u.dims.len()), u.usage_key));
        let mut leaves: BTreeMap<&str, u64> = BTreeMap::new();
        for u in &priced {
            if u.usage_key == "requests" {
                leaves.insert("requests", 1);
                continue;
            }
            let below: u64 = priced
                .iter()
                .filter(|d| d.usage_key != u.usage_key && u.covers(d))
                .map(|d| leaves[d.usage_key])
                .sum();
            let leaf = value(u.usage_key)
                .checked_sub(below)
                .expect("a usage genai-prices refuses");
            leaves.insert(u.usage_key, leaf);
        }
        let total_input = value("input_tokens");
        priced
            .iter()
            .map(|u| self.fields[u.price_key].at(total_input) * u128::from(leaves[u.usage_key]))
            .sum()
    }

    /// The contract's cost columns (`Dimension` order), exact: the v1 counts of the contract
    /// at the fields this project bills (`docs/pricing-file.md`, section 2). `images` x
    /// `image_tokens` output tokens are images.
    pub(super) fn contract_columns(&self, u: &Mix, image_tokens: u64) -> [Option<u128>; 8] {
        let total_input = u.input + u.cache_write;
        let price = |k: &str| self.fields.get(k).map(|f| f.at(total_input));
        let input = price("input_mtok");
        let reasoning = price("output_reasoning_mtok");
        let image = price("output_image_mtok").filter(|_| image_tokens > 0);
        let image_out = u.images * image_tokens;
        let text_out = u.output - if image.is_some() { image_out } else { 0 };
        let completion_count = text_out - if reasoning.is_some() { u.reasoning } else { 0 };
        let col = |p: Option<u128>, n: u64| p.filter(|_| n > 0).map(|p| p * u128::from(n));
        let mut c = [None; 8];
        c[Dimension::Prompt as usize] = col(input, u.input - u.cached);
        c[Dimension::Completion as usize] = col(price("output_mtok"), completion_count);
        c[Dimension::Request as usize] = col(price("requests_kcount"), 1);
        c[Dimension::Image as usize] = col(image.map(|p| p * u128::from(image_tokens)), u.images);
        c[Dimension::WebSearch as usize] = col(price("web_searches_kcount"), u.searches);
        c[Dimension::InternalReasoning as usize] = col(reasoning, u.reasoning);
        c[Dimension::CacheRead as usize] = col(price("cache_read_mtok").or(input), u.cached);
        c[Dimension::CacheWrite as usize] = col(price("cache_write_mtok").or(input), u.cache_write);
        c
    }

    /// True when this project bills one of its fields (else the model is left out).
    pub(super) fn billed(&self, image_tokens: u64) -> bool {
        self.fields.keys().any(|k| {
            matches!(
                *k,
                "input_mtok"
                    | "output_mtok"
                    | "cache_read_mtok"
                    | "cache_write_mtok"
                    | "output_reasoning_mtok"
                    | "requests_kcount"
                    | "web_searches_kcount"
            ) || (*k == "output_image_mtok" && image_tokens > 0)
        }) || self.fields.is_empty()
    }
}

/// A v1 usage.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mix {
    /// inputTokens, including the cached part.
    pub(super) input: u64,
    pub(super) cached: u64,
    pub(super) cache_write: u64,
    pub(super) output: u64,
    pub(super) reasoning: u64,
    pub(super) searches: u64,
    pub(super) images: u64,
}

impl Mix {
    pub(super) fn usage(&self) -> Usage {
        Usage {
            input_tokens: Some(self.input),
            cached_input_tokens: Some(self.cached),
            cache_write_input_tokens: Some(self.cache_write),
            output_tokens: Some(self.output),
            reasoning_tokens: Some(self.reasoning),
            web_search_count: Some(self.searches),
            image_count: Some(self.images),
            ..Usage::default()
        }
    }

    /// The same call as genai-prices' usage keys: its `input_tokens` counts every input
    /// token, cache writes included.
    pub(super) fn genai(&self, image_tokens: u64) -> BTreeMap<&'static str, u64> {
        BTreeMap::from([
            ("input_tokens", self.input + self.cache_write),
            ("cache_read_tokens", self.cached),
            ("cache_write_tokens", self.cache_write),
            ("output_tokens", self.output),
            ("output_reasoning_tokens", self.reasoning),
            ("output_image_tokens", self.images * image_tokens),
            ("web_searches", self.searches),
        ])
    }
}

// ---------------------------------------------------------------------------------------------
// Conditional prices and instants (UTC, epoch milliseconds).

pub(super) const DAY_MS: u64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (counting days, no formula shared
/// with the engine).
pub(super) fn days(date: &str) -> u64 {
    let p: Vec<u64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (y, m, d) = (p[0], p[1], p[2]);
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let mut n: u64 = (1970..y).map(|y| if leap(y) { 366 } else { 365 }).sum();
    let month = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    n += (1..m)
        .map(|m| month[m as usize - 1] + u64::from(m == 2 && leap(y)))
        .sum::<u64>();
    n + d - 1
}

/// `HH:MM:SS` with `Z` (the only offset the data set uses) -> ms after midnight UTC.
pub(super) fn time_of_day(t: &str) -> u64 {
    let t = t
        .strip_suffix('Z')
        .or_else(|| t.strip_suffix("+00:00"))
        .unwrap_or_else(|| panic!("{t}: an offset this test does not handle"));
    let p: Vec<u64> = t.split(':').map(|x| x.parse().unwrap()).collect();
    (p[0] * 3600 + p[1] * 60 + p.get(2).copied().unwrap_or(0)) * 1000
}

pub(super) enum Constraint {
    None,
    /// From this day's 00:00 UTC (`request_timestamp.date() >= start_date`).
    StartDay(u64),
    /// `start <= time of day < end`, ms after midnight.
    Daily(u64, u64),
}

impl Constraint {
    pub(super) fn active(&self, at: u64) -> bool {
        match *self {
            Constraint::None => true,
            Constraint::StartDay(d) => at / DAY_MS >= d,
            Constraint::Daily(a, b) => a <= at % DAY_MS && at % DAY_MS < b,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Match rules and genai-prices' `find_provider_model`.

pub(super) enum Rule {
    Equals(String),
    StartsWith(String),
    EndsWith(String),
    Contains(String),
    Regex(Regex, String),
    Or(Vec<Rule>),
    And(Vec<Rule>),
}

impl Rule {
    /// Literals are kept lower-cased: genai-prices compares both sides lower-cased.
    pub(super) fn read(j: &J) -> Rule {
        let [(k, v)] = j.obj() else {
            panic!("a clause has one key")
        };
        let lit = || v.str().to_lowercase();
        match k.as_str() {
            "equals" => Rule::Equals(lit()),
            "starts_with" => Rule::StartsWith(lit()),
            "ends_with" => Rule::EndsWith(lit()),
            "contains" => Rule::Contains(lit()),
            "regex" => Rule::Regex(Regex::new(v.str()).unwrap(), v.str().into()),
            "or" => Rule::Or(v.arr().iter().map(Rule::read).collect()),
            "and" => Rule::And(v.arr().iter().map(Rule::read).collect()),
            other => panic!("clause {other}"),
        }
    }

    /// The clauses of `types.py` on a lower-cased text (`find_model` and
    /// `find_provider_by_id` lower-case it): literals compared lower-cased, a regex searched
    /// as written.
    pub(super) fn is_match(&self, t: &str) -> bool {
        match self {
            Rule::Equals(p) => t == p,
            Rule::StartsWith(p) => t.starts_with(p.as_str()),
            Rule::EndsWith(p) => t.ends_with(p.as_str()),
            Rule::Contains(p) => t.contains(p.as_str()),
            Rule::Regex(re, _) => re.is_match(t),
            Rule::Or(rs) => rs.iter().any(|r| r.is_match(t)),
            Rule::And(rs) => rs.iter().all(|r| r.is_match(t)),
        }
    }

    /// Texts this rule should match: its literals (with a suffix or prefix where the rule
    /// allows one), a sample of each simple regex; an `and` joins its parts.
    pub(super) fn samples(&self, out: &mut Vec<String>) {
        match self {
            Rule::Equals(p) => out.push(p.clone()),
            Rule::StartsWith(p) => out.extend([p.clone(), format!("{p}-x1")]),
            Rule::EndsWith(p) => out.extend([p.clone(), format!("x1-{p}")]),
            Rule::Contains(p) => out.extend([p.clone(), format!("x1/{p}-y")]),
            Rule::Regex(_, pattern) => out.extend(regex_sample(pattern)),
            Rule::Or(rs) => rs.iter().for_each(|r| r.samples(out)),
            Rule::And(rs) => {
                let mut parts = Vec::new();
                rs.iter().for_each(|r| r.samples(&mut parts));
                out.push(parts.join("-"));
            }
        }
    }
}

/// A text a simple regex (anchors, `\.`, `\d`, `\d{n}`, literals) matches; `None` for others.
pub(super) fn regex_sample(pattern: &str) -> Option<String> {
    let mut out = String::new();
    let mut cs = pattern.chars().peekable();
    while let Some(c) = cs.next() {
        match c {
            '^' | '$' => {}
            '\\' => match cs.next()? {
                'd' => {
                    let mut n = 1;
                    if cs.peek() == Some(&'{') {
                        cs.next();
                        let num: String = cs.by_ref().take_while(|c| *c != '}').collect();
                        n = num.parse().ok()?;
                    }
                    out.push_str(&"2".repeat(n));
                }
                '.' => out.push('.'),
                _ => return None,
            },
            c if c.is_ascii_alphanumeric() || "-_/:@".contains(c) => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

pub(super) struct RefModel {
    pub(super) id: String,
    pub(super) rule: Rule,
    pub(super) entries: Vec<(Constraint, PriceObject)>,
    /// Output tokens per image the engine takes from its built-in model of the same id.
    pub(super) image_tokens: u64,
    /// The engine's model for it (`None`: left out, as documented).
    pub(super) engine: Option<usize>,
}

pub(super) struct RefProvider {
    pub(super) id: String,
    pub(super) provider_match: Option<Rule>,
    pub(super) model_match: Option<Rule>,
    pub(super) fallback: Vec<String>,
    pub(super) models: Vec<RefModel>,
}

/// genai-prices' `find_provider_model`: the provider by id, else by `provider_match`, else
/// (no provider given) by `model_match`; in it the first model that matches, else one step
/// into its fallback providers. (provider index, model index); `None` = a LookupError.
pub(super) fn genai_find(
    ps: &[RefProvider],
    provider: Option<&str>,
    model: &str,
) -> Option<(usize, usize)> {
    let model = model.to_lowercase();
    let p = match provider {
        Some(id) => {
            let id = id.trim().to_lowercase();
            ps.iter().position(|p| p.id == id).or_else(|| {
                ps.iter()
                    .position(|p| p.provider_match.as_ref().is_some_and(|r| r.is_match(&id)))
            })?
        }
        None => ps
            .iter()
            .position(|p| p.model_match.as_ref().is_some_and(|r| r.is_match(&model)))?,
    };
    let first = |p: usize| ps[p].models.iter().position(|m| m.rule.is_match(&model));
    first(p).map(|m| (p, m)).or_else(|| {
        ps[p].fallback.iter().find_map(|f| {
            let fp = ps.iter().position(|x| &x.id == f)?;
            first(fp).map(|m| (fp, m))
        })
    })
}

pub(super) fn read_reference(root: &J, table: &PriceTable) -> Vec<RefProvider> {
    let builtin = PriceTable::builtin();
    let file_models: Vec<usize> = (0..table.models().len())
        .filter(|&i| table.models()[i].source == Source::File)
        .collect();
    let mut next = 0;
    let mut out = Vec::new();
    for p in root.arr() {
        let pid = p.get("id").unwrap().str().to_string();
        let mut models = Vec::new();
        for m in p.get("models").unwrap().arr() {
            let id = m.get("id").unwrap().str().to_string();
            let entries: Vec<(Constraint, PriceObject)> = match m.get("prices").unwrap() {
                J::Arr(list) => list
                    .iter()
                    .map(|e| {
                        let c = match e.get("constraint") {
                            None | Some(J::Null) => Constraint::None,
                            Some(c) => match c.get("start_date") {
                                Some(d) => Constraint::StartDay(days(d.str())),
                                None => Constraint::Daily(
                                    time_of_day(c.get("start_time").unwrap().str()),
                                    time_of_day(c.get("end_time").unwrap().str()),
                                ),
                            },
                        };
                        (c, PriceObject::read(e.get("prices").unwrap()))
                    })
                    .collect(),
                prices => vec![(Constraint::None, PriceObject::read(prices))],
            };
            let image_tokens = builtin
                .find(Some(&pid), &id)
                .map_or(0, |b| u64::from(b.latest().prices.base.image_tokens()));
            let kept = entries.iter().any(|(_, o)| o.billed(image_tokens));
            let engine = kept.then(|| {
                next += 1;
                file_models[next - 1]
            });
            if let Some(i) = engine {
                assert_eq!(table.models()[i].id, format!("{}/{id}", pid.to_lowercase()));
            }
            models.push(RefModel {
                id,
                rule: Rule::read(m.get("match").unwrap()),
                entries,
                image_tokens,
                engine,
            });
        }
        out.push(RefProvider {
            id: pid.to_lowercase(),
            provider_match: p.get("provider_match").map(Rule::read),
            model_match: p.get("model_match").map(Rule::read),
            fallback: p.get("fallback_model_providers").map_or(Vec::new(), |f| {
                f.arr().iter().map(|x| x.str().to_lowercase()).collect()
            }),
            models,
        });
    }
    assert_eq!(next, file_models.len(), "models left out differ");
    out
}
