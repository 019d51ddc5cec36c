#!/usr/bin/env bash
# The load harness in one command: ClickHouse up, release server on loopback with its own
# database, the open-loop load generator, the criterion benches and the callgrind profile, then
# the figures written into perf/RESULTS.md (between its GENERATED markers) next to the targets.
#
#   perf/run.sh [--sustain-secs N] [--phase-secs N] [--workers N] [--connections N]
#               [--no-bench] [--no-profile]
#
# Defaults: 15 s per load phase, a 20 s sustain run (the issue's 60 s: --sustain-secs 60), one
# worker (a core's worth), 8 connections. About 12 minutes of load after the release build (the
# ramps to the maximum rates take 4 to 6 minutes), then the benches and the profile.
set -euo pipefail
cd "$(dirname "$0")/.."
COMMAND="perf/run.sh $*"
SUSTAIN=20; PHASE=15; WORKERS=1; CONNECTIONS=8; BENCH=1; PROFILE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --sustain-secs) SUSTAIN="$2"; shift 2 ;;
    --phase-secs) PHASE="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --connections) CONNECTIONS="$2"; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --no-profile) PROFILE=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

scripts/clickhouse.sh
echo "building (release)..." >&2
cargo build --release --quiet --bin traceingest --example loadgen --example report --example profile
mkdir -p perf/out
BIN=target/release/traceingest
DB="perf_$$"
export INGEST_CLICKHOUSE_DATABASE="$DB" INGEST_LOG=warn INGEST_HOST=127.0.0.1 INGEST_PORT=0
export INGEST_ADMIN_ADDR=127.0.0.1:0
export INGEST_WORKERS="$WORKERS" INGEST_KEY_REFRESH_MS=100
# The load is one key: the contract's default per-key rate (100 spans/s) would measure the limiter.
export INGEST_RATE_LIMIT_RPS=unlimited INGEST_DATA_DIR="perf/out/data"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  clickhouse-client --query "DROP DATABASE IF EXISTS $DB" 2>/dev/null || true
  rm -rf perf/out/data
}
trap cleanup EXIT

$BIN migrate >/dev/null
KEY=$($BIN keys create --org perf 2>/dev/null)
$BIN serve >perf/out/server.stdout 2>perf/out/server.stderr &
SERVER_PID=$!
for _ in $(seq 1 100); do
  grep -q "admin on" perf/out/server.stdout 2>/dev/null && break
  sleep 0.1
done
ADDR=$(sed -n 's|.*listening on http://||p' perf/out/server.stdout | head -1)
ADMIN=$(sed -n 's|.*admin on http://||p' perf/out/server.stdout | head -1)
[ -n "$ADDR" ] && [ -n "$ADMIN" ] || { echo "the server did not start; see perf/out/server.stderr" >&2; exit 1; }
echo "server pid $SERVER_PID on $ADDR, database $DB, $WORKERS worker(s)" >&2

target/release/examples/loadgen --addr "$ADDR" --admin "$ADMIN" --key "$KEY" --pid "$SERVER_PID" \
  --database "$DB" --connections "$CONNECTIONS" --phase-secs "$PHASE" \
  --sustain-secs "$SUSTAIN" --out perf/out/load.json
cleanup
SERVER_PID=""

if [ "$BENCH" = 1 ]; then
  echo "criterion benches..." >&2
  cargo bench --quiet --bench ingest --bench http --bench pricing -- \
    --warm-up-time 1 --measurement-time 5 --noplot 2>&1 | grep -E "^[a-z_]+/|time:|thrpt:" >&2 || true
fi
if [ "$PROFILE" = 1 ]; then
  echo "callgrind profile..." >&2
  perf/profile.sh typical 3 >perf/out/profile.txt
fi
echo "allocation test..." >&2
ALLOC=fail
cargo test --quiet --test alloc >&2 && ALLOC=pass
target/release/examples/report --command "$COMMAND" --workers "$WORKERS" --alloc-test "$ALLOC"
echo "wrote perf/RESULTS.md" >&2
