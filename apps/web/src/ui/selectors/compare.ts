/**
 * Compare columns and the delta table: pure functions (unit-tested), used by the Compare view.
 *
 * A column spec is a string kept in the URL (`cmp=first-touch~interleave~first-touch@amd-genoa-2s-nps4`):
 * `POLICY` (the open recording on its own machine), `POLICY@PRESET` (re-targeted onto a machine
 * preset) or `POLICY+rN` (a second recording opened into the column in this tab; not shareable,
 * since the file is local: a shared link shows the column asking for the file again).
 */
import type { PolicyView } from '../../worker/engine/run';

export interface ColumnSpec {
  policy: string;
  machine: string | null;
  /** Id of a second recording opened in this tab (Worker id), else null. */
  recording: number | null;
}

export const MIN_COLUMNS = 2;
export const MAX_COLUMNS = 5;
/** The default columns after the baseline's (the first column is the analysis baseline: observed, or first-touch). */
export const DEFAULT_OTHER_COLUMNS = ['interleave', 'carrefour'];
export const DEFAULT_COLUMNS = ['observed', ...DEFAULT_OTHER_COLUMNS];

export function parseColumn(spec: string): ColumnSpec | null {
  const m = /^([a-z][a-z0-9:,_-]*)(?:@([a-z0-9._-]+))?(?:\+r(\d+))?$/i.exec(spec);
  if (!m) return null;
  return { policy: m[1]!, machine: m[2] ?? null, recording: m[3] ? Number(m[3]) : null };
}

export function columnSpec(c: ColumnSpec): string {
  return `${c.policy}${c.machine ? `@${c.machine}` : ''}${c.recording !== null ? `+r${c.recording}` : ''}`;
}

/** The columns from the URL, else the baseline's column then DEFAULT_OTHER_COLUMNS. */
export function parseColumns(specs: readonly string[] | null, baseline: string = 'observed'): ColumnSpec[] {
  const out = (specs ?? [baseline, ...DEFAULT_OTHER_COLUMNS]).map(parseColumn).filter((c): c is ColumnSpec => c !== null);
  return out.slice(0, MAX_COLUMNS);
}

export type Better = 'higher' | 'lower';

export interface DeltaMetric {
  key: 'localAccessRatio' | 'memoryLatencyNs' | 'mcImbalancePct' | 'interconnectUsagePct' | 'interconnectImbalancePct' | 'predictedSpeedup' | 'predictedUs' | 'pagesToMove';
  label: string;
  better: Better;
  /** `x`: a ratio shown as it is (the speedup), never as a difference. */
  unit: 'ratio' | 'ns' | 'pct' | 'x' | 'us' | 'pages';
}

export const DELTA_METRICS: DeltaMetric[] = [
  { key: 'localAccessRatio', label: 'Local access ratio', better: 'higher', unit: 'ratio' },
  { key: 'memoryLatencyNs', label: 'Memory latency', better: 'lower', unit: 'ns' },
  { key: 'mcImbalancePct', label: 'MC imbalance', better: 'lower', unit: 'pct' },
  { key: 'interconnectUsagePct', label: 'Interconnect usage', better: 'lower', unit: 'pct' },
  { key: 'interconnectImbalancePct', label: 'Interconnect imbalance', better: 'lower', unit: 'pct' },
  { key: 'predictedSpeedup', label: 'Speedup (baseline time / this time)', better: 'higher', unit: 'x' },
  { key: 'predictedUs', label: 'Predicted time', better: 'lower', unit: 'us' },
  { key: 'pagesToMove', label: 'Pages to move', better: 'lower', unit: 'pages' },
];

export interface DeltaRow {
  metric: DeltaMetric;
  /** The baseline column's value (1 for the speedup). */
  base: number;
  /** This column's value (for the speedup: the ratio of the baseline's predicted time to this one's). */
  value: number;
  /** value − base (for the speedup, value − 1: only its sign is used). */
  delta: number;
  /** (value − base) / |base|; null when base is 0. */
  relative: number | null;
  /** 'better' | 'worse' | 'same' against the baseline, by the metric's direction (|relative| < 0.5 % = same). */
  verdict: 'better' | 'worse' | 'same';
}

/**
 * Speedup against the compared baseline column: a ratio of headline predicted times (baseline /
 * column), so the baseline column reads 1.00×, whatever machine or recording each column replayed.
 * Predicted times are anchored on each recording's real duration, so columns of two recordings or
 * machines compare. When the baseline column is the analysis baseline this is the policy's own
 * predictedSpeedup, computed from the same two numbers.
 */
export function speedupAgainst(base: PolicyView, p: PolicyView): number {
  return p.predictedUs > 0 ? base.predictedUs / p.predictedUs : 0;
}

export function deltaRows(base: PolicyView, p: PolicyView): DeltaRow[] {
  return DELTA_METRICS.map((metric) => {
    const b = metric.key === 'predictedSpeedup' ? 1 : base[metric.key];
    const v = metric.key === 'predictedSpeedup' ? speedupAgainst(base, p) : p[metric.key];
    const delta = v - b;
    const relative = b !== 0 ? delta / Math.abs(b) : null;
    const tiny = relative !== null ? Math.abs(relative) < 0.005 : Math.abs(delta) < 1e-9;
    const verdict = tiny ? 'same' : (delta > 0) === (metric.better === 'higher') ? 'better' : 'worse';
    return { metric, base: b, value: v, delta, relative, verdict };
  });
}
