//! The real OpenTelemetry SDKs (Python, Node) exporting to the server, over OTLP/HTTP and gRPC.

use super::*;

/// The Python SDK's own OTLP exporters against the server, OTLP/HTTP (protobuf, gzip) and
/// gRPC (gzip, on the same port): each export succeeds and its spans are stored as the capture
/// of the same program says.
#[test]
fn a_live_python_exporter() {
    let program = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/otlp-capture/python_sdk_genai.py"
    );
    live_exporter(
        "TRACEINGEST_OTLP_PYTHON",
        |python| (python.into(), vec![program.into()]),
        "python-sdk-genai",
        &[
            ("org-live", &["--gzip"]),
            ("org-live-grpc", &["--gzip", "--grpc"]),
        ],
    );
}

/// The OpenTelemetry JS SDK's own exporters against the server: OTLP/HTTP JSON (gzip) and
/// OTLP over gRPC (`@grpc/grpc-js`, plain and gzip, on the same port). Each export succeeds
/// and its spans are stored as the capture of the same program says.
#[test]
fn a_live_node_exporter() {
    live_exporter(
        "TRACEINGEST_OTLP_NODE",
        |dir| {
            let program = std::path::Path::new(dir).join("js_sdk_genai.mjs");
            ("node".into(), vec![program.into_os_string()])
        },
        "js-sdk-genai",
        &[
            ("org-node-http", &["--gzip"]),
            ("org-node-grpc", &["--grpc"]),
            ("org-node-grpc-gzip", &["--grpc", "--gzip"]),
        ],
    );
}

/// Runs a capture program with an SDK's own exporters once per `(org, flags)` of `runs`
/// (`--grpc`: to the server's address, else to `/v1/traces`), each with a key of its own, and
/// checks that it succeeds and that the organisation's stored spans are `capture`'s expected
/// lines. `var` names the SDK's install (the scripts' output), from which `command` makes the
/// program and its first arguments; without it the test is skipped, unless
/// `TRACEINGEST_OTLP_LIVE_TEST` requires it.
fn live_exporter(
    var: &str,
    command: impl Fn(&std::ffi::OsStr) -> (std::ffi::OsString, Vec<std::ffi::OsString>),
    capture: &str,
    runs: &[(&str, &[&str])],
) {
    let Some(install) = std::env::var_os(var) else {
        assert!(
            std::env::var_os("TRACEINGEST_OTLP_LIVE_TEST").is_none(),
            "TRACEINGEST_OTLP_LIVE_TEST is set but {var} is not"
        );
        eprintln!("{var} is not set (scripts/test.sh sets it): skipping");
        return;
    };
    let (program, first) = command(&install);
    let server = Server::start();
    let want = expected(capture);
    for (n, (org, args)) in runs.iter().enumerate() {
        let key = server.ready_key(org);
        let endpoint = if args.contains(&"--grpc") {
            format!("http://{}", server.addr)
        } else {
            format!("http://{}/v1/traces", server.addr)
        };
        let out = std::process::Command::new(&program)
            .args(&first)
            .args(*args)
            .env("OTLP_CAPTURE_ENDPOINT", endpoint)
            .env("OTEL_EXPORTER_OTLP_HEADERS", format!("x-api-key={key}"))
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", program.to_string_lossy()));
        assert!(
            out.status.success(),
            "the exporter ({org}) failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        server.wait_rows((n + 1) as u64 * want.len() as u64);
        assert_eq!(stored_lines(&server, org), want, "{org}");
    }
}
