import { useMemo, useState } from 'react';
import { NodeBarChart, formatBytes, formatCount, formatCpuList, formatDurationUs, formatPercent, nodeColor, nodeLabel } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';
import { nodeRows, pagesColumnLabel } from '../selectors/summary';
import type { NodeRow } from '../selectors/summary';

type Metric = 'pagesSeen' | 'residentPages' | 'samples' | 'faults' | 'accesses';

const METRICS: Record<Metric, { label: string; title: string; unit: string; format: (v: number) => string }> = {
  pagesSeen: {
    label: 'Pages seen',
    title: 'Pages seen per node (4 KiB pages, node at the end of the capture)',
    unit: 'pages (4 KiB)',
    format: (v) => formatCount(v, 'page'),
  },
  residentPages: {
    label: 'Resident pages',
    title: 'Resident pages per node at the last numa_maps snapshot (4 KiB pages)',
    unit: 'pages (4 KiB)',
    format: (v) => formatCount(v, 'page'),
  },
  samples: { label: 'Samples', title: 'Samples per node (samples touching memory on that node)', unit: 'samples', format: (v) => formatCount(v, 'sample') },
  faults: {
    label: 'First touches',
    title: 'First touches per node (page-fault samples on pages of that node)',
    unit: 'page faults',
    format: (v) => formatCount(v, 'fault'),
  },
  accesses: {
    label: 'Accesses',
    title: 'Accesses per node (sum of sample weights)',
    unit: 'accesses',
    format: (v) => formatCount(v, 'access', 'accesses'),
  },
};

/** Pages and accesses per node: a table with every number and a bar chart of one chosen metric. */
export function NodesPanel({ summary }: { summary: TraceSummary }) {
  const rows = useMemo(() => nodeRows(summary), [summary]);
  const nodeIds = summary.nodes.map((n) => n.id);
  const [metric, setMetric] = useState<Metric>('pagesSeen');
  const m = METRICS[metric];
  const snapshot = summary.residentSnapshotUs;
  const noAccessSamples = summary.totals.accessSamples === 0;

  return (
    <section className="panel" aria-labelledby="nodes-heading" id="nodes">
      <h2 id="nodes-heading">Memory per node</h2>
      <div className="table-scroll">
        <table className="data" data-testid="nodes-table">
          <thead>
            <tr>
              <th scope="col">node</th>
              <th scope="col">cpus</th>
              <th scope="col">memory</th>
              <th scope="col">{pagesColumnLabel(summary)}</th>
              <th scope="col">resident pages (numa_maps, 4 KiB)</th>
              <th scope="col">samples</th>
              <th scope="col">first touches</th>
              <th scope="col">accesses</th>
              <th scope="col" title="of the access samples × their weights, cache hits included; the traffic graph shows each controller's share of the DRAM traffic instead">share of sampled accesses</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <NodeTableRow key={r.id} row={r} nodeIds={nodeIds} noAccessSamples={noAccessSamples} />
            ))}
          </tbody>
        </table>
      </div>
      <p className="ns-muted hint">
        {summary.labels.pagesSource === 'scan'
          ? 'Pages resident (scan): every resident page of the process, found by the placement scan (pagemap + move_pages), by the node it was on last; pages fault samples saw and that were freed since are included.'
          : 'Pages seen: distinct pages the samples saw, by the node they were on last (this trace has no placement scan, so not every resident page).'}{' '}
        Resident pages (numa_maps):{' '}
        {snapshot === null
          ? 'no numa_maps snapshot in this trace.'
          : `the process's pages per node at the last numa_maps snapshot (${formatDurationUs(snapshot)}), in 4 KiB pages.`}{' '}
        {summary.labels.faultsSampled
          ? `First touches: page-fault samples, sampled: they stand for about ${formatCount(summary.totals.faultWeight)} first touches by their weights.`
          : 'First touches: page-fault samples, the first touch of each page.'}{' '}
        {noAccessSamples
          ? 'Accesses: not sampled in this trace (memory-access sampling needs AMD IBS or Intel PEBS; see Capture).'
          : "Accesses: the accesses the memory-access samples stand for (each sample's weight is its sampling period); page faults are not counted as accesses."}
      </p>
      <fieldset className="segmented">
        <legend>Chart</legend>
        {(Object.keys(METRICS) as Metric[])
          .filter((k) => !(noAccessSamples && k === 'accesses'))
          .map((k) => (
          <label key={k}>
            <input type="radio" name="node-metric" value={k} checked={metric === k} onChange={() => setMetric(k)} />
            {METRICS[k].label}
          </label>
        ))}
      </fieldset>
      <div data-export="node-chart">
      <NodeBarChart
        title={m.title}
        nodeIds={nodeIds}
        data={rows.map((r) => ({ node: r.id, value: r[metric] }))}
        format={m.format}
        unit={m.unit}
        testId="node-chart"
      />
      </div>
    </section>
  );
}

function NodeTableRow({ row: r, nodeIds, noAccessSamples }: { row: NodeRow; nodeIds: number[]; noAccessSamples: boolean }) {
  const key = r.id < 0 ? 'unknown' : String(r.id);
  return (
    <tr data-testid={`node-row-${key}`}>
      <th scope="row">
        <span className="ns-swatch" style={{ background: nodeColor(r.id, nodeIds) }} aria-hidden="true" />
        {nodeLabel(r.id)}
      </th>
      <td>{r.id < 0 ? '–' : formatCpuList(r.cpus)}</td>
      <td>{r.id < 0 ? '–' : formatBytes(r.memoryBytes)}</td>
      <td data-testid={`node-${key}-pages`} data-value={r.pagesSeen}>
        {formatCount(r.pagesSeen)}
      </td>
      <td data-testid={`node-${key}-resident`} data-value={r.residentPages}>
        {r.id < 0 ? '–' : formatCount(r.residentPages)}
      </td>
      <td data-testid={`node-${key}-samples`} data-value={r.samples}>
        {formatCount(r.samples)}
      </td>
      <td data-testid={`node-${key}-faults`} data-value={r.faults}>
        {formatCount(r.faults)}
      </td>
      <td data-testid={`node-${key}-accesses`} data-value={r.accesses} title={noAccessSamples ? 'not sampled in this trace' : undefined}>
        {noAccessSamples ? '–' : formatCount(r.accesses)}
      </td>
      <td data-testid={`node-${key}-share`} data-value={Number.isFinite(r.shareOfAccesses) ? r.shareOfAccesses : ''}>
        {noAccessSamples ? '–' : formatPercent(r.shareOfAccesses)}
      </td>
    </tr>
  );
}
