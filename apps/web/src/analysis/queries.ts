/**
 * The Worker's questions and answers after a trace is open. `answerQuery` is what the Worker
 * runs; it is pure (given the columns) so it is unit-tested without a Worker.
 */
import { addressHeatmap, rangeCounts, regionDetail, regionTable } from './aggregate';
import type { Heatmap, HeatmapQuery, RangeCounts, RegionDetail, RegionTable } from './aggregate';
import type { TimeRange, TraceColumns } from './columns';

export type Query =
  | { kind: 'range'; range: TimeRange | null }
  | { kind: 'regions'; range: TimeRange | null }
  | { kind: 'region'; region: number; range: TimeRange | null }
  | ({ kind: 'heatmap' } & HeatmapQuery);

export type Answer<Q extends Query> = Q extends { kind: 'range' }
  ? RangeCounts
  : Q extends { kind: 'regions' }
    ? RegionTable
    : Q extends { kind: 'region' }
      ? RegionDetail
      : Q extends { kind: 'heatmap' }
        ? Heatmap
        : never;

export type AnyAnswer = RangeCounts | RegionTable | RegionDetail | Heatmap;

export function answerQuery(cols: TraceColumns, q: Query): AnyAnswer {
  switch (q.kind) {
    case 'range':
      return rangeCounts(cols, q.range);
    case 'regions':
      return regionTable(cols, q.range);
    case 'region':
      return regionDetail(cols, q.region, q.range);
    case 'heatmap':
      return addressHeatmap(cols, q);
  }
}

/** The typed arrays of an answer, to transfer rather than copy. */
export function transferables(a: unknown): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  const visit = (v: unknown, depth: number) => {
    if (depth > 3 || v === null || typeof v !== 'object') return;
    if (ArrayBuffer.isView(v)) {
      if (v.buffer instanceof ArrayBuffer && !out.includes(v.buffer)) out.push(v.buffer);
      return;
    }
    for (const x of Object.values(v)) visit(x, depth + 1);
  };
  visit(a, 0);
  return out;
}
