//! OTLP/JSON only: its spellings, ids, numbers, nulls, lone surrogates, and the fields it checks
//! but does not keep.

use super::*;

/// A JSON id that is neither hex nor base64 is named as such, and the refusal does not show
/// the stand-in byte as the span's id.
#[test]
fn an_unreadable_json_id_is_described_as_it_is() {
    let body = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"not-a-hex-id-xyz","name":"a",
         "startTimeUnixNano":"5","endTimeUnixNano":"6"},
        {"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000002",
         "parentSpanId":"xyz","name":"b","startTimeUnixNano":"5","endTimeUnixNano":"6"}
    ]}]}]}"#;
    assert_eq!(
        decode_json_str(body).unwrap(),
        "rejected=2 truncated=0 dropped=0\n\
         2 spans rejected; the first, span (unreadable) (\"a\"), because its span id is neither \
         16 hex digits nor the base64 of 8 bytes"
    );
}

/// A number literal simd-json cannot hold is read as the double it is: valid JSON that a
/// `doubleValue` may hold is taken, and where an integer or a string must be it is refused as
/// of the wrong type (not as invalid JSON).
#[test]
fn json_numbers_past_64_bits() {
    let decode = |value: &str, start: &str| {
        let body = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[
            {{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","name":"a",
             "startTimeUnixNano":{start},"endTimeUnixNano":"6",
             "attributes":[{{"key":"k","value":{value}}}]}}]}}]}}]}}"#
        );
        decode_json_str(&body)
    };
    assert_eq!(
        decode(r#"{"doubleValue":100000000000000000000}"#, "5").as_deref(),
        Ok("other a meta[k=1e20]\nrejected=0 truncated=0 dropped=0")
    );
    assert_eq!(
        decode(r#"{"doubleValue":-1e400}"#, "5").as_deref(),
        Ok("other a meta[k=\"-Infinity\"]\nrejected=0 truncated=0 dropped=0")
    );
    // The repair rewrites a literal in a key's place too, which is not JSON.
    let got = decode_json_str(r#"{"x":1e400,"resourceSpans":[],1e400:1}"#).unwrap_err();
    assert!(got.contains("keys must be strings"), "{got}");
    let got = decode_json_str(r#"{"x":[1e400,{"a":{"b":[]}}],"y":{1e400:1}}"#).unwrap_err();
    assert!(got.contains("keys must be strings"), "{got}");
    assert_eq!(
        decode_json_str(r#"{"x":[1e400,{"a":{"b":[]}},{}],"y":{"z":1e400},"resourceSpans":[]}"#)
            .as_deref(),
        Ok("rejected=0 truncated=0 dropped=0")
    );
    for (value, start, why) in [
        (
            r#"{"intValue":18446744073709551616}"#,
            "5",
            "intValue must be a 64-bit integer",
        ),
        (
            r#"{"stringValue":1e400}"#,
            "5",
            "stringValue must be a string",
        ),
        (
            r#"{"intValue":1}"#,
            "18446744073709551616",
            "startTimeUnixNano must be an unsigned 64-bit integer",
        ),
    ] {
        let got = decode(value, start).unwrap_err();
        assert!(got.contains(why), "{value} {start}: {got}");
    }
}

/// Events and links are not stored, but a JSON export's are checked as the protobuf reader
/// checks them: a field of the wrong type refuses the export, and says which.
#[test]
fn json_events_and_links_are_checked() {
    let decode = |events: &str| {
        let body = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[
            {{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","name":"a",
             "startTimeUnixNano":"5","endTimeUnixNano":"6",{events}}}]}}]}}]}}"#
        );
        decode_json_str(&body)
    };
    let fine = r#""events":[{"timeUnixNano":"7","name":"e","attributes":[{"key":"k","value":{"intValue":"1"}}],"droppedAttributesCount":0,"x":[1]},null],
        "links":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000002","traceState":"","attributes":[],"flags":256}]"#;
    assert_eq!(
        decode(fine).as_deref(),
        Ok("other a\nrejected=0 truncated=0 dropped=0")
    );
    for (bad, why) in [
        (
            r#""events":[{"timeUnixNano":"bad"}]"#,
            "an event's timeUnixNano",
        ),
        (
            r#""events":[{"attributes":"x"}]"#,
            "attributes must be an array",
        ),
        (
            r#""events":[{"name":5}]"#,
            "an event's name must be a string",
        ),
        (r#""events":[5]"#, "each event must be an object"),
        (r#""links":[{"traceId":5}]"#, "a link's ids must be strings"),
        (r#""links":[{"flags":4294967296}]"#, "a link's flags"),
        (r#""links":{}"#, "links must be an array"),
        (r#""flags":"x""#, "a span's flags"),
        (r#""traceState":5"#, "traceState must be a string"),
        (r#""droppedEventsCount":-1"#, "droppedEventsCount"),
    ] {
        let got = decode(bad).unwrap_err();
        assert!(got.contains(why), "{bad}: {got}");
    }
}

#[test]
fn json_spellings() {
    let body = r#"{"resource_spans":[{"scope_spans":[{"spans":[
        {"trace_id":"W47/95gDgQPSabYzgT/GDA==","span_id":"AAAAAAAAAAE=","name":"snake",
         "kind":"SPAN_KIND_CLIENT","start_time_unix_nano":1000000,"end_time_unix_nano":"2000000",
         "status":{"code":"STATUS_CODE_ERROR","message":"m"},"unknown":{"deep":[1,2,{"x":null}]},
         "attributes":[{"key":"i","value":{"int_value":7}},{"key":"d","value":{"double_value":"1.5"}},
                       {"key":"b","value":{"bytes_value":"AP8="}},{"key":"e","value":{}},
                       {"key":"n","value":null},{"key":"kv","value":{"kvlist_value":{"values":[{"key":"a","value":{"bool_value":true}}]}}}]},
        {"traceId":"5B8EFFF798038103D269B633813FC60C","spanId":"0000000000000002","parentSpanId":"",
         "name":"camel","startTimeUnixNano":"5","endTimeUnixNano":"5","events":[{"name":"e"}],"links":null,
         "attributes":[{"key":"s","value":{"stringValue":"v"}}],"status":null},
        {"traceId":"not hex","spanId":"0000000000000003","name":"bad id"},
        null
    ]}]}],"extra":true}"#;
    let mut body = body.as_bytes().to_vec();
    let arena = Bump::new();
    let d = OtlpDecoder::new()
        .decode_json(crate::ingest::body::PaddedBody::pad(&mut body), &arena)
        .unwrap();
    assert_eq!(
        render(&d),
        "other snake status=error error=m meta[i=7,d=1.5,b=\"AP8=\",e=null,n=null,kv={\"a\":true}]\n\
         other camel meta[s=v]\n\
         rejected=1 truncated=0 dropped=0\n\
         1 span rejected; the first, span 0000000000000003 (\"bad id\"), because its trace id is neither 32 hex digits nor the base64 of 16 bytes"
    );
    assert_eq!(d.batch.traces.len(), 1);
    assert_eq!(d.batch.traces[0].spans[0].span_id, "0000000000000001");
    assert_eq!(d.batch.traces[0].spans[0].start_time, 1);
}

