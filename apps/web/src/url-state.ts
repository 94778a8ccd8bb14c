/**
 * The screen's state in the address bar, so a shared link opens the same screen:
 * `?trace=URL&view=memory&from=1000&to=5000&region=3&thread=2&heat=accesses&pages=0-512`.
 * Pure functions over query strings; App owns history (pushState / popstate).
 */
import type { HeatmapMode, TimeRange } from './analysis';

export const VIEWS = ['overview', 'memory', 'threads'] as const;
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
}

export const DEFAULT_VIEW_STATE: ViewState = { view: 'overview', range: null, region: null, thread: null, heat: 'node', pages: null };

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
  return { view, range, region: nonNegativeInt(p.get('region')), thread: nonNegativeInt(p.get('thread')), heat, pages };
}

/** Writes the view state into a query string, keeping `trace` (first) and any unknown parameters. */
export function writeViewState(search: string, s: ViewState): string {
  const p = new URLSearchParams(search);
  for (const k of ['view', 'from', 'to', 'region', 'thread', 'heat', 'pages']) p.delete(k);
  if (s.view !== 'overview') p.set('view', s.view);
  if (s.range) {
    p.set('from', String(s.range.fromUs));
    p.set('to', String(s.range.toUs));
  }
  if (s.region !== null) p.set('region', String(s.region));
  if (s.thread !== null) p.set('thread', String(s.thread));
  if (s.heat !== 'node') p.set('heat', s.heat);
  if (s.pages) p.set('pages', `${s.pages.lo}-${s.pages.hi}`);
  const out = p.toString().replace(/%2F/g, '/').replace(/%3A/g, ':');
  return out ? `?${out}` : '';
}

export function sameViewState(a: ViewState, b: ViewState): boolean {
  return writeViewState('', a) === writeViewState('', b);
}
