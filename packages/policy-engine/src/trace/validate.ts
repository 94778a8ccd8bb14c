/**
 * Structural check of a manifest of the newest version (docs/trace-format.md), then its consistency: node and cpu ids
 * in range and unique, a distance matrix per node pair, and a machine the engine can model (links
 * and routes between nodes it has). Errors name the offending field by its path, e.g.
 * `machine.nodes[2].cpus`. docs/robustness.md lists the limits.
 */
import { z } from 'zod';
import { MachineModelError, machineModel } from '../machine/model.js';
import { TraceError } from './errors.js';
import { DEFAULT_TRACE_LIMITS, MAX_CLOCK_GHZ, MAX_CPU_ID, MAX_TIME_US, MAX_NODE_ID, MIN_CLOCK_GHZ, type TraceLimits } from './limits.js';
import { CURRENT_TRACE_VERSION, TABLE_NAMES, TRACE_FORMAT_NAME, type TraceManifest } from './types.js';

// No code generated from strings: the app runs under Content-Security-Policies without
// 'unsafe-eval' (numascope serve, the desktop app), where zod's compiled fast path (and even its
// probe for it) is refused. Schemas here parse small objects; the interpreted path is fast enough.
z.config({ jitless: true });

const int = z.number().int();
const nonNegInt = int.nonnegative();
const u64String = z.string().regex(/^\d{1,20}$/, 'a decimal integer string');
const nodeId = nonNegInt.max(MAX_NODE_ID);
const finite = z.number();

const machine = z.object({
  name: z.string(),
  source: z.string(),
  kernel: z.string().nullable(),
  cpuModel: z.string().nullable(),
  cpuClockGHz: z
    .number('a cpu clock in GHz (a number) or null')
    .min(MIN_CLOCK_GHZ, `a cpu clock in GHz, at least ${MIN_CLOCK_GHZ}`)
    .max(MAX_CLOCK_GHZ, `a cpu clock in GHz, at most ${MAX_CLOCK_GHZ}`)
    .nullable()
    .optional(),
  pageSizeBytes: nonNegInt,
  nodes: z
    .array(
      z.object({
        id: nodeId,
        cpus: z.array(nonNegInt.max(MAX_CPU_ID)),
        memoryBytes: z.number().nonnegative().nullable(),
        memoryBandwidthGBps: z.number().nonnegative().nullable(),
        memoryTier: nonNegInt.max(255).nullable().optional(),
        memoryKind: z.string().max(32).nullable().optional(),
        hmat: z
          .object({
            readBandwidthMBps: z.number().nonnegative().nullable(),
            writeBandwidthMBps: z.number().nonnegative().nullable(),
            readLatencyNs: z.number().nonnegative().nullable(),
            writeLatencyNs: z.number().nonnegative().nullable(),
            initiators: z.array(nodeId),
          })
          .nullable()
          .optional(),
      }),
    )
    .min(1, 'at least one node'),
  distances: z.array(z.array(finite.nonnegative())),
  latenciesNs: z.array(z.array(finite)).nullable(),
  links: z.array(z.object({ from: nodeId, to: nodeId, capacityGBps: z.number().nonnegative().nullable() })),
  routes: z.record(z.string(), z.array(nonNegInt)).nullable(),
  provenance: z.record(z.string(), z.string()),
});

const capture = z.object({
  startMonotonicNs: u64String,
  startUnixMs: z.number(),
  durationUs: z.number().nonnegative().max(MAX_TIME_US),
  stopReason: z.string(),
  sources: z.array(
    z.object({
      id: z.string(),
      status: z.enum(['used', 'unavailable', 'failed', 'not-requested']),
      reason: z.string().nullable(),
      samplePeriod: z.number().nullable(),
      intervalMs: z.number().nullable(),
    }),
  ),
  capabilities: z.array(
    z.object({
      metric: z.string(),
      status: z.enum(['measured', 'estimated', 'synthetic', 'unavailable']),
      reason: z.string(),
    }),
  ),
  lostSamples: nonNegInt,
  sampleCount: nonNegInt,
  notes: z.array(z.string()),
  pageScan: z
    .object({
      scans: nonNegInt,
      incompleteScans: nonNegInt,
      lastScanUs: nonNegInt.max(MAX_TIME_US).nullable(),
      lastScanAtStop: z.boolean(),
      residentPages: nonNegInt,
      residentPagesByNode: z.array(z.object({ node: int.min(-1).max(MAX_NODE_ID), pages: nonNegInt })).max(MAX_NODE_ID + 2),
      swappedPages: nonNegInt,
      unplacedPages: nonNegInt,
      pageLimit: nonNegInt,
      limitHit: z.boolean(),
      totalScanMs: z.number().nonnegative(),
      maxScanMs: z.number().nonnegative(),
      error: z.string().nullable(),
    })
    .optional(),
});

