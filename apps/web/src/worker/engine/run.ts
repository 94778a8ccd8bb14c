/**
 * What the Worker does with the policy engine: replays an open trace through policies on a
 * machine model and reduces the result to plain objects and typed arrays the views draw (no
 * replay internals cross to the UI thread). Pure over a Trace, so it is unit-tested in Node and
 * the e2e tests compare the UI's numbers with `analyze` run on the same file.
 */
import { EngineError, accessSampleRows, analyze, buildPlan, nextLaunchOptions, diagnose, diagnoseAnalysis, planFromFix, diagnosisJson, hotSpotIndex, policySummary, getPolicy, getPreset, isEngineError, machineModel, machineTiers, needsPlacement, POLICY_IDS, recommend, recordedMachine, runsOnEstimate, serializePlan, tieredMachine, TIERED_POLICY_IDS, trafficModel, validatePlan, weightsJson, predictionWhy } from '@numascope/policy-engine';
import type { AccessRatesOption, AnalysisResult, MachineModel, DiagnosisJson, ManualPlacement, Plan, Policy, PolicyReplay, Recommendation, Trace, WindowMetrics, PredictionWhy } from '@numascope/policy-engine';

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

/** The part of the recording an analysis replayed (engine `timeRange`), in the app's words. */
export interface AnalysisRange {
  /** The range asked for (the brushed one), µs. */
  requestedFromUs: number;
  requestedToUs: number;
  /** What the kept windows cover, µs: the range widened to whole windows. */
  fromUs: number;
  toUs: number;
  /** Window index of the first kept window in the whole trace; windows kept; windows in the whole trace. */
  firstWindow: number;
  windows: number;
  totalWindows: number;
}

/**
 * One policy as the views show it: the engine's `policySummary` (the same object the CLI prints as
 * JSON: top-level figures are the headline prediction, the steady state; `replay` is the
 * window-by-window transient; `steadyState.basis` says how the steady state was reached) plus the
 * per-resource loads the graphs draw. Every view formats these same values (EngineParts'
 * formatters), so a figure shown twice on a screen is one number.
 */
export type PolicyView = ReturnType<typeof policySummary> & {
  /** Time-weighted mean bytes/s served by each memory controller (node index), headline windows. */
  /** The decomposition of the headline in words (the engine's predictionWhy: compute + waiting, the latency by part, the busiest resource, the calibration); null without the machine. */
  why: string | null;
  /** The same decomposition as numbers (the Compare view's "where the time goes" rows); null without the machine. */
  decomposition: Omit<PredictionWhy, 'text'> | null;
  mcLoadBytesPerS: number[];
  /** Time-weighted mean utilisation per memory controller, 0..1. */
  mcUtilisation: number[];
  /** Each node's share of all requests served (sums to 1). */
  mcShare: number[];
  /** The hot spot's node index (the engine's hotSpotIndex of mcShare), -1 none. */
  hotIndex: number;
  /** Time-weighted mean bytes/s per directed link (index into MachineView.links). */
  linkLoadBytesPerS: number[];
  linkUtilisation: number[];
  /**
   * Weighted interleave's weights (kernel node ids), the numactl/sysfs equivalent, per-object
   * weights and the recommendation's curve: the engine's weightsJson, the `weights` object the
   * CLI prints; null for a policy that does not weight.
   */
  weights: WeightsView | null;
};

/** The engine's weightsJson of a weighted-interleave result (plain data: it crosses to the UI as it is). */
export type WeightsView = NonNullable<ReturnType<typeof weightsJson>>;

export interface MachineView {
  name: string;
  source: string;
  nodeIds: number[];
  /** Memory-only nodes (no cpus), by index. */
  memoryOnly: boolean[];
  /** Memory tier per node (0 = fastest). */
  tier: number[];
  /** What memory each node holds (`dram`, `cxl`, `hbm`), null = not said. */
  memoryKind: Array<string | null>;
  /** Each node's own sustained memory bandwidth (the traffic model's capacity), bytes/s. */
  capacityBytesPerS: number[];
  mcBandwidthBytesPerS: number[];
  links: Array<{ from: number; to: number; capacityBytesPerS: number }>;
  /** Where the simulator's numbers came from, in words ("MC bandwidth documented:…; latency …"). */
  provenance: string;
}

export interface RecommendationView {
  id: string;
  kind: Recommendation['kind'];
  policy: string;
  title: string;
  gain: Recommendation['gain'];
  cost: Recommendation['cost'];
  confidence: Recommendation['confidence'];
  planable: boolean;
  command: string | null;
}

