/**
 * Where things lead: the views' labels and keys, zooming into a time range and back (the
 * breadcrumbs), a sample's link and the share link. Pure functions of the URL state.
 */
import { VIEWS, MAX_ZOOM_DEPTH } from '../url-state';
import type { ViewId, ViewState } from '../url-state';
import { withoutToken } from '../live/token';

export const VIEW_LABELS: Record<ViewId, string> = {
  overview: 'Overview',
  memory: 'Memory',
  threads: 'Threads',
  traffic: 'Traffic per policy',
  compare: 'Compare',
  decisions: 'Decisions',
  recommend: 'Recommendations & plan',
  diagnose: 'Diagnostics',
  machine: 'Machine',
  code: 'Code',
};

/** The key that opens a view: 1–9 the first nine tabs, 0 the tenth. */
export function viewKey(index: number): string {
  return index === 9 ? '0' : String(index + 1);
}

/** The view a digit key opens: 1 → the first tab, 9 the ninth, 0 the tenth. */
export function viewForKey(key: string): ViewId | null {
  if (!/^[0-9]$/.test(key)) return null;
  return VIEWS[key === '0' ? 9 : Number(key) - 1] ?? null;
}

/** The state after zooming into the selection; the selection stays the whole zoomed range. */
export function zoomIn(state: ViewState): Partial<ViewState> {
  const inner = state.zoom[state.zoom.length - 1];
  const r = state.range;
  if (!r || state.zoom.length >= MAX_ZOOM_DEPTH || (inner && inner.fromUs === r.fromUs && inner.toUs === r.toUs)) return {};
  return { zoom: [...state.zoom, r], range: r, pages: null };
}

/** The state after going back to breadcrumb `level` (0: the whole trace). */
export function zoomTo(state: ViewState, level: number): Partial<ViewState> {
  const zoom = state.zoom.slice(0, Math.max(0, level));
  return { zoom, range: zoom[zoom.length - 1] ?? null, pages: null };
}

/** Whether zooming in would change anything: a selection narrower than the zoomed range. */
export function canZoomIn(state: ViewState): boolean {
  return Object.keys(zoomIn(state)).length > 0;
}

/** A sample's link: `?trace=samples/NAME`, with this tab's serve token when it has one (so Live stays reachable). */
export function sampleHref(url: string, token: string | null): string {
  return token ? `?token=${encodeURIComponent(token)}&trace=${url}` : `?trace=${url}`;
}

/**
 * A link that reopens this view, or null when the trace cannot be reached by URL (opened from a
 * file or dropped): never with the live session's token, which belongs to this browser only.
 */
export function shareLink(source: string): string | null {
  const byUrl = /^https?:|^samples\//.test(source) || new URLSearchParams(window.location.search).has('trace');
  return byUrl ? withoutToken(window.location.href) : null;
}
