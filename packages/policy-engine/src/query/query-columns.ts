/**
 * The trace's hot columns as typed arrays, extracted once when a trace is opened (the app does it
 * in its Worker), plus the few derived columns every query needs (a sample's node slot, whether
 * it is a page fault, pages ranked by address). No per-row objects.
 *
 * Node slots: slot i is the machine's i-th node (`nodeIds[i]`); slot `nodeIds.length` is
 * "unknown node". Every per-node array here has `nodeIds.length + 1` entries.
 */
import { dictionaryColumn, numericColumn, stringColumn, timeColumn, type TimeColumn } from '../trace/columns.js';
import { objectColumns, type ObjectColumns } from './objects.js';
import type { Microseconds, Trace } from '../trace/types.js';

/** A half-open time range [fromUs, toUs), µs since capture start. null = the whole trace. */
export interface TimeRange {
  fromUs: Microseconds;
  toUs: Microseconds;
}

export interface QueryColumns {
  nodeIds: number[];
  /** nodeIds.length + 1 (the last slot is "unknown node"). */
  slots: number;
  durationUs: Microseconds;
  sampleCount: number;
  time: TimeColumn;
  thread: Uint32Array;
  /** Index into pages, -1 no address. */
  page: Int32Array;
  /** Node slot of the memory the sample touched: the sample's node, else its page's last node. */
  slot: Uint8Array;
  /** Node slot of the cpu that made the access (the accessing node); unknown slot when the cpu is unknown. */
  cpuSlot: Uint8Array;
  /** 1 for a page-fault row (a first touch, never an access). */
  fault: Uint8Array;
  weight: Uint32Array;
  /** samples.time_us is ascending, so a range is a contiguous run of rows. */
  timeSorted: boolean;
  pageCount: number;
  /** Page start address (exact below 2^53, which every user-space address is). */
  pageAddress: Float64Array;
  pageRegion: Int32Array;
  pageSlot: Uint8Array;
  pageFirstThread: Int32Array;
  /** pageRank[page] = position of the page in address order; pageByRank is the inverse. */
  pageRank: Int32Array;
  pageByRank: Int32Array;
  threadCount: number;
  regionCount: number;
  /** Allocation sites and where each page and sample belongs (objects.ts); null when the trace has no allocations. */
  objects: ObjectColumns | null;
}

export interface RegionMeta {
  index: number;
  start: number;
  end: number;
  kind: string;
  path: string | null;
  policy: string;
  /** `regions.alloc_site`: the site of the largest allocation in it, where the recorder knows it. */
  allocSite: string | null;
}

export interface MigrationMark {
  timeUs: Microseconds;
  thread: number;
  /** New cpu (the event's value); -1 unknown. */
  cpu: number;
  /** Node of that cpu, -1 unknown. */
  node: number;
  detail: string;
}

function slotMapper(nodeIds: readonly number[]): (node: number) => number {
  const unknown = nodeIds.length;
  const max = Math.max(0, ...nodeIds);
  const table = new Int16Array(max + 1).fill(unknown);
  nodeIds.forEach((id, i) => (table[id] = i));
  return (node) => (node >= 0 && node <= max ? table[node]! : unknown);
}

/** cpu id -> node slot, from the machine description. */
export function cpuSlots(trace: Trace): Int16Array {
  const nodes = trace.manifest.machine.nodes;
  const unknown = nodes.length;
  const maxCpu = Math.max(0, ...nodes.flatMap((n) => n.cpus));
  const out = new Int16Array(maxCpu + 1).fill(unknown);
  nodes.forEach((n, i) => n.cpus.forEach((c) => (out[c] = i)));
  return out;
}

