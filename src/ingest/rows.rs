//! Decoded, validated spans -> one priced storage row each, written into a `RowBatch` in the
//! `spans` columns' native layout (see `row/`).
//!
//! Two passes over the spans. The first prices each span (a span whose cost does not fit the
//! cost columns refuses the batch, naming every such span: each front end decides what that
//! means, `BuildError::CostTooLarge`), merges its metadata with its trace's, and measures its row; the
//! second, `RowBatch::write`, writes the rows into a buffer allocated once at the measured
//! size. No row is kept in between, only the prices and merged metadata (in the request's
//! arena): the first pass makes each span's `RowRef` to measure it, and the second never makes
//! one whole. It hands the writer a few references per span (`SpanRow`) and the writer takes
//! one column's values of 32 spans at a time from them (`row`, inlined, computes just that
//! field). Made whole, 32 rows were 35 KB of stores and loads, more than the L1 cache holds.
//!
//! Both passes go through the spans in the `spans` table's sorting-key order (trace id, start
//! time, span id: the organisation is the batch's), in which the rows are written, so that the
//! flush thread can hand ClickHouse blocks it need not sort (`sink/clickhouse/order.rs`), and
//! the first pass notes where each trace's rows start (the batch's group index, by which the
//! flush thread cuts it). Clients send a trace's spans together and mostly in start order, so
//! this is usually a check and a sort of the traces by id.

use std::mem::MaybeUninit;

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;

use crate::auth::Principal;
use crate::ingest::v1::{Issue, PathSeg, MAX_ISSUES};
use crate::ingest::wire::{Batch, Metadata, Span, Trace};
use crate::ingest::BatchLimit;
use crate::pricing::{PriceError, PriceTable, Priced, Pricer};
use crate::row::{
    CostColumns, Measure, MetaPairs, RowBatch, RowRef, RowSource, StoredUsage, TooLarge,
};

/// Why a validated batch got no rows.
#[derive(Debug)]
pub enum BuildError {
    /// Spans whose cost does not fit `Decimal(18, 10)`, as (index in `batch.traces`, index
    /// in its `spans`), all of them, sorted. v1 refuses the batch with an issue per span
    /// (`cost_issues`); OTLP refuses those spans alone and builds the rest again.
    CostTooLarge(Vec<(usize, usize)>),
    /// The rows would take more bytes of the write buffer than one batch may.
    TooLarge(TooLarge),
    /// The batch has more spans than one batch may (`BatchLimit::rows`).
    TooManySpans { spans: u64, limit: u64 },
}

/// Builds the rows of a validated batch, priced against one table for the whole batch and
/// stamped `now_ms` (`ingested_at`, `priced_at`, `version`). `limit` is the most rows (checked
/// first, before anything is done) and bytes the rows may take; `arena` holds the prices and
/// merged metadata between the passes.
pub fn build(
    batch: &Batch<'_>,
    principal: &Principal,
    table: &PriceTable,
    pricer: &mut Pricer,
    now_ms: u64,
    limit: BatchLimit,
    arena: &Bump,
) -> Result<RowBatch, BuildError> {
    let spans = batch.span_count as u64;
    if spans > limit.rows {
        return Err(BuildError::TooManySpans {
            spans,
            limit: limit.rows,
        });
    }
    let order = key_order(batch, arena);
    // Both passes go through the spans in the order the rows are written, so that the first
    // (price, merge metadata, measure) also finds where each trace's rows will start
    // (`Measure::group_start`): the flush thread cuts a batch at its traces by this index
    // instead of walking its strings. `priced` and `metadata` are in that order.
    let mut priced = BVec::with_capacity_in(batch.span_count, arena);
    let mut metadata = BVec::with_capacity_in(batch.span_count, arena);
    let mut groups = BVec::new_in(arena);
    let mut overflows = Vec::new();
    let mut measure = Measure::default();
    // The last span's trace: its index in the batch, and its id (two entries of a batch may
    // be the same trace; the id is compared only when the entry changes).
    let mut last_trace: Option<(usize, &str)> = None;
    let mut visit = |ti: usize, si: usize| {
        let trace = &batch.traces[ti];
        let span = &trace.spans[si];
        let same = last_trace.is_some_and(|(lt, id)| lt == ti || id == trace.trace_id);
        if !same {
            groups.push(measure.group_start());
        }
        last_trace = Some((ti, trace.trace_id));
        let meta = merge_metadata(trace.metadata, span.metadata, arena);
        let p = match pricer.price_span(table, span) {
            Ok(p) => p,
            Err(PriceError::Overflow) => {
                overflows.push((ti, si));
                None
            }
        };
        measure.add(&row(principal, trace, span, p.as_ref(), meta, now_ms));
        metadata.push(meta);
        priced.push(p);
    };
    match &order {
        Some(order) => {
            for a in order.iter() {
                visit(a.trace as usize, a.span as usize);
            }
        }
        None => {
            for (ti, trace) in batch.traces.iter().enumerate() {
                for si in 0..trace.spans.len() {
                    visit(ti, si);
                }
            }
        }
    }
    if !overflows.is_empty() {
        overflows.sort_unstable();
        return Err(BuildError::CostTooLarge(overflows));
    }
    let mut spans = Spans {
        batch,
        principal,
        priced: &priced,
        metadata: &metadata,
        order: order.as_deref(),
        now_ms,
        trace: 0,
        span: 0,
        at: 0,
    };
    RowBatch::write_grouped(&measure, &groups, limit.bytes, &mut spans)
        .map_err(BuildError::TooLarge)
}

