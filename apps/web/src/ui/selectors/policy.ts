/**
 * One policy's figures as the engine views show them: the provenance badge, the metric cards'
 * values and texts, the cost and transient sentences, the traffic graph's input, and the plan's
 * file name. Pure functions of the Worker's AnalysisView (unit-tested), used by the views.
 */
import { formatLatencyNs, formatPct, formatShare, formatSpeedup, formatTimeUs, policyLabel } from '@numascope/policy-engine';
import { formatBytes, formatCount, formatDurationUs } from '@numascope/viz';
import type { TrafficInput } from '@numascope/viz';
import type { AnalysisView, PolicyView } from '../../worker/analysis';
import { METRIC_INFO } from './metric-info';
import type { MetricKey } from './metric-info';

export type BadgeStatus = 'measured' | 'estimated' | 'synthetic';

/** The badge of a simulator output: a prediction, and from what (with `key`: from what this figure is computed). */
export function predictionBadge(a: AnalysisView, key?: string): { status: BadgeStatus; reason: string } {
  const info = key && key in METRIC_INFO ? METRIC_INFO[key as MetricKey] : null;
  const from = info ? `${info.basis}, on ${a.machine.provenance}` : a.machine.provenance;
  if (a.synthetic) return { status: 'synthetic', reason: `synthetic recording (not measured); predicted by the simulator from ${from}` };
  const est = a.estimate
    ? 'ESTIMATED from page placement only (no memory-access samples; accesses assumed uniform); '
    : a.accessSource === 'hinting-faults'
      ? 'access samples are NUMA hinting faults (which thread touched which page, not how often: rates relative); '
      : '';
  return { status: 'estimated', reason: `${est}predicted by the simulator from ${from}` };
}

export interface MetricSpec {
  key: string;
  label: string;
  value: number;
  text: string;
}

/**
 * The figures of one policy as every engine view shows them: one value and one formatter each
 * (the engine's, also used by its recommendation texts), so a figure that appears twice on a
 * screen reads the same.
 */
export function policyMetrics(p: PolicyView): MetricSpec[] {
  return [
    { key: 'localAccessRatio', label: 'Local access ratio', value: p.localAccessRatio, text: formatShare(p.localAccessRatio) },
    { key: 'memoryLatencyNs', label: 'Memory latency', value: p.memoryLatencyNs, text: formatLatencyNs(p.memoryLatencyNs) },
    { key: 'mcImbalancePct', label: 'MC imbalance', value: p.mcImbalancePct, text: formatPct(p.mcImbalancePct) },
    { key: 'interconnectUsagePct', label: 'Interconnect usage', value: p.interconnectUsagePct, text: formatPct(p.interconnectUsagePct) },
    { key: 'interconnectImbalancePct', label: 'Interconnect imbalance', value: p.interconnectImbalancePct, text: formatPct(p.interconnectImbalancePct) },
    { key: 'predictedUs', label: 'Predicted time', value: p.predictedUs, text: formatTimeUs(p.predictedUs) },
  ];
}

/** The speedup card: the policy's predicted time against the baseline's, a ratio. */
export function speedupMetric(a: AnalysisView, p: PolicyView): MetricSpec {
  return { key: 'predictedSpeedup', label: `Speedup vs ${policyLabel(a.baseline)}`, value: p.predictedSpeedup, text: formatSpeedup(p.predictedSpeedup) };
}

/** What it takes to reach the policy's headline placement from what ran. */
export function costText(p: PolicyView): string {
  return p.pagesToMove > 0 ? `${formatCount(p.pagesToMove, 'page')} to move (${formatBytes(p.bytesToMove)})` : 'nothing to move';
}

/** The window-by-window replay, the transient on the way to the steady state. */
export function transientText(a: AnalysisView, p: PolicyView): string {
  const t = p.replay;
  const moved = t.migratedPages > 0 ? `moved ${formatCount(t.migratedPages, 'page')} (${formatBytes(t.migratedBytes)}, ${formatDurationUs(t.migrationUs)} of migration) on the way` : 'moved nothing';
  const converged =
    p.steadyState?.basis === 'allocation'
      ? 'placed at allocation'
      : t.convergedAtWindow === null
        ? 'had not converged by the end of the recording (the steady state continues it)'
        : t.convergedAtWindow === 0
          ? 'converged from the start'
          : `converged at window ${t.convergedAtWindow} (${formatDurationUs(t.convergedAtUs ?? 0)} in)`;
  return `Replayed window by window: ${formatTimeUs(t.predictedUs)} predicted (${formatSpeedup(t.predictedSpeedup)} vs ${policyLabel(a.baseline)} with migration), ${moved}; ${converged}.`;
}

/**
 * Where the access rates behind a prediction came from, in words: the analysis' samples or
 * counters, the typical rate the engine assumes for hinting faults, or the user's statement.
 */
export function accessRateSource(a: AnalysisView): string {
  if (a.estimate) return 'no access rates: a placement-only estimate (accesses assumed uniform)';
  if (a.accessRates === 'bandwidth-bound') return 'assumed bandwidth-bound: your statement, not a measurement (NUMA hinting faults give no rate)';
  if (a.accessRates === 'typical') return 'assumed typical (a memory-bound code, stalled half of the time): NUMA hinting faults give no rate; choose “bandwidth-bound” under Access rates for a streaming program';
  if (a.synthetic) return 'from the synthetic trace’s generated access samples (not a measurement)';
  return 'from the recording’s access samples (and counters where it has them)';
}

export function trafficInput(a: AnalysisView, p: PolicyView): TrafficInput {
  return {
    nodeIds: a.machine.nodeIds,
    memoryOnly: a.machine.memoryOnly,
    tier: a.machine.tier,
    memoryKind: a.machine.memoryKind,
    capacityBytesPerS: a.machine.capacityBytesPerS,
    mcLoadBytesPerS: p.mcLoadBytesPerS,
    mcUtilisation: p.mcUtilisation,
    mcShare: p.mcShare,
    hotIndex: p.hotIndex,
    links: a.machine.links,
    linkLoadBytesPerS: p.linkLoadBytesPerS,
    linkUtilisation: p.linkUtilisation,
  };
}

/** The policy drawn by default: observed when replayed, else first-touch. */
export function defaultPolicy(a: AnalysisView): PolicyView | undefined {
  return a.policies.find((p) => p.policy === 'observed') ?? a.policies.find((p) => p.policy === 'first-touch') ?? a.policies[0];
}

export function planName(source: string): string {
  return `${(source.split('/').pop() ?? 'trace').replace(/\.numascope$/, '')}.plan.json`;
}
