/**
 * Recording: the limits of a recording's options, the request that starts one (`POST
 * /api/recordings`, the desktop app's `startRecording`), and the summary a finished recording
 * reports (the collector's `RecordSummary`, docs/live-api.md).
 */
import { z } from 'zod';
import { count, int, pid } from './common';

/**
 * The limits of the record options the apps check before asking the collector: the collector's
 * own `RECORD_LIMITS` (crates/core/src/recorder/options.rs, which `RecordRequest::validate`
 * applies in the CLI, `numascope serve` and the binding); test/limits.test.ts compares them with
 * its serde output in fixtures/rust-messages.json (`recordLimits`).
 */
export const RECORD_LIMITS = {
  /** Longest capture, seconds (30 days; trace times are 64-bit µs since format v4). */
  maxDurationS: 2_592_000,
  /** /proc polling interval, ms. */
  intervalMs: { min: 1, max: 60_000 },
  /** Sample one page fault in N. */
  faultPeriod: { min: 1, max: 1_000_000 },
  /** Adaptive page-fault sampling rate, samples/s. */
  faultRateHz: { min: 100, max: 1_000_000 },
  /** User call-stack frames per page-fault sample (0: no code locations); default 32. */
  callStackDepth: { min: 0, max: 127 },
} as const;

/**
 * Limits of a launched command's argv that only the apps check (the collector takes any argv the
 * kernel takes): they keep a hostile request from making the main process copy megabytes.
 */
export const COMMAND_LIMITS = { maxArgs: 256, maxArgChars: 4096 } as const;

export const FAULT_EVENTS = ['auto', 'software', 'tracepoint'] as const;
export type FaultEvent = (typeof FAULT_EVENTS)[number];

/** `numaBalancing`: `leave` /proc/sys/kernel/numa_balancing as it is (default), or switch it `on` for the recording (root). */
export const NUMA_BALANCING = ['leave', 'on'] as const;

/**
 * What starts a recording: `POST /api/recordings`'s body and the desktop app's
 * `startRecording(opts)`. Exactly one of `pid` and `command`; `faultPeriod` and `faultRateHz`
 * not together.
 */
export const startRecordingRequest = z
  .strictObject({
    pid: pid.optional(),
    command: z.array(z.string().min(1).max(COMMAND_LIMITS.maxArgChars)).min(1).max(COMMAND_LIMITS.maxArgs).optional(),
    durationS: z.number().positive().max(RECORD_LIMITS.maxDurationS).optional(),
    intervalMs: int.min(RECORD_LIMITS.intervalMs.min).max(RECORD_LIMITS.intervalMs.max).optional(),
    faultPeriod: int.min(RECORD_LIMITS.faultPeriod.min).max(RECORD_LIMITS.faultPeriod.max).optional(),
    faultRateHz: int.min(RECORD_LIMITS.faultRateHz.min).max(RECORD_LIMITS.faultRateHz.max).optional(),
    faultEvent: z.enum(FAULT_EVENTS).optional(),
    /** Terminate a launched command still running at the stop (default false: it is left running). */
    killOnStop: z.boolean().optional(),
    /** `on`: automatic NUMA balancing on for the recording (root; restored afterwards). */
    numaBalancing: z.enum(NUMA_BALANCING).optional(),
    /**
     * Record allocation sites: preload the allocation-site shim into a launched command (default
     * true; false = `numascope record --no-alloc-sites`). Ignored when attaching (docs/alloc-sites.md).
     */
    allocSites: z.boolean().optional(),
    /** User call-stack frames kept per page-fault sample (default 32; 0: no code locations; `record --call-stack-depth`). */
    callStackDepth: int.min(RECORD_LIMITS.callStackDepth.min).max(RECORD_LIMITS.callStackDepth.max).optional(),
  })
  .superRefine((o, ctx) => {
    if ((o.pid === undefined) === (o.command === undefined))
      ctx.addIssue({ code: 'custom', path: ['pid'], message: 'give exactly one of pid and command' });
    if (o.faultPeriod !== undefined && o.faultRateHz !== undefined)
      ctx.addIssue({ code: 'custom', path: ['faultPeriod'], message: 'give faultPeriod or faultRateHz, not both' });
  });
export type StartRecordingRequest = z.infer<typeof startRecordingRequest>;

const limit = z.strictObject({ min: count, max: count, default: count.nullable() });

/** The collector's record-option table (the binding's `recordLimits()`). */
export const recordLimits = z.strictObject({
  durationMaxS: count,
  intervalMs: limit,
  faultPeriod: limit,
  faultRateHz: limit,
  memRateHz: limit,
  windowMs: limit,
  /** Most resident pages one placement scan records (0: no scan); `numascope record --scan-max-pages`. */
  scanMaxPages: limit,
  /** User call-stack frames per page-fault sample (0: none); `numascope record --call-stack-depth`. */
  callStackDepth: limit,
  faultEvents: z.array(z.string()).min(1),
  counterSets: z.array(z.string()).min(1),
});
export type RecordLimitsTable = z.infer<typeof recordLimits>;

/** What a finished recording reports (core `RecordSummary`, serialised by serde). */
export const recordSummary = z.strictObject({
  /** The trace file written. */
  output: z.string(),
  sizeBytes: count,
  durationUs: count,
  /** `duration`, `process-exit`, `signal` or `error`. */
  stopReason: z.string(),
  pid: int,
  /** The launched command's exit code; null when attached, killed by a signal, or unknown. */
  exitCode: int.nullable(),
  threads: count,
  pages: count,
  samples: count,
  lostSamples: count,
  /** How page faults were recorded (`used`, `used: …`, `unavailable: …`). */
  pageFaults: z.string(),
  /** `not-requested`, `used: …` or `failed: <reason>`. */
  damon: z.string(),
  warnings: z.array(z.string()),
  /**
   * The process was still running when the capture ended and was left running (an attached
   * process; a launched command unless killOnStop): a plan can be applied to it, and it can be
   * recorded again by pid.
   */
  leftRunning: z.boolean(),
});
export type RecordSummary = z.infer<typeof recordSummary>;

/**
 * What the napi binding's `record()` resolves to: the same fields as RecordSummary, but a napi
 * object leaves `exitCode` out instead of writing null. `toRecordSummary` gives the serve shape.
 */
export const bindingRecordResult = recordSummary.extend({ exitCode: int.optional() });
export type BindingRecordResult = z.infer<typeof bindingRecordResult>;

/** The binding's record result in the shape serve reports (exitCode null when absent). */
export function toRecordSummary(r: BindingRecordResult): RecordSummary {
  return { ...r, exitCode: r.exitCode ?? null };
}
