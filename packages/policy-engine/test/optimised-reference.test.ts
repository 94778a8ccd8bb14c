/**
 * The engine's optimised hot paths against straightforward reference implementations of the same
 * functions, on random inputs (docs/engine.md, "Benchmark"): the optimisations must not change a
 * single result, so every comparison is exact (toEqual on typed arrays compares every element).
 */
import { describe, expect, it } from 'vitest';
import type { AccessWindow, MachineModel, Placement, ReplayInput } from '../src/model/contract.js';
import { windowsOf } from '../src/model/contract.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';
import { ASYMSCHED_CONSTANTS as A, threadClusters, type ThreadCluster } from '../src/policies/asymsched.js';
import { windowLengthUs } from '../src/policies/common.js';
import { seededRandom, type SeededRandom } from '../src/policies/seeded-random.js';

/** A random window: entries sorted by page then thread, some pages with many sharers, some zero counts. */
function randomWindow(random: SeededRandom, threads: number, pages: number, entries: number): AccessWindow {
  const keys = new Set<number>();
  const hot = random.int(Math.max(1, pages));
  for (let k = 0; k < entries; k++) {
    // A fifth of the entries on one page, so that it has more sharers than MAX_SHARERS_PER_PAGE.
    const page = random.next() < 0.2 ? hot : random.int(pages);
    keys.add(page * threads + random.int(threads));
  }
  const sorted = [...keys].sort((a, b) => a - b);
  const count = (): number => (random.next() < 0.15 ? 0 : random.next() < 0.3 ? 1 + random.int(3) : random.int(5000));
  return {
    index: 0,
    startUs: 0,
    endUs: 100_000,
    sampleCount: sorted.length,
    thread: Int32Array.from(sorted, (k) => k % threads),
    page: Int32Array.from(sorted, (k) => Math.floor(k / threads)),
    loads: Float64Array.from(sorted, count),
    stores: Float64Array.from(sorted, count),
  };
}

function randomPlacement(random: SeededRandom, machine: MachineModel, threads: number, pages: number): Placement {
  const n = machine.nodeCount;
  return {
    threadNode: Int16Array.from({ length: threads }, () => random.int(n)),
    pageNode: Int16Array.from({ length: pages }, () => random.int(n)),
    replicated: Uint8Array.from({ length: pages }, () => (random.next() < 0.1 ? 1 : 0)),
  };
}

function inputOf(machine: MachineModel, threads: number, pages: number, window: AccessWindow, initial: Placement): ReplayInput {
  return {
    machine,
    threadCount: threads,
    pageCount: pages,
    pageBytes: 4096,
    windowUs: 100_000,
    windows: windowsOf([window]),
    initial,
    firstTouchThread: new Int32Array(pages).fill(-1),
    counters: null,
  } as ReplayInput;
}

