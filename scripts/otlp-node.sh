#!/usr/bin/env bash
# The OpenTelemetry JS SDK with its OTLP/HTTP and gRPC exporters, for the live exporter test
# (tests/it/otlp.rs, `a_live_node_exporter`): installs the pinned packages of
# scripts/otlp-live-node (package.json and package-lock.json, npm ci) into target/otlp-live/node
# if missing or if the pins changed, copies the capture programs beside them (ESM imports
# resolve from the program's directory), and prints that directory. Idempotent; needs node 20
# and npm (installed from Debian if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=target/otlp-live/node
PINS=scripts/otlp-live-node
if ! command -v npm >/dev/null || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)'; then
  echo "node 20 or later and npm are needed (https://nodejs.org, or apt-get install nodejs npm on a release that has 20)" >&2
  exit 1
fi
want=$(cat "$PINS/package.json" "$PINS/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$DIR/.pins" 2>/dev/null)" != "$want" ] || [ ! -d "$DIR/node_modules" ]; then
  echo "installing the OpenTelemetry JS SDK into $DIR..." >&2
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp "$PINS/package.json" "$PINS/package-lock.json" "$DIR/"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$want" >"$DIR/.pins"
fi
cp scripts/otlp-capture/otel_setup.mjs scripts/otlp-capture/js_sdk_genai.mjs "$DIR/"
echo "$(pwd)/$DIR"
