/**
 * Limits the trace reader enforces before it allocates (docs/robustness.md, "Trace reader").
 * Everything the reader allocates is bounded by the bytes of the file itself or by one of these.
 * A caller with less memory (a browser tab) may pass smaller values to readTrace.
 */
export interface TraceLimits {
  /** ZIP entries in the central directory (v2 to v4 write 13). */
  maxEntries: number;
  /** Uncompressed bytes of one entry that is read. */
  maxEntryBytes: number;
  /** Uncompressed bytes of all entries read, together. */
  maxTotalBytes: number;
  /**
   * Largest declared ratio of uncompressed to compressed bytes of a deflated entry. Deflate cannot
   * exceed 1032:1, so a larger declaration is a lie and is refused before anything is inflated.
   */
  maxDeflateRatio: number;
  /** Bytes of manifest.json. */
  maxManifestBytes: number;
  /** Nesting depth of arrays and objects in manifest.json. */
  maxManifestDepth: number;
  /**
   * NUMA nodes in manifest.machine. Node columns are int8, so a trace can name at most 128 node ids
   * in its tables; the largest machines have 64 nodes. The machine model is O(nodes²).
   */
  maxNodes: number;
  /** Rows of one table (row indices are int32 in the format). */
  maxTableRows: number;
  /**
   * Rows of the threads table. The summary makes an object per thread and the app posts it to the
   * UI: 1M threads (a 28 MB file) take 9 s and 1 GB to post. No recorded process comes near this.
   */
  maxThreads: number;
  /** Columns of one table (tables have at most 13). */
  maxColumns: number;
  /** Record batches of one table, dictionary batches included. */
  maxRecordBatches: number;
  /** Bytes of one string value (a thread name, an event's detail line, a path). */
  maxStringBytes: number;
}

export const DEFAULT_TRACE_LIMITS: Readonly<TraceLimits> = Object.freeze({
  maxEntries: 256,
  maxEntryBytes: 2 ** 31 - 1,
  maxTotalBytes: 4 * 2 ** 30,
  maxDeflateRatio: 1032,
  maxManifestBytes: 16 * 2 ** 20,
  maxManifestDepth: 64,
  maxNodes: 128,
  maxTableRows: 2 ** 31 - 1,
  maxThreads: 262144,
  maxColumns: 64,
  maxRecordBatches: 65536,
  maxStringBytes: 2 ** 20,
});

export function traceLimits(overrides: Partial<TraceLimits> | undefined): TraceLimits {
  return { ...DEFAULT_TRACE_LIMITS, ...overrides };
}

/** Largest cpu id a trace may name: cpu columns are int16. */
export const MAX_CPU_ID = 32767;
/** Largest node id a trace may name: Linux's MAX_NUMNODES is at most 1024. */
export const MAX_NODE_ID = 1023;
/** Bounds on `machine.cpuClockGHz`, GHz: a clock outside them is a unit mistake (MHz, kHz) or damage. */
export const MIN_CLOCK_GHZ = 0.1;
export const MAX_CLOCK_GHZ = 10;
/**
 * Largest time a trace holds, µs since the capture started (table times are int64 since v4):
 * 2^53 - 1, the largest integer a JSON or JavaScript number holds exactly (285 years). The Rust
 * writer refuses what exceeds it (crates/core/src/trace/limits.rs, the same figures: trace-limits.test.ts).
 */
export const MAX_TIME_US = Number.MAX_SAFE_INTEGER;
