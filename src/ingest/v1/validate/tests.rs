//! The schema rule by rule, each through the one `check(input, expected)` helper.

use super::*;
use crate::ingest::v1::decode::tests::{check, with_batch, with_span, with_span_field};

/// A batch whose one trace carries `trace_extra` and one minimal span.
fn with_trace(trace_extra: &str) -> String {
    format!(
        r#"{{"version":"v1","traces":[{{"traceId":"t1"{trace_extra},"spans":[{{"spanId":"s1","spanType":"llm","name":"n","startTime":1,"endTime":2}}]}}]}}"#
    )
}

/// A JSON string literal of `n` copies of `unit`.
fn text(unit: &str, n: usize) -> String {
    format!("\"{}\"", unit.repeat(n))
}

/// `,"field":<string of max units>` passes and one unit more fails, counted in UTF-16
/// units: ASCII, 2-byte `é` (1 unit) and 4-byte emoji (2 units) fill the same limit.
fn check_string_limit(field: &str, max: usize, in_trace: bool, path: &str) {
    let body = |v: String| {
        // The other name keeps the trace's "traceName or agentName" rule satisfied.
        let other = if field == "agentName" {
            "traceName"
        } else {
            "agentName"
        };
        let extra = format!(",\"{other}\":\"x\",\"{field}\":{v}");
        if in_trace {
            with_trace(&extra)
        } else {
            with_span(&extra)
        }
    };
    let ok = "ok 1";
    check(body(text("a", max)), ok);
    check(body(text("é", max)), ok);
    check(body(text("😀", max / 2)), ok);
    check(body(text("\\ud83d\\ude00", max / 2)), ok);
    let over = format!("{path} too_big");
    check(body(text("a", max + 1)), &over);
    check(body(text("é", max + 1)), &over);
    check(body(format!("\"{}a\"", "😀".repeat(max / 2))), &over);
}

#[test]
fn string_limits() {
    let span = "traces.0.spans.0.";
    for (field, max) in [
        ("name", 512),
        ("errorMessage", 8192),
        ("provider", 128),
        ("modelId", 256),
        ("input", 1_000_000),
        ("output", 1_000_000),
        ("toolCatalog", 1_000_000),
        ("sources", 1_000_000),
        ("systemFingerprint", 256),
        ("safetyMetadata", 16384),
        ("spanId", 128),
        ("parentSpanId", 128),
    ] {
        let path = format!("{span}{field}");
        let body = |v: String| with_span_field(field, &v);
        check(body(text("a", max)), "ok 1");
        check(body(text("é", max)), "ok 1");
        check(body(text("😀", max / 2)), "ok 1");
        check(body(text("a", max + 1)), &format!("{path} too_big"));
        check(
            body(format!("\"{}a\"", "😀".repeat(max / 2))),
            &format!("{path} too_big"),
        );
    }
    for (field, max) in [("traceName", 256), ("agentName", 256), ("sessionId", 128)] {
        check_string_limit(field, max, true, &format!("traces.0.{field}"));
    }
    check(
        with_trace(&format!(
            ",\"agentName\":\"a\",\"workflowName\":{},\"workflowRunId\":\"r\"",
            text("é", 257)
        )),
        "traces.0.workflowName too_big",
    );
    check(
        with_trace(&format!(
            ",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":{}",
            text("😀", 64)
        )),
        "ok 1",
    );
    check(
        with_trace(&format!(
            ",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":{}",
            text("a", 129)
        )),
        "traces.0.workflowRunId too_big",
    );
    check(
        with_trace(&format!(
            ",\"traceName\":\"x\",\"traceId\":{}",
            text("😀", 64)
        ))
        .replacen("\"traceId\":\"t1\",", "", 1),
        "ok 1",
    );
    check(
        with_trace(&format!(
            ",\"traceName\":\"x\",\"traceId\":{}",
            text("😀", 65)
        ))
        .replacen("\"traceId\":\"t1\",", "", 1),
        "traces.0.traceId too_big",
    );
    assert_eq!(utf16_len("aé😀\u{FFFD}"), 5);
}

