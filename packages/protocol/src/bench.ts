/**
 * `numascope bench` from another process: `numascope serve`'s `/api/bench` (docs/live-api.md,
 * "Measuring the machine") and the napi binding's `bench()`; and the calibrated machine model it
 * writes (docs/bench.md, "Output"), which is also what a calibration file holds.
 */
import { z } from 'zod';
import { count, errorBody } from './common';
import { machine } from './serve';

/** A measured number over repetitions: the median and its spread. */
export const benchStat = z.strictObject({ value: z.number(), min: z.number(), max: z.number(), repetitions: count });
export type BenchStat = z.infer<typeof benchStat>;

/** [cpu node index][memory node index] in machine node order; null where not measured. */
const statMatrix = z.array(z.array(benchStat.nullable()));

export const loadedLatencyPoint = z.strictObject({ loadThreads: count, deliveredGBps: z.number(), latencyNs: z.number() });
export const loadedLatencyCurve = z.strictObject({ memoryNode: count, chaseCpu: count, points: z.array(loadedLatencyPoint) });
export type LoadedLatencyCurve = z.infer<typeof loadedLatencyCurve>;

/** The raw points of a run (core bench/output.rs `Calibration`). */
export const benchCalibration = z.strictObject({
  tool: z.literal('numascope-bench'),
  version: z.string(),
  /** ISO 8601 UTC. */
  date: z.string(),
  fingerprint: z.string(),
  quick: z.boolean(),
  /** Stopped before its last step (stop, Ctrl-C, maxSeconds). */
  partial: z.boolean(),
  stoppedBy: z.string().nullable(),
  stepsDone: count,
  stepsPlanned: count,
  nodeIds: z.array(count),
  arrayBytes: count,
  chaseBytes: count,
  hugePages: z.string(),
  virtualMachine: z.string().nullable(),
  bandwidthGBps: z.strictObject({ copy: statMatrix, triad: statMatrix }),
  latencyNs: statMatrix,
  /** Per pair, the smallest share of sampled STREAM pages move_pages found on the asked node (absent in calibrations stored before it existed). */
  boundShare: z.array(z.array(z.number().min(0).max(1).nullable())).optional(),
  allLocalGBps: z.array(benchStat.nullable()),
  allToOneGBps: z.array(benchStat.nullable()),
  sustainedGBps: z.array(z.number().nullable()),
  loadedLatency: z.array(loadedLatencyCurve),
  notes: z.array(z.string()),
});
export type BenchCalibration = z.infer<typeof benchCalibration>;

/**
 * A calibrated machine model: the manifest's machine with the calibration inside, matrices the
 * size of the node list. A calibration file (`numascope bench -o FILE`, the cache's
 * `machines/<fingerprint>.json`) holds one.
 */
export const benchMachine = machine.extend({ calibration: benchCalibration }).superRefine((m, ctx) => {
  const n = m.nodes.length;
  const ids = m.nodes.map((x) => x.id);
  const c = m.calibration;
  if (c.nodeIds.length !== n || c.nodeIds.some((id, i) => id !== ids[i])) {
    ctx.addIssue({ code: 'custom', path: ['calibration', 'nodeIds'], message: `must list the machine's nodes in order (${ids.join(', ')}), got ${c.nodeIds.join(', ')}` });
  }
  const square = (path: string[], rows: unknown[][]) => {
    if (rows.length !== n || rows.some((r) => r.length !== n)) {
      ctx.addIssue({ code: 'custom', path, message: `must be ${n}×${n} (one row and column per node)` });
    }
  };
  square(['calibration', 'bandwidthGBps', 'copy'], c.bandwidthGBps.copy);
  square(['calibration', 'bandwidthGBps', 'triad'], c.bandwidthGBps.triad);
  square(['calibration', 'latencyNs'], c.latencyNs);
  if (c.boundShare) square(['calibration', 'boundShare'], c.boundShare);
  for (const [key, list] of [['allLocalGBps', c.allLocalGBps], ['allToOneGBps', c.allToOneGBps], ['sustainedGBps', c.sustainedGBps]] as const) {
    if (list.length !== n) ctx.addIssue({ code: 'custom', path: ['calibration', key], message: `must have ${n} entries (one per node), got ${list.length}` });
  }
  for (const [i, curve] of c.loadedLatency.entries()) {
    if (!ids.includes(curve.memoryNode)) ctx.addIssue({ code: 'custom', path: ['calibration', 'loadedLatency', i, 'memoryNode'], message: `${curve.memoryNode} is not a node of the machine` });
  }
});
export type BenchMachine = z.infer<typeof benchMachine>;

/** One progress message: step i of n, what it measures, seconds elapsed, estimated seconds left (null before the first step ended). */
export const benchProgress = z.strictObject({ step: count, steps: count, what: z.string(), elapsedS: z.number(), remainingS: z.number().nullable() });
export type BenchProgress = z.infer<typeof benchProgress>;

/** What a run gives: the model, and where it was stored as this machine's calibration (null: `storeNote` says why). */
export const benchOutcome = z.strictObject({ machine: benchMachine, storedAs: z.string().nullable(), storeNote: z.string().nullable() });
export type BenchOutcome = z.infer<typeof benchOutcome>;

/** POST /api/bench body; the binding's bench() options (besides signal and onProgress). */
export const benchRequest = z.strictObject({
  quick: z.boolean().optional(),
  /** Stop after this many seconds with what was measured (0 … 86400). */
  maxSeconds: z.number().min(0).max(86_400).optional(),
  /** Bytes of each STREAM array per cpu node (≥ 4096; default from the last-level cache). */
  arrayBytes: count.min(4096).optional(),
  /** Bytes of the pointer-chase buffer (≥ 65536). */
  chaseBytes: count.min(65_536).optional(),
  /** Store a complete run as this machine's calibration (default true). */
  save: z.boolean().optional(),
});
export type BenchRequest = z.infer<typeof benchRequest>;

/** A run: POST /api/bench (201), GET /api/bench/:id, POST /api/bench/:id/stop (202). */
export const benchRun = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{16}$/, 'a run id (16 hex digits)'),
  status: z.enum(['running', 'finished', 'failed']),
  quick: z.boolean(),
  startedAtUnixMs: count,
  stopRequested: z.boolean(),
  progress: benchProgress.nullable(),
  /** Once finished (a stopped run too: `machine.calibration.partial`). */
  result: benchOutcome.nullable(),
  error: errorBody.nullable(),
  urls: z.strictObject({ status: z.string(), stop: z.string() }),
});
export type BenchRun = z.infer<typeof benchRun>;

/** GET /api/bench: the runs the server keeps, oldest first. */
export const benchRunList = z.strictObject({ runs: z.array(benchRun) });
