/**
 * Questions about an open trace and their answers: counts over a time range, the region table,
 * one region's detail, the address-space heatmap. `answerQuery` is pure over the trace's
 * QueryColumns, so the app's Worker, the CLI and tests ask the same questions of the same code.
 */
import { addressHeatmap, rangeCounts, regionDetail, regionTable } from './aggregate.js';
import type { Heatmap, HeatmapQuery, RangeCounts, RegionDetail, RegionTable } from './aggregate.js';
import type { TimeRange, QueryColumns } from './query-columns.js';

export type TraceQuery =
  | { kind: 'range'; range: TimeRange | null }
  | { kind: 'regions'; range: TimeRange | null }
  | { kind: 'region'; region: number; range: TimeRange | null }
  | ({ kind: 'heatmap' } & HeatmapQuery);

export type TraceAnswer<Q extends TraceQuery> = Q extends { kind: 'range' }
  ? RangeCounts
  : Q extends { kind: 'regions' }
    ? RegionTable
    : Q extends { kind: 'region' }
      ? RegionDetail
      : Q extends { kind: 'heatmap' }
        ? Heatmap
        : never;

export type AnyTraceAnswer = RangeCounts | RegionTable | RegionDetail | Heatmap;

export function answerQuery(cols: QueryColumns, q: TraceQuery): AnyTraceAnswer {
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