export interface AnalysisView {
  machine: MachineView;
  windowMs: number;
  windowCount: number;
  /** Set when only a time range was replayed. */
  range: AnalysisRange | null;
  /** Policy every speedup is measured against, and why it is that one when it was not asked for (else null). */
  baseline: string;
  baselineNote: string | null;
  /** The headline prediction: 'steady-state' (the default) or 'replay'. */
  headline: 'steady-state' | 'replay';
  /** How long the replayed windows really lasted, µs (what actually ran takes this long). */
  recordedUs: number;
  estimate: 'uniform' | null;
  /** The estimate was chosen because the trace has no access samples, not asked for. */
  estimateAuto: boolean;
  /** 'hinting-faults' when the access samples are NUMA hinting faults (relative rates). */
  accessSource: 'hinting-faults' | null;
  /**
   * The access rate assumed for hinting faults (engine accessRates; 'typical' when none was
   * asked for); null where the engine does not assume one (measured rates, or the
   * placement-only estimate, which has no rates).
   */
  accessRates: AccessRatesOption | null;
  synthetic: boolean;
  notes: string[];
  counters: { l3Mpki: number; ipc: number } | null;
  policies: PolicyView[];
  /** Policies asked for that the engine would not run here, with its reason. */
  unavailable: Array<{ policy: string; reason: string }>;
  recommendations: RecommendationView[];
  /** NumaPerf-style issues of the whole recording with each fix's predicted gain (engine diagnose); null with diagnosisNote saying why. */
  diagnosis: DiagnosisJson | null;
  diagnosisNote: string | null;
  /** Whether plans can be built (own machine, a recorded process). */
  planReason: string | null;
}

export type AnalyzeOutcome = { view: AnalysisView } | { error: { code: string; message: string } };

function timeMean(windows: readonly WindowMetrics[], pick: (w: WindowMetrics) => Float64Array, size: number): number[] {
  const out = new Array<number>(size).fill(0);
  let time = 0;
  for (const w of windows) {
    const v = pick(w);
    for (let i = 0; i < size; i++) out[i]! += (v[i] ?? 0) * w.predictedUs;
    time += w.predictedUs;
  }
  return out.map((x) => (time > 0 ? x / time : 0));
}

export function policyView(r: AnalysisResult['policies'][number], linkCount: number, nodeCount: number, nodeIds: readonly number[], machine?: MachineModel): PolicyView {
  const windows = r.headlineWindows;
  const mcLoad = timeMean(windows, (w) => w.mcLoadBytesPerS, nodeCount);
  const total = mcLoad.reduce((a, b) => a + b, 0);
  const mcShare = mcLoad.map((x) => (total > 0 ? x / total : 0));
  return {
    ...policySummary(r),
    mcLoadBytesPerS: mcLoad,
    mcUtilisation: timeMean(windows, (w) => w.mcUtilisation, nodeCount),
    mcShare,
    hotIndex: hotSpotIndex(mcShare),
    linkLoadBytesPerS: timeMean(windows, (w) => w.linkLoadBytesPerS, linkCount),
    linkUtilisation: timeMean(windows, (w) => w.linkUtilisation, linkCount),
    weights: weightsJson(r, nodeIds),
    ...whyOf(r, machine),
  };
}

function whyOf(r: AnalysisResult['policies'][number], machine: MachineModel | undefined): { why: string | null; decomposition: Omit<PredictionWhy, 'text'> | null } {
  if (!machine) return { why: null, decomposition: null };
  const { text, ...decomposition } = predictionWhy(r, machine);
  return { why: text, decomposition };
}

const ESTIMATE_REASON =
  'cannot run on an access estimate: its decisions depend on measured access rates, and this recording has no memory-access samples (record with IBS/PEBS or import perf mem data)';

function manualPlacement(m: ManualRequest | null | undefined): ManualPlacement {
  return { threads: m?.threads ?? [], pages: m?.pages ?? [] };
}

/** Access sample rows per trace (one pass over three columns), kept while the trace is. */
const accessRows = new WeakMap<Trace, number>();

/** Whether the trace has no memory-access samples, so that only the placement-only estimate can analyse it. */
export function needsEstimate(trace: Trace): boolean {
  let n = accessRows.get(trace);
  if (n === undefined) {
    n = accessSampleRows(trace);
    accessRows.set(trace, n);
  }
  return n === 0;
}

