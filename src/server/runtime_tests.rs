//! Tests of the workers' stop: what a worker leaves behind when its drain ends.

use std::io::{Read as _, Write as _};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{KeySet, Principal};
use crate::server::Shared;
use crate::sink::Handoff;

/// A server of one worker whose shutdown timeout is `timeout`, with one valid key, handing its
/// batches to a write-ahead channel the test holds (no write-ahead thread answers them).
fn wal_worker(
    timeout: Duration,
) -> (
    Arc<Shared>,
    String,
    crossbeam_channel::Receiver<crate::sink::wal::WalRequest>,
    super::Workers,
    std::net::SocketAddr,
) {
    let mut shared = Shared::for_bench();
    shared.config.shutdown_timeout = timeout;
    let shared = Arc::new(shared);
    let key = crate::auth::generate_key(&shared.config.key_prefix).unwrap();
    let mut set = KeySet::default();
    set.insert(
        crate::auth::hash_key(key.as_bytes()),
        Arc::new(Principal::unlimited("org-a", "")),
    );
    shared.keys.replace(set, crate::clock::now_ms(), true);
    let (tx, rx) = crossbeam_channel::unbounded();
    let handoff = Handoff::wal(shared.budget.clone(), tx);
    let (listeners, addr) = super::bind("127.0.0.1:0".parse().unwrap(), 1).unwrap();
    let workers = super::spawn_workers(listeners, shared.clone(), handoff).unwrap();
    (shared, key, rx, workers, addr)
}

const BODY: &[u8] = br#"{"version":"v1","traces":[{"traceId":"t","traceName":"n","spans":[{"spanId":"s","spanType":"other","name":"x","startTime":1,"endTime":2}]}]}"#;

/// Found in the drain audit: a request still waiting for its fsync when the drain's time was
/// up (a disk that stalls for longer than a third of the shutdown timeout) was left pending
/// when the worker's runtime ended; monoio drops no pending task then, so the task kept the
/// worker, and with it the worker's sender to the write-ahead thread (in `buffer` mode, to the
/// flush thread), forever. That thread never learned intake was over: the process hung in its
/// stop until the watchdog's exit 2, and in `buffer` mode every accepted row still in memory
/// was lost with it. Once a worker's thread has ended, its sender is gone, whatever it left.
#[test]
fn a_request_waiting_for_its_fsync_at_the_cut_off_does_not_keep_the_workers_sender() {
    let (shared, key, wal, mut workers, addr) = wal_worker(Duration::from_millis(300));
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    write!(
        c,
        "POST /ingest HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        BODY.len()
    )
    .unwrap();
    c.write_all(BODY).unwrap();
    // The batch is with the (held) write-ahead log: the request waits for its fsync.
    let held = wal
        .recv_timeout(Duration::from_secs(10))
        .expect("the batch");
    shared.draining.store(true, Ordering::Release);
    workers.drain();
    workers.join();
    assert!(
        matches!(
            wal.try_recv(),
            Err(crossbeam_channel::TryRecvError::Disconnected)
        ),
        "the worker's thread ended and its sender with it"
    );
    // Its client was not told the batch was accepted: its connection is closed or open, never
    // answered 2xx.
    c.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 2"), "{answer:?}");
    drop(held);
}
