//! What a failed ClickHouse operation means: `InsertError` with its `Retry` class (read from the
//! server's error code) for span inserts, `StoreError` for everything else.

use std::fmt;

use clickhouse_rs::errors::{codes, Error as ChError};

/// What the flush thread should do with rows whose insert failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Transient (network, timeouts, server overloaded): keep the rows, back off, retry.
    Later,
    /// The table or a column is missing: run `migrate`, then retry.
    AfterMigrate,
    /// Refused because of some rows' values: split the insert to isolate the bad rows.
    Split,
    /// The server had not the memory for this insert (`MEMORY_LIMIT_EXCEEDED`: the query's,
    /// the user's or the whole server's `max_memory_usage`). Nobody's rows' fault, but a
    /// smaller insert may well go in: split it without blaming any row, and, when the limit
    /// was the query's own (`InsertError::memory_shared` is false), insert fewer rows at a
    /// time for a while; a single row refused so is retried like `Later`.
    Smaller,
    /// Refused whatever the rows (schema mismatch, client-side error): retrying cannot succeed.
    Never,
    /// The server refused with a code this build does not know: retried like `Later`, but only
    /// a few times on the same rows (the flush thread's cap), then split like `Split`, so an
    /// unknown data error ends in the dead-letter file instead of being retried forever.
    Unknown,
}

/// A failed span insert, classified from the ClickHouse server error code when there is one.
#[derive(Debug, Clone)]
pub struct InsertError {
    pub retry: Retry,
    /// ClickHouse server error code, when the server answered with an exception.
    pub code: Option<u32>,
    pub message: String,
}

impl InsertError {
    #[cold]
    pub(super) fn from_clickhouse(err: &ChError) -> InsertError {
        let (retry, code) = classify(err);
        InsertError {
            retry,
            code,
            message: message(err),
        }
    }

    /// For `Smaller`: whether the memory limit passed is one the insert shares with other
    /// queries, the server's whole (`Memory limit (total) exceeded`) or its user's (`(for
    /// user)`), rather than the query's own (`(for query)`). Such a refusal says how busy the
    /// server was, not how large an insert it takes.
    pub fn memory_shared(&self) -> bool {
        self.message.contains("Memory limit (total)")
            || self.message.contains("Memory limit (for user)")
    }

    /// An insert that did not finish before a caller's deadline.
    #[cold]
    pub fn timed_out() -> InsertError {
        InsertError {
            retry: Retry::Later,
            code: None,
            message: "insert did not finish before the deadline".to_string(),
        }
    }
}

impl From<ChError> for InsertError {
    fn from(err: ChError) -> InsertError {
        InsertError::from_clickhouse(&err)
    }
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InsertError {}

/// Any other storage failure: bad configuration, ClickHouse unreachable or refusing a query.
#[derive(Debug, Clone)]
pub struct StoreError {
    /// ClickHouse server error code, when the server answered with an exception.
    pub code: Option<u32>,
    pub message: String,
}

impl StoreError {
    #[cold]
    pub(crate) fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            code: None,
            message: message.into(),
        }
    }
}

