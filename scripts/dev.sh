#!/usr/bin/env bash
# One command for a new user: a C compiler and ClickHouse installed and started, the server
# built, its schema created, an API key (reused from the last run while it is active) printed
# with a curl example, then the server runs in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build-deps.sh
scripts/clickhouse.sh
echo "building the release binary (the first build takes a few minutes)..." >&2
cargo build --release
# Where cargo put it: `target/`, or the user's own CARGO_TARGET_DIR.
BIN="${CARGO_TARGET_DIR:-target}/release/traceingest"
"$BIN" migrate >&2

# Keys are shown once and only their hashes are stored, so the key this script made is kept
# in the data directory and reused while it is active, instead of a new key every run.
ORG="${ORG:-local}"
DATA_DIR="${INGEST_DATA_DIR:-data}"
KEY_FILE="$DATA_DIR/dev-api-key"
KEY=""
if [ -s "$KEY_FILE" ]; then
  KEY=$(head -n 1 "$KEY_FILE")
  # `keys list`: PREFIX ORG PROJECT CREATED(date time) STATE; the prefix is 12 characters.
  if "$BIN" keys list | awk -v p="${KEY:0:12}" -v o="$ORG" \
      '$1 == p && $2 == o && $NF == "active" { found = 1 } END { exit !found }'; then
    echo "reusing the API key for org '$ORG' kept in $KEY_FILE (delete the file for a new one)" >&2
  else
    echo "the key in $KEY_FILE is revoked or belongs to another org or database: creating a new one" >&2
    KEY=""
  fi
fi
if [ -z "$KEY" ]; then
  # Its error, if any, goes to the terminal as it is.
  if ! KEY=$("$BIN" keys create --org "$ORG"); then
    echo "scripts/dev.sh: \`traceingest keys create --org $ORG\` failed (see above)" >&2
    exit 1
  fi
  mkdir -p "$DATA_DIR"
  (umask 077 && printf '%s\n' "$KEY" >"$KEY_FILE")
  echo "created an API key for org '$ORG'; kept in $KEY_FILE for the next runs" >&2
fi
PORT="${INGEST_PORT:-4000}"
# Where a local curl reaches the server: its own address, unless it listens on every one.
HOST="${INGEST_HOST:-0.0.0.0}"
case "$HOST" in 0.0.0.0 | :: | "[::]") HOST=127.0.0.1 ;; *:*) HOST="[${HOST#[}" HOST="${HOST%]}]" ;; esac
DB="${INGEST_CLICKHOUSE_DATABASE:-traceingest}"
ADMIN="${INGEST_ADMIN_ADDR:-127.0.0.1:4001}"
cat >&2 <<MSG

API key for org '$ORG': $KEY

Send a batch:
  curl -s -X POST http://$HOST:$PORT/ingest \\
    -H 'Content-Type: application/json' -H "Authorization: Bearer $KEY" \\
    -d '{"version":"v1","traces":[{"traceId":"t1","traceName":"hello","spans":[{"spanId":"s1","spanType":"llm","name":"chat","startTime":1700000000000,"endTime":1700000000800,"provider":"openai.chat","modelId":"gpt-4o","usage":{"inputTokens":1200,"outputTokens":300}}]}]}'

Then look at it:
  clickhouse-client -q "SELECT trace_id, span_id, priced_model_id, total_cost FROM $DB.spans FINAL"

Metrics (admin listener): curl -s http://$ADMIN/metrics

MSG
exec "$BIN" serve
