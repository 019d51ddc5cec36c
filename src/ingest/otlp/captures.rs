//! The real clients' captures (`tests/fixtures/otlp/`, made by `scripts/capture-otlp.sh`)
//! decoded, mapped and priced span by span: type, parent, provider, model, the token buckets
//! (input, output, cached input, cache write, reasoning), the client's cost, our price; and
//! no trace priced twice (only model-call spans carry a cost, and a trace's total is theirs).

use std::collections::HashMap;

use bumpalo::Bump;

use super::OtlpDecoder;
use crate::auth::Principal;
use crate::ingest::compress::{Decompressor, Encoding};
use crate::ingest::rows;
use crate::pricing::{format_money, PriceTable, Pricer};
use crate::row::{col, Value};

/// Decodes a capture and renders one line per span, sorted (ids and times differ per run):
/// `type name <parent | root> provider model in/out/cached/write/reasoning reported priced`.
fn render(file: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/otlp/{file}", env!("CARGO_MANIFEST_DIR"));
    let raw = std::fs::read(&path).expect("capture file");
    let mut dec = Decompressor::new();
    let encoding = if file.ends_with(".gz") {
        Encoding::Gzip
    } else {
        Encoding::Identity
    };
    let body = dec
        .decompress(encoding, &raw, 20 << 20)
        .expect("decompresses");
    let arena = Bump::new();
    let mut otlp = OtlpDecoder::new();
    let decoded = if file.ends_with(".json") {
        otlp.decode_json(body, &arena)
    } else {
        otlp.decode_protobuf(body, &arena)
    }
    .expect("decodes");
    assert_eq!(
        decoded.rejected_spans, 0,
        "{file}: {:?}",
        decoded.error_message
    );
    let table = PriceTable::builtin();
    let principal = Principal::unlimited("o", "p");
    let rows = rows::build(
        &decoded.batch,
        &principal,
        &table,
        &mut Pricer::new(),
        1_760_000_000,
        u64::MAX,
        &arena,
    )
    .expect("rows");
    let mut names = HashMap::new();
    for t in decoded.batch.traces {
        for s in t.spans {
            names.insert(s.span_id, s.name);
        }
    }
    let mut reader = rows.reader(0..rows.len());
    let mut lines = Vec::new();
    // Per trace: the sum of every row's total cost, and of the model calls' only.
    let mut totals: HashMap<String, (i64, i64)> = HashMap::new();
    while let Some(r) = reader.next_row() {
        let s = |c: usize| match &r[c] {
            Value::Str(s) => s.to_string(),
            v => panic!("{v:?}"),
        };
        let u = |c: usize| match &r[c] {
            Value::U64(n) => n.to_string(),
            v => panic!("{v:?}"),
        };
        let money = |c: usize| match &r[c] {
            Value::I64(n) => Some(*n),
            Value::Null => None,
            v => panic!("{v:?}"),
        };
        let span_type = s(col::span_type);
        let total = money(col::total_cost);
        let t = totals.entry(s(col::trace_id)).or_default();
        t.0 += total.unwrap_or(0);
        if matches!(span_type.as_str(), "llm" | "embedding") {
            t.1 += total.unwrap_or(0);
        }
        let parent = s(col::parent_span_id);
        let parent = if parent.is_empty() {
            "root".to_string()
        } else {
            names
                .get(parent.as_str())
                .map_or("?".into(), |n| n.to_string())
        };
        let priced = match (total, s(col::pricing_source).as_str()) {
            (None, _) => "unpriced".to_string(),
            (Some(c), src) => format!("{}={} ({src})", s(col::priced_model_id), format_money(c)),
        };
        lines.push(format!(
            "{span_type} {:?} <{parent}> {}/{} {}/{}/{}/{}/{} reported={} {priced}",
            s(col::name),
            s(col::provider),
            s(col::model_id),
            u(col::input_tokens),
            u(col::output_tokens),
            u(col::cached_input_tokens),
            u(col::cache_write_input_tokens),
            u(col::reasoning_tokens),
            money(col::reported_cost).map_or("-".into(), format_money),
        ));
    }
    for (trace, (all, calls)) in totals {
        assert_eq!(
            all, calls,
            "{file}: trace {trace} has cost outside its model calls"
        );
    }
    lines.sort();
    lines
}

