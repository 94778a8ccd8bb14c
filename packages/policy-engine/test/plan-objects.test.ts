import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  buildObjectEntries,
  buildPlan,
  pagesInRangeOf,
  PLAN_LIMITS,
  PlanValidationError,
  validatePlan,
  weightsFromPages,
  type AllocationObjectInput,
  type Plan,
} from '../src/plan/index.js';
import type { PolicyReplay } from '../src/model/contract.js';
import { traceFromText } from './helpers/plan-trace.js';

const example = (): unknown =>
  JSON.parse(readFileSync(fileURLToPath(new URL('../../../docs/examples/plan-objects.json', import.meta.url)), 'utf8'));

const EXE = '/home/user/points/points';
const ID = '3F2A6C0E9D1B4A77C2E5F0A1B2C3D4E5F6A7B8C9';
const MiB = 1n << 20n;

/** An allocation of `mib` MiB at `start` from a stack of (module, offset) frames. */
function alloc(site: string, start: bigint, mib: bigint, frames: Array<[string, number]>): AllocationObjectInput {
  return { site, start, end: start + mib * MiB, frames: frames.map(([module, offset]) => ({ module, buildId: module === EXE ? ID : null, offset: BigInt(offset) })) };
}

/** Page placement by address band: [0x1000_0000, 0x2000_0000) on node 1, above it alternating 0,1,2,3 by page. */
const placement = (start: bigint, end: bigint): Map<number, number> => {
  const out = new Map<number, number>();
  for (let a = start; a < end; a += 4096n) {
    const node = a < 0x2000_0000n ? 1 : Number((a / 4096n) % 4n);
    out.set(node, (out.get(node) ?? 0) + 1);
  }
  return out;
};

