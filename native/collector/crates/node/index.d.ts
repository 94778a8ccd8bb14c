// Types of the numascope Node-API binding (kept by hand in step with src/lib.rs).

/** Options of `record()`: exactly one of `pid` and `command`. */
export interface RecordOptions {
  /** Attach to this running process. */
  pid?: number;
  /** Launch this argv. */
  command?: string[];
  /** Stop after this many milliseconds (default: when the process exits or stopRecordings()). */
  durationMs?: number;
  /** Trace file to write. */
  output: string;
  /** /proc polling interval, ms (default 100). */
  intervalMs?: number;
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
  warnings: string[];
}

/** The capability probe of this machine (same object as `numascope probe --json`). */
export function probe(): {
  privileges: Record<string, unknown>;
  pmus: string[];
  nodes: number;
  sources: { id: string; available: boolean; implemented: boolean; reason: string }[];
  capabilities: { metric: string; status: string; reason: string }[];
};
/** The manifest `machine` object of this machine. */
export function topology(): Record<string, unknown>;
/** Records a trace on a worker thread; resolves when the trace is written. */
export function record(options: RecordOptions): Promise<RecordResult>;
/** Asks every running record() to stop; returns how many were running. */
export function stopRecordings(): number;
