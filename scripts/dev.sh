#!/usr/bin/env bash
# One command for a new user: ClickHouse installed and started, the server built, its schema
# created, an API key printed with a curl example, then the server runs in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "Rust is needed (1.88 or newer): install it with rustup (https://rustup.rs), then rerun." >&2
  exit 1
fi
if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq build-essential >/dev/null
fi

scripts/clickhouse.sh
cargo build --release --quiet
BIN=target/release/traceingest
$BIN migrate >&2
ORG="${ORG:-local}"
KEY=$($BIN keys create --org "$ORG" 2>/dev/null)
PORT="${INGEST_PORT:-4000}"
cat >&2 <<MSG

API key for org '$ORG' (shown once): $KEY

Send a batch:
  curl -s -X POST http://127.0.0.1:$PORT/ingest \\
    -H 'Content-Type: application/json' -H "Authorization: Bearer $KEY" \\
    -d '{"version":"v1","traces":[{"traceId":"t1","traceName":"hello","spans":[{"spanId":"s1","spanType":"llm","name":"chat","startTime":1700000000000,"endTime":1700000000800,"provider":"openai.chat","modelId":"gpt-4o","usage":{"inputTokens":1200,"outputTokens":300}}]}]}'

Then look at it:
  clickhouse-client -q "SELECT trace_id, span_id, priced_model_id, total_cost FROM traceingest.spans FINAL"

MSG
exec $BIN serve
