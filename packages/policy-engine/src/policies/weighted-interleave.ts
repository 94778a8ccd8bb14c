/**
 * weighted-interleave: Linux's MPOL_WEIGHTED_INTERLEAVE (6.9+) as a what-if. Kernel semantics: a
 * weighted round-robin per allocation (per VMA range): with nodes N0…Nk−1 and weights w0…wk−1
 * (integers 1–255), the slots of one cycle are N0 w0 times, then N1 w1 times, …; page i of a range,
 * counted from the range's start, goes to the node of slot i mod Σw (mm/mempolicy.c,
 * weighted_interleave_nid; docs/policies.md, "Weighted interleave").
 *
 * Ranges here: contiguous stretches of page rows in address order, split where an allocation
 * object (ReplayInput.objectRanges) starts or ends, so that a plan can state them as they are
 * (docs/plan-format.md). Threads are where the recording had them.
 *
 * `weighted-interleave` without weights replays the weights the engine recommends
 * (recommendWeights below); `weighted-interleave:N=W,M=W,…` (node indices) replays the weights given.
 */
import type { MachineModel, NodeIndex, NodeWeights, Policy, ReplayInput, WeightCurvePoint, WeightRecommendation, WindowLoop } from '../model/contract.js';

export type { NodeWeights, WeightCurvePoint, WeightRecommendation } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { definePolicy } from '../engine/run.js';
import { MEMORY_STALL_SHARE, simulateMatrix } from '../engine/simulate.js';
import { trafficModel } from '../machine/traffic.js';
import { machineTiers } from '../machine/model.js';
import { countByNode, perNode, recordedThreads, replayFixedPages, windowLengthUs } from './common.js';
import { pagesByAddress } from './interleave.js';

/** The kernel's per-node weight range (sysfs weighted_interleave/nodeN, MPOL_WEIGHTED_INTERLEAVE). */
export const MIN_WEIGHT = 1;
export const MAX_WEIGHT = 255;
/** The recommended weights stop at the smallest integers whose shares are within this of the optimum's (absolute share). */
export const WEIGHT_SHARE_TOLERANCE = 0.005;
/** Points of the DRAM-share curve (0, 1/CURVE_STEPS, …, 1), before refinement. */
export const CURVE_STEPS = 20;
/**
 * Shares whose predicted times differ by less than this are within the model's resolution: when
 * the bandwidth ratio's shares (the start, the kernel ABI's derivation of weights from node
 * bandwidths) are predicted within it of the optimum, they are recommended.
 */
export const RESOLUTION_BAND = 0.01;
/** "Flat" band of the curve: shares whose predicted time is within this of the optimum's. */
export const FLAT_BAND = 0.05;


/** Checks weights: same length as nodes, integers 1–255, distinct valid nodes. Throws EngineError('bad-option'). */
export function checkWeights(w: NodeWeights, nodeCount: number, what = 'weighted-interleave'): void {
  if (w.nodes.length === 0) throw new EngineError('bad-option', `${what} needs at least one node`);
  if (w.nodes.length !== w.weights.length) throw new EngineError('bad-option', `${what}: ${w.weights.length} weights for ${w.nodes.length} nodes; give one weight per node`);
  const seen = new Set<number>();
  w.nodes.forEach((node, k) => {
    if (!Number.isInteger(node) || node < 0 || node >= nodeCount) throw new EngineError('bad-option', `${what}: node index ${node} is not a node of the machine (0..${nodeCount - 1})`);
    if (seen.has(node)) throw new EngineError('bad-option', `${what}: node index ${node} is given twice`);
    seen.add(node);
    const v = w.weights[k]!;
    if (!Number.isInteger(v) || v < MIN_WEIGHT || v > MAX_WEIGHT) throw new EngineError('bad-option', `${what}: weight ${v} of node index ${node} is not an integer from ${MIN_WEIGHT} to ${MAX_WEIGHT}`);
  });
}

/** The slot table of one cycle: nodes[0] weights[0] times, then nodes[1] weights[1] times, … */
export function weightedSlots(w: NodeWeights): Int16Array {
  const total = w.weights.reduce((a, b) => a + b, 0);
  const slots = new Int16Array(total);
  let at = 0;
  w.nodes.forEach((node, k) => {
    for (let j = 0; j < w.weights[k]!; j++) slots[at++] = node;
  });
  return slots;
}

