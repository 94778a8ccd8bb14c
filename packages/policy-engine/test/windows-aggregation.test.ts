/**
 * The on-demand window builder (engine/windows.ts) against a plain Map-based reference on seeded
 * random traces: rows in time order and shuffled, (page, thread) keys that fit 32 bits and ones
 * that do not; the bounded window cache; and replayAll (one pass for every policy) against each
 * policy replayed on its own.
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../src/analyze/analyze.js';
import type { AccessWindow, Placement, Policy } from '../src/model/contract.js';
import { isEngineError } from '../src/model/errors.js';
import { definePolicy, replayAll } from '../src/engine/run.js';
import { accessMatrix, simulateWindow } from '../src/engine/simulate.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { TraceWindows } from '../src/engine/windows.js';
import { getPreset } from '../src/machine/presets.js';
import { listPolicies } from '../src/policies/index.js';
import { readTrace } from '../src/trace/reader.js';
import type { Trace } from '../src/trace/types.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from './helpers/minimal-trace.js';

const DATA_SOURCES = ['local-dram', 'remote-dram', 'l1', 'l3'];
const OPS = ['load', 'store', 'fault'];

interface Spec {
  threads: number;
  pages: number;
  samples: number;
  durationUs: number;
  shuffle: boolean;
  seed: number;
  /** Every row at its own time (no ties), so "earliest" has one answer whatever the row order. */
  distinctTimes?: boolean;
  /** Some weights of 2^31 and more (too large to pack with the op in 32 bits). */
  bigWeights?: boolean;
  /** Only loads and stores from DRAM: every row counts (the builder then tests no row). */
  allCounted?: boolean;
}

/** A random trace on the 4-node Opteron preset; returns the trace and its rows for the reference. */
function randomTrace(spec: Spec): { trace: Trace; rows: Array<{ t: number; thread: number; page: number; op: string; ds: string; weight: number }> } {
  let x = spec.seed;
  const rnd = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
  const machine = getPreset('amd-opteron-8385-4p');
  const rows = Array.from({ length: spec.samples }, () => ({
    t: Math.floor(rnd() * spec.durationUs),
    // Skewed so some (page, thread) pairs repeat within a window.
    thread: Math.floor(rnd() ** 2 * spec.threads),
    page: Math.floor(rnd() ** 3 * spec.pages),
    op: OPS[Math.floor(rnd() * (spec.allCounted ? 2 : 2.2))]!,
    ds: DATA_SOURCES[Math.floor(rnd() * (spec.allCounted ? 2 : DATA_SOURCES.length))]!,
    weight: spec.bigWeights && rnd() < 0.3 ? 2 ** 31 + Math.floor(rnd() * (2 ** 31 - 1)) : Math.floor(rnd() * 4),
  }));
  rows.sort((a, b) => a.t - b.t);
  if (spec.distinctTimes) rows.forEach((r, i) => (r.t = i * Math.floor(spec.durationUs / spec.samples)));
  if (spec.shuffle) {
    for (let i = rows.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [rows[i], rows[j]] = [rows[j]!, rows[i]!];
    }
  }
  const c = emptyColumns();
  const T = spec.threads;
  c.threads = {
    tid: Int32Array.from({ length: T }, (_, i) => 100 + i),
    pid: new Int32Array(T).fill(100),
    name: Array.from({ length: T }, (_, i) => `t${i}`),
    first_seen_us: new Uint32Array(T),
    last_seen_us: new Uint32Array(T).fill(spec.durationUs),
    migrations: new BigInt64Array(T),
  };
  const P = spec.pages;
  c.pages = {
    address: BigUint64Array.from({ length: P }, (_, p) => 0x7f0000000000n + BigInt(p) * 4096n),
    region: new Int32Array(P).fill(-1),
    node: Int8Array.from({ length: P }, (_, p) => p % 4),
    page_size: new Uint32Array(P).fill(4096),
    first_touch_us: new BigInt64Array(P).fill(-1n),
    first_touch_thread: new Int32Array(P).fill(-1),
    first_touch_cpu: new Int16Array(P).fill(-1),
  };
  const n = rows.length;
  c.samples = {
    time_us: Uint32Array.from(rows, (r) => r.t),
    thread: Uint32Array.from(rows, (r) => r.thread),
    cpu: Int16Array.from(rows, (r) => machine.nodes[r.thread % 4]!.cpus[0]!),
    page: Int32Array.from(rows, (r) => r.page),
    offset: new Uint16Array(n),
    op: { values: OPS, indices: Int8Array.from(rows, (r) => OPS.indexOf(r.op)) },
    event: { values: ['synthetic'], indices: new Int8Array(n) },
    data_source: { values: DATA_SOURCES, indices: Int8Array.from(rows, (r) => DATA_SOURCES.indexOf(r.ds)) },
    hops: new Int8Array(n).fill(-1),
    node: new Int8Array(n).fill(-1),
    latency_cycles: new Uint32Array(n),
    stack: new Int32Array(n).fill(-1),
    hitm: new Int8Array(n).fill(-1),
    weight: Uint32Array.from(rows, (r) => r.weight),
  };
  const manifest = minimalManifest();
  manifest.machine = machine;
  manifest.capture.durationUs = spec.durationUs;
  return { trace: readTrace(writeTrace(manifest, c)), rows };
}

