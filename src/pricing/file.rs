//! Pricing files: reads a file's text, tells its format from its shape, and turns it into
//! models that override the built-in table. The formats are described in one place,
//! `docs/pricing-file.md`; here are the readers of the two snapshot formats (OpenRouter's
//! `/api/v1/models` answer and LiteLLM's `model_prices_and_context_window.json`), the
//! dispatch to `own.rs` (the project's format) and `genai.rs` (genai-prices `v2`), and the
//! helpers they share.
//!
//! OpenRouter and LiteLLM files carry no dates: their prices apply to every span whatever its
//! start time.

use std::fmt;
use std::path::Path;

use super::builtin;
use super::genai;
use super::json::{self, Node, Value};
use super::matching::{is_bedrock, vendor_alias};
use super::money::Price;
use super::own;
use super::rates::{Dimension, Rates};
use super::schedule::{PriceSet, Tier};
use super::table::{ModelPrice, PriceTable, Source};

/// A pricing file that cannot be used, and why; the table in force stays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PricingFileError {
    /// The file, as given.
    pub file: String,
    /// 1-based line of the offending value, when known.
    pub line: Option<u32>,
    /// 1-based column, for syntax errors.
    pub column: Option<u32>,
    /// Path to the offending value, e.g. `models[3].prompt` or `["gpt-4o"].input_cost_per_token`.
    pub key: Option<String>,
    pub reason: String,
}

impl fmt::Display for PricingFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pricing file {}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.reason)
    }
}

impl std::error::Error for PricingFileError {}

/// Which format a pricing file was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// `{"models": [...]}`, this project's format.
    Own,
    /// genai-prices `v2` `data.json`: `[{"id": ..., "models": [...]}, ...]`.
    GenaiPrices,
    /// `{"data": [...]}` from OpenRouter's `/api/v1/models`.
    OpenRouter,
    /// LiteLLM's `model_prices_and_context_window.json`.
    LiteLlm,
}

impl PriceTable {
    /// The built-in table with the models of the pricing file at `path` on top.
    pub fn from_file(path: &Path) -> Result<PriceTable, PricingFileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PricingFileError {
            file: name.clone(),
            line: None,
            column: None,
            key: None,
            reason: format!("cannot read: {e}"),
        })?;
        PriceTable::with_overrides(&text, &name)
    }

    /// The built-in table with the models of a pricing file's text on top; `name` names the
    /// file in errors.
    pub fn with_overrides(text: &str, name: &str) -> Result<PriceTable, PricingFileError> {
        let file = parse_file(text, name)?;
        Ok(PriceTable::merge(
            builtin::models(),
            Some(file),
            Some(name.to_string()),
        ))
    }
}

/// A pricing file, read: its models and, for genai-prices, the match rules that find them and
/// what could not be represented.
#[derive(Debug)]
pub(crate) struct FileModels {
    pub format: FileFormat,
    pub models: Vec<ModelPrice>,
    /// genai-prices files: models are found by these rules, not by id.
    pub rules: Option<genai::Rules>,
    /// Prices that could not be represented, one line per model, for the load report.
    pub notes: Vec<String>,
}

/// Parses a pricing file's text, detecting its format: its models, and notes about prices it
/// could not represent.
pub fn parse(
    text: &str,
    name: &str,
) -> Result<(FileFormat, Vec<ModelPrice>, Vec<String>), PricingFileError> {
    parse_file(text, name).map(|f| (f.format, f.models, f.notes))
}

