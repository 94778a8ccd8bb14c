/**
 * The live messages of a running recording (docs/live-api.md, "GET /api/recordings/:id/live"):
 * a `window` every 250 ms, a last one with `final: true`, then `end`. The collector builds the
 * windows (core `live.rs`); the napi binding hands them to `onWindow` as they are
 * (`collectorWindow`), `numascope serve` and the desktop app add `type` and `recording`.
 */
import { z } from 'zod';
import { count, errorBody, int, nodeOrUnknown, pid, recordingId } from './common';
import { recordSummary } from './record';

/** One entry of a per-node list (zero counts are left out; node -1: not known yet). */
export const nodeCount = z.strictObject({ node: nodeOrUnknown, count });
export type NodeCount = z.infer<typeof nodeCount>;

/**
 * Sampled memory accesses to the pages of one node (the node the memory is on), from a cpu of
 * that node (`local`) or of another (`remote`).
 */
export const nodeAccesses = z.strictObject({ node: int.min(0), local: count, remote: count });
export type NodeAccesses = z.infer<typeof nodeAccesses>;

/**
 * What a window's `accesses` are counted from: PMU memory samples (AMD IBS, Intel PEBS: local or
 * remote by the sample's data source, else by the cpu's node against the page's; cache hits do not
 * count), or NUMA hinting faults (automatic NUMA balancing on). One per recording: PMU samples
 * when the recording has a PMU sampler, hinting faults otherwise.
 */
export const accessSource = z.enum(['pmu-samples', 'hinting-faults']);
export type AccessSource = z.infer<typeof accessSource>;

const bytesPerS = z.number().nonnegative();

/**
 * One node's memory-controller traffic in a window, bytes per second (whole machine, from the
 * uncore counters). `readBytesPerS` / `writeBytesPerS` null where the counters count both together
 * (AMD Zen 2 / Zen 3 data fabric); `bytesPerS` their sum, or that combined count.
 */
export const nodeBandwidth = z.strictObject({
  node: int.min(0),
  readBytesPerS: bytesPerS.nullable(),
  writeBytesPerS: bytesPerS.nullable(),
  bytesPerS,
});
export type NodeBandwidth = z.infer<typeof nodeBandwidth>;

/** What a window's `bandwidth` is read from: the uncore memory-controller counters. */
export const bandwidthSource = z.enum(['uncore']);
export type BandwidthSource = z.infer<typeof bandwidthSource>;

export const liveThread = z.strictObject({
  tid: int,
  name: z.string(),
  /** The cpu it last ran on (/proc task stat field 39), or of its last sample when gone; -1 unknown. */
  cpu: int.min(-1),
  /** That cpu's node (-1 unknown). */
  node: nodeOrUnknown,
  /** Faults sampled from this thread in this window. */
  faults: count,
  /** Still listed in /proc/PID/task at the end of the window. */
  alive: z.boolean(),
});
export type LiveThread = z.infer<typeof liveThread>;

/** Cumulative counts since the start. */
export const liveTotals = z.strictObject({
  faults: count,
  faultsByNode: z.array(nodeCount),
  /**
   * 4 KiB pages by their current node: every page the recorder's placement scan found resident at
   * its last complete scan (about once a second, and at the stop), plus the pages fault samples saw.
   */
  pages: count,
  pagesByNode: z.array(nodeCount),
  /** Sampled accesses per node of the memory (empty without an access source). */
  accesses: z.array(nodeAccesses),
  /** Pages now on another node than move_pages first answered (moved by balancing, an apply, a migration). */
  pagesMoved: count,
});
export type LiveTotals = z.infer<typeof liveTotals>;

const windowFields = {
  /** 0, 1, 2, … per recording; windows are contiguous (startUs = the previous endUs). */
  seq: count,
  /** µs since the capture start. */
  startUs: count,
  endUs: count,
  /** = endUs. */
  elapsedUs: count,
  /** The last window, sent after the capture stopped. */
  final: z.boolean(),
  /** Faults sampled in this window, and by the node of their page. */
  faults: count,
  faultsByNode: z.array(nodeCount),
  /** Accesses sampled in this window, per node of the memory. */
  accesses: z.array(nodeAccesses),
  /** What `accesses` are counted from; null when nothing this recording reads shows accesses. */
  accessSource: accessSource.nullable(),
  /** Memory-controller bytes per second per node in this window (empty without a source, or without a new reading). */
  bandwidth: z.array(nodeBandwidth),
  /** What `bandwidth` is read from; null when the recording counts no memory-controller bytes. */
  bandwidthSource: bandwidthSource.nullable(),
  totals: liveTotals,
  /** Threads alive now, and threads that faulted in this window and are gone. */
  threads: z.array(liveThread),
  /** Distinct threads seen so far (samples or /proc). */
  threadsSeen: count,
  /** Lost perf records so far. */
  lostSamples: count,
};

