/**
 * The traffic simulator (contract `SimulateWindow`); docs/engine.md, "Simulator", "Traffic model"
 * and "Closed loop", is the normative description. In short, for one window under one placement:
 *
 * 1. Flows. Each (thread, page) entry is a flow between the thread's node c and the page's
 *    serving node m: loads of a replicated page are served on c, stores on the page's home node
 *    (or, where the placement names a replicated page's copies, on every copy). A load moves one 64-byte line through memory controller m; a store is a read for
 *    ownership plus a write-back (two lines through m).
 * 2. Traffic on links (machine/traffic.ts): a load sends a request c → m and a response with data
 *    m → c; a store adds a write-back with data c → m and its done m → c; on a broadcast-coherent
 *    machine every access also sends a probe from m to each node with caches and a probe response
 *    from each to c. Each pair's packets are shared over its equal-cost paths where the routes are
 *    estimated. Rates are bytes / the predicted window time T.
 * 3. Latency. An access costs its idle latency idle[c][m] plus a delay on its memory controller and
 *    on every link of its request and data paths (and, rule XB0, at the crossbars it crosses):
 *    delay(u) = c·u + q·u/(1 − u), u = load / sustained capacity (machine/traffic.ts, rule LQ0:
 *    flat well past half of the peak, steep only close to it). The window's loop calibrates it on
 *    the recording: the queueing parts (q·u/(1 − u)) × its queue scale κ and the idle part × its
 *    idle scale ι, so that the recorded placement has the recorded latency at the recorded rates.
 * 4. Closed loop. The window's threads keep N accesses in flight while they wait and compute for
 *    C µs in between (the window's `loop`, calibrated on the recording by engine/windows.ts), so
 *    T = C + A · L(A / T) / N (A accesses). L falls as T grows and diverges where a resource
 *    reaches its capacity, so the fixed point is unique and every resource stays below capacity:
 *    a saturated resource delivers its capacity, and the latency is bounded by Little's law,
 *    L ≤ N · T / A (the population over the delivered rate). Found by regula falsi.
 */
import type { AccessWindow, MachineModel, Placement, SimulateWindow, WindowLoop, WindowMetrics } from '../model/contract.js';
import { MC_BYTES_PER_LOAD, MC_BYTES_PER_STORE, trafficModel, type TrafficModel } from '../machine/traffic.js';

/** Bytes moved per sampled memory access (one cache line). */
export const CACHE_LINE_BYTES = 64;
/**
 * Default share of a window's time that is memory stall at idle local latency, when the trace
 * cannot say (no usable counters or access rates: NUMA hinting faults, estimates). An assumption
 * (docs/engine.md, "Stall share").
 */
export const MEMORY_STALL_SHARE = 0.5;
/** Bisection stops at this relative width. */
const SOLVE_TOLERANCE = 1e-9;

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

/** Loaded-latency delay at utilisation u (u < 1) of a resource with curve (c, q): c·u + q·u/(1 − u), ns. */
export function queueDelayNs(u: number, contentionNs: number, queueNs: number): number {
  if (!(u > 0)) return 0;
  if (u >= 1) return Infinity;
  return contentionNs * u + (queueNs * u) / (1 - u);
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
  const replicas = placement.replicas;
  for (let k = 0; k < thread.length; k++) {
    const c = threadNode[thread[k]!]!;
    const p = page[k]!;
    const home = pageNode[p]!;
    const l = window.loads[k]!;
    const s = window.stores[k]!;
    if (l > 0) loads[c * n + (replicated[p] ? c : home)]! += l;
    if (s > 0) addStore(stores, n, c, home, p, s, replicated, replicas);
  }
  return { loads, stores };
}

/**
 * A store by a cpu on node c to page p: to its home node, or, where the placement says which nodes
 * hold copies of a replicated page (Placement.replicas), to every copy (one store flow each, the
 * home included), as a program keeping per-node copies must write them all.
 */
export function addStore(stores: Float64Array, n: number, c: number, home: number, p: number, s: number, replicated: Uint8Array, replicas: Placement['replicas']): void {
  const set = replicated[p] && replicas ? replicas.setOf[p]! : -1;
  if (set >= 0) for (const r of replicas!.sets[set]!) stores[c * n + r]! += s;
  else stores[c * n + home]! += s;
}

