/**
 * Carrefour (Dashti et al., ASPLOS'13) as a replay, following the authors' released code
 * (Carrefour/carrefour-runtime `carrefour.c`, Carrefour/carrefour-module `src/carrefour.c`).
 * Each replay window is one profiling round: the global metrics of the window
 * (from the simulator, under the placement in force) switch replication, interleaving and
 * migration on or off; then every sampled page goes through `decide_page_fate()`; the orders
 * take effect from the next window. Deviations from the code are listed in docs/policies.md.
 */
import type {
  AccessWindow,
  Decision,
  NodeIndex,
  Placement,
  Policy,
  PolicyRun,
  ReplayInput,
  ReplayOptions,
  WindowMetrics,
} from '../model/contract.js';
import { seededRandom, type SeededRandom } from './seeded-random.js';
import { recordedThreads, windowLengthUs } from './common.js';
import { definePolicy } from '../engine/run.js';

/** The code's constants (carrefour.c l.23–50, carrefour-module src/carrefour.c, ibs_main.c). */
export const CARREFOUR_CONSTANTS = {
  /** Accesses per µs below which Carrefour stays off. */
  MAPTU_MIN: 50,
  /** Replication needs global memory usage ≤ this %. */
  MEMORY_USAGE_MAX_PCT: 25,
  /** Replication needs the data-cache modified ratio ≤ this % (read ratio ≥ 95 %). */
  DCMR_MAX_PCT: 5,
  /** Interleaving needs MC imbalance > this %. */
  MIN_IMBALANCE_PCT: 35,
  /** Interleaving needs LAR < this % (100: any). */
  MAX_LOCALITY_PCT: 100,
  /** Migration is on while LAR < this %. */
  MAX_LOCALITY_MIGRATION_PCT: 80,
  /** Samples a single-node page needs to migrate when interleaving is off (1 when on). */
  MIN_SAMPLES_FOR_MIGRATION: 2,
  /** Replication orders needed in one round the first time replication happens. */
  MIN_ORDERS_ENABLE_REPLICATION: 500,
  /** Fewer orders than this in a round → the cheap sampling rate next round. */
  SAMPLING_SWITCH_ORDERS: 10,
  /** Pages the module can watch per round (accurate / cheap reserve). */
  MAX_PAGES_ACCURATE: 30000,
  MAX_PAGES_CHEAP: 10000,
  /** IBS op periods, cycles per sample. */
  IBS_PERIOD_ACCURATE: 0xfff8,
  IBS_PERIOD_CHEAP: 0x3ffe0,
} as const;

export type SamplingRate = 'accurate' | 'cheap';

export interface CarrefourOptions {
  /**
   * Global memory usage in % (sysinfo's (total − free)/total), used by the replication test.
   * Default: the recording's footprint (pages × page size, plus replicas) over the machine's
   * memory; when the machine's memory size is unknown replication stays off and the decision
   * says so.
   */
  memoryUsagePct?: number;
}

/** The global metrics Carrefour's runtime computes for a round. */
export interface CarrefourGlobalMetrics {
  maptu: number;
  larPct: number;
  imbalancePct: number;
  readRatioPct: number;
  memoryUsagePct: number;
}

interface Flags {
  replication: boolean;
  interleaving: boolean;
  migration: boolean;
}

const C = CARREFOUR_CONSTANTS;

export function createCarrefourPolicy(options: CarrefourOptions = {}): Policy {
  return definePolicy({
    id: 'carrefour',
    description:
      'Carrefour (Dashti et al., ASPLOS\'13): per-round MAPTU/LAR/MC-imbalance/read-ratio gates, then per-page replicate, interleave or migrate (authors\' carrefour-runtime and carrefour-module code).',
    run: (input, replayOptions) => replayCarrefour(input, replayOptions, options),
  });
}

export const carrefourPolicy: Policy = createCarrefourPolicy();

function copyPlacement(p: Placement): Placement {
  return { threadNode: p.threadNode.slice(), pageNode: p.pageNode.slice(), replicated: p.replicated.slice() };
}

