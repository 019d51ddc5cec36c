//! Rows ClickHouse refuses: the dead-letter file, its bound, a table that cannot take the
//! columns, and `deadletter replay` putting the rows back as they were refused.

use super::*;

#[test]
fn a_row_clickhouse_refuses_goes_to_the_dead_letter_file_and_the_rest_is_stored() {
    let server = Server::start();
    let key = server.ready_key("org-dead");
    server.ch_exec(&format!(
        "ALTER TABLE {}.spans ADD COLUMN poison UInt8 MATERIALIZED throwIf(span_id = 'dead-s0-2')",
        server.database
    ));
    let r = server.post_ingest(&key, &batch("dead", 1, 5));
    assert_eq!(r.status, 202);
    server.wait_rows(4);
    let file = server.data_dir().join("deadletter/spans.jsonl");
    wait_until("a dead letter", Duration::from_secs(20), || {
        std::fs::read_to_string(&file).is_ok_and(|t| !t.is_empty())
    });
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let l = &lines[0];
    assert_eq!(l["org_id"], "org-dead");
    assert_eq!(l["trace_id"], "dead-t0");
    assert_eq!(l["span_id"], "dead-s0-2");
    assert_eq!(l["code"], 395, "throwIf's error code");
    assert!(!l["error"].as_str().unwrap().is_empty());
    let row = &l["row"];
    assert_eq!(row["model_id"], "gpt-4o");
    assert_eq!(row["input_tokens"], 1000);
    assert_eq!(row["start_time_ms"], 1_700_000_000_002u64);
    assert!(row["total_cost"].is_string(), "money as an exact decimal");
    assert_eq!(
        server.rows("span_id", "WHERE span_id = 'dead-s0-2'").len(),
        0
    );
    assert_eq!(
        server.metric_value("traceingest_flush_rejected_rows_total"),
        1.0
    );
}

