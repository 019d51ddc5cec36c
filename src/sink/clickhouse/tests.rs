//! Round trips of spans through a real ClickHouse: every column written and read back, dedup,
//! runs of parts of batches, column types for the client, and the reuse of insert buffers.

use super::block::{spans_block, wire_type, RowRun, Spares, SPARES_WINDOW};
use super::schema::same_type;
use super::test_support::*;
use super::*;
use crate::row::{Kind, RowBatch, SPANS_COLUMNS};
use serde_json::{json, Value};
use std::sync::Arc;

/// The column list exactly as the storage contract orders it.
#[test]
fn spans_columns_are_in_contract_order() {
    let expected = "org_id, project_id, trace_id, span_id, parent_span_id, span_type, name, \
        start_time_ms, end_time_ms, duration_ms, status, error_message, provider, model_id, \
        priced_model_id, input_tokens, output_tokens, total_tokens, reasoning_tokens, \
        cached_input_tokens, cache_write_input_tokens, image_count, web_search_count, \
        request_count, ttft_ms, reasoning_duration_ms, model_call_ms, prompt_cost, \
        completion_cost, request_cost, image_cost, web_search_cost, internal_reasoning_cost, \
        cache_read_cost, cache_write_cost, total_cost, pricing_source, priced_at, trace_name, \
        agent_name, workflow_name, workflow_run_id, session_id, metadata_keys, \
        metadata_values, input, output, tool_catalog, system_fingerprint, safety_metadata, \
        sources, rate_limit_requests_limit, rate_limit_requests_remaining, \
        rate_limit_requests_reset_ms, rate_limit_tokens_limit, rate_limit_tokens_remaining, \
        rate_limit_tokens_reset_ms, chunk_offsets, chunk_tokens, reasoning_offsets, \
        reasoning_chunk_tokens, ingested_at, customer_id, customer_name, customer_image_url, \
        response_time_ms, effective_output_tps, effective_total_tps, output_tps, input_tps, \
        chunk_jitter_min, chunk_jitter_p10, chunk_jitter_median, chunk_jitter_avg, \
        chunk_jitter_p90, chunk_jitter_max, version, reported_cost";
    let names: Vec<&str> = SPANS_COLUMNS.iter().map(|c| c.0).collect();
    let expected: Vec<&str> = expected.split(", ").collect();
    assert_eq!(names, expected);
}

#[test]
fn migrate_twice_then_insert_and_read_back_every_column() {
    if skip() {
        return;
    }
    let db = TestDb::new("roundtrip");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.ping())
        .expect("ClickHouse on 127.0.0.1:9000");
    rt.block_on(store.migrate()).unwrap();
    rt.block_on(store.migrate()).unwrap();

    let columns = json_rows(&format!(
        "SELECT name, type FROM system.columns WHERE database = '{}' AND table = 'spans'",
        db.0
    ));
    let found = pairs(&columns, "name", "type");
    let expected: Vec<(String, String)> = SPANS_COLUMNS
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(found, expected);

    let first = batch("org-1", "trace-🚀", 2, 1_700_000_000_000);
    let second = batch("org-2", "trace-2", 1, 1_700_000_000_500);
    rt.block_on(store.insert_spans(&[first, second])).unwrap();

    let rows = json_rows(&format!(
        "SELECT *, toString(prompt_cost) AS prompt_s, toString(completion_cost) AS completion_s, \
         toString(request_cost) AS request_s, toString(image_cost) AS image_s, \
         toString(web_search_cost) AS web_search_s, \
         toString(internal_reasoning_cost) AS internal_reasoning_s, \
         toString(cache_read_cost) AS cache_read_s, toString(cache_write_cost) AS cache_write_s, \
         toString(total_cost) AS total_s, toUInt32(priced_at) AS priced_at_s, \
         toUInt32(ingested_at) AS ingested_at_s \
         FROM `{}`.spans ORDER BY org_id, span_id",
        db.0
    ));
    assert_eq!(rows.len(), 3);
    check_full_row(&rows[0], "org-1", "trace-🚀", "span-0", 1_700_000_000_000);
    check_sparse_row(&rows[1], "org-1", "trace-🚀", "span-1", 1_700_000_000_001);
    check_full_row(&rows[2], "org-2", "trace-2", "span-0", 1_700_000_000_500);
}