#[track_caller]
fn check(file: &str, expected: &[&str]) {
    let got = render(file);
    assert_eq!(got, expected, "{file}:\n{}", got.join("\n"));
}

/// The GenAI spans the Python and JS programs write by hand (the JS one has no Anthropic or
/// embeddings span).
const GENAI: &[&str] = &[
    "agent \"invoke_agent weather-agent\" <root> openai/gpt-4o 0/0/0/0/0 reported=- unpriced",
    "embedding \"embeddings text-embedding-3-small\" <root> openai/text-embedding-3-small 8/0/0/0/0 reported=- openai/text-embedding-3-small=0.0000001600 (builtin)",
    "llm \"chat claude-sonnet-4-20250514\" <root> anthropic/claude-sonnet-4-20250514 2488/250/1024/512/0 reported=- anthropic/claude-sonnet-4=0.0103692000 (builtin)",
    "llm \"chat gpt-4o\" <invoke_agent weather-agent> openai/gpt-4o-2024-08-06 1200/40/1024/0/0 reported=- openai/gpt-4o=0.0021200000 (builtin)",
    "llm \"chat gpt-4o\" <invoke_agent weather-agent> openai/gpt-4o-2024-08-06 1300/300/1280/0/128 reported=- openai/gpt-4o=0.0046500000 (builtin)",
    "llm \"chat gpt-4o\" <root> openai/gpt-4o 0/0/0/0/0 reported=- openai/gpt-4o=0.0000000000 (builtin)",
    "tool \"execute_tool get_weather\" <invoke_agent weather-agent> / 0/0/0/0/0 reported=- unpriced",
];

#[test]
fn python_sdk_genai_gzip_and_plain() {
    check("python-sdk-genai.pb.gz", GENAI);
    check("python-sdk-genai-plain.pb", GENAI);
}

#[test]
fn js_sdk_genai_json() {
    let js: Vec<&str> = GENAI
        .iter()
        .copied()
        .filter(|l| !l.contains("claude") && !l.contains("embedding"))
        .collect();
    check("js-sdk-genai.json", &js);
}

#[test]
fn openinference_openai() {
    check(
        "openinference-openai.pb",
        &[
            "embedding \"CreateEmbeddings\" <root> openai/text-embedding-3-small 8/0/0/0/0 reported=- openai/text-embedding-3-small=0.0000001600 (builtin)",
            "llm \"ChatCompletion\" <root> openai/ 0/0/0/0/0 reported=- unpriced",
            "llm \"ChatCompletion\" <root> openai/gpt-4o-2024-08-06 1200/40/1024/0/16 reported=- openai/gpt-4o=0.0021200000 (builtin)",
            "llm \"ChatCompletion\" <root> openai/gpt-4o-2024-08-06 1300/60/1280/0/0 reported=- openai/gpt-4o=0.0022500000 (builtin)",
            "llm \"ChatCompletion\" <root> openai/gpt-4o-2024-08-06 1800/200/1024/0/64 reported=- openai/gpt-4o=0.0052200000 (builtin)",
            "llm \"ChatCompletion\" <root> openai/gpt-4o-2024-08-06 2000/300/1024/0/128 reported=- openai/gpt-4o=0.0067200000 (builtin)",
        ],
    );
}

#[test]
fn openllmetry_openai() {
    check(
        "openllmetry-openai.pb",
        &[
            "embedding \"openai.embeddings\" <root> openai/text-embedding-3-small 8/0/0/0/0 reported=- openai/text-embedding-3-small=0.0000001600 (builtin)",
            "llm \"openai.chat\" <root> openai/gpt-4o-2024-08-06 1200/40/1024/0/16 reported=- openai/gpt-4o=0.0021200000 (builtin)",
            "llm \"openai.chat\" <root> openai/gpt-4o-2024-08-06 1300/60/1280/0/0 reported=- openai/gpt-4o=0.0022500000 (builtin)",
            "llm \"openai.chat\" <root> openai/gpt-4o-2024-08-06 1800/200/1024/0/0 reported=- openai/gpt-4o=0.0052200000 (builtin)",
            "llm \"openai.chat\" <root> openai/gpt-4o-2024-08-06 2000/300/1024/0/128 reported=- openai/gpt-4o=0.0067200000 (builtin)",
            "llm \"openai.chat\" <root> openai/nonexistent-model 0/0/0/0/0 reported=- unpriced",
        ],
    );
}

