/**
 * ReplayInput from a trace: memory-access samples aggregated into per-window (thread, page)
 * entries, the placement seen at the start, and first-touch owners (docs/engine.md, "Windows").
 *
 * Which samples count: rows with op `load` or `store` and a page (page ≥ 0) whose data source
 * reached memory (`local-dram`, `remote-dram`, `pmem`, `cxl`, `uncached`, or `unknown` when the
 * PMU did not say). Cache hits (`l1`, `lfb`, `l2`, `l3`, `remote-cache`) and `io` load no memory
 * controller and are skipped. Each counted sample stands for `weight` accesses (the sampling
 * period; 0 is read as 1). `fault` rows are first-touch information only. A trace with no counted
 * sample (a recording on a machine without a PMU) throws EngineError `no-access-data`, unless an
 * access estimate is asked for (`accessEstimate`: `uniform`, or `auto`: the estimate exactly when
 * there is no counted sample).
 *
 * NUMA hinting faults (event `access-fault`, op load/store: accesses the kernel's NUMA-balancing
 * scanner caught, recorded without a PMU) count as access samples when they are the only ones;
 * the input then says `accessSource: 'hinting-faults'` (which thread touched which page, about
 * once per page per scan pass: shares are meaningful, rates are not). Next to PMU samples they are
 * skipped (a note says how many), so that the two kinds are never added up.
 *
 * Memory: besides the trace's own columns, the input keeps O(pages + threads + windows) arrays.
 * Windows are built on demand (TraceWindows): radix-sorted and merged from the window's rows with
 * scratch sized to the largest window, and kept only while a bounded cache has room
 * (ReplayInputOptions.cacheEntries). A trace whose rows are not in time order also keeps one
 * 4-byte row index per access sample.
 */
import { windowsOf, type AccessWindow, type FeasibilityReport, type MachineModel, type Placement, type ReplayInput, type WindowInfo, type WindowLoop, type WindowSource, type WindowTiming } from '../model/contract.js';
export type { FeasibilityReport } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { nodeOfCpu } from '../machine/model.js';
import { dictionaryColumn, numericColumn, timeColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';
import { retarget, type RetargetRule } from './retarget.js';
import { accessMatrix, addStore, demandOf, latencyAt, latencyParts, loadShiftNs, MEMORY_STALL_SHARE, type Demand, type LatencyParts, type LatencyScales } from './simulate.js';
import { trafficModel } from '../machine/traffic.js';

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
   * when the trace has access samples. `auto`: the same estimate when the trace has no access
   * samples, the samples otherwise (no note): what the CLI and the web app do by default.
   */
  accessEstimate?: AccessEstimateOption;
  /**
   * Most window entries ((thread, page) pairs, 24 bytes each) kept built in memory; windows past
   * that are rebuilt from the trace's columns each time they are asked for. Default
   * WINDOW_CACHE_ENTRIES. 0 keeps none (one window at a time).
   */
  cacheEntries?: number;
  /**
   * Replay only part of the recording: the windows that overlap [startUs, endUs) (µs since the
   * capture start, half-open). Window boundaries stay where they are for the whole trace (window
   * w still covers [w·windowMs, (w+1)·windowMs)), so the replayed span is the range widened to
   * whole windows (ReplayInput.timeRange says which). Threads start where they were last observed
   * before the first kept window; pages start where the trace has them (as for the whole trace).
   * A range that overlaps no window throws EngineError `bad-option`. An access estimate has one
   * window over the whole capture, which every range overlaps.
   */
  timeRangeUs?: TimeRangeUs;
  /**
   * What to assume about the access rate when the trace cannot say (access samples that are NUMA
   * hinting faults: which thread touched which page, not how often). `typical` (default): a
   * memory-bound code's, stalled MEMORY_STALL_SHARE of the time with rule MLP1's accesses in
   * flight. `bandwidth-bound`: a streaming code's (STREAM, a large copy or scan), which the user
   * knows and says: each thread keeps its core's outstanding-miss limit (rule MLP0) in flight and
   * is stalled STALL_SHARE_MAX of the time. Ignored, with a note, when the trace's rates are
   * measured (counters, PMU samples) or the input is an estimate from page placement.
   */
  accessRates?: AccessRatesOption;
}

/** ReplayInputOptions.accessRates. */
export type AccessRatesOption = 'typical' | 'bandwidth-bound';

/** ReplayInputOptions.accessEstimate. */
export type AccessEstimateOption = 'uniform' | 'auto';

/**
 * Sample rows the replay counts as memory accesses (load/store rows with a page whose data source
 * reached memory, hinting faults included): 0 means the trace can only be analysed with an access
 * estimate. One pass over three columns, no allocation per row.
 */
export function accessSampleRows(trace: Trace): number {
  const samples = trace.tables.samples;
  const op = dictionaryColumn(samples, 'op');
  const ds = dictionaryColumn(samples, 'data_source');
  const page = numericColumn<Int32Array>(samples, 'page');
  const counted = countedTable(op.values, ds.values);
  const dsCount = ds.values.length;
  let n = 0;
  for (let i = 0; i < page.length; i++) if (page[i]! >= 0 && counted[op.codes[i]! * dsCount + ds.codes[i]!]) n++;
  return n;
}

/** A half-open time range, µs since the capture start. */
export interface TimeRangeUs {
  startUs: number;
  endUs: number;
}

/** Default window cache: 2 Mi entries, 48 MiB (docs/engine.md, "Memory"). */
export const WINDOW_CACHE_ENTRIES = 1 << 21;

/** Most (thread, page) entries an estimated input may have. */
export const MAX_ESTIMATE_ENTRIES = 20_000_000;

function sameTopology(a: MachineModel, b: MachineModel): boolean {
  if (a.nodeCount !== b.nodeCount || a.nodeIds.some((id, i) => id !== b.nodeIds[i])) return false;
  return a.nodeCpus.every((cpus, i) => cpus.length === b.nodeCpus[i]!.length && cpus.every((c, k) => c === b.nodeCpus[i]![k]));
}

/**
 * The replay input of a trace recorded on the machine `recorded` (its model, built by the caller:
 * analyze/replay-input.ts `buildReplayInput` builds it from the trace's manifest), replayed on
 * `options.machine` (re-targeted when its topology differs) or on `recorded`.
 */
/** Most windows one replay cuts a capture into: a 71-minute capture (all version 3 held) at the default 100 ms has 42,950. */
export const MAX_WINDOWS = 50_000;

