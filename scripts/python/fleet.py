#!/usr/bin/env python3
"""Fleet queries over a directory of `numascope export --format parquet` datasets (docs/fleet.md).

    fleet.py DIR [--engine duckdb|spark] [--query NAME ...] [--json]

The same SQL runs on DuckDB (embedded, the default) and on Spark (PySpark in local mode here; the
same code on a cluster with a master URL in SPARK_MASTER). Each table of the export is a view of
the same name over DIR/<table>/host=*/date=*/*.parquet, with `host` and `date` from the Hive
partition directories.
"""

import argparse
import json
import os
import sys

TABLES = ["traces", "samples", "pages", "threads", "thread_placements", "region_placements", "allocations", "code_frames"]

# DRAM accesses (loads and stores the PMU saw served by a node's memory), weighted by what each
# sample stands for: the same accesses the engine's observed local share counts.
DRAM = "op IN ('load', 'store') AND data_source IN ('local-dram', 'remote-dram')"

QUERIES = {
    # Local share of each trace: equal to `numascope-analyze analyze --json` observed localAccessRatio.
    "local_share_per_trace": f"""
        SELECT host, trace_id, program,
               CAST(SUM(CASE WHEN data_source = 'local-dram' THEN weight ELSE 0 END) AS DOUBLE) / SUM(weight) AS local_share,
               SUM(weight) AS dram_accesses
        FROM samples WHERE {DRAM}
        GROUP BY host, trace_id, program ORDER BY host, trace_id""",
    # Remote-access share per host and hour (UTC).
    "remote_share_per_host_hour": f"""
        SELECT host, date_trunc('hour', time) AS hour,
               CAST(SUM(CASE WHEN data_source = 'remote-dram' THEN weight ELSE 0 END) AS DOUBLE) / SUM(weight) AS remote_share,
               SUM(weight) AS dram_accesses
        FROM samples WHERE {DRAM}
        GROUP BY host, date_trunc('hour', time) ORDER BY remote_share DESC, host, hour""",
    # The allocation sites whose memory takes the most remote accesses, across hosts.
    "hottest_alloc_sites": f"""
        SELECT alloc_site, COUNT(DISTINCT host) AS hosts,
               SUM(CASE WHEN data_source = 'remote-dram' THEN weight ELSE 0 END) AS remote_accesses,
               SUM(weight) AS dram_accesses
        FROM samples WHERE {DRAM} AND alloc_site IS NOT NULL
        GROUP BY alloc_site ORDER BY remote_accesses DESC, alloc_site LIMIT 20""",
    # Resident pages per node per program (the last placement each trace recorded).
    "pages_per_node_per_program": """
        SELECT program, node, COUNT(*) AS pages, COUNT(DISTINCT trace_id) AS traces
        FROM pages WHERE node IS NOT NULL
        GROUP BY program, node ORDER BY program, node""",
}


def rows_duckdb(root, names):
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for t in TABLES:
        pattern = os.path.join(root, t, "*", "*", "*.parquet")
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{pattern}', hive_partitioning = true)")
    out = {}
    for n in names:
        rel = con.sql(QUERIES[n])
        cols = rel.columns
        out[n] = [dict(zip(cols, r)) for r in rel.fetchall()]
    return out


def rows_spark(root, names):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
        .appName("numascope-fleet")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for t in TABLES:
            spark.read.option("basePath", os.path.join(root, t)).parquet(os.path.join(root, t)).createOrReplaceTempView(t)
        return {n: [r.asDict() for r in spark.sql(QUERIES[n]).collect()] for n in names}
    finally:
        spark.stop()


def plain(v):
    """JSON-able: timestamps as ISO 8601 UTC, dates as yyyy-mm-dd, decimals and int128 as numbers."""
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, (int, float, str)) or v is None:
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="directory numascope export wrote into")
    ap.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb")
    ap.add_argument("--query", action="append", choices=sorted(QUERIES), help="run only these (default: all)")
    ap.add_argument("--json", action="store_true", help="print {query: [row, ...]} as JSON")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.dir, "samples")):
        sys.exit(f"fleet.py: {a.dir} has no samples/ directory: export traces into it with `numascope export TRACE -o {a.dir}`")
    names = a.query or list(QUERIES)
    res = (rows_spark if a.engine == "spark" else rows_duckdb)(a.dir, names)
    if a.json:
        print(json.dumps({n: [{k: plain(v) for k, v in r.items()} for r in rows] for n, rows in res.items()}, indent=1))
        return
    for n, rows in res.items():
        print(f"== {n} ({a.engine}, {len(rows)} rows)")
        for r in rows:
            print("  " + "  ".join(f"{k}={plain(v)}" for k, v in r.items()))


if __name__ == "__main__":
    main()
