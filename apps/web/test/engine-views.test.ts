import { readFileSync } from 'node:fs';
import path from 'node:path';
import { analyze, readTrace, validatePlan } from '@numascope/policy-engine';
import { describe, expect, it } from 'vitest';
import { columnSpec, deltaRows, parseColumn, parseColumns, speedupAgainst } from '../src/engine/compare';
import { analyzeOutcome, planFromRecommendations, runAnalysis } from '../src/engine/run';
import type { PolicyView } from '../src/engine/run';
import { parseViewState, writeViewState, DEFAULT_VIEW_STATE } from '../src/url-state';

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const load = (name: string) => readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, name))));

function pv(over: Partial<PolicyView>): PolicyView {
  return {
    policy: 'x', description: '', localAccessRatio: 0.5, memoryLatencyNs: 200, mcImbalancePct: 100, interconnectUsagePct: 10,
    interconnectImbalancePct: 50, predictedUs: 1000, migrationUs: 0, predictedSpeedup: 1, migratedPages: 0, migratedBytes: 0,
    l3Mpki: null, ipc: null, decisionCount: 0, mcLoadBytesPerS: [], mcUtilisation: [], mcShare: [], linkLoadBytesPerS: [], linkUtilisation: [],
    ...over,
  };
}

describe('delta table', () => {
  it('subtracts the baseline, re-bases speedup, and judges by direction', () => {
    const base = pv({ predictedUs: 1000, mcImbalancePct: 200, localAccessRatio: 0.25 });
    const other = pv({ predictedUs: 500, migrationUs: 100, mcImbalancePct: 10, localAccessRatio: 0.25, memoryLatencyNs: 300 });
    const rows = Object.fromEntries(deltaRows(base, other).map((r) => [r.metric.key, r]));
    expect(speedupAgainst(base, other)).toBeCloseTo(1000 / 600);
    expect(rows.predictedSpeedup!.delta).toBeCloseTo(1000 / 600 - 1);
    expect(rows.predictedSpeedup!.verdict).toBe('better');
    expect(rows.mcImbalancePct!.delta).toBe(-190);
    expect(rows.mcImbalancePct!.relative).toBeCloseTo(-0.95);
    expect(rows.mcImbalancePct!.verdict).toBe('better');
    expect(rows.memoryLatencyNs!.verdict).toBe('worse');
    expect(rows.localAccessRatio!.verdict).toBe('same');
    expect(deltaRows(base, base).every((r) => r.delta === 0)).toBe(true);
  });
  it('column specs round-trip through the URL', () => {
    expect(parseColumn('interleave@amd-genoa-2s-nps4')).toEqual({ policy: 'interleave', machine: 'amd-genoa-2s-nps4', recording: null });
    expect(columnSpec(parseColumn('first-touch+r2')!)).toBe('first-touch+r2');
    expect(parseColumns(null).map(columnSpec)).toEqual(['first-touch', 'interleave', 'carrefour']);
    const s = { ...DEFAULT_VIEW_STATE, view: 'compare' as const, cmp: ['first-touch', 'interleave@amd-genoa-2s-nps4', 'carrefour'], estimate: true };
    const search = writeViewState('?trace=samples/x.numascope', s);
    expect(search).toContain('cmp=first-touch~interleave@amd-genoa-2s-nps4~carrefour');
    expect(parseViewState(search)).toEqual(s);
  });
});

describe('engine in the Worker (run.ts)', () => {
  const trace = load('streamcluster-hotspot.numascope');
  const req = { policies: ['observed', 'first-touch', 'interleave', 'carrefour'], machine: null, estimate: false, windowMs: 100 };
  const { view, result } = runAnalysis(trace, req);
  it('matches analyze() on the same file', () => {
    const direct = analyze(trace, { windowMs: 100, policies: ['first-touch', 'observed', 'interleave', 'carrefour'] });
    for (const p of view.policies) {
      const d = direct.policies.find((x) => x.policy === p.policy)!;
      expect(p.mcImbalancePct).toBeCloseTo(d.mcImbalancePct, 9);
      expect(p.predictedSpeedup).toBeCloseTo(d.predictedSpeedup, 9);
    }
  });
  it('first-touch has a hot node 0 and interleave evens it out', () => {
    const ft = view.policies.find((p) => p.policy === 'first-touch')!;
    const il = view.policies.find((p) => p.policy === 'interleave')!;
    expect(ft.mcImbalancePct).toBeGreaterThan(35);
    expect(il.mcImbalancePct).toBeLessThan(35);
    expect(ft.mcShare[0]).toBeGreaterThan(1.5 / ft.mcShare.length);
    expect(ft.mcShare.reduce((a, b) => a + b, 0)).toBeCloseTo(1);
  });
  it('builds a valid plan from planable recommendations', () => {
    const ids = view.recommendations.filter((r) => r.planable).map((r) => r.id);
    expect(ids.length).toBeGreaterThan(0);
    const out = planFromRecommendations(trace, result, ids.slice(0, 1), '2026-01-01T00:00:00Z', 'x.numascope');
    expect(out.error).toBeUndefined();
    expect(validatePlan(JSON.parse(out.json!)).expected.pagesToMove).toBe(out.plan!.expected.pagesToMove);
  });
  it('page-fault-only traces: refused, then estimated with the access-based policies unavailable', () => {
    const pf = load('recorded-testload-4threads.numascope');
    const refused = analyzeOutcome(pf, { ...req, policies: ['observed', 'first-touch', 'interleave', 'carrefour', 'asymsched', 'autonuma'] }).outcome;
    expect('error' in refused && refused.error.code).toBe('no-access-data');
    const est = analyzeOutcome(pf, { ...req, estimate: true, policies: ['observed', 'first-touch', 'interleave', 'carrefour', 'asymsched', 'autonuma'] }).outcome;
    if (!('view' in est)) throw new Error(est.error.message);
    expect(est.view.estimate).toBe('uniform');
    expect(est.view.unavailable.map((u) => u.policy).sort()).toEqual(['asymsched', 'autonuma', 'carrefour']);
  });
});
