#!/usr/bin/env bash
# `npm run fuzz`: the large, on-demand mutation runs behind docs/robustness.md (the bounded
# ones run in `npm test`). Usage: npm run fuzz [-- TRACES PERFDATA SEED]
#   TRACES   mutated traces through the TypeScript reader and summary (default 10000)
#   PERFDATA mutated perf.data files through `numascope import` (default 3000)
#   SEED     the seed of both runs (default 1); a failing input is reproduced from (seed, index)
# Exits non-zero if either run saw a crash, hang, out-of-memory, panic, abort or untyped error.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_node
ensure_npm_deps
TRACES="${1:-10000}"; PERFDATA="${2:-3000}"; SEED="${3:-1}"
export NUMASCOPE_SHARED="${NUMASCOPE_SHARED:-$(cd "$ROOT/.." && pwd)/shared}"
rc=0
log "fuzz: $TRACES traces (seed $SEED)"
(cd "$ROOT" && npm run -s fuzz:trace -w packages/policy-engine -- --count "$TRACES" --seed "$SEED") || rc=1
log "fuzz: $PERFDATA perf.data files (seed $SEED, release build)"
bash "$COLLECTOR/fuzz/fuzz-import.sh" "$PERFDATA" "$SEED" || rc=1
exit $rc
