/**
 * The traffic model's machine facts (docs/engine.md, "Traffic model"): what the simulator needs
 * beyond the MachineModel's own numbers, each derived from the machine description or a
 * published figure, with its provenance. Nothing here is fitted to a workload.
 *
 * - Sustained memory-controller capacity: a `numascope bench` calibration's measured figure (rule
 *   S2, provenance measured), else a preset's `sustained` figure (STREAM) when it has one (rule S0),
 *   else the theoretical bandwidth × the mean sustained/theoretical ratio of measured STREAM figures
 *   of machines of the same DRAM era (rule S1, `sustainedShare`): NUMA-STREAM's two machines for
 *   DDR2/DDR3, published two-socket DDR4 servers for current machines and unknown ones.
 * - Crossbar (rule XB0): where a preset documents that its nodes' northbridge / crossbar, not the
 *   DRAM, limits the bandwidth their own cores reach (`streamLimitedByCrossbar`), the sustained
 *   (STREAM) figure per node is the capacity of that crossbar, which every byte entering or leaving
 *   the node passes: its controller's traffic and every packet arriving over a link (for the node's
 *   cores, its controller, or passing on). Its service scale is the node's idle local latency (as a
 *   controller's, rule LQ0: it is the resource a local access queues at); the controllers then take
 *   rule S1. Other machines have no crossbar resource.
 * - Link capacity: the model's per-direction link capacity; every packet is counted on it
 *   (request, response header, data, coherence probes), which is what makes data throughput on a
 *   link lower than its raw rate.
 * - Loaded-latency curve of every resource (rule LQ0): delay(u) = c · u + q · u / (1 − u), u =
 *   load / capacity: a contention part that grows with load (c = LQ_CONTENTION_SHARE × the
 *   resource's idle latency: a controller's node's idle local latency, a link's idle cost of one
 *   hop) and a queueing part with the resource's own service time (q = LQ_QUEUE_SCALE × the time
 *   one line occupies it, line bytes / capacity). Both constants come from one published Intel MLC
 *   loaded-latency curve (MLC_REFERENCE_CURVE) fitted by `fitLoadedLatencyCurve`, so the shape is
 *   flat well past half of the peak and steep only close to it. A `numascope bench` calibration's
 *   loaded-latency points of a node replace its controller's c and q by the same fit (rule LQ2).
 *   Under saturation the closed loop (engine/simulate.ts) bounds the latency (Little's law).
 * - Outstanding-miss limit per core (rule MLP0): the most L1 data-cache misses one core can have in
 *   flight (miss address buffers / line fill buffers), a preset's `outstandingMissesPerCore` when
 *   known, else DEFAULT_OUTSTANDING_MISSES. The ceiling of any thread's memory-level parallelism:
 *   a bandwidth-bound thread (STREAM) keeps it full.
 * - Memory-level parallelism of a stalled thread (rule MLP1, the stall-share conversion's overlap)
 *   by Little's law from the sustained capacity (the crossbar's where rule XB0 gives a smaller one): sustained bytes/s × idle local latency / 64 B /
 *   cores of the node (machine mean over nodes with cpus), at most the MLP0 limit: the concurrency
 *   a node's cores keep in flight to carry its sustained bandwidth at idle latency, a typical
 *   memory-bound code's, not a streaming kernel's.
 * - Coherence: `broadcast` (every DRAM access sends a probe to every node with caches, each
 *   answers the requester) for presets that say so, else `filtered` (directory / probe filter:
 *   no broadcast traffic modelled).
 * - Routes: where the routes are estimated (`estimated:` route provenance) and a pair's route is
 *   a fewest-hop one, the traffic of that pair is shared equally by every fewest-hop path over the
 *   links (at most MAX_SHARED_PATHS); documented routes are used as they are.
 * - Clock (what PMU load latencies in cycles and cycle counters are divided by): the machine
 *   model's recorded clock (a trace's `machine.cpuClockGHz`: the recording machine's cpufreq base
 *   or maximum frequency, the `@ x.xxGHz` of its model name or its /proc/cpuinfo `cpu MHz`; an
 *   import's perf.data cpudesc or TSC rate), else a preset's `cpu clock` figure, else a
 *   `@ x.xxGHz` (or `x.xx GHz`) in the cpu model string, else null with the reason (PMU latencies
 *   in cycles and cycle counters then cannot be turned into time).
 */
import type { LoadedLatencyPoint, MachineModel, Sourced } from '../model/contract.js';
import { listPresets, type MachinePreset, type MemoryGeneration } from './presets.js';

