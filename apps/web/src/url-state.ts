/**
 * The screen's state in the address bar, so a shared link opens the same screen:
 * `?trace=URL&view=memory&from=1000&to=5000&region=3&thread=2&heat=accesses&pages=0-512`.
 * Pure functions over query strings; App owns history (pushState / popstate).
 */
import type { HeatmapMode, TimeRange } from './analysis';

export const VIEWS = ['overview', 'memory', 'threads', 'traffic', 'compare', 'recommend'] as const;
export type ViewId = (typeof VIEWS)[number];

export interface ViewState {
  view: ViewId;
  /** Brushed time range, µs, half-open; null = whole trace. */
  range: TimeRange | null;
  /** Selected region (memory view), index into regions. */
  region: number | null;
  /** Selected thread (threads view), index into threads. */
  thread: number | null;
  heat: HeatmapMode;
  /** Heatmap zoom: pages [lo, hi) in address order; null = all. */
  pages: { lo: number; hi: number } | null;
  /** Traffic view: the policy drawn (null = observed, else first-touch). */
  policy: string | null;
  /** Compare columns (engine/compare.ts specs: `first-touch`, `interleave@amd-genoa-2s-nps4`); null = default set. */
  cmp: string[] | null;
  /** Placement-only access estimate for page-fault-only recordings (`est=uniform`). */
  estimate: boolean;
}

export const DEFAULT_VIEW_STATE: ViewState = { view: 'overview', range: null, region: null, thread: null, heat: 'node', pages: null, policy: null, cmp: null, estimate: false };

const HEAT_MODES: readonly HeatmapMode[] = ['node', 'samples', 'faults', 'accesses'];

function nonNegativeInt(s: string | null): number | null {
  if (s === null || !/^\d+$/.test(s)) return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}

/** Reads the view state from a query string; anything malformed falls back to its default. */
export function parseViewState(search: string): ViewState {
  const p = new URLSearchParams(search);
  const view = VIEWS.find((v) => v === p.get('view')) ?? 'overview';
  const from = nonNegativeInt(p.get('from'));
  const to = nonNegativeInt(p.get('to'));
  const range = from !== null && to !== null && to > from ? { fromUs: from, toUs: to } : null;
  const heat = HEAT_MODES.find((m) => m === p.get('heat')) ?? 'node';
  const pm = /^(\d+)-(\d+)$/.exec(p.get('pages') ?? '');
  const pages = pm && Number(pm[2]) > Number(pm[1]) ? { lo: Number(pm[1]), hi: Number(pm[2]) } : null;
  const policy = /^[a-z][a-z0-9:,_-]*$/i.test(p.get('policy') ?? '') ? p.get('policy') : null;
  const cmpRaw = p.get('cmp');
  const cmp = cmpRaw ? cmpRaw.split('~').filter((c) => /^[a-z][a-z0-9:,@._-]*$/i.test(c)).slice(0, 5) : null;
  const estimate = p.get('est') === 'uniform';
  return { view, range, region: nonNegativeInt(p.get('region')), thread: nonNegativeInt(p.get('thread')), heat, pages, policy, cmp: cmp && cmp.length > 0 ? cmp : null, estimate };
}

/** Writes the view state into a query string, keeping `trace` (first) and any unknown parameters. */
export function writeViewState(search: string, s: ViewState): string {
  const p = new URLSearchParams(search);
  for (const k of ['view', 'from', 'to', 'region', 'thread', 'heat', 'pages', 'policy', 'cmp', 'est']) p.delete(k);
  if (s.view !== 'overview') p.set('view', s.view);
  if (s.range) {
    p.set('from', String(s.range.fromUs));
    p.set('to', String(s.range.toUs));
  }
  if (s.region !== null) p.set('region', String(s.region));
  if (s.thread !== null) p.set('thread', String(s.thread));
  if (s.heat !== 'node') p.set('heat', s.heat);
  if (s.pages) p.set('pages', `${s.pages.lo}-${s.pages.hi}`);
  if (s.policy) p.set('policy', s.policy);
  if (s.cmp && s.cmp.length > 0) p.set('cmp', s.cmp.join('~'));
  if (s.estimate) p.set('est', 'uniform');
  const out = p.toString().replace(/%2F/g, '/').replace(/%3A/g, ':').replace(/%40/g, '@').replace(/%2C/g, ',').replace(/%7E/g, '~');
  return out ? `?${out}` : '';
}

export function sameViewState(a: ViewState, b: ViewState): boolean {
  return writeViewState('', a) === writeViewState('', b);
}
