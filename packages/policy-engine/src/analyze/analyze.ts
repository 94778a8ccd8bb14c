/**
 * The analysis runner, the top of the engine: a trace (or a ReplayInput) through a list of
 * policies, summarised per policy with the metrics of docs/engine.md ("Metrics") and a predicted
 * speedup against a baseline. It wires the floors below it (the replay input from engine/windows,
 * the policies, the simulator, the steady-state pass) and nothing below imports it.
 */
import type { MachineModel, Placement, Policy, PolicyReplay, ReplayInput, ReplayTimeRange, SimulateWindow, SteadyState, WindowMetrics } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { definePolicy, replayAll, type ReplayProgress } from '../engine/run.js';
import { simulateWindow } from '../engine/simulate.js';
import { feasibilityNotes, hintingFaultStats, type AccessEstimateOption, type AccessRatesOption, type FeasibilityReport, type TimeRangeUs } from '../engine/windows.js';
import { buildReplayInput } from './replay-input.js';
import { overallMetrics, type OverallMetrics } from '../engine/overall.js';

export { overallMetrics, type OverallMetrics };
import type { RetargetRule } from '../engine/retarget.js';
import type { Trace } from '../trace/types.js';
import { DEFAULT_BASELINE, FALLBACK_BASELINE, getPolicy, listPoliciesFor, POLICY_DESCRIPTORS, runsOnEstimate } from '../policies/index.js';

/** Migration cost: seconds per GB (1e9 bytes) moved, AsymSched's Algorithm 1 constant (Lepers et al., ATC'15, as re-implemented in hzqmwne/asymsched_demo). */
export const MIGRATION_SECONDS_PER_GB = 0.3;
export const DEFAULT_WINDOW_MS = 100;

export interface AnalyzeOptions {
  /** Machine model to replay on; default the trace's machine. A different topology re-targets. */
  machine?: MachineModel;
  retargetRule?: RetargetRule;
  /** Window length, ms. Default 100, or for a trace whose access samples are NUMA hinting faults a window of about four scan passes (hintingFaultStats). */
  windowMs?: number;
  /** Policy ids (see getPolicy) or Policy objects; default every listed policy. */
  policies?: Array<string | Policy>;
  seed?: number;
  /**
   * Policy the speedup is measured against. Default: `observed` (what actually ran), or
   * `first-touch` when the trace records no page placement (defaultBaseline).
   */
  baseline?: string;
  simulate?: SimulateWindow;
  /** See ReplayInputOptions.accessEstimate: an estimated input from page placement when the trace has no access samples. */
  accessEstimate?: AccessEstimateOption;
  /** See ReplayInputOptions.accessRates: the rate to assume when the access samples give none (NUMA hinting faults). */
  accessRates?: AccessRatesOption;
  /** See ReplayInputOptions.cacheEntries. */
  cacheEntries?: number;
  /** Called after each window of the replay with windows done and the total. */
  onProgress?: ReplayProgress;
  /** See ReplayInputOptions.timeRangeUs: replay only the windows that overlap this range (µs). */
  timeRangeUs?: TimeRangeUs;
  /**
   * Predict each policy's steady state and make it the headline (default true). false: the replay
   * is the headline and steadyState is null (cheaper by the steady-state pass).
   */
  steadyState?: boolean;
}


/**
 * The window-by-window replay of a policy, summarised: the transient on the way to its steady
 * state. predictedUs is the replay's windows plus the migration time of what it moved.
 */
export interface ReplaySummary extends OverallMetrics {
  /** Time to migrate migratedBytes at MIGRATION_SECONDS_PER_GB, µs (included in predictedUs). */
  migrationUs: number;
  /** baseline replay's predictedUs / this predictedUs (both with their migration time): a ratio of times. */
  predictedSpeedup: number;
  /** Pages and bytes the replay moved on the way. */
  migratedPages: number;
  migratedBytes: number;
  /** First replay window from which the placement stopped changing materially (null: it had not by the end). */
  convergedAtWindow: number | null;
  /** Start of that window, µs from the first window's start; null with convergedAtWindow. */
  convergedAtUs: number | null;
}

/** How the steady state was reached (docs/engine.md, "Steady state"). */
export interface SteadyStateInfo {
  basis: SteadyState['basis'];
  continuationRounds: number;
  continuationMovedPages: number;
}

/**
 * One policy's prediction. The top-level metrics are the headline: the steady state (the policy's
 * converged placement held over the whole recording) unless AnalyzeOptions.steadyState is false,
 * then the replay. `transient` is the replay.
 */
