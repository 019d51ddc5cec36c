//! Fuzz property of the body decoder: arbitrary bytes never panic, and the decoder agrees with
//! an independent, slow reading of the contract's schema on every body.
//!
//! The oracle (`fuzz/oracle.rs`) shares no code with `decode.rs`/`validate/`. The decoder must
//! accept exactly the bodies the oracle finds valid, decode exactly the values the oracle reads
//! (compared here leaf by leaf), and build rows for them without panicking.

use std::cell::RefCell;
use std::sync::OnceLock;

use bumpalo::Bump;

use oracle::{
    depth, parse, violations, INT_ARRAYS, J, JITTER_KEYS, RATE_LIMIT_KEYS, TPS, USAGE_KEYS,
};

use super::decode::Decoder;
use crate::auth::Principal;
use crate::ingest::body::{PaddedBody, BODY_PADDING};
use crate::ingest::rows;
use crate::ingest::wire::Batch;
use crate::ingest::{BatchLimit, DecodeError};
use crate::pricing::{PriceTable, Pricer};
use crate::row::RowBatch;

mod oracle;

/// Nesting at which the decoder's parser (simd-json) may refuse a body the oracle parses.
const PARSER_DEPTH: usize = 1000;

thread_local! {
    /// Reused across inputs, as a worker reuses its decoder across requests.
    static DECODER: RefCell<Decoder> = RefCell::new(Decoder::new());
}

/// What `fuzz_decode` puts after the body as its padding.
const PADDING_GARBAGE: &[u8] = b"\"\\uD83D1e400\x80]}{[\"";

/// Runs one fuzz input through decode + validate (+ row building) and checks it against the
/// oracle. Panics on any disagreement.
pub fn fuzz_decode(data: &[u8]) {
    // The padding after a body may hold anything (in the server: the next pipelined request,
    // or what de-chunking left); text a parser reading past the body would trip on.
    let mut body = data.to_vec();
    let garbage = PADDING_GARBAGE.iter().cycle().take(BODY_PADDING);
    body.extend(garbage.clone());
    let arena = Bump::new();
    let oracle = parse(data);
    DECODER.with(|d| {
        let mut decoder = d.borrow_mut();
        let padded = PaddedBody::new(&mut body, data.len());
        let outcome = decoder.decode(padded, &arena);
        match outcome {
            Ok(batch) => {
                let tree = match oracle {
                    Ok(tree) => tree,
                    Err(e) => panic!("decoder accepted a body the oracle cannot parse: {e:?}"),
                };
                let problems = violations(&tree);
                assert!(
                    problems.is_empty(),
                    "decoder accepted a body that breaks the schema: {problems:?}"
                );
                let mut want = leaves_of_tree(&tree);
                let mut got = leaves_of_batch(&batch);
                want.sort();
                got.sort();
                assert_eq!(got, want, "decoded values differ from the oracle's reading");
                build_rows(&batch);
            }
            Err(DecodeError::Schema(issues)) => {
                assert!(
                    !issues.is_empty() && issues.len() <= super::issue::MAX_ISSUES,
                    "{} issues",
                    issues.len()
                );
                let tree = match oracle {
                    Ok(tree) => tree,
                    Err(e) => panic!("decoder read JSON the oracle cannot parse: {e:?}"),
                };
                assert!(
                    !violations(&tree).is_empty(),
                    "decoder refused a valid body: {issues:?}"
                );
            }
            Err(DecodeError::InvalidJson(message)) => match oracle {
                Err(_) => {}
                Ok(tree) if depth(&tree) >= PARSER_DEPTH => {}
                Ok(_) => panic!("decoder refused JSON the oracle parses: {message}"),
            },
            Err(
                e @ (DecodeError::TooLarge { .. }
                | DecodeError::TooManySpans { .. }
                | DecodeError::Encoding(_)
                | DecodeError::Otlp(_)),
            ) => panic!("not the v1 decoder's refusals: {e:?}"),
        }
        assert!(
            body[data.len()..].iter().eq(garbage),
            "the decoder changed the padding after the body"
        );
    });
}

/// Rows for an accepted batch: may only fail on a cost too large to store.
fn build_rows(batch: &Batch<'_>) {
    static TABLE: OnceLock<PriceTable> = OnceLock::new();
    let table = TABLE.get_or_init(PriceTable::builtin);
    let principal = Principal::unlimited("org", "");
    let arena = bumpalo::Bump::new();
    let result = rows::build(
        batch,
        &principal,
        table,
        &mut Pricer::new(),
        1_700_000_000_000,
        BatchLimit::NONE,
        &arena,
    );
    match result {
        Ok(rows) => {
            assert_eq!(rows.len(), batch.span_count);
            // What the flush thread and the spool rely on: the layout checks out.
            let back = RowBatch::from_parts(rows.len(), *rows.bounds(), rows.data().to_vec())
                .expect("a built batch has a valid layout");
            assert_eq!(back, rows);
        }
        Err(e @ (rows::BuildError::TooLarge(_) | rows::BuildError::TooManySpans { .. })) => {
            panic!("no limit, yet too large: {e:?}")
        }
        Err(rows::BuildError::CostTooLarge(spans)) => {
            // The only other refusal: spans whose cost cannot be stored, which must be there.
            for &(t, s) in &spans {
                assert!(
                    t < batch.traces.len() && s < batch.traces[t].spans.len(),
                    "rows refused a span that is not in the batch: {t}.{s}"
                );
            }
            assert!(!spans.is_empty());
        }
    }
}