/// Rows dead-lettered while `spans` refused them go in again with `traceingest deadletter
/// replay` once it takes them, every column as the same batch's rows stored directly (the
/// extremes of `edge_batch`: the largest decimal, a 1 MB input, 96 metadata pairs) and with
/// their own `ingested_at` and `version`. A line that is not a dead-letter line stops the
/// command before anything is inserted; a row still refused goes to the refused file with its
/// new error and the command exits 3 (1 when it stopped or could not start); replaying again
/// stores nothing twice.
#[test]
fn dead_lettered_rows_go_in_again_with_replay_as_they_were_refused() {
    let (dir, prices) = edge_prices_file("replay");
    let server = Server::start_with(&[("INGEST_PRICING_FILE", &prices)]);
    let direct = server.ready_key("org-direct");
    let refused = server.ready_key("org-refused");
    let body = edge_batch();
    assert_eq!(server.post_ingest(&direct, &body).status, 202);
    server.wait_rows(3);
    let poison = |condition: &str| {
        server.ch_exec(&format!(
            "ALTER TABLE {}.spans ADD COLUMN poison UInt8 MATERIALIZED throwIf({condition})",
            server.database
        ));
    };
    let cure = || {
        server.ch_exec(&format!(
            "ALTER TABLE {}.spans DROP COLUMN poison",
            server.database
        ));
    };
    poison("org_id = 'org-refused'");
    assert_eq!(server.post_ingest(&refused, &body).status, 202);
    let live = server.data_dir().join("deadletter/spans.jsonl");
    wait_until("three dead letters", Duration::from_secs(30), || {
        std::fs::read_to_string(&live).is_ok_and(|t| t.lines().count() == 3)
    });
    // Moved away first, as README says: the server starts a new file for what comes later.
    let file = server.data_dir().join("replay.jsonl");
    std::fs::rename(&live, &file).unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let path = file.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = server.cli(args);
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };

    let (code, out, err) = run(&["deadletter", "replay", path, "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("3 rows to replay (org-refused 3)"), "{out}");
    assert!(out.contains("nothing inserted"), "{out}");

    let (code, _, err) = run(&["deadletter", "replay", path, "--refused", path]);
    assert_eq!(code, Some(1));
    assert!(err.contains(", the file being replayed"), "{err}");

    // A damaged copy: refused whole, naming the line; nothing inserted.
    let damaged = server.data_dir().join("damaged.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&damaged, format!("{first}\n\n{{\"row\": {{}}}}\n")).unwrap();
    let damaged = damaged.to_str().unwrap();
    let (code, _, err) = run(&["deadletter", "replay", damaged]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("damaged.jsonl line 3: no value for column `org_id`"),
        "{err}"
    );
    assert!(err.contains("--skip-damaged"), "{err}");
    assert_eq!(server.raw_count(), 3, "nothing inserted");

    // Mended but for one span: the others go in, that one goes to the refused file.
    cure();
    poison("org_id = 'org-refused' AND span_id = 'tiny'");
    let (code, out, err) = run(&["deadletter", "replay", path]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(out.contains("2 of 3 rows inserted"), "{out}");
    assert!(err.contains("1 row still refused by ClickHouse"), "{err}");
    let again = format!("{path}.refused");
    let refused_lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&again)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let left = refused_lines();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["span_id"], "tiny");
    assert_eq!(left[0]["code"], 395);
    assert_eq!(server.count(), 5);
    // Again: the refused file holds this run's refusals, not both runs'.
    let (code, _, err) = run(&["deadletter", "replay", path]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(refused_lines().len(), 1, "not repeated");
    // A replay of another file would replace it, and that file does not hold its row: refused.
    let others = server.data_dir().join("others.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let not_tiny: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"span_id\":\"tiny\""))
        .collect();
    assert_eq!(not_tiny.len(), 2);
    std::fs::write(&others, not_tiny.join("\n") + "\n").unwrap();
    let others = others.to_str().unwrap();
    let (code, _, err) = run(&["deadletter", "replay", others, "--refused", &again]);
    assert_eq!(code, Some(1));
    assert!(err.contains("holds 1 row that"), "{err}");
    assert_eq!(refused_lines().len(), 1, "kept");
    assert_eq!(server.count(), 5);

    // Mended: the refused file replays in turn; the whole file again stores nothing twice,
    // and removes the refused file of the runs before, now that no row is refused. Its last
    // line cut short (a crash in the middle of a write) is left out, and said so.
    cure();
    let (code, out, err) = run(&["deadletter", "replay", &again]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("1 of 1 row inserted"), "{out}");
    let mut cut = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    std::io::Write::write_all(&mut cut, &first.as_bytes()[..100]).unwrap();
    let (code, out, err) = run(&["deadletter", "replay", path]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("3 of 3 rows inserted"), "{out}");
    assert!(
        out.contains("the last 100 bytes are not a whole line"),
        "{out}"
    );
    assert!(!std::path::Path::new(&again).exists(), "{out}");
    assert_eq!(server.count(), 6, "one copy per span");

    // The damaged copy with --skip-damaged: its good line goes in, the other is listed.
    let (code, out, err) = run(&["deadletter", "replay", damaged, "--skip-damaged"]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(out.contains("1 of 1 row inserted"), "{out}");
    assert!(
        err.contains("damaged.jsonl line 3: no value for column `org_id`; left out"),
        "{err}"
    );
    assert!(err.contains("1 damaged line of"), "{err}");
    assert_eq!(server.count(), 6);

    let want = stored_rows(&server, "org-direct");
    assert_same_rows(&stored_rows(&server, "org-refused"), &want, "replayed");
    // Their own ingest time and version, not the replay's.
    for line in &lines {
        let row = &line["row"];
        let stored = server.rows(
            "toUInt32(ingested_at) AS at, toString(version) AS version",
            &format!(
                "WHERE org_id = 'org-refused' AND span_id = '{}'",
                row["span_id"].as_str().unwrap().replace('\'', "\\'")
            ),
        );
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0]["at"], row["ingested_at"]);
        assert_eq!(stored[0]["version"], row["version"].to_string());
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `spans` table changed by hand so that it cannot take the rows (a column's type): each
/// insert is dead-lettered whole at once, neither retried nor split, and logged in a few
/// lines (10 spans one by one, then one line for the rest), not one per span. Once the column
/// is put back, new rows go in, and the dead-lettered ones replay.
#[test]
fn a_table_that_cannot_take_the_columns_dead_letters_each_insert_at_once_in_a_few_log_lines() {
    let server = Server::start();
    let key = server.ready_key("org-mismatch");
    let name_type = |ty: &str| {
        server.ch_exec(&format!(
            "ALTER TABLE {}.spans MODIFY COLUMN name {ty}",
            server.database
        ));
    };
    name_type("UInt8");
    assert_eq!(server.post_ingest(&key, &batch("mm", 5, 5)).status, 202);
    let file = server.data_dir().join("deadletter/spans.jsonl");
    wait_until("25 dead letters", Duration::from_secs(20), || {
        std::fs::read_to_string(&file).is_ok_and(|t| t.lines().count() == 25)
    });
    let log = server.log();
    let lines = |text: &str| log.lines().filter(|l| l.contains(text)).count();
    assert_eq!(lines("splitting it to isolate"), 0, "not split:\n{log}");
    assert_eq!(lines("will retry"), 0, "not retried:\n{log}");
    assert_eq!(lines("refused a span for good"), 10, "{log}");
    let rest: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("refused more spans of this insert"))
        .collect();
    assert_eq!(rest.len(), 1, "{log}");
    assert!(rest[0].contains("rows=15"), "{}", rest[0]);
    assert_eq!(
        server.metric_value("traceingest_flush_rejected_rows_total"),
        25.0
    );

    name_type("String");
    assert_eq!(server.post_ingest(&key, &batch("after", 1, 3)).status, 202);
    server.wait_rows(3);
    let out = server.cli(&["deadletter", "replay", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.wait_rows(28);
}

/// The dead-letter file has a bound (`INGEST_DEAD_LETTER_MAX_BYTES`): refused rows that would
/// take it past the bound are held in memory, shown, and written to a new file once the full one
/// is moved away; after the column is put back both files replay and every row is stored.
#[test]
fn refused_rows_past_the_dead_letter_bound_wait_until_the_file_is_moved_away() {
    rows_past_the_dead_letter_bound("buffer");
}

/// The same in write-ahead mode, where every refused row comes from a spool record: held
/// all the same (before a review's mend, its record was kept for the next start instead).
#[test]
fn in_wal_mode_refused_rows_past_the_dead_letter_bound_wait_until_the_file_is_moved_away() {
    rows_past_the_dead_letter_bound("wal");
}

fn rows_past_the_dead_letter_bound(durability: &str) {
    const BOUND: u64 = 65536;
    let server = Server::start_with(&[
        ("INGEST_DEAD_LETTER_MAX_BYTES", "65536"),
        ("INGEST_DURABILITY", durability),
    ]);
    let key = server.ready_key("org-dlbound");
    let name_type = |ty: &str| {
        server.ch_exec(&format!(
            "ALTER TABLE {}.spans MODIFY COLUMN name {ty}",
            server.database
        ));
    };
    name_type("UInt8");
    let file = server.data_dir().join("deadletter/spans.jsonl");
    let lines =
        |path: &std::path::Path| std::fs::read_to_string(path).map_or(0, |t| t.lines().count());
    let held = || server.metric_value("traceingest_dead_letter_held_rows");
    // Batches of 5 spans, one at a time, each dead-lettered (or held) before the next.
    let mut sent = 0;
    while held() == 0.0 {
        assert!(
            sent < 200,
            "never held: {} bytes",
            file.metadata().unwrap().len()
        );
        let r = server.post_ingest(&key, &batch(&format!("dlb{sent}"), 1, 5));
        assert_eq!(r.status, 202);
        sent += 5;
        wait_until("dead-lettered or held", Duration::from_secs(20), || {
            lines(&file) + held() as usize == sent
        });
    }
    assert_eq!(held(), 5.0);
    let size = file.metadata().unwrap().len();
    assert!(size <= BOUND, "{size}");
    assert!(
        server.log().contains("INGEST_DEAD_LETTER_MAX_BYTES"),
        "the log says why:\n{}",
        server.log()
    );
    // Moved away: the held rows go to a new file at the next try (1 to 4 s).
    let moved = server.data_dir().join("moved.jsonl");
    std::fs::rename(&file, &moved).unwrap();
    wait_until("the held rows written", Duration::from_secs(20), || {
        lines(&file) == 5 && held() == 0.0
    });
    assert_eq!(lines(&moved) + 5, sent);
    assert_eq!(
        server.metric_value("traceingest_flush_rejected_rows_total"),
        sent as f64
    );

    name_type("String");
    for f in [&moved, &file] {
        let out = server.cli(&["deadletter", "replay", f.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    server.wait_rows(sent as u64);
}

/// A v1 batch of edge values in every column: strings at their exact limits in UTF-16 units
/// (non-BMP characters), a lone surrogate, `\u0000`, empty and absent strings, a 1 MB input,
/// 64 + 64 metadata keys, arrays of 200 at 2^53-1, doubles at their extremes, epoch-bound and
/// far-future times, and (with `EDGE_PRICES`) the largest and the smallest `Decimal(18, 10)`.
fn edge_batch() -> Vec<u8> {
    use serde_json::{json, Map, Value};
    let emoji = |n: usize| "\u{1F600}".repeat(n);
    let mut trace_meta = Map::new();
    let mut span_meta = Map::new();
    for i in 0..64 {
        trace_meta.insert(format!("k{i:02}"), Value::from(format!("trace-{i}")));
        // Half the keys the trace's, half new: 96 pairs once merged.
        span_meta.insert(format!("k{:02}", i + 32), Value::from(format!("span-{i}")));
    }
    // A key of 128 units and a value of 1024, both in surrogate pairs.
    trace_meta.remove("k00");
    trace_meta.insert(emoji(64), Value::from(emoji(512)));
    let max = 9_007_199_254_740_991u64;
    let ints: Vec<u64> = (0..200u64)
        .map(|i| if i % 2 == 0 { max - i } else { i })
        .collect();
    let spans = json!([
        {
            "spanId": emoji(64), "parentSpanId": "p", "spanType": "llm",
            "name": format!("{}ab", emoji(255)), "startTime": 0, "endTime": max,
            "status": "aborted", "errorMessage": "cut LONE here", "provider": "acme",
            "modelId": "big-model",
            "usage": {"inputTokens": max, "outputTokens": 0, "totalTokens": max, "reasoningTokens": max,
                      "cachedInputTokens": 0, "cacheWriteInputTokens": max, "imageCount": max,
                      "webSearchCount": max, "requestCount": 1},
            "ttftMs": 5e-324, "chunkOffsets": ints, "chunkTokens": [], "reasoningOffsets": [0],
            "reasoningChunkTokens": ints, "reasoningDurationMs": 0, "modelCallMs": max,
            "input": "x".repeat(1_000_000), "output": "", "toolCatalog": "nul\u{0}in",
            "sources": "é".repeat(1_000), "systemFingerprint": emoji(128),
            "safetyMetadata": "{}",
            "rateLimit": {"requestsLimit": 0, "requestsRemaining": max, "tokensResetMs": 0},
            "metadata": span_meta, "responseTimeMs": max, "effectiveOutputTps": 1.7976931348623157e308,
            "effectiveTotalTps": 0, "outputTps": 0.1, "inputTps": 2.2250738585072014e-308,
            "chunkJitter": {"min": 0, "p10": 1e-300, "median": 0.3, "avg": 1e300, "p90": 123_456_789.123_456_79, "max": 1.5}
        },
        {
            "spanId": "tiny", "spanType": "embedding", "name": "", "startTime": 1_700_000_000_000u64,
            "endTime": 1_700_000_000_000u64, "provider": "acme", "modelId": "tiny-model",
            "usage": {"inputTokens": 1}, "errorMessage": ""
        },
        {
            "spanId": "future", "spanType": "tool", "name": "n", "startTime": max - 1, "endTime": max
        }
    ]);
    let body = json!({"version": "v1", "traces": [{
        "traceId": emoji(64), "traceName": emoji(128), "agentName": "", "workflowName": "w",
        "workflowRunId": "r".repeat(128), "sessionId": emoji(64), "metadata": trace_meta,
        "customer": {"id": emoji(64), "name": "", "imageUrl": "https://example.com/é"},
        "spans": spans,
    }]});
    let text = serde_json::to_string(&body).unwrap();
    // A client that cut a string inside an emoji: a lone high surrogate.
    text.replace("LONE", "\\ud83d").into_bytes()
}

/// Prices of `edge_batch`: one request of `big-model` costs the largest `Decimal(18, 10)`, one
/// token of `tiny-model` the smallest.
const EDGE_PRICES: &str = r#"{"models": [
    {"id": "acme/big-model", "request": "99999999.9999999999"},
    {"id": "acme/tiny-model", "prompt": "0.0000000001"}
]}"#;

/// `EDGE_PRICES` in a file of a temporary directory named after `tag`: (the directory, the
/// file's path).
fn edge_prices_file(tag: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("ti-{tag}-prices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prices = dir.join("prices.json");
    std::fs::write(&prices, EDGE_PRICES).unwrap();
    (dir, prices.to_str().unwrap().to_string())
}

/// `got` has `want`'s rows (as `stored_rows` reads them), every column equal.
fn assert_same_rows(got: &[serde_json::Value], want: &[serde_json::Value], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        for (k, wv) in w.as_object().unwrap() {
            assert_eq!(&g[k], wv, "{what}: column {k} of span {}", w["span_id"]);
        }
    }
}

/// Every column of an org's rows as ClickHouse returns them, but those stamped at ingest
/// (`org_id`, `ingested_at`, `priced_at`, `version`); money and doubles as their exact text.
fn stored_rows(server: &Server, org: &str) -> Vec<serde_json::Value> {
    let columns = server.ch_json(&format!(
        "SELECT name, type FROM system.columns WHERE database = '{}' AND table = 'spans' \
         FORMAT JSONEachRow",
        server.database
    ));
    let select: Vec<String> = columns
        .iter()
        .filter_map(|c| {
            let (name, ty) = (c["name"].as_str().unwrap(), c["type"].as_str().unwrap());
            if ["org_id", "ingested_at", "priced_at", "version"].contains(&name) {
                return None;
            }
            Some(if ty.contains("Decimal") || ty.contains("Float") {
                format!("toString({name}) AS {name}")
            } else {
                name.to_string()
            })
        })
        .collect();
    server.rows(
        &select.join(", "),
        &format!("WHERE org_id = '{org}' ORDER BY span_id"),
    )
}

/// A row replayed from the spool (a clean stop during an outage) or from the write-ahead log
/// (`kill -9` during an outage) is, in every column, the row a direct insert stores; and the
/// direct row holds what was sent.
#[test]
fn a_replayed_row_is_the_row_inserted_directly_in_every_column() {
    let (dir, prices) = edge_prices_file("edge");
    let prices = prices.as_str();
    let mut ch = PrivateClickHouse::start();
    let mut buffered = server_on(
        &ch,
        &[
            ("INGEST_PRICING_FILE", prices),
            ("INGEST_SHUTDOWN_TIMEOUT_MS", "6000"),
        ],
    );
    let mut logged = server_on(
        &ch,
        &[
            ("INGEST_PRICING_FILE", prices),
            ("INGEST_DURABILITY", "wal"),
        ],
    );
    let direct = buffered.ready_key("org-direct");
    let spooled = buffered.ready_key("org-spooled");
    let walled = logged.ready_key("org-walled");
    let body = edge_batch();
    let r = buffered.post_ingest(&direct, &body);
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    buffered.wait_rows(3);

    ch.stop();
    assert_eq!(buffered.post_ingest(&spooled, &body).status, 202);
    assert_eq!(logged.post_ingest(&walled, &body).status, 202);
    buffered.signal(SIGTERM);
    assert_eq!(buffered.wait_exit(Duration::from_secs(30)), 0);
    logged.signal(libc::SIGKILL);
    logged.wait_exit(Duration::from_secs(10));
    ch.start_again();
    buffered.spawn();
    logged.spawn();
    buffered.wait_rows_within(6, Duration::from_secs(60));
    logged.wait_rows_within(3, Duration::from_secs(60));

    let want = stored_rows(&buffered, "org-direct");
    assert_eq!(want.len(), 3);
    // The direct rows hold what was sent.
    let by_span = |id: &str| want.iter().find(|r| r["span_id"] == id).unwrap().clone();
    let big = by_span(&"\u{1F600}".repeat(64));
    assert_eq!(big["request_cost"], "99999999.9999999999");
    assert_eq!(big["total_cost"], "99999999.9999999999");
    assert_eq!(big["error_message"], "cut \u{FFFD} here");
    assert_eq!(big["tool_catalog"], "nul\u{0}in");
    assert_eq!(big["start_time_ms"], "0");
    assert_eq!(big["duration_ms"], "9007199254740991");
    assert_eq!(big["metadata_keys"].as_array().unwrap().len(), 96);
    assert_eq!(big["input"].as_str().unwrap().len(), 1_000_000);
    let tiny = by_span("tiny");
    assert_eq!(tiny["prompt_cost"], "0.0000000001");
    assert_eq!(tiny["total_cost"], "0.0000000001");
    for (server, org) in [(&buffered, "org-spooled"), (&logged, "org-walled")] {
        assert_same_rows(&stored_rows(server, org), &want, org);
    }
    drop(buffered);
    drop(logged);
    drop(ch);
    let _ = std::fs::remove_dir_all(&dir);
}
