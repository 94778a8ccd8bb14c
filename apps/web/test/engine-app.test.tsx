/**
 * The app's engine plumbing (issue #5): decisions, time ranges, progress and the manual
 * placement, on the sample traces. Numbers are compared with the engine run directly.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { analyze, manualPolicy, readTrace } from '@numascope/policy-engine';
import { queryColumns } from '@numascope/policy-engine';
import { decisionViews } from '../src/worker/decisions';
import { decisionSelection, filterDecisions, regionDecisions } from '../src/ui/selectors/decisions';
import { itemId, manualRequest, placeItem, threadGroups } from '../src/ui/selectors/manual';
import { runAnalysis } from '../src/worker/analysis';
import type { AnalysisView, AnalyzeOutcome, AnalyzeRequest } from '../src/worker/analysis';
import { installIdleSignal, publishState } from '../src/ui/idle';
import { TraceWorkerClient } from '../src/worker/client';
import type { AnalyzeCallOptions } from '../src/worker/client';
import { openTraceBytes } from '../src/worker/open';
import type { DecisionsOutcome, WorkerReply, WorkerRequest } from '../src/worker/protocol';
import { TraceContext } from '../src/ui/hooks/trace-context';
import type { QueryClient, TraceContextValue } from '../src/ui/hooks/trace-context';
import { DEFAULT_VIEW_STATE } from '../src/ui/url-state';
import type { ViewState } from '../src/ui/url-state';
import { DECISION_EAGER_ROWS, DecisionsView } from '../src/ui/views/DecisionsView';
import { TrafficView } from '../src/ui/views/TrafficView';
import { createWorkerHandler } from '../src/worker/handler';
import { engineRequest } from '../src/ui/selectors/request';

afterEach(cleanup);

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const bytesOf = (name: string) => new Uint8Array(readFileSync(path.join(SAMPLES, name)));
const HOTSPOT = 'streamcluster-hotspot.numascope';
const POLICIES = ['observed', 'first-touch', 'interleave', 'autonuma', 'carrefour', 'asymsched'];

describe('decisions (worker/decisions.ts, ui/selectors/decisions.ts)', () => {
  const trace = readTrace(bytesOf(HOTSPOT));
  const cols = queryColumns(trace);
  const result = analyze(trace, { windowMs: 100, policies: POLICIES });
  const all = decisionViews(result, cols);

  it('lists every decision of every policy, sorted by window, with the engine’s text and numbers', () => {
    expect(all.length).toBe(result.policies.reduce((n, p) => n + p.replay.decisions.length, 0));
    for (let i = 1; i < all.length; i++) expect(all[i]!.window).toBeGreaterThanOrEqual(all[i - 1]!.window);
    for (const d of all) {
      const src = result.policies.find((p) => p.policy === d.policy)!.replay.decisions[d.index]!;
      expect(d.explanation).toBe(src.explanation);
      expect(d.kind).toBe(src.kind);
      expect(d.fromUs).toBe(d.window * 100_000);
      expect(d.toUs).toBe(Math.min((d.window + 1) * 100_000, result.input.windows.info(result.windowCount - 1).endUs));
    }
  });

  it('maps a decision’s pages onto regions and address order', () => {
    const carrefourMigrations = filterDecisions(all, { policy: 'carrefour', kind: 'migrate' });
    expect(carrefourMigrations.length).toBe(result.policies.find((p) => p.policy === 'carrefour')!.replay.decisions.filter((d) => d.kind === 'migrate').length);
    const d = carrefourMigrations[0]!;
    const src = result.policies.find((p) => p.policy === 'carrefour')!.replay.decisions[d.index]!;
    expect(d.scope).toBe('pages');
    expect(d.regions.reduce((n, r) => n + r.pages, 0) + d.outsideRegions).toBe(src.pageIndices!.length);
    const ranks = Array.from(src.pageIndices!, (p) => cols.pageRank[p]!);
    expect(d.rankLo).toBe(Math.min(...ranks));
    expect(d.rankHi).toBe(Math.max(...ranks) + 1);
    // toNodes are node ids.
    expect(d.toNodeIds).toEqual(src.toNodes!.map((n) => result.input.machine.nodeIds[n]));
    // Selecting it selects its main region and zooms onto its pages.
    expect(decisionSelection(d, cols.pageCount)).toEqual({ region: d.regions[0]!.region, pages: d.rankHi - d.rankLo < cols.pageCount ? { lo: d.rankLo, hi: d.rankHi } : null });
  });

  it('a region lists the decisions about its pages, and those about every page', () => {
    const region = all.find((d) => d.scope === 'pages')!.regions[0]!.region;
    const rows = regionDecisions(all, region);
    const interleave = rows.find((r) => r.decision.policy === 'interleave');
    expect(interleave?.pages).toBeNull(); // interleave at allocation: every page
    expect(interleave?.decision.scope).toBe('all-pages');
    for (const r of rows.filter((x) => x.pages !== null)) expect(r.decision.regions.find((x) => x.region === region)!.pages).toBe(r.pages);
  });
});

describe('time range in the app’s engine requests', () => {
  const trace = readTrace(bytesOf(HOTSPOT));
  it('replays only the windows in the range and says which', () => {
    const req: AnalyzeRequest = { ...engineRequest(null, false, { fromUs: 450_000, toUs: 1_020_000 }), policies: ['first-touch', 'interleave'] };
    const { view } = runAnalysis(trace, req);
    expect(view.range).toEqual({ requestedFromUs: 450_000, requestedToUs: 1_020_000, fromUs: 400_000, toUs: 1_100_000, firstWindow: 4, windows: 7, totalWindows: 19 });
    const direct = analyze(trace, { windowMs: 100, policies: ['first-touch', 'interleave'], timeRangeUs: { startUs: 450_000, endUs: 1_020_000 } });
    const il = view.policies.find((p) => p.policy === 'interleave')!;
    expect(il.mcImbalancePct).toBeCloseTo(direct.policies.find((p) => p.policy === 'interleave')!.mcImbalancePct, 9);
    expect(il.predictedUs).toBeCloseTo(direct.policies.find((p) => p.policy === 'interleave')!.predictedUs, 6);
    expect(runAnalysis(trace, { ...req, range: null }).view.range).toBeNull();
  });
});

describe('manual placement (ui/selectors/manual.ts)', () => {
  const trace = readTrace(bytesOf(HOTSPOT));
  const nodeIds = trace.manifest.machine.nodes.map((n) => n.id);
  const opened = openTraceBytes(bytesOf(HOTSPOT), 1);
  if (!('overview' in opened)) throw new Error('sample did not open');
  const regions = opened.overview.regions;
  it('places threads, groups and regions, and drops what the recording does not have', () => {
    const groups = threadGroups(opened.summary.threads);
    let m = placeItem(null, { kind: 'thread', thread: 3, label: '' }, nodeIds[1]!);
    m = placeItem(m, { kind: 'region', region: 0, label: '', pages: 1 }, nodeIds[2]!);
    expect(m).toEqual({ threads: [{ thread: 3, node: nodeIds[1] }], regions: [{ region: 0, node: nodeIds[2] }] });
    // Thread pools by name stem: sc-worker-1 … sc-worker-15 (streamcluster itself stays alone).
    expect(groups).toEqual([{ name: 'sc-worker-*', threads: Array.from({ length: 15 }, (_, i) => i + 1) }]);
    {
      const g = groups[0]!;
      const withGroup = placeItem(m, { kind: 'group', name: g.name, threads: g.threads, label: '' }, nodeIds[0]!);
      expect(withGroup!.threads.filter((t) => g.threads.includes(t.thread)).every((t) => t.node === nodeIds[0])).toBe(true);
      expect(itemId({ kind: 'group', name: g.name, threads: g.threads, label: '' })).toBe(`g:${g.name}`);
    }
    expect(placeItem(placeItem(m, { kind: 'thread', thread: 3, label: '' }, null), { kind: 'region', region: 0, label: '', pages: 1 }, null)).toBeNull();
    const req = manualRequest({ threads: [{ thread: 3, node: nodeIds[1]! }, { thread: 999, node: nodeIds[1]! }], regions: [{ region: 0, node: 99 }] }, nodeIds, opened.summary.threads.length, regions);
    expect(req).toEqual({ threads: [{ thread: 3, node: 1 }], pages: [] });
  });

  it('the manual column replays the dragged placement through the engine’s manual policy', () => {
    // The region holding most pages onto node index 1, thread 0 onto node index 2.
    const cols = queryColumns(trace);
    const perRegion = new Map<number, number>();
    for (let p = 0; p < cols.pageCount; p++) perRegion.set(cols.pageRegion[p]!, (perRegion.get(cols.pageRegion[p]!) ?? 0) + 1);
    const big = [...perRegion].filter(([r]) => r >= 0).sort((a, b) => b[1] - a[1])[0]![0];
    const state = { threads: [{ thread: 0, node: nodeIds[2]! }], regions: [{ region: big, node: nodeIds[1]! }] };
    const manual = manualRequest(state, nodeIds, opened.summary.threads.length, regions);
    const { view } = runAnalysis(trace, { ...engineRequest(null, false), policies: ['manual'], manual });
    const direct = analyze(trace, {
      windowMs: 100,
      policies: [manualPolicy({ threads: [{ thread: 0, node: 2 }], pages: [{ startAddress: `0x${regions[big]!.start.toString(16)}`, endAddress: `0x${regions[big]!.end.toString(16)}`, node: 1 }] })],
    });
    const mine = view.policies.find((p) => p.policy === 'manual')!;
    const theirs = direct.policies.find((p) => p.policy === 'manual')!;
    expect(mine.replay.migratedPages).toBe(theirs.transient.migratedPages);
    expect(mine.replay.migratedPages).toBe(perRegion.get(big));
    expect(mine.pagesToMove).toBe(theirs.pagesToMove);
    expect(mine.mcImbalancePct).toBeCloseTo(theirs.mcImbalancePct, 9);
    expect(mine.predictedSpeedup).toBeCloseTo(theirs.predictedSpeedup, 9);
  });
});

/** The real Worker code (worker/handler.ts) behind a stand-in Worker, so TraceWorkerClient runs as in the browser. */
class FakeWorker {
  static sent: WorkerRequest[] = [];
  onmessage: ((e: MessageEvent<WorkerReply>) => void) | null = null;
  onerror: ((e: ErrorEvent) => void) | null = null;
  private clock = 0;
  private handle = createWorkerHandler(
    (reply) => setTimeout(() => this.onmessage?.({ data: reply } as MessageEvent<WorkerReply>)),
    () => (this.clock += 100),
  );
  postMessage(req: WorkerRequest) {
    FakeWorker.sent.push(req);
    setTimeout(() => this.handle(req));
  }
  terminate() {}
}

