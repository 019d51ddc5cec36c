//! No accepted span is ever lost: ClickHouse outages (a private ClickHouse the test stops and starts), clean stops, `kill -9` in write-ahead mode, a full spool; refused rows in `deadletter.rs`.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::private_clickhouse::PrivateClickHouse;
use crate::support::*;

mod deadletter;

/// A server on a private ClickHouse, with extra settings.
pub(crate) fn server_on(ch: &PrivateClickHouse, env: &[(&str, &str)]) -> Server {
    let url = ch.native_url();
    let mut all: Vec<(&str, &str)> = vec![("INGEST_CLICKHOUSE_URL", url.as_str())];
    all.extend_from_slice(env);
    let mut server = Server::new(&ch.http_addr(), &all);
    server.spawn();
    server
}

/// Posts `body` until it is answered `202`, waiting out `503 buffer_full` (it says when to
/// retry). Returns how many `503`s it took.
pub(crate) fn post_until_accepted(server: &Server, key: &str, body: &[u8]) -> usize {
    let mut refused = 0;
    loop {
        let r = server.post_ingest(key, body);
        match r.status {
            202 => return refused,
            503 if r.code() == "buffer_full" => {
                assert!(r.header("retry-after").is_some());
                refused += 1;
                assert!(refused < 600, "refused for a minute");
                std::thread::sleep(Duration::from_millis(100));
            }
            s => panic!("unexpected {s}: {}", String::from_utf8_lossy(&r.body)),
        }
    }
}