export function replayInputFor(trace: Trace, recorded: MachineModel, options: ReplayInputOptions): ReplayInput {
  if (!(options.windowMs > 0) || !Number.isFinite(options.windowMs)) {
    throw new EngineError('bad-option', `window length must be a positive number of milliseconds, got ${options.windowMs}`);
  }
  if (options.machine && !sameTopology(options.machine, recorded)) {
    const input = replayInputFor(trace, recorded, { windowMs: options.windowMs, accessEstimate: options.accessEstimate, cacheEntries: options.cacheEntries, timeRangeUs: options.timeRangeUs, accessRates: options.accessRates });
    return retarget(input, options.machine, options.retargetRule ?? 'modulo');
  }
  const machine = options.machine ?? recorded;
  const n = machine.nodeCount;
  const notes: string[] = [];
  let windowUs = options.windowMs * 1000;
  // A long capture (trace format v4 has no 71-minute cap) is cut into at most MAX_WINDOWS
  // windows: every per-window array and object stays bounded whatever the manifest says.
  const span = Math.max(1, trace.manifest.capture.durationUs);
  if (span / windowUs > MAX_WINDOWS) {
    const widened = Math.ceil(span / MAX_WINDOWS / 1000) * 1000;
    notes.push(`windows of ${widened / 1000} ms instead of ${options.windowMs} ms: a capture of ${(span / 3.6e9).toFixed(1)} h is cut into at most ${MAX_WINDOWS} windows`);
    windowUs = widened;
  }

  const { pages, threads } = trace.tables;
  const scan = scanSamples(trace, windowUs);
  const { sampleRows, time, threadCount, pageCount, faultRows, accessRows, latSum, latWeight } = scan;
  const { estimated, hintingOnly } = accessSampleNotes(trace, scan, options, windowUs, notes);

  const duration = Math.max(trace.manifest.capture.durationUs, scan.maxTime + 1);
  if (estimated) windowUs = Math.max(1, duration);
  const windowCount = Math.max(1, Math.ceil(duration / windowUs));
  const { counted, dsCount, opCodes, dsCodes, evCodes, skipEv, STORE } = scan;
  const sThread = scan.sThread;
  const sPage = scan.sPage;
  const isAccess = (i: number) => counted[opCodes[i]! * dsCount + dsCodes[i]!] === 1 && sPage[i]! >= 0 && evCodes[i] !== skipEv;
  const windowOf = (t: number) => Math.min(windowCount - 1, Math.floor(t / windowUs));

  // The rows of each window. In time order (what the collector writes) window w is the row range
  // [rowBound[w], rowBound[w+1]) with its non-access rows skipped: no per-sample index is kept.
  // Out of order, a counting sort by window builds one (4 bytes per access sample).
  const windowStart = new Int32Array(windowCount + 1);
  let maxRows = 0;
  for (let w = 0; w < windowCount; w++) {
    const rows = w < scan.perWindow.length ? scan.perWindow[w]! : 0;
    maxRows = Math.max(maxRows, rows);
    windowStart[w + 1] = windowStart[w]! + rows;
  }
  let rowBound: Int32Array | null = null;
  let order: Int32Array | null = null;
  if (scan.sorted) {
    rowBound = new Int32Array(windowCount + 1).fill(sampleRows);
    rowBound.set(scan.firstRow.subarray(0, Math.min(scan.lastWindow + 1, windowCount)));
  } else {
    order = new Int32Array(accessRows);
    const fill = windowStart.slice(0, windowCount);
    for (let i = 0; i < sampleRows; i++) if (isAccess(i)) order[fill[windowOf(time[i]!)]!++] = i;
  }

  const infos: WindowInfo[] = Array.from({ length: windowCount }, (_, w) => ({
    index: w,
    startUs: w * windowUs,
    endUs: Math.min((w + 1) * windowUs, duration),
    sampleCount: windowStart[w + 1]! - windowStart[w]!,
  }));
  const aggregate = windowAggregator({
    threadCount,
    pageCount,
    maxRows,
    store: STORE,
    counted,
    dsCount,
    opCodes,
    dsCodes,
    evCodes,
    skipEv,
    thread: sThread,
    page: sPage,
    weight: scan.weight,
    rowBound,
    order,
    windowStart,
  });
  // Each window, once built, gets its observed → idle timing (observedTiming, below): it needs the
  // observed placement, which is known by the time the first window is asked for.
  let timing: ((win: AccessWindow) => AccessWindow) | null = null;
  let feasibility: FeasibilityReport | undefined;
  const matrices = matrixScanner({ store: STORE, counted, dsCount, opCodes, dsCodes, evCodes, skipEv, thread: sThread, page: sPage, weight: scan.weight, rowBound, order, windowStart });
  let windows: WindowSource = new TraceWindows(
    infos,
    (w) => {
      const win = aggregate(infos[w]!);
      return timing ? timing(win) : win;
    },
    options.cacheEntries ?? WINDOW_CACHE_ENTRIES,
    matrices,
  );
  if (estimated) windows = uniformEstimate(trace, threadCount, pageCount, duration, faultRows, options, notes);
  const faults = faultPlacement(scan);
  const { threadNode, observedThreadNode } = threadPlacement(trace, machine, scan, windowCount, windowUs, notes);
  // An estimate has one window over the whole capture: threads start where they were last seen
  // (a thread pinned after it started counts on its pinned node, as the plan will find it).
  if (estimated) threadNode.set(observedThreadNode[0]!);
  const placed = pagePlacement(trace, machine, threadCount, scan.pageFirstThread, faults, threadNode, notes);
  if (n === 1) notes.push('one-node machine: every access is local; policies cannot differ');

  const { pageNode } = placed;
  const initial: Placement = { threadNode, pageNode, replicated: new Uint8Array(pageCount) };
  const counters = countersOf(trace);
  const bandwidthBound = options.accessRates === 'bandwidth-bound';
  if (!estimated) {
    const clockGHz = trafficModel(machine).clockGHz.value;
    const stallSource: StallShareSource = hintingOnly ? 'default' : counters && counters.cycles > 0 && clockGHz ? 'counters' : 'samples';
    if (bandwidthBound && stallSource !== 'default') {
      notes.push(`access rates "bandwidth-bound" not used: the trace's rates come from its ${stallSource === 'counters' ? 'counters' : 'access samples'}`);
    }
    const observed: Placement = { threadNode, pageNode, replicated: new Uint8Array(pageCount) };
    const report = emptyFeasibility();
    feasibility = report;
    const seen = new Uint8Array(threadCount);
    const how = (w: number, accessScale: number | null) => {
      observed.threadNode = observedThreadNode[w] ?? threadNode;
      return {
        source: stallSource,
        pmuLatencyNs: clockGHz && latWeight[w]! > 0 ? latSum[w]! / latWeight[w]! / clockGHz : null,
        missesPerThreadNs: stallSource === 'counters' ? (counters!.l3Misses * clockGHz!) / counters!.cycles : null,
        accessScale,
        bandwidthBound: stallSource === 'default' && bandwidthBound,
      };
    };
    // Hinting faults: one access scale for the whole recording, set by its busiest window.
    let scale: number | null = null;
    if (stallSource === 'default') {
      let busiest = 0;
      for (let w = 1; w < windowCount; w++) if (infos[w]!.sampleCount > infos[busiest]!.sampleCount) busiest = w;
      scale = observedTiming(machine, aggregate(infos[busiest]!), observed, seen, how(busiest, null)).accessScale ?? 1;
    }
    // Set on the built window (in observedTiming's key order) rather than spread into a copy;
    // computed once per window (a window built again gets the same fields without the pass).
    const timingOf = new Array<Partial<ObservedTiming> | undefined>(windowCount);
    timing = (win) => {
      const t = (timingOf[win.index] ??= observedTiming(machine, win, observed, seen, how(win.index, scale), report));
      if (t.loop !== undefined) win.loop = t.loop;
      if (t.accessScale !== undefined) win.accessScale = t.accessScale;
      return win;
    };
    notes.push(observedTimingNote(machine, stallSource, clockGHz !== null && latWeight.some((v) => v > 0), stallSource === 'default' && bandwidthBound));
  } else if (bandwidthBound) {
    notes.push('access rates "bandwidth-bound" not used: an estimate from page placement has no rates to scale');
  }
  const threadTid = numericColumn<Int32Array>(threads, 'tid');
  const tids = new Int32Array(threadCount).fill(-1);
  tids.set(threadTid.subarray(0, Math.min(threadTid.length, threadCount)));
  const whole: ReplayInput = {
    machine,
    threadCount,
    pageCount,
    pageBytes: PAGE_ROW_BYTES,
    windowUs,
    ...(estimated ? { estimate: 'uniform' as const } : {}),
    ...(hintingOnly ? { accessSource: 'hinting-faults' as const } : {}),
    windows,
    initial,
    firstTouchThread: placed.firstTouchThread,
    firstTouchNode: placed.firstTouchNode,
    pageFirstUs: placed.pageFirstUs,
    counters,
    pageAddress: numericColumn<BigUint64Array>(pages, 'address'),
    threadTid: tids,
    observedThreadNode,
    notes,
    pagesWithRecordedNode: placed.pagesRecorded,
    ...(feasibility ? { feasibility } : {}),
  };
  return options.timeRangeUs ? restrictToTimeRange(whole, options.timeRangeUs) : whole;
}

