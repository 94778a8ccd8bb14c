/**
 * The analysis runner: a trace (or a ReplayInput) through a list of policies, summarised per
 * policy with the metrics of docs/engine.md ("Metrics") and a predicted speedup against a baseline.
 */
import type { MachineModel, Policy, PolicyReplay, ReplayInput, ReplayTimeRange, SimulateWindow, SteadyState, WindowMetrics } from './contract.js';
import { EngineError } from './errors.js';
import { replayAll, type ReplayProgress } from './run.js';
import { simulateWindow } from './simulate.js';
import { buildReplayInput, ESTIMATE_POLICIES, hintingFaultStats, type TimeRangeUs } from './windows.js';
import type { RetargetRule } from './retarget.js';
import type { Trace } from '../trace/types.js';
import { getPolicy, listPolicies } from '../policies/index.js';

/** Migration cost: seconds per GB (1e9 bytes) moved, AsymSched's constant (reference §2.2). */
export const MIGRATION_SECONDS_PER_GB = 0.3;
export const DEFAULT_WINDOW_MS = 100;
export const DEFAULT_BASELINE = 'first-touch';

export interface AnalyzeOptions {
  /** Machine model to replay on; default the trace's machine. A different topology re-targets. */
  machine?: MachineModel;
  retargetRule?: RetargetRule;
  /** Window length, ms. Default 100, or for a trace whose access samples are NUMA hinting faults a window of about four scan passes (hintingFaultStats). */
  windowMs?: number;
  /** Policy ids (see getPolicy) or Policy objects; default every listed policy. */
  policies?: Array<string | Policy>;
  seed?: number;
  /** Policy the speedup is measured against (default first-touch). */
  baseline?: string;
  simulate?: SimulateWindow;
  /** See ReplayInputOptions.accessEstimate: an estimated input from page placement when the trace has no access samples. */
  accessEstimate?: 'uniform';
  /** See ReplayInputOptions.cacheEntries. */
  cacheEntries?: number;
  /** Called after each window of the replay with windows done and the total. */
  onProgress?: ReplayProgress;
  /** See ReplayInputOptions.timeRangeUs: replay only the windows that overlap this range (µs). */
  timeRangeUs?: TimeRangeUs;
  /** Also predict each policy's steady state and make it the headline (ReplayOptions.steadyState). */
  steadyState?: boolean;
}

export interface OverallMetrics {
  localAccessRatio: number;
  memoryLatencyNs: number;
  mcImbalancePct: number;
  interconnectUsagePct: number;
  interconnectImbalancePct: number;
  /** Σ window predicted time, µs. */
  predictedUs: number;
  /** Memory accesses in the replay (Σ samples × weight). */
  accesses: number;
}

export interface PolicyResult extends OverallMetrics {
  policy: string;
  description: string;
  /** Time to migrate migratedBytes at MIGRATION_SECONDS_PER_GB, µs. */
  migrationUs: number;
  /** (baseline predictedUs + migrationUs) / (this predictedUs + migrationUs). */
  predictedSpeedup: number;
  migratedPages: number;
  migratedBytes: number;
  /** Recorded L3 misses per 1000 instructions (observed only; null for other policies or without counters). */
  l3Mpki: number | null;
  ipc: number | null;
  placementsEvaluated: number | null;
  placementsTotal: number | null;
  /** The converged placement held over the whole recording (docs/engine.md, "Steady state"); null unless requested. */
  steadyState: SteadyStateResult | null;
  replay: PolicyReplay;
}

/** A policy's steady-state prediction, summarised (the replay's numbers stay on PolicyResult). */
export interface SteadyStateResult extends OverallMetrics {
  basis: SteadyState['basis'];
  /** baseline's steady-state predictedUs / this predictedUs (no migration: the placement is in force from the start). */
  predictedSpeedup: number;
  /** First replay window from which the replay's placement stopped changing materially; null = it had not by the end. */
  convergedAtWindow: number | null;
  /** Start of that window, µs from the first window's start; null with convergedAtWindow. */
  convergedAtUs: number | null;
  /** Pages the replay moved on the way (its migratedPages), and the continuation's on top. */
  pagesMovedOnTheWay: number;
  continuationRounds: number;
  continuationMovedPages: number;
}

