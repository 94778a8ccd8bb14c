// Types of the numascope Node-API binding. Written by hand (see README: `napi new` needs the
// network); test/dts.test.js checks that every export is declared here and vice versa.
//
// What the binding returns (the probe, the machine, live windows, the record result, the apply
// report) is defined once, in the workspace package @numascope/protocol (packages/protocol,
// resolved from the repository's node_modules), whose schemas a test checks against the
// collector's serde output. The options below are the binding's own inputs, checked against the
// Rust-generated index.generated.d.ts by test/dts.test.js.
import type { ApplyReport, BenchOutcome, BenchProgress, BindingRecordResult, CollectorWindow, Machine, Probe, RecordLimitsTable, RunReport } from '@numascope/protocol';

export type { ApplyReport, BenchOutcome, BenchProgress, Machine, Probe, RunReport };

/** Options of `record()`: exactly one of `pid` and `command`. */
export interface RecordOptions {
  /** Attach to this running process. */
  pid?: number;
  /** Launch this argv. */
  command?: string[];
  /** Stop after this many milliseconds (default: when the process exits or it is stopped). */
  durationMs?: number;
  /** Trace file to write. */
  output: string;
  /** /proc polling interval, ms (default 100). */
  intervalMs?: number;
  /** Also monitor region hotness with DAMON (root and a free DAMON sysfs; default false). */
  damon?: boolean;
  /** Sample one page fault in N (1 = every fault, exact first touch). Default: adaptive (faultRateHz). */
  faultPeriod?: number;
  /** Adaptive page-fault sampling: every fault while a thread faults under this rate, about this many samples/s above (default 10000). */
  faultRateHz?: number;
  /**
   * Which event carries the page faults: "auto" (default: the tracepoint exceptions:page_fault_user
   * while automatic NUMA balancing is on, so its hinting faults are recorded as accesses),
   * "software" or "tracepoint" (`numascope record --fault-event`).
   */
  faultEvent?: 'auto' | 'software' | 'tracepoint';
  /**
   * Terminate a launched command still running when the recording stops (SIGTERM, then SIGKILL).
   * Default false: it is left running, in a process group of its own, and reaped when it exits;
   * `RecordResult.leftRunning` says so (`numascope record --kill-on-stop`).
   */
  killOnStop?: boolean;
  /**
   * "on": switch automatic NUMA balancing on for the recording so that its hinting faults give
   * access samples (needs root; the previous value is restored afterwards); "leave" (default).
   */
  numaBalancing?: 'leave' | 'on';
  /**
   * Record allocation sites: preload the allocation-site shim (libnumascope_allocshim.so, found
   * through NUMASCOPE_ALLOC_SHIM or beside numascope.node) into a launched command and store its
   * allocations with their call stacks. Default true; false = `numascope record --no-alloc-sites`.
   * Ignored when attaching.
   */
  allocSites?: boolean;
  /** Aborting it stops the recording early; the Promise still resolves (stopReason "signal"). */
  signal?: AbortSignal;
  /**
   * Receives the collector's live windows (the same as `numascope serve`'s, docs/live-api.md),
   * every `windowMs`, then a last one with `final: true`; all arrive before the Promise settles.
   */
  onWindow?: (window: LiveWindow) => void;
  /** Live window length in ms when `onWindow` is given (default 250; 10 … 60000, see recordLimits()). */
  windowMs?: number;
}

/** One live window (core `live.rs`): aggregates of the samples drained in [startUs, endUs). */
export type LiveWindow = CollectorWindow;

/** What `record()` resolves to: the collector's RecordSummary, `exitCode` left out when unknown. */
export type RecordResult = BindingRecordResult;

/** Options of `apply()`. */
export interface ApplyOptions {
  /** The process to change; must equal the plan's `target.pid`. */
  pid: number;
  /** List what would be done; change nothing (default false). */
  dryRun?: boolean;
  /** Stop moving pages after this many ms. */
  budgetMs?: number;
  /**
   * Also write the plan's `systemWeights` to the kernel's system-wide weighted-interleave weights
   * (global; kept in the rollback record and restored by rollback). Default false.
   */
  setSystemWeights?: boolean;
}

