/**
 * Carrefour's converged placement when the accesses go to one node (issue #12: interleave and
 * Carrefour predicted to lower MC imbalance below Carrefour's 35 % threshold, and not slower than
 * first-touch or observed), on the guest hinting-fault recordings and on synthetic traces. The
 * published rule (carrefour-runtime `carrefour.c`, `carrefour()`) re-evaluates the 35 % gate
 * every round, so Carrefour stops at the first round at or below it; what must not happen is a
 * creep to the threshold because each round sees only part of the hot pages (docs/policies.md,
 * "NUMA hinting faults are not thinned").
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { CONTINUATION_MAX_ROUNDS } from '../src/engine/steady.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { carrefourPolicy } from '../src/policies/carrefour.js';
import { readTrace } from '../src/trace/reader.js';
import { mirrorTrace, type MirrorSpec } from '../fidelity/mirror.js';
import { oneNodeHotSpec } from './helpers/one-node-hot.js';

/**
 * The two guest recordings (sample-traces/README.md; test/fixtures/README.md). In both the main
 * thread first touches the shared buffer from cpu 0 (node 0) and is seen later on another node; the
 * program ran under the default policy, so first-touch's prediction is the recorded placement
 * (pages on the node of their recorded first-touch cpu, threads where the recording had them), and
 * interleave and Carrefour must not be predicted slower than either.
 */
const GUEST_RECORDINGS = [
  { name: 'recorded-guest-hinting-4nodes', path: '../../../sample-traces/recorded-guest-hinting-4nodes.numascope' },
  { name: 'recorded-guest-hinting-4nodes-b2', path: './fixtures/recorded-guest-hinting-4nodes-b2.numascope' },
];

describe.each(GUEST_RECORDINGS)('guest recording $name (hinting faults, a shared buffer on one node)', ({ path }) => {
  const trace = readTrace(new Uint8Array(readFileSync(resolve(__dirname, path))));
  const runs = [1, 2, 3].map((seed) => analyze(trace, { steadyState: true, seed, policies: ['observed', 'first-touch', 'interleave', 'carrefour'] }));
  // The headline (top-level metrics) is the steady state; steadyState says how it was reached.
  const steady = (r: (typeof runs)[number], id: string) => {
    const p = r.policies.find((x) => x.policy === id)!;
    expect(r.headline).toBe('steady-state');
    return { ...p, ...p.steadyState! };
  };

  it('the recorded placement loads one controller (the case the targets are about)', () => {
    expect(steady(runs[0]!, 'observed').mcImbalancePct).toBeGreaterThan(150);
  });

  it('first-touch predicts the recorded placement (the program ran under it)', () => {
    const r = runs[0]!;
    const ft = steady(r, 'first-touch');
    expect(ft.pagesToMove).toBeLessThan(10);
    expect(Math.abs(ft.localAccessRatio - steady(r, 'observed').localAccessRatio)).toBeLessThan(0.01);
  });

  it('interleave: MC imbalance far below 35 %, not slower than observed nor first-touch', () => {
    const r = runs[0]!;
    const il = steady(r, 'interleave');
    expect(il.mcImbalancePct).toBeLessThan(10);
    // Within 1 %: the guest (unknown DRAM generation, rule S1's current-server share) has node 0's
    // controller far from full, so spreading its pages trades little queueing for remote hops.
    expect(il.predictedUs).toBeLessThanOrEqual(steady(r, 'observed').predictedUs * 1.01);
    expect(il.predictedUs).toBeLessThanOrEqual(steady(r, 'first-touch').predictedUs * 1.01);
  });

  it.each([0, 1, 2])('Carrefour (seed index %i): below 35 %, converged before the round cap, not slower than observed', (k) => {
    const r = runs[k]!;
    const cf = steady(r, 'carrefour');
    expect(cf.mcImbalancePct).toBeLessThan(30);
    // converged, not crept to the threshold: the 8-round cap is not reached
    expect(cf.continuationRounds).toBeLessThan(CONTINUATION_MAX_ROUNDS);
    expect(cf.predictedUs).toBeLessThanOrEqual(steady(r, 'observed').predictedUs);
    expect(cf.predictedUs).toBeLessThanOrEqual(steady(r, 'first-touch').predictedUs);
  });

  it('Carrefour\'s first round acts on most of the hot node\'s pages (hinting faults are not thinned at the cheap rate)', () => {
    const r = runs[0]!;
    const input = buildReplayInput(trace, { windowMs: r.windowMs });
    const busiest = [...Array(input.windows.length).keys()].reduce((a, w) => (input.windows.info(w).sampleCount > input.windows.info(a).sampleCount ? w : a), 0);
    const observedNode0 = input.initial.pageNode.reduce((n, node) => n + (node === 0 ? 1 : 0), 0);
    const replay = carrefourPolicy.replay(input, { seed: 1, simulate: simulateWindow });
    const moved = replay.decisions
      .filter((d) => d.window === busiest && (d.kind === 'interleave' || d.kind === 'migrate'))
      .reduce((n, d) => n + (d.pages ?? 0), 0);
    expect(moved).toBeGreaterThan(0.3 * observedNode0);
  });
});

describe('synthetic: 16 threads on 4 nodes reading data that sits on node 0 (PMU samples)', () => {
  const spec = (over: Partial<MirrorSpec> = {}): MirrorSpec => oneNodeHotSpec('carrefour-steady', 'one-node hot data, Carrefour steady-state test', over);

  it.each([
    ['1024 pages, 8000 samples', {}],
    ['2048 pages, 4000 samples', { regions: [{ name: 'shared', pageNodes: Array(2048).fill(0) }], samples: 4000 }],
  ])('%s: Carrefour and interleave far below 35 %, both faster than first-touch and observed', (_label, over) => {
    const r = analyze(readTrace(mirrorTrace(spec(over as Partial<MirrorSpec>))), { steadyState: true, policies: ['observed', 'first-touch', 'interleave', 'carrefour'] });
    const steady = (id: string) => r.policies.find((p) => p.policy === id)!;
    expect(steady('first-touch').mcImbalancePct).toBeGreaterThan(150);
    for (const id of ['interleave', 'carrefour']) {
      expect(steady(id).mcImbalancePct, id).toBeLessThan(25);
      expect(steady(id).predictedUs, id).toBeLessThan(steady('first-touch').predictedUs);
      expect(steady(id).predictedUs, id).toBeLessThan(steady('observed').predictedUs);
    }
  });

  it('PMU samples are still thinned at the cheap rate: the first round sees only part of the pages', () => {
    const input = buildReplayInput(readTrace(mirrorTrace(spec({ samples: 2000 }))), { windowMs: 100 });
    const replay = carrefourPolicy.replay(input, { seed: 1, simulate: simulateWindow });
    const moved = replay.decisions.filter((d) => d.window === 0 && (d.kind === 'interleave' || d.kind === 'migrate')).reduce((n, d) => n + (d.pages ?? 0), 0);
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThan(0.5 * 1024);
  });
});
