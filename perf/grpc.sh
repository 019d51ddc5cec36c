#!/usr/bin/env bash
# OTLP over gRPC against OTLP/HTTP on the same 512-span export, in one run: a release server
# (one worker, as perf/run.sh runs it) on a private ClickHouse (perf/clickhouse.sh), and
# `grpc` (perf/grpc.rs) alternating the two protocols for ROUNDS rounds.
#
#   perf/grpc.sh [ROUNDS] [-- grpc flags, e.g. --rate 40 --secs 10]
#
# Prints one JSON line per phase to stdout. ClickHouse's ports: $CH_TCP/$CH_HTTP (default
# 19300/18423), its data in $CH_DIR; it is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. perf/server_addr.sh
ROUNDS=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then ROUNDS="$1"; shift; fi
[ "${1:-}" = "--" ] && shift
CH_DIR="${CH_DIR:-/tmp/grpc-ch-$$}"
CH_TCP="${CH_TCP:-19300}"; CH_HTTP="${CH_HTTP:-18423}"
OUT="${OUT_DIR:-/tmp/grpc-$$}"
mkdir -p "$OUT"
cargo build --release --quiet --bin traceingest --example grpc
CH=$(perf/clickhouse.sh start "$CH_DIR" "$CH_TCP" "$CH_HTTP")
echo "clickhouse: $CH" >&2
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && { kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
  perf/clickhouse.sh stop "$CH_DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT

export INGEST_CLICKHOUSE_URL="tcp://127.0.0.1:$CH_TCP" INGEST_LOG=warn INGEST_HOST=127.0.0.1
export INGEST_PORT=0 INGEST_ADMIN_ADDR=127.0.0.1:0 INGEST_WORKERS="${INGEST_WORKERS:-1}"
export INGEST_RATE_LIMIT_RPS=unlimited INGEST_CLICKHOUSE_DATABASE=perf_grpc
export INGEST_DATA_DIR="$OUT/data"
BIN=target/release/traceingest
"$BIN" migrate >/dev/null
KEY=$("$BIN" keys create --org perf-grpc 2>/dev/null)
"$BIN" serve >"$OUT/server.stdout" 2>"$OUT/server.stderr" &
SERVER=$!
ADDR=$(server_addr "$OUT/server.stdout" "$OUT/server.stderr")
# The key set is reloaded every 500 ms.
sleep 1.5
target/release/examples/grpc --addr "$ADDR" --key "$KEY" --pid "$SERVER" --rounds "$ROUNDS" "$@"
