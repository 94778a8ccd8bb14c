/**
 * Property tests of the engine's invariants (seeded fast-check, bounded runs: the file runs in a
 * few seconds). Each property is something the closed-loop simulator (engine/simulate.ts) or the
 * analysis on top of it (analyze/analyze.ts) promises and that a change could break:
 *
 * 1. the simulator on random access matrices and loops: T = C + stall, every resource below its
 *    capacity, Little's law (L ≤ N·T/A) and L at least its idle part;
 * 2. renumbering the nodes of a symmetric machine renumbers the results;
 * 3. a one-node machine gives 1.00× for every policy;
 * 4. more memory-controller or link capacity never predicts a slower window;
 * 5. moving a flow to the node of its accessor never raises its idle latency;
 * 6. thinning the samples (every k-th, weight × k) keeps the speedups (sampling noise: 5 %);
 * 7. scaling every time, the duration and the weights by 2 keeps the speedups (2 %);
 * 8. observed reproduces the recording: each window's length and measured PMU latency.
 *
 * Known counterexamples are kept as it.fails (6: interleave under thinning of a hot, saturated
 * case): they pass while the behaviour is there; flip them to it() once it changes.
 *
 * A failure prints fast-check's seed, path and counterexample: rerun with them to reproduce.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { measuredPerWindow } from './helpers/measured.js';
import { describe, expect, it } from 'vitest';
import { analyze, type AnalysisResult } from '../src/analyze/analyze.js';
import { simulateMatrix } from '../src/engine/simulate.js';
import { IDLE_SCALE_MIN, QUEUE_SCALE_MIN } from '../src/engine/windows.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset, PRESET_IDS } from '../src/machine/presets.js';
import { trafficModel, type PairLists } from '../src/machine/traffic.js';
import type { MachineModel, WindowLoop, WindowMetrics } from '../src/model/contract.js';
import { dictionaryColumn, numericColumn, stringColumn } from '../src/trace/columns.js';
import { readTrace } from '../src/trace/reader.js';
import { TABLE_SCHEMAS } from '../src/trace/schema.js';
import { TABLE_NAMES, type Trace, type TraceMachine, type TraceManifest } from '../src/trace/types.js';
import { emptyColumns, writeTrace, type ColumnValues, type EncodedDictionaryColumn, type TableColumns, type TraceColumns } from '../src/trace/writer.js';
import { mirrorTrace, type MirrorSpec } from '../fidelity/mirror.js';
import { minimalManifest } from './helpers/minimal-trace.js';

/** One seed for every property: the runs are the same on every machine. */
const SEED = 20_260_511;
/** Timeout of the property tests (vitest's 5 s default is tight on a slow 2-core machine). */
const SLOW_MS = 120_000;
const params = (numRuns: number) => ({ seed: SEED, numRuns });

// ---------------------------------------------------------------------------------------------
// Helpers

const models = new Map<string, MachineModel>();
function presetModel(id: string): MachineModel {
  let m = models.get(id);
  if (!m) {
    m = machineModel(getPreset(id));
    models.set(id, m);
  }
  return m;
}

/** |a − b| ≤ tol · max(|a|, |b|) (+ abs near 0). */
function close(a: number, b: number, rel: number, abs = 0): boolean {
  return Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b)) + abs;
}

/** 10^x for x uniform in [log10 lo, log10 hi]. */
const logUniform = (lo: number, hi: number) => fc.double({ min: Math.log10(lo), max: Math.log10(hi), noNaN: true }).map((e) => 10 ** e);

interface Matrix {
  loads: Float64Array;
  stores: Float64Array;
}

/** Random loads and stores per (accessing node, serving node), rows of cpu-less nodes empty (no thread runs there). */
function matrixArb(m: MachineModel): fc.Arbitrary<Matrix> {
  const n = m.nodeCount;
  const entry = fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: logUniform(1, 1e8).map(Math.floor) });
  const cells = fc.array(entry, { minLength: n * n, maxLength: n * n });
  return fc.record({ loads: cells, stores: cells }).map(({ loads, stores }) => {
    const l = Float64Array.from(loads);
    const s = Float64Array.from(stores);
    for (let c = 0; c < n; c++) {
      if (m.nodeCpus[c]!.length > 0) continue;
      for (let k = 0; k < n; k++) l[c * n + k] = s[c * n + k] = 0;
    }
    return { loads: l, stores: s };
  });
}

interface LoopSpec {
  computeUs: number;
  concurrency: number;
}
const loopArb: fc.Arbitrary<LoopSpec> = fc.record({
  computeUs: fc.oneof(fc.constant(0), logUniform(1, 1e6)),
  concurrency: logUniform(0.1, 1e4),
});
const loopOf = (l: LoopSpec, idleScale = 1, queueScale = 1): WindowLoop => ({
  computeUs: l.computeUs,
  concurrency: l.concurrency,
  idleScale,
  queueScale,
  threads: 1,
  maxConcurrency: l.concurrency,
});

const WINDOW_US = 100_000;
const simulate = (m: MachineModel, x: Matrix, loop: WindowLoop): WindowMetrics => simulateMatrix(m, x.loads, x.stores, WINDOW_US, loop, 1);

/** Accesses-weighted idle latency of the matrix, ns (0 without accesses). */
/** The loads-weighted idle latency (what the reported latency's idle part is), or every access's without loads; 0 without accesses. */
function weightedIdleNs(m: MachineModel, x: Matrix): number {
  const idle = m.idleLatencyNs.value;
  let sum = 0;
  let total = 0;
  let loadSum = 0;
  let loads = 0;
  for (let p = 0; p < idle.length; p++) {
    const a = x.loads[p]! + x.stores[p]!;
    sum += a * idle[p]!;
    total += a;
    loadSum += x.loads[p]! * idle[p]!;
    loads += x.loads[p]!;
  }
  if (loads > 0) return loadSum / loads;
  return total > 0 ? sum / total : 0;
}

const describeCase = (o: object) => JSON.stringify(o, (_, v) => (ArrayBuffer.isView(v) ? Array.from(v as Float64Array) : v));

// ---------------------------------------------------------------------------------------------
// Traces: copying a read trace back into columns, and editing them

