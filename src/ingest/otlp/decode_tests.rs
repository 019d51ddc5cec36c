//! Around the mapping: metadata from the resource and scope, status and values in metadata,
//! identity, grouping and rejected spans, the string and attribute limits, and bodies that do
//! not decode; OTLP/JSON's own rules in `json.rs` below. Each export is decoded from protobuf and from
//! OTLP/JSON where both apply (`testkit.rs`).

use bumpalo::Bump;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::trace::v1::{status, Span, Status};
use prost::Message;

use super::testkit::*;
use super::*;

/// Metadata: the span's unmapped attributes (a repeated key keeps its last value), then the
/// resource's (the span's own value of a key wins; a key the resource repeats keeps its first),
/// then the scope's name.
#[test]
fn resource_and_scope_in_metadata() {
    let mut req = export_in(
        "opentelemetry.instrumentation.openai",
        vec![
            span(
                1,
                0,
                "m",
                &[
                    ("k", s("first")),
                    ("deployment.environment", s("span's")),
                    ("k", s("last")),
                ],
            ),
            span(2, 1, "n", &[("x", s("y"))]),
        ],
    );
    let resource = req.resource_spans[0].resource.as_mut().unwrap();
    resource.attributes = kvs(&[
        ("service.name", s("svc")),
        ("deployment.environment", s("prod")),
        ("host.cores", i(8)),
        ("service.name", s("again")),
    ]);
    let proto = req.encode_to_vec();
    let arena = Bump::new();
    let d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
    let all = |i: usize| {
        d.batch.traces[0].spans[i]
            .all_metadata()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        all(0),
        [
            ("k", "last"),
            ("deployment.environment", "span's"),
            ("service.name", "svc"),
            ("host.cores", "8"),
            ("otel.scope.name", "opentelemetry.instrumentation.openai"),
        ]
    );
    // A span none of whose keys is the resource's.
    assert_eq!(
        all(1),
        [
            ("x", "y"),
            ("service.name", "svc"),
            ("deployment.environment", "prod"),
            ("host.cores", "8"),
            ("otel.scope.name", "opentelemetry.instrumentation.openai"),
        ]
    );
    // Its resource's pairs are shared, not copied; the first span's (a key in common) are.
    let spans = d.batch.traces[0].spans;
    assert_eq!(spans[1].metadata, [("x", "y")]);
    assert_eq!(spans[1].shared_metadata.len(), 4);
    assert!(spans[0].shared_metadata.is_empty());
    decode_both(&req);
}

#[test]
fn status_errors_and_values_in_metadata() {
    let mut sp = span(
        1,
        0,
        "boom",
        &[
            ("error.type", s("TimeoutError")),
            ("n", i(-3)),
            ("f", d(f64::INFINITY)),
        ],
    );
    sp.status = Some(Status {
        message: String::new(),
        code: status::StatusCode::Error as i32,
    });
    let mut sp2 = span(
        2,
        1,
        "boom2",
        &[("l", arr(vec![i(1), b(true), kvl(vec![("k", s("v"))])]))],
    );
    sp2.status = Some(Status {
        message: "upstream said no".into(),
        code: status::StatusCode::Error as i32,
    });
    let mut sp3 = span(3, 1, "fine", &[]);
    sp3.status = Some(Status {
        message: "ignored".into(),
        code: status::StatusCode::Ok as i32,
    });
    assert_eq!(
        decode_both(&export(vec![sp, sp2, sp3])),
        "other boom status=error error=TimeoutError meta[error.type=TimeoutError,n=-3,f=\"Infinity\"]\n\
         other boom2 status=error error=upstream said no meta[l=[1,true,{\"k\":\"v\"}]]\n\
         other fine\n\
         rejected=0 truncated=0 dropped=0"
    );
}

