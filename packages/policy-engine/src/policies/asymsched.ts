/**
 * AsymSched (Lepers, Quéma, Fedorova, USENIX ATC'15), Algorithm 1 as reconstructed from the two
 * public re-implementations (hzqmwne/asymsched_demo and a C++ "CHARM" scheduler): clusters of threads
 * that share data, weighted by log of their remote bandwidth, are placed on the node sets whose
 * pairwise bandwidth is highest; among placements within 90 % of the best, the one that moves
 * the least memory wins, unless migrating would cost more than 5 % of the run so far. Memory then
 * follows its threads (dynamic migration), with a full migration when > 90 % of a moved
 * cluster's accesses still go to its old nodes 2 s later. Deviations: docs/policies.md.
 */
import type {
  AccessWindow,
  Decision,
  MachineModel,
  NodeIndex,
  Placement,
  Policy,
  PolicyRun,
  ReplayInput,
  ReplayOptions,
  WindowMetrics,
} from '../model/contract.js';
import { windowLengthUs } from './common.js';
import { definePolicy } from '../engine/run.js';

export const ASYMSCHED_CONSTANTS = {
  /** Placements with weighted bandwidth ≥ this × the best are candidates. */
  CANDIDATE_FRACTION: 0.9,
  /** Seconds to migrate one GB (1e9 bytes). */
  MIGRATION_S_PER_GB: 0.3,
  /** Migration time may not exceed this share of the application's running time. */
  MAX_MIGRATION_SHARE: 0.05,
  /** Wait after a move before checking whether memory followed. */
  FULL_MIGRATION_CHECK_US: 2_000_000,
  /** Full migration when more than this share of a moved cluster's accesses still go to old nodes. */
  FULL_MIGRATION_OLD_SHARE: 0.9,
  /** Two threads are linked when they share at least this share of the smaller one's accesses. */
  SHARING_MIN_SHARE: 0.1,
  /** Bytes one access moves (a cache line). */
  ACCESS_BYTES: 64,
  /** Rate at which dynamic migration lets pages follow their threads (bytes/s). */
  DYNAMIC_MIGRATION_BYTES_PER_S: 256e6,
  /** Above this many placements the enumeration gives up and places clusters greedily. */
  MAX_PLACEMENTS_ENUMERATED: 200_000,
  /** Per page, only this many top accessor threads are paired when measuring sharing. */
  MAX_SHARERS_PER_PAGE: 16,
  /**
   * The search for the machine's symmetries stops after this many permutations (the presets have
   * at most 1152) or this many tries; a machine with more (e.g. every pair alike) is searched with
   * swaps of equal clusters only, which stays exact and costs no more than checking a large group.
   */
  MAX_SYMMETRIES: 2048,
  MAX_SYMMETRY_STEPS: 200_000,
  /** Node sets are bit masks in a 32-bit word: larger machines are placed greedily. */
  MAX_SEARCH_NODES: 32,
} as const;
const A = ASYMSCHED_CONSTANTS;

export interface ThreadCluster {
  threads: number[];
  /** Nodes the cluster's threads run on now (sorted). */
  nodes: NodeIndex[];
  /** Remote bandwidth, MB/s. */
  rbwMBps: number;
  /** ln(rbw in MB/s), 0 below 1 MB/s. */
  weight: number;
  /** Bytes of the cluster's memory on each node index (pages whose main accessor is in the cluster). */
  memoryBytesOnNode: Float64Array;
}

/** Pairwise node bandwidth, MB/s: the bottleneck link capacity on the route from `from` to `to`. */
export function pairBandwidthMBps(machine: MachineModel): Float64Array {
  const n = machine.nodeCount;
  const bw = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const route = machine.routes[i * n + j] ?? [];
      let min = Infinity;
      for (const l of route) min = Math.min(min, machine.links[l]!.capacityBytesPerS);
      bw[i * n + j] = Number.isFinite(min) ? min / 1e6 : 0;
    }
  }
  return bw;
}

/** bw_P(C): sum over ordered pairs of the cluster's nodes of the pair bandwidth (asymsched_demo). */
export function clusterBandwidthMBps(nodes: readonly NodeIndex[], bw: Float64Array, n: number): number {
  let sum = 0;
  for (const a of nodes) for (const b of nodes) if (a !== b) sum += bw[a * n + b]!;
  return sum;
}

/**
 * Clusters of threads that share pages. Two threads are linked when the accesses they make to
 * pages both touch (Σ_page min(a_i, a_j)) reach 10 % of the smaller thread's accesses in the
 * window; clusters are the connected components. Threads with no access in the window are left out.
 */
/** Thread counts up to which threadClusters keeps pair sharing in a dense matrix. */
const DENSE_SHARING_THREADS = 256;

