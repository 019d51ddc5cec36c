//! The pricing file at work in the server: rows priced from it, and reloads under load that
//! lose no request and never mix two tables in one batch.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::support::*;

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
