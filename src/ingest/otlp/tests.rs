//! The mapping, dialect by dialect: every row of `docs/otlp.md`'s table is a case here. Each
//! case is one span's attributes, encoded by prost (opentelemetry-proto's types) and also
//! written as OTLP/JSON; both decodes must render the same, and that rendering is checked.

use opentelemetry_proto::tonic::common::v1::AnyValue;

use super::testkit::*;

/// A case: span name, attributes, expected rendering.
type Case<'s> = (&'s str, Vec<(&'s str, AnyValue)>, &'s str);

/// One span named `name` with `attrs`: its rendering (without the counts line when clean).
#[track_caller]
fn check(name: &str, attrs: &[(&str, AnyValue)], expected: &str) {
    check_in("lib", name, attrs, expected);
}

/// As `check`, the span sent by the instrumentation scope `scope`.
#[track_caller]
fn check_in(scope: &str, name: &str, attrs: &[(&str, AnyValue)], expected: &str) {
    let got = decode_both(&export_in(scope, vec![span(1, 0, name, attrs)]));
    let got = got
        .strip_suffix("\nrejected=0 truncated=0 dropped=0")
        .unwrap_or(&got);
    assert_eq!(got, expected, "\nscope {scope}, attributes: {attrs:?}");
}

#[test]
fn genai_current() {
    let usage = [
        ("gen_ai.usage.input_tokens", i(1000)),
        ("gen_ai.usage.output_tokens", i(200)),
        ("gen_ai.usage.cache_read.input_tokens", i(300)),
        ("gen_ai.usage.cache_creation.input_tokens", i(100)),
        ("gen_ai.usage.reasoning.output_tokens", i(50)),
    ];
    let with = |extra: &[(&'static str, AnyValue)]| {
        let mut v = usage.to_vec();
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<Case<'_>> = vec![
        (
            "chat gpt-4o",
            with(&[
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.provider.name", s("openai")),
                ("gen_ai.system", s("not-me")),
                ("gen_ai.request.model", s("gpt-4o")),
                ("gen_ai.response.model", s("gpt-4o-2024-08-06")),
                ("gen_ai.request.temperature", d(0.7)),
            ]),
            // Input 1000 includes reads 300 and writes 100: v1 input = 1000 - 100.
            "llm chat gpt-4o provider=openai model=gpt-4o-2024-08-06 usage=900/200/300/100/50/- meta[gen_ai.request.temperature=0.7]",
        ),
        (
            "text",
            vec![("gen_ai.operation.name", s("text_completion")), ("gen_ai.request.model", s("m"))],
            "llm text model=m",
        ),
        (
            "gen",
            vec![("gen_ai.operation.name", s("generate_content")), ("gen_ai.provider.name", s("gcp.gemini"))],
            "llm gen provider=gcp.gemini",
        ),
        (
            "embeddings",
            vec![("gen_ai.operation.name", s("embeddings")), ("gen_ai.usage.input_tokens", i(12))],
            "embedding embeddings usage=12/-/-/-/-/-",
        ),
        (
            "execute_tool get_weather",
            vec![
                ("gen_ai.operation.name", s("execute_tool")),
                ("gen_ai.tool.name", s("get_weather")),
                ("gen_ai.tool.call.arguments", s("{\"city\":\"Paris\"}")),
                ("gen_ai.tool.call.result", s("sunny")),
            ],
            "tool execute_tool get_weather input={\"city\":\"Paris\"} output=sunny meta[gen_ai.tool.name=get_weather]",
        ),
        (
            // Aggregate usage on an agent span: metadata, never priced.
            "invoke_agent helper",
            with(&[
                ("gen_ai.operation.name", s("invoke_agent")),
                ("gen_ai.agent.name", s("helper")),
                ("gen_ai.usage.cost", d(0.5)),
            ]),
            "agent invoke_agent helper agent=helper meta[gen_ai.usage.input_tokens=1000,gen_ai.usage.output_tokens=200,gen_ai.usage.cache_read.input_tokens=300,gen_ai.usage.cache_creation.input_tokens=100,gen_ai.usage.reasoning.output_tokens=50,gen_ai.usage.cost=0.5]",
        ),
        ("create", vec![("gen_ai.operation.name", s("create_agent"))], "agent create"),
        ("wf", vec![("gen_ai.operation.name", s("invoke_workflow"))], "other wf meta[gen_ai.operation.name=invoke_workflow]"),
        (
            // Only the attribute that decided the type is left out; the others say something
            // of their own (here, that OpenLLMetry saw a task).
            "mixed",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("traceloop.span.kind", s("task")),
                ("openinference.span.kind", s("LLM")),
            ],
            "llm mixed meta[traceloop.span.kind=task,openinference.span.kind=LLM]",
        ),
        (
            "content",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.input.messages", s("[{\"role\":\"user\",\"parts\":[]}]")),
                ("gen_ai.output.messages", arr(vec![kvl(vec![("role", s("assistant"))])])),
                ("gen_ai.tool.definitions", s("[{\"name\":\"f\"}]")),
                ("gen_ai.usage.cost", d(0.0123)),
                ("gen_ai.conversation.id", s("conv-1")),
                ("user.id", s("u-7")),
                ("gen_ai.openai.response.system_fingerprint", s("fp_1")),
                ("gen_ai.server.time_to_first_token", d(0.25)),
            ],
            "llm content cost=0.0123000000 input=[{\"role\":\"user\",\"parts\":[]}] output=[{\"role\":\"assistant\"}] tools=[{\"name\":\"f\"}] ttft=250 fp=fp_1 session=conv-1 user=u-7",
        ),
        (
            // The conventions' span attribute for the time to first chunk, in seconds, wins
            // over their metric's name set on a span.
            "ttft",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.server.time_to_first_token", d(0.25)),
                ("gen_ai.response.time_to_first_chunk", d(0.5)),
            ],
            "llm ttft ttft=500",
        ),
    ];
    for (name, attrs, expected) in cases {
        check(name, &attrs, expected);
    }
}