/** Bytes of one cache line (the unit of DRAM traffic). */
export const LINE_BYTES = 64;
/** Request packet (command + address), bytes: HyperTransport sized-read/-write request, 8 B. */
export const REQUEST_BYTES = 8;
/** Header of a response or data packet, bytes: HyperTransport read response / target done, 4 B. */
export const RESPONSE_BYTES = 4;
/** Probe packet from the home node, bytes (HyperTransport probe request, 8 B). */
export const PROBE_BYTES = 8;
/** Probe response to the requester, bytes (HyperTransport probe response without data, 4 B). */
export const PROBE_RESPONSE_BYTES = 4;
/**
 * Rule MLP0's default, when the preset does not give its cores' outstanding-miss limit: 10 L1
 * data-cache line fill buffers per core (Intel since Nehalem).
 */
export const DEFAULT_OUTSTANDING_MISSES = 10;
/** Most equal-cost paths one node pair's traffic is spread over. */
export const MAX_SHARED_PATHS = 16;

export type Coherence = 'broadcast' | 'filtered';

/** Sparse per-pair lists (CSR): for pair p = c·n+m, entries start[p] … start[p+1]−1. */
export interface PairLists {
  start: Int32Array;
  link: Int32Array;
  value: Float64Array;
}

export interface TrafficModel {
  /** Sustained memory-controller capacity per node index, bytes/s. */
  mcCapacity: Sourced<Float64Array>;
  /** Crossbar capacity per node index, bytes/s (rule XB0), or null: no crossbar resource. */
  crossbarCapacity: Sourced<Float64Array> | null;
  /** Node index each link arrives at. */
  linkTo: Int32Array;
  /** Links on an access's data path (m → c), weighted by the path share. */
  dataLinks: PairLists;
  /** Capacity per link, bytes/s (raw per direction; packets counted in full). */
  linkCapacity: Float64Array;
  /** Loaded-latency curve per memory controller (rule LQ0/LQ2): contention coefficient c, ns (delay c·u). */
  mcContentionNs: Float64Array;
  /** Loaded-latency curve per memory controller: queueing scale q, ns (delay q·u/(1−u)). */
  mcQueueNs: Float64Array;
  /** Where the controllers' curves came from. */
  mcCurveSource: string;
  /** Crossbar queueing scale per node, ns (rule XB0; its contention coefficient is the node's controller's LQ0 one), or null. */
  xbQueueNs: Float64Array | null;
  /** Idle cost of one link crossing, ns (rule LQ1). */
  linkServiceNs: Sourced<number>;
  /** A link crossing's contention coefficient, ns (LQ_CONTENTION_SHARE × the hop cost). */
  linkContentionNs: number;
  /** Queueing scale per link, ns (LQ_QUEUE_SCALE × the data packet's time on the link). */
  linkQueueNs: Float64Array;
  /** Most outstanding L1 data-cache misses per core (rule MLP0: the hardware's limit). */
  mlpLimit: Sourced<number>;
  /** Outstanding DRAM accesses of a stalled core (rule MLP1: Little's law at the sustained capacity, at most mlpLimit). */
  mlp: Sourced<number>;
  coherence: Sourced<Coherence>;
  clockGHz: Sourced<number | null>;
  /** Link bytes per load of pair (c, m): request, read response with data, probes. */
  readBytes: PairLists;
  /** Link bytes per store of pair (c, m): read for ownership as a load, then a write-back (request + data) and its done. */
  writeBytes: PairLists;
  /** Link crossings on an access's critical path (request path + data path), weighted by the path share. */
  latencyLinks: PairLists;
  /** Routes shared over equal-cost paths (true) or used as given. */
  sharedRoutes: boolean;
}

const cache = new WeakMap<MachineModel, TrafficModel>();

function presetOf(machine: MachineModel): MachinePreset | null {
  if (!machine.source.startsWith('preset:')) return null;
  const id = machine.source.slice('preset:'.length);
  return listPresets().find((p) => p.id === id) ?? null;
}