/** Read ratio of a window in % (1 − stores/accesses): the replay's stand-in for DCMR (see docs). */
export function readRatioPct(window: AccessWindow): number {
  let loads = 0;
  let stores = 0;
  for (let i = 0; i < window.loads.length; i++) {
    loads += window.loads[i]!;
    stores += window.stores[i]!;
  }
  const total = loads + stores;
  return total > 0 ? (100 * loads) / total : 100;
}

function memoryUsagePct(input: ReplayInput, placement: Placement, override: number | undefined): number {
  if (override !== undefined) return override;
  const memory = input.machine.memoryBytes.value;
  let total = 0;
  for (let i = 0; i < memory.length; i++) total += memory[i]!;
  if (!Number.isFinite(total) || total <= 0) return Number.NaN;
  let copies = 0;
  for (let p = 0; p < placement.replicated.length; p++) if (placement.replicated[p]) copies += input.machine.nodeCount - 1;
  return (100 * (input.pageCount + copies) * input.pageBytes) / total;
}

/** Draws a sample count for `accesses` estimated accesses thinned by `keep` (expected value preserved). */
function thin(accesses: number, keep: number, random: SeededRandom): number {
  const x = accesses * keep;
  const whole = Math.floor(x);
  return whole + (random.next() < x - whole ? 1 : 0);
}

const fmt = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : 'unknown');

