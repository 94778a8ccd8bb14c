/**
 * A small real Trace (written and read back through the v1 writer/reader) for plan tests: pages
 * written as `address node` lines and threads as `tid node` lines.
 */
import { writeTrace, emptyColumns } from '../../src/trace/writer.js';
import { readTrace } from '../../src/trace/reader.js';
import { getPreset } from '../../src/machine/presets.js';
import type { Trace } from '../../src/trace/types.js';
import { minimalManifest } from './minimal-trace.js';

export function traceFromText(spec: { preset: string; pages: string; threads: string; pid?: number }): Trace {
  return readTrace(traceBytesFromText(spec));
}

/** The same trace as file bytes (for CLI tests). */
export function traceBytesFromText(spec: { preset: string; pages: string; threads: string; pid?: number }): Uint8Array {
  const pages = spec.pages
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/));
  const threads = spec.threads
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));
  const manifest = minimalManifest();
  manifest.machine = getPreset(spec.preset);
  manifest.process = { pid: spec.pid ?? 4242, startTimeTicks: '172045', command: ['./app', '--size', '4G'], attached: false, exitCode: null };
  const columns = emptyColumns();
  const n = pages.length;
  columns.pages = {
    address: BigUint64Array.from(pages, ([a]) => BigInt(a!)),
    region: new Int32Array(n).fill(-1),
    node: Int8Array.from(pages, ([, node]) => Number(node)),
    page_size: new Uint32Array(n).fill(4096),
    first_touch_us: new BigInt64Array(n).fill(-1n),
    first_touch_thread: new Int32Array(n).fill(-1),
    first_touch_cpu: new Int16Array(n).fill(-1),
  };
  const t = threads.length;
  columns.threads = {
    tid: Int32Array.from(threads, ([tid]) => tid!),
    pid: new Int32Array(t).fill(spec.pid ?? 4242),
    name: threads.map(() => 'worker'),
    first_seen_us: new Uint32Array(t),
    last_seen_us: new Uint32Array(t).fill(1000),
    migrations: new BigInt64Array(t),
  };
  columns.thread_placements = {
    time_us: new Uint32Array(t),
    thread: Uint32Array.from(threads, (_, i) => i),
    cpu: Int16Array.from(threads, ([, node]) => node! * 4),
    node: Int8Array.from(threads, ([, node]) => node!),
  };
  return writeTrace(manifest, columns);
}
