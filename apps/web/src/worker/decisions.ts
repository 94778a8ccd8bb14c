/**
 * Every policy decision of an analysis (engine `Decision`: window, kind, explanation, pages,
 * threads, target nodes), as rows the Decisions view, the Memory view and the region details
 * show: pure functions over an AnalysisResult and the open trace's page columns, run in the
 * Worker (page index arrays never cross to the UI thread; a selected decision's pages are asked
 * for on their own, as address-order ranks). Filtering and selecting rows is the UI's
 * (ui/selectors/decisions.ts).
 */
import type { AnalysisResult, DecisionKind } from '@numascope/policy-engine';

/** What a decision is about. */
export type DecisionScope = 'pages' | 'all-pages' | 'threads' | 'policy';

export interface DecisionView {
  /** `policy.index`: stable for one analysis (the same request), kept in the URL (`dec=`). */
  key: string;
  policy: string;
  /** Position in the policy's decisions. */
  index: number;
  /** Window index in the whole trace (a time-range analysis counts from its first window). */
  window: number;
  /** The window's time span, µs since the capture start. */
  fromUs: number;
  toUs: number;
  kind: DecisionKind;
  explanation: string;
  /** Pages the decision is about (count), null when it names none. */
  pages: number | null;
  /** Thread rows it moves, null when none. */
  threads: number[] | null;
  /** Kernel node ids it sends pages or threads to, null when not applicable. */
  toNodeIds: number[] | null;
  scope: DecisionScope;
  /** Scope 'pages': its pages per region (regions-table index), most pages first. */
  regions: Array<{ region: number; pages: number }>;
  /** Scope 'pages': pages outside every listed region. */
  outsideRegions: number;
  /** Scope 'pages': its pages' span in address order, [rankLo, rankHi); -1 otherwise. */
  rankLo: number;
  rankHi: number;
}

/** The open trace's page columns the decisions are mapped onto (the engine's QueryColumns). */
export interface PageColumns {
  pageCount: number;
  pageRank: Int32Array;
  pageRegion: Int32Array;
  regionCount: number;
}

export function decisionKey(policy: string, index: number): string {
  return `${policy}.${index}`;
}

/** Every decision of every policy of `result`, sorted by window, then policy (in the result's order), then position. */
export function decisionViews(result: AnalysisResult, cols: PageColumns): DecisionView[] {
  const input = result.input;
  const first = result.timeRange?.firstWindow ?? 0;
  const nodeIds = input.machine.nodeIds;
  const out: Array<DecisionView & { order: number }> = [];
  result.policies.forEach((p, order) => {
    p.replay.decisions.forEach((d, index) => {
      const w = Math.max(0, Math.min(d.window, input.windows.length - 1));
      const info = input.windows.length > 0 ? input.windows.info(w) : { startUs: 0, endUs: 0 };
      const regions = new Map<number, number>();
      let outsideRegions = 0;
      let rankLo = -1;
      let rankHi = -1;
      let scope: DecisionScope = 'policy';
      if (d.pageIndices && d.pageIndices.length > 0) {
        scope = 'pages';
        rankLo = Infinity;
        for (const page of d.pageIndices) {
          if (page < 0 || page >= cols.pageCount) continue;
          const r = cols.pageRegion[page]!;
          if (r >= 0 && r < cols.regionCount) regions.set(r, (regions.get(r) ?? 0) + 1);
          else outsideRegions++;
          const rank = cols.pageRank[page]!;
          if (rank < rankLo) rankLo = rank;
          if (rank + 1 > rankHi) rankHi = rank + 1;
        }
        if (rankLo === Infinity) rankLo = -1;
      } else if (d.pages !== undefined && d.pages >= input.pageCount && input.pageCount > 0) scope = 'all-pages';
      else if (d.threads && d.threads.length > 0) scope = 'threads';
      out.push({
        order,
        key: decisionKey(p.policy, index),
        policy: p.policy,
        index,
        window: first + d.window,
        fromUs: info.startUs,
        toUs: info.endUs,
        kind: d.kind,
        explanation: d.explanation,
        pages: d.pages ?? (d.pageIndices ? d.pageIndices.length : null),
        threads: d.threads ? [...d.threads] : null,
        toNodeIds: d.toNodes ? d.toNodes.map((n) => nodeIds[n] ?? n) : null,
        scope,
        regions: [...regions.entries()].map(([region, pages]) => ({ region, pages })).sort((a, b) => b.pages - a.pages || a.region - b.region),
        outsideRegions,
        rankLo,
        rankHi,
      });
    });
  });
  out.sort((a, b) => a.window - b.window || a.order - b.order || a.index - b.index);
  return out.map(({ order: _order, ...d }) => d);
}

/** The address-order ranks of a decision's pages, ascending (empty when it names no pages). */
export function decisionRanks(result: AnalysisResult, key: string, cols: Pick<PageColumns, 'pageCount' | 'pageRank'>): Int32Array {
  const dot = key.lastIndexOf('.');
  const policy = key.slice(0, dot);
  const index = Number(key.slice(dot + 1));
  const d = result.policies.find((p) => p.policy === policy)?.replay.decisions[index];
  if (!d?.pageIndices) return new Int32Array(0);
  const ranks: number[] = [];
  for (const page of d.pageIndices) if (page >= 0 && page < cols.pageCount) ranks.push(cols.pageRank[page]!);
  return Int32Array.from(ranks).sort();
}