export interface AnalysisResult {
  machine: { name: string; source: string; nodeCount: number };
  windowMs: number;
  windowCount: number;
  seed: number;
  baseline: string;
  /** Which prediction is the headline: the steady state (PolicyResult.steadyState) when requested, else the replay. */
  headline: 'steady-state' | 'replay';
  /** 'uniform' when the accesses are an estimate from page placement (no samples); null otherwise. */
  estimate: 'uniform' | null;
  /** 'hinting-faults' when the access samples are NUMA hinting faults (shares meaningful, rates relative); null otherwise. */
  accessSource: 'hinting-faults' | null;
  /** The part of the trace replayed when AnalyzeOptions.timeRangeUs was given (window indices count from its firstWindow); null = all of it. */
  timeRange: ReplayTimeRange | null;
  notes: string[];
  counters: { l3Mpki: number; ipc: number } | null;
  policies: PolicyResult[];
  input: ReplayInput;
}

/** Accesses-weighted means of per-window metrics. */
export function overallMetrics(windows: readonly WindowMetrics[]): OverallMetrics {
  let accesses = 0;
  let predictedUs = 0;
  const sum = { lar: 0, lat: 0, mc: 0, icu: 0, ici: 0 };
  for (const w of windows) {
    const a = w.accessesPerUs * w.predictedUs;
    accesses += a;
    predictedUs += w.predictedUs;
    sum.lar += a * w.localAccessRatio;
    sum.lat += a * w.memoryLatencyNs;
    sum.mc += a * w.mcImbalancePct;
    sum.icu += a * w.interconnectUsagePct;
    sum.ici += a * w.interconnectImbalancePct;
  }
  const mean = (x: number) => (accesses > 0 ? x / accesses : 0);
  return {
    localAccessRatio: accesses > 0 ? sum.lar / accesses : 1,
    memoryLatencyNs: mean(sum.lat),
    mcImbalancePct: mean(sum.mc),
    interconnectUsagePct: mean(sum.icu),
    interconnectImbalancePct: mean(sum.ici),
    predictedUs,
    accesses,
  };
}

function resolve(policy: string | Policy): Policy {
  return typeof policy === 'string' ? getPolicy(policy) : policy;
}

export function analyze(trace: Trace, options: AnalyzeOptions = {}): AnalysisResult {
  // Hinting-fault traces default to windows of several scan passes (docs/engine.md, "Windows").
  const hinting = options.windowMs === undefined ? hintingFaultStats(trace) : null;
  const auto = hinting && hinting.otherAccessRows === 0 ? hinting.suggestedWindowMs : null;
  const windowMs = options.windowMs ?? auto ?? DEFAULT_WINDOW_MS;
  const input = buildReplayInput(trace, { windowMs, machine: options.machine, retargetRule: options.retargetRule, accessEstimate: options.accessEstimate, cacheEntries: options.cacheEntries, timeRangeUs: options.timeRangeUs });
  if (auto !== null) {
    input.notes = [
      ...(input.notes ?? []),
      `window length ${auto} ms chosen for NUMA hinting faults: about four scan passes (the median time between two hinting faults on a page is ${(hinting!.medianGapUs! / 1000).toFixed(0)} ms); give a window length to override`,
    ];
  }
  return analyzeInput(input, options);
}

