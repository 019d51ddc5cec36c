//! Integration tests: the real server binary, real HTTP over TCP, rows read back from a real
//! ClickHouse (which must be running on 127.0.0.1:9000/8123; `.ci/run` starts it). The
//! durability tests also start private ClickHouse servers of their own, to stop and start; the
//! cluster tests use the local cluster of `scripts/cluster.sh`.

#![recursion_limit = "512"]

mod private_clickhouse;
mod support;

mod admission;
mod cli;
mod cluster;
mod connections;
mod contract;
mod durability;
mod fleet;
mod grpc;
mod hardening;
mod keys;
mod operations;
mod otlp;
mod pricing;
mod salvage;
mod shutdown;
mod storage;
