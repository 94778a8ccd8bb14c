/**
 * AsymSched's thread clusters from the sharing measured on every window so far (SharingHistory,
 * docs/policies.md AsymSched step 1), not from one sparse window: the two-groups sample program at
 * three sampling densities, sparse synthetic windows, neighbouring slices of one array, a phase
 * change, and the rule that a clustering still forming moves no thread.
 *
 * The simulated times are not asserted (the traffic model changes); only the clusters, the
 * decisions and the direction of the prediction.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// The sample-trace generator (sample-traces/generator), to build the same program at other densities.
import { generateTraceBytes } from '../../../sample-traces/generator/generate.js';
import { analyze } from '../src/analyze/analyze.js';
import { buildReplayInput } from '../src/analyze/replay-input.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { machineModel } from '../src/machine/model.js';
import { getPreset } from '../src/machine/presets.js';
import { windowsOf, type AccessWindow, type ReplayInput } from '../src/model/contract.js';
import { ASYMSCHED_CONSTANTS as A, asymschedPolicy, SharingHistory, threadClusters } from '../src/policies/asymsched.js';
import { observedPolicy } from '../src/policies/observed.js';
import { seededRandom } from '../src/policies/seeded-random.js';
import { readTrace } from '../src/trace/reader.js';
import { replayInputFromTable } from './helpers/replay-table.js';

const MACHINE_A = 'amd-asymsched-machine-a';
const options = { seed: 1, simulate: simulateWindow };
const WIDEST_PAIRS = ['0,1', '2,3', '4,5', '6,7'];
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
// sample-traces/generator/models.ts, model two-groups: group A = threads 0-7 on nodes 2 and 7,
// group B = threads 8-15 on nodes 3 and 6, each group sharing its own 8 MiB buffer.
const GROUP_A = range(0, 7);
const GROUP_B = range(8, 15);

/** Components of the history's links, as sorted thread lists. */
function components(history: SharingHistory, minShare?: number): number[][] {
  const roots = history.linkRoots(minShare);
  const byRoot = new Map<number, number[]>();
  roots.forEach((r, t) => byRoot.set(r, [...(byRoot.get(r) ?? []), t]));
  return [...byRoot.values()];
}

