//! What reaches ClickHouse: every column of a span read back and compared with what was sent.

use serde_json::{json, Value};

use crate::support::*;

fn full_batch() -> Value {
    json!({
        "version": "v1",
        "traces": [{
            "traceId": "trace-\u{e9}-1",
            "traceName": "line1\nline2 \"quoted\" caf\u{e9} 🚀",
            "agentName": "agent-x",
            "workflowName": "wf",
            "workflowRunId": "run-7",
            "sessionId": "sess-1",
            "metadata": {"env": "prod", "team": "core", "shared": "trace"},
            "customer": {"id": "cust-1", "name": "ACME", "imageUrl": "https://example.com/a.png"},
            "spans": [
                {
                    "spanId": "span-llm",
                    "parentSpanId": "span-agent",
                    "spanType": "llm",
                    "name": "chat \u{e9}",
                    "startTime": 1700000000000u64,
                    "endTime": 1700000001234u64,
                    "status": "error",
                    "errorMessage": "rate limited \\ retry",
                    "provider": "openai.chat",
                    "modelId": "gpt-4o",
                    "usage": {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200, "cachedInputTokens": 0},
                    "ttftMs": 12.5,
                    "chunkOffsets": [1, 2, 3],
                    "chunkTokens": [4, 5, 6],
                    "reasoningOffsets": [7],
                    "reasoningChunkTokens": [8],
                    "reasoningDurationMs": 30,
                    "modelCallMs": 1200,
                    "input": "{\"role\":\"user\",\"content\":\"héllo 👋\"}",
                    "output": "tab\there",
                    "toolCatalog": "[]",
                    "sources": "src",
                    "systemFingerprint": "fp_1",
                    "safetyMetadata": "{}",
                    "rateLimit": {"requestsLimit": 100, "requestsRemaining": 99, "requestsResetMs": 1000,
                                  "tokensLimit": 10000, "tokensRemaining": 9000, "tokensResetMs": 2000},
                    "metadata": {"shared": "span", "only": "span"},
                    "responseTimeMs": 1234,
                    "effectiveOutputTps": 1.5,
                    "effectiveTotalTps": 2.5,
                    "outputTps": 3.5,
                    "inputTps": 4.5,
                    "chunkJitter": {"min": 1, "p10": 2, "median": 3, "avg": 3.5, "p90": 4, "max": 5}
                },
                {
                    "spanId": "span-agent",
                    "spanType": "agent",
                    "name": "",
                    "startTime": 1700000000500u64,
                    "endTime": 1700000000500u64
                }
            ]
        }]
    })
}

