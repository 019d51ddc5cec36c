//! A spool segment cut at a damaged record: the records after it, which the spool no longer
//! replays, come back through `deadletter salvage` and `deadletter replay`.

use std::time::Duration;

use crate::durability::{post_until_accepted, server_on};
use crate::private_clickhouse::PrivateClickHouse;
use crate::support::*;

/// The spool's files whose names end with `suffix` or hold it (`.seg`, `.seg.cut-`).
fn spool_files(server: &Server, part: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(server.data_dir().join("spool"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(part))
        .collect();
    files.sort();
    files
}

#[test]
fn records_after_a_damaged_one_come_back_through_salvage_and_replay() {
    const BATCHES: usize = 8;
    const SPANS: usize = 5;
    let mut ch = PrivateClickHouse::start();
    let mut server = server_on(&ch, &[("INGEST_SHUTDOWN_TIMEOUT_MS", "10000")]);
    let key = server.ready_key("org-salvage");
    ch.stop();
    for i in 0..BATCHES {
        post_until_accepted(&server, &key, &batch(&format!("salv{i}"), 1, SPANS));
    }
    server.signal(SIGTERM);
    assert_eq!(server.wait_exit(Duration::from_secs(30)), 0);

    // Every batch spooled at the stop, one record each: a byte of the third one's payload is
    // changed, as a disk that lied would.
    let segments = spool_files(&server, ".seg");
    assert_eq!(segments.len(), 1, "{segments:?}");
    let mut bytes = std::fs::read(&segments[0]).unwrap();
    let mut frames = Vec::new();
    let mut at = 16;
    while at < bytes.len() {
        frames.push(at);
        at += 8 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    }
    assert_eq!(frames.len(), BATCHES, "one record per batch");
    bytes[frames[2] + 100] ^= 0x40;
    std::fs::write(&segments[0], &bytes).unwrap();

    // The next start replays the two records before it, and cuts the rest off, keeping it.
    ch.start_again();
    server.spawn();
    server.wait_rows_within((2 * SPANS) as u64, Duration::from_secs(60));
    let cuts = spool_files(&server, ".seg.cut-");
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    let cut = cuts[0].to_str().unwrap();

    let run = |args: &[&str]| {
        let out = server.cli(args);
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, out, err) = run(&["deadletter", "salvage", cut]);
    assert_eq!(code, Some(0), "{err}");
    let found = BATCHES - 3;
    assert!(
        out.contains(&format!("{found} records of {} rows found", found * SPANS)),
        "{out}"
    );
    assert!(
        out.contains(&format!("org-salvage: {} rows", found * SPANS)),
        "{out}"
    );
    let salvaged = format!("{cut}.jsonl");
    assert!(
        out.contains(&format!("deadletter replay {salvaged}")),
        "{out}"
    );
    // Not twice into the same file.
    let (code, _, err) = run(&["deadletter", "salvage", cut]);
    assert_eq!(code, Some(1));
    assert!(err.contains("exists already"), "{err}");

    let (code, _, err) = run(&["deadletter", "replay", &salvaged]);
    assert_eq!(code, Some(0), "{err}");
    let traces: Vec<String> = server
        .rows("DISTINCT trace_id", "ORDER BY trace_id")
        .iter()
        .map(|r| r["trace_id"].as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = (0..BATCHES)
        .filter(|&i| i != 2)
        .map(|i| format!("salv{i}-t0"))
        .collect();
    assert_eq!(traces, want, "every batch but the damaged one");
    assert_eq!(server.raw_count(), ((BATCHES - 1) * SPANS) as u64);
}
