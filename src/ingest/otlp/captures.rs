//! The real clients' captures (`tests/fixtures/otlp/`, made by `scripts/capture-otlp.sh`)
//! decoded, mapped and priced span by span: type, parent, provider, model, the token buckets
//! (input, output, cached input, cache write, reasoning), the client's cost, our price; and
//! no trace priced twice (only model-call spans carry a cost, and a trace's total is theirs).

use std::collections::HashMap;

use bumpalo::Bump;

use super::testkit::priced_rows;
use super::OtlpDecoder;
use crate::ingest::compress::{Decompressor, Encoding};
use crate::pricing::format_money;
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
        otlp.decode_protobuf(body.into_bytes(), &arena)
    }
    .expect("decodes");
    assert_eq!(
        decoded.rejected_spans, 0,
        "{file}: {:?}",
        decoded.error_message
    );
    let rows = priced_rows(&decoded.batch, &arena);
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

/// The expected lines of a capture, from `tests/fixtures/otlp/expected/NAME.txt` (shared with
/// the integration test that sends the same capture to the server).
fn expected(name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/otlp/expected/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .expect("expected lines")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[track_caller]
fn check(file: &str, name: &str) {
    let got = render(file);
    assert_eq!(got, expected(name), "{file}:\n{}", got.join("\n"));
}

#[test]
fn python_sdk_genai_gzip_and_plain() {
    check("python-sdk-genai.pb.gz", "python-sdk-genai");
    check("python-sdk-genai-plain.pb", "python-sdk-genai");
}

#[test]
fn js_sdk_genai_json() {
    check("js-sdk-genai.json", "js-sdk-genai");
}

#[test]
fn openinference_openai() {
    check("openinference-openai.pb", "openinference-openai");
}

#[test]
fn openllmetry_openai() {
    check("openllmetry-openai.pb", "openllmetry-openai");
}

#[test]
fn vercel_ai() {
    check("vercel-ai.pb", "vercel-ai");
}

#[test]
fn pydantic_ai() {
    check("pydantic-ai.pb", "pydantic-ai");
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
        let meta: Vec<_> = s.all_metadata().collect();
        assert!(meta.contains(&(key, value)), "{file} {span}: {meta:?}");
    }
}