describe('the Worker’s engine requests (worker handler + TraceWorkerClient)', () => {
  it('posts progress per window before the answer, shares an analysis between callers, drops one no longer wanted, and answers decisions', async () => {
    vi.stubGlobal('Worker', FakeWorker);
    try {
      FakeWorker.sent = [];
      const client = new TraceWorkerClient();
      const opened = await client.open(bytesOf(HOTSPOT).slice().buffer);
      if (!('overview' in opened)) throw new Error('did not open');
      const traceId = opened.overview.traceId;
      const req = engineRequest(null, false);
      const a: Array<[number, number]> = [];
      const b: Array<[number, number]> = [];
      const first = client.analyze(traceId, null, req, { onProgress: (p) => a.push([p.done, p.total]) });
      const second = client.analyze(traceId, null, req, { onProgress: (p) => b.push([p.done, p.total]) });
      // A third, for a range, queued behind and abandoned before it starts: never sent.
      const abort = new AbortController();
      const dropped = client.analyze(traceId, null, engineRequest(null, false, { fromUs: 0, toUs: 300_000 }), { signal: abort.signal });
      abort.abort();
      const [o1, o2, o3] = await Promise.all([first, second, dropped]);
      expect(o1).toBe(o2);
      expect('view' in o1 && o1.view.windowCount).toBe(19);
      expect(o3).toEqual({ error: { code: 'cancelled', message: 'no longer needed' } });
      expect(FakeWorker.sent.filter((r) => r.type === 'analyze')).toHaveLength(1);
      // Every window reported (the stand-in clock advances 100 ms per call), in order, to both callers.
      expect(a).toEqual(Array.from({ length: 19 }, (_, i) => [i + 1, 19]));
      expect(b).toEqual(a);
      // Cached: the answer comes without progress.
      const c: Array<[number, number]> = [];
      await client.analyze(traceId, null, req, { onProgress: (p) => c.push([p.done, p.total]) });
      expect(c).toEqual([]);
      // Decisions of the cached analysis, and one decision's pages as address-order ranks.
      const out = await client.decisions(traceId, req);
      if (!('decisions' in out)) throw new Error(out.error.message);
      const trace = readTrace(bytesOf(HOTSPOT));
      const direct = analyze(trace, { windowMs: 100, policies: POLICIES });
      expect(out.decisions.length).toBe(direct.policies.reduce((n, p) => n + p.replay.decisions.length, 0));
      const d = out.decisions.find((x) => x.policy === 'autonuma' && x.scope === 'pages')!;
      const ranks = await client.decisionPages(traceId, req, d.key);
      const cols = queryColumns(trace);
      const src = direct.policies.find((p) => p.policy === 'autonuma')!.replay.decisions[d.index]!;
      expect(Array.from(ranks)).toEqual(Array.from(src.pageIndices!, (p) => cols.pageRank[p]!).sort((x, y) => x - y));
      expect(ranks.length).toBe(d.pages);
      client.dispose();
    } finally {
      vi.unstubAllGlobals();
    }
  });
});

