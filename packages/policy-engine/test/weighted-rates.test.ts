/**
 * Weighted interleave on a recording whose access samples are NUMA hinting faults, as on the
 * testbed's tiers guest (scenario t-engine-weights): the faults say which thread touched which
 * page, not how often, so whether the program is bandwidth-bound is an assumption
 * (--access-rates typical | bandwidth-bound), and `weighted-interleave:N,M` asks for weights
 * over a node set (numactl --weighted-interleave=N,M), e.g. a socket's DRAM node and its CXL node.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { machineFromSysfs } from '../src/machine/loaders.js';
import { getPolicy } from '../src/policies/index.js';
import { parseWeightedNodeSetId, recommendWeights } from '../src/policies/weighted-interleave.js';
import { EngineError } from '../src/model/errors.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { readTrace } from '../src/trace/reader.js';
import type { Trace } from '../src/trace/types.js';
import { minimalManifest } from './helpers/minimal-trace.js';

/** The tiers guest's /sys: nodes 0 and 1 with a cpu each, node 2 memory-only; HMAT 2048 / 2048 / 512 MB/s. */
function guestSysfs(): Record<string, string> {
  const files: Record<string, string> = {
    'devices/virtual/memory_tiering/memory_tier4/nodelist': '0-1\n',
    'devices/virtual/memory_tiering/memory_tier22/nodelist': '2\n',
  };
  const rows = ['10 20 28', '20 10 28', '28 28 10'];
  const fig = [[2048, 80], [2048, 80], [512, 250]] as const;
  ['0', '1', ''].forEach((cpus, i) => {
    const d = `devices/system/node/node${i}/`;
    files[d + 'cpulist'] = cpus + '\n';
    files[d + 'distance'] = rows[i] + '\n';
    files[d + 'meminfo'] = `Node ${i} MemTotal:       524288 kB\n`;
    files[d + 'access0/initiators/read_bandwidth'] = `${fig[i]![0]}\n`;
    files[d + 'access0/initiators/read_latency'] = `${fig[i]![1]}\n`;
  });
  return files;
}

const PAGES = 512;
const PASSES = 8;
const PASS_US = 300_000;

/**
 * The scenario's workload: two threads on node 0 (cpu 0) stream over 512 pages first-touched on
 * node 0; each scan pass catches every page once, from one of the two threads. `pmu`: the same
 * rows as PMU load samples instead (rates measured).
 */
function guestBytes(pmu = false): Uint8Array {
  const machine = machineFromSysfs(guestSysfs(), 'guest');
  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.from([200, 201]),
    pid: new Int32Array(2).fill(200),
    name: ['main', 'w0'],
    first_seen_us: new Uint32Array(2),
    last_seen_us: new Uint32Array(2).fill(PASSES * PASS_US),
    migrations: new BigInt64Array(2),
  };
  c.thread_placements = { time_us: new Uint32Array(2), thread: Uint32Array.from([0, 1]), cpu: new Int16Array(2), node: new Int8Array(2) };
  c.pages = {
    address: BigUint64Array.from({ length: PAGES }, (_, p) => 0x7f0000000000n + BigInt(p) * 4096n),
    region: new Int32Array(PAGES).fill(-1),
    node: new Int8Array(PAGES),
    page_size: new Uint32Array(PAGES).fill(4096),
    first_touch_us: BigInt64Array.from({ length: PAGES }, (_, p) => BigInt(p)),
    first_touch_thread: new Int32Array(PAGES),
    first_touch_cpu: new Int16Array(PAGES),
  };
  const t: number[] = [];
  const thread: number[] = [];
  const page: number[] = [];
  const op: number[] = [];
  const event: number[] = [];
  for (let p = 0; p < PAGES; p++) {
    t.push(p);
    thread.push(0);
    page.push(p);
    op.push(0);
    event.push(0);
  }
  for (let k = 0; k < PASSES; k++) {
    for (let p = 0; p < PAGES; p++) {
      t.push(1000 + k * PASS_US + p * 50);
      thread.push((p + k) % 2);
      page.push(p);
      op.push(1);
      event.push(pmu ? 2 : 1);
    }
  }
  const n = t.length;
  c.samples = {
    time_us: Uint32Array.from(t),
    thread: Uint32Array.from(thread),
    cpu: new Int16Array(n),
    page: Int32Array.from(page),
    offset: new Uint16Array(n),
    op: { values: ['fault', 'load', 'store'], indices: Int8Array.from(op) },
    event: { values: ['page-fault', 'access-fault', 'ibs-op'], indices: Int8Array.from(event) },
    data_source: { values: ['unknown', 'local-dram'], indices: Int8Array.from(event, (e) => (e === 2 ? 1 : 0)) },
    hops: new Int8Array(n).fill(-1),
    node: new Int8Array(n),
    latency_cycles: new Uint32Array(n),
    stack: new Int32Array(n).fill(-1),
    hitm: new Int8Array(n).fill(-1),
    weight: new Uint32Array(n).fill(1),
  };
  const manifest = minimalManifest();
  manifest.origin.kind = 'recorded';
  manifest.machine = machine;
  manifest.capture.durationUs = PASSES * PASS_US + 1000;
  manifest.process = { pid: 200, startTimeTicks: '1000', command: ['numascope-testload'], attached: true, exitCode: null };
  return writeTrace(manifest, c);
}

