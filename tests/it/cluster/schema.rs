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
    let env = cluster.env("s1r1");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let cli = Server::new(&cluster.http("s1r1"), &env);
    let db = cli.database.clone();
    let _drop = DropDb(&cluster, db.clone());
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
    for n in &cluster.nodes {
        for table in ["spans_local", "spans"] {
            assert!(
                cluster.has_newest(&n.name, &db, table),
                "{}: {table} without {NEWEST}",
                n.name
            );
        }
    }
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
