//! The monthly usage count (`Store::count_spans_by_org`), kept part by part between counts.
//!
//! A MergeTree part never changes once written: an insert writes a new part, a merge or a
//! mutation replaces parts by a new one of another name. So the organisations' rows of the
//! month in a part, once counted, stay its count for as long as the part is active. Each count
//! lists the active parts of the partitions holding a part written since the month began, less
//! a day (`system.parts`, no rows read), counts rows only in the parts it has no count of
//! (`_part IN (...)`, which 18.16 prunes parts by), and adds up the counts of the parts
//! listed. Every 5 s this reads the parts inserted since the last count and those merges made
//! (a merge into a large part makes the next count read that part again), instead of the
//! month's rows of every organisation with a quota.
//!
//! A part merged away between the listing and its count gives no rows. So after counting, a
//! count lists the parts again, and ends only on a listing in which every part has a count,
//! new inserts aside: a part active when listed and again at a later listing was active in
//! between, when its count was taken, so that count is right; a part merged away is in no later
//! listing, and its count is never used (the part it went into is new, and counted). A new
//! insert's part (level 0, never mutated) in a later listing holds rows written after the count
//! began, which it may leave to the next count like any row written after it; a new merged or
//! mutated part holds rows counted before in the parts it replaced, so it takes another round.
//! After `ROUNDS` listings that each found such parts (merges faster than the counts), the
//! place's rows are counted whole, as before this cache.
//!
//! A place is the single server (by its index in `INGEST_CLICKHOUSE_URL`), or in cluster mode
//! a shard, read on one of its replicas. A part is known by its name, rows and time written, so
//! a table made again with parts of the same names is counted again (unless made within the
//! same second with the same row counts); each replica stamps its own time on the parts it
//! fetches or merges, so a count moving to another replica counts again the parts whose time
//! differs there (one of the same name, rows and second holds the same rows).
//! Counts of a place a count did not read this time (another node after a failover) are kept
//! until the month or the organisations change.

use std::collections::{HashMap, HashSet};

use clickhouse_rs::ClientHandle;

use super::errors::StoreError;
use super::sql_string;
use crate::calendar::Month;

/// Listings one place's count may take before it counts the place's rows whole instead.
const ROUNDS: usize = 4;

/// Most parts named in one count query, to keep the query text small.
const PARTS_PER_QUERY: usize = 500;

/// Most organisations named in one count query.
const ORGS_PER_QUERY: usize = 1000;

/// An active part of the span table, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Listed {
    pub name: String,
    pub partition: String,
    pub rows: u64,
    pub modified: u32,
    /// Written by an insert: level 0 (nothing merged into it) and never mutated.
    pub insert: bool,
}

/// A part's counts are kept under its place and what the listing says of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PartId {
    place: usize,
    part: Listed,
}

/// What the kept counts are of: the month's bounds and the organisations counted (sorted,
/// distinct).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Of {
    from_s: i64,
    to_s: i64,
    orgs: Vec<String>,
}

/// Counts kept between usage counts: per part, its rows of each organisation (by index in
/// `Of::orgs`; absent: none). Only parts of the last listing of each place are kept.
#[derive(Debug, Default)]
pub(super) struct PartCounts {
    of: Option<Of>,
    parts: HashMap<PartId, Vec<(u32, u64)>>,
}

/// What usage counts did (one, or all of a `Store`'s so far): for `/metrics` and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountStats {
    /// Counts made (each `Store::count_spans_by_org` that succeeded; the other fields count
    /// failed attempts' work too).
    pub counts: usize,
    /// Parts whose rows were counted.
    pub parts_counted: usize,
    /// Parts whose counts make the total: the parts listed last that have a count (taken by
    /// this count or an earlier one).
    pub parts_summed: usize,
    /// Places (the server, or a shard) counted whole: merges kept outrunning the listings.
    pub whole: usize,
}

