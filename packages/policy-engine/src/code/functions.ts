/**
 * Code attribution: which functions made the sampled accesses and first-touched the pages
 * (docs/engine.md, "Code attribution"). Each sample with a stack (frames.ts) is attributed to one
 * frame, its code site (default) or its self frame, and through it to a function (module +
 * name). Per function, weighted by `samples.weight`:
 *
 * - accesses: `load`, `store` (and `unknown`) rows; `fault` rows separately, as first touches;
 * - local / remote: an access is local when the page's node at the sample (`samples.node`) is the
 *   node of the cpu it ran on (the manifest's machine); unknown when either is -1;
 * - mean latency: over the rows with `latency_cycles` > 0, weighted, divided by the recorded
 *   machine's clock (the traffic model's `clockGHz`, as the replay does: engine/windows.ts);
 * - first touches per node, weighted: the sum of `weight` of its fault rows by the node of the page
 *   (`pages.node`; the sample's `node` for a fault row without a page), the estimate of the faults
 *   it made (an adaptive page-fault sampler's sample stands for many); next to them the distinct
 *   pages its fault rows sampled, per node (fewer than the first touches whenever weights are > 1);
 * - its top source lines (the attributed frames' file:line) and the data objects it touched (the
 *   allocation each sample belongs to, query/objects.ts, grouped by allocation site), each with
 *   the allocation of that site it touched most (to show it in the app's Objects panel).
 *
 * Filters (CodeOptions): time range, threads, op, the memory's node, locality (local / remote),
 * data object and a caller's list of sample rows (the diagnostics' objects: diagnose/). The object
 * attribution, the code frames and the recorded clock are computed once per trace.
 *
 * Pure, no DOM or Node.
 */
import { recordedMachine } from '../machine/loaders.js';
import { machineModel } from '../machine/model.js';
import { trafficModel } from '../machine/traffic.js';
import { dictionaryColumn, numericColumn, timeColumn } from '../trace/columns.js';
import { describeFrame, objectColumns, type ObjectColumns } from '../query/objects.js';
import type { Trace } from '../trace/types.js';
import { codeFrames, type CodeFrames } from './frames.js';

/** `site`: the innermost frame outside allocators and runtimes (frames.ts); `self`: depth 0. */
export type CodeAttribution = 'site' | 'self';
export const CODE_ATTRIBUTIONS: readonly CodeAttribution[] = ['site', 'self'];
export type CodeOp = 'load' | 'store' | 'fault';

/** `local`: memory on the node of the cpu that made the sample; `remote`: on another node. */
export type CodeLocality = 'local' | 'remote';
export const CODE_LOCALITIES: readonly CodeLocality[] = ['local', 'remote'];

/** Which samples count, and to which frame. */
export interface CodeOptions {
  /** Default `site`. */
  by?: CodeAttribution;
  /** Only samples with fromUs ≤ time_us < toUs. */
  range?: { fromUs: number; toUs: number } | null;
  /** Only these threads' samples (rows of `threads`). */
  threads?: readonly number[] | null;
  /** Only rows of this op. */
  op?: CodeOp | null;
  /** Only samples of memory on this node (`samples.node`, a node id). */
  node?: number | null;
  /**
   * Only samples whose memory was on the cpu's node (`local`) or on another (`remote`): the page's
   * node at the sample (`samples.node`) against the node of the sample's cpu; samples where either
   * is unknown pass neither.
   */
  locality?: CodeLocality | null;
  /**
   * Only samples attributed to this data object: an allocation site as FunctionObject.site names
   * it (`main app.c:32`; objectLabel), i.e. the samples of any allocation of that site.
   */
  object?: string | null;
  /**
   * Only these sample rows (rows of `samples`; out-of-range rows are ignored, a repeated row counts
   * once), the other filters still applying: a caller's own selection, e.g. the diagnostics' one
   * object (an allocation, or a region without one), which the `object` filter (every allocation
   * of a site) cannot name. The tables then visit only these rows.
   */
  samples?: ArrayLike<number> | null;
}

export interface FunctionTableOptions extends CodeOptions {
  /** Rows returned, busiest first; default 50. */
  limit?: number;
  /** Data objects listed per function, busiest first; default 5. */
  objectLimit?: number;
}

