#!/usr/bin/env bash
# The load harness in one command: a ClickHouse of its own, release server on loopback with its
# own database, the open-loop load generator, the criterion benches and the callgrind profile,
# then the figures written into perf/RESULTS.md (between its GENERATED markers) next to the
# targets. With --baseline REV it also builds REV and runs a comparison set of fixed-rate phases
# on both binaries, alternating, against the same ClickHouse.
#
#   perf/run.sh [--sustain-secs N] [--phase-secs N] [--workers N] [--connections N]
#               [--otlp-rate N] [--otlp-rounds N] [--no-bench] [--no-profile]
#               [--clickhouse-ports TCP,HTTP] [--clickhouse-dir DIR]
#               [--baseline REV [--compare-only] [--rounds N] [--typical-rate N]
#                [--small-rate N]]
#
# Defaults: 15 s per load phase, a 20 s sustain run (the issue's 60 s: --sustain-secs 60), one
# worker (a core's worth), 8 connections, OTLP phases at 40 exports/s (protobuf and its v1
# twin in 3 alternating rounds), ClickHouse on 19000 (native) and 18123 (HTTP) with its data in
# perf/out/clickhouse (removed at exit; --clickhouse-dir DIR puts it in
# DIR/traceingest-perf-clickhouse instead, for example on the filesystem a production ClickHouse
# would use: ClickHouse's CPU per row depends on it, see perf/RESULTS.md). About 16 minutes of
# load after the release build (the ramps to the maximum rates take 4 to 6), then the benches
# and the profile. The comparison: typical at 60 req/s, small at 8000, sdk at 1000
# on 2 connections, otlp at --otlp-rate, each on old and new in the order old, new, new, old,
# ... for --rounds (2), about a minute per phase and binary with the merges waited for.
set -euo pipefail
cd "$(dirname "$0")/.."
COMMAND="perf/run.sh $*"
SUSTAIN=20; PHASE=15; WORKERS=1; CONNECTIONS=8; BENCH=1; PROFILE=1; OTLP_RATE=40; OTLP_ROUNDS=3
CH_TCP=19000; CH_HTTP=18123; CH_DIR=perf/out/clickhouse
BASELINE=""; COMPARE_ONLY=0; ROUNDS=2; TYPICAL_RATE=60; SMALL_RATE=8000; SDK_RATE=1000
while [ $# -gt 0 ]; do
  case "$1" in
    --sustain-secs) SUSTAIN="$2"; shift 2 ;;
    --phase-secs) PHASE="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --connections) CONNECTIONS="$2"; shift 2 ;;
    --otlp-rate) OTLP_RATE="$2"; shift 2 ;;
    --otlp-rounds) OTLP_ROUNDS="$2"; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --no-profile) PROFILE=0; shift ;;
    --clickhouse-ports) CH_TCP="${2%,*}"; CH_HTTP="${2#*,}"; shift 2 ;;
    --clickhouse-dir) CH_DIR="${2%/}/traceingest-perf-clickhouse"; shift 2 ;;
    --baseline) BASELINE="$2"; shift 2 ;;
    --compare-only) COMPARE_ONLY=1; shift ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --typical-rate) TYPICAL_RATE="$2"; shift 2 ;;
    --small-rate) SMALL_RATE="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$COMPARE_ONLY" = 1 ] && [ -z "$BASELINE" ]; then
  echo "--compare-only needs --baseline REV" >&2; exit 2
fi

OUT=perf/out
mkdir -p "$OUT"

# A --compare-only run writes its own generated block after the full run's, which it leaves
# as it is; a full run replaces its block and drops that one.
# The baseline first: if it does not build, nothing else has run. Its own worktree and target
# directory under perf/out, rebuilt only when REV names another commit.
OLD_BIN=""; BASELINE_SHA=""
if [ -n "$BASELINE" ]; then
  BASELINE_SHA=$(git rev-parse --verify "$BASELINE^{commit}")
  SRC="$OUT/baseline-src"; TGT="$OUT/baseline-target"
  OLD_BIN="$TGT/release/traceingest"
  if [ -x "$OLD_BIN" ] && [ "$(cat "$TGT/built-rev" 2>/dev/null)" = "$BASELINE_SHA" ]; then
    echo "baseline $BASELINE ($BASELINE_SHA) already built" >&2
  else
    echo "building the baseline $BASELINE ($BASELINE_SHA, release)..." >&2
    git worktree prune
    if [ -e "$SRC/.git" ]; then
      git -C "$SRC" checkout --quiet --force --detach "$BASELINE_SHA"
    else
      rm -rf "$SRC"
      git worktree add --quiet --detach "$SRC" "$BASELINE_SHA"
    fi
    rm -f "$TGT/built-rev"
    cargo build --release --quiet --bin traceingest --manifest-path "$SRC/Cargo.toml" \
      --target-dir "$TGT"
    echo "$BASELINE_SHA" >"$TGT/built-rev"
  fi
