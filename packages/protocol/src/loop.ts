/**
 * The live loop's record (docs/live-api.md, "The live loop"): what the app keeps with the server
 * (`PUT /api/recordings/:id/loop`) so that a reload or a new tab brings back the loop panel and
 * its before/after table. The server stores it as given; the app parses what it reads back with
 * this schema, so a damaged or hostile record is refused by field instead of reaching the panel.
 * A step in progress is saved as not started (a reload cannot resume a request in flight), except
 * the second recording, which the server keeps running and the app follows again.
 */
import { z } from 'zod';
import { count, errorBody, int, pid, recordingId } from './common';
import { applyReport } from './apply';
import { nodeCount } from './live';

/** A step of the loop: not started, done with its value, or failed. */
function step<T extends z.ZodType>(value: T) {
  return z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('idle') }),
    z.strictObject({ kind: z.literal('done'), value }),
    z.strictObject({ kind: z.literal('error'), error: errorBody }),
  ]);
}

const finite = z.number().refine(Number.isFinite, 'a finite number');

/** The engine's prediction for one recording as it ran. */
export const loopPrediction = z.strictObject({
  policy: z.string().max(64),
  localAccessRatio: finite,
  predictedUs: finite,
  memoryLatencyNs: finite,
  estimate: z.boolean(),
  work: z.strictObject({ unit: z.string().max(64), amount: finite }).nullable(),
});

export const loopMeasure = z.strictObject({
  recording: recordingId,
  pid,
  durationUs: finite,
  pagesByNode: z.array(nodeCount).max(1024),
  pages: count,
  prediction: step(loopPrediction),
});

/** A plan as the loop holds it: any JSON object with the plan format and a target pid (serve checks the rest before applying). */
const loopPlanFile = z
  .record(z.string(), z.unknown())
  .refine((p) => p.format === 'numascope-plan', 'format: "numascope-plan"')
  .refine((p) => {
    const t = p.target as { pid?: unknown } | undefined;
    return typeof t === 'object' && t !== null && Number.isInteger(t.pid) && (t.pid as number) > 0;
  }, 'target.pid: a positive integer');

export const loopPlan = z.strictObject({
  plan: loopPlanFile,
  kind: z.enum(['recommendation', 'check']),
  title: z.string().max(1000),
  why: z.string().max(4000).nullable(),
  speedup: finite.nullable(),
  ranges: count,
  pages: count,
  threads: count,
  dropped: z.array(z.string().max(64)).max(64),
});

export const loopAgain = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('idle') }),
  z.strictObject({ kind: z.literal('recording'), recording: recordingId.nullable() }),
  z.strictObject({ kind: z.literal('done') }),
  z.strictObject({ kind: z.literal('error'), error: errorBody }),
]);

export const LOOP_RECORD_VERSION = 1;

export const loopRecord = z.strictObject({
  format: z.literal('numascope-loop'),
  version: z.literal(LOOP_RECORD_VERSION),
  savedAt: z.string().max(64),
  nodeIds: z.array(int.min(0)).max(1024),
  before: loopMeasure,
  recommend: step(loopPlan),
  dry: step(applyReport),
  apply: step(applyReport),
  again: loopAgain,
  after: loopMeasure.nullable(),
  afterCheck: step(applyReport),
});
export type LoopRecord = z.infer<typeof loopRecord>;

/** `GET /api/loop`: the loop saved last on this server. */
export const latestLoop = z.strictObject({ recording: recordingId, loop: z.unknown() });