export function threadClusters(input: ReplayInput, window: AccessWindow, placement: Placement): ThreadCluster[] {
  const T = input.threadCount;
  const n = input.machine.nodeCount;
  const { page: wPage, thread: wThread, loads: wLoads, stores: wStores } = window;
  const { threadNode, pageNode, replicated } = placement;
  const total = new Float64Array(T);
  // Shared accesses per thread pair (a < b): a dense T×T matrix for up to 256 threads, else a map.
  const dense = T <= DENSE_SHARING_THREADS ? new Float64Array(T * T) : null;
  const sparse = dense ? null : new Map<number, number>();
  const addShared = (x: number, y: number, a: number): void => {
    const key = x < y ? x * T + y : y * T + x;
    if (dense) dense[key]! += a;
    else sparse!.set(key, (sparse!.get(key) ?? 0) + a);
  };
  const entryCount = wPage.length;
  let i = 0;
  // The sharers of one page: thread and accesses, in entry (thread) order.
  const sT = new Int32Array(Math.max(1, T));
  const sA = new Float64Array(Math.max(1, T));
  const top: number[] = [];
  while (i < entryCount) {
    const page = wPage[i]!;
    if (i + 1 === entryCount || wPage[i + 1] !== page) {
      // One entry: no pair to share.
      total[wThread[i]!]! += wLoads[i]! + wStores[i]!;
      i++;
      continue;
    }
    let count = 0;
    for (; i < entryCount && wPage[i] === page; i++) {
      const a = wLoads[i]! + wStores[i]!;
      const t = wThread[i]!;
      total[t]! += a;
      if (a > 0) {
        sT[count] = t;
        sA[count++] = a;
      }
    }
    if (count < 2) continue;
    if (count <= A.MAX_SHARERS_PER_PAGE) {
      for (let x = 0; x < count; x++) for (let y = x + 1; y < count; y++) addShared(sT[x]!, sT[y]!, Math.min(sA[x]!, sA[y]!));
      continue;
    }
    // More sharers than the limit: the heaviest MAX_SHARERS_PER_PAGE (ties: lower thread first).
    top.length = 0;
    for (let x = 0; x < count; x++) top.push(x);
    top.sort((x, y) => sA[y]! - sA[x]! || sT[x]! - sT[y]!);
    const k = A.MAX_SHARERS_PER_PAGE;
    for (let x = 0; x < k; x++) for (let y = x + 1; y < k; y++) addShared(sT[top[x]!]!, sT[top[y]!]!, Math.min(sA[top[x]!]!, sA[top[y]!]!));
  }
  const parent = new Int32Array(T);
  for (let t = 0; t < T; t++) parent[t] = t;
  const find = (t: number): number => {
    while (parent[t] !== t) t = parent[t] = parent[parent[t]!]!;
    return t;
  };
  const join = (a: number, b: number, shared: number): void => {
    if (shared >= A.SHARING_MIN_SHARE * Math.min(total[a]!, total[b]!)) {
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    }
  };
  if (dense) {
    for (let a = 0, key = 0; a < T; a++) for (let b = 0; b < T; b++, key++) if (dense[key]! > 0) join(a, b, dense[key]!);
  } else {
    for (const [key, shared] of sparse!) join(Math.floor(key / T), key % T, shared);
  }
  // Clusters in order of their first thread with accesses.
  const clusterOf = new Int32Array(T).fill(-1);
  const clusterOfRoot = new Int32Array(T).fill(-1);
  const clusters: ThreadCluster[] = [];
  for (let t = 0; t < T; t++) {
    if (total[t]! <= 0) continue;
    const r = find(t);
    if (clusterOfRoot[r] === -1) {
      clusterOfRoot[r] = clusters.length;
      clusters.push({ threads: [], nodes: [], rbwMBps: 0, weight: 0, memoryBytesOnNode: new Float64Array(n) });
    }
    clusterOf[t] = clusterOfRoot[r]!;
    clusters[clusterOf[t]!]!.threads.push(t);
  }
  for (const c of clusters) c.nodes = [...new Set(c.threads.map((t) => threadNode[t]!))].sort((x, y) => x - y);
  const K = clusters.length;
  // Remote bandwidth per cluster and each page's main accessor cluster.
  const remote = new Float64Array(K);
  const memoryBytes = new Float64Array(K * n);
  const pageBytes = input.pageBytes;
  i = 0;
  const perCluster = new Float64Array(K);
  // Clusters that touched the current page (only those are read and reset: a page has few).
  const touched = new Int32Array(Math.max(1, K));
  while (i < entryCount) {
    const page = wPage[i]!;
    const home = pageNode[page]!;
    const isReplicated = replicated[page] !== 0;
    if (i + 1 === entryCount || wPage[i + 1] !== page) {
      // One entry (most pages in a window): its cluster, if any, is the main accessor when it accessed.
      const t = wThread[i]!;
      const c = clusterOf[t]!;
      if (c >= 0) {
        const node = threadNode[t]!;
        const served = isReplicated ? node : home;
        if (served !== node) remote[c]! += wLoads[i]! * (isReplicated ? 0 : 1) + wStores[i]!;
        if (wLoads[i]! + wStores[i]! > 0) memoryBytes[c * n + home]! += pageBytes;
      }
      i++;
      continue;
    }
    let touchedCount = 0;
    for (; i < entryCount && wPage[i] === page; i++) {
      const t = wThread[i]!;
      const c = clusterOf[t]!;
      if (c < 0) continue;
      const a = wLoads[i]! + wStores[i]!;
      if (perCluster[c] === 0 && a > 0) touched[touchedCount++] = c;
      perCluster[c]! += a;
      const node = threadNode[t]!;
      const served = isReplicated ? node : home;
      if (served !== node) remote[c]! += wLoads[i]! * (isReplicated ? 0 : 1) + wStores[i]!;
    }
    // The main accessor: most accesses, ties to the lowest cluster index.
    let best = -1;
    for (let x = 0; x < touchedCount; x++) {
      const c = touched[x]!;
      if (best < 0 || perCluster[c]! > perCluster[best]! || (perCluster[c] === perCluster[best] && c < best)) best = c;
    }
    for (let x = 0; x < touchedCount; x++) perCluster[touched[x]!] = 0;
    if (best >= 0) memoryBytes[best * n + home]! += pageBytes;
  }
  const seconds = windowLengthUs(window) / 1e6;
  clusters.forEach((c, k) => {
    c.memoryBytesOnNode.set(memoryBytes.subarray(k * n, (k + 1) * n));
    c.rbwMBps = (remote[k]! * A.ACCESS_BYTES) / seconds / 1e6;
    c.weight = c.rbwMBps > 1 ? Math.log(c.rbwMBps) : 0;
  });
  return clusters;
}

