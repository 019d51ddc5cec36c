//! What operators meet: the log on stderr (text for people, JSON for log shippers) and the
//! admin listener that serves `/metrics` off the public port.

use std::time::Duration;

use serde_json::Value;

use crate::support::*;

/// Runs a server with these settings until a clean stop, and returns its log.
fn log_of_a_run(env: &[(&str, &str)]) -> String {
    let mut server = Server::start_with(env);
    assert_eq!(server.get("/health").status, 200);
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(15)), 0);
    server.log()
}

#[test]
fn json_logs_are_one_object_per_line() {
    let log = log_of_a_run(&[
        ("INGEST_LOG_FORMAT", "json"),
        ("INGEST_LOG", "info,clickhouse_rs=error"),
    ]);
    let mut messages = Vec::new();
    for line in log.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {line:?}"));
        assert!(
            v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
        assert!(
            ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
                .contains(&v["level"].as_str().unwrap_or("")),
            "{line}"
        );
        // The message and the target at the top level, where log shippers look for them.
        assert!(
            v["target"].as_str().is_some_and(|t| !t.is_empty()),
            "{line}"
        );
        assert!(v.get("fields").is_none(), "{line}");
        let message = v["message"].as_str().unwrap_or_else(|| panic!("{line}"));
        messages.push((message.to_string(), v));
    }
    // The fields of an event are JSON values beside its message.
    let serving = messages
        .iter()
        .find(|(m, _)| m == "serving")
        .unwrap_or_else(|| panic!("no \"serving\" event in\n{log}"));
    assert!(serving.1["addr"].as_str().is_some(), "{}", serving.1);
    assert!(messages.iter().any(|(m, _)| m.contains("bye")), "{log}");
}

#[test]
fn text_logs_written_to_a_file_have_no_colour_codes() {
    let log = log_of_a_run(&[("INGEST_LOG", "info")]);
    assert!(
        log.lines()
            .any(|l| l.contains(" INFO ") && l.contains("serving")),
        "{log}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escapes in a log file:\n{log}"
    );
}

/// A memory buffer past half of what the process may use (here 1 TiB, past any test machine's
/// memory) is named at start-up, since a process killed for memory loses what it held; the
/// default one is not.
#[test]
fn a_buffer_past_half_the_memory_is_named_at_start_up() {
    const WARNING: &str = "INGEST_BUFFER_MAX_BYTES is more than half the memory";
    let log = log_of_a_run(&[("INGEST_BUFFER_MAX_BYTES", "1099511627776")]);
    assert!(log.contains(WARNING), "{log}");
    let log = log_of_a_run(&[]);
    assert!(!log.contains(WARNING), "{log}");
}

