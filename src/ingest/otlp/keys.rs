//! The attribute names the mapping understands, dialect by dialect: one table from a key to
//! what it means for the span (`Key`). Everything not listed here goes into metadata.
//!
//! Where several names say the same thing (a dialect's current and older spelling, or two
//! dialects on one span), each carries a rank, and the mapping keeps the best-ranked (lowest)
//! value present. The table is written out in `docs/otlp.md`; every row has a test in
//! `tests.rs`.

/// Which convention a token count is written in; each has its own meaning of "input".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenTelemetry GenAI (`gen_ai.usage.*`, current and older names), OpenLLMetry, Pydantic AI.
    GenAi = 0,
    /// OpenInference (`llm.token_count.*`).
    OpenInference = 1,
    /// Vercel AI SDK (`ai.usage.*`).
    AiSdk = 2,
}

/// A token count's meaning within its dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    Input = 0,
    Output = 1,
    Total = 2,
    CacheRead = 3,
    CacheWrite = 4,
    Reasoning = 5,
    /// Input tokens that neither hit nor filled the cache (the AI SDK v6).
    NoCache = 6,
}

/// What an attribute is for. `u8` fields are ranks: lower wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Not mapped: kept in metadata.
    Other,
    /// `gen_ai.operation.name`.
    Operation,
    /// `openinference.span.kind`.
    OpenInferenceKind,
    /// `ai.operationId` (Vercel AI SDK).
    AiOperationId,
    /// `llm.request.type` (OpenLLMetry).
    LlmRequestType,
    /// `traceloop.span.kind` (OpenLLMetry).
    TraceloopKind,
    Provider(u8),
    Model(u8),
    Usage(Dialect, Bucket, u8),
    /// A cost the client computed, in USD.
    Cost(u8),
    InputText(u8),
    OutputText(u8),
    /// One field of flattened input messages (`llm.input_messages.0.message.content`,
    /// `gen_ai.prompt.0.content`); the rank is the prefix's index in `INPUT_PARTS`.
    InputPart(u8),
    OutputPart(u8),
    ToolCatalog(u8),
    Session(u8),
    User(u8),
    AgentName,
    Fingerprint(u8),
    /// Time to first token in milliseconds.
    TtftMs(u8),
    /// Time to first token in seconds.
    TtftSeconds,
}

/// Prefixes of flattened message lists, each followed by `<index>.<field>`: the input ones,
/// then the output ones.
pub const INPUT_PARTS: [&str; 2] = ["llm.input_messages.", "gen_ai.prompt."];
pub const OUTPUT_PARTS: [&str; 2] = ["llm.output_messages.", "gen_ai.completion."];

