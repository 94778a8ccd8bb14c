import { useId } from 'react';

export type CapabilityStatusName = 'measured' | 'estimated' | 'synthetic' | 'unavailable';

export interface CapabilityBadgeProps {
  /** Metric id from the manifest, e.g. `page-placement`. */
  metric: string;
  status: CapabilityStatusName | string;
  /** One line: how it was measured / estimated / generated, or why it is unavailable. */
  reason: string;
}

const METRIC_LABELS: Record<string, string> = {
  'page-placement': 'Page placement',
  'first-touch': 'First touch',
  'thread-placement': 'Thread placement',
  'thread-migrations': 'Thread migrations',
  'memory-accesses': 'Memory accesses',
  'access-latency': 'Access latency',
  'data-source': 'Data source',
  'numa-counters': 'NUMA counters',
  'memory-bandwidth': 'Memory bandwidth',
  'link-bandwidth': 'Link bandwidth',
  ipc: 'IPC (instructions per cycle)',
  'l3-mpki': 'L3 MPKI (misses per kilo-instruction)',
};

/** Human label of a metric id; unknown ids are shown as written, hyphens as spaces. */
export function metricLabel(metric: string): string {
  const known = METRIC_LABELS[metric];
  if (known) return known;
  const spaced = metric.replace(/[-_]/g, ' ');
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

const STATUS_GLYPHS: Record<string, string> = {
  measured: '●',
  estimated: '◐',
  synthetic: '◇',
  unavailable: '○',
};

/**
 * One capability of a capture: the metric, its status as text (colour only repeats it), and the
 * reason in a tooltip that opens on hover and on keyboard focus. The badge is focusable and the
 * tooltip is its accessible description (`aria-describedby`), so screen readers read the reason.
 */
export function CapabilityBadge({ metric, status, reason }: CapabilityBadgeProps) {
  const tooltipId = useId();
  const known = status in STATUS_GLYPHS;
  return (
    <span className="ns-badge" data-status={known ? status : 'unknown'} data-testid={`capability-${metric}`}>
      <span className="ns-badge__body" tabIndex={0} aria-describedby={tooltipId}>
        <span className="ns-badge__glyph" aria-hidden="true">
          {STATUS_GLYPHS[status] ?? '?'}
        </span>
        <span className="ns-badge__metric">{metricLabel(metric)}</span>
        <span className="ns-badge__status">{status}</span>
      </span>
      <span role="tooltip" id={tooltipId} className="ns-badge__tooltip">
        {reason || 'No reason given by the producer.'}
      </span>
    </span>
  );
}

export interface CapabilityListProps {
  capabilities: readonly CapabilityBadgeProps[];
}

/** All capabilities of a capture, measured first, unavailable last. */
export function CapabilityList({ capabilities }: CapabilityListProps) {
  const order = ['measured', 'estimated', 'synthetic', 'unavailable'];
  const sorted = [...capabilities].sort((a, b) => {
    const ra = order.indexOf(a.status);
    const rb = order.indexOf(b.status);
    return (ra < 0 ? order.length : ra) - (rb < 0 ? order.length : rb);
  });
  if (sorted.length === 0) {
    return <p className="ns-muted">The trace lists no capabilities.</p>;
  }
  return (
    <ul className="ns-badge-list" aria-label="Capabilities of this capture">
      {sorted.map((c) => (
        <li key={c.metric}>
          <CapabilityBadge {...c} />
        </li>
      ))}
    </ul>
  );
}
