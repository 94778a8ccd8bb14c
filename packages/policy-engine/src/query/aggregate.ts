/**
 * Aggregations over an open trace (what the app's views ask its Worker for): pure functions over
 * QueryColumns. Every result is per node slot (see query-columns.ts) and keeps page faults (first touches) apart from accesses:
 * `samples` counts rows, `faults` counts page-fault rows, `accesses` sums the weights of the
 * other rows (the accesses they stand for).
 */
import type { Microseconds } from '../trace/types.js';
import { rowSpan } from './query-columns.js';
import type { TimeRange, QueryColumns } from './query-columns.js';

export type CountMetric = 'samples' | 'faults' | 'accesses';

/** Counts per (key, node slot), laid out `key * slots + slot`. */
export interface SlotCounts {
  samples: Float64Array;
  faults: Float64Array;
  accesses: Float64Array;
}

function slotCounts(n: number): SlotCounts {
  return { samples: new Float64Array(n), faults: new Float64Array(n), accesses: new Float64Array(n) };
}

// ---------------------------------------------------------------- time windows

const NICE = [1, 2, 5];

/** A round window size (1, 2 or 5 × 10^k µs) giving at most `target` windows over the duration. */
export function chooseWindowUs(durationUs: Microseconds, target = 200): Microseconds {
  const raw = Math.max(1, durationUs) / target;
  for (let exp = 0; exp < 12; exp++) {
    for (const m of NICE) {
      const w = m * 10 ** exp;
      if (w >= raw) return w;
    }
  }
  return 10 ** 12;
}

export interface WindowSeries extends SlotCounts {
  windowUs: Microseconds;
  windows: number;
  slots: number;
}

/** Samples, first touches and accesses per time window and node slot. */
export function windowSeries(cols: QueryColumns, windowUs = chooseWindowUs(cols.durationUs)): WindowSeries {
  let maxTime = cols.durationUs;
  if (cols.sampleCount > 0) maxTime = Math.max(maxTime, cols.timeSorted ? cols.time[cols.sampleCount - 1]! : Math.max(...cols.time));
  const windows = Math.max(1, Math.floor(maxTime / windowUs) + (maxTime % windowUs === 0 && maxTime > 0 ? 0 : 1));
  const S = cols.slots;
  const out = slotCounts(windows * S);
  const { time, slot, fault, weight } = cols;
  for (let i = 0; i < cols.sampleCount; i++) {
    const w = Math.min(windows - 1, Math.floor(time[i]! / windowUs));
    const k = w * S + slot[i]!;
    out.samples[k]!++;
    if (fault[i]) out.faults[k]!++;
    else out.accesses[k]! += weight[i]!;
  }
  return { windowUs, windows, slots: S, ...out };
}

// ---------------------------------------------------------------- range totals

export interface RangeCounts {
  range: TimeRange | null;
  slots: number;
  /** Per node slot. */
  nodes: SlotCounts;
  /** Per thread × node slot (node of the page touched). */
  threadNodes: SlotCounts;
  threadCount: number;
  samples: number;
  faults: number;
  accesses: number;
}

/** Per node and per thread × node counts of the samples in a time range. */
export function rangeCounts(cols: QueryColumns, range: TimeRange | null): RangeCounts {
  const S = cols.slots;
  const T = cols.threadCount;
  const nodes = slotCounts(S);
  const threadNodes = slotCounts(T * S);
  const { time, thread, slot, fault, weight } = cols;
  const { start, end, check } = rowSpan(cols, range);
  let samples = 0;
  let faults = 0;
  let accesses = 0;
  for (let i = start; i < end; i++) {
    if (check && (time[i]! < range!.fromUs || time[i]! >= range!.toUs)) continue;
    const s = slot[i]!;
    const t = thread[i]!;
    const k = t < T ? t * S + s : -1;
    samples++;
    nodes.samples[s]!++;
    if (k >= 0) threadNodes.samples[k]!++;
    if (fault[i]) {
      faults++;
      nodes.faults[s]!++;
      if (k >= 0) threadNodes.faults[k]!++;
    } else {
      const w = weight[i]!;
      accesses += w;
      nodes.accesses[s]! += w;
      if (k >= 0) threadNodes.accesses[k]! += w;
    }
  }
  return { range, slots: S, nodes, threadNodes, threadCount: T, samples, faults, accesses };
}

// ---------------------------------------------------------------- regions

