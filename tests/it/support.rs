//! One helper to start the real server on a free port with its own database, a raw HTTP
//! client, and a ClickHouse reader over its HTTP interface.
//!
//! Each server's log (its stderr) goes to a file of its own, which is printed only if the test
//! that owns the server fails, so a passing run shows no server output.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_traceingest");
pub const CH_HTTP: &str = "127.0.0.1:8123";

static NEXT_DB: AtomicUsize = AtomicUsize::new(0);

/// A running server with its own database and data directory. Killed, its database dropped
/// and its data directory removed on drop.
pub struct Server {
    pub child: Option<Child>,
    pub addr: SocketAddr,
    /// The admin listener (`/metrics`, `/health`, `/ready`), on a port of its own.
    pub admin: SocketAddr,
    pub database: String,
    /// `INGEST_DATA_DIR`: spool, write-ahead log, dead letters. Kept across `spawn`s.
    pub data_dir: PathBuf,
    /// The server's stderr, appended to by every `spawn`; printed on drop if the test failed.
    pub log_path: PathBuf,
    /// ClickHouse's HTTP interface for reading rows back.
    ch_http: String,
    env: Vec<(String, String)>,
    /// `RLIMIT_FSIZE` for the next `spawn`, with `SIGXFSZ` ignored: a write past it fails
    /// with `EFBIG`, as on a full disk (`set_file_size_limit`).
    file_size_limit: Option<u64>,
}

impl Server {
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts `traceingest serve` with extra `INGEST_*` settings, on the shared ClickHouse.
    pub fn start_with(env: &[(&str, &str)]) -> Server {
        let mut server = Server::new(CH_HTTP, env);
        server.spawn();
        server
    }