#[test]
fn rows_equal_what_was_sent() {
    let server = Server::start();
    let key = server.ready_key("org-rows");
    let r = server.post_ingest(&key, &serde_json::to_vec(&full_batch()).unwrap());
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    server.wait_rows(2);

    let rows = server.rows(
        "org_id, project_id, trace_id, span_id, parent_span_id, span_type, name, start_time_ms, end_time_ms, duration_ms, \
         status, error_message, provider, model_id, priced_model_id, input_tokens, output_tokens, total_tokens, reasoning_tokens, \
         cached_input_tokens, cache_write_input_tokens, image_count, web_search_count, request_count, ttft_ms, reasoning_duration_ms, \
         model_call_ms, toString(prompt_cost) AS prompt_cost, toString(completion_cost) AS completion_cost, \
         toString(total_cost) AS total_cost, isNull(cache_read_cost) AS cache_read_null, pricing_source, isNull(priced_at) AS priced_at_null, \
         trace_name, agent_name, workflow_name, workflow_run_id, session_id, metadata_keys, metadata_values, input, output, tool_catalog, \
         system_fingerprint, safety_metadata, sources, rate_limit_requests_limit, rate_limit_requests_remaining, rate_limit_requests_reset_ms, \
         rate_limit_tokens_limit, rate_limit_tokens_remaining, rate_limit_tokens_reset_ms, chunk_offsets, chunk_tokens, reasoning_offsets, \
         reasoning_chunk_tokens, customer_id, customer_name, customer_image_url, response_time_ms, effective_output_tps, effective_total_tps, \
         output_tps, input_tps, chunk_jitter_min, chunk_jitter_p10, chunk_jitter_median, chunk_jitter_avg, chunk_jitter_p90, chunk_jitter_max, \
         toUnixTimestamp(ingested_at) > 1700000000 AS ingested_recent",
        "ORDER BY span_id DESC",
    );
    assert_eq!(rows.len(), 2);
    let llm = &rows[0];
    let expect_llm = json!({
        "org_id": "org-rows", "project_id": "", "trace_id": "trace-é-1", "span_id": "span-llm",
        "parent_span_id": "span-agent", "span_type": "llm", "name": "chat é",
        "start_time_ms": "1700000000000", "end_time_ms": "1700000001234", "duration_ms": "1234",
        "status": "error", "error_message": "rate limited \\ retry", "provider": "openai.chat", "model_id": "gpt-4o",
        "priced_model_id": "openai/gpt-4o",
        "input_tokens": "1000", "output_tokens": "200", "total_tokens": "1200", "reasoning_tokens": "0",
        "cached_input_tokens": "0", "cache_write_input_tokens": "0", "image_count": "0", "web_search_count": "0",
        "request_count": "1", "ttft_ms": 12.5, "reasoning_duration_ms": "30", "model_call_ms": "1200",
        // gpt-4o: $2.50 / 1M input, $10 / 1M output -> 1000 * 0.0000025 and 200 * 0.00001.
        "prompt_cost": "0.0025000000", "completion_cost": "0.0020000000", "total_cost": "0.0045000000",
        "cache_read_null": 1, "pricing_source": "builtin", "priced_at_null": 0,
        "trace_name": "line1\nline2 \"quoted\" café 🚀", "agent_name": "agent-x", "workflow_name": "wf",
        "workflow_run_id": "run-7", "session_id": "sess-1",
        // serde_json sends object keys sorted: env, shared, team.
        "metadata_keys": ["env", "shared", "team", "only"], "metadata_values": ["prod", "span", "core", "span"],
        "input": "{\"role\":\"user\",\"content\":\"héllo 👋\"}", "output": "tab\there", "tool_catalog": "[]",
        "system_fingerprint": "fp_1", "safety_metadata": "{}", "sources": "src",
        "rate_limit_requests_limit": "100", "rate_limit_requests_remaining": "99", "rate_limit_requests_reset_ms": "1000",
        "rate_limit_tokens_limit": "10000", "rate_limit_tokens_remaining": "9000", "rate_limit_tokens_reset_ms": "2000",
        "chunk_offsets": ["1", "2", "3"], "chunk_tokens": ["4", "5", "6"], "reasoning_offsets": ["7"], "reasoning_chunk_tokens": ["8"],
        "customer_id": "cust-1", "customer_name": "ACME", "customer_image_url": "https://example.com/a.png",
        "response_time_ms": "1234", "effective_output_tps": 1.5, "effective_total_tps": 2.5, "output_tps": 3.5, "input_tps": 4.5,
        "chunk_jitter_min": 1.0, "chunk_jitter_p10": 2.0, "chunk_jitter_median": 3.0, "chunk_jitter_avg": 3.5,
        "chunk_jitter_p90": 4.0, "chunk_jitter_max": 5.0, "ingested_recent": 1
    });
    assert_same(llm, &expect_llm);

    // Absent fields: defaults, empty strings, nulls; agents are not priced.
    let agent = &rows[1];
    let expect_agent = json!({
        "org_id": "org-rows", "project_id": "", "trace_id": "trace-é-1", "span_id": "span-agent",
        "parent_span_id": "", "span_type": "agent", "name": "",
        "start_time_ms": "1700000000500", "end_time_ms": "1700000000500", "duration_ms": "0",
        "status": "ok", "error_message": "", "provider": "", "model_id": "", "priced_model_id": "",
        "input_tokens": "0", "output_tokens": "0", "total_tokens": "0", "reasoning_tokens": "0",
        "cached_input_tokens": "0", "cache_write_input_tokens": "0", "image_count": "0", "web_search_count": "0",
        "request_count": "0", "ttft_ms": null, "reasoning_duration_ms": null, "model_call_ms": null,
        "prompt_cost": "\\N", "completion_cost": "\\N", "total_cost": "\\N",
        "cache_read_null": 1, "pricing_source": "", "priced_at_null": 1,
        "trace_name": "line1\nline2 \"quoted\" café 🚀", "agent_name": "agent-x", "workflow_name": "wf",
        "workflow_run_id": "run-7", "session_id": "sess-1",
        "metadata_keys": ["env", "shared", "team"], "metadata_values": ["prod", "trace", "core"],
        "input": "", "output": "", "tool_catalog": "", "system_fingerprint": "", "safety_metadata": "", "sources": "",
        "rate_limit_requests_limit": null, "rate_limit_requests_remaining": null, "rate_limit_requests_reset_ms": null,
        "rate_limit_tokens_limit": null, "rate_limit_tokens_remaining": null, "rate_limit_tokens_reset_ms": null,
        "chunk_offsets": [], "chunk_tokens": [], "reasoning_offsets": [], "reasoning_chunk_tokens": [],
        "customer_id": "cust-1", "customer_name": "ACME", "customer_image_url": "https://example.com/a.png",
        "response_time_ms": null, "effective_output_tps": null, "effective_total_tps": null, "output_tps": null, "input_tps": null,
        "chunk_jitter_min": null, "chunk_jitter_p10": null, "chunk_jitter_median": null, "chunk_jitter_avg": null,
        "chunk_jitter_p90": null, "chunk_jitter_max": null, "ingested_recent": 1
    });
    assert_same(agent, &expect_agent);
}