export interface PlacementSearch {
  /** Node set per cluster, same order as the clusters. */
  nodes: NodeIndex[][];
  /** Old node → new node per cluster. */
  mapping: Array<Map<NodeIndex, NodeIndex>>;
  wbw: number;
  maxWbw: number;
  memoryToMigrateBytes: number;
  /** Placements (each one, not each class of equivalent ones) with wbw ≥ 0.9 × the best. */
  candidates: number;
  /** Placements whose weighted bandwidth was computed. */
  placementsEvaluated: number;
  /** Every assignment of clusters to disjoint node sets of their sizes: Π C(free nodes, size). */
  placementsTotal: number;
  /** Node permutations that keep every pair bandwidth, the identity included, that the search used. */
  machineSymmetries: number;
  /** False when the machine has more symmetries than MAX_SYMMETRIES: only the identity is used. */
  symmetriesComplete: boolean;
  /** Partial placements not extended because an equivalent one is (symmetry). */
  equivalentCuts: number;
  /** Branches not extended because no completion can reach 90 % of the best found so far. */
  boundCuts: number;
  greedy: boolean;
}

/** Switches for tests and reports; the replay uses both. */
export interface SearchOptions {
  /** Skip placements equivalent under the machine's symmetries and interchangeable clusters. */
  symmetry?: boolean;
  /** Cut branches that cannot reach 90 % of the best weighted bandwidth found so far. */
  bound?: boolean;
}

/** Old nodes that stay keep their place; the others map, in order, to the new nodes not yet used. */
function slotMapping(oldNodes: readonly NodeIndex[], newNodes: readonly NodeIndex[]): Map<NodeIndex, NodeIndex> {
  const mapping = new Map<NodeIndex, NodeIndex>();
  const freeNew = newNodes.filter((x) => !oldNodes.includes(x));
  let f = 0;
  for (const o of oldNodes) mapping.set(o, newNodes.includes(o) ? o : freeNew[f++]!);
  return mapping;
}

function combinations(pool: readonly number[], k: number, emit: (chosen: number[]) => void): void {
  const chosen: number[] = [];
  const rec = (start: number): void => {
    if (chosen.length === k) {
      emit(chosen);
      return;
    }
    for (let x = start; x <= pool.length - (k - chosen.length); x++) {
      chosen.push(pool[x]!);
      rec(x + 1);
      chosen.pop();
    }
  };
  rec(0);
}

function binomial(n: number, k: number): number {
  let r = 1;
  for (let x = 1; x <= k; x++) r = (r * (n - k + x)) / x;
  return Math.round(r);
}

/**
 * Node sets are bit masks (bit x = node index x) held as plain numbers: up to 32 nodes, disjoint
 * sets are joined by adding them and `a & b` (ToInt32 on both) is non-zero iff they share a node.
 */
const bit = (x: number): number => 2 ** x;

/** Every node set of one size, with ids in lexicographic order of their sorted nodes. */
interface NodeSets {
  masks: number[];
  nodes: NodeIndex[][];
  /** bw_P(C) of the set, MB/s, summed in ascending order so every relabelling gives the same float. */
  bandwidth: Float64Array;
  idOfMask: Map<number, number>;
  /** Set ids by bandwidth, highest first (ties: lower id first). */
  byBandwidth: Int32Array;
  maxBandwidth: number;
  /** images[g · count + id]: id of set `id` under symmetry g (tables.symmetries). */
  images: Int32Array;
}

