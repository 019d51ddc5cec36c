//! The small tables and the usage count: API keys (create, list, revoke, load the active
//! ones), organisations and their plans, and the monthly span counts per organisation.
//!
//! `api_keys` and `orgs` are `ReplacingMergeTree`s: a change inserts a new version of a row
//! and readers use `FINAL`.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use clickhouse_rs::types::Block;
use clickhouse_rs::ClientHandle;

use super::admin_state::{made_again, parts_to_read, AdminTables, KeysToRead, Part};
use super::errors::StoreError;
use super::usage::{CountStats, OnNode, PartCounts};
use super::{sql_string, Store};
use crate::auth::parse_hex;
use crate::clock;

/// How many rounds of new parts one key-set load reads (a round more each time parts it was
/// about to read were merged away first) before it reads every key instead.
const MERGE_ROUNDS: usize = 3;

/// What `keys revoke` was given, without the `...` the commands print after a display prefix
/// (`created key ti_AbCdEfGhI... for org ...`), so that one pasted from there names the key: a
/// key is ASCII letters, digits, '_' and '-', so no key ends with them.
pub fn revoke_target(which: &str) -> &str {
    ["...", "\u{2026}"]
        .iter()
        .find_map(|dots| which.strip_suffix(dots))
        .unwrap_or(which)
}

/// Epoch seconds as the `DateTime` the client writes.
#[inline]
pub(super) fn utc(epoch_seconds: u32) -> DateTime<Tz> {
    DateTime::<Utc>::from_timestamp(i64::from(epoch_seconds), 0)
        .unwrap_or_default()
        .with_timezone(&Tz::UTC)
}

/// How far behind its shard (`system.replicas.absolute_delay`, seconds) a replica may be and
/// still be counted on while another one is there: 18.16's own bound for `Distributed` reads
/// (`max_replica_delay_for_distributed_queries`).
const STALE_REPLICA_S: u32 = 300;

/// A `Store`'s counts per part for the usage count (`usage.rs`), on their way to another.
#[derive(Debug, Default)]
pub struct KeptCounts(PartCounts);

/// What `Store::revoke_key` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Revoked {
    /// This many keys revoked (0: no active key matched).
    Keys(usize),
    /// Nothing revoked: the prefix names several active keys, listed here.
    Ambiguous(Vec<KeyRecord>),
}

/// An API key as stored: never the key itself, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Lowercase hex SHA-256 of the whole key (64 characters).
    pub key_hash: String,
    /// First 12 characters of the key: what `list` shows and `revoke` takes.
    pub display_prefix: String,
    pub org_id: String,
    /// Empty when the key is not tied to a project.
    pub project_id: String,
    /// Epoch seconds.
    pub created_at: u32,
    /// Epoch seconds; `None` while the key is active.
    pub revoked_at: Option<u32>,
}

/// What the authenticator needs about one active key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveKey {
    pub hash: [u8; 32],
    pub org_id: String,
    pub project_id: String,
}

/// What `Store::load_admin` found.
#[derive(Debug)]
pub enum AdminLoad {
    /// The tables are in the state the caller last loaded.
    Unchanged,
    /// Their state (read before the rows), every organisation (by id), and the rows of
    /// `api_keys` that state calls for.
    Loaded {
        tables: AdminTables,
        orgs: Vec<OrgRecord>,
        keys: KeyRows,
    },
}

/// Rows of `api_keys`, each key's hash parsed (rows with a malformed one are skipped).
#[derive(Debug)]
pub enum KeyRows {
    /// Every key, its newest version (`FINAL`), revoked ones too.
    All(Vec<KeyRow>),
    /// The rows of the parts new since the state the caller gave (`KeysToRead::Parts`): maybe
    /// several versions of a key; the newest wins over what the caller holds.
    Added(Vec<KeyRow>),
}

/// One row of `api_keys` as the key set needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub hash: [u8; 32],
    pub org_id: String,
    pub project_id: String,
    pub revoked: bool,
    pub version: u64,
}

/// An organisation as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgRecord {
    pub org_id: String,
    /// A plan name; checked against the configured plans when written, not when read.
    pub plan: String,
    /// Epoch seconds.
    pub created_at: u32,
    /// Epoch seconds of the last plan change.
    pub updated_at: u32,
}