describe('two-groups (sample-traces): the two groups and their placement at three densities', () => {
  const committed = fileURLToPath(new URL('../../../sample-traces/two-groups.numascope', import.meta.url));
  const densities = [
    { samples: 10_000, bytes: () => generateTraceBytes({ model: 'two-groups', seed: 1, samples: 10_000, machine: MACHINE_A }) },
    { samples: 50_000, bytes: () => new Uint8Array(readFileSync(committed)) },
    { samples: 200_000, bytes: () => generateTraceBytes({ model: 'two-groups', seed: 1, samples: 200_000, machine: MACHINE_A }) },
  ];

  for (const { samples, bytes } of densities) {
    it(`${samples} samples${samples === 50_000 ? ' (the committed trace)' : ''}: threads 0-7 and 8-15, each moved to a 5600 MB/s pair`, { timeout: 60_000 }, () => {
      const input = buildReplayInput(readTrace(bytes()), { windowMs: 100 });
      const replay = asymschedPolicy.replay(input, options);
      const pins = replay.decisions.filter((d) => d.kind === 'pin-threads');
      // One placement, scored and chosen: both groups move in the same window, and nothing moves after.
      expect(pins.map((d) => d.threads)).toEqual([GROUP_A, GROUP_B]);
      const w = pins[0]!.window;
      expect(pins[1]!.window).toBe(w);
      for (const pin of pins) expect(WIDEST_PAIRS).toContain(pin.toNodes!.join(','));
      expect(new Set([...pins[0]!.toNodes!, ...pins[1]!.toNodes!]).size).toBe(4);
      expect(pins[0]!.explanation).toMatch(/moved from nodes 2,7 \(bw 5700 MB\/s\) to nodes \d,\d \(bw 11200 MB\/s\)/);
      expect(pins[1]!.explanation).toMatch(/moved from nodes 3,6 \(bw 4900 MB\/s\) to nodes \d,\d \(bw 11200 MB\/s\)/);
      // The decision says which groups were found, from how many samples over how many windows.
      let sampleCount = 0;
      for (let i = 0; i <= w; i++) sampleCount += input.windows.info(i).sampleCount;
      const span = w === 0 ? 'window 0' : `windows 0–${w}`;
      expect(pins[0]!.explanation).toContain(
        `2 clusters: {threads 0-7} on nodes 2,7, {threads 8-15} on nodes 3,6, from the sharing measured on ${span} (${sampleCount} samples over ${w + 1} window${w === 0 ? '' : 's'}, older windows weighted with a half-life of ${A.SHARING_HALF_LIFE_WINDOWS} windows)`,
      );
      // Every later window finds the same two groups on their new pairs, and keeps them there.
      const later = replay.decisions.filter((d) => d.window > w && d.kind !== 'migrate');
      expect(later.length).toBe(input.windows.length - 1 - w);
      for (const d of later) {
        expect(d.kind).toBe('none');
        expect(d.explanation).toMatch(/^threads stay: .*2 clusters: \{threads 0-7\} on nodes \d,\d, \{threads 8-15\} on nodes \d,\d, from the sharing/);
      }
      const finalNodes = (threads: number[]) => [...new Set(threads.map((t) => replay.finalPlacement.threadNode[t]!))].sort().join(',');
      expect(finalNodes(GROUP_A)).toBe(pins[0]!.toNodes!.join(','));
      expect(finalNodes(GROUP_B)).toBe(pins[1]!.toNodes!.join(','));
      // Before the move, no window moved a part of a group.
      for (const d of replay.decisions.filter((x) => x.window < w)) expect(d.kind).toBe('none');
      // Direction: from the second window after the move (the memory has followed), the replay's
      // windows are predicted faster, together, than the same windows as recorded.
      const observed = observedPolicy.replay(buildReplayInput(readTrace(bytes()), { windowMs: 100 }), options);
      const after = (windows: { predictedUs: number }[]) => windows.slice(w + 2).reduce((sum, m) => sum + m.predictedUs, 0);
      expect(after(replay.windows)).toBeLessThan(after(observed.windows));
      // The sharing over the whole recording gives exactly the two groups.
      const history = new SharingHistory(input);
      for (const window of input.windows) history.add(window);
      expect(components(history)).toEqual([GROUP_A, GROUP_B]);
      for (const a of GROUP_A) for (const b of GROUP_B) expect(history.sharedShare(a, b)).toBe(0);
      for (const group of [GROUP_A, GROUP_B]) {
        for (const a of group) expect(Math.max(...group.filter((b) => b !== a).map((b) => history.sharedShare(a, b)))).toBeGreaterThan(A.SHARING_MIN_SHARE);
      }
    });
  }

  it('the committed trace: AsymSched predicts a gain on machine A (steady state and replay)', { timeout: 60_000 }, () => {
    const r = analyze(readTrace(new Uint8Array(readFileSync(committed))), { baseline: 'observed' });
    const asym = r.policies.find((p) => p.policy === 'asymsched')!;
    expect(asym.predictedSpeedup).toBeGreaterThan(1);
    expect(asym.transient.predictedSpeedup).toBeGreaterThan(1);
    expect(asym.placementsEvaluated).toBeGreaterThan(0);
  });
});

