//! The schema of a cluster after its first `migrate`: a column a later release adds reaches
//! the replicated `spans_local` and the `Distributed` `spans` of every node, with no `ALTER
//! ... ON CLUSTER` (which 18.16 refuses for `spans` and which can wedge its DDL worker).

use super::*;

/// The newest column of `spans`, which the test takes away to play an older release's table.
const NEWEST: &str = "reported_cost";

impl Cluster {
    /// Whether `table` of `db` on `node` has the column `NEWEST`.
    fn has_newest(&self, node: &str, db: &str, table: &str) -> bool {
        self.count_at(
            node,
            &format!(
                "SELECT count() FROM system.columns \
                 WHERE database = '{db}' AND table = '{table}' AND name = '{NEWEST}'"
            ),
        ) == 1
    }
}

/// What a `migrate` run said: its exit code and its stdout (its logs, on stderr, are not
/// compared: the report is what an operator reads).
struct Report {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Report {
    fn of(cli: &Server, extra_env: &[(&str, &str)]) -> Report {
        let mut cmd = cli.command(&["migrate"]);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run traceingest migrate");
        Report {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).to_string(),
        }
    }

    /// Asserts the exit code and the report, line for line.
    fn check(&self, code: i32, lines: &[String]) {
        assert_eq!(
            (self.code, self.stdout.lines().collect::<Vec<_>>()),
            (
                Some(code),
                lines.iter().map(String::as_str).collect::<Vec<_>>()
            ),
            "stderr: {}",
            self.stderr
        );
    }
}

/// A release that adds a column, on a cluster an older one set up: `spans` lacks it on every
/// node and `spans_local` on every replica (dropped on one replica per shard, the others follow
/// through ZooKeeper). `migrate` adds it everywhere and a second run finds nothing to do. Then
/// a node whose `spans` alone lacks it, as one that was down during that `migrate` would, gets
/// it at the next start-up, and reads through it see every row. At the end `ON CLUSTER` DDL
/// still works on every node (dropping the database is one).
#[test]
fn a_column_a_release_adds_reaches_every_node() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (cli, db, _drop) = cli_on_s1r1(&cluster);
    let migrate = || {
        let out = cli.cli(&["migrate"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "migrate failed: {text}");
        text
    };
    migrate();
    let drop_newest = |node: &str, table: &str| {
        cluster.sql_at(
            node,
            &format!("ALTER TABLE `{db}`.`{table}` DROP COLUMN `{NEWEST}`"),
        );
    };
    for n in &cluster.nodes {
        drop_newest(&n.name, "spans");
    }
    drop_newest("s1r1", "spans_local");
    drop_newest("s2r1", "spans_local");
    for n in &cluster.nodes {
        wait_until(
            &format!("{}: spans_local without {NEWEST}", n.name),
            Duration::from_secs(30),
            || !cluster.has_newest(&n.name, &db, "spans_local"),
        );
        assert!(!cluster.has_newest(&n.name, &db, "spans"));
    }

    let added = migrate();
    assert!(
        added.contains(&format!("added column {db}.spans_local.{NEWEST}"))
            && added.contains(&format!("added column {db}.spans.{NEWEST}")),
        "{added}"
    );
    assert!(
        !added.contains("not checked") && !added.contains("not yet on"),
        "{added}"
    );
    // `migrate` waits for replication: the column is there when it returns.
    cluster.assert_newest_everywhere(&db, &["spans_local", "spans"]);
    let again = migrate();
    assert!(again.contains("schema up to date"), "{again}");

    // One node's `spans` alone lacks it (the node the server reads from has it): the
    // server's start-up migration finds and adds it there, and the server starts.
    drop_newest("s2r2", "spans");
    let server = cluster.server("s1r1", Some(&db), &[]);
    assert!(cluster.has_newest("s2r2", &db, "spans"));
    let key = server.ready_key("org-columns");
    let r = server.post_ingest(&key, &batch("columns", 2, 5));
    assert_eq!(r.status, 202);
    // The server's `database` is the one it was made with; `db` is what it was given.
    let through = |node: &str| {
        cluster.count_at(
            node,
            &format!("SELECT count() FROM `{db}`.spans WHERE NOT ignore({NEWEST})"),
        )
    };
    // Without the column, a read of it through a node's `spans` fails; with it, the count
    // reaches every row once the replica each shard's read goes to has fetched them.
    for node in ["s1r1", "s2r2"] {
        wait_until(
            &format!("every row through {node}'s spans"),
            Duration::from_secs(30),
            || through(node) == 10,
        );
    }
    drop(server);

    // `ON CLUSTER` DDL still runs on every node: no DDL worker was left wedged.
    cluster.drop_database(&db);
}