export const simulateWindow: SimulateWindow = (machine, window, placement, windowUs, _pageBytes): WindowMetrics => {
  const { loads, stores } = accessMatrix(machine, window, placement);
  return simulateMatrix(machine, loads, stores, windowUs, window.loop ?? window.stallShare ?? MEMORY_STALL_SHARE, window.accessScale ?? 1);
};

/**
 * A window's demand on every resource, independent of time: bytes per controller and link, the
 * accesses whose latency each one delays, and the idle part of the mean latency.
 */
export interface Demand {
  traffic: TrafficModel;
  /** Accesses (scaled). */
  total: number;
  /** Loads among them (scaled). */
  loads: number;
  local: number;
  /** Σ accesses × idle latency, ns. */
  idleSum: number;
  /**
   * Σ loads × idle latency, ns: what a PMU's load latencies measure differs from the mean over
   * every access by the loads' idle latency (stores often go elsewhere: an init phase's local
   * stores next to remote loads). See loadShiftNs.
   */
  loadIdleSum: number;
  /** Accesses-weighted idle local latency of the accessing nodes, ns. */
  localNs: number;
  mcBytes: Float64Array;
  linkBytes: Float64Array;
  /** Accesses delayed by each controller / by each link crossing (path-share weighted). */
  mcAccesses: Float64Array;
  linkAccesses: Float64Array;
  /** Bytes through each node's crossbar and the accesses it delays (rule XB0; zeros without one). */
  xbBytes: Float64Array;
  xbAccesses: Float64Array;
}

export function demandOf(machine: MachineModel, loads: Float64Array, stores: Float64Array, scale = 1): Demand {
  const n = machine.nodeCount;
  const traffic = trafficModel(machine);
  const idle = machine.idleLatencyNs.value;
  const linkCount = machine.links.length;
  const mcBytes = new Float64Array(n);
  const linkBytes = new Float64Array(linkCount);
  const mcAccesses = new Float64Array(n);
  const linkAccesses = new Float64Array(linkCount);
  const rb = traffic.readBytes;
  const wb = traffic.writeBytes;
  const ll = traffic.latencyLinks;
  const dl = traffic.dataLinks;
  const xbBytes = new Float64Array(n);
  const xbAccesses = new Float64Array(n);
  const crossbar = traffic.crossbarCapacity !== null;
  let total = 0;
  let loadTotal = 0;
  let local = 0;
  let idleSum = 0;
  let loadIdleSum = 0;
  let localIdleSum = 0;
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      const p = c * n + m;
      const l = loads[p]! * scale;
      const s = stores[p]! * scale;
      const a = l + s;
      if (a === 0) continue;
      total += a;
      loadTotal += l;
      idleSum += a * idle[p]!;
      loadIdleSum += l * idle[p]!;
      localIdleSum += a * idle[c * n + c]!;
      if (c === m) local += a;
      mcBytes[m]! += l * MC_BYTES_PER_LOAD + s * MC_BYTES_PER_STORE;
      mcAccesses[m]! += a;
      if (l > 0) for (let k = rb.start[p]!; k < rb.start[p + 1]!; k++) linkBytes[rb.link[k]!]! += l * rb.value[k]!;
      if (s > 0) for (let k = wb.start[p]!; k < wb.start[p + 1]!; k++) linkBytes[wb.link[k]!]! += s * wb.value[k]!;
      for (let k = ll.start[p]!; k < ll.start[p + 1]!; k++) linkAccesses[ll.link[k]!]! += a * ll.value[k]!;
      if (crossbar) {
        // The home node's crossbar, and every node the data arrives at on its way to c.
        xbAccesses[m]! += a;
        for (let k = dl.start[p]!; k < dl.start[p + 1]!; k++) xbAccesses[traffic.linkTo[dl.link[k]!]!]! += a * dl.value[k]!;
      }
    }
  }
  if (crossbar) {
    for (let x = 0; x < n; x++) xbBytes[x] = mcBytes[x]!;
    for (let k = 0; k < linkCount; k++) xbBytes[traffic.linkTo[k]!]! += linkBytes[k]!;
  }
  return { traffic, total, loads: loadTotal, local, idleSum, loadIdleSum, localNs: total > 0 ? localIdleSum / total : 0, mcBytes, linkBytes, mcAccesses, linkAccesses, xbBytes, xbAccesses };
}