interface SearchTables {
  n: number;
  bw: Float64Array;
  /** The machine's symmetry group without the identity; empty when it is larger than the bound. */
  symmetries: Int16Array[];
  symmetriesComplete: boolean;
  setsBySize: Map<number, NodeSets>;
}

const tablesByMachine = new WeakMap<MachineModel, SearchTables>();

/**
 * The machine's symmetries as the placement score sees them: node permutations π with
 * bw(π a → π b) = bw(a → b) for every ordered pair (pair bandwidth = bottleneck link on the route,
 * so this covers link capacities and routes). Backtracking node by node; a node can only map to
 * one with the same sorted row and column of bandwidths. Stops after MAX_SYMMETRIES permutations or
 * MAX_SYMMETRY_STEPS tries; `complete` says whether it finished. The identity comes first.
 */
export function machineSymmetries(machine: MachineModel): { permutations: Int16Array[]; complete: boolean } {
  const n = machine.nodeCount;
  const bw = pairBandwidthMBps(machine);
  const signature = Array.from({ length: n }, (_, a) => {
    const row: number[] = [];
    const column: number[] = [];
    for (let b = 0; b < n; b++) if (b !== a) row.push(bw[a * n + b]!), column.push(bw[b * n + a]!);
    return `${row.sort((x, y) => x - y).join(',')}|${column.sort((x, y) => x - y).join(',')}`;
  });
  const permutations: Int16Array[] = [];
  const perm = new Int16Array(n);
  const used = new Uint8Array(n);
  let steps = 0;
  let complete = true;
  const rec = (i: number): void => {
    if (!complete) return;
    if (i === n) {
      permutations.push(perm.slice());
      if (permutations.length >= A.MAX_SYMMETRIES) complete = false;
      return;
    }
    for (let v = 0; v < n && complete; v++) {
      if (used[v] || signature[v] !== signature[i]) continue;
      if (++steps > A.MAX_SYMMETRY_STEPS) {
        complete = false;
        return;
      }
      let ok = true;
      for (let j = 0; j < i && ok; j++) ok = bw[v * n + perm[j]!] === bw[i * n + j] && bw[perm[j]! * n + v] === bw[j * n + i];
      if (!ok) continue;
      used[v] = 1;
      perm[i] = v;
      rec(i + 1);
      used[v] = 0;
    }
  };
  rec(0);
  return { permutations, complete };
}

function tablesOf(machine: MachineModel): SearchTables {
  let tables = tablesByMachine.get(machine);
  if (!tables) {
    const { permutations, complete } = machineSymmetries(machine);
    const isIdentity = (p: Int16Array) => p.every((v, i) => v === i);
    tables = {
      n: machine.nodeCount,
      bw: pairBandwidthMBps(machine),
      symmetries: complete ? permutations.filter((p) => !isIdentity(p)) : [],
      symmetriesComplete: complete,
      setsBySize: new Map(),
    };
    tablesByMachine.set(machine, tables);
  }
  return tables;
}

function nodeSetsOf(tables: SearchTables, size: number): NodeSets {
  let sets = tables.setsBySize.get(size);
  if (sets) return sets;
  const { n, bw } = tables;
  const masks: number[] = [];
  const nodes: NodeIndex[][] = [];
  const values: number[] = [];
  combinations(
    Array.from({ length: n }, (_, x) => x),
    size,
    (chosen) => {
      nodes.push([...chosen]);
      masks.push(chosen.reduce((m, x) => m + bit(x), 0));
      const pairs: number[] = [];
      for (const a of chosen) for (const b of chosen) if (a !== b) pairs.push(bw[a * n + b]!);
      values.push(pairs.sort((x, y) => x - y).reduce((s, v) => s + v, 0));
    },
  );
  const bandwidth = Float64Array.from(values);
  const byBandwidth = Int32Array.from(masks.keys()).sort((x, y) => bandwidth[y]! - bandwidth[x]! || x - y);
  const idOfMask = new Map(masks.map((m, id) => [m, id]));
  const images = new Int32Array(tables.symmetries.length * masks.length);
  tables.symmetries.forEach((perm, g) => {
    nodes.forEach((set, id) => {
      let mask = 0;
      for (const x of set) mask += bit(perm[x]!);
      images[g * masks.length + id] = idOfMask.get(mask)!;
    });
  });
  sets = { masks, nodes, bandwidth, idOfMask, byBandwidth, maxBandwidth: values.length > 0 ? Math.max(...values) : 0, images };
  tables.setsBySize.set(size, sets);
  return sets;
}

/**
 * Steps 4–14 of Algorithm 1: among the assignments of clusters to disjoint node sets of their
 * sizes, find those with wbw ≥ 0.9 × the best and pick the one that migrates the least memory
 * (ties: higher wbw, then the first in enumeration order). Exact, with work saved three ways
 * (docs/policies.md, AsymSched step 4):
 * - placements equivalent under a machine symmetry (machineSymmetries) or by swapping clusters of
 *   equal weight and size have equal wbw: only the least of each class (in enumeration order) is
 *   extended and evaluated, partial placements that cannot lead to it are cut;
 * - node sets are tried widest first and a branch whose best completion is below 0.9 × the best
 *   wbw found so far is cut (it cannot hold a candidate);
 * - the members of a candidate's class, which share its wbw, are listed only to find the one that
 *   migrates the least memory.
 * Above MAX_PLACEMENTS_ENUMERATED assignments (or 32 nodes) clusters are placed greedily instead.
 */
