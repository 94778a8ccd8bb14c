/**
 * AsymSched's placement search (steps 4–14 of Algorithm 1) against a brute-force enumeration of
 * every placement: the pruned search (machine symmetries, swaps of equal clusters, the 90 % bound)
 * must choose the same placement with the same scores, on every preset and on seeded random
 * machines of 4–8 nodes with asymmetric link matrices.
 */
import { describe, expect, it } from 'vitest';
import type { MachineModel } from '../src/model/contract.js';
import { machineModel } from '../src/machine/model.js';
import { listPresets } from '../src/machine/presets.js';
import {
  ASYMSCHED_CONSTANTS,
  machineSymmetries,
  pairBandwidthMBps,
  searchPlacements,
  type SearchOptions,
  type ThreadCluster,
} from '../src/policies/asymsched.js';
import { seededRandom, type SeededRandom } from '../src/policies/seeded-random.js';
import type { MachineLink, TraceMachine } from '../src/trace/types.js';

interface Outcome {
  nodes: number[][];
  wbw: number;
  maxWbw: number;
  memoryToMigrateBytes: number;
  candidates: number;
}

/**
 * Every assignment of clusters to disjoint node sets, in lexicographic order; the winner moves the
 * least memory among those with wbw ≥ 0.9 × max, then has the higher wbw, then comes first.
 */
function bruteForce(machine: MachineModel, clusters: readonly ThreadCluster[]): Outcome {
  const n = machine.nodeCount;
  const bw = pairBandwidthMBps(machine);
  const all: Array<{ nodes: number[][]; wbw: number; mm: number }> = [];
  const current: number[][] = [];
  const place = (k: number, free: number[]): void => {
    if (k === clusters.length) {
      let wbw = 0;
      let mm = 0;
      clusters.forEach((c, x) => {
        const set = current[x]!;
        let sum = 0;
        for (const a of set) for (const b of set) if (a !== b) sum += bw[a * n + b]!;
        wbw += c.weight * sum;
        for (const o of c.nodes) if (!set.includes(o)) mm += c.memoryBytesOnNode[o]!;
      });
      all.push({ nodes: current.map((s) => [...s]), wbw, mm });
      return;
    }
    const size = clusters[k]!.nodes.length;
    const pick = (start: number, set: number[]): void => {
      if (set.length === size) {
        current.push(set);
        place(k + 1, free.filter((x) => !set.includes(x)));
        current.pop();
        return;
      }
      for (let i = start; i < free.length; i++) pick(i + 1, [...set, free[i]!]);
    };
    pick(0, []);
  };
  place(0, Array.from({ length: n }, (_, x) => x));
  const maxWbw = Math.max(...all.map((p) => p.wbw));
  const candidates = all.filter((p) => p.wbw >= ASYMSCHED_CONSTANTS.CANDIDATE_FRACTION * maxWbw);
  let best = candidates[0]!;
  for (const p of candidates) if (p.mm < best.mm || (p.mm === best.mm && p.wbw > best.wbw)) best = p;
  return { nodes: best.nodes, wbw: best.wbw, maxWbw, memoryToMigrateBytes: best.mm, candidates: candidates.length };
}

const pick = <T>(random: SeededRandom, list: readonly T[]): T => list[random.int(list.length)]!;

/** Random node set of `size` nodes (sorted), not necessarily disjoint from other clusters'. */
function randomNodes(random: SeededRandom, n: number, size: number): number[] {
  const pool = Array.from({ length: n }, (_, x) => x);
  const out: number[] = [];
  while (out.length < size) out.push(pool.splice(random.int(pool.length), 1)[0]!);
  return out.sort((a, b) => a - b);
}

/**
 * Clusters of 1–3 nodes using at most all nodes; integer weights drawn from a small set so that
 * equal weights (interchangeable clusters) occur, memory in whole pages on random nodes.
 */
