//! traceingest: the write path of a tracing and cost-tracking system for AI model calls.
//!
//! # Layout
//!
//! Modules in the order a span travels through them:
//!
//! - `config`: flags and `INGEST_*` variables -> one checked `Config`.
//! - `server`: monoio workers (`runtime`), one task per connection (`conn`), the wait
//!   for an early key-set load when a key is unknown (`keywait`), the operations endpoints
//!   (`ops`) and the admin listener that serves them off the public port (`admin`), and
//!   `Shared`, the state every worker reads.
//! - `http`: request framing (`request`), the one mapping of refusals to answers (`refusal`),
//!   writing answers (`response`, with `json` string literals and the OTLP answers in `otlp`).
//! - `auth`: API key format, SHA-256, the in-memory `KeyStore`, and the on-demand refresh a
//!   worker asks for when it meets an unknown key (`refresh`).
//! - `ingest`: the pipeline: a front end per wire format (`v1` JSON, `otlp` protobuf or JSON,
//!   after `compress` for a coded body) decodes a body into the borrowed span model (`wire`);
//!   `rows` prices the spans into rows and `unpriced` counts those without a price; then
//!   admission and the hand-off to storage.
//! - `admission`: the per-key rate limit (`rate`, and its fleet-wide lease in `fleet`), plans
//!   (`plan`) and the monthly quota (`quota`), checked between decoding and the write buffer.
//! - `pricing`: price table, model matching, exact money; pure, no I/O.
//! - `row`: the `spans` columns and the `RowBatch` a worker hands to the storage side.
//! - `sink`: the storage side: memory budget (`budget`) and hand-off (`handoff`), write-ahead
//!   log (`wal`), flush thread (`flush`), spool (`spool`, `segment`, `codec`), dead letters
//!   (`deadletter`), flush figures (`stats`), and the only ClickHouse code (`clickhouse`).
//! - `control`: the background thread that refreshes keys and plans, re-counts quota usage and
//!   reloads prices; `fleet`: its leases of rate-limit budget from Redis (fleet-wide limits).
//! - `metrics`: lock-free counters, encoded for `/metrics`.
//! - `clock`, `calendar`, `hex`: the wall and monotonic clocks; UTC days and months; hex digits.
//! - `cli`: the `keys`, `orgs`, `price` and `reprice` commands.
//!
//! Without the `server` feature (on by default; the fuzz crate turns it off) only what the
//! fuzz targets run is built: the front ends, rows, pricing, admission, keys and the HTTP
//! parser, without the pipeline's hand-off, the sink, the server, the control thread and the
//! CLI, nor their dependencies.

pub mod admission;
pub mod auth;
pub mod calendar;
#[cfg(feature = "server")]
pub mod cli;
pub mod clock;
#[cfg(feature = "server")]
pub mod config;
#[cfg(feature = "server")]
pub mod control;
#[cfg(feature = "server")]
pub mod fleet;
pub mod hex;
pub mod http;
pub mod ingest;
#[cfg(feature = "server")]
pub mod log_format;
#[cfg(feature = "server")]
pub mod metrics;
pub mod pricing;
pub mod row;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod sink;

#[cfg(test)]
mod fuzz_seeds;
/// The perf harness's seeded v1 batches, for the unit tests.
#[cfg(test)]
#[path = "../perf/fixtures.rs"]
#[rustfmt::skip] // Shared with the perf harness, which keeps its own layout.
mod perf_fixtures;
/// `perf/otlp_fixtures.rs` names this crate as the benches and tests outside it do.
#[cfg(test)]
extern crate self as traceingest;
