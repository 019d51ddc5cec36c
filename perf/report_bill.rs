//! The sections of `perf/RESULTS.md` about the whole bill of the full run (`perf/out/load.json`):
//! ClickHouse's share per steady-state phase, the small (sdk) requests, and OTLP against v1 on
//! the same spans with the decoder's bench ratio to prost.

use std::fmt::Write as _;

use serde_json::Value;

use crate::{bench_ns, f, human_ns, pass};

/// The steady-state phases of the full run that carry a bill, with their names in the tables.
fn billed(load: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    for p in load["open_loop"].as_array().into_iter().flatten() {
        out.push((
            format!("typical, {} of max", p["label"].as_str().unwrap_or("")),
            p,
        ));
    }
    out.push(("small, 80% of max".into(), &load["open_small"]));
    out.push(("sustain (typical, 80%)".into(), &load["sustain"]));
    for (key, name) in [
        ("open_sdk", "sdk"),
        ("open_otlp", "otlp"),
        ("open_otlp_gzip", "otlp-gzip"),
        ("open_otlp_v1", "otlp-v1"),
    ] {
        out.push((name.into(), &load[key]));
    }
    out.retain(|(_, p)| p["clickhouse"].is_object());
    out
}

/// Accepted spans of a phase.
pub fn spans(p: &Value) -> f64 {
    f(&p["accepted"]) * f(&p["spans_per_batch"])
}

/// ClickHouse's CPU per row, by thread, next to the server's per span, and what the rows
/// cost in parts and bytes on disk.
pub fn clickhouse_share(o: &mut String, load: &Value) {
    let phases = billed(load);
    if phases.is_empty() {
        return;
    }
    let _ = writeln!(o, "### ClickHouse's share of the bill\n");
    let _ = writeln!(
        o,
        "| phase | spans accepted | ClickHouse µs of CPU per row: total (insert / merges / other) | server µs per span | ClickHouse's share of the CPU | ClickHouse spans per CPU-s | parts created (per minute) | rows merged | bytes on disk per span (compressed / uncompressed) | waited for merges s |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for (name, p) in &phases {
        let c = &p["clickhouse"];
        let per_row = &c["cpu_us_per_row"];
        let server_us = f(&p["cpu"]["total_s"]) / spans(p) * 1e6;
        let ch_us = f(&per_row["total"]);
        let _ = writeln!(
            o,
            "| {name} | {:.0} | {ch_us:.2} ({:.2} / {:.2} / {:.2}) | {server_us:.2} | {:.0}% | {:.0} | {:.0} ({:.1}) | {:.0} | {:.0} ({:.0} / {:.0}) | {:.1}{} |",
            spans(p),
            f(&per_row["insert"]),
            f(&per_row["merges"]),
            f(&per_row["other"]),
            ch_us / (ch_us + server_us) * 100.0,
            f(&c["spans_per_cpu_s"]),
            f(&c["parts_created"]),
            f(&c["parts_per_minute"]),
            f(&c["rows_merged"]),
            f(&c["bytes_on_disk_per_span"]),
            f(&c["compressed_per_span"]),
            f(&c["uncompressed_per_span"]),
            f(&c["waited_for_merges_s"]),
            if c["merges_quiet"].as_bool() == Some(false) {
                " (still merging)"
            } else {
                ""
            },
        );
    }
    let _ = writeln!(
        o,
        "\n| phase | the 5 largest columns on disk: bytes per span, compressed / uncompressed |\n|---|---|"
    );
    for (name, p) in &phases {
        let cols: Vec<String> = p["clickhouse"]["largest_columns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "`{}` {:.1} / {:.1}",
                    c["name"].as_str().unwrap_or(""),
                    f(&c["compressed_per_span"]),
                    f(&c["uncompressed_per_span"])
                )
            })
            .collect();
        let _ = writeln!(o, "| {name} | {} |", cols.join(", "));
    }
    let _ = writeln!(
        o,
        "\nClickHouse's CPU is its server process's utime+stime (`/proc/<pid>/stat`) from the \
         start of the phase until every accepted row was written and `system.merges` had been \
         empty for 2 s in a row (at most 120 s: \"still merging\" when that ran out), so the \
         merges a phase's inserts cause are in it; split by thread name (`/proc/<pid>/task`): \
         insert = `TCPHandler` (the native connections the flush thread inserts on), merges = \
         `BackgrProcPool`, other = the rest, including threads that ended during the phase and \
         the harness's own polling queries. Per row = over the spans accepted. ClickHouse's \
         share = its CPU per row over its own plus the server's. Parts created = \
         `MergeTreeDataWriterBlocks` in `system.events` (parts written by inserts), per minute of \
         sending; rows merged = `MergedRows`. Bytes on disk = the active parts of the phase's \
         table after the merges (`system.parts`: `bytes_on_disk`, `data_compressed_bytes`, \
         `data_uncompressed_bytes`; columns from `system.columns`) over the rows in them. \
         ClickHouse is the harness's own (`perf/clickhouse.sh`): nothing else runs on it.\n"
    );
}

