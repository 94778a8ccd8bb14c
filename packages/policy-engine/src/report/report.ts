/**
 * One analysis report behind every number (docs/engine.md, "The report"): an AnalysisRequest
 * resolved once, on one machine model chosen in one place, into one serialisable object with the
 * metrics and their decomposition, the decisions, the recommendations, the diagnosis, the machine
 * with its choice and every note. The CLI prints it (`--json` is this object), the app's Worker
 * posts it, and the exports render it: no second orchestration, no second serialisation.
 */
import { analyze, type AnalysisResult } from '../analyze/analyze.js';
import { policyResultJson, hotSpotIndex, nodeLoads, weightsJson } from '../analyze/json.js';
import { diagnoseAnalysis } from '../analyze/diagnose-analysis.js';
import { diagnosisJson } from '../diagnose/diagnose.js';
import { chooseMachine, machineChoiceJson, type OfferedMachine } from '../machine/choice.js';
import { recordedMachine } from '../machine/loaders.js';
import { machineModel, machineTiers } from '../machine/model.js';
import { getPreset } from '../machine/presets.js';
import { trafficModel } from '../machine/traffic.js';
import type { MachineModel, Policy, WindowMetrics } from '../model/contract.js';
import { getPolicy, needsPlacement, POLICY_IDS, runsOnEstimate, tieredMachine, TIERED_POLICY_IDS } from '../policies/index.js';
import type { ManualPlacement } from '../policies/manual.js';
import type { RetargetRule } from '../engine/retarget.js';
import { accessSampleRows, type AccessRatesOption } from '../engine/windows.js';
import { recommend, type Recommendation } from '../recommend/recommend.js';
import type { Trace } from '../trace/types.js';

/** What to analyse (the CLI's flags, the app's controls): every field optional, each default the engine's. */
export interface AnalysisRequest {
  /**
   * Policy ids (or forms such as `interleave:0,1`) or Policy objects; null/absent: the default set
   * (with the tiered policies on a machine with memory-only nodes or several tiers). The baseline
   * is always replayed too. A list with every default id also gets the tiered ones there.
   */
  policies?: ReadonlyArray<string | Policy> | null;
  /** Baseline of every speedup; null/absent: observed (first-touch when nothing was observed). */
  baseline?: string | null;
  /**
   * The machine model: `target` re-targets (a preset id, or an offered model), `machine` describes
   * the recorded machine when the trace embeds no calibration (chooseMachine's rules, said in
   * `machineChoice`). Absent: the recording's own machine (or its embedded calibration).
   */
  machine?: { machine?: OfferedMachine; target?: OfferedMachine | string } | null;
  retargetRule?: RetargetRule;
  /** `uniform`: the placement-only estimate; `auto` (the default): it when the trace has no access samples; `off`: never. */
  estimate?: 'uniform' | 'auto' | 'off';
  windowMs?: number | null;
  /** Replay only the windows that overlap [fromUs, toUs) (µs since the capture start); null: all. */
  range?: { fromUs: number; toUs: number } | null;
  /** The manual policy's placement when `policies` lists it. */
  manual?: ManualPlacement | null;
  accessRates?: AccessRatesOption | null;
  seed?: number;
  /** false: the window-by-window replay is the headline (no steady state). */
  steadyState?: boolean;
  /** false: no diagnosis (the CLI's compare); default true. */
  diagnose?: boolean;
}

/** What the report says about the file it was made from. */
export interface ReportContext {
  /** The trace file's name (the CLI's argument; the app's open file), null when unknown. */
  traceFile?: string | null;
  onProgress?: (done: number, total: number) => void;
}

