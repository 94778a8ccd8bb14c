import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { analyze } from '../src/analyze/analyze.js';
import { buildPlan } from '../src/plan/build.js';
import { readTrace } from '../src/trace/reader.js';
import { CODE_TRACE } from './helpers/code-trace.js';
import { diagnoseCodeSpec } from './helpers/diagnose-code-trace.js';
import { textTraceBytes } from './helpers/text-trace.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SAMPLE = (name: string) => join(REPO_ROOT, 'sample-traces', `${name}.numascope`);

async function cli(...argv: string[]): Promise<{ status: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const status = await main(argv, (s) => (out += s + '\n'), (s) => (err += s + '\n'));
  return { status, out, err };
}

const POLICY_KEYS = [
  'policy', 'description', 'localAccessRatio', 'memoryLatencyNs', 'mcImbalancePct', 'interconnectUsagePct',
  'interconnectImbalancePct', 'predictedUs', 'predictedSpeedup', 'accesses', 'computeUs', 'stallUs', 'pagesToMove', 'bytesToMove',
  'l3Mpki', 'ipc', 'placementsEvaluated', 'placementsTotal', 'steadyState', 'replay', 'decisionCount', 'why', 'decisions', 'windows',
  'mcLoadBytesPerS', 'mcUtilisation', 'mcShare', 'hotIndex', 'linkLoadBytesPerS', 'linkUtilisation', 'weights',
];
const REPLAY_KEYS = [
  'localAccessRatio', 'memoryLatencyNs', 'mcImbalancePct', 'interconnectUsagePct', 'interconnectImbalancePct',
  'predictedUs', 'migrationUs', 'predictedSpeedup', 'migratedPages', 'migratedBytes', 'convergedAtWindow', 'convergedAtUs',
];

