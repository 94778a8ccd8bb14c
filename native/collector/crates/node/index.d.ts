// Types of the numascope Node-API binding. Written by hand (see README: `napi new` needs the
// network); test/dts.test.js checks that every export is declared here and vice versa.

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

export interface NodeCount {
  node: number;
  count: number;
}

/** One live window (core `live.rs`): aggregates of the samples drained in [startUs, endUs). */
export interface LiveWindow {
  seq: number;
  startUs: number;
  endUs: number;
  elapsedUs: number;
  final: boolean;
  pid: number;
  faults: number;
  faultsByNode: NodeCount[];
  totals: { faults: number; faultsByNode: NodeCount[]; pages: number; pagesByNode: NodeCount[] };
  threads: { tid: number; name: string; cpu: number; node: number; faults: number; alive: boolean }[];
  threadsSeen: number;
  lostSamples: number;
}

/** What `record()` resolves to. */
export interface RecordResult {
  output: string;
  sizeBytes: number;
  durationUs: number;
  stopReason: string;
  pid: number;
  exitCode?: number | null;
  threads: number;
  pages: number;
  samples: number;
  lostSamples: number;
  pageFaults: string;
  /** `not-requested`, `used: …` or `failed: <reason>`. */
  damon: string;
  warnings: string[];
}

export interface Probe {
  privileges: Record<string, unknown>;
  pmus: string[];
  nodes: number;
  sources: { id: string; available: boolean; implemented: boolean; reason: string }[];
  capabilities: { metric: string; status: string; reason: string }[];
}

/** The manifest `machine` object (docs/trace-format.md). */
export type Machine = Record<string, unknown> & { nodes: { id: number; cpus: number[] }[] };

/** Options of `apply()`. */
export interface ApplyOptions {
  /** The process to change; must equal the plan's `target.pid`. */
  pid: number;
  /** List what would be done; change nothing (default false). */
  dryRun?: boolean;
  /** Stop moving pages after this many ms. */
  budgetMs?: number;
}

/** One numeric option's accepted range (inclusive) and default (null: unset unless given). */
export interface RecordLimit {
  min: number;
  max: number;
  default: number | null;
}

/** What recordLimits() returns. */
export interface RecordLimits {
  /** durationMs / 1000 must be > 0 and at most this many seconds (no default: until the process exits). */
  durationMaxS: number;
  intervalMs: RecordLimit;
  /** Default null: adaptive sampling (faultRateHz) unless faultPeriod is given. */
  faultPeriod: RecordLimit;
  faultRateHz: RecordLimit;
  /** `numascope record --mem-rate` (not an option of record()). */
  memRateHz: RecordLimit;
  windowMs: RecordLimit;
  /** Values of faultEvent; the first is the default. */
  faultEvents: string[];
  /** Values of `numascope record --counters`; the first is the default. */
  counterSets: string[];
}

/** The apply report (same object as `numascope apply --json`); `rollback` after a real apply. */
export type ApplyReport = Record<string, unknown> & { status: string; dryRun: boolean; rollback?: unknown };

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
/** Asks every running record() to stop; returns how many were running. */
export function stopRecordings(): number;
/**
 * The ranges and defaults record() (and `numascope record`, `numascope serve`) check options
 * against: the collector's one table. Synchronous.
 */
export function recordLimits(): RecordLimits;
