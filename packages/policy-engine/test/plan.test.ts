import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildPlan, PLAN_LIMITS, PlanValidationError, serializePlan, validatePlan, type Plan } from '../src/plan/index.js';
import type { PolicyReplay } from '../src/model/contract.js';
import { traceFromText } from './helpers/plan-trace.js';

const examples = (name: string): unknown =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../../docs/examples/${name}`, import.meta.url)), 'utf8'));

/** A replay that only carries a final placement (buildPlan reads nothing else but the policy id). */
function finalOnly(policy: string, threadNode: number[], pageNode: number[], replicated: number[] = []): PolicyReplay {
  return {
    policy,
    windows: [],
    threadNodeByWindow: [],
    finalPlacement: {
      threadNode: Int16Array.from(threadNode),
      pageNode: Int16Array.from(pageNode),
      replicated: Uint8Array.from(pageNode, (_, i) => (replicated.includes(i) ? 1 : 0)),
    },
    migratedPages: 0,
    migratedBytes: 0,
    decisions: [],
  };
}

// 12 contiguous pages from 0x7f0000000000, all first-touched on node 0, and one page further away.
const TRACE = traceFromText({
  preset: 'amd-opteron-8385-4p',
  pages: `
    0x7f0000000000 0
    0x7f0000001000 0
    0x7f0000002000 0
    0x7f0000003000 0
    0x7f0000004000 0
    0x7f0000005000 0
    0x7f0000006000 0
    0x7f0000007000 0
    0x7f0000008000 0
    0x7f0000009000 0
    0x7f000000a000 0
    0x7f000000b000 0
    0x7f0000100000 0`,
  threads: `
    4243 0
    4244 0
    4245 1`,
});
const CREATED = '2026-11-21T20:00:00Z';

describe('buildPlan', () => {
  it('coalesces pages into move ranges, interleave ranges where nodes alternate, and thread pins', () => {
    // pages 0-3 stay on node 0; 4-11 alternate over nodes 1,2,3,1,2,3,…; page 12 moves to node 2.
    const replay = finalOnly('carrefour', [0, 1, 1], [0, 0, 0, 0, 1, 2, 3, 1, 2, 3, 1, 2, 2]);
    const plan = buildPlan(TRACE, replay, { createdAt: CREATED, traceName: 'run.numascope', seed: 1 });
    const table = plan.pageRanges.map((r) => `${r.start}-${r.end} ${r.action} ${r.toNodes.join(',')} expected ${JSON.stringify(r.expectedNodes)}`);
    expect(table).toEqual([
      '0x7f0000004000-0x7f000000c000 interleave 1,2,3 expected {"0":8}',
      '0x7f0000100000-0x7f0000101000 move 2 expected {"0":1}',
    ]);
    expect(plan.threads).toEqual([{ tid: 4244, toNodes: [1], expectedNode: 0, reason: 'final placement of the carrefour replay: thread runs on node 1' }]);
    expect(plan.expected).toEqual({ pagesToMove: 9, bytesToMove: 9 * 4096, pagesPerNodeAfter: { 0: 4, 1: 3, 2: 4, 3: 2 }, threadsToPin: 1 });
    expect(plan.target).toEqual({
      pid: 4242,
      startTimeTicks: '172045',
      command: ['./app', '--size', '4G'],
      machine: { nodeIds: [0, 1, 2, 3], distances: TRACE.manifest.machine.distances },
    });
  });

  it('leaves replicated pages out and says so', () => {
    const plan = buildPlan(TRACE, finalOnly('carrefour', [0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [3, 4]), { createdAt: CREATED });
    expect(plan.pageRanges).toEqual([]);
    expect(plan.source.summary).toMatch(/2 replicated pages left out/);
  });

  it('includeInPlace keeps the ranges already in place: a plan that states the placement, moving nothing', () => {
    const stay = finalOnly('observed', [0, 0, 1], Array(13).fill(0));
    expect(buildPlan(TRACE, stay, { createdAt: CREATED }).pageRanges).toEqual([]);
    const plan = buildPlan(TRACE, stay, { createdAt: CREATED, includeInPlace: true });
    expect(plan.pageRanges.map((r) => `${r.start}-${r.end} ${r.action} ${r.toNodes} expected ${JSON.stringify(r.expectedNodes)}`)).toEqual([
      '0x7f0000000000-0x7f000000c000 move 0 expected {"0":12}',
      '0x7f0000100000-0x7f0000101000 move 0 expected {"0":1}',
    ]);
    expect(plan.expected).toMatchObject({ pagesToMove: 0, bytesToMove: 0, threadsToPin: 0 });
    expect(plan.threads).toEqual([]);
  });

  it('round-trips through the schema', () => {
    const plan = buildPlan(TRACE, finalOnly('asymsched', [2, 2, 1], Array(13).fill(3)), { createdAt: CREATED });
    expect(plan.pageRanges.map((r) => `${r.start}-${r.end} ${r.action} ${r.toNodes}`)).toEqual([
      '0x7f0000000000-0x7f000000c000 move 3',
      '0x7f0000100000-0x7f0000101000 move 3',
    ]);
    const text = serializePlan(plan);
    expect(validatePlan(JSON.parse(text))).toEqual(plan);
    expect(validatePlan(text)).toEqual(plan);
  });
});

describe('validatePlan', () => {
  const good = (): Plan => validatePlan(examples('plan-interleave.json'));
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

  it('accepts the example files', () => {
    expect(good().pageRanges[0]!.action).toBe('interleave');
    const moveAndPin = validatePlan(examples('plan-move-and-pin.json'));
    expect(moveAndPin.threads.length).toBeGreaterThan(0);
    expect(moveAndPin.pageRanges.some((r) => r.action === 'move')).toBe(true);
  });

  it('names the offending field', () => {
    expect(rejects((p) => (p.pageRanges[0].toNodes[0] = 9))).toBe('pageRanges[0].toNodes[0]: node 9 is not in target.machine.nodeIds');
    expect(rejects((p) => (p.pageRanges[0].action = 'move'))).toBe('pageRanges[0].toNodes: action "move" needs exactly one node, got 4');
    expect(rejects((p) => (p.pageRanges[0].start = '0x7f3a2c000010'))).toBe('pageRanges[0].start: 0x7f3a2c000010 is not 4096-byte page-aligned');
    expect(rejects((p) => (p.pageRanges[0].end = p.pageRanges[0].start))).toMatch(/^pageRanges\[0\]\.end: end 0x7f3a2c000000 must be greater than start/);
    expect(rejects((p) => p.pageRanges.push({ ...p.pageRanges[0] }))).toBe('pageRanges[1]: overlaps pageRanges[0]');
    expect(rejects((p) => (p.target.pid = -1))).toMatch(/^target\.pid: /);
    expect(rejects((p) => (p.threads = [{ tid: 7, toNodes: [], expectedNode: null, reason: '' }]))).toMatch(/^threads\[0\]\.toNodes: /);
    expect(rejects((p) => (p.target.startTimeTicks = 'x'))).toBe('target.startTimeTicks: expected a decimal string');
    expect(rejects((p) => (p.pageRanges[0].start = 4096))).toMatch(/^pageRanges\[0\]\.start: /);
  });

  it('refuses plans past the limits numascope apply enforces, naming the field and the limit', () => {
    // The whole user address space in one range (a hostile plan).
    expect(
      rejects((p) => {
        p.pageRanges = [{ ...p.pageRanges[0], start: '0x1000', end: '0x7ffffffff000' }];
        p.expected.pagesPerNodeAfter = {};
      }),
    ).toMatch(/^pageRanges\[0\]: 34359738366 pages, more than the limit of 134217728 pages per range/);
    // Many ranges: refused by their count before zod looks at any item.
    const many = Array.from({ length: PLAN_LIMITS.maxPageRanges + 1 }, () => ({ bogus: true }));
    const t0 = performance.now();
    expect(rejects((p) => (p.pageRanges = many))).toBe(`pageRanges: ${PLAN_LIMITS.maxPageRanges + 1} entries, more than the limit of ${PLAN_LIMITS.maxPageRanges}: split the plan`);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(rejects((p) => (p.threads = Array.from({ length: PLAN_LIMITS.maxThreads + 1 }, () => 0)))).toMatch(/^threads: 65537 entries/);
    expect(() => validatePlan(' '.repeat(PLAN_LIMITS.maxPlanBytes + 1))).toThrow(/more than the limit of 16777216/);
  });

  it('has the same limits as the Rust consumer (native/collector/crates/core/src/apply/plan_fields.rs)', () => {
    const rust = readFileSync(fileURLToPath(new URL('../../../native/collector/crates/core/src/apply/plan_fields.rs', import.meta.url)), 'utf8');
    const constant = (name: string): number => {
      const m = new RegExp(`pub const ${name}: \\w+ = ([^;]+);`).exec(rust);
      if (!m) throw new Error(`${name} not found in plan_fields.rs`);
      const expr = m[1]!.replace(/_/g, '');
      const shift = /^1 << (\d+)$/.exec(expr);
      if (shift) return 2 ** Number(shift[1]);
      const product = expr.split('*').map((x) => Number(x.trim()));
      return product.reduce((a, b) => a * b, 1);
    };
    // (the object-entry limits are compared in plan-objects.test.ts)
    expect(PLAN_LIMITS).toMatchObject({
      maxPlanBytes: constant('MAX_PLAN_BYTES'),
      maxPageRanges: constant('MAX_PAGE_RANGES'),
      maxPagesPerRange: constant('MAX_PAGES_PER_RANGE'),
      maxTotalPages: constant('MAX_TOTAL_PAGES'),
      maxThreads: constant('MAX_THREADS'),
      maxNodes: constant('MAX_NODES'),
    });
  });

  it('refuses a newer version naming both versions, and a wrong format', () => {
    expect(rejects((p) => (p.version = 2))).toBe('version: plan format version 2 is newer than this reader, which reads version 1');
    expect(rejects((p) => (p.format = 'other'))).toBe('format: expected "numascope-plan", got "other"');
    expect(() => validatePlan('{')).toThrow(/not JSON/);
  });
});
