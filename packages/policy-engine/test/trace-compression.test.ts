/**
 * Issue 33: trace tables are ZSTD-compressed Arrow IPC (docs/trace-format.md, "Size on disk").
 * - The collector's fixture trace (Rust writer, compressed) and a bundled sample rewritten
 *   compressed by pyarrow are read by pyarrow, polars and DuckDB as they are
 *   (scripts/python/read-trace.py), every table, with the same rows and column checksums as the
 *   TypeScript reader gives.
 * - A hostile decompressed length or frame is refused before anything is decompressed, with a
 *   typed error; random damage inside compressed buffers (the ZIP's CRC made right again) ends
 *   as a read trace or a TraceError, never another exception.
 *
 * Needs the built collector (NUMASCOPE_BIN) and the Python environment (NUMASCOPE_PYTHON) that
 * `npm test` sets up; without them the parts that need them are skipped locally and fail in CI.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Table } from 'apache-arrow';
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildZip, entriesOf } from '../fuzz/zip-edit.js';
import { ArrowMetadataError, checkArrowFile, zstdFrameSize } from '../src/trace/arrow-ipc.js';
import { TraceError } from '../src/trace/errors.js';
import { DEFAULT_TRACE_LIMITS } from '../src/trace/limits.js';
import { readTrace, readTraceUnchecked } from '../src/trace/reader.js';
import { TABLE_NAMES } from '../src/trace/types.js';
import { WASM_MAX_FRAME_BYTES, zstdDecode, zstdDecoderInUse, zstdReady } from '../src/trace/zstd.js';

const bin = process.env.NUMASCOPE_BIN ?? resolve(__dirname, '../../../native/collector/target/debug/numascope');
const python = process.env.NUMASCOPE_PYTHON;
const SCRIPTS = fileURLToPath(new URL('../../../scripts/python/', import.meta.url));
const SAMPLE = fileURLToPath(new URL('../../../sample-traces/two-groups.numascope', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'numascope-compression-'));
const haveBin = existsSync(bin);

let fixture: Uint8Array | undefined;
function rustFixture(): Uint8Array {
  if (!fixture) {
    execFileSync(bin, ['debug', 'write-fixture', dir], { stdio: 'pipe' });
    fixture = new Uint8Array(readFileSync(join(dir, 'roundtrip.numascope')));
  }
  return fixture;
}

/** Positions of the ZSTD frames' length prefixes in an Arrow file (8 bytes before each magic). */
function prefixes(arrow: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 8; i + 4 <= arrow.length; i++) if (arrow[i] === 0x28 && arrow[i + 1] === 0xb5 && arrow[i + 2] === 0x2f && arrow[i + 3] === 0xfd) out.push(i - 8);
  return out;
}

function samplesArrow(trace: Uint8Array): Uint8Array {
  return entriesOf(trace).find((e) => e.name === 'samples.arrow')!.data;
}

/** The first table entry holding ZSTD frames (arrow-rs stores a buffer as it is where ZSTD would not make it smaller). */
function compressedEntry(trace: Uint8Array): { name: string; data: Uint8Array } {
  return entriesOf(trace).find((e) => e.name.endsWith('.arrow') && prefixes(e.data).length > 0)!;
}

function withEntry(trace: Uint8Array, name: string, arrow: Uint8Array): Uint8Array {
  return buildZip(entriesOf(trace).map((e) => (e.name === name ? { name: e.name, data: arrow, method: 0 as const } : e)));
}

/**
 * `count` copies of `trace` with 1 to 4 bytes changed near the start of a ZSTD buffer (its length
 * prefix, frame header or first block), the ZIP rebuilt with right CRCs: each must end as a read
 * trace or a TraceError.
 */