export interface RegionTable extends SlotCounts {
  range: TimeRange | null;
  slots: number;
  regions: number;
  /** Pages-table rows per region × node slot (last known node). */
  pages: Float64Array;
  /** Samples whose page has no region (region -1), and samples with no address at all. */
  outsideRegions: number;
  noAddress: number;
}

/** Per region: pages per node, and samples / first touches / accesses per node of the samples in range. */
export function regionTable(cols: QueryColumns, range: TimeRange | null): RegionTable {
  const S = cols.slots;
  const R = cols.regionCount;
  const out = slotCounts(R * S);
  const pages = new Float64Array(R * S);
  for (let p = 0; p < cols.pageCount; p++) {
    const r = cols.pageRegion[p]!;
    if (r >= 0 && r < R) pages[r * S + cols.pageSlot[p]!]!++;
  }
  const { time, page, slot, fault, weight, pageRegion } = cols;
  const { start, end, check } = rowSpan(cols, range);
  let outsideRegions = 0;
  let noAddress = 0;
  for (let i = start; i < end; i++) {
    if (check && (time[i]! < range!.fromUs || time[i]! >= range!.toUs)) continue;
    const p = page[i]!;
    if (p < 0 || p >= cols.pageCount) {
      noAddress++;
      continue;
    }
    const r = pageRegion[p]!;
    if (r < 0 || r >= R) {
      outsideRegions++;
      continue;
    }
    const k = r * S + slot[i]!;
    out.samples[k]!++;
    if (fault[i]) out.faults[k]!++;
    else out.accesses[k]! += weight[i]!;
  }
  return { range, slots: S, regions: R, pages, outsideRegions, noAddress, ...out };
}

export interface RegionDetail {
  region: number;
  range: TimeRange | null;
  slots: number;
  threadCount: number;
  /** Sharing pattern: per thread × node slot (node of the page), samples in range on this region's pages. */
  threadNodes: SlotCounts;
  /** Pages of the region whose first touch was made by each thread (index = thread; last entry = unknown). */
  firstTouchPages: Float64Array;
  pages: number;
  /** Threads with at least one sample on the region in range. */
  threadsTouching: number;
  /** Node slots with at least one sample on the region in range. */
  nodesTouched: number;
}

/** Which threads touch a region, on which nodes, and who first touched its pages. */
export function regionDetail(cols: QueryColumns, region: number, range: TimeRange | null): RegionDetail {
  const S = cols.slots;
  const T = cols.threadCount;
  const threadNodes = slotCounts(T * S);
  const firstTouchPages = new Float64Array(T + 1);
  let pages = 0;
  for (let p = 0; p < cols.pageCount; p++) {
    if (cols.pageRegion[p] !== region) continue;
    pages++;
    const t = cols.pageFirstThread[p]!;
    firstTouchPages[t >= 0 && t < T ? t : T]!++;
  }
  const { time, page, thread, slot, fault, weight, pageRegion } = cols;
  const { start, end, check } = rowSpan(cols, range);
  for (let i = start; i < end; i++) {
    if (check && (time[i]! < range!.fromUs || time[i]! >= range!.toUs)) continue;
    const p = page[i]!;
    if (p < 0 || pageRegion[p] !== region) continue;
    const t = thread[i]!;
    if (t >= T) continue;
    const k = t * S + slot[i]!;
    threadNodes.samples[k]!++;
    if (fault[i]) threadNodes.faults[k]!++;
    else threadNodes.accesses[k]! += weight[i]!;
  }
  let threadsTouching = 0;
  for (let t = 0; t < T; t++) {
    for (let s = 0; s < S; s++) {
      if (threadNodes.samples[t * S + s]! > 0) {
        threadsTouching++;
        break;
      }
    }
  }
  let nodesTouched = 0;
  for (let s = 0; s < S; s++) {
    for (let t = 0; t < T; t++) {
      if (threadNodes.samples[t * S + s]! > 0) {
        nodesTouched++;
        break;
      }
    }
  }
  return { region, range, slots: S, threadCount: T, threadNodes, firstTouchPages, pages, threadsTouching, nodesTouched };
}

// ---------------------------------------------------------------- address-space heatmap

/** Cell colour: the accessing node (hue) with sample count (intensity), or a count metric alone. */
export type HeatmapMode = 'node' | CountMetric;