/// Every attribute name the mapping understands, by dialect, and what it means.
#[rustfmt::skip]
const TABLE: &[(&str, Key)] = {
    use Bucket::*;
    use Dialect::*;
    use Key::*;
    &[
        // GenAI semantic conventions, then their older and vendor spellings.
        ("gen_ai.operation.name", Operation),
        ("gen_ai.provider.name", Provider(0)),
        ("gen_ai.system", Provider(1)),
        ("gen_ai.response.model", Model(0)),
        ("gen_ai.request.model", Model(2)),
        ("gen_ai.usage.input_tokens", Usage(GenAi, Input, 0)),
        ("gen_ai.usage.prompt_tokens", Usage(GenAi, Input, 1)),
        ("gen_ai.usage.output_tokens", Usage(GenAi, Output, 0)),
        ("gen_ai.usage.completion_tokens", Usage(GenAi, Output, 1)),
        ("gen_ai.usage.total_tokens", Usage(GenAi, Total, 0)),
        ("llm.usage.total_tokens", Usage(GenAi, Total, 1)),
        ("gen_ai.usage.cache_read.input_tokens", Usage(GenAi, CacheRead, 0)),
        ("gen_ai.usage.cache_read_input_tokens", Usage(GenAi, CacheRead, 1)),
        ("gen_ai.usage.input_tokens.cached", Usage(GenAi, CacheRead, 2)),
        ("gen_ai.usage.details.cache_read_tokens", Usage(GenAi, CacheRead, 3)),
        ("gen_ai.usage.cache_creation.input_tokens", Usage(GenAi, CacheWrite, 0)),
        ("gen_ai.usage.cache_creation_input_tokens", Usage(GenAi, CacheWrite, 1)),
        ("gen_ai.usage.input_tokens.cache_write", Usage(GenAi, CacheWrite, 2)),
        ("gen_ai.usage.details.cache_write_tokens", Usage(GenAi, CacheWrite, 3)),
        ("gen_ai.usage.cache_write_input_tokens", Usage(GenAi, CacheWrite, 4)),
        ("gen_ai.usage.reasoning.output_tokens", Usage(GenAi, Reasoning, 0)),
        ("gen_ai.usage.reasoning_tokens", Usage(GenAi, Reasoning, 1)),
        ("gen_ai.usage.output_tokens.reasoning", Usage(GenAi, Reasoning, 2)),
        ("gen_ai.usage.details.reasoning_tokens", Usage(GenAi, Reasoning, 3)),
        ("llm.usage.reasoning_tokens", Usage(GenAi, Reasoning, 4)),
        ("gen_ai.usage.cost", Cost(0)),
        ("gen_ai.input.messages", InputText(0)),
        ("gen_ai.prompt", InputText(4)),
        ("gen_ai.tool.call.arguments", InputText(6)),
        ("gen_ai.output.messages", OutputText(0)),
        ("gen_ai.completion", OutputText(5)),
        ("gen_ai.tool.call.result", OutputText(7)),
        ("gen_ai.tool.definitions", ToolCatalog(0)),
        ("gen_ai.conversation.id", Session(1)),
        ("gen_ai.agent.name", AgentName),
        ("gen_ai.openai.response.system_fingerprint", Fingerprint(0)),
        ("openai.response.system_fingerprint", Fingerprint(1)),
        ("gen_ai.server.time_to_first_token", TtftSeconds),
        // OpenInference.
        ("openinference.span.kind", OpenInferenceKind),
        ("llm.provider", Provider(2)),
        ("llm.system", Provider(3)),
        ("llm.model_name", Model(3)),
        ("embedding.model_name", Model(4)),
        ("llm.token_count.prompt", Usage(OpenInference, Input, 0)),
        ("llm.token_count.completion", Usage(OpenInference, Output, 0)),
        ("llm.token_count.total", Usage(OpenInference, Total, 0)),
        ("llm.token_count.prompt_details.cache_read", Usage(OpenInference, CacheRead, 0)),
        ("llm.token_count.prompt_details.cache_write", Usage(OpenInference, CacheWrite, 0)),
        ("llm.token_count.completion_details.reasoning", Usage(OpenInference, Reasoning, 0)),
        ("llm.cost.total", Cost(1)),
        ("input.value", InputText(1)),
        ("output.value", OutputText(1)),
        ("session.id", Session(0)),
        ("user.id", User(0)),
        ("enduser.id", User(1)),
        // OpenLLMetry (Traceloop).
        ("llm.request.type", LlmRequestType),
        ("traceloop.span.kind", TraceloopKind),
        ("traceloop.entity.input", InputText(5)),
        ("traceloop.entity.output", OutputText(6)),
        // Vercel AI SDK.
        ("ai.operationId", AiOperationId),
        ("ai.model.provider", Provider(4)),
        ("ai.response.model", Model(1)),
        ("ai.model.id", Model(5)),
        ("ai.usage.inputTokens", Usage(AiSdk, Input, 0)),
        ("ai.usage.promptTokens", Usage(AiSdk, Input, 1)),
        ("ai.usage.tokens", Usage(AiSdk, Input, 2)),
        ("ai.usage.outputTokens", Usage(AiSdk, Output, 0)),
        ("ai.usage.completionTokens", Usage(AiSdk, Output, 1)),
        ("ai.usage.totalTokens", Usage(AiSdk, Total, 0)),
        ("ai.usage.cachedInputTokens", Usage(AiSdk, CacheRead, 0)),
        ("ai.usage.inputTokenDetails.cacheReadTokens", Usage(AiSdk, CacheRead, 1)),
        ("ai.usage.inputTokenDetails.cacheWriteTokens", Usage(AiSdk, CacheWrite, 0)),
        ("ai.usage.inputTokenDetails.noCacheTokens", Usage(AiSdk, NoCache, 0)),
        ("ai.usage.reasoningTokens", Usage(AiSdk, Reasoning, 0)),
        ("ai.usage.outputTokenDetails.reasoningTokens", Usage(AiSdk, Reasoning, 1)),
        ("ai.prompt.messages", InputText(2)),
        ("ai.prompt", InputText(3)),
        ("ai.toolCall.args", InputText(7)),
        ("ai.value", InputText(8)),
        ("ai.values", InputText(9)),
        ("ai.response.text", OutputText(2)),
        ("ai.response.object", OutputText(3)),
        ("ai.response.toolCalls", OutputText(4)),
        ("ai.toolCall.result", OutputText(8)),
        ("ai.prompt.tools", ToolCatalog(1)),
        ("ai.response.msToFirstChunk", TtftMs(0)),
        ("ai.stream.msToFirstChunk", TtftMs(1)),
        // Other clients' cost attribute.
        ("operation.cost", Cost(2)),
    ]
};

