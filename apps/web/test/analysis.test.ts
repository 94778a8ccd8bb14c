// @vitest-environment node
import { describe, expect, it } from 'vitest';
import { readTrace } from '@numascope/policy-engine';
import { addressHeatmap, answerQuery, chooseWindowUs, rangeCounts, regionDetail, regionTable, traceColumns, windowSeries } from '../src/analysis';
import { parseViewState, writeViewState } from '../src/url-state';
import { markdownSummary } from '../src/markdown';
import { parseTraceBytes } from '../src/parse';
import { regionRows, summaryInRange } from '../src/selectors';
import { regionMeta } from '../src/analysis';
import { fixtureTraceBytes } from '../../../e2e/fixtures/trace-fixture';

const trace = readTrace(fixtureTraceBytes());
const cols = traceColumns(trace);
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
    const summary = parseTraceBytes(fixtureTraceBytes());
    if (!('summary' in summary)) throw new Error('no summary');
    expect(Array.from(all.nodes.samples)).toEqual([...summary.summary.nodes.map((n) => n.samples), summary.summary.unknownNode.samples]);
    const half = rangeCounts(cols, { fromUs: 0, toUs: 500_000 });
    const expected = Array.from(cols.time).filter((t) => t < 500_000).length;
    expect(half.samples).toBe(expected);
    expect(sum(half.nodes.samples)).toBe(expected);
    expect(sum(half.threadNodes.samples)).toBe(expected);
    const filtered = summaryInRange(summary.summary, half);
    expect(filtered.nodes.reduce((n, x) => n + x.samples, 0) + filtered.unknownNode.samples).toBe(expected);
    expect(filtered.threads.reduce((n, t) => n + t.samples, 0)).toBe(expected);
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
    const rows = regionRows(regionMeta(trace), t);
    expect(rows[0]!.samples).toBeGreaterThanOrEqual(rows[rows.length - 1]!.samples);
    const top = rows[0]!;
    const d = regionDetail(cols, top.index, null);
    expect(sum(d.threadNodes.samples)).toBe(top.samples);
    expect(d.pages).toBe(top.pages);
    expect(sum(d.firstTouchPages)).toBe(top.pages);
    expect(answerQuery(cols, { kind: 'region', region: top.index, range: null })).toEqual(d);
  });
});

describe('view state in the URL', () => {
  it('round-trips, keeps ?trace= first, and ignores malformed values', () => {
    const s = parseViewState('?trace=samples/x.numascope&view=memory&from=100&to=300&region=2&heat=faults&pages=10-50');
    expect(s).toEqual({ view: 'memory', range: { fromUs: 100, toUs: 300 }, region: 2, thread: null, heat: 'faults', pages: { lo: 10, hi: 50 }, policy: null, cmp: null, estimate: false, base: null, dpol: null, dkind: null, dec: null, manual: null });
    expect(writeViewState('?trace=samples/x.numascope', s)).toBe('?trace=samples/x.numascope&view=memory&from=100&to=300&region=2&heat=faults&pages=10-50');
    expect(parseViewState('?view=nope&from=5&to=2&region=-1&pages=9-3')).toEqual(parseViewState(''));
  });
  it('keeps the decision filters, the selected decision and the manual placement', () => {
    const search = '?trace=samples/x.numascope&view=decisions&dpol=carrefour&dkind=migrate&dec=carrefour.12&man=t0:1,t3:1,r2:0';
    const s = parseViewState(search);
    expect([s.view, s.dpol, s.dkind, s.dec]).toEqual(['decisions', 'carrefour', 'migrate', 'carrefour.12']);
    expect(s.manual).toEqual({ threads: [{ thread: 0, node: 1 }, { thread: 3, node: 1 }], regions: [{ region: 2, node: 0 }] });
    expect(writeViewState('?trace=samples/x.numascope', s)).toBe(search);
    // Malformed entries are dropped; a later entry for the same item wins; nothing left = no placement.
    expect(parseViewState('?man=t0:1,x9,r-1:2,t0:2').manual).toEqual({ threads: [{ thread: 0, node: 2 }], regions: [] });
    expect(parseViewState('?man=junk&dkind=explode&dec=carrefour').manual).toBeNull();
    expect(parseViewState('?dkind=explode&dec=carrefour').dkind).toBeNull();
    expect(parseViewState('?dec=carrefour').dec).toBeNull();
  });
});

describe('markdown summary', () => {
  it('has the per-node table and says synthetic traces are not measurements', () => {
    const r = parseTraceBytes(fixtureTraceBytes('synthetic'));
    if (!('summary' in r)) throw new Error('no summary');
    const t = readTrace(fixtureTraceBytes('synthetic'));
    const c = traceColumns(t);
    const md = markdownSummary({ source: 'x.numascope', summary: r.summary, inRange: r.summary, range: null, regions: regionRows(regionMeta(t), regionTable(c, null)) });
    expect(md).toContain('Synthetic trace — not a measurement.');
    expect(md).toContain('| node | cpus | pages seen (4 KiB) | samples | first touches | accesses | share of accesses |');
    expect(md).toMatch(/\| 0 \| 0-3 \| 6 \| 18 \| 0 \| 1,800 \| 60\.0% \|/);
    expect(md).toContain('### Capabilities');
  });
});
