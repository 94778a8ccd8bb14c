/**
 * The traffic simulator (contract `SimulateWindow`); docs/engine.md, "Simulator", is the
 * normative description. In short, for one window under one placement:
 *
 * 1. Flows. Each (thread, page) entry is a flow from the page's serving node m to the thread's
 *    node c: loads of a replicated page are served on c, stores always on the page's home node.
 *    Bytes = accesses × CACHE_LINE_BYTES (every sampled DRAM access moves one 64-byte line).
 * 2. Load. Memory controller m carries every byte served by m; a read's bytes cross the links of
 *    routes[c·n+m] (data m → c), a write's bytes the links of routes[m·n+c] (data c → m).
 *    Rates are bytes / predicted window time.
 * 3. Latency. Each access costs the idle latency idle[c][m] plus a queueing delay on its memory
 *    controller and on every link it crosses: d(u) = QUEUE_BASE_NS · u / (1 − u) (M/M/1-like),
 *    with u ≤ MAX_UTILISATION so d is capped at QUEUE_BASE_NS · 19.
 * 4. Time and feedback. Predicted time T = W · ((1 − s) + s · L(T) / L_local), W the window length,
 *    s = MEMORY_STALL_SHARE, L(T) the mean latency at rates bytes / T, L_local the accesses' own
 *    nodes' idle local latency. T is also at least the time every resource needs to carry its bytes
 *    at MAX_UTILISATION of its capacity (demand above capacity stretches the window). L falls as T
 *    grows, so T = max(T_min, fixed point of T = g(T)) is unique; it is found by bisection.
 */
import type { AccessWindow, MachineModel, Placement, SimulateWindow, WindowMetrics } from './contract.js';

/** Bytes moved per sampled memory access (one cache line). */
export const CACHE_LINE_BYTES = 64;
/** Share of a window's time that is memory stall at idle local latency (no counters to say otherwise). */
export const MEMORY_STALL_SHARE = 0.5;
/** Queueing delay scale, ns: d(u) = QUEUE_BASE_NS · u/(1−u). */
export const QUEUE_BASE_NS = 10;
/** No resource is driven above this utilisation; more demand stretches the window instead. */
export const MAX_UTILISATION = 0.95;

interface PairResources {
  /** For pair p = c·n+m: links of the read path, as offsets into `linkList`. */
  readStart: Int32Array;
  writeStart: Int32Array;
  readLinks: Int32Array;
  writeLinks: Int32Array;
}

const pairCache = new WeakMap<MachineModel, PairResources>();

function pairResources(machine: MachineModel): PairResources {
  const cached = pairCache.get(machine);
  if (cached) return cached;
  const n = machine.nodeCount;
  const readStart = new Int32Array(n * n + 1);
  const writeStart = new Int32Array(n * n + 1);
  const readLinks: number[] = [];
  const writeLinks: number[] = [];
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      const p = c * n + m;
      readStart[p] = readLinks.length;
      writeStart[p] = writeLinks.length;
      if (c === m) continue;
      readLinks.push(...machine.routes[c * n + m]!);
      writeLinks.push(...machine.routes[m * n + c]!);
    }
  }
  readStart[n * n] = readLinks.length;
  writeStart[n * n] = writeLinks.length;
  const out = { readStart, writeStart, readLinks: Int32Array.from(readLinks), writeLinks: Int32Array.from(writeLinks) };
  pairCache.set(machine, out);
  return out;
}

/** Sample standard deviation (N−1) as % of the mean; 0 when the mean is 0 or there are fewer than 2 values. */
export function sampleCvPct(values: ArrayLike<number>): number {
  const k = values.length;
  if (k < 2) return 0;
  let sum = 0;
  for (let i = 0; i < k; i++) sum += values[i]!;
  const mean = sum / k;
  if (!(mean > 0)) return 0;
  let sq = 0;
  for (let i = 0; i < k; i++) sq += (values[i]! - mean) ** 2;
  return (Math.sqrt(sq / (k - 1)) / mean) * 100;
}

function queueDelayNs(u: number): number {
  const x = Math.min(Math.max(u, 0), MAX_UTILISATION);
  return (QUEUE_BASE_NS * x) / (1 - x);
}

/**
 * Accesses by (accessing node c, serving node m), loads and stores apart: the only thing the rest
 * of the simulation needs from the window. Exposed for policies that want the matrix.
 */
export function accessMatrix(machine: MachineModel, window: AccessWindow, placement: Placement): { loads: Float64Array; stores: Float64Array } {
  const n = machine.nodeCount;
  const loads = new Float64Array(n * n);
  const stores = new Float64Array(n * n);
  const { thread, page } = window;
  const { threadNode, pageNode, replicated } = placement;
  for (let k = 0; k < thread.length; k++) {
    const c = threadNode[thread[k]!]!;
    const p = page[k]!;
    const home = pageNode[p]!;
    const l = window.loads[k]!;
    const s = window.stores[k]!;
    if (l > 0) loads[c * n + (replicated[p] ? c : home)]! += l;
    if (s > 0) stores[c * n + home]! += s;
  }
  return { loads, stores };
}

export const simulateWindow: SimulateWindow = (machine, window, placement, windowUs, _pageBytes): WindowMetrics => {
  const { loads, stores } = accessMatrix(machine, window, placement);
  return simulateMatrix(machine, loads, stores, windowUs);
};

