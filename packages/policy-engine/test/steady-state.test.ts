/**
 * Steady state (docs/engine.md, "Steady state"): each policy's converged placement held over the
 * whole recording is the headline; the window-by-window replay is the transient.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { analyze, analyzeInput, type AnalysisResult } from '../src/analyze/analyze.js';
import { getPreset } from '../src/machine/presets.js';
import { machineModel } from '../src/machine/model.js';
import { readTrace } from '../src/trace/reader.js';
import { simulateWindow } from '../src/engine/simulate.js';

const SAMPLE = (name: string) => fileURLToPath(new URL(`../../../sample-traces/${name}.numascope`, import.meta.url));
const cache = new Map<string, AnalysisResult>();
const run = (name: string): AnalysisResult => {
  if (!cache.has(name)) cache.set(name, analyze(readTrace(new Uint8Array(readFileSync(SAMPLE(name)))), { baseline: 'first-touch' }));
  return cache.get(name)!;
};
const of = (r: AnalysisResult, policy: string) => r.policies.find((p) => p.policy === policy)!;

describe('steady state on the guest recording (hinting faults, every access in window 0, served by one node)', () => {
  it('interleave and Carrefour lower MC imbalance far below the replay; Carrefour is not slower than first-touch or observed', () => {
    const r = run('recorded-guest-hinting-4nodes');
    // The steady state is the default headline.
    expect(r.headline).toBe('steady-state');
    expect(r.accessSource).toBe('hinting-faults');
    expect(r.notes.some((n) => n.includes('NUMA hinting faults'))).toBe(true);
    const ft = of(r, 'first-touch');
    const observed = of(r, 'observed');
    const interleave = of(r, 'interleave');
    const carrefour = of(r, 'carrefour');
    expect(interleave.mcImbalancePct).toBeLessThan(5);
    // The replay leaves Carrefour at ~200 %: its window-0 decisions act only from window 1, which is empty.
    expect(carrefour.transient.mcImbalancePct).toBeGreaterThan(190);
    expect(carrefour.steadyState!.basis).toBe('continued');
    expect(carrefour.transient.convergedAtWindow).toBeNull();
    expect(carrefour.mcImbalancePct).toBeLessThan(45);
    expect(carrefour.predictedUs).toBeLessThanOrEqual(ft.predictedUs);
    expect(carrefour.predictedUs).toBeLessThan(observed.predictedUs);
    expect(carrefour.predictedSpeedup).toBeGreaterThanOrEqual(1);
    // Carrefour and AutoNUMA no longer report identical numbers.
    expect(of(r, 'autonuma').mcImbalancePct).not.toBeCloseTo(carrefour.mcImbalancePct, 0);
    // Speedups are ratios of predicted times.
    expect(carrefour.predictedSpeedup).toBeCloseTo(ft.predictedUs / carrefour.predictedUs, 9);
    // What actually ran takes the recording's real duration.
    expect(observed.predictedUs).toBeCloseTo(r.recordedUs, 6);
  });
});

describe('steady state on the synthetic sample traces: directions as the replay where it was meaningful', () => {
  it('streamcluster-hotspot: interleave, Carrefour and AutoNUMA beat first-touch, as in the replay', () => {
    const r = run('streamcluster-hotspot');
    for (const p of ['interleave', 'carrefour', 'autonuma']) {
      expect(of(r, p).transient.predictedSpeedup).toBeGreaterThan(1);
      expect(of(r, p).predictedSpeedup).toBeGreaterThan(1);
      expect(of(r, p).mcImbalancePct).toBeLessThan(35);
    }
    expect(of(r, 'carrefour').predictedSpeedup).toBeGreaterThan(of(r, 'carrefour').transient.predictedSpeedup);
  });
  it('two-groups: AsymSched beats first-touch, interleave does not (its controllers are far from saturated); partitioned: interleave loses to first-touch', () => {
    expect(of(run('two-groups'), 'asymsched').predictedSpeedup).toBeGreaterThan(1);
    expect(of(run('two-groups'), 'interleave').predictedSpeedup).toBeGreaterThan(0.9);
    expect(of(run('two-groups'), 'interleave').predictedSpeedup).toBeLessThan(1.02);
    // (loaded-latency model, docs/engine.md "Traffic model": the local placement's controllers are
    // not saturated, so spreading costs distance and link traffic, a few %)
    expect(of(run('partitioned'), 'interleave').predictedSpeedup).toBeLessThan(0.99);
    expect(of(run('partitioned'), 'interleave').transient.predictedSpeedup).toBeLessThan(0.99);
  });
  it('shared-readmostly: Carrefour lowers MC imbalance in both, more in the steady state', () => {
    const c = of(run('shared-readmostly'), 'carrefour');
    const ft = of(run('shared-readmostly'), 'first-touch');
    expect(c.transient.mcImbalancePct).toBeLessThan(ft.mcImbalancePct);
    expect(c.mcImbalancePct).toBeLessThan(c.transient.mcImbalancePct);
  });
});

describe('a policy whose placement never changes has its replay as steady state', () => {
  it.each(['streamcluster-hotspot', 'partitioned', 'two-groups', 'shared-readmostly', 'recorded-guest-hinting-4nodes'])('%s', (name) => {
    const r = run(name);
    for (const p of r.policies) {
      const changed = p.replay.migratedPages > 0 || p.replay.threadNodeByWindow.some((t) => t.some((node, i) => node !== r.input.initial.threadNode[i]));
      if (p.replay.placedAtAllocation || !changed) {
        expect(p.steadyState!.basis === 'allocation' || p.steadyState!.basis === 'unchanged').toBe(true);
        expect(p.predictedUs).toBe(p.transient.predictedUs);
        expect(p.mcImbalancePct).toBe(p.transient.mcImbalancePct);
        expect(p.localAccessRatio).toBe(p.transient.localAccessRatio);
        expect(p.transient.convergedAtWindow).toBe(0);
      }
    }
  });
});

describe('baselines and anchoring (docs/engine.md, "Predicted time and speedup")', () => {
  const sample = (name: string) => readTrace(new Uint8Array(readFileSync(SAMPLE(name))));
  it('the default baseline is observed (what ran); predicted times are anchored on the real duration', () => {
    for (const name of ['streamcluster-hotspot', 'recorded-guest-hinting-4nodes']) {
      const r = analyze(sample(name), { policies: ['first-touch', 'interleave', 'carrefour'] });
      expect(r.baseline).toBe('observed');
      expect(r.baselineNote).toBeNull();
      // A speedup is a ratio of predicted times, never a difference.
      const observedUs = r.recordedUs;
      for (const p of r.policies) {
        expect(p.predictedSpeedup).toBeCloseTo(observedUs / p.predictedUs, 9);
        // No predicted saving exceeds what actually ran.
        expect(observedUs - p.predictedUs).toBeLessThan(observedUs);
        expect(p.predictedUs).toBeGreaterThan(0);
      }
    }
  });
  it('streamcluster-hotspot: the predicted times sit next to the 1.82 s recording (was 9.1 s for first-touch before anchoring)', () => {
    const r = analyze(sample('streamcluster-hotspot'), { policies: ['first-touch', 'interleave'], baseline: 'first-touch' });
    expect(r.recordedUs).toBeCloseTo(1_818_000, -4);
    const ft = of(r, 'first-touch');
    const il = of(r, 'interleave');
    // first-touch is the recorded placement on this trace: it takes the recorded time.
    expect(ft.predictedUs).toBeCloseTo(r.recordedUs, 3);
    expect(il.predictedUs).toBeLessThan(ft.predictedUs);
    expect(ft.predictedUs - il.predictedUs).toBeLessThan(r.recordedUs);
  });
  it('first-touch is the baseline, with the reason, when the trace records no page placement', () => {
    const r = analyze(sample('recorded-testload-4threads'), { accessEstimate: 'uniform', policies: ['first-touch', 'interleave'] });
    // This recording does record page nodes: observed is its baseline.
    expect(r.baseline).toBe('observed');
    const input = { ...r.input, pagesWithRecordedNode: 0 };
    const fallback = analyzeInput(input, { policies: ['first-touch', 'interleave'] });
    expect(fallback.baseline).toBe('first-touch');
    expect(fallback.baselineNote).toMatch(/records no page placement/);
    expect(fallback.notes).toContain(fallback.baselineNote);
    expect(of(fallback, 'first-touch').predictedSpeedup).toBe(1);
  });
  it('re-targeted, times stay anchored on the recorded machine (the observed run there takes the real time)', () => {
    const trace = sample('partitioned');
    const own = analyze(trace, { policies: ['observed'] });
    const genoa = analyze(trace, { policies: ['observed'], machine: machineModel(getPreset('amd-genoa-2s-nps4')) });
    expect(of(own, 'observed').predictedUs).toBeCloseTo(own.recordedUs, 3);
    expect(genoa.recordedUs).toBe(own.recordedUs);
    // On another machine the same placement takes another time.
    expect(of(genoa, 'observed').predictedUs).not.toBeCloseTo(genoa.recordedUs, 0);
  });
  it('--no-steady-state (steadyState: false): the replay is the headline, with its migration cost', () => {
    const r = analyze(sample('streamcluster-hotspot'), { policies: ['first-touch', 'carrefour'], steadyState: false, baseline: 'first-touch' });
    expect(r.headline).toBe('replay');
    const c = of(r, 'carrefour');
    expect(c.steadyState).toBeNull();
    expect(c.predictedUs).toBe(c.transient.predictedUs);
    expect(c.predictedSpeedup).toBe(c.transient.predictedSpeedup);
    expect(c.placement).toBe(c.replay.finalPlacement);
  });
});

describe('the steady-state pass reuses simulations and sums matrices from the rows, exactly', () => {
  it.each(['streamcluster-hotspot', 'recorded-guest-hinting-4nodes', 'shared-readmostly'])('%s: same numbers as simulating every built window', (name) => {
    const trace = readTrace(new Uint8Array(readFileSync(SAMPLE(name))));
    const fast = analyze(trace, {});
    // Another simulator object (same function) takes the slow path: every held placement simulated on every built window.
    let calls = 0;
    const slow = analyze(trace, {
      simulate: (...args) => {
        calls++;
        return simulateWindow(...args);
      },
    });
    expect(calls).toBeGreaterThan(0);
    for (const p of fast.policies) {
      const q = slow.policies.find((x) => x.policy === p.policy)!;
      expect(p.steadyState).toEqual(q.steadyState);
      for (const key of ['predictedUs', 'predictedSpeedup', 'localAccessRatio', 'memoryLatencyNs', 'mcImbalancePct', 'interconnectUsagePct'] as const) {
        expect(p[key], `${p.policy} ${key}`).toBe(q[key]);
      }
      expect(p.headlineWindows.length).toBe(q.headlineWindows.length);
    }
  });
});
