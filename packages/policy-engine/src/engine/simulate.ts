/**
 * The traffic simulator (contract `SimulateWindow`); docs/engine.md, "Simulator" and "Traffic
 * model", is the normative description. In short, for one window under one placement:
 *
 * 1. Flows. Each (thread, page) entry is a flow between the thread's node c and the page's
 *    serving node m: loads of a replicated page are served on c, stores always on the page's home
 *    node. A load moves one 64-byte line through memory controller m; a store is a read for
 *    ownership plus a write-back (two lines through m).
 * 2. Traffic on links (machine/traffic.ts): a load sends a request c → m and a response with data
 *    m → c; a store adds a write-back with data c → m and its done m → c; on a broadcast-coherent
 *    machine every access also sends a probe from m to each node with caches and a probe response
 *    from each to c. Each pair's packets are shared over its equal-cost paths where the routes are
 *    estimated. Rates are bytes / the predicted window time T.
 * 3. Latency. An access costs its idle latency idle[c][m] plus a queueing delay on its memory
 *    controller and on every link of its request and data paths: d(u) = S · u / (1 − u), u = load /
 *    sustained capacity, S = the node's idle local latency for a controller and the machine's idle
 *    cost of one hop for a link; where the machine has crossbars (rule XB0) also at the home node's
 *    and at every node the data arrives at. Not capped: u < 1 always holds at the solution (below).
 * 4. Time and feedback. T = W · ((1 − s) + s · L(T) / L_local): W the window's idle-time length
 *    (window.idleUs, the recording's window converted to idle latency under the observed
 *    placement), s the window's stall share at idle local latency (window.stallShare), L(T) the
 *    mean latency at rates bytes / T, L_local the accesses' own nodes' idle local latency. Every
 *    resource needs T > bytes / capacity (u < 1), where L(T) → ∞; L falls as T grows, so the fixed
 *    point is unique and found by bisection: offered load settles where the threads' stalls let it.
 */
import type { AccessWindow, MachineModel, Placement, SimulateWindow, WindowMetrics } from '../model/contract.js';
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

/** Loaded-latency delay at utilisation u (u < 1), scale s ns: s · u / (1 − u). */
export function queueDelayNs(u: number, scaleNs: number): number {
  if (!(u > 0)) return 0;
  if (u >= 1) return Infinity;
  return (scaleNs * u) / (1 - u);
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
  return simulateMatrix(machine, loads, stores, windowUs, window.stallShare ?? MEMORY_STALL_SHARE, window.accessScale ?? 1);
};

/**
 * A window's demand on every resource, independent of time: bytes per controller and link, the
 * accesses whose latency each one delays, and the idle part of the mean latency.
 */
export interface Demand {
  traffic: TrafficModel;
  /** Accesses (scaled). */
  total: number;
  local: number;
  /** Σ accesses × idle latency, ns. */
  idleSum: number;
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
  let local = 0;
  let idleSum = 0;
  let localIdleSum = 0;
  for (let c = 0; c < n; c++) {
    for (let m = 0; m < n; m++) {
      const p = c * n + m;
      const l = loads[p]! * scale;
      const s = stores[p]! * scale;
      const a = l + s;
      if (a === 0) continue;
      total += a;
      idleSum += a * idle[p]!;
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
  return { traffic, total, local, idleSum, localNs: total > 0 ? localIdleSum / total : 0, mcBytes, linkBytes, mcAccesses, linkAccesses, xbBytes, xbAccesses };
}

/** Mean latency, ns, when the demand is carried in tUs (Infinity when a resource would exceed its capacity). */
export function latencyAt(d: Demand, tUs: number, maxUtilisation = Infinity): number {
  const seconds = tUs * 1e-6;
  const t = d.traffic;
  let sum = d.idleSum;
  const mc = t.mcCapacity.value;
  for (let m = 0; m < mc.length; m++) {
    if (d.mcAccesses[m] === 0) continue;
    const u = Math.min(d.mcBytes[m]! / seconds / mc[m]!, maxUtilisation);
    sum += d.mcAccesses[m]! * queueDelayNs(u, t.mcServiceNs[m]!);
  }
  const xb = t.crossbarCapacity?.value;
  if (xb) {
    for (let x = 0; x < xb.length; x++) {
      if (d.xbBytes[x] === 0) continue;
      const u = Math.min(d.xbBytes[x]! / seconds / xb[x]!, maxUtilisation);
      sum += d.xbAccesses[x]! * queueDelayNs(u, t.mcServiceNs[x]!);
    }
  }
  const hop = t.linkServiceNs.value;
  const cap = t.linkCapacity;
  for (let k = 0; k < cap.length; k++) {
    if (d.linkAccesses[k] === 0 && d.linkBytes[k] === 0) continue;
    const u = Math.min(d.linkBytes[k]! / seconds / cap[k]!, maxUtilisation);
    if (d.linkAccesses[k]! > 0) sum += d.linkAccesses[k]! * queueDelayNs(u, hop);
    else if (u >= 1) return Infinity;
  }
  return sum / d.total;
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
 * T = W((1 − s) + s·L(T)/L_local) for the demand; see the file comment. h(T) = g(T) − T falls
 * from +∞ (at saturation, where some u reaches 1) to −∞, so the root is unique; it is bracketed,
 * then found by regula falsi with the Illinois modification (bisection while h is infinite).
 */
export function solveWindowUs(d: Demand, windowUs: number, stallShare: number): number {
  const s = Math.min(Math.max(stallShare, 0), 1);
  const tSat = saturationUs(d);
  if (s === 0) return Math.max(windowUs, tSat * (1 + 1e-9));
  const h = (tUs: number) => windowUs * (1 - s + (s * latencyAt(d, tUs)) / d.localNs) - tUs;
  let lo = tSat;
  let flo = tSat > 0 ? Infinity : h(0);
  let hi = Math.max(windowUs, tSat * 2, 1e-9);
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

/** The simulator on an access matrix (see accessMatrix). */
export function simulateMatrix(
  machine: MachineModel,
  loads: Float64Array,
  stores: Float64Array,
  windowUs: number,
  stallShare: number = MEMORY_STALL_SHARE,
  accessScale = 1,
): WindowMetrics {
  const n = machine.nodeCount;
  const linkCount = machine.links.length;
  const d = demandOf(machine, loads, stores, accessScale);
  const mcUtilisation = new Float64Array(n);
  const linkUtilisation = new Float64Array(linkCount);
  const mcLoadBytesPerS = new Float64Array(n);
  const linkLoadBytesPerS = new Float64Array(linkCount);
  if (d.total === 0) {
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
  const tUs = solveWindowUs(d, windowUs, stallShare);
  const latency = latencyAt(d, tUs);
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
  };
}