#[test]
fn identity_grouping_and_rejected_spans() {
    let other_trace = |mut sp: Span| {
        sp.trace_id[15] = 0xaa;
        sp
    };
    let mut bad_end = span(4, 1, "backwards", &[]);
    bad_end.end_time_unix_nano = bad_end.start_time_unix_nano - 1;
    let mut zero_trace = span(5, 0, "zero trace", &[]);
    zero_trace.trace_id = vec![0; 16];
    let mut short_span = span(6, 0, "short", &[]);
    short_span.span_id = vec![1, 2, 3];
    let mut bad_parent = span(7, 0, "bad parent", &[]);
    bad_parent.parent_span_id = vec![1; 4];
    let mut zero_parent = span(8, 0, "zero parent", &[("session.id", s("s-8"))]);
    zero_parent.parent_span_id = vec![0; 8];
    zero_parent.trace_id[15] = 0xbb;
    let req = export(vec![
        span(2, 1, "child", &[("session.id", s("s-child"))]),
        other_trace(span(3, 9, "elsewhere", &[])),
        bad_end,
        span(1, 0, "root", &[("gen_ai.agent.name", s("helper"))]),
        zero_trace,
        short_span,
        bad_parent,
        zero_parent,
    ]);
    let proto = req.encode_to_vec();
    let arena = Bump::new();
    let d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
    let got: Vec<String> = d
        .batch
        .traces
        .iter()
        .map(|t| {
            let spans: Vec<String> = t
                .spans
                .iter()
                .map(|s| {
                    format!(
                        "{}<{} {} {}-{}",
                        s.span_id,
                        s.parent_span_id.unwrap_or("root"),
                        s.name,
                        s.start_time,
                        s.end_time
                    )
                })
                .collect();
            format!(
                "{} name={:?} session={:?} agent={:?}: {}",
                t.trace_id,
                t.trace_name,
                t.session_id,
                t.agent_name,
                spans.join(", ")
            )
        })
        .collect();
    // Traces by id; within one, spans as they came, one entry per run of them (the first
    // trace's spans are split by another's), each entry with the trace's values: named after
    // its root, the session of its first span that has one, the agent of its root.
    assert_eq!(
        got,
        [
            "5b8efff798038103d269b633813fc60c name=Some(\"root\") session=Some(\"s-child\") agent=Some(\"helper\"): \
             0000000000000002<0000000000000001 child 1760000000123-1760000001500",
            "5b8efff798038103d269b633813fc60c name=Some(\"root\") session=Some(\"s-child\") agent=Some(\"helper\"): \
             0000000000000001<root root 1760000000123-1760000001500",
            "5b8efff798038103d269b633813fc6aa name=None session=None agent=None: \
             0000000000000003<0000000000000009 elsewhere 1760000000123-1760000001500",
            "5b8efff798038103d269b633813fc6bb name=Some(\"zero parent\") session=Some(\"s-8\") agent=None: \
             0000000000000008<root zero parent 1760000000123-1760000001500",
        ]
    );
    assert_eq!(d.batch.span_count, 4);
    assert_eq!(d.rejected_spans, 4);
    assert_eq!(
        d.partial_success(),
        Some((
            4,
            "4 spans rejected; the first, span 0000000000000004 (\"backwards\"), because it ends before it starts"
        ))
    );
    // The rendering of the JSON form agrees (ids in hex there).
    decode_both(&req);
}

/// Spans of several traces interleaved (as a batch span processor sends concurrent traces) store
/// the same rows as the same spans sent trace by trace: the entries of a scattered trace carry
/// the trace's values, and the row builder writes them as one trace.
#[test]
fn interleaved_traces_store_the_rows_of_grouped_ones() {
    let in_trace = |t: u8, mut sp: Span| {
        sp.trace_id[15] = t;
        sp.start_time_unix_nano += u64::from(sp.span_id[7]) * 1_000_000;
        sp
    };
    let trace = |t: u8| {
        vec![
            in_trace(
                t,
                span(1, 0, &format!("root {t}"), &[("gen_ai.agent.name", s("a"))]),
            ),
            in_trace(
                t,
                span(
                    2,
                    1,
                    "chat",
                    &[
                        ("gen_ai.operation.name", s("chat")),
                        ("gen_ai.provider.name", s("openai")),
                        ("gen_ai.request.model", s("gpt-4o")),
                        ("gen_ai.usage.input_tokens", i(100 + i64::from(t))),
                        ("gen_ai.usage.output_tokens", i(7)),
                        ("session.id", s(&format!("s-{t}"))),
                    ],
                ),
            ),
            in_trace(t, span(3, 1, "tool", &[("user.id", s(&format!("u-{t}")))])),
        ]
    };
    let grouped: Vec<Span> = [3, 1, 2].into_iter().flat_map(trace).collect();
    // Round robin over the traces, each trace's root last.
    let by_trace: Vec<Vec<Span>> = [3, 1, 2].into_iter().map(trace).collect();
    let mut interleaved = Vec::new();
    for k in [1, 2, 0] {
        for spans in &by_trace {
            interleaved.push(spans[k].clone());
        }
    }
    let rows_of = |spans: Vec<Span>| {
        let proto = export(spans).encode_to_vec();
        let arena = Bump::new();
        let d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
        let rows = priced_rows(&d.batch, &arena);
        let mut reader = rows.reader(0..rows.len());
        let mut out = Vec::new();
        while let Some(r) = reader.next_row() {
            out.push(format!("{r:?}"));
        }
        (d.batch.traces.len(), out)
    };
    let (entries_grouped, rows_grouped) = rows_of(grouped);
    let (entries_interleaved, rows_interleaved) = rows_of(interleaved);
    assert_eq!((entries_grouped, entries_interleaved), (3, 9));
    assert_eq!(rows_grouped.len(), 9);
    assert_eq!(rows_interleaved, rows_grouped);
    // The trace-level values reached every row of the trace, whichever entry it came in.
    let first = &rows_grouped[0];
    assert!(
        first.contains("root 1") && first.contains("s-1") && first.contains("u-1"),
        "{first}"
    );
}

