/**
 * Applying a placement plan through `numascope serve` (docs/live-api.md, `POST /api/apply` and
 * `POST /api/rollback`): the report types, plan loading, and the hand-over of a plan built in the
 * Recommendations view to the Live screen's "Apply a plan" panel. The report and rollback record
 * are @numascope/protocol's.
 */
import type { ApplyReport, NodePages, NotMoved } from '@numascope/protocol';

/** A plan as loaded into the panel: the parsed object plus where it came from. */
export interface LoadedPlan {
  plan: PlanLike;
  name: string;
  from: 'recommendations' | 'file';
}

/** The fields of a plan the panel reads (the server validates the whole plan, docs/plan-format.md). */
export type PlanLike = {
  format: string;
  version: number;
  target: { pid: number; startTimeTicks?: string | null; command?: string[]; machine?: { nodeIds?: number[] } };
  pageRanges?: Array<{ start: string; end: string; action: string; toNodes: number[] }>;
  threads?: Array<{ tid: number; toNodes: number[]; order?: number; name?: string }>;
  /** Placements by allocation site, for a launch with the plan (`numascope run --plan`). */
  objects?: Array<{ site?: string | null; policy: string; nodes: number[] }>;
  expected?: { pagesToMove?: number; threadsToPin?: number };
  source?: { policy?: string; summary?: string };
  /** Weighted-interleave plans: the system-wide weights (written only when the user asks). */
  systemWeights?: { weights: Record<string, number>; reason?: string };
};

export class PlanFileError extends Error {}

/**
 * Parses a plan file's text. Only what the panel needs is checked here (JSON, the format name, a
 * target pid); everything else is validated by the server, whose `invalid-plan` error names the field.
 */
export function parsePlanText(text: string): PlanLike {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new PlanFileError(`not JSON (${(e as Error).message})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new PlanFileError('not a JSON object');
  const o = v as Record<string, unknown>;
  if (o.format !== 'numascope-plan') throw new PlanFileError(`format is ${JSON.stringify(o.format)}, not "numascope-plan" (docs/plan-format.md)`);
  const target = o.target as Record<string, unknown> | undefined;
  if (!target || typeof target.pid !== 'number' || !Number.isInteger(target.pid) || target.pid <= 0) {
    throw new PlanFileError('target.pid: a positive integer is required');
  }
  return v as PlanLike;
}

/** Pages of a range (4096-byte pages, as plan-format.md counts them). */
export function rangePages(r: { start: string; end: string }): number {
  try {
    return Number((BigInt(r.end) - BigInt(r.start)) / 4096n);
  } catch {
    return 0;
  }
}

/** Total of a node → pages map. */
export function sumPages(m: NodePages | null | undefined): number {
  return m ? Object.values(m).reduce((a, b) => a + b, 0) : 0;
}

/** Node ids named in any of the maps, ascending. */
export function nodesOf(...maps: Array<NodePages | null | undefined>): number[] {
  const ids = new Set<number>();
  for (const m of maps) for (const k of Object.keys(m ?? {})) ids.add(Number(k));
  return [...ids].sort((a, b) => a - b);
}

/** The pages not moved, by reason, leaving out zeros: `[['busy', 3], ['other.ENOMEM', 1]]`. */
export function notMovedReasons(n: NotMoved): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const k of ['busy', 'notPresent', 'notPermitted', 'hugePage', 'elsewhere'] as const) if (n[k] > 0) out.push([k, n[k]]);
  for (const [k, v] of Object.entries(n.other ?? {})) if (v > 0) out.push([`other.${k}`, v]);
  return out;
}

/** A cpu list in the kernel's short form: [0,1,2,5] → "0-2,5". */
export function cpuList(cpus: readonly number[] | null | undefined): string {
  if (!cpus || cpus.length === 0) return '–';
  const s = [...cpus].sort((a, b) => a - b);
  const parts: string[] = [];
  let lo = s[0]!;
  let hi = lo;
  for (const c of s.slice(1)) {
    if (c === hi + 1) hi = c;
    else {
      parts.push(lo === hi ? String(lo) : `${lo}-${hi}`);
      lo = hi = c;
    }
  }
  parts.push(lo === hi ? String(lo) : `${lo}-${hi}`);
  return parts.join(',');
}

/** What each status means, one line. */
export function statusText(r: ApplyReport): string {
  switch (r.status) {
    case 'dry-run':
      return 'Dry run: nothing was changed.';
    case 'complete':
      return r.operation === 'rollback' ? 'Rolled back: pages and affinities restored and verified.' : 'Complete: every planned change was made and verified.';
    case 'partial':
      return 'Partly done: some pages or threads could not be changed (see below).';
    case 'budget-exhausted':
      return 'The time budget ran out: the remaining pages were not attempted.';
    case 'process-exited':
      return 'The process exited midway.';
    default:
      return `Status ${r.status}.`;
  }
}

// ---- hand-over from the Recommendations view ----

let pending: LoadedPlan | null = null;
const pendingListeners = new Set<() => void>();
let openLive: () => void = () => {};

/** App registers how to show the Live screen. */
export function setOpenLiveHandler(fn: () => void) {
  openLive = fn;
}

/** The plan handed over (null once the panel took it). */
export function takePendingPlan(): LoadedPlan | null {
  const p = pending;
  pending = null;
  return p;
}

export function onPendingPlan(fn: () => void): () => void {
  pendingListeners.add(fn);
  return () => pendingListeners.delete(fn);
}

/** Hands a plan to the Live screen's apply panel and shows it. */
export function openApplyWithPlan(plan: PlanLike, name: string) {
  pending = { plan, name, from: 'recommendations' };
  openLive();
  for (const l of pendingListeners) l();
}
