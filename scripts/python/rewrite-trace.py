"""Rewrites every Arrow table of a numascope trace with another Arrow writer, as a user who
filters a trace in pandas or polars would, and stores the result as a new trace ZIP.

    python rewrite-trace.py pyarrow|pyarrow-zstd|polars IN.numascope OUT.numascope

pyarrow: each table read and written back with pyarrow.ipc.new_file(...).write_table (an empty
table gets no dictionary batch). polars: pl.read_ipc then DataFrame.write_ipc with polars'
defaults (string_view text, dictionary<uint32, string_view> categoricals, nullable fields).
pyarrow-zstd: the same with Arrow body compression ZSTD (level 1) in record batches of 65,536
rows, what numascope's writers produce since format 4's compressed tables (docs/trace-format.md,
"Size on disk"). manifest.json and every other entry are copied as they are.
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


def with_pyarrow_zstd(data: bytes) -> bytes:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    table = ipc.open_file(pa.BufferReader(data)).read_all()
    sink = io.BytesIO()
    options = ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=1))
    with ipc.new_file(sink, table.schema, options=options) as writer:
        for batch in table.to_batches(max_chunksize=65536):
            writer.write_batch(batch)
    return sink.getvalue()


def with_polars(data: bytes) -> bytes:
    import polars as pl

    frame = pl.read_ipc(io.BytesIO(data))
    sink = io.BytesIO()
    frame.write_ipc(sink)
    return sink.getvalue()


def main() -> int:
    writers = {"pyarrow": with_pyarrow, "pyarrow-zstd": with_pyarrow_zstd, "polars": with_polars}
    if len(sys.argv) != 4 or sys.argv[1] not in writers:
        print(__doc__, file=sys.stderr)
        return 2
    rewrite = writers[sys.argv[1]]
    # Compressed tables are stored in the ZIP (as numascope's writers store them), the rest deflated.
    method = zipfile.ZIP_STORED if sys.argv[1] == "pyarrow-zstd" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(sys.argv[2]) as src, zipfile.ZipFile(sys.argv[3], "w", method) as out:
        for name in src.namelist():
            data = src.read(name)
            out.writestr(name, rewrite(data) if name.endswith(".arrow") else data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