export function analyzeInput(input: ReplayInput, options: AnalyzeOptions = {}): AnalysisResult {
  const seed = options.seed ?? 1;
  if (!Number.isInteger(seed)) throw new EngineError('bad-option', `seed must be an integer, got ${seed}`);
  const simulate = options.simulate ?? simulateWindow;
  let policies = (options.policies ?? listPolicies()).map(resolve);
  const notes = [...(input.notes ?? [])];
  if (input.estimate) {
    // Rate-driven policies (Carrefour's MAPTU/imbalance/read-ratio switches, AsymSched's traffic
    // groups, AutoNUMA's fault scans) would decide on made-up numbers: refused on an estimate.
    const allowed = (p: Policy) => ESTIMATE_POLICIES.includes(p.id) || p.id.startsWith('interleave');
    const refused = policies.filter((p) => !allowed(p));
    if (options.policies && refused.length > 0) {
      throw new EngineError(
        'estimate-unsupported',
        `policy ${refused.map((p) => p.id).join(', ')} cannot run on an access estimate: its decisions depend on measured access rates ` +
          `(the trace has no memory-access samples). Policies that can: ${ESTIMATE_POLICIES.join(', ')}. Record with IBS/PEBS or import perf mem data for ${refused.map((p) => p.id).join(', ')}.`,
      );
    }
    if (refused.length > 0) notes.push(`not replayed on an access estimate (they need measured access rates): ${refused.map((p) => p.id).join(', ')}`);
    policies = policies.filter(allowed);
  }
  const baselineId = options.baseline ?? DEFAULT_BASELINE;
  // One pass over the windows for every policy (and the baseline when it is not among them).
  const baselinePolicy = policies.some((p) => p.id === baselineId) ? null : resolve(baselineId);
  const all = baselinePolicy ? [...policies, baselinePolicy] : policies;
  const replayed = replayAll(input, all, { seed, simulate, steadyState: options.steadyState === true }, options.onProgress);
  const replays = new Map<string, { policy: Policy; replay: PolicyReplay }>();
  policies.forEach((policy, k) => replays.set(policy.id, { policy, replay: replayed[k]! }));
  const baseline = replays.get(baselineId)?.replay ?? replayed[replayed.length - 1]!;
  const migrationUs = (bytes: number) => (bytes / 1e9) * MIGRATION_SECONDS_PER_GB * 1e6;
  const baselineUs = overallMetrics(baseline.windows).predictedUs + migrationUs(baseline.migratedBytes);
  const steadyOf = (r: PolicyReplay): SteadyState => r.steadyState ?? { basis: 'allocation', placement: null, windows: r.windows, convergedAtWindow: 0, continuationRounds: 0, continuationMovedPages: 0 };
  const baselineSteadyUs = overallMetrics(steadyOf(baseline).windows).predictedUs;
  const firstStartUs = input.windows.length > 0 ? input.windows.info(0).startUs : 0;

  const c = input.counters;
  const counters = c && c.instructions > 0 && c.cycles > 0 ? { l3Mpki: (c.l3Misses / c.instructions) * 1000, ipc: c.instructions / c.cycles } : null;
  const results: PolicyResult[] = [];
  for (const { policy, replay } of replays.values()) {
    const overall = overallMetrics(replay.windows);
    const mUs = migrationUs(replay.migratedBytes);
    results.push({
      policy: replay.policy,
      description: policy.description,
      ...overall,
      migrationUs: mUs,
      predictedSpeedup: baselineUs / (overall.predictedUs + mUs),
      migratedPages: replay.migratedPages,
      migratedBytes: replay.migratedBytes,
      l3Mpki: replay.policy === 'observed' ? (counters?.l3Mpki ?? null) : null,
      ipc: replay.policy === 'observed' ? (counters?.ipc ?? null) : null,
      placementsEvaluated: replay.placementsEvaluated ?? null,
      placementsTotal: replay.placementsTotal ?? null,
      steadyState: (() => {
        if (!options.steadyState) return null;
        const st = steadyOf(replay);
        const m = overallMetrics(st.windows);
        const at = st.convergedAtWindow;
        return {
          basis: st.basis,
          ...m,
          predictedSpeedup: m.predictedUs > 0 ? baselineSteadyUs / m.predictedUs : 1,
          convergedAtWindow: at,
          convergedAtUs: at === null ? null : at < input.windows.length ? input.windows.info(at).startUs - firstStartUs : input.windows.length > 0 ? input.windows.info(input.windows.length - 1).endUs - firstStartUs : 0,
          pagesMovedOnTheWay: replay.migratedPages,
          continuationRounds: st.continuationRounds,
          continuationMovedPages: st.continuationMovedPages,
        };
      })(),
      replay,
    });
  }
  return {
    machine: { name: input.machine.name, source: input.machine.source, nodeCount: input.machine.nodeCount },
    windowMs: input.windowUs / 1000,
    windowCount: input.windows.length,
    seed,
    baseline: baselineId,
    headline: options.steadyState ? 'steady-state' : 'replay',
    estimate: input.estimate ?? null,
    accessSource: input.accessSource ?? null,
    timeRange: input.timeRange ?? null,
    notes,
    counters,
    policies: results,
    input,
  };
}

// ---------------------------------------------------------------------------------------------
// Plain-JSON views (what the CLI prints; docs/engine.md lists every key)

/** The overall scalar metrics of one policy, shared by the CLI's JSON and the app's views. */
export function policySummary(r: PolicyResult) {
  return {
    policy: r.policy,
    description: r.description,
    localAccessRatio: r.localAccessRatio,
    memoryLatencyNs: r.memoryLatencyNs,
    mcImbalancePct: r.mcImbalancePct,
    interconnectUsagePct: r.interconnectUsagePct,
    interconnectImbalancePct: r.interconnectImbalancePct,
    predictedUs: r.predictedUs,
    migrationUs: r.migrationUs,
    predictedSpeedup: r.predictedSpeedup,
    migratedPages: r.migratedPages,
    migratedBytes: r.migratedBytes,
    l3Mpki: r.l3Mpki,
    ipc: r.ipc,
    decisionCount: r.replay.decisions.length,
  };
}