/// `null` for a value of any kind is an empty value (`null` in metadata), as an absent one.
#[test]
fn json_null_values_are_empty() {
    for kind in [
        "stringValue",
        "boolValue",
        "intValue",
        "doubleValue",
        "bytesValue",
        "arrayValue",
        "kvlistValue",
        "int_value",
        "double_value",
    ] {
        let body = json_span_with(&format!(r#"{{"key":"k","value":{{"{kind}":null}}}}"#));
        assert_eq!(
            decode_json_str(&body).as_deref(),
            Ok("other n meta[k=null]\nrejected=0 truncated=0 dropped=0"),
            "{kind}"
        );
    }
}

/// A lone surrogate escape is valid JSON (RFC 8259), and JavaScript apps send one when they
/// cut a string inside an emoji: it is stored as U+FFFD, as on `/ingest`, and the rest of the
/// export as sent. A pair, and an escaped backslash before `u`, are left alone.
#[test]
fn json_lone_surrogates_are_replacement_characters() {
    let cases = [
        (r#""cut \ud83d""#, "cut \u{FFFD}"),
        (r#""\uDE00 low first""#, "\u{FFFD} low first"),
        (r#""\ud83d\ud83d\ude00""#, "\u{FFFD}😀"),
        (r#""ok \ud83d\ude00""#, "ok 😀"),
        (r#""\\ud83d""#, r"\ud83d"),
    ];
    for (text, stored) in cases {
        let body = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[
            {{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000001","name":"a\n","startTimeUnixNano":"1","endTimeUnixNano":"2",
              "attributes":[{{"key":"gen_ai.input.messages","value":{{"stringValue":{text}}}}},{{"key":"k\ud83d","value":{{"intValue":"7"}}}}]}},
            {{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"0000000000000002","name":"b\"","startTimeUnixNano":"3","endTimeUnixNano":"4"}}
            ]}}]}}]}}"#
        );
        assert_eq!(
            decode_json_str(&body).as_deref(),
            Ok(format!(
                "other a\n input={stored} meta[k\u{FFFD}=7]\nother b\"\nrejected=0 truncated=0 dropped=0"
            )
            .as_str()),
            "{text}"
        );
    }
}