#[test]
fn limits_cut_and_drop_and_count() {
    let long_key = "k".repeat(129);
    let mut attrs: Vec<(String, AnyValue)> = (0..70).map(|n| (format!("a{n:02}"), i(n))).collect();
    attrs.insert(0, (long_key, s("x")));
    attrs.insert(1, ("big".into(), s(&"é".repeat(2000))));
    attrs.insert(2, ("service.name".into(), s("span wins")));
    attrs.insert(
        3,
        ("gen_ai.input.messages".into(), s(&"😀".repeat(600_000))),
    );
    let attrs: Vec<(&str, AnyValue)> = attrs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let name = "n".repeat(600);
    let req = export(vec![span(1, 0, &name, &attrs)]);
    let proto = req.encode_to_vec();
    let arena = Bump::new();
    let d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
    let sp = &d.batch.traces[0].spans[0];
    assert_eq!(sp.name.len(), 512);
    assert_eq!(d.batch.traces[0].trace_name.map(str::len), Some(256));
    // 1,000,000 UTF-16 units: 500,000 emoji of two units each (four bytes).
    assert_eq!(sp.input.map(str::len), Some(2_000_000));
    let meta: Vec<_> = sp.all_metadata().collect();
    assert_eq!(meta.len(), 64);
    assert_eq!(meta[0], ("big", &*"é".repeat(1024)));
    assert_eq!(meta[1], ("service.name", "span wins"));
    assert_eq!(meta[2], ("a00", "0"));
    assert_eq!(meta[63], ("a61", "61"));
    // Dropped: the long key, a62..a69 (8), and the resource's service.name never got in
    // (the span's own wins, so it is not dropped) nor the scope name (past 64: dropped).
    assert_eq!(d.dropped_attributes, 1 + 8 + 1);
    // Cut: the name, the trace name, the input, the big value.
    assert_eq!(d.truncated_strings, 4);
    assert!(d.error_message.is_none());
}

