/**
 * The objects query: the allocations of one region (or of the whole trace) with the pages and
 * samples attributed to them (objects.ts), their sites and call stacks, and what no recorded
 * allocation holds. Pure over QueryColumns, like aggregate.ts.
 */
import { allocationStack, describeFrame, type StackFrameView } from './objects.js';
import { rowSpan, type QueryColumns, type TimeRange } from './query-columns.js';

export interface ObjectRow {
  /** Row of the allocations table. */
  allocation: number;
  address: number;
  size: number;
  /** `malloc`, `mmap`, … */
  op: string;
  timeUs: number;
  /** -1: not seen freed. */
  endUs: number;
  /** Row of threads, -1 unknown. */
  thread: number;
  sampled: boolean;
  weightBytes: number;
  /** Row of regions holding its address, -1 unknown. */
  region: number;
  /** `function file:line` of its site, null unknown. */
  site: string | null;
  /** Innermost frame first. */
  stack: StackFrameView[];
  /** Pages seen that belong to it (whole trace). */
  pages: number;
  /** Those pages per node slot (their last known node). */
  pagesPerSlot: number[];
  /** Samples, first touches and accesses attributed to it in the range. */
  samples: number;
  faults: number;
  accesses: number;
}

export interface ObjectTable {
  region: number | null;
  range: TimeRange | null;
  /** The trace has an allocations table with rows. */
  hasAllocations: boolean;
  /** Allocations in the region (or trace), of which `rows` are the busiest (by samples, then size). */
  total: number;
  rows: ObjectRow[];
  /** Pages and samples of the region (or trace) that no recorded allocation holds. */
  unattributed: { pages: number; samples: number; faults: number; accesses: number };
}

/**
 * Allocations of `region` (its `allocations.region`, or holding pages of it) or of the whole trace
 * (`region` null), busiest first, at most `limit` rows with their stacks.
 */
export function objectTable(cols: QueryColumns, region: number | null, range: TimeRange | null, limit = 50): ObjectTable {
  const o = cols.objects;
  const unattributed = { pages: 0, samples: 0, faults: 0, accesses: 0 };
  const inRegion = (page: number) => region === null || cols.pageRegion[page] === region;
  if (!o) {
    for (let p = 0; p < cols.pageCount; p++) if (inRegion(p)) unattributed.pages++;
    const { start, end, check } = rowSpan(cols, range);
    for (let i = start; i < end; i++) {
      const p = cols.page[i]!;
      if (p < 0 || !inRegion(p) || (check && range && (cols.time[i]! < range.fromUs || cols.time[i]! >= range.toUs))) continue;
      unattributed.samples++;
      if (cols.fault[i]) unattributed.faults++;
      else unattributed.accesses += cols.weight[i]!;
    }
    return { region, range, hasAllocations: false, total: 0, rows: [], unattributed };
  }
  const S = cols.slots;
  const pages = new Float64Array(o.count);
  const pagesPerSlot = new Float64Array(o.count * S);
  const samples = new Float64Array(o.count);
  const faults = new Float64Array(o.count);
  const accesses = new Float64Array(o.count);
  const member = new Uint8Array(o.count);
  for (let a = 0; a < o.count; a++) if (region === null || o.region[a] === region) member[a] = 1;
  for (let p = 0; p < cols.pageCount; p++) {
    if (!inRegion(p)) continue;
    const a = o.pageAllocation[p]!;
    if (a < 0) {
      unattributed.pages++;
      continue;
    }
    member[a] = 1;
    pages[a]!++;
    pagesPerSlot[a * S + cols.pageSlot[p]!]!++;
  }
  const { start, end, check } = rowSpan(cols, range);
  for (let i = start; i < end; i++) {
    const p = cols.page[i]!;
    if (p < 0 || !inRegion(p)) continue;
    if (check && range && (cols.time[i]! < range.fromUs || cols.time[i]! >= range.toUs)) continue;
    const a = o.sampleAllocation[i]!;
    const f = cols.fault[i]!;
    const w = cols.weight[i]!;
    if (a < 0) {
      unattributed.samples++;
      if (f) unattributed.faults++;
      else unattributed.accesses += w;
      continue;
    }
    member[a] = 1;
    samples[a]!++;
    if (f) faults[a]!++;
    else accesses[a]! += w;
  }
  const chosen: number[] = [];
  for (let a = 0; a < o.count; a++) if (member[a]) chosen.push(a);
  chosen.sort((x, y) => samples[y]! - samples[x]! || o.size[y]! - o.size[x]! || x - y);
  const rows = chosen.slice(0, Math.max(0, limit)).map(
    (a): ObjectRow => ({
      allocation: a,
      address: o.address[a]!,
      size: o.size[a]!,
      op: o.op.values[o.op.codes[a]!] ?? 'unknown',
      timeUs: o.timeUs[a]!,
      endUs: o.endUs[a]!,
      thread: o.thread[a]!,
      sampled: o.sampled[a] === 1,
      weightBytes: o.weightBytes[a]!,
      region: o.region[a]!,
      site: o.site[a]! >= 0 ? describeFrame(o, o.site[a]!) : null,
      stack: allocationStack(o, a),
      pages: pages[a]!,
      pagesPerSlot: Array.from(pagesPerSlot.subarray(a * S, a * S + S)),
      samples: samples[a]!,
      faults: faults[a]!,
      accesses: accesses[a]!,
    }),
  );
  return { region, range, hasAllocations: true, total: chosen.length, rows, unattributed };
}
