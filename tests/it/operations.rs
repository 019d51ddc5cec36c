//! What operators meet: the log on stderr (text for people, JSON for log shippers).

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
        let message = v["fields"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{line}"));
        messages.push((message.to_string(), v));
    }
    // The fields of an event are JSON values beside its message.
    let serving = messages
        .iter()
        .find(|(m, _)| m == "serving")
        .unwrap_or_else(|| panic!("no \"serving\" event in\n{log}"));
    assert!(
        serving.1["fields"]["addr"].as_str().is_some(),
        "{}",
        serving.1
    );
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
