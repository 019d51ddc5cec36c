//! The genai-prices `v2` data set (pydantic/genai-prices `data.json`, MIT) as a pricing file,
//! read as published: providers with match rules, models with match rules, prices as one
//! object or as a list of conditional prices (start dates, daily windows), token tiers and
//! per-request prices. `docs/pricing-file.md` describes what is read and how a span is matched.
//!
//! What genai-prices means is kept: prices are USD per 1M tokens or per 1000 requests and
//! searches, converted exactly from the numbers' text; a tier prices the whole call when the
//! input tokens are strictly above its start; the last conditional price whose constraint holds
//! wins, else the first; cached and cache-write tokens of a model that has no price for them are
//! billed at its input price (genai-prices counts them as input).
//!
//! genai-prices' price fields nest: `input_text_mtok` prices a part of `input_mtok`'s tokens,
//! `cache_write_5m_mtok` a part of `cache_write_mtok`'s, and so on; a part's price applies to
//! the tokens the usage reports for that part, the rest stays at the whole's price. The v1
//! usage reports the wholes only (input, cached, cache-write, output and reasoning tokens), so
//! a whole's field prices its dimension, and a part's field does only where the whole's is
//! absent (`FIELDS`, in order of preference). Output image tokens are kept apart from text
//! output when the built-in model of the same id says how many output tokens an image takes
//! (`imageCount` times that, at `output_image_mtok`, into `image_cost`). Every other field (a
//! part the whole's price already covers, audio and video tokens, 1-hour cache writes,
//! characters, pages, ...) is reported once at load, naming the model, the field and how its
//! tokens are billed instead; a model that has nothing else is left out (its spans stay
//! unpriced rather than priced at 0).

use std::collections::BTreeSet;

use regex_automata::meta::Regex;
use regex_automata::Input;

use super::file::{Cx, PricingFileError};
use super::instant::{parse_file_instant, parse_time_of_day};
use super::json::{Node, Value};
use super::matching;
use super::money::Price;
use super::rates::{Dimension, Rates};
use super::schedule::{check_periods, Period, PriceSet, Tier, Window};
use super::table::{ModelPrice, PriceTable, Source};

/// What a genai-prices file yields: the models (in file order), the rules that find them, and
/// what could not be represented.
#[derive(Debug)]
pub(crate) struct GenaiFile {
    pub models: Vec<ModelPrice>,
    pub rules: Rules,
    pub notes: Vec<String>,
}

/// The providers' and models' match rules, in file order; model numbers index
/// [`GenaiFile::models`] (plus `offset` once merged into a table).
#[derive(Debug, Default)]
pub(crate) struct Rules {
    providers: Vec<Provider>,
    /// Where this file's models start in the table's model list.
    pub offset: u32,
}

#[derive(Debug)]
struct Provider {
    /// Lower case.
    id: String,
    provider_match: Option<Clause>,
    model_match: Option<Clause>,
    /// Indexes into `Rules::providers`: where to look when no model of this one matches.
    fallback: Vec<usize>,
    /// (rule, model number); a model left out has no entry.
    models: Vec<(Clause, u32)>,
}

/// A genai-prices match clause. Literal patterns are kept lower case, as genai-prices compares
/// them case-insensitively; a regex runs on the lower-cased text.
#[derive(Debug)]
enum Clause {
    Equals(String),
    StartsWith(String),
    EndsWith(String),
    Contains(String),
    Regex(Box<Regex>),
    Or(Vec<Clause>),
    And(Vec<Clause>),
}

impl Clause {
    /// `text` is lower case.
    fn is_match(&self, text: &str) -> bool {
        match self {
            Clause::Equals(p) => text == p,
            Clause::StartsWith(p) => text.starts_with(p.as_str()),
            Clause::EndsWith(p) => text.ends_with(p.as_str()),
            Clause::Contains(p) => text.contains(p.as_str()),
            // Python's `re.search`: anywhere in the text. A cache per search keeps this free of
            // the shared pool (and its lock); it runs only on a match-cache miss.
            Clause::Regex(re) => re
                .search_half_with(&mut re.create_cache(), &Input::new(text))
                .is_some(),
            Clause::Or(cs) => cs.iter().any(|c| c.is_match(text)),
            Clause::And(cs) => cs.iter().all(|c| c.is_match(text)),
        }
    }
}

