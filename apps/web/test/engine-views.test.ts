import { readFileSync } from 'node:fs';
import path from 'node:path';
import { analyze, readTrace, validatePlan } from '@numascope/policy-engine';
import { describe, expect, it } from 'vitest';
import { columnSpec, deltaRows, orderBySpeedup, parseColumn, parseColumns, speedupAgainst, whyLine } from '../src/ui/selectors/compare';
import { analyzeOutcome, planFromFixOutcome, planFromRecommendations, runAnalysis } from '../src/worker/analysis';
import type { PolicyView } from '../src/worker/analysis';
import { parseViewState, writeViewState, DEFAULT_VIEW_STATE } from '../src/ui/url-state';

const SAMPLES = path.resolve(__dirname, '../../../sample-traces');
const load = (name: string) => readTrace(new Uint8Array(readFileSync(path.join(SAMPLES, name))));

function pv(over: Partial<PolicyView>): PolicyView {
  return {
    policy: 'x', description: '', localAccessRatio: 0.5, memoryLatencyNs: 200, mcImbalancePct: 100, interconnectUsagePct: 10,
    interconnectImbalancePct: 50, predictedUs: 1000, predictedSpeedup: 1, pagesToMove: 0, bytesToMove: 0,
    accesses: 0, computeUs: 500, stallUs: 500, placementsEvaluated: null, placementsTotal: null,
    replay: {
      localAccessRatio: 0.5, memoryLatencyNs: 200, mcImbalancePct: 100, interconnectUsagePct: 10, interconnectImbalancePct: 50,
      predictedUs: 1000, predictedSpeedup: 1, migratedPages: 0, migratedBytes: 0, migrationUs: 0, convergedAtWindow: 0, convergedAtUs: 0,
    },
    steadyState: { basis: 'allocation', continuationRounds: 0, continuationMovedPages: 0 }, l3Mpki: null, ipc: null, decisionCount: 0, mcLoadBytesPerS: [], mcUtilisation: [], mcShare: [], hotIndex: -1, linkLoadBytesPerS: [], linkUtilisation: [], weights: null, decisions: [], windows: [],
    why: { predictedUs: 1000, computeUs: 500, stallUs: 500, latencyNs: 200, idleNs: 200, controllersNs: 0, linksNs: 0, crossbarNs: 0, concurrency: 1, busiest: null, idleScale: 1, queueScale: 1, text: '' },
    ...over,
  };
}

describe('delta table', () => {
  it('subtracts the baseline, gives the speedup as a ratio of predicted times, and judges by direction', () => {
    const base = pv({ predictedUs: 1000, mcImbalancePct: 200, localAccessRatio: 0.25 });
    const other = pv({ predictedUs: 600, pagesToMove: 10, mcImbalancePct: 10, localAccessRatio: 0.25, memoryLatencyNs: 300 });
    const rows = Object.fromEntries(deltaRows(base, other).map((r) => [r.metric.key, r]));
    expect(speedupAgainst(base, other)).toBeCloseTo(1000 / 600);
    // The speedup row carries the ratio itself, not a difference of two speedups.
    expect(rows.predictedSpeedup!.value).toBeCloseTo(1000 / 600);
    expect(rows.predictedSpeedup!.base).toBe(1);
    expect(rows.predictedSpeedup!.verdict).toBe('better');
    expect(rows.predictedUs!.delta).toBe(-400);
    expect(rows.pagesToMove!.verdict).toBe('worse');
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
    // The first default column is the baseline: observed (what ran), or first-touch when chosen.
    expect(parseColumns(null).map(columnSpec)).toEqual(['observed', 'interleave', 'carrefour']);
    expect(parseColumns(null, 'first-touch').map(columnSpec)).toEqual(['first-touch', 'interleave', 'carrefour']);
    expect(parseViewState(writeViewState('', { ...DEFAULT_VIEW_STATE, base: 'first-touch' })).base).toBe('first-touch');
    // The replay window: whole ms within bounds, else the engine's default.
    expect(parseViewState(writeViewState('', { ...DEFAULT_VIEW_STATE, win: 500 })).win).toBe(500);
    for (const bad of ['0', '-5', '1.5', '60001', 'x']) expect(parseViewState(`?win=${bad}`).win, bad).toBeNull();
    const s = { ...DEFAULT_VIEW_STATE, view: 'compare' as const, cmp: ['first-touch', 'interleave@amd-genoa-2s-nps4', 'carrefour'], estimate: true };
    const search = writeViewState('?trace=samples/x.numascope', s);
    expect(search).toContain('cmp=first-touch~interleave@amd-genoa-2s-nps4~carrefour');
    expect(parseViewState(search)).toEqual(s);
  });
});

