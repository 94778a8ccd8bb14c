/**
 * The placement plan format, version 1, in code (docs/plan-format.md is the normative text; the
 * Rust consumer in native/collector/crates/core/src/apply/ checks the same example files).
 * `validatePlan` checks the shape with zod, then the cross-field rules, and names the offending
 * field path in every message, e.g. `pageRanges[2].toNodes[0]: node 9 is not in target.machine.nodeIds`.
 */
import { z } from 'zod';

export const PLAN_FORMAT_NAME = 'numascope-plan';
export const CURRENT_PLAN_VERSION = 1;
/** Page ranges are aligned to this many bytes (the base page). */
export const PLAN_PAGE_BYTES = 4096;

// No code generated from strings: the app runs under Content-Security-Policies without
// 'unsafe-eval' (numascope serve, the desktop app), where zod's compiled fast path (and even its
// probe for it) is refused. Schemas here parse small objects; the interpreted path is fast enough.
z.config({ jitless: true });

/**
 * The limits of docs/plan-format.md, the same as the Rust consumer's (`apply/plan_fields.rs`; a test
 * reads both): a plan past them is refused here, before it reaches `numascope apply` or the
 * server (which would answer `413 plan-too-large`), and before zod walks a hostile list.
 */
export const PLAN_LIMITS = {
  /** JSON text of one plan. */
  maxPlanBytes: 16 * 1024 * 1024,
  maxPageRanges: 2 ** 18,
  maxPagesPerRange: 2 ** 27,
  maxTotalPages: 2 ** 28,
  maxThreads: 2 ** 16,
  maxNodes: 1024,
  /** Object entries (allocation sites) per plan, frames per entry, distinct modules in all entries. */
  maxObjects: 1024,
  maxFramesPerObject: 16,
  maxPlanModules: 256,
  maxModulePathBytes: 4096,
  /** `site` and `reason` of an object entry, in characters. */
  maxSiteChars: 1024,
  /** Largest `size.max` of an object entry (2^48 bytes). */
  maxObjectBytes: 2 ** 48,
  /** A thread name is a comm: at most 15 bytes. */
  maxThreadNameBytes: 15,
  maxThreadOrder: 2 ** 20,
} as const;

const hexAddress = z.string().regex(/^0x[0-9a-fA-F]+$/, 'expected a hexadecimal address string like "0x7f3a2c000000"');
const nodeId = z.number().int().nonnegative();
const count = z.number().int().nonnegative();
const nodeCounts = z.record(z.string().regex(/^\d+$/, 'expected a node id key'), count);

/** A weighted-interleave weight: the kernel's range (sysfs weighted_interleave/nodeN). */
const weight = z.number().int().min(1, 'a weight is an integer from 1 to 255').max(255, 'a weight is an integer from 1 to 255');

export const PageRangeSchema = z.object({
  start: hexAddress,
  end: hexAddress,
  action: z.enum(['move', 'interleave', 'weighted-interleave']),
  toNodes: z.array(nodeId).min(1),
  /**
   * `weighted-interleave` only: one weight (1-255) per toNode, same order. Page i of the range,
   * counted from `start`, goes to the node of slot i mod Σweights, the slots laid out toNodes[0]
   * weights[0] times, then toNodes[1] weights[1] times, …
   */
  weights: z.array(weight).max(PLAN_LIMITS.maxNodes).optional(),
  expectedNodes: nodeCounts.nullable(),
  reason: z.string(),
});

/**
 * System-wide weighted-interleave weights (sysfs /sys/kernel/mm/mempolicy/weighted_interleave/nodeN):
 * global, so `numascope apply` writes them only with an explicit flag, and restores them on rollback.
 */
export const SystemWeightsSchema = z.object({
  weights: z.record(z.string().regex(/^\d+$/, 'expected a node id key'), weight),
  reason: z.string().max(PLAN_LIMITS.maxSiteChars),
});