impl Rules {
    /// The model a span's (provider, modelId) names in this file, as a table index:
    ///
    /// 1. with a provider: the file's provider whose `id` is the provider (or its first
    ///    dot-segment), else the first whose `provider_match` matches it; in it, the first model
    ///    whose `match` matches the modelId, else the same in its `fallback_model_providers`
    ///    (a dot-segment's provider without the model: then the `provider_match` one);
    /// 2. else (no provider, one the file does not know, or no model of it matched): the first
    ///    provider whose `model_match` matches the modelId, searched the same way;
    /// 3. else the (vendor, model) pairs this project reads from the ids (`openai/gpt-4o`,
    ///    Bedrock ids, `azure` -> `openai`, ...), each looked up as in 1.
    ///
    /// LiteLLM's convention is kept: provider `litellm` with `x/model` means provider `x`.
    pub fn find(&self, provider: Option<&str>, model_id: &str) -> Option<u32> {
        let mut model = model_id.trim().to_lowercase();
        if model.is_empty() {
            return None;
        }
        let mut provider = provider.map(|p| p.trim().to_lowercase());
        if provider.as_deref() == Some("litellm") {
            if let Some((p, rest)) = model.split_once('/') {
                if !self.providers_named(p).is_empty() {
                    let (p, rest) = (p.to_string(), rest.to_string());
                    provider = Some(p);
                    model = rest;
                }
            }
        }
        let found = provider
            .as_deref()
            .and_then(|p| {
                (self.providers_named(p).into_iter()).find_map(|i| self.model_in(i, &model, true))
            })
            .or_else(|| {
                self.providers
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.model_match.as_ref().is_some_and(|c| c.is_match(&model)))
                    .find_map(|(i, _)| self.model_in(i, &model, true))
            })
            .or_else(|| {
                matching::bases(provider.as_deref(), &model)
                    .iter()
                    .find_map(|(prefix, name)| {
                        self.model_in(*self.providers_named(prefix).first()?, name, true)
                    })
            })?;
        Some(self.offset + found)
    }

    /// The providers a provider id names, in order: the one whose `id` is the whole id; else
    /// the one its first dot-segment names, then the first whose `provider_match` matches the
    /// whole id (genai-prices' provider: `groq.openai` is `openai` there, so a dot-segment
    /// naming a provider without the model must not hide it).
    fn providers_named(&self, id: &str) -> Vec<usize> {
        let by_id = |x: &str| self.providers.iter().position(|p| p.id == x);
        if let Some(i) = by_id(id) {
            return vec![i];
        }
        let seg = id.split('.').next().unwrap_or(id);
        let by_match = (self.providers.iter())
            .position(|p| p.provider_match.as_ref().is_some_and(|c| c.is_match(id)));
        let mut found: Vec<usize> = by_id(seg).into_iter().chain(by_match).collect();
        found.dedup();
        found
    }

    /// The first model of provider `p` whose rule matches; then, once, its fallbacks.
    fn model_in(&self, p: usize, model: &str, fallback: bool) -> Option<u32> {
        let prov = &self.providers[p];
        prov.models
            .iter()
            .find(|(c, _)| c.is_match(model))
            .map(|&(_, m)| m)
            .or_else(|| {
                fallback
                    .then(|| {
                        prov.fallback
                            .iter()
                            .find_map(|&f| self.model_in(f, model, false))
                    })
                    .flatten()
            })
    }
}

/// True for a document that looks like genai-prices `data.json`: an array of providers, each
/// an object with `id` and `models`.
pub(crate) fn detect(root: &Node) -> bool {
    let Value::Array(items) = &root.value else {
        return false;
    };
    !items.is_empty()
        && items.iter().all(|p| {
            matches!(p.value, Value::Object(_))
                && p.get("id").is_some()
                && p.get("models").is_some()
        })
}