/// `migrate` while a replica is stopped: the column reaches the other nodes, and the report
/// names the stopped node, says what to do, and the exit code (3) says the migration is not
/// complete. Once the node is back, a second `migrate` adds the column to its `spans`
/// (its `spans_local` got it from ZooKeeper when it started) and succeeds.
#[test]
fn a_node_down_during_migrate_is_reported_and_a_later_migrate_finishes_it() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (cli, db, _drop) = cli_on_s1r1(&cluster);
    Report::of(&cli, &[]).check(0, &created(&db));
    // An older release's tables on shard 1: `spans_local` without the column (dropped on
    // s1r1, s1r2 follows) and `spans` without it on every node.
    cluster.sql_at(
        "s1r1",
        &format!("ALTER TABLE `{db}`.spans_local DROP COLUMN `{NEWEST}`"),
    );
    for n in &cluster.nodes {
        cluster.sql_at(
            &n.name,
            &format!("ALTER TABLE `{db}`.spans DROP COLUMN `{NEWEST}`"),
        );
    }
    wait_until(
        "s1r2's spans_local without the column",
        Duration::from_secs(30),
        || !cluster.has_newest("s1r2", &db, "spans_local"),
    );

    let down = cluster.stop("s1r2");
    let s1r2 = cluster.native_addr("s1r2");
    Report::of(&cli, &[]).check(
        3,
        &[
            format!("added column {db}.spans_local.{NEWEST}"),
            format!("added column {db}.spans.{NEWEST}"),
            format!(
                "not checked: node {s1r2} did not answer; its tables were not altered: run \
                 migrate again once it is up"
            ),
        ],
    );
    for node in ["s1r1", "s2r1", "s2r2"] {
        assert!(cluster.has_newest(node, &db, "spans"), "{node}: spans");
    }
    assert!(cluster.has_newest("s1r1", &db, "spans_local"));

    down.start();
    Report::of(&cli, &[]).check(0, &[format!("added column {db}.spans.{NEWEST}")]);
    cluster.assert_newest_everywhere(&db, &["spans_local", "spans"]);
    cluster.drop_database(&db);
}

/// `migrate` while a replica lags: a query on s1r2's `spans_local` reads its rows one at a time
/// (half a second each), and s1r2 applies the `ALTER` only once it ends (18.16 takes the
/// table's lock for it). `SYSTEM STOP FETCHES` and `STOP REPLICATION QUEUES`, tried first, do
/// not hold back an `ALTER` on 18.16: the replica applies it at once. With a wait of 2 s,
/// `migrate` reports s1r2 after it, and exits 3, instead of waiting on 18.16's 60 s per
/// replica; once the query is gone, a second run finds every replica caught up.
#[test]
fn a_replica_lagging_past_the_wait_is_reported_and_a_later_migrate_finds_it_caught_up() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (cli, db, _drop) = cli_on_s1r1(&cluster);
    Report::of(&cli, &[]).check(0, &created(&db));
    cluster.sql_at(
        "s1r1",
        &format!(
            "INSERT INTO `{db}`.spans_local (trace_id) SELECT toString(number) FROM numbers(60)"
        ),
    );
    cluster.sql_at(
        "s1r1",
        &format!("ALTER TABLE `{db}`.spans_local DROP COLUMN `{NEWEST}`"),
    );
    wait_until(
        "s1r2 with the rows, without the column",
        Duration::from_secs(30),
        || {
            cluster.count_at("s1r2", &format!("SELECT count() FROM `{db}`.spans_local")) == 60
                && !cluster.has_newest("s1r2", &db, "spans_local")
        },
    );

    let lag = LongQuery::start(
        &cluster,
        "s1r2",
        &format!("{db}-lag"),
        &format!("SELECT sleepEachRow(0.5) FROM `{db}`.spans_local"),
    );
    let started = Instant::now();
    let report = Report::of(&cli, &[("INGEST_MIGRATE_REPLICATION_WAIT_MS", "2000")]);
    let took = started.elapsed();
    let s1r2_lagged = !cluster.has_newest_in_zookeeper_view("s1r2", &db);
    drop(lag);
    let s1r2 = cluster.native_addr("s1r2");
    report.check(
        3,
        &[
            format!("added column {db}.spans_local.{NEWEST}"),
            format!(
                "not yet on {s1r2}: column {db}.spans_local.{NEWEST}; the replica has yet to \
                 apply the ALTER (ZooKeeper brings it): run migrate again to check"
            ),
        ],
    );
    assert!(s1r2_lagged, "s1r2 had applied the ALTER: no lag was made");
    // The 2 s wait, the ALTER's 1 s for s1r2 and the runs' own work; 18.16's default would
    // have held the ALTER for 30 s (until the query ended).
    assert!(took < Duration::from_secs(12), "migrate took {took:?}");

    Report::of(&cli, &[]).check(0, &[up_to_date(&db)]);
    cluster.assert_newest_everywhere(&db, &["spans_local"]);
    cluster.drop_database(&db);
}

