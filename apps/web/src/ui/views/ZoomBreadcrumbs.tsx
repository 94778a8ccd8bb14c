/**
 * Zoom into the selected time range, and back out, as Firefox Profiler's committed ranges do:
 * zooming in pushes a breadcrumb (and a history entry), a breadcrumb goes back to that range.
 * The ranges are in the URL (`zoom=`), so a reload or a shared link keeps them.
 */
import { formatDurationUs } from '@numascope/viz';
import type { TimeRange } from '@numascope/policy-engine';
import { useTraceContext } from '../hooks/trace-context';
import { canZoomIn, zoomIn, zoomTo } from '../selectors/navigation';

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