/** Node of page `i` of a range (counted from the range's start) under weights: slot i mod Σw. */
export function weightedNodeOf(i: number, w: NodeWeights): NodeIndex {
  const total = w.weights.reduce((a, b) => a + b, 0);
  let r = i % total;
  for (let k = 0; k < w.nodes.length; k++) {
    if (r < w.weights[k]!) return w.nodes[k]!;
    r -= w.weights[k]!;
  }
  return w.nodes[w.nodes.length - 1]!;
}

/** An allocation object's address range, for per-object weights. */
export interface ObjectRange {
  start: bigint;
  end: bigint;
  /** Site, or another name for the object; objects of one label share their weights. */
  label: string;
}

/**
 * The ranges weighted interleave counts pages in: page rows in address order, cut where the next
 * address is not this one + pageBytes and at object boundaries. Each range's object group (index
 * into the distinct labels, −1 = not in an object). Without addresses: one range of all rows.
 */
export function weightedRanges(input: ReplayInput): { order: Int32Array; rangeStart: number[]; group: Int32Array; labels: string[] } {
  const order = pagesByAddress(input);
  const address = input.pageAddress;
  const objects = [...(input.objectRanges ?? [])].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const labels = [...new Set(objects.map((o) => o.label))];
  const labelIndex = new Map(labels.map((l, i) => [l, i]));
  const group = new Int32Array(input.pageCount).fill(-1);
  const objectOf = new Int32Array(input.pageCount).fill(-1);
  const rangeStart: number[] = [];
  if (!address) {
    if (order.length > 0) rangeStart.push(0);
    return { order, rangeStart, group, labels };
  }
  const bytes = BigInt(input.pageBytes);
  let o = 0;
  for (let i = 0; i < order.length; i++) {
    const p = order[i]!;
    const a = address[p]!;
    while (o < objects.length && objects[o]!.end <= a) o++;
    if (o < objects.length && objects[o]!.start <= a && a < objects[o]!.end) {
      objectOf[p] = o;
      group[p] = labelIndex.get(objects[o]!.label)!;
    }
    if (i === 0) {
      rangeStart.push(0);
      continue;
    }
    const q = order[i - 1]!;
    if (address[q]! + bytes !== a || objectOf[q] !== objectOf[p]) rangeStart.push(i);
  }
  return { order, rangeStart, group, labels };
}

/** Page nodes under weights per object group (`byGroup[g]`, else `process`), ranges as weightedRanges. */
export function weightedPageNodes(
  input: ReplayInput,
  process: NodeWeights,
  byGroup: ReadonlyMap<number, NodeWeights> = new Map(),
  ranges: ReturnType<typeof weightedRanges> = weightedRanges(input),
): Int16Array {
  const { order, rangeStart, group } = ranges;
  const pageNode = new Int16Array(input.pageCount);
  const slotsOf = new Map<NodeWeights, Int16Array>();
  const slots = (w: NodeWeights) => {
    let s = slotsOf.get(w);
    if (!s) slotsOf.set(w, (s = weightedSlots(w)));
    return s;
  };
  for (let r = 0; r < rangeStart.length; r++) {
    const from = rangeStart[r]!;
    const to = r + 1 < rangeStart.length ? rangeStart[r + 1]! : order.length;
    const g = group[order[from]!]!;
    const table = slots(byGroup.get(g) ?? process);
    for (let i = from; i < to; i++) pageNode[order[i]!] = table[(i - from) % table.length]!;
  }
  return pageNode;
}

// ---------------------------------------------------------------------------------------------
// Recommendation

interface FluidWindow {
  /** loads/stores by [group+1][c] (group −1 at row 0), accessing node c. */
  loads: Float64Array;
  stores: Float64Array;
  windowUs: number;
  timing: WindowLoop | number;
  accessScale: number;
}

/**
 * Accesses per window by object group and accessing node, independent of where pages are: the
 * input of the fluid model (one pass over the windows).
 */