/// A node that answers but lacks a table (its `CREATE ... ON CLUSTER` never ran there: the node
/// was down then and its DDL queue has not got to it, or the queue is stuck; played here by
/// dropping s2r2's `spans` on that node alone) is named, and `migrate` exits 3 rather than
/// report the schema up to date. Once the table is back, a run finds nothing to do.
#[test]
fn a_node_without_a_table_is_reported() {
    let Some(cluster) = Cluster::get() else {
        return;
    };
    let (cli, db, _drop) = cli_on_s1r1(&cluster);
    Report::of(&cli, &[]).check(0, &created(&db));
    let ddl = cluster.sql_at(
        "s2r2",
        &format!("SHOW CREATE TABLE `{db}`.spans FORMAT TabSeparatedRaw"),
    );
    cluster.sql_at("s2r2", &format!("DROP TABLE `{db}`.spans"));

    let s2r2 = cluster.native_addr("s2r2");
    Report::of(&cli, &[]).check(
        3,
        &[format!(
            "not on {s2r2}: table {db}.spans; the CREATE ... ON CLUSTER that made it on the \
             other nodes has not run there yet (the node runs it when its distributed DDL \
             queue gets to it, usually within seconds; if a later migrate still finds it \
             missing, that queue may be stuck: restart the node): run migrate again to check"
        )],
    );

    cluster.sql_at("s2r2", ddl.trim_end());
    Report::of(&cli, &[]).check(0, &[up_to_date(&db)]);
    cluster.drop_database(&db);
}

impl Cluster {
    /// Whether `node`'s `spans_local` has applied every `ALTER` ZooKeeper holds for it (its
    /// `columns_version`; `system.columns` would wait for the `ALTER`'s lock).
    fn has_newest_in_zookeeper_view(&self, node: &str, db: &str) -> bool {
        let replica = self.sql_at(
            node,
            &format!(
                "SELECT columns_version, zookeeper_path FROM system.replicas \
                 WHERE database = '{db}' AND table = 'spans_local' FORMAT TSV"
            ),
        );
        let (version, path) = replica.trim().split_once('\t').unwrap();
        // system.zookeeper takes only a literal path.
        let latest = self.sql_at(
            node,
            &format!(
                "SELECT version FROM system.zookeeper WHERE path = '{path}' AND name = 'columns'"
            ),
        );
        version == latest.trim()
    }
}

/// A slow query on a node, one row per block, running until dropped (then killed, and
/// waited for), so that whatever the test does, it does not outlive the test.
struct LongQuery<'a> {
    cluster: &'a Cluster,
    node: String,
    id: String,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<'a> LongQuery<'a> {
    fn start(cluster: &'a Cluster, node: &str, id: &str, sql: &str) -> LongQuery<'a> {
        let (http, sql, query_id) = (cluster.http(node), sql.to_string(), id.to_string());
        let thread = std::thread::spawn(move || {
            let Ok(mut s) = TcpStream::connect(http) else {
                return;
            };
            let req = format!(
                "POST /?query_id={query_id}&max_block_size=1&max_threads=1 HTTP/1.0\r\n\
                 Host: ch\r\nContent-Length: {}\r\n\r\n{sql}",
                sql.len()
            );
            let _ = s.write_all(req.as_bytes());
            let _ = s.read_to_end(&mut Vec::new());
        });
        let q = LongQuery {
            cluster,
            node: node.to_string(),
            id: id.to_string(),
            thread: Some(thread),
        };
        wait_until(
            &format!("query {id} running on {node}"),
            Duration::from_secs(10),
            || {
                cluster.count_at(
                    node,
                    &format!("SELECT count() FROM system.processes WHERE query_id = '{id}'"),
                ) == 1
            },
        );
        q
    }
}

impl Drop for LongQuery<'_> {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.cluster.sql_at(
                &self.node,
                &format!("KILL QUERY WHERE query_id = '{}' SYNC", self.id),
            );
        }));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A runner of the command line with s1r1's settings and a database of its own, dropped at
/// the end (also when the test fails).
fn cli_on_s1r1(cluster: &Cluster) -> (Server, String, DropDb<'_>) {
    let env = cluster.env("s1r1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let cli = Server::new(&cluster.http("s1r1"), &env);
    let db = cli.database.clone();
    let drop = DropDb(cluster, db.clone());
    (cli, db, drop)
}

impl Cluster {
    /// Every node's `tables` in `db` have the newest column.
    fn assert_newest_everywhere(&self, db: &str, tables: &[&str]) {
        for n in &self.nodes {
            for table in tables {
                assert!(
                    self.has_newest(&n.name, db, table),
                    "{}: {table} without {NEWEST}",
                    n.name
                );
            }
        }
    }

    /// `node`'s native address as `migrate` names it.
    fn native_addr(&self, node: &str) -> String {
        format!("127.0.0.1:{}", self.node(node).native)
    }
}

fn up_to_date(db: &str) -> String {
    format!("database {db}: schema up to date (tables spans, api_keys, orgs), nothing changed")
}

/// What the first `migrate` of a new database reports.
fn created(db: &str) -> Vec<String> {
    let mut lines = vec![format!("created database {db}")];
    for t in ["spans_local", "spans", "api_keys", "orgs"] {
        lines.push(format!("created table {db}.{t}"));
    }
    lines
}
