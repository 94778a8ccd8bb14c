/**
 * The plans and the diagnosis the CLI's `plan` and `diagnose` commands print, made here so that the
 * CLI only parses and prints and the app's Worker only posts messages (issue 30): a policy's whole
 * plan (its headline placement, with the next-launch object entries of a recording with
 * allocation sites), the plan of the recommendations a user selected, a diagnosed fix's plan, and
 * the diagnosis report of a recording replayed on its baseline.
 */
import { analyze, type AnalysisResult, type AnalyzeOptions } from '../analyze/analyze.js';
import { diagnoseAnalysis } from '../analyze/diagnose-analysis.js';
import { weightCommands } from '../analyze/json.js';
import { diagnose, diagnosisJson, type DiagnoseOptions } from '../diagnose/diagnose.js';
import { planFromFix } from '../diagnose/plan.js';
import type { PolicyReplay } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { buildPlan } from '../plan/build.js';
import { nextLaunchOptions } from '../plan/objects-from-trace.js';
import type { Plan } from '../plan/schema.js';
import type { Recommendation } from '../recommend/recommend.js';
import { numericColumn } from '../trace/columns.js';
import type { Trace } from '../trace/types.js';

export interface PlanContext {
  createdAt: string;
  traceName: string;
}

/** A policy's plan and, for weighted interleave, the commands that give new allocations the same weights. */
export interface PolicyPlan {
  plan: Plan;
  weights: ReturnType<typeof weightCommands> | null;
}

/**
 * The plan of one policy over the whole recording (options.policies: exactly one), reaching its
 * headline placement (the steady state by default). `systemWeights`: also write a weighted
 * interleave's process weights as the plan's systemWeights (sysfs, system-wide).
 */
export function policyPlan(trace: Trace, options: AnalyzeOptions, context: PlanContext & { systemWeights?: boolean }): PolicyPlan {
  if (options.policies?.length !== 1) throw new EngineError('bad-option', 'a plan needs exactly one policy');
  const result = analyze(trace, options);
  const chosen = result.policies[0]!;
  const weighted = chosen.replay.weighted;
  if (context.systemWeights && !weighted) throw new EngineError('bad-option', `--system-weights needs a weighted-interleave policy, not ${chosen.policy}`);
  const plan = buildPlan(trace, chosen.replay, {
    createdAt: context.createdAt,
    traceName: context.traceName,
    seed: result.seed,
    placement: chosen.placement,
    placementLabel: result.headline === 'steady-state' ? 'steady-state (converged) placement' : 'final placement',
    // A recording with allocation sites also gets object entries (and thread pins that name their
    // thread by creation order and name): the same plan then serves `numascope run --plan` at the
    // program's next launch, where addresses and tids differ.
    ...nextLaunchOptions(trace),
    ...(context.systemWeights && weighted
      ? {
          systemWeights: {
            weights: Object.fromEntries(weighted.process.nodes.map((i, k) => [String(result.nodeIds[i]), weighted.process.weights[k]!])),
            reason: `${chosen.policy}: the process weights as system-wide weights (nodes not listed keep theirs)`,
          },
        }
      : {}),
  });
  if (result.estimate) {
    plan.source.summary =
      'ESTIMATED from page placement only (the trace has no memory-access samples; accesses assumed uniform: every thread reads every page equally): ' + plan.source.summary;
  }
  if (result.accessSource === 'hinting-faults' && options.accessRates === 'bandwidth-bound') {
    plan.source.summary = 'ASSUMED bandwidth-bound (the hinting faults give no rates; --access-rates bandwidth-bound): ' + plan.source.summary;
  }
  const weights = weighted && weighted.process.nodes.length >= 2 ? weightCommands(weighted.process.nodes.map((i) => result.nodeIds[i]!), weighted.process.weights) : null;
  return { plan, weights };
}

/** The plan of one diagnosed fix alone, the diagnosis made with the same thresholds (the ids depend on which issues pass them). */
export function fixPlan(trace: Trace, fixId: string, thresholds: DiagnoseOptions, context: PlanContext): Plan {
  return planFromFix(trace, diagnose(trace, thresholds), fixId, context);
}

/**
 * The diagnosis of a recording (`diagnose --json`): only the baseline is replayed (each fix's
 * gain is its own placement against it), observed and first-touch by default.
 */
export function diagnoseReport(trace: Trace, options: AnalyzeOptions, thresholds: DiagnoseOptions, traceFile: string) {
  const result = analyze(trace, { ...options, policies: options.baseline ? [options.baseline] : ['observed', 'first-touch'] });
  return { trace: { file: traceFile, origin: trace.manifest.origin.kind }, baseline: result.baseline, ...diagnosisJson(diagnoseAnalysis(trace, result, thresholds)) };
}

/**
 * A plan from the selected recommendations (the app's Recommendations view): the recording's
 * placement at its end (pages where the pages table last saw them, threads on their last observed
 * node) with each selected action's pages and threads where its policy's headline placement has
 * them ("as <policy> does", the placement its predicted gain is for). The plan moves exactly the
 * selected actions' pages, so its page count is theirs. `check`: no action, every recorded page
 * range on the node the recording last saw it on (the live loop's placement check).
 */
export function recommendationsPlan(
  trace: Trace,
  result: AnalysisResult,
  recommendations: readonly Recommendation[],
  ids: readonly string[],
  context: PlanContext & { check?: boolean },
): Plan {
  const check = context.check === true;
  const recs = recommendations.filter((r) => ids.includes(r.id) && r.planable);
  if (recs.length === 0 && !check) throw new EngineError('bad-option', 'select at least one recommendation that a plan can express (move, interleave or pin)');
  const input = result.input;
  const pageNode = Int16Array.from(input.initial.pageNode);
  const current = numericColumn<Int8Array>(trace.tables.pages, 'node');
  for (let p = 0; p < pageNode.length && p < current.length; p++) {
    const k = input.machine.nodeIds.indexOf(current[p]!);
    if (k >= 0) pageNode[p] = k;
  }
  const observed = input.observedThreadNode;
  const threadNode = Int16Array.from(observed && observed.length > 0 ? observed[observed.length - 1]! : input.initial.threadNode);
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
  return buildPlan(trace, replay, {
    createdAt: context.createdAt,
    traceName: context.traceName,
    seed: 1,
    summary: check
      ? 'placement check: every recorded page range on the node the recording last saw it on (moves only pages that are elsewhere now)'
      : recs.map((r) => r.title).join(' · ').slice(0, 500),
    includeInPlace: check,
    ...(check ? {} : { pages: new Set(recs.flatMap((r) => (r.pageIndices ? Array.from(r.pageIndices) : []))) }),
    ...(check ? { reason: 'recorded placement' } : {}),
    // With allocation sites the plan also serves the next launch (object entries, threads by
    // order and name): the Apply panel's "Launch with this plan".
    ...(check ? {} : nextLaunchOptions(trace)),
  });
}