const guestTrace = (pmu = false): Trace => readTrace(guestBytes(pmu));

const weightOf = (r: ReturnType<typeof recommendWeights>, node: number) => {
  const k = r.weights.nodes.indexOf(node);
  return k < 0 ? 0 : r.weights.weights[k]!;
};

describe('access rates on hinting-fault recordings', () => {
  it('typical (the default): a memory-bound code stalled half of the time, said in a note', () => {
    const input = buildReplayInput(guestTrace(), { windowMs: 1200 });
    expect(input.accessSource).toBe('hinting-faults');
    // The busiest window waits for memory half of its recorded time (its closed loop, engine/windows.ts).
    const w0 = input.windows.get(0);
    expect(1 - w0.loop!.computeUs / (w0.endUs - w0.startUs)).toBeCloseTo(0.5, 3);
    expect(input.notes!.join('\n')).toMatch(/stall share assumed 50 %.*a streaming program: access rates "bandwidth-bound"/s);
  });

  it('bandwidth-bound: each thread keeps the cores\' outstanding-miss limit in flight, node 0 cannot carry it, and the CXL node gets a weight', () => {
    const typical = buildReplayInput(guestTrace(), { windowMs: 1200 });
    const input = buildReplayInput(guestTrace(), { windowMs: 1200, accessRates: 'bandwidth-bound' });
    // Each hinting fault stands for more accesses than under the typical assumption.
    expect(input.windows.get(0).accessScale!).toBeGreaterThan(1.3 * typical.windows.get(0).accessScale!);
    expect(input.notes!.join('\n')).toMatch(/stall share assumed 95 %: BANDWIDTH-BOUND as asked.*not a measurement/s);
    const r = recommendWeights(input, [0, 2]);
    expect(r.weights.nodes).toEqual([0, 2]);
    expect(weightOf(r, 2)).toBeGreaterThanOrEqual(1);
    expect(weightOf(r, 0)).toBeGreaterThan(weightOf(r, 2));
    expect(r.predictedUs).toBeLessThan(r.dramOnlyUs);
    // The more bandwidth-bound, the more of the pages on CXL and the larger the gain over DRAM only.
    const t = recommendWeights(typical, [0, 2]);
    expect(r.dramShare).toBeLessThan(t.dramShare);
    expect(r.predictedUs / r.dramOnlyUs).toBeLessThan(t.predictedUs / t.dramOnlyUs);
    // The starting point is the set's HMAT bandwidth ratio 2048:512 = 4:1 (node 1 is not in the set).
    expect(r.bandwidthRatio.weights).toEqual({ nodes: [0, 2], weights: [4, 1] });
    expect(r.method).toMatch(/^over node indices 0, 2 \(the set given\)/);
    // Over every node the two DRAM nodes share the DRAM side (split by bandwidth) and node 2 keeps a weight.
    const all = recommendWeights(input);
    expect(all.fast).toEqual([0, 1]);
    expect(weightOf(all, 0)).toBe(weightOf(all, 1));
    expect(weightOf(all, 2)).toBeGreaterThanOrEqual(1);
    expect(weightOf(all, 2)).toBeLessThan(weightOf(all, 0));
  });

  it('is ignored, with a note, when the rates are measured (PMU samples)', () => {
    const pmu = buildReplayInput(guestTrace(true), { windowMs: 1200, accessRates: 'bandwidth-bound' });
    const plain = buildReplayInput(guestTrace(true), { windowMs: 1200 });
    expect(pmu.accessSource).toBeUndefined();
    expect(pmu.notes!.join('\n')).toMatch(/access rates "bandwidth-bound" not used: the trace's rates come from its access samples/);
    expect(pmu.windows.get(0).loop).toEqual(plain.windows.get(0).loop);
  });
});

describe('weighted-interleave:N,M (weights over a node set)', () => {
  it('parses, names itself and replays the recommendation over the set only', () => {
    expect(parseWeightedNodeSetId('weighted-interleave:0,2')).toEqual([0, 2]);
    expect(parseWeightedNodeSetId('weighted-interleave:0=1,2=1')).toBeNull();
    expect(getPolicy('weighted-interleave:0,2').id).toBe('weighted-interleave:0,2');
    const result = analyze(guestTrace(), { policies: ['weighted-interleave:0,2'], windowMs: 1200, accessRates: 'bandwidth-bound' });
    const replay = result.policies[0]!.replay;
    expect(replay.weighted!.process.nodes).toEqual([0, 2]);
    // No page lands outside the set.
    const placement = result.policies[0]!.placement;
    expect(Array.from(placement.pageNode).every((n) => n === 0 || n === 2)).toBe(true);
    expect(Array.from(placement.pageNode).filter((n) => n === 2).length).toBeGreaterThan(0);
  });

  it('refuses a node outside the machine or given twice, and a malformed id', () => {
    const trace = guestTrace();
    const run = (id: string) => analyze(trace, { policies: [id], windowMs: 1200 });
    expect(() => run('weighted-interleave:0,9')).toThrow(/node index 9 is not a node of the machine \(0\.\.2\)/);
    expect(() => run('weighted-interleave:2,2')).toThrow(/node index 2 is given twice/);
    expect(() => getPolicy('weighted-interleave:0;2')).toThrow(EngineError);
    expect(() => getPolicy('weighted-interleave:0;2')).toThrow(/weighted-interleave:N,M,… \(node indices to recommend weights over\)/);
  });
});

describe('numascope-analyze --access-rates', () => {
  it('plan: the summary says the rates are assumed bandwidth-bound; a bad value is a usage error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'numascope-rates-'));
    const trace = join(dir, 'guest.numascope');
    writeFileSync(trace, guestBytes());
    const out = join(dir, 'plan.json');
    let text = '';
    const status = await main(['plan', trace, '--policy', 'weighted-interleave:0,2', '--access-rates', 'bandwidth-bound', '--system-weights', '--window-ms', '1200', '-o', out], (s) => (text += s + '\n'), (s) => (text += s + '\n'));
    expect(status, text).toBe(0);
    const plan = JSON.parse(readFileSync(out, 'utf8'));
    expect(plan.source.summary).toMatch(/^ASSUMED bandwidth-bound \(the hinting faults give no rates; --access-rates bandwidth-bound\): /);
    expect(Object.keys(plan.systemWeights.weights).sort()).toEqual(['0', '2']);
    expect(text).toMatch(/numactl --weighted-interleave=0,2/);
    let err = '';
    const bad = await main(['analyze', trace, '--access-rates', 'fast'], () => {}, (s) => (err += s));
    expect(bad).toBe(2);
    expect(err).toMatch(/--access-rates must be "typical" or "bandwidth-bound", got "fast"/);
  });
});
