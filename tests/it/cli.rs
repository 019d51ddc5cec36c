//! The management commands as a new user runs them: what `migrate` prints, and what every
//! command says when ClickHouse cannot be reached.

use crate::support::*;

/// (exit code, stdout, stderr) of a command against `server`'s settings.
fn run(server: &Server, args: &[&str]) -> (Option<i32>, String, String) {
    let out = server.cli(args);
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn migrate_says_what_it_created_then_that_nothing_changed() {
    let server = Server::new(CH_HTTP, &[]);
    let db = server.database.clone();
    let (code, stdout, _) = run(&server, &["migrate"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        format!(
            "created database {db}\ncreated table {db}.spans\ncreated table {db}.api_keys\n\
             created table {db}.orgs\n"
        )
    );
    let (code, stdout, _) = run(&server, &["migrate"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        format!(
            "database {db}: schema up to date (tables spans, api_keys, orgs), nothing changed\n"
        )
    );
}

#[test]
fn commands_name_clickhouse_its_url_and_the_setting_when_it_cannot_be_reached() {
    // A port nobody listens on, and ClickHouse's HTTP port (a wrong port that does answer).
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cases = [
        (format!("tcp://127.0.0.1:{closed}"), "Connection refused"),
        (format!("tcp://{CH_HTTP}"), "9000 by default"),
    ];
    for (url, why) in cases {
        // The default log filter, as a user has it (the tests' own lets the client crate's
        // warnings through).
        let env = [
            ("INGEST_CLICKHOUSE_URL", url.as_str()),
            ("INGEST_LOG", "info,clickhouse_rs=error"),
        ];
        let server = Server::new(CH_HTTP, &env);
        for args in [&["keys", "list"][..], &["migrate"], &["orgs", "list"]] {
            let (code, stdout, stderr) = run(&server, args);
            assert_eq!(code, Some(1), "{args:?}");
            assert_eq!(stdout, "", "{args:?}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr:?}");
            let want =
                format!("traceingest: cannot reach ClickHouse at {url} (INGEST_CLICKHOUSE_URL): ");
            assert!(stderr.starts_with(&want), "{args:?}: {stderr:?}");
            assert!(stderr.contains(why), "{args:?}: {stderr:?}");
        }
    }
}

#[test]
fn every_setting_in_the_help_is_in_the_readme() {
    let server = Server::new(CH_HTTP, &[]);
    let (code, help, _) = run(&server, &["serve", "--help"]);
    assert_eq!(code, Some(0));
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let settings: Vec<&str> = help
        .split("[env: ")
        .skip(1)
        .filter_map(|s| s.split('=').next())
        .collect();
    assert!(settings.len() > 30, "{help}");
    for setting in settings {
        assert!(
            readme.contains(&format!("| `{setting}` |")),
            "{setting} is in `serve --help` but not in README's settings table"
        );
    }
}
