/**
 * Steady state (docs/engine.md, "Steady state"): each policy's converged placement held over every
 * window of the recording, "had this policy been in force from the start". The window-by-window
 * replay stays the transient (time to converge, pages moved on the way).
 *
 * - A policy that places at allocation (`PolicyReplay.placedAtAllocation`) or whose replay never
 *   changed the placement: the replay is its steady state (same windows, nothing simulated again).
 * - Otherwise the converged placement is the replay's final placement, confirmed by one more round
 *   of the policy over the recording's last windows with accesses (CONTINUATION_WINDOWS, re-timed to
 *   follow the recording), started from that placement. A round that moves more than
 *   CONVERGED_MOVE_SHARE of the pages (or any thread) means the replay ran out of accesses before
 *   the policy settled (a recording whose accesses sit in one window): rounds continue, each from
 *   the last one's placement, until one changes nothing material, at most CONTINUATION_MAX_ROUNDS.
 *   Deterministic: every round runs with the replay's seed.
 * - Then one simulation pass over the recording's windows with every policy's held placement.
 *   When the held placement is the policy's last placement in the replay pass (engine/run.ts,
 *   FinalRun), the windows since the policy settled on it take the replay's metrics. Only the
 *   other windows are simulated; with the default simulator their access matrices are summed
 *   straight from the trace's rows (WindowSource.accessMatrices), without building the window.
 */
import type { AccessWindow, Placement, Policy, PolicyReplay, ReplayInput, ReplayOptions, SteadyState, WindowMetrics, WindowSource, WindowTiming } from '../model/contract.js';
import { samePlacement, type FinalRun } from './final-run.js';
import { MEMORY_STALL_SHARE, simulateMatrix, simulateWindow } from './simulate.js';
import { arrivalsByWindow, atFirstTouch } from './arrivals.js';

/** Pages moved after a window, as a share of the pages, below which the placement counts as converged. */
export const CONVERGED_MOVE_SHARE = 0.01;
/** Windows with accesses (the recording's last ones) that one continuation round replays. */
export const CONTINUATION_WINDOWS = 4;
/** Continuation rounds at most before the last round's placement is taken as it is. */
export const CONTINUATION_MAX_ROUNDS = 8;

const PLACEMENT_KINDS = new Set(['migrate', 'interleave', 'replicate']);

function threadsDiffer(a: Int16Array, b: Int16Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return true;
  return false;
}

/** Pages moved by the replay's decisions, per window. */
function pagesMovedByWindow(replay: PolicyReplay, windowCount: number): Float64Array {
  const moved = new Float64Array(windowCount);
  for (const d of replay.decisions) {
    if (PLACEMENT_KINDS.has(d.kind) && d.pages && d.window >= 0 && d.window < windowCount) moved[d.window]! += d.pages;
  }
  return moved;
}

/**
 * First window from which the replay's placement no longer changes materially: after the last
 * window whose decisions (acting from the next window) leave more than the allowed pages to move,
 * and not before the last thread move.
 */
export function convergedAtWindow(replay: PolicyReplay, windowCount: number, pageCount: number): number {
  const moved = pagesMovedByWindow(replay, windowCount);
  const allowed = CONVERGED_MOVE_SHARE * pageCount;
  let after = 0;
  let at = 0;
  for (let w = windowCount - 1; w >= 0; w--) {
    after += moved[w]!;
    if (after > allowed) {
      at = w + 1;
      break;
    }
  }
  const byWindow = replay.threadNodeByWindow;
  for (let w = byWindow.length - 1; w > at; w--) {
    if (threadsDiffer(byWindow[w]!, byWindow[w - 1]!)) {
      at = w;
      break;
    }
  }
  return at;
}

function changedAnything(replay: PolicyReplay, initial: Placement): boolean {
  if (replay.migratedPages > 0) return true;
  for (const t of replay.threadNodeByWindow) if (threadsDiffer(t, initial.threadNode)) return true;
  return threadsDiffer(replay.finalPlacement.threadNode, initial.threadNode);
}

/** The recording's last windows with accesses, in time order, re-timed to follow the recording end to end. */
function continuationWindows(input: ReplayInput): WindowSource | null {
  const picked: number[] = [];
  for (let w = input.windows.length - 1; w >= 0 && picked.length < CONTINUATION_WINDOWS; w--) {
    if (input.windows.info(w).sampleCount > 0) picked.unshift(w);
  }
  if (picked.length === 0) return null;
  const last = input.windows.info(input.windows.length - 1);
  const starts: number[] = [];
  let t = last.endUs;
  for (const w of picked) {
    const info = input.windows.info(w);
    starts.push(t);
    t += Math.max(1, info.endUs - info.startUs);
  }
  const at = (i: number) => {
    const info = input.windows.info(picked[i]!);
    return { index: i, startUs: starts[i]!, endUs: starts[i]! + Math.max(1, info.endUs - info.startUs), sampleCount: info.sampleCount };
  };
  const get = (i: number): AccessWindow => ({ ...input.windows.get(picked[i]!), ...at(i) });
  return {
    length: picked.length,
    info: at,
    get,
    *[Symbol.iterator]() {
      for (let i = 0; i < picked.length; i++) yield get(i);
    },
  };
}

interface Held {
  placement: Placement;
  basis: SteadyState['basis'];
  rounds: number;
  movedPages: number;
}

