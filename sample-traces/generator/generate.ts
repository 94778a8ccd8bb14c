/**
 * Turns a workload model's plan into a trace: IBS-like samples, first-touch faults, pages,
 * regions, threads, placements over time, numastat-like counters and phase events. Pure and
 * deterministic: the same options give the same bytes (seeded PRNG, no clock, no Math.random).
 *
 * The assumptions (sampling rate, cache-hit model, latency model, hops rule) are constants
 * below and are described in sample-traces/README.md.
 */
import {
  CURRENT_TRACE_VERSION,
  DATA_SOURCES,
  OPS,
  TRACE_FORMAT_NAME,
  emptyColumns,
  getPreset,
  machineModel,
  trafficModel,
  writeTrace,
  type Capability,
  type CaptureSource,
  type TraceColumns,
  type TraceMachine,
  type TraceManifest,
} from './engine.js';
import { CACHE_PROFILES, getModel, type AccessTarget, type CacheClass, type WorkloadPlan } from './models.js';
import { createRng, type Rng } from './prng.js';

export const GENERATOR_VERSION = '0.1.0';
export const GENERATOR_NAME = `numascope sample-traces generator ${GENERATOR_VERSION}`;

/**
 * Each access sample stands for at most this many memory accesses (the synthetic sampling
 * period); the generator lowers it so that the trace is feasible on its machine (feasibleWeight).
 */
export const SAMPLE_WEIGHT_ACCESSES = 65536;
/**
 * The busiest memory controller in the busiest window (WEIGHT_WINDOW_US) runs at this share of its
 * sustained capacity (the engine's traffic model of the preset): the samples × weights never imply
 * more DRAM traffic than the machine can carry (issue 29: a trace made too fast is infeasible).
 */
export const PEAK_CONTROLLER_UTILISATION = 0.9;
const WEIGHT_WINDOW_US = 100_000;
/**
 * At most this share of the cores' outstanding-miss limit is in flight in any window (Little's law:
 * the samples × weights never imply more concurrent accesses than the threads can issue).
 */
export const PEAK_CONCURRENCY_SHARE = 0.9;
/** Samples each running thread produces per second; with the weight this fixes the access rate. */
export const SAMPLES_PER_THREAD_SECOND = 2000;
/** The core clock the generator assumes to turn ns into cycles. */
export const ASSUMED_CORE_GHZ = 2.5;
/** Load-to-use latency of cache hits, cycles (typical values; the generator's assumption). */
export const CACHE_HIT_CYCLES = { l1: 4, l2: 14, l3: 46 } as const;
/** Idle DRAM latency when the preset has no latency matrix: this × SLIT distance / 10. */
export const FALLBACK_LOCAL_DRAM_NS = 100;
/** Standard deviation of the log-normal latency noise. */
export const LATENCY_NOISE_SIGMA = 0.1;
/** SLIT distance up to which a remote node counts as the same socket (hops = 1); farther = 2. */
export const SAME_SOCKET_MAX_SLIT = 12;

const PAGE_BYTES = 4096;
const PID = 4242;
const CREATED_AT = '2026-01-01T00:00:00Z';
const INIT_START_US = 1000;
/** Threads that do not take part in the init phase start this long before the compute phase. */
const LATE_START_LEAD_US = 500;
const MIN_DURATION_US = 100_000;
const MAX_DURATION_US = 0xffffffff;
const REGION_BASE_ADDRESS = 0x7f3a_0000_0000n;
const REGION_ALIGN_BYTES = 2n * 1024n * 1024n;
const PLACEMENT_OBSERVATIONS = 20;
const COUNTER_READS = 20;
const REGION_SNAPSHOTS = 10;

export interface GenerateOptions {
  model: string;
  seed: number;
  /** Memory-access samples (loads and stores); page-fault rows come on top. */
  samples: number;
  /** Preset id; defaults to the model's machine. */
  machine?: string;
}

export interface GeneratedTrace {
  manifest: TraceManifest;
  columns: TraceColumns;
}

export function generateTraceBytes(options: GenerateOptions): Uint8Array {
  const { manifest, columns } = generateTrace(options);
  return writeTrace(manifest, columns);
}

/** The command line that regenerates a trace (run in sample-traces/, plus `-o FILE`). */
export function generatorCommand(options: Required<GenerateOptions>): string[] {
  return [
    'npx', 'tsx', 'generator/cli.ts',
    '--model', options.model,
    '--seed', String(options.seed),
    '--samples', String(options.samples),
    '--machine', options.machine,
  ];
}