export interface PolicyResult extends OverallMetrics {
  policy: string;
  description: string;
  /** baseline's headline predictedUs / this headline predictedUs (> 1 is faster): a ratio of times. */
  predictedSpeedup: number;
  /**
   * Pages whose node (or replication) in the headline placement differs from the recorded one: what
   * a plan from this policy moves to get there from what ran; and their bytes.
   */
  pagesToMove: number;
  bytesToMove: number;
  /** The window-by-window replay (the transient). */
  transient: ReplaySummary;
  /** How the steady state was reached; null when the replay is the headline. */
  steadyState: SteadyStateInfo | null;
  /** Per-window metrics of the headline (the steady state's windows, or the replay's). */
  headlineWindows: WindowMetrics[];
  /** The placement the headline holds (the steady state's, or the replay's final placement). */
  placement: Placement;
  /** Recorded L3 misses per 1000 instructions (observed only; null for other policies or without counters). */
  l3Mpki: number | null;
  ipc: number | null;
  placementsEvaluated: number | null;
  placementsTotal: number | null;
  replay: PolicyReplay;
}

export interface AnalysisResult {
  machine: { name: string; source: string; nodeCount: number };
  /** Kernel node id of each node index of the machine replayed on. */
  nodeIds: number[];
  windowMs: number;
  windowCount: number;
  seed: number;
  /** Policy the speedups are measured against. */
  baseline: string;
  /** Why the baseline is what it is when it was not asked for and is not `observed`; else null. */
  baselineNote: string | null;
  /** Which prediction is the headline of every PolicyResult: the steady state (default) or the replay. */
  headline: 'steady-state' | 'replay';
  /**
   * How long the replayed windows really lasted, µs (the recording's duration, or the time range's):
   * the observed placement's predicted time on the recorded machine, by construction.
   */
  recordedUs: number;
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
  /** Per window: its real length / the model's time for what actually ran (the anchoring of predicted times). */
  timeScale: Float64Array;
  /** What the recording's rates imply that the machine or its cores cannot carry (engine/windows.ts); null for estimates. */
  feasibility: FeasibilityReport | null;
}


function resolve(policy: string | Policy): Policy {
  return typeof policy === 'string' ? getPolicy(policy) : policy;
}

/** The baseline when none is asked for: observed, or first-touch (with the reason) when the trace records no page placement. */
export function defaultBaseline(input: ReplayInput): { id: string; note: string | null } {
  if (input.pagesWithRecordedNode === 0) {
    return {
      id: FALLBACK_BASELINE,
      note: `baseline first-touch: the trace records no page placement (no page has a recorded node), so there is no observed run to measure against`,
    };
  }
  return { id: DEFAULT_BASELINE, note: null };
}

export function analyze(trace: Trace, options: AnalyzeOptions = {}): AnalysisResult {
  // Hinting-fault traces default to windows of several scan passes (docs/engine.md, "Windows").
  const hinting = options.windowMs === undefined ? hintingFaultStats(trace) : null;
  const auto = hinting && hinting.otherAccessRows === 0 ? hinting.suggestedWindowMs : null;
  const windowMs = options.windowMs ?? auto ?? DEFAULT_WINDOW_MS;
  const input = buildReplayInput(trace, { windowMs, machine: options.machine, retargetRule: options.retargetRule, accessEstimate: options.accessEstimate, cacheEntries: options.cacheEntries, timeRangeUs: options.timeRangeUs, accessRates: options.accessRates });
  if (auto !== null) {
    input.notes = [
      ...(input.notes ?? []),
      `window length ${auto} ms chosen for NUMA hinting faults: about four scan passes (the median time between two hinting faults on a page is ${(hinting!.medianGapUs! / 1000).toFixed(0)} ms); give a window length to override`,
    ];
  }
  return analyzeInput(input, options);
}

/**
 * What actually ran, replayed on the machine it ran on: the anchor of predicted times when the
 * input is re-targeted (ReplayInput.recorded). Pages where the recording had them, threads as
 * recorded window by window.
 */
