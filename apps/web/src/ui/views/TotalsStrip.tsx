import { formatCount, formatDurationUs } from '@numascope/viz';
import type { TraceSummary } from '@numascope/policy-engine';

/** The trace's headline numbers, each with its unit. */
export function TotalsStrip({ summary }: { summary: TraceSummary }) {
  const t = summary.totals;
  const noAccessSamples = t.accessSamples === 0;
  const items: Array<{ id: string; label: string; value: number; text: string; title?: string }> = [
    { id: 'duration', label: 'duration', value: t.durationUs, text: formatDurationUs(t.durationUs) },
    { id: 'nodes', label: 'NUMA nodes', value: summary.nodes.length, text: formatCount(summary.nodes.length) },
    { id: 'threads', label: 'threads', value: t.threads, text: formatCount(t.threads) },
    { id: 'samples', label: 'samples', value: t.samples, text: formatCount(t.samples) },
    {
      id: 'accesses',
      label: 'memory accesses',
      value: t.accesses,
      text: noAccessSamples ? 'not sampled' : formatCount(t.accesses),
      title: noAccessSamples
        ? 'This trace has no memory-access samples: access sampling needs AMD IBS or Intel PEBS. Page faults (first touches) are counted separately.'
        : 'Accesses the access samples stand for (sum of sample weights)',
    },
    { id: 'faults', label: summary.labels.faults, value: t.faults, text: formatCount(t.faults), title: summary.labels.faultsHint },
    { id: 'pages', label: `${summary.labels.pages}, 4 KiB`, value: t.pages, text: formatCount(t.pages), title: summary.labels.pagesHint },
    { id: 'regions', label: 'regions', value: t.regions, text: formatCount(t.regions) },
    { id: 'lost', label: 'lost samples', value: t.lostSamples, text: formatCount(t.lostSamples) },
  ];
  return (
    <dl className="totals" aria-label="Trace totals">
      {items.map((i) => (
        <div key={i.id} className={i.id === 'lost' && i.value > 0 ? 'totals__item totals__item--warn' : 'totals__item'}>
          <dt>{i.label}</dt>
          <dd data-testid={`total-${i.id}`} data-value={i.value} title={i.title}>
            {i.text}
          </dd>
        </div>
      ))}
    </dl>
  );
}
