/**
 * Traces written as readable text: ASCII tables turned into a real trace of the current version (writeTrace →
 * readTrace), so engine tests read like the data they test.
 *
 *   textTrace({
 *     machine: 'amd-opteron-8385-4p',
 *     threads: `thread node
 *                 0     0`,
 *     pages:   `page node first_touch_thread
 *                 0    0          0`,
 *     samples: `time_us thread page op    weight
 *                 10      0     0    load  100`,
 *   })
 *
 * Optional sample columns: `weight` (default 1), `data_source` (default local-dram / remote-dram
 * by node), `cpu` (default the thread's node's first cpu), `offset` (byte in the page, default 0),
 * `event` (default synthetic, page-fault for faults). Optional thread columns `name` and `migrations`
 * (the kernel's cpu migration count, default 0); optional placement column `cpu`. Optional page column `address` (hex).
 * Thread nodes and page nodes are kernel node ids.
 */
import { getPreset } from '../../src/machine/presets.js';
import { readTrace } from '../../src/trace/reader.js';
import type { Trace, TraceMachine } from '../../src/trace/types.js';
import { emptyColumns, writeTrace } from '../../src/trace/writer.js';
import { minimalManifest } from './minimal-trace.js';

export function parseTable(text: string): Array<Record<string, string>> {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
  if (lines.length === 0) return [];
  const head = lines[0]!.split(/\s+/);
  return lines.slice(1).map((line, i) => {
    const cells = line.split(/\s+/);
    if (cells.length !== head.length) throw new Error(`row ${i + 1} "${line}" has ${cells.length} cells, header has ${head.length}`);
    return Object.fromEntries(head.map((h, k) => [h, cells[k]!]));
  });
}

export interface TextTraceSpec {
  machine: string | TraceMachine;
  threads: string;
  pages: string;
  samples: string;
  durationUs?: number;
  /** Extra thread_placements rows: `time_us thread node` (and optionally `cpu`, default the node's first cpu). */
  placements?: string;
  /**
   * Allocations, one per row: `address size site` (address hex, size in bytes, site written
   * `function@file:line`); each gets a one-frame stack at its site, live for the whole trace.
   */
  allocations?: string;
}

export const PAGE_BASE_ADDRESS = 0x7f00_0000_0000n;

