/**
 * The plans and the diagnosis the CLI's `plan` and `diagnose` commands print, made here so that the
 * CLI only parses and prints (issue 30): a policy's whole plan (its headline placement, with the
 * next-launch object entries of a recording with allocation sites), a diagnosed fix's plan, and
 * the diagnosis report of a recording replayed on its baseline.
 */
import { analyze, type AnalyzeOptions } from '../analyze/analyze.js';
import { diagnoseAnalysis } from '../analyze/diagnose-analysis.js';
import { weightCommands } from '../analyze/json.js';
import { diagnose, diagnosisJson, type DiagnoseOptions } from '../diagnose/diagnose.js';
import { planFromFix } from '../diagnose/plan.js';
import { EngineError } from '../model/errors.js';
import { buildPlan } from '../plan/build.js';
import { nextLaunchOptions } from '../plan/objects-from-trace.js';
import type { Plan } from '../plan/schema.js';
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
