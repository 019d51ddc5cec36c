//! How a connection reads and checks a request's key: malformed keys get their precise `401`
//! (never a `500`, a panic or a closed connection) and never come back in the answer, and a
//! key revoked between two requests of one kept-alive connection (HTTP/1.1 or gRPC) is
//! refused on the second.

use std::io::{Read as _, Write as _};

use super::*;

const BODY: &[u8] = br#"{"version":"v1","traces":[{"traceId":"t","traceName":"n","spans":[{"spanId":"s","spanType":"other","name":"x","startTime":1,"endTime":2}]}]}"#;

/// Puts `key` in the key set (or an empty set).
fn set_keys(shared: &Shared, key: Option<&str>) {
    let mut set = crate::auth::KeySet::default();
    if let Some(key) = key {
        let principal = Arc::new(Principal::unlimited("org-a", ""));
        set.insert(crate::auth::hash_key(key.as_bytes()), principal);
    }
    shared.keys.replace(set, crate::clock::now_ms(), true);
}

/// A server of one worker on a port of its own.
struct Server {
    shared: Arc<Shared>,
    workers: crate::server::runtime::Workers,
    addr: std::net::SocketAddr,
    /// Where the rows go: nowhere, the test looks at the answers only.
    _input: crate::sink::flush::Input,
}

impl Server {
    fn start() -> Server {
        let shared = Arc::new(Shared::for_bench());
        let (tx, input) = crate::sink::flush::Input::buffer(&shared.budget);
        let handoff = crate::sink::Handoff::buffer(shared.budget.clone(), tx);
        let (listeners, addr) =
            crate::server::runtime::bind("127.0.0.1:0".parse().unwrap(), 1).expect("a listener");
        let workers =
            crate::server::runtime::spawn_workers(listeners, shared.clone(), handoff).unwrap();
        Server {
            shared,
            workers,
            addr,
            _input: input,
        }
    }

    fn stop(mut self) {
        self.shared.draining.store(true, Ordering::Release);
        self.workers.drain();
        self.workers.join();
    }
}

