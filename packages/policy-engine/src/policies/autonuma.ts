/**
 * Linux automatic NUMA balancing (the kernel's kernel/sched/fair.c, ≈v5.5) as a replay: periodic
 * scans arm up to 256 MB of the process's pages; the next access to an armed page is a NUMA
 * hinting fault, counted per thread and node;
 * `should_numa_migrate_memory()`'s two-stage filter (per-page last_cpupid) decides whether the
 * page moves to the faulting cpu's node; once per scan sequence the fault counts decay, each
 * thread's preferred node is chosen, the scan period adapts, and a thread moves (or swaps) to its
 * preferred node when the improvement is ≥ SMALLIMP. The scan skips the mappings the kernel's
 * `task_numa_work()` skips (Linux 6.12: read-only file-backed, special, hugetlb, inaccessible,
 * policy without migrate-on-fault; policies/numa-scan.ts): their pages take no hinting fault and
 * never move. Simplifications: docs/policies.md.
 */
import type {
  AccessWindow,
  Decision,
  NodeIndex,
  Placement,
  Policy,
  PolicyRun,
  ReplayInput,
  ReplayOptions,
  WindowMetrics,
} from '../model/contract.js';
import { seededRandom } from './seeded-random.js';
import { windowLengthUs } from './common.js';
import { definePolicy } from '../engine/run.js';
import { numaScanSkipDecisions, numaScanSkips } from './numa-scan.js';

export const AUTONUMA_CONSTANTS = {
  SCAN_DELAY_MS: 1000,
  SCAN_PERIOD_MIN_MS: 1000,
  SCAN_PERIOD_MAX_MS: 60000,
  SCAN_SIZE_MB: 256,
  MAX_SCAN_WINDOW_MB: 2560,
  NUMA_PERIOD_SLOTS: 10,
  NUMA_PERIOD_THRESHOLD: 7,
  /** Scan sequences during which first/private faults migrate at once. */
  EARLY_SCAN_SEQ: 4,
  ACTIVE_NODE_FRACTION: 3,
  SMALLIMP: 30,
} as const;
const K = AUTONUMA_CONSTANTS;

export interface AutoNumaOptions {
  scanDelayMs?: number;
  scanPeriodMinMs?: number;
  scanPeriodMaxMs?: number;
  scanSizeMB?: number;
}

const MB = 1 << 20;

export function createAutoNumaPolicy(options: AutoNumaOptions = {}): Policy {
  return definePolicy({
    id: 'autonuma',
    description:
      'Linux automatic NUMA balancing (kernel/sched/fair.c): scan-armed hinting faults (the scanner skips the mappings task_numa_work skips: read-only file-backed, special, hugetlb, inaccessible, policy without migrate-on-fault), two-stage last_cpupid filter for page migration, decayed per-node fault counts choose each thread\'s preferred node, task moves with SMALLIMP 30.',
    run: (input, replayOptions) => replayAutoNuma(input, replayOptions, options),
  });
}

export const autonumaPolicy: Policy = createAutoNumaPolicy();

type Reason = 'early' | 'private' | 'shared-no-group' | 'group-active' | 'group-hysteresis';
const REASON_WORDS: Record<Reason, string> = {
  early: 'first or private fault early in the task\'s life',
  private: 'private fault (same thread as the previous fault)',
  'shared-no-group': 'second consecutive fault from this node (no numa group yet)',
  'group-active': 'second consecutive fault from this node, which has > 3× the group\'s cpu faults of the page\'s node',
  'group-hysteresis': 'second consecutive fault from this node, passing the 3/4 group hysteresis',
};

