/**
 * Pure helpers behind ThreadTimeline: turn a thread's placement observations into segments
 * (a run of time on one cpu), and find the segment under a point for hit-testing.
 */

export interface PlacementSeries {
  /** Observation times, µs since capture start, ascending. */
  timeUs: ArrayLike<number>;
  cpu: ArrayLike<number>;
  /** Node of that cpu; -1 unknown. */
  node: ArrayLike<number>;
}

export interface TimelineThread {
  /** Row index into the trace's threads table. */
  index: number;
  tid: number;
  name: string;
  placements: PlacementSeries;
}

export interface TimelineSegment {
  /** Row of the timeline (position of the thread in the list given to the chart). */
  row: number;
  startUs: number;
  endUs: number;
  cpu: number;
  node: number;
}

/**
 * One segment per run of observations on the same cpu and node. An observation holds until the
 * next one; the last holds until `endUs` (the capture's end), or for zero time if it is later.
 */
export function threadSegments(series: PlacementSeries, endUs: number, row = 0): TimelineSegment[] {
  const n = series.timeUs.length;
  const order = Array.from({ length: n }, (_, i) => i);
  let sorted = true;
  for (let i = 1; i < n; i++) {
    if (series.timeUs[i]! < series.timeUs[i - 1]!) {
      sorted = false;
      break;
    }
  }
  if (!sorted) order.sort((a, b) => series.timeUs[a]! - series.timeUs[b]!);

  const segments: TimelineSegment[] = [];
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    const start = series.timeUs[i]!;
    const cpu = series.cpu[i]!;
    const node = series.node[i]!;
    const last = segments[segments.length - 1];
    if (last && last.cpu === cpu && last.node === node) continue; // same place: the run goes on
    if (last) last.endUs = start;
    segments.push({ row, startUs: start, endUs: start, cpu, node });
  }
  const last = segments[segments.length - 1];
  if (last) last.endUs = Math.max(last.startUs, endUs);
  return segments;
}

/** Index of the segment covering `timeUs` in a row's segments (sorted by start), or -1. */
export function segmentAt(segments: readonly TimelineSegment[], timeUs: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (segments[mid]!.startUs <= timeUs) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found < 0) return -1;
  const s = segments[found]!;
  return timeUs <= s.endUs ? found : -1;
}