/// Price fields this project bills: (field, dimension, decimal places to shift: per 1M -> 6,
/// per 1000 -> 3). Where several fields give one dimension, the first the price object has
/// prices it: the whole (`input_mtok`) before its text part (`input_text_mtok`), which prices
/// the v1 counts only in a file that lacks the whole. `output_image_mtok` is read apart
/// (`IMAGE_OUTPUT`).
const FIELDS: [(&str, Dimension, u8); 14] = [
    ("input_mtok", Dimension::Prompt, 6),
    ("input_text_mtok", Dimension::Prompt, 6),
    ("output_mtok", Dimension::Completion, 6),
    ("output_text_mtok", Dimension::Completion, 6),
    ("cache_read_mtok", Dimension::CacheRead, 6),
    ("cache_text_read_mtok", Dimension::CacheRead, 6),
    ("cache_write_mtok", Dimension::CacheWrite, 6),
    ("cache_write_5m_mtok", Dimension::CacheWrite, 6),
    ("cache_text_write_mtok", Dimension::CacheWrite, 6),
    ("cache_text_write_5m_mtok", Dimension::CacheWrite, 6),
    ("output_reasoning_mtok", Dimension::InternalReasoning, 6),
    (
        "output_text_reasoning_mtok",
        Dimension::InternalReasoning,
        6,
    ),
    ("requests_kcount", Dimension::Request, 3),
    ("web_searches_kcount", Dimension::WebSearch, 3),
];

/// USD per 1M output image tokens: billed per image (`imageCount`) when the output tokens an
/// image takes are known, else inside the output tokens at the output price (reported).
const IMAGE_OUTPUT: &str = "output_image_mtok";

/// How the tokens of a price field this project does not bill are billed instead, for the
/// load report. `reasoning`: the model has a reasoning price.
fn consequence(field: &str, reasoning: bool) -> &'static str {
    let has = |part: &str| field.contains(part);
    if !field.ends_with("_mtok") {
        "the usage has no count for it: not billed"
    } else if field.starts_with("cache_") && has("read") {
        "counted in cachedInputTokens: billed as cached input"
    } else if field.starts_with("cache_") && has("write") {
        "counted in cacheWriteInputTokens: billed as cache writes"
    } else if field.starts_with("input_") {
        "counted in inputTokens: billed as input"
    } else if field == IMAGE_OUTPUT {
        "no built-in model of this id gives the output tokens per image: image tokens billed \
         as output"
    } else if has("reasoning") && reasoning {
        "counted in reasoningTokens: billed as reasoning"
    } else if field.starts_with("output_") {
        "counted in outputTokens: billed as output"
    } else {
        "the usage has no count for it: not billed"
    }
}

/// What reading one model's prices needs besides the prices, and what it finds.
struct ModelCx {
    /// Output tokens per generated image, from the built-in model of the same id; `None`:
    /// image output cannot be kept apart from text output.
    image_tokens: Option<u32>,
    /// Price fields not billed here, for the load report.
    unbilled: BTreeSet<String>,
}

/// True when a model's `prices` (one object or a list of conditional prices) give `field`.
fn gives(prices: &Node, field: &str) -> bool {
    match &prices.value {
        Value::Array(list) => list
            .iter()
            .any(|e| e.get("prices").is_some_and(|p| p.get(field).is_some())),
        _ => prices.get(field).is_some(),
    }
}