/// A trace takes one agent name, session and user (its root's, else its first span's); a
/// span's own value that differs (a sub-agent, a span of another session) stays in that
/// span's metadata under its attribute's name, where a resource attribute of that name gives
/// way to it.
#[test]
fn span_values_the_trace_did_not_take_stay_in_metadata() {
    let agent = |name: &str| ("gen_ai.agent.name", s(name));
    let mut req = export(vec![
        span(
            1,
            0,
            "root",
            &[
                agent("triage"),
                ("session.id", s("s1")),
                ("user.id", s("u1")),
            ],
        ),
        span(
            2,
            1,
            "same",
            &[
                agent("triage"),
                ("session.id", s("s1")),
                ("enduser.id", s("u1")),
            ],
        ),
        span(
            3,
            1,
            "sub",
            &[
                agent("billing"),
                ("gen_ai.conversation.id", s("c2")),
                ("enduser.id", s("u2")),
            ],
        ),
        span(4, 1, "none", &[("k", s("v"))]),
    ]);
    req.resource_spans[0]
        .resource
        .as_mut()
        .unwrap()
        .attributes
        .extend(kvs(&[("gen_ai.conversation.id", s("from the resource"))]));
    assert_eq!(
        decode_both(&req),
        "other root session=s1 user=u1 agent=triage meta[gen_ai.conversation.id=from the resource]\n\
         other same session=s1 user=u1 agent=triage meta[gen_ai.conversation.id=from the resource]\n\
         other sub session=s1 user=u1 agent=triage meta[gen_ai.agent.name=billing,gen_ai.conversation.id=c2,enduser.id=u2]\n\
         other none session=s1 user=u1 agent=triage meta[k=v,gen_ai.conversation.id=from the resource]\n\
         rejected=0 truncated=0 dropped=0"
    );
    // With no root in the export, the first span's values are the trace's.
    let req = export(vec![
        span(2, 1, "a", &[agent("x")]),
        span(3, 1, "b", &[agent("y")]),
    ]);
    assert_eq!(
        decode_both(&req),
        "other a agent=x\nother b agent=x meta[gen_ai.agent.name=y]\nrejected=0 truncated=0 dropped=0"
    );
    // Within the 64 keys: a span with 64 of its own drops the value, counted.
    let many: Vec<(String, AnyValue)> = (0..64).map(|n| (format!("a{n:02}"), i(n))).collect();
    let mut attrs: Vec<(&str, AnyValue)> =
        many.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    attrs.push(agent("y"));
    let req = export(vec![
        span(1, 0, "a", &[agent("x")]),
        span(2, 1, "b", &attrs),
    ]);
    let proto = req.encode_to_vec();
    let arena = Bump::new();
    let d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
    let b = &d.batch.traces[0].spans[1];
    assert_eq!(b.all_metadata().count(), 64);
    assert!(b.all_metadata().all(|(k, _)| k != "gen_ai.agent.name"));
    // The 64 keys left no room for the resource's 2 (service.name, otel.scope.name), nor for
    // the agent name.
    assert_eq!(d.dropped_attributes, 3);
}

/// A span that sends its session or its user under two names with different values: the
/// better-ranked name's value (`session.id`, `user.id`) is the one its trace may take, and the
/// other is not lost but stays in the span's metadata under its own name, cut as the column is,
/// unless the row shows that value already (the same under both names, or the trace's own).
/// A resource attribute of that name gives way to it. Spans of interleaved traces find their
/// own values.
#[test]
fn an_outranked_session_or_user_that_differs_stays_in_metadata() {
    let in_trace = |t: u8, mut sp: Span| {
        sp.trace_id[15] = t;
        sp
    };
    let long = "x".repeat(200);
    let mut req = export(vec![
        span(
            1,
            0,
            "root",
            &[
                ("gen_ai.conversation.id", s("c1")),
                ("session.id", s("s1")),
                ("enduser.id", s("e1")),
                ("user.id", s("u1")),
            ],
        ),
        // Another trace between the first's spans.
        in_trace(
            0xff,
            span(
                1,
                0,
                "elsewhere",
                &[("session.id", s("s9")), ("gen_ai.conversation.id", s("c9"))],
            ),
        ),
        // The same value under both names: nothing to keep.
        span(
            2,
            1,
            "equal",
            &[
                ("session.id", s("s1")),
                ("gen_ai.conversation.id", s("s1")),
                ("user.id", s("u1")),
                ("enduser.id", s("u1")),
            ],
        ),
        // Another session and user than the trace's: both names' values are kept, but not a
        // value the trace has (`enduser.id` = u1).
        span(
            3,
            1,
            "other",
            &[
                ("session.id", s("s3")),
                ("gen_ai.conversation.id", s("c3")),
                ("user.id", s("u3")),
                ("enduser.id", s("u1")),
            ],
        ),
        // Cut to 128 as the column is (counted when kept); equal to the other name's once cut.
        span(
            4,
            1,
            "long",
            &[
                ("session.id", s("s1")),
                ("gen_ai.conversation.id", s(&long)),
                ("user.id", s(&long[..150])),
                ("enduser.id", s(&long)),
            ],
        ),
    ]);
    req.resource_spans[0]
        .resource
        .as_mut()
        .unwrap()
        .attributes
        .extend(kvs(&[("enduser.id", s("from the resource"))]));
    let x128 = &long[..128];
    assert_eq!(
        decode_both(&req),
        format!(
            "other root session=s1 user=u1 meta[gen_ai.conversation.id=c1,enduser.id=e1]\n\
             other equal session=s1 user=u1 meta[enduser.id=from the resource]\n\
             other other session=s1 user=u1 meta[session.id=s3,gen_ai.conversation.id=c3,user.id=u3,enduser.id=from the resource]\n\
             other long session=s1 user=u1 meta[gen_ai.conversation.id={x128},user.id={x128},enduser.id=from the resource]\n\
             other elsewhere session=s9 meta[gen_ai.conversation.id=c9,enduser.id=from the resource]\n\
             rejected=0 truncated=2 dropped=0"
        )
    );
}