function fuzzCompressed(trace: Uint8Array, count: number, seed: number): { ok: number; refused: number } {
  const entries = entriesOf(trace).filter((e) => e.name.endsWith('.arrow') && prefixes(e.data).length > 0);
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  const outcomes = { ok: 0, refused: 0 };
  for (let round = 0; round < count; round++) {
    const e = entries[rand(entries.length)]!;
    const spots = prefixes(e.data);
    const bad = e.data.slice();
    const at = spots[rand(spots.length)]! + rand(40);
    for (let k = 0, n = 1 + rand(4); k < n; k++) if (at + 3 * k < bad.length) bad[at + 3 * k]! ^= 1 + rand(255);
    try {
      readTraceUnchecked(withEntry(trace, e.name, bad));
      outcomes.ok++;
    } catch (err) {
      if (!(err instanceof TraceError)) throw new Error(`round ${round} (${e.name}, byte ${at}): ${String(err)}`);
      outcomes.refused++;
    }
  }
  return outcomes;
}

/** Every ZSTD frame apache-arrow hands the decoder while `trace` is read (copies). */
function framesOf(trace: Uint8Array): Uint8Array[] {
  const frames: Uint8Array[] = [];
  compressionRegistry.set(CompressionType.ZSTD, { decode: (f: Uint8Array) => (frames.push(f.slice()), zstdDecode(f)) });
  try {
    readTraceUnchecked(trace);
  } finally {
    compressionRegistry.set(CompressionType.ZSTD, { decode: (f: Uint8Array) => zstdDecode(f) });
  }
  return frames;
}

/**
 * The WebAssembly decoder against fzstd on `frames` and on `damaged` copies with bytes changed
 * inside their blocks: the same bytes where both decode; where zstd decodes, exactly the stated
 * size; a damaged frame either decoded to that size or refused with an Error, never a trap.
 */
function expectDecodersAgree(frames: Uint8Array[], damaged: number, seed: number): { refused: number } {
  expect(zstdDecoderInUse().decoder).toBe('zstddec');
  for (const f of frames) expect(Buffer.compare(zstdDecode(f), zstdDecode(f, 'fzstd'))).toBe(0);
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  let refused = 0;
  for (let round = 0; round < damaged; round++) {
    const f = frames[rand(frames.length)]!.slice();
    const size = zstdFrameSize(f, 'frame');
    // after the header (magic, descriptor, content size: at most 14 bytes) and a block header
    for (let k = 0, n = 1 + rand(3); k < n; k++) f[Math.min(f.length - 1, 17 + rand(Math.max(1, f.length - 17)))]! ^= 1 + rand(255);
    let wasm: Uint8Array | Error;
    let js: Uint8Array | Error;
    try {
      wasm = zstdDecode(f);
    } catch (e) {
      wasm = e as Error;
    }
    try {
      js = zstdDecode(f, 'fzstd');
    } catch (e) {
      js = e as Error;
    }
    expect(zstdDecoderInUse().decoder, `round ${round}: the WebAssembly decoder stopped`).toBe('zstddec');
    if (wasm instanceof Error) refused++;
    else expect(wasm.length, `round ${round}`).toBe(size);
    if (!(wasm instanceof Error) && !(js instanceof Error)) expect(Buffer.compare(wasm, js), `round ${round}`).toBe(0);
  }
  return { refused };
}

/** What read-trace.py prints per table: rows, and per column [sum of values or string lengths, nulls]. */
type Sums = Record<string, { rows: number; columns: Record<string, [number, number]> }>;

function sumsOf(tables: Record<string, Table>): Sums {
  const out: Sums = {};
  for (const [name, table] of Object.entries(tables)) {
    const columns: Record<string, [number, number]> = {};
    for (const field of table.schema.fields) {
      const v = table.getChild(field.name)!;
      let sum = 0;
      let nulls = 0;
      for (let i = 0; i < v.length; i++) {
        const x = v.get(i) as unknown;
        if (x === null || x === undefined) nulls++;
        else if (typeof x === 'string') sum += [...x].length;
        else sum += Number(x);
      }
      columns[field.name] = [sum, nulls];
    }
    out[name] = { rows: table.numRows, columns };
  }
  return out;
}

