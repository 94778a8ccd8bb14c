import { useContext, useMemo, useRef } from 'react';
import type { TraceSummary } from '@numascope/policy-engine';
import type { TraceOverview } from '../../worker/protocol';
import { summaryInRange } from '../selectors/summary';
import { TraceContext, useTraceQuery } from '../hooks/trace-context';
import type { TraceContextValue } from '../hooks/trace-context';
import { DEFAULT_VIEW_STATE } from '../url-state';
import { CapturePanel } from './CapturePanel';
import { MachinePanel } from './MachinePanel';
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

  return (
    <div className="trace" data-testid="trace-view" data-view={view}>
      <h1 className="trace__title">
        <span className="ns-muted">Trace</span> <span data-testid="trace-source">{source}</span>
      </h1>
      <OriginBanner manifest={summary.manifest} />
      <TotalsStrip summary={summary} />
      {overview && (
        <>
          <ViewNav view={view} onView={(v) => navigate({ view: v })} />
          <ShareBar summary={summary} inRange={inRange} source={source} regions={overview.regions} panel={() => panel.current} />
        </>
      )}
      <div ref={panel} id="view-panel" role={overview ? 'tabpanel' : undefined} aria-labelledby={overview ? `tab-${view}` : undefined} data-testid={`view-${view}`}>
        {/* The first screen opens with the findings that matter (engine diagnose), above the timeline. */}
        {view === 'overview' && overview && <DiagnosisSummary />}
        {overview && (
          <TimelinePanel summary={summary} windows={overview.windows} range={range} onRange={(r) => navigate({ range: r, dec: null })} />
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
      </div>
    </div>
  );
}