export function queryColumns(trace: Trace): QueryColumns {
  const { manifest, tables } = trace;
  const nodeIds = manifest.machine.nodes.map((n) => n.id);
  const toSlot = slotMapper(nodeIds);
  const unknown = nodeIds.length;

  const pageNode = numericColumn<Int8Array>(tables.pages, 'node');
  const pageCount = pageNode.length;
  const pageSlot = new Uint8Array(pageCount);
  for (let p = 0; p < pageCount; p++) pageSlot[p] = toSlot(pageNode[p]!);
  const addr64 = numericColumn<BigUint64Array>(tables.pages, 'address');
  const pageAddress = new Float64Array(pageCount);
  for (let p = 0; p < pageCount; p++) pageAddress[p] = Number(addr64[p]!);
  const pageByRank = new Int32Array(pageCount);
  for (let p = 0; p < pageCount; p++) pageByRank[p] = p;
  pageByRank.sort((a, b) => pageAddress[a]! - pageAddress[b]! || a - b);
  const pageRank = new Int32Array(pageCount);
  for (let r = 0; r < pageCount; r++) pageRank[pageByRank[r]!] = r;

  const time = timeColumn(tables.samples, 'time_us');
  const page = numericColumn<Int32Array>(tables.samples, 'page');
  const sNode = numericColumn<Int8Array>(tables.samples, 'node');
  const cpu = numericColumn<Int16Array>(tables.samples, 'cpu');
  const op = dictionaryColumn(tables.samples, 'op');
  const faultCode = op.values.indexOf('fault');
  const n = time.length;
  const slot = new Uint8Array(n);
  const cpuSlot = new Uint8Array(n);
  const fault = new Uint8Array(n);
  const cpuTable = cpuSlots(trace);
  let timeSorted = true;
  for (let i = 0; i < n; i++) {
    let node = sNode[i]!;
    const p = page[i]!;
    if (node < 0 && p >= 0 && p < pageCount) node = pageNode[p]!;
    slot[i] = toSlot(node);
    const c = cpu[i]!;
    cpuSlot[i] = c >= 0 && c < cpuTable.length ? cpuTable[c]! : unknown;
    fault[i] = op.codes[i] === faultCode ? 1 : 0;
    if (i > 0 && time[i]! < time[i - 1]!) timeSorted = false;
  }

  return {
    nodeIds,
    slots: nodeIds.length + 1,
    durationUs: manifest.capture.durationUs,
    sampleCount: n,
    time,
    thread: numericColumn<Uint32Array>(tables.samples, 'thread'),
    page,
    slot,
    cpuSlot,
    fault,
    weight: numericColumn<Uint32Array>(tables.samples, 'weight'),
    timeSorted,
    pageCount,
    pageAddress,
    pageRegion: numericColumn<Int32Array>(tables.pages, 'region'),
    pageSlot,
    pageFirstThread: numericColumn<Int32Array>(tables.pages, 'first_touch_thread'),
    pageRank,
    pageByRank,
    threadCount: tables.threads.numRows,
    regionCount: tables.regions.numRows,
    objects: objectColumns(trace),
  };
}

export function regionMeta(trace: Trace): RegionMeta[] {
  const t = trace.tables.regions;
  const start = numericColumn<BigUint64Array>(t, 'start');
  const end = numericColumn<BigUint64Array>(t, 'end');
  const kind = dictionaryColumn(t, 'kind');
  const path = stringColumn(t, 'path');
  const policy = stringColumn(t, 'policy');
  const site = stringColumn(t, 'alloc_site');
  const out: RegionMeta[] = [];
  for (let i = 0; i < t.numRows; i++) {
    out.push({
      index: i,
      start: Number(start[i]!),
      end: Number(end[i]!),
      kind: kind.values[kind.codes[i]!] ?? 'other',
      path: path[i] ?? null,
      policy: policy[i] ?? 'unknown',
      allocSite: site[i] ?? null,
    });
  }
  return out;
}

/** Thread migrations the trace records as events (kind `thread-migration`; value = the new cpu). */
export function migrationMarks(trace: Trace): MigrationMark[] {
  const e = trace.tables.events;
  const kind = dictionaryColumn(e, 'kind');
  const code = kind.values.indexOf('thread-migration');
  if (code < 0) return [];
  const time = timeColumn(e, 'time_us');
  const thread = numericColumn<Int32Array>(e, 'thread');
  const value = numericColumn<BigInt64Array>(e, 'value');
  const detail = stringColumn(e, 'detail');
  const cpuNode = new Map<number, number>();
  for (const n of trace.manifest.machine.nodes) for (const c of n.cpus) cpuNode.set(c, n.id);
  const out: MigrationMark[] = [];
  for (let i = 0; i < e.numRows; i++) {
    if (kind.codes[i] !== code) continue;
    const cpu = Number(value[i]!);
    out.push({ timeUs: time[i]!, thread: thread[i]!, cpu, node: cpuNode.get(cpu) ?? -1, detail: detail[i] ?? '' });
  }
  return out.sort((a, b) => a.timeUs - b.timeUs || a.thread - b.thread);
}

/** First row with time >= t in a sorted time column. */
function lowerBound(time: TimeColumn, t: number): number {
  let lo = 0;
  let hi = time.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (time[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Rows to scan for a range: [start, end), and whether each row in it still needs its time
 * checked (only when the time column is not sorted).
 */
export function rowSpan(cols: QueryColumns, range: TimeRange | null): { start: number; end: number; check: boolean } {
  if (!range) return { start: 0, end: cols.sampleCount, check: false };
  if (!cols.timeSorted) return { start: 0, end: cols.sampleCount, check: true };
  return { start: lowerBound(cols.time, range.fromUs), end: lowerBound(cols.time, range.toUs), check: false };
}