/// A row's place in the `spans` table's sorting key within a batch: trace id, start time,
/// span id.
type SortKey<'a> = (&'a [u8], (u64, &'a [u8]));

/// A span's place in the sorting key after its trace id: start time, then span id.
#[inline]
fn span_key<'a>(s: &Span<'a>) -> (u64, &'a [u8]) {
    (s.start_time, s.span_id.as_bytes())
}

/// A span of the batch: its trace, its place in the trace, its place in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct At {
    trace: u32,
    span: u32,
    index: u32,
}

/// The order the rows are written in: the `spans` table's sorting key within the batch
/// (trace id, then start time, then span id), ties in batch order. `None` when the spans are
/// in that order already (one pass of comparisons); else the traces are sorted by id (stably),
/// and only the spans of a trace id that are out of order among themselves are sorted.
fn key_order<'b>(batch: &Batch<'_>, arena: &'b Bump) -> Option<BVec<'b, At>> {
    let traces = batch.traces;
    let mut previous: Option<SortKey<'_>> = None;
    let mut sorted = true;
    'check: for t in traces {
        for s in t.spans {
            let key = (t.trace_id.as_bytes(), span_key(s));
            if previous.is_some_and(|p| p > key) {
                sorted = false;
                break 'check;
            }
            previous = Some(key);
        }
    }
    if sorted {
        return None;
    }
    let mut firsts = BVec::with_capacity_in(traces.len(), arena);
    let mut index = 0u32;
    for t in traces {
        firsts.push(index);
        index += t.spans.len() as u32;
    }
    let mut by_id = BVec::from_iter_in(0..traces.len() as u32, arena);
    by_id.sort_by(|&a, &b| traces[a as usize].trace_id.cmp(traces[b as usize].trace_id));
    let mut order = BVec::with_capacity_in(batch.span_count, arena);
    let mut i = 0;
    while i < by_id.len() {
        // The traces of one id (a client may send a trace id twice in a batch).
        let id = traces[by_id[i] as usize].trace_id;
        let from = order.len();
        while i < by_id.len() && traces[by_id[i] as usize].trace_id == id {
            let t = by_id[i];
            for (s, _) in traces[t as usize].spans.iter().enumerate() {
                order.push(At {
                    trace: t,
                    span: s as u32,
                    index: firsts[t as usize] + s as u32,
                });
            }
            i += 1;
        }
        let key = |a: &At| span_key(&traces[a.trace as usize].spans[a.span as usize]);
        let run = &mut order[from..];
        if run.windows(2).any(|w| key(&w[0]) > key(&w[1])) {
            run.sort_by(|a, b| key(a).cmp(&key(b)).then(a.index.cmp(&b.index)));
        }
    }
    Some(order)
}

/// The rows of a decoded batch, made from its spans for the write pass.
struct Spans<'s, 'a, 't> {
    batch: &'s Batch<'a>,
    principal: &'s Principal,
    /// One per span, in the order the rows are written.
    priced: &'s [Option<Priced<'t>>],
    /// One per span, in the order the rows are written.
    metadata: &'s [Metadata<'s>],
    /// The order to write the rows in, when it is not the batch's (`key_order`).
    order: Option<&'s [At]>,
    now_ms: u64,
    /// The next row: trace, span in it, span in the batch (or, with `order`, the next of it).
    trace: usize,
    span: usize,
    at: usize,
}

