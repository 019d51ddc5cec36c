//! Admission and operations over real HTTP: per-key rate limits, monthly quotas with plan
//! changes and month rollover, `/metrics` as parsed Prometheus text, and `/ready`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use traceingest::calendar::days_from_civil;

use crate::support::*;

/// Polls `f` until it returns `Some`, for at most `within`.
fn eventually<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn header_u64(r: &Response, name: &str) -> Option<u64> {
    r.header(name).map(|v| v.parse().unwrap())
}

fn body_text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

// ------------------------------------------------------------------------------------------
// Rate limit
// ------------------------------------------------------------------------------------------

#[test]
fn rate_limit_refuses_past_the_burst_with_a_retry_after_that_works() {
    // 10 spans/s with room for 50: a refusal's Retry-After can be several seconds.
    let server = Server::start_with(&[
        ("INGEST_PLANS", "metered:unlimited:10:50"),
        ("INGEST_DEFAULT_PLAN", "metered"),
    ]);
    let key = server.ready_key("org-rate");

    let r = server.post_ingest(&key, &batch("r1", 5, 10));
    assert_eq!(r.status, 202, "{}", body_text(&r));
    assert_eq!(header_u64(&r, "x-ratelimit-limit"), Some(50));
    assert_eq!(header_u64(&r, "x-ratelimit-remaining"), Some(0));

    // 30 more spans now: ~3 s of deficit.
    let r = server.post_ingest(&key, &batch("r2", 3, 10));
    assert_eq!((r.status, r.code().as_str()), (429, "rate_limited"));
    let retry_after = header_u64(&r, "retry-after").expect("a 429 rate limit has Retry-After");
    assert!((1..=3).contains(&retry_after), "{retry_after}");
    assert!(r.json()["error"].as_str().unwrap().contains("retry in"));
    assert_eq!(header_u64(&r, "x-ratelimit-limit"), Some(50));
    assert!(r.header("x-ratelimit-remaining").is_some());

    // Honouring it is enough for the same batch.
    std::thread::sleep(Duration::from_secs(retry_after));
    let r = server.post_ingest(&key, &batch("r2", 3, 10));
    assert_eq!(r.status, 202, "{}", body_text(&r));

    // Answers past authentication carry the headers even when the batch is refused earlier.
    let r = server.post_ingest(&key, b"{}");
    assert_eq!(r.status, 400);
    assert_eq!(header_u64(&r, "x-ratelimit-limit"), Some(50));
    // Before authentication there is no key to report on.
    let r = server.post_ingest(&format!("ti_{}", "A".repeat(43)), b"{}");
    assert_eq!(r.status, 401);
    assert_eq!(r.header("x-ratelimit-limit"), None);

    server.wait_rows(80);
}

#[test]
fn a_batch_larger_than_the_burst_goes_through_on_a_full_bucket() {
    let server = Server::start_with(&[("INGEST_RATE_LIMIT_RPS", "5")]);
    let key = server.ready_key("org-big");
    // 100 spans cost the whole bucket of 5, no more.
    let r = server.post_ingest(&key, &batch("big", 4, 25));
    assert_eq!(r.status, 202, "{}", body_text(&r));
    assert_eq!(header_u64(&r, "x-ratelimit-limit"), Some(5));
    let r = server.post_ingest(&key, &batch("big2", 1, 1));
    assert_eq!((r.status, r.code().as_str()), (429, "rate_limited"));
    assert_eq!(header_u64(&r, "retry-after"), Some(1));
    server.wait_rows(100);
}

#[test]
fn two_keys_do_not_share_a_bucket() {
    let server = Server::start_with(&[("INGEST_RATE_LIMIT_RPS", "10")]);
    let a = server.ready_key("org-keys");
    let b = server.ready_key("org-keys");
    assert_eq!(server.post_ingest(&a, &batch("ka", 1, 10)).status, 202);
    assert_eq!(server.post_ingest(&a, &batch("ka2", 1, 10)).status, 429);
    // The same organisation's other key still has its whole bucket.
    let r = server.post_ingest(&b, &batch("kb", 1, 10));
    assert_eq!(r.status, 202, "{}", body_text(&r));
    assert_eq!(server.post_ingest(&b, &batch("kb2", 1, 10)).status, 429);
}