/** Sustained memory bandwidth per node of a preset from its figures, GB/s, or null. */
export function presetSustainedGBps(preset: MachinePreset): number[] | null {
  const n = preset.machine.nodes.length;
  const perNode = preset.figures.find((f) => f.kind === 'sustained' && f.quantity === 'memory bandwidth per node');
  if (perNode) return Array(n).fill(perNode.value);
  const socket = preset.figures.find((f) => f.kind === 'sustained' && f.quantity === 'memory bandwidth of a DRAM socket');
  const cxl = preset.figures.find((f) => f.kind === 'sustained' && f.quantity === 'memory bandwidth of the CXL node');
  if (socket) return preset.machine.nodes.map((node) => (node.cpus.length === 0 && cxl ? cxl.value : socket.value));
  // Per memory kind: `memory bandwidth of a <kind> node` (HBM and DDR nodes of a Xeon Max).
  const byKind = preset.machine.nodes.map((node) => preset.figures.find((f) => f.kind === 'sustained' && node.memoryKind && f.quantity === `memory bandwidth of a ${node.memoryKind} node`)?.value);
  if (byKind.every((v): v is number => typeof v === 'number')) return byKind;
  return null;
}

/** One published STREAM measurement of a whole machine against its theoretical DRAM bandwidth. */
export interface SustainedShareSource {
  machine: string;
  generation: MemoryGeneration;
  sustainedGBps: number;
  theoreticalGBps: number;
  provenance: string;
}

const ANANDTECH_SKYLAKE_EPYC =
  'AnandTech, "Sizing Servers: Intel Skylake-SP Xeon versus AMD EPYC 7000" (J. De Gelas, July 2017), "Memory Subsystem: Bandwidth"';

/**
 * Rule S1's sources for DDR4/DDR5 servers (and machines whose DRAM generation is unknown): STREAM
 * triad with binaries tuned by the vendors, two sockets, every channel populated, as AnandTech
 * reports them next to the theoretical peaks it computes (channels × transfer rate × 8 B). A
 * tuned binary is what shows the controllers' capacity; a program with fewer active cores reaches
 * less through the closed loop (each core's outstanding-miss limit, rule MLP0), not through a
 * smaller capacity.
 */
export const CURRENT_SERVER_STREAM: readonly SustainedShareSource[] = [
  { machine: '2 × EPYC 7601', generation: 'DDR4', sustainedGBps: 250, theoreticalGBps: 307.2, provenance: `${ANANDTECH_SKYLAKE_EPYC}: AMD's own STREAM binary 250 GB/s; 8 DDR4-2400 channels per socket` },
  { machine: '2 × Xeon Platinum 8176', generation: 'DDR4', sustainedGBps: 199, theoreticalGBps: 256, provenance: `${ANANDTECH_SKYLAKE_EPYC}: Intel's AVX-512 STREAM binary 199 GB/s; 6 DDR4-2666 channels per socket (the article's 256 GB/s)` },
  { machine: '2 × Xeon E5-2699 v4', generation: 'DDR4', sustainedGBps: 128, theoreticalGBps: 153.6, provenance: `${ANANDTECH_SKYLAKE_EPYC}: Intel's figure 128 GB/s; 4 DDR4-2400 channels per socket` },
];

/** Which source set rule S1 takes for a DRAM generation: `ddr3` for DDR2/DDR3 machines, else `current`. */
export function sustainedShareEra(generation: MemoryGeneration | undefined): 'ddr3' | 'current' {
  return generation === 'DDR2' || generation === 'DDR3' ? 'ddr3' : 'current';
}

/**
 * Rule S1's share: the mean sustained/theoretical ratio of measured STREAM figures of machines of
 * the same DRAM era. DDR2/DDR3 machines (2008–2011): the presets whose sustained per-node figure
 * derives from a measurement (NUMA-STREAM: Opteron 6172 55/8 ÷ 21.3 = 0.32, Xeon X7560 40/4 ÷
 * 17.1 = 0.58), computed from the presets so that it follows their figures. DDR4/DDR5 servers and
 * machines of unknown generation: CURRENT_SERVER_STREAM (0.81, 0.78, 0.83).
 */
export function sustainedShare(generation?: MemoryGeneration): { value: number; from: string } {
  const ratios: string[] = [];
  let sum = 0;
  if (sustainedShareEra(generation) === 'current') {
    for (const src of CURRENT_SERVER_STREAM) {
      const r = src.sustainedGBps / src.theoreticalGBps;
      sum += r;
      ratios.push(`${src.machine} ${r.toFixed(2)}`);
    }
    return { value: sum / ratios.length, from: `${ratios.join(', ')}; DDR4/DDR5 servers, ${ANANDTECH_SKYLAKE_EPYC}` };
  }
  for (const p of listPresets()) {
    const measuredTotal = p.figures.some((f) => f.kind === 'sustained' && f.provenance.startsWith('measured:'));
    const sustained = presetSustainedGBps(p);
    if (!measuredTotal || !sustained) continue;
    const theoretical = p.machine.nodes[0]!.memoryBandwidthGBps;
    if (!theoretical) continue;
    const r = sustained[0]! / theoretical;
    sum += r;
    ratios.push(`${p.id} ${r.toFixed(2)}`);
  }
  return { value: ratios.length > 0 ? sum / ratios.length : 0.5, from: `${ratios.join(', ')}; DDR2/DDR3 machines, NUMA-STREAM` };
}