/// What a span's row is made from (`row`), a few references instead of the row's 1 KB.
#[derive(Clone, Copy)]
struct SpanRow<'s, 'a, 't> {
    trace: &'s Trace<'a>,
    span: &'s Span<'a>,
    priced: Option<&'s Priced<'t>>,
    metadata: Metadata<'s>,
}

impl<'s, 'a: 's, 't: 's> Spans<'s, 'a, 't> {
    /// The item of a span, the `at`-th in the order the rows are written.
    #[inline(always)]
    fn item(&self, trace: &'s Trace<'a>, span: &'s Span<'a>, at: usize) -> SpanRow<'s, 'a, 't> {
        SpanRow {
            trace,
            span,
            priced: self.priced[at].as_ref(),
            metadata: self.metadata[at],
        }
    }
}

impl<'s, 'a: 's, 't: 's> RowSource<'s> for Spans<'s, 'a, 't> {
    type Item = SpanRow<'s, 'a, 't>;

    #[inline(always)]
    fn row(&self, r: &SpanRow<'s, 'a, 't>) -> RowRef<'s> {
        row(
            self.principal,
            r.trace,
            r.span,
            r.priced,
            r.metadata,
            self.now_ms,
        )
    }

    fn fill(&mut self, slots: &mut [MaybeUninit<SpanRow<'s, 'a, 't>>]) -> usize {
        let mut n = 0;
        if let Some(order) = self.order {
            let next = &order[self.at.min(order.len())..];
            for (i, (slot, a)) in (self.at..).zip(slots.iter_mut().zip(next)) {
                let trace = &self.batch.traces[a.trace as usize];
                slot.write(self.item(trace, &trace.spans[a.span as usize], i));
                n += 1;
            }
            self.at += n;
            return n;
        }
        while n < slots.len() {
            let Some(trace) = self.batch.traces.get(self.trace) else {
                break;
            };
            let Some(span) = trace.spans.get(self.span) else {
                self.trace += 1;
                self.span = 0;
                continue;
            };
            slots[n].write(self.item(trace, span, self.at));
            self.span += 1;
            self.at += 1;
            n += 1;
        }
        n
    }
}

/// One span's row.
#[inline(always)]
fn row<'a>(
    principal: &'a Principal,
    trace: &Trace<'a>,
    span: &Span<'a>,
    priced: Option<&Priced<'a>>,
    metadata: Metadata<'a>,
    now_ms: u64,
) -> RowRef<'a> {
    let now_s = (now_ms / 1000) as u32;
    let usage = span.usage.unwrap_or_default();
    let (costs, priced_model_id, pricing_source, priced_at) = match (priced, client_total(span)) {
        (Some(p), _) => (p.costs, p.model_id, p.source, Some(now_s)),
        // Our table does not know the model: the client's own figure is the best there is.
        (None, Some(total)) => {
            let costs = CostColumns {
                total: Some(total),
                ..CostColumns::default()
            };
            (costs, "", CLIENT_SOURCE, Some(now_s))
        }
        (None, None) => (CostColumns::default(), "", "", None),
    };
    let rl = span.rate_limit.unwrap_or_default();
    let jitter = span.chunk_jitter;
    let customer = trace.customer;
    RowRef {
        org_id: &principal.org_id,
        project_id: &principal.project_id,
        trace_id: trace.trace_id,
        span_id: span.span_id,
        parent_span_id: span.parent_span_id.unwrap_or(""),
        span_type: span.span_type.as_str(),
        name: span.name,
        start_time_ms: span.start_time,
        end_time_ms: span.end_time,
        duration_ms: span.end_time.saturating_sub(span.start_time),
        status: span.status.as_str(),
        error_message: span.error_message.unwrap_or(""),
        provider: span.provider.unwrap_or(""),
        model_id: span.model_id.unwrap_or(""),
        priced_model_id,
        usage: StoredUsage::new(&usage, priced.is_some()),
        ttft_ms: span.ttft_ms,
        reasoning_duration_ms: span.reasoning_duration_ms,
        model_call_ms: span.model_call_ms,
        costs,
        pricing_source,
        priced_at,
        trace_name: trace.trace_name.unwrap_or(""),
        agent_name: trace.agent_name.unwrap_or(""),
        workflow_name: trace.workflow_name.unwrap_or(""),
        workflow_run_id: trace.workflow_run_id.unwrap_or(""),
        session_id: trace.session_id.unwrap_or(""),
        metadata: MetaPairs {
            first: metadata,
            then: span.shared_metadata,
        },
        input: span.input.unwrap_or(""),
        output: span.output.unwrap_or(""),
        tool_catalog: span.tool_catalog.unwrap_or(""),
        system_fingerprint: span.system_fingerprint.unwrap_or(""),
        safety_metadata: span.safety_metadata.unwrap_or(""),
        sources: span.sources.unwrap_or(""),
        rate_limit_requests_limit: rl.requests_limit,
        rate_limit_requests_remaining: rl.requests_remaining,
        rate_limit_requests_reset_ms: rl.requests_reset_ms,
        rate_limit_tokens_limit: rl.tokens_limit,
        rate_limit_tokens_remaining: rl.tokens_remaining,
        rate_limit_tokens_reset_ms: rl.tokens_reset_ms,
        chunk_offsets: span.chunk_offsets,
        chunk_tokens: span.chunk_tokens,
        reasoning_offsets: span.reasoning_offsets,
        reasoning_chunk_tokens: span.reasoning_chunk_tokens,
        customer_id: customer.map_or("", |c| c.id),
        customer_name: customer.and_then(|c| c.name).unwrap_or(""),
        customer_image_url: customer.and_then(|c| c.image_url).unwrap_or(""),
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
        version: now_ms,
        reported_cost: span.reported_cost,
    }
}