/// Reads a genai-prices `v2` document. `builtin` is the built-in table, for the output tokens
/// per image of image-generating models.
pub(crate) fn parse(
    cx: &Cx,
    root: &Node,
    builtin: &PriceTable,
) -> Result<GenaiFile, PricingFileError> {
    let Value::Array(items) = &root.value else {
        return Err(cx.err(root, None, "expected an array of providers".into()));
    };
    let mut out = GenaiFile {
        models: Vec::new(),
        rules: Rules::default(),
        notes: Vec::new(),
    };
    let mut fallbacks: Vec<Vec<String>> = Vec::new();
    for (pi, p) in items.iter().enumerate() {
        let path = format!("[{pi}]");
        let id = string(cx, p, "id", &path)?.to_lowercase();
        let provider_match = optional_clause(cx, p, "provider_match", &path)?;
        let model_match = optional_clause(cx, p, "model_match", &path)?;
        fallbacks.push(match p.get("fallback_model_providers") {
            None => Vec::new(),
            Some(n) => strings(cx, n, &format!("{path}.fallback_model_providers"))?,
        });
        let Some(Node {
            value: Value::Array(models),
            ..
        }) = p.get("models")
        else {
            return Err(cx.err(
                p,
                Some(format!("{path}.models")),
                "expected an array".into(),
            ));
        };
        let mut rules = Vec::new();
        for (mi, m) in models.iter().enumerate() {
            let mpath = format!("{path}.models[{mi}]");
            let mid = string(cx, m, "id", &mpath)?;
            let full_id = format!("{id}/{mid}");
            let clause = match m.get("match") {
                Some(n) => clause(cx, n, &format!("{mpath}.match"))?,
                None => return Err(cx.err(m, Some(mpath), "missing \"match\"".into())),
            };
            let Some(prices) = m.get("prices") else {
                return Err(cx.err(m, Some(mpath), "missing \"prices\"".into()));
            };
            let image_tokens = if gives(prices, IMAGE_OUTPUT) {
                builtin
                    .find(Some(&id), mid)
                    .map(|b| b.latest().prices.base.image_tokens())
                    .filter(|&t| t > 0)
            } else {
                None
            };
            let mut mcx = ModelCx {
                image_tokens,
                unbilled: BTreeSet::new(),
            };
            let periods = periods(cx, prices, &format!("{mpath}.prices"), &mut mcx)?;
            let sets = || {
                periods.iter().flat_map(|p| {
                    std::iter::once(&p.prices).chain(p.windows.iter().map(|w| &w.prices))
                })
            };
            let priced = sets().any(|s| !s.base.is_empty());
            let reasoning = sets().any(|s| s.base.get(Dimension::InternalReasoning).is_some());
            if !mcx.unbilled.is_empty() {
                out.notes.push(if priced {
                    let fields: Vec<String> = mcx
                        .unbilled
                        .iter()
                        .map(|f| format!("{f} ({})", consequence(f, reasoning)))
                        .collect();
                    format!("{full_id}: not representable: {}", fields.join(", "))
                } else {
                    let fields = mcx.unbilled.into_iter().collect::<Vec<_>>().join(", ");
                    format!("{full_id}: not representable: {fields}; nothing else priced, left out")
                });
                if !priced {
                    continue;
                }
            }
            rules.push((clause, out.models.len() as u32));
            out.models.push(ModelPrice {
                periods: periods.into_boxed_slice(),
                ..ModelPrice::new(full_id, Source::File, PriceSet::default())
            });
        }
        out.rules.providers.push(Provider {
            id,
            provider_match,
            model_match,
            fallback: Vec::new(),
            models: rules,
        });
    }
    for (i, names) in fallbacks.into_iter().enumerate() {
        let found = names
            .iter()
            .filter_map(|n| {
                out.rules
                    .providers
                    .iter()
                    .position(|p| p.id == n.to_lowercase())
            })
            .collect();
        out.rules.providers[i].fallback = found;
    }
    Ok(out)
}

/// A required string member.
fn string<'n>(cx: &Cx, node: &'n Node, key: &str, path: &str) -> Result<&'n str, PricingFileError> {
    match node.get(key) {
        Some(Node {
            value: Value::String(s),
            ..
        }) if !s.trim().is_empty() => Ok(s.trim()),
        Some(n) => Err(cx.err(
            n,
            Some(format!("{path}.{key}")),
            "expected a non-empty string".into(),
        )),
        None => Err(cx.err(node, Some(path.to_string()), format!("missing \"{key}\""))),
    }
}

/// An array of strings.
fn strings(cx: &Cx, node: &Node, path: &str) -> Result<Vec<String>, PricingFileError> {
    match &node.value {
        Value::Array(list) => list
            .iter()
            .map(|n| match &n.value {
                Value::String(s) => Ok(s.clone()),
                _ => Err(cx.err(n, Some(path.to_string()), "expected strings".into())),
            })
            .collect(),
        _ => Err(cx.err(node, Some(path.to_string()), "expected an array".into())),
    }
}

fn optional_clause(
    cx: &Cx,
    node: &Node,
    key: &str,
    path: &str,
) -> Result<Option<Clause>, PricingFileError> {
    node.get(key)
        .map(|n| clause(cx, n, &format!("{path}.{key}")))
        .transpose()
}