#[test]
fn connections_on_all_workers_share_one_limit() {
    // One span per second with room for 40; two workers, sixteen connections.
    let server = Server::start_with(&[
        ("INGEST_WORKERS", "2"),
        ("INGEST_PLANS", "trickle:unlimited:1:40"),
        ("INGEST_DEFAULT_PLAN", "trickle"),
    ]);
    let key = server.ready_key("org-shared");
    let accepted = Arc::new(AtomicU64::new(0));
    let limited = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let (addr, key) = (server.addr, key.clone());
            let (accepted, limited) = (accepted.clone(), limited.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..10 {
                    c.send(&ingest_request(&key, &batch(&format!("w{t}-{i}"), 1, 1)));
                    match c.read_response().status {
                        202 => accepted.fetch_add(1, Ordering::Relaxed),
                        429 => limited.fetch_add(1, Ordering::Relaxed),
                        s => panic!("unexpected status {s}"),
                    };
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let accepted = accepted.load(Ordering::Relaxed);
    assert_eq!(accepted + limited.load(Ordering::Relaxed), 160);
    // The bucket's 40 plus what refilled while the test ran; a limit per worker would let
    // about twice that through.
    let bound = 40 + elapsed.ceil() as u64 + 1;
    assert!(
        (40..=bound).contains(&accepted),
        "{accepted} accepted in {elapsed:.2} s, bound {bound}"
    );
    server.wait_rows(accepted);
}

// ------------------------------------------------------------------------------------------
// Quota
// ------------------------------------------------------------------------------------------

#[test]
fn quota_refuses_the_right_batch_until_the_plan_changes() {
    let server = Server::start_with(&[("INGEST_PLANS", "tiny:100:unlimited")]);
    let out = server.cli(&["orgs", "create", "org-q", "--plan", "tiny"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = server.cli(&["orgs", "create", "org-q", "--plan", "tiny"]);
    assert!(
        !out.status.success(),
        "creating an organisation twice fails"
    );
    let out = server.cli(&["orgs", "set-plan", "org-q", "platinum"]);
    assert!(!out.status.success(), "unknown plans are refused");
    let key = server.ready_key("org-q");

    // Plan of 100 spans a month: refused once used + incoming > 110.
    let mut answers = Vec::new();
    for (i, spans) in [30, 30, 30, 30, 20, 1].into_iter().enumerate() {
        let r = server.post_ingest(&key, &batch(&format!("q{i}"), 1, spans));
        answers.push((
            r.status,
            r.code(),
            r.header("retry-after").map(str::to_string),
            r.header("x-quota-warning").map(str::to_string),
            header_u64(&r, "x-quota-used"),
            header_u64(&r, "x-quota-limit"),
        ));
        if r.status == 429 {
            let msg = r.json()["error"].as_str().unwrap().to_string();
            assert!(
                msg.contains("monthly quota") && msg.contains("upgrade the plan"),
                "{msg}"
            );
        }
    }
    let warn = |used| (Some("90%".to_string()), Some(used), Some(100));
    let want = [
        (202, String::new(), None, None, None, None),
        (202, String::new(), None, None, None, None),
        (202, String::new(), None, warn(90).0, warn(90).1, warn(90).2),
        (
            429,
            "quota_exceeded".into(),
            None,
            warn(90).0,
            warn(90).1,
            warn(90).2,
        ),
        (
            202,
            String::new(),
            None,
            warn(110).0,
            warn(110).1,
            warn(110).2,
        ),
        (
            429,
            "quota_exceeded".into(),
            None,
            warn(110).0,
            warn(110).1,
            warn(110).2,
        ),
    ];
    for (i, (got, want)) in answers.into_iter().zip(want).enumerate() {
        let got = (
            got.0,
            if got.0 == 202 { String::new() } else { got.1 },
            got.2,
            got.3,
            got.4,
            got.5,
        );
        assert_eq!(got, want, "batch {i}");
    }
    server.wait_rows(110);

    let metrics = parse_metrics(&body_text(&server.get_admin("/metrics")));
    assert_eq!(
        metrics.get("traceingest_quota_refusals_total{org=\"org-q\"}"),
        Some(&2.0)
    );

    // A bigger plan lifts the refusal within a key refresh.
    let out = server.cli(&["orgs", "set-plan", "org-q", "pro"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8(server.cli(&["orgs", "list"]).stdout).unwrap();
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("org-q") && l.contains("pro")),
        "{listed}"
    );
    eventually("the pro plan to apply", Duration::from_secs(10), || {
        let r = server.post_ingest(&key, &batch("after-upgrade", 1, 30));
        match r.status {
            202 => Some(()),
            429 => None,
            s => panic!("unexpected {s}: {}", body_text(&r)),
        }
    });
    server.wait_rows(140);
}

/// Milliseconds to add to the real clock so that the server's clock reads this UTC instant.
fn offset_to(y: i64, m: u32, d: u32, seconds_into_day: i64) -> String {
    let target = (days_from_civil(y, m, d) * 86_400 + seconds_into_day) * 1000;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    (target - now).to_string()
}

#[test]
fn usage_is_loaded_at_start_and_a_new_month_starts_from_zero() {
    let mut server = Server::start_with(&[
        ("INGEST_PLANS", "tiny:100:unlimited"),
        ("INGEST_DEFAULT_PLAN", "tiny"),
        // Noon on the last day of January 2031.
        (
            "INGEST_TEST_CLOCK_OFFSET_MS",
            &offset_to(2031, 1, 31, 12 * 3600),
        ),
    ]);
    let key = server.ready_key("org-month");
    for i in 0..2 {
        let r = server.post_ingest(&key, &batch(&format!("jan{i}"), 1, 50));
        assert_eq!(r.status, 202, "{}", body_text(&r));
    }
    let refused = |server: &Server, tag: &str| {
        let r = server.post_ingest(&key, &batch(tag, 1, 20));
        match (r.status, r.code().as_str()) {
            (202, _) => false,
            (429, "quota_exceeded") => true,
            (s, c) => panic!("unexpected {s} {c}"),
        }
    };
    assert!(refused(&server, "jan-over"), "100 + 20 > 110");
    server.wait_rows(100);
    let stored: Vec<_> = server.rows("toYYYYMM(ingested_at) AS m", "GROUP BY m");
    assert_eq!(stored, vec![serde_json::json!({"m": 203101})]);

    // A restart in the same month counts January's spans in ClickHouse before serving.
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(20)), 0);
    server.spawn();
    assert!(refused(&server, "jan-after-restart"));

    // Thirty seconds into February: a new month, nothing used yet.
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(20)), 0);
    server.set_env("INGEST_TEST_CLOCK_OFFSET_MS", &offset_to(2031, 2, 1, 30));
    server.spawn();
    assert!(!refused(&server, "feb"), "February starts from zero");
    server.wait_rows(120);
}

