/**
 * Diagnostics after NumaPerf (Zhou et al., ISSTA'21): issues per object (an allocation of the
 * trace's allocation tables, or its region when no recorded allocation holds the page) and per
 * thread, each with a score, a threshold, the allocation site where known and a fix. The classes,
 * scores and thresholds are NumaPerf's as published; docs/engine.md ("Diagnostics") states each
 * definition and where ours differs (sampled accesses instead of instrumented ones).
 *
 * This module finds the issues from the trace alone (diagnose). fixes.ts predicts each fix's gain
 * by simulating that fix alone; plan.ts turns a fix into a plan. It sits beside recommend/: it may
 * import the engine's floors (trace/, code/, engine/, policies/common, model/) and plan/, never
 * analyze/'s values (analyze is the top).
 * Pure, no DOM or Node.
 */
import { hitmLineKeys } from '../code/c2c.js';
import { codeFrames } from '../code/frames.js';
import { accessSampleRows, hintingFaultStats, replayInputFor } from '../engine/windows.js';
import { recordedMachine } from '../machine/loaders.js';
import { machineModel } from '../machine/model.js';
import { dictionaryColumn, numericColumn, stringColumn, timeColumn } from '../trace/columns.js';
import { allocationStack, describeFrame } from '../query/objects.js';
import { queryColumns, type QueryColumns } from '../query/query-columns.js';
import type { Trace } from '../trace/types.js';
import { citeCode, objectCodes, type IssueCode, type ObjectRows } from './code-sites.js';

export const CACHE_LINE = 64;
/** A fix's noPrediction before predictFixGains has run. */
export const NOT_PREDICTED = 'not predicted: needs a replay of the trace (predictFixGains)';

/** Thresholds, every one adjustable. Defaults are NumaPerf's published ones where it publishes one. */
export interface DiagnoseOptions {
  /** Remote accesses per object per ms above which remote access / page sharing is reported (NumaPerf: 1500). */
  remoteAccessPerMs?: number;
  /** False/true sharing: cache-line invalidations on the object per ms, divided by the threads touching it (NumaPerf: > 1). */
  cacheLineSharing?: number;
  /** Thread migration: node changes of a thread per second of the recording (NumaPerf's threshold: 150; see docs). */
  migrationsPerSecond?: number;
  /** Imbalance: a group's accesses per thread over another group's, at least this ratio (NumaPerf publishes none; default 2). */
  imbalanceRatio?: number;
  /** Share of an object's remote accesses (on pages sampled at least twice) on pages used from several nodes above which it is page sharing, not disjoint blocks (default 0.5). */
  sharedPageShare?: number;
  /** Store share of an object's accesses at or below which it is read-mostly (replication applies; default 0.05). */
  readMostlyStoreShare?: number;
  /** At most this many issues of each kind (highest scores; default 50). */
  maxPerKind?: number;
}

export const DIAGNOSE_DEFAULTS: Required<DiagnoseOptions> = {
  remoteAccessPerMs: 1500,
  cacheLineSharing: 1,
  migrationsPerSecond: 150,
  imbalanceRatio: 2,
  sharedPageShare: 0.5,
  readMostlyStoreShare: 0.05,
  maxPerKind: 50,
};

export type IssueKind = 'remote-access' | 'page-sharing' | 'false-sharing' | 'true-sharing' | 'thread-migration' | 'thread-imbalance';
export type FixKind = 'block-wise-interleave' | 'move-to-node' | 'page-interleave' | 'replicate' | 'padding' | 'none' | 'thread-binding' | 'thread-counts';

export interface IssueObject {
  /** Row of allocations, -1 when the object is a region. */
  allocation: number;
  /** Row of regions, -1 unknown. */
  region: number;
  label: string;
  address: number;
  size: number;
  /** `function file:line` of the allocation site (or the region's recorded site), null unknown. */
  site: string | null;
  /** The allocation's call stack, innermost first, one frame a line. */
  stack: string[];
  /** Page rows of the object (every row of pages it holds). */
  pages: number[];
}

export interface Fix {
  /**
   * Stable id of the fix: `<issue id>/<fix kind>` (e.g. `remote-access:a3/block-wise-interleave`),
   * what `numascope-analyze plan TRACE --fix ID` and the app's "Preview plan" name. The same trace
   * with the same thresholds gives the same ids.
   */
  id: string;
  kind: FixKind;
  /** What to do, in words. */
  text: string;
  /** Whether a placement plan can carry it (interleave/move of the object's pages, thread pins). */
  planable: boolean;
  /** Why no plan carries it (a code change, or nothing to place), when planable is false. */
  noPlan: string | null;
  /** Pages the fix interleaves or replicates (page-interleave, replicate): those of the object used from several nodes. */
  pages?: number[];
  /** Pages and node slots a plan would move (block-wise: each page to its owner thread's node), with that owner thread. */
  pageNodes?: { page: number; node: number; thread?: number }[];
  /** Threads and the node each would be pinned to (node slot). */
  threadNodes?: { thread: number; node: number }[];
  /** Suggested thread count per group (thread-counts). */
  threadCounts?: { group: string; threads: number; suggested: number }[];
  /** Predicted speedup of this fix alone against the baseline (fixes.ts); null: no placement expresses it, or not predicted. */
  predictedSpeedup: number | null;
  /** Why there is no prediction, when there is none. */
  noPrediction: string | null;
}