export function generateTrace(options: GenerateOptions): GeneratedTrace {
  const model = getModel(options.model);
  const machineId = options.machine ?? model.defaultMachine;
  if (!Number.isInteger(options.samples) || options.samples < 1) {
    throw new Error(`--samples must be a positive integer, got ${options.samples}`);
  }
  createRng(options.seed); // validates the seed
  const machine = getPreset(machineId);
  const plan = model.plan(machine);
  const topology = topologyOf(machine);
  const timeline = timelineOf(plan, options.samples);
  const pages = placePages(plan, topology, timeline);
  const faults = faultRows(pages);
  const accesses = accessRows(plan, topology, timeline, pages, createRng(options.seed, 'accesses'));
  const samples = mergeSamples(faults, accesses);
  const { weight, utilisation } = feasibleWeight(samples, topology, machine);
  for (let i = 0; i < samples.length; i++) if (samples.op[i] !== OP_CODE.fault) samples.weight[i] = weight;
  addLatencies(samples, topology, machine, utilisation, createRng(options.seed, 'latency'));

  const columns: TraceColumns = {
    // The allocation-site tables stay empty: the models generate no allocation calls.
    ...emptyColumns(),
    samples: samplesColumns(samples),
    pages: pagesColumns(pages, plan),
    threads: threadsColumns(plan, timeline),
    regions: regionsColumns(plan, pages),
    thread_placements: threadPlacementsColumns(plan, topology, timeline),
    region_placements: regionPlacementsColumns(plan, pages, timeline),
    counters: countersColumns(topology, pages, timeline),
    events: eventsColumns(plan, topology, timeline),
  };
  const full = { model: model.id, seed: options.seed, samples: options.samples, machine: machineId };
  return { manifest: manifestOf(full, model.describe(machine), plan, machine, timeline, weight), columns };
}

// ---------------------------------------------------------------------------------------------
// Machine topology, as the generator needs it

interface Topology {
  nodeCount: number;
  /** node index of each cpu */
  nodeOfCpu: Map<number, number>;
  nodeIds: number[];
  distances: number[][];
  idleDramNs: number[][];
}

function topologyOf(machine: TraceMachine): Topology {
  const nodeOfCpu = new Map<number, number>();
  machine.nodes.forEach((node, index) => node.cpus.forEach((cpu) => nodeOfCpu.set(cpu, index)));
  const idleDramNs = machine.distances.map((row, i) =>
    row.map((distance, j) => machine.latenciesNs?.[i]?.[j] ?? (FALLBACK_LOCAL_DRAM_NS * distance) / 10),
  );
  return {
    nodeCount: machine.nodes.length,
    nodeOfCpu,
    nodeIds: machine.nodes.map((n) => n.id),
    distances: machine.distances,
    idleDramNs,
  };
}

function nodeIndexOfCpu(topology: Topology, cpu: number): number {
  const node = topology.nodeOfCpu.get(cpu);
  if (node === undefined) throw new Error(`cpu ${cpu} is on no node of the machine`);
  return node;
}

/** The PMU's hop count: 0 same node, 1 same socket (SLIT ≤ SAME_SOCKET_MAX_SLIT), 2 other socket. */
export function hopsBetween(distances: number[][], from: number, to: number): number {
  if (from === to) return 0;
  return distances[from]![to]! <= SAME_SOCKET_MAX_SLIT ? 1 : 2;
}

// ---------------------------------------------------------------------------------------------
// Time line

interface Timeline {
  durationUs: number;
  initStartUs: number;
  initEndUs: number;
  initSamples: number;
  computeSamples: number;
  startUs: number[];
  /** Per thread: cpu from a time on, in time order. */
  cpuSegments: { fromUs: number; cpu: number }[][];
  migrations: { thread: number; atUs: number; fromCpu: number; toCpu: number }[];
}

function timelineOf(plan: WorkloadPlan, samples: number): Timeline {
  const initThreads = new Set(plan.initRuns.map((run) => run.thread));
  if (initThreads.size !== plan.initRuns.length) throw new Error('a thread has more than one init run');
  const f = plan.initFraction;
  const threadSecondsPerSecond = initThreads.size * f + plan.threads.length * (1 - f);
  const durationUs = Math.max(MIN_DURATION_US, Math.ceil((samples * 1e6) / (SAMPLES_PER_THREAD_SECOND * threadSecondsPerSecond)));
  if (durationUs > MAX_DURATION_US) {
    throw new Error(`${samples} samples need ${durationUs} µs, more than a trace's uint32 µs time range; use fewer samples`);
  }
  const initEndUs = Math.round(f * durationUs);
  const initSamples = Math.round((samples * initThreads.size * f) / threadSecondsPerSecond);

  const startUs = plan.threads.map((_, t) => (t === 0 || initThreads.has(t) ? 10 * t : initEndUs - LATE_START_LEAD_US));
  const migrations: Timeline['migrations'] = [];
  const cpuSegments = plan.threads.map((thread, t) => {
    const segments = [{ fromUs: startUs[t]!, cpu: thread.cpu }];
    if (thread.migration) {
      const atUs = initEndUs + Math.round(thread.migration.atComputeFraction * (durationUs - initEndUs));
      segments.push({ fromUs: atUs, cpu: thread.migration.toCpu });
      migrations.push({ thread: t, atUs, fromCpu: thread.cpu, toCpu: thread.migration.toCpu });
    }
    return segments;
  });
  return { durationUs, initStartUs: INIT_START_US, initEndUs, initSamples, computeSamples: samples - initSamples, startUs, cpuSegments, migrations };
}

function cpuAt(timeline: Timeline, thread: number, timeUs: number): number {
  const segments = timeline.cpuSegments[thread]!;
  let cpu = segments[0]!.cpu;
  for (const segment of segments) if (segment.fromUs <= timeUs) cpu = segment.cpu;
  return cpu;
}

// ---------------------------------------------------------------------------------------------
// Pages and first touch

interface Pages {
  count: number;
  /** First page index of each region. */
  regionFirstPage: number[];
  regionStart: bigint[];
  region: Int32Array;
  node: Int8Array;
  firstTouchUs: Float64Array;
  firstTouchThread: Int32Array;
  firstTouchCpu: Int16Array;
}