export const manifestSchema = z.object({
  format: z.literal(TRACE_FORMAT_NAME),
  version: int,
  producer: z.object({ name: z.string(), version: z.string() }),
  createdAt: z.string(),
  host: z.string().max(4096).nullable().optional(),
  traceId: z.string().regex(/^[0-9a-f]{32}$/, 'a trace id is 32 lower-case hex digits').nullable().optional(),
  origin: z.object({
    kind: z.enum(['recorded', 'imported', 'synthetic', 'derived']),
    generator: z.string(),
    seed: int.nullable(),
    model: z.string().nullable(),
    description: z.string(),
    command: z.array(z.string()),
    from: z.union([z.string(), z.array(z.string())]).nullable(),
  }),
  machine,
  capture,
  process: z
    .object({
      pid: int,
      startTimeTicks: u64String.nullable(),
      command: z.array(z.string()),
      attached: z.boolean(),
      exitCode: int.nullable(),
      leftRunning: z.boolean().nullable().optional(),
    })
    .nullable(),
  // Entries (AppliedPlanEntry) are checked loosely: an object; extra keys allowed.
  appliedPlans: z.array(z.object({}).passthrough()),
  tables: z.array(z.object({ name: z.enum(TABLE_NAMES), entry: z.string(), rows: nonNegInt })),
  // A calibrated machine (docs/bench.md); checked in full by machineFromJson where it is used.
  calibration: z.object({ nodes: z.array(z.unknown()), calibration: z.object({}).passthrough() }).passthrough().optional(),
});

function pathOf(path: ReadonlyArray<PropertyKey>): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s ? `.${String(p)}` : String(p);
  return s || '(root)';
}