export function searchPlacements(machine: MachineModel, clusters: readonly ThreadCluster[], options: SearchOptions = {}): PlacementSearch {
  const n = machine.nodeCount;
  const sizes = clusters.map((c) => c.nodes.length);
  let total = 1;
  let left = n;
  for (const s of sizes) {
    total *= binomial(left, s);
    left -= s;
  }
  if (left < 0) throw new Error(`clusters need ${n - left} nodes, the machine has ${n}`);
  if (total > A.MAX_PLACEMENTS_ENUMERATED || n > A.MAX_SEARCH_NODES) return greedyPlacement(machine, clusters, total);

  const useSymmetry = options.symmetry !== false;
  const useBound = options.bound !== false;
  const tables = tablesOf(machine);
  const symmetries = useSymmetry ? tables.symmetries : [];
  const K = clusters.length;
  // Search order: heaviest clusters first (a good best early makes the bound cut more); clusters
  // of equal weight and size are adjacent and form a class whose node-set ids must increase.
  const order = clusters.map((_, k) => k).sort((x, y) => clusters[y]!.weight - clusters[x]!.weight || sizes[y]! - sizes[x]! || x - y);
  const positionOf = new Int32Array(K);
  order.forEach((k, p) => (positionOf[k] = p));
  const weightAt = order.map((k) => clusters[k]!.weight);
  const setsAt = order.map((k) => nodeSetsOf(tables, sizes[k]!));
  const classStart = new Int32Array(K);
  for (let p = 0; p < K; p++) {
    const sameClass = useSymmetry && p > 0 && weightAt[p] === weightAt[p - 1] && sizes[order[p]!] === sizes[order[p - 1]!];
    classStart[p] = sameClass ? classStart[p - 1]! : p;
  }
  // Best wbw any completion of positions p.. can add.
  const restMax = new Float64Array(K + 1);
  for (let p = K - 1; p >= 0; p--) restMax[p] = restMax[p + 1]! + weightAt[p]! * setsAt[p]!.maxBandwidth;

  const chosen = new Int32Array(K);
  const images = symmetries.map(() => new Int32Array(K));
  const scratch = new Int32Array(K);
  /** Whether a symmetry maps positions 0..p to a tuple that, class-sorted, is below chosen[0..p]. */
  const lesserImageExists = (p: number): boolean => {
    for (const image of images) {
      let verdict = 0;
      for (let start = 0; start <= p && verdict === 0; ) {
        let end = start + 1;
        while (end <= p && classStart[end] === start) end++;
        // The class's images in ascending order (insertion sort: classes are small).
        for (let q = start; q < end; q++) {
          const v = image[q]!;
          let r = q;
          while (r > start && scratch[r - 1]! > v) scratch[r] = scratch[--r]!;
          scratch[r] = v;
        }
        for (let q = start; q < end && verdict === 0; q++) verdict = scratch[q]! - chosen[q]!;
        start = end;
      }
      if (verdict < 0) return true;
    }
    return false;
  };

  interface Leaf {
    ids: Int32Array;
    wbw: number;
  }
  const kept: Leaf[] = [];
  let best = -Infinity;
  let evaluated = 0;
  let equivalentCuts = 0;
  let boundCuts = 0;
  const rec = (p: number, used: number, partial: number): void => {
    if (p === K) {
      evaluated++;
      if (partial > best) best = partial;
      if (partial >= A.CANDIDATE_FRACTION * best) kept.push({ ids: chosen.slice(), wbw: partial });
      return;
    }
    const sets = setsAt[p]!;
    const minId = classStart[p]! < p ? chosen[p - 1]! + 1 : 0;
    for (const id of sets.byBandwidth) {
      if (id < minId || (sets.masks[id]! & used) !== 0) continue;
      const value = partial + weightAt[p]! * sets.bandwidth[id]!;
      // Sets come widest first and weights are ≥ 0: once one cannot reach the bar, none after it can.
      if (useBound && value + restMax[p + 1]! < A.CANDIDATE_FRACTION * best * (1 - 1e-12)) {
        boundCuts++;
        break;
      }
      chosen[p] = id;
      for (let g = 0; g < images.length; g++) images[g]![p] = sets.images[g * sets.masks.length + id]!;
      if (lesserImageExists(p)) {
        equivalentCuts++;
        continue;
      }
      rec(p + 1, used + sets.masks[id]!, value);
    }
  };
  rec(0, 0, 0);
  const maxWbw = best;

  // The placements equivalent to `ids` (search order, class-sorted), each in cluster order.
  const classSort = (ids: Int32Array): Int32Array => {
    for (let start = 0; start < K; ) {
      let end = start + 1;
      while (end < K && classStart[end] === start) end++;
      if (end - start > 1) ids.subarray(start, end).sort();
      start = end;
    }
    return ids;
  };
  const keyOf = (ids: Int32Array) => ids.join(',');
  const classMembers = (ids: Int32Array): Int32Array[] => {
    // The symmetries are the whole group: the images of one placement are its whole class.
    const found = new Map<string, Int32Array>([[symmetries.length > 0 ? keyOf(ids) : '', ids]]);
    for (let g = 0; g < symmetries.length; g++) {
      const to = classSort(Int32Array.from(ids, (id, p) => setsAt[p]!.images[g * setsAt[p]!.masks.length + id]!));
      found.set(keyOf(to), to);
    }
    // Every arrangement of a class's node sets over the class's clusters.
    const out: Int32Array[] = [];
    for (const sorted of found.values()) {
      const current = Int32Array.from(sorted);
      const arrange = (p: number): void => {
        if (p === K) {
          out.push(Int32Array.from(clusters, (_, k) => current[positionOf[k]!]!));
          return;
        }
        // Positions p..end-1 of the class take its remaining node sets in every order.
        let end = p + 1;
        while (end < K && classStart[end] === classStart[p]) end++;
        for (let q = p; q < end; q++) {
          [current[q], current[p]] = [current[p]!, current[q]!];
          arrange(p + 1);
          [current[q], current[p]] = [current[p]!, current[q]!];
        }
      };
      arrange(0);
    }
    return out;
  };

  const oldNodes = clusters.map((c) => c.nodes);
  const memoryToMigrate = (ids: Int32Array): number => {
    let mm = 0;
    clusters.forEach((c, k) => {
      const mask = setsAt[positionOf[k]!]!.masks[ids[k]!]!;
      for (const o of oldNodes[k]!) if ((mask & bit(o)) === 0) mm += c.memoryBytesOnNode[o]!;
    });
    return mm;
  };
  const lexLess = (a: Int32Array, b: Int32Array): boolean => {
    for (let k = 0; k < K; k++) if (a[k] !== b[k]) return a[k]! < b[k]!;
    return false;
  };
  let winner: { ids: Int32Array; wbw: number; mm: number } | null = null;
  let candidates = 0;
  for (const leaf of kept) {
    if (leaf.wbw < A.CANDIDATE_FRACTION * maxWbw) continue;
    for (const ids of classMembers(leaf.ids)) {
      candidates++;
      const mm = memoryToMigrate(ids);
      if (!winner || mm < winner.mm || (mm === winner.mm && (leaf.wbw > winner.wbw || (leaf.wbw === winner.wbw && lexLess(ids, winner.ids))))) {
        winner = { ids, wbw: leaf.wbw, mm };
      }
    }
  }
  const chosenNodes = clusters.map((_, k) => [...setsAt[positionOf[k]!]!.nodes[winner!.ids[k]!]!]);
  return {
    nodes: chosenNodes,
    mapping: clusters.map((c, k) => slotMapping(c.nodes, chosenNodes[k]!)),
    wbw: winner!.wbw,
    maxWbw,
    memoryToMigrateBytes: winner!.mm,
    candidates,
    placementsEvaluated: evaluated,
    placementsTotal: total,
    machineSymmetries: symmetries.length + 1,
    symmetriesComplete: tables.symmetriesComplete,
    equivalentCuts,
    boundCuts,
    greedy: false,
  };
}

