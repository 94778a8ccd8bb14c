/**
 * NUMA hinting faults as access samples (samples.event `access-fault`, op load/store): what a
 * recording without a PMU gets while automatic NUMA balancing is on (docs/engine.md, "Windows").
 * The engine replays them as measured (thread, page) accesses with relative rates: Carrefour's
 * MAPTU gate cannot be evaluated and is assumed open (said in its decisions); next to PMU samples
 * they are skipped.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { hintingFaultStats } from '../src/engine/windows.js';
import { buildPlan } from '../src/plan/index.js';
import { manualPolicy } from '../src/policies/manual.js';
import { getPreset } from '../src/machine/presets.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { readTrace } from '../src/trace/reader.js';
import type { Trace } from '../src/trace/types.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const PAGES = 64;
const PASSES = 10;
const PASS_US = 100_000;

interface Row {
  t: number;
  thread: number;
  page: number;
  op: 'fault' | 'load' | 'store';
  event: 'page-fault' | 'access-fault' | 'ibs-op';
  ds: 'unknown' | 'local-dram' | 'remote-dram';
  weight: number;
}

/**
 * The testbed's workload: thread 0 (node 0) first-touches 64 pages, then threads 0–3 (nodes 0–3)
 * read them all; each scan pass k catches page p once, from thread (p + k) mod 4.
 */
function rows(extra: Row[] = []): Row[] {
  const out: Row[] = [];
  for (let p = 0; p < PAGES; p++) out.push({ t: p, thread: 0, page: p, op: 'fault', event: 'page-fault', ds: 'unknown', weight: 1 });
  for (let k = 0; k < PASSES; k++) {
    for (let p = 0; p < PAGES; p++) {
      out.push({ t: 1000 + k * PASS_US + p * 100, thread: (p + k) % 4, page: p, op: k % 5 === 4 ? 'store' : 'load', event: 'access-fault', ds: 'unknown', weight: 1 });
    }
  }
  return [...out, ...extra].sort((a, b) => a.t - b.t);
}

function traceOf(r: Row[], mainStartsOn = 0): Trace {
  const machine = getPreset('amd-opteron-8385-4p');
  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.from({ length: 4 }, (_, i) => 100 + i),
    pid: new Int32Array(4).fill(100),
    name: ['main', 'w1', 'w2', 'w3'],
    first_seen_us: new Uint32Array(4),
    last_seen_us: new Uint32Array(4).fill(PASSES * PASS_US),
    migrations: new BigInt64Array(4),
  };
  // The main thread (thread 0) is seen first on node `mainStartsOn`, then on node 0 (where the
  // testload pins it, after `record -p` attached).
  const tpNodes = [mainStartsOn, 1, 2, 3, 0];
  c.thread_placements = {
    time_us: Uint32Array.from([0, 0, 0, 0, 500]),
    thread: Uint32Array.from([0, 1, 2, 3, 0]),
    cpu: Int16Array.from(tpNodes, (n) => machine.nodes[n]!.cpus[0]!),
    node: Int8Array.from(tpNodes),
  };
  c.pages = {
    address: BigUint64Array.from({ length: PAGES }, (_, p) => 0x7f0000000000n + BigInt(p) * 4096n),
    region: new Int32Array(PAGES).fill(-1),
    node: new Int8Array(PAGES),
    page_size: new Uint32Array(PAGES).fill(4096),
    first_touch_us: BigInt64Array.from({ length: PAGES }, (_, p) => BigInt(p)),
    first_touch_thread: new Int32Array(PAGES),
    first_touch_cpu: new Int16Array(PAGES),
  };
  const OPS = ['fault', 'load', 'store'];
  const EVENTS = ['page-fault', 'access-fault', 'ibs-op'];
  const DS = ['unknown', 'local-dram', 'remote-dram'];
  const n = r.length;
  c.samples = {
    time_us: Uint32Array.from(r, (x) => x.t),
    thread: Uint32Array.from(r, (x) => x.thread),
    cpu: Int16Array.from(r, (x) => machine.nodes[x.thread]!.cpus[0]!),
    page: Int32Array.from(r, (x) => x.page),
    offset: new Uint16Array(n),
    op: { values: OPS, indices: Int8Array.from(r, (x) => OPS.indexOf(x.op)) },
    event: { values: EVENTS, indices: Int8Array.from(r, (x) => EVENTS.indexOf(x.event)) },
    data_source: { values: DS, indices: Int8Array.from(r, (x) => DS.indexOf(x.ds)) },
    hops: new Int8Array(n).fill(-1),
    node: new Int8Array(n),
    latency_cycles: new Uint32Array(n),
    stack: new Int32Array(n).fill(-1),
    hitm: new Int8Array(n).fill(-1),
    weight: Uint32Array.from(r, (x) => x.weight),
  };
  const manifest = minimalManifest();
  manifest.origin.kind = 'recorded';
  manifest.machine = machine;
  manifest.capture.durationUs = PASSES * PASS_US + 1000;
  manifest.process = { pid: 100, startTimeTicks: '172045', command: ['numascope-testload'], attached: true, exitCode: null };
  return readTrace(writeTrace(manifest, c));
}