/** threadClusters as first written: per-pair sharing in a matrix or a map, clusters by a map of roots. */
function threadClustersReference(input: ReplayInput, window: AccessWindow, placement: Placement): ThreadCluster[] {
  const T = input.threadCount;
  const n = input.machine.nodeCount;
  const total = new Float64Array(T);
  const dense = T <= 256 ? new Float64Array(T * T) : null;
  const sparse = dense ? null : new Map<number, number>();
  const addShared = (x: number, y: number, a: number): void => {
    const key = Math.min(x, y) * T + Math.max(x, y);
    if (dense) dense[key]! += a;
    else sparse!.set(key, (sparse!.get(key) ?? 0) + a);
  };
  const entryCount = window.page.length;
  let i = 0;
  while (i < entryCount) {
    const page = window.page[i]!;
    const sharers: Array<{ t: number; a: number }> = [];
    for (; i < entryCount && window.page[i] === page; i++) {
      const a = window.loads[i]! + window.stores[i]!;
      total[window.thread[i]!]! += a;
      if (a > 0) sharers.push({ t: window.thread[i]!, a });
    }
    if (sharers.length < 2) continue;
    const top = sharers.length <= A.MAX_SHARERS_PER_PAGE ? sharers : [...sharers].sort((x, y) => y.a - x.a || x.t - y.t).slice(0, A.MAX_SHARERS_PER_PAGE);
    for (let x = 0; x < top.length; x++) for (let y = x + 1; y < top.length; y++) addShared(top[x]!.t, top[y]!.t, Math.min(top[x]!.a, top[y]!.a));
  }
  const parent = Int32Array.from({ length: T }, (_, t) => t);
  const find = (t: number): number => {
    while (parent[t] !== t) t = parent[t] = parent[parent[t]!]!;
    return t;
  };
  const join = (key: number, shared: number): void => {
    const a = Math.floor(key / T);
    const b = key % T;
    if (shared >= A.SHARING_MIN_SHARE * Math.min(total[a]!, total[b]!)) {
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    }
  };
  if (dense) {
    for (let key = 0; key < dense.length; key++) if (dense[key]! > 0) join(key, dense[key]!);
  } else {
    for (const [key, shared] of sparse!) join(key, shared);
  }
  const byRoot = new Map<number, number[]>();
  for (let t = 0; t < T; t++) {
    if (total[t]! <= 0) continue;
    const r = find(t);
    const list = byRoot.get(r) ?? [];
    list.push(t);
    byRoot.set(r, list);
  }
  const clusterOf = new Int32Array(T).fill(-1);
  const clusters: ThreadCluster[] = [...byRoot.values()].map((threads, c) => {
    for (const t of threads) clusterOf[t] = c;
    const nodes = [...new Set(threads.map((t) => placement.threadNode[t]!))].sort((x, y) => x - y);
    return { threads, nodes, rbwMBps: 0, weight: 0, memoryBytesOnNode: new Float64Array(n) };
  });
  const remote = new Float64Array(clusters.length);
  i = 0;
  while (i < entryCount) {
    const page = window.page[i]!;
    const perCluster = new Map<number, number>();
    for (; i < entryCount && window.page[i] === page; i++) {
      const t = window.thread[i]!;
      const c = clusterOf[t]!;
      if (c < 0) continue;
      const a = window.loads[i]! + window.stores[i]!;
      perCluster.set(c, (perCluster.get(c) ?? 0) + a);
      const served = placement.replicated[page] ? placement.threadNode[t]! : placement.pageNode[page]!;
      if (served !== placement.threadNode[t]) remote[c]! += window.loads[i]! * (placement.replicated[page] ? 0 : 1) + window.stores[i]!;
    }
    let best = -1;
    for (const [c, a] of perCluster) {
      if (a <= 0) continue;
      if (best < 0 || a > perCluster.get(best)! || (a === perCluster.get(best) && c < best)) best = c;
    }
    if (best >= 0) clusters[best]!.memoryBytesOnNode[placement.pageNode[page]!]! += input.pageBytes;
  }
  const seconds = windowLengthUs(window) / 1e6;
  clusters.forEach((c, k) => {
    c.rbwMBps = (remote[k]! * A.ACCESS_BYTES) / seconds / 1e6;
    c.weight = c.rbwMBps > 1 ? Math.log(c.rbwMBps) : 0;
  });
  return clusters;
}

describe('optimised paths equal their reference implementations on random inputs', () => {
  const genoa = machineModel(getPreset('amd-genoa-2s-nps4'));

  it('threadClusters (dense and sparse pair sharing, many-sharer pages, replicated pages)', () => {
    const random = seededRandom(12);
    let clustersSeen = 0;
    for (let round = 0; round < 60; round++) {
      // Up to 256 threads: the dense pair matrix; above: the map.
      const threads = round % 3 === 2 ? 257 + random.int(200) : 1 + random.int(80);
      const pages = 1 + random.int(400);
      const window = randomWindow(random, threads, pages, random.int(3000));
      const placement = randomPlacement(random, genoa, threads, pages);
      const input = inputOf(genoa, threads, pages, window, placement);
      const got = threadClusters(input, window, placement);
      expect(got).toEqual(threadClustersReference(input, window, placement));
      clustersSeen += got.length;
    }
    expect(clustersSeen).toBeGreaterThan(60);
  });
});
