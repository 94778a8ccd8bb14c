/**
 * What the Worker does with the policy engine: maps the app's controls to the engine's one
 * request API (analysisRequest) and returns the engine's analysis report as it is (the object the
 * CLI prints: issue 30, no orchestration or serialisation of its own), and builds plans from the
 * selected recommendations. Pure over a Trace, so it is unit-tested in Node (and
 * test/report-equal.test.ts holds the report equal to `numascope-analyze analyze --json`).
 */
import { EngineError, analysisReport, buildPlan, numericColumn, nextLaunchOptions, diagnose, planFromFix, isEngineError, serializePlan, validatePlan } from '@numascope/policy-engine';
import type { AccessRatesOption, AnalysisReport, AnalysisRequest, AnalysisResult, MachineReport, Plan, PolicyReplay, PolicyReport, Recommendation, RecommendationReport, ReportRange, Trace } from '@numascope/policy-engine';
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

/**
 * The plan of one diagnosed fix alone (engine planFromFix), from the trace's diagnosis with the
 * default thresholds (the Diagnostics view's): the fix ids are the view's issues[].fix.id.
 */
export function planFromFixOutcome(trace: Trace, fixId: string, createdAt: string, traceName: string): PlanOutcome {
  try {
    const plan = planFromFix(trace, diagnose(trace), fixId, { createdAt, traceName });
    return { plan, json: serializePlan(validatePlan(plan)) };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * A plan from the selected recommendations: the recording's placement at its end (pages where
 * they are, threads on their last observed node) with each selected action applied in order,
 * turned into a plan by the engine's buildPlan and checked with validatePlan. A recording with
 * allocation sites also gets object entries (engine nextLaunchOptions), as the CLI's plan does.
 */
export function planFromRecommendations(
  trace: Trace,
  result: AnalysisResult,
  ids: string[],
  createdAt: string,
  traceName: string,
  check = false,
): PlanOutcome {
  const recs = (recommendationsOf.get(result) ?? []).filter((r) => ids.includes(r.id) && r.planable);
  if (recs.length === 0 && !check) return { error: 'select at least one recommendation that a plan can express (move, interleave or pin)' };
  const input = result.input;
  // Pages where the recording last saw them (the pages table's node, what the plan's ranges are
  // checked against), so that the plan moves exactly the selected actions' pages.
  const pageNode = Int16Array.from(input.initial.pageNode);
  const current = numericColumn<Int8Array>(trace.tables.pages, 'node');
  for (let p = 0; p < pageNode.length && p < current.length; p++) {
    const k = input.machine.nodeIds.indexOf(current[p]!);
    if (k >= 0) pageNode[p] = k;
  }
  const observed = input.observedThreadNode;
  const threadNode = Int16Array.from(observed && observed.length > 0 ? observed[observed.length - 1]! : input.initial.threadNode);
  // Each selected action takes its pages and threads where the policy's headline placement (its
  // steady state) has them ("as <policy> does"), the placement its predicted gain is for.
  for (const r of recs) {
    const final = result.policies.find((p) => p.policy === r.policy)?.placement;
    if (!final) continue;
    if (r.pageIndices) for (const p of r.pageIndices) pageNode[p] = final.pageNode[p]!;
    if (r.threads) for (const t of r.threads) threadNode[t] = final.threadNode[t]!;
  }
  const replay: PolicyReplay = {
    policy: check ? 'observed' : recs.map((r) => r.policy).filter((p, i, a) => a.indexOf(p) === i).join('+'),
    windows: [],
    threadNodeByWindow: [],
    finalPlacement: { pageNode, threadNode, replicated: new Uint8Array(pageNode.length) },
    migratedPages: 0,
    migratedBytes: 0,
    decisions: [],
  };
  try {
    const plan = buildPlan(trace, replay, {
      createdAt,
      traceName,
      seed: 1,
      summary: check
        ? 'placement check: every recorded page range on the node the recording last saw it on (moves only pages that are elsewhere now)'
        : recs.map((r) => r.title).join(' · ').slice(0, 500),
      includeInPlace: check,
      // The plan moves exactly the selected actions' pages (their count is the recommendations').
      ...(check ? {} : { pages: new Set(recs.flatMap((r) => (r.pageIndices ? Array.from(r.pageIndices) : []))) }),
      ...(check ? { reason: 'recorded placement' } : {}),
      // With allocation sites the plan also serves the next launch (object entries, threads by
      // order and name): the Apply panel's "Launch with this plan".
      ...(check ? {} : nextLaunchOptions(trace)),
    });
    const json = serializePlan(validatePlan(plan));
    return { plan, json };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}
