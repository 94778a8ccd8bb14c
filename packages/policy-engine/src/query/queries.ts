/**
 * Questions about an open trace and their answers: counts over a time range, the region table,
 * one region's detail, the objects (allocations) of a region, the address-space heatmap. `answerQuery` is pure over the trace's
 * QueryColumns, so the app's Worker, the CLI and tests ask the same questions of the same code.
 */
import { addressHeatmap, rangeCounts, regionDetail, regionTable } from './aggregate.js';
import type { Heatmap, HeatmapQuery, RangeCounts, RegionDetail, RegionTable } from './aggregate.js';
import { objectTable, type ObjectTable } from './object-table.js';
import type { TimeRange, QueryColumns } from './query-columns.js';

export type TraceQuery =
  | { kind: 'range'; range: TimeRange | null }
  | { kind: 'regions'; range: TimeRange | null }
  | { kind: 'region'; region: number; range: TimeRange | null }
  | { kind: 'objects'; region: number | null; range: TimeRange | null; limit?: number }
  | ({ kind: 'heatmap' } & HeatmapQuery);

export type TraceAnswer<Q extends TraceQuery> = Q extends { kind: 'range' }
  ? RangeCounts
  : Q extends { kind: 'regions' }
    ? RegionTable
    : Q extends { kind: 'region' }
      ? RegionDetail
      : Q extends { kind: 'objects' }
        ? ObjectTable
        : Q extends { kind: 'heatmap' }
          ? Heatmap
          : never;

export type AnyTraceAnswer = RangeCounts | RegionTable | RegionDetail | ObjectTable | Heatmap;

export function answerQuery(cols: QueryColumns, q: TraceQuery): AnyTraceAnswer {
  switch (q.kind) {
    case 'range':
      return rangeCounts(cols, q.range);
    case 'regions':
      return regionTable(cols, q.range);
    case 'region':
      return regionDetail(cols, q.region, q.range);
    case 'objects':
      return objectTable(cols, q.region, q.range, q.limit);
    case 'heatmap':
      return addressHeatmap(cols, q);
  }
}
