/**
 * AsymSched (Lepers, Quéma, Fedorova, USENIX ATC'15), Algorithm 1 as reconstructed from the two
 * public re-implementations (shared/reference/policies-and-machines.md §2): clusters of threads
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
} from '../engine/contract.js';
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
  const total = new Float64Array(T);
  // Shared accesses per thread pair (a < b): a dense T×T matrix for up to 256 threads, else a map.
  const dense = T <= DENSE_SHARING_THREADS ? new Float64Array(T * T) : null;
  const sparse = dense ? null : new Map<number, number>();
  const addShared = (x: number, y: number, a: number): void => {
    const key = Math.min(x, y) * T + Math.max(x, y);
    if (dense) dense[key]! += a;
    else sparse!.set(key, (sparse!.get(key) ?? 0) + a);
  };
  const entryCount = window.page.length;
  let i = 0;
  // The sharers of one page: thread and accesses, in entry (thread) order.
  const sT = new Int32Array(Math.max(1, T));
  const sA = new Float64Array(Math.max(1, T));
  const top: number[] = [];
  while (i < entryCount) {
    const page = window.page[i]!;
    let count = 0;
    for (; i < entryCount && window.page[i] === page; i++) {
      const a = window.loads[i]! + window.stores[i]!;
      total[window.thread[i]!]! += a;
      if (a > 0) {
        sT[count] = window.thread[i]!;
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
  const parent = Int32Array.from({ length: T }, (_, t) => t);
  const find = (t: number): number => {
    while (parent[t] !== t) t = parent[t] = parent[parent[t]!]!;
    return t;
  };
  const join = (key: number, shared: number): void => {
    const a = Math.floor(key / T);
    const b = key % T;
    if (shared >= A.SHARING_MIN_SHARE * Math.min(total[a]!, total[b]!)) {
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    }
  };
  if (dense) {
    for (let key = 0; key < dense.length; key++) if (dense[key]! > 0) join(key, dense[key]!);
  } else {
    for (const [key, shared] of sparse!) join(key, shared);
  }
  const byRoot = new Map<number, number[]>();
  for (let t = 0; t < T; t++) {
    if (total[t]! <= 0) continue;
    const r = find(t);
    const list = byRoot.get(r) ?? [];
    list.push(t);
    byRoot.set(r, list);
  }
  const clusterOf = new Int32Array(T).fill(-1);
  const clusters: ThreadCluster[] = [...byRoot.values()].map((threads, c) => {
    for (const t of threads) clusterOf[t] = c;
    const nodes = [...new Set(threads.map((t) => placement.threadNode[t]!))].sort((x, y) => x - y);
    return { threads, nodes, rbwMBps: 0, weight: 0, memoryBytesOnNode: new Float64Array(n) };
  });
  // Remote bandwidth per cluster and each page's main accessor cluster.
  const remote = new Float64Array(clusters.length);
  i = 0;
  const perCluster = new Float64Array(clusters.length);
  // Clusters that touched the current page (only those are read and reset: a page has few).
  const touched = new Int32Array(Math.max(1, clusters.length));
  while (i < entryCount) {
    const page = window.page[i]!;
    let touchedCount = 0;
    for (; i < entryCount && window.page[i] === page; i++) {
      const t = window.thread[i]!;
      const c = clusterOf[t]!;
      if (c < 0) continue;
      const a = window.loads[i]! + window.stores[i]!;
      if (perCluster[c] === 0 && a > 0) touched[touchedCount++] = c;
      perCluster[c]! += a;
      const served = placement.replicated[page] ? placement.threadNode[t]! : placement.pageNode[page]!;
      if (served !== placement.threadNode[t]) remote[c]! += window.loads[i]! * (placement.replicated[page] ? 0 : 1) + window.stores[i]!;
    }
    // The main accessor: most accesses, ties to the lowest cluster index.
    let best = -1;
    for (let x = 0; x < touchedCount; x++) {
      const c = touched[x]!;
      if (best < 0 || perCluster[c]! > perCluster[best]! || (perCluster[c] === perCluster[best] && c < best)) best = c;
    }
    for (let x = 0; x < touchedCount; x++) perCluster[touched[x]!] = 0;
    if (best >= 0) clusters[best]!.memoryBytesOnNode[placement.pageNode[page]!]! += input.pageBytes;
  }
  const seconds = windowLengthUs(window) / 1e6;
  clusters.forEach((c, k) => {
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
  candidates: number;
  placementsEvaluated: number;
  placementsTotal: number;
  greedy: boolean;
}

/** Old nodes that stay keep their place; the others map, in order, to the new nodes not yet used. */
function slotMapping(oldNodes: readonly NodeIndex[], newNodes: readonly NodeIndex[]): Map<NodeIndex, NodeIndex> {
  const mapping = new Map<NodeIndex, NodeIndex>();
  const freeNew = newNodes.filter((x) => !oldNodes.includes(x));
  let f = 0;
  for (const o of oldNodes) mapping.set(o, newNodes.includes(o) ? o : freeNew[f++]!);
  return mapping;
}

