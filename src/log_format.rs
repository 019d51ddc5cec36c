//! How every command logs: `INGEST_LOG_FORMAT`, and the lines a command writes on stderr
//! itself (its fatal error, its notes) in the log's format. Re-exported by `config`.

use clap::Args;

/// How every command logs; read first, before the command runs.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log format on stderr: "text" for people (coloured only when stderr is a terminal) or
    /// "json", one object per line (timestamp, level, target, message and the event's fields)
    /// for log shippers. The filter is INGEST_LOG.
    #[arg(long, global = true, env = "INGEST_LOG_FORMAT", default_value = "text")]
    pub log_format: String,
}

/// The log filter without `INGEST_LOG` (a variable only, read by `main.rs`): the ClickHouse
/// client crate's own warnings repeat what the server logs.
pub const DEFAULT_LOG_FILTER: &str = "info,clickhouse_rs=error";

/// The format of the log (`INGEST_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    /// The line a command's fatal error (exit status 1, or 3) is written as on stderr at `now`:
    /// `traceingest: MESSAGE`, or in the JSON format one object shaped as the log's lines
    /// (`timestamp` in UTC to the microsecond, `level`, `target`, `message`), so that a shipper
    /// reading JSON lines takes the one saying why the command stopped. Written directly, not
    /// through the log: its filter (`INGEST_LOG=off`, or one that did not parse) must not hide
    /// it.
    pub fn fatal_line(self, message: &str, now: std::time::SystemTime) -> String {
        self.command_line("ERROR", message, now)
    }

    /// A line a command writes on stderr besides the log at `level` (`ERROR`, `WARN`,
    /// `INFO`): `traceingest: MESSAGE`, or in the JSON format an object shaped as the log's
    /// lines, so that stderr stays one JSON object per line (`keys create` said which key it
    /// created in plain text there).
    pub fn command_line(self, level: &str, message: &str, now: std::time::SystemTime) -> String {
        match self {
            LogFormat::Text => format!("traceingest: {message}"),
            LogFormat::Json => {
                let since = now
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                let secs = since.as_secs() as i64;
                let (y, mo, d) = crate::calendar::civil_from_days(secs.div_euclid(86_400));
                let s = secs.rem_euclid(86_400);
                let timestamp = format!(
                    "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
                    s / 3600,
                    s / 60 % 60,
                    s % 60,
                    since.subsec_micros()
                );
                serde_json::json!({
                    "timestamp": timestamp,
                    "level": level,
                    "target": "traceingest",
                    "message": message,
                })
                .to_string()
            }
        }
    }
}

impl LogArgs {
    /// The checked format; the error names the setting.
    pub fn resolve(&self) -> Result<LogFormat, String> {
        match self.log_format.as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "INGEST_LOG_FORMAT must be \"text\" (for people) or \"json\" (one object per line), got {other:?}"
            )),
        }
    }
}