function withContext(client: QueryClient, state: Partial<ViewState>, navigate = vi.fn()) {
  const value: TraceContextValue = { client, traceId: 1, state: { ...DEFAULT_VIEW_STATE, ...state }, navigate };
  return { value, navigate, wrap: (node: React.ReactNode) => <TraceContext.Provider value={value}>{node}</TraceContext.Provider> };
}

describe('progress while the engine runs', () => {
  it('shows a progress bar with text per window, holds the idle signal until the result is on screen', async () => {
    installIdleSignal();
    publishState('ready');
    const trace = readTrace(bytesOf(HOTSPOT));
    let finish!: () => void;
    let progress!: (done: number, total: number) => void;
    const client: QueryClient = {
      query: async () => {
        throw new Error('no queries here');
      },
      bytes: async () => new ArrayBuffer(0),
      analyze: (_t, _r, req: AnalyzeRequest, options?: AnalyzeCallOptions) =>
        new Promise<AnalyzeOutcome>((resolve) => {
          progress = (done, total) => options?.onProgress?.({ done, total });
          finish = () => resolve({ view: runAnalysis(trace, req).view });
        }),
    };
    const { wrap } = withContext(client, { view: 'traffic', policy: 'first-touch' });
    render(wrap(<TrafficView />));
    const bar = screen.getByTestId('engine-progress');
    expect(screen.getByTestId('engine-progress-text').textContent).toBe('waiting for the engine');
    expect(document.body.dataset.state).toBe('loading');
    act(() => progress(3, 19));
    expect(bar.dataset.done).toBe('3');
    expect(bar.dataset.total).toBe('19');
    expect(within(bar).getByRole('progressbar').getAttribute('value')).toBe('3');
    expect(within(bar).getByRole('progressbar').getAttribute('max')).toBe('19');
    expect(screen.getByTestId('engine-progress-text').textContent).toBe('window 3 of 19 (15%)');
    expect(bar.textContent).toContain('Replaying 6 policies…');
    // Progress is not the result: still loading.
    expect(document.body.dataset.state).toBe('loading');
    act(() => progress(19, 19));
    expect(document.body.dataset.state).toBe('loading');
    await act(async () => finish());
    expect(screen.getByTestId('traffic-view')).toBeTruthy();
    expect(document.body.dataset.state).toBe('ready');
  });
});