/** All fewest-hop paths (link lists) from node `from` to node `to`, at most `limit`. */
function fewestHopPaths(machine: MachineModel, from: number, to: number, limit: number): number[][] {
  const n = machine.nodeCount;
  const dist = new Int32Array(n).fill(-1);
  dist[from] = 0;
  const queue = [from];
  const out = machine.links.map((l, i) => ({ ...l, i }));
  while (queue.length > 0) {
    const x = queue.shift()!;
    for (const l of out) {
      if (l.from === x && dist[l.to] === -1) {
        dist[l.to] = dist[x]! + 1;
        queue.push(l.to);
      }
    }
  }
  if (dist[to]! < 0) return [];
  const paths: number[][] = [];
  const walk = (x: number, acc: number[]) => {
    if (paths.length >= limit) return;
    if (x === to) {
      paths.push(acc.slice());
      return;
    }
    for (const l of out) {
      if (l.from === x && dist[l.to] === dist[x]! + 1 && dist[l.to]! <= dist[to]!) {
        acc.push(l.i);
        walk(l.to, acc);
        acc.pop();
      }
    }
  };
  walk(from, []);
  return paths;
}

/** Utilisation above which a measured point is not used for a fit (the curve diverges at 1). */
const MAX_FIT_UTILISATION = 0.98;

/**
 * The published loaded-latency curve the default shape comes from: Intel MLC v3.5
 * `--loaded_latency` (read-only traffic, all threads) on a 2-socket Xeon Silver 4110 with 12 ×
 * DDR4-2666 RDIMMs, as posted on Intel's Software Tuning community forum ("Intel Memory Latency
 * Checker v3.5 test"): injection delay 20000 → 0, latency ns and bandwidth MB/s. The last point
 * (delay 0) is the closed loop's saturation (every thread issuing), where delivered bandwidth is
 * the peak, and is the capacity of the fit.
 */
export const MLC_REFERENCE_CURVE = {
  source: "Intel MLC v3.5 --loaded_latency, 2 × Xeon Silver 4110, 12 × DDR4-2666 (Intel Software Tuning forum, 'Intel Memory Latency Checker v3.5 test')",
  points: [
    [81.96, 1237.6], [83.0, 1785.2], [84.2, 2583.5], [84.99, 3354.4], [85.56, 4383.3], [86.54, 6068.3], [87.24, 7680.3],
    [87.81, 9723.8], [88.79, 13463.5], [90.16, 18355.0], [90.85, 22580.9], [92.29, 29473.3], [94.56, 42695.4],
    [98.94, 68357.8], [123.71, 131282.0], [129.67, 135267.3], [130.37, 135599.5], [130.34, 135653.8], [130.31, 135655.9],
  ] as ReadonlyArray<readonly [latencyNs: number, bandwidthMBps: number]>,
};

/**
 * Least-squares fit of latency − unloaded = c · u + q · u / (1 − u) to measured points, u =
 * delivered / capacity (points at u ≥ MAX_FIT_UTILISATION are left out: there the curve is the
 * closed loop's saturation, not the open queue's), c, q ≥ 0 (a coefficient the unconstrained fit
 * makes negative is set to 0 and the other refitted). Null without a loaded point or when both
 * come out 0.
 */