#[test]
fn genai_older_names_and_inconsistent_counts() {
    let chat = ("gen_ai.operation.name", s("chat"));
    let cases: Vec<(Vec<(&str, AnyValue)>, &str)> = vec![
        (
            // The names before 1.27 (and OpenLLMetry's), a system but no provider name.
            vec![
                chat.clone(),
                ("gen_ai.system", s("anthropic")),
                ("gen_ai.usage.prompt_tokens", i(500)),
                ("gen_ai.usage.completion_tokens", i(20)),
                ("gen_ai.usage.total_tokens", i(520)),
            ],
            "llm s provider=anthropic usage=500/20/-/-/-/520",
        ),
        (
            // Current names win over older ones on the same span.
            vec![
                chat.clone(),
                ("gen_ai.usage.prompt_tokens", i(1)),
                ("gen_ai.usage.input_tokens", i(2)),
                ("gen_ai.usage.completion_tokens", i(3)),
                ("gen_ai.usage.output_tokens", i(4)),
            ],
            // (The outranked spellings are the same counts again: not kept.)
            "llm s usage=2/4/-/-/-/-",
        ),
        (
            // Input below its cache parts: counted without the cache (Anthropic's own fields).
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(50)),
                ("gen_ai.usage.cache_read.input_tokens", i(1000)),
                ("gen_ai.usage.cache_creation.input_tokens", i(200)),
                ("gen_ai.usage.output_tokens", i(10)),
                ("gen_ai.usage.reasoning.output_tokens", i(30)),
            ],
            "llm s usage=1050/40/1000/200/30/-",
        ),
        (
            // Vendor spellings of the cache and reasoning counts; counts as strings and doubles.
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", s("1000")),
                ("gen_ai.usage.cache_read_input_tokens", d(100.0)),
                ("gen_ai.usage.cache_creation_input_tokens", i(10)),
                ("gen_ai.usage.output_tokens", i(9)),
                ("gen_ai.usage.reasoning_tokens", i(3)),
                ("llm.usage.total_tokens", i(1009)),
            ],
            "llm s usage=990/9/100/10/3/1009",
        ),
        (
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(100)),
                ("gen_ai.usage.input_tokens.cached", i(10)),
                ("gen_ai.usage.input_tokens.cache_write", i(5)),
                ("gen_ai.usage.output_tokens.reasoning", i(1)),
            ],
            "llm s usage=95/-/10/5/1/-",
        ),
        (
            // Older single-string content, the OpenLLMetry reasoning count, `enduser.id`, the
            // older fingerprint name.
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", i(100)),
                ("gen_ai.usage.output_tokens", i(40)),
                ("llm.usage.reasoning_tokens", i(25)),
                ("gen_ai.prompt", s("What is 2+2?")),
                ("gen_ai.completion", s("4")),
                ("enduser.id", s("end-user-3")),
                ("openai.response.system_fingerprint", s("fp_old")),
            ],
            "llm s usage=100/40/-/-/25/- input=What is 2+2? output=4 fp=fp_old user=end-user-3",
        ),
        (
            // `user.id` wins over `enduser.id` (whose other value stays in metadata), the
            // current fingerprint name over the older.
            vec![
                chat.clone(),
                ("enduser.id", s("end-user-3")),
                ("user.id", s("u-1")),
                ("openai.response.system_fingerprint", s("fp_old")),
                ("gen_ai.openai.response.system_fingerprint", s("fp_new")),
            ],
            "llm s fp=fp_new user=u-1 meta[enduser.id=end-user-3]",
        ),
        (
            // A count that is not one stays in metadata.
            vec![
                chat.clone(),
                ("gen_ai.usage.input_tokens", s("many")),
                ("gen_ai.usage.output_tokens", i(-1)),
            ],
            "llm s meta[gen_ai.usage.input_tokens=many,gen_ai.usage.output_tokens=-1]",
        ),
    ];
    for (attrs, expected) in cases {
        check("s", &attrs, expected);
    }
}