/** replayInputFor, phase 1: one pass over the sample rows (counts, time order, first accesses). */
function scanSamples(trace: Trace, windowUs: number) {
  const { samples, pages, threads } = trace.tables;
  const sampleRows = samples.numRows;
  const time = timeColumn(samples, 'time_us');
  const sThread = numericColumn<Uint32Array>(samples, 'thread');
  const sCpu = numericColumn<Int16Array>(samples, 'cpu');
  const sPage = numericColumn<Int32Array>(samples, 'page');
  const weight = numericColumn<Uint32Array>(samples, 'weight');
  const latencyCycles = numericColumn<Uint32Array>(samples, 'latency_cycles');
  const op = dictionaryColumn(samples, 'op');
  const ds = dictionaryColumn(samples, 'data_source');
  const ev = dictionaryColumn(samples, 'event');
  const evCodes = ev.codes;
  const HINT = ev.values.indexOf('access-fault');
  const LOAD = op.values.indexOf('load');
  const STORE = op.values.indexOf('store');
  const FAULT = op.values.indexOf('fault');
  const memorySource = new Uint8Array(ds.values.length);
  ds.values.forEach((v, i) => (memorySource[i] = MEMORY_DATA_SOURCES.includes(v) || !DS_KNOWN.has(v) ? 1 : 0));

  const pageCount = pages.numRows;
  let threadCount = threads.numRows;
  for (let i = 0; i < sampleRows; i++) if (sThread[i]! >= threadCount) threadCount = sThread[i]! + 1;
  // counted[op·dsCount + ds] = 1 for a load/store whose data source reached memory.
  const dsCount = ds.values.length;
  const counted = countedTable(op.values, ds.values);
  const opCodes = op.codes;
  const dsCodes = ds.codes;
  // Hinting-fault rows are skipped when PMU access samples exist (see the module comment).
  const hinting = HINT >= 0 ? hintingFaultStats(trace) : null;
  const skipEv = hinting && hinting.otherAccessRows > 0 ? HINT : -1;
  let hintRows = 0;
  let hintSkipped = 0;
  // One pass over the rows: counts, time order, and the earliest access of every page and thread
  // (first-access thread of a page, first cpu of a thread: fallbacks for placement below).
  // Float64: times pass 2^32 µs in a capture longer than 71 minutes (trace format v4).
  const pageFirstTime = new Float64Array(pageCount).fill(NEVER);
  const pageFirstThread = new Int32Array(pageCount).fill(-1);
  const threadFirstTime = new Float64Array(threadCount).fill(NEVER);
  const threadFirstCpu = new Int32Array(threadCount).fill(-1);
  let maxTime = 0;
  let accessRows = 0;
  let cacheRows = 0;
  let faultRows = 0;
  let sorted = true;
  let prevTime = 0;
  // Access rows per window (index floor(t / windowUs); every time is below the duration, so no
  // index passes the last window), and while the rows are in time order the first row of each.
  let perWindow = new Int32Array(Math.max(1, Math.ceil(trace.manifest.capture.durationUs / windowUs) + 1));
  let firstRow = new Int32Array(perWindow.length);
  // PMU load latencies (cycles × weight, and weights) per window, for the observed → idle conversion.
  let latSum = new Float64Array(perWindow.length);
  let latWeight = new Float64Array(perWindow.length);
  let lastWindow = -1;
  for (let i = 0; i < sampleRows; i++) {
    const o = opCodes[i]!;
    const t = time[i]!;
    if (t > maxTime) maxTime = t;
    if (o === FAULT) faultRows++;
    const page = sPage[i]!;
    if ((o !== LOAD && o !== STORE) || page < 0) continue;
    if (!memorySource[dsCodes[i]!]) {
      cacheRows++;
      continue;
    }
    if (evCodes[i] === HINT) {
      if (HINT === skipEv) {
        hintSkipped++;
        continue;
      }
      hintRows++;
    }
    accessRows++;
    if (t < prevTime) sorted = false;
    prevTime = t;
    const w = Math.floor(t / windowUs);
    if (w >= perWindow.length) {
      const size = Math.max(w + 1, perWindow.length * 2);
      const grown = new Int32Array(size);
      grown.set(perWindow);
      perWindow = grown;
      const rows = new Int32Array(size);
      rows.set(firstRow);
      firstRow = rows;
      const ls = new Float64Array(size);
      ls.set(latSum);
      latSum = ls;
      const lw = new Float64Array(size);
      lw.set(latWeight);
      latWeight = lw;
    }
    perWindow[w]!++;
    const lat = latencyCycles[i]!;
    if (lat > 0 && o === LOAD) {
      const wt = weight[i]! || 1;
      latSum[w]! += lat * wt;
      latWeight[w]! += wt;
    }
    if (sorted) while (lastWindow < w) firstRow[++lastWindow] = i;
    const thread = sThread[i]!;
    if (page < pageCount && t < pageFirstTime[page]!) {
      pageFirstTime[page] = t;
      pageFirstThread[page] = thread;
    }
    if (t < threadFirstTime[thread]!) {
      threadFirstTime[thread] = t;
      threadFirstCpu[thread] = sCpu[i]!;
    }
  }
  return {
    sampleRows, time, sThread, sCpu, sPage, weight, opCodes, dsCodes, evCodes, dsCount, counted, STORE, FAULT, skipEv,
    hinting, hintRows, hintSkipped, pageCount, threadCount, pageFirstThread, threadFirstCpu,
    maxTime, accessRows, cacheRows, faultRows, sorted, perWindow, firstRow, latSum, latWeight, lastWindow,
  };
}

type SampleScan = ReturnType<typeof scanSamples>;

/** Earlier than every sample: a page or thread not seen yet. */
const NEVER = Infinity;

/**
 * replayInputFor, phase 2: whether the access samples are an estimate or hinting faults only, and
 * the notes on them; throws when there is nothing to replay.
 */
function accessSampleNotes(trace: Trace, scan: SampleScan, options: ReplayInputOptions, windowUs: number, notes: string[]) {
  const { accessRows, faultRows, cacheRows, hintRows, hintSkipped, hinting } = scan;
  const estimated = accessRows === 0 && (options.accessEstimate === 'uniform' || options.accessEstimate === 'auto');
  if (accessRows > 0 && options.accessEstimate === 'uniform') {
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
        'or ask for an estimate from page placement alone (CLI --access-estimate uniform or auto, the CLI default), which assumes every thread accesses every page equally.',
    );
  }
  const hintingOnly = hintRows > 0 && hintRows === accessRows;
  if (hintSkipped > 0) {
    notes.push(`${hintSkipped} NUMA hinting-fault samples were skipped: the trace has PMU access samples, and the two are not added up`);
  }
  if (hintingOnly) {
    notes.push(
      `access samples are ${hintRows} NUMA hinting faults (no PMU): they say which thread touched which page, about once per page per scan pass of the kernel's balancer, not how often. ` +
        'Traffic shares between nodes, local access ratio and imbalance follow from them; absolute rates, utilisation, latency and speedup do not (they are relative)',
    );
    const gapMs = hinting?.medianGapUs != null ? hinting.medianGapUs / 1000 : null;
    if (gapMs !== null && windowUs < 3 * gapMs * 1000) {
      notes.push(
        `hinting faults catch a page about every ${gapMs.toFixed(0)} ms (median), so a ${windowUs / 1000} ms window sees each page from one thread at most: ` +
          `pages shared by threads on several nodes show as shared only in windows of several scan passes (--window-ms ${hinting!.suggestedWindowMs} or more)`,
      );
    }
  }
  if (cacheRows > 0) notes.push(`${cacheRows} load/store samples that hit a cache (l1/lfb/l2/l3/remote-cache/io) load no memory controller and were skipped`);
  return { estimated, hintingOnly };
}

/** replayInputFor, the estimate: one window in which every thread reads every page once. */
function uniformEstimate(trace: Trace, threadCount: number, pageCount: number, duration: number, faultRows: number, options: ReplayInputOptions, notes: string[]): WindowSource {
  if (threadCount * pageCount > MAX_ESTIMATE_ENTRIES) {
    throw new EngineError(
      'bad-option',
      `access estimate "uniform": ${threadCount} threads × ${pageCount} pages exceeds ${MAX_ESTIMATE_ENTRIES} entries; ` +
        'analyse a recording with fewer resident pages (numascope record --scan-max-pages) or with memory-access samples',
    );
  }
  if (threadCount === 0 || pageCount === 0) {
    throw new EngineError(
      'empty-trace',
      `access estimate "uniform": the trace has ${threadCount} threads and ${pageCount} pages, and no memory-access samples: nothing to estimate from. ` +
        (trace.manifest.origin.kind === 'imported'
          ? `It was imported from ${typeof trace.manifest.origin.from === 'string' ? trace.manifest.origin.from : 'a perf.data file'}, which holds no memory-access samples with a data address: record them with \`perf mem record\` or \`perf c2c record\` (a \`cycles\` profile has none) and import that file.`
          : trace.manifest.capture.pageScan
          ? 'The placement scan found no resident page (the process exited before a scan completed?).'
          : 'It was recorded without the placement scan of resident pages (numascope before capture.pageScan), so an attached process shows only the pages faulted during the recording: record it again.'),
    );
  }
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
  notes.push(
    `ESTIMATED${options.accessEstimate === 'auto' ? ' (chosen automatically: access estimate "auto")' : ''}: the trace has no memory-access samples (${faultRows} page-fault rows); accesses were assumed uniform: ` +
      `each of the ${threadCount} threads reads each of the ${pageCount} pages once, in one window over the whole capture. ` +
      'Page placement and thread placement are measured; the traffic split over nodes follows from the assumption; rates and latencies are not meaningful.',
  );
  return windowsOf([win]);
}

/**
 * replayInputFor, phase 3: page-fault rows (first-touch) also name a thread and cpu for pages, and
 * for threads with no access sample (filled into scan.threadFirstCpu): the earliest fault of each,
 * whatever the row order.
 */
function faultPlacement(scan: SampleScan): { faultThread: Int32Array; faultCpu: Int32Array } {
  const { pageCount, threadCount, sampleRows, opCodes, FAULT, sPage, sThread, sCpu, time, threadFirstCpu } = scan;
  const faultThread = new Int32Array(pageCount).fill(-1);
  const faultCpu = new Int32Array(pageCount).fill(-1);
  if (scan.faultRows > 0) {
    const faultTime = new Float64Array(pageCount).fill(NEVER);
    const threadFaultTime = new Float64Array(threadCount).fill(NEVER);
    const threadFaultCpu = new Int32Array(threadCount).fill(-1);
    for (let i = 0; i < sampleRows; i++) {
      if (opCodes[i] !== FAULT) continue;
      const page = sPage[i]!;
      const thread = sThread[i]!;
      const t = time[i]!;
      if (page >= 0 && page < pageCount && t < faultTime[page]!) {
        faultTime[page] = t;
        faultThread[page] = thread;
        faultCpu[page] = sCpu[i]!;
      }
      if (t < threadFaultTime[thread]!) {
        threadFaultTime[thread] = t;
        threadFaultCpu[thread] = sCpu[i]!;
      }
    }
    for (let t = 0; t < threadCount; t++) if (threadFirstCpu[t] === -1) threadFirstCpu[t] = threadFaultCpu[t]!;
  }
  return { faultThread, faultCpu };
}

