//! Model matching: turns a span's (provider, modelId) into the ordered list of table ids to try.
//!
//! Everything is lower-cased. A candidate is `prefix/name`, where the prefix is a vendor
//! (`openai`, `anthropic`, `google`, `mistralai`, `x-ai`, `deepseek`, `meta-llama`, `amazon`,
//! `cohere`, `perplexity`, ...) or a route (the provider itself, e.g. `azure/gpt-4o`, so a
//! pricing file can price one provider's deployments apart). Order:
//!
//! 1. the modelId exactly as sent (`openai/gpt-4o`, or any alias in the table);
//! 2. every (prefix, name) base exactly: the provider's route; the vendor of the provider's first
//!    dot-segment (`openai.chat`, `azure` -> `openai`, `anthropic.messages`, `google-vertex`,
//!    `vertex`, `gemini` -> `google`, `mistral` -> `mistralai`, `xai` -> `x-ai`, ...); the vendor
//!    of a modelId already in `vendor/model` form (OpenRouter, LiteLLM `azure/...`, Google's
//!    `models/...`, Vertex `publishers/...` paths); a Bedrock id without its region prefix as
//!    `bedrock/<id>` (`us.openai.gpt-5.4` -> `bedrock/openai.gpt-5.4`, where the table keeps a
//!    price Bedrock charges apart from the vendor's), then parsed to creator and model
//!    (`us.anthropic.claude-3-5-sonnet-20240620-v1:0` -> `anthropic/claude-3-5-sonnet-20240620`);
//!    an OpenAI fine-tuned model's base (`ft:gpt-4o-2024-08-06:org:name:id` ->
//!    `openai/ft:gpt-4o-2024-08-06`); the vendor implied by the model name (`claude...` ->
//!    `anthropic`);
//! 3. each base's name with trailing version markers removed one at a time (`@20240620`,
//!    `:0`, `:beta`, `-2024-08-06`, `-20241022`, `-0125`, `-001`, `-05-06`, `-08-2024`,
//!    `-latest`, `-preview`, `-exp`), then each of those with version dashes as dots
//!    (`claude-3-5-sonnet` -> `claude-3.5-sonnet`, `grok-4-1` -> `grok-4.1`), Azure's `gpt-35`
//!    as `gpt-3.5` and `llama3` as `llama-3`;
//! 4. the same variants without a prefix (for bare aliases in a pricing file).
//!
//! A candidate reached by removing a release date (`-2512`, `-20250929`, `-2024-08-06`,
//! `-08-2024`, `@20241022`) remembers that date: the table refuses it when the family has a
//! newer model than the one the candidate names and the date is at least that model's (see
//! `PriceTable::resolve`), so `mistral-large-2602` is not priced as the old `mistral-large`
//! once `mistral-large-2512` exists; and when the date is older than every release that model
//! names, so `mistral-large-2402` is not priced as the 2407 and 2411 releases.
//!
//! This runs only on a match-cache miss, so it may allocate freely.

/// One id to try, and the release date removed from the modelId to reach it, if one was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub id: String,
    /// `YYYYMMDD` (day 00 when only the month is known).
    pub stripped_date: Option<u32>,
}

