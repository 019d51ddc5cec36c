#!/usr/bin/env bash
# A local ClickHouse cluster on one machine, for the cluster tests and for trying a fleet:
# one ZooKeeper, 2 shards x 2 replicas of ClickHouse (each with its own config, ports and data
# directory; one remote_servers file names the cluster `local`), and one redis-server.
#
#   scripts/cluster.sh up            start whatever is not running (installs what is missing)
#   scripts/cluster.sh down          stop everything (data kept for the next `up`)
#   scripts/cluster.sh down --purge  stop everything and delete the data
#
# `up` is idempotent: a node that answers is left alone, one that is down (killed, stopped) is
# started again on its data. On stdout it prints one line per ClickHouse node,
# `node NAME native=HOST:PORT http=HOST:PORT pid=PID`, then `INGEST_CLICKHOUSE_URL=...` and
# `INGEST_CLICKHOUSE_CLUSTER=...`, then `INGEST_REDIS_URL=...`; ZooKeeper's and Redis's own
# lines go to stderr. The settings are also written to $CLUSTER_RUN_DIR/env, which the cluster
# tests read. `down` stops every process it started and fails if one is still there.
# Debian 12 / Ubuntu; as root, or as a user with sudo (ClickHouse runs as `clickhouse`).
set -euo pipefail

RUN_DIR="${CLUSTER_RUN_DIR:-/tmp/traceingest-cluster}"
HOST=127.0.0.1
ZK_PORT="${CLUSTER_ZK_PORT:-2191}"
REDIS_PORT="${CLUSTER_REDIS_PORT:-6391}"
CLUSTER=local
# name shard replica native http interserver
NODES=(
  "s1r1 1 1 9111 8111 9311"
  "s1r2 1 2 9112 8112 9312"
  "s2r1 2 1 9121 8121 9321"
  "s2r2 2 2 9122 8122 9322"
)
SERVER_BIN=/usr/sbin/clickhouse-server

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

log() { echo "cluster.sh: $*" >&2; }

install_missing() {
  local missing=()
  command -v clickhouse-server >/dev/null 2>&1 || missing+=(clickhouse-server clickhouse-client)
  [ -x /usr/share/zookeeper/bin/zkServer.sh ] || missing+=(zookeeperd)
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} from apt..."
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# A line-based request to a TCP port; prints the answer (bash's /dev/tcp, no netcat needed).
tcp_ask() {
  local port=$1 request=$2
  timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$port && printf '%s' \"\$1\" >&3 && cat <&3" _ "$request" 2>/dev/null || true
}

# The ClickHouse nodes run as `clickhouse`: their pid files, data and processes need root.
pid_alive() { [ -n "${1:-}" ] && $SUDO kill -0 "$1" 2>/dev/null; }
pid_of() { $SUDO cat "$1" 2>/dev/null || true; }

# --- ZooKeeper -------------------------------------------------------------------------------

zk_up() { [ "$(tcp_ask "$ZK_PORT" ruok)" = imok ]; }

start_zookeeper() {
  if zk_up; then return; fi
  local dir=$RUN_DIR/zookeeper
  mkdir -p "$dir/data" "$dir/conf" "$dir/log"
  cat >"$dir/conf/zoo.cfg" <<EOF
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$ZK_PORT
clientPortAddress=$HOST
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
EOF
  cp /etc/zookeeper/conf/log4j.properties "$dir/conf/" 2>/dev/null || true
  # The Debian package's start script with our own config file (its logs go to
  # /var/log/zookeeper, which the package's environment file fixes).
  ZOOPIDFILE=$dir/zk.pid JVMFLAGS="-Xmx256m" \
    /usr/share/zookeeper/bin/zkServer.sh start "$dir/conf/zoo.cfg" >"$dir/log/start.out" 2>&1 || {
      cat "$dir/log/start.out" >&2
      log "ZooKeeper did not start"
      exit 1
    }
  for _ in $(seq 1 150); do
    if zk_up; then return; fi
    sleep 0.2
  done
  log "ZooKeeper did not answer within 30 s; see $dir/log"
  exit 1
}

# --- Redis -----------------------------------------------------------------------------------

redis_up() { [ "$(tcp_ask "$REDIS_PORT" $'PING\r\n' | tr -d '\r')" = "+PONG" ]; }