/** Calibration of the latency model on the recording (WindowLoop): idle part × idleScale, queueing part × queueScale, contention part as it is. */
export interface LatencyScales {
  idleScale: number;
  queueScale: number;
  /**
   * The resources the queue scale applies to (the recording's bottleneck, engine/windows.ts
   * calibrateLatency): flags per memory controller, link and crossbar. Absent: every resource.
   */
  bottleneck?: { mc: Uint8Array; link: Uint8Array; xb: Uint8Array };
}
const UNIT_SCALES: LatencyScales = { idleScale: 1, queueScale: 1 };

/** The parts of the mean latency when the demand is carried in tUs (total, idle and the per-resource parts after the scales; contention and queue before), ns. */
export interface LatencyParts {
  total: number;
  idle: number;
  /** Σ over resources of the contention part, of the queueing part the queue scale applies to (before it), and of the other resources' queueing, ns. */
  contention: number;
  queue: number;
  otherQueue: number;
  mc: Float64Array;
  link: Float64Array;
  crossbar: number;
}

/** Mean latency, ns, when the demand is carried in tUs (Infinity when a resource would reach its capacity). */
export function latencyAt(d: Demand, tUs: number, maxUtilisation = Infinity, scales: LatencyScales = UNIT_SCALES): number {
  return latencyParts(d, tUs, maxUtilisation, null, scales);
}

/**
 * The mean latency of the loads minus the mean over every access, ns, at idle scale ι: the loads'
 * idle latency against all accesses' (the resources' delays are per access, the same for a load
 * and a store through the same resource; where loads and stores use different resources their
 * delays are averaged over both). Zero without loads. A window's `memoryLatencyNs` is the loads'
 * (what PMU load latencies measure); its stall time and Little's law use every access.
 */
export function loadShiftNs(d: Demand, idleScale: number): number {
  return d.loads > 0 && d.total > 0 ? idleScale * (d.loadIdleSum / d.loads - d.idleSum / d.total) : 0;
}

/** latencyAt, and (when `parts` is given) each resource's share of it filled in. */
export function latencyParts(d: Demand, tUs: number, maxUtilisation: number, parts: LatencyParts | null, scales: LatencyScales = UNIT_SCALES): number {
  const seconds = tUs * 1e-6;
  const t = d.traffic;
  const kq = scales.queueScale;
  const bn = scales.bottleneck;
  let cont = 0;
  // queueing on the resources the scale applies to, and on the others
  let queue = 0;
  let other = 0;
  const mc = t.mcCapacity.value;
  for (let m = 0; m < mc.length; m++) {
    if (d.mcAccesses[m] === 0) continue;
    const u = Math.min(d.mcBytes[m]! / seconds / mc[m]!, maxUtilisation);
    if (u >= 1) return Infinity;
    const a = d.mcAccesses[m]!;
    const c = a * t.mcContentionNs[m]! * u;
    const q = u > 0 ? (a * t.mcQueueNs[m]! * u) / (1 - u) : 0;
    const on = !bn || bn.mc[m] === 1;
    cont += c;
    if (on) queue += q;
    else other += q;
    if (parts) parts.mc[m] = (c + (on ? kq : 1) * q) / d.total;
  }
  const xb = t.crossbarCapacity?.value;
  if (xb) {
    let xbSum = 0;
    for (let x = 0; x < xb.length; x++) {
      if (d.xbBytes[x] === 0) continue;
      const u = Math.min(d.xbBytes[x]! / seconds / xb[x]!, maxUtilisation);
      if (u >= 1) return Infinity;
      const a = d.xbAccesses[x]!;
      const c = a * t.mcContentionNs[x]! * u;
      const q = u > 0 ? (a * t.xbQueueNs![x]! * u) / (1 - u) : 0;
      const on = !bn || bn.xb[x] === 1;
      cont += c;
      if (on) queue += q;
      else other += q;
      xbSum += c + (on ? kq : 1) * q;
    }
    if (parts) parts.crossbar = xbSum / d.total;
  }
  const cap = t.linkCapacity;
  for (let k = 0; k < cap.length; k++) {
    if (d.linkAccesses[k] === 0 && d.linkBytes[k] === 0) continue;
    const u = Math.min(d.linkBytes[k]! / seconds / cap[k]!, maxUtilisation);
    if (u >= 1) return Infinity;
    const a = d.linkAccesses[k]!;
    if (a > 0) {
      const c = a * t.linkContentionNs * u;
      const q = u > 0 ? (a * t.linkQueueNs[k]! * u) / (1 - u) : 0;
      const on = !bn || bn.link[k] === 1;
      cont += c;
      if (on) queue += q;
      else other += q;
      if (parts) parts.link[k] = (c + (on ? kq : 1) * q) / d.total;
    }
  }
  const total = (scales.idleScale * d.idleSum + cont + kq * queue + other) / d.total;
  if (parts) {
    parts.total = total;
    parts.idle = (scales.idleScale * d.idleSum) / d.total;
    parts.contention = cont / d.total;
    parts.queue = queue / d.total;
    parts.otherQueue = other / d.total;
  }
  return total;
}