export const ThreadPinSchema = z.object({
  tid: z.number().int().positive(),
  /** Creation order in the recorded run (0 = main thread): finds the thread in a new run (`numascope run`). */
  order: z.number().int().nonnegative().max(PLAN_LIMITS.maxThreadOrder).optional(),
  /** The thread's name (comm) in the recorded run. */
  name: z
    .string()
    .min(1)
    .refine((s) => utf8Bytes(s) <= PLAN_LIMITS.maxThreadNameBytes, `a thread name (comm) is at most ${PLAN_LIMITS.maxThreadNameBytes} bytes`)
    .refine((s) => !/[\0\n]/.test(s), 'a thread name may not contain NUL or newline characters')
    .optional(),
  toNodes: z.array(nodeId).min(1),
  expectedNode: nodeId.nullable(),
  reason: z.string(),
});

/** One frame of an allocation's call stack, as it survives a new run (ASLR moves the addresses). */
export const ObjectFrameSchema = z.object({
  /** The module's path as the loader names it (the executable: its real path). */
  module: z
    .string()
    .regex(/^\//, 'expected an absolute path (as the loader names the module)')
    .refine((s) => utf8Bytes(s) <= PLAN_LIMITS.maxModulePathBytes, `a path of at most ${PLAN_LIMITS.maxModulePathBytes} bytes`)
    .refine((s) => !/[\0\n]/.test(s), 'a path may not contain NUL or newline characters'),
  /** GNU build id, hex; when given, the module is matched by build id. */
  buildId: z
    .string()
    .regex(/^([0-9a-fA-F]{2}){0,64}$/, 'expected an even number (at most 128) of hex digits')
    .nullable()
    .optional(),
  /** Address as in the module's ELF file (code address minus load bias), hex. */
  offset: z.string().regex(/^0x[0-9a-fA-F]{1,16}$/, 'expected a hex string like "0x1a2b"'),
});

export const ObjectEntrySchema = z.object({
  /** Human-readable site, display only. */
  site: z.string().max(PLAN_LIMITS.maxSiteChars).nullable().optional(),
  /** Innermost first: the allocation call's caller and its callers, outside the allocator. */
  frames: z.array(ObjectFrameSchema).min(1).max(PLAN_LIMITS.maxFramesPerObject),
  size: z.object({
    min: z.number().int().min(PLAN_PAGE_BYTES, `an object smaller than a page (${PLAN_PAGE_BYTES} bytes) cannot be given a page policy`),
    max: z.number().int().max(PLAN_LIMITS.maxObjectBytes),
  }),
  policy: z.enum(['bind', 'interleave', 'weighted-interleave']),
  nodes: z.array(nodeId).min(1).max(PLAN_LIMITS.maxNodes),
  /** `weighted-interleave` only: one weight (1-255) per node. */
  weights: z.array(z.number().int().min(1).max(255)).max(PLAN_LIMITS.maxNodes).optional(),
  reason: z.string().max(PLAN_LIMITS.maxSiteChars).nullable().optional(),
});

function utf8Bytes(s: string): number {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
}

export const PlanSchema = z.object({
  format: z.literal(PLAN_FORMAT_NAME),
  version: z.literal(CURRENT_PLAN_VERSION),
  createdAt: z.iso.datetime(),
  source: z.object({
    trace: z.string().nullable(),
    policy: z.string().min(1),
    seed: z.number().int().nullable(),
    summary: z.string(),
  }),
  target: z.object({
    pid: z.number().int().positive(),
    startTimeTicks: z.string().regex(/^\d+$/, 'expected a decimal string').nullable(),
    command: z.array(z.string()),
    machine: z.object({
      nodeIds: z.array(nodeId).min(1),
      distances: z.array(z.array(z.number())).nullable(),
    }),
  }),
  pageRanges: z.array(PageRangeSchema),
  threads: z.array(ThreadPinSchema),
  /** Placements keyed by allocation site, for `numascope run` (docs/plan-format.md, "Object entries"). */
  objects: z.array(ObjectEntrySchema).optional(),
  /** System-wide weighted-interleave weights, written only with an explicit flag of `numascope apply`. */
  systemWeights: SystemWeightsSchema.optional(),
  expected: z.object({
    pagesToMove: count,
    bytesToMove: count,
    pagesPerNodeAfter: nodeCounts,
    threadsToPin: count,
  }),
});

export type Plan = z.infer<typeof PlanSchema>;
export type PlanPageRange = z.infer<typeof PageRangeSchema>;
export type PlanThreadPin = z.infer<typeof ThreadPinSchema>;
export type PlanObjectEntry = z.infer<typeof ObjectEntrySchema>;
export type PlanObjectFrame = z.infer<typeof ObjectFrameSchema>;
export type PlanSystemWeights = z.infer<typeof SystemWeightsSchema>;

export interface PlanIssue {
  /** Field path, e.g. `pageRanges[2].toNodes[0]` (empty for the whole document). */
  path: string;
  message: string;
}

export class PlanValidationError extends Error {
  readonly issues: PlanIssue[];
  constructor(issues: PlanIssue[]) {
    super(issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; '));
    this.name = 'PlanValidationError';
    this.issues = issues;
  }
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
}

/** Cross-field rules of docs/plan-format.md that a schema cannot say. */
function crossFieldIssues(plan: Plan): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const ids = new Set(plan.target.machine.nodeIds);
  const n = plan.target.machine.nodeIds.length;
  if (ids.size !== n) issues.push({ path: 'target.machine.nodeIds', message: 'node ids must be distinct' });
  const distances = plan.target.machine.distances;
  if (distances) {
    if (distances.length !== n) issues.push({ path: 'target.machine.distances', message: `expected ${n} rows (one per node id), got ${distances.length}` });
    distances.forEach((row, r) => {
      if (row.length !== n) issues.push({ path: `target.machine.distances[${r}]`, message: `expected ${n} columns, got ${row.length}` });
    });
  }
  const checkNodes = (nodes: number[], path: string): void => {
    nodes.forEach((node, k) => {
      if (!ids.has(node)) issues.push({ path: `${path}[${k}]`, message: `node ${node} is not in target.machine.nodeIds` });
    });
    if (new Set(nodes).size !== nodes.length) issues.push({ path, message: 'node ids must be distinct' });
  };
  const spans: Array<{ start: bigint; end: bigint; index: number }> = [];
  let totalPages = 0n;
  plan.pageRanges.forEach((range, i) => {
    const at = `pageRanges[${i}]`;
    const start = BigInt(range.start);
    const end = BigInt(range.end);
    if (end > start) {
      const pages = (end - start + BigInt(PLAN_PAGE_BYTES) - 1n) / BigInt(PLAN_PAGE_BYTES);
      totalPages += pages;
      if (pages > BigInt(PLAN_LIMITS.maxPagesPerRange)) {
        issues.push({ path: at, message: `${pages} pages, more than the limit of ${PLAN_LIMITS.maxPagesPerRange} pages per range: split the range` });
      }
    }
    if (start % BigInt(PLAN_PAGE_BYTES) !== 0n) issues.push({ path: `${at}.start`, message: `${range.start} is not ${PLAN_PAGE_BYTES}-byte page-aligned` });
    if (end % BigInt(PLAN_PAGE_BYTES) !== 0n) issues.push({ path: `${at}.end`, message: `${range.end} is not ${PLAN_PAGE_BYTES}-byte page-aligned` });
    if (start >= end) issues.push({ path: `${at}.end`, message: `end ${range.end} must be greater than start ${range.start}` });
    if (range.action === 'move' && range.toNodes.length !== 1) {
      issues.push({ path: `${at}.toNodes`, message: `action "move" needs exactly one node, got ${range.toNodes.length}` });
    }
    if (range.action === 'interleave' && range.toNodes.length < 2) {
      issues.push({ path: `${at}.toNodes`, message: `action "interleave" needs at least two nodes, got ${range.toNodes.length}` });
    }
    if (range.action === 'weighted-interleave') {
      if (range.toNodes.length < 2) issues.push({ path: `${at}.toNodes`, message: `action "weighted-interleave" needs at least two nodes, got ${range.toNodes.length}` });
      if (!range.weights) issues.push({ path: `${at}.weights`, message: 'action "weighted-interleave" needs one weight (1-255) per toNode' });
      else if (range.weights.length !== range.toNodes.length) {
        issues.push({ path: `${at}.weights`, message: `${range.weights.length} weights for ${range.toNodes.length} toNodes: give one weight per toNode, same order` });
      }
    } else if (range.weights) {
      issues.push({ path: `${at}.weights`, message: `weights are only for action "weighted-interleave", not "${range.action}"` });
    }
    checkNodes(range.toNodes, `${at}.toNodes`);
    if (range.expectedNodes) {
      for (const key of Object.keys(range.expectedNodes)) {
        if (!ids.has(Number(key))) issues.push({ path: `${at}.expectedNodes.${key}`, message: `node ${key} is not in target.machine.nodeIds` });
      }
    }
    spans.push({ start, end, index: i });
  });
  if (totalPages > BigInt(PLAN_LIMITS.maxTotalPages)) {
    issues.push({ path: 'pageRanges', message: `${totalPages} pages in all, more than the limit of ${PLAN_LIMITS.maxTotalPages}: split the plan` });
  }
  spans.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.index - b.index));
  for (let k = 1; k < spans.length; k++) {
    const prev = spans[k - 1]!;
    const cur = spans[k]!;
    if (cur.start < prev.end) issues.push({ path: `pageRanges[${cur.index}]`, message: `overlaps pageRanges[${prev.index}]` });
  }
  const orders = new Set<number>();
  const namesWithoutOrder = new Set<string>();
  plan.threads.forEach((pin, i) => {
    if (pin.order !== undefined) {
      if (orders.has(pin.order)) issues.push({ path: `threads[${i}]`, message: `order ${pin.order} is given to an earlier thread entry too` });
      orders.add(pin.order);
    } else if (pin.name !== undefined) {
      if (namesWithoutOrder.has(pin.name)) issues.push({ path: `threads[${i}]`, message: 'the same name (without an order) as an earlier thread entry' });
      namesWithoutOrder.add(pin.name);
    }
  });
  objectIssues(plan, checkNodes, issues);
  const tids = new Set<number>();
  plan.threads.forEach((pin, i) => {
    checkNodes(pin.toNodes, `threads[${i}].toNodes`);
    if (pin.expectedNode !== null && !ids.has(pin.expectedNode)) {
      issues.push({ path: `threads[${i}].expectedNode`, message: `node ${pin.expectedNode} is not in target.machine.nodeIds` });
    }
    if (tids.has(pin.tid)) issues.push({ path: `threads[${i}].tid`, message: `tid ${pin.tid} appears twice` });
    tids.add(pin.tid);
  });
  if (plan.systemWeights) {
    const keys = Object.keys(plan.systemWeights.weights);
    if (keys.length === 0) issues.push({ path: 'systemWeights.weights', message: 'give a weight for at least one node' });
    for (const key of keys) {
      if (!ids.has(Number(key))) issues.push({ path: `systemWeights.weights.${key}`, message: `node ${key} is not in target.machine.nodeIds` });
    }
  }
  for (const key of Object.keys(plan.expected.pagesPerNodeAfter)) {
    if (!ids.has(Number(key))) issues.push({ path: `expected.pagesPerNodeAfter.${key}`, message: `node ${key} is not in target.machine.nodeIds` });
  }
  return issues;
}