export function textTrace(spec: TextTraceSpec): Trace {
  const machine = typeof spec.machine === 'string' ? getPreset(spec.machine) : spec.machine;
  const nodeIndex = new Map(machine.nodes.map((n, i) => [n.id, i]));
  const firstCpu = (node: number) => machine.nodes[nodeIndex.get(node)!]!.cpus[0] ?? -1;
  const threads = parseTable(spec.threads);
  const pages = parseTable(spec.pages);
  const samples = parseTable(spec.samples);
  const placements = parseTable(spec.placements ?? 'time_us thread node');
  const threadNode = threads.map((t) => Number(t['node']));
  const pageNode = pages.map((p) => Number(p['node']));

  const c = emptyColumns();
  c.threads = {
    tid: Int32Array.from(threads, (_, i) => 1000 + i),
    pid: Int32Array.from(threads, () => 1000),
    name: threads.map((t, i) => t['name'] ?? `worker-${i}`),
    first_seen_us: new Uint32Array(threads.length),
    last_seen_us: new Uint32Array(threads.length),
    migrations: BigInt64Array.from(threads, (t) => BigInt(t['migrations'] ?? 0)),
  };
  c.pages = {
    address: BigUint64Array.from(pages, (p, i) => (p['address'] ? BigInt(p['address']) : PAGE_BASE_ADDRESS + BigInt(i) * 4096n)),
    region: Int32Array.from(pages, () => -1),
    node: Int8Array.from(pageNode),
    page_size: Uint32Array.from(pages, () => 4096),
    first_touch_us: BigInt64Array.from(pages, () => -1n),
    first_touch_thread: Int32Array.from(pages, (p) => Number(p['first_touch_thread'] ?? -1)),
    first_touch_cpu: Int16Array.from(pages, (p) => Number(p['first_touch_cpu'] ?? -1)),
  };
  const allPlacements = [
    ...threads.map((t, i) => ({ time: 0, thread: i, node: Number(t['node']), cpu: undefined as number | undefined })),
    ...placements.map((p) => ({ time: Number(p['time_us']), thread: Number(p['thread']), node: Number(p['node']), cpu: p['cpu'] !== undefined ? Number(p['cpu']) : undefined })),
  ];
  c.thread_placements = {
    time_us: Uint32Array.from(allPlacements, (p) => p.time),
    thread: Uint32Array.from(allPlacements, (p) => p.thread),
    cpu: Int16Array.from(allPlacements, (p) => p.cpu ?? firstCpu(p.node)),
    node: Int8Array.from(allPlacements, (p) => p.node),
  };
  const sampleNode = samples.map((s) => (Number(s['page']) >= 0 ? pageNode[Number(s['page'])]! : -1));
  c.samples = {
    time_us: Uint32Array.from(samples, (s) => Number(s['time_us'])),
    thread: Uint32Array.from(samples, (s) => Number(s['thread'])),
    cpu: Int16Array.from(samples, (s) => (s['cpu'] !== undefined ? Number(s['cpu']) : firstCpu(threadNode[Number(s['thread'])]!))),
    page: Int32Array.from(samples, (s) => Number(s['page'])),
    offset: Uint16Array.from(samples, (s) => Number(s['offset'] ?? 0)),
    op: samples.map((s) => s['op']!),
    event: samples.map((s) => s['event'] ?? (s['op'] === 'fault' ? 'page-fault' : 'synthetic')),
    data_source: samples.map((s, i) =>
      s['data_source'] ?? (s['op'] === 'fault' ? 'unknown' : sampleNode[i] === threadNode[Number(s['thread'])] ? 'local-dram' : 'remote-dram'),
    ),
    hops: Int8Array.from(samples, () => -1),
    node: Int8Array.from(sampleNode),
    latency_cycles: new Uint32Array(samples.length),
    stack: new Int32Array(samples.length).fill(-1),
    weight: Uint32Array.from(samples, (s) => Number(s['weight'] ?? 1)),
  };
  const allocs = parseTable(spec.allocations ?? 'address size site');
  if (allocs.length > 0) {
    const n = allocs.length;
    c.allocations = {
      time_us: new Uint32Array(n),
      end_us: new BigInt64Array(n).fill(-1n),
      thread: new Int32Array(n).fill(0),
      tid: new Int32Array(n).fill(1000),
      op: allocs.map(() => 'malloc'),
      end_op: allocs.map(() => 'none'),
      address: BigUint64Array.from(allocs, (a) => BigInt(a['address']!)),
      size: BigUint64Array.from(allocs, (a) => BigInt(a['size']!)),
      sampled: new Int8Array(n),
      weight_bytes: Float64Array.from(allocs, (a) => Number(a['size'])),
      stack: Int32Array.from(allocs, (_, i) => i),
      site: Int32Array.from(allocs, (_, i) => i),
      region: new Int32Array(n).fill(-1),
    };
    c.stacks = { stack: Uint32Array.from(allocs, (_, i) => i), depth: new Uint16Array(n), frame: Uint32Array.from(allocs, (_, i) => i) };
    const sites = allocs.map((a) => /^(.*)@(.*):(\d+)$/.exec(a['site']!) ?? ['', a['site']!, 'app.c', '0']);
    c.frames = {
      module: new Int32Array(n).fill(0),
      module_offset: BigUint64Array.from(allocs, (_, i) => 0x1000n + BigInt(i) * 16n),
      function: sites.map((m) => m[1]!),
      function_offset: new BigInt64Array(n),
      file: sites.map((m) => `/src/${m[2]!}`),
      line: Int32Array.from(sites, (m) => Number(m[3])),
      col: new Int16Array(n),
      inlined: new Int8Array(n),
    };
    c.modules = { path: ['/opt/app'], build_id: ['00ff'] };
  }
  const manifest = minimalManifest();
  manifest.machine = machine;
  const lastTime = samples.reduce((m, s) => Math.max(m, Number(s['time_us'])), 0);
  manifest.capture.durationUs = spec.durationUs ?? lastTime + 1;
  return readTrace(writeTrace(manifest, c));
}