function* replayAutoNuma(input: ReplayInput, replayOptions: ReplayOptions, options: AutoNumaOptions): PolicyRun {
  const { machine, pageBytes, threadCount: T, pageCount } = input;
  const n = machine.nodeCount;
  const nodeName = (x: NodeIndex): string => `node ${machine.nodeIds[x]}`;
  const random = seededRandom(replayOptions.seed);
  const placement: Placement = {
    threadNode: input.initial.threadNode.slice(),
    pageNode: input.initial.pageNode.slice(),
    replicated: input.initial.replicated.slice(),
  };
  const scanDelayMs = options.scanDelayMs ?? K.SCAN_DELAY_MS;
  const periodMinMs = options.scanPeriodMinMs ?? K.SCAN_PERIOD_MIN_MS;
  const periodMaxMs = options.scanPeriodMaxMs ?? K.SCAN_PERIOD_MAX_MS;
  const scanSizeMB = options.scanSizeMB ?? K.SCAN_SIZE_MB;
  const scanPages = Math.max(1, Math.floor((scanSizeMB * MB) / pageBytes));

  const windows: WindowMetrics[] = [];
  const threadNodeByWindow: Int16Array[] = [];
  const decisions: Decision[] = [];
  let migratedPages = 0;

  const touched = new Uint8Array(pageCount);
  let rssPages = 0;
  const armed = new Uint8Array(pageCount);
  const lastThread = new Int32Array(pageCount).fill(-1);
  const lastNode = new Int16Array(pageCount).fill(-1);
  // Pages of the mappings task_numa_work() skips are never armed (null: the input has no regions).
  const scanSkips = input.regions ? numaScanSkips(input.regions, pageCount) : null;
  const scanSkipped = scanSkips?.skipped ?? null;
  let skipsExplained = false;
  let scanCursor = 0;
  let scanSeq = 0;
  let periodMs = scanDelayMs;
  const firstUs = input.windows.length > 0 ? input.windows.info(0).startUs : 0;
  let nextScanUs = firstUs + scanDelayMs * 1000;

  const faultsMem = new Float64Array(T * n); // decayed, by memory node
  const faultsBuf = new Float64Array(T * n);
  const faultsCpu = new Float64Array(T * n); // decayed, by cpu node
  const faultsCpuBuf = new Float64Array(T * n);
  const preferred = new Int16Array(T).fill(-1);
  let inGroup = false;
  let local = 0;
  let remote = 0;
  let privateFaults = 0;
  let sharedFaults = 0;

  // Group fault sums per node, memoised until a fault changes the node's column (groupFaultSums).
  const { groupCpuAt, groupMemAt, groupCpuFresh, groupMemFresh } = groupFaultSums(T, n, faultsMem, faultsBuf, faultsCpu, faultsCpuBuf);

  // should_numa_migrate_memory()'s verdicts as integers (no allocation per fault): a Reason code
  // (MOVE_*) when the page moves, else a stay code: STAY_TWO_STAGE + previous fault's node, or
  // STAY_HYSTERESIS + dst·n + src. Distinct codes give distinct explanations (stayWords).
  const REASONS: readonly Reason[] = ['early', 'private', 'shared-no-group', 'group-active', 'group-hysteresis'];
  const MOVE_EARLY = 0;
  const MOVE_PRIVATE = 1;
  const MOVE_SHARED_NO_GROUP = 2;
  const MOVE_GROUP_ACTIVE = 3;
  const MOVE_GROUP_HYSTERESIS = 4;
  const STAY_TWO_STAGE = REASONS.length;
  const STAY_HYSTERESIS = STAY_TWO_STAGE + n;
  const stayWords = (code: number): string => {
    if (code < STAY_HYSTERESIS) return `previous fault on the page came from ${nodeName(code - STAY_TWO_STAGE)} (two-stage filter)`;
    const pair = code - STAY_HYSTERESIS;
    const dst = Math.floor(pair / n);
    return `group hysteresis: cpu faults on ${nodeName(dst)} do not beat ${nodeName(pair - dst * n)} by 4/3`;
  };

  /** should_numa_migrate_memory(): a MOVE_* code (the page moves) or a stay code (see above). */
  const shouldMigrate = (t: number, page: number, dst: NodeIndex, src: NodeIndex): number => {
    const lt = lastThread[page]!;
    const ln = lastNode[page]!;
    lastThread[page] = t;
    lastNode[page] = dst;
    if ((preferred[t] === -1 || scanSeq <= K.EARLY_SCAN_SEQ) && (lt === -1 || lt === t)) return MOVE_EARLY;
    if (lt !== -1 && ln !== dst) return STAY_TWO_STAGE + ln;
    if (lt === t) return MOVE_PRIVATE;
    if (!inGroup) return MOVE_SHARED_NO_GROUP;
    if (groupCpuAt(dst) > groupCpuAt(src) * K.ACTIVE_NODE_FRACTION) return MOVE_GROUP_ACTIVE;
    if (groupCpuAt(dst) * groupMemAt(src) * 3 > groupCpuAt(src) * groupMemAt(dst) * 4) return MOVE_GROUP_HYSTERESIS;
    return STAY_HYSTERESIS + dst * n + src;
  };

  // The work of a window is a plain function: V8 optimises it like any other (a loop body
  // inside a generator would run unoptimised, generators get no on-stack replacement).
  const step = (window: AccessWindow): void => {
    windows.push(replayOptions.simulate(machine, window, placement, windowLengthUs(window), pageBytes));
    threadNodeByWindow.push(placement.threadNode.slice());
    const w = window.index;
    if (!skipsExplained) {
      skipsExplained = true;
      if (scanSkips) decisions.push(...numaScanSkipDecisions(input.regions!, scanSkips, w));
    }

    // Pages touched so far make up the RSS the scanner walks (nothing to add once every page is).
    if (rssPages < pageCount) {
      const wPage = window.page;
      for (let i = 0; i < wPage.length; i++) {
        const p = wPage[i]!;
        if (!touched[p]) {
          touched[p] = 1;
          rssPages++;
        }
      }
    }
    // Scans due before the window ends arm the next scan_size of pages (rounded to the window).
    let sequenceEnded = false;
    let scansThisWindow = 0;
    while (nextScanUs < window.endUs && rssPages > 0) {
      let marked = 0;
      let walked = 0;
      while (marked < scanPages && walked < pageCount) {
        if (touched[scanCursor] && (scanSkipped === null || !scanSkipped[scanCursor])) {
          armed[scanCursor] = 1;
          marked++;
        }
        scanCursor++;
        walked++;
        if (scanCursor >= pageCount) {
          scanCursor = 0;
          scanSeq++;
          sequenceEnded = true;
          if (marked > 0) break;
        }
      }
      scansThisWindow++;
      nextScanUs += periodMs * 1000;
      if (scansThisWindow > 1000) break;
    }

    // Hinting faults: each armed page accessed in the window faults once, in a thread drawn by access share.
    // Moves and stays are grouped by integer key (reason·n + node, stay code), in first-seen order.
    const moves = new Map<number, { reason: string; to: NodeIndex; pages: number[] }>();
    const stays = new Map<number, number[]>();
    let faults = 0;
    const { page: wPage, thread: wThread, loads: wLoads, stores: wStores } = window;
    const { threadNode, pageNode } = placement;
    const entries = wPage.length;
    let i = 0;
    while (i < entries) {
      const page = wPage[i]!;
      const start = i;
      i++;
      while (i < entries && wPage[i] === page) i++;
      if (!armed[page]) continue;
      let sum = 0;
      for (let e = start; e < i; e++) sum += wLoads[e]! + wStores[e]!;
      if (sum <= 0) continue;
      armed[page] = 0;
      let r = random.next() * sum;
      let e = start;
      for (; e < i - 1; e++) {
        r -= wLoads[e]! + wStores[e]!;
        if (r < 0) break;
      }
      const t = wThread[e]!;
      const dst = threadNode[t]!;
      const src = pageNode[page]!;
      const isPrivate = lastThread[page] === -1 || lastThread[page] === t;
      if (!isPrivate) inGroup = true; // threads of one mm always share a group once a shared fault is seen
      const verdict = shouldMigrate(t, page, dst, src);
      let memNode = src;
      if (verdict < STAY_TWO_STAGE) {
        if (dst !== src) {
          pageNode[page] = dst;
          memNode = dst;
          migratedPages++;
          const key = verdict * n + dst;
          let m = moves.get(key);
          if (!m) {
            m = { reason: REASON_WORDS[REASONS[verdict]!], to: dst, pages: [] };
            moves.set(key, m);
          }
          m.pages.push(page);
        }
      } else if (dst !== src) {
        let list = stays.get(verdict);
        if (!list) {
          list = [];
          stays.set(verdict, list);
        }
        list.push(page);
      }
      faults++;
      faultsBuf[t * n + memNode]! += 1;
      faultsCpuBuf[t * n + dst]! += 1;
      groupMemFresh[memNode] = 0;
      groupCpuFresh[dst] = 0;
      if (memNode === dst) local++;
      else remote++;
      if (isPrivate) privateFaults++;
      else sharedFaults++;
    }
    faultDecisions(decisions, w, moves, stays, nodeName, stayWords);

    if (!sequenceEnded) return;
    // task_numa_placement(): decay, preferred node per thread.
    groupCpuFresh.fill(0);
    groupMemFresh.fill(0);
    decayFaults(T, n, faultsMem, faultsBuf, faultsCpu, faultsCpuBuf, preferred);
    // update_task_scan_period() (one period for the process).
    const oldPeriod = periodMs;
    let periodWhy: string;
    ({ periodMs, periodWhy } = nextScanPeriod(periodMs, rssPages * pageBytes, { scanSizeMB, periodMinMs, periodMaxMs }, { local, remote, privateFaults, sharedFaults, faults }));
    if (periodMs !== oldPeriod) {
      decisions.push({ window: w, kind: 'none', explanation: `scan period ${oldPeriod} → ${periodMs} ms: ${periodWhy}` });
    }
    local = remote = privateFaults = sharedFaults = 0;
    migrateThreads(machine, T, placement, preferred, faultsMem, inGroup, w, decisions, nodeName);
  };
  for (let wi = 0; wi < input.windows.length; wi++) step(yield wi);

  return {
    policy: 'autonuma',
    windows,
    threadNodeByWindow,
    finalPlacement: placement,
    migratedPages,
    migratedBytes: migratedPages * pageBytes,
    decisions,
  };
}

