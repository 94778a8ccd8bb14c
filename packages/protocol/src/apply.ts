/**
 * Applying a plan and rolling it back (docs/apply.md, docs/live-api.md "POST /api/apply"): the
 * request bodies, the report (core `ApplyReport`, the same object `numascope apply --json`
 * prints, serve answers and the binding's `apply()` resolves to) and the rollback record.
 */
import { z } from 'zod';
import { count, decimalString, hexAddress, int, nodePages, pid } from './common';

/** Pages that were not moved, by reason (the `move_pages` status of each page). */
export const notMoved = z.strictObject({
  /** -EBUSY: a retry may succeed. */
  busy: count,
  /** -EFAULT / -ENOENT: not mapped or never touched. */
  notPresent: count,
  /** -EACCES / -EPERM: shared with other processes, or not permitted. */
  notPermitted: count,
  /** Failed pages inside a transparent-huge-page mapping. */
  hugePage: count,
  /** Reported moved but found on another node than planned. */
  elsewhere: count,
  /** Other errno values by name. */
  other: z.record(z.string(), count),
});
export type NotMoved = z.infer<typeof notMoved>;

const pageStatsFields = {
  pages: count,
  /** Pages outside every mapping of the process: skipped. */
  unmapped: count,
  /** Pages per node before (present pages only). */
  before: nodePages,
  notPresentBefore: count,
  /** Pages per node the plan wants (present pages only). */
  plannedAfter: nodePages,
  toMove: count,
  alreadyInPlace: count,
  /** `move_pages` reported these moved. */
  moved: count,
  notMoved,
  /** Not attempted: the time budget ran out or the process exited. */
  notAttempted: count,
  /** Pages per node the verification found; null in a dry run or when the process exited. */
  after: nodePages.nullable(),
  /** Present pages found on their planned node; null as `after`. */
  onTargetAfter: count.nullable(),
};

/** Page counts of one range, or of the whole plan. */
export const pageStats = z.strictObject(pageStatsFields);
export type PageStats = z.infer<typeof pageStats>;

/** A weighted-interleave weight: the kernel's range, 1–255. */
export const weight = int.min(1).max(255);

/** Node id key → weight (sysfs `weighted_interleave/nodeN`). */
export const nodeWeights = z.record(z.string().regex(/^\d+$/, 'a node id key'), weight);

/**
 * The verification of a weighted-interleave range (docs/apply.md, "Weighted interleave"): `ok` when
 * every target node is within its weight of its share and no page is elsewhere.
 */
export const weightCheck = z.strictObject({
  present: count,
  /** `ceil(present / sum(weights))`. */
  cycles: count,
  /** Per target node: `present × w / sum(weights)`, rounded. */
  expected: nodePages,
  /** Per node (target or not): pages found. */
  found: nodePages,
  ok: z.boolean(),
});
export type WeightCheck = z.infer<typeof weightCheck>;

/** The kernel's weighted-interleave state: every node's weight and the `auto` mode (null: no `auto` file, before Linux 6.16). */
export const weightsState = z.strictObject({ weights: nodeWeights, auto: z.boolean().nullable() });
export type WeightsState = z.infer<typeof weightsState>;

/** What `--set-system-weights` (serve: `setSystemWeights`) did, or a rollback's restore. */
export const systemWeightsReport = z.strictObject({
  operation: z.enum(['apply', 'restore']),
  before: weightsState,
  /** The weights asked for (the plan's, or the record's snapshot). */
  planned: nodeWeights,
  /** Read back after writing; null in a dry run. */
  after: weightsState.nullable(),
  matched: z.boolean(),
});
export type SystemWeightsReport = z.infer<typeof systemWeightsReport>;

export const rangeReport = z.strictObject({
  start: hexAddress,
  end: hexAddress,
  /** `restore` in a rollback. */
  action: z.enum(['move', 'interleave', 'weighted-interleave', 'restore']),
  toNodes: z.array(count),
  /** `weighted-interleave`: the weights of `toNodes`. */
  weights: z.array(weight).optional(),
  /** `weighted-interleave`, after verification. */
  weightCheck: weightCheck.optional(),
  ...pageStatsFields,
  /** Expected pages per node when the plan was made. */
  expectedNodes: nodePages.nullable(),
  /** Pages of the range in transparent-huge-page mappings, in base pages. */
  thpPages: count,
});
export type RangeReport = z.infer<typeof rangeReport>;

