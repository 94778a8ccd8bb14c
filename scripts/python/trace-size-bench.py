"""Bytes a sample on disk for each way of storing a trace's samples table (issue 33).

Reads the samples table of a .numascope file with pyarrow, rewrites it as an Arrow IPC file
with each option (no body compression, LZ4_FRAME, ZSTD at levels 1 and 3; record batches of
65,536, 262,144 and 1,048,576 rows), and prints the bytes a sample and pyarrow's time to read
the result; then a deflated ZIP entry of today's file, and the ZSTD share of each column.

  cd sample-traces && npx tsx generator/cli.ts --model two-groups --seed 3 --samples 1000000 -o /tmp/g1m.numascope
  $NUMASCOPE_PYTHON scripts/python/trace-size-bench.py /tmp/g1m.numascope

Figures (pyarrow 26.0.1, this script, 2026-12-03) are in docs/trace-format.md, "Size on disk".
"""
import sys, time, zipfile, zlib

import pyarrow as pa
import pyarrow.ipc as ipc


def write(t, compression, level, batch):
    sink = pa.BufferOutputStream()
    codec = None if compression is None else pa.Codec(compression, compression_level=level)
    with ipc.new_file(sink, t.schema, options=ipc.IpcWriteOptions(compression=codec)) as w:
        for b in t.to_batches(max_chunksize=batch):
            w.write_batch(b)
    return sink.getvalue()


def timed_read(buf):
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        ipc.open_file(pa.BufferReader(buf)).read_all()
        best = min(best, time.perf_counter() - t0)
    return best


def main(path):
    z = zipfile.ZipFile(path)
    raw = z.read("samples.arrow")
    t = ipc.open_file(pa.BufferReader(raw)).read_all()
    n = t.num_rows
    print(f"{path}: {n} samples, samples.arrow {len(raw)} bytes ({len(raw) / n:.2f} B/sample)")
    for compression, level in [(None, None), ("lz4", None), ("zstd", 1), ("zstd", 3)]:
        for batch in [65536, 262144, 1048576]:
            buf = write(t, compression, level, batch)
            name = f"{compression or 'none'}{'' if level is None else '-' + str(level)}"
            print(f"  {name:7} batch {batch:8}: {buf.size / n:6.2f} B/sample, pyarrow read {timed_read(buf) * 1000:6.1f} ms")
    t0 = time.perf_counter()
    deflated = zlib.compress(raw, 6)
    print(f"  deflate-6 ZIP entry (not readable in place): {len(deflated) / n:.2f} B/sample, compress {time.perf_counter() - t0:.1f} s")
    print("  ZSTD-1 bytes a sample, column by column (batch 65536):")
    for c in t.column_names:
        print(f"    {c:15} {write(t.select([c]), 'zstd', 1, 65536).size / n:5.2f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