/** The least time in which every resource carries its bytes below its capacity (u = 1), µs. */
function saturationUs(d: Demand): number {
  let t = 0;
  const mc = d.traffic.mcCapacity.value;
  for (let m = 0; m < mc.length; m++) t = Math.max(t, (d.mcBytes[m]! / mc[m]!) * 1e6);
  const xb = d.traffic.crossbarCapacity?.value;
  if (xb) for (let x = 0; x < xb.length; x++) t = Math.max(t, (d.xbBytes[x]! / xb[x]!) * 1e6);
  const cap = d.traffic.linkCapacity;
  for (let k = 0; k < cap.length; k++) t = Math.max(t, (d.linkBytes[k]! / cap[k]!) * 1e6);
  return t;
}

/**
 * A window's closed loop from its length and stall share at idle local latency, for windows that
 * carry no calibrated loop (hand-built ones): compute C = W(1 − s), population N = A · L_local /
 * (W · s), i.e. the window takes W under a placement at idle local latency. No latency scale, no
 * Little's-law bound (the cores are unknown).
 */
export function defaultLoop(d: Demand, windowUs: number, stallShare: number): WindowLoop {
  const s = Math.min(Math.max(stallShare, 0), 1);
  const w = Math.max(windowUs, 1e-9);
  return {
    computeUs: w * (1 - s),
    concurrency: s > 0 && d.localNs > 0 ? (d.total * d.localNs) / (w * 1000 * s) : Infinity,
    idleScale: 1,
    queueScale: 1,
    threads: 0,
    maxConcurrency: Infinity,
  };
}

/**
 * T = C + A·φ·L(T)/N for the demand (see the file comment). h(T) = g(T) − T falls from +∞ (at
 * saturation, where some u reaches 1) to −∞, so the root is unique; it is bracketed, then found by
 * regula falsi with the Illinois modification (bisection while h is infinite).
 */
export function solveLoopUs(d: Demand, loop: WindowLoop): number {
  const tSat = saturationUs(d);
  // µs of stall per ns of mean latency.
  const k = Number.isFinite(loop.concurrency) && loop.concurrency > 0 ? d.total / (loop.concurrency * 1000) : 0;
  if (k === 0) return Math.max(loop.computeUs, tSat * (1 + 1e-9));
  const h = (tUs: number) => loop.computeUs + k * latencyAt(d, tUs, Infinity, loop) - tUs;
  let lo = tSat;
  let flo = tSat > 0 ? Infinity : h(0);
  let hi = Math.max(loop.computeUs + k * ((loop.idleScale * d.idleSum) / d.total), tSat * 2, 1e-9);
  let fhi = h(hi);
  for (let i = 0; i < 200 && fhi > 0; i++) {
    lo = hi;
    flo = fhi;
    hi *= 2;
    fhi = h(hi);
  }
  let side = 0;
  let x = hi;
  for (let it = 0; it < 200; it++) {
    x = Number.isFinite(flo) ? hi - (fhi * (hi - lo)) / (fhi - flo) : (lo + hi) / 2;
    if (!(x > lo && x < hi)) x = (lo + hi) / 2;
    const fx = h(x);
    if (Math.abs(fx) <= SOLVE_TOLERANCE * x || hi - lo <= SOLVE_TOLERANCE * hi) break;
    if (fx > 0) {
      lo = x;
      flo = fx;
      if (side === 1) fhi /= 2;
      side = 1;
    } else {
      hi = x;
      fhi = fx;
      if (side === -1 && Number.isFinite(flo)) flo /= 2;
      side = -1;
    }
  }
  return x;
}