/// An organisation the server first meets after start (no `orgs` record and no active key
/// then) has its month's usage counted as soon as it is seen, not at the next periodic count:
/// what it used before (here, with a key since revoked, before a restart; in a fleet, through
/// another replica) counts from its first request. Found by an audit: with a default plan that
/// has a quota, a new organisation's account was created on that plan, so putting its plan in
/// force never looked like "gained a quota" and no count was asked for; until the next
/// `INGEST_QUOTA_SYNC_MS` it could use its whole hard limit again.
#[test]
fn an_organisation_first_seen_after_start_is_counted_at_once() {
    let mut server = Server::start_with(&[
        ("INGEST_PLANS", "tiny:100:unlimited"),
        ("INGEST_DEFAULT_PLAN", "tiny"),
        // The periodic count is far away: only a count asked for at once can see the usage.
        ("INGEST_QUOTA_SYNC_MS", "600000"),
    ]);
    let old = server.ready_key("org-late");
    let r = server.post_ingest(&old, &batch("before", 1, 100));
    assert_eq!(r.status, 202, "{}", body_text(&r));
    server.wait_rows(100);
    let out = server.cli(&["keys", "revoke", &old]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Restarted without the organisation: no record, no active key.
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(20)), 0);
    server.spawn();
    let key = server.ready_key("org-late");
    // The count runs beside the request that made the server load the key: within a few
    // milliseconds, not 10 minutes. Answers past authentication show the usage from 90% on.
    let used = eventually(
        "the organisation's usage counted",
        Duration::from_secs(3),
        || header_u64(&server.post_ingest(&key, b"{}"), "x-quota-used"),
    );
    assert_eq!(used, 100);
    let r = server.post_ingest(&key, &batch("after", 1, 20));
    assert_eq!(
        (r.status, r.code().as_str()),
        (429, "quota_exceeded"),
        "100 used this month + 20 > 110: {}",
        body_text(&r)
    );
}