/**
 * replayInputFor, phase 4: threads on their first recorded placement, else the first sample's cpu,
 * else node 0; and the recorded thread placement per window.
 */
function threadPlacement(trace: Trace, machine: MachineModel, scan: SampleScan, windowCount: number, windowUs: number, notes: string[]) {
  const { threadCount, threadFirstCpu } = scan;
  const nodeIndexOfId = new Map(machine.nodeIds.map((id, i) => [id, i]));
  const threadNode = new Int16Array(threadCount).fill(-1);
  const tp = trace.tables.thread_placements;
  const tpTime = timeColumn(tp, 'time_us');
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
  return { threadNode, observedThreadNode };
}

/**
 * replayInputFor, phase 5: pages on pages.node, else the first-touch cpu's node, else the
 * first-touch/first-access thread's node.
 */
function pagePlacement(
  trace: Trace,
  machine: MachineModel,
  threadCount: number,
  pageFirstThread: Int32Array,
  faults: { faultThread: Int32Array; faultCpu: Int32Array },
  threadNode: Int16Array,
  notes: string[],
) {
  const { pages } = trace.tables;
  const pageCount = pages.numRows;
  const { faultThread, faultCpu } = faults;
  const nodeIndexOfId = new Map(machine.nodeIds.map((id, i) => [id, i]));
  const pNode = numericColumn<Int8Array>(pages, 'node');
  const pFtThread = numericColumn<Int32Array>(pages, 'first_touch_thread');
  const pFtCpu = numericColumn<Int16Array>(pages, 'first_touch_cpu');
  const pageNode = new Int16Array(pageCount);
  const firstTouchThread = new Int32Array(pageCount);
  const firstTouchNode = new Int16Array(pageCount).fill(-1);
  const pFtUs = numericColumn<BigInt64Array | Float64Array>(pages, 'first_touch_us');
  const pageFirstUs = new Float64Array(pageCount).fill(NaN);
  let pagesFromThread = 0;
  let pagesDefaulted = 0;
  let pagesRecorded = 0;
  for (let p = 0; p < pageCount; p++) {
    const owner = pFtThread[p]! >= 0 ? pFtThread[p]! : faultThread[p]! >= 0 ? faultThread[p]! : pageFirstThread[p]!;
    firstTouchThread[p] = owner;
    if (pFtCpu[p]! >= 0) firstTouchNode[p] = nodeOfCpu(machine, pFtCpu[p]!);
    {
      // Only a recorded first touch says when a page came to exist (its first access sample is a
      // later bound: the page may have been allocated long before).
      const ft = Number(pFtUs[p]!);
      if (ft >= 0) pageFirstUs[p] = ft;
    }
    const byId = pNode[p]! >= 0 ? nodeIndexOfId.get(pNode[p]!) : undefined;
    if (byId !== undefined) {
      pageNode[p] = byId;
      pagesRecorded++;
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
  return { pageNode, firstTouchThread, firstTouchNode, pageFirstUs, pagesRecorded };
}

const ms = (us: number) => `${+(us / 1000).toFixed(3)} ms`;

/**
 * The input cut to the windows that overlap `range` (ReplayInputOptions.timeRangeUs): windows are
 * renumbered from 0 (index i is window `firstWindow + i` of the whole trace; startUs and endUs
 * stay times since the capture start), observedThreadNode is cut to match, and threads start on
 * the node they were last observed on before the first kept window.
 */
export function restrictToTimeRange(input: ReplayInput, range: TimeRangeUs): ReplayInput {
  const { startUs, endUs } = range;
  if (!Number.isFinite(startUs) || !Number.isFinite(endUs) || startUs < 0 || endUs <= startUs) {
    throw new EngineError('bad-option', `time range must be 0 ≤ start < end (µs), got ${startUs}–${endUs}`);
  }
  const all = input.windows;
  const total = all.length;
  let first = -1;
  let last = -1;
  for (let w = 0; w < total; w++) {
    const info = all.info(w);
    if (info.endUs <= startUs || info.startUs >= endUs) continue;
    if (first < 0) first = w;
    last = w;
  }
  const traceEnd = total > 0 ? all.info(total - 1).endUs : 0;
  if (first < 0) {
    // An open end (the CLI's --from-ms alone) is any end past the trace's.
    const range = endUs >= Number.MAX_SAFE_INTEGER ? `from ${ms(startUs)} to the end` : `${ms(startUs)}–${ms(endUs)}`;
    throw new EngineError('bad-option', `time range ${range} overlaps no window of the trace (it covers 0–${ms(traceEnd)}): give a range inside it`);
  }
  const count = last - first + 1;
  const covered = { startUs: all.info(first).startUs, endUs: all.info(last).endUs };
  const windows: WindowSource = {
    length: count,
    info: (i) => {
      if (!(i >= 0 && i < count)) throw new RangeError(`window ${i} out of range 0..${count - 1}`);
      return { ...all.info(first + i), index: i };
    },
    get: (i) => {
      if (!(i >= 0 && i < count)) throw new RangeError(`window ${i} out of range 0..${count - 1}`);
      return { ...all.get(first + i), index: i };
    },
    ...(all.accessMatrices ? { accessMatrices: (i: number, placements: readonly Placement[], n: number) => all.accessMatrices!(first + i, placements, n) } : {}),
    *[Symbol.iterator]() {
      for (let i = 0; i < count; i++) yield this.get(i);
    },
  };
  const observed = input.observedThreadNode;
  const threadNode = first > 0 && observed && observed[first - 1] ? observed[first - 1]!.slice() : input.initial.threadNode.slice();
  const note =
    count === total
      ? `time range ${ms(startUs)}–${ms(endUs)}: every window overlaps it, the whole trace (0–${ms(traceEnd)}) is replayed`
      : `time range ${ms(startUs)}–${ms(endUs)}: replaying windows ${first}–${last} of 0–${total - 1} (${ms(covered.startUs)}–${ms(covered.endUs)}); threads start where they were at ${ms(covered.startUs)}`;
  return {
    ...input,
    windows,
    initial: { ...input.initial, threadNode },
    observedThreadNode: observed?.slice(first, last + 1),
    notes: [...(input.notes ?? []), note],
    timeRange: { requestedStartUs: startUs, requestedEndUs: endUs, startUs: covered.startUs, endUs: covered.endUs, firstWindow: first, totalWindows: total },
  };
}

/** counted[op·dsCount + ds] = 1 for a load/store whose data source reached memory. */
function countedTable(ops: readonly string[], dataSources: readonly string[]): Uint8Array {
  const LOAD = ops.indexOf('load');
  const STORE = ops.indexOf('store');
  const counted = new Uint8Array(ops.length * dataSources.length);
  dataSources.forEach((v, d) => {
    const memory = MEMORY_DATA_SOURCES.includes(v) || !DS_KNOWN.has(v);
    for (let o = 0; o < ops.length; o++) counted[o * dataSources.length + d] = (o === LOAD || o === STORE) && memory ? 1 : 0;
  });
  return counted;
}

/** What a trace's NUMA hinting faults (samples.event `access-fault`) give (docs/engine.md, "Windows"). */
export interface HintingFaultStats {
  /** Hinting-fault rows that would count as accesses (load/store with a page). */
  rows: number;
  /** Access rows from other events (PMU samples); when > 0 the hinting faults are skipped. */
  otherAccessRows: number;
  /** Median time between two successive hinting faults on one page, µs, rounded down to 1 ms (≈ the balancer's scan period); null when no page has two. */
  medianGapUs: number | null;
  /** A window spanning about four scan passes: 4 × the median gap rounded up to 100 ms, within 100 ms – 60 s; null without a gap. */
  suggestedWindowMs: number | null;
}

/** Largest gap the median is measured to (longer gaps count as this). */
const GAP_BINS_MS = 60_000;

/** Statistics of the trace's hinting-fault rows; null when the trace has none. One pass over the samples. */
export function hintingFaultStats(trace: Trace): HintingFaultStats | null {
  const samples = trace.tables.samples;
  const ev = dictionaryColumn(samples, 'event');
  const HINT = ev.values.indexOf('access-fault');
  // The dictionary may name the kind without any row of it (a writer that lists every known
  // value): one fast scan of the codes before the pass over the rows.
  if (HINT < 0 || !ev.codes.includes(HINT)) return null;
  const op = dictionaryColumn(samples, 'op');
  const ds = dictionaryColumn(samples, 'data_source');
  const counted = countedTable(op.values, ds.values);
  const dsCount = ds.values.length;
  const time = timeColumn(samples, 'time_us');
  const page = numericColumn<Int32Array>(samples, 'page');
  const last = new Float64Array(trace.tables.pages.numRows).fill(-1);
  const gaps = new Uint32Array(GAP_BINS_MS + 1);
  let rows = 0;
  let other = 0;
  let gapCount = 0;
  for (let i = 0; i < samples.numRows; i++) {
    const p = page[i]!;
    if (p < 0 || counted[op.codes[i]! * dsCount + ds.codes[i]!] !== 1) continue;
    if (ev.codes[i] !== HINT) {
      other++;
      continue;
    }
    rows++;
    if (p >= last.length) continue;
    const t = time[i]!;
    // Rows in time order (what the collector writes); an earlier row gives no gap.
    if (last[p]! >= 0 && t > last[p]!) {
      gaps[Math.min(GAP_BINS_MS, Math.floor((t - last[p]!) / 1000))]!++;
      gapCount++;
    }
    last[p] = t;
  }
  if (rows === 0) return null;
  let medianGapUs: number | null = null;
  if (gapCount > 0) {
    let seen = 0;
    for (let b = 0; b <= GAP_BINS_MS; b++) {
      seen += gaps[b]!;
      if (seen * 2 > gapCount) {
        medianGapUs = b * 1000;
        break;
      }
    }
  }
  const suggestedWindowMs = medianGapUs === null ? null : Math.min(60_000, Math.max(100, Math.ceil((4 * medianGapUs) / 1000 / 100) * 100));
  return { rows, otherAccessRows: other, medianGapUs, suggestedWindowMs };
}

const DS_KNOWN = new Set(['l1', 'lfb', 'l2', 'l3', 'local-dram', 'remote-dram', 'remote-cache', 'pmem', 'cxl', 'io', 'uncached', 'unknown']);


/**
 * Windows built on demand from the trace's columns, kept while the cache has room (first come).
 * `built` counts aggregations, for tests and the benchmark.
 */
export class TraceWindows implements WindowSource {
  readonly length: number;
  built = 0;
  private readonly cache = new Map<number, AccessWindow>();
  private readonly timings: Array<WindowTiming | undefined>;
  private cachedEntries = 0;
  constructor(
    private readonly infos: readonly WindowInfo[],
    private readonly build: (index: number) => AccessWindow,
    private readonly cacheEntries: number,
    private readonly matrices?: (index: number, placements: readonly Placement[], nodeCount: number) => Array<{ loads: Float64Array; stores: Float64Array }>,
  ) {
    this.length = infos.length;
    this.timings = new Array<WindowTiming | undefined>(infos.length);
  }
  timing(index: number): WindowTiming {
    return this.timings[index] ?? this.get(index);
  }
  accessMatrices(index: number, placements: readonly Placement[], nodeCount: number): Array<{ loads: Float64Array; stores: Float64Array }> {
    this.info(index);
    if (!this.matrices) {
      // Without a row scanner: from the built window, as accessMatrix does.
      const w = this.get(index);
      return placements.map((pl) => {
        const loads = new Float64Array(nodeCount * nodeCount);
        const stores = new Float64Array(nodeCount * nodeCount);
        for (let k = 0; k < w.page.length; k++) {
          const c = pl.threadNode[w.thread[k]!]!;
          const p = w.page[k]!;
          const home = pl.pageNode[p]!;
          if (w.loads[k]! > 0) loads[c * nodeCount + (pl.replicated[p] ? c : home)]! += w.loads[k]!;
          if (w.stores[k]! > 0) addStore(stores, nodeCount, c, home, p, w.stores[k]!, pl.replicated, pl.replicas);
        }
        return { loads, stores };
      });
    }
    return this.matrices(index, placements, nodeCount);
  }
  info(index: number): WindowInfo {
    const info = this.infos[index];
    if (!info) throw new RangeError(`window ${index} out of range 0..${this.length - 1}`);
    return info;
  }
  get(index: number): AccessWindow {
    const hit = this.cache.get(index);
    if (hit) return hit;
    this.info(index);
    const window = this.build(index);
    this.built++;
    this.timings[index] = { loop: window.loop, stallShare: window.stallShare, accessScale: window.accessScale };
    if (this.cachedEntries + window.page.length <= this.cacheEntries) {
      this.cache.set(index, window);
      this.cachedEntries += window.page.length;
    }
    return window;
  }
  *[Symbol.iterator](): Iterator<AccessWindow> {
    for (let w = 0; w < this.length; w++) yield this.get(w);
  }
}

const bitsFor = (count: number): number => (count <= 1 ? 0 : 32 - Math.clz32(count - 1));
const RADIX_BITS = 11;
const RADIX = 1 << RADIX_BITS;

/**
 * One stable LSD radix pass over (key, payload) pairs by bits [shift, shift+11) of the key, from
 * (srcKey, srcVal) into (dstKey, dstVal). `at` holds each digit's first position (exclusive
 * prefix sums of the digit counts) and is advanced. Moving the keys with their payload keeps
 * every read sequential.
 */
function radixScatter(srcKey: Uint32Array, srcVal: Uint32Array, dstKey: Uint32Array, dstVal: Uint32Array, n: number, shift: number, at: Uint32Array, from: number): void {
  for (let i = 0; i < n; i++) {
    const key = srcKey[i]!;
    const to = at[from + ((key >>> shift) & (RADIX - 1))]!++;
    dstKey[to] = key;
    dstVal[to] = srcVal[i]!;
  }
}

/** Exclusive prefix sums, in place, of the RADIX counts at counts[from..from+RADIX). */
function prefixSums(counts: Uint32Array, from: number): void {
  let sum = 0;
  for (let d = from; d < from + RADIX; d++) {
    const c = counts[d]!;
    counts[d] = sum;
    sum += c;
  }
}

/** The sample rows of the trace as the window builders read them. */
interface WindowRows {
  store: number;
  counted: Uint8Array;
  dsCount: number;
  opCodes: ArrayLike<number>;
  dsCodes: ArrayLike<number>;
  /** Event codes, and the event whose rows are skipped (-1: none). */
  evCodes: ArrayLike<number>;
  skipEv: number;
  thread: Uint32Array;
  page: Int32Array;
  weight: Uint32Array;
  /** Rows in time order: window w is rows [rowBound[w], rowBound[w+1]) minus non-access rows. */
  rowBound: Int32Array | null;
  /** Else: access rows by window, order[windowStart[w] .. windowStart[w+1]). */
  order: Int32Array | null;
  windowStart: Int32Array;
}

/**
 * Aggregates one window's access rows into (thread, page) entries sorted by page, then thread:
 * gather, LSD radix sort by (page, thread), and a merge of equal pairs. Scratch is sized to the
 * largest window and reused, so building a window costs O(its rows) time and memory, with no hash
 * table.
 *
 * The usual case (page and thread bits fit one 32-bit key page·2^threadBits + thread, weights
 * below 2^31): the payload sorted with the key is weight·2 + isStore, and the digit counts of
 * every pass are taken while gathering, so the sort makes one sequential pass per 11 bits and the
 * merge reads only the sorted arrays. Otherwise the payload is the row's position (value, op,
 * thread and page kept aside), and a key that does not fit is sorted by thread, then by page.
 * Both keep rows of one (page, thread) in row order (stable sorts), so every entry's sums add the
 * same numbers in the same order.
 */
function windowAggregator(src: WindowRows & { threadCount: number; pageCount: number; maxRows: number }): (info: WindowInfo) => AccessWindow {
  const { counted, dsCount, opCodes, dsCodes, evCodes, skipEv, thread, page, weight, rowBound, order, windowStart, store } = src;
  const threadBits = bitsFor(src.threadCount);
  const pageBits = bitsFor(src.pageCount);
  const oneKey = threadBits + pageBits <= 32;
  // Packed payloads need weights below 2^31; a window with a larger one is built again unpacked.
  const packed = oneKey;
  const threadScale = 2 ** threadBits;
  const n0 = Math.max(1, src.maxRows);
  let key = new Uint32Array(n0);
  let keyB = new Uint32Array(n0);
  let val = new Uint32Array(n0);
  let valB = new Uint32Array(n0);
  const counts = new Uint32Array(RADIX * 3);
  // Row-position payload (not packed): the value and op of sorted position i are at val[i].
  let value: Float64Array | null = null;
  let isStore: Uint8Array | null = null;
  // Merged entries of the packed path before they are copied out.
  const outThread = packed ? new Int32Array(n0) : new Int32Array(0);
  const outPage = packed ? new Int32Array(n0) : new Int32Array(0);
  const outLoads = packed ? new Float64Array(n0) : new Float64Array(0);
  const outStores = packed ? new Float64Array(n0) : new Float64Array(0);
  const threadOfRow = oneKey ? null : new Uint32Array(n0);
  const pageOfRow = oneKey ? null : new Uint32Array(n0);
  let n = 0;
  const swap = (): void => {
    let t = key;
    key = keyB;
    keyB = t;
    t = val;
    val = valB;
    valB = t;
  };
  /** LSD sort of key[0..n) with val by `bits` bits, counting digits in a pass of its own. */
  const sortBy = (bits: number): void => {
    for (let shift = 0; shift < bits; shift += RADIX_BITS) {
      counts.fill(0, 0, RADIX);
      for (let i = 0; i < n; i++) counts[(key[i]! >>> shift) & (RADIX - 1)]!++;
      prefixSums(counts, 0);
      radixScatter(key, val, keyB, valB, n, shift, counts, 0);
      swap();
    }
  };
  const bits = threadBits + pageBits;
  const passes = Math.ceil(bits / RADIX_BITS);

  /** The packed path: gather with digit counts, sort, merge from the sorted arrays. */
  const buildPacked = (info: WindowInfo): AccessWindow => {
    const w = info.index;
    counts.fill(0);
    // Weights OR-ed together: bit 31 set (negative as an int32) = a weight of 2^31 or more.
    let weightBits = 0;
    // Digit counts of the first two passes while gathering (a third, for keys over 22 bits, after).
    const put = (r: number): void => {
      const k = page[r]! * threadScale + thread[r]!;
      key[n] = k;
      const wgt = weight[r]!;
      weightBits |= wgt;
      val[n] = (wgt > 0 ? wgt : 1) * 2 + (opCodes[r] === store ? 1 : 0);
      counts[k & (RADIX - 1)]!++;
      counts[RADIX + ((k >>> RADIX_BITS) & (RADIX - 1))]!++;
      n++;
    };
    if (rowBound) {
      const end = rowBound[w + 1]!;
      const start = rowBound[w]!;
      // Every row of the span counted (no cache hit, fault or skipped event among them): no test per row.
      if (end - start === windowStart[w + 1]! - windowStart[w]!) for (let i = start; i < end; i++) put(i);
      else for (let i = start; i < end; i++) if (counted[opCodes[i]! * dsCount + dsCodes[i]!] === 1 && page[i]! >= 0 && evCodes[i] !== skipEv) put(i);
    } else {
      for (let k = windowStart[w]!; k < windowStart[w + 1]!; k++) put(order![k]!);
    }
    if (weightBits < 0) {
      n = 0;
      return buildRows(info);
    }
    if (passes > 2) for (let i = 0; i < n; i++) counts[2 * RADIX + ((key[i]! >>> (2 * RADIX_BITS)) & (RADIX - 1))]!++;
    for (let pass = 0; pass < passes; pass++) {
      prefixSums(counts, pass * RADIX);
      radixScatter(key, val, keyB, valB, n, pass * RADIX_BITS, counts, pass * RADIX);
      swap();
    }
    // Merge runs of one key into the scratch entries, then copy out as many as there are. Loads
    // and stores are summed branch-free: adding +0 leaves a float64 sum unchanged.
    let k = -1;
    let prev = -1;
    let l = 0;
    let st = 0;
    for (let i = 0; i < n; i++) {
      const kk = key[i]!;
      if (kk !== prev) {
        if (k >= 0) {
          outLoads[k] = l;
          outStores[k] = st;
        }
        prev = kk;
        k++;
        const p = Math.floor(kk / threadScale);
        outPage[k] = p;
        outThread[k] = kk - p * threadScale;
        l = 0;
        st = 0;
      }
      const x = val[i]!;
      const v = x >>> 1;
      const isStore = x & 1;
      l += v * (1 - isStore);
      st += v * isStore;
    }
    if (k >= 0) {
      outLoads[k] = l;
      outStores[k] = st;
    }
    const distinct = k + 1;
    return {
      ...info,
      thread: outThread.slice(0, distinct),
      page: outPage.slice(0, distinct),
      loads: outLoads.slice(0, distinct),
      stores: outStores.slice(0, distinct),
    };
  };

  /** True when sorted position i starts a new (page, thread) pair. */
  const starts = (i: number): boolean => i === 0 || key[i] !== key[i - 1] || (!oneKey && threadOfRow![val[i]!] !== threadOfRow![val[i - 1]!]);
  const buildRows = (info: WindowInfo): AccessWindow => {
    const w = info.index;
    value ??= new Float64Array(n0);
    isStore ??= new Uint8Array(n0);
    const put = (r: number): void => {
      const t = thread[r]!;
      const p = page[r]!;
      if (oneKey) key[n] = p * threadScale + t;
      else {
        key[n] = t;
        threadOfRow![n] = t;
        pageOfRow![n] = p;
      }
      const wgt = weight[r]!;
      value![n] = wgt > 0 ? wgt : 1;
      isStore![n] = opCodes[r] === store ? 1 : 0;
      val[n] = n;
      n++;
    };
    if (rowBound) {
      const end = rowBound[w + 1]!;
      const start = rowBound[w]!;
      // Every row of the span counted (no cache hit, fault or skipped event among them): no test per row.
      if (end - start === windowStart[w + 1]! - windowStart[w]!) for (let i = start; i < end; i++) put(i);
      else for (let i = start; i < end; i++) if (counted[opCodes[i]! * dsCount + dsCodes[i]!] === 1 && page[i]! >= 0 && evCodes[i] !== skipEv) put(i);
    } else {
      for (let k = windowStart[w]!; k < windowStart[w + 1]!; k++) put(order![k]!);
    }
    if (oneKey) sortBy(bits);
    else {
      sortBy(threadBits);
      for (let i = 0; i < n; i++) key[i] = pageOfRow![val[i]!]!;
      sortBy(pageBits);
    }
    let distinct = 0;
    for (let i = 0; i < n; i++) if (starts(i)) distinct++;
    const wThread = new Int32Array(distinct);
    const wPage = new Int32Array(distinct);
    const loads = new Float64Array(distinct);
    const stores = new Float64Array(distinct);
    let k = -1;
    for (let i = 0; i < n; i++) {
      const r = val[i]!;
      if (starts(i)) {
        k++;
        if (oneKey) {
          const p = Math.floor(key[i]! / threadScale);
          wPage[k] = p;
          wThread[k] = key[i]! - p * threadScale;
        } else {
          wPage[k] = key[i]!;
          wThread[k] = threadOfRow![r]!;
        }
      }
      if (isStore![r]) stores[k]! += value![r]!;
      else loads[k]! += value![r]!;
    }
    return { ...info, thread: wThread, page: wPage, loads, stores };
  };
  return (info) => {
    n = 0;
    return packed ? buildPacked(info) : buildRows(info);
  };
}

/**
 * Access matrices of one window under several placements, summed from the window's rows in one
 * pass (no sort, no window entries): for each counted row, its weight goes to (thread's node,
 * serving node) of every placement. Weights are integers, so the sums equal accessMatrix's over
 * the built window exactly (float64 adds integers below 2^53 without rounding).
 */
function matrixScanner(src: WindowRows): (index: number, placements: readonly Placement[], nodeCount: number) => Array<{ loads: Float64Array; stores: Float64Array }> {
  const { store, counted, dsCount, opCodes, dsCodes, evCodes, skipEv, thread, page, weight, rowBound, order, windowStart } = src;
  return (w, placements, n) => {
    const K = placements.length;
    const nn = n * n;
    // Placement k's loads at [2k·nn, (2k+1)·nn), its stores at [(2k+1)·nn, (2k+2)·nn).
    const sums = new Float64Array(2 * K * nn);
    const threadNodes = placements.map((pl) => pl.threadNode);
    const pageNodes = placements.map((pl) => pl.pageNode);
    const replicateds = placements.map((pl) => pl.replicated);
    const replicaSets = placements.map((pl) => pl.replicas);
    const row = (i: number): void => {
      const p = page[i]!;
      const t = thread[i]!;
      const wg = weight[i]! > 0 ? weight[i]! : 1;
      const s = opCodes[i] === store ? 1 : 0;
      for (let k = 0; k < K; k++) {
        const c = threadNodes[k]![t]!;
        const home = pageNodes[k]![p]!;
        // A load of a replicated page is served by the reader's node; a store goes home, or to
        // every copy where the placement names them.
        if (s === 0) sums[2 * k * nn + c * n + (replicateds[k]![p] ? c : home)]! += wg;
        else {
          const set = replicateds[k]![p] && replicaSets[k] ? replicaSets[k]!.setOf[p]! : -1;
          if (set >= 0) for (const r of replicaSets[k]!.sets[set]!) sums[(2 * k + 1) * nn + c * n + r]! += wg;
          else sums[(2 * k + 1) * nn + c * n + home]! += wg;
        }
      }
    };
    if (rowBound) {
      const end = rowBound[w + 1]!;
      const start = rowBound[w]!;
      if (end - start === windowStart[w + 1]! - windowStart[w]!) for (let i = start; i < end; i++) row(i);
      else for (let i = start; i < end; i++) if (counted[opCodes[i]! * dsCount + dsCodes[i]!] === 1 && page[i]! >= 0 && evCodes[i] !== skipEv) row(i);
    } else {
      for (let k = windowStart[w]!; k < windowStart[w + 1]!; k++) row(order![k]!);
    }
    return placements.map((_, k) => ({ loads: sums.slice(2 * k * nn, (2 * k + 1) * nn), stores: sums.slice((2 * k + 1) * nn, (2 * k + 2) * nn) }));
  };
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

// ---------------------------------------------------------------------------------------------
// The closed loop of each window, calibrated on the recording (docs/engine.md, "Closed loop")

/** Where a window's stall share comes from. */
export type StallShareSource = 'counters' | 'samples' | 'default';
/** A thread that issues misses is never stalled all the time: the most of a window's time the loop may be waiting. */
export const STALL_SHARE_MIN = 0.01;
export const STALL_SHARE_MAX = 0.95;
/** Utilisation at which the observed latency is evaluated at most (hinting-fault scale search). */
export const OBSERVED_UTILISATION_MAX = 0.98;
/** A resource cannot carry more than its capacity: recorded rates that imply a utilisation above 1 are infeasible (flagged) and scaled to this (a saturated resource, delivering its capacity). */
export const FEASIBLE_UTILISATION_MAX = 0.99;

export interface ObservedTiming {
  loop: WindowLoop;
  accessScale: number;
}

export function emptyFeasibility(): FeasibilityReport {
  return { windows: 0, bandwidthWindows: 0, worstBandwidth: null, issueWindows: 0, worstIssue: null, calibrated: 0, offModel: 0, worstOffModel: null };
}

const gbps = (bytesPerS: number) => `${+(bytesPerS / 1e9).toFixed(2)} GB/s`;

/** The notes a feasibility report gives (none when every window was feasible). */
export function feasibilityNotes(report: FeasibilityReport, windowCount: number): string[] {
  const out: string[] = [];
  const b = report.worstBandwidth;
  if (report.bandwidthWindows > 0 && b) {
    out.push(
      `INFEASIBLE RATES: in ${report.bandwidthWindows} of ${windowCount} windows the samples × weights imply more traffic than the machine model can carry ` +
        `(worst: window ${b.window}, ${b.resource} at ${gbps(b.bytesPerS)} against its ${gbps(b.capacityBytesPerS)} capacity, ${(b.utilisation * 100).toFixed(0)} %; capacity: ${b.capacitySource}). ` +
        `A wrong sampling period (weights), a wrong machine model (numascope bench measures the real capacities) or a synthetic trace made too fast. ` +
        `Those windows' rates were scaled down to ${FEASIBLE_UTILISATION_MAX * 100} % of that capacity, so their utilisations, latencies and times are relative, not measured`,
    );
  }
  const q = report.worstIssue;
  if (report.issueWindows > 0 && q) {
    out.push(
      `INFEASIBLE CONCURRENCY: in ${report.issueWindows} of ${windowCount} windows the access rate × the latency needs more accesses in flight than the cores can issue ` +
        `(worst: window ${q.window}, ${q.inFlightPerThread.toFixed(1)} per thread against ${q.limit} outstanding misses per core, rule MLP0): ` +
        `the samples over-count the accesses (sampling period) or the latency is not the DRAM latency; the loop keeps what the recording implies, so those windows' predictions rest on a population the hardware cannot have`,
    );
  }
  const o = report.worstOffModel;
  if (report.offModel > 0 && o) {
    out.push(
      `MODEL OFF THE RECORDING: in ${report.offModel} of ${report.calibrated} windows with measured latencies the machine model cannot give the measured latency within its bounds ` +
        `(first: window ${o.window}, measured ${o.measuredNs.toFixed(0)} ns, the model ${o.modelNs.toFixed(0)} ns at the recorded rates; idle latencies × ${o.idleScale.toFixed(2)}, queueing × ${o.queueScale.toFixed(1)}): ` +
        `check the clock the PMU latencies are converted with and the machine model (numascope bench calibrates it)`,
    );
  }
  return out;
}

/** The resource with the highest utilisation if `d` is carried in tUs: its label, utilisation, rate and capacity. */
function busiestResource(machine: MachineModel, d: Demand, tUs: number): { resource: string; utilisation: number; bytesPerS: number; capacityBytesPerS: number; capacitySource: string } {
  const t = d.traffic;
  const seconds = tUs * 1e-6;
  let best = { resource: '', utilisation: 0, bytesPerS: 0, capacityBytesPerS: 0, capacitySource: '' };
  const mc = t.mcCapacity.value;
  for (let m = 0; m < mc.length; m++) {
    const u = d.mcBytes[m]! / seconds / mc[m]!;
    if (u > best.utilisation) best = { resource: `node ${machine.nodeIds[m]}'s memory controller`, utilisation: u, bytesPerS: d.mcBytes[m]! / seconds, capacityBytesPerS: mc[m]!, capacitySource: t.mcCapacity.source };
  }
  const xb = t.crossbarCapacity?.value;
  if (xb) {
    for (let x = 0; x < xb.length; x++) {
      const u = d.xbBytes[x]! / seconds / xb[x]!;
      if (u > best.utilisation) best = { resource: `node ${machine.nodeIds[x]}'s crossbar`, utilisation: u, bytesPerS: d.xbBytes[x]! / seconds, capacityBytesPerS: xb[x]!, capacitySource: t.crossbarCapacity!.source };
    }
  }
  for (let k = 0; k < t.linkCapacity.length; k++) {
    const u = d.linkBytes[k]! / seconds / t.linkCapacity[k]!;
    const l = machine.links[k]!;
    if (u > best.utilisation) best = { resource: `link ${machine.nodeIds[l.from]}→${machine.nodeIds[l.to]}`, utilisation: u, bytesPerS: d.linkBytes[k]! / seconds, capacityBytesPerS: t.linkCapacity[k]!, capacitySource: machine.linkSource };
  }
  return best;
}

/** Most the recording may steepen the resources' queueing over rule LQ0's reference curve (κ). */
export const QUEUE_SCALE_MAX = 200;
/**
 * Least κ: the queueing part is what makes latency diverge at a resource's capacity, so it is never
 * calibrated away (with κ = 0 a saturated window would have no closed-loop solution).
 */
export const QUEUE_SCALE_MIN = 0.1;
/** Least idle scale ι (a measured latency far below the machine's idle latencies: a wrong clock or machine model). */
export const IDLE_SCALE_MIN = 0.25;

/**
 * The latency scales that give the measured latency `measuredNs` for demand `d` carried in wUs
 * (docs/engine.md, "Calibration"): the model's latency there is idle + contention + queueing; the
 * difference to the measurement goes to the queueing (κ = 1 + difference / queueing, within
 * [QUEUE_SCALE_MIN, QUEUE_SCALE_MAX]: the recording's loaded latency attributed to the queues of the resources
 * it loaded, the service scale of the curve), what κ cannot take to the idle part (ι, at least
 * IDLE_SCALE_MIN). Without a measurement, both 1.
 */
export function calibrateLatency(d: Demand, wUs: number, measuredNs: number | null, feasibility?: FeasibilityReport, window = 0): LatencyScales {
  if (measuredNs === null || !(measuredNs > 0)) return { idleScale: 1, queueScale: 1 };
  const bottleneck = bottleneckOf(d, wUs);
  const parts: LatencyParts = { total: 0, idle: 0, contention: 0, queue: 0, otherQueue: 0, mc: new Float64Array(d.mcBytes.length), link: new Float64Array(d.linkBytes.length), crossbar: 0 };
  const all = latencyParts(d, wUs, Infinity, parts, { idleScale: 1, queueScale: 1, bottleneck });
  if (!Number.isFinite(all)) return { idleScale: 1, queueScale: 1 };
  // Like with like: the measured latencies are the loads', so the model's loads' (loadShiftNs).
  const idle = parts.idle + loadShiftNs(d, 1);
  const total = all + loadShiftNs(d, 1);
  const rest = measuredNs - idle - parts.contention - parts.otherQueue;
  let kappa = parts.queue > 0 ? rest / parts.queue : 1;
  kappa = Math.min(QUEUE_SCALE_MAX, Math.max(QUEUE_SCALE_MIN, kappa));
  let iota = idle > 0 ? (measuredNs - kappa * parts.queue - parts.otherQueue - parts.contention) / idle : 1;
  if (iota < IDLE_SCALE_MIN) iota = IDLE_SCALE_MIN;
  if (feasibility) {
    feasibility.calibrated++;
    if (kappa >= QUEUE_SCALE_MAX || iota > 1.5 || iota <= IDLE_SCALE_MIN) {
      feasibility.offModel++;
      if (!feasibility.worstOffModel) feasibility.worstOffModel = { window, measuredNs, modelNs: total, idleScale: iota, queueScale: kappa };
    }
  }
  return { idleScale: iota, queueScale: kappa, bottleneck };
}

/** Resources within BOTTLENECK_BAND of the busiest one's utilisation when `d` is carried in wUs: the recording's bottleneck. */
export const BOTTLENECK_BAND = 0.05;
function bottleneckOf(d: Demand, wUs: number): { mc: Uint8Array; link: Uint8Array; xb: Uint8Array } {
  const t = d.traffic;
  const seconds = wUs * 1e-6;
  const n = d.mcBytes.length;
  const um = Float64Array.from({ length: n }, (_, m) => (d.mcAccesses[m]! > 0 ? d.mcBytes[m]! / seconds / t.mcCapacity.value[m]! : 0));
  const ux = Float64Array.from({ length: n }, (_, x) => (t.crossbarCapacity && d.xbAccesses[x]! > 0 ? d.xbBytes[x]! / seconds / t.crossbarCapacity.value[x]! : 0));
  const ul = Float64Array.from({ length: d.linkBytes.length }, (_, k) => (d.linkAccesses[k]! > 0 ? d.linkBytes[k]! / seconds / t.linkCapacity[k]! : 0));
  let max = 0;
  for (const u of [...um, ...ux, ...ul]) if (u > max) max = u;
  const flag = (u: number) => (max > 0 && u >= max - BOTTLENECK_BAND ? 1 : 0);
  return { mc: Uint8Array.from(um, flag), link: Uint8Array.from(ul, flag), xb: Uint8Array.from(ux, flag) };
}

/**
 * The window's closed loop (contract WindowLoop) under the observed placement:
 * - rates: accesses / recorded length (× the access scale σ of a hinting-fault recording); where
 *   they would load some resource above FEASIBLE_UTILISATION_MAX of its capacity, the window is
 *   infeasible (reported in `feasibility`) and its rates are scaled down to that bound;
 * - L_obs: the window's mean PMU load latency (when the trace has one and the clock is known),
 *   else the model's latency L_model at the recorded rates; the latency scale φ = L_obs / L_model;
 * - in flight (Little's law): X · L_obs accesses; the population N is the threads' typical
 *   concurrency (threads × rule MLP1, × MLP0 when bandwidth-bound), raised to X · L_obs /
 *   STALL_SHARE_MAX where the recording had more in flight (flagged above threads × MLP0);
 *   with counters the stall share s = rate · L_obs / MLP per thread comes from the L3-miss rate;
 * - compute time C = W · (1 − s), s = X · L_obs / N (the share of the window spent waiting), so
 *   the simulator (T = C + A·φ·L(T)/N) gives back the recorded length at the recorded latency.
 * - `default` (NUMA hinting faults: rates unknown): in the recording's busiest window s =
 *   MEMORY_STALL_SHARE (STALL_SHARE_MAX when bandwidth-bound), and the σ that gives it is assumed
 *   for every window.
 */
export function observedTiming(
  machine: MachineModel,
  win: AccessWindow,
  observed: Placement,
  seen: Uint8Array,
  how: { source: StallShareSource; pmuLatencyNs: number | null; missesPerThreadNs: number | null; accessScale?: number | null; bandwidthBound?: boolean },
  feasibility?: FeasibilityReport,
): Partial<ObservedTiming> {
  const wObs = Math.max(1, win.endUs - win.startUs);
  const { loads, stores } = accessMatrix(machine, win, observed);
  const d1 = demandOf(machine, loads, stores, 1);
  if (d1.total === 0) return {};
  let threads = 0;
  const thread = win.thread;
  const entries = thread.length;
  for (let k = 0; k < entries; k++) {
    const t = thread[k]!;
    if (!seen[t]) {
      seen[t] = 1;
      threads++;
    }
  }
  for (let k = 0; k < entries; k++) seen[thread[k]!] = 0;
  const model = trafficModel(machine);
  const bandwidthBound = how.source === 'default' && how.bandwidthBound === true;
  const mlp = bandwidthBound ? model.mlpLimit.value : model.mlp.value;
  const typical = threads * mlp;
  const maxConcurrency = threads * model.mlpLimit.value;
  let scale = 1;
  if (how.source === 'default' && how.accessScale != null) scale = how.accessScale;
  else if (how.source === 'default') {
    // σ·X·L(σ)/N = s grows with σ (L(σ): the latency at σ times the recorded rates): bisect on log σ.
    const target = bandwidthBound ? STALL_SHARE_MAX : MEMORY_STALL_SHARE;
    const f = (sigma: number) => {
      const l = how.pmuLatencyNs ?? latencyAt(d1, wObs / sigma, OBSERVED_UTILISATION_MAX);
      return (sigma * d1.total * l) / (wObs * 1000 * typical) - target;
    };
    let lo = -40;
    let hi = 40;
    for (let it = 0; it < 80; it++) {
      const mid = (lo + hi) / 2;
      if (f(Math.exp(mid)) > 0) hi = mid;
      else lo = mid;
    }
    scale = Math.exp((lo + hi) / 2);
  }
  // Feasibility: the recorded rates against the resources' capacities.
  let d = scale === 1 ? d1 : demandOf(machine, loads, stores, scale);
  const busiest = busiestResource(machine, d, wObs);
  if (feasibility) feasibility.windows++;
  if (busiest.utilisation > 1) {
    if (feasibility && how.source !== 'default') {
      feasibility.bandwidthWindows++;
      if (!feasibility.worstBandwidth || busiest.utilisation > feasibility.worstBandwidth.utilisation) feasibility.worstBandwidth = { window: win.index, ...busiest };
    }
    scale *= FEASIBLE_UTILISATION_MAX / busiest.utilisation;
    d = demandOf(machine, loads, stores, scale);
  }
  const scales = calibrateLatency(d, wObs, how.pmuLatencyNs, feasibility, win.index);
  const lObs = latencyAt(d, wObs, Infinity, scales);
  // Accesses in flight under the recording (Little's law), per ns of the window.
  const x = d.total / (wObs * 1000);
  const inFlight = x * lObs;
  let s: number;
  if (how.source === 'counters' && how.missesPerThreadNs !== null) s = (how.missesPerThreadNs * lObs) / mlp;
  else s = inFlight / typical;
  if (feasibility && how.source !== 'default' && inFlight > maxConcurrency) {
    feasibility.issueWindows++;
    const perThread = inFlight / threads;
    if (!feasibility.worstIssue || perThread > feasibility.worstIssue.inFlightPerThread) feasibility.worstIssue = { window: win.index, inFlightPerThread: perThread, limit: model.mlpLimit.value };
  }
  s = Math.min(STALL_SHARE_MAX, Math.max(STALL_SHARE_MIN, s));
  const loop: WindowLoop = {
    computeUs: wObs * (1 - s),
    concurrency: inFlight / s,
    idleScale: scales.idleScale,
    queueScale: scales.queueScale,
    ...(scales.bottleneck ? { bottleneck: scales.bottleneck } : {}),
    threads,
    maxConcurrency: Math.max(maxConcurrency, inFlight / s),
  };
  return { loop, ...(scale !== 1 ? { accessScale: scale } : {}) };
}

function observedTimingNote(machine: MachineModel, source: StallShareSource, pmuLatency: boolean, bandwidthBound = false): string {
  const t = trafficModel(machine);
  const latency = pmuLatency ? "the recording's PMU load latencies" : "the model's latency at the recorded rates";
  const share =
    source === 'counters'
      ? "from the trace's L3-miss and cycle counters"
      : source === 'samples'
        ? "from the access samples' rate"
        : bandwidthBound
          ? `assumed ${STALL_SHARE_MAX * 100} %: BANDWIDTH-BOUND as asked (access rates "bandwidth-bound": each thread streams with its core's outstanding-miss limit in flight; hinting faults give no rate, so this is the user's statement about the program, not a measurement)`
          : `assumed ${MEMORY_STALL_SHARE * 100} % (hinting faults give no rate; the access rate that gives it is assumed, so rates and times are relative; a streaming program: access rates "bandwidth-bound")`;
  const mlp = bandwidthBound ? t.mlpLimit.value : t.mlp.value;
  return (
    `each window's closed loop calibrated on the recording under the recorded placement (latency: ${latency}; ` +
    `stall share ${share}, with ${mlp.toFixed(2)} outstanding accesses per core typical): the recorded placement is predicted at its recorded time and latency`
  );
}
