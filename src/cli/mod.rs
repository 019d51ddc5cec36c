//! Commands other than `serve`: key and organisation management, price checks, re-pricing
//! stored spans, replaying dead-lettered rows.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// `println!` for the commands' output: once a reader stops reading (`| head`), the rest of
/// the output is dropped and the command goes on to its own exit status (`println!` panicked,
/// status 101); any other failure to write ends it with a message and status 1.
macro_rules! outln {
    () => {
        $crate::cli::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Standard output's reader has gone (`out` met `EPIPE`).
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes to standard output (see `outln!`).
pub fn out(text: std::fmt::Arguments<'_>) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT_GONE.store(true, Ordering::Relaxed);
            return;
        }
        eprintln!("traceingest: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// The log is JSON (`--log-format json`): `note` writes its lines as the log's.
static JSON_NOTES: AtomicBool = AtomicBool::new(false);

/// Sets the format of `note`'s lines: the log's (`main.rs`, once, before the command runs).
pub fn set_log_format(format: crate::config::LogFormat) {
    JSON_NOTES.store(format == crate::config::LogFormat::Json, Ordering::Relaxed);
}

/// A line on stderr for the one running the command, beside what it prints on stdout (which
/// key was created, a warning): as written in the text format, one JSON object shaped as the
/// log's lines at `level` in the JSON format, so that stderr stays JSON lines for a shipper.
/// Not through the log: its filter must not hide what a command did.
pub fn note(level: &str, message: std::fmt::Arguments<'_>) {
    let message = message.to_string();
    if JSON_NOTES.load(Ordering::Relaxed) {
        let line = crate::config::LogFormat::Json.command_line(
            level,
            &message,
            std::time::SystemTime::now(),
        );
        eprintln!("{line}");
    } else {
        eprintln!("{message}");
    }
}

/// Whether standard output's reader has gone: what `out` wrote since was dropped.
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
}

/// Brings the schema up to date (`migrate`) for a command that reads or changes what is
/// stored already (listing or revoking keys, a plan change, re-pricing, a dead-letter replay,
/// which would put its rows where nobody reads them): unlike `migrate`
/// itself or a first `keys create`, it refuses a database that does not exist, which is a
/// mistyped `--clickhouse-database` far more often than a wish to create it. (It created the
/// database, and then listed nothing, or said no key matched.)
pub async fn migrate_existing(store: &crate::sink::clickhouse::Store) -> anyhow::Result<()> {
    pending_in_existing(store).await?;
    store.migrate().await?;
    Ok(())
}

/// What `migrate` would do to the database (`Store::pending_migration`, read-only), refusing
/// one that does not exist as `migrate_existing` does.
pub async fn pending_in_existing(
    store: &crate::sink::clickhouse::Store,
) -> anyhow::Result<crate::sink::clickhouse::Migrated> {
    let pending = store.pending_migration().await?;
    if pending.created_database {
        anyhow::bail!(
            "ClickHouse has no database {:?}, so nothing is stored there; is \
             --clickhouse-database (INGEST_CLICKHOUSE_DATABASE) right? (`traceingest migrate` \
             creates it)",
            store.database()
        );
    }
    Ok(pending)
}

pub mod deadletter;
pub mod keys;
pub mod orgs;
pub mod price;
pub mod reprice;
pub mod salvage;
