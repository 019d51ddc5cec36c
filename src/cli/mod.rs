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

/// Whether standard output's reader has gone: what `out` wrote since was dropped.
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
}

pub mod deadletter;
pub mod keys;
pub mod orgs;
pub mod price;
pub mod reprice;
pub mod salvage;