export function runAnalysis(trace: Trace, req: AnalyzeRequest, onProgress?: (done: number, total: number) => void): { result: AnalysisResult; view: AnalysisView } {
  const machine = req.machine ? machineModel(getPreset(req.machine)) : undefined;
  // The default set on a machine with memory-only nodes or several tiers also gets the tiered
  // policies (weighted interleave, tiering), as the engine's own default list does.
  const target = machine ?? machineModel(recordedMachine(trace.manifest).machine);
  const tiered = POLICY_IDS.every((id) => req.policies.includes(id)) && tieredMachine(target) ? TIERED_POLICY_IDS : [];
  const wanted = Array.from(new Set([...(req.baseline ? [req.baseline] : []), ...req.policies, ...tiered]));
  const estimateAuto = !req.estimate && needsEstimate(trace);
  const estimate = req.estimate || estimateAuto;
  const runnable = estimate ? wanted.filter(runsOnEstimate) : wanted;
  const unavailable = wanted.filter((p) => !runnable.includes(p)).map((policy) => ({ policy, reason: `${policy} ${ESTIMATE_REASON}` }));
  const result = analyze(trace, {
    machine,
    windowMs: req.windowMs ?? undefined,
    policies: runnable.map((id): string | Policy => (needsPlacement(id) ? getPolicy(id, { placement: manualPlacement(req.manual) }) : id)),
    baseline: req.baseline ?? undefined,
    accessEstimate: estimate ? 'uniform' : undefined,
    timeRangeUs: req.range ? { startUs: req.range.fromUs, endUs: req.range.toUs } : undefined,
    accessRates: req.accessRates ?? undefined,
    onProgress,
  });
  const tr = result.timeRange;
  const m = result.input.machine;
  const synthetic = trace.manifest.origin.kind === 'synthetic';
  const provenance = [
    `machine ${m.name} (${m.source})`,
    `MC bandwidth ${m.mcBandwidthBytesPerS.source}`,
    `idle latencies ${m.idleLatencyNs.source}`,
    `links ${m.linkSource}`,
  ].join('; ');
  const view: AnalysisView = {
    machine: {
      name: m.name,
      source: m.source,
      nodeIds: [...m.nodeIds],
      memoryOnly: m.nodeCpus.map((c) => c.length === 0),
      tier: Array.from(machineTiers(m)),
      memoryKind: m.memoryKind ? [...m.memoryKind] : m.nodeIds.map(() => null),
      capacityBytesPerS: Array.from(trafficModel(m).mcCapacity.value),
      mcBandwidthBytesPerS: Array.from(m.mcBandwidthBytesPerS.value),
      links: m.links.map((l) => ({ ...l })),
      provenance,
    },
    windowMs: result.windowMs,
    windowCount: result.windowCount,
    range: tr
      ? {
          requestedFromUs: tr.requestedStartUs,
          requestedToUs: tr.requestedEndUs,
          fromUs: tr.startUs,
          toUs: tr.endUs,
          firstWindow: tr.firstWindow,
          windows: result.windowCount,
          totalWindows: tr.totalWindows,
        }
      : null,
    baseline: result.baseline,
    baselineNote: result.baselineNote,
    headline: result.headline,
    recordedUs: result.recordedUs,
    estimate: result.estimate,
    estimateAuto: estimateAuto && result.estimate !== null,
    accessSource: result.accessSource,
    accessRates: result.accessSource === 'hinting-faults' && result.estimate === null ? (req.accessRates ?? 'typical') : null,
    synthetic,
    notes: result.notes,
    counters: result.counters,
    policies: result.policies.map((p) => policyView(p, m.links.length, m.nodeCount, result.nodeIds, result.input.machine)),
    unavailable,
    recommendations: [],
    diagnosis: null,
    diagnosisNote: null,
    planReason: req.machine ? 'plans are built on the recording’s own machine: remove the machine re-target' : trace.manifest.process ? null : 'the recording names no process (manifest.process is null): a plan needs a pid to target',
  };
  const base = result.policies.find((p) => p.policy === result.baseline);
  if (base) {
    const recs = recommend(
      result.input,
      base,
      result.policies.filter((p) => p.policy !== result.baseline),
      {
        sources: trace.manifest.capture.sources.filter((s) => s.status === 'used').map((s) => s.id),
        command: trace.manifest.process?.command,
        synthetic,
        timeScale: result.timeScale,
      },
    );
    view.recommendations = recs.map((r) => ({
      id: r.id,
      kind: r.kind,
      policy: r.policy,
      title: r.title,
      gain: r.gain,
      cost: r.cost,
      confidence: r.confidence,
      planable: r.planable,
      command: r.command ?? null,
    }));
    recommendationsOf.set(result, recs);
  }
  // Diagnostics cover the whole recording on its own machine (scores per ms of the recording; fixes name recorded nodes).
  if (req.range) view.diagnosisNote = 'diagnostics cover the whole recording: clear the time range to see them';
  else if (req.machine) view.diagnosisNote = 'diagnostics are made on the recording’s own machine: remove the machine re-target';
  else if (result.estimate) view.diagnosisNote = 'diagnostics need access samples; this analysis is a placement-only estimate';
  else view.diagnosis = diagnosisJson(diagnoseAnalysis(trace, result));
  return { result, view };
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
  const pageNode = Int16Array.from(input.initial.pageNode);
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