/** The reference: a Map per window, sorted by page then thread. */
function reference(rows: ReturnType<typeof randomTrace>['rows'], windowUs: number, windowCount: number) {
  const windows = Array.from({ length: windowCount }, () => new Map<string, { page: number; thread: number; loads: number; stores: number }>());
  for (const r of rows) {
    if ((r.op !== 'load' && r.op !== 'store') || (r.ds !== 'local-dram' && r.ds !== 'remote-dram')) continue;
    const w = Math.min(windowCount - 1, Math.floor(r.t / windowUs));
    const key = `${r.page}/${r.thread}`;
    const e = windows[w]!.get(key) ?? { page: r.page, thread: r.thread, loads: 0, stores: 0 };
    if (r.op === 'store') e.stores += r.weight || 1;
    else e.loads += r.weight || 1;
    windows[w]!.set(key, e);
  }
  return windows.map((m) => [...m.values()].sort((a, b) => a.page - b.page || a.thread - b.thread));
}

function entries(w: AccessWindow) {
  return Array.from(w.page, (page, i) => ({ page, thread: w.thread[i]!, loads: w.loads[i]!, stores: w.stores[i]! }));
}

describe('window aggregation (radix sort + merge) matches a Map-based reference', () => {
  const cases: Array<[string, Spec]> = [
    ['rows in time order', { threads: 13, pages: 700, samples: 20_000, durationUs: 50_000, shuffle: false, seed: 7 }],
    ['rows shuffled (counting sort by window)', { threads: 13, pages: 700, samples: 20_000, durationUs: 50_000, shuffle: true, seed: 8 }],
    ['one thread, one page', { threads: 1, pages: 1, samples: 500, durationUs: 10_000, shuffle: false, seed: 9 }],
    // 2^17 threads × 2^16 pages: (page, thread) needs 33 bits, so the builder sorts by thread then page.
    ['page and thread bits over 32 (two-key sort)', { threads: 131_073, pages: 65_537, samples: 30_000, durationUs: 20_000, shuffle: true, seed: 10 }],
    // Weights below 2^31 are packed with the op into the sorted payload; these are not.
    ['weights of 2^31 and more (row-indexed payload)', { threads: 13, pages: 700, samples: 20_000, durationUs: 50_000, shuffle: false, seed: 11, bigWeights: true }],
    ['every row counted (no row tested)', { threads: 13, pages: 700, samples: 20_000, durationUs: 50_000, shuffle: false, seed: 13, allCounted: true }],
    // Keys over 22 bits take a third radix pass.
    ['keys of more than 22 bits (three radix passes)', { threads: 300, pages: 40_000, samples: 30_000, durationUs: 20_000, shuffle: false, seed: 12 }],
  ];
  for (const [name, spec] of cases) {
    it(name, () => {
      const { trace, rows } = randomTrace(spec);
      const input = buildReplayInput(trace, { windowMs: 3 });
      const ref = reference(rows, 3000, input.windows.length);
      expect(input.windows.length).toBe(Math.ceil(spec.durationUs / 3000));
      let total = 0;
      for (const w of input.windows) {
        expect(entries(w)).toEqual(ref[w.index]);
        expect(w.sampleCount).toBe(input.windows.info(w.index).sampleCount);
        total += w.page.length;
      }
      expect(total).toBeGreaterThan(0);
      // Every row is either counted once or skipped: the sample counts add up to the counted rows.
      const counted = rows.filter((r) => (r.op === 'load' || r.op === 'store') && (r.ds === 'local-dram' || r.ds === 'remote-dram')).length;
      let samples = 0;
      for (let w = 0; w < input.windows.length; w++) samples += input.windows.info(w).sampleCount;
      expect(samples).toBe(counted);
    });
  }

  it('first-access fallbacks use the earliest access, in time order or not', () => {
    const sorted = randomTrace({ threads: 5, pages: 50, samples: 3000, durationUs: 9000, shuffle: false, seed: 3, distinctTimes: true });
    const shuffled = randomTrace({ threads: 5, pages: 50, samples: 3000, durationUs: 9000, shuffle: true, seed: 3, distinctTimes: true });
    const a = buildReplayInput(sorted.trace, { windowMs: 1 });
    const b = buildReplayInput(shuffled.trace, { windowMs: 1 });
    expect(Array.from(b.initial.threadNode)).toEqual(Array.from(a.initial.threadNode));
    expect(Array.from(b.firstTouchThread)).toEqual(Array.from(a.firstTouchThread));
  });
});

