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

/// The ClickHouse and plan flags of `keys` and `orgs` work after the subcommand too
/// (`keys list --clickhouse-url ...`), where a user types them; before, only
/// `keys --clickhouse-url ... list` did, and the other order was "unexpected argument".
#[test]
fn store_and_plan_flags_work_after_the_subcommand() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("tcp://127.0.0.1:{closed}");
    let server = Server::new(CH_HTTP, &[("INGEST_LOG", "info,clickhouse_rs=error")]);
    for args in [
        &["keys", "list", "--clickhouse-url", &url][..],
        &["orgs", "list", "--clickhouse-url", &url],
        &[
            "orgs",
            "list",
            "--default-plan",
            "free",
            "--clickhouse-url",
            &url,
        ],
    ] {
        let (code, _, stderr) = run(&server, args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("traceingest: cannot reach ClickHouse at {url}")),
            "{args:?}: {stderr:?}"
        );
    }
    // And they still name the database the command works on.
    assert_eq!(run(&server, &["migrate"]).0, Some(0));
    let (code, stdout, stderr) = run(
        &server,
        &["keys", "list", "--clickhouse-database", &server.database],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains("unexpected"), "{stdout}");
}

/// A value clap cannot parse (a unit suffix, a word for a number, `1` for a boolean) is refused
/// at start naming the environment variable it came from, not only the flag the operator never
/// typed.
#[test]
fn a_setting_clap_cannot_parse_is_refused_naming_its_variable() {
    for (setting, value) in [
        ("INGEST_MAX_BODY_BYTES", "10MiB"),
        ("INGEST_PORT", "http"),
        ("INGEST_PIN_WORKERS", "1"),
        ("INGEST_FLUSH_NICE", "-1"),
    ] {
        let server = Server::new(CH_HTTP, &[(setting, value)]);
        let (code, stdout, stderr) = run(&server, &["serve"]);
        assert_eq!(code, Some(2), "{setting}: {stderr}");
        assert_eq!(stdout, "");
        assert!(
            stderr.contains(&format!("{setting}={value}")),
            "{setting}={value}: {stderr}"
        );
    }
}