#[test]
fn a_bad_log_format_is_refused_naming_the_setting() {
    let server = Server::new(CH_HTTP, &[]);
    let out = server.cli(&["keys", "list", "--log-format", "xml"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "traceingest: INGEST_LOG_FORMAT must be \"text\" (for people) or \"json\" (one object per line), got \"xml\""
    );
}

/// A log filter that does not parse is refused naming the setting, like every other bad value;
/// it used to be dropped silently for the default filter.
#[test]
fn a_bad_log_filter_is_refused_naming_the_setting() {
    let server = Server::new(CH_HTTP, &[("INGEST_LOG", "info,[")]);
    let out = server.cli(&["keys", "list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("traceingest: INGEST_LOG must be a log filter")
            && stderr.contains("\"info,[\"")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn metrics_are_served_only_on_the_admin_listener() {
    let server = Server::start();
    // The public port: probes work, /metrics does not exist.
    let r = server.get("/metrics");
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    let mut c = server.connect();
    c.send(b"POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(c.read_response().status, 404, "whatever the method");
    assert_eq!(server.get("/health").status, 200);
    assert_eq!(server.get("/ready").status, 200);

    // The admin listener: the three operations endpoints, keep-alive, HEAD.
    assert_ne!(server.admin.port(), server.addr.port());
    let mut c = Client::connect(server.admin);
    c.send(
        b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET /health HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /ready HTTP/1.1\r\nHost: t\r\n\r\nHEAD /health HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let metrics = c.read_response();
    assert_eq!(metrics.status, 200);
    assert!(metrics
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let text = String::from_utf8(metrics.body).unwrap();
    assert!(
        text.contains("\ntraceingest_keys 0\n") && text.ends_with("# EOF\n"),
        "{text}"
    );
    let health = c.read_response();
    assert_eq!(
        (health.status, health.json()["status"].as_str()),
        (200, Some("ok"))
    );
    let ready = c.read_response();
    assert_eq!(
        (ready.status, ready.json()["ready"].as_bool()),
        (200, Some(true))
    );
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = c.read_response();
    assert_eq!(head.status, 200);
    assert!(head.header("content-length").is_some());
    // RFC 9110, 6.6.1: an IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`.
    let date = head.header("date").expect("every answer has a date");
    assert!(date.len() == 29 && date.ends_with(" GMT"), "{date:?}");

    // Nothing else is there.
    let r = server.get_admin("/ingest");
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    let mut c = Client::connect(server.admin);
    c.send(b"POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}");
    let r = c.read_response();
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    assert!(
        c.is_closed(),
        "a request with a body closes the admin connection"
    );
    let mut c = Client::connect(server.admin);
    c.send(b"GET /health HTTP/1.1\r\nHost: t\r\nContent-Length: nope\r\n\r\n");
    assert_eq!(c.read_response().status, 400);
    assert!(c.is_closed());
}

/// A drain closes idle keep-alive connections at once: they wait for their idle deadline or
/// the worker's drain signal, with no timer polling the flag, so the signal must reach them
/// (else the server would wait out its shutdown timeout for them).
#[test]
fn a_drain_closes_idle_keep_alive_connections_at_once() {
    let mut server = Server::start_with(&[
        ("INGEST_IDLE_TIMEOUT_MS", "600000"),
        ("INGEST_SHUTDOWN_TIMEOUT_MS", "60000"),
    ]);
    let mut idle = server.connect();
    idle.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(idle.read_response().status, 200);
    // Past the moment an idle connection gives back its buffers: it then sleeps until its
    // deadline, ten minutes away.
    std::thread::sleep(Duration::from_millis(400));
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(15)), 0);
    assert!(idle.is_closed());
}

#[test]
fn the_admin_listener_reports_a_drain_on_ready() {
    let server = Server::start_with(&[("INGEST_SHUTDOWN_TIMEOUT_MS", "5000")]);
    // An open connection keeps the server draining for a while. It is answered once first, so
    // the server has accepted it before the signal (one still in the listen backlog would not
    // hold the drain: on a busy machine the server then exited before the first look).
    let mut busy = server.connect();
    busy.send(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(busy.read_response().status, 200);
    busy.send(b"POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n{");
    server.signal(SIGTERM);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = server.get_admin("/ready");
        if r.status == 503 {
            assert_eq!(r.code(), "not_ready");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/ready never said draining"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The nice value of each of a process's threads, with the thread's name
/// (`/proc/PID/task/TID/stat`).
fn thread_nices(pid: i32) -> Vec<(String, i32)> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        // A thread that ended since the listing has no stat any more.
        let Ok(stat) = std::fs::read_to_string(task.unwrap().path().join("stat")) else {
            continue;
        };
        // "tid (name) state ppid ...": the name may hold spaces and parentheses, the fields
        // after its last ')' do not. The nice value is field 19, the 17th after the name.
        let (open, close) = (stat.find('(').unwrap(), stat.rfind(')').unwrap());
        let nice = stat[close + 2..]
            .split(' ')
            .nth(16)
            .unwrap()
            .parse()
            .unwrap();
        threads.push((stat[open + 1..close].to_string(), nice));
    }
    threads
}

/// The flush thread of a server, and one of its workers: their nice values.
fn flush_and_worker_nice(server: &Server, flush_settled: impl Fn(i32, i32) -> bool) -> (i32, i32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let threads = thread_nices(server.pid());
        let of = |name: &str| threads.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
        let now = std::time::Instant::now();
        // A thread takes its name once it first runs and then lowers its priority, and on a
        // busy machine a look soon after the start may come before either.
        if let (Some(flush), Some(worker)) = (of("flush"), of("worker-0")) {
            if flush_settled(flush, worker) || now > deadline {
                return (flush, worker);
            }
        }
        assert!(
            now < deadline,
            "no thread named flush or worker-0: {threads:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// By default the flush thread runs at the workers' priority; `INGEST_FLUSH_NICE` puts it that
/// many nice levels below them (at most at 19), and the rows reach ClickHouse either way.
#[test]
fn the_flush_thread_runs_as_far_below_the_workers_as_set() {
    let server = Server::start();
    let (flush, worker) = flush_and_worker_nice(&server, |_, _| true);
    assert_eq!(flush, worker);
    let key = server.create_key("acme");
    assert_eq!(server.post_ingest(&key, &batch("nice", 1, 4)).status, 202);
    server.wait_rows(4);

    let server = Server::start_with(&[("INGEST_FLUSH_NICE", "7")]);
    let (flush, worker) = flush_and_worker_nice(&server, |f, w| f != w);
    assert_eq!(
        flush,
        (worker + 7).min(19),
        "flush {flush}, worker {worker}"
    );
    let key = server.create_key("acme");
    assert_eq!(server.post_ingest(&key, &batch("nice", 1, 4)).status, 202);
    server.wait_rows(4);
}
