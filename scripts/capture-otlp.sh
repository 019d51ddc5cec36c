#!/usr/bin/env bash
# (Re)creates the OTLP/HTTP trace captures in tests/fixtures/otlp/ from the real client libraries.
#
#   scripts/capture-otlp.sh            all captures
#   scripts/capture-otlp.sh NAME...    only these (e.g. vercel-ai pydantic-ai); the others are kept
#
# Installs what it needs, idempotently, into target/otlp-capture/ (git-ignored): a Python venv
# from scripts/otlp-capture/requirements.txt and node_modules from scripts/otlp-capture/package.json
# and package-lock.json (npm ci). Needs python3 (3.11) and node 20 + npm; only PyPI and npm are
# contacted, and only when the pins change. Every model call goes to a local mock
# (mock_openai.py) and every export to a local capture listener (listener.py), both on 127.0.0.1
# at free ports; both are stopped on exit, also on failure.
#
# Captures are made in target/otlp-capture/out and copied over tests/fixtures/otlp/ only when all
# of them succeeded; then every capture gets a decoded dump (decode.py) and README.md is
# regenerated from the dumps (gen_readme.py).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HELPERS=$ROOT/scripts/otlp-capture
WORK=$ROOT/target/otlp-capture
VENV=$WORK/venv
NODE_DIR=$WORK/node
OUT=$WORK/out
RUN=$WORK/run
FIXTURES=$ROOT/tests/fixtures/otlp
PY=$VENV/bin/python

ALL=(python-sdk-genai python-sdk-genai-plain js-sdk-genai openinference-openai openllmetry-openai vercel-ai pydantic-ai)
if [ $# -gt 0 ]; then WANT=("$@"); else WANT=("${ALL[@]}"); fi
for w in "${WANT[@]}"; do
  case " ${ALL[*]} " in *" $w "*) ;; *) echo "unknown capture: $w (known: ${ALL[*]})" >&2; exit 2 ;; esac
done

