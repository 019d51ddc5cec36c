#!/usr/bin/env bash
# The whole test suite: ClickHouse up, formatting, lints, unit and integration tests, benches
# compiled. What CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/clickhouse.sh
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo test --all-targets
