#!/usr/bin/env bash
# The OpenTelemetry JS SDK with its OTLP/HTTP and gRPC exporters, for the live exporter test
# (tests/it/otlp.rs, `a_live_node_exporter`): installs the pinned packages of
# scripts/otlp-live-node (package.json and package-lock.json, npm ci) into target/otlp-live/node
# if missing or if the pins changed, copies the capture programs beside them (ESM imports
# resolve from the program's directory), and prints that directory. Idempotent. Needs node
# 18.19 or later (20: 20.6 or later), as the pinned SDK does, and npm: installed from Debian's
# packages if missing (Debian 12 has node 18.20).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=target/otlp-live/node
PINS=scripts/otlp-live-node
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "installing node and npm from apt..." >&2
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
# The SDK's engines: ^18.19.0 || >=20.6.0.
if ! node -e '
  const [major, minor] = process.versions.node.split(".").map(Number);
  process.exit((major === 18 && minor >= 19) || (major === 20 && minor >= 6) || major > 20 ? 0 : 1);
'; then
  echo "node $(node --version) is too old for the OpenTelemetry JS SDK (18.19 or later, 20.6 or later)" >&2
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
