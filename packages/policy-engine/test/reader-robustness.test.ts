/**
 * Hostile and damaged traces, case by case (docs/robustness.md, "Trace reader"). Each case is an
 * input a careless reader would accept, crash on or allocate for; each is refused with a typed
 * TraceError that names the entry, table, column or row. The fuzz test
 * (fuzz-trace.test.ts) covers the same ground at random.
 */
import { tableFromIPC } from 'apache-arrow';
import { strToU8, unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { buildZip, entriesOf } from '../fuzz/zip-edit.js';
import { TraceError } from '../src/trace/errors.js';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { MAX_WINDOWS } from '../src/engine/windows.js';
import { readTrace, readTraceUnchecked } from '../src/trace/reader.js';
import { summarizeTrace } from '../src/query/summary.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { editManifest, minimalManifest, repack } from './helpers/minimal-trace.js';

function errorOf(f: () => unknown): TraceError {
  try {
    f();
  } catch (e) {
    if (e instanceof TraceError) return e;
    throw new Error(`expected a TraceError, got ${String(e)}`);
  }
  throw new Error('expected a TraceError, but reading succeeded');
}

/** A small valid trace on the 2-node test machine: 2 threads, 3 pages, 4 samples, placements. */
function smallTrace(): Uint8Array {
  const c = emptyColumns();
  c.threads = {
    tid: new Int32Array([10, 11]),
    pid: new Int32Array([10, 10]),
    name: ['main', 'worker'],
    first_seen_us: new Uint32Array(2),
    last_seen_us: new Uint32Array([5, 5]),
    migrations: new BigInt64Array([0n, 0n]),
  };
  c.pages = {
    address: new BigUint64Array([0x1000n, 0x2000n, 0x3000n]),
    region: new Int32Array([-1, -1, -1]),
    node: new Int8Array([0, 1, -1]),
    page_size: new Uint32Array([4096, 4096, 4096]),
    first_touch_us: new BigInt64Array([0n, 1n, -1n]),
    first_touch_thread: new Int32Array([0, 1, -1]),
    first_touch_cpu: new Int16Array([0, 2, -1]),
  };
  c.samples = {
    time_us: new Uint32Array([0, 1, 2, 3]),
    thread: new Uint32Array([0, 1, 1, 0]),
    cpu: new Int16Array([0, 2, 3, -1]),
    page: new Int32Array([0, 1, 2, -1]),
    offset: new Uint16Array(4),
    op: ['fault', 'load', 'store', 'load'],
    event: ['page-fault', 'synthetic', 'synthetic', 'synthetic'],
    data_source: ['unknown', 'local-dram', 'remote-dram', 'unknown'],
    hops: new Int8Array(4).fill(-1),
    node: new Int8Array([0, 1, -1, -1]),
    latency_cycles: new Uint32Array(4),
    stack: new Int32Array(4).fill(-1),
    hitm: new Int8Array(4).fill(-1),
    weight: new Uint32Array([1, 100, 100, 100]),
  };
  c.thread_placements = {
    time_us: new Uint32Array([0, 0]),
    thread: new Uint32Array([0, 1]),
    cpu: new Int16Array([0, 2]),
    node: new Int8Array([0, 1]),
  };
  return writeTrace(minimalManifest(), c);
}

/** Where entry `name`'s data lies in the (stored, unmodified) file. */
function entryRange(bytes: Uint8Array, name: string): { start: number; end: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (view.getUint32(at, true) === 0x04034b50) {
    const size = view.getUint32(at + 18, true);
    const nameLength = view.getUint16(at + 26, true);
    const start = at + 30 + nameLength + view.getUint16(at + 28, true);
    if (new TextDecoder().decode(bytes.subarray(at + 30, at + 30 + nameLength)) === name) return { start, end: start + size };
    at = start + size;
  }
  throw new Error(`no entry ${name}`);
}

/** Offset, inside its Arrow entry, of the first value of `table.column` (a view into the entry). */
function valueOffset(entry: Uint8Array, column: string): { offset: number; width: number } {
  const copy = entry.slice();
  const values = tableFromIPC(copy).getChild(column)!.data[0]!.values as Int32Array;
  expect(values.buffer).toBe(copy.buffer);
  return { offset: values.byteOffset, width: values.BYTES_PER_ELEMENT };
}

/** The trace with row `row` of `table.column` set to `value` in place, re-packed with correct CRCs. */
function withValue(table: string, column: string, row: number, value: number): Uint8Array {
  return repack(smallTrace(), (entries) => {
    const data = entries[`${table}.arrow`]!.slice();
    const { offset, width } = valueOffset(data, column);
    const view = new DataView(data.buffer);
    if (width === 1) view.setInt8(offset + row, value);
    else if (width === 2) view.setInt16(offset + 2 * row, value, true);
    else view.setInt32(offset + 4 * row, value, true);
    entries[`${table}.arrow`] = data;
  });
}

describe('readTrace refuses damaged and hostile traces', () => {
  it('reads the unbroken small trace, and the summary of it', () => {
    const t = readTrace(smallTrace());
    expect(t.tables.samples.numRows).toBe(4);
    expect(summarizeTrace(t).totals.samples).toBe(4);
  });

  it('a corrupted byte inside a stored .arrow entry is caught by its CRC-32', () => {
    const bytes = smallTrace();
    const { start, end } = entryRange(bytes, 'samples.arrow');
    const { offset } = valueOffset(bytes.slice(start, end), 'weight');
    bytes[start + offset + 4]! ^= 0x40; // weight of row 1: 100 → 16484, still a valid Arrow file
    const e = errorOf(() => readTrace(bytes));
    expect(e.code).toBe('zip-crc');
    expect(e.message).toContain('"samples.arrow"');
    expect(e.message).toMatch(/CRC-32/);
  });

  it('an out-of-range dictionary code', () => {
    const e = errorOf(() => readTrace(withValue('samples', 'op', 2, 9)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toContain('"samples.op", row 2: dictionary code 9');
    expect(e.message).toMatch(/dictionary has \d values/);
  });

  it('an out-of-range row index (samples.thread past the threads table)', () => {
    const e = errorOf(() => readTrace(withValue('samples', 'thread', 3, 5)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toContain('"samples.thread", row 3: value 5');
    expect(e.message).toContain('a row of table "threads" (0–1)');
  });

  it('an out-of-range row index (samples.page below -1)', () => {
    const e = errorOf(() => readTrace(withValue('samples', 'page', 0, -7)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toContain('"samples.page", row 0: value -7');
  });

  it('an out-of-range node id (pages.node not on the machine)', () => {
    const e = errorOf(() => readTrace(withValue('pages', 'node', 1, 9)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toContain('"pages.node", row 1: value 9');
    expect(e.message).toContain('node id of machine "test-2node" (0, 1)');
  });

  it('an out-of-range cpu id (thread_placements.cpu not on the machine)', () => {
    const e = errorOf(() => readTrace(withValue('thread_placements', 'cpu', 1, 64)));
    expect(e.code).toBe('index-out-of-range');
    expect(e.message).toContain('"thread_placements.cpu", row 1: value 64');
  });

  it('a ZIP entry declaring a huge uncompressed size is refused before anything is allocated', () => {
    const entries = entriesOf(smallTrace()).map((e) => (e.name === 'samples.arrow' ? { ...e, method: 8 as const, uncompressedSize: 1 << 30 } : e));
    const bytes = buildZip(entries);
    const before = process.memoryUsage().arrayBuffers;
    const e = errorOf(() => readTrace(bytes));
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 << 20);
    expect(e.code).toBe('zip-limits');
    expect(e.message).toContain('"samples.arrow" declares 1073741824 bytes');
  });

  it('a deflated entry that inflates past its declared size is stopped there', () => {
    const entries = entriesOf(smallTrace()).map((e) => (e.name === 'samples.arrow' ? { ...e, method: 8 as const, uncompressedSize: 100 } : e));
    const e = errorOf(() => readTrace(buildZip(entries)));
    expect(e.code).toBe('zip-corrupt');
    expect(e.message).toContain('inflates to more than the 100 bytes its header declares');
  });

  it('a manifest nesting bomb', () => {
    const depth = 100_000;
    const bytes = repack(smallTrace(), (entries) => {
      const m = JSON.parse(new TextDecoder().decode(entries['manifest.json']));
      m.appliedPlans = [{ tool: 'numascope apply', plan: '__BOMB__' }];
      entries['manifest.json'] = strToU8(JSON.stringify(m).replace('"__BOMB__"', '['.repeat(depth) + ']'.repeat(depth)));
    });
    const e = errorOf(() => readTrace(bytes));
    expect(e.code).toBe('manifest-limits');
    expect(e.message).toMatch(/more than 64 levels deep/);
  });

  it('a manifest list of 2 million wrong items is refused by its length, not item by item', () => {
    // zod reports every bad item (about 1 KB each): this took 14 s and 1.9 GB before the length check.
    const e = errorOf(() => readTrace(editManifest(smallTrace(), (m) => (m.capture.notes = new Array(2_000_000).fill(1)))));
    expect(e.code).toBe('manifest-limits');
    expect(e.message).toContain('capture.notes has 2000000 items');
  });

  it('a list of wrong items within the length limit is refused at its first bad item', () => {
    const e = errorOf(() => readTrace(editManifest(smallTrace(), (m) => (m.machine.nodes[0].cpus = new Array(30_000).fill(1.5)))));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toContain('machine.nodes[0].cpus[0] is invalid: expected a non-negative integer');
  });

  it('a manifest larger than the limit is refused from its declared size', () => {
    const e = errorOf(() => readTrace(smallTrace(), { limits: { maxManifestBytes: 256 } }));
    expect(e.code).toBe('manifest-limits');
  });

  it('more threads than the limit (the summary makes an object per thread) are refused before decoding', () => {
    const e = errorOf(() => readTrace(smallTrace(), { limits: { maxThreads: 1 } }));
    expect(e.code).toBe('table-limits');
    expect(e.message).toContain('Table "threads" (threads.arrow) has 2 rows, more than the 1 threads');
  });

  it('two entries with one name', () => {
    const entries = entriesOf(smallTrace());
    const e = errorOf(() => readTrace(buildZip([...entries, { ...entries.find((x) => x.name === 'samples.arrow')! }])));
    expect(e.code).toBe('zip-entry-name');
    expect(e.message).toContain('two entries named "samples.arrow"');
  });

  it('an entry name with a ".." segment', () => {
    const entries = [...entriesOf(smallTrace()), { name: '../../etc/evil', data: new Uint8Array(1), method: 0 as const }];
    const e = errorOf(() => readTrace(buildZip(entries)));
    expect(e.code).toBe('zip-entry-name');
    expect(e.message).toContain('".." path segment');
  });

  it('an Arrow record batch that declares more rows than its columns have (no allocation by the declared length)', () => {
    const bytes = repack(smallTrace(), (entries) => {
      const data = entries['samples.arrow']!.slice();
      // The record batch's `length` field, found through the footer and the message flatbuffer
      // (Arrow's File.fbs and Message.fbs); its columns still say 4 rows. apache-arrow would pad
      // every column to the batch length (a null bitmap of 2^29 bits each), and a consumer would
      // loop over 2^29 rows.
      const view = new DataView(data.buffer);
      const u32 = (p: number) => view.getUint32(p, true);
      /** Position of field `i` of the flatbuffer table at `t` (0: absent). */
      const field = (t: number, i: number) => {
        const vtable = t - view.getInt32(t, true);
        return 4 + 2 * i < view.getUint16(vtable, true) && view.getUint16(vtable + 4 + 2 * i, true) ? t + view.getUint16(vtable + 4 + 2 * i, true) : 0;
      };
      const footerStart = data.length - 10 - view.getInt32(data.length - 10, true);
      const footer = footerStart + u32(footerStart);
      const batches = field(footer, 3) + u32(field(footer, 3)); // Footer.recordBatches: [Block]
      const blockOffset = Number(view.getBigUint64(batches + 4, true)); // Block.offset of batch 0
      const meta = blockOffset + 8; // after 0xFFFFFFFF and the metadata length
      const message = meta + u32(meta);
      const batch = field(message, 2) + u32(field(message, 2)); // Message.header: RecordBatch
      const lengthAt = field(batch, 0); // RecordBatch.length (int64)
      expect(view.getBigUint64(lengthAt, true)).toBe(4n);
      view.setBigUint64(lengthAt, 2n ** 29n, true);
      entries['samples.arrow'] = data;
    });
    const before = process.memoryUsage().arrayBuffers;
    const e = errorOf(() => readTrace(bytes));
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 << 20);
    expect(e.code).toBe('table-corrupt');
    expect(e.message).toContain('Table "samples" (samples.arrow)');
    expect(e.message).toContain('column "time_us" has 4 rows, the batch 536870912');
  });

  it('a machine whose links do not connect its nodes (the engine could not model it)', () => {
    const e = errorOf(() => readTrace(editManifest(smallTrace(), (m) => (m.machine.links = [{ from: 0, to: 1, capacityGBps: 10 }]))));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toContain('machine');
  });

  it('a capture longer than a JavaScript number holds exactly (2^53 µs: the engine sizes its windows by it)', () => {
    const e = errorOf(() => readTrace(editManifest(smallTrace(), (m) => (m.capture.durationUs = 2 ** 53 + 2))));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toContain('capture.durationUs');
  });

  it('a capture of years reads, and the engine cuts it into a bounded number of windows', () => {
    const trace = readTrace(editManifest(smallTrace(), (m) => (m.capture.durationUs = 1e15)));
    const input = buildReplayInput(trace, { windowMs: 1 });
    expect(input.windows.length).toBeLessThanOrEqual(MAX_WINDOWS);
    expect((input.notes ?? []).join(' ')).toMatch(/cut into at most 50000 windows/);
  });

  it('a cpu listed under two nodes', () => {
    const e = errorOf(() => readTrace(editManifest(smallTrace(), (m) => m.machine.nodes[1].cpus.push(0))));
    expect(e.code).toBe('manifest-invalid');
    expect(e.message).toContain('cpu 0 is also listed under node 0');
  });

  it('the summary and the engine take only a Trace that readTrace checked (a type error otherwise)', () => {
    const unchecked = readTraceUnchecked(smallTrace());
    // @ts-expect-error an UncheckedTrace (references not checked) is not a Trace
    expect(summarizeTrace(unchecked).totals.samples).toBe(4);
    // @ts-expect-error neither is an object that merely has the same fields
    expect(() => analyze({ manifest: unchecked.manifest, tables: unchecked.tables }, { policies: ['observed'] })).not.toThrow(TypeError);
  });

  it('unknown extra entries are ignored (not inflated, not checked)', () => {
    const entries = [...entriesOf(smallTrace()), { name: 'notes/extra.bin', data: new Uint8Array(10), method: 0 as const, crc: 1234 }];
    expect(readTrace(buildZip(entries)).tables.samples.numRows).toBe(4);
  });

  it('the entries of the unbroken trace are what unzip gives (the test helpers do not hide anything)', () => {
    expect(Object.keys(unzipSync(smallTrace())).sort()).toContain('manifest.json');
  });
});