describe('access matrices summed from the rows', () => {
  it('equal accessMatrix over the built window for several placements at once, in order or not, every row counted or not', () => {
    for (const [shuffle, allCounted] of <Array<[boolean, boolean]>>[
      [false, false],
      [true, false],
      [false, true],
    ]) {
      const { trace } = randomTrace({ threads: 11, pages: 500, samples: 20_000, durationUs: 30_000, shuffle, seed: 31, allCounted });
      const input = buildReplayInput(trace, { windowMs: 3, cacheEntries: 0 });
      const n = input.machine.nodeCount;
      let x = 5;
      const rnd = () => ((x = (x * 1103515245 + 12345) >>> 0) / 4294967296);
      const placement = (): Placement => ({
        threadNode: Int16Array.from({ length: input.threadCount }, () => Math.floor(rnd() * n)),
        pageNode: Int16Array.from({ length: input.pageCount }, () => Math.floor(rnd() * n)),
        replicated: Uint8Array.from({ length: input.pageCount }, () => (rnd() < 0.2 ? 1 : 0)),
      });
      for (let w = 0; w < input.windows.length; w++) {
        const placements = [input.initial, placement(), placement()];
        const window = input.windows.get(w);
        const fromRows = input.windows.accessMatrices!(w, placements, n);
        expect(fromRows).toEqual(placements.map((p) => accessMatrix(input.machine, window, p)));
      }
    }
  });
});

describe('window cache', () => {
  const { trace } = randomTrace({ threads: 8, pages: 400, samples: 10_000, durationUs: 40_000, shuffle: false, seed: 21 });

  it('with no cache, windows are rebuilt on every pass; with room, built once', () => {
    const none = buildReplayInput(trace, { windowMs: 4, cacheEntries: 0 });
    const windows = none.windows as TraceWindows;
    expect(windows).toBeInstanceOf(TraceWindows);
    for (const _ of none.windows);
    for (const _ of none.windows);
    expect(windows.built).toBe(2 * windows.length);

    const all = buildReplayInput(trace, { windowMs: 4 });
    const cached = all.windows as TraceWindows;
    for (const _ of all.windows);
    for (const _ of all.windows);
    expect(cached.built).toBe(cached.length);
    // Built again or from the cache, a window is the same.
    expect(entries(windows.get(3))).toEqual(entries(cached.get(3)));
  });

  it('analyze builds each window once for all policies, even with no cache', () => {
    const result = analyze(trace, { windowMs: 4, cacheEntries: 0 });
    const windows = result.input.windows as TraceWindows;
    expect(result.policies.length).toBe(listPolicies().length);
    // One pass for the replays, one for the block-wise recommendation scan at most.
    expect(windows.built).toBeLessThanOrEqual(2 * windows.length);
  });

  it('info() never builds a window and names a bad index', () => {
    const input = buildReplayInput(trace, { windowMs: 4, cacheEntries: 0 });
    const windows = input.windows as TraceWindows;
    expect(windows.info(2).startUs).toBe(8000);
    expect(windows.built).toBe(0);
    expect(() => windows.get(windows.length)).toThrow(/window 10 out of range 0..9/);
  });
});

describe('replayAll', () => {
  const { trace } = randomTrace({ threads: 8, pages: 400, samples: 10_000, durationUs: 40_000, shuffle: false, seed: 22 });
  const input = buildReplayInput(trace, { windowMs: 4, cacheEntries: 0 });
  const options = { seed: 5, simulate: simulateWindow };

  it('gives every policy the same result as replaying it alone', () => {
    const together = replayAll(input, listPolicies(), options);
    listPolicies().forEach((policy, k) => {
      const alone = policy.replay(input, options);
      expect(together[k]!.policy).toBe(policy.id);
      expect(together[k]!.windows.map((w) => w.memoryLatencyNs)).toEqual(alone.windows.map((w) => w.memoryLatencyNs));
      expect(together[k]!.decisions.map((d) => d.explanation)).toEqual(alone.decisions.map((d) => d.explanation));
      expect(together[k]!.migratedBytes).toBe(alone.migratedBytes);
    });
  });

  it('reports progress per window', () => {
    const seen: number[] = [];
    replayAll(input, listPolicies().slice(0, 2), options, (done, total) => {
      expect(total).toBe(input.windows.length);
      seen.push(done);
    });
    expect(seen).toEqual(Array.from({ length: input.windows.length }, (_, i) => i + 1));
  });

  it('refuses a policy that asks for windows out of order', () => {
    const skipper: Policy = definePolicy({
      id: 'skipper',
      description: 'asks for window 1 first',
      *run() {
        yield 1;
        throw new Error('not reached');
      },
    });
    try {
      skipper.replay(input, options);
      expect.unreachable();
    } catch (e) {
      expect(isEngineError(e) && e.code).toBe('internal');
      expect(String(e)).toMatch(/policy skipper asked for window 1 while the replay is at window 0/);
    }
  });
});
