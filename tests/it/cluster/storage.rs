//! Exactly once in a cluster: two ingest replicas sharing the load, a ClickHouse replica
//! killed or hung during load, a retried block on the other replica, a whole shard down, a
//! stop during an unfinished insert (replayed as the same blocks), re-pricing through the
//! `Distributed` table, dead-lettered rows replayed into their shards.

use super::*;

#[test]
fn two_replicas_share_the_load_and_every_span_is_stored_once() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r2", &[]);
    let key = a.ready_key("org-fleet");
    b.ready_key_existing(&key);
    let started = Instant::now();
    let cpu_before = cluster.cpu_s();
    let (stop, accepted) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|s| {
        for t in 0..2 {
            let (stop, accepted, key) = (&stop, &accepted, &key);
            let (a, b) = (&a, &b);
            s.spawn(move || load(&[a, b], key, &format!("share{t}-"), stop, accepted, &[]));
        }
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::Relaxed);
    });
    let accepted = accepted.load(Ordering::Relaxed);
    assert!(accepted > 500, "only {accepted} spans in 5 s");
    a.wait_rows_within(accepted, Duration::from_secs(30));
    check_stored_once(&cluster, &a, accepted);
    let cpu = cluster.cpu_s() - cpu_before;
    for s in [&a, &b] {
        assert!(
            s.metric_value("traceingest_flush_rows_total") > 0.0,
            "both replicas insert"
        );
    }
    eprintln!(
        "two replicas: {accepted} spans accepted, stored once (FINAL = raw = {accepted}), {:.1} s; \
         ClickHouse CPU {cpu:.2} s on 4 nodes = {:.1} us per span (small inserts every 100 ms: \
         mostly the cost per insert)",
        started.elapsed().as_secs_f64(),
        cpu * 1e6 / accepted as f64
    );
}

#[test]
fn a_replica_killed_during_load_loses_and_duplicates_nothing() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (_cleanup, a, b) = cluster.pair("s1r1", "s2r1", &[]);
    let key = a.ready_key("org-kill");
    b.ready_key_existing(&key);
    let (stop, accepted) = (AtomicBool::new(false), AtomicU64::new(0));
    std::thread::scope(|s| {
        let (stop2, accepted2, key2) = (&stop, &accepted, &key);
        let (a2, b2) = (&a, &b);
        s.spawn(move || load(&[a2, b2], key2, "kill-", stop2, accepted2, &[]));
        std::thread::sleep(Duration::from_millis(1500));
        // A replica of each shard: inserts fail over to the other one.
        cluster.kill9("s1r2");
        cluster.kill9("s2r2");
        std::thread::sleep(Duration::from_millis(2500));
        cluster.up();
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, Ordering::Relaxed);
    });
    let accepted = accepted.load(Ordering::Relaxed);
    a.wait_rows_within(accepted, Duration::from_secs(60));
    check_stored_once(&cluster, &a, accepted);
    eprintln!("kill -9 of a replica per shard: {accepted} spans, stored once");
}