#[test]
fn vercel_ai() {
    check(
        "vercel-ai.pb",
        &[
            "embedding \"ai.embed.doEmbed\" <ai.embed> openai.embedding/text-embedding-3-small 8/0/0/0/0 reported=- openai/text-embedding-3-small=0.0000001600 (builtin)",
            "llm \"ai.generateText.doGenerate\" <ai.generateText> openai.chat/gpt-4o-2024-08-06 1200/40/1024/0/16 reported=- openai/gpt-4o=0.0021200000 (builtin)",
            "llm \"ai.generateText.doGenerate\" <ai.generateText> openai.chat/gpt-4o-2024-08-06 1300/60/1280/0/0 reported=- openai/gpt-4o=0.0022500000 (builtin)",
            "llm \"ai.streamText.doStream\" <ai.streamText> openai.chat/gpt-4o-2024-08-06 1800/200/1024/0/64 reported=- openai/gpt-4o=0.0052200000 (builtin)",
            "other \"ai.embed\" <root> openai.embedding/text-embedding-3-small 0/0/0/0/0 reported=- unpriced",
            "other \"ai.generateText\" <root> openai.chat/gpt-4o 0/0/0/0/0 reported=- unpriced",
            "other \"ai.streamText\" <root> openai.chat/gpt-4o 0/0/0/0/0 reported=- unpriced",
            "tool \"ai.toolCall\" <ai.generateText> / 0/0/0/0/0 reported=- unpriced",
        ],
    );
}

#[test]
fn pydantic_ai() {
    check(
        "pydantic-ai.pb",
        &[
            "agent \"invoke_agent weather-agent\" <root> / 0/0/0/0/0 reported=- unpriced",
            "llm \"chat gpt-4o\" <invoke_agent weather-agent> openai/gpt-4o-2024-08-06 1200/40/1024/0/16 reported=0.0021200000 openai/gpt-4o=0.0021200000 (builtin)",
            "llm \"chat gpt-4o\" <invoke_agent weather-agent> openai/gpt-4o-2024-08-06 1300/60/1280/0/0 reported=0.0022500000 openai/gpt-4o=0.0022500000 (builtin)",
            "tool \"execute_tool get_weather\" <invoke_agent weather-agent> / 0/0/0/0/0 reported=- unpriced",
        ],
    );
}

/// Aggregates on the spans that are not model calls are kept, in metadata.
#[test]
fn aggregate_usage_stays_in_metadata() {
    for (file, span, key, value) in [
        (
            "pydantic-ai.pb",
            "invoke_agent weather-agent",
            "gen_ai.aggregated_usage.input_tokens",
            "2500",
        ),
        (
            "vercel-ai.pb",
            "ai.generateText",
            "ai.usage.inputTokens",
            "2500",
        ),
        (
            "vercel-ai.pb",
            "ai.generateText",
            "ai.usage.inputTokenDetails.cacheReadTokens",
            "2304",
        ),
    ] {
        let path = format!("{}/tests/fixtures/otlp/{file}", env!("CARGO_MANIFEST_DIR"));
        let body = std::fs::read(path).unwrap();
        let arena = Bump::new();
        let d = OtlpDecoder::new().decode_protobuf(&body, &arena).unwrap();
        let s = d
            .batch
            .traces
            .iter()
            .flat_map(|t| t.spans)
            .find(|s| s.name == span)
            .expect("the span");
        assert!(s.usage.is_none(), "{file} {span}");
        assert!(
            s.metadata.contains(&(key, value)),
            "{file} {span}: {:?}",
            s.metadata
        );
    }
}
