/**
 * Trace format v3: `samples.stack` and the code tables `stacks`, `frames` and `modules` (shared by
 * samples and allocations; `alloc_stacks`, `alloc_frames`, `alloc_modules` in v2). Written and
 * read back with stacks that samples reference, a sample stack id past the table refused, and the
 * v2 -> v3 upgrader run on the real recordings of sample-traces/ (the v2 one, and the v1 ones
 * through v1 -> v2 -> v3).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { SAMPLE_TRACES_DIR } from '../fuzz/corpus.js';
import { numericColumn, stringColumn } from '../src/trace/columns.js';
import { TraceError } from '../src/trace/errors.js';
import { readTrace } from '../src/trace/reader.js';
import { TABLES_OF_VERSION, UPGRADERS } from '../src/trace/upgrade.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES, type TraceManifest } from '../src/trace/types.js';
import { emptyColumns, emptyTable, writeTrace, type TraceColumns } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

function errorOf(f: () => unknown): TraceError {
  try {
    f();
  } catch (e) {
    if (e instanceof TraceError) return e;
    throw e;
  }
  throw new Error('expected a TraceError, but reading succeeded');
}

/**
 * One thread, one page, three samples: two with stacks (0: work <- main, 1: memset <- init <-
 * main), one without; frames shared between the stacks (main is one row).
 */
function codeColumns(): TraceColumns {
  const c = emptyColumns();
  c.threads = { tid: Int32Array.of(10), pid: Int32Array.of(10), name: ['main'], first_seen_us: Uint32Array.of(0), last_seen_us: Uint32Array.of(9), migrations: BigInt64Array.of(0n) };
  c.pages = {
    address: BigUint64Array.of(0x7f0000000000n),
    region: Int32Array.of(-1),
    node: Int8Array.of(0),
    page_size: Uint32Array.of(4096),
    first_touch_us: BigInt64Array.of(1n),
    first_touch_thread: Int32Array.of(0),
    first_touch_cpu: Int16Array.of(0),
  };
  c.samples = {
    time_us: Uint32Array.of(1, 2, 3),
    thread: Uint32Array.of(0, 0, 0),
    cpu: Int16Array.of(0, 0, 0),
    page: Int32Array.of(0, 0, 0),
    offset: Uint16Array.of(0, 8, 16),
    op: ['fault', 'load', 'store'],
    event: ['page-fault', 'ibs-op', 'ibs-op'],
    data_source: ['unknown', 'local-dram', 'l1'],
    hops: Int8Array.of(-1, 0, 0),
    node: Int8Array.of(0, 0, 0),
    latency_cycles: Uint32Array.of(0, 300, 4),
    stack: Int32Array.of(1, 0, -1),
    hitm: Int8Array.of(-1, 0, 2),
    weight: Uint32Array.of(1, 100, 100),
  };
  c.stacks = { stack: Uint32Array.of(0, 0, 1, 1, 1), depth: Uint16Array.of(0, 1, 0, 1, 2), frame: Uint32Array.of(0, 1, 2, 3, 1) };
  c.frames = {
    module: Int32Array.of(0, 0, 1, 0),
    module_offset: BigUint64Array.of(0x1200n, 0x1100n, 0x9a000n, 0x1300n),
    function: ['work', 'main', 'memset', 'init'],
    function_offset: BigInt64Array.of(12n, 40n, 8n, 4n),
    file: ['/src/app.c', '/src/app.c', null, '/src/app.c'],
    line: Int32Array.of(20, 40, -1, 30),
    col: Int16Array.of(3, 5, -1, 7),
    inlined: Int8Array.of(0, 0, 0, 0),
  };
  c.modules = { path: ['/opt/app', '/usr/lib/x86_64-linux-gnu/libc.so.6'], build_id: ['00ff', 'abcd'] };
  return c;
}

