/**
 * Column schema of every table in trace format v4, as data: the reader checks files against it,
 * the writer builds tables from it. Keep in step with docs/trace-format.md.
 */
import type { TableName } from './types.js';

/** Column types used by the format, named the way error messages print them. */
export type ColumnType =
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'uint16'
  | 'uint32'
  | 'uint64'
  | 'float64'
  | 'utf8'
  | 'dictionary<int8, utf8>'
  | 'dictionary<int16, utf8>';

export interface ColumnSpec {
  name: string;
  type: ColumnType;
  nullable?: boolean;
  /** For dictionary columns: the values a writer produces. */
  values?: readonly string[];
  /**
   * What the column's values point at: a row of another table, a node id of manifest.machine, or
   * a cpu id of one of its nodes. In a signed column -1 means unknown. The reader refuses any other
   * value (TraceError `index-out-of-range`).
   */
  ref?: ColumnRef;
  /**
   * A column added within the version (docs/trace-format.md, "Optional columns"): a file written
   * before it existed lacks it, and the reader accepts that (the table's `getChild` is then null:
   * every value unknown). When present it is checked like any other. The writer writes it only
   * when the caller gives it.
   */
  optional?: boolean;
  /**
   * A time column: int64 µs since the capture started in the file (v4; uint32 in versions 1 to 3),
   * 0 to MAX_TIME_US. The reader gives it to the code as plain numbers: a Uint32 column when every
   * value is below 2^32 (71 minutes: the memory and speed of v3), else Float64 (exact to 2^53).
   * The writer takes a Uint32Array, Float64Array or BigInt64Array.
   */
  time?: boolean;
}

export type ColumnRef = 'threads' | 'pages' | 'regions' | 'frames' | 'modules' | 'node' | 'cpu';

export const OPS = ['load', 'store', 'fault', 'unknown'] as const;
export const SAMPLE_EVENTS = ['page-fault', 'ibs-op', 'pebs-load', 'pebs-store', 'synthetic', 'access-fault'] as const;
export const DATA_SOURCES = [
  'l1',
  'lfb',
  'l2',
  'l3',
  'local-dram',
  'remote-dram',
  'remote-cache',
  'pmem',
  'cxl',
  'io',
  'uncached',
  'unknown',
] as const;
export const REGION_KINDS = ['heap', 'stack', 'anon', 'file', 'shm', 'vdso', 'other'] as const;
export const COUNTER_SCOPES = ['system', 'node', 'thread', 'link', 'damon-region', 'socket'] as const;
export const EVENT_KINDS = [
  'thread-migration',
  'thread-start',
  'thread-exit',
  'page-migration',
  'lost-samples',
  'phase',
  'plan-applied',
  'process-exit',
] as const;

/** `allocations.op`: the interposed call that made the block or mapping. */
export const ALLOC_OPS = [
  'malloc',
  'calloc',
  'realloc',
  'posix_memalign',
  'aligned_alloc',
  'memalign',
  'valloc',
  'pvalloc',
  'reallocarray',
  'mmap',
  'mremap',
  'unknown',
] as const;
/** `allocations.end_op`: what ended it (`none`: not seen). */
export const ALLOC_END_OPS = ['none', 'free', 'realloc', 'reallocarray', 'munmap', 'mremap', 'unknown'] as const;

export type Op = (typeof OPS)[number];
export type DataSource = (typeof DATA_SOURCES)[number];

