/**
 * Drives policy replays (PolicyRun generators) over a replay input's windows. replayAll steps
 * every policy through one pass: each window is built (or taken from the cache) once and handed
 * to every policy in turn, then dropped, so N policies cost one aggregation pass and memory holds
 * one window at a time (docs/engine.md, "Memory").
 *
 * Simulations are shared: within a window, a placement already simulated (by another policy, or
 * by the same one: placements equal in content, compared element by element) is not simulated
 * again; the simulator is a pure function of (machine, window, placement, window length, page
 * size), so the result is the same object. For the steady-state pass (engine/steady.ts) each
 * policy's last placement is remembered with the windows since which it has not changed, so that
 * the held placement of a policy that settled is not simulated again over those windows.
 */
import type { AccessWindow, MachineModel, Placement, Policy, PolicyReplay, PolicyRun, ReplayInput, ReplayOptions, SimulateWindow, WindowMetrics } from '../model/contract.js';
import { EngineError } from '../model/errors.js';
import { steadyStates } from './steady.js';
import { samePlacement, type FinalRun } from './final-run.js';

/** Progress of a replay: windows done out of the total. */
export type ReplayProgress = (done: number, total: number) => void;

/**
 * A policy's last simulated placement in the replay pass and its metrics in each window since it
 * last changed (the windows of its final run, consecutive up to the last window).
 */
const snapshot = (p: Placement): Placement => ({ threadNode: p.threadNode.slice(), pageNode: p.pageNode.slice(), replicated: p.replicated.slice(), ...(p.replicas ? { replicas: p.replicas } : {}) });

/**
 * Runs every policy over the input's windows in one pass, then, with options.steadyState, adds
 * each replay's steady state (engine/steady.ts); results in the order of `policies`.
 */
export function replayAll(input: ReplayInput, policies: readonly Policy[], options: ReplayOptions, onProgress?: ReplayProgress): PolicyReplay[] {
  const finalRuns: Array<FinalRun | null> | undefined = options.steadyState ? policies.map(() => null) : undefined;
  const replays = replayPass(input, policies, options, onProgress, finalRuns);
  if (!options.steadyState) return replays;
  const steady = steadyStates(input, policies, replays, options, (i, p, o) => replayPass(i, [p], o)[0]!, finalRuns!);
  replays.forEach((r, k) => {
    r.steadyState = steady[k]!;
  });
  return replays;
}

/**
 * The replay pass alone: every policy over the input's windows, each window built once and each
 * distinct placement of a window simulated once. `finalRuns[k]`, when given, receives policy k's
 * final run (FinalRun).
 */
export function replayPass(input: ReplayInput, policies: readonly Policy[], options: ReplayOptions, onProgress?: ReplayProgress, finalRuns?: Array<FinalRun | null>): PolicyReplay[] {
  let currentWindow: AccessWindow | null = null;
  let current: Array<{ snapshot: Placement; machine: MachineModel; windowUs: number; pageBytes: number; metrics: WindowMetrics }> = [];
  // The window this pass handed out for index passIndex, and the policy being stepped.
  let passWindow: AccessWindow | null = null;
  let passIndex = -1;
  let stepping = -1;
  const simulate: SimulateWindow = (machine, window, placement, windowUs, pageBytes) => {
    if (window !== currentWindow) {
      currentWindow = window;
      current = [];
    }
    let hit = current.find((e) => e.machine === machine && e.windowUs === windowUs && e.pageBytes === pageBytes && samePlacement(e.snapshot, placement));
    if (!hit) {
      // A snapshot (policies change their placement arrays in place from window to window): the
      // policy's previous one when the placement has not changed, so that later checks are by identity.
      const run = finalRuns && stepping >= 0 ? finalRuns[stepping] : null;
      const snap = run && samePlacement(run.placement, placement) ? run.placement : snapshot(placement);
      hit = { snapshot: snap, machine, windowUs, pageBytes, metrics: options.simulate(machine, window, placement, windowUs, pageBytes) };
      current.push(hit);
    }
    if (finalRuns && window === passWindow && stepping >= 0) {
      const run = finalRuns[stepping];
      if (run && run.machine === machine && samePlacement(run.placement, hit.snapshot)) run.byWindow.set(passIndex, { windowUs, metrics: hit.metrics });
      else finalRuns[stepping] = { placement: hit.snapshot, machine, byWindow: new Map([[passIndex, { windowUs, metrics: hit.metrics }]]) };
    }
    return hit.metrics;
  };
  const shared: ReplayOptions = { ...options, simulate };
  const runs: PolicyRun[] = policies.map((p) => p.run(input, shared));
  const state = runs.map((r) => r.next());
  const total = input.windows.length;
  for (let w = 0; w < total; w++) {
    let window: AccessWindow | null = null;
    for (let k = 0; k < runs.length; k++) {
      const s = state[k]!;
      if (s.done) continue;
      if (s.value !== w) {
        throw new EngineError('internal', `policy ${policies[k]!.id} asked for window ${s.value} while the replay is at window ${w}: policies step through windows in order`);
      }
      if (!window) {
        window = input.windows.get(w);
        passWindow = window;
        passIndex = w;
      }
      stepping = k;
      state[k] = runs[k]!.next(window);
      stepping = -1;
    }
    onProgress?.(w + 1, total);
  }
  return state.map((s, k) => {
    if (!s.done) throw new EngineError('internal', `policy ${policies[k]!.id} asked for window ${s.value} past the last window (${total})`);
    return s.value;
  });
}

/** A Policy from its id, description and run; replay() drives run() alone. */
export function definePolicy(spec: { id: string; description: string; run: (input: ReplayInput, options: ReplayOptions) => PolicyRun }): Policy {
  const policy: Policy = {
    id: spec.id,
    description: spec.description,
    run: spec.run,
    replay: (input, options) => replayAll(input, [policy], options)[0]!,
  };
  return policy;
}