function placePages(plan: WorkloadPlan, topology: Topology, timeline: Timeline): Pages {
  const regionFirstPage: number[] = [];
  const regionStart: bigint[] = [];
  let count = 0;
  let address = REGION_BASE_ADDRESS;
  for (const region of plan.regions) {
    regionFirstPage.push(count);
    regionStart.push(address);
    count += region.pages;
    const bytes = BigInt(region.pages * PAGE_BYTES);
    // Next region: aligned, with at least one alignment unit of unmapped gap.
    address = ((address + bytes + REGION_ALIGN_BYTES - 1n) / REGION_ALIGN_BYTES + 1n) * REGION_ALIGN_BYTES;
  }
  const pages: Pages = {
    count,
    regionFirstPage,
    regionStart,
    region: new Int32Array(count).fill(-1),
    node: new Int8Array(count),
    firstTouchUs: new Float64Array(count).fill(-1),
    firstTouchThread: new Int32Array(count).fill(-1),
    firstTouchCpu: new Int16Array(count).fill(-1),
  };
  plan.regions.forEach((region, r) => pages.region.fill(r, regionFirstPage[r]!, regionFirstPage[r]! + region.pages));

  const touch = (page: number, thread: number, timeUs: number) => {
    if (pages.firstTouchThread[page] !== -1) throw new Error(`page ${page} is first-touched twice by the model`);
    const cpu = cpuAt(timeline, thread, timeUs);
    pages.firstTouchUs[page] = timeUs;
    pages.firstTouchThread[page] = thread;
    pages.firstTouchCpu[page] = cpu;
    // Default policy: the page lands on the node of the cpu that touched it first.
    pages.node[page] = topology.nodeIds[nodeIndexOfCpu(topology, cpu)]!;
  };

  // Private regions: touched page by page (1 µs apart) as soon as the thread starts.
  plan.threads.forEach((thread, t) => {
    let timeUs = timeline.startUs[t]!;
    for (const r of thread.privateRegions) {
      for (let k = 0; k < plan.regions[r]!.pages; k++) touch(regionFirstPage[r]! + k, t, timeUs++);
    }
    const firstUse = t === 0 || plan.initRuns.some((run) => run.thread === t) ? timeline.initStartUs : timeline.initEndUs;
    if (timeUs > firstUse) throw new Error(`thread ${t} touches too many private pages before it starts working`);
  });
  // Init runs: page k of a run at initStart + floor(k · initLength / pages).
  const initLengthUs = timeline.initEndUs - timeline.initStartUs;
  for (const run of plan.initRuns) {
    const first = regionFirstPage[run.region]! + run.firstPage;
    for (let k = 0; k < run.pages; k++) {
      touch(first + k, run.thread, timeline.initStartUs + Math.floor((k * initLengthUs) / run.pages));
    }
  }
  const untouched = pages.firstTouchThread.indexOf(-1);
  if (untouched >= 0) throw new Error(`the model never touches page ${untouched}`);
  return pages;
}

// ---------------------------------------------------------------------------------------------
// Sample rows

const OP_CODE = Object.fromEntries(OPS.map((op, code) => [op, code])) as Record<(typeof OPS)[number], number>;
const SOURCE_CODE = Object.fromEntries(DATA_SOURCES.map((s, code) => [s, code])) as Record<(typeof DATA_SOURCES)[number], number>;

/** Samples under construction, column by column. */
interface SampleRows {
  length: number;
  timeUs: Uint32Array;
  thread: Uint32Array;
  cpu: Int16Array;
  page: Int32Array;
  offset: Uint16Array;
  op: Int8Array;
  dataSource: Int8Array;
  hops: Int8Array;
  node: Int8Array;
  latencyCycles: Uint32Array;
  weight: Uint32Array;
  /** Node index the access came from (not written; used for latency). */
  fromNode: Int8Array;
}

function allocateRows(length: number): SampleRows {
  return {
    length,
    timeUs: new Uint32Array(length),
    thread: new Uint32Array(length),
    cpu: new Int16Array(length),
    page: new Int32Array(length),
    offset: new Uint16Array(length),
    op: new Int8Array(length),
    dataSource: new Int8Array(length),
    hops: new Int8Array(length),
    node: new Int8Array(length),
    latencyCycles: new Uint32Array(length),
    weight: new Uint32Array(length),
    fromNode: new Int8Array(length),
  };
}

/** One page-fault row per page, at its first touch, in time order. */
function faultRows(pages: Pages): SampleRows {
  const order = Array.from({ length: pages.count }, (_, p) => p).sort(
    (a, b) => pages.firstTouchUs[a]! - pages.firstTouchUs[b]! || a - b,
  );
  const rows = allocateRows(pages.count);
  order.forEach((page, row) => {
    rows.timeUs[row] = pages.firstTouchUs[page]!;
    rows.thread[row] = pages.firstTouchThread[page]!;
    rows.cpu[row] = pages.firstTouchCpu[page]!;
    rows.page[row] = page;
    rows.offset[row] = 0;
    rows.op[row] = OP_CODE.fault;
    rows.dataSource[row] = SOURCE_CODE.unknown;
    rows.hops[row] = -1;
    rows.node[row] = pages.node[page]!;
    rows.weight[row] = 1; // every fault is recorded
  });
  return rows;
}

