//! Storage side: the flush thread that batches accepted rows and the ClickHouse store it writes to.
//!
//! Workers send each request's `RowBatch` over a crossbeam channel (after adding its rows to the
//! shared `buffered_rows` count); `flush` buffers them and inserts on `max_rows` or `interval`;
//! `clickhouse` is the only code that knows ClickHouse (schema, inserts, error classes, keys).
//! Each thread that talks to ClickHouse (flush, control) builds its own `Store` on its own
//! current-thread tokio runtime; no other thread runs tokio.

pub mod clickhouse;
pub mod flush;

pub use clickhouse::{
    ActiveKey, InsertError, Inserted, KeyRecord, Retry, RowRun, Store, StoreError,
};
pub use flush::{spawn, FlushConfig, FlushReport, FlushStats};