#[test]
fn openinference() {
    let llm = [
        ("openinference.span.kind", s("LLM")),
        ("llm.provider", s("openai")),
        ("llm.system", s("openai")),
        ("llm.model_name", s("gpt-4o-mini")),
        ("llm.token_count.prompt", i(1000)),
        ("llm.token_count.completion", i(100)),
        ("llm.token_count.total", i(1100)),
        ("llm.token_count.prompt_details.cache_read", i(400)),
        ("llm.token_count.prompt_details.cache_write", i(0)),
        ("llm.token_count.completion_details.reasoning", i(20)),
        ("input.value", s("{\"messages\":[]}")),
        ("input.mime_type", s("application/json")),
        ("output.value", s("hi")),
        ("llm.input_messages.0.message.role", s("user")),
        ("llm.input_messages.0.message.content", s("hello")),
        ("llm.cost.total", s("0.00042")),
        ("session.id", s("sess-9")),
    ];
    let cases: Vec<Case<'_>> = vec![
        (
            "ChatCompletion",
            llm.to_vec(),
            "llm ChatCompletion provider=openai model=gpt-4o-mini usage=1000/100/400/0/20/1100 cost=0.0004200000 input={\"messages\":[]} output=hi session=sess-9 meta[input.mime_type=application/json]",
        ),
        (
            // Anthropic through OpenInference: its prompt count includes the cache reads and
            // writes (the instrumentation adds Anthropic's separate counts).
            "Messages",
            vec![
                ("openinference.span.kind", s("LLM")),
                ("llm.provider", s("anthropic")),
                ("llm.model_name", s("claude-sonnet-4-20250514")),
                ("llm.token_count.prompt", i(3536)),
                ("llm.token_count.prompt_details.cache_read", i(1024)),
                ("llm.token_count.prompt_details.cache_write", i(512)),
                ("llm.token_count.completion", i(250)),
                ("llm.token_count.total", i(3786)),
            ],
            "llm Messages provider=anthropic model=claude-sonnet-4-20250514 usage=3024/250/1024/512/-/3786",
        ),
        (
            // Without input.value/output.value, the flattened messages are the content.
            "flat",
            vec![
                ("openinference.span.kind", s("llm")),
                ("llm.input_messages.1.message.content", s("2+2?")),
                ("llm.input_messages.0.message.role", s("system")),
                ("llm.input_messages.0.message.content", s("be \"brief\"")),
                ("llm.input_messages.1.message.role", s("user")),
                ("llm.input_messages.1.message.tool_calls.0.tool_call.id", s("x")),
                ("llm.output_messages.0.message.role", s("assistant")),
                ("llm.output_messages.0.message.content", s("4")),
            ],
            "llm flat input=[{\"role\":\"system\",\"content\":\"be \\\"brief\\\"\"},{\"role\":\"user\",\"content\":\"2+2?\"}] output=[{\"role\":\"assistant\",\"content\":\"4\"}]",
        ),
        (
            // The same messages under both conventions: only the better-ranked prefix's, and
            // a field sent twice once (the later), so no object repeats a key.
            "flat twice",
            vec![
                ("openinference.span.kind", s("llm")),
                ("gen_ai.prompt.0.role", s("user")),
                ("gen_ai.prompt.0.content", s("hi")),
                ("llm.input_messages.0.message.role", s("user")),
                ("llm.input_messages.0.message.content", s("hi there")),
                ("llm.input_messages.0.message.content", s("hi again")),
                ("gen_ai.completion.0.content", s("hello")),
            ],
            "llm flat twice input=[{\"role\":\"user\",\"content\":\"hi again\"}] output=[{\"content\":\"hello\"}]",
        ),
        (
            // A multi-part content (OpenInference's `message.contents`): its text parts in
            // order, its images dropped; a whole content sent beside parts wins.
            "flat parts",
            vec![
                ("openinference.span.kind", s("llm")),
                ("llm.input_messages.0.message.role", s("user")),
                ("llm.input_messages.0.message.contents.1.message_content.type", s("text")),
                ("llm.input_messages.0.message.contents.1.message_content.text", s("and \"this\"")),
                ("llm.input_messages.0.message.contents.0.message_content.type", s("text")),
                ("llm.input_messages.0.message.contents.0.message_content.text", s("hello there")),
                ("llm.input_messages.0.message.contents.2.message_content.type", s("image")),
                ("llm.input_messages.0.message.contents.2.message_content.image.image.url", s("https://x/y.png")),
                ("llm.input_messages.1.message.contents.0.message_content.text", s("no role")),
                ("llm.output_messages.0.message.role", s("assistant")),
                ("llm.output_messages.0.message.contents.0.message_content.text", s("part")),
                ("llm.output_messages.0.message.content", s("whole")),
            ],
            "llm flat parts input=[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello there\"},{\"type\":\"text\",\"text\":\"and \\\"this\\\"\"}]},{\"content\":[{\"type\":\"text\",\"text\":\"no role\"}]}] output=[{\"role\":\"assistant\",\"content\":\"whole\"}]",
        ),
        (
            "embed",
            vec![
                ("openinference.span.kind", s("EMBEDDING")),
                ("embedding.model_name", s("text-embedding-3-small")),
                ("llm.token_count.prompt", i(8)),
            ],
            "embedding embed model=text-embedding-3-small usage=8/-/-/-/-/-",
        ),
        ("tool", vec![("openinference.span.kind", s("TOOL")), ("input.value", s("{}"))], "tool tool input={}"),
        ("agent", vec![("openinference.span.kind", s("AGENT"))], "agent agent"),
        (
            // A chain repeating its children's tokens: metadata only.
            "chain",
            vec![("openinference.span.kind", s("CHAIN")), ("llm.token_count.total", i(5))],
            "other chain meta[openinference.span.kind=CHAIN,llm.token_count.total=5]",
        ),
    ];
    for (name, attrs, expected) in cases {
        check(name, &attrs, expected);
    }
}

