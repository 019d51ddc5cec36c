//! `config.rs`'s unit tests of README's settings table against the code: names, defaults and
//! ranges.

use super::*;

/// The rows of README's settings table: (variable, default cell), in order.
fn readme_settings() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## Settings\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a Settings section");
    section
        .lines()
        .filter(|l| l.starts_with("| `INGEST_"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect()
}

/// Every `INGEST_*` variable anything in `src/` reads (a clap `env`, or the environment read
/// directly), found in the source text so that a new one cannot be missed.
fn variables_read() -> std::collections::BTreeSet<String> {
    fn walk(dir: &std::path::Path, out: &mut std::collections::BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for reader in ["env = \"", "var_os(\"", "var(\""] {
                    for (at, _) in text.match_indices(reader) {
                        let name: String = text[at + reader.len()..]
                            .chars()
                            .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                            .collect();
                        if name.starts_with("INGEST_") {
                            out.insert(name);
                        }
                    }
                }
            }
        }
    }
    let mut names = std::collections::BTreeSet::new();
    walk(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut names,
    );
    names
}

/// README's settings table lists every variable the program reads and no other, each with the
/// default clap gives it (a cell that starts with the value in backticks), or, for a variable
/// without one, a cell that names no value ("none", "number of cores").
#[test]
fn readme_settings_table_matches_the_variables_and_their_defaults() {
    use clap::{Args as _, Command};
    let table = readme_settings();
    let documented: std::collections::BTreeSet<String> =
        table.iter().map(|(v, _)| v.clone()).collect();
    assert_eq!(
        documented.len(),
        table.len(),
        "a variable twice in {table:?}"
    );
    let read = variables_read();
    assert!(read.len() > 40 && read.contains("INGEST_LOG"), "{read:?}");
    let missing: Vec<_> = read.difference(&documented).collect();
    let unread: Vec<_> = documented.difference(&read).collect();
    assert!(
        missing.is_empty() && unread.is_empty(),
        "read but not in README's settings table: {missing:?}; in the table but read nowhere: {unread:?}"
    );

    let mut defaults: Vec<(String, Option<String>)> =
        vec![("INGEST_LOG".into(), Some(DEFAULT_LOG_FILTER.into()))];
    for cmd in [
        ServeArgs::augment_args(Command::new("serve")),
        MigrateArgs::augment_args(Command::new("migrate")),
        LogArgs::augment_args(Command::new("log")),
    ] {
        for arg in cmd.get_arguments() {
            let Some(var) = arg.get_env() else { continue };
            let default = arg
                .get_default_values()
                .first()
                .map(|d| d.to_string_lossy().into_owned());
            defaults.push((var.to_string_lossy().into_owned(), default));
        }
    }
    assert!(defaults.len() > 40, "{defaults:?}");
    for (var, default) in defaults {
        let (_, cell) = table
            .iter()
            .find(|(v, _)| *v == var)
            .unwrap_or_else(|| panic!("{var} is not in README's settings table"));
        match default {
            Some(d) => assert!(
                cell.starts_with(&format!("`{d}`")),
                "README gives {var} the default {cell:?}; the code's is {d:?}"
            ),
            None => assert!(
                !cell.starts_with('`'),
                "README gives {var} the default {cell:?}; the code has none"
            ),
        }
    }
}

/// A setting's bounds as `resolve` checks them: (variable, other arguments it needs, lowest
/// accepted value, highest (`None`: no bound), how README's settings table states them).
type Range = (
    &'static str,
    &'static [&'static str],
    u64,
    Option<u64>,
    &'static [&'static str],
);