export function fitLoadedLatencyCurve(
  points: ReadonlyArray<LoadedLatencyPoint>,
  capacityBytesPerS: number,
  unloadedNs: number,
): { contentionNs: number; queueNs: number; points: number } | null {
  if (!(capacityBytesPerS > 0) || !Number.isFinite(unloadedNs)) return null;
  let saa = 0;
  let sab = 0;
  let sbb = 0;
  let say = 0;
  let sby = 0;
  let used = 0;
  for (const p of points) {
    if (!(p.deliveredBytesPerS > 0) || !Number.isFinite(p.latencyNs)) continue;
    const u = p.deliveredBytesPerS / capacityBytesPerS;
    if (u >= MAX_FIT_UTILISATION) continue;
    const a = u;
    const b = u / (1 - u);
    const y = p.latencyNs - unloadedNs;
    saa += a * a;
    sab += a * b;
    sbb += b * b;
    say += a * y;
    sby += b * y;
    used++;
  }
  if (used === 0 || !(saa > 0)) return null;
  const det = saa * sbb - sab * sab;
  let c = det > 1e-12 * saa * sbb ? (say * sbb - sby * sab) / det : -1;
  let q = det > 1e-12 * saa * sbb ? (sby * saa - say * sab) / det : -1;
  if (c < 0 || q < 0 || used < 2) {
    // One coefficient: the better of c alone and q alone (both clamped at 0).
    const cOnly = Math.max(0, say / saa);
    const qOnly = sbb > 0 ? Math.max(0, sby / sbb) : 0;
    const errC = cOnly * cOnly * saa - 2 * cOnly * say;
    const errQ = qOnly * qOnly * sbb - 2 * qOnly * sby;
    if (errC <= errQ) {
      c = cOnly;
      q = 0;
    } else {
      c = 0;
      q = qOnly;
    }
  }
  if (!(c > 0 || q > 0) || !Number.isFinite(c) || !Number.isFinite(q)) return null;
  return { contentionNs: c, queueNs: q, points: used };
}

/**
 * Rule LQ0's constants, from MLC_REFERENCE_CURVE: c / unloaded latency (LQ_CONTENTION_SHARE) and
 * q / (line bytes / capacity) (LQ_QUEUE_SCALE), the capacity being the curve's peak.
 */
function referenceCurve(): { contentionShare: number; queueScale: number } {
  const pts = MLC_REFERENCE_CURVE.points;
  const peak = Math.max(...pts.map((p) => p[1])) * 1e6;
  const unloaded = pts[0]![0];
  const fit = fitLoadedLatencyCurve(
    pts.map(([latencyNs, mbps]) => ({ latencyNs, deliveredBytesPerS: mbps * 1e6 })),
    peak,
    unloaded,
  )!;
  return { contentionShare: fit.contentionNs / unloaded, queueScale: fit.queueNs / ((LINE_BYTES / peak) * 1e9) };
}
const REFERENCE = referenceCurve();
/** Rule LQ0: a resource's contention coefficient as a share of its idle latency (from MLC_REFERENCE_CURVE). */
export const LQ_CONTENTION_SHARE = REFERENCE.contentionShare;
/** Rule LQ0: a resource's queueing scale in units of the time one line occupies it (from MLC_REFERENCE_CURVE). */
export const LQ_QUEUE_SCALE = REFERENCE.queueScale;

/** trafficModel: each memory controller's sustained capacity (rules S0, S1, S2) and the crossbar's where it limits (XB0). */
function sustainedCapacity(machine: MachineModel, preset: MachinePreset | null): { mc: Float64Array; mcSource: string; crossbar: Sourced<Float64Array> | null } {
  const n = machine.nodeCount;
  const theoretical = machine.mcBandwidthBytesPerS.value;
  const sustainedGBps = preset ? presetSustainedGBps(preset) : null;
  const mc = new Float64Array(n);
  let mcSource: string;
  let crossbar: Sourced<Float64Array> | null = null;
  const measured = machine.sustainedBytesPerS;
  if (measured) {
    // Rule S2: a calibrated machine's measured capacity; nodes the run did not reach fall back to S1.
    const share = sustainedShare(preset?.memoryGeneration);
    const missing: number[] = [];
    for (let i = 0; i < n; i++) {
      const v = measured.value[i]!;
      if (Number.isFinite(v) && v > 0) mc[i] = v;
      else {
        mc[i] = theoretical[i]! * share.value;
        missing.push(machine.nodeIds[i]!);
      }
    }
    mcSource =
      missing.length === 0
        ? `${measured.source} (rule S2)`
        : `${measured.source} (rule S2); nodes ${missing.join(', ')} not measured: rule S1, ${share.value.toFixed(3)} × theoretical`;
  } else if (sustainedGBps && sustainedGBps.length === n && preset?.streamLimitedByCrossbar) {
    // Rule XB0: the STREAM figure is the crossbar's; the controllers take rule S1.
    const share = sustainedShare(preset?.memoryGeneration);
    const xb = new Float64Array(n);
    sustainedGBps.forEach((v, i) => (xb[i] = v * 1e9));
    crossbar = {
      value: xb,
      source: `estimated:XB0 each node's crossbar carries the preset's sustained (STREAM) figure per node, ${[...new Set(sustainedGBps.map((v) => +v.toFixed(2)))].join(' / ')} GB/s, because ${preset.streamLimitedByCrossbar.provenance}`,
    };
    for (let i = 0; i < n; i++) mc[i] = theoretical[i]! * share.value;
    mcSource = `estimated:S1 sustained = ${share.value.toFixed(3)} × the theoretical bandwidth (the machine's STREAM figure is its crossbar's, rule XB0; mean measured sustained/theoretical ratio: ${share.from}); theoretical: ${machine.mcBandwidthBytesPerS.source}`;
  } else if (sustainedGBps && sustainedGBps.length === n) {
    sustainedGBps.forEach((v, i) => (mc[i] = v * 1e9));
    mcSource = `estimated:S0 the preset's sustained (STREAM) figure per node: ${[...new Set(sustainedGBps.map((v) => +v.toFixed(2)))].join(' / ')} GB/s`;
  } else {
    const share = sustainedShare(preset?.memoryGeneration);
    for (let i = 0; i < n; i++) mc[i] = theoretical[i]! * share.value;
    mcSource = `estimated:S1 sustained = ${share.value.toFixed(3)} × the theoretical bandwidth (mean measured sustained/theoretical ratio: ${share.from}); theoretical: ${machine.mcBandwidthBytesPerS.source}`;
  }
  return { mc, mcSource, crossbar };
}

