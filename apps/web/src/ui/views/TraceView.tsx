import { useCallback, useContext, useMemo, useRef, useState } from 'react';
import { formatCount, formatDurationUs } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';
import type { TraceOverview } from '../../worker/protocol';
import { summaryInRange } from '../selectors/summary';
import { TraceContext, useTraceQuery } from '../hooks/trace-context';
import type { TraceContextValue } from '../hooks/trace-context';
import { DEFAULT_VIEW_STATE } from '../url-state';
import { CapturePanel } from './CapturePanel';
import { MachinePanel } from './MachinePanel';
import { MachineView } from './MachineView';
import { CodeView } from './CodeView';
import { CompareView } from './CompareView';
import { DecisionsView } from './DecisionsView';
import { MemoryView } from './MemoryView';
import { NodesPanel } from './NodesPanel';
import { OriginBanner } from './OriginBanner';
import { ShareBar } from './ShareBar';
import { ThreadsPanel } from './ThreadsPanel';
import { RecommendView } from './RecommendView';
import { DiagnosisSummary, DiagnosticsView } from './DiagnosticsView';
import { ThreadsView } from './ThreadsView';
import { TrafficView } from './TrafficView';
import { TimelinePanel } from './TimelinePanel';
import { TotalsStrip } from './TotalsStrip';
import { ViewNav } from './ViewNav';
import { ZoomBreadcrumbs } from './ZoomBreadcrumbs';
import { KeyboardHelp, useViewShortcuts } from './KeyboardHelp';

const STANDALONE: TraceContextValue = { client: null, traceId: 0, state: DEFAULT_VIEW_STATE, navigate: () => {} };

/**
 * An open trace: origin, totals, the view tabs, the timeline (whose brushed range filters every
 * view) and the current view. Without a TraceContext (unit tests) it shows the overview of the
 * whole trace.
 */
export function TraceView({ summary, source, overview }: { summary: TraceSummary; source: string; overview?: TraceOverview }) {
  const ctx = useContext(TraceContext);
  const value = ctx ?? STANDALONE;
  const body = (
    <TraceBody summary={summary} source={source} overview={overview} />
  );
  return ctx ? body : <TraceContext.Provider value={value}>{body}</TraceContext.Provider>;
}

