//! `Mapper::finish`: the mapped spans grouped into traces where they arrived, each trace's own
//! values (name, agent, session, user) taken from its root or its first span that has them,
//! and a span's own value the trace did not take (its best-ranked, or one it sent under a
//! worse-ranked name) kept in that span's metadata.

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;

use super::super::raw;
use super::{
    cut_utf16, limit, Counts, FirstRefusal, Ident, Identity, Mapper, Outranked, AGENT_KEY,
};
use crate::ingest::wire::{Batch, Customer, Span, Trace};

impl<'a> Mapper<'a> {
    /// The spans mapped so far, grouped by trace, and what became of the rest.
    ///
    /// The spans stay where they arrived: each run of consecutive spans of one trace becomes a
    /// `Trace` entry, the entries sorted by trace id, then arrival. Exporters mostly send a
    /// trace's spans together (one entry per trace); a trace whose spans are scattered among
    /// others' gets one entry per run, every entry with the trace's own values (named after
    /// its root, wherever that arrived), which the row builder writes as one trace
    /// (`rows::build` orders rows by trace id whatever the entries). Copying the spans into
    /// one slice per trace instead cost 736 bytes of copy per span.
    pub fn finish(self) -> (Batch<'a>, Counts, Option<FirstRefusal<'a>>) {
        let arena = self.arena;
        let mut counts = self.counts;
        let (spans, idents) = (self.spans.into_bump_slice_mut(), self.idents);
        let outranked = self.outranked;
        let n = spans.len();
        // Runs of spans of one trace, in arrival order: (trace, first, end).
        let mut runs = BVec::new_in(arena);
        let mut start = 0;
        while start < n {
            let id = idents[start].trace;
            let mut end = start + 1;
            while end < n && idents[end].trace == id {
                end += 1;
            }
            runs.push((id, start, end));
            start = end;
        }
        // By trace id, then arrival (the firsts are distinct).
        runs.sort_unstable();
        // Each trace's own values, in the order of its runs' groups.
        let mut values = BVec::with_capacity_in(runs.len(), arena);
        for group in runs.chunk_by(|a, b| a.0 == b.0) {
            let id = group[0].0;
            // The trace's spans, in arrival order.
            let each = || group.iter().flat_map(|&(_, from, end)| from..end);
            let root = each().find(|&k| spans[k].parent_span_id.is_none());
            // A trace-level value: the root's if it has one, else the first span's that does.
            let pick = |get: &dyn Fn(&Ident<'a>) -> Option<&'a str>| {
                root.and_then(|r| get(&idents[r]))
                    .or_else(|| each().find_map(|k| get(&idents[k])))
            };
            let user = pick(&|it| it.user);
            let trace = Trace {
                trace_id: raw::hex(&id.to_be_bytes(), arena),
                spans: &[],
                trace_name: root.map(|r| {
                    let name = spans[r].name;
                    let cut = cut_utf16(name, limit::TRACE_NAME);
                    counts.truncated_strings += u64::from(cut.len() < name.len());
                    cut
                }),
                agent_name: pick(&|it| it.agent),
                workflow_name: None,
                workflow_run_id: None,
                session_id: pick(&|it| it.session),
                metadata: &[],
                customer: user.map(|id| Customer {
                    id,
                    name: None,
                    image_url: None,
                }),
            };
            // A span's own value the trace did not take (a sub-agent under another agent, a
            // span of another session, a conversation id beside a session id) is not lost: it
            // stays in the span's metadata.
            let taken = [trace.agent_name, trace.session_id, user];
            for &(_, from, end) in group {
                let spans = spans[from..end].iter_mut().zip(&idents[from..end]);
                for (k, (span, it)) in (from..).zip(spans) {
                    let own = [it.agent, it.session, it.user];
                    // Mostly absent or the trace's own: a test of each length first, the
                    // text only when they match.
                    let differs = |i: usize| {
                        own[i]
                            .is_some_and(|o| taken[i].is_none_or(|t| o.len() != t.len() || o != t))
                    };
                    if differs(0) || differs(1) || differs(2) || it.outranked {
                        // The span's entries (`outranked` is in arrival order).
                        let first = outranked.partition_point(|o| o.span < k);
                        let end = outranked.partition_point(|o| o.span <= k);
                        let also = &outranked[first..end];
                        keep_differing(span, it, also, taken, &mut counts, arena);
                    }
                }
            }
            values.push(trace);
        }
        let spans: &'a [Span<'a>] = spans;
        let mut traces = BVec::with_capacity_in(runs.len(), arena);
        for (group, trace) in runs.chunk_by(|a, b| a.0 == b.0).zip(values) {
            for &(_, from, end) in group {
                traces.push(Trace {
                    spans: &spans[from..end],
                    ..trace
                });
            }
        }
        let batch = Batch {
            traces: traces.into_bump_slice(),
            span_count: n,
        };
        (batch, counts, self.first_refusal)
    }
}

