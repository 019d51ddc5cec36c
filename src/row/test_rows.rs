//! Rows with every column set, or only the required ones, for tests across the crate.

use super::*;

pub const META: &[(&str, &str)] = &[("env", "prod"), ("ключ", "значение 🎉"), ("empty", "")];

/// A row with every column set (`full`) or every optional column absent.
pub fn row<'a>(org: &'a str, trace: &'a str, span: &'a str, start: u64, full: bool) -> RowRef<'a> {
    let mut r = RowRef {
        org_id: org,
        project_id: "proj-é",
        trace_id: trace,
        span_id: span,
        span_type: "llm",
        name: "chat 🚀 ünïcödé",
        start_time_ms: start,
        end_time_ms: start + 1500,
        duration_ms: 1500,
        status: "ok",
        ingested_at: 1_700_000_100,
        version: 1_700_000_100_250,
        ..RowRef::default()
    };
    if full {
        r.parent_span_id = "parent-1";
        r.status = "error";
        r.error_message = "boom \"quoted\" \\ back\nslash\ttab \u{0} nul";
        r.provider = "openai.chat";
        r.model_id = "gpt-4o-2024-08-06";
        r.priced_model_id = "openai/gpt-4o";
        r.usage = StoredUsage {
            input_tokens: 1000,
            output_tokens: 200,
            total_tokens: 1200,
            reasoning_tokens: 50,
            cached_input_tokens: 300,
            cache_write_input_tokens: 7,
            image_count: 2,
            web_search_count: 3,
            request_count: 1,
        };
        r.ttft_ms = Some(123.5);
        r.reasoning_duration_ms = Some(400);
        r.model_call_ms = Some(1400);
        r.costs = CostColumns {
            prompt: Some(12345),
            completion: Some(1),
            request: Some(10_000_000_000),
            image: Some(0),
            web_search: Some(999_999_999_999_999_999),
            internal_reasoning: None,
            cache_read: Some(250),
            cache_write: Some(3),
            total: Some(10_000_012_599),
        };
        r.pricing_source = "builtin";
        r.priced_at = Some(1_700_000_050);
        r.trace_name = "trace ✓";
        r.agent_name = "agent 😀";
        r.workflow_name = "wf";
        r.workflow_run_id = "run-1";
        r.session_id = "sess-1";
        r.metadata = META.into();
        r.input = "input: 你好 🌍";
        r.output = "output";
        r.tool_catalog = "[{\"name\":\"search\"}]";
        r.system_fingerprint = "fp_123";
        r.safety_metadata = "{}";
        r.sources = "https://example.com";
        r.rate_limit_requests_limit = Some(500);
        r.rate_limit_requests_remaining = Some(499);
        r.rate_limit_requests_reset_ms = Some(60_000);
        r.rate_limit_tokens_limit = Some(u64::MAX);
        r.rate_limit_tokens_remaining = Some(0);
        r.rate_limit_tokens_reset_ms = Some(1);
        r.chunk_offsets = &[0, 10, 20];
        r.chunk_tokens = &[5, 6, 7];
        r.reasoning_offsets = &[1];
        r.reasoning_chunk_tokens = &[u64::MAX];
        r.customer_id = "cust-1";
        r.customer_name = "Ćustomer";
        r.customer_image_url = "https://example.com/a.png";
        r.response_time_ms = Some(1600);
        r.effective_output_tps = Some(133.25);
        r.effective_total_tps = Some(800.5);
        r.output_tps = Some(142.75);
        r.input_tps = Some(0.0);
        r.chunk_jitter_min = Some(0.5);
        r.chunk_jitter_p10 = Some(1.0);
        r.chunk_jitter_median = Some(2.25);
        r.chunk_jitter_avg = Some(2.5);
        r.chunk_jitter_p90 = Some(4.0);
        r.chunk_jitter_max = Some(9.75);
    }
    r
}

/// `spans` rows of `org` in one batch, alternating full and sparse rows; span ids
/// `span-0`, `span-1`, ...
pub fn batch(org: &str, trace: &str, spans: usize, start: u64) -> RowBatch {
    batch_of(org, trace, spans, start, None)
}

/// `batch(org, trace, spans, start)` and then one full row with span id `last`.
#[cfg_attr(not(feature = "server"), allow(dead_code))] // The sink's tests.
pub fn batch_then(org: &str, trace: &str, spans: usize, start: u64, last: &str) -> RowBatch {
    batch_of(org, trace, spans, start, Some(last))
}

fn batch_of(org: &str, trace: &str, spans: usize, start: u64, last: Option<&str>) -> RowBatch {
    let ids: Vec<String> = (0..spans).map(|i| format!("span-{i}")).collect();
    let mut rows: Vec<RowRef<'_>> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| row(org, trace, id, start + i as u64, i % 2 == 0))
        .collect();
    rows.extend(last.map(|last| row(org, trace, last, start, true)));
    RowBatch::from_rows(&rows)
}

/// The string column `c` of row `i`.
#[cfg_attr(not(feature = "server"), allow(dead_code))] // The sink's tests.
pub fn str_at(b: &RowBatch, c: usize, i: usize) -> String {
    match &b.reader(i..i + 1).next_row().expect("a row")[c] {
        Value::Str(s) => s.to_string(),
        other => panic!("column {c} is not a string: {other:?}"),
    }
}
