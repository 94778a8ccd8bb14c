/**
 * Objects: every page and every sample attributed to the allocation it belongs to, from the
 * trace's `allocations` table (format v2 and later, docs/trace-format.md "Allocation sites"), or to none
 * (then only to its region, as before). docs/engine.md, "Objects", states the rules:
 *
 * - a page belongs to the allocation that overlaps it most among those live at the page's first
 *   touch (allocated at or before it, not yet freed); with no first-touch time, among all that
 *   ever overlapped it; ties go to the latest allocated;
 * - a sample belongs to the latest allocation that holds its exact address (page + offset) and
 *   is live at the sample's time; none when no recorded allocation does.
 *
 * "Live" uses `end_us` (-1: the end was not seen, so live to the end of the trace; frees of
 * byte-sampled blocks are never recorded). One sweep over pages in address order keeps the
 * allocations overlapping the current page; at most MAX_CANDIDATES_PER_PAGE of them (the latest
 * allocated) are considered per page, which bounds the work where a heap address is reused by
 * many recorded allocations. Pure, no DOM or Node: runs in the app's Worker and in the CLI.
 */
import { dictionaryColumn, numericColumn, stringColumn, timeColumn, type TimeColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';

/** Allocations considered per page (the latest allocated ones); see the module comment. */
export const MAX_CANDIDATES_PER_PAGE = 1024;
const PAGE = 4096;

/** One frame of an allocation's call stack, for display. */
export interface StackFrameView {
  function: string | null;
  file: string | null;
  line: number;
  col: number;
  inlined: boolean;
  /** Path of the module (executable or shared object), null when unknown. */
  module: string | null;
  buildId: string | null;
  /** Address in the module's ELF file (what re-finds the code in another run of the same build). */
  moduleOffset: number;
}

/** The allocation-site tables as typed columns, plus where each page and sample belongs. */
export interface ObjectColumns {
  count: number;
  address: Float64Array;
  size: Float64Array;
  timeUs: TimeColumn;
  /** -1: the end was not seen. */
  endUs: Float64Array;
  thread: Int32Array;
  sampled: Int8Array;
  weightBytes: Float64Array;
  region: Int32Array;
  site: Int32Array;
  stack: Int32Array;
  op: { codes: ArrayLike<number>; values: string[] };
  /** Per page: row of allocations, -1 none. */
  pageAllocation: Int32Array;
  /** Per sample: row of allocations, -1 none. */
  sampleAllocation: Int32Array;
  frames: {
    module: Int32Array;
    moduleOffset: Float64Array;
    function: Array<string | null>;
    functionOffset: Float64Array;
    file: Array<string | null>;
    line: Int32Array;
    col: Int16Array;
    inlined: Int8Array;
  };
  modules: { path: Array<string | null>; buildId: Array<string | null> };
  /** `stacks` as CSR: stack s is frames[stackStart[s] .. stackStart[s + 1]). */
  stackStart: Int32Array;
  stackFrames: Uint32Array;
}

/** Inputs of the attribution, as typed arrays (tests build them directly). */
export interface AttributionInput {
  allocAddress: Float64Array;
  allocSize: Float64Array;
  allocTimeUs: ArrayLike<number>;
  /** -1: not seen. */
  allocEndUs: ArrayLike<number>;
  pageAddress: Float64Array;
  /** -1: unknown. */
  pageFirstTouchUs: ArrayLike<number>;
  samplePage: Int32Array;
  sampleOffset: ArrayLike<number>;
  sampleTimeUs: ArrayLike<number>;
}

/** Page -> allocation and sample -> allocation (rows of allocations, -1 none). */
export function attributeObjects(inp: AttributionInput): { pageAllocation: Int32Array; sampleAllocation: Int32Array } {
  const nAlloc = inp.allocAddress.length;
  const nPages = inp.pageAddress.length;
  const nSamples = inp.samplePage.length;
  const pageAllocation = new Int32Array(nPages).fill(-1);
  const sampleAllocation = new Int32Array(nSamples).fill(-1);
  if (nAlloc === 0 || nPages === 0) return { pageAllocation, sampleAllocation };

  const allocEnd = (a: number) => inp.allocAddress[a]! + inp.allocSize[a]!;
  const live = (a: number, t: number) => inp.allocTimeUs[a]! <= t && (inp.allocEndUs[a]! < 0 || t < inp.allocEndUs[a]!);
  const byStart = Int32Array.from({ length: nAlloc }, (_, i) => i).sort((x, y) => inp.allocAddress[x]! - inp.allocAddress[y]! || x - y);
  const pageOrder = Int32Array.from({ length: nPages }, (_, i) => i).sort((x, y) => inp.pageAddress[x]! - inp.pageAddress[y]! || x - y);

  // Samples grouped by page (counting sort), so that each page's samples are decided with its candidates.
  const pageSampleStart = new Int32Array(nPages + 1);
  for (let i = 0; i < nSamples; i++) {
    const p = inp.samplePage[i]!;
    if (p >= 0 && p < nPages) pageSampleStart[p + 1]!++;
  }
  for (let p = 0; p < nPages; p++) pageSampleStart[p + 1]! += pageSampleStart[p]!;
  const fill = pageSampleStart.slice(0, nPages);
  const pageSamples = new Int32Array(pageSampleStart[nPages]!);
  for (let i = 0; i < nSamples; i++) {
    const p = inp.samplePage[i]!;
    if (p >= 0 && p < nPages) pageSamples[fill[p]!++] = i;
  }

  let active: number[] = [];
  let next = 0;
  for (let r = 0; r < nPages; r++) {
    const p = pageOrder[r]!;
    const lo = inp.pageAddress[p]!;
    const hi = lo + PAGE;
    while (next < nAlloc && inp.allocAddress[byStart[next]!]! < hi) active.push(byStart[next++]!);
    active = active.filter((a) => allocEnd(a) > lo);
    if (active.length === 0) continue;
    // Latest allocated first; at most MAX_CANDIDATES_PER_PAGE.
    let cands = active.slice().sort((x, y) => inp.allocTimeUs[y]! - inp.allocTimeUs[x]! || y - x);
    if (cands.length > MAX_CANDIDATES_PER_PAGE) cands = cands.slice(0, MAX_CANDIDATES_PER_PAGE);

    const t = inp.pageFirstTouchUs[p]!;
    let best = -1;
    let bestOverlap = 0;
    for (const a of cands) {
      if (t >= 0 && !live(a, t)) continue;
      const overlap = Math.min(hi, allocEnd(a)) - Math.max(lo, inp.allocAddress[a]!);
      if (overlap > bestOverlap) {
        best = a;
        bestOverlap = overlap;
      }
    }
    pageAllocation[p] = best;

    for (let k = pageSampleStart[p]!; k < pageSampleStart[p + 1]!; k++) {
      const i = pageSamples[k]!;
      const addr = lo + inp.sampleOffset[i]!;
      const ts = inp.sampleTimeUs[i]!;
      for (const a of cands) {
        if (inp.allocAddress[a]! <= addr && addr < allocEnd(a) && live(a, ts)) {
          sampleAllocation[i] = a;
          break;
        }
      }
    }
  }
  return { pageAllocation, sampleAllocation };
}

/** The allocation-site tables of a trace with the attribution of its pages and samples; null when it has no allocations. */
export function objectColumns(trace: Trace): ObjectColumns | null {
  const { tables } = trace;
  const a = tables.allocations;
  if (a.numRows === 0) return null;
  const address = Float64Array.from(numericColumn<BigUint64Array>(a, 'address'), Number);
  const size = Float64Array.from(numericColumn<BigUint64Array>(a, 'size'), Number);
  const timeUs = timeColumn(a, 'time_us');
  const endUs = Float64Array.from(numericColumn<BigInt64Array>(a, 'end_us'), Number);
  const pageAddress = Float64Array.from(numericColumn<BigUint64Array>(tables.pages, 'address'), Number);
  const pageFirstTouchUs = Float64Array.from(numericColumn<BigInt64Array>(tables.pages, 'first_touch_us'), Number);
  const { pageAllocation, sampleAllocation } = attributeObjects({
    allocAddress: address,
    allocSize: size,
    allocTimeUs: timeUs,
    allocEndUs: endUs,
    pageAddress,
    pageFirstTouchUs,
    samplePage: numericColumn<Int32Array>(tables.samples, 'page'),
    sampleOffset: numericColumn<Uint16Array>(tables.samples, 'offset'),
    sampleTimeUs: timeColumn(tables.samples, 'time_us'),
  });
  const st = tables.stacks;
  const stackIds = numericColumn<Uint32Array>(st, 'stack');
  const nStacks = stackIds.length === 0 ? 0 : stackIds[stackIds.length - 1]! + 1;
  // The reader checked that stack ids run 0, 1, 2, … in row order with depths 0, 1, 2, ….
  const stackStart = new Int32Array(nStacks + 1);
  for (let i = 0; i < stackIds.length; i++) stackStart[stackIds[i]! + 1]!++;
  for (let s = 0; s < nStacks; s++) stackStart[s + 1]! += stackStart[s]!;
  const fr = tables.frames;
  const md = tables.modules;
  return {
    count: a.numRows,
    address,
    size,
    timeUs,
    endUs,
    thread: numericColumn<Int32Array>(a, 'thread'),
    sampled: numericColumn<Int8Array>(a, 'sampled'),
    weightBytes: numericColumn<Float64Array>(a, 'weight_bytes'),
    region: numericColumn<Int32Array>(a, 'region'),
    site: numericColumn<Int32Array>(a, 'site'),
    stack: numericColumn<Int32Array>(a, 'stack'),
    op: dictionaryColumn(a, 'op'),
    pageAllocation,
    sampleAllocation,
    frames: {
      module: numericColumn<Int32Array>(fr, 'module'),
      moduleOffset: Float64Array.from(numericColumn<BigUint64Array>(fr, 'module_offset'), Number),
      function: stringColumn(fr, 'function'),
      functionOffset: Float64Array.from(numericColumn<BigInt64Array>(fr, 'function_offset'), Number),
      file: stringColumn(fr, 'file'),
      line: numericColumn<Int32Array>(fr, 'line'),
      col: numericColumn<Int16Array>(fr, 'col'),
      inlined: numericColumn<Int8Array>(fr, 'inlined'),
    },
    modules: { path: stringColumn(md, 'path'), buildId: stringColumn(md, 'build_id') },
    stackStart,
    stackFrames: numericColumn<Uint32Array>(st, 'frame'),
  };
}

function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i >= 0 ? path.slice(i + 1) : path;
}