describe('buildObjectEntries', () => {
  it('groups allocations by site, takes the placement of their pages as the policy, and keeps frames that survive a new run', () => {
    const allocs = [
      alloc('points.c:84 alloc_points', 0x1000_0000n, 4n, [[EXE, 0x1a2b], [EXE, 0x1f40], ['/usr/lib/libc.so.6', 0x2a1ca], [EXE, 0x1000], [EXE, 0x2000]]),
      alloc('points.c:84 alloc_points', 0x1800_0000n, 2n, [[EXE, 0x1a2b], [EXE, 0x1f40], ['/usr/lib/libc.so.6', 0x2a1ca], [EXE, 0x1000]]),
      alloc('grid.c:30 grid_new', 0x3000_0000n, 1n, [[EXE, 0x2210], ['[vdso]', 0x10], [EXE, 0x1f58]]),
      alloc('tiny.c:1', 0x4000_0000n, 0n, [[EXE, 0x3000]]), // 0 bytes: too small
      { site: 'small', start: 0x5000_0000n, end: 0x5000_0000n + 8192n, frames: [{ module: EXE, buildId: ID, offset: 0x4000n }] },
      alloc('jit', 0x6000_0000n, 1n, [['[anon]', 0x10]]), // no frame with a file
    ];
    const { objects, skipped } = buildObjectEntries(allocs, placement, { maxFrames: 4 });
    expect(skipped).toEqual({ tooSmall: 2, noFrames: 1, noPages: 0, overLimit: 0 });
    expect(objects).toHaveLength(2);
    const [points, grid] = objects;
    // largest site first; both allocations of the site in one entry, sizes 2..4 MiB
    expect(points).toEqual({
      site: 'points.c:84 alloc_points',
      frames: [
        { module: EXE, buildId: ID.toLowerCase(), offset: '0x1a2b' },
        { module: EXE, buildId: ID.toLowerCase(), offset: '0x1f40' },
        { module: '/usr/lib/libc.so.6', buildId: null, offset: '0x2a1ca' },
        { module: EXE, buildId: ID.toLowerCase(), offset: '0x1000' },
      ],
      size: { min: 2 * 2 ** 20, max: 4 * 2 ** 20 },
      policy: 'bind',
      nodes: [1],
      reason: '2 allocations of this site; placement: node 1: 1536 pages',
    });
    // cut at the frame without a file (vDSO), spread over four nodes
    expect(grid!.frames.map((f) => f.offset)).toEqual(['0x2210']);
    expect(grid!.policy).toBe('interleave');
    expect(grid!.nodes).toEqual([0, 1, 2, 3]);
    expect(grid!.weights).toBeUndefined();
  });

  it('skips allocations whose pages the placement does not know, and honours minBytes', () => {
    const none = (): Map<number, number> => new Map();
    const r = buildObjectEntries([alloc('a', 0x1000_0000n, 1n, [[EXE, 1]])], none);
    expect(r).toEqual({ objects: [], skipped: { tooSmall: 0, noFrames: 0, noPages: 1, overLimit: 0 } });
    const r2 = buildObjectEntries([alloc('a', 0x1000_0000n, 1n, [[EXE, 1]])], placement, { minBytes: 2 * 2 ** 20 });
    expect(r2.skipped.tooSmall).toBe(1);
  });

  it('gives weighted interleave only when asked and the spread is uneven', () => {
    const uneven = (): Map<number, number> => new Map([[0, 300], [2, 100]]);
    const a = [alloc('h', 0x1000_0000n, 2n, [[EXE, 0x9c0]])];
    expect(buildObjectEntries(a, uneven).objects[0]!.policy).toBe('interleave');
    const w = buildObjectEntries(a, uneven, { weighted: true }).objects[0]!;
    expect([w.policy, w.nodes, w.weights]).toEqual(['weighted-interleave', [0, 2], [3, 1]]);
    const even = (): Map<number, number> => new Map([[0, 100], [1, 100]]);
    expect(buildObjectEntries(a, even, { weighted: true }).objects[0]!.policy).toBe('interleave');
    expect(weightsFromPages([1000, 1])).toEqual([255, 1]);
    expect(weightsFromPages([5, 10, 10])).toEqual([1, 2, 2]);
  });

  it('bounds the entries and frames of a hostile recording', () => {
    const many = Array.from({ length: PLAN_LIMITS.maxObjects + 5 }, (_, i) => alloc(`s${i}`, 0x1000_0000n + BigInt(i) * MiB, 1n, [[EXE, i + 1]]));
    const r = buildObjectEntries(many, placement, { maxFrames: 99 });
    expect(r.objects).toHaveLength(PLAN_LIMITS.maxObjects);
    expect(r.skipped.overLimit).toBe(5);
    const deep = alloc('deep', 0x1000_0000n, 1n, Array.from({ length: 40 }, (_, i): [string, number] => [EXE, i + 1]));
    expect(buildObjectEntries([deep], placement, { maxFrames: 99 }).objects[0]!.frames).toHaveLength(PLAN_LIMITS.maxFramesPerObject);
  });

  it('pagesInRangeOf counts the target nodes of the pages inside a range', () => {
    const addrs = BigUint64Array.from([0x3000n, 0x1000n, 0x2000n, 0x9000n]);
    const target = [2, 0, 1, 3];
    const f = pagesInRangeOf(addrs, (p) => (p === 2 ? null : target[p]!));
    expect([...f(0x1000n, 0x4000n)].sort()).toEqual([[0, 1], [2, 1]]);
    expect(f(0x4000n, 0x9000n).size).toBe(0);
  });
});

