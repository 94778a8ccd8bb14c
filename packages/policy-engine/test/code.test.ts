/**
 * Code attribution (src/code/): a hand-built v3 trace where three functions first-touch three
 * buffers through different stacks (one through libc's memset, so the code-site rule decides),
 * and a fourth reads two of them; the function table, the call tree and the trace without stacks.
 */
import { describe, expect, it } from 'vitest';
import { callTree } from '../src/code/call-tree.js';
import { codeFrames, isRuntimeFrame } from '../src/code/frames.js';
import { dataObjects, functionTable, objectLabel } from '../src/code/functions.js';
import { numericColumn } from '../src/trace/columns.js';
import { CODE_MACHINE, CODE_TRACE } from './helpers/code-trace.js';
import { textTrace } from './helpers/text-trace.js';

const codeTrace = () => textTrace(CODE_TRACE);

describe('code frames', () => {
  it('a sample\'s frames innermost first, its self frame and its code site (the runtime rule)', () => {
    const code = codeFrames(codeTrace());
    expect(code.available).toBe(true);
    const names = (frames: number[]) => frames.map((f) => code.functions[code.frames.functionOf[f]!]!.name);
    expect(names(code.framesOf(2))).toEqual(['memset', 'init_b', 'worker', 'start_thread']);
    expect(names([code.selfFrame(2)])).toEqual(['memset']);
    expect(names([code.siteFrame(2)])).toEqual(['init_b']);
    expect(code.framesOf(12)).toEqual([]);
    expect(code.selfFrame(12)).toBe(-1);
  });

  it('isRuntimeFrame follows the collector\'s is_runtime_frame', () => {
    const f = (modulePath: string | null, file: string | null, fn: string | null) => isRuntimeFrame({ modulePath, file, function: fn });
    expect(f('/usr/lib/x86_64-linux-gnu/libc.so.6', null, 'memset')).toBe(true);
    expect(f('/usr/lib/x86_64-linux-gnu/libstdc++.so.6', null, 'operator new')).toBe(true);
    expect(f('/lib64/ld-linux-x86-64.so.2', null, null)).toBe(true);
    expect(f('/opt/app', '/usr/include/c++/12/bits/stl_vector.h', 'std::vector<int>::vector')).toBe(true);
    expect(f('/opt/app', '/rustc/abc/library/core/src/ptr/mod.rs', 'core::ptr::write')).toBe(true);
    expect(f('/opt/app', null, 'alloc::raw_vec::RawVec<T>::allocate_in')).toBe(true);
    expect(f('/opt/app', '/src/app.c', 'main')).toBe(false);
    expect(f('/opt/libcrypto.so.3', null, 'sha256')).toBe(false);
  });
});