/// What a provider string says about the vendor.
#[derive(Clone, Copy)]
enum ProviderKind {
    Vendor(&'static str),
    /// Amazon Bedrock: the model id names the creator.
    Bedrock,
    Unknown,
}

/// The candidate ids for (provider, modelId), best first, without duplicates.
pub(crate) fn candidates(provider: Option<&str>, model_id: &str) -> Vec<Candidate> {
    let model = model_id.trim().to_lowercase();
    let mut out = Vec::new();
    if model.is_empty() {
        return out;
    }
    push(&mut out, model.clone(), None);
    let bases = bases(provider, &model);
    for (prefix, name) in &bases {
        push(&mut out, format!("{prefix}/{name}"), None);
    }
    for (prefix, name) in &bases {
        for (v, date) in variants(name).into_iter().skip(1) {
            push(&mut out, format!("{prefix}/{v}"), date);
        }
    }
    for (v, date) in variants(&model).into_iter().skip(1) {
        push(&mut out, v, date);
    }
    out
}

/// The (prefix, name) pairs a (provider, modelId) names before any version marker is removed:
/// the provider's first dot-segment and its route, the vendor it implies, a `vendor/model`
/// id's parts, a Bedrock id's creator and model, the vendor a model name implies. `model` is
/// trimmed and lower case.
pub(crate) fn bases(provider: Option<&str>, model: &str) -> Vec<(String, String)> {
    let model = model.to_string();
    let provider = provider
        .map(|p| p.trim().to_lowercase())
        .unwrap_or_default();
    let seg = provider_segment(&provider);
    let mut bases: Vec<(String, String)> = Vec::new();
    if !seg.is_empty() {
        bases.push((seg.to_string(), model.clone()));
        let route = route_of(seg);
        if route != seg {
            bases.push((route.to_string(), model.clone()));
        }
    }
    add_bases(provider_kind(seg), &model, &mut bases, 0);
    let inferred: Vec<(String, String)> = bases
        .iter()
        .map(|(_, n)| n)
        .chain(std::iter::once(&model))
        .filter(|n| !n.contains('/'))
        .filter_map(|n| infer_vendor(n).map(|v| (v.to_string(), n.clone())))
        .collect();
    bases.extend(inferred);
    bases
}

/// The part of a provider id that names the vendor or host: its first dot-segment, except for
/// the OpenTelemetry semantic conventions' `gcp.*` values (`gcp.vertex_ai`, `gcp.gemini`,
/// `gcp.gen_ai`), where it is the Google product after the dot, and their older `az.*`
/// (`az.ai.openai`, `az.ai.inference`), which is Azure.
fn provider_segment(provider: &str) -> &str {
    let mut parts = provider.split('.');
    match parts.next().unwrap_or("") {
        "gcp" => match parts.next() {
            Some("vertex_ai") => "vertex_ai",
            _ => "gemini",
        },
        "az" => "azure",
        first => first,
    }
}

/// Appends unless already present (lists are short).
fn push(out: &mut Vec<Candidate>, id: String, stripped_date: Option<u32>) {
    if !out.iter().any(|c| c.id == id) {
        out.push(Candidate { id, stripped_date });
    }
}

/// Adds the (vendor, name) bases a modelId implies, given what the provider says.
fn add_bases(kind: ProviderKind, model: &str, bases: &mut Vec<(String, String)>, depth: u32) {
    if depth > 4 {
        return;
    }
    // OpenAI's fine-tuned models: `ft:<base>:<org>:<name>:<id>[:ckpt-step-N]` -> `openai/ft:<base>`.
    if let Some(base) = model.strip_prefix("ft:").and_then(|r| r.split(':').next()) {
        if !base.is_empty() {
            bases.push(("openai".to_string(), format!("ft:{base}")));
        }
        return;
    }
    if !model.contains('/') {
        match kind {
            ProviderKind::Vendor(v) => bases.push((v.to_string(), model.to_string())),
            ProviderKind::Bedrock => bedrock_bases(model, bases),
            ProviderKind::Unknown => {}
        }
        if looks_like_bedrock(model) {
            bedrock_bases(model, bases);
        }
        return;
    }
    // Vertex resource name: projects/p/locations/l/publishers/google/models/gemini-2.5-pro
    if let Some(i) = model.find("publishers/") {
        if let Some((publisher, tail)) = model[i + "publishers/".len()..].split_once('/') {
            let name = tail.strip_prefix("models/").unwrap_or(tail);
            let vendor = vendor_alias(publisher).unwrap_or(publisher);
            bases.push((vendor.to_string(), name.to_string()));
        }
        return;
    }
    // Bedrock ARN: arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-...
    if model.starts_with("arn:") {
        if let Some((_, last)) = model.rsplit_once('/') {
            bedrock_bases(last, bases);
        }
        return;
    }
    let Some((pre, rest)) = model.split_once('/') else {
        return;
    };
    if rest.is_empty() {
        return;
    }
    match pre {
        // Wrappers around an id: Google's `models/x`, `openrouter/vendor/x`.
        "models" | "openrouter" | "litellm" => add_bases(kind, rest, bases, depth + 1),
        p if is_bedrock(p) => bedrock_bases(rest.rsplit('/').next().unwrap_or(rest), bases),
        p => match vendor_alias(p) {
            Some(v) => {
                bases.push((v.to_string(), rest.to_string()));
                if rest.contains('/') {
                    add_bases(ProviderKind::Unknown, rest, bases, depth + 1);
                }
            }
            // Another host's prefix (`groq/`, `together_ai/`): look at what follows.
            None => add_bases(ProviderKind::Unknown, rest, bases, depth + 1),
        },
    }
}

/// Parses a Bedrock model id (region prefix optional) into bases: first Bedrock's own id
/// without the region prefix, as `bedrock/<creator>.<model>` (with its `:N` revision, then
/// without), where the table keeps a price Bedrock charges apart from the vendor's
/// (`bedrock/openai.gpt-5.4`); then (vendor, model): the model without the `:N` revision, then
/// also without Bedrock's `-vN` suffix.
fn bedrock_bases(id: &str, bases: &mut Vec<(String, String)>) {
    let Some((a, b)) = id.split_once('.') else {
        return;
    };
    let (creator, name) = if BEDROCK_REGIONS.contains(&a) {
        match b.split_once('.') {
            Some(x) => x,
            None => return,
        }
    } else {
        (a, b)
    };
    if creator.is_empty() || name.is_empty() {
        return;
    }
    let revised = name;
    let name = match name.rsplit_once(':') {
        Some((n, rev)) if rev.bytes().all(|c| c.is_ascii_digit()) => n,
        _ => name,
    };
    for n in [revised, name] {
        let own = ("bedrock".to_string(), format!("{creator}.{n}"));
        if !bases.contains(&own) {
            bases.push(own);
        }
    }
    let vendor = match creator {
        "meta" => "meta-llama",
        "mistral" => "mistralai",
        c => vendor_alias(c).unwrap_or(c),
    };
    // Bedrock writes DeepSeek's models as `deepseek.r1`.
    let name = if creator == "deepseek" && !name.starts_with("deepseek") {
        format!("deepseek-{name}")
    } else {
        name.to_string()
    };
    let unversioned = strip_v_suffix(&name);
    bases.push((vendor.to_string(), name));
    if let Some(n) = unversioned {
        bases.push((vendor.to_string(), n));
    }
}

/// Bedrock's cross-region inference prefixes.
const BEDROCK_REGIONS: &[&str] = &[
    "us", "eu", "apac", "ap", "global", "us-gov", "jp", "au", "ca", "regional",
];

/// Model creators that appear as the first segment of Bedrock ids.
const BEDROCK_CREATORS: &[&str] = &[
    "anthropic",
    "meta",
    "amazon",
    "cohere",
    "mistral",
    "ai21",
    "deepseek",
    "openai",
    "qwen",
    "google",
    "writer",
    "nvidia",
    "minimax",
    "moonshot",
    "moonshotai",
    "twelvelabs",
    "stability",
];

/// True for ids such as `anthropic.claude-3-haiku-20240307-v1:0` or `us.meta.llama3-...`.
fn looks_like_bedrock(model: &str) -> bool {
    let Some((a, b)) = model.split_once('.') else {
        return false;
    };
    if BEDROCK_REGIONS.contains(&a) {
        return b
            .split_once('.')
            .is_some_and(|(c, _)| BEDROCK_CREATORS.contains(&c));
    }
    BEDROCK_CREATORS.contains(&a) && b.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// `name` without a trailing `-v<digits>`, if it has one.
fn strip_v_suffix(name: &str) -> Option<String> {
    let (head, tail) = name.rsplit_once('-')?;
    let digits = tail.strip_prefix('v')?;
    (!head.is_empty() && !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()))
        .then(|| head.to_string())
}

/// Vendor of a provider id or id prefix, as spelled by client SDKs, LiteLLM and OpenRouter.
pub(crate) fn vendor_alias(seg: &str) -> Option<&'static str> {
    Some(match seg {
        "openai"
        | "azure"
        | "azure-openai"
        | "azure_openai"
        | "azureopenai"
        | "text-completion-openai" => "openai",
        "anthropic" | "claude" => "anthropic",
        "google"
        | "google-vertex"
        | "vertex"
        | "vertex_ai"
        | "vertexai"
        | "google-vertex-ai"
        | "gemini"
        | "google-ai"
        | "google-genai"
        | "google-generative-ai"
        | "googleai"
        | "vertex_ai-language-models" => "google",
        "mistral" | "mistralai" | "mistral-ai" | "mistral_ai" => "mistralai",
        "xai" | "x-ai" | "x_ai" | "grok" => "x-ai",
        "deepseek" | "deepseek-ai" => "deepseek",
        "meta" | "llama" | "meta-llama" | "meta_llama" => "meta-llama",
        "cohere" | "cohere_chat" | "cohere-chat" => "cohere",
        "amazon" | "nova" | "amazon-nova" => "amazon",
        "perplexity" | "perplexityai" | "perplexity-ai" => "perplexity",
        _ => return None,
    })
}

