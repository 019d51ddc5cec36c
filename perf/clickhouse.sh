#!/usr/bin/env bash
# A ClickHouse of the perf harness's own: the installed server with the package's own
# config.xml (so its defaults are what a user of the package runs), but its own ports, data and
# logs, so that nothing else using the shared server (tests, other people's work) lands in the
# CPU, parts and bytes it measures, and every run starts from an empty server.
#
#   perf/clickhouse.sh start DIR [TCP_PORT HTTP_PORT]   prints "native=127.0.0.1:P http=127.0.0.1:P pid=N"
#   perf/clickhouse.sh stop DIR
#
# Defaults: native 19000, http 18123 (and 19009 for the interserver port it does not use).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
CMD="${1:-}"; DIR="${2:-}"
[ -n "$CMD" ] && [ -n "$DIR" ] || { echo "usage: $0 start|stop DIR [TCP_PORT HTTP_PORT]" >&2; exit 2; }
TCP="${3:-19000}"; HTTP="${4:-18123}"; INTER=$((TCP + 9))
# The server runs as a daemon from /: every path in its config must be absolute.
DIR=$(realpath -m "$DIR")

answers() { clickhouse-client --port "$TCP" --query "SELECT 1" >/dev/null 2>&1; }

case "$CMD" in
  start)
    scripts/clickhouse.sh >/dev/null 2>&1 || true # installs the packages if missing
    if answers; then
      echo "perf/clickhouse.sh: something already answers on $HTTP; stop it first" >&2
      exit 1
    fi
    $SUDO mkdir -p "$DIR/data" "$DIR/log"
    $SUDO cp /etc/clickhouse-server/users.xml "$DIR/users.xml"
    sed -e "s|<http_port>8123</http_port>|<http_port>$HTTP</http_port>|" \
        -e "s|<tcp_port>9000</tcp_port>|<tcp_port>$TCP</tcp_port>|" \
        -e "s|<interserver_http_port>9009</interserver_http_port>|<interserver_http_port>$INTER</interserver_http_port>|" \
        -e "s|/var/lib/clickhouse/|$DIR/data/|g" \
        -e "s|/var/log/clickhouse-server/|$DIR/log/|g" \
        /etc/clickhouse-server/config.xml | $SUDO tee "$DIR/config.xml" >/dev/null
    $SUDO chown -R clickhouse "$DIR"
    $SUDO runuser -u clickhouse -- /usr/sbin/clickhouse-server --config-file="$DIR/config.xml" \
      --daemon --pid-file="$DIR/ch.pid"
    for _ in $(seq 1 100); do
      if answers; then
        echo "native=127.0.0.1:$TCP http=127.0.0.1:$HTTP pid=$(cat "$DIR/ch.pid")"
        exit 0
      fi
      sleep 0.2
    done
    echo "perf/clickhouse.sh: no answer within 20 s; see $DIR/log/clickhouse-server.err.log" >&2
    exit 1
    ;;
  stop)
    if [ -f "$DIR/ch.pid" ]; then
      PID=$(cat "$DIR/ch.pid")
      $SUDO kill -TERM "$PID" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
      $SUDO kill -KILL "$PID" 2>/dev/null || true
    fi
    $SUDO rm -rf "$DIR"
    ;;
  *) echo "usage: $0 start|stop DIR [TCP_PORT HTTP_PORT]" >&2; exit 2 ;;
esac
