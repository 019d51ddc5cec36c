//! A ClickHouse server's release (`SELECT version()`) and what this service does differently
//! on it: the one place that knows which feature came with which release.
//!
//! Everything the service runs works on 18.16, the oldest release it supports; a newer server
//! only adds to it. Today that is `insert_deduplication_token` (22.2), which a cluster-mode
//! insert sends so that a retry is recognised by its rows rather than by its bytes. The rest of
//! what differs on current releases (Atomic databases, ClickHouse Keeper, the config's root
//! element) changes nothing the service issues; docs/fleet.md describes it, with the DDL.

use std::fmt;

/// `major.minor` of a ClickHouse release (`18.16.1` -> 18.16, `24.8.4.13` -> 24.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerVersion {
    pub major: u32,
    pub minor: u32,
}

impl ServerVersion {
    /// The oldest release the service supports (and the only one its tests can run).
    pub const OLDEST: ServerVersion = ServerVersion::new(18, 16);

    pub const fn new(major: u32, minor: u32) -> ServerVersion {
        ServerVersion { major, minor }
    }

    /// What `SELECT version()` returns: `18.16.1`, `24.8.4.13`, or with a suffix a build
    /// adds (`23.3.8.21-lts`, `22.8.1.1 (official build)`). `None` when it does not start with
    /// two numbers.
    pub fn parse(text: &str) -> Option<ServerVersion> {
        let mut parts = text.trim().split('.');
        let major = parts.next()?.parse().ok()?;
        let minor: String = parts
            .next()?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        Some(ServerVersion::new(major, minor.parse().ok()?))
    }

    /// `insert_deduplication_token` (22.2): a block's dedup identity given by the client
    /// instead of the hash of its bytes.
    pub fn supports_insert_deduplication_token(self) -> bool {
        self >= ServerVersion::new(22, 2)
    }

    /// `CREATE DATABASE` makes an `Atomic` database unless told otherwise (20.10): a dropped
    /// table (and its ZooKeeper path) goes only after `database_atomic_delay_before_drop_table_sec`
    /// (480 s), unless the `DROP` says `SYNC`.
    pub fn has_atomic_databases(self) -> bool {
        self >= ServerVersion::new(20, 10)
    }

    /// `DROP TABLE|DATABASE ... SYNC`: wait until the table and its ZooKeeper path are gone.
    /// The word is accepted where `Atomic` databases are the default (20.10).
    pub fn supports_drop_sync(self) -> bool {
        self.has_atomic_databases()
    }

    /// What to append to a `DROP` so that the same name and ZooKeeper path can be used again at
    /// once: ` SYNC` where it is accepted, else nothing (an `Ordinary` database drops at once).
    pub fn drop_suffix(self) -> &'static str {
        if self.supports_drop_sync() {
            " SYNC"
        } else {
            ""
        }
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_servers_answer() {
        let cases: &[(&str, Option<(u32, u32)>)] = &[
            ("18.16.1", Some((18, 16))),
            ("22.2.2.1", Some((22, 2))),
            ("24.8.4.13", Some((24, 8))),
            ("23.3.8.21-lts", Some((23, 3))),
            (" 25.1.1.1 (official build)\n", Some((25, 1))),
            ("22.1", Some((22, 1))),
            ("19", None),
            ("", None),
            ("v22.2.1", None),
            ("22.x.1", None),
        ];
        for &(text, want) in cases {
            let got = ServerVersion::parse(text).map(|v| (v.major, v.minor));
            assert_eq!(got, want, "{text:?}");
        }
        assert_eq!(
            ServerVersion::parse("18.16.1").unwrap().to_string(),
            "18.16"
        );
    }

    #[test]
    fn features_by_release() {
        // (version, dedup token, atomic databases and DROP ... SYNC)
        let cases = [
            ((18, 16), false, false),
            ((20, 9), false, false),
            ((20, 10), false, true),
            ((21, 12), false, true),
            ((22, 1), false, true),
            ((22, 2), true, true),
            ((24, 8), true, true),
            ((100, 0), true, true),
        ];
        for ((major, minor), token, atomic) in cases {
            let v = ServerVersion::new(major, minor);
            assert_eq!(v.supports_insert_deduplication_token(), token, "{v}");
            assert_eq!(v.has_atomic_databases(), atomic, "{v}");
            assert_eq!(v.supports_drop_sync(), atomic, "{v}");
            assert_eq!(v.drop_suffix(), if atomic { " SYNC" } else { "" }, "{v}");
        }
        assert!(ServerVersion::OLDEST < ServerVersion::new(18, 17));
        assert!(ServerVersion::new(9, 99) < ServerVersion::OLDEST);
    }
}
