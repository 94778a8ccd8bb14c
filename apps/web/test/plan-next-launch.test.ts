// A plan built from the Recommendations view serves the program's next launch too when the
// recording has allocation sites (object entries, and thread pins by order and name when it pins),
// as the CLI's plan does; without sites, and for the placement check, it has none.
import { describe, expect, it } from 'vitest';
import { validatePlan } from '@numascope/policy-engine';
import { planFromRecommendations, runAnalysis } from '../src/worker/analysis';
import { textTrace, PAGE_BASE_ADDRESS } from '../../../packages/policy-engine/test/helpers/text-trace';

const DURATION_US = 10_000;
const BASE = `0x${PAGE_BASE_ADDRESS.toString(16)}`;

/** Four threads on nodes 0-3 all reading 16 pages first-touched on node 0: a hot node, interleave wins. */
function sharedTrace(withSites: boolean) {
  const rows = ['time_us thread page op weight'];
  for (let k = 0; k < 20; k++) for (let t = 0; t < 4; t++) for (let p = 0; p < 16; p++) rows.push(`${Math.floor(((k * 64 + t * 16 + p) * DURATION_US) / 1280)} ${t} ${p} load 5000`);
  const trace = textTrace({
    machine: 'amd-opteron-8385-4p',
    threads: ['node name', ...[0, 1, 2, 3].map((t) => `${t} worker-${t}`)].join('\n'),
    pages: ['page node', ...Array.from({ length: 16 }, (_, p) => `${p} 0`)].join('\n'),
    samples: rows.join('\n'),
    durationUs: DURATION_US,
    ...(withSites ? { allocations: `address size site\n${BASE} 65536 table@app.c:42` } : {}),
  });
  trace.manifest.process = { pid: 1000, startTimeTicks: '172045', command: ['./app'], attached: false, exitCode: null };
  return trace;
}

const req = { policies: ['observed', 'first-touch', 'interleave'], machine: null, estimate: false, windowMs: 10 };

describe('plans from recommendations and the next launch', () => {
  it('a recording with allocation sites: object entries placed as the selected action places their pages', () => {
    const trace = sharedTrace(true);
    const { view, result } = runAnalysis(trace, req);
    const ids = view.recommendations.filter((r) => r.planable).map((r) => r.id);
    expect(ids.length).toBeGreaterThan(0);
    const out = planFromRecommendations(trace, result, ids, '2026-11-24T00:00:00Z', 't.numascope');
    expect(out.error).toBeUndefined();
    const plan = validatePlan(JSON.parse(out.json!));
    expect(plan.objects).toHaveLength(1);
    expect(plan.objects![0]).toMatchObject({ site: expect.stringMatching(/app\.c:42/), size: { min: 65536, max: 65536 } });
    expect(plan.pageRanges.length).toBeGreaterThan(0);
    // The selected action interleaves the hot table: so does the entry at the next launch.
    expect(plan.objects![0]!.policy).toBe('interleave');
    // The placement check states where pages are: no object entries.
    const check = planFromRecommendations(trace, result, [], '2026-11-24T00:00:00Z', 't.numascope', true);
    expect(validatePlan(JSON.parse(check.json!)).objects).toBeUndefined();
  });

  it('without allocation sites the plan is what it was: no object entries', () => {
    const trace = sharedTrace(false);
    const { view, result } = runAnalysis(trace, req);
    const ids = view.recommendations.filter((r) => r.planable).map((r) => r.id);
    const out = planFromRecommendations(trace, result, ids, '2026-11-24T00:00:00Z', 't.numascope');
    expect(out.error).toBeUndefined();
    expect(validatePlan(JSON.parse(out.json!)).objects).toBeUndefined();
  });
});