/**
 * trafficModel: the link bytes of a read and of a write per (cpu node, memory node) pair, and the
 * links a pair's data and latency cross. Paths per pair (data direction m → c), shared over
 * equal-cost paths where routes are estimated.
 */
function pairLists(machine: MachineModel, estimatedRoutes: boolean, coherence: Coherence) {
  const n = machine.nodeCount;
  const paths: number[][][] = [];
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      const given = machine.routes[c * n + m]!;
      if (c === m) {
        paths.push([]);
        continue;
      }
      if (estimatedRoutes) {
        const all = fewestHopPaths(machine, m, c, MAX_SHARED_PATHS);
        if (all.length > 1 && all[0]!.length === given.length) {
          paths.push(all);
          continue;
        }
      }
      paths.push([given]);
    }
  }
  const hasCaches = machine.nodeCpus.map((cpus) => cpus.length > 0);
  const build = (add: (c: number, m: number, put: (pathPair: number, bytes: number) => void) => void): PairLists => {
    const start = new Int32Array(n * n + 1);
    const link: number[] = [];
    const value: number[] = [];
    const acc = new Map<number, number>();
    for (let c = 0; c < n; c++) {
      for (let m = 0; m < n; m++) {
        const p = c * n + m;
        start[p] = link.length;
        acc.clear();
        // put(q, bytes): `bytes` travel along pair q's data direction (q = x·n + y: data y → x), shared over its paths.
        add(c, m, (q, bytes) => {
          const ps = paths[q]!;
          if (ps.length === 0 || bytes === 0) return;
          const share = bytes / ps.length;
          for (const path of ps) for (const k of path) acc.set(k, (acc.get(k) ?? 0) + share);
        });
        for (const [k, v] of [...acc].sort((a, b) => a[0] - b[0])) {
          link.push(k);
          value.push(v);
        }
      }
    }
    start[n * n] = link.length;
    return { start, link: Int32Array.from(link), value: Float64Array.from(value) };
  };
  const probes = (c: number, m: number, put: (q: number, bytes: number) => void) => {
    if (coherence !== 'broadcast') return;
    for (let x = 0; x < n; x++) {
      if (!hasCaches[x]) continue;
      if (x !== m) put(x * n + m, PROBE_BYTES); // probe m → x
      if (x !== c) put(c * n + x, PROBE_RESPONSE_BYTES); // response x → c
    }
  };
  const read = (c: number, m: number, put: (q: number, bytes: number) => void) => {
    if (c !== m) {
      put(m * n + c, REQUEST_BYTES); // request c → m
      put(c * n + m, RESPONSE_BYTES + LINE_BYTES); // data m → c
    }
    probes(c, m, put);
  };
  const readBytes = build(read);
  const writeBytes = build((c, m, put) => {
    read(c, m, put);
    if (c !== m) {
      put(m * n + c, REQUEST_BYTES + LINE_BYTES); // write-back c → m
      put(c * n + m, RESPONSE_BYTES); // target done m → c
    }
  });
  const dataLinks = build((c, m, put) => {
    if (c !== m) put(c * n + m, 1);
  });
  const latencyLinks = build((c, m, put) => {
    if (c === m) return;
    put(m * n + c, 1);
    put(c * n + m, 1);
  });
  return { readBytes, writeBytes, dataLinks, latencyLinks };
}

