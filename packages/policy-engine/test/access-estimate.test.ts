/**
 * Page-fault-only traces (no access samples): the `uniform` access estimate (windows.ts) and what
 * the engine refuses to do on it (rate-driven policies), as used by the testbed's scenarios b/c.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { analysisJson } from '../src/analyze/json.js';
import { isEngineError } from '../src/model/errors.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { buildPlan } from '../src/plan/index.js';
import { main } from '../cli/main.js';
import { traceBytesFromText, traceFromText } from './helpers/plan-trace.js';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// 8 pages first-touched on node 0; four threads on nodes 0, 1, 2, 3 (the testbed's pinned testload).
const pages = Array.from({ length: 8 }, (_, i) => `0x7f00000${i.toString(16)}000 0`).join('\n');
const SPEC = { preset: 'amd-opteron-8385-4p', pages, threads: '100 0\n101 1\n102 2\n103 3' };
const TRACE = traceFromText(SPEC);

function codeOf(f: () => unknown): string | null {
  try {
    f();
  } catch (e) {
    return isEngineError(e) ? e.code : String(e);
  }
  return null;
}

describe('access estimate "uniform"', () => {
  it('is off by default: no samples → no-access-data, which names the option', () => {
    expect(codeOf(() => buildReplayInput(TRACE, { windowMs: 100 }))).toBe('no-access-data');
    expect(() => buildReplayInput(TRACE, { windowMs: 100 })).toThrow(/--access-estimate uniform/);
  });

  it('builds one window in which every thread reads every page once, and says so', () => {
    const input = buildReplayInput(TRACE, { windowMs: 100, accessEstimate: 'uniform' });
    expect(input.estimate).toBe('uniform');
    expect(input.windows.length).toBe(1);
    const w = input.windows.get(0);
    expect(w.page.length).toBe(32);
    expect(Array.from(w.loads).every((x) => x === 1)).toBe(true);
    expect(Array.from(w.stores).every((x) => x === 0)).toBe(true);
    expect(Array.from(input.initial.threadNode)).toEqual([0, 1, 2, 3]);
    expect(Array.from(input.initial.pageNode)).toEqual(Array(8).fill(0));
    expect(input.notes!.join('\n')).toMatch(/ESTIMATED.*assumed uniform.*4 threads.*8 pages/s);
  });

  it('names node 0 as the hot spot; interleave evens it out', () => {
    const result = analyze(TRACE, { accessEstimate: 'uniform' });
    const json = analysisJson(result);
    expect(json.estimate).toBe('uniform');
    expect(json.nodes!.hotSpot).toBe(0);
    expect(json.nodes!.share[0]).toBeCloseTo(1, 5);
    // rate-driven policies are left out of the default list, with a note
    expect(json.policies.map((p) => p.policy)).toEqual(['observed', 'first-touch', 'interleave']);
    expect(json.notes.join('\n')).toMatch(/not replayed on an access estimate.*autonuma, carrefour, asymsched/);
    const inter = result.policies.find((p) => p.policy === 'interleave')!;
    expect(inter.localAccessRatio).toBeCloseTo(0.25, 5);
    expect(inter.mcImbalancePct).toBeLessThan(json.policies[0]!.mcImbalancePct);
  });

  it('refuses Carrefour (and AsymSched, AutoNUMA) when asked for explicitly', () => {
    for (const id of ['carrefour', 'asymsched', 'autonuma']) {
      expect(codeOf(() => analyze(TRACE, { accessEstimate: 'uniform', policies: [id] }))).toBe('estimate-unsupported');
    }
  });

  it('gives an interleave plan that spreads the 8 pages 2 per node', () => {
    const result = analyze(TRACE, { accessEstimate: 'uniform', policies: ['interleave'] });
    const plan = buildPlan(TRACE, result.policies[0]!.replay, { createdAt: '2026-11-21T20:00:00Z' });
    expect(plan.expected!.pagesPerNodeAfter).toEqual({ '0': 2, '1': 2, '2': 2, '3': 2 });
  });

  it('CLI: plan --access-estimate uniform labels the plan ESTIMATED; carrefour exits 1 with the reason', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'estimate-'));
    const file = join(dir, 't.numascope');
    writeFileSync(file, traceBytesFromText(SPEC));
    const out: string[] = [];
    const err: string[] = [];
    const rc = await main(['plan', file, '--access-estimate', 'uniform', '--policy', 'interleave', '-o', join(dir, 'p.json')], (s) => out.push(s), (s) => err.push(s));
    expect(err).toEqual([]);
    expect(rc).toBe(0);
    const plan = JSON.parse(readFileSync(join(dir, 'p.json'), 'utf8'));
    expect(plan.source.summary).toMatch(/^ESTIMATED from page placement only/);
    const rc2 = await main(['plan', file, '--access-estimate', 'uniform', '--policy', 'carrefour', '-o', join(dir, 'c.json')], (s) => out.push(s), (s) => err.push(s));
    expect(rc2).toBe(1);
    expect(err.join('\n')).toMatch(/carrefour cannot run on an access estimate/);
    const rc3 = await main(['analyze', file, '--access-estimate', 'uniform'], (s) => out.push(s), (s) => err.push(s));
    expect(rc3).toBe(0);
    expect(out.join('\n')).toMatch(/hot spot: node 0/);
  });
});
