//! The pricing file at work in the server: rows priced from it, reloads under load that lose
//! no request and never mix two tables in one batch, and reloads that do not wait for a
//! ClickHouse that hangs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::support::*;
use traceingest::row::SPANS_COLUMNS;

/// A pricing file in the project's own format with one model at `prompt` USD per token.
fn price_file(prompt: &str) -> String {
    json!({"models": [{"id": "acme/model-x", "aliases": ["model-x"], "prompt": prompt, "completion": "0.00001"}]})
        .to_string()
}

/// A batch of one trace whose 40 llm spans all call acme/model-x with 1000 input tokens.
fn priced_batch(tag: &str) -> Vec<u8> {
    let spans: Vec<_> = (0..40)
        .map(|i| {
            json!({"spanId": format!("{tag}-{i}"), "spanType": "llm", "name": "call",
                   "startTime": 1_700_000_000_000u64, "endTime": 1_700_000_000_100u64,
                   "provider": "acme", "modelId": "model-x", "usage": {"inputTokens": 1000}})
        })
        .collect();
    serde_json::to_vec(&json!({"version": "v1", "traces": [{"traceId": tag, "traceName": "reload", "spans": spans}]}))
        .unwrap()
}

#[test]
fn reloads_under_load_lose_no_request_and_never_mix_tables_in_a_batch() {
    let dir = std::env::temp_dir().join(format!("ti-prices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("prices.json");
    // 1000 tokens x 0.000001 = 0.001 USD; x 0.000002 = 0.002 USD.
    std::fs::write(&path, price_file("0.000001")).unwrap();
    let server = Server::start_with(&[("INGEST_PRICING_FILE", path.to_str().unwrap())]);
    let key = server.ready_key("org-prices");

    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let (addr, key, stop, accepted) =
                (server.addr, key.clone(), stop.clone(), accepted.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    c.send(&ingest_request(&key, &priced_batch(&format!("rl{t}-{i}"))));
                    let r = c.read_response();
                    assert_eq!(
                        r.status,
                        202,
                        "a request was refused during a reload: {:?}",
                        r.json()
                    );
                    accepted.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    // Swap the file back and forth: by change detection, and by SIGHUP.
    for round in 0..4 {
        std::thread::sleep(Duration::from_millis(1300));
        let prompt = if round % 2 == 0 {
            "0.000002"
        } else {
            "0.000001"
        };
        std::fs::write(&path, price_file(prompt)).unwrap();
        if round == 3 {
            server.signal(libc::SIGHUP);
        }
    }
    std::thread::sleep(Duration::from_millis(1300));
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.join().unwrap();
    }
    let batches = accepted.load(Ordering::Relaxed);
    server.wait_rows(batches * 40);

    let per_trace = server.rows(
        "trace_id, groupUniqArray(toString(prompt_cost)) AS costs, any(pricing_source) AS source, any(priced_model_id) AS model",
        "GROUP BY trace_id",
    );
    assert_eq!(per_trace.len() as u64, batches);
    let mut seen = std::collections::BTreeSet::new();
    for t in &per_trace {
        let costs = t["costs"].as_array().unwrap();
        assert_eq!(
            costs.len(),
            1,
            "batch {} was priced from two tables: {costs:?}",
            t["trace_id"]
        );
        assert_eq!(t["source"], "file");
        assert_eq!(t["model"], "acme/model-x");
        seen.insert(costs[0].as_str().unwrap().to_string());
    }
    let want: std::collections::BTreeSet<String> = ["0.0010000000", "0.0020000000"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(seen, want, "both tables were in force at some point");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key load waits for ClickHouse (up to its query timeout), but a price change must not: with
/// every connection to ClickHouse hanging, SIGHUP still puts the new file in force at once, and
/// the spans accepted meanwhile are priced from it once ClickHouse answers again.
#[test]
fn a_reload_does_not_wait_for_a_clickhouse_that_hangs() {
    let dir = std::env::temp_dir().join(format!("ti-prices-hang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("prices.json");
    std::fs::write(&path, price_file("0.000001")).unwrap();
    let proxy = Proxy::start();
    let server = Server::start_with(&[
        ("INGEST_CLICKHOUSE_URL", &proxy.url()),
        ("INGEST_PRICING_FILE", path.to_str().unwrap()),
        // The control thread's "pricing file reloaded" lines.
        ("INGEST_LOG", "warn,traceingest::control=info"),
    ]);
    let key = server.ready_key("org-prices-hang");
    let reloads = || server.log().matches("pricing file reloaded").count();
    let before = reloads();

    proxy.stall();
    // A key load is now stuck on the stalled connection: the key set ages past several
    // refresh intervals (500 ms) without a new load.
    let loads = server.key_loads();
    wait_until("the key loop to hang", Duration::from_secs(10), || {
        server.metric_value("traceingest_key_set_age_seconds") > 2.0
    });
    assert_eq!(
        server.key_loads(),
        loads,
        "a key load got through the stall"
    );
    std::fs::write(&path, price_file("0.000002")).unwrap();
    server.signal(libc::SIGHUP);
    wait_until("the reload after SIGHUP", Duration::from_secs(2), || {
        reloads() > before
    });
    assert_eq!(
        server.key_loads(),
        loads,
        "the reload came only after a key load"
    );
    // Accepted on the cached key while ClickHouse hangs; stored once it answers.
    let r = server.post_ingest(&key, &priced_batch("hang"));
    assert_eq!(r.status, 202, "{:?}", r.json());
    proxy.resume();
    server.wait_rows(40);
    let costs = server.rows(
        "groupUniqArray(toString(prompt_cost)) AS costs",
        "WHERE trace_id = 'hang'",
    );
    assert_eq!(costs[0]["costs"], json!(["0.0020000000"]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn spans_without_a_price_are_counted_by_provider_and_each_model_is_logged_once() {
    let server = Server::start();
    let key = server.ready_key("org-unpriced");
    // (provider, modelId, spans per batch): three models without a price, one with.
    let calls: [(Option<&str>, &str, usize); 4] = [
        (Some("openai.chat"), "gpt-nonexistent-9", 3),
        (Some("acme"), "acme-1", 2),
        (None, "mystery-model", 1),
        (Some("openai.chat"), "gpt-4o", 1),
    ];
    let batches = 6;
    for b in 0..batches {
        let mut spans = Vec::new();
        for (provider, model, n) in calls {
            for i in 0..n {
                let mut span = json!({"spanId": format!("u{b}-{model}-{i}"), "spanType": "llm",
                    "name": "call", "startTime": 1_700_000_000_000u64,
                    "endTime": 1_700_000_000_100u64, "modelId": model,
                    "usage": {"inputTokens": 10}});
                if let Some(p) = provider {
                    span["provider"] = json!(p);
                }
                spans.push(span);
            }
        }
        let body = json!({"version": "v1",
            "traces": [{"traceId": format!("u{b}"), "traceName": "unpriced", "spans": spans}]});
        // A new connection each time: the batches spread over the workers.
        let r = server.post_ingest(&key, &serde_json::to_vec(&body).unwrap());
        assert_eq!(r.status, 202, "{:?}", r.json());
    }
    server.wait_rows(batches * 7);

    let spans = |provider: &str| {
        server
            .metric(&format!(
                "traceingest_unpriced_spans_total{{provider=\"{provider}\"}}"
            ))
            .unwrap()
    };
    assert_eq!(spans("openai"), (batches * 3) as f64);
    assert_eq!(spans("other"), (batches * 2) as f64);
    assert_eq!(spans("none"), batches as f64);
    assert_eq!(spans("anthropic"), 0.0, "every label is exported");

    let log = server.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("no price for this model"))
        .collect();
    assert_eq!(lines.len(), 3, "one line per model without a price:\n{log}");
    for (provider, model) in [
        ("openai.chat", "gpt-nonexistent-9"),
        ("acme", "acme-1"),
        ("", "mystery-model"),
    ] {
        let pair = format!("provider=\"{provider}\" model=\"{model}\"");
        assert_eq!(
            lines.iter().filter(|l| l.contains(&pair)).count(),
            1,
            "{pair} in\n{log}"
        );
    }

    // Stored with null costs, the priced one with its price.
    let rows = server.rows(
        "model_id, any(toString(total_cost)) AS cost, any(priced_model_id) AS priced",
        "GROUP BY model_id ORDER BY model_id",
    );
    let cost = |model: &str| {
        let r = rows.iter().find(|r| r["model_id"] == model).unwrap();
        (r["cost"].clone(), r["priced"].as_str().unwrap().to_string())
    };
    assert_eq!(cost("acme-1"), (json!(null), String::new()));
    assert_eq!(cost("mystery-model").1, "");
    assert_eq!(cost("gpt-4o").1, "openai/gpt-4o");
}

/// A genai-prices `v2` file as the server's pricing file: each span is priced with the prices
/// in force at its startTime, image output apart from text (from the file, and built in), and
/// the row says where its price came from; a built-in model the file does not match keeps its
/// built-in price.
#[test]
fn a_genai_prices_file_prices_each_span_at_its_start_time() {
    let dir = std::env::temp_dir().join(format!("ti-genai-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("data.json");
    let file = json!([
        {"id": "acme", "name": "Acme", "api_pattern": "x", "provider_match": {"starts_with": "acme"},
         "models": [
            {"id": "model-x", "match": {"starts_with": "model-x"},
             "prices": [
                {"prices": {"input_mtok": 1, "output_mtok": 10}},
                {"constraint": {"start_date": "2026-07-30"}, "prices": {"input_mtok": 0.2, "output_mtok": 2}}
             ]},
            {"id": "voice", "match": {"equals": "voice"},
             "prices": {"input_mtok": 1, "input_audio_mtok": 40}}
         ]},
        {"id": "google", "name": "Google", "api_pattern": "x",
         "models": [
            {"id": "gemini-3-pro-image-preview", "match": {"starts_with": "gemini-3-pro-image"},
             "prices": {"input_mtok": 2, "output_mtok": 12, "output_image_mtok": 120}}
         ]}
    ]);
    std::fs::write(&path, file.to_string()).unwrap();
    let server = Server::start_with(&[("INGEST_PRICING_FILE", path.to_str().unwrap())]);
    let key = server.ready_key("org-genai");
    // 2026-07-29T23:59:59.999Z and 2026-07-30T00:00:00Z.
    let (before, after) = (1_785_369_599_999u64, 1_785_369_600_000u64);
    let span = |id: &str, model: &str, start: u64, usage: serde_json::Value| {
        json!({"spanId": id, "spanType": "llm", "name": "call", "startTime": start,
               "endTime": start + 100, "provider": "acme", "modelId": model, "usage": usage})
    };
    let spans = vec![
        span(
            "before",
            "model-x-2026",
            before,
            json!({"inputTokens": 1000, "outputTokens": 100}),
        ),
        span(
            "after",
            "model-x-2026",
            after,
            json!({"inputTokens": 1000, "outputTokens": 100}),
        ),
        span(
            "image",
            "gemini-2.5-flash-image",
            after,
            json!({"outputTokens": 2000, "imageCount": 1}),
        ),
        span(
            "file-image",
            "gemini-3-pro-image-preview",
            after,
            json!({"outputTokens": 2000, "imageCount": 1}),
        ),
    ];
    let body = serde_json::to_vec(&json!({"version": "v1", "traces": [
        {"traceId": "genai", "traceName": "genai", "spans": spans}]}))
    .unwrap();
    let r = server.post_ingest(&key, &body);
    assert_eq!(r.status, 202, "{:?}", r.json());
    server.wait_rows(4);
    let rows = server.rows(
        "span_id, priced_model_id, pricing_source, toString(prompt_cost) AS p, \
         toString(completion_cost) AS c, toString(image_cost) AS i, toString(total_cost) AS t",
        "ORDER BY span_id",
    );
    let got: Vec<String> = rows
        .iter()
        .map(|r| {
            [
                "span_id",
                "priced_model_id",
                "pricing_source",
                "p",
                "c",
                "i",
                "t",
            ]
            .iter()
            .map(|k| match &r[*k] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ")
        })
        .collect();
    assert_eq!(
        got,
        [
            // 2026-07-30: 1000 x 0.2e-6 + 100 x 2e-6.
            "after acme/model-x file 0.0002000000 0.0002000000 null 0.0004000000",
            // Before: 1000 x 1e-6 + 100 x 10e-6.
            "before acme/model-x file 0.0010000000 0.0010000000 null 0.0020000000",
            // From the file, image output apart with the built-in's 1120 tokens per image:
            // (2000 - 1120) x 12e-6 text, one image 1120 x 120e-6.
            "file-image google/gemini-3-pro-image-preview file null 0.0105600000 0.1344000000 0.1449600000",
            // Built in: (2000 - 1290) x 2.5e-6 text, one image 0.0387.
            "image google/gemini-2.5-flash-image builtin null 0.0017750000 0.0387000000 0.0404750000",
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `reprice` after a price change: a dry run writes nothing; the run writes corrected rows
/// that `FINAL` (and then a merge) keeps, one per span, with the new costs; other spans, other
/// organisations and other span types stay as they were; a second run changes nothing.
#[test]
fn reprice_corrects_stored_costs_and_the_table_keeps_one_row_per_span() {
    let dir = std::env::temp_dir().join(format!("ti-reprice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let genai = |input: f64, output: f64, mystery: bool| {
        let mut models = vec![json!({"id": "model-x", "match": {"starts_with": "model-x"},
            "prices": {"input_mtok": input, "output_mtok": output}})];
        if mystery {
            models.push(json!({"id": "mystery", "match": {"equals": "mystery"},
                "prices": {"input_mtok": 1}}));
        }
        json!([{"id": "acme", "name": "Acme", "api_pattern": "x",
                "provider_match": {"starts_with": "acme"}, "models": models}])
        .to_string()
    };
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    std::fs::write(&old, genai(1.0, 10.0, false)).unwrap();
    std::fs::write(&new, genai(2.0, 20.0, true)).unwrap();
    let server = Server::start_with(&[("INGEST_PRICING_FILE", old.to_str().unwrap())]);
    let start = 1_785_369_600_000u64; // 2026-07-30T00:00:00Z
    let span = |id: &str, ty: &str, model: &str| {
        json!({"spanId": id, "spanType": ty, "name": "call", "startTime": start,
               "endTime": start + 100, "provider": "acme", "modelId": model,
               "usage": {"inputTokens": 1000, "outputTokens": 100}})
    };
    let body = |trace: &str| {
        serde_json::to_vec(&json!({"version": "v1", "traces": [{"traceId": trace,
        "traceName": "t", "spans": [
            span("x1", "llm", "model-x-1"), span("x2", "embedding", "model-x-2"),
            span("m", "llm", "mystery"), span("tool", "tool", "model-x-1"),
        ]}]}))
        .unwrap()
    };
    let (acme, other) = (server.ready_key("org-acme"), server.ready_key("org-other"));
    assert_eq!(server.post_ingest(&acme, &body("t-acme")).status, 202);
    assert_eq!(server.post_ingest(&other, &body("t-other")).status, 202);
    server.wait_rows(8);
    let costs = || -> Vec<String> {
        server
            .rows(
                "org_id, span_id, toString(total_cost) AS t, priced_model_id AS m, \
                 request_count AS r, version > 0 AS v",
                "ORDER BY org_id, span_id",
            )
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {} {} {}",
                    r["org_id"].as_str().unwrap(),
                    r["span_id"].as_str().unwrap(),
                    r["t"].as_str().unwrap_or("null"),
                    r["m"].as_str().unwrap(),
                    r["r"],
                    r["v"]
                )
            })
            .collect()
    };
    let before = costs();
    assert_eq!(
        before,
        [
            // 1000 x 1e-6 + 100 x 10e-6.
            "org-acme m null  \"0\" 1",
            "org-acme tool null  \"0\" 1",
            "org-acme x1 0.0020000000 acme/model-x \"1\" 1",
            "org-acme x2 0.0020000000 acme/model-x \"1\" 1",
            "org-other m null  \"0\" 1",
            "org-other tool null  \"0\" 1",
            "org-other x1 0.0020000000 acme/model-x \"1\" 1",
            "org-other x2 0.0020000000 acme/model-x \"1\" 1",
        ]
    );
    let run = |extra: &[&str]| -> String {
        let mut args = vec!["--org", "org-acme"];
        args.extend_from_slice(extra);
        server.reprice_day(&new, &args)
    };
    let summary = run(&["--dry-run"]);
    assert!(summary.contains("dry run: nothing written"), "{summary}");
    let line = |s: &str, model: &str| -> Vec<String> {
        s.lines()
            .find(|l| l.starts_with(model))
            .unwrap_or_else(|| panic!("no {model} line in {s}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // Two spans of model-x changed from 0.002 to 0.004 each; mystery is priced now.
    assert_eq!(
        line(&summary, "acme/model-x"),
        ["acme/model-x", "2", "2", "0.0040000000", "0.0080000000"]
    );
    assert_eq!(
        line(&summary, "acme/mystery"),
        ["acme/mystery", "1", "1", "0.0000000000", "0.0010000000"]
    );
    assert_eq!(costs(), before, "a dry run writes nothing");
    assert_eq!(server.raw_count(), 8);

    let summary = run(&[]);
    assert!(summary.contains("3 corrected rows written"), "{summary}");
    let after = [
        "org-acme m 0.0010000000 acme/mystery \"1\" 1",
        "org-acme tool null  \"0\" 1",
        "org-acme x1 0.0040000000 acme/model-x \"1\" 1",
        "org-acme x2 0.0040000000 acme/model-x \"1\" 1",
        "org-other m null  \"0\" 1",
        "org-other tool null  \"0\" 1",
        "org-other x1 0.0020000000 acme/model-x \"1\" 1",
        "org-other x2 0.0020000000 acme/model-x \"1\" 1",
    ];
    assert_eq!(costs(), after);
    assert_eq!(server.count(), 8, "one row per span after FINAL");
    // The corrected copy is the one the table keeps once it merges.
    server.ch_exec(&format!("OPTIMIZE TABLE {}.spans FINAL", server.database));
    assert_eq!(server.raw_count(), 8);
    assert_eq!(costs(), after);
    // Every other column of a corrected row is the original's.
    let names = server.rows(
        "input, trace_name, name, ingested_at",
        "WHERE span_id = 'x1'",
    );
    assert_eq!(names[0]["trace_name"], "t");
    assert_eq!(names[0]["name"], "call");

    let again = run(&[]);
    assert!(again.contains("0 corrected rows written"), "{again}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `spans` as releases before the `version` column made it: every column before `version`,
/// deduplicated on `ingested_at`.
fn create_older_spans_table(server: &Server) {
    let db = &server.database;
    server.ch_exec(&format!("CREATE DATABASE `{db}`"));
    let old: Vec<(&str, &str)> = SPANS_COLUMNS
        .iter()
        .copied()
        .take_while(|(n, _)| *n != "version")
        .collect();
    let columns: Vec<String> = old.iter().map(|(n, t)| format!("`{n}` {t}")).collect();
    server.ch_exec(&format!(
        "CREATE TABLE `{db}`.spans ({}) ENGINE = ReplacingMergeTree(ingested_at) \
         PARTITION BY toYYYYMM(toDateTime(intDiv(start_time_ms, 1000))) \
         ORDER BY (org_id, trace_id, start_time_ms, span_id)",
        columns.join(", ")
    ));
    // Two gpt-4o spans stored without a price: a re-pricing would change both.
    for span in ["a", "b"] {
        let values: Vec<String> = old
            .iter()
            .map(|&(name, ty)| match name {
                "org_id" => "'o'".to_string(),
                "trace_id" => "'t'".to_string(),
                "span_id" => format!("'{span}'"),
                "span_type" => "'llm'".to_string(),
                "provider" => "'openai.chat'".to_string(),
                "model_id" => "'gpt-4o'".to_string(),
                "start_time_ms" => "1785369600000".to_string(),
                "input_tokens" => "1000".to_string(),
                "ingested_at" => "toDateTime(1785369700)".to_string(),
                _ if ty.starts_with("Nullable") => "NULL".to_string(),
                _ if ty.starts_with("Array") => "[]".to_string(),
                _ if ty == "String" => "''".to_string(),
                _ => "0".to_string(),
            })
            .collect();
        let names: Vec<&str> = old.iter().map(|c| c.0).collect();
        server.ch_exec(&format!(
            "INSERT INTO `{db}`.spans (`{}`) VALUES ({})",
            names.join("`, `"),
            values.join(", ")
        ));
    }
}

/// Everything a migration could change in `server`'s database: whether it exists, its tables
/// with their engines, their columns in order, and the rows of `spans` (with their costs).
fn schema_and_rows(server: &Server) -> String {
    let db = &server.database;
    let mut out = server.ch_exec(&format!(
        "SELECT name FROM system.databases WHERE name = '{db}' FORMAT TSV"
    ));
    out += &server.ch_exec(&format!(
        "SELECT name, engine_full FROM system.tables WHERE database = '{db}' ORDER BY name \
         FORMAT TSV"
    ));
    // Each table's columns in order, its engine and keys.
    let tables = server.ch_exec(&format!(
        "SELECT name FROM system.tables WHERE database = '{db}' ORDER BY name FORMAT TSV"
    ));
    for table in tables.lines() {
        out += &server.ch_exec(&format!("SHOW CREATE TABLE `{db}`.`{table}` FORMAT TSV"));
    }
    if out.contains("spans") {
        out += &server.ch_exec(&format!(
            "SELECT span_id, toString(total_cost), priced_model_id FROM `{db}`.spans \
             ORDER BY span_id FORMAT TSV"
        ));
    }
    out
}

/// `reprice --dry-run` never migrates: against a `spans` table of an older shape it says what
/// a migration would do and stops, and the tables, columns, engine and rows are as before;
/// against a database that does not exist it creates nothing. After a real migration the same
/// dry run works and still writes nothing.
#[test]
fn a_dry_run_reprice_changes_nothing_even_when_the_schema_is_older() {
    let server = Server::new(CH_HTTP, &[]);
    let dry_run = [
        "reprice",
        "--from",
        "2026-07-30",
        "--to",
        "2026-07-31",
        "--dry-run",
    ];

    // No database at all: the dry run refuses and creates none.
    let before = schema_and_rows(&server);
    assert_eq!(before, "", "the database does not exist yet");
    let out = server.cli(&dry_run);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("has no database"), "{err}");
    assert_eq!(
        schema_and_rows(&server),
        before,
        "a dry run created something"
    );

    create_older_spans_table(&server);
    let before = schema_and_rows(&server);
    assert!(
        before.contains("ReplacingMergeTree(ingested_at)"),
        "the older shape is in place: {before}"
    );
    let out = server.cli(&dry_run);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "a dry run must refuse an older schema: {err}"
    );
    assert!(err.contains("traceingest migrate"), "{err}");
    assert!(err.contains("would add column"), "{err}");
    assert!(err.contains("would rebuild table"), "{err}");
    assert!(err.contains("(2 rows to copy)"), "{err}");
    assert_eq!(
        schema_and_rows(&server),
        before,
        "a dry run changed the tables, columns, engine or rows"
    );
    let raw = server.ch_json(&format!(
        "SELECT count() AS n FROM `{}`.spans FORMAT JSONEachRow",
        server.database
    ));
    assert_eq!(raw[0]["n"], "2");

    // Once migrated, the dry run prices the spans and still writes nothing.
    let out = server.cli(&["migrate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let migrated = schema_and_rows(&server);
    assert!(
        migrated.contains("ReplacingMergeTree(version)"),
        "{migrated}"
    );
    let out = server.cli(&dry_run);
    let summary = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(summary.contains("dry run: nothing written"), "{summary}");
    let line: Vec<&str> = summary
        .lines()
        .find(|l| l.starts_with("openai/gpt-4o"))
        .unwrap_or_else(|| panic!("no gpt-4o line in {summary}"))
        .split_whitespace()
        .collect();
    assert_eq!(line[..3], ["openai/gpt-4o", "2", "2"], "{summary}");
    assert_eq!(schema_and_rows(&server), migrated, "a dry run wrote");
}

/// An OTLP/JSON export of one model-call span (provider `acme`, model `acme-large-7`, 1000
/// input tokens) that reports its own cost of 0.0123 USD, starting at 2026-07-30T00:00:00Z.
fn otlp_span_with_client_cost() -> Vec<u8> {
    let t0: u64 = 1_785_369_600_000_000_000;
    let attr = |k: &str, v: serde_json::Value| json!({"key": k, "value": v});
    serde_json::to_vec(&json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", json!({"stringValue": "edge"}))]},
        "scopeSpans": [{"scope": {"name": "lib"}, "spans": [{
            "traceId": "7a8efff798038103d269b633813fc60c",
            "spanId": "0000000000000c01",
            "name": "chat",
            "kind": 3,
            "startTimeUnixNano": t0.to_string(),
            "endTimeUnixNano": (t0 + 1_000_000).to_string(),
            "attributes": [
                attr("gen_ai.operation.name", json!({"stringValue": "chat"})),
                attr("gen_ai.provider.name", json!({"stringValue": "acme"})),
                attr("gen_ai.request.model", json!({"stringValue": "acme-large-7"})),
                attr("gen_ai.usage.input_tokens", json!({"intValue": "1000"})),
                attr("gen_ai.usage.cost", json!({"stringValue": "0.0123"})),
            ],
        }]}]
    }]}))
    .unwrap()
}

/// A span whose model the pricing file knew at ingest, and that reported a cost of its own, is
/// re-priced after the file drops the model as ingest would price it now: the client's figure
/// (`pricing_source = 'client'`), not nothing. And back: once the model is known again, the
/// table's price wins over the client's figure, as at ingest.
#[test]
fn reprice_falls_back_to_the_client_cost_as_ingest_does() {
    let dir = std::env::temp_dir().join(format!("ti-reprice-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (known, empty) = (dir.join("known.json"), dir.join("empty.json"));
    // 1000 input tokens x 0.000001 USD = 0.001 USD.
    std::fs::write(
        &known,
        json!({"models": [{"id": "acme/acme-large-7", "prompt": "0.000001"}]}).to_string(),
    )
    .unwrap();
    std::fs::write(&empty, json!({"models": []}).to_string()).unwrap();
    let server = Server::start_with(&[("INGEST_PRICING_FILE", known.to_str().unwrap())]);
    let key = server.ready_key("org-client-reprice");
    let body = otlp_span_with_client_cost();
    let r = crate::otlp::post(&server, &key, crate::otlp::JSON, &[], &body);
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    server.wait_rows(1);
    let row = || {
        let r = &server.rows(
            "toString(total_cost) AS t, toString(reported_cost) AS rc, pricing_source AS s, \
             priced_model_id AS m, priced_at IS NULL AS no_priced_at",
            "",
        )[0];
        format!(
            "{} {} {} {} {}",
            r["t"].as_str().unwrap_or("null"),
            r["rc"].as_str().unwrap_or("null"),
            r["s"].as_str().unwrap(),
            r["m"].as_str().unwrap(),
            r["no_priced_at"]
        )
    };
    assert_eq!(row(), "0.0010000000 0.0123000000 file acme/acme-large-7 0");
    let reprice = |file: &std::path::Path| server.reprice_day(file, &[]);
    // The file no longer knows the model: ingest would store the client's figure.
    let summary = reprice(&empty);
    assert!(summary.contains("1 corrected rows written"), "{summary}");
    assert_eq!(row(), "0.0123000000 0.0123000000 client  0");
    // Nothing left to correct.
    assert!(reprice(&empty).contains("0 corrected rows written"));
    // Known again: the table's price, as ingest would.
    assert!(reprice(&known).contains("1 corrected rows written"));
    assert_eq!(row(), "0.0010000000 0.0123000000 file acme/acme-large-7 0");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A corrected copy must win over the row it corrects even when that row's `version` is not
/// older than the re-pricing's clock: here the server that ingested the span runs an hour
/// ahead of the host that re-prices (clock skew; the same holds for a row ingested in the same
/// millisecond). The copy is not an ingest: the quota still counts the span once.
#[test]
fn reprice_wins_over_a_row_stamped_by_a_clock_ahead_of_its_own() {
    let dir = std::env::temp_dir().join(format!("ti-reprice-skew-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |prompt: &str| {
        json!({"models": [{"id": "acme/model-x", "aliases": ["model-x"], "prompt": prompt}]})
            .to_string()
    };
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    std::fs::write(&old, file("0.000001")).unwrap();
    std::fs::write(&new, file("0.000002")).unwrap();
    let server = Server::start_with(&[
        ("INGEST_PRICING_FILE", old.to_str().unwrap()),
        ("INGEST_TEST_CLOCK_OFFSET_MS", "3600000"),
    ]);
    let key = server.ready_key("org-skew");
    let start = 1_785_369_600_000u64; // 2026-07-30T00:00:00Z
    let body = serde_json::to_vec(&json!({"version": "v1", "traces": [{"traceId": "skew",
        "traceName": "t", "spans": [{"spanId": "s1", "spanType": "llm", "name": "call",
        "startTime": start, "endTime": start + 100, "provider": "acme", "modelId": "model-x",
        "usage": {"inputTokens": 1000}}]}]}))
    .unwrap();
    assert_eq!(server.post_ingest(&key, &body).status, 202);
    server.wait_rows(1);
    let total = || server.rows("toString(total_cost) AS t", "")[0]["t"].clone();
    // 1000 x 0.000001.
    assert_eq!(total(), "0.0010000000");
    let summary = server.reprice_day(&new, &[]);
    assert!(summary.contains("1 corrected rows written"), "{summary}");
    // 1000 x 0.000002: what the run said it wrote is what FINAL shows.
    assert_eq!(
        total(),
        "0.0020000000",
        "the corrected copy lost: {summary}"
    );
    assert_eq!(server.count(), 1);
    // The quota counts rows whose version is their own ingest time (see
    // `Store::count_spans_by_org`): still one for the one span.
    let counted = server.ch_json(&format!(
        "SELECT count() AS n FROM `{}`.spans WHERE org_id = 'org-skew' \
         AND intDiv(version, 1000) = toUInt64(toUnixTimestamp(ingested_at)) FORMAT JSONEachRow",
        server.database
    ));
    assert_eq!(counted[0]["n"], "1");
    let _ = std::fs::remove_dir_all(&dir);
}
