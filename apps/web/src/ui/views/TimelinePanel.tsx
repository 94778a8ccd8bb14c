import { useRef, useState } from 'react';
import type { ReactNode } from 'react';
import { WindowTimeline, formatCount, formatDurationUs } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';
import type { CountMetric, TimeRange, WindowSeries } from '@numascope/policy-engine';
import { useWidth } from '../hooks/use-width';

const LABELS: Record<CountMetric, string> = { samples: 'samples', faults: 'first touches', accesses: 'accesses' };

/** The timeline under every view: per-window counts by node, and the brushed time range that filters every view. */
export function TimelinePanel({
  summary,
  windows,
  range,
  domain = null,
  compact = false,
  breadcrumbs,
  onRange,
}: {
  summary: TraceSummary;
  windows: WindowSeries;
  range: TimeRange | null;
  /** The zoomed range the timeline shows (null: the whole trace). */
  domain?: TimeRange | null;
  /** A shorter chart and no footnote, for the views after the first. */
  compact?: boolean;
  breadcrumbs?: ReactNode;
  onRange: (r: TimeRange | null) => void;
}) {
  const noAccess = summary.totals.accessSamples === 0;
  const [metric, setMetric] = useState<CountMetric>('samples');
  const ref = useRef<HTMLDivElement>(null);
  const width = useWidth(ref);
  const nodeIds = summary.nodes.map((n) => n.id);
  const metrics: CountMetric[] = noAccess ? ['samples', 'faults'] : ['samples', 'faults', 'accesses'];
  return (
    <section className={compact ? 'timeline-panel timeline-panel--compact' : 'timeline-panel'} aria-labelledby="timeline-heading" ref={ref} data-testid="timeline-panel">
      <div className="timeline-panel__head">
        <h2 id="timeline-heading">Timeline</h2>
        <fieldset className="segmented segmented--small">
          <legend>Timeline metric</legend>
          {metrics.map((m) => (
            <label key={m}>
              <input type="radio" name="timeline-metric" value={m} checked={metric === m} onChange={() => setMetric(m)} />
              {LABELS[m]}
            </label>
          ))}
        </fieldset>
        <span className="ns-muted timeline-panel__window">
          <span data-testid="timeline-y-unit">{LABELS[metric]} per {formatDurationUs(windows.windowUs)} window</span>
          {noAccess ? ' · accesses not sampled in this trace' : ''}
        </span>
        {breadcrumbs}
        <span className="timeline-panel__range" data-testid="range-label">
          {range && !(domain && domain.fromUs === range.fromUs && domain.toUs === range.toUs) ? (
            <>
              Showing {formatDurationUs(range.fromUs)} – {formatDurationUs(range.toUs)}{' '}
              <button type="button" className="link-button" onClick={() => onRange(null)} data-testid="range-clear">
                {domain ? 'Show whole zoomed range' : 'Show whole trace'}
              </button>
            </>
          ) : (
            <span className="ns-muted">
              {compact ? 'drag to select a range' : `${domain ? 'Whole zoomed range' : 'Whole trace'} · drag on the timeline (or focus it and use the arrow keys) to select a time range`}
            </span>
          )}
        </span>
      </div>
      <WindowTimeline
        windowUs={windows.windowUs}
        windows={windows.windows}
        values={windows[metric]}
        nodeIds={nodeIds}
        metric={LABELS[metric]}
        range={range}
        domain={domain}
        onRange={onRange}
        width={Math.max(320, width)}
        height={compact ? 72 : 110}
      />
      <p className={compact ? "ns-muted hint ns-sr-only" : "ns-muted hint"} data-testid="timeline-total" data-value={sum(windows[metric])}>
        {formatCount(sum(windows[metric]))} {LABELS[metric]} in the trace. First touches are page-fault samples; accesses are what the access samples stand for.
      </p>
    </section>
  );
}

function sum(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]!;
  return s;
}