start_redis() {
  if redis_up; then return; fi
  local dir=$RUN_DIR/redis
  mkdir -p "$dir"
  redis-server --bind "$HOST" --port "$REDIS_PORT" --daemonize yes \
    --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" \
    --save '' --appendonly no
  for _ in $(seq 1 100); do
    if redis_up; then return; fi
    sleep 0.1
  done
  log "redis-server did not answer within 10 s; see $dir/redis.log"
  exit 1
}

# --- ClickHouse ------------------------------------------------------------------------------

write_cluster_xml() {
  local f=$RUN_DIR/cluster.xml shard replica
  {
    echo '<?xml version="1.0"?>'
    echo '<yandex>'
    echo "  <remote_servers_local><$CLUSTER>"
    for shard in 1 2; do
      echo '    <shard><internal_replication>true</internal_replication><weight>1</weight>'
      for n in "${NODES[@]}"; do
        set -- $n
        [ "$2" = "$shard" ] || continue
        echo "      <replica><host>$HOST</host><port>$4</port></replica>"
      done
      echo '    </shard>'
    done
    echo "  </$CLUSTER></remote_servers_local>"
    echo "  <zookeeper_local><node><host>$HOST</host><port>$ZK_PORT</port></node><session_timeout_ms>4000</session_timeout_ms></zookeeper_local>"
    echo '</yandex>'
  } >"$f"
}

write_node_config() {
  local name=$1 shard=$2 replica=$3 native=$4 http=$5 inter=$6
  local d=$RUN_DIR/$name
  $SUDO mkdir -p "$d/data" "$d/log"
  $SUDO tee "$d/config.xml" >/dev/null <<EOF
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>$d/log/server.log</log>
        <errorlog>$d/log/server.err.log</errorlog>
        <size>10M</size>
        <count>1</count>
    </logger>
    <include_from>$RUN_DIR/cluster.xml</include_from>
    <remote_servers incl="remote_servers_local" />
    <zookeeper incl="zookeeper_local" />
    <macros><shard>0$shard</shard><replica>$name</replica></macros>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
    <http_port>$http</http_port>
    <tcp_port>$native</tcp_port>
    <interserver_http_port>$inter</interserver_http_port>
    <interserver_http_host>$HOST</interserver_http_host>
    <listen_host>$HOST</listen_host>
    <max_connections>256</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <background_pool_size>4</background_pool_size>
    <path>$d/data/</path>
    <tmp_path>$d/data/tmp/</tmp_path>
    <user_files_path>$d/data/user_files/</user_files_path>
    <format_schema_path>$d/data/format_schemas/</format_schema_path>
    <users_config>$d/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mlock_executable>false</mlock_executable>
</yandex>
EOF
  $SUDO cp /etc/clickhouse-server/users.xml "$d/users.xml"
}

ch_answers() {
  local http=$1
  tcp_ask "$http" $'GET /?query=SELECT%201 HTTP/1.0\r\n\r\n' | head -1 | grep -q ' 200 '
}

start_node() {
  local name=$1 http=$5
  local d=$RUN_DIR/$name
  if ch_answers "$http"; then return; fi
  local old
  old=$(pid_of "$d/ch.pid")
  if pid_alive "$old"; then
    # Still starting (or stopping): give it time before starting another.
    for _ in $(seq 1 150); do
      if ch_answers "$http" || ! pid_alive "$old"; then break; fi
      sleep 0.2
    done
    if ch_answers "$http"; then return; fi
  fi
  write_node_config "$@"
  # A node killed with kill -9 may have written a part that never reached ZooKeeper (its insert
  # was not acknowledged, so its client retries it); 18.16 then refuses to attach a small table
  # whose only part that is ("... rows in filesystem are suspicious"). The flag is ClickHouse's
  # own recovery: such parts go to detached/ and the replica syncs from ZooKeeper. It is
  # removed once used.
  $SUDO mkdir -p "$d/data/flags"
  $SUDO touch "$d/data/flags/force_restore_data"
  $SUDO chown -R clickhouse: "$d"
  $SUDO rm -f "$d/ch.pid"
  $SUDO runuser -u clickhouse -- "$SERVER_BIN" --config-file="$d/config.xml" --daemon \
    --pid-file="$d/ch.pid"
}

# Whether a node's server process is there (running or still starting).
node_running() { pgrep -f -- "--config-file=$RUN_DIR/$1/config.xml" >/dev/null; }