/**
 * The numa group's fault sums per node (cpu faults: where the faulting thread ran; memory faults:
 * where the page was), decayed plus this sequence's buffer, summed over the threads. Memoised until
 * a fault changes the node's column (the caller clears the node's `Fresh` flag): each value is the
 * same sum, in the same order, as computing it afresh.
 */
function groupFaultSums(T: number, n: number, faultsMem: Float64Array, faultsBuf: Float64Array, faultsCpu: Float64Array, faultsCpuBuf: Float64Array) {
  const groupCpu = (node: NodeIndex): number => {
    let s = 0;
    for (let t = 0; t < T; t++) s += faultsCpu[t * n + node]! + faultsCpuBuf[t * n + node]!;
    return s;
  };
  const groupMem = (node: NodeIndex): number => {
    let s = 0;
    for (let t = 0; t < T; t++) s += faultsMem[t * n + node]! + faultsBuf[t * n + node]!;
    return s;
  };
  const groupCpuMemo = new Float64Array(n);
  const groupCpuFresh = new Uint8Array(n);
  const groupMemMemo = new Float64Array(n);
  const groupMemFresh = new Uint8Array(n);
  const groupCpuAt = (node: NodeIndex): number => {
    if (!groupCpuFresh[node]) {
      groupCpuMemo[node] = groupCpu(node);
      groupCpuFresh[node] = 1;
    }
    return groupCpuMemo[node]!;
  };
  const groupMemAt = (node: NodeIndex): number => {
    if (!groupMemFresh[node]) {
      groupMemMemo[node] = groupMem(node);
      groupMemFresh[node] = 1;
    }
    return groupMemMemo[node]!;
  };
  return { groupCpuAt, groupMemAt, groupCpuFresh, groupMemFresh };
}

