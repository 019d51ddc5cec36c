//! Keep-alive, pipelining and many concurrent connections.

use serde_json::json;

use crate::support::*;

#[test]
fn keep_alive_and_pipelined_requests_are_answered_in_order() {
    let server = Server::start();
    let key = server.ready_key("org-pipe");
    let mut c = server.connect();
    // Keep-alive: three requests one after another on one connection.
    for i in 0..3 {
        c.send(&ingest_request(&key, &batch(&format!("ka{i}"), 1, i + 1)));
        let r = c.read_response();
        assert_eq!(r.json(), json!({"accepted": i + 1}));
    }
    // Pipelined: four requests in one write, one of them bad; answers come back in order.
    let mut all = Vec::new();
    all.extend(ingest_request(&key, &batch("p0", 1, 1)));
    all.extend(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    all.extend(ingest_request(&key, b"[1,2"));
    all.extend(ingest_request(&key, &batch("p3", 2, 2)));
    c.send(&all);
    assert_eq!(c.read_response().json(), json!({"accepted": 1}));
    assert_eq!(c.read_response().json()["status"], "ok");
    assert_eq!(c.read_response().status, 400);
    assert_eq!(c.read_response().json(), json!({"accepted": 4}));
    server.wait_rows(6 + 1 + 4);
}

#[test]
fn many_connections_at_once() {
    let server = Server::start();
    let key = server.ready_key("org-many");
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let addr = server.addr;
            let key = key.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..5 {
                    c.send(&ingest_request(&key, &batch(&format!("m{t}-{i}"), 2, 3)));
                    assert_eq!(c.read_response().status, 202);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    server.wait_rows(32 * 5 * 6);
}

#[test]
fn malformed_request_gets_400_and_close() {
    let server = Server::start();
    let mut c = server.connect();
    c.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
    let r = c.read_response();
    assert_eq!((r.status, r.code().as_str()), (400, "bad_request"));
    assert!(c.is_closed());
    let mut c = server.connect();
    c.send(b"NOT HTTP AT ALL\r\n\r\n");
    assert_eq!(c.read_response().status, 400);
    assert!(c.is_closed());
}
