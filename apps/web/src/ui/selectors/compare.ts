/**
 * Compare columns and the delta table: pure functions (unit-tested), used by the Compare view.
 *
 * A column spec is a string kept in the URL (`cmp=first-touch~interleave~first-touch@amd-genoa-2s-nps4`):
 * `POLICY` (the open recording on its own machine), `POLICY@PRESET` (re-targeted onto a machine
 * preset) or `POLICY+rN` (a second recording opened into the column in this tab; not shareable,
 * since the file is local: a shared link shows the column asking for the file again).
 */
import { formatLatencyNs, formatTimeUs } from '@numascope/policy-engine';
import type { PolicyView } from '../../worker/analysis';
import { ON_REQUEST_POLICY_IDS } from '@numascope/policy-engine';
import type { RegionMeta, TraceSummary } from '@numascope/policy-engine';
import type { AnalyzeRequest } from '../../worker/analysis';
import type { ViewState } from '../url-state';
import { engineRequest } from './request';
import { manualRequest } from './manual';

export interface ColumnSpec {
  policy: string;
  machine: string | null;
  /** Id of a second recording opened in this tab (Worker id), else null. */
  recording: number | null;
}

export const MIN_COLUMNS = 2;
/**
 * Columns at most: every policy of the menu and Manual, with a few machines or recordings
 * beside them. Each column draws its own traffic graph, and a re-targeted or second-recording
 * column replays the whole trace once more in this tab's Worker: past this the page slows down
 * without showing more.
 */
export const MAX_COLUMNS = 14;
/** Why the add buttons are disabled at MAX_COLUMNS, said on screen and in their descriptions. */
export const COLUMN_CAP_REASON = `At most ${MAX_COLUMNS} columns: each draws a traffic graph, and each machine or recording column replays the whole trace again in this tab. Remove a column to add another.`;
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

/** Column indices ordered by speedup against the first column, fastest first (ties keep their order; unknown last). */
export function orderBySpeedup(speedups: ReadonlyArray<number | null>): number[] {
  return speedups
    .map((s, i) => ({ s, i }))
    .sort((x, y) => (y.s ?? -Infinity) - (x.s ?? -Infinity) || x.i - y.i)
    .map((x) => x.i);
}

const WHY_METRICS: Array<{ key: DeltaMetric['key']; name: string; format: (v: number) => string }> = [
  { key: 'localAccessRatio', name: 'local accesses', format: (v) => `${(v * 100).toFixed(0)}%` },
  { key: 'memoryLatencyNs', name: 'latency', format: (v) => `${v.toFixed(0)} ns` },
  { key: 'mcImbalancePct', name: 'MC imbalance', format: (v) => `${v.toFixed(0)}%` },
  { key: 'interconnectUsagePct', name: 'link usage', format: (v) => `${v.toFixed(0)}%` },
  { key: 'interconnectImbalancePct', name: 'link imbalance', format: (v) => `${v.toFixed(0)}%` },
];

/** Within this of 1×, a column is "the same" as the baseline (the engine's 2 % recommendation threshold). */
export const SAME_SPEEDUP = 0.02;

/**
 * One line on why a column wins or loses against the first: its speedup's direction and the (at
 * most two) metrics that moved most in that direction, from the same values as the table; a tie
 * says what kept it equal (nothing to move, or nothing moved at this replay window).
 */
export function whyLine(base: PolicyView, p: PolicyView, opts: { isBaseline: boolean; windowMs: number; speedup?: number | null }): string {
  if (opts.isBaseline) return 'The baseline: every speedup is against it.';
  // A second recording's column is compared by work: the table's speedup is passed in.
  const speedup = opts.speedup ?? speedupAgainst(base, p);
  const rows = deltaRows(base, p);
  const moved = (verdict: 'better' | 'worse') =>
    WHY_METRICS.map((m) => ({ m, r: rows.find((r) => r.metric.key === m.key)! }))
      .filter(({ r }) => r.verdict === verdict)
      .sort((a, b) => Math.abs(b.r.relative ?? b.r.delta) - Math.abs(a.r.relative ?? a.r.delta))
      .slice(0, 2)
      .map(({ m, r }) => `${m.name} ${m.format(r.base)} → ${m.format(r.value)}`);
  if (speedup >= 1 + SAME_SPEEDUP) {
    const why = moved('better');
    return `Wins (${speedup.toFixed(2)}×): ${why.length ? why.join(', ') : 'less time in memory stalls'}${p.pagesToMove > 0 ? `, for ${p.pagesToMove.toLocaleString('en-US')} pages moved` : ''}.`;
  }
  if (speedup <= 1 - SAME_SPEEDUP) {
    const why = moved('worse');
    return `Loses (${speedup.toFixed(2)}×): ${why.length ? why.join(', ') : 'more time in memory stalls'}.`;
  }
  const gains = moved('better');
  const losses = moved('worse');
  const still =
    p.pagesToMove === 0 && p.replay.migratedPages === 0
      ? `it places pages as the baseline does (nothing to move; it decides once per ${opts.windowMs} ms window, so another replay window may change that)`
      : gains.length && losses.length
        ? `gains (${gains.join(', ')}) and losses (${losses.join(', ')}) cancel out`
        : [...gains, ...losses].join(', ') || 'its placement costs the same memory time';
  return `About the same (${speedup.toFixed(2)}×): ${still}.`;
}

