/**
 * Engine benchmark (npm run bench, from packages/policy-engine): synthetic traces of 1M and 10M
 * samples on the 8-node amd-genoa-2s-nps4 model, built in memory (columns → writeTrace →
 * readTrace), then replayed through every registered policy. Prints samples/s per policy, the
 * peer ratio (policy time / time to aggregate the trace into windows), and peak memory.
 *
 * Workload: 64 threads, 8 per node; 64 Ki pages; half the accesses go to a thread's own block
 * (first-touched locally), half to a shared array first-touched by thread 0 (a hot spot on
 * node 0); 70 % loads; samples spread evenly over 10 s (100 windows of 100 ms); weight 4096.
 * Deterministic (xorshift32, seed 1). Usage: tsx bench/bench.ts [SAMPLES…]
 */
import { overallMetrics } from '../src/engine/analyze.js';
import { simulateWindow } from '../src/engine/simulate.js';
import { buildReplayInput } from '../src/engine/windows.js';
import { getPreset } from '../src/machine/presets.js';
import { listPolicies } from '../src/policies/index.js';
import { readTrace } from '../src/trace/reader.js';
import { emptyColumns, writeTrace } from '../src/trace/writer.js';
import { minimalManifest } from '../test/helpers/minimal-trace.js';

const THREADS = 64;
const PAGES = 65_536;
const DURATION_US = 10_000_000;
const WINDOW_MS = 100;

function syntheticTrace(samples: number): Uint8Array {
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
    weight: new Uint32Array(samples).fill(4096),
  };
  const manifest = minimalManifest();
  manifest.machine = machine;
  manifest.origin.description = `engine benchmark, ${samples} samples`;
  manifest.capture.durationUs = DURATION_US;
  return writeTrace(manifest, c);
}

const mb = (b: number) => `${(b / 1048576).toFixed(0)} MB`;
let peakRss = 0;
let peakHeap = 0;
const sampleMemory = () => {
  const m = process.memoryUsage();
  peakRss = Math.max(peakRss, m.rss);
  peakHeap = Math.max(peakHeap, m.heapUsed + m.arrayBuffers);
};

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
for (const samples of sizes.length > 0 ? sizes : [1_000_000, 10_000_000]) {
  peakRss = 0;
  peakHeap = 0;
  let t = performance.now();
  const bytes = syntheticTrace(samples);
  const genMs = performance.now() - t;
  t = performance.now();
  const trace = readTrace(bytes);
  const readMs = performance.now() - t;
  sampleMemory();
  t = performance.now();
  const input = buildReplayInput(trace, { windowMs: WINDOW_MS });
  const aggregateMs = performance.now() - t;
  sampleMemory();
  const entries = input.windows.reduce((s, w) => s + w.page.length, 0);
  console.log(`\n${samples.toLocaleString('en-US')} samples, ${PAGES} pages, ${THREADS} threads, amd-genoa-2s-nps4 (8 nodes), ${input.windows.length} windows of ${WINDOW_MS} ms`);
  console.log(`  generate+write ${genMs.toFixed(0)} ms (${mb(bytes.length)} trace); read ${readMs.toFixed(0)} ms; aggregate into windows ${aggregateMs.toFixed(0)} ms (${(samples / (aggregateMs / 1000) / 1e6).toFixed(1)} M samples/s, ${entries.toLocaleString('en-US')} window entries)`);
  let totalMs = 0;
  for (const policy of listPolicies()) {
    const t0 = performance.now();
    const replay = policy.replay(input, { seed: 1, simulate: simulateWindow });
    const ms = performance.now() - t0;
    totalMs += ms;
    sampleMemory();
    const r = overallMetrics(replay.windows);
    console.log(
      `  ${policy.id.padEnd(12)} ${ms.toFixed(0).padStart(6)} ms  ${(samples / (ms / 1000) / 1e6).toFixed(1).padStart(6)} M samples/s  ×${(ms / aggregateMs).toFixed(2)} of aggregation  (predicted ${(r.predictedUs / 1e6).toFixed(2)} s, MC imbalance ${r.mcImbalancePct.toFixed(0)} %)`,
    );
  }
  console.log(`  all policies ${totalMs.toFixed(0)} ms (${(samples / (totalMs / 1000) / 1e6).toFixed(1)} M samples/s); aggregation + all policies ${(aggregateMs + totalMs).toFixed(0)} ms`);
  console.log(`  peak rss ${mb(peakRss)}, peak heap+arrayBuffers ${mb(peakHeap)}`);
}