/// Provider ids that mean Amazon Bedrock.
pub(crate) fn is_bedrock(seg: &str) -> bool {
    matches!(
        seg,
        "amazon-bedrock"
            | "bedrock"
            | "aws"
            | "aws-bedrock"
            | "aws_bedrock"
            | "bedrock-converse"
            | "bedrock_converse"
    )
}

fn provider_kind(seg: &str) -> ProviderKind {
    if is_bedrock(seg) {
        ProviderKind::Bedrock
    } else if let Some(v) = vendor_alias(seg) {
        ProviderKind::Vendor(v)
    } else {
        ProviderKind::Unknown
    }
}

/// LiteLLM's spelling of a provider, so `bedrock/...`, `vertex_ai/...` file entries match.
fn route_of(seg: &str) -> &str {
    match seg {
        s if is_bedrock(s) => "bedrock",
        "google-vertex" | "vertex" | "vertexai" | "google-vertex-ai" => "vertex_ai",
        "azure-openai" | "azure_openai" | "azureopenai" => "azure",
        "together" | "togetherai" | "together-ai" => "together_ai",
        "fireworks" | "fireworks-ai" => "fireworks_ai",
        s => s,
    }
}

/// The vendor a model name implies, for providers that host other vendors' models.
pub(crate) fn infer_vendor(name: &str) -> Option<&'static str> {
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
    let b = name.as_bytes();
    if starts(&[
        "gpt-",
        "chatgpt",
        "text-embedding-",
        "davinci",
        "babbage",
        "codex-",
    ]) || (b.len() >= 2 && b[0] == b'o' && b[1].is_ascii_digit())
    {
        Some("openai")
    } else if starts(&["claude"]) {
        Some("anthropic")
    } else if starts(&["gemini", "gemma", "learnlm"]) {
        Some("google")
    } else if starts(&[
        "mistral",
        "mixtral",
        "codestral",
        "pixtral",
        "ministral",
        "magistral",
        "devstral",
        "voxtral",
        "open-mistral",
        "open-mixtral",
    ]) {
        Some("mistralai")
    } else if starts(&["grok"]) {
        Some("x-ai")
    } else if starts(&["deepseek"]) {
        Some("deepseek")
    } else if starts(&["llama", "meta-llama"]) {
        Some("meta-llama")
    } else if starts(&["nova-", "titan-"]) {
        Some("amazon")
    } else if starts(&["command", "embed-english", "embed-multilingual", "embed-v"]) {
        Some("cohere")
    } else if starts(&["sonar"]) {
        Some("perplexity")
    } else {
        None
    }
}