impl Store {
    /// Stores a new key (or a new version of one).
    pub async fn insert_key(&self, key: &KeyRecord) -> Result<(), StoreError> {
        if parse_hex(&key.key_hash).is_none() {
            return Err(StoreError::new("key hash must be 64 hex characters"));
        }
        if key.display_prefix.is_empty() || key.org_id.is_empty() {
            return Err(StoreError::new(
                "a key needs a display prefix and an org id",
            ));
        }
        self.write_keys(&[(key.clone(), clock::now_us())]).await
    }

    /// Every key, active or revoked, oldest first.
    pub async fn list_keys(&self) -> Result<Vec<KeyRecord>, StoreError> {
        let mut keys: Vec<KeyRecord> = self
            .read_keys("")
            .await?
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        keys.sort_by(|a, b| {
            (a.created_at, &a.display_prefix).cmp(&(b.created_at, &b.display_prefix))
        });
        Ok(keys)
    }

    /// Revokes the active key(s) that `which` names: a whole key (longer than a display
    /// prefix; its hash is looked up, so exactly that key), or a display prefix (followed or not
    /// by the `...` the commands print after one). A prefix more
    /// than one active key shares (a long `INGEST_KEY_PREFIX` leaves few random characters in
    /// the first 12) revokes nothing unless `all`: the keys it would take are returned instead,
    /// so one organisation's revocation cannot silently take another's keys.
    pub async fn revoke_key(&self, which: &str, all: bool) -> Result<Revoked, StoreError> {
        let which = revoke_target(which);
        // Filtering before FINAL is safe: all versions of a key share its hash and prefix.
        let filter = if which.len() > crate::auth::DISPLAY_PREFIX_LEN {
            let hash = crate::auth::hex(&crate::auth::hash_key(which.as_bytes()));
            format!(" WHERE key_hash = {}", sql_string(&hash))
        } else {
            format!(" WHERE display_prefix = {}", sql_string(which))
        };
        let active: Vec<(KeyRecord, u64)> = self
            .read_keys(&filter)
            .await?
            .into_iter()
            .filter(|(k, _)| k.revoked_at.is_none())
            .collect();
        if active.len() > 1 && !all {
            return Ok(Revoked::Ambiguous(
                active.into_iter().map(|(k, _)| k).collect(),
            ));
        }
        let now = clock::now_s();
        let revoked: Vec<(KeyRecord, u64)> = active
            .into_iter()
            .map(|(mut k, version)| {
                k.revoked_at = Some(now);
                (k, clock::now_us().max(version + 1))
            })
            .collect();
        if !revoked.is_empty() {
            self.write_keys(&revoked).await?;
        }
        Ok(Revoked::Keys(revoked.len()))
    }

    /// Every organisation and the rows of `api_keys` that tell what changed since the state
    /// `seen` (what the last load returned; `None`: every key): none when the tables are still
    /// in that state, the rows of its new parts, or every key (`admin_state`). Read on one
    /// connection, the tables' state first: a change that lands between that and the rows is
    /// in the rows or not, and either way makes the next state differ, so it is read then.
    /// (The state read after the rows could name a change the rows lack, and keep it out of
    /// the key set for good.) A new part merged away before its read does not count as read,
    /// and the part it went into is read in the same load (`read_new_parts`): so a load that
    /// begins after a key was written returns it.
    pub async fn load_admin(&self, seen: Option<&AdminTables>) -> Result<AdminLoad, StoreError> {
        let mut c = self.handle().await?;
        let tables = self.admin_tables(&mut c).await?;
        if seen == Some(&tables) {
            return Ok(AdminLoad::Unchanged);
        }
        let all = seen.is_none_or(|seen| made_again(seen, &tables));
        let AdminTables { keys: parts, rest } = tables;
        // Parts whose rows are in the caller's set, or in what is read here.
        let read = seen.map(|s| s.keys.clone()).unwrap_or_default();
        let added = if all {
            None
        } else {
            self.read_new_parts(&mut c, read, parts).await?
        };
        let (read, keys) = match added {
            Some((read, rows)) => (read, KeyRows::Added(rows)),
            None => {
                // What this look at the parts sees, before the read: every row of it is read.
                let parts = self.key_parts(&mut c).await?;
                let rows = key_rows(self.read_keys_on(&mut c, " FINAL").await?);
                (parts, KeyRows::All(rows))
            }
        };
        // After the keys: an organisation written with a key is read with it (the state of
        // `orgs`, in `rest`, was taken before both).
        let orgs = by_id(self.read_orgs_on(&mut c, "").await?);
        let tables = AdminTables { keys: read, rest };
        Ok(AdminLoad::Loaded { tables, orgs, keys })
    }