function TraceBody({ summary, source, overview }: { summary: TraceSummary; source: string; overview?: TraceOverview }) {
  const { state, navigate } = useContext(TraceContext)!;
  const { view, range } = state;
  const needCounts = overview !== undefined && (range !== null || view === 'threads');
  const counts = useTraceQuery(needCounts ? { kind: 'range', range } : null);
  const inRange = useMemo(
    () => (range && counts.data && counts.data.range?.fromUs === range.fromUs && counts.data.range?.toUs === range.toUs ? summaryInRange(summary, counts.data) : summary),
    [summary, counts.data, range],
  );
  const panel = useRef<HTMLDivElement>(null);
  // Stable, so the export bar watches the same panel across renders.
  const getPanel = useCallback(() => panel.current, []);

  // The full header (origin banner, totals) opens the trace; every other view gets the screen, with
  // a one-line header that expands to the full one (both stay in the document, so nothing is lost).
  const compact = overview !== undefined && view !== 'overview';
  const [expanded, setExpanded] = useState(false);
  const showFull = !compact || expanded;
  const [help, setHelp] = useState(false);
  const openHelp = useCallback(() => setHelp(true), []);
  const closeHelp = useCallback(() => setHelp(false), []);
  useViewShortcuts(overview !== undefined, { onHelp: openHelp });

  return (
    <div className={compact ? 'trace trace--compact' : 'trace'} data-testid="trace-view" data-view={view} data-compact={compact ? 'true' : 'false'}>
      {compact ? (
        <div className="trace-line" data-testid="trace-line">
          <h1 className="trace-line__title">
            <span className="ns-muted">Trace</span> <span data-testid="trace-source">{source}</span>
          </h1>
          <OriginChip manifest={summary.manifest} />
          <span className="ns-muted trace-line__facts" data-testid="trace-line-facts">
            {formatDurationUs(summary.totals.durationUs)} · {formatCount(summary.nodes.length, 'node')} · {formatCount(summary.totals.threads, 'thread')}
          </span>
          <button
            type="button"
            className="link-button"
            aria-expanded={expanded}
            aria-controls="trace-header-details"
            data-testid="trace-header-toggle"
            onClick={() => setExpanded((e) => !e)}
          >
            {expanded ? 'Hide details' : 'Origin and totals'}
          </button>
        </div>
      ) : (
        <h1 className="trace__title">
          <span className="ns-muted">Trace</span> <span data-testid="trace-source">{source}</span>
        </h1>
      )}
      <div id="trace-header-details" hidden={!showFull} data-testid="trace-header-details">
        <OriginBanner manifest={summary.manifest} />
        <TotalsStrip summary={summary} />
      </div>
      {overview && (
        <>
          <ViewNav view={view} onView={(v) => navigate({ view: v })} />
          <div className="trace-tools">
            <ShareBar summary={summary} inRange={inRange} source={source} regions={overview.regions} panel={getPanel} />
            <button type="button" className="link-button trace-tools__help" data-testid="keyboard-help-open" aria-haspopup="dialog" onClick={openHelp}>
              Keyboard shortcuts <kbd>?</kbd>
            </button>
          </div>
          {help && <KeyboardHelp onClose={closeHelp} />}
        </>
      )}
      <div ref={panel} id="view-panel" tabIndex={-1} role={overview ? 'tabpanel' : undefined} aria-labelledby={overview ? `tab-${view}` : undefined} data-testid={`view-${view}`}>
        {/* The first screen opens with the findings that matter (engine diagnose), above the timeline. */}
        {view === 'overview' && overview && <DiagnosisSummary />}
        {overview && (
          <>
            <TimelinePanel
              breadcrumbs={<ZoomBreadcrumbs />}
              summary={summary}
              windows={overview.windows}
              range={range}
              domain={state.zoom.length > 0 ? state.zoom[state.zoom.length - 1]! : null}
              compact={compact}
              onRange={(r) => navigate({ range: r ?? (state.zoom.length > 0 ? state.zoom[state.zoom.length - 1]! : null), dec: null })}
            />
          </>
        )}
        {view === 'overview' && (
          <>
            <nav className="toc" aria-label="Sections">
              <a href="#machine">Machine</a>
              <a href="#capture">Capture</a>
              <a href="#nodes">Memory per node</a>
              <a href="#threads">Threads</a>
            </nav>
            <MachinePanel manifest={summary.manifest} />
            <CapturePanel manifest={summary.manifest} />
            <NodesPanel summary={inRange} />
            <ThreadsPanel summary={inRange} />
          </>
        )}
        {view === 'memory' && overview && <MemoryView summary={summary} regions={overview.regions} />}
        {view === 'threads' && overview && <ThreadsView summary={summary} counts={counts.data} migrations={overview.migrations} />}
        {view === 'traffic' && overview && <TrafficView />}
        {view === 'compare' && overview && <CompareView summary={summary} regions={overview.regions} />}
        {view === 'decisions' && overview && <DecisionsView summary={summary} regions={overview.regions} />}
        {view === 'recommend' && overview && <RecommendView source={source} />}
        {view === 'diagnose' && overview && <DiagnosticsView source={source} />}
        {view === 'machine' && overview && <MachineView summary={summary} />}
        {view === 'code' && overview && <CodeView summary={summary} />}
      </div>
    </div>
  );
}

/** The origin in a few words, for the one-line header: a synthetic trace still says so first. */
function OriginChip({ manifest }: { manifest: TraceSummary['manifest'] }) {
  const kind = manifest.origin.kind;
  const text = kind === 'synthetic' ? 'Synthetic · not a measurement' : kind === 'recorded' ? `Recorded on ${manifest.machine.name}` : `${kind[0]!.toUpperCase()}${kind.slice(1)}`;
  return (
    <span className={`origin-chip origin-chip--${kind}`} data-testid="origin-chip" data-origin={kind}>
      {text}
    </span>
  );
}