/** Cross-field rules of `objects[]`. */
function objectIssues(plan: Plan, checkNodes: (nodes: number[], path: string) => void, issues: PlanIssue[]): void {
  const modules = new Set<string>();
  const stacks = new Set<string>();
  (plan.objects ?? []).forEach((o, i) => {
    const at = `objects[${i}]`;
    if (o.size.max < o.size.min) issues.push({ path: `${at}.size.max`, message: `${o.size.max} is less than size.min ${o.size.min}` });
    checkNodes(o.nodes, `${at}.nodes`);
    if (o.policy === 'weighted-interleave') {
      if (!o.weights) issues.push({ path: `${at}.weights`, message: 'policy "weighted-interleave" needs one weight (1-255) per node' });
      else if (o.weights.length !== o.nodes.length) issues.push({ path: `${at}.weights`, message: `${o.weights.length} weights for ${o.nodes.length} nodes: give one weight per node` });
    } else if (o.weights) {
      issues.push({ path: `${at}.weights`, message: `weights are only for "weighted-interleave", not "${o.policy}"` });
    }
    const before = modules.size;
    for (const f of o.frames) modules.add(`${f.module}\u0000${(f.buildId ?? '').toLowerCase()}`);
    if (modules.size > PLAN_LIMITS.maxPlanModules && before <= PLAN_LIMITS.maxPlanModules) {
      issues.push({ path: `${at}.frames`, message: `the object entries up to this one name more than ${PLAN_LIMITS.maxPlanModules} distinct modules` });
    }
    const key = JSON.stringify([o.frames.map((f) => [f.module, (f.buildId ?? '').toLowerCase(), BigInt(f.offset).toString(16)]), o.size.min, o.size.max]);
    if (stacks.has(key)) issues.push({ path: at, message: 'the same frames and size range as an earlier entry' });
    stacks.add(key);
  });
}