    /// The rows of the parts in `parts` (the key table's active parts, just looked at) that
    /// `read` (parts whose rows were read) does not account for, and the parts they account
    /// for together; `None` when every key must be read instead (`parts_to_read`).
    async fn read_new_parts(
        &self,
        c: &mut ClientHandle,
        mut read: Vec<Part>,
        mut parts: Vec<Part>,
    ) -> Result<Option<(Vec<Part>, Vec<KeyRow>)>, StoreError> {
        let mut rows = Vec::new();
        for _ in 0..MERGE_ROUNDS {
            let new = match parts_to_read(&read, &parts) {
                KeysToRead::All => return Ok(None),
                KeysToRead::Parts(new) => new,
            };
            if new.is_empty() {
                return Ok(Some((parts, rows)));
            }
            let names: Vec<String> = new.iter().map(|p| sql_string(p)).collect();
            let names = names.join(", ");
            // Oldest part first (by its last block: the name is `all_MIN_MAX_LEVEL`), so of
            // two rows of a key with the same version the newer part's wins, as in a merge.
            let tail = format!(
                " WHERE _part IN ({names}) ORDER BY toUInt64OrZero(splitByChar('_', _part)[3])"
            );
            rows.extend(key_rows(self.read_keys_on(c, &tail).await?));
            // A part merged away before the read began gave it no row: it does not count as
            // read, so the part it went into is read in the next round (it holds blocks never
            // read), and a key written before this load began is in what it returns.
            let active = self.active_key_parts(c, &names).await?;
            let merged_away = new.iter().any(|n| !active.contains(n));
            parts.retain(|p| !new.contains(&p.name) || active.contains(&p.name));
            read = parts;
            if !merged_away {
                return Ok(Some((read, rows)));
            }
            parts = self.key_parts(c).await?;
        }
        Ok(None)
    }

    /// Which of `names` (a list of quoted part names) are active parts of `api_keys` now.
    async fn active_key_parts(
        &self,
        c: &mut ClientHandle,
        names: &str,
    ) -> Result<Vec<String>, StoreError> {
        let db = sql_string(&self.database);
        strings(
            c,
            format!(
                "SELECT name AS s FROM system.parts WHERE database = {db} \
                 AND table = 'api_keys' AND active AND name IN ({names})"
            ),
        )
        .await
    }

    /// The state of `api_keys` and `orgs` (`AdminTables`): two queries of `system.parts` and
    /// `system.tables`, which read no rows of the tables.
    async fn admin_tables(&self, c: &mut ClientHandle) -> Result<AdminTables, StoreError> {
        let keys = self.key_parts(c).await?;
        let db = sql_string(&self.database);
        let mut rest = strings(
            c,
            format!(
                "SELECT concat(name, ' ', toString(rows), ' ', \
                 toString(toUInt32(modification_time))) AS s FROM system.parts \
                 WHERE database = {db} AND table = 'orgs' AND active \
                 UNION ALL \
                 SELECT concat(name, ' created ', toString(toUInt32(metadata_modification_time))) \
                 AS s FROM system.tables WHERE database = {db} AND name IN ('api_keys', 'orgs')"
            ),
        )
        .await?;
        rest.sort_unstable();
        Ok(AdminTables { keys, rest })
    }