/** The traffic model of `machine` (cached per model object). */
export function trafficModel(machine: MachineModel): TrafficModel {
  const hit = cache.get(machine);
  if (hit) return hit;
  const n = machine.nodeCount;
  const idle = machine.idleLatencyNs.value;
  const preset = presetOf(machine);

  // Sustained capacity (S0 / S1).
  const { mc, mcSource, crossbar } = sustainedCapacity(machine, preset);

  // Loaded-latency curves (LQ2 where a calibration measured the node's loaded latency, else LQ0).
  const mcContentionNs = new Float64Array(n);
  const mcQueueNs = new Float64Array(n);
  const curves = machine.loadedLatency?.value;
  const fitted: string[] = [];
  // A memory-only node has no local accessor: its controller's idle latency is the one from the
  // nearest node with cpus (the recorded diagonal of such a node is not an access anyone makes).
  const idleOf = (m: number) => {
    let s = idle[m * n + m]!;
    if (machine.nodeCpus[m]!.length === 0) {
      let nearest = Infinity;
      for (let c = 0; c < n; c++) if (machine.nodeCpus[c]!.length > 0) nearest = Math.min(nearest, idle[c * n + m]!);
      if (Number.isFinite(nearest)) s = nearest;
    }
    return s;
  };
  for (let m = 0; m < n; m++) {
    mcContentionNs[m] = LQ_CONTENTION_SHARE * idleOf(m);
    mcQueueNs[m] = mc[m]! > 0 ? LQ_QUEUE_SCALE * (LINE_BYTES / mc[m]!) * 1e9 : 0;
    const points = curves?.[m];
    if (points && mc[m]! > 0) {
      const unloaded = points.find((p) => p.deliveredBytesPerS === 0)?.latencyNs ?? idle[m * n + m]!;
      const fit = fitLoadedLatencyCurve(points, mc[m]!, unloaded);
      if (fit) {
        mcContentionNs[m] = fit.contentionNs;
        // The queueing part is what bounds a controller at its capacity: a fit that leaves it out
        // keeps a tenth of rule LQ0's (the closed loop needs latency to diverge there).
        mcQueueNs[m] = Math.max(fit.queueNs, 0.1 * mcQueueNs[m]!);
        fitted.push(`node ${machine.nodeIds[m]} c ${fit.contentionNs.toFixed(1)} ns, q ${fit.queueNs.toFixed(2)} ns from ${fit.points} points`);
      }
    }
  }
  const lq0 = `delay(u) = c·u + q·u/(1−u), c = ${LQ_CONTENTION_SHARE.toFixed(3)} × idle latency, q = ${LQ_QUEUE_SCALE.toFixed(2)} × line time (64 B / capacity), fitted to ${MLC_REFERENCE_CURVE.source}`;
  const mcCurveSource =
    fitted.length > 0
      ? `${machine.loadedLatency!.source}: rule LQ2, c and q fitted by least squares to latency − unloaded latency = c·u + q·u/(1−u), u = delivered / sustained capacity (${fitted.join('; ')})${fitted.length < n ? `; other nodes: rule LQ0, ${lq0}` : ''}`
      : `estimated:LQ0 ${lq0}; idle latencies: ${machine.idleLatencyNs.source}`;
  let hopSum = 0;
  let hopCount = 0;
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      const hops = machine.routes[c * n + m]!.length;
      if (c === m || hops === 0) continue;
      hopSum += Math.max(0, idle[c * n + m]! - idle[m * n + m]!) / hops;
      hopCount++;
    }
  }
  const hopNs = hopCount > 0 ? hopSum / hopCount : 0;

  // MLP by Little's law at the sustained capacity.
  let mlpSum = 0;
  let mlpNodes = 0;
  for (let m = 0; m < n; m++) {
    const cores = machine.nodeCpus[m]!.length;
    if (cores === 0) continue;
    // The bandwidth the node's cores reach: its controller's, or its crossbar's where that is less (XB0).
    const reach = crossbar ? Math.min(mc[m]!, crossbar.value[m]!) : mc[m]!;
    mlpSum += (reach * idle[m * n + m]! * 1e-9) / LINE_BYTES / cores;
    mlpNodes++;
  }
  const mlpLimit: Sourced<number> = preset?.outstandingMissesPerCore
    ? { value: preset.outstandingMissesPerCore.value, source: preset.outstandingMissesPerCore.provenance }
    : {
        value: DEFAULT_OUTSTANDING_MISSES,
        source: `estimated:MLP0 the cores' outstanding-miss limit is not known for this machine: ${DEFAULT_OUTSTANDING_MISSES} L1 data-cache line fill buffers per core (Intel since Nehalem)`,
      };
  const mlp = mlpNodes > 0 ? Math.min(mlpLimit.value, Math.max(1, mlpSum / mlpNodes)) : 1;

  const coherence: Sourced<Coherence> = preset?.coherence
    ? { value: preset.coherence.value, source: preset.coherence.provenance }
    : { value: 'filtered', source: 'estimated:CO1 no broadcast coherence documented for this machine: a directory or probe filter is assumed (no probe traffic modelled)' };

  const clockFigure = preset?.figures.find((f) => f.quantity === 'cpu clock' && f.unit === 'GHz');
  const clockInModel = /(?:^|[\s@(,])(\d+(?:\.\d+)?)\s*GHz\b/i.exec(machine.cpuModel ?? '');
  const modelGHz = clockInModel ? Number(clockInModel[1]) : NaN;
  const clock: Sourced<number | null> =
    typeof machine.clockGHz?.value === 'number'
      ? machine.clockGHz
      : clockFigure
        ? { value: clockFigure.value, source: clockFigure.provenance }
        : modelGHz >= 0.1 && modelGHz <= 10
          ? { value: modelGHz, source: `documented:the cpu model string "${machine.cpuModel}" names ${modelGHz} GHz (the nominal clock)` }
          : {
              value: null,
              source:
                `unavailable:${machine.clockGHz ? `the machine records no cpu clock (${machine.clockGHz.source.replace(/^unavailable:/, '')})` : 'the machine description records no cpu clock'}, ` +
                `${preset ? `preset ${preset.id} has no cpu clock figure` : 'it is not a preset'}, and ` +
                `${machine.cpuModel ? `its cpu model string "${machine.cpuModel}" names none` : 'it has no cpu model string'}`,
            };

  // Paths per pair (data direction m → c), shared over equal-cost paths where routes are estimated.
  const estimatedRoutes = machine.routeSource.startsWith('estimated:');
  const { readBytes, writeBytes, dataLinks, latencyLinks } = pairLists(machine, estimatedRoutes, coherence.value);

  const model: TrafficModel = {
    mcCapacity: { value: mc, source: mcSource },
    crossbarCapacity: crossbar,
    linkTo: Int32Array.from(machine.links, (l) => l.to),
    dataLinks,
    linkCapacity: Float64Array.from(machine.links, (l) => l.capacityBytesPerS),
    mcContentionNs,
    mcQueueNs,
    mcCurveSource,
    xbQueueNs: crossbar ? Float64Array.from(crossbar.value, (v) => (v > 0 ? LQ_QUEUE_SCALE * (LINE_BYTES / v) * 1e9 : 0)) : null,
    linkContentionNs: LQ_CONTENTION_SHARE * hopNs,
    linkQueueNs: Float64Array.from(machine.links, (l) => (l.capacityBytesPerS > 0 ? LQ_QUEUE_SCALE * ((LINE_BYTES + RESPONSE_BYTES) / l.capacityBytesPerS) * 1e9 : 0)),
    linkServiceNs: {
      value: hopNs,
      source: `estimated:LQ1 mean idle cost of one hop, (idle[c][m] − idle[m][m]) / hops over remote pairs = ${hopNs.toFixed(1)} ns; idle latencies: ${machine.idleLatencyNs.source}`,
    },
    mlpLimit,
    mlp: {
      value: mlp,
      source: `estimated:MLP1 Little's law at the sustained capacity: sustained bytes/s × idle local latency / 64 B / cores per node, at most the ${mlpLimit.value} outstanding misses per core of rule MLP0 = ${mlp.toFixed(2)} outstanding accesses per core`,
    },
    coherence,
    clockGHz: clock,
    readBytes,
    writeBytes,
    latencyLinks,
    sharedRoutes: estimatedRoutes,
  };
  cache.set(machine, model);
  return model;
}

/** MC bytes per access: a load moves one line; a store is a read for ownership plus a write-back. */
export const MC_BYTES_PER_LOAD = LINE_BYTES;
export const MC_BYTES_PER_STORE = 2 * LINE_BYTES;