/** The first problem zod found, as a TraceError naming the field. */
function zodError(error: z.ZodError): TraceError {
  const issue = error.issues[0]!;
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more problems)` : '';
  return new TraceError(
    'manifest-invalid',
    `manifest.json field ${pathOf(issue.path)} is invalid: ${issue.message}${more}. The file does not follow trace format v${CURRENT_TRACE_VERSION}.`,
  );
}

function invalid(field: string, what: string): TraceError {
  return new TraceError('manifest-invalid', `manifest.json field ${field} is invalid: ${what}. The file does not follow trace format v${CURRENT_TRACE_VERSION}.`);
}

// ---- sizes and element types of the long lists, before zod --------------------------------------
//
// zod collects every problem it finds, about 1 KB each: a 4 MB manifest whose notes are 2 million
// numbers takes 14 s and 1.9 GB to reject, and a list of 2 million wrong cpus overflows its stack.
// So each list zod walks is bounded first, and its element type checked up to the first bad one.

const MAX_LIST = 65536;
const MAX_CPUS = MAX_CPU_ID + 1;

function tooLong(field: string, n: number, max: number): TraceError {
  return new TraceError('manifest-limits', `manifest.json field ${field} has ${n} items, more than the ${max} this reader accepts. The file is damaged or was made to exhaust the reader.`);
}

const isObject = (x: unknown): boolean => typeof x === 'object' && x !== null && !Array.isArray(x);
const isString = (x: unknown): boolean => typeof x === 'string';
const isNumber = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x);
const isNonNegative = (x: unknown): boolean => isNumber(x) && (x as number) >= 0;
const isIndex = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0;
const TYPE_NAMES = new Map<(x: unknown) => boolean, string>([
  [isObject, 'an object'],
  [isString, 'a string'],
  [isNumber, 'a finite number'],
  [isNonNegative, 'a non-negative number'],
  [isIndex, 'a non-negative integer'],
  [Array.isArray, 'an array'],
]);

/** A list at `field` (when it is one): at most `max` items, each passing `item` (first failure reported). */
function list(v: unknown, field: string, max: number, item: (x: unknown) => boolean): unknown[] {
  if (!Array.isArray(v)) return [];
  if (v.length > max) throw tooLong(field, v.length, max);
  for (let i = 0; i < v.length; i++) {
    if (!item(v[i])) throw invalid(`${field}[${i}]`, `expected ${TYPE_NAMES.get(item)}`);
  }
  return v;
}

/** A record at `field` (when it is one): at most `max` keys, each value passing `item`; its [key, value] pairs. */
function record(v: unknown, field: string, max: number, item: (x: unknown) => boolean): Array<[string, unknown]> {
  if (!isObject(v)) return [];
  const keys = Object.keys(v as object);
  if (keys.length > max) throw tooLong(field, keys.length, max);
  return keys.map((k) => {
    const x = (v as Record<string, unknown>)[k];
    if (!item(x)) throw invalid(`${field}.${k.slice(0, 64)}`, `expected ${TYPE_NAMES.get(item)}`);
    return [k, x];
  });
}

function checkListSizes(m: unknown, maxNodes: number): void {
  if (!isObject(m)) return;
  const o = m as Record<string, Record<string, unknown> | undefined>;
  const origin = isObject(o.origin) ? o.origin! : {};
  const capture = isObject(o.capture) ? o.capture! : {};
  const process = isObject(o.process) ? o.process! : {};
  const machine = isObject(o.machine) ? o.machine! : {};
  list(origin.command, 'origin.command', MAX_LIST, isString);
  list(origin.from, 'origin.from', MAX_LIST, isString);
  list(process.command, 'process.command', MAX_LIST, isString);
  list(capture.notes, 'capture.notes', MAX_LIST, isString);
  list(capture.sources, 'capture.sources', 1024, isObject);
  list(capture.capabilities, 'capture.capabilities', 1024, isObject);
  const pageScan = capture.pageScan as Record<string, unknown> | undefined;
  if (isObject(pageScan)) list(pageScan!.residentPagesByNode, 'capture.pageScan.residentPagesByNode', MAX_NODE_ID + 2, isObject);
  list(o.appliedPlans, 'appliedPlans', MAX_LIST, isObject);
  list(o.tables, 'tables', 1024, isObject);
  let cpus = 0;
  list(machine.nodes, 'machine.nodes', maxNodes, isObject).forEach((node, i) => {
    cpus += list((node as Record<string, unknown>).cpus, `machine.nodes[${i}].cpus`, MAX_CPUS, isIndex).length;
    if (cpus > MAX_CPUS) throw tooLong('machine.nodes[].cpus (all nodes)', cpus, MAX_CPUS);
  });
  list(machine.distances, 'machine.distances', maxNodes, Array.isArray).forEach((row, i) => list(row, `machine.distances[${i}]`, maxNodes, isNonNegative));
  list(machine.latenciesNs, 'machine.latenciesNs', maxNodes, Array.isArray).forEach((row, i) => list(row, `machine.latenciesNs[${i}]`, maxNodes, isNumber));
  list(machine.links, 'machine.links', maxNodes * maxNodes, isObject);
  for (const [key, route] of record(machine.routes, 'machine.routes', maxNodes * maxNodes, Array.isArray)) list(route, `machine.routes.${key.slice(0, 64)}`, maxNodes, isIndex);
  record(machine.provenance, 'machine.provenance', 1024, isString);
}

export function validateManifest(m: unknown, limits: Pick<TraceLimits, 'maxNodes'> = DEFAULT_TRACE_LIMITS): TraceManifest {
  checkListSizes(m, limits.maxNodes);
  const r = manifestSchema.safeParse(m);
  if (!r.success) throw zodError(r.error);
  const man = r.data as TraceManifest;
  const machine = man.machine;
  const n = machine.nodes.length;
  if (n > limits.maxNodes) throw invalid('machine.nodes', `${n} nodes, more than the ${limits.maxNodes} this reader accepts`);
  if (machine.distances.length !== n || machine.distances.some((row) => row.length !== n)) {
    throw new TraceError(
      'manifest-invalid',
      `manifest.json field machine.distances must be a ${n}×${n} matrix (one row and column per node).`,
    );
  }
  if (machine.latenciesNs && (machine.latenciesNs.length > n || machine.latenciesNs.some((row) => row.length > n))) {
    throw invalid('machine.latenciesNs', `more rows or columns than the machine's ${n} nodes`);
  }
  const nodeSeen = new Set<number>();
  const cpuNode = new Map<number, number>();
  machine.nodes.forEach((node, i) => {
    if (nodeSeen.has(node.id)) throw invalid(`machine.nodes[${i}].id`, `node id ${node.id} is listed twice`);
    nodeSeen.add(node.id);
    node.cpus.forEach((cpu, k) => {
      const other = cpuNode.get(cpu);
      if (other !== undefined) throw invalid(`machine.nodes[${i}].cpus[${k}]`, `cpu ${cpu} is also listed under node ${other}`);
      cpuNode.set(cpu, node.id);
    });
  });
  if (machine.links.length > n * n) throw invalid('machine.links', `${machine.links.length} links for ${n} nodes (at most one per ordered pair and direction)`);
  if (machine.routes && Object.keys(machine.routes).length > n * n) throw invalid('machine.routes', `more routes than ordered pairs of the machine's ${n} nodes`);
  // What the engine does first with a trace: the machine must make a model (links between nodes it
  // has, a route for every pair that is a path over the links).
  try {
    machineModel(machine);
  } catch (e) {
    if (e instanceof MachineModelError) throw invalid('machine', e.message);
    throw invalid('machine', `its links do not connect every pair of nodes (${(e as Error).message})`);
  }
  return man;
}