/// A match clause: an object with one of `equals`, `starts_with`, `ends_with`, `contains`,
/// `regex` (a string), `or`, `and` (arrays of clauses).
fn clause(cx: &Cx, node: &Node, path: &str) -> Result<Clause, PricingFileError> {
    let Value::Object(members) = &node.value else {
        return Err(cx.err(
            node,
            Some(path.to_string()),
            "expected a match clause".into(),
        ));
    };
    let [(key, v)] = &members[..] else {
        return Err(cx.err(
            node,
            Some(path.to_string()),
            "a match clause has exactly one key".into(),
        ));
    };
    let kpath = format!("{path}.{key}");
    let text = || match &v.value {
        Value::String(s) => Ok(s.to_lowercase()),
        _ => Err(cx.err(v, Some(kpath.clone()), "expected a string".into())),
    };
    let list = || match &v.value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, n)| clause(cx, n, &format!("{kpath}[{i}]")))
            .collect::<Result<Vec<_>, _>>(),
        _ => Err(cx.err(
            v,
            Some(kpath.clone()),
            "expected an array of clauses".into(),
        )),
    };
    Ok(match key.as_str() {
        "equals" => Clause::Equals(text()?),
        "starts_with" => Clause::StartsWith(text()?),
        "ends_with" => Clause::EndsWith(text()?),
        "contains" => Clause::Contains(text()?),
        "regex" => {
            let Value::String(pattern) = &v.value else {
                return Err(cx.err(v, Some(kpath), "expected a string".into()));
            };
            let re = Regex::new(pattern)
                .map_err(|e| cx.err(v, Some(kpath.clone()), format!("bad regex: {e}")))?;
            Clause::Regex(Box::new(re))
        }
        "or" => Clause::Or(list()?),
        "and" => Clause::And(list()?),
        other => {
            return Err(cx.err(
                node,
                Some(kpath.clone()),
                format!(
                    "unknown match clause {other:?}; expected equals, starts_with, ends_with, \
                     contains, regex, or, and"
                ),
            ))
        }
    })
}

/// One entry of a model's `prices`: when it applies and what it charges.
enum When {
    Always,
    From(u64),
    Daily(u32, u32),
}

/// A model's `prices` (one object, or a list of conditional prices) as periods.
fn periods(
    cx: &Cx,
    node: &Node,
    path: &str,
    mcx: &mut ModelCx,
) -> Result<Vec<Period>, PricingFileError> {
    let entries: Vec<(When, PriceSet)> = match &node.value {
        Value::Object(_) => vec![(When::Always, price_set(cx, node, path, mcx)?)],
        Value::Array(list) if !list.is_empty() => list
            .iter()
            .enumerate()
            .map(|(i, e)| conditional(cx, e, &format!("{path}[{i}]"), mcx))
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(cx.err(
                node,
                Some(path.to_string()),
                "expected a price object or a non-empty list of conditional prices".into(),
            ))
        }
    };
    // genai-prices tries the entries last to first and takes the first whose constraint holds
    // (no constraint always holds), else the first entry. Between two start dates the entry
    // that holds all day is fixed; later daily windows are tried before it, latest first.
    let mut starts: Vec<u64> = vec![0];
    starts.extend(entries.iter().filter_map(|(w, _)| match w {
        When::From(ms) => Some(*ms),
        _ => None,
    }));
    starts.sort_unstable();
    starts.dedup();
    let periods: Vec<Period> = starts
        .into_iter()
        .map(|from_ms| {
            let holds = |w: &When| match w {
                When::Always => true,
                When::From(ms) => *ms <= from_ms,
                When::Daily(..) => false,
            };
            let base = entries.iter().rposition(|(w, _)| holds(w)).unwrap_or(0);
            let windows = entries[base + 1..]
                .iter()
                .rev()
                .filter_map(|(w, set)| match w {
                    When::Daily(from_s, to_s) => Some(Window {
                        from_s: *from_s,
                        to_s: *to_s,
                        prices: set.clone(),
                    }),
                    _ => None,
                })
                .collect();
            Period {
                from_ms,
                prices: entries[base].1.clone(),
                windows,
            }
        })
        .collect();
    check_periods(&periods).map_err(|why| cx.err(node, Some(path.to_string()), why.into()))?;
    Ok(periods)
}

