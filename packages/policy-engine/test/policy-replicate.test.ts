/**
 * replicate (issue 29, item 10): the what-if "had this read-mostly object a copy on every node
 * that reads it". A read-mostly table read from every node is replicated, a written table and a
 * private buffer are not; the copies' memory is pages × page size × (copies − 1), per node, and a
 * copy that does not fit in a node's memory is not made; the recommendation is a code change and
 * no plan can carry it. Structure and direction only: the traffic model's absolute times are
 * being reworked, so no simulated time is pinned here.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { getPreset } from '../src/machine/presets.js';
import type { PolicyReplay } from '../src/model/contract.js';
import { buildPlan, PlanBuildError } from '../src/plan/build.js';
import {
  describePolicy,
  getPolicy,
  listPolicies,
  ON_REQUEST_POLICY_IDS,
  parseReplicateId,
  POLICY_DESCRIPTORS,
  POLICY_IDS,
  policyForms,
  REPLICATE_DEFAULT_READ_SHARE,
  replicateId,
  runsOnEstimate,
} from '../src/policies/index.js';
import { CARREFOUR_CONSTANTS } from '../src/policies/carrefour.js';
import { recommend } from '../src/recommend/recommend.js';
import type { Trace, TraceMachine } from '../src/trace/types.js';
import { textTrace } from './helpers/text-trace.js';

const PAGE = 4096;
const SIXTEEN = Array.from({ length: 16 }, (_, i) => i);
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

/** The Carrefour machine (4 nodes, 16 GiB each), with the given node memory sizes where set. */
function opteron(memory: Record<number, number> = {}): TraceMachine {
  const m = structuredClone(getPreset('amd-opteron-8385-4p'));
  for (const node of m.nodes) if (memory[node.id] !== undefined) node.memoryBytes = memory[node.id]!;
  return m;
}

/**
 * 16 threads, 4 per node. Page rows:
 *  0–15  table A on node 0: every thread reads every page (20 000 each), one store (99.6 % loads);
 *  16–31 table B on node 1: read and written by every thread (50 % loads);
 *  32–35 buffer C on node 2: read and written by thread 8 alone (node 2);
 *  36–51 table D on node 0: read by every thread, less than A (1000 each), no store.
 * `contiguous`: all rows at consecutive addresses (only allocation objects cut them into units);
 * otherwise each of A, B, C, D is its own address range, with gaps between them.
 */
function lookupTrace(opts: { machine?: TraceMachine; contiguous?: boolean; allocations?: boolean } = {}): Trace {
  const base = [0x7f00_0000_0000n, 0x7f00_0010_0000n, 0x7f00_0020_0000n, 0x7f00_0030_0000n];
  const rows: Array<{ node: number; address: bigint }> = [];
  const add = (count: number, node: number, part: number) => {
    for (let i = 0; i < count; i++) {
      const address = opts.contiguous ? base[0]! + BigInt(rows.length * PAGE) : base[part]! + BigInt(i * PAGE);
      rows.push({ node, address });
    }
  };
  add(16, 0, 0);
  add(16, 1, 1);
  add(4, 2, 2);
  add(16, 0, 3);
  const samples = ['time_us thread page op weight'];
  for (const t of SIXTEEN) for (const p of range(0, 16)) samples.push(`10 ${t} ${p} load 20000`);
  samples.push('20 0 0 store 20000');
  for (const t of SIXTEEN) for (const p of range(16, 16)) samples.push(`30 ${t} ${p} load 2000`, `40 ${t} ${p} store 2000`);
  for (const p of range(32, 4)) samples.push(`50 8 ${p} load 2000`, `60 8 ${p} store 2000`);
  for (const t of SIXTEEN) for (const p of range(36, 16)) samples.push(`70 ${t} ${p} load 1000`);
  return textTrace({
    machine: opts.machine ?? opteron(),
    threads: ['thread node', ...SIXTEEN.map((t) => `${t} ${Math.floor(t / 4)}`)].join('\n'),
    pages: ['page node first_touch_thread address', ...rows.map((r, i) => `${i} ${r.node} 0 0x${r.address.toString(16)}`)].join('\n'),
    samples: samples.join('\n'),
    durationUs: 100_000,
    allocations: opts.allocations
      ? `address size site
         0x${rows[0]!.address.toString(16)}  ${16 * PAGE} load_table@table.c:10
         0x${rows[16]!.address.toString(16)} ${16 * PAGE} update_buffer@buffer.c:20
         0x${rows[36]!.address.toString(16)} ${16 * PAGE} load_index@index.c:30`
      : undefined,
  });
}