// ----- comparing values -----

/// A leaf of a batch: its path and its value, as text.
type Leaf = (String, String);

fn num(n: f64) -> String {
    // `-0` is stored as 0.
    format!("{:?}", n + 0.0)
}

/// Every leaf of a valid tree, paths by key and index, `version` left out (it is always
/// `"v1"`) and `"status": "ok"` too (the default, not kept). Metadata pairs are numbered so
/// their order counts.
fn leaves_of_tree(root: &J) -> Vec<Leaf> {
    let mut out = Vec::new();
    if let J::Obj(m) = root {
        for (k, val) in m {
            if k != "version" {
                walk(val, k, &mut out);
            }
        }
    }
    out
}

fn walk(j: &J, at: &str, out: &mut Vec<Leaf>) {
    match j {
        J::Obj(m) if at.ends_with("metadata") => {
            for (i, (k, val)) in m.iter().enumerate() {
                out.push((format!("{at}.#{i}.key"), format!("s:{k}")));
                walk(val, &format!("{at}.#{i}.value"), out);
            }
        }
        J::Obj(m) => {
            for (k, val) in m {
                if k == "status" && *val == J::Str("ok".into()) {
                    continue;
                }
                walk(val, &format!("{at}.{k}"), out);
            }
        }
        J::Arr(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{at}.{i}"), out);
            }
        }
        J::Str(s) => out.push((at.to_owned(), format!("s:{s}"))),
        J::Num(n) => out.push((at.to_owned(), num(*n))),
        J::Bool(b) => out.push((at.to_owned(), format!("b:{b}"))),
        J::Null => out.push((at.to_owned(), "null".to_owned())),
    }
}

/// The same leaves, read from the decoded batch field by field.
fn leaves_of_batch(batch: &Batch<'_>) -> Vec<Leaf> {
    let mut leaves = Leaves(Vec::new());
    for (ti, t) in batch.traces.iter().enumerate() {
        let at = format!("traces.{ti}");
        leaves.text(&at, "traceId", Some(t.trace_id));
        leaves.text(&at, "traceName", t.trace_name);
        leaves.text(&at, "agentName", t.agent_name);
        leaves.text(&at, "workflowName", t.workflow_name);
        leaves.text(&at, "workflowRunId", t.workflow_run_id);
        leaves.text(&at, "sessionId", t.session_id);
        leaves.metadata(&at, t.metadata);
        if let Some(c) = &t.customer {
            let at = format!("{at}.customer");
            leaves.text(&at, "id", Some(c.id));
            leaves.text(&at, "name", c.name);
            leaves.text(&at, "imageUrl", c.image_url);
        }
        for (si, sp) in t.spans.iter().enumerate() {
            let at = format!("{at}.spans.{si}");
            leaves.text(&at, "spanId", Some(sp.span_id));
            leaves.text(&at, "parentSpanId", sp.parent_span_id);
            leaves.text(&at, "spanType", Some(sp.span_type.as_str()));
            leaves.text(&at, "name", Some(sp.name));
            leaves.int(&at, "startTime", Some(sp.start_time));
            leaves.int(&at, "endTime", Some(sp.end_time));
            if sp.status.as_str() != "ok" {
                leaves.text(&at, "status", Some(sp.status.as_str()));
            }
            leaves.text(&at, "errorMessage", sp.error_message);
            leaves.text(&at, "provider", sp.provider);
            leaves.text(&at, "modelId", sp.model_id);
            if let Some(u) = &sp.usage {
                let at = format!("{at}.usage");
                let values = [
                    u.input_tokens,
                    u.output_tokens,
                    u.total_tokens,
                    u.reasoning_tokens,
                    u.cached_input_tokens,
                    u.cache_write_input_tokens,
                    u.image_count,
                    u.web_search_count,
                    u.request_count,
                ];
                for (k, v) in USAGE_KEYS.iter().zip(values) {
                    leaves.int(&at, k, v);
                }
            }
            leaves.float(&at, "ttftMs", sp.ttft_ms);
            for (k, items) in INT_ARRAYS.iter().zip([
                sp.chunk_offsets,
                sp.chunk_tokens,
                sp.reasoning_offsets,
                sp.reasoning_chunk_tokens,
            ]) {
                for (i, v) in items.iter().enumerate() {
                    leaves.int(&format!("{at}.{k}"), &i.to_string(), Some(*v));
                }
            }
            leaves.int(&at, "reasoningDurationMs", sp.reasoning_duration_ms);
            leaves.int(&at, "modelCallMs", sp.model_call_ms);
            leaves.text(&at, "input", sp.input);
            leaves.text(&at, "output", sp.output);
            leaves.text(&at, "toolCatalog", sp.tool_catalog);
            leaves.text(&at, "sources", sp.sources);
            leaves.text(&at, "systemFingerprint", sp.system_fingerprint);
            leaves.text(&at, "safetyMetadata", sp.safety_metadata);
            if let Some(r) = &sp.rate_limit {
                let at = format!("{at}.rateLimit");
                let values = [
                    r.requests_limit,
                    r.requests_remaining,
                    r.requests_reset_ms,
                    r.tokens_limit,
                    r.tokens_remaining,
                    r.tokens_reset_ms,
                ];
                for (k, v) in RATE_LIMIT_KEYS.iter().zip(values) {
                    leaves.int(&at, k, v);
                }
            }
            leaves.metadata(&at, sp.metadata);
            leaves.int(&at, "responseTimeMs", sp.response_time_ms);
            for (k, v) in TPS.iter().zip([
                sp.effective_output_tps,
                sp.effective_total_tps,
                sp.output_tps,
                sp.input_tps,
            ]) {
                leaves.float(&at, k, v);
            }
            if let Some(j) = &sp.chunk_jitter {
                let at = format!("{at}.chunkJitter");
                let values = [j.min, j.p10, j.median, j.avg, j.p90, j.max];
                for (k, v) in JITTER_KEYS.iter().zip(values) {
                    leaves.float(&at, k, Some(v));
                }
            }
        }
    }
    leaves.0
}

