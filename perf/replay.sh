#!/usr/bin/env bash
# What `traceingest deadletter replay` costs: a dead-letter file of REQUESTS x 1,000 spans made
# by the release server itself (its `spans` table's `name` column changed to UInt8 by hand, so
# every insert is refused whatever its rows and dead-lettered at once), the column put back,
# then the file replayed twice (the second time stores nothing new). Prints, for each replay,
# its wall time, CPU time and peak memory (GNU time), and the rows in the table after it.
#
#   perf/replay.sh [REQUESTS]        # default 100 (100,000 rows, about 140 MB of lines)
#
# Uses a ClickHouse of its own (perf/clickhouse.sh, ports 19400/18500, data in
# perf/out/replay), removed again at the end; needs `cargo build --release` first.
set -euo pipefail
cd "$(dirname "$0")/.."
. perf/server_addr.sh

REQUESTS="${1:-100}"
BIN=target/release/traceingest
OUT=perf/out/replay
CH_TCP=19400 CH_HTTP=18500
[ -x "$BIN" ] || { echo "build the release binary first: cargo build --release" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time: apt-get install -y time" >&2; exit 1; }

rm -rf "$OUT" && mkdir -p "$OUT"
SERVER=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null || true
  perf/clickhouse.sh stop "$OUT/clickhouse" >/dev/null 2>&1 || true
}
trap cleanup EXIT
perf/clickhouse.sh start "$OUT/clickhouse" "$CH_TCP" "$CH_HTTP" >/dev/null
ch() { clickhouse-client --port "$CH_TCP" --query "$1"; }

export INGEST_CLICKHOUSE_URL="tcp://127.0.0.1:$CH_TCP" INGEST_CLICKHOUSE_DATABASE=replay
export INGEST_LOG=warn,traceingest::sink::flush=off INGEST_HOST=127.0.0.1 INGEST_PORT=0
export INGEST_ADMIN_ADDR=127.0.0.1:0 INGEST_RATE_LIMIT_RPS=unlimited
unset INGEST_CLICKHOUSE_CLUSTER
"$BIN" migrate >/dev/null
KEY=$("$BIN" keys create --org replay 2>/dev/null)
INGEST_DATA_DIR="$OUT/data" "$BIN" serve >"$OUT/server.stdout" 2>"$OUT/server.stderr" &
SERVER=$!
ADDR=$(server_addr "$OUT/server.stdout" "$OUT/server.stderr")
# After the start, whose schema check would refuse the table.
ch "ALTER TABLE replay.spans MODIFY COLUMN name UInt8"

# One body of 10 traces x 100 spans, each with a 1 KB input, its ids made distinct per request.
python3 - "$OUT/body.json" <<'EOF'
import json, sys
traces = []
for t in range(10):
    spans = [{"spanId": f"s{t}-{s}", "spanType": "llm", "name": "chat",
              "startTime": 1_785_369_600_000 + s, "endTime": 1_785_369_601_000 + s,
              "provider": "openai", "modelId": "gpt-4o",
              "usage": {"inputTokens": 1000, "outputTokens": 200},
              "input": "x" * 1000, "metadata": {"env": "prod", "run": str(s)}}
             for s in range(100)]
    traces.append({"traceId": f"TRACE-{t}", "traceName": "run", "spans": spans})
json.dump({"version": "v1", "traces": traces}, open(sys.argv[1], "w"))
EOF
for i in $(seq 1 "$REQUESTS"); do
  sed "s/TRACE-/r$i-/g" "$OUT/body.json" >"$OUT/req.json"
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$ADDR/ingest" \
    -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' --data-binary @"$OUT/req.json")
  [ "$code" = 202 ] || { echo "request $i: $code" >&2; exit 1; }
done
ROWS=$((REQUESTS * 1000))
FILE="$OUT/data/deadletter/spans.jsonl"
for _ in $(seq 1 600); do
  [ -f "$FILE" ] && [ "$(wc -l <"$FILE")" -ge "$ROWS" ] && break
  sleep 0.1
done
kill "$SERVER" && wait "$SERVER" 2>/dev/null || true
SERVER=""
LINES=$(wc -l <"$FILE")
[ "$LINES" = "$ROWS" ] || { echo "the dead-letter file has $LINES lines, not $ROWS" >&2; exit 1; }
ch "ALTER TABLE replay.spans MODIFY COLUMN name String"
echo "dead-letter file: $LINES rows, $(du -m "$FILE" | cut -f1) MB"
for round in 1 2; do
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time" "$BIN" deadletter replay "$FILE" >"$OUT/replay.out"
  read -r wall user sys rss <"$OUT/time"
  stored=$(ch "SELECT count() FROM replay.spans FINAL")
  raw=$(ch "SELECT count() FROM replay.spans")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
  rate=$(awk -v r="$ROWS" -v w="$wall" 'BEGIN {printf "%.0f", r / w}')
  echo "replay $round: wall ${wall} s, CPU $cpu s (user $user, sys $sys)," \
    "peak RSS $((rss / 1024)) MB, $rate rows/s; table: $stored rows (FINAL), $raw stored"
done
