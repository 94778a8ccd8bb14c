import { describe, expect, it } from 'vitest';
import { addressHeatmap, answerQuery, chooseWindowUs, queryColumns, rangeCounts, readTrace, regionDetail, regionMeta, regionTable, summarizeTrace, windowSeries } from '../src/index.js';
import { fixtureTraceBytes } from '../../../e2e/fixtures/trace-fixture.js';

// The queries the app's Worker answers for its views (src/query/queries.ts), over the hand-written
// fixture the e2e tests open in the app too.
const trace = readTrace(fixtureTraceBytes());
const cols = queryColumns(trace);
const sum = (a: ArrayLike<number>) => Array.from(a).reduce((x, y) => x + y, 0);

describe('analysis over the fixture trace (30 samples, 2 nodes + unknown, 3 threads)', () => {
  it('windows: adaptive size, and every sample counted once, faults apart from accesses', () => {
    expect(chooseWindowUs(1_000_000)).toBe(5000);
    expect(chooseWindowUs(1_562_500)).toBe(10_000);
    expect(chooseWindowUs(100)).toBe(1);
    const w = windowSeries(cols);
    expect(w.windowUs).toBe(5000);
    expect(sum(w.samples)).toBe(30);
    expect(sum(w.accesses)).toBe(3000);
    expect(sum(w.faults)).toBe(0);
  });

  it('range counts: the whole range equals the summary; a sub-range filters', () => {
    const all = rangeCounts(cols, null);
    const summary = summarizeTrace(trace);
    expect(Array.from(all.nodes.samples)).toEqual([...summary.nodes.map((n) => n.samples), summary.unknownNode.samples]);
    const half = rangeCounts(cols, { fromUs: 0, toUs: 500_000 });
    const expected = Array.from(cols.time).filter((t) => t < 500_000).length;
    expect(half.samples).toBe(expected);
    expect(sum(half.nodes.samples)).toBe(expected);
    expect(sum(half.threadNodes.samples)).toBe(expected);
  });

  it('heatmap: bins sum to the samples in range that have an address, never more cells than asked', () => {
    const withAddress = Array.from(cols.page).filter((p) => p >= 0).length;
    const h = addressHeatmap(cols, { range: null, pages: null, rows: 4, cols: 7, mode: 'node' });
    expect(h.rows).toBeLessThanOrEqual(4);
    expect(h.cols).toBeLessThanOrEqual(7);
    expect(h.total).toBe(withAddress);
    expect(sum(h.values)).toBe(withAddress);
    const ranged = addressHeatmap(cols, { range: { fromUs: 0, toUs: 400_000 }, pages: null, rows: 100, cols: 100, mode: 'samples' });
    let inRange = 0;
    for (let i = 0; i < cols.sampleCount; i++) if (cols.page[i]! >= 0 && cols.time[i]! < 400_000) inRange++;
    expect(ranged.total).toBe(inRange);
    expect(ranged.rows).toBeLessThanOrEqual(cols.pageCount);
    const acc = addressHeatmap(cols, { range: null, pages: { lo: 0, hi: 3 }, rows: 10, cols: 10, mode: 'accesses' });
    let inWindow = 0;
    for (let i = 0; i < cols.sampleCount; i++) {
      const p = cols.page[i]!;
      if (p >= 0 && cols.pageRank[p]! < 3 && !cols.fault[i]) inWindow += cols.weight[i]!;
    }
    expect(acc.total).toBe(inWindow);
    expect(acc.rows).toBe(3);
  });

  it('regions: table and details agree with the samples', () => {
    const t = regionTable(cols, null);
    expect(sum(t.samples) + t.outsideRegions + t.noAddress).toBe(30);
    expect(sum(t.pages)).toBe(Array.from(cols.pageRegion).filter((r) => r >= 0).length);
    const meta = regionMeta(trace);
    expect(t.regions).toBe(meta.length);
    // The region with most samples: its detail adds up to its row of the table.
    const S = t.slots;
    const row = (a: Float64Array, r: number) => sum(a.subarray(r * S, r * S + S));
    const perRegion = meta.map((m) => ({ index: m.index, samples: row(t.samples, m.index), pages: row(t.pages, m.index) }));
    const top = perRegion.reduce((a, b) => (b.samples > a.samples ? b : a));
    const d = regionDetail(cols, top.index, null);
    expect(sum(d.threadNodes.samples)).toBe(top.samples);
    expect(d.pages).toBe(top.pages);
    expect(sum(d.firstTouchPages)).toBe(top.pages);
    expect(answerQuery(cols, { kind: 'region', region: top.index, range: null })).toEqual(d);
  });
});