describe('Compare table: order and why', () => {
  it('orders columns fastest first, ties in their order, unknown speedups last', () => {
    expect(orderBySpeedup([1, 2.5, null, 1.2, 2.5])).toEqual([1, 4, 3, 0, 2]);
  });

  it('says why a column wins, loses or ties, from the metrics that moved most', () => {
    const base = pv({ predictedUs: 1000, mcImbalancePct: 200, localAccessRatio: 0.25, memoryLatencyNs: 300 });
    const wins = pv({ predictedUs: 500, mcImbalancePct: 10, localAccessRatio: 0.25, memoryLatencyNs: 150, pagesToMove: 1200 });
    const win = whyLine(base, wins, { isBaseline: false, windowMs: 100 });
    expect(win).toMatch(/^Wins \(2\.00×\): /);
    // MC imbalance fell by 95 %, latency by 50 %: those two, biggest first; local accesses did not move.
    expect(win).toContain('MC imbalance 200% → 10%, latency 300 ns → 150 ns');
    expect(win).not.toContain('local accesses');
    expect(win).toContain('1,200 pages moved');

    const loses = pv({ predictedUs: 2000, localAccessRatio: 0.1, memoryLatencyNs: 600, mcImbalancePct: 200 });
    expect(whyLine(base, loses, { isBaseline: false, windowMs: 100 })).toBe('Loses (0.50×): latency 300 ns → 600 ns, local accesses 25% → 10%.');

    // A tie with nothing to move names the replay window, which may change it.
    const same = pv({ predictedUs: 1005, mcImbalancePct: 200, localAccessRatio: 0.25, memoryLatencyNs: 300 });
    const tie = whyLine(base, same, { isBaseline: false, windowMs: 250 });
    expect(tie).toMatch(/^About the same \(1\.00×\): it places pages as the baseline does/);
    expect(tie).toContain('once per 250 ms window');
    expect(whyLine(base, base, { isBaseline: true, windowMs: 100 })).toMatch(/^The baseline/);
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
      expect(p.predictedUs).toBeCloseTo(d.predictedUs, 6);
    }
    expect(view.baseline).toBe('observed');
    expect(view.recordedUs).toBe(direct.recordedUs);
  });
  it('one number, one source: each recommendation carries its own gain, and its policy\'s whole gain as that policy shows it', () => {
    const byPolicy = new Map(view.policies.map((p) => [p.policy, p]));
    const base = byPolicy.get(view.baseline)!;
    expect(view.recommendations.length).toBeGreaterThan(0);
    for (const r of view.recommendations) {
      if (r.kind === 'code-change' && r.id.startsWith('code:')) continue;
      const p = byPolicy.get(r.policy)!;
      // The policy's whole gain is the number its column shows.
      expect(r.gain.policySpeedup).toBe(p.predictedSpeedup);
      expect(speedupAgainst(base, p)).toBe(p.predictedSpeedup);
      if (r.gain.basis === 'policy') {
        // A launch line or policy-wide change: the action is the whole policy.
        expect(r.gain.speedup).toBe(p.predictedSpeedup);
        expect(r.gain.latencyNsAfter).toBe(p.memoryLatencyNs);
      } else {
        // A page or thread action: its own what-if, never claiming more than it predicts.
        expect(r.title).toContain('this action alone predicted');
        expect(r.gain.speedup).toBeGreaterThanOrEqual(1.02);
      }
    }
    // Ranked by their own gain.
    const gains = view.recommendations.map((r) => r.gain.speedup);
    expect(gains).toEqual([...gains].sort((a, b) => b - a));
  });
  it('first-touch can be chosen as the baseline', () => {
    const ft = runAnalysis(trace, { ...req, baseline: 'first-touch' }).view;
    expect(ft.baseline).toBe('first-touch');
    expect(ft.policies.find((p) => p.policy === 'first-touch')!.predictedSpeedup).toBe(1);
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
  it('page-fault-only traces: the placement-only estimate up front (not a refusal), the access-based policies unavailable', () => {
    const pf = load('recorded-testload-4threads.numascope');
    const policies = ['observed', 'first-touch', 'interleave', 'carrefour', 'asymsched', 'autonuma'];
    const auto = analyzeOutcome(pf, { ...req, policies }).outcome;
    if (!('view' in auto)) throw new Error(`refused: ${auto.error.code} ${auto.error.message}`);
    expect(auto.view.estimate).toBe('uniform');
    expect(auto.view.estimateAuto).toBe(true);
    expect(auto.view.notes.join('\n')).toMatch(/^ESTIMATED/m);
    expect(auto.view.unavailable.map((u) => u.policy).sort()).toEqual(['asymsched', 'autonuma', 'carrefour']);
    // Asked for explicitly: the same analysis, not marked automatic.
    const est = analyzeOutcome(pf, { ...req, estimate: true, policies }).outcome;
    if (!('view' in est)) throw new Error(est.error.message);
    expect(est.view.estimate).toBe('uniform');
    expect(est.view.estimateAuto).toBe(false);
    expect(est.view.policies.map((p) => p.mcImbalancePct)).toEqual(auto.view.policies.map((p) => p.mcImbalancePct));
  });

  it('traces with access samples are never estimated automatically', () => {
    const r = analyzeOutcome(trace, req).outcome;
    if (!('view' in r)) throw new Error(r.error.message);
    expect(r.view.estimate).toBeNull();
    expect(r.view.estimateAuto).toBe(false);
  });
});

describe('diagnosis in the Worker', () => {
  it('a baseline-only analysis carries the engine diagnosis of the whole recording, ranked, with fix gains', () => {
    const trace = load('shared-readmostly.numascope');
    const { view } = runAnalysis(trace, { policies: ['observed', 'first-touch'], machine: null, estimate: false, windowMs: null, range: null, baseline: null });
    expect(view.diagnosis).not.toBeNull();
    const first = view.diagnosis!.issues[0]!;
    expect(first.kind).toBe('page-sharing');
    expect(first.fix.kind).toBe('replicate');
    expect(first.fix.predictedSpeedup).toBeGreaterThan(1);
    expect(view.diagnosis!.cacheLine.available).toBe(false);
  });
  it('with a time range there is no diagnosis, with the reason', () => {
    const trace = load('shared-readmostly.numascope');
    const { view } = runAnalysis(trace, { policies: [], machine: null, estimate: false, windowMs: null, range: { fromUs: 0, toUs: 500_000 }, baseline: null });
    expect(view.diagnosis).toBeNull();
    expect(view.diagnosisNote).toMatch(/whole recording/);
  });
});

describe('plans of diagnosed fixes (the Diagnostics view\'s Preview plan)', () => {
  const trace = load('two-groups.numascope');
  it('the fix ids of the view\'s diagnosis give valid plans; a code change gives its reason', () => {
    const { view } = runAnalysis(trace, { machine: null, windowMs: null, policies: ['observed', 'first-touch'], estimate: false });
    const fixes = view.diagnosis!.issues.map((i) => i.fix);
    const planable = fixes.filter((f) => f.planable);
    expect(planable.length).toBeGreaterThan(0);
    for (const f of planable) {
      const out = planFromFixOutcome(trace, f.id, '2026-01-01T00:00:00Z', 'two-groups.numascope');
      expect(out.error).toBeUndefined();
      expect(validatePlan(JSON.parse(out.json!)).source.policy).toBe(`diagnose:${f.id}`);
      expect(out.plan!.pageRanges.length).toBeGreaterThan(0);
    }
    const replicate = planFromFixOutcome(load('shared-readmostly.numascope'), 'page-sharing:r32/replicate', '2026-01-01T00:00:00Z', 'x');
    expect(replicate.error).toMatch(/has no plan: replication is a code change/);
  });
});
