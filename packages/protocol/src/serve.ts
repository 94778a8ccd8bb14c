/**
 * The answers of `numascope serve`'s JSON API (docs/live-api.md) that the napi binding shares:
 * the capability probe, the machine, the process list, recordings, errors.
 */
import { z } from 'zod';
import { count, errorBody, int, pid, recordingId } from './common';
import { liveWindow, recordingStatus } from './live';
import { recordSummary } from './record';

// ---- GET /api/probe, the binding's probe() (= `numascope probe --json`, docs/capabilities.md)

export const privileges = z.strictObject({
  /** /proc/sys/kernel/perf_event_paranoid; null when unreadable. */
  perfEventParanoid: int.nullable(),
  capPerfmon: z.boolean(),
  capSysAdmin: z.boolean(),
  capSysNice: z.boolean(),
  capSysPtrace: z.boolean(),
  euid: count,
});

export const sourceProbe = z.strictObject({
  id: z.string(),
  /** The machine and kernel provide this source. */
  available: z.boolean(),
  /** This version of the collector can record it live. */
  implemented: z.boolean(),
  reason: z.string(),
});

export const capabilityStatus = z.enum(['measured', 'estimated', 'unavailable']);
export const metricProbe = z.strictObject({ metric: z.string(), status: capabilityStatus, reason: z.string() });
export type Capability = z.infer<typeof metricProbe>;

/**
 * One placement feature of the kernel or a running agent (docs/capabilities.md, "Placement
 * features"): `weighted-interleave`, `memory-tiers`, `demotion`, `numa-balancing`,
 * `cpu-less-nodes`, `hmat`, `damon-modules`, `sched-ext`, … (an id the app does not know is shown as
 * it is).
 */
export const placementFeature = z.strictObject({
  id: z.string(),
  /** One word or value: `supported`, `absent`, `on`, `off`, `tiering`, `2tiers`, … */
  state: z.string(),
  /** What was read, feature-specific (null when nothing could be read). */
  value: z.unknown(),
  /** One line: what it means for placement. */
  meaning: z.string(),
});
export type PlacementFeature = z.infer<typeof placementFeature>;

export const probe = z.strictObject({
  privileges,
  /** PMUs in /sys/bus/event_source/devices. */
  pmus: z.array(z.string()),
  nodes: count,
  sources: z.array(sourceProbe),
  capabilities: z.array(metricProbe),
  /** Placement features; absent when the collector found none to report (older collectors). */
  placement: z.array(placementFeature).optional(),
});
export type Probe = z.infer<typeof probe>;

// ---- GET /api/topology, the binding's topology(): the trace manifest's `machine` object
// (docs/trace-format.md is normative for it; this is its shape as the collector writes it).

/** The firmware's (ACPI HMAT) figures of a node from its nearest initiators (sysfs access0); not measured. */
export const nodeHmat = z.strictObject({
  readBandwidthMBps: count.nullable(),
  writeBandwidthMBps: count.nullable(),
  readLatencyNs: count.nullable(),
  writeLatencyNs: count.nullable(),
  initiators: z.array(count),
});

export const machineNode = z.strictObject({
  id: count,
  /** Empty for a memory-only (cpu-less) node. */
  cpus: z.array(count),
  memoryBytes: count.nullable(),
  memoryBandwidthGBps: z.number().nullable(),
  /** Memory tier, 0 = fastest; absent when not known. */
  memoryTier: count.max(255).optional(),
  /** `dram`, `cxl`, `hbm`, …, display only; absent when not known. */
  memoryKind: z.string().max(32).optional(),
  hmat: nodeHmat.optional(),
});

export const machineLink = z.strictObject({ from: count, to: count, capacityGBps: z.number().nullable() });

export const machine = z.strictObject({
  name: z.string(),
  /** `sysfs` for a machine the collector read. */
  source: z.string(),
  kernel: z.string().nullable(),
  cpuModel: z.string().nullable(),
  /** The cpu clock, GHz (what PMU latencies in cycles are divided by); absent when unknown. */
  cpuClockGHz: z.number().min(0.1).max(10).optional(),
  pageSizeBytes: count,
  nodes: z.array(machineNode),
  /** SLIT distances, row per node. */
  distances: z.array(z.array(count)),
  latenciesNs: z.array(z.array(z.number())).nullable(),
  links: z.array(machineLink),
  routes: z.record(z.string(), z.array(count)).nullable(),
  /** Where each number came from: `measured:<how>`, `documented:<source>`, `estimated:<rule>`, `unavailable:<why>`. */
  provenance: z.strictObject({
    distances: z.string(),
    latenciesNs: z.string(),
    links: z.string(),
    memoryBandwidthGBps: z.string(),
    memoryBytes: z.string(),
    memoryTier: z.string().optional(),
    hmat: z.string().optional(),
    /** Where cpuClockGHz came from, or `unavailable:<why>`. */
    cpuClockGHz: z.string().optional(),
  }),
});
export type Machine = z.infer<typeof machine>;

// ---- GET /api/processes (the desktop app reads /proc itself and answers the same entries)

export const processInfo = z.strictObject({
  pid,
  name: z.string(),
  /** argv; empty when unreadable. */
  command: z.array(z.string()),
  threads: count,
  /** null for kernel threads. */
  rssBytes: count.nullable(),
  /** null (serve) or -1 (desktop) when unreadable. */
  uid: int.nullable(),
  /** Same user as the server, or the server runs as root: attaching should work. */
  own: z.boolean(),
});
export type ProcessInfo = z.infer<typeof processInfo>;

export const processList = z.strictObject({ processes: z.array(processInfo) });
export type ProcessList = z.infer<typeof processList>;

// ---- recordings

export const recordingTarget = z.strictObject({ pid: pid.optional(), command: z.array(z.string()).optional() });

/** A recording as both the server and the desktop app report it. */
export const recordingFields = {
  id: recordingId,
  status: recordingStatus,
  target: recordingTarget,
  /** The requested duration, seconds; null: until the process exits or stop. */
  durationS: z.number().positive().nullable(),
  startedAtUnixMs: count,
  stopRequested: z.boolean(),
  /** There once finished. */
  summary: recordSummary.nullable(),
  /** There once failed. */
  error: errorBody.nullable(),
};

/** `POST /api/recordings`, `GET /api/recordings/:id`, `…/stop`: serve's recording, with its last window and URLs. */
export const recording = z.strictObject({
  ...recordingFields,
  /** The last live window sent (null before the first). */
  latest: liveWindow.nullable(),
  urls: z.strictObject({ status: z.string(), stop: z.string(), trace: z.string(), live: z.string() }),
});
export type Recording = z.infer<typeof recording>;

/** `GET /api/recordings`: oldest first. */
export const recordingList = z.strictObject({ recordings: z.array(recording) });
export type RecordingList = z.infer<typeof recordingList>;

/** Every API error: a stable code and a message that names the problem. */
export const apiError = z.strictObject({ error: errorBody });
export type ApiErrorAnswer = z.infer<typeof apiError>;