export interface Issue {
  id: string;
  kind: IssueKind;
  score: number;
  threshold: number;
  /** What the score counts, with its unit. */
  scoreUnit: string;
  /** One sentence with the numbers. */
  text: string;
  object: IssueObject | null;
  threads: number[];
  fix: Fix;
  /** Figures behind the score. */
  evidence: Record<string, number>;
  /**
   * The code behind an object's issue (code-sites.ts): the functions that first-touched its pages
   * and those that access it, from the trace's call stacks; `available: false` with the reason
   * without them. Null for a thread issue (no object).
   */
  code: IssueCode | null;
}

export interface Diagnosis {
  durationMs: number;
  /** Whether cache-line (false/true) sharing could be looked for, and why not. */
  cacheLine: { available: boolean; reason: string | null; pmuSamples: number };
  issues: Issue[];
  options: Required<DiagnoseOptions>;
  notes: string[];
  /**
   * Why the recording could not be diagnosed at all (no memory-access samples: the issue classes
   * need accesses), or null: no issue then means none above its threshold, not "not looked for".
   */
  unavailable: string | null;
}

const PMU_EVENTS = new Set(['ibs-op', 'pebs-load', 'pebs-store']);

/** A thread group's name: the thread name without trailing digits and separators (`worker-3` → `worker`). */
export function threadGroupName(name: string): string {
  const g = name.replace(/[-_.:#\s]*\d+$/, '');
  return g.length > 0 ? g : name;
}

function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Node slot of each thread over time, from thread_placements (rows sorted by time per thread). */
function threadTimeline(
  trace: Trace,
  cols: QueryColumns,
): { slotAt: (thread: number, t: number) => number; changes: Int32Array; cpuChanges: Int32Array; mostSlot: Int16Array } {
  const tp = trace.tables.thread_placements;
  const time = timeColumn(tp, 'time_us');
  const thread = numericColumn<Uint32Array>(tp, 'thread');
  const node = numericColumn<Int8Array>(tp, 'node');
  const cpu = numericColumn<Int16Array>(tp, 'cpu');
  const slotOf = new Map(cols.nodeIds.map((id, i) => [id, i]));
  const n = cols.threadCount;
  const per: Array<Array<[number, number, number]>> = Array.from({ length: n }, () => []);
  for (let i = 0; i < tp.numRows; i++) {
    const t = thread[i]!;
    const s = slotOf.get(node[i]!);
    if (t < n && s !== undefined) per[t]!.push([time[i]!, s, cpu[i]!]);
  }
  const changes = new Int32Array(n);
  const cpuChanges = new Int32Array(n);
  const mostSlot = new Int16Array(n).fill(-1);
  for (let t = 0; t < n; t++) {
    const rows = per[t]!.sort((a, b) => a[0] - b[0]);
    const dwell = new Float64Array(cols.slots);
    for (let k = 0; k < rows.length; k++) {
      if (k > 0 && rows[k]![1] !== rows[k - 1]![1]) changes[t]!++;
      if (k > 0 && rows[k]![2] !== rows[k - 1]![2]) cpuChanges[t]!++;
      const end = k + 1 < rows.length ? rows[k + 1]![0] : Math.max(cols.durationUs, rows[k]![0] + 1);
      dwell[rows[k]![1]]! += Math.max(1, end - rows[k]![0]);
    }
    let best = -1;
    for (let s = 0; s < cols.slots - 1; s++) if (dwell[s]! > 0 && (best < 0 || dwell[s]! > dwell[best]!)) best = s;
    mostSlot[t] = best;
  }
  const slotAt = (t: number, at: number): number => {
    const rows = per[t];
    if (!rows || rows.length === 0) return -1;
    let lo = 0;
    let hi = rows.length - 1;
    if (at < rows[0]![0]) return rows[0]![1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (rows[mid]![0] <= at) lo = mid;
      else hi = mid - 1;
    }
    return rows[lo]![1];
  };
  return { slotAt, changes, cpuChanges, mostSlot };
}

/**
 * Accesses each NUMA hinting fault stands for, when a trace's access samples are hinting faults
 * only (else 1), so that the remote-access score is in accesses per ms as for PMU samples. A
 * hinting fault marks a page touched once per scan pass of the kernel's balancer (a second or more
 * apart for a small process: the balancer's minimum period grows as the resident set shrinks), so
 * fault counts are some 1000 times below any access rate. The scale is the engine's access scale
 * σ (engine/windows.ts, "Stall share": the rate that gives a 50 % memory stall, solved with the
 * recorded machine's model) over ONE window spanning the whole recording: the recording's average
 * fault rate stands for that assumed access rate. Not the busiest 100 ms window, which the
 * simulator calibrates on: faults come in bursts (a pass unmaps a range and the threads fault on
 * its pages within milliseconds), so a rate set by the burst and then averaged over the seconds
 * between passes would fall short by the ratio of the two. Independent of an analysis' window
 * length, so that `diagnose` and `plan --fix` find the same issues.
 */
export function hintingAccessScale(trace: Trace): number {
  const stats = hintingFaultStats(trace);
  if (!stats || stats.rows === 0 || stats.otherAccessRows > 0) return 1;
  const time = timeColumn(trace.tables.samples, 'time_us');
  let lastUs = trace.manifest.capture.durationUs;
  for (let i = 0; i < time.length; i++) if (time[i]! > lastUs) lastUs = time[i]!;
  const input = replayInputFor(trace, machineModel(recordedMachine(trace.manifest).machine), { windowMs: Math.ceil((lastUs + 1) / 1000) });
  if (input.windows.length === 0) return 1;
  let busiest = 0;
  for (let w = 1; w < input.windows.length; w++) if (input.windows.info(w).sampleCount > input.windows.info(busiest).sampleCount) busiest = w;
  const scale = input.windows.get(busiest).accessScale;
  return scale !== undefined && Number.isFinite(scale) && scale > 0 ? scale : 1;
}

/**
 * The issues of a trace, highest score first within each kind, kinds in the order remote access,
 * page sharing, false sharing, true sharing, thread migration, imbalance (then by score overall).
 */
export function diagnose(trace: Trace, options: DiagnoseOptions = {}, columns?: QueryColumns): Diagnosis {
  const opt: Required<DiagnoseOptions> = { ...DIAGNOSE_DEFAULTS, ...options };
  for (const [k, v] of Object.entries(opt)) {
    if (!(typeof v === 'number' && Number.isFinite(v) && v >= 0)) throw new RangeError(`diagnose option ${k} must be a number ≥ 0, got ${String(v)}`);
  }
  const cols = columns ?? queryColumns(trace);
  const durationMs = Math.max(cols.durationUs, 1) / 1000;
  const notes: string[] = [];
  const o = cols.objects;
  const tl = threadTimeline(trace, cols);
  const accessScale = hintingAccessScale(trace);
  if (accessScale !== 1) {
    notes.push(
      `access samples are NUMA hinting faults (about one per page per scan pass, not per access): remote-access scores count each fault as ${round(accessScale)} accesses, ` +
        `the engine's access scale over the whole recording (its threads assumed 50 % stalled on memory on average), so they are estimates against the published threshold`,
    );
  }
  const unknownSlot = cols.slots - 1;
  const s = trace.tables.samples;
  const op = dictionaryColumn(s, 'op');
  const storeCode = op.values.indexOf('store');
  const loadCode = op.values.indexOf('load');
  const ev = dictionaryColumn(s, 'event');
  const pmuCode = new Uint8Array(ev.values.length);
  ev.values.forEach((v, i) => (pmuCode[i] = PMU_EVENTS.has(v) ? 1 : 0));
  const offset = numericColumn<Uint16Array>(s, 'offset');

  // Objects: allocation rows, then one per region, then "no region".
  const allocCount = o?.count ?? 0;
  const noRegion = allocCount + cols.regionCount;
  const objectOfPage = (p: number): number => {
    const a = o ? o.pageAllocation[p]! : -1;
    if (a >= 0) return a;
    const r = cols.pageRegion[p]!;
    return r >= 0 ? allocCount + r : noRegion;
  };
  const objectOfSample = (i: number, p: number): number => {
    const a = o ? o.sampleAllocation[i]! : -1;
    return a >= 0 ? a : objectOfPage(p);
  };
  const nObj = noRegion + 1;
  const objPages: number[][] = Array.from({ length: nObj }, () => []);
  const pageObj = new Int32Array(cols.pageCount);
  for (let p = 0; p < cols.pageCount; p++) {
    pageObj[p] = objectOfPage(p);
    objPages[pageObj[p]!]!.push(p);
  }

  // Per sample: accessing slot; per page: accesses per accessing slot and per thread.
  const remote = new Float64Array(nObj);
  const accesses = new Float64Array(nObj);
  const stores = new Float64Array(nObj);
  const objThreads: Array<Set<number>> = Array.from({ length: nObj }, () => new Set());
  const pageSlotMask = new Uint32Array(cols.pageCount);
  const pageRemote = new Float64Array(cols.pageCount);
  // Access rows per page (capped at 2): a page sampled once cannot show that several nodes use it.
  const pageRows = new Uint8Array(cols.pageCount);
  const pageThreadAcc = new Map<number, Map<number, number>>();
  const threadAcc = new Float64Array(cols.threadCount);
  let pmuSamples = 0;
  let accessSamples = 0;
  for (let i = 0; i < cols.sampleCount; i++) {
    if (cols.fault[i]) continue;
    const p = cols.page[i]!;
    const t = cols.thread[i]!;
    const w = cols.weight[i]!;
    accessSamples++;
    if (pmuCode[ev.codes[i]!]) pmuSamples++;
    if (t < cols.threadCount) threadAcc[t]! += w;
    if (p < 0) continue;
    const obj = objectOfSample(i, p);
    let from = cols.cpuSlot[i]!;
    if (from === unknownSlot) from = tl.slotAt(t, cols.time[i]!);
    const mem = cols.slot[i]!;
    accesses[obj]! += w;
    if (op.codes[i] === storeCode) stores[obj]! += w;
    objThreads[obj]!.add(t);
    if (from >= 0 && from !== unknownSlot) {
      if (pageRows[p]! < 2) pageRows[p]!++;
      pageSlotMask[p]! |= 1 << from;
      if (mem !== unknownSlot && mem !== from) {
        remote[obj]! += w;
        pageRemote[p]! += w;
      }
    }
    const m = pageThreadAcc.get(p) ?? new Map<number, number>();
    m.set(t, (m.get(t) ?? 0) + w);
    pageThreadAcc.set(p, m);
  }

  const regionSite = stringColumn(trace.tables.regions, 'alloc_site');
  const regionStart = numericColumn<BigUint64Array>(trace.tables.regions, 'start');
  const regionEnd = numericColumn<BigUint64Array>(trace.tables.regions, 'end');
  const describe = (obj: number): IssueObject => {
    const pages = objPages[obj]!;
    if (o && obj < allocCount) {
      const site = o.site[obj]! >= 0 ? describeFrame(o, o.site[obj]!) : null;
      const stack = allocationStack(o, obj).map((f) => {
        const where = f.file !== null && f.line >= 0 ? `${f.file.slice(f.file.lastIndexOf('/') + 1)}:${f.line}` : f.module ? `${f.module.slice(f.module.lastIndexOf('/') + 1)}+0x${f.moduleOffset.toString(16)}` : '?';
        return `${f.function ?? '?'} ${where}`;
      });
      return {
        allocation: obj,
        region: o.region[obj]!,
        label: `${o.op.values[o.op.codes[obj]!] ?? 'alloc'} of ${o.size[obj]} B at 0x${o.address[obj]!.toString(16)}${site ? ` (${site})` : ''}`,
        address: o.address[obj]!,
        size: o.size[obj]!,
        site,
        stack,
        pages,
      };
    }
    const r = obj < noRegion ? obj - allocCount : -1;
    const start = r >= 0 ? Number(regionStart[r]!) : 0;
    const end = r >= 0 ? Number(regionEnd[r]!) : 0;
    const site = r >= 0 ? (regionSite[r] ?? null) : null;
    return {
      allocation: -1,
      region: r,
      label: r >= 0 ? `region ${r} at 0x${start.toString(16)}${site ? ` (${site})` : ''}${o ? ', no recorded allocation' : ''}` : 'pages of no known region',
      address: start,
      size: end - start,
      site,
      stack: [],
      pages,
    };
  };

  const issues: Issue[] = [];
  const slotNode = (slot: number) => cols.nodeIds[slot];

  // Remote access and page sharing (NumaPerf's page-sharing score is this remote-access score).
  issues.push(...remoteAccessIssues({ nObj, remote, accesses, stores, objThreads, objPages, pageSlotMask, pageRemote, pageRows, pageThreadAcc, accessScale, durationMs, opt, tl, describe, slotNode }));

  // False and true sharing, from PMU samples at cache-line granularity.
  const cacheLine = pmuSamples > 0
    ? { available: true, reason: null, pmuSamples }
    : {
        available: false,
        reason:
          accessSamples === 0
            ? 'the trace has no access samples (page faults only): cache-line sharing needs load and store samples with addresses (IBS or PEBS)'
            : 'the access samples are not IBS or PEBS records (page faults, NUMA hinting faults or synthetic rows): they carry no reliable byte offset, so false and true sharing cannot be told apart',
        pmuSamples: 0,
      };
  // Counted as perf c2c counts: where the samples carry HITM classes, only lines with a HITM.
  const hitmLines = cacheLine.available ? hitmLineKeys(trace) : null;
  if (cacheLine.available && hitmLines) notes.push(`false/true sharing: on the ${hitmLines.size} cache lines with a HITM load (perf c2c's shared lines)`);
  if (cacheLine.available) issues.push(...cacheLineIssues(cols, { op, storeCode, loadCode, ev, pmuCode, offset }, objectOfSample, describe, durationMs, opt, hitmLines));
  else notes.push(`false/true sharing: unavailable: ${cacheLine.reason}`);

  // Thread migration: node changes per second.
  issues.push(...migrationIssues(trace, cols, tl, durationMs, opt, slotNode));

  // Imbalance between thread groups (by name).
  const imbalance = imbalanceIssue(trace, cols, threadAcc, opt);
  if (imbalance) issues.push(imbalance);
  // The code behind each object's issue: one pass over the samples for the issues' objects' rows
  // (faults included), then the code attribution of each (code-sites.ts), only when some issue has
  // an object; texts cite it (citeCode) and stay as they were without call stacks.
  const objectIssues = issues.filter((i) => i.object !== null);
  if (objectIssues.length > 0) {
    const objOf = (x: IssueObject) => (x.allocation >= 0 ? x.allocation : x.region >= 0 ? allocCount + x.region : noRegion);
    const rowsOf = new Map<number, ObjectRows>();
    for (const i of objectIssues) rowsOf.set(objOf(i.object!), { faults: [], accesses: [] });
    if (codeFrames(trace).available) {
      const slot = new Int32Array(nObj).fill(-1);
      const lists: ObjectRows[] = [];
      for (const [obj, list] of rowsOf) {
        slot[obj] = lists.length;
        lists.push(list);
      }
      for (let i = 0; i < cols.sampleCount; i++) {
        const p = cols.page[i]!;
        const a = o ? o.sampleAllocation[i]! : -1;
        const obj = a >= 0 ? a : p >= 0 ? objectOfPage(p) : -1;
        if (obj >= 0 && slot[obj]! >= 0) (cols.fault[i] ? lists[slot[obj]!]!.faults : lists[slot[obj]!]!.accesses).push(i);
      }
    }
    const codes = objectCodes(trace, rowsOf, (obj) => (obj < allocCount ? obj : -1), o);
    for (const i of objectIssues) {
      i.code = codes.get(objOf(i.object!)) ?? null;
      citeCode(i, slotNode);
    }
  }
  for (const i of issues) i.fix.id = `${i.id}/${i.fix.kind}`;
  const unavailable =
    accessSampleRows(trace) === 0
      ? 'diagnostics need memory-access samples (IBS/PEBS, perf mem data or NUMA hinting faults); this recording has none, so no issue was looked for'
      : null;
  return { durationMs, cacheLine, issues, options: opt, notes, unavailable };
}

/** Set bits of x (the slots in a page's slot mask). */
function bits(x: number): number {
  let c = 0;
  for (; x; x &= x - 1) c++;
  return c;
}

/** What diagnose's one pass over the samples found, per object and page, for remoteAccessIssues. */
interface RemoteInputs {
  nObj: number;
  remote: Float64Array;
  accesses: Float64Array;
  stores: Float64Array;
  objThreads: Array<Set<number>>;
  objPages: number[][];
  pageSlotMask: Uint32Array;
  pageRemote: Float64Array;
  pageRows: Uint8Array;
  pageThreadAcc: Map<number, Map<number, number>>;
  accessScale: number;
  durationMs: number;
  opt: Required<DiagnoseOptions>;
  tl: ReturnType<typeof threadTimeline>;
  describe: (obj: number) => IssueObject;
  slotNode: (slot: number) => number | undefined;
}

/** diagnose: the remote-access and page-sharing issues, highest score first (at most maxPerKind). */
function remoteAccessIssues(inputs: RemoteInputs): Issue[] {
  const { nObj, remote, accesses, stores, objThreads, objPages, pageSlotMask, pageRemote, pageRows, pageThreadAcc, accessScale, durationMs, opt, tl, describe, slotNode } = inputs;
  const remoteIssues: Issue[] = [];
  for (let obj = 0; obj < nObj; obj++) {
    const score = (remote[obj]! * accessScale) / durationMs;
    if (!(score > opt.remoteAccessPerMs)) continue;
    let sharedRemote = 0;
    let sharedPages = 0;
    let usedPages = 0;
    let twicePages = 0;
    let twiceRemote = 0;
    const ownerOf: Array<{ page: number; thread: number }> = [];
    const sharedList: number[] = [];
    for (const p of objPages[obj]!) {
      if (pageSlotMask[p] === 0) continue;
      usedPages++;
      if (pageRows[p]! >= 2) {
        twicePages++;
        twiceRemote += pageRemote[p]!;
      }
      if (bits(pageSlotMask[p]!) > 1) {
        sharedPages++;
        sharedList.push(p);
        sharedRemote += pageRemote[p]!;
      }
      const m = pageThreadAcc.get(p);
      if (m) {
        let best = -1;
        let bestA = -1;
        for (const [t, a] of m) if (a > bestA) [best, bestA] = [t, a];
        ownerOf.push({ page: p, thread: best });
      }
    }
    // Of the remote accesses on pages sampled at least twice (the only ones that can show several
    // nodes), the share on pages used from several nodes. Sparse samples (NUMA hinting faults: one
    // per page per scan pass, passes a second or more apart) leave many pages seen once; counting
    // those as used by one node would call a shared object disjoint blocks.
    const sharedShare = twiceRemote > 0 ? sharedRemote / twiceRemote : 0;
    const storeShare = accesses[obj]! > 0 ? stores[obj]! / accesses[obj]! : 0;
    const object = describe(obj);
    const threads = [...objThreads[obj]!].sort((a, b) => a - b);
    const shared = sharedShare > opt.sharedPageShare;
    const kind: IssueKind = shared ? 'page-sharing' : 'remote-access';
    const evidence = {
      remoteAccesses: round(remote[obj]! * accessScale),
      accesses: round(accesses[obj]! * accessScale),
      remoteSamples: remote[obj]!,
      accessScale: round(accessScale, 3),
      storeShare: round(storeShare, 3),
      pagesUsed: usedPages,
      pagesUsedFromSeveralNodes: sharedPages,
      pagesSampledTwice: twicePages,
      remoteShareOnSharedPages: round(sharedShare, 3),
    };
    let fix: Fix;
    if (!shared) {
      const threadNodes = threads.filter((t) => tl.mostSlot[t]! >= 0).map((t) => ({ thread: t, node: tl.mostSlot[t]! }));
      const nodeOfThread = new Map(threadNodes.map((x) => [x.thread, x.node]));
      const pageNodes = ownerOf.filter((x) => nodeOfThread.has(x.thread)).map((x) => ({ page: x.page, node: nodeOfThread.get(x.thread)!, thread: x.thread }));
      const targetNodes = new Set(pageNodes.map((x) => x.node));
      if (targetNodes.size === 1) {
        // Every block's owner runs on one node: the split is a move of the object to that node
        // (bind it there at the next launch); the threads already run there, none is pinned.
        const node = [...targetNodes][0]!;
        fix = {
          id: '',
          kind: 'move-to-node',
          text: `move the object's pages to node ${slotNode(node)}, where the threads that use it run (${pageNodes.length} pages; bind it there at the next launch)`,
          planable: true,
          noPlan: null,
          pageNodes,
          predictedSpeedup: null,
          noPrediction: NOT_PREDICTED,
        };
      } else {
        fix = {
          id: '',
          kind: 'block-wise-interleave',
          text: `each thread's block of the object on the thread's node, threads bound to their nodes (${pageNodes.length} pages, ${threadNodes.length} threads)`,
          planable: pageNodes.length > 0,
          noPlan: pageNodes.length > 0 ? null : 'no page of the object has a thread whose node is known',
          pageNodes,
          threadNodes,
          predictedSpeedup: null,
          noPrediction: NOT_PREDICTED,
        };
      }
    } else if (storeShare <= opt.readMostlyStoreShare) {
      fix = {
        id: '',
        kind: 'replicate',
        text: `a copy of the read-mostly object per node (${(storeShare * 100).toFixed(1)}% stores): a code change, no plan can replicate`,
        planable: false,
        noPlan: 'replication is a code change (a copy of the object per node, each thread reading its node\'s copy): a plan moves and interleaves pages, it cannot duplicate them',
        pages: sharedList,
        predictedSpeedup: null,
        noPrediction: NOT_PREDICTED,
      };
    } else {
      // Only the pages used from several nodes: a page one node uses stays where it is.
      fix = { id: '', kind: 'page-interleave', text: `interleave the object's ${sharedList.length} pages used from several nodes over the nodes${sharedList.length < object.pages.length ? ` (of its ${object.pages.length} pages)` : ''}`, planable: true, noPlan: null, pages: sharedList, predictedSpeedup: null, noPrediction: NOT_PREDICTED };
    }
    remoteIssues.push({
      id: `${kind}:${object.allocation >= 0 ? `a${object.allocation}` : `r${object.region}`}`,
      kind,
      score: round(score),
      threshold: opt.remoteAccessPerMs,
      scoreUnit: 'remote accesses per ms',
      text:
        `${object.label}: ${round(score)} remote accesses/ms (> ${opt.remoteAccessPerMs}); ` +
        (shared ? `${sharedPages} of its ${usedPages} used pages are used from several nodes (${(sharedShare * 100).toFixed(0)}% of the remote accesses)` : `its pages are each used from one node (${usedPages - sharedPages} of ${usedPages}), by threads on other nodes than the pages`),
      object,
      threads,
      fix,
      evidence,
      code: null,
    });
  }
  return remoteIssues.sort((a, b) => b.score - a.score).slice(0, opt.maxPerKind);
}

/** diagnose: the thread-migration issues (node changes per second), highest score first (at most maxPerKind). */
function migrationIssues(
  trace: Trace,
  cols: QueryColumns,
  tl: ReturnType<typeof threadTimeline>,
  durationMs: number,
  opt: Required<DiagnoseOptions>,
  slotNode: (slot: number) => number | undefined,
): Issue[] {
  const seconds = durationMs / 1000;
  const migr: Issue[] = [];
  // Placements are polled (every 100 ms by default): at most one node change per poll shows, so a
  // thread moved hundreds of times a second looks still. The kernel's count of the thread's cpu
  // migrations during the capture (threads.migrations, se.nr_migrations) is exact; the share of the
  // polled cpu changes that changed node turns it into node changes (all of them on a machine with
  // one cpu per node). The larger of the two counts is the thread's node changes.
  const kernelMigrations = numericColumn<BigInt64Array>(trace.tables.threads, 'migrations');
  const nodeChanges = new Float64Array(cols.threadCount);
  const fromKernel = new Uint8Array(cols.threadCount);
  for (let t = 0; t < cols.threadCount; t++) {
    nodeChanges[t] = tl.changes[t]!;
    const k = t < kernelMigrations.length ? Number(kernelMigrations[t]!) : -1;
    if (k > 0 && tl.cpuChanges[t]! > 0) {
      const est = Math.round((k * tl.changes[t]!) / tl.cpuChanges[t]!);
      if (est > nodeChanges[t]!) {
        nodeChanges[t] = est;
        fromKernel[t] = 1;
      }
    }
  }
  for (let t = 0; t < cols.threadCount; t++) {
    const score = nodeChanges[t]! / seconds;
    if (!(score > opt.migrationsPerSecond) || tl.mostSlot[t]! < 0) continue;
    const node = tl.mostSlot[t]!;
    migr.push({
      id: `thread-migration:t${t}`,
      kind: 'thread-migration',
      score: round(score),
      threshold: opt.migrationsPerSecond,
      scoreUnit: 'node changes per second',
      text:
        `thread ${t} changed node ${nodeChanges[t]} times in ${round(seconds, 3)} s (${round(score)}/s > ${opt.migrationsPerSecond}/s)` +
        (fromKernel[t] ? ` (the kernel counted ${Number(kernelMigrations[t]!)} cpu migrations; ${tl.changes[t]} of the ${tl.cpuChanges[t]} polled cpu changes changed node)` : ''),
      object: null,
      threads: [t],
      fix: { id: '', kind: 'thread-binding', text: `bind thread ${t} to node ${slotNode(node)}, where it ran longest`, planable: true, noPlan: null, threadNodes: [{ thread: t, node }], predictedSpeedup: null, noPrediction: NOT_PREDICTED },
      evidence: { nodeChanges: nodeChanges[t]!, polledNodeChanges: tl.changes[t]!, polledCpuChanges: tl.cpuChanges[t]!, kernelCpuMigrations: t < kernelMigrations.length ? Number(kernelMigrations[t]!) : -1, seconds: round(seconds, 3) },
      code: null,
    });
  }
  return migr.sort((a, b) => b.score - a.score).slice(0, opt.maxPerKind);
}

/** diagnose: the imbalance between thread groups (by name), if any. */
function imbalanceIssue(trace: Trace, cols: QueryColumns, threadAcc: Float64Array, opt: Required<DiagnoseOptions>): Issue | null {
  const names = stringColumn(trace.tables.threads, 'name');
  const groups = new Map<string, { threads: number[]; acc: number }>();
  for (let t = 0; t < cols.threadCount; t++) {
    const g = threadGroupName(names[t] ?? `thread-${t}`);
    const e = groups.get(g) ?? { threads: [], acc: 0 };
    e.threads.push(t);
    e.acc += threadAcc[t]!;
    groups.set(g, e);
  }
  const active = [...groups.entries()].filter(([, g]) => g.acc > 0);
  if (active.length >= 2) {
    const per = active.map(([name, g]) => ({ name, threads: g.threads, acc: g.acc, perThread: g.acc / g.threads.length }));
    const hi = per.reduce((a, b) => (b.perThread > a.perThread ? b : a));
    const lo = per.reduce((a, b) => (b.perThread < a.perThread ? b : a));
    const ratio = hi.perThread / lo.perThread;
    if (ratio >= opt.imbalanceRatio && opt.imbalanceRatio > 0) {
      const totalThreads = per.reduce((a, g) => a + g.threads.length, 0);
      const totalAcc = per.reduce((a, g) => a + g.acc, 0);
      const threadCounts = per.map((g) => ({ group: g.name, threads: g.threads.length, suggested: Math.max(1, Math.round((totalThreads * g.acc) / totalAcc)) }));
      return {
        id: 'thread-imbalance',
        kind: 'thread-imbalance',
        score: round(ratio, 2),
        threshold: opt.imbalanceRatio,
        scoreUnit: 'accesses per thread, busiest group over least busy',
        text: `thread group "${hi.name}" makes ${round(ratio, 2)}× the accesses per thread of "${lo.name}" (${hi.threads.length} vs ${lo.threads.length} threads)`,
        object: null,
        threads: [...hi.threads, ...lo.threads],
        fix: {
          id: '',
          kind: 'thread-counts',
          text: `thread counts in proportion to accesses: ${threadCounts.map((c) => `${c.group} ${c.threads} → ${c.suggested}`).join(', ')}`,
          planable: false,
          noPlan: 'the number of threads of each kind is set by the program (a code or launch-option change): a plan places pages and threads, it does not add or remove threads',
          threadCounts,
          predictedSpeedup: null,
          noPrediction: 'the engine replays placements, not a different number of threads: no prediction',
        },
        evidence: Object.fromEntries(per.map((g) => [`accessesPerThread:${g.name}`, round(g.perThread)])),
        code: null,
      };
    }
  }
  return null;
}

interface SampleCodes {
  op: { codes: ArrayLike<number> };
  storeCode: number;
  loadCode: number;
  ev: { codes: ArrayLike<number> };
  pmuCode: Uint8Array;
  offset: ArrayLike<number>;
}

/**
 * Per 64-byte line with PMU samples from two or more threads, at least one a store: the
 * invalidations (a store by a thread after another thread's access to the line, weighted by the
 * store's weight), split into false sharing (the threads' offsets on the line are disjoint) and
 * true sharing (two threads touched the same offset). Score per object as NumaPerf's: the
 * invalidations per ms divided by the threads that touched the object's shared lines.
 */
function cacheLineIssues(
  cols: QueryColumns,
  c: SampleCodes,
  objectOfSample: (i: number, p: number) => number,
  describe: (obj: number) => IssueObject,
  durationMs: number,
  opt: Required<DiagnoseOptions>,
  hitmLines: Set<number> | null,
): Issue[] {
  const rows: number[] = [];
  for (let i = 0; i < cols.sampleCount; i++) {
    if (cols.fault[i] || !c.pmuCode[c.ev.codes[i]!] || cols.page[i]! < 0) continue;
    const o = c.op.codes[i];
    if (o !== c.storeCode && o !== c.loadCode) continue;
    rows.push(i);
  }
  // Page row and line within the page (exact for any address; page addresses exceed 2^53).
  const lineKey = (i: number) => cols.page[i]! * 64 + Math.floor(c.offset[i]! / CACHE_LINE);
  rows.sort((a, b) => lineKey(a) - lineKey(b) || cols.time[a]! - cols.time[b]! || a - b);
  const acc = new Map<string, { obj: number; inval: number; threads: Set<number>; lines: number; stores: number }>();
  for (let k = 0; k < rows.length; ) {
    const key = lineKey(rows[k]!);
    let e = k;
    while (e < rows.length && lineKey(rows[e]!) === key) e++;
    const threads = new Set<number>();
    const offsetsBy = new Map<number, Set<number>>();
    let hasStore = false;
    for (let j = k; j < e; j++) {
      const i = rows[j]!;
      threads.add(cols.thread[i]!);
      if (c.op.codes[i] === c.storeCode) hasStore = true;
      const set = offsetsBy.get(c.offset[i]!) ?? new Set<number>();
      set.add(cols.thread[i]!);
      offsetsBy.set(c.offset[i]!, set);
    }
    if (threads.size >= 2 && hasStore && (hitmLines === null || hitmLines.has(key))) {
      let inval = 0;
      let stores = 0;
      for (let j = k + 1; j < e; j++) {
        const i = rows[j]!;
        if (c.op.codes[i] !== c.storeCode) continue;
        stores++;
        if (cols.thread[rows[j - 1]!] !== cols.thread[i]) inval += cols.weight[i]!;
      }
      // True sharing: some offset is touched by two threads, with a store among the line's samples.
      const truly = [...offsetsBy.values()].some((s) => s.size >= 2);
      const obj = objectOfSample(rows[k]!, cols.page[rows[k]!]!);
      const id = `${truly ? 'true' : 'false'}:${obj}`;
      const a = acc.get(id) ?? { obj, inval: 0, threads: new Set<number>(), lines: 0, stores: 0 };
      a.inval += inval;
      a.lines++;
      a.stores += stores;
      for (const t of threads) a.threads.add(t);
      acc.set(id, a);
    }
    k = e;
  }
  const out: Issue[] = [];
  for (const [id, a] of acc) {
    const truly = id.startsWith('true');
    const score = a.inval / durationMs / a.threads.size;
    if (!(score > opt.cacheLineSharing)) continue;
    const object = describe(a.obj);
    const kind: IssueKind = truly ? 'true-sharing' : 'false-sharing';
    out.push({
      id: `${kind}:${object.allocation >= 0 ? `a${object.allocation}` : `r${object.region}`}`,
      kind,
      score: round(score),
      threshold: opt.cacheLineSharing,
      scoreUnit: 'cache-line invalidations per ms per thread',
      text: `${object.label}: ${a.lines} cache line${a.lines === 1 ? '' : 's'} written and read by ${a.threads.size} threads at ${truly ? 'the same' : 'different'} offsets: ${round(score)} invalidations/ms per thread (> ${opt.cacheLineSharing})`,
      object,
      threads: [...a.threads].sort((x, y) => x - y),
      fix: truly
        ? { id: '', kind: 'none', text: 'true sharing: the threads share the data itself; no layout change removes it (reduce the sharing in the algorithm)', planable: false, noPlan: 'true sharing has no placement fix: the threads share the data itself, on whichever node it is', predictedSpeedup: null, noPrediction: 'no fix to replay' }
        : { id: '', kind: 'padding', text: 'pad or align the fields each thread writes to separate 64-byte lines', planable: false, noPlan: 'padding is a code change (the layout within a cache line): a plan places whole pages, which cannot separate fields on one line', predictedSpeedup: null, noPrediction: 'padding is a layout change within pages: no page placement expresses it, so the engine cannot predict it' },
      evidence: { invalidations: a.inval, lines: a.lines, threads: a.threads.size, storeSamples: a.stores },
      code: null,
    });
  }
  return out.sort((x, y) => y.score - x.score).slice(0, opt.maxPerKind);
}

/** How far above its threshold an issue is (score / threshold): the rank across kinds whose scores have different units. */
export function issueSeverity(issue: Issue): number {
  return issue.threshold > 0 ? issue.score / issue.threshold : issue.score;
}

/** Issues ranked by severity (score over its threshold), highest first. */
export function rankedIssues(d: Diagnosis): Issue[] {
  return d.issues.slice().sort((a, b) => issueSeverity(b) - issueSeverity(a) || a.id.localeCompare(b.id));
}

/** The diagnosis as plain JSON (the CLI's `diagnose --json` and the app's Worker answer): issues ranked, page lists as counts. */
export function diagnosisJson(d: Diagnosis) {
  return {
    durationMs: d.durationMs,
    thresholds: d.options,
    cacheLine: d.cacheLine,
    notes: d.notes,
    unavailable: d.unavailable,
    issues: rankedIssues(d).map((i, k) => ({
      rank: k + 1,
      id: i.id,
      kind: i.kind,
      score: i.score,
      threshold: i.threshold,
      severity: Math.round(issueSeverity(i) * 100) / 100,
      scoreUnit: i.scoreUnit,
      text: i.text,
      site: i.object?.site ?? null,
      stack: i.object?.stack ?? [],
      object: i.object ? { label: i.object.label, allocation: i.object.allocation, region: i.object.region, address: i.object.address, size: i.object.size, pages: i.object.pages.length } : null,
      threads: i.threads,
      fix: {
        id: i.fix.id,
        kind: i.fix.kind,
        text: i.fix.text,
        planable: i.fix.planable,
        noPlan: i.fix.noPlan,
        predictedSpeedup: i.fix.predictedSpeedup,
        noPrediction: i.fix.noPrediction,
        threadCounts: i.fix.threadCounts ?? null,
      },
      evidence: i.evidence,
      code: i.code,
    })),
  };
}

export type DiagnosisJson = ReturnType<typeof diagnosisJson>;