/** A window's hinting-fault moves and stays as decisions, in first-seen order. */
function faultDecisions(
  decisions: Decision[],
  w: number,
  moves: Map<number, { reason: string; to: NodeIndex; pages: number[] }>,
  stays: Map<number, number[]>,
  nodeName: (x: NodeIndex) => string,
  stayWords: (code: number) => string,
): void {
  for (const m of moves.values()) {
    decisions.push({
      window: w,
      kind: 'migrate',
      explanation: `${m.pages.length} pages moved to ${nodeName(m.to)} on NUMA hinting faults: ${m.reason}`,
      pages: m.pages.length,
      pageIndices: Int32Array.from(m.pages),
      toNodes: [m.to],
    });
  }
  for (const [code, pages] of stays) {
    decisions.push({
      window: w,
      kind: 'none',
      explanation: `${pages.length} pages not moved on a remote hinting fault: ${stayWords(code)}`,
      pages: pages.length,
      pageIndices: Int32Array.from(pages),
    });
  }
}

/** Thread t's decayed memory faults on `node`, per mille of its total (task_weight()). */
function faultWeight(faultsMem: Float64Array, n: number, t: number, node: NodeIndex): number {
  let total = 0;
  for (let d = 0; d < n; d++) total += faultsMem[t * n + d]!;
  return total > 0 ? (1000 * faultsMem[t * n + node]!) / total : 0;
}

/** task_numa_placement(): halve the decayed faults and add the sequence's buffer; each thread's preferred node. */
function decayFaults(T: number, n: number, faultsMem: Float64Array, faultsBuf: Float64Array, faultsCpu: Float64Array, faultsCpuBuf: Float64Array, preferred: Int16Array): void {
  for (let x = 0; x < T * n; x++) {
    faultsMem[x] = faultsMem[x]! / 2 + faultsBuf[x]!;
    faultsCpu[x] = faultsCpu[x]! / 2 + faultsCpuBuf[x]!;
    faultsBuf[x] = 0;
    faultsCpuBuf[x] = 0;
  }
  for (let t = 0; t < T; t++) {
    let total = 0;
    for (let d = 0; d < n; d++) total += faultsMem[t * n + d]!;
    if (total <= 0) continue;
    let best = 0;
    for (let d = 1; d < n; d++) if (faultsMem[t * n + d]! > faultsMem[t * n + best]!) best = d;
    preferred[t] = best;
  }
}

