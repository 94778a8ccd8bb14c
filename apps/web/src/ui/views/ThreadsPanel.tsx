import { useMemo } from 'react';
import { NodeLegend, ThreadTimeline, formatCount, formatCpuList } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';
import { threadRows } from '../selectors/summary';
import { VirtualTable } from './VirtualRows';

/** Threads drawn at most in the timeline (the table below lists every thread). */
export const MAX_THREAD_ROWS = 500;

/** Threads: their cpu and node over time, and per-thread totals. */
export function ThreadsPanel({ summary }: { summary: TraceSummary }) {
  const rows = useMemo(() => threadRows(summary), [summary]);
  const shown = useMemo(() => summary.threads.slice(0, MAX_THREAD_ROWS), [summary]);
  const nodeIds = summary.nodes.map((n) => n.id);
  const anyUnknown = summary.threads.some((t) => t.placements.node.some((n) => n < 0));
  const truncated = rows.length > MAX_THREAD_ROWS;

  return (
    <section className="panel" aria-labelledby="threads-heading" id="threads">
      <h2 id="threads-heading">
        Threads <span className="count" data-testid="thread-count" data-value={summary.totals.threads}>({formatCount(summary.totals.threads, 'thread')})</span>
      </h2>
      {truncated && (
        <p className="warning" data-testid="threads-timeline-truncated">
          The timeline draws the first {formatCount(MAX_THREAD_ROWS)} of {formatCount(rows.length, 'thread')}; the table below lists every one.
        </p>
      )}
      <h3>Placement over time</h3>
      <NodeLegend nodeIds={nodeIds} includeUnknown={anyUnknown} />
      <p className="ns-muted hint">Each bar is a run on one cpu, coloured by that cpu's node; hover a bar for the cpu and times.</p>
      <ThreadTimeline threads={shown} durationUs={summary.totals.durationUs} nodeIds={nodeIds} />
      <h3>Per thread</h3>
      <VirtualTable
        testId="threads-table"
        rows={rows}
        columns={10}
        head={
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">tid</th>
              <th scope="col">pid</th>
              <th scope="col" className="text">
                name
              </th>
              <th scope="col">samples</th>
              <th scope="col">first touches</th>
              <th scope="col">accesses</th>
              <th scope="col">migrations</th>
              <th scope="col">cpus seen on</th>
              <th scope="col">nodes seen on</th>
            </tr>
          </thead>
        }
        row={(t) => (

              <tr key={t.index} data-testid={`thread-row-${t.index}`}>
                <td>{t.index}</td>
                <td>{t.tid}</td>
                <td>{t.pid}</td>
                <td className="text">{t.name || <span className="ns-muted">(unnamed)</span>}</td>
                <td data-testid={`thread-${t.index}-samples`} data-value={t.samples}>
                  {formatCount(t.samples)}
                </td>
                <td data-value={t.faults}>{formatCount(t.faults)}</td>
                <td data-value={t.accesses}>{summary.totals.accessSamples === 0 ? '–' : formatCount(t.accesses)}</td>
                <td data-value={t.migrations}>{t.migrations < 0 ? 'unknown' : formatCount(t.migrations)}</td>
                <td>{t.cpus.length ? formatCpuList(t.cpus) : '–'}</td>
                <td>{t.nodes.length ? formatCpuList(t.nodes) : '–'}</td>
              </tr>
        )}
      />
    </section>
  );
}