struct Leaves(Vec<Leaf>);

impl Leaves {
    fn text(&mut self, at: &str, key: &str, v: Option<&str>) {
        if let Some(v) = v {
            self.0.push((format!("{at}.{key}"), format!("s:{v}")));
        }
    }

    fn int(&mut self, at: &str, key: &str, v: Option<u64>) {
        if let Some(v) = v {
            self.0.push((format!("{at}.{key}"), num(v as f64)));
        }
    }

    fn float(&mut self, at: &str, key: &str, v: Option<f64>) {
        if let Some(v) = v {
            self.0.push((format!("{at}.{key}"), num(v)));
        }
    }

    fn metadata(&mut self, at: &str, pairs: &[(&str, &str)]) {
        for (i, (k, v)) in pairs.iter().enumerate() {
            self.0
                .push((format!("{at}.metadata.#{i}.key"), format!("s:{k}")));
            self.0
                .push((format!("{at}.metadata.#{i}.value"), format!("s:{v}")));
        }
    }
}

#[cfg(test)]
use crate::perf_fixtures as fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    /// The property holds on the fuzz seeds and on the tricky bodies of the decoder's tests.
    #[test]
    fn oracle_agrees_on_seeds() {
        let mut bodies: Vec<Vec<u8>> = vec![
            fixtures::small(),
            fixtures::batch(7, 3, 4, 40),
            b"{}".to_vec(),
            b"[]".to_vec(),
            b"\xEF\xBB\xBF{\"version\":\"v1\"}".to_vec(),
            b"{\"version\":\"v1\",\"traces\":[1e400]}".to_vec(),
            b"{\"a\":\"\xff\"}".to_vec(),
            "[".repeat(2000).into_bytes(),
        ];
        let span = |extra: &str| {
            format!(
                r#"{{"version":"v1","traces":[{{"traceId":"t","traceName":"n","metadata":{{"a":"1","\u00e9":"2"}},"spans":[{{"spanId":"s","spanType":"llm","name":"x","startTime":1,"endTime":2{extra}}}]}}]}}"#
            )
            .into_bytes()
        };
        for extra in [
            "",
            r#","status":"ok""#,
            r#","status":"aborted","errorMessage":"\uD83D \u0000 \uDE00\uD83D\uDE00""#,
            r#","startTime":3"#,
            r#","usage":{"inputTokens":1e3,"outputTokens":-0,"requestCount":3.0}"#,
            r#","usage":{"inputTokens":9007199254740992}"#,
            r#","ttftMs":18446744073709551616,"inputTps":1e-400"#,
            r#","ttftMs":1e400"#,
            r#","chunkJitter":{"min":0,"p10":1,"median":2,"avg":3.5,"p90":4,"max":5}"#,
            r#","chunkJitter":{"min":0}"#,
            r#","rateLimit":{"tokensLimit":10,"tokensLimit":10}"#,
            r#","metadata":{"k":"v","k":"w"}"#,
            r#","chunkOffsets":[0,1,2.0,1e2]"#,
            r#","spanType":"llm ""#,
            r#","provider":"openai.chat","modelId":"gpt-4o","usage":{"inputTokens":9007199254740991,"outputTokens":9007199254740991}"#,
            r#","x":[[[[]]]]"#,
        ] {
            bodies.push(span(extra));
        }
        for body in bodies {
            fuzz_decode(&body);
        }
    }
}