const replayOf = (trace: Trace, id = 'replicate'): PolicyReplay => getPolicy(id).replay(buildReplayInput(trace, { windowMs: 100 }), { seed: 1, simulate: simulateWindow });
const replicatedRows = (r: PolicyReplay) => Array.from(r.finalPlacement.replicated).flatMap((x, p) => (x ? [p] : []));

describe('replicate: which units are copied', () => {
  it('replicates the read-mostly tables read from every node, not the written table nor the one-reader buffer', () => {
    const replay = replayOf(lookupTrace());
    expect(replicatedRows(replay)).toEqual([...range(0, 16), ...range(36, 16)]);
    // Homes stay where the recording had them; nothing migrates (placed at allocation).
    expect(Array.from(replay.finalPlacement.pageNode)).toEqual([...Array(16).fill(0), ...Array(16).fill(1), ...Array(4).fill(2), ...Array(16).fill(0)]);
    expect(replay.migratedPages).toBe(0);
    expect(replay.placedAtAllocation).toBe(true);

    const rep = replay.replication!;
    expect(rep.readShareMin).toBe(0.95);
    expect(rep.unitsFrom).toBe('ranges');
    // Candidates: the units read from ≥ 2 nodes (A, B, D); C has one reader node.
    expect(rep.units.map((u) => [u.startAddress, u.replicated])).toEqual([
      ['0x7f0000000000', true],
      ['0x7f0000100000', false],
      ['0x7f0000300000', true],
    ]);
    const [a, b] = rep.units;
    expect(a!.readerNodes).toEqual([0, 1, 2, 3]);
    expect(a!.homeNodes).toEqual([0]);
    expect(a!.copyNodes).toEqual([1, 2, 3]);
    expect(a!.readShare).toBeCloseTo((256 * 20000) / (256 * 20000 + 20000), 12);
    expect(a!.stores).toBe(20000);
    expect(b!.readShare).toBeCloseTo(0.5, 12);
    expect(b!.notReplicated).toMatch(/50\.0 % of its accesses are loads, < 95\.0 %/);

    // The copy set of each replicated page: every reader node, home included.
    const replicas = replay.finalPlacement.replicas!;
    for (const p of replicatedRows(replay)) expect(replicas.sets[replicas.setOf[p]!]).toEqual([0, 1, 2, 3]);
    expect(replicas.setOf[16]).toBe(-1);

    // Decisions: the totals first, then each unit, with its numbers.
    expect(replay.decisions[0]!.kind).toBe('replicate');
    expect(replay.decisions[0]!.explanation).toMatch(/^2 of 3 units read from ≥ 2 nodes replicated at allocation \(32 pages, ≥ 95\.0 % loads\): the copies add 384\.0 KiB \(128\.0 KiB on each of nodes 1,2,3\)/);
    const unitA = replay.decisions.find((d) => d.kind === 'replicate' && d.pages === 16 && d.pageIndices?.[0] === 0)!;
    expect(unitA.explanation).toMatch(/^pages 0x7f0000000000–0x7f0000010000 \(16 pages, 64\.0 KiB, home node 0\) replicated on nodes 1,2,3: 99\.6 % of its accesses are loads \(≥ 95\.0 %\), read from 4 nodes/);
    expect(unitA.toNodes).toEqual([1, 2, 3]);
    const refusedB = replay.decisions.find((d) => d.kind === 'none' && d.pageIndices?.[0] === 16)!;
    expect(refusedB.explanation).toMatch(/not replicated: 50\.0 % of its accesses are loads/);
  });

  it('memory: pages × page size × (copies − 1), per node, checked against node memory', () => {
    const rep = replayOf(lookupTrace()).replication!;
    // A and D: 16 pages each on node 0, copied onto nodes 1, 2, 3.
    expect(rep.addedBytesByNode).toEqual([0, 2 * 16 * PAGE, 2 * 16 * PAGE, 2 * 16 * PAGE]);
    expect(rep.addedBytes).toBe(2 * 16 * PAGE * (4 - 1));
    expect(rep.units[0]!.addedBytesByNode).toEqual([0, 16 * PAGE, 16 * PAGE, 16 * PAGE]);
    expect(rep.units[0]!.addedBytes).toBe(16 * PAGE * 3);
    expect(rep.units[1]!.addedBytes).toBe(0);
    expect(rep.capacityKnown).toBe(true);
    expect(rep.pagesReplicated).toBe(32);
  });

  it('stores on a replicated page write every copy: counted as one store flow per copy', () => {
    const replay = replayOf(lookupTrace());
    const rep = replay.replication!;
    // Table A's one store (weight 20 000) writes its 4 copies; D has none.
    expect(rep.storesOnReplicated).toBe(20000);
    expect(rep.storeFlowsOnReplicated).toBe(4 * 20000);
    expect(replay.decisions[0]!.explanation).toMatch(/its 20\.0 k stores each write every copy \(80\.0 k store flows instead of 20\.0 k\)/);
    // A lower read share replicates the written table too, and its stores then write 4 copies each.
    const all = replayOf(lookupTrace(), 'replicate:read=0.4');
    expect(all.policy).toBe('replicate:read=0.4');
    expect(replicatedRows(all)).toEqual([...range(0, 32), ...range(36, 16)]);
    expect(all.replication!.storesOnReplicated).toBe(20000 + 16 * 16 * 2000);
    expect(all.replication!.storeFlowsOnReplicated).toBe(4 * (20000 + 16 * 16 * 2000));
    // Table B's pages live on node 1, so node 0 gets their copies too.
    expect(all.replication!.addedBytesByNode).toEqual([16 * PAGE, 2 * 16 * PAGE, 3 * 16 * PAGE, 3 * 16 * PAGE]);
  });

  it('a copy that does not fit in a node’s memory is not made, and the decision says so', () => {
    // Node 3 has room for one table's copy (64 KiB) but not two: A (more remote loads) first, D refused.
    const replay = replayOf(lookupTrace({ machine: opteron({ 3: 100 * 1024 }) }));
    expect(replicatedRows(replay)).toEqual(range(0, 16));
    const rep = replay.replication!;
    expect(rep.units.map((u) => u.replicated)).toEqual([true, false, false]);
    expect(rep.units[2]!.notReplicated).toMatch(/^the copies do not fit: node 3 needs 64\.0 KiB, has 36\.0 KiB free of 100\.0 KiB/);
    expect(rep.addedBytesByNode).toEqual([0, 16 * PAGE, 16 * PAGE, 16 * PAGE]);
    const refused = replay.decisions.find((d) => d.kind === 'none' && d.pageIndices?.[0] === 36)!;
    expect(refused.explanation).toMatch(/not replicated: the copies do not fit: node 3 needs 64\.0 KiB/);
    expect(refused.explanation).toMatch(/a copy on some readers only cannot be expressed, so none is made/);
    // With no room at all on node 2, nothing is replicated.
    const none = replayOf(lookupTrace({ machine: opteron({ 2: 4 * PAGE }) }));
    expect(replicatedRows(none)).toEqual([]);
    expect(none.decisions[0]!.kind).toBe('none');
    expect(none.decisions[0]!.explanation).toMatch(/^nothing replicated: none of the 3 units read from ≥ 2 nodes qualifies/);
  });

  it('node memory unknown: copies are not checked, and the decision says so', () => {
    const m = opteron();
    for (const node of m.nodes) node.memoryBytes = null;
    const replay = replayOf(lookupTrace({ machine: m }));
    expect(replicatedRows(replay)).toEqual([...range(0, 16), ...range(36, 16)]);
    expect(replay.replication!.capacityKnown).toBe(false);
    expect(replay.decisions[0]!.explanation).toMatch(/node memory sizes unknown: copies not checked against them/);
  });

  it('allocation objects are units of their own; object= selects among them', () => {
    // All rows contiguous: one address range, judged as a whole (B's stores and C make it < 95 %).
    const flat = replayOf(lookupTrace({ contiguous: true }));
    expect(flat.replication!.units).toHaveLength(1);
    expect(replicatedRows(flat)).toEqual([]);
    // The allocation tables cut it: A and D (objects) replicated, B (object) and C (the range after B) not.
    const objects = replayOf(lookupTrace({ contiguous: true, allocations: true }));
    const rep = objects.replication!;
    expect(rep.unitsFrom).toBe('objects');
    expect(rep.units.map((u) => [u.kind, u.replicated])).toEqual([
      ['object', true],
      ['object', false],
      ['object', true],
    ]);
    expect(rep.units[0]!.label).toMatch(/^object .*load_table/);
    expect(replicatedRows(objects)).toEqual([...range(0, 16), ...range(36, 16)]);
    // Only the table's object.
    const one = replayOf(lookupTrace({ contiguous: true, allocations: true }), 'replicate:object=load_table');
    expect(replicatedRows(one)).toEqual(range(0, 16));
    expect(one.replication!.selector).toBe('object=load_table');
    expect(one.decisions[0]!.explanation).toMatch(/^1 of 1 units selected by object=load_table/);
    // No match: nothing, said with the objects there are.
    const miss = replayOf(lookupTrace({ contiguous: true, allocations: true }), 'replicate:object=nope');
    expect(replicatedRows(miss)).toEqual([]);
    expect(miss.decisions[0]!.explanation).toMatch(/^nothing replicated: no unit of the 4 matches object=nope; objects: load_table table\.c:10, update_buffer buffer\.c:20, load_index index\.c:30$/);
    // object= on a recording without allocation objects is refused.
    expect(() => replayOf(lookupTrace(), 'replicate:object=load_table')).toThrow(/no allocation objects/);
  });

  it('address= selects the pages of an address range (cutting units at its bounds)', () => {
    const replay = replayOf(lookupTrace(), 'replicate:address=0x7f0000000000-0x7f0000008000');
    expect(replicatedRows(replay)).toEqual(range(0, 8));
    expect(replay.replication!.units).toHaveLength(1);
    expect(replay.replication!.addedBytes).toBe(8 * PAGE * 3);
  });
});