impl CountStats {
    /// These and `more` together.
    pub(super) fn plus(self, more: CountStats) -> CountStats {
        CountStats {
            counts: self.counts + more.counts,
            parts_counted: self.parts_counted + more.parts_counted,
            parts_summed: self.parts_summed + more.parts_summed,
            whole: self.whole + more.whole,
        }
    }

    /// What these read past `earlier` (stats of the same `Store`, taken before).
    pub fn since(self, earlier: CountStats) -> CountStats {
        CountStats {
            counts: self.counts.saturating_sub(earlier.counts),
            parts_counted: self.parts_counted.saturating_sub(earlier.parts_counted),
            parts_summed: self.parts_summed.saturating_sub(earlier.parts_summed),
            whole: self.whole.saturating_sub(earlier.whole),
        }
    }
}

/// One place's reads: its active parts, the rows of some of them, or all its rows.
pub(super) trait Place {
    /// The active parts of the partitions holding a part written since the month began (less
    /// the clocks' margin).
    async fn list(&mut self) -> Result<Vec<Listed>, StoreError>;
    /// Rows of each organisation in each of `parts` (names), as (part, org, rows).
    async fn count(
        &mut self,
        parts: &[&str],
        orgs: &[String],
    ) -> Result<Vec<(String, String, u64)>, StoreError>;
    /// Rows of each organisation in the whole place, bounded by the partitions of `listed`.
    async fn count_all(
        &mut self,
        listed: &[Listed],
        orgs: &[String],
    ) -> Result<Vec<(String, u64)>, StoreError>;
}

impl PartCounts {
    /// Makes the kept counts those of `[from_s, to_s)` and of at least `orgs`, and returns
    /// the organisations they are of (sorted, distinct), by whose indexes the totals go. The
    /// counts are kept for the same month when `orgs` are among those counted (a count again of
    /// some of them, as `sync_usage` makes of those whose rows were flushed meanwhile); an
    /// organisation not counted yet drops them, and every part is counted again for all of
    /// them (an organisation given a quota is rare; it is then counted with the others).
    pub(super) fn prepare(&mut self, from_s: i64, to_s: i64, orgs: &[&str]) -> &[String] {
        let same_month = self
            .of
            .as_ref()
            .is_some_and(|of| of.from_s == from_s && of.to_s == to_s);
        let known: &[String] = match (&self.of, same_month) {
            (Some(of), true) => &of.orgs,
            _ => &[],
        };
        let counted = |org: &&str| known.binary_search_by(|o| o.as_str().cmp(org)).is_ok();
        if !same_month || !orgs.iter().all(counted) {
            let mut all: Vec<String> = known.to_vec();
            all.extend(orgs.iter().map(|o| o.to_string()));
            all.sort_unstable();
            all.dedup();
            self.parts.clear();
            self.of = Some(Of {
                from_s,
                to_s,
                orgs: all,
            });
        }
        &self.of.as_ref().expect("set above").orgs
    }

    /// Adds `place`'s rows of each organisation (by index in the prepared `orgs`) to
    /// `totals`: counting the parts it has no count of, as the module's doc says.
    ///
    /// A count that fails keeps none of the counts it took: a part it counted after the part
    /// was merged away (no rows) is checked only by a later listing, which a failed count may
    /// not have made, and another replica may still have that part.
    pub(super) async fn count_place<P: Place>(
        &mut self,
        place: usize,
        reader: &mut P,
        totals: &mut [u64],
        stats: &mut CountStats,
    ) -> Result<(), StoreError> {
        let mut added = Vec::new();
        let counted = self
            .count_place_keeping(place, reader, totals, stats, &mut added)
            .await;
        if counted.is_err() {
            for id in &added {
                self.parts.remove(id);
            }
        }
        counted
    }