export const TABLE_SCHEMAS: Record<TableName, readonly ColumnSpec[]> = {
  samples: [
    { name: 'time_us', type: 'int64', time: true },
    { name: 'thread', type: 'uint32', ref: 'threads' },
    { name: 'cpu', type: 'int16', ref: 'cpu' },
    { name: 'page', type: 'int32', ref: 'pages' },
    { name: 'offset', type: 'uint16' },
    { name: 'op', type: 'dictionary<int8, utf8>', values: OPS },
    { name: 'event', type: 'dictionary<int8, utf8>', values: SAMPLE_EVENTS },
    { name: 'data_source', type: 'dictionary<int8, utf8>', values: DATA_SOURCES },
    { name: 'hops', type: 'int8' },
    { name: 'node', type: 'int8', ref: 'node' },
    { name: 'latency_cycles', type: 'uint32' },
    { name: 'weight', type: 'uint32' },
    // v3: the code that made the access, a stack id of `stacks` (checked against its stacks in
    // check.ts, not a row); -1 none. The v2->v3 upgrader adds it as all -1.
    { name: 'stack', type: 'int32' },
    // v3: perf c2c's HITM class of a load: 0 none, 1 local, 2 remote, -1 unknown (checked in
    // check.ts). The v2->v3 upgrader adds it as all -1.
    { name: 'hitm', type: 'int8' },
  ],
  pages: [
    { name: 'address', type: 'uint64' },
    { name: 'region', type: 'int32', ref: 'regions' },
    { name: 'node', type: 'int8', ref: 'node' },
    { name: 'page_size', type: 'uint32' },
    { name: 'first_touch_us', type: 'int64' },
    { name: 'first_touch_thread', type: 'int32', ref: 'threads' },
    { name: 'first_touch_cpu', type: 'int16', ref: 'cpu' },
  ],
  threads: [
    { name: 'tid', type: 'int32' },
    { name: 'pid', type: 'int32' },
    { name: 'name', type: 'utf8' },
    { name: 'first_seen_us', type: 'int64', time: true },
    { name: 'last_seen_us', type: 'int64', time: true },
    { name: 'migrations', type: 'int64' },
  ],
  regions: [
    { name: 'start', type: 'uint64' },
    { name: 'end', type: 'uint64' },
    { name: 'kind', type: 'dictionary<int8, utf8>', values: REGION_KINDS },
    { name: 'path', type: 'utf8', nullable: true },
    { name: 'policy', type: 'utf8' },
    { name: 'alloc_site', type: 'utf8', nullable: true },
    // The /proc/PID/maps permissions (`r--p`, `rw-s`); null unknown. Optional (added within v2).
    { name: 'prot', type: 'utf8', nullable: true, optional: true },
  ],
  thread_placements: [
    { name: 'time_us', type: 'int64', time: true },
    { name: 'thread', type: 'uint32', ref: 'threads' },
    { name: 'cpu', type: 'int16', ref: 'cpu' },
    { name: 'node', type: 'int8', ref: 'node' },
  ],
  region_placements: [
    { name: 'time_us', type: 'int64', time: true },
    { name: 'region', type: 'uint32', ref: 'regions' },
    { name: 'node', type: 'int8', ref: 'node' },
    { name: 'pages', type: 'uint32' },
    { name: 'page_size', type: 'uint32' },
  ],
  counters: [
    { name: 'time_us', type: 'int64', time: true },
    { name: 'counter', type: 'dictionary<int16, utf8>' },
    { name: 'scope', type: 'dictionary<int8, utf8>', values: COUNTER_SCOPES },
    { name: 'scope_id', type: 'int32' },
    { name: 'value', type: 'float64' },
  ],
  events: [
    { name: 'time_us', type: 'int64', time: true },
    { name: 'kind', type: 'dictionary<int8, utf8>', values: EVENT_KINDS },
    { name: 'thread', type: 'int32', ref: 'threads' },
    { name: 'value', type: 'int64' },
    { name: 'detail', type: 'utf8' },
  ],
  allocations: [
    { name: 'time_us', type: 'int64', time: true },
    { name: 'end_us', type: 'int64' },
    { name: 'thread', type: 'int32', ref: 'threads' },
    { name: 'tid', type: 'int32' },
    { name: 'op', type: 'dictionary<int8, utf8>', values: ALLOC_OPS },
    { name: 'end_op', type: 'dictionary<int8, utf8>', values: ALLOC_END_OPS },
    { name: 'address', type: 'uint64' },
    { name: 'size', type: 'uint64' },
    { name: 'sampled', type: 'int8' },
    { name: 'weight_bytes', type: 'float64' },
    // A stack id of `stacks` (checked against its stacks in check.ts, not a row).
    { name: 'stack', type: 'int32' },
    { name: 'site', type: 'int32', ref: 'frames' },
    { name: 'region', type: 'int32', ref: 'regions' },
  ],
  stacks: [
    { name: 'stack', type: 'uint32' },
    { name: 'depth', type: 'uint16' },
    { name: 'frame', type: 'uint32', ref: 'frames' },
  ],
  frames: [
    { name: 'module', type: 'int32', ref: 'modules' },
    { name: 'module_offset', type: 'uint64' },
    { name: 'function', type: 'utf8', nullable: true },
    { name: 'function_offset', type: 'int64' },
    { name: 'file', type: 'utf8', nullable: true },
    { name: 'line', type: 'int32' },
    { name: 'col', type: 'int16' },
    { name: 'inlined', type: 'int8' },
  ],
  modules: [
    { name: 'path', type: 'utf8' },
    { name: 'build_id', type: 'utf8' },
  ],
};
