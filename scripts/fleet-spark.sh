#!/usr/bin/env bash
# `npm run fleet:spark`: the fleet queries of docs/fleet.md on Spark (PySpark, local mode: the same
# code runs on a cluster with SPARK_MASTER set) over a three-host dataset made by `numascope export`
# from the bundled samples, checked row for row against the same queries on DuckDB. Part of `npm
# test` where Java 17 or newer is installed; elsewhere it says why it was skipped. Last line:
# "fleet-spark: N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

skip() { log "fleet-spark: skipped: $*"; echo "fleet-spark: 0 passed, 0 failed (skipped: $*)"; exit 0; }
command -v java >/dev/null || skip "no Java (Spark needs Java 17 or newer: apt-get install openjdk-17-jre-headless)"
jv=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p')
[ "${jv:-0}" -ge 17 ] || skip "Java ${jv:-unknown} found; Spark 4 needs Java 17 or newer"
ensure_python_env
[ -n "${NUMASCOPE_PYTHON:-}" ] || die "the DuckDB environment could not be installed (scripts/python/interop-requirements.txt)"
ensure_spark_env || die "PySpark could not be installed (scripts/python/spark-requirements.txt): is PyPI reachable?"
BIN="${NUMASCOPE_BIN:-$COLLECTOR/target/debug/numascope}"
if [ ! -x "$BIN" ]; then build_collector app; BIN="$COLLECTOR/target/debug/numascope"; fi

dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
for pair in db-01:partitioned web-02:two-groups batch-03:streamcluster-hotspot app-04:recorded-alloc-sites; do
  "$BIN" export "$ROOT/sample-traces/${pair#*:}.numascope" -o "$dir/fleet" --host "${pair%%:*}" -q
done
"$NUMASCOPE_PYTHON" "$ROOT/scripts/python/fleet.py" "$dir/fleet" --json > "$dir/duckdb.json"
log "fleet-spark: running the queries on Spark (local mode)"
"$NUMASCOPE_SPARK_PYTHON" "$ROOT/scripts/python/fleet.py" "$dir/fleet" --engine spark --json > "$dir/spark.json" 2> "$dir/spark.log" \
  || { cat "$dir/spark.log" >&2; echo "fleet-spark: 0 passed, 1 failed"; exit 1; }
"$NUMASCOPE_PYTHON" - "$dir/duckdb.json" "$dir/spark.json" <<'PY'
import json, math, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def norm(v):
    # DuckDB gives timestamps with their zone (UTC), Spark in the session zone (UTC) without it
    return v[:-6] if isinstance(v, str) and v.endswith("+00:00") else v
passed = failed = 0
for q in a:
    ra, rb = a[q], b.get(q)
    ok = rb is not None and len(ra) == len(rb) and all(
        set(x) == set(y) and all(
            (math.isclose(x[k], y[k], rel_tol=1e-9, abs_tol=1e-12) if isinstance(x[k], float) or isinstance(y[k], float) else norm(x[k]) == norm(y[k]))
            for k in x)
        for x, y in zip(ra, rb))
    print(f"  {q}: {len(ra)} rows, Spark {'equals' if ok else 'DIFFERS from'} DuckDB")
    if not ok:
        print("    duckdb:", json.dumps(ra)[:2000]); print("    spark: ", json.dumps(rb)[:2000])
    passed += ok; failed += not ok
print(f"fleet-spark: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
