#!/usr/bin/env bash
# What building traceingest needs besides ClickHouse (scripts/clickhouse.sh): Rust (1.88 or
# newer, from rustup) and a C and C++ compiler, because the lz4-sys crate (LZ4 for ClickHouse's
# compressed protocol) compiles C. Installs the compilers from apt (build-essential) if they are
# missing; Rust it only asks for. Idempotent: dev.sh, test.sh and fuzz.sh run it first.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "Rust is needed (1.88 or newer): install it with rustup (https://rustup.rs), then rerun." >&2
  exit 1
fi

if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "installing a C and C++ compiler (build-essential) from apt: lz4-sys compiles C..." >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq build-essential >/dev/null
fi