describe('samples.stack and the code tables (format v3)', () => {
  it('round-trip through the writer and reader, samples pointing at shared stacks', () => {
    const t = readTrace(writeTrace(minimalManifest(), codeColumns()));
    expect(t.manifest.version).toBe(4);
    expect(CURRENT_TRACE_VERSION).toBe(4);
    expect(Array.from(numericColumn<Int32Array>(t.tables.samples, 'stack'))).toEqual([1, 0, -1]);
    expect(Array.from(numericColumn<Uint32Array>(t.tables.stacks, 'frame'))).toEqual([0, 1, 2, 3, 1]);
    expect(stringColumn(t.tables.frames, 'function')).toEqual(['work', 'main', 'memset', 'init']);
    expect(stringColumn(t.tables.modules, 'path')).toEqual(['/opt/app', '/usr/lib/x86_64-linux-gnu/libc.so.6']);
    expect(t.manifest.tables.map((e) => e.name)).toEqual([...TABLE_NAMES]);
    expect(t.manifest.tables.map((e) => e.entry)).toContain('stacks.arrow');
    const entries = Object.keys(unzipSync(writeTrace(minimalManifest(), codeColumns())));
    expect(entries).toEqual(expect.arrayContaining(['stacks.arrow', 'frames.arrow', 'modules.arrow']));
    expect(entries.some((e) => e.startsWith('alloc_'))).toBe(false);
  });

  it('refuses a sample stack id past the stacks table, naming the table, column and row', () => {
    const c = codeColumns();
    (c.samples.stack as Int32Array)[2] = 2;
    const e = errorOf(() => readTrace(writeTrace(minimalManifest(), c)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toMatch(/"samples\.stack", row 2: value 2, but it must be a stack id of "stacks" \(0–1\) or -1/);
  });

  it('refuses a sample stack id below -1, and any stack id when there are no stacks', () => {
    const c = codeColumns();
    (c.samples.stack as Int32Array)[0] = -2;
    expect(errorOf(() => readTrace(writeTrace(minimalManifest(), c))).message).toMatch(/"samples\.stack", row 0: value -2/);
    const none = codeColumns();
    none.stacks = emptyColumns().stacks;
    none.frames = emptyColumns().frames;
    none.modules = emptyColumns().modules;
    none.samples.stack = Int32Array.of(-1, 0, -1);
    expect(errorOf(() => readTrace(writeTrace(minimalManifest(), none))).message).toMatch(/"samples\.stack", row 1: value 0.*\(0–-1: it is empty\)/);
  });

  it('reads samples.hitm back and refuses a class outside -1..3, naming the column and row', () => {
    const t = readTrace(writeTrace(minimalManifest(), codeColumns()));
    expect(Array.from(numericColumn<Int8Array>(t.tables.samples, 'hitm'))).toEqual([-1, 0, 2]);
    for (const bad of [4, -2]) {
      const c = codeColumns();
      (c.samples.hitm as Int8Array)[1] = bad;
      const e = errorOf(() => readTrace(writeTrace(minimalManifest(), c)));
      expect(e.code).toBe('index-out-of-range');
      expect(e.message).toMatch(new RegExp(`"samples\\.hitm", row 1: value ${bad}, but it must be -1 \\(unknown\\)`));
    }
  });

  it('refuses samples without a stack column (required in v3)', () => {
    const c = codeColumns();
    delete (c.samples as Record<string, unknown>).stack;
    expect(() => writeTrace(minimalManifest(), c)).toThrow(/missing column "stack"/);
  });
});

/** manifest.json of a stored trace, as stored (before the reader upgrades it). */
function storedManifest(bytes: Uint8Array): TraceManifest {
  const entry = unzipSync(bytes, { filter: (f) => f.name === 'manifest.json' })['manifest.json']!;
  return JSON.parse(new TextDecoder().decode(entry)) as TraceManifest;
}

const RECORDED = ['recorded-alloc-sites.numascope', 'recorded-testload-4threads.numascope', 'recorded-guest-hinting-4nodes.numascope'];

describe('older recordings upgrade to v4', () => {
  for (const f of RECORDED) {
    it(`${f}: samples.stack all -1, the code tables renamed, capability code-locations unavailable`, () => {
      const bytes = new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, f)));
      const stored = storedManifest(bytes);
      expect(stored.version).toBeLessThan(3);
      expect(stored.origin.kind).toBe('recorded');
      const t = readTrace(bytes);
      expect(t.manifest.version).toBe(4);
      const stack = numericColumn<Int32Array>(t.tables.samples, 'stack');
      expect(stack.length).toBe(t.tables.samples.numRows);
      expect(stack.length).toBeGreaterThan(0);
      expect(stack.every((s) => s === -1)).toBe(true);
      expect(t.manifest.tables.map((e) => e.name)).toEqual([...TABLE_NAMES]);
      for (const e of t.manifest.tables) expect(e.entry).toBe(`${e.name}.arrow`);
      const cap = t.manifest.capture.capabilities.filter((c) => c.metric === 'code-locations');
      expect(cap).toHaveLength(1);
      expect(cap[0]!.status).toBe('unavailable');
      expect(cap[0]!.reason).toBe('format version 2 file: code locations were not recorded (added in version 3)');
      // The samples' other columns are as stored.
      const storedSamples = stored.tables.find((e) => e.name === 'samples')!;
      expect(t.tables.samples.numRows).toBe(storedSamples.rows);
      const raw = tableFromIPC(unzipSync(bytes, { filter: (e) => e.name === storedSamples.entry })[storedSamples.entry]!);
      expect(Array.from(numericColumn<Uint32Array>(t.tables.samples, 'weight'))).toEqual(Array.from(raw.getChild('weight')!.toArray() as Uint32Array));
      if (stored.version === 2) {
        // The v2 tables' rows, under their v3 names.
        for (const [v2, v3] of [['alloc_stacks', 'stacks'], ['alloc_frames', 'frames'], ['alloc_modules', 'modules']] as const) {
          const rows = stored.tables.find((e) => e.name === (v2 as string))!.rows;
          expect(t.tables[v3].numRows).toBe(rows);
          expect(t.manifest.tables.find((e) => e.name === v3)!.rows).toBe(rows);
        }
        expect(t.tables.stacks.numRows).toBeGreaterThan(0);
        expect(stringColumn(t.tables.frames, 'function').filter((fn) => fn === 'main').length).toBeGreaterThan(0);
        expect(t.manifest.capture.capabilities.find((c) => c.metric === 'allocation-sites')!.status).toBe('measured');
      } else {
        for (const name of ['allocations', 'stacks', 'frames', 'modules'] as const) expect(t.tables[name].numRows).toBe(0);
        expect(t.manifest.capture.capabilities.find((c) => c.metric === 'allocation-sites')!.status).toBe('unavailable');
      }
    });
  }

  it('the reader reads a v2 file by its v2 entry names', () => {
    expect(TABLES_OF_VERSION[2]).toEqual([...TABLE_NAMES.slice(0, 9), 'alloc_stacks', 'alloc_frames', 'alloc_modules']);
    expect(TABLES_OF_VERSION[3]).toEqual(TABLE_NAMES);
  });

  it('the v2 -> v3 step renames the tables and their manifest entries and keeps a listed code-locations', () => {
    const samples = emptyTable('samples');
    const withoutStack = samples.select(samples.schema.fields.map((f) => f.name).filter((n) => n !== 'stack'));
    const listed = { metric: 'code-locations', status: 'unavailable', reason: 'listed by the file' };
    const out = UPGRADERS[2]!({
      manifest: {
        version: 2,
        capture: { capabilities: [listed] },
        tables: [
          { name: 'samples', entry: 'samples.arrow', rows: 0 },
          { name: 'alloc_stacks', entry: 'alloc_stacks.arrow', rows: 0 },
          { name: 'alloc_frames', entry: 'alloc_frames.arrow', rows: 0 },
          { name: 'alloc_modules', entry: 'alloc_modules.arrow', rows: 0 },
        ],
      },
      tables: new Map([
        ['samples', withoutStack],
        ['alloc_stacks', emptyTable('stacks')],
        ['alloc_frames', emptyTable('frames')],
        ['alloc_modules', emptyTable('modules')],
      ]),
    });
    expect(out.manifest.version).toBe(3);
    expect([...out.tables.keys()].sort()).toEqual(['frames', 'modules', 'samples', 'stacks']);
    expect((out.manifest.tables as Array<{ name: string; entry: string }>).map((e) => `${e.name}:${e.entry}`)).toEqual([
      'samples:samples.arrow',
      'stacks:stacks.arrow',
      'frames:frames.arrow',
      'modules:modules.arrow',
    ]);
    expect((out.manifest.capture as { capabilities: unknown[] }).capabilities).toEqual([listed]);
    expect(out.tables.get('samples')!.getChild('stack')).not.toBeNull();
    expect(out.tables.get('samples')!.getChild('stack')!.length).toBe(0);
  });
});
