//! A real ClickHouse for tests: a throwaway database per test and a raw HTTP reader.

use std::io::{Read, Write};
use std::net::TcpStream;

pub const NATIVE_URL: &str = "tcp://127.0.0.1:9000";
const HTTP_ADDR: &str = "127.0.0.1:8123";

/// True when the tests must skip ClickHouse (env `TI_SKIP_CLICKHOUSE`); says so.
pub fn skip() -> bool {
    if std::env::var_os("TI_SKIP_CLICKHOUSE").is_some() {
        eprintln!("TI_SKIP_CLICKHOUSE is set: skipping a test that needs ClickHouse");
        return true;
    }
    false
}

/// Runs one query over HTTP; panics on failure. Returns the response body.
pub fn http_query(sql: &str) -> String {
    let mut s = TcpStream::connect(HTTP_ADDR)
        .unwrap_or_else(|e| panic!("ClickHouse HTTP at {HTTP_ADDR} unreachable: {e}"));
    let head = format!(
        "POST / HTTP/1.0\r\nHost: {HTTP_ADDR}\r\nContent-Length: {}\r\n\r\n",
        sql.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(sql.as_bytes()).unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).expect("UTF-8 response");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "query {sql:?} failed: {head}\n{body}"
    );
    body.to_string()
}

/// Rows of a `FORMAT JSONEachRow` query.
pub fn json_rows(sql: &str) -> Vec<serde_json::Value> {
    http_query(&format!("{sql} FORMAT JSONEachRow"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON row"))
        .collect()
}

pub fn count(sql: &str) -> u64 {
    http_query(sql).trim().parse().expect("a count")
}

/// A database name unique to this test and process, dropped (with its tables) on drop.
pub struct TestDb(pub String);

impl TestDb {
    pub fn new(test: &str) -> TestDb {
        let name = format!("ti_sink_test_{test}_{}", std::process::id());
        http_query(&format!("DROP DATABASE IF EXISTS `{name}`"));
        TestDb(name)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| {
            http_query(&format!("DROP DATABASE IF EXISTS `{}`", self.0))
        });
    }
}

pub use crate::row::test_rows::{batch, batch_then, row};

/// A current-thread tokio runtime for the `Store`'s async calls.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