function* replayCarrefour(input: ReplayInput, replayOptions: ReplayOptions, options: CarrefourOptions): PolicyRun {
  const { machine, pageBytes } = input;
  const nodeCount = machine.nodeCount;
  const nodeName = (n: NodeIndex): string => `node ${machine.nodeIds[n]}`;
  const random = seededRandom(replayOptions.seed);
  const placement = copyPlacement(input.initial);
  const windows: WindowMetrics[] = [];
  const threadNodeByWindow: Int16Array[] = [];
  const decisions: Decision[] = [];
  let migratedPages = 0;
  let migratedBytes = 0;
  // All three mechanisms start enabled in the runtime and in the module.
  const flags: Flags = { replication: true, interleaving: true, migration: true };
  let replicationBootstrapped = false;
  let announced = false;
  // The module's init sets the cheap rate: the first round samples cheaply.
  let rate: SamplingRate = 'cheap';

  // The work of a window is a plain function: V8 optimises it like any other (a loop body
  // inside a generator would run unoptimised, generators get no on-stack replacement).
  // Carrefour places pages only: threads are where the recording had them.
  const threadsAt = recordedThreads(input);
  const step = (window: AccessWindow): void => {
    placement.threadNode = threadsAt(window.index).slice();
    const metrics = replayOptions.simulate(machine, window, placement, windowLengthUs(window), pageBytes);
    windows.push(metrics);
    threadNodeByWindow.push(placement.threadNode.slice());
    const w = window.index;

    const g: CarrefourGlobalMetrics = {
      maptu: metrics.accessesPerUs,
      larPct: 100 * metrics.localAccessRatio,
      imbalancePct: metrics.mcImbalancePct,
      readRatioPct: readRatioPct(window),
      memoryUsagePct: memoryUsagePct(input, placement, options.memoryUsagePct),
    };

    // NUMA hinting faults give which thread touched which page, not how often: MAPTU has no value
    // to compare. The gate is assumed open and the first decision says so.
    const rateUnknown = input.accessSource === 'hinting-faults';
    const maptuText = rateUnknown
      ? `MAPTU unknown: the access samples are NUMA hinting faults, which give no access rate; the MAPTU ≥ ${C.MAPTU_MIN} gate is assumed passed (the prediction holds for a memory-intensive program)`
      : `MAPTU ${fmt(g.maptu)} accesses/µs ≥ ${C.MAPTU_MIN}`;
    if (!rateUnknown && !(g.maptu >= C.MAPTU_MIN)) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `Carrefour off: MAPTU ${fmt(g.maptu)} accesses/µs < ${C.MAPTU_MIN}; no page decisions, sampling at the cheap rate`,
      });
      rate = 'cheap';
      return;
    }

    const next: Flags = {
      replication: g.memoryUsagePct <= C.MEMORY_USAGE_MAX_PCT && g.readRatioPct >= 100 - C.DCMR_MAX_PCT,
      interleaving: g.larPct < C.MAX_LOCALITY_PCT && g.imbalancePct > C.MIN_IMBALANCE_PCT,
      migration: g.larPct < C.MAX_LOCALITY_MIGRATION_PCT,
    };
    const why: Record<keyof Flags, string> = {
      replication: `memory usage ${fmt(g.memoryUsagePct)}% ${g.memoryUsagePct <= C.MEMORY_USAGE_MAX_PCT ? '≤' : Number.isNaN(g.memoryUsagePct) ? '(machine memory size unknown) vs' : '>'} ${C.MEMORY_USAGE_MAX_PCT}%, read ratio ${fmt(g.readRatioPct)}% ${g.readRatioPct >= 100 - C.DCMR_MAX_PCT ? '≥' : '<'} ${100 - C.DCMR_MAX_PCT}%`,
      interleaving: `MC imbalance ${fmt(g.imbalancePct)}% ${g.imbalancePct > C.MIN_IMBALANCE_PCT ? '>' : '≤'} ${C.MIN_IMBALANCE_PCT}%, LAR ${fmt(g.larPct)}%`,
      migration: `LAR ${fmt(g.larPct)}% ${g.larPct < C.MAX_LOCALITY_MIGRATION_PCT ? '<' : '≥'} ${C.MAX_LOCALITY_MIGRATION_PCT}%`,
    };
    for (const key of ['replication', 'interleaving', 'migration'] as const) {
      if (next[key] !== flags[key] || !announced) {
        decisions.push({
          window: w,
          kind: next[key] ? 'enable' : 'disable',
          explanation: `${key} ${next[key] ? 'on' : 'off'}: ${why[key]} (${maptuText})`,
        });
      }
      flags[key] = next[key];
    }
    if (!announced && input.accessSource !== 'hinting-faults') {
      const a = carrefourSampledAccesses(input, 'accurate');
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `the module's IBS samples: one op every ${C.IBS_PERIOD_ACCURATE} cycles per core (cheap rate ${C.IBS_PERIOD_CHEAP}), so one sample per ${Math.round(a.value)} DRAM accesses at the accurate rate (${a.source}); its per-page gates count those of a 1 s round at each window's rates, not the trace's samples`,
      });
    }
    announced = true;
    if (!flags.replication && !flags.interleaving && !flags.migration) {
      rate = 'cheap';
      return;
    }

    const orders = decidePages(input, window, placement, flags, rate, metrics, random);

    // Replication bootstrap: the first time, a round needs ≥ 500 replication orders.
    let replicated: number[] = orders.replicate;
    if (replicated.length > 0 && !replicationBootstrapped) {
      if (replicated.length < C.MIN_ORDERS_ENABLE_REPLICATION) {
        decisions.push({
          window: w,
          kind: 'none',
          explanation: `${replicated.length} read-only pages shared by several nodes not replicated: the first replication round needs ≥ ${C.MIN_ORDERS_ENABLE_REPLICATION} orders`,
          pages: replicated.length,
          pageIndices: Int32Array.from(replicated),
        });
        replicated = [];
      } else replicationBootstrapped = true;
    }
    if (replicated.length > 0) {
      for (const p of replicated) placement.replicated[p] = 1;
      const copies = replicated.reduce((s, p) => s + orders.readerNodes.get(p)! - 1, 0);
      migratedPages += copies;
      migratedBytes += copies * pageBytes;
      decisions.push({
        window: w,
        kind: 'replicate',
        explanation: `${replicated.length} pages replicated (${copies} copies): read by ≥ 2 nodes with no store sample; ${why.replication}`,
        pages: replicated.length,
        pageIndices: Int32Array.from(replicated),
      });
    }
    for (const [kind, byNode] of [
      ['interleave', orders.interleave],
      ['migrate', orders.migrate],
    ] as const) {
      for (let d = 0; d < nodeCount; d++) {
        const pages = byNode[d]!;
        if (pages.length === 0) continue;
        for (const p of pages) placement.pageNode[p] = d;
        migratedPages += pages.length;
        migratedBytes += pages.length * pageBytes;
        decisions.push({
          window: w,
          kind,
          explanation:
            kind === 'interleave'
              ? `${pages.length} pages accessed from several nodes moved to ${nodeName(d)} (interleave draw: ${nodeName(d)} serves ${orders.probaPct[d]}% of requests, weight ${100 - orders.probaPct[d]!}); ${why.interleaving}`
              : `${pages.length} pages moved to ${nodeName(d)}, their only accessor node${flags.interleaving ? ' (interleaving on: 1 sample suffices)' : ` (≥ ${C.MIN_SAMPLES_FOR_MIGRATION} samples)`}; ${why.migration}`,
          pages: pages.length,
          pageIndices: Int32Array.from(pages),
          toNodes: [d],
        });
      }
    }
    if (orders.pagesMissed > 0) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `${orders.pagesMissed} sampled pages not watched: the ${rate} page reserve holds ${rate === 'accurate' ? C.MAX_PAGES_ACCURATE : C.MAX_PAGES_CHEAP} pages`,
        pages: orders.pagesMissed,
      });
    }
    const totalOrders = orders.migrateCount + orders.interleaveCount + replicated.length;
    const nextRate: SamplingRate = totalOrders < C.SAMPLING_SWITCH_ORDERS ? 'cheap' : 'accurate';
    if (nextRate !== rate) {
      decisions.push({
        window: w,
        kind: 'none',
        explanation: `sampling rate ${rate} → ${nextRate}: ${totalOrders} orders this round ${totalOrders < C.SAMPLING_SWITCH_ORDERS ? '<' : '≥'} ${C.SAMPLING_SWITCH_ORDERS}`,
      });
    }
    rate = nextRate;
  };
  for (let wi = 0; wi < input.windows.length; wi++) step(yield wi);

  return {
    policy: 'carrefour',
    windows,
    threadNodeByWindow,
    finalPlacement: placement,
    migratedPages,
    migratedBytes,
    decisions,
    threadsFollowRecording: true,
  };
}