export const threadReport = z.strictObject({
  tid: int,
  toNodes: z.array(count),
  /** All cpus of the target nodes. */
  cpus: z.array(count),
  previousCpus: z.array(count).nullable(),
  /** Affinity read back after pinning (null in a dry run or on error). */
  readBack: z.array(count).nullable(),
  pinned: z.boolean(),
  error: z.string().nullable(),
});
export type ThreadReport = z.infer<typeof threadReport>;

/** The planner's totals (the plan's `expected`). */
export const expectedTotals = z.strictObject({
  pagesToMove: count.nullable(),
  bytesToMove: count.nullable(),
  pagesPerNodeAfter: nodePages.nullable(),
  threadsToPin: count.nullable(),
});

export const pageRun = z.strictObject({ start: hexAddress, count, node: count });
export const threadAffinity = z.strictObject({
  tid: int,
  cpus: z.array(count),
  /** The thread's start time when it was pinned; absent in records written before it existed. */
  startTimeTicks: decimalString.optional(),
});

/** What Apply changed, so that rollback can restore it. Sent back as it came. */
export const rollbackRecord = z.strictObject({
  format: z.literal('numascope-rollback'),
  version: count,
  pid,
  startTimeTicks: decimalString,
  pageSize: count,
  pages: z.array(pageRun),
  threads: z.array(threadAffinity),
  /** The system weights and auto mode before `--set-system-weights` changed them (absent when unchanged). */
  systemWeights: weightsState.optional(),
});
export type RollbackRecord = z.infer<typeof rollbackRecord>;

export const applyStatus = z.enum(['dry-run', 'complete', 'partial', 'budget-exhausted', 'process-exited']);
export type ApplyStatus = z.infer<typeof applyStatus>;

/** The report of an apply or a rollback; after a real apply through serve or the binding, `rollback` too. */
export const applyReport = z.strictObject({
  operation: z.enum(['apply', 'rollback']),
  pid,
  startTimeTicks: decimalString,
  dryRun: z.boolean(),
  status: applyStatus,
  message: z.string().nullable(),
  pageSize: count,
  pages: pageStats,
  ranges: z.array(rangeReport),
  threads: z.array(threadReport),
  expected: expectedTotals.nullable(),
  warnings: z.array(z.string()),
  /** Threads that issued move_pages. */
  jobs: count,
  elapsedMs: z.number().nonnegative(),
  /** Where `numascope apply` wrote the rollback record (null through serve and the binding). */
  rollbackRecord: z.string().nullable(),
  /** The rollback record of a real apply (send it back to rollback to undo). */
  rollback: rollbackRecord.optional(),
  /** The system-wide weights written or restored (absent when the plan has no `systemWeights`). */
  systemWeights: systemWeightsReport.optional(),
});
export type ApplyReport = z.infer<typeof applyReport>;

/** How to apply: the process (must equal the plan's `target.pid`), a dry run, a time budget, the system weights. */
export const applyOptions = z.strictObject({
  pid,
  dryRun: z.boolean().optional(),
  budgetMs: int.min(1).max(3_600_000).optional(),
  /**
   * Also write the plan's `systemWeights` to the kernel's system-wide weighted-interleave weights
   * (global: every process's weighted-interleave allocations use them; the rollback record keeps
   * the previous ones and rollback restores them). Without it they are not written and the report
   * warns. A kernel without weighted interleave refuses (`kernel-unsupported` through serve).
   */
  setSystemWeights: z.boolean().optional(),
});
export type ApplyOptions = z.infer<typeof applyOptions>;

/**
 * `POST /api/apply`'s body. The plan is checked by the collector (docs/plan-format.md; its
 * `invalid-plan` error names the field), so here it is any JSON object.
 */
export const applyRequest = applyOptions.extend({
  plan: z.record(z.string(), z.unknown()),
});
export type ApplyRequest = z.infer<typeof applyRequest>;

/** `POST /api/rollback`'s body; the collector checks the record. */
export const rollbackRequest = z.strictObject({ record: z.record(z.string(), z.unknown()) });
