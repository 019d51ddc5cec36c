#!/usr/bin/env bash
# A Python with the OpenTelemetry SDK and its OTLP/HTTP and gRPC exporters, for the live exporter
# test (tests/it/otlp.rs, `a_live_python_exporter`): makes target/otlp-live/venv if missing or if the
# pins changed, installs the pinned packages from PyPI, and prints the interpreter's path.
# Idempotent; the pins are the capture programs' (scripts/otlp-capture/requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/otlp-live/venv
PINS="opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 opentelemetry-proto==1.45.2 \
opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2 \
opentelemetry-exporter-otlp-proto-grpc==1.45.2 opentelemetry-semantic-conventions==0.66b2"

if [ ! -f "$VENV/pins" ] || [ "$(cat "$VENV/pins")" != "$PINS" ]; then
  echo "installing the OpenTelemetry Python SDK into $VENV..." >&2
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
    # Debian's python3 keeps venv in its own package.
    SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$VENV"
  fi
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINS >&2
  echo "$PINS" >"$VENV/pins"
fi
echo "$(pwd)/$VENV/bin/python"
