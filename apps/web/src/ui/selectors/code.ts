/**
 * The Code view's models, pure: its request from the view state (the filters in the link), the
 * function table's sort, and the call tree's visible rows.
 */
import type { CallTreeNode, CodeOp, FunctionRow } from '@numascope/policy-engine';
import { flameChildren } from '@numascope/viz';
import type { CodeRequest } from '../../worker/code';
import type { ViewState } from '../url-state';

/** The Worker's request for the view state: every filter applies to the table, the tree and the flame graph alike. */
export function codeRequest(state: Pick<ViewState, 'range' | 'codeBy' | 'codeLoc' | 'codeNode' | 'codeOp' | 'codeObject' | 'codeThread'>): CodeRequest {
  return {
    by: state.codeBy ?? 'site',
    range: state.range ? { fromUs: state.range.fromUs, toUs: state.range.toUs } : null,
    thread: state.codeThread,
    op: state.codeOp,
    locality: state.codeLoc,
    node: state.codeLoc ? null : state.codeNode,
    object: state.codeObject,
  };
}

/** The locality control's value: `all`, `local`, `remote` or `n<node id>`. */
export function localityValue(state: Pick<ViewState, 'codeLoc' | 'codeNode'>): string {
  return state.codeLoc ?? (state.codeNode !== null ? `n${state.codeNode}` : 'all');
}

/** The view-state patch for a locality control value. */
export function localityPatch(value: string): Pick<ViewState, 'codeLoc' | 'codeNode'> {
  if (value === 'local' || value === 'remote') return { codeLoc: value, codeNode: null };
  const m = /^n(\d+)$/.exec(value);
  return { codeLoc: null, codeNode: m ? Number(m[1]) : null };
}

/** What the weights of the tree count, for the flame graph's read-out (with all ops: what the filtered samples hold). */
export function weightUnit(op: CodeOp | null, totals?: { accesses: number; firstTouches: number }): string {
  if (op === 'fault') return 'first touches';
  if (op === 'load') return 'loads';
  if (op === 'store') return 'stores';
  if (totals && totals.accesses === 0 && totals.firstTouches > 0) return 'first touches';
  if (totals && totals.firstTouches === 0 && totals.accesses > 0) return 'accesses';
  return 'accesses and first touches';
}

export type FunctionSortKey = 'function' | 'location' | 'accesses' | 'remote' | 'latency' | 'firstTouches' | 'pages' | 'objects';
export interface FunctionSort {
  key: FunctionSortKey;
  descending: boolean;
}

/** The engine's order (accesses, then first touches) until a column is picked. */
export const DEFAULT_FUNCTION_SORT: FunctionSort | null = null;

const NUMERIC: Partial<Record<FunctionSortKey, (r: FunctionRow) => number | null>> = {
  accesses: (r) => r.accesses,
  remote: (r) => r.remoteShare,
  latency: (r) => r.meanLatencyNs ?? r.meanLatencyCycles,
  firstTouches: (r) => r.firstTouches,
  pages: (r) => r.pagesSampled,
  objects: (r) => r.objects.length,
};

/** Rows sorted by a column; unknown values (null) last either way; ties keep the engine's order. */
export function sortFunctions(rows: readonly FunctionRow[], sort: FunctionSort | null): FunctionRow[] {
  const indexed = rows.map((r, i) => ({ r, i }));
  if (!sort) return rows.slice();
  const dir = sort.descending ? -1 : 1;
  const num = NUMERIC[sort.key];
  indexed.sort((a, b) => {
    if (num) {
      const x = num(a.r);
      const y = num(b.r);
      if (x === null || y === null) return x === y ? a.i - b.i : x === null ? 1 : -1;
      return (x - y) * dir || a.i - b.i;
    }
    const x = sort.key === 'function' ? a.r.function : (a.r.location ?? '');
    const y = sort.key === 'function' ? b.r.function : (b.r.location ?? '');
    return (x < y ? -1 : x > y ? 1 : 0) * dir || a.i - b.i;
  });
  return indexed.map((x) => x.r);
}

/** The next sort when a column header is clicked: numbers start descending, names ascending; a second click flips. */
export function nextSort(current: FunctionSort | null, key: FunctionSortKey): FunctionSort {
  if (current && current.key === key) return { key, descending: !current.descending };
  return { key, descending: key !== 'function' && key !== 'location' };
}

/** Each node's children, heaviest first: the flame graph's order (viz `flameChildren`), so the table and the graph agree. */
export function treeChildren(nodes: readonly CallTreeNode[]): number[][] {
  return flameChildren(nodes);
}

/** The nodes a call tree opens with expanded: the root and the heaviest path down from it. */
export function defaultExpanded(nodes: readonly CallTreeNode[], children: number[][] = treeChildren(nodes)): Set<number> {
  const out = new Set<number>();
  if (nodes.length === 0) return out;
  for (let n = 0; children[n] && children[n]!.length > 0; n = children[n]![0]!) out.add(n);
  out.add(0);
  return out;
}

export interface TreeRow {
  node: number;
  depth: number;
  hasChildren: boolean;
  expanded: boolean;
}

/** The rows shown: depth first, children heaviest first, under expanded nodes only (the root's children at depth 0). */
export function treeRows(nodes: readonly CallTreeNode[], expanded: ReadonlySet<number>, children: number[][] = treeChildren(nodes)): TreeRow[] {
  const out: TreeRow[] = [];
  if (nodes.length === 0) return out;
  const stack: Array<{ node: number; depth: number }> = [];
  for (let k = children[0]!.length - 1; k >= 0; k--) stack.push({ node: children[0]![k]!, depth: 0 });
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    const kids = children[node]!;
    const open = expanded.has(node);
    out.push({ node, depth, hasChildren: kids.length > 0, expanded: open });
    if (open) for (let k = kids.length - 1; k >= 0; k--) stack.push({ node: kids[k]!, depth: depth + 1 });
  }
  return out;
}
