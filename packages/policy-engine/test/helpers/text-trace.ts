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
 * `event` (default synthetic, page-fault for faults), `latency_cycles` (default 0), `stack` (an
 * index into the spec's `stacks`, default -1: no code location). Optional thread columns `name` and `migrations`
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
  /**
   * Call stacks the samples' `stack` column names (stack ids 0, 1, … in this order), each its
   * frames innermost first, separated by spaces: `function@file:line` (in module /opt/app),
   * `function[module]` (no line information) or `function@file:line[module]`; a module is a path
   * or a base name (then under /usr/lib/). The same text is the same frame row.
   */
  stacks?: string[];
}

export const PAGE_BASE_ADDRESS = 0x7f00_0000_0000n;

export function textTrace(spec: TextTraceSpec): Trace {
  return readTrace(textTraceBytes(spec));
}

/** The trace of `spec` as the bytes of a .numascope file (for the CLI). */
export function textTraceBytes(spec: TextTraceSpec): Uint8Array {
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
    latency_cycles: Uint32Array.from(samples, (s) => Number(s['latency_cycles'] ?? 0)),
    stack: Int32Array.from(samples, (s) => Number(s['stack'] ?? -1)),
    hitm: Int8Array.from(samples, (s) => Number(s['hitm'] ?? -1)),
    weight: Uint32Array.from(samples, (s) => Number(s['weight'] ?? 1)),
  };
  // Code tables: the spec's stacks first (ids 0..k-1, what samples.stack names), then one
  // one-frame stack per allocation at its site.
  const modulePaths = ['/opt/app'];
  const moduleOf = (m: string | undefined) => {
    const path = m === undefined ? '/opt/app' : m.includes('/') ? m : `/usr/lib/${m}`;
    const k = modulePaths.indexOf(path);
    return k >= 0 ? k : modulePaths.push(path) - 1;
  };
  const frameRows: Array<{ module: number; function: string; file: string | null; line: number }> = [];
  const frameIndex = new Map<string, number>();
  const frameOf = (text: string): number => {
    const known = frameIndex.get(text);
    if (known !== undefined) return known;
    const m = /^([^@[\]]+)(?:@([^:[\]]+):(\d+))?(?:\[([^\]]+)\])?$/.exec(text);
    if (!m) throw new Error(`frame "${text}" is not function@file:line, function[module] or function@file:line[module]`);
    frameRows.push({ module: moduleOf(m[4]), function: m[1]!, file: m[2] ? `/src/${m[2]}` : null, line: m[3] ? Number(m[3]) : -1 });
    frameIndex.set(text, frameRows.length - 1);
    return frameRows.length - 1;
  };
  const stackRows: Array<{ stack: number; depth: number; frame: number }> = [];
  (spec.stacks ?? []).forEach((st, k) => st.trim().split(/\s+/).forEach((f, depth) => stackRows.push({ stack: k, depth, frame: frameOf(f) })));
  const allocs = parseTable(spec.allocations ?? 'address size site');
  const firstAllocStack = (spec.stacks ?? []).length;
  const allocSites = allocs.map((a) => {
    const m = /^(.*)@(.*):(\d+)$/.exec(a['site']!);
    return frameOf(m ? `${m[1]}@${m[2]}:${m[3]}` : `${a['site']!}@app.c:0`);
  });
  allocSites.forEach((frame, i) => stackRows.push({ stack: firstAllocStack + i, depth: 0, frame }));
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
      stack: Int32Array.from(allocs, (_, i) => firstAllocStack + i),
      site: Int32Array.from(allocSites),
      region: new Int32Array(n).fill(-1),
    };
  }
  if (frameRows.length > 0) {
    c.stacks = {
      stack: Uint32Array.from(stackRows, (r) => r.stack),
      depth: Uint16Array.from(stackRows, (r) => r.depth),
      frame: Uint32Array.from(stackRows, (r) => r.frame),
    };
    c.frames = {
      module: Int32Array.from(frameRows, (f) => f.module),
      module_offset: BigUint64Array.from(frameRows, (_, i) => 0x1000n + BigInt(i) * 16n),
      function: frameRows.map((f) => f.function),
      function_offset: new BigInt64Array(frameRows.length),
      file: frameRows.map((f) => f.file),
      line: Int32Array.from(frameRows, (f) => f.line),
      col: new Int16Array(frameRows.length),
      inlined: new Int8Array(frameRows.length),
    };
    c.modules = { path: modulePaths, build_id: modulePaths.map((_, i) => (i === 0 ? '00ff' : '')) };
  }
  const manifest = minimalManifest();
  manifest.machine = machine;
  const lastTime = samples.reduce((m, s) => Math.max(m, Number(s['time_us'])), 0);
  manifest.capture.durationUs = spec.durationUs ?? lastTime + 1;
  return writeTrace(manifest, c);
}
