/**
 * What the Worker does with the policy engine: maps the app's controls to the engine's one
 * request API (analysisRequest) and returns the engine's analysis report as it is (the object the
 * CLI prints: issue 30, no orchestration or serialisation of its own), and the engine's plans of
 * the selected recommendations or a fix, as plain messages. Pure over a Trace, so it is unit-tested in Node (and
 * test/report-equal.test.ts holds the report equal to `numascope-analyze analyze --json`).
 */
import { EngineError, analysisReport, fixPlan, recommendationsPlan, isEngineError, serializePlan, validatePlan } from '@numascope/policy-engine';
import type { AccessRatesOption, AnalysisReport, AnalysisRequest, AnalysisResult, MachineReport, Plan, PolicyReport, Recommendation, RecommendationReport, ReportRange, Trace } from '@numascope/policy-engine';
export { needsEstimate } from '@numascope/policy-engine';

/**
 * The manual policy's placement as the Worker gets it (plain JSON): node *indices* of the
 * recording's machine, page ranges as virtual addresses ("0x…"), later ranges winning.
 */
export interface ManualRequest {
  threads: Array<{ thread: number; node: number }>;
  pages: Array<{ startAddress: string; endAddress: string; node: number }>;
}

export interface AnalyzeRequest {
  /** Policy ids to replay (the baseline is always replayed too). */
  policies: string[];
  /** Preset id to re-target onto; null = the trace's own machine. */
  machine: string | null;
  /**
   * Placement-only estimate (engine `accessEstimate: 'uniform'`) asked for. A trace without access
   * samples gets it anyway (AnalysisView.estimateAuto): the estimate is what it can show.
   */
  estimate: boolean;
  /** Window length, ms; null: the engine's default for the trace (100 ms, or about four scan passes for NUMA hinting faults). */
  windowMs: number | null;
  /** Replay only the windows that overlap this range (µs since the capture start, half-open); null = the whole trace. */
  range?: { fromUs: number; toUs: number } | null;
  /** Placement of the `manual` policy when `policies` lists it (none = every thread and page where the recording starts them). */
  manual?: ManualRequest | null;
  /** Baseline of every speedup; null/absent = the engine's default (observed: what ran; first-touch when nothing was observed). */
  baseline?: string | null;
  /**
   * The access rate to assume when the access samples give none (NUMA hinting faults): engine
   * `accessRates`; null/absent = the engine's default ('typical': a memory-bound code). Ignored
   * by the engine when the trace has measured rates.
   */
  accessRates?: AccessRatesOption | null;
}

/** The part of the recording an analysis replayed: the report's range. */
export type AnalysisRange = ReportRange;

/**
 * One policy as the views show it: the report's policy (the same object the CLI prints in its
 * JSON: top-level figures are the headline prediction, the steady state; `replay` is the
 * window-by-window transient; `why` the decomposition; the per-resource loads the graphs draw).
 * Every view formats these same values (EngineParts' formatters), so a figure shown twice on a
 * screen is one number.
 */
export type PolicyView = PolicyReport;

/** The engine's weightsJson of a weighted-interleave result (plain data: it crosses to the UI as it is). */
export type WeightsView = NonNullable<PolicyReport['weights']>;

export type MachineView = MachineReport;

export type RecommendationView = RecommendationReport;

/** What the views draw: the engine's analysis report (analysisReport), as the CLI prints it. */
export type AnalysisView = AnalysisReport;

export type AnalyzeOutcome = { view: AnalysisView } | { error: { code: string; message: string } };

/** The engine's request for the app's controls (one request API: engine analysisReport). */
export function analysisRequest(req: AnalyzeRequest): AnalysisRequest {
  return {
    policies: req.policies,
    baseline: req.baseline ?? null,
    machine: req.machine ? { target: req.machine } : null,
    estimate: req.estimate ? 'uniform' : 'auto',
    windowMs: req.windowMs,
    range: req.range ?? null,
    manual: req.manual ? { threads: req.manual.threads, pages: req.manual.pages } : null,
    accessRates: req.accessRates ?? null,
  };
}

export function runAnalysis(trace: Trace, req: AnalyzeRequest, onProgress?: (done: number, total: number) => void, traceFile: string | null = null): { result: AnalysisResult; view: AnalysisView } {
  const { result, report, recommendations } = analysisReport(trace, analysisRequest(req), { traceFile, onProgress });
  recommendationsOf.set(result, recommendations);
  return { result, view: report };
}

/** The recommendations made from each analysis (for plans built from a cached analysis later). */
const recommendationsOf = new WeakMap<AnalysisResult, Recommendation[]>();

export function analyzeOutcome(
  trace: Trace,
  req: AnalyzeRequest,
  onProgress?: (done: number, total: number) => void,
): { outcome: AnalyzeOutcome; result: AnalysisResult | null } {
  try {
    const { result, view } = runAnalysis(trace, req, onProgress);
    return { outcome: { view }, result };
  } catch (e) {
    if (isEngineError(e) || e instanceof EngineError) return { outcome: { error: { code: e.code, message: e.message } }, result: null };
    return { outcome: { error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } }, result: null };
  }
}

export interface PlanOutcome {
  plan?: Plan;
  json?: string;
  error?: string;
}

/** The plan of one diagnosed fix alone (engine fixPlan), the diagnosis with the default thresholds (the Diagnostics view's). */
export function planFromFixOutcome(trace: Trace, fixId: string, createdAt: string, traceName: string): PlanOutcome {
  return planOutcome(() => fixPlan(trace, fixId, {}, { createdAt, traceName }));
}

/** A plan from the selected recommendations (engine recommendationsPlan), checked with validatePlan. */
export function planFromRecommendations(trace: Trace, result: AnalysisResult, ids: string[], createdAt: string, traceName: string, check = false): PlanOutcome {
  return planOutcome(() => recommendationsPlan(trace, result, recommendationsOf.get(result) ?? [], ids, { createdAt, traceName, check }));
}

function planOutcome(make: () => Plan): PlanOutcome {
  try {
    const plan = make();
    return { plan, json: serializePlan(validatePlan(plan)) };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}