#[test]
fn openllmetry() {
    let cases: Vec<Case<'_>> = vec![
        (
            "openai.chat",
            vec![
                ("llm.request.type", s("chat")),
                ("gen_ai.system", s("openai")),
                ("gen_ai.request.model", s("gpt-4o")),
                ("gen_ai.response.model", s("gpt-4o-2024-08-06")),
                ("gen_ai.usage.prompt_tokens", i(300)),
                ("gen_ai.usage.completion_tokens", i(30)),
                ("gen_ai.usage.cache_read_input_tokens", i(100)),
                ("llm.usage.total_tokens", i(330)),
                ("gen_ai.prompt.0.role", s("user")),
                ("gen_ai.prompt.0.content", s("hi")),
                ("gen_ai.completion.0.role", s("assistant")),
                ("gen_ai.completion.0.content", s("hello")),
                ("gen_ai.completion.0.finish_reason", s("stop")),
                ("llm.is_streaming", b(false)),
            ],
            "llm openai.chat provider=openai model=gpt-4o-2024-08-06 usage=300/30/100/-/-/330 input=[{\"role\":\"user\",\"content\":\"hi\"}] output=[{\"role\":\"assistant\",\"content\":\"hello\"}] meta[llm.is_streaming=false]",
        ),
        (
            "openai.completion",
            vec![("llm.request.type", s("completion")), ("gen_ai.usage.prompt_tokens", i(5))],
            "llm openai.completion usage=5/-/-/-/-/-",
        ),
        (
            "openai.embeddings",
            vec![("llm.request.type", s("embedding")), ("gen_ai.usage.prompt_tokens", i(7))],
            "embedding openai.embeddings usage=7/-/-/-/-/-",
        ),
        (
            "joke.workflow",
            vec![
                ("traceloop.span.kind", s("workflow")),
                ("traceloop.entity.input", s("{\"args\":[]}")),
                ("traceloop.entity.output", s("\"ok\"")),
            ],
            "other joke.workflow input={\"args\":[]} output=\"ok\" meta[traceloop.span.kind=workflow]",
        ),
        ("t.tool", vec![("traceloop.span.kind", s("tool"))], "tool t.tool"),
        ("a.agent", vec![("traceloop.span.kind", s("agent"))], "agent a.agent"),
    ];
    for (name, attrs, expected) in cases {
        check(name, &attrs, expected);
    }
}