/// `pricing_source` of a row whose total is the cost the client reported.
pub const CLIENT_SOURCE: &str = "client";

/// The client-reported cost that stands as a span's total when we cannot price it: only for
/// spans that are model calls themselves (an aggregate on a parent span would count twice).
#[inline]
fn client_total(span: &Span<'_>) -> Option<crate::row::Money> {
    span.reported_cost.filter(|_| span.span_type.is_priced())
}

/// A span's metadata: its trace's, with its own on top. The span's value wins on an equal key;
/// keys keep the trace's order, then the span's new keys follow in its order. Only a span with
/// metadata of its own costs a copy (in `arena`); the others share their trace's.
///
/// Keys are unique within each map (the v1 schema refuses a repeated key, the OTLP mapper keeps
/// one of each), so each of the span's keys replaces at most one of the trace's and is looked
/// for among the trace's keys only: one comparison per pair of keys, not two.
pub fn merge_metadata<'a>(
    trace: Metadata<'a>,
    span: Metadata<'a>,
    arena: &'a Bump,
) -> Metadata<'a> {
    if span.is_empty() {
        return trace;
    }
    if trace.is_empty() {
        return span;
    }
    let mut merged = BVec::with_capacity_in(trace.len() + span.len(), arena);
    merged.extend_from_slice(trace);
    for &(sk, sv) in span {
        match trace.iter().position(|(k, _)| same_key(k, sk)) {
            Some(i) => merged[i].1 = sv,
            None => merged.push((sk, sv)),
        }
    }
    merged.into_bump_slice()
}

/// `a == b`, deciding most unequal keys by length and first byte without a `memcmp` call.
#[inline]
fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.first() == b.first() && a == b
}