/// `name`, then each form with one more version marker removed, then those forms normalised;
/// each with the release date removed on the way to it, if one was.
fn variants(name: &str) -> Vec<(String, Option<u32>)> {
    let mut stages = vec![(name.to_string(), None)];
    let mut cur = name.to_string();
    let mut date = None;
    if let Some(i) = cur.find('@') {
        // Vertex AI's `claude-3-5-sonnet-v2@20241022`.
        date = release_date(&cur[i + 1..]);
        cur.truncate(i);
        stages.push((cur.clone(), date));
        if let Some(s) = strip_v_suffix(&cur) {
            cur = s;
            stages.push((cur.clone(), date));
        }
    }
    while let Some(next) = strip_once(&cur) {
        date = date.or_else(|| release_date(cur[next.len()..].trim_start_matches('-')));
        stages.push((next.clone(), date));
        cur = next;
    }
    let mut out: Vec<(String, Option<u32>)> = Vec::with_capacity(stages.len() * 2);
    let mut add = |s: String, d: Option<u32>| {
        if !out.iter().any(|(x, _)| *x == s) {
            out.push((s, d));
        }
    };
    for (s, d) in &stages {
        add(s.clone(), *d);
    }
    for (s, d) in &stages {
        add(normalize(s), *d);
    }
    out
}