/// [`parse`], keeping the match rules.
pub(crate) fn parse_file(text: &str, name: &str) -> Result<FileModels, PricingFileError> {
    let cx = Cx { file: name };
    let root = json::parse(text).map_err(|e| PricingFileError {
        file: name.to_string(),
        line: Some(e.line),
        column: Some(e.column),
        key: None,
        reason: format!("invalid JSON: {}", e.reason),
    })?;
    let format = detect(&root).ok_or_else(|| {
        cx.err(
            &root,
            None,
            "not a pricing file: expected {\"models\": [...]} (this project's format), \
             genai-prices' array of providers, {\"data\": [...]} (OpenRouter) or LiteLLM's \
             object of models"
                .to_string(),
        )
    })?;
    let mut file = FileModels {
        format,
        models: Vec::new(),
        rules: None,
        notes: Vec::new(),
    };
    match format {
        FileFormat::Own => file.models = own::parse(&cx, &root)?,
        FileFormat::GenaiPrices => {
            let g = genai::parse(&cx, &root, &PriceTable::builtin())?;
            (file.models, file.rules, file.notes) = (g.models, Some(g.rules), g.notes);
        }
        FileFormat::OpenRouter => file.models = openrouter(&cx, &root)?,
        FileFormat::LiteLlm => file.models = litellm(&cx, &root)?,
    }
    Ok(file)
}

/// Tells the format from the document's shape.
fn detect(root: &Node) -> Option<FileFormat> {
    if genai::detect(root) {
        return Some(FileFormat::GenaiPrices);
    }
    let Value::Object(members) = &root.value else {
        return None;
    };
    let is_array = |k| matches!(root.get(k).map(|n| &n.value), Some(Value::Array(_)));
    if is_array("models") {
        return Some(FileFormat::Own);
    }
    if is_array("data") {
        return Some(FileFormat::OpenRouter);
    }
    let litellm = members.iter().any(|(k, v)| {
        k == "sample_spec"
            || matches!(&v.value, Value::Object(fields) if fields.iter().any(|(f, _)| {
                f == "litellm_provider" || f.ends_with("_cost_per_token")
            }))
    });
    litellm.then_some(FileFormat::LiteLlm)
}

/// Error context: the file's name.
pub(crate) struct Cx<'a> {
    pub file: &'a str,
}

impl Cx<'_> {
    #[cold]
    pub(crate) fn err(&self, at: &Node, key: Option<String>, reason: String) -> PricingFileError {
        PricingFileError {
            file: self.file.to_string(),
            line: Some(at.line),
            column: None,
            key,
            reason,
        }
    }
}

/// The members of an object whose keys must be in `allowed` and must not repeat; `path` names
/// the object in errors.
pub(crate) fn strict_members<'n>(
    cx: &Cx,
    node: &'n Node,
    path: &str,
    allowed: &[&str],
) -> Result<&'n [(String, Node)], PricingFileError> {
    let Value::Object(members) = &node.value else {
        return Err(cx.err(
            node,
            Some(path.to_string()),
            format!("expected an object, found {}", node.value.kind()),
        ));
    };
    for (i, (k, v)) in members.iter().enumerate() {
        if !allowed.contains(&k.as_str()) {
            return Err(cx.err(
                v,
                Some(format!("{path}.{k}")),
                format!("unknown key; expected one of: {}", allowed.join(", ")),
            ));
        }
        if members[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(cx.err(v, Some(format!("{path}.{k}")), "repeated key".to_string()));
        }
    }
    Ok(members)
}

/// A price value: a decimal string or a JSON number, converted exactly from its text.
pub(crate) fn price_value(cx: &Cx, node: &Node, key: &str) -> Result<Price, PricingFileError> {
    let text = match &node.value {
        Value::String(s) => s.as_str(),
        Value::Number(n) => n.as_str(),
        other => {
            return Err(cx.err(
                node,
                Some(key.to_string()),
                format!(
                    "expected a price (decimal string or number), found {}",
                    other.kind()
                ),
            ))
        }
    };
    Price::parse(text)
        .map_err(|why| cx.err(node, Some(key.to_string()), format!("{text:?}: {why}")))
}

/// OpenRouter's pricing keys.
const OPENROUTER_KEYS: [(&str, Dimension); 8] = [
    ("prompt", Dimension::Prompt),
    ("completion", Dimension::Completion),
    ("request", Dimension::Request),
    ("image", Dimension::Image),
    ("web_search", Dimension::WebSearch),
    ("internal_reasoning", Dimension::InternalReasoning),
    ("input_cache_read", Dimension::CacheRead),
    ("input_cache_write", Dimension::CacheWrite),
];