describe('the Decisions view', () => {
  // jsdom has no layout: the virtual table's box gets a height, as in a browser.
  const restore: Array<() => void> = [];
  beforeAll(() => {
    for (const prop of ['offsetHeight', 'clientHeight'] as const) {
      const d = Object.getOwnPropertyDescriptor(HTMLElement.prototype, prop);
      Object.defineProperty(HTMLElement.prototype, prop, { configurable: true, get: () => 560 });
      restore.push(() => d && Object.defineProperty(HTMLElement.prototype, prop, d));
    }
  });
  afterAll(() => restore.forEach((r) => r()));
  const trace = readTrace(bytesOf(HOTSPOT));
  const cols = queryColumns(trace);
  const opened = openTraceBytes(bytesOf(HOTSPOT), 1);
  if (!('overview' in opened)) throw new Error('sample did not open');
  function client(): QueryClient {
    const cache = new Map<string, { view: AnalysisView; decisions: DecisionsOutcome }>();
    const run = (req: AnalyzeRequest) => {
      const key = JSON.stringify(req);
      if (!cache.has(key)) {
        const { result, view } = runAnalysis(trace, req);
        cache.set(key, { view, decisions: { decisions: decisionViews(result, cols) } });
      }
      return cache.get(key)!;
    };
    return {
      query: async () => {
        throw new Error('no queries here');
      },
      bytes: async () => new ArrayBuffer(0),
      analyze: async (_t, _r, req) => ({ view: run(req).view }),
      decisions: async (_t, req) => run(req).decisions,
    };
  }

  it('filters by policy and kind, sorted by window; selecting a decision about pages selects its region and pages', async () => {
    const { wrap, navigate } = withContext(client(), { view: 'decisions', dpol: 'carrefour', dkind: 'migrate' });
    render(wrap(<DecisionsView summary={opened.summary} regions={opened.overview.regions} />));
    const count = await screen.findByTestId('decisions-count');
    const direct = analyze(trace, { windowMs: 100, policies: POLICIES });
    const expected = direct.policies.find((p) => p.policy === 'carrefour')!.replay.decisions.filter((d) => d.kind === 'migrate');
    expect(Number(count.dataset.value)).toBe(expected.length);
    // A long list is virtual: the rows in view, from the first, while the table counts them all.
    const table = screen.getByTestId('decisions-table');
    expect(Number(table.dataset.rows)).toBe(expected.length);
    const rows = screen.getAllByTestId('decision-row');
    expect(rows.map((r) => Number(r.dataset.index))).toEqual(rows.map((_, i) => i));
    if (expected.length <= DECISION_EAGER_ROWS) expect(rows).toHaveLength(expected.length);
    else {
      expect(table.dataset.virtual).toBe('true');
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.length).toBeLessThan(expected.length);
    }
    const windows = rows.map((r) => Number(r.dataset.window));
    expect(windows).toEqual([...windows].sort((a, b) => a - b));
    expect(rows.every((r) => r.dataset.policy === 'carrefour' && r.dataset.kind === 'migrate')).toBe(true);
    expect(rows[0]!.textContent).toContain(expected[0]!.explanation);
    fireEvent.click(within(rows[0]!).getByTestId('decision-select'));
    const all = decisionViews(direct, cols);
    const d = all.find((x) => x.key === rows[0]!.dataset.key)!;
    expect(navigate).toHaveBeenLastCalledWith({ dec: d.key, ...decisionSelection(d, cols.pageCount) });
  });

  it('shows the selected decision with its numbers and regions', async () => {
    const direct = analyze(trace, { windowMs: 100, policies: POLICIES });
    const d = decisionViews(direct, cols).find((x) => x.policy === 'carrefour' && x.kind === 'interleave')!;
    const { wrap, navigate } = withContext(client(), { view: 'decisions', dec: d.key });
    render(wrap(<DecisionsView summary={opened.summary} regions={opened.overview.regions} />));
    const detail = await screen.findByTestId('decision-detail');
    expect(detail.dataset.key).toBe(d.key);
    expect(screen.getByTestId('decision-explanation').textContent).toBe(d.explanation);
    expect(Number(screen.getByTestId('decision-pages').dataset.value)).toBe(d.pages);
    const regionRows = within(screen.getByTestId('decision-regions')).getAllByRole('row').slice(1);
    expect(regionRows.reduce((n, r) => n + Number(r.dataset.value), 0)).toBe(d.pages);
    fireEvent.click(screen.getByTestId('decision-show-memory'));
    expect(navigate).toHaveBeenLastCalledWith({ view: 'memory' });
  });
});

