import { replayInputFor, type ReplayInputOptions } from '../engine/windows.js';
import { recordedMachine } from '../machine/loaders.js';
import { machineModel } from '../machine/model.js';
import type { ReplayInput } from '../model/contract.js';
import type { Trace } from '../trace/types.js';
import { objectRangesOf } from '../plan/objects-from-trace.js';

/**
 * A trace's replay input (engine/windows.ts): the model of the machine it was recorded on is built
 * here, at the top, from the trace's manifest (its embedded bench calibration when there is one,
 * machine/loaders.ts `recordedMachine`), and handed to the builder.
 */
export function buildReplayInput(trace: Trace, options: ReplayInputOptions): ReplayInput {
  const input = replayInputFor(trace, machineModel(recordedMachine(trace.manifest).machine), options);
  // Allocation objects, for the policies that place per object (weighted interleave).
  const objects = objectRangesOf(trace);
  if (objects.length > 0) input.objectRanges = objects;
  return input;
}
