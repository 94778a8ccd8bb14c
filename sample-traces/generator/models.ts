/**
 * Workload models: what each synthetic program allocates, which thread first-touches which
 * pages, where the threads run, and how their memory accesses are spread. A model only plans;
 * generate.ts turns a plan into trace rows. sample-traces/README.md describes every model in
 * words; keep the two in step.
 */
import type { TraceMachine } from './engine.js';

/** Cache behaviour of an access stream: probability that a sample hits L1, L2, L3 (the rest is DRAM). */
export interface CacheProfile {
  l1: number;
  l2: number;
  l3: number;
}

/**
 * The data-source model: fixed hit probabilities per kind of access stream (the generator's
 * assumption, not a measurement). DRAM = 1 − l1 − l2 − l3, local or remote by the page's node.
 */
export const CACHE_PROFILES = {
  /** First-touch writes that initialise fresh pages. DRAM 80 %. */
  init: { l1: 0.1, l2: 0.05, l3: 0.05 },
  /** Scans over an array much larger than the caches. DRAM 40 %. */
  stream: { l1: 0.4, l2: 0.1, l3: 0.1 },
  /** Random lookups into a shared table. DRAM 30 %. */
  table: { l1: 0.3, l2: 0.15, l3: 0.25 },
  /** Reads and writes to a buffer a group of threads shares. DRAM 40 %. */
  shared: { l1: 0.35, l2: 0.1, l3: 0.15 },
  /** A thread's own stack or small private buffer. DRAM 2 %. */
  private: { l1: 0.85, l2: 0.08, l3: 0.05 },
} as const satisfies Record<string, CacheProfile>;
export type CacheClass = keyof typeof CACHE_PROFILES;

export type RegionKind = 'heap' | 'stack' | 'anon';

export interface RegionPlan {
  kind: RegionKind;
  /** `[stack]` for the main thread's stack; null for anonymous mappings. */
  path: string | null;
  allocSite: string | null;
  pages: number;
}

export interface ThreadPlan {
  name: string;
  cpu: number;
  /** Regions this thread first-touches, page by page, as soon as it starts (stack, private buffers). */
  privateRegions: number[];
  /** Moves to `toCpu` at this fraction of the compute phase; null = stays pinned. */
  migration: { atComputeFraction: number; toCpu: number } | null;
}

/** Pages a thread first-touches during the init phase, one after another, spread over the phase. */
export interface TouchRun {
  thread: number;
  region: number;
  firstPage: number;
  pages: number;
}

/** One part of a thread's compute-phase accesses: a page range, chosen uniformly. */
export interface AccessTarget {
  /** Fraction of this thread's samples (a thread's targets sum to 1). */
  share: number;
  region: number;
  firstPage: number;
  pages: number;
  /** Fraction of these samples that are loads (the rest are stores). */
  loadShare: number;
  cache: CacheClass;
}

export interface WorkloadPlan {
  /** The modelled program's name (process comm and command). */
  program: string;
  regions: RegionPlan[];
  threads: ThreadPlan[];
  /** Share of the trace's duration spent in the init phase. */
  initFraction: number;
  /** Init phase: each listed thread first-touches its run (at most one run per thread). */
  initRuns: TouchRun[];
  initDetail: string;
  computeDetail: string;
  /** Compute phase: every thread runs, spreading its samples over its targets. */
  computeTargets: (thread: number) => AccessTarget[];
}