/**
 * A frame in one line: `function file:line` (file's base name), else `function+0x1f (module)`,
 * else `module+0x1234` (the same text the collector writes into `regions.alloc_site`).
 */
export function describeFrame(o: ObjectColumns, f: number): string {
  const fr = o.frames;
  const m = fr.module[f]!;
  const module = m >= 0 ? baseName(o.modules.path[m] ?? '?') : null;
  const fn = fr.function[f] ?? null;
  const file = fr.file[f] ?? null;
  if (file !== null && fr.line[f]! >= 0) return `${fn ?? '?'} ${baseName(file)}:${fr.line[f]}`;
  const off = fr.functionOffset[f]!;
  if (fn !== null) return `${fn}${off >= 0 ? `+0x${off.toString(16)}` : ''}${module ? ` (${module})` : ''}`;
  return `${module ?? '?'}+0x${fr.moduleOffset[f]!.toString(16)}`;
}

/** The call stack of an allocation, innermost frame first (empty when none was recorded). */
export function allocationStack(o: ObjectColumns, allocation: number): StackFrameView[] {
  const s = o.stack[allocation]!;
  if (s < 0 || s + 1 >= o.stackStart.length) return [];
  const out: StackFrameView[] = [];
  for (let k = o.stackStart[s]!; k < o.stackStart[s + 1]!; k++) {
    const f = o.stackFrames[k]!;
    const m = o.frames.module[f]!;
    out.push({
      function: o.frames.function[f] ?? null,
      file: o.frames.file[f] ?? null,
      line: o.frames.line[f]!,
      col: o.frames.col[f]!,
      inlined: o.frames.inlined[f] === 1,
      module: m >= 0 ? (o.modules.path[m] ?? null) : null,
      buildId: m >= 0 ? (o.modules.buildId[m] ?? null) : null,
      moduleOffset: o.frames.moduleOffset[f]!,
    });
  }
  return out;
}