describe('a recording whose access samples are NUMA hinting faults (sample-traces/recorded-guest-hinting-4nodes)', () => {
  const GUEST = 'recorded-guest-hinting-4nodes.numascope';
  const trace = readTrace(bytesOf(GUEST));

  it('is replayed with the engine’s window for hinting faults, says so, and Carrefour acts on it', () => {
    const { view } = runAnalysis(trace, engineRequest(null, false));
    expect(view.accessSource).toBe('hinting-faults');
    // The engine's own default for this trace (about four scan passes), not the 100 ms of PMU traces.
    expect(view.windowMs).toBe(analyze(trace, { policies: ['observed'] }).windowMs);
    expect(view.windowMs).toBeGreaterThan(100);
    expect(view.notes.some((n) => /window length \d+ ms chosen for NUMA hinting faults/.test(n))).toBe(true);
    const carrefour = view.policies.find((p) => p.policy === 'carrefour')!;
    expect(carrefour.replay.migratedPages).toBeGreaterThan(0);
    expect(carrefour.pagesToMove).toBeGreaterThan(0);
    // Measured in a 4-node guest: the observed placement has node 0 as the hot spot of the bound buffer.
    expect(trace.manifest.machine.nodes.length).toBe(4);
    expect(trace.manifest.capture.capabilities.find((c) => c.metric === 'memory-accesses')!.status).toBe('estimated');
  });

  it('the Traffic view shows the hinting-fault banner and the badge says the rates are relative', async () => {
    const client: QueryClient = {
      query: async () => {
        throw new Error('no queries here');
      },
      bytes: async () => new ArrayBuffer(0),
      analyze: async (_t, _r, req: AnalyzeRequest) => ({ view: runAnalysis(trace, req).view }),
    };
    const { wrap } = withContext(client, { view: 'traffic', policy: 'carrefour' });
    render(wrap(<TrafficView />));
    const banner = await screen.findByTestId('hinting-banner');
    expect(banner.textContent).toContain('NUMA HINTING FAULTS');
    expect(banner.textContent).toMatch(/rates, latencies and speedups are relative/);
    expect(screen.queryByTestId('estimate-banner')).toBeNull();
    expect(document.body.textContent).toContain('access samples are NUMA hinting faults');
  });
});
