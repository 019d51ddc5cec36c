//! Cluster mode's missing columns: a column a release adds, given to each table where its
//! replicas are, with no `ALTER ... ON CLUSTER` at all.
//!
//! Why not `ON CLUSTER` (18.16, which the fleet runs): with `internal_replication` it refuses
//! the `Distributed` `spans` (code 371, "Table spans isn't replicated, but shard #1 is
//! replicated according to its cluster definition"), so `spans` never got the column and every
//! later migration, `serve`'s start-up included, failed. For a replicated table it goes through
//! the DDL worker's "execute on the leader replica" path, which 18.16 gets wrong at times
//! (ClickHouse#5401, #7613): on the local cluster it wedged a node's DDL worker for good (code
//! 44 "column already exists", then ZooKeeper "Node exists .../shards/<replicas>/executed", and
//! every later `ON CLUSTER` statement timed out until the node restarted).
//!
//! An `ALTER` of a `Replicated*` table on one replica is itself replicated, through ZooKeeper,
//! to the other replicas of its set; a `Distributed` table is nobody's replica. So `spans_local`
//! is altered on one reachable replica of each shard, `api_keys` and `orgs` on one reachable
//! node (their replica set spans the cluster), each followed by a bounded wait until every
//! reachable replica of the set has the columns; `spans` on every node by itself (after
//! `spans_local`, which `cluster_tables` puts first). 18.16 has no `ADD COLUMN IF NOT EXISTS`:
//! each node's `system.columns` says what it lacks. A node that does not answer is skipped and
//! reported (`Migrated::unchecked_nodes`; the `migrate` command then exits 3), so a node being
//! down does not keep servers from starting; a later run that reaches it adds what it lacks.

use std::time::{Duration, Instant};

use clickhouse_rs::errors::codes;
use clickhouse_rs::ClientHandle;

use super::cluster::{spread, ClusterNode, Spread};
use super::errors::StoreError;
use super::schema::{Migrated, Missing, Mode, Unchecked};
use super::Store;

/// How long a migration waits for replication to bring added columns to the other replicas of
/// a set, by default (`migrate --replication-wait-ms` sets it). Past it the replica is
/// reported, not waited for: it catches up by itself.
pub(super) const REPLICATION_WAIT: Duration = Duration::from_secs(30);

/// `replication_alter_columns_timeout` of our `ALTER`s, in seconds: how long 18.16's `ALTER`
/// of a replicated table waits for each active replica to apply it before it answers code 341
/// (`UNFINISHED`). Its default, 60 s per replica, would hold a migration for minutes behind a
/// replica that is slow to apply it (one whose table a long query keeps locked); the shortest
/// (0 is "no limit"), as the bounded wait after it (`wait_for_replicas`) does the waiting.
const ALTER_WAITS_FOR_EACH_REPLICA_S: u32 = 1;

/// The cluster's nodes, each with a connection if it answered; opened once per migration.
pub(super) struct Fleet {
    nodes: Vec<(ClusterNode, Option<ClientHandle>)>,
    /// How long to wait for replicas to apply an added column (`REPLICATION_WAIT` or what
    /// `migrate` was given).
    replication_wait: Duration,
}

impl Store {
    /// Connects to every node of the cluster; the ones it cannot reach (down, or not in
    /// `INGEST_CLICKHOUSE_URL`) go to `done.unchecked_nodes`.
    pub(super) async fn connect_fleet(
        &self,
        cluster: &str,
        replication_wait: Duration,
        done: &mut Migrated,
    ) -> Result<Fleet, StoreError> {
        let mut nodes = Vec::new();
        for node in self.cluster_nodes(cluster).await? {
            let handle = match node.at {
                None => {
                    tracing::warn!(
                        node = %node.name,
                        "a node of the cluster is not in INGEST_CLICKHOUSE_URL; its tables are \
                         not checked for missing columns"
                    );
                    done.unchecked_nodes
                        .push((node.name.clone(), Unchecked::NotInUrl));
                    None
                }
                Some(i) => match self.nodes.handle_at(i).await {
                    Ok(c) => Some(c),
                    Err(e) => {
                        tracing::warn!(
                            node = %node.name,
                            error = %e,
                            "cannot check a node's tables for missing columns; a later migrate \
                             or start-up does it"
                        );
                        done.unchecked_nodes
                            .push((node.name.clone(), Unchecked::Unreachable));
                        None
                    }
                },
            };
            nodes.push((node, handle));
        }
        Ok(Fleet {
            nodes,
            replication_wait,
        })
    }

