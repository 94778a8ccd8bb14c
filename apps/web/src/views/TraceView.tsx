import type { TraceSummary } from '@numascope/policy-engine';
import { CapturePanel } from './CapturePanel';
import { MachinePanel } from './MachinePanel';
import { NodesPanel } from './NodesPanel';
import { OriginBanner } from './OriginBanner';
import { ThreadsPanel } from './ThreadsPanel';
import { TotalsStrip } from './TotalsStrip';

export function TraceView({ summary, source }: { summary: TraceSummary; source: string }) {
  return (
    <div className="trace" data-testid="trace-view">
      <h1 className="trace__title">
        <span className="ns-muted">Trace</span> <span data-testid="trace-source">{source}</span>
      </h1>
      <OriginBanner manifest={summary.manifest} />
      <TotalsStrip summary={summary} />
      <nav className="toc" aria-label="Sections">
        <a href="#machine">Machine</a>
        <a href="#capture">Capture</a>
        <a href="#nodes">Memory per node</a>
        <a href="#threads">Threads</a>
      </nav>
      <MachinePanel manifest={summary.manifest} />
      <CapturePanel manifest={summary.manifest} />
      <NodesPanel summary={summary} />
      <ThreadsPanel summary={summary} />
    </div>
  );
}