/// Keeps in a span's metadata each of its agent name, session and user (`it`) that differs
/// from its trace's (`taken`, in that order), under the name the span sent; after its session
/// and after its user, the values it sent under their worse-ranked names (`also`, already
/// unlike its own best-ranked ones) that differ from its trace's too, cut as the column is.
#[cold]
fn keep_differing<'a>(
    span: &mut Span<'a>,
    it: &Ident<'a>,
    also: &[Outranked<'a>],
    taken: [Option<&'a str>; 3],
    counts: &mut Counts,
    arena: &'a Bump,
) {
    let own = [
        (AGENT_KEY, it.agent, None),
        (
            Identity::Session.keys()[usize::from(it.session_rank)],
            it.session,
            Some(Identity::Session),
        ),
        (
            Identity::User.keys()[usize::from(it.user_rank)],
            it.user,
            Some(Identity::User),
        ),
    ];
    for ((key, v, names), taken) in own.into_iter().zip(taken) {
        if let Some(v) = v.filter(|&v| Some(v) != taken) {
            keep_pair(span, key, v, counts, arena);
        }
        let Some(of) = names else { continue };
        let max = of.limit();
        for o in also.iter().filter(|o| o.of == of) {
            let v = cut_utf16(o.value, max);
            if Some(v) != taken {
                counts.truncated_strings += u64::from(v.len() < o.value.len());
                keep_pair(span, o.key, v, counts, arena);
            }
        }
    }
}

/// Adds the pair `key`, `value` to a mapped span's metadata, after its own attributes and
/// before its resource's (which it takes the place of when the resource has the key), within
/// the 64 keys (past them, what does not fit is dropped and counted). Rare: only for values
/// the span's trace did not take (`Mapper::finish`), so the lists are copied.
#[cold]
fn keep_pair<'a>(
    span: &mut Span<'a>,
    key: &'a str,
    value: &'a str,
    counts: &mut Counts,
    arena: &'a Bump,
) {
    let own = span.metadata;
    let shared = span.shared_metadata;
    let mut out = BVec::with_capacity_in(limit::METADATA_KEYS, arena);
    out.extend_from_slice(own);
    // A mapped attribute's key is in the span's own list only with an empty value.
    if let Some(slot) = out.iter_mut().find(|(k, _)| *k == key) {
        slot.1 = value;
        span.metadata = out.into_bump_slice();
        return;
    }
    let in_shared = shared.iter().any(|&(k, _)| k == key);
    if !in_shared && own.len() + 1 + shared.len() <= limit::METADATA_KEYS {
        out.push((key, value));
        span.metadata = out.into_bump_slice();
        return;
    }
    let rest = shared.iter().copied().filter(|&(k, _)| k != key);
    for pair in std::iter::once((key, value)).chain(rest) {
        if out.len() == limit::METADATA_KEYS {
            counts.dropped_attributes += 1;
        } else {
            out.push(pair);
        }
    }
    span.metadata = out.into_bump_slice();
    span.shared_metadata = &[];
}
