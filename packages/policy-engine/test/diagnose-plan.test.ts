/**
 * Plans from diagnosed fixes (diagnose/plan.ts): each machine-applicable fix becomes a valid plan
 * that carries that fix alone (page ranges, thread pins, object entries where the trace has
 * allocation sites); code-change fixes say why they have none; fix ids are stable.
 */
import { describe, expect, it } from 'vitest';
import { diagnose, type Diagnosis } from '../src/diagnose/diagnose.js';
import { planFromFix } from '../src/diagnose/plan.js';
import { PlanBuildError } from '../src/plan/build.js';
import { validatePlan } from '../src/plan/schema.js';
import type { Trace } from '../src/trace/types.js';
import { textTrace, PAGE_BASE_ADDRESS } from './helpers/text-trace.js';

const MACHINE = 'amd-opteron-8385-4p';
const BASE = `0x${PAGE_BASE_ADDRESS.toString(16)}`;
const DURATION_US = 10_000;
const AT = { createdAt: '2026-11-24T12:00:00Z', traceName: 't.numascope' };

function sampleRows(pairs: Array<{ thread: number; page: number; op?: string; offset?: number; event?: string }>, n = 10, weight = 5000): string {
  const rows: string[] = ['time_us thread page op weight offset event'];
  for (let k = 0; k < n; k++) {
    pairs.forEach((p, i) => {
      const t = Math.floor(((k * pairs.length + i) * DURATION_US) / (n * pairs.length));
      rows.push(`${t} ${p.thread} ${p.page} ${p.op ?? 'load'} ${weight} ${p.offset ?? 0} ${p.event ?? 'synthetic'}`);
    });
  }
  return rows.join('\n');
}

const THREADS = ['node name', ...[0, 1, 2, 3].map((t) => `${t} worker-${t}`)].join('\n');
const PAGES = ['page node', ...Array.from({ length: 16 }, (_, p) => `${p} 0`)].join('\n');
const ALLOC = `address size site\n${BASE} 65536 build@app.c:42`;

function withProcess(trace: Trace): Trace {
  trace.manifest.process = { pid: 1000, startTimeTicks: '172045', command: ['./app'], attached: false, exitCode: null };
  return trace;
}

function blockTrace(): Trace {
  const pairs = [0, 1, 2, 3].flatMap((t) => [0, 1, 2, 3].map((k) => ({ thread: t, page: t * 4 + k, op: k === 0 ? 'store' : 'load' })));
  return withProcess(textTrace({ machine: MACHINE, threads: THREADS, pages: PAGES, samples: sampleRows(pairs), durationUs: DURATION_US, allocations: ALLOC }));
}

const pageAt = (k: number) => `0x${(PAGE_BASE_ADDRESS + BigInt(k) * 4096n).toString(16)}`;