/// Parses OpenRouter's `/api/v1/models` answer.
fn openrouter(cx: &Cx, root: &Node) -> Result<Vec<ModelPrice>, PricingFileError> {
    let Some(Node {
        value: Value::Array(items),
        ..
    }) = root.get("data")
    else {
        return Ok(Vec::new());
    };
    let mut out: Vec<ModelPrice> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    'models: for (i, item) in items.iter().enumerate() {
        let path = format!("data[{i}]");
        if !matches!(item.value, Value::Object(_)) {
            return Err(cx.err(item, Some(path), "expected an object".into()));
        }
        let id = match item.get("id") {
            Some(Node {
                value: Value::String(s),
                ..
            }) if !s.trim().is_empty() => s.trim().to_string(),
            _ => return Err(cx.err(item, Some(format!("{path}.id")), "missing model id".into())),
        };
        let pricing = match item.get("pricing") {
            Some(
                p @ Node {
                    value: Value::Object(_),
                    ..
                },
            ) => p,
            _ => {
                return Err(cx.err(
                    item,
                    Some(format!("{path}.pricing")),
                    format!("model {id} has no pricing object"),
                ))
            }
        };
        let mut base = Rates::NONE;
        for (k, d) in OPENROUTER_KEYS {
            let Some(n) = pricing.get(k) else { continue };
            let text = match &n.value {
                Value::String(s) => s.trim(),
                Value::Number(s) => s.as_str(),
                Value::Null => continue,
                other => {
                    return Err(cx.err(
                        n,
                        Some(format!("{path}.pricing.{k}")),
                        format!("expected a price string, found {}", other.kind()),
                    ))
                }
            };
            if text.starts_with('-') {
                // "-1": variable pricing (e.g. a router); cannot be priced per call.
                continue 'models;
            }
            let p = Price::parse(text).map_err(|why| {
                cx.err(
                    n,
                    Some(format!("{path}.pricing.{k}")),
                    format!("{text:?}: {why} (model {id})"),
                )
            })?;
            if !p.is_zero() {
                base.set(d, Some(p));
            }
        }
        if seen.insert(id.to_lowercase()) {
            out.push(ModelPrice::new(id, Source::File, PriceSet::flat(base)));
        }
    }
    Ok(out)
}

/// LiteLLM's per-token fields, and the dimension each prices.
const LITELLM_TOKEN_FIELDS: [(&str, Dimension); 5] = [
    ("input_cost_per_token", Dimension::Prompt),
    ("output_cost_per_token", Dimension::Completion),
    ("cache_read_input_token_cost", Dimension::CacheRead),
    ("cache_creation_input_token_cost", Dimension::CacheWrite),
    (
        "output_cost_per_reasoning_token",
        Dimension::InternalReasoning,
    ),
];

/// LiteLLM's per-unit fields.
const LITELLM_UNIT_FIELDS: [(&str, Dimension); 2] = [
    ("input_cost_per_request", Dimension::Request),
    ("input_cost_per_image", Dimension::Image),
];

