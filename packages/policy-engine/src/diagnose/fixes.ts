/**
 * The predicted gain of each diagnosed fix alone, the way recommend's block-wise split is
 * predicted: the baseline's headline placement with only that fix applied, simulated window by
 * window over the recording with analyze's anchoring (timeScale), against the baseline's predicted
 * time. Fixes no placement expresses (padding, thread counts, true sharing) keep their reason.
 */
import type { Placement, ReplayInput, SimulateWindow, WindowMetrics } from '../model/contract.js';
import { overallMetrics } from '../engine/overall.js';
import { simulateWindow } from '../engine/simulate.js';
import { recordedThreads, windowLengthUs } from '../policies/common.js';
import type { Diagnosis, Issue } from './diagnose.js';

export interface FixContext {
  /** The baseline's headline placement and predicted time (analyze's PolicyResult of the baseline). */
  baseline: { policy: string; placement: Placement; predictedUs: number };
  timeScale: ArrayLike<number>;
  simulate?: SimulateWindow;
}

function predict(input: ReplayInput, ctx: FixContext, pageNode: Int16Array, replicated: Uint8Array, threadNode: Int16Array | null): number | null {
  const simulate = ctx.simulate ?? simulateWindow;
  const threadsAt = recordedThreads(input);
  const windows: WindowMetrics[] = [];
  for (const w of input.windows) {
    const placement: Placement = { threadNode: threadNode ?? threadsAt(w.index), pageNode, replicated };
    windows.push(simulate(input.machine, w, placement, windowLengthUs(w), input.pageBytes));
  }
  const m = overallMetrics(windows, ctx.timeScale);
  if (!(m.predictedUs > 0) || !(ctx.baseline.predictedUs > 0)) return null;
  return ctx.baseline.predictedUs / m.predictedUs;
}

/** The placement each fix reaches from the baseline's, or the reason there is none. */
function fixPlacement(issue: Issue, input: ReplayInput, base: Placement): { pageNode: Int16Array; replicated: Uint8Array; threadNode: Int16Array | null } | string {
  const pageNode = base.pageNode.slice();
  const replicated = base.replicated.slice();
  const pages = (issue.fix.pages ?? issue.object?.pages ?? []).filter((p) => p < input.pageCount);
  const nodes = input.machine.nodeCount;
  switch (issue.fix.kind) {
    case 'page-interleave':
      pages.forEach((p, k) => (pageNode[p] = k % nodes));
      return { pageNode, replicated, threadNode: null };
    case 'replicate':
      for (const p of pages) replicated[p] = 1;
      return { pageNode, replicated, threadNode: null };
    case 'move-to-node':
      for (const { page, node } of issue.fix.pageNodes ?? []) if (page < input.pageCount) pageNode[page] = node;
      return { pageNode, replicated, threadNode: null };
    case 'block-wise-interleave': {
      for (const { page, node } of issue.fix.pageNodes ?? []) if (page < input.pageCount) pageNode[page] = node;
      const threadNode = input.initial.threadNode.slice();
      for (const { thread, node } of issue.fix.threadNodes ?? []) if (thread < threadNode.length) threadNode[thread] = node;
      return { pageNode, replicated, threadNode };
    }
    case 'thread-binding': {
      // The other threads stay where the recording had them; only this fix's threads are held.
      return { pageNode, replicated, threadNode: null };
    }
    default:
      return issue.fix.noPrediction ?? 'no placement expresses this fix';
  }
}

/**
 * Fills each issue's fix.predictedSpeedup (or fix.noPrediction) for `input`, the replay input of
 * the diagnosed trace (its page and thread rows are the trace's). Returns the same diagnosis.
 */
export function predictFixGains(diagnosis: Diagnosis, input: ReplayInput, ctx: FixContext): Diagnosis {
  if (input.recorded) {
    for (const i of diagnosis.issues) if (i.fix.predictedSpeedup === null) i.fix.noPrediction = 'not predicted on a re-targeted machine (the fixes name the recorded nodes)';
    return diagnosis;
  }
  const base = ctx.baseline.placement;
  for (const issue of diagnosis.issues) {
    const fix = issue.fix;
    if (fix.kind === 'thread-binding') {
      const held = new Map((fix.threadNodes ?? []).map((x) => [x.thread, x.node]));
      const threadsAt = recordedThreads(input);
      const simulate = ctx.simulate ?? simulateWindow;
      const windows: WindowMetrics[] = [];
      for (const w of input.windows) {
        const threadNode = threadsAt(w.index).slice();
        for (const [t, n] of held) if (t < threadNode.length) threadNode[t] = n;
        windows.push(simulate(input.machine, w, { threadNode, pageNode: base.pageNode, replicated: base.replicated }, windowLengthUs(w), input.pageBytes));
      }
      const m = overallMetrics(windows, ctx.timeScale);
      fix.predictedSpeedup = m.predictedUs > 0 && ctx.baseline.predictedUs > 0 ? ctx.baseline.predictedUs / m.predictedUs : null;
      fix.noPrediction = fix.predictedSpeedup === null ? 'the simulation gave no time' : null;
      continue;
    }
    const placed = fixPlacement(issue, input, base);
    if (typeof placed === 'string') {
      fix.predictedSpeedup = null;
      fix.noPrediction = placed;
      continue;
    }
    fix.predictedSpeedup = predict(input, ctx, placed.pageNode, placed.replicated, placed.threadNode);
    fix.noPrediction = fix.predictedSpeedup === null ? 'the simulation gave no time' : null;
  }
  return diagnosis;
}
