"""Rewrites every Arrow table of a numascope trace with another Arrow writer, as a user who
filters a trace in pandas or polars would, and stores the result as a new trace ZIP.

    python rewrite-trace.py pyarrow|polars IN.numascope OUT.numascope

pyarrow: each table read and written back with pyarrow.ipc.new_file(...).write_table (an empty
table gets no dictionary batch). polars: pl.read_ipc then DataFrame.write_ipc with polars'
defaults (string_view text, dictionary<uint32, string_view> categoricals, nullable fields).
manifest.json and every other entry are copied as they are.
"""
import io
import sys
import zipfile


def with_pyarrow(data: bytes) -> bytes:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    table = ipc.open_file(pa.BufferReader(data)).read_all()
    sink = io.BytesIO()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def with_polars(data: bytes) -> bytes:
    import polars as pl

    frame = pl.read_ipc(io.BytesIO(data))
    sink = io.BytesIO()
    frame.write_ipc(sink)
    return sink.getvalue()


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in ("pyarrow", "polars"):
        print(__doc__, file=sys.stderr)
        return 2
    rewrite = with_pyarrow if sys.argv[1] == "pyarrow" else with_polars
    with zipfile.ZipFile(sys.argv[2]) as src, zipfile.ZipFile(sys.argv[3], "w", zipfile.ZIP_DEFLATED) as out:
        for name in src.namelist():
            data = src.read(name)
            out.writestr(name, rewrite(data) if name.endswith(".arrow") else data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
