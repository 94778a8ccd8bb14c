/**
 * The traffic model's machine facts (docs/engine.md, "Traffic model"): what the simulator needs
 * beyond the MachineModel's own numbers, each derived from the machine description or a
 * published figure, with its provenance. Nothing here is fitted to a workload.
 *
 * - Sustained memory-controller capacity: a `numascope bench` calibration's measured figure (rule
 *   S2, provenance measured), else a preset's `sustained` figure (STREAM) when it has one (rule S0), else the theoretical bandwidth × SUSTAINED_SHARE, the mean sustained/theoretical
 *   ratio of the presets whose sustained figure was measured (rule S1).
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
 * - Service scales of the loaded-latency curve d(u) = S · u / (1 − u): a memory controller's S is
 *   fitted to a `numascope bench` calibration's measured loaded-latency points of its node (rule
 *   LQ2, `fitServiceScaleNs`), else its node's idle local latency (rule LQ0); a link's S is the
 *   machine's idle cost of one hop (the mean over remote pairs of (idle[c][m] − idle[m][m]) / hops).
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
 * - Clock: a preset's `cpu clock` figure, else a `@ x.xxGHz` in the cpu model string, else null
 *   (PMU latencies in cycles and cycle counters then cannot be turned into time).
 */
import type { LoadedLatencyPoint, MachineModel, Sourced } from '../model/contract.js';
import { listPresets, type MachinePreset } from './presets.js';

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
  /** Loaded-latency service scale per memory controller, ns (rule LQ2: fitted to measured points; else LQ0: idle local latency). */
  mcServiceNs: Float64Array;
  /** Where mcServiceNs came from. */
  mcServiceSource: string;
  /** Loaded-latency service scale of one link crossing, ns (idle cost of a hop). */
  linkServiceNs: Sourced<number>;
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

/**
 * Rule S1's share: the mean sustained/theoretical ratio over presets whose sustained per-node
 * figure derives from a measurement (NUMA-STREAM: Opteron 6172 55/8 ÷ 21.3 = 0.32, Xeon X7560
 * 40/4 ÷ 17.1 = 0.58), computed from the presets so that it follows their figures.
 */
