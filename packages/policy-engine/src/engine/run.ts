/**
 * Drives policy replays (PolicyRun generators) over a replay input's windows. replayAll steps
 * every policy through one pass: each window is built (or taken from the cache) once and handed
 * to every policy in turn, then dropped, so N policies cost one aggregation pass and memory holds
 * one window at a time (docs/engine.md, "Memory").
 */
import type { AccessWindow, Policy, PolicyReplay, PolicyRun, ReplayInput, ReplayOptions } from './contract.js';
import { EngineError } from './errors.js';
import { steadyStates } from './steady.js';

/** Progress of a replay: windows done out of the total. */
export type ReplayProgress = (done: number, total: number) => void;

/**
 * Runs every policy over the input's windows in one pass, then adds each replay's steady state
 * (engine/steady.ts: one more simulation pass with every converged placement held); results in
 * the order of `policies`.
 */
export function replayAll(input: ReplayInput, policies: readonly Policy[], options: ReplayOptions, onProgress?: ReplayProgress): PolicyReplay[] {
  const replays = replayPass(input, policies, options, onProgress);
  if (!options.steadyState) return replays;
  const steady = steadyStates(input, policies, replays, options, (i, p, o) => replayPass(i, [p], o)[0]!);
  replays.forEach((r, k) => {
    r.steadyState = steady[k]!;
  });
  return replays;
}

/** The replay pass alone: every policy over the input's windows, each window built once. */
export function replayPass(input: ReplayInput, policies: readonly Policy[], options: ReplayOptions, onProgress?: ReplayProgress): PolicyReplay[] {
  const runs: PolicyRun[] = policies.map((p) => p.run(input, options));
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
      window ??= input.windows.get(w);
      state[k] = runs[k]!.next(window);
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