interface ResolvedTarget extends AccessTarget {
  cumulativeShare: number;
  firstGlobalPage: number;
}

function accessRows(plan: WorkloadPlan, topology: Topology, timeline: Timeline, pages: Pages, rng: Rng): SampleRows {
  const rows = allocateRows(timeline.initSamples + timeline.computeSamples);
  let row = 0;

  const emit = (timeUs: number, thread: number, page: number, isLoad: boolean, cache: CacheClass) => {
    const cpu = cpuAt(timeline, thread, timeUs);
    const fromNode = nodeIndexOfCpu(topology, cpu);
    const pageNode = pages.node[page]!;
    const pageNodeIndex = topology.nodeIds.indexOf(pageNode);
    rows.timeUs[row] = timeUs;
    rows.thread[row] = thread;
    rows.cpu[row] = cpu;
    rows.page[row] = page;
    rows.offset[row] = 8 * rng.int(PAGE_BYTES / 8); // 8-byte words
    rows.op[row] = isLoad ? OP_CODE.load : OP_CODE.store;
    const level = cacheLevel(CACHE_PROFILES[cache], rng.next());
    if (level === 'dram') {
      rows.dataSource[row] = pageNodeIndex === fromNode ? SOURCE_CODE['local-dram'] : SOURCE_CODE['remote-dram'];
      rows.hops[row] = hopsBetween(topology.distances, fromNode, pageNodeIndex);
    } else {
      rows.dataSource[row] = SOURCE_CODE[level];
      rows.hops[row] = 0;
    }
    rows.node[row] = pageNode;
    rows.weight[row] = SAMPLE_WEIGHT_ACCESSES;
    rows.fromNode[row] = fromNode;
    row++;
  };

  // Init phase: the threads with a touch run store into the page they are initialising.
  const runs = plan.initRuns;
  const initLengthUs = timeline.initEndUs - timeline.initStartUs;
  for (let k = 0; k < timeline.initSamples; k++) {
    const timeUs = sampleTime(timeline.initStartUs, initLengthUs, k, timeline.initSamples, rng);
    const run = runs[rng.int(runs.length)]!;
    // The page this thread is initialising now (touched at or before timeUs).
    const pageInRun = Math.min(run.pages - 1, Math.floor(((timeUs - timeline.initStartUs) * run.pages) / initLengthUs));
    emit(timeUs, run.thread, pages.regionFirstPage[run.region]! + run.firstPage + pageInRun, false, 'init');
  }

  // Compute phase: every thread, spread over its targets.
  const targets = plan.threads.map((_, t) => resolveTargets(plan.computeTargets(t), pages, t));
  const computeLengthUs = timeline.durationUs - timeline.initEndUs;
  for (let k = 0; k < timeline.computeSamples; k++) {
    const timeUs = sampleTime(timeline.initEndUs, computeLengthUs, k, timeline.computeSamples, rng);
    const thread = rng.int(plan.threads.length);
    const threadTargets = targets[thread]!;
    const u = rng.next();
    const target = threadTargets.find((x) => u < x.cumulativeShare) ?? threadTargets[threadTargets.length - 1]!;
    const page = target.firstGlobalPage + rng.int(target.pages);
    emit(timeUs, thread, page, rng.next() < target.loadShare, target.cache);
  }
  return rows;
}

/** k-th of n sample times spread evenly over [start, start+length), jittered, never decreasing. */
function sampleTime(startUs: number, lengthUs: number, k: number, n: number, rng: Rng): number {
  return startUs + Math.floor(((k + rng.next()) * lengthUs) / n);
}

function resolveTargets(targets: AccessTarget[], pages: Pages, thread: number): ResolvedTarget[] {
  let cumulative = 0;
  const resolved = targets.map((target) => {
    cumulative += target.share;
    return { ...target, cumulativeShare: cumulative, firstGlobalPage: pages.regionFirstPage[target.region]! + target.firstPage };
  });
  if (Math.abs(cumulative - 1) > 1e-9) throw new Error(`thread ${thread}'s access shares sum to ${cumulative}, not 1`);
  return resolved;
}

function cacheLevel(profile: { l1: number; l2: number; l3: number }, u: number): 'l1' | 'l2' | 'l3' | 'dram' {
  if (u < profile.l1) return 'l1';
  if (u < profile.l1 + profile.l2) return 'l2';
  if (u < profile.l1 + profile.l2 + profile.l3) return 'l3';
  return 'dram';
}

/** Both inputs are in time order; faults go first within the same µs. */
function mergeSamples(faults: SampleRows, accesses: SampleRows): SampleRows {
  const out = allocateRows(faults.length + accesses.length);
  let f = 0;
  let a = 0;
  for (let row = 0; row < out.length; row++) {
    const takeFault = a >= accesses.length || (f < faults.length && faults.timeUs[f]! <= accesses.timeUs[a]!);
    copyRow(takeFault ? faults : accesses, takeFault ? f++ : a++, out, row);
  }
  return out;
}

