/**
 * Synthetic traces that mirror a published workload (fidelity/workloads.ts says how each input
 * was derived from the paper). Deterministic: a seeded xorshift PRNG, no clock. The traces are
 * `origin.kind: synthetic`: they are the published runs' shape, not measurements.
 */
import { getPreset } from '../src/machine/presets.js';
import { CURRENT_TRACE_VERSION, type TraceManifest } from '../src/trace/types.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';

export interface MirrorRegion {
  name: string;
  /** Node id of each page (the recorded placement: pages.node). */
  pageNodes: number[];
  /**
   * Thread that first touched each page (first_touch_thread); absent: the first thread on the
   * page's node, so that first-touch reproduces the recorded placement.
   */
  firstTouchThreads?: number[];
}

export interface MirrorTarget {
  /** Region index. */
  region: number;
  /** Share of a thread's DRAM accesses, 0..1 (a thread's targets add up to 1). */
  share: number;
  /** Share of loads among them. */
  loadShare: number;
  /** Only the page slice [k/parts, (k+1)/parts) of the region, k = the thread's `slice` (thread-private data). */
  sliced?: boolean;
}

export interface MirrorSpec {
  id: string;
  description: string;
  preset: string;
  /** Node id of each thread (recorded placement). */
  threadNodes: number[];
  regions: MirrorRegion[];
  /** Access targets, the same for every thread (sliced targets give each thread its own slice). */
  targets: MirrorTarget[];
  /** DRAM accesses per second of each thread while recorded. */
  accessesPerThreadPerS: number;
  durationUs: number;
  samples: number;
  seed: number;
  /** PMU load latency recorded on every load sample, cycles (absent: none, 0). */
  loadLatencyCycles?: number;
  /** Counters of the recording: IPC and the clock; L3 misses = the DRAM accesses (absent: none). */
  counters?: { ipc: number; clockGHz: number };
}

function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