#[test]
fn vercel_ai_sdk() {
    let cases: Vec<Case<'_>> = vec![
        (
            // v4 spellings.
            "ai.generateText.doGenerate",
            vec![
                ("ai.operationId", s("ai.generateText.doGenerate")),
                ("operation.name", s("ai.generateText.doGenerate")),
                ("ai.model.provider", s("openai.chat")),
                ("ai.model.id", s("gpt-4o")),
                ("ai.usage.promptTokens", i(100)),
                ("ai.usage.completionTokens", i(20)),
                ("ai.prompt.messages", s("[{\"role\":\"user\"}]")),
                ("ai.response.text", s("hello")),
            ],
            "llm ai.generateText.doGenerate provider=openai.chat model=gpt-4o usage=100/20/-/-/-/- input=[{\"role\":\"user\"}] output=hello meta[operation.name=ai.generateText.doGenerate]",
        ),
        (
            // v5 spellings, next to the GenAI names the SDK also writes: the SDK's win. v5
            // passes Anthropic's own input count, which leaves the cache reads out.
            "ai.streamText.doStream",
            vec![
                ("ai.operationId", s("ai.streamText.doStream")),
                ("ai.model.provider", s("anthropic.messages")),
                ("ai.model.id", s("claude-sonnet-4-5")),
                ("ai.response.model", s("claude-sonnet-4-5-20250929")),
                ("gen_ai.system", s("anthropic.messages")),
                ("ai.usage.inputTokens", i(2000)),
                ("ai.usage.outputTokens", i(300)),
                ("ai.usage.totalTokens", i(2300)),
                ("ai.usage.cachedInputTokens", i(1500)),
                ("ai.usage.reasoningTokens", i(100)),
                ("gen_ai.usage.input_tokens", i(2000)),
                ("gen_ai.usage.output_tokens", i(300)),
                ("ai.response.msToFirstChunk", d(412.5)),
                ("ai.prompt.tools", arr(vec![s("{\"name\":\"f\"}")])),
            ],
            "llm ai.streamText.doStream provider=anthropic.messages model=claude-sonnet-4-5-20250929 usage=3500/300/1500/-/100/2300 tools=[\"{\\\"name\\\":\\\"f\\\"}\"] ttft=412.5",
        ),
        (
            // v6: the input total includes cache reads and writes, and the part that missed
            // the cache is reported too.
            "ai.generateText.doGenerate",
            vec![
                ("ai.operationId", s("ai.generateText.doGenerate")),
                ("ai.model.provider", s("anthropic.messages")),
                ("ai.usage.inputTokens", i(3536)),
                ("ai.usage.inputTokenDetails.noCacheTokens", i(2000)),
                ("ai.usage.inputTokenDetails.cacheReadTokens", i(1024)),
                ("ai.usage.inputTokenDetails.cacheWriteTokens", i(512)),
                ("ai.usage.cachedInputTokens", i(1024)),
                ("ai.usage.outputTokens", i(250)),
            ],
            "llm ai.generateText.doGenerate provider=anthropic.messages usage=3024/250/1024/512/-/-",
        ),
        (
            // An object streamed: its JSON is the output; the stream's own first-chunk time.
            "ai.streamObject.doStream",
            vec![
                ("ai.operationId", s("ai.streamObject.doStream")),
                ("ai.response.object", s("{\"city\":\"Paris\"}")),
                ("ai.stream.msToFirstChunk", d(120.0)),
            ],
            "llm ai.streamObject.doStream output={\"city\":\"Paris\"} ttft=120",
        ),
        (
            // A step that called tools: the calls are its output.
            "ai.generateText.doGenerate",
            vec![
                ("ai.operationId", s("ai.generateText.doGenerate")),
                ("ai.response.toolCalls", s("[{\"toolName\":\"weather\"}]")),
            ],
            "llm ai.generateText.doGenerate output=[{\"toolName\":\"weather\"}]",
        ),
        (
            // The root repeats its steps' usage: never priced.
            "ai.generateText",
            vec![
                ("ai.operationId", s("ai.generateText")),
                ("ai.usage.promptTokens", i(100)),
                ("ai.prompt", s("{\"prompt\":\"hi\"}")),
            ],
            "other ai.generateText input={\"prompt\":\"hi\"} meta[ai.operationId=ai.generateText,ai.usage.promptTokens=100]",
        ),
        (
            "ai.embed.doEmbed",
            vec![("ai.operationId", s("ai.embed.doEmbed")), ("ai.usage.tokens", i(9)), ("ai.values", arr(vec![s("x")]))],
            "embedding ai.embed.doEmbed usage=9/-/-/-/-/- input=[\"x\"]",
        ),
        (
            "ai.embed",
            vec![("ai.operationId", s("ai.embed")), ("ai.usage.tokens", i(9))],
            "other ai.embed meta[ai.operationId=ai.embed,ai.usage.tokens=9]",
        ),
        (
            "ai.toolCall",
            vec![("ai.toolCall.name", s("weather")), ("ai.toolCall.args", s("{}")), ("ai.toolCall.result", s("7"))],
            "tool ai.toolCall input={} output=7 meta[ai.toolCall.name=weather]",
        ),
        (
            // The operation id in the span name, a function id after it.
            "ai.generateObject.doGenerate my-fn",
            vec![("ai.usage.inputTokens", i(1))],
            "llm ai.generateObject.doGenerate my-fn usage=1/-/-/-/-/-",
        ),
    ];
    for (name, attrs, expected) in cases {
        check(name, &attrs, expected);
    }
}