function fluidWindows(input: ReplayInput, group: Int32Array, groups: number): FluidWindow[] {
  const n = input.machine.nodeCount;
  const threadsAt = recordedThreads(input);
  const out: FluidWindow[] = [];
  for (const window of input.windows) {
    const threadNode = threadsAt(window.index);
    const loads = new Float64Array((groups + 1) * n);
    const stores = new Float64Array((groups + 1) * n);
    for (let k = 0; k < window.thread.length; k++) {
      const c = threadNode[window.thread[k]!]!;
      if (c < 0) continue;
      const row = (group[window.page[k]!]! + 1) * n + c;
      loads[row]! += window.loads[k]!;
      stores[row]! += window.stores[k]!;
    }
    out.push({ loads, stores, windowUs: windowLengthUs(window), timing: window.loop ?? window.stallShare ?? MEMORY_STALL_SHARE, accessScale: window.accessScale ?? 1 });
  }
  return out;
}

/** Predicted time of the fluid model: each group's accesses spread over the nodes by its shares. */
function fluidTime(machine: MachineModel, windows: readonly FluidWindow[], sharesOf: (row: number) => Float64Array, rows: number): number {
  const n = machine.nodeCount;
  let total = 0;
  const loads = new Float64Array(n * n);
  const stores = new Float64Array(n * n);
  for (const w of windows) {
    loads.fill(0);
    stores.fill(0);
    for (let r = 0; r < rows; r++) {
      const shares = sharesOf(r);
      for (let c = 0; c < n; c++) {
        const l = w.loads[r * n + c]!;
        const s = w.stores[r * n + c]!;
        if (l === 0 && s === 0) continue;
        for (let m = 0; m < n; m++) {
          if (shares[m] === 0) continue;
          loads[c * n + m]! += l * shares[m]!;
          stores[c * n + m]! += s * shares[m]!;
        }
      }
    }
    total += simulateMatrix(machine, loads, stores, w.windowUs, w.timing, w.accessScale).predictedUs;
  }
  return total;
}

/**
 * The fast and slow sides of a machine (or of the node indices `among`, when given): nodes with
 * cpus vs memory-only nodes, else the fastest tier vs the rest.
 */
export function weightSides(machine: MachineModel, among?: readonly NodeIndex[]): { fast: NodeIndex[]; slow: NodeIndex[]; sides: string } {
  const all = among ? [...among].sort((a, b) => a - b) : Array.from({ length: machine.nodeCount }, (_, i) => i);
  const withCpus = all.filter((i) => machine.nodeCpus[i]!.length > 0);
  const memoryOnly = all.filter((i) => machine.nodeCpus[i]!.length === 0);
  if (withCpus.length > 0 && memoryOnly.length > 0) {
    return { fast: withCpus, slow: memoryOnly, sides: 'DRAM share = pages on the nodes with cpus; the rest on the memory-only nodes' };
  }
  const tiers = machineTiers(machine);
  const top = Math.min(...all.map((i) => tiers[i]!));
  const fast = all.filter((i) => tiers[i] === top);
  const slow = all.filter((i) => tiers[i] !== top);
  return { fast, slow, sides: slow.length > 0 ? `DRAM share = pages on memory tier ${top}; the rest on the lower tiers` : 'one memory tier: no DRAM share to choose' };
}

/** Shares per node: `x` on the fast side, 1 − x on the slow side, each side split by sustained bandwidth. */
function sideShares(n: number, fast: readonly number[], slow: readonly number[], capacity: Float64Array, x: number): Float64Array {
  const shares = new Float64Array(n);
  const split = (side: readonly number[], amount: number) => {
    const sum = side.reduce((s, i) => s + capacity[i]!, 0);
    for (const i of side) shares[i] = sum > 0 ? (amount * capacity[i]!) / sum : amount / side.length;
  };
  split(fast, slow.length > 0 ? x : 1);
  if (slow.length > 0) split(slow, 1 - x);
  return shares;
}

/**
 * The smallest integer weights (1–255) whose shares are all within WEIGHT_SHARE_TOLERANCE of
 * `shares` (nodes with a zero share left out), else the closest with the largest weight 255.
 */
