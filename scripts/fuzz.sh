#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS (default 60) each, one per core at a time,
# on stable Rust (RUSTC_BOOTSTRAP=1 lets stable accept the sanitizer flags cargo-fuzz passes).
# Installs cargo-fuzz if missing and seeds the corpora from the perf fixtures before fuzzing
# (unless told `--seeded`).
# Fails if a target finds a crash, a hang (over 10 s on one input) or a leak; the input is left
# in fuzz/artifacts/TARGET/ and must become a named regression test.
# `scripts/fuzz.sh build` only installs cargo-fuzz and builds the targets (what .ci/run does
# in the background while the tests run). `scripts/fuzz.sh seeds` only writes the seeds, and
# `scripts/fuzz.sh SECONDS --seeded` fuzzes without writing them again (.ci/run on a small
# disk: it writes them from the test build, then removes that build before building these).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/fuzz.sh [SECONDS [--seeded] | build | seeds]" >&2
  exit 2
}
SECONDS_PER_TARGET="${1:-60}"
write_seeds=1
case "${2:-}" in
  "") ;;
  --seeded) write_seeds=0 ;;
  *) usage ;;
esac
# libFuzzer reads a -max_total_time it cannot parse as 0, no limit: CI would hang, not fail.
if [[ ! "$SECONDS_PER_TARGET" =~ ^([1-9][0-9]*|build|seeds)$ ]]; then
  usage
fi
# The seeds: a unit test that writes them (src/fuzz_seeds.rs), from the test build test.sh made.
seeds() {
  TRACEINGEST_FUZZ_SEEDS="$PWD/fuzz/corpus" cargo test --quiet --lib -- --ignored --exact \
    fuzz_seeds::write_fuzz_seeds
}
if [[ "$SECONDS_PER_TARGET" == seeds ]]; then
  seeds
  exit 0
fi
# Only for cargo fuzz: in cargo's fingerprint, so a plain `cargo test` with it set rebuilds the
# whole test build (about 80 s in CI) and the next one without it rebuilds it again.
fuzz() { RUSTC_BOOTSTRAP=1 cargo fuzz "$@"; }

scripts/build-deps.sh

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz..." >&2
  # Unoptimised: it only drives cargo and libFuzzer, and builds in 65 CPU-s instead of 107.
  # Without debug info: it builds under $TMPDIR while the tests' build is at its largest.
  CARGO_PROFILE_DEV_DEBUG=0 cargo install cargo-fuzz --locked --debug
fi

fuzz build
if [[ "$SECONDS_PER_TARGET" == build ]]; then
  exit 0
fi
if ((write_seeds)); then
  seeds
fi

# One target per core at a time (libFuzzer uses one), so CI waits for the slowest pair, not
# the sum of all four.
fuzz_one() {
  local target="$1" log="fuzz/target/$1.log" dict=()
  # A target's dictionary, where one was measured to pay (perf/RESULTS.md, "Fuzz dictionaries").
  if [[ -f "fuzz/dicts/$target.dict" ]]; then
    dict=(-dict="$PWD/fuzz/dicts/$target.dict")
  fi
  if fuzz run "$target" "fuzz/corpus/$target" -- "${dict[@]}" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    # libFuzzer's closing line: "Done N runs in S second(s)".
    grep -E '^Done [0-9]+ runs' "$log" | sed "s/^/$target: /" >&2
  else
    echo "$target FAILED; the end of its log:" >&2
    tail -n 60 "$log" >&2
    return 1
  fi
}

status=0
jobs_at_once=$(nproc)
pids=()
for target in http_request decode pricing otlp; do
  echo "fuzzing $target for ${SECONDS_PER_TARGET}s" >&2
  fuzz_one "$target" &
  pids+=("$!")
  if ((${#pids[@]} >= jobs_at_once)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