function recordedRunPolicy(recorded: NonNullable<ReplayInput['recorded']>): Policy {
  return definePolicy({
    id: 'observed@recorded-machine',
    description: 'The recorded placement on the recorded machine (the anchor of predicted times when re-targeted).',
    *run(input, options) {
      const windows: WindowMetrics[] = [];
      const threadNodeByWindow: Int16Array[] = [];
      for (let w = 0; w < input.windows.length; w++) {
        const window = yield w;
        const threadNode = recorded.observedThreadNode?.[w] ?? recorded.initial.threadNode;
        windows.push(options.simulate(recorded.machine, window, { ...recorded.initial, threadNode }, Math.max(1, window.endUs - window.startUs), input.pageBytes));
        threadNodeByWindow.push(threadNode);
      }
      return { policy: 'observed@recorded-machine', windows, threadNodeByWindow, finalPlacement: recorded.initial, migratedPages: 0, migratedBytes: 0, decisions: [], placedAtAllocation: true };
    },
  });
}

function pagesDiffering(a: Placement, b: Placement): number {
  let k = 0;
  for (let p = 0; p < a.pageNode.length; p++) if (a.pageNode[p] !== b.pageNode[p] || a.replicated[p] !== b.replicated[p]) k++;
  return k;
}

const windowCountOf = (input: ReplayInput) => input.windows.length;

