//! The project's own pricing-file format (documented in `docs/pricing-file.md`):
//! `{"models": [{"id", "aliases", <prices>, "long_context", "changes": [{"from", <prices>}]}]}`.
//!
//! Prices are USD per unit as decimal strings or numbers, converted exactly from their text.
//! A model's top-level prices apply from the beginning; each entry of `changes` replaces them
//! whole from its `from` instant on. Unknown and repeated keys are errors, so a typo cannot
//! silently drop a price.

use std::collections::HashMap;

use super::file::{price_value, strict_members, Cx, PricingFileError};
use super::instant::parse_file_instant;
use super::json::{Node, Value};
use super::rates::{Dimension, Rates};
use super::schedule::{Period, PriceSet, Tier};
use super::table::{ModelPrice, Source};

/// The eight price keys, in dimension order.
pub(crate) const PRICE_KEYS: [(&str, Dimension); 8] = [
    ("prompt", Dimension::Prompt),
    ("completion", Dimension::Completion),
    ("request", Dimension::Request),
    ("image", Dimension::Image),
    ("web_search", Dimension::WebSearch),
    ("internal_reasoning", Dimension::InternalReasoning),
    ("cache_read", Dimension::CacheRead),
    ("cache_write", Dimension::CacheWrite),
];

/// Parses the project's own format.
pub(crate) fn parse(cx: &Cx, root: &Node) -> Result<Vec<ModelPrice>, PricingFileError> {
    let top = strict_members(cx, root, "$", &["models", "comment"])?;
    let mut out: Vec<ModelPrice> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let Some((_, models)) = top.iter().find(|(k, _)| k == "models") else {
        return Ok(out);
    };
    let Value::Array(items) = &models.value else {
        return Err(cx.err(models, Some("models".into()), "expected an array".into()));
    };
    let mut allowed: Vec<&str> = vec![
        "id",
        "aliases",
        "long_context",
        "changes",
        "image_tokens",
        "comment",
    ];
    allowed.extend(PRICE_KEYS.iter().map(|(k, _)| *k));

    for (i, item) in items.iter().enumerate() {
        let path = format!("models[{i}]");
        let members = strict_members(cx, item, &path, &allowed)?;
        let field = |k: &str| members.iter().find(|(m, _)| m == k).map(|(_, v)| v);
        let id = match field("id") {
            Some(Node {
                value: Value::String(s),
                ..
            }) if !s.trim().is_empty() => s.trim().to_string(),
            Some(n) => {
                return Err(cx.err(
                    n,
                    Some(format!("{path}.id")),
                    "expected a non-empty string".into(),
                ))
            }
            None => return Err(cx.err(item, Some(path), "missing \"id\"".into())),
        };
        let aliases = match field("aliases") {
            None => Vec::new(),
            Some(a) => strings(cx, a, &format!("{path}.aliases"))?,
        };
        let mut periods = vec![Period::always(price_set(cx, members, &path)?)];
        if let Some(changes) = field("changes") {
            let cpath = format!("{path}.changes");
            let Value::Array(list) = &changes.value else {
                return Err(cx.err(changes, Some(cpath), "expected an array".into()));
            };
            let mut change_keys = allowed.clone();
            change_keys.retain(|k| !matches!(*k, "id" | "aliases" | "changes"));
            change_keys.push("from");
            for (j, c) in list.iter().enumerate() {
                let jpath = format!("{cpath}[{j}]");
                let cm = strict_members(cx, c, &jpath, &change_keys)?;
                let from = match cm.iter().find(|(k, _)| k == "from").map(|(_, v)| v) {
                    Some(
                        n @ Node {
                            value: Value::String(s),
                            ..
                        },
                    ) => parse_file_instant(s).map_err(|why| {
                        cx.err(n, Some(format!("{jpath}.from")), format!("{s:?}: {why}"))
                    })?,
                    Some(n) => {
                        return Err(cx.err(
                            n,
                            Some(format!("{jpath}.from")),
                            "expected a date (YYYY-MM-DD) or RFC 3339 time as a string".into(),
                        ))
                    }
                    None => return Err(cx.err(c, Some(jpath), "missing \"from\"".into())),
                };
                let last = periods[periods.len() - 1].from_ms;
                if from <= last {
                    return Err(cx.err(
                        c,
                        Some(format!("{jpath}.from")),
                        "changes must be in time order, after 1970-01-01".into(),
                    ));
                }
                periods.push(Period {
                    from_ms: from,
                    prices: price_set(cx, cm, &jpath)?,
                    windows: Box::new([]),
                });
            }
        }
        for key in std::iter::once(id.to_lowercase()).chain(aliases.iter().cloned()) {
            if let Some(&other) = seen.get(&key) {
                return Err(cx.err(
                    item,
                    Some(path),
                    format!("\"{key}\" already names models[{other}]"),
                ));
            }
            seen.insert(key, i);
        }
        out.push(ModelPrice {
            id,
            aliases,
            source: Source::File,
            periods: periods.into_boxed_slice(),
            provenance: None,
        });
    }
    Ok(out)
}

