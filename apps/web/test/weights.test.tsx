/**
 * Weighted interleave in the app: the Worker's result carries the engine's weightsJson per policy
 * (plain data, the CLI's `weights` object), the access-rates assumption travels from the request
 * to the engine and back, and the Weighted interleave panel says the weights, gains, curve,
 * numactl line and where the rates came from.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { act, cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { POLICY_IDS, analyze, getPreset, machineModel, readTrace, weightsJson } from '@numascope/policy-engine';
import { mirrorTrace } from '../../../packages/policy-engine/fidelity/mirror';
import { runAnalysis } from '../src/worker/analysis';
import type { AnalyzeRequest } from '../src/worker/analysis';
import { DEFAULT_VIEW_STATE, parseViewState, writeViewState } from '../src/ui/url-state';
import { WeightsPanel } from '../src/ui/views/WeightsPanel';
import { markdownSummary } from '../src/ui/markdown';
import { summarizeTrace } from '@numascope/policy-engine';
import type { Trace } from '@numascope/policy-engine';
import { TraceContext } from '../src/ui/hooks/trace-context';
import type { QueryClient, TraceContextValue } from '../src/ui/hooks/trace-context';
import type { ViewState } from '../src/ui/url-state';
import { RecommendView } from '../src/ui/views/RecommendView';
import { TrafficView } from '../src/ui/views/TrafficView';
import { engineRequest } from '../src/ui/selectors/request';
import { weightGains, weightsSentence, weightedPolicies } from '../src/ui/selectors/weights';
import { accessRateSource } from '../src/ui/selectors/policy';

afterEach(cleanup);

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const load = (name: string) => readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, name))));

// A STREAM-like program on the DRAM + CXL preset: 56 threads (one per core) streaming their slices
// at a rate that saturates the 208 GB/s DRAM node, where adding CXL bandwidth pays. (A 16-thread
// sample such as streamcluster-hotspot cannot keep enough misses in flight to fill it: for it DRAM
// alone is best.)
const hotspot = readTrace(
  mirrorTrace({
    id: 'stream-like', description: 'STREAM-like triad', preset: 'dram-cxl-1s', threadNodes: Array.from({ length: 56 }, () => 0),
    regions: [{ name: 'arrays', pageNodes: Array.from({ length: 56 * 8 }, () => 0) }],
    targets: [{ region: 0, share: 1, loadShare: 2 / 3, sliced: true }],
    accessesPerThreadPerS: 42e6, durationUs: 200_000, samples: 5000, seed: 5,
  }),
);
const req: AnalyzeRequest = { policies: [...POLICY_IDS], machine: 'dram-cxl-1s', estimate: false, windowMs: null };
const { view } = runAnalysis(hotspot, req);

describe('weights in the Worker result', () => {
  it('the default set on a tiered preset replays weighted-interleave, and its weights are the engine\'s weightsJson (what analyze --json prints)', () => {
    const wi = view.policies.find((p) => p.policy === 'weighted-interleave')!;
    expect(wi).toBeTruthy();
    const direct = analyze(hotspot, { machine: machineModel(getPreset('dram-cxl-1s')), policies: [...POLICY_IDS, 'weighted-interleave', 'tiering'] });
    const want = weightsJson(direct.policies.find((p) => p.policy === 'weighted-interleave')!, direct.nodeIds)!;
    expect(wi.weights).toEqual(want);
    // A DRAM (node 0, 208 GB/s) + CXL (node 1, 24 GB/s) machine: mostly DRAM, some CXL, 1:1 predicted slower than DRAM only.
    expect(wi.weights!.nodes).toEqual([0, 1]);
    expect(wi.weights!.weights[0]!).toBeGreaterThan(wi.weights!.weights[1]!);
    expect(wi.weights!.recommendation!.equalWeightsTimeVsDramOnly!).toBeGreaterThan(1);
    // Policies that do not weight carry null, not an empty object.
    for (const p of view.policies.filter((x) => !x.policy.startsWith('weighted-interleave'))) expect(p.weights, p.policy).toBeNull();
    expect(weightedPolicies(view).map((p) => p.policy)).toEqual(['weighted-interleave']);
  });

  it('stays plain data (what postMessage copies): a JSON round trip gives the same object', () => {
    const wi = view.policies.find((p) => p.policy === 'weighted-interleave')!;
    expect(JSON.parse(JSON.stringify(wi.weights))).toEqual(wi.weights);
    expect(structuredClone(wi.weights)).toEqual(wi.weights);
  });

  it('a trace with measured (here synthetic) rates assumes no access rate', () => {
    expect(view.accessRates).toBeNull();
    expect(accessRateSource(view)).toMatch(/synthetic trace’s generated access samples/);
  });

  it('hinting faults: the access-rates assumption reaches the engine and changes the analysis', () => {
    const guest = load('recorded-guest-hinting-4nodes.numascope');
    const typical = runAnalysis(guest, req).view;
    const bw = runAnalysis(guest, { ...req, accessRates: 'bandwidth-bound' }).view;
    expect(typical.accessSource).toBe('hinting-faults');
    expect(typical.accessRates).toBe('typical');
    expect(bw.accessRates).toBe('bandwidth-bound');
    expect(bw.notes.join('\n')).toMatch(/BANDWIDTH-BOUND as asked/);
    expect(typical.notes.join('\n')).not.toMatch(/BANDWIDTH-BOUND/);
    const t = typical.policies.find((p) => p.policy === 'weighted-interleave')!.weights!.recommendation!;
    const b = bw.policies.find((p) => p.policy === 'weighted-interleave')!.weights!.recommendation!;
    // A streaming program leans harder on bandwidth: equal weights cost it more, and the flat band narrows.
    expect(b.equalWeightsTimeVsDramOnly!).toBeGreaterThan(t.equalWeightsTimeVsDramOnly!);
    expect(b.flat.fromShare).toBeGreaterThan(t.flat.fromShare);
    expect(accessRateSource(bw)).toMatch(/^assumed bandwidth-bound: your statement, not a measurement/);
    expect(accessRateSource(typical)).toMatch(/^assumed typical/);
  });

  it('engineRequest adds accessRates only when asked (other requests and cache keys unchanged); the URL keeps it as rates=', () => {
    expect('accessRates' in engineRequest(null, false)).toBe(false);
    expect(engineRequest('dram-cxl-1s', false, null, null, null, 'bandwidth-bound').accessRates).toBe('bandwidth-bound');
    const search = writeViewState('?trace=samples/x.numascope', { ...DEFAULT_VIEW_STATE, view: 'compare', rates: 'bandwidth-bound' });
    expect(search).toContain('rates=bandwidth-bound');
    expect(parseViewState(search).rates).toBe('bandwidth-bound');
    expect(parseViewState('?rates=typical').rates).toBeNull();
    expect(parseViewState('?rates=fast').rates).toBeNull();
  });
});

describe('WeightsPanel', () => {
  const wi = view.policies.find((p) => p.policy === 'weighted-interleave')!;
  const w = wi.weights!;
  const r = w.recommendation!;

  it('words, gains and the chart come from the same weights', () => {
    expect(weightsSentence(w)).toBe(`node 0 ×${w.weights[0]}, node 1 ×${w.weights[1]}: ${(r.dramShare * 100).toFixed(1)}% of pages on DRAM`);
    const g = weightGains(w);
    expect(g.vsDramOnly).toBeCloseTo(1 / r.timeVsDramOnly!, 12);
    expect(g.vsEqual).toBeCloseTo(r.equalWeightsTimeVsDramOnly! / r.timeVsDramOnly!, 12);
    // Equal weights put half the pages on the slow CXL node: the recommended weights beat them.
    expect(g.vsEqual!).toBeGreaterThan(1);

    render(<WeightsPanel analysis={view} policy={wi} />);
    const panel = screen.getByTestId('weights-panel');
    expect(panel.dataset.weights).toBe(w.weights.join(','));
    expect(screen.getByTestId('weights-words').textContent).toBe(weightsSentence(w));
    expect(screen.getByTestId('weights-vs-dram').textContent).toBe(`${g.vsDramOnly!.toFixed(2)}×`);
    expect(screen.getByTestId('weights-vs-equal').textContent).toBe(`${g.vsEqual!.toFixed(2)}×`);
    expect(screen.getByTestId('weights-numactl').textContent).toBe('numactl --weighted-interleave=0,1 COMMAND');
    expect(screen.getByTestId('weights-note').textContent).toMatch(/system-wide/);
    expect(screen.getByTestId('weights-sysfs').textContent).toContain(`/sys/kernel/mm/mempolicy/weighted_interleave/node0 = ${w.weights[0]}`);
    expect(within(screen.getByTestId('weights-method')).getByText('How these weights were found')).toBeTruthy();
    expect(screen.getByTestId('weights-rates').textContent).toMatch(/Access rates: from the synthetic/);
    const chart = screen.getByTestId('weight-curve-weighted-interleave');
    expect(chart.dataset.points).toBe(String(r.curve.length));
    expect(Number(within(chart).getByTestId('weight-optimum').dataset.share)).toBe(r.optimum.dramShare);
    expect(within(chart).getByTestId('weight-recommended').textContent).toContain(`weights ${w.weights.join(':')}`);
    // The flat band is narrow here (about 90 %–100 % on DRAM): a second chart zooms in on it, with the optimum.
    const zoom = screen.getByTestId('weight-curve-weighted-interleave-zoom');
    expect(Number(zoom.dataset.points)).toBeLessThan(r.curve.length);
    expect(within(zoom).getByTestId('weight-optimum')).toBeTruthy();
    expect(screen.getByRole('heading', { level: 3 }).textContent).toBe('Weighted interleave on dram-cxl-1s');
    // This trace has no allocation sites: no per-object table.
    expect(screen.queryByTestId('weights-objects')).toBeNull();
  });

  it('per-object weights are listed when the engine gives them', () => {
    const withObjects = { ...wi, weights: { ...w, objects: [{ site: 'make_matrix (alloc_sites.c:12)', nodes: [0, 1], weights: [3, 1], dramShare: 0.75 }] } };
    render(<WeightsPanel analysis={view} policy={withObjects} />);
    const row = screen.getByTestId('weights-object');
    expect(row.dataset.weights).toBe('3,1');
    expect(row.textContent).toContain('node 0 ×3, node 1 ×1');
    expect(row.textContent).toContain('75.0%');
  });

  it('a policy without weights shows nothing', () => {
    const { container } = render(<WeightsPanel analysis={view} policy={view.policies.find((p) => p.policy === 'interleave')!} />);
    expect(container.innerHTML).toBe('');
  });
});

describe('Markdown summary', () => {
  it('prints each weighted policy: the weights in words, the gains, the band, the numactl line with its sysfs weights, the rate source', () => {
    const summary = summarizeTrace(hotspot);
    const w = view.policies.find((p) => p.policy === 'weighted-interleave')!.weights!;
    const md = markdownSummary({ source: 'x.numascope', summary, inRange: summary, range: null, regions: [], view: 'compare', analysis: view });
    expect(md).toContain('### Weighted interleave');
    expect(md).toContain(`- **Weighted interleave** on dram-cxl-1s: ${weightsSentence(w)}.`);
    expect(md).toContain(`${weightGains(w).vsEqual!.toFixed(2)}× vs equal weights (1:1)`);
    expect(md).toContain(`\`numactl --weighted-interleave=0,1 COMMAND\` (the weights are the system-wide sysfs ones: /sys/kernel/mm/mempolicy/weighted_interleave/node0 = ${w.weights[0]}`);
    expect(md).not.toContain('assumed bandwidth-bound');
    const guest = load('recorded-guest-hinting-4nodes.numascope');
    const bw = runAnalysis(guest, { ...req, accessRates: 'bandwidth-bound' }).view;
    const gs = summarizeTrace(guest);
    const md2 = markdownSummary({ source: 'g.numascope', summary: gs, inRange: gs, range: null, regions: [], view: 'compare', analysis: bw });
    expect(md2).toContain('> Access rates **assumed bandwidth-bound**: your statement, not a measurement');
  });
});

/** A client whose analyses run the engine here, on `trace`, every request re-targeted onto `machine` when given. */
function fakeClient(trace: Trace, machine: string | null, seen: AnalyzeRequest[] = []): QueryClient {
  return {
    query: async () => {
      throw new Error('no queries here');
    },
    bytes: async () => new ArrayBuffer(0),
    analyze: async (_t, _r, r: AnalyzeRequest) => {
      seen.push(r);
      return { view: runAnalysis(trace, machine ? { ...r, machine } : r).view };
    },
  };
}