/// `TABLE` grouped by key length: the index in `TABLE` of each entry of a length, so a lookup
/// compares a key with the few names of its length only. Built once, at first use.
struct ByLength {
    /// `(start, end)` into `order` per length.
    ranges: [(u16, u16); MAX_KEY + 1],
    /// Indexes into `TABLE`, sorted by the name's length.
    order: Vec<u16>,
}

/// The longest name in `TABLE`; longer keys are never mapped (but may be message parts).
const MAX_KEY: usize = 48;

fn by_length() -> &'static ByLength {
    static INDEX: std::sync::OnceLock<ByLength> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut order: Vec<u16> = (0..TABLE.len() as u16).collect();
        order.sort_by_key(|&i| TABLE[usize::from(i)].0.len());
        let mut ranges = [(0u16, 0u16); MAX_KEY + 1];
        for (at, &i) in order.iter().enumerate() {
            let len = TABLE[usize::from(i)].0.len();
            assert!(len <= MAX_KEY, "a name longer than MAX_KEY");
            if ranges[len] == (0, 0) {
                ranges[len].0 = at as u16;
            }
            ranges[len].1 = at as u16 + 1;
        }
        ByLength { ranges, order }
    })
}

/// What `key` means.
#[inline]
pub fn classify(key: &str) -> Key {
    if key.len() <= MAX_KEY {
        let index = by_length();
        let (start, end) = index.ranges[key.len()];
        for &i in &index.order[usize::from(start)..usize::from(end)] {
            let (name, meaning) = TABLE[usize::from(i)];
            if name == key {
                return meaning;
            }
        }
    }
    for (rank, prefix) in INPUT_PARTS.iter().enumerate() {
        if is_part(key, prefix) {
            return Key::InputPart(rank as u8);
        }
    }
    for (rank, prefix) in OUTPUT_PARTS.iter().enumerate() {
        if is_part(key, prefix) {
            return Key::OutputPart(rank as u8);
        }
    }
    Key::Other
}

/// `prefix` followed by a digit (`gen_ai.prompt.0.content`, not `gen_ai.prompt.tokens`).
#[inline]
fn is_part(key: &str, prefix: &str) -> bool {
    key.len() > prefix.len()
        && key.starts_with(prefix)
        && key.as_bytes()[prefix.len()].is_ascii_digit()
}

/// A flattened message field: `(index, field)` after the prefix of `key`, where `field` is
/// `Some(true)` for the role, `Some(false)` for the text content, `None` for anything else
/// (tool calls, images: consumed, not rendered).
pub fn part(key: &str, prefix_len: usize) -> Option<(u32, Option<bool>)> {
    let rest = &key[prefix_len..];
    let dot = rest.find('.')?;
    let index: u32 = rest[..dot].parse().ok()?;
    let field = &rest[dot + 1..];
    let which = match field {
        "role" | "message.role" => Some(true),
        "content" | "message.content" => Some(false),
        _ => None,
    };
    Some((index, which))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_classifies_as_its_table_entry() {
        for &(name, meaning) in TABLE {
            assert_eq!(classify(name), meaning, "{name}");
            assert_eq!(
                TABLE.iter().filter(|e| e.0 == name).count(),
                1,
                "{name} twice"
            );
        }
        assert_eq!(classify("gen_ai.usage.input_token"), Key::Other);
        assert_eq!(classify(""), Key::Other);
        assert_eq!(classify(&"x".repeat(200)), Key::Other);
        assert_eq!(classify("gen_ai.prompt.0.content"), Key::InputPart(1));
        assert_eq!(
            classify("llm.output_messages.12.message.role"),
            Key::OutputPart(0)
        );
        assert_eq!(classify("gen_ai.prompt.tokens"), Key::Other);
    }
}