impl From<ChError> for StoreError {
    #[cold]
    fn from(err: ChError) -> StoreError {
        StoreError {
            code: server_code(&err),
            message: message(&err),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// The client's message, without its "Input/output error" wrapper around an I/O error.
fn message(err: &ChError) -> String {
    match err {
        ChError::Io(e) => e.to_string(),
        e => e.to_string(),
    }
}

fn server_code(err: &ChError) -> Option<u32> {
    match err {
        ChError::Server(e) => Some(e.code),
        _ => None,
    }
}

/// Decides what to do after a failed insert.
///
/// Errors that are nobody's rows' fault keep the rows (they wait in memory, then in the spool,
/// and past both ingest answers `503`, which is visible and loses nothing); only errors that name
/// the data split the insert; only errors that no retry can cure give up (to the dead-letter
/// file). An unknown server code is `Unknown`: retried a few times, then split.
fn classify(err: &ChError) -> (Retry, Option<u32>) {
    let e = match err {
        // Network, protocol desync, timeouts: a fresh connection may well succeed.
        ChError::Io(_) | ChError::Connection(_) | ChError::Driver(_) => {
            return (Retry::Later, None)
        }
        // The client refused the block before sending it (its types do not cast to the
        // table's), a bad URL, or a local misuse: the same block can never succeed.
        ChError::FromSql(_) | ChError::Url(_) | ChError::Other(_) => return (Retry::Never, None),
        ChError::Server(e) => e,
    };
    (retry_of_code(e.code, &e.message), Some(e.code))
}

/// What a server's refusal of an insert with `code` (and `message`) means for its rows.
fn retry_of_code(code: u32, message: &str) -> Retry {
    match code {
        codes::UNKNOWN_TABLE | codes::UNKNOWN_DATABASE | codes::NO_SUCH_COLUMN_IN_TABLE => {
            Retry::AfterMigrate
        }
        // Retried at the same size, a block past the user's `max_memory_usage` waited forever
        // (and the server's whole limit passes with its load, which halves do not hurt).
        codes::MEMORY_LIMIT_EXCEEDED => Retry::Smaller,
        // Current releases refuse one block spanning more than `max_partitions_per_insert_block`
        // months with the same code as "too many parts": smaller inserts do succeed.
        codes::TOO_MANY_PARTS if message.contains("partitions for single INSERT") => Retry::Split,
        codes::CANNOT_PARSE_TEXT
        | codes::CANNOT_PARSE_INPUT_ASSERTION_FAILED
        | codes::CANNOT_PARSE_DATE
        | codes::CANNOT_PARSE_DATETIME
        | codes::CANNOT_PARSE_NUMBER
        | codes::ARGUMENT_OUT_OF_BOUND
        | codes::CANNOT_CONVERT_TYPE
        | codes::INCORRECT_DATA
        | codes::TOO_LARGE_ARRAY_SIZE
        | codes::TOO_LARGE_STRING_SIZE
        | codes::SIZES_OF_ARRAYS_DOESNT_MATCH
        | codes::VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
        | codes::DECIMAL_OVERFLOW
        | FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
        | VIOLATED_CONSTRAINT => Retry::Split,
        codes::UNSUPPORTED_METHOD
        | codes::INCORRECT_NUMBER_OF_COLUMNS
        | codes::THERE_IS_NO_COLUMN
        | codes::NOT_FOUND_COLUMN_IN_BLOCK
        | codes::NUMBER_OF_COLUMNS_DOESNT_MATCH
        | codes::ILLEGAL_COLUMN
        | codes::UNKNOWN_IDENTIFIER
        | codes::NOT_IMPLEMENTED
        | codes::LOGICAL_ERROR
        | codes::UNKNOWN_TYPE
        | codes::TYPE_MISMATCH
        | codes::SYNTAX_ERROR
        | codes::DUPLICATE_COLUMN
        | ILLEGAL_TYPE_OF_ARGUMENT => Retry::Never,
        // The server is busy, short of something, or unreachable behind it: nobody's rows'
        // fault, so these are retried for as long as it takes (the rows wait in the spool).
        codes::TIMEOUT_EXCEEDED
        | codes::TOO_SLOW
        | codes::READONLY
        | codes::CANNOT_ALLOCATE_MEMORY
        | codes::UNKNOWN_USER
        | codes::WRONG_PASSWORD
        | codes::REQUIRED_PASSWORD
        | codes::TOO_MANY_SIMULTANEOUS_QUERIES
        | codes::NO_FREE_CONNECTION
        | codes::SOCKET_TIMEOUT
        | codes::NETWORK_ERROR
        | codes::TABLE_IS_DROPPED
        | codes::ABORTED
        | codes::TABLE_IS_READ_ONLY
        | codes::NOT_ENOUGH_SPACE
        | codes::TOO_MANY_PARTS
        | codes::ALL_CONNECTION_TRIES_FAILED
        | codes::REPLICA_IS_NOT_IN_QUORUM
        | codes::ALL_REPLICAS_ARE_STALE
        | codes::QUERY_WAS_CANCELLED
        | codes::ALL_REPLICAS_LOST
        | codes::KEEPER_EXCEPTION
        // Replicated tables without their ZooKeeper session (18.x: "ZooKeeper session has been
        // expired", "No ZooKeeper session"), too few replicas alive, an insert whose outcome
        // the server does not know ("client must retry"), a ClickHouse user quota (it ends
        // with its interval), a full or failing disk on the server (18.16 says
        // CANNOT_WRITE_TO_FILE_DESCRIPTOR for ENOSPC), a pool with no thread to spare: each
        // was `Unknown`, so after 8 tries the insert was split down to single rows and every
        // one of them dead-lettered although none was at fault (found by an audit).
        | codes::NO_ZOOKEEPER
        | codes::TOO_FEW_LIVE_REPLICAS
        | codes::UNKNOWN_STATUS_OF_INSERT
        | codes::QUOTA_EXPIRED
        | codes::CANNOT_WRITE_TO_FILE_DESCRIPTOR
        | codes::CANNOT_OPEN_FILE
        | codes::CANNOT_FSYNC
        | codes::DEADLOCK_AVOIDED
        | codes::CANNOT_SCHEDULE_TASK
        // A user that may not insert here: a grant missing or revoked (`NOT_ENOUGH_PRIVILEGES`,
        // called ACCESS_DENIED by current releases), the database not among its
        // `allow_databases` (18.16), the ingest host not among its `networks`. Like a wrong
        // password, the user's, never the rows': `Unknown` split every insert down to single
        // rows and dead-lettered each good one within minutes (found by an audit).
        | codes::NOT_ENOUGH_PRIVILEGES
        | codes::DATABASE_ACCESS_DENIED
        | codes::IP_ADDRESS_NOT_ALLOWED
        | AUTHENTICATION_FAILED => Retry::Later,
        // Anything else: maybe transient, maybe the data; retried a few times, then split.
        _ => Retry::Unknown,
    }
}

impl StoreError {
    /// Whether start-up should wait and try its schema again after this error, rather than
    /// stop with it: ClickHouse could not be reached (`reachable` is false: it may still be
    /// starting), or it answered with a code that passes with time (busy, a replica without its
    /// ZooKeeper session, a table a cluster's DDL has not brought yet). A server that answered
    /// and refused the schema (a table of another shape, a column of another type, bad SQL)
    /// would refuse it the same way for the whole wait: its message goes out at once instead
    /// of after 30 s of "not ready".
    pub fn worth_waiting(&self, reachable: bool) -> bool {
        match self.code {
            // A table or database missing for a moment: a cluster's DDL reaches its nodes
            // one after the other.
            Some(code) => matches!(
                retry_of_code(code, &self.message),
                Retry::Later | Retry::AfterMigrate
            ),
            None => !reachable,
        }
    }
}

/// Codes the client crate does not name.
const ILLEGAL_TYPE_OF_ARGUMENT: u32 = 43;
const FUNCTION_THROW_IF_VALUE_IS_NON_ZERO: u32 = 395;
const VIOLATED_CONSTRAINT: u32 = 469;
const AUTHENTICATION_FAILED: u32 = 516;

#[cfg(test)]
mod tests {
    use super::*;

    /// Start-up waits for a server that is not there yet or busy, not for one that refused.
    #[test]
    fn start_up_waits_only_for_what_passes() {
        let coded = |code| StoreError {
            code: Some(code),
            message: "m".into(),
        };
        assert!(StoreError::new("connection refused").worth_waiting(false));
        assert!(!StoreError::new("spans is not a table this service made").worth_waiting(true));
        assert!(coded(codes::NO_ZOOKEEPER).worth_waiting(true));
        assert!(coded(codes::TIMEOUT_EXCEEDED).worth_waiting(true));
        assert!(!coded(codes::SYNTAX_ERROR).worth_waiting(true));
        assert!(!coded(codes::TYPE_MISMATCH).worth_waiting(true));
        assert!(coded(codes::UNKNOWN_DATABASE).worth_waiting(true));
        assert!(!coded(codes::DUPLICATE_COLUMN).worth_waiting(true));
    }

    #[test]
    fn error_classes() {
        let server = |code: u32, message: &str| {
            ChError::Server(clickhouse_rs::errors::ServerError {
                code,
                name: String::new(),
                message: message.to_string(),
                stack_trace: String::new(),
            })
        };
        let io = ChError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let cases = [
            (io, Retry::Later),
            (server(252, "Too many parts (300)"), Retry::Later),
            (
                server(
                    252,
                    "Too many partitions for single INSERT block (more than 100)",
                ),
                Retry::Split,
            ),
            (server(241, "Memory limit exceeded"), Retry::Smaller),
            (server(159, "Timeout exceeded"), Retry::Later),
            (server(60, "Table x doesn't exist"), Retry::AfterMigrate),
            (server(16, "No such column"), Retry::AfterMigrate),
            (server(53, "Type mismatch"), Retry::Never),
            (server(395, "throwIf"), Retry::Split),
            (server(117, "Incorrect data"), Retry::Split),
            (server(100_000, "unknown"), Retry::Unknown),
            (server(210, "Network error"), Retry::Later),
            (server(516, "Authentication failed"), Retry::Later),
            (server(497, "Not enough privileges"), Retry::Later),
            (server(291, "Access denied to database db"), Retry::Later),
            (server(195, "User is not allowed to connect"), Retry::Later),
            (
                server(225, "ZooKeeper session has been expired."),
                Retry::Later,
            ),
            (
                server(319, "Unknown status, client must retry"),
                Retry::Later,
            ),
            (server(201, "Quota for user default expired"), Retry::Later),
            (
                server(
                    75,
                    "Cannot write to file, errno: 28, strerror: No space left on device",
                ),
                Retry::Later,
            ),
            (
                server(
                    285,
                    "Number of alive replicas (1) is less than requested quorum (2)",
                ),
                Retry::Later,
            ),
            (ChError::Other("x".into()), Retry::Never),
        ];
        for (err, expected) in cases {
            assert_eq!(InsertError::from_clickhouse(&err).retry, expected, "{err}");
        }
    }
}