describe('numascope-analyze', () => {
  it('analyze --json prints the documented keys for each policy', async () => {
    const { status, out } = await cli('analyze', SAMPLE('streamcluster-hotspot'), '--policy', 'first-touch', '--policy', 'interleave', '--json');
    expect(status).toBe(0);
    const json = JSON.parse(out);
    expect(Object.keys(json)).toEqual([
      'trace', 'work', 'machine', 'windowMs', 'windowCount', 'seed', 'range', 'baseline', 'baselineNote', 'headline', 'recordedUs', 'estimate', 'estimateAuto', 'accessSource', 'accessRates',
      'synthetic', 'notes', 'feasibility', 'nodes', 'counters', 'policies', 'unavailable', 'recommendations', 'actions', 'diagnosis', 'diagnosisNote', 'planReason',
    ]);
    expect(Object.keys(json.machine.choice)).toEqual(['used', 'name', 'source', 'reason', 'retarget', 'notes']);
    expect(json.trace).toMatchObject({ file: 'streamcluster-hotspot.numascope', origin: 'synthetic' });
    expect(json.trace.command).toEqual(expect.any(Array));
    expect(json.work).toMatchObject({ unit: 'DRAM accesses' });
    expect(json.work.amount).toBeGreaterThan(0);
    expect(json.policies.map((p: { policy: string }) => p.policy)).toEqual(['first-touch', 'interleave']);
    for (const p of json.policies) {
      expect(Object.keys(p)).toEqual(POLICY_KEYS);
      expect(Object.keys(p.replay)).toEqual(REPLAY_KEYS);
      expect(Object.keys(p.steadyState)).toEqual(['basis', 'continuationRounds', 'continuationMovedPages']);
    }
    // The steady state is the headline and the baseline is what ran (observed), by default.
    expect(json.headline).toBe('steady-state');
    expect(json.baseline).toBe('observed');
    expect(json.baselineNote).toBeNull();
    expect(json.recordedUs).toBeGreaterThan(1.8e6);
    // first-touch is the recorded placement of this synthetic trace: its predicted time is the recording's.
    expect(json.policies[0].predictedUs).toBeCloseTo(json.recordedUs, 3);
    expect(json.policies[1].predictedSpeedup).toBeCloseTo(json.recordedUs / json.policies[1].predictedUs, 9);
    expect(Object.keys(json.policies[0].windows[0])).toEqual([
      'index', 'predictedUs', 'localAccessRatio', 'memoryLatencyNs', 'mcImbalancePct', 'interconnectUsagePct', 'interconnectImbalancePct', 'accessesPerUs', 'mcUtilisationPct',
      'computeUs', 'stallUs', 'concurrency', 'idleLatencyNs', 'mcDelayNs', 'linkDelayNs', 'crossbarDelayNs', 'latencyBoundNs', 'idleScale', 'queueScale',
    ]);
    // The decomposition adds up: compute + waiting = the predicted time, per policy and per window.
    for (const p of json.policies) {
      expect(p.computeUs + p.stallUs).toBeCloseTo(p.predictedUs, 0);
      expect(p.why.text).toMatch(/compute \+ .* waiting for memory at/);
      // The why's latency is the headline's (both the loads'), and its parts add up to it.
      expect(p.why.latencyNs / p.memoryLatencyNs).toBeCloseTo(1, 6);
      expect(p.why.idleNs + p.why.controllersNs + p.why.linksNs + p.why.crossbarNs).toBeCloseTo(p.why.latencyNs, 6);
    }
    expect(Object.keys(json.policies[0].decisions[0])).toEqual(['window', 'kind', 'explanation', 'pages', 'threads', 'toNodes']);
    expect(json.policies[1].mcImbalancePct).toBeLessThan(json.policies[0].mcImbalancePct);
  });

  it('diagnose on a recording without access samples says it was not diagnosed (not "no issue"), as the app does', async () => {
    const { status, out } = await cli('diagnose', SAMPLE('recorded-testload-4threads'));
    expect(status).toBe(0);
    expect(out).toMatch(/not diagnosed: diagnostics need memory-access samples/);
    expect(out).not.toMatch(/no issue above its threshold/);
    const json = JSON.parse((await cli('diagnose', SAMPLE('recorded-testload-4threads'), '--json')).out);
    expect(json.unavailable).toMatch(/no issue was looked for/);
    expect(JSON.parse((await cli('diagnose', SAMPLE('streamcluster-hotspot'), '--json')).out).unavailable).toBeNull();
  });

  it('analyze --markdown re-targets onto a preset and says so', async () => {
    const { status, out } = await cli('analyze', SAMPLE('partitioned'), '--machine', 'amd-genoa-2s-nps1', '--policy', 'first-touch', '--markdown', '--window-ms', '200');
    expect(status).toBe(0);
    expect(out).toMatch(/^## partitioned\.numascope/);
    expect(out).toMatch(/machine amd-genoa-2s-nps1 \(2 nodes/);
    expect(out).toMatch(/re-targeted from "amd-opteron-8385-4p"/);
    expect(out).toMatch(/\| policy \| local % \|/);
  });

  it('compare prints B − A per policy', async () => {
    const { status, out } = await cli('compare', SAMPLE('streamcluster-hotspot'), SAMPLE('partitioned'), '--policy', 'first-touch', '--json');
    expect(status).toBe(0);
    const json = JSON.parse(out);
    expect(Object.keys(json)).toEqual(['a', 'b', 'work', 'deltas']);
    // Two different programs compared by work (per DRAM access), and said to be different.
    expect(json.work.unit).toBe('DRAM accesses');
    expect(json.work.warnings.some((w: string) => w.startsWith('different programs'))).toBe(true);
    const pa = json.a.policies[0];
    const pb = json.b.policies[0];
    expect(json.deltas[0].speedupBOverAPerWork).toBeCloseTo(pa.predictedUs / json.work.aWork / (pb.predictedUs / json.work.bWork), 12);
    expect(json.deltas[0].policy).toBe('first-touch');
    expect(json.deltas[0].localAccessRatio).toBeCloseTo(json.b.policies[0].localAccessRatio - json.a.policies[0].localAccessRatio, 12);
    // Speedup of B over A: a ratio of predicted times, not a difference of speedups.
    expect(json.deltas[0].speedupBOverA).toBeCloseTo(json.a.policies[0].predictedUs / json.b.policies[0].predictedUs, 12);
    expect('predictedSpeedup' in json.deltas[0]).toBe(false);
  });

  it('analyze makes the converged placement the headline, with the replay beside it; --no-steady-state the replay', async () => {
    const guest = SAMPLE('recorded-guest-hinting-4nodes');
    const { status, out } = await cli('analyze', guest, '--policy', 'first-touch', '--policy', 'carrefour', '--json');
    expect(status).toBe(0);
    const json = JSON.parse(out);
    expect(json.headline).toBe('steady-state');
    const carrefour = json.policies.find((p: { policy: string }) => p.policy === 'carrefour');
    expect(carrefour.steadyState.basis).toBe('continued');
    // The replay ran out of accesses before Carrefour acted; its steady state did not.
    expect(carrefour.replay.mcImbalancePct).toBeGreaterThan(150);
    expect(carrefour.replay.convergedAtWindow).toBeNull();
    expect(carrefour.mcImbalancePct).toBeLessThan(45);
    const text = await cli('analyze', guest, '--policy', 'first-touch', '--policy', 'carrefour');
    expect(text.out).toMatch(/headline: steady state/);
    expect(text.out).toMatch(/recorded 6\.\d{3} s; speedup = observed's predicted time \/ the policy's/);
    expect(text.out).toMatch(/predicted s\s+speedup\s+pages to move\s+replay s\s+replay speedup\s+converged at/);
    // --steady-state is accepted (the default).
    expect((await cli('analyze', guest, '--policy', 'carrefour', '--steady-state', '--json')).out).toBe(
      (await cli('analyze', guest, '--policy', 'carrefour', '--json')).out,
    );
    const replay = JSON.parse((await cli('analyze', guest, '--policy', 'first-touch', '--policy', 'carrefour', '--no-steady-state', '--json')).out);
    expect(replay.headline).toBe('replay');
    const c = replay.policies.find((p: { policy: string }) => p.policy === 'carrefour');
    expect(c.steadyState).toBeNull();
    expect(c.mcImbalancePct).toBe(c.replay.mcImbalancePct);
    expect(c.predictedSpeedup).toBe(c.replay.predictedSpeedup);
  });

  it('--baseline first-touch measures speedups against first-touch', async () => {
    const json = JSON.parse((await cli('analyze', SAMPLE('recorded-guest-hinting-4nodes'), '--policy', 'observed', '--policy', 'first-touch', '--baseline', 'first-touch', '--json')).out);
    expect(json.baseline).toBe('first-touch');
    const [observed, ft] = json.policies;
    expect(ft.predictedSpeedup).toBe(1);
    expect(observed.predictedSpeedup).toBeCloseTo(ft.predictedUs / observed.predictedUs, 12);
    expect(observed.predictedUs).toBeCloseTo(json.recordedUs, 3);
  });

  it('presets --json lists every preset with provenance', async () => {
    const { status, out } = await cli('presets', '--json');
    expect(status).toBe(0);
    const presets = JSON.parse(out) as Array<{ id: string; memoryBytes: Array<number | null>; figures: Array<{ kind: string; provenance: string }> }>;
    const ids = presets.map((p) => p.id);
    expect(ids).toContain('intel-spr-2s-snc4');
    expect(ids).toContain('cxl-expander');
    // The published figures come with their kind and provenance (theoretical, sustained, measured).
    const opteron = presets.find((p) => p.id === 'amd-opteron-8385-4p')!;
    expect(opteron.memoryBytes.every((b) => typeof b === 'number' && b > 0)).toBe(true);
    expect(presets.some((p) => p.figures.some((f) => f.kind === 'sustained' && f.provenance.length > 0))).toBe(true);
  });

  it('analyses a page-fault-only recording with the placement-only estimate by default, and says so', async () => {
    const { status, out } = await cli('analyze', SAMPLE('recorded-testload-4threads'));
    expect(status).toBe(0);
    expect(out).toMatch(/^ {2}ESTIMATED: this trace has no memory-access samples/m);
    expect(out).toMatch(/memory traffic by node \(observed, ESTIMATED\)/);
  });

  it('with --access-estimate off, says access data is unavailable for a page-fault-only recording (exit 1)', async () => {
    const { status, err } = await cli('analyze', SAMPLE('recorded-testload-4threads'), '--access-estimate', 'off');
    expect(status).toBe(1);
    expect(err).toMatch(/no memory-access samples to replay: 9307 page-fault rows/);
  });

});

// Two blocks, each under the 200-line function limit (eslint.config.js).
describe('numascope-analyze: errors, options, plans', () => {
  it('names the problem in errors', async () => {
    expect((await cli('analyze', SAMPLE('partitioned'), '--machine', 'nope')).err).toMatch(/--machine "nope" is neither a preset \(amd-opteron-8385-4p/);
    const lru = await cli('analyze', SAMPLE('partitioned'), '--policy', 'lru');
    expect(lru.err).toMatch(/unknown policy "lru"/);
    expect(lru.status).toBe(2);
    expect((await cli('analyze', SAMPLE('partitioned'), '--window-ms', '-3')).err).toMatch(/--window-ms must be a positive number, got "-3"/);
    expect((await cli('analyze', '/nonexistent.numascope')).err).toMatch(/cannot read trace \/nonexistent\.numascope: ENOENT/);
    expect((await cli('frobnicate')).status).toBe(2);
  });

  it('every command has --help; --opt=value, -- and the errors of the option parser (node:util parseArgs)', async () => {
    for (const command of ['analyze', 'compare', 'plan', 'diagnose', 'code', 'presets']) {
      const help = await cli(command, '--help');
      expect(help.status, command).toBe(0);
      expect(help.out, command).toContain(`numascope-analyze ${command} `);
      expect(help.out, command).toContain('-h, --help');
    }
    // Each command's help lists its own options only.
    expect((await cli('plan', '-h')).out).toContain('--system-weights');
    expect((await cli('analyze', '--help')).out).not.toContain('--system-weights');
    expect((await cli('presets', '--help')).out).not.toContain('--machine');
    // --opt=value is --opt value; -- ends the options.
    const spaced = JSON.parse((await cli('analyze', SAMPLE('partitioned'), '--policy', 'interleave', '--window-ms', '200', '--json')).out);
    const joined = JSON.parse((await cli('analyze', '--policy=interleave', '--window-ms=200', '--json', '--', SAMPLE('partitioned'))).out);
    expect(joined.windowMs).toBe(200);
    expect(joined).toEqual(spaced);
    const unknown = await cli('analyze', SAMPLE('partitioned'), '--frobnicate');
    expect(unknown.status).toBe(2);
    expect(unknown.err).toMatch(/unknown option --frobnicate \(numascope-analyze analyze --help lists its options\)/);
    const notHere = await cli('analyze', SAMPLE('partitioned'), '--fix', 'x');
    expect(notHere.status).toBe(2);
    expect(notHere.err).toMatch(/option --fix is not used by analyze/);
    const noValue = await cli('analyze', SAMPLE('partitioned'), '--machine');
    expect(noValue.status).toBe(2);
    expect(noValue.err).toMatch(/--machine.*needs a value|argument missing/);
    expect((await cli('analyze', SAMPLE('partitioned'), '--json', '--markdown')).err).toMatch(/pick one output format/);
  });

  it('--from-ms/--to-ms replay only the windows in the range, and say so', async () => {
    const whole = JSON.parse((await cli('analyze', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave', '--json')).out);
    expect(whole.range).toBeNull();
    const { status, out } = await cli('analyze', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave', '--from-ms', '450', '--to-ms', '1020', '--json');
    expect(status).toBe(0);
    const json = JSON.parse(out);
    expect(json.range).toEqual({ requestedFromUs: 450000, requestedToUs: 1020000, fromUs: 400000, toUs: 1100000, firstWindow: 4, windows: 7, totalWindows: whole.windowCount });
    expect(json.windowCount).toBe(7);
    const il = json.policies.find((p: { policy: string }) => p.policy === 'interleave');
    const wholeIl = whole.policies.find((p: { policy: string }) => p.policy === 'interleave');
    expect(il.windows.map((w: { predictedUs: number }) => w.predictedUs)).toEqual(wholeIl.windows.slice(4, 11).map((w: { predictedUs: number }) => w.predictedUs));
    // Only --from-ms: to the end.
    const tail = JSON.parse((await cli('analyze', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave', '--from-ms', '1500', '--json')).out);
    expect(tail.range.firstWindow).toBe(15);
    expect(tail.windowCount).toBe(whole.windowCount - 15);
    const text = await cli('analyze', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave', '--from-ms', '450', '--to-ms', '1020');
    expect(text.out).toContain('7 windows of 100 ms (400–1100 ms only: windows 4–10 of 19)');
    const bad = await cli('analyze', SAMPLE('streamcluster-hotspot'), '--from-ms', '500', '--to-ms', '400');
    expect(bad.status).toBe(2);
    expect(bad.err).toMatch(/--to-ms \(400\) must be greater than --from-ms \(500\)/);
    expect((await cli('analyze', SAMPLE('streamcluster-hotspot'), '--from-ms', '-3')).status).toBe(2);
    const outside = await cli('analyze', SAMPLE('streamcluster-hotspot'), '--from-ms', '99000');
    expect(outside.status).toBe(2);
    expect(outside.err).toMatch(/time range from 99000 ms to the end overlaps no window of the trace \(it covers 0–1818.182 ms\)/);
  });

  it('reads a machine file and a manual placement', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'numascope-cli-'));
    const manual = join(dir, 'manual.json');
    writeFileSync(manual, JSON.stringify({ pages: [{ firstPage: 0, lastPage: 99, node: 1 }] }));
    const { status, out } = await cli('analyze', SAMPLE('partitioned'), '--policy', 'manual', '--manual', manual, '--json');
    expect(status).toBe(0);
    expect(JSON.parse(out).policies[0].replay.migratedPages).toBeGreaterThan(0);
    expect(JSON.parse(out).policies[0].pagesToMove).toBeGreaterThan(0);
  });

  it('plan of a recording with allocation sites adds object entries for numascope run --plan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'numascope-plan-'));
    const out = join(dir, 'plan.json');
    const result = await cli('plan', SAMPLE('recorded-alloc-sites'), '--policy', 'first-touch', '-o', out);
    expect(result.status).toBe(0);
    expect(result.out).toMatch(/wrote .*plan\.json \(4 allocation sites for numascope run --plan\)/);
    const plan = JSON.parse(readFileSync(out, 'utf8'));
    expect(plan.objects).toHaveLength(4);
    expect(plan.objects[0].frames[0].module).toMatch(/alloc_sites$/);
    // A trace without allocation tables gets none.
    const plain = join(dir, 'plain.json');
    expect((await cli('plan', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave', '-o', plain)).status).toBe(0);
    expect(JSON.parse(readFileSync(plain, 'utf8')).objects).toBeUndefined();
  });

  it('plan writes a plan for one policy, and names what is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'numascope-plan-'));
    const out = join(dir, 'plan.json');
    const result = await cli('plan', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave', '-o', out);
    expect(result.status).toBe(0);
    const plan = JSON.parse(readFileSync(out, 'utf8'));
    expect(plan.format).toBe('numascope-plan');
    expect(plan.source.policy).toBe('interleave');
    // A plan reaches the policy's steady-state placement (on the guest recording Carrefour's replay
    // ran out of accesses: its final placement is far from its steady state).
    const carrefourPlan = join(dir, 'carrefour.json');
    expect((await cli('plan', SAMPLE('recorded-guest-hinting-4nodes'), '--policy', 'carrefour', '-o', carrefourPlan)).status).toBe(0);
    const cp = JSON.parse(readFileSync(carrefourPlan, 'utf8'));
    const trace = readTrace(new Uint8Array(readFileSync(SAMPLE('recorded-guest-hinting-4nodes'))));
    const carrefour = analyze(trace, { policies: ['carrefour'] }).policies[0]!;
    const opts = { createdAt: cp.createdAt, traceName: 'recorded-guest-hinting-4nodes.numascope', seed: 1 };
    const steady = buildPlan(trace, carrefour.replay, { ...opts, placement: carrefour.placement, placementLabel: 'steady-state (converged) placement' });
    const finalOnly = buildPlan(trace, carrefour.replay, opts);
    expect(cp.expected).toEqual(steady.expected);
    expect(cp.pageRanges).toEqual(steady.pageRanges);
    expect(steady.expected.pagesToMove).not.toBe(finalOnly.expected.pagesToMove);
    expect(cp.pageRanges[0].reason).toMatch(/steady-state \(converged\) placement of the carrefour replay/);
    expect((await cli('plan', SAMPLE('streamcluster-hotspot'), '-o', out)).err).toMatch(/plan needs exactly one --policy NAME \(or --fix FIX_ID\)/);
    expect((await cli('plan', SAMPLE('streamcluster-hotspot'), '--policy', 'interleave')).err).toMatch(/plan needs -o plan\.json/);
  });
});

describe('numascope-analyze diagnose', () => {
  it('--json lists issues ranked with site, fix and predicted gain', async () => {
    const { status, out } = await cli('diagnose', SAMPLE('shared-readmostly'), '--json');
    expect(status).toBe(0);
    const json = JSON.parse(out);
    expect(Object.keys(json)).toEqual(['trace', 'baseline', 'durationMs', 'thresholds', 'cacheLine', 'notes', 'unavailable', 'issues']);
    expect(json.cacheLine.available).toBe(false);
    const first = json.issues[0];
    expect(first.rank).toBe(1);
    expect(first.kind).toBe('page-sharing');
    expect(first.site).toBe('load_table');
    expect(first.fix.kind).toBe('replicate');
    expect(first.fix.predictedSpeedup).toBeGreaterThan(1);
    for (let k = 1; k < json.issues.length; k++) expect(json.issues[k].severity).toBeLessThanOrEqual(json.issues[k - 1].severity);
  });
  it('--threshold changes a threshold; a bad one is a usage error', async () => {
    const high = await cli('diagnose', SAMPLE('shared-readmostly'), '--json', '--threshold', 'remoteAccessPerMs=1e9');
    expect(JSON.parse(high.out).issues).toEqual([]);
    const bad = await cli('diagnose', SAMPLE('shared-readmostly'), '--threshold', 'nope=3');
    expect(bad.status).toBe(2);
    expect(bad.err).toMatch(/--threshold must be NAME=N/);
  });
  it('--markdown prints a ranked table', async () => {
    const { status, out } = await cli('diagnose', SAMPLE('shared-readmostly'), '--markdown');
    expect(status).toBe(0);
    expect(out).toMatch(/^## Diagnosis of shared-readmostly.numascope/);
    expect(out).toMatch(/\| 1 \| page-sharing \|.*\| load_table \| replicate:.*\| no: replication is a code change.*\| predicted /);
  });
  it('--json gives each fix a stable id, and why a code change has no plan', async () => {
    const a = JSON.parse((await cli('diagnose', SAMPLE('two-groups'), '--json')).out);
    const b = JSON.parse((await cli('diagnose', SAMPLE('two-groups'), '--json')).out);
    expect(a.issues.map((i: { fix: { id: string } }) => i.fix.id)).toEqual(['page-sharing:r32/page-interleave', 'page-sharing:r33/page-interleave']);
    expect(b.issues.map((i: { fix: { id: string } }) => i.fix.id)).toEqual(a.issues.map((i: { fix: { id: string } }) => i.fix.id));
    expect(a.issues[0].fix.noPlan).toBeNull();
    const r = JSON.parse((await cli('diagnose', SAMPLE('shared-readmostly'), '--json')).out);
    expect(r.issues[0].fix).toMatchObject({ id: 'page-sharing:r32/replicate', planable: false, noPlan: expect.stringMatching(/code change/) });
  });
  it('prints the code under each object\'s issue (first touched by, accessed by), --json has it; without stacks, why not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'numascope-diagcode-'));
    writeFileSync(join(dir, 'cited.numascope'), textTraceBytes(diagnoseCodeSpec(true)));
    writeFileSync(join(dir, 'bare.numascope'), textTraceBytes(diagnoseCodeSpec(false)));
    const { status, out } = await cli('diagnose', join(dir, 'cited.numascope'));
    expect(status).toBe(0);
    expect(out).toContain('\n   first touched by init_grid (grid.c:41) on node 0 by thread 0 (tid 1000): 8 first touches (est.), 8 pages sampled\n');
    expect(out).toContain('\n   accessed by worker (diagprog.c:92): 60000 accesses, 100.0% remote\n');
    expect(out).toMatch(/fix remote-access:a0\/block-wise-interleave: .*; in the code: initialise it in parallel in init_grid \(grid\.c:41\), each thread its own block/);
    const json = JSON.parse((await cli('diagnose', join(dir, 'cited.numascope'), '--json')).out);
    expect(json.issues[0].code).toMatchObject({ available: true, object: 'alloc_grid grid.c:30', firstTouch: [{ function: 'init_grid', fileLine: 'grid.c:41', node: 0, thread: 0, tid: 1000 }] });
    const bare = await cli('diagnose', join(dir, 'bare.numascope'));
    expect(bare.out).toContain('\n   code: not available: no sample has a call stack');
    expect(JSON.parse((await cli('diagnose', join(dir, 'bare.numascope'), '--json')).out).issues[0].code.available).toBe(false);
  });
});

describe('numascope-analyze plan --fix', () => {
  it('writes the plan of one diagnosed fix: the object\'s shared pages interleaved over every node', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'numascope-fixplan-'));
    const out = join(dir, 'plan.json');
    const result = await cli('plan', SAMPLE('two-groups'), '--fix', 'page-sharing:r33/page-interleave', '-o', out);
    expect(result.err).toBe('');
    expect(result.status).toBe(0);
    const plan = JSON.parse(readFileSync(out, 'utf8'));
    expect(plan.source.policy).toBe('diagnose:page-sharing:r33/page-interleave');
    expect(plan.pageRanges.length).toBeGreaterThan(0);
    for (const r of plan.pageRanges) {
      expect(r.action).toBe('interleave');
      expect(r.toNodes).toEqual(plan.target.machine.nodeIds);
    }
    // Region 33's pages only: the ranges lie inside it (the region starts at 0x7f3a08a00000, 2048 pages).
    const start = 0x7f3a08a00000n;
    for (const r of plan.pageRanges) {
      expect(BigInt(r.start) >= start && BigInt(r.end) <= start + 2048n * 4096n).toBe(true);
    }
  });
  it('refuses a code-change fix with the reason, an unknown id with the list, and --fix with --policy', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'numascope-fixplan-')), 'plan.json');
    const replicate = await cli('plan', SAMPLE('shared-readmostly'), '--fix', 'page-sharing:r32/replicate', '-o', out);
    expect(replicate.status).toBe(1);
    expect(replicate.err).toMatch(/has no plan: replication is a code change/);
    const unknown = await cli('plan', SAMPLE('two-groups'), '--fix', 'nope', '-o', out);
    expect(unknown.status).toBe(1);
    expect(unknown.err).toMatch(/no diagnosed fix "nope"; the fixes of this trace are: page-sharing:r32\/page-interleave, page-sharing:r33\/page-interleave/);
    const both = await cli('plan', SAMPLE('two-groups'), '--fix', 'x', '--policy', 'interleave', '-o', out);
    expect(both.status).toBe(2);
    expect(both.err).toMatch(/either --policy NAME or --fix FIX_ID/);
  });
});

describe('numascope-analyze code', () => {
  const dir = mkdtempSync(join(tmpdir(), 'numascope-code-'));
  const file = join(dir, 'code.numascope');
  writeFileSync(file, textTraceBytes(CODE_TRACE));

  it('prints the busiest functions with file:line, accesses, remote %, latency, first touches (weighted) by node, pages sampled and objects', async () => {
    const { status, out, err } = await cli('code', file);
    expect(err).toBe('');
    expect(status).toBe(0);
    expect(out).toMatch(/^code of code\.numascope, by code site .*: 12 of 13 samples have a call stack; 500 accesses and 8 first touches \(without a stack, attributed to no function: 100 accesses, 0 first touches\)/);
    expect(out).toContain('latency: PMU cycles / 2 GHz');
    const lines = out.trimEnd().split('\n');
    const head = lines.findIndex((l) => l.startsWith('function'));
    expect(lines[head]).toMatch(/^function\s+file:line\s+accesses\s+remote %\s+latency ns\s+first touches \(est\.\) by node\s+pages sampled\s+objects$/);
    const rows = lines.slice(head + 1).map((l) => l.split(/\s{2,}/));
    expect(rows).toEqual([
      ['compute', 'app.c:70', '400', '25.0', '150', '–', '–', 'alloc_a app.c:5; alloc_b app.c:6'],
      // Page 6 has two fault rows: 4 first touches, 3 pages sampled.
      ['fill_c', 'app.c:30', '0', '–', '–', '2:4', '3', 'alloc_c app.c:7'],
      ['init_a', 'app.c:10', '0', '–', '–', '0:2', '2', 'alloc_a app.c:5'],
      ['init_b', 'app.c:20', '0', '–', '–', '1:2', '2', 'alloc_b app.c:6'],
    ]);
    const two = await cli('code', file, '--limit', '2');
    expect(two.out).toContain('… 2 more functions (--limit N)');
    const self = await cli('code', file, '--by', 'self', '--op', 'fault');
    expect(self.out).toMatch(/^memset\s+–\s+0\s+–\s+–\s+1:2\s+2\s+alloc_b app\.c:6$/m);
  });

  it('--json: the function rows, totals and clock; filters by thread tid, node and time', async () => {
    const { status, out } = await cli('code', file, '--json');
    expect(status).toBe(0);
    const json = JSON.parse(out);
    expect(Object.keys(json)).toEqual(['trace', 'available', 'reason', 'by', 'filters', 'clock', 'totals', 'functionCount', 'functions']);
    expect(json).toMatchObject({ available: true, by: 'site', functionCount: 4, clock: { ghz: 2 } });
    expect(json.functions.map((f: { function: string }) => f.function)).toEqual(['compute', 'fill_c', 'init_a', 'init_b']);
    expect(json.functions[3]).toMatchObject({ function: 'init_b', location: 'app.c:20', firstTouches: 2, firstTouchesByNode: [{ node: 1, firstTouches: 2 }], pagesSampled: 2, firstTouchPages: [{ node: 1, pages: 2 }] });
    expect(json.functions[1]).toMatchObject({ function: 'fill_c', firstTouches: 4, firstTouchesByNode: [{ node: 2, firstTouches: 4 }], pagesSampled: 3 });
    // Thread 1 has tid 1001 (the helper numbers tids from 1000).
    const t1 = JSON.parse((await cli('code', file, '--thread', '1001', '--json')).out);
    expect(t1.functions.map((f: { function: string }) => f.function)).toEqual(['init_b']);
    expect(t1.filters.threads).toEqual([1]);
    const n2 = JSON.parse((await cli('code', file, '--node', '2', '--json')).out);
    expect(n2.functions.map((f: { function: string }) => f.function)).toEqual(['fill_c']);
    const late = JSON.parse((await cli('code', file, '--from-ms', '0.011', '--to-ms', '0.013', '--json')).out);
    expect(late.functions.map((f: { function: string; accesses: number }) => [f.function, f.accesses])).toEqual([['compute', 200]]);
  });

  it('a trace without stacks says so with the code-locations reason and exits 0 with an empty table', async () => {
    const text = await cli('code', SAMPLE('recorded-alloc-sites'));
    expect(text.status).toBe(0);
    expect(text.out).toMatch(/^code of recorded-alloc-sites\.numascope: no code locations in this trace: format version 2 file: code locations were not recorded \(added in version 3\)\nfunction\s+file:line/);
    expect(text.out.trimEnd().split('\n')).toHaveLength(2);
    const json = await cli('code', SAMPLE('streamcluster-hotspot'), '--json');
    expect(json.status).toBe(0);
    expect(JSON.parse(json.out)).toEqual({ available: false, reason: 'synthetic trace: no code made the accesses, so samples have no call stacks' });
  });

  it('usage errors name the option', async () => {
    const by = await cli('code', file, '--by', 'caller');
    expect(by.status).toBe(2);
    expect(by.err).toMatch(/--by must be site or self, got "caller"/);
    expect((await cli('code', file, '--limit', '0')).err).toMatch(/--limit must be at least 1/);
    expect((await cli('code', file, '--op', 'read')).err).toMatch(/--op must be load, store or fault/);
    expect((await cli('code', file, '--thread', '77')).err).toMatch(/--thread 77: no thread of the trace has that tid/);
    expect((await cli('code', file, '--node', '9')).err).toMatch(/--node 9: not a node of machine/);
    expect((await cli('code', file, '--machine', 'intel-spr-2s')).err).toMatch(/option --machine is not used by code/);
    expect((await cli('analyze', file, '--by', 'self')).err).toMatch(/option --by is not used by analyze/);
  });
});