interface PageOrders {
  replicate: number[];
  readerNodes: Map<number, number>;
  interleave: number[][];
  migrate: number[][];
  interleaveCount: number;
  migrateCount: number;
  probaPct: number[];
  pagesMissed: number;
}

/**
 * IPC assumed for Carrefour's sampling when the trace has no instruction and cycle counters: the
 * order of a memory-intensive server program (the §1 programs run at 0.15–0.36, which would give
 * the module 3–7 times the samples).
 */
export const CARREFOUR_DEFAULT_IPC = 1;

/** The runtime's decision period (`sleep_time = 1*TIME_SECOND`, carrefour.c): one module round, µs. */
export const CARREFOUR_ROUND_US = 1_000_000;

/**
 * DRAM accesses per IBS sample the module takes at `rate`: IBS period (cycles per sample per core)
 * × IPC (ops per cycle, from the trace's counters, else CARREFOUR_DEFAULT_IPC), with where the IPC
 * came from.
 */
export function carrefourSampledAccesses(input: ReplayInput, rate: SamplingRate): { value: number; ipc: number; source: string } {
  const period = rate === 'cheap' ? C.IBS_PERIOD_CHEAP : C.IBS_PERIOD_ACCURATE;
  const c = input.counters;
  const measured = c && c.cycles > 0 && c.instructions > 0 ? c.instructions / c.cycles : null;
  const ipc = measured ?? CARREFOUR_DEFAULT_IPC;
  return {
    value: period * ipc,
    ipc,
    source: measured !== null ? `IPC ${ipc.toFixed(2)} from the trace's counters` : `IPC ${CARREFOUR_DEFAULT_IPC} assumed (no instruction and cycle counters)`,
  };
}

/**
 * One round of the module's per-page decisions: thin the window's accesses to IBS samples at the
 * round's rate, build the accessor-node histogram of each watched page, run decide_page_fate().
 */
