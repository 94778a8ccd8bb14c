/**
 * Structural check of a v1 manifest (docs/trace-format.md). Errors name the offending field by
 * its path, e.g. `machine.nodes[2].cpus`.
 */
import { z } from 'zod';
import { TraceError } from './errors.js';
import { TABLE_NAMES, TRACE_FORMAT_NAME, type TraceManifest } from './types.js';

const int = z.number().int();
const nonNegInt = int.nonnegative();
const u64String = z.string().regex(/^\d+$/, 'a decimal integer string');

const machine = z.object({
  name: z.string(),
  source: z.string(),
  kernel: z.string().nullable(),
  cpuModel: z.string().nullable(),
  pageSizeBytes: nonNegInt,
  nodes: z
    .array(
      z.object({
        id: nonNegInt,
        cpus: z.array(nonNegInt),
        memoryBytes: z.number().nonnegative().nullable(),
        memoryBandwidthGBps: z.number().nonnegative().nullable(),
      }),
    )
    .min(1, 'at least one node'),
  distances: z.array(z.array(z.number())),
  latenciesNs: z.array(z.array(z.number())).nullable(),
  links: z.array(z.object({ from: nonNegInt, to: nonNegInt, capacityGBps: z.number().nonnegative().nullable() })),
  routes: z.record(z.string(), z.array(nonNegInt)).nullable(),
  provenance: z.record(z.string(), z.string()),
});

const capture = z.object({
  startMonotonicNs: u64String,
  startUnixMs: z.number(),
  durationUs: z.number().nonnegative(),
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
});

export const manifestSchema = z.object({
  format: z.literal(TRACE_FORMAT_NAME),
  version: int,
  producer: z.object({ name: z.string(), version: z.string() }),
  createdAt: z.string(),
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
    })
    .nullable(),
  // Entries (AppliedPlanEntry) are checked loosely: an object; extra keys allowed.
  appliedPlans: z.array(z.object({}).passthrough()),
  tables: z.array(z.object({ name: z.enum(TABLE_NAMES), entry: z.string(), rows: nonNegInt })),
});

function pathOf(path: ReadonlyArray<PropertyKey>): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s ? `.${String(p)}` : String(p);
  return s || '(root)';
}

export function validateManifest(m: unknown): TraceManifest {
  const r = manifestSchema.safeParse(m);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const more = r.error.issues.length > 1 ? ` (and ${r.error.issues.length - 1} more problems)` : '';
    throw new TraceError(
      'manifest-invalid',
      `manifest.json field ${pathOf(issue.path)} is invalid: ${issue.message}${more}. The file does not follow trace format v1.`,
    );
  }
  const man = r.data as TraceManifest;
  const n = man.machine.nodes.length;
  if (man.machine.distances.length !== n || man.machine.distances.some((row) => row.length !== n)) {
    throw new TraceError(
      'manifest-invalid',
      `manifest.json field machine.distances must be a ${n}×${n} matrix (one row and column per node).`,
    );
  }
  return man;
}