/// The string columns `a` and `b` of every row.
fn pairs(rows: &[Value], a: &str, b: &str) -> Vec<(String, String)> {
    let s = |v: &Value| v.as_str().unwrap().to_string();
    rows.iter().map(|r| (s(&r[a]), s(&r[b]))).collect()
}

fn u64_of(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_u64().unwrap(),
        other => panic!("not a UInt64: {other}"),
    }
}

fn check(row: &Value, expected: &[(&str, Value)]) {
    for (column, want) in expected {
        let got = &row[*column];
        let same = match (got, want) {
            (Value::String(_), Value::Number(_)) => u64_of(got) == want.as_u64().unwrap(),
            (Value::Array(g), Value::Array(w)) if w.iter().all(Value::is_u64) => g
                .iter()
                .map(u64_of)
                .eq(w.iter().map(|x| x.as_u64().unwrap())),
            (Value::Number(g), Value::Number(w)) => g.as_f64() == w.as_f64(),
            _ => got == want,
        };
        assert!(same, "column {column}: got {got}, want {want}");
    }
}

fn check_common(row: &Value, org: &str, trace: &str, span: &str, start: u64) {
    check(
        row,
        &[
            ("org_id", json!(org)),
            ("project_id", json!("proj-é")),
            ("trace_id", json!(trace)),
            ("span_id", json!(span)),
            ("span_type", json!("llm")),
            ("name", json!("chat 🚀 ünïcödé")),
            ("start_time_ms", json!(start)),
            ("end_time_ms", json!(start + 1500)),
            ("duration_ms", json!(1500)),
            ("ingested_at_s", json!(1_700_000_100)),
            ("version", json!(1_700_000_100_250u64)),
        ],
    );
}

