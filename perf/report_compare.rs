//! The "New vs baseline" section of `perf/RESULTS.md`: the comparison phases `perf/run.sh
//! --baseline REV` ran on both binaries (`perf/out/compare/<phase>-<old|new>-<round>.json`), as
//! medians over the rounds, and issue 18's targets judged on them.

use std::fmt::Write as _;

use serde_json::Value;

use crate::{bench_min_ns, bench_ns, f, pass, read_json};

const DIR: &str = "perf/out/compare";

/// The comparison phases, as `perf/run.sh` names their files, and as the tables name them.
const PHASES: [(&str, &str); 4] = [
    ("typical", "typical (1 MB, 1000 spans)"),
    ("small", "small (2.8 KB, 5 spans)"),
    ("sdk", "sdk (1.7 KB, 3 spans, 2 conns)"),
    ("otlp", "otlp (512-span protobuf export)"),
];

/// What the table shows per phase: name, how to read it from a phase's JSON, decimals.
type Metric = (&'static str, fn(&Value) -> f64, usize);

const METRICS: [Metric; 10] = [
    ("offered req/s", |p| f(&p["offered_per_s"]), 0),
    ("ClickHouse µs of CPU per row", |p| ch_us(p, "total"), 2),
    ("  of it insert (`TCPHandler`)", |p| ch_us(p, "insert"), 2),
    (
        "  of it merges (`BackgrProcPool`)",
        |p| ch_us(p, "merges"),
        2,
    ),
    (
        "parts created per minute",
        |p| f(&p["clickhouse"]["parts_per_minute"]),
        1,
    ),
    (
        "bytes on disk per span",
        |p| f(&p["clickhouse"]["bytes_on_disk_per_span"]),
        0,
    ),
    ("server CPU-s per GB", |p| f(&p["cpu_s_per_decoded_gb"]), 2),
    (
        "server µs of CPU per span",
        |p| f(&p["cpu_s_per_million_spans"]),
        2,
    ),
    (
        "server µs of CPU per request",
        |p| f(&p["cpu_us_per_request"]["total"]),
        1,
    ),
    ("p99 latency ms", |p| f(&p["p99_ms"]), 2),
];

/// An issue-18 target: what it says, the phase, the figure, the bound on new/old, decimals.
type Target = (&'static str, &'static str, fn(&Value) -> f64, f64, usize);

fn ch_us(p: &Value, thread: &str) -> f64 {
    f(&p["clickhouse"]["cpu_us_per_row"][thread])
}

/// Every round's result of one phase on one side that ran and refused nothing (a refusing
/// phase's figures would not be the phase's).
fn runs(phase: &str, side: &str) -> Vec<Value> {
    let prefix = format!("{phase}-{side}-");
    let mut files: Vec<String> = std::fs::read_dir(DIR)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix) && n.ends_with(".json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|n| read_json(&format!("{DIR}/{n}")))
        .filter(|v| v["accepted"].as_u64().unwrap_or(0) > 0 && v["refused"].as_u64() == Some(0))
        .collect()
}

/// The median of the finite values; NaN if there are none.
fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn num(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "-".to_string()
    }
}

/// (new, old) medians of one metric of one phase.
fn medians(new: &[Value], old: &[Value], get: fn(&Value) -> f64) -> (f64, f64) {
    (
        median(new.iter().map(get).collect()),
        median(old.iter().map(get).collect()),
    )
}