/**
 * Checks a plan (a parsed JSON value, or JSON text) and returns it typed; throws
 * PlanValidationError listing every problem with its field path.
 */
export function validatePlan(json: unknown): Plan {
  let value = json;
  if (typeof json === 'string') {
    if (json.length > PLAN_LIMITS.maxPlanBytes) {
      throw new PlanValidationError([{ path: '', message: `the plan is ${json.length} characters, more than the limit of ${PLAN_LIMITS.maxPlanBytes}` }]);
    }
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw new PlanValidationError([{ path: '', message: `not JSON: ${(e as Error).message}` }]);
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new PlanValidationError([{ path: '', message: 'a plan is a JSON object' }]);
  }
  const record = value as Record<string, unknown>;
  if (record.format !== PLAN_FORMAT_NAME) {
    throw new PlanValidationError([{ path: 'format', message: `expected "${PLAN_FORMAT_NAME}", got ${JSON.stringify(record.format)}` }]);
  }
  if (typeof record.version === 'number' && Number.isInteger(record.version) && record.version > CURRENT_PLAN_VERSION) {
    throw new PlanValidationError([
      { path: 'version', message: `plan format version ${record.version} is newer than this reader, which reads version ${CURRENT_PLAN_VERSION}` },
    ]);
  }
  // List lengths before zod, which would report every bad item of a hostile list.
  const target = record.target as { machine?: { nodeIds?: unknown } } | null | undefined;
  const lists: Array<[string, unknown, number]> = [
    ['pageRanges', record.pageRanges, PLAN_LIMITS.maxPageRanges],
    ['threads', record.threads, PLAN_LIMITS.maxThreads],
    ['objects', record.objects, PLAN_LIMITS.maxObjects],
    ['target.machine.nodeIds', typeof target === 'object' && target !== null ? target.machine?.nodeIds : undefined, PLAN_LIMITS.maxNodes],
  ];
  for (const [path, list, max] of lists) {
    if (Array.isArray(list) && list.length > max) {
      throw new PlanValidationError([{ path, message: `${list.length} entries, more than the limit of ${max}: split the plan` }]);
    }
  }
  const parsed = PlanSchema.safeParse(value);
  if (!parsed.success) {
    throw new PlanValidationError(parsed.error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message })));
  }
  const issues = crossFieldIssues(parsed.data);
  if (issues.length > 0) throw new PlanValidationError(issues);
  return parsed.data;
}

/** Plan → JSON text (validated first; 2-space indent, trailing newline). */
export function serializePlan(plan: Plan): string {
  return `${JSON.stringify(validatePlan(plan), null, 2)}\n`;
}