fi

echo "building (release)..." >&2
cargo build --release --quiet --bin traceingest --example loadgen --example report --example profile
NEW_BIN=target/release/traceingest

# Settings both servers run with (each binary's own defaults otherwise).
export INGEST_LOG=warn INGEST_HOST=127.0.0.1 INGEST_PORT=0 INGEST_ADMIN_ADDR=127.0.0.1:0
export INGEST_WORKERS="$WORKERS" INGEST_KEY_REFRESH_MS=100
# The load is one key: the contract's default per-key rate (100 spans/s) would measure the limiter.
export INGEST_RATE_LIMIT_RPS=unlimited
export INGEST_CLICKHOUSE_URL="tcp://127.0.0.1:$CH_TCP"
unset INGEST_CLICKHOUSE_CLUSTER

SERVERS=() # "pid data-dir" of every server started, for cleanup
cleanup() {
  for s in "${SERVERS[@]}"; do
    local pid="${s%% *}"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
    rm -rf "${s#* }"
  done
  SERVERS=()
  perf/clickhouse.sh stop "$CH_DIR" 2>/dev/null || true
}
trap cleanup EXIT

# A ClickHouse of the harness's own (perf/clickhouse.sh): nothing else lands in what it
# measures. A previous run's, if one was left running, is stopped first.
perf/clickhouse.sh stop "$CH_DIR" 2>/dev/null || true
CH_LINE=$(perf/clickhouse.sh start "$CH_DIR" "$CH_TCP" "$CH_HTTP")
CH_PID="${CH_LINE##*pid=}"
echo "ClickHouse: $CH_LINE" >&2
# The filesystem under ClickHouse's data, for the report: on ext4 without a journal each new
# file steps over the inodes freed in the last minute or more (the kernel's `recently_deleted`),
# which costs ClickHouse up to 1.8 times the CPU per row just after a large delete (see
# perf/RESULTS.md).
CH_FS=$(findmnt -no SOURCE,FSTYPE -T "$CH_DIR" 2>/dev/null | head -1 || true)
if [ "${CH_FS##* }" = ext4 ]; then
  DEV=$(basename "${CH_FS%% *}")
  if compgen -G "/proc/fs/jbd2/$DEV-*" >/dev/null; then CH_FS="$CH_FS with a journal"
  else CH_FS="$CH_FS without a journal"; fi
fi
echo "ClickHouse data on: ${CH_FS:-unknown}" >&2
ch() { clickhouse-client --port "$CH_TCP" --query "$1"; }

# start_server TAG BIN DATABASE: migrate, a key, serve; sets S_PID S_ADDR S_ADMIN S_KEY.
start_server() {
  local tag="$1" bin="$2" db="$3"
  local log="$OUT/server-$tag" data="$OUT/data-$tag"
  rm -rf "$data"
  INGEST_CLICKHOUSE_DATABASE="$db" "$bin" migrate >/dev/null
  S_KEY=$(INGEST_CLICKHOUSE_DATABASE="$db" "$bin" keys create --org perf 2>/dev/null)
  INGEST_CLICKHOUSE_DATABASE="$db" INGEST_DATA_DIR="$data" "$bin" serve \
    >"$log.stdout" 2>"$log.stderr" &
  S_PID=$!
  SERVERS+=("$S_PID $data")
  for _ in $(seq 1 100); do
    grep -q "admin on" "$log.stdout" 2>/dev/null && break
    sleep 0.1
  done
  S_ADDR=$(sed -n 's|.*listening on http://||p' "$log.stdout" | head -1)
  S_ADMIN=$(sed -n 's|.*admin on http://||p' "$log.stdout" | head -1)
  [ -n "$S_ADDR" ] && [ -n "$S_ADMIN" ] || { echo "the $tag server did not start; see $log.stderr" >&2; exit 1; }
  echo "$tag server ($bin) pid $S_PID on $S_ADDR, database $db, $WORKERS worker(s)" >&2
}
LOADGEN=(target/release/examples/loadgen --connections "$CONNECTIONS" --phase-secs "$PHASE"
  --otlp-rate "$OTLP_RATE" --otlp-rounds "$OTLP_ROUNDS" --clickhouse-http "127.0.0.1:$CH_HTTP" --clickhouse-pid "$CH_PID")

