/**
 * Types of the numascope trace format, version 4. docs/trace-format.md is the normative
 * description; this file mirrors it. Only the newest version's types exist here: older files
 * are upgraded (see upgrade.ts) before anything else sees them.
 */
import type { Table } from 'apache-arrow';

/** Units and ids, named so a value's meaning is visible in its type. */
export type Microseconds = number;
export type Nanoseconds = number;
export type Bytes = number;
export type GBps = number;
export type NodeId = number;
export type CpuId = number;
export type IndexIntoThreadTable = number;
export type IndexIntoPageTable = number;
export type IndexIntoRegionTable = number;
export type IndexIntoAllocationTable = number;
/** A stack id of `stacks` (its rows with that `stack`, by depth); shared by samples and allocations. */
export type StackId = number;
export type IndexIntoFrameTable = number;
export type IndexIntoModuleTable = number;

export const TRACE_FORMAT_NAME = 'numascope-trace';
/** The newest trace format version this code reads and writes. */
export const CURRENT_TRACE_VERSION = 4;

export type OriginKind = 'recorded' | 'imported' | 'synthetic' | 'derived';

export interface TraceOrigin {
  kind: OriginKind;
  generator: string;
  seed: number | null;
  model: string | null;
  description: string;
  command: string[];
  from: string | string[] | null;
}

export interface MachineNode {
  id: NodeId;
  cpus: CpuId[];
  memoryBytes: Bytes | null;
  memoryBandwidthGBps: GBps | null;
  /**
   * Optional (an addition within format version 2): the node's memory tier, 0 = fastest, as the
   * kernel's memory_tiering groups nodes (sysfs memory_tier*, ranked by abstract distance) or as a
   * machine description says; absent or null = not known (the model applies rule T1).
   */
  memoryTier?: number | null;
  /** Optional (within version 2): what memory the node holds, e.g. `dram`, `hbm`, `cxl`; display only. */
  memoryKind?: string | null;
  /**
   * Optional (within version 2): the firmware's (ACPI HMAT) figures for this node from its nearest
   * initiators, as sysfs `nodeN/access0/initiators/` shows them (MB/s, ns). Firmware figures, not
   * measured; the recorder also puts the read bandwidth into `memoryBandwidthGBps`.
   */
  hmat?: NodeHmat | null;
}

export interface NodeHmat {
  readBandwidthMBps: number | null;
  writeBandwidthMBps: number | null;
  readLatencyNs: number | null;
  writeLatencyNs: number | null;
  /** The initiator nodes the figures are from (sysfs `access0/initiators/nodeK`). */
  initiators: NodeId[];
}

export interface MachineLink {
  from: NodeId;
  to: NodeId;
  capacityGBps: GBps | null;
}

/** `measured:<how>`, `documented:<source>`, `estimated:<rule>`, `unavailable:<why>`. */
export type Provenance = string;

export interface TraceMachine {
  name: string;
  source: string;
  kernel: string | null;
  cpuModel: string | null;
  /**
   * The recording machine's cpu clock, GHz: what PMU load latencies in cycles
   * (`samples.latency_cycles`) and cycle counters are divided by to give time. Absent or null =
   * unknown; `provenance.cpuClockGHz` says where it came from (an addition within version 2).
   */
  cpuClockGHz?: number | null;
  pageSizeBytes: Bytes;
  nodes: MachineNode[];
  distances: number[][];
  latenciesNs: number[][] | null;
  links: MachineLink[];
  routes: Record<string, number[]> | null;
  provenance: Record<string, Provenance>;
  /** Raw points of a `numascope bench` run when this machine was calibrated (docs/bench.md). */
  calibration?: MachineCalibration;
}

/** A `numascope bench` calibration (docs/bench.md): the fields the engine uses; the rest passes through. */
export interface MachineCalibration {
  tool: string;
  version: string;
  date: string;
  fingerprint: string;
  partial: boolean;
  nodeIds: number[];
  /** Sustained capacity per memory node (machine node order), GB/s by STREAM's byte count; null where not measured. */
  sustainedGBps: Array<number | null>;
  [key: string]: unknown;
}

export type SourceId =
  | 'page-faults'
  | 'procfs'
  | 'sysfs-topology'
  | 'ibs-op'
  | 'pebs-load'
  | 'pebs-store'
  | 'damon'
  | 'core-counters'
  | 'uncore'
  | 'synthetic';

export type SourceStatus = 'used' | 'unavailable' | 'failed' | 'not-requested';

export interface CaptureSource {
  id: SourceId | string;
  status: SourceStatus;
  reason: string | null;
  samplePeriod: number | null;
  intervalMs: number | null;
}

export type MetricId =
  | 'page-placement'
  | 'first-touch'
  | 'thread-placement'
  | 'thread-migrations'
  | 'memory-accesses'
  | 'access-latency'
  | 'data-source'
  | 'numa-counters'
  | 'memory-bandwidth'
  | 'link-bandwidth'
  | 'ipc'
  | 'l3-mpki'
  | 'region-hotness'
  | 'allocation-sites'
  | 'code-locations';

export type CapabilityStatus = 'measured' | 'estimated' | 'synthetic' | 'unavailable';

export interface Capability {
  metric: MetricId | string;
  status: CapabilityStatus;
  reason: string;
}