export function mirrorTrace(spec: MirrorSpec): Uint8Array {
  const machine = getPreset(spec.preset);
  const T = spec.threadNodes.length;
  const rnd = rng(spec.seed);
  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.from({ length: T }, (_, i) => 5000 + i),
    pid: new Int32Array(T).fill(5000),
    name: Array.from({ length: T }, (_, i) => `${spec.id}-${i}`),
    first_seen_us: new Uint32Array(T),
    last_seen_us: new Uint32Array(T).fill(spec.durationUs),
    migrations: new BigInt64Array(T),
  };
  const cpuOfThread: number[] = [];
  const usedOnNode = new Map<number, number>();
  for (const node of spec.threadNodes) {
    const cpus = machine.nodes.find((n) => n.id === node)!.cpus;
    const k = usedOnNode.get(node) ?? 0;
    usedOnNode.set(node, k + 1);
    cpuOfThread.push(cpus[k % cpus.length]!);
  }
  c.thread_placements = {
    time_us: new Uint32Array(T),
    thread: Uint32Array.from({ length: T }, (_, i) => i),
    cpu: Int16Array.from(cpuOfThread),
    node: Int8Array.from(spec.threadNodes),
  };
  const regionStart: number[] = [];
  let pages = 0;
  for (const r of spec.regions) {
    regionStart.push(pages);
    pages += r.pageNodes.length;
  }
  const pageNode = new Int8Array(pages);
  const owner = new Int32Array(pages);
  spec.regions.forEach((r, i) => {
    r.pageNodes.forEach((node, k) => {
      pageNode[regionStart[i]! + k] = node;
      owner[regionStart[i]! + k] = r.firstTouchThreads?.[k] ?? Math.max(0, spec.threadNodes.indexOf(node));
    });
  });
  c.pages = {
    address: BigUint64Array.from({ length: pages }, (_, p) => 0x7f0000000000n + BigInt(p) * 4096n),
    region: new Int32Array(pages).fill(-1),
    node: pageNode,
    page_size: new Uint32Array(pages).fill(4096),
    first_touch_us: new BigInt64Array(pages).fill(-1n),
    first_touch_thread: owner,
    first_touch_cpu: Int16Array.from(owner, (t) => cpuOfThread[t]!),
  };
  const n = spec.samples;
  const time = new Uint32Array(n);
  const thread = new Uint32Array(n);
  const cpu = new Int16Array(n);
  const page = new Int32Array(n);
  const op = new Int8Array(n);
  const ds = new Int8Array(n);
  const node = new Int8Array(n);
  const latency = new Uint32Array(n);
  const cumulative: number[] = [];
  let acc = 0;
  for (const t of spec.targets) cumulative.push((acc += t.share));
  for (let i = 0; i < n; i++) {
    const t = Math.floor(rnd() * T);
    const x = rnd() * acc;
    let k = 0;
    while (k < cumulative.length - 1 && cumulative[k]! <= x) k++;
    const target = spec.targets[k]!;
    const region = spec.regions[target.region]!;
    const size = region.pageNodes.length;
    const [lo, span] = target.sliced ? [Math.floor((t * size) / T), Math.max(1, Math.floor(size / T))] : [0, size];
    const p = regionStart[target.region]! + lo + Math.floor(rnd() * span);
    time[i] = Math.floor((i / n) * spec.durationUs);
    thread[i] = t;
    cpu[i] = cpuOfThread[t]!;
    page[i] = p;
    const load = rnd() < target.loadShare;
    op[i] = load ? 0 : 1;
    node[i] = pageNode[p]!;
    ds[i] = pageNode[p] === spec.threadNodes[t] ? 0 : 1;
    latency[i] = load && spec.loadLatencyCycles ? Math.round(spec.loadLatencyCycles) : 0;
  }
  const totalAccesses = spec.accessesPerThreadPerS * T * (spec.durationUs / 1e6);
  const weight = Math.max(1, Math.round(totalAccesses / n));
  c.samples = {
    time_us: time,
    thread,
    cpu,
    page,
    offset: new Uint16Array(n),
    op: { values: ['load', 'store'], indices: op },
    event: { values: ['synthetic'], indices: new Int8Array(n) },
    data_source: { values: ['local-dram', 'remote-dram'], indices: ds },
    hops: new Int8Array(n).fill(-1),
    node,
    latency_cycles: latency,
    stack: new Int32Array(n).fill(-1),
    hitm: new Int8Array(n).fill(-1),
    weight: new Uint32Array(n).fill(weight),
  };
  if (spec.counters) {
    const cycles = T * (spec.durationUs / 1e6) * spec.counters.clockGHz * 1e9;
    const misses = weight * n;
    const rows = [
      ['instructions', 0],
      ['cycles', 0],
      ['l3-misses', 0],
      ['instructions', spec.counters.ipc * cycles],
      ['cycles', cycles],
      ['l3-misses', misses],
    ] as const;
    c.counters = {
      time_us: Uint32Array.from(rows, (_, i) => (i < 3 ? 0 : spec.durationUs - 1)),
      counter: { values: ['instructions', 'cycles', 'l3-misses'], indices: Int16Array.from(rows, (r) => ['instructions', 'cycles', 'l3-misses'].indexOf(r[0])) },
      scope: { values: ['system'], indices: new Int8Array(rows.length) },
      scope_id: new Int32Array(rows.length),
      value: Float64Array.from(rows, (r) => r[1]),
    };
  }
  const manifest: TraceManifest = {
    format: 'numascope-trace',
    version: CURRENT_TRACE_VERSION,
    producer: { name: 'numascope-fidelity', version: '0.1.0' },
    createdAt: '2026-01-01T00:00:00Z',
    origin: {
      kind: 'synthetic',
      generator: 'packages/policy-engine/fidelity/mirror.ts',
      seed: spec.seed,
      model: spec.id,
      description: spec.description,
      command: [],
      from: null,
    },
    machine,
    capture: {
      startMonotonicNs: '0',
      startUnixMs: 0,
      durationUs: spec.durationUs,
      stopReason: 'generated',
      sources: [],
      capabilities: [],
      lostSamples: 0,
      sampleCount: 0,
      notes: [],
    },
    process: null,
    appliedPlans: [],
    tables: [],
  };
  return writeTrace(manifest, c);
}