function randomClusters(random: SeededRandom, n: number): ThreadCluster[] {
  const clusters: ThreadCluster[] = [];
  let left = n;
  const count = 1 + random.int(Math.min(4, n));
  for (let k = 0; k < count && left > 0; k++) {
    const size = 1 + random.int(Math.min(3, left));
    left -= size;
    const memory = new Float64Array(n);
    for (let x = 0; x < n; x++) memory[x] = random.int(3) === 0 ? 0 : 4096 * random.int(100);
    const weight = pick(random, [0, 1, 2, 2, 3]);
    clusters.push({ threads: [], nodes: randomNodes(random, n, size), rbwMBps: Math.exp(weight), weight, memoryBytesOnNode: memory });
  }
  return clusters;
}

/** A machine with one link per ordered pair, capacity `capacity(i, j)` GB/s, direct routes. */
function pairMachine(name: string, n: number, capacity: (i: number, j: number) => number): MachineModel {
  const links: MachineLink[] = [];
  const routes: Record<string, number[]> = {};
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      routes[`${i}->${j}`] = [links.length];
      links.push({ from: i, to: j, capacityGBps: capacity(i, j) });
    }
  }
  const machine: TraceMachine = {
    name,
    source: 'test',
    kernel: null,
    cpuModel: null,
    pageSizeBytes: 4096,
    nodes: Array.from({ length: n }, (_, id) => ({ id, cpus: [id], memoryBytes: null, memoryBandwidthGBps: 10 })),
    distances: Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 10 : 20))),
    latenciesNs: null,
    links,
    routes,
    provenance: {},
  };
  return machineModel(machine);
}

const CAPACITIES_GBPS = [1.9, 2.9, 3, 3.8, 4.3, 5.6];

/** Asymmetric: every ordered pair drawn on its own. */
const randomMachine = (random: SeededRandom, n: number) => pairMachine(`random-${n}`, n, () => pick(random, CAPACITIES_GBPS));

/** Circulant (capacity depends on (j − i) mod n): rotations are symmetries, the search must use them. */
function circulantMachine(random: SeededRandom, n: number): MachineModel {
  const byOffset = Array.from({ length: n }, () => pick(random, CAPACITIES_GBPS));
  return pairMachine(`circulant-${n}`, n, (i, j) => byOffset[(j - i + n) % n]!);
}

const ALL_OPTIONS: SearchOptions[] = [{}, { bound: false }, { symmetry: false }, { symmetry: false, bound: false }];

function expectSameAsBruteForce(machine: MachineModel, clusters: ThreadCluster[], label: string): void {
  const expected = bruteForce(machine, clusters);
  for (const options of ALL_OPTIONS) {
    const search = searchPlacements(machine, clusters, options);
    const what = `${label} ${JSON.stringify(options)} clusters ${JSON.stringify(clusters.map((c) => [c.nodes, c.weight]))}`;
    expect(search.greedy, what).toBe(false);
    expect(search.nodes, what).toEqual(expected.nodes);
    expect(search.memoryToMigrateBytes, what).toBe(expected.memoryToMigrateBytes);
    expect(search.wbw, what).toBeCloseTo(expected.wbw, 6);
    expect(search.maxWbw, what).toBeCloseTo(expected.maxWbw, 6);
    expect(search.candidates, what).toBe(expected.candidates);
    expect(search.placementsEvaluated, what).toBeLessThanOrEqual(search.placementsTotal);
  }
}