/// `{"constraint": {...}, "prices": {...}}`.
fn conditional(
    cx: &Cx,
    node: &Node,
    path: &str,
    mcx: &mut ModelCx,
) -> Result<(When, PriceSet), PricingFileError> {
    let Some(prices) = node.get("prices") else {
        return Err(cx.err(node, Some(path.to_string()), "missing \"prices\"".into()));
    };
    let set = price_set(cx, prices, &format!("{path}.prices"), mcx)?;
    let cpath = format!("{path}.constraint");
    let when = match node.get("constraint") {
        None
        | Some(Node {
            value: Value::Null, ..
        }) => When::Always,
        Some(c) => {
            let text = |k: &str| match c.get(k) {
                Some(Node {
                    value: Value::String(s),
                    ..
                }) => Some(s.as_str()),
                _ => None,
            };
            if let Some(d) = text("start_date") {
                When::From(parse_file_instant(d).map_err(|why| {
                    cx.err(
                        c,
                        Some(format!("{cpath}.start_date")),
                        format!("{d:?}: {why}"),
                    )
                })?)
            } else if let (Some(a), Some(b)) = (text("start_time"), text("end_time")) {
                let t = |s: &str, k: &str| {
                    parse_time_of_day(s).map_err(|why| {
                        cx.err(c, Some(format!("{cpath}.{k}")), format!("{s:?}: {why}"))
                    })
                };
                When::Daily(t(a, "start_time")?, t(b, "end_time")?)
            } else {
                return Err(cx.err(
                    c,
                    Some(cpath),
                    "expected {\"start_date\"} or {\"start_time\", \"end_time\"}".into(),
                ));
            }
        }
    };
    Ok((when, set))
}

/// One priced dimension of a genai-prices price object: its base price and its (start, price)
/// tiers, ascending.
type Field = (Dimension, Price, Vec<(u64, Price)>);

/// One genai-prices price object: the fields billed here (the preferred field of each
/// dimension, see `FIELDS`), their tiers, image output per image, the genai-prices fallbacks
/// for cached and cache-write tokens; the other fields go to `mcx.unbilled`.
fn price_set(
    cx: &Cx,
    node: &Node,
    path: &str,
    mcx: &mut ModelCx,
) -> Result<PriceSet, PricingFileError> {
    let Value::Object(members) = &node.value else {
        return Err(cx.err(
            node,
            Some(path.to_string()),
            "expected a price object".into(),
        ));
    };
    // (rank in FIELDS, field) of each dimension's best field so far.
    let mut best: Vec<(usize, Field)> = Vec::new();
    for (k, v) in members {
        if matches!(v.value, Value::Null) {
            continue;
        }
        let kpath = format!("{path}.{k}");
        let (rank, d, shift) = match FIELDS.iter().position(|(f, _, _)| f == k) {
            Some(rank) => (rank, FIELDS[rank].1, FIELDS[rank].2),
            None if k == IMAGE_OUTPUT && mcx.image_tokens.is_some() => {
                (FIELDS.len(), Dimension::Image, 6)
            }
            None => {
                mcx.unbilled.insert(k.clone());
                continue;
            }
        };
        let (base, tiers) = field(cx, v, &kpath, shift)?;
        match best.iter_mut().find(|(_, f)| f.0 == d) {
            Some(b) if b.0 < rank => {
                mcx.unbilled.insert(k.clone());
            }
            Some(b) => {
                mcx.unbilled.insert(FIELDS[b.0].0.to_string());
                *b = (rank, (d, base, tiers));
            }
            None => best.push((rank, (d, base, tiers))),
        }
    }
    let mut fields: Vec<Field> = best.into_iter().map(|(_, f)| f).collect();
    // Image output: per token in the file, per image here.
    let image_tokens = mcx.image_tokens.unwrap_or(0);
    if let Some(f) = fields.iter_mut().find(|f| f.0 == Dimension::Image) {
        let per_image = |p: Price| {
            p.checked_times(u64::from(image_tokens)).ok_or_else(|| {
                cx.err(
                    node,
                    Some(format!("{path}.{IMAGE_OUTPUT}")),
                    format!("{p} x {image_tokens} tokens per image: price out of range"),
                )
            })
        };
        f.1 = per_image(f.1)?;
        for t in &mut f.2 {
            t.1 = per_image(t.1)?;
        }
    }
    // genai-prices bills cached and cache-write tokens as input unless they have a price.
    for d in [Dimension::CacheRead, Dimension::CacheWrite] {
        if !fields.iter().any(|f| f.0 == d) {
            if let Some(input) = fields.iter().find(|f| f.0 == Dimension::Prompt) {
                fields.push((d, input.1, input.2.clone()));
            }
        }
    }
    let rates_above = |threshold: Option<u64>| {
        let mut r = Rates::NONE;
        for (d, base, tiers) in &fields {
            let p = threshold
                .and_then(|t| tiers.iter().rev().find(|(s, _)| *s <= t).map(|x| x.1))
                .unwrap_or(*base);
            r.set(*d, Some(p));
            if *d == Dimension::Image {
                r.set_image_tokens(image_tokens);
            }
        }
        r
    };
    let mut thresholds: Vec<u64> = fields
        .iter()
        .flat_map(|f| f.2.iter().map(|t| t.0))
        .collect();
    thresholds.sort_unstable();
    thresholds.dedup();
    let tiers = thresholds
        .into_iter()
        .map(|t| Tier {
            threshold: t,
            rates: rates_above(Some(t)),
        })
        .collect();
    Ok(PriceSet::tiered(rates_above(None), tiers).expect("thresholds are distinct"))
}