function copyRow(from: SampleRows, i: number, to: SampleRows, j: number): void {
  to.timeUs[j] = from.timeUs[i]!;
  to.thread[j] = from.thread[i]!;
  to.cpu[j] = from.cpu[i]!;
  to.page[j] = from.page[i]!;
  to.offset[j] = from.offset[i]!;
  to.op[j] = from.op[i]!;
  to.dataSource[j] = from.dataSource[i]!;
  to.hops[j] = from.hops[i]!;
  to.node[j] = from.node[i]!;
  to.latencyCycles[j] = from.latencyCycles[i]!;
  to.weight[j] = from.weight[i]!;
  to.fromNode[j] = from.fromNode[i]!;
}

/**
 * Load latency in cycles: cache hits take CACHE_HIT_CYCLES; a DRAM load takes the preset's idle
 * latency plus its controller's loaded-latency delay at the window's utilisation (the engine's
 * curve, machine/traffic.ts rule LQ0: c·u + q·u/(1 − u), with `utilisation` from feasibleWeight),
 * × ASSUMED_CORE_GHZ, all with log-normal noise. Stores and faults are not measured (0).
 */
function addLatencies(rows: SampleRows, topology: Topology, machine: TraceMachine, utilisation: Map<number, Float64Array>, rng: Rng): void {
  const t = trafficModel(machineModel(machine));
  const hitCycles = new Map<number, number>([
    [SOURCE_CODE.l1, CACHE_HIT_CYCLES.l1],
    [SOURCE_CODE.l2, CACHE_HIT_CYCLES.l2],
    [SOURCE_CODE.l3, CACHE_HIT_CYCLES.l3],
  ]);
  for (let i = 0; i < rows.length; i++) {
    if (rows.op[i] !== OP_CODE.load) continue;
    const source = rows.dataSource[i]!;
    let cycles = hitCycles.get(source);
    if (cycles === undefined) {
      const m = topology.nodeIds.indexOf(rows.node[i]!);
      const u = Math.min(0.99, utilisation.get(Math.floor(rows.timeUs[i]! / WEIGHT_WINDOW_US))?.[m] ?? 0);
      const delay = t.mcContentionNs[m]! * u + (t.mcQueueNs[m]! * u) / (1 - u);
      cycles = (topology.idleDramNs[rows.fromNode[i]!]![m]! + delay) * ASSUMED_CORE_GHZ;
    }
    rows.latencyCycles[i] = Math.max(1, Math.round(cycles * Math.exp(LATENCY_NOISE_SIGMA * rng.normal())));
  }
}

// ---------------------------------------------------------------------------------------------
// Tables

/**
 * The sample weight at which the trace's DRAM traffic is feasible on its machine: the busiest
 * memory controller (bytes of the DRAM samples served by its node, a load one line, a store two)
 * in the busiest WEIGHT_WINDOW_US window runs at PEAK_CONTROLLER_UTILISATION of its sustained
 * capacity (machine/traffic.ts), at most SAMPLE_WEIGHT_ACCESSES; and each window's controller
 * utilisations at that weight.
 */
function feasibleWeight(rows: SampleRows, topology: Topology, machine: TraceMachine): { weight: number; utilisation: Map<number, Float64Array> } {
  const capacity = trafficModel(machineModel(machine)).mcCapacity.value;
  const n = topology.nodeCount;
  const windows = new Map<number, Float64Array>();
  const local = SOURCE_CODE['local-dram'];
  const remote = SOURCE_CODE['remote-dram'];
  for (let i = 0; i < rows.length; i++) {
    const ds = rows.dataSource[i];
    if (ds !== local && ds !== remote) continue;
    const w = Math.floor(rows.timeUs[i]! / WEIGHT_WINDOW_US);
    let bytes = windows.get(w);
    if (!bytes) windows.set(w, (bytes = new Float64Array(n)));
    const node = topology.nodeIds.indexOf(rows.node[i]!);
    if (node >= 0) bytes[node]! += rows.op[i] === OP_CODE.store ? 128 : 64;
  }
  let peak = 0;
  for (const bytes of windows.values()) for (let m = 0; m < n; m++) peak = Math.max(peak, bytes[m]! / (WEIGHT_WINDOW_US * 1e-6) / capacity[m]!);
  let weight = peak > 0 ? Math.max(1, Math.min(SAMPLE_WEIGHT_ACCESSES, Math.floor(PEAK_CONTROLLER_UTILISATION / peak))) : SAMPLE_WEIGHT_ACCESSES;
  // Each window's controller utilisation at a weight (the latencies' loaded delay).
  const utilisationAt = (wt: number) => {
    const out = new Map<number, Float64Array>();
    for (const [w, bytes] of windows) out.set(w, Float64Array.from(bytes, (b, m) => (b * wt) / (WEIGHT_WINDOW_US * 1e-6) / capacity[m]!));
    return out;
  };
  // The cores must be able to issue it (Little's law): a window's DRAM accesses per ns × their mean
  // latency at most PEAK_CONCURRENCY_SHARE of its threads' outstanding-miss limit (rule MLP0).
  // A lower weight lowers the latencies too, so one reduction keeps every window feasible.
  const inFlight = concurrencyPerWindow(rows, topology, machine, weight, utilisationAt(weight));
  let worst = 0;
  for (const c of inFlight.values()) worst = Math.max(worst, c.inFlight / (PEAK_CONCURRENCY_SHARE * c.limit));
  if (worst > 1) weight = Math.max(1, Math.floor(weight / worst));
  return { weight, utilisation: utilisationAt(weight) };
}

