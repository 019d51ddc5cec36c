//! Hostile JSON bodies: exact issues at every limit, and surrogates, NUL and a BOM stored as
//! the contract says.

use super::*;

/// `n` UTF-16 units: surrogate pairs (2 units, 4 bytes each) and one ASCII letter if odd.
fn units(n: usize) -> String {
    "😀".repeat(n / 2) + &"a".repeat(n % 2)
}

/// A trace with every limited string at `len(limit)` units, and a span with the same.
fn limits_batch(len: impl Fn(usize) -> usize) -> Value {
    let s = |limit: usize| Value::String(units(len(limit)));
    let ascii = |limit: usize| Value::String("x".repeat(len(limit)));
    let mut metadata = serde_json::Map::new();
    metadata.insert(units(len(128)), s(1024));
    json!({
        "version": "v1",
        "traces": [{
            "traceId": s(128),
            "traceName": s(256),
            "agentName": s(256),
            "workflowName": s(256),
            "workflowRunId": s(128),
            "sessionId": s(128),
            "metadata": metadata,
            "customer": {"id": s(128), "name": s(256),
                         "imageUrl": format!("https://x/{}", "p".repeat(len(2048) - 10))},
            "spans": [{
                "spanId": s(128),
                "parentSpanId": s(128),
                "spanType": "llm",
                "name": s(512),
                "startTime": 1,
                "endTime": 2,
                "errorMessage": s(8192),
                "provider": s(128),
                "modelId": s(256),
                "systemFingerprint": s(256),
                "safetyMetadata": s(16384),
                "input": ascii(1_000_000),
                "output": ascii(1_000_000),
                "toolCatalog": ascii(1_000_000),
                "sources": ascii(1_000_000),
            }]
        }]
    })
}

