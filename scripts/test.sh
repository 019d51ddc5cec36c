#!/usr/bin/env bash
# The whole test suite: a C compiler, ClickHouse and the local cluster installed if missing
# and started, formatting, lints, unit and integration tests, benches compiled. What CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's start, in seconds since this script began, on stderr (CI's timing).
step() { echo "[test.sh ${SECONDS}s] $*" >&2; }

step "installing and starting what the tests need"
scripts/build-deps.sh
scripts/clickhouse.sh
# 2 shards x 2 replicas, ZooKeeper and Redis for the cluster tests (tests/it/cluster/), which
# fail rather than skip when it is missing.
scripts/cluster.sh up >/dev/null
export TRACEINGEST_CLUSTER_TESTS=required
# The OpenTelemetry Python and JS SDKs for the live exporter tests (tests/it/otlp.rs), which
# fail rather than skip when they are missing.
TRACEINGEST_OTLP_PYTHON=$(scripts/otlp-python.sh)
TRACEINGEST_OTLP_NODE=$(scripts/otlp-node.sh)
export TRACEINGEST_OTLP_PYTHON TRACEINGEST_OTLP_NODE TRACEINGEST_OTLP_LIVE_TEST=required
# The public price data set next to the repository (../shared/reference, not part of it): when
# it is there the tests that load it (src/pricing/genai.rs, src/pricing/builtin/tests.rs) fail
# rather than skip.
if [[ -f ../shared/reference/genai-prices-v2-data.json ]]; then
  export TRACEINGEST_REFERENCE_TESTS=required
fi
# On a small disk (TRACEINGEST_TEST_LEAN=1; .ci/run sets it below 6 GB free) the lints and
# the vendored clickhouse-rs tests build in target directories of their own (0.3 and 0.5 GB
# measured alone, the latter still with debug info: perf/RESULTS.md, "CI's disk"),
# each removed once done, and the vendored tests run before the main build rather than beside
# the cluster tests: the builds are never on disk at once.
lean="${TRACEINGEST_TEST_LEAN:-}"
lint_target=()
if [[ "$lean" == 1 ]]; then
  lint_target=(--target-dir target/lint)
fi
status=0
# The vendored clickhouse-rs and its traceingest patches (vendor/clickhouse-rs/PATCHES.md).
# Skipped: one upstream test of date formatting that fails with the chrono this resolves to
# ("01 Jan" vs "1 Jan"), unrelated to the patches. It is a project of its own, which our
# profiles do not reach: without debug info here, it would build its crate and 94 dependencies
# with full debug info. $1: its target directory; the rest: what to run cargo under (nice).
vendored_tests() {
  local target=$1
  shift
  "$@" env CARGO_PROFILE_DEV_DEBUG=0 cargo test --manifest-path vendor/clickhouse-rs/Cargo.toml \
    --target-dir "$target" --lib -- --skip types::value_ref::test::test_display
}

step "formatting and lints"
cargo fmt --all -- --check
cargo clippy "${lint_target[@]}" --all-targets --all-features --quiet -- -D warnings
# The library as the fuzz crate builds it, without the server (`default-features = false`).
cargo clippy "${lint_target[@]}" --lib --no-default-features --features fuzzing --quiet -- -D warnings
if [[ "$lean" == 1 ]]; then
  rm -rf target/lint
  step "the vendored clickhouse-rs tests (small disk: before the main build)"
  vendored_tests target/vendor || status=1
  rm -rf target/vendor
fi
step "building the tests"
cargo test --all-targets --no-run --quiet

# The cluster tests share one cluster and run one at a time, about 3 minutes in all. They run
# in a cargo of their own beside the other tests: in one test binary they would hold the
# harness's threads while they wait for each other, and the rest would wait behind them.
step "running the tests"
cluster_log=$(mktemp)
cargo test --test it -- cluster:: --test-threads 1 >"$cluster_log" 2>&1 &
cluster_tests=$!
cargo test --lib --bins --examples --benches || status=1
cargo test --test '*' -- --skip cluster:: || status=1
if [[ "$lean" != 1 ]]; then
  # Built at a lower priority than the cluster tests still running, sharing their target.
  vendored_tests target nice -n 10 || status=1
fi
step "waiting for the cluster tests"
wait "$cluster_tests" || status=1
echo "--- the cluster tests (tests/it/cluster/):"
cat "$cluster_log"
rm -f "$cluster_log"
step "done"
exit "$status"