/** One source line of a function: the attributed frames at that file:line. */
export interface FunctionLine {
  file: string | null;
  line: number;
  accesses: number;
  firstTouches: number;
}

/** A data object a function touched: the allocations of one site. */
export interface FunctionObject {
  /** The allocation site (`function file:line`), or the allocation itself where it has no site. */
  site: string;
  samples: number;
  accesses: number;
  firstTouches: number;
  /** The allocation of this site the function's samples fell in most (a row of `allocations`), and its region (-1 unknown). */
  allocation: number;
  region: number;
}

export interface FunctionRow {
  /** The function's name, or `module+0xoffset` without a symbol. */
  function: string;
  /** Its module's path, null unknown. */
  module: string | null;
  buildId: string | null;
  /** Its frames are in an allocator or runtime (only with `by: 'self'`, or a stack wholly in runtimes). */
  runtime: boolean;
  /** `file:line` (the file's base name) of its top line, null without line information. */
  location: string | null;
  /** Its source lines, busiest first (at most 5). */
  lines: FunctionLine[];
  samples: number;
  /** Weighted load, store and unknown-op rows. */
  accesses: number;
  loads: number;
  stores: number;
  /** Weighted fault rows (first touches). */
  firstTouches: number;
  /** Accesses whose memory was on the cpu's node, on another, or either unknown. */
  local: number;
  remote: number;
  unknownLocality: number;
  /** remote / (local + remote); null when neither is known. */
  remoteShare: number | null;
  /** Weighted mean of latency_cycles > 0, in ns (null: no such rows, or the clock is unknown) and in cycles. */
  meanLatencyNs: number | null;
  meanLatencyCycles: number | null;
  latencySamples: number;
  /**
   * Weighted first touches (the sum of its fault rows' `weight`: the estimate of the faults it made)
   * per node of the page (`pages.node`, the sample's node without a page; -1 unknown last).
   */
  firstTouchesByNode: Array<{ node: number; firstTouches: number }>;
  /** Distinct pages its fault rows sampled (not weighted: at most the first touches). */
  pagesSampled: number;
  /** The same per page node (`pages.node`, -1 unknown last). */
  firstTouchPages: Array<{ node: number; pages: number }>;
  /** The data objects it touched, busiest first (at most 5). */
  objects: FunctionObject[];
}

export interface FunctionTable {
  /** Some sample of the trace has a stack. */
  available: boolean;
  /** The `code-locations` capability's reason (or why no sample has a stack). */
  reason: string;
  by: CodeAttribution;
  filters: {
    range: { fromUs: number; toUs: number } | null;
    threads: number[] | null;
    op: CodeOp | null;
    node: number | null;
    locality: CodeLocality | null;
    object: string | null;
  };
  /** The clock latencies are divided by, and where it came from. */
  clock: { ghz: number | null; source: string };
  totals: {
    /** Samples that pass the filters, and those of them with a stack. */
    samples: number;
    withStack: number;
    accesses: number;
    firstTouches: number;
    /** Weighted accesses and first touches of samples without a stack (attributed to no function). */
    withoutStack: { accesses: number; firstTouches: number };
    /** Samples (by site) whose whole stack is in runtimes: attributed to their self frame. */
    siteFallbacks: number;
  };
  /** Functions with at least one sample; `rows` holds the first `limit`. */
  functionCount: number;
  rows: FunctionRow[];
}

function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i >= 0 ? path.slice(i + 1) : path;
}

/** The samples the options keep (1) and the per-sample columns the tables read. */
export interface SampleSelection {
  keep: Uint8Array;
  weight: Uint32Array;
  fault: Uint8Array;
}

/** cpu id → node id of the trace's machine. */
function cpuNodes(trace: Trace): Map<number, number> {
  const cpuNode = new Map<number, number>();
  for (const nd of trace.manifest.machine.nodes) for (const c of nd.cpus) cpuNode.set(c, nd.id);
  return cpuNode;
}