/// Segment files in the server's spool.
fn spool_segments(server: &Server) -> usize {
    std::fs::read_dir(server.data_dir().join("spool"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".seg"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn an_outage_spools_past_the_memory_bound_and_every_span_arrives_once() {
    const MEMORY: f64 = 262_144.0;
    let mut ch = PrivateClickHouse::start();
    let server = server_on(&ch, &[("INGEST_BUFFER_MAX_BYTES", "262144")]);
    let key = server.ready_key("org-outage");
    ch.stop();
    let mut accepted = 0;
    let mut peak = 0f64;
    for i in 0..50 {
        post_until_accepted(&server, &key, &batch(&format!("out{i}"), 2, 10));
        accepted += 20;
        peak = peak.max(server.metric_value("traceingest_buffered_bytes"));
    }
    assert!(peak <= MEMORY, "memory {peak} passed its bound {MEMORY}");
    assert!(
        server.metric_value("traceingest_spooled_rows_total") > 0.0,
        "the spool took what memory could not"
    );
    assert!(server.metric_value("traceingest_spool_bytes") > 0.0);
    wait_until("failed inserts retried", Duration::from_secs(30), || {
        server.metric_value("traceingest_flush_retries_total") > 0.0
    });

    ch.start_again();
    server.wait_rows_within(accepted, Duration::from_secs(60));
    assert_eq!(server.raw_count(), accepted, "every span once, even in raw");
    wait_until("an empty spool", Duration::from_secs(10), || {
        server.metric_value("traceingest_spool_rows") == 0.0 && spool_segments(&server) == 0
    });
    assert!(server.metric_value("traceingest_replayed_rows_total") > 0.0);
    assert_eq!(server.metric_value("traceingest_lost_rows_total"), 0.0);
}

#[test]
fn a_clean_stop_during_an_outage_spools_and_the_next_start_delivers() {
    let mut ch = PrivateClickHouse::start();
    let mut server = server_on(&ch, &[("INGEST_SHUTDOWN_TIMEOUT_MS", "10000")]);
    let key = server.ready_key("org-stop");
    ch.stop();
    let mut accepted = 0;
    for i in 0..20 {
        post_until_accepted(&server, &key, &batch(&format!("stop{i}"), 1, 5));
        accepted += 5;
    }
    server.signal(SIGTERM);
    let code = server.wait_exit(Duration::from_secs(30));
    assert_eq!(code, 0, "nothing was lost, so the stop is clean");
    assert!(spool_segments(&server) > 0, "the rows wait in the spool");

    // The service first (it waits for ClickHouse to create its schema), ClickHouse a moment
    // later.
    let starter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        ch.start_again();
        ch
    });
    server.spawn();
    let _ch = starter.join().unwrap();
    server.wait_rows_within(accepted, Duration::from_secs(60));
    assert_eq!(server.raw_count(), accepted);
    wait_until("an empty spool", Duration::from_secs(10), || {
        spool_segments(&server) == 0
    });
}

/// What the load of the `kill -9` test saw, per batch (one trace per batch, named by a tag).
#[derive(Default)]
struct Outcomes {
    /// Answered `202`.
    accepted: BTreeSet<String>,
    /// Sent, but the connection died before an answer: may or may not be stored.
    in_doubt: BTreeSet<String>,
}

#[test]
fn wal_mode_kill_9_under_load_keeps_every_span_answered_202_exactly_once() {
    const SPANS: usize = 5;
    let mut ch = PrivateClickHouse::start();
    let mut server = server_on(
        &ch,
        &[
            ("INGEST_DURABILITY", "wal"),
            ("INGEST_FLUSH_INTERVAL_MS", "50"),
        ],
    );
    let key = server.ready_key("org-wal");
    let outcomes = Arc::new(Mutex::new(Outcomes::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let senders: Vec<_> = (0..6)
        .map(|t| {
            let (addr, key, outcomes, stop) =
                (server.addr, key.clone(), outcomes.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                'connections: while !stop.load(Ordering::Relaxed) {
                    let Ok(s) = std::net::TcpStream::connect(addr) else {
                        return;
                    };
                    let mut c = Client::from_stream(s);
                    while !stop.load(Ordering::Relaxed) {
                        let tag = format!("wal{t}-{i}");
                        i += 1;
                        let sent = c.try_send(&ingest_request(&key, &batch(&tag, 1, SPANS)));
                        match c.try_read_response() {
                            Some(r) if r.status == 202 => {
                                outcomes
                                    .lock()
                                    .unwrap()
                                    .accepted
                                    .insert(format!("{tag}-t0"));
                            }
                            Some(r) => panic!("unexpected status {}", r.status),
                            None => {
                                if sent {
                                    outcomes
                                        .lock()
                                        .unwrap()
                                        .in_doubt
                                        .insert(format!("{tag}-t0"));
                                }
                                continue 'connections;
                            }
                        }
                    }
                }
            })
        })
        .collect();
    // Load with ClickHouse up (rows inserted and confirmed), then down (rows only in the log).
    wait_until("some accepted batches", Duration::from_secs(30), || {
        outcomes.lock().unwrap().accepted.len() >= 40
    });
    ch.stop();
    let before_kill = outcomes.lock().unwrap().accepted.len();
    wait_until("more accepted batches", Duration::from_secs(30), || {
        outcomes.lock().unwrap().accepted.len() >= before_kill + 40
    });
    server.signal(libc::SIGKILL);
    server.wait_exit(Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.join().unwrap();
    }
    let outcomes = std::mem::take(&mut *outcomes.lock().unwrap());
    let accepted_spans = (outcomes.accepted.len() * SPANS) as u64;

    ch.start_again();
    server.spawn();
    let stored_traces = || -> BTreeSet<String> {
        server
            .rows("DISTINCT trace_id", "")
            .into_iter()
            .map(|v| v["trace_id"].as_str().unwrap().to_string())
            .collect()
    };
    wait_until(
        "every batch answered 202 in the table",
        Duration::from_secs(60),
        || outcomes.accepted.is_subset(&stored_traces()),
    );
    // Then until the replay is over, in-doubt batches included.
    wait_until("an empty buffer and spool", Duration::from_secs(60), || {
        server.get("/health").json()["buffered"] == 0
    });
    let stored = stored_traces();
    for t in &stored {
        assert!(
            outcomes.accepted.contains(t) || outcomes.in_doubt.contains(t),
            "stored a batch that was never sent: {t}"
        );
    }
    // Exactly once: one row per span after deduplication, every span of every stored batch.
    let in_doubt_stored = stored.len() - outcomes.accepted.len();
    let expected = accepted_spans + (in_doubt_stored * SPANS) as u64;
    assert_eq!(server.count(), expected, "one row per span with FINAL");
    let distinct = server.ch_json(&format!(
        "SELECT uniqExact(trace_id, span_id) AS n FROM {}.spans FORMAT JSONEachRow",
        server.database
    ));
    let n = &distinct[0]["n"];
    let distinct: u64 = n
        .as_str()
        .map_or_else(|| n.as_u64().unwrap(), |s| s.parse().unwrap());
    assert_eq!(distinct, expected, "every span of every stored batch");
    let raw = server.raw_count();
    eprintln!(
        "kill -9: {} batches answered 202, {} in doubt ({} stored), {expected} spans, {raw} raw rows",
        outcomes.accepted.len(),
        outcomes.in_doubt.len(),
        in_doubt_stored
    );
    assert!(raw >= expected);
}

#[test]
fn a_full_spool_answers_503_with_retry_after_and_keeps_what_it_accepted() {
    let mut ch = PrivateClickHouse::start();
    let server = server_on(
        &ch,
        &[
            ("INGEST_BUFFER_MAX_BYTES", "65536"),
            ("INGEST_SPOOL_MAX_BYTES", "65536"),
        ],
    );
    let key = server.ready_key("org-full");
    assert_eq!(server.get("/ready").status, 200);
    ch.stop();
    // Send until memory and spool are both full (`/ready` says `buffer_full`). A 503 before
    // that is memory waiting for the flush thread (an insert attempt in flight), not yet a full
    // spool: wait and go on. (`/ready` may say `not_ready` meanwhile: the spool is over 90%, or
    // ClickHouse has been unreachable for a while.)
    let mut accepted = 0;
    for i in 0.. {
        assert!(i < 2000, "memory and spool never filled up");
        let r = server.post_ingest(&key, &batch(&format!("full{i}"), 1, 10));
        match r.status {
            202 => accepted += 10,
            503 if server.get("/ready").code() == "buffer_full" => break,
            503 => std::thread::sleep(Duration::from_millis(50)),
            s => panic!("unexpected {s}"),
        }
    }
    let refusal = server.post_ingest(&key, &batch("refused", 1, 10));
    assert_eq!(refusal.status, 503);
    assert_eq!(refusal.code(), "buffer_full");
    assert_eq!(refusal.header("retry-after"), Some("1"));
    // OTLP/HTTP says the same its own way: 503, `Retry-After`, `UNAVAILABLE`. (A small
    // export may still fit where the batch did not: sent until one is refused.)
    let refused = (0..50).find_map(|i: u32| {
        // Span ids of their own per export: the same ids would be the same spans.
        let ids: Vec<String> = (1..=10).map(|s| format!("{i:08x}{s:08x}")).collect();
        let spans: Vec<(&str, u64, u64)> = ids
            .iter()
            .map(|id| (id.as_str(), crate::otlp::T0, crate::otlp::T0 + 1))
            .collect();
        let export = crate::otlp::json_export(&spans);
        let r = crate::otlp::post(&server, &key, crate::otlp::JSON, &[], &export);
        match r.status {
            200 => {
                accepted += 10;
                None
            }
            _ => Some(r),
        }
    });
    let r = refused.expect("an export refused while memory and spool are full");
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.json()["code"], 14, "UNAVAILABLE");
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("(buffer_full)"),
        "{}",
        r.json()
    );
    assert!(accepted > 0);
    let ready = server.get("/ready");
    assert_eq!(ready.status, 503, "not ready while full");
    assert_eq!(ready.code(), "buffer_full");
    assert_eq!(server.metric_value("traceingest_buffer_full"), 1.0);
    assert!(server.metric_value("traceingest_spool_bytes") > 0.0);

    ch.start_again();
    server.wait_rows_within(accepted, Duration::from_secs(60));
    wait_until("ready again", Duration::from_secs(30), || {
        server.get("/ready").status == 200
    });
    // And it takes batches again.
    assert_eq!(server.post_ingest(&key, &batch("after", 1, 3)).status, 202);
    server.wait_rows_within(accepted + 3, Duration::from_secs(30));
    assert_eq!(server.raw_count(), accepted + 3);
}