describe('AsymSched placement search: same winner as brute force', () => {
  // 12 presets of up to 8 nodes, each searched and brute-forced 12 times: a few seconds on a shared machine.
  it('on every preset, with random clusters (seeded)', { timeout: 60_000 }, () => {
    const random = seededRandom(12);
    for (const preset of listPresets()) {
      const machine = machineModel(preset.machine);
      for (let trial = 0; trial < 12; trial++) expectSameAsBruteForce(machine, randomClusters(random, machine.nodeCount), preset.id);
    }
  });

  it('on random asymmetric link matrices of 4–8 nodes (seeded)', () => {
    const random = seededRandom(2015);
    for (let trial = 0; trial < 60; trial++) {
      const n = 4 + random.int(5);
      const machine = randomMachine(random, n);
      for (let c = 0; c < 3; c++) expectSameAsBruteForce(machine, randomClusters(random, n), `random n=${n} trial ${trial}`);
    }
  });

  it('on circulant machines of 4–8 nodes, whose rotations the search uses (seeded)', () => {
    const random = seededRandom(7);
    for (let trial = 0; trial < 30; trial++) {
      const n = 4 + random.int(5);
      const machine = circulantMachine(random, n);
      expect(machineSymmetries(machine).permutations.length).toBeGreaterThanOrEqual(n);
      for (let c = 0; c < 3; c++) expectSameAsBruteForce(machine, randomClusters(random, n), `circulant n=${n} trial ${trial}`);
    }
  });

  it('when every weight is 0 (every placement is a candidate; the least memory moved wins)', () => {
    const random = seededRandom(3);
    const machine = machineModel(listPresets().find((p) => p.id === 'amd-genoa-2s-nps4')!.machine);
    const clusters = randomClusters(random, 8).map((c) => ({ ...c, weight: 0 }));
    expectSameAsBruteForce(machine, clusters, 'genoa nps4, weights 0');
  });
});

describe('machine symmetries', () => {
  it('are the node permutations that keep every pair bandwidth', () => {
    const expected: Record<string, number> = {
      // Pair bandwidth is the bottleneck link on the route: all 4.0 GB/s on the HT1 square.
      'amd-opteron-8385-4p': 24,
      // Measured, asymmetric: no symmetry but the identity.
      'amd-asymsched-machine-a': 1,
      'amd-opteron-6172-4p': 384,
      'intel-xeon-x7560-4s': 24,
      'intel-spr-2s': 2,
      // Two sockets of 4 nodes each, every cross-socket pair at the xGMI/UPI bottleneck: (4!·4!)·2.
      'intel-spr-2s-snc4': 1152,
      'amd-genoa-2s-nps1': 2,
      'amd-genoa-2s-nps4': 1152,
      'cxl-expander': 2,
      // Pair bandwidth ignores cpus: the two nodes joined by one link are interchangeable.
      'dram-cxl-1s': 2,
      'intel-xeon-max-flat': 2,
      // The 4! tile permutations, times swapping each tile's DDR and HBM nodes (2^4): 384.
      'intel-xeon-max-snc4-flat': 384,
    };
    for (const preset of listPresets()) {
      const machine = machineModel(preset.machine);
      const { permutations, complete } = machineSymmetries(machine);
      expect(complete, preset.id).toBe(true);
      expect(permutations.length, preset.id).toBe(expected[preset.id]);
      const n = machine.nodeCount;
      const bw = pairBandwidthMBps(machine);
      expect([...permutations[0]!]).toEqual(Array.from({ length: n }, (_, x) => x));
      const keepsBandwidths = (perm: Int16Array) => bw.every((v, x) => bw[perm[Math.floor(x / n)]! * n + perm[x % n]!] === v);
      expect(permutations.every(keepsBandwidths), preset.id).toBe(true);
    }
  });

  it('stop at their bound on a fully symmetric machine and say so', () => {
    const uniform = pairMachine('uniform-8', 8, () => 4);
    const { permutations, complete } = machineSymmetries(uniform);
    expect(permutations.length).toBe(ASYMSCHED_CONSTANTS.MAX_SYMMETRIES);
    expect(complete).toBe(false);
    // The search then uses swaps of equal clusters only, and stays exact.
    const random = seededRandom(5);
    for (let c = 0; c < 5; c++) {
      const clusters = randomClusters(random, 8);
      expect(searchPlacements(uniform, clusters).machineSymmetries).toBe(1);
      expectSameAsBruteForce(uniform, clusters, 'uniform-8');
    }
  });
});