/** The allocation-site tables with each sample's allocation, computed once per trace (objects.ts). */
const objectsCache = new WeakMap<Trace, ObjectColumns | null>();
function codeObjects(trace: Trace): ObjectColumns | null {
  let o = objectsCache.get(trace);
  if (o === undefined) objectsCache.set(trace, (o = objectColumns(trace)));
  return o;
}

/**
 * The data object an allocation belongs to, as FunctionObject.site and the `object` filter name
 * it: its site (`function file:line`), or the allocation itself where it has none. Null: not an
 * allocation of the trace. `objects`: the trace's objectColumns where the caller has them (the
 * diagnostics' query columns), else computed once per trace here.
 */
export function objectLabel(trace: Trace, allocation: number, objects?: ObjectColumns | null): string | null {
  const o = objects !== undefined ? objects : codeObjects(trace);
  if (!o || !Number.isInteger(allocation) || allocation < 0 || allocation >= o.count) return null;
  return objectLabelOf(o, allocation);
}

/** A data object of the trace: the allocations of one site (or one allocation without a site), as the `object` filter names it. */
export interface DataObject {
  object: string;
  allocations: number;
  /** Samples attributed to its allocations (whole trace), and their weight. */
  samples: number;
  weight: number;
}

/** Every data object of the trace with its samples, busiest first (then by name); empty without allocations. */
export function dataObjects(trace: Trace): DataObject[] {
  const o = codeObjects(trace);
  if (!o) return [];
  const weight = numericColumn<Uint32Array>(trace.tables.samples, 'weight');
  const labelOf = new Array<string>(o.count);
  const bySite = new Map<number, string>();
  const out = new Map<string, DataObject>();
  for (let a = 0; a < o.count; a++) {
    const site = o.site[a]!;
    let label = site >= 0 ? bySite.get(site) : undefined;
    if (label === undefined) {
      label = objectLabelOf(o, a);
      if (site >= 0) bySite.set(site, label);
    }
    labelOf[a] = label;
    let d = out.get(label);
    if (!d) out.set(label, (d = { object: label, allocations: 0, samples: 0, weight: 0 }));
    d.allocations++;
  }
  for (let i = 0; i < o.sampleAllocation.length; i++) {
    const a = o.sampleAllocation[i]!;
    if (a < 0) continue;
    const d = out.get(labelOf[a]!)!;
    d.samples++;
    d.weight += weight[i]!;
  }
  return [...out.values()].sort((x, y) => y.samples - x.samples || (x.object < y.object ? -1 : x.object > y.object ? 1 : 0));
}

/**
 * Samples passing `options`' filters (time range, thread, op, memory node, locality, data object,
 * sample rows). With `samples`, `fault` is set on those rows only (the others are not kept).
 */
export function selectSamples(trace: Trace, options: CodeOptions): SampleSelection {
  const s = trace.tables.samples;
  const n = s.numRows;
  const time = timeColumn(s, 'time_us');
  const thread = numericColumn<Uint32Array>(s, 'thread');
  const node = numericColumn<Int8Array>(s, 'node');
  const cpu = numericColumn<Int16Array>(s, 'cpu');
  const weight = numericColumn<Uint32Array>(s, 'weight');
  const op = dictionaryColumn(s, 'op');
  const opCode = options.op ? op.values.indexOf(options.op) : -2;
  const FAULT = op.values.indexOf('fault');
  const keep = new Uint8Array(n);
  const fault = new Uint8Array(n);
  const range = options.range ?? null;
  const threads = options.threads ? new Set(options.threads) : null;
  const locality = options.locality ?? null;
  const cpuNode = locality ? cpuNodes(trace) : null;
  // The object filter: which allocations are of that object (none when the trace has no allocations).
  let inObject: Uint8Array | null = null;
  let objects: ObjectColumns | null = null;
  if (options.object != null) {
    objects = codeObjects(trace);
    inObject = new Uint8Array(objects?.count ?? 0);
    const labels = new Map<number, string>();
    for (let a = 0; objects && a < objects.count; a++) {
      const site = objects.site[a]!;
      let label = site >= 0 ? labels.get(site) : undefined;
      if (label === undefined) {
        label = objectLabelOf(objects, a);
        if (site >= 0) labels.set(site, label);
      }
      if (label === options.object) inObject[a] = 1;
    }
  }
  const rows = options.samples ?? null;
  const count = rows ? rows.length : n;
  for (let k = 0; k < count; k++) {
    const i = rows ? rows[k]! : k;
    if (rows && !(Number.isInteger(i) && i >= 0 && i < n)) continue;
    const c = op.codes[i]!;
    fault[i] = c === FAULT ? 1 : 0;
    if (range && (time[i]! < range.fromUs || time[i]! >= range.toUs)) continue;
    if (threads && !threads.has(thread[i]!)) continue;
    if (options.op && c !== opCode) continue;
    if (options.node != null && node[i] !== options.node) continue;
    if (cpuNode) {
      const from = cpu[i]! >= 0 ? (cpuNode.get(cpu[i]!) ?? -1) : -1;
      const mem = node[i]!;
      if (from < 0 || mem < 0 || (locality === 'local') !== (from === mem)) continue;
    }
    if (inObject) {
      const a = objects ? objects.sampleAllocation[i]! : -1;
      if (a < 0 || !inObject[a]) continue;
    }
    keep[i] = 1;
  }
  return { keep, weight, fault };
}