/** A sampled window: each thread takes `samples` samples of weight `weight`, each on a page drawn uniformly from its pages. */
function sampledWindow(index: number, threadPages: readonly number[][], samples: number, weight: number, seed: number): AccessWindow {
  const random = seededRandom(seed * 7919 + index);
  const counts = new Map<number, number>();
  const T = threadPages.length;
  threadPages.forEach((pages, t) => {
    for (let s = 0; s < samples; s++) {
      const key = pages[random.int(pages.length)]! * T + t;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  });
  const keys = [...counts.keys()].sort((a, b) => a - b);
  return {
    index,
    startUs: index * 100_000,
    endUs: (index + 1) * 100_000,
    sampleCount: samples * T,
    thread: Int32Array.from(keys, (k) => k % T),
    page: Int32Array.from(keys, (k) => Math.floor(k / T)),
    loads: Float64Array.from(keys, (k) => Math.round(counts.get(k)! * weight * 0.7)),
    stores: Float64Array.from(keys, (k) => counts.get(k)! * weight - Math.round(counts.get(k)! * weight * 0.7)),
  };
}

function inputOf(threads: number, pages: number, windows: AccessWindow[]): ReplayInput {
  return {
    machine: machineModel(getPreset(MACHINE_A)),
    threadCount: threads,
    pageCount: pages,
    pageBytes: 4096,
    windowUs: 100_000,
    windows: windowsOf(windows),
    // As two-groups on Machine A: threads 0-7 on nodes 2 and 7, threads 8-15 on nodes 3 and 6.
    initial: {
      threadNode: Int16Array.from({ length: threads }, (_, t) => (t < 8 ? (t % 2 === 0 ? 2 : 7) : t % 2 === 0 ? 3 : 6)),
      pageNode: new Int16Array(pages).fill(2),
      replicated: new Uint8Array(pages),
    },
    firstTouchThread: new Int32Array(pages).fill(-1),
    counters: null,
  };
}

describe('SharingHistory: sharing that does not depend on the sampling density', () => {
  // Two groups of 8 threads, each sharing its own 2048-page buffer (4 blocks of 512 page rows)
  // for 90 % of its samples, the rest on 64 private pages of its own.
  const T = 16;
  const buffer = (t: number) => range(t < 8 ? 0 : 2048, t < 8 ? 2047 : 4095);
  const privatePages = (t: number) => range(4096 + 64 * t, 4096 + 64 * t + 63);
  const pagesOf = Array.from({ length: T }, (_, t) => [...Array(9).fill(buffer(t)).flat(), ...privatePages(t)]);
  const PAGES = 4096 + 64 * T;

  for (const samples of [50, 500, 5000]) {
    it(`${samples} samples per thread in one window: the two groups (one window of the page-level rule does not see them)`, () => {
      // The weight per sample goes down as the density goes up: the same accesses, sampled more or less.
      const weight = 2_000_000 / samples;
      const window = sampledWindow(0, pagesOf, samples, weight, 3);
      const input = inputOf(T, PAGES, [window]);
      const history = new SharingHistory(input);
      history.add(window);
      expect(components(history)).toEqual([GROUP_A, GROUP_B]);
      for (const a of GROUP_A) for (const b of GROUP_B) expect(history.sharedShare(a, b)).toBe(0);
      if (samples === 50) {
        // With about 0.02 samples per page and thread, one window's Σ_page min(a_i, a_j) links nobody.
        expect(threadClusters(input, window, input.initial)).toHaveLength(16);
      }
      // The replay places the two groups at once.
      const pins = asymschedPolicy.replay(input, options).decisions.filter((d) => d.kind === 'pin-threads');
      expect(pins.map((d) => d.threads)).toEqual([GROUP_A, GROUP_B]);
    });
  }

  it('the same recording at two densities: the same groups, with shares of about the same size', () => {
    const measured = [40, 400].map((samples) => {
      const windows = Array.from({ length: 5 }, (_, w) => sampledWindow(w, pagesOf, samples, 4_000_000 / samples, 11));
      const history = new SharingHistory(inputOf(T, PAGES, []));
      for (const w of windows) history.add(w);
      expect(components(history)).toEqual([GROUP_A, GROUP_B]);
      // The page-level rule on the same windows added up: Σ_page min(a_i, a_j) / the smaller total.
      const perPage = new Map<number, number>();
      for (const w of windows) for (let i = 0; i < w.page.length; i++) perPage.set(w.page[i]! * T + w.thread[i]!, (perPage.get(w.page[i]! * T + w.thread[i]!) ?? 0) + w.loads[i]! + w.stores[i]!);
      let share = 0;
      let pageShare = 0;
      for (const a of GROUP_A) {
        for (const b of GROUP_A) {
          if (a >= b) continue;
          share += history.sharedShare(a, b) / 28;
          let min = 0;
          let totalA = 0;
          let totalB = 0;
          for (const p of new Set(pagesOf[a])) {
            const x = perPage.get(p * T + a) ?? 0;
            const y = perPage.get(p * T + b) ?? 0;
            min += Math.min(x, y);
            totalA += x;
            totalB += y;
          }
          pageShare += min / Math.min(totalA, totalB) / 28;
        }
      }
      return { share, pageShare };
    });
    const [thin, dense] = measured as [{ share: number; pageShare: number }, { share: number; pageShare: number }];
    // Ten times fewer samples: the page-level share falls several times, this one far less.
    expect(thin.pageShare / dense.pageShare).toBeLessThan(0.3);
    expect(thin.share / dense.share).toBeGreaterThan(0.4);
    expect(thin.share).toBeGreaterThan(2 * A.SHARING_MIN_SHARE);
  });

  it('neighbouring slices of one block are not shared, though the two threads touch common pages', () => {
    // Thread 0 works on pages 0-255, thread 1 on 256-511 (one 512-page block); each also reads the
    // 8 edge pages of the other's slice (2 % of its samples).
    const slice = (t: number) => range(256 * t, 256 * t + 255);
    const edge = (t: number) => (t === 0 ? range(256, 263) : range(248, 255));
    const pages = [0, 1].map((t) => [...Array(49).fill(slice(t)).flat(), ...edge(t)]);
    const input = inputOf(2, 512, []);
    const history = new SharingHistory(input);
    for (let w = 0; w < 10; w++) history.add(sampledWindow(w, pages, 2000, 1000, 5));
    expect(history.shared(0, 1)).toBeGreaterThan(0);
    expect(history.sharedShare(0, 1)).toBeLessThan(A.SHARING_MIN_SHARE);
    expect(components(history)).toEqual([[0], [1]]);
  });

  it('re-clusters after a phase change (decay with a half-life in windows)', () => {
    // Windows 0-9: groups 0-7 and 8-15; from window 10: groups {0-3, 8-11} and {4-7, 12-15}.
    const before = Array.from({ length: T }, (_, t) => buffer(t));
    const second = (t: number) => ((t >> 2) % 2 === 0 ? range(4096, 6143) : range(6144, 8191));
    const after = Array.from({ length: T }, (_, t) => second(t));
    const input = inputOf(T, 8192, []);
    const history = new SharingHistory(input);
    const newGroups = [[...range(0, 3), ...range(8, 11)], [...range(4, 7), ...range(12, 15)]];
    let reclusteredAt = -1;
    for (let w = 0; w < 60 && reclusteredAt < 0; w++) {
      history.add(sampledWindow(w, w < 10 ? before : after, 200, 10_000, 2));
      if (w === 9) expect(components(history)).toEqual([GROUP_A, GROUP_B]);
      if (w >= 10 && JSON.stringify(components(history)) === JSON.stringify(newGroups)) reclusteredAt = w;
    }
    // Old sharing fades as 2^(−age / half-life): the new groups stand alone within 4 half-lives.
    expect(reclusteredAt).toBeGreaterThan(10);
    expect(reclusteredAt).toBeLessThanOrEqual(10 + 4 * A.SHARING_HALF_LIFE_WINDOWS);
  });

  it('is deterministic, and rescaling its counters (every 64 half-lives) changes nothing', () => {
    const length = 64 * A.SHARING_HALF_LIFE_WINDOWS + 40;
    const recentFrom = length - 20 * A.SHARING_HALF_LIFE_WINDOWS;
    // The first recent window touches every page, so the pages seen so far are the same for both.
    const sweep = (index: number): AccessWindow => {
      const keys = [...new Set(pagesOf.flatMap((pages, t) => [...new Set(pages)].map((p) => p * T + t)))].sort((a, b) => a - b);
      return { index, startUs: index * 100_000, endUs: (index + 1) * 100_000, sampleCount: keys.length, thread: Int32Array.from(keys, (k) => k % T), page: Int32Array.from(keys, (k) => Math.floor(k / T)), loads: new Float64Array(keys.length).fill(700), stores: new Float64Array(keys.length).fill(300) };
    };
    const windows = Array.from({ length }, (_, w) => (w === recentFrom ? sweep(w) : sampledWindow(w, pagesOf, 5, 1000, w)));
    const all = new SharingHistory(inputOf(T, PAGES, []));
    for (const w of windows) all.add(w);
    const again = new SharingHistory(inputOf(T, PAGES, []));
    for (const w of windows) again.add(w);
    // Windows older than 20 half-lives weigh less than 2^−20: the recent ones alone give the same shares.
    const recent = new SharingHistory(inputOf(T, PAGES, []));
    for (const w of windows.slice(recentFrom)) recent.add(w);
    for (const [a, b] of [[0, 1], [2, 7], [8, 15], [3, 12]] as const) {
      expect(again.sharedShare(a, b)).toBe(all.sharedShare(a, b));
      expect(all.sharedShare(a, b)).toBeCloseTo(recent.sharedShare(a, b), 4);
    }
    expect([...all.linkRoots()]).toEqual([...again.linkRoots()]);
    expect([...all.linkRoots()]).toEqual([...recent.linkRoots()]);
  });
});

describe('AsymSched: a clustering still forming moves no thread', () => {
  // Threads 0-3 (nodes 2 and 6) share pages 0-63; thread 4 (node 4) works on pages 512-575 (another
  // block) and reads pages 0-4 too: it shares 5 of its 69 pages' accesses (7 %) with them, linked
  // at 5 % but not at 10 %.
  const input = replayInputFromTable({
    preset: MACHINE_A,
    threads: 5,
    pages: 576,
    threadNodes: '0-1:2 2-3:6 4:4',
    pageNodes: '0-511:2 512-575:4',
    windowUs: 1_000_000,
    table: `
      window | threads | pages   | loads | stores
      0-3    | 0-3     | 0-63    | 1000  | 200
      0-3    | 4       | 512-575 | 1000  | 200
      0-3    | 4       | 0-4     | 1000  | 200`,
  });

  it('waits while the clusters at 10 % and at 5 % differ, until a second window gives the same ones', () => {
    const history = new SharingHistory(input);
    history.add(input.windows.get(0));
    expect(history.sharedShare(0, 4)).toBeGreaterThan(A.SHARING_SETTLED_SHARE);
    expect(history.sharedShare(0, 4)).toBeLessThan(A.SHARING_MIN_SHARE);
    const replay = asymschedPolicy.replay(input, options);
    const first = replay.decisions.filter((d) => d.window === 0);
    expect(first.map((d) => d.kind)).toEqual(['none']);
    expect(first[0]!.explanation).toMatch(/^clusters still forming, threads stay: .*2 clusters: \{threads 0-3\} on nodes 2,6, \{threads 4\} on nodes 4, from the sharing measured on window 0/);
    // Window 1 gives the clusters of window 0 again: settled, the cluster on nodes 2,6 moves.
    const pin = replay.decisions.find((d) => d.kind === 'pin-threads')!;
    expect(pin.window).toBe(1);
    expect(pin.threads).toEqual([0, 1, 2, 3]);
    expect(WIDEST_PAIRS).toContain(pin.toNodes!.join(','));
  });
});