    /// The active parts of `api_keys`, by name.
    async fn key_parts(&self, c: &mut ClientHandle) -> Result<Vec<Part>, StoreError> {
        let db = sql_string(&self.database);
        let block = c
            .query(format!(
                "SELECT name, partition_id, min_block_number AS min, max_block_number AS max, \
                 data_version, rows, toUInt32(modification_time) AS modified FROM system.parts \
                 WHERE database = {db} AND table = 'api_keys' AND active ORDER BY name"
            ))
            .fetch_all()
            .await?;
        let mut keys = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let (min_block, data_version): (i64, u64) = (row.get("min")?, row.get("data_version")?);
            keys.push(Part {
                name: row.get("name")?,
                partition: row.get("partition_id")?,
                min_block,
                max_block: row.get("max")?,
                mutation: if data_version as i64 == min_block {
                    0
                } else {
                    data_version as i64
                },
                rows: row.get("rows")?,
                modified: row.get("modified")?,
            });
        }
        Ok(keys)
    }

    /// Hashes and owners of every key that is not revoked, for the in-memory key set.
    /// A row whose hash is not 64 hex characters is skipped with a warning.
    pub async fn load_active_keys(&self) -> Result<Vec<ActiveKey>, StoreError> {
        Ok(active_keys(self.read_keys("").await?))
    }

    /// Latest version of each key (FINAL), with that version. The revoked filter is applied by
    /// the caller, after FINAL: old servers may move a WHERE on a non-key column before it.
    async fn read_keys(&self, filter: &str) -> Result<Vec<(KeyRecord, u64)>, StoreError> {
        self.read_keys_on(&mut self.handle().await?, &format!(" FINAL{filter}"))
            .await
    }

    /// Rows of `api_keys`, with their versions; `tail` follows the table's name (` FINAL`,
    /// a `WHERE`).
    async fn read_keys_on(
        &self,
        c: &mut ClientHandle,
        tail: &str,
    ) -> Result<Vec<(KeyRecord, u64)>, StoreError> {
        let block = c
            .query(format!(
                "SELECT key_hash, display_prefix, org_id, project_id, \
                 toUInt32(created_at) AS created, toUInt32(revoked_at) AS revoked, version \
                 FROM {}{tail}",
                self.keys_table
            ))
            .fetch_all()
            .await?;
        let mut keys = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let key = from_row!(row, KeyRecord {
                key_hash,
                display_prefix,
                org_id,
                project_id,
                created_at = "created",
                revoked_at = "revoked",
            });
            keys.push((key, row.get("version")?));
        }
        Ok(keys)
    }

    async fn write_keys(&self, keys: &[(KeyRecord, u64)]) -> Result<(), StoreError> {
        let now = utc(clock::now_s());
        let strings =
            |f: fn(&KeyRecord) -> &str| -> Vec<&str> { keys.iter().map(|(k, _)| f(k)).collect() };
        let block = Block::new()
            .column("key_hash", strings(|k| &k.key_hash))
            .column("display_prefix", strings(|k| &k.display_prefix))
            .column("org_id", strings(|k| &k.org_id))
            .column("project_id", strings(|k| &k.project_id))
            .column(
                "created_at",
                keys.iter()
                    .map(|(k, _)| utc(k.created_at))
                    .collect::<Vec<_>>(),
            )
            .column(
                "revoked_at",
                keys.iter()
                    .map(|(k, _)| k.revoked_at.map(utc))
                    .collect::<Vec<_>>(),
            )
            .column("updated_at", vec![now; keys.len()])
            .column(
                "version",
                keys.iter().map(|&(_, v)| v).collect::<Vec<u64>>(),
            );
        self.insert_block(&self.keys_table, block).await?;
        Ok(())
    }

    /// Every organisation with a record (latest version), by id.
    pub async fn list_orgs(&self) -> Result<Vec<OrgRecord>, StoreError> {
        Ok(by_id(self.read_orgs("").await?))
    }

    /// One organisation's record, if it has one.
    pub async fn get_org(&self, org_id: &str) -> Result<Option<OrgRecord>, StoreError> {
        let filter = format!(" WHERE org_id = {}", sql_string(org_id));
        Ok(self
            .read_orgs(&filter)
            .await?
            .into_iter()
            .next()
            .map(|(o, _)| o))
    }

    /// Creates the organisation's record, or replaces its plan. `created_at` is kept from the
    /// existing record; the new version is newer than any before.
    pub async fn put_org(&self, org_id: &str, plan: &str) -> Result<(), StoreError> {
        if org_id.is_empty() || plan.is_empty() {
            return Err(StoreError::new("an organisation needs an id and a plan"));
        }
        let filter = format!(" WHERE org_id = {}", sql_string(org_id));
        let previous = self.read_orgs(&filter).await?.into_iter().next();
        let now = clock::now_s();
        let (created_at, version) = match previous {
            Some((o, v)) => (o.created_at, clock::now_us().max(v + 1)),
            None => (now, clock::now_us()),
        };
        let block = Block::new()
            .column("org_id", vec![org_id])
            .column("plan", vec![plan])
            .column("created_at", vec![utc(created_at)])
            .column("updated_at", vec![utc(now)])
            .column("version", vec![version]);
        self.insert_block(&self.orgs_table, block).await?;
        Ok(())
    }

    /// Latest version of each organisation (FINAL), with that version.
    async fn read_orgs(&self, filter: &str) -> Result<Vec<(OrgRecord, u64)>, StoreError> {
        self.read_orgs_on(&mut self.handle().await?, filter).await
    }

    async fn read_orgs_on(
        &self,
        c: &mut ClientHandle,
        filter: &str,
    ) -> Result<Vec<(OrgRecord, u64)>, StoreError> {
        let block = c
            .query(format!(
                "SELECT org_id, plan, toUInt32(created_at) AS created, \
                 toUInt32(updated_at) AS updated, version FROM {} FINAL{filter}",
                self.orgs_table
            ))
            .fetch_all()
            .await?;
        let mut orgs = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            let org = from_row!(row, OrgRecord {
                org_id,
                plan,
                created_at = "created",
                updated_at = "updated",
            });
            orgs.push((org, row.get("version")?));
        }
        Ok(orgs)
    }

    /// Spans stored per organisation with `ingested_at` in `[from_s, to_s)` (Unix seconds), for
    /// the given organisations, in their order; an organisation without spans is absent from
    /// the answer.
    ///
    /// Reads only the parts that the last counts of this `Store` had not counted, of the
    /// partitions holding a part written since `from_s` (less `CLOCK_MARGIN_S`) (`usage.rs`):
    /// parts never change, so their
    /// counts are kept, and a count every few seconds reads what was inserted or merged since
    /// the last one instead of every row of the month. `now_s` is the time now on the clock
    /// that stamps `ingested_at` (the server's, shifted in tests), which carries `from_s` over
    /// to ClickHouse's clock.
    ///
    /// Counts rows as stored, without `FINAL`: a client's retry that the table has not merged
    /// away yet counts twice (it was accepted twice), and stops counting once merged (the
    /// merged part is counted anew). `FINAL` over a month of spans would cost far more than
    /// that is worth. A corrected copy `reprice` wrote is not an ingest and is not counted: an
    /// ingested row's `version` is its ingest time in ms (`ingested_at` in seconds), a
    /// correction's is in a later second (`clickhouse::correction_version`). (Counted, every
    /// repriced span took its organisation's quota twice until the parts merged.) Known limit:
    /// a merge of the copy with the row it corrects keeps only the copy, and the span stops
    /// counting (README, "Monthly quota").
    pub async fn count_spans_by_org(
        &self,
        org_ids: &[&str],
        from_s: i64,
        to_s: i64,
        now_s: i64,
    ) -> Result<Vec<(String, u64)>, StoreError> {
        if org_ids.is_empty() {
            return Ok(Vec::new());
        }
        // Taken out for the count (a count running at the same time on this `Store` starts
        // from none, and is as right), and put back whatever happens: a failed count leaves
        // only counts that hold (`usage.rs`).
        let mut kept = std::mem::take(&mut self.usage.lock().unwrap_or_else(|e| e.into_inner()).0);
        let orgs = kept.prepare(from_s, to_s, org_ids).to_vec();
        let mut totals = vec![0u64; orgs.len()];
        let mut stats = CountStats::default();
        let counted = self
            .count_places(&mut kept, (from_s, to_s, now_s), &mut totals, &mut stats)
            .await;
        stats.counts = usize::from(counted.is_ok());
        {
            let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
            usage.0 = kept;
            usage.1 = usage.1.plus(stats);
        }
        counted?;
        let mut answered = vec![false; orgs.len()];
        let mut answer: Vec<(String, u64)> = Vec::new();
        for org in org_ids {
            let Ok(i) = orgs.binary_search_by(|o| o.as_str().cmp(org)) else {
                continue;
            };
            if totals[i] > 0 && !answered[i] {
                answered[i] = true;
                answer.push((org.to_string(), totals[i]));
            }
        }
        Ok(answer)
    }

    /// The counts per part the usage counts of this `Store` keep, taken out of it (it keeps
    /// none), for another `Store` of the same configuration (`keep_counts`): the server's
    /// count at start hands them to the control thread's, whose next count then reads only
    /// what is new since.
    pub fn take_kept_counts(&self) -> KeptCounts {
        KeptCounts(std::mem::take(
            &mut self.usage.lock().unwrap_or_else(|e| e.into_inner()).0,
        ))
    }

    /// Counts `take_kept_counts` took from a `Store` of the same configuration, kept by this
    /// one in place of its own.
    pub fn keep_counts(&self, kept: KeptCounts) {
        self.usage.lock().unwrap_or_else(|e| e.into_inner()).0 = kept.0;
    }

    /// What the `count_spans_by_org` calls on this `Store` read so far.
    pub fn count_stats(&self) -> CountStats {
        self.usage.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    /// The span table a usage count reads over `c`: `spans`, or a shard's `spans_local`.
    fn usage_place<'c>(
        &'c self,
        c: &'c mut ClientHandle,
        (from_s, to_s, now_s): (i64, i64, i64),
    ) -> OnNode<'c> {
        OnNode {
            c,
            database: &self.database,
            table: match self.cluster {
                Some(_) => super::cluster::local_name("spans"),
                None => "spans",
            },
            from_s,
            to_s,
            since_s: from_s - CLOCK_MARGIN_S,
            now_s,
        }
    }

    /// Counts place `place` (`usage.rs`: the node, or in cluster mode the shard) over `c`,
    /// adding its rows to `totals` only when the whole count succeeds.
    async fn count_on(
        &self,
        kept: &mut PartCounts,
        place: usize,
        c: &mut ClientHandle,
        times: (i64, i64, i64),
        totals: &mut [u64],
        stats: &mut CountStats,
    ) -> Result<(), StoreError> {
        let mut counted = vec![0; totals.len()];
        let mut on = self.usage_place(c, times);
        kept.count_place(place, &mut on, &mut counted, stats)
            .await?;
        for (t, n) in totals.iter_mut().zip(&counted) {
            *t += n;
        }
        Ok(())
    }

    /// Whether the replica `c` is connected to cannot be counted on: its `spans_local` is
    /// read-only (no ZooKeeper session) or lags more than `STALE_REPLICA_S` behind its shard.
    async fn replica_stale(&self, c: &mut ClientHandle) -> Result<bool, StoreError> {
        let block = c
            .query(format!(
                "SELECT toUInt8(is_readonly OR absolute_delay > {STALE_REPLICA_S}) AS stale \
                 FROM system.replicas WHERE database = {} AND table = {}",
                sql_string(&self.database),
                sql_string(super::cluster::local_name("spans"))
            ))
            .fetch_all()
            .await?;
        let mut stale = false;
        for row in block.rows() {
            stale |= row.get::<u8, _>("stale")? == 1;
        }
        Ok(stale)
    }

    /// Adds every place's count to `totals` (`usage.rs`): the single server (the first node
    /// that answers), or each shard on one of its replicas (this process's, else the next
    /// that answers, is not stale and counts; a stale one when none other does).
    async fn count_places(
        &self,
        kept: &mut PartCounts,
        times: (i64, i64, i64),
        totals: &mut [u64],
        stats: &mut CountStats,
    ) -> Result<(), StoreError> {
        let Some(cluster) = &self.cluster else {
            let (node, mut c) = self.nodes.any_handle_indexed().await?;
            return self
                .count_on(kept, node, &mut c, times, totals, stats)
                .await;
        };
        let topology = self.topology(cluster).await?;
        for (shard, replicas) in topology.shards.iter().enumerate() {
            // Each server process starts at its own replica (by its process id), so that a
            // fleet's counts spread over a shard's replicas; the same one every time, so that a
            // lagging replica does not make one count lower than the count before.
            let order = self.nodes.order(replicas, std::process::id() as usize);
            on_one_replica(
                &order,
                async |node| Ok::<_, StoreError>(self.nodes.handle_at(node).await?),
                async |c: &mut ClientHandle| self.replica_stale(c).await,
                async |c: &mut ClientHandle| {
                    self.count_on(kept, shard, c, times, totals, stats).await
                },
            )
            .await
            .map_err(|last| {
                last.unwrap_or_else(|| {
                    StoreError::new(format!("shard {} has no replica to count on", shard + 1))
                })
            })?;
        }
        Ok(())
    }
}

