//! traceingest: the write path of a tracing and cost-tracking system for AI model calls.
//!
//! # Layout
//!
//! Modules in the order a span travels through them:
//!
//! - `config`: flags and `INGEST_*` variables -> one checked `Config`.
//! - `server`: pinned monoio workers (`runtime`), one task per connection (`conn`).
//! - `http`: request framing (`request`) and the one outcome -> answer mapping (`response`).
//! - `auth`: API key format, SHA-256, the in-memory `KeyStore`.
//! - `ingest`: decode the body in place (`decode`), the schema (`validate`), the borrowed
//!   batch types (`wire`), priced rows (`rows`), the hand-off to storage (`handoff`);
//!   `Pipeline` strings them together.
//! - `admission`: the per-key rate limit (`rate`), plans (`plan`) and the monthly quota
//!   (`quota`), checked between the schema and the write buffer.
//! - `calendar`: UTC days and months, for quota months and printed times.
//! - `pricing`: price table, model matching, exact money; pure, no I/O.
//! - `row`: the owned `RowBatch` a worker hands to the flush thread.
//! - `sink`: the flush thread (`flush`), the spool on disk (`spool`, `segment`, `codec`), the
//!   write-ahead thread (`wal`), the dead-letter file (`deadletter`) and the only ClickHouse
//!   code (`clickhouse`).
//! - `control`: the background thread that refreshes keys and plans, re-counts quota usage and
//!   reloads prices.
//! - `metrics`: lock-free counters, encoded for `/metrics`.
//! - `cli`: `keys`, `orgs`, `price` commands.

pub mod admission;
pub mod auth;
pub mod calendar;
pub mod cli;
pub mod clock;
pub mod config;
pub mod control;
pub mod http;
pub mod ingest;
pub mod metrics;
pub mod pricing;
pub mod row;
pub mod server;
pub mod sink;
