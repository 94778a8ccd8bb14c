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
  /** When the thread started and ended during the capture (its `thread-start` / `thread-exit` events), µs; null or absent: before the capture / still running at its end. */
  life?: ThreadLife;
}

/** A thread's start and end inside the capture, µs since its start; null: not inside it. */
export interface ThreadLife {
  startUs: number | null;
  exitUs: number | null;
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
 * next one; the last holds until the thread's exit when `life` gives one, else `endUs` (the
 * capture's end), or for zero time if that is earlier. With `life`, the time between the thread's
 * start and its first observation is a segment on an unknown cpu (cpu and node -1), and so is the
 * whole life of a thread never observed on a cpu.
 */
export function threadSegments(series: PlacementSeries, endUs: number, row = 0, life?: ThreadLife): TimelineSegment[] {
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
  const end = life?.exitUs ?? endUs;
  const last = segments[segments.length - 1];
  if (last) last.endUs = Math.max(last.startUs, end);
  const start = life?.startUs ?? null;
  if (segments.length === 0) {
    if (life && (start !== null || life.exitUs !== null)) {
      const from = start ?? 0;
      segments.push({ row, startUs: from, endUs: Math.max(from, end), cpu: -1, node: -1 });
    }
  } else if (start !== null && start < segments[0]!.startUs) {
    segments.unshift({ row, startUs: start, endUs: segments[0]!.startUs, cpu: -1, node: -1 });
  }
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