describe('NUMA hinting faults as access samples', () => {
  it('are counted as accesses, the input says so, and first touch still comes from the fault rows', () => {
    const input = buildReplayInput(traceOf(rows()), { windowMs: 100 });
    expect(input.accessSource).toBe('hinting-faults');
    expect(input.estimate).toBeUndefined();
    let loads = 0;
    let stores = 0;
    for (let w = 0; w < input.windows.length; w++) {
      const win = input.windows.get(w);
      for (let i = 0; i < win.page.length; i++) {
        loads += win.loads[i]!;
        stores += win.stores[i]!;
      }
    }
    expect(loads + stores).toBe(PAGES * PASSES);
    expect(stores).toBe(PAGES * 2);
    expect(Array.from(input.firstTouchThread)).toEqual(Array(PAGES).fill(0));
    expect(input.notes!.join('\n')).toMatch(/access samples are 640 NUMA hinting faults.*absolute rates.*relative/s);
  });

  it('windows shorter than a few scan passes: a note says each page is seen from one thread and which window length shows sharing', () => {
    const short = analyze(traceOf(rows()), { policies: ['carrefour'], windowMs: 100 });
    expect(short.notes.join('\n')).toMatch(/catch a page about every 100 ms \(median\), so a 100 ms window sees each page from one thread at most.*--window-ms 400 or more/s);
    // ...which is what Carrefour then does: it migrates each page to its one accessor, no interleaving.
    expect(short.policies[0]!.replay.decisions.some((d) => d.kind === 'interleave')).toBe(false);
    const long = analyze(traceOf(rows()), { policies: ['carrefour'], windowMs: 500 });
    expect(long.notes.join('\n')).not.toMatch(/catch a page about every/);
  });

  it('by default the window spans about four scan passes (chosen from the trace, said in a note); an explicit window wins', () => {
    const stats = hintingFaultStats(traceOf(rows()))!;
    expect(stats).toEqual({ rows: PAGES * PASSES, otherAccessRows: 0, medianGapUs: 100_000, suggestedWindowMs: 400 });
    const auto = analyze(traceOf(rows()), { policies: ['carrefour'] });
    expect(auto.windowMs).toBe(400);
    expect(auto.notes.join('\n')).toMatch(/window length 400 ms chosen for NUMA hinting faults: about four scan passes \(the median time between two hinting faults on a page is 100 ms\)/);
    expect(auto.policies[0]!.replay.decisions.some((d) => d.kind === 'interleave')).toBe(true);
    expect(analyze(traceOf(rows()), { policies: ['carrefour'], windowMs: 100 }).windowMs).toBe(100);
    // PMU traces keep the default.
    const asPmu = rows().map((r) => (r.event === 'access-fault' ? { ...r, event: 'ibs-op' as const, ds: 'local-dram' as const } : r));
    expect(hintingFaultStats(traceOf(asPmu))).toBeNull();
    expect(analyze(traceOf(asPmu), { policies: ['observed'] }).windowMs).toBe(100);
  });

  it('Carrefour: the MAPTU gate is assumed open (and said so); pages read from 4 nodes are interleaved off node 0', () => {
    const result = analyze(traceOf(rows()), { policies: ['carrefour'], windowMs: 1000 });
    expect(result.accessSource).toBe('hinting-faults');
    const decisions = result.policies[0]!.replay.decisions;
    expect(decisions.some((d) => /Carrefour off/.test(d.explanation))).toBe(false);
    expect(decisions.find((d) => d.kind === 'enable' && /interleaving on/.test(d.explanation))!.explanation).toMatch(/MAPTU unknown: the access samples are NUMA hinting faults/);
    const moved = decisions.filter((d) => d.kind === 'interleave').reduce((s, d) => s + (d.pages ?? 0), 0);
    expect(moved).toBeGreaterThan(PAGES / 4);
    const after = result.policies[0]!.replay.finalPlacement.pageNode;
    const perNode = [0, 1, 2, 3].map((n) => after.filter((x) => x === n).length);
    expect(perNode[0]).toBeLessThan(PAGES);
    expect(perNode.filter((c) => c > 0).length).toBeGreaterThanOrEqual(3);
    // ...and the plan the testbed applies carries those moves.
    const plan = buildPlan(traceOf(rows()), result.policies[0]!.replay, { createdAt: '2026-11-21T20:00:00Z' });
    // (the plan describes the spread as interleave ranges: docs/plan-format.md)
    const after2 = plan.expected!.pagesPerNodeAfter;
    expect(Object.keys(after2).sort()).toEqual(['0', '1', '2', '3']);
    expect(Object.values(after2).reduce((a, b) => a + b, 0)).toBe(PAGES);
    expect(Math.max(...Object.values(after2))).toBeLessThan(PAGES / 2);
    expect(plan.expected!.pagesToMove).toBeGreaterThan(PAGES / 2);
  });

  it('the same rows as PMU samples at a low rate leave Carrefour off: the gate is skipped only for hinting faults', () => {
    const asPmu = rows().map((r) => (r.event === 'access-fault' ? { ...r, event: 'ibs-op' as const, ds: 'local-dram' as const } : r));
    const result = analyze(traceOf(asPmu), { policies: ['carrefour'] });
    expect(result.accessSource).toBeNull();
    const decisions = result.policies[0]!.replay.decisions;
    expect(decisions.every((d) => /Carrefour off: MAPTU 0\.0 accesses\/µs < 50/.test(d.explanation))).toBe(true);
  });

  it('next to PMU samples they are skipped, with a note, and never added up', () => {
    const pmu: Row[] = Array.from({ length: 40 }, (_, i) => ({ t: 2000 + i * 1000, thread: i % 4, page: i % PAGES, op: 'load', event: 'ibs-op', ds: 'remote-dram', weight: 1000 }));
    const input = buildReplayInput(traceOf(rows(pmu)), { windowMs: 100 });
    expect(input.accessSource).toBeUndefined();
    let total = 0;
    for (let w = 0; w < input.windows.length; w++) {
      const win = input.windows.get(w);
      for (let i = 0; i < win.page.length; i++) total += win.loads[i]! + win.stores[i]!;
    }
    expect(total).toBe(40 * 1000);
    expect(input.notes!.join('\n')).toMatch(/640 NUMA hinting-fault samples were skipped: the trace has PMU access samples/);
  });

  it('a plan for a policy that places pages only does not pin a thread that moved during the recording; a manual pin does', () => {
    // As in the guest: the main thread ran on node 2 when the recorder attached, then was pinned to node 0.
    const moved = traceOf(rows(), 2);
    const carrefour = analyze(moved, { policies: ['carrefour'], windowMs: 1000 });
    const plan = buildPlan(moved, carrefour.policies[0]!.replay, { createdAt: '2026-11-21T20:00:00Z' });
    expect(plan.threads).toEqual([]);
    expect(plan.expected!.threadsToPin).toBe(0);
    const manual = analyze(moved, { policies: [manualPolicy({ threads: [{ thread: 0, node: 2 }, { thread: 1, node: 3 }], pages: [] })], windowMs: 1000 });
    const mplan = buildPlan(moved, manual.policies[0]!.replay, { createdAt: '2026-11-21T20:00:00Z' });
    // thread 0 back to node 2 (pinned by the user, although it started there), thread 1 to node 3
    expect(mplan.threads.map((t) => [t.tid, t.toNodes, t.expectedNode])).toEqual([
      [100, [2], 0],
      [101, [3], 1],
    ]);
  });
});