fn check_full_row(row: &Value, org: &str, trace: &str, span: &str, start: u64) {
    check_common(row, org, trace, span, start);
    check(
        row,
        &[
            ("parent_span_id", json!("parent-1")),
            ("status", json!("error")),
            (
                "error_message",
                json!("boom \"quoted\" \\ back\nslash\ttab \u{0} nul"),
            ),
            ("provider", json!("openai.chat")),
            ("model_id", json!("gpt-4o-2024-08-06")),
            ("priced_model_id", json!("openai/gpt-4o")),
            ("input_tokens", json!(1000)),
            ("output_tokens", json!(200)),
            ("total_tokens", json!(1200)),
            ("reasoning_tokens", json!(50)),
            ("cached_input_tokens", json!(300)),
            ("cache_write_input_tokens", json!(7)),
            ("image_count", json!(2)),
            ("web_search_count", json!(3)),
            ("request_count", json!(1)),
            ("ttft_ms", json!(123.5)),
            ("reasoning_duration_ms", json!(400)),
            ("model_call_ms", json!(1400)),
            ("prompt_s", json!("0.0000012345")),
            ("completion_s", json!("0.0000000001")),
            ("request_s", json!("1.0000000000")),
            ("image_s", json!("0.0000000000")),
            ("web_search_s", json!("99999999.9999999999")),
            ("internal_reasoning_s", Value::Null),
            ("cache_read_s", json!("0.0000000250")),
            ("cache_write_s", json!("0.0000000003")),
            ("total_s", json!("1.0000012599")),
            ("pricing_source", json!("builtin")),
            ("priced_at_s", json!(1_700_000_050)),
            ("trace_name", json!("trace ✓")),
            ("agent_name", json!("agent 😀")),
            ("workflow_name", json!("wf")),
            ("workflow_run_id", json!("run-1")),
            ("session_id", json!("sess-1")),
            ("metadata_keys", json!(["env", "ключ", "empty"])),
            ("metadata_values", json!(["prod", "значение 🎉", ""])),
            ("input", json!("input: 你好 🌍")),
            ("output", json!("output")),
            ("tool_catalog", json!("[{\"name\":\"search\"}]")),
            ("system_fingerprint", json!("fp_123")),
            ("safety_metadata", json!("{}")),
            ("sources", json!("https://example.com")),
            ("rate_limit_requests_limit", json!(500)),
            ("rate_limit_requests_remaining", json!(499)),
            ("rate_limit_requests_reset_ms", json!(60_000)),
            ("rate_limit_tokens_limit", json!(u64::MAX)),
            ("rate_limit_tokens_remaining", json!(0)),
            ("rate_limit_tokens_reset_ms", json!(1)),
            ("chunk_offsets", json!([0, 10, 20])),
            ("chunk_tokens", json!([5, 6, 7])),
            ("reasoning_offsets", json!([1])),
            ("reasoning_chunk_tokens", json!([u64::MAX])),
            ("customer_id", json!("cust-1")),
            ("customer_name", json!("Ćustomer")),
            ("customer_image_url", json!("https://example.com/a.png")),
            ("response_time_ms", json!(1600)),
            ("effective_output_tps", json!(133.25)),
            ("effective_total_tps", json!(800.5)),
            ("output_tps", json!(142.75)),
            ("input_tps", json!(0.0)),
            ("chunk_jitter_min", json!(0.5)),
            ("chunk_jitter_p10", json!(1.0)),
            ("chunk_jitter_median", json!(2.25)),
            ("chunk_jitter_avg", json!(2.5)),
            ("chunk_jitter_p90", json!(4.0)),
            ("chunk_jitter_max", json!(9.75)),
        ],
    );
}

fn check_sparse_row(row: &Value, org: &str, trace: &str, span: &str, start: u64) {
    check_common(row, org, trace, span, start);
    let mut expected: Vec<(&str, Value)> = vec![
        ("status", json!("ok")),
        ("pricing_source", json!("")),
        ("metadata_keys", json!([])),
        ("metadata_values", json!([])),
        ("chunk_offsets", json!([])),
        ("chunk_tokens", json!([])),
        ("reasoning_offsets", json!([])),
        ("reasoning_chunk_tokens", json!([])),
        ("priced_at_s", Value::Null),
    ];
    for (name, ty) in SPANS_COLUMNS {
        if ty.starts_with("Nullable") {
            expected.push((name, Value::Null));
        } else if *ty == "UInt64"
            && !name.contains("time_ms")
            && !matches!(*name, "duration_ms" | "version")
        {
            expected.push((name, json!(0)));
        } else if *ty == "String"
            && !matches!(
                *name,
                "org_id"
                    | "project_id"
                    | "trace_id"
                    | "span_id"
                    | "name"
                    | "span_type"
                    | "status"
                    | "pricing_source"
            )
        {
            expected.push((name, json!("")));
        }
    }
    check(row, &expected);
}

/// An insert whose money columns hold no value at all: the client crate gives such a column
/// a default scale, converted to the table's before sending (vendor/clickhouse-rs patch).
#[test]
fn an_insert_of_only_unpriced_rows_stores_null_costs() {
    if skip() {
        return;
    }
    let db = TestDb::new("unpriced");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let b = RowBatch::from_rows(&[row("org-u", "trace-u", "span-1", 1_700_000_000_001, false)]);
    rt.block_on(store.insert_spans(std::slice::from_ref(&b)))
        .unwrap();
    let rows = json_rows(&format!(
        "SELECT *, toUInt32(priced_at) AS priced_at_s, toUInt32(ingested_at) AS ingested_at_s \
         FROM `{}`.spans",
        db.0
    ));
    assert_eq!(rows.len(), 1);
    check_sparse_row(&rows[0], "org-u", "trace-u", "span-1", 1_700_000_000_001);
}