describe('functionTable', () => {
  it('by code site: each buffer\'s first touches go to the function and line that touched it, with their nodes', () => {
    const t = functionTable(codeTrace());
    expect(t.available).toBe(true);
    expect(t.by).toBe('site');
    const row = (name: string) => t.rows.find((r) => r.function === name)!;
    expect(t.rows.map((r) => r.function)).toEqual(['compute', 'fill_c', 'init_a', 'init_b']);
    expect(row('init_a')).toMatchObject({ location: 'app.c:10', firstTouches: 2, accesses: 0, firstTouchesByNode: [{ node: 0, firstTouches: 2 }], pagesSampled: 2, firstTouchPages: [{ node: 0, pages: 2 }], module: '/opt/app', runtime: false });
    // memset is libc's: the first touches of B are init_b's, at its line, not memset's.
    expect(row('init_b')).toMatchObject({ location: 'app.c:20', firstTouches: 2, firstTouchPages: [{ node: 1, pages: 2 }] });
    expect(t.rows.some((r) => r.function === 'memset')).toBe(false);
    // Page 6 has two fault rows: four first touches, three pages sampled.
    expect(row('fill_c')).toMatchObject({ location: 'app.c:30', firstTouches: 4, samples: 4, firstTouchesByNode: [{ node: 2, firstTouches: 4 }], pagesSampled: 3, firstTouchPages: [{ node: 2, pages: 3 }] });
    expect(row('init_a').objects).toEqual([{ site: 'alloc_a app.c:5', samples: 2, accesses: 0, firstTouches: 2, allocation: 0, region: -1 }]);
    expect(row('init_b').objects.map((o) => o.site)).toEqual(['alloc_b app.c:6']);
    expect(row('fill_c').objects.map((o) => o.site)).toEqual(['alloc_c app.c:7']);
  });

  it('first touches by node are weighted (adaptive sampling: a sample stands for `weight` faults), next to the distinct pages sampled', () => {
    // fill_c's four fault rows stand for 1 + 3 + 2 + 4 faults; init_b's first one is on a page of unknown node.
    const samples = CODE_TRACE.samples.replace(/^(\s+5\s+2\s+4\s+fault\s+)1/m, '$13').replace(/^(\s+7\s+2\s+6\s+fault\s+)1/m, '$12').replace(/^(\s+8\s+2\s+6\s+fault\s+)1/m, '$14');
    const pages = CODE_TRACE.pages.replace(/^(\s+2\s+)1/m, '$1-1');
    const t = functionTable(textTrace({ ...CODE_TRACE, samples, pages }));
    const row = (name: string) => t.rows.find((r) => r.function === name)!;
    expect(row('fill_c')).toMatchObject({ firstTouches: 10, firstTouchesByNode: [{ node: 2, firstTouches: 10 }], pagesSampled: 3, firstTouchPages: [{ node: 2, pages: 3 }] });
    expect(row('init_b')).toMatchObject({ firstTouches: 2, firstTouchesByNode: [{ node: 1, firstTouches: 1 }, { node: -1, firstTouches: 1 }], pagesSampled: 2, firstTouchPages: [{ node: 1, pages: 1 }, { node: -1, pages: 1 }] });
    expect(t.totals.firstTouches).toBe(14);
  });

  it('local and remote share, mean latency in ns (the recorded clock), lines and objects of the reader', () => {
    const t = functionTable(codeTrace());
    const compute = t.rows[0]!;
    expect(compute.function).toBe('compute');
    expect(compute).toMatchObject({ accesses: 400, loads: 400, stores: 0, firstTouches: 0, local: 300, remote: 100, unknownLocality: 0 });
    expect(compute.remoteShare).toBeCloseTo(0.25, 12);
    // (200 + 200 + 200 + 600) / 4 cycles at 2 GHz.
    expect(compute.meanLatencyCycles).toBeCloseTo(300, 9);
    expect(compute.meanLatencyNs).toBeCloseTo(150, 9);
    expect(t.clock).toMatchObject({ ghz: 2 });
    expect(compute.location).toBe('app.c:70');
    expect(compute.lines).toEqual([
      { file: '/src/app.c', line: 70, accesses: 300, firstTouches: 0 },
      { file: '/src/app.c', line: 71, accesses: 100, firstTouches: 0 },
    ]);
    expect(compute.objects).toEqual([
      { site: 'alloc_a app.c:5', samples: 3, accesses: 300, firstTouches: 0, allocation: 0, region: -1 },
      { site: 'alloc_b app.c:6', samples: 1, accesses: 100, firstTouches: 0, allocation: 1, region: -1 },
    ]);
    expect(t.totals).toEqual({ samples: 13, withStack: 12, accesses: 500, firstTouches: 8, withoutStack: { accesses: 100, firstTouches: 0 }, siteFallbacks: 0 });
  });

  it('by self frame: memset gets B\'s first touches; filters by op, thread, node and time', () => {
    const self = functionTable(codeTrace(), { by: 'self' });
    const memset = self.rows.find((r) => r.function === 'memset')!;
    expect(memset).toMatchObject({ module: '/usr/lib/libc.so.6', runtime: true, firstTouches: 2, location: null, firstTouchesByNode: [{ node: 1, firstTouches: 2 }], firstTouchPages: [{ node: 1, pages: 2 }] });
    expect(self.rows.some((r) => r.function === 'init_b')).toBe(false);
    const faults = functionTable(codeTrace(), { op: 'fault' });
    expect(faults.rows.map((r) => r.function)).toEqual(['fill_c', 'init_a', 'init_b']);
    expect(functionTable(codeTrace(), { threads: [1] }).rows.map((r) => r.function)).toEqual(['init_b']);
    const node1 = functionTable(codeTrace(), { node: 1 });
    expect(node1.rows.map((r) => [r.function, r.accesses, r.firstTouches])).toEqual([['compute', 100, 0], ['init_b', 0, 2]]);
    const late = functionTable(codeTrace(), { range: { fromUs: 11, toUs: 13 } });
    expect(late.rows.map((r) => [r.function, r.accesses])).toEqual([['compute', 200]]);
    expect(functionTable(codeTrace(), { limit: 2 }).rows).toHaveLength(2);
    expect(functionTable(codeTrace(), { limit: 2 }).functionCount).toBe(4);
  });

  it('filters by locality (memory on the cpu\'s node or another) and by data object (allocation site)', () => {
    const local = functionTable(codeTrace(), { locality: 'local' });
    expect(local.filters).toMatchObject({ locality: 'local', object: null });
    // Thread 0 runs on node 0: its reads of A are local, its read of B (node 1) remote; first touches are where their thread runs.
    expect(local.rows.map((r) => [r.function, r.accesses, r.firstTouches])).toEqual([['compute', 300, 0], ['fill_c', 0, 4], ['init_a', 0, 2], ['init_b', 0, 2]]);
    const remote = functionTable(codeTrace(), { locality: 'remote' });
    expect(remote.rows.map((r) => [r.function, r.accesses, r.remote])).toEqual([['compute', 100, 100]]);
    const b = functionTable(codeTrace(), { object: 'alloc_b app.c:6' });
    expect(b.filters.object).toBe('alloc_b app.c:6');
    expect(b.rows.map((r) => [r.function, r.accesses, r.firstTouches])).toEqual([['compute', 100, 0], ['init_b', 0, 2]]);
    expect(b.rows.every((r) => r.objects.every((o) => o.site === 'alloc_b app.c:6'))).toBe(true);
    expect(functionTable(codeTrace(), { object: 'nowhere.c:1' }).rows).toEqual([]);
    expect(callTree(codeTrace(), { object: 'alloc_a app.c:5' }).totalWeight).toBe(2 + 300);
    expect(callTree(codeTrace(), { locality: 'remote' }).totalWeight).toBe(100);
    // objectLabel names an allocation as the filter and FunctionObject.site do.
    expect(objectLabel(codeTrace(), 2)).toBe('alloc_c app.c:7');
    expect(objectLabel(codeTrace(), 3)).toBeNull();
    expect(dataObjects(codeTrace())).toEqual([
      { object: 'alloc_a app.c:5', allocations: 1, samples: 5, weight: 302 },
      { object: 'alloc_c app.c:7', allocations: 1, samples: 5, weight: 104 },
      { object: 'alloc_b app.c:6', allocations: 1, samples: 3, weight: 102 },
    ]);
    expect(functionTable(codeTrace(), { objectLimit: 1 }).rows[0]!.objects).toHaveLength(1);
  });

  it('a trace without stacks: not available, with the code-locations reason', () => {
    const t = textTrace({ machine: CODE_MACHINE, threads: 'thread node\n0 0', pages: 'page node\n0 0', samples: 'time_us thread page op\n1 0 0 load' });
    const table = functionTable(t);
    expect(table.available).toBe(false);
    expect(table.rows).toEqual([]);
    expect(table.reason).toMatch(/no sample has a call stack/);
    expect(callTree(t).available).toBe(false);
  });
});