#[cold]
/// The v1 refusal of spans whose cost cannot be stored (`BuildError::CostTooLarge`): a
/// `too_big` issue at each one's `usage`, at most `MAX_ISSUES`.
pub fn cost_issues(spans: &[(usize, usize)]) -> Vec<Issue> {
    spans
        .iter()
        .take(MAX_ISSUES)
        .map(|&(t, s)| overflow_issue(t, s))
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::wire::{SpanType, Usage};
    use crate::row::{col, Value};

    /// (total_cost, pricing_source, reported_cost) of each row of one trace of `spans`.
    fn costs(spans: &[Span<'_>]) -> Vec<(Value<'static>, String, Value<'static>)> {
        let arena = Bump::new();
        let traces = [Trace {
            trace_id: "t",
            spans,
            ..Trace::default()
        }];
        let batch = Batch {
            traces: &traces,
            span_count: spans.len(),
        };
        let principal = Principal::unlimited("o", "p");
        let table = PriceTable::builtin();
        let rows = build(
            &batch,
            &principal,
            &table,
            &mut Pricer::new(),
            1,
            BatchLimit::NONE,
            &arena,
        )
        .expect("rows");
        let mut reader = rows.reader(0..rows.len());
        let mut out = Vec::new();
        while let Some(r) = reader.next_row() {
            let source = match &r[col::pricing_source] {
                Value::Str(s) => s.to_string(),
                v => panic!("{v:?}"),
            };
            let owned = |v: &Value<'_>| match v {
                Value::I64(n) => Value::I64(*n),
                Value::Null => Value::Null,
                v => panic!("{v:?}"),
            };
            out.push((
                owned(&r[col::total_cost]),
                source,
                owned(&r[col::reported_cost]),
            ));
        }
        out
    }

    #[test]
    fn a_client_reported_cost_stands_only_for_unknown_models_of_model_calls() {
        let usage = Usage {
            input_tokens: Some(1_000_000),
            ..Usage::default()
        };
        let span = |span_type, model: &'static str, reported| Span {
            span_id: "s",
            span_type,
            model_id: Some(model),
            provider: Some("openai"),
            usage: Some(usage),
            reported_cost: reported,
            ..Span::default()
        };
        let got = costs(&[
            // Unknown model: the client's figure, marked as such.
            span(SpanType::Llm, "in-house", Some(123)),
            span(SpanType::Embedding, "in-house", Some(7)),
            // Known model: our price wins; the client's stays in its own column.
            span(SpanType::Llm, "gpt-4o", Some(123)),
            // Not a model call (aggregate usage on a parent): never a total.
            span(SpanType::Agent, "in-house", Some(123)),
            span(SpanType::Llm, "in-house", None),
        ]);
        let gpt_4o_million_input = 2_5000000000; // $2.50
        assert_eq!(
            got,
            vec![
                (Value::I64(123), "client".into(), Value::I64(123)),
                (Value::I64(7), "client".into(), Value::I64(7)),
                (
                    Value::I64(gpt_4o_million_input),
                    "builtin".into(),
                    Value::I64(123)
                ),
                (Value::Null, "".into(), Value::I64(123)),
                (Value::Null, "".into(), Value::Null),
            ]
        );
    }

    #[test]
    fn merged_metadata_follows_the_trace_order_and_the_span_wins() {
        let arena = Bump::new();
        let trace: Metadata<'_> = &[("a", "1"), ("b", "2")];
        let span: Metadata<'_> = &[("c", "3"), ("a", "span")];
        assert_eq!(
            merge_metadata(trace, span, &arena),
            [("a", "span"), ("b", "2"), ("c", "3")]
        );
        assert_eq!(merge_metadata(trace, &[], &arena), trace);
        assert_eq!(merge_metadata(&[], span, &arena), span);
    }

    /// Rows come out in key order (trace id, start, span id) whatever order the batch had,
    /// and where each trace's rows start is indexed: its row, and its offset in every string
    /// region, as cutting the batch there finds them.
    #[test]
    fn rows_are_in_key_order_and_each_trace_start_is_indexed() {
        use crate::row::{walked_index, walked_region, WALKED};
        let span = |id: &'static str, start: u64, meta: Metadata<'static>| Span {
            span_id: id,
            name: id,
            start_time: start,
            end_time: start + 1,
            metadata: meta,
            ..Span::default()
        };
        let (t3, t1a, t2, t1b) = (
            [
                span("c", 30, &[("k", "v")]),
                span("a", 10, &[]),
                span("b", 20, &[]),
            ],
            [span("x", 5, &[("long key", "a longer value")])],
            [span("y", 1, &[])],
            [span("w", 2, &[("k", "v"), ("j", "w")])],
        );
        let traces = [
            Trace {
                trace_id: "t3",
                spans: &t3,
                ..Trace::default()
            },
            Trace {
                trace_id: "t1",
                spans: &t1a,
                ..Trace::default()
            },
            Trace {
                trace_id: "t2",
                spans: &t2,
                ..Trace::default()
            },
            Trace {
                trace_id: "t1",
                spans: &t1b,
                ..Trace::default()
            },
        ];
        let arena = Bump::new();
        let built = |traces: &[Trace<'_>]| {
            let batch = Batch {
                traces,
                span_count: traces.iter().map(|t| t.spans.len()).sum(),
            };
            let principal = Principal::unlimited("o", "p");
            build(
                &batch,
                &principal,
                &PriceTable::builtin(),
                &mut Pricer::new(),
                1,
                BatchLimit::NONE,
                &arena,
            )
            .expect("rows")
        };
        let rows = built(&traces);
        let keys: Vec<(String, u64, String)> = (0..rows.len())
            .map(|i| {
                let mut r = rows.reader(i..i + 1);
                let v = r.next_row().expect("a row");
                let text = |c: usize| match &v[c] {
                    Value::Str(s) => s.to_string(),
                    v => panic!("{v:?}"),
                };
                let start = match v[col::start_time_ms] {
                    Value::U64(n) => n,
                    ref v => panic!("{v:?}"),
                };
                (text(col::trace_id), start, text(col::span_id))
            })
            .collect();
        let expected = [
            ("t1", 2, "w"),
            ("t1", 5, "x"),
            ("t2", 1, "y"),
            ("t3", 10, "a"),
            ("t3", 20, "b"),
            ("t3", 30, "c"),
        ];
        let expected: Vec<(String, u64, String)> = expected
            .iter()
            .map(|&(t, s, id)| (t.into(), s, id.into()))
            .collect();
        assert_eq!(keys, expected);
        assert_eq!(rows.groups(), 3);
        assert_eq!(
            (0..=3).map(|g| rows.group_row(g)).collect::<Vec<_>>(),
            [0, 2, 3, 6]
        );
        for g in 0..=rows.groups() {
            let cut = rows.cut(rows.group_row(g));
            for (w, &c) in WALKED.iter().enumerate() {
                assert_eq!(
                    rows.group_at(g, w),
                    cut[walked_region(c)],
                    "group {g}, column {c}"
                );
                assert_eq!(walked_index(c), w);
            }
        }
        // Runs of whole traces are found in the index; others are not.
        assert_eq!(rows.groups_of(&(2..6)), Some((1, 3)));
        assert_eq!(rows.groups_of(&(0..6)), Some((0, 3)));
        assert_eq!(rows.groups_of(&(1..3)), None);
        // One trace: nothing to index.
        assert_eq!(built(&traces[..1]).groups(), 0);
    }

    /// A batch of more spans than `BatchLimit::rows` is refused before anything is priced or
    /// measured, naming both counts; one at the limit is built. The row limit is checked first:
    /// a batch past both limits is refused for its spans, the cheaper and clearer reason.
    #[test]
    fn a_batch_over_the_row_limit_is_refused_and_one_at_it_is_built() {
        let spans: Vec<Span<'_>> = (0..5)
            .map(|_| Span {
                span_id: "s",
                ..Span::default()
            })
            .collect();
        let traces = [Trace {
            trace_id: "t",
            spans: &spans,
            ..Trace::default()
        }];
        let batch = Batch {
            traces: &traces,
            span_count: spans.len(),
        };
        let arena = Bump::new();
        let build_within = |rows: u64, bytes: u64| {
            build(
                &batch,
                &Principal::unlimited("o", "p"),
                &PriceTable::builtin(),
                &mut Pricer::new(),
                1,
                BatchLimit { rows, bytes },
                &arena,
            )
        };
        let cases: [(u64, u64, Result<usize, &str>); 5] = [
            (5, u64::MAX, Ok(5)),
            (4, u64::MAX, Err("TooManySpans { spans: 5, limit: 4 }")),
            (0, u64::MAX, Err("TooManySpans { spans: 5, limit: 0 }")),
            (u64::MAX, 10, Err("TooLarge")),
            (4, 10, Err("TooManySpans { spans: 5, limit: 4 }")),
        ];
        for (rows, bytes, want) in cases {
            let got = build_within(rows, bytes)
                .map(|b| b.len())
                .map_err(|e| format!("{e:?}"));
            match (got, want) {
                (Ok(n), Ok(m)) => assert_eq!(n, m),
                (Err(e), Err(w)) => assert!(e.starts_with(w), "{rows}, {bytes}: {e}"),
                (got, want) => panic!("{rows}, {bytes}: got {got:?}, want {want:?}"),
            }
        }
    }
}
