//! API keys as a new user meets them: a key works on the request right after `keys create`
//! returns, and a flood of unknown keys costs ClickHouse a bounded number of key-set loads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use traceingest::auth::generate_key;

use crate::support::*;

const ON_DEMAND: &str = "traceingest_key_refreshes_on_demand_total";
/// Key-set loads that read every key (the others found the tables unchanged).
const REBUILDS: &str = "traceingest_key_set_rebuilds_total";

#[test]
fn a_key_created_while_the_server_runs_works_on_its_first_request() {
    // The longest periodic refresh: without an early one, a new key would wait up to 1 s.
    let server = Server::start_with(&[("INGEST_KEY_REFRESH_MS", "1000")]);
    let before = server.metric(ON_DEMAND).unwrap();
    let mut slowest = Duration::ZERO;
    for i in 0..5 {
        let key = server.create_key(&format!("org-new-{i}"));
        let sent = Instant::now();
        let r = server.post_ingest(&key, &batch(&format!("new{i}"), 1, 2));
        slowest = slowest.max(sent.elapsed());
        assert_eq!(
            r.status,
            202,
            "a new key on its first request: {:?}",
            r.json()
        );
    }
    server.wait_rows(10);
    let early = server.metric(ON_DEMAND).unwrap() - before;
    println!("5 new keys: slowest first request {slowest:?}, {early} early key-set loads");
    // Without an early load the first request would have been refused (401); the time it took
    // is printed, not asserted: it depends on the machine's load.
    assert!(early >= 1.0, "the new keys came in through early loads");
}

#[test]
fn a_flood_of_unknown_keys_makes_a_bounded_number_of_key_set_loads() {
    let server = Server::start_with(&[("INGEST_KEY_REFRESH_MS", "1000")]);
    let before = server.metric(ON_DEMAND).unwrap();
    let rebuilds_before = server.metric_value(REBUILDS);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let slowest_us = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let senders: Vec<_> = (0..32)
        .map(|_| {
            let (addr, stop, sent, slowest_us) =
                (server.addr, stop.clone(), sent.clone(), slowest_us.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                while !stop.load(Ordering::Relaxed) {
                    // A different well-formed key every time: nothing can be remembered.
                    let key = generate_key("ti_").unwrap();
                    let t = Instant::now();
                    c.send(&ingest_request(&key, b"{}"));
                    let r = c.read_response();
                    slowest_us.fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                    assert_eq!((r.status, r.code().as_str()), (401, "invalid_api_key"));
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.join().unwrap();
    }
    let elapsed = started.elapsed();
    let loads = server.metric(ON_DEMAND).unwrap() - before;
    let rebuilds = server.metric_value(REBUILDS) - rebuilds_before;
    let sent = sent.load(Ordering::Relaxed);
    let slowest = Duration::from_micros(slowest_us.load(Ordering::Relaxed));
    println!(
        "{sent} requests with random keys in {elapsed:?}: {loads} early key-set loads \
         ({rebuilds} read every key), slowest answer {slowest:?}"
    );
    // The tables did not change: the loads looked at their parts and kept the set. (Only a
    // mutation, a removal or the table made again, or the set 10 minutes without a read of
    // every key, would read them all; none happens here.)
    assert_eq!(rebuilds, 0.0, "key-set reads of every key during the flood");
    // At most one early load per 100 ms, however many ask.
    let bound = (elapsed.as_secs_f64() / 0.1).ceil() + 1.0;
    assert!(
        loads <= bound,
        "{loads} early loads in {elapsed:?} (bound {bound})"
    );
    assert!(loads >= 1.0);
    assert!(
        sent as f64 > 4.0 * loads,
        "{sent} requests shared {loads} loads"
    );
    // Each waits at most 500 ms for its load, plus scheduling on a loaded test machine.
    assert!(slowest < Duration::from_millis(1500), "{slowest:?}");

    // A real key still works at once after the flood.
    let key = server.create_key("org-after-flood");
    assert_eq!(server.post_ingest(&key, &batch("after", 1, 1)).status, 202);
}