    /// `count_place`, naming in `added` the parts whose counts it adds to those kept.
    async fn count_place_keeping<P: Place>(
        &mut self,
        place: usize,
        reader: &mut P,
        totals: &mut [u64],
        stats: &mut CountStats,
        added: &mut Vec<PartId>,
    ) -> Result<(), StoreError> {
        let orgs = self
            .of
            .as_ref()
            .expect("`prepare` before a count")
            .orgs
            .clone();
        let index: HashMap<&str, u32> = orgs
            .iter()
            .enumerate()
            .map(|(i, o)| (o.as_str(), i as u32))
            .collect();
        let id = |part: &Listed| PartId {
            place,
            part: part.clone(),
        };
        let mut listed = reader.list().await?;
        for round in 0..ROUNDS {
            let new: Vec<&Listed> = listed
                .iter()
                .filter(|p| !self.parts.contains_key(&id(p)))
                .collect();
            // The first listing's parts are all counted; a later one's new inserts may wait.
            if new.is_empty() || (round > 0 && new.iter().all(|p| p.insert)) {
                for part in &listed {
                    if let Some(rows) = self.parts.get(&id(part)) {
                        for &(org, n) in rows {
                            totals[org as usize] += n;
                        }
                        stats.parts_summed += 1;
                    }
                }
                self.keep_only(place, &listed);
                return Ok(());
            }
            if round + 1 == ROUNDS {
                for (org, n) in reader.count_all(&listed, &orgs).await? {
                    if let Some(&i) = index.get(org.as_str()) {
                        totals[i as usize] += n;
                    }
                }
                stats.whole += 1;
                self.keep_only(place, &listed);
                return Ok(());
            }
            // Every part counted gets an entry, its organisations' rows or none.
            let mut counted: HashMap<&str, Vec<(u32, u64)>> =
                new.iter().map(|p| (p.name.as_str(), Vec::new())).collect();
            for chunk in new.chunks(PARTS_PER_QUERY) {
                let names: Vec<&str> = chunk.iter().map(|p| p.name.as_str()).collect();
                for (part, org, n) in reader.count(&names, &orgs).await? {
                    if let (Some(rows), Some(&i)) =
                        (counted.get_mut(part.as_str()), index.get(org.as_str()))
                    {
                        rows.push((i, n));
                    }
                }
            }
            stats.parts_counted += new.len();
            for part in new {
                let rows = counted.remove(part.name.as_str()).unwrap_or_default();
                added.push(id(part));
                self.parts.insert(id(part), rows);
            }
            listed = reader.list().await?;
        }
        unreachable!("the last round counts the place whole")
    }

    /// Drops `place`'s counts of parts not in `listed` (merged away, or written before the
    /// month).
    fn keep_only(&mut self, place: usize, listed: &[Listed]) {
        let now: HashSet<&Listed> = listed.iter().collect();
        self.parts
            .retain(|k, _| k.place != place || now.contains(&k.part));
    }
}

/// A place read over one connection: the single server's `spans`, or a shard's `spans_local`
/// on one of its replicas.
pub(super) struct OnNode<'c> {
    pub c: &'c mut ClientHandle,
    /// The database, as given.
    pub database: &'c str,
    /// The span table's name in `system.parts` (`spans` or `spans_local`).
    pub table: &'c str,
    /// The month's bounds (epoch s), and `since` moved onto ClickHouse's clock: the parts of
    /// the partitions holding a part whose time written is at least `since_s - now_s + now()`
    /// are listed.
    pub from_s: i64,
    pub to_s: i64,
    pub since_s: i64,
    pub now_s: i64,
}

impl OnNode<'_> {
    /// `` `db`.`table` ``.
    fn table(&self) -> String {
        format!("`{}`.`{}`", self.database, self.table)
    }

    /// The conditions every counted row meets besides its organisation: ingested in the
    /// month, and an ingest rather than a corrected copy `reprice` wrote (an ingested row's
    /// `version` is its ingest time in ms, a correction's is in a later second).
    fn month(&self) -> String {
        format!(
            "ingested_at >= toDateTime({}) AND ingested_at < toDateTime({}) \
             AND intDiv(version, 1000) = toUInt64(toUnixTimestamp(ingested_at))",
            self.from_s, self.to_s
        )
    }
}

/// `o1,o2,...` quoted for SQL.
fn quoted(items: &[impl AsRef<str>]) -> String {
    items
        .iter()
        .map(|s| sql_string(s.as_ref()))
        .collect::<Vec<_>>()
        .join(",")
}