export function sustainedShare(): { value: number; from: string } {
  const ratios: string[] = [];
  let sum = 0;
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
  return { value: ratios.length > 0 ? sum / ratios.length : 0.5, from: ratios.join(', ') };
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

/** Utilisation above which a measured point is not used for the fit (d(u) diverges at 1). */
const MAX_FIT_UTILISATION = 0.95;

/**
 * Rule LQ2: the service scale S of the loaded-latency curve latency(u) = unloaded + S · u / (1 − u)
 * that best fits measured points (least squares through the origin in x = u / (1 − u)), with
 * u = delivered bandwidth / sustained capacity (clamped below MAX_FIT_UTILISATION: a read-only
 * load can deliver more than the triad-measured capacity). Null when no point carries load or the
 * fit is not a positive, finite scale (then the idle rule stands).
 */
export function fitServiceScaleNs(points: ReadonlyArray<LoadedLatencyPoint>, capacityBytesPerS: number, unloadedNs: number): { scaleNs: number; points: number } | null {
  if (!(capacityBytesPerS > 0) || !Number.isFinite(unloadedNs)) return null;
  let sxy = 0;
  let sxx = 0;
  let used = 0;
  for (const p of points) {
    if (!(p.deliveredBytesPerS > 0) || !Number.isFinite(p.latencyNs)) continue;
    const u = Math.min(MAX_FIT_UTILISATION, p.deliveredBytesPerS / capacityBytesPerS);
    const x = u / (1 - u);
    sxy += x * (p.latencyNs - unloadedNs);
    sxx += x * x;
    used++;
  }
  if (used === 0 || !(sxx > 0)) return null;
  const scaleNs = sxy / sxx;
  return Number.isFinite(scaleNs) && scaleNs > 0 ? { scaleNs, points: used } : null;
}

/** The traffic model of `machine` (cached per model object). */
export function trafficModel(machine: MachineModel): TrafficModel {
  const hit = cache.get(machine);
  if (hit) return hit;
  const n = machine.nodeCount;
  const idle = machine.idleLatencyNs.value;
  const preset = presetOf(machine);

  // Sustained capacity (S0 / S1).
  const theoretical = machine.mcBandwidthBytesPerS.value;
  const sustainedGBps = preset ? presetSustainedGBps(preset) : null;
  const mc = new Float64Array(n);
  let mcSource: string;
  let crossbar: Sourced<Float64Array> | null = null;
  const measured = machine.sustainedBytesPerS;
  if (measured) {
    // Rule S2: a calibrated machine's measured capacity; nodes the run did not reach fall back to S1.
    const share = sustainedShare();
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
    const share = sustainedShare();
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
    const share = sustainedShare();
    for (let i = 0; i < n; i++) mc[i] = theoretical[i]! * share.value;
    mcSource = `estimated:S1 sustained = ${share.value.toFixed(3)} × the theoretical bandwidth (mean measured sustained/theoretical ratio: ${share.from}); theoretical: ${machine.mcBandwidthBytesPerS.source}`;
  }

  // Service scales (LQ2 where a calibration measured the node's loaded latency, else LQ0).
  const mcServiceNs = new Float64Array(n);
  const curves = machine.loadedLatency?.value;
  const fitted: string[] = [];
  // A memory-only node has no local accessor: its controller's scale is its idle latency from the
  // nearest node with cpus (the recorded diagonal of such a node is not an access anyone makes).
  for (let m = 0; m < n; m++) {
    let s = idle[m * n + m]!;
    if (machine.nodeCpus[m]!.length === 0) {
      let nearest = Infinity;
      for (let c = 0; c < n; c++) if (machine.nodeCpus[c]!.length > 0) nearest = Math.min(nearest, idle[c * n + m]!);
      if (Number.isFinite(nearest)) s = nearest;
    }
    const points = curves?.[m];
    if (points && mc[m]! > 0) {
      const unloaded = points.find((p) => p.deliveredBytesPerS === 0)?.latencyNs ?? idle[m * n + m]!;
      const fit = fitServiceScaleNs(points, mc[m]!, unloaded);
      if (fit) {
        s = fit.scaleNs;
        fitted.push(`node ${machine.nodeIds[m]} ${fit.scaleNs.toFixed(0)} ns from ${fit.points} points`);
      }
    }
    mcServiceNs[m] = s;
  }
  const mcServiceSource =
    fitted.length > 0
      ? `${machine.loadedLatency!.source}: rule LQ2, S fitted by least squares to latency − unloaded latency = S · u / (1 − u), u = delivered / sustained capacity (${fitted.join('; ')})${fitted.length < n ? '; other nodes: rule LQ0, their idle local latency' : ''}`
      : `estimated:LQ0 each memory controller's service scale is its node's idle local latency; idle latencies: ${machine.idleLatencyNs.source}`;
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

  let clock: Sourced<number | null> = { value: null, source: 'unavailable:no clock in the preset figures or the cpu model string' };
  const clockFigure = preset?.figures.find((f) => f.quantity === 'cpu clock' && f.unit === 'GHz');
  if (clockFigure) clock = { value: clockFigure.value, source: clockFigure.provenance };

  // Paths per pair (data direction m → c), shared over equal-cost paths where routes are estimated.
  const estimatedRoutes = machine.routeSource.startsWith('estimated:');
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
    if (coherence.value !== 'broadcast') return;
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

  const model: TrafficModel = {
    mcCapacity: { value: mc, source: mcSource },
    crossbarCapacity: crossbar,
    linkTo: Int32Array.from(machine.links, (l) => l.to),
    dataLinks,
    linkCapacity: Float64Array.from(machine.links, (l) => l.capacityBytesPerS),
    mcServiceNs,
    mcServiceSource,
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
