import { useMemo, useState } from 'react';
import { HeatTable, NodeLegend, ThreadTimeline, formatCount, formatDurationUs, nodeLabel, threadLabel } from '@numascope/viz';
import type { ThreadMarker } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';
import type { CountMetric, MigrationMark, RangeCounts } from '@numascope/policy-engine';
import { slotLabels } from '../selectors/summary';
import { useTraceContext } from '../hooks/trace-context';
import { MAX_THREAD_ROWS } from './ThreadsPanel';

const LABELS: Record<CountMetric, string> = { samples: 'samples', faults: 'first touches', accesses: 'accesses' };

/** Threads: thread × node matrix, each thread's cpu and node over time with migrations marked. */
export function ThreadsView({ summary, counts, migrations }: { summary: TraceSummary; counts: RangeCounts | null; migrations: MigrationMark[] }) {
  const { state } = useTraceContext();
  const noAccess = summary.totals.accessSamples === 0;
  const [metric, setMetric] = useState<CountMetric>('samples');
  const nodeIds = summary.nodes.map((n) => n.id);
  const threads = summary.threads.slice(0, MAX_THREAD_ROWS);
  const range = state.range;
  const shownMigrations = useMemo(
    () => migrations.filter((m) => !range || (m.timeUs >= range.fromUs && m.timeUs < range.toUs)),
    [migrations, range],
  );
  const markers: ThreadMarker[] = useMemo(
    () =>
      shownMigrations.map((m) => ({
        thread: m.thread,
        timeUs: m.timeUs,
        label: `${formatDurationUs(m.timeUs)}: migrated to cpu ${m.cpu < 0 ? 'unknown' : m.cpu} (${nodeLabel(m.node)})${m.detail ? ` — ${m.detail}` : ''}`,
      })),
    [shownMigrations],
  );
  const matrix = useMemo(() => {
    if (!counts) return new Float64Array(0);
    const S = counts.slots;
    return counts.threadNodes[metric].subarray(0, threads.length * S);
  }, [counts, metric, threads.length]);
  const metrics: CountMetric[] = noAccess ? ['samples', 'faults'] : ['samples', 'faults', 'accesses'];
  // Unknown: a placement on a cpu of no known node, or a thread's life before (or without) any placement.
  const anyUnknown = summary.threads.some((t) => {
    if (t.placements.node.some((n) => n < 0)) return true;
    const { startUs, exitUs } = t.life;
    if (t.placements.timeUs.length === 0) return startUs !== null || exitUs !== null;
    return startUs !== null && !t.placements.timeUs.some((at) => at <= startUs);
  });

  return (
    <div className="threads-view">
      <section className="panel" aria-labelledby="matrix-heading" id="thread-matrix">
        <h2 id="matrix-heading">Thread × node</h2>
        <p className="ns-muted hint">
          {LABELS[metric]} of each thread by the node of the page it touched
          {range ? `, ${formatDurationUs(range.fromUs)} – ${formatDurationUs(range.toUs)}` : ', whole trace'}. First touches are page faults;
          accesses {noAccess ? 'are not sampled in this trace' : 'are what the access samples stand for'}.
        </p>
        <fieldset className="segmented">
          <legend>Matrix metric</legend>
          {metrics.map((m) => (
            <label key={m}>
              <input type="radio" name="matrix-metric" value={m} checked={metric === m} onChange={() => setMetric(m)} data-testid={`matrix-${m}`} />
              {LABELS[m]}
            </label>
          ))}
        </fieldset>
        {counts ? (
          <div data-export="thread-matrix">
            <HeatTable
              caption={`${LABELS[metric]} per thread (rows) and node of the page (columns)`}
              rowHeader="thread"
              rowLabels={threads.map((t) => threadLabel(t))}
              rowKeys={threads.map((t) => t.index)}
              columnLabels={slotLabels(nodeIds)}
              columnKeys={[...nodeIds.map(String), 'unknown']}
              values={matrix}
              testId="thread-node"
            />
          </div>
        ) : (
          <p className="ns-muted">Counting…</p>
        )}
      </section>
      <section className="panel" aria-labelledby="placement-heading" id="thread-placement">
        <h2 id="placement-heading">Placement over time</h2>
        <NodeLegend nodeIds={nodeIds} includeUnknown={anyUnknown} />
        <p className="ns-muted hint">
          Each bar is a run on one cpu, coloured by that cpu's node, from the thread's start to its exit where the trace saw them (grey: running, cpu not yet
          observed); ▼ marks a migration the trace recorded (hover for the new cpu). The brushed range is left unshaded.
        </p>
        <ThreadTimeline threads={threads} durationUs={summary.totals.durationUs} nodeIds={nodeIds} markers={markers} highlight={range} />
        <h3>
          Migrations <span className="count" data-testid="migration-count" data-value={shownMigrations.length}>({formatCount(shownMigrations.length, 'migration')})</span>
        </h3>
        {shownMigrations.length === 0 ? (
          <p className="ns-muted">No thread-migration events {range ? 'in this range' : 'in this trace'}.</p>
        ) : (
          <div className="table-scroll">
            <table className="data" data-testid="migrations-table">
              <thead>
                <tr>
                  <th scope="col">time</th>
                  <th scope="col" className="text">thread</th>
                  <th scope="col">new cpu</th>
                  <th scope="col">node</th>
                  <th scope="col" className="text">detail</th>
                </tr>
              </thead>
              <tbody>
                {shownMigrations.slice(0, 500).map((m, i) => {
                  const t = summary.threads[m.thread];
                  return (
                    <tr key={i}>
                      <td>{formatDurationUs(m.timeUs)}</td>
                      <td className="text">{t ? threadLabel(t) : `thread ${m.thread}`}</td>
                      <td>{m.cpu < 0 ? 'unknown' : m.cpu}</td>
                      <td>{m.node < 0 ? 'unknown' : m.node}</td>
                      <td className="text">{m.detail}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}
