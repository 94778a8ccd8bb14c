/**
 * The manual placement the user drags together in Compare: pure functions between the URL's
 * ManualState (thread and region indices to node ids), the items the editor shows, and the
 * engine's manual policy request (node indices, page ranges as addresses).
 */
import type { RegionMeta } from '@numascope/policy-engine';
import type { ManualState } from '../url-state';
import type { ManualRequest } from '../../worker/analysis';

/** Something the user places: a thread, a group of threads with the same name, or a region. */
export type ManualItem =
  | { kind: 'thread'; thread: number; label: string }
  | { kind: 'group'; name: string; threads: number[]; label: string }
  | { kind: 'region'; region: number; label: string; pages: number };

export function itemId(item: ManualItem): string {
  return item.kind === 'thread' ? `t${item.thread}` : item.kind === 'group' ? `g:${item.name}` : `r${item.region}`;
}

/** A thread name without its trailing number (`sc-worker-12` → `sc-worker-*`): what thread pools share. */
export function threadStem(name: string): string {
  const n = name || '(unnamed)';
  const stem = n.replace(/\d+$/, '');
  return stem === n ? n : `${stem}*`;
}

/** Threads whose names share a stem (two or more), as groups, in first-seen order. */
export function threadGroups(threads: ReadonlyArray<{ index: number; name: string }>): Array<{ name: string; threads: number[] }> {
  const byStem = new Map<string, number[]>();
  for (const t of threads) {
    const stem = threadStem(t.name);
    byStem.set(stem, [...(byStem.get(stem) ?? []), t.index]);
  }
  return [...byStem].filter(([, ts]) => ts.length >= 2).map(([name, ts]) => ({ name, threads: ts }));
}

/** Node id each thread / region is placed on (absent = as recorded). */
export function placementMaps(m: ManualState | null): { threads: Map<number, number>; regions: Map<number, number> } {
  return {
    threads: new Map((m?.threads ?? []).map((t) => [t.thread, t.node])),
    regions: new Map((m?.regions ?? []).map((r) => [r.region, r.node])),
  };
}

/** The state with `item` placed on node id `node` (null = back to as recorded); null when nothing is placed any more. */
export function placeItem(m: ManualState | null, item: ManualItem, node: number | null): ManualState | null {
  const { threads, regions } = placementMaps(m);
  const set = <K>(map: Map<K, number>, key: K) => (node === null ? map.delete(key) : map.set(key, node));
  if (item.kind === 'thread') set(threads, item.thread);
  else if (item.kind === 'group') for (const t of item.threads) set(threads, t);
  else set(regions, item.region);
  if (threads.size === 0 && regions.size === 0) return null;
  return {
    threads: [...threads].sort((a, b) => a[0] - b[0]).map(([thread, n]) => ({ thread, node: n })),
    regions: [...regions].sort((a, b) => a[0] - b[0]).map(([region, n]) => ({ region, node: n })),
  };
}

const hex = (n: number) => `0x${n.toString(16)}`;

/**
 * The engine's manual placement for a ManualState: node ids to node indices of the recording's
 * machine, regions to their address ranges. Entries naming an unknown thread, region or node are
 * dropped (a link edited by hand, or made for another recording).
 */
export function manualRequest(m: ManualState | null, nodeIds: readonly number[], threadCount: number, regions: readonly RegionMeta[]): ManualRequest {
  const index = new Map(nodeIds.map((id, i) => [id, i]));
  const threads: ManualRequest['threads'] = [];
  for (const t of m?.threads ?? []) {
    const node = index.get(t.node);
    if (node !== undefined && t.thread < threadCount) threads.push({ thread: t.thread, node });
  }
  const pages: ManualRequest['pages'] = [];
  for (const r of m?.regions ?? []) {
    const node = index.get(r.node);
    const meta = regions[r.region];
    if (node !== undefined && meta && meta.end > meta.start) pages.push({ startAddress: hex(meta.start), endAddress: hex(meta.end), node });
  }
  return { threads, pages };
}