/** Greedy: heaviest cluster first, each on the free node set of its size with the most bandwidth. */
function greedyPlacement(machine: MachineModel, clusters: readonly ThreadCluster[], total: number): PlacementSearch {
  const n = machine.nodeCount;
  const bw = pairBandwidthMBps(machine);
  const free = new Set(Array.from({ length: n }, (_, x) => x));
  const nodes: NodeIndex[][] = clusters.map(() => []);
  const order = clusters.map((_, k) => k).sort((x, y) => clusters[y]!.weight - clusters[x]!.weight || x - y);
  let evaluated = 0;
  for (const k of order) {
    let best: number[] = [];
    let bestBw = -1;
    combinations([...free], clusters[k]!.nodes.length, (chosen) => {
      evaluated++;
      const b = clusterBandwidthMBps(chosen, bw, n);
      if (b > bestBw) {
        bestBw = b;
        best = [...chosen];
      }
    });
    nodes[k] = best;
    for (const x of best) free.delete(x);
  }
  const mapping = clusters.map((c, k) => slotMapping(c.nodes, nodes[k]!));
  const wbw = clusters.reduce((s, c, k) => s + c.weight * clusterBandwidthMBps(nodes[k]!, bw, n), 0);
  let mm = 0;
  clusters.forEach((c, k) => {
    for (const [o, to] of mapping[k]!) if (o !== to) mm += c.memoryBytesOnNode[o]!;
  });
  return {
    nodes,
    mapping,
    wbw,
    maxWbw: wbw,
    memoryToMigrateBytes: mm,
    candidates: 1,
    placementsEvaluated: evaluated,
    placementsTotal: total,
    machineSymmetries: 1,
    symmetriesComplete: false,
    equivalentCuts: 0,
    boundCuts: 0,
    greedy: true,
  };
}