/** A window as the collector serialises it (core `LiveWindow`): the binding's `onWindow` argument. */
export const collectorWindow = z.strictObject({ ...windowFields, pid: int });
export type CollectorWindow = z.infer<typeof collectorWindow>;

/** A `window` message: the collector's window with its recording; `pid` null when not known. */
export const liveWindow = z.strictObject({
  type: z.literal('window'),
  recording: recordingId,
  ...windowFields,
  pid: pid.nullable(),
});
export type LiveWindow = z.infer<typeof liveWindow>;

export const recordingStatus = z.enum(['running', 'finished', 'failed']);
export type RecordingStatus = z.infer<typeof recordingStatus>;

/** The last message of a recording's stream: how it ended, with its summary or its error. */
export const liveEnd = z.strictObject({
  type: z.literal('end'),
  recording: recordingId,
  status: recordingStatus,
  summary: recordSummary.nullable(),
  error: errorBody.nullable(),
});
export type LiveEnd = z.infer<typeof liveEnd>;

export const liveMessage = z.discriminatedUnion('type', [liveWindow, liveEnd]);
export type LiveMessage = z.infer<typeof liveMessage>;

/** A collector window as the `window` message of recording `id` (a pid ≤ 0 means not known). */
export function toLiveWindow(id: string, w: CollectorWindow): LiveWindow {
  return {
    type: 'window',
    recording: id,
    seq: w.seq,
    startUs: w.startUs,
    endUs: w.endUs,
    elapsedUs: w.elapsedUs,
    final: w.final,
    pid: w.pid > 0 ? w.pid : null,
    faults: w.faults,
    faultsByNode: w.faultsByNode.map((c) => ({ node: c.node, count: c.count })),
    accesses: w.accesses.map((a) => ({ node: a.node, local: a.local, remote: a.remote })),
    accessSource: w.accessSource,
    bandwidth: w.bandwidth.map((b) => ({ node: b.node, readBytesPerS: b.readBytesPerS, writeBytesPerS: b.writeBytesPerS, bytesPerS: b.bytesPerS })),
    bandwidthSource: w.bandwidthSource,
    totals: {
      faults: w.totals.faults,
      faultsByNode: w.totals.faultsByNode.map((c) => ({ node: c.node, count: c.count })),
      pages: w.totals.pages,
      pagesByNode: w.totals.pagesByNode.map((c) => ({ node: c.node, count: c.count })),
      accesses: w.totals.accesses.map((a) => ({ node: a.node, local: a.local, remote: a.remote })),
      pagesMoved: w.totals.pagesMoved,
    },
    threads: w.threads.map((t) => ({ tid: t.tid, name: t.name, cpu: t.cpu, node: t.node, faults: t.faults, alive: t.alive })),
    threadsSeen: w.threadsSeen,
    lostSamples: w.lostSamples,
  };
}

/** A live message that does not follow the protocol (not JSON, unknown type, a field missing or of the wrong type, an unknown field). */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** `path.to[2].field: message` of zod's first issue. */
export function describeIssue(prefix: string, issue: z.core.$ZodIssue): string {
  const where = [prefix, ...issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))]
    .filter((s) => s !== '')
    .join('.')
    .replace(/\.\[/g, '[');
  const what = issue.code === 'unrecognized_keys' ? `unexpected field(s) ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` : issue.message;
  return where ? `${where}: ${what}` : what;
}

/** Checks one live message (already parsed from JSON). Throws ProtocolError naming the field. */
export function parseLiveMessageValue(v: unknown): LiveMessage {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ProtocolError('a live message is not an object');
  const type = (v as { type?: unknown }).type;
  if (type !== 'window' && type !== 'end') throw new ProtocolError(`unknown live message type ${JSON.stringify(type)}`);
  const r = (type === 'window' ? liveWindow : liveEnd).safeParse(v);
  if (!r.success) throw new ProtocolError(describeIssue(type, r.error.issues[0]!));
  return r.data;
}

/** Parses one text message of the live WebSocket. Throws ProtocolError for anything else. */
export function parseLiveMessage(text: string): LiveMessage {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ProtocolError('a live message is not JSON');
  }
  return parseLiveMessageValue(v);
}
