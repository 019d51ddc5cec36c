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
    /// Time to first token in seconds (ranked after the milliseconds: `2 +` this).
    TtftSeconds(u8),
}

/// The rank of `llm.system` among the provider names: the mapper keeps its value apart too
/// (`usage::Origin::llm_system`), since it tells one instrumentation's ways of counting apart.
pub const LLM_SYSTEM: u8 = 3;

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
        // Pydantic AI's names for Anthropic's thinking and Gemini's thoughts (parts of output).
        ("gen_ai.usage.details.thinking_tokens", Usage(GenAi, Reasoning, 5)),
        ("gen_ai.usage.details.thoughts_tokens", Usage(GenAi, Reasoning, 6)),
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
        // The span attribute of the conventions; the other is their metric's name, which
        // some instrumentations set on spans too.
        ("gen_ai.response.time_to_first_chunk", TtftSeconds(0)),
        ("gen_ai.server.time_to_first_token", TtftSeconds(1)),
        // OpenInference.
        ("openinference.span.kind", OpenInferenceKind),
        ("llm.provider", Provider(2)),
        ("llm.system", Provider(LLM_SYSTEM)),
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

/// `TABLE` as an open-addressing hash table: a key is found with one hash of its length and
/// its first and last eight bytes, and (nearly always) one comparison. Built once, at first use.
struct Index {
    /// Per slot: 1 + the index in `TABLE` of the name there, or 0 for an empty slot.
    slots: [u8; SLOTS],
}

/// Slots of `Index`: a power of two, at least twice `TABLE`'s length (`index` asserts it), so
/// a probe that misses meets an empty slot soon.
const SLOTS: usize = 512;

/// The longest name in `TABLE`; longer keys are never mapped (but may be message parts).
const MAX_KEY: usize = 48;

/// The hash of a key: its length and its first and last (up to) eight bytes, mixed.
#[inline]
fn hash(key: &[u8]) -> usize {
    let n = key.len();
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let (first, last) = if n >= 8 {
        (word(&key[..8]), word(&key[n - 8..]))
    } else {
        (word(key), 0)
    };
    let h = (first ^ last.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

fn index() -> &'static Index {
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        assert!(
            TABLE.len() * 2 <= SLOTS && TABLE.len() < 255,
            "Index too small for TABLE"
        );
        let mut slots = [0u8; SLOTS];
        for (i, (name, _)) in TABLE.iter().enumerate() {
            assert!(name.len() <= MAX_KEY, "a name longer than MAX_KEY");
            let mut at = hash(name.as_bytes()) & (SLOTS - 1);
            while slots[at] != 0 {
                at = (at + 1) & (SLOTS - 1);
            }
            slots[at] = i as u8 + 1;
        }
        Index { slots }
    })
}

/// What `key` means.
#[inline]
pub fn classify(key: &str) -> Key {
    if key.len() <= MAX_KEY {
        let index = index();
        let mut at = hash(key.as_bytes()) & (SLOTS - 1);
        while let Some(i) = usize::from(index.slots[at]).checked_sub(1) {
            let (name, meaning) = TABLE[i];
            if name.len() == key.len() && name == key {
                return meaning;
            }
            at = (at + 1) & (SLOTS - 1);
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

/// Which field of a flattened message a key names (`part`), in the order a message's fields
/// are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    Role,
    /// The message's text (`content`, `message.content`).
    Content,
    /// Part `n` of a multi-part content's text (OpenInference's
    /// `message.contents.N.message_content.text`).
    ContentPart(u32),
}

/// A flattened message field: `(index, field)` after the prefix of `key`, where `field` is
/// `None` for a field that is not rendered (tool calls, images, a part's type: consumed,
/// not rendered).
pub fn part(key: &str, prefix_len: usize) -> Option<(u32, Option<Field>)> {
    let rest = &key[prefix_len..];
    let dot = rest.find('.')?;
    let index: u32 = rest[..dot].parse().ok()?;
    let field = &rest[dot + 1..];
    let which = match field {
        "role" | "message.role" => Some(Field::Role),
        "content" | "message.content" => Some(Field::Content),
        _ => field
            .strip_prefix("message.contents.")
            .and_then(|f| f.strip_suffix(".message_content.text"))
            .and_then(|n| n.parse().ok())
            .map(Field::ContentPart),
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
        let prefix = "llm.input_messages.".len();
        for (key, field) in [
            ("llm.input_messages.3.message.role", Some(Field::Role)),
            ("llm.input_messages.3.message.content", Some(Field::Content)),
            (
                "llm.input_messages.3.message.contents.12.message_content.text",
                Some(Field::ContentPart(12)),
            ),
            (
                "llm.input_messages.3.message.contents.0.message_content.type",
                None,
            ),
            (
                "llm.input_messages.3.message.contents.x.message_content.text",
                None,
            ),
            (
                "llm.input_messages.3.message.tool_calls.0.tool_call.id",
                None,
            ),
        ] {
            assert_eq!(part(key, prefix), Some((3, field)), "{key}");
        }
        // Keys that differ from a name only in the middle, or are a name's prefix.
        // (Same length, first and last eight bytes as `gen_ai.usage.input_tokens`: the same hash.)
        assert_eq!(classify("gen_ai.usage.audit_tokens"), Key::Other);
        assert_eq!(classify("gen_ai"), Key::Other);
        assert_eq!(classify("user.i"), Key::Other);
    }

    /// Every name of a session or a user is the mapper's name for its rank (it keeps a value
    /// per rank, and a worse-ranked one that differs under that name), so no rank is past
    /// them.
    #[test]
    fn session_and_user_ranks_are_the_mappers_names() {
        use super::super::map::{SESSION_KEYS, USER_KEYS};
        for &(name, meaning) in TABLE {
            let (names, rank) = match meaning {
                Key::Session(rank) => (&SESSION_KEYS, rank),
                Key::User(rank) => (&USER_KEYS, rank),
                _ => continue,
            };
            assert_eq!(names.get(usize::from(rank)), Some(&name), "{name}");
        }
    }

    /// The hash spreads the names: every name sits within a few slots of its hash, so a lookup
    /// compares a key with one name, rarely two.
    #[test]
    fn names_are_found_in_few_probes() {
        let index = index();
        for (i, (name, _)) in TABLE.iter().enumerate() {
            let home = hash(name.as_bytes()) & (SLOTS - 1);
            let at = index
                .slots
                .iter()
                .position(|&s| usize::from(s) == i + 1)
                .expect("every name is in the index");
            let probes = (at + SLOTS - home) % SLOTS + 1;
            assert!(probes <= 3, "{name}: {probes} probes");
        }
    }
}
