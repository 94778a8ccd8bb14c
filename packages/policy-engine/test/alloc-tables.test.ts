/**
 * The allocation-site tables (format v2; since v3 `stacks`, `frames` and `modules` are shared
 * with samples) in the reader: written and read back, their references and stack layout checked,
 * and version-1 files (real recordings from sample-traces/) upgraded with the tables empty. The
 * v2 -> v3 step is code-tables.test.ts; the Rust writer's side is roundtrip-rust.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { numericColumn, stringColumn } from '../src/trace/columns.js';
import { TraceError } from '../src/trace/errors.js';
import { readTrace } from '../src/trace/reader.js';
import { UPGRADERS } from '../src/trace/upgrade.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES, type TraceManifest } from '../src/trace/types.js';
import { emptyColumns, writeTrace, type TraceColumns } from '../src/trace/writer.js';
import { SAMPLE_TRACES_DIR } from '../fuzz/corpus.js';
import { minimalManifest } from './helpers/minimal-trace.js';

/** Two allocations (one with a two-frame stack, one without), three frames, one module. */
function allocColumns(): TraceColumns {
  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.of(10),
    pid: Int32Array.of(10),
    name: ['main'],
    first_seen_us: Uint32Array.of(0),
    last_seen_us: Uint32Array.of(900),
    migrations: BigInt64Array.of(0n),
  };
  c.regions = {
    start: BigUint64Array.of(0x7f0000000000n),
    end: BigUint64Array.of(0x7f0000800000n),
    kind: ['anon'],
    path: [null],
    policy: ['default'],
    alloc_site: ['main alloc.c:12'],
  };
  c.allocations = {
    time_us: Uint32Array.of(5, 7),
    end_us: BigInt64Array.of(-1n, 600n),
    thread: Int32Array.of(0, -1),
    tid: Int32Array.of(10, 11),
    op: ['mmap', 'malloc'],
    end_op: ['none', 'free'],
    address: BigUint64Array.of(0x7f0000000000n, 0x7f0000400000n),
    size: BigUint64Array.of(4194304n, 256n),
    sampled: Int8Array.of(0, 1),
    weight_bytes: Float64Array.of(4194304, 2097280),
    stack: Int32Array.of(0, -1),
    site: Int32Array.of(1, 2),
    region: Int32Array.of(0, 0),
  };
  c.stacks = { stack: Uint32Array.of(0, 0), depth: Uint16Array.of(0, 1), frame: Uint32Array.of(1, 0) };
  c.frames = {
    module: Int32Array.of(0, 0, -1),
    module_offset: BigUint64Array.of(0x1139n, 0x1187n, 0x7f1234n),
    function: ['main', 'make_table', null],
    function_offset: BigInt64Array.of(35n, 17n, -1n),
    file: ['/src/alloc.c', '/src/alloc.c', null],
    line: Int32Array.of(30, 12, -1),
    col: Int16Array.of(5, 12, -1),
    inlined: Int8Array.of(0, 0, 0),
  };
  c.modules = { path: ['/opt/app/alloc'], build_id: ['00ff'] };
  return c;
}

function errorOf(f: () => unknown): TraceError {
  try {
    f();
  } catch (e) {
    if (e instanceof TraceError) return e;
    throw e;
  }
  throw new Error('expected a TraceError, but reading succeeded');
}