/// The sdk fixture at 1,000 requests per second on 2 connections: what a small request costs.
pub fn small_requests(o: &mut String, load: &Value) {
    let p = &load["open_sdk"];
    if !p.is_object() {
        return;
    }
    let r = &p["cpu_us_per_request"];
    let c = &p["clickhouse"];
    let per_batch = f(&p["spans_per_batch"]);
    let _ = writeln!(
        o,
        "### Small requests (sdk fixture: 1 trace x {per_batch:.0} spans, {:.0} bytes)\n",
        f(&p["body_bytes"])
    );
    let _ = writeln!(
        o,
        "| offered req/s, conns | accepted (refused) | server µs of CPU per request: total (workers / flush / other) | server spans per CPU-s | ClickHouse µs per request | ClickHouse spans per CPU-s | p50 / p99 ms |\n|---|---|---|---|---|---|---|"
    );
    let _ = writeln!(
        o,
        "| {:.0}, {} | {} ({}) | {:.1} ({:.1} / {:.1} / {:.1}) | {:.0} | {:.1} | {:.0} | {:.2} / {:.2} |\n",
        f(&p["offered_per_s"]),
        p["connections"],
        p["accepted"],
        p["refused"],
        f(&r["total"]),
        f(&r["workers"]),
        f(&r["flush"]),
        f(&r["other"]),
        f(&p["spans_per_cpu_s"]),
        f(&c["cpu_us_per_row"]["total"]) * per_batch,
        f(&c["spans_per_cpu_s"]),
        f(&p["p50_ms"]),
        f(&p["p99_ms"]),
    );
}

