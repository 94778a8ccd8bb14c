/**
 * AsymSched (Lepers, Quéma, Fedorova, USENIX ATC'15), Algorithm 1 as reconstructed from the two
 * public re-implementations (hzqmwne/asymsched_demo and a C++ "CHARM" scheduler): clusters of threads
 * that share data (measured on every window so far, older windows decayed: SharingHistory), weighted
 * by log of their remote bandwidth, are placed on the node sets whose
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
  /**
   * Clusters are settled (threads may move) when linking at this lower share gives the same ones,
   * or when the previous window gave the same ones: a clustering still forming moves nothing.
   */
  SHARING_SETTLED_SHARE: 0.05,
  /**
   * Two threads left apart are apart on evidence only when, had they shared the linking share of
   * their accesses, their samples would be expected to meet on a page at least this many times: a count
   * whose expectation is μ is 0 with probability e^−μ, under 5 % from μ = 3 (the "rule of three",
   * Hanley and Lippman-Hand, JAMA 1983). Below it the clusters are still forming: a sparser
   * sampling of the same run must not split threads a denser one sees sharing.
   */
  SHARING_EVIDENCE_SAMPLES: 3,
  /**
   * The replay measures sharing on every window so far, each window's accesses weighted
   * 2^(−age / this) (age in windows: 0 for the current one), so a phase change can re-cluster.
   */
  SHARING_HALF_LIFE_WINDOWS: 5,
  /** Sharing is measured on blocks of this much address space (a 2 MiB huge page)… */
  SHARING_BLOCK_BYTES: 2 * 1024 * 1024,
  /** …of this many page rows when the input has no page addresses. */
  SHARING_BLOCK_PAGES: 512,
  /** Per block, pairs of threads whose terms are summed have one of its this many lowest-numbered threads. */
  MAX_BLOCK_PAIRING_THREADS: 32,
  /** Per page, the sharing measured over windows follows only its first this many accessor threads. */
  SHARING_PAGE_SHARERS: 8,
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

/** Thread counts up to which pair sharing is kept in a dense matrix. */
const DENSE_SHARING_THREADS = 256;

/**
 * Clusters of threads that share pages. Two threads are linked when the accesses they make to
 * pages both touch (Σ_page min(a_i, a_j)) reach 10 % of the smaller thread's accesses in the
 * window; clusters are the connected components. Threads with no access in the window are left out.
 *
 * With `sharing` (what the replay uses), the links are those of the sharing measured on every
 * window so far (SharingHistory, docs/policies.md AsymSched step 1); the window still gives the
 * threads that take part, the nodes they run on, the remote bandwidth and the memory.
 */
export function threadClusters(input: ReplayInput, window: AccessWindow, placement: Placement, sharing?: SharingHistory): ThreadCluster[] {
  if (sharing) return clustersOf(input, window, placement, windowTotals(input.threadCount, window), sharing.linkRoots());
  const { total, root } = windowLinks(input, window);
  return clustersOf(input, window, placement, total, root);
}

function sameRoots(a: Int32Array, b: Int32Array): boolean {
  for (let t = 0; t < a.length; t++) if (a[t] !== b[t]) return false;
  return true;
}

/** Each thread's accesses in the window. */
function windowTotals(T: number, window: AccessWindow): Float64Array {
  const total = new Float64Array(T);
  for (let i = 0; i < window.page.length; i++) total[window.thread[i]!]! += window.loads[i]! + window.stores[i]!;
  return total;
}

/** Root (least thread) of every thread's component under the links of one window's sharing. */
function windowLinks(input: ReplayInput, window: AccessWindow): { total: Float64Array; root: Int32Array } {
  const T = input.threadCount;
  const { page: wPage, thread: wThread, loads: wLoads, stores: wStores } = window;
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
  const root = new Int32Array(T);
  for (let t = 0; t < T; t++) root[t] = find(t);
  return { total, root };
}