/// An array of non-empty strings, lower-cased.
fn strings(cx: &Cx, node: &Node, path: &str) -> Result<Vec<String>, PricingFileError> {
    let Value::Array(list) = &node.value else {
        return Err(cx.err(
            node,
            Some(path.to_string()),
            "expected an array of strings".into(),
        ));
    };
    list.iter()
        .enumerate()
        .map(|(j, n)| match &n.value {
            Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_lowercase()),
            _ => Err(cx.err(
                n,
                Some(format!("{path}[{j}]")),
                "expected a non-empty string".into(),
            )),
        })
        .collect()
}

/// The price keys of an object (a model or one of its changes) and its `long_context`.
fn price_set(
    cx: &Cx,
    members: &[(String, Node)],
    path: &str,
) -> Result<PriceSet, PricingFileError> {
    let field = |k: &str| members.iter().find(|(m, _)| m == k).map(|(_, v)| v);
    let base = rates(cx, members, path)?;
    let tiers = match field("long_context") {
        None => Vec::new(),
        Some(
            lc @ Node {
                value: Value::Array(list),
                ..
            },
        ) => {
            if list.is_empty() {
                return Err(cx.err(
                    lc,
                    Some(format!("{path}.long_context")),
                    "expected at least one tier".into(),
                ));
            }
            list.iter()
                .enumerate()
                .map(|(j, t)| tier(cx, t, &format!("{path}.long_context[{j}]"), &base))
                .collect::<Result<_, _>>()?
        }
        Some(lc) => vec![tier(cx, lc, &format!("{path}.long_context"), &base)?],
    };
    PriceSet::tiered(base, tiers).map_err(|threshold| {
        cx.err(
            field("long_context").expect("tiers came from it"),
            Some(format!("{path}.long_context")),
            format!("two tiers at threshold {threshold}"),
        )
    })
}

/// The eight price keys of an object, those present, and its `image_tokens`.
fn rates(cx: &Cx, members: &[(String, Node)], path: &str) -> Result<Rates, PricingFileError> {
    let mut r = Rates::NONE;
    for (k, d) in PRICE_KEYS {
        if let Some((_, n)) = members.iter().find(|(m, _)| m == k) {
            r.set(d, Some(price_value(cx, n, &format!("{path}.{k}"))?));
        }
    }
    if let Some((_, n)) = members.iter().find(|(m, _)| m == "image_tokens") {
        let tokens = positive_integer(&n.value)
            .and_then(|t| u32::try_from(t).ok())
            .ok_or_else(|| {
                cx.err(
                    n,
                    Some(format!("{path}.image_tokens")),
                    "expected a positive integer (output tokens per image)".into(),
                )
            })?;
        if r.get(Dimension::Image).is_none() {
            return Err(cx.err(
                n,
                Some(format!("{path}.image_tokens")),
                "needs an \"image\" price (USD per image)".into(),
            ));
        }
        r.set_image_tokens(tokens);
    }
    Ok(r)
}

/// One long-context tier: its threshold and the prices it lays over `base`.
fn tier(cx: &Cx, node: &Node, path: &str, base: &Rates) -> Result<Tier, PricingFileError> {
    let mut keys: Vec<&str> = vec!["threshold", "comment"];
    keys.extend(PRICE_KEYS.iter().map(|(k, _)| *k));
    let members = strict_members(cx, node, path, &keys)?;
    let threshold = match members
        .iter()
        .find(|(k, _)| k == "threshold")
        .map(|(_, v)| v)
    {
        Some(n) => positive_integer(&n.value).ok_or_else(|| {
            cx.err(
                n,
                Some(format!("{path}.threshold")),
                "expected a positive integer (input tokens)".into(),
            )
        })?,
        None => return Err(cx.err(node, Some(path.to_string()), "missing \"threshold\"".into())),
    };
    let over = rates(cx, members, path)?;
    if over.is_empty() {
        return Err(cx.err(
            node,
            Some(path.to_string()),
            "a tier needs at least one price".into(),
        ));
    }
    Ok(Tier {
        threshold,
        rates: base.overlaid(&over),
    })
}

/// A JSON integer > 0 written without fraction or exponent.
fn positive_integer(v: &Value) -> Option<u64> {
    let Value::Number(n) = v else { return None };
    n.parse::<u64>().ok().filter(|&t| t > 0)
}