const RANGES: &[Range] = &[
    ("INGEST_WORKERS", &[], 1, Some(1024), &["1 to 1024"]),
    (
        "INGEST_MAX_BODY_BYTES",
        &[],
        1,
        Some(1 << 30),
        &["1 to 1073741824"],
    ),
    (
        "INGEST_OTLP_MAX_BODY_BYTES",
        &[],
        1,
        Some(1 << 30),
        &["1 to 1073741824"],
    ),
    (
        "INGEST_MAX_HEADER_BYTES",
        &[],
        512,
        Some(1 << 20),
        &["512 to 1048576"],
    ),
    ("INGEST_MAX_HEADERS", &[], 4, Some(128), &["4 to 128"]),
    ("INGEST_FLUSH_INTERVAL_MS", &[], 1, None, &["at least 1"]),
    (
        "INGEST_FLUSH_MAX_ROWS",
        &["--buffer-max-rows", "2000000"],
        1,
        Some(1_000_000),
        &["1 to 1000000"],
    ),
    (
        "INGEST_FLUSH_MAX_BYTES",
        &[],
        65536,
        None,
        &["at least 64 KiB"],
    ),
    ("INGEST_FLUSH_NICE", &[], 0, Some(19), &["0 to 19"]),
    (
        "INGEST_BUFFER_MAX_BYTES",
        &[],
        65536,
        None,
        &["at least 64 KiB"],
    ),
    (
        "INGEST_SPOOL_MAX_BYTES",
        &[],
        65536,
        None,
        &["at least 64 KiB"],
    ),
    (
        "INGEST_DEAD_LETTER_MAX_BYTES",
        &[],
        65536,
        None,
        &["at least 64 KiB"],
    ),
    ("INGEST_SHUTDOWN_TIMEOUT_MS", &[], 1, None, &["at least 1"]),
    (
        "INGEST_KEY_REFRESH_MS",
        &[],
        10,
        Some(1000),
        &["10 to 1000"],
    ),
    (
        "INGEST_IDLE_TIMEOUT_MS",
        &[],
        1,
        Some(86_400_000),
        &["1 to 86400000"],
    ),
    (
        "INGEST_HEADER_TIMEOUT_MS",
        &[],
        1,
        Some(86_400_000),
        &["1 to 86400000"],
    ),
    (
        "INGEST_MIN_BODY_RATE_BYTES_PER_SEC",
        &[],
        0,
        Some(1 << 30),
        &["`0` turns it off", "at most 1073741824"],
    ),
    (
        "INGEST_BODY_RATE_GRACE_MS",
        &[],
        1,
        Some(86_400_000),
        &[
            "at most 86400000",
            "at least 1 while the minimum rate is on",
        ],
    ),
    (
        "INGEST_MAX_CONNECTIONS_PER_WORKER",
        &[],
        1,
        None,
        &["at least 1"],
    ),
    (
        "INGEST_RATE_LIMIT_RPS",
        &[],
        1,
        Some(100_000_000),
        &["1 to 100000000"],
    ),
    (
        "INGEST_QUOTA_SYNC_MS",
        &[],
        100,
        Some(600_000),
        &["100..=600000"],
    ),
    ("INGEST_REDIS_SYNC_MS", &[], 10, Some(1000), &["10..=1000"]),
];

/// Found in audit: the settings table's names and defaults were kept in step with the code by
/// a test, its ranges by nobody (`INGEST_FLUSH_MAX_ROWS` gave no lower bound), and a value
/// just past a bound of `INGEST_FLUSH_INTERVAL_MS`, `INGEST_SHUTDOWN_TIMEOUT_MS`, the
/// connection timeouts or `INGEST_MAX_CONNECTIONS_PER_WORKER` was refused without the value.
/// Each bound is accepted, one past it refused naming the setting and the value, and README
/// states it.
#[test]
fn readme_states_each_range_the_code_checks() {
    let table = readme_settings();
    for &(var, extra, lo, hi, spellings) in RANGES {
        let flag = format!(
            "--{}",
            var.trim_start_matches("INGEST_")
                .to_lowercase()
                .replace('_', "-")
        );
        let with = |v: u64| {
            let v = v.to_string();
            resolve(&[extra, &[flag.as_str(), v.as_str()][..]].concat())
        };
        let refused = |v: u64| {
            let err = with(v).expect_err(&format!("{var}={v} accepted"));
            assert!(
                err.starts_with(var)
                    && (err.contains(&format!("got {v}")) || err.contains(&format!("got \"{v}\""))),
                "{var}={v}: {err}"
            );
        };
        assert!(with(lo).is_ok(), "{var}={lo}: {:?}", with(lo).err());
        if lo > 0 {
            refused(lo - 1);
        }
        if let Some(hi) = hi {
            assert!(with(hi).is_ok(), "{var}={hi}: {:?}", with(hi).err());
            refused(hi + 1);
        }
        let (_, cell) = table.iter().find(|(v, _)| v == var).expect(var);
        let row = readme_row(var);
        for s in spellings {
            assert!(
                row.contains(s),
                "README's {var} ({cell}) does not say {s:?}: {row}"
            );
        }
    }
}

/// README's settings table's row of `var`, whole.
fn readme_row(var: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    readme
        .lines()
        .find(|l| l.starts_with(&format!("| `{var}` |")))
        .unwrap_or_else(|| panic!("{var} has no row"))
        .to_string()
}