function memoryToMigrate(cluster: ThreadCluster, mapping: Map<NodeIndex, NodeIndex>): number {
  let mm = 0;
  for (const [o, to] of mapping) if (o !== to) mm += cluster.memoryBytesOnNode[o]!;
  return mm;
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
 * Steps 4–14 of Algorithm 1: enumerate cluster → node-set placements, skipping placements
 * equivalent to one already evaluated (same canonical key: per cluster the sorted multiset of
 * directed pair bandwidths among its nodes, sorted across clusters of equal weight and size);
 * keep those with wbw ≥ 0.9·max; pick the one that migrates the least memory.
 */
export function searchPlacements(machine: MachineModel, clusters: readonly ThreadCluster[]): PlacementSearch {
  const n = machine.nodeCount;
  const bw = pairBandwidthMBps(machine);
  const sizes = clusters.map((c) => c.nodes.length);
  let total = 1;
  let left = n;
  for (const s of sizes) {
    total *= binomial(left, s);
    left -= s;
  }
  if (left < 0) throw new Error(`clusters need ${n - left} nodes, the machine has ${n}`);
  const groupOf = clusters.map((c, k) => {
    const first = clusters.findIndex((d) => d.nodes.length === c.nodes.length && Math.abs(d.weight - c.weight) < 1e-9);
    return first < 0 ? k : first;
  });
  const clusterKey = (nodes: readonly number[]): string => {
    const values: number[] = [];
    for (const a of nodes) for (const b of nodes) if (a !== b) values.push(bw[a * n + b]!);
    return values.sort((x, y) => x - y).join(',');
  };

  if (total > A.MAX_PLACEMENTS_ENUMERATED) {
    // Greedy: heaviest cluster first, each on the free node set of its size with the most bandwidth.
    const free = new Set(Array.from({ length: n }, (_, x) => x));
    const nodes: NodeIndex[][] = clusters.map(() => []);
    const order = clusters.map((_, k) => k).sort((x, y) => clusters[y]!.weight - clusters[x]!.weight || x - y);
    let evaluated = 0;
    for (const k of order) {
      let best: number[] = [];
      let bestBw = -1;
      combinations([...free], sizes[k]!, (chosen) => {
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
    return {
      nodes,
      mapping,
      wbw,
      maxWbw: wbw,
      memoryToMigrateBytes: clusters.reduce((s, c, k) => s + memoryToMigrate(c, mapping[k]!), 0),
      candidates: 1,
      placementsEvaluated: evaluated,
      placementsTotal: total,
      greedy: true,
    };
  }

  interface Entry {
    wbw: number;
    mm: number;
    nodes: NodeIndex[][];
  }
  const byKey = new Map<string, Entry>();
  const current: NodeIndex[][] = [];
  const used = new Uint8Array(n);
  const keys: string[] = [];
  const rec = (k: number): void => {
    if (k === clusters.length) {
      const parts = new Map<number, string[]>();
      keys.forEach((key, c) => {
        const g = groupOf[c]!;
        const list = parts.get(g) ?? [];
        list.push(key);
        parts.set(g, list);
      });
      const placementKey = [...parts.entries()].map(([g, list]) => `${g}:${list.sort().join('|')}`).join(';');
      let mm = 0;
      current.forEach((nodes, c) => (mm += memoryToMigrate(clusters[c]!, slotMapping(clusters[c]!.nodes, nodes))));
      const seen = byKey.get(placementKey);
      if (seen) {
        if (mm < seen.mm) {
          seen.mm = mm;
          seen.nodes = current.map((x) => [...x]);
        }
        return;
      }
      let wbw = 0;
      current.forEach((nodes, c) => (wbw += clusters[c]!.weight * clusterBandwidthMBps(nodes, bw, n)));
      byKey.set(placementKey, { wbw, mm, nodes: current.map((x) => [...x]) });
      return;
    }
    const pool: number[] = [];
    for (let x = 0; x < n; x++) if (!used[x]) pool.push(x);
    combinations(pool, sizes[k]!, (chosen) => {
      for (const x of chosen) used[x] = 1;
      current.push([...chosen]);
      keys.push(clusterKey(chosen));
      rec(k + 1);
      keys.pop();
      current.pop();
      for (const x of chosen) used[x] = 0;
    });
  };
  rec(0);

  let maxWbw = 0;
  for (const e of byKey.values()) maxWbw = Math.max(maxWbw, e.wbw);
  let best: Entry | null = null;
  let candidates = 0;
  for (const e of byKey.values()) {
    if (e.wbw < A.CANDIDATE_FRACTION * maxWbw) continue;
    candidates++;
    if (!best || e.mm < best.mm || (e.mm === best.mm && e.wbw > best.wbw)) best = e;
  }
  const chosen = best!;
  return {
    nodes: chosen.nodes,
    mapping: clusters.map((c, k) => slotMapping(c.nodes, chosen.nodes[k]!)),
    wbw: chosen.wbw,
    maxWbw,
    memoryToMigrateBytes: chosen.mm,
    candidates,
    placementsEvaluated: byKey.size,
    placementsTotal: total,
    greedy: false,
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
    const searchWords = `${search.greedy ? 'greedy placement (too many placements to enumerate): ' : ''}evaluated ${search.placementsEvaluated} of ${search.placementsTotal} placements (equivalent placements skipped); ${search.candidates} within ${A.CANDIDATE_FRACTION * 100}% of the best weighted bandwidth ${search.maxWbw.toFixed(0)}`;
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