#[test]
fn same_batch_twice_deduplicates() {
    if skip() {
        return;
    }
    let db = TestDb::new("dedupe");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let b = batch("org-d", "trace-d", 5, 1_700_000_000_000);
    rt.block_on(store.insert_spans(std::slice::from_ref(&b)))
        .unwrap();
    rt.block_on(store.insert_spans(std::slice::from_ref(&b)))
        .unwrap();
    assert_eq!(
        count(&format!("SELECT count() FROM `{}`.spans FINAL", db.0)),
        5
    );
    assert_eq!(
        count(&format!(
            "SELECT uniqExact(org_id, trace_id, span_id) FROM `{}`.spans",
            db.0
        )),
        5
    );
}

/// Parts of batches in one insert: every run's regions are cut at its rows, and array
/// offsets (counted from each batch's first row) are rebased on the block's.
#[test]
fn runs_of_parts_of_batches_store_every_row_whole() {
    if skip() {
        return;
    }
    let db = TestDb::new("runs");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    // Even rows are full (metadata, sample arrays), odd ones sparse.
    let a = batch("org-a", "trace-a", 6, 1_700_000_000_000);
    let b = batch("org-b", "trace-b", 3, 1_700_000_000_000);
    let runs = [
        RowRun {
            batch: &a,
            rows: 1..4,
        },
        RowRun {
            batch: &b,
            rows: 0..2,
        },
        RowRun {
            batch: &a,
            rows: 4..6,
        },
    ];
    let inserted = rt.block_on(store.insert_runs(&runs)).unwrap();
    assert_eq!(inserted.rows, 7);
    let rows = json_rows(&format!(
        "SELECT org_id, span_id, metadata_keys, metadata_values, chunk_offsets, \
         reasoning_chunk_tokens, toString(total_cost) AS total_s, input \
         FROM `{}`.spans ORDER BY org_id, span_id",
        db.0
    ));
    let got = pairs(&rows, "org_id", "span_id");
    let want: Vec<(String, String)> = [
        ("org-a", "span-1"),
        ("org-a", "span-2"),
        ("org-a", "span-3"),
        ("org-a", "span-4"),
        ("org-a", "span-5"),
        ("org-b", "span-0"),
        ("org-b", "span-1"),
    ]
    .iter()
    .map(|(o, s)| (o.to_string(), s.to_string()))
    .collect();
    assert_eq!(got, want);
    for r in &rows {
        let n: usize = r["span_id"].as_str().unwrap()[5..].parse().unwrap();
        if n.is_multiple_of(2) {
            assert_eq!(r["metadata_keys"], json!(["env", "ключ", "empty"]), "{r}");
            assert_eq!(r["metadata_values"], json!(["prod", "значение 🎉", ""]));
            assert_eq!(r["chunk_offsets"], json!(["0", "10", "20"]));
            assert_eq!(r["reasoning_chunk_tokens"], json!([u64::MAX.to_string()]));
            assert_eq!(r["total_s"], "1.0000012599");
            assert_eq!(r["input"], "input: 你好 🌍");
        } else {
            assert_eq!(r["metadata_keys"], json!([]), "{r}");
            assert_eq!(r["chunk_offsets"], json!([]));
            assert_eq!(r["total_s"], Value::Null);
            assert_eq!(r["input"], "");
        }
    }
}

#[test]
fn every_kind_has_the_same_type_for_the_client_as_in_the_table() {
    use Kind::*;
    for kind in [
        Str, U64, OptU64, OptF64, Money, Time, OptTime, Ints, MetaKeys, MetaValues,
    ] {
        let wire = wire_type(kind).to_string();
        assert!(
            same_type(&wire, kind.sql_type()),
            "{wire} vs {}",
            kind.sql_type()
        );
    }
}