/// In write-ahead mode a batch the log refuses (spool full) gets its rate-limit credit and its
/// quota back: refusals never turn into `429`, and once ClickHouse has the rows the
/// organisation can still send exactly up to its hard limit.
#[test]
fn wal_refusals_give_back_rate_limit_and_quota() {
    // 300 spans a month (hard limit 330), 20 spans/s per key in bursts of 200.
    let mut ch = PrivateClickHouse::start();
    let server = server_on(
        &ch,
        &[
            ("INGEST_DURABILITY", "wal"),
            ("INGEST_SPOOL_MAX_BYTES", "65536"),
            ("INGEST_PLANS", "q:300:20:200"),
            ("INGEST_DEFAULT_PLAN", "q"),
        ],
    );
    let key = server.ready_key("org-walq");
    ch.stop();
    let mut accepted = 0;
    let mut refused = 0;
    let mut i = 0;
    // Until the log is full, then 40 batches more: without the refunds these would run into
    // the rate limit (after 5) and the quota.
    while refused < 40 {
        assert!(i < 500, "the write-ahead log never filled up");
        let r = server.post_ingest(&key, &batch(&format!("walq{i}"), 1, 10));
        i += 1;
        match (r.status, r.code().as_str()) {
            (202, _) => {
                assert_eq!(refused, 0, "accepted after a refusal: the log was not full");
                accepted += 10;
            }
            (503, "buffer_full") => {
                assert_eq!(r.header("retry-after"), Some("1"));
                refused += 1;
            }
            (s, c) => panic!("unexpected {s} {c} after {accepted} spans and {refused} refusals"),
        }
    }
    assert!(accepted > 0 && accepted < 300, "{accepted}");

    ch.start_again();
    server.wait_rows_within(accepted, Duration::from_secs(60));
    // The refused batches took nothing: the organisation reaches exactly its hard limit.
    let mut more = 0;
    loop {
        let r = server.post_ingest(&key, &batch(&format!("walq{i}"), 1, 10));
        i += 1;
        match (r.status, r.code().as_str()) {
            (202, _) => more += 10,
            (429, "quota_exceeded") => break,
            (503, "buffer_full") => std::thread::sleep(Duration::from_millis(100)),
            (429, "rate_limited") => std::thread::sleep(Duration::from_millis(500)),
            (s, c) => panic!("unexpected {s} {c}"),
        }
        assert!(accepted + more <= 330, "past the hard limit");
    }
    assert_eq!(accepted + more, 330, "{accepted} + {more}");
    server.wait_rows_within(330, Duration::from_secs(30));
}
