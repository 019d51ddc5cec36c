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
    ///    whose `match` matches the modelId, else the same in its `fallback_model_providers`;
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
                if self.provider(p).is_some() {
                    let (p, rest) = (p.to_string(), rest.to_string());
                    provider = Some(p);
                    model = rest;
                }
            }
        }
        let found = provider
            .as_deref()
            .and_then(|p| self.provider(p))
            .and_then(|p| self.model_in(p, &model, true))
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
                    .find_map(|(prefix, name)| self.model_in(self.provider(prefix)?, name, true))
            })?;
        Some(self.offset + found)
    }

    /// The provider a provider id names: by `id` (the whole id, then its first dot-segment),
    /// then by `provider_match`.
    fn provider(&self, id: &str) -> Option<usize> {
        let seg = id.split('.').next().unwrap_or(id);
        let by_id = |x: &str| self.providers.iter().position(|p| p.id == x);
        by_id(id).or_else(|| by_id(seg)).or_else(|| {
            self.providers
                .iter()
                .position(|p| p.provider_match.as_ref().is_some_and(|c| c.is_match(id)))
        })
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
mod tests {
    use std::sync::OnceLock;

    use crate::ingest::wire::Usage;
    use crate::pricing::{format_money, parse_instant, PriceTable, Pricer};

    /// A small file in the shape of genai-prices `v2` `data.json`, written for these tests.
    const FILE: &str = r#"[
 {"id": "anthropic", "name": "Anthropic", "api_pattern": "https://api\\.anthropic\\.com",
  "pricing_urls": ["https://www.anthropic.com/pricing#api"],
  "model_match": {"contains": "claude"}, "provider_match": {"contains": "anthropic"},
  "extractors": [{"root": "usage", "mappings": []}],
  "models": [
   {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "context_window": 1000000,
    "match": {"or": [{"starts_with": "claude-sonnet-4-5"}, {"starts_with": "claude-sonnet-4.5"}]},
    "prices": {"input_mtok": {"base": 3, "tiers": [{"start": 200000, "price": 6}]},
               "cache_write_mtok": {"base": 3.75, "tiers": [{"start": 200000, "price": 7.5}]},
               "cache_read_mtok": {"base": 0.3, "tiers": [{"start": 200000, "price": 0.6}]},
               "output_mtok": {"base": 15, "tiers": [{"start": 200000, "price": 22.5}]},
               "cache_write_1h_mtok": 6, "web_searches_kcount": 10}},
   {"id": "claude-sonnet-5", "match": {"starts_with": "claude-sonnet-5"},
    "prices": [{"prices": {"input_mtok": 2, "output_mtok": 10}},
               {"constraint": {"start_date": "2026-09-01"}, "prices": {"input_mtok": 3, "output_mtok": 15}}]}
  ]},
 {"id": "openai", "name": "OpenAI", "api_pattern": "x",
  "model_match": {"or": [{"starts_with": "gpt-"}, {"regex": "^o[134]"}]},
  "provider_match": {"contains": "openai"},
  "models": [
   {"id": "gpt-5.6-luna",
    "match": {"or": [{"equals": "gpt-5.6-luna"}, {"regex": "^gpt-5\\.6-luna-\\d{4}-\\d{2}-\\d{2}$"}]},
    "prices": [{"prices": {"input_mtok": {"base": 1, "tiers": [{"start": 272000, "price": 2}]},
                           "output_mtok": {"base": 6, "tiers": [{"start": 272000, "price": 9}]}}},
               {"constraint": {"start_date": "2026-07-30"},
                "prices": {"input_mtok": {"base": 0.2, "tiers": [{"start": 272000, "price": 0.4}]},
                           "output_mtok": {"base": 1.2, "tiers": [{"start": 272000, "price": 1.8}]}}}]},
   {"id": "o3", "match": {"equals": "o3"},
    "prices": {"input_mtok": 2, "output_mtok": 8, "output_reasoning_mtok": 4}},
   {"id": "gpt-4o-realtime", "match": {"starts_with": "gpt-4o-realtime"},
    "prices": {"input_mtok": 5, "output_mtok": 20, "input_audio_mtok": 40, "output_audio_mtok": 80}},
   {"id": "speech", "match": {"ends_with": "-tts"}, "prices": {"input_mchars": 15}},
   {"id": "moderation", "match": {"contains": "moderation"}, "prices": {}},
   {"id": "stepped", "match": {"equals": "gpt-stepped"},
    "prices": {"input_mtok": {"base": 1, "tiers": [{"start": 2000, "price": 3}, {"start": 1000, "price": 2}]},
               "output_mtok": {"base": 10, "tiers": [{"start": 1500, "price": 20}]}}}
  ]},
 {"id": "deepseek", "name": "DeepSeek", "api_pattern": "x", "model_match": {"starts_with": "deepseek"},
  "models": [
   {"id": "deepseek-chat", "match": {"starts_with": "deepseek-chat"},
    "prices": [{"prices": {"input_mtok": 0.135, "output_mtok": 0.55}},
               {"constraint": {"start_time": "00:30:00Z", "end_time": "16:30:00Z"},
                "prices": {"input_mtok": 0.27, "output_mtok": 1.1}}]}
  ]},
 {"id": "azure", "name": "Azure", "api_pattern": "x", "fallback_model_providers": ["openai"],
  "models": [{"id": "gpt-4o", "match": {"equals": "gpt-4o"}, "prices": {"input_mtok": 2.75, "output_mtok": 11}}]},
 {"id": "perplexity", "name": "Perplexity", "api_pattern": "x",
  "models": [{"id": "sonar", "match": {"equals": "sonar"},
              "prices": {"input_mtok": 1, "output_mtok": 1, "requests_kcount": 5}}]},
 {"id": "x-ai", "name": "xAI", "api_pattern": "x", "model_match": {"contains": "grok"},
  "provider_match": {"equals": "xai"},
  "models": [{"id": "grok-4.5", "match": {"and": [{"starts_with": "grok-4.5"}, {"ends_with": "-latest"}]},
              "prices": {"input_mtok": 2, "cache_read_mtok": 0.5, "output_mtok": 6}}]}
]"#;

    fn table() -> &'static PriceTable {
        static T: OnceLock<PriceTable> = OnceLock::new();
        T.get_or_init(|| PriceTable::with_overrides(FILE, "genai.json").unwrap())
    }

    /// One call: provider, model, usage as (input, cached, cache write, output, reasoning,
    /// requests), start time.
    type Call<'a> = (Option<&'a str>, &'a str, [Option<u64>; 6], &'a str);

    /// Prices a call: `id column=USD ... total=USD` (non-null columns), or `unknown`.
    fn priced((provider, model, u, at): Call) -> String {
        let usage = Usage {
            input_tokens: u[0],
            cached_input_tokens: u[1],
            cache_write_input_tokens: u[2],
            output_tokens: u[3],
            reasoning_tokens: u[4],
            request_count: u[5],
            ..Usage::default()
        };
        priced_in(table(), provider, model, &usage, at)
    }

    /// [`priced`] in any table, with any usage.
    fn priced_in(
        table: &PriceTable,
        provider: Option<&str>,
        model: &str,
        usage: &Usage,
        at: &str,
    ) -> String {
        let at = parse_instant(at).unwrap();
        match Pricer::new().price(table, provider, Some(model), Some(usage), at) {
            Ok(None) => "unknown".into(),
            Err(e) => format!("error: {e}"),
            Ok(Some(p)) => {
                let names = [
                    "prompt",
                    "completion",
                    "request",
                    "image",
                    "web_search",
                    "internal_reasoning",
                    "cache_read",
                    "cache_write",
                ];
                let mut s = p.model_id.to_string();
                for (n, v) in names.iter().zip(p.costs.dimensions()) {
                    if let Some(v) = v {
                        s += &format!(" {n}={}", format_money(v));
                    }
                }
                s + &format!(" total={}", format_money(p.costs.total.unwrap()))
            }
        }
    }

    #[test]
    fn a_hand_written_file_prices_as_genai_prices_means() {
        let n = None;
        let cases: &[(Call, &str)] = &[
            // Tier by input tokens (input + cache writes), whole call at the tier rate.
            (
                (Some("anthropic.messages"), "claude-sonnet-4-5-20250929", [Some(200_000), n, n, Some(1000), n, n], "2026-11-24"),
                "anthropic/claude-sonnet-4-5 prompt=0.6000000000 completion=0.0150000000 total=0.6150000000",
            ),
            (
                (Some("anthropic.messages"), "claude-sonnet-4-5-20250929", [Some(199_999), Some(50_000), Some(2), Some(1000), n, n], "2026-11-24"),
                "anthropic/claude-sonnet-4-5 prompt=0.8999940000 completion=0.0225000000 cache_read=0.0300000000 cache_write=0.0000150000 total=0.9525090000",
            ),
            // A start date: 2 before 2026-09-01, 3 from then.
            ((None, "claude-sonnet-5", [Some(1_000_000), n, n, n, n, n], "2026-08-31T23:59:59Z"),
             "anthropic/claude-sonnet-5 prompt=2.0000000000 total=2.0000000000"),
            ((None, "claude-sonnet-5", [Some(1_000_000), n, n, n, n, n], "2026-09-01"),
             "anthropic/claude-sonnet-5 prompt=3.0000000000 total=3.0000000000"),
            // Dated and tiered: Luna after the cut, above 272k.
            ((Some("openai"), "gpt-5.6-luna-2026-07-13", [Some(300_000), n, n, Some(1000), n, n], "2026-07-30"),
             "openai/gpt-5.6-luna prompt=0.1200000000 completion=0.0018000000 total=0.1218000000"),
            ((Some("openai"), "gpt-5.6-luna", [Some(300_000), n, n, Some(1000), n, n], "2026-07-29"),
             "openai/gpt-5.6-luna prompt=0.6000000000 completion=0.0090000000 total=0.6090000000"),
            // Two tiers on one field, another field tiered elsewhere: above 1000 input 2,
            // above 1500 output 20, above 2000 input 3.
            ((None, "gpt-stepped", [Some(1500), n, n, Some(1000), n, n], "2026-11-24"),
             "openai/stepped prompt=0.0030000000 completion=0.0100000000 total=0.0130000000"),
            ((None, "gpt-stepped", [Some(1501), n, n, Some(1000), n, n], "2026-11-24"),
             "openai/stepped prompt=0.0030020000 completion=0.0200000000 total=0.0230020000"),
            ((None, "gpt-stepped", [Some(2001), n, n, Some(1000), n, n], "2026-11-24"),
             "openai/stepped prompt=0.0060030000 completion=0.0200000000 total=0.0260030000"),
            // No cache prices: cached and cache-write tokens cost the input price; reasoning
            // has its own price.
            ((Some("openai.responses"), "o3", [Some(1000), Some(400), Some(100), Some(1000), Some(300), n], "2026-11-24"),
             "openai/o3 prompt=0.0012000000 completion=0.0056000000 internal_reasoning=0.0012000000 cache_read=0.0008000000 cache_write=0.0002000000 total=0.0090000000"),
            // Daily window (UTC): standard 00:30-16:30, off-peak otherwise.
            ((Some("deepseek"), "deepseek-chat", [Some(1_000_000), n, n, n, n, n], "2026-11-24T00:29:59Z"),
             "deepseek/deepseek-chat prompt=0.1350000000 total=0.1350000000"),
            ((Some("deepseek"), "deepseek-chat", [Some(1_000_000), n, n, n, n, n], "2026-11-24T00:30:00Z"),
             "deepseek/deepseek-chat prompt=0.2700000000 total=0.2700000000"),
            ((Some("deepseek"), "deepseek-chat", [Some(1_000_000), n, n, n, n, n], "2026-11-24T16:30:00Z"),
             "deepseek/deepseek-chat prompt=0.1350000000 total=0.1350000000"),
            // Provider by id; a model it lacks comes from its fallback provider.
            ((Some("azure"), "gpt-4o", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
             "azure/gpt-4o prompt=2.7500000000 total=2.7500000000"),
            ((Some("azure"), "o3", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
             "openai/o3 prompt=2.0000000000 total=2.0000000000"),
            // Per 1000 requests: 5 / 1000 = 0.005 a request; requestCount 3.
            ((Some("perplexity"), "sonar", [Some(1000), n, n, n, n, Some(3)], "2026-11-24"),
             "perplexity/sonar prompt=0.0010000000 request=0.0150000000 total=0.0160000000"),
            // provider_match `equals`, an `and` clause.
            ((Some("xai"), "grok-4.5-latest", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
             "x-ai/grok-4.5 prompt=2.0000000000 total=2.0000000000"),
            // LiteLLM's provider prefix; an OpenRouter-style id found through its vendor.
            ((Some("litellm"), "openai/o3", [Some(1000), n, n, n, n, n], "2026-11-24"),
             "openai/o3 prompt=0.0020000000 total=0.0020000000"),
            ((None, "anthropic/claude-sonnet-4.5", [Some(1000), n, n, n, n, n], "2026-11-24"),
             "anthropic/claude-sonnet-4-5 prompt=0.0030000000 total=0.0030000000"),
            // Partly representable: priced with the prices it has (and reported).
            ((Some("openai"), "gpt-4o-realtime-preview", [Some(1000), n, n, n, n, n], "2026-11-24"),
             "openai/gpt-4o-realtime prompt=0.0050000000 total=0.0050000000"),
            // A free model is known (total 0); one left out is not priced at 0.
            ((Some("openai"), "omni-moderation-latest", [Some(1000), n, n, n, n, n], "2026-11-24"),
             "openai/moderation total=0.0000000000"),
            ((Some("openai"), "gpt-9-tts", [Some(1000), n, n, n, n, n], "2026-11-24"),
             "unknown"),
            // Left out of the file, but in the built-in table: priced from there.
            ((Some("openai"), "gpt-4o-mini-tts", [Some(1000), n, n, n, n, n], "2026-11-24"),
             "openai/gpt-4o-mini-tts prompt=0.0006000000 total=0.0006000000"),
            // Not in the file: the built-in table prices it.
            ((Some("openai"), "gpt-4.1", [Some(1_000_000), n, n, n, n, n], "2026-11-24"),
             "openai/gpt-4.1 prompt=2.0000000000 total=2.0000000000"),
        ];
        for (call, want) in cases {
            assert_eq!(priced(*call), *want, "{call:?}");
        }
        assert_eq!(
            table().notes(),
            [
                "anthropic/claude-sonnet-4-5: not representable: cache_write_1h_mtok (counted in cacheWriteInputTokens: billed as cache writes)",
                "openai/gpt-4o-realtime: not representable: input_audio_mtok (counted in inputTokens: billed as input), output_audio_mtok (counted in outputTokens: billed as output)",
                "openai/speech: not representable: input_mchars; nothing else priced, left out",
            ]
        );
    }

    /// The v2 schema's parts of a price (`*_text_*`, `cache_write_5m_mtok`) and image output,
    /// on the v1 counts: a whole's field prices its dimension, a part's only where the whole's
    /// is absent, and the parts the whole covers are reported; image output is billed per
    /// image when the built-in model of the id gives the tokens per image, else reported.
    #[test]
    fn parts_of_a_price_and_image_output_map_onto_the_v1_counts() {
        let file = r#"[
 {"id": "google", "name": "Google", "api_pattern": "x", "model_match": {"starts_with": "gemini"},
  "models": [
   {"id": "gemini-2.5-flash-image", "match": {"starts_with": "gemini-2.5-flash-image"},
    "prices": [{"prices": {"input_mtok": 0.3, "output_mtok": 2.5, "output_image_mtok": 30}},
               {"constraint": {"start_date": "2026-09-01"},
                "prices": {"input_mtok": 0.3, "output_mtok": 2.5,
                           "output_image_mtok": {"base": 36, "tiers": [{"start": 200000, "price": 72}]}}}]},
   {"id": "gemini-9-image", "match": {"equals": "gemini-9-image"},
    "prices": {"input_mtok": 1, "output_mtok": 4, "output_image_mtok": 40}},
   {"id": "gemini-9-text", "match": {"equals": "gemini-9-text"},
    "prices": {"input_text_mtok": 1, "output_text_mtok": 5, "cache_text_read_mtok": 0.1,
               "cache_text_write_mtok": 1.25, "output_text_reasoning_mtok": 3}},
   {"id": "gemini-9-both", "match": {"equals": "gemini-9-both"},
    "prices": {"input_text_mtok": 1, "input_mtok": 2, "output_mtok": 8, "output_text_mtok": 6,
               "cache_read_mtok": 0.2, "cache_text_read_mtok": 0.1, "cache_write_mtok": 2.5,
               "cache_write_5m_mtok": 2.5, "cache_write_1h_mtok": 4, "output_reasoning_mtok": 8,
               "output_text_reasoning_mtok": 7}},
   {"id": "gemini-9-ttl", "match": {"equals": "gemini-9-ttl"},
    "prices": {"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3,
               "cache_write_5m_mtok": 3.75, "cache_write_1h_mtok": 6}}
  ]}
]"#;
        let t = PriceTable::with_overrides(file, "v2.json").unwrap();
        let usage = |u: [u64; 6], images: u64| Usage {
            input_tokens: Some(u[0]),
            cached_input_tokens: Some(u[1]),
            cache_write_input_tokens: Some(u[2]),
            output_tokens: Some(u[3]),
            reasoning_tokens: Some(u[4]),
            image_count: Some(images),
            request_count: Some(u[5]),
            ..Usage::default()
        };
        let g = Some("google");
        let cases: &[(&str, Usage, &str, &str)] = &[
            // 2000 output tokens of which one image of the built-in's 1290 tokens: text
            // 710 x 2.5e-6, the image 1290 x 30e-6.
            ("gemini-2.5-flash-image", usage([1000, 0, 0, 2000, 0, 1], 1), "2026-08-31",
             "google/gemini-2.5-flash-image prompt=0.0003000000 completion=0.0017750000 image=0.0387000000 total=0.0407750000"),
            // From 2026-09-01 the image is 1290 x 36e-6, above 200k input 1290 x 72e-6.
            ("gemini-2.5-flash-image", usage([1000, 0, 0, 2000, 0, 1], 1), "2026-09-01",
             "google/gemini-2.5-flash-image prompt=0.0003000000 completion=0.0017750000 image=0.0464400000 total=0.0485150000"),
            ("gemini-2.5-flash-image", usage([200_001, 0, 0, 1290, 0, 1], 1), "2026-09-01",
             "google/gemini-2.5-flash-image prompt=0.0600003000 image=0.0928800000 total=0.1528803000"),
            // Tokens per image unknown: all output at the output price (reported below).
            ("gemini-9-image", usage([1000, 0, 0, 2000, 0, 1], 1), "2026-08-31",
             "google/gemini-9-image prompt=0.0010000000 completion=0.0080000000 total=0.0090000000"),
            // Only parts: they price the v1 counts. 600 x 1e-6, 700 x 5e-6, 300 x 3e-6,
            // 400 x 0.1e-6, 100 x 1.25e-6.
            ("gemini-9-text", usage([1000, 400, 100, 1000, 300, 1], 0), "2026-08-31",
             "google/gemini-9-text prompt=0.0006000000 completion=0.0035000000 internal_reasoning=0.0009000000 cache_read=0.0000400000 cache_write=0.0001250000 total=0.0051650000"),
            // Wholes and parts: the wholes price them (genai-prices' answer for usage that
            // reports no text counts apart).
            ("gemini-9-both", usage([1000, 400, 100, 1000, 300, 1], 0), "2026-08-31",
             "google/gemini-9-both prompt=0.0012000000 completion=0.0056000000 internal_reasoning=0.0024000000 cache_read=0.0000800000 cache_write=0.0002500000 total=0.0095300000"),
            // 5-minute cache writes without the whole: cache writes at 3.75, not the input's 3.
            ("gemini-9-ttl", usage([1000, 0, 1000, 0, 0, 1], 0), "2026-08-31",
             "google/gemini-9-ttl prompt=0.0030000000 cache_write=0.0037500000 total=0.0067500000"),
        ];
        for (model, u, at, want) in cases {
            assert_eq!(priced_in(&t, g, model, u, at), *want, "{model} at {at}");
        }
        assert_eq!(
            t.notes(),
            [
                "google/gemini-9-image: not representable: output_image_mtok (no built-in model of this id gives the output tokens per image: image tokens billed as output)",
                "google/gemini-9-both: not representable: cache_text_read_mtok (counted in cachedInputTokens: billed as cached input), cache_write_1h_mtok (counted in cacheWriteInputTokens: billed as cache writes), cache_write_5m_mtok (counted in cacheWriteInputTokens: billed as cache writes), input_text_mtok (counted in inputTokens: billed as input), output_text_mtok (counted in outputTokens: billed as output), output_text_reasoning_mtok (counted in reasoningTokens: billed as reasoning)",
                "google/gemini-9-ttl: not representable: cache_write_1h_mtok (counted in cacheWriteInputTokens: billed as cache writes)",
            ]
        );
    }

    #[test]
    fn broken_files_are_refused_with_a_path() {
        let err = |text: &str| {
            PriceTable::with_overrides(text, "g.json")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(r#"[{"id": "p", "models": [{"id": "m", "match": {"regex": "("}, "prices": {}}]}]"#)
                .split(": bad regex")
                .next(),
            Some("pricing file g.json:1: [0].models[0].match.regex")
        );
        assert_eq!(
            err(r#"[{"id": "p", "models": [{"id": "m", "match": {"like": "x"}, "prices": {}}]}]"#),
            "pricing file g.json:1: [0].models[0].match.like: unknown match clause \"like\"; expected equals, starts_with, ends_with, contains, regex, or, and"
        );
        assert_eq!(
            err("[{\"id\": \"p\", \"models\": [{\"id\": \"m\", \"match\": {\"equals\": \"m\"},\n \"prices\": {\"input_mtok\": -1}}]}]"),
            "pricing file g.json:2: [0].models[0].prices.input_mtok: -1: not a price (a non-negative decimal, at most 19 significant digits)"
        );
        assert_eq!(
            err(r#"[{"id": "p", "models": [{"id": "m", "match": {"equals": "m"}, "prices": [{"constraint": {"end_date": "2026-01-01"}, "prices": {}}]}]}]"#),
            "pricing file g.json:1: [0].models[0].prices[0].constraint: expected {\"start_date\"} or {\"start_time\", \"end_time\"}"
        );
        assert_eq!(
            err(r#"[{"id": "p", "models": [{"id": "m", "match": {"equals": "m"}, "prices": [{"prices": {}}, {"constraint": {"start_date": "20260730"}, "prices": {}}]}]}]"#),
            "pricing file g.json:1: [0].models[0].prices[1].constraint.start_date: \"20260730\": expected YYYY-MM-DD or an RFC 3339 time"
        );
    }

    /// The real data set (pydantic/genai-prices `v2`, MIT) at `../shared/reference/`: every
    /// model loads, and one call of every model prices. It is not part of the project: without
    /// it the test says so on stderr (not captured) and passes, unless
    /// `TRACEINGEST_REFERENCE_TESTS=required` (`scripts/test.sh` sets it when the file is there).
    #[test]
    fn the_published_data_set_loads_and_every_model_prices() {
        use std::io::Write;
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/reference/genai-prices-v2-data.json"
        );
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                assert!(
                    std::env::var("TRACEINGEST_REFERENCE_TESTS").as_deref() != Ok("required"),
                    "TRACEINGEST_REFERENCE_TESTS=required but {path}: {e}"
                );
                // Straight to stderr: the test harness captures eprintln! of a passing test.
                let _ = writeln!(
                    std::io::stderr(),
                    "\nSKIPPED pricing::genai::tests::the_published_data_set_loads_and_every_model_prices: \
                     {path}: {e} (the genai-prices v2 data set is not next to the repository; \
                     TRACEINGEST_REFERENCE_TESTS=required makes this a failure)\n"
                );
                return;
            }
        };
        let t = PriceTable::with_overrides(&text, "genai-prices-v2-data.json").unwrap();
        let file_models: Vec<_> = t
            .models()
            .iter()
            .filter(|m| m.source == crate::pricing::Source::File)
            .collect();
        let usage = Usage {
            input_tokens: Some(300_000),
            output_tokens: Some(2000),
            reasoning_tokens: Some(500),
            cached_input_tokens: Some(100_000),
            cache_write_input_tokens: Some(1000),
            web_search_count: Some(2),
            ..Usage::default()
        };
        let mut priced = 0;
        for m in &file_models {
            for at in [
                "2025-01-01T00:00:00Z",
                "2026-11-24T12:00:00Z",
                "2027-06-01T20:00:00Z",
            ] {
                let c = m.costs(Some(&usage), parse_instant(at).unwrap());
                assert!(c.is_ok_and(|c| c.total.is_some()), "{} at {at}", m.id);
            }
            priced += 1;
        }
        let left_out = t.notes().iter().filter(|n| n.ends_with("left out")).count();
        let mut fields = std::collections::BTreeMap::<String, usize>::new();
        for n in t.notes() {
            let list = n.split("not representable: ").nth(1).unwrap();
            for f in list.split(", ") {
                let f = f.split([' ', ';']).next().unwrap();
                *fields.entry(f.to_string()).or_default() += 1;
            }
        }
        eprintln!(
            "genai-prices v2: {priced} models priced, {} reported ({left_out} left out); fields: {fields:?}",
            t.notes().len()
        );
        assert!(priced > 1400, "{priced}");
        // Spot checks through matching, as a span would be priced.
        let mut pricer = Pricer::new();
        let u = Usage {
            input_tokens: Some(100_000),
            ..Usage::default()
        };
        let at = parse_instant("2026-11-24").unwrap();
        let mut id = |p: Option<&str>, m: &str| {
            pricer
                .price(&t, p, Some(m), Some(&u), at)
                .unwrap()
                .map(|p| format!("{} {}", p.model_id, format_money(p.costs.total.unwrap())))
        };
        assert_eq!(
            id(Some("openai"), "gpt-5.6-luna").as_deref(),
            Some("openai/gpt-5.6-luna 0.0200000000")
        );
        assert_eq!(
            id(Some("anthropic.messages"), "claude-sonnet-4-5-20250929").as_deref(),
            Some("anthropic/claude-sonnet-4-5 0.3000000000")
        );
        assert_eq!(
            id(Some("google-vertex"), "gemini-3.6-flash").as_deref(),
            Some("google/gemini-3.6-flash 0.0750000000")
        );
        assert_eq!(
            id(
                Some("amazon-bedrock"),
                "us.anthropic.claude-3-5-sonnet-20240620-v1:0"
            )
            .as_deref(),
            Some("aws/regional.anthropic.claude-3-5-sonnet-20240620-v1:0 0.3000000000")
        );
        assert_eq!(
            id(Some("azure"), "gpt-5.6-luna").as_deref(),
            Some("openai/gpt-5.6-luna 0.0200000000")
        );
        assert_eq!(id(None, "my-own-model"), None);
        // Image output apart from text output, with the built-in's tokens per image: 710 text
        // tokens at 2.5 per 1M, one image of 1290 tokens at 30 per 1M.
        let image = Usage {
            output_tokens: Some(2000),
            image_count: Some(1),
            ..Usage::default()
        };
        assert_eq!(
            priced_in(&t, Some("google"), "gemini-2.5-flash-image", &image, "2026-11-24"),
            "google/gemini-2.5-flash-image completion=0.0017750000 image=0.0387000000 total=0.0404750000"
        );
        // 880 text tokens at 12 per 1M, one image of 1120 tokens at 120 per 1M.
        assert_eq!(
            priced_in(&t, Some("google"), "gemini-3-pro-image-preview", &image, "2026-11-24"),
            "google/gemini-3-pro-image-preview completion=0.0105600000 image=0.1344000000 total=0.1449600000"
        );
    }
}
