#!/usr/bin/env bash
# Installs ClickHouse from the distribution's packages if it is missing and starts it if it is
# not answering. Idempotent: safe to run before every test run. Debian 12 / Ubuntu.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
RUN_DIR="${CLICKHOUSE_RUN_DIR:-/tmp/traceingest-clickhouse}"

answers() { clickhouse-client --query 'SELECT 1' >/dev/null 2>&1; }

if ! command -v clickhouse-server >/dev/null 2>&1; then
  echo "installing ClickHouse (clickhouse-server, clickhouse-client) from apt..." >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null
fi

if answers; then
  echo "ClickHouse is running ($(clickhouse-client --query 'SELECT version()'))" >&2
  exit 0
fi

$SUDO mkdir -p "$RUN_DIR"
$SUDO chown clickhouse "$RUN_DIR"
# No systemd needed: run the server as its own user, daemonised.
$SUDO runuser -u clickhouse -- /usr/sbin/clickhouse-server \
  --config-file=/etc/clickhouse-server/config.xml --daemon --pid-file="$RUN_DIR/ch.pid"

for _ in $(seq 1 100); do
  if answers; then
    echo "ClickHouse started ($(clickhouse-client --query 'SELECT version()'))" >&2
    exit 0
  fi
  sleep 0.2
done
echo "ClickHouse did not answer within 20 s; see /var/log/clickhouse-server/clickhouse-server.err.log" >&2
exit 1
