/**
 * Zoom into the selected time range, and back out, as Firefox Profiler's committed ranges do:
 * zooming in pushes a breadcrumb (and a history entry), a breadcrumb goes back to that range.
 * The ranges are in the URL (`zoom=`), so a reload or a shared link keeps them.
 */
import { formatDurationUs } from '@numascope/viz';
import type { TimeRange } from '@numascope/policy-engine';
import { useTraceContext } from '../hooks/trace-context';
import { MAX_ZOOM_DEPTH } from '../url-state';
import type { ViewState } from '../url-state';

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

function label(r: TimeRange): string {
  return `${formatDurationUs(r.fromUs)} – ${formatDurationUs(r.toUs)}`;
}

export function ZoomBreadcrumbs() {
  const { state, navigate } = useTraceContext();
  const crumbs = [{ text: 'Whole trace', range: null as TimeRange | null }, ...state.zoom.map((r) => ({ text: label(r), range: r as TimeRange | null }))];
  return (
    <nav className="zoom-crumbs" aria-label="Zoom levels" data-testid="zoom-breadcrumbs" data-depth={state.zoom.length}>
      <ol>
        {crumbs.map((c, i) => {
          const current = i === crumbs.length - 1;
          return (
            <li key={i}>
              {current ? (
                <span aria-current="location" data-testid={`zoom-crumb-${i}`} className="zoom-crumbs__current">
                  {c.text}
                </span>
              ) : (
                <button type="button" className="link-button" data-testid={`zoom-crumb-${i}`} onClick={() => navigate(zoomTo(state, i))}>
                  {c.text}
                </button>
              )}
            </li>
          );
        })}
      </ol>
      <button
        type="button"
        className="zoom-crumbs__in"
        data-testid="zoom-in"
        disabled={!canZoomIn(state)}
        title={canZoomIn(state) ? 'Zoom the timeline into the selected range (Z)' : 'Select a time range on the timeline first, then zoom into it (Z)'}
        onClick={() => navigate(zoomIn(state))}
      >
        Zoom in
      </button>
    </nav>
  );
}
