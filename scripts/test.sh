#!/usr/bin/env bash
# The README's test command: sets up everything the tests need, then runs every suite.
# Prints one closing line "tests: N passed, N failed" summed over the suites.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_node
ensure_apt chromium fonts-dejavu-core linux-perf
ensure_npm_deps
build_analysis_bundle
ensure_python_env
build_collector debug

LOGS="$(mktemp -d)"
# Tests that cannot run here (no root, no tracepoint, no compiler…) pass but say so, one line each
# in this file (numascope-testsupport's skip); counted and listed under the closing line.
export NUMASCOPE_SKIP_LOG="$LOGS/skips.txt"
: > "$NUMASCOPE_SKIP_LOG"
export NUMASCOPE_BIN="$COLLECTOR/target/debug/numascope"
export NUMASCOPE_TESTLOAD_BIN="$COLLECTOR/target/debug/numascope-testload"
export NUMASCOPE_SHARED="${NUMASCOPE_SHARED:-$(cd "$ROOT/.." && pwd)/shared}"
failed_suites=()

suite() {
  local name="$1"; shift
  log "suite: $name"
  set +e
  "$@" 2>&1 | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 0 ] || failed_suites+=("$name")
}

suite typecheck bash -c "cd '$ROOT' && npx tsc -b packages/protocol packages/policy-engine packages/viz apps/web apps/desktop sample-traces e2e scripts/layering"
# ESLint (eslint.config.js): no TypeScript function over 200 lines, the rules of hooks.
suite eslint bash -c "cd '$ROOT' && npx eslint ."
suite cargo bash -c "cd '$COLLECTOR' && cargo test --locked --workspace -- --test-threads=2"
# Lints that fail the build: no function over 200 lines (clippy.toml, Cargo.toml [workspace.lints]).
suite clippy bash -c "cd '$COLLECTOR' && cargo clippy --locked --workspace --all-targets"
suite node-binding bash -c "cd '$COLLECTOR/crates/node' && node --test test/*.test.js"
suite vitest bash -c "cd '$ROOT' && npx vitest run"
# The e2e web server's port: free now, so a leftover server elsewhere cannot break the run.
export NUMASCOPE_E2E_PORT="${NUMASCOPE_E2E_PORT:-$(free_port 4179)}"
suite playwright bash -c "cd '$ROOT/e2e' && npx playwright test"
# The fleet queries of docs/fleet.md on Spark, row for row against DuckDB (skipped without Java 17+).
suite fleet-spark bash "$ROOT/scripts/fleet-spark.sh"
# Multi-node placement, recording and Apply, for real, in a QEMU guest with 4 NUMA nodes.
suite numa-testbed bash "$ROOT/testbed/run-scenarios.sh"

passed=0; failed=0
for f in "$LOGS"/*.log; do sed -i 's/\x1b\[[0-9;]*m//g' "$f"; done
# cargo: "test result: ok. 12 passed; 0 failed; ..."
while read -r p f; do passed=$((passed+p)); failed=$((failed+f)); done < <(
  sed -n 's/.*test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$LOGS/cargo.log")
# clippy: one check, counted as one test
if [[ " ${failed_suites[*]} " == *" clippy "* ]]; then failed=$((failed+1)); else passed=$((passed+1)); fi
# eslint: one check, counted as one test
if [[ " ${failed_suites[*]} " == *" eslint "* ]]; then failed=$((failed+1)); else passed=$((passed+1)); fi
# node --test: "# pass 5" / "# fail 0"
passed=$((passed + $(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$LOGS/node-binding.log" | tail -1 | grep . || echo 0)))
failed=$((failed + $(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$LOGS/node-binding.log" | tail -1 | grep . || echo 0)))
# vitest: "      Tests  40 passed (40)" or "Tests  1 failed | 39 passed (40)"
v=$(grep -E '^\s+Tests\s' "$LOGS/vitest.log" | tail -1 || true)
passed=$((passed + $(sed -n 's/.* \([0-9]*\) passed.*/\1/p' <<<"$v" | head -1 | grep . || echo 0)))
failed=$((failed + $(sed -n 's/.* \([0-9]*\) failed.*/\1/p' <<<"$v" | head -1 | grep . || echo 0)))
# playwright: "  12 passed (20.1s)" and "  1 failed"
passed=$((passed + $(grep -E '^\s+[0-9]+ passed' "$LOGS/playwright.log" | tail -1 | awk '{print $1}' | grep . || echo 0)))
failed=$((failed + $(grep -E '^\s+[0-9]+ failed' "$LOGS/playwright.log" | tail -1 | awk '{print $1}' | grep . || echo 0)))

# fleet-spark: "fleet-spark: 4 passed, 0 failed"
fs=$(grep -E '^fleet-spark: [0-9]+ passed, [0-9]+ failed' "$LOGS/fleet-spark.log" | tail -1 || true)
passed=$((passed + $(awk '{print $2}' <<<"$fs" | grep . || echo 0)))
failed=$((failed + $(awk '{print $4}' <<<"$fs" | grep . || echo 0)))

# testbed: last line "6 passed, 0 failed"
tb=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$LOGS/numa-testbed.log" | tail -1 || true)
passed=$((passed + $(awk '{print $1}' <<<"$tb" | grep . || echo 0)))
failed=$((failed + $(awk '{print $3}' <<<"$tb" | grep . || echo 0)))

if [ ${#failed_suites[@]} -gt 0 ]; then
  log "failed suites: ${failed_suites[*]} (logs in $LOGS)"
  [ "$failed" -gt 0 ] || failed=${#failed_suites[@]}
fi
# Skips, counted as passed above: the collector's (their reasons), vitest's and Playwright's counts.
skipped_rust=$(grep -c . "$NUMASCOPE_SKIP_LOG" || true)
skipped_vitest=$(grep -E '^\s+Tests\s' "$LOGS/vitest.log" | tail -1 | sed -n 's/.* \([0-9]*\) skipped.*/\1/p' | grep . || echo 0)
skipped_pw=$(grep -E '^\s+[0-9]+ skipped' "$LOGS/playwright.log" | tail -1 | awk '{print $1}' | grep . || echo 0)
log "skipped (no capability here; passed as such): collector tests $skipped_rust, vitest $skipped_vitest, Playwright $skipped_pw"
sort "$NUMASCOPE_SKIP_LOG" | sed 's/^/  skipped: /'
echo "tests: $passed passed, $failed failed"
[ ${#failed_suites[@]} -eq 0 ]
