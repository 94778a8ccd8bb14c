/**
 * The engine benchmark's synthetic trace (see bench.ts for the workload). Deterministic.
 */
import { getPreset } from '../src/machine/presets.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from '../test/helpers/minimal-trace.js';

export const THREADS = 64;
export const PAGES = 65_536;
const DURATION_US = 10_000_000;
export const WINDOW_MS = 100;

export function syntheticTrace(samples: number): Uint8Array {
  const machine = getPreset('amd-genoa-2s-nps4');
  const nodes = machine.nodes.length;
  const perNode = THREADS / nodes;
  const sharedPages = PAGES / 2;
  const privatePerThread = (PAGES - sharedPages) / THREADS;
  let x = 1;
  const rnd = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
  const c = emptyColumns();
  const threadNode = (t: number) => Math.floor(t / perNode);
  c.threads = {
    tid: Int32Array.from({ length: THREADS }, (_, i) => 1000 + i),
    pid: new Int32Array(THREADS).fill(1000),
    name: Array.from({ length: THREADS }, (_, i) => `w${i}`),
    first_seen_us: new Uint32Array(THREADS),
    last_seen_us: new Uint32Array(THREADS).fill(DURATION_US),
    migrations: new BigInt64Array(THREADS),
  };
  const ownerOf = (p: number) => (p < sharedPages ? 0 : Math.floor((p - sharedPages) / privatePerThread));
  c.pages = {
    address: BigUint64Array.from({ length: PAGES }, (_, p) => 0x7f0000000000n + BigInt(p) * 4096n),
    region: new Int32Array(PAGES).fill(-1),
    node: Int8Array.from({ length: PAGES }, (_, p) => threadNode(ownerOf(p))),
    page_size: new Uint32Array(PAGES).fill(4096),
    first_touch_us: new BigInt64Array(PAGES).fill(-1n),
    first_touch_thread: Int32Array.from({ length: PAGES }, (_, p) => ownerOf(p)),
    first_touch_cpu: new Int16Array(PAGES).fill(-1),
  };
  c.thread_placements = {
    time_us: new Uint32Array(THREADS),
    thread: Uint32Array.from({ length: THREADS }, (_, i) => i),
    cpu: Int16Array.from({ length: THREADS }, (_, t) => machine.nodes[threadNode(t)]!.cpus[t % perNode]!),
    node: Int8Array.from({ length: THREADS }, (_, t) => threadNode(t)),
  };
  const time = new Uint32Array(samples);
  const thread = new Uint32Array(samples);
  const cpu = new Int16Array(samples);
  const page = new Int32Array(samples);
  const op = new Int8Array(samples);
  const event = new Int8Array(samples);
  const ds = new Int8Array(samples);
  const node = new Int8Array(samples);
  for (let i = 0; i < samples; i++) {
    const t = Math.floor(rnd() * THREADS);
    const p = rnd() < 0.5 ? Math.floor(rnd() * sharedPages) : sharedPages + t * privatePerThread + Math.floor(rnd() * privatePerThread);
    time[i] = Math.floor((i / samples) * DURATION_US);
    thread[i] = t;
    cpu[i] = c.thread_placements.cpu instanceof Int16Array ? c.thread_placements.cpu[t]! : -1;
    page[i] = p;
    op[i] = rnd() < 0.7 ? 0 : 1; // load / store
    node[i] = threadNode(ownerOf(p));
    ds[i] = node[i] === threadNode(t) ? 0 : 1; // local-dram / remote-dram
  }
  c.samples = {
    time_us: time,
    thread,
    cpu,
    page,
    offset: new Uint16Array(samples),
    op: { values: ['load', 'store'], indices: op },
    event: { values: ['synthetic'], indices: event },
    data_source: { values: ['local-dram', 'remote-dram'], indices: ds },
    hops: new Int8Array(samples).fill(-1),
    node,
    latency_cycles: new Uint32Array(samples),
    stack: new Int32Array(samples).fill(-1),
    hitm: new Int8Array(samples).fill(-1),
    // The same program at any density: 4096 accesses a sample at 1 M samples, proportionally fewer
    // when denser, so every size stands for the same accesses (issue 29: sampling invariance).
    weight: new Uint32Array(samples).fill(Math.max(1, Math.round((4096 * 1_000_000) / samples))),
  };
  const manifest = minimalManifest();
  manifest.machine = machine;
  manifest.origin.description = `engine benchmark, ${samples} samples`;
  manifest.capture.durationUs = DURATION_US;
  return writeTrace(manifest, c);
}