/** Every table of a read trace as writer columns (optional columns the file lacks left out). */
function columnsOf(trace: Trace): TraceColumns {
  const out = {} as TraceColumns;
  for (const name of TABLE_NAMES) {
    const table = trace.tables[name];
    const cols: TableColumns = {};
    for (const spec of TABLE_SCHEMAS[name]) {
      if (!table.getChild(spec.name)) continue;
      if (spec.type === 'utf8') cols[spec.name] = stringColumn(table, spec.name);
      else if (spec.type === 'dictionary<int8, utf8>' || spec.type === 'dictionary<int16, utf8>') {
        const d = dictionaryColumn(table, spec.name);
        cols[spec.name] = { values: d.values, indices: spec.type === 'dictionary<int8, utf8>' ? Int8Array.from(d.codes) : Int16Array.from(d.codes) };
      } else cols[spec.name] = numericColumn<Exclude<ColumnValues, readonly unknown[] | EncodedDictionaryColumn | Uint8Array>>(table, spec.name).slice() as ColumnValues;
    }
    out[name] = cols;
  }
  return out;
}

const rewrite = (manifest: TraceManifest, columns: TraceColumns): Trace => readTrace(writeTrace(manifest, columns));

/** Rows of `samples` kept by `keep`, every column. */
function selectRows(samples: TableColumns, keep: (i: number) => boolean, rows: number): TableColumns {
  const idx: number[] = [];
  for (let i = 0; i < rows; i++) if (keep(i)) idx.push(i);
  const out: TableColumns = {};
  for (const [name, col] of Object.entries(samples)) {
    if (Array.isArray(col)) out[name] = idx.map((i) => (col as Array<string | null>)[i]!);
    else if ('indices' in (col as object) && 'values' in (col as object)) {
      const d = col as { values: readonly string[]; indices: Int8Array | Int16Array };
      const Ctor = d.indices.constructor as Int8ArrayConstructor;
      out[name] = { values: d.values, indices: Ctor.from(idx, (i) => d.indices[i]!) };
    } else {
      const a = col as Uint32Array;
      const sub = new (a.constructor as Uint32ArrayConstructor)(idx.length);
      idx.forEach((i, k) => (sub[k] = a[i]!));
      out[name] = sub;
    }
  }
  return out;
}

/** Keep every k-th access sample (load/store rows), each standing for k times the accesses. */
function thinned(trace: Trace, k: number): Trace {
  const c = columnsOf(trace);
  const s = c.samples;
  const op = s['op'] as { values: readonly string[]; indices: Int8Array };
  const access = (i: number) => ['load', 'store'].includes(op.values[op.indices[i]!]!);
  const rows = (s['time_us'] as Uint32Array).length;
  let seen = 0;
  const keepIdx = new Uint8Array(rows);
  for (let i = 0; i < rows; i++) {
    if (!access(i)) keepIdx[i] = 1;
    else if (seen++ % k === 0) keepIdx[i] = 2;
  }
  const kept = selectRows(s, (i) => keepIdx[i]! > 0, rows);
  const flags = Uint8Array.from([...keepIdx].filter((f) => f > 0));
  const w = kept['weight'] as Uint32Array;
  for (let i = 0; i < w.length; i++) if (flags[i] === 2) w[i] = Math.max(1, w[i]!) * k;
  c.samples = kept;
  return rewrite(structuredClone(trace.manifest), c);
}

/** Every time, the duration, every weight and every (cumulative) counter × f: the same rates over a longer recording. */
function timeScaled(trace: Trace, f: number): Trace {
  const c = columnsOf(trace);
  const scale = (table: keyof TraceColumns, col: string) => {
    const a = c[table][col] as Uint32Array | BigInt64Array | undefined;
    if (!a) return;
    if (a instanceof BigInt64Array) for (let i = 0; i < a.length; i++) a[i] = a[i]! >= 0n ? a[i]! * BigInt(f) : a[i]!;
    else for (let i = 0; i < a.length; i++) a[i] = a[i]! * f;
  };
  scale('samples', 'time_us');
  scale('samples', 'weight');
  scale('threads', 'first_seen_us');
  scale('threads', 'last_seen_us');
  scale('thread_placements', 'time_us');
  scale('region_placements', 'time_us');
  scale('counters', 'time_us');
  scale('events', 'time_us');
  scale('allocations', 'time_us');
  scale('allocations', 'end_us');
  scale('pages', 'first_touch_us');
  const v = c.counters['value'] as Float64Array;
  for (let i = 0; i < v.length; i++) v[i] = v[i]! * f;
  const w = c.samples['weight'] as Uint32Array;
  const orig = numericColumn<Uint32Array>(trace.tables.samples, 'weight');
  for (let i = 0; i < w.length; i++) if (orig[i] === 0) w[i] = f; // weight 0 reads as 1
  const manifest = structuredClone(trace.manifest);
  manifest.capture.durationUs *= f;
  return rewrite(manifest, c);
}

/** Tiny deterministic PRNG for rewriting columns (xorshift32). */
function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Mirror specs (fidelity/mirror.ts): random workloads on a preset

interface WorkloadSpec {
  preset: string;
  threadNodes: number[];
  layout: 'hot' | 'interleaved' | 'random' | 'local';
  sharedShare: number;
  /** Each thread's private slice on the next node instead of its own (what migration policies fix). */
  privateMisplaced: boolean;
  /** The recording has instruction, cycle and L3-miss counters (the stall share from the counters). */
  withCounters: boolean;
  loadShare: number;
  accessesPerThreadPerS: number;
  /** PMU load latency of every load sample, × the machine's highest idle latency (from a node with cpus). */
  latencyFactor: number;
  samples: number;
  durationUs: number;
  seed: number;
}

interface WorkloadRanges {
  samples: { min: number; max: number };
  threads?: { min: number; max: number };
  sharedShare?: { min: number; max: number };
  accessesPerThreadPerS?: { min: number; max: number };
}