#[test]
fn spare_buffers_survive_small_inserts_and_go_after_a_burst() {
    let sent = |bytes: usize| vec![Arc::new(Vec::<u8>::with_capacity(bytes))];
    let mut spares = Spares::default();
    // A large block, then smaller ones: the buffer keeps its size for the next large one.
    spares.reclaim(sent(8 << 20), 8 << 20);
    for _ in 0..10 {
        let taken = std::mem::take(&mut spares.buffers);
        assert!(
            taken[0].capacity() >= 8 << 20,
            "shrunk after a small insert"
        );
        spares.reclaim(vec![Arc::new(taken.into_iter().next().unwrap())], 100 << 10);
    }
    // Two windows of small blocks only: the burst is over and the memory goes.
    for _ in 0..2 * SPARES_WINDOW {
        let taken = std::mem::take(&mut spares.buffers);
        let buffer = taken.into_iter().next().unwrap_or_default();
        spares.reclaim(vec![Arc::new(buffer)], 100 << 10);
    }
    assert!(spares.buffers.iter().all(|b| b.capacity() == 0));
    // A buffer the client still holds is replaced by an empty one, not waited for.
    let shared = Arc::new(Vec::<u8>::with_capacity(1024));
    let _client = shared.clone();
    spares.reclaim(vec![shared], 1024);
    assert_eq!(spares.buffers.len(), 1);
    assert_eq!(spares.buffers[0].capacity(), 0);
}

#[test]
fn an_insert_gives_its_column_buffers_back_for_the_next() {
    if skip() {
        return;
    }
    let db = TestDb::new("spares");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    // 3000 rows: the fixed-width columns (24 KB) and the larger string columns pass the
    // client's SHARE_MIN_BYTES, so they go to the socket from these buffers in place, and
    // must come back all the same once written; the small ones are copied.
    const ROWS: usize = 3000;
    let first = [batch("org-s", "trace-1", ROWS, 1_700_000_000_000)];
    rt.block_on(store.insert_spans(&first)).unwrap();
    let spares: Vec<(usize, usize)> = store.spares.lock().unwrap()[0]
        .buffers
        .iter()
        .map(|b| (b.len(), b.capacity()))
        .collect();
    assert_eq!(spares.len(), 2 * SPANS_COLUMNS.len());
    assert!(spares.iter().all(|&(len, _)| len == 0));
    let start = 2 * crate::row::col::start_time_ms;
    assert!(
        spares[start].1 >= ROWS * 8,
        "a column sent in place came back: {:?}",
        spares[start]
    );
    let total: usize = spares.iter().map(|&(_, cap)| cap).sum();
    assert!(total > ROWS * 100, "kept {total} bytes of buffers");
    // The next insert writes into them, and its rows are stored like the first's.
    let second = [batch("org-s", "trace-2", ROWS, 1_700_000_000_000)];
    rt.block_on(store.insert_spans(&second)).unwrap();
    let rows = json_rows(&format!(
        "SELECT trace_id, count() AS n, sum(start_time_ms) AS starts, \
         sum(length(input)) AS input_bytes, sum(length(metadata_keys)) AS keys \
         FROM `{}`.spans WHERE org_id = 'org-s' GROUP BY trace_id ORDER BY trace_id",
        db.0
    ));
    let starts: u64 = (0..ROWS as u64).map(|i| 1_700_000_000_000 + i).sum();
    let full = ROWS as u64 / 2;
    for (r, trace) in rows.iter().zip(["trace-1", "trace-2"]) {
        assert_eq!(r["trace_id"], trace);
        assert_eq!(u64_of(&r["n"]), ROWS as u64);
        assert_eq!(u64_of(&r["starts"]), starts);
        assert_eq!(
            u64_of(&r["input_bytes"]),
            full * "input: 你好 🌍".len() as u64
        );
        assert_eq!(u64_of(&r["keys"]), full * 3);
    }
    assert_eq!(rows.len(), 2);
}