/// The names `Mapper::finish` keeps a span's session and user under are those its rank came
/// from.
#[test]
fn session_and_user_names_by_rank() {
    use super::keys::{classify, Key};
    for (r, name) in super::map::SESSION_KEYS.iter().enumerate() {
        assert_eq!(classify(name), Key::Session(r as u8), "{name}");
    }
    for (r, name) in super::map::USER_KEYS.iter().enumerate() {
        assert_eq!(classify(name), Key::User(r as u8), "{name}");
    }
}

/// A resource attribute whose key is over 128 UTF-16 units is left out of every span's
/// metadata and counted for each, as a span attribute's is.
#[test]
fn a_resource_key_over_the_limit_is_dropped_and_counted() {
    let long = "é".repeat(129);
    let mut req = export(vec![span(1, 0, "a", &[]), span(2, 1, "b", &[])]);
    req.resource_spans[0]
        .resource
        .as_mut()
        .unwrap()
        .attributes
        .extend(kvs(&[
            (long.as_str(), s("x")),
            (&"k".repeat(128), s("kept")),
        ]));
    let k128 = "k".repeat(128);
    assert_eq!(
        decode_both(&req),
        format!(
            "other a meta[{k128}=kept]\nother b meta[{k128}=kept]\nrejected=0 truncated=0 dropped=2"
        )
    );
}

/// A span without a start or an end time (0, proto3's "not set") is refused on its own, and
/// says so; it is not stored as starting or ending in 1970.
#[test]
fn a_span_without_a_start_or_end_time_is_refused() {
    for (start, end, why) in [
        (
            0,
            1_760_000_001_500_000_000,
            "its start time is not set (startTimeUnixNano is 0)",
        ),
        (
            1_760_000_000_123_456_789,
            0,
            "its end time is not set (endTimeUnixNano is 0)",
        ),
        (0, 0, "its start time is not set (startTimeUnixNano is 0)"),
    ] {
        let mut unset = span(2, 0, "unset", &[]);
        unset.start_time_unix_nano = start;
        unset.end_time_unix_nano = end;
        let req = export(vec![span(1, 0, "kept", &[]), unset]);
        assert_eq!(
            decode_both(&req),
            format!(
                "other kept\nrejected=1 truncated=0 dropped=0\n\
                 1 span rejected; the first, span 0000000000000002 (\"unset\"), because {why}"
            ),
            "{start} {end}"
        );
    }
}

/// A span whose cost does not fit the cost columns (a count no model call reaches; OTLP's
/// counts may be any u64, where v1's schema stops at 2^53 - 1) is refused on its own, named in
/// `partial_success`, and the rest is built; a span refused while decoding stays the one
/// described.
#[test]
fn a_span_whose_cost_cannot_be_stored_is_refused_alone() {
    let huge = |n: u8, tokens: AnyValue| {
        span(
            n,
            1,
            "chat",
            &[
                ("gen_ai.operation.name", s("chat")),
                ("gen_ai.provider.name", s("openai")),
                ("gen_ai.request.model", s("gpt-4o")),
                ("gen_ai.usage.input_tokens", tokens),
            ],
        )
    };
    let mut bad_id = span(4, 1, "bad id", &[]);
    bad_id.trace_id = vec![0; 16];
    let cases = [
        (
            vec![span(1, 0, "root", &[]), huge(2, s("18446744073709551615"))],
            "other root\nrejected=1 truncated=0 dropped=0\n1 span rejected; the first, span \
             0000000000000002 (\"chat\"), because its token counts give a cost above \
             99999999.9999999999 USD, which cannot be stored",
        ),
        (
            vec![
                span(1, 0, "root", &[]),
                bad_id,
                huge(2, i(100_000_000_000_000)),
                huge(3, i(1000)),
            ],
            "other root\nllm chat provider=openai model=gpt-4o usage=1000/-/-/-/-/-\n\
             rejected=2 truncated=0 dropped=0\n2 spans rejected; the first, span \
             0000000000000004 (\"bad id\"), because its trace id is not 16 bytes, or is all zero",
        ),
        (
            vec![huge(2, i(100_000_000_000_000))],
            "rejected=1 truncated=0 dropped=0\n1 span rejected; the first, span \
             0000000000000002 (\"chat\"), because its token counts give a cost above \
             99999999.9999999999 USD, which cannot be stored",
        ),
    ];
    for (spans, want) in cases {
        let proto = export(spans).encode_to_vec();
        let arena = Bump::new();
        let mut d = OtlpDecoder::new().decode_protobuf(&proto, &arena).unwrap();
        let build = |d: &Decoded<'_>| {
            crate::ingest::rows::build(
                &d.batch,
                &crate::auth::Principal::unlimited("o", "p"),
                &crate::pricing::PriceTable::builtin(),
                &mut crate::pricing::Pricer::new(),
                1_760_000_000_000,
                crate::ingest::BatchLimit::NONE,
                &arena,
            )
        };
        let Err(crate::ingest::rows::BuildError::CostTooLarge(spans)) = build(&d) else {
            panic!("built: {want}");
        };
        d.reject_spans(&spans, Refused::CostTooLarge, &arena);
        assert_eq!(render(&d), want);
        let rows = build(&d).expect("the rest builds");
        assert_eq!(rows.len(), d.batch.span_count);
        assert_eq!(d.partial_success().map(|p| p.0), Some(d.rejected_spans));
    }
}