function expectSameSums(got: Sums, want: Sums, what: string): void {
  expect(Object.keys(got).sort(), what).toEqual(Object.keys(want).sort());
  for (const [table, t] of Object.entries(want)) {
    expect(got[table]!.rows, `${what} ${table} rows`).toBe(t.rows);
    for (const [column, [sum, nulls]] of Object.entries(t.columns)) {
      const [gotSum, gotNulls] = got[table]!.columns[column]!;
      expect(gotNulls, `${what} ${table}.${column} nulls`).toBe(nulls);
      expect(Math.abs(gotSum - sum), `${what} ${table}.${column} sum ${gotSum} vs ${sum}`).toBeLessThanOrEqual(Math.abs(sum) * 1e-9);
    }
  }
}

beforeAll(() => zstdReady());

describe.skipIf(!haveBin && !process.env.CI)('ZSTD-compressed tables (issue 33)', () => {
  it('the WebAssembly decoder (zstddec) is in use once ready and gives the same bytes as fzstd, damaged frames too', () => {
    const frames = framesOf(rustFixture());
    expect(frames.length).toBeGreaterThan(0);
    expect(expectDecodersAgree(frames, 200, 4242).refused).toBeGreaterThan(0);
    expect(WASM_MAX_FRAME_BYTES).toBeGreaterThanOrEqual(65_536 * 8); // a collector batch's int64 column
  });

  it('the collector writes every table ZSTD-compressed, and the TypeScript reader reads them', () => {
    const trace = rustFixture();
    const tables = entriesOf(trace).filter((x) => x.name.endsWith('.arrow'));
    for (const e of tables) expect(e.method, e.name).toBe(0); // stored in the ZIP
    // The fixture's tables are a few rows: arrow-rs keeps a buffer as it is (length -1) where ZSTD
    // would not make it smaller, which is most of them here (trace_size.rs checks a large table).
    expect(tables.filter((e) => prefixes(e.data).length > 0).length).toBeGreaterThan(0);
    const t = readTraceUnchecked(trace);
    expect(t.tables.samples.numRows).toBe(3);
  });

  it('a hostile decompressed length is refused before decompressing, with a typed error', () => {
    const trace = rustFixture();
    const { name, data: arrow } = compressedEntry(trace);
    const at = prefixes(arrow)[0]!;
    const cases: Array<[bigint, RegExp]> = [
      [2n ** 40n, /decompress to more than the 2147483647 bytes a table may hold/],
      [2n ** 31n - 100n, /its ZSTD frame holds \d+ bytes, its Arrow buffer says 2147483548/], // within the limit, but not what the frame holds
      [2n ** 62n, /more than 2\^53/],
      [-7n, /less than 0/],
      [new DataView(arrow.buffer, arrow.byteOffset).getBigInt64(at, true) + 8n, /its ZSTD frame holds \d+ bytes, its Arrow buffer says \d+/],
    ];
    for (const [declared, message] of cases) {
      const bad = arrow.slice();
      new DataView(bad.buffer).setBigInt64(at, declared, true);
      expect(() => checkArrowFile(bad, DEFAULT_TRACE_LIMITS)).toThrow(ArrowMetadataError);
      expect(() => checkArrowFile(arrow, DEFAULT_TRACE_LIMITS)).not.toThrow();
      let error: unknown;
      try {
        readTraceUnchecked(withEntry(trace, name, bad));
      } catch (e) {
        error = e;
      }
      expect(error, String(declared)).toBeInstanceOf(TraceError);
      expect((error as TraceError).message, String(declared)).toMatch(message);
    }
  });

  it('a frame that does not state its size, needs a dictionary, or runs past its buffer is refused', () => {
    const frame = (bytes: number[]) => new Uint8Array(bytes);
    const magic = [0x28, 0xb5, 0x2f, 0xfd];
    // Single segment, 1-byte size 3, one raw last block of 3 bytes.
    expect(zstdFrameSize(frame([...magic, 0x20, 3, 0x19, 0, 0, 1, 2, 3]), 'f')).toBe(3);
    expect(() => zstdFrameSize(frame([...magic, 0x00, 0x50, 0x19, 0, 0, 1, 2, 3]), 'f')).toThrow(/does not state its content size/);
    expect(() => zstdFrameSize(frame([...magic, 0x21, 9, 3, 0x19, 0, 0, 1, 2, 3]), 'f')).toThrow(/needs a dictionary/);
    expect(() => zstdFrameSize(frame([...magic, 0x20, 3, 0x19, 0, 0, 1, 2]), 'f')).toThrow(/ends early/);
    expect(() => zstdFrameSize(frame([...magic, 0x20, 3, 0x19, 0, 0, 1, 2, 3, 0]), 'f')).toThrow(/followed by 1 more bytes/);
    expect(() => zstdFrameSize(frame([...magic, 0x20, 3, 0x07, 0, 0]), 'f')).toThrow(/reserved type/);
    expect(() => zstdFrameSize(frame([...magic, 0x20, 3, 0x01 | (0x20001 << 3) & 0xff, (0x20001 << 3) >> 8 & 0xff, (0x20001 << 3) >> 16]), 'f')).toThrow(/more than ZSTD's 131072/);
  });

  it('300 traces with damaged compressed buffers (CRC made right): each read or refused with a TraceError', () => {
    expect(fuzzCompressed(rustFixture(), 300, 12345).refused).toBeGreaterThan(100);
  });
});

describe.skipIf((!python || !haveBin) && !process.env.CI)('pyarrow, polars and DuckDB read compressed traces (issue 33)', () => {
  const readWithPython = (file: string): Record<string, Sums> => JSON.parse(execFileSync(python!, [join(SCRIPTS, 'read-trace.py'), file], { maxBuffer: 1 << 26 }).toString());

  it('the collector fixture: every table, same rows and values as the TypeScript reader', () => {
    rustFixture();
    const file = join(dir, 'roundtrip.numascope');
    const ours = sumsOf(readTraceUnchecked(new Uint8Array(readFileSync(file))).tables);
    const theirs = readWithPython(file);
    for (const reader of ['pyarrow', 'polars', 'duckdb']) expectSameSums(theirs[reader]!, ours, reader);
    expect(Object.keys(theirs.duckdb!).sort()).toEqual([...TABLE_NAMES].sort());
  });

  it('a bundled sample rewritten ZSTD-compressed by pyarrow reads here with the same values, and there too', () => {
    const out = join(dir, 'two-groups.zstd.numascope');
    execFileSync(python!, [join(SCRIPTS, 'rewrite-trace.py'), 'pyarrow-zstd', SAMPLE, out], { stdio: ['ignore', 'ignore', 'pipe'] });
    const original = sumsOf(readTrace(new Uint8Array(readFileSync(SAMPLE))).tables);
    const bytes = new Uint8Array(readFileSync(out));
    expect(prefixes(samplesArrow(bytes)).length).toBeGreaterThan(0);
    expectSameSums(sumsOf(readTrace(bytes).tables), original, 'TypeScript');
    const theirs = readWithPython(out);
    for (const reader of ['pyarrow', 'polars', 'duckdb']) expectSameSums(theirs[reader]!, original, reader);
    // pyarrow's frames (one batch a table: large frames): both decoders, the same bytes.
    expect(expectDecodersAgree(framesOf(bytes), 100, 99).refused).toBeGreaterThan(0);
    // pyarrow's frames of a 55,184-sample table, damaged: read or refused with a TraceError.
    expect(fuzzCompressed(bytes, 60, 777).refused).toBeGreaterThan(20);
  }, 120_000);
});
