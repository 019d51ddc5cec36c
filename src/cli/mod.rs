//! Commands other than `serve`: key and organisation management, price checks, re-pricing
//! stored spans.

use std::io::Write;

/// `println!` for the commands' output: a reader that stops reading (`| head`) ends the command
/// quietly with status 0, as `println!` would have panicked (status 101); any other failure to
/// write ends it with a message and status 1.
macro_rules! outln {
    () => {
        $crate::cli::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to standard output (see `outln!`).
pub fn out(text: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("traceingest: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

pub mod keys;
pub mod orgs;
pub mod price;
pub mod reprice;