describe('buildPlan with objects and thread identities', () => {
  const TRACE = traceFromText({
    preset: 'amd-opteron-8385-4p',
    pid: 4242,
    pages: `
      0x7f0000000000 0
      0x7f0000001000 0
      0x7f0000002000 0
      0x7f0000003000 0`,
    threads: `
      4242 0
      4250 0
      4244 0`,
  });
  const replay: PolicyReplay = {
    policy: 'manual',
    windows: [],
    threadNodeByWindow: [],
    finalPlacement: { threadNode: Int16Array.from([0, 2, 1]), pageNode: Int16Array.from([1, 1, 3, 3]), replicated: new Uint8Array(4) },
    migratedPages: 0,
    migratedBytes: 0,
    decisions: [],
  };

  it('adds one object entry per site from the replay placement, and order + name to thread pins', () => {
    const objects = [
      { site: 'a.c:1', start: 0x7f0000000000n, end: 0x7f0000002000n, frames: [{ module: EXE, buildId: null, offset: 0x10n }] },
      { site: 'b.c:2', start: 0x7f0000002000n, end: 0x7f0000004000n, frames: [{ module: EXE, buildId: null, offset: 0x20n }] },
    ];
    const plan = buildPlan(TRACE, replay, { createdAt: '2026-11-21T20:00:00Z', objects, objectOptions: { minBytes: 4096 }, threadIdentity: 'order-and-name' });
    expect(plan.objects!.map((o) => `${o.site} ${o.policy} ${o.nodes}`)).toEqual(['a.c:1 bind 1', 'b.c:2 bind 3']);
    // tid 4250 is the second thread the process made (4244 < 4250), tid 4244 the first
    expect(plan.threads.map((t) => [t.tid, t.order, t.name, t.toNodes[0]])).toEqual([
      [4250, 2, 'worker', 2],
      [4244, 1, 'worker', 1],
    ]);
    expect(plan.source.summary).toMatch(/2 allocation sites$/);
    expect(validatePlan(JSON.parse(JSON.stringify(plan)))).toEqual(plan);
    // without the options the plan is what it always was
    const plain = buildPlan(TRACE, replay, { createdAt: '2026-11-21T20:00:00Z' });
    expect(plain.objects).toBeUndefined();
    expect(plain.threads[0]).not.toHaveProperty('order');
  });
});