/** The frame a sample of stack `s` is attributed to; `fallback` set when the site rule found none. */
export function attributedFrame(code: CodeFrames, s: number, by: CodeAttribution): { frame: number; fallback: boolean } {
  if (by === 'self') return { frame: code.stackSelf[s]!, fallback: false };
  const site = code.stackSite[s]!;
  return site >= 0 ? { frame: site, fallback: false } : { frame: code.stackSelf[s]!, fallback: true };
}

/** recordedClock per trace: the machine model is built once, not per table (the diagnostics ask for two tables per issue). */
const clockCache = new WeakMap<Trace, { ghz: number | null; source: string }>();

/** The recorded machine's clock, as the replay converts PMU latencies with it. */
function recordedClock(trace: Trace): { ghz: number | null; source: string } {
  let c = clockCache.get(trace);
  if (!c) clockCache.set(trace, (c = modelClock(trace)));
  return { ...c };
}

function modelClock(trace: Trace): { ghz: number | null; source: string } {
  try {
    const c = trafficModel(machineModel(recordedMachine(trace.manifest).machine)).clockGHz;
    return { ghz: c.value, source: c.source };
  } catch (e) {
    return { ghz: null, source: `unavailable:the recorded machine could not be modelled (${(e as Error).message})` };
  }
}

/** Node ids ascending, unknown (-1) last. */
const byNodeId = (a: [number, number], b: [number, number]) => (a[0] < 0 ? 1 : b[0] < 0 ? -1 : a[0] - b[0]);

function objectLabelOf(o: ObjectColumns, a: number): string {
  const site = o.site[a]!;
  if (site >= 0) return describeFrame(o, site);
  return `${o.op.values[o.op.codes[a]!] ?? 'allocation'} of ${o.size[a]} B at 0x${o.address[a]!.toString(16)}`;
}