export function weightsForShares(shares: ArrayLike<number>): NodeWeights {
  const nodes: number[] = [];
  const target: number[] = [];
  for (let i = 0; i < shares.length; i++) {
    if (shares[i]! > 1e-9) {
      nodes.push(i);
      target.push(shares[i]!);
    }
  }
  const sum = target.reduce((a, b) => a + b, 0);
  const norm = target.map((t) => t / sum);
  const top = Math.max(...norm);
  let best: { weights: number[]; error: number } | null = null;
  for (let scale = 1; scale <= MAX_WEIGHT; scale++) {
    const weights = norm.map((t) => Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, Math.round((t / top) * scale))));
    const total = weights.reduce((a, b) => a + b, 0);
    const error = Math.max(...weights.map((w, k) => Math.abs(w / total - norm[k]!)));
    if (!best || error < best.error - 1e-12) best = { weights, error };
    if (error <= WEIGHT_SHARE_TOLERANCE) break;
  }
  return { nodes, weights: best!.weights };
}

function sharesOfWeights(n: number, w: NodeWeights): Float64Array {
  const total = w.weights.reduce((a, b) => a + b, 0);
  const shares = new Float64Array(n);
  w.nodes.forEach((node, k) => (shares[node] = w.weights[k]! / total));
  return shares;
}

/**
 * Weights for `input` (docs/policies.md, "Weighted interleave: recommended weights"): start from
 * the nodes' sustained bandwidth ratio, then the share of pages on the fast side (DRAM) that
 * minimises the predicted time, found on a curve of CURVE_STEPS + 1 shares and refined by golden
 * section around its best point, then rounded to the smallest integer weights within
 * WEIGHT_SHARE_TOLERANCE. The time of a share comes from the simulator on a fluid version of the
 * recording: each window's accesses from each node spread over the nodes by the shares (what
 * weighted interleave does to a range much larger than one weight cycle). With allocation objects,
 * each object site is then tried on its own curve, the others held, and keeps its own weights
 * when that predicts faster by more than 0.1 %.
 */
