import { replayInputFor, type ReplayInputOptions } from '../engine/windows.js';
import { recordedMachine } from '../machine/loaders.js';
import { machineModel } from '../machine/model.js';
import type { ReplayInput, ReplayRegions } from '../model/contract.js';
import type { Trace } from '../trace/types.js';
import { objectRangesOf } from '../plan/objects-from-trace.js';
import { dictionaryColumn, numericColumn, stringColumn } from '../trace/columns.js';

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
  // Mappings, for the rules that follow the kernel per VMA (AutoNUMA's scanner).
  if (trace.tables.regions.numRows > 0) input.regions = replayRegionsOf(trace);
  return input;
}

/**
 * The trace's regions as the engine uses them (ReplayInput.regions): kind, path, policy, the
 * optional `prot` column (absent in files written before it: `protRecorded` false), and the
 * kernel page size numa_maps printed for the region (region_placements.page_size, the largest).
 */
export function replayRegionsOf(trace: Trace): ReplayRegions {
  const t = trace.tables.regions;
  const start = numericColumn<BigUint64Array>(t, 'start');
  const end = numericColumn<BigUint64Array>(t, 'end');
  const kind = dictionaryColumn(t, 'kind');
  const path = stringColumn(t, 'path');
  const policy = stringColumn(t, 'policy');
  const protRecorded = t.getChild('prot') !== null;
  const prot = protRecorded ? stringColumn(t, 'prot') : null;
  const kernelPage = new Float64Array(t.numRows);
  const rp = trace.tables.region_placements;
  const rpRegion = numericColumn<Uint32Array>(rp, 'region');
  const rpPageSize = numericColumn<Uint32Array>(rp, 'page_size');
  for (let i = 0; i < rpRegion.length; i++) {
    const r = rpRegion[i]!;
    if (r < kernelPage.length && rpPageSize[i]! > kernelPage[r]!) kernelPage[r] = rpPageSize[i]!;
  }
  const list = Array.from({ length: t.numRows }, (_, i) => ({
    start: start[i]!,
    end: end[i]!,
    kind: kind.values[kind.codes[i]!] ?? 'other',
    path: path[i] ?? null,
    policy: policy[i] ?? 'unknown',
    prot: prot?.[i] ?? null,
    kernelPageBytes: kernelPage[i]!,
  }));
  return { list, pageRegion: numericColumn<Int32Array>(trace.tables.pages, 'region'), protRecorded };
}
