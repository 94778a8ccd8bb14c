/**
 * ReplayInput from readable text, for policy, recommendation and plan tests. A table row says:
 * in these windows, each of these threads made `loads` loads and `stores` stores to each of these
 * pages (estimated real accesses). Ranges are inclusive (`0-15`); lists are comma-separated.
 *
 *   window | threads | pages    | loads | stores
 *   0-4    | 0-15    | 0-1023   | 60    | 4
 *
 * Thread and page homes are written `range:node` (node index), e.g. `0-3:0 4-7:1`.
 */
import { windowsOf, type AccessWindow, type ReplayInput } from '../../src/model/contract.js';
import { machineModel } from '../../src/machine/model.js';
import { getPreset } from '../../src/machine/presets.js';

export function parseRange(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [a, b] = part.split('-').map((s) => Number(s.trim()));
    for (let x = a!; x <= (b ?? a)!; x++) out.push(x);
  }
  return out;
}

/** `0-3:0 4-7:1` → array of length `count` with each index's node. */
export function parseHomes(text: string, count: number): Int16Array {
  const out = new Int16Array(count).fill(-1);
  for (const part of text.trim().split(/\s+/)) {
    const [range, node] = part.split(':');
    for (const x of parseRange(range!)) out[x] = Number(node);
  }
  if (out.includes(-1)) throw new Error(`homes "${text}" leave index ${out.indexOf(-1)} unplaced`);
  return out;
}

export interface TableSpec {
  preset: string;
  threads: number;
  pages: number;
  threadNodes: string;
  pageNodes: string;
  windowUs: number;
  /** Samples the recording took per access (e.g. 1/16: one sample stands for 16 accesses). */
  samplesPerAccess?: number;
  /**
   * The program's instructions per cycle, given to the input as counters (Carrefour's IBS samples
   * per access follow it: policies/carrefour.ts, carrefourSampledAccesses); absent: no counters.
   */
  ipc?: number;
  table: string;
}

export function replayInputFromTable(spec: TableSpec): ReplayInput {
  const machine = machineModel(getPreset(spec.preset));
  const rows = spec.table
    .trim()
    .split('\n')
    .map((line) => line.split('|').map((c) => c.trim()));
  const header = rows.shift()!;
  if (header.join(',') !== 'window,threads,pages,loads,stores') throw new Error(`bad header ${header.join('|')}`);
  const perWindow = new Map<number, Map<number, { loads: number; stores: number }>>();
  for (const [win, threads, pages, loads, stores] of rows) {
    for (const w of parseRange(win!)) {
      const entries = perWindow.get(w) ?? new Map();
      perWindow.set(w, entries);
      for (const t of parseRange(threads!)) {
        for (const p of parseRange(pages!)) {
          const key = p * spec.threads + t;
          const e = entries.get(key) ?? { loads: 0, stores: 0 };
          e.loads += Number(loads);
          e.stores += Number(stores);
          entries.set(key, e);
        }
      }
    }
  }
  const windowCount = Math.max(...perWindow.keys()) + 1;
  const windows: AccessWindow[] = [];
  for (let w = 0; w < windowCount; w++) {
    const entries = [...(perWindow.get(w) ?? new Map()).entries()].sort((a, b) => a[0] - b[0]);
    let total = 0;
    for (const [, e] of entries) total += e.loads + e.stores;
    windows.push({
      index: w,
      startUs: w * spec.windowUs,
      endUs: (w + 1) * spec.windowUs,
      sampleCount: Math.round(total * (spec.samplesPerAccess ?? 1 / 16)),
      thread: Int32Array.from(entries, ([k]) => k % spec.threads),
      page: Int32Array.from(entries, ([k]) => Math.floor(k / spec.threads)),
      loads: Float64Array.from(entries, ([, e]) => e.loads),
      stores: Float64Array.from(entries, ([, e]) => e.stores),
    });
  }
  const threadNode = parseHomes(spec.threadNodes, spec.threads);
  const pageNode = parseHomes(spec.pageNodes, spec.pages);
  return {
    machine,
    threadCount: spec.threads,
    pageCount: spec.pages,
    pageBytes: 4096,
    windowUs: spec.windowUs,
    windows: windowsOf(windows),
    initial: { threadNode, pageNode, replicated: new Uint8Array(spec.pages) },
    firstTouchThread: new Int32Array(spec.pages).fill(-1),
    counters: spec.ipc === undefined ? null : { instructions: spec.ipc * 1e9, cycles: 1e9, l3Misses: 0 },
  };
}

/** Mean of a per-window metric over windows [from, to). */
export function meanOf(values: number[], from = 0, to = values.length): number {
  let s = 0;
  for (let i = from; i < to; i++) s += values[i]!;
  return s / (to - from);
}