/// One replica hung (`SIGSTOP`: it still accepts TCP connections, the kernel does, but answers
/// nothing) during load, then resumed: inserts for its shard go to the other replica (which
/// keeps growing while it is stopped), the server logs once that the node left the rotation and
/// once that it is back (its probe succeeded), and nothing is lost or duplicated.
#[test]
fn a_hung_replica_is_left_for_the_other_one_and_nothing_is_lost_or_duplicated() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let hung = "s1r2";
    let hung_at = format!("127.0.0.1:{}", cluster.node(hung).native);
    let mut cleanup = DropDb(&cluster, String::new());
    // `info` for the node's way back into the rotation.
    let log = [("INGEST_LOG", "warn,traceingest::sink::clickhouse=info")];
    let a = cluster.server("s1r1", None, &log);
    cleanup.1 = a.database.clone();
    let key = a.ready_key("org-hung");
    let db = a.database.clone();
    let on_other = || cluster.count_at("s1r1", &format!("SELECT count() FROM `{db}`.spans_local"));
    let left = |a: &Server| {
        a.log()
            .lines()
            .filter(|l| l.contains("out of rotation") && l.contains(&hung_at))
            .count()
    };
    let (stop, accepted) = (AtomicBool::new(false), AtomicU64::new(0));
    let (resumed, left_while_stopped) = std::thread::scope(|s| {
        let (stop2, accepted2, key2, a2) = (&stop, &accepted, &key, &a);
        s.spawn(move || load(&[a2], key2, "hung-", stop2, accepted2, &[]));
        std::thread::sleep(Duration::from_millis(1500));
        // Not in the middle of an insert, as far as one can tell: an insert the node has
        // started waits for the client's insert timeout (60 s) before it fails over.
        wait_until(
            "no insert running on the node",
            Duration::from_secs(10),
            || {
                cluster.count_at(
                    hung,
                    "SELECT count() FROM system.processes WHERE query LIKE 'INSERT%'",
                ) == 0
            },
        );
        cluster.signal(hung, libc::SIGSTOP);
        let resume = ResumeOnDrop(&cluster, hung);
        wait_until("the node out of rotation", Duration::from_secs(90), || {
            left(&a) > 0
        });
        let before = on_other();
        wait_until(
            "inserts on the other replica",
            Duration::from_secs(30),
            || on_other() > before,
        );
        // A few probes more (each waits for the 2 s connection timeout) while it hangs.
        std::thread::sleep(Duration::from_secs(4));
        let left_while_stopped = left(&a);
        drop(resume);
        wait_until("the node back in rotation", Duration::from_secs(60), || {
            a.log()
                .lines()
                .any(|l| l.contains("back in rotation") && l.contains(&hung_at))
        });
        let resumed = on_other();
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        (resumed, left_while_stopped)
    });
    let accepted = accepted.load(Ordering::Relaxed);
    a.wait_rows_within(accepted, Duration::from_secs(90));
    check_stored_once(&cluster, &a, accepted);
    assert_eq!(
        left_while_stopped,
        1,
        "logged once however many probes failed:\n{}",
        a.log()
    );
    eprintln!(
        "hung replica: {accepted} spans, stored once; {resumed} rows of shard 1 on its other \
         replica when it resumed"
    );
}

/// Resumes a node stopped with `SIGSTOP`, whatever happens to the test.
struct ResumeOnDrop<'a>(&'a Cluster, &'a str);

impl Drop for ResumeOnDrop<'_> {
    fn drop(&mut self) {
        self.0.signal(self.1, libc::SIGCONT);
    }
}