    /// Adds the columns of `expected` that `table` lacks where its replicas are (its engine
    /// says: `cluster::spread`); returns the columns added on at least one node (`Inspect`:
    /// that would be, nothing added).
    pub(super) async fn add_missing_columns_in_cluster(
        &self,
        fleet: &mut Fleet,
        table: &'static str,
        expected: &'static [(&'static str, &'static str)],
        engine: &str,
        mode: Mode,
        done: &mut Migrated,
    ) -> Result<Vec<&'static str>, StoreError> {
        let all: Vec<usize> = (0..fleet.nodes.len()).collect();
        let replicated = spread(engine) != Spread::EachNode;
        let sets: Vec<Vec<usize>> = match spread(engine) {
            Spread::EachNode => all.iter().map(|&i| vec![i]).collect(),
            Spread::Everywhere => vec![all],
            Spread::PerShard => {
                let mut shards: Vec<u32> = fleet.nodes.iter().map(|(n, _)| n.shard).collect();
                shards.dedup();
                shards
                    .iter()
                    .map(|&s| {
                        all.iter()
                            .copied()
                            .filter(|&i| fleet.nodes[i].0.shard == s)
                            .collect()
                    })
                    .collect()
            }
        };
        let mut added: Vec<&'static str> = Vec::new();
        for set in sets {
            for column in self
                .add_to_replica_set(fleet, &set, replicated, table, expected, mode, done)
                .await?
            {
                if !added.contains(&column) {
                    added.push(column);
                }
            }
        }
        Ok(added)
    }

    /// One replica set (`set`: indexes into the fleet; one node for a `Distributed` table,
    /// not `replicated`): the columns its first reachable replica lacks are added there, then
    /// every reachable replica that lacked columns (that one too) is waited for. A replica
    /// without the table is passed over (the `CREATE ... ON CLUSTER` still on its way to it
    /// makes every column) and reported (`Migrated::without_table`): it may never come, if
    /// the node's distributed DDL queue is stuck.
    async fn add_to_replica_set(
        &self,
        fleet: &mut Fleet,
        set: &[usize],
        replicated: bool,
        table: &'static str,
        expected: &'static [(&'static str, &'static str)],
        mode: Mode,
        done: &mut Migrated,
    ) -> Result<Vec<&'static str>, StoreError> {
        // Per replica with the table: the columns it lacks.
        let mut lacking: Vec<(usize, Vec<&'static str>)> = Vec::with_capacity(set.len());
        let mut altered: Option<(usize, Vec<Missing>)> = None;
        for &i in set {
            let Some(c) = fleet.nodes[i].1.as_mut() else {
                continue;
            };
            let existing = self.columns(c, table).await?;
            if existing.is_empty() {
                let node = fleet.nodes[i].0.name.clone();
                tracing::warn!(
                    node = %node,
                    table,
                    "a node of the cluster has no such table: the CREATE ... ON CLUSTER has not \
                     run there (yet)"
                );
                done.without_table.push((node, table));
                continue;
            }
            // Checked on every replica, so a column of another type stops the migration
            // wherever it is.
            let missing = self.missing_columns(table, expected, &existing)?;
            lacking.push((i, missing.iter().map(|m| m.name).collect()));
            if altered.is_none() {
                altered = Some((i, missing));
            }
        }
        let Some((first, missing)) = altered else {
            return Ok(Vec::new());
        };
        let names: Vec<&'static str> = missing.iter().map(|m| m.name).collect();
        if mode == Mode::Inspect {
            return Ok(names);
        }
        let mut added = Vec::with_capacity(missing.len());
        let node = fleet.nodes[first].0.name.clone();
        let c = fleet.nodes[first].1.as_mut().expect("a reachable replica");
        for m in &missing {
            if self.add_column_unless_there(c, table, m, &node).await? {
                added.push(m.name);
            }
        }
        lacking.retain(|(_, columns)| !columns.is_empty());
        if replicated && !lacking.is_empty() {
            self.wait_for_replicas(fleet, first, &lacking, table, done)
                .await?;
        }
        Ok(added)
    }

    /// `add_column`; a failure with the column there after all (another server's migration
    /// got there first: servers of a fleet start together; 18.16 says code 44 "already
    /// exists", or fails the update of the table's columns in ZooKeeper) is not an error:
    /// returns whether this call added it.
    ///
    /// 18.16 answers an `ALTER` of a replicated table with code 341 (`UNFINISHED`, "Alter is
    /// not finished because some replicas are inactive right now ... Alter will be done
    /// asynchronously") when a replica of the set is down: the `ALTER` is done, here and in
    /// ZooKeeper, and the other replicas apply it when they are back. This call added it.
    async fn add_column_unless_there(
        &self,
        c: &mut ClientHandle,
        table: &'static str,
        m: &Missing,
        node: &str,
    ) -> Result<bool, StoreError> {
        // A per-query setting needs 19.x's protocol; `SET` works on 18.16 and stays with the
        // connection, where only `ALTER`s of replicated tables (migrations') read it.
        c.execute(format!(
            "SET replication_alter_columns_timeout = {ALTER_WAITS_FOR_EACH_REPLICA_S}"
        ))
        .await?;
        let e = match c
            .execute(self.add_column_sql(table, m))
            .await
            .map_err(StoreError::from)
        {
            Err(e) if e.code != Some(codes::UNFINISHED) => e,
            done => {
                if let Err(e) = done {
                    tracing::info!(
                        node,
                        table,
                        error = %e,
                        "the ALTER is done here; replicas that did not take part apply it \
                         from ZooKeeper"
                    );
                }
                tracing::info!(node, table, column = m.name, "column added on this node");
                return Ok(true);
            }
        };
        match self.columns(c, table).await {
            Ok(now) if now.iter().any(|(n, _)| n == m.name) => Ok(false),
            _ => Err(StoreError::new(format!("{node}: {e}"))),
        }
    }

    /// Waits, up to the fleet's `replication_wait`, until every replica of `lacking` (a node,
    /// the columns it lacked) has applied every `ALTER` of `table` made so far, as `first`'s
    /// ZooKeeper says; the columns of one that has not go to `done.not_yet_replicated`.
    ///
    /// A replica's progress is its `columns_version` in `system.replicas` against the version
    /// of the table's `columns` node in ZooKeeper (what 18.16's own `ALTER` waits on), not its
    /// `system.columns`: a replica whose `ALTER` waits for a long query's lock on the table
    /// holds every reader of its columns behind it, so asking it would wait with it.
    async fn wait_for_replicas(
        &self,
        fleet: &mut Fleet,
        first: usize,
        lacking: &[(usize, Vec<&'static str>)],
        table: &'static str,
        done: &mut Migrated,
    ) -> Result<(), StoreError> {
        let deadline = Instant::now() + fleet.replication_wait;
        let c = fleet.nodes[first].1.as_mut().expect("a reachable replica");
        let (_, zookeeper_path) = self.replica_state(c, table).await?;
        let block = c
            .query(format!(
                "SELECT version FROM system.zookeeper WHERE path = {} AND name = 'columns'",
                super::sql_string(&zookeeper_path)
            ))
            .fetch_all()
            .await?;
        let Some(row) = block.rows().next() else {
            return Err(StoreError::new(format!(
                "{table}: no columns node at {zookeeper_path} in ZooKeeper"
            )));
        };
        let target: i32 = row.get("version")?;
        let mut behind: Vec<usize> = Vec::new();
        loop {
            behind.clear();
            for (at, (i, _)) in lacking.iter().enumerate() {
                let c = fleet.nodes[*i].1.as_mut().expect("a reachable replica");
                let (version, _) = self.replica_state(c, table).await?;
                if version < target {
                    behind.push(at);
                }
            }
            if behind.is_empty() || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for &at in &behind {
            let (i, columns) = &lacking[at];
            let node = &fleet.nodes[*i].0.name;
            tracing::warn!(
                node = %node,
                table,
                columns = ?columns,
                "a replica has not yet applied columns added on another replica of its set; \
                 replication brings them"
            );
            for &column in columns {
                done.not_yet_replicated.push((node.clone(), table, column));
            }
        }
        Ok(())
    }

    /// A replicated table's `columns_version` on this replica (the version of ZooKeeper's
    /// `columns` node it has applied) and its ZooKeeper path; `system.replicas` answers at
    /// once, whatever holds the table.
    async fn replica_state(
        &self,
        c: &mut ClientHandle,
        table: &str,
    ) -> Result<(i32, String), StoreError> {
        let block = c
            .query(format!(
                "SELECT columns_version, zookeeper_path FROM system.replicas \
                 WHERE database = {} AND table = {}",
                super::sql_string(&self.database),
                super::sql_string(table)
            ))
            .fetch_all()
            .await?;
        let Some(row) = block.rows().next() else {
            return Err(StoreError::new(format!(
                "{}.{table} is not a replicated table on this node",
                self.database
            )));
        };
        Ok((row.get("columns_version")?, row.get("zookeeper_path")?))
    }
}