/** Options of `runPlan()` (`numascope run --plan`), all optional. */
export interface RunPlanOptions {
  /** The argv to launch (default: the plan's `target.command`). */
  command?: string[];
  /** Check everything and resolve to what would be placed and pinned; launch nothing. */
  dryRun?: boolean;
  /** Run even if the program's file name differs from the plan's `target.command[0]`. */
  anyProgram?: boolean;
  /** Weighted-interleave entries the kernel cannot do: refuse (default) or plain interleave. */
  weightsFallback?: 'refuse' | 'interleave';
  /**
   * Write the system-wide weighted-interleave weights the plan needs for the run (root; global)
   * and restore the previous ones when the program exits; a dry run only reads them (a warning
   * says what would be written). Default false.
   */
  setSystemWeights?: boolean;
}

/** Options of `bench()` (`numascope bench`), all optional. */
export interface BenchOptions {
  /** Quick mode: fewer repetitions and points, smaller arrays (default false). */
  quick?: boolean;
  /** Stop after this many seconds with what was measured (partial; 0 … 86400). */
  maxSeconds?: number;
  /** Bytes of each STREAM array per cpu node (≥ 4096; default 4 to 8 × the last-level caches). */
  arrayBytes?: number;
  /** Bytes of the pointer-chase buffer (≥ 65536). */
  chaseBytes?: number;
  /** Store a complete run as this machine's calibration in the cache directory (default true). */
  save?: boolean;
  /** Aborting it stops the run after the current repetition; the Promise still resolves, partial. */
  signal?: AbortSignal;
  /** Receives `{ step, steps, what, elapsedS, remainingS }` as each step starts. */
  onProgress?: (progress: BenchProgress) => void;
}

/** What recordLimits() returns: the collector's record-option table, defined in @numascope/protocol. */
export type RecordLimits = RecordLimitsTable;

/** Stops one recording early (see `record(options, token)` in the native layer). */
export declare class StopToken {
  constructor();
  stop(): void;
  readonly stopped: boolean;
}

/** The capability probe of this machine (same object as `numascope probe --json`). */
export function probe(): Promise<Probe>;
/** The manifest `machine` object of this machine. */
export function topology(): Promise<Machine>;
/** Records a trace on a worker thread; resolves when the trace is written. */
export function record(options: RecordOptions): Promise<RecordResult>;
/** Starts a recording; `stop()` ends it early (the trace is still written). */
export function startRecording(options: Omit<RecordOptions, 'signal'>): { result: Promise<RecordResult>; stop(): void };
/** Applies a plan (JSON text) to a running process; resolves to the report. */
export function apply(planJson: string, options: ApplyOptions): Promise<ApplyReport>;
/**
 * Launches a program with the plan (`numascope run --plan`): resolves when it exits, to the
 * report (object entries matched, bytes placed per node, threads pinned), or at once to the
 * planned report with `dryRun`. The program's stdin is /dev/null.
 */
export function runPlan(planJson: string, options?: RunPlanOptions): Promise<RunReport>;
/**
 * Measures this machine (`numascope bench`, docs/bench.md) on a worker thread; resolves to the
 * calibrated machine model and where it was stored (`storedAs`, or `storeNote` saying why not).
 */
export function bench(options?: BenchOptions): Promise<BenchOutcome>;
/** Starts bench(); `stop()` ends it after the current repetition (the result is then partial). */
export function startBench(options?: Omit<BenchOptions, 'signal'>): { result: Promise<BenchOutcome>; stop(): void };
/** Asks every running record() to stop; returns how many were running. */
export function stopRecordings(): number;
/**
 * The ranges and defaults record() (and `numascope record`, `numascope serve`) check options
 * against: the collector's one table. Synchronous.
 */
export function recordLimits(): RecordLimits;