describe('callTree', () => {
  it('a prefix tree from the outermost frame, whose totals add up to the weighted sample count', () => {
    const trace = codeTrace();
    const tree = callTree(trace);
    const weight = numericColumn<Uint32Array>(trace.tables.samples, 'weight');
    const stack = numericColumn<Int32Array>(trace.tables.samples, 'stack');
    let withStack = 0;
    let without = 0;
    weight.forEach((w, i) => (stack[i]! >= 0 ? (withStack += w) : (without += w)));
    expect(tree.totalWeight).toBe(withStack);
    expect(tree.nodes[0]!.total).toBe(withStack);
    expect(tree.withoutStackWeight).toBe(without);
    // Every node: total = self + the children's totals; selves add up to the root's total.
    for (let n = 0; n < tree.nodes.length; n++) {
      const children = tree.nodes.filter((c) => c.parent === n);
      expect(tree.nodes[n]!.total).toBe(tree.nodes[n]!.self + children.reduce((s, c) => s + c.total, 0));
    }
    expect(tree.nodes.reduce((s, x) => s + x.self, 0)).toBe(withStack);
    const path = (n: number): string[] => (n <= 0 ? [] : [...path(tree.nodes[n]!.parent), tree.nodes[n]!.name]);
    const leaves = tree.nodes.map((_, n) => n).filter((n) => tree.nodes[n]!.self > 0).map((n) => `${path(n).join(' > ')} ${tree.nodes[n]!.self}`);
    // By site, memset folds into init_b; compute's two lines are one function node.
    expect(leaves.sort()).toEqual(['main > compute 400', 'main > init_a 2', 'start_thread > worker > fill_c 4', 'start_thread > worker > init_b 2']);
    expect(tree.truncated).toBe(false);
    // Each node's busiest line; compute's 300 at line 70 against 100 at 71.
    const at = (name: string) => tree.nodes.find((n) => n.name === name)!.location;
    expect([at('all'), at('main'), at('compute'), at('init_b'), at('worker')]).toEqual([null, 'app.c:51', 'app.c:70', 'app.c:20', 'app.c:61']);
    const self = callTree(trace, { by: 'self' });
    expect(self.nodes.some((n) => n.name === 'memset' && n.self === 2)).toBe(true);
  });

  it('is bounded: past the node limit a stack\'s weight stays with its deepest node, and it says so', () => {
    const tree = callTree(codeTrace(), { limit: 4 });
    expect(tree.nodes).toHaveLength(4);
    expect(tree.truncated).toBe(true);
    expect(tree.truncatedWeight).toBeGreaterThan(0);
    expect(tree.nodes[0]!.total).toBe(tree.totalWeight);
    expect(tree.nodes.reduce((s, x) => s + x.self, 0)).toBe(tree.totalWeight);
  });
});