/// Parses LiteLLM's model map.
fn litellm(cx: &Cx, root: &Node) -> Result<Vec<ModelPrice>, PricingFileError> {
    let Value::Object(entries) = &root.value else {
        return Ok(Vec::new());
    };
    // (model, priority): on a repeated id the lower priority wins, then the first.
    let mut out: Vec<(ModelPrice, u8)> = Vec::new();
    let mut by_id: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (key, entry) in entries {
        if key == "sample_spec" {
            continue;
        }
        let path = format!("[{key:?}]");
        let Value::Object(fields) = &entry.value else {
            return Err(cx.err(
                entry,
                Some(path),
                format!("expected an object, found {}", entry.value.kind()),
            ));
        };
        if let Some(Node {
            value: Value::String(mode),
            ..
        }) = entry.get("mode")
        {
            if !matches!(
                mode.as_str(),
                "chat" | "completion" | "embedding" | "responses"
            ) {
                continue;
            }
        }
        let provider = match entry.get("litellm_provider") {
            Some(Node {
                value: Value::String(p),
                ..
            }) => Some(p.to_lowercase()),
            _ => None,
        };
        let mut base = Rates::NONE;
        let mut tier = Rates::NONE;
        let mut threshold: Option<u64> = None;
        let mut any_field = false;
        let mut tiers: Vec<(u64, Dimension, Price)> = Vec::new();
        for (f, node) in fields {
            let fpath = || format!("{path}.{f}");
            if let Some((_, d)) = LITELLM_TOKEN_FIELDS
                .iter()
                .chain(LITELLM_UNIT_FIELDS.iter())
                .find(|(name, _)| name == f)
            {
                any_field = true;
                if let Some(p) = litellm_price(cx, node, &fpath())? {
                    base.set(*d, Some(p));
                }
            } else if let Some((d, t)) = tier_field(f) {
                any_field = true;
                if let Some(p) = litellm_price(cx, node, &fpath())? {
                    tiers.push((t, d, p));
                }
            } else if f == "search_context_cost_per_query" {
                if let Some(n) = node.get("search_context_size_medium") {
                    any_field = true;
                    let spath = format!("{}.search_context_size_medium", fpath());
                    if let Some(p) = litellm_price(cx, n, &spath)? {
                        base.set(Dimension::WebSearch, Some(p));
                    }
                }
            }
        }
        if !any_field {
            continue;
        }
        // One tier: the smallest threshold given.
        for &(t, _, _) in &tiers {
            threshold = Some(threshold.map_or(t, |old| old.min(t)));
        }
        for (t, d, p) in tiers {
            if Some(t) == threshold {
                tier.set(d, Some(p));
            }
        }
        let (id, priority) = litellm_id(key, provider.as_deref());
        let tiers = threshold
            .map(|threshold| Tier {
                threshold,
                rates: base.overlaid(&tier),
            })
            .into_iter()
            .collect();
        let prices = PriceSet::tiered(base, tiers).expect("one tier");
        let model = ModelPrice::new(id.clone(), Source::File, prices);
        match by_id.get(&id) {
            Some(&i) if out[i].1 <= priority => {}
            Some(&i) => out[i] = (model, priority),
            None => {
                by_id.insert(id, out.len());
                out.push((model, priority));
            }
        }
    }
    Ok(out.into_iter().map(|(m, _)| m).collect())
}

/// A LiteLLM cost: a number (or numeric string) as written; null and zero = not billed.
fn litellm_price(cx: &Cx, node: &Node, key: &str) -> Result<Option<Price>, PricingFileError> {
    if matches!(node.value, Value::Null) {
        return Ok(None);
    }
    let p = price_value(cx, node, key)?;
    Ok((!p.is_zero()).then_some(p))
}

/// `input_cost_per_token_above_200k_tokens` -> (Prompt, 200000).
fn tier_field(f: &str) -> Option<(Dimension, u64)> {
    let (base, rest) = f.split_once("_above_")?;
    let k = rest.strip_suffix("k_tokens")?;
    let n: u64 = k.parse().ok()?;
    let (_, d) = LITELLM_TOKEN_FIELDS
        .iter()
        .find(|(name, _)| *name == base)?;
    Some((*d, n.checked_mul(1000)?))
}

