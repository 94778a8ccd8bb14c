/**
 * replicate in the app (issue 29, item 10): the Compare menu offers it (ON_REQUEST_POLICY_IDS),
 * a replicate column is its own analysis (the policy with the baseline; the shared analysis of the
 * other columns is not changed), and its recommendation is a code change a plan cannot carry.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ON_REQUEST_POLICY_IDS, POLICY_IDS, readTrace } from '@numascope/policy-engine';
import type { Trace } from '@numascope/policy-engine';
import { planFromRecommendations, runAnalysis } from '../src/worker/analysis';
import type { AnalyzeRequest } from '../src/worker/analysis';
import { openTraceBytes } from '../src/worker/open';
import { TraceContext } from '../src/ui/hooks/trace-context';
import type { QueryClient, TraceContextValue } from '../src/ui/hooks/trace-context';
import { DEFAULT_VIEW_STATE } from '../src/ui/url-state';
import type { ViewState } from '../src/ui/url-state';
import { CompareView } from '../src/ui/views/CompareView';
import { columnRequest } from '../src/ui/selectors/compare';

afterEach(cleanup);

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const NAME = 'shared-readmostly.numascope';
const bytes = new Uint8Array(readFileSync(path.join(SAMPLES, NAME)));
const trace = readTrace(bytes);
const opened = openTraceBytes(bytes, 1);
if (!('overview' in opened)) throw new Error('sample did not open');

function fakeClient(t: Trace, seen: AnalyzeRequest[]): QueryClient {
  return {
    query: async () => {
      throw new Error('no queries here');
    },
    bytes: async () => new ArrayBuffer(0),
    analyze: async (_t, _r, r: AnalyzeRequest) => {
      seen.push(r);
      return { view: runAnalysis(t, r).view };
    },
  };
}

describe('replicate in Compare', () => {
  it('a replicate column asks for replicate alone (with the baseline); the other columns keep the shared request', () => {
    const state: ViewState = { ...DEFAULT_VIEW_STATE, view: 'compare', cmp: ['observed', 'replicate'] };
    const req = columnRequest({ policy: 'replicate', machine: null, recording: null }, state, opened.summary, opened.overview.regions)!;
    expect(req.policies).toEqual(['replicate']);
    const shared = columnRequest({ policy: 'interleave', machine: null, recording: null }, state, opened.summary, opened.overview.regions)!;
    expect(shared.policies).toEqual([...POLICY_IDS]);
    // Re-targeted onto a preset, too.
    expect(columnRequest({ policy: 'replicate', machine: 'amd-opteron-8385-4p', recording: null }, state, opened.summary, opened.overview.regions)!.machine).toBe('amd-opteron-8385-4p');
  });

  it('the menu offers + Replicate, and the column shows its prediction', async () => {
    expect(ON_REQUEST_POLICY_IDS).toContain('replicate');
    const seen: AnalyzeRequest[] = [];
    const value: TraceContextValue = { client: fakeClient(trace, seen), traceId: 1, state: { ...DEFAULT_VIEW_STATE, view: 'compare', cmp: ['observed', 'replicate'] }, navigate: vi.fn() };
    render(
      <TraceContext.Provider value={value}>
        <CompareView summary={opened.summary} regions={opened.overview.regions} />
      </TraceContext.Provider>,
    );
    expect(screen.getByTestId('add-policy-replicate').textContent).toBe('+ Replicate');
    const columns = await screen.findAllByTestId('compare-column');
    const column = columns.find((c) => c.dataset.spec === 'replicate')!;
    await within(column).findByTestId('column-title');
    await vi.waitFor(() => expect(within(column).queryByTestId('column-unavailable')).toBeNull());
    expect(seen.some((r) => r.policies.length === 1 && r.policies[0] === 'replicate')).toBe(true);
    // Where the time goes, shown (not only on hover): compute + waiting = the predicted time, and
    // idle + the queueing parts = the memory latency, for every column.
    const table = await screen.findByTestId('compare-table');
    await vi.waitFor(() => expect(within(table).getAllByTestId('compare-table-col')).toHaveLength(2));
    const cells = (row: string) => [...within(table).getByTestId(row).querySelectorAll('td')];
    await vi.waitFor(() => expect(cells('compare-part-computeUs').every((c) => c.dataset.value !== '')).toBe(true));
    const predicted = cells('compare-row-predictedUs').map((c) => Number(c.dataset.value));
    const compute = cells('compare-part-computeUs').map((c) => Number(c.dataset.value));
    const stall = cells('compare-part-stallUs').map((c) => Number(c.dataset.value));
    const latency = cells('compare-row-memoryLatencyNs').map((c) => Number(c.dataset.value));
    const parts = ['compare-part-idleNs', 'compare-part-controllersNs', 'compare-part-linksNs'].map(cells);
    for (let k = 0; k < 2; k++) {
      expect((compute[k]! + stall[k]!) / predicted[k]!).toBeCloseTo(1, 6);
      expect(parts.reduce((s, row) => s + Number(row[k]!.dataset.value), 0) / latency[k]!).toBeCloseTo(1, 6);
    }
    expect(cells('compare-part-calibration')[0]!.textContent).toMatch(/idle × [\d.]+, queueing × [\d.]+/);
    expect(cells('compare-part-busiest')[0]!.textContent).toMatch(/memory controller at \d+ %/);
    // Two named headlines: the table says which it shows and switches to the other.
    expect(screen.getByTestId('compare-headline').dataset.value).toBe('next-launch');
    fireEvent.click(screen.getByTestId('compare-headline-switch'));
    expect(screen.getByTestId('compare-headline').dataset.value).toBe('applied-now');
    expect(screen.getByTestId('compare-headline').textContent).toMatch(/applied now \(replay from the recorded placement, migration included\)/);
    const view = runAnalysis(trace, seen.find((r) => r.policies.length === 1 && r.policies[0] === 'replicate')!).view;
    const replayed = view.policies.find((p) => p.policy === 'replicate')!.replay.predictedUs;
    expect(cells('compare-row-predictedUs').map((c) => Number(c.dataset.value))).toContain(replayed);
    expect(within(table).queryByTestId('compare-decomposition')).toBeNull();
  });

  it('the worker: replicate predicted faster than observed on the read-mostly table; its recommendation is a code change, and no plan is built from it', () => {
    // With the baseline among the results, as the Recommendations view's analysis has it.
    const { result, view } = runAnalysis(trace, { policies: ['replicate'], baseline: 'observed', machine: null, estimate: false, windowMs: null });
    const rep = view.policies.find((p) => p.policy === 'replicate')!;
    const observed = view.policies.find((p) => p.policy === 'observed')!;
    // (the copies exist from the window after the table's first touch: its init phase writes one copy)
    expect(rep.predictedSpeedup).toBeGreaterThan(1);
    expect(rep.localAccessRatio).toBeGreaterThan(observed.localAccessRatio);
    // Every column carries the engine's decomposition (the Compare view's Why cell shows it on hover).
    expect(rep.why.text).toMatch(/ = .+ compute \+ .+ waiting for memory at .+ ns \(.+ idle \+ .+ controllers \+ .+ links\) with [\d.]+ accesses in flight/);
    const rec = view.recommendations.find((r) => r.policy === 'replicate')!;
    expect(rec.kind).toBe('code-change');
    expect(rec.planable).toBe(false);
    expect(rec.title).toMatch(/^code change, not a page move/);
    expect(rec.title).toMatch(/llama\.cpp --numa mirror/);
    const outcome = planFromRecommendations(trace, result, [rec.id], '2026-01-01T00:00:00Z', NAME);
    expect(outcome.plan).toBeUndefined();
    expect(outcome.error).toMatch(/select at least one recommendation that a plan can express/);
  });

  it('on an access estimate replicate is unavailable, saying why', () => {
    const { view } = runAnalysis(trace, { policies: ['replicate'], machine: null, estimate: true, windowMs: null });
    expect(view.policies.find((p) => p.policy === 'replicate')).toBeUndefined();
    expect(view.unavailable.find((u) => u.policy === 'replicate')?.reason).toMatch(/cannot run on an access estimate/);
  });
});