log() { printf '[capture-otlp] %s\n' "$*" >&2; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# ---- background processes: every one we start is stopped on exit -------------------------------
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server PORTFILE CMD... : starts CMD in the background, waits until it wrote its port.
# Sets SERVER_PID and SERVER_PORT.
start_server() {
  local portfile=$1
  shift
  rm -f "$portfile"
  "$@" &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  local i
  for i in $(seq 1 100); do
    if [ -s "$portfile" ]; then
      SERVER_PORT=$(cat "$portfile")
      return 0
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      log "server died before listening: $*"
      return 1
    fi
    sleep 0.1
  done
  log "server did not start in 10 s: $*"
  return 1
}

stop_server() {
  local pid=$1 rest=() p
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || rest+=("$p"); done
  PIDS=("${rest[@]+"${rest[@]}"}")
}

# ---- installs ------------------------------------------------------------------------------------
setup_python() {
  local want
  want=$(hash_of "$HELPERS/requirements.txt")
  if [ ! -x "$PY" ]; then
    log "creating venv $VENV"
    python3 -m venv "$VENV"
  fi
  if [ "$(cat "$VENV/.capture-stamp" 2>/dev/null)" != "$want" ]; then
    log "installing Python packages (requirements.txt changed or first run)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HELPERS/requirements.txt"
    echo "$want" >"$VENV/.capture-stamp"
  fi
}

setup_node() {
  local want
  want=$(hash_of "$HELPERS/package.json" "$HELPERS/package-lock.json")
  mkdir -p "$NODE_DIR"
  if [ "$(cat "$NODE_DIR/.capture-stamp" 2>/dev/null)" != "$want" ] || [ ! -d "$NODE_DIR/node_modules" ]; then
    log "installing npm packages (npm ci)"
    cp "$HELPERS/package.json" "$HELPERS/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$NODE_DIR/.capture-stamp"
  fi
  # The programs must sit beside node_modules for ESM imports to resolve; copy them each run.
  cp "$HELPERS"/*.mjs "$NODE_DIR/"
}

# ---- one capture ---------------------------------------------------------------------------------
# capture NAME CMD... : runs CMD with OTLP_CAPTURE_ENDPOINT pointing at a fresh listener that
# saves into $OUT as NAME[-n].<ext> + .headers.
capture() {
  local name=$1
  shift
  log "capture $name: $*"
  start_server "$RUN/listener.port" "$PY" "$HELPERS/listener.py" --name "$name" --out "$OUT" --port-file "$RUN/listener.port"
  local listener=$SERVER_PID
  OTLP_CAPTURE_ENDPOINT="http://127.0.0.1:$SERVER_PORT/v1/traces" "$@"
  stop_server "$listener"
  if [ ! -e "$OUT/$name.headers" ] && [ ! -e "$OUT/$name-1.headers" ]; then
    log "capture $name: the listener received nothing"
    return 1
  fi
}

wanted() { case " ${WANT[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

main() {
  local start=$SECONDS
  mkdir -p "$WORK" "$RUN"
  rm -rf "$OUT"
  mkdir -p "$OUT"
  setup_python
  setup_node

  start_server "$RUN/mock.port" "$PY" "$HELPERS/mock_openai.py" --port-file "$RUN/mock.port"
  export OPENAI_BASE_URL="http://127.0.0.1:$SERVER_PORT/v1"
  # Keep every client off the network and quiet: no proxies for loopback, no telemetry of their own.
  export NO_PROXY="127.0.0.1,localhost" no_proxy="127.0.0.1,localhost"
  export OPENAI_API_KEY=sk-mock-capture
  unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_EXPORTER_OTLP_COMPRESSION \
    OTEL_EXPORTER_OTLP_TRACES_COMPRESSION OTEL_RESOURCE_ATTRIBUTES OTEL_SERVICE_NAME OTEL_TRACES_EXPORTER 2>/dev/null || true
  export PYTHONPATH="$HELPERS" PYTHONDONTWRITEBYTECODE=1 PYTHONWARNINGS=ignore

  if wanted python-sdk-genai; then capture python-sdk-genai "$PY" "$HELPERS/python_sdk_genai.py" --gzip; fi
  if wanted python-sdk-genai-plain; then capture python-sdk-genai-plain "$PY" "$HELPERS/python_sdk_genai.py"; fi
  if wanted js-sdk-genai; then capture js-sdk-genai node "$NODE_DIR/js_sdk_genai.mjs"; fi
  if wanted openinference-openai; then capture openinference-openai "$PY" "$HELPERS/openinference_openai.py"; fi
  if wanted openllmetry-openai; then capture openllmetry-openai "$PY" "$HELPERS/openllmetry_openai.py"; fi
  if wanted vercel-ai; then capture vercel-ai node "$NODE_DIR/vercel_ai.mjs"; fi
  if wanted pydantic-ai; then capture pydantic-ai "$PY" "$HELPERS/pydantic_ai_agent.py"; fi

  cleanup # stop the mock before touching the fixtures

  # Check every capture decodes before replacing anything in tests/fixtures/otlp.
  "$PY" "$HELPERS/decode.py" "$OUT" >/dev/null
  mkdir -p "$FIXTURES"
  local name f
  for name in "${WANT[@]}"; do
    for f in "$FIXTURES/$name".* "$FIXTURES/$name"-[0-9]*.*; do
      [ -e "$f" ] && rm -f "$f"
    done
    cp "$OUT/$name".* "$FIXTURES/" 2>/dev/null || true
    cp "$OUT/$name"-[0-9]*.* "$FIXTURES/" 2>/dev/null || true
  done
  "$PY" "$HELPERS/gen_readme.py" "$FIXTURES" --node-dir "$NODE_DIR" >"$FIXTURES/README.md.tmp"
  mv "$FIXTURES/README.md.tmp" "$FIXTURES/README.md"
  log "done in $((SECONDS - start)) s; $(du -sh "$FIXTURES" | cut -f1) in $FIXTURES:"
  ls -l "$FIXTURES" >&2
  # README.md holds no ids, timestamps or ports: if it is unchanged, the span structure is too.
  if git -C "$ROOT" ls-files --error-unmatch tests/fixtures/otlp/README.md >/dev/null 2>&1; then
    if git -C "$ROOT" diff --quiet -- tests/fixtures/otlp/README.md; then
      log "span tables unchanged from the committed README.md"
    else
      log "span tables CHANGED: see git diff tests/fixtures/otlp/README.md"
    fi
  fi
}

main
