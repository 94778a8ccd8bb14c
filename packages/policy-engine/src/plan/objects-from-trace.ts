/**
 * The plan builder's allocation input (objects.ts, AllocationObjectInput) from a trace's
 * allocation tables (allocations, stacks, frames, modules; `alloc_*` in format v2): one row
 * per recorded allocation that has a site, its physical frames from the site outwards (inlined
 * frames, which share their physical frame's address, folded into it).
 */
import { describeFrame, objectColumns } from '../query/objects.js';
import type { Trace } from '../trace/types.js';
import { objectLabel, type AllocationFrameInput, type AllocationObjectInput } from './objects.js';

export function allocationObjectInputs(trace: Trace): AllocationObjectInput[] {
  const o = objectColumns(trace);
  if (!o) return [];
  const out: AllocationObjectInput[] = [];
  for (let a = 0; a < o.count; a++) {
    const stack = o.stack[a]!;
    const site = o.site[a]!;
    if (stack < 0 || site < 0 || stack + 1 >= o.stackStart.length) continue;
    const end = o.stackStart[stack + 1]!;
    let k = o.stackStart[stack]!;
    while (k < end && o.stackFrames[k] !== site) k++;
    const frames: AllocationFrameInput[] = [];
    let previous = '';
    for (; k < end; k++) {
      const f = o.stackFrames[k]!;
      const m = o.frames.module[f]!;
      // A frame in no known module cannot be found again in another run: the stack ends there.
      if (m < 0 || o.modules.path[m] == null) break;
      const key = `${m}:${o.frames.moduleOffset[f]}`;
      if (key === previous) continue;
      previous = key;
      frames.push({ module: o.modules.path[m]!, buildId: o.modules.buildId[m] || null, offset: BigInt(o.frames.moduleOffset[f]!) });
    }
    if (frames.length === 0) continue;
    out.push({ site: describeFrame(o, site), frames, start: BigInt(o.address[a]!), end: BigInt(o.address[a]! + o.size[a]!) });
  }
  return out;
}

/** Objects smaller than this get no weights of their own (the plan's object entries' default floor). */
export const MIN_WEIGHTED_OBJECT_BYTES = 64 * 1024;

/** The recording's allocation objects of at least MIN_WEIGHTED_OBJECT_BYTES, labelled by site (ReplayInput.objectRanges). */
export function objectRangesOf(trace: Trace): Array<{ start: bigint; end: bigint; label: string }> {
  return allocationObjectInputs(trace)
    .filter((a) => a.end - a.start >= BigInt(MIN_WEIGHTED_OBJECT_BYTES))
    .map((a) => ({ start: a.start, end: a.end, label: objectLabel(a.site, a.frames) }));
}

/**
 * The buildPlan options that make a plan serve the program's next launch too (`numascope run
 * --plan`): object entries from the recording's allocation sites, and thread pins named by
 * creation order and name (a new run has other tids). Empty for a recording without sites.
 */
export function nextLaunchOptions(trace: Trace): { objects?: AllocationObjectInput[]; threadIdentity?: 'order-and-name' } {
  const objects = allocationObjectInputs(trace);
  return objects.length > 0 ? { objects, threadIdentity: 'order-and-name' } : {};
}
