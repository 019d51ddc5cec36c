//! Decoded, validated spans -> one priced storage `Row` each, packed into a `RowBatch`.
//!
//! Strings shared by many rows (organisation, project, trace-level fields, trace metadata) are
//! copied into the batch once and referenced by every row that needs them.

use crate::auth::Principal;
use crate::ingest::validate::{Issue, PathSeg};
use crate::ingest::wire::{Batch, Span, Trace};
use crate::pricing::{PriceError, PriceTable, Pricer};
use crate::row::{CostColumns, Row, RowBatch, Run, Text};

/// Copies an optional string into the batch; absent is the empty string.
#[inline]
fn opt(out: &mut RowBatch, s: Option<&str>) -> Text {
    match s {
        Some(s) if !s.is_empty() => out.push_str(s),
        _ => Text::default(),
    }
}

/// Trace-level values every span row of the trace repeats.
struct TraceText {
    trace_id: Text,
    trace_name: Text,
    agent_name: Text,
    workflow_name: Text,
    workflow_run_id: Text,
    session_id: Text,
    customer_id: Text,
    customer_name: Text,
    customer_image_url: Text,
    /// The trace's metadata in `out.meta`, pushed once.
    metadata: Run,
}

fn trace_text(out: &mut RowBatch, t: &Trace<'_>) -> TraceText {
    let metadata_start = out.meta.len() as u32;
    for (k, v) in t.metadata {
        let k = out.push_str(k);
        let v = out.push_str(v);
        out.meta.push((k, v));
    }
    TraceText {
        trace_id: out.push_str(t.trace_id),
        trace_name: opt(out, t.trace_name),
        agent_name: opt(out, t.agent_name),
        workflow_name: opt(out, t.workflow_name),
        workflow_run_id: opt(out, t.workflow_run_id),
        session_id: opt(out, t.session_id),
        customer_id: opt(out, t.customer.map(|c| c.id)),
        customer_name: opt(out, t.customer.and_then(|c| c.name)),
        customer_image_url: opt(out, t.customer.and_then(|c| c.image_url)),
        metadata: Run {
            start: metadata_start,
            len: t.metadata.len() as u32,
        },
    }
}

/// Merges trace and span metadata into `out.meta`, the span winning on equal keys. Keys keep
/// the trace's order, then the span's own new keys follow in its order.
fn merged_metadata(out: &mut RowBatch, trace: Run, span: &Span<'_>) -> Run {
    if span.metadata.is_empty() {
        // The trace's run is shared as is: no copy at all.
        return trace;
    }
    let start = out.meta.len() as u32;
    for i in trace.range() {
        let (k, v) = out.meta[i];
        let key = out.str(k);
        let value = match span.metadata.iter().find(|(sk, _)| *sk == key) {
            Some((_, sv)) => out.push_str(sv),
            None => v,
        };
        out.meta.push((k, value));
    }
    for (sk, sv) in span.metadata {
        let in_trace = trace.range().any(|i| out.str(out.meta[i].0) == *sk);
        if !in_trace {
            let k = out.push_str(sk);
            let v = out.push_str(sv);
            out.meta.push((k, v));
        }
    }
    Run {
        start,
        len: out.meta.len() as u32 - start,
    }
}

/// Entries `build` pushes into `RowBatch::meta` (at most) and `RowBatch::ints` (exactly).
fn side_lengths(batch: &Batch<'_>) -> (usize, usize) {
    let (mut meta, mut ints) = (0, 0);
    for trace in batch.traces {
        meta += trace.metadata.len();
        for span in trace.spans {
            if !span.metadata.is_empty() {
                meta += trace.metadata.len() + span.metadata.len();
            }
            ints += span.chunk_offsets.len()
                + span.chunk_tokens.len()
                + span.reasoning_offsets.len()
                + span.reasoning_chunk_tokens.len();
        }
    }
    (meta, ints)
}