impl Place for OnNode<'_> {
    async fn list(&mut self) -> Result<Vec<Listed>, StoreError> {
        let block = self
            .c
            .query(format!(
                "SELECT name, partition, rows, toUInt32(modification_time) AS modified, \
                 level = 0 AND data_version = min_block_number AS insert \
                 FROM system.parts WHERE {this} AND active AND partition IN \
                 (SELECT partition FROM system.parts WHERE {this} AND active \
                 AND toInt64(toUInt32(modification_time)) >= \
                 {} - {} + toInt64(toUInt32(now())))",
                self.since_s,
                self.now_s,
                this = format_args!(
                    "database = {} AND table = {}",
                    sql_string(self.database),
                    sql_string(self.table)
                ),
            ))
            .fetch_all()
            .await?;
        let mut parts = Vec::with_capacity(block.row_count());
        for row in block.rows() {
            parts.push(Listed {
                name: row.get("name")?,
                partition: row.get("partition")?,
                rows: row.get("rows")?,
                modified: row.get("modified")?,
                insert: row.get::<u8, _>("insert")? == 1,
            });
        }
        Ok(parts)
    }

    async fn count(
        &mut self,
        parts: &[&str],
        orgs: &[String],
    ) -> Result<Vec<(String, String, u64)>, StoreError> {
        let mut out = Vec::new();
        for chunk in orgs.chunks(ORGS_PER_QUERY) {
            let block = self
                .c
                .query(format!(
                    "SELECT _part AS part, org_id, count() AS n FROM {} \
                     WHERE _part IN ({}) AND org_id IN ({}) AND {} GROUP BY part, org_id",
                    self.table(),
                    quoted(parts),
                    quoted(chunk),
                    self.month()
                ))
                .fetch_all()
                .await?;
            for row in block.rows() {
                out.push((row.get("part")?, row.get("org_id")?, row.get("n")?));
            }
        }
        Ok(out)
    }

    async fn count_all(
        &mut self,
        listed: &[Listed],
        orgs: &[String],
    ) -> Result<Vec<(String, u64)>, StoreError> {
        let months: Vec<String> = listed.iter().map(|p| p.partition.clone()).collect();
        let starts = match month_ranges(&months) {
            Some(ranges) if ranges.is_empty() => return Ok(Vec::new()),
            Some(ranges) => format!("AND ({}) ", start_time_ranges(&ranges)),
            None => String::new(),
        };
        let mut out = Vec::new();
        for chunk in orgs.chunks(ORGS_PER_QUERY) {
            let block = self
                .c
                .query(format!(
                    "SELECT org_id, count() AS n FROM {} WHERE org_id IN ({}) {starts}AND {} \
                     GROUP BY org_id",
                    self.table(),
                    quoted(chunk),
                    self.month()
                ))
                .fetch_all()
                .await?;
            for row in block.rows() {
                out.push((row.get("org_id")?, row.get("n")?));
            }
        }
        Ok(out)
    }
}

/// `[from, to)` in epoch ms for each `YYYYMM` partition, a day wider on each side, overlapping
/// ones joined; `None` if one is not such a month.
fn month_ranges(months: &[String]) -> Option<Vec<(i64, i64)>> {
    const DAY_MS: i64 = 86_400_000;
    let mut ranges = Vec::with_capacity(months.len());
    for m in months {
        if m.len() != 6 || !m.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (year, month) = (m[..4].parse::<u32>().ok()?, m[4..].parse::<u32>().ok()?);
        if year < 1970 || !(1..=12).contains(&month) {
            return None;
        }
        let month = Month((year - 1970) * 12 + month - 1);
        ranges.push((
            (month.start_s() * 1000 - DAY_MS).max(0),
            month.end_s() * 1000 + DAY_MS,
        ));
    }
    ranges.sort_unstable();
    let mut joined: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (from, to) in ranges {
        match joined.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => joined.push((from, to)),
        }
    }
    Some(joined)
}

