// @vitest-environment node
import { describe, expect, it } from 'vitest';
import { readTrace } from '@numascope/policy-engine';
import { queryColumns, rangeCounts, regionTable } from '@numascope/policy-engine';
import { DEFAULT_VIEW_STATE, URL_STATE_VERSION, parseViewState, parseZoom, upgradeViewParams, writeViewState } from '../src/ui/url-state';
import { markdownSummary } from '../src/ui/markdown';
import { parseTraceBytes } from '../src/worker/open';
import { regionRows, summaryInRange } from '../src/ui/selectors/summary';
import { regionMeta } from '@numascope/policy-engine';
import { fixtureTraceBytes } from '../../../e2e/fixtures/trace-fixture';
import { zoomIn, zoomTo } from '../src/ui/selectors/navigation';

const trace = readTrace(fixtureTraceBytes());
const cols = queryColumns(trace);

describe('the app over the fixture trace', () => {
  it('range-filtered summary: the node and thread tables keep only the samples in range', () => {
    const summary = parseTraceBytes(fixtureTraceBytes());
    if (!('summary' in summary)) throw new Error('no summary');
    const half = rangeCounts(cols, { fromUs: 0, toUs: 500_000 });
    const expected = Array.from(cols.time).filter((t) => t < 500_000).length;
    const filtered = summaryInRange(summary.summary, half);
    expect(filtered.nodes.reduce((n, x) => n + x.samples, 0) + filtered.unknownNode.samples).toBe(expected);
    expect(filtered.threads.reduce((n, t) => n + t.samples, 0)).toBe(expected);
  });

  it('region rows: most samples first, each row the table\'s numbers', () => {
    const t = regionTable(cols, null);
    const rows = regionRows(regionMeta(trace), t);
    expect(rows[0]!.samples).toBeGreaterThanOrEqual(rows[rows.length - 1]!.samples);
    expect(rows.reduce((n, r) => n + r.samples, 0) + t.outsideRegions + t.noAddress).toBe(30);
  });
});