export interface HeatmapQuery {
  range: TimeRange | null;
  /** Pages shown, as a window [rankLo, rankHi) over the pages sorted by address; null = all. */
  pages: { lo: number; hi: number } | null;
  /** Rows and columns wanted: the canvas's pixel size; the result never has more. */
  rows: number;
  cols: number;
  mode: HeatmapMode;
}

export interface Heatmap {
  mode: HeatmapMode;
  rows: number;
  cols: number;
  fromUs: Microseconds;
  toUs: Microseconds;
  rankLo: number;
  rankHi: number;
  /** rows × cols, row-major, row 0 = lowest address. Samples (mode 'node') or the metric. */
  values: Float64Array;
  /** Mode 'node': per cell, the node slot of the cpus that made most of its samples (slots-1 = unknown). */
  dominant: Uint8Array;
  /** Address of each row's first page and the region it lies in. */
  rowAddress: Float64Array;
  rowRegion: Int32Array;
  /** Sum of values: every sample in range on a page in the window. */
  total: number;
  max: number;
  slots: number;
  /** Samples in range without an address (not drawable). */
  noAddress: number;
  /** Pages in the whole trace (the full zoom-out). */
  pageCount: number;
}

/**
 * Pages (in address order, so the empty gaps of the address space take no room) × time, binned
 * to at most `rows` × `cols` cells, so the renderer never gets more cells than pixels.
 */
export function addressHeatmap(cols: QueryColumns, q: HeatmapQuery): Heatmap {
  const S = cols.slots;
  const fromUs = q.range ? q.range.fromUs : 0;
  const toUs = q.range ? q.range.toUs : Math.max(1, cols.durationUs);
  const lo = Math.max(0, Math.min(cols.pageCount, q.pages?.lo ?? 0));
  const hi = Math.max(lo, Math.min(cols.pageCount, q.pages?.hi ?? cols.pageCount));
  const span = hi - lo;
  const rows = Math.max(1, Math.min(Math.floor(q.rows), span || 1));
  const ncols = Math.max(1, Math.min(Math.floor(q.cols), Math.max(1, toUs - fromUs)));
  const cells = rows * ncols;
  const values = new Float64Array(cells);
  const perSlot = q.mode === 'node' ? new Float64Array(cells * S) : null;
  const { time, page, cpuSlot, fault, weight, pageRank } = cols;
  const { start, end } = rowSpan(cols, q.range);
  const tSpan = toUs - fromUs;
  let total = 0;
  let noAddress = 0;
  for (let i = start; i < end; i++) {
    const t = time[i]!;
    if (t < fromUs || t >= toUs) continue;
    const p = page[i]!;
    if (p < 0 || p >= cols.pageCount) {
      noAddress++;
      continue;
    }
    const r = pageRank[p]!;
    if (r < lo || r >= hi) continue;
    let v: number;
    if (q.mode === 'faults') v = fault[i]!;
    else if (q.mode === 'accesses') v = fault[i] ? 0 : weight[i]!;
    else v = 1;
    if (v === 0) continue;
    const row = Math.floor(((r - lo) * rows) / span);
    const col = Math.floor(((t - fromUs) * ncols) / tSpan);
    const cell = row * ncols + col;
    values[cell]! += v;
    total += v;
    if (perSlot) perSlot[cell * S + cpuSlot[i]!]! += v;
  }
  const dominant = new Uint8Array(cells);
  let max = 0;
  for (let c = 0; c < cells; c++) {
    if (values[c]! > max) max = values[c]!;
    if (!perSlot) continue;
    let best = S - 1;
    let bestV = 0;
    for (let s = 0; s < S; s++) {
      const v = perSlot[c * S + s]!;
      if (v > bestV) {
        bestV = v;
        best = s;
      }
    }
    dominant[c] = best;
  }
  const rowAddress = new Float64Array(rows);
  const rowRegion = new Int32Array(rows);
  for (let row = 0; row < rows; row++) {
    const rank = lo + Math.ceil((row * span) / rows);
    const p = cols.pageByRank[Math.min(rank, Math.max(0, cols.pageCount - 1))];
    rowAddress[row] = p === undefined ? 0 : cols.pageAddress[p]!;
    rowRegion[row] = p === undefined ? -1 : cols.pageRegion[p]!;
  }
  return {
    mode: q.mode,
    rows,
    cols: ncols,
    fromUs,
    toUs,
    rankLo: lo,
    rankHi: hi,
    values,
    dominant,
    rowAddress,
    rowRegion,
    total,
    max,
    slots: S,
    noAddress,
    pageCount: cols.pageCount,
  };
}