/**
 * Per WEIGHT_WINDOW_US window at a sample weight: the DRAM accesses in flight (accesses per ns ×
 * the mean DRAM latency the generator gives them, ns, stores included) and the most the window's threads can
 * have in flight (threads with DRAM samples × the cores' outstanding-miss limit, rule MLP0).
 */
function concurrencyPerWindow(
  rows: SampleRows,
  topology: Topology,
  machine: TraceMachine,
  weight: number,
  utilisation: Map<number, Float64Array>,
): Map<number, { inFlight: number; limit: number }> {
  const t = trafficModel(machineModel(machine));
  const local = SOURCE_CODE['local-dram'];
  const remote = SOURCE_CODE['remote-dram'];
  const acc = new Map<number, { accesses: number; loads: number; latencyNs: number; threads: Set<number> }>();
  for (let i = 0; i < rows.length; i++) {
    const ds = rows.dataSource[i];
    if (ds !== local && ds !== remote) continue;
    const w = Math.floor(rows.timeUs[i]! / WEIGHT_WINDOW_US);
    let a = acc.get(w);
    if (!a) acc.set(w, (a = { accesses: 0, loads: 0, latencyNs: 0, threads: new Set() }));
    a.accesses++;
    a.threads.add(rows.thread[i]!);
    // Every DRAM access's latency (a store's too: a window of init stores has no load to measure).
    const m = topology.nodeIds.indexOf(rows.node[i]!);
    const u = Math.min(0.99, utilisation.get(w)?.[m] ?? 0);
    a.loads++;
    a.latencyNs += topology.idleDramNs[rows.fromNode[i]!]![m]! + t.mcContentionNs[m]! * u + (t.mcQueueNs[m]! * u) / (1 - u);
  }
  const out = new Map<number, { inFlight: number; limit: number }>();
  for (const [w, a] of acc) {
    const meanNs = a.loads > 0 ? a.latencyNs / a.loads : 0;
    out.set(w, { inFlight: ((a.accesses * weight) / (WEIGHT_WINDOW_US * 1000)) * meanNs, limit: a.threads.size * t.mlpLimit.value });
  }
  return out;
}

function samplesColumns(rows: SampleRows): TraceColumns['samples'] {
  return {
    time_us: rows.timeUs,
    thread: rows.thread,
    cpu: rows.cpu,
    page: rows.page,
    offset: rows.offset,
    op: { values: OPS, indices: rows.op },
    event: { values: ['synthetic'], indices: new Int8Array(rows.length) },
    data_source: { values: DATA_SOURCES, indices: rows.dataSource },
    hops: rows.hops,
    node: rows.node,
    latency_cycles: rows.latencyCycles,
    // No code made these accesses: no stacks (format v3 samples.stack, -1 = none).
    stack: new Int32Array(rows.length).fill(-1),
    hitm: new Int8Array(rows.length).fill(-1),
    weight: rows.weight,
  };
}

function pagesColumns(pages: Pages, plan: WorkloadPlan): TraceColumns['pages'] {
  const address = new BigUint64Array(pages.count);
  plan.regions.forEach((region, r) => {
    for (let k = 0; k < region.pages; k++) {
      address[pages.regionFirstPage[r]! + k] = pages.regionStart[r]! + BigInt(k * PAGE_BYTES);
    }
  });
  return {
    address,
    region: pages.region,
    node: pages.node,
    page_size: new Uint32Array(pages.count).fill(PAGE_BYTES),
    first_touch_us: BigInt64Array.from(pages.firstTouchUs, (us) => BigInt(us)),
    first_touch_thread: pages.firstTouchThread,
    first_touch_cpu: pages.firstTouchCpu,
  };
}

function threadsColumns(plan: WorkloadPlan, timeline: Timeline): TraceColumns['threads'] {
  const n = plan.threads.length;
  return {
    tid: Int32Array.from({ length: n }, (_, t) => PID + t),
    pid: new Int32Array(n).fill(PID),
    name: plan.threads.map((t) => t.name),
    first_seen_us: Uint32Array.from(timeline.startUs),
    last_seen_us: new Uint32Array(n).fill(timeline.durationUs),
    migrations: BigInt64Array.from(plan.threads, (_, t) => BigInt(timeline.cpuSegments[t]!.length - 1)),
  };
}

function regionsColumns(plan: WorkloadPlan, pages: Pages): TraceColumns['regions'] {
  return {
    start: BigUint64Array.from(pages.regionStart),
    end: BigUint64Array.from(plan.regions, (region, r) => pages.regionStart[r]! + BigInt(region.pages * PAGE_BYTES)),
    kind: plan.regions.map((r) => r.kind),
    path: plan.regions.map((r) => r.path),
    policy: plan.regions.map(() => 'default'),
    alloc_site: plan.regions.map((r) => r.allocSite),
  };
}

/** Evenly spaced observation times 0 … duration (count + 1 of them, or from `first`). */
function observationTimes(durationUs: number, count: number, first = 0): number[] {
  return Array.from({ length: count + 1 - first }, (_, k) => Math.round(((k + first) * durationUs) / count));
}