/// One price field's value: a number, or `{"base": n, "tiers": [{"start": n, "price": n}]}`;
/// its base price and its tiers, ascending.
fn field(
    cx: &Cx,
    v: &Node,
    kpath: &str,
    shift: u8,
) -> Result<(Price, Vec<(u64, Price)>), PricingFileError> {
    match &v.value {
        Value::Number(_) => Ok((number(cx, v, kpath, shift)?, Vec::new())),
        Value::Object(_) => {
            let Some(base) = v.get("base") else {
                return Err(cx.err(v, Some(kpath.to_string()), "missing \"base\"".into()));
            };
            let base = number(cx, base, &format!("{kpath}.base"), shift)?;
            let mut tiers = Vec::new();
            let Some(Node {
                value: Value::Array(list),
                ..
            }) = v.get("tiers")
            else {
                return Err(cx.err(
                    v,
                    Some(kpath.to_string()),
                    "expected \"tiers\": [...]".into(),
                ));
            };
            for (i, t) in list.iter().enumerate() {
                let tpath = format!("{kpath}.tiers[{i}]");
                let start = match t.get("start").map(|n| &n.value) {
                    Some(Value::Number(n)) => n.parse::<u64>().ok(),
                    _ => None,
                }
                .ok_or_else(|| {
                    cx.err(
                        t,
                        Some(format!("{tpath}.start")),
                        "expected a whole number of tokens".into(),
                    )
                })?;
                let Some(price) = t.get("price") else {
                    return Err(cx.err(t, Some(tpath), "missing \"price\"".into()));
                };
                tiers.push((start, number(cx, price, &format!("{tpath}.price"), shift)?));
            }
            tiers.sort_by_key(|t| t.0);
            Ok((base, tiers))
        }
        _ => Err(cx.err(
            v,
            Some(kpath.to_string()),
            "expected a number or {\"base\", \"tiers\"}".into(),
        )),
    }
}

/// A JSON number in USD per 1M (or per 1000), as an exact price per unit.
fn number(cx: &Cx, node: &Node, path: &str, shift: u8) -> Result<Price, PricingFileError> {
    let Value::Number(text) = &node.value else {
        return Err(cx.err(node, Some(path.to_string()), "expected a number".into()));
    };
    Price::parse(text)
        .ok()
        .and_then(|p| p.shifted(shift))
        .ok_or_else(|| {
            cx.err(
                node,
                Some(path.to_string()),
                format!(
                    "{text}: not a price (a non-negative decimal, at most 19 significant digits)"
                ),
            )
        })
}

#[cfg(test)]
#[path = "genai_tests.rs"]
mod tests;