export function recommendWeights(input: ReplayInput, among?: readonly NodeIndex[]): WeightRecommendation {
  const machine = input.machine;
  const n = machine.nodeCount;
  if (among) checkNodeSet(among, n);
  const capacity = trafficModel(machine).mcCapacity.value;
  const { fast, slow, sides } = weightSides(machine, among);
  const { group, labels } = weightedRanges(input);
  const windows = fluidWindows(input, group, labels.length);
  const rows = labels.length + 1;
  const timeOf = (shares: Float64Array) => fluidTime(machine, windows, () => shares, rows);
  const at = (x: number) => sideShares(n, fast, slow, capacity, x);

  const totalCap = [...fast, ...slow].reduce((s, i) => s + capacity[i]!, 0);
  const x0 = slow.length > 0 ? fast.reduce((s, i) => s + capacity[i]!, 0) / totalCap : 1;
  const curveMap = new Map<number, number>();
  const point = (x: number): number => {
    const key = Math.round(x * 1e6) / 1e6;
    let t = curveMap.get(key);
    if (t === undefined) curveMap.set(key, (t = timeOf(at(key))));
    return t;
  };
  if (slow.length > 0) {
    for (let k = 0; k <= CURVE_STEPS; k++) point(k / CURVE_STEPS);
    point(x0);
    // Golden-section refinement in the bracket around the best grid point.
    const grid = [...curveMap.entries()].sort((a, b) => a[0] - b[0]);
    const bestK = grid.reduce((b, e, k) => (e[1] < grid[b]![1] ? k : b), 0);
    let lo = grid[Math.max(0, bestK - 1)]![0];
    let hi = grid[Math.min(grid.length - 1, bestK + 1)]![0];
    const phi = (Math.sqrt(5) - 1) / 2;
    let a = hi - phi * (hi - lo);
    let b = lo + phi * (hi - lo);
    for (let it = 0; it < 24 && hi - lo > 1e-4; it++) {
      if (point(a) <= point(b)) {
        hi = b;
        b = a;
        a = hi - phi * (hi - lo);
      } else {
        lo = a;
        a = b;
        b = lo + phi * (hi - lo);
      }
    }
  } else {
    point(1);
  }
  const curve = [...curveMap.entries()].map(([dramShare, predictedUs]) => ({ dramShare, predictedUs })).sort((p, q) => p.dramShare - q.dramShare);
  const optimum = curve.reduce((b, p) => (p.predictedUs < b.predictedUs ? p : b), curve[0]!);
  const within = curve.filter((p) => p.predictedUs <= optimum.predictedUs * (1 + FLAT_BAND));
  const x0Us = curveMap.get(x0) ?? point(x0);
  const chosenShare = x0Us <= optimum.predictedUs * (1 + RESOLUTION_BAND) ? x0 : optimum.dramShare;
  const weights = weightsForShares(at(chosenShare));
  const weightShares = sharesOfWeights(n, weights);
  const dramShare = fast.reduce((s, i) => s + weightShares[i]!, 0);
  const bwWeights = weightsForShares(at(x0));
  const bwShares = sharesOfWeights(n, bwWeights);
  const equal = new Float64Array(n);
  for (const i of [...fast, ...slow]) equal[i] = 1 / (fast.length + slow.length);

  // Per object site: its own share, the others at the process weights.
  const objects: WeightRecommendation['objects'] = [];
  const processTime = timeOf(weightShares);
  if (slow.length > 0 && labels.length > 0) {
    const chosen = new Map<number, Float64Array>();
    const rowShares = (r: number) => chosen.get(r) ?? weightShares;
    let current = processTime;
    labels.forEach((label, g) => {
      const row = g + 1;
      let bestX = -1;
      let bestT = current;
      for (let k = 0; k <= CURVE_STEPS; k++) {
        const x = k / CURVE_STEPS;
        const trial = at(x);
        const t = fluidTime(machine, windows, (r) => (r === row ? trial : rowShares(r)), rows);
        if (t < bestT * (1 - 1e-3)) {
          bestT = t;
          bestX = x;
        }
      }
      if (bestX >= 0) {
        const w = weightsForShares(at(bestX));
        chosen.set(row, sharesOfWeights(n, w));
        current = fluidTime(machine, windows, rowShares, rows);
        const s = sharesOfWeights(n, w);
        objects.push({ label, weights: w, dramShare: fast.reduce((sum, i) => sum + s[i]!, 0) });
      }
    });
  }

  return {
    fast,
    slow,
    sides,
    weights,
    dramShare,
    predictedUs: processTime,
    optimum,
    bandwidthRatio: { weights: bwWeights, dramShare: fast.reduce((s, i) => s + bwShares[i]!, 0), predictedUs: timeOf(bwShares) },
    dramOnlyUs: point(1),
    equalUs: timeOf(equal),
    curve,
    flat: { band: FLAT_BAND, fromShare: within[0]!.dramShare, toShare: within[within.length - 1]!.dramShare },
    objects,
    method:
      (among ? `over node indices ${[...fast, ...slow].sort((a, b) => a - b).join(', ')} (the set given); ` : '') +
      `start: shares in proportion to the nodes' sustained bandwidth (${trafficModel(machine).mcCapacity.source}); ` +
      `then the DRAM share minimising the predicted time on ${CURVE_STEPS + 1} shares, refined by golden section; each side split by bandwidth; ` +
      `times from the simulator with each window's accesses spread over the nodes by the shares (a range much larger than one weight cycle); ` +
      `the bandwidth ratio kept where it is predicted within ${RESOLUTION_BAND * 100} % of the optimum (the model's resolution); ` +
      `integer weights: the smallest within ${WEIGHT_SHARE_TOLERANCE * 100} % of the chosen shares`,
  };
}

/** Checks a node set for a recommendation: at least one node, valid distinct indices. Throws EngineError('bad-option'). */
export function checkNodeSet(nodes: readonly number[], nodeCount: number, what = 'weighted-interleave'): void {
  if (nodes.length === 0) throw new EngineError('bad-option', `${what} needs at least one node`);
  const seen = new Set<number>();
  for (const node of nodes) {
    if (!Number.isInteger(node) || node < 0 || node >= nodeCount) throw new EngineError('bad-option', `${what}: node index ${node} is not a node of the machine (0..${nodeCount - 1})`);
    if (seen.has(node)) throw new EngineError('bad-option', `${what}: node index ${node} is given twice`);
    seen.add(node);
  }
}