export function analyzeInput(input: ReplayInput, options: AnalyzeOptions = {}): AnalysisResult {
  const seed = options.seed ?? 1;
  if (!Number.isInteger(seed)) throw new EngineError('bad-option', `seed must be an integer, got ${seed}`);
  const simulate = options.simulate ?? simulateWindow;
  const steadyOn = options.steadyState !== false;
  let policies = (options.policies ?? listPoliciesFor(input.machine)).map(resolve);
  const notes = [...(input.notes ?? [])];
  if (input.estimate) {
    // Rate-driven policies (PolicyDescriptor.needsMeasuredAccesses) would decide on made-up
    // numbers: refused on an estimate.
    const allowed = (p: Policy) => runsOnEstimate(p.id);
    const estimatePolicies = POLICY_DESCRIPTORS.filter((d) => !d.needsMeasuredAccesses).map((d) => d.id);
    const refused = policies.filter((p) => !allowed(p));
    if (options.policies && refused.length > 0) {
      throw new EngineError(
        'estimate-unsupported',
        `policy ${refused.map((p) => p.id).join(', ')} cannot run on an access estimate: its decisions depend on measured access rates ` +
          `(the trace has no memory-access samples). Policies that can: ${estimatePolicies.join(', ')}. Record with IBS/PEBS or import perf mem data for ${refused.map((p) => p.id).join(', ')}.`,
      );
    }
    if (refused.length > 0) notes.push(`not replayed on an access estimate (they need measured access rates): ${refused.map((p) => p.id).join(', ')}`);
    policies = policies.filter(allowed);
  }
  const fallback = defaultBaseline(input);
  const baselineId = options.baseline ?? fallback.id;
  const baselineNote = options.baseline === undefined ? fallback.note : null;
  if (baselineNote) notes.push(baselineNote);
  // One pass over the windows for every policy, plus the baseline and the anchor (what actually
  // ran) when they are not among them.
  const extra: Policy[] = [];
  if (!policies.some((p) => p.id === baselineId)) extra.push(resolve(baselineId));
  const anchorPolicy = input.recorded ? recordedRunPolicy(input.recorded) : getPolicy('observed');
  if (![...policies, ...extra].some((p) => p.id === anchorPolicy.id)) extra.push(anchorPolicy);
  const all = [...policies, ...extra];
  const replayed = replayAll(input, all, { seed, simulate, steadyState: steadyOn }, options.onProgress);
  const replayOf = (id: string) => replayed[all.findIndex((p) => p.id === id)]!;
  // Every window has been built once by now: the feasibility report is complete.
  const feasibility = input.feasibility ?? null;
  if (feasibility) notes.push(...feasibilityNotes(feasibility, windowCountOf(input)));

  // Anchoring (docs/engine.md, "Predicted time"): window w of what actually ran took its real
  // length; every placement's predicted time for w is that length × its model time / the model's
  // time for what ran. The model's absolute scale (its sampled volumes and bandwidths) then cancels.
  const anchorWindows = replayOf(anchorPolicy.id).windows;
  const windowCount = input.windows.length;
  const timeScale = new Float64Array(windowCount);
  let recordedUs = 0;
  for (let w = 0; w < windowCount; w++) {
    const info = input.windows.info(w);
    const lengthUs = Math.max(1, info.endUs - info.startUs);
    recordedUs += lengthUs;
    const modelUs = anchorWindows[w]!.predictedUs;
    timeScale[w] = modelUs > 0 ? lengthUs / modelUs : 1;
  }
  const migrationUs = (bytes: number) => (bytes / 1e9) * MIGRATION_SECONDS_PER_GB * 1e6;
  const steadyOf = (r: PolicyReplay): SteadyState => r.steadyState ?? { basis: 'allocation', placement: null, windows: r.windows, convergedAtWindow: 0, continuationRounds: 0, continuationMovedPages: 0 };
  const firstStartUs = windowCount > 0 ? input.windows.info(0).startUs : 0;
  const atUs = (at: number | null) =>
    at === null ? null : at < windowCount ? input.windows.info(at).startUs - firstStartUs : windowCount > 0 ? input.windows.info(windowCount - 1).endUs - firstStartUs : 0;

  const baseReplay = replayOf(baselineId);
  const baseReplayUs = overallMetrics(baseReplay.windows, timeScale).predictedUs + migrationUs(baseReplay.migratedBytes);
  const headlineWindowsOf = (r: PolicyReplay) => (steadyOn ? steadyOf(r).windows : r.windows);
  const baseHeadlineUs = steadyOn ? overallMetrics(headlineWindowsOf(baseReplay), timeScale).predictedUs : baseReplayUs;

  const c = input.counters;
  const counters = c && c.instructions > 0 && c.cycles > 0 ? { l3Mpki: (c.l3Misses / c.instructions) * 1000, ipc: c.instructions / c.cycles } : null;
  const results: PolicyResult[] = policies.map((policy, k) => {
    const replay = replayed[k]!;
    const overall = overallMetrics(replay.windows, timeScale);
    const mUs = migrationUs(replay.migratedBytes);
    const st = steadyOf(replay);
    // The replay's predicted time includes its migrations: its speedup is then a ratio of its times.
    const transient: ReplaySummary = {
      ...overall,
      predictedUs: overall.predictedUs + mUs,
      migrationUs: mUs,
      predictedSpeedup: baseReplayUs / (overall.predictedUs + mUs),
      migratedPages: replay.migratedPages,
      migratedBytes: replay.migratedBytes,
      convergedAtWindow: st.convergedAtWindow,
      convergedAtUs: atUs(st.convergedAtWindow),
    };
    const headlineWindows = headlineWindowsOf(replay);
    const head = steadyOn ? overallMetrics(headlineWindows, timeScale) : transient;
    const headUs = head.predictedUs;
    const placement = (steadyOn ? st.placement : null) ?? replay.finalPlacement;
    const pagesToMove = pagesDiffering(placement, input.initial);
    return {
      policy: replay.policy,
      description: policy.description,
      localAccessRatio: head.localAccessRatio,
      memoryLatencyNs: head.memoryLatencyNs,
      mcImbalancePct: head.mcImbalancePct,
      interconnectUsagePct: head.interconnectUsagePct,
      interconnectImbalancePct: head.interconnectImbalancePct,
      predictedUs: headUs,
      accesses: head.accesses,
      computeUs: head.computeUs,
      stallUs: head.stallUs,
      predictedSpeedup: headUs > 0 ? baseHeadlineUs / headUs : 1,
      pagesToMove,
      bytesToMove: pagesToMove * input.pageBytes,
      transient,
      steadyState: steadyOn ? { basis: st.basis, continuationRounds: st.continuationRounds, continuationMovedPages: st.continuationMovedPages } : null,
      headlineWindows,
      placement,
      l3Mpki: replay.policy === 'observed' ? (counters?.l3Mpki ?? null) : null,
      ipc: replay.policy === 'observed' ? (counters?.ipc ?? null) : null,
      placementsEvaluated: replay.placementsEvaluated ?? null,
      placementsTotal: replay.placementsTotal ?? null,
      replay,
    };
  });
  return {
    machine: { name: input.machine.name, source: input.machine.source, nodeCount: input.machine.nodeCount },
    nodeIds: [...input.machine.nodeIds],
    windowMs: input.windowUs / 1000,
    windowCount,
    seed,
    baseline: baselineId,
    baselineNote,
    headline: steadyOn ? 'steady-state' : 'replay',
    recordedUs,
    estimate: input.estimate ?? null,
    accessSource: input.accessSource ?? null,
    timeRange: input.timeRange ?? null,
    notes,
    feasibility,
    counters,
    policies: results,
    input,
    timeScale,
  };
}

/** Predicted time of each window of `windows` (a replay's or a steady state's), anchored as the totals are (µs). */
export function windowPredictedUs(result: AnalysisResult, windows: readonly WindowMetrics[]): number[] {
  return windows.map((w, i) => w.predictedUs * (result.timeScale[i] ?? 1));
}