/// The release date a version marker (without its leading dash) names, as `YYYYMMDD` (day 00
/// when only the month is known): `2024-08-06`, `20241022`, `2512` (Mistral's YYMM, years 2023
/// to 2049, so OpenAI's MMDD `0125` is not one), `08-2024` (Cohere). `None` for other markers
/// (`0709`, `05-06`, `001`, `latest`).
pub(crate) fn release_date(marker: &str) -> Option<u32> {
    let num = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let ymd = |y: u32, m: u32, d: u32| {
        ((1990..=2099).contains(&y) && (1..=12).contains(&m) && d <= 31)
            .then_some(y * 10_000 + m * 100 + d)
    };
    let parts: Vec<&str> = marker.split('-').collect();
    match parts[..] {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            ymd(num(y)?, num(m)?, num(d)?).filter(|v| v % 100 > 0)
        }
        [m, y] if m.len() == 2 && y.len() == 4 => ymd(num(y)?, num(m)?, 0),
        [x] if x.len() == 8 => {
            let v = num(x)?;
            ymd(v / 10_000, v / 100 % 100, v % 100).filter(|v| v % 100 > 0)
        }
        [x] if x.len() == 4 => {
            let v = num(x)?;
            (23..=49)
                .contains(&(v / 100))
                .then(|| ymd(2000 + v / 100, v % 100, 0))
                .flatten()
        }
        _ => None,
    }
}

/// A table key's release date and the family it belongs to: `mistralai/mistral-large-2512` ->
/// (`mistralai/mistral-large`, 20251200), also in normalised spelling. `None` for keys without
/// a trailing release date.
pub(crate) fn family_of(key: &str) -> Option<(Vec<String>, u32)> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (format!("{p}/"), n),
        None => (String::new(), key),
    };
    let (base, date) = match name.rsplit_once('@') {
        Some((b, d)) => (b.to_string(), release_date(d)?),
        None => {
            let base = strip_once(name)?;
            (
                base.clone(),
                release_date(name[base.len()..].trim_start_matches('-'))?,
            )
        }
    };
    let mut bases = vec![format!("{prefix}{base}")];
    let dotted = format!("{prefix}{}", normalize(&base));
    if dotted != bases[0] {
        bases.push(dotted);
    }
    Some((bases, date))
}

/// Removes one trailing version marker, if there is one and something is left.
fn strip_once(s: &str) -> Option<String> {
    if let Some((head, tag)) = s.rsplit_once(':') {
        let numeric = !tag.is_empty() && tag.bytes().all(|c| c.is_ascii_digit());
        if !head.is_empty() && (numeric || tag == "beta" || tag == "latest") {
            return Some(head.to_string());
        }
    }
    let segs: Vec<&str> = s.split('-').collect();
    let n = segs.len();
    if n < 2 {
        return None;
    }
    let digits = |x: &str, len: usize| x.len() == len && x.bytes().all(|c| c.is_ascii_digit());
    let all_digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    let last = segs[n - 1];
    let keep = if n >= 4 && digits(segs[n - 3], 4) && digits(segs[n - 2], 2) && digits(last, 2) {
        n - 3 // -2024-08-06
    } else if n >= 3 && digits(segs[n - 2], 2) && (digits(last, 4) || digits(last, 2)) {
        n - 2 // -08-2024 (Cohere), -05-06 (Gemini previews)
    } else if (all_digits(last) && (3..=8).contains(&last.len()))
        || matches!(last, "latest" | "preview" | "exp" | "experimental")
    {
        n - 1 // -20241022, -0125, -2411, -001, -latest, -preview, -exp
    } else {
        return None;
    };
    (keep > 0).then(|| segs[..keep].join("-"))
}

/// Spelling fixes: Azure's `gpt-35` -> `gpt-3.5`, `llama3` -> `llama-3`, then version dashes
/// between single digits as dots (`3-5-sonnet` -> `3.5-sonnet`, `4-1` -> `4.1`).
fn normalize(s: &str) -> String {
    let mut s = match s.strip_prefix("gpt-35") {
        Some(rest) => format!("gpt-3.5{rest}"),
        None => s.to_string(),
    };
    if let Some(rest) = s.strip_prefix("llama") {
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            s = format!("llama-{rest}");
        }
    }
    dotted(&s)
}

/// Replaces `d-d` with `d.d` where both are single digits and the second ends the segment.
fn dotted(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in b.iter().enumerate() {
        let is_version_dash = c == b'-'
            && i >= 1
            && b[i - 1].is_ascii_digit()
            && (i < 2 || !(b[i - 2].is_ascii_digit() || b[i - 2] == b'.'))
            && b.get(i + 1).is_some_and(u8::is_ascii_digit)
            && b.get(i + 2)
                .is_none_or(|c| matches!(c, b'-' | b':' | b'@' | b'.'));
        out.push(if is_version_dash { '.' } else { c as char });
    }
    out
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