describe('replicate: the policy in the registry', () => {
  it('is listed, askable by id with parameters, not in the default set, refused on an estimate', () => {
    const d = POLICY_DESCRIPTORS.find((x) => x.id === 'replicate')!;
    expect(d.inDefaultSet).toBe(false);
    expect(d.needsMeasuredAccesses).toBe(true);
    expect(POLICY_IDS).not.toContain('replicate');
    expect(listPolicies().map((p) => p.id)).not.toContain('replicate');
    expect(ON_REQUEST_POLICY_IDS).toEqual(['replicate']);
    expect(policyForms()).toContain('replicate');
    expect(policyForms()).toContain('replicate:read=S,object=TEXT,address=0xA-0xB');
    expect(getPolicy('replicate').id).toBe('replicate');
    expect(describePolicy('replicate:read=0.9')?.id).toBe('replicate');
    expect(runsOnEstimate('replicate')).toBe(false);
    // The default read share is Carrefour's replication gate.
    expect(REPLICATE_DEFAULT_READ_SHARE).toBeCloseTo(1 - CARREFOUR_CONSTANTS.DCMR_MAX_PCT / 100, 12);
    expect(parseReplicateId('replicate:read=90%')).toEqual({ readShare: 0.9 });
    expect(parseReplicateId('replicate:read=0.8,object=tbl,address=0x1000-0x3000')).toEqual({ readShare: 0.8, object: 'tbl', address: { start: 0x1000n, end: 0x3000n } });
    expect(replicateId({ readShare: 0.8, object: 'tbl', address: { start: 0x1000n, end: 0x3000n } })).toBe('replicate:read=0.8,object=tbl,address=0x1000-0x3000');
    expect(parseReplicateId('interleave')).toBeNull();
    expect(() => getPolicy('replicate:read=2')).toThrow(/read=2 is not a share from 0 to 1/);
    expect(() => getPolicy('replicate:speed=1')).toThrow(/unknown key "speed"/);
    expect(() => getPolicy('replicate:address=0x3000-0x1000')).toThrow(/the end must be after the start/);
  });

  it('analyze: the default set stays as it was; asked for, replicate is predicted faster than observed on a read-mostly table', () => {
    const trace = lookupTrace();
    expect(analyze(trace, { windowMs: 100 }).policies.map((p) => p.policy)).toEqual([...POLICY_IDS]);
    const result = analyze(trace, { windowMs: 100, policies: ['observed', 'replicate'] });
    const [observed, replicate] = result.policies;
    expect(replicate!.policy).toBe('replicate');
    expect(replicate!.steadyState?.basis).toBe('allocation');
    expect(replicate!.localAccessRatio).toBeGreaterThan(observed!.localAccessRatio);
    expect(replicate!.memoryLatencyNs).toBeLessThan(observed!.memoryLatencyNs);
    expect(replicate!.predictedSpeedup).toBeGreaterThan(1);
  });
});