if [ "$COMPARE_ONLY" = 0 ]; then
  rm -f "$OUT/load.json"
  start_server run "$NEW_BIN" perf_run
  "${LOADGEN[@]}" --addr "$S_ADDR" --admin "$S_ADMIN" --key "$S_KEY" --pid "$S_PID" \
    --database perf_run --sustain-secs "$SUSTAIN" --out "$OUT/load.json"
  kill -TERM "$S_PID"; wait "$S_PID" 2>/dev/null || true
  ch "DROP DATABASE IF EXISTS perf_run"
fi

if [ -n "$BASELINE" ]; then
  # Both servers fresh, side by side, each with its own database and key; one phase at a time.
  start_server old "$OLD_BIN" perf_old
  OLD=(--addr "$S_ADDR" --admin "$S_ADMIN" --key "$S_KEY" --pid "$S_PID" --database perf_old)
  start_server new "$NEW_BIN" perf_new
  NEW=(--addr "$S_ADDR" --admin "$S_ADMIN" --key "$S_KEY" --pid "$S_PID" --database perf_new)
  rm -rf "$OUT/compare"; mkdir -p "$OUT/compare"
  PHASES=("typical open:$TYPICAL_RATE" "small open-small:$SMALL_RATE" "sdk open-sdk:$SDK_RATE"
    "otlp open-otlp:$OTLP_RATE")
  for round in $(seq 1 "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then ORDER="old new"; else ORDER="new old"; fi
    for p in "${PHASES[@]}"; do
      for side in $ORDER; do
        name="${p%% *}"; only="${p#* }"
        echo "compare round $round: $name on $side" >&2
        if [ "$side" = old ]; then TARGET=("${OLD[@]}"); else TARGET=("${NEW[@]}"); fi
        "${LOADGEN[@]}" "${TARGET[@]}" --only "$only" \
          --out "$OUT/compare/$name-$side-$round.json" 2>>"$OUT/compare/loadgen.log" \
          || echo "  failed: see $OUT/compare/loadgen.log" >&2
      done
    done
  done
fi
cleanup

BENCHED=0
if [ "$BENCH" = 1 ]; then
  echo "criterion benches..." >&2
  if [ "$COMPARE_ONLY" = 1 ]; then
    # Only what the comparison's bench-ratio target reads.
    BENCHES=(--bench ingest -- ingest_typical)
  else
    BENCHES=(--bench ingest --bench http --bench pricing --bench otlp --)
  fi
  cargo bench --quiet "${BENCHES[@]}" --warm-up-time 1 --measurement-time 5 --noplot 2>&1 \
    | grep -E "^[a-z_0-9]+/|time:|thrpt:" >&2 && BENCHED=1 || true
fi
ALLOC=skipped
if [ "$COMPARE_ONLY" = 0 ]; then
  if [ "$PROFILE" = 1 ]; then
    echo "callgrind profile..." >&2
    perf/profile.sh typical 3 >"$OUT/profile.txt"
  fi
  echo "allocation test..." >&2
  ALLOC=fail
  cargo test --quiet --test alloc >&2 && ALLOC=pass
fi
target/release/examples/report --command "$COMMAND" --workers "$WORKERS" --alloc-test "$ALLOC" \
  --benched "$BENCHED" --compare-only "$COMPARE_ONLY" --baseline "$BASELINE" \
  --baseline-sha "$BASELINE_SHA" --rounds "$ROUNDS" --clickhouse-fs "$CH_FS"
echo "wrote perf/RESULTS.md" >&2