function workloadArb(presets: readonly string[], r: WorkloadRanges): fc.Arbitrary<WorkloadSpec> {
  const threads = r.threads ?? { min: 2, max: 16 };
  const shared = r.sharedShare ?? { min: 0, max: 1 };
  const rate = r.accessesPerThreadPerS ?? { min: 2e5, max: 2e7 };
  return fc.constantFrom(...presets).chain((preset) => {
    const n = getPreset(preset).nodes.length;
    return fc.record({
      preset: fc.constant(preset),
      threadNodes: fc.array(fc.integer({ min: 0, max: n - 1 }), { minLength: threads.min, maxLength: threads.max }),
      layout: fc.constantFrom('hot' as const, 'interleaved' as const, 'random' as const, 'local' as const),
      sharedShare: fc.double({ ...shared, noNaN: true }),
      privateMisplaced: fc.boolean(),
      withCounters: fc.boolean(),
      loadShare: fc.double({ min: 0.5, max: 1, noNaN: true }),
      accessesPerThreadPerS: logUniform(rate.min, rate.max),
      latencyFactor: fc.double({ min: 0.7, max: 5, noNaN: true }),
      samples: fc.integer(r.samples),
      durationUs: fc.constantFrom(500_000, 400_000, 350_000),
      seed: fc.integer({ min: 1, max: 1 << 30 }),
    });
  });
}

/** The mirror spec of a workload: a shared region (placed by `layout`) and a per-thread sliced region on the threads' nodes. */
function mirrorSpecOf(w: WorkloadSpec): MirrorSpec {
  const machine = getPreset(w.preset);
  const ids = machine.nodes.map((x) => x.id);
  const rnd = xorshift(w.seed ^ 0x9e3779b9);
  const SHARED = 512;
  const PRIVATE = 512;
  const threadNodeIds = w.threadNodes.map((i) => ids[i]!);
  const T = threadNodeIds.length;
  const shared = Array.from({ length: SHARED }, (_, p) =>
    w.layout === 'hot' ? ids[0]! : w.layout === 'interleaved' ? ids[p % ids.length]! : w.layout === 'random' ? ids[Math.floor(rnd() * ids.length)]! : threadNodeIds[p % T]!,
  );
  // Private slices: page k belongs to thread floor(k·T/size) (mirror.ts sliced targets), placed on
  // its node (or, misplaced, on the next one).
  const priv = Array.from({ length: PRIVATE }, (_, k) => {
    const home = w.threadNodes[Math.min(T - 1, Math.floor((k * T) / PRIVATE))]!;
    return ids[w.privateMisplaced ? (home + 1) % ids.length : home]!;
  });
  const clock = clockOf(w.preset);
  const model = presetModel(w.preset);
  const idleMax = Math.max(...[...model.idleLatencyNs.value].filter((_, p) => model.nodeCpus[Math.floor(p / model.nodeCount)]!.length > 0));
  return {
    id: 'prop',
    description: 'invariants.property.test.ts workload',
    preset: w.preset,
    threadNodes: threadNodeIds,
    regions: [
      { name: 'shared', pageNodes: shared },
      { name: 'private', pageNodes: priv },
    ],
    targets: [
      { region: 0, share: Math.max(1e-6, w.sharedShare), loadShare: w.loadShare },
      { region: 1, share: Math.max(1e-6, 1 - w.sharedShare), loadShare: w.loadShare, sliced: true },
    ],
    accessesPerThreadPerS: w.accessesPerThreadPerS,
    durationUs: w.durationUs,
    samples: w.samples,
    seed: w.seed,
    loadLatencyCycles: Math.round(w.latencyFactor * idleMax * clock),
    ...(w.withCounters ? { counters: { ipc: 0.6, clockGHz: clock } } : {}),
  };
}

/** The clock PMU latencies are generated with: the preset's, else FALLBACK_CLOCK_GHZ (written into the trace). */
const FALLBACK_CLOCK_GHZ = 2.3;
const clockOf = (preset: string) => trafficModel(presetModel(preset)).clockGHz.value ?? FALLBACK_CLOCK_GHZ;

/** The workload's trace, with the recording's clock set where the preset has none. */
function workloadTrace(w: WorkloadSpec): Trace {
  const trace = readTrace(mirrorTrace(mirrorSpecOf(w)));
  if (trafficModel(presetModel(w.preset)).clockGHz.value !== null) return trace;
  const manifest = structuredClone(trace.manifest);
  manifest.machine.cpuClockGHz = FALLBACK_CLOCK_GHZ;
  manifest.machine.provenance['cpuClockGHz'] = 'documented:invariants.property.test.ts sets the clock the latencies were generated with';
  return rewrite(manifest, columnsOf(trace));
}

const speedups = (r: AnalysisResult) => new Map(r.policies.map((p) => [p.policy, p.predictedSpeedup]));

// ---------------------------------------------------------------------------------------------
// 1. The simulator on random access matrices

describe('1. simulator on random access matrices and loops (every preset)', () => {
  const presetCase = fc.constantFrom(...PRESET_IDS).chain((id) => fc.record({ id: fc.constant(id), x: matrixArb(presetModel(id)), loop: loopArb }));

  it('T = C + stall, every resource below capacity, L ≤ N·T/A (Little), L ≥ the accesses-weighted idle latency', () => {
    fc.assert(
      fc.property(presetCase, ({ id, x, loop }) => {
        const m = presetModel(id);
        const r = simulate(m, x, loopOf(loop));
        const ctx = () => `${id} ${describeCase({ loop, predictedUs: r.predictedUs, computeUs: r.computeUs, stallUs: r.stallUs, latency: r.memoryLatencyNs, bound: r.latencyBoundNs })}`;
        // (a) the decomposition
        expect(close(r.predictedUs, r.computeUs + r.stallUs, 1e-6), `(a) ${ctx()}`).toBe(true);
        expect(r.computeUs).toBe(loop.computeUs);
        // (b) a saturated resource delivers its capacity: never more
        for (const u of r.mcUtilisation) expect(u, `(b) mc ${ctx()}`).toBeLessThan(1);
        for (const u of r.linkUtilisation) expect(u, `(b) link ${ctx()}`).toBeLessThan(1);
        const idle = weightedIdleNs(m, x);
        if (idle === 0) {
          expect(r.predictedUs).toBe(loop.computeUs);
          return;
        }
        // (c) Little's law with the population as the cores' limit
        expect(r.memoryLatencyNs, `(c) ${ctx()}`).toBeLessThanOrEqual(r.latencyBoundNs * (1 + 1e-6));
        // (d) queueing only adds: the idle part is the floor, and the reported idle part is it (scale 1)
        expect(r.memoryLatencyNs, `(d) ${ctx()}`).toBeGreaterThanOrEqual(idle * (1 - 1e-12));
        expect(close(r.idleLatencyNs, idle, 1e-12), `(d) idle part ${r.idleLatencyNs} vs ${idle}`).toBe(true);
        // and the delivered rate is the accesses over T
        expect(close(r.accessesPerUs * r.predictedUs, r.accesses ?? NaN, 1e-9)).toBe(true);
      }),
      params(300),
    );
  }, SLOW_MS);
});