/// `start_time_ms` within any of `ranges`, or past `DateTime`'s range, as the table's partition
/// bounds can prune by (a condition on `toYYYYMM(...)` itself reads every partition on 18.16).
///
/// A start time from February 2106 on is not in its own month's partition (a client may send
/// up to 2^53 ms): past 2^32 s `toDateTime` wraps to some month between 1970 and 2106, and in
/// the last day or two before it 18.16's date table has ended (in UTC from 2106-02-07 00:00,
/// `toYYYYMM` gives 197001). Such rows are always read, or a client could keep its spans out
/// of the count with far-future times.
fn start_time_ranges(ranges: &[(i64, i64)]) -> String {
    ranges
        .iter()
        .map(|(from, to)| format!("(start_time_ms >= {from} AND start_time_ms < {to})"))
        .chain([format!("start_time_ms >= {PAST_DATETIME_MS}")])
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Start times (epoch ms) from 2106-02-05 00:00 UTC, a day before 18.16's date table ends in
/// the most eastern time zone, on: read whatever their partition.
const PAST_DATETIME_MS: u64 = 4_294_771_200_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_months_a_day_wider_each_side_joined_where_they_touch() {
        let months =
            |m: &[&str]| month_ranges(&m.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        const DAY: i64 = 86_400_000;
        // 2026-10-01, 2026-11-01, 2026-12-01 and 2019-02-01, 2019-03-01 in epoch ms.
        let (oct, nov, dec) = (1_790_812_800_000, 1_793_491_200_000, 1_796_083_200_000);
        let (feb19, mar19) = (1_548_979_200_000, 1_551_398_400_000);
        assert_eq!(months(&["202611"]), Some(vec![(nov - DAY, dec + DAY)]));
        assert_eq!(
            months(&["202611", "201902", "202610"]),
            Some(vec![(feb19 - DAY, mar19 + DAY), (oct - DAY, dec + DAY)])
        );
        assert_eq!(months(&["197001"]), Some(vec![(0, 31 * DAY + DAY)]));
        assert_eq!(months(&[]), Some(vec![]));
        for other in [
            "all", "20261", "2026110", "202613", "202600", "196912", "2026-1", "tuple()",
        ] {
            assert_eq!(months(&["202611", other]), None, "{other}");
        }
        assert_eq!(
            start_time_ranges(&[(1, 2), (5, 9)]),
            "(start_time_ms >= 1 AND start_time_ms < 2) OR (start_time_ms >= 5 AND start_time_ms < 9) \
             OR start_time_ms >= 4294771200000"
        );
    }

    /// A place whose listings are scripted, one per call, and whose rows are given per part.
    struct Scripted {
        listings: Vec<Vec<Listed>>,
        /// (part, org, rows) of parts that are still there when counted.
        rows: Vec<(&'static str, &'static str, u64)>,
        /// Parts gone by the time they are counted (merged away after the listing).
        gone: Vec<&'static str>,
        counted: Vec<Vec<String>>,
        whole: usize,
    }

    /// A part of the name given: an insert's when its level (the last field) is 0.
    fn part(name: &str) -> Listed {
        Listed {
            name: name.to_string(),
            partition: "202611".to_string(),
            rows: 10,
            modified: 1,
            insert: name.ends_with("_0"),
        }
    }

    impl Scripted {
        /// The listings given are all there is: a listing asked for past them fails, as a
        /// replica going away in the middle of a count.
        fn new(
            listings: Vec<Vec<Listed>>,
            rows: Vec<(&'static str, &'static str, u64)>,
            gone: Vec<&'static str>,
        ) -> Scripted {
            Scripted {
                listings,
                rows,
                gone,
                counted: vec![],
                whole: 0,
            }
        }
    }

    impl Place for Scripted {
        async fn list(&mut self) -> Result<Vec<Listed>, StoreError> {
            if self.listings.is_empty() {
                return Err(StoreError::new("the replica went away"));
            }
            Ok(self.listings.remove(0))
        }
        async fn count(
            &mut self,
            parts: &[&str],
            _orgs: &[String],
        ) -> Result<Vec<(String, String, u64)>, StoreError> {
            self.counted
                .push(parts.iter().map(|s| s.to_string()).collect());
            Ok(self
                .rows
                .iter()
                .filter(|(p, _, _)| parts.contains(p) && !self.gone.contains(p))
                .map(|&(p, o, n)| (p.to_string(), o.to_string(), n))
                .collect())
        }
        async fn count_all(
            &mut self,
            listed: &[Listed],
            _orgs: &[String],
        ) -> Result<Vec<(String, u64)>, StoreError> {
            self.whole += 1;
            let mut by_org: HashMap<String, u64> = HashMap::new();
            for (p, o, n) in &self.rows {
                if listed.iter().any(|l| l.name == *p) {
                    *by_org.entry(o.to_string()).or_default() += n;
                }
            }
            Ok(by_org.into_iter().collect())
        }
    }

    fn run(cache: &mut PartCounts, place: &mut Scripted) -> (Vec<u64>, CountStats) {
        let mut totals = vec![0; 2];
        let mut stats = CountStats::default();
        block_on(cache.count_place(0, place, &mut totals, &mut stats)).unwrap();
        (totals, stats)
    }

    /// Drives a future that never waits (the scripted place answers at once).
    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn orgs() -> [&'static str; 2] {
        ["a", "b"]
    }

    #[test]
    fn parts_counted_once_are_added_up_and_only_new_parts_are_read() {
        let mut cache = PartCounts::default();
        cache.prepare(0, 100, &orgs());
        let (p1, p2, p3) = (part("p_1_1_0"), part("p_2_2_0"), part("p_3_3_0"));
        let rows = vec![
            ("p_1_1_0", "a", 3),
            ("p_2_2_0", "b", 2),
            ("p_3_3_0", "a", 1),
        ];
        let mut place = Scripted::new(
            vec![vec![p1.clone(), p2.clone()], vec![p1.clone(), p2.clone()]],
            rows.clone(),
            vec![],
        );
        let (totals, stats) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![3, 2]);
        assert_eq!(place.counted, vec![vec!["p_1_1_0", "p_2_2_0"]]);
        assert_eq!((stats.parts_counted, stats.parts_summed), (2, 2));
        // An insert: only its part is read.
        let mut place = Scripted::new(
            vec![
                vec![p1.clone(), p2.clone(), p3.clone()],
                vec![p1.clone(), p2.clone(), p3.clone()],
            ],
            rows.clone(),
            vec![],
        );
        let (totals, stats) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![4, 2]);
        assert_eq!(place.counted, vec![vec!["p_3_3_0"]]);
        assert_eq!((stats.parts_counted, stats.parts_summed), (1, 3));
        // Nothing new: nothing read.
        let mut place = Scripted::new(vec![vec![p1.clone(), p3.clone()]], rows, vec![]);
        let (totals, _) = run(&mut cache, &mut place);
        assert_eq!(
            totals,
            vec![4, 0],
            "a part no longer listed no longer counts"
        );
        assert!(place.counted.is_empty());
        assert_eq!(cache.parts.len(), 2, "and its count is dropped");
        // Some of the organisations again: kept, totals by the kept list's indexes.
        assert_eq!(cache.prepare(0, 100, &["b"]), ["a", "b"]);
        assert_eq!(cache.parts.len(), 2);
        // An organisation not counted yet: counted afresh, with the others.
        assert_eq!(cache.prepare(0, 100, &["c", "a"]), ["a", "b", "c"]);
        assert!(cache.parts.is_empty());
        // Another month: afresh, only those asked for.
        assert_eq!(cache.prepare(100, 200, &["b"]), ["b"]);
    }

    #[test]
    fn a_part_merged_away_before_its_count_is_not_used_and_its_merge_is_counted() {
        let mut cache = PartCounts::default();
        cache.prepare(0, 100, &orgs());
        let (p1, p2, p12) = (part("p_1_1_0"), part("p_2_2_0"), part("p_1_2_1"));
        let mut place = Scripted::new(
            // p2 is listed, then merged with p1 into p12 before its count.
            vec![vec![p1.clone(), p2.clone()], vec![p12.clone()], vec![p12]],
            vec![
                ("p_1_1_0", "a", 3),
                ("p_2_2_0", "a", 2),
                ("p_1_2_1", "a", 5),
            ],
            vec!["p_1_1_0", "p_2_2_0"],
        );
        let (totals, stats) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![5, 0]);
        assert_eq!(
            place.counted,
            vec![vec!["p_1_1_0", "p_2_2_0"], vec!["p_1_2_1"]]
        );
        assert_eq!((stats.parts_counted, stats.whole), (3, 0));
        assert_eq!(cache.parts.len(), 1, "only the listed part's count is kept");
    }

    #[test]
    fn inserts_listed_after_the_count_began_wait_for_the_next_count() {
        let mut cache = PartCounts::default();
        cache.prepare(0, 100, &orgs());
        let (p1, p2, p3) = (part("p_1_1_0"), part("p_2_2_0"), part("p_1_3_1"));
        let rows = vec![
            ("p_1_1_0", "a", 3),
            ("p_2_2_0", "a", 2),
            ("p_1_3_1", "b", 4),
        ];
        let mut place = Scripted::new(
            // p2 is inserted while p1 is counted: no other round for it.
            vec![vec![p1.clone()], vec![p1.clone(), p2.clone()]],
            rows.clone(),
            vec![],
        );
        let (totals, stats) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![3, 0]);
        assert_eq!(place.counted, vec![vec!["p_1_1_0"]]);
        assert_eq!((stats.parts_counted, stats.parts_summed), (1, 1));
        // The next count reads it; a merge listed after its count takes another round.
        let mut place = Scripted::new(
            vec![
                vec![p1.clone(), p2.clone()],
                vec![p3.clone()],
                vec![p3.clone()],
            ],
            rows,
            vec!["p_1_1_0"],
        );
        let (totals, stats) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![0, 4]);
        assert_eq!(place.counted, vec![vec!["p_2_2_0"], vec!["p_1_3_1"]]);
        assert_eq!((stats.parts_counted, stats.parts_summed), (2, 1));
    }

    #[test]
    fn a_failed_count_keeps_none_of_its_counts() {
        let mut cache = PartCounts::default();
        cache.prepare(0, 100, &orgs());
        let (p1, p2) = (part("p_1_1_0"), part("p_2_2_0"));
        let rows = vec![("p_1_1_0", "a", 3), ("p_2_2_0", "a", 2)];
        // p2 is merged away on this replica before its count, and the replica goes away.
        let mut place = Scripted::new(
            vec![vec![p1.clone(), p2.clone()]],
            rows.clone(),
            vec!["p_2_2_0"],
        );
        let mut totals = vec![0; 2];
        let mut stats = CountStats::default();
        assert!(block_on(cache.count_place(0, &mut place, &mut totals, &mut stats)).is_err());
        assert!(cache.parts.is_empty());
        // Another replica still has both parts: both counted there.
        let mut place = Scripted::new(
            vec![vec![p1.clone(), p2.clone()], vec![p1, p2]],
            rows,
            vec![],
        );
        let (totals, _) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![5, 0]);
    }

    #[test]
    fn merges_outrunning_the_listings_count_the_place_whole() {
        let mut cache = PartCounts::default();
        cache.prepare(0, 100, &orgs());
        let listings: Vec<Vec<Listed>> = (0..ROUNDS)
            .map(|i| vec![part(&format!("p_1_{i}_{i}"))])
            .collect();
        let rows = vec![("p_1_3_3", "b", 7)];
        let mut place = Scripted {
            listings,
            rows,
            gone: vec![],
            counted: vec![],
            whole: 0,
        };
        let (totals, stats) = run(&mut cache, &mut place);
        assert_eq!(totals, vec![0, 7]);
        assert_eq!((place.whole, stats.whole), (1, 1));
        assert_eq!(place.counted.len(), ROUNDS - 1);
    }
}