/** update_task_scan_period() (one period for the process): the next period and why. */
function nextScanPeriod(
  periodMs: number,
  rssBytes: number,
  limits: { scanSizeMB: number; periodMinMs: number; periodMaxMs: number },
  counts: { local: number; remote: number; privateFaults: number; sharedFaults: number; faults: number },
): { periodMs: number; periodWhy: string } {
  const { scanSizeMB, periodMinMs, periodMaxMs } = limits;
  const { local, remote, privateFaults, sharedFaults, faults } = counts;
  const nrWindows = Math.max(1, Math.ceil(rssBytes / (scanSizeMB * MB)));
  const scanMin = Math.max(1000 / (K.MAX_SCAN_WINDOW_MB / scanSizeMB), periodMinMs / nrWindows);
  const scanMax = Math.max(scanMin, periodMaxMs / nrWindows);
  if (local + sharedFaults === 0) return { periodMs: Math.min(scanMax, periodMs * 2), periodWhy: 'no local or shared faults: period doubled' };
  const slot = Math.ceil(periodMs / K.NUMA_PERIOD_SLOTS);
  const lr = Math.floor((local * K.NUMA_PERIOD_SLOTS) / Math.max(1, local + remote));
  const ps = Math.floor((privateFaults * K.NUMA_PERIOD_SLOTS) / Math.max(1, privateFaults + sharedFaults));
  let diff: number;
  if (ps >= K.NUMA_PERIOD_THRESHOLD) diff = Math.max(1, ps - K.NUMA_PERIOD_THRESHOLD) * slot;
  else if (lr >= K.NUMA_PERIOD_THRESHOLD) diff = Math.max(1, lr - K.NUMA_PERIOD_THRESHOLD) * slot;
  else diff = -(K.NUMA_PERIOD_THRESHOLD - Math.max(lr, ps)) * slot;
  return { periodMs: Math.min(scanMax, Math.max(scanMin, periodMs + diff)), periodWhy: `private ${ps}/10, local ${lr}/10 of ${faults} faults` };
}

/** task_numa_migrate(): move each thread to its preferred node, or swap it with one there. */
function migrateThreads(
  machine: ReplayInput['machine'],
  T: number,
  placement: Placement,
  preferred: Int16Array,
  faultsMem: Float64Array,
  inGroup: boolean,
  w: number,
  decisions: Decision[],
  nodeName: (x: NodeIndex) => string,
): void {
  const n = machine.nodeCount;
  const weight = (t: number, node: NodeIndex): number => faultWeight(faultsMem, n, t, node);
  const threadsOn = new Int32Array(n);
  for (let t = 0; t < T; t++) threadsOn[placement.threadNode[t]!]!++;
  for (let t = 0; t < T; t++) {
    const pref = preferred[t]!;
    const cur = placement.threadNode[t]!;
    if (pref < 0 || pref === cur) continue;
    let imp = weight(t, pref) - weight(t, cur);
    const capacity = machine.nodeCpus[pref]?.length ?? 0;
    if (threadsOn[pref]! < capacity) {
      if (imp < K.SMALLIMP) continue;
      placement.threadNode[t] = pref;
      threadsOn[pref]!++;
      threadsOn[cur]!--;
      decisions.push({
        window: w,
        kind: 'pin-threads',
        explanation: `thread ${t} moved ${nodeName(cur)} → ${nodeName(pref)} (its preferred node by decayed faults): improvement ${imp.toFixed(0)} ≥ SMALLIMP ${K.SMALLIMP}, a cpu is free there`,
        threads: [t],
        toNodes: [pref],
      });
      continue;
    }
    // Swap with the thread on `pref` that gains most (or loses least) from going to `cur`.
    let bestOther = -1;
    let bestImp = -Infinity;
    for (let o = 0; o < T; o++) {
      if (o === t || placement.threadNode[o] !== pref) continue;
      let total = imp + weight(o, cur) - weight(o, pref);
      if (inGroup) total -= total / 16;
      if (total > bestImp) {
        bestImp = total;
        bestOther = o;
      }
    }
    if (bestOther < 0 || bestImp < K.SMALLIMP) continue;
    placement.threadNode[t] = pref;
    placement.threadNode[bestOther] = cur;
    imp = bestImp;
    decisions.push({
      window: w,
      kind: 'pin-threads',
      explanation: `threads ${t} and ${bestOther} swapped ${nodeName(cur)} ↔ ${nodeName(pref)}: ${nodeName(pref)} is thread ${t}'s preferred node, combined improvement ${imp.toFixed(0)} ≥ SMALLIMP ${K.SMALLIMP}`,
      threads: [t, bestOther],
      toNodes: [pref, cur],
    });
  }
}