/** `weighted-interleave:N,M` → the node indices to recommend weights over, or null when the id is not of that form. */
export function parseWeightedNodeSetId(id: string): NodeIndex[] | null {
  const m = /^weighted-interleave:(\d+(?:,\d+)*)$/.exec(id);
  return m ? m[1]!.split(',').map(Number) : null;
}

/** `weighted-interleave:N=W,M=W` → weights (node indices), or null when the id is not of that form. */
export function parseWeightedId(id: string): NodeWeights | null {
  const m = /^weighted-interleave:(\d+=\d+(?:,\d+=\d+)*)$/.exec(id);
  if (!m) return null;
  const pairs = m[1]!.split(',').map((p) => p.split('=').map(Number) as [number, number]);
  return { nodes: pairs.map((p) => p[0]), weights: pairs.map((p) => p[1]) };
}

const kernelIds = (input: ReplayInput, w: NodeWeights) => w.nodes.map((i, k) => `node ${input.machine.nodeIds[i]}×${w.weights[k]}`).join(', ');

/**
 * Weighted interleave with the weights given, or (none given) the engine's recommendation, over
 * every node or over the node indices `among`.
 */
export function weightedInterleavePolicy(given?: NodeWeights, among?: readonly NodeIndex[]): Policy {
  const id = given
    ? `weighted-interleave:${given.nodes.map((node, k) => `${node}=${given.weights[k]}`).join(',')}`
    : among
      ? `weighted-interleave:${among.join(',')}`
      : 'weighted-interleave';
  return definePolicy({
    id,
    description:
      'MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+): pages of each range dealt over the nodes by a weighted round-robin (weights 1–255); the weights given, or the ones the engine recommends from the nodes\' bandwidth and the simulator; threads where the recording had them.',
    *run(input, options) {
      let process: NodeWeights;
      const byGroup = new Map<number, NodeWeights>();
      let why: string;
      let recommendation: WeightRecommendation | null = null;
      if (given) {
        checkWeights(given, input.machine.nodeCount);
        process = given;
        why = `weights given: ${kernelIds(input, given)}`;
      } else {
        recommendation = recommendWeights(input, among);
        process = recommendation.weights;
        const { labels } = weightedRanges(input);
        for (const o of recommendation.objects) byGroup.set(labels.indexOf(o.label), o.weights);
        why =
          `weights recommended: ${kernelIds(input, process)} (DRAM share ${(recommendation.dramShare * 100).toFixed(1)} %; ` +
          `optimum of the curve at ${(recommendation.optimum.dramShare * 100).toFixed(1)} %, within ${FLAT_BAND * 100} % of it from ${(recommendation.flat.fromShare * 100).toFixed(0)} % to ${(recommendation.flat.toShare * 100).toFixed(0)} %)` +
          (recommendation.objects.length > 0 ? `; ${recommendation.objects.length} allocation sites with their own weights` : '');
      }
      const ranges = weightedRanges(input);
      const pageNode = weightedPageNodes(input, process, byGroup, ranges);
      // Each range's weights: its object site's own (index into recommendation.objects), else the process's.
      const objectIndex = new Map<number, number>();
      recommendation?.objects.forEach((o, k) => objectIndex.set(ranges.labels.indexOf(o.label), k));
      const rangeWeights = Int32Array.from(ranges.rangeStart, (from) => objectIndex.get(ranges.group[ranges.order[from]!]!) ?? -1);
      const run = yield* replayFixedPages(
        id,
        input,
        options,
        { pageNode, replicated: new Uint8Array(input.pageCount) },
        recordedThreads(input),
        [
          {
            window: 0,
            kind: 'interleave',
            explanation: `${input.pageCount} pages weighted-interleaved at allocation, per range in address order: ${why}; ${perNode(input, countByNode(pageNode, input.machine.nodeCount))}`,
            pages: input.pageCount,
            toNodes: [...process.nodes],
          },
        ],
        0,
      );
      run.weighted = {
        process,
        objects: recommendation ? recommendation.objects : [],
        recommendation,
        ranges: { order: ranges.order, rangeStart: ranges.rangeStart, rangeWeights },
      };
      return run;
    },
  });
}

export const weightedInterleaveRecommendedPolicy: Policy = weightedInterleavePolicy();