#[test]
fn undecodable_bodies() {
    let json_cases: &[(&str, &str)] = &[
        ("", "the body is not valid JSON: the body is empty"),
        ("[]", "the body is not an OTLP JSON export: the body must be a JSON object"),
        ("{\"resourceSpans\":{}}", "the body is not an OTLP JSON export: resourceSpans must be an array"),
        (
            "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"name\":5}]}]}]}",
            "the body is not an OTLP JSON export: span name must be a string",
        ),
        (
            "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"startTimeUnixNano\":-1}]}]}]}",
            "the body is not an OTLP JSON export: startTimeUnixNano must be an unsigned 64-bit integer",
        ),
        ("{\"resourceSpans\":[", "the body is not valid JSON: unexpected end of the body"),
        // Offsets are bytes of the body as sent, and only where simd-json knows one: inside a
        // string its index is not a byte offset (it was reported as one).
        ("{\"resourceSpans\":[],\"x\":\"a\\qb\"}", "the body is not valid JSON: invalid escape sequence in a string"),
        ("{\"resourceSpans\":[],\"x\":\"\\uZZZZ\"}", "the body is not valid JSON: invalid \\u escape in a string"),
        ("{\"resourceSpans\":[]} x", "the body is not valid JSON: unexpected data after the JSON value (at byte 21)"),
        ("{\"resourceSpans\":[1 2]}", "the body is not valid JSON: expected ',' or ']', found '2' (at byte 20)"),
    ];
    for (body, want) in json_cases {
        let mut b = body.as_bytes().to_vec();
        let arena = Bump::new();
        let got = OtlpDecoder::new()
            .decode_json(crate::ingest::body::PaddedBody::pad(&mut b), &arena)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(got.to_string(), *want, "{body}");
    }
    // Values nested past the limit, in both encodings.
    let mut v = s("leaf");
    for _ in 0..MAX_VALUE_DEPTH {
        v = arr(vec![v]);
    }
    let req = export(vec![span(1, 0, "deep", &[("v", v)])]);
    let arena = Bump::new();
    let proto = req.encode_to_vec();
    let err = OtlpDecoder::new()
        .decode_protobuf(&proto, &arena)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, OtlpError::Protobuf(e) if e.kind == ProtoErrorKind::TooDeep),
        "{err}"
    );
    let mut json = to_json(&req);
    let err = OtlpDecoder::new()
        .decode_json(crate::ingest::body::PaddedBody::pad(&mut json), &arena)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err, OtlpError::TooDeep);
    // One level less is fine.
    let mut v = s("leaf");
    for _ in 1..MAX_VALUE_DEPTH {
        v = arr(vec![v]);
    }
    decode_both(&export(vec![span(1, 0, "deep", &[("v", v)])]));
    // A truncated protobuf body.
    let proto = export(vec![span(1, 0, "x", &[])]).encode_to_vec();
    let err = OtlpDecoder::new()
        .decode_protobuf(&proto[..proto.len() - 3], &arena)
        .map(|_| ())
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the body is not a valid OTLP protobuf export: a field runs past"),
        "{err}"
    );
}

mod json;
mod spec;