#[test]
fn a_retried_block_on_the_other_replica_is_dropped_as_a_duplicate() {
    use traceingest::row::{RowBatch, RowRef};
    use traceingest::sink::clickhouse::{RowRun, ShardsDone, Store};
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let db = format!("ti_it_dedup_{}", std::process::id());
    let _drop = DropDb(&cluster, db.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = Store::new(&cluster.url, &db)
        .unwrap()
        .in_cluster(Some(&cluster.name))
        .unwrap();
    rt.block_on(store.migrate()).unwrap();
    // The release the inserts below go by (on 18.16, no dedup token: the blocks' bytes decide).
    let version = rt.block_on(store.server_version()).unwrap();
    let answered = cluster.sql_at("s1r1", "SELECT version()");
    assert_eq!(Some(version), ServerVersion::parse(&answered), "{answered}");
    let traces: Vec<String> = (0..40).map(|i| format!("dedup-trace-{i}")).collect();
    let rows: Vec<RowRef<'_>> = traces
        .iter()
        .flat_map(|t| {
            ["a", "b"].map(|s| RowRef {
                org_id: "org-dedup",
                trace_id: t,
                span_id: s,
                start_time_ms: 1_700_000_000_000,
                end_time_ms: 1_700_000_000_001,
                ingested_at: 1_700_000_000,
                ..RowRef::default()
            })
        })
        .collect();
    let batch = RowBatch::from_rows(&rows);
    let runs = [RowRun {
        batch: &batch,
        rows: 0..batch.len(),
    }];
    // Each insert of a shard goes to the next replica in turn: the second one sends the very
    // same blocks to the other replica of each shard, as a retry after a timeout would.
    for _ in 0..2 {
        let mut done = ShardsDone::default();
        let n = rt
            .block_on(store.insert_runs_resuming(&runs, &mut done))
            .unwrap();
        assert_eq!(n.rows, 80);
    }
    // A replica whose copy of a block was dropped as a duplicate gets the rows by fetching
    // them from the other one, in the background: wait until both replicas of each shard
    // agree (reads through `spans` may go to either).
    let local =
        |node: &str| cluster.count_at(node, &format!("SELECT count() FROM `{db}`.spans_local"));
    wait_until(
        "both replicas of each shard to hold its rows",
        Duration::from_secs(30),
        || {
            cluster.nodes.iter().all(|n| {
                let peer = cluster
                    .nodes
                    .iter()
                    .find(|p| p.shard == n.shard && p.name != n.name)
                    .unwrap();
                let here = local(&n.name);
                here > 0 && here == local(&peer.name)
            })
        },
    );
    let count = |modifier: &str| {
        cluster.count_at(
            "s1r1",
            &format!("SELECT count() FROM `{db}`.spans {modifier}"),
        )
    };
    assert_eq!((count("FINAL"), count("")), (80, 80), "(FINAL, raw)");
    for n in &cluster.nodes {
        let rows = local(&n.name);
        assert!(rows > 0 && rows < 80, "{}: {rows} rows", n.name);
    }
}

/// A whole shard down: every insert waits (the frozen one holds the rest back), memory fills to
/// half its bound, then the spool takes the newest batches. "Full", from the code: the spool is
/// full when the flush thread could not append the next batch (spool bytes + the record + a
/// segment header if a new segment is due > `INGEST_SPOOL_MAX_BYTES`: `SpoolError::Full`, shown
/// as `traceingest_buffer_full 1`), and memory is full when a worker's reservation would pass
/// `INGEST_BUFFER_MAX_BYTES` (or `_ROWS`). `/ingest` may answer `503 buffer_full` only when
/// both are; any `503` before that fails the test. Then `/ready` says so too, and when the
/// shard returns every span accepted arrives, once (with and without `FINAL`).
#[test]
fn a_whole_shard_down_spools_then_refuses_and_everything_arrives_when_it_returns() {
    const MEMORY: u64 = 256 << 10;
    const SPOOL: u64 = 256 << 10;
    let Some(cluster) = Cluster::get() else {
        return;
    };
    // Dropped after the servers (declared before them), so none of them sees its tables go.
    let mut cleanup = DropDb(&cluster, String::new());
    let (memory, spool) = (MEMORY.to_string(), SPOOL.to_string());
    let a = cluster.server(
        "s1r1",
        None,
        &[
            ("INGEST_BUFFER_MAX_BYTES", memory.as_str()),
            ("INGEST_SPOOL_MAX_BYTES", spool.as_str()),
        ],
    );
    cleanup.1 = a.database.clone();
    let key = a.ready_key("org-shard");
    cluster.kill9("s2r1");
    cluster.kill9("s2r2");
    // A tight loop of requests, as fast as the server answers, until the first refusal.
    let (mut accepted, mut i) = (0u64, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    let refusal = loop {
        assert!(
            Instant::now() < deadline,
            "never refused: {accepted} spans accepted"
        );
        let r = a.post_ingest(&key, &batch(&format!("shard{i}"), 2, 5));
        i += 1;
        match (r.status, r.code().as_str()) {
            (202, _) => accepted += 10,
            (503, "buffer_full") => break r,
            (s, c) => panic!("unexpected {s} {c}"),
        }
    };
    assert!(refusal.header("retry-after").is_some());
    // How often the flush thread fell behind (on a busy machine) and a request waited for it.
    let waits = a.metric_value("traceingest_room_waits_total");
    eprintln!("{accepted} spans accepted before the refusal, {waits} requests waited for room");
    // Nothing flows while the shard is down: what the metrics say now is what the refusal met.
    let spool_bytes = a.metric_value("traceingest_spool_bytes");
    let memory_bytes = a.metric_value("traceingest_buffered_bytes");
    assert_eq!(
        a.metric_value("traceingest_buffer_full"),
        1.0,
        "503 while the spool had room: {spool_bytes} of {SPOOL} spool bytes, \
         {memory_bytes} of {MEMORY} memory bytes"
    );
    assert!(
        spool_bytes > 0.9 * SPOOL as f64,
        "the spool is full: {spool_bytes} of {SPOOL} bytes"
    );
    // Within a batch (a few KiB) of its bound: the refused batch did not fit.
    assert!(
        memory_bytes > 0.9 * MEMORY as f64,
        "memory is full: {memory_bytes} of {MEMORY} bytes"
    );
    assert!(a.metric_value("traceingest_spooled_rows_total") > 0.0);
    let ready = a.get_admin("/ready");
    assert_eq!(
        (ready.status, ready.code().as_str()),
        (503, "buffer_full"),
        "/ready once memory and spool are full"
    );
    // Refused again while nothing moves.
    let r = a.post_ingest(&key, &batch("shard-again", 2, 5));
    assert_eq!((r.status, r.code().as_str()), (503, "buffer_full"));
    cluster.up();
    a.wait_rows_within(accepted, Duration::from_secs(90));
    check_stored_once(&cluster, &a, accepted);
    let ready = a.get_admin("/ready");
    assert_eq!(ready.status, 200, "ready again once the spool is drained");
    eprintln!(
        "shard down: {accepted} spans accepted, refused at {spool_bytes} spool bytes of \
         {SPOOL} and {memory_bytes} memory bytes of {MEMORY}; all stored once"
    );
}

/// Inserts frozen by a shard outage (the other shard took them), then the server stops
/// (`SIGTERM`, or `kill -9` in `wal` mode), the shard returns and the server starts again: the
/// replay sends the same blocks (`spool/insert.intent`), so the shard that had them drops them
/// and every span is stored once, raw and with `FINAL`.
fn a_stop_during_an_unfinished_insert(durability: &str, kill: bool) {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let mut cleanup = DropDb(&cluster, String::new());
    let mut a = cluster.server(
        "s1r1",
        None,
        &[
            ("INGEST_DURABILITY", durability),
            ("INGEST_SHUTDOWN_TIMEOUT_MS", "3000"),
        ],
    );
    cleanup.1 = a.database.clone();
    let key = a.ready_key("org-replay");
    cluster.kill9("s2r1");
    cluster.kill9("s2r2");
    let mut accepted = 0;
    for i in 0..30 {
        assert_eq!(
            a.post_ingest(&key, &batch(&format!("rep{i}"), 2, 5)).status,
            202
        );
        accepted += 10;
    }
    wait_until("a failed insert", Duration::from_secs(10), || {
        a.metric_value("traceingest_flush_errors_total") > 0.0
    });
    let shard1 = |c: &Cluster| {
        c.count_at(
            "s1r1",
            &format!("SELECT count() FROM `{}`.spans_local", a.database),
        )
    };
    // Shard 1 took its part of the frozen insert (on whichever replica was next in its
    // rotation: s1r1 has it at once or once it fetched it).
    wait_until(
        "shard 1's part of the frozen insert on s1r1",
        Duration::from_secs(30),
        || shard1(&cluster) > 0,
    );
    let before = shard1(&cluster);
    // Batches after the frozen insert: a replay that did not keep its composition would put
    // them in the same insert, and shard 1 would get its rows again in another block.
    for i in 30..40 {
        assert_eq!(
            a.post_ingest(&key, &batch(&format!("rep{i}"), 2, 5)).status,
            202
        );
        accepted += 10;
    }
    if kill {
        a.signal(libc::SIGKILL);
        a.wait_exit(Duration::from_secs(10));
    } else {
        a.signal(SIGTERM);
        assert_eq!(a.wait_exit(Duration::from_secs(20)), 0);
    }
    assert!(
        a.data_dir().join("spool/insert.intent").exists(),
        "the unfinished insert is written down"
    );
    cluster.up();
    a.spawn();
    a.wait_rows_within(accepted, Duration::from_secs(60));
    check_stored_once(&cluster, &a, accepted);
    wait_until("the intent removed", Duration::from_secs(10), || {
        !a.data_dir().join("spool/insert.intent").exists()
    });
    eprintln!(
        "{durability} {}: {accepted} spans, {before} on shard 1 before the stop, stored once",
        if kill { "kill -9" } else { "SIGTERM" }
    );
}

#[test]
fn a_clean_stop_during_an_unfinished_insert_replays_the_same_blocks() {
    a_stop_during_an_unfinished_insert("buffer", false);
}

#[test]
fn kill_9_in_wal_mode_during_an_unfinished_insert_replays_the_same_blocks() {
    a_stop_during_an_unfinished_insert("wal", true);
}

/// `reprice` in cluster mode: it reads through `spans` (`FINAL` per shard) and writes the
/// corrected copies through it, so each lands on its own span's shard; the tables then keep
/// one row per span, with the new costs.
#[test]
fn reprice_through_the_distributed_table_corrects_every_shard() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ti-cluster-reprice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let genai = |input: f64, output: f64| {
        serde_json::json!([{"id": "acme", "name": "Acme", "api_pattern": "x",
            "provider_match": {"starts_with": "acme"},
            "models": [{"id": "model-x", "match": {"starts_with": "model-x"},
                        "prices": {"input_mtok": input, "output_mtok": output}}]}])
        .to_string()
    };
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    std::fs::write(&old, genai(1.0, 10.0)).unwrap();
    std::fs::write(&new, genai(2.0, 20.0)).unwrap();
    let mut cleanup = DropDb(&cluster, String::new());
    let server = cluster.server(
        "s1r1",
        None,
        &[("INGEST_PRICING_FILE", old.to_str().unwrap())],
    );
    cleanup.1 = server.database.clone();
    let key = server.ready_key("org-reprice");
    let start = 1_785_369_600_000u64; // 2026-07-30T00:00:00Z
    let traces: Vec<serde_json::Value> = (0..8)
        .map(|t| {
            let spans: Vec<serde_json::Value> = (0..2)
                .map(|s| {
                    serde_json::json!({"spanId": format!("s{s}"), "spanType": "llm",
                        "name": "call", "startTime": start, "endTime": start + 100,
                        "provider": "acme", "modelId": "model-x-1",
                        "usage": {"inputTokens": 1000, "outputTokens": 100}})
                })
                .collect();
            serde_json::json!({"traceId": format!("rp-{t}"), "traceName": "t", "spans": spans})
        })
        .collect();
    let body = serde_json::to_vec(&serde_json::json!({"version": "v1", "traces": traces})).unwrap();
    assert_eq!(server.post_ingest(&key, &body).status, 202);
    server.wait_rows(16);
    check_stored_once(&cluster, &server, 16);
    let priced_at = |cost: &str| {
        server.rows(
            "count() AS n",
            &format!("WHERE toString(total_cost) = '{cost}'"),
        )[0]["n"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    // 1000 x 1e-6 + 100 x 10e-6.
    assert_eq!(priced_at("0.0020000000"), 16);

    let summary = server.reprice_day(&new, &[]);
    assert!(summary.contains("16 corrected rows written"), "{summary}");
    // The Distributed table forwards the corrected rows to the shards in the background, and
    // each shard's other replica fetches them: wait until every replica shows only new costs.
    let db = &server.database;
    let old_costs_at = |node: &str| {
        cluster.count_at(
            node,
            &format!(
                "SELECT count() FROM `{db}`.spans_local FINAL \
                 WHERE toString(total_cost) != '0.0040000000'"
            ),
        )
    };
    wait_until(
        "the corrected rows on every replica",
        Duration::from_secs(30),
        || cluster.nodes.iter().all(|n| old_costs_at(&n.name) == 0),
    );
    assert_eq!(priced_at("0.0040000000"), 16);
    assert_eq!(server.count(), 16, "one row per span after FINAL");
    for n in &cluster.nodes {
        let wrong = cluster.rows_of_other_shards(n, db);
        assert_eq!(wrong, 0, "{}: a corrected row on the wrong shard", n.name);
    }
    let again = server.reprice_day(&new, &[]);
    assert!(again.contains("0 corrected rows written"), "{again}");
    // A command that forgets INGEST_CLICKHOUSE_CLUSTER is refused before it changes anything.
    let single = Command::new(BIN)
        .args(["reprice", "--from", "2026-07-30", "--to", "2026-07-31"])
        .env(
            "INGEST_CLICKHOUSE_URL",
            format!("tcp://127.0.0.1:{}", cluster.node("s1r1").native),
        )
        .env("INGEST_CLICKHOUSE_DATABASE", db)
        .env_remove("INGEST_CLICKHOUSE_CLUSTER")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&single.stderr);
    assert!(!single.status.success(), "{err}");
    assert!(
        err.contains("is a cluster's table (Distributed); set INGEST_CLICKHOUSE_CLUSTER"),
        "{err}"
    );
    assert_eq!(server.count(), 16);
    assert_eq!(priced_at("0.0040000000"), 16);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `deadletter replay` in cluster mode: rows every shard refused go in again once the shards
/// take them, each on its own span's shard, stored once; replaying the same file again sends
/// the same blocks, which the replicated tables drop as duplicates.
#[test]
fn dead_lettered_rows_replay_into_their_shards_once() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let mut cleanup = DropDb(&cluster, String::new());
    let server = cluster.server("s1r1", None, &[]);
    cleanup.1 = server.database.clone();
    let db = server.database.clone();
    let key = server.ready_key("org-replay");
    // On every shard (one replica each; ZooKeeper takes the change to the other), and on
    // every replica before the rows come.
    let on_every_replica = |present: bool| {
        wait_until(
            "the column change on every replica",
            Duration::from_secs(30),
            || {
                cluster.nodes.iter().all(|n| {
                    let n = cluster.count_at(
                        &n.name,
                        &format!(
                            "SELECT count() FROM system.columns WHERE database = '{db}' \
                             AND table = 'spans_local' AND name = 'poison'"
                        ),
                    );
                    (n == 1) == present
                })
            },
        );
    };
    for node in ["s1r1", "s2r1"] {
        cluster.sql_at(
            node,
            &format!(
                "ALTER TABLE `{db}`.spans_local ADD COLUMN poison UInt8 \
                 MATERIALIZED throwIf(org_id = 'org-replay')"
            ),
        );
    }
    on_every_replica(true);
    assert_eq!(server.post_ingest(&key, &batch("dl", 8, 3)).status, 202);
    let live = server.data_dir().join("deadletter/spans.jsonl");
    wait_until("24 dead letters", Duration::from_secs(60), || {
        std::fs::read_to_string(&live).is_ok_and(|t| t.lines().count() == 24)
    });
    for node in ["s1r1", "s2r1"] {
        cluster.sql_at(
            node,
            &format!("ALTER TABLE `{db}`.spans_local DROP COLUMN poison"),
        );
    }
    on_every_replica(false);
    let file = server.data_dir().join("replay.jsonl");
    std::fs::rename(&live, &file).unwrap();
    for round in 0..2 {
        let out = server.cli(&["deadletter", "replay", file.to_str().unwrap()]);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {stdout}{stderr}"
        );
        assert!(stdout.contains("24 of 24 rows inserted"), "{stdout}");
        // The second round's blocks are the first's: dropped, so raw counts stay at 24.
        check_stored_once(&cluster, &server, 24);
    }
}

/// One shard refusing its part of an insert (a `throwIf` column on shard 2 only) does not
/// touch the rows shard 1 stored: they are written once, as their one block (a bisection of the
/// whole insert sent them again as new blocks, which the replicated table keeps apart until a
/// merge), and the dead-letter file holds shard 2's rows alone, none of them stored.
#[test]
fn a_shard_refusing_its_rows_dead_letters_only_them() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let mut cleanup = DropDb(&cluster, String::new());
    let server = cluster.server("s1r1", None, &[]);
    cleanup.1 = server.database.clone();
    let db = server.database.clone();
    let key = server.ready_key("org-one-shard");
    cluster.sql_at(
        "s2r1",
        &format!(
            "ALTER TABLE `{db}`.spans_local ADD COLUMN poison UInt8 \
             MATERIALIZED throwIf(org_id = 'org-one-shard')"
        ),
    );
    wait_until(
        "the column on both of shard 2's replicas",
        Duration::from_secs(30),
        || {
            ["s2r1", "s2r2"].iter().all(|n| {
                cluster.count_at(
                    n,
                    &format!(
                        "SELECT count() FROM system.columns WHERE database = '{db}' \
                     AND table = 'spans_local' AND name = 'poison'"
                    ),
                ) == 1
            })
        },
    );
    assert_eq!(server.post_ingest(&key, &batch("one", 8, 3)).status, 202);
    let live = server.data_dir().join("deadletter/spans.jsonl");
    let local = |node: &str, what: &str| {
        cluster.count_at(node, &format!("SELECT {what} FROM `{db}`.spans_local"))
    };
    let dead = || -> Vec<String> {
        std::fs::read_to_string(&live)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                v["span_id"].as_str().expect("span_id").to_string()
            })
            .collect()
    };
    wait_until(
        "every row stored or dead-lettered",
        Duration::from_secs(60),
        || local("s1r1", "uniqExact(span_id)") + dead().len() as u64 == 24,
    );
    let stored = local("s1r1", "uniqExact(span_id)");
    assert!(
        stored > 0 && stored < 24,
        "both shards get rows of 8 traces: {stored}"
    );
    assert_eq!(
        local("s1r1", "count()"),
        stored,
        "shard 1's rows written once"
    );
    assert_eq!(local("s2r1", "count()"), 0, "shard 2 refused them all");
    let stored_ids = cluster.count_at(
        "s1r1",
        &format!(
            "SELECT count() FROM `{db}`.spans_local WHERE span_id IN ({})",
            dead()
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    );
    assert_eq!(stored_ids, 0, "no stored row in the dead-letter file");
}