/// The table id of a LiteLLM entry, and its priority on a repeated id (0 wins over 1).
fn litellm_id(key: &str, provider: Option<&str>) -> (String, u8) {
    let k = key.trim().to_lowercase();
    // Hosts that serve several vendors keep their prefix: their prices are their own.
    let vendor_of = |p: &str| match p {
        "vertex_ai-language-models" => Some("google"),
        p if p.starts_with("azure") || p.starts_with("vertex") => None,
        p => vendor_alias(p),
    };
    if let Some((pre, rest)) = k.split_once('/') {
        return match vendor_of(pre) {
            Some(v) if !rest.is_empty() => (format!("{v}/{rest}"), 1),
            _ => (k, 0),
        };
    }
    match provider {
        Some(p) if is_bedrock(p) => (format!("bedrock/{k}"), 0),
        Some(p) => match vendor_of(p) {
            Some(v) => (format!("{v}/{k}"), 0),
            // `vertex_ai-anthropic_models` and the like: the route is `vertex_ai`.
            None if p.starts_with("vertex_ai") => (format!("vertex_ai/{k}"), 0),
            None => (format!("{p}/{k}"), 0),
        },
        None => (k, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses text and returns "id: prices" lines, or the error message.
    fn load(text: &str) -> Result<(FileFormat, Vec<String>), String> {
        parse(text, "test.json")
            .map(|(f, models, _)| {
                let lines = models.iter().map(crate::pricing::table::describe).collect();
                (f, lines)
            })
            .map_err(|e| e.to_string())
    }

    fn check(text: &str, expect: Result<(FileFormat, &[&str]), &str>) {
        let expect = expect
            .map(|(f, l)| (f, l.iter().map(|s| s.to_string()).collect::<Vec<_>>()))
            .map_err(str::to_string);
        assert_eq!(load(text), expect, "{text}");
    }

    #[test]
    fn own_format() {
        check(
            r#"{"comment": "ours", "models": [
                {"id": "Acme/Model-X", "aliases": ["model-x"], "prompt": "0.0000025",
                 "completion": 1e-5, "cache_read": "0", "request": "0.005",
                 "long_context": {"threshold": 200000, "prompt": "0.000005"}},
                {"id": "acme/free"}
            ]}"#,
            Ok((
                FileFormat::Own,
                &[
                    "Acme/Model-X prompt=0.0000025 completion=0.00001 request=0.005 cache_read=0 >200000: prompt=0.000005",
                    "acme/free",
                ],
            )),
        );
        check(r#"{"models": []}"#, Ok((FileFormat::Own, &[])));
        check(
            r#"{"models": [{"id": "acme/dated", "prompt": "0.000001",
                "long_context": [{"threshold": 2000, "prompt": "0.000003"}, {"threshold": 1000, "prompt": "0.000002"}],
                "changes": [{"from": "2026-07-30T12:15:00+02:00", "prompt": "0.0000005", "comment": "cut"}]}]}"#,
            Ok((
                FileFormat::Own,
                &["acme/dated prompt=0.000001 >1000: prompt=0.000002 >2000: prompt=0.000003 | from 2026-07-30T10:15:00Z: prompt=0.0000005"],
            )),
        );
    }

    #[test]
    fn own_format_errors_name_line_key_and_reason() {
        check(
            "{\"models\": [\n {\"id\": \"a/b\",\n  \"prompt\": \"abc\"}]}",
            Err("pricing file test.json:3: models[0].prompt: \"abc\": not a decimal number"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"promt\": \"1\"}]}",
            Err("pricing file test.json:1: models[0].promt: unknown key; expected one of: id, aliases, long_context, changes, image_tokens, comment, prompt, completion, request, image, web_search, internal_reasoning, cache_read, cache_write"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"prompt\": \"1\", \"prompt\": \"2\"}]}",
            Err("pricing file test.json:1: models[0].prompt: repeated key"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\"},\n{\"id\": \"A/B\"}]}",
            Err("pricing file test.json:2: models[1]: \"a/b\" already names models[0]"),
        );
        check(
            "{\"models\": [{\"prompt\": \"1\"}]}",
            Err("pricing file test.json:1: models[0]: missing \"id\""),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"prompt\": \"-0.1\"}]}",
            Err("pricing file test.json:1: models[0].prompt: \"-0.1\": negative price"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"long_context\": {\"threshold\": 1.5, \"prompt\": \"1\"}}]}",
            Err("pricing file test.json:1: models[0].long_context.threshold: expected a positive integer (input tokens)"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"changes\": [{\"from\": \"2026-07-30\"},\n{\"from\": \"2026-07-30\"}]}]}",
            Err("pricing file test.json:2: models[0].changes[1].from: changes must be in time order, after 1970-01-01"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"changes\": [{\"from\": \"30/07/2026\"}]}]}",
            Err("pricing file test.json:1: models[0].changes[0].from: \"30/07/2026\": expected YYYY-MM-DD or an RFC 3339 time"),
        );
        // A date written without dashes is not read as epoch milliseconds (1970-01-01
        // 05:37:40.730 UTC), which would put the change in force for all time.
        check(
            "{\"models\": [{\"id\": \"a/b\", \"changes\": [{\"from\": \"20260730\"}]}]}",
            Err("pricing file test.json:1: models[0].changes[0].from: \"20260730\": expected YYYY-MM-DD or an RFC 3339 time"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"changes\": [{\"prompt\": \"1\"}]}]}",
            Err("pricing file test.json:1: models[0].changes[0]: missing \"from\""),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"changes\": [{\"from\": \"2026-07-30\", \"aliases\": []}]}]}",
            Err("pricing file test.json:1: models[0].changes[0].aliases: unknown key; expected one of: long_context, image_tokens, comment, prompt, completion, request, image, web_search, internal_reasoning, cache_read, cache_write, from"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"long_context\": [{\"threshold\": 5, \"prompt\": \"1\"}, {\"threshold\": 5, \"prompt\": \"2\"}]}]}",
            Err("pricing file test.json:1: models[0].long_context: two tiers at threshold 5"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"image_tokens\": 1290}]}",
            Err("pricing file test.json:1: models[0].image_tokens: needs an \"image\" price (USD per image)"),
        );
        check(
            "{\"models\": [{\"id\": \"a/b\", \"prompt\": null}]}",
            Err("pricing file test.json:1: models[0].prompt: expected a price (decimal string or number), found null"),
        );
        check(
            "{\"models\": [\n{\"id\": \"a/b\",}]}",
            Err("pricing file test.json:2:14: invalid JSON: expected a string key"),
        );
        check(
            "[1, 2]",
            Err("pricing file test.json:1: not a pricing file: expected {\"models\": [...]} (this project's format), genai-prices' array of providers, {\"data\": [...]} (OpenRouter) or LiteLLM's object of models"),
        );
    }

    /// genai-prices `v2` is told from the content alone (whatever the file's name): an array
    /// of providers, each with `id` and `models`. An array of anything else is no format.
    #[test]
    fn genai_prices_v2_is_told_from_the_content() {
        let v2 = r#"[
            {"id": "acme", "name": "Acme", "api_pattern": "x", "pricing_urls": ["https://acme.example"],
             "models": [{"id": "m-1", "match": {"equals": "m-1"},
                         "prices": [{"prices": {"input_mtok": 1, "output_mtok": 2}},
                                    {"constraint": {"start_date": "2026-07-30"}, "prices": {"input_mtok": 0.5}}]}]},
            {"id": "empty", "name": "Empty", "api_pattern": "y", "models": []}
        ]"#;
        for name in ["data.json", "prices.txt", "litellm.json"] {
            let (format, models, notes) = parse(v2, name).unwrap();
            assert_eq!(format, FileFormat::GenaiPrices, "{name}");
            let lines: Vec<String> = models.iter().map(crate::pricing::table::describe).collect();
            assert_eq!(
                lines,
                ["acme/m-1 prompt=0.000001 completion=0.000002 cache_read=0.000001 cache_write=0.000001 | from 2026-07-30: prompt=0.0000005 cache_read=0.0000005 cache_write=0.0000005"]
            );
            assert!(notes.is_empty(), "{notes:?}");
        }
        // Not providers: no format is guessed.
        for text in [r#"[{"id": "acme"}]"#, "[]", r#"[{"models": []}]"#] {
            let err = parse(text, "x.json").unwrap_err().to_string();
            assert!(err.contains("not a pricing file"), "{text}: {err}");
        }
    }

    #[test]
    fn openrouter_format() {
        check(
            r#"{"data": [
                {"id": "openai/gpt-4o", "name": "GPT-4o", "context_length": 128000,
                 "pricing": {"prompt": "0.0000025", "completion": "0.00001", "request": "0",
                   "image": "0.003613", "web_search": "0", "internal_reasoning": "0",
                   "input_cache_read": "0.00000125", "input_cache_write": "0", "discount": 0}},
                {"id": "openrouter/auto", "pricing": {"prompt": "-1", "completion": "-1"}},
                {"id": "meta-llama/llama-3.1-8b-instruct:free", "pricing": {"prompt": "0", "completion": "0"}},
                {"id": "openai/gpt-4o", "pricing": {"prompt": "1"}}
            ]}"#,
            Ok((
                FileFormat::OpenRouter,
                &[
                    "openai/gpt-4o prompt=0.0000025 completion=0.00001 image=0.003613 cache_read=0.00000125",
                    "meta-llama/llama-3.1-8b-instruct:free",
                ],
            )),
        );
        check(
            "{\"data\": [\n{\"id\": \"x/y\", \"pricing\": {\"prompt\": \"cheap\"}}]}",
            Err("pricing file test.json:2: data[0].pricing.prompt: \"cheap\": not a decimal number (model x/y)"),
        );
        check(
            "{\"data\": [{\"id\": \"x/y\"}]}",
            Err("pricing file test.json:1: data[0].pricing: model x/y has no pricing object"),
        );
    }

    #[test]
    fn litellm_format() {
        check(
            r#"{
              "sample_spec": {"input_cost_per_token": 0, "litellm_provider": "one of ...", "mode": "one of ..."},
              "gpt-4o": {"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05,
                         "cache_read_input_token_cost": 1.25e-06, "litellm_provider": "openai", "mode": "chat",
                         "search_context_cost_per_query": {"search_context_size_low": 0.03,
                            "search_context_size_medium": 0.035, "search_context_size_high": 0.05}},
              "azure/gpt-4o": {"input_cost_per_token": 2.75e-06, "output_cost_per_token": 1.1e-05,
                               "litellm_provider": "azure", "mode": "chat"},
              "gemini/gemini-2.5-pro": {"input_cost_per_token": 9e-06, "litellm_provider": "gemini", "mode": "chat"},
              "gemini-2.5-pro": {"input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
                                 "input_cost_per_token_above_200k_tokens": 2.5e-06,
                                 "output_cost_per_token_above_200k_tokens": 1.5e-05,
                                 "litellm_provider": "vertex_ai-language-models", "mode": "chat"},
              "anthropic.claude-3-haiku-20240307-v1:0": {"input_cost_per_token": 2.5e-07,
                  "output_cost_per_token": 1.25e-06, "litellm_provider": "bedrock", "mode": "chat"},
              "o1": {"input_cost_per_token": 1.5e-05, "output_cost_per_token": 6e-05,
                     "output_cost_per_reasoning_token": 6e-05, "litellm_provider": "openai", "mode": "chat"},
              "dall-e-3": {"output_cost_per_image": 0.04, "litellm_provider": "openai", "mode": "image_generation"},
              "groq/llama3-8b-8192": {"input_cost_per_token": 5e-08, "output_cost_per_token": 8e-08,
                                      "litellm_provider": "groq", "mode": "chat"},
              "text-embedding-3-small": {"input_cost_per_token": 2e-08, "output_cost_per_token": 0.0,
                                         "litellm_provider": "openai", "mode": "embedding"}
            }"#,
            Ok((
                FileFormat::LiteLlm,
                &[
                    "openai/gpt-4o prompt=0.0000025 completion=0.00001 web_search=0.035 cache_read=0.00000125",
                    "azure/gpt-4o prompt=0.00000275 completion=0.000011",
                    "google/gemini-2.5-pro prompt=0.00000125 completion=0.00001 >200000: prompt=0.0000025 completion=0.000015",
                    "bedrock/anthropic.claude-3-haiku-20240307-v1:0 prompt=0.00000025 completion=0.00000125",
                    "openai/o1 prompt=0.000015 completion=0.00006 internal_reasoning=0.00006",
                    "groq/llama3-8b-8192 prompt=0.00000005 completion=0.00000008",
                    "openai/text-embedding-3-small prompt=0.00000002",
                ],
            )),
        );
        check(
            "{\"gpt-4o\": {\"input_cost_per_token\": \"two\", \"litellm_provider\": \"openai\"}}",
            Err("pricing file test.json:1: [\"gpt-4o\"].input_cost_per_token: \"two\": not a decimal number"),
        );
    }
}
