#!/usr/bin/env bash
# Instruction counts of the request path under callgrind: builds the profile example (release
# profile, with line tables), runs each stage on a fixture, and prints the totals and the top
# functions of the whole path. Exact and repeatable, so it works on a busy machine.
#
#   perf/profile.sh [small|sdk|typical|large] [iterations]
#   perf/profile.sh otlp [iterations]   the OTLP export against its v1 twin, per byte
#
# Output: perf/out/callgrind.<fixture>.<stage>.out (open with callgrind_annotate or kcachegrind).
set -euo pipefail
cd "$(dirname "$0")/.."
FIXTURE="${1:-typical}"
N="${2:-5}"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --example profile --quiet
mkdir -p perf/out
BIN=target/release/examples/profile
if [ "$FIXTURE" = otlp ]; then
  # Issue 15: the OTLP front end against v1 on the same 512 spans, in instructions per byte of
  # the body each parses (protobuf, or the v1 JSON twin), decode alone and the whole path.
  for F in otlp otlp-v1; do
    for STAGE in decode whole; do
      OUT="perf/out/callgrind.$F.$STAGE.out"
      LOG=$(valgrind --tool=callgrind --callgrind-out-file="$OUT" --collect-atstart=no \
        --toggle-collect='*profile*iteration*' "$BIN" "$F" "$STAGE" "$N" 2>&1 || true)
      BYTES=$(sed -n 's/.* iterations of \([0-9]*\) bytes.*/\1/p' <<<"$LOG")
      IR=$(callgrind_annotate "$OUT" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
      echo "$F $STAGE: $IR instructions for $N iterations of $BYTES bytes ($((IR / N)) per request, $(awk -v i="$IR" -v n="$N" -v b="$BYTES" 'BEGIN {printf "%.1f", i / n / b}') per byte)"
      declare "IR_${F//-/_}_$STAGE=$((IR / N / BYTES * 1000 + (IR / N % BYTES) * 1000 / BYTES))"
    done
  done
  echo "otlp whole path per byte at $(awk -v o="$IR_otlp_whole" -v v="$IR_otlp_v1_whole" 'BEGIN {printf "%.1f", 100 * o / v}')% of v1's on the same spans (instructions)"
  echo
  echo "Top functions of the OTLP whole path (self cost; file:function):"
  callgrind_annotate --threshold=95 perf/out/callgrind.otlp.whole.out 2>/dev/null \
    | sed -n '/file:function/,/^$/p' | sed -E 's#  [^ ]*/([^/ ]+:)#  \1#; s# \[[^]]*\]$##' \
    | head -26 || true
  exit 0
fi
for STAGE in simd decode whole; do
  OUT="perf/out/callgrind.$FIXTURE.$STAGE.out"
  valgrind --tool=callgrind --callgrind-out-file="$OUT" --collect-atstart=no \
    --toggle-collect='*profile*iteration*' "$BIN" "$FIXTURE" "$STAGE" "$N" 2>&1 \
    | grep -E "Collected|iterations" >&2 || true
  IR=$(callgrind_annotate "$OUT" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
  echo "$FIXTURE $STAGE: $IR instructions for $N iterations ($((IR / N)) per request)"
  declare "IR_$STAGE=$IR"
done
# The bench's ratio in instructions: the whole path's speed as a share of simd-json's own parse
# (simd instructions / whole instructions).
echo "$FIXTURE whole path at $(awk -v s="$IR_simd" -v w="$IR_whole" 'BEGIN {printf "%.1f", 100 * s / w}')% of simd-json's own parse (instructions)"
if clickhouse-client --query "SELECT 1" >/dev/null 2>&1; then
  OUT="perf/out/callgrind.$FIXTURE.flush.out"
  LOG=$(valgrind --tool=callgrind --callgrind-out-file="$OUT" --collect-atstart=no \
    --toggle-collect='*profile*iteration*' "$BIN" "$FIXTURE" flush "$N" 2>&1 || true)
  clickhouse-client --query "DROP DATABASE IF EXISTS perf_profile" || true
  IR=$(callgrind_annotate "$OUT" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
  ROWS=$(sed -n 's/.*: \([0-9]*\) items$/\1/p' <<<"$LOG")
  echo "$FIXTURE flush: $IR instructions for $N inserts of $((ROWS / N)) rows ($((IR / (ROWS > 0 ? ROWS : 1))) per row)"
  # The same inserts at full speed (no valgrind): rows/s, our CPU and ClickHouse's per row
  # (ClickHouse's figure covers the 2 warm-up inserts too: 32 x 10,000 rows).
  CH_PID=$(pgrep -x clickhouse-serv | head -1 || true)
  ticks() { if [ -n "$CH_PID" ]; then awk '{print $14 + $15}' "/proc/$CH_PID/stat"; else echo 0; fi; }
  T0=$(ticks)
  RATE=$("$BIN" "$FIXTURE" flush 30 | grep insert_spans || true)
  T1=$(ticks)
  clickhouse-client --query "DROP DATABASE IF EXISTS perf_profile" || true
  HZ=$(getconf CLK_TCK)
  echo "$FIXTURE $RATE; ClickHouse server CPU $(awk -v t=$((T1 - T0)) -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz / 320000 * 1e6}') µs per row"
fi
echo
echo "Top functions of the whole path (self cost; file:function):"
callgrind_annotate --threshold=95 "perf/out/callgrind.$FIXTURE.whole.out" 2>/dev/null \
  | sed -n '/file:function/,/^$/p' | sed -E 's#  [^ ]*/([^/ ]+:)#  \1#; s# \[[^]]*\]$##' \
  | head -22 || true