export type StopReason = 'duration' | 'process-exit' | 'signal' | 'error' | 'generated';

export interface TraceCapture {
  /** CLOCK_MONOTONIC at capture start, decimal string (exceeds 2^53). */
  startMonotonicNs: string;
  startUnixMs: number;
  durationUs: Microseconds;
  stopReason: StopReason | string;
  sources: CaptureSource[];
  capabilities: Capability[];
  lostSamples: number;
  sampleCount: number;
  notes: string[];
  /**
   * The recorder's scan of every resident page (docs/trace-format.md, "capture.pageScan"). Absent
   * in traces recorded before the scan existed, and in imported or synthetic ones: their pages
   * table holds only the pages samples saw.
   */
  pageScan?: PageScan;
}

/** `capture.pageScan`: counts are 4 KiB pages. */
export interface PageScan {
  /** Complete scans. */
  scans: number;
  /** Scans cut short (the process exited mid-scan, a read failed); their results were dropped. */
  incompleteScans: number;
  /** Start of the last complete scan, µs since the capture start; null when none completed. */
  lastScanUs: Microseconds | null;
  /** The last complete scan ran at the stop (the process still lived). */
  lastScanAtStop: boolean;
  /** Pages present with a node at the last complete scan, in all and per node. */
  residentPages: number;
  residentPagesByNode: Array<{ node: NodeId; pages: number }>;
  swappedPages: number;
  /** Present pages move_pages gave no node (the shared zero page, special mappings). */
  unplacedPages: number;
  /** Most present pages one scan records; `limitHit`: a scan stopped there (or at its address-space budget). */
  pageLimit: number;
  limitHit: boolean;
  totalScanMs: number;
  maxScanMs: number;
  /** Why the scan did not run or stopped (permissions), if it did. */
  error: string | null;
}

export interface TraceProcess {
  pid: number;
  startTimeTicks: string | null;
  command: string[];
  attached: boolean;
  exitCode: number | null;
  /**
   * Recorded traces: the process was still running when the capture ended and the recorder left
   * it running (true), or it had exited or was terminated (false). Absent in older, imported and
   * synthetic traces.
   */
  leftRunning?: boolean | null;
}

export interface TableEntry {
  name: TableName;
  entry: string;
  rows: number;
}

export interface TraceManifest {
  format: typeof TRACE_FORMAT_NAME;
  version: number;
  producer: { name: string; version: string };
  createdAt: string;
  /**
   * The host the capture ran on (v4): `uname -n` for a recording, the perf.data HOSTNAME header
   * for an import; null or absent for synthetic traces and files upgraded from version 3.
   */
  host?: string | null;
  /**
   * The capture's id (v4), 32 lower-case hex digits, the same in every copy and export of it:
   * random for a recording, a hash of the source for an import or a synthetic trace; null or
   * absent in files upgraded from version 3 (exports then use a hash of the file).
   */
  traceId?: string | null;
  origin: TraceOrigin;
  machine: TraceMachine;
  capture: TraceCapture;
  process: TraceProcess | null;
  /** Audit log of plans applied during the capture (docs/trace-format.md, "appliedPlans"). */
  appliedPlans: AppliedPlanEntry[];
  tables: TableEntry[];
  /** The recording machine's latest `numascope bench` calibration (a machine with `calibration`), when one was stored. */
  calibration?: TraceMachine;
}

export const TABLE_NAMES = [
  'samples',
  'pages',
  'threads',
  'regions',
  'thread_placements',
  'region_placements',
  'counters',
  'events',
  // New in v2: allocation sites (docs/trace-format.md, "Allocation sites").
  'allocations',
  // Since v3 shared by samples (samples.stack) and allocations; `alloc_stacks`, `alloc_frames`
  // and `alloc_modules` in v2 (docs/trace-format.md, "Code: stacks, frames and modules").
  'stacks',
  'frames',
  'modules',
] as const;
export type TableName = (typeof TABLE_NAMES)[number];

/** Type-only mark of a Trace that readTrace checked; no value of it exists at run time. */
declare const checkedByReader: unique symbol;

/**
 * A trace as the stored file gives it: the newest version, every table present with the
 * format's column types, the manifest valid. Row indices, dictionary codes, node and cpu ids are
 * NOT checked against what they point at (readTraceUnchecked): for format tools and tests only.
 */
export interface UncheckedTrace {
  manifest: TraceManifest;
  tables: Record<TableName, Table>;
}

/**
 * A trace as the rest of the code sees it: what readTrace returns after every check of
 * docs/robustness.md ("Trace reader"). Only readTrace makes one (the mark below cannot be written
 * anywhere else), so the summary, the engine and plans, which take a Trace, never see an unchecked
 * file.
 */
export interface Trace extends UncheckedTrace {
  readonly [checkedByReader]: true;
}

/**
 * One `manifest.appliedPlans` entry: a `numascope apply` run on the recorded process during the
 * capture. `plan` is the plan as given (docs/plan-format.md), `report` apply's JSON report
 * (docs/apply.md). Readers must accept unknown extra keys.
 */
export interface AppliedPlanEntry {
  tool: string;
  appliedAt: string;
  startedUnixMs: number;
  finishedUnixMs: number;
  pid: number;
  startTimeTicks: string;
  status: string;
  plan: unknown;
  report: Record<string, unknown>;
  [key: string]: unknown;
}
