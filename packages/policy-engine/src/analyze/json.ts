/**
 * An analysis as plain JSON: what the CLI prints (`--json`) and what the app's views are built
 * from. docs/engine.md ("CLI") lists every key; changing one is a change of the CLI's output.
 */
import { windowPredictedUs, type AnalysisResult, type PolicyResult, type ReplaySummary } from './analyze.js';
import { predictionWhy } from './why.js';

/** The headline metrics of one policy and its replay (the transient), shared by the CLI's JSON and the app's views. */
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
    predictedSpeedup: r.predictedSpeedup,
    accesses: r.accesses,
    computeUs: r.computeUs,
    stallUs: r.stallUs,
    pagesToMove: r.pagesToMove,
    bytesToMove: r.bytesToMove,
    l3Mpki: r.l3Mpki,
    ipc: r.ipc,
    placementsEvaluated: r.placementsEvaluated,
    placementsTotal: r.placementsTotal,
    steadyState: r.steadyState ? { ...r.steadyState } : null,
    replay: replaySummaryJson(r.transient),
    decisionCount: r.replay.decisions.length,
  };
}

/** The replay (transient) of one policy as plain JSON (docs/engine.md lists every key). */
export function replaySummaryJson(t: ReplaySummary) {
  return {
    localAccessRatio: t.localAccessRatio,
    memoryLatencyNs: t.memoryLatencyNs,
    mcImbalancePct: t.mcImbalancePct,
    interconnectUsagePct: t.interconnectUsagePct,
    interconnectImbalancePct: t.interconnectImbalancePct,
    predictedUs: t.predictedUs,
    migrationUs: t.migrationUs,
    predictedSpeedup: t.predictedSpeedup,
    migratedPages: t.migratedPages,
    migratedBytes: t.migratedBytes,
    convergedAtWindow: t.convergedAtWindow,
    convergedAtUs: t.convergedAtUs,
  };
}

/**
 * The weights of a weighted-interleave result, by kernel node id, with the equivalent command
 * lines and (when the engine chose them) the recommendation's curve of predicted time against the
 * DRAM share. Curve times are the recommendation's model times (the fluid model,
 * policies/weighted-interleave.ts), also given relative to DRAM alone: compare points of the curve
 * with each other, not with the anchored predictedUs of the policies.
 */
export function weightsJson(r: PolicyResult, nodeIds: readonly number[]) {
  const w = r.replay.weighted;
  if (!w) return null;
  const ids = (xs: readonly number[]) => xs.map((i) => nodeIds[i]!);
  const rec = w.recommendation;
  const vsDram = (us: number) => (rec && rec.dramOnlyUs > 0 ? us / rec.dramOnlyUs : null);
  return {
    nodes: ids(w.process.nodes),
    weights: [...w.process.weights],
    ...weightCommands(ids(w.process.nodes), w.process.weights),
    objects: w.objects.map((o) => ({ site: o.label, nodes: ids(o.weights.nodes), weights: [...o.weights.weights], dramShare: o.dramShare })),
    recommendation: rec
      ? {
          sides: rec.sides,
          fastNodes: ids(rec.fast),
          slowNodes: ids(rec.slow),
          dramShare: rec.dramShare,
          modelUs: rec.predictedUs,
          timeVsDramOnly: vsDram(rec.predictedUs),
          optimum: { dramShare: rec.optimum.dramShare, modelUs: rec.optimum.predictedUs, timeVsDramOnly: vsDram(rec.optimum.predictedUs) },
          bandwidthRatio: { nodes: ids(rec.bandwidthRatio.weights.nodes), weights: [...rec.bandwidthRatio.weights.weights], dramShare: rec.bandwidthRatio.dramShare, timeVsDramOnly: vsDram(rec.bandwidthRatio.predictedUs) },
          dramOnlyModelUs: rec.dramOnlyUs,
          equalWeightsTimeVsDramOnly: vsDram(rec.equalUs),
          flat: { ...rec.flat },
          curve: rec.curve.map((p) => ({ dramShare: p.dramShare, modelUs: p.predictedUs, timeVsDramOnly: vsDram(p.predictedUs) })),
          method: rec.method,
        }
      : null,
  };
}

/**
 * The command lines equivalent to weights (kernel node ids): numactl takes the node list only; the
 * weights are the system-wide ones in sysfs, which apply to every weighted-interleave allocation.
 */