describe('allocation-site tables (format v2, renamed in v3)', () => {
  it('round-trip through the writer and reader', () => {
    const t = readTrace(writeTrace(minimalManifest(), allocColumns()));
    expect(t.manifest.version).toBe(CURRENT_TRACE_VERSION);
    expect(t.tables.allocations.numRows).toBe(2);
    expect(Array.from(numericColumn<BigUint64Array>(t.tables.allocations, 'size'))).toEqual([4194304n, 256n]);
    expect(stringColumn(t.tables.frames, 'function')).toEqual(['main', 'make_table', null]);
    expect(t.manifest.tables.map((e) => e.name)).toEqual([...TABLE_NAMES]);
    expect(t.manifest.tables.find((e) => e.name === 'stacks')!.rows).toBe(2);
  });

  it('refuses a site past frames, naming the column and row', () => {
    const c = allocColumns();
    (c.allocations.site as Int32Array)[1] = 3;
    const e = errorOf(() => readTrace(writeTrace(minimalManifest(), c)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toMatch(/"allocations\.site", row 1: value 3.*"frames" \(0–2\)/);
  });

  it('refuses a module past modules and a stack frame past frames', () => {
    const c = allocColumns();
    (c.frames.module as Int32Array)[2] = 1;
    expect(errorOf(() => readTrace(writeTrace(minimalManifest(), c))).message).toMatch(/"frames\.module", row 2/);
    const d = allocColumns();
    (d.stacks.frame as Uint32Array)[1] = 9;
    expect(errorOf(() => readTrace(writeTrace(minimalManifest(), d))).message).toMatch(/"stacks\.frame", row 1: value 9/);
  });

  it('refuses stacks out of order, depths that skip, and a stack id nobody has', () => {
    const skip = allocColumns();
    skip.stacks.depth = Uint16Array.of(0, 2);
    expect(errorOf(() => readTrace(writeTrace(minimalManifest(), skip))).message).toMatch(/"stacks\.depth", row 1: depth 2 follows depth 0/);
    const gap = allocColumns();
    gap.stacks.stack = Uint32Array.of(0, 2);
    gap.stacks.depth = Uint16Array.of(0, 0);
    expect(errorOf(() => readTrace(writeTrace(minimalManifest(), gap))).message).toMatch(/"stacks\.stack", row 1: stack 2 after stack 0/);
    const missing = allocColumns();
    (missing.allocations.stack as Int32Array)[1] = 1;
    const e = errorOf(() => readTrace(writeTrace(minimalManifest(), missing)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toMatch(/"allocations\.stack", row 1: value 1.*stack id of "stacks" \(0–0\)/);
  });

  it('refuses an op the format does not have', () => {
    const c = allocColumns();
    c.allocations.op = ['mmap', 'new[]'];
    expect(() => writeTrace(minimalManifest(), c)).toThrow(/"new\[\]" is not a format value/);
  });
});

describe('version 1 files', () => {
  for (const f of ['recorded-testload-4threads.numascope', 'recorded-guest-hinting-4nodes.numascope']) {
    it(`${f} (a real v1 recording) reads as the current version with empty allocation tables`, () => {
      const bytes = new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, f)));
      const stored = JSON.parse(new TextDecoder().decode(manifestOf(bytes))) as TraceManifest;
      expect(stored.version).toBe(1);
      const t = readTrace(bytes);
      expect(t.manifest.version).toBe(CURRENT_TRACE_VERSION);
      for (const name of ['allocations', 'stacks', 'frames', 'modules'] as const) {
        expect(t.tables[name].numRows).toBe(0);
        expect(t.manifest.tables.find((e) => e.name === name)?.rows).toBe(0);
      }
      expect(t.tables.samples.numRows).toBe(stored.tables.find((e) => e.name === 'samples')!.rows);
      const cap = t.manifest.capture.capabilities.find((c) => c.metric === 'allocation-sites');
      expect(cap?.status).toBe('unavailable');
      expect(cap?.reason).toMatch(/version 1/);
    });
  }

  it('the v1 -> v2 step adds the tables whatever entries the v1 file carried', () => {
    const out = UPGRADERS[1]!({ manifest: { version: 1, tables: [], capture: { capabilities: [] } }, tables: new Map() });
    expect(out.manifest.version).toBe(2);
    expect([...out.tables.keys()]).toEqual(['allocations', 'alloc_stacks', 'alloc_frames', 'alloc_modules']);
    expect(out.tables.get('allocations')!.numRows).toBe(0);
  });
});

/** manifest.json of a stored trace, as stored (before the reader upgrades it). */
function manifestOf(bytes: Uint8Array): Uint8Array {
  return unzipSync(bytes, { filter: (f) => f.name === 'manifest.json' })['manifest.json']!;
}