#[test]
fn pydantic_ai() {
    let cases: Vec<Case<'_>> = vec![
        (
            "chat gpt-4o",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.system", s("openai")),
                ("gen_ai.request.model", s("gpt-4o")),
                ("gen_ai.usage.input_tokens", i(1000)),
                ("gen_ai.usage.output_tokens", i(100)),
                ("gen_ai.usage.details.cache_read_tokens", i(200)),
                ("gen_ai.usage.details.cache_write_tokens", i(50)),
                ("gen_ai.usage.details.reasoning_tokens", i(30)),
                ("gen_ai.usage.details.input_audio_tokens", i(0)),
                ("model_request_parameters", s("{}")),
            ],
            "llm chat gpt-4o provider=openai model=gpt-4o usage=950/100/200/50/30/- meta[gen_ai.usage.details.input_audio_tokens=0,model_request_parameters={}]",
        ),
        (
            // Its names for Anthropic's thinking and Gemini's thoughts tokens, parts of its
            // output as OpenAI's reasoning tokens are.
            "chat claude-sonnet-4-5",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.usage.input_tokens", i(3)),
                ("gen_ai.usage.output_tokens", i(100)),
                ("gen_ai.usage.details.thinking_tokens", i(40)),
            ],
            "llm chat claude-sonnet-4-5 usage=3/100/-/-/40/-",
        ),
        (
            "chat gemini-2.5-flash",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.usage.input_tokens", i(9)),
                ("gen_ai.usage.output_tokens", i(43)),
                ("gen_ai.usage.details.thoughts_tokens", i(34)),
                ("gen_ai.usage.details.text_prompt_tokens", i(9)),
            ],
            "llm chat gemini-2.5-flash usage=9/43/-/-/34/- meta[gen_ai.usage.details.text_prompt_tokens=9]",
        ),
        (
            // Today's agent run: aggregated usage under its own names, kept, never priced.
            "invoke_agent agent",
            vec![
                ("gen_ai.operation.name", s("invoke_agent")),
                ("gen_ai.agent.name", s("agent")),
                ("gen_ai.aggregated_usage.input_tokens", i(2000)),
                ("gen_ai.aggregated_usage.output_tokens", i(200)),
            ],
            "agent invoke_agent agent agent=agent meta[gen_ai.aggregated_usage.input_tokens=2000,gen_ai.aggregated_usage.output_tokens=200]",
        ),
        (
            // Older agent runs repeated the totals under the model-call names.
            "agent run",
            vec![
                ("agent_name", s("agent")),
                ("gen_ai.usage.input_tokens", i(2000)),
                ("logfire.msg", s("agent run")),
            ],
            "other agent run meta[agent_name=agent,gen_ai.usage.input_tokens=2000,logfire.msg=agent run]",
        ),
        (
            // The cost Pydantic AI (through genai-prices) computed; `gen_ai.usage.cost` would
            // win over it.
            "chat claude",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.usage.input_tokens", i(10)),
                ("operation.cost", d(0.00212)),
            ],
            "llm chat claude usage=10/-/-/-/-/- cost=0.0021200000",
        ),
        (
            "chat claude",
            vec![
                ("gen_ai.operation.name", s("chat")),
                ("operation.cost", d(0.00212)),
                ("gen_ai.usage.cost", s("0.003")),
            ],
            "llm chat claude cost=0.0030000000",
        ),
        (
            "running tool",
            vec![("gen_ai.operation.name", s("execute_tool")), ("gen_ai.tool.name", s("roll"))],
            "tool running tool meta[gen_ai.tool.name=roll]",
        ),
    ];
    for (name, attrs, expected) in cases {
        check(name, &attrs, expected);
    }
}

mod tokens;