/// Wrong arguments to `keys` and `orgs` are refused before ClickHouse is touched: they used to
/// be checked only after the command had created the database and tables (a typo'd database
/// name got a fresh empty one), and with ClickHouse down the answer was about ClickHouse, not
/// the argument.
#[test]
fn keys_and_orgs_refuse_wrong_arguments_before_touching_clickhouse() {
    let server = Server::new(CH_HTTP, &[]);
    let cases: [(&[&str], &str); 4] = [
        (
            &["orgs", "create", "acme", "--plan", "gold"],
            "unknown plan \"gold\"",
        ),
        (
            &["orgs", "set-plan", "acme", "gold"],
            "unknown plan \"gold\"",
        ),
        (&["orgs", "create", "", "--plan", "free"], "organisation id"),
        (&["keys", "create", "--org", ""], "--org must be"),
    ];
    let exists = format!(
        "SELECT count() FROM system.databases WHERE name = '{}'",
        server.database
    );
    for (args, want) in cases {
        let (code, stdout, stderr) = run(&server, args);
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert_eq!(
            server.ch_exec(&exists).trim(),
            "0",
            "{args:?} created the database before refusing its arguments"
        );
    }
    // ClickHouse unreachable: the argument is still what is wrong.
    let down = Server::new(CH_HTTP, &[("INGEST_CLICKHOUSE_URL", "tcp://127.0.0.1:1")]);
    for (args, want) in cases {
        let (code, _, stderr) = run(&down, args);
        assert_eq!(code, Some(1), "{args:?}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
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

/// With `--log-format json` every line `keys create` writes on stderr is a JSON object shaped
/// as the log's (its note on a long prefix, and which key it created: both were plain text
/// there, a line a JSON shipper could not read), and stdout is the key alone; a missing
/// organisation in `orgs set-plan` is one JSON line too, exit status 1.
#[test]
fn keys_and_orgs_write_json_lines_on_stderr_in_the_json_log_format() {
    let server = Server::new(CH_HTTP, &[]);
    let (code, stdout, stderr) = run(
        &server,
        &[
            "keys",
            "create",
            "--org",
            "org-json",
            "--prefix",
            "acme_ingest_",
            "--log-format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let key = stdout.trim();
    assert_eq!(stdout, format!("{key}\n"));
    assert!(key.starts_with("acme_ingest_"), "{stdout}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert_eq!(lines[0]["level"], "WARN", "{stderr}");
    assert!(lines[0]["message"]
        .as_str()
        .unwrap()
        .contains("may be shared"));
    assert_eq!(lines[1]["level"], "INFO", "{stderr}");
    let created = lines[1]["message"].as_str().unwrap();
    assert!(
        created.starts_with("created key acme_ingest_..."),
        "{created}"
    );
    assert!(
        !stderr.contains(&key[12..]),
        "the key is never on stderr: {stderr}"
    );

    let (code, stdout, stderr) = run(
        &server,
        &["orgs", "set-plan", "nobody", "pro", "--log-format", "json"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    let line: serde_json::Value = serde_json::from_str(stderr.trim_end()).unwrap();
    assert_eq!(line["level"], "ERROR");
    assert!(
        line["message"]
            .as_str()
            .unwrap()
            .contains("no organisation \"nobody\""),
        "{stderr}"
    );
}

/// With a long key prefix the display prefix (a key's first 12 characters) is all prefix, so
/// several keys share it: `keys revoke PREFIX` then revokes nothing and names the keys' owners
/// (it used to revoke every organisation's keys), the whole key revokes exactly that one, and
/// `--all` the rest. A prefix `serve` would refuse is refused by `keys create` too.
#[test]
fn revoking_a_shared_display_prefix_takes_the_whole_key_or_all() {
    let server = Server::new(CH_HTTP, &[]);
    assert_eq!(run(&server, &["migrate"]).0, Some(0));
    let create = |org: &str| {
        let (code, stdout, stderr) = run(
            &server,
            &["keys", "create", "--org", org, "--prefix", "acme_ingest_"],
        );
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stderr.contains("may be shared"), "{stderr}");
        stdout.trim().to_string()
    };
    let (a, b, c) = (create("org-a"), create("org-b"), create("org-c"));
    assert!(a.starts_with("acme_ingest_") && a[..12] == b[..12]);

    let (code, stdout, stderr) = run(&server, &["keys", "revoke", "acme_ingest_"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stderr.contains("3 active keys"), "{stderr}");
    assert!(
        stderr.contains("org org-a") && stderr.contains("org org-c"),
        "{stderr}"
    );
    let active = |server: &Server| {
        let (_, list, _) = run(server, &["keys", "list"]);
        list.lines().filter(|l| l.ends_with("active")).count()
    };
    assert_eq!(active(&server), 3, "nothing revoked");

    let (code, stdout, stderr) = run(&server, &["keys", "revoke", &b]);
    assert_eq!(code, Some(0), "{stderr}");
    // Only the display prefix: a key is shown once, when it is made.
    assert_eq!(stdout, format!("revoked 1 key(s): {}...\n", &b[..12]));
    let (_, list, _) = run(&server, &["keys", "list"]);
    assert!(
        list.lines()
            .any(|l| l.contains("org-b") && l.ends_with("revoked")),
        "{list}"
    );
    assert_eq!(active(&server), 2);
    // The same whole key again: nothing left to revoke.
    assert_eq!(run(&server, &["keys", "revoke", &b]).0, Some(1));

    let (code, stdout, _) = run(&server, &["keys", "revoke", "acme_ingest_", "--all"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("revoked 2 key"), "{stdout}");
    assert_eq!(active(&server), 0);
    drop((a, c));

    // A whole "key" that is not one, with a character across byte 12: an error, not a panic.
    let (code, _, stderr) = run(&server, &["keys", "revoke", "aéééééé"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no active key is aéééééé"), "{stderr}");

    let (code, _, stderr) = run(
        &server,
        &["keys", "create", "--org", "o", "--prefix", "ключ_"],
    );
    assert_eq!(code, Some(1));
    assert!(stderr.contains("--prefix"), "{stderr}");
}

/// Found by the docs audit: `traceingest price --list | head -1` panicked ("failed printing to
/// stdout: Broken pipe", status 101). Output a reader stops reading is dropped quietly, and the
/// command ends with its own status.
#[test]
fn output_its_reader_stops_reading_is_dropped_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(BIN)
        .args(["price", "--list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run traceingest price --list");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here with most of the list (about 90 KB, more than a pipe holds)
    // unread.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!first.is_empty());
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

/// With standard output's reader gone before anything is written, a command still ends with its
/// own status: `price` of an unknown model 1, not 0; and `keys create`, whose key could not be
/// shown, says so, revokes the key again and fails, rather than leave an active key no one saw.
#[test]
fn a_gone_reader_does_not_change_a_commands_status() {
    let server = Server::new(CH_HTTP, &[]);
    assert_eq!(run(&server, &["migrate"]).0, Some(0));
    let with_gone_reader = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = server
            .command(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, stderr) = with_gone_reader(&["price", "--model", "no-such-model-at-all"]);
    assert_eq!(code, Some(1), "{stderr}");
    let (code, stderr) = with_gone_reader(&["keys", "create", "--org", "org-gone"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("standard output was closed before the new key could be shown")
            && stderr.contains("was revoked again"),
        "{stderr}"
    );
    let (_, list, _) = run(&server, &["keys", "list"]);
    let line = list
        .lines()
        .find(|l| l.contains("org-gone"))
        .unwrap_or_else(|| panic!("the key was created, then revoked: {list}"));
    assert!(line.ends_with("revoked"), "{list}");
}

/// A command that reads or changes what is stored refuses a database that does not exist (a
/// mistyped `--clickhouse-database`), naming it, and creates nothing: it created the database
/// and then listed nothing, or said no key matched. `keys create` and `orgs create` still make
/// a new one, as a first setup does.
#[test]
fn commands_on_stored_data_refuse_a_database_that_does_not_exist() {
    let server = Server::new(CH_HTTP, &[("INGEST_LOG", "info,clickhouse_rs=error")]);
    let db = server.database.clone();
    let exists = || {
        server.ch_exec(&format!(
            "SELECT count() FROM system.databases WHERE name = '{db}'"
        ))
    };
    for args in [
        &["keys", "list"][..],
        &["keys", "revoke", "ti_AbCdEfGhI"],
        &["orgs", "list"],
        &["orgs", "set-plan", "acme", "pro"],
        &[
            "reprice",
            "--from",
            "2026-11-01",
            "--to",
            "2026-11-02",
            "--dry-run",
        ],
        &["reprice", "--from", "2026-11-01", "--to", "2026-11-02"],
    ] {
        let (code, stdout, stderr) = run(&server, args);
        assert_eq!(code, Some(1), "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains(&format!("ClickHouse has no database {db:?}"))
                && stderr.contains("INGEST_CLICKHOUSE_DATABASE"),
            "{args:?}: {stderr}"
        );
        assert_eq!(exists().trim(), "0", "{args:?} created the database");
    }
    let (code, _, stderr) = run(&server, &["keys", "create", "--org", "acme"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(exists().trim(), "1");
    let (code, stdout, stderr) = run(&server, &["keys", "list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("acme"), "{stdout}");
}

/// A ClickHouse that answers and refuses the schema (here someone else's `spans`) stops
/// `serve` at once with the reason, not after 30 s of "ClickHouse not ready; retrying".
#[test]
fn serve_stops_at_once_on_a_schema_clickhouse_refuses() {
    let server = Server::new(CH_HTTP, &[]);
    let db = server.database.clone();
    server.ch_exec(&format!("CREATE DATABASE {db}"));
    server.ch_exec(&format!(
        "CREATE TABLE {db}.spans (id UInt64) ENGINE = MergeTree ORDER BY id"
    ));
    let out = server.command(&["serve"]).output().expect("run serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot create the schema in ClickHouse")
            && stderr.contains("is not a table this service made"),
        "{stderr}"
    );
    assert!(!stderr.contains("not ready; retrying"), "{stderr}");
    server.ch_exec(&format!("DROP DATABASE {db}"));
}