describe('view state in the URL', () => {
  it('round-trips, keeps ?trace= first, and ignores malformed values', () => {
    const s = parseViewState('?trace=samples/x.numascope&view=memory&from=100&to=300&region=2&heat=faults&pages=10-50');
    expect(s).toEqual({ view: 'memory', range: { fromUs: 100, toUs: 300 }, zoom: [], region: 2, thread: null, heat: 'faults', pages: { lo: 10, hi: 50 }, policy: null, cmp: null, estimate: false, base: null, win: null, rates: null, dpol: null, dkind: null, dec: null, manual: null, obj: null, codeBy: null, codeLoc: null, codeNode: null, codeOp: null, codeObject: null, codeThread: null, codeFn: null });
    expect(writeViewState('?trace=samples/x.numascope', s)).toBe('?trace=samples/x.numascope&view=memory&from=100&to=300&region=2&heat=faults&pages=10-50&v=1');
    expect(parseViewState('?view=nope&from=5&to=2&region=-1&pages=9-3')).toEqual(parseViewState(''));
  });
  it('keeps the decision filters, the selected decision and the manual placement', () => {
    const search = '?trace=samples/x.numascope&view=decisions&dpol=carrefour&dkind=migrate&dec=carrefour.12&man=t0:1,t3:1,r2:0&v=1';
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

  it('reads unversioned links (version 0, every link shared before versions) as they were meant', () => {
    expect(URL_STATE_VERSION).toBe(1);
    // Links as the app wrote them before `v=` existed.
    const old = [
      '?trace=samples/two-groups.numascope&view=memory&from=100000&to=300000&region=2&heat=faults&pages=10-50',
      '?trace=samples/x.numascope&view=compare&cmp=observed~interleave~carrefour@amd-genoa-2s-nps4&base=first-touch&man=t0:1,r3:0',
      '?trace=samples/x.numascope&view=decisions&dpol=carrefour&dkind=migrate&dec=carrefour.12',
      '?trace=samples/x.numascope&view=traffic&policy=asymsched&est=uniform',
    ];
    for (const link of old) {
      const s = parseViewState(link);
      expect(s).toEqual(parseViewState(`${link}&v=1`));
      expect(s).not.toEqual(DEFAULT_VIEW_STATE);
      // Writing it back gives the same parameters, now versioned.
      expect(writeViewState('', s)).toBe(`?${link.split('&').slice(1).join('&')}&v=1`);
    }
    expect(parseViewState(old[1]!)).toMatchObject({ view: 'compare', base: 'first-touch', cmp: ['observed', 'interleave', 'carrefour@amd-genoa-2s-nps4'] });
    expect(upgradeViewParams(old[0]!).from).toBe(0);
    expect(upgradeViewParams('?v=1&view=memory').from).toBe(1);
    // The default screen needs no parameters, so no version either.
    expect(writeViewState('?trace=samples/x.numascope', DEFAULT_VIEW_STATE)).toBe('?trace=samples/x.numascope');
  });

  it('runs every upgrade step in order, once, from the link\'s version to the current one', () => {
    // A made-up three-version history: 0 → 1 renames `zoom` to `pages`, 1 → 2 drops `legacy`.
    const steps = {
      0: (p: URLSearchParams) => {
        const z = p.get('zoom');
        p.delete('zoom');
        if (z !== null) p.set('pages', z);
      },
      1: (p: URLSearchParams) => p.delete('legacy'),
    };
    const fromZero = upgradeViewParams('?zoom=3-9&legacy=1&view=memory', steps, 2);
    expect([fromZero.from, fromZero.params.get('pages'), fromZero.params.get('legacy'), fromZero.params.get('v')]).toEqual([0, '3-9', null, '2']);
    // A version-1 link skips the first step: its `zoom` is not ours to rename.
    const fromOne = upgradeViewParams('?v=1&zoom=3-9&legacy=1', steps, 2);
    expect([fromOne.params.get('pages'), fromOne.params.get('zoom'), fromOne.params.get('legacy')]).toEqual([null, '3-9', null]);
    // A missing step is a bug in the table, named.
    expect(() => upgradeViewParams('?v=0', { 0: steps[0] }, 2)).toThrow(/no upgrade step for view-state links of version 1/);
  });

  it('reads a link from a newer app as far as this version understands it', () => {
    const r = upgradeViewParams('?v=7&view=threads&thread=3&newthing=1');
    expect([r.from, r.newer]).toEqual([7, true]);
    const s = parseViewState('?v=7&view=threads&thread=3&heat=someday');
    expect([s.view, s.thread, s.heat]).toEqual(['threads', 3, 'node']);
    // A version that is not a number is no version: read as an unversioned link.
    expect(upgradeViewParams('?v=abc&view=memory').from).toBe(0);
  });
});

describe('markdown summary', () => {
  it('has the per-node table and says synthetic traces are not measurements', () => {
    const r = parseTraceBytes(fixtureTraceBytes('synthetic'));
    if (!('summary' in r)) throw new Error('no summary');
    const t = readTrace(fixtureTraceBytes('synthetic'));
    const c = queryColumns(t);
    const md = markdownSummary({ source: 'x.numascope', summary: r.summary, inRange: r.summary, range: null, regions: regionRows(regionMeta(t), regionTable(c, null)) });
    expect(md).toContain('Synthetic trace — not a measurement.');
    expect(md).toContain('| node | cpus | pages seen (4 KiB) | samples | first touches | accesses | share of sampled accesses (cache hits included) |');
    expect(md).toMatch(/\| 0 \| 0-3 \| 6 \| 18 \| 0 \| 1,800 \| 60\.0% \|/);
    expect(md).toContain('### Capabilities');
  });
  it('prints the view\'s exported tables first, cell for cell, with pipes escaped; a table with no body row is left out', () => {
    const r = parseTraceBytes(fixtureTraceBytes('synthetic'));
    if (!('summary' in r)) throw new Error('no summary');
    const rows = [
      ['metric', 'Interleave', 'Observed (baseline)'],
      ['Speedup vs the first column', '2.56×', '1.00×'],
      ['Why', 'Wins | spreads the load', 'The baseline'],
    ];
    const md = markdownSummary({
      source: 'x.numascope',
      summary: r.summary,
      inRange: r.summary,
      range: null,
      regions: [],
      view: 'compare',
      tables: [{ title: 'Compare: fastest first', rows }, { title: 'Empty', rows: [['metric']] }],
    });
    expect(md).toContain(
      ['### Compare: fastest first', '', '| metric | Interleave | Observed (baseline) |', '| --- | ---: | ---: |', '| Speedup vs the first column | 2.56× | 1.00× |', '| Why | Wins \\| spreads the load | The baseline |'].join('\n'),
    );
    expect(md).not.toContain('### Empty');
    expect(md.indexOf('### Compare: fastest first')).toBeLessThan(md.indexOf('### Memory per node'));
  });
});

describe('zoom breadcrumbs in the URL', () => {
  it('round-trips nested zoom ranges, and the selection stays inside the innermost', () => {
    const s = parseViewState('?trace=x&zoom=0-800000~200000-400000&from=250000&to=300000');
    expect(s.zoom).toEqual([
      { fromUs: 0, toUs: 800000 },
      { fromUs: 200000, toUs: 400000 },
    ]);
    expect(s.range).toEqual({ fromUs: 250000, toUs: 300000 });
    expect(parseViewState(writeViewState('?trace=x', s))).toEqual(s);
    // No selection, or one outside the zoom: the zoomed range itself.
    expect(parseViewState('?zoom=100-200').range).toEqual({ fromUs: 100, toUs: 200 });
    expect(parseViewState('?zoom=100-200&from=0&to=50').range).toEqual({ fromUs: 100, toUs: 200 });
  });
  it('a malformed or non-nested level ends the list there', () => {
    expect(parseZoom('0-100~50-150~60-70')).toEqual([{ fromUs: 0, toUs: 100 }]);
    expect(parseZoom('100-50')).toEqual([]);
    expect(parseZoom('0-100~x')).toEqual([{ fromUs: 0, toUs: 100 }]);
    expect(parseZoom(Array.from({ length: 20 }, () => '0-100').join('~'))).toHaveLength(8);
  });
  it('zoom in pushes the selection; a breadcrumb goes back to its level', () => {
    const s0 = { ...DEFAULT_VIEW_STATE, range: { fromUs: 0, toUs: 800 } };
    const s1 = { ...s0, ...zoomIn(s0) };
    expect(s1.zoom).toEqual([{ fromUs: 0, toUs: 800 }]);
    // Zooming into the zoomed range itself changes nothing.
    expect(zoomIn(s1)).toEqual({});
    const s2 = { ...s1, ...zoomIn({ ...s1, range: { fromUs: 100, toUs: 200 } }) };
    expect(s2.zoom).toHaveLength(2);
    expect(zoomTo(s2, 1)).toEqual({ zoom: [{ fromUs: 0, toUs: 800 }], range: { fromUs: 0, toUs: 800 }, pages: null });
    expect(zoomTo(s2, 0)).toEqual({ zoom: [], range: null, pages: null });
  });
});
