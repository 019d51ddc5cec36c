//! A private ClickHouse server that a test may stop and start: its own ports, data and logs in a temp dir, never the shared instance.
//!
//! The durability tests take ClickHouse down under a running traceingest; doing that to the
//! shared server on 9000/8123 would break every other test (and other people's work). This
//! one is started from the installed `clickhouse-server` with a minimal config: free TCP and
//! HTTP ports on 127.0.0.1, no interserver port, `path`/`tmp_path`/`user_files_path`/
//! `format_schema_path` and logs under its own directory, the system `users.xml`. As root (CI)
//! it runs as user `clickhouse` via `runuser`, as the packaged server does. It starts in well
//! under a second here; `stop` sends SIGTERM and waits for the process to go, `start_again`
//! brings it back on the same data, and drop stops it and removes the directory.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SERVER_BIN: &str = "/usr/sbin/clickhouse-server";
const SYSTEM_USERS: &str = "/etc/clickhouse-server/users.xml";

static NEXT: AtomicUsize = AtomicUsize::new(0);

pub struct PrivateClickHouse {
    dir: PathBuf,
    pub tcp_port: u16,
    pub http_port: u16,
    /// The daemon's pid while it runs.
    pid: Option<i32>,
}

impl PrivateClickHouse {
    /// Starts a fresh server and waits until it answers queries.
    pub fn start() -> PrivateClickHouse {
        assert!(
            Path::new(SERVER_BIN).exists(),
            "{SERVER_BIN} is missing: install clickhouse-server (scripts/clickhouse.sh)"
        );
        let dir = std::env::temp_dir().join(format!(
            "traceingest-ch-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["data", "log"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let (tcp_port, http_port) = (free_port(), free_port());
        let config = format!(
            r#"<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>{d}/log/server.log</log>
        <errorlog>{d}/log/server.err.log</errorlog>
        <size>10M</size>
        <count>1</count>
    </logger>
    <http_port>{http_port}</http_port>
    <tcp_port>{tcp_port}</tcp_port>
    <listen_host>127.0.0.1</listen_host>
    <max_connections>256</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <path>{d}/data/</path>
    <tmp_path>{d}/data/tmp/</tmp_path>
    <user_files_path>{d}/data/user_files/</user_files_path>
    <format_schema_path>{d}/data/format_schemas/</format_schema_path>
    <users_config>{d}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mlock_executable>false</mlock_executable>
</yandex>
"#,
            d = dir.display()
        );
        std::fs::write(dir.join("config.xml"), config).unwrap();
        std::fs::copy(SYSTEM_USERS, dir.join("users.xml")).unwrap();
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "clickhouse:"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "chown the private ClickHouse dir");
        }
        let mut ch = PrivateClickHouse {
            dir,
            tcp_port,
            http_port,
            pid: None,
        };
        ch.start_again();
        ch
    }

    pub fn native_url(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.tcp_port)
    }

    pub fn http_addr(&self) -> String {
        format!("127.0.0.1:{}", self.http_port)
    }

    /// Starts the (stopped) server on its data and waits until it answers.
    pub fn start_again(&mut self) {
        assert!(self.pid.is_none(), "already running");
        let pid_file = self.dir.join("ch.pid");
        let _ = std::fs::remove_file(&pid_file);
        let config = self.dir.join("config.xml");
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "clickhouse", "--", SERVER_BIN]);
            c
        } else {
            Command::new(SERVER_BIN)
        };
        let status = cmd
            .arg(format!("--config-file={}", config.display()))
            .arg("--daemon")
            .arg(format!("--pid-file={}", pid_file.display()))
            .status()
            .expect("run clickhouse-server");
        assert!(status.success(), "clickhouse-server --daemon failed");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let pid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            if let (Some(pid), true) = (pid, self.answers()) {
                self.pid = Some(pid);
                return;
            }
            assert!(
                Instant::now() < deadline,
                "private ClickHouse did not answer within 60 s; see {}/log",
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then waits until the process is gone (and its ports closed).
    pub fn stop(&mut self) {
        let Some(pid) = self.pid.take() else { return };
        // SAFETY: kill(2) on the pid of the server this helper started.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        // SAFETY: signal 0 only checks that the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            if Instant::now() > deadline {
                // SAFETY: as above; it would not stop politely.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server answers `SELECT 1` over HTTP.
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(self.http_addr()) else {
            return false;
        };
        let sql = "SELECT 1";
        let req = format!(
            "POST / HTTP/1.0\r\nHost: ch\r\nContent-Length: {}\r\n\r\n{sql}",
            sql.len()
        );
        if s.write_all(req.as_bytes()).is_err() {
            return false;
        }
        let mut out = String::new();
        s.read_to_string(&mut out).is_ok() && out.starts_with("HTTP/1.") && out.contains(" 200 ")
    }
}

impl Drop for PrivateClickHouse {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A port free right now (the listener is closed before ClickHouse binds it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