#[test]
fn hostile_json_gets_exact_issues() {
    let server = Server::start();
    let key = server.ready_key("org-json");
    let refused = |body: &[u8]| {
        let r = server.post_ingest(&key, body);
        assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(&r.body));
        r.json()
    };
    let issues = |body: &[u8]| -> Vec<(Value, String)> {
        let v = refused(body);
        assert_eq!(v["code"], "validation_failed", "{v}");
        v["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["path"].clone(), i["code"].as_str().unwrap().to_owned()))
            .collect()
    };
    let span_with = |extra: &str| {
        format!(
            r#"{{"version":"v1","traces":[{{"traceId":"t","traceName":"n","spans":[{{"spanId":"s","spanType":"llm","name":"x","startTime":1,"endTime":2{extra}}}]}}]}}"#
        )
    };
    let sp = |field: &str| json!(["traces", 0, "spans", 0, field]);

    // Every limit, exactly at it: accepted. One past it: one too_big per field, in order.
    let at = serde_json::to_vec(&limits_batch(|l| l)).unwrap();
    assert!(at.len() < 10 << 20);
    assert_eq!(server.post_ingest(&key, &at).json(), json!({"accepted": 1}));
    let over = serde_json::to_vec(&limits_batch(|l| l + 1)).unwrap();
    let t = |k: &str| json!(["traces", 0, k]);
    let expected: Vec<(Value, String)> = vec![
        t("traceId"),
        t("traceName"),
        t("agentName"),
        t("workflowName"),
        t("workflowRunId"),
        t("sessionId"),
        json!(["traces", 0, "metadata", units(129)]),
        json!(["traces", 0, "metadata", units(129)]),
        json!(["traces", 0, "customer", "id"]),
        json!(["traces", 0, "customer", "name"]),
        json!(["traces", 0, "customer", "imageUrl"]),
        sp("spanId"),
        sp("parentSpanId"),
        sp("name"),
        sp("errorMessage"),
        sp("provider"),
        sp("modelId"),
        sp("systemFingerprint"),
        sp("safetyMetadata"),
        sp("input"),
        sp("output"),
        sp("toolCatalog"),
        sp("sources"),
    ]
    .into_iter()
    .map(|p| (p, "too_big".to_owned()))
    .collect();
    // (serde_json writes keys sorted, and issues come in body order: compare as sets.)
    let sorted = |mut v: Vec<(Value, String)>| {
        v.sort_by_key(|(p, c)| (p.to_string(), c.clone()));
        v
    };
    assert_eq!(sorted(issues(&over)), sorted(expected));

    // Nesting far beyond the schema: refused by the iterative parser, at any depth.
    for depth in [1025, 100_000, 1_000_000] {
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let v = refused(deep.as_bytes());
        assert_eq!(v["code"], "invalid_json");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("nested deeper than 1024"),
            "{v}"
        );
        let inside = span_with(&format!(
            ",\"x\":{}1{}",
            "{\"a\":".repeat(depth),
            "}".repeat(depth)
        ));
        assert_eq!(refused(inside.as_bytes())["code"], "invalid_json");
    }

    let cases: Vec<(String, Vec<(Value, &str)>)> = vec![
        // Numbers out of range.
        (
            span_with(r#","startTime":1e400,"endTime":1e400"#)
                .replace(r#""startTime":1,"endTime":2,"#, ""),
            vec![
                (sp("startTime"), "invalid_type"),
                (sp("endTime"), "invalid_type"),
            ],
        ),
        (
            span_with(r#","usage":{"inputTokens":18446744073709551616}"#),
            vec![(
                json!(["traces", 0, "spans", 0, "usage", "inputTokens"]),
                "too_big",
            )],
        ),
        (
            span_with(r#","usage":{"inputTokens":9007199254740992}"#),
            vec![(
                json!(["traces", 0, "spans", 0, "usage", "inputTokens"]),
                "too_big",
            )],
        ),
        (
            span_with(r#","ttftMs":-1e400"#),
            vec![(sp("ttftMs"), "invalid_type")],
        ),
        (
            span_with(r#","chunkTokens":[1,2.5,-1]"#),
            vec![
                (
                    json!(["traces", 0, "spans", 0, "chunkTokens", 1]),
                    "invalid_type",
                ),
                (
                    json!(["traces", 0, "spans", 0, "chunkTokens", 2]),
                    "too_small",
                ),
            ],
        ),
        // Duplicate keys, at every level.
        (
            span_with(r#","spanId":"again""#),
            vec![(sp("spanId"), "duplicate_key")],
        ),
        (
            span_with(r#","metadata":{"k":"a","k":"b"}"#),
            vec![(
                json!(["traces", 0, "spans", 0, "metadata", "k"]),
                "duplicate_key",
            )],
        ),
        (
            span_with("").replacen(r#""version":"v1","#, r#""version":"v1","version":"v1","#, 1),
            vec![(json!(["version"]), "duplicate_key")],
        ),
        // Keys written with escapes are the same key.
        (
            span_with(r#","span\u0049d":"again""#),
            vec![(sp("spanId"), "duplicate_key")],
        ),
        // null is not absent.
        (
            span_with(r#","parentSpanId":null,"usage":null,"metadata":null,"status":null"#),
            vec![
                (sp("parentSpanId"), "invalid_type"),
                (sp("usage"), "invalid_type"),
                (sp("metadata"), "invalid_type"),
                (sp("status"), "invalid_type"),
            ],
        ),
        (
            span_with(r#","usage":{"inputTokens":null}"#),
            vec![(
                json!(["traces", 0, "spans", 0, "usage", "inputTokens"]),
                "invalid_type",
            )],
        ),
        // Too short, and the cross-field rules.
        (
            span_with(r#","parentSpanId":"""#),
            vec![(sp("parentSpanId"), "too_small")],
        ),
    ];
    for (body, want) in cases {
        let want: Vec<(Value, String)> = want.into_iter().map(|(p, c)| (p, c.to_owned())).collect();
        assert_eq!(issues(body.as_bytes()), want, "{body}");
    }

    // Not UTF-8, and a broken \u escape: not JSON at all.
    for body in [
        span_with(",\"name2\":\"\u{0}\"")
            .into_bytes()
            .into_iter()
            .map(|b| if b == 0 { 0xff } else { b })
            .collect::<Vec<u8>>(),
        b"{\"version\":\"v\xc3\x28\"}".to_vec(),
        b"{\"version\":\"\xed\xa0\x80\"}".to_vec(),
        span_with(r#","name2":"\uD83"#).into_bytes(),
    ] {
        let v = refused(&body);
        assert_eq!(v["code"], "invalid_json", "{v}");
    }
}

#[test]
fn surrogates_nul_and_bom_are_stored_as_the_contract_says() {
    let server = Server::start();
    let key = server.ready_key("org-unicode");
    let body = r#"{"version":"v1","traces":[{"traceId":"uni","traceName":"cut \uD83D","spans":[{"spanId":"s1","spanType":"tool","name":"a\u0000b","startTime":1,"endTime":2,"errorMessage":"\uDE00\uD83D\uDE00\uD83D","metadata":{"\uDBFF":"x"}}]}]}"#;
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend_from_slice(body.as_bytes());
    let r = server.post_ingest(&key, &with_bom);
    assert_eq!(r.json(), json!({"accepted": 1}));
    // Two byte-order marks are one too many.
    let mut two = b"\xEF\xBB\xBF".to_vec();
    two.extend_from_slice(&with_bom);
    assert_eq!(server.post_ingest(&key, &two).code(), "invalid_json");
    server.wait_rows(1);
    let rows = server.rows(
        "trace_name, name, error_message, metadata_keys",
        "WHERE trace_id = 'uni'",
    );
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["trace_name"], "cut \u{FFFD}");
    assert_eq!(row["name"], "a\u{0}b");
    assert_eq!(row["error_message"], "\u{FFFD}😀\u{FFFD}");
    assert_eq!(row["metadata_keys"], json!(["\u{FFFD}"]));
}