/** The simulator on an access matrix (see accessMatrix). */
export function simulateMatrix(machine: MachineModel, loads: Float64Array, stores: Float64Array, windowUs: number): WindowMetrics {
  const n = machine.nodeCount;
  const linkCount = machine.links.length;
  const res = pairResources(machine);
  const idle = machine.idleLatencyNs.value;
  const mcCap = machine.mcBandwidthBytesPerS.value;

  const mcBytes = new Float64Array(n);
  const linkBytes = new Float64Array(linkCount);
  let total = 0;
  let local = 0;
  let localIdleSum = 0;
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      const p = c * n + m;
      const l = loads[p]!;
      const s = stores[p]!;
      const a = l + s;
      if (a === 0) continue;
      total += a;
      localIdleSum += a * idle[c * n + c]!;
      if (c === m) local += a;
      mcBytes[m]! += a * CACHE_LINE_BYTES;
      for (let k = res.readStart[p]!; k < res.readStart[p + 1]!; k++) linkBytes[res.readLinks[k]!]! += l * CACHE_LINE_BYTES;
      for (let k = res.writeStart[p]!; k < res.writeStart[p + 1]!; k++) linkBytes[res.writeLinks[k]!]! += s * CACHE_LINE_BYTES;
    }
  }

  const mcUtilisation = new Float64Array(n);
  const linkUtilisation = new Float64Array(linkCount);
  const mcLoadBytesPerS = new Float64Array(n);
  const linkLoadBytesPerS = new Float64Array(linkCount);
  if (total === 0) {
    return {
      localAccessRatio: 1,
      memoryLatencyNs: 0,
      mcLoadBytesPerS,
      mcUtilisation,
      mcImbalancePct: 0,
      linkLoadBytesPerS,
      linkUtilisation,
      interconnectUsagePct: 0,
      interconnectImbalancePct: 0,
      accessesPerUs: 0,
      predictedUs: windowUs,
    };
  }

  // The least time in which every resource carries its bytes at MAX_UTILISATION.
  let tMinUs = 0;
  for (let m = 0; m < n; m++) tMinUs = Math.max(tMinUs, (mcBytes[m]! / (mcCap[m]! * MAX_UTILISATION)) * 1e6);
  for (let k = 0; k < linkCount; k++) {
    tMinUs = Math.max(tMinUs, (linkBytes[k]! / (machine.links[k]!.capacityBytesPerS * MAX_UTILISATION)) * 1e6);
  }
  const localNs = localIdleSum / total;

  const mcDelay = new Float64Array(n);
  const linkDelay = new Float64Array(linkCount);
  /** Mean latency when the window lasts tUs. */
  const latencyAt = (tUs: number): number => {
    const seconds = tUs * 1e-6;
    for (let m = 0; m < n; m++) mcDelay[m] = queueDelayNs(mcBytes[m]! / seconds / mcCap[m]!);
    for (let k = 0; k < linkCount; k++) linkDelay[k] = queueDelayNs(linkBytes[k]! / seconds / machine.links[k]!.capacityBytesPerS);
    let weighted = 0;
    for (let c = 0; c < n; c++) {
      for (let m = 0; m < n; m++) {
        const p = c * n + m;
        const l = loads[p]!;
        const s = stores[p]!;
        if (l + s === 0) continue;
        const base = idle[p]! + mcDelay[m]!;
        let readNs = base;
        for (let k = res.readStart[p]!; k < res.readStart[p + 1]!; k++) readNs += linkDelay[res.readLinks[k]!]!;
        let writeNs = base;
        for (let k = res.writeStart[p]!; k < res.writeStart[p + 1]!; k++) writeNs += linkDelay[res.writeLinks[k]!]!;
        weighted += l * readNs + s * writeNs;
      }
    }
    return weighted / total;
  };
  const g = (tUs: number) => windowUs * (1 - MEMORY_STALL_SHARE + (MEMORY_STALL_SHARE * latencyAt(tUs)) / localNs);

  let tUs: number;
  const lo0 = Math.max(tMinUs, 1e-9);
  if (g(lo0) <= lo0) tUs = lo0;
  else {
    let lo = lo0;
    let hi = g(lo0);
    for (let it = 0; it < 100 && hi - lo > 1e-9 * hi; it++) {
      const mid = (lo + hi) / 2;
      if (g(mid) > mid) lo = mid;
      else hi = mid;
    }
    tUs = hi;
  }
  const latency = latencyAt(tUs);
  const seconds = tUs * 1e-6;
  for (let m = 0; m < n; m++) {
    mcLoadBytesPerS[m] = mcBytes[m]! / seconds;
    mcUtilisation[m] = mcLoadBytesPerS[m]! / mcCap[m]!;
  }
  let linkUtilSum = 0;
  for (let k = 0; k < linkCount; k++) {
    linkLoadBytesPerS[k] = linkBytes[k]! / seconds;
    linkUtilisation[k] = linkLoadBytesPerS[k]! / machine.links[k]!.capacityBytesPerS;
    linkUtilSum += linkUtilisation[k]!;
  }
  return {
    localAccessRatio: local / total,
    memoryLatencyNs: latency,
    mcLoadBytesPerS,
    mcUtilisation,
    mcImbalancePct: sampleCvPct(mcLoadBytesPerS),
    linkLoadBytesPerS,
    linkUtilisation,
    interconnectUsagePct: linkCount > 0 ? (linkUtilSum / linkCount) * 100 : 0,
    interconnectImbalancePct: sampleCvPct(linkLoadBytesPerS),
    accessesPerUs: total / tUs,
    predictedUs: tUs,
  };
}