export interface WorkloadModel {
  id: string;
  /** Preset the committed sample uses and `--machine` defaults to. */
  defaultMachine: string;
  /** One sentence for the manifest, naming the machine. */
  describe: (machine: TraceMachine) => string;
  plan: (machine: TraceMachine) => WorkloadPlan;
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

const KIB = 1024;
const MIB = 1024 * KIB;
const PAGE_BYTES = 4096;
const STACK_PAGES = 4; // 16 KiB of stack actually touched per thread
const THREADS = 16;

const pagesOf = (bytes: number) => bytes / PAGE_BYTES;

/**
 * cpu for thread `t` when threads are spread round-robin over `nodeIndices` (thread 0 on the
 * first node's first cpu, thread 1 on the second node's first cpu, …), as a scheduler spreading
 * an otherwise idle machine would.
 */
function spreadCpu(machine: TraceMachine, nodeIndices: readonly number[], t: number): number {
  const node = machine.nodes[nodeIndices[t % nodeIndices.length]!]!;
  const slot = Math.floor(t / nodeIndices.length);
  const cpu = node.cpus[slot];
  if (cpu === undefined) {
    throw new Error(`machine ${machine.name}: node ${node.id} has ${node.cpus.length} cpus, the model needs ${slot + 1}`);
  }
  return cpu;
}

const allNodes = (machine: TraceMachine) => machine.nodes.map((_, index) => index);

/** Regions 0…: one stack per thread (the main thread's is `[stack]`). */
function stacks(count: number): RegionPlan[] {
  return Array.from({ length: count }, (_, t) => ({
    kind: 'stack' as const,
    path: t === 0 ? '[stack]' : null,
    allocSite: null,
    pages: STACK_PAGES,
  }));
}

function threads(count: number, names: (t: number) => string, cpuOf: (t: number) => number, privateRegions: (t: number) => number[]): ThreadPlan[] {
  return Array.from({ length: count }, (_, t) => ({ name: names(t), cpu: cpuOf(t), privateRegions: privateRegions(t), migration: null }));
}

const workerName = (prefix: string, main: string) => (t: number) => (t === 0 ? main : `${prefix}${t}`);

// ---------------------------------------------------------------------------------------------
// (a) streamcluster-hotspot

const streamclusterHotspot: WorkloadModel = {
  id: 'streamcluster-hotspot',
  defaultMachine: 'amd-opteron-8385-4p',
  describe: (m) =>
    `Streamcluster-like memory-controller hot spot on ${m.name}: thread 0 first-touches a 16 MiB point array (every page on its node), then ${THREADS} threads on all nodes read it.`,
  plan: (machine) => {
    const points = THREADS; // region index after the stacks
    const pointPages = pagesOf(16 * MIB);
    return {
      program: 'streamcluster',
      regions: [...stacks(THREADS), { kind: 'anon', path: null, allocSite: 'alloc_points', pages: pointPages }],
      threads: threads(THREADS, workerName('sc-worker-', 'streamcluster'), (t) => spreadCpu(machine, allNodes(machine), t), (t) => [t]),
      initFraction: 0.15,
      initRuns: [{ thread: 0, region: points, firstPage: 0, pages: pointPages }],
      initDetail: 'thread 0 alone first-touches the 16 MiB point array, so all of it lands on its node',
      computeDetail: `${THREADS} threads read the whole point array (85 % of samples, 97 % loads) and use their stacks`,
      computeTargets: (t) => [
        { share: 0.85, region: points, firstPage: 0, pages: pointPages, loadShare: 0.97, cache: 'stream' },
        { share: 0.15, region: t, firstPage: 0, pages: STACK_PAGES, loadShare: 0.6, cache: 'private' },
      ],
    };
  },
};

// ---------------------------------------------------------------------------------------------
// (b) partitioned

const HALO_PAGES = 16;

const partitioned: WorkloadModel = {
  id: 'partitioned',
  defaultMachine: 'amd-opteron-8385-4p',
  describe: (m) =>
    `Partitioned grid on ${m.name}: each of ${THREADS} threads first-touches and works on its own 1 MiB slice of a 16 MiB grid (good locality); one thread migrates to another node late in the run.`,
  plan: (machine) => {
    const grid = THREADS;
    const partitionPages = pagesOf(MIB);
    const nodeIndices = allNodes(machine);
    const plan = threads(THREADS, workerName('part-worker-', 'partitioned'), (t) => spreadCpu(machine, nodeIndices, t), (t) => [t]);
    // The last thread is moved by the scheduler to the next node (same slot), sharing a cpu there.
    const moved = THREADS - 1;
    if (nodeIndices.length > 1) {
      const home = moved % nodeIndices.length;
      const away = (home + 1) % nodeIndices.length;
      const toCpu = machine.nodes[away]!.cpus[Math.floor(moved / nodeIndices.length)]!;
      plan[moved]!.migration = { atComputeFraction: 0.6, toCpu };
    }
    return {
      program: 'partitioned',
      regions: [...stacks(THREADS), { kind: 'anon', path: null, allocSite: 'alloc_grid', pages: THREADS * partitionPages }],
      threads: plan,
      initFraction: 0.1,
      initRuns: Array.from({ length: THREADS }, (_, t) => ({ thread: t, region: grid, firstPage: t * partitionPages, pages: partitionPages })),
      initDetail: 'every thread first-touches its own 1 MiB slice of the grid in parallel',
      computeDetail: 'each thread updates its own slice (88 %), reads the edge pages of its neighbours\' slices (2 %) and uses its stack (10 %)',
      computeTargets: (t) => {
        const own = { share: 0.88, region: grid, firstPage: t * partitionPages, pages: partitionPages, loadShare: 0.7, cache: 'stream' as const };
        const neighbours: AccessTarget[] = [];
        if (t > 0) neighbours.push({ share: 0, region: grid, firstPage: t * partitionPages - HALO_PAGES, pages: HALO_PAGES, loadShare: 1, cache: 'stream' });
        if (t < THREADS - 1) neighbours.push({ share: 0, region: grid, firstPage: (t + 1) * partitionPages, pages: HALO_PAGES, loadShare: 1, cache: 'stream' });
        for (const n of neighbours) n.share = 0.02 / neighbours.length;
        return [own, ...neighbours, { share: 0.1, region: t, firstPage: 0, pages: STACK_PAGES, loadShare: 0.6, cache: 'private' }];
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// (c) shared-readmostly

const sharedReadMostly: WorkloadModel = {
  id: 'shared-readmostly',
  defaultMachine: 'amd-genoa-2s-nps4',
  describe: (m) =>
    `Read-mostly shared table on ${m.name}: thread 0 loads a 16 MiB lookup table (all on its node), then ${THREADS} threads on all nodes look it up (99 % loads) and work on private 512 KiB buffers.`,
  plan: (machine) => {
    const table = 2 * THREADS; // after the stacks and the private buffers
    const privateBuffer = (t: number) => THREADS + t;
    const tablePages = pagesOf(16 * MIB);
    const privatePages = pagesOf(512 * KIB);
    return {
      program: 'lookup-server',
      regions: [
        ...stacks(THREADS),
        ...Array.from({ length: THREADS }, () => ({ kind: 'anon' as const, path: null, allocSite: 'alloc_private', pages: privatePages })),
        { kind: 'anon', path: null, allocSite: 'load_table', pages: tablePages },
      ],
      threads: threads(THREADS, workerName('lookup-w-', 'lookup-server'), (t) => spreadCpu(machine, allNodes(machine), t), (t) => [t, privateBuffer(t)]),
      initFraction: 0.1,
      initRuns: [{ thread: 0, region: table, firstPage: 0, pages: tablePages }],
      initDetail: 'thread 0 fills the 16 MiB lookup table, so all of it lands on its node',
      computeDetail: `${THREADS} threads look up the table (60 % of samples, 99 % loads), update private buffers (30 %) and use their stacks (10 %)`,
      computeTargets: (t) => [
        { share: 0.6, region: table, firstPage: 0, pages: tablePages, loadShare: 0.99, cache: 'table' },
        { share: 0.3, region: privateBuffer(t), firstPage: 0, pages: privatePages, loadShare: 0.5, cache: 'private' },
        { share: 0.1, region: t, firstPage: 0, pages: STACK_PAGES, loadShare: 0.6, cache: 'private' },
      ],
    };
  },
};

// ---------------------------------------------------------------------------------------------
// (d) two-groups

/**
 * Nodes of the two thread groups. On 8 nodes (AsymSched's Machine A) they are the poorly
 * connected pairs (2,7) and (3,6) — 1.9 GB/s one way in Machine A's measured matrix — as an
 * unlucky placement would give, so a bandwidth-aware policy has something to improve.
 */
export function groupNodes(machine: TraceMachine): [number[], number[]] {
  const n = machine.nodes.length;
  if (n >= 8) return [[2, 7], [3, 6]];
  if (n >= 4) return [[0, 3], [1, 2]];
  if (n >= 2) return [[0], [1]];
  return [[0], [0]];
}

export const GROUP_SIZE = THREADS / 2;

const twoGroups: WorkloadModel = {
  id: 'two-groups',
  defaultMachine: 'amd-asymsched-machine-a',
  describe: (m) => {
    const [a, b] = groupNodes(m);
    return `Two groups of ${GROUP_SIZE} threads on ${m.name}, each sharing its own 8 MiB buffer heavily: group A on nodes ${a.join(',')}, group B on nodes ${b.join(',')}.`;
  },
  plan: (machine) => {
    const bufferPages = pagesOf(8 * MIB);
    const privatePages = pagesOf(256 * KIB);
    const buffer = (group: number) => 2 * THREADS + group; // after the stacks and the private buffers
    const privateBuffer = (t: number) => THREADS + t;
    const groupOf = (t: number) => Math.floor(t / GROUP_SIZE);
    const nodesOfGroup = groupNodes(machine);
    const slicePages = bufferPages / GROUP_SIZE;
    return {
      program: 'two-groups',
      regions: [
        ...stacks(THREADS),
        ...Array.from({ length: THREADS }, () => ({ kind: 'anon' as const, path: null, allocSite: 'alloc_private', pages: privatePages })),
        { kind: 'anon', path: null, allocSite: 'alloc_group_buffer:A', pages: bufferPages },
        { kind: 'anon', path: null, allocSite: 'alloc_group_buffer:B', pages: bufferPages },
      ],
      threads: threads(
        THREADS,
        (t) => (t === 0 ? 'two-groups' : `grp${groupOf(t) === 0 ? 'A' : 'B'}-w-${t}`),
        (t) => spreadCpu(machine, nodesOfGroup[groupOf(t)]!, t % GROUP_SIZE),
        (t) => [t, privateBuffer(t)],
      ),
      initFraction: 0.1,
      initRuns: Array.from({ length: THREADS }, (_, t) => ({
        thread: t,
        region: buffer(groupOf(t)),
        firstPage: (t % GROUP_SIZE) * slicePages,
        pages: slicePages,
      })),
      initDetail: 'each thread first-touches one slice of its group\'s buffer, so each buffer is split over its group\'s nodes',
      computeDetail: 'each thread reads and writes its group\'s whole buffer (70 %), its private buffer (20 %) and its stack (10 %)',
      computeTargets: (t) => [
        { share: 0.7, region: buffer(groupOf(t)), firstPage: 0, pages: bufferPages, loadShare: 0.7, cache: 'shared' },
        { share: 0.2, region: privateBuffer(t), firstPage: 0, pages: privatePages, loadShare: 0.5, cache: 'private' },
        { share: 0.1, region: t, firstPage: 0, pages: STACK_PAGES, loadShare: 0.6, cache: 'private' },
      ],
    };
  },
};

export const MODELS: readonly WorkloadModel[] = [streamclusterHotspot, partitioned, sharedReadMostly, twoGroups];

export function getModel(id: string): WorkloadModel {
  const model = MODELS.find((m) => m.id === id);
  if (!model) throw new Error(`unknown workload model "${id}"; models: ${MODELS.map((m) => m.id).join(', ')}`);
  return model;
}