/** The simulator on an access matrix (see accessMatrix); `timing` is the window's loop, or (hand-built windows) its stall share at idle local latency. */
export function simulateMatrix(
  machine: MachineModel,
  loads: Float64Array,
  stores: Float64Array,
  windowUs: number,
  timing: WindowLoop | number = MEMORY_STALL_SHARE,
  accessScale = 1,
): WindowMetrics {
  const n = machine.nodeCount;
  const linkCount = machine.links.length;
  const d = demandOf(machine, loads, stores, accessScale);
  const mcUtilisation = new Float64Array(n);
  const linkUtilisation = new Float64Array(linkCount);
  const mcLoadBytesPerS = new Float64Array(n);
  const linkLoadBytesPerS = new Float64Array(linkCount);
  const mcDelayNs = new Float64Array(n);
  const linkDelayNs = new Float64Array(linkCount);
  if (d.total === 0) {
    const computeUs = typeof timing === 'number' ? windowUs : timing.computeUs;
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
      predictedUs: computeUs,
      accesses: 0,
      loads: 0,
      computeUs,
      stallUs: 0,
      concurrency: 0,
      idleLatencyNs: 0,
      idleScale: typeof timing === 'number' ? 1 : timing.idleScale,
      queueScale: typeof timing === 'number' ? 1 : timing.queueScale,
      mcDelayNs,
      linkDelayNs,
      crossbarDelayNs: 0,
      latencyBoundNs: Infinity,
    };
  }
  const loop = typeof timing === 'number' ? defaultLoop(d, windowUs, timing) : timing;
  const tUs = solveLoopUs(d, loop);
  const parts: LatencyParts = { total: 0, idle: 0, contention: 0, queue: 0, otherQueue: 0, mc: mcDelayNs, link: linkDelayNs, crossbar: 0 };
  latencyParts(d, tUs, Infinity, parts, loop);
  const shift = loadShiftNs(d, loop.idleScale);
  const latency = parts.total + shift;
  const seconds = tUs * 1e-6;
  const mcCap = d.traffic.mcCapacity.value;
  for (let m = 0; m < n; m++) {
    mcLoadBytesPerS[m] = d.mcBytes[m]! / seconds;
    mcUtilisation[m] = mcLoadBytesPerS[m]! / mcCap[m]!;
  }
  let linkUtilSum = 0;
  for (let k = 0; k < linkCount; k++) {
    linkLoadBytesPerS[k] = d.linkBytes[k]! / seconds;
    linkUtilisation[k] = linkLoadBytesPerS[k]! / d.traffic.linkCapacity[k]!;
    linkUtilSum += linkUtilisation[k]!;
  }
  const stallUs = Number.isFinite(loop.concurrency) && loop.concurrency > 0 ? (d.total * parts.total) / (loop.concurrency * 1000) : 0;
  return {
    localAccessRatio: d.local / d.total,
    memoryLatencyNs: latency,
    mcLoadBytesPerS,
    mcUtilisation,
    mcImbalancePct: sampleCvPct(mcLoadBytesPerS),
    linkLoadBytesPerS,
    linkUtilisation,
    interconnectUsagePct: linkCount > 0 ? (linkUtilSum / linkCount) * 100 : 0,
    interconnectImbalancePct: sampleCvPct(linkLoadBytesPerS),
    accessesPerUs: d.total / tUs,
    predictedUs: tUs,
    accesses: d.total / accessScale,
    loads: d.loads / accessScale,
    computeUs: loop.computeUs,
    stallUs,
    concurrency: loop.concurrency,
    idleLatencyNs: parts.idle + shift,
    idleScale: loop.idleScale,
    queueScale: loop.queueScale,
    mcDelayNs,
    linkDelayNs,
    crossbarDelayNs: parts.crossbar,
    latencyBoundNs: Number.isFinite(loop.maxConcurrency) ? (loop.maxConcurrency * tUs * 1000) / d.total + shift : Infinity,
  };
}