/// Builds the rows of a validated batch. Pricing happens here, against one table for the whole
/// batch; a usage too large to price in `Decimal(18, 10)` is a schema issue of that span.
pub fn build(
    batch: &Batch<'_>,
    principal: &Principal,
    table: &PriceTable,
    pricer: &mut Pricer,
    now_s: u32,
    body_len: usize,
    out: &mut RowBatch,
) -> Result<(), Vec<Issue>> {
    // Every vector is sized once up front, so none grows (reallocates) per span.
    out.rows.reserve_exact(batch.span_count);
    // Row strings are a subset of the body's, plus org/project once.
    out.text
        .reserve(body_len + principal.org_id.len() + principal.project_id.len());
    let (meta, ints) = side_lengths(batch);
    out.meta.reserve_exact(meta);
    out.ints.reserve_exact(ints);
    let org_id = out.push_str(&principal.org_id);
    let project_id = out.push_str(&principal.project_id);
    let mut issues = Vec::new();

    for (ti, trace) in batch.traces.iter().enumerate() {
        let tt = trace_text(out, trace);
        for (si, span) in trace.spans.iter().enumerate() {
            let priced = if span.span_type.is_priced() {
                match pricer.price(table, span.provider, span.model_id, span.usage.as_ref()) {
                    Ok(p) => p,
                    Err(PriceError::Overflow) => {
                        issues.push(overflow_issue(ti, si));
                        continue;
                    }
                }
            } else {
                None
            };
            let usage = span.usage.unwrap_or_default();
            let (costs, priced_model_id, pricing_source, priced_at) = match &priced {
                Some(p) => (p.costs, opt(out, Some(p.model_id)), p.source, Some(now_s)),
                None => (CostColumns::default(), Text::default(), "", None),
            };
            let request_count = match (usage.request_count, priced.is_some()) {
                (Some(n), _) => n,
                (None, true) => 1,
                (None, false) => 0,
            };
            let rl = span.rate_limit.unwrap_or_default();
            let jitter = span.chunk_jitter;
            let metadata = merged_metadata(out, tt.metadata, span);
            let row = Row {
                org_id,
                project_id,
                trace_id: tt.trace_id,
                span_id: out.push_str(span.span_id),
                parent_span_id: opt(out, span.parent_span_id),
                span_type: span.span_type.as_str(),
                name: opt(out, Some(span.name)),
                start_time_ms: span.start_time,
                end_time_ms: span.end_time,
                duration_ms: span.end_time.saturating_sub(span.start_time),
                status: span.status.as_str(),
                error_message: opt(out, span.error_message),
                provider: opt(out, span.provider),
                model_id: opt(out, span.model_id),
                priced_model_id,
                input_tokens: usage.input_tokens.unwrap_or(0),
                output_tokens: usage.output_tokens.unwrap_or(0),
                total_tokens: usage.total_tokens.unwrap_or(0),
                reasoning_tokens: usage.reasoning_tokens.unwrap_or(0),
                cached_input_tokens: usage.cached_input_tokens.unwrap_or(0),
                cache_write_input_tokens: usage.cache_write_input_tokens.unwrap_or(0),
                image_count: usage.image_count.unwrap_or(0),
                web_search_count: usage.web_search_count.unwrap_or(0),
                request_count,
                ttft_ms: span.ttft_ms,
                reasoning_duration_ms: span.reasoning_duration_ms,
                model_call_ms: span.model_call_ms,
                costs,
                pricing_source,
                priced_at,
                trace_name: tt.trace_name,
                agent_name: tt.agent_name,
                workflow_name: tt.workflow_name,
                workflow_run_id: tt.workflow_run_id,
                session_id: tt.session_id,
                metadata,
                input: opt(out, span.input),
                output: opt(out, span.output),
                tool_catalog: opt(out, span.tool_catalog),
                system_fingerprint: opt(out, span.system_fingerprint),
                safety_metadata: opt(out, span.safety_metadata),
                sources: opt(out, span.sources),
                rate_limit_requests_limit: rl.requests_limit,
                rate_limit_requests_remaining: rl.requests_remaining,
                rate_limit_requests_reset_ms: rl.requests_reset_ms,
                rate_limit_tokens_limit: rl.tokens_limit,
                rate_limit_tokens_remaining: rl.tokens_remaining,
                rate_limit_tokens_reset_ms: rl.tokens_reset_ms,
                chunk_offsets: out.push_ints(span.chunk_offsets),
                chunk_tokens: out.push_ints(span.chunk_tokens),
                reasoning_offsets: out.push_ints(span.reasoning_offsets),
                reasoning_chunk_tokens: out.push_ints(span.reasoning_chunk_tokens),
                customer_id: tt.customer_id,
                customer_name: tt.customer_name,
                customer_image_url: tt.customer_image_url,
                response_time_ms: span.response_time_ms,
                effective_output_tps: span.effective_output_tps,
                effective_total_tps: span.effective_total_tps,
                output_tps: span.output_tps,
                input_tps: span.input_tps,
                chunk_jitter_min: jitter.map(|j| j.min),
                chunk_jitter_p10: jitter.map(|j| j.p10),
                chunk_jitter_median: jitter.map(|j| j.median),
                chunk_jitter_avg: jitter.map(|j| j.avg),
                chunk_jitter_p90: jitter.map(|j| j.p90),
                chunk_jitter_max: jitter.map(|j| j.max),
                ingested_at: now_s,
            };
            out.rows.push(row);
        }
    }
    if issues.is_empty() {
        Ok(())
    } else {
        issues.truncate(100);
        Err(issues)
    }
}

#[cold]
fn overflow_issue(trace: usize, span: usize) -> Issue {
    Issue {
        path: vec![
            PathSeg::Key("traces".into()),
            PathSeg::Index(trace),
            PathSeg::Key("spans".into()),
            PathSeg::Index(span),
            PathSeg::Key("usage".into()),
        ],
        code: "too_big",
        message: "usage counts give a cost above 99999999.9999999999 USD, which cannot be stored"
            .into(),
    }
}