function threadPlacementsColumns(plan: WorkloadPlan, topology: Topology, timeline: Timeline): TraceColumns['thread_placements'] {
  const observations: { timeUs: number; thread: number }[] = [];
  plan.threads.forEach((_, t) => {
    const times = new Set([timeline.startUs[t]!, ...timeline.cpuSegments[t]!.map((s) => s.fromUs)]);
    for (const timeUs of observationTimes(timeline.durationUs, PLACEMENT_OBSERVATIONS)) {
      if (timeUs >= timeline.startUs[t]!) times.add(timeUs);
    }
    for (const timeUs of times) observations.push({ timeUs, thread: t });
  });
  observations.sort((a, b) => a.timeUs - b.timeUs || a.thread - b.thread);
  const cpus = observations.map((o) => cpuAt(timeline, o.thread, o.timeUs));
  return {
    time_us: Uint32Array.from(observations, (o) => o.timeUs),
    thread: Uint32Array.from(observations, (o) => o.thread),
    cpu: Int16Array.from(cpus),
    node: Int8Array.from(cpus, (cpu) => topology.nodeIds[nodeIndexOfCpu(topology, cpu)]!),
  };
}

function regionPlacementsColumns(plan: WorkloadPlan, pages: Pages, timeline: Timeline): TraceColumns['region_placements'] {
  const rows: { timeUs: number; region: number; node: number; pages: number }[] = [];
  for (const timeUs of observationTimes(timeline.durationUs, REGION_SNAPSHOTS, 1)) {
    plan.regions.forEach((region, r) => {
      const perNode = new Map<number, number>();
      for (let p = pages.regionFirstPage[r]!; p < pages.regionFirstPage[r]! + region.pages; p++) {
        if (pages.firstTouchUs[p]! <= timeUs) perNode.set(pages.node[p]!, (perNode.get(pages.node[p]!) ?? 0) + 1);
      }
      for (const node of [...perNode.keys()].sort((a, b) => a - b)) rows.push({ timeUs, region: r, node, pages: perNode.get(node)! });
    });
  }
  return {
    time_us: Uint32Array.from(rows, (x) => x.timeUs),
    region: Uint32Array.from(rows, (x) => x.region),
    node: Int8Array.from(rows, (x) => x.node),
    pages: Uint32Array.from(rows, (x) => x.pages),
    page_size: new Uint32Array(rows.length).fill(PAGE_BYTES),
  };
}

/**
 * Per-node numastat counters, cumulative pages. This synthetic process is the whole system and
 * every page lands where it was first touched: numa_hit = numa_local = pages first-touched on
 * the node so far; numa_miss = numa_other = 0.
 */
function countersColumns(topology: Topology, pages: Pages, timeline: Timeline): TraceColumns['counters'] {
  const time: number[] = [];
  const counter: string[] = [];
  const scopeId: number[] = [];
  const value: number[] = [];
  for (const timeUs of observationTimes(timeline.durationUs, COUNTER_READS)) {
    for (const node of topology.nodeIds) {
      let allocated = 0;
      for (let p = 0; p < pages.count; p++) if (pages.node[p] === node && pages.firstTouchUs[p]! <= timeUs) allocated++;
      for (const [name, v] of [['numa_hit', allocated], ['numa_miss', 0], ['numa_local', allocated], ['numa_other', 0]] as const) {
        time.push(timeUs);
        counter.push(name);
        scopeId.push(node);
        value.push(v);
      }
    }
  }
  return {
    time_us: Uint32Array.from(time),
    counter,
    scope: counter.map(() => 'node'),
    scope_id: Int32Array.from(scopeId),
    value: Float64Array.from(value),
  };
}

function eventsColumns(plan: WorkloadPlan, topology: Topology, timeline: Timeline): TraceColumns['events'] {
  const nodeOf = (cpu: number) => topology.nodeIds[nodeIndexOfCpu(topology, cpu)]!;
  const events: { timeUs: number; kind: string; thread: number; value: bigint; detail: string }[] = [];
  plan.threads.forEach((thread, t) => {
    events.push({
      timeUs: timeline.startUs[t]!,
      kind: 'thread-start',
      thread: t,
      value: -1n,
      detail: `thread ${t} (${thread.name}) started on cpu ${thread.cpu}, node ${nodeOf(thread.cpu)}`,
    });
  });
  events.push({ timeUs: timeline.initStartUs, kind: 'phase', thread: -1, value: -1n, detail: `init: ${plan.initDetail}` });
  events.push({ timeUs: timeline.initEndUs, kind: 'phase', thread: -1, value: -1n, detail: `compute: ${plan.computeDetail}` });
  for (const m of timeline.migrations) {
    events.push({
      timeUs: m.atUs,
      kind: 'thread-migration',
      thread: m.thread,
      value: BigInt(m.toCpu),
      detail: `thread ${m.thread} moved from cpu ${m.fromCpu} (node ${nodeOf(m.fromCpu)}) to cpu ${m.toCpu} (node ${nodeOf(m.toCpu)})`,
    });
  }
  events.sort((a, b) => a.timeUs - b.timeUs);
  return {
    time_us: Uint32Array.from(events, (e) => e.timeUs),
    kind: events.map((e) => e.kind),
    thread: Int32Array.from(events, (e) => e.thread),
    value: BigInt64Array.from(events, (e) => e.value),
    detail: events.map((e) => e.detail),
  };
}

// ---------------------------------------------------------------------------------------------
// Manifest