// ------------------------------------------------------------------------------------------
// /metrics
// ------------------------------------------------------------------------------------------

/// Parses Prometheus/OpenMetrics text into `name{labels}` -> value, checking the format as it
/// goes: every sample belongs to a family declared by `# TYPE` before it, label values are
/// quoted with `\\`, `\"` and `\n` escapes, values are numbers, and the text ends with `# EOF`.
fn parse_metrics(text: &str) -> HashMap<String, f64> {
    assert!(text.ends_with("# EOF\n"), "no # EOF at the end:\n{text}");
    let mut families: HashMap<String, String> = HashMap::new();
    let mut samples = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("TYPE"), Some(name), Some(kind)) => {
                    assert!(
                        [
                            "counter",
                            "gauge",
                            "histogram",
                            "summary",
                            "info",
                            "unknown"
                        ]
                        .contains(&kind),
                        "{line}"
                    );
                    families.insert(name.to_string(), kind.to_string());
                }
                (Some("HELP"), Some(_), _) | (Some("UNIT"), Some(_), _) => {}
                (Some("EOF"), None, None) => {}
                _ => panic!("bad comment line {line:?}"),
            }
            continue;
        }
        let (series, value) = parse_sample(line);
        let name = series.split('{').next().unwrap();
        let family = ["_total", "_bucket", "_count", "_sum", "_created", ""]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(suffix)
                    .filter(|base| families.contains_key(*base))
            })
            .unwrap_or_else(|| panic!("sample of an undeclared family: {line:?}"));
        let kind = &families[family];
        if kind == "counter" {
            assert!(
                name.ends_with("_total") || name.ends_with("_created"),
                "{line}"
            );
            assert!(value >= 0.0, "{line}");
        }
        assert!(
            samples.insert(series.clone(), value).is_none(),
            "duplicate series {series}"
        );
    }
    samples
}