/// Runs `count` on one replica of a shard, as a `Distributed` read would choose it: the first
/// of `order` that connects and is not stale (read-only, or lagging); when none of those
/// counts, each stale one in turn, in `order`. Errs with the last error (`None`: `order` is
/// empty) when no replica counted.
async fn on_one_replica<C, E>(
    order: &[usize],
    mut connect: impl AsyncFnMut(usize) -> Result<C, E>,
    mut stale: impl AsyncFnMut(&mut C) -> Result<bool, E>,
    mut count: impl AsyncFnMut(&mut C) -> Result<(), E>,
) -> Result<(), Option<E>> {
    let mut last = None;
    let mut stale_ones = std::collections::VecDeque::new();
    let mut candidates = order.iter();
    loop {
        let mut c = if let Some(&node) = candidates.next() {
            let mut c = match connect(node).await {
                Ok(c) => c,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            match stale(&mut c).await {
                Ok(false) => c,
                Ok(true) => {
                    stale_ones.push_back(c);
                    continue;
                }
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            }
        } else if let Some(c) = stale_ones.pop_front() {
            c
        } else {
            return Err(last);
        };
        match count(&mut c).await {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
}

/// How far the clocks that stamp `ingested_at` (every replica's) and ClickHouse's may drift
/// apart, beyond the difference the count measures between its own and ClickHouse's, before a
/// usage count can miss rows (`OnNode::list` leaves out partitions with no part written since
/// the month began).
pub(super) const CLOCK_MARGIN_S: i64 = 86_400;

/// The one string column `s` of what `sql` answers.
async fn strings(c: &mut ClientHandle, sql: String) -> Result<Vec<String>, StoreError> {
    let block = c.query(sql).fetch_all().await?;
    let mut out = Vec::with_capacity(block.row_count());
    for row in block.rows() {
        out.push(row.get::<String, _>("s")?);
    }
    Ok(out)
}

/// Organisations as read, without their versions, by id.
fn by_id(orgs: Vec<(OrgRecord, u64)>) -> Vec<OrgRecord> {
    let mut orgs: Vec<OrgRecord> = orgs.into_iter().map(|(o, _)| o).collect();
    orgs.sort_by(|a, b| a.org_id.cmp(&b.org_id));
    orgs
}

/// Rows read from `api_keys` as the key set needs them. A row whose hash is not 64 hex
/// characters is skipped with a warning.
fn key_rows(keys: Vec<(KeyRecord, u64)>) -> Vec<KeyRow> {
    let mut rows = Vec::with_capacity(keys.len());
    for (k, version) in keys {
        match parse_hex(&k.key_hash) {
            Some(hash) => rows.push(KeyRow {
                hash,
                org_id: k.org_id,
                project_id: k.project_id,
                revoked: k.revoked_at.is_some(),
                version,
            }),
            None => tracing::warn!(
                display_prefix = %k.display_prefix,
                "skipping API key with a malformed hash"
            ),
        }
    }
    rows
}

/// The keys of `keys` that are not revoked, for the in-memory key set. A row whose hash is not
/// 64 hex characters is skipped with a warning.
fn active_keys(keys: Vec<(KeyRecord, u64)>) -> Vec<ActiveKey> {
    key_rows(keys)
        .into_iter()
        .filter(|k| !k.revoked)
        .map(|k| ActiveKey {
            hash: k.hash,
            org_id: k.org_id,
            project_id: k.project_id,
        })
        .collect()
}

#[cfg(test)]
#[path = "admin_replica_tests.rs"]
mod replica_tests;