/** The clusters of the threads with accesses in the window, under the given components. */
function clustersOf(input: ReplayInput, window: AccessWindow, placement: Placement, total: Float64Array, root: Int32Array): ThreadCluster[] {
  const T = input.threadCount;
  const n = input.machine.nodeCount;
  const { page: wPage, thread: wThread, loads: wLoads, stores: wStores } = window;
  const { threadNode, pageNode, replicated } = placement;
  const entryCount = wPage.length;
  // Clusters in order of their first thread with accesses.
  const clusterOf = new Int32Array(T).fill(-1);
  const clusterOfRoot = new Int32Array(T).fill(-1);
  const clusters: ThreadCluster[] = [];
  for (let t = 0; t < T; t++) {
    if (total[t]! <= 0) continue;
    const r = root[t]!;
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
  let i = 0;
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

/** Entries of a per-block table up to which a typed array is used (else a map). */
const DENSE_BLOCK_ENTRIES = 1 << 22;

/**
 * The sharing between threads measured on every window so far, which the replay clusters on: one
 * 100 ms window holds too few samples per page for two threads to be seen on the same page, even
 * when they share a whole buffer. Window w's accesses count 2^(−(now − w) / SHARING_HALF_LIFE_WINDOWS).
 *
 * Even over many windows the page-level rule Σ_page min(a_i, a_j) grows with the sampling density
 * (a page seen once by each of two threads is rare when each has a few samples per thousand
 * pages), so the shared accesses are counted on blocks of 2 MiB of address space and scaled by how
 * much the two threads' accesses coincide on the same pages of those blocks:
 *
 *   shared(i, j) = M · min(1, K / D),  M = Σ_block min(C_i, C_j),  K = Σ_page A_i · A_j,
 *   D = Σ_block C'_i · C'_j / N,
 *
 * with C_t = thread t's accesses to a block, A_t = to a page, N = the block's pages accessed so
 * far. K (a product of two threads' independent samples) is what D would be if both threads spread
 * their accesses over the same pages of each block: K / D is about 1 for threads that share a
 * buffer, whatever the density, and about 0 for threads that use different pages of the same blocks
 * (neighbouring slices of one array). Two threads are linked when shared(i, j) ≥ SHARING_MIN_SHARE ×
 * the smaller one's accesses; clusters are the connected components.
 *
 * Bounds on the work: per page, only its first SHARING_PAGE_SHARERS accessor threads enter K, and
 * C'_t (which enters D) counts only t's accesses to pages where it is one of them, so that K and D
 * stay comparable on pages every thread touches; per block, only pairs with one of its
 * MAX_BLOCK_PAIRING_THREADS lowest-numbered threads enter M and D (every pair up to that many
 * threads in the block).
 *
 * Stored values are scaled by 2^(windows / half-life) instead of decaying the old ones (products by
 * its square), divided by 2^64 now and then: the work per window follows the window's entries and
 * the blocks they touch, the memory the pages and blocks.
 */
export class SharingHistory {
  readonly threadCount: number;
  /** Windows and access samples (rows) taken in. */
  windows = 0;
  samples = 0;
  firstWindow = -1;
  lastWindow = -1;
  /** Accesses and samples (rows) taken in, decayed and scaled like the per-thread totals: their ratio is the mean weight of a sample. */
  private accessSum = 0;
  private sampleSum = 0;
  private readonly blockOf: Int32Array;
  /** N: pages of each block accessed so far. */
  private readonly blockPages: Int32Array;
  /** C: accesses per block and thread (b·T + t). */
  private readonly blockDense: Float64Array | null;
  private readonly blockSparse: Map<number, number> | null;
  /** The part of C on pages where the thread is one of the tracked accessors (enters D). */
  private readonly trackedDense: Float64Array | null;
  private readonly trackedSparse: Map<number, number> | null;
  /** Threads with accesses to each block, ascending. */
  private readonly blockThreads: number[][];
  /** Per pair (lo·T + hi): K, M, D. */
  private readonly pairs: { k: PairTable; m: PairTable; d: PairTable };
  private readonly total: Float64Array;
  /**
   * Each page's first accessors (thread, accesses) in a segment of the pools: 2 slots, moved to
   * SHARING_PAGE_SHARERS slots when a third thread comes (a page's slots are contiguous).
   */
  private readonly pageSegment: Int32Array;
  private readonly pageSharers: Uint8Array;
  private poolThread = new Int32Array(4096);
  private poolCount = new Float64Array(4096);
  private poolUsed = 0;
  /** Windows since the last rescale: stored values are scaled by 2^(this / half-life). */
  private sinceRescale = 0;
  private readonly touchedStamp: Int32Array;
  private readonly touched: number[] = [];

  constructor(input: Pick<ReplayInput, 'threadCount' | 'pageCount' | 'pageAddress'>) {
    const T = (this.threadCount = input.threadCount);
    const P = input.pageCount;
    this.blockOf = new Int32Array(P);
    const address = input.pageAddress;
    let blockCount: number;
    if (address && address.length === P) {
      // Blocks numbered in page-row order of their first page.
      const shift = BigInt(Math.log2(A.SHARING_BLOCK_BYTES));
      const ids = new Map<bigint, number>();
      for (let p = 0; p < P; p++) {
        const key = address[p]! >> shift;
        let id = ids.get(key);
        if (id === undefined) ids.set(key, (id = ids.size));
        this.blockOf[p] = id;
      }
      blockCount = ids.size;
    } else {
      for (let p = 0; p < P; p++) this.blockOf[p] = Math.floor(p / A.SHARING_BLOCK_PAGES);
      blockCount = Math.ceil(P / A.SHARING_BLOCK_PAGES);
    }
    this.blockPages = new Int32Array(blockCount);
    this.touchedStamp = new Int32Array(blockCount).fill(-1);
    this.blockThreads = Array.from({ length: blockCount }, () => []);
    const dense = blockCount * T <= DENSE_BLOCK_ENTRIES;
    this.blockDense = dense ? new Float64Array(blockCount * T) : null;
    this.blockSparse = dense ? null : new Map();
    this.trackedDense = dense ? new Float64Array(blockCount * T) : null;
    this.trackedSparse = dense ? null : new Map();
    this.pairs = { k: new PairTable(T), m: new PairTable(T), d: new PairTable(T) };
    this.total = new Float64Array(T);
    this.pageSegment = new Int32Array(P).fill(-1);
    this.pageSharers = new Uint8Array(P);
  }

  /** Takes in one window (windows in time order). */
  add(window: AccessWindow): void {
    if (this.sinceRescale >= 64 * A.SHARING_HALF_LIFE_WINDOWS) this.rescale();
    const scale = 2 ** (this.sinceRescale / A.SHARING_HALF_LIFE_WINDOWS);
    const { page, thread, loads, stores } = window;
    const T = this.threadCount;
    const stamp = this.windows;
    this.touched.length = 0;
    for (let i = 0; i < page.length; i++) {
      if (!(loads[i]! + stores[i]! > 0)) continue;
      const b = this.blockOf[page[i]!]!;
      if (this.touchedStamp[b] === stamp) continue;
      this.touchedStamp[b] = stamp;
      this.touched.push(b);
    }
    // The touched blocks' terms come off, their counts change, their terms go back on.
    for (const b of this.touched) this.blockTerms(b, -1);
    const k = this.pairs.k;
    const kDense = k.denseValues;
    const blockDense = this.blockDense;
    for (let i = 0; i < page.length; i++) {
      const a = loads[i]! + stores[i]!;
      if (!(a > 0)) continue;
      const p = page[i]!;
      const t = thread[i]!;
      const b = this.blockOf[p]!;
      const d = a * scale;
      this.total[t]! += d;
      this.accessSum += d;
      const key = b * T + t;
      const before = blockDense ? blockDense[key]! : (this.blockSparse!.get(key) ?? 0);
      if (before === 0) {
        const list = this.blockThreads[b]!;
        let at = list.length;
        while (at > 0 && list[at - 1]! > t) at--;
        list.splice(at, 0, t);
      }
      if (blockDense) blockDense[key] = before + d;
      else this.blockSparse!.set(key, before + d);
      let segment = this.pageSegment[p]!;
      const sharers = this.pageSharers[p]!;
      if (segment === -1) {
        this.blockPages[b]!++;
        segment = this.pageSegment[p] = this.allocate(2);
      }
      let own = -1;
      const { poolCount, poolThread } = this;
      for (let e = segment; e < segment + sharers; e++) {
        const s = poolThread[e]!;
        if (s === t) own = e;
        else if (kDense) kDense[s < t ? s * T + t : t * T + s]! += d * poolCount[e]!;
        else k.add(s, t, d * poolCount[e]!);
      }
      let tracked = own >= 0;
      if (own >= 0) poolCount[own]! += d;
      else if (sharers < A.SHARING_PAGE_SHARERS) {
        tracked = true;
        if (sharers === 2) {
          // A third thread: the page moves to a segment of its own with room for every tracked one.
          const wide = this.allocate(A.SHARING_PAGE_SHARERS);
          this.poolThread.copyWithin(wide, segment, segment + 2);
          this.poolCount.copyWithin(wide, segment, segment + 2);
          segment = this.pageSegment[p] = wide;
        }
        this.poolThread[segment + sharers] = t;
        this.poolCount[segment + sharers] = d;
        this.pageSharers[p] = sharers + 1;
      }
      if (tracked) {
        if (this.trackedDense) this.trackedDense[key]! += d;
        else this.trackedSparse!.set(key, (this.trackedSparse!.get(key) ?? 0) + d);
      }
    }
    for (const b of this.touched) this.blockTerms(b, 1);
    this.sinceRescale++;
    if (this.firstWindow < 0) this.firstWindow = window.index;
    this.lastWindow = window.index;
    this.windows++;
    this.samples += window.sampleCount;
    this.sampleSum += window.sampleCount * scale;
  }

  /**
   * Pairs of threads in different components of `roots` whose separation the samples cannot yet
   * support: had the pair shared exactly the linking share (SHARING_MIN_SHARE of the smaller
   * one's accesses), K would be expected at SHARING_MIN_SHARE · smaller · D / M (shared = M·K/D);
   * in samples (over the square of a sample's mean weight, at the latest window's scale) that is
   * under SHARING_EVIDENCE_SAMPLES. Pairs that never met on a block (M = 0) are apart on evidence.
   * 0 when every pair left apart is apart on evidence.
   */
  unresolvedPairs(roots: Int32Array, minShare: number = A.SHARING_MIN_SHARE): number {
    if (!(this.sampleSum > 0) || !(this.accessSum > 0)) return 0;
    const meanWeight = this.accessSum / this.sampleSum;
    const latest = 2 ** ((this.sinceRescale - 1) / A.SHARING_HALF_LIFE_WINDOWS);
    const unit = (meanWeight * latest) ** 2;
    let unresolved = 0;
    this.pairs.d.forEachPositive((a, b) => {
      if (roots[a] === roots[b]) return;
      const m = this.pairs.m.get(a, b);
      if (!(m > 0)) return;
      const smaller = Math.min(this.total[a]!, this.total[b]!);
      const expected = (minShare * smaller * this.pairs.d.get(a, b)) / m / unit;
      if (expected < A.SHARING_EVIDENCE_SAMPLES) unresolved++;
    });
    return unresolved;
  }

  /** shared(a, b) (0 when the pair never accessed a common page). */
  shared(a: number, b: number): number {
    if (a === b) return this.total[a]!;
    const lo = Math.min(a, b);
    const hi = Math.max(a, b);
    const k = this.pairs.k.get(lo, hi);
    if (!(k > 0)) return 0;
    const d = this.pairs.d.get(lo, hi);
    return Math.max(0, this.pairs.m.get(lo, hi)) * (d > 0 ? Math.min(1, k / d) : 1);
  }

  /** shared(a, b) / the smaller thread's accesses (0 when either has none). */
  sharedShare(a: number, b: number): number {
    const smaller = Math.min(this.total[a]!, this.total[b]!);
    return smaller > 0 ? this.shared(a, b) / smaller : 0;
  }

  /** Root (least thread) of every thread's component, threads linked when they share ≥ minShare. */
  linkRoots(minShare: number = A.SHARING_MIN_SHARE): Int32Array {
    const T = this.threadCount;
    const parent = new Int32Array(T);
    for (let t = 0; t < T; t++) parent[t] = t;
    const find = (t: number): number => {
      while (parent[t] !== t) t = parent[t] = parent[parent[t]!]!;
      return t;
    };
    this.pairs.k.forEachPositive((a, b) => {
      const smaller = Math.min(this.total[a]!, this.total[b]!);
      if (smaller > 0 && this.shared(a, b) >= minShare * smaller) {
        const ra = find(a);
        const rb = find(b);
        if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
      }
    });
    const root = new Int32Array(T);
    for (let t = 0; t < T; t++) root[t] = find(t);
    return root;
  }

  /** Adds (sign 1) or removes (−1) block b's terms of M and D. */
  private blockTerms(b: number, sign: number): void {
    const list = this.blockThreads[b]!;
    const L = list.length;
    if (L < 2) return;
    const T = this.threadCount;
    const perN = sign / this.blockPages[b]!;
    const c = new Float64Array(L);
    const ct = new Float64Array(L);
    for (let x = 0; x < L; x++) {
      const key = b * T + list[x]!;
      c[x] = this.blockDense ? this.blockDense[key]! : (this.blockSparse!.get(key) ?? 0);
      ct[x] = this.trackedDense ? this.trackedDense[key]! : (this.trackedSparse!.get(key) ?? 0);
    }
    const { m, d } = this.pairs;
    const mDense = m.denseValues;
    const dDense = d.denseValues;
    const hubs = Math.min(L, A.MAX_BLOCK_PAIRING_THREADS);
    for (let x = 0; x < hubs; x++) {
      const i = list[x]!;
      const ci = c[x]!;
      const ti = ct[x]!;
      const row = i * T;
      for (let y = x + 1; y < L; y++) {
        const cj = c[y]!;
        const mv = sign * (ci < cj ? ci : cj);
        const dv = ti * ct[y]! * perN;
        if (mDense && dDense) {
          mDense[row + list[y]!]! += mv;
          dDense[row + list[y]!]! += dv;
        } else {
          m.add(i, list[y]!, mv);
          d.add(i, list[y]!, dv);
        }
      }
    }
  }

  /** Start of `size` free slots in the pools (grown by doubling). */
  private allocate(size: number): number {
    const start = this.poolUsed;
    this.poolUsed += size;
    if (this.poolUsed > this.poolThread.length) {
      let length = this.poolThread.length * 2;
      while (length < this.poolUsed) length *= 2;
      const thread = new Int32Array(length);
      const count = new Float64Array(length);
      thread.set(this.poolThread);
      count.set(this.poolCount);
      this.poolThread = thread;
      this.poolCount = count;
    }
    return start;
  }

  /** Divides every stored value by 2^64 (products by 2^128): exact, powers of two. */
  private rescale(): void {
    const f = 2 ** -64;
    for (let t = 0; t < this.threadCount; t++) this.total[t]! *= f;
    this.accessSum *= f;
    this.sampleSum *= f;
    for (const dense of [this.blockDense, this.trackedDense]) if (dense) for (let i = 0; i < dense.length; i++) dense[i]! *= f;
    for (const sparse of [this.blockSparse, this.trackedSparse]) if (sparse) for (const [key, v] of sparse) sparse.set(key, v * f);
    for (let e = 0; e < this.poolUsed; e++) this.poolCount[e]! *= f; // slots left behind too: harmless
    this.pairs.k.scale(f * f);
    this.pairs.m.scale(f);
    this.pairs.d.scale(f * f);
    this.sinceRescale -= 64 * A.SHARING_HALF_LIFE_WINDOWS;
  }
}

/** A number per thread pair lo < hi: a dense T×T matrix up to DENSE_SHARING_THREADS threads, else a map. */
class PairTable {
  private readonly dense: Float64Array | null;
  private readonly sparse: Map<number, number> | null;
  constructor(private readonly T: number) {
    this.dense = T <= DENSE_SHARING_THREADS ? new Float64Array(T * T) : null;
    this.sparse = this.dense ? null : new Map();
  }
  /** The dense matrix (lo·T + hi), for the hot loops; null when kept in a map. */
  get denseValues(): Float64Array | null {
    return this.dense;
  }
  add(x: number, y: number, v: number): void {
    const key = x < y ? x * this.T + y : y * this.T + x;
    if (this.dense) this.dense[key]! += v;
    else this.sparse!.set(key, (this.sparse!.get(key) ?? 0) + v);
  }
  get(lo: number, hi: number): number {
    return this.dense ? this.dense[lo * this.T + hi]! : (this.sparse!.get(lo * this.T + hi) ?? 0);
  }
  /** Pairs with a positive value, in ascending key order. */
  forEachPositive(visit: (lo: number, hi: number) => void): void {
    const T = this.T;
    if (this.dense) {
      for (let lo = 0; lo < T; lo++) for (let hi = lo + 1; hi < T; hi++) if (this.dense[lo * T + hi]! > 0) visit(lo, hi);
    } else {
      for (const key of [...this.sparse!.keys()].sort((x, y) => x - y)) if (this.sparse!.get(key)! > 0) visit(Math.floor(key / T), key % T);
    }
  }
  scale(f: number): void {
    if (this.dense) for (let i = 0; i < this.dense.length; i++) this.dense[i]! *= f;
    else for (const [key, v] of this.sparse!) this.sparse!.set(key, v * f);
  }
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
/** "0-7,9" (ascending thread rows); past 6 ranges, "…" and the count. */
function threadList(threads: readonly number[]): string {
  const ranges: string[] = [];
  for (let i = 0; i < threads.length; ) {
    let j = i;
    while (j + 1 < threads.length && threads[j + 1] === threads[j]! + 1) j++;
    ranges.push(j > i ? `${threads[i]}-${threads[j]}` : `${threads[i]}`);
    i = j + 1;
  }
  return ranges.length > 6 ? `${ranges.slice(0, 6).join(',')},… (${threads.length} threads)` : ranges.join(',');
}

/** Clusters listed at most this many; past it, the rest are counted. */
const CLUSTERS_LISTED = 8;

/** The clusters and what they were measured on, for the explanations. */
function clusterWords(machine: MachineModel, clusters: readonly ThreadCluster[], sharing: SharingHistory): string {
  const span = sharing.firstWindow === sharing.lastWindow ? `window ${sharing.lastWindow}` : `windows ${sharing.firstWindow}–${sharing.lastWindow}`;
  // Past CLUSTERS_LISTED clusters, single threads are counted rather than listed.
  const many = clusters.length > CLUSTERS_LISTED;
  const listed = (many ? clusters.filter((c) => c.threads.length > 1) : clusters).slice(0, CLUSTERS_LISTED);
  const parts = listed.map((c) => `{threads ${threadList(c.threads)}} on nodes ${names(machine, c.nodes)}`);
  const singles = many ? clusters.filter((c) => c.threads.length === 1).length : 0;
  const others = clusters.length - listed.length - singles;
  if (singles > 0) parts.push(`${singles} single threads`);
  if (others > 0) parts.push(`${others} more`);
  return `${clusters.length} cluster${clusters.length === 1 ? '' : 's'}: ${parts.join(', ')}, from the sharing measured on ${span} (${sharing.samples} samples over ${sharing.windows} window${sharing.windows === 1 ? '' : 's'}, older windows weighted with a half-life of ${A.SHARING_HALF_LIFE_WINDOWS} windows)`;
}

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
  const sharing = new SharingHistory(input);
  let previousRoots: Int32Array | null = null;
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

    // Steps 1–3: clusters (from the sharing of every window so far), remote bandwidth, weights.
    sharing.add(window);
    const roots = sharing.linkRoots();
    const stable = sameRoots(roots, sharing.linkRoots(A.SHARING_SETTLED_SHARE)) || (previousRoots !== null && sameRoots(roots, previousRoots));
    const unresolved = sharing.unresolvedPairs(roots);
    const settled = stable && unresolved === 0;
    previousRoots = roots;
    const clusters = clustersOf(input, window, placement, windowTotals(input.threadCount, window), roots);
    if (clusters.length === 0) return;
    const found = clusterWords(machine, clusters, sharing);
    const nodesNeeded = clusters.reduce((s, c) => s + c.nodes.length, 0);
    if (nodesNeeded > n) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `no placement: ${clusters.length} clusters occupy ${nodesNeeded} node slots (clusters share nodes), the machine has ${n} nodes; ${found}`,
      });
      return;
    }
    if (!settled) {
      const why = stable
        ? `${unresolved} pair${unresolved === 1 ? '' : 's'} of threads left apart ${unresolved === 1 ? 'has' : 'have'} too few samples to tell: had they shared a buffer, fewer than ${A.SHARING_EVIDENCE_SAMPLES} of their samples would be expected on a common page`
        : `linking threads that share ≥ ${A.SHARING_SETTLED_SHARE * 100}% instead of ${A.SHARING_MIN_SHARE * 100}% joins some of them, and the previous window gave other clusters`;
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `clusters still forming, threads stay: ${why}; ${found}`,
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
        explanation: `no placement: the best one puts threads on memory-only node${memoryOnly.length > 1 ? 's' : ''} ${names(machine, new Set(memoryOnly))} (no cpus); ${found}`,
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
        explanation: `threads stay: the current placement is among the candidates and moves no memory; ${searchWords}; ${found}`,
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
        explanation: `migration aborted: time already spent migrating ${migrationSeconds.toFixed(4)} s + ${(mmGB * 1000).toFixed(2)} MB × ${A.MIGRATION_S_PER_GB} s/GB = ${(migrationSeconds + mmGB * A.MIGRATION_S_PER_GB).toFixed(4)} s > ${A.MAX_MIGRATION_SHARE * 100}% of ${elapsedS.toFixed(2)} s running time; ${searchWords}; ${found}`,
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
        explanation: `cluster {threads ${threadList(c.threads)}} (remote bandwidth ${c.rbwMBps.toFixed(0)} MB/s, weight ln = ${c.weight.toFixed(2)}) moved from nodes ${names(machine, c.nodes)} (bw ${clusterBandwidthMBps(c.nodes, bw, n).toFixed(0)} MB/s) to nodes ${names(machine, search.nodes[k]!)} (bw ${clusterBandwidthMBps(search.nodes[k]!, bw, n).toFixed(0)} MB/s); placement weighted bandwidth ${search.wbw.toFixed(0)}, memory to migrate ${(search.memoryToMigrateBytes / 1e6).toFixed(2)} MB (the least among candidates); ${searchWords}; ${found}`,
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
