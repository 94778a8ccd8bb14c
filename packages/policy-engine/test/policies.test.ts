import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { describePolicy, firstTouchPageNodes, getPolicy, listPolicies, manualPolicy, needsPlacement, POLICY_DESCRIPTORS, POLICY_IDS, policyForms, policyLabel, runsOnEstimate } from '../src/policies/index.js';
import { DECISION_KINDS } from '../src/model/contract.js';
import { textTrace } from './helpers/text-trace.js';

/** Rows "time_us thread page op weight" for every (thread, page) pair. */
function allPairs(threads: number[], pages: number[], op: string, weight: number, timeUs = 10): string {
  return ['time_us thread page op weight', ...threads.flatMap((t) => pages.map((p) => `${timeUs} ${t} ${p} ${op} ${weight}`))].join('\n');
}

const SIXTEEN = Array.from({ length: 16 }, (_, i) => i);

/**
 * Streamcluster-like: 16 threads, 4 per node on the Carrefour machine; thread 0 first-touched a
 * shared 16-page array, so it all sits on node 0, and every thread reads all of it.
 */
const streamclusterLike = () =>
  textTrace({
    machine: 'amd-opteron-8385-4p',
    threads: ['thread node', ...SIXTEEN.map((t) => `${t} ${Math.floor(t / 4)}`)].join('\n'),
    pages: ['page node first_touch_thread', ...SIXTEEN.map((p) => `${p} 0 0`)].join('\n'),
    samples: allPairs(SIXTEEN, SIXTEEN, 'load', 20_000),
    durationUs: 100_000,
  });

/** Partitioned: one thread per node, each reading and writing the 4 pages it first-touched. */
const partitioned = () =>
  textTrace({
    machine: 'amd-opteron-8385-4p',
    threads: `thread node
                0     0
                1     1
                2     2
                3     3`,
    pages: ['page node first_touch_thread', ...SIXTEEN.map((p) => `${p} ${Math.floor(p / 4)} ${Math.floor(p / 4)}`)].join('\n'),
    samples: [
      'time_us thread page op weight',
      ...SIXTEEN.flatMap((p) => [`10 ${Math.floor(p / 4)} ${p} load 400000`, `20 ${Math.floor(p / 4)} ${p} store 100000`]),
    ].join('\n'),
    durationUs: 100_000,
  });