describe('1e. the decomposition at saturation with the least queue scale the calibration gives', () => {
  // With κ = 0 the queueing term that makes L(T) diverge at capacity would be gone and a saturated
  // window would have no fixed point (found by this file: T = 11 018 µs against C + stall = 150 µs);
  // calibrateLatency therefore never goes below QUEUE_SCALE_MIN.
  it('T = C + stall and L = N·T/A at saturation (C = 0), κ = QUEUE_SCALE_MIN', () => {
    const m = presetModel('amd-opteron-8385-4p');
    const x: Matrix = { loads: new Float64Array(16), stores: new Float64Array(16) };
    x.loads[0] = 1e6;
    const r = simulate(m, x, { computeUs: 0, concurrency: 1000, idleScale: 1, queueScale: QUEUE_SCALE_MIN, threads: 1, maxConcurrency: 1000 });
    expect(r.mcUtilisation[0]).toBeGreaterThan(0.99);
    expect(close(r.predictedUs, r.computeUs + r.stallUs, 1e-6), `T ${r.predictedUs} vs C + stall ${r.computeUs + r.stallUs}`).toBe(true);
    expect(close(r.memoryLatencyNs, r.latencyBoundNs, 1e-6), `L ${r.memoryLatencyNs} vs N·T/A ${r.latencyBoundNs}`).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// 2. Renumbering the nodes of a symmetric machine

/** Link index of each (from, to), -1 where there is none. */
function linkIndex(m: MachineModel): Int32Array {
  const n = m.nodeCount;
  const out = new Int32Array(n * n).fill(-1);
  m.links.forEach((l, k) => (out[l.from * n + l.to] = k));
  return out;
}

/**
 * The node permutations σ under which the machine model and its traffic model are the same
 * (idle latencies, cpus, capacities, curves, and every pair's per-link bytes and crossings).
 * σ maps node i to σ[i]; brute force over all n! permutations.
 */
function automorphisms(m: MachineModel): number[][] {
  const n = m.nodeCount;
  const t = trafficModel(m);
  const idle = m.idleLatencyNs.value;
  const li = linkIndex(m);
  const lists: PairLists[] = [t.readBytes, t.writeBytes, t.latencyLinks, t.dataLinks];
  const entries = (pl: PairLists, p: number) => {
    const out = new Map<number, number>();
    for (let k = pl.start[p]!; k < pl.start[p + 1]!; k++) out.set(pl.link[k]!, pl.value[k]!);
    return out;
  };
  const perms: number[][] = [];
  const permute = (prefix: number[], rest: number[]) => {
    if (rest.length === 0) perms.push(prefix);
    rest.forEach((x, i) => permute([...prefix, x], [...rest.slice(0, i), ...rest.slice(i + 1)]));
  };
  permute([], Array.from({ length: n }, (_, i) => i));
  return perms.filter((s) => {
    for (let a = 0; a < n; a++) {
      if (m.nodeCpus[a]!.length !== m.nodeCpus[s[a]!]!.length) return false;
      if (t.mcCapacity.value[a] !== t.mcCapacity.value[s[a]!]) return false;
      if (t.mcContentionNs[a] !== t.mcContentionNs[s[a]!] || t.mcQueueNs[a] !== t.mcQueueNs[s[a]!]) return false;
      if (t.crossbarCapacity && t.crossbarCapacity.value[a] !== t.crossbarCapacity.value[s[a]!]) return false;
      for (let b = 0; b < n; b++) if (idle[a * n + b] !== idle[s[a]! * n + s[b]!]) return false;
    }
    const linkMap = m.links.map((l) => li[s[l.from]! * n + s[l.to]!]!);
    if (linkMap.some((k, i) => k < 0 || m.links[k]!.capacityBytesPerS !== m.links[i]!.capacityBytesPerS)) return false;
    for (const pl of lists) {
      for (let a = 0; a < n; a++) {
        for (let b = 0; b < n; b++) {
          const from = entries(pl, a * n + b);
          const to = entries(pl, s[a]! * n + s[b]!);
          if (from.size !== to.size) return false;
          for (const [k, v] of from) if (!close(to.get(linkMap[k]!) ?? NaN, v, 1e-12)) return false;
        }
      }
    }
    return true;
  });
}

describe('2. renumbering the nodes of a symmetric machine renumbers the results', () => {
  const opteron = presetModel('amd-opteron-8385-4p');
  const spr = presetModel('intel-spr-2s');
  const symmetries = { 'amd-opteron-8385-4p': automorphisms(opteron), 'intel-spr-2s': automorphisms(spr) };

  it('the Opteron 8385 (a square of links 0–1–3–2) has the 8 symmetries of the square; the 2-socket SPR its swap', () => {
    expect(symmetries['amd-opteron-8385-4p']).toHaveLength(8);
    expect(symmetries['amd-opteron-8385-4p']).toContainEqual([1, 3, 0, 2]); // rotation 0→1→3→2→0
    expect(symmetries['amd-opteron-8385-4p']).toContainEqual([0, 2, 1, 3]); // reflection 1↔2
    expect(symmetries['intel-spr-2s']).toEqual([
      [0, 1],
      [1, 0],
    ]);
  });

  const symCase = fc.constantFrom('amd-opteron-8385-4p' as const, 'intel-spr-2s' as const).chain((id) =>
    fc.record({ id: fc.constant(id), sigma: fc.constantFrom(...symmetries[id]), x: matrixArb(presetModel(id)), loop: loopArb }),
  );

  it('permuting the access matrix permutes mcUtilisation (and link utilisation); predictedUs and memoryLatencyNs stay', () => {
    fc.assert(
      fc.property(symCase, ({ id, sigma, x, loop }) => {
        const m = presetModel(id);
        const n = m.nodeCount;
        const px: Matrix = { loads: new Float64Array(n * n), stores: new Float64Array(n * n) };
        for (let c = 0; c < n; c++) {
          for (let k = 0; k < n; k++) {
            px.loads[sigma[c]! * n + sigma[k]!] = x.loads[c * n + k]!;
            px.stores[sigma[c]! * n + sigma[k]!] = x.stores[c * n + k]!;
          }
        }
        const a = simulate(m, x, loopOf(loop));
        const b = simulate(m, px, loopOf(loop));
        const ctx = `${id} σ=${sigma.join('')} ${describeCase({ loop, a: a.predictedUs, b: b.predictedUs, la: a.memoryLatencyNs, lb: b.memoryLatencyNs })}`;
        expect(close(a.predictedUs, b.predictedUs, 1e-7), ctx).toBe(true);
        expect(close(a.memoryLatencyNs, b.memoryLatencyNs, 1e-7), ctx).toBe(true);
        expect(close(a.localAccessRatio, b.localAccessRatio, 1e-12), ctx).toBe(true);
        for (let k = 0; k < n; k++) expect(close(b.mcUtilisation[sigma[k]!]!, a.mcUtilisation[k]!, 1e-7, 1e-15), `${ctx} mc ${k}`).toBe(true);
        const li = linkIndex(m);
        m.links.forEach((l, k) => {
          const image = li[sigma[l.from]! * n + sigma[l.to]!]!;
          expect(close(b.linkUtilisation[image]!, a.linkUtilisation[k]!, 1e-7, 1e-15), `${ctx} link ${l.from}→${l.to}`).toBe(true);
        });
      }),
      params(200),
    );
  }, SLOW_MS);
});

// ---------------------------------------------------------------------------------------------
// 3. A one-node machine

const ONE_NODE = new URL('../../../sample-traces/recorded-testload-4threads.numascope', import.meta.url);

/** A one-node machine (8 cpus, 2.0 GHz clock) with PMU load/store samples on local DRAM. */
function oneNodeTrace(p: { threads: number; pages: number; samples: number; storeShare: number; latencyCycles: number; weight: number; durationUs: number; seed: number }): Trace {
  const rnd = xorshift(p.seed);
  const machine: TraceMachine = {
    ...minimalManifest().machine,
    name: 'one-node',
    nodes: [{ id: 0, cpus: [0, 1, 2, 3, 4, 5, 6, 7], memoryBytes: 1 << 30, memoryBandwidthGBps: null }],
    distances: [[10]],
    cpuClockGHz: 2.0,
    provenance: { cpuClockGHz: 'documented:invariants.property.test.ts' },
  };
  const c = emptyColumns();
  const T = p.threads;
  c.threads = {
    tid: Int32Array.from({ length: T }, (_, i) => 100 + i),
    pid: new Int32Array(T).fill(100),
    name: Array.from({ length: T }, (_, i) => `t${i}`),
    first_seen_us: new Uint32Array(T),
    last_seen_us: new Uint32Array(T).fill(p.durationUs),
    migrations: new BigInt64Array(T),
  };
  c.thread_placements = { time_us: new Uint32Array(T), thread: Uint32Array.from({ length: T }, (_, i) => i), cpu: Int16Array.from({ length: T }, (_, i) => i % 8), node: new Int8Array(T) };
  const P = p.pages;
  c.pages = {
    address: BigUint64Array.from({ length: P }, (_, k) => 0x7f0000000000n + BigInt(k) * 4096n),
    region: new Int32Array(P).fill(-1),
    node: new Int8Array(P),
    page_size: new Uint32Array(P).fill(4096),
    first_touch_us: new BigInt64Array(P).fill(-1n),
    first_touch_thread: Int32Array.from({ length: P }, (_, k) => k % T),
    first_touch_cpu: Int16Array.from({ length: P }, (_, k) => (k % T) % 8),
  };
  const n = p.samples;
  const thread = Uint32Array.from({ length: n }, () => Math.floor(rnd() * T));
  const op = Int8Array.from({ length: n }, () => (rnd() < p.storeShare ? 1 : 0));
  c.samples = {
    time_us: Uint32Array.from({ length: n }, (_, i) => Math.floor((i / n) * p.durationUs)),
    thread,
    cpu: Int16Array.from(thread, (t) => t % 8),
    page: Int32Array.from({ length: n }, () => Math.floor(rnd() * P)),
    offset: new Uint16Array(n),
    op: { values: ['load', 'store'], indices: op },
    event: { values: ['ibs-op'], indices: new Int8Array(n) },
    data_source: { values: ['local-dram'], indices: new Int8Array(n) },
    hops: new Int8Array(n),
    node: new Int8Array(n),
    latency_cycles: Uint32Array.from(op, (o) => (o === 0 ? Math.round(p.latencyCycles * (0.5 + rnd())) : 0)),
    stack: new Int32Array(op.length).fill(-1),
    hitm: new Int8Array(op.length).fill(-1),
    weight: new Uint32Array(n).fill(p.weight),
  };
  const manifest = minimalManifest();
  manifest.origin.kind = 'recorded';
  manifest.machine = machine;
  manifest.capture.durationUs = p.durationUs;
  manifest.process = { pid: 100, startTimeTicks: '1', command: ['load'], attached: true, exitCode: null };
  return readTrace(writeTrace(manifest, c));
}

function expectAllOne(r: AnalysisResult, ctx: string) {
  expect(r.policies.length).toBeGreaterThan(1);
  for (const p of r.policies) {
    expect(Math.abs(p.predictedSpeedup - 1), `${ctx} ${p.policy}: ${p.predictedSpeedup}`).toBeLessThanOrEqual(1e-9);
    expect(Math.abs(p.transient.predictedSpeedup - 1), `${ctx} ${p.policy} (replay): ${p.transient.predictedSpeedup}`).toBeLessThanOrEqual(1e-9);
  }
}

describe('3. a one-node machine gives 1.00× for every policy', () => {
  it('the recorded one-node trace (no access samples: the uniform estimate)', () => {
    const trace = readTrace(new Uint8Array(readFileSync(fileURLToPath(ONE_NODE))));
    expect(trace.manifest.machine.nodes).toHaveLength(1);
    expectAllOne(analyze(trace, { accessEstimate: 'uniform' }), 'recorded-testload-4threads');
  });

  it('random one-node recordings with PMU samples: every default policy and replicate', () => {
    const arb = fc.record({
      threads: fc.integer({ min: 1, max: 12 }),
      pages: fc.integer({ min: 1, max: 600 }),
      samples: fc.integer({ min: 200, max: 3000 }),
      storeShare: fc.double({ min: 0, max: 0.6, noNaN: true }),
      latencyCycles: fc.integer({ min: 150, max: 3000 }),
      weight: fc.integer({ min: 1, max: 20_000 }),
      durationUs: fc.integer({ min: 50_000, max: 450_000 }),
      seed: fc.integer({ min: 1, max: 1 << 30 }),
    });
    fc.assert(
      fc.property(arb, (p) => {
        const trace = oneNodeTrace(p);
        expectAllOne(analyze(trace, { windowMs: 100, policies: ['observed', 'first-touch', 'interleave', 'autonuma', 'carrefour', 'asymsched', 'replicate'] }), describeCase(p));
      }),
      params(8),
    );
  }, SLOW_MS);
});

// ---------------------------------------------------------------------------------------------
// 4. More capacity never predicts slower

/** A copy of `m` (a new object: trafficModel caches per object) whose controllers' sustained capacity is × kMc (rule S2) and links' × kLink. */
function withCapacity(m: MachineModel, kMc: number, kLink: number): MachineModel {
  const t = trafficModel(m);
  return {
    ...m,
    sustainedBytesPerS: { value: t.mcCapacity.value.map((v) => v * kMc), source: `measured:invariants.property.test.ts, × ${kMc}` },
    links: m.links.map((l) => ({ ...l, capacityBytesPerS: l.capacityBytesPerS * kLink })),
  };
}

describe('4. more capacity never predicts slower', () => {
  it('the same copy (k = 1) predicts what the preset does where the preset has no crossbar', () => {
    for (const id of PRESET_IDS) {
      const m = presetModel(id);
      if (trafficModel(m).crossbarCapacity) continue;
      const copy = withCapacity(m, 1, 1);
      expect([...trafficModel(copy).mcCapacity.value]).toEqual([...trafficModel(m).mcCapacity.value]);
      expect([...trafficModel(copy).mcQueueNs]).toEqual([...trafficModel(m).mcQueueNs]);
    }
  });

  const capCase = fc.constantFrom(...PRESET_IDS).chain((id) =>
    fc.record({
      id: fc.constant(id),
      x: matrixArb(presetModel(id)),
      loop: loopArb,
      idleScale: fc.double({ min: 0.25, max: 3, noNaN: true }),
      queueScale: fc.oneof(fc.constant(QUEUE_SCALE_MIN), logUniform(QUEUE_SCALE_MIN, 200)),
      k: logUniform(1.001, 20),
      which: fc.constantFrom('mc' as const, 'links' as const, 'both' as const),
    }),
  );

  it('controllers (and/or links) × k > 1, any calibration (ι, κ): predictedUs ≤ the original, and (κ > 0) the latency not above it', () => {
    fc.assert(
      fc.property(capCase, ({ id, x, loop, idleScale, queueScale, k, which }) => {
        const m = presetModel(id);
        const base = withCapacity(m, 1, 1);
        const more = withCapacity(m, which === 'links' ? 1 : k, which === 'mc' ? 1 : k);
        const l = loopOf(loop, idleScale, queueScale);
        const a = simulate(base, x, l);
        const b = simulate(more, x, l);
        const ctx = `${id} ${which} × ${k} ${describeCase({ loop, idleScale, queueScale, base: a.predictedUs, more: b.predictedUs, la: a.memoryLatencyNs, lb: b.memoryLatencyNs })}`;
        expect(b.predictedUs, ctx).toBeLessThanOrEqual(a.predictedUs * (1 + 1e-9));
        // In the closed loop L = N·(T − C)/A, so a shorter T is a lower latency too; not with
        // κ = 0 (or a κ so small that κ·q·u/(1 − u) stays ~0 in floating point, e.g. 5e-324) at
        // saturation, where T ≠ C + stall (the known defect 1e).
        expect(b.memoryLatencyNs, ctx).toBeLessThanOrEqual(a.memoryLatencyNs * (1 + 1e-6));
      }),
      params(200),
    );
  }, SLOW_MS);
});

// ---------------------------------------------------------------------------------------------
// 5. Moving a page to its only accessor's node

describe('5. moving a flow to the node of its accessor never raises its idle latency', () => {
  it("every preset's idle latency is least on the accessor's own node (rows of nodes with cpus)", () => {
    for (const id of PRESET_IDS) {
      const m = presetModel(id);
      const n = m.nodeCount;
      const idle = m.idleLatencyNs.value;
      for (let c = 0; c < n; c++) {
        if (m.nodeCpus[c]!.length === 0) continue;
        for (let k = 0; k < n; k++) expect(idle[c * n + c]!, `${id} idle[${c}][${c}] vs idle[${c}][${k}]`).toBeLessThanOrEqual(idle[c * n + k]!);
      }
    }
  });

  const moveCase = fc.constantFrom('amd-opteron-8385-4p', ...PRESET_IDS).chain((id) => fc.record({ id: fc.constant(id), x: matrixArb(presetModel(id)), loop: loopArb, pick: fc.nat() }));

  it('a remote flow (c, m) moved to (c, c): idle[c][c] ≤ idle[c][m] and the window\'s idle part does not rise', () => {
    fc.assert(
      fc.property(moveCase, ({ id, x, loop, pick }) => {
        const m = presetModel(id);
        const n = m.nodeCount;
        const remote: Array<[number, number]> = [];
        for (let c = 0; c < n; c++) for (let k = 0; k < n; k++) if (c !== k && x.loads[c * n + k]! + x.stores[c * n + k]! > 0) remote.push([c, k]);
        fc.pre(remote.length > 0);
        const [c, k] = remote[pick % remote.length]!;
        const moved: Matrix = { loads: x.loads.slice(), stores: x.stores.slice() };
        moved.loads[c * n + c]! += moved.loads[c * n + k]!;
        moved.stores[c * n + c]! += moved.stores[c * n + k]!;
        moved.loads[c * n + k] = 0;
        moved.stores[c * n + k] = 0;
        const idle = m.idleLatencyNs.value;
        expect(idle[c * n + c]!, `${id} idle[${c}][${c}] vs idle[${c}][${k}]`).toBeLessThanOrEqual(idle[c * n + k]!);
        const before = simulate(m, x, loopOf(loop));
        const after = simulate(m, moved, loopOf(loop));
        expect(after.idleLatencyNs, `${id} (${c}, ${k}) → (${c}, ${c}): ${before.idleLatencyNs} → ${after.idleLatencyNs}`).toBeLessThanOrEqual(before.idleLatencyNs * (1 + 1e-12));
        expect(after.localAccessRatio).toBeGreaterThan(before.localAccessRatio - 1e-12);
      }),
      params(200),
    );
  }, SLOW_MS);
});

// ---------------------------------------------------------------------------------------------
// 6. Thinning invariance

/**
 * Policies left out of the thinning property: none now. Carrefour's gates count the module's own
 * IBS samples of the accesses (not the trace's rows), and AsymSched keeps threads in place while
 * a pair it leaves apart has too few samples to be apart on evidence (SHARING_EVIDENCE_SAMPLES),
 * so both are held to it like the rest.
 */
const COUNTS_SAMPLES = new Set<string>();

/** |thinned / full − 1| of every policy's speedup. */
function thinningGaps(w: WorkloadSpec, k: number): { gaps: Map<string, number>; full: Map<string, number>; thin: Map<string, number>; la: number; lb: number } {
  const trace = workloadTrace(w);
  const thin = thinned(trace, k);
  expect(thin.tables.samples.numRows).toBe(Math.ceil(trace.tables.samples.numRows / k));
  const a = analyze(trace, { windowMs: 100 });
  const b = analyze(thin, { windowMs: 100 });
  const full = speedups(a);
  const th = speedups(b);
  const gaps = new Map([...full].map(([id, s]) => [id, Math.abs(th.get(id)! / s - 1)]));
  const observed = (r: AnalysisResult) => r.policies.find((p) => p.policy === 'observed')!.memoryLatencyNs;
  return { gaps, full, thin: th, la: observed(a), lb: observed(b) };
}

describe('6. thinning the samples keeps the speedups (sampling noise)', () => {
  const arb = fc.record({
    w: workloadArb(['amd-opteron-8385-4p'], { samples: { min: 8000, max: 12000 }, threads: { min: 4, max: 16 }, sharedShare: { min: 0.3, max: 1 }, accessesPerThreadPerS: { min: 2e6, max: 2e7 } }),
    k: fc.integer({ min: 2, max: 3 }),
  });

  it("every k-th access sample with weight × k: every policy's speedup within 5 %, observed's latency within 10 %", () => {
    let spread = 0;
    fc.assert(
      fc.property(arb, ({ w, k }) => {
        const { gaps, full, thin, la, lb } = thinningGaps(w, k);
        const ctx = `k=${k} ${describeCase({ ...w, full: Object.fromEntries(full), thinned: Object.fromEntries(thin) })}`;
        for (const [id, gap] of gaps) {
          if (COUNTS_SAMPLES.has(id)) continue;
          expect(gap, `${ctx}: ${id}`).toBeLessThanOrEqual(0.05);
          spread = Math.max(spread, Math.abs(full.get(id)! - 1));
        }
        expect(Math.abs(lb / la - 1), `${ctx}: observed latency ${la} vs ${lb}`).toBeLessThanOrEqual(0.1);
      }),
      params(8),
    );
    // Not vacuous: some policy predicted a clear gain or loss.
    expect(spread).toBeGreaterThan(0.05);
  }, SLOW_MS);

  // KNOWN COUNTEREXAMPLES (reported, not fixed here): flip to it() if those policies are made
  // invariant under the sampling rate.
  // Was a known counterexample (1.77× against 1.02×) while the module's gates counted the trace's
  // samples; they count its own IBS samples of the accesses now (policies/carrefour.ts).
  it('Carrefour: 24 000 samples against every 3rd (× 3): the same speedup within noise', () => {
    const w: WorkloadSpec = {
      preset: 'amd-opteron-8385-4p',
      threadNodes: [3, 0, 2, 3, 1, 1, 2, 1, 2, 0, 1, 3, 3],
      layout: 'local',
      sharedShare: 1,
      privateMisplaced: true,
      withCounters: false,
      loadShare: 1,
      accessesPerThreadPerS: 9276722.289258512,
      latencyFactor: 1.9054721922006808,
      samples: 24000,
      durationUs: 500000,
      seed: 887499837,
    };
    const { gaps, full, thin } = thinningGaps(w, 3);
    expect(gaps.get('carrefour')!, `carrefour ${full.get('carrefour')} vs ${thin.get('carrefour')}`).toBeLessThanOrEqual(0.05);
  }, SLOW_MS);

  // Was a known counterexample (0.95× against 1.24×) while AsymSched acted on clusters the sparse
  // samples could not support; it waits for evidence now (SHARING_EVIDENCE_SAMPLES).
  it('AsymSched: 3 001 samples against every 4th (× 4): the same speedup within noise', () => {
    const w: WorkloadSpec = {
      preset: 'amd-opteron-8385-4p',
      threadNodes: [0, 0, 0, 2],
      layout: 'hot',
      sharedShare: 0.39293507672846323,
      privateMisplaced: true,
      withCounters: false,
      loadShare: 0.9453401432838292,
      accessesPerThreadPerS: 7081609.750000003,
      latencyFactor: 1.9046822742474918,
      samples: 3001,
      durationUs: 500000,
      seed: 887499838,
    };
    const { gaps, full, thin } = thinningGaps(w, 4);
    expect(gaps.get('asymsched')!, `asymsched ${full.get('asymsched')} vs ${thin.get('asymsched')}`).toBeLessThanOrEqual(0.05);
  }, SLOW_MS);

  // Found by 40 runs of the property above (seed 20260511, path 34): a hot spot at 5× the idle
  // latency with 16 threads; interleave's speedup moves 6.8 % when two of three samples go.
  it.fails('interleave: 11 766 samples against every 3rd (× 3), hot spot at 5× idle latency: 1.41× against 1.50×', () => {
    const w: WorkloadSpec = {
      preset: 'amd-opteron-8385-4p',
      threadNodes: [3, 0, 0, 3, 3, 2, 0, 3, 0, 3, 1, 1, 2, 1, 1, 1],
      layout: 'hot',
      sharedShare: 0.8801392336007285,
      privateMisplaced: true,
      withCounters: true,
      loadShare: 0.7316547042609617,
      accessesPerThreadPerS: 2274743.1631192723,
      latencyFactor: 4.999999999999985,
      samples: 11766,
      durationUs: 400000,
      seed: 27,
    };
    const { gaps, full, thin } = thinningGaps(w, 3);
    expect(gaps.get('interleave')!, `interleave ${full.get('interleave')} vs ${thin.get('interleave')}`).toBeLessThanOrEqual(0.05);
  }, SLOW_MS);
});

// ---------------------------------------------------------------------------------------------
// 7. Time-scaling invariance

describe('7. the same rates over twice the time keep the speedups', () => {
  const arb = workloadArb(['amd-opteron-8385-4p', 'amd-asymsched-machine-a'], { samples: { min: 2000, max: 4000 }, threads: { min: 4, max: 12 }, accessesPerThreadPerS: { min: 1e6, max: 2e7 } });

  it('times, duration, weights and counters × 2 (windows × 2): every policy\'s speedup within 2 %', () => {
    let spread = 0;
    fc.assert(
      fc.property(arb, (w) => {
        const trace = workloadTrace(w);
        const slow = timeScaled(trace, 2);
        const a = analyze(trace, { windowMs: 100 });
        const b = analyze(slow, { windowMs: 200 });
        expect(b.windowCount).toBe(a.windowCount);
        expect(b.recordedUs).toBeCloseTo(2 * a.recordedUs, 6);
        const sa = speedups(a);
        const sb = speedups(b);
        const ctx = describeCase({ ...w, once: Object.fromEntries(sa), twice: Object.fromEntries(sb) });
        for (const [id, s] of sa) {
          expect(Math.abs(sb.get(id)! / s - 1), `${ctx}: ${id}`).toBeLessThanOrEqual(0.02);
          spread = Math.max(spread, Math.abs(s - 1));
        }
        const la = a.policies.find((p) => p.policy === 'observed')!.memoryLatencyNs;
        const lb = b.policies.find((p) => p.policy === 'observed')!.memoryLatencyNs;
        expect(close(la, lb, 1e-6), `${ctx}: observed latency ${la} vs ${lb}`).toBe(true);
      }),
      params(6),
    );
    expect(spread).toBeGreaterThan(0.05);
  }, SLOW_MS);
});

// ---------------------------------------------------------------------------------------------
// 8. Observed reproduces the recording

/** Per window: the weighted mean PMU latency of the DRAM loads that have one, cycles (NaN where none). */
function measuredCycles(trace: Trace, windowUs: number, windows: number): Float64Array {
  const m = measuredPerWindow(trace, windowUs, windows);
  return m.latSum.map((v, w) => (m.latW[w]! > 0 ? v / m.latW[w]! : NaN));
}

describe('8. observed reproduces the recording', () => {
  const arb = workloadArb(['amd-opteron-8385-4p', 'amd-asymsched-machine-a', 'amd-opteron-6172-4p', 'intel-spr-2s'], { samples: { min: 1500, max: 4000 } });

  it("per window: predictedUs = the window's length (1e-6); memoryLatencyNs = the measured PMU latency (1 %), or (ι at its bound) the model says it cannot", () => {
    let checked = 0;
    let offModel = 0;
    fc.assert(
      fc.property(arb, (w) => {
        const recorded = workloadTrace(w);
        // Vary the latency of each load around the spec's (× 0.5 … 1.5): the windows' means differ.
        const c = columnsOf(recorded);
        const lat = c.samples['latency_cycles'] as Uint32Array;
        const rnd = xorshift(w.seed);
        for (let i = 0; i < lat.length; i++) if (lat[i]! > 0) lat[i] = Math.max(1, Math.round(lat[i]! * (0.5 + rnd())));
        const trace = rewrite(structuredClone(recorded.manifest), c);
        const r = analyze(trace, { windowMs: 100, policies: ['observed'] });
        const clock = trafficModel(r.input.machine).clockGHz.value;
        expect(clock).toBe(clockOf(w.preset));
        const observed = r.policies[0]!;
        const measured = measuredCycles(trace, 100_000, r.windowCount);
        for (const windows of [observed.headlineWindows, observed.replay.windows]) {
          for (const [i, m] of windows.entries()) {
            const info = r.input.windows.info(i);
            const lengthUs = info.endUs - info.startUs;
            const ctx = `${describeCase(w)} window ${i}`;
            expect(close(m.predictedUs, lengthUs, 1e-6), `${ctx}: predicted ${m.predictedUs} µs vs ${lengthUs} µs`).toBe(true);
            const ns = measured[i]! / clock!;
            if (!Number.isFinite(ns)) continue;
            const why = `${ctx}: latency ${m.memoryLatencyNs} ns vs measured ${ns} ns (κ ${m.queueScale}, ι ${m.idleScale})`;
            if (m.idleScale <= IDLE_SCALE_MIN) {
              // ι at its lower bound: the machine model cannot give a latency this low at these
              // rates (contention and queueing alone exceed it), and the analysis must say so.
              offModel++;
              expect(r.feasibility?.offModel ?? 0, why).toBeGreaterThan(0);
              expect(r.notes.join('\n'), why).toMatch(/MODEL OFF THE RECORDING/);
              expect(m.memoryLatencyNs, why).toBeGreaterThan(ns);
            } else {
              checked++;
              expect(Math.abs(m.memoryLatencyNs / ns - 1), why).toBeLessThanOrEqual(0.01);
            }
          }
        }
      }),
      params(12),
    );
    // Not vacuous: most windows were within the model's reach and checked.
    expect(checked).toBeGreaterThan(2 * offModel);
  }, SLOW_MS);
});