#[test]
fn batch_and_trace_rules() {
    let span = r#"{"spanId":"s","spanType":"tool","name":"","startTime":0,"endTime":0}"#;
    let trace = format!(r#"{{"traceId":"t","agentName":"a","spans":[{span}]}}"#);
    let traces = |n: usize| vec![trace.as_str(); n].join(",");
    let spans = |n: usize| vec![span; n].join(",");
    let cases: Vec<(String, &str)> = vec![
        (format!(r#"{{"version":"v1","traces":[{trace}]}}"#), "ok 1"),
        (format!(r#"{{"traces":[{trace}]}}"#), "version invalid_type"),
        (format!(r#"{{"version":"v2","traces":[{trace}]}}"#), "version invalid_literal"),
        (format!(r#"{{"version":1,"traces":[{trace}]}}"#), "version invalid_literal"),
        (format!(r#"{{"version":null,"traces":[{trace}]}}"#), "version invalid_literal"),
        (format!(r#"{{"version":"v1","version":"v1","traces":[{trace}]}}"#), "version duplicate_key"),
        (r#"{"version":"v1"}"#.into(), "traces invalid_type"),
        (r#"{"version":"v1","traces":{}}"#.into(), "traces invalid_type"),
        (r#"{"version":"v1","traces":[]}"#.into(), "traces too_small"),
        (format!(r#"{{"version":"v1","traces":[{}]}}"#, traces(1000)), "ok 1000"),
        (format!(r#"{{"version":"v1","traces":[{}]}}"#, traces(1001)), "traces too_big"),
        (format!(r#"{{"version":"v1","traces":[{trace}],"extra":1,"more":{{}}}}"#), " unrecognized_keys"),
        (r#"{"version":"v1","traces":[1]}"#.into(), "traces.0 invalid_type"),
        (r#"{}"#.into(), "version invalid_type\ntraces invalid_type"),
        // Trace fields.
        (with_trace(",\"agentName\":\"a\""), "ok 1"),
        (with_trace(",\"agentName\":\"a\"").replace("\"traceId\":\"t1\",", ""), "traces.0.traceId invalid_type"),
        (with_trace(",\"agentName\":\"a\",\"traceId\":\"t2\""), "traces.0.traceId duplicate_key"),
        (with_trace(",\"agentName\":\"a\"").replace("\"traceId\":\"t1\"", "\"traceId\":\"\""), "traces.0.traceId too_small"),
        (with_trace(",\"agentName\":\"a\"").replace("\"traceId\":\"t1\"", "\"traceId\":7"), "traces.0.traceId invalid_type"),
        (r#"{"version":"v1","traces":[{"traceId":"t","agentName":"a"}]}"#.into(), "traces.0.spans invalid_type"),
        (r#"{"version":"v1","traces":[{"traceId":"t","agentName":"a","spans":[]}]}"#.into(), "traces.0.spans too_small"),
        (format!(r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":[{}]}}]}}"#, spans(2000)), "ok 2000"),
        (format!(r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":[{}]}}]}}"#, spans(2001)), "traces.0.spans too_big"),
        (format!(r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":{span}}}]}}"#), "traces.0.spans invalid_type"),
        (with_trace(",\"traceName\":\"x\",\"bogus\":[1,{}],\"other\":null"), "traces.0 unrecognized_keys"),
        (with_trace(",\"traceName\":null"), "traces.0.traceName invalid_type"),
        (with_trace(",\"traceName\":\"x\",\"sessionId\":null"), "traces.0.sessionId invalid_type"),
        (with_trace(",\"traceName\":\"x\",\"metadata\":null"), "traces.0.metadata invalid_type"),
        // At least one of traceName, agentName non-empty.
        (with_trace(""), "traces.0.traceName custom"),
        (with_trace(",\"traceName\":\"\",\"agentName\":\"\""), "traces.0.traceName custom"),
        (with_trace(",\"agentName\":\"a\""), "ok 1"),
        (with_trace(",\"traceName\":\"\",\"agentName\":\"a\""), "ok 1"),
        // An invalid traceName reports itself only.
        (with_trace(",\"traceName\":5"), "traces.0.traceName invalid_type"),
        // workflowName and workflowRunId together.
        (with_trace(",\"agentName\":\"a\",\"workflowName\":\"w\""), "traces.0.workflowRunId custom"),
        (with_trace(",\"agentName\":\"a\",\"workflowRunId\":\"r\""), "traces.0.workflowRunId custom"),
        (with_trace(",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":\"\""), "traces.0.workflowRunId custom"),
        (with_trace(",\"agentName\":\"a\",\"workflowName\":\"w\",\"workflowRunId\":\"r\""), "ok 1"),
        (with_trace(",\"agentName\":\"a\",\"workflowName\":\"\",\"workflowRunId\":\"\""), "ok 1"),
        // customer (newer clients).
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\"}"), "ok 1"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"name\":\"N\",\"imageUrl\":\"https://x.test/a.png\"}"), "ok 1"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"imageUrl\":\"mailto:a@b\"}"), "ok 1"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"imageUrl\":\"data:image/png;base64,AA==\"}"), "ok 1"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{}"), "traces.0.customer.id invalid_type"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"\"}"), "traces.0.customer.id too_small"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"nick\":\"n\"}"), "traces.0.customer unrecognized_keys"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"id\":\"d\"}"), "traces.0.customer.id duplicate_key"),
        (with_trace(",\"agentName\":\"a\",\"customer\":null"), "traces.0.customer invalid_type"),
        (with_trace(",\"agentName\":\"a\",\"customer\":{\"id\":\"c\",\"name\":null}"), "traces.0.customer.name invalid_type"),
        (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":{}}}", text("a", 129))), "traces.0.customer.id too_big"),
        (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"name\":{}}}", text("😀", 128))), "ok 1"),
        (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"name\":{}}}", text("a", 257))), "traces.0.customer.name too_big"),
        (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"imageUrl\":\"https://x/{}\"}}", "a".repeat(2038))), "ok 1"),
        (with_trace(&format!(",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"imageUrl\":\"https://x/{}\"}}", "a".repeat(2039))), "traces.0.customer.imageUrl too_big"),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
    for bad_url in [
        "x.test/a.png",
        "",
        "https:",
        "1http://x",
        "ht tp://x",
        "https://x y",
        ":x",
        "a_b:c",
        "https://x\\t",
    ] {
        check(
            with_trace(&format!(
                ",\"agentName\":\"a\",\"customer\":{{\"id\":\"c\",\"imageUrl\":\"{bad_url}\"}}"
            )),
            "traces.0.customer.imageUrl invalid_string",
        );
    }
}

#[test]
fn span_rules() {
    let s = "traces.0.spans.0";
    let mut cases: Vec<(String, String)> = Vec::new();
    for field in ["spanId", "spanType", "name", "startTime", "endTime"] {
        cases.push((
            with_span_field(field, ""),
            format!("{s}.{field} invalid_type"),
        ));
    }
    let span_cases: &[(&str, &str)] = &[
        ("", "ok 1"),
        (",\"spanId\":\"again\"", ".spanId duplicate_key"),
        (",\"status\":\"ok\",\"status\":\"error\"", ".status duplicate_key"),
        (",\"colour\":\"red\",\"size\":1", " unrecognized_keys"),
        // Enums.
        (",\"status\":\"ok\"", "ok 1"),
        (",\"status\":\"error\",\"errorMessage\":\"boom\"", "ok 1"),
        (",\"status\":\"aborted\"", "ok 1"),
        (",\"status\":\"fine\"", ".status invalid_enum_value"),
        (",\"status\":\"OK\"", ".status invalid_enum_value"),
        (",\"status\":null", ".status invalid_type"),
        (",\"status\":1", ".status invalid_type"),
        // Optional strings: null, wrong type, too short.
        (",\"parentSpanId\":\"p\"", "ok 1"),
        (",\"parentSpanId\":\"\"", ".parentSpanId too_small"),
        (",\"parentSpanId\":null", ".parentSpanId invalid_type"),
        (",\"provider\":null", ".provider invalid_type"),
        (",\"modelId\":[\"gpt\"]", ".modelId invalid_type"),
        (",\"input\":{\"role\":\"user\"}", ".input invalid_type"),
        (",\"output\":true", ".output invalid_type"),
        (",\"errorMessage\":\"\"", "ok 1"),
        // Integers.
        (",\"modelCallMs\":3.0,\"reasoningDurationMs\":1e3,\"responseTimeMs\":-0", "ok 1"),
        (",\"modelCallMs\":-0.0,\"reasoningDurationMs\":0,\"responseTimeMs\":9007199254740991", "ok 1"),
        (",\"modelCallMs\":3.5", ".modelCallMs invalid_type"),
        // Judged on the double the number parses to, as JavaScript's `Number.isInteger` does:
        // at this size doubles are 2 apart, so the `.5` is gone before the check.
        (",\"modelCallMs\":9007199254740990.5", "ok 1"),
        (",\"modelCallMs\":4503599627370495.5", ".modelCallMs invalid_type"),
        (",\"modelCallMs\":-1", ".modelCallMs too_small"),
        (",\"modelCallMs\":-1.0", ".modelCallMs too_small"),
        (",\"modelCallMs\":9007199254740992", ".modelCallMs too_big"),
        (",\"modelCallMs\":9007199254740992.0", ".modelCallMs too_big"),
        (",\"modelCallMs\":1e300", ".modelCallMs too_big"),
        (",\"modelCallMs\":\"3\"", ".modelCallMs invalid_type"),
        (",\"modelCallMs\":null", ".modelCallMs invalid_type"),
        (",\"responseTimeMs\":0.5", ".responseTimeMs invalid_type"),
        (",\"reasoningDurationMs\":true", ".reasoningDurationMs invalid_type"),
        // Numbers >= 0.
        (",\"ttftMs\":0,\"outputTps\":1.5,\"inputTps\":-0.0,\"effectiveOutputTps\":1e2,\"effectiveTotalTps\":7", "ok 1"),
        (",\"ttftMs\":-0.001", ".ttftMs too_small"),
        (",\"ttftMs\":-3", ".ttftMs too_small"),
        (",\"ttftMs\":null", ".ttftMs invalid_type"),
        (",\"outputTps\":\"1\"", ".outputTps invalid_type"),
        (",\"inputTps\":-1", ".inputTps too_small"),
        (",\"effectiveOutputTps\":-1", ".effectiveOutputTps too_small"),
        (",\"effectiveTotalTps\":[]", ".effectiveTotalTps invalid_type"),
        // Usage and rateLimit: strict objects of optional integers.
        (",\"usage\":{}", "ok 1"),
        (",\"usage\":{\"inputTokens\":1,\"outputTokens\":2,\"totalTokens\":3,\"reasoningTokens\":0,\"cachedInputTokens\":0,\"cacheWriteInputTokens\":0,\"imageCount\":0,\"webSearchCount\":0,\"requestCount\":1}", "ok 1"),
        (",\"usage\":{\"inputTokens\":null}", ".usage.inputTokens invalid_type"),
        (",\"usage\":{\"inputTokens\":1.5}", ".usage.inputTokens invalid_type"),
        (",\"usage\":{\"outputTokens\":-2}", ".usage.outputTokens too_small"),
        (",\"usage\":{\"inputTokens\":1,\"inputTokens\":2}", ".usage.inputTokens duplicate_key"),
        (",\"usage\":{\"promptTokens\":1}", ".usage unrecognized_keys"),
        (",\"usage\":[]", ".usage invalid_type"),
        (",\"usage\":null", ".usage invalid_type"),
        (",\"rateLimit\":{\"requestsLimit\":1,\"requestsRemaining\":0,\"requestsResetMs\":10.0,\"tokensLimit\":5,\"tokensRemaining\":4,\"tokensResetMs\":0}", "ok 1"),
        (",\"rateLimit\":{\"tokensResetMs\":0.5}", ".rateLimit.tokensResetMs invalid_type"),
        (",\"rateLimit\":{\"retryAfter\":1}", ".rateLimit unrecognized_keys"),
        (",\"rateLimit\":null", ".rateLimit invalid_type"),
        // Sample arrays.
        (",\"chunkOffsets\":[],\"chunkTokens\":[1,2.0,1e1],\"reasoningOffsets\":[0],\"reasoningChunkTokens\":[9007199254740991]", "ok 1"),
        (",\"chunkOffsets\":[1,2.5]", ".chunkOffsets.1 invalid_type"),
        (",\"chunkTokens\":[-1]", ".chunkTokens.0 too_small"),
        (",\"reasoningOffsets\":[null]", ".reasoningOffsets.0 invalid_type"),
        (",\"reasoningChunkTokens\":[[1]]", ".reasoningChunkTokens.0 invalid_type"),
        (",\"chunkOffsets\":{}", ".chunkOffsets invalid_type"),
        (",\"chunkOffsets\":null", ".chunkOffsets invalid_type"),
        // chunkJitter (newer clients): all six numbers >= 0.
        (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":5}", "ok 1"),
        (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"max\":5}", ".chunkJitter.p90 invalid_type"),
        (",\"chunkJitter\":{\"min\":-1,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":5}", ".chunkJitter.min too_small"),
        (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":5,\"p99\":6}", ".chunkJitter unrecognized_keys"),
        (",\"chunkJitter\":{\"min\":0,\"p10\":1,\"median\":2.5,\"avg\":3,\"p90\":4,\"max\":null}", ".chunkJitter.max invalid_type"),
        (",\"chunkJitter\":null", ".chunkJitter invalid_type"),
        // Metadata.
        (",\"metadata\":{}", "ok 1"),
        (",\"metadata\":{\"k\":\"\"}", "ok 1"),
        (",\"metadata\":{\"k\":1}", ".metadata.k invalid_type"),
        (",\"metadata\":{\"k\":null}", ".metadata.k invalid_type"),
        (",\"metadata\":{\"k\":\"a\",\"j\":\"b\",\"k\":\"c\"}", ".metadata.k duplicate_key"),
        (",\"metadata\":[]", ".metadata invalid_type"),
        (",\"metadata\":\"k=v\"", ".metadata invalid_type"),
    ];
    for (extra, expected) in span_cases {
        let expected = if expected.starts_with("ok") {
            expected.to_string()
        } else {
            format!("{s}{expected}")
        };
        cases.push((with_span(extra), expected));
    }
    // endTime >= startTime.
    cases.push((
        with_span("").replace("\"endTime\":2", "\"endTime\":0"),
        format!("{s}.endTime custom"),
    ));
    cases.push((
        with_span("").replace("\"endTime\":2", "\"endTime\":1"),
        "ok 1".into(),
    ));
    // An invalid time reports itself, not the order.
    cases.push((
        with_span("").replace("\"endTime\":2", "\"endTime\":-5"),
        format!("{s}.endTime too_small"),
    ));
    // Sample array sizes.
    let ints = |n: usize| vec!["7"; n].join(",");
    cases.push((
        with_span(&format!(",\"chunkOffsets\":[{}]", ints(200))),
        "ok 1".into(),
    ));
    cases.push((
        with_span(&format!(",\"chunkOffsets\":[{}]", ints(201))),
        format!("{s}.chunkOffsets too_big"),
    ));
    // Metadata sizes, in UTF-16 units.
    let map = |n: usize| {
        (0..n)
            .map(|i| format!("\"key{i}\":\"v\""))
            .collect::<Vec<_>>()
            .join(",")
    };
    cases.push((
        with_span(&format!(",\"metadata\":{{{}}}", map(64))),
        "ok 1".into(),
    ));
    cases.push((
        with_span(&format!(",\"metadata\":{{{}}}", map(65))),
        format!("{s}.metadata too_big"),
    ));
    cases.push((
        with_span(&format!(",\"metadata\":{{{},\"key7\":\"w\"}}", map(30))),
        format!("{s}.metadata.key7 duplicate_key"),
    ));
    let key128 = "😀".repeat(64);
    cases.push((
        with_span(&format!(
            ",\"metadata\":{{\"{key128}\":{}}}",
            text("é", 1024)
        )),
        "ok 1".into(),
    ));
    cases.push((
        with_span(&format!(",\"metadata\":{{\"{key128}a\":\"v\"}}")),
        format!("{s}.metadata.{key128}a too_big"),
    ));
    cases.push((
        with_span(&format!(",\"metadata\":{{\"k\":{}}}", text("😀", 512))),
        "ok 1".into(),
    ));
    cases.push((
        with_span(&format!(
            ",\"metadata\":{{\"k\":\"{}a\"}}",
            "😀".repeat(512)
        )),
        format!("{s}.metadata.k too_big"),
    ));
    // Trace metadata follows the same rules.
    cases.push((
        with_trace(&format!(
            ",\"agentName\":\"a\",\"metadata\":{{{}}}",
            map(65)
        )),
        "traces.0.metadata too_big".into(),
    ));
    for (input, expected) in &cases {
        check(input, expected);
    }
}

#[test]
fn issues_are_collected_over_the_body_and_capped() {
    // Problems in different traces and spans all come back, in body order.
    let body = r#"{"version":"v1","traces":[
        {"traceId":"t","agentName":"a","spans":[
            {"spanId":"s","spanType":"llm","name":"n","startTime":5,"endTime":4},
            {"spanId":"s","spanType":"bot","name":"n","startTime":1,"endTime":2,"usage":{"inputTokens":-1}}]},
        {"traceId":"","spans":[{"spanId":"s","spanType":"llm","name":"n","startTime":1,"endTime":2,"metadata":{"a":1}}]}]}"#;
    check(
        body,
        "traces.0.spans.0.endTime custom\n\
         traces.0.spans.1.spanType invalid_enum_value\n\
         traces.0.spans.1.usage.inputTokens too_small\n\
         traces.1.traceId too_small\n\
         traces.1.spans.0.metadata.a invalid_type\n\
         traces.1.traceName custom",
    );
    // 150 bad spans: exactly 100 issues.
    let bad = r#"{"spanId":"s","spanType":"bot","name":"n","startTime":1,"endTime":2}"#;
    let body = format!(
        r#"{{"version":"v1","traces":[{{"traceId":"t","agentName":"a","spans":[{}]}},{{"traceId":"u"}}]}}"#,
        vec![bad; 150].join(",")
    );
    let mut input = body.into_bytes();
    let arena = Bump::new();
    let mut decoder = crate::ingest::v1::Decoder::new();
    match decoder.decode(crate::ingest::body::PaddedBody::pad(&mut input), &arena) {
        Err(crate::ingest::DecodeError::Schema(issues)) => {
            assert_eq!(issues.len(), MAX_ISSUES);
            assert_eq!(
                issues[99].path,
                vec![
                    PathSeg::Key("traces".into()),
                    PathSeg::Index(0),
                    PathSeg::Key("spans".into()),
                    PathSeg::Index(99),
                    PathSeg::Key("spanType".into()),
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn full_batch_round_trips() {
    let body = r#"{"version":"v1","traces":[{
        "traceId":"trace-1","traceName":"Chat \"turn\"\n","agentName":"agent é","workflowName":"wf",
        "workflowRunId":"run-1","sessionId":"sess","metadata":{"env":"prod","tier":"\u00e9\ud83d\ude00"},
        "customer":{"id":"cust-1","name":"Ada","imageUrl":"https://img.test/a.png"},
        "spans":[{
            "spanId":"s1","parentSpanId":"s0","spanType":"llm","name":"call","startTime":1700000000000,
            "endTime":1700000001500,"status":"error","errorMessage":"rate \\ limited","provider":"openai.chat",
            "modelId":"gpt-4o","usage":{"inputTokens":10,"outputTokens":20,"totalTokens":30,"reasoningTokens":5,
            "cachedInputTokens":2,"cacheWriteInputTokens":1,"imageCount":0,"webSearchCount":3,"requestCount":1},
            "ttftMs":123.5,"chunkOffsets":[0,10,20],"chunkTokens":[1,2,3],"reasoningOffsets":[5],
            "reasoningChunkTokens":[7],"reasoningDurationMs":40,"modelCallMs":1500,
            "input":"Hi \ud83d\ude00 caf\u00e9 日本","output":"line1\nline2\t\"q\"","toolCatalog":"[]","sources":"s",
            "systemFingerprint":"fp_1","safetyMetadata":"{}",
            "rateLimit":{"requestsLimit":100,"requestsRemaining":99,"requestsResetMs":1000,"tokensLimit":1000,
            "tokensRemaining":900,"tokensResetMs":60000},
            "metadata":{"k":"v"},"responseTimeMs":1600,"effectiveOutputTps":13.3,"effectiveTotalTps":20,
            "outputTps":14,"inputTps":0,
            "chunkJitter":{"min":0.5,"p10":1,"median":2,"avg":2.5,"p90":4,"max":9}
        },{"spanId":"s2","spanType":"tool","name":"","startTime":5,"endTime":5}]}]}"#;
    with_batch(body, |b| {
        assert_eq!(b.span_count, 2);
        let t = &b.traces[0];
        assert_eq!(t.trace_id, "trace-1");
        assert_eq!(t.trace_name, Some("Chat \"turn\"\n"));
        assert_eq!(t.agent_name, Some("agent é"));
        assert_eq!(t.workflow_name, Some("wf"));
        assert_eq!(t.workflow_run_id, Some("run-1"));
        assert_eq!(t.session_id, Some("sess"));
        assert_eq!(t.metadata, &[("env", "prod"), ("tier", "é😀")]);
        let c = t.customer.unwrap();
        assert_eq!(
            (c.id, c.name, c.image_url),
            ("cust-1", Some("Ada"), Some("https://img.test/a.png"))
        );
        let s = &t.spans[0];
        assert_eq!(s.span_id, "s1");
        assert_eq!(s.parent_span_id, Some("s0"));
        assert_eq!(s.span_type, SpanType::Llm);
        assert_eq!(s.name, "call");
        assert_eq!(
            (s.start_time, s.end_time),
            (1_700_000_000_000, 1_700_000_001_500)
        );
        assert_eq!(s.status, Status::Error);
        assert_eq!(s.error_message, Some("rate \\ limited"));
        assert_eq!(s.provider, Some("openai.chat"));
        assert_eq!(s.model_id, Some("gpt-4o"));
        assert_eq!(
            s.usage,
            Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(20),
                total_tokens: Some(30),
                reasoning_tokens: Some(5),
                cached_input_tokens: Some(2),
                cache_write_input_tokens: Some(1),
                image_count: Some(0),
                web_search_count: Some(3),
                request_count: Some(1),
            })
        );
        assert_eq!(s.ttft_ms, Some(123.5));
        assert_eq!(s.chunk_offsets, &[0, 10, 20]);
        assert_eq!(s.chunk_tokens, &[1, 2, 3]);
        assert_eq!(s.reasoning_offsets, &[5]);
        assert_eq!(s.reasoning_chunk_tokens, &[7]);
        assert_eq!(s.reasoning_duration_ms, Some(40));
        assert_eq!(s.model_call_ms, Some(1500));
        assert_eq!(s.input, Some("Hi 😀 café 日本"));
        assert_eq!(s.output, Some("line1\nline2\t\"q\""));
        assert_eq!(s.tool_catalog, Some("[]"));
        assert_eq!(s.sources, Some("s"));
        assert_eq!(s.system_fingerprint, Some("fp_1"));
        assert_eq!(s.safety_metadata, Some("{}"));
        assert_eq!(
            s.rate_limit,
            Some(RateLimit {
                requests_limit: Some(100),
                requests_remaining: Some(99),
                requests_reset_ms: Some(1000),
                tokens_limit: Some(1000),
                tokens_remaining: Some(900),
                tokens_reset_ms: Some(60000),
            })
        );
        assert_eq!(s.metadata, &[("k", "v")]);
        assert_eq!(s.response_time_ms, Some(1600));
        assert_eq!(s.effective_output_tps, Some(13.3));
        assert_eq!(s.effective_total_tps, Some(20.0));
        assert_eq!(s.output_tps, Some(14.0));
        assert_eq!(s.input_tps, Some(0.0));
        assert_eq!(
            s.chunk_jitter,
            Some(ChunkJitter {
                min: 0.5,
                p10: 1.0,
                median: 2.0,
                avg: 2.5,
                p90: 4.0,
                max: 9.0
            })
        );
        // The minimal span: every optional field absent.
        let m = &t.spans[1];
        assert_eq!(
            (m.span_id, m.span_type, m.name, m.start_time, m.end_time),
            ("s2", SpanType::Tool, "", 5, 5)
        );
        assert_eq!(m.status, Status::Ok);
        assert!(m.parent_span_id.is_none() && m.error_message.is_none() && m.provider.is_none());
        assert!(m.model_id.is_none() && m.usage.is_none() && m.ttft_ms.is_none());
        assert!(m.chunk_offsets.is_empty() && m.chunk_tokens.is_empty());
        assert!(m.reasoning_offsets.is_empty() && m.reasoning_chunk_tokens.is_empty());
        assert!(m.reasoning_duration_ms.is_none() && m.model_call_ms.is_none());
        assert!(m.input.is_none() && m.output.is_none() && m.tool_catalog.is_none());
        assert!(
            m.sources.is_none() && m.system_fingerprint.is_none() && m.safety_metadata.is_none()
        );
        assert!(m.rate_limit.is_none() && m.metadata.is_empty() && m.response_time_ms.is_none());
        assert!(m.effective_output_tps.is_none() && m.effective_total_tps.is_none());
        assert!(m.output_tps.is_none() && m.input_tps.is_none() && m.chunk_jitter.is_none());
    });
    // A trace without optional fields.
    with_batch(&with_trace(",\"agentName\":\"a\""), |b| {
        let t = &b.traces[0];
        assert!(t.trace_name.is_none() && t.workflow_name.is_none() && t.workflow_run_id.is_none());
        assert!(t.session_id.is_none() && t.metadata.is_empty() && t.customer.is_none());
    });
}
