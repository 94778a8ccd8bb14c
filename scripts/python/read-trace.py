"""Reads every Arrow table of a numascope trace with pyarrow, polars and DuckDB, as they are
(compressed bodies included), and prints one JSON object: for each reader and table, the rows
and, per column, a checksum of its values (sum of integers and floats, total length of strings,
nulls counted), so that a caller can compare the three with its own reader.

    python read-trace.py IN.numascope

DuckDB reads each table through Arrow: the pyarrow table and the polars frame are queried in
place (DuckDB's own read_arrow needs the community `arrow` extension, a download).
"""
import io
import json
import sys
import zipfile


def checksums_pyarrow(table):
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for name in table.column_names:
        col = table[name]
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_string_view(col.type):
            total = pc.sum(pc.utf8_length(col.cast(pa.string()))).as_py() or 0
        else:
            total = pc.sum(col.cast(pa.float64(), safe=False)).as_py() or 0
        out[name] = [float(total), col.null_count]
    return out


def main(path):
    import duckdb
    import polars as pl
    import pyarrow as pa
    import pyarrow.ipc as ipc

    result = {"pyarrow": {}, "polars": {}, "duckdb": {}}
    with zipfile.ZipFile(path) as z:
        for entry in z.namelist():
            if not entry.endswith(".arrow"):
                continue
            name = entry[: -len(".arrow")]
            data = z.read(entry)
            table = ipc.open_file(pa.BufferReader(data)).read_all()
            result["pyarrow"][name] = {"rows": table.num_rows, "columns": checksums_pyarrow(table)}
            frame = pl.read_ipc(io.BytesIO(data))
            result["polars"][name] = {"rows": frame.height, "columns": checksums_pyarrow(frame.to_arrow())}
            con = duckdb.connect()
            con.register("t", table)
            rows = con.sql("SELECT count(*) FROM t").fetchall()[0][0]
            back = con.sql("SELECT * FROM t").to_arrow_table()
            con.register("f", frame)
            if con.sql("SELECT count(*) FROM f").fetchall()[0][0] != rows:
                raise SystemExit(f"{name}: DuckDB counts the polars frame differently")
            result["duckdb"][name] = {"rows": rows, "columns": checksums_pyarrow(back)}
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