describe('validatePlan of object entries', () => {
  const good = (): Plan => validatePlan(example());
  const rejects = (edit: (p: any) => void): string => {
    const p = structuredClone(good()) as any;
    edit(p);
    try {
      validatePlan(p);
    } catch (e) {
      expect(e).toBeInstanceOf(PlanValidationError);
      return (e as Error).message;
    }
    throw new Error('accepted');
  };

  it('accepts the example', () => {
    const p = good();
    expect(p.objects!.map((o) => o.policy)).toEqual(['bind', 'interleave', 'weighted-interleave']);
    expect(p.threads[0]!.order).toBe(1);
    expect(p.threads[0]!.name).toBe('worker-0');
  });

  it('names the offending field', () => {
    expect(rejects((p) => (p.objects[0].nodes = [9]))).toBe('objects[0].nodes[0]: node 9 is not in target.machine.nodeIds');
    expect(rejects((p) => (p.objects[0].nodes = [1, 1]))).toBe('objects[0].nodes: node ids must be distinct');
    expect(rejects((p) => (p.objects[0].frames = []))).toMatch(/^objects\[0\]\.frames: /);
    expect(rejects((p) => (p.objects[0].frames[1].module = 'points'))).toBe('objects[0].frames[1].module: expected an absolute path (as the loader names the module)');
    expect(rejects((p) => (p.objects[0].frames[0].offset = 6699))).toMatch(/^objects\[0\]\.frames\[0\]\.offset: /);
    expect(rejects((p) => (p.objects[0].frames[0].buildId = 'abc'))).toMatch(/^objects\[0\]\.frames\[0\]\.buildId: expected an even number/);
    expect(rejects((p) => (p.objects[0].size.min = 100))).toMatch(/^objects\[0\]\.size\.min: an object smaller than a page/);
    expect(rejects((p) => (p.objects[1].size.max = 4096))).toBe('objects[1].size.max: 4096 is less than size.min 16777216');
    expect(rejects((p) => (p.objects[0].policy = 'preferred'))).toMatch(/^objects\[0\]\.policy: /);
    expect(rejects((p) => (p.objects[2].weights = [3]))).toBe('objects[2].weights: 1 weights for 2 nodes: give one weight per node');
    expect(rejects((p) => (p.objects[2].weights = [0, 1]))).toMatch(/^objects\[2\]\.weights\[0\]: /);
    expect(rejects((p) => (p.objects[2].weights = [3, 256]))).toMatch(/^objects\[2\]\.weights\[1\]: /);
    expect(rejects((p) => delete p.objects[2].weights)).toBe('objects[2].weights: policy "weighted-interleave" needs one weight (1-255) per node');
    expect(rejects((p) => (p.objects[0].weights = [1]))).toBe('objects[0].weights: weights are only for "weighted-interleave", not "bind"');
    expect(rejects((p) => (p.objects[1] = structuredClone(p.objects[0])))).toBe('objects[1]: the same frames and size range as an earlier entry');
    expect(rejects((p) => (p.threads[1].order = 1))).toBe('threads[1]: order 1 is given to an earlier thread entry too');
    expect(rejects((p) => (p.threads[0].name = 'a-name-longer-than-15'))).toMatch(/^threads\[0\]\.name: a thread name \(comm\) is at most 15 bytes/);
  });

  it('refuses hostile object lists within bounds', () => {
    const t0 = performance.now();
    const many = Array.from({ length: PLAN_LIMITS.maxObjects + 1 }, () => ({ bogus: true }));
    expect(rejects((p) => (p.objects = many))).toBe(`objects: ${PLAN_LIMITS.maxObjects + 1} entries, more than the limit of ${PLAN_LIMITS.maxObjects}: split the plan`);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(rejects((p) => (p.objects[0].nodes = Array(100_000).fill(0)))).toMatch(/^objects\[0\]\.nodes: /);
    expect(rejects((p) => (p.objects[0].size.max = 2 ** 60))).toMatch(/^objects\[0\]\.size\.max: /);
    expect(rejects((p) => (p.objects[0].frames[0].module = `/${'a'.repeat(PLAN_LIMITS.maxModulePathBytes)}`))).toMatch(/^objects\[0\]\.frames\[0\]\.module: a path of at most 4096 bytes/);
    const modules = Array.from({ length: PLAN_LIMITS.maxPlanModules + 1 }, (_, i) => ({
      frames: [{ module: `/lib/m${i}.so`, offset: '0x1' }],
      size: { min: 4096, max: 4096 },
      policy: 'bind',
      nodes: [0],
    }));
    expect(rejects((p) => (p.objects = modules))).toBe(`objects[${PLAN_LIMITS.maxPlanModules}].frames: the object entries up to this one name more than ${PLAN_LIMITS.maxPlanModules} distinct modules`);
  });

  it('has the same object limits as the Rust consumer (apply/plan_objects.rs)', () => {
    const rust = readFileSync(fileURLToPath(new URL('../../../native/collector/crates/core/src/apply/plan_objects.rs', import.meta.url)), 'utf8');
    const constant = (name: string): number => {
      const m = new RegExp(`pub const ${name}: \\w+ = ([^;]+);`).exec(rust);
      if (!m) throw new Error(`${name} not found in plan_objects.rs`);
      const expr = m[1]!.replace(/_/g, '');
      const shift = /^1 << (\d+)$/.exec(expr);
      return shift ? 2 ** Number(shift[1]) : Number(expr);
    };
    expect({
      maxObjects: PLAN_LIMITS.maxObjects,
      maxFramesPerObject: PLAN_LIMITS.maxFramesPerObject,
      maxPlanModules: PLAN_LIMITS.maxPlanModules,
      maxModulePathBytes: PLAN_LIMITS.maxModulePathBytes,
      maxSiteChars: PLAN_LIMITS.maxSiteChars,
      maxObjectBytes: PLAN_LIMITS.maxObjectBytes,
      maxThreadNameBytes: PLAN_LIMITS.maxThreadNameBytes,
      maxThreadOrder: PLAN_LIMITS.maxThreadOrder,
    }).toEqual({
      maxObjects: constant('MAX_OBJECTS'),
      maxFramesPerObject: constant('MAX_FRAMES_PER_OBJECT'),
      maxPlanModules: constant('MAX_PLAN_MODULES'),
      maxModulePathBytes: constant('MAX_MODULE_PATH_BYTES'),
      maxSiteChars: constant('MAX_SITE_CHARS'),
      maxObjectBytes: constant('MAX_OBJECT_BYTES'),
      maxThreadNameBytes: constant('MAX_THREAD_NAME_BYTES'),
      maxThreadOrder: constant('MAX_THREAD_ORDER'),
    });
  });
});