/** Per function: where its samples went (see the module comment), busiest first. */
export function functionTable(trace: Trace, options: FunctionTableOptions = {}): FunctionTable {
  const by = options.by ?? 'site';
  const limit = Math.max(0, options.limit ?? 50);
  const objectLimit = Math.max(0, options.objectLimit ?? 5);
  const code = codeFrames(trace);
  const filters = {
    range: options.range ?? null,
    threads: options.threads ? [...options.threads] : null,
    op: options.op ?? null,
    node: options.node ?? null,
    locality: options.locality ?? null,
    object: options.object ?? null,
  };
  const clock = recordedClock(trace);
  const { keep, weight, fault } = selectSamples(trace, options);
  const s = trace.tables.samples;
  const sCpu = numericColumn<Int16Array>(s, 'cpu');
  const sNode = numericColumn<Int8Array>(s, 'node');
  const sPage = numericColumn<Int32Array>(s, 'page');
  const latency = numericColumn<Uint32Array>(s, 'latency_cycles');
  const op = dictionaryColumn(s, 'op');
  const LOAD = op.values.indexOf('load');
  const STORE = op.values.indexOf('store');
  const pageNode = numericColumn<Int8Array>(trace.tables.pages, 'node');
  const cpuNode = cpuNodes(trace);

  const F = code.functions.length;
  const samples = new Float64Array(F);
  const accesses = new Float64Array(F);
  const loads = new Float64Array(F);
  const stores = new Float64Array(F);
  const faults = new Float64Array(F);
  const local = new Float64Array(F);
  const remote = new Float64Array(F);
  const unknown = new Float64Array(F);
  const latSum = new Float64Array(F);
  const latWeight = new Float64Array(F);
  const latCount = new Float64Array(F);
  const frameAccesses = new Float64Array(code.frames.line.length);
  const frameFaults = new Float64Array(code.frames.line.length);
  const faultPages = new Map<number, Set<number>>();
  const faultNodes = new Map<number, Map<number, number>>();
  // Without data objects asked for (objectLimit 0: the diagnostics' tables), no object attribution.
  const objects = objectLimit > 0 ? codeObjects(trace) : null;
  const objectTally = new Map<number, Map<string, FunctionObject & { byAllocation: Map<number, number> }>>();
  const objectLabels = new Map<number, string>();
  const totals = { samples: 0, withStack: 0, accesses: 0, firstTouches: 0, withoutStack: { accesses: 0, firstTouches: 0 }, siteFallbacks: 0 };

  // With a list of sample rows, visit only those (each once: its keep flag is cleared).
  const visit = options.samples ?? null;
  const visitCount = visit ? visit.length : keep.length;
  for (let k = 0; k < visitCount; k++) {
    const i = visit ? visit[k]! : k;
    if (!keep[i]) continue;
    if (visit) keep[i] = 0;
    const w = weight[i]!;
    const isFault = fault[i] === 1;
    totals.samples++;
    if (isFault) totals.firstTouches += w;
    else totals.accesses += w;
    const st = code.sampleStack[i]!;
    if (st < 0 || st >= code.stackCount) {
      if (isFault) totals.withoutStack.firstTouches += w;
      else totals.withoutStack.accesses += w;
      continue;
    }
    const { frame, fallback } = attributedFrame(code, st, by);
    if (frame < 0) continue;
    totals.withStack++;
    if (fallback) totals.siteFallbacks++;
    const f = code.frames.functionOf[frame]!;
    samples[f]!++;
    const page = sPage[i]!;
    if (isFault) {
      faults[f]! += w;
      frameFaults[frame]! += w;
      const nd = page >= 0 ? (page < pageNode.length ? pageNode[page]! : -1) : sNode[i]!;
      let byNode = faultNodes.get(f);
      if (!byNode) faultNodes.set(f, (byNode = new Map()));
      byNode.set(nd, (byNode.get(nd) ?? 0) + w);
      if (page >= 0) {
        let set = faultPages.get(f);
        if (!set) faultPages.set(f, (set = new Set()));
        set.add(page);
      }
    } else {
      accesses[f]! += w;
      frameAccesses[frame]! += w;
      const c = op.codes[i]!;
      if (c === LOAD) loads[f]! += w;
      else if (c === STORE) stores[f]! += w;
      const cpu = sCpu[i]!;
      const from = cpu >= 0 ? (cpuNode.get(cpu) ?? -1) : -1;
      const mem = sNode[i]!;
      if (from < 0 || mem < 0) unknown[f]! += w;
      else if (from === mem) local[f]! += w;
      else remote[f]! += w;
    }
    const lat = latency[i]!;
    if (lat > 0) {
      latSum[f]! += lat * w;
      latWeight[f]! += w;
      latCount[f]!++;
    }
    const a = objects ? objects.sampleAllocation[i]! : -1;
    if (objects && a >= 0) {
      let label = objectLabels.get(a);
      if (label === undefined) objectLabels.set(a, (label = objectLabelOf(objects, a)));
      let tally = objectTally.get(f);
      if (!tally) objectTally.set(f, (tally = new Map()));
      let t = tally.get(label);
      if (!t) tally.set(label, (t = { site: label, samples: 0, accesses: 0, firstTouches: 0, allocation: a, region: -1, byAllocation: new Map() }));
      t.byAllocation.set(a, (t.byAllocation.get(a) ?? 0) + w);
      t.samples++;
      if (isFault) t.firstTouches += w;
      else t.accesses += w;
    }
  }

  // Source lines per function, from the frames its samples were attributed to.
  const lineTally = new Map<number, Map<string, FunctionLine>>();
  for (let fr = 0; fr < frameAccesses.length; fr++) {
    if (frameAccesses[fr] === 0 && frameFaults[fr] === 0) continue;
    const f = code.frames.functionOf[fr]!;
    const file = code.frames.file[fr] ?? null;
    const line = code.frames.line[fr]!;
    const key = `${file ?? ''}:${line}`;
    let tally = lineTally.get(f);
    if (!tally) lineTally.set(f, (tally = new Map()));
    let t = tally.get(key);
    if (!t) tally.set(key, (t = { file, line, accesses: 0, firstTouches: 0 }));
    t.accesses += frameAccesses[fr]!;
    t.firstTouches += frameFaults[fr]!;
  }
  const busiest = <T extends { accesses: number; firstTouches: number }>(a: T, b: T) => b.accesses - a.accesses || b.firstTouches - a.firstTouches;

  const used: number[] = [];
  for (let f = 0; f < F; f++) if (samples[f]! > 0) used.push(f);
  used.sort((x, y) => accesses[y]! - accesses[x]! || faults[y]! - faults[x]! || samples[y]! - samples[x]! || (code.functions[x]!.name < code.functions[y]!.name ? -1 : code.functions[x]!.name > code.functions[y]!.name ? 1 : x - y));
  const rows = used.slice(0, limit).map((f): FunctionRow => {
    const fn = code.functions[f]!;
    const lines = [...(lineTally.get(f)?.values() ?? [])].sort((a, b) => busiest(a, b) || (a.line - b.line));
    const top = lines[0];
    const byNode = new Map<number, number>();
    for (const p of faultPages.get(f) ?? []) {
      const nd = p < pageNode.length ? pageNode[p]! : -1;
      byNode.set(nd, (byNode.get(nd) ?? 0) + 1);
    }
    const pages = faultPages.get(f)?.size ?? 0;
    const known = local[f]! + remote[f]!;
    const meanCycles = latWeight[f]! > 0 ? latSum[f]! / latWeight[f]! : null;
    return {
      function: fn.name,
      module: fn.module,
      buildId: fn.buildId,
      runtime: fn.runtime,
      location: top && top.file !== null && top.line >= 0 ? `${baseName(top.file)}:${top.line}` : null,
      lines: lines.slice(0, 5),
      samples: samples[f]!,
      accesses: accesses[f]!,
      loads: loads[f]!,
      stores: stores[f]!,
      firstTouches: faults[f]!,
      local: local[f]!,
      remote: remote[f]!,
      unknownLocality: unknown[f]!,
      remoteShare: known > 0 ? remote[f]! / known : null,
      meanLatencyNs: meanCycles !== null && clock.ghz ? meanCycles / clock.ghz : null,
      meanLatencyCycles: meanCycles,
      latencySamples: latCount[f]!,
      firstTouchesByNode: [...(faultNodes.get(f)?.entries() ?? [])].sort(byNodeId).map(([node, firstTouches]) => ({ node, firstTouches })),
      pagesSampled: pages,
      firstTouchPages: [...byNode.entries()].sort(byNodeId).map(([node, pages]) => ({ node, pages })),
      objects: [...(objectTally.get(f)?.values() ?? [])]
        .sort((a, b) => busiest(a, b) || b.samples - a.samples || (a.site < b.site ? -1 : 1))
        .slice(0, objectLimit)
        .map(({ byAllocation, ...o }) => {
          // The allocation of the site that this function's samples fell in most (lowest row on ties).
          let best = o.allocation;
          for (const [a, w] of byAllocation) if (w > byAllocation.get(best)! || (w === byAllocation.get(best)! && a < best)) best = a;
          return { ...o, allocation: best, region: objects ? objects.region[best]! : -1 };
        }),
    };
  });
  return { available: code.available, reason: code.reason, by, filters, clock, totals, functionCount: used.length, rows };
}