/// Insert throughput of the block path; run with `--ignored --nocapture`.
#[test]
#[ignore]
fn insert_rate() {
    let db = TestDb::new("rate");
    let store = Store::new(NATIVE_URL, &db.0).unwrap();
    let rt = rt();
    rt.block_on(store.migrate()).unwrap();
    let batches: Vec<RowBatch> = (0..100)
        .map(|i| batch("org-r", &format!("trace-{i}"), 500, 1_700_000_000_000))
        .collect();
    let rows: usize = batches.iter().map(RowBatch::len).sum();
    let runs: Vec<RowRun<'_>> = batches.iter().map(RowRun::whole).collect();
    let t0 = std::time::Instant::now();
    let _block = spans_block(&runs, rows, Vec::new());
    let build = t0.elapsed();
    let t1 = std::time::Instant::now();
    rt.block_on(store.insert_runs(&runs)).unwrap();
    let total = t1.elapsed();
    let rate = |d: std::time::Duration| rows as f64 / d.as_secs_f64();
    eprintln!(
        "{rows} rows: block {build:?} ({:.0} rows/s), \
         block+insert {total:?} ({:.0} rows/s)",
        rate(build),
        rate(total)
    );
}

/// The insert block, written at once where a column's rows are all the same (empty, null, the
/// one organisation) and a run at a time elsewhere, holds exactly the regions a batch of the
/// same rows in the same order holds (`RowBatch::from_rows`, an encoder of its own): rows
/// alike across every batch, alike within each batch but not across, and all different.
#[test]
fn a_block_holds_the_regions_of_one_batch_of_its_rows_whatever_columns_repeat() {
    use crate::row::test_rows::row;
    use crate::row::{RowRef, REGIONS};
    let ids: Vec<String> = (0..40).map(|i| format!("id-{i:02}")).collect();
    let sparse = |i: usize| row("org", &ids[i], &ids[39 - i], 10 + i as u64, false);
    let full = |i: usize| row("org", &ids[i], &ids[39 - i], 10 + i as u64, true);
    let other_org = |i: usize| row("org-2", &ids[i], &ids[i], 10, false);
    let cases: Vec<(&str, Vec<Vec<RowRef<'_>>>)> = vec![
        (
            "all sparse",
            vec![(0..5).map(sparse).collect(), (5..12).map(sparse).collect()],
        ),
        (
            "sparse then full",
            vec![(0..5).map(sparse).collect(), (5..9).map(full).collect()],
        ),
        (
            "mixed",
            vec![(0..6)
                .map(|i| if i % 2 == 0 { full(i) } else { sparse(i) })
                .collect()],
        ),
        (
            "two orgs",
            vec![
                (0..3).map(sparse).collect(),
                (3..6).map(other_org).collect(),
            ],
        ),
        ("one row", vec![vec![full(1)]]),
    ];
    for (name, rows) in cases {
        let batches: Vec<RowBatch> = rows.iter().map(|r| RowBatch::from_rows(r)).collect();
        let all: Vec<RowRef<'_>> = rows.concat();
        let want = RowBatch::from_rows(&all);
        // Whole batches (a run at a time), and every row a run of its own (a column at a
        // time, the loop for interleaved traces).
        let whole: Vec<RowRun<'_>> = batches.iter().map(RowRun::whole).collect();
        let singles: Vec<RowRun<'_>> = batches
            .iter()
            .flat_map(|b| {
                (0..b.len()).map(move |i| RowRun {
                    batch: b,
                    rows: i..i + 1,
                })
            })
            .collect();
        for runs in [whole, singles] {
            let (_, parts, _) = spans_block(&runs, all.len(), Vec::new());
            assert_eq!(parts.len(), REGIONS);
            for (i, part) in parts.iter().enumerate() {
                assert_eq!(
                    part.as_slice(),
                    &want.data()[want.region(i)],
                    "{name}: region {i}"
                );
            }
        }
    }
}