/** The part of the recording an analysis replayed, µs and windows. */
export interface ReportRange {
  /** The range asked for, µs. */
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

/** The machine replayed on: its figures (the traffic model's, one place) and why it is this one. */
export interface MachineReport {
  name: string;
  source: string;
  nodeCount: number;
  nodeIds: number[];
  /** Memory-only nodes (no cpus), by index. */
  memoryOnly: boolean[];
  /** Memory tier per node (0 = fastest). */
  tier: number[];
  /** What memory each node holds (`dram`, `cxl`, `hbm`), null = not said. */
  memoryKind: Array<string | null>;
  /** Each node's own sustained memory bandwidth (the traffic model's capacity), bytes/s, and where it came from. */
  capacityBytesPerS: number[];
  capacitySource: string;
  /** Each node's theoretical memory bandwidth, bytes/s. */
  mcBandwidthBytesPerS: number[];
  links: Array<{ from: number; to: number; capacityBytesPerS: number }>;
  /** Where the simulator's numbers came from, in words ("MC bandwidth documented:…; latency …"). */
  provenance: string;
  /** Which rule chose this model and why (chooseMachine), with the models offered but not used. */
  choice: ReturnType<typeof machineChoiceJson>;
}

/** One policy: the CLI's per-policy JSON (headline, replay, weights, why, decisions, windows) plus the loads the graphs draw. */
export type PolicyReport = Omit<ReturnType<typeof policyResultJson>, 'weights'> & {
  /** Time-weighted mean bytes/s served by each memory controller (node index), headline windows. */
  mcLoadBytesPerS: number[];
  /** Time-weighted mean utilisation per memory controller, 0..1. */
  mcUtilisation: number[];
  /** Each node's share of all requests served (sums to 1). */
  mcShare: number[];
  /** The hot spot's node index (hotSpotIndex of mcShare), -1 none. */
  hotIndex: number;
  /** Time-weighted mean bytes/s per directed link (index into machine.links), and utilisation. */
  linkLoadBytesPerS: number[];
  linkUtilisation: number[];
  /** Weighted interleave's weights (weightsJson), null for a policy that does not weight. */
  weights: NonNullable<ReturnType<typeof weightsJson>> | null;
};

/** A recommendation as the report carries it (its page and thread lists stay with the engine's Recommendation). */
export interface RecommendationReport {
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

/**
 * What the recording's work is measured in, to compare recordings by work and not by duration:
 * instructions where the trace has instruction counters, else the DRAM accesses replayed (the
 * samples × their weights); null for a placement-only estimate (its accesses are an assumption).
 */
export interface ReportWork {
  unit: 'instructions' | 'DRAM accesses';
  amount: number;
  source: string;
}

/**
 * One ranked list of actions (issue 30): the recommendations and the diagnosed fixes together,
 * each with its own predicted gain where the engine can predict it (ranked by it, highest first),
 * else "not predicted" and why (after the predicted ones, in the diagnosis' order). Actions
 * predicted to make things worse are not in it.
 */
export interface ActionReport {
  /** The recommendation's id, or the fix's id (plan it with `plan --fix ID`). */
  id: string;
  from: 'recommendation' | 'diagnosis';
  /** The policy it comes from (recommendations), the issue class it fixes (diagnosis). */
  policy: string | null;
  issue: string | null;
  kind: string;
  title: string;
  /** Its own predicted speedup against the baseline, or null with `noPrediction`. */
  speedup: number | null;
  headline: 'applied-now' | 'next-launch' | null;
  noPrediction: string | null;
  planable: boolean;
  /** For a diagnosed fix: the issue's allocation site, if known. */
  site: string | null;
}

export interface AnalysisReport {
  /** The file, its origin, and the program recorded (command and pid; null when the trace names none). */
  trace: { file: string | null; origin: string; command: string[] | null; pid: number | null };
  work: ReportWork | null;
  machine: MachineReport;
  windowMs: number;
  windowCount: number;
  seed: number;
  /** Set when only a time range was replayed. */
  range: ReportRange | null;
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
  /** The access rate assumed for hinting faults ('typical' when none was asked for); null where the engine assumes none. */
  accessRates: AccessRatesOption | null;
  synthetic: boolean;
  notes: string[];
  /** What the recording's rates imply that the machine or its cores cannot carry; null for estimates. */
  feasibility: AnalysisResult['feasibility'] extends infer F ? (F extends null ? null : { [K in keyof NonNullable<F>]: NonNullable<F>[K] }) | null : never;
  /** Per-node memory-controller load under the observed placement (else the first policy). */
  nodes: ReturnType<typeof nodeLoads>;
  counters: { l3Mpki: number; ipc: number } | null;
  policies: PolicyReport[];
  /** Policies asked for that the engine would not run here, with its reason. */
  unavailable: Array<{ policy: string; reason: string }>;
  recommendations: RecommendationReport[];
  /** The recommendations and the diagnosed fixes as one ranked list (what the Overview leads with). */
  actions: ActionReport[];
  /** NumaPerf-style issues of the whole recording with each fix's predicted gain; null with diagnosisNote saying why. */
  diagnosis: ReturnType<typeof diagnosisJson> | null;
  diagnosisNote: string | null;
  /** Why plans cannot be built from this analysis, or null (own machine, a recorded process). */
  planReason: string | null;
}

export const ESTIMATE_REASON =
  'cannot run on an access estimate: its decisions depend on measured access rates, and this recording has no memory-access samples (record with IBS/PEBS or import perf mem data)';

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

/** The recording's work (ReportWork): instructions from its counters, else the DRAM accesses replayed under what ran. */
export function workOf(result: AnalysisResult): ReportWork | null {
  if (result.estimate) return null;
  const c = result.input.counters;
  if (c && c.instructions > 0) return { unit: 'instructions', amount: c.instructions, source: "the trace's instruction counters" };
  const ran = result.policies.find((p) => p.policy === 'observed') ?? result.policies.find((p) => p.policy === result.baseline) ?? result.policies[0];
  if (!ran || !(ran.accesses > 0)) return null;
  return { unit: 'DRAM accesses', amount: ran.accesses, source: `the DRAM accesses replayed under ${ran.policy} (samples × their weights)` };
}

/** One policy of an analysis as the report carries it. */
export function policyReport(r: AnalysisResult['policies'][number], result: AnalysisResult): PolicyReport {
  const m = result.input.machine;
  const windows = r.headlineWindows;
  const mcLoad = timeMean(windows, (w) => w.mcLoadBytesPerS, m.nodeCount);
  const total = mcLoad.reduce((a, b) => a + b, 0);
  const mcShare = mcLoad.map((x) => (total > 0 ? x / total : 0));
  return {
    ...policyResultJson(r, result),
    mcLoadBytesPerS: mcLoad,
    mcUtilisation: timeMean(windows, (w) => w.mcUtilisation, m.nodeCount),
    mcShare,
    hotIndex: hotSpotIndex(mcShare),
    linkLoadBytesPerS: timeMean(windows, (w) => w.linkLoadBytesPerS, m.links.length),
    linkUtilisation: timeMean(windows, (w) => w.linkUtilisation, m.links.length),
    weights: weightsJson(r, result.nodeIds),
  };
}

/** The machine of an analysis as the report carries it. */
export function machineReport(m: MachineModel, choice: ReturnType<typeof machineChoiceJson>): MachineReport {
  const traffic = trafficModel(m);
  return {
    name: m.name,
    source: m.source,
    nodeCount: m.nodeCount,
    nodeIds: [...m.nodeIds],
    memoryOnly: m.nodeCpus.map((c) => c.length === 0),
    tier: Array.from(machineTiers(m)),
    memoryKind: m.memoryKind ? [...m.memoryKind] : m.nodeIds.map(() => null),
    capacityBytesPerS: Array.from(traffic.mcCapacity.value),
    capacitySource: traffic.mcCapacity.source,
    mcBandwidthBytesPerS: Array.from(m.mcBandwidthBytesPerS.value),
    links: m.links.map((l) => ({ from: l.from, to: l.to, capacityBytesPerS: l.capacityBytesPerS })),
    provenance: [`machine ${m.name} (${m.source})`, `MC bandwidth ${m.mcBandwidthBytesPerS.source}`, `idle latencies ${m.idleLatencyNs.source}`, `links ${m.linkSource}`].join('; '),
    choice,
  };
}

/**
 * The analysis of `trace` asked for by `request`, and its report. `result` is the engine's own
 * (typed arrays, placements) for what builds on it (plans); `recommendations` the engine's
 * recommendations with their page and thread lists. The report is plain data: JSON.stringify
 * gives what the CLI prints and what the app's Worker posts.
 */
export function analysisReport(
  trace: Trace,
  request: AnalysisRequest = {},
  context: ReportContext = {},
): { result: AnalysisResult; report: AnalysisReport; recommendations: Recommendation[] } {
  // The machine: chosen in one place (chooseMachine), built in one place (machineModel).
  const offered = request.machine ?? {};
  const target = typeof offered.target === 'string' ? { machine: getPreset(offered.target), name: offered.target } : offered.target;
  const choice = chooseMachine(trace.manifest, { machine: offered.machine, target });
  const machine = choice.used === 'recorded' || choice.used === 'embedded-calibration' ? undefined : machineModel(choice.machine);
  const modelled = machine ?? machineModel(recordedMachine(trace.manifest).machine);

  // The policies: the asked list (or the default set), the baseline, the tiered ones with every default.
  const asked = request.policies ?? null;
  const ids = (asked ?? []).map((p) => (typeof p === 'string' ? p : p.id));
  const tiered = (asked === null || POLICY_IDS.every((id) => ids.includes(id))) && tieredMachine(modelled) ? TIERED_POLICY_IDS : [];
  const wanted: Array<string | Policy> = asked === null ? [...POLICY_IDS] : [...asked];
  for (const id of [...(request.baseline ? [request.baseline] : []), ...tiered]) if (!wanted.some((p) => (typeof p === 'string' ? p : p.id) === id)) wanted.push(id);
  const idOf = (p: string | Policy) => (typeof p === 'string' ? p : p.id);

  // The estimate: asked, or the only thing a trace without access samples can show.
  const mode = request.estimate ?? 'auto';
  const estimateAuto = mode === 'auto' && needsEstimate(trace);
  const estimate = mode === 'uniform' || estimateAuto;
  const runnable = estimate ? wanted.filter((p) => runsOnEstimate(idOf(p))) : wanted;
  const unavailable = wanted.filter((p) => !runnable.includes(p)).map((p) => ({ policy: idOf(p), reason: `${idOf(p)} ${ESTIMATE_REASON}` }));

  const result = analyze(trace, {
    machine,
    retargetRule: request.retargetRule,
    windowMs: request.windowMs ?? undefined,
    // The manual policy takes the request's placement; everything else goes as asked.
    policies: runnable.map((p): Policy | string => (typeof p === 'string' && needsPlacement(p) ? getPolicy(p, { placement: request.manual ?? { threads: [], pages: [] } }) : p)),
    baseline: request.baseline ?? undefined,
    accessEstimate: mode === 'off' ? undefined : mode,
    timeRangeUs: request.range ? { startUs: request.range.fromUs, endUs: request.range.toUs } : undefined,
    accessRates: request.accessRates ?? undefined,
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    ...(request.steadyState !== undefined ? { steadyState: request.steadyState } : {}),
    onProgress: context.onProgress,
  });

  const tr = result.timeRange;
  const synthetic = trace.manifest.origin.kind === 'synthetic';
  const retargeted = choice.used === 'target-machine' || choice.retarget;
  const report: AnalysisReport = {
    trace: {
      file: context.traceFile ?? null,
      origin: trace.manifest.origin.kind,
      command: trace.manifest.process?.command ? [...trace.manifest.process.command] : null,
      pid: trace.manifest.process?.pid ?? null,
    },
    work: workOf(result),
    machine: machineReport(result.input.machine, machineChoiceJson(choice)),
    windowMs: result.windowMs,
    windowCount: result.windowCount,
    seed: result.seed,
    range: tr
      ? { requestedFromUs: tr.requestedStartUs, requestedToUs: tr.requestedEndUs, fromUs: tr.startUs, toUs: tr.endUs, firstWindow: tr.firstWindow, windows: result.windowCount, totalWindows: tr.totalWindows }
      : null,
    baseline: result.baseline,
    baselineNote: result.baselineNote,
    headline: result.headline,
    recordedUs: result.recordedUs,
    estimate: result.estimate,
    estimateAuto: estimateAuto && result.estimate !== null,
    accessSource: result.accessSource,
    accessRates: result.accessSource === 'hinting-faults' && result.estimate === null ? (request.accessRates ?? 'typical') : null,
    synthetic,
    notes: result.notes,
    feasibility: result.feasibility ? { ...result.feasibility } : null,
    nodes: nodeLoads(result),
    counters: result.counters,
    policies: result.policies.map((p) => policyReport(p, result)),
    unavailable,
    recommendations: [],
    actions: [],
    diagnosis: null,
    diagnosisNote: null,
    planReason: retargeted
      ? 'plans are built on the recording’s own machine: remove the machine re-target'
      : trace.manifest.process
        ? null
        : 'the recording names no process (manifest.process is null): a plan needs a pid to target',
  };

  let recommendations: Recommendation[] = [];
  const base = result.policies.find((p) => p.policy === result.baseline);
  if (base) {
    recommendations = recommend(
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
    report.recommendations = recommendations.map((r) => ({
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
  }
  // Diagnostics cover the whole recording on its own machine (scores per ms of the recording; fixes name recorded nodes).
  if (request.diagnose === false) report.diagnosisNote = 'not asked for';
  else if (request.range) report.diagnosisNote = 'diagnostics cover the whole recording: clear the time range to see them';
  else if (retargeted) report.diagnosisNote = 'diagnostics are made on the recording’s own machine: remove the machine re-target';
  else if (result.estimate) report.diagnosisNote = 'diagnostics need access samples; this analysis is a placement-only estimate';
  else report.diagnosis = diagnosisJson(diagnoseAnalysis(trace, result));
  report.actions = rankedActions(report);
  return { result, report, recommendations };
}

/** The recommendations and the diagnosis' fixes as one list, ranked by their own predicted gain. */
export function rankedActions(report: Pick<AnalysisReport, 'recommendations' | 'diagnosis'>): ActionReport[] {
  const out: ActionReport[] = report.recommendations.map((r) => ({
    id: r.id,
    from: 'recommendation',
    policy: r.policy,
    issue: null,
    kind: r.kind,
    title: r.title,
    speedup: r.gain.speedup,
    headline: r.gain.headline,
    noPrediction: null,
    planable: r.planable,
    site: null,
  }));
  for (const i of report.diagnosis?.issues ?? []) {
    const s = i.fix.predictedSpeedup;
    if (s !== null && s < 1) continue; // predicted to make things worse: not offered
    out.push({
      id: i.fix.id,
      from: 'diagnosis',
      policy: null,
      issue: i.kind,
      kind: i.fix.kind,
      title: `${i.text}. Fix: ${i.fix.text}`,
      speedup: s,
      // A fix's gain is its placement held over the recording (diagnose), the steady state.
      headline: s === null ? null : 'next-launch',
      noPrediction: s === null ? (i.fix.noPrediction ?? 'not predicted') : null,
      planable: i.fix.planable,
      site: i.site,
    });
  }
  // Predicted first, highest gain first (stable: the diagnosis' own order among the unpredicted).
  return out
    .map((a, k) => ({ a, k }))
    .sort((x, y) => (x.a.speedup === null ? (y.a.speedup === null ? x.k - y.k : 1) : y.a.speedup === null ? -1 : y.a.speedup - x.a.speedup || x.k - y.k))
    .map(({ a }) => a);
}