const RECORDING_SOURCES = ['page-faults', 'procfs', 'sysfs-topology', 'ibs-op', 'pebs-load', 'pebs-store', 'damon', 'core-counters', 'uncore'];


/**
 * The trace id of a synthetic trace (`manifest.traceId`, v4): 32 hex digits hashed from its
 * generator command (FNV-1a, four 32-bit lanes), so that the same command makes the same file.
 */
export function syntheticTraceId(command: readonly string[]): string {
  const text = command.join('\u0000');
  let out = '';
  for (let lane = 0; lane < 4; lane++) {
    let h = (0x811c9dc5 ^ Math.imul(lane + 1, 0x9e3779b1)) >>> 0;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    out += h.toString(16).padStart(8, '0');
  }
  return out;
}

function manifestOf(
  options: Required<GenerateOptions>,
  description: string,
  plan: WorkloadPlan,
  machine: TraceMachine,
  timeline: Timeline,
  weight: number,
): TraceManifest {
  const by = `the ${options.model} workload model (seed ${options.seed})`;
  const sources: CaptureSource[] = [
    { id: 'synthetic', status: 'used', reason: `generated by ${GENERATOR_NAME} from ${by}`, samplePeriod: weight, intervalMs: null },
    ...RECORDING_SOURCES.map((id) => ({
      id,
      status: 'not-requested' as const,
      reason: 'synthetic trace: nothing was recorded',
      samplePeriod: null,
      intervalMs: null,
    })),
  ];
  const synthetic = (metric: string, how: string): Capability => ({ metric, status: 'synthetic', reason: `generated by ${by}: ${how}` });
  const unavailable = (metric: string, why: string): Capability => ({ metric, status: 'unavailable', reason: why });
  const capabilities: Capability[] = [
    synthetic('page-placement', 'each page lands on the node of the thread that first touches it'),
    synthetic('first-touch', 'one page-fault row per page, at the time the model touches it first'),
    synthetic('thread-placement', 'threads pinned to cpus, observed at regular intervals'),
    synthetic('thread-migrations', 'migrations the model scripts (if any)'),
    synthetic('memory-accesses', `IBS-like samples, each standing for ${weight} accesses (the weight at which the busiest memory controller runs at ${PEAK_CONTROLLER_UTILISATION * 100} % of its sustained capacity in the busiest ${WEIGHT_WINDOW_US / 1000} ms, at most ${SAMPLE_WEIGHT_ACCESSES}, and no window with more DRAM accesses in flight than ${PEAK_CONCURRENCY_SHARE * 100} % of its threads' outstanding-miss limit), drawn from the model's access mix`),
    synthetic('access-latency', `cache-hit cycles, or the preset's idle DRAM latency plus the engine's loaded-latency delay at the window's controller utilisation (rule LQ0), × ${ASSUMED_CORE_GHZ} GHz, with log-normal noise`),
    synthetic('data-source', 'fixed L1/L2/L3 hit probabilities per access stream; DRAM is local or remote by the page\'s node'),
    synthetic('numa-counters', 'numa_hit/numa_local per node = pages first-touched there so far (the process is the whole system)'),
    unavailable('memory-bandwidth', 'synthetic trace: no memory-controller counters were generated'),
    unavailable('link-bandwidth', 'synthetic trace: no interconnect counters were generated'),
    unavailable('ipc', 'synthetic trace: no core counters were generated'),
    unavailable('l3-mpki', 'synthetic trace: no core counters were generated'),
    unavailable('allocation-sites', 'synthetic trace: no allocation calls were generated'),
    unavailable('code-locations', 'synthetic trace: no code made the accesses, so samples have no call stacks'),
  ];
  const command = generatorCommand(options);
  return {
    format: TRACE_FORMAT_NAME,
    version: CURRENT_TRACE_VERSION,
    producer: { name: 'numascope', version: GENERATOR_VERSION },
    createdAt: CREATED_AT,
    host: null,
    traceId: syntheticTraceId(command),
    origin: { kind: 'synthetic', generator: GENERATOR_NAME, seed: options.seed, model: options.model, description, command, from: null },
    // The clock the latencies were made with, so that the engine converts them back with it.
    machine: { ...machine, cpuClockGHz: ASSUMED_CORE_GHZ, provenance: { ...machine.provenance, cpuClockGHz: `estimated:synthetic trace: the clock the generator made its latency_cycles with (${ASSUMED_CORE_GHZ} GHz)` } },
    capture: {
      startMonotonicNs: '0',
      startUnixMs: Date.parse(CREATED_AT) - Math.ceil(timeline.durationUs / 1000),
      durationUs: timeline.durationUs,
      stopReason: 'generated',
      sources,
      capabilities,
      lostSamples: 0,
      sampleCount: 0, // filled in by writeTrace
      notes: [
        `Synthetic: no program ran and nothing was measured; every row comes from ${by}.`,
        `Regenerate in sample-traces/ with: ${command.join(' ')} -o FILE`,
        `Phases: init ${timeline.initStartUs}–${timeline.initEndUs} µs (${plan.initDetail}); compute ${timeline.initEndUs}–${timeline.durationUs} µs.`,
      ],
    },
    process: { pid: PID, startTimeTicks: null, command: [plan.program], attached: false, exitCode: null },
    appliedPlans: [],
    tables: [],
  };
}
