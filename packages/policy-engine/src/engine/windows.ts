/**
 * ReplayInput from a trace: memory-access samples aggregated into per-window (thread, page)
 * entries, the placement seen at the start, and first-touch owners (docs/engine.md, "Windows").
 *
 * Which samples count: rows with op `load` or `store` and a page (page ≥ 0) whose data source
 * reached memory (`local-dram`, `remote-dram`, `pmem`, `cxl`, `uncached`, or `unknown` when the
 * PMU did not say). Cache hits (`l1`, `lfb`, `l2`, `l3`, `remote-cache`) and `io` load no memory
 * controller and are skipped. Each counted sample stands for `weight` accesses (the sampling
 * period; 0 is read as 1). `fault` rows are first-touch information only. A trace with no counted
 * sample (a recording on a machine without a PMU) throws EngineError `no-access-data`.
 *
 * Memory: besides the trace's own columns, the builder keeps O(pages + threads) arrays and one
 * window's hash table; the output holds one entry per distinct (window, thread, page).
 */
import type { AccessWindow, MachineModel, Placement, ReplayInput } from './contract.js';
import { EngineError } from './errors.js';
import { machineModel, nodeOfCpu } from '../machine/model.js';
import { dictionaryColumn, numericColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';
import { retarget, type RetargetRule } from './retarget.js';

export const PAGE_ROW_BYTES = 4096;
/** Data sources that reach a memory controller (see the module comment). */
export const MEMORY_DATA_SOURCES: readonly string[] = ['local-dram', 'remote-dram', 'pmem', 'cxl', 'uncached', 'unknown'];

export interface ReplayInputOptions {
  /** Model to replay on; default: the trace's recorded machine. A model with other nodes or cpus re-targets (retarget.ts). */
  machine?: MachineModel;
  /** Window length, ms (> 0). */
  windowMs: number;
  /** Rule used when `machine` differs from the recorded one. */
  retargetRule?: RetargetRule;
  /**
   * What to do with a trace that has no access samples (page-fault + procfs recordings): by
   * default EngineError `no-access-data`. `uniform` builds an ESTIMATED input from page placement
   * only: one window over the whole capture in which every thread of the threads table reads
   * every page of the pages table once (accesses unknown → assumed uniform, shared by all
   * threads). Only the *spread* of traffic over nodes means something then (which node is the hot
   * spot, what interleaving would even out); rates and latencies do not. Ignored (with a note)
   * when the trace has access samples.
   */
  accessEstimate?: 'uniform';
}

/** Policies whose decisions do not depend on access rates: the only ones an estimated input can drive. */
export const ESTIMATE_POLICIES: readonly string[] = ['observed', 'first-touch', 'interleave', 'manual'];
/** Most (thread, page) entries an estimated input may have. */
export const MAX_ESTIMATE_ENTRIES = 20_000_000;

function sameTopology(a: MachineModel, b: MachineModel): boolean {
  if (a.nodeCount !== b.nodeCount || a.nodeIds.some((id, i) => id !== b.nodeIds[i])) return false;
  return a.nodeCpus.every((cpus, i) => cpus.length === b.nodeCpus[i]!.length && cpus.every((c, k) => c === b.nodeCpus[i]![k]));
}

export function buildReplayInput(trace: Trace, options: ReplayInputOptions): ReplayInput {
  if (!(options.windowMs > 0) || !Number.isFinite(options.windowMs)) {
    throw new EngineError('bad-option', `window length must be a positive number of milliseconds, got ${options.windowMs}`);
  }
  const recorded = machineModel(trace.manifest.machine);
  if (options.machine && !sameTopology(options.machine, recorded)) {
    const input = buildReplayInput(trace, { windowMs: options.windowMs, accessEstimate: options.accessEstimate });
    return retarget(input, options.machine, options.retargetRule ?? 'modulo');
  }
  const machine = options.machine ?? recorded;
  const n = machine.nodeCount;
  const notes: string[] = [];
  let windowUs = options.windowMs * 1000;

  const { samples, pages, threads } = trace.tables;
  const sampleRows = samples.numRows;
  const time = numericColumn<Uint32Array>(samples, 'time_us');
  const sThread = numericColumn<Uint32Array>(samples, 'thread');
  const sCpu = numericColumn<Int16Array>(samples, 'cpu');
  const sPage = numericColumn<Int32Array>(samples, 'page');
  const weight = numericColumn<Uint32Array>(samples, 'weight');
  const op = dictionaryColumn(samples, 'op');
  const ds = dictionaryColumn(samples, 'data_source');
  const LOAD = op.values.indexOf('load');
  const STORE = op.values.indexOf('store');
  const FAULT = op.values.indexOf('fault');
  const memorySource = new Uint8Array(ds.values.length);
  ds.values.forEach((v, i) => (memorySource[i] = MEMORY_DATA_SOURCES.includes(v) || !DS_KNOWN.has(v) ? 1 : 0));

  const pageCount = pages.numRows;
  let threadCount = threads.numRows;
  let maxTime = 0;
  let accessRows = 0;
  let cacheRows = 0;
  let faultRows = 0;
  let sorted = true;
  let prevTime = 0;
  for (let i = 0; i < sampleRows; i++) {
    const o = op.codes[i]!;
    const t = time[i]!;
    if (t > maxTime) maxTime = t;
    if (sThread[i]! >= threadCount) threadCount = sThread[i]! + 1;
    if (o === FAULT) faultRows++;
    if ((o !== LOAD && o !== STORE) || sPage[i]! < 0) continue;
    if (!memorySource[ds.codes[i]!]) {
      cacheRows++;
      continue;
    }
    accessRows++;
    if (t < prevTime) sorted = false;
    prevTime = t;
  }
  const estimated = accessRows === 0 && options.accessEstimate === 'uniform';
  if (accessRows > 0 && options.accessEstimate) {
    notes.push(`access estimate "${options.accessEstimate}" not used: the trace has ${accessRows} memory-access samples`);
  }
  if (accessRows === 0 && !estimated) {
    const used = trace.manifest.capture.sources.filter((s) => s.status === 'used').map((s) => s.id);
    throw new EngineError(
      'no-access-data',
      `This trace has no memory-access samples to replay: ${faultRows} page-fault rows, ${cacheRows} cache-hit samples, ` +
        `0 load/store samples that reached memory (sources used: ${used.join(', ') || 'none'}). ` +
        'Page faults say where pages were first touched, not how often they are accessed, so the engine cannot predict traffic. ' +
        'Record on a machine with IBS or PEBS (numascope probe tells which), or import a perf mem recording; ' +
        'or ask for an estimate from page placement alone (CLI --access-estimate uniform), which assumes every thread accesses every page equally.',
    );
  }
  if (cacheRows > 0) notes.push(`${cacheRows} load/store samples that hit a cache (l1/lfb/l2/l3/remote-cache/io) load no memory controller and were skipped`);

  const duration = Math.max(trace.manifest.capture.durationUs, maxTime + 1);
  if (estimated) windowUs = Math.max(1, duration);
  const windowCount = Math.max(1, Math.ceil(duration / windowUs));

  // Rows of each window: contiguous when the counted rows are in time order, else a counting sort.
  const windowStart = new Int32Array(windowCount + 1);
  let order: Int32Array | null = null;
  // counted[op·dsCount + ds] = 1 for a load/store whose data source reached memory.
  const dsCount = ds.values.length;
  const counted = new Uint8Array(op.values.length * dsCount);
  for (let o = 0; o < op.values.length; o++) {
    for (let d = 0; d < dsCount; d++) counted[o * dsCount + d] = (o === LOAD || o === STORE) && memorySource[d] === 1 ? 1 : 0;
  }
  const opCodes = op.codes;
  const dsCodes = ds.codes;
  const isAccess = (i: number) => counted[opCodes[i]! * dsCount + dsCodes[i]!] === 1 && sPage[i]! >= 0;
  const windowOf = (t: number) => Math.min(windowCount - 1, Math.floor(t / windowUs));
  for (let i = 0; i < sampleRows; i++) if (isAccess(i)) windowStart[windowOf(time[i]!) + 1]!++;
  for (let w = 0; w < windowCount; w++) windowStart[w + 1]! += windowStart[w]!;
  if (!sorted) {
    order = new Int32Array(accessRows);
    const fill = windowStart.slice(0, windowCount);
    for (let i = 0; i < sampleRows; i++) if (isAccess(i)) order[fill[windowOf(time[i]!)]!++] = i;
  }

  // Per-window aggregation in an open-addressing hash table keyed by page·threadCount + thread.
  const pageFirstThread = new Int32Array(pageCount).fill(-1);
  const threadFirstCpu = new Int32Array(threadCount).fill(-1);
  let capacity = 1024;
  let keys = new Float64Array(capacity).fill(-1);
  let sumLoads = new Float64Array(capacity);
  let sumStores = new Float64Array(capacity);
  const windows: AccessWindow[] = [];
  let cursor = 0; // next row when rows are in time order
  for (let w = 0; w < windowCount; w++) {
    const rowsInWindow = windowStart[w + 1]! - windowStart[w]!;
    while (capacity < rowsInWindow * 2) capacity *= 2;
    if (keys.length !== capacity) {
      keys = new Float64Array(capacity).fill(-1);
      sumLoads = new Float64Array(capacity);
      sumStores = new Float64Array(capacity);
    }
    const mask = capacity - 1;
    const used = new Int32Array(rowsInWindow);
    let distinct = 0;
    let seen = 0;
    while (seen < rowsInWindow) {
      let i: number;
      if (order) i = order[windowStart[w]! + seen]!;
      else {
        i = cursor++;
        if (!isAccess(i)) continue;
      }
      seen++;
      const thread = sThread[i]!;
      const page = sPage[i]!;
      const key = page * threadCount + thread;
      let slot = hashSlot(page, thread, mask);
      while (keys[slot] !== -1 && keys[slot] !== key) slot = (slot + 1) & mask;
      if (keys[slot] === -1) {
        keys[slot] = key;
        used[distinct++] = slot;
      }
      const a = weight[i]! > 0 ? weight[i]! : 1;
      if (op.codes[i] === STORE) sumStores[slot]! += a;
      else sumLoads[slot]! += a;
      if (pageFirstThread[page] === -1) pageFirstThread[page] = thread;
      if (threadFirstCpu[thread] === -1) threadFirstCpu[thread] = sCpu[i]!;
    }
    const sortedKeys = new Float64Array(distinct);
    for (let k = 0; k < distinct; k++) sortedKeys[k] = keys[used[k]!]!;
    sortedKeys.sort();
    const win: AccessWindow = {
      index: w,
      startUs: w * windowUs,
      endUs: Math.min((w + 1) * windowUs, duration),
      sampleCount: rowsInWindow,
      thread: new Int32Array(distinct),
      page: new Int32Array(distinct),
      loads: new Float64Array(distinct),
      stores: new Float64Array(distinct),
    };
    for (let k = 0; k < distinct; k++) {
      const key = sortedKeys[k]!;
      const page = Math.floor(key / threadCount);
      const thread = key - page * threadCount;
      let slot = hashSlot(page, thread, mask);
      while (keys[slot] !== key) slot = (slot + 1) & mask;
      win.thread[k] = thread;
      win.page[k] = page;
      win.loads[k] = sumLoads[slot]!;
      win.stores[k] = sumStores[slot]!;
    }
    for (let k = 0; k < distinct; k++) {
      const slot = used[k]!;
      keys[slot] = -1;
      sumLoads[slot] = 0;
      sumStores[slot] = 0;
    }
    windows.push(win);
  }
  if (estimated) {
    if (threadCount * pageCount > MAX_ESTIMATE_ENTRIES) {
      throw new EngineError('bad-option', `access estimate "uniform": ${threadCount} threads × ${pageCount} pages exceeds ${MAX_ESTIMATE_ENTRIES} entries`);
    }
    if (threadCount === 0 || pageCount === 0) throw new EngineError('empty-trace', 'access estimate "uniform": the trace has no threads or no pages');
    const entries = threadCount * pageCount;
    const win: AccessWindow = {
      index: 0,
      startUs: 0,
      endUs: duration,
      sampleCount: 0,
      thread: new Int32Array(entries),
      page: new Int32Array(entries),
      loads: new Float64Array(entries).fill(1),
      stores: new Float64Array(entries),
    };
    for (let p = 0, k = 0; p < pageCount; p++) {
      for (let t = 0; t < threadCount; t++, k++) {
        win.thread[k] = t;
        win.page[k] = p;
      }
    }
    windows.length = 0;
    windows.push(win);
    notes.push(
      `ESTIMATED: the trace has no memory-access samples (${faultRows} page-fault rows); accesses were assumed uniform: ` +
        `each of the ${threadCount} threads reads each of the ${pageCount} pages once, in one window over the whole capture. ` +
        'Page placement and thread placement are measured; the traffic split over nodes follows from the assumption; rates and latencies are not meaningful.',
    );
  }
  // Page-fault rows (first-touch) also name a thread and cpu for pages and threads.
  const faultThread = new Int32Array(pageCount).fill(-1);
  const faultCpu = new Int32Array(pageCount).fill(-1);
  if (faultRows > 0) {
    for (let i = 0; i < sampleRows; i++) {
      if (op.codes[i] !== FAULT) continue;
      const page = sPage[i]!;
      if (page >= 0 && faultThread[page] === -1) {
        faultThread[page] = sThread[i]!;
        faultCpu[page] = sCpu[i]!;
      }
      if (threadFirstCpu[sThread[i]!] === -1) threadFirstCpu[sThread[i]!] = sCpu[i]!;
    }
  }

  // Threads: first recorded placement, else the first sample's cpu, else node 0.
  const nodeIndexOfId = new Map(machine.nodeIds.map((id, i) => [id, i]));
  const threadNode = new Int16Array(threadCount).fill(-1);
  const tp = trace.tables.thread_placements;
  const tpTime = numericColumn<Uint32Array>(tp, 'time_us');
  const tpThread = numericColumn<Uint32Array>(tp, 'thread');
  const tpCpu = numericColumn<Int16Array>(tp, 'cpu');
  const tpNode = numericColumn<Int8Array>(tp, 'node');
  const tpOrder = Array.from({ length: tp.numRows }, (_, i) => i).sort((a, b) => tpTime[a]! - tpTime[b]! || a - b);
  const placementNode = (row: number): number => {
    const byId = nodeIndexOfId.get(tpNode[row]!);
    return byId !== undefined && tpNode[row]! >= 0 ? byId : nodeOfCpu(machine, tpCpu[row]!);
  };
  for (const row of tpOrder) {
    const t = tpThread[row]!;
    if (t < threadCount && threadNode[t] === -1) threadNode[t] = placementNode(row);
  }
  let threadsDefaulted = 0;
  for (let t = 0; t < threadCount; t++) {
    if (threadNode[t] !== -1) continue;
    const fromCpu = threadFirstCpu[t]! >= 0 ? nodeOfCpu(machine, threadFirstCpu[t]!) : -1;
    if (fromCpu >= 0) threadNode[t] = fromCpu;
    else {
      threadNode[t] = 0;
      threadsDefaulted++;
    }
  }
  if (threadsDefaulted > 0) notes.push(`${threadsDefaulted} threads have no recorded placement or cpu: placed on node index 0`);

  // Recorded thread placement per window: the last observation before the window ends.
  const observedThreadNode: Int16Array[] = [];
  {
    const current = threadNode.slice();
    let k = 0;
    for (let w = 0; w < windowCount; w++) {
      const end = (w + 1) * windowUs;
      while (k < tpOrder.length && tpTime[tpOrder[k]!]! < end) {
        const row = tpOrder[k++]!;
        const node = placementNode(row);
        if (tpThread[row]! < threadCount && node >= 0) current[tpThread[row]!] = node;
      }
      observedThreadNode.push(current.slice());
    }
  }
  // An estimate has one window over the whole capture: threads start where they were last seen
  // (a thread pinned after it started counts on its pinned node, as the plan will find it).
  if (estimated) threadNode.set(observedThreadNode[0]!);

  // Pages: pages.node, else the first-touch cpu's node, else the first-touch/first-access thread's node.
  const pNode = numericColumn<Int8Array>(pages, 'node');
  const pFtThread = numericColumn<Int32Array>(pages, 'first_touch_thread');
  const pFtCpu = numericColumn<Int16Array>(pages, 'first_touch_cpu');
  const pageNode = new Int16Array(pageCount);
  const firstTouchThread = new Int32Array(pageCount);
  let pagesFromThread = 0;
  let pagesDefaulted = 0;
  for (let p = 0; p < pageCount; p++) {
    const owner = pFtThread[p]! >= 0 ? pFtThread[p]! : faultThread[p]! >= 0 ? faultThread[p]! : pageFirstThread[p]!;
    firstTouchThread[p] = owner;
    const byId = pNode[p]! >= 0 ? nodeIndexOfId.get(pNode[p]!) : undefined;
    if (byId !== undefined) {
      pageNode[p] = byId;
      continue;
    }
    const cpu = pFtCpu[p]! >= 0 ? pFtCpu[p]! : faultCpu[p]!;
    const fromCpu = cpu >= 0 ? nodeOfCpu(machine, cpu) : -1;
    if (fromCpu >= 0) pageNode[p] = fromCpu;
    else if (owner >= 0 && owner < threadCount) {
      pageNode[p] = threadNode[owner]!;
      pagesFromThread++;
    } else {
      pageNode[p] = 0;
      pagesDefaulted++;
    }
  }
  if (pagesFromThread > 0) notes.push(`${pagesFromThread} pages have no recorded node: placed on their first-touch (or first-access) thread's node`);
  if (pagesDefaulted > 0) notes.push(`${pagesDefaulted} pages have no recorded node and no known toucher: placed on node index 0`);
  if (n === 1) notes.push('one-node machine: every access is local; policies cannot differ');

  const initial: Placement = { threadNode, pageNode, replicated: new Uint8Array(pageCount) };
  const threadTid = numericColumn<Int32Array>(threads, 'tid');
  const tids = new Int32Array(threadCount).fill(-1);
  tids.set(threadTid.subarray(0, Math.min(threadTid.length, threadCount)));
  return {
    machine,
    threadCount,
    pageCount,
    pageBytes: PAGE_ROW_BYTES,
    windowUs,
    ...(estimated ? { estimate: 'uniform' as const } : {}),
    windows,
    initial,
    firstTouchThread,
    counters: countersOf(trace),
    pageAddress: numericColumn<BigUint64Array>(pages, 'address'),
    threadTid: tids,
    observedThreadNode,
    notes,
  };
}

const DS_KNOWN = new Set(['l1', 'lfb', 'l2', 'l3', 'local-dram', 'remote-dram', 'remote-cache', 'pmem', 'cxl', 'io', 'uncached', 'unknown']);

function hashSlot(page: number, thread: number, mask: number): number {
  let h = Math.imul(page, 0x9e3779b1) ^ Math.imul(thread + 1, 0x85ebca77);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 13;
  return h & mask;
}

const INSTRUCTION_COUNTERS = ['instructions', 'inst_retired.any'];
const CYCLE_COUNTERS = ['cycles', 'cpu-cycles', 'cpu_clk_unhalted.thread'];
const L3_MISS_COUNTERS = ['l3-misses', 'l3_misses', 'llc-load-misses', 'llc-misses', 'longest_lat_cache.miss'];

/** Instruction, cycle and L3-miss totals from the counters table (cumulative: last − first per scope), or null. */
function countersOf(trace: Trace): ReplayInput['counters'] {
  const table = trace.tables.counters;
  if (table.numRows === 0) return null;
  const name = dictionaryColumn(table, 'counter');
  const scope = dictionaryColumn(table, 'scope');
  const scopeId = numericColumn<Int32Array>(table, 'scope_id');
  const value = numericColumn<Float64Array>(table, 'value');
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  const kindOf = (s: string) =>
    INSTRUCTION_COUNTERS.includes(s.toLowerCase()) ? 'i' : CYCLE_COUNTERS.includes(s.toLowerCase()) ? 'c' : L3_MISS_COUNTERS.includes(s.toLowerCase()) ? 'l' : null;
  for (let i = 0; i < table.numRows; i++) {
    const kind = kindOf(name.values[name.codes[i]!]!);
    if (!kind) continue;
    const key = `${kind}|${scope.codes[i]}|${scopeId[i]}`;
    if (!first.has(key)) first.set(key, value[i]!);
    last.set(key, value[i]!);
  }
  const total = { i: 0, c: 0, l: 0 };
  const seen = { i: false, c: false, l: false };
  for (const [key, v] of last) {
    const kind = key[0] as 'i' | 'c' | 'l';
    total[kind] += v - first.get(key)!;
    seen[kind] = true;
  }
  if (!seen.i || !seen.c || !seen.l) return null;
  return { instructions: total.i, cycles: total.c, l3Misses: total.l };
}