/** The converged placement of an adaptive policy's replay (see the file comment). */
function convergedPlacement(
  input: ReplayInput,
  policy: Policy,
  replay: PolicyReplay,
  options: ReplayOptions,
  windows: WindowSource | null,
  replayOnly: (input: ReplayInput, policy: Policy, options: ReplayOptions) => PolicyReplay,
): Held {
  let placement = replay.finalPlacement;
  if (!windows) return { placement, basis: 'final', rounds: 0, movedPages: 0 };
  const allowed = CONVERGED_MOVE_SHARE * input.pageCount;
  let movedPages = 0;
  for (let round = 1; round <= CONTINUATION_MAX_ROUNDS; round++) {
    const next = replayOnly({ ...input, windows, initial: placement, observedThreadNode: undefined, timeRange: undefined }, policy, options);
    let moved = 0;
    for (let p = 0; p < input.pageCount; p++) {
      if (next.finalPlacement.pageNode[p] !== placement.pageNode[p] || next.finalPlacement.replicated[p] !== placement.replicated[p]) moved++;
    }
    const material = moved > allowed || threadsDiffer(next.finalPlacement.threadNode, placement.threadNode);
    if (!material) return { placement, basis: round === 1 ? 'final' : 'continued', rounds: round, movedPages };
    movedPages += moved;
    placement = next.finalPlacement;
  }
  return { placement, basis: 'continued', rounds: CONTINUATION_MAX_ROUNDS, movedPages };
}

/**
 * Steady states of replays made in one pass (results in the order of `policies`): one continuation
 * check per adaptive policy, then one simulation pass over the windows for every held placement.
 */
export function steadyStates(
  input: ReplayInput,
  policies: readonly Policy[],
  replays: readonly PolicyReplay[],
  options: ReplayOptions,
  replayOnly: (input: ReplayInput, policy: Policy, options: ReplayOptions) => PolicyReplay,
  finalRuns?: ReadonlyArray<FinalRun | null>,
): SteadyState[] {
  const windowCount = input.windows.length;
  const out: Array<SteadyState | null> = [];
  const pending: Array<{ k: number; held: Held; converged: number | null; windows: WindowMetrics[]; followsRecording: boolean }> = [];
  let continuation: WindowSource | null | undefined;
  replays.forEach((replay, k) => {
    if (replay.placedAtAllocation || !changedAnything(replay, input.initial)) {
      out.push({
        basis: replay.placedAtAllocation ? 'allocation' : 'unchanged',
        placement: replay.placedAtAllocation ? null : replay.finalPlacement,
        windows: replay.windows,
        convergedAtWindow: 0,
        continuationRounds: 0,
        continuationMovedPages: 0,
      });
      return;
    }
    continuation ??= continuationWindows(input);
    const held = convergedPlacement(input, policies[k]!, replay, options, continuation, replayOnly);
    out.push(null);
    pending.push({
      k,
      held,
      converged: held.basis === 'continued' ? null : convergedAtWindow(replay, windowCount, input.pageCount),
      windows: [],
      followsRecording: replay.threadsFollowRecording === true && input.observedThreadNode !== undefined,
    });
  });
  if (pending.length > 0) {
    // The replay's metrics for the held placement, where the policy's final run had it.
    const known = pending.map((p) => {
      const run = finalRuns?.[p.k];
      return run && run.machine === input.machine && samePlacement(run.placement, p.held.placement) ? run.byWindow : null;
    });
    // Summing matrices from the rows is exact for the default simulator only (accessMatrix + simulateMatrix).
    const fromRows = options.simulate === simulateWindow && input.windows.accessMatrices !== undefined && input.windows.timing !== undefined;
    // A policy that places pages only holds its pages; its threads stay where the recording had them.
    // Pages first touched in window w are where allocation put them in w (the policy acts on a page
    // once it exists: engine/arrivals.ts), the held placement from the next window on.
    const heldAt = (i: number, w: number): Placement => {
      const p = pending[i]!;
      const threads = p.followsRecording ? input.observedThreadNode![w] : undefined;
      return atFirstTouch(input, threads ? { ...p.held.placement, threadNode: threads } : p.held.placement, w);
    };
    const arrivals = arrivalsByWindow(input);
    for (let w = 0; w < windowCount; w++) {
      const info = input.windows.info(w);
      // The window's timing (its closed loop and access scale: engine/windows.ts)
      // is known without building it once the replay pass has built it.
      const built = fromRows ? null : input.windows.get(w);
      const timing: WindowTiming = built ?? input.windows.timing!(w);
      const lengthUs = Math.max(1, info.endUs - info.startUs);
      const misses: number[] = [];
      pending.forEach((p, i) => {
        const seen = arrivals[w]!.length === 0 ? known[i]?.get(w) : undefined;
        if (seen && seen.windowUs === lengthUs) p.windows[w] = seen.metrics;
        else misses.push(i);
      });
      if (misses.length === 0) continue;
      if (fromRows) {
        const matrices = input.windows.accessMatrices!(w, misses.map((i) => heldAt(i, w)), input.machine.nodeCount);
        misses.forEach(
          (i, j) =>
            (pending[i]!.windows[w] = simulateMatrix(
              input.machine,
              matrices[j]!.loads,
              matrices[j]!.stores,
              lengthUs,
              timing.loop ?? timing.stallShare ?? MEMORY_STALL_SHARE,
              timing.accessScale ?? 1,
            )),
        );
      } else {
        for (const i of misses) pending[i]!.windows[w] = options.simulate(input.machine, built!, heldAt(i, w), lengthUs, input.pageBytes);
      }
    }
  }
  for (const p of pending) {
    out[p.k] = {
      basis: p.held.basis,
      placement: p.held.placement,
      windows: p.windows,
      convergedAtWindow: p.converged,
      continuationRounds: p.held.rounds,
      continuationMovedPages: p.held.movedPages,
    };
  }
  return out as SteadyState[];
}