export const asymschedPolicy: Policy = definePolicy({
  id: 'asymsched',
  description:
    'AsymSched (Lepers et al., ATC\'15): places clusters of data-sharing threads on the node sets with the most pairwise bandwidth, weighted by log remote bandwidth; 90 % rule, 5 % migration-cost abort (Algorithm 1 as re-implemented by hzqmwne/asymsched_demo).',
  run: replayAsymSched,
});

interface MovedCluster {
  threads: number[];
  oldNodes: Set<NodeIndex>;
  mapping: Map<NodeIndex, NodeIndex>;
  movedAtUs: number;
  checked: boolean;
}

const names = (machine: MachineModel, nodes: Iterable<NodeIndex>): string => [...nodes].map((x) => machine.nodeIds[x]).join(',');
const threadList = (threads: number[]): string => (threads.length > 6 ? `${threads.slice(0, 6).join(',')},… (${threads.length})` : threads.join(','));

function* replayAsymSched(input: ReplayInput, options: ReplayOptions): PolicyRun {
  const { machine, pageBytes } = input;
  const n = machine.nodeCount;
  const placement: Placement = {
    threadNode: input.initial.threadNode.slice(),
    pageNode: input.initial.pageNode.slice(),
    replicated: input.initial.replicated.slice(),
  };
  const windows: WindowMetrics[] = [];
  const threadNodeByWindow: Int16Array[] = [];
  const decisions: Decision[] = [];
  let migratedPages = 0;
  let migratedBytes = 0;
  let migrationSeconds = 0; // A.tm
  let evaluated = 0;
  let totalPlacements = 0;
  const moved: MovedCluster[] = [];
  const startUs = input.windows.length > 0 ? input.windows.info(0).startUs : 0;

  const movePage = (page: number, to: NodeIndex): void => {
    placement.pageNode[page] = to;
    migratedPages++;
    migratedBytes += pageBytes;
    migrationSeconds += (pageBytes / 1e9) * A.MIGRATION_S_PER_GB;
  };

  // The work of a window is a plain function: V8 optimises it like any other (a loop body
  // inside a generator would run unoptimised, generators get no on-stack replacement).
  const step = (window: AccessWindow): void => {
    windows.push(options.simulate(machine, window, placement, windowLengthUs(window), pageBytes));
    threadNodeByWindow.push(placement.threadNode.slice());
    const w = window.index;

    // Step 21–27: memory of moved clusters follows its threads, rate-limited; full migration check.
    for (const m of moved) {
      const inCluster = new Set(m.threads);
      let budget = Math.floor((A.DYNAMIC_MIGRATION_BYTES_PER_S * windowLengthUs(window)) / 1e6 / pageBytes);
      let oldAccesses = 0;
      let allAccesses = 0;
      const followed: number[] = [];
      for (let i = 0; i < window.page.length; i++) {
        const t = window.thread[i]!;
        if (!inCluster.has(t)) continue;
        const page = window.page[i]!;
        const a = window.loads[i]! + window.stores[i]!;
        allAccesses += a;
        const at = placement.pageNode[page]!;
        if (!m.oldNodes.has(at) || m.mapping.get(at) === at) continue;
        oldAccesses += a;
        if (budget > 0 && placement.pageNode[page] !== placement.threadNode[t]) {
          movePage(page, placement.threadNode[t]!);
          followed.push(page);
          budget--;
        }
      }
      if (followed.length > 0) {
        decisions.push({
          window: w,
          kind: 'migrate',
          explanation: `dynamic migration: ${followed.length} pages of cluster {threads ${threadList(m.threads)}} followed their threads (rate limit ${A.DYNAMIC_MIGRATION_BYTES_PER_S / 1e6} MB/s)`,
          pages: followed.length,
          pageIndices: Int32Array.from(followed),
          threads: m.threads,
        });
      }
      if (!m.checked && window.endUs - m.movedAtUs >= A.FULL_MIGRATION_CHECK_US && allAccesses > 0) {
        m.checked = true;
        const oldShare = oldAccesses / allAccesses;
        if (oldShare > A.FULL_MIGRATION_OLD_SHARE) {
          const pages: number[] = [];
          for (let p = 0; p < input.pageCount; p++) {
            const to = m.mapping.get(placement.pageNode[p]!);
            if (to !== undefined && to !== placement.pageNode[p]) {
              // Only pages this cluster uses: ones it accessed in this window.
              pages.push(p);
            }
          }
          const touched = new Set<number>();
          for (let i = 0; i < window.page.length; i++) if (inCluster.has(window.thread[i]!)) touched.add(window.page[i]!);
          const full = pages.filter((p) => touched.has(p));
          for (const p of full) movePage(p, m.mapping.get(placement.pageNode[p]!)!);
          decisions.push({
            window: w,
            kind: 'migrate',
            explanation: `full memory migration of cluster {threads ${threadList(m.threads)}}: ${(oldShare * 100).toFixed(1)}% of its accesses still go to its old nodes ${names(machine, m.oldNodes)} > ${A.FULL_MIGRATION_OLD_SHARE * 100}% after ${A.FULL_MIGRATION_CHECK_US / 1e6} s; ${full.length} pages moved`,
            pages: full.length,
            pageIndices: Int32Array.from(full),
            threads: m.threads,
          });
        }
      }
    }

    // Steps 1–3: clusters, remote bandwidth, weights.
    const clusters = threadClusters(input, window, placement);
    if (clusters.length === 0) return;
    const nodesNeeded = clusters.reduce((s, c) => s + c.nodes.length, 0);
    if (nodesNeeded > n) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `no placement: ${clusters.length} clusters occupy ${nodesNeeded} node slots (clusters share nodes), the machine has ${n} nodes`,
      });
      return;
    }
    // Steps 4–14.
    const search = searchPlacements(machine, clusters);
    evaluated += search.placementsEvaluated;
    totalPlacements += search.placementsTotal;
    const movers = clusters.map((c, k) => ({ c, k })).filter(({ k }) => [...search.mapping[k]!].some(([o, to]) => o !== to));
    const bw = pairBandwidthMBps(machine);
    // No thread runs on a memory-only node (CXL, HBM in flat mode): a placement that needs one is not made.
    const memoryOnly = movers.flatMap(({ k }) => search.nodes[k]!.filter((x) => machine.nodeCpus[x]!.length === 0));
    if (memoryOnly.length > 0) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `no placement: the best one puts threads on memory-only node${memoryOnly.length > 1 ? 's' : ''} ${names(machine, new Set(memoryOnly))} (no cpus)`,
      });
      return;
    }
    const searchWords = search.greedy
      ? `greedy placement (${search.placementsTotal} placements, too many to enumerate): ${search.placementsEvaluated} node sets compared`
      : `weighted bandwidth evaluated for ${search.placementsEvaluated} of ${search.placementsTotal} placements (equivalent placements under ${search.machineSymmetries} machine symmetr${search.machineSymmetries === 1 ? 'y' : 'ies'} and swaps of equal clusters evaluated once; placements that cannot reach ${A.CANDIDATE_FRACTION * 100}% of the best not evaluated); ${search.candidates} within ${A.CANDIDATE_FRACTION * 100}% of the best weighted bandwidth ${search.maxWbw.toFixed(0)}`;
    if (movers.length === 0) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `threads stay: the current placement is among the candidates and moves no memory; ${searchWords}`,
      });
      return;
    }
    // Steps 15–19: migration-cost abort.
    const mmGB = search.memoryToMigrateBytes / 1e9;
    const elapsedS = (window.endUs - startUs) / 1e6;
    if (migrationSeconds + mmGB * A.MIGRATION_S_PER_GB > A.MAX_MIGRATION_SHARE * elapsedS) {
      decisions.push({
        window: w,
        kind: 'abort',
        explanation: `migration aborted: time already spent migrating ${migrationSeconds.toFixed(4)} s + ${(mmGB * 1000).toFixed(2)} MB × ${A.MIGRATION_S_PER_GB} s/GB = ${(migrationSeconds + mmGB * A.MIGRATION_S_PER_GB).toFixed(4)} s > ${A.MAX_MIGRATION_SHARE * 100}% of ${elapsedS.toFixed(2)} s running time; ${searchWords}`,
      });
      return;
    }
    // Step 20: move threads.
    for (const { c, k } of movers) {
      const mapping = search.mapping[k]!;
      for (const t of c.threads) placement.threadNode[t] = mapping.get(placement.threadNode[t]!)!;
      moved.push({ threads: c.threads, oldNodes: new Set(c.nodes), mapping, movedAtUs: window.endUs, checked: false });
      decisions.push({
        window: w,
        kind: 'pin-threads',
        explanation: `cluster {threads ${threadList(c.threads)}} (remote bandwidth ${c.rbwMBps.toFixed(0)} MB/s, weight ln = ${c.weight.toFixed(2)}) moved from nodes ${names(machine, c.nodes)} (bw ${clusterBandwidthMBps(c.nodes, bw, n).toFixed(0)} MB/s) to nodes ${names(machine, search.nodes[k]!)} (bw ${clusterBandwidthMBps(search.nodes[k]!, bw, n).toFixed(0)} MB/s); placement weighted bandwidth ${search.wbw.toFixed(0)}, memory to migrate ${(search.memoryToMigrateBytes / 1e6).toFixed(2)} MB (the least among candidates); ${searchWords}`,
        threads: c.threads,
        toNodes: search.nodes[k]!,
      });
    }
  };
  for (let wi = 0; wi < input.windows.length; wi++) step(yield wi);

  return {
    policy: 'asymsched',
    windows,
    threadNodeByWindow,
    finalPlacement: placement,
    migratedPages,
    migratedBytes,
    decisions,
    placementsEvaluated: evaluated,
    placementsTotal: totalPlacements,
  };
}