function decidePages(
  input: ReplayInput,
  window: AccessWindow,
  placement: Placement,
  flags: Flags,
  rate: SamplingRate,
  metrics: WindowMetrics,
  random: SeededRandom,
): PageOrders {
  const nodeCount = input.machine.nodeCount;
  // Interleave probabilities from the runtime's `T` feedback: requests served per node.
  const served = metrics.mcLoadBytesPerS;
  let totalServed = 0;
  for (let d = 0; d < nodeCount; d++) totalServed += served[d]!;
  const probaPct: number[] = [];
  const distrib: number[] = [];
  let distribMax = 0;
  for (let d = 0; d < nodeCount; d++) {
    probaPct.push(totalServed > 0 ? Math.floor((served[d]! * 100) / totalServed) : 100);
    distribMax += totalServed > 0 ? 100 - probaPct[d]! : 1;
    distrib.push(distribMax);
  }

  // Sampling: the module's own IBS samples, not the trace's. IBS op sampling in cycle mode tags one
  // op every IBS period (cycles) on each core, so a DRAM access is sampled with probability
  // 1 / (period × IPC): the expected samples of a (thread, page) are its accesses (samples ×
  // weights, whatever the trace's own sampling rate) over carrefourSampledAccesses(). That keeps
  // the module's gates (2 samples to migrate, 500 replication orders) on what ran, so a thinner or
  // denser recording of the same run gets the same decisions. NUMA hinting faults are not IBS
  // samples: each says that a thread touched a page during one scan pass of the kernel's balancer,
  // of a program taken to be memory intensive (the MAPTU ≥ 50/µs gate is assumed passed). At that
  // rate even the cheap IBS period (≈ 262k cycles per sample per core, thousands of samples per
  // core per 1 s round) samples every page a thread keeps touching, so every recorded (thread,
  // page) pair counts as seen at either rate.
  const { page: wPage, thread: wThread, loads: wLoads, stores: wStores } = window;
  const n = wPage.length;
  // Each window is one round of the module; the runtime's round is 1 s (CARREFOUR_ROUND_US), so the
  // module's samples in it are those of 1 s at the window's rates: the window length and a
  // time-scaled recording leave them as they are.
  const windowUs = Math.max(1, window.endUs - window.startUs);
  const keep = input.accessSource === 'hinting-faults' ? 1 : CARREFOUR_ROUND_US / windowUs / carrefourSampledAccesses(input, rate).value;
  const cap = rate === 'accurate' ? C.MAX_PAGES_ACCURATE : C.MAX_PAGES_CHEAP;
  const minSamples = flags.interleaving ? 1 : C.MIN_SAMPLES_FOR_MIGRATION;

  const orders: PageOrders = {
    replicate: [],
    readerNodes: new Map(),
    interleave: Array.from({ length: nodeCount }, () => []),
    migrate: Array.from({ length: nodeCount }, () => []),
    interleaveCount: 0,
    migrateCount: 0,
    probaPct,
    pagesMissed: 0,
  };
  // The page's accessor nodes with samples (each once): the histogram is all zero between pages.
  const histogram = new Float64Array(nodeCount);
  const accessorNodes = new Int32Array(nodeCount);
  let watched = 0;
  const threadNode = placement.threadNode;
  let i = 0;
  while (i < n) {
    const page = wPage[i]!;
    let writes = 0;
    let samples = 0;
    let dies = 0;
    for (; i < n && wPage[i] === page; i++) {
      const node = threadNode[wThread[i]!]!;
      const loads = thin(wLoads[i]!, keep, random);
      const stores = thin(wStores[i]!, keep, random);
      if (histogram[node] === 0 && loads + stores > 0) accessorNodes[dies++] = node;
      histogram[node]! += loads + stores;
      writes += stores;
      samples += loads + stores;
    }
    let dest = -1;
    for (let x = 0; x < dies; x++) {
      const d = accessorNodes[x]!;
      if (d > dest) dest = d; // the last (highest) accessor node, as the module does
      histogram[d] = 0;
    }
    if (samples === 0) continue;
    if (watched >= cap) {
      orders.pagesMissed++;
      continue;
    }
    watched++;
    if (placement.replicated[page]) continue; // already replicated: skipped by the module
    const from = placement.pageNode[page]!;
    if (flags.replication && dies > 1 && writes === 0) {
      orders.replicate.push(page);
      orders.readerNodes.set(page, dies);
    } else if (flags.interleaving && dies > 1) {
      if (random.int(101) <= (probaPct[from] ?? 100)) {
        const r = random.int(distribMax);
        let d = 0;
        while (d < nodeCount - 1 && distrib[d]! < r) d++;
        if (d !== from) {
          orders.interleave[d]!.push(page);
          orders.interleaveCount++;
        }
      }
    } else if (((flags.migration && dies === 1 && samples >= minSamples) || flags.interleaving) && from !== dest) {
      orders.migrate[dest]!.push(page);
      orders.migrateCount++;
    }
  }
  return orders;
}
