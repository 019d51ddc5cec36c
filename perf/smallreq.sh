#!/usr/bin/env bash
# Small requests, old against new in one run: two release servers (say main's and this tree's)
# on one private ClickHouse, each in a database of its own, and `smallreq` (perf/smallreq.rs)
# against them in turn, alternating, so that both see the same machine.
#
#   perf/smallreq.sh OLD_BIN NEW_BIN [ROUNDS] [-- smallreq flags, e.g. --rate 1000 --secs 20]
#
# Each round prints one JSON line per server (label old-N / new-N) to stdout. The servers run
# with one worker, as perf/run.sh does (INGEST_WORKERS overrides it). ClickHouse is a private one
# (perf/clickhouse.sh, or $CH_SCRIPT: ports $CH_TCP/$CH_HTTP, default 19100/18223, in $CH_DIR),
# so nothing else that uses the shared server lands in its CPU figures; it is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. perf/server_addr.sh
OLD="$1"; NEW="$2"; shift 2
ROUNDS=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then ROUNDS="$1"; shift; fi
[ "${1:-}" = "--" ] && shift
CH_SCRIPT="${CH_SCRIPT:-perf/clickhouse.sh}"
CH_DIR="${CH_DIR:-/tmp/smallreq-ch-$$}"
CH_TCP="${CH_TCP:-19100}"; CH_HTTP="${CH_HTTP:-18223}"
OUT="${OUT_DIR:-/tmp/smallreq-$$}"
mkdir -p "$OUT"

CH=$("$CH_SCRIPT" start "$CH_DIR" "$CH_TCP" "$CH_HTTP")
CH_PID=$(sed -n 's/.*pid=//p' <<<"$CH")
echo "clickhouse: $CH" >&2
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  "$CH_SCRIPT" stop "$CH_DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT

export INGEST_CLICKHOUSE_URL="tcp://127.0.0.1:$CH_TCP" INGEST_LOG=warn INGEST_HOST=127.0.0.1
export INGEST_PORT=0 INGEST_ADMIN_ADDR=127.0.0.1:0 INGEST_WORKERS="${INGEST_WORKERS:-1}"
export INGEST_RATE_LIMIT_RPS=unlimited
declare -A ADDR KEY PID
for which in old new; do
  bin=$OLD; [ "$which" = new ] && bin=$NEW
  export INGEST_CLICKHOUSE_DATABASE="smallreq_$which" INGEST_DATA_DIR="$OUT/data-$which"
  "$bin" migrate >/dev/null
  KEY[$which]=$("$bin" keys create --org "smallreq-$which" 2>/dev/null)
  "$bin" serve >"$OUT/$which.stdout" 2>"$OUT/$which.stderr" &
  PID[$which]=$!
  PIDS+=("$!")
  ADDR[$which]=$(server_addr "$OUT/$which.stdout" "$OUT/$which.stderr")
  echo "$which: $bin pid ${PID[$which]} on ${ADDR[$which]}" >&2
done
# The key set is reloaded every 500 ms: let both servers know their key.
sleep 1.5
for r in $(seq 1 "$ROUNDS"); do
  for which in old new; do
    target/release/examples/smallreq --addr "${ADDR[$which]}" --key "${KEY[$which]}" \
      --pid "${PID[$which]}" --ch-pid "$CH_PID" --label "$which-$r" "$@"
  done
done