/// One answer read off `c`: its status line and body (by `Content-Length`).
fn read_answer(c: &mut std::net::TcpStream) -> (String, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        // `read_exact` goes on after an interrupted read (a signal to the test's thread).
        if c.read_exact(&mut byte).is_err() {
            return (String::from_utf8_lossy(&head).into_owned(), String::new());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; len];
    c.read_exact(&mut body).unwrap();
    let status = head.lines().next().unwrap_or("").to_string();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Sends one `/ingest` request with `headers` (raw bytes, each line without its CRLF) on `c`.
fn send(c: &mut std::net::TcpStream, headers: &[Vec<u8>]) {
    let mut request =
        b"POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".to_vec();
    for h in headers {
        request.extend_from_slice(h);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", BODY.len()).as_bytes());
    request.extend_from_slice(BODY);
    c.write_all(&request).unwrap();
}

fn connect(addr: std::net::SocketAddr) -> std::net::TcpStream {
    let c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c
}

/// Every malformed or missing key, in either header or both, is a `401` with the code the
/// README's table gives, on a connection that stays open for the next request, and the
/// answer never repeats what was sent as the key.
#[test]
fn malformed_keys_get_their_401_and_the_connection_stays() {
    let server = Server::start();
    let key = crate::auth::generate_key(&server.shared.config.key_prefix).unwrap();
    set_keys(&server.shared, Some(&key));
    let other = crate::auth::generate_key(&server.shared.config.key_prefix).unwrap();
    let h = |s: &str| s.as_bytes().to_vec();
    let raw = |name: &str, value: &[u8]| {
        let mut line = format!("{name}: ").into_bytes();
        line.extend_from_slice(value);
        line
    };
    let long = format!("ti_{}", "A".repeat(8000));
    let mut non_ascii = key.clone().into_bytes();
    non_ascii[20] = 0xc3;
    non_ascii[21] = 0xa9;
    let cases: Vec<(&str, Vec<Vec<u8>>, &str, &str)> = vec![
        ("no key", vec![], "401", "missing_api_key"),
        (
            "empty x-api-key",
            vec![h("x-api-key:")],
            "401",
            "missing_api_key",
        ),
        (
            "blank x-api-key",
            vec![h("x-api-key:    ")],
            "401",
            "missing_api_key",
        ),
        (
            "empty Authorization",
            vec![h("Authorization:")],
            "401",
            "missing_api_key",
        ),
        (
            "Bearer without a key",
            vec![h("Authorization: Bearer")],
            "401",
            "missing_api_key",
        ),
        (
            "Bearer and spaces",
            vec![h("Authorization: Bearer    ")],
            "401",
            "missing_api_key",
        ),
        (
            "Basic",
            vec![h("Authorization: Basic dXNlcjpwYXNz")],
            "401",
            "invalid_authorization_scheme",
        ),
        (
            "a bare key in Authorization",
            vec![h(&format!("Authorization: {key}"))],
            "401",
            "invalid_authorization_scheme",
        ),
        (
            "a very long key",
            vec![h(&format!("x-api-key: {long}"))],
            "401",
            "invalid_api_key",
        ),
        (
            "a very long bearer",
            vec![h(&format!("Authorization: Bearer {long}"))],
            "401",
            "invalid_api_key",
        ),
        (
            "non-ASCII",
            vec![raw("x-api-key", &non_ascii)],
            "401",
            "invalid_api_key",
        ),
        (
            "obs-text",
            vec![raw("x-api-key", &[0xff; 46])],
            "401",
            "invalid_api_key",
        ),
        (
            "one character short",
            vec![h(&format!("x-api-key: {}", &key[..key.len() - 1]))],
            "401",
            "invalid_api_key",
        ),
        (
            "another prefix",
            vec![h(&format!("x-api-key: tk_{}", &key[3..]))],
            "401",
            "invalid_api_key",
        ),
        (
            "unknown, well-formed",
            vec![h(&format!("x-api-key: {other}"))],
            "401",
            "invalid_api_key",
        ),
        (
            "Bearer in x-api-key",
            vec![h(&format!("x-api-key: Bearer {key}"))],
            "401",
            "invalid_api_key",
        ),
        (
            "an unknown bearer wins over a known x-api-key",
            vec![
                h(&format!("Authorization: Bearer {other}")),
                h(&format!("x-api-key: {key}")),
            ],
            "401",
            "invalid_api_key",
        ),
        (
            "Basic wins over a known x-api-key",
            vec![
                h("Authorization: Basic abc"),
                h(&format!("x-api-key: {key}")),
            ],
            "401",
            "invalid_authorization_scheme",
        ),
        (
            "a known bearer wins over an unknown x-api-key",
            vec![
                h(&format!("Authorization: bEaReR \t {key} ")),
                h(&format!("x-api-key: {other}")),
            ],
            "202",
            "accepted",
        ),
    ];
    let mut c = connect(server.addr);
    let mut failures = Vec::new();
    for (what, headers, status, code) in &cases {
        send(&mut c, headers);
        let (line, body) = read_answer(&mut c);
        if !line.contains(&format!(" {status} ")) || !body.contains(code) {
            failures.push(format!("{what}: {line} {body}"));
        }
        for sent in [key.as_str(), other.as_str(), "ti_AAAAAAAA", "dXNlcjpwYXNz"] {
            if body.contains(sent) {
                failures.push(format!("{what}: the answer repeats the key: {body}"));
            }
        }
        if line.is_empty() {
            // Closed: go on with another connection.
            c = connect(server.addr);
        }
    }
    server.stop();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A kept-alive connection whose key is revoked between two requests: the second is refused.
#[test]
fn a_key_revoked_between_two_requests_of_a_kept_alive_connection_is_refused() {
    let server = Server::start();
    let key = crate::auth::generate_key(&server.shared.config.key_prefix).unwrap();
    set_keys(&server.shared, Some(&key));
    let header = format!("x-api-key: {key}").into_bytes();
    let mut c = connect(server.addr);
    send(&mut c, std::slice::from_ref(&header));
    let first = read_answer(&mut c).0;
    set_keys(&server.shared, None);
    send(&mut c, std::slice::from_ref(&header));
    let second = read_answer(&mut c).0;
    server.stop();
    assert_eq!(first, "HTTP/1.1 202 Accepted");
    assert_eq!(second, "HTTP/1.1 401 Unauthorized");
}