    /// A server whose ClickHouse is at `native_url`/`ch_http`, not started yet (`spawn`).
    pub fn new(ch_http: &str, env: &[(&str, &str)]) -> Server {
        let n = NEXT_DB.fetch_add(1, Ordering::Relaxed);
        let database = format!("ti_it_{}_{n}", std::process::id());
        let _ = try_ch_exec(ch_http, &format!("DROP DATABASE IF EXISTS {database}"));
        let data_dir =
            std::env::temp_dir().join(format!("traceingest-it-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        let log_path =
            std::env::temp_dir().join(format!("traceingest-it-{}-{n}.log", std::process::id()));
        let _ = std::fs::remove_file(&log_path);
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env.push(("INGEST_CLICKHOUSE_DATABASE".into(), database.clone()));
        env.push(("INGEST_DATA_DIR".into(), data_dir.display().to_string()));
        Server {
            child: None,
            addr: "127.0.0.1:0".parse().unwrap(),
            admin: "127.0.0.1:0".parse().unwrap(),
            database,
            data_dir,
            log_path,
            ch_http: ch_http.to_string(),
            env,
            file_size_limit: None,
        }
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// What the server has logged so far (every run of it).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        cmd.env("INGEST_HOST", "127.0.0.1")
            .env("INGEST_PORT", "0")
            .env("INGEST_ADMIN_ADDR", "127.0.0.1:0")
            .env("INGEST_FLUSH_INTERVAL_MS", "100")
            .env("INGEST_WORKERS", "2")
            // The contract's default of 100 spans/s per key would throttle the other tests'
            // bursts; the admission tests set their own limits.
            .env("INGEST_RATE_LIMIT_RPS", "unlimited")
            .env("INGEST_LOG", "warn");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// (Re)starts the process and waits for its "listening on" and "admin on" lines.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("create the server's log file");
        let mut cmd = self.command(&["serve"]);
        if let Some(limit) = self.file_size_limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs in the forked child before exec and calls only
            // async-signal-safe functions (signal(2), setrlimit(2)); it touches no memory the
            // parent's other threads could hold locked.
            unsafe {
                cmd.pre_exec(move || {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let lim = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start traceingest");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let Some(line) = lines.next() else {
            panic!("server exited before listening; its log:\n{}", self.log());
        };
        let line = line.expect("read server stdout");
        let url = line
            .strip_prefix("traceingest listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"));
        self.addr = url.parse().unwrap();
        let line = lines
            .next()
            .expect("server exited before its admin line")
            .expect("read server stdout");
        let url = line
            .strip_prefix("traceingest admin on http://")
            .unwrap_or_else(|| panic!("unexpected second line: {line}"));
        self.admin = url.parse().unwrap();
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        self.child = Some(child);
    }

    /// From the next `spawn` on, no file the server writes may grow past `bytes`: the write
    /// that would fails (`EFBIG`), as writes fail on a full disk.
    pub fn set_file_size_limit(&mut self, bytes: u64) {
        self.file_size_limit = Some(bytes);
    }

    /// Sets (or replaces) a setting for the next `spawn`.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
    }

    /// `GET path` on a new connection.
    pub fn get(&self, path: &str) -> Response {
        let mut c = self.connect();
        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        c.read_response()
    }

    /// `GET path` on a new connection to the admin listener.
    pub fn get_admin(&self, path: &str) -> Response {
        let mut c = Client::connect(self.admin);
        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        c.read_response()
    }

    /// The `/metrics` text, from the admin listener.
    pub fn metrics_text(&self) -> String {
        let r = self.get_admin("/metrics");
        assert_eq!(r.status, 200, "/metrics on the admin listener");
        String::from_utf8(r.body).unwrap()
    }

    /// The value of an unlabelled (or fully labelled) series in `/metrics`, if present.
    pub fn metric(&self, series: &str) -> Option<f64> {
        self.metrics_text()
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// `metric`, which must be there: panics with the whole `/metrics` text when it is not.
    pub fn metric_value(&self, series: &str) -> f64 {
        self.metric(series)
            .unwrap_or_else(|| panic!("no metric {series} in:\n{}", self.metrics_text()))
    }

    /// Key sets loaded and put in place so far (`traceingest_key_set_loads_total`).
    pub fn key_loads(&self) -> f64 {
        self.metric_value("traceingest_key_set_loads_total")
    }

    /// Waits (a minute at most) until `key_loads` reaches `target`.
    pub fn wait_key_loads(&self, target: f64) {
        wait_until(
            &format!("{target} key-set loads"),
            Duration::from_secs(60),
            || self.key_loads() >= target,
        );
    }

    /// Runs a management command of the same binary against this server's database.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().expect("run traceingest")
    }

    /// `reprice` of the spans that start on 2026-07-30 (the day the re-pricing tests' spans
    /// start) with the prices of `file`, and `extra` arguments; checks it succeeded and
    /// returns what it printed.
    pub fn reprice_day(&self, file: &std::path::Path, extra: &[&str]) -> String {
        let file = file.to_str().unwrap();
        let mut args = vec![
            "reprice",
            "--from",
            "2026-07-30",
            "--to",
            "2026-07-31",
            "--file",
            file,
        ];
        args.extend_from_slice(extra);
        let out = self.cli(&args);
        assert!(
            out.status.success(),
            "reprice failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Creates a key for `org` and returns it.
    pub fn create_key(&self, org: &str) -> String {
        let out = self.cli(&["keys", "create", "--org", org]);
        assert!(
            out.status.success(),
            "keys create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "the key must be alone on stdout: {stdout:?}"
        );
        lines[0].to_string()
    }

    /// Creates a key and waits until the server accepts it (key refresh is periodic).
    pub fn ready_key(&self, org: &str) -> String {
        let key = self.create_key(org);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let r = self.post_ingest(&key, br#"{}"#);
            if r.status != 401 {
                return key;
            }
            assert!(Instant::now() < deadline, "key never became active");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until this server accepts a key created elsewhere (another replica's refresh).
    pub fn ready_key_existing(&self, key: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.post_ingest(key, br#"{}"#).status == 401 {
            assert!(Instant::now() < deadline, "key never became active");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// One request on a new connection.
    pub fn post_ingest(&self, key: &str, body: &[u8]) -> Response {
        let mut c = self.connect();
        c.send(&ingest_request(key, body));
        c.read_response()
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of our own child process.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }

    /// Waits for the process to exit and returns its exit code.
    pub fn wait_exit(&mut self, within: Duration) -> i32 {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut().unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "server did not exit in {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Rows of `spans` (deduplicated with FINAL) for a query suffix like `WHERE ...`.
    pub fn rows(&self, columns: &str, rest: &str) -> Vec<Value> {
        self.ch_json(&format!(
            "SELECT {columns} FROM {}.spans FINAL {rest} FORMAT JSONEachRow",
            self.database
        ))
    }

    /// Rows after deduplication (`FINAL`).
    pub fn count(&self) -> u64 {
        self.count_query("FINAL")
    }

    /// Rows as stored, duplicates included.
    pub fn raw_count(&self) -> u64 {
        self.count_query("")
    }

    /// Runs a `FORMAT JSONEachRow` query on this server's ClickHouse.
    pub fn ch_json(&self, sql: &str) -> Vec<Value> {
        parse_json_lines(&ch_exec_at(&self.ch_http, sql))
    }

    /// Runs a statement on this server's ClickHouse.
    pub fn ch_exec(&self, sql: &str) -> String {
        ch_exec_at(&self.ch_http, sql)
    }

    fn count_query(&self, modifier: &str) -> u64 {
        let v = self.ch_json(&format!(
            "SELECT count() AS n FROM {}.spans {modifier} FORMAT JSONEachRow",
            self.database
        ));
        v[0]["n"]
            .as_str()
            .map(|s| s.parse().unwrap())
            .or(v[0]["n"].as_u64())
            .unwrap()
    }

    /// Waits until `spans` holds `n` rows (flushes are periodic).
    pub fn wait_rows(&self, n: u64) {
        self.wait_rows_within(n, Duration::from_secs(20));
    }

    /// Waits until `spans` holds `n` rows, for at most `within`.
    pub fn wait_rows_within(&self, n: u64, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let have = self.count();
            if have == n {
                return;
            }
            assert!(have < n, "more rows than expected: {have} > {n}");
            assert!(Instant::now() < deadline, "only {have} of {n} rows arrived");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub use libc::SIGTERM;

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "---- log of the server on {} (database {}) ----\n{}---- end of log ----",
                self.addr,
                self.database,
                self.log()
            );
        }
        let _ = std::fs::remove_file(&self.log_path);
        // A private ClickHouse may be stopped (or gone) by now: then there is nothing to drop.
        let _ = try_ch_exec(
            &self.ch_http,
            &format!("DROP DATABASE IF EXISTS {}", self.database),
        );
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// Polls `cond` every 50 ms until it holds; panics after `within`.
pub fn wait_until(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A raw HTTP/1.1 request to `/ingest`.
pub fn ingest_request(key: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or("").to_string()
    }
}

/// A raw TCP client that reads HTTP/1.1 responses with Content-Length.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        Client::from_stream(TcpStream::connect(addr).expect("connect"))
    }

    pub fn from_stream(stream: TcpStream) -> Client {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Sends, reporting whether the server still took the bytes.
    pub fn try_send(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// Reads one response; panics if the connection closes first.
    pub fn read_response(&mut self) -> Response {
        self.try_read_response()
            .expect("connection closed before a response")
    }

    pub fn try_read_response(&mut self) -> Option<Response> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head = String::from_utf8(self.buf[..end].to_vec()).unwrap();
                let mut lines = head.split("\r\n");
                let status_line = lines.next().unwrap();
                let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
                let headers: Vec<(String, String)> = lines
                    .map(|l| {
                        let (k, v) = l.split_once(':').unwrap();
                        (k.trim().to_string(), v.trim().to_string())
                    })
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .map_or(0, |(_, v)| v.parse().unwrap());
                if status == 100 {
                    self.buf.drain(..end + 4);
                    continue;
                }
                while self.buf.len() < end + 4 + len {
                    if !self.fill() {
                        return None;
                    }
                }
                let body = self.buf[end + 4..end + 4 + len].to_vec();
                self.buf.drain(..end + 4 + len);
                return Some(Response {
                    status,
                    headers,
                    body,
                });
            }
            if !self.fill() {
                return None;
            }
        }
    }

    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 65536];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// True when the server closed the connection (EOF or reset) with nothing more to read;
    /// false if bytes arrive or the read times out with the connection still open.
    pub fn is_closed(&mut self) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk) {
            Ok(0) => true,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                false
            }
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Runs a statement through the HTTP interface at `addr`; panics on failure.
pub fn ch_exec_at(addr: &str, sql: &str) -> String {
    try_ch_exec(addr, sql).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a statement through the HTTP interface at `addr`.
pub fn try_ch_exec(addr: &str, sql: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| {
        format!("ClickHouse HTTP on {addr} (run .ci/run or scripts/clickhouse.sh): {e}")
    })?;
    let req = format!(
        "POST / HTTP/1.0\r\nHost: ch\r\nContent-Length: {}\r\n\r\n{sql}",
        sql.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    let text = String::from_utf8(out).map_err(|e| e.to_string())?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("not an HTTP answer: {text:?}"))?;
    if head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200") {
        Ok(body.to_string())
    } else {
        Err(format!("ClickHouse refused {sql:?}: {body}"))
    }
}

fn parse_json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A valid batch of `traces` traces with `spans` llm spans each; ids are unique per `tag`.
pub fn batch(tag: &str, traces: usize, spans: usize) -> Vec<u8> {
    let traces: Vec<Value> = (0..traces)
        .map(|t| {
            let spans: Vec<Value> = (0..spans)
                .map(|s| {
                    serde_json::json!({
                        "spanId": format!("{tag}-s{t}-{s}"),
                        "spanType": "llm",
                        "name": "chat",
                        "startTime": 1_700_000_000_000u64 + s as u64,
                        "endTime": 1_700_000_000_500u64 + s as u64,
                        "provider": "openai.chat",
                        "modelId": "gpt-4o",
                        "usage": {"inputTokens": 1000, "outputTokens": 200}
                    })
                })
                .collect();
            serde_json::json!({"traceId": format!("{tag}-t{t}"), "traceName": "run", "spans": spans})
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({"version": "v1", "traces": traces})).unwrap()
}

/// A TCP proxy to the shared ClickHouse's native port, for a server told to use it
/// (`INGEST_CLICKHOUSE_URL=tcp://127.0.0.1:<port>`). It can be cut (connections reset, new ones
/// closed at once) and restored, or stalled (connections stay open but nothing passes either
/// way, as with a ClickHouse that hangs) and resumed.
pub struct Proxy {
    pub port: u16,
    cut: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    pub fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stalled = Arc::new(AtomicBool::new(false));
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (cut2, stalled2, live2) = (cut.clone(), stalled.clone(), live.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if cut2.load(Ordering::Acquire) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect("127.0.0.1:9000") else {
                    continue;
                };
                {
                    // Checked again under the lock `cut` drains with: a connection accepted
                    // just before a cut is either drained by it or dropped here, never left
                    // open past it.
                    let mut live = live2.lock().unwrap();
                    if cut2.load(Ordering::Acquire) {
                        continue;
                    }
                    live.push(client.try_clone().unwrap());
                    live.push(server.try_clone().unwrap());
                }
                pipe(
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    stalled2.clone(),
                    Duration::ZERO,
                );
                pipe(server, client, stalled2.clone(), Duration::ZERO);
            }
        });
        Proxy {
            port,
            cut,
            stalled,
            live,
        }
    }

    /// The server URL that goes through this proxy.
    pub fn url(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.port)
    }

    pub fn cut(&self) {
        let mut live = self.live.lock().unwrap();
        self.cut.store(true, Ordering::Release);
        for s in live.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn restore(&self) {
        self.cut.store(false, Ordering::Release);
    }

    /// From now on, bytes are held in the proxy, on open and new connections alike.
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::Release);
    }

    /// Lets the held bytes and everything after them through.
    pub fn resume(&self) {
        self.stalled.store(false, Ordering::Release);
    }
}

/// Copies `from` to `to` on a thread of its own, holding each chunk read for `delay`, and
/// while `stalled` is set; then closes `to`'s write side.
pub fn pipe(mut from: TcpStream, mut to: TcpStream, stalled: Arc<AtomicBool>, delay: Duration) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if !delay.is_zero() {
                        std::thread::sleep(delay);
                    }
                    while stalled.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