/** The steady-state headline of one policy as plain JSON (docs/engine.md lists every key). */
export function steadyStateJson(r: PolicyResult) {
  const s = r.steadyState;
  if (!s) return null;
  return {
    basis: s.basis,
    localAccessRatio: s.localAccessRatio,
    memoryLatencyNs: s.memoryLatencyNs,
    mcImbalancePct: s.mcImbalancePct,
    interconnectUsagePct: s.interconnectUsagePct,
    interconnectImbalancePct: s.interconnectImbalancePct,
    predictedUs: s.predictedUs,
    predictedSpeedup: s.predictedSpeedup,
    accesses: s.accesses,
    convergedAtWindow: s.convergedAtWindow,
    convergedAtUs: s.convergedAtUs,
    pagesMovedOnTheWay: s.pagesMovedOnTheWay,
    continuationRounds: s.continuationRounds,
    continuationMovedPages: s.continuationMovedPages,
  };
}

export function policyResultJson(r: PolicyResult, maxDecisions = 50) {
  // Key order as docs/engine.md lists them: accesses after the speedup, AsymSched's counts before decisionCount.
  const { migratedPages, migratedBytes, l3Mpki, ipc, decisionCount, ...head } = policySummary(r);
  return {
    ...head,
    accesses: r.accesses,
    migratedPages,
    migratedBytes,
    l3Mpki,
    ipc,
    placementsEvaluated: r.placementsEvaluated,
    placementsTotal: r.placementsTotal,
    steadyState: steadyStateJson(r),
    decisionCount,
    decisions: r.replay.decisions.slice(0, maxDecisions).map((d) => ({
      window: d.window,
      kind: d.kind,
      explanation: d.explanation,
      pages: d.pages ?? null,
      threads: d.threads ?? null,
      toNodes: d.toNodes ?? null,
    })),
    windows: r.replay.windows.map((w, index) => ({
      index,
      predictedUs: w.predictedUs,
      localAccessRatio: w.localAccessRatio,
      memoryLatencyNs: w.memoryLatencyNs,
      mcImbalancePct: w.mcImbalancePct,
      interconnectUsagePct: w.interconnectUsagePct,
      interconnectImbalancePct: w.interconnectImbalancePct,
      accessesPerUs: w.accessesPerUs,
      mcUtilisationPct: Array.from(w.mcUtilisation, (u) => u * 100),
    })),
  };
}

export function analysisJson(result: AnalysisResult, trace?: { file: string; origin: string }) {
  return {
    trace: trace ?? null,
    machine: result.machine,
    windowMs: result.windowMs,
    windowCount: result.windowCount,
    seed: result.seed,
    baseline: result.baseline,
    headline: result.headline,
    estimate: result.estimate,
    accessSource: result.accessSource,
    timeRange: result.timeRange,
    notes: result.notes,
    nodes: nodeLoads(result),
    counters: result.counters,
    policies: result.policies.map((p) => policyResultJson(p)),
  };
}

/**
 * Per-node memory-controller load under the observed placement (else the first policy): mean
 * utilisation % over windows weighted by window time, each node's share of it, and `hotSpot`, the
 * node id with the largest share when it carries more than 1.5 × an even share (null otherwise).
 */
export function nodeLoads(result: AnalysisResult): { policy: string; nodeIds: number[]; mcUtilisationPct: number[]; share: number[]; hotSpot: number | null } | null {
  const r = result.policies.find((p) => p.policy === 'observed') ?? result.policies[0];
  if (!r) return null;
  const n = result.input.machine.nodeCount;
  const util = new Array<number>(n).fill(0);
  let time = 0;
  for (const w of r.replay.windows) {
    for (let i = 0; i < n; i++) util[i]! += (w.mcUtilisation[i] ?? 0) * w.predictedUs;
    time += w.predictedUs;
  }
  const mean = util.map((u) => (time > 0 ? (u / time) * 100 : 0));
  const total = mean.reduce((a, b) => a + b, 0);
  const share = mean.map((u) => (total > 0 ? u / total : 0));
  let best = 0;
  for (let i = 1; i < n; i++) if (share[i]! > share[best]!) best = i;
  const hotSpot = n > 1 && share[best]! > 1.5 / n ? result.input.machine.nodeIds[best]! : null;
  return { policy: r.policy, nodeIds: [...result.input.machine.nodeIds], mcUtilisationPct: mean, share, hotSpot };
}