/// One `name{k="v",...} value` line -> (`name{k="v",...}` re-serialised, value).
fn parse_sample(line: &str) -> (String, f64) {
    let name_end = line
        .find(['{', ' '])
        .unwrap_or_else(|| panic!("no value: {line:?}"));
    let name = &line[..name_end];
    assert!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !name.starts_with(|c: char| c.is_ascii_digit()),
        "bad metric name in {line:?}"
    );
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices().peekable();
        loop {
            let (start, c) = chars.next().expect("unterminated labels");
            if c == '}' {
                rest = &inner[start + 1..];
                break;
            }
            let eq = inner[start..].find('=').expect("label without =") + start;
            let key = &inner[start..eq];
            assert!(
                key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "bad label name in {line:?}"
            );
            while chars.peek().is_some_and(|&(i, _)| i <= eq) {
                chars.next();
            }
            assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line:?}");
            let mut value = String::new();
            loop {
                match chars.next().expect("unterminated label value").1 {
                    '"' => break,
                    '\\' => match chars.next().expect("dangling escape").1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        e => panic!("bad escape \\{e} in {line:?}"),
                    },
                    c => value.push(c),
                }
            }
            labels.push(format!("{key}=\"{}\"", value.replace('"', "\\\"")));
            if chars.peek().map(|&(_, c)| c) == Some(',') {
                chars.next();
            }
        }
    }
    let value = rest.trim();
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v
            .parse()
            .unwrap_or_else(|_| panic!("bad value {v:?} in {line:?}")),
    };
    let series = if labels.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{}}}", labels.join(","))
    };
    (series, value)
}