# What a node's failure left behind, on stderr (all CI shows of it): the end of its error
# log and whatever holds its ports.
node_diagnostics() {
  local name=$1 native=$4 http=$5 inter=$6
  local d=$RUN_DIR/$name
  log "the end of $d/log/server.err.log:"
  $SUDO tail -n 40 "$d/log/server.err.log" >&2 2>/dev/null || log "(no error log)"
  log "listening on its ports ($native, $http, $inter):"
  ss -ltnp 2>/dev/null | grep -E ":($native|$http|$inter) " >&2 || log "(nothing)"
}

# Waits up to 120 s for a node to answer. A node whose process has gone (it failed while
# starting) is started again, twice at most, with what it logged shown first.
wait_node() {
  local name=$1 http=$5 restarts=0
  for i in $(seq 1 600); do
    if ch_answers "$http"; then return; fi
    if ((i % 10 == 0)) && ! node_running "$name"; then
      if ((restarts == 2)); then break; fi
      restarts=$((restarts + 1))
      log "ClickHouse node $name exited while starting; starting it again ($restarts of 2)"
      node_diagnostics "$@"
      start_node "$@"
    fi
    sleep 0.2
  done
  log "ClickHouse node $name did not answer within 120 s (restarted $restarts times)"
  node_diagnostics "$@"
  exit 1
}

up() {
  install_missing
  mkdir -p "$RUN_DIR"
  chmod 755 "$RUN_DIR"
  start_zookeeper
  start_redis
  write_cluster_xml
  for n in "${NODES[@]}"; do start_node $n; done
  for n in "${NODES[@]}"; do wait_node $n; done
  local urls=() n lines=()
  for n in "${NODES[@]}"; do
    set -- $n
    lines+=("node $1 native=$HOST:$4 http=$HOST:$5 pid=$(pid_of "$RUN_DIR/$1/ch.pid")")
    urls+=("tcp://$HOST:$4")
  done
  local joined settings
  joined=$(IFS=,; echo "${urls[*]}")
  settings="INGEST_CLICKHOUSE_URL=$joined
INGEST_CLICKHOUSE_CLUSTER=$CLUSTER
INGEST_REDIS_URL=redis://$HOST:$REDIS_PORT"
  # The env file first (the tests read it), then what a user reads: a reader that stops
  # early (`| head`) must not leave the file unwritten.
  {
    echo "$settings"
    # The node table for the tests: name shard replica native http pid-file.
    for n in "${NODES[@]}"; do
      set -- $n
      echo "NODE=$1 $2 $3 $4 $5 $RUN_DIR/$1/ch.pid"
    done
    echo "RUN_DIR=$RUN_DIR"
  } >"$RUN_DIR/env.tmp"
  mv "$RUN_DIR/env.tmp" "$RUN_DIR/env"
  log "zookeeper $HOST:$ZK_PORT pid=$(pid_of "$RUN_DIR/zookeeper/zk.pid")"
  log "redis $HOST:$REDIS_PORT pid=$(pid_of "$RUN_DIR/redis/redis.pid")"
  # The nodes, then the two ClickHouse settings, then Redis's.
  printf '%s\n' "${lines[@]}" "$settings"
}

# Stops the process of a pid file: SIGTERM, up to 30 s, then SIGKILL. Prints its pid if it
# is still there after that.
stop_pid_file() {
  local file=$1 pid
  pid=$(pid_of "$file")
  if ! pid_alive "$pid"; then return; fi
  # A stopped process (SIGSTOP, as a test may leave one) gets no SIGTERM until it resumes.
  $SUDO kill -CONT "$pid" 2>/dev/null || true
  $SUDO kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    pid_alive "$pid" || return 0
    sleep 0.2
  done
  $SUDO kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    pid_alive "$pid" || return 0
    sleep 0.2
  done
  echo "$pid"
}

down() {
  # Read before the loop below reuses the positional parameters.
  local purge=${1:-} n left=()
  for n in "${NODES[@]}"; do
    set -- $n
    left+=($(stop_pid_file "$RUN_DIR/$1/ch.pid"))
  done
  left+=($(stop_pid_file "$RUN_DIR/redis/redis.pid"))
  left+=($(stop_pid_file "$RUN_DIR/zookeeper/zk.pid"))
  rm -f "$RUN_DIR/env"
  if [ ${#left[@]} -gt 0 ]; then
    log "still running after SIGKILL: ${left[*]}"
    exit 1
  fi
  if [ "$purge" = "--purge" ]; then
    $SUDO rm -rf "$RUN_DIR"
  fi
}

case "${1:-}" in
  up) up ;;
  down) shift; down "${1:-}" ;;
  *)
    echo "usage: $0 up | down [--purge]" >&2
    exit 2
    ;;
esac
