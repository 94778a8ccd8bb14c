/**
 * Objects: page -> allocation by address range and first-touch time, sample -> allocation by
 * exact address and time (src/query/objects.ts), and the objects query over a real recording
 * with allocation sites (sample-traces/recorded-alloc-sites.numascope, recorded by
 * `numascope record` from native/collector/crates/cli/tests/fixtures/alloc_sites.c).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { numericColumn } from '../src/trace/columns.js';
import { attributeObjects, describeFrame, type AttributionInput } from '../src/query/objects.js';
import { objectTable, type ObjectTable } from '../src/query/object-table.js';
import { answerQuery } from '../src/query/queries.js';
import { queryColumns } from '../src/query/query-columns.js';
import { readTrace } from '../src/trace/reader.js';
import { SAMPLE_TRACES_DIR } from '../fuzz/corpus.js';

const P = 0x10000;

function input(p: Partial<AttributionInput>): AttributionInput {
  return {
    allocAddress: new Float64Array(),
    allocSize: new Float64Array(),
    allocTimeUs: [],
    allocEndUs: [],
    pageAddress: new Float64Array(),
    pageFirstTouchUs: [],
    samplePage: new Int32Array(),
    sampleOffset: [],
    sampleTimeUs: [],
    ...p,
  };
}

describe('attributeObjects', () => {
  it('a page reused by two allocations belongs to the one live at its first touch', () => {
    // A lives 0..100 µs at [P, P+8K); B at the same address from 200 µs, never freed.
    const r = attributeObjects(
      input({
        allocAddress: Float64Array.of(P, P),
        allocSize: Float64Array.of(8192, 8192),
        allocTimeUs: [0, 200],
        allocEndUs: [100, -1],
        pageAddress: Float64Array.of(P, P + 4096, P + 8192),
        pageFirstTouchUs: [50, 250, 10],
        // Samples on page 0: at 60 µs (A live), at 150 µs (between: none), at 300 µs (B).
        samplePage: Int32Array.of(0, 0, 0, 2, -1),
        sampleOffset: [16, 16, 4000, 0, 0],
        sampleTimeUs: [60, 150, 300, 60, 60],
      }),
    );
    expect(Array.from(r.pageAllocation)).toEqual([0, 1, -1]);
    expect(Array.from(r.sampleAllocation)).toEqual([0, -1, 1, -1, -1]);
  });

  it('a page with no first-touch time goes to the allocation overlapping it most; a sample needs its exact address', () => {
    // C covers 1 KiB of the page, D covers 3 KiB of it.
    const r = attributeObjects(
      input({
        allocAddress: Float64Array.of(P, P + 1024),
        allocSize: Float64Array.of(1024, 3072),
        allocTimeUs: [0, 0],
        allocEndUs: [-1, -1],
        pageAddress: Float64Array.of(P),
        pageFirstTouchUs: [-1],
        samplePage: Int32Array.of(0, 0, 0),
        sampleOffset: [10, 2000, 4095],
        sampleTimeUs: [5, 5, 5],
      }),
    );
    expect(Array.from(r.pageAllocation)).toEqual([1]);
    expect(Array.from(r.sampleAllocation)).toEqual([0, 1, 1]);
  });

  it('a sample before its allocation was made is not attributed to it', () => {
    const r = attributeObjects(
      input({
        allocAddress: Float64Array.of(P),
        allocSize: Float64Array.of(4096),
        allocTimeUs: [100],
        allocEndUs: [-1],
        pageAddress: Float64Array.of(P),
        pageFirstTouchUs: [100],
        samplePage: Int32Array.of(0, 0),
        sampleOffset: [0, 0],
        sampleTimeUs: [99, 100],
      }),
    );
    expect(Array.from(r.sampleAllocation)).toEqual([-1, 0]);
  });

  it('one large mapping over many pages, pages given out of address order', () => {
    const pages = Float64Array.from({ length: 64 }, (_, i) => P + (63 - i) * 4096);
    const r = attributeObjects(
      input({
        allocAddress: Float64Array.of(P + 4096 * 8, P),
        allocSize: Float64Array.of(4096 * 8, 4096 * 8),
        allocTimeUs: [0, 0],
        allocEndUs: [-1, -1],
        pageAddress: pages,
        pageFirstTouchUs: Array.from({ length: 64 }, () => 1),
      }),
    );
    const expected = Array.from(pages, (a) => (a < P + 4096 * 8 ? 1 : a < P + 4096 * 16 ? 0 : -1));
    expect(Array.from(r.pageAllocation)).toEqual(expected);
  });
});

describe('objects of a real recording with allocation sites', () => {
  const bytes = new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, 'recorded-alloc-sites.numascope')));
  const trace = readTrace(bytes);
  const cols = queryColumns(trace);
  const source = readFileSync(join(SAMPLE_TRACES_DIR, '../native/collector/crates/cli/tests/fixtures/alloc_sites.c'), 'utf8').split('\n');
  const lineOf = (marker: string) => source.findIndex((l) => l.includes(`SITE:${marker} `)) + 1;

  it('has allocations, and every page inside a live large allocation is attributed to it', () => {
    const o = cols.objects!;
    expect(o).not.toBeNull();
    const pageFirst = numericColumn<BigInt64Array>(trace.tables.pages, 'first_touch_us');
    let checked = 0;
    for (let p = 0; p < cols.pageCount; p++) {
      const addr = cols.pageAddress[p]!;
      const t = Number(pageFirst[p]!);
      const holders: number[] = [];
      for (let a = 0; a < o.count; a++) {
        if (o.sampled[a] === 1 || t < 0) continue;
        const live = o.timeUs[a]! <= t && (o.endUs[a]! < 0 || t < o.endUs[a]!);
        if (live && o.address[a]! <= addr && addr + 4096 <= o.address[a]! + o.size[a]!) holders.push(a);
      }
      if (holders.length === 1) {
        expect(o.pageAllocation[p], `page 0x${addr.toString(16)}`).toBe(holders[0]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('the 8 MiB table, the matrix and the worker buffers are objects with their source lines', () => {
    const all = objectTable(cols, null, null, 1000);
    expect(all.hasAllocations).toBe(true);
    const bySize = (n: number) => all.rows.find((r) => r.size === n);
    const table = bySize(8 * 1024 * 1024)!;
    expect(table.site).toBe(`main alloc_sites.c:${lineOf('table')}`);
    expect(table.op).toBe('mmap');
    expect(table.pages).toBeGreaterThan(0);
    expect(table.samples).toBeGreaterThan(0);
    expect(table.stack[0]!.function).toBe('main');
    expect(table.stack[0]!.module).toMatch(/alloc_sites$/);
    expect(bySize(2 * 1024 * 1024)!.site).toBe(`make_matrix alloc_sites.c:${lineOf('matrix')}`);
    expect(bySize(2 * 1024 * 1024)!.stack.map((f) => f.function)).toEqual(expect.arrayContaining(['make_matrix', 'main']));
    expect(bySize(4194304)!.site).toBe(`worker alloc_sites.c:${lineOf('worker')}`);
    // What the objects account for plus what no allocation holds is every page and sample.
    const pages = all.rows.reduce((s, r) => s + r.pages, 0) + all.unattributed.pages;
    const samples = all.rows.reduce((s, r) => s + r.samples, 0) + all.unattributed.samples;
    expect(pages).toBe(cols.pageCount);
    expect(samples).toBe(Array.from(cols.page).filter((p) => p >= 0).length);
  });

  it('the region of the table lists it, and its alloc_site is the same text', () => {
    const o = cols.objects!;
    const a = Array.from(o.size).indexOf(8 * 1024 * 1024);
    const region = o.region[a]!;
    expect(region).toBeGreaterThanOrEqual(0);
    const answer = answerQuery(cols, { kind: 'objects', region, range: null }) as ObjectTable;
    expect(answer.rows[0]!.allocation).toBe(a);
    const regionSite = trace.tables.regions.getChild('alloc_site')!.get(region);
    expect(regionSite).toBe(describeFrame(o, o.site[a]!));
  });
});

describe('objects without an allocations table', () => {
  it('count everything as unattributed', () => {
    const t = readTrace(new Uint8Array(readFileSync(join(SAMPLE_TRACES_DIR, 'recorded-testload-4threads.numascope'))));
    const cols = queryColumns(t);
    expect(cols.objects).toBeNull();
    const r = objectTable(cols, null, null);
    expect(r.hasAllocations).toBe(false);
    expect(r.unattributed.pages).toBe(cols.pageCount);
    expect(r.rows).toEqual([]);
  });
});