describe('policies on the Carrefour machine', () => {
  it('hot spot: first-touch imbalance far above 35 %, interleave far below', () => {
    const result = analyze(streamclusterLike(), { policies: ['first-touch', 'interleave', 'observed'], windowMs: 100 });
    const by = Object.fromEntries(result.policies.map((p) => [p.policy, p]));
    expect(by['first-touch']!.mcImbalancePct).toBeGreaterThan(150); // all load on one of 4 controllers: 200 %
    expect(by['interleave']!.mcImbalancePct).toBeLessThan(5);
    expect(by['interleave']!.predictedSpeedup).toBeGreaterThan(1);
    expect(by['observed']!.mcImbalancePct).toBeCloseTo(by['first-touch']!.mcImbalancePct, 6);
  });

  it('partitioned: interleave predicts a slowdown against first-touch', () => {
    const result = analyze(partitioned(), { policies: ['first-touch', 'interleave'], windowMs: 100 });
    const [ft, il] = result.policies;
    expect(ft!.localAccessRatio).toBe(1);
    expect(il!.localAccessRatio).toBeCloseTo(0.25, 9);
    expect(il!.predictedSpeedup).toBeLessThan(1);
    expect(il!.memoryLatencyNs).toBeGreaterThan(ft!.memoryLatencyNs);
  });

  it('interleave deals pages in address order, deterministically, over a given node set', () => {
    const trace = textTrace({
      machine: 'amd-opteron-8385-4p',
      threads: `thread node
                  0     0`,
      pages: `page node first_touch_thread address
                0    0    0                  0x7f0000003000
                1    0    0                  0x7f0000001000
                2    0    0                  0x7f0000002000
                3    0    0                  0x7f0000000000`,
      samples: allPairs([0], [0, 1, 2, 3], 'load', 10),
    });
    const input = buildReplayInput(trace, { windowMs: 10 });
    const replay = getPolicy('interleave:1,2').replay(input, { seed: 1, simulate: simulateWindow });
    // address order: page 3, 1, 2, 0 → nodes 1, 2, 1, 2
    expect(Array.from(replay.finalPlacement.pageNode)).toEqual([2, 2, 1, 1]);
    expect(replay.migratedPages).toBe(0);
    expect(replay.decisions[0]!.explanation).toMatch(/4 pages interleaved in address order over nodes 1,2/);
  });

  it('manual moves what it is given and counts the migration', () => {
    const input = buildReplayInput(partitioned(), { windowMs: 100 });
    const replay = manualPolicy({
      threads: [{ thread: 3, node: 0 }],
      pages: [{ firstPage: 12, lastPage: 15, node: 0 }],
    }).replay(input, { seed: 1, simulate: simulateWindow });
    expect(replay.migratedPages).toBe(4);
    expect(replay.migratedBytes).toBe(4 * 4096);
    expect(replay.finalPlacement.threadNode[3]).toBe(0);
    // thread 3 and its pages now both on node 0: still all local, node 0 carries two threads' traffic
    expect(replay.windows[0]!.localAccessRatio).toBe(1);
    expect(replay.windows[0]!.mcLoadBytesPerS[3]).toBe(0);
    // The page decision names its pages (the app selects them in the Memory view).
    const moved = replay.decisions.find((d) => d.kind === 'migrate')!;
    expect(Array.from(moved.pageIndices!)).toEqual([12, 13, 14, 15]);
    expect(moved.toNodes).toEqual([0]);
    expect(() => manualPolicy({ pages: [{ firstPage: 0, lastPage: 0, node: 9 }] }).replay(input, { seed: 1, simulate: simulateWindow })).toThrow(
      /node index 9 is not a node/,
    );
  });

  it('observed and the page-only policies follow the recorded thread moves window by window', () => {
    const trace = textTrace({
      machine: 'amd-opteron-8385-4p',
      threads: `thread node
                  0     0`,
      placements: `time_us thread node
                     15000   0      3`,
      pages: `page node first_touch_thread
                0    0    0`,
      samples: `time_us thread page op   weight
                  5000    0      0    load 1000
                  25000   0      0    load 1000`,
      durationUs: 30_000,
    });
    const input = buildReplayInput(trace, { windowMs: 10 });
    const observed = getPolicy('observed').replay(input, { seed: 1, simulate: simulateWindow });
    expect(observed.windows.map((w) => w.localAccessRatio)).toEqual([1, 1, 0]);
    // The thread's move is the program's or the scheduler's: a page policy does not undo it.
    for (const id of ['first-touch', 'interleave:0', 'carrefour']) {
      const replay = getPolicy(id).replay(input, { seed: 1, simulate: simulateWindow });
      expect(replay.windows.map((w) => w.localAccessRatio), id).toEqual([1, 1, 0]);
    }
  });

  it('first-touch puts a page on the node of the cpu its recorded first touch ran on, not where its toucher was seen first', () => {
    // Thread 0 is first seen on node 3, touches page 0 from cpu 0 (node 0) and page 1 with no
    // recorded cpu; the Opteron preset numbers cpus node by node, four per node.
    const trace = textTrace({
      machine: 'amd-opteron-8385-4p',
      threads: `thread node
                  0     3`,
      pages: `page node first_touch_thread first_touch_cpu
                0    0    0                  0
                1    2    0                  -1`,
      samples: `time_us thread page op   weight
                  5000    0      0    load 1000
                  6000    0      1    load 1000`,
      durationUs: 10_000,
    });
    const input = buildReplayInput(trace, { windowMs: 10 });
    expect(Array.from(input.firstTouchNode!)).toEqual([0, -1]);
    expect(Array.from(firstTouchPageNodes(input))).toEqual([0, 3]);
  });

  it('lists every policy and names the valid ones for an unknown id', () => {
    const ids = listPolicies().map((p) => p.id);
    for (const id of ['observed', 'first-touch', 'interleave']) expect(ids).toContain(id);
    expect(() => getPolicy('nope')).toThrow(/unknown policy "nope"; valid policies: .*first-touch/);
    expect(() => getPolicy('manual')).toThrow(/needs a placement/);
  });

  it('describes every policy: the default set is what listPolicies runs, and each descriptor resolves to its code', () => {
    expect(listPolicies().map((p) => p.id)).toEqual([...POLICY_IDS]);
    expect(POLICY_IDS).toEqual(['observed', 'first-touch', 'interleave', 'autonuma', 'carrefour', 'asymsched']);
    for (const d of POLICY_DESCRIPTORS) {
      const policy = needsPlacement(d.id) ? getPolicy(d.id, { placement: { threads: [], pages: [] } }) : getPolicy(d.id);
      expect(policy.id).toBe(d.id);
      expect(policyLabel(d.id)).toBe(d.label);
    }
    expect(POLICY_DESCRIPTORS.filter((d) => !d.needsMeasuredAccesses).map((d) => d.id)).toEqual(['observed', 'first-touch', 'interleave', 'weighted-interleave', 'manual']);
    expect(describePolicy('weighted-interleave:0=9,1=1')?.id).toBe('weighted-interleave');
    expect(describePolicy('interleave:0,2')?.id).toBe('interleave');
    expect(describePolicy('observed:1')).toBeUndefined();
    expect(runsOnEstimate('interleave:1,3')).toBe(true);
    expect(runsOnEstimate('carrefour')).toBe(false);
    expect(runsOnEstimate('nope')).toBe(false);
    expect(policyLabel('interleave:0,2')).toBe('interleave:0,2');
    expect(policyForms()).toEqual([
      ...POLICY_IDS,
      'interleave:N,M,…',
      'weighted-interleave:N=W,M=W,…',
      'weighted-interleave:N,M,…',
      'replicate:read=S,object=TEXT,address=0xA-0xB',
      'weighted-interleave',
      'tiering',
      'replicate',
      'manual',
    ]);
    expect(getPolicy('manual', { placement: { threads: [{ thread: 0, node: 1 }] } }).id).toBe('manual');
  });

  it('lists every decision kind a policy makes', () => {
    const trace = streamclusterLike();
    const result = analyze(trace, { windowMs: 50 });
    for (const p of result.policies) for (const d of p.replay.decisions) expect(DECISION_KINDS).toContain(d.kind);
  });

  it('runs every registered policy on a trace and reports the runner keys', () => {
    const result = analyze(streamclusterLike(), { windowMs: 50 });
    for (const p of result.policies) {
      expect(p.predictedSpeedup).toBeGreaterThan(0);
      expect(Number.isFinite(p.memoryLatencyNs)).toBe(true);
      expect(p.replay.windows.length).toBe(result.windowCount);
      if (['observed', 'first-touch', 'interleave'].includes(p.policy)) expect(p.replay.decisions.length).toBeGreaterThan(0);
    }
    expect(result.policies.map((p) => p.policy)).toEqual(listPolicies().map((p) => p.id));
  });
});