/// OTLP protobuf, gzip and v1 JSON of the same 512 spans at the same rate, gzip's cost as the
/// difference, and the issue-15 targets.
pub fn otlp(o: &mut String, load: &Value) {
    let (plain, gz, v1) = (
        &load["open_otlp"],
        &load["open_otlp_gzip"],
        &load["open_otlp_v1"],
    );
    if !plain.is_object() {
        return;
    }
    let _ = writeln!(
        o,
        "### OTLP and v1 on the same spans (512-span export, {:.0} exports/s each)\n",
        f(&load["otlp_rate"])
    );
    let _ = writeln!(
        o,
        "| phase | body per request: sent / decoded KB | accepted (refused) | server CPU-s per GB decoded | per GB sent | µs per span | µs per export: total (workers / flush) | ClickHouse µs per row | p99 ms |\n|---|---|---|---|---|---|---|---|---|"
    );
    for (name, p) in [
        ("otlp (protobuf)", plain),
        ("otlp-gzip", gz),
        ("otlp-v1 (v1 JSON)", v1),
    ] {
        if !p.is_object() {
            continue;
        }
        let r = &p["cpu_us_per_request"];
        let _ = writeln!(
            o,
            "| {name} | {:.0} / {:.0} | {} ({}) | {:.2} | {:.2} | {:.2} | {:.0} ({:.0} / {:.0}) | {:.2} | {:.2} |",
            f(&p["body_bytes"]) / 1e3,
            f(&p["decoded_bytes"]) / 1e3,
            p["accepted"],
            p["refused"],
            f(&p["cpu_s_per_decoded_gb"]),
            f(&p["cpu_s_per_gb"]),
            f(&p["cpu_s_per_million_spans"]),
            f(&r["total"]),
            f(&r["workers"]),
            f(&r["flush"]),
            f(&p["clickhouse"]["cpu_us_per_row"]["total"]),
            f(&p["p99_ms"]),
        );
    }
    let per_export = |p: &Value| f(&p["cpu_us_per_request"]["total"]);
    let gzip_us = per_export(gz) - per_export(plain);
    let gzip_gb = f(&gz["cpu_s_per_decoded_gb"]) - f(&plain["cpu_s_per_decoded_gb"]);
    let gunzip = bench_ns("otlp_512_gzip", "gunzip");
    let _ = writeln!(
        o,
        "\ngzip's cost, the gzip phase minus the plain one: {gzip_us:.0} µs of server CPU per \
         export, {gzip_gb:.2} CPU-s per GB of decoded protobuf{}. Per GB decoded = over the \
         uncompressed body the server parses (protobuf, or v1 JSON for otlp-v1); per GB sent = \
         over the bytes on the wire (compressed for gzip). Each gzip request has a body of its \
         own, compressed before the phase (flate2's default level), since a compressed body \
         cannot be given new trace ids in place.\n",
        gunzip.map_or(String::new(), |ns| format!(
            " (the `otlp_512_gzip/gunzip` bench: {} per export)",
            human_ns(ns)
        )),
    );
    // Judged on the medians over the alternating rounds (one pair of phases can mislead on a
    // machine whose speed drifts), each round listed.
    let rounds = load["otlp_rounds"].as_array().cloned().unwrap_or_default();
    let gb = |r: &Value, side: &str| f(&r[side]["cpu_s_per_decoded_gb"]);
    let (proto_gb, v1_gb) = if rounds.is_empty() {
        (
            f(&plain["cpu_s_per_decoded_gb"]),
            f(&v1["cpu_s_per_decoded_gb"]),
        )
    } else {
        let median = |side: &str| {
            let mut v: Vec<f64> = rounds.iter().map(|r| gb(r, side)).collect();
            v.sort_by(f64::total_cmp);
            if v.len() % 2 == 1 {
                v[v.len() / 2]
            } else {
                (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
            }
        };
        (median("otlp"), median("v1"))
    };
    if !rounds.is_empty() {
        let _ = writeln!(
            o,
            "Protobuf and its v1 twin in {} alternating rounds (the first is the two phases \
             above; then v1 first in even rounds): CPU-s per GB decoded, protobuf / v1 \
             (ratio), and µs per export: {}.\n",
            rounds.len(),
            rounds
                .iter()
                .map(|r| format!(
                    "{:.2} / {:.2} ({:.2}; {:.0} / {:.0} µs)",
                    gb(r, "otlp"),
                    gb(r, "v1"),
                    gb(r, "otlp") / gb(r, "v1"),
                    f(&r["otlp"]["cpu_us_per_request"]),
                    f(&r["v1"]["cpu_us_per_request"]),
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let prost = bench_ns("otlp_read_512", "prost_decode");
    let reader = bench_ns("otlp_read_512", "reader");
    let ratio = match (prost, reader) {
        (Some(p), Some(r)) => p / r,
        _ => f64::NAN,
    };
    let _ = writeln!(o, "| target (issue 15) | measured | |\n|---|---|---|");
    let _ = writeln!(
        o,
        "| server CPU per GB of uncompressed OTLP protobuf <= the v1 path's per GB of JSON, same spans (medians of the rounds) | {proto_gb:.2} vs {v1_gb:.2} CPU-s per GB | {} |",
        pass(proto_gb <= v1_gb)
    );
    let _ = writeln!(
        o,
        "| protobuf decode >= 3x faster than prost on the same bytes (`otlp_read_512`: `prost_decode` / `reader`, medians) | {} | {} |\n",
        match (prost, reader) {
            (Some(p), Some(r)) => format!("{ratio:.1}x ({} vs {})", human_ns(p), human_ns(r)),
            _ => "bench not run".to_string(),
        },
        pass(ratio >= 3.0)
    );
}