describe('replicate: recommendation and plan', () => {
  const trace = lookupTrace();
  const result = analyze(trace, { windowMs: 100, policies: ['observed', 'replicate'] });
  const base = result.policies.find((p) => p.policy === 'observed')!;
  const rep = result.policies.find((p) => p.policy === 'replicate')!;

  it('recommends a code change (per-node copies), never a page move', () => {
    const recs = recommend(result.input, base, [rep], { sources: ['ibs-op'], timeScale: result.timeScale });
    const mine = recs.filter((r) => r.policy === 'replicate');
    expect(mine.map((r) => r.id)).toEqual(['replicate:per-node-copies']);
    const r = mine[0]!;
    expect(r.kind).toBe('code-change');
    expect(r.codeChange).toBe('per-node-copies');
    expect(r.planable).toBe(false);
    expect(r.title).toMatch(/^code change, not a page move: have the program keep a copy per node of pages 0x7f0000000000–0x7f0000010000, pages 0x7f0000300000–0x7f0000310000 \(32 read-mostly pages/);
    expect(r.title).toMatch(/llama\.cpp --numa mirror/);
    expect(r.title).toMatch(/the copies take 384\.0 KiB more memory \(node 1: 128\.0 KiB, node 2: 128\.0 KiB, node 3: 128\.0 KiB\)/);
    expect(r.title).toMatch(/every store must update all copies \(20\.0 k stores → 80\.0 k writes\)/);
    expect(r.title).toMatch(/numascope apply cannot make copies, so there is no plan: predicted \d+\.\d\d× vs observed/);
    expect(r.gain.speedup).toBeGreaterThan(1);
    expect(r.cost.bytes).toBe(rep.replay.replication!.addedBytes);
    expect(r.cost.pages).toBe(32 * 3);
  });

  it('a plan from replicate is refused, saying it is a code change', () => {
    const withProcess: Trace = { ...trace, manifest: { ...trace.manifest, process: { pid: 4242, startTimeTicks: '1', command: ['./lookup'], attached: false, exitCode: null } } };
    const build = () => buildPlan(withProcess, rep.replay, { createdAt: '2026-01-01T00:00:00Z', placement: rep.placement });
    expect(build).toThrow(PlanBuildError);
    expect(build).toThrow(/^replicate is not applicable as a plan: its placement is per-node copies of 32 pages \(384\.0 KiB more memory\), which the program must make itself \(a code change/);
    expect(build).toThrow(/numascope apply moves pages \(move_pages\) and cannot copy them/);
  });

  it('CLI: analyze --policy observed --policy replicate shows it; plan --policy replicate is refused', async () => {
    const sample = join(__dirname, '../../../sample-traces/shared-readmostly.numascope');
    const out: string[] = [];
    const err: string[] = [];
    expect(await main(['analyze', sample, '--policy', 'observed', '--policy', 'replicate', '--json'], (s) => out.push(s), (s) => err.push(s))).toBe(0);
    const json = JSON.parse(out.join('\n'));
    const r = json.policies.find((p: { policy: string }) => p.policy === 'replicate');
    expect(r).toBeTruthy();
    // The copies exist from the window after the table's first touch (its init phase writes one).
    expect(r.predictedSpeedup).toBeGreaterThan(1);
    expect(r.localAccessRatio).toBeGreaterThan(json.policies.find((p: { policy: string }) => p.policy === 'observed').localAccessRatio);
    expect(r.decisions[0].kind).toBe('replicate');
    // The 16 MiB lookup table on node 0, read from all 8 nodes: copied onto the other 7 (memory size unknown on this preset).
    expect(r.decisions[0].explanation).toMatch(/the copies add 112\.0 MiB \(16\.0 MiB on each of nodes 1,2,3,4,5,6,7\).*node memory sizes unknown/);
    const dir = mkdtempSync(join(tmpdir(), 'replicate-'));
    const plan = join(dir, 'plan.json');
    const errs: string[] = [];
    expect(await main(['plan', sample, '--policy', 'replicate', '-o', plan], () => {}, (s) => errs.push(s))).toBe(1);
    expect(errs.join('\n')).toMatch(/replicate is not applicable as a plan: .*code change/);
    expect(() => readFileSync(plan)).toThrow();
  });
});

describe('stores to a replicated page write every copy (engine/simulate.ts addStore)', () => {
  it('one store flow per copy where the placement names the copies; home only without', async () => {
    const { accessMatrix } = await import('../src/engine/simulate.js');
    const { machineModel } = await import('../src/machine/model.js');
    const { getPreset } = await import('../src/machine/presets.js');
    const machine = machineModel(getPreset('amd-opteron-8385-4p'));
    const window = { index: 0, startUs: 0, endUs: 1000, sampleCount: 2, thread: Int32Array.of(0, 0), page: Int32Array.of(0, 1), loads: Float64Array.of(10, 0), stores: Float64Array.of(0, 5) };
    const base = { threadNode: Int16Array.of(1), pageNode: Int16Array.of(0, 0), replicated: Uint8Array.of(1, 1) } as never;
    const plain = accessMatrix(machine, window as never, base);
    expect(plain.loads[1 * 4 + 1]).toBe(10); // a load of a replicated page is served on the reader's node
    expect(plain.stores[1 * 4 + 0]).toBe(5); // no copies named: home only
    const named = accessMatrix(machine, window as never, { ...(base as object), replicas: { setOf: Int32Array.of(0, 0), sets: [[0, 1, 3]] } } as never);
    expect([named.stores[4 + 0], named.stores[4 + 1], named.stores[4 + 2], named.stores[4 + 3]]).toEqual([5, 5, 0, 5]);
  });
});