pub fn comparison(
    o: &mut String,
    baseline: &str,
    sha: &str,
    rounds: usize,
    command: &str,
    benched: bool,
) {
    let short = &sha[..sha.len().min(10)];
    let _ = writeln!(o, "### New vs baseline\n");
    let _ = writeln!(
        o,
        "New = the commit above; old = the baseline `{baseline}` (`{short}`), built in \
         `perf/out/baseline-src` (a detached worktree) with its own target directory. Both \
         servers ran side by side on the harness's ClickHouse, each with its own database and \
         key and the settings `perf/run.sh` gives (their own defaults otherwise), driven by the \
         new load generator, one phase at a time in the order old, new, new, old, ... \
         Each figure is the median over the {rounds} round(s) (in brackets how many counted, \
         where a round is missing or refused requests); every phase is an open loop at a fixed rate \
         (`loadgen --only`), counted as the phases above, with ClickHouse's bill. Run with \
         `{command}`; the comparison alone: `perf/run.sh --baseline {baseline} --compare-only`.\n"
    );
    let _ = writeln!(
        o,
        "| phase | figure | new | old | new/old |\n|---|---|---|---|---|"
    );
    let mut table = Vec::new();
    for (phase, title) in PHASES {
        let (new, old) = (runs(phase, "new"), runs(phase, "old"));
        let note = |ok: usize| {
            if ok < rounds {
                format!(" ({ok} of {rounds} rounds)")
            } else {
                String::new()
            }
        };
        for (i, (name, get, decimals)) in METRICS.iter().enumerate() {
            let (n, d) = medians(&new, &old, *get);
            let first = if i == 0 { title } else { "" };
            let (nn, on) = if i == 0 {
                (note(new.len()), note(old.len()))
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                o,
                "| {first} | {name} | {}{nn} | {}{on} | {} |",
                num(n, *decimals),
                num(d, *decimals),
                num(n / d, 2)
            );
        }
        table.push((phase, new, old));
    }
    let ratio = |phase: &str, get: fn(&Value) -> f64| {
        let (_, new, old) = table.iter().find(|t| t.0 == phase).unwrap();
        medians(new, old, get)
    };
    let _ = writeln!(
        o,
        "\n| target (issue 18) | new | old | new/old | |\n|---|---|---|---|---|"
    );
    let rows: [Target; 4] = [
        (
            "ClickHouse CPU per row <= 0.5x the baseline's, typical (µs)",
            "typical",
            |p| ch_us(p, "total"),
            0.5,
            2,
        ),
        (
            "ClickHouse CPU per row <= 0.5x the baseline's, small (µs)",
            "small",
            |p| ch_us(p, "total"),
            0.5,
            2,
        ),
        (
            "server CPU per GB <= the baseline's, typical (CPU-s)",
            "typical",
            |p| f(&p["cpu_s_per_decoded_gb"]),
            1.0,
            2,
        ),
        (
            "server CPU per small request at 1,000 req/s <= 0.5x the baseline's, sdk (µs)",
            "sdk",
            |p| f(&p["cpu_us_per_request"]["total"]),
            0.5,
            1,
        ),
    ];
    for (target, phase, get, bound, decimals) in rows {
        let (n, d) = ratio(phase, get);
        let _ = writeln!(
            o,
            "| {target} | {} | {} | {} | {} |",
            num(n, decimals),
            num(d, decimals),
            num(n / d, 2),
            pass(n / d <= bound)
        );
    }
    // As the targets table of the full run computes it: the fastest sample of each bench.
    let bench = |g: &str, n: &str| if benched { bench_min_ns(g, n) } else { None };
    let (simd, whole) = (
        bench("ingest_typical", "simd_json_tape"),
        bench("ingest_typical", "whole_path"),
    );
    let measured = match (simd, whole) {
        (Some(s), Some(w)) => {
            let medians = match (
                bench_ns("ingest_typical", "simd_json_tape"),
                bench_ns("ingest_typical", "whole_path"),
            ) {
                (Some(s), Some(w)) => format!("; {:.0}% from the medians", s / w * 100.0),
                _ => String::new(),
            };
            format!("{:.0}% from the fastest samples{medians}", s / w * 100.0)
        }
        _ => "benches not run (--no-bench)".to_string(),
    };
    let ok = matches!((simd, whole), (Some(s), Some(w)) if s / w >= 0.65);
    let _ = writeln!(
        o,
        "| whole request path >= 65% of simd-json's parse (`ingest_typical` bench, new build) | {measured} | | | {} |\n",
        pass(ok)
    );
}