/// Compares column by column so a failure names the column.
fn assert_same(got: &Value, want: &Value) {
    let want = want.as_object().unwrap();
    let got = got.as_object().unwrap();
    for (k, w) in want {
        let g = got.get(k).unwrap_or(&Value::Null);
        // ClickHouse prints integral floats as `1` and Nullable toString as "\N" or null.
        let same = g == w
            || (g.as_f64().is_some() && g.as_f64() == w.as_f64())
            || (w == "\\N" && g.is_null());
        assert!(same, "column {k}: got {g}, want {w}");
    }
    assert_eq!(got.len(), want.len(), "column count");
}

#[test]
fn a_resent_batch_is_stored_once() {
    let server = Server::start();
    let key = server.ready_key("org-dedupe");
    let body = batch("dd", 2, 3);
    assert_eq!(server.post_ingest(&key, &body).status, 202);
    server.wait_rows(6);
    assert_eq!(server.post_ingest(&key, &body).status, 202);
    // Both copies are in the table...
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.raw_count() < 12 {
        assert!(
            std::time::Instant::now() < deadline,
            "the resent batch never arrived"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // ...and FINAL collapses the retry onto one row per span.
    assert_eq!(server.count(), 6);
}

/// Insert blocks reach ClickHouse in the table's sorting-key order, so it writes them without
/// sorting (its `MergeTreeDataWriterBlocksAlreadySorted` event counts every block), even when
/// requests list their traces out of order and spans of one trace come in several requests
/// with interleaving start times. A private ClickHouse, so no other test's inserts count.
#[test]
fn insert_blocks_reach_clickhouse_already_sorted() {
    use crate::private_clickhouse::PrivateClickHouse;
    let ch = PrivateClickHouse::start();
    let url = ch.native_url();
    let mut server = Server::new(
        &ch.http_addr(),
        &[
            ("INGEST_CLICKHOUSE_URL", url.as_str()),
            ("INGEST_FLUSH_INTERVAL_MS", "300"),
        ],
    );
    server.spawn();
    let key = server.ready_key("org-sorted");
    let events = || -> (u64, u64) {
        let v = server.ch_json(
            "SELECT sumIf(value, event = 'MergeTreeDataWriterBlocks') AS blocks, \
             sumIf(value, event = 'MergeTreeDataWriterBlocksAlreadySorted') AS sorted \
             FROM system.events FORMAT JSONEachRow",
        );
        let n = |k: &str| v[0][k].as_str().unwrap().parse::<u64>().unwrap();
        (n("blocks"), n("sorted"))
    };
    let before = events();
    let mut sent = 0;
    for request in 0..12u64 {
        // Traces in descending id order; each trace's spans in descending start order, and
        // every trace continues in the next request with earlier and later spans.
        let traces: Vec<Value> = (0..6u64)
            .rev()
            .map(|t| {
                let spans: Vec<Value> = (0..5u64)
                    .rev()
                    .map(|s| {
                        let start = 1_700_000_000_000 + (s * 7 + request * 3) % 40;
                        json!({
                            "spanId": format!("r{request}-s{s}"),
                            "spanType": "llm",
                            "name": "chat",
                            "startTime": start,
                            "endTime": start + 10,
                        })
                    })
                    .collect();
                json!({"traceId": format!("trace-{}", (t * 7919) % 97), "traceName": "run", "spans": spans})
            })
            .collect();
        let body = serde_json::to_vec(&json!({"version": "v1", "traces": traces})).unwrap();
        let r = server.post_ingest(&key, &body);
        assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
        sent += 30;
        if request % 4 == 3 {
            server.wait_rows(sent);
        }
    }
    server.wait_rows(sent);
    let after = events();
    let blocks = after.0 - before.0;
    assert!(blocks >= 3, "several inserts, got {blocks}");
    assert_eq!(after.1 - before.1, blocks, "every block arrived sorted");
    drop(server);
    drop(ch);
}