function inContext(client: QueryClient, state: Partial<ViewState>, node: React.ReactNode, navigate = vi.fn()) {
  const value: TraceContextValue = { client, traceId: 1, state: { ...DEFAULT_VIEW_STATE, ...state }, navigate };
  return render(<TraceContext.Provider value={value}>{node}</TraceContext.Provider>);
}

describe('the views', () => {
  it('Recommendations shows a Weighted interleave panel for each weighted policy of its analysis (here: the analysis made tiered by re-targeting every request)', async () => {
    // No sample is recorded on a tiered machine; the client re-targets onto dram-cxl-1s to stand in for one.
    inContext(fakeClient(hotspot, 'dram-cxl-1s'), { view: 'recommend' }, <RecommendView source="samples/streamcluster-hotspot.numascope" />);
    const panel = await screen.findByTestId('weights-panel');
    expect(panel.dataset.policy).toBe('weighted-interleave');
    expect(panel.dataset.weights).toBe(view.policies.find((p) => p.policy === 'weighted-interleave')!.weights!.weights.join(','));
  });

  it('Recommendations on a one-tier machine has no panel', async () => {
    inContext(fakeClient(load('streamcluster-hotspot.numascope'), null), { view: 'recommend' }, <RecommendView source="samples/streamcluster-hotspot.numascope" />);
    await screen.findByTestId('recommend-view');
    expect(screen.queryByTestId('weights-panel')).toBeNull();
  });

  it('the access-rates select: only for hinting faults, sends the choice to the URL, asks the engine for it, and says so while in force', async () => {
    const guest = load('recorded-guest-hinting-4nodes.numascope');
    const navigate = vi.fn();
    const seen: AnalyzeRequest[] = [];
    const first = inContext(fakeClient(guest, null, seen), { view: 'traffic' }, <TrafficView />, navigate);
    const select = (await screen.findByTestId('access-rates-select')) as HTMLSelectElement;
    expect(select.value).toBe('typical');
    expect(seen.at(-1)!.accessRates).toBeUndefined();
    expect(screen.queryByTestId('access-rates-note')).toBeNull();
    act(() => {
      fireEvent.change(select, { target: { value: 'bandwidth-bound' } });
    });
    expect(navigate).toHaveBeenCalledWith({ rates: 'bandwidth-bound' });
    first.unmount();

    inContext(fakeClient(guest, null, seen), { view: 'traffic', rates: 'bandwidth-bound' }, <TrafficView />);
    expect((await screen.findByTestId('access-rates-note')).textContent).toContain('Assumed bandwidth-bound: your statement, not a measurement.');
    expect(seen.at(-1)!.accessRates).toBe('bandwidth-bound');
    expect((screen.getByTestId('access-rates-select') as HTMLSelectElement).value).toBe('bandwidth-bound');
    cleanup();

    // A trace with measured (here synthetic) rates has no select.
    inContext(fakeClient(hotspot, null), { view: 'traffic' }, <TrafficView />);
    await screen.findByTestId('prediction-basis');
    expect(screen.queryByTestId('access-rates-select')).toBeNull();
  });
});