describe('plans from diagnosed fixes', () => {
  it('fix ids are <issue id>/<fix kind>, the same on every diagnosis of the trace', () => {
    const t = blockTrace();
    const a = diagnose(t);
    const b = diagnose(t);
    expect(a.issues.map((i) => i.fix.id)).toEqual(['remote-access:a0/block-wise-interleave']);
    expect(b.issues.map((i) => i.fix.id)).toEqual(a.issues.map((i) => i.fix.id));
  });

  it('block-wise interleave: one move range per thread block to the thread\'s node, every block kept, each thread pinned', () => {
    const t = blockTrace();
    const d = diagnose(t);
    const plan = planFromFix(t, d, 'remote-access:a0/block-wise-interleave', AT);
    expect(validatePlan(JSON.parse(JSON.stringify(plan)))).toBeTruthy();
    expect(plan.source.policy).toBe('diagnose:remote-access:a0/block-wise-interleave');
    // Thread t's block is pages 4t..4t+3, the thread runs on node t (the machine's node ids 0-3).
    expect(plan.pageRanges.map((r) => [r.start, r.end, r.action, r.toNodes])).toEqual(
      [0, 1, 2, 3].map((t) => [pageAt(4 * t), pageAt(4 * t + 4), 'move', [t]]),
    );
    // Thread 0's block is already on node 0: kept, so that apply checks the whole split.
    expect(plan.pageRanges[0]!.expectedNodes).toEqual({ '0': 4 });
    expect(plan.expected.pagesToMove).toBe(12);
    expect(plan.expected.pagesPerNodeAfter).toEqual({ '0': 4, '1': 4, '2': 4, '3': 4 });
    expect(plan.threads.map((p) => [p.tid, p.toNodes, p.name])).toEqual([
      [1000, [0], 'worker-0'],
      [1001, [1], 'worker-1'],
      [1002, [2], 'worker-2'],
      [1003, [3], 'worker-3'],
    ]);
    expect(plan.expected.threadsToPin).toBe(4);
    // A block per thread is no memory policy: no object entry, and the summary says why.
    expect(plan.objects).toBeUndefined();
    expect(plan.source.summary).toMatch(/no object entry: a block per thread/);
  });

  it('page interleave: the shared pages interleaved over all nodes, the allocation site interleaved at the next launch', () => {
    const pairs = [0, 1, 2, 3].flatMap((t) => Array.from({ length: 16 }, (_, p) => ({ thread: t, page: p, op: p % 2 === 0 ? 'store' : 'load' })));
    const t = withProcess(textTrace({ machine: MACHINE, threads: THREADS, pages: PAGES, samples: sampleRows(pairs), durationUs: DURATION_US, allocations: ALLOC }));
    const d = diagnose(t);
    const fix = d.issues.find((i) => i.kind === 'page-sharing')!.fix;
    expect(fix.id).toBe('page-sharing:a0/page-interleave');
    const plan = planFromFix(t, d, fix.id, AT);
    expect(plan.pageRanges).toHaveLength(1);
    expect(plan.pageRanges[0]).toMatchObject({ start: pageAt(0), end: pageAt(16), action: 'interleave', toNodes: [0, 1, 2, 3], expectedNodes: { '0': 16 } });
    expect(plan.expected.pagesToMove).toBe(12);
    expect(plan.threads).toEqual([]);
    expect(plan.objects).toHaveLength(1);
    expect(plan.objects![0]).toMatchObject({ policy: 'interleave', nodes: [0, 1, 2, 3], size: { min: 65536, max: 65536 }, frames: [{ module: '/opt/app', buildId: '00ff', offset: '0x1000' }] });
  });

  it('move to a node: an object used by threads of one node only moves there, bound there at the next launch', () => {
    const pairs = [{ thread: 1, page: 0 }, { thread: 1, page: 1 }, { thread: 1, page: 2 }];
    const threads = ['node name', '0 main', '1 worker-1'].join('\n');
    const t = withProcess(textTrace({ machine: MACHINE, threads, pages: PAGES, samples: sampleRows(pairs), durationUs: DURATION_US, allocations: ALLOC }));
    const d = diagnose(t);
    const issue = d.issues[0]!;
    expect(issue.fix.kind).toBe('move-to-node');
    expect(issue.fix.text).toMatch(/node 1/);
    const plan = planFromFix(t, d, issue.fix.id, AT);
    expect(plan.pageRanges.map((r) => [r.start, r.end, r.action, r.toNodes])).toEqual([[pageAt(0), pageAt(3), 'move', [1]]]);
    expect(plan.threads).toEqual([]);
    expect(plan.objects![0]).toMatchObject({ policy: 'bind', nodes: [1] });
  });

  it('thread binding: the migrating thread pinned to the node it ran on longest, no page range', () => {
    const moves = ['time_us thread node', ...Array.from({ length: 20 }, (_, k) => `${(k + 1) * 400} 1 ${k % 3 === 0 ? 0 : 2}`)].join('\n');
    const pages = ['page node', '0 1', '1 1'].join('\n');
    const t = withProcess(textTrace({ machine: MACHINE, threads: THREADS, pages, samples: sampleRows([{ thread: 1, page: 0 }], 10, 10), durationUs: DURATION_US, placements: moves }));
    const d = diagnose(t);
    const fix = d.issues.find((i) => i.kind === 'thread-migration')!.fix;
    expect(fix.id).toBe('thread-migration:t1/thread-binding');
    const plan = planFromFix(t, d, fix.id, AT);
    expect(plan.pageRanges).toEqual([]);
    expect(plan.threads).toHaveLength(1);
    expect(plan.threads[0]).toMatchObject({ tid: 1001, toNodes: [2], expectedNode: 2 });
    // No allocation sites in this trace: the pin names the tid only.
    expect(plan.threads[0]!.order).toBeUndefined();
  });

  it('code-change fixes (replication of a read-mostly object, padding, thread counts) say why they have no plan', () => {
    const pairs = [0, 1, 2, 3].flatMap((t) => Array.from({ length: 16 }, (_, p) => ({ thread: t, page: p })));
    const t = withProcess(textTrace({ machine: MACHINE, threads: THREADS, pages: PAGES, samples: sampleRows(pairs), durationUs: DURATION_US, allocations: ALLOC }));
    const d = diagnose(t);
    const fix = d.issues[0]!.fix;
    expect(fix.kind).toBe('replicate');
    expect(fix.planable).toBe(false);
    expect(fix.noPlan).toMatch(/code change/);
    expect(() => planFromFix(t, d, fix.id, AT)).toThrow(/has no plan: replication is a code change/);

    const line = withProcess(
      textTrace({
        machine: MACHINE,
        threads: THREADS,
        pages: ['page node', '0 0'].join('\n'),
        samples: sampleRows([{ thread: 0, page: 0, op: 'store', offset: 0, event: 'ibs-op' }, { thread: 1, page: 0, op: 'store', offset: 8, event: 'ibs-op' }], 50, 1),
        durationUs: DURATION_US,
        allocations: `address size site\n${BASE} 4096 counters@stats.c:7`,
      }),
    );
    const dl = diagnose(line);
    const padding = dl.issues.find((i) => i.kind === 'false-sharing')!.fix;
    expect(padding.noPlan).toMatch(/padding is a code change/);
    expect(() => planFromFix(line, dl, padding.id, AT)).toThrow(PlanBuildError);
  });

  it('an unknown fix id names the fixes the trace has', () => {
    const t = blockTrace();
    const d: Diagnosis = diagnose(t);
    expect(() => planFromFix(t, d, 'remote-access:a9/page-interleave', AT)).toThrow(/no diagnosed fix "remote-access:a9\/page-interleave"; the fixes of this trace are: remote-access:a0\/block-wise-interleave/);
    // The issue id works too.
    expect(planFromFix(t, d, 'remote-access:a0', AT).pageRanges).toHaveLength(4);
  });

  it('a trace without a process has no plan', () => {
    const t = blockTrace();
    t.manifest.process = null;
    expect(() => planFromFix(t, diagnose(t), 'remote-access:a0/block-wise-interleave', AT)).toThrow(/manifest.process is null/);
  });
});