#[test]
fn metrics_parse_and_count_what_was_sent() {
    // One span a second with room for 10, so the third 5-span batch is rate limited.
    let server = Server::start_with(&[
        ("INGEST_PLANS", "m:unlimited:1:10"),
        ("INGEST_DEFAULT_PLAN", "m"),
    ]);
    let key = server.ready_key("org-metrics");
    let r = server.get_admin("/metrics");
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let before = parse_metrics(&body_text(&r));

    let mut body_bytes = 0;
    let mut post = |body: &[u8]| {
        body_bytes += body.len();
        server.post_ingest(&key, body).status
    };
    assert_eq!(post(&batch("m1", 1, 5)), 202);
    assert_eq!(post(&batch("m2", 1, 5)), 202);
    assert_eq!(post(&batch("m3", 1, 5)), 429);
    assert_eq!(post(b"{\"version\":"), 400);
    assert_eq!(post(br#"{"version":"v1","traces":[]}"#), 400);
    let mut c = server.connect();
    c.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(c.read_response().status, 401);
    assert_eq!(server.get("/nope").status, 404);
    server.wait_rows(10);

    // The flush counters move after the insert returns: wait for them.
    let after = eventually("the flush counters", Duration::from_secs(10), || {
        let m = parse_metrics(&body_text(&server.get_admin("/metrics")));
        (m["traceingest_flush_rows_total"] - before["traceingest_flush_rows_total"] == 10.0)
            .then_some(m)
    });
    let delta = |series: &str| after[series] - before.get(series).copied().unwrap_or(0.0);
    let answers = |status: &str, code: &str| {
        delta(&format!(
            "traceingest_responses_total{{status=\"{status}\",code=\"{code}\"}}"
        ))
    };
    assert_eq!(answers("202", "accepted"), 2.0);
    assert_eq!(answers("429", "rate_limited"), 1.0);
    assert_eq!(answers("400", "invalid_json"), 1.0);
    assert_eq!(answers("400", "validation_failed"), 1.0);
    assert_eq!(answers("401", "missing_api_key"), 1.0);
    assert_eq!(answers("404", "not_found"), 1.0);
    assert_eq!(answers("429", "quota_exceeded"), 0.0);
    assert_eq!(
        answers("200", "ok"),
        0.0,
        "the admin listener's answers are not counted"
    );
    assert_eq!(delta("traceingest_spans_accepted_total"), 10.0);
    assert_eq!(delta("traceingest_batches_accepted_total"), 2.0);
    assert_eq!(
        delta("traceingest_request_body_bytes_total"),
        body_bytes as f64
    );
    let batches = after["traceingest_flush_batches_total"];
    assert!(batches >= 1.0);
    assert_eq!(after["traceingest_flush_duration_seconds_count"], batches);
    assert_eq!(
        after["traceingest_flush_duration_seconds_bucket{le=\"+Inf\"}"],
        batches
    );
    assert_eq!(after["traceingest_flush_errors_total"], 0.0);
    assert_eq!(after["traceingest_buffered_rows"], 0.0);
    assert_eq!(after["traceingest_keys"], 1.0);
    assert!(after["traceingest_key_set_age_seconds"] < 10.0);
}

// ------------------------------------------------------------------------------------------
// /ready
// ------------------------------------------------------------------------------------------

#[test]
fn ready_turns_false_while_clickhouse_is_unreachable() {
    let proxy = Proxy::start();
    let server = Server::start_with(&[
        ("INGEST_CLICKHOUSE_URL", &proxy.url()),
        ("INGEST_READY_STORE_TIMEOUT_MS", "1500"),
    ]);
    assert_eq!(server.get("/ready").status, 200);
    proxy.cut();
    let r = eventually("/ready to fail", Duration::from_secs(20), || {
        let r = server.get("/ready");
        (r.status == 503).then_some(r)
    });
    assert_eq!(r.code(), "not_ready");
    assert!(
        r.json()["error"].as_str().unwrap().contains("ClickHouse"),
        "{}",
        body_text(&r)
    );
    // Liveness is not readiness.
    assert_eq!(server.get("/health").status, 200);
    proxy.restore();
    eventually("/ready to recover", Duration::from_secs(20), || {
        (server.get("/ready").status == 200).then_some(())
    });
}

/// The usage count reads each part of `spans` once: the count at start reads the parts there,
/// the control thread's counts after it (every 200 ms here) read none of them again (the start
/// count's counts are handed to it), and a new part is read once. `/metrics` says what they
/// read; merges are stopped so that the parts stay as they are.
#[test]
fn usage_counts_read_each_part_once_across_a_restart() {
    let mut server = Server::start_with(&[
        ("INGEST_PLANS", "tiny:1000:unlimited"),
        ("INGEST_DEFAULT_PLAN", "tiny"),
        ("INGEST_QUOTA_SYNC_MS", "200"),
    ]);
    let key = server.ready_key("org-parts");
    server.ch_exec(&format!("SYSTEM STOP MERGES {}.spans", server.database));
    // Three inserts: three parts.
    for i in 0..3u64 {
        let r = server.post_ingest(&key, &batch(&format!("part{i}"), 1, 10));
        assert_eq!(r.status, 202, "{}", body_text(&r));
        server.wait_rows(10 * (i + 1));
    }
    let parts = |server: &Server| -> f64 {
        let v = server.ch_json(&format!(
            "SELECT count() AS n FROM system.parts WHERE database = '{}' AND table = 'spans' \
             AND active FORMAT JSONEachRow",
            server.database
        ));
        v[0]["n"].as_str().unwrap().parse().unwrap()
    };
    assert_eq!(parts(&server), 3.0);
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(20)), 0);
    server.spawn();
    let counts = || server.metric_value("traceingest_usage_counts_total");
    eventually(
        "the start count and three more",
        Duration::from_secs(10),
        || (counts() >= 4.0).then_some(()),
    );
    assert_eq!(
        server.metric_value("traceingest_usage_parts_read_total"),
        3.0,
        "each part read once, by the count at start"
    );
    let r = server.post_ingest(&key, &batch("part3", 1, 10));
    assert_eq!(r.status, 202, "{}", body_text(&r));
    server.wait_rows(40);
    let after = counts();
    eventually(
        "two counts after the insert",
        Duration::from_secs(10),
        || (counts() >= after + 2.0).then_some(()),
    );
    assert_eq!(parts(&server), 4.0);
    assert_eq!(
        server.metric_value("traceingest_usage_parts_read_total"),
        4.0,
        "and the new part once"
    );
    assert_eq!(
        server.metric_value("traceingest_usage_whole_reads_total"),
        0.0
    );
    server.ch_exec(&format!("SYSTEM START MERGES {}.spans", server.database));
}