export function weightCommands(nodes: readonly number[], weights: readonly number[]) {
  return {
    numactl: `numactl --weighted-interleave=${nodes.join(',')} COMMAND`,
    sysfs: Object.fromEntries(nodes.map((n, k) => [`/sys/kernel/mm/mempolicy/weighted_interleave/node${n}`, weights[k]!])),
    note:
      'numactl --weighted-interleave (numactl 2.0.19+, Linux 6.9+) takes the node list only: the weights come from /sys/kernel/mm/mempolicy/weighted_interleave/nodeN, ' +
      'which are system-wide (every weighted-interleave allocation on the machine uses them); numascope run --plan sets them per object through the allocation shim instead',
  };
}

export function policyResultJson(r: PolicyResult, result: AnalysisResult, maxDecisions = 50) {
  const times = windowPredictedUs(result, r.replay.windows);
  const weights = weightsJson(r, result.nodeIds);
  const why = predictionWhy(r, result.input.machine);
  return {
    ...policySummary(r),
    ...(weights ? { weights } : {}),
    // The decomposition of the headline (docs/engine.md, "Decomposition").
    why: { ...why, busiest: why.busiest ? { ...why.busiest } : null },
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
      predictedUs: times[index]!,
      localAccessRatio: w.localAccessRatio,
      memoryLatencyNs: w.memoryLatencyNs,
      mcImbalancePct: w.mcImbalancePct,
      interconnectUsagePct: w.interconnectUsagePct,
      interconnectImbalancePct: w.interconnectImbalancePct,
      accessesPerUs: w.accessesPerUs,
      mcUtilisationPct: Array.from(w.mcUtilisation, (u) => u * 100),
      // Decomposition of the window (times anchored as predictedUs).
      computeUs: w.computeUs * (result.timeScale[index] ?? 1),
      stallUs: w.stallUs * (result.timeScale[index] ?? 1),
      concurrency: Number.isFinite(w.concurrency) ? w.concurrency : null,
      idleLatencyNs: w.idleLatencyNs,
      mcDelayNs: Array.from(w.mcDelayNs),
      linkDelayNs: Array.from(w.linkDelayNs),
      crossbarDelayNs: w.crossbarDelayNs,
      latencyBoundNs: Number.isFinite(w.latencyBoundNs) ? w.latencyBoundNs : null,
      idleScale: w.idleScale,
      queueScale: w.queueScale,
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
    baselineNote: result.baselineNote,
    headline: result.headline,
    recordedUs: result.recordedUs,
    estimate: result.estimate,
    accessSource: result.accessSource,
    timeRange: result.timeRange,
    notes: result.notes,
    feasibility: result.feasibility ? { ...result.feasibility } : null,
    nodes: nodeLoads(result),
    counters: result.counters,
    policies: result.policies.map((p) => policyResultJson(p, result)),
  };
}

/** A hot spot carries more than this many times an even share of the requests… */
export const HOT_SPOT_EVEN_SHARE_FACTOR = 1.5;
/** …and more than this many times the next busiest node's share (a tie names no hot spot). */
export const HOT_SPOT_LEAD_FACTOR = 1.25;

/**
 * The node index that is the machine's memory hot spot, from each node's share of the requests it
 * serves, or -1: one node only, carrying more than HOT_SPOT_EVEN_SHARE_FACTOR × an even share and
 * more than HOT_SPOT_LEAD_FACTOR × the next busiest node (two or four nodes tied are no hot spot).
 */
export function hotSpotIndex(shares: readonly number[]): number {
  const n = shares.length;
  if (n < 2) return -1;
  let best = 0;
  for (let i = 1; i < n; i++) if (shares[i]! > shares[best]!) best = i;
  let second = 0;
  for (let i = 0; i < n; i++) if (i !== best && shares[i]! > second) second = shares[i]!;
  return shares[best]! > HOT_SPOT_EVEN_SHARE_FACTOR / n && shares[best]! > HOT_SPOT_LEAD_FACTOR * second ? best : -1;
}

/**
 * Per-node memory-controller load under the observed placement (else the first policy): mean
 * utilisation % over windows weighted by window time, each node's share of it, and `hotSpot`, the
 * node id of hotSpotIndex (null when there is none).
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
  const hot = hotSpotIndex(share);
  const hotSpot = hot >= 0 ? result.input.machine.nodeIds[hot]! : null;
  return { policy: r.policy, nodeIds: [...result.input.machine.nodeIds], mcUtilisationPct: mean, share, hotSpot };
}