/** One row of a column's decomposition ("where the time goes"): a label and its text, value for sorting and tests. */
export interface DecompositionRow {
  key: string;
  label: string;
  text: string;
  value: number | null;
}

/** The keys and labels of the decomposition rows, in order (every column has each row). */
export const DECOMPOSITION_ROWS: ReadonlyArray<{ key: string; label: string }> = [
  { key: 'computeUs', label: 'compute' },
  { key: 'stallUs', label: 'waiting for memory' },
  { key: 'idleNs', label: 'latency: idle (its nodes and hops)' },
  { key: 'controllersNs', label: 'latency: memory-controller queueing' },
  { key: 'linksNs', label: 'latency: link (and crossbar) queueing' },
  { key: 'concurrency', label: 'accesses in flight while waiting' },
  { key: 'busiest', label: 'busiest resource' },
  { key: 'calibration', label: 'calibrated on the recording' },
];

/**
 * A column's prediction taken apart (the engine's predictionWhy, the same numbers the CLI prints
 * as "why"): compute + waiting = the predicted time; idle + the resources' queueing = the memory
 * latency; the accesses in flight, the busiest resource and the calibration. Empty without it.
 */
export function decompositionRows(p: PolicyView): DecompositionRow[] {
  const d = p.why;
  if (!d) return [];
  const busiest = d.busiest ? `${d.busiest.resource} at ${(d.busiest.utilisation * 100).toFixed(0)} % (+${formatLatencyNs(d.busiest.delayNs)})` : 'none';
  const calibrated = Math.abs(d.idleScale - 1) > 1e-9 || Math.abs(d.queueScale - 1) > 1e-9;
  const cells: Record<string, [string, number | null]> = {
    computeUs: [formatTimeUs(d.computeUs), d.computeUs],
    stallUs: [formatTimeUs(d.stallUs), d.stallUs],
    idleNs: [formatLatencyNs(d.idleNs), d.idleNs],
    controllersNs: [`+${formatLatencyNs(d.controllersNs)}`, d.controllersNs],
    linksNs: [`+${formatLatencyNs(d.linksNs + d.crossbarNs)}`, d.linksNs + d.crossbarNs],
    concurrency: [d.concurrency.toFixed(1), d.concurrency],
    busiest: [busiest, d.busiest?.utilisation ?? null],
    calibration: [calibrated ? `idle × ${d.idleScale.toFixed(2)}, queueing × ${d.queueScale.toFixed(1)}` : 'no (no measured latency)', calibrated ? d.queueScale : null],
  };
  return DECOMPOSITION_ROWS.map(({ key, label }) => ({ key, label, text: cells[key]![0], value: cells[key]![1] }));
}

/**
 * The two named headlines (issue 30): `next-launch` is the steady state (each policy's converged
 * placement held over the whole recording: what `numascope run --plan` starts with), the engine's
 * top-level figures; `applied-now` is the window-by-window replay from the recorded placement,
 * migration time included (what applying the policy to the running program gives from then on).
 */
export type Headline = 'next-launch' | 'applied-now';

export const HEADLINE_LABELS: Record<Headline, string> = {
  'next-launch': 'at next launch (steady state)',
  'applied-now': 'applied now (replay from the recorded placement, migration included)',
};

/** The policy with the chosen headline's figures on top (the replay's for `applied-now`). */
export function headlineView(p: PolicyView, h: Headline): PolicyView {
  if (h === 'next-launch') return p;
  // The replay's headline metrics (the same keys as the top level), its moves as the pages to move.
  const { migrationUs: _migrationUs, migratedPages, migratedBytes, convergedAtWindow: _at, convergedAtUs: _atUs, ...metrics } = p.replay;
  return { ...p, ...metrics, pagesToMove: migratedPages, bytesToMove: migratedBytes };
}

/** Manual placement is given in the recording's own nodes: no re-target, no second recording. */
export const MANUAL_REASON = 'a manual placement is dragged together on the open recording’s own machine: remove the re-target or the second recording';

/**
 * The engine request of a column: the shared policy set for a policy column (one cached
 * analysis serves them all), a policy replayed only on request (replicate: ON_REQUEST_POLICY_IDS)
 * alone with the baseline, so that the shared analysis stays as it was, or the manual policy
 * alone with the placement from the URL.
 */
export function columnRequest(c: ColumnSpec, state: ViewState, summary: TraceSummary, regions: readonly RegionMeta[]): AnalyzeRequest | null {
  if (onRequest(c.policy)) return { ...engineRequest(c.machine, state.estimate, state.range, state.base, state.win, state.rates), policies: [c.policy] };
  if (c.policy !== 'manual') return engineRequest(c.machine, state.estimate, state.range, state.base, state.win, state.rates);
  if (c.machine !== null || c.recording !== null) return null;
  const nodeIds = summary.manifest.machine.nodes.map((n) => n.id);
  return { ...engineRequest(null, state.estimate, state.range, state.base, state.win, state.rates), policies: ['manual'], manual: manualRequest(state.manual, nodeIds, summary.threads.length, regions) };
}

/** A policy the Compare menu offers that is replayed only when a column asks for it (`replicate`, `replicate:read=…`). */
function onRequest(policy: string): boolean {
  const colon = policy.indexOf(':');
  return ON_REQUEST_POLICY_IDS.includes(colon < 0 ? policy : policy.slice(0, colon));
}
