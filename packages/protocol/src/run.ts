/**
 * Launching a program with a plan (`numascope run --plan`; docs/apply.md "Applying at the next
 * launch", docs/live-api.md "POST /api/runs"): the request, the report (core `RunReport`, the
 * object `numascope run --report` writes, serve's runs carry and the binding's `runPlan()`
 * resolves to) and serve's run object.
 */
import { z } from 'zod';
import { count, int } from './common';

/** One object entry of the plan: allocations that matched it and the bytes placed. */
export const objectRunReport = z.strictObject({
  /** Index in the plan's `objects`. */
  index: count,
  site: z.string().nullable(),
  /** The policy used (plain interleave where the weights fallback applied). */
  policy: z.enum(['bind', 'interleave', 'weighted-interleave']),
  nodes: z.array(count),
  /** Allocations that matched, in all processes of the run (0 in a dry run). */
  matches: count,
  /** Bytes given the policy (whole pages inside the matched blocks). */
  bytes: count,
  /** Those bytes per node as the policy places them (planned, not measured). */
  bytesPerNode: z.record(z.string().regex(/^\d+$/), count),
  /** mbind calls that failed, by errno name. */
  failures: z.record(z.string(), count),
});
export type ObjectRunReport = z.infer<typeof objectRunReport>;

export const threadPinned = z.strictObject({
  pid: count,
  tid: count,
  order: count.nullable(),
  error: z.string().nullable(),
});

/** One thread entry (with an order or a name) and the threads it pinned. */
export const threadRunReport = z.strictObject({
  index: count,
  order: count.nullable(),
  name: z.string().nullable(),
  toNodes: z.array(count),
  pinned: z.array(threadPinned),
});

export const moduleRunReport = z.strictObject({
  path: z.string(),
  buildId: z.string().nullable(),
  /** `loaded`, `missing` (never loaded), `build-id-differs` (another build at that path). */
  state: z.string(),
});

/** What a launch with a plan did (or, in a dry run, plans to do). */
export const runReport = z.strictObject({
  operation: z.literal('run'),
  command: z.array(z.string()),
  dryRun: z.boolean(),
  /** The launched process (null in a dry run). */
  pid: count.nullable(),
  exitCode: int.nullable(),
  signal: int.nullable(),
  /** Processes that ran with the plan (the program, its fork children and exec'd images). */
  processes: count,
  objects: z.array(objectRunReport),
  /** Object entries no allocation matched (indices in the plan's `objects`). */
  unmatchedObjects: z.array(count),
  threads: z.array(threadRunReport),
  /** Thread entries with an order or a name that no thread matched. */
  unmatchedThreads: z.array(count),
  /** Thread entries with only a tid (they name threads of the recorded process; not used). */
  tidOnlyThreads: z.array(count),
  modules: z.array(moduleRunReport),
  /** The whole-process `numactl` line (coarser). */
  fallback: z.string().nullable(),
  warnings: z.array(z.string()),
  elapsedMs: z.number().nonnegative(),
});
export type RunReport = z.infer<typeof runReport>;

/** How to launch: the argv (default: the plan's `target.command`), a dry run, the checks to relax. */
export const runOptions = z.strictObject({
  command: z.array(z.string().min(1)).min(1).max(4096).optional(),
  dryRun: z.boolean().optional(),
  /** Run even if the program's file name differs from the plan's `target.command[0]`. */
  anyProgram: z.boolean().optional(),
  /** Weighted-interleave entries whose weights the kernel lacks: refuse (default) or plain interleave. */
  weightsFallback: z.enum(['refuse', 'interleave']).optional(),
  /** Write the system-wide weighted-interleave weights for the run (root) and restore them after it (serve and the binding). */
  setSystemWeights: z.boolean().optional(),
});
export type RunOptions = z.infer<typeof runOptions>;

/** `POST /api/runs`'s body; the collector checks the plan (docs/plan-format.md). */
export const runRequest = runOptions.extend({
  plan: z.record(z.string(), z.unknown()),
});
export type RunRequest = z.infer<typeof runRequest>;

/** serve's run: `dry-run` (answered at once, not kept), `running`, `exited` (report final), `failed`. */
export const planRun = z.strictObject({
  id: z.string().nullable(),
  status: z.enum(['dry-run', 'running', 'exited', 'failed']),
  pid: count.nullable(),
  command: z.array(z.string()),
  startedUnixMs: count.nullable(),
  /** While running: what is planned (no matches yet); after exit: what happened. */
  report: runReport,
  error: z.string().nullable(),
});
export type PlanRun = z.infer<typeof planRun>;

export const planRunList = z.strictObject({ runs: z.array(planRun) });
