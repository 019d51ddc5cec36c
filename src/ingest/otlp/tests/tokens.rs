//! How each instrumentation counted tokens, and what v1 stores from each (docs/otlp.md, "Tokens").

use super::*;

/// How each instrumentation counted: the same call (3000 tokens that missed the cache, 1024
/// read from it, 512 written to it, 250 out) as each one reports it, and as v1 must store it:
/// input 4024 (v1 input includes cache reads, not writes), cached 1024, cache write 512.
#[test]
fn token_counting_by_instrumentation() {
    let chat = ("gen_ai.operation.name", s("chat"));
    let exclusive = |read: &'static str, write: &'static str| {
        vec![
            chat.clone(),
            ("gen_ai.usage.input_tokens", i(3000)),
            (read, i(1024)),
            (write, i(512)),
            ("gen_ai.usage.output_tokens", i(250)),
        ]
    };
    let with = |mut v: Vec<(&'static str, AnyValue)>, extra: (&'static str, AnyValue)| {
        v.push(extra);
        v
    };
    let total = |n| ("gen_ai.usage.total_tokens", i(n));
    // (scope, attributes, expected usage): a `Case` with the scope in the name's place.
    let cases: Vec<Case<'_>> = vec![
        (
            // The conventions' (and OpenLLMetry's Anthropic instrumentation's) count: input
            // includes reads and writes.
            "opentelemetry.instrumentation.anthropic",
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(4536)),
                ("gen_ai.usage.cache_read.input_tokens", i(1024)),
                ("gen_ai.usage.cache_creation.input_tokens", i(512)),
                ("gen_ai.usage.output_tokens", i(250)),
                total(4786),
            ],
            "usage=4024/250/1024/512/-/4786",
        ),
        (
            // OpenLLMetry's Bedrock instrumentation passes Bedrock's inputTokens (the cache
            // left out) and a total of its own (input + output): known by its scope.
            "opentelemetry.instrumentation.bedrock",
            with(
                exclusive(
                    "gen_ai.usage.cache_read_input_tokens",
                    "gen_ai.usage.cache_creation_input_tokens",
                ),
                total(3250),
            ),
            "usage=4024/250/1024/512/-/3250",
        ),
        (
            // Strands Agents on Bedrock: Bedrock's inputTokens (the cache left out), its own
            // name for cache writes, and Bedrock's totalTokens, which counts the cache: the
            // total says how the input was counted.
            "strands.telemetry.tracer",
            with(
                exclusive(
                    "gen_ai.usage.cache_read_input_tokens",
                    "gen_ai.usage.cache_write_input_tokens",
                ),
                total(4786),
            ),
            "usage=4024/250/1024/512/-/4786",
        ),
        (
            // Strands Agents on OpenAI (or LiteLLM): OpenAI's prompt_tokens, which include the
            // cached ones, and OpenAI's total. (It was read as Bedrock's: the 1024 cached
            // tokens were counted twice.)
            "strands.telemetry.tracer",
            vec![
                chat.clone(),
                ("gen_ai.usage.prompt_tokens", i(2000)),
                ("gen_ai.usage.input_tokens", i(2000)),
                ("gen_ai.usage.cache_read_input_tokens", i(1024)),
                ("gen_ai.usage.completion_tokens", i(300)),
                ("gen_ai.usage.output_tokens", i(300)),
                total(2300),
            ],
            "usage=2000/300/1024/-/-/2300",
        ),
        (
            // An instrumentation we do not know, whose total counts the cache once more than
            // an inclusive input could: the input left the cache out.
            "someone.else",
            with(
                exclusive(
                    "gen_ai.usage.cache_read.input_tokens",
                    "gen_ai.usage.cache_creation.input_tokens",
                ),
                total(4786),
            ),
            "usage=4024/250/1024/512/-/4786",
        ),
        (
            // The same counts with nothing to tell them apart: the conventions' meaning
            // (input includes the cache) holds, as documented in docs/otlp.md.
            "someone.else",
            exclusive(
                "gen_ai.usage.cache_read.input_tokens",
                "gen_ai.usage.cache_creation.input_tokens",
            ),
            "usage=2488/250/1024/512/-/-",
        ),
        (
            // Input below its cache parts: it cannot have included them.
            "someone.else",
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(100)),
                ("gen_ai.usage.cache_read.input_tokens", i(1024)),
                ("gen_ai.usage.cache_creation.input_tokens", i(512)),
            ],
            "usage=1124/-/1024/512/-/-",
        ),
        (
            // OpenAI's count (cached inside the prompt, reasoning inside the completion): the
            // total is input + output, nothing is added.
            "someone.else",
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(2000)),
                ("gen_ai.usage.cache_read.input_tokens", i(1024)),
                ("gen_ai.usage.output_tokens", i(300)),
                ("gen_ai.usage.reasoning.output_tokens", i(128)),
                total(2300),
            ],
            "usage=2000/300/1024/-/128/2300",
        ),
        (
            // Gemini's candidates count without the thoughts, total with them: output gets
            // the reasoning added.
            "someone.else",
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(1000)),
                ("gen_ai.usage.output_tokens", i(400)),
                ("gen_ai.usage.reasoning.output_tokens", i(300)),
                total(1700),
            ],
            "usage=1000/700/-/-/300/1700",
        ),
        (
            // A total that fits leaving out either part (cache reads = reasoning): it says
            // nothing, the conventions' meaning holds.
            "someone.else",
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(1000)),
                ("gen_ai.usage.cache_read.input_tokens", i(300)),
                ("gen_ai.usage.output_tokens", i(500)),
                ("gen_ai.usage.reasoning.output_tokens", i(300)),
                total(1800),
            ],
            "usage=1000/500/300/-/300/1800",
        ),
        (
            // OpenInference's Bedrock instrumentation: Bedrock's counts, known by its scope.
            "openinference.instrumentation.bedrock",
            vec![
                ("openinference.span.kind", s("LLM")),
                ("llm.token_count.prompt", i(3000)),
                ("llm.token_count.prompt_details.cache_read", i(1024)),
                ("llm.token_count.prompt_details.cache_write", i(512)),
                ("llm.token_count.completion", i(250)),
            ],
            "usage=4024/250/1024/512/-/-",
        ),
        (
            // ... except on InvokeModel for a Claude model (the only spans where it sets
            // `llm.system`), where it adds Anthropic's cache counts to the prompt itself. (They
            // were added again: 5560.)
            "openinference.instrumentation.bedrock",
            vec![
                ("openinference.span.kind", s("LLM")),
                ("llm.provider", s("aws")),
                ("llm.system", s("anthropic")),
                ("llm.token_count.prompt", i(4536)),
                ("llm.token_count.prompt_details.cache_read", i(1024)),
                ("llm.token_count.prompt_details.cache_write", i(512)),
                ("llm.token_count.completion", i(250)),
            ],
            "usage=4024/250/1024/512/-/-",
        ),
        (
            // OpenInference's JS Bedrock instrumentation passes Anthropic's and Nova's
            // InvokeModel counts on (the cache left out), whatever its `llm.system`.
            "@arizeai/openinference-instrumentation-bedrock",
            vec![
                ("openinference.span.kind", s("LLM")),
                ("llm.provider", s("aws")),
                ("llm.system", s("anthropic")),
                ("llm.token_count.prompt", i(3000)),
                ("llm.token_count.prompt_details.cache_read", i(1024)),
                ("llm.token_count.prompt_details.cache_write", i(512)),
                ("llm.token_count.completion", i(250)),
            ],
            "usage=4024/250/1024/512/-/-",
        ),
        (
            // The AI SDK before v6 (no inputTokenDetails) passes each provider's own counts:
            // Anthropic's input leaves the cache out (its writes are reported nowhere but in
            // `ai.response.providerMetadata`).
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("anthropic.messages")),
                ("ai.usage.inputTokens", i(3000)),
                ("ai.usage.cachedInputTokens", i(1024)),
                ("ai.usage.outputTokens", i(250)),
                ("ai.usage.totalTokens", i(3250)),
            ],
            "usage=4024/250/1024/-/-/3250",
        ),
        (
            // ... and Bedrock's too.
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("amazon-bedrock")),
                ("ai.usage.inputTokens", i(3000)),
                ("ai.usage.cachedInputTokens", i(1024)),
            ],
            "usage=4024/-/1024/-/-/-",
        ),
        (
            // ... and Anthropic's models on Vertex AI and Bedrock through their own providers.
            "ai",
            vec![
                ("ai.operationId", s("ai.generateText.doGenerate")),
                ("ai.model.provider", s("vertex.anthropic.messages")),
                ("ai.usage.promptTokens", i(3000)),
                ("ai.usage.cachedInputTokens", i(1024)),
            ],
            "usage=4024/-/1024/-/-/-",
        ),
        (
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("bedrock.anthropic.messages")),
                ("ai.usage.inputTokens", i(3000)),
                ("ai.usage.cachedInputTokens", i(1024)),
            ],
            "usage=4024/-/1024/-/-/-",
        ),
        (
            // ... OpenAI's input includes the cache.
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("openai.chat")),
                ("ai.usage.inputTokens", i(2000)),
                ("ai.usage.cachedInputTokens", i(1024)),
            ],
            "usage=2000/-/1024/-/-/-",
        ),
        (
            // ... Google's output leaves the thoughts out.
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("google.generative-ai")),
                ("ai.usage.inputTokens", i(1000)),
                ("ai.usage.outputTokens", i(400)),
                ("ai.usage.reasoningTokens", i(300)),
            ],
            "usage=1000/700/-/-/300/-",
        ),
        (
            // (Vertex AI's Gemini provider alike.)
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("google.vertex.chat")),
                ("ai.usage.outputTokens", i(400)),
                ("ai.usage.reasoningTokens", i(300)),
            ],
            "usage=-/700/-/-/300/-",
        ),
        (
            // v6 (inputTokenDetails present) counts alike for every provider: inclusive.
            "ai",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("google.generative-ai")),
                ("ai.usage.inputTokens", i(1000)),
                ("ai.usage.inputTokenDetails.noCacheTokens", i(1000)),
                ("ai.usage.outputTokens", i(700)),
                ("ai.usage.outputTokenDetails.reasoningTokens", i(300)),
            ],
            "usage=1000/700/-/-/300/-",
        ),
    ];
    for (scope, attrs, expected) in cases {
        let got = decode_both(&export_in(scope, vec![span(1, 0, "call", &attrs)]));
        let usage = got
            .split_whitespace()
            .find(|f| f.starts_with("usage="))
            .unwrap_or("no usage");
        assert_eq!(
            usage, expected,
            "\nscope {scope}, attributes: {attrs:?}\n{got}"
        );
    }
}
